/*
 * scan.c - streaming a Parquet file as batches: projection, row-group
 * selection and pruning, one read per column chunk (format layer, parquet).
 * See parquet.h.
 *
 * A scan keeps the projected column chunks of one row group in memory (one
 * tm_input read each) and cuts batches of at most batch_rows rows out of
 * them; batches never span row groups. Chunks of the next row group are
 * read only when the current one is exhausted.
 */
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

/* parquet-mr before 1.2.9 left the dictionary page header out of the chunk
 * size; this is the most such a header takes. */
#define MAX_DICT_HEADER 100
#define MAX_CHUNK ((uint64_t)2 << 30)
/* Level entries of one nested leaf in one row group (a byte each for
 * repetition and definition). */
#define MAX_NESTED_LEVELS ((int64_t)1 << 26)

/* A nested field read as JSON text: its leaves' chunks of the current row
 * group, decoded whole at open (levels and values), rendered row by row. */
typedef struct nested_col {
  tm_pq_ntree *tree;
  bool native;            /* Arrow nested arrays (else JSON text) */
  size_t n;              /* leaves */
  tm_pq_column **cols;   /* n */
  tm_buf *chunks;        /* n */
  tm_buf *rep, *def;     /* n */
  tm_colbuilder *vals;   /* n */
  tm_pq_nleaf *nl;       /* n */
} nested_col;

static void nested_free(nested_col *nc) {
  if (!nc) return;
  for (size_t j = 0; j < nc->n; j++) {
    if (nc->cols) tm_parquet__column_free(nc->cols[j]);
    if (nc->chunks) tm_buf_dispose(&nc->chunks[j]);
    if (nc->rep) tm_buf_dispose(&nc->rep[j]);
    if (nc->def) tm_buf_dispose(&nc->def[j]);
    if (nc->vals) tm_colbuilder_dispose(&nc->vals[j]);
  }
  tm_free(nc->cols);
  tm_free(nc->chunks);
  tm_free(nc->rep);
  tm_free(nc->def);
  tm_free(nc->vals);
  tm_free(nc->nl);
  tm_parquet__ntree_free(nc->tree);
  tm_free(nc);
}

struct tm_parquet_scan {
  tm_parquet_file *f;     /* not owned */
  size_t *cols;           /* owned: projected field indices */
  size_t n_cols;
  tm_schema schema;       /* output schema */
  size_t *rgs;            /* owned: row groups kept after pruning */
  size_t n_rgs;
  size_t next_rg;
  int64_t batch_rows;
  tm_pq_column **readers; /* owned, n_cols: decoders of the current row group */
  nested_col **nested;    /* owned, n_cols: NULL, or the nested field read as JSON */
  tm_buf *chunks;         /* owned, n_cols: their column-chunk bytes, reused */
  int64_t rg_left;        /* rows left in the current row group */
  bool failed;
  tm_parquet_scan_stats stats;
};

static void close_readers(tm_parquet_scan *s) {
  if (!s->readers) return;
  for (size_t i = 0; i < s->n_cols; i++) {
    tm_parquet__column_free(s->readers[i]);
    s->readers[i] = NULL;
  }
}

void tm_parquet_scan_free(tm_parquet_scan *s) {
  if (!s) return;
  close_readers(s);
  tm_free(s->readers);
  for (size_t i = 0; s->nested && i < s->n_cols; i++) nested_free(s->nested[i]);
  tm_free(s->nested);
  for (size_t i = 0; s->chunks && i < s->n_cols; i++) tm_buf_dispose(&s->chunks[i]);
  tm_free(s->chunks);
  tm_free(s->cols);
  tm_free(s->rgs);
  tm_schema_dispose(&s->schema);
  tm_free(s);
}

