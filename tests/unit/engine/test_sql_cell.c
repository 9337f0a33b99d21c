/*
 * Unit tests for typed access to results (engine/sql/cell.c, sql.h
 * tm_sql_type; issue 20): each DuckDB type's kind, the values of the kinds
 * that have one (timestamps of every unit in microseconds, dates in days,
 * the infinities kept), BLOB parameters, and tm_sql_describe: parameters and
 * columns known without running, the read-only gate applied.
 */
#include <stdint.h>
#include <string.h>

#include "engine/sql.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_sql_session *session(tm_sql_catalog **cat) {
  tm_error err;
  TM_ASSERT_OK(tm_sql_catalog_new(cat, tm_test_db(), &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, *cat, &err), &err);
  return s;
}

TM_TEST(sql_cell_kinds_and_values) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  tm_error err;
  tm_sql_stmt *st;
  TM_ASSERT_OK(tm_sql_prepare(s,
                              "SELECT true AS b, 7::TINYINT AS t, 300::USMALLINT AS us, "
                              "-5::BIGINT AS i, 2.5::FLOAT AS f, 1.25::DECIMAL(5,2) AS m, "
                              "'hé' AS v, '\\x00\\xff'::BLOB AS y, DATE '1970-01-03' AS d, "
                              "TIME '00:00:01.5' AS tt, "
                              "TIMESTAMP_S '1970-01-01 00:00:02' AS ts_s, "
                              "TIMESTAMP_NS '1969-12-31 23:59:59.9999995' AS ts_ns, "
                              "TIMESTAMPTZ '1970-01-01 00:00:01+00' AS tz, "
                              "'infinity'::TIMESTAMP AS inf, uuid() AS u, [1] AS l, "
                              "INTERVAL 1 DAY AS iv",
                              &st, &err),
               &err);
  TM_ASSERT_OK(tm_sql_step(st, &err), &err);
  static const tm_sql_type want[] = {
      TM_SQLT_BOOL,      TM_SQLT_INT16,     TM_SQLT_INT32,       TM_SQLT_INT64, TM_SQLT_FLOAT32,
      TM_SQLT_NUMERIC,   TM_SQLT_TEXT,      TM_SQLT_BLOB,        TM_SQLT_DATE,  TM_SQLT_TIME,
      TM_SQLT_TIMESTAMP, TM_SQLT_TIMESTAMP, TM_SQLT_TIMESTAMPTZ, TM_SQLT_TIMESTAMP,
      TM_SQLT_UUID,      TM_SQLT_NESTED,    TM_SQLT_INTERVAL};
  TM_ASSERT_INT_EQ(tm_sql_column_count(st), sizeof want / sizeof want[0]);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    TM_ASSERT_MSG(tm_sql_column_type(st, i) == want[i], "column %zu: kind %d, want %d", i,
                  (int)tm_sql_column_type(st, i), (int)want[i]);
  tm_sql_value v;
  TM_ASSERT(tm_sql_column_value(st, 0, &v) && v.i == 1);
  TM_ASSERT(tm_sql_column_value(st, 1, &v) && v.i == 7);
  TM_ASSERT(tm_sql_column_value(st, 2, &v) && v.i == 300);
  TM_ASSERT(tm_sql_column_value(st, 3, &v) && v.i == -5);
  TM_ASSERT(tm_sql_column_value(st, 4, &v) && v.d == 2.5);
  TM_ASSERT(!tm_sql_column_value(st, 5, &v)); /* numeric: rendered only */
  TM_ASSERT(tm_sql_column_value(st, 6, &v) && v.len == 3 && memcmp(v.ptr, "h\xc3\xa9", 3) == 0);
  TM_ASSERT(tm_sql_column_value(st, 7, &v) && v.len == 2 && (unsigned char)v.ptr[1] == 0xff);
  TM_ASSERT(tm_sql_column_value(st, 8, &v) && v.i == 2);
  TM_ASSERT(tm_sql_column_value(st, 9, &v) && v.i == 1500000);
  TM_ASSERT(tm_sql_column_value(st, 10, &v) && v.i == 2000000);
  TM_ASSERT_MSG(tm_sql_column_value(st, 11, &v) && v.i == -1, "ns floor: %lld", (long long)v.i);
  TM_ASSERT(tm_sql_column_value(st, 12, &v) && v.i == 1000000);
  TM_ASSERT(tm_sql_column_value(st, 13, &v) && v.i == INT64_MAX);
  TM_ASSERT(!tm_sql_column_value(st, 14, &v));
  TM_ASSERT(tm_sql_column_type(st, 99) == TM_SQLT_OTHER);
  tm_sql_stmt_free(st);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

TM_TEST(sql_describe_without_running) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  tm_error err;
  tm_sql_shape sh;
  TM_ASSERT_OK(tm_sql_describe(s, "SELECT $1::INTEGER + 1 AS a, $2::VARCHAR || 'x' AS b, 1.5 AS c",
                               &sh, &err),
               &err);
  TM_ASSERT_INT_EQ(sh.n_params, 2);
  TM_ASSERT_INT_EQ(sh.n_cols, 3);
  TM_ASSERT(!sh.cols_unknown);
  TM_ASSERT_STR_EQ(sh.col_names[0], "a");
  TM_ASSERT_STR_EQ(sh.col_names[2], "c");
  TM_ASSERT(sh.col_types[0] == TM_SQLT_INT32);
  TM_ASSERT(sh.col_types[1] == TM_SQLT_TEXT);
  TM_ASSERT(sh.col_types[2] == TM_SQLT_NUMERIC);
  TM_ASSERT(sh.param_types[0] == TM_SQLT_INT32);
  tm_sql_shape_dispose(&sh);
  /* Columns that wait for the values' types: not described, and said so. */
  TM_ASSERT_OK(tm_sql_describe(s, "SELECT $1 || 'x' AS b, 2 AS c", &sh, &err), &err);
  TM_ASSERT_INT_EQ(sh.n_params, 1);
  TM_ASSERT(sh.cols_unknown);
  TM_ASSERT_INT_EQ(sh.n_cols, 0);
  tm_sql_shape_dispose(&sh);
  /* The gate holds: a write is refused, and nothing ran. */
  TM_ASSERT_RC(tm_sql_describe(s, "CREATE TABLE t AS SELECT 1", &sh, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "read-only");
  TM_ASSERT_RC(tm_sql_describe(s, "SELECT * FROM nope", &sh, &err), TM_EINVALID);
  /* A BLOB parameter is bound as bytes, NULs included. */
  tm_sql_param item = {.kind = TM_SQL_PARAM_BLOB, .text = "a\0b", .text_len = 3};
  tm_sql_params p = {.items = &item, .n = 1};
  tm_sql_stmt *st;
  TM_ASSERT_OK(tm_sql_prepare_params(s, "SELECT octet_length($1::BLOB) AS n", &p, &st, &err), &err);
  TM_ASSERT_OK(tm_sql_step(st, &err), &err);
  tm_sql_value v;
  TM_ASSERT(tm_sql_column_value(st, 0, &v) && v.i == 3);
  tm_sql_stmt_free(st);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}
