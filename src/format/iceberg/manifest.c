/*
 * manifest.c - Iceberg manifest lists and manifests from Avro, with v2
 * inheritance of snapshot ids and sequence numbers (format layer).
 * See iceberg.h and the field ids in iceberg_int.h.
 *
 * Fields are located by Iceberg field id (older writers name the same
 * field differently, e.g. added_data_files_count vs added_files_count), by
 * name only when a writer left the ids out. Strings are copied out of the
 * Avro block into the result's arena.
 */
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"

#define LIST_ARENA_LIMIT ((size_t)1 << 30)

/* A record field by id, else by name; NULL when absent or null. */
static const tm_avro_value *field(const tm_avro_value *rec, int32_t id, const char *name) {
  const tm_avro_value *v = tm_avro_record_get_id(rec, id);
  if (!v && name) v = tm_avro_record_get(rec, name);
  return tm_avro_is_null(v) ? NULL : v;
}

static bool get_long(const tm_avro_value *rec, int32_t id, const char *name, int64_t *out) {
  return tm_avro_get_long(field(rec, id, name), out);
}

static const char *get_str(tm_arena *a, const tm_avro_value *rec, int32_t id, const char *name,
                           tm_error *err, bool *failed) {
  tm_strview s;
  if (!tm_avro_get_bytes(field(rec, id, name), &s)) return NULL;
  const char *copy = tm_arena_strndup(a, s.ptr, s.len, err);
  if (!copy) *failed = true;
  return copy;
}

static tm_strview copy_bytes(tm_arena *a, tm_strview s, tm_error *err, bool *failed) {
  char *p = tm_arena_strndup(a, s.ptr, s.len, err);
  if (!p) {
    *failed = true;
    return tm_sv(NULL, 0);
  }
  return tm_sv(p, s.len);
}

/* ---- manifest lists ------------------------------------------------------- */

static int decode_summaries(tm_arena *a, const tm_avro_value *list, tm_iceberg_manifest_file *mf,
                            tm_error *err) {
  if (!list || tm_avro_value_kind(list) != TM_AVRO_ARRAY) return TM_OK;
  size_t n = list->u.list.n;
  mf->partitions = tm_arena_calloc(a, n ? n : 1, sizeof *mf->partitions, err);
  if (!mf->partitions) return err->code;
  bool failed = false;
  for (size_t i = 0; i < n; i++) {
    const tm_avro_value *fs = &list->u.list.items[i];
    tm_iceberg_field_summary *s = &mf->partitions[i];
    if (tm_avro_value_kind(fs) != TM_AVRO_RECORD) {
      return TM_CORRUPT(err, "partition summary is not a record");
    }
    const tm_avro_value *cn = field(fs, 509, "contains_null");
    s->contains_null = cn && tm_avro_value_kind(cn) == TM_AVRO_BOOLEAN ? cn->u.b : true;
    const tm_avro_value *nan = field(fs, 518, "contains_nan");
    s->contains_nan = nan && tm_avro_value_kind(nan) == TM_AVRO_BOOLEAN ? (nan->u.b ? 1 : 0) : -1;
    tm_strview b;
    if (tm_avro_get_bytes(field(fs, 510, "lower_bound"), &b)) {
      s->has_lower = true;
      s->lower = copy_bytes(a, b, err, &failed);
    }
    if (tm_avro_get_bytes(field(fs, 511, "upper_bound"), &b)) {
      s->has_upper = true;
      s->upper = copy_bytes(a, b, err, &failed);
    }
    if (failed) return err->code;
  }
  mf->n_partitions = n;
  mf->has_partitions = true;
  return TM_OK;
}

