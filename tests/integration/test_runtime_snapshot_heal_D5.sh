#!/usr/bin/env bash
# A damaged acceleration heals from its newest snapshot (SPEC D5, C2), on a
# real `tidemark run`, for the sqlite and cayenne engines. After a load of
# 30,000 rows has written its snapshot, the server stops, 100 newer rows
# arrive at the source, and the acceleration's file is damaged:
#   - "query": a byte flipped in every page (sqlite) or block (DuckDB) of
#     the file's middle third, where the rows are: the file opens, and the
#     first query over every row meets the damage;
#   - "open": the file's first page (sqlite: schema) or both database
#     headers (DuckDB) damaged: the file does not open.
# Then a query over every row never answers wrongly (it fails or is exact),
# the refresh replaces the files with the snapshot, verifies it, and goes on
# from the snapshot's high-water mark: it reads only the 100 new rows, and
# the answer equals DuckDB's over the source files, also after a restart.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"

mkdir -p "$T/src"
gen_jsonl "$T/src/a.jsonl" 1 30000
AGG="count(*) AS n, sum(id) AS s, sum(v) AS vs, sum(hash(id, ts, batch, v)) AS h"
truth() { duckdb_query "SELECT $AGG FROM read_json_auto('$T/src/*.jsonl')" | tail -1; }
answer() { sql "SELECT $AGG FROM events" -H 'Accept: text/csv'; ROW=$(printf '%s' "${BODY//$'\r'/}" | tail -1); }

# damage FILE ENGINE WHERE: flips bytes as described above.
damage() {
  python3 - "$@" <<'PY'
import sys
path, engine, where = sys.argv[1], sys.argv[2], sys.argv[3]
with open(path, "r+b") as f:
    data = bytearray(f.read())
    if engine == "sqlite":
        unit = int.from_bytes(data[16:18], "big") or 65536
        first = 0
    else:
        unit, first = 262144, 12288  # DuckDB: 3 headers of 4 KiB, then blocks of 256 KiB
    if where == "open":
        offsets = [150] if engine == "sqlite" else [4096 + 40, 8192 + 40]
    else:
        n = (len(data) - first) // unit
        assert n >= 3, f"{path}: only {n} pages or blocks"
        offsets = [first + i * unit + 200 for i in range(n // 3, 2 * n // 3)]
    for o in offsets:
        data[o] ^= 0x5A
    f.seek(0)
    f.write(data)
print(len(offsets))
PY
}

for engine in ${ENGINES:-sqlite cayenne}; do
  for where in query open; do
    dir=$T/$engine-$where
    rm -rf "$dir" "$T/src/b.jsonl"
    mkdir -p "$dir"
    cat > "$dir/tidemark.yaml" <<YAML
snapshots:
  enabled: true
  location: file://$dir/snaps
datasets:
  - from: file:$T/src
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: append, refresh_check_interval: 1h,
                   snapshots: enabled}
YAML
    start_server "$dir/tidemark.yaml"
    wait_until 60 count_is events 30000 || fail "$engine/$where: first load"
    wait_until 30 grep -q '\[events\] acceleration snapshot written' "$SERVER_LOG" ||
      fail "$engine/$where: no snapshot written"
    stop_server
    gen_jsonl "$T/src/b.jsonl" 30001 100 late
    # The same source files in every round (b.jsonl is written again, the same
    # rows): DuckDB reads them once.
    if [[ -z ${want:-} ]]; then
      want=$(truth)
      [[ $want == 30100,* ]] || fail "DuckDB over the source: $want"
    fi
    if [[ $engine == sqlite ]]; then file=$dir/.tidemark/data/events; else file=$dir/.tidemark/data/events/data.duckdb; fi
    [[ -f $file ]] || fail "$engine/$where: no acceleration file at $file"
    flipped=$(damage "$file" "$engine" "$where")
    note "$engine/$where: $flipped bytes flipped in $(basename "$file")"

    start_server "$dir/tidemark.yaml"
    wait_until 30 bash -c "curl -s -o /dev/null $BASE/health" || fail "$engine/$where: no server"
    answer
    # Never a wrong answer: an error, or the old rows exactly (before the refresh ran).
    if [[ $STATUS == 200 && $ROW != 30000,* && $ROW != "$want" ]]; then
      fail "$engine/$where: a wrong answer from the damaged acceleration: $ROW"
    fi
    api POST /v1/datasets/events/acceleration/refresh
    ok=
    for _ in $(seq 150); do
      answer
      [[ $STATUS == 200 && $ROW == "$want" ]] && { ok=1; break; }
      sleep 0.2
    done
    [[ -n $ok ]] || { tail -30 "$SERVER_LOG" >&2; fail "$engine/$where: not healed: $STATUS $BODY"; }
    grep -q '\[events\] the damaged acceleration was replaced by its snapshot' "$SERVER_LOG" ||
      { cat "$SERVER_LOG" >&2; fail "$engine/$where: not healed from the snapshot"; }
    # The first restore heals: SQL lets go of the damaged engine before its files are replaced,
    # so the copy is not read through the old engine's open file.
    if grep -q '\[events\] no snapshot replaces the damaged acceleration' "$SERVER_LOG"; then
      cat "$SERVER_LOG" >&2; fail "$engine/$where: the first restore failed"
    fi
    # From the snapshot's high-water mark: only the 100 new rows were read.
    grep -q '\[events\] refresh finished: +100 rows via time in [0-9.]* s; read 100 rows' "$SERVER_LOG" ||
      fail "$engine/$where: the refresh after the restore: $(grep '\[events\] refresh finished' "$SERVER_LOG")"
    if grep -q '\[events\] refresh finished: +30100 rows' "$SERVER_LOG"; then
      fail "$engine/$where: loaded the source again instead of restoring"
    fi
    stop_server
    # The restored acceleration is the one on disk now.
    start_server "$dir/tidemark.yaml"
    wait_until 30 is_ready || fail "$engine/$where: not ready after a restart"
    answer
    assert_eq "$STATUS $ROW" "200 $want" "$engine/$where: after a restart"
    grep -q 'the acceleration is damaged' "$SERVER_LOG" && fail "$engine/$where: still damaged after a restart"
    stop_server
  done
done
echo ok
