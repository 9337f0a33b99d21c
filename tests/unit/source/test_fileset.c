/*
 * Unit tests for the file-set source (SPEC 4, issue 6; docs/SOURCES.md): the
 * schema comes from the first data file and later files are conformed to it;
 * hidden files are not data; hive partition folders become typed columns;
 * the file_format / csv_* params; empty and missing folders.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>
#include <zstd.h>

#include "format/parquet/parquet.h"
#include "format/arrow/render.h"
#include "source/source.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/buf.h"

static void mkdirs(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    TM_ASSERT(mkdir(p, 0755) == 0 || errno == EEXIST);
    *s = '/';
  }
  TM_ASSERT(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/* Writes `dir/name` with rows (i, "s<i>") for i in [from, to), the second
 * column typed `second` (utf8 or int64), plus a column `extra` when asked. */
static void write_parquet(const char *path, int64_t from, int64_t to, tm_type_id second,
                          bool extra) {
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "v", tm_type_of(second), true, -1, &err), &err);
  if (extra) TM_ASSERT_OK(tm_schema_add(&s, "extra", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = from; i < to; i++) {
    char v[32];
    int n = snprintf(v, sizeof v, "s%lld", (long long)i);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    if (second == TM_TYPE_UTF8) TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[1], v, (size_t)n, &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], i, &err), &err);
    if (extra) TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[2], -i, &err), &err);
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_buf out;
  tm_buf_init(&out, TM_BUF_UNLIMITED);
  tm_parquet_writer *w = NULL;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, NULL, tm_parquet_sink_buf, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  FILE *f = fopen(path, "wb");
  TM_ASSERT(f);
  TM_ASSERT(fwrite(out.ptr, 1, out.len, f) == out.len);
  TM_ASSERT(fclose(f) == 0);
  tm_buf_dispose(&out);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

typedef struct scanned {
  int64_t rows;
  int64_t nulls[8]; /* per column of the source schema */
  tm_scan_stats stats;
  int rc;
} scanned;

static scanned scan_all(tm_source *src, tm_error *err) {
  scanned r = {0};
  tm_scan_request req;
  tm_scan_request_init(&req);
  tm_scan *scan = NULL;
  int rc = tm_source_scan(src, &req, &scan, err);
  tm_batch b;
  while (rc == TM_OK && (rc = tm_scan_next(scan, &b, err)) == TM_OK) {
    r.rows += b.n_rows;
    for (size_t c = 0; c < b.schema.n_cols && c < 8; c++) r.nulls[c] += b.array.children[c]->null_count;
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (scan) r.stats = *tm_scan_get_stats(scan);
  tm_scan_free(scan);
  r.rc = rc;
  return r;
}

static int open_source(tm_source **src, const char *from, const tm_kv *params, tm_error *err) {
  tm_source_options o = {TM_SOURCE_OPTIONS_VERSION, from, "t", params, NULL, NULL, NULL, false, TM_UNSUPPORTED_ERROR, NULL};
  int rc = tm_source_open(src, &o, err);
  if (rc == TM_OK) rc = tm_source_describe(*src, err);
  return rc;
}

TM_TEST(schema_from_first_file_later_files_conformed) {
  const char *dir = tm_test_path("conform");
  char p[1024], from[1100];
  mkdirs(dir);
  snprintf(p, sizeof p, "%s/a.parquet", dir);
  write_parquet(p, 0, 10, TM_TYPE_UTF8, false);
  /* Missing nullable column -> NULL; an extra column is ignored. */
  snprintf(p, sizeof p, "%s/b.parquet", dir);
  write_parquet(p, 10, 15, TM_TYPE_UTF8, true);
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  const tm_schema *s = tm_source_schema(src);
  TM_ASSERT_INT_EQ(s->n_cols, 2);
  TM_ASSERT_STR_EQ(s->cols[0].name, "id");
  TM_ASSERT_STR_EQ(s->cols[1].name, "v");
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 15);
  TM_ASSERT_INT_EQ(r.nulls[1], 0);
  TM_ASSERT_INT_EQ(r.stats.files_read, 2);
  tm_source_free(src);

  snprintf(p, sizeof p, "%s/c.parquet", dir);
  write_parquet(p, 20, 23, TM_TYPE_INT64, false); /* v is int64 here: a type clash */
  src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  r = scan_all(src, &err);
  TM_ASSERT_RC(r.rc, TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "c.parquet");
  TM_ASSERT_CONTAINS(err.message, "column 'v' has type int64");
  TM_ASSERT_CONTAINS(err.message, "a.parquet"); /* where the schema came from */
  tm_source_free(src);
}

