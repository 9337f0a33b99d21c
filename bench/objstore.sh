#!/usr/bin/env bash
# Object-store benchmark (issue 9): a ~100 MB object read by ranges from an
# S3-protocol server (npm s3rver on 127.0.0.1, started here) versus the same
# file on local disk: throughput, bytes transferred, request counts; then a
# two-column projection of a ~100 MB Parquet object (10 columns, written
# once by DuckDB), reporting the bytes transferred against the file size.
# Then the same projection from Azurite (issue 18: at most 25% of the object
# transferred), and a listing of BENCH_LIST_N (10,000) objects on s3rver and
# on Azurite side by side (Azure at most 1.5x the S3 time). The program
# exits non-zero when a target is missed.
# Run by `make bench` (scripts/bench); BENCH_OBJSTORE_MB changes the size.
set -euo pipefail
root=${TM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${TM_BENCH_BIN_DIR:-$root/build/release}/bench_objstore
data=${BENCH_DATA:-$root/build/bench-data}
mb=${BENCH_OBJSTORE_MB:-100}
[[ -x $bin ]] || { echo "objstore bench: $bin is missing (make release)" >&2; exit 1; }
mkdir -p "$data"
data=$(cd "$data" && pwd)
file=$data/objstore-${mb}mb.bin
if [[ ! -s $file ]]; then
  # Incompressible bytes, generated once.
  head -c $((mb * 1024 * 1024)) /dev/urandom > "$file.tmp" && mv "$file.tmp" "$file"
fi
parquet=$data/objstore-projection.parquet
if [[ ! -s $parquet ]]; then
  node "$root/tests/node/duckdb-query.mjs" "COPY (SELECT i::BIGINT AS id,
    (i * 2654435761 % 1000003)::BIGINT AS c1, random() AS c2, random() AS c3, random() AS c4,
    random() AS c5, random() AS c6, random() AS c7, random() AS c8, random() AS c9
    FROM range(1300000) t(i)) TO '$parquet.tmp'
    (FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 131072)" > /dev/null
  mv "$parquet.tmp" "$parquet"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-s3-XXXXXX")
fifo=$work/cmd
mkfifo "$fifo"
key=AKBENCH
secret=bench-secret
# The launcher exits when its stdin closes: hold the fifo open while the bench runs.
node --openssl-legacy-provider "$root/tests/node/s3rver-start.mjs" --dir "$work/s3" \
  --buckets bench --key "$key" --secret "$secret" < "$fifo" > "$work/out" &
pid=$!
exec 3> "$fifo"
cleanup() { exec 3>&- || true; kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do
  grep -q '^port ' "$work/out" 2>/dev/null && break
  sleep 0.1
done
port=$(awk '/^port /{print $2; exit}' "$work/out")
[[ -n $port ]] || { echo "objstore bench: s3rver did not start" >&2; exit 1; }
azmain=$root/tests/node/node_modules/azurite/dist/src/blob/main.js
[[ -f $azmain ]] || { echo "objstore bench: azurite is missing (scripts/install-test-deps)" >&2; exit 1; }
node "$azmain" --blobHost 127.0.0.1 --blobPort 0 --inMemoryPersistence --extentMemoryLimit 1024 \
  --disableTelemetry --silent > "$work/azurite.out" 2>&1 &
azpid=$!
cleanup() {
  exec 3>&- || true
  kill "$pid" "$azpid" 2>/dev/null || true
  wait "$pid" "$azpid" 2>/dev/null || true
  rm -rf "$work"
}
azport=
for _ in $(seq 150); do
  azport=$(sed -n 's|.*successfully listens on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/azurite.out")
  [[ -n $azport ]] && break
  sleep 0.1
done
[[ -n $azport ]] || { cat "$work/azurite.out" >&2; echo "objstore bench: azurite did not start" >&2; exit 1; }
az_ep=http://127.0.0.1:$azport/devstoreaccount1
python3 "$root/tests/tools/azblob.py" --endpoint "$az_ep" mkcontainer bench
"$bin" --port "$port" --key "$key" --secret "$secret" --file "$file" --parquet "$parquet" \
  --azure "$az_ep" --list "${BENCH_LIST_N:-10000}"