/* The error for a field that cannot be scanned. */
static int unreadable(const tm_parquet_file *f, const tm_parquet_field *fd, tm_error *err) {
  if (fd->nested)
    return tm_error_set(err, TM_EUNSUPPORTED, "%s: unsupported nested column %s", f->name,
                        fd->name);
  /* Re-derive the code (corrupt annotation or unsupported type). */
  tm_type t;
  tm_error terr;
  tm_error_init(&terr);
  int rc = tm_parquet__map_type(&f->meta.schema[f->leaves[fd->leaf].elem], f->int96_unit, &t,
                                &terr);
  if (rc >= 0) rc = TM_EUNSUPPORTED;
  if (rc == TM_ECORRUPT)
    return tm_error__corrupt(err, __FILE__, __LINE__, "%s: column '%s': %s", f->name, fd->name,
                             fd->unsupported);
  return tm_error_set(err, rc, "%s: column '%s': unsupported %s", f->name, fd->name,
                      fd->unsupported);
}

static int nested_new(nested_col **out, tm_parquet_file *f, const tm_parquet_field *fd,
                      tm_error *err) {
  nested_col *nc = tm_calloc(1, sizeof *nc);
  if (!nc) return tm_error_nomem(err);
  int rc = tm_parquet__ntree_new(&nc->tree, &f->meta.schema[fd->elem], f->meta.n_schema - fd->elem,
                                 f->int96_unit, err);
  if (rc < 0) {
    tm_error_prefix(err, "%s: column '%s'", f->name, fd->name);
    nested_free(nc);
    return rc;
  }
  size_t n = tm_parquet__ntree_leaves(nc->tree);
  if (n != fd->n_leaves || n == 0) {
    nested_free(nc);
    return tm_error__corrupt(err, __FILE__, __LINE__, "%s: column '%s': %zu leaves, schema has %zu",
                             f->name, fd->name, n, fd->n_leaves);
  }
  nc->n = n;
  nc->cols = tm_calloc(n, sizeof *nc->cols);
  nc->chunks = tm_calloc(n, sizeof *nc->chunks);
  nc->rep = tm_calloc(n, sizeof *nc->rep);
  nc->def = tm_calloc(n, sizeof *nc->def);
  nc->vals = tm_calloc(n, sizeof *nc->vals);
  nc->nl = tm_calloc(n, sizeof *nc->nl);
  if (!nc->cols || !nc->chunks || !nc->rep || !nc->def || !nc->vals || !nc->nl) {
    nested_free(nc);
    return tm_error_nomem(err);
  }
  for (size_t j = 0; j < n; j++) {
    tm_type t;
    int md, mr;
    (void)tm_parquet__ntree_leaf_info(nc->tree, j, &t, &md, &mr);
    const tm_pq_leaf *lf = &f->leaves[fd->first_leaf + j];
    if (md != lf->max_def || mr != lf->max_rep) {
      nested_free(nc);
      return tm_error__corrupt(err, __FILE__, __LINE__, "%s: column '%s': leaf levels disagree",
                               f->name, lf->path);
    }
    tm_buf_init(&nc->chunks[j], MAX_CHUNK + 1);
    tm_buf_init(&nc->rep[j], (size_t)MAX_NESTED_LEVELS + 1);
    tm_buf_init(&nc->def[j], (size_t)MAX_NESTED_LEVELS + 1);
    tm_colbuilder_init(&nc->vals[j], t, 0);
  }
  *out = nc;
  return TM_OK;
}

