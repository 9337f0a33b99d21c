/*
 * datafile.c - writing Iceberg data and delete files as Parquet, split by
 * partition, with the metrics manifests carry (format layer). See writer.h.
 *
 * Each open file is built in memory by the Parquet writer and published
 * with an exclusive create through the table's io when it reaches the
 * target size or when the writer finishes. Metrics are accumulated from
 * the rows written (bounds, null and NaN counts) and from the file's own
 * footer (column sizes, row-group split offsets).
 *
 * Nested columns (struct, list, map at any depth; issue 16) are written with
 * the table's field id on every member (Parquet writer option nested_ids).
 * Their metrics are keyed by the primitive leaves' field ids, as Iceberg
 * wants: every leaf gets its column size; a leaf reached through structs
 * only also gets its value count (one per row), null count (rows where it
 * or an enclosing struct is NULL), NaN count and bounds. A leaf inside a
 * list or a map gets no counts or bounds: its values are counted per Parquet
 * level entry by other writers, so rather than approximate them we leave
 * them out (readers then do not prune on them, which is always correct).
 */
#include <math.h>
#include <string.h>

#include "format/arrow/render.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/writer.h"
#include "format/parquet/parquet.h"
#include "util/alloc.h"
#include "util/hash.h"

#define DEFAULT_TARGET_BYTES ((int64_t)64 << 20)
#define BOUND_PREFIX 16 /* string and binary bounds keep 16 bytes, as Iceberg's default */
#define WRITER_ARENA_LIMIT ((size_t)1 << 32)
#define POS_PATH_ID 2147483546
#define POS_POS_ID 2147483545
#define PATH_MAX_DEPTH TM_NTYPE_MAX_DEPTH

typedef struct col_acc {
  bool has;
  tm_value min, max;  /* payloads in min_buf / max_buf */
  tm_buf min_buf, max_buf;
  int64_t nulls, nans;
} col_acc;

/* A primitive member of a nested column, in Parquet leaf order (depth
 * first: struct fields in order, a list's element, a map's key then value). */
typedef struct leaf_info {
  int32_t id;                  /* its Iceberg field id */
  const tm_iceberg_type *type; /* primitive; owned by the table's metadata */
  bool repeated;               /* inside a list or a map: column size only */
  size_t depth;                /* !repeated: struct steps below the column */
  int path[TM_NTYPE_MAX_DEPTH];
} leaf_info;

typedef struct open_file {
  tm_value *partition; /* n_partition values, payloads in the writer's arena */
  tm_parquet_writer *pw;
  tm_buf bytes;
  int64_t rows;
  col_acc *acc;        /* one per written column, then one per nested leaf */
  char *key;           /* owned: partition key in the map */
} open_file;

struct tm_iceberg_data_writer {
  const tm_iceberg_table *t;
  const tm_iceberg_metadata *m;
  const tm_iceberg_spec *spec;
  tm_iceberg_data_writer_options o;
  tm_schema out;                 /* columns written, with field ids */
  tm_iceberg_type *types;        /* Iceberg type per written column */
  size_t max_cols;               /* entries of types and nested_ids */
  leaf_info *leaves;             /* the nested columns' primitive leaves, column by column */
  size_t n_leaves;
  size_t *leaf_start;            /* per written column: its first entry in leaves */
  size_t *leaf_n;                /* per written column: its entries (0 for flat columns) */
  int32_t **nested_ids;          /* per written column: id slots (schema.h), NULL when flat */
  tm_type *ptypes;               /* partition result types */
  int *pcol;                     /* per partition field: written column of its source, -1 */
  int *ppath;                    /* per partition field: PATH_MAX_DEPTH struct child indices
                                  * from the column down to a nested source */
  size_t *pdepth;                /* per partition field: steps used in ppath (0: the column) */
  const tm_iceberg_type **psrc;  /* per partition field: the source's Iceberg type */
  tm_map open;                   /* partition key -> open_file* */
  tm_iceberg_data_file *done;
  size_t n_done, cap_done;
  tm_arena arena;
  int64_t n_files;
  char uuid[37];
};

static void acc_dispose(col_acc *a) {
  tm_buf_dispose(&a->min_buf);
  tm_buf_dispose(&a->max_buf);
}

static void open_file_free(void *p) {
  open_file *f = p;
  if (!f) return;
  tm_parquet_writer_free(f->pw);
  tm_buf_dispose(&f->bytes);
  tm_free(f->key);
  tm_free(f->acc ? (void *)f->acc : NULL);
  tm_free(f);
}

static void free_open_file_accs(open_file *f, size_t n) {
  for (size_t i = 0; f->acc && i < n; i++) acc_dispose(&f->acc[i]);
}

/* ---- setup -------------------------------------------------------------------- */

/* Whether values of this Iceberg type (and of every member, for nested
 * types) can be written. */
static int check_writable(const char *name, const tm_iceberg_type *it, int depth, tm_error *err) {
  if (depth > PATH_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "column %s nests deeper than %d levels", name,
                        PATH_MAX_DEPTH);
  switch (it->id) {
    case TM_ICEBERG_UNKNOWN:
    case TM_ICEBERG_VARIANT:
    case TM_ICEBERG_GEOMETRY:
    case TM_ICEBERG_GEOGRAPHY:
      return tm_error_set(err, TM_EUNSUPPORTED, "column %s: writing %s values is not supported",
                          name, tm_iceberg_type_name(it->id));
    case TM_ICEBERG_STRUCT:
      for (size_t i = 0; i < it->n_fields; i++)
        TM_TRY(check_writable(name, it->fields[i].type, depth + 1, err));
      return TM_OK;
    case TM_ICEBERG_LIST: return check_writable(name, it->element->type, depth + 1, err);
    case TM_ICEBERG_MAP:
      TM_TRY(check_writable(name, it->key->type, depth + 1, err));
      return check_writable(name, it->value->type, depth + 1, err);
    default: return TM_OK;
  }
}

/* The members' field ids of a nested Iceberg type in id-slot order
 * (schema.h: depth first, each member followed by its subtree; a map's key
 * then its value), appended at ids[*n] (room for every slot). */
