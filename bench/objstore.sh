#!/usr/bin/env bash
# Object-store benchmark (issue 9): a ~100 MB object read by ranges from an
# S3-protocol server (npm s3rver on 127.0.0.1, started here) versus the same
# file on local disk: throughput, bytes transferred, request counts.
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
"$bin" --port "$port" --key "$key" --secret "$secret" --file "$file"
echo "two-column projection (bytes of a 100 MB Parquet object transferred): needs the"
echo "Parquet reader (src/format/parquet/parquet.h), not on main when this bench was written."
