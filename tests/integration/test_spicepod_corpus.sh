#!/usr/bin/env bash
# Issue 17, SPEC 1.1-1.4, C1, D4: a corpus of spicepods taken from Spice's
# public repositories and docs (tests/cases/spicepods/<name>/spicepod.yaml, each
# with its origin in its header), adapted only in `from` and endpoints. Each one
# either loads, and then each of its datasets refreshes and answers a query, or
# is refused with the message docs/SPICE.md documents.
#
# A pod's folder holds:
#   spicepod.yaml  the pod; @S3PUB@, @S3PRIV@, @AZEP@, @ICEREST@, @ICEOAUTH@,
#                  @GLUE@, @DIR@ (the pod's work folder), @ICEMETA@ and @DATA@
#                  (the shared data) are filled in here
#   expect         what must happen, one directive a line ('#' comments):
#     loads | refused: TEXT      the outcome (exit code 2 and TEXT on stderr of
#                                `tidemark config check` and of `tidemark run`)
#     env NAME=VALUE             exported before the pod is checked and run
#     api_key KEY                the API needs this key (a request without it is 401)
#     timeout SECONDS            how long the next checks may poll (default 30)
#     check NAME: SQL => WANT    POST /v1/sql (text/csv, header dropped) must give
#                                WANT: literal CSV rows ('\n' between rows), or
#                                `duckdb: SQL` run by DuckDB in the work folder
#                                over the same source files (an independent
#                                reader); NAME is a dataset or view, '-' for none.
#                                Polled until equal (refreshes are asynchronous).
#     run FUNCTION               a function of the pod's setup.sh (e.g. new files)
#     refresh NAME               POST /v1/datasets/NAME/acceleration/refresh: 201
#     slow STEP                  STEP (timeout, check, ...) only with TM_STRESS=1: it
#                                waits on the pod's own schedule (the retention pod's 60 s)
#   setup.sh       optional; defines setup() (called in the work folder before
#                  the pod is filled in) and the functions `run` names.
# Every dataset `tidemark config check` lists must have a check. The servers
# (two s3rver, Azurite, two Iceberg REST catalogs, the Glue server) start once;
# pods run four at a time (TM_CORPUS_JOBS). Prints one line per pod, then
# "N passed, M failed".
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
source "$(dirname "$0")/azurite_lib.sh"
CORPUS=$TM_SOURCE_DIR/tests/cases/spicepods
[[ -d $CORPUS ]] || fail "no corpus at $CORPUS"
command -v jq >/dev/null || fail "jq is missing"
[[ -d $TM_SOURCE_DIR/tests/node/node_modules/s3rver ]] || skip "npm test peers missing (scripts/install-test-deps)"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION \
  AWS_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AZURITE_BLOB_STORAGE_URL
export AWS_EC2_METADATA_DISABLED=true AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
cd "$T"
DATA=$T/data
mkdir -p "$DATA/taxi" s3pub s3priv icewh iceoauthwh glue pods results

# ---- shared data, written by DuckDB ------------------------------------------
# NYC-taxi-shaped trips, pickups spread over the last ~8 years relative to now
# (no pickup within 10 days of 4 years ago: the retention pod's cutoff).
taxi_part() { # taxi_part N FIRST END: the COPY of one file
  echo "COPY (
    SELECT (i % 2 + 1)::INTEGER AS VendorID,
           (now() AT TIME ZONE 'UTC') - to_days(d::INTEGER) - to_minutes((i % 600)::INTEGER) AS tpep_pickup_datetime,
           (now() AT TIME ZONE 'UTC') - to_days(d::INTEGER) + to_minutes((i % 37)::INTEGER) AS tpep_dropoff_datetime,
           (i % 6)::BIGINT AS passenger_count, round((i % 170) / 10.0, 1) AS trip_distance,
           (i % 263 + 1)::INTEGER AS PULocationID, ((i * 7) % 263 + 1)::INTEGER AS DOLocationID,
           round(3 + (i % 90) * 0.5, 2) AS fare_amount, round((i % 11) * 0.35, 2) AS tip_amount,
           round(3 + (i % 90) * 0.5 + (i % 11) * 0.35, 2) AS total_amount
    FROM (SELECT i, CASE WHEN (i * 13) % 2900 BETWEEN 1450 AND 1470 THEN (i * 13) % 2900 + 40
                         ELSE (i * 13) % 2900 END AS d
          FROM range($2, $3) t(i))) TO '$DATA/taxi/part-$1.parquet' (FORMAT PARQUET);"
}
taxi_data() { duckdb_query "$(taxi_part 0 0 2000) $(taxi_part 1 2000 3500)" > /dev/null; }

