#!/usr/bin/env bash
# Issue 10 soak (SPEC D1, B2-B5, C3, C5): `tidemark run` follows a live Iceberg
# table while
#   - a producer commits a snapshot every second: 50 new rows, every 10th
#     round an overwrite that rewrites 20 recent rows with new amounts, every
#     15th a compaction (a replace snapshot), every 120th an expiry of
#     snapshots older than 2 minutes;
#   - the acceleration (cayenne, primary_key id) refreshes every second, with
#     retention on (rows older than 5 minutes deleted every 10 s);
#   - 16 clients query it over HTTP without pause (counts, aggregates, point
#     lookups, the federated copy of the table);
#   - the server's RSS is sampled every few seconds.
# Afterwards, once the acceleration has caught up: the rows younger than the
# retention cutoff equal the live table's (as a multiset of full rows), the
# older ones are all still in the table, no query failed, the log has no
# error, and RSS did not grow (end <= 1.25 x the level at a quarter of the
# run + 16 MB, on runs of 10 minutes or more).
# TM_SOAK_SECONDS sets the length: 15 s in `make check`, 1800 with TM_STRESS=1.
# TM_SOAK_OUT=DIR keeps the RSS curve and the logs there.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/../integration/runtime_lib.sh"
export TZ=UTC
secs=${TM_SOAK_SECONDS:-$([[ -n ${TM_STRESS:-} ]] && echo 1800 || echo 15)}
clients=${TM_SOAK_CLIENTS:-16}
out=${TM_SOAK_OUT:-$T/out}
mkdir -p "$out"
cd "$T"
table=$T/wh/events
tm iceberg create "$table" --partition "day(event_time)" --schema '{"type":"struct","fields":[
  {"name":"id","required":true,"type":"long"},
  {"name":"event_time","required":true,"type":"timestamptz"},
  {"name":"region","type":"string"},
  {"name":"amount","type":"double"}]}' >/dev/null
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://$table
    name: events
    time_column: event_time
    acceleration:
      engine: cayenne
      refresh_mode: append
      refresh_check_interval: 1s
      primary_key: id
      retention_check_enabled: true
      retention_period: 5m
      retention_check_interval: 10s
  - from: iceberg:file://$table
    name: events_live
YAML

# rows FILE FIRST N VERSION: rows FIRST..FIRST+N-1, each stamped with the time
# its id was first written (so a rewrite keeps the key and the time; new rows
# of one batch are 1 ms apart) and an amount per version.
declare -A born
rows() {
  local file=$1 first=$2 n=$3 version=$4 i t now_ms ms
  now_ms=$(date +%s%3N)
  {
    echo "id,event_time,region,amount"
    for ((i = first; i < first + n; i++)); do
      if [[ -z ${born[$i]:-} ]]; then
        ms=$((now_ms + i - first))
        printf -v t '%(%Y-%m-%dT%H:%M:%S)T.%03dZ' $((ms / 1000)) $((ms % 1000))
        born[$i]=$t
      fi
      printf '%d,%s,%s,%d.%02d\n' "$i" "${born[$i]}" "r$((i % 5))" $((i * 7 % 500 + version)) $((i % 100))
    done
  } >"$file"
}

producer() {
  local k=1 next=1
  while [[ ! -e $T/stop-producer ]]; do
    local t0
    t0=$(date +%s%3N)
    rows "$T/batch.csv" "$next" 50 0
    tm iceberg append "$table" "$T/batch.csv" >/dev/null || { echo "append $k failed" >>"$out/producer-errors"; }
    next=$((next + 50))
    # Separate tests, not elif: 120 is a multiple of 10 and of 15.
    if ((k % 10 == 0)); then
      local lo=$((next - 120))
      rows "$T/fix.csv" "$lo" 20 "$k"
      tm iceberg overwrite "$table" --where "id >= $lo AND id < $((lo + 20))" "$T/fix.csv" >/dev/null ||
        echo "overwrite $k failed" >>"$out/producer-errors"
    fi
    if ((k % 15 == 0)); then
      tm iceberg compact "$table" >/dev/null || echo "compact $k failed" >>"$out/producer-errors"
    fi
    if ((k % 120 == 0)); then
      tm iceberg expire "$table" --older-than 2m >/dev/null || echo "expire $k failed" >>"$out/producer-errors"
      echo "$k" >>"$T/expiries"
    fi
    echo "$k" >"$T/rounds"
    k=$((k + 1))
    # One round a second: sleep what is left of it (none when the round took longer).
    local left=$((1000 - ($(date +%s%3N) - t0)))
    if ((left > 0)); then sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"; fi
  done
}

