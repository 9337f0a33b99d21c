#!/usr/bin/env bash
# Issue 17 (Spice's acceleration.refresh_data_window, docs/REFRESH.md "Data
# window"): every refresh keeps only rows whose time_column is newer than
# now - window: a full refresh (with refresh_sql, ANDed), an append by time,
# Iceberg snapshot following, and day-granular columns; config refusals.
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir -p data
# Ages: 3 days, 30 hours, 2 hours, 10 minutes (timestamps relative to now).
write_parquet data/a.parquet "SELECT * FROM (VALUES (1, now()::TIMESTAMP - INTERVAL 3 DAY, 'x'),
  (2, now()::TIMESTAMP - INTERVAL 30 HOUR, 'x'), (3, now()::TIMESTAMP - INTERVAL 2 HOUR, 'y'),
  (4, now()::TIMESTAMP - INTERVAL 10 MINUTE, 'x')) t(id, ts, city)"
cat > tm.yaml <<YAML
datasets:
  - from: file:data
    name: full_win
    time_column: ts
    acceleration: {refresh_mode: full, refresh_data_window: 1d}
  - from: file:data
    name: sql_win
    time_column: ts
    acceleration: {refresh_mode: full, refresh_data_window: 2d, refresh_sql: "SELECT * FROM sql_win WHERE city = 'x'"}
  - from: file:data
    name: append_win
    time_column: ts
    acceleration: {refresh_mode: append, refresh_data_window: 1d}
  - from: file:data
    name: no_win
    time_column: ts
    acceleration: {refresh_mode: full}
YAML
out=$(tm_refresh -c tm.yaml)
assert_contains "$out" "full_win: 2 rows via full refresh"
assert_contains "$out" "sql_win: 2 rows via full refresh"
assert_contains "$out" "append_win: +2 rows"
assert_contains "$out" "no_win: 4 rows via full refresh"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM full_win")" "3-4"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM sql_win")" "2-4"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM append_win")" "3-4"
# Append: a new file with one old and one new row; the old one stays out.
write_parquet data/b.parquet "SELECT * FROM (VALUES (5, now()::TIMESTAMP - INTERVAL 2 DAY, 'x'),
  (6, now()::TIMESTAMP + INTERVAL 1 MINUTE, 'x')) t(id, ts, city)"
out=$(tm_refresh -c tm.yaml append_win)
assert_contains "$out" "append_win: +1 rows"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM append_win")" "3-4-6"
# The explain output names the window's bound.
assert_contains "$(tm refresh -c tm.yaml --explain full_win 2>&1)" "ts >"

# A day-granular column: whole days, inclusive (A5), so yesterday's rows stay with a 1d window.
mkdir -p days
write_parquet days/a.parquet "SELECT * FROM (VALUES (1, current_date - 5), (2, current_date - 1), (3, current_date)) t(id, d)"
cat > days.yaml <<YAML
datasets:
  - from: file:days
    name: daily
    time_column: d
    acceleration: {refresh_mode: full, refresh_data_window: 1d}
YAML
tm_refresh -c days.yaml >/dev/null
assert_eq "$(tm_sql days.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM daily")" "2-3"

# An Iceberg table followed by snapshots: rows of an added file outside the window stay out.
ice_create wh/t
now=$(date -u +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
ice_append wh/t "1,$(iso $((now - 86400 * 4))),old" "2,$(iso $((now - 60))),new"
cat > ice.yaml <<YAML
datasets:
  - from: iceberg:file:wh/t
    name: ice
    time_column: ts
    acceleration: {refresh_mode: append, refresh_data_window: 2d}
YAML
assert_contains "$(tm_refresh -c ice.yaml)" "ice: +1 rows"
ice_append wh/t "3,$(iso $((now - 86400 * 3))),old" "4,$(iso $((now - 30))),new"
assert_contains "$(tm_refresh -c ice.yaml)" "ice: +1 rows via snapshots"
assert_eq "$(tm_sql ice.yaml "SELECT string_agg(id::VARCHAR, '-' ORDER BY id) FROM ice")" "2-4"

# Refusals: no time_column; last_modified (a file's time, not the rows').
refused() {
  printf 'datasets:\n  - from: file:data\n    name: w\n%s\n    acceleration: {refresh_data_window: 1d}\n' "$1" > bad.yaml
  set +e
  tm config check -c bad.yaml >/dev/null 2>err; local rc=$?
  set -e
  assert_eq "$rc" 2 "config check exit code for [$1]"
  assert_contains "$(cat err)" "$2"
}
refused "" "acceleration.refresh_data_window: refresh_data_window needs time_column"
refused "    time_column: last_modified" "refresh_data_window needs a time_column of the data"
echo ok
