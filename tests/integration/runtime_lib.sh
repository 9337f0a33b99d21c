# Helpers for the runtime's integration tests (sourced after lib.sh, not run).
# A server is a real `tidemark run` on 127.0.0.1 with ports the kernel picks
# (port 0), read back from its log; requests go through curl.

SERVER_PID=
SERVER_LOG=
HTTP_PORT=
METRICS_PORT=
N_SERVERS=0

# start_server CONFIG [extra tidemark run args...]: starts and waits until it listens.
start_server() {
  local cfg=$1
  shift
  N_SERVERS=$((N_SERVERS + 1))
  SERVER_LOG=$T/server.$N_SERVERS.log
  TIDEMARK_LOG=${TIDEMARK_LOG:-info} "$TM_BIN" run -c "$cfg" --http 127.0.0.1:0 \
    --metrics 127.0.0.1:0 "$@" >"$SERVER_LOG.out" 2>"$SERVER_LOG" &
  SERVER_PID=$!
  local i
  for i in $(seq 200); do
    if grep -q 'HTTP API listening on' "$SERVER_LOG" 2>/dev/null; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$SERVER_LOG" >&2; fail "server exited at start"; }
    sleep 0.05
  done
  HTTP_PORT=$(sed -n 's/.*HTTP API listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$SERVER_LOG" | head -1)
  METRICS_PORT=$(sed -n 's/.*metrics listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$SERVER_LOG" | head -1)
  [[ -n $HTTP_PORT ]] || { cat "$SERVER_LOG" >&2; fail "no HTTP port in the server log"; }
  BASE=http://127.0.0.1:$HTTP_PORT
}

# stop_server [SIGNAL]: stops the server and checks a clean exit (code 0).
stop_server() {
  local sig=${1:-TERM} rc=0
  [[ -n $SERVER_PID ]] || return 0
  kill -"$sig" "$SERVER_PID"
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  assert_eq "$rc" 0 "server exit code after SIG$sig"
  if grep -q 'ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer' "$SERVER_LOG"; then
    cat "$SERVER_LOG" >&2
    fail "sanitizer report in the server log"
  fi
}

# api METHOD PATH [curl args...]: sets STATUS and BODY.
api() {
  local method=$1 path=$2
  shift 2
  local out
  out=$(curl -s -o "$T/body" -w '%{http_code}' -X "$method" "$@" "$BASE$path") || true
  STATUS=$out
  BODY=$(cat "$T/body" 2>/dev/null || true)
}

metrics() { curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" "$@"; }

# metric_sum NAME [SCRAPE]: the sum of every series of the family NAME in a
# scrape (a new one by default); 0 when it has none. The query families carry
# Spice's labels (tags, datasets, err_code, protocol), so a total is a sum.
metric_sum() {
  local scrape
  if (($# > 1)); then scrape=$2; else scrape=$(metrics); fi
  awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { print s + 0 }' <<<"$scrape"
}

# sql QUERY [curl args...]: BODY and STATUS of POST /v1/sql.
sql() {
  local q=$1
  shift
  api POST /v1/sql --data-binary "$q" "$@"
}

# wait_until SECONDS COMMAND...: polls the command until it succeeds.
wait_until() {
  local secs=$1
  shift
  local end=$((SECONDS + secs))
  while ((SECONDS <= end)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

is_ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/ready" "$@") == 200 ]]; }

# sql_value QUERY: the first column of the first row (JSON answer).
sql_value() {
  sql "$1" "${@:2}"
  [[ $STATUS == 200 ]] || fail "query failed ($STATUS): $1: $BODY"
  jq -r '.[0] | to_entries[0].value' <<<"$BODY"
}

# count_is TABLE N: the table holds N rows.
count_is() { [[ $(sql_value "SELECT count(*) AS n FROM $1") == "$2" ]]; }

# A JSON-lines file of N rows: ids from FIRST, one per second from a base time.
# gen_jsonl FILE FIRST N [batch]
gen_jsonl() {
  python3 - "$@" <<'PY'
import sys, datetime
path, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
batch = sys.argv[4] if len(sys.argv) > 4 else "b0"
base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
with open(path + ".tmp", "w") as f:
    for i in range(first, first + n):
        ts = (base + datetime.timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        f.write('{"id": %d, "ts": "%s", "batch": "%s", "v": %d}\n' % (i, ts, batch, i % 7))
import os
os.rename(path + ".tmp", path)
PY
}
