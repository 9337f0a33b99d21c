#!/usr/bin/env bash
# Acceleration snapshots on an S3-compatible store (SPEC C2): `tidemark run`
# writes a cayenne snapshot to s3://BUCKET/PREFIX on an s3rver (with SigV4
# checked by the test proxy), and a second start with an empty disk and no
# source bootstraps from it and serves at once (C1).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

key=AKTIDEMARK
secret=tidemark-test-secret
mkfifo "$T/s3cmd"
node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" --dir "$T/s3" \
  --buckets snaps --key "$key" --secret "$secret" < "$T/s3cmd" > "$T/s3out" 2> "$T/s3err" &
s3pid=$!
exec 3> "$T/s3cmd" # s3rver runs while this stays open (lib.sh's exit trap kills it on failure)
for _ in $(seq 100); do
  grep -q '^port ' "$T/s3out" 2>/dev/null && break
  sleep 0.1
done
s3port=$(awk '/^port /{print $2; exit}' "$T/s3out")
[[ -n $s3port ]] || { cat "$T/s3err" >&2; fail "s3rver did not start"; }

mkdir -p "$T/data"
gen_jsonl "$T/data/a.jsonl" 1 6
write_config() {
  cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: s3snaps
snapshots:
  enabled: true
  location: s3://snaps/tidemark/prod
  params:
    s3_endpoint: http://127.0.0.1:$s3port
    s3_key: $key
    s3_secret: $secret
    s3_region: us-east-1
    allow_http: "true"
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: cayenne, mode: file, refresh_mode: append, snapshots: $1}
YAML
}

write_config enabled
start_server "$T/tidemark.yaml"
wait_until 20 count_is events 6 || fail "first load"
wait_until 20 grep -q '\[events\] acceleration snapshot written: s3://snaps/tidemark/prod/dataset=events/events_.*\.duckdb' \
  "$SERVER_LOG" || { cat "$SERVER_LOG" >&2; fail "no snapshot on S3"; }
stop_server
n=$(find "$T/s3" -path '*dataset=events*' -name 'events_*' | wc -l)
[[ $n -ge 1 ]] || fail "no object in the s3rver folder"

rm -rf "$T/.tidemark" "$T/data"
write_config bootstrap_only
start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready after an S3 bootstrap"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 6 "rows restored from S3"
grep -q '\[events\] acceleration restored from snapshot s3://snaps' "$SERVER_LOG" || fail "restore logged"
stop_server
exec 3>&-
wait "$s3pid" || true
echo ok
