#!/usr/bin/env bash
# Issue 17: an Iceberg REST catalog's authentication and vended credentials,
# with Spice's params, against tests/tools/iceberg_rest_auth_server.py (OAuth2
# token endpoint; SigV4 signatures recomputed by botocore; S3 keys vended in
# loadTable's config) and s3rver (tests/node/s3rver-start.mjs), which knows
# only the vended key, its secret and its session token.
# - OAuth2 client credentials: a token is obtained and sent; a wrong secret is
#   a clear error that repeats neither the secret nor what the server echoed;
#   `tidemark run` renews short-lived tokens before they expire and once after
#   a 401 (the catalog forgot its tokens);
# - SigV4: requests signed with iceberg_s3_* keys or the AWS chain verify; a
#   wrong secret or region is refused with a clear error;
# - vended credentials read the files; explicit keys win over them; a catalog
#   that vends none or expired ones fails clearly; keys S3 refuses are renewed
#   by loading the table again, keys about to expire too; storage-credentials
#   are used by prefix;
# - no secret and no token ever appears in tidemark's output or logs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
cd "$T"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION AWS_PROFILE
export AWS_EC2_METADATA_DISABLED=true AWS_SHARED_CREDENTIALS_FILE=$T/none AWS_CONFIG_FILE=$T/none
PY=/usr/bin/python3
"$PY" -c 'import botocore' 2>/dev/null || fail "Debian's python3-botocore is missing (scripts/install-deps installs it)"
SERVER_PY=$TM_SOURCE_DIR/tests/tools/iceberg_rest_auth_server.py

# ---- the table, on s3rver ------------------------------------------------------------
mkdir -p s3dir
coproc S3 { exec node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" \
  --dir "$T/s3dir" --buckets data --key vendkey --secret vendsecret; }
read -r -t 30 word s3port <&"${S3[0]}" || fail "s3rver did not start"
[[ $word == port ]] || fail "s3rver said [$word $s3port]"
s3cmd() { echo "$*" >&"${S3[1]}"; local reply; read -r -t 10 reply <&"${S3[0]}"; echo "$reply"; }
put() {
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user vendkey:vendsecret \
    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
    "http://127.0.0.1:$s3port/data/$2" >/dev/null || fail "upload of $2"
}
tbl=wh/sales/orders
ice_create "$tbl"
ice_append "$tbl" "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b" "3,2026-11-30T10:00:02Z,c"
upload() { (cd wh && find sales -type f | while read -r f; do put "$f" "wh/$f"; done); }
upload
# From now on S3 wants the vended session token too.
assert_eq "$(s3cmd keys vendkey vendsecret vendtoken)" ok
loc=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["location"])' "$(ls "$tbl"/metadata/v*.metadata.json | tail -1)")
remap="location_from: '$loc', location_to: 's3://data/$tbl', allow_http: 'true'"

# ---- catalogs ----------------------------------------------------------------------
# start_catalog NAME ARGS...: a catalog talking through two FIFOs (commands in, replies
# out); sets NAME_port.
start_catalog() {
  local name=$1
  shift
  mkfifo "$T/$name.in" "$T/$name.out"
  "$PY" "$SERVER_PY" --warehouse "$T/wh" --prefix main --log "$T/$name.log" "$@" \
    < "$T/$name.in" > "$T/$name.out" &
  local in out line
  exec {in}>"$T/$name.in" {out}<"$T/$name.out"
  eval "${name}_in=$in ${name}_out=$out"
  read -r -t 30 line <&"$out" || fail "catalog $name did not start"
  eval "${name}_port=${line#listening }"
}
catcmd() { # catcmd NAME COMMAND...: one command, its one-line reply
  local name=$1
  shift
  local in out reply
  eval "in=\$${name}_in out=\$${name}_out"
  echo "$*" >&"$in"
  read -r -t 10 reply <&"$out"
  echo "$reply"
}
VEND="--vend vendkey:vendsecret:vendtoken --vend-endpoint http://127.0.0.1:$s3port --metadata-location-root s3://data/$tbl"
# shellcheck disable=SC2086
start_catalog OA --oauth client1:s3cr3t-client --token-ttl 2 --tokens-file "$T/tokens" $VEND
start_catalog OB --oauth client1:s3cr3t-client --tokens-file "$T/tokens" $VEND
start_catalog SV --sigv4 vendkey:vendsecret --sigv4-token vendtoken --sigv4-region eu-west-1 --metadata-location-root "s3://data/$tbl"
# shellcheck disable=SC2086
start_catalog SC --token plain-token --vend-as storage-credentials $VEND

