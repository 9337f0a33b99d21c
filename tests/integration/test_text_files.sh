#!/usr/bin/env bash
# The text files people actually have (issue 16; SPEC 4, docs/FORMATS.md),
# loaded through a Spice spicepod by the real binary and compared row by row
# with DuckDB reading the same files: CSV compressed with gzip and zstd (by
# extension), bzip2 and xz (compared with the uncompressed original, which
# DuckDB's read_csv cannot decompress), tab-separated .tsv, a UTF-8 BOM, a
# gzip JSON file holding one array and zstd JSON lines; a gzip file with no
# compression extension read through file_compression_type with Spice's
# csv_delimiter / csv_quote / csv_escape / csv_schema_infer_max_records.
# Refused: the same file without file_compression_type (a clear error, not
# 0 rows under a garbage column), values we cannot read at config check.
source "$(dirname "$0")/lib.sh"

D="$T/data"
mkdir -p "$D/gz" "$D/zst" "$D/bz2" "$D/xz" "$D/tsv" "$D/bom" "$D/jarr" "$D/jl" "$D/forced"
# 3,000 rows: NULLs, commas, doubled quotes and apostrophes in names, dates, doubles.
ROWS="SELECT i AS id,
  CASE WHEN i % 17 = 0 THEN NULL
       ELSE 'name ' || i || CASE WHEN i % 5 = 0 THEN ', \"quoted\"' WHEN i % 7 = 0 THEN ' it''s' ELSE '' END
  END AS name,
  i * 1.25 AS amount, DATE '2024-01-01' + i::INTEGER AS day
  FROM range(1, 3001) t(i)"
duckdb_query "COPY ($ROWS) TO '$T/plain.csv' (HEADER)
  ; COPY ($ROWS) TO '$D/gz/part.csv.gz' (HEADER, COMPRESSION gzip)
  ; COPY ($ROWS) TO '$D/zst/part.csv.zst' (HEADER, COMPRESSION zstd)
  ; COPY ($ROWS) TO '$D/tsv/part.tsv' (HEADER, DELIMITER '\t')
  ; COPY ($ROWS) TO '$D/jarr/part.json.gz' (FORMAT json, ARRAY true, COMPRESSION gzip)
  ; COPY ($ROWS) TO '$D/jl/part.jsonl.zst' (FORMAT json, COMPRESSION zstd)
  ; COPY ($ROWS) TO '$D/forced/export.dat' (HEADER, DELIMITER ';', QUOTE '''', ESCAPE '\\', COMPRESSION gzip)" \
  >/dev/null || fail "duckdb could not write the files"
python3 - "$T/plain.csv" "$D" <<'PY' || fail "python could not write the files"
import bz2, lzma, sys
plain = open(sys.argv[1], 'rb').read()
d = sys.argv[2]
# bzip2 and xz as two concatenated streams each (pbzip2, cat a.xz b.xz).
half = plain.index(b'\n', len(plain) // 2) + 1
open(d + '/bz2/part.csv.bz2', 'wb').write(bz2.compress(plain[:half]) + bz2.compress(plain[half:]))
open(d + '/xz/part.csv.xz', 'wb').write(lzma.compress(plain[:half]) + lzma.compress(plain[half:]))
open(d + '/bom/part.csv', 'wb').write(b'\xef\xbb\xbf' + plain)
PY

cat > "$T/pod.yaml" <<YAML
version: v1
kind: Spicepod
name: textfiles
datasets:
  - {from: file:data/gz, name: gz, acceleration: {enabled: true}}
  - {from: file:data/zst, name: zst, acceleration: {enabled: true}}
  - {from: file:data/bz2, name: bz2, acceleration: {enabled: true}}
  - {from: file:data/xz, name: xz, acceleration: {enabled: true}}
  - {from: file:data/tsv, name: tsv, acceleration: {enabled: true}}
  - {from: file:data/bom, name: bom, acceleration: {enabled: true}}
  - {from: file:data/jarr, name: jarr, acceleration: {enabled: true}}
  - {from: file:data/jl, name: jl, acceleration: {enabled: true}}
  - from: file:data/forced/export.dat
    name: forced
    params:
      file_format: csv
      file_compression_type: GZIP
      csv_delimiter: ';'
      csv_quote: "'"
      csv_escape: '\\'
      csv_schema_infer_max_records: 5000
    acceleration: {enabled: true}
YAML
tm config check -c "$T/pod.yaml" >/dev/null 2>&1 || fail "config check: $(tm config check -c "$T/pod.yaml" 2>&1)"
out=$(tm_refresh -c "$T/pod.yaml")
for ds in gz zst bz2 xz tsv bom jarr jl forced; do assert_contains "$out" "$ds: 3000 rows via full refresh"; done

# Every row, as one canonical text per dataset, in both engines (one query each).
canon() { # name, relation
  echo "SELECT '$1' AS ds, count(*) AS n, sum(id) AS s,
    md5(string_agg(concat_ws('|', id, coalesce(name, '<null>'), amount::DOUBLE, day::DATE), chr(10) ORDER BY id)) AS h
    FROM $2"
}
pairs=(
  gz "read_csv('$D/gz/part.csv.gz')"
  zst "read_csv('$D/zst/part.csv.zst')"
  bz2 "read_csv('$T/plain.csv')"
  xz "read_csv('$T/plain.csv')"
  tsv "read_csv('$D/tsv/part.tsv', delim='\t')"
  bom "read_csv('$D/bom/part.csv')"
  jarr "read_json('$D/jarr/part.json.gz', format='array')"
  jl "read_json('$D/jl/part.jsonl.zst', format='newline_delimited')"
  forced "read_csv('$D/forced/export.dat', compression='gzip', delim=';', quote='''', escape='\\')"
)
want_sql="" got_sql=""
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
  sep=${want_sql:+ UNION ALL }
  want_sql+="$sep$(canon "${pairs[i]}" "${pairs[i+1]}")"
  got_sql+="$sep$(canon "${pairs[i]}" "${pairs[i]}")"
