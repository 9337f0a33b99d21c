#!/usr/bin/env bash
# engine: postgres (issue 20) against a real PostgreSQL 15 started here
# (pg_lib.sh: initdb + pg_ctl, 127.0.0.1, scram-sha-256 password):
# refresh by time (A2), every column type read back exactly through DuckDB,
# the A8 conflict cases (drop, upsert; within one load and across loads),
# Iceberg snapshot following (B2), pushed-down predicates, a query through
# `tidemark sql` and the HTTP API, the refresh lock (a process that does not
# get it skips and still serves), two `tidemark run` processes on one
# acceleration (kill -9 the refresher: the other takes over at its next
# interval), and a short kill -9 loop of refreshes (0 rows lost, 0 duplicated;
# tests/stress/engine_postgres_kill.sh runs the long one).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
source "$(dirname "$0")/pg_lib.sh"
pg_start
cd "$T"
mkdir -p data typed keyed_drop keyed_up nested
PARAMS=$(pg_params)

cat > tm.yaml <<YAML
datasets:
  - from: file:data
    name: events
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
$PARAMS
  - from: file:typed
    name: typed
    acceleration:
      engine: postgres
      refresh_mode: full
$PARAMS
  - from: file:typed
    name: typed_src
  - from: file:nested
    name: nested
    acceleration:
      engine: postgres
      refresh_mode: full
      primary_key: id
$PARAMS
  - from: file:nested
    name: nested_src
  - from: file:keyed_drop
    name: kd
    acceleration:
      engine: postgres
      refresh_mode: full
      primary_key: id
      on_conflict: {id: drop}
$PARAMS
  - from: file:keyed_up
    name: ku
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
      primary_key: id
      on_conflict: {id: upsert}
$PARAMS
YAML

