/* Unit tests for the Parquet writer (format/parquet/writer.c): round trips
 * of every tm_type with nulls and edge values through our reader, every
 * codec, row-group sizes, dictionaries, statistics, field ids and key/value
 * metadata; and the same files read by DuckDB, which must see identical
 * values and statistics equal to its own aggregates (issue 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/arrow/render.h"
#include "format/parquet/parquet.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

#define ROWS 3000

static tm_type t_time(tm_time_unit u) {
  tm_type t = tm_type_of(TM_TYPE_TIME64);
  t.unit = u;
  return t;
}

static tm_type t_uuid(void) {
  tm_type t = tm_type_fixed(16);
  t.uuid = true;
  return t;
}

/* Every tm_type; nullable except the first. */
static void make_schema(tm_schema *s) {
  tm_error err;
  struct {
    const char *name;
    tm_type type;
  } cols[] = {
      {"id", tm_type_of(TM_TYPE_INT64)},
      {"b", tm_type_of(TM_TYPE_BOOL)},
      {"i8", tm_type_of(TM_TYPE_INT8)},
      {"i16", tm_type_of(TM_TYPE_INT16)},
      {"i32", tm_type_of(TM_TYPE_INT32)},
      {"i64", tm_type_of(TM_TYPE_INT64)},
      {"u8", tm_type_of(TM_TYPE_UINT8)},
      {"u16", tm_type_of(TM_TYPE_UINT16)},
      {"u32", tm_type_of(TM_TYPE_UINT32)},
      {"u64", tm_type_of(TM_TYPE_UINT64)},
      {"f32", tm_type_of(TM_TYPE_FLOAT32)},
      {"f64", tm_type_of(TM_TYPE_FLOAT64)},
      {"g64", tm_type_of(TM_TYPE_FLOAT64)}, /* finite bounds, NaN and -0.0 */
      {"d9", tm_type_decimal(9, 2)},
      {"d18", tm_type_decimal(18, 4)},
      {"d38", tm_type_decimal(38, 10)},
      {"s", tm_type_of(TM_TYPE_UTF8)},
      {"kind", tm_type_of(TM_TYPE_UTF8)},
      {"bin", tm_type_of(TM_TYPE_BINARY)},
      {"fx", tm_type_fixed(3)},
      {"u", t_uuid()},
      {"day", tm_type_of(TM_TYPE_DATE32)},
      {"tus", t_time(TM_UNIT_MICRO)},
      {"tns", t_time(TM_UNIT_NANO)},
      {"ts_ms", tm_type_timestamp(TM_UNIT_MILLI, false)},
      {"ts_us", tm_type_timestamp(TM_UNIT_MICRO, true)},
      {"ts_ns", tm_type_timestamp(TM_UNIT_NANO, false)},
  };
  tm_schema_init(s);
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    TM_ASSERT_OK(tm_schema_add(s, cols[i].name, cols[i].type, i > 0, (int32_t)(i + 1), &err), &err);
}

static void put_dec(uint8_t d[16], __int128 v) { memcpy(d, &v, 16); }

static __int128 pow10_128(int n) {
  __int128 x = 1;
  while (n-- > 0) x *= 10;
  return x;
}

