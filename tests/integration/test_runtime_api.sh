#!/usr/bin/env bash
# The HTTP API of SPEC 1.3 on a real `tidemark run`, through curl: every
# endpoint and its errors (404, 400, 405, 406, 413, 401 with an API key, D4),
# /v1/sql formats and its read-only rule, a large result streamed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/data"
gen_jsonl "$T/data/a.jsonl" 1 3
cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: api
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration:
      engine: sqlite
      mode: file
      refresh_mode: append
  - from: file:data
    name: raw
    params: {file_format: jsonl}
YAML

start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready"

# /health, /v1/ready
api GET /health
assert_eq "$STATUS" 200 "health"
assert_eq "$BODY" ok
api HEAD /health -I
assert_eq "$STATUS" 200 "HEAD /health"
api GET /v1/ready
assert_eq "$STATUS $BODY" "200 ready" "ready"

# /v1/status, as Spice shapes it: the endpoints and their component status.
api GET /v1/status
assert_eq "$STATUS" 200 "status"
assert_eq "$(jq -c . <<<"$BODY")" \
  "[{\"name\":\"http\",\"endpoint\":\"127.0.0.1:$HTTP_PORT\",\"status\":\"Ready\"},{\"name\":\"flight\",\"endpoint\":\"N/A\",\"status\":\"Disabled\"},{\"name\":\"metrics\",\"endpoint\":\"127.0.0.1:$METRICS_PORT\",\"status\":\"Ready\"},{\"name\":\"opentelemetry\",\"endpoint\":\"N/A\",\"status\":\"Disabled\"}]" \
  "/v1/status"
api GET '/v1/status?format=csv'
assert_eq "$STATUS" 200 "status csv"
assert_eq "$(head -2 <<<"$BODY" | tr '\n' ' ')" "name,endpoint,status http,127.0.0.1:$HTTP_PORT,Ready " "status csv"
api GET '/v1/status?format=xml'
assert_eq "$STATUS" 400 "status: bad format"

# /v1/datasets, as Spice shapes it: status with ?status=true, ?source=, ?format=csv.
api GET /v1/datasets
assert_eq "$STATUS" 200
assert_eq "$(jq -c . <<<"$BODY")" \
  '[{"from":"file:data","name":"events","replication_enabled":false,"acceleration_enabled":true},{"from":"file:data","name":"raw","replication_enabled":false,"acceleration_enabled":false}]' "datasets"
api GET '/v1/datasets?status=true'
assert_eq "$(jq -c '[.[] | .status]' <<<"$BODY")" '["Ready","Ready"]' "datasets?status=true"
api GET '/v1/datasets?source=file&status=false'
assert_eq "$(jq -c 'length' <<<"$BODY")" 2 "datasets?source=file"
api GET '/v1/datasets?source=s3'
assert_eq "$BODY" "[]" "datasets?source=s3"
api GET '/v1/datasets?format=csv&status=true'
assert_eq "$STATUS" 200
assert_eq "$(tr '\n' ' ' <<<"$BODY")" \
  "from,name,replication_enabled,acceleration_enabled,status file:data,events,false,true,Ready file:data,raw,false,false,Ready " "datasets csv"
api GET '/v1/datasets?status=yes'
assert_eq "$STATUS" 400 "datasets?status=yes"

# A federated dataset (C6) reads its source; it has no acceleration.
gen_jsonl "$T/data/b.jsonl" 4 2
assert_eq "$(sql_value 'SELECT count(*) FROM raw')" 5 "federated: the source as it is now"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 3 "accelerated: as of its last refresh"
api GET /v1/datasets/raw/acceleration
assert_eq "$STATUS" 404 "federated: no acceleration"
api POST /v1/datasets/raw/acceleration/refresh
assert_eq "$STATUS" 400 "federated: nothing to refresh"
rm "$T/data/b.jsonl"

