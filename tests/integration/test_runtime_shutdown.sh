#!/usr/bin/env bash
# SIGTERM during a refresh (issue 8; SPEC D1, A11): `tidemark run` stops
# within seconds with exit code 0, the refresh in flight rolls back, and the
# acceleration is exactly the old one (never a part of the new rows). For an
# append and a full refresh, on sqlite and cayenne. Also SIGINT while idle.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

BIG=${TM_SHUTDOWN_ROWS:-300000}
# One large file, made once: a refresh of it runs for seconds, so SIGTERM
# lands in the middle even on a loaded machine (the refresh never finishes).
gen_jsonl "$T/big.jsonl" 5001 "$BIG" big
for engine in sqlite cayenne; do
  for mode in append full; do
    dir=$T/$engine-$mode
    mkdir -p "$dir/data"
    gen_jsonl "$dir/data/a.jsonl" 1 1000
    cat > "$dir/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: stop
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: $mode}
YAML
    start_server "$dir/tidemark.yaml"
    wait_until 30 count_is events 1000 || fail "$engine/$mode: baseline"
    stop_server INT

    cp "$T/big.jsonl" "$dir/data/big.jsonl"
    start_server "$dir/tidemark.yaml"
    wait_until 30 grep -q '\[events\] refresh started' "$SERVER_LOG" || fail "$engine/$mode: no refresh"
    sleep 0.1
    t0=$SECONDS
    stop_server TERM
    ((SECONDS - t0 <= 10)) || fail "$engine/$mode: shutdown took $((SECONDS - t0)) s"
    if grep -q '\[events\] refresh finished' "$SERVER_LOG"; then
      fail "$engine/$mode: the refresh finished before SIGTERM; raise TM_SHUTDOWN_ROWS"
    fi
    grep -q '\[events\] refresh cancelled for shutdown; rolled back' "$SERVER_LOG" ||
      { cat "$SERVER_LOG" >&2; fail "$engine/$mode: cancellation not logged"; }
    grep -q 'stopped' "$SERVER_LOG" || fail "$engine/$mode: no clean stop"

    # The acceleration is the old one: reopened in a new process.
    n=$(TIDEMARK_LOG=error tm sql -c "$dir/tidemark.yaml" --format csv "SELECT count(*) AS n, count(DISTINCT batch) AS b FROM events" | tail -1)
    assert_eq "${n//$'\r'/}" "1000,1" "$engine/$mode: the old acceleration after SIGTERM"
    # And the next run goes on from it: new rows once, nothing twice.
    rm "$dir/data/big.jsonl"
    gen_jsonl "$dir/data/c.jsonl" 1001 10 c
    start_server "$dir/tidemark.yaml"
    wait_until 30 count_is events 1010 || fail "$engine/$mode: the next run"
    assert_eq "$(sql_value 'SELECT count(DISTINCT id) FROM events')" 1010 "$engine/$mode: no duplicate"
    stop_server TERM
  done
done

# A query running at shutdown is interrupted: the process does not wait for it.
start_server "$T/sqlite-append/tidemark.yaml" --query-timeout 10m
wait_until 30 is_ready || fail "ready for the long query"
curl -s -o "$T/long.out" -w '%{http_code}' --data-binary \
  "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000000000) SELECT count(*) FROM n" \
  "$BASE/v1/sql" > "$T/long.code" &
curl_pid=$!
sleep 1
t0=$SECONDS
stop_server TERM
((SECONDS - t0 <= 5)) || fail "shutdown waited $((SECONDS - t0)) s for a running query"
wait "$curl_pid" || true
[[ $(cat "$T/long.code") != 200 ]] || fail "the interrupted query answered 200"
echo ok
