/* Unit tests for format/arrow: types, schemas, batches, builders, rendering. */
#include <math.h>

#include "format/arrow/batch.h"
#include "format/arrow/render.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/str.h"

static void all_types_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  tm_type t64 = tm_type_of(TM_TYPE_TIME64);
  t64.unit = TM_UNIT_MICRO;
  tm_type uuid = tm_type_fixed(16);
  uuid.uuid = true;
  struct { const char *name; tm_type type; } cols[] = {
      {"b", tm_type_of(TM_TYPE_BOOL)},        {"i8", tm_type_of(TM_TYPE_INT8)},
      {"i16", tm_type_of(TM_TYPE_INT16)},     {"i32", tm_type_of(TM_TYPE_INT32)},
      {"i64", tm_type_of(TM_TYPE_INT64)},     {"u8", tm_type_of(TM_TYPE_UINT8)},
      {"u64", tm_type_of(TM_TYPE_UINT64)},    {"f32", tm_type_of(TM_TYPE_FLOAT32)},
      {"f64", tm_type_of(TM_TYPE_FLOAT64)},   {"dec", tm_type_decimal(10, 2)},
      {"s", tm_type_of(TM_TYPE_UTF8)},        {"bin", tm_type_of(TM_TYPE_BINARY)},
      {"d", tm_type_of(TM_TYPE_DATE32)},      {"t", t64},
      {"ts", tm_type_timestamp(TM_UNIT_MICRO, true)},
      {"tsn", tm_type_timestamp(TM_UNIT_NANO, false)}, {"u", uuid}};
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    TM_ASSERT_OK(tm_schema_add(s, cols[i].name, cols[i].type, true, (int32_t)i + 1, &err), &err);
}

TM_TEST(arrow_format_round_trip) {
  tm_error err;
  tm_schema s, back;
  all_types_schema(&s);
  struct ArrowSchema as;
  TM_ASSERT_OK(tm_schema_to_arrow(&s, &as, &err), &err);
  TM_ASSERT_STR_EQ(as.format, "+s");
  TM_ASSERT_INT_EQ(as.n_children, (int64_t)s.n_cols);
  TM_ASSERT_STR_EQ(as.children[9]->format, "d:10,2");
  TM_ASSERT_STR_EQ(as.children[14]->format, "tsu:UTC");
  TM_ASSERT_STR_EQ(as.children[15]->format, "tsn:");
  TM_ASSERT_STR_EQ(as.children[16]->format, "w:16");
  tm_schema_init(&back);
  TM_ASSERT_OK(tm_schema_from_arrow(&back, &as, &err), &err);
  TM_ASSERT(tm_schema_equal(&s, &back));
  TM_ASSERT(back.cols[16].type.uuid);
  as.release(&as);
  TM_ASSERT(as.release == NULL);
  tm_type t;
  TM_ASSERT_RC(tm_type_from_arrow_format("+l", &t, &err), TM_EUNSUPPORTED);
  TM_ASSERT_RC(tm_type_from_arrow_format("d:99,2", &t, &err), TM_EUNSUPPORTED);
  tm_schema_dispose(&s);
  tm_schema_dispose(&back);
}

