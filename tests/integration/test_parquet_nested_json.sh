#!/usr/bin/env bash
# issue 16: nested Parquet columns loaded as JSON text (unsupported_type_action:
# string) equal DuckDB's to_json of them, row by row, federated and in the
# duckdb and sqlite engines: a file DuckDB writes (lists, structs, maps, lists
# of structs, maps of lists, nulls at every level, empty lists, row groups) and
# the nested files of ../shared/testdata/parquet (parquet-mr, Spark, Hive,
# arrow-rs legacy list encodings). See tests/node/nested-difftest.mjs.
source "$(dirname "$0")/lib.sh"
require_shared "$TESTDATA/parquet"
TM_BIN=$TM_BIN TM_TESTDATA=$TESTDATA node "$TM_SOURCE_DIR/tests/node/nested-difftest.mjs" "$T"
