#!/usr/bin/env bash
# Issue 20, SPEC 1.3, D4: the PostgreSQL wire protocol (`tidemark run --pg`)
# with real clients. psql: -c with several statements, types in PostgreSQL's
# text output, errors with their SQLSTATE (the server goes on), \copy ... TO
# STDOUT (text and CSV), SET/SHOW, BEGIN/COMMIT. libpq's extended protocol
# (tests/tools/pgwire_client.c): typed and untyped parameters bound by the
# server, binary parameters and results, describe, cancel. psycopg2. Password
# authentication against the API key with SCRAM-SHA-256, MD5 and cleartext, a
# wrong password (28P01). The rows are compared with DuckDB reading the same
# file.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runtime_lib.sh"
command -v psql >/dev/null || fail "psql is missing (scripts/install-deps: postgresql-client)"
CLIENT=${TM_BUILD_DIR:-$TM_SOURCE_DIR/build/dev}/pgwire_client
[[ -x $CLIENT ]] || fail "the test tool $CLIENT is missing (built with the tests)"
PY=/usr/bin/python3 # Debian's python3-psycopg2 is for Debian's python
JDBC_JAR=/usr/share/java/postgresql.jar
[[ -f $JDBC_JAR ]] && command -v javac >/dev/null ||
  fail "the JDBC driver or javac is missing (scripts/install-deps: libpostgresql-jdbc-java, default-jdk-headless)"
