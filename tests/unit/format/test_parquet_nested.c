/*
 * Unit tests for the nested-field assembly (format/parquet/nested.c, issue
 * 16): hand-built schemas and levels for the standard three-level list, the
 * legacy two-level encodings (a repeated primitive, a repeated group named
 * "array" or "<list>_tuple", a repeated group of several fields: parquet-mr,
 * Hive, Spark, arrow-rs), maps (of lists), structs with lists, a bare
 * repeated field, required and optional at every level; and levels that do
 * not agree, which are errors naming the file and the column.
 */
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "tm_test.h"

#define R TM_PQ_REQUIRED
#define O TM_PQ_OPTIONAL
#define P TM_PQ_REPEATED
#define G -1

typedef struct el {
  const char *name;
  int rep, type, children, converted;
} el;

typedef struct leafdata {
  int n;
  uint8_t rep[16], def[16];
  int nv;
  int32_t vals[16];
} leafdata;

/* Renders every row of the field (schema e[0..n)) from the leaves' levels
 * into out, one JSON text (or "NULL") per row, separated by " | ". */
static int render(const el *e, size_t n, const leafdata *ld, char *out, size_t cap,
                  tm_error *err) {
  tm_pq_schema_elem elems[16];
  memset(elems, 0, sizeof elems);
  for (size_t i = 0; i < n; i++) {
    elems[i].name = tm_sv_cstr(e[i].name);
    elems[i].repetition = e[i].rep;
    elems[i].type = e[i].type;
    elems[i].type_length = -1;
    elems[i].num_children = e[i].children;
    elems[i].converted_type = e[i].converted;
    elems[i].scale = elems[i].precision = TM_PQ_ABSENT;
    elems[i].field_id = -1;
  }
  tm_pq_ntree *t = NULL;
  int rc = tm_parquet__ntree_new(&t, elems, n, TM_UNIT_NANO, err);
  if (rc < 0) return rc;
  size_t nl = tm_parquet__ntree_leaves(t);
  tm_pq_nleaf leaves[8];
  memset(leaves, 0, sizeof leaves);
  for (size_t l = 0; l < nl; l++) {
    tm_type type;
    int md, mr;
    TM_ASSERT_OK(tm_parquet__ntree_leaf_info(t, l, &type, &md, &mr), err);
    leaves[l].rep = ld[l].rep;
    leaves[l].def = ld[l].def;
    leaves[l].n = (size_t)ld[l].n;
    leaves[l].vals.type = type;
    leaves[l].vals.length = ld[l].nv;
    leaves[l].vals.values = ld[l].vals;
  }
  int64_t rows = 0;
  for (int i = 0; i < ld[0].n; i++) rows += ld[0].rep[i] == 0;
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, tm_type_of(TM_TYPE_UTF8), 0);
  rc = tm_parquet__nested_render(t, leaves, rows, &cb, "f.parquet", "c", err);
  out[0] = '\0';
  if (rc == TM_OK) {
    TM_ASSERT_INT_EQ(cb.length, rows);
    const int32_t *off = (const int32_t *)cb.values.ptr;
    size_t len = 0;
    for (int64_t r = 0; r < rows; r++) {
      bool null = cb.validity.len && !tm_bit_get((const uint8_t *)cb.validity.ptr, r);
      len += (size_t)snprintf(out + len, cap - len, "%s%.*s", r ? " | " : "",
                              null ? 4 : (int)(off[r + 1] - off[r]),
                              null ? "NULL" : cb.data.ptr + off[r]);
    }
  }
  tm_colbuilder_dispose(&cb);
  tm_parquet__ntree_free(t);
  return rc;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

