/*
 * fuzz_sql_gate.c - libFuzzer target for SQL text through the read-only SQL
 * session (engine/sql: DuckDB's parser and binder, the gate's statement and
 * table-function checks, pushdown extraction, the tm_scan of a sqlite
 * dataset and the rendering of every result type; SPEC 1.3, D2, D4).
 *
 * The first input byte picks the output format (table, CSV, JSON, JSON
 * lines); the rest is the query. Two small in-memory accelerations are
 * listed in the catalog: `t_sqlite` (sqlite engine, memory mode: a tm_scan)
 * and `t_arrow` (arrow engine: a DuckDB table), each holding the same 40
 * rows of an int64 key, a UTC timestamp, a date, a text, a decimal, a double
 * and a bool, with NULLs.
 *
 * Whatever the text, the query must end in rows or a clean error, and
 *   - never write: after each input a second session fingerprints both
 *     tables (row count, sums and every row's text) and the result must equal
 *     the one taken before fuzzing began;
 *   - never hang: the session's 100 ms time limit (the watchdog's
 *     interrupt) ends loops such as unbounded recursive CTEs with
 *     TM_ETIMEOUT, and the instance's 256 MiB memory limit ends single calls
 *     that build huge values;
 *   - render valid JSON: a JSON result must parse.
 * The session is reused across inputs, as the runtime reuses pooled sessions:
 * the shapes it remembers of texts that passed (session.c; an input that
 * differs from an earlier one in its numbers skips the parse-tree checks)
 * are under the same invariants.
 *
 * Seed corpus (fuzz/corpora/fuzz_sql_gate/): reads of both tables (filters
 * that push down, joins, aggregates, window functions, CTEs, nested values),
 * and the statements the gate must refuse: INSERT, UPDATE, DELETE, DDL,
 * ATTACH, COPY, SET, PRAGMA, INSTALL/LOAD, file-reading functions, several
 * statements, an endless recursive CTE.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "engine/sql.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ROWS 40
#define TIMEOUT_MS 100
#define OUTPUT_LIMIT ((size_t)4 << 20)

static tm_db *g_db;
static tm_sql_catalog *g_cat;
static tm_sql_session *g_fuzz;   /* runs the inputs */
static tm_sql_session *g_check;  /* fingerprints the tables */
static char *g_baseline;         /* the fingerprint before fuzzing */

static const char *const k_tables[] = {"t_sqlite", "t_arrow"};

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_sql_gate: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  abort();
}

static void check_ok(int rc, const tm_error *err) {
  if (rc != TM_OK) broken("setup", err->message);
}

static void schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  check_ok(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  check_ok(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err), &err);
  check_ok(tm_schema_add(s, "day", tm_type_of(TM_TYPE_DATE32), true, 3, &err), &err);
  check_ok(tm_schema_add(s, "kind", tm_type_of(TM_TYPE_UTF8), true, 4, &err), &err);
  check_ok(tm_schema_add(s, "amount", tm_type_decimal(10, 2), true, 5, &err), &err);
  check_ok(tm_schema_add(s, "score", tm_type_of(TM_TYPE_FLOAT64), true, 6, &err), &err);
  check_ok(tm_schema_add(s, "ok", tm_type_of(TM_TYPE_BOOL), true, 7, &err), &err);
}

