/*
 * plan.c - Iceberg scan planning: live files of a snapshot with the delete
 * files that apply to each, "what snapshot S added", and pruning with a
 * tm_predicate through partition transforms, manifest partition summaries
 * and column bounds (format layer). See iceberg.h.
 *
 * Pruning is an inclusive projection (Iceberg spec, "Scan Planning"): a
 * term on a source column becomes a term on each partition field derived
 * from it, and a file or manifest is skipped only when statistics prove
 * that no row can match.
 */
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"
#include "util/hash.h"

#define SCAN_ARENA_LIMIT ((size_t)1 << 31)
#define POS_PATH_FIELD_ID 2147483546

/* ---- projection of predicate terms onto partition fields ------------------- */

/* A term projected through a transform; in_values owned (tm_free). */
typedef struct proj {
  tm_pred_term term;
  uint8_t scratch[16];
} proj;

static void proj_dispose(proj *p) { tm_free(p->term.in_values); }

static bool is_time_transform(tm_iceberg_transform_kind k) {
  return k == TM_ICEBERG_TR_YEAR || k == TM_ICEBERG_TR_MONTH || k == TM_ICEBERG_TR_DAY ||
         k == TM_ICEBERG_TR_HOUR;
}

/*
 * Projects term (on a column of type src) through tr. Returns false when
 * the projection is "true" (nothing to prune with).
 */
static bool project(const tm_pred_term *term, const tm_iceberg_transform *tr,
                    const tm_iceberg_type *src, proj *out) {
  tm_error ignore;
  memset(out, 0, sizeof *out);
  tm_type rt;
  if (tr->kind == TM_ICEBERG_TR_VOID || tr->kind == TM_ICEBERG_TR_UNKNOWN) return false;
  if (tm_iceberg_transform_result(tr, src, &rt, &ignore) < 0) return false;
  out->term.column = term->column;
  out->term.type = rt;
  out->term.op = term->op;
  switch (term->op) {
    case TM_PRED_IS_NULL:
    case TM_PRED_IS_NOT_NULL:
      return true;
    case TM_PRED_EQ:
      return tm_iceberg_transform_apply(tr, src, &term->value, &out->term.value, out->scratch,
                                        &ignore) == TM_OK;
    case TM_PRED_LT:
    case TM_PRED_LE:
    case TM_PRED_GT:
    case TM_PRED_GE:
      if (tr->kind == TM_ICEBERG_TR_IDENTITY) {
        out->term.value = term->value;
        return true;
      }
      if (tr->kind != TM_ICEBERG_TR_TRUNCATE && !is_time_transform(tr->kind)) return false;
      /* Monotone transforms: col < x implies f(col) <= f(x). */
      out->term.op = (term->op == TM_PRED_LT || term->op == TM_PRED_LE) ? TM_PRED_LE : TM_PRED_GE;
      return tm_iceberg_transform_apply(tr, src, &term->value, &out->term.value, out->scratch,
                                        &ignore) == TM_OK;
    case TM_PRED_IN: {
      if (term->n_in == 0) return false;
      out->term.in_values = tm_calloc(term->n_in, sizeof *out->term.in_values);
      if (!out->term.in_values) return false;
      for (size_t i = 0; i < term->n_in; i++) {
        uint8_t scratch[16];
        if (tr->kind == TM_ICEBERG_TR_TRUNCATE && src->id == TM_ICEBERG_DECIMAL) return false;
        if (tm_iceberg_transform_apply(tr, src, &term->in_values[i], &out->term.in_values[i],
                                       scratch, &ignore) < 0) {
          return false;
        }
      }
      out->term.n_in = term->n_in;
      return true;
    }
  }
  return false;
}

/* The Iceberg type of a partition field's values (for decoding summaries). */
static void result_iceberg_type(const tm_iceberg_transform *tr, const tm_iceberg_type *src,
                                tm_iceberg_type *out) {
  memset(out, 0, sizeof *out);
  switch (tr->kind) {
    case TM_ICEBERG_TR_BUCKET:
    case TM_ICEBERG_TR_YEAR:
    case TM_ICEBERG_TR_MONTH:
    case TM_ICEBERG_TR_HOUR:
      out->id = TM_ICEBERG_INT;
      return;
    case TM_ICEBERG_TR_DAY:
      out->id = TM_ICEBERG_DATE;
      return;
    default:
      *out = *src;
      return;
  }
}

