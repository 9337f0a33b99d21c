#!/usr/bin/env bash
# Acceleration snapshots on Azure Blob Storage (SPEC C2, issue 18): `tidemark
# run` writes a cayenne snapshot to abfs://CONTAINER/PREFIX on Azurite (npm
# azurite on 127.0.0.1, Shared Key), and a second start with an empty disk
# and no source bootstraps from it and serves at once (C1). Snapshots over
# 64 MiB go up as Put Block + Put Block List; tests/unit/objstore/test_azure.c
# covers that with a small block size.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
source "$(dirname "$0")/azurite_lib.sh"

start_azurite
az mkcontainer snaps
mkdir -p "$T/data"
gen_jsonl "$T/data/a.jsonl" 1 6
write_config() {
  cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: abfssnaps
snapshots:
  enabled: true
  location: abfs://snaps/tidemark/prod
  params:
    abfs_use_emulator: "true"
    abfs_endpoint: http://127.0.0.1:$AZ_PORT
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: cayenne, mode: file, refresh_mode: append, snapshots: $1}
YAML
}

write_config enabled
start_server "$T/tidemark.yaml"
wait_until 20 count_is events 6 || fail "first load"
wait_until 20 grep -q '\[events\] acceleration snapshot written: abfs://snaps/tidemark/prod/dataset=events/events_.*\.duckdb' \
  "$SERVER_LOG" || { cat "$SERVER_LOG" >&2; fail "no snapshot on abfs"; }
stop_server
n=$(az list snaps tidemark/prod/dataset=events/ | grep -c 'events_')
[[ $n -ge 1 ]] || fail "no blob in the container"

rm -rf "$T/.tidemark" "$T/data"
write_config bootstrap_only
start_server "$T/tidemark.yaml"
wait_until 20 is_ready || fail "not ready after an abfs bootstrap"
assert_eq "$(sql_value 'SELECT count(*) FROM events')" 6 "rows restored from abfs"
grep -q '\[events\] acceleration restored from snapshot abfs://snaps' "$SERVER_LOG" || fail "restore logged"
stop_server
stop_azurite
echo ok