mkdir -p "$T/data"
python3 - "$T/data/a.jsonl" <<'PY'
import sys, json, datetime
base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
with open(sys.argv[1], "w") as f:
    for i in range(1, 51):
        ts = (base + datetime.timedelta(days=i, seconds=i, microseconds=i * 1000)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        f.write(json.dumps({"id": i, "v": "v%d" % i, "x": i * 1.5, "ok": i % 2 == 0, "ts": ts}) + "\n")
PY
cat > "$T/tidemark.yaml" <<YAML
version: v1
kind: Spicepod
name: pgwire
datasets:
  - from: file:data
    name: events
    description: the test's events
    columns:
      - name: id
        description: the key
    params: {file_format: jsonl}
    time_column: ts
    acceleration: {engine: cayenne, refresh_mode: full, refresh_check_interval: 1h}
views:
  - name: evens
    sql: SELECT id, v FROM events WHERE ok
YAML

# start_pg [run args...]: a server with --pg on a free loopback port; sets PG_PORT.
start_pg() {
  start_server "$T/tidemark.yaml" --pg 127.0.0.1:0 "$@"
  local i
  for i in $(seq 100); do
    PG_PORT=$(sed -n 's/.*PostgreSQL wire protocol on .*(port \([0-9]*\)).*/\1/p' "$SERVER_LOG" | head -1)
    [[ -n $PG_PORT ]] && break
    sleep 0.05
  done
  [[ -n $PG_PORT ]] || { cat "$SERVER_LOG" >&2; fail "no PostgreSQL port in the log"; }
  wait_until 30 is_ready ${KEY:+-H "X-API-Key: $KEY"} || fail "not ready"
}
pg() { PGCONNECT_TIMEOUT=5 psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U tester -d tidemark -v ON_ERROR_STOP=1 "$@"; }

KEY=
start_pg --pg-max-connections 3
# Rows and types in PostgreSQL's text output, compared with DuckDB over the same file.
got=$(pg -A -t -F'|' -c "SELECT id, v, x, ok, ts, ts::date AS d, id::smallint AS s, id::int AS i,
  (x * 2)::decimal(10,2) AS m, ('\\x' || lpad(id::varchar, 2, '0'))::blob AS b, NULL::int AS n
  FROM events WHERE id IN (1, 2, 50) ORDER BY id")
want=$(duckdb_query "SELECT id, v, x, CASE WHEN ok THEN 't' ELSE 'f' END AS ok,
  strftime(ts::timestamptz AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%f') || '+00' AS ts,
  ts::timestamptz::date AS d, id AS s, id AS i, (x * 2)::decimal(10,2) AS m,
  '\\x' || lpad(id::varchar, 2, '0') AS b, '' AS n
  FROM read_json('$T/data/a.jsonl', columns = {id: 'BIGINT', v: 'VARCHAR', x: 'DOUBLE', ok: 'BOOLEAN', ts: 'VARCHAR'})
  WHERE id IN (1, 2, 50) ORDER BY id" | tail -n +2 | tr ',' '|' | sed -E 's/(\.[0-9]*[1-9])0+\+00\|/\1+00|/; s/\.0+\+00\|/+00|/')
assert_eq "$got" "$want" "psql rows against DuckDB"
note "psql: typed rows match DuckDB"
# psql's describe commands: \dt, \dv, \d, \d NAME, \l, \gdesc.
got=$(pg -A -t -c '\dt')
assert_eq "$got" "public|events|table|tidemark" "\\dt"
got=$(pg -A -t -c '\dv')
assert_eq "$got" "public|evens|view|tidemark" "\\dv"
got=$(pg -A -t -c '\d' | tr '\n' ' ')
assert_eq "$got" "public|evens|view|tidemark public|events|table|tidemark " "\\d"
got=$(pg -A -c '\d events' | tr '\n' ' ')
assert_eq "$got" 'Table "public.events" Column|Type|Collation|Nullable|Default id|bigint||| v|text||| x|double precision||| ok|boolean||| ts|timestamp with time zone||| ' "\\d events"
got=$(pg -A -c '\d evens' | tr '\n' ' ')
assert_eq "$got" 'View "public.evens" Column|Type|Collation|Nullable|Default id|bigint||| v|text||| ' "\\d evens"
got=$(pg -A -t -c '\dt nothing*' 2>&1)
assert_eq "$got" "" "\\dt without a match"
got=$(pg -A -t -c '\dt ev*' 2>&1)
assert_eq "$got" "public|events|table|tidemark" "\\dt with a pattern"
got=$(pg -A -t -c '\l' | cut -d'|' -f1-3)
assert_eq "$got" "tidemark|tidemark|UTF8" "\\l"
got=$(pg -A -t <<'SQL' | tr '\n' ' '
SELECT 1::bigint a, 1::int b, 1::smallint c, 1.5::double d, 1.5::float e, true f,
  'x' g, 1.5::decimal(5,1) h, date '2024-01-02' i, timestamp '2024-01-02 03:04:05' j,
  timestamptz '2024-01-02 03:04:05+00' k, time '01:02:03' l, uuid '12345678-1234-1234-1234-123456789abc' m,
  [1, 2] n, {'a': 1} o, '\x01'::blob p \gdesc
SQL
)
assert_eq "$got" "a|bigint b|integer c|smallint d|double precision e|real f|boolean g|text h|numeric i|date j|timestamp without time zone k|timestamp with time zone l|time without time zone m|uuid n|json o|json p|bytea " "\\gdesc types"
# \d+ NAME (storage, descriptions; a view's definition), \dt+, \dn, \df, \di.
got=$(pg -A -c '\d+ events' | tr '\n' ' ')
assert_eq "$got" 'Table "public.events" Column|Type|Collation|Nullable|Default|Storage|Compression|Stats target|Description id|bigint||||plain|||the key v|text||||extended||| x|double precision||||plain||| ok|boolean||||plain||| ts|timestamp with time zone||||plain||| ' "\\d+ events"
got=$(pg -A -c '\d+ evens' | tr '\n' ' ')
assert_eq "$got" 'View "public.evens" Column|Type|Collation|Nullable|Default|Storage|Description id|bigint||||plain| v|text||||extended| View definition: SELECT id, v FROM events WHERE ok ' "\\d+ evens"
got=$(pg -A -t -c '\dt+')
assert_eq "$got" "public|events|table|tidemark|permanent|||the test's events" "\\dt+"
got=$(pg -A -t -c '\dn' -c '\dn pub*' -c '\dn nothing')
assert_eq "$got" $'public|tidemark\npublic|tidemark' "\\dn"
got=$(pg -A -c '\df' -c '\df+' | tr '\n' ' ')
assert_eq "$got" 'List of functions Schema|Name|Result data type|Argument data types|Type (0 rows) List of functions Schema|Name|Result data type|Argument data types|Type|Volatility|Parallel|Owner|Language|Source code|Description (0 rows) ' "\\df: no functions"
got=$(pg -A -c '\di' 2>&1 | tr '\n' ' ')
assert_eq "$got" "List of relations Schema|Name|Type|Owner|Table (0 rows) " "\\di: no indexes"
note "psql: \\dt, \\dv, \\d, \\d NAME, \\l, \\gdesc"
got=$(pg -A -t -c "SELECT [1, 2] AS l, {'a': 'x'} AS s, 'NaN'::double AS nan, 'inf'::double AS inf, interval '1 day 2 hours' AS iv")
assert_eq "$got" '[1,2]|{"a":"x"}|NaN|Infinity|P1DT2H' "nested as JSON, floats, interval"

# Several statements in one Query; empty statements; SET/SHOW; BEGIN/COMMIT.
got=$(pg -A -t -c "SELECT count(*) FROM events; ; SELECT max(id) FROM events")
assert_eq "$got" $'50\n50' "two statements in one query"
got=$(pg -A -t -c "SET application_name = 'it'" -c "SHOW application_name" -c "SET extra_float_digits = 3" \
  -c "SET DateStyle = 'ISO, MDY'" -c "SHOW server_version" -c "SHOW TimeZone" -c "BEGIN" -c "SELECT 7" -c "COMMIT")
assert_eq "$got" $'it\n15.0\nUTC\n7' "SET, SHOW, BEGIN, COMMIT"

# Errors: SQLSTATE and message; the connection goes on after each.
err_state() { # SQL -> the SQLSTATE psql reports (VERBOSITY verbose)
  pg -v VERBOSITY=verbose -c "$1" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -1
}
assert_eq "$(err_state 'SELEC 1')" 42601 "syntax error"
assert_eq "$(err_state 'SELECT * FROM nope')" 42P01 "undefined table"
assert_eq "$(err_state 'SELECT nope FROM events')" 42703 "undefined column"
assert_eq "$(err_state 'DELETE FROM events')" 25006 "a write"
assert_eq "$(err_state 'INSERT INTO events (id) VALUES (1)')" 25006 "an insert"
assert_eq "$(err_state "COPY events TO '$T/out.csv'")" 25006 "COPY to a file"
assert_eq "$(err_state "SELECT * FROM read_csv('$T/tidemark.yaml')")" 42501 "a file read"
assert_eq "$(err_state 'SET statement_timeout = 5')" 42704 "SET of an unknown parameter"
assert_eq "$(err_state "SET TimeZone = 'Europe/Paris'")" 22023 "SET of a fixed parameter"
[[ ! -e $T/out.csv ]] || fail "COPY wrote a file"
got=$(pg -A -t -v ON_ERROR_STOP=0 -c "SELECT 1; SELECT * FROM nope; SELECT 2" -c "SELECT 3" 2>&1)
[[ $got == $'1\nERROR:  Catalog Error: Table with name nope does not exist!'*$'\n3' ]] ||
  fail "an error ends its Query (SELECT 2 does not run), the next Query runs: got [$got]"

# \copy (a query) TO STDOUT: text and CSV, compared with DuckDB.
got=$(pg -c "\\copy (SELECT id, v, x, NULL AS n, 'a' || chr(9) || 'b' AS t FROM events WHERE id <= 3 ORDER BY id) TO STDOUT")
assert_eq "$got" $'1\tv1\t1.5\t\\N\ta\\tb\n2\tv2\t3\t\\N\ta\\tb\n3\tv3\t4.5\t\\N\ta\\tb' "\\copy text"
got=$(pg -c "\\copy (SELECT id, v, x, 'p,q' AS c FROM events ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)")
want=$(duckdb_query "SELECT id, v, x, 'p,q' AS c FROM read_json('$T/data/a.jsonl') ORDER BY id")
assert_eq "$got" "$want" "\\copy csv against DuckDB"
got=$(pg -c "\\copy events (id, v) TO STDOUT" | wc -l)
assert_eq "$got" 50 "\\copy table (columns)"
note "psql: statements, errors, SET/SHOW, \\copy"

# libpq's extended protocol: parameters bound by the server, binary formats, cancel.
out=$(timeout 60 "$CLIENT" "host=127.0.0.1 port=$PG_PORT user=tester dbname=tidemark") ||
  fail "pgwire_client failed: $out"
ts10=$(( ($(date -d '2024-01-11T00:00:10.010Z' +%s) - 946684800) * 1000000 + 10000 ))
ts12=$(( ($(date -d '2024-01-13T00:00:12.012Z' +%s) - 946684800) * 1000000 + 12000 ))
ts13=$(( ($(date -d '2024-01-14T00:00:13.013Z' +%s) - 946684800) * 1000000 + 13000 ))
want="prepare nparams=2 p1=23 p2=25 nfields=5 id:20 v:25 x:701 ok:16 ts:1184
binary 10|v10|15|t|ts:$ts10
binary 12|v12|18|t|ts:$ts12
binary 13|v13|19.5|f|ts:$ts13
again 10|v10|15|t|2024-01-11 00:00:10.01+00
again 12|v12|18|t|2024-01-13 00:00:12.012+00
again 13|v13|19.5|f|2024-01-14 00:00:13.013+00
text 49|v49|t
text 50|v50|t
untyped 23 25 114 42|x|[1,2]
bparams 2000-01-03|2000-01-01 00:00:01|5|f|\\x0041ff
bresults date:2|ts:1000000|bytea:0041ff|2.5|t
error PGRES_FATAL_ERROR 42P01
error PGRES_FATAL_ERROR 25006
error PGRES_FATAL_ERROR 42601
after 50
cancel PGRES_FATAL_ERROR 57014
after 1"
assert_eq "$out" "$want" "libpq extended protocol"
note "libpq: prepared statements, binary parameters and results, errors, cancel"

# psycopg2 (its parameters are pasted in by the client; BEGIN/ROLLBACK around statements),
# and PREPARE/EXECUTE/DEALLOCATE, whose statement's parameters the server binds.
got=$("$PY" - "$PG_PORT" <<'PY'
import sys, psycopg2
c = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[1]), user="tester", dbname="tidemark")
cur = c.cursor()
cur.execute("SELECT id, v, x, ok, ts FROM events WHERE id = %s AND v = %s", (7, "v7"))
r = cur.fetchone()
print(r[0], r[1], r[2], r[3], r[4].isoformat(), [d.type_code for d in cur.description])
try:
    cur.execute("DELETE FROM events")
except psycopg2.Error as e:
    print("refused", e.pgcode)
c.rollback()
cur.execute("SELECT count(*) FROM events")
print(cur.fetchone()[0])
# Server-side parameters: a prepared statement whose $1, $2 the server binds.
cur.execute("PREPARE q AS SELECT id, v, ts FROM events WHERE id > $1 AND v <> $2 ORDER BY id")
cur.execute("EXECUTE q (%s, %s)", (47, "v49"))
print([(r[0], r[1], r[2].day) for r in cur.fetchall()])
cur.execute("EXECUTE q (%s, %s)", (49, None))
print(cur.fetchall())
cur.execute("DEALLOCATE q")
try:
    cur.execute("EXECUTE q (1, 'x')")
except psycopg2.Error as e:
    print("gone", e.pgcode)
c.rollback()
PY
)
assert_eq "$got" $'7 v7 10.5 False 2024-01-08T00:00:07.007000+00:00 [20, 25, 701, 16, 1184]\nrefused 25006\n50\n[(48, \'v48\', 18), (50, \'v50\', 20)]\n[]\ngone 26000' "psycopg2"
note "psycopg2: rows, types, a refused write, PREPARE/EXECUTE/DEALLOCATE"

# What libpq does not send: row limits, skipping to Sync, hostile bytes, the connection cap.
RAW="python3 $TM_SOURCE_DIR/tests/tools/pgwire_raw.py"
for check in suspend skip pipeline hostile "cap 3"; do
  # shellcheck disable=SC2086
  out=$($RAW "$PG_PORT" $check) || fail "pgwire_raw $check: $out"
  note "$out"
done
grep -q 'refused: 3 connections open (the cap)' "$SERVER_LOG" || fail "the refused connection is not logged"
# The statements count in /v1/sql's query families, with protocol="postgres".
scrape=$(metrics)
grep -q '^query_executions{tags="",datasets="events",protocol="postgres"} [1-9]' <<<"$scrape" ||
  fail "no postgres query_executions for events: $(grep '^query_' <<<"$scrape")"
grep -q '^query_failures{tags="error",datasets="",err_code="SyntaxError",protocol="postgres"} [1-9]' <<<"$scrape" ||
  fail "no postgres SyntaxError in query_failures: $(grep '^query_failures' <<<"$scrape")"
stop_server

# Passwords: the API key, with each method; a wrong one is 28P01.
KEY='s3cret key'
for method in scram-sha-256 md5 password; do
  start_pg --api-key "$KEY" --pg-auth "$method"
  got=$(PGPASSWORD='s3cret key' pg -A -t -c "SELECT count(*) FROM events")
  assert_eq "$got" 50 "$method: the right password"
  got=$(PGPASSWORD=wrong pg -A -t -c "SELECT 1" 2>&1 || true)
  assert_contains "$got" 'password authentication failed for user "tester"' "$method: a wrong password"
  got=$(pg -w -A -t -c "SELECT 1" 2>&1 </dev/null || true)
  assert_contains "$got" "no password supplied" "$method: no password"
  if [[ $method == scram-sha-256 ]]; then
    # JDBC (PostgreSQL's driver, SCRAM): DatabaseMetaData, a PreparedStatement past the driver's
    # prepareThreshold (named statements, binary results), typed values, a refused write.
    mkdir -p "$T/jdbc"
    javac -d "$T/jdbc" "$TM_SOURCE_DIR/tests/tools/PgJdbc.java" || fail "javac PgJdbc.java"
    got=$(timeout 60 java -cp "$JDBC_JAR:$T/jdbc" PgJdbc 127.0.0.1 "$PG_PORT" "$KEY" 2>&1 | sort -u) ||
      fail "PgJdbc: $got"
    want=$(sort -u <<'OUT'
product=PostgreSQL 15.0
table=public.events TABLE
table=public.evens VIEW
column=id int8 -5 1
column=v text 12 2
column=x float8 8 3
column=ok bool -7 4
column=ts timestamptz 93 5
row=7 v7 10.5 false
row=14 v14 21.0 true
row=21 v21 31.5 false
row=28 v28 42.0 true
row=35 v35 52.5 false
row=42 v42 63.0 true
row=49 v49 73.5 false
int=1
bigint=9000000000
double=1.25
numeric=12.34
text=text é
timestamp=2024-01-02T03:04:05.500
timestamptz=2024-01-02T03:04:05Z
date=2024-01-02
boolean=true
bytea=2 1 255
null=true true
param=5.50
write=25006
OUT
)
    assert_eq "$got" "$want" "JDBC"
    note "JDBC: metadata, prepared statements, typed values"
    # Grafana's PostgreSQL data source: Save & test, the query builder, macro-expanded queries.
    got=$("$PY" "$TM_SOURCE_DIR/tests/tools/pgwire_grafana.py" "$PG_PORT" "$KEY")
    want="ping empty
version [('1500.0',)]
timescaledb []
schemas [('public',)]
tables [('evens',), ('events',)]
tables of public [('evens',), ('events',)]
columns [('id', 'bigint'), ('v', 'text'), ('x', 'double precision'), ('ok', 'boolean'), ('ts', 'timestamp with time zone')]
timeseries [('1703808000.0', '6', '5.25'), ('1704672000.0', '10', '17.25'), ('1705536000.0', '10', '32.25'), ('1706400000.0', '3', '42.0')]
time macros [('2024-01-02 00:00:01.001000+00:00', '1704153601.001', 'v1'), ('2024-01-03 00:00:02.002000+00:00', '1704240002.002', 'v2')]
unix epoch [('1703808000.0', '6'), ('1704672000.0', '10'), ('1705536000.0', '10'), ('1706400000.0', '3')]"
    assert_eq "$got" "$want" "Grafana's queries"
    note "Grafana: Save & test, schemas, tables, columns, time-series macros"
  fi
  if [[ $method == password ]]; then
    out=$(python3 "$TM_SOURCE_DIR/tests/tools/pgwire_raw.py" "$PG_PORT" password "$KEY") ||
      fail "pgwire_raw password: $out"
    note "$out"
  fi
  stop_server
done
note "auth: scram-sha-256, md5 and password against the API key; wrong ones refused"
echo "PASS"
