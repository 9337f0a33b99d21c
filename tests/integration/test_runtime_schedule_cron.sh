#!/usr/bin/env bash
# Spice's refresh_cron and refresh_on_startup on a real `tidemark run`
# (issue 17, SPEC C4; docs/REFRESH.md "Scheduling"):
#  - refresh_cron fires at the schedule's instants in local time (TZ), every
#    start being on an even second for '*/2 * * * * *', and loads new files;
#  - refresh_on_startup: auto refreshes at start only what is due: a file
#    acceleration refreshed within its interval waits (and serves at once,
#    C1), one whose interval elapsed refreshes, one without a schedule waits
#    for a trigger, a memory acceleration always loads, a cron schedule
#    whose firing passed since the last refresh refreshes;
#  - refresh_on_startup: always (the default) refreshes at every start.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

export TZ=America/New_York # local time: the schedules are evaluated in it

# started_at_seconds LOG DATASET: the seconds field of each "refresh started" line of DATASET.
started_seconds() { sed -n "s/^....-..-..T..:..:\(..\)\.\(...\)Z INFO  \[$2\] refresh started.*/\1.\2/p" "$1"; }
starts() { grep -c "\[$2\] refresh started" "$1" || true; }

# ---- refresh_cron -----------------------------------------------------------------------
mkdir -p "$T/cron/ev"
gen_jsonl "$T/cron/ev/a.jsonl" 1 3
cat > "$T/cron/tidemark.yaml" <<YAML
datasets:
  - from: file:ev
    name: ev
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: duckdb, refresh_mode: append, refresh_cron: '*/2 * * * * *'}
YAML
start_server "$T/cron/tidemark.yaml"
wait_until 10 count_is ev 3 || fail "the start refresh did not load 3 rows"
gen_jsonl "$T/cron/ev/b.jsonl" 4 2
wait_until 10 count_is ev 5 || fail "no cron refresh loaded the new file"
# Until the fourth start (the one at load and three cron firings), not a fixed sleep.
wait_until 15 bash -c "(( \$(grep -c '\[ev\] refresh started' '$SERVER_LOG') >= 4 ))" || true
stop_server
n=$(starts "$SERVER_LOG" ev)
((n >= 4)) || fail "expected at least 4 refresh starts (start + cron), saw $n"
# Every start after the first (at load) is in an even second (a cron firing on an odd schedule
# would start in an odd one); under a loaded CI machine a start may log most of a second late.
started_seconds "$SERVER_LOG" ev | tail -n +2 | while read -r s; do
  python3 -c "import sys; s=float(sys.argv[1]); sys.exit(0 if int(s) % 2 == 0 else 1)" "$s" ||
    fail "a cron refresh started at second $s, not on an even second"
done
note "refresh_cron '*/2 * * * * *': $n refresh starts, each on an even second"

# ---- refresh_on_startup ---------------------------------------------------------------------
mkdir -p "$T/boot/src"
gen_jsonl "$T/boot/src/a.jsonl" 1 3
write_pod() { # write_pod EXTRA_FOR_ALL: five datasets over one folder, each another case
  cat > "$T/boot/tidemark.yaml" <<YAML
datasets:
  - {from: file:src, name: within, params: {file_format: jsonl}, time_column: ts,
     acceleration: {refresh_mode: append, refresh_check_interval: 1h $1}}
  - {from: file:src, name: elapsed, params: {file_format: jsonl}, time_column: ts,
     acceleration: {refresh_mode: append, refresh_check_interval: 2s $1}}
  - {from: file:src, name: ondemand, params: {file_format: jsonl}, time_column: ts,
     acceleration: {refresh_mode: append $1}}
  - {from: file:src, name: inmemory, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: arrow, refresh_mode: append, refresh_check_interval: 1h $1}}
  - {from: file:src, name: yearly, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: sqlite, mode: file, refresh_mode: append, refresh_cron: '0 0 1 1 *' $1}}
  - {from: file:src, name: secondly, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: duckdb, mode: file, refresh_mode: append, refresh_cron: '* * * * * *' $1}}
YAML
}
all=(within elapsed ondemand inmemory yearly secondly)
write_pod ", refresh_on_startup: auto"
# First start: nothing persisted yet, so auto loads every dataset at start.
start_server "$T/boot/tidemark.yaml"
for ds in "${all[@]}"; do wait_until 15 count_is "$ds" 3 || fail "$ds: first start did not load 3 rows"; done
stop_server
sleep 2.2 # past the 2 s interval of "elapsed"
gen_jsonl "$T/boot/src/b.jsonl" 4 2
start_server "$T/boot/tidemark.yaml"
wait_until 10 count_is elapsed 5 || fail "elapsed: its interval passed, the start refresh should load 5 rows"
wait_until 10 count_is inmemory 5 || fail "inmemory: a memory acceleration must load at start"
wait_until 10 count_is secondly 5 || fail "secondly: a cron firing passed, the start refresh should load"
for ds in within ondemand yearly; do
  is_ready || true
  count_is "$ds" 3 || fail "$ds: refreshed at start although refresh_on_startup: auto and nothing was due"
done
is_ready || fail "the waiting datasets serve their acceleration at once (C1)"
assert_eq "$(starts "$SERVER_LOG" within)" 0 "within: refresh starts"
assert_eq "$(starts "$SERVER_LOG" ondemand)" 0 "ondemand: refresh starts"
assert_eq "$(starts "$SERVER_LOG" yearly)" 0 "yearly: refresh starts"
grep -q '\[within\] refresh_on_startup: auto: the last refresh was [0-9.]* s ago; the next one in 35[0-9][0-9]\.[0-9] s' "$SERVER_LOG" ||
  { grep within "$SERVER_LOG" >&2; fail "within: no log line giving the next refresh"; }
grep -q '\[ondemand\] refresh_on_startup: auto: .* the next one only on demand' "$SERVER_LOG" ||
  fail "ondemand: no 'only on demand' log line"
grep -q '\[yearly\] refresh_on_startup: auto: .* the next one in [0-9]*\.[0-9] s' "$SERVER_LOG" ||
  fail "yearly: no log line giving its next firing"
# An API trigger still refreshes a dataset that waits.
api POST /v1/datasets/ondemand/acceleration/refresh
assert_eq "$STATUS" 201 "trigger ondemand"
wait_until 10 count_is ondemand 5 || fail "ondemand: the trigger did not load the new rows"
stop_server
note "refresh_on_startup: auto: due datasets refreshed at start, the others waited and served"

# The default (always): every dataset refreshes at start, whatever its schedule.
write_pod ""
gen_jsonl "$T/boot/src/c.jsonl" 6 1
start_server "$T/boot/tidemark.yaml"
for ds in "${all[@]}"; do wait_until 15 count_is "$ds" 6 || fail "$ds: refresh_on_startup: always did not load at start"; done
stop_server
note "refresh_on_startup: always (default): every dataset refreshed at start"
echo "ok"