int tm_parquet_scan_new(tm_parquet_scan **out, tm_parquet_file *f,
                        const tm_parquet_scan_options *opts, tm_error *err) {
  tm_parquet_scan_options def = TM_PARQUET_SCAN_OPTIONS_INIT;
  if (!opts) opts = &def;
  int rc = TM_OK;
  tm_parquet_scan *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->f = f;
  tm_schema_init(&s->schema);
  s->batch_rows = opts->batch_rows > 0 ? opts->batch_rows : TM_BATCH_DEFAULT_ROWS;
  s->n_cols = opts->columns ? opts->n_columns : f->n_fields;
  s->cols = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *s->cols);
  s->readers = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *s->readers);
  s->chunks = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *s->chunks);
  s->nested = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *s->nested);
  size_t n_rg_in = opts->row_groups ? opts->n_row_groups : f->meta.n_row_groups;
  s->rgs = tm_calloc(n_rg_in ? n_rg_in : 1, sizeof *s->rgs);
  if (!s->cols || !s->readers || !s->rgs || !s->chunks || !s->nested) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  for (size_t i = 0; i < s->n_cols; i++) {
    size_t fi = opts->columns ? opts->columns[i] : i;
    if (fi >= f->n_fields) {
      rc = tm_error_set(err, TM_EINVALID, "%s: column index %zu out of range (%zu columns)",
                        f->name, fi, f->n_fields);
      goto fail;
    }
    const tm_parquet_field *fd = &f->fields[fi];
    s->cols[i] = fi;
    tm_buf_init(&s->chunks[i], MAX_CHUNK + 1);
    if (fd->nested && (opts->nested_as_json || opts->nested_native)) {
      TM_CHECK(nested_new(&s->nested[i], f, fd, err));
      tm_type t = tm_type_of(TM_TYPE_UTF8);
      bool nullable = true;
      s->nested[i]->native =
          !opts->nested_as_json || (opts->native_columns && opts->columns && opts->native_columns[i]);
      if (s->nested[i]->native) {
        rc = tm_parquet__ntree_type(s->nested[i]->tree, &t, &nullable, err);
        if (rc < 0) {
          tm_error_prefix(err, "%s: column '%s'", f->name, fd->name);
          goto fail;
        }
      }
      TM_CHECK(tm_schema_add(&s->schema, fd->name, t, nullable, fd->field_id, err));
      continue;
    }
    if (fd->unsupported) {
      rc = unreadable(f, fd, err);
      goto fail;
    }
    TM_CHECK(tm_schema_add(&s->schema, fd->name, fd->type, fd->nullable, fd->field_id, err));
  }
  s->stats.row_groups_total = n_rg_in;
  for (size_t i = 0; i < n_rg_in; i++) {
    size_t rg = opts->row_groups ? opts->row_groups[i] : i;
    if (rg >= f->meta.n_row_groups || (i > 0 && opts->row_groups && rg <= opts->row_groups[i - 1])) {
      rc = tm_error_set(err, TM_EINVALID, "%s: row group %zu out of range or out of order",
                        f->name, rg);
      goto fail;
    }
    if (opts->predicate && !tm_parquet_row_group_may_match(f, rg, opts->predicate)) {
      s->stats.row_groups_skipped++;
      continue;
    }
    s->rgs[s->n_rgs++] = rg;
    s->stats.row_groups_read++;
    s->stats.rows_total += f->meta.row_groups[rg].num_rows;
  }
  *out = s;
  return TM_OK;
done:
fail:
  tm_parquet_scan_free(s);
  return rc;
}

/* Reads the chunk of field fi in row group rg and makes its decoder. */
/* Checks the metadata of projected column k in row group rg and gives the
 * byte range of its chunk. */
static int leaf_range(tm_parquet_file *f, size_t rg, size_t leaf, int32_t phys, bool nested,
                      tm_io_range *out, tm_error *err) {
  const tm_pq_row_group *g = &f->meta.row_groups[rg];
  const tm_pq_column_chunk *cc = &g->columns[leaf];
  const char *path = f->leaves[leaf].path;
  if (!cc->has_meta)
    return tm_error__corrupt(err, __FILE__, __LINE__,
                             "%s: column '%s' of row group %zu has no metadata", f->name, path, rg);
  if (cc->has_file_path)
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "%s: column '%s' lives in another file (file_path), which is not supported",
                        f->name, path);
  const tm_pq_column_meta *m = &cc->meta;
  if (m->type != phys)
    return tm_error__corrupt(err, __FILE__, __LINE__,
                             "%s: column '%s': chunk type %s differs from the schema's %s", f->name,
                             path, tm_parquet_physical_name(m->type),
                             tm_parquet_physical_name(phys));
  if (nested ? m->num_values < g->num_rows : m->num_values != g->num_rows)
    return tm_error__corrupt(err, __FILE__, __LINE__,
                             "%s: column '%s': chunk has %lld values, row group %zu has %lld rows",
                             f->name, path, (long long)m->num_values, rg, (long long)g->num_rows);
  uint64_t start = (uint64_t)m->data_page_offset;
  if (m->dictionary_page_offset > 0 && (uint64_t)m->dictionary_page_offset < start)
    start = (uint64_t)m->dictionary_page_offset;
  uint64_t len = (uint64_t)m->total_compressed_size;
  if (start < 4 || start > f->size || len > f->size - start)
    return tm_error__corrupt(err, __FILE__, __LINE__,
                             "%s: column '%s': chunk at %llu of %llu bytes passes the file end (%llu)",
                             f->name, path, (unsigned long long)start, (unsigned long long)len,
                             (unsigned long long)f->size);
  if (f->pad_chunks) {
    uint64_t room = f->size - start - len;
    len += room < MAX_DICT_HEADER ? room : MAX_DICT_HEADER;
  }
  if (len > MAX_CHUNK)
    return tm_error_set(err, TM_ETOOLARGE, "%s: column '%s': chunk of %llu bytes exceeds the limit",
                        f->name, path, (unsigned long long)len);
  out->off = start;
  out->len = len;
  return TM_OK;
}

