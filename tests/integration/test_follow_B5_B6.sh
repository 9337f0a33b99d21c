#!/usr/bin/env bash
# SPEC B5, B6: histories that cannot be followed make one refresh read by time,
# then following resumes: a rollback (snapshot_not_ancestor), a replaced table
# with no snapshot yet (table_has_no_snapshot), then with one (table_replaced).
# The warning names the dataset and the reason and repeats only when the
# reason changes, also across processes.
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
ice_append wh/events "1,2026-11-30T10:00:00Z,a"
tm_refresh -c tm.yaml >/dev/null
first=$(tm iceberg history wh/events --format csv | sed -n 2p | cut -d, -f1)
ice_append wh/events "2,2026-11-30T10:00:01Z,b"
assert_contains "$(tm_refresh -c tm.yaml)" "+1 rows via snapshots (1: append 1)"
# Roll back to the first snapshot: the saved one (the second) is no longer an ancestor.
tm iceberg rollback wh/events --to "$first" >/dev/null
ice_append wh/events "3,2026-11-30T10:00:02Z,c"
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "events: +1 rows via time (fallback: snapshot_not_ancestor)"
assert_contains "$(cat err)" "WARN  [events] append refresh reads by time instead of following snapshots: snapshot_not_ancestor"
# `tidemark status` shows the saved snapshot and the last fallback (issue 7).
cur=$(tm iceberg history wh/events --format csv | tr -d '\r' | awk -F, '$NF == "true" { print $1 }')
st=$(tm status -c tm.yaml --format json)   # (not through jq: it rounds 64-bit ids)
assert_contains "$st" "\"saved_snapshot_id\": $cur"
assert_contains "$st" '"last_fallback_reason": "snapshot_not_ancestor"'
assert_contains "$(tm status -c tm.yaml)" "snapshot_not_ancestor"
# Following resumes from the snapshot that refresh loaded.
ice_append wh/events "4,2026-11-30T10:00:03Z,d"
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "events: +1 rows via snapshots (1: append 1)"
# Another rollback: the same reason again, no second warning (B6).
tm iceberg rollback wh/events --to "$first" >/dev/null
ice_append wh/events "5,2026-11-30T10:00:04Z,e"
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "(fallback: snapshot_not_ancestor)"
[[ "$(cat err)" != *"snapshot_not_ancestor"* ]] || fail "the warning repeated for the same reason: $(cat err)"
# The table is replaced: no snapshot yet, then a new uuid with one.
tm iceberg replace-table wh/events >/dev/null
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "(fallback: table_has_no_snapshot)"
assert_contains "$(cat err)" "table_has_no_snapshot"
ice_append wh/events "6,2026-11-30T10:00:05Z,f"
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "events: +1 rows via time (fallback: table_replaced)"
assert_contains "$(cat err)" "[events] append refresh reads by time instead of following snapshots: table_replaced"
ice_append wh/events "7,2026-11-30T10:00:06Z,g"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +1 rows via snapshots (1: append 1)"
# Rows 3 and 5 were lost to the rollbacks' abandoned lines? No: rolled-back
# snapshots are abandoned history; every row committed on the live line is loaded.
assert_eq "$(tm_sql tm.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM events ORDER BY id)")" "1-2-3-4-5-6-7"
echo ok