static void fill_id_slots(const tm_iceberg_type *it, int32_t *ids, size_t *n) {
  switch (it->id) {
    case TM_ICEBERG_STRUCT:
      for (size_t i = 0; i < it->n_fields; i++) {
        ids[(*n)++] = it->fields[i].id;
        fill_id_slots(it->fields[i].type, ids, n);
      }
      return;
    case TM_ICEBERG_LIST:
      ids[(*n)++] = it->element->id;
      fill_id_slots(it->element->type, ids, n);
      return;
    case TM_ICEBERG_MAP:
      ids[(*n)++] = it->key->id;
      fill_id_slots(it->key->type, ids, n);
      ids[(*n)++] = it->value->id;
      fill_id_slots(it->value->type, ids, n);
      return;
    default: return;
  }
}

/* Appends one leaf to w->leaves. */
static int push_leaf(tm_iceberg_data_writer *w, const tm_iceberg_field *f, const int *steps,
                     size_t depth, bool repeated, tm_error *err) {
  leaf_info *l = tm_reallocarray(w->leaves, w->n_leaves + 1, sizeof *l);
  if (!l) return tm_error_nomem(err);
  w->leaves = l;
  l = &w->leaves[w->n_leaves++];
  memset(l, 0, sizeof *l);
  l->id = f->id;
  l->type = f->type;
  l->repeated = repeated;
  l->depth = repeated ? 0 : depth;
  if (!repeated) memcpy(l->path, steps, depth * sizeof *steps);
  return TM_OK;
}

/* Appends the primitive leaves below the nested type it to w->leaves, in
 * Parquet leaf order; steps[0..depth): the struct path so far, repeated:
 * below a list or a map. */
static int collect_leaves(tm_iceberg_data_writer *w, const tm_iceberg_type *it, int *steps,
                          size_t depth, bool repeated, tm_error *err) {
  if (depth >= TM_NTYPE_MAX_DEPTH) return TM_OK; /* check_writable refused deeper types */
  if (it->id == TM_ICEBERG_STRUCT) {
    for (size_t i = 0; i < it->n_fields; i++) {
      const tm_iceberg_field *f = &it->fields[i];
      steps[depth] = (int)i;
      if (tm_iceberg_type_is_primitive(f->type)) {
        TM_TRY(push_leaf(w, f, steps, depth + 1, repeated, err));
      } else {
        TM_TRY(collect_leaves(w, f->type, steps, depth + 1, repeated, err));
      }
    }
    return TM_OK;
  }
  const tm_iceberg_field *kids[2] = {NULL, NULL};
  if (it->id == TM_ICEBERG_LIST) {
    kids[0] = it->element;
  } else if (it->id == TM_ICEBERG_MAP) {
    kids[0] = it->key;
    kids[1] = it->value;
  }
  for (size_t k = 0; k < 2 && kids[k]; k++) {
    if (tm_iceberg_type_is_primitive(kids[k]->type)) {
      TM_TRY(push_leaf(w, kids[k], steps, depth, true, err));
    } else {
      TM_TRY(collect_leaves(w, kids[k]->type, steps, depth, true, err));
    }
  }
  return TM_OK;
}

static int add_column(tm_iceberg_data_writer *w, const char *name, const tm_iceberg_type *it,
                      bool nullable, int32_t id, tm_error *err) {
  tm_type t;
  TM_TRY(check_writable(name, it, 0, err));
  size_t c = w->out.n_cols;
  if (tm_iceberg_type_is_primitive(it)) {
    TM_TRY(tm_iceberg_type_to_tm(it, &t, err));
  } else {
    /* Nested: the native type, and the table's id on every member. */
    TM_TRY(tm_iceberg_type_to_tm_native(it, &t, err));
    size_t n_slots = tm_type_id_slots(&t), n = 0;
    w->nested_ids[c] = tm_calloc(n_slots ? n_slots : 1, sizeof *w->nested_ids[c]);
    if (!w->nested_ids[c]) return tm_error_nomem(err);
    fill_id_slots(it, w->nested_ids[c], &n);
    if (n != n_slots)
      return tm_error_set(err, TM_EINVALID, "column %s: %zu member ids for %zu members", name, n,
                          n_slots);
    int steps[TM_NTYPE_MAX_DEPTH];
    w->leaf_start[c] = w->n_leaves;
    TM_TRY(collect_leaves(w, it, steps, 0, false, err));
    w->leaf_n[c] = w->n_leaves - w->leaf_start[c];
  }
  TM_TRY(tm_schema_add(&w->out, name, t, nullable, id, err));
  w->types[c] = *it;
  return TM_OK;
}

/* The path from a top-level field down to the field with id `id` through
 * structs only (Iceberg: a partition source is a primitive, not inside a
 * list or map). *top: the top-level field's index; steps: struct member
 * indices below it. TM_ENOTFOUND when no such path exists. */
static int struct_path(const tm_iceberg_type *st, int32_t id, int *steps, size_t depth,
                       size_t *n_steps) {
  if (depth >= PATH_MAX_DEPTH) return TM_ENOTFOUND;
  for (size_t i = 0; i < st->n_fields; i++) {
    const tm_iceberg_field *f = &st->fields[i];
    steps[depth] = (int)i;
    if (f->id == id) {
      *n_steps = depth + 1;
      return TM_OK;
    }
    if (f->type->id == TM_ICEBERG_STRUCT && struct_path(f->type, id, steps, depth + 1, n_steps) == TM_OK)
      return TM_OK;
  }
  return TM_ENOTFOUND;
}

