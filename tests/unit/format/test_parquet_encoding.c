/* Unit tests for the Parquet encodings (format/parquet/encoding.c) and the
 * column-chunk decoder (column.c), page by page and encoding by encoding:
 * PLAIN, PLAIN_DICTIONARY/RLE_DICTIONARY, RLE, BIT_PACKED levels,
 * DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
 * BYTE_STREAM_SPLIT, data pages v1 and v2 (issue 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "tm_test.h"
#include "util/alloc.h"

/* ---- RLE / bit-packed hybrid --------------------------------------------- */

TM_TEST(rle_hybrid_runs) {
  /* bit width 3: RLE run of 5 x 6, then a bit-packed run of 8 values 0..7. */
  uint8_t data[] = {5 << 1, 6, (1 << 1) | 1, 0x88, 0xc6, 0xfa};
  tm_pq_rle d;
  tm_parquet__rle_init(&d, data, sizeof data, 3);
  uint32_t out[13];
  tm_error err;
  TM_ASSERT_OK(tm_parquet__rle_get(&d, out, 13, &err), &err);
  for (int i = 0; i < 5; i++) TM_ASSERT_INT_EQ(out[i], 6);
  for (int i = 0; i < 8; i++) TM_ASSERT_INT_EQ(out[5 + i], i);
  /* Nothing more. */
  TM_ASSERT_RC(tm_parquet__rle_get(&d, out, 1, &err), TM_ECORRUPT);
}

