#!/usr/bin/env bash
# Query benchmark (issue 15): is an acceleration faster than no acceleration?
# The events data of bench/parquet.sh (10 files x 1M rows, ZSTD) loaded into
# cayenne (file mode) by `tidemark refresh`, served by `tidemark run`; ten
# analytical queries over POST /v1/sql next to DuckDB (the same release, the
# same threads) over its own table of the same rows and over the raw Parquet
# files (bench/query.mjs; medians of BENCH_RUNS runs, default 7).
# Targets: each query at most 1.5x DuckDB's table time + 2 ms of HTTP, and
# faster than DuckDB over the Parquet files; the acceleration on disk at most
# 1.2x DuckDB's database; the load's peak RSS under 400 MB.
set -euo pipefail
: "${TM_BENCH_BIN_DIR:?run through make bench}" "${BENCH_DATA:?}" "${TM_SOURCE_DIR:?}"
tm=$TM_BENCH_BIN_DIR/tidemark
events=$BENCH_DATA/parquet-events
mkdir -p "$events"
node "$TM_SOURCE_DIR/tests/node/bench-parquet.mjs" gen "$events" 11 1000000
threads=$(nproc)
runs=${BENCH_RUNS:-7}
w=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-query-XXXXXX")
server=
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$w"
}
trap cleanup EXIT
mkdir -p "$w/data"
for i in 0 1 2 3 4 5 6 7 8 9; do ln -s "$events/events-$i.parquet" "$w/data/"; done
cat > "$w/tidemark.yaml" <<YAML
datasets:
  - from: file:data
    name: events
    time_column: ts
    acceleration: {engine: cayenne, mode: file, refresh_mode: append, refresh_check_interval: 1h}
YAML
echo "machine: $threads cores, load $(cut -d' ' -f1-3 /proc/loadavg); DuckDB $("$tm" sql -c "$w/tidemark.yaml" --format csv "SELECT version()" 2>/dev/null | tail -1)"

/usr/bin/time -f "%e %M" "$tm" refresh -c "$w/tidemark.yaml" >"$w/load.out" 2>"$w/load.time"
read -r load_s load_kb < <(tail -n1 "$w/load.time")
load_mb=$((load_kb / 1024))
peer=$(node "$TM_SOURCE_DIR/bench/query.mjs" --load "$w/peer.duckdb" "$w/data/*.parquet" "$threads")
ours_bytes=$(du -cb "$w"/.tidemark/data/events/data.duckdb* | tail -1 | cut -f1)
peer_bytes=$(du -cb "$w"/peer.duckdb* | tail -1 | cut -f1)
echo "load of 10M rows: tidemark refresh ${load_s} s, peak RSS ${load_mb} MB; DuckDB CREATE TABLE AS: ${peer%% *}"
echo "on disk: tidemark $((ours_bytes / 1000000)) MB, DuckDB $((peer_bytes / 1000000)) MB"

TIDEMARK_LOG=info "$tm" run -c "$w/tidemark.yaml" --http 127.0.0.1:0 --metrics off 2>"$w/server.log" &
server=$!
for _ in $(seq 200); do grep -q 'HTTP API listening' "$w/server.log" && break; sleep 0.05; done
port=$(sed -n 's/.*HTTP API listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$w/server.log" | head -1)
[[ -n $port ]] || { cat "$w/server.log" >&2; exit 1; }
for _ in $(seq 200); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/ready") == 200 ]] && break
  sleep 0.05
done
node "$TM_SOURCE_DIR/bench/query.mjs" "http://127.0.0.1:$port" "$w/peer.duckdb" "$w/data/*.parquet" \
  "$threads" "$runs" >"$w/results"
kill -TERM "$server"; wait "$server" || true; server=

awk -v ours="$ours_bytes" -v peer="$peer_bytes" -v rss="$load_mb" '
  $1 == "RESULT" { n++; name[n] = $2; t[n] = $3; d[n] = $4; p[n] = $5 }
  END {
    printf "\n%-17s %12s %12s %12s %9s %11s\n", "query (median ms)", "tidemark", "DuckDB table", "DuckDB files", "vs table", "vs files"
    miss = 0
    for (i = 1; i <= n; i++) {
      ok = t[i] <= 1.5 * d[i] + 2 && t[i] < p[i]
      if (!ok) miss++
      printf "%-17s %12.2f %12.2f %12.2f %8.2fx %10.2fx%s\n", name[i], t[i], d[i], p[i], t[i] / d[i], t[i] / p[i], ok ? "" : "  MISSED"
    }
    printf "\ntarget per query: <= 1.5x DuckDB table + 2 ms, and < DuckDB files: %d of %d met\n", n - miss, n
    printf "size: %.2fx DuckDB (target <= 1.2)\n", ours / peer
    printf "peak RSS of the 10M-row load: %d MB (target < 400)\n", rss
    if (ours > 1.2 * peer) miss++
    if (rss >= 400) miss++
    exit miss > 0
  }' "$w/results"
