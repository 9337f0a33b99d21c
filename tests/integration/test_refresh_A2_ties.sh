#!/usr/bin/env bash
# SPEC A2: the strict boundary with ties at the maximum. All rows sharing the
# maximum time are loaded exactly once across refreshes, with and without an
# overlap (A3), on Parquet files written by DuckDB, into cayenne.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: strict
    time_column: ts
    acceleration: {refresh_mode: append}
  - from: file:data
    name: overlap
    time_column: ts
    acceleration: {refresh_mode: append, refresh_append_overlap: 1s}
YAML
base="TIMESTAMP '2026-11-30 10:00:00'"
write_parquet "$T/data/a.parquet" "SELECT * FROM (VALUES (1, $base), (2, $base + INTERVAL 1 SECOND), (3, $base + INTERVAL 2 SECOND), (4, $base + INTERVAL 2 SECOND)) t(id, ts)"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "strict: +4 rows via time"
assert_contains "$out" "overlap: +4 rows via time"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "strict: +0 rows" "the two rows at the maximum are not read again"
assert_contains "$out" "overlap: +0 rows" "the re-read window is de-duplicated"
# A row at the old maximum arrives later, and a newer one.
write_parquet "$T/data/b.parquet" "SELECT * FROM (VALUES (5, $base + INTERVAL 2 SECOND), (6, $base + INTERVAL 3 SECOND)) t(id, ts)"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "strict: +1 rows" "strict: a row at the mark is not above it (A2)"
assert_contains "$out" "overlap: +2 rows" "overlap: the late tie is inside the window (A3)"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id) FROM strict")" "5,16"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id), count(DISTINCT id) FROM overlap")" "6,21,6"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "strict: +0 rows"
assert_contains "$out" "overlap: +0 rows"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*) FROM overlap")" "6"
echo ok