# /v1/datasets/{name}/acceleration
api GET /v1/datasets/events/acceleration
assert_eq "$STATUS" 200
assert_eq "$(jq -r '.rows, .high_water_mark, .last_refresh.rows_written, .last_refresh.read, .last_error' <<<"$BODY" | tr '\n' ' ')" \
  "3 2024-01-01T00:00:03Z 3 time null " "acceleration state"
api GET /v1/datasets/nope/acceleration
assert_eq "$STATUS" 404 "unknown dataset"
assert_eq "$(jq -r .message <<<"$BODY")" "no dataset named 'nope'"
api GET /v1/datasets/%FF%FE/acceleration
assert_eq "$STATUS" 404 "a name that is not UTF-8"
assert_eq "$(jq -r .message <<<"$BODY")" "no dataset named '??'"
api GET /v1/datasets/nope/acceleration/refresh
assert_eq "$STATUS" 405 "GET on a POST route"
api GET /v1/nothing
assert_eq "$STATUS" 404 "unknown path"
api GET /../../etc/passwd --path-as-is
assert_eq "$STATUS" 404 "a path never reaches the file system (D4)"
api DELETE /v1/datasets
assert_eq "$STATUS" 405 "DELETE /v1/datasets"

# POST /v1/sql: formats
sql "SELECT id, ts, batch FROM events ORDER BY id"
assert_eq "$STATUS" 200
assert_eq "$(jq -c . <<<"$BODY")" \
  '[{"id":1,"ts":"2024-01-01T00:00:01Z","batch":"b0"},{"id":2,"ts":"2024-01-01T00:00:02Z","batch":"b0"},{"id":3,"ts":"2024-01-01T00:00:03Z","batch":"b0"}]' "json rows"
sql "SELECT id, batch FROM events ORDER BY id" -H 'Accept: text/csv'
assert_eq "${BODY//$'\r'/}" $'id,batch\n1,b0\n2,b0\n3,b0' "csv (RFC 4180 line ends)"
sql "SELECT id FROM events ORDER BY id LIMIT 2" -H 'Accept: text/plain'
assert_contains "$BODY" "(2 rows)" "table"
sql "SELECT 1 AS one" -H 'Accept: text/html;q=0.9, text/csv;q=0.5'
assert_eq "${BODY//$'\r'/}" $'one\n1' "q-values pick the supported type"
sql "SELECT 1" -H 'Accept: application/xml'
assert_eq "$STATUS" 406 "unsupported Accept"

# POST /v1/sql: errors (400 with a message)
sql "SELEKT 1"
assert_eq "$STATUS" 400 "bad SQL"
[[ -n $(jq -r .message <<<"$BODY") ]] || fail "bad SQL has a message"
sql "SELECT * FROM missing_table"
assert_eq "$STATUS" 400 "unknown table"
for w in "DELETE FROM events" "INSERT INTO events (id) VALUES (9)" "DROP TABLE events" \
  "ATTACH DATABASE '$T/x.db' AS x" "PRAGMA journal_mode=DELETE" "SELECT load_extension('x')"; do
  sql "$w"
  assert_eq "$STATUS" 400 "a write statement is refused: $w"
done
[[ ! -e $T/x.db ]] || fail "ATTACH created a file"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 3 "nothing was written"
sql ""
assert_eq "$STATUS" 400 "empty body"
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' > "$T/big.sql"
api POST /v1/sql --data-binary "@$T/big.sql"
assert_eq "$STATUS" 413 "body too large"

# A large result streams (chunked) and arrives whole.
curl -s -D "$T/headers" -X POST --data-binary \
  "SELECT x, 'row ' || x AS label FROM range(1, 200001) t(x) ORDER BY x" \
  -H 'Accept: text/csv' "$BASE/v1/sql" > "$T/big.csv"
