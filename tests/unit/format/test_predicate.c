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
