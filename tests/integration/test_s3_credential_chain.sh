#!/usr/bin/env bash
# Issue 17, SPEC section 4 (Spice's s3_auth: iam_role): the AWS default
# credential chain, each link against a loopback server, signing real
# requests to s3rver (which checks SigV4 with its one key pair):
#   environment, shared credentials file (default profile), config file
#   (AWS_PROFILE), web identity (STS AssumeRoleWithWebIdentity), container
#   credentials (FULL_URI with a token file, RELATIVE_URI refused off ECS),
#   IMDSv2 (token PUT first); refusals: keys beside iam_role, a role_arn
#   profile, a missing named profile, wrong keys, no credentials at all.
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir -p s3dir home/.aws
coproc S3 { exec node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" \
  --dir "$T/s3dir" --buckets data --key chainkey --secret chainsecret; }
read -r -t 30 word port <&"${S3[0]}" || fail "s3rver did not start"
[[ $word == port ]] || fail "s3rver said [$word $port]"
python3 "$TM_SOURCE_DIR/tests/tools/aws_creds_server.py" --key chainkey --secret chainsecret \
  --auth "Bearer ctoken" --log "$T/creds.log" >creds.port &
CREDS_PID=$!
for _ in $(seq 100); do [[ -s creds.port ]] && break; sleep 0.1; done
read -r word cport < creds.port || fail "credentials server did not start"
[[ $word == port ]] || fail "credentials server said [$word $cport]"
write_parquet a.parquet "SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) t(id, v)"
curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user chainkey:chainsecret \
  -H "x-amz-content-sha256: $(sha256sum a.parquet | cut -d" " -f1)" -T a.parquet \
  "http://127.0.0.1:$port/data/events/a.parquet" >/dev/null || fail "upload"
cat > tm.yaml <<YAML
datasets:
  - from: s3://data/events/
    name: events
    params: {s3_auth: iam_role, s3_endpoint: 'http://127.0.0.1:$port', s3_region: us-east-1, allow_http: 'true'}
    acceleration: {enabled: true}
YAML
# Each case starts from an environment with no AWS settings and an empty HOME.
chain() {
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
    -u AWS_SHARED_CREDENTIALS_FILE -u AWS_CONFIG_FILE -u AWS_WEB_IDENTITY_TOKEN_FILE \
    -u AWS_ROLE_ARN -u AWS_CONTAINER_CREDENTIALS_FULL_URI -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
    -u AWS_CONTAINER_AUTHORIZATION_TOKEN -u AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
    -u AWS_ENDPOINT_URL_STS -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_S3 \
    HOME="$T/home" AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:1" "$@"
}
ok_case() { # NAME ENV... : the refresh succeeds and the rows are there
  local name=$1; shift
  rm -rf .tidemark
  chain "$@" "$TM_BIN" refresh -c tm.yaml >out 2>err || fail "$name: $(cat err)"
  assert_contains "$(cat out)" "events: 3 rows via full refresh" "$name"
  assert_eq "$(chain "$@" "$TM_BIN" sql -c tm.yaml --format csv "SELECT count(*), sum(id) FROM events" | tail -n +2 | tr -d '\r')" "3,6" "$name"
}
bad_case() { # NAME TEXT ENV... : the refresh fails naming TEXT
  local name=$1 text=$2; shift 2
  rm -rf .tidemark
  set +e
  chain "$@" "$TM_BIN" refresh -c tm.yaml >out 2>err; rc=$?
  set -e
  assert_eq "$rc" 1 "$name: exit code"
  assert_contains "$(cat err)" "$text" "$name"
}
ok_case environment AWS_ACCESS_KEY_ID=chainkey AWS_SECRET_ACCESS_KEY=chainsecret
printf '[default]\naws_access_key_id = chainkey\naws_secret_access_key = chainsecret\n' > home/.aws/credentials
ok_case "credentials file"
rm home/.aws/credentials
printf '# a comment\n[profile other]\naws_access_key_id=chainkey\naws_secret_access_key=chainsecret\naws_session_token=tok\n[default]\nregion = us-east-1\n' > cfg
ok_case "config file profile" AWS_CONFIG_FILE="$T/cfg" AWS_PROFILE=other
bad_case "missing profile" "AWS_PROFILE=nope: no such profile" AWS_CONFIG_FILE="$T/cfg" AWS_PROFILE=nope
printf '[profile assumed]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = other\n' > cfg2
bad_case "role_arn profile" "AWS profile assumed uses role_arn, which tidemark does not run" \
  AWS_CONFIG_FILE="$T/cfg2" AWS_PROFILE=assumed
printf 'web-identity-token\n' > wit
: > creds.log
ok_case "web identity" AWS_WEB_IDENTITY_TOKEN_FILE="$T/wit" AWS_ROLE_ARN=arn:aws:iam::1:role/web \
  AWS_ENDPOINT_URL_STS="http://127.0.0.1:$cport/sts"
assert_contains "$(cat creds.log)" "POST /sts"
printf 'forged\n' > wit2
bad_case "bad web identity token" "the web identity token is not valid" \
  AWS_WEB_IDENTITY_TOKEN_FILE="$T/wit2" AWS_ROLE_ARN=arn:aws:iam::1:role/web \
  AWS_ENDPOINT_URL_STS="http://127.0.0.1:$cport/sts"
printf 'Bearer ctoken\n' > ctok
: > creds.log
ok_case "container" AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$cport/container/creds" \
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$T/ctok"
assert_contains "$(cat creds.log)" "GET /container/creds"
bad_case "container without its token" "container credentials at http://127.0.0.1:$cport/container/creds: HTTP 403" \
  AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$cport/container/creds"
bad_case "container on a foreign host" "plain http must be a loopback" \
  AWS_CONTAINER_CREDENTIALS_FULL_URI="http://example.com/creds"
: > creds.log
ok_case "IMDSv2" AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$cport"
assert_eq "$(head -3 creds.log | tr '\n' '|')" \
  "PUT /latest/api/token|GET /latest/meta-data/iam/security-credentials/|GET /latest/meta-data/iam/security-credentials/tidemark-test-role|"
bad_case "wrong keys" "to the keys of the AWS credential chain (s3_auth: iam_role)" \
  AWS_ACCESS_KEY_ID=chainkey AWS_SECRET_ACCESS_KEY=wrong
bad_case "nothing" "no AWS credentials found (environment: AWS_ACCESS_KEY_ID unset; shared files" \
  AWS_EC2_METADATA_DISABLED=true
assert_contains "$(cat err)" "IMDS: AWS_EC2_METADATA_DISABLED=true"
bad_case "IMDS unreachable" "IMDS (http://127.0.0.1:1)"
# Keys beside iam_role are refused by config check, as at load.
sed -e 's/s3_auth: iam_role,/s3_auth: iam_role, s3_key: k, s3_secret: s,/' tm.yaml > keys.yaml
set +e
tm config check -c keys.yaml >out 2>err; rc=$?
set -e
assert_eq "$rc" 2
assert_contains "$(cat err)" "s3_auth: iam_role takes no s3_key"
echo ok
