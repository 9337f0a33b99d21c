/*
 * Unit tests for the feed (engine/db/feed.c): batches into a DuckDB table
 * through one INSERT over an Arrow stream, stored on DuckDB's threads (SPEC
 * D1: the rows commit with the caller's transaction, or not at all).
 *
 *   - every batch arrives, in order (rowid order is arrival order), across
 *     batches of uneven sizes, on two DuckDB threads;
 *   - the values DuckDB's Arrow scan would take on trust are refused with
 *     their column and row, and the feed goes on;
 *   - a failing INSERT reaches the caller (put or finish), and a cancelled
 *     feed leaves nothing once the transaction rolls back;
 *   - nanosecond times (which the Arrow scan would narrow) keep every digit;
 *   - the stream's view never outlives the feed.
 */
#include <string.h>

#include "engine/engine_int.h"
#include "tm_test.h"
#include "util/alloc.h"

typedef struct duck {
  duckdb_database db;
  duckdb_connection con;
} duck;

static void duck_open(duck *d) {
  duckdb_config cfg;
  TM_ASSERT(duckdb_create_config(&cfg) == DuckDBSuccess);
  TM_ASSERT(duckdb_set_config(cfg, "threads", "2") == DuckDBSuccess);
  char *msg = NULL;
  TM_ASSERT_MSG(duckdb_open_ext(NULL, &d->db, cfg, &msg) == DuckDBSuccess, "open: %s", msg);
  duckdb_destroy_config(&cfg);
  TM_ASSERT(duckdb_connect(d->db, &d->con) == DuckDBSuccess);
}

static void duck_close(duck *d) {
  duckdb_disconnect(&d->con);
  duckdb_close(&d->db);
}

static void run(duck *d, const char *sql) {
  duckdb_result r;
  TM_ASSERT_MSG(duckdb_query(d->con, sql, &r) == DuckDBSuccess, "%s: %s", sql, duckdb_result_error(&r));
  duckdb_destroy_result(&r);
}

static int64_t count(duck *d, const char *sql) {
  duckdb_result r;
  TM_ASSERT_MSG(duckdb_query(d->con, sql, &r) == DuckDBSuccess, "%s: %s", sql, duckdb_result_error(&r));
  int64_t n = duckdb_value_int64(&r, 0, 0);
  duckdb_destroy_result(&r);
  return n;
}

static void text_of(duck *d, const char *sql, char *out, size_t cap) {
  duckdb_result r;
  TM_ASSERT_MSG(duckdb_query(d->con, sql, &r) == DuckDBSuccess, "%s: %s", sql, duckdb_result_error(&r));
  char *v = duckdb_value_varchar(&r, 0, 0);
  snprintf(out, cap, "%s", v ? v : "(null)");
  if (v) duckdb_free(v);
  duckdb_destroy_result(&r);
}

static void schema_of(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "s", tm_type_of(TM_TYPE_UTF8), true, -1, &err), &err);
}

/* Rows id = first .. first + n - 1, s = "v<id>" (NULL every 7th; bad: row 1 is not UTF-8). */
static void rows_of(tm_batch *b, int64_t first, int64_t n, bool bad) {
  tm_error err;
  tm_schema s;
  schema_of(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = 0; i < n; i++) {
    int64_t id = first + i;
    TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), id, &err), &err);
    char text[32];
    int len = snprintf(text, sizeof text, "v%lld", (long long)id);
    if (bad && i == 1) len = snprintf(text, sizeof text, "x\xc3(");
    if (id % 7 == 3) TM_ASSERT_OK(tm_colbuilder_append_null(tm_batch_builder_col(&bb, 1), &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_bytes(tm_batch_builder_col(&bb, 1), text, (size_t)len, &err), &err);
  }
  tm_batch_init(b);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

/* Opens a transaction and a feed into memory.main.t, whose batches have schema s. */
static tm_duck_feed *begin_feed(duck *d, const tm_schema *s) {
  tm_error err;
  tm_error_init(&err);
  run(d, "BEGIN TRANSACTION");
  tm_duck_feed *f = NULL;
  TM_ASSERT_OK(tm_duck_feed_start(d->con, "memory.main", "memory.main.t", s, &f, &err), &err);
  return f;
}

