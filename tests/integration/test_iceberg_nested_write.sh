#!/usr/bin/env bash
# Authoring Iceberg tables with nested columns (issue 16): DuckDB writes a
# Parquet file with a struct holding a list, a map and a struct (with a
# SMALLINT member: Iceberg has int, so appending converts it), a list of
# structs and a map of varchar to struct (nulls at every level, empty lists
# and maps, 300 rows in 3 row groups). `tidemark iceberg create --schema-from`
# it and `append` it; then
#   (a) `tidemark iceberg cat` equals DuckDB's reading of the file, every value;
#   (b) every data file's Parquet schema (DuckDB's parquet_schema()) carries
#       the metadata's field id on every element Iceberg ids, and ids are
#       unique up to last-column-id;
#   (c) icebird reads the table with equal values; the metrics in the
#       manifests (read by icebird) are keyed by the leaves' ids and equal
#       DuckDB's parquet_metadata() of each file;
#   (d) a table created with --schema JSON (member ids partly given, the
#       rest assigned) partitioned by payload.region and bucket[4](payload.id):
#       every data file holds only rows of its manifest partition (checked
#       with DuckDB's reading of the file and a Murmur3 bucket computed in the
#       check script, itself checked against the Iceberg spec's known
#       answers), the partitions are those of the source rows; a dataset
#       (refresh_mode: full) and a federated query load every row right; a
#       copy-on-write delete, an overwrite and a compaction carry the nested
#       columns through; a bad partition path is refused naming it.
source "$(dirname "$0")/lib.sh"
cd "$T"
check() { node "$TM_SOURCE_DIR/tests/node/iceberg-nested-check.mjs" "$@"; }
last_meta() { ls "$1"/metadata/v*.metadata.json | sort -V | tail -1; }
[[ -d "$NODE_PATH/icebird" ]] || fail "icebird is not installed (scripts/install-test-deps)"

duckdb_query "COPY (
  SELECT i::BIGINT AS id,
    CASE WHEN i % 13 = 0 THEN NULL ELSE {
      'region': CASE WHEN i % 11 = 0 THEN NULL ELSE ['eu', 'us', 'ap', 'sa'][1 + i % 4] END,
      'id': CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 7919 - 100000)::BIGINT END,
      'tags': CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN [] ELSE ['t' || i, NULL, 'u'] END,
      'attrs': CASE WHEN i % 6 = 0 THEN NULL WHEN i % 6 = 1 THEN MAP {}
                    ELSE MAP {'a': i::INTEGER, 'b': NULL::INTEGER} END,
      'user': CASE WHEN i % 9 = 0 THEN NULL
                   ELSE {'uid': (i % 50)::BIGINT, 'name': CASE WHEN i % 4 = 0 THEN NULL ELSE 'n' || i END,
                         'lvl': (i % 100)::SMALLINT} END
    } END AS payload,
    CASE WHEN i % 8 = 0 THEN NULL WHEN i % 8 = 1 THEN []
         ELSE [{'a': i::INTEGER, 'b': CASE WHEN i % 3 = 0 THEN NULL ELSE [(i * 0.5)::DOUBLE, NULL] END},
               NULL, {'a': NULL, 'b': []}] END AS los,
    CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN MAP {}
         ELSE MAP {'k' || i: {'x': i / 4, 'd': DATE '2026-01-01' + i::INTEGER}, 'z': NULL} END AS mvs
  FROM range(0, 300) t(i)
) TO 'src.parquet' (FORMAT PARQUET, ROW_GROUP_SIZE 100)" >/dev/null

# ---- create --schema-from, append -------------------------------------------
tm iceberg create wh/n --schema-from src.parquet >/dev/null
meta=$(last_meta wh/n)
assert_eq "$(tr -d ' \n' <"$meta" | grep -o '"last-column-id":[0-9]*')" '"last-column-id":23' \
  "every member of the nested columns got an id"