/* Rows with nulls and edge values; row r of column c is null when (r + c) % 11 == 0. */
static void make_batch(const tm_schema *s, int64_t rows, tm_batch *out) {
  tm_batch_builder bb;
  tm_error err;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, s, &err), &err);
  char *longstr = tm_malloc(70001);
  TM_ASSERT(longstr);
  for (int i = 0; i < 70000; i++) longstr[i] = (char)('a' + i % 26);
  longstr[70000] = '\0';
  static const char *kinds[] = {"click", "view", "buy", "refund", "share"};
  for (int64_t r = 0; r < rows; r++) {
    for (size_t c = 0; c < s->n_cols; c++) {
      tm_colbuilder *cb = tm_batch_builder_col(&bb, c);
      if (c > 0 && (r + (int64_t)c) % 11 == 0) {
        TM_ASSERT_OK(tm_colbuilder_append_null(cb, &err), &err);
        continue;
      }
      int edge = (int)(r % 7); /* 0: min, 1: max, others ordinary */
      const char *name = s->cols[c].name;
      int rc = TM_OK;
      if (!strcmp(name, "id")) rc = tm_colbuilder_append_int(cb, r, &err);
      else if (!strcmp(name, "b")) rc = tm_colbuilder_append_bool(cb, r % 3 == 0, &err);
      else if (!strcmp(name, "i8")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT8_MIN : edge == 1 ? INT8_MAX : r % 50 - 25, &err);
      else if (!strcmp(name, "i16")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT16_MIN : edge == 1 ? INT16_MAX : r - 1000, &err);
      else if (!strcmp(name, "i32")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT32_MIN : edge == 1 ? INT32_MAX : r * 1000, &err);
      else if (!strcmp(name, "i64")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT64_MIN : edge == 1 ? INT64_MAX : -r * 1000003, &err);
      else if (!strcmp(name, "u8")) rc = tm_colbuilder_append_uint(cb, edge == 1 ? UINT8_MAX : (uint64_t)(r % 200), &err);
      else if (!strcmp(name, "u16")) rc = tm_colbuilder_append_uint(cb, edge == 1 ? UINT16_MAX : (uint64_t)r, &err);
      else if (!strcmp(name, "u32")) rc = tm_colbuilder_append_uint(cb, edge == 1 ? UINT32_MAX : (uint64_t)r * 7, &err);
      else if (!strcmp(name, "u64")) rc = tm_colbuilder_append_uint(cb, edge == 1 ? UINT64_MAX : (uint64_t)r * 3, &err);
      else if (!strcmp(name, "f32") || !strcmp(name, "f64")) {
        double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 1e-310, 0.1};
        double v = r % 13 < 6 ? specials[r % 13] : (double)r / 3.0 - 400;
        rc = tm_colbuilder_append_double(cb, v, &err);
      } else if (!strcmp(name, "g64")) {
        double v = r % 9 == 0 ? NAN : r % 9 == 1 ? -0.0 : (double)(r % 100) / 7.0;
        rc = tm_colbuilder_append_double(cb, v, &err);
      } else if (!strcmp(name, "d9") || !strcmp(name, "d18") || !strcmp(name, "d38")) {
        int p = s->cols[c].type.precision;
        __int128 mx = pow10_128(p) - 1;
        uint8_t d[16];
        put_dec(d, edge == 0 ? -mx : edge == 1 ? mx : (__int128)(r * 12345 - 99999));
        rc = tm_colbuilder_append_decimal(cb, d, &err);
      } else if (!strcmp(name, "s")) {
        if (edge == 0) rc = tm_colbuilder_append_bytes(cb, "", 0, &err);
        else if (r == 5) rc = tm_colbuilder_append_bytes(cb, longstr, 70000, &err);
        else if (edge == 1) rc = tm_colbuilder_append_bytes(cb, "h\xc3\xa9llo, \"w\xc3\xb6rld\"\n", 17, &err);
        else {
          char buf[64];
          int n = snprintf(buf, sizeof buf, "payload-%06lld-%s", (long long)r, kinds[r % 5]);
          rc = tm_colbuilder_append_bytes(cb, buf, (size_t)n, &err);
        }
      } else if (!strcmp(name, "kind")) rc = tm_colbuilder_append_bytes(cb, kinds[r % 5], strlen(kinds[r % 5]), &err);
      else if (!strcmp(name, "bin")) {
        uint8_t b[4] = {0, (uint8_t)r, 0xff, '\\'};
        rc = tm_colbuilder_append_bytes(cb, b, (size_t)(r % 5), &err);
      } else if (!strcmp(name, "fx")) {
        uint8_t b[3] = {(uint8_t)(r % 3), 0, (uint8_t)(255 - r % 256)};
        rc = tm_colbuilder_append_bytes(cb, b, 3, &err);
      } else if (!strcmp(name, "u")) {
        uint8_t b[16];
        for (int k = 0; k < 16; k++) b[k] = (uint8_t)(r * 31 + k * 7);
        rc = tm_colbuilder_append_bytes(cb, b, 16, &err);
      } else if (!strcmp(name, "day")) rc = tm_colbuilder_append_int(cb, edge == 0 ? -719162 : edge == 1 ? 2932896 : r - 1500, &err);
      else if (!strcmp(name, "tus")) rc = tm_colbuilder_append_int(cb, edge == 1 ? INT64_C(86399999999) : r * 1000001, &err);
      else if (!strcmp(name, "tns")) rc = tm_colbuilder_append_int(cb, edge == 1 ? INT64_C(86399999999999) : r * 1000000001, &err);
      else if (!strcmp(name, "ts_ms")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT64_C(-62135596800000) : (r - 1500) * INT64_C(86400123), &err);
      else if (!strcmp(name, "ts_us")) rc = tm_colbuilder_append_int(cb, (r - 1500) * INT64_C(3600000001), &err);
      else if (!strcmp(name, "ts_ns")) rc = tm_colbuilder_append_int(cb, edge == 0 ? INT64_C(-9000000000000000000) : (r - 1500) * INT64_C(3600000000001), &err);
      TM_ASSERT_MSG(rc == TM_OK, "column %s row %lld: %s", name, (long long)r, err.message);
    }
  }
  tm_free(longstr);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
}

