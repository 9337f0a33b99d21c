#!/usr/bin/env bash
# Consistency under load (SPEC C5, A11): 50 curl clients query /v1/sql while
# a producer keeps adding and replacing source files and the refreshes commit
# every few hundred milliseconds. Every answer must be 200 and show whole
# commits only: the append dataset holds only complete batches of 500 rows,
# the full-refresh dataset exactly one version of 300 rows. TM_STRESS=1 runs
# longer.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

CLIENTS=50
# Queries per client and dataset: 4 in make check (400 answers over 50 clients,
# spread over many commits, each checked), 200 under TM_STRESS=1.
QUERIES=${TM_CONC_QUERIES:-4}
[[ ${TM_STRESS:-} == 1 ]] && QUERIES=200
mkdir -p "$T/events" "$T/versions" "$T/staging"
# Every file the producer will publish, made up front so that publishing is a
# rename even while the clients keep the CPUs busy.
BATCHES=120
python3 - "$T" "$BATCHES" <<'PY'
import sys, datetime, os
t, n = sys.argv[1], int(sys.argv[2])
base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
for k in range(n + 1):
    b = "b%04d" % k
    path = os.path.join(t, "staging" if k else "events", b + ".jsonl")
    with open(path, "w") as f:
        for i in range(k * 500, k * 500 + 500):
            ts = (base + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write('{"id": %d, "ts": "%s", "batch": "%s"}\n' % (i, ts, b))
    path = os.path.join(t, "staging" if k else "versions", "v%04d.jsonl" % k if k else "current.jsonl")
    with open(path, "w") as f:
        for i in range(300):
            f.write('{"id": %d, "version": %d}\n' % (i, k))
PY
cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: load
datasets:
  - from: file:events
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, refresh_check_interval: 300ms}
  - from: file:versions
    name: versions
    params: {file_format: jsonl}
    acceleration: {engine: cayenne, mode: file, refresh_mode: full, refresh_check_interval: 300ms}
YAML
start_server "$T/tidemark.yaml" --query-slots 8
wait_until 30 is_ready || fail "not ready"
failures_before=$(metric_sum query_failures)

# The producer: a new batch of 500 rows and a new version every 150 ms.
(
  for k in $(seq 1 "$BATCHES"); do
    printf -v b 'b%04d' "$k"
    printf -v v 'v%04d' "$k"
    mv "$T/staging/$b.jsonl" "$T/events/$b.jsonl"
    mv "$T/staging/$v.jsonl" "$T/versions/current.jsonl"
    sleep 0.15
    [[ -e $T/stop ]] && break
  done
) &
producer=$!

# last_line TEXT: sets LAST to its last line, as `tail -1` prints it, without a
# fork (the clients' own processes compete with the server for the CPUs).
last_line() { local t=${1%$'\n'}; LAST=${t##*$'\n'}; }
client() {
  local id=$1 i out
  for i in $(seq "$QUERIES"); do
    out=$(curl -s -w '|%{http_code}' -H 'Accept: text/csv' --data-binary \
      'SELECT sum(n_in_batch) AS n, count(*) AS b, min(n_in_batch) AS lo, max(n_in_batch) AS hi FROM (SELECT batch, count(*) AS n_in_batch FROM events GROUP BY batch)' \
      "$BASE/v1/sql")
    out=${out//$'\r'/}
    local code=${out##*|} row
    last_line "${out%|*}"
    row=$LAST
    IFS=, read -r n b lo hi <<<"$row"
    if [[ $code != 200 || $((b * 500)) != "$n" || $lo != 500 || $hi != 500 ]]; then
      echo "client $id events: HTTP $code: $out" >> "$T/errors"
    fi
    out=$(curl -s -w '|%{http_code}' -H 'Accept: text/csv' --data-binary \
      'SELECT count(*) AS n, count(DISTINCT version) AS v FROM versions' "$BASE/v1/sql")
    out=${out//$'\r'/}
    code=${out##*|}
    last_line "${out%|*}"
    row=$LAST
    if [[ $code != 200 || $row != "300,1" ]]; then
      echo "client $id versions: HTTP $code: $out" >> "$T/errors"
    fi
  done
}
pids=()
for c in $(seq $CLIENTS); do
  client "$c" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
touch "$T/stop"
wait "$producer"

if [[ -s $T/errors ]]; then
  head -20 "$T/errors" >&2
  fail "$(wc -l < "$T/errors") inconsistent or failed answers"
fi
# Refreshes did commit meanwhile: the queries overlapped them.
commits=$(grep -c '\[events\] refresh finished: +[1-9]' "$SERVER_LOG" || true)
vcommits=$(grep -c '\[versions\] refresh finished' "$SERVER_LOG" || true)
((commits >= 3)) || fail "only $commits append refreshes added rows during the test"
((vcommits >= 3)) || fail "only $vcommits full refreshes during the test"
m=$(metrics)
assert_eq "$(metric_sum query_failures "$m")" "$failures_before" "no query failed"
n=$(metric_sum query_executions "$m")
((n >= CLIENTS * QUERIES * 2)) || fail "query executions: $n"
note "$((CLIENTS * QUERIES * 2)) queries by $CLIENTS clients over $commits + $vcommits commits"
stop_server
echo ok
