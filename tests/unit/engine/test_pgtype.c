/*
 * Unit tests for the postgres engine's binary values (engine/postgres/pgtype.c,
 * issue 20): numeric's base-10000 form against hand-computed bytes, round
 * trips of every type (decimals of every scale, uint64's extremes, dates and
 * timestamps around PostgreSQL's 2000-01-01 epoch), and malformed bytes
 * refused as corrupt.
 */
#include <stdint.h>
#include <string.h>

#include "engine/postgres/pg_int.h"
#include "tm_test.h"

static void dec_of(tm_value *v, __int128 x) {
  memset(v, 0, sizeof *v);
  v->type = TM_TYPE_DECIMAL128;
  for (int i = 0; i < 16; i++) v->v.dec[i] = (uint8_t)((unsigned __int128)x >> (8 * i));
}

static void expect_bytes(const tm_pgval *pv, const char *hex) {
  char got[256] = "";
  for (int i = 0; i < pv->len && i < 100; i++) {
    static const char d[] = "0123456789abcdef";
    size_t n = strlen(got);
    got[n] = d[(uint8_t)pv->p[i] >> 4];
    got[n + 1] = d[(uint8_t)pv->p[i] & 15];
    got[n + 2] = 0;
  }
  TM_ASSERT_STR_EQ(got, hex);
}

TM_TEST(pgtype_numeric_bytes) {
  tm_error err;
  tm_pgval pv;
  tm_value v;
  tm_type t = tm_type_decimal(18, 3);
  dec_of(&v, 12345678); /* 12345.678 */
  TM_ASSERT_OK(tm_pgval_from(&pv, &t, &v, &err), &err);
  expect_bytes(&pv, "0003000100000003000109291a7c");
  dec_of(&v, 0);
  TM_ASSERT_OK(tm_pgval_from(&pv, &t, &v, &err), &err);
  expect_bytes(&pv, "0000000000000003");
  t = tm_type_decimal(5, 1);
  dec_of(&v, -5); /* -0.5 */
  TM_ASSERT_OK(tm_pgval_from(&pv, &t, &v, &err), &err);
  expect_bytes(&pv, "0001ffff400000011388");
  tm_type u = tm_type_of(TM_TYPE_UINT64);
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_UINT64;
  v.v.u = UINT64_MAX; /* 1844 6744 0737 0955 1615 */
  TM_ASSERT_OK(tm_pgval_from(&pv, &u, &v, &err), &err);
  expect_bytes(&pv, "000500040000000007341a5802e103bb064f");
}

TM_TEST(pgtype_decimals_round_trip) {
  tm_error err;
  const __int128 big = (__int128)99999999999999999LL * 1000000000000000000LL + 999999999999999999LL;
  const __int128 vals[] = {0, 1, -1, 9999, 10000, -10001, 123456789, 100000000, -7, big, -big};
  for (int scale = 0; scale <= 38; scale += 1) {
    tm_type t = tm_type_decimal(38, scale);
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
      tm_value v, back;
      tm_pgval pv;
      dec_of(&v, vals[i]);
      TM_ASSERT_OK(tm_pgval_from(&pv, &t, &v, &err), &err);
      TM_ASSERT_OK(tm_pg_to_value(&t, pv.p, pv.len, &back, &err), &err);
      TM_ASSERT_MSG(memcmp(back.v.dec, v.v.dec, 16) == 0, "scale %d value %zu", scale, i);
    }
  }
}