int tm_iceberg_data_writer_new(tm_iceberg_data_writer **out, const tm_iceberg_table *t,
                               const tm_iceberg_data_writer_options *opts, tm_error *err) {
  tm_iceberg_data_writer *w = tm_calloc(1, sizeof *w);
  if (!w) return tm_error_nomem(err);
  int rc;
  tm_iceberg_data_writer_options dflt = TM_ICEBERG_DATA_WRITER_OPTIONS_INIT;
  w->o = opts ? *opts : dflt;
  if (w->o.target_file_bytes <= 0) w->o.target_file_bytes = DEFAULT_TARGET_BYTES;
  w->t = t;
  w->m = tm_iceberg_table_metadata(t);
  tm_schema_init(&w->out);
  tm_map_init(&w->open);
  tm_arena_init(&w->arena, WRITER_ARENA_LIMIT);
  tm_iceberg_uuid(w->uuid);
  const tm_iceberg_schema *schema = tm_iceberg_metadata_current_schema(w->m);
  bool is_data = w->o.content == TM_ICEBERG_CONTENT_DATA;
  w->spec = tm_iceberg_metadata_spec(w->m, is_data ? w->m->default_spec_id : w->o.spec_id);
  if (!w->spec) {
    rc = tm_error_set(err, TM_EINVALID, "unknown partition spec %d", (int)w->o.spec_id);
    goto done;
  }
  size_t max_cols = schema->root->n_fields + 2 + w->o.n_equality_ids;
  w->types = tm_calloc(max_cols, sizeof *w->types);
  w->nested_ids = tm_calloc(max_cols, sizeof *w->nested_ids);
  w->leaf_start = tm_calloc(max_cols, sizeof *w->leaf_start);
  w->leaf_n = tm_calloc(max_cols, sizeof *w->leaf_n);
  w->max_cols = max_cols;
  if (!w->types || !w->nested_ids || !w->leaf_start || !w->leaf_n) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (is_data) {
    for (size_t i = 0; i < schema->root->n_fields; i++) {
      const tm_iceberg_field *f = &schema->root->fields[i];
      /* v3 "unknown" columns are always null and not stored in data files. */
      if (f->type->id == TM_ICEBERG_UNKNOWN) continue;
      TM_CHECK(add_column(w, f->name, f->type, !f->required, f->id, err));
    }
  } else if (w->o.content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
    tm_iceberg_type str = {0}, lng = {0};
    str.id = TM_ICEBERG_STRING;
    lng.id = TM_ICEBERG_LONG;
    TM_CHECK(add_column(w, "file_path", &str, false, POS_PATH_ID, err));
    TM_CHECK(add_column(w, "pos", &lng, false, POS_POS_ID, err));
  } else if (w->o.content == TM_ICEBERG_CONTENT_EQUALITY_DELETES) {
    if (!w->o.n_equality_ids) {
      rc = tm_error_set(err, TM_EINVALID, "equality deletes need equality columns");
      goto done;
    }
    for (size_t i = 0; i < w->o.n_equality_ids; i++) {
      const tm_iceberg_field *f = tm_iceberg_schema_find_id(schema, w->o.equality_ids[i]);
      if (!f) {
        rc = tm_error_set(err, TM_EINVALID, "equality column %d is not in the schema",
                          (int)w->o.equality_ids[i]);
        goto done;
      }
      if (!tm_iceberg_type_is_primitive(f->type)) {
        /* Iceberg: equality fields are primitive columns. */
        rc = tm_error_set(err, TM_EINVALID, "equality column %s is a %s, not a primitive column",
                          f->name, tm_iceberg_type_name(f->type->id));
        goto done;
      }
      TM_CHECK(add_column(w, f->name, f->type, !f->required, f->id, err));
    }
  } else {
    rc = tm_error_set(err, TM_EINVALID, "unknown content kind %d", w->o.content);
    goto done;
  }
  size_t np = w->spec->n_fields;
  w->ptypes = tm_calloc(np ? np : 1, sizeof *w->ptypes);
  w->pcol = tm_calloc(np ? np : 1, sizeof *w->pcol);
  w->psrc = tm_calloc(np ? np : 1, sizeof *w->psrc);
  w->ppath = tm_calloc((np ? np : 1) * PATH_MAX_DEPTH, sizeof *w->ppath);
  w->pdepth = tm_calloc(np ? np : 1, sizeof *w->pdepth);
  if (!w->ptypes || !w->pcol || !w->psrc || !w->ppath || !w->pdepth) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < np; i++) {
    const tm_iceberg_partition_field *pf = &w->spec->fields[i];
    const tm_iceberg_field *src = tm_iceberg_schema_find_id(schema, pf->source_id);
    if (!src) {
      rc = tm_error_set(err, TM_EINVALID, "partition source column %d is not in the schema",
                        (int)pf->source_id);
      goto done;
    }
    w->psrc[i] = src->type;
    TM_CHECK(tm_iceberg_transform_result(&pf->transform, src->type, &w->ptypes[i], err));
    w->pcol[i] = -1;
    for (size_t k = 0; k < w->out.n_cols; k++) {
      if (w->out.cols[k].field_id == pf->source_id) w->pcol[i] = (int)k;
    }
    /* A member of structs: the written column holding it and the way down. */
    int *steps = &w->ppath[i * PATH_MAX_DEPTH];
    size_t n_steps = 0;
    if (is_data && w->pcol[i] < 0 &&
        struct_path(schema->root, pf->source_id, steps, 0, &n_steps) == TM_OK) {
      if (!tm_iceberg_type_is_primitive(src->type)) {
        rc = tm_error_set(err, TM_EINVALID, "partition source %s is not a primitive", src->name);
        goto done;
      }
      const char *top = schema->root->fields[steps[0]].name;
      for (size_t k = 0; k < w->out.n_cols; k++) {
        if (strcmp(w->out.cols[k].name, top) == 0) w->pcol[i] = (int)k;
      }
      memmove(steps, steps + 1, (n_steps - 1) * sizeof *steps);
      w->pdepth[i] = n_steps - 1;
    } else if (is_data && w->pcol[i] < 0) {
      rc = tm_error_set(err, TM_EINVALID,
                        "partition source %s is inside a list or map (a source must be a "
                        "primitive column or a member of structs)",
                        src->name);
      goto done;
    }
    if (is_data && w->pcol[i] < 0) {
      rc = tm_error_set(err, TM_EINVALID, "partition source %s is not written", src->name);
      goto done;
    }
  }
  *out = w;
  return TM_OK;