# ---- servers, started once ---------------------------------------------------
# lifeline NAME: a FIFO this shell holds open; a server reading it as its stdin
# exits when the test does, however it ends.
lifeline() { mkfifo "$T/$1.in"; local fd; exec {fd}<>"$T/$1.in"; }
# wait_line FILE PATTERN WHAT: waits for a server's "listening" line.
wait_line() {
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  fail "$3 did not start: $(cat "$1")"
}
# Every server starts at once; then each is waited for.
start_s3() { # start_s3 NAME ARGS...
  local name=$1; shift
  mkdir -p "$T/$name"
  lifeline "$name"
  node --openssl-legacy-provider "$TM_SOURCE_DIR/tests/node/s3rver-start.mjs" --dir "$T/$name" "$@" \
    < "$T/$name.in" > "$T/$name.out" 2> "$T/$name.err" &
}
S3KEY=AKIDCORPUS S3SECRET=corpus-s3-secret
# Public buckets (unsigned requests, as Spice's s3_auth: public) and a private
# one whose requests must carry a SigV4 signature with S3KEY/S3SECRET.
start_s3 s3pub --no-verify --key "$S3KEY" --secret "$S3SECRET" \
  --buckets spiceai-demo-datasets,spiceai-public-datasets,s3-bucket-name,my-bucket
start_s3 s3priv --key "$S3KEY" --secret "$S3SECRET" --buckets my-snapshots-prod
ICETOKEN=corpus-iceberg-token
lifeline icerest
node "$TM_SOURCE_DIR/tests/node/iceberg-rest-server.mjs" --warehouse "$T/icewh" --token "$ICETOKEN" \
  --lifeline 1 < "$T/icerest.in" > "$T/icerest.out" 2>&1 &
# A second REST catalog that wants OAuth2 client credentials (its token endpoint
# is /v1/oauth/tokens).
ICECLIENT=corpus-client ICECLIENTSECRET=corpus-client-secret
lifeline iceoauth
python3 "$TM_SOURCE_DIR/tests/tools/iceberg_rest_auth_server.py" --warehouse "$T/iceoauthwh" \
  --oauth "$ICECLIENT:$ICECLIENTSECRET" --log "$T/iceoauth.log" < "$T/iceoauth.in" > "$T/iceoauth.out" 2>&1 &
GLUEKEY=AKIDGLUECORPUS GLUESECRET=corpus-glue-secret
echo '{"databases": {}}' > glue/catalog.json
python3 "$TM_SOURCE_DIR/tests/tools/glue_server.py" --catalog "$T/glue/catalog.json" --key "$GLUEKEY" \
  --secret "$GLUESECRET" --log "$T/glue/requests.log" > glue/out 2> glue/err &
