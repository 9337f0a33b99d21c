#!/usr/bin/env bash
# Issue 19 kill test (SPEC E2, E3, D1): a refresh of an Iceberg dataset that
# follows a table through appends, position deletes (deletion vectors on the v3
# table), equality deletes, upserts (data + equality deletes in one commit) and
# compactions, killed with SIGKILL at random instants. After each kill the
# acceleration equals the table at the old saved snapshot or at the new one,
# never a state between (compared as sorted rows); the next refresh then
# brings it to the new snapshot. The truth is read independently by
# tests/node/changes-plans.mjs --read-truth (icebird; the spec reader with
# tests/node/puffin-check.mjs where deletion vectors are live).
# The refresh mode under test: TM_CHANGES_MODE (default changes; full passes
# too). Short in `make check` (1 trial, v3 table, 2,000 rows);
# TM_STRESS=1 runs 100 trials on the v2 table and 100 on the v3 table (200 in
# all, 20,000 rows; TM_KILL_TRIALS and TM_KILL_ROWS override) on each of
# the engines cayenne, sqlite (file mode: its deletes by provenance are native
# DELETEs in the SQLite transaction) and postgres (a temporary server,
# pg_lib.sh: indexed DELETEs in the refresh's transaction); TM_KILL_ENGINES
# picks some (e.g. sqlite).
source "$(dirname "$0")/../integration/lib.sh"
seed_random changes_kill
mode=${TM_CHANGES_MODE:-changes}
trials=${TM_KILL_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 100 || echo 1)}
rows=${TM_KILL_ROWS:-$([[ -n ${TM_STRESS:-} ]] && echo 20000 || echo 2000)}
engines=${TM_KILL_ENGINES:-$([[ -n ${TM_STRESS:-} ]] && echo "cayenne sqlite postgres" || echo cayenne)}
if [[ " $engines " == *" postgres "* ]]; then
  source "$(dirname "$0")/../integration/pg_lib.sh"
  pg_start
fi
cd "$T"
truth() { node "$TM_SOURCE_DIR/tests/node/changes-plans.mjs" --read-truth "$1"; }
accel() { tm_sql tm.yaml "SELECT id, k, v FROM t" | tr ',' '|' | LC_ALL=C sort; }
next_id=1
# csv N [ID...]: N new rows, then rows for the given existing ids (upserts).
csv() {
  local n=$1; shift
  local f=$T/in.csv
  { echo "id,k,v"
    awk -v a="$next_id" -v n="$n" -v s="$RANDOM" 'BEGIN { srand(s); for (i = a; i < a + n; i++) printf "%d,%d,v%d\n", i, int(rand() * 50), i }'
    for id in "$@"; do echo "$id,$((RANDOM % 50)),u$id-$RANDOM"; done
  } >"$f"
  next_id=$((next_id + n))
  echo "$f"
}
# One snapshot of a random kind (always commits something).
change() {
  local live; live=$(wc -l <"$T/want")
  local kind=$((RANDOM % 6))
  (( live < rows / 2 )) && kind=0
  case $kind in
    0) tm iceberg append wh/t "$(csv $((RANDOM % 3000 + 1)))" ;;
    1) local lo=$(( RANDOM % next_id ))
       tm iceberg delete wh/t --where "id >= $lo AND id < $((lo + 500))" ;;
    2) tm iceberg delete wh/t --where "k = $((RANDOM % 50))" --equality k ;;
    3) local ids; ids=$(cut -d'|' -f1 "$T/want" | shuf -n 200 --random-source=<(yes "$RANDOM"))
       # shellcheck disable=SC2086
       tm iceberg upsert wh/t --equality id "$(csv 100 $ids)" ;;
    4) tm iceberg compact wh/t ;;
    5) tm iceberg delete wh/t --where "id >= $(( RANDOM % next_id )) AND id < $(( RANDOM % next_id + 100 ))" --copy-on-write ;;
  esac >/dev/null
}
run_trials() { # FORMAT-VERSION ENGINE
  rm -rf wh tm.yaml .tidemark* accel* 2>/dev/null || true
  local params=""
  if [[ $2 == postgres ]]; then
    pg_psql -c "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public"
    params=", params: {pg_host: 127.0.0.1, pg_port: '$PG_PORT', pg_db: postgres, pg_user: $PG_USER, pg_pass: $PG_PASS, pg_sslmode: disable}"
  fi
  cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/t
    name: t
    acceleration: {refresh_mode: $mode, engine: $2, mode: file$params}
YAML
  tm iceberg create wh/t --format-version "$1" \
    --schema '[{"name":"id","type":"long","required":true},{"name":"k","type":"long","required":true},{"name":"v","type":"string","required":true}]' >/dev/null
  next_id=1
  tm iceberg append wh/t "$(csv "$rows")" >/dev/null
  truth wh/t >"$T/want"
  tm_refresh -c tm.yaml >/dev/null
  [[ $(accel | cmp - "$T/want" && echo same) == same ]] || fail "v$1: the first refresh does not equal the table"
  # unit: the milliseconds one refresh takes; kills land in [0, 1.3 units).
  change; truth wh/t >"$T/want"
  local start; start=$(date +%s%N); tm_refresh -c tm.yaml >/dev/null
  local unit=$(( ($(date +%s%N) - start) / 1000000 + 1 ))
  [[ $(accel | cmp - "$T/want" && echo same) == same ]] || fail "v$1: a refresh does not equal the table"
  local trial
  for trial in $(seq 1 "$trials"); do
    cp "$T/want" "$T/old"
    change
    truth wh/t >"$T/want"
    "$TM_BIN" refresh -c tm.yaml >/dev/null 2>&1 & local pid=$!
    sleep "$(awk -v m="$(( RANDOM % (unit * 13 / 10 + 2) ))" 'BEGIN { printf "%.3f", m / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then killed=$((killed + 1)); fi
    wait "$pid" 2>/dev/null || true
    accel >"$T/got"
    if cmp -s "$T/got" "$T/want"; then
      at_new=$((at_new + 1))
    elif cmp -s "$T/got" "$T/old"; then
      at_old=$((at_old + 1))
    else
      fail "v$1 $2 trial $trial (mode $mode, seed replay TM_SEED): after the kill the acceleration ($(wc -l <"$T/got") rows) is neither the old snapshot ($(wc -l <"$T/old")) nor the new ($(wc -l <"$T/want")): $(diff "$T/got" "$T/want" | head -5 | tr '\n' ' ')"
    fi
    tm_refresh -c tm.yaml >/dev/null
    accel >"$T/got"
    cmp -s "$T/got" "$T/want" || fail "v$1 trial $trial: the refresh after the kill does not reach the new snapshot ($(wc -l <"$T/got") rows, want $(wc -l <"$T/want"))"
  done
}
# The short form (make check) kills on the v3 table only (deletion vectors).
tables=$([[ -n ${TM_STRESS:-} ]] && echo "2 3" || echo 3)
for engine in $engines; do
  killed=0 at_old=0 at_new=0
  for v in $tables; do run_trials "$v" "$engine"; done
  note "changes_kill: mode $mode, engine $engine, tables v${tables// /, v}, $trials trials each: $killed killed, $at_old at the old snapshot, $at_new at the new, 0 between"
  if [[ -n ${TM_STRESS:-} ]]; then
    (( at_old > 0 && at_new > 0 )) || fail "$engine: the kills never landed both before and after the commit ($at_old old, $at_new new): the test did not exercise the refresh"
  fi
done
echo ok
