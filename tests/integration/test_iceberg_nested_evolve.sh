#!/usr/bin/env bash
# Issue 16: an Iceberg table whose nested columns evolve. DuckDB writes the
# rows; `tidemark iceberg` creates the table, appends them, changes the schema
# inside a struct, a list's element struct and a map's value struct (rename,
# drop, add, promote, move) with update-schema, and appends rows of the new
# shape. At every snapshot tidemark's rows (`iceberg cat`) equal icebird's
# (an independent reader; rows of files written before the change are moved
# to the new shape by nested-evolve-check.mjs, because icebird returns nested
# values in their file's shape), and a dataset over the table loads them into
# the DuckDB engine and answers SQL over the renamed and added members.
source "$(dirname "$0")/lib.sh"
[[ -d "$NODE_PATH/icebird" ]] || fail "icebird is not installed (scripts/install-test-deps)"
cd "$T"
tbl=wh/ev

v1='[{"id": 1, "name": "id", "required": true, "type": "long"},
 {"id": 2, "name": "p", "type": {"type": "struct", "fields": [
   {"id": 3, "name": "a", "type": "int"}, {"id": 4, "name": "b", "type": "string"},
   {"id": 5, "name": "c", "type": "float"}]}},
 {"id": 6, "name": "l", "type": {"type": "list", "element-id": 7, "element-required": false,
   "element": {"type": "struct", "fields": [{"id": 8, "name": "x", "type": "int"},
     {"id": 9, "name": "y", "type": "string"}]}}},
 {"id": 10, "name": "m", "type": {"type": "map", "key-id": 11, "key": "string", "value-id": 12,
   "value-required": false, "value": {"type": "struct", "fields": [
     {"id": 13, "name": "v", "type": "int"}]}}}]'
# a -> alpha (int -> long), b dropped, c float -> double and moved first, d added;
# y dropped, z added; v -> vv, w added.
v2='[{"id": 1, "name": "id", "required": true, "type": "long"},
 {"id": 2, "name": "p", "type": {"type": "struct", "fields": [
   {"id": 5, "name": "c", "type": "double"}, {"id": 3, "name": "alpha", "type": "long"},
   {"name": "d", "type": "string"}]}},
 {"id": 6, "name": "l", "type": {"type": "list", "element": {"type": "struct", "fields": [
   {"id": 8, "name": "x", "type": "int"}, {"name": "z", "type": "int"}]}}},
 {"id": 10, "name": "m", "type": {"type": "map", "key": "string", "value": {"type": "struct",
   "fields": [{"id": 13, "name": "vv", "type": "int"}, {"name": "w", "type": "string"}]}}}]'

# 300 rows in the first shape, NULLs and empties at every level.
write_parquet f1.parquet "SELECT i::BIGINT AS id,
  CASE WHEN i % 11 = 0 THEN NULL ELSE {'a': CASE WHEN i % 7 = 0 THEN NULL ELSE i::INT END,
    'b': 'b' || i, 'c': (i + 0.5)::FLOAT} END AS p,
  CASE WHEN i % 13 = 0 THEN NULL WHEN i % 5 = 0 THEN [] ELSE
    [{'x': i::INT, 'y': 'y' || i}, NULL, {'x': NULL, 'y': NULL}] END AS l,
  CASE WHEN i % 17 = 0 THEN NULL ELSE MAP {'k' || i: {'v': i::INT}, 'n': NULL} END AS m
  FROM range(0, 300) t(i)"
# 200 rows in the second shape (ids from 1000).
write_parquet f2.parquet "SELECT (1000 + i)::BIGINT AS id,
  CASE WHEN i % 9 = 0 THEN NULL ELSE {'c': (i * 0.25)::DOUBLE,
    'alpha': CASE WHEN i % 4 = 0 THEN NULL ELSE (i * 10000000000)::BIGINT END,
    'd': CASE WHEN i % 3 = 0 THEN NULL ELSE 'd' || i END} END AS p,
  [{'x': i::INT, 'z': (i % 6)::INT}] AS l,
  MAP {'q' || i: {'vv': i::INT, 'w': 'w' || i}} AS m
  FROM range(0, 200) t(i)"

