#!/usr/bin/env bash
# Issue 15 differential queries (SPEC §3, A1, C6): a suite of analytical
# queries — aggregates, group-bys of low and high cardinality, count
# distinct, top-N by time, time ranges with TIMESTAMP literals, INTERVAL and
# date_trunc, a point lookup, a join of two datasets, window functions,
# nested results — answered by a running tidemark over HTTP equal DuckDB's
# own answers over the source Parquet files. Once per engine (cayenne,
# duckdb in file and memory mode, arrow, sqlite) and for the federated
# dataset, after an initial load and an append refresh.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
export TZ=UTC
mkdir -p "$T/ev" "$T/users"
per_file=${TM_DIFF_ROWS:-25000}
ev_sql() { # K: the rows of file K, ids K*per_file.., one row every 30 s from 2024-01-01
  local k=$1
  echo "
    SELECT id,
           TIMESTAMP '2024-01-01 00:00:00' + to_seconds(id * 30) AS ts,
           (TIMESTAMP '2024-01-01 00:00:00' + to_seconds(id * 30))::TIMESTAMPTZ AS tstz,
           (hash(id) % 1000)::INTEGER AS user_id,
           ['click', 'view', 'buy', 'cart', 'close'][((hash(id * 7) % 5) + 1)::BIGINT] AS kind,
           ((hash(id * 13) % 100000)::DECIMAL(12, 2) / 100)::DECIMAL(12, 2) AS amount,
           CASE WHEN id % 11 = 0 THEN NULL ELSE (hash(id * 17) % 10000) / 100.0 END AS score,
           (TIMESTAMP '2024-01-01 00:00:00' + to_seconds(id * 30))::DATE AS day
    FROM range($k * $per_file, ($k + 1) * $per_file) t(id)"
}
ev_file() { write_parquet "$T/ev/part-$1.parquet" "$(ev_sql "$1")"; }
# The first three files and the users, in one DuckDB run.
write_parquets "$T/ev/part-0.parquet" "$(ev_sql 0)" "$T/ev/part-1.parquet" "$(ev_sql 1)" \
  "$T/ev/part-2.parquet" "$(ev_sql 2)" "$T/users/users.parquet" "
  SELECT user_id::INTEGER AS user_id, ['de', 'fr', 'us', 'jp'][(user_id % 4 + 1)::BIGINT] AS country,
         DATE '2023-01-01' + (user_id % 365)::INTEGER AS signup
  FROM range(1000) t(user_id)"

engines="cay:cayenne:file duck:duckdb:file duckmem:duckdb:memory arrow:arrow:memory lite:sqlite:file"
{
  echo "version: v1"
  echo "datasets:"
  for e in $engines; do
    IFS=: read -r name engine mode <<<"$e"
    cat <<YAML
  - from: file:ev
    name: ev_$name
    time_column: ts
    acceleration: {engine: $engine, mode: $mode, refresh_mode: append, refresh_check_interval: 1h}
YAML
  done
  cat <<YAML
  - from: file:ev
    name: ev_fed
  - from: file:users
    name: users
    acceleration: {refresh_mode: full, refresh_check_interval: 1h}
YAML
} > "$T/tidemark.yaml"

