/*
 * Unit tests for refresh/timebound: A1 format checks, A2 strict bound,
 * A3 overlap, A4 formats and NULLs, A5 day-granular bounds, A6 partitions.
 */
#include "refresh/timebound.h"
#include "tm_test.h"

static tm_instant at(int64_t y, unsigned m, unsigned d, int hh, int mm, int ss) {
  tm_instant t = {tm_days_from_civil(y, m, d) * 86400 + hh * 3600 + mm * 60 + ss, 0};
  return t;
}

TM_TEST(A1_format_must_fit_type) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "ts", tm_type_timestamp(TM_UNIT_MICRO, true),
                                   TM_TIME_FORMAT_UNSET, &err), &err);
  TM_ASSERT_INT_EQ(tc.format, TM_TIME_FORMAT_TIMESTAMPTZ);
  TM_ASSERT_RC(tm_time_column_init(&tc, "ts", tm_type_timestamp(TM_UNIT_MICRO, false),
                                   TM_TIME_FORMAT_TIMESTAMPTZ, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "time_format 'timestamptz' does not fit time column 'ts' of type timestamp(us) (expected timestamp)");
  TM_ASSERT_RC(tm_time_column_init(&tc, "d", tm_type_of(TM_TYPE_DATE32), TM_TIME_FORMAT_UNIX_SECONDS, &err), TM_EINVALID);
  TM_ASSERT_OK(tm_time_column_init(&tc, "ms", tm_type_of(TM_TYPE_INT64), TM_TIME_FORMAT_UNIX_MILLIS, &err), &err);
  TM_ASSERT_RC(tm_time_column_init(&tc, "s", tm_type_of(TM_TYPE_UTF8), TM_TIME_FORMAT_DATE, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_time_column_init(&tc, "f", tm_type_of(TM_TYPE_FLOAT64), TM_TIME_FORMAT_UNSET, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "cannot hold times");
}

TM_TEST(A2_strict_bound_without_overlap) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "ts", tm_type_timestamp(TM_UNIT_MILLI, false),
                                   TM_TIME_FORMAT_UNSET, &err), &err);
  tm_instant hwm = at(2026, 11, 30, 10, 0, 0);
  tm_time_bound b = tm_time_bound_for_append(&tc, hwm, 0);
  TM_ASSERT(b.active && !b.inclusive && b.has_native);
  TM_ASSERT_INT_EQ(b.native, hwm.sec * 1000);
  TM_ASSERT(!tm_time_bound_rereads(&b, 0));
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_time_bound_to_predicate(&tc, &b, &p, &err), &err);
  TM_ASSERT_INT_EQ(p.n_terms, 1);
  TM_ASSERT_INT_EQ(p.terms[0].op, TM_PRED_GT);
  tm_predicate_dispose(&p);
}

TM_TEST(A3_overlap_lowers_the_bound_and_rereads) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "ts", tm_type_timestamp(TM_UNIT_NANO, true),
                                   TM_TIME_FORMAT_UNSET, &err), &err);
  tm_instant hwm = at(2026, 11, 30, 10, 0, 0);
  hwm.nsec = 123456789;
  tm_time_bound b = tm_time_bound_for_append(&tc, hwm, 10 * 60 * 1000);
  TM_ASSERT(b.inclusive);
  TM_ASSERT(tm_time_bound_rereads(&b, 600000));
  tm_instant want = at(2026, 11, 30, 9, 50, 0);
  want.nsec = 123456789;
  TM_ASSERT(tm_instant_cmp(b.instant, want) == 0);
  TM_ASSERT_INT_EQ(b.native, want.sec * 1000000000LL + 123456789);
}

TM_TEST(A5_day_granular_bound_is_inclusive_start_of_day) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "day", tm_type_of(TM_TYPE_DATE32), TM_TIME_FORMAT_DATE, &err), &err);
  TM_ASSERT(tc.day_granular);
  tm_instant hwm = at(2026, 11, 30, 0, 0, 0);
  /* No overlap: the boundary day is re-read. */
  tm_time_bound b = tm_time_bound_for_append(&tc, hwm, 0);
  TM_ASSERT(b.inclusive);
  TM_ASSERT_INT_EQ(b.native, tm_days_from_civil(2026, 11, 30));
  TM_ASSERT(tm_time_bound_rereads(&b, 0));
  /* An overlap shorter than a day re-reads the previous day. */
  b = tm_time_bound_for_append(&tc, hwm, 3600 * 1000);
  TM_ASSERT_INT_EQ(b.native, tm_days_from_civil(2026, 11, 29));
}