TM_TEST(missing_nullable_column_reads_as_null) {
  const char *dir = tm_test_path("nulls");
  char p[1024], from[1100];
  mkdirs(dir);
  snprintf(p, sizeof p, "%s/a.jsonl", dir);
  tm_test_write_file(p, "{\"id\": 1, \"v\": \"x\"}\n{\"id\": 2, \"v\": null}\n");
  snprintf(p, sizeof p, "%s/b.jsonl", dir);
  tm_test_write_file(p, "{\"id\": 3}\n{\"id\": 4, \"w\": 9}\n");
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  TM_ASSERT_INT_EQ(tm_source_schema(src)->n_cols, 2);
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 4);
  TM_ASSERT_INT_EQ(r.nulls[1], 3);
  tm_source_free(src);
}

TM_TEST(hidden_and_foreign_files_are_not_data) {
  const char *dir = tm_test_path("hidden");
  char p[1024], from[1100];
  snprintf(p, sizeof p, "%s/_tmp", dir);
  mkdirs(p);
  snprintf(p, sizeof p, "%s/.staging", dir);
  mkdirs(p);
  const char *junk[] = {".x.csv", "_SUCCESS", "_tmp/y.csv", ".staging/z.csv", "README.txt"};
  for (size_t i = 0; i < sizeof junk / sizeof *junk; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, junk[i]);
    tm_test_write_file(p, "id\nnot-a-number\n");
  }
  snprintf(p, sizeof p, "%s/data.csv", dir);
  tm_test_write_file(p, "id\n1\n2\n");
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  TM_ASSERT_INT_EQ(tm_source_schema(src)->cols[0].type.id, TM_TYPE_INT64);
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 2);
  TM_ASSERT_INT_EQ(r.stats.files_total, 1);
  tm_source_free(src);
}

