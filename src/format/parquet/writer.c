/*
 * writer.c - the Parquet writer (format layer, parquet). See parquet.h.
 *
 * Rows are buffered per column (tm_colbuilder) until a row group is full,
 * then each column chunk is encoded and handed to the sink in order:
 *
 *   [dictionary page] data page* ... footer(FileMetaData) len "PAR1"
 *
 * Pages are data pages v1 (the most widely read): RLE definition levels
 * with their 4-byte length, then PLAIN values or RLE_DICTIONARY indices.
 * A column chunk is dictionary-encoded when its distinct values are few
 * (at most half the values, at most 65,535 entries and a 1 MiB dictionary
 * page); otherwise PLAIN. Statistics per chunk: null_count, min_value and
 * max_value in the column's sort order (also the deprecated min/max where the
 * order is signed), is_*_value_exact; floats ignore NaN and write -0.0 / +0.0
 * for a zero bound. ColumnOrder TYPE_ORDER is declared for every column.
 *
 * Nested columns (LIST, STRUCT, MAP at any depth; issue 16) are shredded into
 * one column chunk per leaf (Dremel): each row group's values are walked once
 * per nested column, appending to each leaf its repetition and definition
 * levels and its non-null values. Lists and maps are written in the standard
 * three-level form (`<name> (LIST) { repeated group list { element } }`,
 * `<name> (MAP) { repeated group key_value { required key; value } }`);
 * their leaves' pages start at a row boundary, hold RLE repetition and
 * definition levels, then PLAIN values (no dictionary).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"
#include "util/hash.h"

#define DEFAULT_RG_ROWS INT64_C(1048576)
#define DEFAULT_RG_BYTES ((size_t)128 << 20)
#define DEFAULT_PAGE_BYTES ((size_t)1 << 20)
#define DICT_MAX_ENTRIES 65535
#define DICT_MAX_BYTES ((size_t)1 << 20)
#define STATS_MAX_BYTES ((size_t)64 << 10)

enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };

/* How a tm_type is stored. */
typedef struct col_layout {
  int32_t phys;        /* TM_PQ_* */
  int32_t type_length; /* FLBA width, else -1 */
  size_t phys_width;   /* bytes per PLAIN value (0: byte array, bool) */
  bool unsigned_order; /* stats compare unsigned (uints, binaries) */
} col_layout;

/* One written column chunk, for the footer. */
typedef struct chunk_meta {
  int32_t codec;
  uint32_t encodings; /* bit per Encoding */
  int64_t num_values;
  int64_t uncompressed;
  int64_t compressed;
  int64_t data_page_offset;
  int64_t dict_page_offset; /* -1: none */
  int64_t null_count;
  bool has_minmax;
  tm_buf min, max; /* PLAIN-encoded bounds */
} chunk_meta;

typedef struct rg_meta {
  int64_t num_rows;
  int64_t file_offset;
  int64_t total_compressed;
  int64_t total_uncompressed;
  chunk_meta *cols; /* n_chunks: a flat column's, then a nested column's leaves, in order */
} rg_meta;

/* A leaf of a nested column: one column chunk per row group. */
typedef struct leaf {
  const char **path;  /* owned array of n_path names (borrowed: the column's, the types') */
  size_t n_path;
  tm_column c;        /* the leaf: name (borrowed), type, nullable; for layout and annotations */
  col_layout layout;
  int max_def, max_rep;
  uint32_t *rep, *def; /* owned: this row group's levels, n of them */
  size_t n, cap;
  int64_t nulls;      /* levels below max_def */
  tm_colbuilder vals; /* this row group's non-null values */
} leaf;

struct tm_parquet_writer {
  tm_schema schema;
  col_layout *layout;
  tm_parquet_writer_options opts;
  tm_kv kv;
  tm_parquet_sink_fn sink;
  void *payload;
  uint64_t offset;     /* bytes sent to the sink */
  tm_colbuilder *cols; /* the buffered row group */
  leaf *leaves;        /* owned: the leaves of the nested columns, in column order */
  size_t n_leaves;
  size_t *first_leaf;  /* owned, per column: its first leaf (nested), or SIZE_MAX (flat) */
  int32_t **ids;       /* owned, per column: its members' id slots (schema.h), or NULL */
  size_t n_chunks;     /* column chunks per row group: flat columns and leaves */
  int64_t rg_rows;
  int64_t total_rows;
  tm_vec rgs;          /* rg_meta */
  tm_pq_codec_ctx codec;
  tm_buf page;         /* one page body, uncompressed */
  tm_buf comp;         /* one page body, compressed */
  tm_buf chunk;        /* one column chunk */
  tm_buf dict;         /* PLAIN dictionary values */
  uint32_t *idx;       /* dictionary index per row of the chunk */
  size_t idx_cap;
  uint32_t *levels;    /* level or index scratch */
  size_t levels_cap;
  bool failed;
};

/* ---- sinks --------------------------------------------------------------- */

int tm_parquet_sink_buf(const void *data, size_t len, void *payload, tm_error *err) {
  return tm_buf_append((tm_buf *)payload, data, len, err);
}

int tm_parquet_sink_atomic_file(const void *data, size_t len, void *payload, tm_error *err) {
  return tm_atomic_file_write((tm_atomic_file *)payload, data, len, err);
}

static int emit(tm_parquet_writer *w, const void *data, size_t len, tm_error *err) {
  if (len == 0) return TM_OK;
  int rc = w->sink(data, len, w->payload, err);
  if (rc < 0) return rc;
  w->offset += len;
  return TM_OK;
}

/* ---- types ---------------------------------------------------------------- */

/* Smallest byte width whose signed range holds every decimal of precision p. */
static int32_t decimal_width(int32_t p) {
  for (int32_t n = 1; n <= 16; n++) {
    /* digits that fit: floor((8n - 1) * log10(2)) */
    if ((int32_t)((8 * n - 1) * 0.30102999566398120) >= p) return n;
  }
  return 16;
}

static int layout_of(const tm_column *c, col_layout *out, tm_error *err) {
  const tm_type *t = &c->type;
  memset(out, 0, sizeof *out);
  out->type_length = -1;
  switch (t->id) {
    case TM_TYPE_BOOL: out->phys = TM_PQ_BOOLEAN; break;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32: out->phys = TM_PQ_INT32; out->phys_width = 4; break;
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
      out->phys = TM_PQ_INT32;
      out->phys_width = 4;
      out->unsigned_order = true;
      break;
    case TM_TYPE_INT64:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: out->phys = TM_PQ_INT64; out->phys_width = 8; break;
    case TM_TYPE_UINT64:
      out->phys = TM_PQ_INT64;
      out->phys_width = 8;
      out->unsigned_order = true;
      break;
    case TM_TYPE_FLOAT32: out->phys = TM_PQ_FLOAT; out->phys_width = 4; break;
    case TM_TYPE_FLOAT64: out->phys = TM_PQ_DOUBLE; out->phys_width = 8; break;
    case TM_TYPE_DECIMAL128:
      if (t->precision < 1 || t->precision > 38 || t->scale < 0 || t->scale > t->precision)
        return tm_error_set(err, TM_EINVALID, "column '%s': invalid decimal(%d,%d)", c->name,
                            (int)t->precision, (int)t->scale);
      if (t->precision <= 9) {
        out->phys = TM_PQ_INT32;
        out->phys_width = 4;
      } else if (t->precision <= 18) {
        out->phys = TM_PQ_INT64;
        out->phys_width = 8;
      } else {
        out->phys = TM_PQ_FLBA;
        out->type_length = decimal_width(t->precision);
        out->phys_width = (size_t)out->type_length;
      }
      break;
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
      out->phys = TM_PQ_BYTE_ARRAY;
      out->unsigned_order = true;
      break;
    case TM_TYPE_FIXED_BINARY:
      if (t->width <= 0)
        return tm_error_set(err, TM_EINVALID, "column '%s': fixed binary of width %d", c->name,
                            (int)t->width);
      out->phys = TM_PQ_FLBA;
      out->type_length = t->width;
      out->phys_width = (size_t)t->width;
      out->unsigned_order = true;
      break;
    default:
      return tm_error_set(err, TM_EUNSUPPORTED, "column '%s': type cannot be written to Parquet",
                          c->name);
  }
  return TM_OK;
}

