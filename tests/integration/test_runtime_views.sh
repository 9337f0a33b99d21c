#!/usr/bin/env bash
# Spice's top-level views: on a real `tidemark run` (issue 17): a view over an
# accelerated and a federated dataset is queried by name (it was: no such
# table), follows refreshes, and passes the read-only gate when it is created
# (a view that reads a file is refused, logged, and never listed); config
# check refuses a view that is not a query or that takes a dataset's name.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/data"
gen_jsonl "$T/data/a.jsonl" 1 10
cat > "$T/pod.yaml" <<YAML
version: v2
kind: Spicepod
name: views
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: duckdb, mode: file, refresh_mode: append}
  - from: file:data
    name: raw
    params: {file_format: jsonl}
views:
  - name: recent
    description: the events after the fifth
    sql: SELECT id, v FROM events WHERE id > 5
  - name: joined
    sql: |
      WITH r AS (SELECT id FROM raw)
      SELECT count(*) AS n FROM events JOIN r USING (id)
  - name: sneaky
    sql: SELECT * FROM read_csv('/etc/passwd')
YAML
start_server "$T/pod.yaml"
wait_until 30 is_ready || fail "not ready"
wait_until 20 grep -q '\[joined\] view created' "$SERVER_LOG" || fail "views not created: $(cat "$SERVER_LOG")"
assert_eq "$(sql_value 'SELECT count(*) FROM recent')" 5 "recent"
assert_eq "$(sql_value 'SELECT n FROM joined')" 10 "joined over an accelerated and a federated dataset"
assert_eq "$(sql_value 'SELECT count(*) FROM RECENT')" 5 "view names are case-insensitive"
# The view follows the acceleration.
gen_jsonl "$T/data/b.jsonl" 11 5 late
api POST /v1/datasets/events/acceleration/refresh
wait_until 20 count_is recent 10 || fail "the view did not follow the refresh"
# The gate refuses a view that reads files; it is logged and never listed.
wait_until 20 grep -q '\[sneaky\] view not created: .*read_csv' "$SERVER_LOG" ||
  fail "the file-reading view: $(grep sneaky "$SERVER_LOG")"
sql "SELECT * FROM sneaky"
[[ $STATUS == 400 ]] || fail "sneaky answered: $STATUS $BODY"
stop_server

# config check: a view that is not a query, or that takes a dataset's name.
refused() {
  cat > "$T/bad.yaml" <<YAML
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
views:
  - name: $1
    sql: $2
YAML
  set +e
  tm config check -c "$T/bad.yaml" > /dev/null 2> "$T/err"; rc=$?
  set -e
  [[ $rc -ne 0 ]] || fail "config check accepted view $1"
  grep -q -- "$3" "$T/err" || fail "view $1: $(cat "$T/err")"
}
refused v "DROP TABLE events" "a view's sql must be a query (SELECT or WITH)"
refused Events "SELECT 1" "view 'Events': a dataset has that name"
echo ok
