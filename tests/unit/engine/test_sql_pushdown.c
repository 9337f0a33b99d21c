/*
 * Unit tests for the WHERE-clause pushdown (engine/sql/pushdown.c; SPEC C6,
 * A10). The terms it extracts prune files, row groups and rows before DuckDB
 * sees them, so one wrong term is a wrong answer. Two properties:
 *
 *   - soundness, differentially: over a table of edge values (NULLs, NaN,
 *     ±Inf, -0.0, integers past 2^53 and past int32, decimals, case and
 *     Unicode, timestamps a microsecond either side of midnight, dates), for
 *     each of many WHERE clauses, every row DuckDB's answer holds is kept by
 *     the extracted predicate (tm_predicate_eval on the same rows);
 *   - reach: the plain forms are pushed (their descriptions below), and the
 *     forms that are not constants compared with a column are not.
 */
#include <string.h>

#include "engine/db.h"
#include "engine/engine_int.h"
#include "engine/sql/sql_int.h"
#include "format/predicate.h"
#include "tm_test.h"
#include "util/alloc.h"

#define N_ROWS 2400

static void schema_of(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "n", tm_type_of(TM_TYPE_INT64), true, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "i", tm_type_of(TM_TYPE_INT32), true, 3, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "x", tm_type_of(TM_TYPE_FLOAT64), true, 4, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "amt", tm_type_decimal(12, 2), true, 5, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "v", tm_type_of(TM_TYPE_UTF8), true, 6, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, false), true, 7, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "tz", tm_type_timestamp(TM_UNIT_MICRO, true), true, 8, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "d", tm_type_of(TM_TYPE_DATE32), true, 9, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "b", tm_type_of(TM_TYPE_BOOL), true, 10, &err), &err);
}

/* Each column cycles through its edge values with its own stride. */
static const char *const k_table =
    "CREATE TEMP TABLE ev AS SELECT id, "
    "  [NULL, 0, 1, -1, 5, 9007199254740993, -9223372036854775808, 9223372036854775807, 100]"
    "    [(id * 7) % 9 + 1] AS n, "
    "  ([NULL, 0, 5, -5, 2147483647, -2147483648, 9, 10]::INTEGER[])[(id * 5) % 8 + 1] AS i, "
    "  [NULL, 0.0, -0.0, 1.5, 2.5, 'NaN'::DOUBLE, 'inf'::DOUBLE, '-inf'::DOUBLE, 0.1, "
    "   9007199254740992.0, -1e308, 1e-300][(id * 11) % 12 + 1] AS x, "
    "  ([NULL, 0.00, 0.01, -0.01, 1.50, 1.00, -99.99, 9999999999.99, 0.10]::DECIMAL(12,2)[])"
    "    [(id * 13) % 9 + 1] AS amt, "
    "  [NULL, '', 'a', 'A', 'abc', 'abd', 'B', 'b', 'é', 'e', 'a ', 'z\xc3\xbf', '5']"
    "    [(id * 3) % 13 + 1] AS v, "
    "  [NULL, TIMESTAMP '2024-01-01 00:00:00', TIMESTAMP '2023-12-31 23:59:59.999999', "
    "   TIMESTAMP '2024-01-01 00:00:00.000001', TIMESTAMP '1969-12-31 23:59:59.5', "
    "   TIMESTAMP '2024-02-29 12:00:00', TIMESTAMP '2024-01-02 00:00:00']"
    "    [(id * 17) % 7 + 1] AS ts, "
    "  [NULL, TIMESTAMPTZ '2024-01-01 00:00:00+00', TIMESTAMPTZ '2023-12-31 22:00:00+00', "
    "   TIMESTAMPTZ '2023-12-31 21:59:59.999999+00', TIMESTAMPTZ '2024-01-01 00:00:00.000001+00']"
    "    [(id * 19) % 5 + 1] AS tz, "
    "  [NULL, DATE '2024-01-01', DATE '2023-12-31', DATE '2024-02-29', DATE '1970-01-01', "
    "   DATE '2024-01-02'][(id * 23) % 6 + 1] AS d, "
    "  [NULL, true, false][(id * 29) % 3 + 1] AS b "
    "FROM range(2400) t(id)";