pod() { # pod URL PARAMS [ACCEL]: a pod with one dataset `orders`
  cat > "$T/pod.yaml" <<YAML
version: v1
kind: Spicepod
name: ice
datasets:
  - from: iceberg:$1
    name: orders
    params: {$2}
    time_column: ts
    acceleration: {engine: duckdb, mode: file, refresh_mode: append${3:-}}
YAML
}
url() { echo "http://127.0.0.1:$1/v1/namespaces/sales/tables/orders"; }
refresh_fails() { # refresh_fails WANT...: the refresh fails, its error has each WANT
  set +e
  TIDEMARK_LOG=debug tm refresh -c "$T/pod.yaml" > "$T/out" 2> "$T/err"; local rc=$?
  set -e
  cat "$T/err" >> "$T/all-output"
  [[ $rc -ne 0 ]] || fail "the refresh succeeded: $(cat "$T/out")"
  local w
  for w in "$@"; do grep -qF -- "$w" "$T/err" || fail "[$w] not in: $(cat "$T/err")"; done
}
refresh_ok() {
  TIDEMARK_LOG=debug tm refresh -c "$T/pod.yaml" > "$T/out" 2> "$T/err" || fail "refresh: $(cat "$T/err")"
  cat "$T/out" "$T/err" >> "$T/all-output"
}
fresh() { rm -rf "$T/.tidemark" "$T"/*.duckdb "$T"/data 2>/dev/null || true; }

# ---- OAuth2 client credentials ------------------------------------------------------------
pod "$(url "$OA_port")" "iceberg_oauth2_credential: 'client1:s3cr3t-client', $remap"
tm config check -c pod.yaml >/dev/null 2>&1 || fail "config check: $(tm config check -c pod.yaml 2>&1)"
refresh_ok
assert_contains "$(cat out)" "orders: +3 rows"
assert_eq "$(tm_sql pod.yaml "SELECT count(*), sum(id) FROM orders")" "3,6"
grep -q "POST /v1/oauth/tokens 200 issued" OA.log || fail "no token was issued: $(cat OA.log)"
grep -q "GET /v1/main/namespaces/sales/tables/orders 200 auth=oauth2 delegation=vended-credentials vended=yes" OA.log \
  || fail "loadTable was not authenticated with the token or did not ask for credentials: $(cat OA.log)"
# A scope: the server wants "catalog" (Spice's default); another one is refused by name.
pod "$(url "$OA_port")" "iceberg_oauth2_credential: 'client1:s3cr3t-client', iceberg_oauth2_scope: other, $remap"
refresh_fails "the OAuth2 server refused the client credentials (HTTP 400: invalid_scope" "/v1/oauth/tokens"
# A wrong secret: the server's 401, named, without the secret it echoes back.
pod "$(url "$OA_port")" "iceberg_oauth2_credential: 'client1:wrong-secret-xyz', $remap"
refresh_fails "http://127.0.0.1:$OA_port/v1/oauth/tokens: the OAuth2 server refused the client credentials (HTTP 401: invalid_client" \
  "check iceberg_oauth2_credential"
grep -q "wrong-secret-xyz" err && fail "the secret is in the error: $(cat err)"
# A token server URL of our own (iceberg_oauth2_server_url) is used instead of the default.
pod "$(url "$OA_port")" "iceberg_oauth2_credential: 'client1:s3cr3t-client', iceberg_oauth2_server_url: 'http://127.0.0.1:$OA_port/v1/nowhere', $remap"
refresh_fails "http://127.0.0.1:$OA_port/v1/nowhere: no OAuth2 token endpoint there (HTTP 404" "check iceberg_oauth2_server_url"
# Token and credential together, and OAuth2 params without a credential: refused by name.
pod "$(url "$OA_port")" "iceberg_token: t, iceberg_oauth2_credential: 'a:b', $remap"
tm config check -c pod.yaml >/dev/null 2>err && fail "config check accepted a token and a credential"
assert_contains "$(cat err)" "params 'iceberg_token' and 'iceberg_oauth2_credential' are two ways to authenticate"

# Renewal in a long-running server: tokens live 2 s, refreshes run every second.
fresh
pod "$(url "$OA_port")" "iceberg_oauth2_credential: 'client1:s3cr3t-client', $remap" ", refresh_check_interval: 1s"
before=$(catcmd OA stats)
TIDEMARK_LOG=debug start_server pod.yaml
wait_until 30 is_ready || fail "not ready: $(cat "$SERVER_LOG")"
sleep 5
after=$(catcmd OA stats)
tokens_before=$(sed 's/.*tokens=\([0-9]*\).*/\1/' <<<"$before")
tokens_after=$(sed 's/.*tokens=\([0-9]*\).*/\1/' <<<"$after")
refused_before=$(sed 's/.*refused=\([0-9]*\).*/\1/' <<<"$before")
refused_after=$(sed 's/.*refused=\([0-9]*\).*/\1/' <<<"$after")
((tokens_after - tokens_before >= 2)) || fail "tokens were not renewed: $before -> $after"
assert_eq "$refused_after" "$refused_before" "requests refused while tokens were renewed before expiry"
stop_server
cat "$SERVER_LOG" "$SERVER_LOG.out" >> all-output
# A token without expiry is kept until the catalog refuses it (it forgot its tokens):
# the next request gets 401, one new token, and succeeds.
pod "$(url "$OB_port")" "iceberg_oauth2_credential: 'client1:s3cr3t-client', $remap" ", refresh_check_interval: 1s"
TIDEMARK_LOG=debug start_server pod.yaml
wait_until 30 is_ready || fail "not ready: $(cat "$SERVER_LOG")"
sleep 1.5
assert_eq "$(catcmd OB revoke)" ok
ice_append "$tbl" "4,2026-11-30T10:00:03Z,d"
assert_eq "$(s3cmd keys vendkey vendsecret)" ok
upload
assert_eq "$(s3cmd keys vendkey vendsecret vendtoken)" ok
wait_until 20 bash -c "[[ \$(curl -s -X POST --data-binary 'SELECT count(*) FROM orders' $BASE/v1/sql) == *4* ]]" \
  || fail "the rows after the revocation never arrived: $(tail -20 "$SERVER_LOG")"
grep -q "GET /v1/config 401 refused" OB.log || fail "the revoked token was never refused: $(tail OB.log)"
[[ $(grep -c "POST /v1/oauth/tokens 200 issued" OB.log) == 2 ]] || fail "one token, then one after the 401: $(cat OB.log)"
stop_server
cat "$SERVER_LOG" "$SERVER_LOG.out" >> all-output

# ---- SigV4 ---------------------------------------------------------------------------
fresh
sigv4="iceberg_sigv4_enabled: true, iceberg_signing_region: eu-west-1, iceberg_s3_endpoint: 'http://127.0.0.1:$s3port'"
keys="iceberg_s3_access_key_id: vendkey, iceberg_s3_secret_access_key: vendsecret, iceberg_s3_session_token: vendtoken"
pod "$(url "$SV_port")" "$sigv4, $keys, $remap"
refresh_ok
assert_contains "$(cat out)" "orders: +4 rows"
grep -q "GET /v1/main/namespaces/sales/tables/orders 200 auth=sigv4" SV.log || fail "not signed: $(cat SV.log)"
# Keys from the AWS credential chain (the environment) sign too.
fresh
pod "$(url "$SV_port")" "$sigv4, $remap"
AWS_ACCESS_KEY_ID=vendkey AWS_SECRET_ACCESS_KEY=vendsecret AWS_SESSION_TOKEN=vendtoken refresh_ok
assert_contains "$(cat out)" "orders: +4 rows"
# A wrong secret, and a wrong signing region: botocore's verdict, named.
pod "$(url "$SV_port")" "$sigv4, iceberg_s3_access_key_id: vendkey, iceberg_s3_secret_access_key: wrong-aws-secret, iceberg_s3_session_token: vendtoken, $remap"
refresh_fails "the catalog refused the credentials (HTTP 401 NotAuthorizedException): The request signature we calculated does not match" \
  "iceberg_signing_region and iceberg_signing_name"
grep -q "wrong-aws-secret" err && fail "the secret is in the error: $(cat err)"
pod "$(url "$SV_port")" "${sigv4/eu-west-1/us-west-2}, $keys, $remap"
refresh_fails "Credential should be scoped to region 'eu-west-1'"
# SigV4 and a bearer token: refused together.
pod "$(url "$SV_port")" "$sigv4, iceberg_token: t, $remap"
tm config check -c pod.yaml >/dev/null 2>err && fail "config check accepted SigV4 and a token"
assert_contains "$(cat err)" "iceberg_sigv4_enabled signs catalog requests with AWS keys: it takes no 'iceberg_token'"

# ---- vended credentials -------------------------------------------------------------------
oauth="iceberg_oauth2_credential: 'client1:s3cr3t-client'"
# Explicit keys win over vended ones (iceberg-rust's rule): a wrong explicit secret is refused.
fresh
pod "$(url "$OA_port")" "$oauth, iceberg_s3_access_key_id: vendkey, iceberg_s3_secret_access_key: not-the-secret, $remap"
refresh_fails "access denied"
grep -q "GET /v1/main/namespaces/sales/tables/orders 200 auth=oauth2 delegation=- vended=no" OA.log \
  || fail "credentials were asked for although the params give keys: $(tail -3 OA.log)"
# Keys S3 refuses (the bucket's keys were rotated, the catalog's first answer is stale):
# the table is loaded again and the new keys read the files.
assert_eq "$(s3cmd keys vendkey2 vendsecret2 vendtoken2)" ok
assert_eq "$(catcmd OA vend vendkey2 vendsecret2 vendtoken2)" ok
assert_eq "$(catcmd OA vend-stale-once vendkey vendsecret vendtoken)" ok
pod "$(url "$OA_port")" "$oauth, $remap"
loads_before=$(catcmd OA stats | sed 's/.*loads=\([0-9]*\).*/\1/')
refresh_ok
assert_contains "$(cat out)" "orders: +4 rows"
assert_contains "$(cat err)" "loading the table again for the S3 credentials of s3://data/ (S3 refused them)"
loads_after=$(catcmd OA stats | sed 's/.*loads=\([0-9]*\).*/\1/')
assert_eq "$((loads_after - loads_before))" 2 "loadTable calls: describe and one renewal"
# Keys about to expire are renewed before they do: they live 2.5 s, S3 answers slowly.
fresh
assert_eq "$(catcmd OA vend-ttl 2500)" ok
assert_eq "$(s3cmd delay 700 8)" ok
refresh_ok
assert_contains "$(cat out)" "orders: +4 rows"
assert_contains "$(cat err)" "loading the table again for the S3 credentials of s3://data/ (they expire soon)"
assert_eq "$(s3cmd clear)" ok
# Already expired keys, and no keys at all: clear errors.
fresh
assert_eq "$(catcmd OA vend-expired)" ok
refresh_fails "the catalog vended S3 credentials for s3://data/ that expired" "$(url "$OA_port")"
assert_eq "$(catcmd OA vend-none)" ok
refresh_fails "access denied" "(the catalog vended no credentials for these files)"
assert_eq "$(catcmd OA vend vendkey2 vendsecret2 vendtoken2)" ok
# storage-credentials: the longest matching prefix's keys (not the decoy bucket's).
pod "$(url "$SC_port")" "iceberg_token: plain-token, $remap"
assert_eq "$(catcmd SC vend vendkey2 vendsecret2 vendtoken2)" ok
refresh_ok
assert_contains "$(cat out)" "orders: +4 rows"
assert_contains "$(cat err)" "S3 credentials for s3://data/ vended by the catalog (storage-credentials for s3://data/)"

# ---- nothing secret in any output ------------------------------------------------------------
for secret in s3cr3t-client vendsecret vendsecret2 vendtoken vendtoken2 plain-token $(cat tokens); do
  grep -qF -- "$secret" all-output && fail "'$secret' appears in tidemark's output: $(grep -F -- "$secret" all-output | head -3)"
done
[[ $(wc -l < tokens) -ge 3 ]] || fail "expected several tokens, got $(wc -l < tokens)"
echo ok
