#!/usr/bin/env bash
# Atomicity under SIGKILL for the file-mode engines (SPEC D1): runs the kill
# harness of tests/unit/engine/test_engine_kill.c, which forks a writer that
# commits batches in a loop, kills it at random instants and checks after
# each kill that reopening shows exactly the committed batches.
# TM_STRESS=1 (make stress): 120 trials per engine (cayenne, duckdb, sqlite), 360 in all.
# make check runs the short form as the unit test unit_engine_test_engine_kill itself
# (CMakeLists.txt leaves this script out of ctest).
set -euo pipefail
: "${TM_BUILD_DIR:=$(cd "$(dirname "$0")/../.." && pwd)/build/dev}"
bin="$TM_BUILD_DIR/unit_engine_test_engine_kill"
if [[ ! -x $bin ]]; then
  echo "engine_kill: $bin is not built" >&2
  exit 1
fi
exec "$bin" sigkill
