#!/usr/bin/env bash
# `tidemark refresh --explain` (issue 21; SPEC A2, A3, B2, B3, B5, B7, A11):
# prints the plan each refresh would carry out and changes nothing: no
# acceleration is created, no row is read, no state moves. The plan it prints
# is the one the next refresh then carries out.
source "$(dirname "$0")/lib.sh"
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: events
    time_column: ts
    acceleration: {refresh_mode: append, refresh_append_overlap: 1h}
YAML
ice_create wh/events
ice_append wh/events "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T11:00:00Z,b"

# B7: the first refresh reads by time from an empty acceleration; explaining it creates nothing.
out=$(tm refresh -c tm.yaml --explain)
assert_contains "$out" "events:
  read: time (no saved snapshot"
assert_contains "$out" "bound: none (the acceleration is empty: every row)"
assert_contains "$out" "transaction: appends"
# (The data folder may exist: DuckDB is allowed only folders that do.)
[[ -z $(ls -A .tidemark/data/events 2>/dev/null) ]] || fail "--explain created acceleration files: $(ls -A .tidemark/data/events)"
[[ ! -e .tidemark/refresh.noop ]] || fail "--explain left a no-op stamp"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +2 rows via time"

# B2: a new append is followed; the plan names the snapshot and does not read it.
ice_append wh/events "3,2026-11-30T12:00:00Z,c"
snap=$(tm iceberg history wh/events | awk -F'|' '$9 ~ /true/ {gsub(/ /, "", $1); print $1}')
[[ -n $snap ]] || fail "no current snapshot in the history"
mv wh/events/data hidden-data   # a plan that read a row would fail now
out=$(tm refresh -c tm.yaml --explain)
mv hidden-data wh/events/data
assert_contains "$out" "read: snapshots (following snapshots)"
assert_contains "$out" "snapshot: $snap append: its added files"
assert_contains "$out" "deletes: not applied (B12)"
assert_contains "$out" "saves: snapshot $snap"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM events")" "2" "--explain wrote rows"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +1 rows via snapshots (1: append 1)"

# B3: nothing new.
assert_contains "$(tm refresh -c tm.yaml --explain)" "read: nothing (no snapshot newer than the saved one (B3))
  transaction: none"

# B5 + A3: after a rollback the plan falls back to time, with the overlap's inclusive
# bound (the mark 12:00 less 1h) and the window de-duplicated.
first=$(tm iceberg history wh/events | awk -F'|' 'NR==3 {gsub(/ /, "", $1); print $1}')
tm iceberg rollback wh/events --to "$first" >/dev/null
ice_append wh/events "4,2026-11-30T13:00:00Z,d"
out=$(tm refresh -c tm.yaml --explain)
assert_contains "$out" "read: time (the saved snapshot is not an ancestor of the current one)"
assert_contains "$out" "fallback: snapshot_not_ancestor (warns: the reason changed)"
assert_contains "$out" "bound: ts >= 2026-11-30T11:00:00Z"
assert_contains "$out" "de-duplication: the re-read window against the stored rows (A3)"
assert_contains "$out" "source filter: ts >= "
# The explained plan is what the refresh does: one new row, the fallback warned once.
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "events: +1 rows via time (fallback: snapshot_not_ancestor)"
assert_contains "$(cat err)" "snapshot_not_ancestor"
assert_eq "$(tm_sql tm.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM events ORDER BY id)")" "1-2-3-4"

# A11: --full replaces every row; --explain with --full says so and still changes nothing.
out=$(tm refresh -c tm.yaml --explain --full)
assert_contains "$out" "read: full (full refresh)"
assert_contains "$out" "transaction: replaces every row"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM events")" "4"

# Usage errors.
if tm refresh -c tm.yaml --explain nosuch >/dev/null 2>err; then fail "an unknown dataset was explained"; fi
assert_contains "$(cat err)" "no dataset named 'nosuch'"
if tm refresh -c tm.yaml --explain --url http://127.0.0.1:1 >/dev/null 2>err; then fail "--explain with --url was accepted"; fi
assert_contains "$(cat err)" "--explain plans in this process"
echo ok