static bool same_cell(const tm_colview *a, int64_t ai, const tm_colview *b, int64_t bi) {
  tm_value x, y;
  tm_colview_get(a, ai, &x);
  tm_colview_get(b, bi, &y);
  if (x.is_null || y.is_null) return x.is_null == y.is_null;
  if (a->type.id == TM_TYPE_FLOAT32 || a->type.id == TM_TYPE_FLOAT64) {
    if (isnan(x.v.f) || isnan(y.v.f)) return isnan(x.v.f) && isnan(y.v.f);
    return x.v.f == y.v.f && signbit(x.v.f) == signbit(y.v.f);
  }
  return tm_value_cmp(&x, &y) == 0;
}

/* Writes b with opts into memory, reads it back and compares everything. */
static void round_trip(const tm_batch *b, const tm_parquet_writer_options *opts, size_t want_rgs) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &b->schema, opts, tm_parquet_sink_buf, &out, &err), &err);
  /* Feed it in uneven slices to cross row-group boundaries mid-batch. */
  int64_t from = 0, step = 777;
  while (from < b->n_rows) {
    int64_t k = b->n_rows - from < step ? b->n_rows - from : step;
    uint8_t *keep = tm_calloc((size_t)(b->n_rows + 7) / 8, 1);
    for (int64_t r = from; r < from + k; r++) tm_bit_set(keep, r);
    tm_batch part;
    TM_ASSERT_OK(tm_batch_filter(b, keep, &part, &err), &err);
    TM_ASSERT_OK(tm_parquet_writer_write(w, &part, &err), &err);
    tm_batch_release(&part);
    tm_free(keep);
    from += k;
  }
  TM_ASSERT_INT_EQ(tm_parquet_writer_rows(w), b->n_rows);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);

  size_t len;
  char *bytes = tm_buf_take(&out, &len);
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "written.parquet", bytes, len, true, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  TM_ASSERT_INT_EQ(tm_parquet_num_rows(f), b->n_rows);
  if (want_rgs) TM_ASSERT_INT_EQ(tm_parquet_num_row_groups(f), want_rgs);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_parquet_schema(f, &s, &err), &err);
  TM_ASSERT(tm_schema_equal(&s, &b->schema));
  for (size_t c = 0; c < s.n_cols; c++) TM_ASSERT_INT_EQ(s.cols[c].field_id, (int)c + 1);
  tm_schema_dispose(&s);

  tm_parquet_scan *sc;
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.batch_rows = 1000;
  TM_ASSERT_OK(tm_parquet_scan_new(&sc, f, &so, &err), &err);
  tm_batch rb;
  tm_batch_init(&rb);
  int64_t row = 0;
  int rc;
  while ((rc = tm_parquet_scan_next(sc, &rb, &err)) == TM_OK) {
    for (size_t c = 0; c < b->schema.n_cols; c++) {
      tm_colview orig = tm_batch_col(b, c), got = tm_batch_col(&rb, c);
      for (int64_t i = 0; i < rb.n_rows; i++)
        TM_ASSERT_MSG(same_cell(&orig, row + i, &got, i), "column %s row %lld differs",
                      b->schema.cols[c].name, (long long)(row + i));
    }
    row += rb.n_rows;
    tm_batch_release(&rb);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(row, b->n_rows);
  tm_parquet_scan_free(sc);

  /* Statistics of every chunk equal the data's own bounds. */
  int64_t rg_start = 0;
  for (size_t g = 0; g < tm_parquet_num_row_groups(f); g++) {
    int64_t n = tm_parquet_row_group_rows(f, g);
    for (size_t c = 0; c < b->schema.n_cols; c++) {
      tm_col_stats st;
      tm_parquet_column_stats(f, g, c, &st);
      tm_colview v = tm_batch_col(b, c);
      int64_t nulls = 0, lo = -1, hi = -1;
      for (int64_t i = rg_start; i < rg_start + n; i++) {
        tm_value x, y;
        tm_colview_get(&v, i, &x);
        if (x.is_null) {
          nulls++;
          continue;
        }
        if ((x.type == TM_TYPE_FLOAT32 || x.type == TM_TYPE_FLOAT64) && isnan(x.v.f)) continue;
        if (lo < 0) lo = hi = i;
        tm_colview_get(&v, lo, &y);
        if (tm_value_cmp(&x, &y) < 0) lo = i;
        tm_colview_get(&v, hi, &y);
        if (tm_value_cmp(&x, &y) > 0) hi = i;
      }
      TM_ASSERT_INT_EQ(st.null_count, nulls);
      TM_ASSERT_INT_EQ(st.row_count, n);
      tm_value x, y;
      if (lo >= 0) {
        tm_colview_get(&v, lo, &x);
        tm_colview_get(&v, hi, &y);
      }
      /* Bounds longer than 64 KiB are left out of the footer. */
      bool too_long = lo >= 0 && x.type == TM_TYPE_UTF8 && (x.v.s.len > 65536 || y.v.s.len > 65536);
      if (lo < 0 || too_long) {
        TM_ASSERT(!st.has_min && !st.has_max);
        continue;
      }
      TM_ASSERT_MSG(st.has_min && st.has_max, "column %s has no bounds", b->schema.cols[c].name);
      TM_ASSERT_MSG(tm_value_cmp(&st.min, &x) == 0 && tm_value_cmp(&st.max, &y) == 0,
                    "column %s row group %zu bounds differ", b->schema.cols[c].name, g);
    }
    rg_start += n;
  }
  tm_parquet_close(f);
}

