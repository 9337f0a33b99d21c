/*
 * Unit tests for SQL over the accelerations, in DuckDB: every engine answers
 * the same queries the same way with faithful types (SPEC 3, 1.3), DuckDB's
 * dialect works (TIMESTAMP literals, date_trunc, INTERVAL, ::, ILIKE, window
 * functions), queries are read-only (D4) and bounded in time and memory, and
 * queries see one consistent state while commits run (C5).
 */
#include <pthread.h>
#include <stdlib.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "engine/sql.h"
#include "engine/sql/sql_int.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/log.h"

/* ---- fixture: an events table on every engine --------------------------------------- */

static void events_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "day", tm_type_of(TM_TYPE_DATE32), true, 3, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "kind", tm_type_of(TM_TYPE_UTF8), true, 4, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "amount", tm_type_decimal(10, 2), true, 5, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "score", tm_type_of(TM_TYPE_FLOAT64), true, 6, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ok", tm_type_of(TM_TYPE_BOOL), true, 7, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "payload", tm_type_of(TM_TYPE_UTF8), true, 8, &err), &err);
}

static const char *const k_kinds[] = {"click", "view", "buy", "cart"};
#define T0 INT64_C(1717200000000000) /* 2024-06-01T00:00:00Z in microseconds */

/* Rows [from, from + n): time-ordered, kinds cycling, some NULLs. */
static void events_batch(tm_batch *out, int64_t from, int64_t n) {
  tm_error err;
  tm_schema s;
  events_schema(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = from; i < from + n; i++) {
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    int64_t ts = T0 + i * 60 * INT64_C(1000000) + (i % 7) * 1500;
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], ts, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[2], ts / INT64_C(86400000000), &err), &err);
    if (i % 13 == 5) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[3], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[3], k_kinds[i % 4], strlen(k_kinds[i % 4]), &err), &err);
    uint8_t d[16];
    __int128 x = (i * 37) % 100000 - 500;
    memcpy(d, &x, 16);
    TM_ASSERT_OK(tm_colbuilder_append_decimal(&bb.cols[4], d, &err), &err);
    if (i % 11 == 3) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[5], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[5], (double)i / 8.0, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_bool(&bb.cols[6], i % 3 == 0, &err), &err);
    char p[48];
    int len = snprintf(p, sizeof p, "payload-%032lld", (long long)i);
    TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[7], p, (size_t)len, &err), &err);
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

static bool g_sqlite_memory; /* open sqlite and duckdb datasets in memory mode */

static tm_engine *open_events(tm_engine_kind kind, const char *name, bool keyed) {
  tm_error err;
  tm_schema s;
  events_schema(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = tm_test_db();
  o.dataset = name;
  o.mode = kind == TM_ENGINE_ARROW || (kind != TM_ENGINE_CAYENNE && g_sqlite_memory)
               ? TM_ENGINE_MEMORY
               : TM_ENGINE_FILE;
  char path[128];
  snprintf(path, sizeof path, "%s%s", name,
           kind == TM_ENGINE_SQLITE ? ".db" : kind == TM_ENGINE_DUCKDB ? ".duckdb" : "");
  if (o.mode == TM_ENGINE_FILE) o.path = tm_test_path(path);
  o.time_column = "ts";
  const char *pk[] = {"id"};
  if (keyed) {
    o.primary_key = pk;
    o.n_primary_key = 1;
  }
  tm_engine *e;
  TM_ASSERT_OK(tm_engine_open(&e, kind, &s, &o, &err), &err);
  tm_schema_dispose(&s);
  return e;
}

static void load(tm_engine *e, int64_t from, int64_t n, int64_t per_commit) {
  tm_error err;
  for (int64_t at = from; at < from + n; at += per_commit) {
    tm_batch b;
    events_batch(&b, at, per_commit);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&b);
  }
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Runs sql and returns its output (caller frees); fails the test on error. */
static char *query(tm_sql_session *s, const char *sql, tm_out_format fmt) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = tm_sql_query(s, sql, fmt, buf_sink, &out, NULL, &err);
  TM_ASSERT_MSG(rc == TM_OK, "%s: %s", sql, err.message);
  char *text = tm_buf_take(&out, NULL);
  return text;
}

/* The first cell of the first row as an integer (NULL: INT64_MIN). */
static int64_t query_int(tm_sql_session *s, const char *sql) {
  tm_error err;
  tm_sql_stmt *q;
  TM_ASSERT_OK(tm_sql_prepare(s, sql, &q, &err), &err);
  TM_ASSERT_OK(tm_sql_step(q, &err), &err);
  int64_t v = INT64_MIN;
  if (!tm_sql_column_is_null(q, 0)) {
    tm_buf b = TM_BUF_INIT(1 << 10);
    tm_cell_kind k;
    TM_ASSERT_OK(tm_sql_column_render(q, 0, &b, &k, &err), &err);
    TM_ASSERT_OK(tm_parse_int64(b.ptr, b.len, &v), &err);
    tm_buf_dispose(&b);
  }
  tm_sql_stmt_free(q);
  return v;
}

/* ---- the same answers on every engine --------------------------------------------------- */

static const tm_engine_kind k_all[] = {TM_ENGINE_SQLITE, TM_ENGINE_ARROW, TM_ENGINE_CAYENNE,
                                       TM_ENGINE_DUCKDB};
static const char *const k_names[] = {"ev_sqlite", "ev_arrow", "ev_cayenne", "ev_duckdb"};
#define N_ALL 4

