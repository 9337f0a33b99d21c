/* Unit tests for format/text, format/csv and format/json: typed text, CSV, JSON lines. */
#include <stdio.h>

#include "format/arrow/render.h"
#include "format/csv/csv.h"
#include "format/json/jsonl.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_input *mem(const char *name, const char *text) {
  tm_error err;
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, name, text, strlen(text), false, &err), &err);
  return in;
}

/* Renders a whole batch as CSV text through tm_out. */
static int sink(const char *d, size_t n, void *p) {
  tm_error e;
  return tm_buf_append(p, d, n, &e);
}

static char *render_csv(const tm_batch *b) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(1 << 24);
  const char *names[64];
  for (size_t i = 0; i < b->schema.n_cols; i++) names[i] = b->schema.cols[i].name;
  tm_out o;
  TM_ASSERT_OK(tm_out_begin(&o, TM_OUT_CSV, names, b->schema.n_cols, sink, &out, &err), &err);
  TM_ASSERT_OK(tm_out_batch(&o, b, &err), &err);
  TM_ASSERT_OK(tm_out_end(&o, &err), &err);
  return tm_buf_take(&out, NULL);
}

TM_TEST(classify_and_widen) {
  TM_ASSERT_INT_EQ(tm_text_classify("", 0), TM_TEXT_NULL);
  TM_ASSERT_INT_EQ(tm_text_classify("TRUE", 4), TM_TEXT_BOOL);
  TM_ASSERT_INT_EQ(tm_text_classify("-42", 3), TM_TEXT_INT);
  TM_ASSERT_INT_EQ(tm_text_classify("4.5e3", 5), TM_TEXT_FLOAT);
  TM_ASSERT_INT_EQ(tm_text_classify("2026-11-30", 10), TM_TEXT_DATE);
  TM_ASSERT_INT_EQ(tm_text_classify("2026-11-30 10:00:00", 19), TM_TEXT_TIMESTAMP);
  TM_ASSERT_INT_EQ(tm_text_classify("2026-11-30T10:00:00Z", 20), TM_TEXT_TIMESTAMPTZ);
  TM_ASSERT_INT_EQ(tm_text_classify("nan", 3), TM_TEXT_STRING);
  TM_ASSERT_INT_EQ(tm_text_widen(TM_TEXT_INT, TM_TEXT_FLOAT), TM_TEXT_FLOAT);
  TM_ASSERT_INT_EQ(tm_text_widen(TM_TEXT_DATE, TM_TEXT_TIMESTAMPTZ), TM_TEXT_TIMESTAMPTZ);
  TM_ASSERT_INT_EQ(tm_text_widen(TM_TEXT_TIMESTAMP, TM_TEXT_TIMESTAMPTZ), TM_TEXT_STRING);
  TM_ASSERT_INT_EQ(tm_text_widen(TM_TEXT_INT, TM_TEXT_NULL), TM_TEXT_INT);
}