check() { # $1: what; $2: "same" when icebird's rows have the table's shape already
  tm iceberg cat "$tbl" --format json >ours.json || fail "cat: $1"
  node "$TM_SOURCE_DIR/tests/node/icebird-read.mjs" "$tbl" >icebird.jsonl || fail "icebird: $1"
  node "$TM_SOURCE_DIR/tests/node/nested-evolve-check.mjs" ours.json icebird.jsonl ${2:-} >/dev/null ||
    fail "tidemark and icebird disagree: $1"
}

tm iceberg create "$tbl" --schema "$v1" >/dev/null
tm iceberg append "$tbl" f1.parquet >/dev/null
check "before the change" same
assert_eq "$(wc -l <icebird.jsonl)" 300 "rows"

# A change Iceberg refuses leaves the table as it was.
if tm iceberg update-schema "$tbl" --schema '[{"id": 1, "name": "id", "required": true,
    "type": "long"}, {"id": 2, "name": "p", "type": "string"}]' >out 2>err; then
  fail "a struct became a string"
fi
assert_contains "$(cat err)" "field 'p': struct cannot become string"

tm iceberg update-schema "$tbl" --schema "$v2" >/dev/null
check "after the schema change, before new rows"
tm iceberg append "$tbl" f2.parquet >/dev/null
check "after rows of the new shape"
assert_eq "$(wc -l <icebird.jsonl)" 500 "rows"
# The first snapshot still reads as it was written.
first=$(tm iceberg history "$tbl" --format csv | awk -F, 'NR == 2 {print $1}')
tm iceberg cat "$tbl" --snapshot "$first" --format json >snap1.json
assert_eq "$(node -e 'console.log(JSON.parse(require("fs").readFileSync("snap1.json")).length)')" 300 \
  "rows of the first snapshot"

# A dataset over the table: the DuckDB engine stores the new shape; SQL reads the renamed,
# promoted and added members, and every row equals `iceberg cat`.
cat >tm.yaml <<YAML
datasets:
  - from: iceberg:file://$tbl
    name: ev
    acceleration: {enabled: true, engine: duckdb, mode: file}
YAML
tm_refresh -c tm.yaml >/dev/null
agg=$(tm_sql tm.yaml "SELECT count(*), count(p.alpha), sum(p.alpha), count(p.d), sum(l[1].z),
  count(l[1].z), sum(m['k3'].vv) FROM ev")
want=$(duckdb_query "SELECT 500 AS n,
  (SELECT count(p.a) FROM 'f1.parquet') + (SELECT count(p.alpha) FROM 'f2.parquet') AS alphas,
  (SELECT sum(p.a) FROM 'f1.parquet') + (SELECT sum(p.alpha) FROM 'f2.parquet') AS alpha_sum,
  (SELECT count(p.d) FROM 'f2.parquet') AS ds,
  (SELECT sum(l[1].z) FROM 'f2.parquet') AS z_sum,
  (SELECT count(l[1].z) FROM 'f2.parquet') AS zs,
  (SELECT sum(m['k3'].v) FROM 'f1.parquet') AS k3" | tail -1)
assert_eq "$agg" "$want" "aggregates over the evolved members (DuckDB over the source files)"
assert_eq "$(tm_sql tm.yaml "SELECT typeof(p) FROM ev LIMIT 1")" \
  '"STRUCT(c DOUBLE, alpha BIGINT, d VARCHAR)"' "the stored shape is the table's"
tm sql -c tm.yaml --format json "SELECT * FROM ev" >sql.json
node "$TM_SOURCE_DIR/tests/node/nested-evolve-check.mjs" sql.json ours.json same >/dev/null ||
  fail "the dataset's rows differ from iceberg cat"
