#!/usr/bin/env bash
# The README's 5-minute tour, steps 1-3, run as written: every shell line of
# those code blocks, with `tidemark` the binary under test. Each command whose
# line ends in a comment that looks like output ("# events: +2 rows via time",
# "# [{"n":4}]") must print that text (timings aside), so the README cannot
# drift from what tidemark does. Step 4 (`tidemark run` on fixed ports) is
# covered by the runtime tests.
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir bin
ln -s "$TM_BIN" bin/tidemark
export PATH=$T/bin:$PATH
# The shell blocks between "## A 5-minute tour" and "**4." as one script.
awk '/^## A 5-minute tour/ { on = 1 } /^\*\*4\./ { on = 0 }
     on && /^```sh$/ { inblock = 1; next } on && /^```$/ { inblock = 0; next }
     on && inblock { print }' "$TM_SOURCE_DIR/README.md" >tour.sh
[[ $(grep -c '^tidemark' tour.sh) -ge 10 ]] || fail "the tour has too few commands: $(cat tour.sh)"
# Expected outputs: a line "tidemark ... # TEXT" where TEXT looks like output
# (": +N rows" or JSON) becomes "check 'TEXT' tidemark ...".
check() {
  local want=$1; shift
  local out; out=$("$@" 2>&1 | tr -d '\n') || fail "tour command failed: $*: $out"
  assert_contains "$out" "$want" "tour: $*"
  echo x >>checks
}
awk '/^tidemark[^#]*# ([a-z]+: \+|\[)/ {
       i = index($0, "# "); cmd = substr($0, 1, i - 1); want = substr($0, i + 2)
       sub(/ +$/, "", cmd); sub(/ in [0-9.]+ s$/, "", want); sub(/ \(the first load\)$/, "", want)
       print "check '"'"'" want "'"'"' " cmd; next }
     { print }' tour.sh >tour-body.sh
{ declare -f fail assert_contains check; cat tour-body.sh; } >tour-checked.sh
bash -euo pipefail tour-checked.sh || fail "the tour failed"
checks=$(wc -l <checks)
[[ $checks -ge 7 ]] || fail "only $checks outputs checked"
assert_eq "$(tm_sql tidemark.yaml "SELECT count(*) FROM events")" "4"
assert_eq "$(tm_sql tidemark.yaml "SELECT group_concat(sku, ' ') FROM (SELECT sku FROM orders ORDER BY id)")" "apple pear fig"
echo ok
