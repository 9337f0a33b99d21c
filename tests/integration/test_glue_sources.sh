#!/usr/bin/env bash
# Issue 18, SPEC B1-B5, D3, section 4: `from: glue:DATABASE.TABLE` against a
# Glue-protocol test server (tests/tools/glue_server.py: AWS JSON 1.1, every
# request's SigV4 signature recomputed by botocore and compared).
# - the server speaks Glue: Debian's awscli reads it (get-table, get-tables
#   across pages, get-databases) and a wrong secret is refused;
# - an Iceberg table through Glue is followed snapshot by snapshot; a commit
#   is the catalog's new metadata_location (files written but not committed
#   to the catalog are not read); a replaced table is table_replaced (B5);
# - Parquet and CSV tables (StorageDescriptor) are read as file sets, also
#   on S3 (s3rver) with Glue's credentials;
# - a missing table / database, wrong credentials, the catalog down (D3):
#   clear errors, and the refresh after the catalog is back loads the rows.
source "$(dirname "$0")/lib.sh"
cd "$T"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION
PY=/usr/bin/python3
AWS=/usr/bin/aws
"$PY" -c 'import botocore' 2>/dev/null || fail "Debian's python3-botocore is missing (scripts/install-deps installs it)"
[[ -x $AWS ]] || fail "Debian's awscli is missing (scripts/install-deps installs it)"

# ---- the catalog --------------------------------------------------------------
catalog() { # catalog JSON: written atomically, as a commit would be
  printf '%s\n' "$1" > catalog.tmp && mv catalog.tmp catalog.json
}
meta() { echo "$T/$1/metadata/v$(cat "$T/$1/metadata/version-hint.text").metadata.json"; }
ice_entry() { echo "{\"TableType\": \"EXTERNAL_TABLE\", \"Parameters\": {\"table_type\": \"ICEBERG\", \"metadata_location\": \"$1\"}}"; }
ice_create wh/sales/orders
ice_append wh/sales/orders "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b" "3,2026-11-30T10:00:02Z,c"
mkdir -p files/clicks files/visits
write_parquet files/clicks/a.parquet "SELECT * FROM (VALUES (1, 'x'), (2, 'y')) t(id, page)"
printf 'id|page\n10|p\n11|q\n' > files/visits/v1.csv
files_entries() {
  cat <<JSON
  "clicks": {"Parameters": {"classification": "parquet"}, "StorageDescriptor": {"Location": "$T/files/clicks/", "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"}},
  "visits": {"Parameters": {"skip.header.line.count": "1"}, "StorageDescriptor": {"Location": "$T/files/visits", "InputFormat": "org.apache.hadoop.mapred.TextInputFormat", "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", "Parameters": {"field.delim": "|"}}}},
  "logs": {"StorageDescriptor": {"Location": "$T/files/logs", "InputFormat": "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"}}
JSON
}
write_catalog() {
  catalog "{\"databases\": {\"sales\": {\"orders\": $(ice_entry "$1"),
$(files_entries)}, \"web\": {}}}"
}
write_catalog "$(meta wh/sales/orders)"

start_glue() { # on a free port, or on $1 (the port it had before it was stopped)
  : > glue.out
  "$PY" "$TM_SOURCE_DIR/tests/tools/glue_server.py" --catalog "$T/catalog.json" --key AKIDTEST \
    --secret s3cret --page-size 2 --log "$T/glue.log" --port "${1:-0}" > glue.out 2> glue.err &
  GLUE_PID=$!
  for _ in $(seq 300); do grep -q listening glue.out && break; sleep 0.1; done
  port=$(sed -n 's/^listening //p' glue.out)
  [[ -n $port ]] || fail "the Glue server did not start: $(cat glue.err)"
}
start_glue
ep="http://127.0.0.1:$port"

