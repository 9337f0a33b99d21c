#!/usr/bin/env bash
# Issue 22 (SPEC D5): a damaged acceleration is never answered from, and heals.
# For each file-mode engine (cayenne, duckdb: DuckDB's block checksums;
# sqlite: the page checksums of engine/sqlite/cksum.c), each trial starts
# from a good acceleration of 50,000 rows, stops the server, damages the
# acceleration's files in one way — 1, 8 or 64 random bytes flipped, the
# file truncated at a random length, or one of its files deleted — and starts
# the server again. Then:
#   - a query over every row and column answers exactly what DuckDB reads
#     from the source files (count, sums, a hash over all rows), or fails
#     with an error: never a wrong answer;
#   - after the refresh that follows (the one a failed query starts, or one
#     asked for through the API), the same query answers exactly.
# TM_DAMAGE_TRIALS trials per engine: 2 in `make check`, 110 with TM_STRESS=1
# (330 in all).
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/../integration/runtime_lib.sh"
trials=${TM_DAMAGE_TRIALS:-$([[ -n ${TM_STRESS:-} ]] && echo 110 || echo 2)}
seed_random damage
mkdir -p "$T/data"
python3 - "$T/data/a.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 50001):
        f.write(json.dumps({"id": i, "ts": f"2024-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                            "amt": (i * 7919) % 100003, "tag": f"t{i % 97}"}) + "\n")
PY
AGG="count(*) AS n, sum(id) AS s, sum(amt) AS a, sum(hash(id, amt, tag)) AS h, count(DISTINCT ts) AS d"
Q="SELECT $AGG FROM events"
want=$(duckdb_query "SELECT $AGG FROM read_json_auto('$T/data/a.jsonl')" | tail -1)
[[ $want == 50000,* ]] || fail "DuckDB over the source: $want"
answer() { sql "$Q" -H 'Accept: text/csv'; ROW=$(printf '%s' "${BODY//$'\r'/}" | tail -1); }

wrong=0 errors=0 healed=0 total=0
for engine in cayenne duckdb sqlite; do
  dir=$T/$engine
  rm -rf "$dir"
  mkdir -p "$dir"
  cat > "$dir/tidemark.yaml" <<YAML
datasets:
  - from: file:$T/data
    name: events
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: $engine, mode: file, refresh_mode: append, refresh_check_interval: 1h}
YAML
  tm refresh -c "$dir/tidemark.yaml" > /dev/null 2>&1 || fail "$engine: the first load failed"
  # The acceleration's files, kept good for every trial.
  mapfile -t files < <(cd "$dir/.tidemark/data" && find . -type f | sort)
  ((${#files[@]} > 0)) || fail "$engine: no acceleration files"
  cp -a "$dir/.tidemark/data" "$dir/good"
  for t in $(seq "$trials"); do
    rm -rf "$dir/.tidemark/data"
    cp -a "$dir/good" "$dir/.tidemark/data"
    f=$dir/.tidemark/data/${files[RANDOM % ${#files[@]}]}
    size=$(stat -c %s "$f")
    kind=$((RANDOM % 5))
    case $kind in
      0 | 1 | 2)
        n=$((kind == 0 ? 1 : kind == 1 ? 8 : 64))
        python3 - "$f" "$n" "$RANDOM" <<'PY'
import random, sys
path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(seed)
with open(path, "r+b") as fh:
    data = bytearray(fh.read())
    for _ in range(n):
        i = rnd.randrange(len(data))
        data[i] ^= 1 << rnd.randrange(8)
    fh.seek(0)
    fh.write(data)
PY
        what="$n bytes flipped in $(basename "$f")" ;;
      3) truncate -s $((RANDOM * 32768 % (size + 1))) "$f"; what="$(basename "$f") truncated" ;;
      4) rm -f "$f"; what="$(basename "$f") deleted" ;;
    esac
    total=$((total + 1))
    start_server "$dir/tidemark.yaml"
    wait_until 30 bash -c "curl -s -o /dev/null $BASE/health" || fail "$engine: the server did not start after: $what"
    answer
    if [[ $STATUS == 200 ]]; then
      got=$ROW
      if [[ $got != "$want" ]]; then
        wrong=$((wrong + 1))
        note "$engine trial $t ($what): a WRONG answer $got (want $want)"
      fi
    else
      errors=$((errors + 1))
    fi
    # The refresh after the damage (the failed query already started one): then exact.
    api POST /v1/datasets/events/acceleration/refresh
    ok=
    for _ in $(seq 100); do
      answer
      if [[ $STATUS == 200 && $ROW == "$want" ]]; then
        ok=1
        break
      fi
      sleep 0.2
      [[ $STATUS == 200 ]] || api POST /v1/datasets/events/acceleration/refresh
    done
    [[ -n $ok ]] || { tail -20 "$SERVER_LOG" >&2; fail "$engine trial $t ($what): not healed: $STATUS $BODY"; }
    healed=$((healed + 1))
    stop_server
  done
done
note "$total trials: $errors queries failed on the damage, $wrong wrong answers, $healed healed"
((wrong == 0)) || fail "$wrong wrong answers from a damaged acceleration"
echo ok
