/* Unit tests for util/buf, util/alloc, util/str and util/error. */
#include "tm_test.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/str.h"

TM_TEST(buf_respects_limit) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(10);
  TM_ASSERT_OK(tm_buf_append(&b, "12345", 5, &err), &err);
  TM_ASSERT_OK(tm_buf_printf(&b, &err, "%d", 6789), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b), "123456789");
  TM_ASSERT_RC(tm_buf_append(&b, "ab", 2, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "limit");
  TM_ASSERT_INT_EQ(b.len, 9);
  size_t len;
  char *p = tm_buf_take(&b, &len);
  TM_ASSERT_INT_EQ(len, 9);
  TM_ASSERT(b.ptr == NULL);
  tm_free(p);
  tm_buf_dispose(&b);
}

TM_TEST(alloc_failure_injection) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(1 << 20);
  tm_alloc_fail_at(1, false);
  TM_ASSERT_RC(tm_buf_append(&b, "x", 1, &err), TM_ENOMEM);
  TM_ASSERT(tm_alloc_failed());
  TM_ASSERT_OK(tm_buf_append(&b, "x", 1, &err), &err);
  tm_alloc_fail_at(0, false);
  tm_buf_dispose(&b);
  TM_ASSERT(tm_calloc(SIZE_MAX / 2, 4) == NULL);
}

TM_TEST(vec_push_and_limit) {
  tm_error err;
  tm_vec v;
  tm_vec_init(&v, sizeof(int), 3);
  for (int i = 0; i < 3; i++) TM_ASSERT_OK(tm_vec_push(&v, &i, &err), &err);
  int x = 9;
  TM_ASSERT_RC(tm_vec_push(&v, &x, &err), TM_ETOOLARGE);
  TM_ASSERT_INT_EQ(*(int *)tm_vec_at(&v, 2), 2);
  tm_vec_dispose(&v);
}

TM_TEST(strict_number_parsing) {
  int64_t i;
  uint64_t u;
  double d;
  TM_ASSERT_RC(tm_parse_int64("-9223372036854775808", 20, &i), TM_OK);
  TM_ASSERT(i == INT64_MIN);
  TM_ASSERT_RC(tm_parse_int64("9223372036854775808", 19, &i), TM_EINVALID);
  TM_ASSERT_RC(tm_parse_int64("12x", 3, &i), TM_EINVALID);
  TM_ASSERT_RC(tm_parse_int64("", 0, &i), TM_EINVALID);
  TM_ASSERT_RC(tm_parse_int64("--1", 3, &i), TM_EINVALID);
  TM_ASSERT_RC(tm_parse_uint64("18446744073709551615", 20, &u), TM_OK);
  TM_ASSERT(u == UINT64_MAX);
  TM_ASSERT_RC(tm_parse_uint64("18446744073709551616", 20, &u), TM_EINVALID);
  TM_ASSERT_RC(tm_parse_double("1.5e3", 5, &d), TM_OK);
  TM_ASSERT_DBL_EQ(d, 1500);
  TM_ASSERT_RC(tm_parse_double("1.5e", 4, &d), TM_EINVALID);
}

TM_TEST(kv_set_get_replace) {
  tm_error err;
  tm_kv kv;
  tm_kv_init(&kv);
  TM_ASSERT_OK(tm_kv_set(&kv, "a", "1", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&kv, "b", "2", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&kv, "a", "3", &err), &err);
  TM_ASSERT_STR_EQ(tm_kv_get(&kv, "a"), "3");
  TM_ASSERT_INT_EQ(kv.len, 2);
  TM_ASSERT(tm_kv_get(&kv, "c") == NULL);
  tm_kv_dispose(&kv);
}

TM_TEST(error_prefix_and_corrupt) {
  tm_error err;
  tm_error_init(&err);
  TM_CORRUPT(&err, "bad page header at offset %d", 42);
  TM_ASSERT_INT_EQ(err.code, TM_ECORRUPT);
  TM_ASSERT(err.src_line > 0);
  tm_error_prefix(&err, "%s", "data/x.parquet");
  TM_ASSERT_STR_EQ(err.message, "data/x.parquet: bad page header at offset 42");
  TM_ASSERT_STR_EQ(tm_code_name(TM_ECORRUPT), "corrupt");
}