/* The literal of term typed as the column (integers widen or narrow). */
static bool term_fits(const tm_pred_term *term, const tm_type *col) {
  if (term->type.id == col->id) return true;
  return false;
}

static bool partition_may_match(const tm_pred_term *term, const tm_iceberg_partition_field *pf,
                                const tm_iceberg_type *src, const tm_value *pv) {
  proj p;
  if (!project(term, &pf->transform, src, &p)) {
    proj_dispose(&p);
    return true;
  }
  tm_col_stats cs;
  memset(&cs, 0, sizeof cs);
  if (pv->is_null) {
    cs.null_count = 1;
    cs.row_count = 1;
  } else {
    cs.has_min = cs.has_max = true;
    cs.min = cs.max = *pv;
    cs.null_count = 0;
    cs.row_count = -1;
  }
  bool ok = pv->type != p.term.type.id || tm_pred_term_may_match(&p.term, &cs);
  proj_dispose(&p);
  return ok;
}

bool tm_iceberg_file_may_match(const tm_iceberg_metadata *m, const tm_iceberg_schema *schema,
                               const tm_iceberg_data_file *f, const tm_predicate *filter) {
  if (!filter) return true;
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, f->spec_id);
  for (size_t k = 0; k < filter->n_terms; k++) {
    const tm_pred_term *term = &filter->terms[k];
    const tm_iceberg_field *fld = tm_iceberg_schema_find_name(schema, term->column);
    if (!fld || !tm_iceberg_type_is_primitive(fld->type)) continue;
    tm_type ft;
    tm_error ignore;
    if (tm_iceberg_type_to_tm(fld->type, &ft, &ignore) < 0 || !term_fits(term, &ft)) continue;
    for (size_t i = 0; spec && i < spec->n_fields && i < f->n_partition; i++) {
      const tm_iceberg_partition_field *pf = &spec->fields[i];
      if (pf->source_id != fld->id) continue;
      if (!partition_may_match(term, pf, fld->type, &f->partition[i])) return false;
    }
    const tm_iceberg_col_stats *st = NULL;
    for (size_t i = 0; i < f->n_stats; i++) {
      if (f->stats[i].field_id == fld->id) {
        st = &f->stats[i];
        break;
      }
    }
    if (!st) continue;
    tm_col_stats cs;
    memset(&cs, 0, sizeof cs);
    cs.null_count = st->null_count;
    cs.row_count = st->null_count >= 0 ? f->record_count : -1;
    if (st->nan_count > 0 || (st->nan_count < 0 && (fld->type->id == TM_ICEBERG_FLOAT ||
                                                    fld->type->id == TM_ICEBERG_DOUBLE))) {
      /* NaN values are outside the bounds: comparisons cannot prune. */
      if (term->op != TM_PRED_IS_NULL && term->op != TM_PRED_IS_NOT_NULL) continue;
    }
    if (st->has_lower &&
        tm_iceberg_value_from_bytes(fld->type, st->lower, &cs.min, &ignore) == TM_OK) {
      cs.has_min = true;
    }
    if (st->has_upper &&
        tm_iceberg_value_from_bytes(fld->type, st->upper, &cs.max, &ignore) == TM_OK) {
      cs.has_max = true;
    }
    if (!tm_pred_term_may_match(term, &cs)) return false;
  }
  return true;
}