TM_TEST(writer_round_trip_every_type_every_codec) {
  tm_schema s;
  make_schema(&s);
  tm_batch b;
  make_batch(&s, ROWS, &b);
  tm_parquet_codec codecs[] = {TM_PARQUET_ZSTD, TM_PARQUET_SNAPPY, TM_PARQUET_UNCOMPRESSED,
                               TM_PARQUET_GZIP};
  for (size_t k = 0; k < 4; k++) {
    tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
    o.codec = codecs[k];
    o.row_group_rows = 1000;
    o.dictionary = k % 2 == 0;
    o.page_bytes = k == 2 ? 4096 : 0; /* many small pages */
    round_trip(&b, &o, 3);
  }
  /* Defaults: one row group. */
  round_trip(&b, NULL, 1);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

TM_TEST(writer_metadata_and_dictionary) {
  tm_schema s;
  make_schema(&s);
  tm_batch b;
  make_batch(&s, 2000, &b);
  tm_error err;
  tm_kv kv;
  tm_kv_init(&kv);
  TM_ASSERT_OK(tm_kv_set(&kv, "iceberg.schema", "{\"type\":\"struct\"}", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&kv, "writer", "test", &err), &err);
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.kv = &kv;
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, &o, tm_parquet_sink_buf, &out, &err), &err);
  tm_kv_dispose(&kv); /* copied */
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "m.parquet", out.ptr, out.len, false, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  TM_ASSERT_INT_EQ(tm_parquet_kv_count(f), 2);
  tm_strview k, v;
  bool has;
  tm_parquet_kv_at(f, 0, &k, &v, &has);
  TM_ASSERT(tm_sv_eq_cstr(k, "iceberg.schema") && has && tm_sv_eq_cstr(v, "{\"type\":\"struct\"}"));
  tm_strview cb = tm_parquet_created_by(f);
  TM_ASSERT(cb.len > 8 && memcmp(cb.ptr, "tidemark", 8) == 0);
  /* The low-cardinality column is dictionary-encoded, the unique one is not. */
  tm_parquet_chunk_info ci;
  TM_ASSERT_OK(tm_parquet_chunk_info_at(f, 0, (size_t)tm_parquet_find_field(f, "kind"), &ci, &err), &err);
  TM_ASSERT(ci.encodings & (1u << 8));
  TM_ASSERT(ci.dictionary_page_offset > 0);
  TM_ASSERT_INT_EQ(ci.codec, TM_PARQUET_ZSTD);
  TM_ASSERT_OK(tm_parquet_chunk_info_at(f, 0, (size_t)tm_parquet_find_field(f, "id"), &ci, &err), &err);
  TM_ASSERT(!(ci.encodings & (1u << 8)));
  TM_ASSERT(ci.dictionary_page_offset < 0);
  tm_parquet_close(f);
  tm_buf_dispose(&out);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

