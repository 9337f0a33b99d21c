#!/usr/bin/env bash
# SPEC A11, C5: a full refresh replaces the acceleration atomically; a query in
# another process (sqlite engine, WAL; cayenne is checked in-process by
# tests/unit/refresh/test_accel.c) running all along never sees an empty or
# half-written table.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: events
    acceleration: {engine: sqlite, mode: file, refresh_mode: full}
YAML
write_parquet "$T/data/a.parquet" "SELECT i AS id, 'row ' || i AS v FROM range(200000) t(i)"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "events: 200000 rows via full refresh"
# Queries in a loop while full refreshes replace the contents with 200000 other rows.
write_parquet "$T/data/a.parquet" "SELECT i + 1000000 AS id, 'new ' || i AS v FROM range(200000) t(i)"
(
  for i in $(seq 1 40); do
    tm_sql "$T/tm.yaml" "SELECT count(*), min(id) >= 1000000 OR max(id) < 200000 FROM events" >> "$T/seen" || echo "error" >> "$T/seen"
  done
) &
reader=$!
for i in 1 2 3; do tm_refresh -c "$T/tm.yaml" >/dev/null; done
wait $reader
sort -u "$T/seen" > "$T/distinct"
while read -r line; do
  [[ "$line" == "200000,true" ]] || fail "a query saw [$line]: an empty, partial or mixed table"
done < "$T/distinct"
assert_eq "$(wc -l < "$T/seen")" "40"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*), min(id) FROM events")" "200000,1000000"
echo ok
