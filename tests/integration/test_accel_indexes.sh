#!/usr/bin/env bash
# Spice's acceleration indexes (issue 17; docs/ENGINES.md "Indexes"):
#  - `col: enabled` and `"(a, b)": unique` become indexes of the acceleration's
#    table on every engine (DuckDB's duckdb_indexes(), SQLite's sqlite_master),
#    made with the table and again after a full refresh replaces it;
#  - a unique index refuses a refresh that would store a duplicate: the
#    refresh fails naming the key and commits nothing (D1);
#  - reopened with another config, the indexes follow it (dropped, created);
#  - an index naming a column the data does not have fails the refresh,
#    naming the column.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/src"
python3 - "$T/src/a.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 1001):
        f.write(json.dumps({"id": i, "k": i % 10, "ts": "2024-01-01T00:%02d:%02dZ" % (i // 60 % 60, i % 60), "v": i}) + "\n")
PY
write_pod() { # write_pod INDEXES
  cat > "$T/tidemark.yaml" <<YAML
datasets:
  - {from: file:src, name: cay, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: cayenne, refresh_mode: append, indexes: $1}}
  - {from: file:src, name: duck, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: duckdb, mode: file, refresh_mode: full, indexes: $1}}
  - {from: file:src, name: lite, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: sqlite, mode: file, refresh_mode: append, indexes: $1}}
YAML
}
duck_indexes() { # duck_indexes DATASET: "unique sql" lines of its tidemark indexes, sorted
  tm_sql "$T/tidemark.yaml" "SELECT is_unique, sql FROM duckdb_indexes() WHERE database_name = 'tm\$$1' AND index_name LIKE 'tm_ix_%' ORDER BY sql"
}
lite_indexes() {
  python3 - "$T/.tidemark/data/lite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (sql,) in sorted(c.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'tm_ix_%'")):
    print(sql)
PY
}

write_pod '{id: enabled, "(k, ts)": unique}'
tm_refresh -c "$T/tidemark.yaml" >/dev/null
for ds in cay duck; do
  got=$(duck_indexes $ds)
  assert_contains "$got" 'false,"CREATE INDEX'
  assert_contains "$got" '(id);'
  assert_contains "$got" 'true,"CREATE UNIQUE INDEX'
  assert_contains "$got" '(k, ts);'
  assert_eq "$(wc -l <<<"$got")" 2 "$ds: two indexes"
done
got=$(lite_indexes)
assert_contains "$got" 'CREATE INDEX "tm_ix_'
assert_contains "$got" '("id")'
assert_contains "$got" 'CREATE UNIQUE INDEX "tm_ix_'
assert_contains "$got" '("k", "ts")'
note "indexes made with the tables: cayenne, duckdb, sqlite"

# A full refresh replaces the table (A11): its indexes come back with it.
tm_refresh -c "$T/tidemark.yaml" duck --full >/dev/null
assert_eq "$(duck_indexes duck | wc -l)" 2 "duck: indexes after a full refresh"
assert_eq "$(tm_sql "$T/tidemark.yaml" "SELECT count(*) FROM duck")" 1000

# Two new rows with one unique key: every engine's refresh fails and commits nothing.
cat > "$T/src/b.jsonl" <<'JSON'
{"id": 5000, "k": 7, "ts": "2025-01-01T00:00:00Z", "v": 1}
{"id": 5001, "k": 7, "ts": "2025-01-01T00:00:00Z", "v": 2}
JSON
for ds in cay duck lite; do
  if tm refresh -c "$T/tidemark.yaml" $ds >"$T/out" 2>"$T/err"; then fail "$ds: a duplicate unique key was stored"; fi
  grep -qi 'duplicate\|unique' "$T/err" || { cat "$T/err" >&2; fail "$ds: the error does not name the unique key"; }
  assert_eq "$(tm_sql "$T/tidemark.yaml" "SELECT count(*) FROM $ds")" 1000 "$ds: nothing committed"
done
note "a duplicate of a unique index fails the refresh, nothing committed"
rm "$T/src/b.jsonl"

# Another config: the removed index is dropped, the new one created, at the next open.
write_pod '{v: enabled}'
TIDEMARK_LOG=info tm refresh -c "$T/tidemark.yaml" 2>"$T/err" >/dev/null || { cat "$T/err" >&2; fail "refresh with other indexes"; }
for ds in cay duck; do
  got=$(duck_indexes $ds)
  assert_eq "$(wc -l <<<"$got")" 1 "$ds: one index after the change"
  assert_contains "$got" '(v);'
done
got=$(lite_indexes)
assert_eq "$(wc -l <<<"$got")" 1 "lite: one index after the change"
assert_contains "$got" '("v")'
grep -q 'dropped index tm_ix_' "$T/err" && grep -q 'created index tm_ix_' "$T/err" ||
  { cat "$T/err" >&2; fail "no log of the dropped and created indexes"; }
note "indexes follow the config at the next open"

# A column the data does not have.
write_pod '{nope: enabled}'
rm -rf "$T/.tidemark"
if tm refresh -c "$T/tidemark.yaml" duck >"$T/out" 2>"$T/err"; then fail "an index of a missing column loaded"; fi
assert_contains "$(cat "$T/err")" "indexes: no column 'nope'"

# An in-memory engine (arrow) on a running server: the index is made, the unique key holds.
cat > "$T/mem.yaml" <<'YAML'
datasets:
  - {from: file:src, name: mem, params: {file_format: jsonl}, acceleration: {engine: arrow, indexes: {"(id)": unique}}}
YAML
start_server "$T/mem.yaml"
wait_until 15 count_is mem 1000 || fail "mem did not load"
sql "SELECT count(*) AS n FROM duckdb_indexes() WHERE database_name = 'tm\$mem' AND is_unique"
assert_contains "$BODY" '"n":1'
cp "$T/src/a.jsonl" "$T/src/dup.jsonl"
api POST /v1/datasets/mem/acceleration/refresh
wait_until 15 grep -q '\[mem\] refresh failed: .*[Dd]uplicate' "$SERVER_LOG" || fail "mem: no failed refresh on a duplicate"
count_is mem 1000 || fail "mem: a failed refresh changed the rows"
stop_server
note "arrow: unique index kept on a full refresh that fails"
echo ok
