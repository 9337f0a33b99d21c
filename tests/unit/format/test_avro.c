/*
 * Unit tests for format/avro: container reading with every codec, schema
 * parsing, value decoding, the writer, and hostile input (truncation, bit
 * flips, limits, reads against an unreadable page). SPEC D2: bad Avro gets a
 * clear error, never a crash.
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/avro/avro.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/buf.h"

static const char *avro_dir(void) {
  static char path[4096];
  const char *td = tm_test_require_shared();
  snprintf(path, sizeof path, "%s/avro", td);
  return path;
}

static const char *avro_path(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", avro_dir(), name);
  return path;
}

/* Decodes a whole container from memory into text, one record per line.
 * Returns the status; *text_out is set (tm_free) on success. */
static int decode_mem(const void *data, size_t len, const tm_avro_limits *lim,
                      char **text_out, int64_t *n_out, tm_error *err) {
  tm_input *in = NULL;
  tm_avro_reader *r = NULL;
  tm_buf text = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc;
  TM_CHECK(tm_input_open_memory(&in, "mem.avro", data, len, false, err));
  TM_CHECK(tm_avro_reader_open(&r, in, lim, err));
  for (;;) {
    const tm_avro_value *v;
    rc = tm_avro_reader_next(r, &v, err);
    if (rc == TM_ITEROVER) break;
    if (rc < 0) goto done;
    TM_CHECK(tm_avro_value_to_text(&text, v, err));
    TM_CHECK(tm_buf_putc(&text, '\n', err));
  }
  rc = TM_OK;
  if (n_out) *n_out = tm_avro_reader_records(r);
  if (text_out) *text_out = tm_buf_take(&text, NULL);
done:
  tm_buf_dispose(&text);
  tm_avro_reader_free(r);
  tm_input_close(in);
  return rc;
}

static char *read_whole(const char *path, size_t *len) {
  tm_error err;
  char *data = NULL;
  TM_ASSERT_OK(tm_read_file(path, 1 << 24, &data, len, &err), &err);
  return data;
}

static char *decode_file(const char *name, int64_t *n_out) {
  tm_error err;
  size_t len;
  char *data = read_whole(avro_path(name), &len);
  char *text = NULL;
  TM_ASSERT_OK(decode_mem(data, len, NULL, &text, n_out, &err), &err);
  tm_free(data);
  return text;
}


TM_TEST(avro_codecs_decode_to_the_same_values) {
  int64_t n1, n2, n3;
  char *a = decode_file("alltypes_plain.avro", &n1);
  char *b = decode_file("alltypes_plain.snappy.avro", &n2);
  char *c = decode_file("alltypes_plain.zstandard.avro", &n3);
  TM_ASSERT_INT_EQ(n1, 8);
  TM_ASSERT_INT_EQ(n2, 8);
  TM_ASSERT_INT_EQ(n3, 8);
  TM_ASSERT_STR_EQ(a, b);
  TM_ASSERT_STR_EQ(a, c);
  /* parquet-testing's alltypes_plain: ids 4,5,6,7,2,3,0,1. */
  TM_ASSERT(strncmp(a, "{\"id\": 4, \"bool_col\": true,", 27) == 0);
  TM_ASSERT_CONTAINS(a, "\"id\": 1, \"bool_col\": false, \"tinyint_col\": 1");
  tm_free(a);
  tm_free(b);
  tm_free(c);
}