static int decode_manifest_file(tm_arena *a, const tm_avro_value *rec,
                                tm_iceberg_manifest_file *mf, tm_error *err) {
  bool failed = false;
  if (tm_avro_value_kind(rec) != TM_AVRO_RECORD) return TM_CORRUPT(err, "entry is not a record");
  mf->path = get_str(a, rec, 500, "manifest_path", err, &failed);
  if (failed) return err->code;
  if (!mf->path) return TM_CORRUPT(err, "entry has no manifest_path");
  int64_t v;
  if (!get_long(rec, 501, "manifest_length", &mf->length)) mf->length = -1;
  if (!get_long(rec, 502, "partition_spec_id", &v)) {
    return TM_CORRUPT(err, "manifest %s has no partition_spec_id", mf->path);
  }
  mf->spec_id = (int32_t)v;
  mf->content = get_long(rec, 517, "content", &v) ? (int)v : 0;
  if (mf->content != 0 && mf->content != 1) {
    return TM_CORRUPT(err, "manifest %s has content %d (not 0 or 1)", mf->path, mf->content);
  }
  if (!get_long(rec, 515, "sequence_number", &mf->sequence_number)) mf->sequence_number = 0;
  if (!get_long(rec, 516, "min_sequence_number", &mf->min_sequence_number))
    mf->min_sequence_number = 0;
  if (!get_long(rec, 503, "added_snapshot_id", &mf->added_snapshot_id)) {
    return TM_CORRUPT(err, "manifest %s has no added_snapshot_id", mf->path);
  }
  if (!get_long(rec, 504, "added_files_count", &mf->added_files)) mf->added_files = -1;
  if (!get_long(rec, 505, "existing_files_count", &mf->existing_files)) mf->existing_files = -1;
  if (!get_long(rec, 506, "deleted_files_count", &mf->deleted_files)) mf->deleted_files = -1;
  if (!get_long(rec, 512, "added_rows_count", &mf->added_rows)) mf->added_rows = -1;
  if (!get_long(rec, 513, "existing_rows_count", &mf->existing_rows)) mf->existing_rows = -1;
  if (!get_long(rec, 514, "deleted_rows_count", &mf->deleted_rows)) mf->deleted_rows = -1;
  mf->encrypted = field(rec, 519, "key_metadata") != NULL;
  mf->has_first_row_id = get_long(rec, 520, "first_row_id", &mf->first_row_id);
  return decode_summaries(a, field(rec, 507, "partitions"), mf, err);
}

static int read_list_file(const tm_iceberg_table *t, const char *path,
                          tm_iceberg_manifest_list *l, tm_error *err) {
  tm_input *in = NULL;
  tm_avro_reader *r = NULL;
  size_t cap = 0;
  int rc;
  TM_CHECK(tm_iceberg__open_avro(t, path, &in, &r, err));
  for (;;) {
    const tm_avro_value *v;
    rc = tm_avro_reader_next(r, &v, err);
    if (rc == TM_ITEROVER) break;
    if (rc < 0) goto done;
    if (l->n_files == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      tm_iceberg_manifest_file *f = tm_arena_calloc(&l->arena, ncap, sizeof *f, err);
      if (!f) {
        rc = err->code;
        goto done;
      }
      if (l->n_files) memcpy(f, l->files, l->n_files * sizeof *f);
      l->files = f;
      cap = ncap;
    }
    rc = decode_manifest_file(&l->arena, v, &l->files[l->n_files], err);
    if (rc < 0) {
      tm_error_prefix(err, "%s: manifest list entry %zu", path, l->n_files);
      goto done;
    }
    l->n_files++;
  }
  rc = TM_OK;
done:
  if (in) tm_iceberg_table_io(t)->bytes_read += in->bytes_read;
  tm_avro_reader_free(r);
  tm_input_close(in);
  return rc;
}

/* v1 snapshots with an inline "manifests" list: read each manifest's header
 * for its spec id; every entry is treated as the snapshot's. */
static int list_from_inline(const tm_iceberg_table *t, const tm_iceberg_snapshot *snap,
                            tm_iceberg_manifest_list *l, tm_error *err) {
  l->files = tm_arena_calloc(&l->arena, snap->n_manifests ? snap->n_manifests : 1,
                             sizeof *l->files, err);
  if (!l->files) return err->code;
  for (size_t i = 0; i < snap->n_manifests; i++) {
    tm_input *in = NULL;
    tm_avro_reader *r = NULL;
    TM_TRY(tm_iceberg__open_avro(t, snap->manifests[i], &in, &r, err));
    const char *sid = tm_avro_reader_meta(r, "partition-spec-id", NULL);
    int64_t spec_id = 0;
    if (sid && tm_parse_int64(sid, strlen(sid), &spec_id) < 0) spec_id = 0;
    tm_avro_reader_free(r);
    tm_input_close(in);
    tm_iceberg_manifest_file *mf = &l->files[i];
    mf->path = tm_iceberg__strdup(&l->arena, snap->manifests[i], err);
    if (!mf->path) return err->code;
    mf->length = -1;
    mf->spec_id = (int32_t)spec_id;
    mf->added_snapshot_id = snap->snapshot_id;
    mf->added_files = mf->existing_files = mf->deleted_files = -1;
    mf->added_rows = mf->existing_rows = mf->deleted_rows = -1;
    l->n_files = i + 1;
  }
  return TM_OK;
}

