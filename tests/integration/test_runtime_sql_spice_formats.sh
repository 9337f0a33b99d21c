#!/usr/bin/env bash
# POST /v1/sql as Spice's clients use it (SPEC 1.3, D4; issue 17), on a real
# `tidemark run` through curl: Spice's JSON body {"sql", "parameters"} with
# positional ($1, ?) and named (:name, $name) values bound as parameters
# (ints, strings with quotes, null, booleans, a timestamp string against a
# timestamp column), wrong counts and names refused, writes and file reads
# in a JSON body refused as in text; Accept negotiation with q-values and
# wildcards (406 for none); application/json on one line; and Spice's
# application/vnd.spiceai.sql.v1+json: its shape, each column's data_type
# checked against arrow-rs's serde form of DataType, row_count first for a
# small result, a large one streamed with row_count last.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/data"
cat > "$T/data/a.jsonl" <<'JSONL'
{"id": 1, "name": "one", "ts": "2024-01-01T00:00:01Z", "amount": 1.5, "ok": true, "day": "2024-01-01"}
{"id": 2, "name": "two", "ts": "2024-01-01T00:00:02Z", "amount": 2.25, "ok": false, "day": "2024-01-02"}
{"id": 3, "name": "it's \"three\"", "ts": "2024-01-01T00:00:03Z", "amount": null, "ok": true, "day": "2024-01-03"}
JSONL
cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: spice-formats
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    acceleration:
      enabled: true
YAML

start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready"

# jsql BODY [curl args...]: POST /v1/sql with Spice's JSON body.
jsql() {
  local b=$1
  shift
  api POST /v1/sql -H 'Content-Type: application/json' --data-binary "$b" "$@"
}
ok() { [[ $STATUS == 200 ]] || fail "$1: $STATUS $BODY"; }
refused() { # refused WHAT TEXT: a 400 whose message holds TEXT
  assert_eq "$STATUS" 400 "$1"
  assert_contains "$(jq -r .message <<<"$BODY")" "$2" "$1"
}

# ---- text bodies as before; application/json is one line (spice.js splits on newlines) ----
sql "SELECT id, name FROM events ORDER BY id"
ok "text body"
assert_eq "$BODY" '[{"id":1,"name":"one"},{"id":2,"name":"two"},{"id":3,"name":"it'"'"'s \"three\""}]' "json rows on one line"
sql "SELECT count(*) AS n FROM events" -H 'Content-Type: text/plain; charset=utf-8'
assert_eq "$BODY" '[{"n":3}]' "text/plain body"

# ---- Spice's JSON body: positional values ----
jsql '{"sql": "SELECT id FROM events WHERE id = $1 OR name = $2 ORDER BY id", "parameters": [1, "it'"'"'s \"three\""]}'
ok "positional"
assert_eq "$(jq -c 'map(.id)' <<<"$BODY")" '[1,3]' "positional: an int and a string with quotes"
jsql '{"sql": "SELECT id FROM events WHERE id = ? OR name = ? ORDER BY id", "parameters": [2, "one"]}'
assert_eq "$(jq -c 'map(.id)' <<<"$BODY")" '[1,2]' "? placeholders"
jsql '{"sql": "SELECT $1 IS NULL AS a, $2 AS b, NOT $3 AS c, $4 * 2 AS d", "parameters": [null, true, false, 1.25]}'
assert_eq "$BODY" '[{"a":true,"b":true,"c":true,"d":2.5}]' "null, booleans, a double"
jsql '{"sql": "SELECT id FROM events WHERE ok = $1 ORDER BY id", "parameters": [true]}'
assert_eq "$(jq -c 'map(.id)' <<<"$BODY")" '[1,3]' "a boolean against a column"
jsql '{"sql": "SELECT id FROM events WHERE ts > $1 ORDER BY id", "parameters": ["2024-01-01T00:00:01Z"]}'
assert_eq "$(jq -c 'map(.id)' <<<"$BODY")" '[2,3]' "a timestamp string against a timestamp column"
jsql '{"sql": "SELECT id FROM events WHERE day = $1", "parameters": ["2024-01-02"]}'
assert_eq "$BODY" '[{"id":2}]' "a date string against a date column"
jsql '{"sql": "SELECT count(*) AS n FROM events WHERE name = $1", "parameters": ["x'"'"' OR 1=1 --"]}'
assert_eq "$BODY" '[{"n":0}]' "a value is data, never SQL"
jsql '{"sql": "SELECT count(*) AS n FROM events", "parameters": []}'
assert_eq "$BODY" '[{"n":3}]' "no parameters"
jsql '{"sql": "SELECT count(*) AS n FROM events"}'
assert_eq "$BODY" '[{"n":3}]' "no \"parameters\" key"
api POST /v1/sql -H 'Content-Type: application/json; charset=utf-8' \
  --data-binary '{"sql": "SELECT $1 AS v", "parameters": ["é"]}'
