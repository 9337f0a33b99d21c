/* Unit tests for format/predicate: pruning by statistics and row evaluation. */
#include "format/predicate.h"
#include "tm_test.h"

static tm_value ival(int64_t i) {
  tm_value v = {0};
  v.type = TM_TYPE_INT64;
  v.v.i = i;
  return v;
}

static tm_col_stats stats(int64_t lo, int64_t hi, int64_t nulls, int64_t rows) {
  tm_col_stats s = {0};
  s.has_min = s.has_max = true;
  s.min = ival(lo);
  s.max = ival(hi);
  s.null_count = nulls;
  s.row_count = rows;
  return s;
}

TM_TEST(prune_by_bounds) {
  tm_error err;
  tm_predicate p;
  tm_predicate_init(&p);
  tm_type t = tm_type_of(TM_TYPE_INT64);
  tm_value v = ival(100);
  TM_ASSERT_OK(tm_predicate_add(&p, "ts", t, TM_PRED_GT, &v, &err), &err);
  tm_col_stats s = stats(0, 100, 0, 10);
  TM_ASSERT(!tm_pred_term_may_match(&p.terms[0], &s)); /* strict > at the max (A2) */
  s = stats(0, 101, 0, 10);
  TM_ASSERT(tm_pred_term_may_match(&p.terms[0], &s));
  s.has_max = false;
  TM_ASSERT(tm_pred_term_may_match(&p.terms[0], &s)); /* unknown max */
  s = stats(0, 500, 10, 10);
  TM_ASSERT(!tm_pred_term_may_match(&p.terms[0], &s)); /* all null */
  tm_predicate_dispose(&p);
}

TM_TEST(prune_in_and_nulls) {
  tm_error err;
  tm_predicate p;
  tm_predicate_init(&p);
  tm_type t = tm_type_of(TM_TYPE_INT64);
  tm_value in[] = {ival(5), ival(50)};
  TM_ASSERT_OK(tm_predicate_add_in(&p, "id", t, in, 2, &err), &err);
  TM_ASSERT_OK(tm_predicate_add_null(&p, "id", t, true, &err), &err);
  tm_col_stats s = stats(10, 40, 0, 10);
  TM_ASSERT(!tm_pred_term_may_match(&p.terms[0], &s));
  TM_ASSERT(!tm_pred_term_may_match(&p.terms[1], &s));
  s = stats(10, 60, 2, 10);
  TM_ASSERT(tm_pred_term_may_match(&p.terms[0], &s));
  TM_ASSERT(tm_pred_term_may_match(&p.terms[1], &s));
  tm_buf b = TM_BUF_INIT(1024);
  TM_ASSERT_OK(tm_predicate_describe(&p, &b, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b), "id IN (5, 50) AND id IS NULL");
  tm_buf_dispose(&b);
  tm_predicate_dispose(&p);
}

TM_TEST(prune_strings_bytewise) {
  tm_error err;
  tm_predicate p;
  tm_predicate_init(&p);
  tm_value v = {0};
  v.type = TM_TYPE_UTF8;
  v.v.s = tm_sv("m", 1);
  TM_ASSERT_OK(tm_predicate_add(&p, "s", tm_type_of(TM_TYPE_UTF8), TM_PRED_EQ, &v, &err), &err);
  tm_col_stats s = {0};
  s.has_min = s.has_max = true;
  s.min.type = s.max.type = TM_TYPE_UTF8;
  s.min.v.s = tm_sv("a", 1);
  s.max.v.s = tm_sv("l", 1);
  s.null_count = -1;
  s.row_count = -1;
  TM_ASSERT(!tm_pred_term_may_match(&p.terms[0], &s));
  s.max.v.s = tm_sv("\xc3\xa9", 2); /* é sorts after m bytewise */
  TM_ASSERT(tm_pred_term_may_match(&p.terms[0], &s));
  tm_predicate_dispose(&p);
}

TM_TEST(eval_rows) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "x", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int i = 0; i < 10; i++) {
    if (i == 3) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[0], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_predicate p;
  tm_predicate_init(&p);
  tm_value lo = ival(2), hi = ival(7);
  TM_ASSERT_OK(tm_predicate_add(&p, "x", s.cols[0].type, TM_PRED_GE, &lo, &err), &err);
  TM_ASSERT_OK(tm_predicate_add(&p, "x", s.cols[0].type, TM_PRED_LT, &hi, &err), &err);
  uint8_t keep[2] = {0};
  int64_t kept;
  TM_ASSERT_OK(tm_predicate_eval(&p, &b, keep, &kept, &err), &err);
  TM_ASSERT_INT_EQ(kept, 4); /* 2, 4, 5, 6: the NULL at 3 does not satisfy */
  TM_ASSERT(!tm_bit_get(keep, 3) && tm_bit_get(keep, 2) && !tm_bit_get(keep, 7));
  tm_predicate_dispose(&p);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

/*
 * NaN, differentially (SPEC C6, A10: what the pushdown of a federated query
 * or a refresh_sql prunes; issue 21: the row evaluator and the statistics pruner
 * disagreed on NaN in IN lists). The truth of each comparison is DuckDB's,
 * the engine that filters the rows again: NaN equals NaN and is above every
 * number. Row evaluation must give DuckDB's answer for every cell, literal
 * and operator; pruning must keep every pair of cells that holds a match,
 * with bounds made as writers make them (NaN left out).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <duckdb.h>

static const double k_cells[] = {NAN, -INFINITY, -1.5, -0.0, 0.0, 1.5, INFINITY};
#define N_CELLS (sizeof k_cells / sizeof k_cells[0])

static tm_value fval(double d) {
  tm_value v = {0};
  v.type = TM_TYPE_FLOAT64;
  v.v.f = d;
  return v;
}

static void sql_double(char *out, size_t cap, double d) {
  if (isnan(d)) snprintf(out, cap, "'NaN'::DOUBLE");
  else if (isinf(d)) snprintf(out, cap, "'%sinf'::DOUBLE", d < 0 ? "-" : "");
  else snprintf(out, cap, "(%.17g)::DOUBLE", d);
}

/* One-row (or two-row) batch of column x DOUBLE. */
static void float_batch(tm_batch *b, const double *v, int n) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "x", tm_type_of(TM_TYPE_FLOAT64), true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int i = 0; i < n; i++) TM_ASSERT_OK(tm_colbuilder_append_double(tm_batch_builder_col(&bb, 0), v[i], &err), &err);
  tm_batch_init(b);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

