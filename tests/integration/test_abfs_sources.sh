#!/usr/bin/env bash
# Issue 18, SPEC §4, A7, C2, D3: sources on Azure Blob Storage (npm azurite
# on 127.0.0.1, in memory; containers and blobs made by tests/tools/azblob.py,
# which signs Shared Key itself, in Python).
# - abfs://CONTAINER/PREFIX/ with Shared Key (abfs_use_emulator) and
#   last_modified: a new blob appears and only it is read (A7);
# - the same with an account SAS token (abfs_sas_string);
# - folder forms: the container root, a prefix with and without '/';
# - a wrong key is a clear 403 error; Azurite stopped is "unreachable" and
#   the previous rows keep serving (D3);
# rows are checked against DuckDB reading the same files locally.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/azurite_lib.sh"
cd "$T"
start_azurite
az mkcontainer data root
write_parquets a.parquet "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) t(id, v)" \
  b.parquet "SELECT * FROM (VALUES (3, 'c')) t(id, v)" other.parquet "SELECT * FROM (VALUES (100, 'x')) t(id, v)"
printf '{"id": 10, "v": "j"}\n{"id": 11, "v": "k"}\n' > a.jsonl
# One client run per container (one signed Put Blob per file): events2/other.parquet
# is a neighbour that events/ must not list, "logs/x y+1.jsonl" has reserved
# characters in its key.
az put data "events/a.parquet" a.parquet "events2/other.parquet" other.parquet \
  "other.parquet" other.parquet "logs/x y+1.jsonl" a.jsonl
az put root "a.parquet" a.parquet
sas=$(az sas rl)
key_params="{abfs_use_emulator: 'true', abfs_endpoint: 'http://127.0.0.1:$AZ_PORT'}"
sas_params="{abfs_account: devstoreaccount1, abfs_endpoint: '$AZ_EP', allow_http: 'true', abfs_sas_string: '$sas'}"
cat > tm.yaml <<YAML
datasets:
  - from: abfs://data/events/
    name: events
    params: $key_params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: abfs://data/events
    name: events_noslash
    params: $key_params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: abfs://root
    name: root_bare
    params: $key_params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: abfss://root/
    name: root_slash
    params: $key_params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: abfs://data/events/
    name: events_sas
    params: $sas_params
    time_column: last_modified
    acceleration: {refresh_mode: append}
  - from: abfs://data/logs/
    name: logs
    params: {abfs_use_emulator: 'true', abfs_endpoint: 'http://127.0.0.1:$AZ_PORT', file_format: jsonl}
    acceleration: {refresh_mode: full}
YAML
# count_sum DATASET...: sets SUMS[DATASET] to "count,sum(id)" of each, read by one `tidemark sql`.
declare -A SUMS
count_sum() {
  local q= d n s
  for d in "$@"; do q+="${q:+ UNION ALL }SELECT '$d' AS d, count(*) AS n, sum(id) AS s FROM $d"; done
  SUMS=()
  while IFS=, read -r d n s; do SUMS[$d]=$n,$s; done <<<"$(tm_sql tm.yaml "$q")"
}
out=$(tm_refresh -c tm.yaml)
count_sum events events_noslash root_bare root_slash events_sas logs
for d in events events_noslash root_bare root_slash events_sas; do
  assert_contains "$out" "$d: +2 rows via time" "$d"
  assert_eq "${SUMS[$d]:-}" "2,3" "$d: only the rows under it"
done
assert_eq "${SUMS[logs]:-}" "2,21" "a key with a space and a '+'"
# Differential truth: DuckDB over the same files, read locally.
truth=$(duckdb_query "SELECT id, v FROM read_parquet('a.parquet') ORDER BY id" | tail -n +2 | tr -d '\r')
assert_eq "$(tm_sql tm.yaml "SELECT id, v FROM events ORDER BY id")" "$truth" "rows as DuckDB reads them"
# A new blob under each folder: only it is read (A7).
sleep 1.2
az put data "events/b.parquet" b.parquet
az put root "b.parquet" b.parquet
TIDEMARK_LOG=info tm refresh -c tm.yaml >out 2>log || { cat log >&2; fail "refresh after new blobs"; }
count_sum events events_noslash root_bare root_slash events_sas
for d in events events_noslash root_bare root_slash events_sas; do
  assert_contains "$(cat out)" "$d: +1 rows via time" "$d after a new blob"
  assert_eq "${SUMS[$d]:-}" "3,6" "$d after a new blob"