static int64_t views(duck *d) {
  return count(d, "SELECT count(*) FROM duckdb_views() WHERE view_name LIKE '_tm_feed%'");
}

TM_TEST(feed_stores_every_batch_in_arrival_order) {
  duck d;
  duck_open(&d);
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  schema_of(&s);
  run(&d, "CREATE TABLE t (id BIGINT, s VARCHAR)");
  tm_duck_feed *f = begin_feed(&d, &s);
  /* Uneven sizes: vectors and row groups straddle batches. */
  int64_t sizes[] = {1, 2047, 2049, 65536, 100000, 3, 130000, 77}, total = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    tm_batch b;
    rows_of(&b, total, sizes[k], false);
    TM_ASSERT_OK(tm_duck_feed_put(f, &b, &err), &err);
    TM_ASSERT(b.array.release == NULL); /* taken */
    tm_batch_release(&b);
    total += sizes[k];
  }
  int64_t stored = -1;
  TM_ASSERT_OK(tm_duck_feed_finish(f, &stored, &err), &err);
  TM_ASSERT_INT_EQ(stored, total);
  TM_ASSERT_INT_EQ(views(&d), 0);
  run(&d, "COMMIT");
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t"), total);
  /* rowid order is the arrival order, and every value is the one given. */
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM (SELECT rowid AS r, id FROM t) WHERE r <> id"), 0);
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t WHERE s IS DISTINCT FROM "
                             "CASE WHEN id % 7 = 3 THEN NULL ELSE 'v' || id END"), 0);
  tm_schema_dispose(&s);
  duck_close(&d);
}

TM_TEST(feed_refuses_what_duckdb_would_take_on_trust_and_goes_on) {
  duck d;
  duck_open(&d);
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  schema_of(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "ts", tm_type_timestamp(TM_UNIT_SECOND, true), true, -1, &err), &err);
  run(&d, "CREATE TABLE t (id BIGINT, s VARCHAR, ts TIMESTAMPTZ)");
  tm_duck_feed *f = begin_feed(&d, &s);
  for (int k = 0; k < 4; k++) {
    tm_batch two;
    rows_of(&two, k * 10, 3, k == 1);
    tm_batch b;
    tm_batch_init(&b);
    struct ArrowArray cols[3];
    TM_ASSERT_OK(tm_batch_take_column(&two, 0, &cols[0], &err), &err);
    TM_ASSERT_OK(tm_batch_take_column(&two, 1, &cols[1], &err), &err);
    tm_value v = {.type = TM_TYPE_TIMESTAMP, .v.i = k == 2 ? INT64_C(9300000000000000) : 86400 * k};
    TM_ASSERT_OK(tm_array_make_constant(s.cols[2].type, &v, 3, &cols[2], &err), &err);
    TM_ASSERT_OK(tm_batch_from_arrays(&b, &s, cols, 3, &err), &err);
    tm_batch_release(&two);
    int rc = tm_duck_feed_put(f, &b, &err);
    TM_ASSERT(b.array.release == NULL); /* dropped or taken */
    if (k == 1) {
      TM_ASSERT_RC(rc, TM_ECORRUPT);
      TM_ASSERT_CONTAINS(err.message, "column 's', row 1: a text value is not valid UTF-8");
    } else if (k == 2) {
      TM_ASSERT_RC(rc, TM_EINVALID);
      TM_ASSERT_CONTAINS(err.message, "column 'ts', row 0: timestamp 9300000000000000 s is outside");
    } else {
      TM_ASSERT_OK(rc, &err);
    }
  }
  int64_t stored = -1;
  TM_ASSERT_OK(tm_duck_feed_finish(f, &stored, &err), &err);
  TM_ASSERT_INT_EQ(stored, 6);
  run(&d, "COMMIT");
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t WHERE id IN (0, 1, 2, 30, 31, 32)"), 6);
  TM_ASSERT_INT_EQ(count(&d, "SELECT epoch(max(ts))::BIGINT FROM t"), 3 * 86400);
  tm_schema_dispose(&s);
  duck_close(&d);
}