int tm_iceberg_read_manifest_list(const tm_iceberg_table *t, const tm_iceberg_snapshot *snap,
                                  tm_iceberg_manifest_list **out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_iceberg_manifest_list *l = tm_calloc(1, sizeof *l);
  if (!l) return tm_error_nomem(err);
  tm_arena_init(&l->arena, LIST_ARENA_LIMIT);
  int rc;
  if (snap->key_id) {
    rc = tm_error_set(err, TM_EUNSUPPORTED,
                      "snapshot %lld: encrypted manifest lists are not supported",
                      (long long)snap->snapshot_id);
    goto done;
  }
  if (snap->manifest_list) {
    rc = read_list_file(t, snap->manifest_list, l, err);
  } else {
    rc = list_from_inline(t, snap, l, err);
  }
  if (rc < 0) goto done;
  *out = l;
  return TM_OK;
done:
  tm_iceberg_manifest_list_free(l);
  return rc;
}

void tm_iceberg_manifest_list_free(tm_iceberg_manifest_list *l) {
  if (!l) return;
  tm_arena_dispose(&l->arena);
  tm_free(l);
}

/* ---- manifests --------------------------------------------------------------- */

/* The type of a source column: the current schema first, then older ones. */
static const tm_iceberg_type *source_type(const tm_iceberg_metadata *m, int32_t id) {
  const tm_iceberg_field *f = tm_iceberg_schema_find_id(tm_iceberg_metadata_current_schema(m), id);
  for (size_t i = m->n_schemas; !f && i > 0; i--) {
    f = tm_iceberg_schema_find_id(&m->schemas[i - 1], id);
  }
  return f ? f->type : NULL;
}

/* Columnar type of an Avro partition value when the spec cannot tell. */
static tm_type type_of_avro(const tm_avro_schema *s) {
  s = tm_avro_schema_nonnull(s);
  switch (s->kind) {
    case TM_AVRO_BOOLEAN: return tm_type_of(TM_TYPE_BOOL);
    case TM_AVRO_INT: return tm_type_of(s->logical == TM_AVRO_LT_DATE ? TM_TYPE_DATE32 : TM_TYPE_INT32);
    case TM_AVRO_LONG: return tm_type_of(TM_TYPE_INT64);
    case TM_AVRO_FLOAT: return tm_type_of(TM_TYPE_FLOAT32);
    case TM_AVRO_DOUBLE: return tm_type_of(TM_TYPE_FLOAT64);
    case TM_AVRO_STRING: return tm_type_of(TM_TYPE_UTF8);
    case TM_AVRO_FIXED: return tm_type_fixed((int32_t)s->size);
    default: return tm_type_of(TM_TYPE_BINARY);
  }
}

typedef struct manifest_ctx {
  const tm_iceberg_table *t;
  const tm_iceberg_manifest_file *mf;
  tm_iceberg_manifest *m;
  const tm_iceberg_spec *spec;
  tm_type *ptypes;     /* result type per spec field */
  int *pindex;         /* per spec field: index in the Avro partition record, -1 */
  bool v1;             /* no sequence number fields */
  tm_error *err;
} manifest_ctx;