note "${SECONDS}s: refresh by time"
# ---- refresh by time----
# The files of the first refresh, written by one DuckDB run: events, the typed
# table, the nested one, kd (one load whose key 1..100 repeats: first arrival wins, v = 'first')
# and ku (key 0..99 loaded, then updated by a later load: last arrival wins).
write_parquets data/a.parquet "SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'row ' || i AS v FROM range(5000) t(i)" \
  typed/t.parquet "SELECT i AS id,
  (i % 100 - 50)::TINYINT AS i8, (i * 7 - 3000)::SMALLINT AS i16, (i * 1000003 - 9)::INTEGER AS i32,
  (i * 1000000007 * 1000 - 5)::BIGINT AS i64, (i % 250)::UTINYINT AS u8, (i * 13)::USMALLINT AS u16,
  (4000000000 - i)::UINTEGER AS u32, (18446744073709551615 - i)::UBIGINT AS u64,
  CASE WHEN i = 3 THEN 'NaN'::FLOAT WHEN i = 4 THEN '-inf'::FLOAT ELSE i / 3.0 END::FLOAT AS f32,
  CASE WHEN i = 5 THEN 'NaN'::DOUBLE ELSE i / 7.0 END AS f64,
  (i * 1234567.891 - 99999.5)::DECIMAL(18,3) AS dec18,
  ('-12345678901234567890123456.' || lpad(i::VARCHAR, 10, '0'))::DECIMAL(38,10) AS dec38,
  CASE WHEN i % 10 = 0 THEN NULL ELSE 'tëxt ' || i || ' ' || repeat('x', i % 17) END AS s,
  ('\\x' || lpad(to_hex(i), 8, '0'))::BLOB AS bin,
  ('00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::UUID AS u,
  DATE '1970-01-01' + (i * 37 - 20000)::INTEGER AS d,
  TIME '00:00:00' + i * INTERVAL 1234567 MICROSECOND AS t,
  TIMESTAMP '1999-12-31 23:59:59' + i * INTERVAL 1 HOUR AS ts_naive,
  TIMESTAMPTZ '2026-03-01 00:00:00+00' + i * INTERVAL 1001 MICROSECOND AS ts_tz,
  (TIMESTAMP '2026-03-01 00:00:00' + i * INTERVAL 1 SECOND)::TIMESTAMP_S AS ts_s,
  (TIMESTAMP '2026-03-01 00:00:00' + i * INTERVAL 1 MILLISECOND)::TIMESTAMP_MS AS ts_ms,
  make_timestamp_ns(1700000000000000000 + i * 123456789) AS ts_ns,
  i % 3 = 0 AS b
  FROM range(300) t(i)" \
  nested/n.parquet "SELECT i AS id,
  CASE WHEN i % 7 = 0 THEN NULL WHEN i % 7 = 1 THEN [] ELSE [i, NULL, i * 2] END AS lst,
  CASE WHEN i % 5 = 0 THEN NULL ELSE {'name': 'n' || i, 'score': i / 3.0, 'tags': ['a', 'b'], 'inner': {'z': i, 'a': NULL}} END AS st,
  CASE WHEN i % 6 = 0 THEN NULL ELSE MAP {'k' || i: [i], 'x': []} END AS m,
  [{'p': i, 'q': 'q' || i}] AS los
  FROM range(40) t(i)" \
  keyed_drop/a.parquet "SELECT i % 100 AS id, CASE WHEN i < 100 THEN 'first' ELSE 'later' END AS v FROM range(300) t(i)" \
  keyed_up/a.parquet "SELECT i % 100 AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'v' || i AS v FROM range(200) t(i)"

out=$(tm_refresh -c tm.yaml)
assert_contains "$out" "events: +5000 rows via time"
assert_eq "$(pg_psql -c 'SELECT count(*), count(DISTINCT id) FROM events')" "5000|5000"
assert_eq "$(pg_psql -c "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'events'::regclass AND attname = 'ts'")" "timestamp with time zone"
# The high-water mark comes from the table: a second refresh with a new file adds only newer rows.
write_parquet data/b.parquet "SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'row ' || i AS v FROM range(4990, 6000) t(i)"
out=$(tm_refresh -c tm.yaml events)
assert_contains "$out" "events: +1000 rows via time"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(DISTINCT id), max(id) FROM events")" "6000,6000,5999"

note "${SECONDS}s: types: the acceleration equals the source read independently (a federated dataset)"
# ---- types: the acceleration equals the source read independently (a federated dataset)----
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM typed")" "300"
assert_eq "$(tm_sql tm.yaml "SELECT (SELECT count(*) FROM (SELECT * FROM typed EXCEPT ALL SELECT * FROM typed_src)) + (SELECT count(*) FROM (SELECT * FROM typed_src EXCEPT ALL SELECT * FROM typed))")" "0" "typed rows differ from the source"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM typed WHERE isnan(f64) OR isnan(f32) OR isinf(f32)")" "3"
assert_eq "$(pg_psql -c "SELECT dec38::text, u64::text, u::text FROM typed WHERE id = 7")" \
  "-12345678901234567890123456.0000000007|18446744073709551608|00000000-0000-4000-8000-000000000007"
# Pushed-down comparisons on several types give the same rows as the source.
q=""
for w in "ts_tz > TIMESTAMPTZ '2026-03-01 00:00:00.1+00'" "d < DATE '1960-01-01'" "s >= 'tëxt 5'" \
         "u64 <= 18446744073709551515" "dec38 > -12345678901234567890123456.0000000100" "id IN (1, 5, 299)" \
         "s IS NULL" "bin = '\\x0000000a'::BLOB" "ts_ns > make_timestamp_ns(1700000010000000000)"; do
  q+="${q:+ UNION ALL }SELECT (SELECT count(*) || '/' || coalesce(sum(id), 0) FROM typed WHERE $w) IS NOT DISTINCT FROM (SELECT count(*) || '/' || coalesce(sum(id), 0) FROM typed_src WHERE $w) AS same"
done
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FILTER (WHERE same) FROM ($q)")" "9" "pushed-down comparisons differ from the source"
TIDEMARK_LOG=debug tm sql -c tm.yaml --format csv "SELECT count(*) FROM typed WHERE id > 250" >/dev/null 2>pushed.log
grep -q 'postgres scan: DECLARE .* FROM "typed" WHERE "id" > \$1' pushed.log || { cat pushed.log >&2; fail "the predicate was not pushed to PostgreSQL"; }

note "${SECONDS}s: nested columns as jsonb"
# ---- nested columns: jsonb in PostgreSQL, the same JSON as the source's values ----
assert_eq "$(pg_psql -c "SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'nested'::regclass AND attnum > 0 AND NOT attisdropped")" \
  "id:bigint,lst:jsonb,st:jsonb,m:jsonb,los:jsonb"
# PostgreSQL reads them as JSON: its operators work on the stored values.
assert_eq "$(pg_psql -c "SELECT jsonb_typeof(lst), st->>'name', st->'inner'->>'z', m->'k3'->>0, los->0->>'q' FROM nested WHERE id = 3")" "array|n3|3|3|q3"
assert_eq "$(pg_psql -c "SELECT count(*) FILTER (WHERE lst IS NULL), count(*) FILTER (WHERE lst = '[]'), count(*) FILTER (WHERE st IS NULL) FROM nested")" "6|6|8"
# Every value equals the source's (read by DuckDB from the file) as JSON; jsonb orders object keys.
tm sql -c tm.yaml --format jsonl "SELECT id, lst, st, m, los FROM nested ORDER BY id" >nested_pg.jsonl
tm sql -c tm.yaml --format jsonl "SELECT id, to_json(lst)::VARCHAR AS lst, to_json(st)::VARCHAR AS st, to_json(m)::VARCHAR AS m, to_json(los)::VARCHAR AS los FROM nested_src ORDER BY id" >nested_src.jsonl
python3 - nested_pg.jsonl nested_src.jsonl <<'PY' || fail "nested values read back from PostgreSQL differ from the source"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 40, (len(a), len(b))
def val(x):
    return None if x is None else json.loads(x)
bad = [(r, s) for r, s in zip(a, b) if any(val(r[k]) != val(s[k]) for k in ("lst", "st", "m", "los")) or r["id"] != s["id"]]
assert not bad, bad[:2]
assert sum(1 for r in a if r["st"] is not None) == 32
PY
# A filter on a jsonb column is evaluated by tidemark (not pushed), on the JSON text.
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM nested WHERE st IS NOT NULL AND json_extract_string(st, '$.name') = 'n12'")" "1"
# The same source read as JSON text (unsupported_type_action: string) has the same columns for
# tidemark but not for PostgreSQL: the table is replaced by one with text columns.
cat > tm_text.yaml <<YAML
datasets:
  - from: file:nested
    name: nested
    unsupported_type_action: string
    acceleration:
      engine: postgres
      refresh_mode: full
      primary_key: id
$PARAMS
YAML
tm_refresh -c tm_text.yaml nested >/dev/null
assert_eq "$(pg_psql -c "SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'nested'::regclass AND attnum > 0 AND NOT attisdropped")" \
  "bigint,text,text,text,text"
assert_eq "$(tm_sql tm_text.yaml "SELECT count(*), count(*) FILTER (WHERE json_extract_string(st, '$.name') = 'n12') FROM nested")" "40,1"
TIDEMARK_LOG=info tm_refresh -c tm.yaml nested >/dev/null
grep -q "the source's schema changed" "$T/refresh.err" || fail "back to jsonb: no rebuild was logged"
assert_eq "$(pg_psql -c "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'nested'::regclass AND attname = 'st'")" "jsonb"
# Reopened, the stored jsonb columns match the nested source: no rebuild.
TIDEMARK_LOG=info tm_refresh -c tm.yaml nested >/dev/null
if grep -q "the source's schema changed" "$T/refresh.err"; then fail "a nested source on jsonb columns was rebuilt"; fi

note "${SECONDS}s: A8"
# ---- A8----
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(*) FILTER (WHERE v = 'first') FROM kd")" "100,100" "drop keeps the first arrival"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), min(v), max(v) FROM ku WHERE id = 42")" "1,v142,v142" "upsert keeps the last arrival"
# The next loads of ku and kd (one DuckDB run; each refresh below names its dataset).
write_parquets keyed_up/b.parquet "SELECT i AS id, TIMESTAMPTZ '2026-02-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'new' || i AS v FROM range(50, 150) t(i)" \
  keyed_drop/b.parquet "SELECT i AS id, 'b' AS v FROM range(90, 120) t(i)"
