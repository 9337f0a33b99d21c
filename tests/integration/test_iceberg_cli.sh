#!/usr/bin/env bash
# `tidemark iceberg` (issue 4; SPEC B2, B4, B12, B14): a partitioned v2 table is
# created, appended to from CSV and Parquet, deleted from (position and
# equality deletes), overwritten, compacted, rolled back and expired. After
# every step the rows read by tidemark equal the rows read by icebird, an
# independent Iceberg reader, and the data files read back in DuckDB. Two
# concurrent appends never lose or overwrite each other's commit. The
# read-only commands also work through a REST catalog.
source "$(dirname "$0")/lib.sh"

command -v node >/dev/null || { note "node is not installed; skipping"; exit 0; }
[[ -d "$NODE_PATH/icebird" ]] || { note "icebird is not installed (scripts/install-test-deps); skipping"; exit 0; }

tbl="$T/wh/sales/events"
schema='[{"name": "id", "type": "long", "required": true}, {"name": "ts", "type": "timestamptz"},
         {"name": "region", "type": "string"}, {"name": "amount", "type": "decimal(10,2)"}]'

# Our reader and icebird agree on the current rows.
compare() {
  tm iceberg cat "$tbl" --format json >"$T/ours.json" || fail "cat: $1"
  node "$TM_SOURCE_DIR/tests/node/icebird-read.mjs" "$tbl" >"$T/icebird.jsonl" || fail "icebird: $1"
  node "$TM_SOURCE_DIR/tests/node/compare-rows.mjs" "$T/ours.json" "$T/icebird.jsonl" >/dev/null ||
    fail "tidemark and icebird disagree after $1"
}

# The data files are valid Parquet for DuckDB and hold the rows the manifests say.
duckdb_check() {
  files=$(tm iceberg files "$tbl" --format csv | awk -F, 'NR > 1 && $2 == "data" {print $1}' |
          sed "s|^file://||" | sed "s|.*|'&'|" | paste -sd, -)
  if [[ -n "$files" ]]; then
    want=$(tm iceberg files "$tbl" --format csv | awk -F, 'NR > 1 && $2 == "data" {s += $3} END {print s}')
    got=$(duckdb_query "SELECT count(*) AS n FROM read_parquet([$files])" | tail -1)
    assert_eq "$got" "$want" "DuckDB row count of the data files after $1"
  fi
}

rows() { tm iceberg cat "$tbl" --format csv | tail -n +2 | sort; }

tm iceberg create "$tbl" --schema "$schema" --partition "day(ts), bucket[4](id)" >/dev/null
cat >"$T/a.csv" <<'CSV'
id,ts,region,amount
1,2024-01-01T10:00:00Z,eu,1.50
2,2024-01-01T11:00:00Z,us,2.25
3,2024-01-02T09:30:00Z,eu,3.00
4,2024-01-03T00:00:00Z,ap,
CSV
out=$(tm iceberg append "$tbl" "$T/a.csv")
assert_contains "$out" "append: committed snapshot"
compare "append csv"

duckdb_query "COPY (SELECT (10 + i)::BIGINT AS id, TIMESTAMPTZ '2024-01-05 00:00:00+00' + i * INTERVAL 1 HOUR AS ts,
              CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END AS region, (i * 1.25)::DECIMAL(10,2) AS amount
              FROM range(6) t(i)) TO '$T/b.parquet' (FORMAT parquet)" >/dev/null
tm iceberg append "$tbl" "$T/b.parquet" >/dev/null
assert_eq "$(rows | wc -l)" 10 "rows after two appends"
compare "append parquet"
duckdb_check "append parquet"

tm iceberg delete "$tbl" --where "id = 12" >/dev/null
compare "position delete"
tm iceberg delete "$tbl" --where "region = 'ap'" --equality region >/dev/null
compare "equality delete"
assert_eq "$(rows | wc -l)" 8 "rows after deletes"
out=$(tm iceberg files "$tbl" --format csv)
assert_contains "$out" "position-deletes"

cat >"$T/c.csv" <<'CSV'
id,ts,region,amount
100,2024-02-01T00:00:00Z,eu,9.99
CSV
tm iceberg overwrite "$tbl" --where "region = 'us'" "$T/c.csv" >/dev/null
compare "overwrite"
assert_eq "$(rows | grep -c ',us,' || true)" 0 "no us rows after overwrite"