TM_TEST(rle_hybrid_errors) {
  tm_error err;
  uint32_t out[8];
  tm_pq_rle d;
  uint8_t zero_run[] = {0, 1};
  tm_parquet__rle_init(&d, zero_run, sizeof zero_run, 1);
  TM_ASSERT_RC(tm_parquet__rle_get(&d, out, 1, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "length 0");
  uint8_t wide[] = {2 << 1, 9}; /* value 9 does not fit 3 bits */
  tm_parquet__rle_init(&d, wide, sizeof wide, 3);
  TM_ASSERT_RC(tm_parquet__rle_get(&d, out, 1, &err), TM_ECORRUPT);
  uint8_t cut[] = {(4 << 1) | 1, 0xff}; /* 32 packed values announced, 1 byte present */
  tm_parquet__rle_init(&d, cut, sizeof cut, 1);
  TM_ASSERT_OK(tm_parquet__rle_get(&d, out, 8, &err), &err); /* the 8 present */
  TM_ASSERT_RC(tm_parquet__rle_get(&d, out, 1, &err), TM_ECORRUPT);
}

TM_TEST(rle_validity_bits) {
  /* width 1: 10 x 1, packed 16 values (0xa5 0x0f), 3 x 0. Decoded at bit 3. */
  uint8_t data[] = {10 << 1, 1, (2 << 1) | 1, 0xa5, 0x0f, 3 << 1, 0};
  tm_pq_rle d;
  tm_parquet__rle_init(&d, data, sizeof data, 1);
  uint8_t bits[8] = {0};
  size_t valid;
  tm_error err;
  TM_ASSERT_OK(tm_parquet__rle_validity(&d, bits, 3, 29, &valid, &err), &err);
  int want[29];
  for (int i = 0; i < 10; i++) want[i] = 1;
  for (int i = 0; i < 16; i++) want[10 + i] = i < 8 ? (0xa5 >> i) & 1 : (0x0f >> (i - 8)) & 1;
  for (int i = 26; i < 29; i++) want[i] = 0;
  size_t n_want = 0;
  for (int i = 0; i < 29; i++) {
    TM_ASSERT_MSG(tm_bit_get(bits, 3 + i) == want[i], "bit %d", i);
    n_want += (size_t)want[i];
  }
  TM_ASSERT_INT_EQ(valid, n_want);
  TM_ASSERT(!tm_bit_get(bits, 0) && !tm_bit_get(bits, 2) && !tm_bit_get(bits, 32));
}

TM_TEST(bit_packed_legacy_levels_msb_first) {
  uint8_t data[] = {0x80, 0x01}; /* MSB first: level 1 at 0, at 15 */
  uint8_t bits[4] = {0};
  size_t valid;
  tm_error err;
  TM_ASSERT_OK(tm_parquet__bitpacked_validity(data, 2, 0, bits, 0, 16, &valid, &err), &err);
  TM_ASSERT_INT_EQ(valid, 2);
  TM_ASSERT(tm_bit_get(bits, 0) && tm_bit_get(bits, 15) && !tm_bit_get(bits, 1));
  TM_ASSERT_RC(tm_parquet__bitpacked_validity(data, 2, 0, bits, 0, 17, &valid, &err), TM_ECORRUPT);
}

/* ---- DELTA_BINARY_PACKED ------------------------------------------------- */

static void put_uleb(tm_buf *b, uint64_t v) {
  tm_error err;
  TM_ASSERT_OK(tm_thrift_put_uvarint(b, v, &err), &err);
}

/* A straightforward encoder (block 128, 4 miniblocks of 32) for the tests. */
static void delta_encode(tm_buf *b, const int64_t *v, size_t n) {
  put_uleb(b, 128);
  put_uleb(b, 4);
  put_uleb(b, n);
  put_uleb(b, tm_zigzag64(n ? v[0] : 0));
  size_t i = 1;
  tm_error err;
  while (i < n) {
    uint64_t deltas[128];
    size_t k = 0;
    int64_t min = INT64_MAX;
    for (; k < 128 && i + k < n; k++) {
      deltas[k] = (uint64_t)v[i + k] - (uint64_t)v[i + k - 1];
      if ((int64_t)deltas[k] < min) min = (int64_t)deltas[k];
    }
    put_uleb(b, tm_zigzag64(min));
    int widths[4] = {0};
    for (size_t m = 0; m < 4; m++)
      for (size_t j = m * 32; j < (m + 1) * 32 && j < k; j++)
        widths[m] = widths[m] > tm_parquet__bit_width(deltas[j] - (uint64_t)min)
                        ? widths[m]
                        : tm_parquet__bit_width(deltas[j] - (uint64_t)min);
    for (int m = 0; m < 4; m++) TM_ASSERT_OK(tm_buf_putc(b, (char)widths[m], &err), &err);
    for (size_t m = 0; m < 4 && m * 32 < k; m++) {
      int w = widths[m];
      uint8_t packed[32 * 8 + 8] = {0};
      for (size_t j = 0; j < 32; j++) {
        uint64_t x = m * 32 + j < k ? deltas[m * 32 + j] - (uint64_t)min : 0;
        for (int bit = 0; bit < w; bit++)
          if ((x >> bit) & 1) {
            size_t pos = j * (size_t)w + (size_t)bit;
            packed[pos >> 3] |= (uint8_t)(1u << (pos & 7));
          }
      }
      TM_ASSERT_OK(tm_buf_append(b, packed, (size_t)w * 4, &err), &err);
    }
    i += k;
  }
}

TM_TEST(delta_binary_packed_spec_example) {
  /* parquet-format's example: 1 2 3 4 5 -> one block, min delta 1, widths 0. */
  const uint8_t data[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  tm_buf out = TM_BUF_INIT(1 << 20);
  size_t n, used;
  tm_error err;
  TM_ASSERT_OK(tm_parquet__delta_decode(data, sizeof data, false, 100, &out, &n, &used, &err), &err);
  TM_ASSERT_INT_EQ(n, 5);
  TM_ASSERT_INT_EQ(used, sizeof data);
  for (int i = 0; i < 5; i++) TM_ASSERT_INT_EQ(((int32_t *)out.ptr)[i], i + 1);
  tm_buf_dispose(&out);
}

TM_TEST(delta_binary_packed_round_trip) {
  size_t n = 1000;
  int64_t *v = tm_calloc(n, sizeof *v);
  TM_ASSERT(v);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v[i] = i % 97 == 0 ? INT64_MIN : i % 89 == 0 ? INT64_MAX : (int64_t)(x % 100000) - 50000;
  }
  tm_buf enc = TM_BUF_INIT(1 << 24), out = TM_BUF_INIT(1 << 24);
  delta_encode(&enc, v, n);
  size_t got, used;
  tm_error err;
  TM_ASSERT_OK(tm_parquet__delta_decode((const uint8_t *)enc.ptr, enc.len, true, n, &out, &got, &used, &err), &err);
  TM_ASSERT_INT_EQ(got, n);
  TM_ASSERT_INT_EQ(used, enc.len);
  for (size_t i = 0; i < n; i++) TM_ASSERT(((int64_t *)out.ptr)[i] == v[i]);
  /* More values than the page may hold is corrupt. */
  tm_buf_clear(&out);
  TM_ASSERT_RC(tm_parquet__delta_decode((const uint8_t *)enc.ptr, enc.len, true, n - 1, &out, &got, &used, &err),
               TM_ECORRUPT);
  /* Every truncation fails cleanly, except a cut into the padding of the
   * last miniblock, which some writers omit: then all values are there. */
  for (size_t cut = 0; cut < enc.len; cut++) {
    tm_buf_clear(&out);
    int rc = tm_parquet__delta_decode((const uint8_t *)enc.ptr, cut, true, n, &out, &got, &used, &err);
    if (rc == TM_OK) {
      TM_ASSERT_INT_EQ(got, n);
      for (size_t i = 0; i < n; i++) TM_ASSERT(((int64_t *)out.ptr)[i] == v[i]);
    } else {
      TM_ASSERT_RC(rc, TM_ECORRUPT);
    }
  }
  tm_buf_dispose(&enc);
  tm_buf_dispose(&out);
  tm_free(v);
}

TM_TEST(delta_binary_packed_bad_header) {
  const uint8_t bad_block[] = {0x7f, 0x04, 0x05, 0x02}; /* block size 127 */
  tm_buf out = TM_BUF_INIT(1 << 20);
  size_t n, used;
  tm_error err;
  TM_ASSERT_RC(tm_parquet__delta_decode(bad_block, sizeof bad_block, false, 10, &out, &n, &used, &err),
               TM_ECORRUPT);
  const uint8_t wide[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 65, 0, 0, 0}; /* width 65 */
  TM_ASSERT_RC(tm_parquet__delta_decode(wide, sizeof wide, true, 10, &out, &n, &used, &err), TM_ECORRUPT);
  tm_buf_dispose(&out);
}

TM_TEST(half_floats) {
  TM_ASSERT_DBL_EQ(tm_parquet__half_to_float(0x3c00), 1.0);
  TM_ASSERT_DBL_EQ(tm_parquet__half_to_float(0xc000), -2.0);
  TM_ASSERT_DBL_EQ(tm_parquet__half_to_float(0x7bff), 65504.0);
  TM_ASSERT_DBL_EQ(tm_parquet__half_to_float(0x0001), ldexp(1.0, -24));
  TM_ASSERT(isinf(tm_parquet__half_to_float(0x7c00)));
  TM_ASSERT(isnan(tm_parquet__half_to_float(0x7e00)));
  TM_ASSERT(signbit(tm_parquet__half_to_float(0x8000)));
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = tm_parquet__half_to_float((uint16_t)h);
    if (isnan(f)) continue;
    TM_ASSERT_MSG(tm_parquet__float_to_half(f) == h, "half %04x", h);
  }
}