TM_TEST(build_read_filter_all_types_with_nulls) {
  tm_error err;
  tm_schema s;
  all_types_schema(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  const int rows = 100;
  for (int r = 0; r < rows; r++) {
    for (size_t c = 0; c < s.n_cols; c++) {
      tm_colbuilder *cb = tm_batch_builder_col(&bb, c);
      if ((r + (int)c) % 7 == 0) {
        TM_ASSERT_OK(tm_colbuilder_append_null(cb, &err), &err);
        continue;
      }
      switch (s.cols[c].type.id) {
        case TM_TYPE_BOOL: TM_ASSERT_OK(tm_colbuilder_append_bool(cb, r % 2, &err), &err); break;
        case TM_TYPE_UINT8:
        case TM_TYPE_UINT64: TM_ASSERT_OK(tm_colbuilder_append_uint(cb, (uint64_t)r, &err), &err); break;
        case TM_TYPE_FLOAT32:
        case TM_TYPE_FLOAT64: TM_ASSERT_OK(tm_colbuilder_append_double(cb, r + 0.5, &err), &err); break;
        case TM_TYPE_DECIMAL128: TM_ASSERT_OK(tm_colbuilder_append_int(cb, -r * 101, &err), &err); break;
        case TM_TYPE_UTF8:
        case TM_TYPE_BINARY: {
          char txt[32];
          int n = snprintf(txt, sizeof txt, "row-%d", r);
          TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, txt, (size_t)(r % 5 == 0 ? 0 : n), &err), &err);
          break;
        }
        case TM_TYPE_FIXED_BINARY: {
          uint8_t u[16];
          memset(u, r, 16);
          TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, u, 16, &err), &err);
          break;
        }
        default: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r - 50, &err), &err);
      }
    }
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.n_rows, rows);
  for (size_t c = 0; c < s.n_cols; c++) {
    tm_colview v = tm_batch_col(&b, c);
    for (int r = 0; r < rows; r++) {
      bool null = (r + (int)c) % 7 == 0;
      TM_ASSERT_INT_EQ(tm_colview_is_null(&v, r), null);
      if (null) continue;
      tm_value val;
      tm_colview_get(&v, r, &val);
      if (s.cols[c].type.id == TM_TYPE_INT64) TM_ASSERT_INT_EQ(val.v.i, r - 50);
      if (s.cols[c].type.id == TM_TYPE_UTF8) {
        char txt[32];
        int n = snprintf(txt, sizeof txt, "row-%d", r);
        if (r % 5 == 0) n = 0;
        TM_ASSERT_INT_EQ(val.v.s.len, n);
        TM_ASSERT(memcmp(val.v.s.ptr, txt, (size_t)n) == 0);
      }
    }
  }
  /* Keep every third row. */
  uint8_t keep[16] = {0};
  for (int r = 0; r < rows; r += 3) tm_bit_set(keep, r);
  tm_batch f;
  TM_ASSERT_OK(tm_batch_filter(&b, keep, &f, &err), &err);
  TM_ASSERT_INT_EQ(f.n_rows, 34);
  for (size_t c = 0; c < s.n_cols; c++) {
    tm_colview a = tm_batch_col(&b, c), z = tm_batch_col(&f, c);
    for (int r = 0, k = 0; r < rows; r += 3, k++) {
      tm_value x, y;
      tm_colview_get(&a, r, &x);
      tm_colview_get(&z, k, &y);
      TM_ASSERT_INT_EQ(x.is_null, y.is_null);
      if (!x.is_null) TM_ASSERT(tm_value_cmp(&x, &y) == 0 && tm_value_hash(&x) == tm_value_hash(&y));
    }
  }
  /* Export through the C Data Interface and release there. */
  struct ArrowSchema as;
  struct ArrowArray aa;
  TM_ASSERT_OK(tm_batch_export(&f, &as, &aa, &err), &err);
  TM_ASSERT_INT_EQ(aa.length, 34);
  TM_ASSERT_INT_EQ(aa.n_children, (int64_t)s.n_cols);
  aa.release(&aa);
  as.release(&as);
  tm_batch_release(&f);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

TM_TEST(builder_range_checks) {
  tm_error err;
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, tm_type_of(TM_TYPE_INT8), 0);
  TM_ASSERT_RC(tm_colbuilder_append_int(&cb, 128, &err), TM_EINVALID);
  TM_ASSERT_OK(tm_colbuilder_append_int(&cb, -128, &err), &err);
  tm_colbuilder_dispose(&cb);
  tm_colbuilder_init(&cb, tm_type_fixed(4), 0);
  TM_ASSERT_RC(tm_colbuilder_append_bytes(&cb, "abc", 3, &err), TM_EINVALID);
  tm_colbuilder_dispose(&cb);
}