TM_TEST(sql_every_engine_answers_alike) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  for (int k = 0; k < N_ALL; k++) {
    tm_engine *e = open_events(k_all[k], k_names[k], false);
    load(e, 0, 1000, 250);
    TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
    tm_engine_release(e);
  }
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  const char *queries[] = {
      "SELECT * FROM %s WHERE id < 20 ORDER BY id",
      "SELECT count(*), count(kind), count(score), count(*) FILTER (WHERE ok) FROM %s",
      "SELECT kind, count(*), sum(amount), min(ts), max(payload) FROM %s GROUP BY kind ORDER BY kind NULLS FIRST",
      "SELECT id, ts FROM %s WHERE ts >= TIMESTAMP '2024-06-01 05:00:00' AND ts < '2024-06-01T06:00:00Z' ORDER BY id",
      "SELECT id FROM %s WHERE ts = '2024-06-01T00:03:00.0045Z'",
      "SELECT id, day FROM %s WHERE day = DATE '2024-06-01' AND id > 1430 ORDER BY id",
      "SELECT count(*) FROM %s WHERE day >= '2024-06-01' AND day < '2024-06-02'",
      "SELECT id, amount FROM %s WHERE amount > 100.5 AND amount <= 110 ORDER BY id",
      "SELECT id FROM %s WHERE id IN (3, 77, 999, 5000) ORDER BY id",
      "SELECT id FROM %s WHERE kind IN ('buy', 'nope') AND id < 30 ORDER BY id",
      "SELECT id FROM %s WHERE kind IS NULL ORDER BY id LIMIT 5",
      "SELECT id, score FROM %s WHERE score > 120.1 AND score < 121 ORDER BY id",
      "SELECT id FROM %s WHERE kind ILIKE 'CL%%' AND id < 12 ORDER BY id",
      "SELECT date_trunc('hour', ts) AS h, count(*) FROM %s GROUP BY 1 ORDER BY 1 LIMIT 5",
      "SELECT count(*) FROM %s WHERE ts > TIMESTAMPTZ '2024-06-01 10:00:00+00' - INTERVAL 1 HOUR",
      "SELECT id, ts::DATE AS d, CAST(ts AS TIMESTAMP) AS t FROM %s WHERE id = 7",
      "SELECT id, sum(id) OVER (ORDER BY id ROWS 2 PRECEDING) AS w FROM %s WHERE id < 10 ORDER BY id",
      "SELECT ok, count(*) FROM %s GROUP BY ok ORDER BY ok",
      "SELECT max(ts), min(day), max(amount) FROM %s",
      "SELECT DISTINCT kind FROM %s ORDER BY kind",
      "SELECT count(*) FROM %s a JOIN %s b ON a.id = b.id + 1 WHERE a.id < 50",
      "SELECT id, kind FROM %s ORDER BY ts DESC LIMIT 3",
  };
  for (size_t q = 0; q < sizeof queries / sizeof queries[0]; q++) {
    char *first = NULL;
    for (int k = 0; k < N_ALL; k++) {
      char sql[512];
      snprintf(sql, sizeof sql, queries[q], k_names[k], k_names[k]);
      char *got = query(s, sql, TM_OUT_CSV);
      if (!first) {
        first = got;
        continue;
      }
      TM_ASSERT_MSG(strcmp(first, got) == 0, "query %zu differs on %s:\n%s\nvs sqlite:\n%s", q,
                    k_names[k], got, first);
      tm_free(got);
    }
    tm_free(first);
  }
  /* Timestamps compare as instants, not as text (the SQLite-era bug). */
  TM_ASSERT_INT_EQ(query_int(s, "SELECT count(*) FROM ev_cayenne WHERE ts >= '2024-06-01 10:00:00'"), 400);
  TM_ASSERT_INT_EQ(query_int(s, "SELECT count(*) FROM ev_sqlite WHERE ts >= '2024-06-01 10:00:00'"), 400);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

TM_TEST(sql_renders_faithful_types) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *e = open_events(TM_ENGINE_CAYENNE, "ev", false);
  load(e, 0, 20, 20);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  char *csv = query(s, "SELECT id, ts, day, kind, amount, score, ok FROM ev WHERE id IN (1, 3, 5) ORDER BY id", TM_OUT_CSV);
  TM_ASSERT_STR_EQ(csv,
                   "id,ts,day,kind,amount,score,ok\r\n"
                   "1,2024-06-01T00:01:00.0015Z,2024-06-01,view,-4.63,0.125,false\r\n"
                   "3,2024-06-01T00:03:00.0045Z,2024-06-01,cart,-3.89,,true\r\n"
                   "5,2024-06-01T00:05:00.0075Z,2024-06-01,,-3.15,0.625,false\r\n");
  tm_free(csv);
  char *json = query(s, "SELECT id, ts, amount, ok, kind FROM ev WHERE id = 4", TM_OUT_JSON);
  TM_ASSERT_STR_EQ(json,
                   "[{\"id\":4,\"ts\":\"2024-06-01T00:04:00.006Z\",\"amount\":-3.52,\"ok\":false,"
                   "\"kind\":\"click\"}]\n");
  tm_free(json);
  char *table = query(s, "SELECT id, kind FROM ev WHERE id < 2", TM_OUT_TABLE);
  TM_ASSERT_CONTAINS(table, "(2 rows)");
  TM_ASSERT_CONTAINS(table, "click");
  tm_free(table);
  /* Every DuckDB type a query can make, faithfully. */
  json = query(s,
               "SELECT 'NaN'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, '-inf'::FLOAT AS ninf, "
               "12345678901234567890123456789012345678::DECIMAL(38,0) AS d38, "
               "-0.000001::DECIMAL(18,6) AS small, 170141183460469231731687303715884105727::HUGEINT AS h, "
               "18446744073709551615::UBIGINT AS u, TIMESTAMP '2024-01-02 03:04:05.5' AS t, "
               "TIMESTAMPTZ '2024-01-02 03:04:05+02' AS tz, '2024-01-02 03:04:05.123456789'::TIMESTAMP_NS AS tns, "
               "DATE '1970-01-01' AS d, TIME '12:00:01.25' AS tm, INTERVAL '1 year 2 days 3.5 seconds' AS iv, "
               "uuid '123e4567-e89b-12d3-a456-426614174000' AS id, E'a\"b\\\\c\\n' AS s, '\\x00\\xff'::BLOB AS bl, "
               "[1, NULL, 3] AS l, {'k': 'v', 'n': [1.5]} AS st, MAP {'a': 1} AS m, "
               "MAP {1: 'x'} AS m2, [[1], []] AS ll, 'infinity'::TIMESTAMP AS pinf, "
               "'b'::ENUM('a', 'b') AS e, '101'::BIT AS bits, TIMETZ '10:00:00+05:30' AS ttz",
               TM_OUT_JSON);
  TM_ASSERT_STR_EQ(json,
                   "[{\"nan\":\"NaN\",\"inf\":\"inf\",\"ninf\":\"-inf\","
                   "\"d38\":12345678901234567890123456789012345678,\"small\":-0.000001,"
                   "\"h\":170141183460469231731687303715884105727,\"u\":18446744073709551615,"
                   "\"t\":\"2024-01-02T03:04:05.5\",\"tz\":\"2024-01-02T01:04:05Z\","
                   "\"tns\":\"2024-01-02T03:04:05.123456789\",\"d\":\"1970-01-01\",\"tm\":\"12:00:01.25\","
                   "\"iv\":\"P1Y2DT3.5S\",\"id\":\"123e4567-e89b-12d3-a456-426614174000\","
                   "\"s\":\"a\\\"b\\\\c\\n\",\"bl\":\"\\\\x00\\\\xFF\",\"l\":[1,null,3],"
                   "\"st\":{\"k\":\"v\",\"n\":[1.5]},\"m\":{\"a\":1},\"m2\":{\"1\":\"x\"},"
                   "\"ll\":[[1],[]],\"pinf\":\"infinity\",\"e\":\"b\",\"bits\":\"101\","
                   "\"ttz\":\"10:00:00+05:30\"}]\n");
  tm_free(json);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(e);
}