/* Manifest-level pruning with the manifest list's partition summaries. */
static bool manifest_may_match(const tm_iceberg_metadata *m, const tm_iceberg_schema *schema,
                               const tm_iceberg_manifest_file *mf, const tm_predicate *filter) {
  if (!filter || !mf->has_partitions) return true;
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, mf->spec_id);
  if (!spec) return true;
  for (size_t k = 0; k < filter->n_terms; k++) {
    const tm_pred_term *term = &filter->terms[k];
    const tm_iceberg_field *fld = tm_iceberg_schema_find_name(schema, term->column);
    if (!fld || !tm_iceberg_type_is_primitive(fld->type)) continue;
    tm_type ft;
    tm_error ignore;
    if (tm_iceberg_type_to_tm(fld->type, &ft, &ignore) < 0 || !term_fits(term, &ft)) continue;
    for (size_t i = 0; i < spec->n_fields && i < mf->n_partitions; i++) {
      const tm_iceberg_partition_field *pf = &spec->fields[i];
      if (pf->source_id != fld->id) continue;
      const tm_iceberg_field_summary *fs = &mf->partitions[i];
      proj p;
      if (!project(term, &pf->transform, fld->type, &p)) {
        proj_dispose(&p);
        continue;
      }
      tm_iceberg_type rt;
      result_iceberg_type(&pf->transform, fld->type, &rt);
      bool is_float = rt.id == TM_ICEBERG_FLOAT || rt.id == TM_ICEBERG_DOUBLE;
      if (is_float && fs->contains_nan != 0 && term->op != TM_PRED_IS_NULL &&
          term->op != TM_PRED_IS_NOT_NULL) {
        proj_dispose(&p);
        continue;
      }
      tm_col_stats cs;
      memset(&cs, 0, sizeof cs);
      cs.null_count = fs->contains_null ? -1 : 0;
      cs.row_count = -1;
      if (fs->has_lower && tm_iceberg_value_from_bytes(&rt, fs->lower, &cs.min, &ignore) == TM_OK)
        cs.has_min = true;
      if (fs->has_upper && tm_iceberg_value_from_bytes(&rt, fs->upper, &cs.max, &ignore) == TM_OK)
        cs.has_max = true;
      if (!fs->has_lower && !fs->has_upper && fs->contains_null && !is_float) {
        cs.null_count = cs.row_count = 1; /* every value is null */
      }
      bool ok = (cs.has_min && cs.min.type != p.term.type.id) ||
                tm_pred_term_may_match(&p.term, &cs);
      proj_dispose(&p);
      if (!ok) return false;
    }
  }
  return true;
}

/* ---- delete assignment ------------------------------------------------------- */

typedef struct ptr_vec {
  const tm_iceberg_data_file **items;
  char **ref_keys; /* position deletes: the one data file they hit, or NULL */
  size_t n, cap;
} ptr_vec;

static int vec_push(tm_arena *a, ptr_vec *v, const tm_iceberg_data_file *f, char *ref,
                    tm_error *err) {
  if (v->n == v->cap) {
    size_t ncap = v->cap ? v->cap * 2 : 4;
    const tm_iceberg_data_file **items = tm_arena_calloc(a, ncap, sizeof *items, err);
    char **refs = tm_arena_calloc(a, ncap, sizeof *refs, err);
    if (!items || !refs) return err->code;
    if (v->n) {
      memcpy(items, v->items, v->n * sizeof *items);
      memcpy(refs, v->ref_keys, v->n * sizeof *refs);
    }
    v->items = items;
    v->ref_keys = refs;
    v->cap = ncap;
  }
  v->items[v->n] = f;
  v->ref_keys[v->n] = ref;
  v->n++;
  return TM_OK;
}

bool tm_iceberg_is_deletion_vector(const tm_iceberg_data_file *f) {
  return f->content == TM_ICEBERG_CONTENT_POSITION_DELETES &&
         (f->has_content_offset || (f->format && strcasecmp(f->format, "puffin") == 0));
}

/* What a deletion vector's manifest entry must carry to be read (spec: required). */
static int check_deletion_vector(const tm_iceberg_data_file *f, tm_error *err) {
  if (!f->referenced_data_file || !f->has_content_offset || f->content_offset < 0 ||
      f->content_size < 0 || !f->format || strcasecmp(f->format, "puffin") != 0) {
    return TM_CORRUPT(err,
                      "%s: deletion vector entry without a Puffin file_format, "
                      "referenced_data_file, content_offset and content_size_in_bytes",
                      f->path);
  }
  return TM_OK;
}

static bool spec_unpartitioned(const tm_iceberg_metadata *m, int32_t spec_id) {
  const tm_iceberg_spec *s = tm_iceberg_metadata_spec(m, spec_id);
  if (!s) return false;
  for (size_t i = 0; i < s->n_fields; i++) {
    if (s->fields[i].transform.kind != TM_ICEBERG_TR_VOID) return false;
  }
  return true;
}

static char *arena_key(tm_arena *a, const tm_iceberg_table *t, const char *path, tm_error *err) {
  char *k = NULL;
  if (tm_iceberg_table_path_key(t, path, &k, err) < 0) return NULL;
  char *copy = tm_arena_strndup(a, k, strlen(k), err);
  tm_free(k);
  return copy;
}