assert_contains "$(tm iceberg append wh/n src.parquet)" "1 data files added (300 rows)"
# (a) tidemark's reading equals DuckDB's reading of the source.
tm iceberg cat wh/n --format json >cat.json
check values cat.json src.parquet >&2 || fail "(a) tidemark iceberg cat differs from DuckDB"
# (b) field ids on every element, against the metadata's ids.
meta=$(last_meta wh/n)
check ids "$meta" wh/n/data/*.parquet >&2 || fail "(b) field ids of the data files"
# (c) icebird, an independent reader, sees the same values.
check icebird wh/n src.parquet >&2 || fail "(c) icebird differs from DuckDB"
# Metrics by leaf id (manifests read by icebird) equal the Parquet statistics.
check metrics wh/n >&2 || fail "metrics of the nested leaves"

# ---- (d) --schema JSON, partitioned by struct members ---------------------------
# Some member ids given (payload 2, payload.region 3), the rest assigned.
schema='{"type":"struct","fields":[
 {"name":"id","required":false,"type":"long"},
 {"id":2,"name":"payload","required":false,"type":{"type":"struct","fields":[
   {"id":3,"name":"region","required":false,"type":"string"},
   {"name":"id","required":false,"type":"long"},
   {"name":"tags","required":false,"type":{"type":"list","element":"string","element-required":false}},
   {"name":"attrs","required":false,"type":{"type":"map","key":"string","value":"int","value-required":false}},
   {"name":"user","required":false,"type":{"type":"struct","fields":[
     {"name":"uid","required":false,"type":"long"},{"name":"name","required":false,"type":"string"},
     {"name":"lvl","required":false,"type":"int"}]}}]}},
 {"name":"los","required":false,"type":{"type":"list","element-required":false,"element":{"type":"struct","fields":[
   {"name":"a","required":false,"type":"int"},
   {"name":"b","required":false,"type":{"type":"list","element":"double","element-required":false}}]}}},
 {"name":"mvs","required":false,"type":{"type":"map","key":"string","value-required":false,"value":{"type":"struct","fields":[
   {"name":"x","required":false,"type":"double"},{"name":"d","required":false,"type":"date"}]}}}]}'
err=$(tm iceberg create wh/bad --schema "$schema" --partition "payload.tags.element" 2>&1) && fail "a partition inside a list was accepted"
assert_contains "$err" 'payload.tags is a list' "a partition source inside a list"
err=$(tm iceberg create wh/bad --schema "$schema" --partition "payload.user" 2>&1) && fail "a struct partition source was accepted"
assert_contains "$err" '"payload.user" is a struct'
tm iceberg create wh/p --schema "$schema" --partition "payload.region, bucket[4](payload.id)" >/dev/null
meta=$(last_meta wh/p)
spec=$(node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(JSON.stringify(m["partition-specs"]))' "$meta")
pid=$(node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log(m.schemas[0].fields[1].type.fields[1].id)' "$meta")
assert_contains "$spec" '"name":"payload_region","transform":"identity","source-id":3' "identity on payload.region"
assert_contains "$spec" "\"name\":\"payload_id_bucket\",\"transform\":\"bucket[4]\",\"source-id\":$pid" "bucket on payload.id"
assert_contains "$(tm iceberg append wh/p src.parquet)" "(300 rows)"
tm iceberg files wh/p --format json >files.json
check partitions files.json src.parquet 4 >&2 || fail "(d) partition values"
check ids "$meta" $(find wh/p/data -name '*.parquet') >&2 || fail "(d) field ids of the partitioned files"
tm iceberg cat wh/p --format json >pcat.json
check values pcat.json src.parquet >&2 || fail "(d) tidemark iceberg cat of the partitioned table"
check icebird wh/p src.parquet >&2 || fail "(d) icebird on the partitioned table"
check metrics wh/p >&2 || fail "(d) metrics of the partitioned files"

# A dataset loads the partitioned table (full refresh) with every row right;
# a federated query filtering on a struct member agrees with DuckDB.
cat >tm.yaml <<'YAML'
datasets:
  - from: iceberg:file://wh/p
    name: nested
    acceleration: {refresh_mode: full}
  - from: iceberg:file://wh/p
    name: nested_fed
YAML
assert_contains "$(tm_refresh -c tm.yaml)" "nested: 300 rows via full refresh"
tm sql -c tm.yaml --format json "SELECT * FROM nested" >ds.json
check values ds.json src.parquet >&2 || fail "(d) the accelerated dataset differs from DuckDB"
want=$(duckdb_query "SELECT count(*), sum(id) FROM 'src.parquet' WHERE payload.region = 'eu' AND payload.user.uid < 20" | tail -1)
assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM nested_fed WHERE payload.region = 'eu' AND payload.user.uid < 20")" \
  "$want" "federated filter on struct members"

# Writing operations that rewrite files carry the nested columns through.
tm iceberg delete wh/p --where "id < 40" --copy-on-write >/dev/null
tm iceberg delete wh/p --where "id >= 280" >/dev/null
tm iceberg overwrite wh/p --where "id = 100" src.parquet >/dev/null
tm iceberg compact wh/p >/dev/null
assert_eq "$(tm iceberg files wh/p --format csv | grep -c deletes || true)" "0" "no delete files after compaction"
tm iceberg cat wh/p --format json >after.json
duckdb_query "COPY (SELECT * FROM 'src.parquet' WHERE id >= 40 AND id < 280 AND id <> 100
  UNION ALL SELECT id + 1000 AS id, payload, los, mvs FROM 'src.parquet') TO 'want.parquet' (FORMAT PARQUET)" >/dev/null
# The overwrite added every source row again: shift their ids apart for the comparison.
node -e '
const fs = require("fs");
const rows = JSON.parse(fs.readFileSync("after.json", "utf8"));
const seen = new Set();
for (const r of rows) { const id = Number(r.id); if (seen.has(id)) r.id = id + 1000; seen.add(Number(r.id)); }
// The second copy of an id in 40..279 (not 100) is the overwrite one; ids outside are only there once.
for (const r of rows) { const id = Number(r.id); if (id < 1000 && (id < 40 || id >= 280 || id === 100)) r.id = id + 1000; }
fs.writeFileSync("after.json", JSON.stringify(rows));'
check values after.json want.parquet >&2 || fail "rows after delete, overwrite and compaction"
check metrics wh/p >&2 || fail "metrics of the rewritten files"
check ids "$(last_meta wh/p)" $(tm iceberg files wh/p --format json | node -e '
  const f = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(f.map((x) => require("url").fileURLToPath(x.path)).join(" "))') >&2 ||
  fail "field ids of the rewritten files"
echo ok