targets=$(for e in $engines fed; do echo "{\"ev\": \"ev_${e%%:*}\", \"users\": \"users\"}"; done | paste -sd, -)
cat > "$T/suite.json" <<JSON
{
  "views": {"ev": "read_parquet('$T/ev/*.parquet')", "users": "read_parquet('$T/users/*.parquet')"},
  "targets": [$targets],
  "queries": [
    "SELECT count(*) AS n, sum(amount) AS s, min(ts) AS lo, max(ts) AS hi, count(score) AS scored FROM {ev}",
    "SELECT kind, count(*) AS n, sum(amount) AS s, round(avg(score), 6) AS a, min(tstz) AS first FROM {ev} GROUP BY kind ORDER BY kind",
    "SELECT user_id, count(*) AS n, sum(amount) AS s FROM {ev} GROUP BY user_id ORDER BY n DESC, s DESC, user_id LIMIT 25",
    "SELECT count(DISTINCT user_id) AS users, count(DISTINCT day) AS days, approx_count_distinct(kind) AS kinds FROM {ev}",
    "SELECT id, ts, tstz, kind, amount FROM {ev} ORDER BY ts DESC, id DESC LIMIT 10",
    "SELECT count(*) AS n, sum(amount) AS s FROM {ev} WHERE ts >= TIMESTAMP '2024-01-05 00:00:00' AND ts < TIMESTAMP '2024-01-05 06:00:00'",
    "SELECT count(*) AS n FROM {ev} WHERE ts > TIMESTAMP '2024-01-20 00:00:00' - INTERVAL 36 HOUR",
    "SELECT count(*) AS n FROM {ev} WHERE tstz >= TIMESTAMPTZ '2024-01-10 12:00:00+02' AND tstz < '2024-01-11'::TIMESTAMPTZ",
    "SELECT date_trunc('day', ts) AS d, count(*) AS n, sum(amount) AS s FROM {ev} GROUP BY d ORDER BY d",
    "SELECT date_trunc('hour', tstz) AS h, count(*) AS n FROM {ev} WHERE day = DATE '2024-01-03' GROUP BY h ORDER BY h",
    "SELECT * FROM {ev} WHERE id = 51234",
    "SELECT * FROM {ev} WHERE id IN (0, 11, 74999) ORDER BY id",
    "SELECT kind, count(*) AS n FROM {ev} WHERE amount > 500 AND ts > TIMESTAMP '2024-01-03' GROUP BY kind ORDER BY kind",
    "SELECT kind, count(*) AS n FROM {ev} WHERE kind ILIKE 'C%' AND ts::DATE = DATE '2024-01-02' GROUP BY ALL ORDER BY kind",
    "SELECT u.country, count(*) AS n, sum(e.amount) AS s, count(DISTINCT e.user_id) AS users FROM {ev} e JOIN {users} u USING (user_id) GROUP BY u.country ORDER BY u.country",
    "SELECT e.id, u.signup FROM {ev} e JOIN {users} u ON e.user_id = u.user_id WHERE e.ts >= u.signup + INTERVAL 360 DAY ORDER BY e.id LIMIT 20",
    "SELECT id, user_id, ts, row_number() OVER w AS rn, sum(amount) OVER w AS running, lag(kind) OVER w AS prev FROM {ev} WHERE user_id < 4 WINDOW w AS (PARTITION BY user_id ORDER BY ts, id) ORDER BY user_id, ts, id",
    "SELECT kind, id, rank() OVER (PARTITION BY kind ORDER BY amount DESC, id) AS r FROM {ev} QUALIFY r <= 3 ORDER BY kind, r",
    "SELECT kind, list(id ORDER BY id)[1:3] AS first_ids, {'n': count(*), 'max': max(amount)} AS stats FROM {ev} GROUP BY kind ORDER BY kind",
    "SELECT epoch(max(ts)) AS e, strftime(min(ts), '%Y/%m/%d %H:%M') AS f, max(ts) - min(ts) AS span, median(amount) AS med FROM {ev}",
    "SELECT score IS NULL AS missing, count(*) AS n FROM {ev} GROUP BY missing ORDER BY missing",
    "SELECT count(*) AS n FROM {ev} a JOIN {ev} b ON a.id = b.id + 1 WHERE a.kind = b.kind"
  ]
}
JSON

start_server "$T/tidemark.yaml"
wait_until 120 is_ready || { cat "$SERVER_LOG" >&2; fail "not ready"; }
for e in $engines; do count_is "ev_${e%%:*}" $((3 * per_file)) || fail "ev_${e%%:*}: initial load"; done
node "$TM_SOURCE_DIR/tests/node/query-differential.mjs" "$T/suite.json" "$BASE" || fail "after the initial load"

# An append refresh of one new file.
ev_file 3
for e in $engines; do
  api POST "/v1/datasets/ev_${e%%:*}/acceleration/refresh"
  assert_eq "$STATUS" 201 "refresh ev_${e%%:*}"
done
for e in $engines; do
  wait_until 60 count_is "ev_${e%%:*}" $((4 * per_file)) || fail "ev_${e%%:*}: append refresh"
done
out=$(node "$TM_SOURCE_DIR/tests/node/query-differential.mjs" "$T/suite.json" "$BASE") || fail "after the append refresh"
note "$out"
assert_contains "$out" "22 queries x 6 targets: 132 of 132 equal"
stop_server
echo ok