/* Row i of v in PLAIN physical form into dst (phys_width bytes). */
static void to_physical(const tm_colview *v, const col_layout *l, int64_t i, uint8_t *dst) {
  const uint8_t *p = v->values;
  switch (v->type.id) {
    case TM_TYPE_INT8: {
      int32_t x = ((const int8_t *)p)[i];
      memcpy(dst, &x, 4);
      return;
    }
    case TM_TYPE_INT16: {
      int32_t x = ((const int16_t *)p)[i];
      memcpy(dst, &x, 4);
      return;
    }
    case TM_TYPE_UINT8: {
      uint32_t x = p[i];
      memcpy(dst, &x, 4);
      return;
    }
    case TM_TYPE_UINT16: {
      uint32_t x = ((const uint16_t *)p)[i];
      memcpy(dst, &x, 4);
      return;
    }
    case TM_TYPE_TIMESTAMP:
      if (v->type.unit == TM_UNIT_SECOND) {
        int64_t x = ((const int64_t *)p)[i] * 1000;
        memcpy(dst, &x, 8);
        return;
      }
      memcpy(dst, p + 8 * (size_t)i, 8);
      return;
    case TM_TYPE_DECIMAL128: {
      const uint8_t *d = p + 16 * (size_t)i;
      if (l->phys == TM_PQ_INT32) memcpy(dst, d, 4);
      else if (l->phys == TM_PQ_INT64) memcpy(dst, d, 8);
      else /* big-endian, the low type_length bytes */
        for (int32_t k = 0; k < l->type_length; k++) dst[k] = d[l->type_length - 1 - k];
      return;
    }
    default: memcpy(dst, p + l->phys_width * (size_t)i, l->phys_width); return;
  }
}

/* ---- lifecycle ------------------------------------------------------------ */

/* ---- nested columns: leaves ---------------------------------------------------- */

/* Leaves under a type: 1 for a flat one. */
static size_t leaf_count(const tm_type *t) {
  if (!tm_type_is_nested(t)) return 1;
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_LIST) return leaf_count(&nt->child[0]);
  if (t->id == TM_TYPE_MAP) {
    const tm_ntype *et = nt->child[0].nested;
    return leaf_count(&et->child[0]) + leaf_count(&et->child[1]);
  }
  size_t n = 0;
  for (size_t k = 0; k < nt->n; k++) n += leaf_count(&nt->child[k]);
  return n;
}

/* Schema elements under a type (the footer's count): groups and leaves. */
static size_t element_count(const tm_type *t) {
  if (!tm_type_is_nested(t)) return 1;
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_LIST) return 2 + element_count(&nt->child[0]);
  if (t->id == TM_TYPE_MAP) {
    const tm_ntype *et = nt->child[0].nested;
    return 2 + element_count(&et->child[0]) + element_count(&et->child[1]);
  }
  size_t n = 1;
  for (size_t k = 0; k < nt->n; k++) n += element_count(&nt->child[k]);
  return n;
}

#define PATH_MAX_DEPTH (2 * TM_NTYPE_MAX_DEPTH + 2)

/* The id in the next of a column's id slots (schema.h), -1 without ids. */
static int32_t next_id(const int32_t *ids, size_t *slot) { return ids ? ids[(*slot)++] : -1; }

/*
 * Appends the leaves of field `name` (type t) to w->leaves: path[0..depth)
 * names its ancestors; def and rep are the levels of the ancestors.
 */
static int add_leaves(tm_parquet_writer *w, const tm_type *t, bool nullable, const char *name,
                      int32_t id, const int32_t *ids, size_t *slot, const char **path,
                      size_t depth, int def, int rep, tm_error *err) {
  if (depth + 2 >= PATH_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "column '%s': nested too deep for Parquet", path[0]);
  path[depth] = name;
  def += nullable ? 1 : 0;
  if (!tm_type_is_nested(t)) {
    leaf *lf = &w->leaves[w->n_leaves];
    lf->path = tm_calloc(depth + 1, sizeof *lf->path);
    if (!lf->path) return tm_error_nomem(err);
    memcpy(lf->path, path, (depth + 1) * sizeof *lf->path);
    lf->n_path = depth + 1;
    lf->c.name = (char *)name;
    lf->c.type = *t;
    lf->c.nullable = nullable;
    lf->c.field_id = id;
    lf->max_def = def;
    lf->max_rep = rep;
    tm_colbuilder_init(&lf->vals, *t, (size_t)2 << 30);
    w->n_leaves++;
    tm_column named = lf->c;
    char full[256];
    snprintf(full, sizeof full, "%s.%s", path[0], name);
    named.name = full;
    return layout_of(&named, &lf->layout, err);
  }
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_STRUCT) {
    for (size_t k = 0; k < nt->n; k++)
      TM_TRY(add_leaves(w, &nt->child[k], nt->nullable[k], nt->name[k], next_id(ids, slot), ids,
                        slot, path, depth + 1, def, rep, err));
    return TM_OK;
  }
  /* The repeated group of a LIST or MAP: one more level of each. */
  if (t->id == TM_TYPE_LIST) {
    path[depth + 1] = "list";
    return add_leaves(w, &nt->child[0], nt->nullable[0], "element", next_id(ids, slot), ids, slot,
                      path, depth + 2, def + 1, rep + 1, err);
  }
  const tm_ntype *et = nt->child[0].nested;
  path[depth + 1] = "key_value";
  TM_TRY(add_leaves(w, &et->child[0], false, "key", next_id(ids, slot), ids, slot, path,
                    depth + 2, def + 1, rep + 1, err));
  return add_leaves(w, &et->child[1], et->nullable[1], "value", next_id(ids, slot), ids, slot,
                    path, depth + 2, def + 1, rep + 1, err);
}

static void dispose_rg(rg_meta *g, size_t n_cols) {
  if (!g->cols) return;
  for (size_t i = 0; i < n_cols; i++) {
    tm_buf_dispose(&g->cols[i].min);
    tm_buf_dispose(&g->cols[i].max);
  }
  tm_free(g->cols);
}

void tm_parquet_writer_free(tm_parquet_writer *w) {
  if (!w) return;
  if (w->cols)
    for (size_t i = 0; i < w->schema.n_cols; i++) tm_colbuilder_dispose(&w->cols[i]);
  tm_free(w->cols);
  for (size_t i = 0; i < w->rgs.len; i++) dispose_rg(tm_vec_at(&w->rgs, i), w->n_chunks);
  for (size_t i = 0; i < w->n_leaves; i++) {
    tm_free(w->leaves[i].path);
    tm_free(w->leaves[i].rep);
    tm_free(w->leaves[i].def);
    tm_colbuilder_dispose(&w->leaves[i].vals);
  }
  tm_free(w->leaves);
  tm_free(w->first_leaf);
  if (w->ids)
    for (size_t i = 0; i < w->schema.n_cols; i++) tm_free(w->ids[i]);
  tm_free(w->ids);
  tm_vec_dispose(&w->rgs);
  tm_free(w->layout);
  tm_schema_dispose(&w->schema);
  tm_kv_dispose(&w->kv);
  tm_parquet__codec_ctx_dispose(&w->codec);
  tm_buf_dispose(&w->page);
  tm_buf_dispose(&w->comp);
  tm_buf_dispose(&w->chunk);
  tm_buf_dispose(&w->dict);
  tm_free(w->idx);
  tm_free(w->levels);
  tm_free(w);
}

