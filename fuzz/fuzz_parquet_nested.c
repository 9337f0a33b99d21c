/*
 * fuzz_parquet_nested.c - libFuzzer target: the assembly of a nested Parquet
 * field from its leaves' repetition and definition levels (format layer,
 * nested.c; issue 16). The first byte chooses one of the schemas below
 * (three-level and legacy two-level lists, maps, structs, a bare repeated
 * field); then, per leaf, a byte count n (2 bytes, little-endian), n
 * repetition levels, n definition levels (each byte taken modulo the leaf's
 * maximum + 1) and a byte giving how many int32 values the leaf holds (a
 * hostile count may be short). Every row the levels start is rendered as
 * JSON; errors are fine, reads out of bounds and hangs are not.
 * Seeds: fuzz/corpora/fuzz_parquet_nested/ (consistent levels of each schema).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/arrow/render.h"
#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define R TM_PQ_REQUIRED
#define O TM_PQ_OPTIONAL
#define P TM_PQ_REPEATED
#define G -1 /* a group */

typedef struct el {
  const char *name;
  int rep, type, children, converted;
} el;

/* Each schema: its elements, depth-first; every leaf is INT32. */
static const el k_list3[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"list", P, G, 1, -1},
                             {"element", O, TM_PQ_INT32, 0, -1}};
static const el k_list2[] = {{"a", R, G, 1, TM_PQ_CT_LIST}, {"array", P, TM_PQ_INT32, 0, -1}};
static const el k_tuple[] = {{"a", O, G, 1, TM_PQ_CT_LIST}, {"a_tuple", P, G, 2, -1},
                             {"x", R, TM_PQ_INT32, 0, -1}, {"y", O, TM_PQ_INT32, 0, -1}};
static const el k_map[] = {{"m", O, G, 1, TM_PQ_CT_MAP}, {"key_value", P, G, 2, -1},
                           {"key", R, TM_PQ_INT32, 0, -1}, {"value", O, G, 1, TM_PQ_CT_LIST},
                           {"list", P, G, 1, -1}, {"element", O, TM_PQ_INT32, 0, -1}};
static const el k_struct[] = {{"s", O, G, 2, -1}, {"a", O, TM_PQ_INT32, 0, -1},
                              {"l", O, G, 1, TM_PQ_CT_LIST}, {"list", P, G, 1, -1},
                              {"element", R, G, 2, -1}, {"p", O, TM_PQ_INT32, 0, -1},
                              {"q", P, TM_PQ_INT32, 0, -1}};
static const el k_bare[] = {{"r", P, TM_PQ_INT32, 0, -1}};

