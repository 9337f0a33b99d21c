#!/usr/bin/env bash
# Fault sweeps over whole refreshes (issue 10; SPEC D1-D3): runs the sweeps of
# tests/unit/refresh/test_accel_alloc.c (the N-th allocation fails) and
# tests/unit/refresh/test_accel_storage.c (the N-th store read or local write
# fails, is cut short or delayed) over file datasets and Iceberg tables, into
# cayenne, sqlite and arrow.
# TM_STRESS=1 (make stress): every N of every scenario, and every N again with
# every allocation from the N-th on failing. Figures: docs/RELIABILITY.md.
# Otherwise (make check): one scenario of each, sampled (the unit tests run
# all scenarios sampled).
set -euo pipefail
: "${TM_BUILD_DIR:=$(cd "$(dirname "$0")/../.." && pwd)/build/dev}"
for t in alloc storage; do
  bin="$TM_BUILD_DIR/unit_refresh_test_accel_$t"
  if [[ ! -x $bin ]]; then
    echo "fault_sweeps: $bin is not built" >&2
    exit 1
  fi
done
filter=
[[ ${TM_STRESS:-} == 1 ]] || filter=iceberg_full_cayenne
"$TM_BUILD_DIR/unit_refresh_test_accel_alloc" $filter
"$TM_BUILD_DIR/unit_refresh_test_accel_storage" $filter