out=$(tm_refresh -c tm.yaml ku)
assert_contains "$out" "ku: +100 rows via time"
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(*) FILTER (WHERE v LIKE 'new%') FROM ku")" "150,100" "upsert across loads"
tm_refresh -c tm.yaml kd >/dev/null
assert_eq "$(tm_sql tm.yaml "SELECT count(*), count(*) FILTER (WHERE v = 'b') FROM kd")" "120,20" "a full refresh keeps the first arrival of each key"

note "${SECONDS}s: Iceberg snapshot following"
# ---- Iceberg snapshot following----
cat > ice.yaml <<YAML
datasets:
  - from: iceberg:file://wh/ev
    name: ice
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
$PARAMS
YAML
ice_create wh/ev
ice_append wh/ev "1,2026-11-30T10:00:00Z,a" "2,2026-11-30T10:00:01Z,b"
tm_refresh -c ice.yaml >/dev/null
ice_append wh/ev "3,2026-11-30T09:00:00Z,c"
out=$(tm_refresh -c ice.yaml)
assert_contains "$out" "ice: +1 rows via snapshots (1: append 1)"
assert_eq "$(tm_sql ice.yaml "SELECT string_agg(v, '' ORDER BY id) FROM ice")" "abc" "a row older than the mark is read by snapshot"
[[ -n $(pg_psql -c "SELECT value FROM tidemark_state WHERE dataset = 'ice' AND key LIKE '%snapshot%'") ]] || fail "no saved snapshot in tidemark_state"