done
want=$(duckdb_query "SELECT * FROM ($want_sql) ORDER BY ds" | tail -n +2 | tr -d '\r') || fail "duckdb: $want"
[[ $(grep -c ',3000,4501500,' <<<"$want") == 9 ]] || fail "duckdb's reference: $want"
got=$(tm_sql "$T/pod.yaml" "SELECT * FROM ($got_sql) ORDER BY ds")
assert_eq "$got" "$want" "tidemark's rows differ from DuckDB's"
assert_eq "$(tm_sql "$T/pod.yaml" "SELECT name FROM forced WHERE id = 14")" "name 14 it's"
assert_eq "$(tm_sql "$T/pod.yaml" "SELECT count(*) FROM bom WHERE id IS NOT NULL")" "3000" "the BOM left in the first column's name"

# The gzip file without file_compression_type: a clear error naming it, and no rows.
cat > "$T/bad.yaml" <<YAML
version: v1
kind: Spicepod
name: bad
datasets:
  - from: file:data/forced/export.dat
    name: forced
    params: {file_format: csv}
    acceleration: {enabled: true}
YAML
if tm refresh -c "$T/bad.yaml" >"$T/bad.out" 2>"$T/bad.err"; then
  fail "a gzip file read as CSV succeeded: $(cat "$T/bad.out")"
fi
assert_contains "$(cat "$T/bad.err")" "export.dat: the file is gzip-compressed"

# Values tidemark cannot read are refused when the config loads, naming the param.
for p in "file_compression_type: lz4" "json_format: xml" "csv_quote: ab" "csv_schema_infer_max_records: none"; do
  sed "s|params: {file_format: csv}|params: {file_format: csv, $p}|" "$T/bad.yaml" > "$T/refused.yaml"
  if tm config check -c "$T/refused.yaml" >"$T/chk" 2>&1; then fail "accepted: $p"; fi
  assert_contains "$(cat "$T/chk")" "${p%%:*}"
done
echo ok
