/* Unit tests for format/thrift: the compact protocol encoder and the bounded
 * decoder (issue 3: a decoder that never allocates from an unchecked count). */
#include <string.h>

#include "format/thrift/thrift.h"
#include "tm_test.h"
#include "util/alloc.h"

/* Encodes a struct exercising every field form we use. */
static void encode_sample(tm_buf *b) {
  tm_thrift_writer w;
  tm_thrift_writer_init(&w, b);
  tm_thrift_write_struct_begin(&w);
  tm_thrift_write_field_i32(&w, 1, -5);
  tm_thrift_write_field_i64(&w, 2, INT64_MIN);
  tm_thrift_write_field_bool(&w, 3, true);
  tm_thrift_write_field_binary(&w, 4, "hello", 5);
  tm_thrift_write_field_list(&w, 5, TM_THRIFT_I32, 20); /* long list header */
  for (int i = 0; i < 20; i++) tm_thrift_write_i32(&w, i * 1000 - 7);
  tm_thrift_write_field_struct(&w, 40); /* field id delta > 15: long header */
  tm_thrift_write_field_bool(&w, 1, false);
  tm_thrift_write_field_i64(&w, 2, INT64_MAX);
  tm_thrift_write_struct_end(&w);
  tm_thrift_write_field_i32(&w, 41, 7);
  tm_thrift_write_struct_end(&w);
  tm_error err;
  TM_ASSERT_OK(tm_thrift_writer_status(&w, &err), &err);
}

TM_TEST(thrift_round_trip) {
  tm_buf b = TM_BUF_INIT(1 << 20);
  encode_sample(&b);
  tm_thrift_reader r;
  tm_thrift_reader_init(&r, b.ptr, b.len);
  tm_error err;
  tm_thrift_struct st, in;
  tm_thrift_field f, g;
  int rc, seen = 0;
  TM_ASSERT_OK(tm_thrift_struct_begin(&r, &st, &err), &err);
  while ((rc = tm_thrift_next_field(&r, &st, &f, &err)) > 0) {
    seen++;
    switch (f.id) {
      case 1: {
        int32_t v;
        TM_ASSERT_OK(tm_thrift_read_i32(&r, f.type, &v, &err), &err);
        TM_ASSERT_INT_EQ(v, -5);
        break;
      }
      case 2: {
        int64_t v;
        TM_ASSERT_OK(tm_thrift_read_i64(&r, f.type, &v, &err), &err);
        TM_ASSERT(v == INT64_MIN);
        break;
      }
      case 3: {
        bool v;
        TM_ASSERT_OK(tm_thrift_read_bool(&r, f.type, &v, &err), &err);
        TM_ASSERT(v);
        break;
      }
      case 4: {
        tm_strview v;
        TM_ASSERT_OK(tm_thrift_read_binary(&r, f.type, &v, &err), &err);
        TM_ASSERT(tm_sv_eq_cstr(v, "hello"));
        break;
      }
      case 5: {
        uint8_t et;
        uint32_t n;
        TM_ASSERT_OK(tm_thrift_list_begin(&r, f.type, &et, &n, &err), &err);
        TM_ASSERT_INT_EQ(n, 20);
        TM_ASSERT_INT_EQ(et, TM_THRIFT_I32);
        for (uint32_t i = 0; i < n; i++) {
          int32_t v;
          TM_ASSERT_OK(tm_thrift_read_i32(&r, et, &v, &err), &err);
          TM_ASSERT_INT_EQ(v, (int)i * 1000 - 7);
        }
        tm_thrift_list_end(&r);
        break;
      }
      case 40: {
        TM_ASSERT_INT_EQ(f.type, TM_THRIFT_STRUCT);
        TM_ASSERT_OK(tm_thrift_struct_begin(&r, &in, &err), &err);
        int inner = 0;
        while ((rc = tm_thrift_next_field(&r, &in, &g, &err)) > 0) {
          inner++;
          if (g.id == 1) {
            bool v;
            TM_ASSERT_OK(tm_thrift_read_bool(&r, g.type, &v, &err), &err);
            TM_ASSERT(!v);
          } else {
            int64_t v;
            TM_ASSERT_OK(tm_thrift_read_i64(&r, g.type, &v, &err), &err);
            TM_ASSERT(v == INT64_MAX);
          }
        }
        TM_ASSERT_INT_EQ(rc, 0);
        TM_ASSERT_INT_EQ(inner, 2);
        break;
      }
      case 41: {
        int32_t v;
        TM_ASSERT_OK(tm_thrift_read_i32(&r, f.type, &v, &err), &err);
        TM_ASSERT_INT_EQ(v, 7);
        break;
      }
      default: TM_ASSERT_MSG(0, "unexpected field %d", f.id);
    }
  }
  TM_ASSERT_INT_EQ(rc, 0);
  TM_ASSERT_INT_EQ(seen, 7);
  TM_ASSERT_INT_EQ(tm_thrift_reader_left(&r), 0);
  TM_ASSERT_INT_EQ(r.depth, 0);
  tm_buf_dispose(&b);
}