/* ---- D4: read-only ----------------------------------------------------------------------- */

TM_TEST(sql_d4_gate_refuses_writes_and_files) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *a = open_events(TM_ENGINE_CAYENNE, "ev", false);
  tm_engine *b = open_events(TM_ENGINE_SQLITE, "evs", false);
  load(a, 0, 10, 10);
  load(b, 0, 10, 10);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, b, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  char secret[1100];
  snprintf(secret, sizeof secret, "%s/secret.csv", tm_test_tmpdir());
  tm_test_write_file(secret, "a,b\n1,2\n");
  char q_read[1200], q_glob[1200], q_path[1200], q_copy[1200], q_attach[1200];
  snprintf(q_read, sizeof q_read, "SELECT * FROM read_csv('%s')", secret);
  snprintf(q_glob, sizeof q_glob, "SELECT * FROM glob('%s/*')", tm_test_tmpdir());
  snprintf(q_path, sizeof q_path, "SELECT * FROM '%s'", secret);
  snprintf(q_copy, sizeof q_copy, "COPY ev TO '%s/out.csv'", tm_test_tmpdir());
  snprintf(q_attach, sizeof q_attach, "ATTACH '%s/x.duckdb' AS x", tm_test_tmpdir());
  struct {
    const char *sql;
    const char *msg;
  } refused[] = {
      {"INSERT INTO evs(id) VALUES (1)", ""},
      {"UPDATE ev SET id = 2", ""},
      {"DELETE FROM ev", ""},
      {"INSERT INTO \"tm$ev\".main.rows(id) VALUES (1)", "INSERT is not allowed"},
      {"DELETE FROM \"tm$ev\".main.rows", "DELETE is not allowed"},
      {"DROP VIEW ev", "DROP is not allowed"},
      {"CREATE TABLE x(a INT)", "CREATE is not allowed"},
      {"CREATE TEMP VIEW v AS SELECT 1", "CREATE is not allowed"},
      {"ALTER VIEW ev RENAME TO x", "ALTER is not allowed"},
      {"VACUUM", "VACUUM is not allowed"},
      {"CHECKPOINT", "not allowed"},
      {"SELECT * FROM checkpoint()", "checkpoint is not allowed"},
      {"SELECT * FROM pragma_database_size()", "pragma_database_size is not allowed"},
      {q_attach, "ATTACH is not allowed"},
      {"DETACH \"tm$ev\"", "DETACH is not allowed"},
      {q_copy, ""},
      {"EXPORT DATABASE '/tmp/x'", ""},
      {q_read, ""},
      {q_glob, ""},
      {q_path, ""},
      {"SELECT * FROM read_text('/etc/passwd')", ""},
      {"SELECT * FROM read_parquet('/etc/passwd')", ""},
      {"SELECT * FROM query('SELECT 1')", "query is not allowed"},
      {"SET threads = 1", "SET is not allowed"},
      {"RESET memory_limit", "RESET is not allowed"},
      {"PRAGMA enable_profiling", "PRAGMA is not allowed"},
      {"PRAGMA version", "PRAGMA is not allowed"},
      {"INSTALL httpfs", "INSTALL is not allowed"},
      {"LOAD httpfs", "LOAD is not allowed"},
      {"CALL pragma_version()", "CALL is not allowed"},
      {"BEGIN", "BEGIN is not allowed"},
      {"PREPARE p AS SELECT 1", "PREPARE"},
      {"SELECT 1; DELETE FROM ev", "one statement"},
      {"SELECT * FROM nosuchtable", "nosuchtable"},
      {"SELEKT 1", "syntax error"},
      {"", "empty"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    tm_buf out = TM_BUF_INIT(1 << 20);
    int rc = tm_sql_query(s, refused[i].sql, TM_OUT_CSV, buf_sink, &out, NULL, &err);
    TM_ASSERT_MSG(rc == TM_EINVALID, "%s: rc %d (%s)", refused[i].sql, rc, err.message);
    TM_ASSERT_CONTAINS(err.message, refused[i].msg);
    tm_buf_dispose(&out);
  }
  /* Reads still work, including DESCRIBE, SHOW, SUMMARIZE and EXPLAIN. */
  char *ok = query(s, "DESCRIBE ev", TM_OUT_CSV);
  TM_ASSERT_CONTAINS(ok, "TIMESTAMP WITH TIME ZONE");
  tm_free(ok);
  ok = query(s, "SHOW TABLES", TM_OUT_CSV);
  TM_ASSERT_CONTAINS(ok, "evs");
  tm_free(ok);
  ok = query(s, "EXPLAIN SELECT count(*) FROM evs", TM_OUT_CSV);
  TM_ASSERT_CONTAINS(ok, "physical_plan");
  tm_free(ok);
  ok = query(s, "SELECT count(*) FROM evs", TM_OUT_CSV);
  TM_ASSERT_STR_EQ(ok, "count_star()\r\n10\r\n");
  tm_free(ok);
  int64_t n;
  TM_ASSERT_OK(tm_engine_row_count(b, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 10);
  TM_ASSERT_OK(tm_engine_row_count(a, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 10);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(a);
  tm_engine_release(b);
}

/*
 * D4 with the session's memory of passed texts (session.c, issue 20): the
 * shape key masks standalone numbers only; texts of one shape are answered
 * with their own values; a refused text is refused every time, also after
 * passed texts that look like it; the same text again sees later commits.
 */
TM_TEST(sql_d4_gate_memory_keeps_verdicts) {
  tm_error err;
  tm_buf key = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_sql__shape_key("SELECT 'a1', \"x2\", $1, t3, 42, 4.5, 1e5, E'\\'7' -- 8\n/* 9 */ 10",
                                 &key, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&key), "SELECT 'a1', \"x2\", $1, t3, ?, ?.?, 1e5, E'\\'7' -- 8\n/* 9 */ ?");
  TM_ASSERT_OK(tm_sql__shape_key("SELECT $$a 1$$, $t$ 2 $t$, 3", &key, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&key), "SELECT $$a 1$$, $t$ 2 $t$, ?");
  tm_buf_dispose(&key);

  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *a = open_events(TM_ENGINE_CAYENNE, "ev", false);
  load(a, 0, 10, 10);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  for (int round = 0; round < 3; round++) {
    char sql[128], want[64];
    snprintf(sql, sizeof sql, "SELECT id FROM ev WHERE id = %d", 3 + round);
    snprintf(want, sizeof want, "id\r\n%d\r\n", 3 + round);
    char *got = query(s, sql, TM_OUT_CSV);
    TM_ASSERT_STR_EQ(got, want);
    tm_free(got);
    const char *refused[] = {"DELETE FROM ev WHERE id = 3", "SELECT * FROM read_csv('/etc/passwd') WHERE 1 = 3",
                             "SELECT id FROM ev WHERE id = 3; DELETE FROM ev", "SELECT * FROM '/etc/passwd' LIMIT 3",
                             "SELECT id FROM ev WHERE id = 3 AND current_setting('temp_directory') = 3"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
      tm_buf out = TM_BUF_INIT(1 << 20);
      int rc = tm_sql_query(s, refused[i], TM_OUT_CSV, buf_sink, &out, NULL, &err);
      TM_ASSERT_MSG(rc == TM_EINVALID, "round %d, %s: rc %d (%s)", round, refused[i], rc, err.message);
      tm_buf_dispose(&out);
    }
    /* The same text again: it sees the rows committed since. */
    got = query(s, "SELECT count(*) AS n FROM ev", TM_OUT_CSV);
    snprintf(want, sizeof want, "n\r\n%d\r\n", 10 + 5 * round);
    TM_ASSERT_STR_EQ(got, want);
    tm_free(got);
    load(a, 100 + 5 * round, 5, 5);
  }
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(a);
}

/* Past the time limit: TM_ETIMEOUT; past the memory limit: TM_ETOOLARGE; the session goes on. */
TM_TEST(sql_d4_time_and_memory_limits) {
  tm_error err;
  tm_db_options o;
  tm_db_options_init(&o);
  o.threads = 2;
  o.memory_limit = (int64_t)64 << 20;
  tm_db *db;
  TM_ASSERT_OK(tm_db_open(&db, &o, &err), &err);
  TM_ASSERT_INT_EQ(tm_db_memory_limit(db), (int64_t)64 << 20);
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, db, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  tm_sql_session_set_timeout(s, 200);
  tm_buf b = TM_BUF_INIT(1 << 20);
  TM_ASSERT_RC(tm_sql_query(s,
                            "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) "
                            "SELECT count(*) FROM r",
                            TM_OUT_CSV, buf_sink, &b, NULL, &err),
               TM_ETIMEOUT);
  TM_ASSERT_CONTAINS(err.message, "time limit of 200 ms");
  tm_buf_dispose(&b);
  b = (tm_buf)TM_BUF_INIT(1 << 20);
  TM_ASSERT_RC(tm_sql_query(s, "SELECT count(*) FROM range(1000000000000)", TM_OUT_CSV, buf_sink,
                            &b, NULL, &err),
               TM_ETIMEOUT);
  tm_buf_dispose(&b);
  tm_sql_session_set_timeout(s, 30000);
  b = (tm_buf)TM_BUF_INIT(1 << 20);
  TM_ASSERT_RC(tm_sql_query(s, "SELECT string_agg(repeat('x', 1000), '') FROM range(1000000)",
                            TM_OUT_CSV, buf_sink, &b, NULL, &err),
               TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "more memory than the limit");
  tm_buf_dispose(&b);
  /* The session still answers. */
  TM_ASSERT_INT_EQ(query_int(s, "SELECT 41 + 1"), 42);
  /* Interrupting from another thread (shutdown) cancels. */
  tm_sql_session_interrupt(s);
  TM_ASSERT_INT_EQ(query_int(s, "SELECT 7"), 7);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_db_release(db);
}

/* ---- C5: consistent reads during commits ----------------------------------------------------- */

typedef struct reader_ctx {
  tm_sql_catalog *cat;
  const char *table;
  int *stop;              /* atomic */
  int64_t queries;
  int failures;
  char message[256];
} reader_ctx;

/*
 * Every commit adds 100 rows whose ids are consecutive from 0: a consistent
 * state has count % 100 == 0 and sum(id) == n(n-1)/2. A self-join reads the
 * table twice in one statement and must see the same state twice.
 */
static void *reader(void *arg) {
  reader_ctx *r = arg;
  tm_error err;
  tm_sql_session *s;
  if (tm_sql_session_new(&s, r->cat, &err) != TM_OK) {
    r->failures++;
    return NULL;
  }
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT count(*) || ' ' || coalesce(sum(id), 0) || ' ' || (SELECT count(*) FROM %s) AS r "
           "FROM %s",
           r->table, r->table);
  while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE)) {
    tm_buf out = TM_BUF_INIT(1 << 16);
    if (tm_sql_query(s, sql, TM_OUT_CSV, buf_sink, &out, NULL, &err) != TM_OK) {
      snprintf(r->message, sizeof r->message, "%s", err.message);
      r->failures++;
      tm_buf_dispose(&out);
      break;
    }
    long long n = -1, sum = -1, n2 = -1;
    const char *line = strstr(tm_buf_cstr(&out), "\r\n");
    if (!line || sscanf(line + 2, "%lld %lld %lld", &n, &sum, &n2) != 3) { /* lint-ok: test parsing */
      snprintf(r->message, sizeof r->message, "unexpected answer %s", tm_buf_cstr(&out));
      r->failures++;
      tm_buf_dispose(&out);
      break;
    }
    tm_buf_dispose(&out);
    if (n % 100 != 0 || n != n2 || sum != n * (n - 1) / 2) {
      snprintf(r->message, sizeof r->message, "count %lld, inner count %lld, sum %lld", n, n2, sum);
      r->failures++;
      break;
    }
    r->queries++;
  }
  tm_sql_session_free(s);
  return NULL;
}