static void render_one(const tm_type *t, const tm_value *v, const char *want) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(1024);
  TM_ASSERT_OK(tm_value_render(&b, t, v, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b), want);
  tm_buf_dispose(&b);
}

TM_TEST(render_values) {
  tm_value v = {0};
  tm_type t = tm_type_decimal(10, 2);
  v.type = TM_TYPE_DECIMAL128;
  __int128 x = -1230;
  memcpy(v.v.dec, &x, 16);
  render_one(&t, &v, "-12.30");
  x = 5;
  memcpy(v.v.dec, &x, 16);
  render_one(&t, &v, "0.05");
  t = tm_type_timestamp(TM_UNIT_MICRO, true);
  v.type = TM_TYPE_TIMESTAMP;
  v.v.i = INT64_C(1764472093500000);
  render_one(&t, &v, "2025-11-30T03:08:13.5Z");
  t = tm_type_timestamp(TM_UNIT_MILLI, false);
  v.v.i = -1;
  render_one(&t, &v, "1969-12-31T23:59:59.999");
  t = tm_type_of(TM_TYPE_DATE32);
  v.type = TM_TYPE_DATE32;
  v.v.i = -719162;
  render_one(&t, &v, "0001-01-01");
  t = tm_type_of(TM_TYPE_FLOAT64);
  v.type = TM_TYPE_FLOAT64;
  v.v.f = 0.1;
  render_one(&t, &v, "0.1");
  v.v.f = NAN;
  render_one(&t, &v, "NaN");
  t = tm_type_of(TM_TYPE_FLOAT32);
  v.type = TM_TYPE_FLOAT32;
  v.v.f = (float)0.1;
  render_one(&t, &v, "0.1");
}

static int sink_buf(const char *data, size_t len, void *payload) {
  tm_error err;
  return tm_buf_append(payload, data, len, &err);
}

TM_TEST(output_csv_json_table) {
  tm_error err;
  const char *names[] = {"id", "name"};
  const char *t1[] = {"1", "a,\"b\""};
  const char *t2[] = {NULL, ""};
  size_t l1[] = {1, 5}, l2[] = {0, 0};
  tm_cell_kind k1[] = {TM_CELL_NUMBER, TM_CELL_TEXT}, k2[] = {TM_CELL_NULL, TM_CELL_TEXT};
  struct { tm_out_format f; const char *want; } cases[] = {
      {TM_OUT_CSV, "id,name\r\n1,\"a,\"\"b\"\"\"\r\n,\"\"\r\n"},
      {TM_OUT_JSON, "[{\"id\":1,\"name\":\"a,\\\"b\\\"\"},{\"id\":null,\"name\":\"\"}]\n"},
      {TM_OUT_TABLE, "id   | name\n-----+------\n   1 | a,\"b\"\nNULL | \n(2 rows)\n"},
  };
  for (size_t i = 0; i < 3; i++) {
    tm_buf b = TM_BUF_INIT(1 << 20);
    tm_out o;
    TM_ASSERT_OK(tm_out_begin(&o, cases[i].f, names, 2, sink_buf, &b, &err), &err);
    TM_ASSERT_OK(tm_out_row(&o, t1, l1, k1, &err), &err);
    TM_ASSERT_OK(tm_out_row(&o, t2, l2, k2, &err), &err);
    TM_ASSERT_OK(tm_out_end(&o, &err), &err);
    TM_ASSERT_STR_EQ(tm_buf_cstr(&b), cases[i].want);
    tm_buf_dispose(&b);
  }
}

/*
 * Spice's application/vnd.spiceai.sql.v1+json (SPEC 1.3): row_count first, as
 * Spice writes it, while the rows fit TM_OUT_SPICE_HOLD; past that the
 * schema and rows stream and row_count comes last. Fields as arrow-rs
 * serializes them. No column types: refused.
 */
