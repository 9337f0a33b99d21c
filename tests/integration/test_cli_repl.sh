#!/usr/bin/env bash
# Issue 17, SPEC 1.2: `tidemark sql` without QUERY. One loop, whether the
# statements run in this process or on a running server:
#   - piped statements (a multi-line statement, two on one line, comments,
#     `;` in a string, .tables, .schema NAME, .timer on, .mode csv, an SQL
#     error and an unknown command that do not stop the loop, an
#     unterminated last statement) give the same output in-process, through
#     the server that owns the config, and with --url; the exit code says
#     that something failed (2: refused SQL or a bad command, 1: no server);
#   - on a real terminal (tmux): the prompt and the continuation prompt,
#     Ctrl-C dropping a half-typed statement, line editing (cursor moved
#     back, a character inserted), the history recalled with the up arrow,
#     within a session and in the next one through the history file (mode
#     600, multi-line entries, nothing of a dropped line), and a history
#     file that cannot be loaded left untouched.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
command -v tmux >/dev/null || fail "tmux is missing (scripts/install-deps installs it)"
cd "$T"
mkdir -p bin data/events data/fed
ln -s "$TM_BIN" bin/tidemark
printf 'ts,user,amount\n2026-11-30T10:00:00Z,ann,12.5\n2026-11-30T10:05:00Z,bob,3\n' >data/events/part-1.csv
printf 'ts,user,amount\n2026-11-30T11:00:00Z,cy,7\n' >data/fed/part-1.csv
cat >tidemark.yaml <<'YAML'
datasets:
  - from: file:data/events
    name: events
    time_column: ts
    acceleration: {enabled: true, refresh_mode: append, refresh_check_interval: 1h}
  - from: file:data/fed
    name: fed
views:
  - name: big
    sql: SELECT user, amount FROM events WHERE amount > 5
YAML
tm refresh -c tidemark.yaml >/dev/null

# ---- piped statements ----------------------------------------------------------------------
cat >q.sql <<'SQL'
-- statements from a file, as `psql -f` reads them
.tables
.schema events
.timer on
SELECT user,
       amount
  FROM events
 ORDER BY user;  SELECT count(*) AS n FROM fed;
SELECT * FROM no_such_table;
.mode csv
SELECT 'semi;colon' AS s, user /* a ; in a comment */ FROM big ORDER BY user;
.bogus
.timer off
SELECT 40 + 2 AS last   -- the last statement has no ';'
SQL
cat >want.out <<'OUT'
name   | kind
-------+------------
big    | view
events | accelerated
fed    | federated
(3 rows)
column | type                     | nullable
-------+--------------------------+---------
ts     | TIMESTAMP WITH TIME ZONE | YES
user   | VARCHAR                  | YES
amount | DOUBLE                   | YES
(3 rows)
user | amount
-----+-------
ann  |   12.5
bob  |      3
(2 rows)
Run Time: S
n
-
1
(1 row)
Run Time: S
Run Time: S
s,user
semi;colon,ann
Run Time: S
last
42
OUT
# run_script LABEL ARGS...: q.sql piped into tidemark sql ARGS; checks output, errors, exit code 2.
run_script() {
  local label=$1 rc=0
  shift
  tm sql "$@" <q.sql >"$label.out" 2>"$label.err" || rc=$?
  assert_eq "$rc" 2 "$label: exit code (an SQL error and an unknown command)"
  # (CSV lines end in CRLF, RFC 4180)
  sed -E -e 's/\r$//' -e 's/^Run Time: [0-9]+\.[0-9]{3} s$/Run Time: S/' "$label.out" >"$label.norm"
  diff -u want.out "$label.norm" >&2 || fail "$label: the output differs from the expected one"
  assert_contains "$(cat "$label.err")" "no_such_table" "$label: the SQL error"
  assert_contains "$(cat "$label.err")" "unknown command '.bogus' (.help lists the commands)" "$label"
  assert_eq "$(grep -c . "$label.err")" 2 "$label: two errors: $(cat "$label.err")"
}
run_script local -c tidemark.yaml
# Everything fine: exit 0; several statements on a line, comment-only lines.
out=$(printf -- '-- nothing\n;;\nSELECT 1 AS a; SELECT 2 AS b;\n' | tm sql -c tidemark.yaml --format csv | tr -d "\r")
assert_eq "$out" $'a\n1\nb\n2' "two statements on one line"
# No server there: each statement fails (exit 1), and the loop still goes on.
rc=0
printf 'SELECT 1;\nSELECT 2;\n' | tm sql --url http://127.0.0.1:9 >/dev/null 2>nosrv.err || rc=$?
assert_eq "$rc" 1 "no server: exit code"
assert_eq "$(grep -c 'Could not connect\|Couldn.t connect' nosrv.err)" 2 "both statements tried: $(cat nosrv.err)"

start_server tidemark.yaml
wait_until 30 is_ready || fail "the server is not ready"
run_script owner -c tidemark.yaml # the server that owns the files answers (SPEC 1.2)
run_script url --url "$BASE"