TM_TEST(writer_timestamp_seconds_and_explicit_flush) {
  /* timestamp(s) has no Parquet unit: it is written as milliseconds. */
  tm_schema s;
  tm_schema_init(&s);
  tm_error err;
  TM_ASSERT_OK(tm_schema_add(&s, "t", tm_type_timestamp(TM_UNIT_SECOND, true), true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), -86401, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), 1700000000, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, NULL, tm_parquet_sink_buf, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_flush(w, &err), &err); /* row group 0 */
  TM_ASSERT_OK(tm_parquet_writer_flush(w, &err), &err); /* nothing buffered: no-op */
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "s.parquet", out.ptr, out.len, false, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  TM_ASSERT_INT_EQ(tm_parquet_num_row_groups(f), 2);
  tm_type ms = tm_type_timestamp(TM_UNIT_MILLI, true);
  TM_ASSERT(tm_type_equal(&tm_parquet_field_at(f, 0)->type, &ms));
  tm_parquet_scan *sc;
  TM_ASSERT_OK(tm_parquet_scan_new(&sc, f, NULL, &err), &err);
  tm_batch rb;
  tm_batch_init(&rb);
  TM_ASSERT_OK(tm_parquet_scan_next(sc, &rb, &err), &err);
  tm_colview c = tm_batch_col(&rb, 0);
  TM_ASSERT(tm_colview_int(&c, 0) == INT64_C(-86401000));
  TM_ASSERT(tm_colview_int(&c, 1) == INT64_C(1700000000000));
  tm_batch_release(&rb);
  tm_parquet_scan_free(sc);
  tm_parquet_close(f);
  tm_buf_dispose(&out);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

TM_TEST(writer_rejects_bad_input) {
  tm_schema s;
  tm_schema_init(&s);
  tm_error err;
  TM_ASSERT_OK(tm_schema_add(&s, "a", tm_type_of(TM_TYPE_INT32), false, -1, &err), &err);
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, NULL, tm_parquet_sink_buf, &out, &err), &err);
  /* A batch of another type. */
  tm_schema s2;
  tm_schema_init(&s2);
  TM_ASSERT_OK(tm_schema_add(&s2, "a", tm_type_of(TM_TYPE_INT64), false, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s2, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), 1, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  TM_ASSERT_RC(tm_parquet_writer_write(w, &b, &err), TM_EINVALID);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  /* A null in a required column fails the flush. */
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(tm_batch_builder_col(&bb, 0), &err), &err);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_RC(tm_parquet_writer_close(w, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "column 'a' is not nullable");
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_buf_dispose(&out);
  tm_schema_dispose(&s);
  tm_schema_dispose(&s2);
}

TM_TEST(writer_atomic_file_and_duckdb) {
  /* DuckDB reads our file with identical values and statistics (issue 3). */
  tm_schema s;
  make_schema(&s);
  tm_batch b;
  make_batch(&s, ROWS, &b);
  tm_error err;
  const char *path = tm_test_path("all.parquet");
  tm_atomic_file af;
  TM_ASSERT_OK(tm_atomic_file_begin(&af, path, &err), &err);
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.row_group_rows = 1200;
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, &o, tm_parquet_sink_atomic_file, &af, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(tm_atomic_file_commit(&af, &err), &err);
  /* The expected canonical CSV: our renderer over the batch we wrote. */
  const char *csv = tm_test_path("all.csv");
  FILE *fp = fopen(csv, "wb");
  TM_ASSERT(fp);
  const char **names = tm_calloc(s.n_cols, sizeof *names);
  for (size_t i = 0; i < s.n_cols; i++) names[i] = s.cols[i].name;
  tm_out out;
  TM_ASSERT_OK(tm_out_begin(&out, TM_OUT_CSV, names, s.n_cols, tm_out_file_sink, fp, &err), &err);
  TM_ASSERT_OK(tm_out_batch(&out, &b, &err), &err);
  TM_ASSERT_OK(tm_out_end(&out, &err), &err);
  fclose(fp);
  tm_free(names);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "node '%s/tests/node/parquet-writer-check.mjs' '%s' '%s'",
           tm_test_source_dir(), path, csv);
  int rc = system(cmd);
  TM_ASSERT_MSG(rc == 0, "DuckDB check failed (%d): %s", rc, cmd);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

