#!/usr/bin/env bash
# SPEC B4: an overwrite on keyed cayenne (key without time_column) reads the
# files it added and keeps the newest version of each key (A8); on a sqlite
# dataset keyed with time_column in the key it falls back
# (rows_rewritten_without_primary_key), and so does an unkeyed one.
# B1: a keyed sqlite dataset whose key lacks time_column never follows
# snapshots. B8: a memory-mode acceleration reads by time after a restart.
source "$(dirname "$0")/lib.sh"
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: keyed_cay
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: append, primary_key: id}
  - from: iceberg:file://wh/events
    name: keyed_time_lite
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, primary_key: "(id, ts)", refresh_append_overlap: 1h}
  - from: iceberg:file://wh/events
    name: unkeyed
    time_column: ts
    acceleration: {refresh_mode: append, refresh_append_overlap: 1h}
  - from: iceberg:file://wh/events
    name: b1_lite
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, primary_key: id, refresh_append_overlap: 1h}
  - from: iceberg:file://wh/events
    name: mem
    time_column: ts
    acceleration: {engine: arrow, refresh_mode: append}
YAML
ice_create wh/events
ice_append wh/events "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b"
tm_refresh -c tm.yaml >/dev/null
ice_append wh/events "3,2026-11-30T10:00:02Z,c"
out=$(tm_refresh -c tm.yaml)
assert_contains "$out" "keyed_cay: +1 rows via snapshots (1: append 1)"
assert_contains "$out" "b1_lite: +1 rows via time in" "B1: never follows snapshots"
assert_contains "$out" "mem: +3 rows via time in" "B8: memory mode starts over by time in a new process"
# Overwrite id 1 with a newer version.
printf 'id,ts,v\n1,2026-11-30T10:05:00Z,a2\n' > new.csv
tm iceberg overwrite wh/events --where "id = 1" new.csv >/dev/null
tm refresh -c tm.yaml >out 2>err
out=$(cat out)
assert_contains "$out" "keyed_cay: +1 rows via snapshots (1: overwrite 1)"
assert_contains "$out" "keyed_time_lite: +1 rows via time (fallback: rows_rewritten_without_primary_key)"
assert_contains "$out" "unkeyed: +1 rows via time (fallback: rows_rewritten_without_primary_key)"
assert_contains "$(cat err)" "[keyed_time_lite] append refresh reads by time instead of following snapshots: rows_rewritten_without_primary_key"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), (SELECT v FROM keyed_cay WHERE id = 1) FROM keyed_cay")" "3,a2" "newest per key"
# The rewritten row is added (append never retracts, B12); the old version stays.
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM unkeyed")" "4"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM b1_lite")" "3"
echo ok
