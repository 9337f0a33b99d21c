/*
 * Unit tests for Iceberg schema evolution inside nested columns (issue 16):
 * tm_iceberg_update_schema's checks, and reading data files written before a
 * struct's members were renamed, moved, dropped, added or promoted, by
 * member id, by the name mapping, and by name; natively and as JSON text.
 *
 * Data files are real Parquet: DuckDB writes the rows, tidemark's writer
 * rewrites them with the Iceberg member ids of the schema they were written
 * under (as an Iceberg writer does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/arrow/render.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "format/iceberg/writer.h"
#include "format/parquet/parquet.h"
#include "io/io.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_iceberg_io g_io;

/* Schema 0: p {a int, b string, c float}, l list<{x int, y string}>, m map<string, {v int}>. */
static const char *k_v1 =
    "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
    " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
    "   {\"id\": 3, \"name\": \"a\", \"type\": \"int\"},"
    "   {\"id\": 4, \"name\": \"b\", \"type\": \"string\"},"
    "   {\"id\": 5, \"name\": \"c\", \"type\": \"float\"}]}},"
    " {\"id\": 6, \"name\": \"l\", \"type\": {\"type\": \"list\", \"element-id\": 7,"
    "   \"element-required\": false, \"element\": {\"type\": \"struct\", \"fields\": ["
    "     {\"id\": 8, \"name\": \"x\", \"type\": \"int\"},"
    "     {\"id\": 9, \"name\": \"y\", \"type\": \"string\"}]}}},"
    " {\"id\": 10, \"name\": \"m\", \"type\": {\"type\": \"map\", \"key-id\": 11, \"key\": "
    "   \"string\", \"value-id\": 12, \"value-required\": false, \"value\": {\"type\": "
    "   \"struct\", \"fields\": [{\"id\": 13, \"name\": \"v\", \"type\": \"int\"}]}}}]";

/* Schema 1: a renamed alpha and promoted to long, b dropped, c promoted to double and moved
 * first, d added; y dropped and z added in l's elements; v renamed vv and w added in m's
 * values (their element, key and value ids left out: kept). */
static const char *k_v2 =
    "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
    " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
    "   {\"id\": 5, \"name\": \"c\", \"type\": \"double\"},"
    "   {\"id\": 3, \"name\": \"alpha\", \"type\": \"long\"},"
    "   {\"name\": \"d\", \"type\": \"string\"}]}},"
    " {\"id\": 6, \"name\": \"l\", \"type\": {\"type\": \"list\", \"element\": {\"type\": "
    "   \"struct\", \"fields\": [{\"id\": 8, \"name\": \"x\", \"type\": \"int\"},"
    "     {\"name\": \"z\", \"type\": \"int\"}]}}},"
    " {\"id\": 10, \"name\": \"m\", \"type\": {\"type\": \"map\", \"key\": \"string\", "
    "   \"value\": {\"type\": \"struct\", \"fields\": [{\"id\": 13, \"name\": \"vv\", "
    "   \"type\": \"int\"}, {\"name\": \"w\", \"type\": \"string\"}]}}}]";

/* DuckDB's rows for each schema (i = 0, 1, 2; row 1 with NULLs inside). */
static const char *k_rows_v1 =
    "SELECT i::BIGINT AS id, CASE WHEN i = 1 THEN NULL ELSE {'a': i::INT, 'b': 'b' || i, "
    "'c': (i + 0.5)::FLOAT} END AS p, CASE WHEN i = 1 THEN [NULL, {'x': NULL, 'y': 'q'}] ELSE "
    "[{'x': i::INT, 'y': 'y' || i}] END AS l, MAP {'k' || i: {'v': i::INT}} AS m FROM range(0, 3) "
    "t(i)";