TM_TEST(pgtype_values_round_trip) {
  tm_error err;
  struct {
    tm_type t;
    int64_t i;
    uint64_t u;
    int pg_len;
  } cases[] = {
      {tm_type_of(TM_TYPE_INT8), -128, 0, 2},
      {tm_type_of(TM_TYPE_INT16), -32768, 0, 2},
      {tm_type_of(TM_TYPE_INT32), INT32_MIN, 0, 4},
      {tm_type_of(TM_TYPE_INT64), INT64_MIN, 0, 8},
      {tm_type_of(TM_TYPE_UINT8), 0, 255, 2},
      {tm_type_of(TM_TYPE_UINT16), 0, 65535, 4},
      {tm_type_of(TM_TYPE_UINT32), 0, UINT32_MAX, 8},
      {tm_type_of(TM_TYPE_UINT64), 0, 0, 8},
      {tm_type_of(TM_TYPE_DATE32), -719162, 0, 4},
      {tm_type_timestamp(TM_UNIT_SECOND, true), -62135596800LL, 0, 8},
      {tm_type_timestamp(TM_UNIT_MILLI, false), 946684800123LL, 0, 8},
      {tm_type_timestamp(TM_UNIT_MICRO, true), -1, 0, 8},
      {tm_type_timestamp(TM_UNIT_NANO, true), INT64_MAX, 0, 8},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tm_value v, back;
    memset(&v, 0, sizeof v);
    v.type = cases[k].t.id;
    v.v.i = cases[k].i;
    if (cases[k].u) v.v.u = cases[k].u;
    tm_pgval pv;
    TM_ASSERT_OK(tm_pgval_from(&pv, &cases[k].t, &v, &err), &err);
    if (cases[k].t.id != TM_TYPE_UINT64) TM_ASSERT_INT_EQ(pv.len, cases[k].pg_len);
    TM_ASSERT_OK(tm_pg_to_value(&cases[k].t, pv.p, pv.len, &back, &err), &err);
    TM_ASSERT_MSG(back.v.i == v.v.i, "case %zu: %lld != %lld", k, (long long)back.v.i,
                  (long long)v.v.i);
  }
  /* PostgreSQL's epoch: 2000-01-01 is 0 in its binary date and timestamp. */
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_DATE32;
  v.v.i = 10957;
  tm_pgval pv;
  tm_type d = tm_type_of(TM_TYPE_DATE32);
  TM_ASSERT_OK(tm_pgval_from(&pv, &d, &v, &err), &err);
  expect_bytes(&pv, "00000000");
  tm_type ts = tm_type_timestamp(TM_UNIT_SECOND, false);
  v.type = TM_TYPE_TIMESTAMP;
  v.v.i = 946684801;
  TM_ASSERT_OK(tm_pgval_from(&pv, &ts, &v, &err), &err);
  expect_bytes(&pv, "00000000000f4240");
  /* A second-unit timestamp past int64 microseconds is refused, not wrapped. */
  v.v.i = INT64_MAX / 10;
  TM_ASSERT_RC(tm_pgval_from(&pv, &ts, &v, &err), TM_EINVALID);
}

TM_TEST(pgtype_malformed_bytes_are_corrupt) {
  tm_error err;
  tm_value out;
  tm_type i4 = tm_type_of(TM_TYPE_INT32);
  TM_ASSERT_RC(tm_pg_to_value(&i4, "\0\0\0", 3, &out, &err), TM_ECORRUPT);
  tm_type dec = tm_type_decimal(10, 2);
  /* NaN numeric, a digit past 9999, a length that disagrees with ndigits. */
  TM_ASSERT_RC(tm_pg_to_value(&dec, "\0\0\0\0\xc0\0\0\0", 8, &out, &err), TM_ECORRUPT);
  TM_ASSERT_RC(tm_pg_to_value(&dec, "\0\1\0\0\0\0\0\0\x27\x10", 10, &out, &err), TM_ECORRUPT);
  TM_ASSERT_RC(tm_pg_to_value(&dec, "\0\2\0\0\0\0\0\0\0\1", 10, &out, &err), TM_ECORRUPT);
  /* More fraction digits than the column's scale. */
  TM_ASSERT_RC(tm_pg_to_value(&dec, "\0\1\xff\xff\0\0\0\3\0\1", 10, &out, &err), TM_ECORRUPT);
  tm_type u64 = tm_type_of(TM_TYPE_UINT64);
  TM_ASSERT_RC(tm_pg_to_value(&u64, "\0\1\0\0\x40\0\0\0\0\1", 10, &out, &err), TM_ECORRUPT);
  tm_type uuid = tm_type_of(TM_TYPE_FIXED_BINARY);
  uuid.width = 16;
  uuid.uuid = true;
  TM_ASSERT_RC(tm_pg_to_value(&uuid, "0123456789", 10, &out, &err), TM_ECORRUPT);
}
