#!/usr/bin/env bash
# SPEC A4: time formats. timestamptz text in every zone spelling (+00:00, Z,
# UTC) compared as UTC instants; unix_millis integers; ISO8601 strings; NULL
# times are never above the mark and are reported.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/csv" "$T/ms" "$T/iso"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:csv
    name: tz
    time_column: ts
    time_format: timestamptz
    acceleration: {refresh_mode: append}
  - from: file:ms
    name: millis
    time_column: t_ms
    time_format: unix_millis
    acceleration: {refresh_mode: append}
  - from: file:iso
    name: iso
    time_column: at
    time_format: ISO8601
    acceleration: {refresh_mode: append}
YAML
printf 'id,ts\n1,2026-11-30T10:00:00Z\n2,2026-11-30 11:00:00+01:00\n3,2026-11-30T09:30:00+00:00\n' > "$T/csv/a.csv"
write_parquet "$T/ms/a.parquet" "SELECT * FROM (VALUES (1, 1764496800000::BIGINT), (2, 1764496800500::BIGINT)) t(id, t_ms)"
printf '{"id": 1, "at": "2026-11-30T10:00:00Z"}\n{"id": 2, "at": "2026-11-30T12:00:00+02:00"}\n{"id": 3, "at": null}\n' > "$T/iso/a.jsonl"
out=$(tm_refresh -c "$T/tm.yaml")
assert_contains "$out" "tz: +3 rows"
assert_contains "$out" "millis: +2 rows"
assert_contains "$out" "iso: +3 rows"
# New rows: the same instant in other spellings is not above the mark; one second later is.
printf 'id,ts\n4,2026-11-30 10:00:00 UTC\n5,2026-11-30T11:00:01+01:00\n' > "$T/csv/b.csv"
write_parquet "$T/ms/b.parquet" "SELECT * FROM (VALUES (3, 1764496800500::BIGINT), (4, 1764496800501::BIGINT)) t(id, t_ms)"
printf '{"id": 4, "at": "2026-11-30 10:00:00 UTC"}\n{"id": 5, "at": "2026-11-30T10:00:00.001+00:00"}\n{"id": 6, "at": null}\n' > "$T/iso/b.jsonl"
tm refresh -c "$T/tm.yaml" >"$T/out" 2>"$T/err"
out=$(cat "$T/out")
assert_contains "$out" "tz: +1 rows"
assert_contains "$out" "millis: +1 rows"
assert_contains "$out" "iso: +1 rows"
assert_contains "$(cat "$T/err")" "[iso] 2 rows had a NULL or unreadable time and were skipped"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT group_concat(id, '-') FROM (SELECT id FROM tz ORDER BY id)")" "1-2-3-5"
assert_eq "$(tm_sql "$T/tm.yaml" "SELECT ts FROM tz WHERE id = 2")" "2026-11-30T10:00:00Z"
echo ok
