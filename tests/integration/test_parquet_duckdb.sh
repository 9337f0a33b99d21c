#!/usr/bin/env bash
# Differential test of the Parquet reader against DuckDB (issue 3): every
# Parquet file in ../shared/testdata/parquet (top level, impala/, hyparquet/,
# iceberg-encodings/, arrow-testing/) must decode to the same canonical CSV
# as DuckDB reads from it; nested columns must be refused with "unsupported
# nested column NAME"; files DuckDB cannot read are compared with a twin file
# or the expected values shipped with them. The driver prints one line per
# file saying how it was checked (docs/PARQUET.md has the same table).
source "$(dirname "$0")/lib.sh"
require_shared "$TESTDATA/parquet"
TM_BIN=$TM_BIN TM_TESTDATA=$TESTDATA node "$TM_SOURCE_DIR/tests/node/parquet-difftest.mjs" corpus