static const char *k_rows_v2 =
    "SELECT (10 + i)::BIGINT AS id, {'c': (i + 0.25)::DOUBLE, 'alpha': (i * 1000000000000)::BIGINT, "
    "'d': 'd' || i} AS p, [{'x': i::INT, 'z': 7}] AS l, MAP {'n': {'vv': i::INT, 'w': 'w'}} AS m "
    "FROM range(0, 2) t(i)";

/* Reads every row of the Parquet file at path natively into *out (one batch). */
static void load_batch(const char *path, tm_batch *out) {
  tm_error err;
  tm_input *in;
  TM_ASSERT_OK(tm_input_open_file(&in, path, &err), &err);
  tm_parquet_file *f;
  TM_ASSERT_OK(tm_parquet_open(&f, in, NULL, &err), &err);
  tm_parquet_scan *sc;
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.nested_native = true;
  TM_ASSERT_OK(tm_parquet_scan_new(&sc, f, &so, &err), &err);
  tm_batch_init(out);
  TM_ASSERT_OK(tm_parquet_scan_next(sc, out, &err), &err);
  tm_parquet_scan_free(sc);
  tm_parquet_close(f);
}

/*
 * Writes the rows of `query` as the table's data file `name`, with the
 * member ids of the table's current schema (with_ids) or none at all, and
 * commits it in an append snapshot.
 */
static void append_file_in(const char *root, const char *name, const char *query, bool with_ids,
                           tm_value *part);

static void append_file(const char *root, const char *name, const char *query, bool with_ids) {
  append_file_in(root, name, query, with_ids, NULL);
}

/* The same, the file in partition part (one value of the default spec's one field). */
static void append_file_in(const char *root, const char *name, const char *query, bool with_ids,
                           tm_value *part) {
  tm_error err;
  char src[600], dst[600], cmd[4096];
  snprintf(src, sizeof src, "%s/%s.src.parquet", tm_test_path("src"), name);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s/data' && node '%s/tests/node/duckdb-query.mjs' \"COPY (%s) TO "
           "'%s' (FORMAT PARQUET)\" >/dev/null", tm_test_path("src"), root, tm_test_source_dir(), query,
           src);
  TM_ASSERT_MSG(system(cmd) == 0, "DuckDB could not write %s", src);
  tm_batch b;
  load_batch(src, &b);
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options oo = TM_ICEBERG_OPEN_OPTIONS_INIT;
  oo.table_root = root;
  tm_iceberg_table *t = NULL;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &g_io, &oo, &err), &err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(m);
  /* Each column's ids in slot order (schema.h), from the schema's fields. */
  int32_t ids[4][16];
  const int32_t *per_col[4] = {NULL, NULL, NULL, NULL};
  TM_ASSERT(b.schema.n_cols <= 4);
  for (size_t c = 0; c < b.schema.n_cols; c++) {
    const tm_iceberg_field *fld = tm_iceberg_schema_find_name(s, b.schema.cols[c].name);
    TM_ASSERT(fld != NULL);
    b.schema.cols[c].field_id = with_ids ? fld->id : -1;
    if (!with_ids || tm_iceberg_type_is_primitive(fld->type)) continue;
    size_t n = 0;
    const tm_iceberg_type *ty = fld->type;
    if (ty->id == TM_ICEBERG_STRUCT) {
      /* The file's members, by name (a file may lack some of the table's). */
      const tm_ntype *fn = b.schema.cols[c].type.nested;
      for (size_t k = 0; k < fn->n; k++)
        for (size_t q = 0; q < ty->n_fields; q++)
          if (strcmp(ty->fields[q].name, fn->name[k]) == 0) ids[c][n++] = ty->fields[q].id;
    } else if (ty->id == TM_ICEBERG_LIST) {
      ids[c][n++] = ty->element->id;
      for (size_t k = 0; k < ty->element->type->n_fields; k++)
        ids[c][n++] = ty->element->type->fields[k].id;
    } else {
      ids[c][n++] = ty->key->id;
      ids[c][n++] = ty->value->id;
      for (size_t k = 0; k < ty->value->type->n_fields; k++)
        ids[c][n++] = ty->value->type->fields[k].id;
    }
    TM_ASSERT_INT_EQ(n, tm_type_id_slots(&b.schema.cols[c].type));
    per_col[c] = ids[c];
  }
  snprintf(dst, sizeof dst, "%s/data/%s.parquet", root, name);
  tm_parquet_writer_options wo = TM_PARQUET_WRITER_OPTIONS_INIT;
  wo.nested_ids = per_col;
  tm_atomic_file af;
  TM_ASSERT_OK(tm_atomic_file_begin(&af, dst, &err), &err);
  tm_parquet_writer *w;
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &b.schema, &wo, tm_parquet_sink_atomic_file, &af, &err),
               &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(tm_atomic_file_commit(&af, &err), &err);
  tm_iceberg_data_file df;
  memset(&df, 0, sizeof df);
  char path[700];
  snprintf(path, sizeof path, "%s/data/%s.parquet", m->location, name);
  df.path = path;
  df.format = "PARQUET";
  df.content = TM_ICEBERG_CONTENT_DATA;
  df.record_count = b.n_rows;
  df.file_size = 1000;
  df.spec_id = m->default_spec_id;
  if (part) {
    df.partition = part;
    df.n_partition = 1;
  }
  tm_iceberg_commit *cm;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&cm, t, "append", &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_add_file(cm, &df, &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_finish(cm, NULL, &err), &err);
  tm_iceberg_commit_free(cm);
  tm_iceberg_table_free(t);
  tm_batch_release(&b);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every row of the current snapshot, each "id|p|l|m" (nested as JSON), sorted, "; " between. */