assert_eq "$BODY" '[{"v":"é"}]' "application/json with a charset"

# ---- named values ----
jsql '{"sql": "SELECT id FROM events WHERE id = :id OR name = :name ORDER BY id", "parameters": {"id": 2, "name": "it'"'"'s \"three\""}}'
assert_eq "$(jq -c 'map(.id)' <<<"$BODY")" '[2,3]' "named :name"
jsql '{"sql": "SELECT :foo + 1 AS the_answer", "parameters": {"foo": 41}}'
assert_eq "$BODY" '[{"the_answer":42}]' "Spice's documented example"
jsql '{"sql": "SELECT id FROM events WHERE id = $id AND ok = $OK", "parameters": {"id": 3, "ok": true}}'
assert_eq "$BODY" '[{"id":3}]' "named \$name, any case"
jsql '{"sql": "SELECT '"'"':id'"'"' AS t, \":id\" FROM (SELECT 1 AS \":id\") WHERE :id = 1 -- :nope", "parameters": {"id": 1}}'
assert_eq "$BODY" '[{"t":":id",":id":1}]' ":name inside strings, identifiers and comments stays"
jsql '{"sql": "SELECT id::VARCHAR AS s, [1,2,3][2:3] AS l FROM events WHERE ts <= :t AND id = :i", "parameters": {"t": "2024-01-01T00:00:01Z", "i": 1}}'
assert_eq "$BODY" '[{"s":"1","l":[2,3]}]' "casts and slices beside named values"

# ---- wrong counts and names, bad bodies: 400 with a message ----
jsql '{"sql": "SELECT $1, $2", "parameters": [1]}'
refused "too few values" 'the query has 2 parameters and "parameters" holds 1 value'
jsql '{"sql": "SELECT $1", "parameters": [1, 2]}'
refused "too many values" 'the query has 1 parameter and "parameters" holds 2 values'
jsql '{"sql": "SELECT :a", "parameters": {"a": 1, "b": 2}}'
refused "an unknown name" "the parameter 'b' is not in the query"
jsql '{"sql": "SELECT :a, :c", "parameters": {"a": 1}}'
refused "a missing name" "\"parameters\" has no value for the query's \$c"
jsql '{"sql": "SELECT :a", "parameters": [1]}'
refused "named parameters given an array" 'send "parameters" as an object'
jsql '{"sql": "SELECT $1", "parameters": [[1, 2]]}'
refused "a nested value" "nested arrays or objects are not supported as parameter values"
jsql '{"sql": "SELECT 1", "params": [1]}'
refused "an unknown key" "unknown key 'params'"
jsql '{"sql": "SELECT 1", "parameters": null}'
refused "null parameters" '"parameters" must be an array'
jsql 'SELECT 1'
refused "SQL text sent as application/json" "the body is not valid JSON (Content-Type: application/json)"
jsql '{"sql": "SELECT $1", "parameters": [99999999999999999999]}'
refused "an integer past 64 bits" "an integer must fit in 64 bits"
jsql '{"sql": "  "}'
refused "empty sql" 'the JSON body'"'"'s "sql" holds no SQL'
jsql '{"sql": "SELECT 1 + $1", "parameters": ["abc"]}'
assert_eq "$STATUS" 400 "a value DuckDB cannot cast"

