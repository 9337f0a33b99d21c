#!/usr/bin/env bash
# Issue 10 "disk full" (SPEC D1, D3): `tidemark refresh` writes its acceleration
# into a file system that runs out of room.
#   1. A 64 MiB tmpfs the test mounts (skipped, with a note, where mount is not
#      permitted), filled up but for 1 MiB: an append that needs ~3 MiB fails
#      with an error naming the file and "No space left on device" (cayenne)
#      or "database or disk is full" (sqlite), exits 1, and `tidemark sql`
#      still shows the previous rows. Once the filler is removed, the next
#      refresh completes and the acceleration equals the source (multiset
#      signature computed by DuckDB on the Parquet files).
#   2. RLIMIT_FSIZE (`ulimit -f` in a subshell): writes past the limit fail
#      with EFBIG ("File too large"), because tidemark ignores SIGXFSZ; same
#      checks.
source "$(dirname "$0")/lib.sh"
mkdir -p "$T/data"
M="$T/mnt"
mkdir -p "$M"
sig_sql="count(*), sum(id), sum((id * id) % 1000003), count(DISTINCT v), sum(length(v))"
source_sig() { duckdb_query "SELECT $sig_sql FROM read_parquet('$T/data/*.parquet')" | tail -n +2 | tr -d '\r'; }
accel_sig() { tm_sql "$T/tm.yaml" "SELECT $sig_sql FROM $1"; }
count_of() { tm_sql "$T/tm.yaml" "SELECT count(*) FROM $1"; }
# Rows [lo, hi): a time that grows with id and a 32-character string that does not compress.
add_file() {
  write_parquet "$T/data/$1.parquet" \
    "SELECT range AS id, TIMESTAMP '2026-01-01 00:00:00' + to_seconds(range) AS ts, md5(range::VARCHAR) AS v
     FROM range($2, $3)"
}
config() {
  cat > "$T/tm.yaml" <<YAML
datasets:
  - from: file:data
    name: cay
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: append, params: {file_path: $1/cay}}
  - from: file:data
    name: lite
    time_column: ts
    acceleration: {engine: sqlite, mode: file, refresh_mode: append, params: {file_path: $1/lite.db}}
YAML
}
# refresh_fails DATASET CAUSE...: the refresh exits 1 with an error naming a file of
# the acceleration and one of the causes; the previous rows keep serving.
refresh_fails() {
  local ds=$1 where=$2; shift 2
  local before rc
  before=$(count_of "$ds")
  set +e
  "$TM_BIN" refresh -c "$T/tm.yaml" "$ds" >"$T/out" 2>"$T/err"; rc=$?
  set -e
  [[ $rc -eq 1 ]] || { cat "$T/err" >&2; fail "$ds: the refresh exited $rc, expected 1"; }
  local msg found=
  msg=$(grep "refresh failed" "$T/err" || true)
  assert_contains "$msg" "$where/$ds" "$ds: the error names no file of the acceleration"
  for cause in "$@"; do [[ $msg == *"$cause"* ]] && found=1; done
  [[ -n $found ]] || fail "$ds: the error says none of [$*]: $msg"
  note "$ds: $msg"
  assert_eq "$(count_of "$ds")" "$before" "$ds: rows after the failed refresh"
}
# Both accelerations equal the source.
both_complete() {
  local want
  want=$(source_sig)
  tm_refresh -c "$T/tm.yaml" >/dev/null
  for ds in cay lite; do assert_eq "$(accel_sig "$ds")" "$want" "$ds after space came back"; done
}

add_file f0 0 5000

# ---- 1. a full tmpfs --------------------------------------------------------
if mount -t tmpfs -o size=64m tidemark-test "$M" 2>"$T/mount.err"; then
  # Unmount before lib.sh's trap removes $T (keeping its exit status).
  lib_trap=$(trap -p EXIT | sed "s/^trap -- '//; s/' EXIT\$//")
  trap "rc0=\$?; umount '$M' 2>/dev/null || true; (exit \$rc0); $lib_trap" EXIT
  config "$M"
  tm_refresh -c "$T/tm.yaml" >/dev/null
  assert_eq "$(count_of cay)" 5000
  assert_eq "$(count_of lite)" 5000
  add_file f1 5000 55000
  # Leave 1 MiB free; the new rows need several.
  avail=$(df --output=avail -B1 "$M" | tail -1)
  head -c $(( avail - 1048576 )) /dev/zero > "$M/filler"
  refresh_fails cay "$M" "No space left on device"
  refresh_fails lite "$M" "database or disk is full" "No space left on device"
  grep -q '\.tmp\.' <<<"$(ls "$M/cay")" && fail "a temporary manifest was left behind"
  rm "$M/filler"
  both_complete
  note "tmpfs: both refreshes failed cleanly on a full disk, then completed"
  umount "$M"
else
  note "SKIPPED the tmpfs part: mount is not permitted here ($(head -c 200 "$T/mount.err"))"
  add_file f1 5000 55000
fi

# ---- 2. RLIMIT_FSIZE ----------------------------------------------------------
rm -rf "$M"/* "$T/.tidemark"
config "$T/acc"
# The first load fits under 1 MiB per file; the append does not.
rm "$T/data/f1.parquet"
tm_refresh -c "$T/tm.yaml" >/dev/null
add_file f1 5000 55000
# refresh_fails runs the binary; the limit (in KiB) applies to it alone.
ulimit_refresh_fails() {
  ( ulimit -f 1024; refresh_fails "$@" )
}
ulimit_refresh_fails cay "$T/acc" "File too large"
ulimit_refresh_fails lite "$T/acc" "File too large"
both_complete
note "RLIMIT_FSIZE: both refreshes failed with EFBIG (SIGXFSZ ignored), then completed"
echo ok