/* The data file a position delete file targets, if it targets exactly one. */
static char *pos_delete_target(tm_arena *a, const tm_iceberg_table *t,
                               const tm_iceberg_data_file *d, tm_error *err, bool *failed) {
  const char *target = d->referenced_data_file;
  char tmp[4096];
  if (!target) {
    for (size_t i = 0; i < d->n_stats; i++) {
      const tm_iceberg_col_stats *s = &d->stats[i];
      if (s->field_id != POS_PATH_FIELD_ID || !s->has_lower || !s->has_upper) continue;
      if (s->lower.len == s->upper.len && s->lower.len < sizeof tmp &&
          memcmp(s->lower.ptr, s->upper.ptr, s->lower.len) == 0) {
        memcpy(tmp, s->lower.ptr, s->lower.len);
        tmp[s->lower.len] = '\0';
        target = tmp;
      }
    }
  }
  if (!target) return NULL;
  char *k = arena_key(a, t, target, err);
  if (!k) *failed = true;
  return k;
}

typedef struct delete_index {
  tm_map pos;        /* partition key -> ptr_vec* */
  tm_map eq;         /* partition key -> ptr_vec* */
  ptr_vec global_eq; /* equality deletes of unpartitioned specs */
} delete_index;

static int index_delete(tm_arena *a, const tm_iceberg_table *t, delete_index *ix,
                        const tm_iceberg_data_file *d, tm_buf *kb, tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  if (d->content == TM_ICEBERG_CONTENT_EQUALITY_DELETES && spec_unpartitioned(m, d->spec_id)) {
    return vec_push(a, &ix->global_eq, d, NULL, err);
  }
  tm_buf_clear(kb);
  TM_TRY(tm_iceberg__partition_key(d, kb, err));
  tm_map *map = d->content == TM_ICEBERG_CONTENT_EQUALITY_DELETES ? &ix->eq : &ix->pos;
  ptr_vec *v = tm_map_get(map, kb->ptr, kb->len, NULL);
  if (!v) {
    v = tm_arena_alloc(a, sizeof *v, err);
    if (!v) return err->code;
    TM_TRY(tm_map_put(map, kb->ptr, kb->len, v, NULL, err));
  }
  char *ref = NULL;
  if (d->content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
    bool failed = false;
    ref = pos_delete_target(a, t, d, err, &failed);
    if (failed) return err->code;
  }
  return vec_push(a, v, d, ref, err);
}

/* Attaches the deletes that apply to task->file. */
static int attach_deletes(tm_arena *a, delete_index *ix, tm_iceberg_scan_task *task,
                          tm_buf *kb, int64_t *n_deletes, tm_error *err) {
  const tm_iceberg_data_file *f = task->file;
  tm_buf_clear(kb);
  TM_TRY(tm_iceberg__partition_key(f, kb, err));
  ptr_vec *pv = tm_map_get(&ix->pos, kb->ptr, kb->len, NULL);
  ptr_vec *ev = tm_map_get(&ix->eq, kb->ptr, kb->len, NULL);
  size_t max = (pv ? pv->n : 0) + (ev ? ev->n : 0) + ix->global_eq.n;
  if (max == 0) return TM_OK;
  task->deletes = tm_arena_calloc(a, max, sizeof *task->deletes, err);
  if (!task->deletes) return err->code;
  size_t n = 0;
  /* A deletion vector replaces every position delete file of its data file
   * (Iceberg spec, "Deletion Vectors"): when one applies, the others are
   * ignored; two for one data file is a broken table. */
  const tm_iceberg_data_file *dv = NULL;
  for (size_t i = 0; pv && i < pv->n; i++) {
    const tm_iceberg_data_file *d = pv->items[i];
    if (!tm_iceberg_is_deletion_vector(d) || f->sequence_number > d->sequence_number) continue;
    if (!pv->ref_keys[i] || strcmp(pv->ref_keys[i], task->key) != 0) continue;
    if (dv) {
      return TM_CORRUPT(err, "%s: two deletion vectors (%s and %s) for one data file", f->path,
                        dv->path, d->path);
    }
    dv = d;
  }
  if (dv) task->deletes[n++] = dv;
  for (size_t i = 0; !dv && pv && i < pv->n; i++) {
    const tm_iceberg_data_file *d = pv->items[i];
    if (tm_iceberg_is_deletion_vector(d)) continue;
    if (f->sequence_number > d->sequence_number) continue;
    if (pv->ref_keys[i] && strcmp(pv->ref_keys[i], task->key) != 0) continue;
    task->deletes[n++] = d;
  }
  for (size_t i = 0; ev && i < ev->n; i++) {
    if (f->sequence_number < ev->items[i]->sequence_number) task->deletes[n++] = ev->items[i];
  }
  for (size_t i = 0; i < ix->global_eq.n; i++) {
    const tm_iceberg_data_file *d = ix->global_eq.items[i];
    if (f->sequence_number < d->sequence_number) {
      bool dup = false;
      for (size_t k = 0; k < n; k++) dup = dup || task->deletes[k] == d;
      if (!dup) task->deletes[n++] = d;
    }
  }
  task->n_deletes = n;
  *n_deletes += (int64_t)n;
  return TM_OK;
}