# ---- the gate sees a JSON body as it sees text (D4) ----
for b in '{"sql": "DELETE FROM events WHERE id = $1", "parameters": [1]}' \
  '{"sql": "UPDATE events SET name = :n", "parameters": {"n": "x"}}' \
  '{"sql": "SELECT * FROM read_csv($1)", "parameters": ["/etc/passwd"]}' \
  "{\"sql\": \"COPY (SELECT :a) TO '$T/x.csv'\", \"parameters\": {\"a\": 1}}" \
  '{"sql": "SELECT $1; DROP TABLE events", "parameters": [1]}' \
  "{\"sql\": \"ATTACH '$T/x.db' AS x\"}"; do
  jsql "$b"
  assert_eq "$STATUS" 400 "refused in a JSON body: $b"
done
jsql '{"sql": "DELETE FROM events WHERE id = $1", "parameters": [1]}'
refused "a write in a JSON body" "DELETE is not allowed: queries are read-only"
sql "DELETE FROM events WHERE id = 1"
refused "the same write as text" "DELETE is not allowed: queries are read-only"
[[ ! -e $T/x.csv && ! -e $T/x.db ]] || fail "a refused statement wrote a file"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 3 "nothing was written"

# ---- Accept negotiation ----
accept_is() { # accept_is ACCEPT CONTENT-TYPE
  curl -s -o /dev/null -D "$T/h" -X POST --data-binary 'SELECT 1 AS one' -H "Accept: $1" "$BASE/v1/sql"
  local ct
  ct=$(sed -n 's/^[Cc]ontent-[Tt]ype: *\([^;\r]*\).*/\1/p' "$T/h")
  assert_eq "$ct" "$2" "Accept: $1"
}
accept_is "application/vnd.spiceai.sql.v1+json, application/json" application/vnd.spiceai.sql.v1+json
accept_is "application/json, application/vnd.spiceai.sql.v1+json" application/json
accept_is "application/json;q=0.5, application/vnd.spiceai.sql.v1+json;q=0.9" application/vnd.spiceai.sql.v1+json
accept_is "text/csv;q=0.1, */*;q=0.5" application/json
accept_is "*/*" application/json
accept_is "text/*" text/plain
accept_is "application/json;q=0, */*" text/plain
accept_is "image/png, text/csv;q=0.3" text/csv
accept_is "application/jsonl" application/x-ndjson
sql "SELECT 1" -H 'Accept: application/xml'
assert_eq "$STATUS" 406 "nothing acceptable"
assert_contains "$(jq -r .message <<<"$BODY")" "application/vnd.spiceai.sql.v1+json" "the 406 names what is served"
sql "SELECT 1" -H 'Accept: application/json;q=0'
assert_eq "$STATUS" 406 "q=0 refuses a type"

# ---- application/vnd.spiceai.sql.v1+json ----
V='Accept: application/vnd.spiceai.sql.v1+json'
curl -s -D "$T/h" -X POST -H "$V" --data-binary \
  'SELECT id, name, ts, amount, ok, day FROM events ORDER BY id' "$BASE/v1/sql" > "$T/v.json"
grep -qi '^content-type: application/vnd.spiceai.sql.v1+json' "$T/h" || fail "vnd content type"
assert_eq "$(head -c 30 "$T/v.json")" '{"row_count":3,"schema":{"fiel' "row_count first, as Spice writes it"
assert_eq "$(jq -c 'keys_unsorted' "$T/v.json")" '["row_count","schema","data"]' "vnd keys"
assert_eq "$(jq -c '.schema | keys_unsorted' "$T/v.json")" '["fields","metadata"]' "schema keys"
assert_eq "$(jq -c '.schema.fields[0] | keys_unsorted' "$T/v.json")" \
  '["name","data_type","nullable","dict_id","dict_is_ordered","metadata"]' "field keys, as arrow-rs serializes a Field"
