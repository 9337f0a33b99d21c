#!/usr/bin/env bash
# Parquet reader benchmark (issue 3), side by side with DuckDB (threads=1).
# Data (generated once by DuckDB into $BENCH_DATA/parquet-events): 10 files x
# 1M rows (id BIGINT, ts TIMESTAMP, day DATE, user_id INT, kind VARCHAR with 8
# values, amount DOUBLE, payload VARCHAR of 40 characters; ZSTD; DuckDB's
# default row groups of 122,880 rows) and one file of about 1 GB.
# Reports: full decode of every column, one thread, rows/s and MB/s;
# a two-column projection with a 1% time-range predicate (row groups read and
# skipped, time against the unpruned projection); peak RSS of a full scan of
# the 1 GB file; a full decode of a list column (10 ints per row, 10M rows, issue 16).
set -euo pipefail
: "${TM_BENCH_BIN_DIR:?run through make bench}" "${BENCH_DATA:?}" "${TM_SOURCE_DIR:?}"
dir=$BENCH_DATA/parquet-events
mkdir -p "$dir"
node=(node "$TM_SOURCE_DIR/tests/node/bench-parquet.mjs")
bench=$TM_BENCH_BIN_DIR/bench_parquet
if [[ ! -e $dir/events-9.parquet || ! -e $dir/events-big.parquet ]]; then
  echo "generating the events data set with DuckDB (once) in $dir ..."
fi
"${node[@]}" gen "$dir" 10 1000000
"${node[@]}" gen-big "$dir" 34000000
files=("$dir"/events-[0-9].parquet)

field() { sed -n "s/.*\(^\| \)$1=\([^ ]*\).*/\2/p" <<<"$2"; }

echo "-- full decode of all 7 columns, one thread: ${#files[@]} files x 1M rows"
ours=$("$bench" decode "${files[@]}")
duck=$("${node[@]}" decode "${files[@]}")
echo "   tidemark: $ours"
echo "   duckdb:   $duck"
# Wall time, and CPU time (user + system), which other work on a shared
# machine disturbs less; best of 3 runs each.
awk -v a="$(field seconds "$ours")" -v b="$(field seconds "$duck")" \
    -v ac="$(field cpu_seconds "$ours")" -v bc="$(field cpu_seconds "$duck")" \
    -v r="$(field rows "$ours")" -v mb="$(field file_mb "$ours")" \
  'BEGIN { printf "   => wall: tidemark %.2f M rows/s (%.0f MB/s of file), DuckDB %.2f M rows/s (%.0f MB/s): tidemark %.2fx DuckDB\n",
           r / a / 1e6, mb / a, r / b / 1e6, mb / b, b / a;
           printf "   => CPU:  tidemark %.2f M rows/s (%.0f MB/s of file), DuckDB %.2f M rows/s (%.0f MB/s): tidemark %.2fx DuckDB\n",
           r / ac / 1e6, mb / ac, r / bc / 1e6, mb / bc, bc / ac }'

# A 1% window of the 10M rows' time range (1,000,000 s from 2024-01-01).
lo=$((1704067200000000 + 450000000000))
hi=$((lo + 10000000000 - 1))
echo "-- columns ts, amount with ts in a 1% time range (row-group pruning)"
ours=$("$bench" project "$lo" "$hi" "${files[@]}")
duck=$("${node[@]}" project "$lo" "$hi" "${files[@]}")
echo "$ours" | sed 's/^/   tidemark: /'
echo "   duckdb:   $duck"
full=$(grep project_full <<<"$ours"); pruned=$(grep project_pruned <<<"$ours")
awk -v f="$(field seconds "$full")" -v p="$(field seconds "$pruned")" \
    -v rr="$(field rg_read "$pruned")" -v rs="$(field rg_skipped "$pruned")" \
  'BEGIN { printf "   => row groups read %d, skipped %d; %.4f s against %.3f s unpruned (%.0fx faster)\n",
           rr, rs, p, f, f / p }'

# Issue 16: a nested column (a list of 10 ints per row, 10M rows), full decode,
# one thread: native LIST arrays (the target, against DuckDB's LIST vectors),
# and the JSON text of unsupported_type_action: string.
"${node[@]}" gen-nested "$dir" 10000000
echo "-- full decode of a list column (10 ints per row), one thread: 10M rows"
ours=$("$bench" decode "$dir/nested.parquet")
json=$("$bench" decode-json "$dir/nested.parquet")
duck=$("${node[@]}" decode "$dir/nested.parquet")
echo "   tidemark: $ours"
echo "   tidemark (JSON text, unsupported_type_action: string): $json"
echo "   duckdb:   $duck"
awk -v j="$(field seconds "$json")" -v b="$(field seconds "$duck")" \
  'BEGIN { printf "   => JSON text: tidemark %.3f s, %.2fx DuckDB'"'"'s time\n", j, j / b }'
awk -v a="$(field seconds "$ours")" -v b="$(field seconds "$duck")" \
    -v ac="$(field cpu_seconds "$ours")" -v bc="$(field cpu_seconds "$duck")" \
  'BEGIN { printf "   => wall: tidemark %.3f s, DuckDB %.3f s: tidemark takes %.2fx DuckDB'"'"'s time (target <= 1.5x)\n", a, b, a / b;
           printf "   => CPU:  tidemark %.3f s, DuckDB %.3f s: %.2fx\n", ac, bc, ac / bc }'

echo "-- peak RSS scanning one file of all columns: $(du -m "$dir/events-big.parquet" | cut -f1) MB"
"$bench" rss "$dir/events-big.parquet" | sed 's/^/   /'