/* ---- scans -------------------------------------------------------------------- */

static int keep_manifest(tm_iceberg_scan *s, tm_iceberg_manifest *m, tm_error *err) {
  tm_iceberg_manifest **v = tm_reallocarray(s->manifests, s->n_manifests + 1, sizeof *v);
  if (!v) return tm_error_nomem(err);
  s->manifests = v;
  s->manifests[s->n_manifests++] = m;
  return TM_OK;
}

int tm_iceberg_plan_scan(const tm_iceberg_table *t, const tm_iceberg_scan_options *opts,
                         tm_iceberg_scan **out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  tm_iceberg_scan_options defaults = TM_ICEBERG_SCAN_OPTIONS_INIT;
  if (!opts) opts = &defaults;
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_snapshot *snap = NULL;
  if (opts->snapshot_id >= 0) {
    snap = tm_iceberg_metadata_snapshot(m, opts->snapshot_id);
    if (!snap) {
      return tm_error_set(err, TM_ENOTFOUND, "snapshot %lld is not in the table metadata",
                          (long long)opts->snapshot_id);
    }
  } else {
    snap = tm_iceberg_metadata_current(m);
  }
  tm_iceberg_scan *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  tm_arena_init(&s->arena, SCAN_ARENA_LIMIT);
  s->snapshot = snap;
  s->schema = opts->use_snapshot_schema ? tm_iceberg_snapshot_schema(m, snap)
                                        : tm_iceberg_metadata_current_schema(m);
  tm_iceberg_manifest_list *list = NULL;
  tm_buf kb = TM_BUF_INIT((size_t)1 << 20);
  delete_index ix;
  memset(&ix, 0, sizeof ix);
  tm_map_init(&ix.pos);
  tm_map_init(&ix.eq);
  ptr_vec data;
  memset(&data, 0, sizeof data);
  int rc = TM_OK;
  if (!snap) goto finish;
  TM_CHECK(tm_iceberg_read_manifest_list(t, snap, &list, err));
  s->stats.manifest_lists_read = 1;
  /* Delete manifests first, so that a broken delete entry fails early. */
  for (int pass = 1; pass >= 0; pass--) {
    for (size_t i = 0; i < list->n_files; i++) {
      const tm_iceberg_manifest_file *mf = &list->files[i];
      if (mf->content != pass) continue;
      if (mf->added_files == 0 && mf->existing_files == 0) {
        s->stats.manifests_skipped++;
        continue;
      }
      if (pass == 0 && !manifest_may_match(m, s->schema, mf, opts->filter)) {
        s->stats.manifests_skipped++;
        continue;
      }
      tm_iceberg_manifest *man = NULL;
      TM_CHECK(tm_iceberg_read_manifest(t, mf, -1, &man, err));
      s->stats.manifests_read++;
      rc = keep_manifest(s, man, err);
      if (rc < 0) {
        tm_iceberg_manifest_free(man);
        goto done;
      }
      for (size_t k = 0; k < man->n_entries; k++) {
        const tm_iceberg_data_file *f = &man->entries[k];
        if (f->status == TM_ICEBERG_DELETED) continue;
        if (f->content == TM_ICEBERG_CONTENT_DATA) {
          if (pass == 1) {
            rc = TM_CORRUPT(err, "%s: a data file in a delete manifest", mf->path);
            goto done;
          }
          s->stats.data_files++;
          if (!tm_iceberg_file_may_match(m, s->schema, f, opts->filter)) {
            s->stats.data_files_skipped++;
            continue;
          }
          TM_CHECK(vec_push(&s->arena, &data, f, NULL, err));
        } else {
          if (tm_iceberg_is_deletion_vector(f)) TM_CHECK(check_deletion_vector(f, err));
          TM_CHECK(index_delete(&s->arena, t, &ix, f, &kb, err));
        }
      }
    }
  }
  s->tasks = tm_arena_calloc(&s->arena, data.n ? data.n : 1, sizeof *s->tasks, err);
  if (!s->tasks) {
    rc = err->code;
    goto done;
  }
  for (size_t i = 0; i < data.n; i++) {
    tm_iceberg_scan_task *task = &s->tasks[i];
    task->file = data.items[i];
    task->key = arena_key(&s->arena, t, task->file->path, err);
    if (!task->key) {
      rc = err->code;
      goto done;
    }
    TM_CHECK(attach_deletes(&s->arena, &ix, task, &kb, &s->stats.delete_files, err));
    s->n_tasks = i + 1;
  }
finish:
  *out = s;
  s = NULL;
done:
  tm_map_dispose(&ix.pos, NULL);
  tm_map_dispose(&ix.eq, NULL);
  tm_buf_dispose(&kb);
  tm_iceberg_manifest_list_free(list);
  tm_iceberg_scan_free(s);
  return rc;
}