int tm_parquet_writer_new(tm_parquet_writer **out, const tm_schema *schema,
                          const tm_parquet_writer_options *opts, tm_parquet_sink_fn sink,
                          void *payload, tm_error *err) {
  tm_parquet_writer_options def = TM_PARQUET_WRITER_OPTIONS_INIT;
  int rc = TM_OK;
  tm_parquet_writer *w = tm_calloc(1, sizeof *w);
  if (!w) return tm_error_nomem(err);
  tm_schema_init(&w->schema);
  tm_kv_init(&w->kv);
  tm_vec_init(&w->rgs, sizeof(rg_meta), (size_t)1 << 24);
  tm_buf_init(&w->page, TM_PQ_MAX_PAGE);
  tm_buf_init(&w->comp, TM_PQ_MAX_PAGE * 2);
  tm_buf_init(&w->chunk, (size_t)1 << 32);
  tm_buf_init(&w->dict, DICT_MAX_BYTES * 2);
  w->opts = opts ? *opts : def;
  w->opts.kv = NULL;
  w->sink = sink;
  w->payload = payload;
  if (w->opts.codec != TM_PARQUET_UNCOMPRESSED && w->opts.codec != TM_PARQUET_SNAPPY &&
      w->opts.codec != TM_PARQUET_GZIP && w->opts.codec != TM_PARQUET_ZSTD) {
    rc = tm_error_set(err, TM_EINVALID, "unsupported Parquet write codec %d", (int)w->opts.codec);
    goto fail;
  }
  if (w->opts.row_group_rows <= 0) w->opts.row_group_rows = DEFAULT_RG_ROWS;
  if (w->opts.row_group_bytes == 0) w->opts.row_group_bytes = DEFAULT_RG_BYTES;
  if (w->opts.page_bytes == 0) w->opts.page_bytes = DEFAULT_PAGE_BYTES;
  if (opts && opts->kv) TM_CHECK(tm_kv_copy(&w->kv, opts->kv, err));
  TM_CHECK(tm_schema_copy(&w->schema, schema, err));
  size_t n = schema->n_cols;
  w->layout = tm_calloc(n ? n : 1, sizeof *w->layout);
  w->cols = tm_calloc(n ? n : 1, sizeof *w->cols);
  w->first_leaf = tm_calloc(n ? n : 1, sizeof *w->first_leaf);
  size_t n_leaves = 0;
  for (size_t i = 0; i < n; i++)
    if (tm_type_is_nested(&schema->cols[i].type)) n_leaves += leaf_count(&schema->cols[i].type);
  w->leaves = tm_calloc(n_leaves ? n_leaves : 1, sizeof *w->leaves);
  w->ids = tm_calloc(n ? n : 1, sizeof *w->ids);
  if (!w->layout || !w->cols || !w->first_leaf || !w->leaves || !w->ids) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    const tm_column *c = &w->schema.cols[i];
    tm_colbuilder_init(&w->cols[i], c->type, (size_t)2 << 30);
    w->first_leaf[i] = SIZE_MAX;
    if (tm_type_is_nested(&c->type)) {
      const char *path[PATH_MAX_DEPTH];
      size_t n_slots = tm_type_id_slots(&c->type), slot = 0;
      if (opts && opts->nested_ids && opts->nested_ids[i] && n_slots) {
        w->ids[i] = tm_calloc(n_slots, sizeof *w->ids[i]);
        if (!w->ids[i]) {
          rc = tm_error_nomem(err);
          goto fail;
        }
        memcpy(w->ids[i], opts->nested_ids[i], n_slots * sizeof *w->ids[i]);
      }
      w->first_leaf[i] = w->n_leaves;
      TM_CHECK(add_leaves(w, &c->type, c->nullable, c->name, c->field_id, w->ids[i], &slot, path,
                          0, 0, 0, err));
      w->n_chunks += leaf_count(&c->type);
    } else {
      TM_CHECK(layout_of(c, &w->layout[i], err));
      w->n_chunks++;
    }
  }
  TM_CHECK(emit(w, "PAR1", 4, err));
  *out = w;
  return TM_OK;
done:
fail:
  tm_parquet_writer_free(w);
  return rc;
}

int64_t tm_parquet_writer_rows(const tm_parquet_writer *w) { return w->total_rows; }

/* ---- statistics ---------------------------------------------------------- */

/* Fills min/max (PLAIN bytes) and null_count of a column chunk. */
static int chunk_stats(tm_parquet_writer *w, const tm_colview *v, const col_layout *l,
                       chunk_meta *m, tm_error *err) {
  m->null_count = v->null_count;
  int64_t lo = -1, hi = -1;
  bool is_float = v->type.id == TM_TYPE_FLOAT32 || v->type.id == TM_TYPE_FLOAT64;
  tm_value a, b;
  for (int64_t i = 0; i < v->length; i++) {
    if (tm_colview_is_null(v, i)) continue;
    tm_colview_get(v, i, &a);
    if (is_float && isnan(a.v.f)) continue;
    if (lo < 0) {
      lo = hi = i;
      continue;
    }
    tm_colview_get(v, lo, &b);
    if (tm_value_cmp(&a, &b) < 0) lo = i;
    tm_colview_get(v, hi, &b);
    if (tm_value_cmp(&a, &b) > 0) hi = i;
  }
  if (lo < 0) return TM_OK;
  for (int k = 0; k < 2; k++) {
    int64_t row = k == 0 ? lo : hi;
    tm_buf *dst = k == 0 ? &m->min : &m->max;
    if (l->phys == TM_PQ_BOOLEAN) {
      uint8_t x = tm_bit_get(v->values, row);
      TM_TRY(tm_buf_append(dst, &x, 1, err));
    } else if (l->phys == TM_PQ_BYTE_ARRAY) {
      tm_strview s = tm_colview_bytes(v, row);
      if (s.len > STATS_MAX_BYTES) {
        tm_buf_clear(&m->min);
        return TM_OK; /* bounds this long would bloat the footer: omit them */
      }
      TM_TRY(tm_buf_append(dst, s.ptr, s.len, err));
    } else {
      uint8_t tmp[16];
      to_physical(v, l, row, tmp);
      if (is_float) {
        /* A zero bound is written as -0.0 for the minimum, +0.0 for the maximum. */
        if (v->type.id == TM_TYPE_FLOAT32) {
          float f;
          memcpy(&f, tmp, 4);
          if (f == 0) f = k == 0 ? -0.0f : 0.0f;
          memcpy(tmp, &f, 4);
        } else {
          double d;
          memcpy(&d, tmp, 8);
          if (d == 0) d = k == 0 ? -0.0 : 0.0;
          memcpy(tmp, &d, 8);
        }
      }
      TM_TRY(tm_buf_append(dst, tmp, l->phys_width, err));
    }
  }
  m->has_minmax = true;
  (void)w;
  return TM_OK;
}

/* ---- dictionary ------------------------------------------------------------ */

/*
 * Builds the dictionary of a chunk: the distinct non-null values in PLAIN
 * form in w->dict, and w->idx[j] = entry of the j-th non-null value. False
 * (with no error) when the column does not fit the dictionary limits.
 */