static const struct {
  const el *e;
  size_t n;
} k_schemas[] = {{k_list3, 3}, {k_list2, 2}, {k_tuple, 4}, {k_map, 6}, {k_struct, 7}, {k_bare, 1}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t si = data[0] % (sizeof k_schemas / sizeof k_schemas[0]);
  size_t pos = 1;
  tm_pq_schema_elem elems[8];
  memset(elems, 0, sizeof elems);
  for (size_t i = 0; i < k_schemas[si].n; i++) {
    const el *e = &k_schemas[si].e[i];
    elems[i].name = tm_sv_cstr(e->name);
    elems[i].repetition = e->rep;
    elems[i].type = e->type;
    elems[i].type_length = -1;
    elems[i].num_children = e->children;
    elems[i].converted_type = e->converted;
    elems[i].scale = elems[i].precision = TM_PQ_ABSENT;
    elems[i].field_id = -1;
  }
  tm_error err;
  tm_error_init(&err);
  tm_pq_ntree *t = NULL;
  if (tm_parquet__ntree_new(&t, elems, k_schemas[si].n, TM_UNIT_NANO, &err) != TM_OK) return 0;
  size_t nl = tm_parquet__ntree_leaves(t);
  tm_pq_nleaf leaves[8];
  uint8_t *bufs[8] = {0};
  int32_t vals[8][256];
  memset(leaves, 0, sizeof leaves);
  bool ok = nl <= 8;
  for (size_t l = 0; ok && l < nl; l++) {
    tm_type type;
    int md, mr;
    if (pos + 2 > size || tm_parquet__ntree_leaf_info(t, l, &type, &md, &mr) != TM_OK) {
      ok = false;
      break;
    }
    size_t n = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
    pos += 2;
    if (n > (size - pos) / 2 || size - pos - 2 * n < 1) {
      ok = false;
      break;
    }
    bufs[l] = tm_malloc(2 * n + 1);
    if (!bufs[l]) {
      ok = false;
      break;
    }
    for (size_t i = 0; i < n; i++) {
      bufs[l][i] = (uint8_t)(data[pos + i] % (mr + 1));
      bufs[l][n + i] = (uint8_t)(data[pos + n + i] % (md + 1));
    }
    pos += 2 * n;
    int64_t nv = data[pos++];
    for (int64_t i = 0; i < nv; i++) vals[l][i] = (int32_t)(i * 7 - 100);
    leaves[l].rep = bufs[l];
    leaves[l].def = bufs[l] + n;
    leaves[l].n = n;
    leaves[l].vals.type = type;
    leaves[l].vals.length = nv;
    leaves[l].vals.values = vals[l];
  }
  if (ok) {
    size_t rows = 0;
    for (size_t i = 0; i < leaves[0].n; i++) rows += leaves[0].rep[i] == 0;
    tm_colbuilder cb;
    tm_colbuilder_init(&cb, tm_type_of(TM_TYPE_UTF8), 0);
    int rc = tm_parquet__nested_render(t, leaves, (int64_t)rows, &cb, "fuzz.parquet", "c", &err);
    /* A render that succeeds gives one value per row. */
    if (rc == TM_OK && cb.length != (int64_t)rows) abort();
    /* The native arrays from the same levels: they build exactly when the
     * render succeeds, hold one value per row, pass the offset checks, and
     * their JSON is the render's text, row by row. */
    tm_type nt;
    bool nullable;
    struct ArrowArray text = {0};
    if (rc == TM_OK && tm_colbuilder_finish(&cb, &text, &err) != TM_OK) abort();
    if (tm_parquet__ntree_type(t, &nt, &nullable, &err) == TM_OK) {
      for (size_t l = 0; l < nl; l++) leaves[l].pos = 0, leaves[l].vcur = 0;
      tm_colbuilder nb;
      tm_colbuilder_init(&nb, nt, 0);
      int nrc = tm_parquet__nested_build(t, leaves, (int64_t)rows, &nb, "fuzz.parquet", "c", &err);
      if ((nrc == TM_OK) != (rc == TM_OK)) abort();
      struct ArrowArray arr;
      if (nrc == TM_OK) {
        if (nb.length != (int64_t)rows || tm_colbuilder_finish(&nb, &arr, &err) != TM_OK) abort();
        tm_colview v = tm_colview_of(&arr, &nt), tv = tm_colview_of(&text, &(tm_type){.id = TM_TYPE_UTF8});
        if (tm_colview_check(&v, &err) != TM_OK) abort();
        tm_buf j;
        tm_buf_init(&j, (size_t)1 << 26);
        for (int64_t r = 0; r < (int64_t)rows; r++) {
          tm_buf_clear(&j);
          if (tm_colview_json(&j, &v, r, &err) != TM_OK) abort();
          bool null = tm_colview_is_null(&tv, r);
          tm_strview want = null ? tm_sv("null", 4) : tm_colview_bytes(&tv, r);
          if (j.len != want.len || memcmp(j.ptr, want.ptr, j.len) != 0) abort();
        }
        tm_buf_dispose(&j);
        arr.release(&arr);
      }
      tm_colbuilder_dispose(&nb);
    }
    if (text.release) text.release(&text);
    tm_colbuilder_dispose(&cb);
  }
  for (size_t l = 0; l < 8; l++) tm_free(bufs[l]);
  tm_parquet__ntree_free(t);
  return 0;
}
