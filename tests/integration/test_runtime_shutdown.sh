#!/usr/bin/env bash
# SIGTERM during a refresh (issue 8; SPEC D1, A11): `tidemark run` stops
# within seconds with exit code 0, the refresh in flight rolls back, and the
# acceleration is exactly the old one (never a part of the new rows). For an
# append and a full refresh, on sqlite and cayenne. Also SIGINT while idle.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

BIG=${TM_SHUTDOWN_ROWS:-12000}
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

    # A large new file: the refresh at start reads it for a while.
    for k in 1 2 3; do gen_jsonl "$dir/data/big$k.jsonl" $((1001 + (k - 1) * BIG)) "$BIG" "big"; done
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
    # And the next run loads the new rows once.
    start_server "$dir/tidemark.yaml"
    wait_until 120 count_is events $((1000 + 3 * BIG)) || fail "$engine/$mode: reload after restart"
    stop_server TERM
  done
done
echo ok