TM_TEST(thrift_skip_everything) {
  /* Skipping the whole struct consumes exactly its bytes. */
  tm_buf b = TM_BUF_INIT(1 << 20);
  encode_sample(&b);
  /* Append a map field by hand: field 42 (delta 1), type MAP, 2 entries i32->binary. */
  tm_buf_truncate(&b, b.len - 1); /* drop the final STOP */
  const uint8_t map[] = {0x1b, 0x02, 0x58, 0x02, 0x01, 'a', 0x04, 0x01, 'b', 0x00};
  tm_error err;
  TM_ASSERT_OK(tm_buf_append(&b, map, sizeof map, &err), &err);
  tm_thrift_reader r;
  tm_thrift_reader_init(&r, b.ptr, b.len);
  TM_ASSERT_OK(tm_thrift_skip(&r, TM_THRIFT_STRUCT, &err), &err);
  TM_ASSERT_INT_EQ(tm_thrift_reader_left(&r), 0);
  tm_buf_dispose(&b);
}

TM_TEST(thrift_truncated_input_is_corrupt) {
  tm_buf b = TM_BUF_INIT(1 << 20);
  encode_sample(&b);
  tm_error err;
  /* Every strict prefix must fail cleanly (never read past the end). */
  for (size_t n = 0; n < b.len; n++) {
    tm_thrift_reader r;
    tm_thrift_reader_init(&r, b.ptr, n);
    int rc = tm_thrift_skip(&r, TM_THRIFT_STRUCT, &err);
    TM_ASSERT_MSG(rc == TM_ECORRUPT, "prefix of %zu bytes gave %d", n, rc);
    TM_ASSERT_CONTAINS(err.message, "thrift:");
  }
  tm_buf_dispose(&b);
}

TM_TEST(thrift_list_count_checked_against_bytes_left) {
  /* A list claiming 2^31 elements in a 7-byte input is refused before any use. */
  const uint8_t data[] = {0x19, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x08};
  tm_thrift_reader r;
  tm_thrift_reader_init(&r, data + 1, sizeof data - 1);
  tm_error err;
  uint8_t et;
  uint32_t n = 0;
  TM_ASSERT_RC(tm_thrift_list_begin(&r, TM_THRIFT_LIST, &et, &n, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "passes the end");
  /* A binary longer than the input. */
  const uint8_t bin[] = {0x10, 'a', 'b'};
  tm_thrift_reader_init(&r, bin, sizeof bin);
  tm_strview v;
  TM_ASSERT_RC(tm_thrift_read_binary(&r, TM_THRIFT_BINARY, &v, &err), TM_ECORRUPT);
}

TM_TEST(thrift_depth_is_limited) {
  /* 10,000 nested struct fields: the skipper must stop at the depth limit. */
  size_t n = 10000;
  uint8_t *data = tm_calloc(n, 1);
  TM_ASSERT(data);
  memset(data, 0x1c, n); /* field delta 1, type STRUCT */
  tm_thrift_reader r;
  tm_thrift_reader_init(&r, data, n);
  tm_error err;
  TM_ASSERT_RC(tm_thrift_skip(&r, TM_THRIFT_STRUCT, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "nesting deeper");
  tm_free(data);
}

TM_TEST(thrift_bad_values) {
  tm_error err;
  tm_thrift_reader r;
  /* 11-byte varint. */
  const uint8_t v11[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  tm_thrift_reader_init(&r, v11, sizeof v11);
  uint64_t u;
  TM_ASSERT_RC(tm_thrift_read_uvarint(&r, &u, &err), TM_ECORRUPT);
  /* i64 that does not fit in an i32 reader. */
  tm_buf b = TM_BUF_INIT(64);
  TM_ASSERT_OK(tm_thrift_put_uvarint(&b, tm_zigzag64(INT64_C(1) << 40), &err), &err);
  tm_thrift_reader_init(&r, b.ptr, b.len);
  int32_t x;
  TM_ASSERT_RC(tm_thrift_read_i32(&r, TM_THRIFT_I64, &x, &err), TM_ECORRUPT);
  /* Wrong type for a reader. */
  tm_thrift_reader_init(&r, b.ptr, b.len);
  tm_strview s;
  TM_ASSERT_RC(tm_thrift_read_binary(&r, TM_THRIFT_I32, &s, &err), TM_ECORRUPT);
  /* Unknown field type nibble. */
  const uint8_t badf[] = {0x1d, 0x00};
  tm_thrift_reader_init(&r, badf, sizeof badf);
  tm_thrift_struct st;
  tm_thrift_field f;
  TM_ASSERT_OK(tm_thrift_struct_begin(&r, &st, &err), &err);
  TM_ASSERT_RC(tm_thrift_next_field(&r, &st, &f, &err), TM_ECORRUPT);
  tm_buf_dispose(&b);
}

TM_TEST(thrift_zigzag) {
  int64_t vals[] = {0, -1, 1, INT64_MIN, INT64_MAX, -123456789};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
    TM_ASSERT(tm_unzigzag64(tm_zigzag64(vals[i])) == vals[i]);
  TM_ASSERT(tm_zigzag64(-1) == 1);
  TM_ASSERT(tm_zigzag64(1) == 2);
}