/* WHERE clauses over the table: plain, edge-valued, and not pushable. */
static const char *const k_where[] = {
    "id = 5", "5 = id", "id > 100", "100 < id", "id >= 1.0", "id = 2.5", "id < 2.5",
    "id IN (1, 2, 3)", "id BETWEEN 10 AND 20", "id IS NOT NULL", "id = '5'", "id + 0 = 5",
    "n IS NULL", "n = 9007199254740993", "n > 9007199254740992.0", "n < -9223372036854775807",
    "n = 9223372036854775807", "n >= 9223372036854775808", "n IN (0, NULL)", "n = NULL",
    "n <> 5", "NOT (n = 5)", "n = 5 OR n = 0", "n IN (SELECT 5)", "n = -0.0",
    "i = 2147483648", "i = 2147483647", "i > -2147483649", "i = 9.0", "i < 9.5", "i BETWEEN 5 AND 9",
    "x = 'NaN'::DOUBLE", "x > 0", "x = 0", "x = -0.0", "x < 0", "x >= '-inf'::DOUBLE",
    "x > 'inf'::DOUBLE", "x IN (1.5, 2.5)", "x = 0.1", "x = 0.1::FLOAT", "x > 9007199254740993",
    "x = 9007199254740992", "x < -1e307", "x > 1e-301", "x IS NULL", "x <> x", "x = x",
    "amt = 1.5", "amt = 1", "amt > 0.005", "amt >= 0.01", "amt < -99.99", "amt = 0.1::DOUBLE",
    "amt = 0.10", "amt IN (0, 1.50)", "amt BETWEEN -0.01 AND 0.01", "amt > 9999999999.989",
    "v = 'abc'", "v > 'B'", "v < 'a'", "v >= ''", "v = ''", "v IN ('a', 'b', 'z')", "v = 'é'",
    "v > 'e'", "v = 'a '", "v = 'a'", "v ILIKE 'a%'", "v LIKE 'ab%'",
    "v >= 'a' AND v < 'b'", "v COLLATE NOCASE = 'a'", "lower(v) = 'a'", "v IS NOT NULL",
    "ts >= TIMESTAMP '2024-01-01'", "ts >= '2024-01-01'", "ts > '2024-01-01 00:00:00'",
    "ts < '2024-01-01 00:00:00.000001'", "ts <= '2023-12-31 23:59:59.9999995'",
    "ts > '2023-12-31 23:59:59.9999999'", "ts = '2024-01-01T00:00:00'",
    "ts < DATE '2024-01-02'", "ts >= DATE '2024-01-02'", "ts = '2024-02-29 12:00'",
    "ts BETWEEN '2024-01-01' AND '2024-01-02'", "ts < TIMESTAMP '1970-01-01'",
    "ts > TIMESTAMP '2024-01-01' + INTERVAL 1 DAY", "ts > now()", "ts IN ('2024-01-01', '2024-01-02')",
    "ts = TIMESTAMPTZ '2024-01-01 00:00:00+00'", "ts > TIMESTAMP_NS '2023-12-31 23:59:59.999999001'",
    "tz >= TIMESTAMPTZ '2024-01-01 00:00:00+02'", "tz = '2024-01-01 00:00:00'",
    "tz = '2024-01-01 00:00:00Z'", "tz > '2023-12-31 22:00:00+00'", "tz < '2024-01-01T02:00:00+02:00'",
    "tz = TIMESTAMP '2024-01-01 00:00:00'", "tz >= DATE '2024-01-01'", "tz <= '2023-12-31'",
    "tz BETWEEN TIMESTAMPTZ '2023-12-31 22:00:00+00' AND TIMESTAMPTZ '2024-01-01 00:00:00+00'",
    "d = '2024-02-29'", "d > DATE '2024-01-01'", "d >= TIMESTAMP '2024-01-01 12:00:00'",
    "d = TIMESTAMP '2024-01-01 00:00:00'", "d < '2024-01-01'", "d IN ('2024-01-01', '1970-01-01')",
    "d BETWEEN '2023-12-31' AND '2024-01-01'", "d = '2024-1-1'",
    "b = true", "b", "NOT b", "b IS NULL", "b = 1",
    "id > 5 AND (v = 'a' AND x < 1)", "(id > 5 AND v = 'a') OR x > 0",
    "id > 5 AND n IS NULL AND ts >= '2024-01-01' AND amt > 0",
};