/* A term x OP lit (op < 0: x IN (lit, 2.5)). */
static void float_term(tm_predicate *p, int op, double lit) {
  tm_error err;
  tm_predicate_init(p);
  tm_value v = fval(lit);
  if (op < 0) {
    tm_value in[2] = {v, fval(2.5)};
    TM_ASSERT_OK(tm_predicate_add_in(p, "x", tm_type_of(TM_TYPE_FLOAT64), in, 2, &err), &err);
  } else {
    TM_ASSERT_OK(tm_predicate_add(p, "x", tm_type_of(TM_TYPE_FLOAT64), (tm_pred_op)op, &v, &err), &err);
  }
}

static bool eval_one(const tm_predicate *p, const double *cells, int n) {
  tm_error err;
  tm_batch b;
  float_batch(&b, cells, n);
  uint8_t keep[1] = {0};
  int64_t kept = 0;
  TM_ASSERT_OK(tm_predicate_eval(p, &b, keep, &kept, &err), &err);
  tm_batch_release(&b);
  return kept > 0;
}

TM_TEST(c6_a10_nan_rows_as_duckdb_and_pruning_sound) {
  duckdb_database db;
  duckdb_connection con;
  TM_ASSERT(duckdb_open(NULL, &db) == DuckDBSuccess);
  TM_ASSERT(duckdb_connect(db, &con) == DuckDBSuccess);
  const struct {
    int op;
    const char *sql;
  } ops[] = {{TM_PRED_EQ, "="}, {TM_PRED_LT, "<"}, {TM_PRED_LE, "<="}, {TM_PRED_GT, ">"},
             {TM_PRED_GE, ">="}, {-1, "IN"}};
  int checked = 0, pruned = 0;
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
    for (size_t l = 0; l < N_CELLS; l++) {
      tm_predicate p;
      float_term(&p, ops[o].op, k_cells[l]);
      char lit[64];
      sql_double(lit, sizeof lit, k_cells[l]);
      for (size_t c = 0; c < N_CELLS; c++) {
        char cell[64], sql[256];
        sql_double(cell, sizeof cell, k_cells[c]);
        if (ops[o].op < 0) snprintf(sql, sizeof sql, "SELECT %s IN (%s, 2.5::DOUBLE)", cell, lit);
        else snprintf(sql, sizeof sql, "SELECT %s %s %s", cell, ops[o].sql, lit);
        duckdb_result r;
        TM_ASSERT_MSG(duckdb_query(con, sql, &r) == DuckDBSuccess, "%s", sql);
        bool truth = duckdb_value_boolean(&r, 0, 0);
        duckdb_destroy_result(&r);
        TM_ASSERT_MSG(eval_one(&p, &k_cells[c], 1) == truth, "%s: DuckDB says %d", sql, truth);
        checked++;
        /* Pruning over the pair {c, d}, bounds without NaN as writers make them. */
        for (size_t d = c; d < N_CELLS; d++) {
          double pair[2] = {k_cells[c], k_cells[d]};
          tm_col_stats s = {0};
          s.null_count = 0;
          s.row_count = 2;
          for (int i = 0; i < 2; i++) {
            if (isnan(pair[i])) continue;
            tm_value v = fval(pair[i]);
            if (!s.has_min || tm_value_cmp(&v, &s.min) < 0) s.min = v;
            if (!s.has_max || tm_value_cmp(&v, &s.max) > 0) s.max = v;
            s.has_min = s.has_max = true;
          }
          bool any = eval_one(&p, pair, 2);
          bool may = tm_pred_term_may_match(&p.terms[0], &s);
          TM_ASSERT_MSG(!any || may, "%s (and %g): a matching pair pruned", sql, k_cells[d]);
          pruned += !may;
        }
      }
      tm_predicate_dispose(&p);
    }
  }
  TM_ASSERT_INT_EQ(checked, 6 * 7 * 7);
  TM_ASSERT_MSG(pruned > 50, "pruning still prunes (%d pairs)", pruned);
  duckdb_disconnect(&con);
  duckdb_close(&db);
}