static int build_dictionary(tm_parquet_writer *w, const tm_colview *v, const col_layout *l,
                            size_t *n_entries, bool *ok, tm_error *err) {
  *ok = false;
  int64_t n_valid = v->length - v->null_count;
  if (l->phys == TM_PQ_BOOLEAN || n_valid < 2) return TM_OK;
  size_t cap = 1024;
  while (cap < (size_t)n_valid * 2 && cap < (size_t)DICT_MAX_ENTRIES * 4) cap *= 2;
  uint32_t *slots = tm_malloc(cap * sizeof *slots); /* entry + 1; 0 = empty */
  uint32_t *starts = tm_malloc((DICT_MAX_ENTRIES + 1) * sizeof *starts);
  if (!slots || !starts) {
    tm_free(slots);
    tm_free(starts);
    return tm_error_nomem(err);
  }
  memset(slots, 0, cap * sizeof *slots);
  if ((size_t)n_valid > w->idx_cap) {
    uint32_t *p = tm_reallocarray(w->idx, (size_t)n_valid, sizeof *p);
    if (!p) {
      tm_free(slots);
      tm_free(starts);
      return tm_error_nomem(err);
    }
    w->idx = p;
    w->idx_cap = (size_t)n_valid;
  }
  tm_buf_clear(&w->dict);
  size_t entries = 0, j = 0;
  int rc = TM_OK;
  bool fits = true;
  uint8_t tmp[16];
  for (int64_t i = 0; i < v->length && fits; i++) {
    if (tm_colview_is_null(v, i)) continue;
    const uint8_t *val;
    size_t len;
    if (l->phys == TM_PQ_BYTE_ARRAY) {
      tm_strview s = tm_colview_bytes(v, i);
      val = (const uint8_t *)s.ptr;
      len = s.len;
    } else if (l->phys == TM_PQ_FLBA && v->type.id == TM_TYPE_FIXED_BINARY) {
      val = (const uint8_t *)v->values + l->phys_width * (size_t)i;
      len = l->phys_width;
    } else {
      to_physical(v, l, i, tmp);
      val = tmp;
      len = l->phys_width;
    }
    uint64_t h = tm_hash64(val, len, 0x5eed);
    size_t s = (size_t)h & (cap - 1);
    uint32_t found = 0;
    while (slots[s]) {
      uint32_t e = slots[s] - 1;
      size_t es = starts[e];
      size_t el = l->phys == TM_PQ_BYTE_ARRAY ? starts[e + 1] - es - 4 : len;
      const uint8_t *ev = (const uint8_t *)w->dict.ptr + es + (l->phys == TM_PQ_BYTE_ARRAY ? 4 : 0);
      if (el == len && memcmp(ev, val, len) == 0) {
        found = slots[s];
        break;
      }
      s = (s + 1) & (cap - 1);
    }
    if (!found) {
      if (entries >= DICT_MAX_ENTRIES || entries * 2 >= cap ||
          w->dict.len + len + 4 > DICT_MAX_BYTES) {
        fits = false;
        break;
      }
      starts[entries] = (uint32_t)w->dict.len;
      if (l->phys == TM_PQ_BYTE_ARRAY) {
        uint32_t l32 = (uint32_t)len;
        rc = tm_buf_append(&w->dict, &l32, 4, err);
        if (rc < 0) break;
      }
      rc = tm_buf_append(&w->dict, val, len, err);
      if (rc < 0) break;
      starts[entries + 1] = (uint32_t)w->dict.len;
      slots[s] = (uint32_t)++entries;
      found = (uint32_t)entries;
    }
    w->idx[j++] = found - 1;
  }
  tm_free(slots);
  tm_free(starts);
  if (rc < 0) return rc;
  /* Worth it only when values repeat. */
  *ok = fits && (int64_t)entries * 2 <= n_valid;
  *n_entries = entries;
  return TM_OK;
}

/* ---- pages ----------------------------------------------------------------- */

static int grow_levels(tm_parquet_writer *w, size_t n, tm_error *err) {
  if (n <= w->levels_cap) return TM_OK;
  uint32_t *p = tm_reallocarray(w->levels, n, sizeof *p);
  if (!p) return tm_error_nomem(err);
  w->levels = p;
  w->levels_cap = n;
  return TM_OK;
}

/* Compresses w->page and appends header + body to w->chunk. */
static int flush_page(tm_parquet_writer *w, int type, int32_t num_values, int encoding,
                      chunk_meta *m, tm_error *err) {
  tm_buf_clear(&w->comp);
  const tm_buf *body = &w->page;
  if (w->opts.codec != TM_PARQUET_UNCOMPRESSED) {
    TM_TRY(tm_parquet__compress(&w->codec, (int)w->opts.codec, w->opts.compression_level,
                                (const uint8_t *)w->page.ptr, w->page.len, &w->comp, err));
    body = &w->comp;
  }
  if (w->page.len > INT32_MAX || body->len > INT32_MAX)
    return tm_error_set(err, TM_ETOOLARGE, "Parquet page passes 2 GiB");
  size_t before = w->chunk.len;
  tm_thrift_writer t;
  tm_thrift_writer_init(&t, &w->chunk);
  tm_thrift_write_struct_begin(&t);
  tm_thrift_write_field_i32(&t, 1, type);
  tm_thrift_write_field_i32(&t, 2, (int32_t)w->page.len);
  tm_thrift_write_field_i32(&t, 3, (int32_t)body->len);
  /* The page's CRC-32 over its bytes as written (issue 22): readers find a bit flip. */
  tm_thrift_write_field_i32(&t, 4, (int32_t)(uint32_t)crc32(0L, (const Bytef *)body->ptr,
                                                             (uInt)body->len));
  if (type == TM_PQ_PAGE_DATA) {
    tm_thrift_write_field_struct(&t, 5);
    tm_thrift_write_field_i32(&t, 1, num_values);
    tm_thrift_write_field_i32(&t, 2, encoding);
    tm_thrift_write_field_i32(&t, 3, ENC_RLE);
    tm_thrift_write_field_i32(&t, 4, ENC_RLE);
    tm_thrift_write_struct_end(&t);
  } else {
    tm_thrift_write_field_struct(&t, 7);
    tm_thrift_write_field_i32(&t, 1, num_values);
    tm_thrift_write_field_i32(&t, 2, ENC_PLAIN);
    tm_thrift_write_struct_end(&t);
  }
  tm_thrift_write_struct_end(&t);
  TM_TRY(tm_thrift_writer_status(&t, err));
  size_t header = w->chunk.len - before;
  TM_TRY(tm_buf_append(&w->chunk, body->ptr, body->len, err));
  m->uncompressed += (int64_t)(header + w->page.len);
  m->compressed += (int64_t)(header + body->len);
  return TM_OK;
}

/* Appends `n` PLAIN values of rows [from, to) (non-null ones) to w->page. */
static int plain_values(tm_parquet_writer *w, const tm_colview *v, const col_layout *l,
                        int64_t from, int64_t to, tm_error *err) {
  if (l->phys == TM_PQ_BOOLEAN) {
    size_t n = 0;
    for (int64_t i = from; i < to; i++)
      if (!tm_colview_is_null(v, i)) n++;
    void *p;
    TM_TRY(tm_buf_extend(&w->page, (n + 7) / 8, &p, err));
    uint8_t *bits = p;
    size_t k = 0;
    for (int64_t i = from; i < to; i++) {
      if (tm_colview_is_null(v, i)) continue;
      if (tm_bit_get(v->values, i)) bits[k >> 3] |= (uint8_t)(1u << (k & 7));
      k++;
    }
    return TM_OK;
  }
  if (l->phys == TM_PQ_BYTE_ARRAY) {
    const int32_t *off = v->values;
    TM_TRY(tm_buf_reserve(&w->page, (size_t)(off[to] - off[from]) + 4 * (size_t)(to - from), err));
    for (int64_t i = from; i < to; i++) {
      if (tm_colview_is_null(v, i)) continue;
      uint32_t len = (uint32_t)(off[i + 1] - off[i]);
      memcpy(w->page.ptr + w->page.len, &len, 4);
      memcpy(w->page.ptr + w->page.len + 4, v->data + off[i], len);
      w->page.len += 4 + len;
    }
    w->page.ptr[w->page.len] = '\0';
    return TM_OK;
  }
  size_t pw = l->phys_width;
  TM_TRY(tm_buf_reserve(&w->page, pw * (size_t)(to - from), err));
  uint8_t *dst = (uint8_t *)w->page.ptr + w->page.len;
  bool same = tm_type_byte_width(&v->type) == pw && v->type.id != TM_TYPE_DECIMAL128 &&
              !(v->type.id == TM_TYPE_TIMESTAMP && v->type.unit == TM_UNIT_SECOND);
  if (same && !v->validity) {
    /* An empty child of a nested column may have no values buffer at all. */
    if (to > from)
      memcpy(dst, (const uint8_t *)v->values + pw * (size_t)from, pw * (size_t)(to - from));
    dst += pw * (size_t)(to - from);
  } else {
    for (int64_t i = from; i < to; i++) {
      if (tm_colview_is_null(v, i)) continue;
      to_physical(v, l, i, dst);
      dst += pw;
    }
  }
  w->page.len = (size_t)(dst - (uint8_t *)w->page.ptr);
  w->page.ptr[w->page.len] = '\0';
  return TM_OK;
}