static int chunk_range(tm_parquet_scan *s, size_t rg, size_t k, tm_io_range *out,
                       tm_error *err) {
  tm_parquet_file *f = s->f;
  const tm_parquet_field *fd = &f->fields[s->cols[k]];
  if (s->nested[k]) {
    /* The first leaf (announced; open_nested reads and checks every leaf). */
    size_t leaf = fd->first_leaf;
    return leaf_range(f, rg, leaf, f->meta.schema[f->leaves[leaf].elem].type, true, out, err);
  }
  return leaf_range(f, rg, fd->leaf, fd->physical_type, false, out, err);
}

/* Reads and decodes every leaf chunk of nested column k in row group rg. */
static int open_nested(tm_parquet_scan *s, size_t rg, size_t k, tm_error *err) {
  tm_parquet_file *f = s->f;
  const tm_parquet_field *fd = &f->fields[s->cols[k]];
  nested_col *nc = s->nested[k];
  for (size_t j = 0; j < nc->n; j++) {
    size_t leaf = fd->first_leaf + j;
    const tm_pq_leaf *lf = &f->leaves[leaf];
    const tm_pq_schema_elem *e = &f->meta.schema[lf->elem];
    tm_io_range r;
    TM_TRY(leaf_range(f, rg, leaf, e->type, true, &r, err));
    const tm_pq_column_meta *m = &f->meta.row_groups[rg].columns[leaf].meta;
    if (m->num_values > MAX_NESTED_LEVELS)
      return tm_error_set(err, TM_ETOOLARGE,
                          "%s: column '%s': %lld level entries in one row group (the limit is %lld)",
                          f->name, lf->path, (long long)m->num_values,
                          (long long)MAX_NESTED_LEVELS);
    tm_buf *cb = &nc->chunks[j];
    tm_buf_clear(cb);
    TM_TRY(tm_buf_reserve(cb, (size_t)r.len, err));
    TM_TRY(tm_input_read_exact(f->in, r.off, (uint8_t *)cb->ptr, (size_t)r.len, err));
    s->stats.bytes_read += r.len;
    tm_pq_column_desc d;
    memset(&d, 0, sizeof d);
    d.file = f->name;
    d.name = lf->path;
    d.phys = e->type;
    d.type_length = e->type == TM_PQ_FLBA ? e->type_length : -1;
    d.type = nc->vals[j].type;
    d.max_def = lf->max_def;
    d.max_rep = lf->max_rep;
    d.levels = true;
    d.codec = m->codec;
    d.num_values = m->num_values;
    d.verify_crc = f->verify_crc;
    d.chunk_borrowed = true;
    if (nc->cols[j])
      TM_TRY(tm_parquet__column_reset(nc->cols[j], &d, (uint8_t *)cb->ptr, (size_t)r.len, err));
    else
      TM_TRY(tm_parquet__column_new(&nc->cols[j], &d, (uint8_t *)cb->ptr, (size_t)r.len, err));
    size_t n = (size_t)m->num_values;
    tm_buf_clear(&nc->rep[j]);
    tm_buf_clear(&nc->def[j]);
    TM_TRY(tm_buf_reserve(&nc->rep[j], n, err));
    TM_TRY(tm_buf_reserve(&nc->def[j], n, err));
    tm_colbuilder_reset(&nc->vals[j]);
    int64_t nv = 0;
    TM_TRY(tm_parquet__column_read_levels(nc->cols[j], (int64_t)n, (uint8_t *)nc->rep[j].ptr,
                                          (uint8_t *)nc->def[j].ptr, &nc->vals[j], &nv, err));
    tm_colbuilder *vb = &nc->vals[j];
    tm_pq_nleaf *nl = &nc->nl[j];
    memset(nl, 0, sizeof *nl);
    nl->rep = (const uint8_t *)nc->rep[j].ptr;
    nl->def = (const uint8_t *)nc->def[j].ptr;
    nl->n = n;
    nl->vals.type = vb->type;
    nl->vals.length = vb->length;
    nl->vals.values = vb->values.ptr;
    nl->vals.data = (const uint8_t *)vb->data.ptr;
  }
  return TM_OK;
}