TM_TEST(sql_c5_readers_see_whole_commits) {
  tm_error err;
  int commits = tm_test_stress() ? 300 : 30;
  for (int k = 0; k < N_ALL; k++) {
    tm_sql_catalog *cat;
    TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
    /* Keyed on cayenne and duckdb: the commit resolves keys in SQL as readers read. */
    tm_engine *e = open_events(k_all[k], k_names[k], k_all[k] == TM_ENGINE_CAYENNE || k_all[k] == TM_ENGINE_DUCKDB);
    TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
    int stop = 0;
    reader_ctx rc[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
      memset(&rc[i], 0, sizeof rc[i]);
      rc[i].cat = cat;
      rc[i].table = k_names[k];
      rc[i].stop = &stop;
      TM_ASSERT(pthread_create(&th[i], NULL, reader, &rc[i]) == 0);
    }
    for (int c = 0; c < commits; c++) load(e, (int64_t)c * 100, 100, 100);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int64_t total = 0;
    for (int i = 0; i < 3; i++) {
      pthread_join(th[i], NULL);
      TM_ASSERT_MSG(rc[i].failures == 0, "%s reader %d: %s", tm_engine_kind_name(k_all[k]), i,
                    rc[i].message);
      total += rc[i].queries;
    }
    TM_ASSERT(total > 0);
    int64_t n;
    TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, (int64_t)commits * 100);
    tm_sql_catalog_free(cat);
    tm_engine_release(e);
  }
}