start_azurite
taxi_data
wait_line "$T/s3pub.out" '^port ' "s3rver (public)"
wait_line "$T/s3priv.out" '^port ' "s3rver (private)"
S3PUB=http://127.0.0.1:$(sed -n 's/^port //p' "$T/s3pub.out")
S3PRIV=http://127.0.0.1:$(sed -n 's/^port //p' "$T/s3priv.out")
wait_line "$T/icerest.out" '^listening' "the Iceberg REST catalog"
ICEREST=http://127.0.0.1:$(sed -n 's/^listening //p' "$T/icerest.out")
wait_line "$T/iceoauth.out" '^listening' "the OAuth2 Iceberg REST catalog"
ICEOAUTH=http://127.0.0.1:$(sed -n 's/^listening //p' "$T/iceoauth.out")
wait_line glue/out '^listening' "the Glue server"
GLUE=http://127.0.0.1:$(sed -n 's/^listening //p' glue/out)
s3_put() { # s3_put ENDPOINT BUCKET KEY FILE
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3KEY:$S3SECRET" \
    -H "x-amz-content-sha256: $(sha256sum "$4" | cut -d' ' -f1)" -T "$4" "$1/$2/$3" >/dev/null ||
    fail "upload of $2/$3 to $1"
}
s3pub_put() { s3_put "$S3PUB" "$@"; }
# s3priv_keys BUCKET PREFIX: the keys under PREFIX, one a line (a signed ListObjectsV2).
s3priv_keys() {
  curl -sf --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3KEY:$S3SECRET" \
    -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" \
    "$S3PRIV/$1?list-type=2&prefix=${2//\//%2F}" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g'
}
for f in "$DATA"/taxi/*.parquet; do
  s3pub_put spiceai-demo-datasets "taxi_trips/2024/${f##*/}" "$f"
  s3pub_put spiceai-public-datasets "taxi_trips/${f##*/}" "$f"
done
# glue_table DB TABLE JSON: adds a table to the Glue catalog.
glue_table() {
  jq --arg db "$1" --arg t "$2" --argjson v "$3" '.databases[$db][$t] = $v' "$T/glue/catalog.json" \
    > "$T/glue/c.tmp.$1.$2"
  mv "$T/glue/c.tmp.$1.$2" "$T/glue/catalog.json"
}