/* Reads the chunk of projected column k (range r, checked) and points its
 * decoder at it. */
static int open_column(tm_parquet_scan *s, size_t rg, size_t k, const tm_io_range *r,
                       tm_error *err) {
  tm_parquet_file *f = s->f;
  const tm_parquet_field *fd = &f->fields[s->cols[k]];
  const tm_pq_column_meta *m = &f->meta.row_groups[rg].columns[fd->leaf].meta;
  uint64_t start = r->off, len = r->len;
  /* The chunk buffer of this column is reused from row group to row group.
   * Its decoder is done with the previous chunk: reads never span row groups. */
  tm_buf *cb = &s->chunks[k];
  tm_buf_clear(cb);
  TM_TRY(tm_buf_reserve(cb, (size_t)len, err));
  uint8_t *chunk = (uint8_t *)cb->ptr;
  TM_TRY(tm_input_read_exact(f->in, start, chunk, (size_t)len, err));
  s->stats.bytes_read += len;
  const tm_pq_leaf *leaf = &f->leaves[fd->leaf];
  tm_pq_column_desc d;
  memset(&d, 0, sizeof d);
  d.file = f->name;
  d.name = fd->name;
  d.phys = fd->physical_type;
  d.type_length = fd->type_length;
  d.type = fd->type;
  d.max_def = leaf->max_def;
  d.codec = m->codec;
  d.num_values = m->num_values;
  d.verify_crc = f->verify_crc;
  d.chunk_borrowed = true;
  /* A decoder from the previous row group keeps its buffers and codec state. */
  if (s->readers[k]) return tm_parquet__column_reset(s->readers[k], &d, chunk, (size_t)len, err);
  return tm_parquet__column_new(&s->readers[k], &d, chunk, (size_t)len, err);
}

static int open_row_group(tm_parquet_scan *s, tm_error *err) {
  while (s->next_rg < s->n_rgs) {
    size_t rg = s->rgs[s->next_rg++];
    int64_t rows = s->f->meta.row_groups[rg].num_rows;
    if (rows == 0) continue;
    /* Check every chunk, announce the ranges (an object store merges and
     * prefetches them), then read them. */
    tm_io_range ranges[64];
    tm_io_range *rs = s->n_cols <= 64 ? ranges : tm_calloc(s->n_cols, sizeof *rs);
    if (!rs) return tm_error_nomem(err);
    int rc = TM_OK;
    for (size_t k = 0; k < s->n_cols && rc == TM_OK; k++) rc = chunk_range(s, rg, k, &rs[k], err);
    if (rc == TM_OK) rc = tm_input_will_need(s->f->in, rs, s->n_cols, err);
    for (size_t k = 0; k < s->n_cols && rc == TM_OK; k++)
      rc = s->nested[k] ? open_nested(s, rg, k, err) : open_column(s, rg, k, &rs[k], err);
    if (rs != ranges) tm_free(rs);
    if (rc < 0) return rc;
    s->rg_left = rows;
    return TM_OK;
  }
  close_readers(s); /* the last row group: free its chunks now */
  return TM_ITEROVER;
}

