#!/usr/bin/env bash
# Issue 15 kill test for retention (SPEC C3, D1): `tidemark run` killed with
# SIGKILL at random instants around its retention check, which deletes in one
# transaction the rows older than retention_period and the rows retention_sql
# names. After each kill the acceleration opens and holds exactly the rows
# before the check or exactly the rows after it (signatures: tidemark's SQL on
# the acceleration before the kill, DuckDB on the Parquet files for the rows
# retention keeps); never a part. A restarted server completes the check.
# On cayenne, duckdb and sqlite (file mode).
# Short in `make check`; TM_STRESS=1 runs 60 trials per engine.
source "$(dirname "$0")/../integration/lib.sh"
seed_random retention_kill
source "$(dirname "$0")/../integration/runtime_lib.sh"
export TZ=UTC
trials=${TM_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 60 || echo 2)}
rows=${TM_KILL_ROWS:-20000}
mkdir -p "$T/data"
# Half of each file is older than the retention period (2020), half recent;
# one row in 50 is 'void', which retention_sql deletes.
add_file() {
  local k=$1 base=$(( $1 * 100000 ))
  write_parquet "$T/data/f$(printf %05d "$k").parquet" \
    "SELECT range AS id,
            CASE WHEN range % 2 = 0 THEN TIMESTAMP '2020-01-01 00:00:00' + to_seconds(range)
                 ELSE now()::TIMESTAMP - INTERVAL 1 HOUR + to_microseconds(range) END AS ts,
            CASE WHEN range % 50 = 1 THEN 'void' ELSE 'row-' || range END AS v
     FROM range($base, $base + $rows)"
}
kept_sig() {
  duckdb_query "SELECT $sig_sql FROM read_parquet('$T/data/*.parquet')
                WHERE ts >= now()::TIMESTAMP - INTERVAL 30 DAY AND v <> 'void'" | tail -n +2 | tr -d '\r'
}
sig_sql="count(*), sum(id), sum((id * id) % 1000003), count(DISTINCT id), sum(length(v))"
accel_sig() { tm_sql "$T/$1.yaml" "SELECT $sig_sql FROM $1"; }
for ds in cay duck lite; do
  case $ds in
    cay) engine=cayenne ;;
    duck) engine=duckdb ;;
    lite) engine=sqlite ;;
  esac
  cat > "$T/$ds.yaml" <<YAML
datasets:
  - from: file:data
    name: $ds
    time_column: ts
    acceleration:
      engine: $engine
      mode: file
      refresh_mode: append
      refresh_check_interval: 1h
      retention_check_enabled: true
      retention_period: 30d
      retention_check_interval: 300ms
      retention_sql: DELETE FROM $ds WHERE v = 'void'
YAML
done
# The retention check runs 300 ms after the start; time one whole start-to-deleted.
add_file 0
# The rows retention keeps depend on the files only (half of them are years old,
# half an hour old): one DuckDB run per set of files serves the three engines.
kept=$(kept_sig)
unit=0
for ds in cay duck lite; do
  tm_refresh -c "$T/$ds.yaml" >/dev/null
  begin=$(date +%s%N)
  start_server "$T/$ds.yaml"
  wait_until 30 grep -q "\[$ds\] retention deleted" "$SERVER_LOG" || fail "$ds: no retention in the first run"
  took=$(( ($(date +%s%N) - begin) / 1000000 ))
  stop_server
  (( took > unit )) && unit=$took
  assert_eq "$(accel_sig "$ds")" "$kept" "$ds: the first retention"
done
killed=0 before_kept=0 after_kept=0
for trial in $(seq 1 "$trials"); do
  add_file "$trial"
  after=$(kept_sig)
  for ds in cay duck lite; do
    tm_refresh -c "$T/$ds.yaml" >/dev/null
    before=$(accel_sig "$ds")
    delay_ms=$(( RANDOM % (unit * 2 + 50) ))
    TIDEMARK_LOG=warn "$TM_BIN" run -c "$T/$ds.yaml" --http 127.0.0.1:0 >/dev/null 2>"$T/run.log" & pid=$!
    sleep "$(awk -v m="$delay_ms" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    got=$(accel_sig "$ds")
    if [[ $got == "$before" ]]; then before_kept=$((before_kept + 1));
    elif [[ $got == "$after" ]]; then after_kept=$((after_kept + 1));
    else fail "trial $trial $ds: [$got] after the kill, expected the rows before [$before] or after [$after]"; fi
    # A restarted server completes the check.
    if [[ $got != "$after" ]]; then
      start_server "$T/$ds.yaml"
      wait_until 30 grep -q "\[$ds\] retention deleted" "$SERVER_LOG" || fail "trial $trial $ds: no retention after the restart"
      stop_server
      assert_eq "$(accel_sig "$ds")" "$after" "trial $trial $ds: after the restart"
    fi
  done
done
echo "retention_kill: $trials trials x 3 engines: $killed killed ($before_kept before the check committed, $after_kept after); never a part" >&2
echo ok