# ---- one pod -------------------------------------------------------------------
# Requests of the pod being run (each pod runs in its own subshell).
req() { # req METHOD PATH [curl args]: sets STATUS and BODY
  local m=$1 p=$2; shift 2
  STATUS=$(curl -s -o "$W/.body" -w '%{http_code}' -X "$m" "${AUTH[@]}" "$@" "$BASE$p") || true
  BODY=$(cat "$W/.body" 2>/dev/null || true)
}
# The expected answers of the checks of one segment of steps (up to the next
# `run`), computed by DuckDB in one process, in the background: wants_start
# FIRST starts it, next_want WANT sets WANT to the next check's rows.
wants_start() {
  local i w args=()
  for ((i = $1; i < ${#steps[@]}; i++)); do
    case ${steps[i]} in
      "run "*) break ;;
      "check "*) w=${steps[i]#* => }; [[ $w == duckdb:* ]] && args+=("$(fill "${w#duckdb:}")") ;;
    esac
  done
  WANTS_FILE=$W/.wants.$1 WANTS_PID= WANTS_NEXT=0
  ((${#args[@]})) || return 0
  (cd "$W" && exec node "$TM_SOURCE_DIR/tests/node/duckdb-batch.mjs" "${args[@]}") \
    > "$WANTS_FILE" 2> "$WANTS_FILE.err" &
  WANTS_PID=$!
}
next_want() {
  if [[ $1 != duckdb:* ]]; then
    WANT=$(printf '%b\n' "$1")
    return 0
  fi
  if [[ -n $WANTS_PID ]]; then
    wait "$WANTS_PID" || fail "DuckDB could not compute the expected answers: $(cat "$WANTS_FILE.err")"
    WANTS_PID=
  fi
  WANT=$(jq -r ".[$WANTS_NEXT]" "$WANTS_FILE")
  WANTS_NEXT=$((WANTS_NEXT + 1))
}
fill() { # the placeholders of a pod's files
  sed -e "s|@S3PUB@|$S3PUB|g" -e "s|@S3PRIV@|$S3PRIV|g" -e "s|@AZEP@|$AZ_EP|g" \
    -e "s|@ICEREST@|$ICEREST|g" -e "s|@ICEOAUTH@|$ICEOAUTH|g" -e "s|@GLUE@|$GLUE|g" -e "s|@DIR@|$W|g" \
    -e "s|@ICEMETA@|${ICEMETA:-}|g" -e "s|@DATA@|$DATA|g" <<<"$1"
}
check() { # check NAME SQL WANT
  local name=$1 q=$2 want got=
  next_want "$3"
  want=$WANT
  local end=$((SECONDS + TIMEOUT))
  while :; do
    req POST /v1/sql --data-binary "$q" -H 'Accept: text/csv'
    [[ $STATUS == 200 ]] && got=$(tail -n +2 <<<"$BODY" | tr -d '\r')
    [[ $STATUS == 200 && $got == "$want" ]] && return 0
    ((SECONDS < end)) || break
    sleep 0.2
  done
  [[ $STATUS == 200 ]] || fail "check $name: [$q] answered $STATUS: $BODY"
  fail "check $name: [$q] gave [$got], want [$want]"
}
run_pod() { # run_pod NAME: in a subshell; its last line on stdout is the result
  local name=$1 src=$CORPUS/$1
  W=$T/pods/$name
  mkdir -p "$W"
  [[ -f $src/expect ]] || fail "$name: no expect file"
  TIMEOUT=30 AUTH=() ICEMETA=
  if [[ -f $src/setup.sh ]]; then
    source "$src/setup.sh"
    cd "$W"
    setup # under set -e: a failing command ends the pod, its error in the pod's log
  fi
  fill "$(cat "$src/spicepod.yaml")" > "$W/spicepod.yaml"
  local outcome= refusal= line key=
  local -a steps=()
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    case $line in
      loads) outcome=loads ;;
      "refused: "*) outcome=refused refusal=${line#refused: } ;;
      "env "*) line=$(fill "${line#env }"); export "${line%%=*}=${line#*=}" ;;
      "api_key "*) key=${line#api_key } ;;
      "timeout "* | "check "* | "run "* | "refresh "*) steps+=("$line") ;;
      # A step that waits on a pod's published schedule (minutes): `make stress` only.
      "slow "*) [[ -n ${TM_STRESS:-} ]] && steps+=("${line#slow }") ;;
      *) fail "$name: bad expect line [$line]" ;;
    esac
  done < "$src/expect"
  [[ -n $outcome ]] || fail "$name: the expect file says neither loads nor refused"
  cd "$W"
  local rc=0
  tm config check -c spicepod.yaml > check.out 2> check.err || rc=$?
  if [[ $outcome == refused ]]; then
    assert_eq "$rc" 2 "$name: config check exit code ($(cat check.err))"
    assert_contains "$(cat check.err)" "$refusal" "$name: config check"
    rc=0
    timeout 60 "$TM_BIN" run -c spicepod.yaml --http 127.0.0.1:0 --metrics 127.0.0.1:0 \
      > run.out 2> run.err || rc=$?
    assert_eq "$rc" 2 "$name: tidemark run exit code ($(cat run.err))"
    assert_contains "$(cat run.err)" "$refusal" "$name: tidemark run"
    echo "refused as documented: $refusal"
    return 0
  fi
  assert_eq "$rc" 0 "$name: config check exit code ($(cat check.err))"
  # Every dataset config check lists has a check.
  local ds n_ds=0
  for ds in $(sed -n 's/^  \([^ :]*\): .*/\1/p' check.out); do
    n_ds=$((n_ds + 1))
    # A here-string, not a pipe: grep -q stops at the first match and, under pipefail, the
    # writer's SIGPIPE would fail the check now and then.
    grep -qF "check $ds: " <<<"$(printf '%s\n' "${steps[@]}")" || fail "$name: no check of dataset $ds"
  done
  wants_start 0
  N_SERVERS=$(( ${POD_INDEX:-0} * 10 ))
  start_server "$W/spicepod.yaml"
  if [[ -n $key ]]; then
    req GET /v1/ready
    assert_eq "$STATUS" 401 "$name: a request without the API key"
    AUTH=(-H "Authorization: Bearer $key")
  fi
  wait_until 120 is_ready "${AUTH[@]}" || { cat "$SERVER_LOG" >&2; fail "$name: not ready in 120 s"; }
  local step n_checks=0 i
  for ((i = 0; i < ${#steps[@]}; i++)); do
    step=${steps[i]}
    case $step in
      "timeout "*) TIMEOUT=${step#timeout } ;;
      "run "*)
        "${step#run }"
        wants_start $((i + 1)) ;;
      "refresh "*)
        req POST "/v1/datasets/${step#refresh }/acceleration/refresh"
        assert_eq "$STATUS" 201 "$name: refresh ${step#refresh } ($BODY)" ;;
      "check "*)
        step=${step#check }
        [[ $step == *": "*" => "* ]] || fail "$name: bad check [$step]"
        local target=${step%%: *} rest=${step#*: }
        check "$target" "${rest%% => *}" "${rest#* => }"
        n_checks=$((n_checks + 1)) ;;
    esac
  done
  stop_server
  echo "loads: $n_ds datasets, $n_checks checks answered"
}

note "servers and shared data ready after ${SECONDS}s"
# ---- the corpus ------------------------------------------------------------------
names=()
for d in "$CORPUS"/*/; do  # the pods that wait longest first
  grep -q '^timeout' "$d/expect" 2>/dev/null && names=("$(basename "$d")" "${names[@]}") || names+=("$(basename "$d")")
done
((${#names[@]} >= 20)) || fail "the corpus has ${#names[@]} pods (at least 20)"
# Pods mostly wait (for a refresh, a server, a poll): three share the two cores.
JOBS=${TM_CORPUS_JOBS:-4}
started=0
for name in "${names[@]}"; do
  # JOBS pods at a time; a pod is done when its rc file is.
  while (($(find results -name '*.rc' | wc -l) + JOBS <= started)); do sleep 0.1; done
  started=$((started + 1))
  {
    # The pod's subshell keeps set -e (it is waited for, not tested by || or if).
    (
      POD_INDEX=$started
      trap '[[ -n $SERVER_PID ]] && kill "$SERVER_PID" 2>/dev/null; true' EXIT
      run_pod "$name"
    ) > "results/$name.out" 2> "results/$name.err" &
    rc=0 t0=$SECONDS
    wait $! || rc=$?
    echo "$((SECONDS - t0))" > "results/$name.secs"
    echo "$rc" > "results/$name.rc.tmp" && mv "results/$name.rc.tmp" "results/$name.rc"
  } &
done
while (($(find results -name '*.rc' | wc -l) < started)); do sleep 0.2; done
pass=0 failed=0
for name in "${names[@]}"; do
  if [[ $(cat "results/$name.rc") == 0 ]]; then
    printf 'corpus %-26s ok  %3ss  %s\n' "$name" "$(cat "results/$name.secs")" "$(tail -1 "results/$name.out")"
    pass=$((pass + 1))
  else
    printf 'corpus %-26s FAIL  %s\n' "$name" "$(grep -m1 '^FAIL' "results/$name.err" || tail -1 "results/$name.err")"
    failed=$((failed + 1))
  fi
done
echo "$pass passed, $failed failed"
if ((failed > 0)); then
  for name in "${names[@]}"; do
    [[ $(cat "results/$name.rc") == 0 ]] || { echo "--- $name"; tail -30 "results/$name.err"; }
  done >&2
  fail "$failed of ${#names[@]} pods failed"
fi