client() {
  local n=$1 q code ok=0 bad=0
  local queries=("SELECT count(*) FROM events"
                 "SELECT region, count(*), round(sum(amount), 2) FROM events GROUP BY region ORDER BY region"
                 "SELECT max(event_time), min(event_time) FROM events"
                 "SELECT * FROM events WHERE id = ID"
                 "SELECT count(*) FROM events WHERE amount > 250"
                 "SELECT id, amount FROM events ORDER BY event_time DESC LIMIT 20"
                 "SELECT count(*) FROM events_live")
  while [[ ! -e $T/stop-clients ]]; do
    q=${queries[RANDOM % ${#queries[@]}]}
    q=${q/ID/$((RANDOM % 20000))}
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 --data-binary "$q" "$BASE/v1/sql" || echo 000)
    if [[ $code == 200 ]]; then ok=$((ok + 1)); else bad=$((bad + 1)); echo "$code $q" >>"$out/client-errors"; fi
  done
  echo "$ok $bad" >"$T/client.$n"
}

rows "$T/batch.csv" 100000000 10 0   # one row far from the producer's ids, so the table has a snapshot
tm iceberg append "$table" "$T/batch.csv" >/dev/null
TIDEMARK_LOG=info start_server tm.yaml
wait_until 60 is_ready || fail "the server did not become ready"
start=$SECONDS
producer & producer_pid=$!
for n in $(seq 1 "$clients"); do client "$n" & done
interval=$(( secs >= 600 ? 10 : 2 ))
echo "seconds,rss_kb" >"$out/rss.csv"
while (( SECONDS - start < secs )); do
  kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$SERVER_LOG" >&2; fail "the server died"; }
  echo "$((SECONDS - start)),$(awk '/^VmRSS/ { print $2 }' "/proc/$SERVER_PID/status")" >>"$out/rss.csv"
  sleep "$interval"
done
touch "$T/stop-producer"
wait "$producer_pid"
touch "$T/stop-clients"
wait $(jobs -p | grep -v "^$SERVER_PID$") 2>/dev/null || true
[[ ! -s $out/producer-errors ]] || fail "the producer failed: $(head "$out/producer-errors")"

# Caught up: the saved snapshot is the table's current one.
current=$(tm iceberg history "$table" --format csv | tr -d '\r' | awk -F, '$NF == "true" { print $1 }')
caught_up() { api GET /v1/datasets/events/acceleration; [[ $(tr -d ' ' <<<"$BODY") == *"\"saved_snapshot_id\":$current,"* ]]; }
wait_until 60 caught_up || fail "the acceleration did not catch up with snapshot $current: $BODY"

# Rows younger than the cutoff are untouched by retention: they must equal the
# live table's; older ones may have been deleted but must come from the table.
cutoff=$(date -u -d '-4 minutes' +%Y-%m-%dT%H:%M:%SZ)
cols="id, event_time, region, amount"
sig="count(*), sum(id), sum(amount * 100), count(DISTINCT region)"
sql "SELECT $sig FROM events WHERE event_time >= '$cutoff'" -H 'Accept: text/csv'; got=$BODY
sql "SELECT $sig FROM events_live WHERE event_time >= '$cutoff'" -H 'Accept: text/csv'; want=$BODY
assert_eq "$got" "$want" "recent rows: acceleration vs table"
sql "SELECT count(*) FROM (SELECT $cols FROM events EXCEPT SELECT $cols FROM events_live)" -H 'Accept: text/csv'
assert_eq "$(tail -n +2 <<<"$BODY" | tr -d '\r')" "0" "rows in the acceleration that are not in the table"
sql "SELECT count(*) - count(DISTINCT id) FROM events" -H 'Accept: text/csv'
assert_eq "$(tail -n +2 <<<"$BODY" | tr -d '\r')" "0" "duplicate keys in the acceleration"
rounds=$(cat "$T/rounds")
expiries=$(wc -l <"$T/expiries" 2>/dev/null || echo 0)
((rounds < 120 || expiries > 0)) || fail "$rounds rounds but no expiry ran"
snapshots=$(($(tm iceberg history "$table" | wc -l) - 2)) # minus the header and the rule
sql "SELECT count(*) FROM events" -H 'Accept: text/csv'; held=$(tail -n +2 <<<"$BODY" | tr -d '\r')

ok=0 bad=0
for f in "$T"/client.*; do read -r o b <"$f"; ok=$((ok + o)); bad=$((bad + b)); done
[[ $bad -eq 0 ]] || fail "$bad queries failed: $(sort "$out/client-errors" | uniq -c | sort -rn | head -5)"
stop_server
cp "$SERVER_LOG" "$out/server.log"
errors=$(grep -c ' ERROR ' "$SERVER_LOG" || true)
[[ $errors -eq 0 ]] || fail "errors in the server log: $(grep ' ERROR ' "$SERVER_LOG" | head -5)"
warns=$(grep -c ' WARN ' "$SERVER_LOG" || true)
refreshes=$(grep -c 'refresh finished' "$SERVER_LOG" || true)
retentions=$(grep -c 'retention' "$SERVER_LOG" || true)

# RSS: the level at a quarter of the run against the end.
read -r q_rss end_rss max_rss < <(awk -F, 'NR > 1 { s[++n] = $2; if ($2 > m) m = $2 }
  END { print s[int(n / 4) + 1], s[n], m }' "$out/rss.csv")
# (Only judged on long runs: a 30 s run under AddressSanitizer is still
# filling its quarantine.)
(( secs < 600 || end_rss <= q_rss * 5 / 4 + 16384 )) || fail "RSS grew: $q_rss kB at a quarter of the run, $end_rss kB at the end"
echo "soak: $secs s, $rounds producer rounds ($expiries expiries, $snapshots snapshots at the end)," \
  "$refreshes refreshes, $retentions retention log lines;" \
  "$ok queries by $clients clients, 0 failed; acceleration $held rows (recent rows equal the table's);" \
  "RSS $((q_rss / 1024)) MB at 1/4, $((end_rss / 1024)) MB at the end, peak $((max_rss / 1024)) MB; log: 0 errors, $warns warnings" >&2
echo ok
