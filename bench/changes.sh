#!/usr/bin/env bash
# Applying Iceberg changes (issue 19, SPEC E4) on a 10M-row table (id, k, v),
# written once into $BENCH_DATA/changes-10m (DuckDB writes the Parquet,
# `tidemark iceberg append` makes the snapshot). Side by side in one run:
#   0. a full reload of the table (refresh_mode: full), the reference;
#   1. a snapshot deleting 1,000 rows with position deletes, applied;
#   2. a snapshot adding 1,000 rows, applied;
#   3. a no-change refresh, and the files it opens (target: only the
#      metadata file, no manifest list, manifest or data file);
# each with its ratio to the full reload (targets: < 0.5 s and <= 1/20).
# Then engine sqlite (file mode), the same way against its own full reload:
#   4. a full reload into sqlite, the first load of a sqlite changes dataset,
#      1,000 rows deleted by position deletes and 1,000 rows added, applied
#      (deletes: native DELETEs through the provenance index, SPEC E4), and
#      the space of that index (BENCH_CHANGES_SQLITE=0 skips this part).
# The mode under test is BENCH_CHANGES_MODE (default `changes`; when the
# runtime refuses it, the run says so and measures `full` instead, whose
# "applied" figures are then full reloads).
set -euo pipefail
: "${TM_BENCH_BIN_DIR:?run through make bench}" "${BENCH_DATA:?}"
tm=$TM_BENCH_BIN_DIR/tidemark
rows=${BENCH_CHANGES_ROWS:-10000000}
base=$BENCH_DATA/changes-$rows
if [[ ! -f $base/.complete ]]; then
  echo "-- generating $base ($rows rows; once)"
  rm -rf "$base"; mkdir -p "$base"
  node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY (SELECT range AS id, range % 1000 AS k, 'value-' || range AS v
        FROM range(1, $rows + 1)) TO '$base/in.parquet' (FORMAT PARQUET, ROW_GROUP_SIZE 1000000)" >/dev/null
  "$tm" iceberg create "$base/wh/t" --schema-from "$base/in.parquet" >/dev/null
  "$tm" iceberg append "$base/wh/t" "$base/in.parquet" --target-size 134217728 >/dev/null
  rm -f "$base/in.parquet"
  touch "$base/.complete"
fi
w=$(mktemp -d "${TMPDIR:-/tmp}/tm-bench-changes-XXXXXX")
trap 'rm -rf "$w"' EXIT
cp -a "$base/wh" "$w/wh"
mode=${BENCH_CHANGES_MODE:-changes}
config() { # MODE [ENGINE]
  printf 'datasets:\n  - from: iceberg:file://wh/t\n    name: t\n    acceleration: {refresh_mode: %s, mode: file%s}\n' "$1" "${2:+, engine: $2}" >"$w/tm.yaml"
}
refresh() { (cd "$w" && TIDEMARK_LOG=info "$tm" refresh -c tm.yaml "$@" 2>"$w/log"); }
inner_ms() { sed -n 's/.*refresh finished:.*; \([0-9.]*\) ms$/\1/p' "$w/log" | tail -n1; }
opens() {
  (cd "$w" && strace -f -qq -e trace=openat -o "$w/trace" "$tm" refresh -c tm.yaml >/dev/null 2>&1)
  echo "metadata files $(grep -c '\.metadata\.json"' "$w/trace" || true)," \
       "manifest lists $(grep -c '/snap-[^"]*\.avro"' "$w/trace" || true)," \
       "manifests $(grep -c -- '-m[0-9]*\.avro"' "$w/trace" || true)," \
       "data files $(grep -c '/data/[^"]*\.parquet"' "$w/trace" || true)," \
       "delete vectors $(grep -c '\.puffin"' "$w/trace" || true)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f ms, %.4f of the full reload (1/%.0f)", a, a / b, (a > 0 ? b / a : 0) }'; }
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print ((a < 500 && a * 20 <= b) ? "meets" : "misses") " the target (< 500 ms, <= 1/20)" }'; }
count() { (cd "$w" && "$tm" sql -c tm.yaml --format csv "SELECT count(*) FROM t" | tail -n1); }

