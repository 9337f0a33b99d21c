#!/usr/bin/env bash
# Iceberg v3 deletion vectors (issue 16; SPEC B12, C6): a v3 table authored
# with `tidemark iceberg` (row lineage in its metadata), rows deleted with
# deletion vectors in Puffin files (a second delete merges into a new vector
# and drops the old one); a full refresh and a federated query see the rows
# minus the deleted ones, an append refresh of the same table ignores them
# (B12); icebird reads the v3 table before the deletes (it does not read
# DVs); the Puffin and DV layouts are checked by an independent decoder
# (tests/node/puffin-check.mjs); a corrupt Puffin file fails the full refresh
# with an error naming it.
source "$(dirname "$0")/lib.sh"
cd "$T"
cat > tm.yaml <<YAML
datasets:
  - from: iceberg:file://wh/events
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
  - from: iceberg:file://wh/events
    name: events_full
    acceleration: {refresh_mode: full}
  - from: iceberg:file://wh/events
    name: events_fed
YAML
tm iceberg create wh/events --schema "$ICE_SCHEMA" --format-version 3 >/dev/null
assert_contains "$(cat wh/events/metadata/v1.metadata.json)" '"format-version": 3'
ice_append wh/events "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b" "3,2026-11-30T10:00:02Z,c"
ice_append wh/events "4,2026-11-30T10:00:03Z,d" "5,2026-11-30T10:00:04Z,e"
# Row lineage: snapshots carry first-row-id and added-rows; next-row-id moves on.
meta=$(ls wh/events/metadata/v*.metadata.json | sort -V | tail -1)
assert_contains "$(tr -d ' \n' < "$meta")" '"next-row-id":5' "next-row-id after 5 rows"
assert_contains "$(tr -d ' \n' < "$meta")" '"first-row-id":3,"added-rows":2' "second append's row ids"
# icebird (an independent reader; it reads v3 metadata and manifests, not
# deletion vectors) sees the rows tidemark wrote.
[[ -d "$NODE_PATH/icebird" ]] || fail "icebird is not installed (scripts/install-test-deps)"
tm iceberg cat wh/events --format json >ours.json
node "$TM_SOURCE_DIR/tests/node/icebird-read.mjs" wh/events >icebird.jsonl || fail "icebird cannot read the v3 table"
node "$TM_SOURCE_DIR/tests/node/compare-rows.mjs" ours.json icebird.jsonl >/dev/null ||
  fail "tidemark and icebird disagree on the v3 table"
assert_contains "$(tm_refresh -c tm.yaml)" "events: +5 rows"
tm_refresh -c tm.yaml >/dev/null
# Delete ids 2 and 4 (one in each data file): two deletion vectors in one Puffin file.
out=$(tm iceberg delete wh/events --where "id IN (2, 4)")
assert_contains "$out" "2 delete files added"
assert_contains "$out" "2 rows removed"
files=$(tm iceberg files wh/events --format csv)
assert_eq "$(grep -c '\.puffin,deletion-vector,1,' <<<"$files")" "2" "one DV per data file"
puffin=$(ls wh/events/data/*.puffin)
node "$TM_SOURCE_DIR/tests/node/puffin-check.mjs" "$puffin" >puffin.json || fail "puffin-check: $puffin"
assert_contains "$(cat puffin.json)" '"positions":[1]' "the DV of the first file deletes position 1 (id 2)"
assert_contains "$(cat puffin.json)" '"positions":[0]' "the DV of the second file deletes position 0 (id 4)"
# The append refresh ignores the deletion vectors (B12) ...
# ... a full refresh and a federated query apply them (one run refreshes both
# accelerations: the append one by snapshots, the full one in full).
out=$(tm_refresh -c tm.yaml)
assert_contains "$out" "events: +0 rows via snapshots (1: delete 1)"
assert_contains "$out" "events_full: 3 rows via full refresh"
assert_eq "$(tm_sql tm.yaml "SELECT (SELECT count(*) FROM events), (SELECT string_agg(v, '' ORDER BY id) FROM events_full),
  (SELECT string_agg(v, '' ORDER BY id) FROM events_fed), (SELECT v FROM events_fed WHERE id = 3)")" \
  "5,ace,ace,c" "append refresh, full refresh, federated query, federated filter"
# A second delete in the first file merges into a new vector (positions 0 and 1)
# and removes the old one: still one DV per data file.
tm iceberg delete wh/events --where "id = 1" >/dev/null
files=$(tm iceberg files wh/events --format csv)
assert_eq "$(grep -c '\.puffin,deletion-vector,' <<<"$files")" "2" "one DV per data file after a merge"
assert_contains "$files" ".puffin,deletion-vector,2," "the merged DV holds both positions"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(v, '' ORDER BY id) FROM events_fed")" "ce"
assert_contains "$(tm_refresh -c tm.yaml --full)" "events_full: 2 rows via full refresh"
assert_eq "$(tm iceberg cat wh/events --format csv | tail -n +2 | cut -d, -f1 | sort | tr '\n' ' ')" "3 5 " "cat"
# Compaction folds the vectors into the data: no delete file is left.
tm iceberg compact wh/events >/dev/null
assert_eq "$(tm iceberg files wh/events --format csv | grep -c puffin || true)" "0" "no DV after compaction"
assert_eq "$(tm_sql tm.yaml "SELECT string_agg(v, '' ORDER BY id) FROM events_fed")" "ce"
# A corrupt Puffin file: a clear error naming the file, nothing loaded.
tm iceberg delete wh/events --where "id = 3" >/dev/null
puffin=$(ls -t wh/events/data/*.puffin | head -1)
printf 'XXXX' | dd of="$puffin" bs=1 seek=0 conv=notrunc 2>/dev/null
if tm refresh -c tm.yaml --full >out.txt 2>err.txt; then fail "a corrupt Puffin file refreshed"; fi
assert_contains "$(cat out.txt err.txt)" "$(basename "$puffin")"
assert_contains "$(cat out.txt err.txt)" "not a Puffin file"
echo ok
