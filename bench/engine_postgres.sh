#!/usr/bin/env bash
# engine: postgres load benchmark (issue 20), side by side with PostgreSQL's own
# COPY of the same rows from a CSV file, in one run against one throwaway
# PostgreSQL 15 server (tests/integration/pg_lib.sh; fsync on, as shipped).
#   1. `tidemark refresh` (full) of N rows from Parquet into engine: postgres
#      (binary COPY in one transaction, unkeyed);
#   2. the peer: `COPY t FROM '<file>.csv' (FORMAT csv, HEADER)` run by the
#      server itself into a table of the same column types, in one transaction;
#   3. the same load keyed (primary_key: id, on_conflict: upsert: staged, then
#      INSERT ... ON CONFLICT) against the peer's COPY into a keyed table.
# BENCH_PG_ROWS (default 10000000) sets N.
set -euo pipefail
: "${TM_BENCH_BIN_DIR:?run through make bench}" "${BENCH_DATA:?}" "${TM_SOURCE_DIR:?}"
N=${BENCH_PG_ROWS:-10000000}
TM_BIN=$TM_BENCH_BIN_DIR/tidemark
T=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-pg-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$TM_SOURCE_DIR/tests/integration/pg_lib.sh"
pg_start
export NODE_PATH=${NODE_PATH:-$TM_SOURCE_DIR/tests/node/node_modules}
data=$BENCH_DATA/pg-events-$N
mkdir -p "$data/parquet"
if [[ ! -s $data/events.csv ]]; then
  q="SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 100 MILLISECOND AS ts,
       'region-' || (i % 17) AS region, (i % 100000) / 100.0 AS amount, 'note ' || (i * 7919 % 1000003) AS note
     FROM range($N) t(i)"
  node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY ($q) TO '$data/parquet/events.parquet' (FORMAT PARQUET)" >/dev/null
  node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY (SELECT id, strftime(ts, '%Y-%m-%d %H:%M:%S.%f+00') AS ts, region, amount, note FROM '$data/parquet/events.parquet') TO '$data/events.csv' (FORMAT CSV, HEADER)" >/dev/null
fi
cp "$data/events.csv" "$PG_DIR/events.csv"
chmod 644 "$PG_DIR/events.csv"
cols="id bigint, ts timestamptz, region text COLLATE \"C\", amount double precision, note text COLLATE \"C\""

run_case() { # NAME YAML-EXTRA PEER-KEY
  local name=$1 extra=$2 key=$3
  mkdir -p "$T/$name"
  cat > "$T/$name/tm.yaml" <<YAML
datasets:
  - from: file:$data/parquet
    name: ev_$name
    acceleration:
      engine: postgres
      refresh_mode: full$extra
$(pg_params)
YAML
  local s e
  s=$(date +%s%N)
  "$TM_BIN" refresh -c "$T/$name/tm.yaml" | sed 's/^/   /'
  e=$(date +%s%N)
  local ours=$(( (e - s) / 1000000 ))
  pg_psql -c "CREATE TABLE peer_$name ($cols$key)" >/dev/null
  s=$(date +%s%N)
  pg_psql -c "BEGIN" -c "COPY peer_$name FROM '$PG_DIR/events.csv' (FORMAT csv, HEADER)" -c "COMMIT" >/dev/null
  e=$(date +%s%N)
  local peer=$(( (e - s) / 1000000 ))
  local n_ours n_peer
  n_ours=$(pg_psql -c "SELECT count(*) FROM ev_$name")
  n_peer=$(pg_psql -c "SELECT count(*) FROM peer_$name")
  [[ $n_ours == "$N" && $n_peer == "$N" ]] || fail "row counts: tidemark $n_ours, COPY $n_peer, want $N"
  echo "   tidemark refresh (whole process): ${ours} ms; PostgreSQL COPY from CSV: ${peer} ms"
  awk -v a="$ours" -v b="$peer" 'BEGIN { printf "   => tidemark %.2fx the peer'"'"'s time (target <= 1.0)\n", a / b }'
  pg_psql -c "DROP TABLE peer_$name" >/dev/null
}

echo "-- 1. load $N rows, unkeyed"
run_case plain "" ""
echo "-- 2. load $N rows keyed (primary_key: id, on_conflict: upsert)"
run_case keyed $'\n      primary_key: id\n      on_conflict: {id: upsert}' ", PRIMARY KEY (id)"
pg_stop
rm -rf "$T"
