#!/usr/bin/env bash
# PostgreSQL wire protocol benchmark (issue 20): point lookups from 16 pgbench
# clients (`-c 16 -j 2`, BENCH_SECONDS each, default 10) against `tidemark run
# --pg`, with the simple, extended and prepared query modes, side by side with
# the same pgbench script against a real PostgreSQL 15 (a temporary cluster
# started here as an unprivileged user, the same rows, a primary key on id).
# A second script, `SELECT :id::BIGINT` (no table), measures the protocol,
# the gate and DuckDB's per-statement cost without a scan. The peer on the
# same rows is DuckDB alone (bench_duck_lookup: 16 threads of its C API on the
# acceleration's database file, no protocol, DuckDB's per-statement settings
# pinned as tidemark pins them): the ceiling of tidemark's one SQL engine on
# this machine. The dataset has `indexes: {id: unique}` (what a user
# serving point lookups configures: an ART index), as PostgreSQL has its key.
# tidemark runs twice: with DuckDB's threads at their default (one per core)
# and with `runtime.query.threads: 1`, the configuration for serving many
# short queries (docs/PGWIRE.md "Throughput").
# Target (issue 20): at least 5,000 lookups/s in each mode on a 2-core machine.
# BENCH_PG_ROWS (default 1000000) changes the size; the Parquet file is the
# one bench/runtime.sh generates for that size.
set -euo pipefail
root=${TM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
bindir=${TM_BENCH_BIN_DIR:-$root/build/release}
bin=$bindir/tidemark
data=${BENCH_DATA:-$root/build/bench-data}
rows=${BENCH_PG_ROWS:-1000000}
secs=${BENCH_SECONDS:-10}
export NODE_PATH=${NODE_PATH:-$root/tests/node/node_modules}
command -v pgbench >/dev/null || { echo "pgwire bench: pgbench is missing (postgresql-client)" >&2; exit 1; }
[[ -x $bin ]] || { echo "pgwire bench: build the release first (make)" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

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
work=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-pg-XXXXXX")
chmod 755 "$work"
server=
pgdata=
cleanup() {
  if [[ -n $server ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [[ -n $pgdata ]]; then as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# PostgreSQL refuses to run as root: the cluster belongs to nobody then.
as_pg() { if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; else "$@"; fi; }

cat > "$work/lookup.sql" <<SQL
\set id random(0, $((rows - 1)))
SELECT * FROM events WHERE id = :id;
SQL
cat > "$work/noscan.sql" <<SQL
\set id random(0, $((rows - 1)))
SELECT :id::BIGINT AS id;
SQL

# run_modes LABEL HOST PORT SCRIPT: one pgbench run per mode; prints "LABEL mode tps latency failed".
run_modes() {
  local label=$1 host=$2 port=$3 script=$4 mode out tps
  for mode in simple extended prepared; do
    local t0=0 t1=0
    [[ -n ${cpu_pid:-} ]] && t0=$(awk '{print $14 + $15}' "/proc/$cpu_pid/stat")
    out=$(pgbench -n -h "$host" -p "$port" -U bench -c 16 -j 2 -T "$secs" \
      -M "$mode" -f "$work/$script.sql" tidemark 2>&1) || { echo "$out" >&2; echo "$label $mode 0 - 1"; continue; }
    tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
    if [[ -n ${cpu_pid:-} ]]; then
      t1=$(awk '{print $14 + $15}' "/proc/$cpu_pid/stat")
      n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
      echo "  $label $mode: server CPU $(( (t1 - t0) * 1000000 / $(getconf CLK_TCK) / (n > 0 ? n : 1) )) us per query" >&2
    fi
    lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out" | head -1)
    failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
    echo "$label $mode ${tps:-0} ${lat:-?} ${failed:-0}"
  done
}

# serve_run LABEL THREADS: starts tidemark (runtime.query.threads THREADS; "" for DuckDB's default,
# one per core) on the acceleration refreshed at the first run, and runs both scripts in every mode.
serve_run() {
  local label=$1 threads=$2
  {
    cat <<YAML
version: v1
kind: Spicepod
name: bench
datasets:
  - from: file:$src/events.parquet
    name: events
    time_column: ts
    acceleration: {engine: cayenne, mode: file, refresh_mode: full, primary_key: id,
                   refresh_check_interval: 1h, refresh_on_startup: auto, indexes: {id: unique}}
YAML
    if [[ -n $threads ]]; then printf 'runtime:\n  query:\n    threads: %s\n' "$threads"; fi
  } >"$work/tidemark.yaml"
  [[ -d $work/.tidemark ]] || (cd "$work" && "$bin" refresh -c tidemark.yaml >/dev/null 2>&1)
  TIDEMARK_LOG=info "$bin" run -c "$work/tidemark.yaml" --http 127.0.0.1:0 --metrics off \
    --pg 127.0.0.1:0 2>"$work/server.log" &
  server=$!
  port=
  for _ in $(seq 200); do
    port=$(sed -n 's/.*PostgreSQL wire protocol on .*(port \([0-9]*\)).*/\1/p' "$work/server.log" | head -1)
    [[ -n $port ]] && grep -q 'HTTP API listening' "$work/server.log" && break
    sleep 0.05
  done
  [[ -n $port ]] || { cat "$work/server.log" >&2; exit 1; }
  for _ in $(seq 200); do
    psql -X -q -h 127.0.0.1 -p "$port" -U bench -d tidemark -A -t -c 'SELECT count(*) FROM events' \
      >/dev/null 2>&1 && break
    sleep 0.1
  done
  cpu_pid=$server
  run_modes "$label" 127.0.0.1 "$port" lookup >>"$work/results"
  run_modes "$label-noscan" 127.0.0.1 "$port" noscan >>"$work/results"
  cpu_pid=
  kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=
}
: >"$work/results"
echo "point lookups: SELECT * FROM events WHERE id = <random>, $rows rows (cayenne), pgbench -c 16 -j 2 -T $secs, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
serve_run tidemark ""
serve_run tidemark1 1
# The peer on the same rows: DuckDB alone (its C API in process, no protocol, no tidemark) on the
# acceleration's own database file and index (the cayenne engine keeps the rows in table "rows").
# 16 threads as the 16 clients, and 2 (one per CPU); DuckDB's own threads setting at its default
# and at 1: the fastest of the four.
duck_qps=0 duck_threads=
for t in 16 2; do
  for d in default 1; do
    read -r _ _ q _ < <("$bindir/bench_duck_lookup" --db "$work/.tidemark/data/events/data.duckdb" \
      --table rows --max-id $((rows - 1)) --threads $t --seconds "$secs" \
      $([[ $d == default ]] || echo "--duckdb-threads $d"))
    if (( ${q:-0} > duck_qps )); then duck_qps=$q duck_threads="$t caller threads, DuckDB threads $d"; fi
  done
done

if [[ -n $pgbin && -x $pgbin/initdb ]]; then
  pgdata=$work/pg
  mkdir -p "$pgdata" && chown nobody:nogroup "$pgdata" 2>/dev/null || true
  as_pg "$pgbin/initdb" -D "$pgdata" -U bench -A trust >/dev/null
  pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  as_pg "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/log" -w -o "-p $pgport -k $pgdata -c listen_addresses=127.0.0.1 -c max_connections=40" start >/dev/null
  node "$root/tests/node/duckdb-query.mjs" "COPY (SELECT * FROM '$src/events.parquet') TO '$work/events.csv' (HEADER false)" >/dev/null
  chmod 644 "$work/events.csv"
  psql -X -q -h 127.0.0.1 -p "$pgport" -U bench -d postgres -c 'CREATE DATABASE tidemark' >/dev/null
  psql -X -q -h 127.0.0.1 -p "$pgport" -U bench -d tidemark -v ON_ERROR_STOP=1 \
    -c "CREATE TABLE events (id bigint PRIMARY KEY, ts timestamptz, region text, amount double precision, note text)" \
    -c "\\copy events FROM '$work/events.csv' WITH (FORMAT csv)" -c "VACUUM ANALYZE events" >/dev/null
  run_modes postgres 127.0.0.1 "$pgport" lookup >>"$work/results"
  run_modes postgres-noscan 127.0.0.1 "$pgport" noscan >>"$work/results"
else
  echo "(no PostgreSQL server binaries: the peer column is left empty; scripts/install-deps installs postgresql)"
fi

echo "duckdb-alone simple $duck_qps - 0" >>"$work/results"
awk '
  { tps[$1 "," $2] = $3; lat[$1 "," $2] = $4; fail[$1 "," $2] = $5 }
  function cell(k) { return (k in tps) ? sprintf("%10.0f", tps[k]) : sprintf("%10s", "-") }
  END {
    printf "\nqueries/s (16 clients)       point lookup                      SELECT :id::BIGINT (no table)\n"
    printf "%-9s %10s %10s %10s   %10s %10s %10s\n", "mode", "tidemark", "threads:1", "PostgreSQL",
      "tidemark", "threads:1", "PostgreSQL"
    miss = 0
    split("simple extended prepared", m, " ")
    for (i = 1; i <= 3; i++) {
      t = tps["tidemark1," m[i]] + 0
      ok = t >= 5000 && fail["tidemark1," m[i]] == 0
      if (!ok) miss++
      printf "%-9s %s %s %s   %s %s %s%s\n", m[i], cell("tidemark," m[i]), cell("tidemark1," m[i]),
        cell("postgres," m[i]), cell("tidemark-noscan," m[i]), cell("tidemark1-noscan," m[i]),
        cell("postgres-noscan," m[i]), ok ? "" : "  (lookup target missed)"
    }
    d = tps["duckdb-alone,simple"] + 0
    printf "\nDuckDB alone (C API in process, '"$duck_threads"', the same file and index): %.0f lookups/s;", d
    printf " tidemark over the wire (simple) is %.2f of it, %.2f with threads: 1\n",
      (d > 0 ? tps["tidemark,simple"] / d : 0), (d > 0 ? tps["tidemark1,simple"] / d : 0)
    printf "target: >= 5000 lookups/s in each mode with runtime.query.threads: 1 (the serving configuration, PGWIRE.md): %d of 3 met\n", 3 - miss
    exit miss > 0
  }' "$work/results"
