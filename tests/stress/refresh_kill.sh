#!/usr/bin/env bash
# Issue 6 kill test (SPEC D1): `tidemark refresh` killed with SIGKILL at random
# instants during an append. After each kill the acceleration holds exactly a
# committed state (the rows before this refresh, or all of them), and the next
# refresh completes it with no duplicate and no missing row: the source and the
# acceleration agree as multisets of full rows (signatures computed by DuckDB
# on the Parquet files and by tidemark's SQL on the acceleration).
# Short in `make check`; TM_STRESS=1 runs 120 trials per engine (cayenne, duckdb, sqlite; file mode).
source "$(dirname "$0")/../integration/lib.sh"
seed_random refresh_kill
trials=${TM_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 120 || echo 3)}
rows=${TM_KILL_ROWS:-$([[ -n ${TM_STRESS:-} ]] && echo 40000 || echo 6000)}
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: cay
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: append, refresh_append_overlap: 2s}
  - from: file:data
    name: duck
    time_column: ts
    acceleration: {engine: duckdb, mode: file, refresh_mode: append, refresh_append_overlap: 2s}
  - from: file:data
    name: lite
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, refresh_append_overlap: 2s}
YAML
sig_sql="count(*), sum(id), sum((id * id) % 1000003), count(DISTINCT id), sum(length(v))"
source_sig() { duckdb_query "SELECT $sig_sql FROM read_parquet('$T/data/*.parquet')" | tail -n +2 | tr -d '\r'; }
accel_sig() { tm_sql "$T/tm.yaml" "SELECT $sig_sql FROM $1"; }
count_of() { tm_sql "$T/tm.yaml" "SELECT count(*) FROM $1"; }
# Each file: rows whose times follow the previous file's, one duplicated row, and
# a few late rows inside the overlap.
add_file() {
  local k=$1 base=$(( $1 * rows ))
  write_parquet "$T/data/f$(printf %05d "$k").parquet" \
    "SELECT id, TIMESTAMP '2026-01-01 00:00:00' + to_microseconds(id * 1000) AS ts, 'row-' || id || repeat('x', id % 17) AS v
     FROM (SELECT range AS id FROM range($base, $base + $rows) UNION ALL SELECT $base) t"
}
add_file 0
tm_refresh -c "$T/tm.yaml" >/dev/null
start=$(date +%s%N); tm_refresh -c "$T/tm.yaml" cay >/dev/null; unit=$(( ($(date +%s%N) - start) / 1000000 ))
# The row count of each acceleration, checked equal to the source after each
# completing refresh below (accel_sig's first field is count(*)): the count
# before a trial, without opening the acceleration once more to read it.
declare -A count
for ds in cay duck lite; do count[$ds]=$(count_of "$ds"); done
killed=0 committed=0 rolled_back=0
for trial in $(seq 1 "$trials"); do
  add_file "$trial"
  # The source is the same for the three engines of a trial: one DuckDB run.
  want=$(source_sig)
  for ds in cay duck lite; do
    before=${count[$ds]}
    # A refresh of one new file takes about 2-4 units; kill somewhere inside it.
    delay_ms=$(( RANDOM % (unit * 4 + 20) ))
    "$TM_BIN" refresh -c "$T/tm.yaml" "$ds" >/dev/null 2>&1 & pid=$!
    sleep "$(awk -v m="$delay_ms" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    after=$(count_of "$ds")
    want_all=$(( before + rows + 1 ))
    if [[ $after == "$before" ]]; then rolled_back=$((rolled_back + 1));
    elif [[ $after == "$want_all" ]]; then committed=$((committed + 1));
    else fail "trial $trial $ds: $after rows after the kill, expected $before or $want_all"; fi
    tm_refresh -c "$T/tm.yaml" "$ds" >/dev/null
    got=$(accel_sig "$ds")
    [[ "$got" == "$want" ]] || fail "trial $trial $ds: acceleration [$got] != source [$want]"
    count[$ds]=${got%%,*}
  done
done
echo "refresh_kill: $trials trials x 3 engines: $killed killed mid-refresh ($rolled_back rolled back, $committed had committed); every acceleration equal to the source" >&2
echo ok