/* Rows per page so that a page holds about page_bytes of values. */
static int64_t rows_per_page(const tm_parquet_writer *w, const tm_colview *v, const col_layout *l) {
  size_t per_row = l->phys_width ? l->phys_width : 1;
  if (l->phys == TM_PQ_BYTE_ARRAY && v->length > 0) {
    const int32_t *off = v->values;
    per_row = 4 + (size_t)off[v->length] / (size_t)v->length;
  }
  int64_t r = (int64_t)(w->opts.page_bytes / per_row);
  if (r < 1024) r = 1024;
  return r;
}

static int write_chunk(tm_parquet_writer *w, size_t ci, const tm_colview *v, chunk_meta *m,
                       tm_error *err) {
  const col_layout *l = &w->layout[ci];
  bool nullable = w->schema.cols[ci].nullable;
  if (!nullable && v->null_count > 0)
    return tm_error_set(err, TM_EINVALID, "column '%s' is not nullable but holds %lld nulls",
                        w->schema.cols[ci].name, (long long)v->null_count);
  memset(m, 0, sizeof *m);
  tm_buf_init(&m->min, STATS_MAX_BYTES + 16);
  tm_buf_init(&m->max, STATS_MAX_BYTES + 16);
  m->codec = (int32_t)w->opts.codec;
  m->num_values = v->length;
  m->dict_page_offset = -1;
  TM_TRY(chunk_stats(w, v, l, m, err));
  tm_buf_clear(&w->chunk);
  size_t n_dict = 0;
  bool use_dict = false;
  if (w->opts.dictionary) TM_TRY(build_dictionary(w, v, l, &n_dict, &use_dict, err));
  int64_t chunk_start = (int64_t)w->offset;
  if (use_dict) {
    tm_buf_clear(&w->page);
    TM_TRY(tm_buf_append(&w->page, w->dict.ptr, w->dict.len, err));
    m->dict_page_offset = chunk_start;
    TM_TRY(flush_page(w, TM_PQ_PAGE_DICTIONARY, (int32_t)n_dict, ENC_PLAIN, m, err));
    m->encodings |= 1u << ENC_PLAIN;
  }
  m->data_page_offset = chunk_start + (int64_t)w->chunk.len;
  int64_t per_page = rows_per_page(w, v, l);
  size_t dense = 0; /* index into w->idx of the next non-null value */
  int bw = tm_parquet__bit_width(n_dict ? n_dict - 1 : 0);
  for (int64_t from = 0; from < v->length || from == 0; from += per_page) {
    int64_t to = from + per_page < v->length ? from + per_page : v->length;
    size_t n = (size_t)(to - from);
    tm_buf_clear(&w->page);
    if (nullable) {
      /* RLE definition levels with their 4-byte length. */
      TM_TRY(grow_levels(w, n ? n : 1, err));
      for (size_t i = 0; i < n; i++) w->levels[i] = !tm_colview_is_null(v, from + (int64_t)i);
      void *p;
      TM_TRY(tm_buf_extend(&w->page, 4, &p, err));
      size_t start = w->page.len;
      TM_TRY(tm_parquet__rle_encode(&w->page, w->levels, n, 1, err));
      uint32_t len = (uint32_t)(w->page.len - start);
      memcpy(w->page.ptr + start - 4, &len, 4);
    }
    if (use_dict) {
      size_t nv = 0;
      for (int64_t i = from; i < to; i++)
        if (!tm_colview_is_null(v, i)) nv++;
      TM_TRY(tm_buf_putc(&w->page, (char)bw, err));
      TM_TRY(tm_parquet__rle_encode(&w->page, w->idx + dense, nv, bw, err));
      dense += nv;
    } else {
      TM_TRY(plain_values(w, v, l, from, to, err));
    }
    int enc = use_dict ? ENC_RLE_DICTIONARY : ENC_PLAIN;
    m->encodings |= 1u << enc;
    if (nullable) m->encodings |= 1u << ENC_RLE;
    TM_TRY(flush_page(w, TM_PQ_PAGE_DATA, (int32_t)n, enc, m, err));
    if (to >= v->length) break;
  }
  TM_TRY(emit(w, w->chunk.ptr, w->chunk.len, err));
  return TM_OK;
}

/* A view of a column builder's buffers. */
static tm_colview builder_view(const tm_colbuilder *cb) {
  tm_colview v;
  memset(&v, 0, sizeof v);
  v.type = cb->type;
  v.length = cb->length;
  v.null_count = cb->null_count;
  v.validity = cb->null_count > 0 ? (const uint8_t *)cb->validity.ptr : NULL;
  v.values = cb->values.ptr;
  v.data = (const uint8_t *)cb->data.ptr;
  return v;
}


/* ---- nested columns ------------------------------------------------------------ */

/* One level pair for leaf lf, and value i of v when the leaf is defined there. */
static int push(leaf *lf, int r, int d, const tm_colview *v, int64_t i, tm_error *err) {
  if (lf->n == lf->cap) {
    size_t cap = lf->cap ? lf->cap * 2 : 1024;
    uint32_t *rp = tm_reallocarray(lf->rep, cap, sizeof *rp);
    if (!rp) return tm_error_nomem(err);
    lf->rep = rp;
    uint32_t *dp = tm_reallocarray(lf->def, cap, sizeof *dp);
    if (!dp) return tm_error_nomem(err);
    lf->def = dp;
    lf->cap = cap;
  }
  lf->rep[lf->n] = (uint32_t)r;
  lf->def[lf->n] = (uint32_t)d;
  lf->n++;
  if (d < lf->max_def) {
    lf->nulls++;
    return TM_OK;
  }
  return tm_colbuilder_append_range(&lf->vals, v, i, 1, err);
}

/* Levels (r, d) without a value for the n leaves from l0 (a null or empty ancestor). */
static int push_absent(tm_parquet_writer *w, size_t l0, size_t n, int r, int d, tm_error *err) {
  for (size_t k = 0; k < n; k++) TM_TRY(push(&w->leaves[l0 + k], r, d, NULL, 0, err));
  return TM_OK;
}

/*
 * Shreds value i of v (a field, nullable or not) into the leaves from l0: r
 * is the repetition level of its first level pair, d the definition level of
 * its ancestors, rl the repetition depth of its ancestors.
 */
static int shred(tm_parquet_writer *w, size_t col, size_t l0, const tm_colview *v, int64_t i,
                 bool nullable, int r, int d, int rl, tm_error *err) {
  if (tm_colview_is_null(v, i)) {
    if (!nullable)
      return tm_error_set(err, TM_EINVALID, "column '%s': a required nested field holds a null",
                          w->schema.cols[col].name);
    return push_absent(w, l0, leaf_count(&v->type), r, d, err);
  }
  if (nullable) d++;
  if (!tm_type_is_nested(&v->type)) return push(&w->leaves[l0], r, d, v, i, err);
  const tm_ntype *nt = v->type.nested;
  if (v->type.id == TM_TYPE_STRUCT) {
    size_t l = l0;
    for (size_t k = 0; k < nt->n; k++) {
      tm_colview c = tm_colview_child(v, k);
      TM_TRY(shred(w, col, l, &c, i, nt->nullable[k], r, d, rl, err));
      l += leaf_count(&nt->child[k]);
    }
    return TM_OK;
  }
  const int32_t *off = v->values;
  int64_t a = off[i], b = off[i + 1];
  if (a == b) return push_absent(w, l0, leaf_count(&v->type), r, d, err); /* empty */
  tm_colview c = tm_colview_child(v, 0);
  for (int64_t j = a; j < b; j++) {
    int rr = j == a ? r : rl + 1;
    if (v->type.id == TM_TYPE_LIST) {
      TM_TRY(shred(w, col, l0, &c, j, nt->nullable[0], rr, d + 1, rl + 1, err));
      continue;
    }
    /* MAP: the entry (never null): its key (never null) and value. */
    const tm_ntype *et = nt->child[0].nested;
    tm_colview key = tm_colview_child(&c, 0), value = tm_colview_child(&c, 1);
    TM_TRY(shred(w, col, l0, &key, j, false, rr, d + 1, rl + 1, err));
    TM_TRY(shred(w, col, l0 + leaf_count(&et->child[0]), &value, j, et->nullable[1], rr, d + 1,
                 rl + 1, err));
  }
  return TM_OK;
}

