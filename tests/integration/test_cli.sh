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
echo "ok"