TM_TEST(writer_allocation_failures) {
  /* Fail each allocation in turn: the writer returns TM_ENOMEM and leaks nothing. */
  tm_schema s;
  make_schema(&s);
  tm_batch b;
  make_batch(&s, 40, &b);
  for (int64_t n = 1;; n++) {
    tm_error err;
    tm_error_init(&err);
    tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
    tm_alloc_fail_at(n, false);
    tm_parquet_writer *w = NULL;
    int rc = tm_parquet_writer_new(&w, &s, NULL, tm_parquet_sink_buf, &out, &err);
    if (rc == TM_OK) {
      rc = tm_parquet_writer_write(w, &b, &err);
      if (rc == TM_OK) rc = tm_parquet_writer_close(w, &err);
      else tm_parquet_writer_free(w);
    }
    bool failed = tm_alloc_failed();
    tm_alloc_fail_at(0, false);
    tm_buf_dispose(&out);
    if (!failed) {
      TM_ASSERT_OK(rc, &err);
      break;
    }
    TM_ASSERT_MSG(rc == TM_ENOMEM, "allocation %lld: rc %d (%s)", (long long)n, rc, err.message);
    TM_ASSERT(n < 100000);
  }
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

/* Reads every row of the file in bytes; the first error's code. */
static int read_all(const char *bytes, size_t len, const tm_parquet_open_options *oo, tm_error *err) {
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "flipped.parquet", bytes, len, false, err), err);
  tm_parquet_file *f;
  int rc = tm_parquet_open(&f, in, oo, err);
  if (rc != TM_OK) return rc;
  tm_parquet_scan *sc;
  rc = tm_parquet_scan_new(&sc, f, NULL, err);
  tm_batch rb;
  tm_batch_init(&rb);
  while (rc == TM_OK && (rc = tm_parquet_scan_next(sc, &rb, err)) == TM_OK) tm_batch_release(&rb);
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (sc) tm_parquet_scan_free(sc);
  tm_parquet_close(f);
  return rc;
}

/* Issue 22: pages tidemark writes carry a CRC-32, checked by default in files tidemark wrote
 * (skip_crc turns it off); a flipped byte in a page's values is an error, not a wrong value. */