TM_TEST(output_spice_v1_holds_then_streams) {
  tm_error err;
  const char *names[] = {"id", "name"};
  const char *types[] = {"\"Int64\"", "\"Utf8\""};
  const char *t1[] = {"1", "a"};
  size_t l1[] = {1, 1};
  tm_cell_kind k1[] = {TM_CELL_NUMBER, TM_CELL_TEXT};
  const char *fields =
      "\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\",\"nullable\":true,"
      "\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}},{\"name\":\"name\",\"data_type\":"
      "\"Utf8\",\"nullable\":true,\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}}],"
      "\"metadata\":{}}";
  char want[1024];
  /* Small: held, row_count first. */
  tm_buf b = TM_BUF_INIT(1 << 20);
  tm_out o;
  TM_ASSERT_OK(tm_out_begin_fields(&o, TM_OUT_SPICE_V1, names, types, 2, sink_buf, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.len, 0);
  TM_ASSERT_OK(tm_out_row(&o, t1, l1, k1, &err), &err);
  TM_ASSERT_OK(tm_out_row(&o, t1, l1, k1, &err), &err);
  TM_ASSERT_INT_EQ(b.len, 0);
  TM_ASSERT_OK(tm_out_end(&o, &err), &err);
  snprintf(want, sizeof want, "{\"row_count\":2,%s,\"data\":[{\"id\":1,\"name\":\"a\"},"
                              "{\"id\":1,\"name\":\"a\"}]}\n", fields);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b), want);
  /* Empty: the schema all the same (Spice writes "schema": {} then). */
  tm_buf_clear(&b);
  TM_ASSERT_OK(tm_out_begin_fields(&o, TM_OUT_SPICE_V1, names, types, 2, sink_buf, &b, &err), &err);
  TM_ASSERT_OK(tm_out_end(&o, &err), &err);
  snprintf(want, sizeof want, "{\"row_count\":0,%s,\"data\":[]}\n", fields);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b), want);
  /* Large: streams once past the hold; row_count last; the document still parses whole. */
  tm_buf_clear(&b);
  TM_ASSERT_OK(tm_out_begin_fields(&o, TM_OUT_SPICE_V1, names, types, 2, sink_buf, &b, &err), &err);
  int64_t rows = 0;
  while (b.len == 0) {
    TM_ASSERT_OK(tm_out_row(&o, t1, l1, k1, &err), &err);
    rows++;
  }
  TM_ASSERT((size_t)rows * 20 > TM_OUT_SPICE_HOLD); /* held until past the hold */
  size_t at_switch = b.len;
  TM_ASSERT_OK(tm_out_row(&o, t1, l1, k1, &err), &err);
  TM_ASSERT(b.len > at_switch); /* then each row goes straight out */
  rows++;
  TM_ASSERT_OK(tm_out_end(&o, &err), &err);
  snprintf(want, sizeof want, "{%s,\"data\":[{\"id\":1,", fields);
  TM_ASSERT(strncmp(tm_buf_cstr(&b), want, strlen(want)) == 0);
  snprintf(want, sizeof want, "{\"id\":1,\"name\":\"a\"}],\"row_count\":%lld}\n", (long long)rows);
  TM_ASSERT(tm_str_has_suffix(tm_buf_cstr(&b), want));
  tm_buf_dispose(&b);
  /* The format needs the types. */
  TM_ASSERT_RC(tm_out_begin(&o, TM_OUT_SPICE_V1, names, 2, sink_buf, &b, &err), TM_EINVALID);
}

/*
 * JSON output is always UTF-8 (SPEC 1.3 /v1/sql, D2): SQLite text may hold any
 * bytes (CAST(x'ff' AS TEXT)); every byte that does not start a well-formed
 * sequence becomes U+FFFD, well-formed ones pass unchanged. Found by
 * fuzz_sql_authorizer and fuzz_http_request.
 */
