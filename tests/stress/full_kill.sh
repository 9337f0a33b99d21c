#!/usr/bin/env bash
# Issue 10 kill test for full refresh (SPEC A11, D1): `tidemark refresh --full`
# killed with SIGKILL at random instants while the source changed (one file
# removed, one of another size added). After each kill the acceleration holds
# exactly the previous full load or exactly the new one, compared as
# multisets of full rows through signatures (DuckDB on the Parquet files,
# tidemark's SQL on the acceleration); never a mix, never empty. The next full
# refresh completes. On cayenne, duckdb and sqlite (file mode).
# Short in `make check`; TM_STRESS=1 runs 60 trials per engine.
source "$(dirname "$0")/../integration/lib.sh"
seed_random full_kill
trials=${TM_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 60 || echo 2)}
rows=${TM_KILL_ROWS:-15000}
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: cay
    acceleration: {engine: cayenne, refresh_mode: full}
  - from: file:data
    name: duck
    acceleration: {engine: duckdb, mode: file, refresh_mode: full}
  - from: file:data
    name: lite
    acceleration: {engine: sqlite, mode: file, refresh_mode: full}
YAML
sig_sql="count(*), sum(id), sum((id * id) % 1000003), count(DISTINCT id), sum(length(v))"
source_sig() { duckdb_query "SELECT $sig_sql FROM read_parquet('$T/data/*.parquet')" | tail -n +2 | tr -d '\r'; }
accel_sig() { tm_sql "$T/tm.yaml" "SELECT $sig_sql FROM $1"; }
# File k holds rows + k % 7 rows with ids from k * 100000.
add_file() {
  local k=$1 base=$(( $1 * 100000 ))
  write_parquet "$T/data/f$(printf %05d "$k").parquet" \
    "SELECT range AS id, 'row-' || range || repeat('y', range % 13) AS v FROM range($base, $base + $rows + $k % 7)"
}
for k in 0 1 2; do add_file "$k"; done
# unit: the milliseconds one full refresh takes; kills land in [0, 1.3 units).
start=$(date +%s%N); tm_refresh -c "$T/tm.yaml" >/dev/null; unit=$(( ($(date +%s%N) - start) / 2000000 + 1 ))
killed=0 old=0 new=0
# Before the first trial every acceleration holds the source; later trials start
# from the state the previous trial's completing refresh asserted (want_new).
src=$(source_sig)
for ds in cay duck lite; do
  before=$(accel_sig "$ds")
  [[ $before == "$src" ]] || fail "$ds: the acceleration does not hold the source before the trials"
done
for trial in $(seq 3 $((trials + 2))); do
  ((trial == 3)) || before=$want_new
  rm -f "$T/data/f$(printf %05d $((trial - 3))).parquet"
  add_file "$trial"
  want_old=$before want_new=$(source_sig)
  for ds in cay duck lite; do
    "$TM_BIN" refresh -c "$T/tm.yaml" "$ds" --full >/dev/null 2>&1 & pid=$!
    sleep "$(awk -v m="$(( RANDOM % (unit * 13 / 10 + 2) ))" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    got=$(accel_sig "$ds")
    if [[ $got == "$want_old" ]]; then old=$((old + 1));
    elif [[ $got == "$want_new" ]]; then new=$((new + 1));
    else fail "trial $trial $ds: after the kill [$got] is neither the old [$want_old] nor the new [$want_new] load"; fi
    tm_refresh -c "$T/tm.yaml" "$ds" --full >/dev/null
    assert_eq "$(accel_sig "$ds")" "$want_new" "trial $trial $ds: after the completing refresh"
  done
done
echo "full_kill: $trials trials x 3 engines: $killed killed mid-refresh ($old kept the old load, $new had the new one); never a mix" >&2
echo ok
