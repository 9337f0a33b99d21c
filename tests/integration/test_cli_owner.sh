#!/usr/bin/env bash
# Issue 15, SPEC 1.2: one process owns an acceleration's files (DuckDB allows
# one read-write opener per file). While `tidemark run` runs on a config,
# `tidemark sql`, `tidemark status` and `tidemark refresh` on the same config
# ask it (they answer even for a memory-mode dataset, which lives only in the
# server); once it stops they open the files themselves; a `tidemark sql`
# beside a `tidemark refresh` waits for it; and when a server holds the files
# but does not answer, the error says who holds them; a second server on the
# config refuses to start (server.lock), and a stale server file is ignored.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
cd "$T"
mkdir -p data
gen_jsonl data/a.jsonl 1 10
cat > tidemark.yaml <<YAML
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: append, refresh_check_interval: 1h}
  - from: file:data
    name: mem
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: arrow, refresh_mode: append, refresh_check_interval: 1h}
YAML
start_server tidemark.yaml
wait_until 30 is_ready || fail "not ready"
[[ -f .tidemark/data/server.json ]] || fail "no server file"
assert_eq "$(jq -r .url .tidemark/data/server.json)" "$BASE" "server file url"
assert_eq "$(jq -r .pid .tidemark/data/server.json)" "$SERVER_PID" "server file pid"

# A second server on the same config refuses to start, naming the first.
set +e
tm run -c tidemark.yaml --http 127.0.0.1:0 --metrics off >/dev/null 2>err2; rc=$?
set -e
assert_eq "$rc" 1 "a second tidemark run"
assert_contains "$(cat err2)" "another tidemark run (pid $SERVER_PID, $BASE) owns the accelerations"
assert_eq "$(jq -r .pid .tidemark/data/server.json)" "$SERVER_PID" "the server file is still the first server's"

# The server answers for the CLI: the memory-mode dataset proves it.
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" 10 "sql via the server"
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM mem")" 10 "a memory-mode dataset via the server"
out=$(tm status -c tidemark.yaml 2>&1)
assert_contains "$out" "Ready" "status via the server"
assert_contains "$out" "mem" "status lists the memory-mode dataset"
[[ $out != *Initializing* ]] || fail "status shows Initializing: $out"
gen_jsonl data/b.jsonl 11 5
out=$(tm refresh -c tidemark.yaml events 2>&1)
assert_contains "$out" "asking it to refresh" "refresh via the server"
wait_until 20 count_is events 15 || fail "the server's refresh"
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" 15

# A server that does not answer (stopped) holds the files: the CLI says who.
kill -STOP "$SERVER_PID"
set +e
begin=$SECONDS
tm sql -c tidemark.yaml "SELECT count(*) FROM events" >/dev/null 2>err; rc=$?
set -e
kill -CONT "$SERVER_PID"
assert_eq "$rc" 1 "sql beside a server that does not answer"
assert_contains "$(cat err)" "runs on this config but does not answer"
assert_contains "$(cat err)" "data.duckdb is held by"
assert_contains "$(cat err)" "PID $SERVER_PID"
assert_contains "$(cat err)" "after waiting"
(( SECONDS - begin <= 20 )) || fail "the CLI waited $((SECONDS - begin)) s"
stop_server
[[ ! -e .tidemark/data/server.json ]] || fail "the server file outlived the server"

# No server: the CLI opens the files itself.
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" 15 "sql without a server"
out=$(tm status -c tidemark.yaml 2>&1)
assert_contains "$out" "events" "status without a server"

# A stale server file (its process is gone) is ignored.
echo '{"pid": 999999, "url": "http://127.0.0.1:1"}' > .tidemark/data/server.json
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" 15 "sql with a stale server file"
# ... also when its pid now belongs to another process: no server holds the lock.
echo "{\"pid\": $$, \"url\": \"http://127.0.0.1:1\"}" > .tidemark/data/server.json
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" 15 "sql with a server file naming a live non-server pid"

# Beside a `tidemark refresh` that holds the file, a query waits for it and sees its rows.
rm -f .tidemark/data/server.json
duckdb_query "COPY (SELECT 1000 + range AS id, TIMESTAMP '2030-01-01' + to_microseconds(range) AS ts
              FROM range(2000000)) TO '$T/data/big.parquet' (FORMAT PARQUET)" >/dev/null
cat > big.yaml <<YAML
datasets:
  - from: file:data
    name: events
    params: {file_format: parquet}
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: full}
YAML
rm -f data/*.jsonl
tm refresh -c big.yaml >refresh.out 2>&1 &
refresh=$!
sleep 0.3
out=$(tm_sql big.yaml "SELECT count(*) FROM events")
wait "$refresh" || { cat refresh.out >&2; fail "the refresh"; }
[[ $out == 2000000 || $out == 15 ]] || fail "a query beside a refresh saw [$out]"
assert_eq "$(tm_sql big.yaml "SELECT count(*) FROM events")" 2000000
echo ok
