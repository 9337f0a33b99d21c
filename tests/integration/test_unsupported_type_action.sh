#!/usr/bin/env bash
# issue 16: nested Parquet columns (LIST, STRUCT, MAP, written by DuckDB) load
# natively (DuckDB LIST / STRUCT / MAP columns) whatever unsupported_type_action
# says, except `string`, which asks for JSON text. The action (Spice's error /
# warn / ignore) decides what happens to a column tidemark cannot hold (an
# INTERVAL, a list of INTERVALs): `error` fails only the reads that project it
# (refresh without refresh_sql, SELECT *), naming the file and column; a
# refresh_sql or a federated query over the other columns loads them; `warn`
# leaves the columns out and logs them once; `ignore` leaves them out
# silently. An Iceberg table's nested column (a copy of testdata's
# all_trino_types, a list of doubles) loads natively under every action, and
# as JSON text under `string`, both equal to DuckDB's to_json of the data file.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
write_parquets "$T/data/a.parquet" "SELECT * FROM (VALUES
  (1, 'a', [1, 2], {'x': 1, 'y': 'p'}, MAP {'k': 1}, INTERVAL 1 DAY, [INTERVAL 2 DAY]),
  (2, NULL, [], NULL, MAP {}, NULL, []),
  (3, 'c', NULL, {'x': NULL, 'y': 'q'}, NULL, INTERVAL 3 DAY, NULL)) t(id, name, lst, st, m, iv, ivl)" \
  "$T/data/b.parquet" "SELECT * FROM (VALUES
  (4, 'd', [4], {'x': 4, 'y': 'r'}, MAP {'z': 9}, INTERVAL 4 DAY, [INTERVAL 5 DAY])) t(id, name, lst, st, m, iv, ivl)"

cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: narrowed
    acceleration: {refresh_sql: "SELECT id, name, lst, st, m FROM narrowed WHERE id > 1"}
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
    name: texts
    unsupported_type_action: string
    acceleration: {refresh_sql: "SELECT id, lst, st, m FROM texts"}
  - from: file:data
    name: federated
YAML
# error (the default): a refresh_sql without the interval columns loads, the
# nested columns natively; SELECT * fails naming the interval column.
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err" && fail "a refresh of an INTERVAL column under error succeeded"
out=$(cat "$T/out") err=$(cat "$T/err")
assert_contains "$out" "narrowed: 3 rows via full refresh"
assert_contains "$out" "warned: 4 rows via full refresh"
assert_contains "$out" "quiet: 4 rows via full refresh"
assert_contains "$out" "texts: 4 rows via full refresh"
assert_contains "$err" "(dataset whole, unsupported_type_action: error"
assert_contains "$err" "iv"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id || ':' || coalesce(name, '-'), ' ') FROM (SELECT * FROM narrowed ORDER BY id)")" "2:- 3:c 4:d"
types=$(tm_sql "$T/tm.yaml" "SELECT group_concat(data_type, '|') FROM (SELECT data_type FROM information_schema.columns WHERE table_name = 'narrowed' AND column_name IN ('lst', 'm') ORDER BY column_name)")
assert_eq "$types" '"INTEGER[]|MAP(VARCHAR, INTEGER)"' "nested columns stored natively"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT lst[1] + st.x FROM narrowed WHERE id = 4")" "8"
# JSON output: nested values are JSON values; `string` keeps JSON text.
assert_eq "$(tm sql -c "$T/tm.yaml" --format json "SELECT lst, st, m FROM narrowed WHERE id = 4")" '[{"lst":[4],"st":{"x":4,"y":"r"},"m":{"z":9}}]'
assert_eq "$(tm sql -c "$T/tm.yaml" --format json "SELECT lst, m FROM texts WHERE id = 4")" '[{"lst":"[4]","m":"{\"z\":9}"}]'
# warn and ignore: the interval columns are left out; warn logs them once per source.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(column_name, ' ') FROM (SELECT column_name FROM information_schema.columns WHERE table_name = 'warned' ORDER BY ordinal_position)")" "id name lst st m"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), sum(id), sum(len(lst)) FROM quiet")" "4,10,3"
n=$(grep -c "columns left out (unsupported_type_action: warn): iv (.*), ivl (nested column)" <<<"$err" || true)
assert_eq "$n" "1" "warn logs once"
assert_contains "$err" "[warned]"
if grep -q "\[quiet\].*left out" <<<"$err"; then fail "ignore logged: $err"; fi
# Federated under error: nested columns answer natively; the interval fails the
# query, naming it.
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT sum(id), count(name), sum(len(lst)) FROM federated")" "10,3,3"
tm sql -c "$T/tm.yaml" "SELECT iv FROM federated" >/dev/null 2>"$T/err2" && fail "SELECT of an INTERVAL column succeeded"
assert_contains "$(cat "$T/err2")" "iv"

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
tm refresh -c "$T/ice.yaml" >"$T/out" 2>"$T/err" || fail "Iceberg refresh failed: $(cat "$T/err")"
out=$(cat "$T/out") err=$(cat "$T/err")
for d in ice_error ice_string ice_warn ice_ignore; do assert_contains "$out" "$d: 1 rows"; done
if grep -q "left out" <<<"$err"; then fail "a native column was left out: $err"; fi
assert_eq "$(tm_sql "$T/ice.yaml" "SELECT data_type FROM information_schema.columns WHERE table_name = 'ice_warn' AND column_name = 'list_col'")" "DOUBLE[]"
want=$(duckdb_query "SELECT to_json(list_col)::VARCHAR AS j FROM read_parquet('$T/ice/data/*.parquet')" | tail -n +2)
got=$(tm_sql "$T/ice.yaml" "SELECT list_col FROM ice_string")
assert_eq "$got" "$want" "Iceberg list column as JSON text, against DuckDB"
got=$(tm_sql "$T/ice.yaml" "SELECT to_json(list_col)::VARCHAR FROM ice_error")
assert_eq "$got" "$want" "Iceberg list column stored natively, against DuckDB"
echo ok
