#!/usr/bin/env bash
# The test harness itself (issue 21): a case that needs ../shared/testdata is
# skipped when it is absent (exit 77, which ctest shows as "Skipped"), never
# passed, and fails instead when TM_REQUIRE_SHARED is set, as CI sets it;
# randomised tests print their seed and TM_SEED replays it.
source "$(dirname "$0")/lib.sh"
: "${TM_BUILD_DIR:?}"
unit=$TM_BUILD_DIR/unit_format_test_iceberg_plan
[[ -x $unit ]] || fail "$unit is not built"
code() { local rc=0; "$@" >"$T/out" 2>&1 || rc=$?; echo "$rc"; }

# C harness: skipped without the data, a failure when it is required, a pass with it.
assert_eq "$(code env TM_REQUIRE_SHARED= TM_TESTDATA="$T/none" "$unit")" 77 "unit test without testdata"
assert_contains "$(cat "$T/out")" "SKIP iceberg_" "a skipped case is named"
n_skip=$(grep -c '^  SKIP ' "$T/out" || true)
[[ $n_skip -ge 1 ]] || fail "no case was skipped"
assert_contains "$(cat "$T/out")" "$n_skip skipped" "the summary counts the skips"
assert_eq "$(code env TM_REQUIRE_SHARED=1 TM_TESTDATA="$T/none" "$unit")" 1 "unit test, testdata required"
assert_contains "$(cat "$T/out")" "TM_REQUIRE_SHARED is set" "the failure says why"
require_shared "$TESTDATA/iceberg"
assert_eq "$(code "$unit")" 0 "unit test with testdata"
assert_contains "$(cat "$T/out")" "0 skipped"

# Shell harness: the same three outcomes.
script=$TM_SOURCE_DIR/tests/integration/test_parquet_bad.sh
assert_eq "$(code env TM_REQUIRE_SHARED= TM_TESTDATA="$T/none" bash "$script")" 77 "script without testdata"
assert_contains "$(cat "$T/out")" "SKIP: test data missing"
assert_eq "$(code env TM_REQUIRE_SHARED=1 TM_TESTDATA="$T/none" bash "$script")" 1 "script, testdata required"

# Seeds: printed, and TM_SEED replays the same random choices.
draws() { bash -c 'source "$1"; seed_random probe; echo "$RANDOM $RANDOM $RANDOM"' _ "$TM_SOURCE_DIR/tests/integration/lib.sh"; }
a=$(TM_SEED=4242 draws 2>"$T/seed.err"); b=$(TM_SEED=4242 draws 2>/dev/null); c=$(TM_SEED=4243 draws 2>/dev/null)
assert_eq "$a" "$b" "TM_SEED replays the draws"
[[ $a != "$c" ]] || fail "another seed gives other draws"
assert_contains "$(cat "$T/seed.err")" "probe: seed 4242 (TM_SEED=4242 replays it)"
assert_eq "$(code env TM_SEED=x bash -c 'source "$1"; seed_random probe' _ "$TM_SOURCE_DIR/tests/integration/lib.sh")" 1 "a seed that is not a number"
kill_bin=$TM_BUILD_DIR/unit_engine_test_engine_kill
assert_eq "$(code env TM_SEED=77 "$kill_bin" engine_d1_sigkill_sqlite)" 0 "the kill test with a given seed"
assert_contains "$(cat "$T/out")" "seed 77 (TM_SEED=77 replays it)"
echo "harness: skip, required testdata and seeds behave"
