#!/usr/bin/env bash
# SPEC A9: the missing-overlap warning on load. D2: a corrupt file in the
# source folder fails the refresh with a clear error naming it, and the
# acceleration keeps its rows. D3: a missing source folder fails the refresh,
# the acceleration keeps serving.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: keyed
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, primary_key: id}
YAML
write_parquet "$T/data/a.parquet" "SELECT * FROM (VALUES (1, TIMESTAMP '2026-11-30 10:00:00')) t(id, ts)"
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err"
assert_contains "$(cat "$T/err")" "[keyed] primary_key does not include time_column and there is no refresh_append_overlap: late updates to a key will not be seen (SPEC A9)"
# D2: a corrupt Parquet file.
require_shared "$TESTDATA/parquet"
head -c 300 "$TESTDATA/parquet/alltypes_plain.parquet" > "$T/data/b.parquet"
printf 'garbage' >> "$T/data/b.parquet"
set +e
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 1 "a failed refresh exits 1"
assert_contains "$(cat "$T/err")" "b.parquet"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*) FROM keyed")" "1"
rm "$T/data/b.parquet"
# D3: the folder goes away.
mv "$T/data" "$T/gone"
set +e
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 1
assert_contains "$(cat "$T/err")" "source folder does not exist"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT count(*) FROM keyed")" "1"
mv "$T/gone" "$T/data"
write_parquet "$T/data/c.parquet" "SELECT * FROM (VALUES (2, TIMESTAMP '2026-11-30 11:00:00')) t(id, ts)"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "keyed: +1 rows"
echo ok