/* Appends RLE levels with their 4-byte length to w->page. */
static int put_levels(tm_parquet_writer *w, const uint32_t *lv, size_t n, int max, tm_error *err) {
  void *p;
  TM_TRY(tm_buf_extend(&w->page, 4, &p, err));
  size_t start = w->page.len;
  TM_TRY(tm_parquet__rle_encode(&w->page, lv, n, tm_parquet__bit_width((uint64_t)max), err));
  uint32_t len = (uint32_t)(w->page.len - start);
  memcpy(w->page.ptr + start - 4, &len, 4);
  return TM_OK;
}

/* Writes leaf lf's chunk of this row group (its levels and values), then clears them. */
static int write_leaf_chunk(tm_parquet_writer *w, leaf *lf, chunk_meta *m, tm_error *err) {
  memset(m, 0, sizeof *m);
  tm_buf_init(&m->min, STATS_MAX_BYTES + 16);
  tm_buf_init(&m->max, STATS_MAX_BYTES + 16);
  m->codec = (int32_t)w->opts.codec;
  m->num_values = (int64_t)lf->n;
  m->dict_page_offset = -1;
  if (tm_type_is_var(&lf->vals.type) && lf->vals.values.len == 0) {
    int32_t zero = 0;
    TM_TRY(tm_buf_append(&lf->vals.values, &zero, 4, err));
  }
  tm_colview vv = builder_view(&lf->vals);
  TM_TRY(chunk_stats(w, &vv, &lf->layout, m, err));
  m->null_count = lf->nulls;
  tm_buf_clear(&w->chunk);
  m->data_page_offset = (int64_t)w->offset;
  size_t per_page = (size_t)rows_per_page(w, &vv, &lf->layout);
  size_t e = 0;
  int64_t vi = 0;
  do {
    /* A page ends at a row boundary (repetition level 0). */
    size_t end = e + per_page < lf->n ? e + per_page : lf->n;
    while (end < lf->n && lf->rep[end] != 0) end++;
    tm_buf_clear(&w->page);
    if (lf->max_rep > 0) TM_TRY(put_levels(w, lf->rep + e, end - e, lf->max_rep, err));
    if (lf->max_def > 0) TM_TRY(put_levels(w, lf->def + e, end - e, lf->max_def, err));
    int64_t nv = 0;
    for (size_t k = e; k < end; k++) nv += lf->def[k] == (uint32_t)lf->max_def;
    TM_TRY(plain_values(w, &vv, &lf->layout, vi, vi + nv, err));
    vi += nv;
    m->encodings |= (1u << ENC_PLAIN) | (1u << ENC_RLE);
    TM_TRY(flush_page(w, TM_PQ_PAGE_DATA, (int32_t)(end - e), ENC_PLAIN, m, err));
    e = end;
  } while (e < lf->n);
  TM_TRY(emit(w, w->chunk.ptr, w->chunk.len, err));
  lf->n = 0;
  lf->nulls = 0;
  tm_colbuilder_reset(&lf->vals);
  return TM_OK;
}

/* Shreds nested column ci's buffered rows and writes one chunk per leaf into ms. */
static int write_nested(tm_parquet_writer *w, size_t ci, chunk_meta *ms, tm_error *err) {
  struct ArrowArray arr;
  memset(&arr, 0, sizeof arr);
  const tm_column *c = &w->schema.cols[ci];
  TM_TRY(tm_colbuilder_finish(&w->cols[ci], &arr, err));
  tm_colview v = tm_colview_of(&arr, &c->type);
  size_t l0 = w->first_leaf[ci], nl = leaf_count(&c->type);
  int rc = TM_OK;
  for (int64_t i = 0; i < v.length && rc == TM_OK; i++)
    rc = shred(w, ci, l0, &v, i, c->nullable, 0, 0, 0, err);
  if (arr.release) arr.release(&arr);
  for (size_t k = 0; k < nl && rc == TM_OK; k++)
    rc = write_leaf_chunk(w, &w->leaves[l0 + k], &ms[k], err);
  return rc;
}

int tm_parquet_writer_flush(tm_parquet_writer *w, tm_error *err) {
  if (w->failed) return tm_error_set(err, TM_EINVALID, "Parquet writer failed earlier");
  if (w->rg_rows == 0) return TM_OK;
  size_t n = w->schema.n_cols;
  rg_meta g;
  memset(&g, 0, sizeof g);
  g.num_rows = w->rg_rows;
  g.file_offset = (int64_t)w->offset;
  g.cols = tm_calloc(w->n_chunks ? w->n_chunks : 1, sizeof *g.cols);
  int rc = TM_OK;
  if (!g.cols) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  size_t k = 0; /* the next chunk */
  for (size_t i = 0; i < n; i++) {
    tm_colbuilder *cb = &w->cols[i];
    size_t nk = 1;
    if (w->first_leaf[i] != SIZE_MAX) {
      nk = leaf_count(&cb->type);
      rc = write_nested(w, i, &g.cols[k], err);
    } else {
      /* Var-width columns without rows still need their leading offset. */
      if (tm_type_is_var(&cb->type) && cb->values.len == 0) {
        int32_t zero = 0;
        TM_CHECK(tm_buf_append(&cb->values, &zero, 4, err));
      }
      tm_colview v = builder_view(cb);
      rc = write_chunk(w, i, &v, &g.cols[k], err);
    }
    if (rc < 0) goto fail;
    for (size_t j = k; j < k + nk; j++) {
      g.total_compressed += g.cols[j].compressed;
      g.total_uncompressed += g.cols[j].uncompressed;
    }
    k += nk;
    tm_colbuilder_reset(cb);
  }
  TM_CHECK(tm_vec_push(&w->rgs, &g, err));
  w->rg_rows = 0;
  return TM_OK;
done:
fail:
  dispose_rg(&g, w->n_chunks);
  w->failed = true;
  return rc;
}

static size_t builder_bytes(const tm_colbuilder *cb) {
  size_t b = cb->values.len + cb->data.len + cb->validity.len;
  for (size_t k = 0; k < cb->n_children; k++) b += builder_bytes(&cb->children[k]);
  return b;
}

static size_t buffered_bytes(const tm_parquet_writer *w) {
  size_t b = 0;
  for (size_t i = 0; i < w->schema.n_cols; i++) b += builder_bytes(&w->cols[i]);
  return b;
}

int tm_parquet_writer_write(tm_parquet_writer *w, const tm_batch *b, tm_error *err) {
  if (w->failed) return tm_error_set(err, TM_EINVALID, "Parquet writer failed earlier");
  size_t n = w->schema.n_cols;
  if (b->schema.n_cols != n)
    return tm_error_set(err, TM_EINVALID, "batch has %zu columns, the Parquet schema %zu",
                        b->schema.n_cols, n);
  for (size_t i = 0; i < n; i++)
    if (!tm_type_equal(&b->schema.cols[i].type, &w->schema.cols[i].type)) {
      char a[64], c[64];
      tm_type_name(&b->schema.cols[i].type, a, sizeof a);
      tm_type_name(&w->schema.cols[i].type, c, sizeof c);
      return tm_error_set(err, TM_EINVALID, "column '%s' is %s in the batch, %s in the file",
                          w->schema.cols[i].name, a, c);
    }
  int64_t from = 0;
  while (from < b->n_rows) {
    int64_t k = b->n_rows - from;
    if (k > w->opts.row_group_rows - w->rg_rows) k = w->opts.row_group_rows - w->rg_rows;
    /* Keep row groups under the byte limit too: at most 64K rows per step. */
    if (k > 65536) k = 65536;
    for (size_t i = 0; i < n; i++) {
      tm_colview v = tm_batch_col(b, i);
      int rc = tm_colbuilder_append_range(&w->cols[i], &v, from, k, err);
      if (rc < 0) {
        w->failed = true;
        return rc;
      }
    }
    w->rg_rows += k;
    w->total_rows += k;
    from += k;
    if (w->rg_rows >= w->opts.row_group_rows || buffered_bytes(w) >= w->opts.row_group_bytes)
      TM_TRY(tm_parquet_writer_flush(w, err));
  }
  return TM_OK;
}