/* ---- column chunks ------------------------------------------------------- */

typedef struct page_spec {
  int type;          /* TM_PQ_PAGE_* */
  int encoding;
  int32_t num_values;
  int32_t num_nulls; /* v2 */
  const void *levels; /* v1: with its 4-byte length prefix; v2: raw */
  size_t levels_len;
  const void *values;
  size_t values_len;
} page_spec;

/* Appends one uncompressed page (header + body) to chunk. */
static void add_page(tm_buf *chunk, const page_spec *p) {
  tm_error err;
  tm_buf body = TM_BUF_INIT(1 << 24);
  if (p->levels_len) TM_ASSERT_OK(tm_buf_append(&body, p->levels, p->levels_len, &err), &err);
  if (p->values_len) TM_ASSERT_OK(tm_buf_append(&body, p->values, p->values_len, &err), &err);
  tm_thrift_writer w;
  tm_thrift_writer_init(&w, chunk);
  tm_thrift_write_struct_begin(&w);
  tm_thrift_write_field_i32(&w, 1, p->type);
  tm_thrift_write_field_i32(&w, 2, (int32_t)body.len);
  tm_thrift_write_field_i32(&w, 3, (int32_t)body.len);
  if (p->type == TM_PQ_PAGE_DATA) {
    tm_thrift_write_field_struct(&w, 5);
    tm_thrift_write_field_i32(&w, 1, p->num_values);
    tm_thrift_write_field_i32(&w, 2, p->encoding);
    tm_thrift_write_field_i32(&w, 3, 3);
    tm_thrift_write_field_i32(&w, 4, 3);
    tm_thrift_write_struct_end(&w);
  } else if (p->type == TM_PQ_PAGE_DICTIONARY) {
    tm_thrift_write_field_struct(&w, 7);
    tm_thrift_write_field_i32(&w, 1, p->num_values);
    tm_thrift_write_field_i32(&w, 2, p->encoding);
    tm_thrift_write_struct_end(&w);
  } else {
    tm_thrift_write_field_struct(&w, 8);
    tm_thrift_write_field_i32(&w, 1, p->num_values);
    tm_thrift_write_field_i32(&w, 2, p->num_nulls);
    tm_thrift_write_field_i32(&w, 3, p->num_values);
    tm_thrift_write_field_i32(&w, 4, p->encoding);
    tm_thrift_write_field_i32(&w, 5, (int32_t)p->levels_len);
    tm_thrift_write_field_i32(&w, 6, 0);
    tm_thrift_write_field_bool(&w, 7, false);
    tm_thrift_write_struct_end(&w);
  }
  tm_thrift_write_struct_end(&w);
  TM_ASSERT_OK(tm_thrift_writer_status(&w, &err), &err);
  TM_ASSERT_OK(tm_buf_append(chunk, body.ptr, body.len, &err), &err);
  tm_buf_dispose(&body);
}

