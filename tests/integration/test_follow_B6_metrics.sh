#!/usr/bin/env bash
# SPEC B6 in a running server: every fallback counts in
# dataset_acceleration_refresh_fallbacks{dataset,reason}, the warning is
# logged once per change of reason, and reads by time that are not fallbacks
# count nothing: the first load (B7) and a one-off refresh_sql (B11).
# The dataset's acceleration document shows the saved snapshot and the last
# fallback reason (issue 7).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: events
    time_column: ts
    acceleration: {refresh_mode: append, refresh_check_interval: 1h}
YAML
ice_create wh/events
ice_append wh/events "1,2026-11-30T10:00:00Z,a"
first=$(tm iceberg history wh/events --format csv | tr -d '\r' | sed -n 2p | cut -d, -f1)
current() { tm iceberg history wh/events --format csv | tr -d '\r' | awk -F, '$NF == "true" { print $1 }'; }
doc() { api GET /v1/datasets/events/acceleration; tr -d ' ' <<<"$BODY"; }
last_refresh() { doc | jq -c .last_refresh; }
# refresh [BODY]: triggers a refresh and waits for its outcome.
refresh() {
  local before; before=$(last_refresh)
  api POST /v1/datasets/events/acceleration/refresh ${1:+--data-binary "$1"}
  assert_eq "$STATUS" 201 "trigger: $BODY"
  wait_until 30 bash -c "[[ \$(curl -s $BASE/v1/datasets/events/acceleration | jq -c .last_refresh) != '$before' ]]" ||
    fail "the triggered refresh did not finish"
}
fallbacks() { # REASON: the counter's value (0 when absent)
  local v; v=$(metrics | sed -n "s/^dataset_acceleration_refresh_fallbacks{dataset=\"events\",reason=\"$1\"} //p")
  echo "${v:-0}"
}
start_server tm.yaml
wait_until 30 is_ready || fail "not ready"
assert_eq "$(doc | jq -r .last_refresh.read)" "time" "the first load reads by time (B7)"
assert_eq "$(metrics | grep -c '^dataset_acceleration_refresh_fallbacks{' || true)" "0" "B7 is not a fallback"

ice_append wh/events "2,2026-11-30T10:00:01Z,b"
refresh
assert_eq "$(doc | jq -r .last_refresh.read)" "snapshots"
# A rollback: the saved snapshot is no longer an ancestor (B5), twice.
for round in 1 2; do
  tm iceberg rollback wh/events --to "$first" >/dev/null
  ice_append wh/events "$((round + 2)),2026-11-30T10:00:0$((round + 1))Z,c"
  refresh
  assert_eq "$(doc | jq -r .last_refresh.fallback_reason)" "snapshot_not_ancestor"
  assert_eq "$(fallbacks snapshot_not_ancestor)" "$round" "every fallback counts"
done
assert_eq "$(grep -c 'reads by time instead of following snapshots: snapshot_not_ancestor' "$SERVER_LOG")" "1" \
  "the warning is logged once for the same reason"
assert_contains "$(doc)" "\"saved_snapshot_id\":$(current),"
assert_eq "$(doc | jq -r .last_fallback_reason)" "snapshot_not_ancestor"
# B11: a one-off refresh_sql reads by time and is no fallback.
ice_append wh/events "5,2026-11-30T10:00:05Z,e"
refresh '{"refresh_sql": "SELECT * FROM events"}'
assert_eq "$(doc | jq -r .last_refresh.read)" "time"
assert_eq "$(doc | jq -r .last_refresh.fallback_reason)" "null"
assert_eq "$(fallbacks snapshot_not_ancestor)" "2" "refresh_sql does not count"
# A replaced table: a new reason, counted and warned about.
tm iceberg replace-table wh/events >/dev/null
ice_append wh/events "6,2026-11-30T10:00:06Z,f"
refresh
assert_eq "$(fallbacks table_replaced)" "1"
assert_eq "$(doc | jq -r .last_fallback_reason)" "table_replaced"
assert_eq "$(grep -c 'reads by time instead of following snapshots: table_replaced' "$SERVER_LOG")" "1"
assert_eq "$(sql_value "SELECT group_concat(id, '-') AS ids FROM (SELECT id FROM events ORDER BY id)")" "1-2-3-4-5-6"
stop_server
echo ok
