#!/usr/bin/env bash
# engine: postgres query rate (issue 20, docs/SCALING.md): point lookups by
# primary key over HTTP (/v1/sql, wrk: 2 threads, 16 connections per process,
# 10 s) against one `tidemark run` and then two `tidemark run` processes
# serving the same acceleration in one PostgreSQL server, side by side with
# the same lookups sent to PostgreSQL itself (pgbench, 16 clients, prepared).
# BENCH_PG_QROWS (default 1000000) rows, keyed by id.
set -euo pipefail
: "${TM_BENCH_BIN_DIR:?run through make bench}" "${BENCH_DATA:?}" "${TM_SOURCE_DIR:?}"
N=${BENCH_PG_QROWS:-1000000}
TM_BIN=$TM_BENCH_BIN_DIR/tidemark
T=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-pgq-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$TM_SOURCE_DIR/tests/integration/pg_lib.sh"
pg_start
export NODE_PATH=${NODE_PATH:-$TM_SOURCE_DIR/tests/node/node_modules}
mkdir -p "$T/data" "$T/a" "$T/b"
node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY (SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 100 MILLISECOND AS ts, 'region-' || (i % 17) AS region, (i % 100000) / 100.0 AS amount FROM range($N) t(i)) TO '$T/data/events.parquet' (FORMAT PARQUET)" >/dev/null
for d in a b; do
  cat > "$T/$d/tm.yaml" <<YAML
datasets:
  - from: file:$T/data
    name: events
    acceleration:
      engine: postgres
      refresh_mode: full
      refresh_check_interval: 1h
      refresh_on_startup: auto
      primary_key: id
$(pg_params)
YAML
done
"$TM_BIN" refresh -c "$T/a/tm.yaml" | sed 's/^/   /'
cat > "$T/lookup.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "text/plain"
request = function()
  return wrk.format(nil, nil, nil, "SELECT * FROM events WHERE id = " .. math.random(0, $((N - 1))))
end
LUA
start() { # DIR -> PORT
  "$TM_BIN" run -c "$T/$1/tm.yaml" --http 127.0.0.1:0 --metrics 127.0.0.1:0 >"$T/$1/out" 2>"$T/$1/log" &
  echo $! > "$T/$1/pid"
  for _ in $(seq 300); do
    grep -q 'HTTP API listening on' "$T/$1/log" 2>/dev/null && break
    sleep 0.1
  done
  local port
  port=$(sed -n 's/.*HTTP API listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$T/$1/log" | head -1)
  for _ in $(seq 300); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/ready") == 200 ]] && break
    sleep 0.1
  done
  echo "$port"
}
run_wrk() { wrk -t2 -c16 -d10s --latency -s "$T/lookup.lua" "http://127.0.0.1:$1/v1/sql" > "$2"; }
pa=$(start a)
run_wrk "$pa" "$T/one.txt"
one=$(awk '/^Requests\/sec/ {print $2}' "$T/one.txt")
echo "-- point lookups, one tidemark process: $one q/s (p50 $(awk '$1 == "50%" {print $2}' "$T/one.txt"), p99 $(awk '$1 == "99%" {print $2}' "$T/one.txt"))"
pb=$(start b)
run_wrk "$pa" "$T/two_a.txt" & w=$!
run_wrk "$pb" "$T/two_b.txt"
wait $w
two=$(awk '/^Requests\/sec/ {s += $2} END {printf "%.0f", s}' "$T/two_a.txt" "$T/two_b.txt")
echo "-- point lookups, two tidemark processes on the one acceleration: $two q/s in all"
kill "$(cat "$T/a/pid")" "$(cat "$T/b/pid")"; wait 2>/dev/null || true
printf '\\set id random(0, %d)\nSELECT * FROM events WHERE id = :id;\n' "$((N - 1))" > "$T/pgb.sql"
peer=$(PGPASSWORD=$PG_PASS "$PG_BIN/pgbench" -n -M prepared -c 16 -j 2 -T 10 -f "$T/pgb.sql" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" postgres 2>/dev/null | awk '/^tps/ {print $3; exit}')
echo "-- the same lookups sent to PostgreSQL itself (pgbench, 16 clients): $peer q/s"
pg_stop
rm -rf "$T"