/* Decodes a whole chunk into one column and returns it as a batch column view. */
static int decode(tm_buf *chunk, int phys, int32_t type_length, tm_type type, int max_def,
                  int64_t n, int64_t step, tm_colbuilder *cb, tm_error *err) {
  tm_pq_column_desc d;
  memset(&d, 0, sizeof d);
  d.file = "test.parquet";
  d.name = "c";
  d.phys = phys;
  d.type_length = type_length;
  d.type = type;
  d.max_def = max_def;
  d.codec = 0;
  d.num_values = n;
  size_t len;
  uint8_t *bytes = (uint8_t *)tm_buf_take(chunk, &len);
  tm_pq_column *c;
  tm_colbuilder_init(cb, type, 0);
  int rc = tm_parquet__column_new(&c, &d, bytes, len, err);
  if (rc < 0) return rc;
  for (int64_t done = 0; done < n && rc == TM_OK; done += step)
    rc = tm_parquet__column_read(c, cb, done + step > n ? n - done : step, err);
  tm_parquet__column_free(c);
  return rc;
}

/* v1 definition levels (width 1) for a validity pattern, with length prefix. */
static size_t levels_v1(uint8_t *out, const int *valid, size_t n) {
  size_t groups = (n + 7) / 8;
  uint8_t *p = out + 4;
  *p++ = (uint8_t)((groups << 1) | 1);
  memset(p, 0, groups);
  for (size_t i = 0; i < n; i++)
    if (valid[i]) p[i / 8] |= (uint8_t)(1u << (i % 8));
  uint32_t len = (uint32_t)(1 + groups);
  memcpy(out, &len, 4);
  return 4 + len;
}