# ---- the server speaks Glue: the real AWS CLI reads it ------------------------
aws_glue() {
  AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
    AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=${SECRET:-s3cret} \
    "$AWS" glue "$@" --endpoint-url "$ep" --output text
}
assert_eq "$(aws_glue get-table --database-name sales --name orders --query 'Table.Parameters.table_type')" "ICEBERG"
assert_eq "$(aws_glue get-table --database-name sales --name orders --query 'Table.Parameters.metadata_location')" "$(meta wh/sales/orders)"
# 4 tables, 2 per page: the CLI follows NextToken.
assert_eq "$(aws_glue get-tables --database-name sales --query 'TableList[].Name' | tr '\t\n' '  ' | xargs)" "clicks logs orders visits"
assert_eq "$(grep -c '^GetTables ok' glue.log)" "2" "get-tables pages"
assert_eq "$(aws_glue get-databases --query 'DatabaseList[].Name' | xargs)" "sales web"
set +e
SECRET=wrong aws_glue get-table --database-name sales --name orders > /dev/null 2> err; rc=$?
set -e
[[ $rc -ne 0 ]] && grep -q InvalidSignatureException err || fail "a wrong secret was not refused: $(cat err)"
: > glue.log

# ---- an Iceberg table through Glue ---------------------------------------------
params="{glue_region: us-east-1, glue_key: AKIDTEST, glue_secret: s3cret, glue_endpoint: '$ep', allow_http: 'true'}"
pod() { # pod FROM [PARAMS]
  cat > pod.yaml <<YAML
version: v1
kind: Spicepod
name: glue
datasets:
  - from: $1
    name: $(n=${1#glue:}; echo "${n//./_}")
    params: ${2:-$params}
    time_column: ${TIME_COLUMN:-ts}
    acceleration: {engine: duckdb, mode: file, refresh_mode: append}
YAML
}
pod glue:sales.orders
tm config check -c pod.yaml > /dev/null 2>&1 || fail "config check: $(tm config check -c pod.yaml 2>&1)"
assert_contains "$(tm config check -c pod.yaml 2>&1)" "sales_orders: glue:sales.orders (glue)"
assert_contains "$(tm_refresh -c pod.yaml)" "sales_orders: +3 rows"
assert_eq "$(tm_sql pod.yaml "SELECT count(*), max(id) FROM sales_orders")" "3,3"
# Written to the table folder but not committed to the catalog: not the table yet.
ice_append wh/sales/orders "4,2026-11-30T10:00:03Z,d" "5,2026-11-30T10:00:04Z,e"
tm_refresh -c pod.yaml > out
assert_eq "$(tm_sql pod.yaml "SELECT count(*) FROM sales_orders")" "3" "an uncommitted metadata file was read"
# The catalog commits it: the next refresh follows the new snapshot.
write_catalog "$(meta wh/sales/orders)"
assert_contains "$(tm_refresh -c pod.yaml)" "sales_orders: +2 rows via snapshots (1: append 1)"
ice_append wh/sales/orders "6,2026-11-30T10:00:05Z,f"
ice_append wh/sales/orders "7,2026-11-30T10:00:06Z,g"
write_catalog "$(meta wh/sales/orders)"
assert_contains "$(tm_refresh -c pod.yaml)" "sales_orders: +2 rows via snapshots (2: append 2)"
assert_eq "$(tm_sql pod.yaml "SELECT group_concat(id, '-') FROM (SELECT id FROM sales_orders ORDER BY id)")" "1-2-3-4-5-6-7"
# Every request tidemark made was signed, and the signature verified.
[[ $(grep -c '^GetTable ok' glue.log) -ge 4 ]] || fail "GetTable requests: $(cat glue.log)"
[[ -z $(grep -v ' ok$' glue.log) ]] || fail "requests refused: $(grep -v ' ok$' glue.log)"

# A replaced table (the catalog now points at a new table: a new uuid): B5.
ice_create wh/sales/orders_v2
ice_append wh/sales/orders_v2 "8,2026-11-30T10:00:07Z,h"
write_catalog "$(meta wh/sales/orders_v2)"
tm refresh -c pod.yaml > out 2> err
assert_contains "$(cat out)" "sales_orders: +1 rows via time (fallback: table_replaced)"
assert_contains "$(cat err)" "table_replaced"
ice_append wh/sales/orders_v2 "9,2026-11-30T10:00:08Z,i"
write_catalog "$(meta wh/sales/orders_v2)"
assert_contains "$(tm_refresh -c pod.yaml)" "sales_orders: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql pod.yaml "SELECT count(*), max(id) FROM sales_orders")" "9,9"
# Without glue_key and glue_secret the catalog is signed with the AWS credential chain
# (Spice's behaviour): here its shared-credentials link, with a named profile.
printf '[glue-test]\naws_access_key_id = AKIDTEST\naws_secret_access_key = s3cret\n' > awscred
pod glue:sales.orders "{glue_region: us-east-1, glue_endpoint: '$ep', allow_http: 'true'}"
ice_append wh/sales/orders_v2 "10,2026-11-30T10:00:09Z,j"
write_catalog "$(meta wh/sales/orders_v2)"
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN AWS_PROFILE=glue-test \
  AWS_SHARED_CREDENTIALS_FILE="$T/awscred" AWS_CONFIG_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true \
  "$TM_BIN" refresh -c pod.yaml 2>err) || fail "refresh through the chain: $(cat err)"
assert_contains "$out" "sales_orders: +1 rows via snapshots (1: append 1)"
[[ -z $(grep -v ' ok$' glue.log) ]] || fail "requests refused: $(grep -v ' ok$' glue.log)"

# ---- errors ---------------------------------------------------------------------
refresh_fails() { # refresh_fails WANT...: the refresh fails and says each WANT
  set +e
  tm refresh -c pod.yaml > /dev/null 2> err; local rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "the refresh succeeded; wanted: $*"
  local w
  for w in "$@"; do grep -qF -- "$w" err || fail "[$w] not in: $(cat err)"; done
}
pod glue:sales.ordres
refresh_fails "table 'ordres' not found in database 'sales' (its tables: clicks, logs, orders, visits)"
pod glue:shop.orders
refresh_fails "database 'shop' not found (the catalog's databases: sales, web)"
TIME_COLUMN=id pod glue:sales.logs
refresh_fails "Glue table sales.logs: format 'org.apache.hadoop.hive.ql.io.orc.OrcInputFormat' is not read"
pod glue:sales.orders "{glue_region: us-east-1, glue_key: AKIDTEST, glue_secret: wrong, glue_endpoint: '$ep', allow_http: 'true'}"
refresh_fails "authentication failed" "InvalidSignatureException"
pod glue:sales.orders "{glue_region: us-east-1, glue_key: AKIDOTHER, glue_secret: s3cret, glue_endpoint: '$ep', allow_http: 'true'}"
refresh_fails "authentication failed" "UnrecognizedClientException"
pod glue:sales.orders "{glue_region: eu-west-1, glue_key: AKIDTEST, glue_secret: s3cret, glue_endpoint: '$ep', allow_http: 'true'}"
refresh_fails "authentication failed"
# Refused by config check, as the refresh would.
refused() {
  pod glue:sales.orders "$1"
  set +e
  tm config check -c pod.yaml > /dev/null 2> err; local rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "config check accepted: $1"
  grep -qF -- "$2" err || fail "config check for [$1]: $(cat err)"
}
refused "{glue_key: a, glue_secret: b, glue_endpoint: '$ep', allow_http: 'true'}" "needs param glue_region"
refused "{glue_region: us-east-1, glue_key: a, glue_endpoint: '$ep', allow_http: 'true'}" "params glue_key and glue_secret go together"
refused "{glue_region: us-east-1, glue_key: a, glue_secret: b, glue_endpoint: '$ep'}" "is plain http; set allow_http: true"
refused "{glue_region: us-east-1, glue_key: a, glue_secret: b, glue_catalog: x}" "unknown param 'glue_catalog' of the Glue connector"
refused "{glue_region: us-east-1, glue_key: a, glue_secret: b, s3_auth: iam_role, s3_key: k, s3_secret: s}" "iam_role takes no s3_key"
pod "glue:orders" && { tm config check -c pod.yaml > /dev/null 2> err && fail "glue:orders accepted"; grep -q "glue:DATABASE.TABLE" err || fail "$(cat err)"; }

# The keys from the environment (AWS_*), as the S3 store takes them.
pod glue:sales.orders "{glue_endpoint: '$ep', allow_http: 'true'}"
(
  export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=s3cret AWS_REGION=us-east-1
  tm refresh -c pod.yaml > out 2> err || fail "keys from the environment: $(cat err)"
  assert_eq "$(tm_sql pod.yaml "SELECT count(*) FROM sales_orders")" "10"
)

# The table leaves the catalog: the refresh fails, never "+0 rows" from an empty table.
pod glue:sales.orders
catalog '{"databases": {"sales": {}}}'
refresh_fails "table 'orders' not found in database 'sales' (its tables: none)"
write_catalog "$(meta wh/sales/orders_v2)"

# ---- the catalog down (D3), then back ------------------------------------------
kill "$GLUE_PID"; wait "$GLUE_PID" 2>/dev/null || true
ice_append wh/sales/orders_v2 "10,2026-11-30T10:00:09Z,j"
refresh_fails "glue GetTable at $ep/" "Couldn't connect"
assert_eq "$(tm_sql pod.yaml "SELECT count(*) FROM sales_orders")" "10" "the acceleration still answers"
write_catalog "$(meta wh/sales/orders_v2)"
start_glue "${ep##*:}"
assert_contains "$(tm_refresh -c pod.yaml)" "sales_orders: +1 rows via snapshots (1: append 1)"

# ---- file tables: Parquet and CSV (the format from Glue's classes) --------------
TIME_COLUMN=id pod glue:sales.clicks
assert_contains "$(tm_refresh -c pod.yaml)" "sales_clicks: +2 rows"
assert_eq "$(tm_sql pod.yaml "SELECT group_concat(page, '') FROM (SELECT page FROM sales_clicks ORDER BY id)")" "xy"
TIME_COLUMN=id pod glue:sales.visits
assert_contains "$(tm_refresh -c pod.yaml)" "sales_visits: +2 rows"
assert_eq "$(tm_sql pod.yaml "SELECT group_concat(page, '') FROM (SELECT page FROM sales_visits ORDER BY id)")" "pq"
printf 'id|page\n12|r\n' > files/visits/v2.csv
assert_contains "$(tm_refresh -c pod.yaml)" "sales_visits: +1 rows"

# ---- on S3: an Iceberg table and a Parquet table, Glue's keys used for S3 --------
mkdir -p s3dir
coproc S3 { exec node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" \
  --dir "$T/s3dir" --buckets lake --key AKIDTEST --secret s3cret; }
read -r -t 30 word s3port <&"${S3[0]}" || fail "s3rver did not start"
[[ $word == port ]] || fail "s3rver said [$word $s3port]"
put() {
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user AKIDTEST:s3cret \
    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
    "http://127.0.0.1:$s3port/lake/$2" >/dev/null || fail "upload of $2"
}
(cd wh/sales && find orders -type f | while read -r f; do put "$f" "wh/$f"; done)
put files/clicks/a.parquet clicks/a.parquet
v=$(cat wh/sales/orders/metadata/version-hint.text)
catalog "{\"databases\": {\"s3\": {\"orders\": $(ice_entry "s3://lake/wh/orders/metadata/v$v.metadata.json"),
  \"clicks\": {\"Parameters\": {\"classification\": \"parquet\"}, \"StorageDescriptor\": {\"Location\": \"s3://lake/clicks/\"}}}}}"
s3params="{glue_region: us-east-1, glue_key: AKIDTEST, glue_secret: s3cret, glue_endpoint: '$ep', allow_http: 'true', s3_endpoint: 'http://127.0.0.1:$s3port', s3_url_style: path}"
pod glue:s3.orders "$s3params"
assert_contains "$(tm_refresh -c pod.yaml)" "s3_orders: +7 rows"
assert_eq "$(tm_sql pod.yaml "SELECT count(*), max(id) FROM s3_orders")" "7,7"
TIME_COLUMN=id pod glue:s3.clicks "$s3params"
assert_contains "$(tm_refresh -c pod.yaml)" "s3_clicks: +2 rows"
echo ok