echo "-- 0. full reload of $rows rows (refresh_mode: full)"
config full
refresh | sed 's/^/   /'
full_ms=$(inner_ms)
echo "   full reload ${full_ms} ms"
rm -rf "$w"/.tidemark "$w"/accel* "$w"/*.db 2>/dev/null || true

config "$mode"
if ! refresh >/dev/null 2>"$w/err"; then
  echo "   refresh_mode: $mode is refused by this build: $(grep -o 'refresh_mode[^"]*' "$w/log" "$w/err" | head -n1); measuring full instead"
  mode=full; config full; refresh >/dev/null
fi
echo "-- mode under test: $mode (initial load $(inner_ms) ms)"
lo=$(( rows / 2 ))
(cd "$w" && "$tm" iceberg delete wh/t --where "id >= $lo AND id < $((lo + 1000))" >/dev/null)
echo "-- 1. a snapshot deleting 1,000 rows (position deletes)"
refresh | sed 's/^/   /'
del_ms=$(inner_ms)
echo "   applied in $(ratio "$del_ms" "$full_ms"); $(verdict "$del_ms" "$full_ms"); rows now $(count)"
node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY (SELECT range AS id, range % 1000 AS k, 'new-' || range AS v
      FROM range($rows + 1, $rows + 1001)) TO '$w/add.parquet' (FORMAT PARQUET)" >/dev/null
(cd "$w" && "$tm" iceberg append wh/t add.parquet >/dev/null)
echo "-- 2. a snapshot adding 1,000 rows"
refresh | sed 's/^/   /'
add_ms=$(inner_ms)
echo "   applied in $(ratio "$add_ms" "$full_ms"); $(verdict "$add_ms" "$full_ms"); rows now $(count)"
echo "-- 3. a no-change refresh"
refresh | sed 's/^/   /'
none_ms=$(inner_ms)
echo "   $(ratio "$none_ms" "$full_ms"); opens: $(opens)"

[[ ${BENCH_CHANGES_SQLITE:-1} == 0 ]] && exit 0
echo "-- 4. engine sqlite (file mode)"
rm -rf "$w"/.tidemark
config full sqlite
refresh | sed 's/^/   /'
sq_full_ms=$(inner_ms)
db=$w/.tidemark/data/t # the default sqlite_file
full_bytes=$(stat -c %s "$db")
echo "   full reload ${sq_full_ms} ms; file $((full_bytes / 1048576)) MiB"
rm -rf "$w"/.tidemark
config "$mode" sqlite
refresh >/dev/null
echo "   first load of the $mode dataset $(inner_ms) ms"
lo=$(( rows / 4 ))
(cd "$w" && "$tm" iceberg delete wh/t --where "id >= $lo AND id < $((lo + 1000))" >/dev/null)
refresh | sed 's/^/   /'
sq_del_ms=$(inner_ms)
echo "   1,000 rows deleted (position deletes) applied in $(ratio "$sq_del_ms" "$sq_full_ms"); $(verdict "$sq_del_ms" "$sq_full_ms"); rows now $(count)"
node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "COPY (SELECT range AS id, range % 1000 AS k, 'new-' || range AS v
      FROM range($rows + 2001, $rows + 3001)) TO '$w/add2.parquet' (FORMAT PARQUET)" >/dev/null
(cd "$w" && "$tm" iceberg append wh/t add2.parquet >/dev/null)
refresh | sed 's/^/   /'
sq_add_ms=$(inner_ms)
echo "   1,000 rows added applied in $(ratio "$sq_add_ms" "$sq_full_ms"); $(verdict "$sq_add_ms" "$sq_full_ms"); rows now $(count)"
if command -v sqlite3 >/dev/null && ix=$(sqlite3 -readonly "$db" "SELECT sum(pgsize) FROM dbstat WHERE name LIKE '%__tm_prov'" 2>/dev/null) && [[ -n $ix ]]; then
  echo "   file $(( $(stat -c %s "$db") / 1048576 )) MiB (full dataset: $((full_bytes / 1048576)) MiB), of which the provenance index $((ix / 1048576)) MiB"
else
  echo "   file $(( $(stat -c %s "$db") / 1048576 )) MiB (full dataset: $((full_bytes / 1048576)) MiB)"
fi
