#!/usr/bin/env bash
# Issue 19 plan-driven differential test, long form (SPEC E2, E3, E5): 12 plans
# of 24 snapshots (v2 and v3, unpartitioned and bucketed, the engines in turn),
# refreshed after every snapshot, then the same plans refreshed only every 3rd
# and every 5th snapshot (several snapshots applied at once); the acceleration
# must equal the table at each compared snapshot (tests/node/changes-plans.mjs
# says which reader is the truth for what). Mode: TM_CHANGES_MODE (default
# changes; full works too). Engines: cayenne, duckdb, arrow and sqlite in
# turn (postgres needs a server: tests/integration/test_refresh_changes_E.sh).
# TM_STRESS=1 runs all of it; the short form (make check) runs plan 3 (sqlite)
# refreshed every 4th snapshot — the every-snapshot short form is tests/integration/test_changes_plans.sh.
source "$(dirname "$0")/../integration/lib.sh"
mode=${TM_CHANGES_MODE:-changes}
seed=${TM_SEED:-1919}
engines=default,duckdb,arrow,sqlite
plans() { node "$TM_SOURCE_DIR/tests/node/changes-plans.mjs" --bin "$TM_BIN" --dir "$T" --seed "$seed" --mode "$mode" --engine cycle --engines "$engines" "$@"; }
run() {
  local out rc=0
  out=$(plans "$@") || rc=$?
  echo "$out" | grep -v '^ok ' >&2
  [[ $rc -eq 0 ]] || failed=1
}
failed=0
if [[ -n ${TM_STRESS:-} ]]; then
  n=${TM_PLANS:-12} s=${TM_PLAN_SNAPSHOTS:-24}
  run --plans "$n" --snapshots "$s" --every 1
  run --plans "$n" --snapshots "$s" --every 3
  run --plans "$n" --snapshots "$s" --every 5
else
  run --first-plan 3 --plans 1 --snapshots 20 --every 4
fi
[[ $failed -eq 0 ]] || fail "mismatches in mode $mode (seed $seed): see the MISMATCH lines"
echo ok