TM_TEST(column_plain_int32_with_nulls_v1) {
  int valid[10] = {1, 0, 1, 1, 0, 0, 1, 1, 1, 0};
  int32_t vals[6] = {10, -20, 30, INT32_MIN, INT32_MAX, 60};
  uint8_t lv[32];
  size_t lvn = levels_v1(lv, valid, 10);
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA, 0, 10, 0, lv, lvn, vals, sizeof vals};
  add_page(&chunk, &p);
  tm_colbuilder cb;
  tm_error err;
  /* Read in odd steps so that runs split across calls. */
  TM_ASSERT_OK(decode(&chunk, TM_PQ_INT32, -1, tm_type_of(TM_TYPE_INT32), 1, 10, 3, &cb, &err), &err);
  TM_ASSERT_INT_EQ(cb.length, 10);
  TM_ASSERT_INT_EQ(cb.null_count, 4);
  const int32_t *v = (const int32_t *)cb.values.ptr;
  int k = 0;
  for (int i = 0; i < 10; i++) {
    TM_ASSERT_INT_EQ(tm_bit_get((const uint8_t *)cb.validity.ptr, i), valid[i]);
    if (valid[i]) TM_ASSERT_INT_EQ(v[i], vals[k++]);
  }
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_dictionary_strings_two_pages) {
  /* Dictionary of 3 strings; two data pages of indices (one v1, one v2). */
  uint8_t dict[64];
  size_t dn = 0;
  const char *words[3] = {"alpha", "", "gamma-long-word"};
  for (int i = 0; i < 3; i++) {
    uint32_t l = (uint32_t)strlen(words[i]);
    memcpy(dict + dn, &l, 4);
    memcpy(dict + dn + 4, words[i], l);
    dn += 4 + l;
  }
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec pd = {TM_PQ_PAGE_DICTIONARY, 0, 3, 0, NULL, 0, dict, dn};
  add_page(&chunk, &pd);
  /* v1 page: indices 2,0,1,2 bit width 2 packed; required column. */
  uint8_t idx1[] = {2, (1 << 1) | 1, 0x92, 0x00};
  page_spec p1 = {TM_PQ_PAGE_DATA, 8, 4, 0, NULL, 0, idx1, sizeof idx1};
  add_page(&chunk, &p1);
  /* v2 page: RLE run of 5 x index 1. */
  uint8_t idx2[] = {2, 5 << 1, 1};
  page_spec p2 = {TM_PQ_PAGE_DATA_V2, 2, 5, 0, NULL, 0, idx2, sizeof idx2};
  add_page(&chunk, &p2);
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_BYTE_ARRAY, -1, tm_type_of(TM_TYPE_UTF8), 0, 9, 9, &cb, &err), &err);
  const int32_t *off = (const int32_t *)cb.values.ptr;
  const char *want[9] = {"gamma-long-word", "alpha", "", "gamma-long-word", "", "", "", "", ""};
  for (int i = 0; i < 9; i++) {
    size_t l = (size_t)(off[i + 1] - off[i]);
    TM_ASSERT_MSG(l == strlen(want[i]) && memcmp(cb.data.ptr + off[i], want[i], l) == 0, "row %d", i);
  }
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_dictionary_strings_many_rows_one_read) {
  /* More indices than one decode chunk (1024), read in one call: the string
   * data must grow across chunks (regression: it was reserved per chunk from
   * a stale length). */
  char dict[2 * (4 + 300)];
  uint32_t l = 300;
  memcpy(dict, &l, 4);
  memset(dict + 4, 'a', 300);
  memcpy(dict + 304, &l, 4);
  memset(dict + 308, 'b', 300);
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec pd = {TM_PQ_PAGE_DICTIONARY, 0, 2, 0, NULL, 0, dict, sizeof dict};
  add_page(&chunk, &pd);
  /* 5000 indices alternating 0 1: bit-packed, width 1. */
  uint8_t idx[3 + 5000 / 8];
  size_t groups = 5000 / 8;
  idx[0] = 1;                                                   /* bit width */
  idx[1] = (uint8_t)((((groups << 1) | 1) & 0x7f) | 0x80);      /* run header, */
  idx[2] = (uint8_t)(((groups << 1) | 1) >> 7);                 /* a 2-byte uleb */
  size_t n_idx = 3;
  for (size_t g = 0; g < groups; g++) idx[n_idx++] = 0xaa; /* 0,1,0,1,... */
  page_spec p = {TM_PQ_PAGE_DATA, 8, 5000, 0, NULL, 0, idx, n_idx};
  add_page(&chunk, &p);
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_BYTE_ARRAY, -1, tm_type_of(TM_TYPE_UTF8), 0, 5000, 5000, &cb, &err), &err);
  const int32_t *off = (const int32_t *)cb.values.ptr;
  TM_ASSERT_INT_EQ(off[5000], 5000 * 300);
  for (int i = 0; i < 5000; i += 499)
    TM_ASSERT(cb.data.ptr[off[i]] == (i % 2 ? 'b' : 'a') && off[i + 1] - off[i] == 300);
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_dictionary_index_out_of_range) {
  int32_t dict[2] = {5, 6};
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec pd = {TM_PQ_PAGE_DICTIONARY, 0, 2, 0, NULL, 0, dict, sizeof dict};
  add_page(&chunk, &pd);
  uint8_t idx[] = {2, 3 << 1, 3}; /* index 3 of 2 entries */
  page_spec p = {TM_PQ_PAGE_DATA, 8, 3, 0, NULL, 0, idx, sizeof idx};
  add_page(&chunk, &p);
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_RC(decode(&chunk, TM_PQ_INT32, -1, tm_type_of(TM_TYPE_INT32), 0, 3, 3, &cb, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "test.parquet: column 'c': dictionary index 3 out of 2");
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_delta_length_and_delta_byte_array) {
  /* DELTA_LENGTH_BYTE_ARRAY: "ab", "", "cde". */
  tm_buf vals = TM_BUF_INIT(1 << 20);
  int64_t lens[3] = {2, 0, 3};
  delta_encode(&vals, lens, 3);
  tm_error err;
  TM_ASSERT_OK(tm_buf_append(&vals, "abcde", 5, &err), &err);
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA, 6, 3, 0, NULL, 0, vals.ptr, vals.len};
  add_page(&chunk, &p);
  tm_colbuilder cb;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_BYTE_ARRAY, -1, tm_type_of(TM_TYPE_BINARY), 0, 3, 2, &cb, &err), &err);
  const int32_t *off = (const int32_t *)cb.values.ptr;
  TM_ASSERT_INT_EQ(off[1], 2);
  TM_ASSERT_INT_EQ(off[2], 2);
  TM_ASSERT_INT_EQ(off[3], 5);
  TM_ASSERT(memcmp(cb.data.ptr, "abcde", 5) == 0);
  tm_colbuilder_dispose(&cb);

  /* DELTA_BYTE_ARRAY: "apple", "applied", "apply", "banana": prefixes 0,4,4,0. */
  tm_buf_clear(&vals);
  int64_t pre[4] = {0, 4, 4, 0};
  int64_t suf[4] = {5, 3, 1, 6};
  delta_encode(&vals, pre, 4);
  delta_encode(&vals, suf, 4);
  TM_ASSERT_OK(tm_buf_append(&vals, "appleiedybanana", 15, &err), &err);
  tm_buf chunk2 = TM_BUF_INIT(1 << 20);
  page_spec p2 = {TM_PQ_PAGE_DATA, 7, 4, 0, NULL, 0, vals.ptr, vals.len};
  add_page(&chunk2, &p2);
  TM_ASSERT_OK(decode(&chunk2, TM_PQ_BYTE_ARRAY, -1, tm_type_of(TM_TYPE_UTF8), 0, 4, 4, &cb, &err), &err);
  off = (const int32_t *)cb.values.ptr;
  const char *want[4] = {"apple", "applied", "apply", "banana"};
  for (int i = 0; i < 4; i++) {
    size_t l = (size_t)(off[i + 1] - off[i]);
    TM_ASSERT_MSG(l == strlen(want[i]) && memcmp(cb.data.ptr + off[i], want[i], l) == 0, "row %d", i);
  }
  tm_colbuilder_dispose(&cb);
  /* A prefix longer than the previous value is corrupt. */
  tm_buf_clear(&vals);
  int64_t badpre[2] = {0, 9};
  int64_t badsuf[2] = {1, 1};
  delta_encode(&vals, badpre, 2);
  delta_encode(&vals, badsuf, 2);
  TM_ASSERT_OK(tm_buf_append(&vals, "ab", 2, &err), &err);
  tm_buf chunk3 = TM_BUF_INIT(1 << 20);
  page_spec p3 = {TM_PQ_PAGE_DATA, 7, 2, 0, NULL, 0, vals.ptr, vals.len};
  add_page(&chunk3, &p3);
  TM_ASSERT_RC(decode(&chunk3, TM_PQ_BYTE_ARRAY, -1, tm_type_of(TM_TYPE_UTF8), 0, 2, 2, &cb, &err), TM_ECORRUPT);
  tm_colbuilder_dispose(&cb);
  tm_buf_dispose(&vals);
}