note "${SECONDS}s: config: every Spice param is honoured or refused"
# ---- config: every Spice param is honoured or refused----
sed 's/pg_sslmode: disable/pg_sslmode: sometimes/' ice.yaml > bad.yaml
tm config check -c bad.yaml >bad.out 2>&1 && fail "a bad pg_sslmode was accepted"
assert_contains "$(cat bad.out)" "pg_sslmode 'sometimes'"
sed 's/pg_pass: .*/pg_pass: wrong/' ice.yaml > wrong.yaml
tm refresh -c wrong.yaml >/dev/null 2>wrong.err && fail "a wrong password connected"
assert_contains "$(cat wrong.err)" "password authentication failed"
sed 's/pg_sslmode: disable/pg_sslmode: require/' ice.yaml > ssl.yaml
tm refresh -c ssl.yaml >/dev/null 2>ssl.err && fail "pg_sslmode: require connected to a server without TLS"
assert_contains "$(cat ssl.err)" "SSL"

note "${SECONDS}s: the refresh lock: a process that does not get it skips, and still serves"
# ---- the refresh lock: a process that does not get it skips, and still serves----
KEY=$(python3 -c "
h=1469598103934665603
for ch in b'tidemark refresh events': h=((h^ch)*1099511628211)&((1<<64)-1)
print(h-(1<<64) if h>=1<<63 else h)")
write_parquet data/c.parquet "SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'row ' || i AS v FROM range(6000, 6100) t(i)"
# Another session holds the lock (as a refreshing process would) until it is terminated.
PGPASSWORD=$PG_PASS psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres \
  -c "SELECT pg_advisory_lock($KEY)" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
holder=$!
wait_until 20 bash -c "[[ \$(PGPASSWORD=$PG_PASS psql -X -A -t -h 127.0.0.1 -p $PG_PORT -U $PG_USER -d postgres -c \"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted\") == 1 ]]" || fail "the lock holder did not start"
out=$(tm_refresh -c tm.yaml events)
assert_contains "$out" "events: refresh skipped: another tidemark process is refreshing"
assert_eq "$(tm_sql tm.yaml "SELECT count(*) FROM events")" "6000"
pg_psql -c "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'" >/dev/null
wait $holder || true
assert_contains "$(tm_refresh -c tm.yaml events)" "events: +100 rows via time"

note "${SECONDS}s: two processes on one acceleration, HTTP"
# ---- two processes on one acceleration, HTTP----
mkdir -p procA procB
cat > procA/run.yaml <<YAML
datasets:
  - from: file:$T/data
    name: events
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
      refresh_check_interval: 1s
$PARAMS
YAML
cp procA/run.yaml procB/run.yaml
start_server procA/run.yaml
PID_A=$SERVER_PID BASE_A=$BASE
wait_until 20 is_ready || fail "process A not ready"
start_server procB/run.yaml
PID_B=$SERVER_PID BASE_B=$BASE
wait_until 20 is_ready || fail "process B not ready"
BASE=$BASE_A; assert_eq "$(sql_value "SELECT count(*) AS n FROM events")" "6100"
BASE=$BASE_B; assert_eq "$(sql_value "SELECT count(*) AS n FROM events")" "6100"
# New rows: whichever process refreshes next, both serve them.
write_parquet data/d.parquet "SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'row ' || i AS v FROM range(6100, 6200) t(i)"
BASE=$BASE_A; wait_until 20 count_is events 6200 || fail "A does not serve the new rows"
BASE=$BASE_B; wait_until 20 count_is events 6200 || fail "B does not serve the new rows"
# kill -9 one; the other refreshes at its next interval.
kill -9 "$PID_A"; wait "$PID_A" 2>/dev/null || true
write_parquet data/e.parquet "SELECT i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + i * INTERVAL 1 SECOND AS ts, 'row ' || i AS v FROM range(6200, 6300) t(i)"
BASE=$BASE_B; wait_until 20 count_is events 6300 || fail "B did not take over the refreshes"
SERVER_PID=$PID_B
stop_server
assert_eq "$(pg_psql -c 'SELECT count(*), count(DISTINCT id) FROM events')" "6300|6300"

note "${SECONDS}s: retention_sql: one DELETE run by PostgreSQL"
# ---- retention_sql: one DELETE, its condition in PostgreSQL's dialect (C3) ----
mkdir -p procC
cat > procC/run.yaml <<YAML
datasets:
  - from: file:$T/keyed_drop
    name: ret
    acceleration:
      engine: postgres
      refresh_mode: full
      refresh_check_interval: 1h
      retention_check_enabled: true
      retention_check_interval: 500ms
      retention_sql: DELETE FROM ret WHERE ret.id % 3 = 0 AND v ~ '^fir'
$PARAMS
YAML
start_server procC/run.yaml
wait_until 20 is_ready || fail "the retention server is not ready"
# keyed_drop (no key here): ids 0-99 'first', 200 'later', 30 'b' (330 rows); 34 'first' ones have id % 3 = 0.
wait_until 20 count_is ret 296 || fail "ret: retention_sql did not delete its rows"
assert_eq "$(sql_value "SELECT count(*) AS n FROM ret WHERE id % 3 = 0 AND v = 'first'")" "0"
assert_eq "$(sql_value "SELECT count(*) FILTER (WHERE v = 'b') || '/' || count(*) FILTER (WHERE v = 'later') || '/' || count(*) FILTER (WHERE v = 'first') AS n FROM ret")" "30/200/66" "rows the condition does not name were deleted"
grep -q '\[ret\] retention deleted 34 rows (0 by retention_period, 34 by retention_sql)' "$SERVER_LOG" ||
  fail "ret: retention not logged"
stop_server
assert_eq "$(pg_psql -c 'SELECT count(*) FROM ret')" "296"

# ---- kill -9 during refreshes: the last committed state, never part of one ----------------
seed_random "kill loop"
mkdir -p kdata
cat > kill.yaml <<YAML
datasets:
  - from: file:kdata
    name: kev
    time_column: ts
    acceleration:
      engine: postgres
      refresh_mode: append
$PARAMS
YAML
total=0
for trial in 1 2 3; do
  write_parquet "kdata/$trial.parquet" "SELECT $total + i AS id, TIMESTAMPTZ '2026-01-01 00:00:00+00' + ($total + i) * INTERVAL 1 SECOND AS ts FROM range(100000) t(i)"
  total=$((total + 100000))
  tm refresh -c kill.yaml >/dev/null 2>&1 &
  pid=$!
  sleep "0.$((RANDOM % 8 + 2))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  got=$(pg_psql -c "SELECT count(*) - count(DISTINCT id), count(*) % 100000, (SELECT row_count FROM tidemark_meta WHERE dataset = 'kev') - count(*) FROM kev" 2>/dev/null || echo "0|0|0")
  assert_eq "$got" "0|0|0" "trial $trial: duplicates, a partial load, or a row count out of step"
done
tm_refresh -c kill.yaml >/dev/null
assert_eq "$(pg_psql -c 'SELECT count(*), count(DISTINCT id) FROM kev')" "$total|$total" "rows lost or duplicated after the kills"
echo ok