static int read_all(const char *root, bool as_json, char **out, tm_error *err) {
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options oo = TM_ICEBERG_OPEN_OPTIONS_INIT;
  oo.table_root = root;
  tm_iceberg_table *t = NULL;
  TM_TRY(tm_iceberg_table_open(&t, &g_io, &oo, err));
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  tm_iceberg_scan *sc = NULL;
  int rc = tm_iceberg_plan_scan(t, &so, &sc, err);
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  ro.nested_as_json = as_json;
  tm_iceberg_rows *r = NULL;
  if (rc == TM_OK) rc = tm_iceberg_rows_open(&r, t, sc, &ro, err);
  char *rows[64];
  size_t n = 0;
  tm_batch b;
  tm_batch_init(&b);
  while (rc == TM_OK && (rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
    for (int64_t i = 0; i < b.n_rows; i++) {
      tm_buf line = TM_BUF_INIT(1 << 20);
      for (size_t c = 0; c < b.schema.n_cols; c++) {
        tm_colview cv = tm_batch_col(&b, c);
        if (c) TM_ASSERT_OK(tm_buf_putc(&line, '|', err), err);
        TM_ASSERT(!as_json || !tm_type_is_nested(&cv.type));
        if (tm_colview_is_null(&cv, i)) {
          TM_ASSERT_OK(tm_buf_puts(&line, "NULL", err), err);
        } else if (tm_type_is_nested(&cv.type)) {
          TM_ASSERT_OK(tm_colview_json(&line, &cv, i, err), err);
        } else {
          tm_value v;
          tm_colview_get(&cv, i, &v);
          TM_ASSERT_OK(tm_value_render(&line, &cv.type, &v, err), err);
        }
      }
      TM_ASSERT(n < 64);
      rows[n++] = tm_buf_take(&line, NULL);
    }
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  qsort(rows, n, sizeof *rows, cmp_str);
  tm_buf all = TM_BUF_INIT(1 << 24);
  for (size_t i = 0; i < n; i++) {
    if (i) TM_ASSERT_OK(tm_buf_puts(&all, "; ", err), err);
    TM_ASSERT_OK(tm_buf_puts(&all, rows[i], err), err);
    tm_free(rows[i]);
  }
  *out = rc == TM_OK ? tm_buf_take(&all, NULL) : NULL;
  tm_buf_dispose(&all);
  return rc;
}

static const char *make_table(const char *name) {
  const char *root = tm_test_path(name);
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_v1;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  return root;
}

static int update(const char *root, const char *schema, tm_error *err) {
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options oo = TM_ICEBERG_OPEN_OPTIONS_INIT;
  oo.table_root = root;
  tm_iceberg_table *t = NULL;
  TM_TRY(tm_iceberg_table_open(&t, &g_io, &oo, err));
  int rc = tm_iceberg_update_schema(t, schema, err);
  tm_iceberg_table_free(t);
  return rc;
}

/* The rows of both files in schema 1's shape: file 1's by id (a is alpha now, b is gone, c a
 * double, d NULL; y gone, z NULL; v is vv, w NULL). */
static const char *k_want =
    "0|{\"c\":0.5,\"alpha\":0,\"d\":null}|[{\"x\":0,\"z\":null}]|"
    "{\"k0\":{\"vv\":0,\"w\":null}}; "
    "10|{\"c\":0.25,\"alpha\":0,\"d\":\"d0\"}|[{\"x\":0,\"z\":7}]|{\"n\":{\"vv\":0,\"w\":\"w\"}}; "
    "11|{\"c\":1.25,\"alpha\":1000000000000,\"d\":\"d1\"}|[{\"x\":1,\"z\":7}]|"
    "{\"n\":{\"vv\":1,\"w\":\"w\"}}; "
    "1|NULL|[null,{\"x\":null,\"z\":null}]|{\"k1\":{\"vv\":1,\"w\":null}}; "
    "2|{\"c\":2.5,\"alpha\":2,\"d\":null}|[{\"x\":2,\"z\":null}]|"
    "{\"k2\":{\"vv\":2,\"w\":null}}";

TM_TEST(B14_iceberg_nested_members_read_by_id_across_schema_changes) {
  tm_error err;
  const char *root = make_table("evolved");
  append_file(root, "f1", k_rows_v1, true);
  char *before = NULL;
  TM_ASSERT_OK(read_all(root, false, &before, &err), &err);
  TM_ASSERT_STR_EQ(before,
                   "0|{\"a\":0,\"b\":\"b0\",\"c\":0.5}|[{\"x\":0,\"y\":\"y0\"}]|{\"k0\":{\"v\":0}}; "
                   "1|NULL|[null,{\"x\":null,\"y\":\"q\"}]|{\"k1\":{\"v\":1}}; "
                   "2|{\"a\":2,\"b\":\"b2\",\"c\":2.5}|[{\"x\":2,\"y\":\"y2\"}]|{\"k2\":{\"v\":2}}");
  TM_ASSERT_OK(update(root, k_v2, &err), &err);
  append_file(root, "f2", k_rows_v2, true);
  char *got = NULL;
  TM_ASSERT_OK(read_all(root, false, &got, &err), &err);
  TM_ASSERT_STR_EQ(got, k_want);
  /* As JSON text (unsupported_type_action: string): the same values. */
  char *text = NULL;
  TM_ASSERT_OK(read_all(root, true, &text, &err), &err);
  TM_ASSERT_STR_EQ(text, k_want);
  tm_free(before);
  tm_free(got);
  tm_free(text);
}

/* Files without member ids: the name mapping gives them (old names included), else names. */
TM_TEST(iceberg_nested_members_without_ids_by_name_mapping_or_names) {
  tm_error err;
  const char *root = make_table("mapped");
  append_file(root, "f1", k_rows_v1, false);
  TM_ASSERT_OK(update(root, k_v2, &err), &err);
  /* Without a mapping, members match by name: a, b, v and y are not in schema 1. */
  char *got = NULL;
  TM_ASSERT_OK(read_all(root, false, &got, &err), &err);
  TM_ASSERT_STR_EQ(got,
                   "0|{\"c\":0.5,\"alpha\":null,\"d\":null}|[{\"x\":0,\"z\":null}]|"
                   "{\"k0\":{\"vv\":null,\"w\":null}}; "
                   "1|NULL|[null,{\"x\":null,\"z\":null}]|{\"k1\":{\"vv\":null,\"w\":null}}; "
                   "2|{\"c\":2.5,\"alpha\":null,\"d\":null}|[{\"x\":2,\"z\":null}]|"
                   "{\"k2\":{\"vv\":null,\"w\":null}}");
  tm_free(got);
  /* The name mapping names the members as the file has them. */
  char meta[700];
  snprintf(meta, sizeof meta, "%s/metadata/v3.metadata.json", root);
  json_error_t jerr;
  json_t *m = json_load_file(meta, 0, &jerr);
  TM_ASSERT(m != NULL);
  const char *mapping =
      "[{\"field-id\": 1, \"names\": [\"id\"]},"
      " {\"field-id\": 2, \"names\": [\"p\"], \"fields\": [{\"field-id\": 3, \"names\": [\"a\"]},"
      "   {\"field-id\": 4, \"names\": [\"b\"]}, {\"field-id\": 5, \"names\": [\"c\"]}]},"
      " {\"field-id\": 6, \"names\": [\"l\"], \"fields\": [{\"field-id\": 7, \"names\": "
      "   [\"element\"], \"fields\": [{\"field-id\": 8, \"names\": [\"x\"]}, {\"field-id\": 9, "
      "   \"names\": [\"y\"]}]}]},"
      " {\"field-id\": 10, \"names\": [\"m\"], \"fields\": [{\"field-id\": 11, \"names\": "
      "   [\"key\"]}, {\"field-id\": 12, \"names\": [\"value\"], \"fields\": [{\"field-id\": 13, "
      "   \"names\": [\"v\"]}]}]}]";
  json_object_set_new(json_object_get(m, "properties"), "schema.name-mapping.default",
                      json_string(mapping));
  TM_ASSERT(json_dump_file(m, meta, 0) == 0);
  json_decref(m);
  TM_ASSERT_OK(read_all(root, false, &got, &err), &err);
  TM_ASSERT_STR_EQ(got,
                   "0|{\"c\":0.5,\"alpha\":0,\"d\":null}|[{\"x\":0,\"z\":null}]|"
                   "{\"k0\":{\"vv\":0,\"w\":null}}; "
                   "1|NULL|[null,{\"x\":null,\"z\":null}]|{\"k1\":{\"vv\":1,\"w\":null}}; "
                   "2|{\"c\":2.5,\"alpha\":2,\"d\":null}|[{\"x\":2,\"z\":null}]|"
                   "{\"k2\":{\"vv\":2,\"w\":null}}");
  tm_free(got);
}

/* What would make old data mean something else is refused, naming the field; the table keeps
 * its schema. */
TM_TEST(iceberg_update_schema_refuses_what_iceberg_refuses) {
  tm_error err;
  const char *root = tm_test_path("strict");
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_v1;
  co.partition = "id";
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  static const struct {
    const char *schema, *says;
  } bad[] = {
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
       "   {\"id\": 3, \"name\": \"a\", \"type\": \"string\"}]}}]",
       "field 'p.a': int cannot become string"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 2, \"name\": \"p\", \"required\": true, \"type\": {\"type\": \"struct\", "
       "\"fields\": [{\"id\": 3, \"name\": \"a\", \"type\": \"int\"}]}}]",
       "field 'p': an optional field cannot become required"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 6, \"name\": \"l\", \"type\": \"string\"}]",
       "field 'l': list cannot become string"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"list\", \"element\": \"int\"}}]",
       "field 'p': struct cannot become list"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"name\": \"n\", \"required\": true, \"type\": \"int\"}]",
       "field 'n': a new field must be optional"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 9, \"name\": \"y\", \"type\": \"string\"}]",
       "field 'y': id 9 is a member of another struct"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 7, \"name\": \"q\", \"type\": \"string\"}, {\"id\": 7, \"name\": \"q2\", "
       "\"type\": \"string\"}]",
       "field id 7 appears twice"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 99, \"name\": \"q\", \"type\": \"string\"}]",
       "field id 99 is above the table's last-column-id 13"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
       " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
       "   {\"id\": 3, \"name\": \"a\", \"type\": \"int\"}]}},"
       " {\"id\": 6, \"name\": \"l\", \"type\": {\"type\": \"list\", \"element\": {\"type\": "
       "   \"struct\", \"fields\": [{\"id\": 8, \"name\": \"x\", \"type\": \"int\"},"
       "     {\"id\": 3, \"name\": \"a\", \"type\": \"int\"}]}}}]",
       "field 'l.element.a': id 3 is used twice"},
      {"[{\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
       "   {\"id\": 3, \"name\": \"a\", \"type\": \"int\"}]}}]",
       "field 'id' cannot be dropped: partition field 'id' is derived from it"},
      {"[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"decimal(9, 2)\"}]",
       "field 'id': long cannot become decimal(9,2)"},
      {"{\"nope\": 1}", "must be a list of fields"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = update(root, bad[i].schema, &err);
    TM_ASSERT_MSG(rc == TM_EINVALID, "case %zu: %d %s", i, rc, err.message);
    TM_ASSERT_CONTAINS(err.message, bad[i].says);
  }
  /* Nothing was committed: still version 1, schema 0. */
  char v2[700];
  snprintf(v2, sizeof v2, "%s/metadata/v2.metadata.json", root);
  TM_ASSERT(!tm_path_exists(v2));
  /* A legal change commits schema 1 (ids kept, new ones above 13); a promotion of a decimal of
   * one scale and a member dropped are fine. */
  TM_ASSERT_OK(update(root, "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": "
                            "\"long\"}, {\"id\": 2, \"name\": \"pp\", \"type\": {\"type\": "
                            "\"struct\", \"fields\": [{\"id\": 3, \"name\": \"a\", \"type\": "
                            "\"long\"}, {\"name\": \"e\", \"type\": \"decimal(12, 2)\"}]}}]",
                      &err),
               &err);
  TM_ASSERT(tm_path_exists(v2));
  json_error_t jerr;
  json_t *m = json_load_file(v2, 0, &jerr);
  TM_ASSERT(m != NULL);
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(m, "current-schema-id")), 1);
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(m, "last-column-id")), 14);
  json_t *s1 = json_array_get(json_object_get(m, "schemas"), 1);
  json_t *pp = json_array_get(json_object_get(s1, "fields"), 1);
  TM_ASSERT_STR_EQ(json_string_value(json_object_get(pp, "name")), "pp");
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(pp, "id")), 2);
  json_t *e = json_array_get(json_object_get(json_object_get(pp, "type"), "fields"), 1);
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(e, "id")), 14);
  json_decref(m);
  TM_ASSERT_OK(update(root, "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": "
                            "\"long\"}, {\"id\": 2, \"name\": \"pp\", \"type\": {\"type\": "
                            "\"struct\", \"fields\": [{\"id\": 14, \"name\": \"e\", \"type\": "
                            "\"decimal(20, 2)\"}]}}]",
                      &err),
               &err);
}