TM_TEST(column_byte_stream_split_double_with_nulls_v2) {
  double vals[3] = {1.5, -0.0, 1e300};
  uint8_t split[24];
  for (int b = 0; b < 8; b++)
    for (int i = 0; i < 3; i++) split[b * 3 + i] = ((const uint8_t *)&vals[i])[b];
  /* v2 levels (no length prefix): 5 values, pattern 1 0 1 0 1 packed. */
  uint8_t lv[] = {(1 << 1) | 1, 0x15};
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA_V2, 9, 5, 2, lv, sizeof lv, split, sizeof split};
  add_page(&chunk, &p);
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_DOUBLE, -1, tm_type_of(TM_TYPE_FLOAT64), 1, 5, 5, &cb, &err), &err);
  const double *v = (const double *)cb.values.ptr;
  TM_ASSERT_INT_EQ(cb.null_count, 2);
  TM_ASSERT_DBL_EQ(v[0], 1.5);
  TM_ASSERT(v[2] == 0.0 && signbit(v[2]));
  TM_ASSERT_DBL_EQ(v[4], 1e300);
  TM_ASSERT(!tm_bit_get((const uint8_t *)cb.validity.ptr, 1));
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_rle_booleans_and_plain_booleans) {
  /* RLE booleans (with 4-byte length): 3 x true, packed 8: 0b01010101. */
  uint8_t rle[] = {4, 0, 0, 0, 3 << 1, 1, (1 << 1) | 1, 0x55};
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA, 3, 11, 0, NULL, 0, rle, sizeof rle};
  add_page(&chunk, &p);
  uint8_t plain[] = {0x05}; /* PLAIN: true false true */
  page_spec p2 = {TM_PQ_PAGE_DATA, 0, 3, 0, NULL, 0, plain, sizeof plain};
  add_page(&chunk, &p2);
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_BOOLEAN, -1, tm_type_of(TM_TYPE_BOOL), 0, 14, 4, &cb, &err), &err);
  int want[14] = {1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  for (int i = 0; i < 14; i++)
    TM_ASSERT_MSG(tm_bit_get((const uint8_t *)cb.values.ptr, i) == want[i], "row %d", i);
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_conversions) {
  /* INT32 with TIME(MILLIS) -> time64(us); FLBA(16) decimal -> decimal128. */
  int32_t ms[2] = {1500, -1};
  tm_buf chunk = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA, 0, 2, 0, NULL, 0, ms, sizeof ms};
  add_page(&chunk, &p);
  tm_type t = tm_type_of(TM_TYPE_TIME64);
  t.unit = TM_UNIT_MICRO;
  tm_colbuilder cb;
  tm_error err;
  TM_ASSERT_OK(decode(&chunk, TM_PQ_INT32, -1, t, 0, 2, 2, &cb, &err), &err);
  TM_ASSERT(((int64_t *)cb.values.ptr)[0] == 1500000);
  TM_ASSERT(((int64_t *)cb.values.ptr)[1] == -1000);
  tm_colbuilder_dispose(&cb);

  uint8_t be[6] = {0xff, 0xff, 0xff, 0xff, 0xfe, 0x0c}; /* -500 in 6 bytes */
  tm_buf chunk2 = TM_BUF_INIT(1 << 20);
  page_spec p2 = {TM_PQ_PAGE_DATA, 0, 1, 0, NULL, 0, be, sizeof be};
  add_page(&chunk2, &p2);
  TM_ASSERT_OK(decode(&chunk2, TM_PQ_FLBA, 6, tm_type_decimal(10, 2), 0, 1, 1, &cb, &err), &err);
  int64_t lo, hi;
  memcpy(&lo, cb.values.ptr, 8);
  memcpy(&hi, cb.values.ptr + 8, 8);
  TM_ASSERT(lo == -500 && hi == -1);
  tm_colbuilder_dispose(&cb);

  /* INT96 -> timestamp(ns): 1970-01-02 00:00:01 = julian 2440589, 1e9 ns. */
  uint8_t i96[12];
  int64_t nanos = 1000000000;
  int32_t jd = 2440589;
  memcpy(i96, &nanos, 8);
  memcpy(i96 + 8, &jd, 4);
  tm_buf chunk3 = TM_BUF_INIT(1 << 20);
  page_spec p3 = {TM_PQ_PAGE_DATA, 0, 1, 0, NULL, 0, i96, sizeof i96};
  add_page(&chunk3, &p3);
  TM_ASSERT_OK(decode(&chunk3, TM_PQ_INT96, -1, tm_type_timestamp(TM_UNIT_NANO, false), 0, 1, 1, &cb, &err), &err);
  TM_ASSERT(((int64_t *)cb.values.ptr)[0] == INT64_C(86401000000000));
  tm_colbuilder_dispose(&cb);
  /* Out of the ns range: year ~ 5,800,000. */
  jd = 2000000000;
  memcpy(i96 + 8, &jd, 4);
  tm_buf chunk4 = TM_BUF_INIT(1 << 20);
  page_spec p4 = {TM_PQ_PAGE_DATA, 0, 1, 0, NULL, 0, i96, sizeof i96};
  add_page(&chunk4, &p4);
  TM_ASSERT_RC(decode(&chunk4, TM_PQ_INT96, -1, tm_type_timestamp(TM_UNIT_NANO, false), 0, 1, 1, &cb, &err),
               TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "INT96 timestamp outside");
  tm_colbuilder_dispose(&cb);
}