TM_TEST(feed_reports_a_failing_insert_and_a_cancel_leaves_nothing) {
  duck d;
  duck_open(&d);
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  schema_of(&s);
  run(&d, "CREATE TABLE t (id BIGINT, s VARCHAR NOT NULL)");
  tm_duck_feed *f = begin_feed(&d, &s);
  /* Row 3 has a NULL s: the INSERT fails, at a later put or at the finish. */
  int rc = TM_OK;
  for (int k = 0; k < 50 && rc == TM_OK; k++) {
    tm_batch b;
    rows_of(&b, k * 10, 10, false);
    rc = tm_duck_feed_put(f, &b, &err);
    tm_batch_release(&b);
  }
  if (rc == TM_OK) rc = tm_duck_feed_finish(f, NULL, &err);
  else tm_duck_feed_cancel(f);
  TM_ASSERT_RC(rc, TM_ERROR);
  TM_ASSERT_CONTAINS(err.message, "DuckDB insert: ");
  TM_ASSERT_CONTAINS(err.message, "NOT NULL");
  run(&d, "ROLLBACK");
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t"), 0);
  TM_ASSERT_INT_EQ(views(&d), 0);

  /* A cancel in the middle of a healthy feed. */
  f = begin_feed(&d, &s);
  tm_batch b;
  rows_of(&b, 4, 2, false);
  TM_ASSERT_OK(tm_duck_feed_put(f, &b, &err), &err);
  tm_duck_feed_cancel(f);
  run(&d, "ROLLBACK");
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t"), 0);
  TM_ASSERT_INT_EQ(views(&d), 0);
  tm_schema_dispose(&s);
  duck_close(&d);
}

TM_TEST(feed_keeps_every_digit_of_nanosecond_times) {
  duck d;
  duck_open(&d);
  tm_error err;
  tm_error_init(&err);
  tm_type tn = tm_type_of(TM_TYPE_TIME64);
  tn.unit = TM_UNIT_NANO;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "t", tn, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "ts", tm_type_timestamp(TM_UNIT_NANO, true), true, -1, &err), &err);
  run(&d, "CREATE TABLE t (t TIME_NS, ts TIMESTAMP_NS)");
  tm_duck_feed *f = begin_feed(&d, &s);
  int64_t times[] = {INT64_C(45296123456789), 0, INT64_C(86399999999999), 1};
  for (int k = 0; k < 2; k++) {
    tm_batch_builder bb;
    TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
    for (int i = 0; i < 4; i++) {
      if (k == 1 && i == 3) {
        TM_ASSERT_OK(tm_colbuilder_append_null(tm_batch_builder_col(&bb, 0), &err), &err);
      } else {
        TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), times[i], &err), &err);
      }
      TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), INT64_C(1700000000123456789) + i,
                                            &err), &err);
    }
    tm_batch b;
    tm_batch_init(&b);
    TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
    tm_batch_builder_dispose(&bb);
    TM_ASSERT_OK(tm_duck_feed_put(f, &b, &err), &err);
  }
  /* A time past a day is refused, not wrapped. */
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), INT64_C(86400000000001), &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), 0, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  TM_ASSERT_RC(tm_duck_feed_put(f, &b, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "column 't', row 0: time 86400000000001 ns is not within a day");
  TM_ASSERT_OK(tm_duck_feed_finish(f, NULL, &err), &err);
  run(&d, "COMMIT");
  char text[128];
  text_of(&d, "SELECT string_agg(t::VARCHAR, ',' ORDER BY rowid) FROM t", text, sizeof text);
  TM_ASSERT_STR_EQ(text, "12:34:56.123456789,00:00:00,23:59:59.999999999,00:00:00.000000001,"
                         "12:34:56.123456789,00:00:00,23:59:59.999999999");
  TM_ASSERT_INT_EQ(count(&d, "SELECT count(*) FROM t WHERE t IS NULL"), 1);
  text_of(&d, "SELECT max(ts)::VARCHAR FROM t", text, sizeof text);
  TM_ASSERT_STR_EQ(text, "2023-11-14 22:13:20.123456792");
  tm_schema_dispose(&s);
  duck_close(&d);
}