done
assert_contains "$(cat log)" "[events] refresh finished: +1 rows via time in"
assert_contains "$(cat log)" "files 1 read, 1 skipped"
truth=$(duckdb_query "SELECT id, v FROM read_parquet(['a.parquet', 'b.parquet']) ORDER BY id" | tail -n +2 | tr -d '\r')
assert_eq "$(tm_sql tm.yaml "SELECT id, v FROM events_sas ORDER BY id")" "$truth" "rows after the append, as DuckDB reads them"
# An Iceberg table on abfs://, its files uploaded under wh/ice; iceberg_abfs_*
# params configure the store of its files (iceberg_source.c maps iceberg_abfs_X to abfs_X).
ice_create wh/ice
ice_append wh/ice "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b"
upload_table() { # every file of the table, in one client run
  local args=() f
  while read -r f; do args+=("wh/$f" "$f"); done < <(cd wh && find ice -type f)
  (cd wh && az put data "${args[@]}")
}
upload_table
cat > ice.yaml <<YAML
datasets:
  - from: iceberg:abfs://data/wh/ice
    name: ice
    params: {iceberg_abfs_use_emulator: 'true', iceberg_abfs_endpoint: 'http://127.0.0.1:$AZ_PORT'}
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
assert_contains "$(tm_refresh -c ice.yaml)" "ice: +2 rows via time"
ice_append wh/ice "3,2026-11-30T09:00:00Z,early"
upload_table
assert_contains "$(tm_refresh -c ice.yaml)" "ice: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql ice.yaml "SELECT count(*), sum(id) FROM ice")" "3,6" "Iceberg on abfs://"
# A wrong key: a clear 403 error naming the params to check.
wrong=$(python3 -c 'import base64; print(base64.b64encode(b"not the key").decode())')
sed -e "s|abfs_endpoint: 'http://127.0.0.1:$AZ_PORT'}|abfs_endpoint: 'http://127.0.0.1:$AZ_PORT', abfs_access_key: '$wrong'}|" tm.yaml > bad.yaml
set +e
tm refresh -c bad.yaml events >/dev/null 2>err; rc=$?
set -e
assert_eq "$rc" 1 "wrong key"
assert_contains "$(cat err)" "access denied (403"
assert_contains "$(cat err)" "check abfs_account and abfs_access_key"
# A SAS token without list permission: 403 with the SAS hint.
bad_sas=$(az sas r) cfg=$(cat tm.yaml)
echo "${cfg//"$sas"/"$bad_sas"}" > badsas.yaml
set +e
tm refresh -c badsas.yaml events_sas >/dev/null 2>err; rc=$?
set -e
assert_eq "$rc" 1 "SAS without list"
assert_contains "$(cat err)" "check abfs_sas_string"
# An unknown abfs_ param and an unsupported one are config errors naming them.
sed -e "s|abfs_use_emulator: 'true', abfs_endpoint|abfs_use_emulater: 'true', abfs_endpoint|" tm.yaml > typo.yaml
set +e
tm refresh -c typo.yaml events >/dev/null 2>err; rc=$?
set -e
[[ $rc -ne 0 ]] || fail "a misspelt abfs_ param was accepted"
assert_contains "$(cat err)" "unknown param 'abfs_use_emulater'"
# Azurite stops: the refresh fails as unavailable, the acceleration serves (D3).
stop_azurite
set +e
tm refresh -c tm.yaml events >/dev/null 2>err; rc=$?
set -e
assert_eq "$rc" 1 "azurite stopped"
assert_contains "$(cat err)" "127.0.0.1:$AZ_PORT"
assert_contains "$(cat err)" "is unreachable"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), sum(id) FROM events")" "3,6" "rows served while Azurite is down"
echo ok
