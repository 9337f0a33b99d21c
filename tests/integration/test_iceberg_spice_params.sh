#!/usr/bin/env bash
# Spice's Iceberg params on a REST catalog that wants a bearer token (issue 17):
# `iceberg_token: ${secrets:iceberg_token}` from a .env file loads the table
# (it was accepted and then ignored: 401); a wrong token is a clear 401;
# tidemark's old names, Spice params tidemark does not implement, authentication
# params that contradict each other and unknown params are refused by
# `tidemark config check` exactly as by a refresh.
source "$(dirname "$0")/lib.sh"

tbl="$T/wh/sales/orders"
ice_create "$tbl"
ice_append "$tbl" "1,2024-01-01T00:00:01Z,a" "2,2024-01-01T00:00:02Z,b" "3,2024-01-01T00:00:03Z,c"
coproc SERVER { exec node "$TM_SOURCE_DIR/tests/node/iceberg-rest-server.mjs" --warehouse "$T/wh" --prefix main --token s3cret --lifeline 1; }
read -r -u "${SERVER[0]}" line
port=${line#listening }
url="http://127.0.0.1:$port/v1/namespaces/sales/tables/orders"
trap 'kill "$SERVER_PID" 2>/dev/null || true' EXIT

pod() {
  cat > "$T/pod.yaml" <<YAML
version: v2
kind: Spicepod
name: ice
secrets:
  - from: env
    name: env
datasets:
  - from: iceberg:$url
    name: orders
    params: {$1}
    time_column: ts
    acceleration: {engine: duckdb, mode: file, refresh_mode: append}
YAML
}

# The token from .env, through ${secrets:...} (upper-cased, as Spice does).
echo 'ICEBERG_TOKEN=s3cret' > "$T/.env"
pod 'iceberg_token: "${secrets:iceberg_token}", iceberg_warehouse: main'
tm config check -c "$T/pod.yaml" > /dev/null 2>&1 || fail "config check: $(tm config check -c "$T/pod.yaml" 2>&1)"
assert_contains "$(tm_refresh -c "$T/pod.yaml")" "orders: +3 rows"
assert_eq "$(tm_sql "$T/pod.yaml" "SELECT count(*), max(id) FROM orders")" "3,3"

# A wrong token: the catalog's 401, named.
echo 'ICEBERG_TOKEN=wrong' > "$T/.env"
set +e
tm refresh -c "$T/pod.yaml" > /dev/null 2> "$T/err"; rc=$?
set -e
[[ $rc -ne 0 ]] || fail "a wrong token refreshed"
grep -q "401" "$T/err" || fail "the 401 is not reported: $(cat "$T/err")"
rm "$T/.env"

# Refused by config check, with the reason, as the refresh would.
refused() {
  pod "$1"
  set +e
  tm config check -c "$T/pod.yaml" > /dev/null 2> "$T/err"; rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "config check accepted: $1"
  grep -q -- "$2" "$T/err" || fail "config check for [$1]: $(cat "$T/err")"
}
refused 'token: s3cret' "unknown param 'token' of the Iceberg connector: Spice's name is 'iceberg_token'"
refused 'iceberg_s3_role_arn: "arn:aws:iam::1:role/r"' "param 'iceberg_s3_role_arn' is not supported"
refused 'iceberg_token: a, iceberg_oauth2_credential: "id:secret"' "params 'iceberg_token' and 'iceberg_oauth2_credential' are two ways"
refused 'iceberg_oauth2_scope: catalog' "param 'iceberg_oauth2_scope' needs iceberg_oauth2_credential"
refused 'iceberg_signing_region: eu-west-1' "param 'iceberg_signing_region' needs iceberg_sigv4_enabled: true"
refused 'iceberg_sigv4_enabled: yes' "param 'iceberg_sigv4_enabled': bad value 'yes' (allowed: true, false)"
refused 'iceberg_s3_path_style_access: maybe' "bad value 'maybe' (allowed: true, false)"
refused 'nope: 1' "unknown param 'nope' of the Iceberg connector (allowed: iceberg_token"
refused 'iceberg_token: "${secrets:no_such_secret_tm}"' "secret '\${secrets:no_such_secret_tm}' not found"
echo ok