TM_TEST(A6_partition_bound_is_floored_to_the_day) {
  tm_error err;
  tm_time_column tc, part;
  TM_ASSERT_OK(tm_time_column_init(&tc, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), TM_TIME_FORMAT_UNSET, &err), &err);
  TM_ASSERT_OK(tm_time_column_init(&part, "day", tm_type_of(TM_TYPE_DATE32), TM_TIME_FORMAT_DATE, &err), &err);
  tm_time_bound b = tm_time_bound_for_append(&tc, at(2026, 11, 30, 23, 59, 0), 0);
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_time_bound_to_partition_predicate(&part, &b, &p, &err), &err);
  TM_ASSERT_INT_EQ(p.n_terms, 1);
  TM_ASSERT_INT_EQ(p.terms[0].op, TM_PRED_GE);
  TM_ASSERT_INT_EQ(p.terms[0].value.v.i, tm_days_from_civil(2026, 11, 30));
  tm_predicate_dispose(&p);
}

static void one_column_batch(tm_batch *b, tm_type type, const char *const *texts, size_t n) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "t", type, true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (size_t i = 0; i < n; i++) {
    if (!texts[i]) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[0], &err), &err);
    else if (type.id == TM_TYPE_UTF8)
      TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[0], texts[i], strlen(texts[i]), &err), &err);
    else {
      int64_t v;
      TM_ASSERT_RC(tm_parse_int64(texts[i], strlen(texts[i]), &v), TM_OK);
      TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], v, &err), &err);
    }
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

TM_TEST(A4_iso8601_zone_spellings_and_nulls) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "t", tm_type_of(TM_TYPE_UTF8), TM_TIME_FORMAT_ISO8601, &err), &err);
  const char *rows[] = {"2026-11-30T10:00:00Z",      "2026-11-30T10:00:00+00:00",
                        "2026-11-30 10:00:00 UTC",   "2026-11-30T11:00:01+01:00",
                        "2026-11-30T10:00:00.000001Z", NULL, "not a time"};
  tm_batch b;
  one_column_batch(&b, tm_type_of(TM_TYPE_UTF8), rows, 7);
  tm_instant max;
  TM_ASSERT(tm_time_batch_max(&tc, &b, &max));
  TM_ASSERT(tm_instant_cmp(max, at(2026, 11, 30, 10, 0, 1)) == 0);
  /* Strict bound at 10:00:00 UTC: the three spellings of 10:00 are not above. */
  tm_time_bound bound = tm_time_bound_for_append(&tc, at(2026, 11, 30, 10, 0, 0), 0);
  TM_ASSERT(!bound.has_native);
  uint8_t keep[1] = {0};
  int64_t kept, nulls;
  TM_ASSERT_OK(tm_time_bound_filter(&tc, &bound, &b, keep, &kept, &nulls, &err), &err);
  TM_ASSERT_INT_EQ(kept, 2);
  TM_ASSERT_INT_EQ(nulls, 2);
  TM_ASSERT(tm_bit_get(keep, 3) && tm_bit_get(keep, 4));
  tm_batch_release(&b);
}

TM_TEST(A4_unix_millis_column) {
  tm_error err;
  tm_time_column tc;
  TM_ASSERT_OK(tm_time_column_init(&tc, "t", tm_type_of(TM_TYPE_INT64), TM_TIME_FORMAT_UNIX_MILLIS, &err), &err);
  const char *rows[] = {"1764496800000", "1764496800001", "-5", NULL};
  tm_batch b;
  one_column_batch(&b, tm_type_of(TM_TYPE_INT64), rows, 4);
  tm_instant max;
  TM_ASSERT(tm_time_batch_max(&tc, &b, &max));
  TM_ASSERT_INT_EQ(max.sec, 1764496800);
  TM_ASSERT_INT_EQ(max.nsec, 1000000);
  tm_time_bound bound = tm_time_bound_for_append(&tc, max, 0);
  TM_ASSERT_INT_EQ(bound.native, 1764496800001);
  bound = tm_time_bound_for_append(&tc, max, 1);
  TM_ASSERT_INT_EQ(bound.native, 1764496800000);
  tm_instant neg;
  tm_colview col = tm_batch_col(&b, 0);
  TM_ASSERT(tm_time_cell_instant(&tc, &col, 2, &neg));
  TM_ASSERT_INT_EQ(neg.sec, -1);
  TM_ASSERT_INT_EQ(neg.nsec, 995000000);
  tm_batch_release(&b);
}