TM_TEST(output_json_replaces_invalid_utf8) {
  tm_error err;
  const char *names[] = {"c\xff"};
  struct { const char *in; const char *want; } cases[] = {
      {"\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80", "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80"},
      {"a\xff" "b", "a\\ufffdb"},
      {"\x80\xbf", "\\ufffd\\ufffd"},                  /* stray continuation bytes */
      {"x\xc3", "x\\ufffd"},                            /* truncated at the cell's end */
      {"\xe2\x82", "\\ufffd\\ufffd"},                  /* truncated three-byte form */
      {"\xc0\x80", "\\ufffd\\ufffd"},                  /* overlong NUL */
      {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},      /* a surrogate */
      {"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* past U+10FFFF */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int f = 0; f < 2; f++) {
      tm_buf b = TM_BUF_INIT(1 << 20);
      tm_out o;
      const char *t[] = {cases[i].in};
      size_t l[] = {strlen(cases[i].in)};
      tm_cell_kind k[] = {TM_CELL_TEXT};
      TM_ASSERT_OK(tm_out_begin(&o, f ? TM_OUT_JSONL : TM_OUT_JSON, names, 1, sink_buf, &b, &err),
                   &err);
      TM_ASSERT_OK(tm_out_row(&o, t, l, k, &err), &err);
      TM_ASSERT_OK(tm_out_end(&o, &err), &err);
      char want[128];
      snprintf(want, sizeof want, f ? "{\"c\\ufffd\":\"%s\"}\n" : "[{\"c\\ufffd\":\"%s\"}]\n",
               cases[i].want);
      TM_ASSERT_STR_EQ(tm_buf_cstr(&b), want);
      tm_buf_dispose(&b);
    }
  }
}

/* SPEC A4: the one conversion of a time value to an instant. */
TM_TEST(A4_value_instant_of_every_time_type) {
  tm_instant t;
  tm_value v = {.type = TM_TYPE_TIMESTAMP, .v.i = -1};
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_TIMESTAMP, .unit = TM_UNIT_MICRO}, TM_TIME_FORMAT_UNSET, &v, &t));
  TM_ASSERT(t.sec == -1 && t.nsec == 999999000);
  v = (tm_value){.type = TM_TYPE_DATE32, .v.i = 2};
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_DATE32}, TM_TIME_FORMAT_DATE, &v, &t) && t.sec == 172800);
  v = (tm_value){.type = TM_TYPE_INT64, .v.i = 1500};
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_INT64}, TM_TIME_FORMAT_UNIX_MILLIS, &v, &t));
  TM_ASSERT(t.sec == 1 && t.nsec == 500000000);
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_INT64}, TM_TIME_FORMAT_UNIX_SECONDS, &v, &t) && t.sec == 1500);
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_INT64}, TM_TIME_FORMAT_UNIX_NANOS, &v, &t) && t.nsec == 1500);
  v = (tm_value){.type = TM_TYPE_UINT64, .v.u = UINT64_MAX};
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_UINT64}, TM_TIME_FORMAT_UNSET, &v, &t) && t.sec == INT64_MAX);
  v = (tm_value){.type = TM_TYPE_UTF8, .v.s = tm_sv("2024-05-01T12:00:00+02:00", 25)};
  TM_ASSERT(tm_value_instant(&(tm_type){.id = TM_TYPE_UTF8}, TM_TIME_FORMAT_ISO8601, &v, &t) && t.sec == 1714557600);
  v.v.s = tm_sv("yesterday", 9);
  TM_ASSERT(!tm_value_instant(&(tm_type){.id = TM_TYPE_UTF8}, TM_TIME_FORMAT_ISO8601, &v, &t));
  v = (tm_value){.type = TM_TYPE_INT64, .is_null = true};
  TM_ASSERT(!tm_value_instant(&(tm_type){.id = TM_TYPE_INT64}, TM_TIME_FORMAT_UNSET, &v, &t));
  v = (tm_value){.type = TM_TYPE_FLOAT64, .v.f = 1.0};
  TM_ASSERT(!tm_value_instant(&(tm_type){.id = TM_TYPE_FLOAT64}, TM_TIME_FORMAT_UNSET, &v, &t));
}

/* ---- nested types and arrays (issue 16) --------------------------------------- */

