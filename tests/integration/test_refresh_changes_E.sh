#!/usr/bin/env bash
# refresh_mode: changes (issue 19; SPEC E1-E6), in a running server. A v2
# table authored with `tidemark iceberg` goes through appends (with a
# duplicate row), position and equality deletes, an overwrite re-adding a
# key, a copy-on-write delete of whole files, a compaction, a refresh that
# applies four snapshots at once, a rollback (E5: snapshot_not_ancestor) and
# an expire of the saved snapshot (E5: files_expired); a v3 table gets
# deletion vectors. After every refresh each changes acceleration (cayenne,
# duckdb file, arrow in memory, sqlite file, postgres, and keyed on cayenne,
# sqlite in memory and postgres; E3 "on every engine", E6) equals the table
# as a multiset: a full refresh of it (the reader with deletes applied), and at
# chosen steps icebird's rows (an independent reader). The status document,
# the log and the metrics count rows inserted and deleted and the fallbacks.
# Then the real tables with deletes of ../shared/testdata/iceberg, metadata
# version by version, equal a full refresh of the same version.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
source "$(dirname "$0")/pg_lib.sh"
pg_start
cd "$T"
command -v jq >/dev/null || fail "jq is needed"

config() { # TABLE
  cat > tm.yaml <<YAML
datasets:
  - {from: "iceberg:file://$1", name: cay, acceleration: {refresh_mode: changes, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: duck, acceleration: {engine: duckdb, mode: file, refresh_mode: changes, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: arr, acceleration: {engine: arrow, refresh_mode: changes, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: keyed, acceleration: {refresh_mode: changes, primary_key: id, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: sq, acceleration: {engine: sqlite, mode: file, refresh_mode: changes, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: sqk, acceleration: {engine: sqlite, refresh_mode: changes, primary_key: id, refresh_check_interval: 1h}}
  - {from: "iceberg:file://$1", name: pg, acceleration: {engine: postgres, refresh_mode: changes, refresh_check_interval: 1h, params: {$PG}}}
  - {from: "iceberg:file://$1", name: pgk, acceleration: {engine: postgres, refresh_mode: changes, primary_key: id, refresh_check_interval: 1h, params: {$PG}}}
  - {from: "iceberg:file://$1", name: whole, acceleration: {refresh_mode: full, refresh_check_interval: 1h}}
YAML
}
PG="pg_host: 127.0.0.1, pg_port: '$PG_PORT', pg_db: postgres, pg_user: $PG_USER, pg_pass: $PG_PASS, pg_sslmode: disable"
ALL=(cay duck arr sq pg keyed sqk pgk)
doc() { curl -s "$BASE/v1/datasets/$1/acceleration" | jq -c .last_refresh; }
# The last_refresh of each dataset, a line each (one curl, one jq).
docs() { curl -s $(printf "$BASE/v1/datasets/%s/acceleration " "$@") | jq -c .last_refresh; }
refresh_all() { # DATASET...: triggers their refreshes at once, then waits for each
  local before codes k
  before=$(docs "$@")
  codes=$(curl -s -w '%{http_code} ' -X POST $(printf -- "-o /dev/null $BASE/v1/datasets/%s/acceleration/refresh " "$@"))
  [[ $codes =~ ^(201 )+$ ]] || fail "trigger $*: $codes"
  for k in $(seq 600); do
    # Done when no line is the same as before.
    [[ -z $(paste -d'\n' <(docs "$@") <(echo "$before") | paste - - | awk -F'\t' '$1 == $2') ]] && return 0
    sleep 0.05
  done
  fail "the refreshes of $* did not finish"
}
# Rows of one relation not matched in the other, both ways, as a multiset.
differ() { sql_value "SELECT (SELECT count(*) FROM (SELECT * FROM $1 EXCEPT ALL SELECT * FROM $2)) + (SELECT count(*) FROM (SELECT * FROM $2 EXCEPT ALL SELECT * FROM $1)) AS n"; }

# step WANT_READ WHAT: refreshes every dataset and compares (E3); WANT_READ
# is what the cayenne dataset's refresh did: "changes +I -D", "full", ...
step() {
  local want=$1 what=$2
  refresh_all "${ALL[@]}" whole
  local got; got=$(doc cay | jq -r '"\(.read) +\(.rows_written) -\(.rows_deleted)\(if .fallback_reason then " " + .fallback_reason else "" end)"')
  [[ $got == $want* ]] || fail "$what: cay refreshed [$got], want [$want]"
  # One query: the rows each acceleration has that the table has not, and back (E3).
  sql "SELECT $(for ds in cay duck arr sq pg; do printf "(SELECT count(*) FROM (SELECT * FROM $ds EXCEPT ALL SELECT * FROM whole)) + (SELECT count(*) FROM (SELECT * FROM whole EXCEPT ALL SELECT * FROM $ds)) AS $ds, "; done) $(for ds in keyed sqk pgk; do printf "(SELECT count(*) FROM (SELECT * FROM $ds EXCEPT ALL SELECT DISTINCT * FROM whole)) + (SELECT count(*) FROM (SELECT DISTINCT * FROM whole EXCEPT ALL SELECT * FROM $ds)) AS $ds, "; done) 0 AS z"
  assert_eq "$(jq -c '.[0]' <<<"$BODY")" '{"cay":0,"duck":0,"arr":0,"sq":0,"pg":0,"keyed":0,"sqk":0,"pgk":0,"z":0}' "$what: every acceleration equals the table (E3, E6)"
  # Every engine applied the same changes (its own read, not a fallback).
  local reads; reads=$(docs "${ALL[@]}" | jq -r .read | sort -u | tr '\n' ' ')
  [[ $reads == "${want%% *} " ]] || fail "$what: the engines refreshed as [$reads], want [${want%% *}]"
}
icebird_check() { # TABLE WHAT
  sql "SELECT * FROM cay"
  jq -c . <<<"$BODY" > ours.json
  node "$TM_SOURCE_DIR/tests/node/icebird-read.mjs" "$1" > icebird.jsonl || fail "icebird: $2"
  node "$TM_SOURCE_DIR/tests/node/compare-rows.mjs" ours.json icebird.jsonl >/dev/null ||
    fail "$2: the acceleration and icebird disagree"
}

tm iceberg create wh/v2 --schema "$ICE_SCHEMA" >/dev/null
ice_append wh/v2 "1,2026-01-01T00:00:00Z,a" "2,2026-01-01T00:00:01Z,b" "3,2026-01-01T00:00:02Z,c"
config wh/v2
start_server tm.yaml
wait_until 60 is_ready || fail "not ready"
assert_eq "$(jq -r .read <<<"$(doc cay)")" "full" "E1: the first refresh reads in full"
assert_eq "$(differ cay whole)" 0 "E1: the first load equals the table"
sql "SELECT * FROM cay LIMIT 1"
assert_eq "$(jq -r '.[0] | keys | join(",")' <<<"$BODY")" "id,ts,v" "the provenance columns are hidden"
sql "SELECT * FROM pg LIMIT 1"
assert_eq "$(jq -r '.[0] | keys | join(",")' <<<"$BODY")" "id,ts,v" "the provenance columns are hidden (postgres)"
# E4: postgres deletes by provenance through an index (sqlite's plan: the unit test engine_e4_delete_provenance).
assert_contains "$(pg_psql -c "SELECT indexdef FROM pg_indexes WHERE tablename = 'pg'")" "(_tm_seq, _tm_file, _tm_pos)"
# ... and the engine's DELETE shapes can search it (the planner picks it over a scan once the table is large).
for cond in "_tm_file = 2" "_tm_file = 2 AND _tm_pos = ANY('{3,4}'::int8[])"; do
  assert_contains "$(pg_psql -c "SET enable_seqscan = off; EXPLAIN DELETE FROM pg WHERE _tm_seq = 1 AND $cond")" "tm_pv_"
done
ice_append wh/v2 "4,2026-01-01T00:00:03Z,d" "4,2026-01-01T00:00:03Z,d" "5,2026-01-01T00:00:04Z,e"
step "changes +3 -0" "append with a duplicate row"
tm iceberg delete wh/v2 --where "id = 2" >/dev/null
step "changes +0 -1" "position delete"
tm iceberg delete wh/v2 --where "v = 'd'" --equality v >/dev/null
step "changes +0 -2" "equality delete (both duplicates)"
icebird_check wh/v2 "after deletes"
ice_append wh/v2 "6,2026-01-01T00:00:05Z,f"
printf 'id,ts,v\n5,2026-01-01T00:00:09Z,E\n' > over.csv
tm iceberg overwrite wh/v2 --where "id = 5" over.csv >/dev/null
step "changes +2 -1" "append, then an overwrite re-adding key 5 (E6)"
for ds in keyed sqk pgk; do
  assert_eq "$(sql_value "SELECT count(*) || max(v) AS n FROM $ds WHERE id = 5")" "1E" "E6: key 5 is one row ($ds)"
done
tm iceberg delete wh/v2 --where "id = 6" --copy-on-write >/dev/null
step "changes" "copy-on-write delete (whole files)"
tm iceberg compact wh/v2 >/dev/null
step "changes" "compaction"
assert_eq "$(jq -c .snapshot_operations <<<"$(doc cay)")" '{"replace":1}' "per operation"
ice_append wh/v2 "7,2026-01-01T00:00:06Z,g" "8,2026-01-01T00:00:07Z,h"
tm iceberg delete wh/v2 --where "id = 1" >/dev/null
tm iceberg delete wh/v2 --where "v = 'g'" --equality v >/dev/null
ice_append wh/v2 "9,2026-01-01T00:00:08Z,i"
step "changes +2 -1" "four snapshots at once (7 is added and deleted in between: never read), deletes after the compaction"
assert_eq "$(jq -c .snapshot_operations <<<"$(doc cay)")" '{"append":2,"delete":2}' "per operation"
icebird_check wh/v2 "after four snapshots"
step "nothing +0 -0" "no new snapshot"
assert_eq "$(jq -r .mode <<<"$(doc cay)")" "changes" "a changes refresh that found nothing is still mode changes"
# E5: a rollback leaves the saved snapshot off the current chain.
old=$(tm iceberg history wh/v2 --format csv | tr -d '\r' | awk -F, 'NR == 3 {print $1}')
tm iceberg rollback wh/v2 --to "$old" >/dev/null
step "full" "rollback"
assert_eq "$(jq -r .fallback_reason <<<"$(doc cay)")" "snapshot_not_ancestor" "rollback: reason"
ice_append wh/v2 "10,2026-01-01T00:00:10Z,j"
step "changes +1 -0" "changes resume after the fallback"
# E5: the saved snapshot expired.
ice_append wh/v2 "11,2026-01-01T00:00:11Z,k"
sleep 1
tm iceberg expire wh/v2 --older-than "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >/dev/null
step "full" "expired saved snapshot"
assert_eq "$(jq -r .fallback_reason <<<"$(doc cay)")" "files_expired" "expire: reason"
icebird_check wh/v2 "after the expire"
scrape=$(metrics)
for reason in snapshot_not_ancestor files_expired; do
  assert_contains "$scrape" "dataset_acceleration_refresh_fallbacks{dataset=\"cay\",reason=\"$reason\"} 1"
  grep -q "\[cay\] .*reloads the table in full instead of applying its snapshots: $reason (SPEC E5)" "$SERVER_LOG" ||
    fail "no warning naming $reason"
done
deleted=$(sed -n 's/^dataset_acceleration_refresh_rows_deleted{dataset="cay"} //p' <<<"$scrape")
[[ $deleted -ge 5 ]] || fail "rows_deleted counts the deleted rows: [$deleted]"
assert_contains "$scrape" 'dataset_acceleration_refresh_snapshots{dataset="cay",operation="replace"} 1'
grep -q '\[cay\] refresh finished: +0 -1 rows via changes (1: delete 1)' "$SERVER_LOG" || fail "log line"
stop_server

# v3: deletion vectors (the second delete merges into a new vector).
tm iceberg create wh/v3 --schema "$ICE_SCHEMA" --format-version 3 >/dev/null
ice_append wh/v3 "1,2026-01-01T00:00:00Z,a" "2,2026-01-01T00:00:01Z,b" "3,2026-01-01T00:00:02Z,c" "4,2026-01-01T00:00:03Z,d"
rm -rf .tidemark
pg_psql -c "SET client_min_messages = warning; DROP SCHEMA public CASCADE; CREATE SCHEMA public"
config wh/v3
start_server tm.yaml
wait_until 60 is_ready || fail "not ready (v3)"
tm iceberg delete wh/v3 --where "id = 2" >/dev/null
step "changes +0 -1" "deletion vector"
# E5: the merged vector replaces the first, whose Puffin file is then gone
# (as an expire or orphan clean-up would leave it): the changes cannot read
# the saved snapshot's deletes, and that refresh reloads in full.
dv1=$(tm iceberg files wh/v3 --format csv | tr -d '\r' | awk -F, '$2 == "deletion-vector" {print $1}' | sed 's|^file://||')
[[ -f $dv1 ]] || fail "no deletion vector file: [$dv1]"
tm iceberg delete wh/v3 --where "id = 4" >/dev/null
rm "$dv1"
step "full" "the saved snapshot's deletion vector is gone"
assert_eq "$(jq -r .fallback_reason <<<"$(doc cay)")" "files_expired" "a missing file: reason"
tm iceberg delete wh/v3 --where "id = 3" >/dev/null
step "changes +0 -1" "deletion vector replaced by a merged one"
stop_server

# Config: changes needs an Iceberg source (any engine).
printf 'datasets:\n  - {from: "file:data", name: f, time_column: ts, acceleration: {refresh_mode: changes}}\n' > bad.yaml
tm config check -c bad.yaml >out 2>&1 && fail "changes on a file source was accepted"
assert_contains "$(cat out)" "needs an iceberg: source"

# The real tables with deletes, metadata version by version (version-hint.text
# names each metadata file in turn, as the writer produced them): the changes
# acceleration equals a full refresh of the same version.
real=(iceberg_v2_delete_both_eq_and_pos equality_deletes_mytable_partitioned
      iceberg_spark_compaction_with_dangling_delete iceberg_v3_deletion_vectors deletion_vectors)
require_shared "$TESTDATA/iceberg"
rm -rf .tidemark
echo "datasets:" > tm.yaml
for t in "${real[@]}"; do
  cp -r "$TESTDATA/iceberg/$t" "r_$t"
  node "$TM_SOURCE_DIR/tests/node/iceberg-history.mjs" "$TESTDATA/iceberg" "$t" > "r_$t.history"
  [[ $(wc -l < "r_$t.history") -gt 1 ]] || fail "$t: fewer than two versions"
  basename "$(head -1 "r_$t.history" | cut -d, -f1)" > "r_$t/metadata/version-hint.text"
  cat >> tm.yaml <<YAML
  - {from: "iceberg:file://r_$t", name: c_$t, acceleration: {refresh_mode: changes, refresh_check_interval: 1h}}
  - {from: "iceberg:file://r_$t", name: f_$t, acceleration: {refresh_mode: full, refresh_check_interval: 1h}}
YAML
done
start_server tm.yaml
wait_until 60 is_ready || fail "not ready (real tables)"
for t in "${real[@]}"; do
  n=0
  while IFS=, read -r meta op rows; do
    if [[ $n -gt 0 ]]; then
      basename "$meta" > "r_$t/metadata/version-hint.text"
      refresh_all "c_$t" "f_$t"
      assert_eq "$(jq -r .read <<<"$(doc "c_$t")")" "changes" "$t $meta ($op): applied as changes"
    fi
    assert_eq "$(differ "c_$t" "f_$t")" 0 "$t $meta ($op): changes equals full (E3)"
    [[ $rows == '?' ]] || assert_eq "$(sql_value "SELECT count(*) AS n FROM c_$t")" "$rows" "$t $meta: rows"
    n=$((n + 1))
  done < "r_$t.history"
done
stop_server
echo ok
