#!/usr/bin/env bash
# Issue 6 CLI: on a terminal `tidemark refresh` shows progress (files and rows
# read, rate) on stderr before its summary line; piped, it prints only the
# summary. The terminal is a pseudo-terminal made by script(1).
source "$(dirname "$0")/lib.sh"
cd "$T"
mkdir data
files=()
for k in 0 1 2; do
  files+=("data/f$k.parquet" "SELECT range AS id, TIMESTAMP '2026-01-01' + to_microseconds(range) AS ts FROM range($k * 300000, ($k + 1) * 300000)")
done
write_parquets "${files[@]}"
cat > tm.yaml <<YAML
datasets:
  - from: file:data
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
script -qec "$TM_BIN refresh -c tm.yaml" /dev/null >tty.out
assert_contains "$(cat tty.out)" "events: +900000 rows via time"
grep -q 'events: [0-9]* files, [0-9]* rows read ([0-9]* rows/s)' tty.out || fail "no progress line on a terminal: $(cat -v tty.out)"
# Piped: the summary only, nothing on stderr.
rm -rf .tidemark
tm refresh -c tm.yaml >piped.out 2>piped.err
assert_eq "$(cat piped.out)" "$(grep -o 'events: +900000 rows via time in [0-9.]* s' piped.out)"
assert_eq "$(cat piped.err)" ""
echo ok