/* ---- footer ------------------------------------------------------------------ */

static void write_logical_and_converted(tm_thrift_writer *t, const tm_column *c,
                                        const col_layout *l) {
  const tm_type *ty = &c->type;
  int converted = -1;
  switch (ty->id) {
    case TM_TYPE_INT8: converted = TM_PQ_CT_INT_8; break;
    case TM_TYPE_INT16: converted = TM_PQ_CT_INT_16; break;
    case TM_TYPE_UINT8: converted = TM_PQ_CT_UINT_8; break;
    case TM_TYPE_UINT16: converted = TM_PQ_CT_UINT_16; break;
    case TM_TYPE_UINT32: converted = TM_PQ_CT_UINT_32; break;
    case TM_TYPE_UINT64: converted = TM_PQ_CT_UINT_64; break;
    case TM_TYPE_UTF8: converted = TM_PQ_CT_UTF8; break;
    case TM_TYPE_DATE32: converted = TM_PQ_CT_DATE; break;
    case TM_TYPE_DECIMAL128: converted = TM_PQ_CT_DECIMAL; break;
    case TM_TYPE_TIMESTAMP:
      /* The legacy annotations mean UTC-adjusted milli/microseconds. */
      if (ty->utc && (ty->unit == TM_UNIT_MILLI || ty->unit == TM_UNIT_SECOND))
        converted = TM_PQ_CT_TIMESTAMP_MILLIS;
      else if (ty->utc && ty->unit == TM_UNIT_MICRO) converted = TM_PQ_CT_TIMESTAMP_MICROS;
      break;
    default: break;
  }
  if (converted >= 0) tm_thrift_write_field_i32(t, 6, converted);
  if (ty->id == TM_TYPE_DECIMAL128) {
    tm_thrift_write_field_i32(t, 7, ty->scale);
    tm_thrift_write_field_i32(t, 8, ty->precision);
  }
  if (c->field_id >= 0) tm_thrift_write_field_i32(t, 9, c->field_id);
  /* LogicalType union. */
  int member = 0;
  switch (ty->id) {
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: member = TM_PQ_LT_INTEGER; break;
    case TM_TYPE_UTF8: member = TM_PQ_LT_STRING; break;
    case TM_TYPE_DATE32: member = TM_PQ_LT_DATE; break;
    case TM_TYPE_DECIMAL128: member = TM_PQ_LT_DECIMAL; break;
    case TM_TYPE_TIMESTAMP: member = TM_PQ_LT_TIMESTAMP; break;
    case TM_TYPE_TIME64: member = TM_PQ_LT_TIME; break;
    case TM_TYPE_FIXED_BINARY:
      if (ty->uuid && ty->width == 16) member = TM_PQ_LT_UUID;
      break;
    default: break;
  }
  (void)l;
  if (!member) return;
  tm_thrift_write_field_struct(t, 10);
  tm_thrift_write_field_struct(t, (int16_t)member);
  if (member == TM_PQ_LT_INTEGER) {
    static const int bits[] = {[TM_TYPE_INT8] = 8,   [TM_TYPE_INT16] = 16, [TM_TYPE_UINT8] = 8,
                               [TM_TYPE_UINT16] = 16, [TM_TYPE_UINT32] = 32, [TM_TYPE_UINT64] = 64};
    tm_thrift_write_field_i8(t, 1, (int8_t)bits[ty->id]); /* IntType.bitWidth: i8 */
    tm_thrift_write_field_bool(t, 2, ty->id == TM_TYPE_INT8 || ty->id == TM_TYPE_INT16);
  } else if (member == TM_PQ_LT_DECIMAL) {
    tm_thrift_write_field_i32(t, 1, ty->scale);
    tm_thrift_write_field_i32(t, 2, ty->precision);
  } else if (member == TM_PQ_LT_TIMESTAMP || member == TM_PQ_LT_TIME) {
    tm_time_unit u = ty->unit == TM_UNIT_SECOND ? TM_UNIT_MILLI : ty->unit;
    tm_thrift_write_field_bool(t, 1, member == TM_PQ_LT_TIMESTAMP ? ty->utc : false);
    tm_thrift_write_field_struct(t, 2);
    tm_thrift_write_field_struct(t, u == TM_UNIT_MILLI ? 1 : u == TM_UNIT_MICRO ? 2 : 3);
    tm_thrift_write_struct_end(t);
    tm_thrift_write_struct_end(t);
  }
  tm_thrift_write_struct_end(t); /* member */
  tm_thrift_write_struct_end(t); /* LogicalType */
}

static void write_kv(tm_thrift_writer *t, const char *k, const char *v) {
  tm_thrift_write_struct_begin(t);
  tm_thrift_write_field_binary(t, 1, k, strlen(k));
  if (v) tm_thrift_write_field_binary(t, 2, v, strlen(v));
  tm_thrift_write_struct_end(t);
}

/* A group element: repetition, name, children, and LIST or MAP annotations (kind 0: none). */
static void write_group(tm_thrift_writer *t, int repetition, const char *name, size_t n_children,
                        int kind, int32_t field_id) {
  tm_thrift_write_struct_begin(t);
  tm_thrift_write_field_i32(t, 3, repetition);
  tm_thrift_write_field_binary(t, 4, name, strlen(name));
  tm_thrift_write_field_i32(t, 5, (int32_t)n_children);
  if (kind) tm_thrift_write_field_i32(t, 6, kind == TM_TYPE_LIST ? TM_PQ_CT_LIST : TM_PQ_CT_MAP);
  if (field_id >= 0) tm_thrift_write_field_i32(t, 9, field_id);
  if (kind) {
    tm_thrift_write_field_struct(t, 10);
    tm_thrift_write_field_struct(t, kind == TM_TYPE_LIST ? TM_PQ_LT_LIST : TM_PQ_LT_MAP);
    tm_thrift_write_struct_end(t);
    tm_thrift_write_struct_end(t);
  }
  tm_thrift_write_struct_end(t);
}

/* The schema elements of a nested field, depth first; *lf walks the leaves in order. */
static void write_elements(tm_thrift_writer *t, const tm_type *ty, bool nullable,
                           const char *name, int32_t field_id, const int32_t *ids, size_t *slot,
                           const leaf **lf) {
  int rep = nullable ? TM_PQ_OPTIONAL : TM_PQ_REQUIRED;
  if (!tm_type_is_nested(ty)) {
    const leaf *l = (*lf)++;
    tm_thrift_write_struct_begin(t);
    tm_thrift_write_field_i32(t, 1, l->layout.phys);
    if (l->layout.type_length > 0) tm_thrift_write_field_i32(t, 2, l->layout.type_length);
    tm_thrift_write_field_i32(t, 3, rep);
    tm_thrift_write_field_binary(t, 4, name, strlen(name));
    write_logical_and_converted(t, &l->c, &l->layout);
    tm_thrift_write_struct_end(t);
    return;
  }
  const tm_ntype *nt = ty->nested;
  if (ty->id == TM_TYPE_STRUCT) {
    write_group(t, rep, name, nt->n, 0, field_id);
    for (size_t k = 0; k < nt->n; k++)
      write_elements(t, &nt->child[k], nt->nullable[k], nt->name[k], next_id(ids, slot), ids,
                     slot, lf);
    return;
  }
  write_group(t, rep, name, 1, ty->id, field_id);
  if (ty->id == TM_TYPE_LIST) {
    write_group(t, TM_PQ_REPEATED, "list", 1, 0, -1);
    write_elements(t, &nt->child[0], nt->nullable[0], "element", next_id(ids, slot), ids, slot,
                   lf);
    return;
  }
  const tm_ntype *et = nt->child[0].nested;
  write_group(t, TM_PQ_REPEATED, "key_value", 2, 0, -1);
  write_elements(t, &et->child[0], false, "key", next_id(ids, slot), ids, slot, lf);
  write_elements(t, &et->child[1], et->nullable[1], "value", next_id(ids, slot), ids, slot, lf);
}