/* Resolves the spec: table metadata first, else the manifest's header. */
static int resolve_spec(manifest_ctx *c, tm_avro_reader *r) {
  const tm_iceberg_metadata *meta = tm_iceberg_table_metadata(c->t);
  c->spec = tm_iceberg_metadata_spec(meta, c->mf->spec_id);
  if (c->spec) return TM_OK;
  const char *text = tm_avro_reader_meta(r, "partition-spec", NULL);
  if (!text) {
    return TM_CORRUPT(c->err, "%s: partition spec %d is neither in the table nor in the manifest",
                      c->mf->path, (int)c->mf->spec_id);
  }
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  if (!j) return TM_CORRUPT(c->err, "%s: partition-spec header is not JSON", c->mf->path);
  tm_iceberg_spec *s = tm_arena_alloc(&c->m->arena, sizeof *s, c->err);
  int rc = s ? tm_iceberg__parse_spec_fields(&c->m->arena, j, false, s, c->mf->path, c->err)
             : c->err->code;
  json_decref(j);
  if (rc < 0) return rc;
  s->spec_id = c->mf->spec_id;
  c->spec = s;
  return TM_OK;
}

/* Works out partition value types and where each lives in the Avro record. */
static int prepare_partition(manifest_ctx *c, const tm_avro_schema *entry_schema) {
  const tm_iceberg_metadata *meta = tm_iceberg_table_metadata(c->t);
  size_t n = c->spec->n_fields;
  c->ptypes = tm_arena_calloc(&c->m->arena, n ? n : 1, sizeof *c->ptypes, c->err);
  c->pindex = tm_arena_calloc(&c->m->arena, n ? n : 1, sizeof *c->pindex, c->err);
  if (!c->ptypes || !c->pindex) return c->err->code;
  const tm_avro_schema *df = NULL, *prec = NULL;
  int i_df = tm_avro_schema_field_index_by_id(entry_schema, 2);
  if (i_df < 0) i_df = tm_avro_schema_field_index(entry_schema, "data_file");
  if (i_df >= 0) df = tm_avro_schema_nonnull(entry_schema->fields[i_df].type);
  if (df && df->kind == TM_AVRO_RECORD) {
    int i_p = tm_avro_schema_field_index_by_id(df, 102);
    if (i_p < 0) i_p = tm_avro_schema_field_index(df, "partition");
    if (i_p >= 0) prec = tm_avro_schema_nonnull(df->fields[i_p].type);
  }
  for (size_t i = 0; i < n; i++) {
    const tm_iceberg_partition_field *pf = &c->spec->fields[i];
    c->pindex[i] = -1;
    if (prec && prec->kind == TM_AVRO_RECORD) {
      int idx = tm_avro_schema_field_index_by_id(prec, pf->field_id);
      if (idx < 0) idx = tm_avro_schema_field_index(prec, pf->name);
      if (idx < 0 && i < prec->n_fields && prec->fields[i].field_id < 0) idx = (int)i;
      c->pindex[i] = idx;
    }
    const tm_iceberg_type *st = source_type(meta, pf->source_id);
    tm_error ignore;
    if (!st || pf->transform.kind == TM_ICEBERG_TR_UNKNOWN ||
        tm_iceberg_transform_result(&pf->transform, st, &c->ptypes[i], &ignore) < 0) {
      c->ptypes[i] = c->pindex[i] >= 0 ? type_of_avro(prec->fields[c->pindex[i]].type)
                                       : tm_type_of(TM_TYPE_BINARY);
    }
  }
  return TM_OK;
}

/* Finds or adds the stats entry of a field id. */
static tm_iceberg_col_stats *stat_for(manifest_ctx *c, tm_iceberg_data_file *f, int32_t id,
                                      size_t *cap, size_t hint) {
  if (hint < f->n_stats && f->stats[hint].field_id == id) return &f->stats[hint];
  for (size_t i = 0; i < f->n_stats; i++) {
    if (f->stats[i].field_id == id) return &f->stats[i];
  }
  if (f->n_stats == *cap) {
    size_t ncap = *cap ? *cap * 2 : 8;
    tm_iceberg_col_stats *s = tm_arena_calloc(&c->m->arena, ncap, sizeof *s, c->err);
    if (!s) return NULL;
    if (f->n_stats) memcpy(s, f->stats, f->n_stats * sizeof *s);
    f->stats = s;
    *cap = ncap;
  }
  tm_iceberg_col_stats *s = &f->stats[f->n_stats++];
  memset(s, 0, sizeof *s);
  s->field_id = id;
  s->column_size = s->value_count = s->null_count = s->nan_count = -1;
  return s;
}