TM_TEST(avro_codec_roundtrip_through_our_writer) {
  tm_error err;
  size_t len;
  char *data = read_whole(avro_path("alltypes_plain.zstandard.avro"), &len);
  char *want = NULL;
  TM_ASSERT_OK(decode_mem(data, len, NULL, &want, NULL, &err), &err);
  for (int codec = 0; codec < 2; codec++) {
    tm_input *in = NULL;
    tm_avro_reader *r = NULL;
    tm_avro_writer *w = NULL;
    TM_ASSERT_OK(tm_input_open_memory(&in, "x", data, len, false, &err), &err);
    TM_ASSERT_OK(tm_avro_reader_open(&r, in, NULL, &err), &err);
    const char *schema = tm_avro_reader_meta(r, "avro.schema", NULL);
    tm_kv meta;
    tm_kv_init(&meta);
    TM_ASSERT_OK(tm_kv_set(&meta, "tidemark.test", "yes", &err), &err);
    TM_ASSERT_OK(tm_avro_writer_new(&w, schema, (tm_avro_codec)codec, &meta, &err), &err);
    const tm_avro_value *v;
    int rc;
    while ((rc = tm_avro_reader_next(r, &v, &err)) == TM_OK) {
      TM_ASSERT_OK(tm_avro_writer_append(w, v, &err), &err);
    }
    TM_ASSERT_RC(rc, TM_ITEROVER);
    tm_buf out = TM_BUF_INIT(0);
    TM_ASSERT_OK(tm_avro_writer_finish(w, &out, &err), &err);
    char *got = NULL;
    TM_ASSERT_OK(decode_mem(out.ptr, out.len, NULL, &got, NULL, &err), &err);
    TM_ASSERT_STR_EQ(got, want);
    /* Our metadata and the codec name are in the header. */
    tm_input *in2 = NULL;
    tm_avro_reader *r2 = NULL;
    TM_ASSERT_OK(tm_input_open_memory(&in2, "y", out.ptr, out.len, false, &err), &err);
    TM_ASSERT_OK(tm_avro_reader_open(&r2, in2, NULL, &err), &err);
    TM_ASSERT_STR_EQ(tm_avro_reader_meta(r2, "tidemark.test", NULL), "yes");
    TM_ASSERT_STR_EQ(tm_avro_reader_codec(r2), codec ? "deflate" : "null");
    tm_avro_reader_free(r2);
    tm_input_close(in2);
    tm_free(got);
    tm_buf_dispose(&out);
    tm_kv_dispose(&meta);
    tm_avro_writer_free(w);
    tm_avro_reader_free(r);
    tm_input_close(in);
  }
  tm_free(want);
  tm_free(data);
}

TM_TEST(avro_unsupported_codecs_fail_clearly) {
  const char *files[] = {"alltypes_plain.bzip2.avro", "alltypes_plain.xz.avro"};
  const char *names[] = {"bzip2", "xz"};
  for (int i = 0; i < 2; i++) {
    tm_error err;
    size_t len;
    char *data = read_whole(avro_path(files[i]), &len);
    TM_ASSERT_RC(decode_mem(data, len, NULL, NULL, NULL, &err), TM_EUNSUPPORTED);
    TM_ASSERT_CONTAINS(err.message, "unsupported Avro codec");
    TM_ASSERT_CONTAINS(err.message, names[i]);
    tm_free(data);
  }
}

TM_TEST(avro_every_sample_decodes) {
  DIR *d = opendir(avro_dir());
  TM_ASSERT(d);
  struct dirent *e;
  int files = 0;
  while ((e = readdir(d)) != NULL) {
    if (!tm_str_has_suffix(e->d_name, ".avro")) continue;
    if (strstr(e->d_name, "bzip2") || strstr(e->d_name, ".xz.")) continue;
    int64_t n = 0;
    char *text = decode_file(e->d_name, &n);
    TM_ASSERT_MSG(n > 0, "%s: no records", e->d_name);
    tm_free(text);
    files++;
  }
  closedir(d);
  TM_ASSERT(files >= 15);
}