TM_TEST(csv_infer_and_read_rfc4180) {
  tm_error err;
  const char *text =
      "id,name,amount,day,ts,flag\r\n"
      "1,\"Smith, \"\"Jo\"\"\",1.5,2026-11-30,2026-11-30T10:00:00Z,true\r\n"
      "2,,2,2026-12-01,2026-11-30 11:00:00+01:00,false\n"
      "3,\"\",,2026-12-02,2026-11-30T12:00:00.25Z,\n"
      "4,\"two\nlines\",-7,2026-12-03,2026-11-30T13:00:00Z,TRUE";
  tm_input *in = mem("t.csv", text);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_csv_infer_schema(&s, in, NULL, &err), &err);
  TM_ASSERT_INT_EQ(s.n_cols, 6);
  TM_ASSERT_INT_EQ(s.cols[0].type.id, TM_TYPE_INT64);
  TM_ASSERT_INT_EQ(s.cols[1].type.id, TM_TYPE_UTF8);
  TM_ASSERT_INT_EQ(s.cols[2].type.id, TM_TYPE_FLOAT64);
  TM_ASSERT_INT_EQ(s.cols[3].type.id, TM_TYPE_DATE32);
  TM_ASSERT(s.cols[4].type.id == TM_TYPE_TIMESTAMP && s.cols[4].type.utc);
  TM_ASSERT_INT_EQ(s.cols[5].type.id, TM_TYPE_BOOL);
  tm_csv_reader *r;
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, NULL, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_csv_reader_next(r, &b, &err), &err);
  char *got = render_csv(&b);
  TM_ASSERT_STR_EQ(got,
                   "id,name,amount,day,ts,flag\r\n"
                   "1,\"Smith, \"\"Jo\"\"\",1.5,2026-11-30,2026-11-30T10:00:00Z,true\r\n"
                   "2,,2,2026-12-01,2026-11-30T10:00:00Z,false\r\n"
                   "3,\"\",,2026-12-02,2026-11-30T12:00:00.25Z,\r\n"
                   "4,\"two\nlines\",-7,2026-12-03,2026-11-30T13:00:00Z,true\r\n");
  tm_free(got);
  tm_batch_release(&b);
  TM_ASSERT_RC(tm_csv_reader_next(r, &b, &err), TM_ITEROVER);
  tm_csv_reader_free(r);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(csv_schema_by_header_name) {
  tm_error err;
  tm_input *in = mem("t.csv", "B,extra,a\nx,1,5\ny,2,6\n");
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "a", tm_type_of(TM_TYPE_INT32), false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "b", tm_type_of(TM_TYPE_UTF8), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "missing", tm_type_of(TM_TYPE_FLOAT64), true, -1, &err), &err);
  tm_csv_reader *r;
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, NULL, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_csv_reader_next(r, &b, &err), &err);
  char *got = render_csv(&b);
  TM_ASSERT_STR_EQ(got, "a,b,missing\r\n5,x,\r\n6,y,\r\n");
  tm_free(got);
  tm_batch_release(&b);
  tm_csv_reader_free(r);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(csv_errors_name_file_line_and_column) {
  tm_error err;
  tm_input *in = mem("bad.csv", "id,v\n1,2\n2,x\n");
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "v", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  tm_csv_reader *r;
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, NULL, &err), &err);
  tm_batch b;
  TM_ASSERT_RC(tm_csv_reader_next(r, &b, &err), TM_EINVALID);
  TM_ASSERT_STR_EQ(err.message, "bad.csv: line 3, column 'v': expected an integer, got 'x'");
  tm_csv_reader_free(r);
  tm_input_close(in);
  in = mem("ragged.csv", "id,v\n1,2\n3\n");
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, NULL, &err), &err);
  TM_ASSERT_RC(tm_csv_reader_next(r, &b, &err), TM_ECORRUPT);
  TM_ASSERT_STR_EQ(err.message, "ragged.csv: line 3 has 1 fields, expected 2");
  tm_csv_reader_free(r);
  tm_input_close(in);
  in = mem("open.csv", "id,v\n1,\"never closed\n");
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, NULL, &err), &err);
  TM_ASSERT_RC(tm_csv_reader_next(r, &b, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "unterminated quoted field");
  tm_csv_reader_free(r);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(csv_records_across_read_chunks) {
  tm_error err;
  /* ~3 MiB so records straddle the 1 MiB read chunks, quoted newlines included. */
  tm_buf text = TM_BUF_INIT(1 << 26);
  TM_ASSERT_OK(tm_buf_puts(&text, "id,s\n", &err), &err);
  const int rows = 60000;
  for (int i = 0; i < rows; i++)
    TM_ASSERT_OK(tm_buf_printf(&text, &err, "%d,\"row %d, line\nbreak %040d\"\n", i, i, i), &err);
  const char *path = tm_test_path("big.csv");
  tm_test_write_file(path, tm_buf_cstr(&text));
  tm_buf_dispose(&text);
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_file(&in, path, &err), &err);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_csv_infer_schema(&s, in, NULL, &err), &err);
  tm_text_options o;
  tm_text_options_init(&o);
  o.batch_rows = 7000;
  tm_csv_reader *r;
  TM_ASSERT_OK(tm_csv_reader_open(&r, in, &s, &o, &err), &err);
  tm_batch b;
  int64_t total = 0, batches = 0;
  int rc;
  while ((rc = tm_csv_reader_next(r, &b, &err)) == TM_OK) {
    tm_colview id = tm_batch_col(&b, 0), sv = tm_batch_col(&b, 1);
    for (int64_t k = 0; k < b.n_rows; k++) {
      TM_ASSERT_INT_EQ(tm_colview_int(&id, k), total + k);
      char want[128];
      int n = snprintf(want, sizeof want, "row %lld, line\nbreak %040lld", (long long)(total + k), (long long)(total + k));
      tm_strview got = tm_colview_bytes(&sv, k);
      TM_ASSERT(got.len == (size_t)n && memcmp(got.ptr, want, (size_t)n) == 0);
    }
    total += b.n_rows;
    batches++;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(total, rows);
  TM_ASSERT_INT_EQ(batches, 9);
  tm_csv_reader_free(r);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(jsonl_infer_and_read) {
  tm_error err;
  const char *text =
      "{\"id\": 1, \"ts\": \"2026-11-30T10:00:00Z\", \"v\": 1.5, \"tags\": [1,2], \"ok\": true}\n"
      "\n"
      "{\"id\": 2, \"ts\": \"2026-11-30T11:00:00+01:00\", \"v\": 2, \"extra\": \"x\"}\r\n"
      "{\"id\": 3, \"v\": null, \"tags\": {\"a\": \"b\"}}";
  tm_input *in = mem("t.jsonl", text);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_jsonl_infer_schema(&s, in, NULL, &err), &err);
  TM_ASSERT_INT_EQ(s.n_cols, 6);
  TM_ASSERT_INT_EQ(s.cols[0].type.id, TM_TYPE_INT64);
  TM_ASSERT(s.cols[1].type.id == TM_TYPE_TIMESTAMP && s.cols[1].type.utc);
  TM_ASSERT_INT_EQ(s.cols[2].type.id, TM_TYPE_FLOAT64);
  TM_ASSERT_INT_EQ(s.cols[3].type.id, TM_TYPE_UTF8);
  tm_jsonl_reader *r;
  TM_ASSERT_OK(tm_jsonl_reader_open(&r, in, &s, NULL, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_jsonl_reader_next(r, &b, &err), &err);
  char *got = render_csv(&b);
  TM_ASSERT_STR_EQ(got,
                   "id,ts,v,tags,ok,extra\r\n"
                   "1,2026-11-30T10:00:00Z,1.5,\"[1,2]\",true,\r\n"
                   "2,2026-11-30T10:00:00Z,2,,,x\r\n"
                   "3,,,\"{\"\"a\"\":\"\"b\"\"}\",,\r\n");
  tm_free(got);
  tm_batch_release(&b);
  tm_jsonl_reader_free(r);
  /* An ISO8601 time column stays text when asked. */
  tm_schema_dispose(&s);
  tm_schema_init(&s);
  tm_text_options o;
  tm_text_options_init(&o);
  const char *keep[] = {"ts"};
  o.string_columns = keep;
  o.n_string_columns = 1;
  TM_ASSERT_OK(tm_jsonl_infer_schema(&s, in, &o, &err), &err);
  TM_ASSERT_INT_EQ(s.cols[1].type.id, TM_TYPE_UTF8);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(jsonl_errors_name_file_and_line) {
  tm_error err;
  tm_input *in = mem("bad.jsonl", "{\"id\": 1}\n{\"id\": \n");
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), true, -1, &err), &err);
  tm_jsonl_reader *r;
  TM_ASSERT_OK(tm_jsonl_reader_open(&r, in, &s, NULL, &err), &err);
  tm_batch b;
  TM_ASSERT_RC(tm_jsonl_reader_next(r, &b, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "bad.jsonl: line 2: ");
  tm_jsonl_reader_free(r);
  tm_input_close(in);
  in = mem("arr.jsonl", "[1,2]\n");
  TM_ASSERT_OK(tm_jsonl_reader_open(&r, in, &s, NULL, &err), &err);
  TM_ASSERT_RC(tm_jsonl_reader_next(r, &b, &err), TM_ECORRUPT);
  /* A top-level array is read as one (docs/FORMATS.md); its elements must be objects. */
  TM_ASSERT_STR_EQ(err.message, "arr.jsonl: line 1: expected a JSON object, got '1'");
  tm_jsonl_reader_free(r);
  tm_input_close(in);
  in = mem("type.jsonl", "{\"id\": \"seven\"}\n");
  TM_ASSERT_OK(tm_jsonl_reader_open(&r, in, &s, NULL, &err), &err);
  TM_ASSERT_RC(tm_jsonl_reader_next(r, &b, &err), TM_EINVALID);
  TM_ASSERT_STR_EQ(err.message, "type.jsonl: line 1, key 'id': expected an integer, got 'seven'");
  tm_jsonl_reader_free(r);
  tm_input_close(in);
  tm_schema_dispose(&s);
}

TM_TEST(text_append_types) {
  tm_error err;
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, tm_type_decimal(5, 2), 0);
  TM_ASSERT_OK(tm_text_append(&cb, "-123.4", 6, &err), &err);
  TM_ASSERT_RC(tm_text_append(&cb, "1.234", 5, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_text_append(&cb, "1234.5", 6, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "does not fit decimal(5,2)");
  tm_colbuilder_dispose(&cb);
  tm_type u = tm_type_fixed(16);
  u.uuid = true;
  tm_colbuilder_init(&cb, u, 0);
  TM_ASSERT_OK(tm_text_append(&cb, "123e4567-e89b-12d3-a456-426614174000", 36, &err), &err);
  TM_ASSERT_RC(tm_text_append(&cb, "123e4567", 8, &err), TM_EINVALID);
  tm_colbuilder_dispose(&cb);
}