/* A statement reads the state it started on, even if commits land while it is read (C5). */
TM_TEST(sql_c5_statement_reads_the_state_it_started_on) {
  tm_error err;
  for (int k = 0; k < N_ALL; k++) {
    tm_sql_catalog *cat;
    TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
    tm_engine *e = open_events(k_all[k], k_names[k], false);
    load(e, 0, 5000, 5000);
    TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
    tm_sql_session *s;
    TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT id FROM %s", k_names[k]);
    tm_sql_stmt *q;
    TM_ASSERT_OK(tm_sql_prepare(s, sql, &q, &err), &err);
    TM_ASSERT_OK(tm_sql_step(q, &err), &err);
    /* A commit while the statement is being read. */
    load(e, 5000, 3000, 3000);
    int64_t rows = 1;
    while (tm_sql_step(q, &err) == TM_OK) rows++;
    tm_sql_stmt_free(q);
    TM_ASSERT_MSG(rows == 5000, "%s: the statement read %lld rows", k_names[k], (long long)rows);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", k_names[k]);
    TM_ASSERT_INT_EQ(query_int(s, sql), 8000);
    tm_sql_session_free(s);
    tm_sql_catalog_free(cat);
    tm_engine_release(e);
  }
}

/* ---- catalog life, retention_sql -------------------------------------------------------------- */

TM_TEST(sql_catalog_follows_datasets) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  /* Many datasets, in memory and in files, queried in any order and together. */
  for (int i = 0; i < 13; i++) {
    char name[32];
    snprintf(name, sizeof name, "s%02d", i);
    g_sqlite_memory = i % 2 == 1;
    tm_engine *e = open_events(i % 3 == 0 ? TM_ENGINE_SQLITE : i % 3 == 1 ? TM_ENGINE_DUCKDB : TM_ENGINE_CAYENNE, name, false);
    g_sqlite_memory = false;
    load(e, 0, i + 1, i + 1);
    TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
    tm_engine_release(e);
  }
  for (int round = 0; round < 2; round++)
    for (int i = 12; i >= 0; i--) {
      char sql[64];
      snprintf(sql, sizeof sql, "SELECT count(*) FROM S%02d", i); /* names match in any case */
      TM_ASSERT_INT_EQ(query_int(s, sql), i + 1);
    }
  TM_ASSERT_INT_EQ(query_int(s, "SELECT (SELECT count(*) FROM s00) + (SELECT count(*) FROM s12)"), 14);
  /* A removed dataset disappears; an added one appears; adding again replaces. */
  TM_ASSERT_OK(tm_sql_catalog_remove(cat, "s03", &err), &err);
  TM_ASSERT_RC(tm_sql_catalog_remove(cat, "s03", &err), TM_ENOTFOUND);
  tm_buf b = TM_BUF_INIT(1 << 20);
  TM_ASSERT_RC(tm_sql_query(s, "SELECT * FROM s03", TM_OUT_CSV, buf_sink, &b, NULL, &err), TM_EINVALID);
  tm_buf_dispose(&b);
  tm_engine *c = open_events(TM_ENGINE_CAYENNE, "late", false);
  load(c, 0, 3, 3);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, c, &err), &err);
  TM_ASSERT_INT_EQ(query_int(s, "SELECT count(*) FROM late"), 3);
  tm_engine *c2 = open_events(TM_ENGINE_ARROW, "late", false);
  load(c2, 0, 5, 5);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, c2, &err), &err);
  TM_ASSERT_INT_EQ(query_int(s, "SELECT count(*) FROM late"), 5);
  /* A statement in progress blocks a second one in the same session. */
  tm_sql_stmt *q1, *q2;
  TM_ASSERT_OK(tm_sql_prepare(s, "SELECT 1", &q1, &err), &err);
  TM_ASSERT_RC(tm_sql_prepare(s, "SELECT 2", &q2, &err), TM_ECONFLICT);
  tm_sql_stmt_free(q1);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(c);
  tm_engine_release(c2);
}

/* ---- texts prepared once, run again (pgwire Parse/Execute, issue 20) ----------------------- */

/* Runs sql with one BIGINT parameter (or none: v == INT64_MIN); the first cell, or INT64_MIN on
 * error (its code in *rc). */
static int64_t run_param(tm_sql_session *s, const char *sql, int64_t v, int *rc) {
  tm_error err;
  tm_sql_param item = {.kind = TM_SQL_PARAM_INT, .i = v};
  tm_sql_params p = {.items = &item, .n = 1};
  tm_sql_stmt *q = NULL;
  *rc = tm_sql_prepare_params(s, sql, v == INT64_MIN ? NULL : &p, &q, &err);
  if (*rc == TM_OK) *rc = tm_sql_step(q, &err);
  int64_t out = INT64_MIN;
  if (*rc == TM_OK && !tm_sql_column_is_null(q, 0)) {
    tm_buf b = TM_BUF_INIT(1 << 10);
    tm_cell_kind k;
    TM_ASSERT_OK(tm_sql_column_render(q, 0, &b, &k, &err), &err);
    TM_ASSERT_OK(tm_parse_int64(b.ptr, b.len, &out), &err);
    tm_buf_dispose(&b);
  }
  tm_sql_stmt_free(q);
  return out;
}

