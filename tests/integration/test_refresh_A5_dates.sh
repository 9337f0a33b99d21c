#!/usr/bin/env bash
# SPEC A5: a date column receives later rows of the boundary day (never lost,
# never duplicated); an overlap shorter than a day re-reads the boundary day.
# A6: a day partition column floored to the same day keeps that partition.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data/day=2026-11-29" "$T/data/day=2026-11-30"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: days
    time_column: day
    time_format: date
    acceleration: {refresh_mode: append, refresh_append_overlap: 1h}
YAML
write_parquets "$T/data/day=2026-11-29/a.parquet" "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t(id, v)" \
  "$T/data/day=2026-11-30/a.parquet" "SELECT * FROM (VALUES (3, 'c')) t(id, v)"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "days: +3 rows"
# Later rows of the boundary day 2026-11-30, and of the next day.
mkdir -p "$T/data/day=2026-12-01"
write_parquets "$T/data/day=2026-11-30/b.parquet" "SELECT * FROM (VALUES (4, 'd'), (5, 'e')) t(id, v)" \
  "$T/data/day=2026-12-01/a.parquet" "SELECT * FROM (VALUES (6, 'f')) t(id, v)"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "days: +3 rows"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id), count(DISTINCT id) FROM days")" "6,21,6"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT day, count(*) FROM days GROUP BY day ORDER BY day" | tr '\n' ' ')" \
  "2026-11-29,2 2026-11-30,3 2026-12-01,1 "
# The partition folder 2026-11-29 is below the floored bound (12-01 - 1h -> 11-30): skipped (A6).
TIDEMARK_LOG=info tm refresh -c "$T/tm.yaml" 2>"$T/log" >/dev/null
assert_contains "$(cat "$T/log")" "files 3 read, 1 skipped"
echo ok