/* A struct member the data file lacks reads as its identity partition value (Iceberg's first
 * rule for missing fields; a Hive-style file that does not store its partition column), else
 * its initial-default, else NULL. */
TM_TEST(iceberg_nested_member_missing_from_a_file_reads_its_partition_value) {
  tm_error err;
  const char *root = tm_test_path("part");
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json =
      "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
      " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
      "   {\"id\": 3, \"name\": \"a\", \"type\": \"int\"},"
      "   {\"id\": 4, \"name\": \"region\", \"type\": \"string\"},"
      "   {\"id\": 5, \"name\": \"e\", \"type\": \"int\"}]}}]";
  co.partition = "p.region";
  co.format_version = 3;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  /* e gets an initial-default (v3) by a schema update. */
  TM_ASSERT_OK(update(root,
                      "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
                      " {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": \"struct\", \"fields\": ["
                      "   {\"id\": 3, \"name\": \"a\", \"type\": \"int\"},"
                      "   {\"id\": 4, \"name\": \"region\", \"type\": \"string\"},"
                      "   {\"id\": 5, \"name\": \"e\", \"type\": \"int\", \"initial-default\": 42}]}}]",
                      &err),
               &err);
  tm_value eu;
  memset(&eu, 0, sizeof eu);
  eu.type = TM_TYPE_UTF8;
  eu.v.s = tm_sv("eu", 2);
  append_file_in(root, "f1", "SELECT i::BIGINT AS id, CASE WHEN i = 1 THEN NULL ELSE {'a': i::INT} "
                 "END AS p FROM range(0, 3) t(i)", true, &eu);
  char *got = NULL;
  TM_ASSERT_OK(read_all(root, false, &got, &err), &err);
  TM_ASSERT_STR_EQ(got, "0|{\"a\":0,\"region\":\"eu\",\"e\":42}; 1|NULL; "
                        "2|{\"a\":2,\"region\":\"eu\",\"e\":42}");
  tm_free(got);
}

