#!/usr/bin/env bash
# The README's 5-minute tour, steps 1-4, run as written: every shell line of
# those code blocks, with `tidemark` the binary under test. Each command whose
# line ends in a comment that looks like output ("# events: +2 rows via time",
# "# [{"n":4}]") must print that text (timings aside), so the README cannot
# drift from what tidemark does. Step 4 runs `tidemark run` on the README's
# fixed ports (8090, 9090), waiting for it where a reader would, and checks
# that `tidemark sql` and `tidemark status` got their answers from it
# (issue 15: one process owns the files), the piped REPL step included
# (issue 17: .tables, .timer and a statement over two lines, on the server).
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir bin
ln -s "$TM_BIN" bin/tidemark
export PATH=$T/bin:$PATH
# The shell blocks between "## A 5-minute tour" and the next section as one script.
awk '/^## A 5-minute tour/ { on = 1; next } on && /^## / { on = 0 }
     on && /^```sh$/ { inblock = 1; next } on && /^```$/ { inblock = 0; next }
     on && inblock { print }' "$TM_SOURCE_DIR/README.md" >tour.sh
[[ $(grep -c '^tidemark' tour.sh) -ge 12 ]] || fail "the tour has too few commands: $(cat tour.sh)"
grep -q '^tidemark run &' tour.sh || fail "the tour has no step 4 (tidemark run &)"
# Expected outputs: a line "tidemark ... # TEXT" where TEXT looks like output
# (": +N rows" or JSON) becomes "check 'TEXT' tidemark ...".
check() {
  local want=$1; shift
  local out; out=$("$@" 2>&1 | tr -d '\n') || fail "tour command failed: $*: $out"
  assert_contains "$out" "$want" "tour: $*"
  echo x >>checks
}
# `tidemark run &` waits until the server is ready (as a reader would before
# the next line); `kill %1` waits until it has stopped and freed the files;
# `tidemark status` after the start keeps its output for the checks below.
awk '/^tidemark run &/ {
       print "TIDEMARK_LOG=info tidemark run >server.out 2>server.log &"
       print "for i in $(seq 300); do curl -sf localhost:8090/v1/ready >/dev/null && break; sleep 0.1; done"
       print "curl -sf localhost:8090/v1/ready >/dev/null || { cat server.log >&2; fail \"the tour server is not ready\"; }"
       started = 1; next }
     /^kill %1/ { print "kill %1; wait %1 || true"; next }
     /^tidemark[^#]*# ([a-z]+: \+|\[)/ {
       i = index($0, "# "); cmd = substr($0, 1, i - 1); want = substr($0, i + 2)
       sub(/ +$/, "", cmd); sub(/ in [0-9.]+ s$/, "", want); sub(/ \(the first load\)$/, "", want)
       print "check '"'"'" want "'"'"' " cmd; next }
     /^tidemark status/ && started { print "tidemark status 2>&1 | tee status.out"; next }
     /^tidemark sql <</ && started { print $0 " 2>&1 | tee repl.out"; next }
     { print }' tour.sh >tour-body.sh
{ declare -f fail assert_contains check; cat tour-body.sh; } >tour-checked.sh
bash -euo pipefail tour-checked.sh || fail "the tour failed"
checks=$(wc -l <checks)
[[ $checks -ge 8 ]] || fail "only $checks outputs checked"
# Step 4's status came from the server: every dataset Ready, none Initializing.
[[ -s status.out ]] || fail "step 4's tidemark status printed nothing"
assert_contains "$(cat status.out)" "Ready" "step 4: status from the server"
[[ $(cat status.out) != *Initializing* ]] || fail "step 4: status shows Initializing: $(cat status.out)"
# Step 4's piped statements: the datasets, then the two-line query, timed.
[[ -s repl.out ]] || fail "step 4's tidemark sql <<EOF printed nothing"
repl=$(tr -d '\r' <repl.out)
assert_contains "$repl" $'name   | kind\n-------+------------\nevents | accelerated\norders | accelerated\n(2 rows)' "step 4: .tables"
assert_contains "$repl" $'sku   | ts\n------+---------------------\napple | 2026-11-30T10:00:00Z\npear  | 2026-11-30T10:01:00Z\n(2 rows)\nRun Time: ' "step 4: the query"
# (tidemark sql's answer came from the server too: with the server holding the
# files, opening them here would have failed after 10 s.)
grep -q "HTTP API listening on 127.0.0.1:8090" server.log || fail "step 4: the server did not listen on :8090"
[[ ! -e .tidemark/data/server.json ]] || fail "the server file outlived the server"
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" "4"
assert_eq "$(tm_sql tidemark.yaml "SELECT string_agg(sku, ' ' ORDER BY id) FROM orders")" "apple pear fig"
echo ok
