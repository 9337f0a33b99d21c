#!/usr/bin/env bash
# The command line (issue 2): help on every command, usage errors exit 2,
# a bad config is reported with its location and exits 2.
source "$(dirname "$0")/lib.sh"

out=$(tm --help) || fail "--help exited non-zero"
for cmd in run refresh sql status iceberg parquet config; do
  assert_contains "$out" "  $cmd " "main help lists $cmd"
  help=$(tm "$cmd" --help) || fail "$cmd --help exited non-zero"
  assert_contains "$help" "usage: tidemark $cmd" "$cmd --help"
done
assert_contains "$(tm --version)" "tidemark " "--version"

set +e
tm frobnicate >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "unknown command exit code"
assert_contains "$(cat "$T/err")" "unknown command 'frobnicate'"

set +e
tm sql --no-such-flag >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "unknown flag exit code"
assert_contains "$(cat "$T/err")" "unknown option '--no-such-flag'"

set +e
tm refresh --sql >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "missing option value exit code"

cat > "$T/bad.yaml" <<'YAML'
version: v1
datasets:
  - from: file:data
    name: events
    acceleration:
      refresh_mode: append
      refresh_append_overlap: ten minutes
YAML
set +e
tm run -c "$T/bad.yaml" >"$T/out" 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "run -c bad.yaml exit code"
assert_eq "$(cat "$T/out")" "" "nothing on stdout"
assert_contains "$(cat "$T/err")" "bad.yaml:7:31: datasets[0].acceleration.refresh_append_overlap: bad duration 'ten minutes'"

set +e
tm run -c "$T/missing.yaml" 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "missing config exit code"
assert_contains "$(cat "$T/err")" "missing.yaml: config file not found"

out=$(tm config check -c "$TM_SOURCE_DIR/examples/tidemark.yaml")
assert_contains "$out" "valid, 2 datasets"
assert_contains "$out" "events: file:data/events (file), accelerated: cayenne/file, refresh append by ts"
# Spice's `spice refresh` flags: --refresh-sql (tidemark's --sql) and --refresh-mode.
mkdir -p "$T/spice/data"
printf '{"id": 1, "ts": "2024-01-01T00:00:01Z"}\n{"id": 2, "ts": "2024-01-01T00:00:02Z"}\n' > "$T/spice/data/a.jsonl"
cat > "$T/spice/tidemark.yaml" <<'YAML'
datasets:
  - {from: file:data, name: ev, params: {file_format: jsonl}, time_column: ts,
     acceleration: {engine: duckdb, mode: file, refresh_mode: append}}
  - {from: file:data, name: whole, params: {file_format: jsonl}, acceleration: {engine: duckdb, mode: file}}
YAML
out=$(tm refresh -c "$T/spice/tidemark.yaml" ev --refresh-sql "SELECT * FROM ev WHERE id = 2" 2>/dev/null)
assert_contains "$out" "ev: +1 rows via time"
out=$(tm refresh -c "$T/spice/tidemark.yaml" ev --refresh-mode full 2>/dev/null)
assert_contains "$out" "ev: 2 rows via full refresh"
out=$(tm refresh -c "$T/spice/tidemark.yaml" ev --refresh-mode append 2>/dev/null)
assert_contains "$out" "ev: +0 rows"
set +e
tm refresh -c "$T/spice/tidemark.yaml" whole --refresh-mode append >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "--refresh-mode append on a full dataset"
assert_contains "$(cat "$T/err")" "dataset 'whole' refreshes in full mode"
set +e
tm refresh -c "$T/spice/tidemark.yaml" ev --refresh-mode sometimes >/dev/null 2>"$T/err"; rc=$?
set -e
assert_eq "$rc" 2 "a bad --refresh-mode"
assert_contains "$(cat "$T/err")" "bad --refresh-mode 'sometimes' (allowed: full, append)"
echo "ok"