enum { ST_SIZE, ST_VALUES, ST_NULLS, ST_NANS, ST_LOWER, ST_UPPER };

/* Reads one of the per-column maps (Avro array of key/value records, or an
 * Avro map with string keys) into the stats. */
static int read_stat_map(manifest_ctx *c, tm_iceberg_data_file *f, const tm_avro_value *mv,
                         int which, size_t *cap) {
  if (!mv) return TM_OK;
  bool failed = false;
  size_t n;
  bool is_map = tm_avro_value_kind(mv) == TM_AVRO_MAP;
  if (is_map) {
    n = mv->u.map.n;
  } else if (tm_avro_value_kind(mv) == TM_AVRO_ARRAY) {
    n = mv->u.list.n;
  } else {
    return TM_CORRUPT(c->err, "column statistics are neither a map nor a list");
  }
  for (size_t i = 0; i < n; i++) {
    int64_t key;
    const tm_avro_value *val;
    if (is_map) {
      if (tm_parse_int64(mv->u.map.keys[i].ptr, mv->u.map.keys[i].len, &key) < 0) continue;
      val = &mv->u.map.values[i];
    } else {
      const tm_avro_value *kv = &mv->u.list.items[i];
      if (tm_avro_value_kind(kv) != TM_AVRO_RECORD || kv->u.list.n < 2) {
        return TM_CORRUPT(c->err, "column statistics entry is not a key/value record");
      }
      if (!tm_avro_get_long(&kv->u.list.items[0], &key)) {
        return TM_CORRUPT(c->err, "column statistics key is not an integer");
      }
      val = &kv->u.list.items[1];
    }
    if (key < INT32_MIN || key > INT32_MAX || tm_avro_is_null(val)) continue;
    tm_iceberg_col_stats *s = stat_for(c, f, (int32_t)key, cap, i);
    if (!s) return c->err->code;
    int64_t x;
    tm_strview b;
    switch (which) {
      case ST_SIZE: if (tm_avro_get_long(val, &x)) s->column_size = x; break;
      case ST_VALUES: if (tm_avro_get_long(val, &x)) s->value_count = x; break;
      case ST_NULLS: if (tm_avro_get_long(val, &x)) s->null_count = x; break;
      case ST_NANS: if (tm_avro_get_long(val, &x)) s->nan_count = x; break;
      case ST_LOWER:
      case ST_UPPER:
        if (!tm_avro_get_bytes(val, &b)) break;
        b = copy_bytes(&c->m->arena, b, c->err, &failed);
        if (failed) return c->err->code;
        if (which == ST_LOWER) {
          s->has_lower = true;
          s->lower = b;
        } else {
          s->has_upper = true;
          s->upper = b;
        }
        break;
    }
  }
  return TM_OK;
}

static int read_int_list(manifest_ctx *c, const tm_avro_value *lv, int32_t **out32,
                         int64_t **out64, size_t *n_out) {
  if (!lv || tm_avro_value_kind(lv) != TM_AVRO_ARRAY) return TM_OK;
  size_t n = lv->u.list.n;
  if (out32) {
    *out32 = tm_arena_calloc(&c->m->arena, n ? n : 1, sizeof **out32, c->err);
    if (!*out32) return c->err->code;
  } else {
    *out64 = tm_arena_calloc(&c->m->arena, n ? n : 1, sizeof **out64, c->err);
    if (!*out64) return c->err->code;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t x;
    if (!tm_avro_get_long(&lv->u.list.items[i], &x)) continue;
    if (out32) {
      if (x < INT32_MIN || x > INT32_MAX) return TM_CORRUPT(c->err, "field id out of range");
      (*out32)[k++] = (int32_t)x;
    } else {
      (*out64)[k++] = x;
    }
  }
  *n_out = k;
  return TM_OK;
}