/* Issue 16: nanosecond times inside structs, lists and maps travel as text too, and DuckDB
 * casts them into the table's TIME_NS members exactly; a bad one inside is refused by row. */
TM_TEST(feed_keeps_nanosecond_times_inside_nested_values) {
  duck d;
  duck_open(&d);
  tm_error err;
  tm_error_init(&err);
  tm_type tn = tm_type_of(TM_TYPE_TIME64);
  tn.unit = TM_UNIT_NANO;
  tm_type i64 = tm_type_of(TM_TYPE_INT64), st, lt, mt, key = tm_type_of(TM_TYPE_UTF8);
  const char *names[2] = {"t", "k"};
  tm_type kids[2] = {tn, i64};
  bool nl[2] = {true, true};
  TM_ASSERT_OK(tm_type_struct(2, names, kids, nl, &st, &err), &err);
  TM_ASSERT_OK(tm_type_list(&tn, true, &lt, &err), &err);
  TM_ASSERT_OK(tm_type_map(&key, &tn, true, &mt, &err), &err);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "s", st, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "l", lt, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "m", mt, true, -1, &err), &err);
  run(&d, "CREATE TABLE t (s STRUCT(t TIME_NS, k BIGINT), l TIME_NS[], m MAP(VARCHAR, TIME_NS))");
  tm_duck_feed *f = begin_feed(&d, &s);
  int64_t times[] = {INT64_C(45296123456789), 1, INT64_C(86399999999999)};
  for (int bad = 0; bad < 2; bad++) {
    tm_batch_builder bb;
    TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
    tm_colbuilder *cs = tm_batch_builder_col(&bb, 0), *cl = tm_batch_builder_col(&bb, 1),
                  *cm = tm_batch_builder_col(&bb, 2);
    for (int i = 0; i < 3; i++) {
      int64_t x = bad && i == 2 ? INT64_C(86400000000001) : times[i];
      TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(cs, 0), x, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(cs, 1), i, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_nested(cs, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(cl, 0), x, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_null(tm_colbuilder_child(cl, 0), &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_nested(cl, &err), &err);
      tm_colbuilder *entry = tm_colbuilder_child(cm, 0);
      TM_ASSERT_OK(tm_colbuilder_append_bytes(tm_colbuilder_child(entry, 0), "a", 1, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(entry, 1), x, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_nested(entry, &err), &err);
      TM_ASSERT_OK(tm_colbuilder_append_nested(cm, &err), &err);
    }
    tm_batch b;
    tm_batch_init(&b);
    TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
    tm_batch_builder_dispose(&bb);
    if (!bad) {
      TM_ASSERT_OK(tm_duck_feed_put(f, &b, &err), &err);
    } else {
      TM_ASSERT_RC(tm_duck_feed_put(f, &b, &err), TM_EINVALID);
      TM_ASSERT_CONTAINS(err.message, "column 's', row 2: time 86400000000001 ns is not within a day");
    }
  }
  TM_ASSERT_OK(tm_duck_feed_finish(f, NULL, &err), &err);
  run(&d, "COMMIT");
  char text[512];
  text_of(&d, "SELECT string_agg(s::VARCHAR || l::VARCHAR || m::VARCHAR, ';' ORDER BY s.k) FROM t",
          text, sizeof text);
  TM_ASSERT_STR_EQ(text, "{'t': '12:34:56.123456789', 'k': 0}['12:34:56.123456789', NULL]"
                         "{a='12:34:56.123456789'};"
                         "{'t': '00:00:00.000000001', 'k': 1}['00:00:00.000000001', NULL]"
                         "{a='00:00:00.000000001'};"
                         "{'t': '23:59:59.999999999', 'k': 2}['23:59:59.999999999', NULL]"
                         "{a='23:59:59.999999999'}");
  /* Stored as TIME_NS, every digit: a time's own text, and its order. */
  text_of(&d, "SELECT any_value(typeof(s.t)) || ' ' || max(s.t)::VARCHAR || ' ' || min(l[1])::VARCHAR "
          "FROM t", text, sizeof text);
  TM_ASSERT_STR_EQ(text, "TIME_NS 23:59:59.999999999 00:00:00.000000001");
  tm_schema_dispose(&s);
  duck_close(&d);
}