/* list<int32>, struct<"a": int64, "b": utf8>, map<utf8, list<int32>> */
static void nested_types(tm_type *list, tm_type *st, tm_type *map) {
  tm_error err;
  tm_type i32 = tm_type_of(TM_TYPE_INT32);
  TM_ASSERT_OK(tm_type_list(&i32, true, list, &err), &err);
  const char *names[2] = {"a", "b"};
  tm_type types[2] = {tm_type_of(TM_TYPE_INT64), tm_type_of(TM_TYPE_UTF8)};
  bool nl[2] = {false, true};
  TM_ASSERT_OK(tm_type_struct(2, names, types, nl, st, &err), &err);
  tm_type key = tm_type_of(TM_TYPE_UTF8);
  TM_ASSERT_OK(tm_type_map(&key, list, true, map, &err), &err);
}

TM_TEST(nested_types_are_interned_named_and_encoded) {
  tm_error err;
  tm_type l, s, m, l2, s2;
  nested_types(&l, &s, &m);
  nested_types(&l2, &s2, &m);
  TM_ASSERT(l.nested == l2.nested && tm_type_equal(&l, &l2) && tm_type_equal(&s, &s2));
  TM_ASSERT(!tm_type_equal(&l, &s));
  tm_type i32 = tm_type_of(TM_TYPE_INT32), lnn;
  TM_ASSERT_OK(tm_type_list(&i32, false, &lnn, &err), &err);
  TM_ASSERT(!tm_type_equal(&l, &lnn)); /* element nullability is part of the type */
  char name[128];
  tm_type_name(&s, name, sizeof name);
  TM_ASSERT_STR_EQ(name, "struct<\"a\":int64!,\"b\":utf8>");
  tm_type_name(&m, name, sizeof name);
  TM_ASSERT_STR_EQ(name, "map<utf8,list<int32>>");
  TM_ASSERT_INT_EQ(tm_type_depth(&m), 3);
  /* Text round trip, and hostile text refused. */
  tm_type all[3] = {l, s, m};
  for (int i = 0; i < 3; i++) {
    tm_buf b = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_type_encode(&all[i], &b, &err), &err);
    tm_type back;
    TM_ASSERT_OK(tm_type_decode(b.ptr, b.len, &back, &err), &err);
    TM_ASSERT(tm_type_equal(&back, &all[i]));
    for (size_t cut = 0; cut < b.len; cut++) TM_ASSERT(tm_type_decode(b.ptr, cut, &back, &err) < 0);
    tm_buf_dispose(&b);
  }
  tm_type back;
  TM_ASSERT(tm_type_decode("109:", 4, &back, &err) < 0);
  TM_ASSERT(tm_type_decode("100:2:+l0:", 10, &back, &err) < 0);
  TM_ASSERT(tm_type_decode("100:2:+l999999999:", 18, &back, &err) < 0);
  /* Too deep: a list of lists past the cap. */
  tm_type t = i32;
  int rc = TM_OK;
  for (int d = 0; d < TM_NTYPE_MAX_DEPTH + 2 && rc == TM_OK; d++) rc = tm_type_list(&t, true, &t, &err);
  TM_ASSERT_INT_EQ(rc, TM_EUNSUPPORTED);
  /* The Arrow schema of nested columns and back. */
  tm_schema sc, sb;
  tm_schema_init(&sc);
  tm_schema_init(&sb);
  TM_ASSERT_OK(tm_schema_add(&sc, "l", l, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&sc, "s", s, false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&sc, "m", m, true, -1, &err), &err);
  struct ArrowSchema as;
  TM_ASSERT_OK(tm_schema_to_arrow(&sc, &as, &err), &err);
  TM_ASSERT_STR_EQ(as.children[0]->format, "+l");
  TM_ASSERT_STR_EQ(as.children[0]->children[0]->format, "i");
  TM_ASSERT_STR_EQ(as.children[1]->children[1]->name, "b");
  TM_ASSERT_STR_EQ(as.children[2]->format, "+m");
  TM_ASSERT_STR_EQ(as.children[2]->children[0]->format, "+s");
  TM_ASSERT_STR_EQ(as.children[2]->children[0]->children[1]->format, "+l");
  TM_ASSERT_OK(tm_schema_from_arrow(&sb, &as, &err), &err);
  TM_ASSERT(tm_schema_equal(&sc, &sb));
  as.release(&as);
  tm_schema_dispose(&sc);
  tm_schema_dispose(&sb);
}

