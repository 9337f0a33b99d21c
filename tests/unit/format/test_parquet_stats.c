/* Unit tests for the statistics sort-order rules of the Parquet reader
 * (format/parquet/stats.c; SPEC B13): which of the current and deprecated
 * min/max fields are trusted for signed, unsigned and byte-array columns,
 * column orders, NaN, INT96, and pruning through them. Each case is a file
 * holding only a footer, built here with the Thrift encoder. */
#include <math.h>
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "tm_test.h"
#include "util/alloc.h"

typedef struct col_spec {
  const char *name;
  int phys;
  int converted;   /* -1: none */
  int logical;     /* LogicalType member, 0: none */
  int int_bits;    /* INTEGER */
  bool int_signed; /* INTEGER */
  /* statistics, as raw bytes; NULL: absent */
  const void *min, *max;         /* deprecated fields 2, 1 */
  const void *min_value, *max_value; /* fields 6, 5 */
  size_t len;                    /* byte length of each bound */
  int64_t null_count;            /* -1: absent */
} col_spec;

/* A file of one row group (rows rows) whose footer describes cols; pages are
 * never read by these tests. column_order: 1 TYPE_ORDER, 2 unknown member, 0 absent. */
static tm_parquet_file *footer_file(const col_spec *cols, size_t n, int64_t rows, int column_order) {
  tm_buf b = TM_BUF_INIT(1 << 20);
  tm_error err;
  TM_ASSERT_OK(tm_buf_append(&b, "PAR1", 4, &err), &err);
  size_t footer_start = b.len;
  tm_thrift_writer w;
  tm_thrift_writer_init(&w, &b);
  tm_thrift_write_struct_begin(&w);
  tm_thrift_write_field_i32(&w, 1, 1);
  tm_thrift_write_field_list(&w, 2, TM_THRIFT_STRUCT, (uint32_t)n + 1);
  tm_thrift_write_struct_begin(&w);
  tm_thrift_write_field_binary(&w, 4, "schema", 6);
  tm_thrift_write_field_i32(&w, 5, (int32_t)n);
  tm_thrift_write_struct_end(&w);
  for (size_t i = 0; i < n; i++) {
    tm_thrift_write_struct_begin(&w);
    tm_thrift_write_field_i32(&w, 1, cols[i].phys);
    if (cols[i].phys == TM_PQ_FLBA) tm_thrift_write_field_i32(&w, 2, (int32_t)cols[i].len);
    tm_thrift_write_field_i32(&w, 3, TM_PQ_OPTIONAL);
    tm_thrift_write_field_binary(&w, 4, cols[i].name, strlen(cols[i].name));
    if (cols[i].converted >= 0) tm_thrift_write_field_i32(&w, 6, cols[i].converted);
    if (cols[i].logical) {
      tm_thrift_write_field_struct(&w, 10);
      tm_thrift_write_field_struct(&w, (int16_t)cols[i].logical);
      if (cols[i].logical == TM_PQ_LT_INTEGER) {
        tm_thrift_write_field_i8(&w, 1, (int8_t)cols[i].int_bits);
        tm_thrift_write_field_bool(&w, 2, cols[i].int_signed);
      }
      tm_thrift_write_struct_end(&w);
      tm_thrift_write_struct_end(&w);
    }
    tm_thrift_write_struct_end(&w);
  }
  tm_thrift_write_field_i64(&w, 3, rows);
  tm_thrift_write_field_list(&w, 4, TM_THRIFT_STRUCT, 1);
  tm_thrift_write_struct_begin(&w);
  tm_thrift_write_field_list(&w, 1, TM_THRIFT_STRUCT, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    const col_spec *c = &cols[i];
    tm_thrift_write_struct_begin(&w);
    tm_thrift_write_field_i64(&w, 2, 4);
    tm_thrift_write_field_struct(&w, 3);
    tm_thrift_write_field_i32(&w, 1, c->phys);
    tm_thrift_write_field_list(&w, 2, TM_THRIFT_I32, 1);
    tm_thrift_write_i32(&w, 0);
    tm_thrift_write_field_list(&w, 3, TM_THRIFT_BINARY, 1);
    tm_thrift_write_binary(&w, c->name, strlen(c->name));
    tm_thrift_write_field_i32(&w, 4, 0);
    tm_thrift_write_field_i64(&w, 5, rows);
    tm_thrift_write_field_i64(&w, 6, 0);
    tm_thrift_write_field_i64(&w, 7, 0);
    tm_thrift_write_field_i64(&w, 9, 4);
    tm_thrift_write_field_struct(&w, 12);
    if (c->max) tm_thrift_write_field_binary(&w, 1, c->max, c->len);
    if (c->min) tm_thrift_write_field_binary(&w, 2, c->min, c->len);
    if (c->null_count >= 0) tm_thrift_write_field_i64(&w, 3, c->null_count);
    if (c->max_value) tm_thrift_write_field_binary(&w, 5, c->max_value, c->len);
    if (c->min_value) tm_thrift_write_field_binary(&w, 6, c->min_value, c->len);
    tm_thrift_write_struct_end(&w);
    tm_thrift_write_struct_end(&w);
    tm_thrift_write_struct_end(&w);
  }
  tm_thrift_write_field_i64(&w, 2, 0);
  tm_thrift_write_field_i64(&w, 3, rows);
  tm_thrift_write_struct_end(&w);
  if (column_order) {
    tm_thrift_write_field_list(&w, 7, TM_THRIFT_STRUCT, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
      tm_thrift_write_struct_begin(&w);
      tm_thrift_write_field_struct(&w, column_order == 1 ? 1 : 9); /* 9: a future order */
      tm_thrift_write_struct_end(&w);
      tm_thrift_write_struct_end(&w);
    }
  }
  tm_thrift_write_struct_end(&w);
  TM_ASSERT_OK(tm_thrift_writer_status(&w, &err), &err);
  uint32_t flen = (uint32_t)(b.len - footer_start);
  TM_ASSERT_OK(tm_buf_append(&b, &flen, 4, &err), &err);
  TM_ASSERT_OK(tm_buf_append(&b, "PAR1", 4, &err), &err);
  size_t len;
  char *bytes = tm_buf_take(&b, &len);
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "stats.parquet", bytes, len, true, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  return f;
}