TM_TEST(column_truncated_chunk_never_overreads) {
  /* Every prefix of a valid chunk fails cleanly (or, for the full length, reads). */
  int valid[10] = {1, 0, 1, 1, 0, 0, 1, 1, 1, 0};
  int32_t vals[6] = {1, 2, 3, 4, 5, 6};
  uint8_t lv[32];
  size_t lvn = levels_v1(lv, valid, 10);
  tm_buf full = TM_BUF_INIT(1 << 20);
  page_spec p = {TM_PQ_PAGE_DATA, 0, 10, 0, lv, lvn, vals, sizeof vals};
  add_page(&full, &p);
  tm_error err;
  for (size_t cut = 0; cut <= full.len; cut++) {
    tm_buf chunk = TM_BUF_INIT(1 << 20);
    TM_ASSERT_OK(tm_buf_append(&chunk, full.ptr, cut, &err), &err);
    tm_colbuilder cb;
    int rc = decode(&chunk, TM_PQ_INT32, -1, tm_type_of(TM_TYPE_INT32), 1, 10, 10, &cb, &err);
    if (cut == full.len) TM_ASSERT_OK(rc, &err);
    else TM_ASSERT_MSG(rc == TM_ECORRUPT, "cut %zu: rc %d", cut, rc);
    tm_colbuilder_dispose(&cb);
    tm_buf_dispose(&chunk);
  }
  tm_buf_dispose(&full);
}