static int decode_entry(manifest_ctx *c, const tm_avro_value *rec, int64_t only_added_by,
                        tm_iceberg_data_file *f, bool *keep) {
  tm_error *err = c->err;
  const tm_iceberg_manifest_file *mf = c->mf;
  int64_t v;
  *keep = false;
  if (tm_avro_value_kind(rec) != TM_AVRO_RECORD) return TM_CORRUPT(err, "entry is not a record");
  if (!get_long(rec, 0, "status", &v) || v < 0 || v > 2) {
    return TM_CORRUPT(err, "entry has no valid status");
  }
  f->status = (int)v;
  if (!get_long(rec, 1, "snapshot_id", &f->snapshot_id)) f->snapshot_id = mf->added_snapshot_id;
  if (only_added_by >= 0 && (f->status != TM_ICEBERG_ADDED || f->snapshot_id != only_added_by)) {
    return TM_OK;
  }
  bool inherit = f->status == TM_ICEBERG_ADDED || f->snapshot_id == mf->added_snapshot_id;
  if (!get_long(rec, 3, "sequence_number", &f->sequence_number)) {
    f->sequence_number = inherit ? mf->sequence_number : 0;
  }
  if (!get_long(rec, 4, "file_sequence_number", &f->file_sequence_number)) {
    f->file_sequence_number = inherit ? mf->sequence_number : 0;
  }
  const tm_avro_value *df = field(rec, 2, "data_file");
  if (!df || tm_avro_value_kind(df) != TM_AVRO_RECORD) return TM_CORRUPT(err, "entry has no data_file");
  f->content = get_long(df, 134, "content", &v) ? (int)v : 0;
  if (f->content < 0 || f->content > 2) return TM_CORRUPT(err, "data_file content %d is invalid", f->content);
  bool failed = false;
  f->path = get_str(&c->m->arena, df, 100, "file_path", err, &failed);
  if (!failed && !f->path) return TM_CORRUPT(err, "data_file has no file_path");
  f->format = get_str(&c->m->arena, df, 101, "file_format", err, &failed);
  if (failed) return err->code;
  if (!f->format) f->format = "PARQUET";
  f->spec_id = mf->spec_id;
  if (!get_long(df, 103, "record_count", &f->record_count) || f->record_count < 0) {
    return TM_CORRUPT(err, "%s: record_count is missing or negative", f->path);
  }
  if (!get_long(df, 104, "file_size_in_bytes", &f->file_size)) f->file_size = -1;
  /* partition tuple */
  size_t np = c->spec->n_fields;
  f->partition = tm_arena_calloc(&c->m->arena, np ? np : 1, sizeof *f->partition, err);
  if (!f->partition) return err->code;
  const tm_avro_value *prec = field(df, 102, "partition");
  for (size_t i = 0; i < np; i++) {
    const tm_avro_value *pv = NULL;
    if (prec && tm_avro_value_kind(prec) == TM_AVRO_RECORD && c->pindex[i] >= 0 &&
        (size_t)c->pindex[i] < prec->u.list.n) {
      pv = &prec->u.list.items[c->pindex[i]];
    }
    if (!pv) {
      memset(&f->partition[i], 0, sizeof f->partition[i]);
      f->partition[i].type = c->ptypes[i].id;
      f->partition[i].is_null = true;
      continue;
    }
    int rc = tm_iceberg__avro_to_value(&c->m->arena, pv, &c->ptypes[i], &f->partition[i], err);
    if (rc < 0) return tm_error_prefix(err, "%s: partition field %s", f->path, c->spec->fields[i].name);
  }
  f->n_partition = np;
  size_t cap = 0;
  TM_TRY(read_stat_map(c, f, field(df, 108, "column_sizes"), ST_SIZE, &cap));
  TM_TRY(read_stat_map(c, f, field(df, 109, "value_counts"), ST_VALUES, &cap));
  TM_TRY(read_stat_map(c, f, field(df, 110, "null_value_counts"), ST_NULLS, &cap));
  TM_TRY(read_stat_map(c, f, field(df, 137, "nan_value_counts"), ST_NANS, &cap));
  TM_TRY(read_stat_map(c, f, field(df, 125, "lower_bounds"), ST_LOWER, &cap));
  TM_TRY(read_stat_map(c, f, field(df, 128, "upper_bounds"), ST_UPPER, &cap));
  f->encrypted = field(df, 131, "key_metadata") != NULL;
  TM_TRY(read_int_list(c, field(df, 132, "split_offsets"), NULL, &f->split_offsets,
                       &f->n_split_offsets));
  TM_TRY(read_int_list(c, field(df, 135, "equality_ids"), &f->equality_ids, NULL,
                       &f->n_equality_ids));
  f->sort_order_id = get_long(df, 140, "sort_order_id", &v) ? (int32_t)v : -1;
  f->has_first_row_id = get_long(df, 142, "first_row_id", &f->first_row_id);
  f->referenced_data_file = get_str(&c->m->arena, df, 143, "referenced_data_file", err, &failed);
  if (failed) return err->code;
  f->has_content_offset = get_long(df, 144, "content_offset", &f->content_offset);
  if (!get_long(df, 145, "content_size_in_bytes", &f->content_size)) f->content_size = -1;
  if (f->content == TM_ICEBERG_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 0) {
    return TM_CORRUPT(err, "%s: equality delete file without equality_ids", f->path);
  }
  *keep = true;
  return TM_OK;
}