/* The descriptions of a few plain clauses: what is pushed. */
static const struct {
  const char *where, *terms;
} k_pushed[] = {
    {"id = 5", "id = 5"},
    {"5 = id", "id = 5"},
    {"100 < id", "id > 100"},
    {"id IN (1, 2, 3)", "id IN (1, 2, 3)"},
    {"id BETWEEN 10 AND 20", "id >= 10 AND id <= 20"},
    {"n IS NULL", "n IS NULL"},
    {"v = 'abc'", "v = abc"},
    {"ts >= TIMESTAMP '2024-01-01'", "ts >= 2024-01-01T00:00:00"},
    {"d > DATE '2024-01-01'", "d > 2024-01-01"},
    {"id > 5 AND (v = 'a' AND x < 1)", "id > 5 AND v = a AND x < 1"},
    {"x > 0", "x > 0"}, /* pushed: the predicate has DuckDB's NaN > 0 (soundness cases above) */
    {"n = 5 OR n = 0", ""},
    {"id + 0 = 5", ""},
    {"n IN (SELECT 5)", ""},
    {"ts > now()", ""},
};

typedef struct fixture {
  tm_db *db;
  duckdb_connection c;
  tm_schema schema;
  tm_batch batches[64];
  int64_t offsets[64];
  size_t n_batches;
} fixture;

static void fixture_open(fixture *f) {
  tm_error err;
  memset(f, 0, sizeof *f);
  f->db = tm_test_db();
  TM_ASSERT_OK(tm_db__connect(f->db, &f->c, &err), &err);
  TM_ASSERT_OK(tm_db__exec(f->c, k_table, "ev", &err), &err);
  schema_of(&f->schema);
  duckdb_result r;
  TM_ASSERT(duckdb_query(f->c, "SELECT * FROM ev ORDER BY id", &r) == DuckDBSuccess);
  tm_duck_reader rd;
  tm_duck_reader_init(&rd, &r, &f->schema, 1000);
  int64_t at = 0;
  for (;;) {
    TM_ASSERT(f->n_batches < 64);
    tm_batch *b = &f->batches[f->n_batches];
    tm_batch_init(b);
    int rc = tm_duck_reader_next(&rd, b, &err);
    if (rc == TM_ITEROVER) break;
    TM_ASSERT_OK(rc, &err);
    f->offsets[f->n_batches++] = at;
    at += b->n_rows;
  }
  tm_duck_reader_dispose(&rd);
  TM_ASSERT_INT_EQ(at, N_ROWS);
}

static void fixture_close(fixture *f) {
  for (size_t i = 0; i < f->n_batches; i++) tm_batch_release(&f->batches[i]);
  tm_schema_dispose(&f->schema);
  duckdb_disconnect(&f->c);
}

/* The predicate pushdown extracts for `SELECT id FROM ev WHERE where`. */
static void pushdown_of(fixture *f, const char *sql, tm_predicate *p) {
  tm_error err;
  duckdb_prepared_statement ps = NULL;
  json_t *ast = NULL;
  TM_ASSERT_OK(tm_sql__gate(f->c, sql, NULL, &ps, &ast, &err), &err);
  tm_predicate_init(p);
  TM_ASSERT_OK(tm_sql__pushdown(ast, "ev", &f->schema, p, &err), &err);
  json_decref(ast);
  duckdb_destroy_prepare(&ps);
}