done:
  tm_iceberg_data_writer_free(w);
  return rc;
}

const tm_schema *tm_iceberg_data_writer_schema(const tm_iceberg_data_writer *w) {
  return &w->out;
}

/* ---- metrics ------------------------------------------------------------------- */

static bool is_bytes(tm_type_id t) {
  return t == TM_TYPE_UTF8 || t == TM_TYPE_BINARY || t == TM_TYPE_FIXED_BINARY;
}

static int keep_value(tm_value *dst, tm_buf *buf, const tm_value *v, tm_error *err) {
  *dst = *v;
  if (!is_bytes(v->type)) return TM_OK;
  tm_buf_clear(buf);
  TM_TRY(tm_buf_append(buf, v->v.s.ptr, v->v.s.len, err));
  dst->v.s.ptr = buf->ptr ? buf->ptr : "";
  return TM_OK;
}

/* Counts one value into a column's (or leaf's) metrics. */
static int acc_value(col_acc *a, const tm_value *v, tm_error *err) {
  if (v->is_null) {
    a->nulls++;
    return TM_OK;
  }
  if ((v->type == TM_TYPE_FLOAT32 || v->type == TM_TYPE_FLOAT64) && isnan(v->v.f)) {
    a->nans++;
    return TM_OK;
  }
  if (!a->has || tm_value_cmp(v, &a->min) < 0) TM_TRY(keep_value(&a->min, &a->min_buf, v, err));
  if (!a->has || tm_value_cmp(v, &a->max) > 0) TM_TRY(keep_value(&a->max, &a->max_buf, v, err));
  a->has = true;
  return TM_OK;
}

static int accumulate(const tm_iceberg_data_writer *w, open_file *of, const tm_batch *b,
                      tm_error *err) {
  for (size_t c = 0; c < b->schema.n_cols; c++) {
    tm_colview cv = tm_batch_col(b, c);
    if (!tm_type_is_nested(&cv.type)) {
      for (int64_t i = 0; i < b->n_rows; i++) {
        tm_value v;
        tm_colview_get(&cv, i, &v);
        TM_TRY(acc_value(&of->acc[c], &v, err));
      }
      continue;
    }
    /* A nested column: its leaves reached through structs only, one value
     * per row, NULL where an enclosing struct is. */
    for (size_t k = w->leaf_start[c]; k < w->leaf_start[c] + w->leaf_n[c]; k++) {
      const leaf_info *l = &w->leaves[k];
      if (l->repeated) continue;
      tm_colview chain[TM_NTYPE_MAX_DEPTH + 1];
      chain[0] = cv;
      for (size_t d = 0; d < l->depth; d++)
        chain[d + 1] = tm_colview_child(&chain[d], (size_t)l->path[d]);
      col_acc *a = &of->acc[w->out.n_cols + k];
      for (int64_t i = 0; i < b->n_rows; i++) {
        tm_value v;
        tm_colview_get(&chain[l->depth], i, &v);
        for (size_t d = 0; d < l->depth && !v.is_null; d++)
          v.is_null = tm_colview_is_null(&chain[d], i);
        TM_TRY(acc_value(a, &v, err));
      }
    }
  }
  return TM_OK;
}

/* A prefix of s cut at a UTF-8 character boundary, at most max bytes. */
static size_t utf8_cut(const char *s, size_t len, size_t max) {
  if (len <= max) return len;
  size_t n = max;
  while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
  return n;
}

/* Bounds in the single-value serialisation; long strings keep a prefix as
 * the lower bound and no upper bound (an incremented prefix could be
 * invalid UTF-8). */
static int bound_bytes(tm_arena *a, const tm_iceberg_type *t, const tm_value *v, bool upper,
                       tm_strview *out, bool *has, tm_error *err) {
  tm_value x = *v;
  if (t->id == TM_ICEBERG_STRING || t->id == TM_ICEBERG_BINARY) {
    size_t n = t->id == TM_ICEBERG_STRING ? utf8_cut(v->v.s.ptr, v->v.s.len, BOUND_PREFIX)
                                          : (v->v.s.len < BOUND_PREFIX ? v->v.s.len : BOUND_PREFIX);
    if (n < v->v.s.len) {
      if (upper) {
        *has = false;
        return TM_OK;
      }
      x.v.s.len = n;
    }
  }
  tm_buf b = TM_BUF_INIT(1 << 20);
  int rc = tm_iceberg_value_to_bytes(t, &x, &b, err);
  char *p = rc == TM_OK ? tm_arena_strndup(a, b.ptr ? b.ptr : "", b.len, err) : NULL;
  if (rc == TM_OK && !p) rc = err->code;
  if (rc == TM_OK) {
    *out = tm_sv(p, b.len);
    *has = true;
  }
  tm_buf_dispose(&b);
  return rc;
}

/* Column sizes and split offsets from the written file's footer. */
static int footer_metrics(tm_iceberg_data_writer *w, open_file *of, tm_iceberg_data_file *d,
                          tm_error *err) {
  tm_input *in = NULL;
  tm_parquet_file *pf = NULL;
  TM_TRY(tm_input_open_memory(&in, "new data file", of->bytes.ptr, of->bytes.len, false, err));
  TM_TRY(tm_parquet_open(&pf, in, NULL, err));
  size_t n_rg = tm_parquet_num_row_groups(pf), n_leaves = tm_parquet_num_leaves(pf);
  int rc = TM_OK;
  d->split_offsets = tm_arena_calloc(&w->arena, n_rg ? n_rg : 1, sizeof *d->split_offsets, err);
  if (!d->split_offsets) rc = err->code;
  for (size_t rg = 0; rc == TM_OK && rg < n_rg; rg++) {
    int64_t first = -1;
    for (size_t l = 0; rc == TM_OK && l < n_leaves; l++) {
      tm_parquet_chunk_info ci;
      rc = tm_parquet_chunk_info_at(pf, rg, l, &ci, err);
      if (rc < 0) break;
      int64_t start = ci.dictionary_page_offset >= 0 && ci.dictionary_page_offset < ci.data_page_offset
                          ? ci.dictionary_page_offset
                          : ci.data_page_offset;
      if (first < 0 || start < first) first = start;
      /* The leaf's field id: the column's, or its nested member's. */
      int32_t id = -1;
      if (ci.field < w->out.n_cols && !w->nested_ids[ci.field]) {
        id = w->out.cols[ci.field].field_id;
      } else if (ci.field < w->out.n_cols) {
        size_t first_leaf = tm_parquet_field_at(pf, ci.field)->first_leaf;
        if (l >= first_leaf && l - first_leaf < w->leaf_n[ci.field])
          id = w->leaves[w->leaf_start[ci.field] + (l - first_leaf)].id;
      }
      tm_iceberg_col_stats *st = NULL;
      for (size_t k = 0; id >= 0 && k < d->n_stats; k++) {
        if (d->stats[k].field_id == id) st = &d->stats[k];
      }
      if (st && st->column_size >= 0) {
        st->column_size += ci.compressed_size;
      } else if (st) {
        st->column_size = ci.compressed_size;
      }
    }
    d->split_offsets[rg] = first;
  }
  d->n_split_offsets = n_rg;
  tm_parquet_close(pf);
  return rc;
}

