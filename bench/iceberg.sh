#!/usr/bin/env bash
# Iceberg metadata benchmarks (SPEC B2, B3): the no-change check reads one
# metadata file; planning "added since S" for 10 snapshots stays under 50 ms and
# flat as the history grows from 100 to 1,000 snapshots. Tables are generated
# once under $BENCH_DATA by tidemark's own writer (metadata only).
set -euo pipefail
bin=${TM_BENCH_BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/release}/bench_iceberg
data=${BENCH_DATA:-$(cd "$(dirname "$0")/.." && pwd)/build/bench-data}
mkdir -p "$data"
"$bin" "$data"
