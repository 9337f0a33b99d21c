#!/usr/bin/env bash
# SPEC 1.2 (`tidemark refresh`), A1/A2 (exactly once), B3 (no new snapshot):
# the no-op stamp (src/util/noop.h, docs/REFRESH.md "What a no-op refresh
# costs"). A refresh that changed nothing leaves .tidemark/refresh.noop; the
# next identical `tidemark refresh` is answered by the front program without
# running tidemark-core (which would have removed and re-written the stamp),
# with the same line. Every change the refresh could see runs tidemark-core
# again: a new, rewritten, touched or removed source file, the config, the
# environment and the dotenv files of the secret stores, the arguments, the
# acceleration's files, a damaged stamp,
# --full, logs; and datasets whose outcome depends on more than their files
# (retention, a memory acceleration) never leave a stamp.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/src"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:src
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
S=$T/.tidemark/refresh.noop
# The stamp's identity: tidemark-core always removes it first, so a run that
# leaves it as it was did not run tidemark-core.
stamp_id() { stat -c '%i %y' "$S" 2>/dev/null || echo none; }
add_rows() { write_parquet "$T/src/$1.parquet" "SELECT i AS id, TIMESTAMP '2026-01-01' + INTERVAL (i) SECOND AS ts FROM range($2, $3) t(i)"; }
count() { tm_sql "$T/tm.yaml" "SELECT count(*) FROM events"; }
line_re='^events: \+0 rows via time in [0-9]+\.[0-9]{2} s$'

add_rows a 0 100
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "events: +100 rows via time"
[[ ! -e $S ]] || fail "a refresh that loaded rows left a no-op stamp"
# The first no-op runs the refresh and leaves the stamp.
out=$(tm_refresh -c "$T/tm.yaml")
[[ $out =~ $line_re ]] || fail "no-op line: [$out]"
[[ -f $S ]] || fail "a no-op refresh left no stamp"
id=$(stamp_id)
# The next ones are answered from it: same line, the stamp untouched, nothing on stderr.
for i in 1 2 3; do
  out=$(tm refresh -c "$T/tm.yaml" 2>"$T/err")
  [[ $out =~ $line_re ]] || fail "replayed line: [$out]"
  assert_eq "$(cat "$T/err")" "" "a replayed no-op writes nothing on stderr"
  assert_eq "$(stamp_id)" "$id" "answered without tidemark-core"
done
assert_eq "$(count)" "100"