assert_eq "$(wc -l < "$T/big.csv")" 200001 "streamed CSV rows"
assert_eq "$(tail -n 1 "$T/big.csv" | tr -d '\r')" "200000,row 200000" "the last streamed row"
grep -qi 'transfer-encoding: chunked' "$T/headers" || fail "a large result is streamed with chunked encoding"
n=$(curl -s -X POST --data-binary \
  "SELECT x FROM range(1, 50001) t(x)" \
  "$BASE/v1/sql" | jq length)
assert_eq "$n" 50000 "streamed JSON array"

# POST .../refresh: body validation
api POST /v1/datasets/events/acceleration/refresh -d '{"refresh_sql": '
assert_eq "$STATUS" 400 "malformed JSON"
assert_contains "$(jq -r .message <<<"$BODY")" "malformed JSON"
api POST /v1/datasets/events/acceleration/refresh -d '[1]'
assert_eq "$STATUS" 400 "not an object"
api POST /v1/datasets/events/acceleration/refresh -d '{"refresh_sqll": "SELECT 1"}'
assert_eq "$STATUS" 400 "unknown key"
api POST /v1/datasets/events/acceleration/refresh -d '{"refresh_mode": "sideways"}'
assert_eq "$STATUS" 400 "bad mode"
api POST /v1/datasets/events/acceleration/refresh -d '{"refresh_sql": "DELETE FROM events"}'
assert_eq "$STATUS" 400 "refresh_sql must be a SELECT"
api POST /v1/datasets/nope/acceleration/refresh
assert_eq "$STATUS" 404 "refresh of an unknown dataset"
head -c $((70 * 1024)) /dev/zero | tr '\0' ' ' > "$T/big.json"
api POST /v1/datasets/events/acceleration/refresh --data-binary "@$T/big.json"
assert_eq "$STATUS" 413 "refresh body too large"
api POST /v1/datasets/events/acceleration/refresh
assert_eq "$STATUS" 201 "refresh without a body"
assert_eq "$BODY" '{"message":"Dataset refresh triggered for events."}'

# Request metrics are labelled by route template.
m=$(metrics)
assert_contains "$m" 'http_requests{method="GET",path="/v1/datasets/{name}/acceleration",status="404"} 3'
assert_contains "$m" 'dataset_load_state{dataset="raw"} 1'
assert_contains "$m" 'http_requests{method="POST",path="/v1/sql",status="413"} 1'
assert_contains "$m" 'http_requests{method="GET",path="unmatched",status="404"} 2'
stop_server

# D4: with an API key every endpoint but /health needs it.
start_server "$T/tidemark.yaml" --api-key s3cret
wait_until 20 is_ready -H 'X-API-Key: s3cret' || fail "not ready with a key"
api GET /health
assert_eq "$STATUS" 200 "/health needs no key"
for p in /v1/ready /v1/datasets /v1/datasets/events/acceleration; do
  api GET "$p"
  assert_eq "$STATUS" 401 "$p without a key"
  assert_contains "$(jq -r .message <<<"$BODY")" "API key"
  api GET "$p" -H 'Authorization: Bearer wrong'
  assert_eq "$STATUS" 401 "$p with a wrong key"
  api GET "$p" -H 'Authorization: Bearer s3cret'
  assert_eq "$STATUS" 200 "$p with a bearer key"
  api GET "$p" -H 'X-API-Key: s3cret'
  assert_eq "$STATUS" 200 "$p with X-API-Key"
done
sql "SELECT 1"
assert_eq "$STATUS" 401 "/v1/sql without a key"
api POST /v1/datasets/events/acceleration/refresh
assert_eq "$STATUS" 401 "refresh without a key"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/metrics")
assert_eq "$code" 401 "/metrics without a key"
metrics -H 'Authorization: Bearer s3cret' >/dev/null || fail "/metrics with a key"
# The key also comes from the environment for the clients.
out=$(TIDEMARK_API_KEY=s3cret tm sql --url "$BASE" --format csv "SELECT count(*) AS n FROM events")
assert_eq "${out//$'\r'/}" $'n\n3' "sql --url with TIDEMARK_API_KEY"
stop_server
echo ok
