#!/usr/bin/env bash
# SPEC C6: a dataset without acceleration is federated: every query scans the
# source as it is now — a folder of files, or an Iceberg table with its delete
# files applied (B12) — and simple filters are pushed into the scan.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/files"
require_shared "$TESTDATA/iceberg/iceberg_v2_delete_positional"
cp -r "$TESTDATA/iceberg/iceberg_v2_delete_positional" "$T/ice"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:files
    name: files
  - from: iceberg:file://ice
    name: ice
YAML
write_parquet "$T/files/a.parquet" "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t(id, v)"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id) FROM files")" "2,3"
# A new file is seen by the next query, without any refresh.
write_parquet "$T/files/b.parquet" "SELECT * FROM (VALUES (3, 'c')) t(id, v)"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id) FROM files")" "3,6"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT v FROM files WHERE id = 3")" "c"
# The filter was pushed into the scan: a.parquet's row group (ids 1-2) is skipped by its statistics.
TIDEMARK_LOG=debug tm sql -c "$T/tm.yaml" --format csv "SELECT v FROM files WHERE id = 3" >/dev/null 2>"$T/debug"
assert_contains "$(cat "$T/debug")" "federated scan: pushed [id = 3]; files 2 read, 0 skipped; row groups 1 read, 1 skipped"
# Strings of every batch survive the scan's move to the next batch.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT bool_and(v IN ('a', 'b', 'c')), max(v), count(*) FROM files")" "true,c,3"
# A pushed-down filter and DuckDB's own predicate agree.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT string_agg(v, '' ORDER BY v) FROM files WHERE id >= 2 AND v <> 'c'")" "b"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT v, count(*) FROM files GROUP BY v ORDER BY v")" \
  "a,1
b,1
c,1"
# The Iceberg table: 3 rows written, one removed by a position delete file.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*) FROM ice")" "2"
# Queries stay read-only (D4).
set +e
tm sql -c "$T/tm.yaml" "DELETE FROM files" >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2
assert_contains "$(cat "$T/err")" "may not be modified"
echo ok