TM_TEST(sql_prepared_texts_run_again) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *a = open_events(TM_ENGINE_CAYENNE, "pev", false);
  load(a, 0, 10, 10);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  const char *count = "SELECT count(*) FROM pev WHERE id >= $1";
  int rc;
  /* Each run binds its own value; a run without values does not reuse the last ones. */
  TM_ASSERT_INT_EQ(run_param(s, count, 5, &rc), 5);
  TM_ASSERT_INT_EQ(run_param(s, count, 8, &rc), 2);
  TM_ASSERT_INT_EQ(run_param(s, count, 0, &rc), 10);
  run_param(s, count, INT64_MIN, &rc);
  TM_ASSERT_MSG(rc != TM_OK, "a parameter left unbound ran with the last run's value");
  TM_ASSERT_INT_EQ(run_param(s, count, 9, &rc), 1);
  /* Rows committed since are seen, and a full refresh's new table (A11) too. */
  load(a, 10, 5, 5);
  TM_ASSERT_INT_EQ(run_param(s, count, 9, &rc), 6);
  for (int full = 0; full < 2; full++) {
    tm_batch fb;
    events_batch(&fb, 100, 4 + full);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(a, TM_TXN_REPLACE_ALL, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &fb, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&fb);
    TM_ASSERT_INT_EQ(run_param(s, count, 9, &rc), 4 + full);
  }
  load(a, 0, 10, 10);
  TM_ASSERT_INT_EQ(run_param(s, count, 9, &rc), 6);
  /* A described text (pgwire's Parse) runs as described. */
  tm_sql_shape sh;
  TM_ASSERT_OK(tm_sql_describe(s, "SELECT id, kind FROM pev WHERE id = $1", &sh, &err), &err);
  TM_ASSERT_INT_EQ(sh.n_params, 1);
  TM_ASSERT_INT_EQ(sh.n_cols, 2);
  tm_sql_shape_dispose(&sh);
  TM_ASSERT_INT_EQ(run_param(s, "SELECT id, kind FROM pev WHERE id = $1", 7, &rc), 7);
  /* The dataset replaced under the same name (another engine, other rows): DuckDB binds the
   * kept statement again, and a removed one is an error, not the old rows. */
  tm_engine *b = open_events(TM_ENGINE_ARROW, "pev", false);
  load(b, 100, 3, 3);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, b, &err), &err);
  TM_ASSERT_INT_EQ(run_param(s, count, 0, &rc), 3);
  TM_ASSERT_OK(tm_sql_catalog_remove(cat, "pev", &err), &err);
  run_param(s, count, 0, &rc);
  TM_ASSERT_RC(rc, TM_EINVALID);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  TM_ASSERT_INT_EQ(run_param(s, count, 0, &rc), 15);
  /* More texts than the session keeps: each still answers, the first one too. */
  for (int i = 0; i < 40; i++) {
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) + %d FROM pev WHERE id < $1", i);
    TM_ASSERT_INT_EQ(run_param(s, sql, i % 15, &rc), i + (i % 15 < 10 ? i % 15 : 10)); /* ids 0-9, 100-104 */
  }
  TM_ASSERT_INT_EQ(run_param(s, count, 9, &rc), 6);
  /* The gate still refuses a text whatever it kept. */
  run_param(s, "DELETE FROM pev WHERE id = $1", 1, &rc);
  TM_ASSERT_RC(rc, TM_EINVALID);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(a);
  tm_engine_release(b);
}

/*
 * A kept statement is prepared afresh after 256 runs (session.c
 * PREP_RUNS_MAX): DuckDB 1.4 keeps a result collector per execution of a
 * prepared statement whose plan it keeps, until the statement is destroyed
 * (duckdb/duckdb#21089), and a session keeps its statements for its life.
 * Every run answers; the count of runs never passes the bound.
 */
TM_TEST(sql_kept_statements_are_prepared_again_after_256_runs) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  const char *sql = "SELECT $1::BIGINT * 2 AS v";
  int rc;
  int64_t most = 0;
  for (int64_t i = 0; i < 600; i++) {
    TM_ASSERT_INT_EQ(run_param(s, sql, i, &rc), 2 * i);
    int64_t runs = tm_sql__kept_runs(s, sql);
    TM_ASSERT_MSG(runs >= 1 && runs <= 256, "run %lld: the kept statement ran %lld times", (long long)i,
                  (long long)runs);
    if (runs > most) most = runs;
    if (i == 256) TM_ASSERT_INT_EQ(runs, 1); /* the 257th run prepared it again */
  }
  TM_ASSERT_INT_EQ(most, 256);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

/* Every row of sql run with the BIGINT value v ($1; none when v is INT64_MIN), cells joined by
 * '|' and rows by '\n'; "error" when it fails. Caller frees. */
static char *rows_of(tm_sql_session *s, const char *sql, int64_t v) {
  tm_error err;
  tm_sql_param item = {.kind = TM_SQL_PARAM_INT, .i = v};
  tm_sql_params p = {.items = &item, .n = 1};
  tm_sql_stmt *q = NULL;
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = v == INT64_MIN ? tm_sql_prepare(s, sql, &q, &err) : tm_sql_prepare_params(s, sql, &p, &q, &err);
  for (size_t i = 0; rc == TM_OK && i < tm_sql_column_count(q); i++)
    TM_ASSERT_OK(tm_buf_printf(&out, &err, "%s%s", i ? "|" : "", tm_sql_column_name(q, i)), &err);
  while (rc == TM_OK && (rc = tm_sql_step(q, &err)) == TM_OK) {
    TM_ASSERT_OK(tm_buf_putc(&out, '\n', &err), &err);
    for (size_t i = 0; i < tm_sql_column_count(q); i++) {
      tm_cell_kind k;
      if (i) TM_ASSERT_OK(tm_buf_putc(&out, '|', &err), &err);
      if (tm_sql_column_is_null(q, i)) TM_ASSERT_OK(tm_buf_puts(&out, "NULL", &err), &err);
      else TM_ASSERT_OK(tm_sql_column_render(q, i, &out, &k, &err), &err);
    }
  }
  tm_sql_stmt_free(q);
  if (rc != TM_ITEROVER) {
    tm_buf_dispose(&out);
    return tm_strdup("error");
  }
  return tm_buf_take(&out, NULL);
}

/*
 * A kept statement reads the engines' tables directly (session.c direct_text:
 * the dataset's view is not bound at each execution). Every form of reference
 * answers as the same text with its value written in, which runs through the
 * views; the forms that may not be rewritten stay as written; a changes-mode
 * dataset's hidden columns stay hidden.
 */
