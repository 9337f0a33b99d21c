#!/usr/bin/env bash
# Readiness (SPEC C1) on a real `tidemark run`: a file-mode append dataset
# whose acceleration exists is ready and serves at once, also while its source
# folder is gone; its first refresh once the source is back catches up from
# the acceleration's newest time. For the sqlite and cayenne engines.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

for engine in sqlite cayenne; do
  dir=$T/$engine
  mkdir -p "$dir/data"
  gen_jsonl "$dir/data/a.jsonl" 1 5
  cat > "$dir/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: ready
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: append, refresh_check_interval: 1s}
YAML
  start_server "$dir/tidemark.yaml"
  wait_until 20 count_is events 5 || fail "$engine: first load"
  stop_server

  # The source disappears; the acceleration stays.
  mv "$dir/data" "$dir/data.away"
  start_server "$dir/tidemark.yaml"
  # Ready as soon as it is open: before any refresh could succeed.
  wait_until 10 is_ready || fail "$engine: not ready with an existing acceleration (C1)"
  assert_eq "$(sql_value 'SELECT count(*) FROM events')" 5 "$engine: serves the stored rows"
  grep -q '\[events\] opened existing acceleration' "$SERVER_LOG" || fail "$engine: reopen logged"
  # The refresh fails (source unavailable, D3), the dataset keeps serving and stays ready.
  wait_until 10 grep -q '\[events\] refresh failed: .*source folder does not exist' "$SERVER_LOG" ||
    fail "$engine: refresh failure logged"
  api GET /v1/datasets/events/acceleration
  assert_eq "$(jq -r '.status, .ready, .rows, .high_water_mark' <<<"$BODY" | tr '\n' ' ')" \
    "Error true 5 2024-01-01T00:00:05Z " "$engine: Error but ready and serving"
  [[ $(jq -r .last_error.message <<<"$BODY") == *"does not exist"* ]] || fail "$engine: last_error"
  is_ready || fail "$engine: still ready after the failed refresh"

  # The source comes back with more rows: the retry catches up from the stored maximum (C1, A2).
  mv "$dir/data.away" "$dir/data"
  gen_jsonl "$dir/data/b.jsonl" 6 3
  wait_until 20 count_is events 8 || fail "$engine: caught up"
  wait_until 10 bash -c "curl -s '$BASE/v1/datasets?status=true' | jq -e '.[0].status == \"Ready\"'" ||
    fail "$engine: Ready again"
  # The refresh that caught up read only the 3 new rows. Read from the log, not from
  # last_refresh: with a 1 s interval a later refresh (+0) can replace it before we look.
  grep -q '\[events\] refresh finished: +3 rows via time in [0-9.]* s; read 3 rows' "$SERVER_LOG" ||
    fail "$engine: only the new rows were read: $(grep '\[events\] refresh finished' "$SERVER_LOG" | tail -3)"
  stop_server
  # `tidemark status -c` reads the same state in-process once the server is gone.
  js=$(tm status -c "$dir/tidemark.yaml" --format json)
  assert_eq "$(jq -r '.[0] | "\(.status) \(.rows) \(.high_water_mark)"' <<<"$js")" \
    "Ready 8 2024-01-01T00:00:08Z" "$engine: status -c"
  out=$(tm status -c "$dir/tidemark.yaml")
  assert_contains "$(grep '^events' <<<"$out")" "2024-01-01T00:00:08Z"
done
echo ok