static int64_t i64_of(const tm_value *v) { return v->v.i; }

TM_TEST(stats_signed_int_uses_current_then_deprecated) {
  int32_t lo = -5, hi = 9, dlo = -100, dhi = 100;
  col_spec cols[] = {
      /* both generations: the current fields win */
      {"a", TM_PQ_INT32, -1, 0, 0, false, &dlo, &dhi, &lo, &hi, 4, 2},
      /* only the deprecated fields: signed order, so they are used */
      {"b", TM_PQ_INT32, -1, 0, 0, false, &dlo, &dhi, NULL, NULL, 4, -1},
  };
  tm_parquet_file *f = footer_file(cols, 2, 10, 0);
  tm_col_stats s;
  tm_parquet_column_stats(f, 0, 0, &s);
  TM_ASSERT(s.has_min && s.has_max);
  TM_ASSERT_INT_EQ(i64_of(&s.min), -5);
  TM_ASSERT_INT_EQ(i64_of(&s.max), 9);
  TM_ASSERT_INT_EQ(s.null_count, 2);
  TM_ASSERT_INT_EQ(s.row_count, 10);
  tm_parquet_column_stats(f, 0, 1, &s);
  TM_ASSERT(s.has_min && s.has_max);
  TM_ASSERT_INT_EQ(i64_of(&s.min), -100);
  TM_ASSERT_INT_EQ(s.null_count, -1);
  tm_parquet_close(f);
}

