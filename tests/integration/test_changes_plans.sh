#!/usr/bin/env bash
# Issue 19 plan-driven differential test, short form (SPEC E2, E3): seeded
# plans of mixed Iceberg operations (appends, position deletes, deletion
# vectors on v3, equality deletes, copy-on-write deletes, deletes of whole
# files, overwrites, upserts writing data and equality deletes in one commit,
# compaction, rollback, expire) authored with `tidemark iceberg`; after each
# snapshot `tidemark refresh`, and the acceleration must equal, as a multiset,
# the table at that snapshot read independently (icebird, or the spec reader
# with tests/node/puffin-check.mjs where deletion vectors are live: see
# tests/node/changes-plans.mjs). The refresh mode under test is
# TM_CHANGES_MODE (default changes; full must pass too). The harness must also catch a drift: an
# append refresh keeps deleted rows (B12), which it has to report.
# Plan 3 runs on engine sqlite. The long form (10+ plans, every snapshot and skipping several) is
# tests/stress/changes_plans.sh under TM_STRESS=1.
source "$(dirname "$0")/lib.sh"
mode=${TM_CHANGES_MODE:-changes}
seed=${TM_SEED:-19}
plans() { node "$TM_SOURCE_DIR/tests/node/changes-plans.mjs" --bin "$TM_BIN" --dir "$T" --seed "$seed" "$@"; }
# 2 plans x 20 snapshots: plan 1 (v3: deletion vectors; duckdb engine) and plan 2
# (v2, bucket[4](id); arrow engine). The stress form adds plan 3 (every 4th snapshot) and
# runs 12 plans under TM_STRESS=1.
out=$(plans --first-plan 1 --plans 2 --snapshots 20 --mode "$mode" --engine cycle) || { echo "$out" >&2; fail "plans in mode $mode: a mismatch (seed $seed)"; }
echo "$out" | grep '^plan\|^total' >&2
assert_contains "$out" "40 snapshots compared, 0 mismatched, 0 truth failures, 0 plans refused (seed $seed, mode $mode"
# Engine sqlite (SPEC E3 on every engine): plan 3 (v3, bucket[4](id)), 12 snapshots, each
# refreshed and compared (the stress form's short run refreshes it every 4th snapshot).
out=$(plans --first-plan 3 --plans 1 --snapshots 12 --mode "$mode" --engine sqlite) || { echo "$out" >&2; fail "sqlite plan in mode $mode: a mismatch (seed $seed)"; }
echo "$out" | grep '^plan\|^total' >&2
assert_contains "$out" "plan 3 (v3, bucket[4](id), engine sqlite"
assert_contains "$out" "12 snapshots compared, 0 mismatched, 0 truth failures, 0 plans refused (seed $seed, mode $mode"
# The harness catches drift: an append refresh of a plan with deletes must not match.
out=$(plans --plans 1 --snapshots 6 --mode append --expect-drift) || { echo "$out" >&2; fail "the harness did not detect the append drift"; }
assert_contains "$out" "MISMATCH seed $seed plan 0"
echo "$out" | grep '^total' >&2
echo ok
