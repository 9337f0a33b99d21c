#!/usr/bin/env bash
# issue 16: nested Parquet columns, loaded natively and as JSON text
# (unsupported_type_action: string), equal DuckDB's to_json of them, row by
# row, federated and in the duckdb and sqlite engines: a file DuckDB writes
# (lists, structs, maps, lists of structs, maps of lists, nulls at every
# level, empty lists, row groups), two files arrow-rs writes (parquet-wasm:
# version 1 and 2 pages), and the nested files of ../shared/testdata/parquet
# (parquet-mr, Spark, Hive, arrow-rs legacy list encodings). See
# tests/node/nested-difftest.mjs.
source "$(dirname "$0")/lib.sh"
require_shared "$TESTDATA/parquet"
TM_BIN=$TM_BIN TM_TESTDATA=$TESTDATA node "$TM_SOURCE_DIR/tests/node/nested-difftest.mjs" "$T"

# `tidemark parquet schema` names a nested column's whole type, and says why one cannot be read.
out=$(tm parquet schema "$T/arrowrs_nested_v1.parquet")
assert_contains "$out" 'mol    | map<utf8,list<int64>>'
assert_contains "$out" 'lll    | list<list<list<int32>>>'
out=$(tm parquet schema "$TESTDATA/parquet/map_no_value.parquet")
assert_contains "$out" "unsupported: $TESTDATA/parquet/map_no_value.parquet: column 'my_map_no_v': MAP 'my_map_no_v' has no value field"
assert_contains "$out" 'my_list     | list<int32!>'