static int write_footer(tm_parquet_writer *w, tm_error *err) {
  tm_buf footer = TM_BUF_INIT(TM_PQ_MAX_FOOTER);
  tm_thrift_writer t;
  tm_thrift_writer_init(&t, &footer);
  size_t n = w->schema.n_cols;
  tm_thrift_write_struct_begin(&t);
  tm_thrift_write_field_i32(&t, 1, 2);
  /* schema: root, then each column's elements (a nested column's groups and leaves) */
  size_t n_elems = 1;
  for (size_t i = 0; i < n; i++) n_elems += element_count(&w->schema.cols[i].type);
  tm_thrift_write_field_list(&t, 2, TM_THRIFT_STRUCT, (uint32_t)n_elems);
  tm_thrift_write_struct_begin(&t);
  tm_thrift_write_field_binary(&t, 4, "schema", 6);
  tm_thrift_write_field_i32(&t, 5, (int32_t)n);
  tm_thrift_write_struct_end(&t);
  for (size_t i = 0; i < n; i++) {
    const tm_column *c = &w->schema.cols[i];
    const col_layout *l = &w->layout[i];
    if (w->first_leaf[i] != SIZE_MAX) {
      const leaf *lf = &w->leaves[w->first_leaf[i]];
      size_t slot = 0;
      write_elements(&t, &c->type, c->nullable, c->name, c->field_id, w->ids[i], &slot, &lf);
      continue;
    }
    tm_thrift_write_struct_begin(&t);
    tm_thrift_write_field_i32(&t, 1, l->phys);
    if (l->type_length > 0) tm_thrift_write_field_i32(&t, 2, l->type_length);
    tm_thrift_write_field_i32(&t, 3, c->nullable ? TM_PQ_OPTIONAL : TM_PQ_REQUIRED);
    tm_thrift_write_field_binary(&t, 4, c->name, strlen(c->name));
    write_logical_and_converted(&t, c, l);
    tm_thrift_write_struct_end(&t);
  }
  tm_thrift_write_field_i64(&t, 3, w->total_rows);
  tm_thrift_write_field_list(&t, 4, TM_THRIFT_STRUCT, (uint32_t)w->rgs.len);
  for (size_t g = 0; g < w->rgs.len; g++) {
    const rg_meta *rg = tm_vec_at(&w->rgs, g);
    tm_thrift_write_struct_begin(&t);
    tm_thrift_write_field_list(&t, 1, TM_THRIFT_STRUCT, (uint32_t)w->n_chunks);
    for (size_t k = 0, i = 0, leaf_i = 0; k < w->n_chunks; k++) {
      /* Chunk k: flat column i, or leaf leaf_i of nested column i. */
      const chunk_meta *m = &rg->cols[k];
      const leaf *lf = NULL;
      if (w->first_leaf[i] != SIZE_MAX) {
        lf = &w->leaves[w->first_leaf[i] + leaf_i];
        if (++leaf_i == leaf_count(&w->schema.cols[i].type)) leaf_i = 0, i++;
      } else {
        i++;
      }
      const col_layout *l = lf ? &lf->layout : &w->layout[i - (lf ? 0 : 1)];
      const tm_column *c = lf ? NULL : &w->schema.cols[i - 1];
      int64_t start = m->dict_page_offset >= 0 ? m->dict_page_offset : m->data_page_offset;
      tm_thrift_write_struct_begin(&t);
      tm_thrift_write_field_i64(&t, 2, start);
      tm_thrift_write_field_struct(&t, 3);
      tm_thrift_write_field_i32(&t, 1, l->phys);
      uint32_t n_enc = (uint32_t)__builtin_popcount(m->encodings);
      tm_thrift_write_field_list(&t, 2, TM_THRIFT_I32, n_enc);
      for (int e = 0; e < 32; e++)
        if (m->encodings & (1u << e)) tm_thrift_write_i32(&t, e);
      if (lf) {
        tm_thrift_write_field_list(&t, 3, TM_THRIFT_BINARY, (uint32_t)lf->n_path);
        for (size_t p = 0; p < lf->n_path; p++)
          tm_thrift_write_binary(&t, lf->path[p], strlen(lf->path[p]));
      } else {
        tm_thrift_write_field_list(&t, 3, TM_THRIFT_BINARY, 1);
        tm_thrift_write_binary(&t, c->name, strlen(c->name));
      }
      tm_thrift_write_field_i32(&t, 4, m->codec);
      tm_thrift_write_field_i64(&t, 5, m->num_values);
      tm_thrift_write_field_i64(&t, 6, m->uncompressed);
      tm_thrift_write_field_i64(&t, 7, m->compressed);
      tm_thrift_write_field_i64(&t, 9, m->data_page_offset);
      if (m->dict_page_offset >= 0) tm_thrift_write_field_i64(&t, 11, m->dict_page_offset);
      tm_thrift_write_field_struct(&t, 12);
      bool signed_order = !l->unsigned_order;
      if (m->has_minmax && signed_order) {
        tm_thrift_write_field_binary(&t, 1, m->max.ptr, m->max.len);
        tm_thrift_write_field_binary(&t, 2, m->min.ptr, m->min.len);
      }
      tm_thrift_write_field_i64(&t, 3, m->null_count);
      if (m->has_minmax) {
        tm_thrift_write_field_binary(&t, 5, m->max.ptr, m->max.len);
        tm_thrift_write_field_binary(&t, 6, m->min.ptr, m->min.len);
        tm_thrift_write_field_bool(&t, 7, true);
        tm_thrift_write_field_bool(&t, 8, true);
      }
      tm_thrift_write_struct_end(&t); /* Statistics */
      tm_thrift_write_struct_end(&t); /* ColumnMetaData */
      tm_thrift_write_struct_end(&t); /* ColumnChunk */
    }
    tm_thrift_write_field_i64(&t, 2, rg->total_uncompressed);
    tm_thrift_write_field_i64(&t, 3, rg->num_rows);
    tm_thrift_write_field_i64(&t, 5, rg->file_offset);
    tm_thrift_write_field_i64(&t, 6, rg->total_compressed);
    tm_thrift_write_field_i32(&t, 7, (int32_t)g);
    tm_thrift_write_struct_end(&t);
  }
  if (w->kv.len > 0) {
    tm_thrift_write_field_list(&t, 5, TM_THRIFT_STRUCT, (uint32_t)w->kv.len);
    for (size_t i = 0; i < w->kv.len; i++) write_kv(&t, w->kv.items[i].key, w->kv.items[i].value);
  }
  const char *created_by = "tidemark version " TM_VERSION;
  tm_thrift_write_field_binary(&t, 6, created_by, strlen(created_by));
  tm_thrift_write_field_list(&t, 7, TM_THRIFT_STRUCT, (uint32_t)w->n_chunks);
  for (size_t i = 0; i < w->n_chunks; i++) {
    tm_thrift_write_struct_begin(&t); /* ColumnOrder */
    tm_thrift_write_field_struct(&t, 1); /* TYPE_ORDER */
    tm_thrift_write_struct_end(&t);
    tm_thrift_write_struct_end(&t);
  }
  tm_thrift_write_struct_end(&t);
  int rc = tm_thrift_writer_status(&t, err);
  if (rc == TM_OK && footer.len > UINT32_MAX) rc = tm_error_set(err, TM_ETOOLARGE, "footer too large");
  if (rc == TM_OK) rc = emit(w, footer.ptr, footer.len, err);
  if (rc == TM_OK) {
    uint32_t len = (uint32_t)footer.len;
    uint8_t tail[8] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24),
                       'P', 'A', 'R', '1'};
    rc = emit(w, tail, 8, err);
  }
  tm_buf_dispose(&footer);
  return rc;
}

int tm_parquet_writer_close(tm_parquet_writer *w, tm_error *err) {
  int rc = tm_parquet_writer_flush(w, err);
  if (rc == TM_OK) rc = write_footer(w, err);
  tm_parquet_writer_free(w);
  return rc;
}
