#!/usr/bin/env bash
# Hostile input (issue 3, SPEC D2): every file in ../shared/testdata/parquet/
# bad/ and encrypted/ must give an error naming the file and a cause, or read
# cleanly (then it must match DuckDB), with no crash, hang or sanitizer
# report. Files whose only fault is a page CRC read without CRC checks and
# fail with "page CRC mismatch" under --verify-crc.
source "$(dirname "$0")/lib.sh"
require_shared "$TESTDATA/parquet/bad"
TM_BUILD_DIR=${TM_BUILD_DIR:-$TM_SOURCE_DIR/build/dev} TM_BIN=$TM_BIN TM_TESTDATA=$TESTDATA node "$TM_SOURCE_DIR/tests/node/parquet-difftest.mjs" bad
