#!/usr/bin/env bash
# SPEC A3: late rows inside the overlap are loaded, late rows older than the
# window are not (a full refresh loads them), and genuine duplicate rows in the
# source are kept (multiset de-duplication). Parquet by DuckDB, sqlite engine.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: events
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, refresh_append_overlap: 10m}
YAML
b="TIMESTAMP '2026-11-30 12:00:00'"
# Two identical rows (a genuine duplicate) and a row at the mark.
write_parquet "$T/data/a.parquet" "SELECT * FROM (VALUES (1, $b - INTERVAL 1 HOUR, 'x'), (2, $b - INTERVAL 5 MINUTE, 'dup'), (2, $b - INTERVAL 5 MINUTE, 'dup'), (3, $b, 'mark')) t(id, ts, v)"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "events: +4 rows"
# Late: inside the window (11:55 > 12:00 - 10m), outside it (11:00), and a third
# copy of the duplicate, which the source now holds three times.
write_parquet "$T/data/b.parquet" "SELECT * FROM (VALUES (4, $b - INTERVAL 8 MINUTE, 'late-in'), (5, $b - INTERVAL 30 MINUTE, 'late-out'), (2, $b - INTERVAL 5 MINUTE, 'dup')) t(id, ts, v)"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "events: +2 rows"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT id, count(*) FROM events GROUP BY id ORDER BY id" | tr '\n' ' ')" "1,1 2,3 3,1 4,1 "
# A full refresh loads the row that was too late for the window.
assert_contains "$(tm_refresh -c "$T/tm.yaml" --full)" "events: 7 rows via full refresh"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id) FROM events")" "7,19"
echo ok