int tm_parquet_scan_next(tm_parquet_scan *s, tm_batch *out, tm_error *err) {
  if (s->failed)
    return tm_error_set(err, TM_EINVALID, "%s: scan cannot continue after an error", s->f->name);
  int rc = TM_OK;
  size_t nc = s->n_cols;
  tm_colbuilder *cbs = NULL;
  struct ArrowArray *arrays = NULL;
  if (s->rg_left <= 0) {
    rc = open_row_group(s, err);
    if (rc == TM_ITEROVER) return rc;
    if (rc < 0) goto fail;
  }
  int64_t n = s->rg_left < s->batch_rows ? s->rg_left : s->batch_rows;
  cbs = tm_calloc(nc ? nc : 1, sizeof *cbs);
  arrays = tm_calloc(nc ? nc : 1, sizeof *arrays);
  if (!cbs || !arrays) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  for (size_t k = 0; k < nc; k++) tm_colbuilder_init(&cbs[k], s->schema.cols[k].type, 0);
  for (size_t k = 0; k < nc; k++) {
    if (s->nested[k]) {
      const tm_parquet_field *fd = &s->f->fields[s->cols[k]];
      rc = s->nested[k]->native
               ? tm_parquet__nested_build(s->nested[k]->tree, s->nested[k]->nl, n, &cbs[k],
                                          s->f->name, fd->name, err)
               : tm_parquet__nested_render(s->nested[k]->tree, s->nested[k]->nl, n, &cbs[k],
                                           s->f->name, fd->name, err);
    } else {
      rc = tm_parquet__column_read(s->readers[k], &cbs[k], n, err);
    }
    if (rc < 0) goto fail;
  }
  for (size_t k = 0; k < nc; k++) {
    rc = tm_colbuilder_finish(&cbs[k], &arrays[k], err);
    if (rc < 0) goto fail;
  }
  rc = tm_batch_from_arrays(out, &s->schema, arrays, n, err); /* takes the arrays */
  if (rc < 0) goto fail_taken;
  s->rg_left -= n;
  s->stats.rows_read += n;
  for (size_t k = 0; k < nc; k++) tm_colbuilder_dispose(&cbs[k]);
  tm_free(cbs);
  tm_free(arrays);
  return TM_OK;
fail:
  if (arrays)
    for (size_t k = 0; k < nc; k++)
      if (arrays[k].release) arrays[k].release(&arrays[k]);
fail_taken:
  if (cbs)
    for (size_t k = 0; k < nc; k++) tm_colbuilder_dispose(&cbs[k]);
  tm_free(cbs);
  tm_free(arrays);
  close_readers(s);
  s->failed = true;
  return rc;
}

void tm_parquet_scan_get_stats(const tm_parquet_scan *s, tm_parquet_scan_stats *out) {
  *out = s->stats;
}

const tm_schema *tm_parquet_scan_schema(const tm_parquet_scan *s) { return &s->schema; }

/* The node tree of nested field i (the caller frees *out); errors name the
 * file and the column. */
static int nested_tree(const tm_parquet_file *f, size_t i, tm_pq_ntree **out, tm_error *err) {
  *out = NULL;
  if (i >= f->n_fields || !f->fields[i].nested)
    return tm_error_set(err, TM_EINVALID, "%s: field %zu is not nested", f->name, i);
  const tm_parquet_field *fd = &f->fields[i];
  int rc = tm_parquet__ntree_new(out, &f->meta.schema[fd->elem], f->meta.n_schema - fd->elem,
                                 f->int96_unit, err);
  if (rc < 0) tm_error_prefix(err, "%s: column '%s'", f->name, fd->name);
  return rc;
}

int tm_parquet_nested_type(const tm_parquet_file *f, size_t i, tm_type *out, bool *nullable,
                           tm_error *err) {
  tm_pq_ntree *t = NULL;
  TM_TRY(nested_tree(f, i, &t, err));
  int rc = tm_parquet__ntree_type(t, out, nullable, err);
  if (rc < 0) tm_error_prefix(err, "%s: column '%s'", f->name, f->fields[i].name);
  tm_parquet__ntree_free(t);
  return rc;
}

int tm_parquet_nested_ids(const tm_parquet_file *f, size_t i, const tm_type *type, int32_t *ids,
                          tm_error *err) {
  tm_pq_ntree *t = NULL;
  int rc = nested_tree(f, i, &t, err);
  if (rc == TM_OK && tm_parquet__ntree_ids(t, ids, tm_type_id_slots(type)) < 0)
    rc = tm_error_set(err, TM_EINVALID, "%s: column '%s' is not of the type given", f->name,
                      f->fields[i].name);
  tm_parquet__ntree_free(t);
  return rc;
}
