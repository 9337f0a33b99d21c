# Shared helpers for integration tests (sourced, not run).
# Environment from ctest: TM_BIN (the binary under test), TM_SOURCE_DIR, NODE_PATH.
set -euo pipefail
: "${TM_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${TM_BIN:=$TM_SOURCE_DIR/build/dev/tidemark}"
export NODE_PATH=${NODE_PATH:-$TM_SOURCE_DIR/tests/node/node_modules}
TESTDATA=${TM_TESTDATA:-$TM_SOURCE_DIR/../shared/testdata}
T=$(mktemp -d "${TMPDIR:-/tmp}/tm-it-XXXXXX")
trap 'rc=$?; if [[ $rc -eq 0 || $rc -eq 77 ]]; then rm -rf "$T"; else echo "files kept in $T" >&2; fi; jobs -p | xargs -r kill 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "  $*" >&2; }
# Skips the test (exit 77: ctest shows it as skipped, never as passed).
skip() { echo "SKIP: $*" >&2; exit 77; }
# A folder of ../shared/testdata the test needs: skipped when absent, a failure
# when TM_REQUIRE_SHARED is set (CI always has the folder).
require_shared() {
  [[ -d $1 ]] && return 0
  [[ -n ${TM_REQUIRE_SHARED:-} && ${TM_REQUIRE_SHARED} != 0 ]] && fail "test data missing: $1 (TM_REQUIRE_SHARED is set)"
  skip "test data missing: $1"
}
# Seeds $RANDOM for a randomised test and prints the seed: TM_SEED=<n> replays
# the same random choices (kill delays; the instants they land on still vary
# with the machine's speed).
seed_random() {
  local seed=${TM_SEED:-$(( $(date +%s%N) % 1000000007 ))}
  [[ $seed =~ ^[0-9]+$ ]] || fail "TM_SEED=$seed is not a number"
  RANDOM=$seed
  note "$1: seed $seed (TM_SEED=$seed replays it)"
}
tm() { "$TM_BIN" "$@"; }
assert_eq() { [[ "$1" == "$2" ]] || fail "${3:-values differ}: got [$1], want [$2]"; }
assert_contains() { [[ "$1" == *"$2"* ]] || fail "${3:-missing text}: [$2] not in [$1]"; }
duckdb_query() { node "$TM_SOURCE_DIR/tests/node/duckdb-query.mjs" "$@"; }
# Writes a Parquet file with DuckDB from a SELECT (an independent writer).
write_parquet() { duckdb_query "COPY ($2) TO '$1' (FORMAT PARQUET)" >/dev/null; }
# write_parquets FILE SELECT [FILE SELECT]...: several files in one DuckDB run
# (a node start costs more CPU than writing a small file).
write_parquets() {
  local sql=
  while (($# >= 2)); do sql+="COPY ($2) TO '$1' (FORMAT PARQUET); "; shift 2; done
  (($# == 0)) || fail "write_parquets: FILE SELECT pairs"
  duckdb_query "$sql" >/dev/null
}
# Rows of a query through `tidemark sql -c CONFIG`, as CSV without the header.
tm_sql() { local cfg=$1; shift; tm sql -c "$cfg" --format csv "$@" | tail -n +2 | tr -d '\r'; }
# The summary line of `tidemark refresh` for one dataset (stdout only).
tm_refresh() { tm refresh "$@" 2>"$T/refresh.err" || { cat "$T/refresh.err" >&2; return 1; }; }
# An Iceberg table (id long, ts timestamptz, v string) authored with `tidemark iceberg`.
ICE_SCHEMA='{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"ts","required":false,"type":"timestamptz"},{"id":3,"name":"v","required":false,"type":"string"}]}'
ice_create() { tm iceberg create "$1" --schema "${2:-$ICE_SCHEMA}" >/dev/null; }
# ice_append TABLE "id,ts,v" ...: one append snapshot with these CSV rows.
ice_append() {
  local table=$1; shift
  local f; f=$(mktemp "$T/rows-XXXXXX.csv")
  { echo "id,ts,v"; printf '%s\n' "$@"; } > "$f"
  tm iceberg append "$table" "$f" >/dev/null
}