static void rows(tm_batch *out) {
  static const char *const kinds[] = {"click", "view", "buy", "ca\"rt", "\xc3\xa9t\xc3\xa9"};
  tm_error err;
  tm_schema s;
  schema(&s);
  tm_batch_builder bb;
  check_ok(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = 0; i < ROWS; i++) {
    int64_t ts = INT64_C(1717200000000000) + i * INT64_C(90000000);
    check_ok(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    check_ok(tm_colbuilder_append_int(&bb.cols[1], ts, &err), &err);
    check_ok(tm_colbuilder_append_int(&bb.cols[2], ts / INT64_C(86400000000), &err), &err);
    if (i % 9 == 4) check_ok(tm_colbuilder_append_null(&bb.cols[3], &err), &err);
    else
      check_ok(tm_colbuilder_append_bytes(&bb.cols[3], kinds[i % 5], strlen(kinds[i % 5]), &err),
               &err);
    uint8_t d[16];
    __int128 x = (i * 37) % 1000 - 300;
    memcpy(d, &x, 16);
    check_ok(tm_colbuilder_append_decimal(&bb.cols[4], d, &err), &err);
    if (i % 7 == 3) check_ok(tm_colbuilder_append_null(&bb.cols[5], &err), &err);
    else check_ok(tm_colbuilder_append_double(&bb.cols[5], (double)i / 3.0, &err), &err);
    check_ok(tm_colbuilder_append_bool(&bb.cols[6], i % 2 == 0, &err), &err);
  }
  check_ok(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

static void add_table(tm_engine_kind kind, const char *name) {
  tm_error err;
  tm_schema s;
  schema(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = g_db;
  o.dataset = name;
  o.mode = TM_ENGINE_MEMORY;
  o.time_column = "ts";
  tm_engine *e;
  check_ok(tm_engine_open(&e, kind, &s, &o, &err), &err);
  tm_schema_dispose(&s);
  tm_batch b;
  rows(&b);
  tm_engine_txn *t;
  check_ok(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  check_ok(tm_engine_txn_write(t, &b, &err), &err);
  check_ok(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
  tm_batch_release(&b);
  check_ok(tm_sql_catalog_add(g_cat, e, &err), &err);
  tm_engine_release(e);
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Both tables' row counts and contents, as one string (caller frees). */
static char *fingerprint(void) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  for (size_t i = 0; i < sizeof k_tables / sizeof k_tables[0]; i++) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*), sum(id), sum(score), string_agg(id || '|' || coalesce(ts::VARCHAR, '') "
             "|| '|' || coalesce(kind, '') || '|' || coalesce(amount::VARCHAR, '') || '|' || ok, ';' "
             "ORDER BY id) FROM %s",
             k_tables[i]);
    if (tm_sql_query(g_check, sql, TM_OUT_CSV, buf_sink, &out, NULL, &err) != TM_OK)
      broken("the fingerprint query failed", err.message);
  }
  return tm_buf_take(&out, NULL);
}

static void teardown(void) {
  tm_sql_session_free(g_fuzz);
  tm_sql_session_free(g_check);
  tm_sql_catalog_free(g_cat);
  tm_db_release(g_db);
  tm_free(g_baseline);
}

static void setup(void) {
  tm_error err;
  tm_db_options o;
  tm_db_options_init(&o);
  o.threads = 1;
  o.memory_limit = (int64_t)256 << 20;
  check_ok(tm_db_open(&g_db, &o, &err), &err);
  check_ok(tm_sql_catalog_new(&g_cat, g_db, &err), &err);
  add_table(TM_ENGINE_SQLITE, k_tables[0]);
  add_table(TM_ENGINE_ARROW, k_tables[1]);
  check_ok(tm_sql_session_new(&g_fuzz, g_cat, &err), &err);
  check_ok(tm_sql_session_new(&g_check, g_cat, &err), &err);
  tm_sql_session_set_timeout(g_fuzz, TIMEOUT_MS);
  g_baseline = fingerprint();
  if (!strstr(g_baseline, "40,")) broken("the tables do not hold their rows", g_baseline);
  atexit(teardown);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_cat) setup();
  if (size == 0) return 0;
  static const tm_out_format formats[] = {TM_OUT_TABLE, TM_OUT_CSV, TM_OUT_JSON, TM_OUT_JSONL};
  tm_out_format fmt = formats[data[0] % 4];
  char *sql = tm_malloc(size);
  if (!sql) return 0;
  memcpy(sql, data + 1, size - 1);
  sql[size - 1] = '\0';
  tm_buf out = TM_BUF_INIT(OUTPUT_LIMIT);
  tm_error err;
  tm_error_init(&err);
  int rc = tm_sql_query(g_fuzz, sql, fmt, buf_sink, &out, NULL, &err);
  if (rc != TM_OK && !err.message[0]) broken("an error without a message", sql);
  if (getenv("TM_FUZZ_VERBOSE")) /* to see what a corpus reaches */
    fprintf(stderr, "%.80s -> %s\n", sql, rc == TM_OK ? "ok" : err.message);
  if (rc == TM_OK && fmt == TM_OUT_JSON) {
    json_error_t jerr;
    json_t *j = json_loadb(out.ptr ? out.ptr : "", out.len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &jerr); /* JSON numbers may pass int64 (UBIGINT, HUGEINT) */
    if (!j) broken("a JSON result that does not parse", jerr.text);
    json_decref(j);
  }
  tm_buf_dispose(&out);
  char *now = fingerprint();
  if (strcmp(now, g_baseline) != 0) broken("a query changed the tables", sql);
  tm_free(now);
  tm_free(sql);
  return 0;
}