/* Rows: [1, NULL, 3] | NULL | [] ; {a 7, b "x"} | NULL | {a 9, b NULL} ;
 * {"k": [5]} | {} | NULL */
static void build_nested_batch(tm_batch *out) {
  tm_error err;
  tm_type l, s, m;
  nested_types(&l, &s, &m);
  tm_schema sc;
  tm_schema_init(&sc);
  TM_ASSERT_OK(tm_schema_add(&sc, "l", l, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&sc, "s", s, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&sc, "m", m, true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &sc, &err), &err);
  tm_colbuilder *cl = tm_batch_builder_col(&bb, 0), *cs = tm_batch_builder_col(&bb, 1),
                *cm = tm_batch_builder_col(&bb, 2);
  tm_colbuilder *el = tm_colbuilder_child(cl, 0);
  TM_ASSERT_OK(tm_colbuilder_append_int(el, 1, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(el, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(el, 3, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cl, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(cl, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cl, &err), &err);
  /* A struct slot whose fields were not all appended is refused. */
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(cs, 0), 7, &err), &err);
  TM_ASSERT_RC(tm_colbuilder_append_nested(cs, &err), TM_EINVALID);
  TM_ASSERT_OK(tm_colbuilder_append_bytes(tm_colbuilder_child(cs, 1), "x", 1, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cs, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(cs, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(cs, 0), 9, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(tm_colbuilder_child(cs, 1), &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cs, &err), &err);
  tm_colbuilder *ent = tm_colbuilder_child(cm, 0);
  TM_ASSERT_OK(tm_colbuilder_append_bytes(tm_colbuilder_child(ent, 0), "k", 1, &err), &err);
  tm_colbuilder *vl = tm_colbuilder_child(ent, 1);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_colbuilder_child(vl, 0), 5, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(vl, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(ent, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cm, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_nested(cm, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(cm, &err), &err);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&sc);
}

static void assert_json_rows(const tm_batch *b, const char *const *want) {
  tm_error err;
  for (size_t c = 0; c < b->schema.n_cols; c++) {
    tm_colview v = tm_batch_col(b, c);
    for (int64_t r = 0; r < b->n_rows; r++) {
      tm_buf j = TM_BUF_INIT(1 << 16);
      TM_ASSERT_OK(tm_colview_json(&j, &v, r, &err), &err);
      TM_ASSERT_STR_EQ(tm_buf_cstr(&j), want[c * (size_t)b->n_rows + (size_t)r]);
      tm_buf_dispose(&j);
    }
  }
}

TM_TEST(nested_arrays_build_filter_and_render) {
  tm_error err;
  tm_batch b, f, j;
  build_nested_batch(&b);
  TM_ASSERT_INT_EQ(b.n_rows, 3);
  tm_colview l = tm_batch_col(&b, 0);
  TM_ASSERT_INT_EQ(l.null_count, 1);
  const int32_t *off = l.values;
  TM_ASSERT(off[0] == 0 && off[1] == 3 && off[2] == 3 && off[3] == 3);
  TM_ASSERT_INT_EQ(tm_colview_child(&l, 0).length, 3);
  TM_ASSERT_INT_EQ(tm_colview_child(&l, 0).null_count, 1);
  tm_colview s = tm_batch_col(&b, 1);
  TM_ASSERT_INT_EQ(tm_colview_child(&s, 0).length, 3); /* a NULL struct still has fields */
  for (size_t c = 0; c < 3; c++) {
    tm_colview v = tm_batch_col(&b, c);
    TM_ASSERT_OK(tm_colview_check(&v, &err), &err);
  }
  const char *want[] = {"[1,null,3]", "null", "[]",
                        "{\"a\":7,\"b\":\"x\"}", "null", "{\"a\":9,\"b\":null}",
                        "{\"k\":[5]}", "{}", "null"};
  assert_json_rows(&b, want);
  TM_ASSERT(tm_batch_byte_size(&b) > 0);
  /* Filter rows 0 and 2: offsets rebased, children copied. */
  uint8_t keep = 0x5;
  TM_ASSERT_OK(tm_batch_filter(&b, &keep, &f, &err), &err);
  const char *want_f[] = {"[1,null,3]", "[]", "{\"a\":7,\"b\":\"x\"}", "{\"a\":9,\"b\":null}",
                          "{\"k\":[5]}", "null"};
  assert_json_rows(&f, want_f);
  /* As JSON text (the sqlite engine's form). */
  TM_ASSERT_OK(tm_batch_nested_as_json(&b, &j, &err), &err);
  TM_ASSERT_INT_EQ(j.schema.cols[2].type.id, TM_TYPE_UTF8);
  tm_colview jm = tm_batch_col(&j, 2);
  tm_value v;
  tm_colview_get(&jm, 0, &v);
  TM_ASSERT(!v.is_null && v.v.s.len == 9 && memcmp(v.v.s.ptr, "{\"k\":[5]}", 9) == 0);
  tm_colview_get(&jm, 2, &v);
  TM_ASSERT(v.is_null);
  /* Export for DuckDB: the Arrow children are there. */
  struct ArrowSchema as;
  struct ArrowArray aa;
  TM_ASSERT_OK(tm_batch_export(&f, &as, &aa, &err), &err);
  TM_ASSERT_INT_EQ(aa.children[0]->n_children, 1);
  TM_ASSERT_INT_EQ(aa.children[2]->children[0]->n_children, 2);
  aa.release(&aa);
  as.release(&as);
  tm_batch_release(&j);
  tm_batch_release(&b);
}

/* Offsets from outside are hostile: every bad shape is refused, never read. */
TM_TEST(nested_offsets_from_outside_are_checked) {
  tm_error err;
  tm_batch b;
  build_nested_batch(&b);
  tm_colview l = tm_batch_col(&b, 0);
  int32_t *off = (int32_t *)l.values; /* our own buffer: corrupted on purpose */
  int32_t saved[4];
  memcpy(saved, off, sizeof saved);
  tm_buf j = TM_BUF_INIT(1 << 16);
  off[1] = 99; /* past the 3 elements */
  TM_ASSERT_RC(tm_colview_check(&l, &err), TM_ECORRUPT);
  TM_ASSERT_RC(tm_colview_json(&j, &l, 0, &err), TM_ECORRUPT);
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, l.type, 0);
  TM_ASSERT_RC(tm_colbuilder_append_range(&cb, &l, 0, 1, &err), TM_ECORRUPT);
  tm_colbuilder_dispose(&cb);
  memcpy(off, saved, sizeof saved);
  off[0] = -1;
  TM_ASSERT_RC(tm_colview_check(&l, &err), TM_ECORRUPT);
  TM_ASSERT_RC(tm_colview_json(&j, &l, 0, &err), TM_ECORRUPT);
  memcpy(off, saved, sizeof saved);
  off[3] = 2; /* decreasing (row 2 is a valid empty list) */
  TM_ASSERT_RC(tm_colview_check(&l, &err), TM_ECORRUPT);
  TM_ASSERT_RC(tm_colview_json(&j, &l, 2, &err), TM_ECORRUPT);
  memcpy(off, saved, sizeof saved);
  TM_ASSERT_OK(tm_colview_check(&l, &err), &err);
  /* A struct whose field is shorter than the struct. */
  tm_colview s = tm_batch_col(&b, 1);
  struct ArrowArray *field = s.array->children[0];
  field->length = 2;
  TM_ASSERT_RC(tm_colview_check(&s, &err), TM_ECORRUPT);
  field->length = 3;
  tm_buf_dispose(&j);
  tm_batch_release(&b);
}