TM_TEST(partition_folders_become_typed_columns) {
  const char *dir = tm_test_path("parts");
  const char *files[] = {"day=2026-11-30/n=1/region=eu/a.csv", "day=2026-12-01/n=22/region=us/b.csv",
                         "day=__HIVE_DEFAULT_PARTITION__/n=3/region=a%2Fb/c.csv"};
  char p[1024], from[1100];
  for (size_t i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    *strrchr(p, '/') = '\0';
    mkdirs(p);
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    tm_test_write_file(p, "id\n1\n");
  }
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  const tm_schema *s = tm_source_schema(src);
  TM_ASSERT_INT_EQ(s->n_cols, 4);
  TM_ASSERT_STR_EQ(s->cols[1].name, "day");
  TM_ASSERT_INT_EQ(s->cols[1].type.id, TM_TYPE_DATE32);
  TM_ASSERT_STR_EQ(s->cols[2].name, "n");
  TM_ASSERT_INT_EQ(s->cols[2].type.id, TM_TYPE_INT64);
  TM_ASSERT_STR_EQ(s->cols[3].name, "region");
  TM_ASSERT_INT_EQ(s->cols[3].type.id, TM_TYPE_UTF8);
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 3);
  TM_ASSERT_INT_EQ(r.nulls[1], 1); /* __HIVE_DEFAULT_PARTITION__ */
  TM_ASSERT_INT_EQ(r.nulls[3], 0);

  /* A predicate on a partition column skips whole files. */
  tm_predicate pred;
  tm_predicate_init(&pred);
  tm_value v = {.type = TM_TYPE_INT64, .v.i = 10};
  TM_ASSERT_OK(tm_predicate_add(&pred, "n", tm_type_of(TM_TYPE_INT64), TM_PRED_GT, &v, &err), &err);
  tm_scan_request req;
  tm_scan_request_init(&req);
  req.predicate = &pred;
  tm_scan *scan = NULL;
  TM_ASSERT_OK(tm_source_scan(src, &req, &scan, &err), &err);
  int64_t rows = 0;
  tm_batch b;
  int rc;
  while ((rc = tm_scan_next(scan, &b, &err)) == TM_OK) {
    rows += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(rows, 1);
  TM_ASSERT_INT_EQ(tm_scan_get_stats(scan)->files_skipped, 2);
  TM_ASSERT_INT_EQ(tm_scan_get_stats(scan)->files_read, 1);
  tm_scan_free(scan);
  tm_predicate_dispose(&pred);
  tm_source_free(src);

  /* Folders that name different partition columns are an error. */
  snprintf(p, sizeof p, "%s/other=1", dir);
  mkdirs(p);
  snprintf(p, sizeof p, "%s/other=1/d.csv", dir);
  tm_test_write_file(p, "id\n1\n");
  src = NULL;
  TM_ASSERT_RC(open_source(&src, from, NULL, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "partition folders disagree");
  tm_source_free(src);
}

TM_TEST(file_format_and_csv_params) {
  const char *dir = tm_test_path("params");
  char p[1024], from[1100];
  mkdirs(dir);
  snprintf(p, sizeof p, "%s/export.txt", dir);
  tm_test_write_file(p, "1;a\n2;b\n3;c\n");
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  /* Without file_format a .txt file is not data. */
  TM_ASSERT_RC(open_source(&src, from, NULL, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "no data files");
  tm_source_free(src);

  tm_kv params;
  tm_kv_init(&params);
  TM_ASSERT_OK(tm_kv_set(&params, "file_format", "csv", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_delimiter", ";", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_has_header", "false", &err), &err);
  src = NULL;
  TM_ASSERT_OK(open_source(&src, from, &params, &err), &err);
  const tm_schema *s = tm_source_schema(src);
  TM_ASSERT_INT_EQ(s->n_cols, 2);
  TM_ASSERT_INT_EQ(s->cols[0].type.id, TM_TYPE_INT64);
  TM_ASSERT_INT_EQ(s->cols[1].type.id, TM_TYPE_UTF8);
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 3);
  tm_source_free(src);

  const char *bad[][2] = {{"file_format", "orc"}, {"csv_delimiter", ";;"}, {"csv_has_header", "maybe"}};
  for (size_t i = 0; i < 3; i++) {
    tm_kv kv;
    tm_kv_init(&kv);
    TM_ASSERT_OK(tm_kv_set(&kv, bad[i][0], bad[i][1], &err), &err);
    src = NULL;
    TM_ASSERT_RC(open_source(&src, from, &kv, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, bad[i][0]);
    tm_source_free(src);
    tm_kv_dispose(&kv);
  }
  tm_kv_dispose(&params);
}

/* Writes path as a gzip (gz) or zstd file of text. */
static void write_compressed(const char *path, const char *text, bool gz) {
  size_t len = strlen(text), cap = len + 1024, n = 0;
  unsigned char *out = tm_malloc(cap);
  TM_ASSERT(out);
  if (gz) {
    z_stream z;
    memset(&z, 0, sizeof z);
    TM_ASSERT(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (unsigned char *)text;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    TM_ASSERT(deflate(&z, Z_FINISH) == Z_STREAM_END);
    n = cap - z.avail_out;
    deflateEnd(&z);
  } else {
    n = ZSTD_compress(out, cap, text, len, 3);
    TM_ASSERT(!ZSTD_isError(n));
  }
  FILE *f = fopen(path, "wb");
  TM_ASSERT(f);
  TM_ASSERT(fwrite(out, 1, n, f) == n);
  TM_ASSERT(fclose(f) == 0);
  tm_free(out);
}

/* Issue 16: BOM, .tsv, .csv.gz / .jsonl.zst, JSON arrays, file_compression_type, csv_* params. */
TM_TEST(compressed_tsv_bom_and_json_array_files) {
  const char *dir = tm_test_path("textfiles");
  char p[1024], from[1100];
  mkdirs(dir);
  snprintf(p, sizeof p, "%s/a.csv.gz", dir);
  write_compressed(p, "\xEF\xBB\xBFid,v\n1,x\n2,y\n", true);
  snprintf(p, sizeof p, "%s/b.tsv", dir);
  tm_test_write_file(p, "id\tv\n3\ta,b\n");
  snprintf(p, sizeof p, "%s/c.jsonl.zst", dir);
  write_compressed(p, "{\"id\": 4, \"v\": \"z\"}\n", false);
  snprintf(p, sizeof p, "%s/d.json", dir);
  tm_test_write_file(p, "[{\"id\": 5, \"v\": \"w\"},\n {\"id\": 6}]");
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_OK(open_source(&src, from, NULL, &err), &err);
  const tm_schema *s = tm_source_schema(src);
  TM_ASSERT_INT_EQ(s->n_cols, 2);
  TM_ASSERT_STR_EQ(s->cols[0].name, "id");
  TM_ASSERT_INT_EQ(s->cols[0].type.id, TM_TYPE_INT64);
  scanned r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 6);
  TM_ASSERT_INT_EQ(r.nulls[1], 1);
  tm_source_free(src);

  /* A gzip file without .gz: an error naming it, unless file_compression_type says gzip. */
  const char *dir2 = tm_test_path("textfiles_forced");
  mkdirs(dir2);
  snprintf(p, sizeof p, "%s/export.csv", dir2);
  write_compressed(p, "id;v\n1;'a;b'\n2;'it\\'s'\n", true);
  snprintf(from, sizeof from, "file:%s", dir2);
  src = NULL;
  TM_ASSERT_RC(open_source(&src, from, NULL, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "export.csv: the file is gzip-compressed");
  tm_source_free(src);
  tm_kv params;
  tm_kv_init(&params);
  TM_ASSERT_OK(tm_kv_set(&params, "file_compression_type", "GZIP", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_delimiter", ";", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_quote", "'", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_escape", "\\", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&params, "csv_schema_infer_max_records", "5", &err), &err);
  src = NULL;
  TM_ASSERT_OK(open_source(&src, from, &params, &err), &err);
  r = scan_all(src, &err);
  TM_ASSERT_OK(r.rc, &err);
  TM_ASSERT_INT_EQ(r.rows, 2);
  TM_ASSERT_INT_EQ(r.nulls[1], 0);
  tm_source_free(src);
  TM_ASSERT_OK(tm_source_check_params(from, &params, &err), &err);
  tm_kv_dispose(&params);

  /* Values we cannot read are refused when the config loads, naming the param. */
  const char *bad[][2] = {{"file_compression_type", "lz4"}, {"json_format", "xml"},
                          {"csv_quote", "ab"},             {"csv_escape", ""},
                          {"csv_schema_infer_max_records", "0"}, {"csv_delimiter", "\""}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_kv kv;
    tm_kv_init(&kv);
    TM_ASSERT_OK(tm_kv_set(&kv, bad[i][0], bad[i][1], &err), &err);
    TM_ASSERT_RC(tm_source_check_params(from, &kv, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, i == 5 ? "csv_quote" : bad[i][0]);
    src = NULL;
    TM_ASSERT_RC(open_source(&src, from, &kv, &err), TM_EINVALID);
    tm_source_free(src);
    tm_kv_dispose(&kv);
  }
  tm_kv kv;
  tm_kv_init(&kv);
  TM_ASSERT_OK(tm_kv_set(&kv, "file_format", "parquet", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&kv, "file_compression_type", "zstd", &err), &err);
  TM_ASSERT_RC(tm_source_check_params(from, &kv, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "does not apply to Parquet");
  tm_kv_dispose(&kv);
}

TM_TEST(empty_and_missing_folders) {
  const char *dir = tm_test_path("empty");
  char from[1100];
  mkdirs(dir);
  tm_error err;
  tm_error_init(&err);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_source *src = NULL;
  TM_ASSERT_RC(open_source(&src, from, NULL, &err), TM_ENOTFOUND);
  tm_source_free(src);
  snprintf(from, sizeof from, "file:%s/nope", dir);
  src = NULL;
  TM_ASSERT_RC(open_source(&src, from, NULL, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "does not exist");
  tm_source_free(src);
}

/* Copies ../shared/testdata/parquet/NAME into dir. */
static void copy_shared(const char *name, const char *dir) {
  const char *td = tm_test_require_shared();
  char src[2048], dst[2048];
  snprintf(src, sizeof src, "%s/parquet/%s", td, name);
  snprintf(dst, sizeof dst, "%s/%s", dir, name);
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  TM_ASSERT(in && out);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) TM_ASSERT(fwrite(buf, 1, n, out) == n);
  fclose(in);
  TM_ASSERT(fclose(out) == 0);
}

static int open_with_action(tm_source **src, const char *from, tm_unsupported_action action,
                            tm_error *err) {
  tm_source_options o = {TM_SOURCE_OPTIONS_VERSION, from, "t", NULL, NULL, NULL, NULL, false, action, NULL};
  int rc = tm_source_open(src, &o, err);
  if (rc == TM_OK) rc = tm_source_describe(*src, err);
  return rc;
}

/* issue 16: a nested column (nested_lists.snappy.parquet: list `a`, int `b`)
 * does not block the flat one; unsupported_type_action decides its fate. */
TM_TEST(unsupported_type_action_on_nested_columns) {
  const char *dir = tm_test_path("nested");
  char from[1100];
  mkdirs(dir);
  copy_shared("nested_lists.snappy.parquet", dir);
  snprintf(from, sizeof from, "file:%s", dir);
  tm_error err;
  tm_error_init(&err);

  /* error, warn, ignore: the nested column is native (issue 16): a LIST in
   * the schema, read whole; projecting the flat column reads it alone. */
  tm_source *src = NULL;
  const tm_schema *s;
  scanned r;
  tm_scan_request req;
  tm_scan_request_init(&req);
  tm_scan *scan = NULL;
  tm_batch b;
  for (int action = TM_UNSUPPORTED_ERROR; action <= TM_UNSUPPORTED_IGNORE; action++) {
    src = NULL;
    TM_ASSERT_OK(open_with_action(&src, from, (tm_unsupported_action)action, &err), &err);
    s = tm_source_schema(src);
    TM_ASSERT_INT_EQ(s->n_cols, 2);
    TM_ASSERT_STR_EQ(s->cols[0].name, "a");
    TM_ASSERT_INT_EQ(s->cols[0].type.id, TM_TYPE_LIST);
    TM_ASSERT_STR_EQ(s->cols[1].name, "b");
    r = scan_all(src, &err);
    TM_ASSERT_OK(r.rc, &err);
    TM_ASSERT_INT_EQ(r.rows, 3);
    const char *cols[] = {"a"};
    req.columns = cols;
    req.n_columns = 1;
    scan = NULL;
    TM_ASSERT_OK(tm_source_scan(src, &req, &scan, &err), &err);
    TM_ASSERT_OK(tm_scan_next(scan, &b, &err), &err);
    tm_colview nv = tm_batch_col(&b, 0);
    tm_buf j = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_colview_json(&j, &nv, 0, &err), &err);
    TM_ASSERT_STR_EQ(tm_buf_cstr(&j), "[[[\"a\",\"b\"],[\"c\"]],[null,[\"d\"]]]");
    tm_buf_dispose(&j);
    tm_batch_release(&b);
    tm_scan_free(scan);
    tm_source_free(src);
  }

  /* string: the nested column reads as JSON text; projecting it alone leaves
   * the required column b unread. */
  src = NULL;
  TM_ASSERT_OK(open_with_action(&src, from, TM_UNSUPPORTED_STRING, &err), &err);
  s = tm_source_schema(src);
  TM_ASSERT_INT_EQ(s->n_cols, 2);
  TM_ASSERT_INT_EQ(s->cols[0].type.id, TM_TYPE_UTF8);
  const char *only_a[] = {"a"};
  req.columns = only_a;
  scan = NULL;
  TM_ASSERT_OK(tm_source_scan(src, &req, &scan, &err), &err);
  TM_ASSERT_OK(tm_scan_next(scan, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.n_rows, 3);
  tm_colview cv = tm_batch_col(&b, 0);
  tm_strview first = tm_colview_bytes(&cv, 0);
  char text[128];
  snprintf(text, sizeof text, "%.*s", (int)first.len, first.ptr);
  TM_ASSERT_STR_EQ(text, "[[[\"a\",\"b\"],[\"c\"]],[null,[\"d\"]]]");
  tm_batch_release(&b);
  tm_scan_free(scan);
  tm_source_free(src);
}
