#!/usr/bin/env bash
# Runtime benchmark (issue 8): /v1/sql point lookups with 32 concurrent
# clients (wrk) against `tidemark run`, next to the same query in process
# (bench_sql: the SQL layer without HTTP, 1 thread and as many threads as the
# server's HTTP pool; and `tidemark sql -c`, one process per query, timed by
# hyperfine). For the sqlite engine (primary-key index)
# and cayenne (DuckDB storage: row-group min/max on a sorted id). Run by `make bench` (scripts/bench).
# BENCH_RUNTIME_ROWS (default 1000000) and BENCH_SECONDS (default 10) change
# the size and the duration.
set -euo pipefail
root=${TM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
bindir=${TM_BENCH_BIN_DIR:-$root/build/release}
bin=$bindir/tidemark
data=${BENCH_DATA:-$root/build/bench-data}
rows=${BENCH_RUNTIME_ROWS:-1000000}
secs=${BENCH_SECONDS:-10}
export NODE_PATH=${NODE_PATH:-$root/tests/node/node_modules}
for tool in wrk hyperfine node; do
  command -v $tool >/dev/null || { echo "runtime bench: $tool is missing (scripts/install-deps)" >&2; exit 1; }
done
[[ -x $bin && -x $bindir/bench_sql ]] || { echo "runtime bench: build the release first (make)" >&2; exit 1; }

mkdir -p "$data/runtime-$rows"
src=$(cd "$data/runtime-$rows" && pwd)
if [[ ! -s $src/events.parquet ]]; then
  echo "generating $rows rows with DuckDB"
  node "$root/tests/node/duckdb-query.mjs" "COPY (SELECT i AS id,
      TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts,
      'region-' || (i % 16) AS region, (i * 7919) % 100000 / 100.0 AS amount,
      md5(i::VARCHAR) AS note
    FROM range($rows) t(i)) TO '$src/events.parquet' (FORMAT PARQUET, ROW_GROUP_SIZE 100000)" >/dev/null
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-rt-XXXXXX")
server=
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/lookup.lua" <<LUA
math.randomseed(42)
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain"
request = function()
  return wrk.format(nil, nil, nil, "SELECT * FROM events WHERE id = " .. math.random(0, $((rows - 1))))
end
LUA

printf '%s\n' "point lookups: SELECT * FROM events WHERE id = <random>, $rows rows, ${secs}s each, $(nproc) CPUs"
for engine in sqlite cayenne; do
  dir=$work/$engine
  mkdir -p "$dir"
  cat > "$dir/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: bench
datasets:
  - from: file:$src/events.parquet
    name: events
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: full, primary_key: id}
YAML
  t0=$(date +%s.%N)
  "$bin" refresh -c "$dir/tidemark.yaml" >/dev/null 2>&1
  load=$(echo "$(date +%s.%N) - $t0" | bc)
  echo
  echo "== $engine (load: $rows rows in ${load}s)"

  TIDEMARK_LOG=warn "$bin" run -c "$dir/tidemark.yaml" --http 127.0.0.1:0 --metrics off \
    2> "$dir/server.log" &
  server=$!
  for _ in $(seq 100); do
    grep -q 'HTTP API listening' "$dir/server.log" 2>/dev/null && break
    sleep 0.1
  done
  TIDEMARK_LOG=info
  port=$(sed -n 's/.*HTTP API listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$dir/server.log" | head -1)
  if [[ -z $port ]]; then
    # warn hides the listening line: ask the kernel.
    port=$(ss -ltnp 2>/dev/null | awk -v p="pid=$server," '$0 ~ p {split($4, a, ":"); print a[length(a)]; exit}')
  fi
  [[ -n $port ]] || { cat "$dir/server.log" >&2; echo "runtime bench: no port" >&2; exit 1; }
  for _ in $(seq 100); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/ready") == 200 ]] && break
    sleep 0.1
  done
  one=$(curl -s -d "SELECT * FROM events WHERE id = 12345" "http://127.0.0.1:$port/v1/sql")
  [[ $one == *'"id":12345'* ]] || { echo "runtime bench: unexpected answer: $one" >&2; exit 1; }
  wrk -t2 -c32 -d"${secs}s" --latency -s "$work/lookup.lua" "http://127.0.0.1:$port/v1/sql" \
    > "$dir/wrk.txt"
  rps=$(awk '/^Requests\/sec/ {print $2}' "$dir/wrk.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$dir/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.txt")
  bad=$(awk '/Non-2xx/ {print $NF}' "$dir/wrk.txt")
  errs=$(awk '/Socket errors/ {print}' "$dir/wrk.txt")
  kill -TERM "$server"
  wait "$server" || true
  server=

  printf '%-40s %10s %10s %10s\n' "" "queries/s" "p50" "p99"
  printf '%-40s %10s %10s %10s%s\n' "HTTP /v1/sql, wrk 32 connections" "$rps" "$p50" "$p99" \
    "${bad:+  ($bad non-2xx)}${errs:+  ($errs)}"
  for t in 1 4; do
    read -r _ n qps ip50 ip99 _ < <("$bindir/bench_sql" -c "$dir/tidemark.yaml" --table events \
      --max-id $((rows - 1)) --threads $t --seconds "$secs")
    printf '%-40s %10s %10s %10s\n' "in process (bench_sql), $t thread(s)" "$qps" "${ip50}ms" "${ip99}ms"
  done
  hyperfine -N --warmup 3 --runs 40 --export-json "$dir/hf.json" \
    "$bin sql -c $dir/tidemark.yaml --format json 'SELECT * FROM events WHERE id = 777'" >/dev/null 2>&1
  read -r hmed hp99 < <(python3 - "$dir/hf.json" <<'PY'
import json, sys
t = sorted(json.load(open(sys.argv[1]))["results"][0]["times"])
print("%.2fms %.2fms" % (t[len(t) // 2] * 1000, t[min(len(t) - 1, int(len(t) * 0.99))] * 1000))
PY
)
  printf '%-40s %10s %10s %10s\n' "tidemark sql -c (a process per query)" \
    "$(python3 -c "print('%.0f' % (1000 / float('${hmed%ms}')))")" "$hmed" "$hp99"
done
