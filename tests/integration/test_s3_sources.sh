#!/usr/bin/env bash
# Issue 9, SPEC A7, D3, section 4: sources on an S3-compatible store (npm
# s3rver on 127.0.0.1 behind a proxy that checks SigV4 signatures).
# - s3://BUCKET/PREFIX with last_modified: a new object appears and only it is read;
# - an Iceberg table on S3 is read, then followed snapshot by snapshot;
# - wrong credentials give a clear error;
# - with the server stopped the refresh fails and the acceleration keeps serving.
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir -p s3dir
coproc S3 { exec node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" \
  --dir "$T/s3dir" --buckets data --key tmkey --secret tmsecret; }
read -r -t 30 word port <&"${S3[0]}" || fail "s3rver did not start"
[[ $word == port ]] || fail "s3rver said [$word $port]"
put() {
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user tmkey:tmsecret \
    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
    "http://127.0.0.1:$port/data/$2" >/dev/null || fail "upload of $2"
}
params="{s3_endpoint: 'http://127.0.0.1:$port', s3_region: us-east-1, s3_key: tmkey, s3_secret: tmsecret, allow_http: 'true'}"
cat > tm.yaml <<YAML
datasets:
  - from: s3://data/events/
    name: objects
    params: $params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: iceberg:s3://data/wh/ice
    name: ice
    params: $params
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
# Objects: a Parquet file now, another one later.
write_parquet a.parquet "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t(id, v)"
put a.parquet events/a.parquet
# An Iceberg table authored locally, then copied to the bucket.
ice_create wh/ice
ice_append wh/ice "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b"
upload_table() { (cd wh && find ice -type f | while read -r f; do put "$f" "wh/$f"; done); }
upload_table
out=$(tm_refresh -c tm.yaml)
assert_contains "$out" "objects: +2 rows via time"
assert_contains "$out" "ice: +2 rows via time"
sleep 1.2
write_parquet b.parquet "SELECT * FROM (VALUES (3, 'c')) t(id, v)"
put b.parquet events/b.parquet
ice_append wh/ice "3,2026-11-30T09:00:00Z,early"
upload_table
TIDEMARK_LOG=info tm refresh -c tm.yaml >out 2>log
assert_contains "$(cat out)" "objects: +1 rows via time"
assert_contains "$(cat log)" "[objects] refresh finished: +1 rows via time in"
assert_contains "$(cat log)" "files 1 read, 1 skipped"
assert_contains "$(cat out)" "ice: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM objects")" "3,6"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM ice")" "3,6"
# Wrong credentials: a clear error naming the cause.
sed -e 's/s3_secret: tmsecret/s3_secret: wrong/' tm.yaml > bad.yaml
set +e
tm refresh -c bad.yaml objects >/dev/null 2>err; rc=$?
set -e
assert_eq "$rc" 1
assert_contains "$(cat err)" "access denied"
# The server stops: the refresh fails as unavailable, the acceleration serves.
kill "$S3_PID"; wait "$S3_PID" 2>/dev/null || true
set +e
tm refresh -c tm.yaml objects >/dev/null 2>err; rc=$?
set -e
assert_eq "$rc" 1
assert_contains "$(cat err)" "127.0.0.1:$port"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM objects")" "3"
echo ok
