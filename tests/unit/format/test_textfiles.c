/*
 * Unit tests for the files people actually have (issue 16, SPEC 4): a UTF-8
 * byte-order mark, tab-separated files, csv_quote / csv_escape /
 * csv_schema_infer_max_records, ragged rows, JSON files holding one array,
 * and compressed or Parquet bytes offered as text.
 */
#include <stdio.h>

#include "format/csv/csv.h"
#include "format/json/jsonl.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_input *mem_n(const char *name, const char *text, size_t len) {
  tm_error err;
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_memory(&in, name, text, len, false, &err), &err);
  return in;
}

static tm_input *mem(const char *name, const char *text) { return mem_n(name, text, strlen(text)); }

/* The utf8 value of row i of column c. */
static tm_strview str_at(const tm_batch *b, size_t c, int64_t i) {
  const struct ArrowArray *a = b->array.children[c];
  const int32_t *off = a->buffers[1];
  const char *data = a->buffers[2];
  return tm_sv(data + off[a->offset + i], (size_t)(off[a->offset + i + 1] - off[a->offset + i]));
}

static bool sv_is(tm_strview v, const char *s) { return tm_sv_eq(v, tm_sv_cstr(s)); }

static int64_t int_at(const tm_batch *b, size_t c, int64_t i) {
  const struct ArrowArray *a = b->array.children[c];
  return ((const int64_t *)a->buffers[1])[a->offset + i];
}

/* Reads every row of a CSV text with opts; returns the first batch in *b (one batch). */
static int read_csv(const char *text, const tm_text_options *o, tm_schema *s, tm_batch *b,
                    tm_error *err) {
  tm_input *in = mem("t.csv", text);
  tm_schema_init(s);
  int rc = tm_csv_infer_schema(s, in, o, err);
  tm_csv_reader *r = NULL;
  if (rc == TM_OK) rc = tm_csv_reader_open(&r, in, s, o, err);
  if (rc == TM_OK) rc = tm_csv_reader_next(r, b, err);
  if (rc == TM_OK) {
    tm_batch more;
    int rc2 = tm_csv_reader_next(r, &more, err);
    if (rc2 == TM_OK) tm_batch_release(&more);
    if (rc2 != TM_ITEROVER) {
      tm_batch_release(b);
      rc = rc2 == TM_OK ? TM_ERROR : rc2;
    }
  }
  tm_csv_reader_free(r);
  tm_input_close(in);
  return rc;
}

TM_TEST(bom_is_stripped_from_csv_and_json) {
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  tm_batch b;
  TM_ASSERT_OK(read_csv("\xEF\xBB\xBFid,name\n1,a\n2,b\n", NULL, &s, &b, &err), &err);
  TM_ASSERT_STR_EQ(s.cols[0].name, "id");
  TM_ASSERT_INT_EQ(s.cols[0].type.id, TM_TYPE_INT64);
  TM_ASSERT_INT_EQ(b.n_rows, 2);
  TM_ASSERT_INT_EQ(int_at(&b, 0, 1), 2);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
  /* Only at the start: a BOM-like sequence later is data. */
  TM_ASSERT_OK(read_csv("id,name\n1,\xEF\xBB\xBFx\n", NULL, &s, &b, &err), &err);
  TM_ASSERT_INT_EQ(str_at(&b, 1, 0).len, 4);
  tm_batch_release(&b);
  tm_schema_dispose(&s);

  const char *jsons[] = {"\xEF\xBB\xBF{\"id\":1}\n{\"id\":2}\n", "\xEF\xBB\xBF[{\"id\":1},{\"id\":2}]"};
  for (size_t k = 0; k < 2; k++) {
    tm_input *in = mem("t.json", jsons[k]);
    tm_schema_init(&s);
    TM_ASSERT_OK(tm_jsonl_infer_schema(&s, in, NULL, &err), &err);
    TM_ASSERT_STR_EQ(s.cols[0].name, "id");
    tm_jsonl_reader *r;
    TM_ASSERT_OK(tm_jsonl_reader_open(&r, in, &s, NULL, &err), &err);
    TM_ASSERT_OK(tm_jsonl_reader_next(r, &b, &err), &err);
    TM_ASSERT_INT_EQ(b.n_rows, 2);
    TM_ASSERT_INT_EQ(int_at(&b, 0, 1), 2);
    tm_batch_release(&b);
    tm_jsonl_reader_free(r);
    tm_schema_dispose(&s);
    tm_input_close(in);
  }
}