static void render_part(tm_buf *path, const tm_type *t, const tm_value *v) {
  tm_buf text = TM_BUF_INIT(1 << 16);
  tm_error ignore;
  if (v->is_null || tm_value_render(&text, t, v, &ignore) < 0) {
    tm_buf_clear(&text);
    (void)!tm_buf_puts(&text, "null", &ignore);
  }
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < text.len; i++) {
    unsigned char ch = (unsigned char)text.ptr[i];
    bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '-' || ch == '_' || ch == '.';
    if (plain) {
      (void)!tm_buf_putc(path, (char)ch, &ignore);
    } else {
      char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      (void)!tm_buf_append(path, e, 3, &ignore);
    }
  }
  tm_buf_dispose(&text);
}

/* Closes, publishes and describes one open file. */
static int close_file(tm_iceberg_data_writer *w, open_file *of, tm_error *err) {
  int rc = tm_parquet_writer_close(of->pw, err);
  of->pw = NULL;
  if (rc < 0) return rc;
  tm_buf rel = TM_BUF_INIT(1 << 16);
  TM_TRY(tm_buf_puts(&rel, "data/", err));
  for (size_t i = 0; i < w->spec->n_fields; i++) {
    TM_TRY(tm_buf_printf(&rel, err, "%s=", w->spec->fields[i].name));
    render_part(&rel, &w->ptypes[i], &of->partition[i]);
    TM_TRY(tm_buf_putc(&rel, '/', err));
  }
  const char *kind = w->o.content == TM_ICEBERG_CONTENT_DATA ? ""
                     : w->o.content == TM_ICEBERG_CONTENT_POSITION_DELETES ? "-pos-deletes"
                                                                          : "-eq-deletes";
  rc = tm_buf_printf(&rel, err, "%s-%05lld%s.parquet", w->uuid, (long long)++w->n_files, kind);
  const char *path = rc == TM_OK ? tm_iceberg__location_path(&w->arena, w->t, rel.ptr, err) : NULL;
  tm_buf_dispose(&rel);
  if (!path) return rc < 0 ? rc : err->code;
  TM_TRY(tm_iceberg__write_file(w->t, path, of->bytes.ptr, of->bytes.len, true, err));
  if (w->n_done == w->cap_done) {
    size_t cap = w->cap_done ? w->cap_done * 2 : 8;
    tm_iceberg_data_file *v = tm_arena_calloc(&w->arena, cap, sizeof *v, err);
    if (!v) return err->code;
    if (w->n_done) memcpy(v, w->done, w->n_done * sizeof *v);
    w->done = v;
    w->cap_done = cap;
  }
  tm_iceberg_data_file *d = &w->done[w->n_done];
  memset(d, 0, sizeof *d);
  d->path = path;
  d->format = "PARQUET";
  d->content = w->o.content;
  d->spec_id = w->spec->spec_id;
  d->partition = of->partition;
  d->n_partition = w->spec->n_fields;
  d->record_count = of->rows;
  d->file_size = (int64_t)of->bytes.len;
  d->sort_order_id = -1;
  size_t nc = w->out.n_cols;
  d->stats = tm_arena_calloc(&w->arena, nc + w->n_leaves ? nc + w->n_leaves : 1, sizeof *d->stats,
                             err);
  if (!d->stats) return err->code;
  size_t ns = 0;
  for (size_t c = 0; c < nc + w->n_leaves; c++) {
    /* Flat columns, then the nested columns' leaves (by their own ids). */
    if (c < nc && w->nested_ids[c]) continue;
    const leaf_info *l = c < nc ? NULL : &w->leaves[c - nc];
    const tm_iceberg_type *ty = l ? l->type : &w->types[c];
    tm_iceberg_col_stats *s = &d->stats[ns++];
    col_acc *a = &of->acc[c];
    s->field_id = l ? l->id : w->out.cols[c].field_id;
    s->column_size = -1;
    if (l && l->repeated) {
      /* Column size only (see the top of the file). */
      s->value_count = s->null_count = s->nan_count = -1;
      continue;
    }
    s->value_count = of->rows;
    s->null_count = a->nulls;
    bool fl = ty->id == TM_ICEBERG_FLOAT || ty->id == TM_ICEBERG_DOUBLE;
    s->nan_count = fl ? a->nans : -1;
    if (a->has) {
      TM_TRY(bound_bytes(&w->arena, ty, &a->min, false, &s->lower, &s->has_lower, err));
      TM_TRY(bound_bytes(&w->arena, ty, &a->max, true, &s->upper, &s->has_upper, err));
    }
  }
  d->n_stats = ns;
  if (w->o.content == TM_ICEBERG_CONTENT_EQUALITY_DELETES) {
    d->equality_ids = tm_arena_calloc(&w->arena, w->o.n_equality_ids, sizeof *d->equality_ids, err);
    if (!d->equality_ids) return err->code;
    memcpy(d->equality_ids, w->o.equality_ids, w->o.n_equality_ids * sizeof *d->equality_ids);
    d->n_equality_ids = w->o.n_equality_ids;
  }
  TM_TRY(footer_metrics(w, of, d, err));
  w->n_done++;
  return TM_OK;
}

