#!/usr/bin/env bash
# Differential test of the Parquet reader against DuckDB (issue 3): every
# Parquet file in ../shared/testdata/parquet (top level, impala/, hyparquet/,
# iceberg-encodings/, arrow-testing/) must decode to the same canonical CSV
# as DuckDB reads from it; nested columns must be refused with "unsupported
# nested column NAME"; files DuckDB cannot read are compared with a twin file
# or the expected values shipped with them. The driver prints one line per
# file saying how it was checked (docs/PARQUET.md has the same table).
# The command lines run in one process (tests/tools/cli_batch.c, through
# tidemark-core's own dispatch); a few run through the real binary as well
# and must give the same exit code, output and message.
source "$(dirname "$0")/lib.sh"
require_shared "$TESTDATA/parquet"
TM_BUILD_DIR=${TM_BUILD_DIR:-$TM_SOURCE_DIR/build/dev} TM_BIN=$TM_BIN TM_TESTDATA=$TESTDATA node "$TM_SOURCE_DIR/tests/node/parquet-difftest.mjs" corpus
