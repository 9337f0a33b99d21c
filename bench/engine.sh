#!/usr/bin/env bash
# Engine benchmark (issues 5, 15): the 10M-row events data in each engine, next
# to DuckDB (the release tidemark links, as many threads) on the same data.
#   ingest rows/s from in-memory batches into cayenne, duckdb, arrow, sqlite
#     (and cayenne keyed by id, A8), up to a durable commit;
#   count(*), sum(amount) GROUP BY kind, a 1% time range, a point lookup by id
#     through the SQL layer in process, each engine's time over DuckDB's
#     (ratio > 1: slower than DuckDB); over HTTP: bench/query.sh;
#   open with its checks (SPEC D5) against a full scan that checks every block
#     (tm_engine_verify), per file-mode engine (target, issue 22: < 10%);
#   max(ts), the high-water mark every refresh reads (target < 2 ms: answered from
#     the row groups DuckDB's zone maps keep near the last commit's bounds; issue 5's
#     1 ms was for the segment zone maps issue 15 removed).
# BENCH_ENGINE_ROWS changes the row count; the data is generated in memory by
# both sides from one formula (see bench_engine.c). The engines' files go to
# $BENCH_DATA/engine.
set -euo pipefail
root=${TM_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
bin=${TM_BENCH_BIN_DIR:-$root/build/release}/bench_engine
data=${BENCH_DATA:-$root/build/bench-data}
rows=${BENCH_ENGINE_ROWS:-10000000}
[[ -x $bin ]] || { echo "engine bench: $bin is missing (make release)" >&2; exit 1; }
mkdir -p "$data/engine"
out=$(mktemp "${TMPDIR:-/tmp}/tm-bench-engine-XXXXXX")
trap 'rm -f "$out" "$out.duck"; rm -rf "$data/engine"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --rows "$rows" --dir "$data/engine" --threads "$(nproc)" | tee "$out" | grep -v '^RESULT\|^CHECK'
bounds=$(awk '$1 == "RESULT" && $3 == "range_bounds" {print $4; exit}' "$out")
lo=${bounds%%|*}
hi=${bounds##*|}
TM_SOURCE_DIR=$root node "$root/bench/engine_duckdb.mjs" "$rows" "${lo/T/ }" "${hi/T/ }" "$(nproc)" | tee "$out.duck" | grep -v '^RESULT\|^CHECK'
cat "$out.duck" >> "$out"

# The answers must agree (DuckDB prints no header quoting: compare the rows only).
awk '$1 == "CHECK" {
       key = $3; sub(/^[^|]*\|/, "", $0); rows = $0; gsub(/ /, "", rows); gsub(/"/, "", rows); sub(/\|$/, "", rows)
       if (!(key in want)) want[key] = rows
       else if (want[key] != rows) { printf "engine bench: %s differs: %s vs %s\n", key, rows, want[key]; bad = 1 }
     }
     END { exit bad }' "$out" || { echo "engine bench: engines disagree" >&2; exit 1; }

awk '
  $1 == "RESULT" { v[$2, $3] = $4; if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
  END {
    printf "\n%-14s %14s %11s %7s %11s %7s %11s %7s %11s %7s\n", "engine", "ingest Mrow/s",
           "count(*) ms", "ratio", "group-by ms", "ratio", "1% range ms", "ratio", "point ms", "ratio"
    split("q_count_ms q_groupby_ms q_range_ms q_point_ms", qs, " ")
    for (i = 0; i < n; i++) {
      e = order[i]
      if (e == "data") continue
      line = sprintf("%-14s %14.2f", e, v[e, "ingest_rows_per_s"] / 1e6)
      for (k = 1; k <= 4; k++) {
        q = qs[k]
        if ((e, q) in v) line = line sprintf(" %11.2f %7s", v[e, q], e == "duckdb" ? "1" : sprintf("%.1fx", v[e, q] / v["duckdb", q]))
        else line = line sprintf(" %11s %7s", "-", "-")
      }
      print line
    }
    us = v["cayenne", "max_ts_us"]
    cay = v["cayenne", "ingest_rows_per_s"] / 1e6
    printf "\ncayenne ingest: %.2f M rows/s (CPU %.2f s for %d rows)\n", cay, v["cayenne", "ingest_cpu_s"], v["data", "rows"]
    printf "cayenne max(ts): %.2f us (target < 2000 us)\n", us
    printf "\n%-14s %14s %14s %8s   (issue 22: open with its checks < 10%% of a full scan)\n", "engine", "open ms", "full scan ms", "open %"
    bad = 0
    for (i = 0; i < n; i++) {
      e = order[i]
      if (!((e, "open_ms") in v)) continue
      pct = 100 * v[e, "open_ms"] / v[e, "scan_ms"]
      printf "%-14s %14.2f %14.1f %7.2f%%\n", e, v[e, "open_ms"], v[e, "scan_ms"], pct
      if (pct >= 10) bad = 1
    }
    if (bad) { print "engine bench: opening costs 10% of a full scan or more"; exit 1 }
    printf "(duckdb ingest is CREATE TABLE AS over range(), for reference only)\n"
    if (us >= 2000) exit 1
  }' "$out"