/* ---- writing ------------------------------------------------------------------- */

static int open_new(tm_iceberg_data_writer *w, const char *key, size_t key_len,
                    const tm_value *part, open_file **out, tm_error *err) {
  open_file *of = tm_calloc(1, sizeof *of);
  if (!of) return tm_error_nomem(err);
  int rc;
  tm_buf_init(&of->bytes, (size_t)w->o.target_file_bytes * 4 + ((size_t)256 << 20));
  size_t n_acc = w->out.n_cols + w->n_leaves;
  of->acc = tm_calloc(n_acc ? n_acc : 1, sizeof *of->acc);
  of->key = tm_strndup(key, key_len);
  size_t np = w->spec->n_fields;
  of->partition = tm_arena_calloc(&w->arena, np ? np : 1, sizeof *of->partition, err);
  if (!of->acc || !of->key || !of->partition) {
    rc = of->partition ? tm_error_nomem(err) : err->code;
    goto fail;
  }
  for (size_t c = 0; c < n_acc; c++) {
    tm_buf_init(&of->acc[c].min_buf, (size_t)1 << 24);
    tm_buf_init(&of->acc[c].max_buf, (size_t)1 << 24);
  }
  for (size_t i = 0; i < np; i++) {
    of->partition[i] = part[i];
    if (!part[i].is_null && is_bytes(part[i].type)) {
      char *p = tm_arena_strndup(&w->arena, part[i].v.s.ptr, part[i].v.s.len, err);
      if (!p) {
        rc = err->code;
        goto fail;
      }
      of->partition[i].v.s.ptr = p;
    }
  }
  tm_parquet_writer_options po = TM_PARQUET_WRITER_OPTIONS_INIT;
  po.row_group_bytes = (size_t)(w->o.target_file_bytes < ((int64_t)16 << 20)
                                    ? w->o.target_file_bytes
                                    : ((int64_t)16 << 20));
  po.nested_ids = (const int32_t *const *)w->nested_ids;
  rc = tm_parquet_writer_new(&of->pw, &w->out, &po, tm_parquet_sink_buf, &of->bytes, err);
  if (rc < 0) goto fail;
  rc = tm_map_put(&w->open, key, key_len, of, NULL, err);
  if (rc < 0) goto fail;
  *out = of;
  return TM_OK;
fail:
  free_open_file_accs(of, w->out.n_cols + w->n_leaves);
  open_file_free(of);
  return rc;
}

static int append_rows(tm_iceberg_data_writer *w, open_file *of, const tm_batch *b,
                       tm_error *err) {
  TM_TRY(accumulate(w, of, b, err));
  TM_TRY(tm_parquet_writer_write(of->pw, b, err));
  of->rows += b->n_rows;
  if ((int64_t)of->bytes.len >= w->o.target_file_bytes) {
    tm_map_remove(&w->open, of->key, strlen(of->key));
    int rc = close_file(w, of, err);
    free_open_file_accs(of, w->out.n_cols + w->n_leaves);
    open_file_free(of);
    return rc;
  }
  return TM_OK;
}

/*
 * Checks that no member the table declares required (a struct field, a list
 * element, a map value) holds a NULL where its parent is a value. cv has the
 * table's type; live: one bit per row of cv, set where every enclosing value
 * is present (NULL: every row). path: the member's dotted name, for errors.
 */
static int check_required(const tm_colview *cv, const uint8_t *live, const char *path,
                          tm_error *err) {
  if (!tm_type_is_nested(&cv->type)) return TM_OK;
  const tm_ntype *nt = cv->type.nested;
  bool is_struct = cv->type.id == TM_TYPE_STRUCT;
  const int32_t *off = cv->values;
  int rc = TM_OK;
  for (size_t k = 0; k < nt->n && rc == TM_OK; k++) {
    tm_colview ch = tm_colview_child(cv, k);
    /* The rows of the child whose parents are all present. */
    uint8_t *clive = tm_calloc((size_t)(ch.length + 7) / 8 + 1, 1);
    if (!clive) return tm_error_nomem(err);
    for (int64_t i = 0; i < cv->length; i++) {
      if ((live && !tm_bit_get(live, i)) || tm_colview_is_null(cv, i)) continue;
      if (is_struct) {
        tm_bit_set(clive, i);
      } else {
        for (int64_t j = off[i]; j < off[i + 1] && j < ch.length; j++) tm_bit_set(clive, j);
      }
    }
    char sub[512];
    /* A map's entries struct is no member of its own: its key and value are. */
    if (cv->type.id == TM_TYPE_MAP)
      snprintf(sub, sizeof sub, "%s", path);
    else
      snprintf(sub, sizeof sub, "%s.%s", path, nt->name[k]);
    if (!nt->nullable[k] && ch.validity) {
      for (int64_t j = 0; j < ch.length; j++) {
        if (tm_bit_get(clive, j) && tm_colview_is_null(&ch, j)) {
          rc = tm_error_set(err, TM_EINVALID, "required member %s has NULL values", sub);
          break;
        }
      }
    }
    if (rc == TM_OK) rc = check_required(&ch, clive, sub, err);
    tm_free(clive);
  }
  return rc;
}

/* The same kinds of struct, list and map with the same number of members
 * all the way down; leaves may differ. */
static bool same_shape(const tm_type *a, const tm_type *b, int depth) {
  if (tm_type_is_nested(a) != tm_type_is_nested(b)) return false;
  if (!tm_type_is_nested(a)) return true;
  if (a->id != b->id || a->nested->n != b->nested->n || depth > TM_NTYPE_MAX_DEPTH) return false;
  for (size_t k = 0; k < a->nested->n; k++)
    if (!same_shape(&a->nested->child[k], &b->nested->child[k], depth + 1)) return false;
  return true;
}

