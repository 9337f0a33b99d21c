/* Unit tests for the Parquet reader's public API (format/parquet/parquet.h)
 * on files from ../shared/testdata: schema and type mapping, field ids,
 * batches, projection (only the projected chunks are read), row-group
 * subsets and pruning, nested and encrypted files, truncated input and
 * allocation failures (issue 3; SPEC B13, D2). */
#include <string.h>

#include "format/parquet/parquet.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

static const char *data_path(const char *rel) {
  const char *td = tm_test_require_shared();
  static char path[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(path[k], sizeof path[k], "%s/%s", td, rel);
  return path[k];
}

static tm_parquet_file *open_rel(const char *rel) {
  tm_parquet_file *f = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_parquet_open_path(&f, data_path(rel), NULL, &err), &err);
  return f;
}

/* Reads the whole scan; returns the rows and checks batch sizes. */
static int64_t drain(tm_parquet_scan *s, int64_t max_batch, int64_t *n_batches) {
  tm_batch b;
  tm_batch_init(&b);
  tm_error err;
  int64_t rows = 0, n = 0;
  int rc;
  while ((rc = tm_parquet_scan_next(s, &b, &err)) == TM_OK) {
    TM_ASSERT(b.n_rows > 0 && b.n_rows <= max_batch);
    rows += b.n_rows;
    n++;
    tm_batch_release(&b);
  }
  TM_ASSERT_MSG(rc == TM_ITEROVER, "scan ended with %d: %s", rc, err.message);
  if (n_batches) *n_batches = n;
  return rows;
}

TM_TEST(reader_schema_and_types) {
  tm_parquet_file *f = open_rel("parquet/alltypes_plain.parquet");
  TM_ASSERT_INT_EQ(tm_parquet_num_rows(f), 8);
  TM_ASSERT_INT_EQ(tm_parquet_num_row_groups(f), 1);
  TM_ASSERT_INT_EQ(tm_parquet_num_fields(f), 11);
  tm_strview cb = tm_parquet_created_by(f);
  TM_ASSERT(cb.len > 6 && memcmp(cb.ptr, "impala", 6) == 0);
  tm_schema s;
  tm_schema_init(&s);
  tm_error err;
  TM_ASSERT_OK(tm_parquet_schema(f, &s, &err), &err);
  TM_ASSERT_STR_EQ(s.cols[0].name, "id");
  TM_ASSERT_INT_EQ(s.cols[0].type.id, TM_TYPE_INT32);
  TM_ASSERT(s.cols[0].nullable);
  TM_ASSERT_INT_EQ(s.cols[0].field_id, -1);
  /* INT96 -> timestamp(ns) without a zone. */
  tm_type ts = tm_type_timestamp(TM_UNIT_NANO, false);
  TM_ASSERT(tm_type_equal(&s.cols[10].type, &ts));
  TM_ASSERT_INT_EQ(tm_parquet_find_field(f, "string_col"), 9);
  TM_ASSERT_INT_EQ(tm_parquet_find_field(f, "nope"), -1);
  tm_schema_dispose(&s);
  tm_parquet_close(f);

  /* Logical types: unsigned ints, and a second file with decimals and dates. */
  f = open_rel("parquet/hyparquet/signs.parquet");
  bool saw_unsigned = false;
  for (size_t i = 0; i < tm_parquet_num_fields(f); i++) {
    const tm_parquet_field *fd = tm_parquet_field_at(f, i);
    if (fd->type.id == TM_TYPE_UINT8 || fd->type.id == TM_TYPE_UINT64) saw_unsigned = true;
  }
  TM_ASSERT(saw_unsigned);
  tm_parquet_close(f);
  f = open_rel("parquet/impala/date_tbl.parquet");
  TM_ASSERT_INT_EQ(tm_parquet_field_at(f, tm_parquet_find_field(f, "date_col"))->type.id, TM_TYPE_DATE32);
  tm_parquet_close(f);
  f = open_rel("parquet/iceberg-encodings/PLAIN/uuid.parquet");
  TM_ASSERT(tm_parquet_field_at(f, 0)->type.uuid);
  TM_ASSERT_INT_EQ(tm_parquet_field_at(f, 0)->type.width, 16);
  tm_parquet_close(f);
}

