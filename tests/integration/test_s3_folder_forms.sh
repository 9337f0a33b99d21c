#!/usr/bin/env bash
# Issue 18, SPEC A7, section 4: every way of writing a folder on S3 names the
# folder - s3://bucket/prefix/, s3://bucket/prefix, s3://bucket and
# s3://bucket/ - while s3://bucket/prefix/one.parquet is that one object; and
# the same for local folders (file:data/, file:data, file:./data). Each form
# loads the rows under it and nothing else, then appends a new object by
# last_modified (A7). Against npm s3rver on 127.0.0.1, SigV4 checked.
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir -p s3dir
coproc S3 { exec node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" \
  --dir "$T/s3dir" --buckets root,data --key tmkey --secret tmsecret; }
read -r -t 30 word port <&"${S3[0]}" || fail "s3rver did not start"
[[ $word == port ]] || fail "s3rver said [$word $port]"
put() { # FILE BUCKET/KEY
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user tmkey:tmsecret \
    -H "x-amz-content-sha256: $(sha256sum "$1" | cut -d" " -f1)" -T "$1" \
    "http://127.0.0.1:$port/$2" >/dev/null || fail "upload of $2"
}
write_parquets a.parquet "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t(id, v)" \
  b.parquet "SELECT * FROM (VALUES (3, 'c')) t(id, v)" other.parquet "SELECT * FROM (VALUES (100, 'x')) t(id, v)"
put a.parquet root/a.parquet             # the bucket "root" holds only data files
put a.parquet data/events/a.parquet      # "data": the folder events/, and a neighbour
put other.parquet data/events2/other.parquet
put other.parquet data/other.parquet
mkdir -p data && cp a.parquet data/
params="{s3_endpoint: 'http://127.0.0.1:$port', s3_region: us-east-1, s3_key: tmkey, s3_secret: tmsecret, allow_http: 'true'}"
forms=("s3://data/events/" "s3://data/events" "s3://root" "s3://root/" "file:data/" "file:data" "file:./data")
{
  echo "datasets:"
  for i in "${!forms[@]}"; do
    printf '  - from: %s\n    name: f%d\n    params: %s\n    time_column: last_modified\n    acceleration: {refresh_mode: append}\n' \
      "${forms[$i]}" "$i" "$([[ ${forms[$i]} == s3:* ]] && echo "$params" || echo '{}')"
  done
  printf '  - from: s3://data/events/a.parquet\n    name: one\n    params: %s\n' "$params"
} > tm.yaml
out=$(tm_refresh -c tm.yaml)
for i in "${!forms[@]}"; do
  assert_contains "$out" "f$i: +2 rows via time" "${forms[$i]}"
  assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM f$i")" "2,3" "${forms[$i]}: only the rows under it"
done
assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM one")" "2,3" "a single object"
# A new object under each folder: only it is read (A7).
sleep 1.2
put b.parquet root/b.parquet
put b.parquet data/events/b.parquet
cp b.parquet data/
out=$(tm_refresh -c tm.yaml)
for i in "${!forms[@]}"; do
  assert_contains "$out" "f$i: +1 rows via time" "${forms[$i]} after a new object"
  assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM f$i")" "3,6" "${forms[$i]} after a new object"
done
echo "s3 folder forms: ${#forms[@]} forms and a single object"