TM_TEST(sql_kept_statements_read_tables_directly) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *a = open_events(TM_ENGINE_CAYENNE, "dv", false);
  tm_engine *b = open_events(TM_ENGINE_DUCKDB, "Dw", false);
  load(a, 0, 20, 7);
  load(b, 5, 20, 20);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, b, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  static const struct {
    const char *sql;
    bool direct;
  } cases[] = {
      {"SELECT * FROM dv WHERE id = $1", true},
      {"SELECT * FROM DV WHERE id = $1", true},
      {"SELECT * FROM \"dv\" WHERE id = $1", true},
      {"SELECT dv.id, dv.kind FROM dv WHERE dv.id >= $1 ORDER BY dv.id", true},
      {"SELECT p.id FROM dv AS p WHERE p.id < $1 ORDER BY 1", true},
      {"SELECT p.id FROM dv p WHERE p.id < $1 ORDER BY 1", true},
      {"SELECT x.id, y.id FROM dv x JOIN \"Dw\" y USING (id) WHERE x.id > $1 ORDER BY 1", true},
      {"SELECT count(*) FROM dv WHERE id IN (SELECT id FROM dw WHERE id > $1)", true},
      {"SELECT dv FROM dv WHERE id = $1", true},
      {"SELECT id FROM dv WHERE id = $1 UNION ALL SELECT id FROM dv WHERE id = $1 + 1 ORDER BY 1", true},
      {"SELECT max(id) FROM dv/* dv */WHERE id < $1", true},
      {"WITH t AS (SELECT * FROM dv) SELECT count(*) FROM t WHERE id > $1", false},
      {"WITH dv AS (SELECT 42 AS id) SELECT id FROM dv WHERE id > $1", false},
      {"SELECT id FROM main.dv WHERE id = $1", false},
      {"SELECT main.dv.id FROM dv WHERE id = $1", false},
      {"SELECT $1 + 1 AS x", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t before = tm_sql__kept_direct(s);
    uint64_t runs = tm_sql__direct_runs(s);
    for (int64_t v = 3; v <= 12; v += 9) {
      char *got = rows_of(s, cases[i].sql, v);
      /* The same text with the value written in; with a comment no other text has, its shape
       * is new: the gate reads it whole and it runs as written, through the views. */
      char literal[512], num[24], ref[600];
      snprintf(num, sizeof num, "%lld", (long long)v);
      const char *sql = cases[i].sql;
      size_t k = 0;
      for (const char *p = sql; *p && k + 24 < sizeof literal; p++) {
        if (p[0] == '$' && p[1] == '1') {
          k += (size_t)snprintf(literal + k, sizeof literal - k, "%s", num);
          p++;
        } else {
          literal[k++] = *p;
        }
      }
      literal[k] = '\0';
      snprintf(ref, sizeof ref, "%s /* reference %zu %lld */", literal, i, (long long)v);
      char *want = rows_of(s, ref, INT64_MIN);
      TM_ASSERT_MSG(strcmp(want, "error") != 0, "%s", ref);
      TM_ASSERT_MSG(!strcmp(got, want), "%s with %lld:\n%s\nwritten in:\n%s", sql, (long long)v, got, want);
      /* The text itself: the second value's text has the first one's shape (direct_text with the
       * shape's key). */
      char *shaped = rows_of(s, literal, INT64_MIN);
      TM_ASSERT_MSG(!strcmp(shaped, want), "%s:\n%s\nread through the views:\n%s", literal, shaped, want);
      tm_free(got);
      tm_free(want);
      tm_free(shaped);
    }
    TM_ASSERT_MSG(tm_sql__kept_direct(s) == before + (cases[i].direct ? 1 : 0),
                  "%s: %s read directly", cases[i].sql, cases[i].direct ? "not" : "");
    /* Direct: the kept statement's two runs and the second text of the shape. */
    TM_ASSERT_MSG(tm_sql__direct_runs(s) - runs == (cases[i].direct ? 3u : 0u), "%s: %llu direct runs",
                  cases[i].sql, (unsigned long long)(tm_sql__direct_runs(s) - runs));
  }
  /* Replaced under its name (another engine, other rows), then removed: the kept statement is
   * prepared again, never answered from the old table. */
  const char *one = "SELECT count(*) FROM dv WHERE id >= $1";
  int rc;
  TM_ASSERT_INT_EQ(run_param(s, one, 15, &rc), 6); /* ids 0-20: three commits of 7 */
  tm_engine *c = open_events(TM_ENGINE_ARROW, "dv", false);
  load(c, 100, 4, 4);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, c, &err), &err);
  TM_ASSERT_INT_EQ(run_param(s, one, 15, &rc), 4);
  TM_ASSERT_OK(tm_sql_catalog_remove(cat, "dv", &err), &err);
  run_param(s, one, 15, &rc);
  TM_ASSERT_RC(rc, TM_EINVALID);
  /* A changes-mode dataset: its provenance columns stay hidden (its view is not the whole table). */
  tm_schema hs;
  events_schema(&hs);
  const char *prov[] = {"_tm_seq", "_tm_file", "_tm_pos"};
  for (int i = 0; i < 3; i++)
    TM_ASSERT_OK(tm_schema_add(&hs, prov[i], tm_type_of(TM_TYPE_INT64), false, 100 + i, &err), &err);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = tm_test_db();
  o.dataset = "hv";
  o.mode = TM_ENGINE_FILE;
  o.path = tm_test_path("hv");
  o.time_column = "ts";
  tm_engine *h;
  TM_ASSERT_OK(tm_engine_open(&h, TM_ENGINE_CAYENNE, &hs, &o, &err), &err);
  tm_schema_dispose(&hs);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, h, &err), &err);
  size_t before = tm_sql__kept_direct(s);
  char *hidden = rows_of(s, "SELECT * FROM hv WHERE id = $1", 1);
  TM_ASSERT_MSG(!strstr(hidden, "_tm_"), "provenance columns shown: %s", hidden);
  TM_ASSERT(tm_sql__kept_direct(s) <= before); /* not one more (one may be evicted: 16 kept) */
  tm_free(hidden);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(a);
  tm_engine_release(b);
  tm_engine_release(c);
  tm_engine_release(h);
}

/* ---- what Spice's query metrics are labelled with (SPEC 1.4, issue 17) -------------------- */

/* Runs sql and returns its rc; the message in err. */
static int run_rc(tm_sql_session *s, const char *sql, tm_error *err) {
  tm_buf b = TM_BUF_INIT(1 << 20);
  int rc = tm_sql_query(s, sql, TM_OUT_CSV, buf_sink, &b, NULL, err);
  tm_buf_dispose(&b);
  return rc;
}