TM_TEST(reader_field_ids) {
  tm_parquet_file *f = open_rel(
      "iceberg/iceberg_v2_no_deletes/data/"
      "00000-0-data-boroknagyz_20220819180420_a7e5a731-8762-4b59-b3f2-fe6f065cf59b-job_"
      "16597105613620_0031-00001.parquet");
  TM_ASSERT_INT_EQ(tm_parquet_field_at(f, 0)->field_id, 1);
  TM_ASSERT_INT_EQ(tm_parquet_field_at(f, 1)->field_id, 2);
  TM_ASSERT_INT_EQ(tm_parquet_find_field_id(f, 2), 1);
  TM_ASSERT_INT_EQ(tm_parquet_find_field_id(f, 3), -1);
  tm_schema s;
  tm_schema_init(&s);
  tm_error err;
  TM_ASSERT_OK(tm_parquet_schema(f, &s, &err), &err);
  TM_ASSERT_INT_EQ(s.cols[1].field_id, 2);
  TM_ASSERT_INT_EQ(s.cols[1].type.id, TM_TYPE_UTF8);
  tm_schema_dispose(&s);
  tm_parquet_close(f);
}

TM_TEST(reader_batches_and_values) {
  tm_parquet_file *f = open_rel("parquet/alltypes_plain.parquet");
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  o.batch_rows = 3;
  tm_parquet_scan *s;
  tm_error err;
  TM_ASSERT_OK(tm_parquet_scan_new(&s, f, &o, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  const int64_t want_ids[8] = {4, 5, 6, 7, 2, 3, 0, 1}; /* the file's row order */
  int64_t row = 0, sizes[3] = {3, 3, 2};
  for (int k = 0; k < 3; k++) {
    TM_ASSERT_OK(tm_parquet_scan_next(s, &b, &err), &err);
    TM_ASSERT_INT_EQ(b.n_rows, sizes[k]);
    tm_colview id = tm_batch_col(&b, 0);
    tm_colview str = tm_batch_col(&b, 9);
    for (int64_t i = 0; i < b.n_rows; i++, row++) {
      TM_ASSERT_INT_EQ(tm_colview_int(&id, i), want_ids[row]);
      tm_strview sv = tm_colview_bytes(&str, i);
      TM_ASSERT(sv.len == 1 && sv.ptr[0] == (want_ids[row] % 2 ? '1' : '0'));
    }
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(tm_parquet_scan_next(s, &b, &err), TM_ITEROVER);
  tm_parquet_scan_stats st;
  tm_parquet_scan_get_stats(s, &st);
  TM_ASSERT_INT_EQ(st.rows_read, 8);
  TM_ASSERT_INT_EQ(st.row_groups_read, 1);
  tm_parquet_scan_free(s);
  tm_parquet_close(f);
}

TM_TEST(reader_projection_reads_only_projected_chunks) {
  tm_parquet_file *f = open_rel("parquet/alltypes_plain.parquet");
  tm_input *in = tm_parquet_input(f);
  uint64_t reads0 = in->reads, bytes0 = in->bytes_read;
  size_t cols[2] = {9, 0};
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  o.columns = cols;
  o.n_columns = 2;
  tm_parquet_scan *s;
  tm_error err;
  TM_ASSERT_OK(tm_parquet_scan_new(&s, f, &o, &err), &err);
  const tm_schema *sc = tm_parquet_scan_schema(s);
  TM_ASSERT_INT_EQ(sc->n_cols, 2);
  TM_ASSERT_STR_EQ(sc->cols[0].name, "string_col");
  TM_ASSERT_STR_EQ(sc->cols[1].name, "id");
  TM_ASSERT_INT_EQ(drain(s, 65536, NULL), 8);
  /* Exactly one read per projected column chunk, of exactly its bytes. */
  tm_parquet_chunk_info a, b;
  TM_ASSERT_OK(tm_parquet_chunk_info_at(f, 0, 9, &a, &err), &err);
  TM_ASSERT_OK(tm_parquet_chunk_info_at(f, 0, 0, &b, &err), &err);
  TM_ASSERT_INT_EQ(in->reads - reads0, 2);
  TM_ASSERT_INT_EQ(in->bytes_read - bytes0, a.compressed_size + b.compressed_size);
  tm_parquet_scan_stats st;
  tm_parquet_scan_get_stats(s, &st);
  TM_ASSERT_INT_EQ(st.bytes_read, a.compressed_size + b.compressed_size);
  tm_parquet_scan_free(s);
  /* A bad index is refused. */
  size_t bad = 11;
  o.columns = &bad;
  o.n_columns = 1;
  TM_ASSERT_RC(tm_parquet_scan_new(&s, f, &o, &err), TM_EINVALID);
  tm_parquet_close(f);
}

static tm_value ival(int64_t v) {
  tm_value x;
  memset(&x, 0, sizeof x);
  x.type = TM_TYPE_INT64;
  x.v.i = v;
  return x;
}

TM_TEST(reader_row_group_stats_pruning_and_subsets) {
  /* rowgroups.parquet: int64 `numbers`, row group 0 holds 1..10, 1 holds 11..15. */
  tm_parquet_file *f = open_rel("parquet/hyparquet/rowgroups.parquet");
  TM_ASSERT_INT_EQ(tm_parquet_num_row_groups(f), 2);
  tm_col_stats cs;
  tm_parquet_column_stats(f, 1, 0, &cs);
  TM_ASSERT(cs.has_min && cs.has_max);
  TM_ASSERT_INT_EQ(cs.min.v.i, 11);
  TM_ASSERT_INT_EQ(cs.max.v.i, 15);
  TM_ASSERT_INT_EQ(cs.null_count, 0);
  TM_ASSERT_INT_EQ(cs.row_count, 5);

  tm_predicate p;
  tm_predicate_init(&p);
  tm_error err;
  tm_value v = ival(12);
  TM_ASSERT_OK(tm_predicate_add(&p, "numbers", tm_type_of(TM_TYPE_INT64), TM_PRED_GE, &v, &err), &err);
  TM_ASSERT(!tm_parquet_row_group_may_match(f, 0, &p));
  TM_ASSERT(tm_parquet_row_group_may_match(f, 1, &p));
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  o.predicate = &p;
  tm_parquet_scan *s;
  TM_ASSERT_OK(tm_parquet_scan_new(&s, f, &o, &err), &err);
  tm_parquet_scan_stats st;
  tm_parquet_scan_get_stats(s, &st);
  TM_ASSERT_INT_EQ(st.row_groups_total, 2);
  TM_ASSERT_INT_EQ(st.row_groups_read, 1);
  TM_ASSERT_INT_EQ(st.row_groups_skipped, 1);
  TM_ASSERT_INT_EQ(drain(s, 65536, NULL), 5);
  tm_parquet_scan_free(s);

  /* IS NULL prunes both (null_count 0); a term of another type prunes nothing. */
  tm_predicate q;
  tm_predicate_init(&q);
  TM_ASSERT_OK(tm_predicate_add_null(&q, "numbers", tm_type_of(TM_TYPE_INT64), true, &err), &err);
  TM_ASSERT(!tm_parquet_row_group_may_match(f, 0, &q));
  TM_ASSERT(!tm_parquet_row_group_may_match(f, 1, &q));
  tm_predicate_dispose(&q);
  tm_predicate_init(&q);
  tm_value v32 = ival(100);
  v32.type = TM_TYPE_INT32;
  TM_ASSERT_OK(tm_predicate_add(&q, "numbers", tm_type_of(TM_TYPE_INT32), TM_PRED_GT, &v32, &err), &err);
  TM_ASSERT(tm_parquet_row_group_may_match(f, 0, &q));
  tm_predicate_dispose(&q);
  /* IN. */
  tm_predicate_init(&q);
  tm_value in[2] = {ival(0), ival(16)};
  TM_ASSERT_OK(tm_predicate_add_in(&q, "numbers", tm_type_of(TM_TYPE_INT64), in, 2, &err), &err);
  TM_ASSERT(!tm_parquet_row_group_may_match(f, 0, &q) && !tm_parquet_row_group_may_match(f, 1, &q));
  tm_predicate_dispose(&q);

  /* A chosen subset of row groups. */
  size_t only[1] = {1};
  tm_parquet_scan_options o2 = TM_PARQUET_SCAN_OPTIONS_INIT;
  o2.row_groups = only;
  o2.n_row_groups = 1;
  TM_ASSERT_OK(tm_parquet_scan_new(&s, f, &o2, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  TM_ASSERT_OK(tm_parquet_scan_next(s, &b, &err), &err);
  tm_colview c = tm_batch_col(&b, 0);
  TM_ASSERT_INT_EQ(b.n_rows, 5);
  TM_ASSERT_INT_EQ(tm_colview_int(&c, 0), 11);
  tm_batch_release(&b);
  tm_parquet_scan_free(s);
  size_t unordered[2] = {1, 0};
  o2.row_groups = unordered;
  o2.n_row_groups = 2;
  TM_ASSERT_RC(tm_parquet_scan_new(&s, f, &o2, &err), TM_EINVALID);
  tm_predicate_dispose(&p);
  tm_parquet_close(f);
}

TM_TEST(reader_string_stats_unsigned_order) {
  /* binary_truncated_min_max.parquet: truncated string bounds still bound the data. */
  tm_parquet_file *f = open_rel("parquet/binary_truncated_min_max.parquet");
  for (size_t i = 0; i < tm_parquet_num_fields(f); i++) {
    tm_col_stats cs;
    tm_parquet_column_stats(f, 0, i, &cs);
    if (!cs.has_min || !cs.has_max) continue;
    /* Every value must lie inside [min, max] (byte-wise unsigned order). */
    size_t cols[1] = {i};
    tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = 1;
    tm_parquet_scan *s;
    tm_error err;
    TM_ASSERT_OK(tm_parquet_scan_new(&s, f, &o, &err), &err);
    tm_batch b;
    tm_batch_init(&b);
    TM_ASSERT_OK(tm_parquet_scan_next(s, &b, &err), &err);
    tm_colview c = tm_batch_col(&b, 0);
    for (int64_t r = 0; r < b.n_rows; r++) {
      tm_value x;
      tm_colview_get(&c, r, &x);
      if (x.is_null) continue;
      TM_ASSERT(tm_value_cmp(&cs.min, &x) <= 0 && tm_value_cmp(&x, &cs.max) <= 0);
    }
    tm_batch_release(&b);
    tm_parquet_scan_free(s);
  }
  tm_parquet_close(f);
}

TM_TEST(reader_nested_columns_are_refused_by_name) {
  tm_parquet_file *f = open_rel("parquet/datapage_v2.snappy.parquet");
  tm_schema s;
  tm_schema_init(&s);
  tm_error err;
  TM_ASSERT_RC(tm_parquet_schema(f, &s, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "unsupported nested column e");
  tm_parquet_scan *sc;
  TM_ASSERT_RC(tm_parquet_scan_new(&sc, f, NULL, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "datapage_v2.snappy.parquet: unsupported nested column e");
  const tm_parquet_field *e = tm_parquet_field_at(f, 4);
  TM_ASSERT(e->nested && e->unsupported);
  size_t flat[4] = {0, 1, 2, 3};
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  o.columns = flat;
  o.n_columns = 4;
  TM_ASSERT_OK(tm_parquet_scan_new(&sc, f, &o, &err), &err);
  TM_ASSERT_INT_EQ(drain(sc, 65536, NULL), 5);
  tm_parquet_scan_free(sc);
  tm_parquet_close(f);
}

TM_TEST(reader_encrypted_and_not_parquet) {
  tm_parquet_file *f = NULL;
  tm_error err;
  const char *enc = data_path("parquet/encrypted/uniform_encryption.parquet.encrypted");
  TM_ASSERT_RC(tm_parquet_open_path(&f, enc, NULL, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "uniform_encryption.parquet.encrypted: encrypted Parquet file");
  const char *plain = data_path("parquet/encrypted/encrypt_columns_plaintext_footer.parquet.encrypted");
  TM_ASSERT_RC(tm_parquet_open_path(&f, plain, NULL, &err), TM_EUNSUPPORTED);
  TM_ASSERT_RC(tm_parquet_open_path(&f, data_path("parquet/no-such.parquet"), NULL, &err), TM_ENOTFOUND);
  const char *txt = tm_test_path("x.parquet");
  tm_test_write_file(txt, "this is not a parquet file at all");
  TM_ASSERT_RC(tm_parquet_open_path(&f, txt, NULL, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "x.parquet: not a Parquet file");
}

TM_TEST(reader_every_truncation_fails_cleanly) {
  /* From memory: every prefix of a real file is an error naming it, never a crash. */
  char *data;
  size_t len;
  tm_error err;
  TM_ASSERT_OK(tm_read_file(data_path("parquet/alltypes_tiny_pages.parquet"), 1 << 24, &data, &len, &err), &err);
  size_t step = len / 97 + 1;
  for (size_t cut = 0; cut < len; cut += step) {
    tm_input *in;
    TM_ASSERT_OK(tm_input_open_memory(&in, "mem.parquet", data, cut, false, &err), &err);
    tm_parquet_file *f;
    int rc = tm_parquet_open(&f, in, NULL, &err);
    if (rc == TM_OK) {
      tm_parquet_scan *s;
      rc = tm_parquet_scan_new(&s, f, NULL, &err);
      if (rc == TM_OK) {
        tm_batch b;
        tm_batch_init(&b);
        while ((rc = tm_parquet_scan_next(s, &b, &err)) == TM_OK) tm_batch_release(&b);
        tm_parquet_scan_free(s);
      }
      tm_parquet_close(f);
    }
    TM_ASSERT_MSG(rc < 0 && rc != TM_ITEROVER, "prefix %zu read without error", cut);
    TM_ASSERT_CONTAINS(err.message, "mem.parquet");
  }
  /* The whole file from memory reads. */
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, "mem.parquet", data, len, true, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  tm_parquet_scan *s;
  TM_ASSERT_OK(tm_parquet_scan_new(&s, f, NULL, &err), &err);
  int64_t batches;
  TM_ASSERT_INT_EQ(drain(s, 65536, &batches), 7300);
  tm_parquet_scan_free(s);
  tm_parquet_close(f);
}

TM_TEST(reader_allocation_failures) {
  /* Fail each allocation in turn: every failure is TM_ENOMEM and leaks nothing. */
  const char *path = data_path("parquet/delta_encoding_optional_column.parquet");
  for (int64_t n = 1;; n++) {
    tm_error err;
    tm_error_init(&err);
    tm_alloc_fail_at(n, false);
    tm_parquet_file *f = NULL;
    int rc = tm_parquet_open_path(&f, path, NULL, &err);
    if (rc == TM_OK) {
      tm_parquet_scan *s;
      rc = tm_parquet_scan_new(&s, f, NULL, &err);
      if (rc == TM_OK) {
        tm_batch b;
        tm_batch_init(&b);
        while ((rc = tm_parquet_scan_next(s, &b, &err)) == TM_OK) tm_batch_release(&b);
        tm_parquet_scan_free(s);
        if (rc == TM_ITEROVER) rc = TM_OK;
      }
      tm_parquet_close(f);
    }
    bool failed = tm_alloc_failed();
    tm_alloc_fail_at(0, false);
    if (!failed) {
      TM_ASSERT_OK(rc, &err);
      break;
    }
    TM_ASSERT_MSG(rc == TM_ENOMEM, "allocation %lld: rc %d (%s)", (long long)n, rc, err.message);
    TM_ASSERT_MSG(n < 100000, "no end to allocations");
  }
}