TM_TEST(avro_logical_and_complex_types) {
  int64_t n;
  /* nested records, arrays of records and unions inside arrays. */
  char *t = decode_file("nested_records.avro", &n);
  TM_ASSERT_INT_EQ(n, 2);
  TM_ASSERT_CONTAINS(t, "\"f1\": {\"f1_1\": \"aaa\", \"f1_2\": 10, \"f1_3\": {\"f1_3_1\": 3.14");
  TM_ASSERT_CONTAINS(t, "\"f2\": [{\"f2_1\": true, \"f2_2\": 1.2}, {\"f2_1\": true, \"f2_2\": 2.2}]");
  TM_ASSERT_CONTAINS(t, "\"f4\": [{\"f4_1\": 200}, null]");
  TM_ASSERT_CONTAINS(t, "\"f3\": null, \"f4\": [null, {\"f4_1\": 300}]");
  tm_free(t);
  /* enums print by symbol. */
  t = decode_file("simple_enum.avro", &n);
  TM_ASSERT(n > 0);
  TM_ASSERT(strchr(t, '"') != NULL);
  tm_free(t);

  /* The schema parser records logical types. */
  tm_error err;
  size_t len;
  char *data = read_whole(avro_path("timestamp_logical_types.avro"), &len);
  tm_input *in = NULL;
  tm_avro_reader *r = NULL;
  TM_ASSERT_OK(tm_input_open_memory(&in, "ts", data, len, false, &err), &err);
  TM_ASSERT_OK(tm_avro_reader_open(&r, in, NULL, &err), &err);
  const tm_avro_schema *s = tm_avro_reader_schema(r);
  TM_ASSERT_INT_EQ(s->kind, TM_AVRO_RECORD);
  int saw_micros = 0, saw_local = 0;
  for (size_t i = 0; i < s->n_fields; i++) {
    const tm_avro_schema *f = tm_avro_schema_nonnull(s->fields[i].type);
    if (f->logical == TM_AVRO_LT_TIMESTAMP_MICROS) saw_micros++;
    if (f->logical == TM_AVRO_LT_LOCAL_TIMESTAMP_MICROS) saw_local++;
  }
  TM_ASSERT(saw_micros >= 1);
  TM_ASSERT(saw_local >= 1);
  tm_avro_reader_free(r);
  tm_input_close(in);
  tm_free(data);

  data = read_whole(avro_path("fixed_length_decimal.avro"), &len);
  TM_ASSERT_OK(tm_input_open_memory(&in, "dec", data, len, false, &err), &err);
  TM_ASSERT_OK(tm_avro_reader_open(&r, in, NULL, &err), &err);
  s = tm_avro_reader_schema(r);
  const tm_avro_schema *dec = tm_avro_schema_nonnull(s->fields[0].type);
  TM_ASSERT_INT_EQ(dec->logical, TM_AVRO_LT_DECIMAL);
  TM_ASSERT(dec->precision > 0);
  const tm_avro_value *v;
  TM_ASSERT_OK(tm_avro_reader_next(r, &v, &err), &err);
  tm_strview b;
  TM_ASSERT(tm_avro_get_bytes(&v->u.list.items[0], &b));
  uint8_t le[16];
  TM_ASSERT_OK(tm_avro_decimal_to_le16((const uint8_t *)b.ptr, b.len, le, &err), &err);
  /* parquet-testing fixed_length_decimal: first value 1.00 at scale 2 = 100. */
  TM_ASSERT_INT_EQ(le[0], 100);
  TM_ASSERT_INT_EQ(le[1], 0);
  tm_avro_reader_free(r);
  tm_input_close(in);
  tm_free(data);
}

TM_TEST(avro_iceberg_manifest_list_fields_by_id) {
  const char *td = tm_test_require_shared();
  const char *files[] = {"manifest-list-v2-1.avro", "manifest-list-v2-2.avro"};
  for (int i = 0; i < 2; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/iceberg/manifest-list-samples/%s", td, files[i]);
    tm_error err;
    tm_input *in = NULL;
    tm_avro_reader *r = NULL;
    TM_ASSERT_OK(tm_input_open_file(&in, path, &err), &err);
    TM_ASSERT_OK(tm_avro_reader_open(&r, in, NULL, &err), &err);
    const tm_avro_value *v;
    TM_ASSERT_OK(tm_avro_reader_next(r, &v, &err), &err);
    /* 504 is added_files_count in both, whatever its name. */
    int64_t added = -1, path_len = 0;
    TM_ASSERT(tm_avro_get_long(tm_avro_record_get_id(v, 504), &added));
    TM_ASSERT(added >= 0);
    tm_strview mp;
    TM_ASSERT(tm_avro_get_bytes(tm_avro_record_get_id(v, 500), &mp));
    path_len = (int64_t)mp.len;
    TM_ASSERT(path_len > 0);
    TM_ASSERT_RC(tm_avro_reader_next(r, &v, &err), TM_ITEROVER);
    tm_avro_reader_free(r);
    tm_input_close(in);
  }
}