/*
 * Appends rows [from, from + n) of src to cb, whose type has src's shape,
 * converting leaf values the way Iceberg promotes types (int16 -> int,
 * uint32 -> long, ...; tm_iceberg__convert_value). For the rare input whose
 * leaves are not the table's exact types (e.g. a file with SMALLINT members
 * appended to the table created from it); the same layout is copied whole.
 */
static int append_converted(tm_colbuilder *cb, const tm_colview *src, int64_t from, int64_t n,
                            const char *col, tm_error *err) {
  if (!tm_type_is_nested(&cb->type)) {
    for (int64_t i = from; i < from + n; i++) {
      tm_value v, c;
      tm_colview_get(src, i, &v);
      if (!tm_iceberg__convert_value(&v, &src->type, &cb->type, &c)) {
        char a[64], b[64];
        tm_type_name(&src->type, a, sizeof a);
        tm_type_name(&cb->type, b, sizeof b);
        return tm_error_set(err, TM_EINVALID, "column %s: a %s member value does not convert to %s",
                            col, a, b);
      }
      TM_TRY(tm_colbuilder_append_value(cb, &c, err));
    }
    return TM_OK;
  }
  const int32_t *off = src->values;
  for (int64_t i = from; i < from + n; i++) {
    if (tm_colview_is_null(src, i)) {
      TM_TRY(tm_colbuilder_append_null(cb, err));
      continue;
    }
    for (size_t k = 0; k < cb->n_children; k++) {
      tm_colview ch = tm_colview_child(src, k);
      if (cb->type.id == TM_TYPE_STRUCT) {
        TM_TRY(append_converted(tm_colbuilder_child(cb, k), &ch, i, 1, col, err));
      } else {
        TM_TRY(append_converted(tm_colbuilder_child(cb, k), &ch, off[i], off[i + 1] - off[i], col,
                                err));
      }
    }
    TM_TRY(tm_colbuilder_append_nested(cb, err));
  }
  return TM_OK;
}

/* A nested input column as the table's column (names and requiredness are
 * the table's), copied into *out: the same layout whole, the same shape
 * with leaves converted. */
static int conform_nested(const tm_column *col, const tm_colview *cv, int64_t n,
                          struct ArrowArray *out, tm_error *err) {
  bool same = tm_type_same_layout(&cv->type, &col->type);
  if (!same && !same_shape(&cv->type, &col->type, 0)) {
    char a[256], b[256];
    tm_type_name(&cv->type, a, sizeof a);
    tm_type_name(&col->type, b, sizeof b);
    return tm_error_set(err, TM_EINVALID, "column %s: the input's type %s is not the table's %s",
                        col->name, a, b);
  }
  TM_TRY(tm_colview_check(cv, err));
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, col->type, 0);
  int rc = same ? tm_colbuilder_append_range(&cb, cv, 0, n, err)
                : append_converted(&cb, cv, 0, n, col->name, err);
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  if (rc < 0) return rc;
  tm_colview mine = tm_colview_of(out, &col->type);
  rc = check_required(&mine, NULL, col->name, err);
  if (rc < 0) {
    out->release(out);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

/* The input batch as the written columns: by name, converted. */
static int conform(tm_iceberg_data_writer *w, const tm_batch *in, tm_batch *out, tm_error *err) {
  size_t n = w->out.n_cols;
  struct ArrowArray *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  int rc = TM_OK;
  size_t built = 0;
  for (size_t c = 0; c < n && rc == TM_OK; c++) {
    const tm_column *col = &w->out.cols[c];
    int src = tm_schema_find(&in->schema, col->name);
    if (src < 0) src = tm_schema_find_nocase(&in->schema, col->name);
    if (src < 0) {
      if (!col->nullable) {
        rc = tm_error_set(err, TM_EINVALID, "required column %s is missing from the input",
                          col->name);
        break;
      }
      rc = tm_array_make_nulls(col->type, in->n_rows, &cols[c], err);
    } else {
      tm_colview cv = tm_batch_col(in, (size_t)src);
      if (!col->nullable && cv.null_count > 0) {
        rc = tm_error_set(err, TM_EINVALID, "required column %s has NULL values", col->name);
        break;
      }
      if (tm_type_is_nested(&col->type)) {
        rc = conform_nested(col, &cv, in->n_rows, &cols[c], err);
      } else {
        rc = tm_iceberg__convert_column(&cv, &col->type, in->n_rows, &cols[c], col->name, err);
      }
    }
    if (rc == TM_OK) built = c + 1;
  }
  for (size_t i = 0; rc == TM_OK && i < in->schema.n_cols; i++) {
    if (tm_schema_find_nocase(&w->out, in->schema.cols[i].name) < 0) {
      rc = tm_error_set(err, TM_EINVALID, "input column %s is not in the table",
                        in->schema.cols[i].name);
    }
  }
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, &w->out, cols, in->n_rows, err);
    built = 0;
  }
  for (size_t i = 0; i < built; i++)
    if (cols[i].release) cols[i].release(&cols[i]);
  tm_free(cols);
  return rc;
}

/* The canonical key of a partition tuple. */
static int part_key(int32_t spec_id, const tm_value *vals, size_t n, tm_buf *out, tm_error *err) {
  tm_iceberg_data_file f;
  memset(&f, 0, sizeof f);
  f.spec_id = spec_id;
  f.partition = (tm_value *)vals;
  f.n_partition = n;
  tm_buf_clear(out);
  return tm_iceberg__partition_key(&f, out, err);
}