assert_eq "$(jq -c '[.schema.fields[] | .name]' "$T/v.json")" '["id","name","ts","amount","ok","day"]' "field names"
assert_eq "$(jq -c '[.schema.fields[] | .data_type]' "$T/v.json")" \
  '["Int64","Utf8",{"Timestamp":["Microsecond","UTC"]},"Float64","Boolean","Date32"]' "dataset column types"
sql 'SELECT id, name, ts, amount, ok, day FROM events ORDER BY id'
assert_eq "$(jq -c .data "$T/v.json")" "$(jq -c . <<<"$BODY")" "data holds the rows application/json gives"
jsql '{"sql": "SELECT id FROM events WHERE id >= :min ORDER BY id", "parameters": {"min": 2}}' -H "$V"
assert_eq "$(jq -c '[.row_count, .data]' <<<"$BODY")" '[2,[{"id":2},{"id":3}]]' "vnd with a JSON body"
sql "SELECT id FROM events WHERE false" -H "$V"
assert_eq "$(jq -c '[.row_count, [.schema.fields[].data_type], .data]' <<<"$BODY")" '[0,["Int64"],[]]' "an empty result keeps its schema"

# Every kind of column DuckDB answers: the data_type as DuckDB exports the Arrow type.
sql "SELECT true AS b, 1::TINYINT AS i8, 1::SMALLINT AS i16, 1::INTEGER AS i32, 1::UBIGINT AS u64,
            1::HUGEINT AS h, 1.5::FLOAT AS f32, 12.34::DECIMAL(10,2) AS dec, 'x' AS s, 'x'::BLOB AS bl,
            DATE '2024-01-01' AS d, TIME '01:02:03' AS t, TIMESTAMP '2024-01-01 00:00:00' AS ts,
            TIMESTAMPTZ '2024-01-01 00:00:00+00' AS tstz, '2024-01-01'::TIMESTAMP_NS AS tsn,
            '2024-01-01'::TIMESTAMP_MS AS tsm, '2024-01-01'::TIMESTAMP_S AS tss, INTERVAL 1 DAY AS iv,
            uuid() AS u, 'a'::ENUM('a', 'b') AS e, [1, 2] AS l, [1, 2]::INT[2] AS arr,
            {'k': 1, 'v': 'x'} AS st, MAP {'k': 1} AS m,
            union_value(n := 1)::UNION(n INT, s VARCHAR) AS un" -H "$V"
ok "every type"
jq -c '[.schema.fields[] | .data_type]' <<<"$BODY" > "$T/types.json"
assert_eq "$(jq -c '.[0:20]' "$T/types.json")" \
  '["Boolean","Int8","Int16","Int32","UInt64",{"Decimal128":[38,0]},"Float32",{"Decimal128":[10,2]},"Utf8","Binary","Date32",{"Time64":"Microsecond"},{"Timestamp":["Microsecond",null]},{"Timestamp":["Microsecond","UTC"]},{"Timestamp":["Nanosecond",null]},{"Timestamp":["Millisecond",null]},{"Timestamp":["Second",null]},{"Interval":"MonthDayNano"},"Utf8",{"Dictionary":["UInt8","Utf8"]}]' \
  "scalar data types"
assert_eq "$(jq -c '[.[20].List.name, .[20].List.data_type, .[21].FixedSizeList[1], .[22].Struct[1].data_type, .[23].Map[0].data_type.Struct[0].nullable, .[24].Union[1]]' "$T/types.json")" \
  '["l","Int32",2,"Utf8",false,"Sparse"]' "nested data types"

# Each data_type is a value arrow-rs deserializes as a DataType: its serde form
# (externally tagged enum; docs.rs arrow_schema::DataType, Field, TimeUnit,
# IntervalUnit, UnionMode), checked here independently of the server.
python3 - "$T/types.json" "$T/v.json" <<'PY' || fail "a data_type is not arrow-rs's serde form"
import json, sys
UNIT = {"Null", "Boolean", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32",
        "UInt64", "Float16", "Float32", "Float64", "Date32", "Date64", "Binary", "LargeBinary",
        "BinaryView", "Utf8", "LargeUtf8", "Utf8View"}
