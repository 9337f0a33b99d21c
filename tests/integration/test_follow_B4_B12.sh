#!/usr/bin/env bash
# SPEC B4: an append followed by a compaction before the refresh loads the rows
# once, from the files the append added; a replace alone adds nothing; a delete
# removes nothing. B12: delete files are applied by a full refresh, never by
# an append refresh. B10: a full refresh saves the snapshot it read and later
# appends follow from there.
source "$(dirname "$0")/lib.sh"
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
ice_create wh/events
ice_append wh/events "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +2 rows via time"
# Append, then compact (replace) before the refresh: the appended rows once.
ice_append wh/events "3,2026-11-30T10:00:02Z,c"
ice_append wh/events "4,2026-11-30T10:00:03Z,d"
tm iceberg compact wh/events >/dev/null
assert_contains "$(tm_refresh -c tm.yaml)" "events: +2 rows via snapshots (3: append 2, replace 1)"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(DISTINCT id) FROM events")" "4,4"
# A replace alone adds nothing: two appends followed, then compacted.
ice_append wh/events "10,2026-11-30T10:00:10Z,j"
ice_append wh/events "11,2026-11-30T10:00:11Z,k"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +2 rows via snapshots (2: append 2)"
tm iceberg compact wh/events >/dev/null
assert_contains "$(tm_refresh -c tm.yaml)" "events: +0 rows via snapshots (1: replace 1)"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(DISTINCT id) FROM events")" "6,6"
# A delete (position delete file) removes nothing from the acceleration (B12).
tm iceberg delete wh/events --where "id = 1" >/dev/null
assert_contains "$(tm_refresh -c tm.yaml)" "events: +0 rows via snapshots (1: delete 1)"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM events")" "6"
assert_eq "$(tm iceberg cat wh/events --format csv | tail -n +2 | wc -l)" "5" "the table itself has 5 live rows"
# A full refresh applies the deletes (B12) and saves the snapshot it read (B10).
assert_contains "$(tm_refresh -c tm.yaml --full)" "events: 5 rows via full refresh"
assert_eq "$(tm_sql tm.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM events ORDER BY id)")" "2-3-4-10-11"
ice_append wh/events "5,2026-11-30T10:00:04Z,e"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql tm.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM events ORDER BY id)")" "2-3-4-5-10-11"
echo ok