TM_TEST(writer_pages_carry_crcs_checked_on_read) {
  tm_schema s;
  make_schema(&s);
  tm_batch b;
  make_batch(&s, 3000, &b);
  tm_error err;
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.codec = TM_PARQUET_UNCOMPRESSED; /* a flipped byte then changes a value, not the framing */
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, &o, tm_parquet_sink_buf, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(read_all(out.ptr, out.len, NULL, &err), &err);
  /* The last byte of the first column's first page: "PAR1", then a page header of a few
   * dozen bytes, then the values; 200 bytes in is inside the first page's values. */
  out.ptr[200] ^= 0x10;
  TM_ASSERT_RC(read_all(out.ptr, out.len, NULL, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "page CRC mismatch");
  TM_ASSERT_CONTAINS(err.message, "flipped.parquet");
  tm_parquet_open_options skip = TM_PARQUET_OPEN_OPTIONS_INIT;
  skip.skip_crc = true;
  int rc = read_all(out.ptr, out.len, &skip, &err);
  TM_ASSERT_MSG(rc == TM_OK || !strstr(err.message, "CRC"), "skip_crc still checked: %s",
                err.message);
  tm_buf_dispose(&out);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

/* ---- nested columns (issue 16): shredded into leaves, read back by us and by DuckDB ---------- */

static int buf_sink_w(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Reads every row of a Parquet file natively (nested columns as nested arrays) as JSON text. */
static char *nested_json(const char *path, tm_batch *all) {
  tm_error err;
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_file(&in, path, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  tm_parquet_scan *sc;
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.nested_native = true;
  so.batch_rows = 700;
  TM_ASSERT_OK(tm_parquet_scan_new(&sc, f, &so, &err), &err);
  tm_buf text = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_out out;
  bool begun = false;
  tm_batch b;
  tm_batch_init(&b);
  tm_batch_builder bb;
  int rc;
  while ((rc = tm_parquet_scan_next(sc, &b, &err)) == TM_OK) {
    if (!begun) {
      const char **names = tm_calloc(b.schema.n_cols, sizeof *names);
      for (size_t i = 0; i < b.schema.n_cols; i++) names[i] = b.schema.cols[i].name;
      TM_ASSERT_OK(tm_out_begin(&out, TM_OUT_JSONL, names, b.schema.n_cols, buf_sink_w, &text, &err), &err);
      tm_free(names);
      if (all) TM_ASSERT_OK(tm_batch_builder_init(&bb, &b.schema, &err), &err);
      begun = true;
    }
    TM_ASSERT_OK(tm_out_batch(&out, &b, &err), &err);
    for (size_t c = 0; all && c < b.schema.n_cols; c++) {
      tm_colview v = tm_batch_col(&b, c);
      TM_ASSERT_OK(tm_colbuilder_append_range(&bb.cols[c], &v, 0, b.n_rows, &err), &err);
    }
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT(begun);
  TM_ASSERT_OK(tm_out_end(&out, &err), &err);
  if (all) {
    TM_ASSERT_OK(tm_batch_builder_finish(&bb, all, &err), &err);
    tm_batch_builder_dispose(&bb);
  }
  tm_parquet_scan_free(sc);
  tm_parquet_close(f);
  return tm_buf_take(&text, NULL);
}

TM_TEST(writer_nested_round_trip_and_duckdb) {
  tm_error err;
  const char *src = tm_test_path("nested_src.parquet");
  const char *ours = tm_test_path("nested_ours.parquet");
  char cmd[8192];
  /* Lists, structs, maps, lists of structs, maps of lists, lists of lists of lists, required
   * fields inside optional ones, nulls and empties at every level, several row groups. */
  snprintf(cmd, sizeof cmd,
           "node '%s/tests/node/duckdb-query.mjs' \"COPY (SELECT i AS id, "
           "CASE WHEN i %% 7 = 0 THEN NULL WHEN i %% 5 = 0 THEN [] ELSE [i, NULL, i * 2] END AS lst, "
           "CASE WHEN i %% 6 = 0 THEN NULL ELSE {'x': CASE WHEN i %% 4 = 0 THEN NULL ELSE i END, "
           "'y': 'v' || i, 'z': {'d': DATE '2026-01-01' + i::INT, 'f': i / 4}} END AS st, "
           "CASE WHEN i %% 9 = 0 THEN NULL WHEN i %% 3 = 0 THEN MAP {} ELSE MAP {'k' || i: i, 'n': NULL} END AS m, "
           "CASE WHEN i %% 8 = 0 THEN NULL ELSE [{'a': i, 'b': CASE WHEN i %% 2 = 0 THEN NULL ELSE ['p', NULL, ''] END}, NULL, {'a': NULL, 'b': []}] END AS los, "
           "CASE WHEN i %% 10 = 0 THEN NULL ELSE MAP {'m': [i, NULL], 'e': [], 'n': NULL} END AS mol, "
           "[[[i, i + 1], []], NULL, [NULL, [NULL]]] AS lll, "
           "[true, false, NULL] AS bools, "
           "{'t': TIMESTAMPTZ '2026-11-30 10:00:00+00' + INTERVAL (i) SECOND, 'dec': (i * 1.25)::DECIMAL(10, 2), "
           "'big': (i * 1.25)::DECIMAL(30, 2), 'dbl': i * 0.5, 'u': uuid()::VARCHAR IS NULL} AS scalars, "
           "repeat('s', i %% 50) AS flat "
           "FROM range(0, 2500) t(i)) TO '%s' (FORMAT PARQUET, ROW_GROUP_SIZE 1000)\" >/dev/null",
           tm_test_source_dir(), src);
  TM_ASSERT_MSG(system(cmd) == 0, "DuckDB could not write the source file: %s", cmd);
  tm_batch b;
  char *want = nested_json(src, &b);
  /* Small row groups and pages: pages must start at row boundaries. */
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.row_group_rows = 900;
  o.page_bytes = 1024;
  tm_atomic_file af;
  TM_ASSERT_OK(tm_atomic_file_begin(&af, ours, &err), &err);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &b.schema, &o, tm_parquet_sink_atomic_file, &af, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(tm_atomic_file_commit(&af, &err), &err);
  /* Our reader reads back every value. */
  char *got = nested_json(ours, NULL);
  TM_ASSERT_MSG(strcmp(got, want) == 0, "the nested round trip differs");
  /* DuckDB reads our file as it reads its own: every row equal (as JSON), both ways. */
  snprintf(cmd, sizeof cmd,
           "node '%s/tests/node/duckdb-query.mjs' \"SELECT (SELECT count(*) FROM (SELECT to_json(t)::VARCHAR FROM '%s' t "
           "EXCEPT ALL SELECT to_json(t)::VARCHAR FROM '%s' t)) + (SELECT count(*) FROM (SELECT to_json(t)::VARCHAR "
           "FROM '%s' t EXCEPT ALL SELECT to_json(t)::VARCHAR FROM '%s' t)) + (SELECT abs(count(*) - 2500) FROM '%s') AS diff\" "
           "| tail -1 | grep -qx 0",
           tm_test_source_dir(), src, ours, ours, src, ours);
  TM_ASSERT_MSG(system(cmd) == 0, "DuckDB reads our nested file differently: %s", cmd);
  tm_free(want);
  tm_free(got);
  tm_batch_release(&b);
}

/* Nested members carry field ids (Iceberg ids every member): written from id slots, read back
 * by us and by DuckDB's parquet_schema(), on the elements Iceberg names (issue 16). */
TM_TEST(writer_nested_field_ids_round_trip_and_duckdb) {
  tm_error err;
  const char *src = tm_test_path("ids_src.parquet");
  const char *ours = tm_test_path("ids_ours.parquet");
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "node '%s/tests/node/duckdb-query.mjs' \"COPY (SELECT i AS id, {'a': i, 'l': [{'x': i, "
           "'m': MAP {'k': i}}]} AS s FROM range(0, 3) t(i)) TO '%s' (FORMAT PARQUET)\" >/dev/null",
           tm_test_source_dir(), src);
  TM_ASSERT_MSG(system(cmd) == 0, "DuckDB could not write the source file: %s", cmd);
  tm_batch b;
  char *want = nested_json(src, &b);
  b.schema.cols[1].field_id = 7;
  size_t n_slots = tm_type_id_slots(&b.schema.cols[1].type);
  TM_ASSERT_INT_EQ(n_slots, 7); /* a, l, l's element, x, m, m's key, m's value */
  int32_t ids[7];
  for (size_t i = 0; i < n_slots; i++) ids[i] = 100 + (int32_t)i;
  const int32_t *per_col[2] = {NULL, ids};
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.nested_ids = per_col;
  tm_atomic_file af;
  TM_ASSERT_OK(tm_atomic_file_begin(&af, ours, &err), &err);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &b.schema, &o, tm_parquet_sink_atomic_file, &af, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(tm_atomic_file_commit(&af, &err), &err);
  char *got = nested_json(ours, NULL);
  TM_ASSERT_MSG(strcmp(got, want) == 0, "values changed with field ids");
  /* Our reader: the same slots. */
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_file(&in, ours, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  tm_type ty;
  bool nullable;
  TM_ASSERT_OK(tm_parquet_nested_type(f, 1, &ty, &nullable, &err), &err);
  TM_ASSERT_INT_EQ(tm_parquet_field_at(f, 1)->field_id, 7);
  int32_t back[7];
  TM_ASSERT_OK(tm_parquet_nested_ids(f, 1, &ty, back, &err), &err);
  for (size_t i = 0; i < n_slots; i++) TM_ASSERT_INT_EQ(back[i], ids[i]);
  /* A type with other slots is refused, not read past. */
  TM_ASSERT_RC(tm_parquet_nested_ids(f, 1, &b.schema.cols[0].type, back, &err), TM_EINVALID);
  tm_parquet_close(f);
  /* DuckDB sees each id on its element: the groups "list" and "key_value" have none. */
  snprintf(cmd, sizeof cmd,
           "node '%s/tests/node/duckdb-query.mjs' \"SELECT string_agg(name || ':' || "
           "coalesce(field_id::VARCHAR, '-'), ',') FROM parquet_schema('%s')\" | tail -1 | grep -qx "
           "'\"schema:-,id:-,s:7,a:100,l:101,list:-,element:102,x:103,m:104,key_value:-,key:105,"
           "value:106\"'",
           tm_test_source_dir(), ours);
  TM_ASSERT_MSG(system(cmd) == 0, "DuckDB reads other field ids: %s", cmd);
  /* A file without member ids reads -1 in every slot. */
  TM_ASSERT_OK(tm_input_open_file(&in, src, &err), &err);
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  TM_ASSERT_OK(tm_parquet_nested_ids(f, 1, &ty, back, &err), &err);
  for (size_t i = 0; i < n_slots; i++) TM_ASSERT_INT_EQ(back[i], -1);
  tm_parquet_close(f);
  tm_free(want);
  tm_free(got);
  tm_batch_release(&b);
}
