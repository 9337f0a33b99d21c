#!/usr/bin/env bash
# Issue 20: kill -9 of a refreshing `tidemark refresh` on engine: postgres.
# Each trial adds a Parquet file of new rows (ids and times continue the last
# file's), starts a refresh of two accelerations of it (unkeyed, and keyed
# with on_conflict: upsert) and kills it after a random delay. After every
# kill the tables hold a committed state, never part of one: no id twice,
# the ids exactly 0..count-1 (rows arrive in id order), and the count equal
# to the one tidemark_meta committed with it. After the last trial one more
# refresh loads everything: 0 rows lost, 0 duplicated.
# TM_PG_KILL_TRIALS trials: 2 in `make check`, 100 with TM_STRESS=1.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/../integration/pg_lib.sh"
trials=${TM_PG_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 100 || echo 2)}
seed_random pg-kill
pg_start
cd "$T"
mkdir -p data
cat > tm.yaml <<YAML
datasets:
  - from: file:data
    name: plain
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
$(pg_params)
  - from: file:data
    name: keyed
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
      primary_key: id
      on_conflict: {id: upsert}
$(pg_params)
YAML
check() { # TABLE WHAT
  local got
  got=$(pg_psql -c "SELECT count(*) - count(DISTINCT id), coalesce(max(id) + 1, 0) - count(*), (SELECT row_count FROM tidemark_meta WHERE dataset = '$1') - count(*) FROM $1")
  [[ $got == "0|0|0" ]] || fail "$2: $1: duplicates | gaps | row count out of step: $got"
}
total=0 killed=0 advanced=0 last=0
for trial in $(seq 1 "$trials"); do
  n=$(( 20000 + RANDOM % 100000 ))
  write_parquet "data/$trial.parquet" "SELECT $total + i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + ($total + i) * INTERVAL 1 SECOND AS ts, 'v' || i AS v FROM range($n) t(i)"
  total=$((total + n))
  "$TM_BIN" refresh -c tm.yaml >/dev/null 2>&1 &
  pid=$!
  sleep "$((RANDOM % 2)).$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1)) || true
  wait "$pid" 2>/dev/null || true
  # Once the table exists (the first refresh may be killed before it).
  if [[ $(pg_psql -c "SELECT count(*) FROM tidemark_meta WHERE dataset = 'keyed'" 2>/dev/null) == 1 ]]; then
    check plain "trial $trial"
    check keyed "trial $trial"
    now=$(pg_psql -c "SELECT count(*) FROM plain")
    ((now > last)) && advanced=$((advanced + 1))
    last=$now
  fi
done
tm_refresh -c tm.yaml >/dev/null
for t in plain keyed; do
  assert_eq "$(pg_psql -c "SELECT count(*), count(DISTINCT id) FROM $t")" "$total|$total" "$t: rows lost or duplicated"
done
note "$trials trials: $killed refresh processes killed before they exited, $advanced trials left a new commit; $total rows: 0 lost, 0 duplicated"
echo ok