/* A sort order on a struct member (written by another engine) is kept through tidemark's
 * commits and schema changes, and the table reads; tidemark's own data files say they are
 * unsorted (sort_order_id 0), which is true of them. */
TM_TEST(iceberg_sort_order_on_a_struct_member_is_kept) {
  tm_error err;
  const char *root = make_table("sorted");
  char meta[700];
  snprintf(meta, sizeof meta, "%s/metadata/v1.metadata.json", root);
  json_error_t jerr;
  json_t *m = json_load_file(meta, 0, &jerr);
  TM_ASSERT(m != NULL);
  json_array_append_new(json_object_get(m, "sort-orders"),
                        json_pack("{s:i, s:[{s:s, s:i, s:s, s:s}]}", "order-id", 1, "fields",
                                  "transform", "identity", "source-id", 3, "direction", "desc",
                                  "null-order", "nulls-last"));
  json_object_set_new(m, "default-sort-order-id", json_integer(1));
  TM_ASSERT(json_dump_file(m, meta, 0) == 0);
  json_decref(m);
  append_file(root, "f1", k_rows_v1, true);
  TM_ASSERT_OK(update(root, k_v2, &err), &err);
  char *got = NULL;
  TM_ASSERT_OK(read_all(root, false, &got, &err), &err);
  TM_ASSERT_CONTAINS(got, "0|{\"c\":0.5,\"alpha\":0,\"d\":null}");
  tm_free(got);
  snprintf(meta, sizeof meta, "%s/metadata/v3.metadata.json", root);
  m = json_load_file(meta, 0, &jerr);
  TM_ASSERT(m != NULL);
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(m, "default-sort-order-id")), 1);
  json_t *order = json_array_get(json_object_get(m, "sort-orders"), 1);
  json_t *field = json_array_get(json_object_get(order, "fields"), 0);
  TM_ASSERT_INT_EQ(json_integer_value(json_object_get(field, "source-id")), 3);
  TM_ASSERT_STR_EQ(json_string_value(json_object_get(field, "direction")), "desc");
  json_decref(m);
  /* Its source cannot be dropped. */
  TM_ASSERT_RC(update(root, "[{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": "
                            "\"long\"}, {\"id\": 2, \"name\": \"p\", \"type\": {\"type\": "
                            "\"struct\", \"fields\": [{\"id\": 5, \"name\": \"c\", \"type\": "
                            "\"double\"}]}}]",
                      &err),
               TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "field 'alpha' cannot be dropped: the table's sort order sorts by it");
}