int tm_iceberg_data_writer_write(tm_iceberg_data_writer *w, const tm_batch *b, tm_error *err) {
  if (b->n_rows == 0) return TM_OK;
  tm_batch conv;
  tm_batch_init(&conv);
  TM_TRY(conform(w, b, &conv, err));
  size_t np = w->spec->n_fields;
  tm_buf key = TM_BUF_INIT(1 << 20);
  int rc = TM_OK;
  if (w->o.content != TM_ICEBERG_CONTENT_DATA || np == 0) {
    /* One partition for the whole batch. */
    const tm_value *part = w->o.partition;
    tm_value none[1];
    if (!part || np == 0) part = none;
    rc = part_key(w->spec->spec_id, part, np, &key, err);
    open_file *of = rc == TM_OK ? tm_map_get(&w->open, key.ptr, key.len, NULL) : NULL;
    if (rc == TM_OK && !of) rc = open_new(w, key.ptr, key.len, part, &of, err);
    if (rc == TM_OK) rc = append_rows(w, of, &conv, err);
    tm_buf_dispose(&key);
    tm_batch_release(&conv);
    return rc;
  }
  /* Data: group rows by their partition tuple. */
  int64_t n = conv.n_rows;
  tm_value *part = tm_calloc(np, sizeof *part);
  size_t *group = tm_calloc((size_t)n, sizeof *group);
  tm_map groups;
  tm_map_init(&groups);
  size_t n_groups = 0;
  tm_value *firsts = tm_calloc((size_t)n * np, sizeof *firsts); /* each group's tuple */
  if (!part || !group || !firsts) rc = tm_error_nomem(err);
  for (int64_t i = 0; rc == TM_OK && i < n; i++) {
    for (size_t k = 0; k < np && rc == TM_OK; k++) {
      tm_colview cv = tm_batch_col(&conv, (size_t)w->pcol[k]);
      tm_value v;
      uint8_t scratch[16];
      /* A struct member is NULL where an enclosing struct is. */
      bool parent_null = false;
      for (size_t d = 0; d < w->pdepth[k]; d++) {
        parent_null = parent_null || tm_colview_is_null(&cv, i);
        cv = tm_colview_child(&cv, (size_t)w->ppath[k * PATH_MAX_DEPTH + d]);
      }
      tm_colview_get(&cv, i, &v);
      if (parent_null) {
        v.is_null = true;
        v.v.u = 0;
      }
      rc = tm_iceberg_transform_apply(&w->spec->fields[k].transform, w->psrc[k], &v, &part[k],
                                      scratch, err);
    }
    if (rc == TM_OK) rc = part_key(w->spec->spec_id, part, np, &key, err);
    if (rc < 0) break;
    bool found = false;
    void *gv = tm_map_get(&groups, key.ptr, key.len, &found);
    if (found) {
      group[i] = (size_t)(uintptr_t)gv;
    } else {
      group[i] = n_groups;
      memcpy(&firsts[n_groups * np], part, np * sizeof *part);
      rc = tm_map_put(&groups, key.ptr, key.len, (void *)(uintptr_t)n_groups, NULL, err);
      n_groups++;
    }
  }
  size_t nbytes = (size_t)(n + 7) / 8;
  uint8_t *keep = rc == TM_OK ? tm_malloc(nbytes) : NULL;
  if (rc == TM_OK && !keep) rc = tm_error_nomem(err);
  for (size_t g = 0; rc == TM_OK && g < n_groups; g++) {
    memset(keep, 0, nbytes);
    for (int64_t i = 0; i < n; i++)
      if (group[i] == g) tm_bit_set(keep, i);
    tm_batch sub;
    tm_batch_init(&sub);
    rc = n_groups == 1 ? TM_OK : tm_batch_filter(&conv, keep, &sub, err);
    if (rc < 0) break;
    const tm_batch *rows = n_groups == 1 ? &conv : &sub;
    rc = part_key(w->spec->spec_id, &firsts[g * np], np, &key, err);
    open_file *of = rc == TM_OK ? tm_map_get(&w->open, key.ptr, key.len, NULL) : NULL;
    if (rc == TM_OK && !of) rc = open_new(w, key.ptr, key.len, &firsts[g * np], &of, err);
    if (rc == TM_OK) rc = append_rows(w, of, rows, err);
    tm_batch_release(&sub);
  }
  tm_free(keep);
  tm_free(part);
  tm_free(group);
  tm_free(firsts);
  tm_map_dispose(&groups, NULL);
  tm_buf_dispose(&key);
  tm_batch_release(&conv);
  return rc;
}

int tm_iceberg_data_writer_finish(tm_iceberg_data_writer *w, tm_error *err) {
  int rc = TM_OK;
  size_t pos = 0;
  const char *k;
  void *v;
  /* Close in a stable order: collect first, since closing edits the map. */
  size_t n = w->open.len;
  open_file **files = tm_calloc(n ? n : 1, sizeof *files);
  if (!files) return tm_error_nomem(err);
  size_t m = 0;
  while (tm_map_next(&w->open, &pos, &k, &v)) files[m++] = v;
  for (size_t i = 0; i < m; i++) {
    tm_map_remove(&w->open, files[i]->key, strlen(files[i]->key));
    if (rc == TM_OK) rc = close_file(w, files[i], err);
    free_open_file_accs(files[i], w->out.n_cols + w->n_leaves);
    open_file_free(files[i]);
  }
  tm_free(files);
  return rc;
}

size_t tm_iceberg_data_writer_files(const tm_iceberg_data_writer *w,
                                    const tm_iceberg_data_file **out) {
  *out = w->done;
  return w->n_done;
}

void tm_iceberg_data_writer_free(tm_iceberg_data_writer *w) {
  if (!w) return;
  size_t pos = 0;
  const char *k;
  void *v;
  while (tm_map_next(&w->open, &pos, &k, &v)) free_open_file_accs(v, w->out.n_cols + w->n_leaves);
  tm_map_dispose(&w->open, open_file_free);
  tm_schema_dispose(&w->out);
  for (size_t i = 0; w->nested_ids && i < w->max_cols; i++) tm_free(w->nested_ids[i]);
  tm_free(w->nested_ids);
  tm_free(w->leaves);
  tm_free(w->leaf_start);
  tm_free(w->leaf_n);
  tm_free(w->types);
  tm_free(w->ptypes);
  tm_free(w->ppath);
  tm_free(w->pdepth);
  tm_free(w->pcol);
  tm_free(w->psrc);
  tm_arena_dispose(&w->arena);
  tm_free(w);
}