TU = {"Second", "Millisecond", "Microsecond", "Nanosecond"}
INTS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}
def field(f):
    assert list(f) == ["name", "data_type", "nullable", "dict_id", "dict_is_ordered", "metadata"], f
    assert isinstance(f["name"], str) and isinstance(f["nullable"], bool)
    assert f["dict_id"] == 0 and f["dict_is_ordered"] is False and f["metadata"] == {}
    dt(f["data_type"])
def dt(v):
    if isinstance(v, str):
        assert v in UNIT, v
        return
    assert isinstance(v, dict) and len(v) == 1, v
    (k, a), = v.items()
    if k == "Timestamp":
        assert isinstance(a, list) and len(a) == 2 and a[0] in TU and (a[1] is None or isinstance(a[1], str)), v
    elif k in ("Time32", "Time64", "Duration"):
        assert a in TU, v
    elif k == "Interval":
        assert a in ("YearMonth", "DayTime", "MonthDayNano"), v
    elif k == "FixedSizeBinary":
        assert isinstance(a, int) and a > 0, v
    elif k in ("Decimal128", "Decimal256"):
        assert isinstance(a, list) and len(a) == 2 and all(isinstance(x, int) for x in a), v
        assert 1 <= a[0] <= (38 if k == "Decimal128" else 76) and abs(a[1]) <= a[0], v
    elif k in ("List", "LargeList", "ListView", "LargeListView"):
        field(a)
    elif k == "FixedSizeList":
        assert isinstance(a, list) and len(a) == 2 and isinstance(a[1], int), v
        field(a[0])
    elif k == "Struct":
        assert isinstance(a, list), v
        for f in a: field(f)
    elif k == "Map":
        assert isinstance(a, list) and len(a) == 2 and isinstance(a[1], bool), v
        field(a[0])
        s = a[0]["data_type"]["Struct"]
        assert len(s) == 2 and s[0]["nullable"] is False, v
    elif k == "Union":
        assert isinstance(a, list) and len(a) == 2 and a[1] in ("Sparse", "Dense"), v
        for m in a[0]:
            assert isinstance(m, list) and len(m) == 2 and isinstance(m[0], int), v
            field(m[1])
    elif k == "Dictionary":
        assert isinstance(a, list) and len(a) == 2 and a[0] in INTS, v
        dt(a[1])
    else:
        raise AssertionError("not a DataType variant: %s" % k)
for t in json.load(open(sys.argv[1])):
    dt(t)
for f in json.load(open(sys.argv[2]))["schema"]["fields"]:
    field(f)
PY

# A large result streams (chunked): the schema first, row_count after the data.
curl -s -D "$T/h" -X POST -H "$V" --data-binary \
  "SELECT x, 'row ' || x AS label FROM range(200000) t(x) ORDER BY x" "$BASE/v1/sql" > "$T/big.json"
grep -qi 'transfer-encoding: chunked' "$T/h" || fail "a large vnd result is streamed"
assert_eq "$(head -c 11 "$T/big.json")" '{"schema":{' "streamed: the schema first"
assert_eq "$(jq -c '[.row_count, (.data | length), .data[-1], (keys_unsorted)]' "$T/big.json")" \
  '[200000,200000,{"x":199999,"label":"row 199999"},["schema","data","row_count"]]' "streamed: whole, row_count last"
# And application/json streams one line all the same.
curl -s -X POST --data-binary "SELECT x FROM range(100000) t(x)" "$BASE/v1/sql" > "$T/big1.json"
assert_eq "$(wc -l < "$T/big1.json" | tr -d ' ')" 1 "a streamed application/json answer is one line"
assert_eq "$(jq length "$T/big1.json")" 100000 "a streamed application/json answer is whole"

stop_server
echo "PASS test_runtime_sql_spice_formats"
