#!/usr/bin/env bash
# Spice's refresh API and schedule on a real `tidemark run` (issue 17; SPEC
# C4, 1.3): dataset names in API paths match case-insensitively, the refresh
# body takes Spice's `refresh_jitter_max` (a duration; the refresh starts
# after a random delay below it), and `refresh_jitter_enabled` /
# `refresh_jitter_max` shift each scheduled refresh by up to the maximum,
# earlier or later.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/data"
gen_jsonl "$T/data/a.jsonl" 1 3
cat > "$T/tidemark.yaml" <<YAML
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: arrow, refresh_mode: append}
  - from: file:data
    name: ticks
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: arrow, refresh_mode: append, refresh_check_interval: 1s,
                   refresh_jitter_enabled: true, refresh_jitter_max: 900ms}
YAML
start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready"

# Names: any case reaches the dataset, as in Spice.
api POST /v1/datasets/EVENTS/acceleration/refresh
assert_eq "$STATUS" 201 "POST .../EVENTS/acceleration/refresh: $BODY"
assert_contains "$BODY" "Dataset refresh triggered for events."
api GET /v1/datasets/Events/acceleration
assert_eq "$STATUS" 200 "GET .../Events/acceleration"
assert_eq "$(jq -r .name <<<"$BODY")" events
api GET /v1/datasets/nope/acceleration
assert_eq "$STATUS" 404

# refresh_jitter_max in the body: a delay below it, then the refresh runs.
before=$(grep -c '\[events\] refresh finished' "$SERVER_LOG")
for i in 1 2 3 4 5 6; do
  wait_until 10 bash -c "[[ \$(grep -c '\[events\] refresh finished' '$SERVER_LOG') -ge $((before + i - 1)) ]]" ||
    fail "refresh $((i - 1)) did not finish"
  api POST /v1/datasets/events/acceleration/refresh --data '{"refresh_jitter_max": "700ms"}'
  assert_eq "$STATUS" 201 "jittered trigger: $BODY"
done
wait_until 10 bash -c "[[ \$(grep -c '\[events\] refresh finished' '$SERVER_LOG') -ge $((before + 6)) ]]" ||
  fail "the jittered refreshes did not all run"
mapfile -t delays < <(sed -n 's/.*\[events\] the refresh starts in \([0-9.]*\) s (refresh_jitter_max 0.700 s).*/\1/p' "$SERVER_LOG")
assert_eq "${#delays[@]}" 6 "each jittered trigger logs its delay"
for d in "${delays[@]}"; do
  awk -v d="$d" 'BEGIN { exit !(d >= 0 && d < 0.7) }' || fail "a delay of $d s is not below 0.7 s"
done
for body in '{"refresh_jitter_max": "soon"}' '{"refresh_jitter_max": 5}'; do
  api POST /v1/datasets/events/acceleration/refresh --data "$body"
  assert_eq "$STATUS" 400 "$body"
  assert_contains "$BODY" "refresh_jitter_max must be a duration"
done

# Spice's PATCH .../acceleration {"refresh_sql"}: the next refreshes read through it (none is
# triggered by it); GET .../acceleration shows it; null changes nothing; errors are 400/404.
api PATCH /v1/datasets/Events/acceleration -H 'Content-Type: application/json' \
  --data '{"refresh_sql": "SELECT * FROM events WHERE id >= 1000"}'
assert_eq "$STATUS" 200 "PATCH refresh_sql: $BODY"
assert_eq "$BODY" "" "PATCH answers 200 with no body, as Spice"
api GET /v1/datasets/events/acceleration
assert_eq "$(jq -r .refresh_sql <<<"$BODY")" "SELECT * FROM events WHERE id >= 1000"
gen_jsonl "$T/data/c.jsonl" 1000 2
gen_jsonl "$T/data/d.jsonl" 900 1 late
before=$(sql_value "SELECT count(*) AS n FROM events")
api POST /v1/datasets/events/acceleration/refresh
assert_eq "$STATUS" 201
wait_until 10 count_is events $((before + 2)) || fail "the refresh after PATCH did not read through the new refresh_sql"
sleep 0.5
count_is events $((before + 2)) || fail "a row outside the PATCHed refresh_sql was loaded"
api PATCH /v1/datasets/events/acceleration --data '{"refresh_sql": null}'
assert_eq "$STATUS" 200 "PATCH with null"
api GET /v1/datasets/events/acceleration
assert_eq "$(jq -r .refresh_sql <<<"$BODY")" "SELECT * FROM events WHERE id >= 1000" "null changes nothing"
for body in '{"refresh_sql": "DELETE FROM events"}' '{"refresh_sql": 5}' '{"nope": 1}' '[1]' '{bad'; do
  api PATCH /v1/datasets/events/acceleration --data "$body"
  assert_eq "$STATUS" 400 "PATCH $body: $BODY"
done
api PATCH /v1/datasets/nope/acceleration --data '{"refresh_sql": "SELECT 1"}'
assert_eq "$STATUS" 404
note "PATCH .../acceleration sets the refresh_sql of the next refreshes"

# The schedule: refreshes of ticks every 1 s, each shifted by up to 0.9 s.
n0=$(grep -c '\[ticks\] refresh finished' "$SERVER_LOG")
wait_until 30 bash -c "[[ \$(grep -c '\[ticks\] refresh finished' '$SERVER_LOG') -ge $((n0 + 8)) ]]" ||
  fail "ticks: no scheduled refreshes"
stop_server
gaps=$(grep '\[ticks\] refresh finished' "$SERVER_LOG" | tail -n +"$((n0 + 1))" |
  awk '{ split(substr($1, 12, 12), t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]
         if (NR > 1) printf "%.3f\n", s - prev; prev = s }')
note "ticks: gaps between scheduled refreshes: $(tr '\n' ' ' <<<"$gaps")"
# Each start is 1 s ± 0.9 s after the previous start: a gap lies in (0.1, 1.9)
# plus the refresh's own time; without jitter every gap would be 1.0 s.
awk '{ if ($1 < 0.05 || $1 > 2.5) bad = 1; if ($1 < 0.9 || $1 > 1.1) off++ }
     END { exit !(bad == 0 && off >= 2) }' <<<"$gaps" ||
  fail "ticks: the gaps do not show a jitter of up to 0.9 s"
echo ok