int tm_iceberg_read_manifest(const tm_iceberg_table *t, const tm_iceberg_manifest_file *mf,
                             int64_t only_added_by, tm_iceberg_manifest **out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  if (mf->encrypted) {
    return tm_error_set(err, TM_EUNSUPPORTED, "%s: encrypted manifests are not supported",
                        mf->path);
  }
  tm_iceberg_manifest *m = tm_calloc(1, sizeof *m);
  if (!m) return tm_error_nomem(err);
  tm_arena_init(&m->arena, LIST_ARENA_LIMIT);
  m->spec_id = mf->spec_id;
  m->content = mf->content;
  tm_input *in = NULL;
  tm_avro_reader *r = NULL;
  size_t cap = 0;
  int rc;
  manifest_ctx c = {t, mf, m, NULL, NULL, NULL, false, err};
  int64_t next_row_id = mf->first_row_id;
  TM_CHECK(tm_iceberg__open_avro(t, mf->path, &in, &r, err));
  const tm_avro_schema *schema = tm_avro_reader_schema(r);
  if (schema->kind != TM_AVRO_RECORD) {
    rc = TM_CORRUPT(err, "%s: manifest records must be records", mf->path);
    goto done;
  }
  rc = resolve_spec(&c, r);
  if (rc < 0) goto done;
  m->spec = c.spec;
  TM_CHECK(prepare_partition(&c, schema));
  for (;;) {
    const tm_avro_value *v;
    rc = tm_avro_reader_next(r, &v, err);
    if (rc == TM_ITEROVER) break;
    if (rc < 0) goto done;
    if (m->n_entries == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      tm_iceberg_data_file *e = tm_arena_calloc(&m->arena, ncap, sizeof *e, err);
      if (!e) {
        rc = err->code;
        goto done;
      }
      if (m->n_entries) memcpy(e, m->entries, m->n_entries * sizeof *e);
      m->entries = e;
      cap = ncap;
    }
    tm_iceberg_data_file *f = &m->entries[m->n_entries];
    memset(f, 0, sizeof *f);
    bool keep = false;
    rc = decode_entry(&c, v, only_added_by, f, &keep);
    if (rc < 0) {
      if (!strstr(err->message, mf->path)) {
        tm_error_prefix(err, "%s: entry %lld", mf->path, (long long)(tm_avro_reader_records(r) - 1));
      }
      goto done;
    }
    /* v3 first_row_id inheritance (spec, "First Row ID Inheritance"): a null
     * first_row_id of a data file is the manifest's plus the record counts of
     * the data files before it that had none. Only on whole reads, where
     * every preceding entry is seen. */
    if (keep && only_added_by < 0 && mf->has_first_row_id &&
        f->content == TM_ICEBERG_CONTENT_DATA && !f->has_first_row_id) {
      f->has_first_row_id = true;
      f->first_row_id = next_row_id;
      next_row_id += f->record_count > 0 ? f->record_count : 0;
    }
    if (keep) m->n_entries++;
  }
  rc = TM_OK;
  *out = m;
  m = NULL;
done:
  if (in) tm_iceberg_table_io(t)->bytes_read += in->bytes_read;
  tm_avro_reader_free(r);
  tm_input_close(in);
  tm_iceberg_manifest_free(m);
  return rc;
}

void tm_iceberg_manifest_free(tm_iceberg_manifest *m) {
  if (!m) return;
  tm_arena_dispose(&m->arena);
  tm_free(m);
}