before=$(rows)
out=$(tm iceberg compact "$tbl")
assert_contains "$out" "compact: committed snapshot"
assert_eq "$(rows)" "$before" "compaction keeps the rows"
compare "compact"
duckdb_check "compact"
assert_eq "$(tm iceberg files "$tbl" --format csv | grep -c deletes || true)" 0 "compaction drops delete files"

# History: six snapshots; roll back to the second; the next append forks.
hist=$(tm iceberg history "$tbl" --format csv)
assert_eq "$(echo "$hist" | tail -n +2 | cut -d, -f5 | paste -sd' ')" \
  "append append delete delete overwrite replace" "operations in order"
second=$(echo "$hist" | sed -n 3p | cut -d, -f1)
tm iceberg rollback "$tbl" --to "$second" >/dev/null
assert_eq "$(rows | wc -l)" 10 "rows after rollback"
compare "rollback"
set +e
tm iceberg rollback "$tbl" --to 12345 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 1 "rollback to an unknown snapshot"
assert_contains "$(cat "$T/err")" "not in the table"

# Concurrent appends: every commit that reports success is in the table.
for i in $(seq 1 6); do printf 'id,ts,region,amount\n%d,2024-03-01T00:00:00Z,xx,1\n' $((1000 + i)) >"$T/p$i.csv"; done
ok=0
for round in 1 2 3; do
  pids=()
  for i in 1 2; do
    ( tm iceberg append "$tbl" "$T/p$(( (round - 1) * 2 + i )).csv" >"$T/app$i.out" 2>"$T/app$i.err" ) &
    pids+=($!)
  done
  for i in 1 2; do
    if wait "${pids[$((i - 1))]}"; then ok=$((ok + 1)); else
      assert_contains "$(cat "$T/app$i.err")" "another commit" "a losing append explains itself"
    fi
  done
done
assert_eq "$(rows | grep -c ',xx,' || true)" "$ok" "rows of successful concurrent appends"
compare "concurrent appends"

# Expire everything but the current snapshot: rows stay, files of the old line go.
n_before=$(find "$tbl/data" -type f | wc -l)
tm iceberg expire "$tbl" --older-than 0s >/dev/null
assert_eq "$(tm iceberg history "$tbl" --format csv | tail -n +2 | wc -l)" 1 "one snapshot after expire"
[[ $(find "$tbl/data" -type f | wc -l) -lt $n_before ]] || fail "expire deleted no data file"
compare "expire"

# Usage errors.
set +e
tm iceberg delete "$tbl" >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "delete without --where"
set +e
tm iceberg delete "$tbl" --where "nope = 1" >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 1 "unknown filter column"
assert_contains "$(cat "$T/err")" "nope is not a column"

# replace-table: a new uuid at the same location.
uuid1=$(grep -o '"table-uuid": "[^"]*"' "$tbl/metadata/v$(cat "$tbl/metadata/version-hint.text").metadata.json")
tm iceberg replace-table "$tbl" --schema '[{"name": "k", "type": "string"}]' >/dev/null
uuid2=$(grep -o '"table-uuid": "[^"]*"' "$tbl/metadata/v$(cat "$tbl/metadata/version-hint.text").metadata.json")
[[ "$uuid1" != "$uuid2" ]] || fail "replace-table kept the uuid"
assert_eq "$(tm iceberg history "$tbl" --format csv | tail -n +2 | wc -l)" 0 "no snapshots after replace-table"

# The read-only commands through a REST catalog over the same warehouse.
tbl2="$T/wh/sales/orders"
tm iceberg create "$tbl2" --schema "$schema" >/dev/null
tm iceberg append "$tbl2" "$T/a.csv" >/dev/null
coproc SERVER { exec node "$TM_SOURCE_DIR/tests/node/iceberg-rest-server.mjs" --warehouse "$T/wh" --prefix main --lifeline 1; }
read -r -u "${SERVER[0]}" line
port=${line#listening }
url="http://127.0.0.1:$port/v1/namespaces/sales/tables/orders"
assert_contains "$(tm iceberg history "$url" --format csv)" ",append,1,4,4,true" "history via REST"
assert_eq "$(tm iceberg cat "$url" --format csv | tail -n +2 | wc -l)" 4 "rows via REST"
set +e
tm iceberg history "http://127.0.0.1:$port/v1/namespaces/sales/tables/missing" 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 1 "missing REST table"
assert_contains "$(cat "$T/err")" "NoSuchTableException"
kill "$SERVER_PID" 2>/dev/null || true
echo "ok"
