#!/usr/bin/env bash
# SPEC B7: the first refresh of an Iceberg dataset reads by time (not a
# fallback). B2: appends committed out of time order are all loaded by
# following snapshots. B3: an unchanged table reads no manifest and no data
# file (proved by moving every manifest away). B8: file mode continues across
# processes (every `tidemark refresh` is a new process).
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
tm refresh -c tm.yaml >out 2>err
assert_contains "$(cat out)" "events: +2 rows via time in"
[[ ! -s err ]] || fail "the first refresh is not a fallback, no warning: $(cat err)"
# Out of time order: both older than the high-water mark.
ice_append wh/events "3,2026-11-30T09:00:00Z,early"
ice_append wh/events "4,2026-11-30T08:00:00Z,earlier" "5,2026-11-30T11:00:00Z,later"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +3 rows via snapshots (2: append 2)"
assert_eq "$(tm_sql tm.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM events ORDER BY id)")" "1-2-3-4-5"
# B3: nothing new: no manifest list, no manifest, no data file is read.
mkdir hidden
mv wh/events/metadata/*.avro hidden/
mv wh/events/data hidden/data
assert_contains "$(tm_refresh -c tm.yaml)" "events: +0 rows via snapshots (no new snapshot)"
mv hidden/*.avro wh/events/metadata/
mv hidden/data wh/events/data
ice_append wh/events "6,2026-11-30T07:00:00Z,x"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(DISTINCT id) FROM events")" "6,6"
echo ok