TM_TEST(avro_schema_errors_name_the_problem) {
  tm_error err;
  tm_avro_schema *s = NULL;
  const char *bad[] = {
      "{",
      "{\"type\": \"record\", \"name\": \"r\"}",
      "{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": \"nope\"}]}",
      "[\"null\", [\"int\"]]",
      "{\"type\": \"enum\", \"name\": \"e\", \"symbols\": []}",
      "{\"type\": \"fixed\", \"name\": \"f\", \"size\": -1}",
      "{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": "
      "\"int\"}, {\"name\": \"a\", \"type\": \"int\"}]}",
      "{\"type\": \"array\"}",
  };
  const char *why[] = {"not valid JSON", "fields", "unknown type", "union directly inside",
                       "symbols", "size", "appears twice", "items"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_RC(tm_avro_schema_parse(&s, bad[i], strlen(bad[i]), &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, why[i]);
  }
  /* Recursive schemas parse; decoding them is bounded by depth. */
  const char *rec =
      "{\"type\": \"record\", \"name\": \"L\", \"fields\": [{\"name\": \"next\", \"type\": "
      "[\"null\", \"L\"]}]}";
  TM_ASSERT_OK(tm_avro_schema_parse(&s, rec, strlen(rec), &err), &err);
  uint8_t deep[200];
  for (int i = 0; i < 200; i++) deep[i] = 2; /* branch 1 again and again */
  tm_arena a;
  tm_arena_init(&a, 1 << 20);
  tm_avro_value v;
  const uint8_t *p = deep;
  TM_ASSERT_RC(tm_avro_decode(&p, deep + sizeof deep, s, &a, 64, &v, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "nests too deeply");
  tm_arena_dispose(&a);
  tm_avro_schema_free(s);
}

TM_TEST(avro_hostile_counts_are_bounded) {
  tm_error err;
  tm_avro_schema *s = NULL;
  const char *js = "{\"type\": \"array\", \"items\": \"null\"}";
  TM_ASSERT_OK(tm_avro_schema_parse(&s, js, strlen(js), &err), &err);
  /* An array of 2^62 nulls in 9 bytes must hit the memory limit, not loop. */
  tm_buf b = TM_BUF_INIT(64);
  TM_ASSERT_OK(tm_avro_put_long(&b, INT64_C(1) << 62, &err), &err);
  tm_arena a;
  tm_arena_init(&a, 1 << 20);
  tm_avro_value v;
  const uint8_t *p = (const uint8_t *)b.ptr;
  TM_ASSERT_RC(tm_avro_decode(&p, p + b.len, s, &a, 64, &v, &err), TM_ETOOLARGE);
  tm_arena_dispose(&a);
  tm_buf_dispose(&b);
  tm_avro_schema_free(s);

  /* A string longer than the data. */
  js = "\"string\"";
  TM_ASSERT_OK(tm_avro_schema_parse(&s, js, strlen(js), &err), &err);
  uint8_t str[] = {0x7e, 'a'};
  p = str;
  tm_arena_init(&a, 1 << 20);
  TM_ASSERT_RC(tm_avro_decode(&p, str + 2, s, &a, 64, &v, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "runs past the end");
  /* An overlong varint. */
  uint8_t vi[11];
  memset(vi, 0xff, sizeof vi);
  p = vi;
  TM_ASSERT_RC(tm_avro_decode(&p, vi + 11, s, &a, 64, &v, &err), TM_ECORRUPT);
  tm_arena_dispose(&a);
  tm_avro_schema_free(s);
}

TM_TEST(avro_block_limit_is_enforced) {
  tm_error err;
  size_t len;
  char *data = read_whole(avro_path("alltypes_plain.zstandard.avro"), &len);
  tm_avro_limits lim;
  tm_avro_limits_default(&lim);
  lim.max_block_bytes = 100;
  TM_ASSERT_RC(decode_mem(data, len, &lim, NULL, NULL, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "limit");
  tm_free(data);
}

/* Every prefix and every single-byte corruption of a few files: an error or
 * a clean read, never a crash (ASan/UBSan watch). */
TM_TEST(avro_truncation_and_bit_flips_never_crash) {
  const char *files[] = {"nested_records.avro", "alltypes_plain.snappy.avro",
                         "alltypes_plain.zstandard.avro", "duration_uuid.avro"};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    size_t len;
    char *data = read_whole(avro_path(files[f]), &len);
    char *copy = tm_malloc(len);
    int64_t full_n = 0;
    tm_free(decode_file(files[f], &full_n));
    for (size_t cut = 0; cut < len; cut++) {
      /* A prefix that ends at a block boundary is a valid, shorter file. */
      tm_error err;
      char *text = NULL;
      int64_t n = 0;
      int rc = decode_mem(data, cut, NULL, &text, &n, &err);
      if (rc == TM_OK) {
        TM_ASSERT_MSG(n < full_n, "%s cut at %zu decoded every record", files[f], cut);
        tm_free(text);
      } else {
        TM_ASSERT(err.message[0] != '\0');
      }
    }
    for (size_t i = 0; i < len; i++) {
      memcpy(copy, data, len);
      copy[i] ^= (char)0x5a;
      tm_error err;
      char *text = NULL;
      if (decode_mem(copy, len, NULL, &text, NULL, &err) == TM_OK) tm_free(text);
    }
    tm_free(copy);
    tm_free(data);
  }
}

/* Datum decoding reads nothing past its end: place input against a
 * PROT_NONE page (picohttpparser's technique). */
TM_TEST(avro_decode_respects_the_end_of_input) {
  long page = sysconf(_SC_PAGESIZE);
  uint8_t *mem = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TM_ASSERT(mem != MAP_FAILED);
  TM_ASSERT(mprotect(mem + page, (size_t)page, PROT_NONE) == 0);
  tm_error err;
  tm_avro_schema *s = NULL;
  const char *js =
      "{\"type\": \"record\", \"name\": \"r\", \"fields\": [{\"name\": \"a\", \"type\": "
      "\"long\"}, {\"name\": \"b\", \"type\": {\"type\": \"map\", \"values\": \"string\"}}, "
      "{\"name\": \"c\", \"type\": \"double\"}]}";
  TM_ASSERT_OK(tm_avro_schema_parse(&s, js, strlen(js), &err), &err);
  tm_buf full = TM_BUF_INIT(1024);
  TM_ASSERT_OK(tm_avro_put_long(&full, 123456789, &err), &err);
  TM_ASSERT_OK(tm_avro_put_long(&full, 1, &err), &err);
  TM_ASSERT_OK(tm_avro_put_string(&full, "key", &err), &err);
  TM_ASSERT_OK(tm_avro_put_string(&full, "value", &err), &err);
  TM_ASSERT_OK(tm_avro_put_long(&full, 0, &err), &err);
  TM_ASSERT_OK(tm_avro_put_double(&full, 2.5, &err), &err);
  for (size_t n = 0; n <= full.len; n++) {
    uint8_t *start = mem + page - n;
    memcpy(start, full.ptr, n);
    tm_arena a;
    tm_arena_init(&a, 1 << 20);
    tm_avro_value v;
    const uint8_t *p = start;
    int rc = tm_avro_decode(&p, start + n, s, &a, 64, &v, &err);
    if (n < full.len) {
      TM_ASSERT_RC(rc, TM_ECORRUPT);
    } else {
      TM_ASSERT_OK(rc, &err);
      TM_ASSERT_INT_EQ(v.u.list.items[0].u.l, 123456789);
      TM_ASSERT_DBL_EQ(v.u.list.items[2].u.d, 2.5);
    }
    tm_arena_dispose(&a);
  }
  tm_buf_dispose(&full);
  tm_avro_schema_free(s);
  munmap(mem, (size_t)page * 2);
}

TM_TEST(avro_encode_rejects_mismatched_values) {
  tm_error err;
  tm_avro_schema *s = NULL;
  const char *js = "[\"null\", \"long\"]";
  TM_ASSERT_OK(tm_avro_schema_parse(&s, js, strlen(js), &err), &err);
  tm_avro_schema str = {0};
  str.kind = TM_AVRO_STRING;
  tm_avro_value v = {&str, -1, {0}};
  tm_buf b = TM_BUF_INIT(64);
  TM_ASSERT_RC(tm_avro_encode(&b, s, &v, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "fits no branch");
  tm_avro_schema lng = {0};
  lng.kind = TM_AVRO_LONG;
  v.schema = &lng;
  v.u.l = -3;
  TM_ASSERT_OK(tm_avro_encode(&b, s, &v, &err), &err);
  TM_ASSERT_INT_EQ(b.len, 2);
  TM_ASSERT_INT_EQ((uint8_t)b.ptr[0], 2); /* branch 1 */
  TM_ASSERT_INT_EQ((uint8_t)b.ptr[1], 5); /* zigzag(-3) */
  tm_buf_dispose(&b);
  tm_avro_schema_free(s);
}
