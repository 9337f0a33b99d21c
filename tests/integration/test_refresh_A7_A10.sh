#!/usr/bin/env bash
# SPEC A7: time_column last_modified reads only files modified after the mark;
# a real column named last_modified takes precedence over file times.
# SPEC A10: refresh_sql narrows columns and rows; a one-off --sql too.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/files" "$T/real" "$T/sql"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:files
    name: by_file
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: file:real
    name: by_column
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: file:sql
    name: narrowed
    time_column: ts
    acceleration:
      refresh_mode: append
      refresh_sql: SELECT id, ts FROM narrowed WHERE region = 'eu'
YAML
# real/a.parquet: a real last_modified column, older than the file's own time.
write_parquets "$T/files/a.parquet" "SELECT * FROM (VALUES (1), (2)) t(id)" \
  "$T/real/a.parquet" "SELECT * FROM (VALUES (1, TIMESTAMP '2020-01-01 00:00:00')) t(id, last_modified)" \
  "$T/sql/a.parquet" "SELECT * FROM (VALUES (1, TIMESTAMP '2026-11-30 10:00:00', 'eu'), (2, TIMESTAMP '2026-11-30 10:00:01', 'us'), (3, TIMESTAMP '2026-11-30 10:00:02', 'eu')) t(id, ts, region)"
touch -d '2026-01-01 00:00:00' "$T/files/a.parquet"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "by_file: +2 rows"
assert_contains "$out" "by_column: +1 rows"
assert_contains "$out" "narrowed: +2 rows"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*) FROM information_schema.columns WHERE table_name = 'narrowed'")" "2" "refresh_sql keeps only id, ts"
# A new file appears: only it is read; an old file rewritten with an old time is not.
write_parquets "$T/files/b.parquet" "SELECT * FROM (VALUES (3)) t(id)" \
  "$T/files/c.parquet" "SELECT * FROM (VALUES (99)) t(id)" \
  "$T/real/b.parquet" "SELECT * FROM (VALUES (2, TIMESTAMP '2021-01-01 00:00:00'), (3, TIMESTAMP '2019-01-01 00:00:00')) t(id, last_modified)"
touch -d '2026-02-01 00:00:00' "$T/files/b.parquet"
touch -d '2025-12-31 00:00:00' "$T/files/c.parquet"
TIDEMARK_LOG=info tm refresh -c "$T/tm.yaml" by_file by_column >"$T/out" 2>"$T/log"
assert_contains "$(cat "$T/out")" "by_file: +1 rows"
assert_contains "$(cat "$T/log")" "[by_file] refresh finished: +1 rows via time in"
assert_contains "$(cat "$T/log")" "files 1 read, 2 skipped"
assert_contains "$(cat "$T/out")" "by_column: +1 rows" "the real column decides, not the file time"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id, '-') FROM (SELECT id FROM by_file ORDER BY id)")" "1-2-3"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id, '-') FROM (SELECT id FROM by_column ORDER BY id)")" "1-2"
# A one-off refresh_sql (reads by time, A10/B11).
write_parquet "$T/sql/b.parquet" "SELECT * FROM (VALUES (4, TIMESTAMP '2026-11-30 10:00:03', 'eu'), (5, TIMESTAMP '2026-11-30 10:00:04', 'eu')) t(id, ts, region)"
assert_contains "$(tm_refresh -c "$T/tm.yaml" narrowed --sql "SELECT id, ts FROM narrowed WHERE id = 5")" "narrowed: +1 rows"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id, '-') FROM (SELECT id FROM narrowed ORDER BY id)")" "1-3-5"
echo ok
