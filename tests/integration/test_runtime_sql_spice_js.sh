#!/usr/bin/env bash
# Spice's official JS client (@spiceai/spice 3.2.0, spice.js) against a real
# `tidemark run` (SPEC 1.3; issue 17). tidemark has no Arrow Flight endpoint,
# so the client runs with httpOnly: its sql() posts the SQL as text/plain,
# or Spice's JSON envelope {"sql", "parameters"} (positional, named, a Date
# as an ISO string) as application/json, and reads the application/json
# answer into an Arrow table (a newline in that answer would make it read
# each line as its own document); its sqlJson() asks for
# application/vnd.spiceai.sql.v1+json. A write in the envelope is refused and
# the client reports the 400.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

command -v node >/dev/null || skip "node is not installed"
[[ -d "$NODE_PATH/@spiceai/spice" ]] || skip "@spiceai/spice is not installed (scripts/install-test-deps)"

mkdir -p "$T/data"
cat > "$T/data/a.jsonl" <<'JSONL'
{"id": 1, "name": "one", "ts": "2024-01-01T00:00:01Z", "amount": 1.5, "ok": true}
{"id": 2, "name": "two", "ts": "2024-01-01T00:00:02Z", "amount": 2.25, "ok": false}
{"id": 3, "name": "it's \"three\"", "ts": "2024-01-01T00:00:03Z", "amount": null, "ok": true}
JSONL
cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: spice-js
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    acceleration:
      enabled: true
YAML

start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready"

out=$(node "$TM_SOURCE_DIR/tests/node/spice-client.mjs" "$BASE") || fail "spice.js: $out"
assert_eq "$(jq -c .text <<<"$out")" '[{"id":1,"name":"one"},{"id":2,"name":"two"}]' "sql(): a text query"
assert_eq "$(jq -c .positional <<<"$out")" \
  '[{"id":1,"name":"one"},{"id":3,"name":"it'"'"'s \"three\""}]' "sql() with positional parameters"
assert_eq "$(jq -c .named <<<"$out")" '[{"id":2}]' "sql() with named parameters (\$id, a boolean)"
assert_eq "$(jq -c .named_colon <<<"$out")" '[{"id":2},{"id":3}]' "sql() with :since and a Date"
assert_contains "$(jq -r .refused.error <<<"$out")" "HTTP query failed with status 400" "a write is refused"
assert_contains "$(jq -r .refused.error <<<"$out")" "DELETE is not allowed" "the refusal's message reaches the client"
assert_eq "$(jq -c '.json | [.row_count, [.fields[] | [.name, .data_type]], .data]' <<<"$out")" \
  '[2,[["id","Int64"],["name","Utf8"],["amount","Float64"]],[{"id":1,"name":"one","amount":1.5},{"id":2,"name":"two","amount":2.25}]]' \
  "sqlJson(): application/vnd.spiceai.sql.v1+json"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 3 "nothing was written"

stop_server
echo "PASS test_runtime_sql_spice_js"