TM_TEST(three_level_list_with_nulls_at_every_level) {
  static const el s[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"list", P, G, 1, -1},
                         {"element", O, TM_PQ_INT32, 0, -1}};
  leafdata d[] = {{5, {0, 1, 0, 0, 0}, {3, 2, 1, 0, 3}, 2, {1, 5}}};
  char out[512];
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_OK(render(s, N(s), d, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[1,null] | [] | NULL | [5]");
}

TM_TEST(legacy_two_level_lists) {
  char out[512];
  tm_error err;
  tm_error_init(&err);
  /* parquet-mr's repeated primitive inside a LIST group. */
  static const el prim[] = {{"a", R, G, 1, TM_PQ_CT_LIST}, {"array", P, TM_PQ_INT32, 0, -1}};
  leafdata d1[] = {{3, {0, 1, 0}, {1, 1, 0}, 2, {1, 2}}};
  TM_ASSERT_OK(render(prim, N(prim), d1, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[1,2] | []");
  /* A repeated group named "array" with one field: the group is the element (a struct). */
  static const el arr[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"array", P, G, 1, -1},
                           {"x", O, TM_PQ_INT32, 0, -1}};
  leafdata d2[] = {{2, {0, 1}, {3, 2}, 1, {7}}};
  TM_ASSERT_OK(render(arr, N(arr), d2, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[{\"x\":7},{\"x\":null}]");
  /* Hive's "<list>_tuple" with two fields. */
  static const el tup[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"a_tuple", P, G, 2, -1},
                           {"x", R, TM_PQ_INT32, 0, -1}, {"y", O, TM_PQ_INT32, 0, -1}};
  leafdata d3[] = {{4, {0, 1, 0, 0}, {2, 2, 0, 1}, 2, {1, 2}},
                   {4, {0, 1, 0, 0}, {3, 2, 0, 1}, 1, {9}}};
  TM_ASSERT_OK(render(tup, N(tup), d3, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[{\"x\":1,\"y\":9},{\"x\":2,\"y\":null}] | NULL | []");
  /* A repeated group with one field not named so: three levels (the field is the element). */
  static const el three[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"bag", P, G, 1, -1},
                             {"array_element", O, TM_PQ_INT32, 0, -1}};
  leafdata d4[] = {{2, {0, 1}, {3, 2}, 1, {4}}};
  TM_ASSERT_OK(render(three, N(three), d4, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[4,null]");
}

TM_TEST(maps_of_lists_and_structs_of_lists) {
  char out[512];
  tm_error err;
  tm_error_init(&err);
  static const el map[] = {{"m", O, G, 1, TM_PQ_CT_MAP}, {"key_value", P, G, 2, TM_PQ_CT_MAP_KEY_VALUE},
                           {"key", R, TM_PQ_INT32, 0, -1}, {"value", O, G, 1, TM_PQ_CT_LIST},
                           {"list", P, G, 1, -1}, {"element", O, TM_PQ_INT32, 0, -1}};
  leafdata dm[] = {{5, {0, 1, 1, 0, 0}, {2, 2, 2, 0, 1}, 3, {1, 2, 3}},
                   {6, {0, 2, 1, 1, 0, 0}, {5, 4, 2, 3, 0, 1}, 1, {10}}};
  TM_ASSERT_OK(render(map, N(map), dm, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "{\"1\":[10,null],\"2\":null,\"3\":[]} | NULL | {}");
  static const el st[] = {{"s", O, G, 2, -1}, {"a", O, TM_PQ_INT32, 0, -1},
                          {"l", O, G, 1, TM_PQ_CT_LIST}, {"list", P, G, 1, -1},
                          {"element", R, G, 2, -1}, {"p", O, TM_PQ_INT32, 0, -1},
                          {"q", P, TM_PQ_INT32, 0, -1}};
  leafdata ds[] = {{3, {0, 0, 0}, {2, 0, 1}, 1, {1}},
                   {3, {0, 0, 0}, {4, 0, 1}, 1, {2}},
                   {4, {0, 2, 0, 0}, {4, 4, 0, 1}, 2, {3, 4}}};
  TM_ASSERT_OK(render(st, N(st), ds, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "{\"a\":1,\"l\":[{\"p\":2,\"q\":[3,4]}]} | NULL | {\"a\":null,\"l\":null}");
  /* A repeated field outside a LIST: a list of required values. */
  static const el bare[] = {{"r", P, TM_PQ_INT32, 0, -1}};
  leafdata db[] = {{3, {0, 1, 0}, {1, 1, 0}, 2, {7, 8}}};
  TM_ASSERT_OK(render(bare, N(bare), db, out, sizeof out, &err), &err);
  TM_ASSERT_STR_EQ(out, "[7,8] | []");
}

TM_TEST(inconsistent_levels_are_errors) {
  char out[512];
  tm_error err;
  tm_error_init(&err);
  static const el map[] = {{"m", O, G, 1, TM_PQ_CT_MAP}, {"key_value", P, G, 2, -1},
                           {"key", R, TM_PQ_INT32, 0, -1}, {"value", O, TM_PQ_INT32, 0, -1}};
  /* The keys say two entries, the values one. */
  leafdata d1[] = {{2, {0, 1}, {2, 2}, 2, {1, 2}}, {1, {0}, {3}, 1, {5}}};
  TM_ASSERT_RC(render(map, N(map), d1, out, sizeof out, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "f.parquet: column 'c': inconsistent levels");
  /* Levels announce more values than stored. */
  static const el l3[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"list", P, G, 1, -1},
                          {"element", O, TM_PQ_INT32, 0, -1}};
  leafdata d2[] = {{3, {0, 1, 1}, {3, 3, 3}, 1, {1}}};
  TM_ASSERT_RC(render(l3, N(l3), d2, out, sizeof out, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "more values announced than stored");
  /* A row cannot start inside a list. */
  leafdata d3[] = {{2, {1, 0}, {3, 3}, 2, {1, 2}}};
  TM_ASSERT_RC(render(l3, N(l3), d3, out, sizeof out, &err), TM_ECORRUPT);
  /* A LIST group must hold one repeated field. */
  static const el bad[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"x", O, TM_PQ_INT32, 0, -1}};
  leafdata d4[] = {{1, {0}, {2}, 1, {1}}};
  TM_ASSERT_RC(render(bad, N(bad), d4, out, sizeof out, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "LIST group 'a' does not hold one repeated field");
}

/* Levels mode of the column decoder on hand-built chunks (the seeds of
 * fuzz_parquet_levels): repetition and definition levels in v1 and v2 pages. */
static void read_seed(const char *name, int64_t n, const uint8_t *want_rep, const uint8_t *want_def,
                      const int32_t *want_vals, int64_t want_nv) {
  char path[2048];
  snprintf(path, sizeof path, "%s/fuzz/corpora/fuzz_parquet_levels/%s", tm_test_source_dir(), name);
  FILE *f = fopen(path, "rb");
  TM_ASSERT_MSG(f != NULL, "cannot open %s", path);
  uint8_t buf[4096];
  size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  TM_ASSERT(len > 5);
  tm_pq_column_desc d;
  memset(&d, 0, sizeof d);
  d.file = "seed.parquet";
  d.name = name;
  d.phys = TM_PQ_INT32;
  d.type = tm_type_of(TM_TYPE_INT32);
  d.type_length = -1;
  d.num_values = (int64_t)buf[2] | (int64_t)buf[3] << 8;
  d.max_def = buf[4] & 15;
  d.max_rep = buf[4] >> 4;
  d.levels = true;
  d.chunk_borrowed = true;
  TM_ASSERT_INT_EQ(d.num_values, n);
  tm_error err;
  tm_error_init(&err);
  tm_pq_column *c = NULL;
  TM_ASSERT_OK(tm_parquet__column_new(&c, &d, buf + 5, len - 5, &err), &err);
  uint8_t rep[16], def[16];
  tm_colbuilder vals;
  tm_colbuilder_init(&vals, d.type, 0);
  int64_t nv = 0;
  TM_ASSERT_OK(tm_parquet__column_read_levels(c, n, rep, def, &vals, &nv, &err), &err);
  TM_ASSERT_INT_EQ(nv, want_nv);
  TM_ASSERT(memcmp(rep, want_rep, (size_t)n) == 0);
  TM_ASSERT(memcmp(def, want_def, (size_t)n) == 0);
  TM_ASSERT(memcmp(vals.values.ptr, want_vals, (size_t)nv * 4) == 0);
  TM_ASSERT_INT_EQ(tm_parquet__column_left(c), 0);
  tm_colbuilder_dispose(&vals);
  tm_parquet__column_free(c);
}

TM_TEST(column_levels_mode_v1_v2_pages) {
  static const uint8_t r1[] = {0, 1, 0, 0, 0}, d1[] = {3, 2, 1, 0, 3};
  static const int32_t v1[] = {1, 5};
  read_seed("list3_v1", 5, r1, d1, v1, 2);
  read_seed("list3_v2", 5, r1, d1, v1, 2);
  static const uint8_t r2[] = {0, 1, 0, 0, 0, 0, 1, 1}, d2[] = {3, 2, 1, 0, 3, 3, 3, 3};
  static const int32_t v2[] = {1, 5, 7, 8, 9};
  read_seed("list3_v1_two_pages", 8, r2, d2, v2, 5);
  static const uint8_t r3[] = {0, 2, 1, 1, 0, 0}, d3[] = {5, 4, 2, 3, 0, 1};
  static const int32_t v3[] = {10};
  read_seed("map_of_lists_v1", 6, r3, d3, v3, 1);
  static const uint8_t r4[] = {0, 3, 2, 1}, d4[] = {7, 7, 6, 7};
  static const int32_t v4[] = {1, 2, 3};
  read_seed("deep_v1", 4, r4, d4, v4, 3);
}