TM_TEST(stats_unsigned_and_byte_arrays_ignore_deprecated_fields) {
  /* UINT_32 holding 0xFFFFFFF0: signed comparison would have put it first. */
  uint32_t ulo = 1, uhi = 0xfffffff0u;
  col_spec cols[] = {
      {"u_old", TM_PQ_INT32, TM_PQ_CT_UINT_32, 0, 0, false, &uhi, &ulo, NULL, NULL, 4, 0},
      {"u_new", TM_PQ_INT32, -1, TM_PQ_LT_INTEGER, 32, false, NULL, NULL, &ulo, &uhi, 4, 0},
      {"s_old", TM_PQ_BYTE_ARRAY, TM_PQ_CT_UTF8, 0, 0, false, "abc", "xyz", NULL, NULL, 3, 0},
      {"s_new", TM_PQ_BYTE_ARRAY, TM_PQ_CT_UTF8, 0, 0, false, NULL, NULL, "\x01zz", "\xff\x01", 3, 0},
  };
  tm_parquet_file *f = footer_file(cols, 4, 10, 0);
  tm_col_stats s;
  tm_parquet_column_stats(f, 0, 0, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  TM_ASSERT_INT_EQ(s.null_count, 0);
  tm_parquet_column_stats(f, 0, 1, &s);
  TM_ASSERT(s.has_min && s.has_max);
  TM_ASSERT_INT_EQ(s.min.type, TM_TYPE_UINT32);
  TM_ASSERT(s.min.v.u == 1 && s.max.v.u == 0xfffffff0u);
  tm_parquet_column_stats(f, 0, 2, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  tm_parquet_column_stats(f, 0, 3, &s);
  TM_ASSERT(s.has_min && s.has_max);
  /* Unsigned bytewise order: 0xff sorts after 0x01. */
  TM_ASSERT(tm_value_cmp(&s.min, &s.max) < 0);

  /* Pruning sees the unsigned bound: u_new > 0xfffffff1 prunes, > 0x7fffffff does not. */
  tm_predicate p;
  tm_predicate_init(&p);
  tm_error err;
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_UINT32;
  v.v.u = 0xfffffff1u;
  TM_ASSERT_OK(tm_predicate_add(&p, "u_new", tm_type_of(TM_TYPE_UINT32), TM_PRED_GT, &v, &err), &err);
  TM_ASSERT(!tm_parquet_row_group_may_match(f, 0, &p));
  tm_predicate_dispose(&p);
  tm_predicate_init(&p);
  v.v.u = 0x7fffffffu;
  TM_ASSERT_OK(tm_predicate_add(&p, "u_new", tm_type_of(TM_TYPE_UINT32), TM_PRED_GT, &v, &err), &err);
  TM_ASSERT(tm_parquet_row_group_may_match(f, 0, &p));
  tm_predicate_dispose(&p);
  tm_parquet_close(f);
}

TM_TEST(stats_column_orders_nan_and_int96) {
  double dlo = 1.5, dnan = NAN;
  int64_t ilo = 1, ihi = 2;
  uint8_t i96[12] = {0};
  col_spec cols[] = {
      {"d", TM_PQ_DOUBLE, -1, 0, 0, false, NULL, NULL, &dlo, &dnan, 8, 0},
      {"i", TM_PQ_INT64, -1, 0, 0, false, NULL, NULL, &ilo, &ihi, 8, 0},
      {"t", TM_PQ_INT96, -1, 0, 0, false, i96, i96, i96, i96, 12, 0},
  };
  /* A column order this reader does not know: current fields unusable. */
  tm_parquet_file *f = footer_file(cols, 3, 10, 2);
  tm_col_stats s;
  tm_parquet_column_stats(f, 0, 1, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  tm_parquet_close(f);
  /* TYPE_ORDER: the int bounds are used; a NaN bound drops both float bounds;
   * INT96 has no order at all. */
  f = footer_file(cols, 3, 10, 1);
  tm_parquet_column_stats(f, 0, 1, &s);
  TM_ASSERT(s.has_min && s.has_max);
  tm_parquet_column_stats(f, 0, 0, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  TM_ASSERT_INT_EQ(s.null_count, 0);
  tm_parquet_column_stats(f, 0, 2, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  tm_parquet_close(f);
}

TM_TEST(stats_bad_bound_lengths_are_dropped) {
  int64_t lo = 1;
  int32_t hi = 7; /* 4 bytes for an INT64 column */
  col_spec cols[] = {{"x", TM_PQ_INT64, -1, 0, 0, false, NULL, NULL, &lo, &hi, 4, 0}};
  tm_parquet_file *f = footer_file(cols, 1, 10, 1);
  tm_col_stats s;
  tm_parquet_column_stats(f, 0, 0, &s);
  TM_ASSERT(!s.has_min && !s.has_max);
  tm_parquet_close(f);
}