# Expect tidemark-core to run: the stamp is replaced (or gone). $1: why.
expect_core() {
  local before; before=$(stamp_id)
  out=$(tm_refresh -c "$T/tm.yaml" "${@:2}")
  [[ $(stamp_id) != "$before" ]] || fail "$1: answered from the stamp ($out)"
}
# A new file: loaded exactly once.
add_rows b 100 150
expect_core "a new source file"
assert_contains "$out" "events: +50 rows via time"
tm_refresh -c "$T/tm.yaml" >/dev/null # leaves a stamp again
[[ -f $S ]] || fail "no stamp after a no-op"
assert_eq "$(count)" "150"
# A file rewritten with the same bytes and size, a touched file, a removed file.
cp "$T/src/b.parquet" "$T/b.copy" && cp "$T/b.copy" "$T/src/b.parquet"
expect_core "a source file rewritten"
touch -d '2020-01-01' "$T/src/a.parquet"
expect_core "a source file touched"
mv "$T/src/b.parquet" "$T/b.moved"
expect_core "a source file removed"
mv "$T/b.moved" "$T/src/b.parquet"
expect_core "a source file back"
assert_eq "$(count)" "150" "no row loaded twice"
# The config, the environment, the arguments.
tm_refresh -c "$T/tm.yaml" >/dev/null
echo "# edited" >> "$T/tm.yaml"
expect_core "the config edited"
TM_NOOP_IT=1 expect_core "another environment"
# The secret stores' dotenv files (issue 17): created, changed, removed.
tm_refresh -c "$T/tm.yaml" >/dev/null
echo "TM_SECRET=1" > "$T/.env"
expect_core "a .env file created"
tm_refresh -c "$T/tm.yaml" >/dev/null
echo "TM_SECRET=2" > "$T/.env.local"
expect_core "a .env.local file created"
tm_refresh -c "$T/tm.yaml" >/dev/null
rm "$T/.env" "$T/.env.local"
expect_core "the dotenv files removed"
expect_core "a dataset named" events
tm_refresh -c "$T/tm.yaml" >/dev/null
# The acceleration's files.
touch "$T"/.tidemark/data/*
expect_core "the acceleration touched"
# A damaged stamp is not trusted.
tm_refresh -c "$T/tm.yaml" >/dev/null
sed -i 's/^line events/line EVENTS/' "$S"
out=$(tm_refresh -c "$T/tm.yaml")
[[ $out =~ $line_re ]] || fail "after a damaged stamp: [$out]"
grep -q '^line events' "$S" || fail "the damaged stamp was not replaced"
# --full and logs run tidemark-core; logs leave no stamp (their lines would be missing).
expect_core "--full" --full
assert_contains "$out" "events: 150 rows via full refresh"
tm_refresh -c "$T/tm.yaml" >/dev/null
TIDEMARK_LOG=info tm refresh -c "$T/tm.yaml" >/dev/null 2>"$T/log"
[[ ! -e $S ]] || fail "a run that logged left a stamp"
assert_contains "$(cat "$T/log")" "refresh finished"

# Outcomes that depend on more than files never leave a stamp: a config that
# reads a variable the key leaves out (noop.h), retention, a memory acceleration,
# an acceleration file outside .tidemark (which the stamp does not pin).
cat >> "$T/tm.yaml" <<'YAML'
  - from: s3://bucket/other
    name: other
    params: {s3_region: "r${env:SHLVL}"}
YAML
tm_refresh -c "$T/tm.yaml" >/dev/null
tm_refresh -c "$T/tm.yaml" >/dev/null
[[ ! -e $S ]] || fail "a stamp for a config that reads SHLVL"
for accel in "{refresh_mode: append, retention_check_enabled: true, retention_period: 3650d}" \
             "{refresh_mode: append, engine: arrow}" \
             "{refresh_mode: append, engine: duckdb, mode: file, params: {duckdb_file: elsewhere.db}}"; do
  cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:src
    name: events
    time_column: ts
    acceleration: $accel
YAML
  tm_refresh -c "$T/tm.yaml" >/dev/null
  tm_refresh -c "$T/tm.yaml" >/dev/null
  [[ ! -e $S ]] || fail "a stamp for $accel"
done

# An Iceberg table on the file system: "no new snapshot" replays; a new snapshot is read.
ice_create "$T/wh/t"
ice_append "$T/wh/t" "1,2026-01-01T00:00:00Z,a" "2,2026-01-01T00:00:01Z,b"
cat > "$T/tm.yaml" <<YAML
datasets:
  - from: iceberg:file:wh/t
    name: events
    time_column: ts
    acceleration: {refresh_mode: append}
YAML
rm -rf "$T/.tidemark"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "events: +2 rows"
assert_contains "$(tm_refresh -c "$T/tm.yaml")" "via snapshots (no new snapshot)"
id=$(stamp_id)
[[ $id != none ]] || fail "no stamp after no new snapshot"
out=$(tm refresh -c "$T/tm.yaml")
[[ $out =~ ^events:\ \+0\ rows\ via\ snapshots\ \(no\ new\ snapshot\)\ in\ [0-9.]+\ s$ ]] || fail "iceberg replay: [$out]"
assert_eq "$(stamp_id)" "$id" "iceberg no-op answered from the stamp"
ice_append "$T/wh/t" "3,2026-01-01T00:00:02Z,c"
expect_core "a new snapshot"
assert_contains "$out" "events: +1 rows via snapshots (1: append 1)"
assert_eq "$(count)" "3"
echo "ok"