TM_TEST(pushdown_c6_never_drops_a_matching_row) {
  fixture f;
  fixture_open(&f);
  tm_error err;
  size_t pushed = 0, matched = 0;
  static uint8_t keep[N_ROWS / 8 + 1];
  for (size_t w = 0; w < sizeof k_where / sizeof k_where[0]; w++) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM ev WHERE %s ORDER BY id", k_where[w]);
    tm_predicate p;
    pushdown_of(&f, sql, &p);
    if (p.n_terms) pushed++;
    /* The rows the predicate keeps. */
    memset(keep, 0, sizeof keep);
    for (size_t i = 0; i < f.n_batches; i++) {
      const tm_batch *b = &f.batches[i];
      size_t bytes = (size_t)(b->n_rows + 7) / 8;
      uint8_t *k = tm_calloc(bytes ? bytes : 1, 1);
      TM_ASSERT(k != NULL);
      int64_t kept;
      TM_ASSERT_OK(tm_predicate_eval(&p, b, k, &kept, &err), &err);
      for (int64_t r = 0; r < b->n_rows; r++)
        if (k[r / 8] & (1u << (r % 8))) {
          int64_t id = f.offsets[i] + r;
          keep[id / 8] |= (uint8_t)(1u << (id % 8));
        }
      tm_free(k);
    }
    /* DuckDB's answer over the same rows. */
    duckdb_result r;
    TM_ASSERT_MSG(duckdb_query(f.c, sql, &r) == DuckDBSuccess, "%s: %s", sql, duckdb_result_error(&r));
    idx_t n = duckdb_row_count(&r);
    if (n) matched++;
    tm_buf desc = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_predicate_describe(&p, &desc, &err), &err);
    for (idx_t row = 0; row < n; row++) {
      int64_t id = duckdb_value_int64(&r, 0, row);
      TM_ASSERT_MSG(id >= 0 && id < N_ROWS, "%s: id %lld", sql, (long long)id);
      TM_ASSERT_MSG(keep[id / 8] & (1u << (id % 8)),
                    "WHERE %s: DuckDB returns row %lld, the pushed predicate [%s] drops it",
                    k_where[w], (long long)id, tm_buf_cstr(&desc));
    }
    tm_buf_dispose(&desc);
    duckdb_destroy_result(&r);
    tm_predicate_dispose(&p);
  }
  tm_test__note("%zu clauses: %zu pushed a term, %zu matched rows", sizeof k_where / sizeof k_where[0],
               pushed, matched);
  /* The suite means something: most clauses push, most match rows. */
  TM_ASSERT(pushed * 2 > sizeof k_where / sizeof k_where[0]);
  TM_ASSERT(matched * 2 > sizeof k_where / sizeof k_where[0]);
  fixture_close(&f);
}

TM_TEST(pushdown_c6_plain_forms_are_pushed) {
  fixture f;
  fixture_open(&f);
  tm_error err;
  for (size_t i = 0; i < sizeof k_pushed / sizeof k_pushed[0]; i++) {
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM ev WHERE %s", k_pushed[i].where);
    tm_predicate p;
    pushdown_of(&f, sql, &p);
    tm_buf desc = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_predicate_describe(&p, &desc, &err), &err);
    TM_ASSERT_MSG(!strcmp(tm_buf_cstr(&desc), k_pushed[i].terms), "WHERE %s: pushed [%s], want [%s]",
                  k_pushed[i].where, tm_buf_cstr(&desc), k_pushed[i].terms);
    tm_buf_dispose(&desc);
    tm_predicate_dispose(&p);
  }
  /* A join or a second read of the relation pushes nothing. */
  const char *const none[] = {
      "SELECT a.id FROM ev a JOIN ev b ON a.id = b.id WHERE a.id = 5",
      "SELECT id FROM ev WHERE id = 5 UNION ALL SELECT id FROM ev WHERE id = 6",
      "SELECT id FROM ev WHERE id = (SELECT max(id) FROM ev)",
  };
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    tm_predicate p;
    pushdown_of(&f, none[i], &p);
    TM_ASSERT_MSG(p.n_terms == 0, "%s: %zu terms pushed", none[i], p.n_terms);
    tm_predicate_dispose(&p);
  }
  fixture_close(&f);
}