# ---- a real terminal -----------------------------------------------------------------------
N_TERMS=0
TMUX_SOCK=$T/tmux.0.sock
tmx() { tmux -S "$TMUX_SOCK" "$@"; }
pane() { tmx capture-pane -p -J -S - -t repl; }
# wait_pane TEXT: until the pane shows TEXT (10 s).
wait_pane() {
  local i
  for i in $(seq 100); do
    [[ $(pane) == *"$1"* ]] && return 0
    sleep 0.1
  done
  pane >&2
  fail "the terminal does not show [$1]"
}
# Keys: text typed literally (a trailing ';' would end tmux's command: always "; ").
type_text() { tmx send-keys -t repl -l -- "$1"; }
key() { tmx send-keys -t repl "$@"; }
# start_repl ENV...: tidemark sql on a fresh terminal (ends within 120 s whatever happens),
# on a tmux server of its own (a new session on a server still shutting down fails).
start_repl() {
  tmx kill-server 2>/dev/null || true
  N_TERMS=$((N_TERMS + 1))
  TMUX_SOCK=$T/tmux.$N_TERMS.sock
  tmx -f /dev/null new-session -d -s repl -x 150 -y 50 \
    "cd $T && env $* PATH=$T/bin:\$PATH timeout --foreground 120 tidemark sql; echo EXIT=\$?; sleep 60"
}
stop_repl() { tmx kill-server 2>/dev/null || true; }
# wait_line REGEX [N]: until N (1) lines of the pane match.
wait_line() {
  local i
  for i in $(seq 100); do
    (($(pane | grep -c -- "$1") >= ${2:-1})) && return 0
    sleep 0.1
  done
  pane >&2
  fail "the terminal does not show ${2:-1} lines like [$1]"
}
# The session's terminal shows no sanitizer report.
check_clean() {
  if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' <<<"$(pane)"; then
    pane >&2
    fail "sanitizer report on the terminal"
  fi
}
# lib.sh's EXIT trap (clean-up, background jobs) runs after the terminal is gone.
# (trap -p alone in the substitution: in a pipeline it would show a subshell's traps.)
lib_trap=$(trap -p EXIT)
lib_trap=${lib_trap#trap -- \'}
lib_trap=${lib_trap%\' EXIT}
[[ $lib_trap == 'rc=$?;'*"jobs -p"* ]] || fail "lib.sh's EXIT trap not found: [$lib_trap]"
trap "rc_=\$?; stop_repl; ${lib_trap/'rc=$?'/'rc=$rc_'}" EXIT

# Session 1, on the server (it owns tidemark.yaml).
start_repl TIDEMARK_HISTORY=$T/hist
wait_pane "SQL over $BASE (the server running tidemark.yaml)"
wait_pane "tidemark> "
type_text "SELECT 'first' AS w,"; key Enter
wait_pane "     ...> "
type_text "  40 + 2 AS n; "; key Enter
wait_pane "first | 42"
type_text "SELECT 'dropped"; key Enter
wait_line '^     \.\.\.> ' 2
type_text "more"
wait_pane "     ...> more" # (the terminal's ^C would flush input not read yet)
key C-c
wait_pane "     ...> more^C"
type_text "SELECT 'after' AS w; "; key Enter
wait_line '^after *$' # (had the dropped lines run, 'after' would be inside their string)
# Line editing: the cursor moves back 14 characters (before the c) and a b goes in.
type_text "SELECT 'ac' AS edited; "; key -N 14 Left; type_text "b"; key Enter
wait_line '^abc *$'
# History within the session: two up, the statement before the edited one.
key Up; key Up; sleep 0.3; key Enter
wait_line '^after *$' 2
type_text ".tables"; key Enter
wait_pane "events | accelerated"
key C-d
wait_pane "EXIT=0"
check_clean
[[ -f hist ]] || fail "no history file"
assert_eq "$(stat -c %a hist)" 600 "history file mode"
hist=$(cat hist)
assert_contains "$hist" "SELECT\\040'first'\\040AS\\040w,\\012\\040\\04040\\040+\\0402\\040AS\\040n;" "a multi-line entry"
assert_contains "$hist" "SELECT\\040'abc'\\040AS\\040edited;" "the edited line"
[[ $hist != *dropped* ]] || fail "the dropped statement is in the history: $hist"

# Session 2, in this process (the server stopped): the history file brings session 1 back.
stop_server
start_repl TIDEMARK_HISTORY=$T/hist
wait_pane "SQL over tidemark.yaml, in this process"
wait_pane "tidemark> "
type_text ".timer on"; key Enter
# Up: .timer on, then session 1's .tables, the recalled statement, the edited line.
key Up; key Up; key Up; key Up; sleep 0.3; key Enter
wait_line '^abc *$'
wait_pane "Run Time: "
type_text ".quit"; key Enter
wait_pane "EXIT=0"
check_clean
assert_contains "$(cat hist)" ".timer\\040on" "session 2's lines saved"

# A history file that cannot be loaded (a folder) is left as it is; the REPL still runs.
mkdir histdir
start_repl TIDEMARK_HISTORY=$T/histdir
wait_pane "history file $T/histdir: not a regular file; it is left as it is"
wait_pane "tidemark> "
type_text "SELECT 7 AS seven; "; key Enter
wait_pane "(1 row)"
key C-d
wait_pane "EXIT=0"
[[ -d histdir && -z $(ls -A histdir) ]] || fail "the history folder was changed"
check_clean
stop_repl
echo ok