void tm_iceberg_scan_free(tm_iceberg_scan *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_manifests; i++) tm_iceberg_manifest_free(s->manifests[i]);
  tm_free(s->manifests);
  tm_arena_dispose(&s->arena);
  tm_free(s);
}

/* ---- what a snapshot added ------------------------------------------------------ */

static int push_file(const tm_iceberg_data_file ***arr, size_t *n, const tm_iceberg_data_file *f,
                     tm_error *err) {
  const tm_iceberg_data_file **v = tm_reallocarray((void *)*arr, *n + 1, sizeof *v);
  if (!v) return tm_error_nomem(err);
  v[(*n)++] = f;
  *arr = v;
  return TM_OK;
}

int tm_iceberg_plan_added(const tm_iceberg_table *t, int64_t snapshot_id,
                          tm_iceberg_added **out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_snapshot *snap = tm_iceberg_metadata_snapshot(m, snapshot_id);
  if (!snap) {
    return tm_error_set(err, TM_ENOTFOUND, "snapshot %lld is not in the table metadata",
                        (long long)snapshot_id);
  }
  tm_iceberg_added *a = tm_calloc(1, sizeof *a);
  if (!a) return tm_error_nomem(err);
  a->snapshot = snap;
  tm_iceberg_manifest_list *list = NULL;
  int rc;
  TM_CHECK(tm_iceberg_read_manifest_list(t, snap, &list, err));
  a->stats.manifest_lists_read = 1;
  for (size_t i = 0; i < list->n_files; i++) {
    const tm_iceberg_manifest_file *mf = &list->files[i];
    if (mf->added_snapshot_id != snapshot_id || mf->added_files == 0) {
      a->stats.manifests_skipped++;
      continue;
    }
    tm_iceberg_manifest *man = NULL;
    TM_CHECK(tm_iceberg_read_manifest(t, mf, snapshot_id, &man, err));
    a->stats.manifests_read++;
    tm_iceberg_manifest **v = tm_reallocarray(a->manifests, a->n_manifests + 1, sizeof *v);
    if (!v) {
      tm_iceberg_manifest_free(man);
      rc = tm_error_nomem(err);
      goto done;
    }
    a->manifests = v;
    a->manifests[a->n_manifests++] = man;
    for (size_t k = 0; k < man->n_entries; k++) {
      const tm_iceberg_data_file *f = &man->entries[k];
      if (f->content == TM_ICEBERG_CONTENT_DATA) {
        a->stats.data_files++;
        TM_CHECK(push_file(&a->data_files, &a->n_data_files, f, err));
      } else {
        a->stats.delete_files++;
        TM_CHECK(push_file(&a->delete_files, &a->n_delete_files, f, err));
      }
    }
  }
  tm_iceberg_manifest_list_free(list);
  *out = a;
  return TM_OK;
done:
  tm_iceberg_manifest_list_free(list);
  tm_iceberg_added_free(a);
  return rc;
}

void tm_iceberg_added_free(tm_iceberg_added *a) {
  if (!a) return;
  for (size_t i = 0; i < a->n_manifests; i++) tm_iceberg_manifest_free(a->manifests[i]);
  tm_free(a->manifests);
  tm_free((void *)a->data_files);
  tm_free((void *)a->delete_files);
  tm_free(a);
}
