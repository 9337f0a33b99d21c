#!/usr/bin/env bash
# Acceleration snapshots (SPEC C2) on a real `tidemark run`, for the sqlite
# and cayenne engines: a snapshot is written to the file:// location after a
# refresh that changed rows, as dataset=NAME/NAME_YYYYMMDDTHHMMSSZ.EXT, old ones
# are pruned to the newest 5; at start a missing acceleration is restored from
# the newest snapshot and serves at once, even without its source (C1); the
# restore discards a saved Iceberg snapshot (B9); with
# bootstrap_on_failure_behavior: fallback a damaged newest snapshot is skipped.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

for engine in ${ENGINES:-sqlite cayenne}; do
  ext=$([[ $engine == sqlite ]] && echo sqlite || echo duckdb)
  dir=$T/$engine
  snaps=$dir/snaps/tm
  mkdir -p "$dir/data" "$snaps/dataset=events"
  gen_jsonl "$dir/data/a.jsonl" 1 5
  # Six old snapshots that the first new one prunes (they are never read).
  for d in 01 02 03 04 05 06; do
    echo "old" > "$snaps/dataset=events/events_202001${d}T000000Z.$ext"
  done
  echo "not a snapshot" > "$snaps/dataset=events/notes.txt"
  write_config() {
    cat > "$dir/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: snaps
snapshots:
  enabled: true
  location: file://$dir/snaps/tm
  bootstrap_on_failure_behavior: ${2:-warn}
datasets:
  - from: file:data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: append, snapshots: $1}
YAML
  }
  snapshot_files() { find "$snaps/dataset=events" -name "events_*.$ext" | sort; }

  # create_only: no bootstrap at start, a snapshot after the first load.
  write_config create_only
  start_server "$dir/tidemark.yaml"
  wait_until 20 count_is events 5 || fail "$engine: first load"
  wait_until 20 grep -q '\[events\] acceleration snapshot written' "$SERVER_LOG" ||
    fail "$engine: no snapshot written"
  files=$(snapshot_files)
  assert_eq "$(wc -l <<<"$files")" 5 "$engine: pruned to the newest 5"
  newest=$(tail -1 <<<"$files")
  [[ $(basename "$newest") =~ ^events_[0-9]{8}T[0-9]{6}Z\.${ext//./\\.}$ ]] || fail "$engine: name $newest"
  [[ ! -e "$snaps/dataset=events/events_20200101T000000Z.$ext" ]] || fail "$engine: oldest not pruned"
  [[ -e "$snaps/dataset=events/notes.txt" ]] || fail "$engine: a foreign file was touched"
  api GET /v1/datasets/events/acceleration
  assert_eq "$(jq -r '.acceleration_snapshot.key' <<<"$BODY")" "tm/dataset=events/$(basename "$newest")"
  # A refresh that changes rows writes a newer snapshot.
  sleep 1.1
  gen_jsonl "$dir/data/b.jsonl" 6 3
  api POST /v1/datasets/events/acceleration/refresh
  assert_eq "$STATUS" 201
  wait_until 20 count_is events 8 || fail "$engine: second load"
  wait_until 20 bash -c "[[ \$(grep -c '\[events\] acceleration snapshot written' '$SERVER_LOG') -ge 2 ]]" ||
    fail "$engine: no second snapshot"
  stop_server
  newest=$(snapshot_files | tail -1)

  if [[ $engine == sqlite ]]; then
    # Give the snapshot a saved Iceberg snapshot, to see the restore discard it (B9).
    python3 - "$newest" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT OR REPLACE INTO _tm_state(key, value) VALUES ('tidemark.iceberg.snapshot_id', '42')")
db.execute("INSERT OR REPLACE INTO _tm_state(key, value) VALUES ('tidemark.iceberg.table_uuid', 'u')")
db.commit()
db.close()
# Another writer than tidemark leaves stale page checksums (engine/sqlite/cksum.c):
# seal each page again as tidemark does, or the restore rightly finds it damaged.
import struct, zlib
with open(sys.argv[1], "r+b") as f:
    data = bytearray(f.read())
    size = struct.unpack(">H", data[16:18])[0] or 65536
    assert data[20] == 8, "no room for page checksums"
    for off in range(0, len(data), size):
        pgno = off // size + 1
        crc = zlib.crc32(data[off:off + size - 8], zlib.crc32(struct.pack(">I", pgno)))
        data[off + size - 8:off + size] = struct.pack("<II", crc, pgno)
    f.seek(0)
    f.write(data)
PY
  else
    # The same through DuckDB (another build than tidemark's: it keeps the file's storage version).
    duckdb_query "DELETE FROM _tm_state WHERE key LIKE 'tidemark.iceberg.%';
      INSERT INTO _tm_state VALUES ('tidemark.iceberg.snapshot_id', '42'), ('tidemark.iceberg.table_uuid', 'u')" \
      --db "$newest" >/dev/null
  fi

  # Bootstrap: no local acceleration and no source; the snapshot serves at once (C1, C2).
  rm -rf "$dir/.tidemark" "$dir/data"
  write_config enabled
  start_server "$dir/tidemark.yaml"
  wait_until 20 is_ready || fail "$engine: not ready after the bootstrap"
  assert_eq "$(sql_value 'SELECT count(*) FROM events')" 8 "$engine: restored rows"
  grep -q "\[events\] acceleration restored from snapshot file:.*$(basename "$newest")" "$SERVER_LOG" ||
    fail "$engine: restore logged"
  api GET /v1/datasets/events/acceleration
  assert_eq "$(jq -r '.acceleration_snapshot.bootstrapped, .saved_snapshot_id, .high_water_mark' <<<"$BODY" | tr '\n' ' ')" \
    "true null 2024-01-01T00:00:08Z " "$engine: bootstrap state"
  grep -q "saved Iceberg snapshot was discarded (SPEC B9)" "$SERVER_LOG" || fail "$engine: B9 logged"
  stop_server
  if [[ $engine == sqlite ]]; then
    state=$(sqlite3 "$dir/.tidemark/data/events" "SELECT group_concat(key) FROM _tm_state WHERE key LIKE 'tidemark.iceberg.%'")
  else
    state=$(duckdb_query "SELECT string_agg(key, ',') FROM _tm_state WHERE key LIKE 'tidemark.iceberg.%'" \
      --db "$dir/.tidemark/data/events/data.duckdb" | tail -n +2)
  fi
  assert_eq "$state" "" "$engine: B9: no tidemark.iceberg.* key after the restore"

  # fallback: a damaged newer snapshot is skipped for the next one.
  echo "garbage" > "$snaps/dataset=events/events_20990101T000000Z.$ext"
  rm -rf "$dir/.tidemark"
  write_config bootstrap_only fallback
  start_server "$dir/tidemark.yaml"
  wait_until 20 is_ready || fail "$engine: not ready after a fallback bootstrap"
  assert_eq "$(sql_value 'SELECT count(*) FROM events')" 8 "$engine: restored from the older snapshot"
  grep -q '\[events\] snapshot not restored, trying an older one: .*events_20990101T000000Z' "$SERVER_LOG" ||
    fail "$engine: fallback logged"
  stop_server
  # bootstrap_only never writes: the damaged file is still the newest.
  [[ $(snapshot_files | tail -1) == *events_20990101T000000Z.$ext ]] || fail "$engine: bootstrap_only wrote"
done
echo ok
