#!/usr/bin/env bash
# Issue 7 kill test (SPEC B8, D1): an append refresh that follows Iceberg
# snapshots, killed with SIGKILL at random instants. After each kill the
# acceleration holds a committed state whose saved snapshot agrees with its
# rows: the next refresh completes it, and the acceleration equals every row
# the appends committed (DuckDB reads the table's data files independently).
# On cayenne, duckdb and sqlite (file mode). Short in `make check`; TM_STRESS=1
# runs 100 trials per engine.
source "$(dirname "$0")/../integration/lib.sh"
seed_random follow_kill
trials=${TM_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 100 || echo 2)}
rows=${TM_KILL_ROWS:-20000}
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
  - from: iceberg:file://wh/events
    name: duck
    time_column: ts
    acceleration: {engine: duckdb, mode: file, refresh_mode: append}
  - from: iceberg:file://wh/events
    name: lite
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append}
YAML
ice_create wh/events
sig_sql="count(*), sum(id), sum((id * id) % 1000003), count(DISTINCT id), sum(length(v))"
add_snapshot() {
  local k=$1 base=$(( $1 * rows ))
  # Times go backwards with k so that only snapshot following finds the rows (B2).
  duckdb_query "COPY (SELECT range AS id, TIMESTAMPTZ '2026-06-01 00:00:00+00' - to_seconds($k * 3600) + to_microseconds(range) AS ts,
                'v' || range AS v FROM range($base, $base + $rows)) TO '$T/in.csv' (HEADER, DELIMITER ',')" >/dev/null
  tm iceberg append wh/events "$T/in.csv" >/dev/null
}
table_sig() { duckdb_query "SELECT $sig_sql FROM read_parquet('$T/wh/events/data/**/*.parquet')" | tail -n +2 | tr -d '\r'; }
add_snapshot 0
tm_refresh -c tm.yaml >/dev/null
# unit: the milliseconds one refresh of one snapshot takes; kills land in [0, 1.3 units).
add_snapshot 1; start=$(date +%s%N); tm_refresh -c tm.yaml >/dev/null; unit=$(( ($(date +%s%N) - start) / 2000000 + 1 ))
# The row count of each acceleration before a trial: read once here, then the
# count(*) of the signature each trial asserts equal to the table's.
declare -A count
for ds in events duck lite; do count[$ds]=$(tm_sql tm.yaml "SELECT count(*) FROM $ds"); done
killed=0 committed=0 rolled_back=0
for trial in $(seq 2 $((trials + 1))); do
  add_snapshot "$trial"
  want=$(table_sig)
  for ds in events duck lite; do
    before=${count[$ds]}
    "$TM_BIN" refresh -c tm.yaml "$ds" >/dev/null 2>&1 & pid=$!
    sleep "$(awk -v m="$(( RANDOM % (unit * 13 / 10 + 2) ))" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    after=$(tm_sql tm.yaml "SELECT count(*) FROM $ds")
    if [[ $after == "$before" ]]; then
      rolled_back=$((rolled_back + 1))
      assert_contains "$(tm_refresh -c tm.yaml "$ds")" "$ds: +$rows rows via snapshots (1: append 1)" "trial $trial $ds: the saved snapshot is still the previous one"
    elif [[ $after == $(( before + rows )) ]]; then
      committed=$((committed + 1))
      assert_contains "$(tm_refresh -c tm.yaml "$ds")" "$ds: +0 rows via snapshots (no new snapshot)" "trial $trial $ds: the saved snapshot moved with the rows"
    else
      fail "trial $trial $ds: $after rows after the kill, expected $before or $(( before + rows ))"
    fi
    got=$(tm_sql tm.yaml "SELECT $sig_sql FROM $ds")
    [[ "$got" == "$want" ]] || fail "trial $trial $ds: acceleration [$got] != table [$want]"
    count[$ds]=${got%%,*}
  done
done
echo "follow_kill: $trials trials x 3 engines: $killed killed mid-refresh ($rolled_back rolled back, $committed had committed); every acceleration equal to the table" >&2
echo ok
