#!/usr/bin/env bash
# issue 16: nested Parquet columns (LIST, STRUCT, MAP, written by DuckDB) do not
# block a dataset's flat columns, and the dataset key unsupported_type_action
# (Spice's error / warn / ignore) decides what happens to them: `error` fails
# only the reads that project a nested column (refresh without refresh_sql,
# SELECT *), naming the file and column; a refresh_sql or a federated query
# over the flat columns loads them; `warn` leaves the columns out and logs them
# once; `ignore` leaves them out silently. The same for an Iceberg table's
# nested columns (a copy of testdata's all_trino_types, a list of doubles),
# where `string` reads them as JSON text equal to DuckDB's to_json of the data
# file.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
write_parquet "$T/data/a.parquet" "SELECT * FROM (VALUES
  (1, 'a', [1, 2], {'x': 1, 'y': 'p'}, MAP {'k': 1}),
  (2, NULL, [], NULL, MAP {}),
  (3, 'c', NULL, {'x': NULL, 'y': 'q'}, NULL)) t(id, name, lst, st, m)"
write_parquet "$T/data/b.parquet" "SELECT * FROM (VALUES
  (4, 'd', [4], {'x': 4, 'y': 'r'}, MAP {'z': 9})) t(id, name, lst, st, m)"

cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: narrowed
    acceleration: {refresh_sql: "SELECT id, name FROM narrowed WHERE id > 1"}
  - from: file:data
    name: whole
    acceleration: {enabled: true}
  - from: file:data
    name: warned
    unsupported_type_action: warn
    acceleration: {enabled: true}
  - from: file:data
    name: quiet
    unsupported_type_action: ignore
    acceleration: {enabled: true}
  - from: file:data
    name: federated
YAML
# error (the default): a refresh_sql of flat columns loads; SELECT * fails naming the column.
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err" && fail "a refresh of nested columns under error succeeded"
out=$(cat "$T/out") err=$(cat "$T/err")
assert_contains "$out" "narrowed: 3 rows via full refresh"
assert_contains "$out" "warned: 4 rows via full refresh"
assert_contains "$out" "quiet: 4 rows via full refresh"
assert_contains "$err" "a.parquet: unsupported nested column lst (dataset whole, unsupported_type_action: error"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id || ':' || coalesce(name, '-'), ' ') FROM (SELECT * FROM narrowed ORDER BY id)")" "2:- 3:c 4:d"
# warn and ignore: the flat columns only; warn logs the columns once per source.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(column_name, ' ') FROM (SELECT column_name FROM information_schema.columns WHERE table_name = 'warned' ORDER BY ordinal_position)")" "id name"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id) FROM quiet")" "4,10"
n=$(grep -c "columns left out (unsupported_type_action: warn): lst (nested column), st (nested column), m (nested column)" <<<"$err" || true)
assert_eq "$n" "1" "warn logs once"
assert_contains "$err" "[warned]"
if grep -q "\[quiet\].*left out" <<<"$err"; then fail "ignore logged: $err"; fi
# Federated under error: the flat columns answer (the projection reaches the Parquet
# reader, which would refuse lst); the nested one fails the query, naming it.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT sum(id), count(name) FROM federated")" "10,3"
tm sql -c "$T/tm.yaml" "SELECT lst FROM federated" >/dev/null 2>"$T/err2" && fail "SELECT of a nested column succeeded"
assert_contains "$(cat "$T/err2")" "unsupported nested column lst"

# Iceberg: the same four actions on a table with a list column.
require_shared "$TESTDATA/iceberg/all_trino_types"
cp -r "$TESTDATA/iceberg/all_trino_types" "$T/ice" && chmod -R u+w "$T/ice"
cat > "$T/ice.yaml" <<YAML
datasets:
  - {from: "iceberg:file://$T/ice", name: ice_error, acceleration: {enabled: true}}
  - {from: "iceberg:file://$T/ice", name: ice_warn, unsupported_type_action: warn, acceleration: {enabled: true}}
  - {from: "iceberg:file://$T/ice", name: ice_ignore, unsupported_type_action: ignore, acceleration: {enabled: true}}
  - {from: "iceberg:file://$T/ice", name: ice_string, unsupported_type_action: string, acceleration: {enabled: true}}
YAML
tm refresh -c "$T/ice.yaml" >"$T/out" 2>"$T/err" && fail "a refresh of an Iceberg nested column under error succeeded"
out=$(cat "$T/out") err=$(cat "$T/err")
assert_contains "$err" "column 'list_col' is nested (list), which tidemark reads only as JSON text"
assert_contains "$out" "ice_string: 1 rows"
assert_contains "$out" "ice_warn: 1 rows"
assert_contains "$out" "ice_ignore: 1 rows"
assert_eq "$(grep -c "\[ice_warn\] column 'list_col' (list) is nested; it is left out" <<<"$err" || true)" "1"
if grep -q "\[ice_ignore\].*left out" <<<"$err"; then fail "ignore logged: $err"; fi
assert_eq "$(tm_sql "$T/ice.yaml" "SELECT count(*) FROM information_schema.columns WHERE table_name = 'ice_warn' AND column_name = 'list_col'")" "0"
want=$(duckdb_query "SELECT to_json(list_col)::VARCHAR AS j FROM read_parquet('$T/ice/data/*.parquet')" | tail -n +2)
got=$(tm_sql "$T/ice.yaml" "SELECT list_col FROM ice_string")
assert_eq "$got" "$want" "Iceberg list column as JSON text, against DuckDB"
echo ok