TM_TEST(sql_spice_datasets_and_error_codes) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *a = open_events(TM_ENGINE_CAYENNE, "alpha", false);
  tm_engine *b = open_events(TM_ENGINE_DUCKDB, "Beta", false);
  load(a, 0, 4, 4);
  load(b, 0, 2, 2);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, a, &err), &err);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, b, &err), &err);
  TM_ASSERT_OK(tm_sql_catalog_add_view(cat, "clicks", "SELECT * FROM alpha WHERE kind = 'click'", &err),
               &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);

  /* `datasets`: what the statement reads, as the catalog spells it, distinct and sorted. */
  TM_ASSERT_OK(run_rc(s, "SELECT count(*) FROM BETA JOIN alpha USING (id) WHERE id IN "
                         "(SELECT id FROM alpha)", &err), &err);
  TM_ASSERT_STR_EQ(tm_sql_session_datasets(s), "Beta,alpha");
  TM_ASSERT_OK(run_rc(s, "SELECT count(*) FROM clicks", &err), &err);
  TM_ASSERT_STR_EQ(tm_sql_session_datasets(s), "clicks");
  TM_ASSERT_OK(run_rc(s, "WITH x AS (SELECT 1 AS one) SELECT * FROM x, range(3)", &err), &err);
  TM_ASSERT_STR_EQ(tm_sql_session_datasets(s), "");

  /* err_code as Spice names it. */
  int rc = run_rc(s, "SELEC 1", &err);
  TM_ASSERT_INT_EQ(rc, TM_EINVALID);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "SyntaxError");
  TM_ASSERT_STR_EQ(tm_sql_session_datasets(s), "");
  rc = run_rc(s, "SELECT nope FROM alpha", &err);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "QueryPlanningError");
  rc = run_rc(s, "SELECT * FROM nowhere", &err);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "QueryPlanningError");
  rc = run_rc(s, "DELETE FROM alpha", &err);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "QueryPlanningError");
  rc = run_rc(s, "SELECT * FROM read_csv('/etc/passwd')", &err);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "QueryPlanningError");
  rc = run_rc(s, "SELECT CAST('x' || kind AS INTEGER) FROM alpha", &err);
  TM_ASSERT_INT_EQ(rc, TM_EINVALID);
  TM_ASSERT_STR_EQ(tm_sql_error_code(rc, err.message), "QueryExecutionError");
  TM_ASSERT_STR_EQ(tm_sql_session_datasets(s), "alpha");
  TM_ASSERT_STR_EQ(tm_sql_error_code(TM_ETOOLARGE, "the query needs more memory"), "ResourcesExhausted");
  TM_ASSERT_STR_EQ(tm_sql_error_code(TM_ETIMEOUT, "time limit"), "QueryExecutionError");
  TM_ASSERT_STR_EQ(tm_sql_error_code(TM_EIO, NULL), "QueryExecutionError");
  TM_ASSERT_STR_EQ(tm_sql_error_code(TM_ENOMEM, "out of memory"), "InternalError");
  TM_ASSERT_STR_EQ(tm_sql_error_code(TM_EINVALID, ""), "QueryPlanningError");

  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(a);
  tm_engine_release(b);
}

TM_TEST(sql_c3_retention_condition_parsing) {
  tm_error err;
  char *w;
  TM_ASSERT_OK(tm_sql_retention_condition("DELETE FROM events WHERE status = 'void';", "events", &w, &err), &err);
  TM_ASSERT_STR_EQ(w, "status = 'void'");
  tm_free(w);
  TM_ASSERT_OK(tm_sql_retention_condition("  delete from \"Events\"\n where a < 3 and b is null", "events", &w, &err), &err);
  TM_ASSERT_STR_EQ(w, "a < 3 and b is null");
  tm_free(w);
  TM_ASSERT_OK(tm_sql_retention_condition("DELETE FROM main.[ev ents] WHERE x", "ev ents", &w, &err), &err);
  TM_ASSERT_STR_EQ(w, "x");
  tm_free(w);
  TM_ASSERT_OK(tm_sql_retention_condition("DELETE FROM my-events WHERE x", "my-events", &w, &err), &err);
  tm_free(w);
  TM_ASSERT_RC(tm_sql_retention_condition("DELETE FROM other WHERE x", "events", &w, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "not from the dataset");
  TM_ASSERT_RC(tm_sql_retention_condition("DELETE FROM events", "events", &w, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_sql_retention_condition("UPDATE events SET x = 1", "events", &w, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_sql_retention_condition("DELETE FROM events WHERE ;", "events", &w, &err), TM_EINVALID);
}

/* ---- pushdown into the sqlite engine -------------------------------------------------- */

typedef struct log_capture {
  tm_buf lines;
} log_capture;

static void capture(tm_log_level level, const char *line, void *payload) {
  (void)level;
  log_capture *c = payload;
  TM_ASSERT(tm_buf_puts(&c->lines, line, NULL) == TM_OK && tm_buf_putc(&c->lines, '\n', NULL) == TM_OK);
}

/* A query's WHERE terms reach SQLite (its index answers a point lookup), and the answer holds. */
TM_TEST(sql_c6_terms_reach_the_sqlite_engine) {
  tm_error err;
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, tm_test_db(), &err), &err);
  tm_engine *e = open_events(TM_ENGINE_SQLITE, "ev", true);
  load(e, 0, 5000, 2500);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  log_capture cap = {TM_BUF_INIT(1 << 20)};
  tm_log_set_level(TM_LOG_DEBUG);
  tm_log_set_sink(capture, &cap);
  char *out = query(s, "SELECT id, kind FROM ev WHERE id = 4322", TM_OUT_CSV);
  TM_ASSERT_STR_EQ(out, "id,kind\r\n4322,buy\r\n");
  tm_free(out);
  out = query(s, "SELECT count(*) FROM ev WHERE id >= 4990 AND kind = 'cart'", TM_OUT_CSV);
  TM_ASSERT_STR_EQ(out, "count_star()\r\n3\r\n");
  tm_free(out);
  /* A term of one side of a join is not pushed; the answer is still right. */
  out = query(s, "SELECT count(*) FROM ev a JOIN ev b ON a.id = b.id WHERE a.id < 10", TM_OUT_CSV);
  TM_ASSERT_STR_EQ(out, "count_star()\r\n10\r\n");
  tm_free(out);
  tm_log_set_sink(NULL, NULL);
  tm_log_set_level(TM_LOG_INFO);
  const char *log = tm_buf_cstr(&cap.lines);
  TM_ASSERT_CONTAINS(log, "sqlite scan: pushed [id = 4322]");
  TM_ASSERT_CONTAINS(log, "sqlite scan: pushed [id >= 4990 AND kind = cart]");
  tm_buf_dispose(&cap.lines);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(e);
}