TM_TEST(compressed_and_parquet_bytes_are_not_read_as_text) {
  static const struct {
    const char *bytes;
    size_t len;
    const char *says;
  } k[] = {{"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03id,v\n", 15, "gzip-compressed"},
           {"\x28\xb5\x2f\xfd\x04\x00id,v\n", 11, "zstd-compressed"},
           {"BZh91AY&SYid,v\n", 15, "bzip2-compressed"},
           {"\xfd" "7zXZ\0id,v\n", 11, "xz-compressed"},
           {"PAR1\x15\x04id,v\n", 11, "Parquet"}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    tm_error err;
    tm_error_init(&err);
    tm_input *in = mem_n("forced.csv", k[i].bytes, k[i].len);
    tm_schema s;
    tm_schema_init(&s);
    TM_ASSERT_RC(tm_csv_infer_schema(&s, in, NULL, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, "forced.csv");
    TM_ASSERT_CONTAINS(err.message, k[i].says);
    TM_ASSERT_RC(tm_jsonl_infer_schema(&s, in, NULL, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, k[i].says);
    tm_input_close(in);
  }
  /* A text that merely starts with "BZh" is text. */
  tm_error err;
  tm_schema s;
  tm_batch b;
  TM_ASSERT_OK(read_csv("BZh,v\n1,2\n", NULL, &s, &b, &err), &err);
  TM_ASSERT_STR_EQ(s.cols[0].name, "BZh");
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

TM_TEST(tab_separated_quote_escape_and_sample_rows) {
  tm_error err;
  tm_error_init(&err);
  tm_text_options o;
  tm_text_options_init(&o);
  o.delimiter = '\t';
  tm_schema s;
  tm_batch b;
  TM_ASSERT_OK(read_csv("id\tname\n1\ta,b\n2\t\"x\ty\"\n", &o, &s, &b, &err), &err);
  TM_ASSERT_INT_EQ(s.n_cols, 2);
  TM_ASSERT(sv_is(str_at(&b, 1, 0), "a,b"));
  TM_ASSERT(sv_is(str_at(&b, 1, 1), "x\ty"));
  tm_batch_release(&b);
  tm_schema_dispose(&s);

  /* csv_quote "'" and csv_escape "\": the escape makes the next byte literal inside quotes. */
  tm_text_options_init(&o);
  o.quote = '\'';
  o.escape = '\\';
  TM_ASSERT_OK(read_csv("id,s\n1,'a\\'b'\n2,'x,y'\n3,'it''s'\n4,\"q\"\n5,'back\\\\slash'\n6,a\\b\n",
                        &o, &s, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.n_rows, 6);
  TM_ASSERT(sv_is(str_at(&b, 1, 0), "a'b"));
  TM_ASSERT(sv_is(str_at(&b, 1, 1), "x,y"));
  TM_ASSERT(sv_is(str_at(&b, 1, 2), "it's"));
  TM_ASSERT(sv_is(str_at(&b, 1, 3), "\"q\""));
  TM_ASSERT(sv_is(str_at(&b, 1, 4), "back\\slash"));
  TM_ASSERT(sv_is(str_at(&b, 1, 5), "a\\b")); /* outside quotes it is a plain byte */
  tm_batch_release(&b);
  tm_schema_dispose(&s);
  /* An escape at the very end is an unterminated field. */
  TM_ASSERT_RC(read_csv("id,s\n1,'abc\\", &o, &s, &b, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "unterminated");

  /* csv_schema_infer_max_records: one sampled row infers an integer the third row breaks. */
  tm_text_options_init(&o);
  o.sample_rows = 1;
  TM_ASSERT_RC(read_csv("id,v\n1,2\n2,3\n3,x\n", &o, &s, &b, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "line 4");
  tm_schema_dispose(&s);
  o.sample_rows = 3;
  TM_ASSERT_OK(read_csv("id,v\n1,2\n2,3\n3,x\n", &o, &s, &b, &err), &err);
  TM_ASSERT_INT_EQ(s.cols[1].type.id, TM_TYPE_UTF8);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

TM_TEST(ragged_rows_are_errors_naming_file_and_line) {
  tm_error err;
  tm_error_init(&err);
  tm_schema s;
  tm_batch b;
  /* In the sample (schema inference) and after it (the reader). */
  TM_ASSERT_RC(read_csv("a,b,c\n1,2,3\n4,5\n", NULL, &s, &b, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "t.csv: line 3 has 2 fields");
  tm_text_options o;
  tm_text_options_init(&o);
  o.sample_rows = 1;
  TM_ASSERT_RC(read_csv("a,b,c\n1,2,3\n4,5,6\n7,8,9,10\n", &o, &s, &b, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "t.csv: line 4 has 4 fields");
  tm_schema_dispose(&s);
  /* Blank lines are not records, in the sample too. */
  TM_ASSERT_OK(read_csv("a,b\n1,2\n\n3,4\n\n", NULL, &s, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.n_rows, 2);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

static int read_json(const char *text, const tm_text_options *o, int64_t *rows, int64_t *sum,
                     tm_error *err) {
  tm_input *in = mem("t.json", text);
  tm_schema s;
  tm_schema_init(&s);
  tm_jsonl_reader *r = NULL;
  int rc = tm_jsonl_infer_schema(&s, in, o, err);
  if (rc == TM_OK) rc = tm_jsonl_reader_open(&r, in, &s, o, err);
  *rows = *sum = 0;
  tm_batch b;
  while (rc == TM_OK && (rc = tm_jsonl_reader_next(r, &b, err)) == TM_OK) {
    *rows += b.n_rows;
    for (int64_t i = 0; i < b.n_rows; i++) *sum += int_at(&b, 0, i);
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_jsonl_reader_free(r);
  tm_schema_dispose(&s);
  tm_input_close(in);
  return rc;
}

TM_TEST(json_array_files) {
  tm_error err;
  tm_error_init(&err);
  int64_t rows, sum;
  /* Detected by its first byte; braces and brackets inside strings do not count. */
  TM_ASSERT_OK(read_json("  \n[\n {\"a\": 1, \"b\": \"}]\\\"{\"},\n {\"a\": 2, \"c\": [1, {\"d\": 3}]}\n]\n",
                         NULL, &rows, &sum, &err), &err);
  TM_ASSERT_INT_EQ(rows, 2);
  TM_ASSERT_INT_EQ(sum, 3);
  TM_ASSERT_OK(read_json("[]", NULL, &rows, &sum, &err) == TM_OK ? TM_ERROR : TM_OK, &err);
  TM_ASSERT_CONTAINS(err.message, "no JSON objects");
  /* Errors name the file and the line. */
  static const struct {
    const char *text;
    const char *says;
  } bad[] = {{"[{\"a\":1}\n {\"a\":2}]", "t.json: line 2: expected ',' or ']'"},
             {"[{\"a\":1},\n 5]", "t.json: line 2: expected a JSON object, got '5'"},
             {"[{\"a\":1}]\n{\"a\":2}", "t.json: line 2: expected the end of the file"},
             {"[{\"a\":1},\n{\"a\":", "t.json: line 2: unterminated JSON object"},
             {"[{\"a\":1},", "the JSON array ends early"},
             {"[{\"a\" 1}]", "t.json: line 1:"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_RC(read_json(bad[i].text, NULL, &rows, &sum, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, bad[i].says);
  }
  /* json_format: jsonl refuses an array file; array refuses JSON lines. */
  tm_text_options o;
  tm_text_options_init(&o);
  o.json_format = TM_JSON_LINES;
  TM_ASSERT_RC(read_json("[{\"a\":1}]", &o, &rows, &sum, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "line 1: expected a JSON object");
  o.json_format = TM_JSON_ARRAY;
  TM_ASSERT_RC(read_json("{\"a\":1}\n", &o, &rows, &sum, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "expected '['");
  /* An array larger than a read chunk, in several batches. */
  tm_buf big;
  tm_buf_init(&big, TM_BUF_UNLIMITED);
  TM_ASSERT_OK(tm_buf_putc(&big, '[', &err), &err);
  int64_t want = 0;
  for (int i = 0; i < 60000; i++) {
    char line[96];
    int n = snprintf(line, sizeof line, "%s{\"a\": %d, \"pad\": \"%040d\"}\n", i ? "," : "", i, i);
    TM_ASSERT_OK(tm_buf_append(&big, line, (size_t)n, &err), &err);
    want += i;
  }
  TM_ASSERT_OK(tm_buf_putc(&big, ']', &err), &err);
  o.json_format = TM_JSON_AUTO;
  o.batch_rows = 7000;
  TM_ASSERT_OK(read_json(tm_buf_cstr(&big), &o, &rows, &sum, &err), &err);
  TM_ASSERT_INT_EQ(rows, 60000);
  TM_ASSERT_INT_EQ(sum, want);
  /* An object over max_record_bytes is too large, not a silent cut. */
  o.max_record_bytes = 32;
  TM_ASSERT_RC(read_json("[{\"a\": 1, \"pad\": \"0123456789012345678901234567890123456789\"}]", &o,
                         &rows, &sum, &err), TM_ETOOLARGE);
  tm_buf_dispose(&big);
}

