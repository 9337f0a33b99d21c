/*
 * source.c - the source front door and shared helpers (source layer).
 * See source.h.
 */
#include "source/source.h"

#include <string.h>

#include "objstore/objstore.h"
#include "source/source_int.h"
#include "util/alloc.h"

void tm_scan_request_init(tm_scan_request *r) {
  memset(r, 0, sizeof *r);
  r->version = TM_SCAN_REQUEST_VERSION;
}

static int dup_opt(char **dst, const char *src, tm_error *err) {
  if (!src) return TM_OK;
  *dst = tm_strdup(src);
  return *dst ? TM_OK : tm_error_nomem(err);
}

int tm_source_spec_init(tm_source_spec *out, const tm_source_options *o, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->params);
  out->time_column_is_text = o->time_column_is_text;
  out->unsupported_action = o->unsupported_action;
  TM_TRY(dup_opt(&out->from, o->from, err));
  TM_TRY(dup_opt(&out->name, o->name, err));
  TM_TRY(dup_opt(&out->base_dir, o->base_dir, err));
  TM_TRY(dup_opt(&out->time_column, o->time_column, err));
  TM_TRY(dup_opt(&out->time_partition_column, o->time_partition_column, err));
  if (o->params) TM_TRY(tm_kv_copy(&out->params, o->params, err));
  return TM_OK;
}

void tm_source_spec_dispose(tm_source_spec *s) {
  tm_free(s->from);
  tm_free(s->name);
  tm_free(s->base_dir);
  tm_free(s->time_column);
  tm_free(s->time_partition_column);
  tm_kv_dispose(&s->params);
  memset(s, 0, sizeof *s);
}

void tm_source_spec_options(const tm_source_spec *s, tm_source_options *out) {
  memset(out, 0, sizeof *out);
  out->version = TM_SOURCE_OPTIONS_VERSION;
  out->from = s->from;
  out->name = s->name;
  out->params = &s->params;
  out->base_dir = s->base_dir;
  out->time_column = s->time_column;
  out->time_partition_column = s->time_partition_column;
  out->time_column_is_text = s->time_column_is_text;
  out->unsupported_action = s->unsupported_action;
  /* The flag is the spec's own state (not const data): sources opened from it share it. */
  out->warned_unsupported = (atomic_bool *)&s->warned_unsupported;
}

void tm_source_table_dispose(tm_source_table *t) {
  for (size_t i = 0; i < t->n_snapshots; i++) tm_free(t->snapshots[i].operation);
  tm_free(t->snapshots);
  tm_free(t->uuid);
  memset(t, 0, sizeof *t);
}

int tm_source__init(tm_source *s, const tm_source_vtable *vt, const tm_source_options *opts,
                    tm_error *err) {
  memset(s, 0, sizeof *s);
  s->vt = vt;
  tm_schema_init(&s->schema);
  s->name = tm_strdup(opts->name ? opts->name : "");
  s->from = tm_strdup(opts->from ? opts->from : "");
  if (!s->name || !s->from) {
    tm_source__dispose(s);
    return tm_error_nomem(err);
  }
  return TM_OK;
}

void tm_source__dispose(tm_source *s) {
  tm_free(s->name);
  tm_free(s->from);
  tm_schema_dispose(&s->schema);
  s->name = s->from = NULL;
}

/*
 * The params of a file, S3 or Azure source: the file format's, Spice's
 * hive_partitioning_enabled (false only), and the object store's (s3_*,
 * allow_http, client_timeout on s3://; abfs_*, allow_http on abfs://), whose
 * names and values the store checks.
 */
static int check_fileset_params(const char *from, const tm_kv *params, tm_error *err) {
  bool s3 = tm_str_has_prefix(from, "s3://") || tm_str_has_prefix(from, "s3a://");
  bool abfs = tm_str_has_prefix(from, "abfs://") || tm_str_has_prefix(from, "abfss://");
  static const char *const known[] = {"file_format", "csv_has_header", "csv_delimiter",
                                      "csv_quote", "csv_escape", "csv_schema_infer_max_records",
                                      "json_format", "file_compression_type", NULL};
  for (size_t i = 0; params && i < params->len; i++) {
    const char *k = params->items[i].key, *v = params->items[i].value;
    bool ok = false;
    for (size_t j = 0; known[j] && !ok; j++) ok = strcmp(k, known[j]) == 0;
    if (ok) continue;
    if (strcmp(k, "hive_partitioning_enabled") == 0) {
      if (strcmp(v, "false") == 0) continue;
      return tm_error_set(err, TM_EINVALID, "param hive_partitioning_enabled: '%s': tidemark does "
                          "not read partition columns from folder names (allowed: false)", v);
    }
    if (s3 && (tm_str_has_prefix(k, "s3_") || !strcmp(k, "allow_http") || !strcmp(k, "client_timeout")))
      continue;
    if (abfs && (tm_str_has_prefix(k, "abfs_") || !strcmp(k, "allow_http"))) continue;
    return tm_error_set(err, TM_EINVALID, "unknown param '%s' of a%s source (allowed: file_format, "
                        "csv_has_header, csv_delimiter, csv_quote, csv_escape, "
                        "csv_schema_infer_max_records, json_format, file_compression_type, "
                        "hive_partitioning_enabled%s)", k,
                        s3 ? "n s3" : abfs ? "n abfs" : " file",
                        s3 ? ", s3_*, allow_http, client_timeout" : abfs ? ", abfs_*, allow_http" : "");
  }
  /* The format params' values, as the source reads them. */
  tm_source__file_params fp;
  TM_TRY(tm_source__file_params_parse(&fp, NULL, params, err));
  /* The store's own names and values, checked by opening it (that contacts nothing). */
  return s3 || abfs ? tm_objstore_check_params(from, params, err) : TM_OK;
}

int tm_source_check_params(const char *from, const tm_kv *params, tm_error *err) {
  if (!from) return TM_OK;
  if (tm_str_has_prefix(from, "iceberg:")) return tm_source__iceberg_check_params(from, params, err);
  if (tm_str_has_prefix(from, "glue:")) return tm_source__glue_check_params(params, err);
  if (tm_str_has_prefix(from, "file:") || tm_str_has_prefix(from, "s3://") ||
      tm_str_has_prefix(from, "s3a://") || tm_str_has_prefix(from, "abfs://") ||
      tm_str_has_prefix(from, "abfss://"))
    return check_fileset_params(from, params, err);
  return TM_OK;
}

int tm_source_open(tm_source **out, const tm_source_options *opts, tm_error *err) {
  const char *from = opts->from;
  if (!from) return tm_error_set(err, TM_EINVALID, "a source needs a 'from'");
  if (tm_str_has_prefix(from, "file:") || tm_str_has_prefix(from, "s3://") ||
      tm_str_has_prefix(from, "s3a://") || tm_str_has_prefix(from, "abfs://") ||
      tm_str_has_prefix(from, "abfss://"))
    return tm_source__open_fileset(out, opts, err);
  if (tm_str_has_prefix(from, "iceberg:")) return tm_source__open_iceberg(out, opts, err);
  if (tm_str_has_prefix(from, "glue:")) return tm_source__open_glue(out, opts, err);
  return tm_error_set(err, TM_EINVALID, "unknown source '%s'", from);
}

void tm_source_free(tm_source *s) {
  if (s) s->vt->free(s);
}

int tm_source_describe(tm_source *s, tm_error *err) {
  int rc = s->vt->describe(s, err);
  s->described = rc == TM_OK;
  return rc;
}

const tm_schema *tm_source_schema(const tm_source *s) { return &s->schema; }

int tm_source_table_info(tm_source *s, tm_source_table *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  if (!s->vt->table)
    return tm_error_set(err, TM_EUNSUPPORTED, "%s: the source has no snapshots", s->name);
  return s->vt->table(s, out, err);
}

int tm_source_scan(tm_source *s, const tm_scan_request *req, tm_scan **out, tm_error *err) {
  if (!s->described) TM_TRY(tm_source_describe(s, err));
  return s->vt->scan(s, req, out, err);
}

int tm_scan_next(tm_scan *s, tm_batch *out, tm_error *err) { return s->vt->next(s, out, err); }

const tm_scan_stats *tm_scan_get_stats(const tm_scan *s) { return &s->stats; }

void tm_scan_free(tm_scan *s) {
  if (s) s->vt->free(s);
}

int tm_source__conform(const tm_schema *want, tm_batch *in, tm_batch *out,
                       const char *file_name, tm_error *err) {
  size_t n = want->n_cols;
  struct ArrowArray *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) {
    tm_batch_release(in); /* taken either way */
    return tm_error_nomem(err);
  }
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    const tm_column *c = &want->cols[i];
    int j = tm_schema_find(&in->schema, c->name);
    if (j < 0) {
      if (!c->nullable) {
        rc = tm_error_set(err, TM_EINVALID, "%s: has no column '%s'", file_name, c->name);
        break;
      }
      rc = tm_array_make_nulls(c->type, in->n_rows, &cols[i], err);
      continue;
    }
    const tm_type *have = &in->schema.cols[j].type;
    if (!tm_type_equal(have, &c->type)) {
      char a[64], b[64];
      tm_type_name(have, a, sizeof a);
      tm_type_name(&c->type, b, sizeof b);
      rc = tm_error_set(err, TM_EINVALID,
                        "%s: column '%s' has type %s, but the dataset's schema says %s", file_name,
                        c->name, a, b);
      break;
    }
    rc = tm_batch_take_column(in, (size_t)j, &cols[i], err);
  }
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, want, cols, in->n_rows, err);
  } else {
    for (size_t i = 0; i < n; i++)
      if (cols[i].release) cols[i].release(&cols[i]);
  }
  tm_free(cols);
  tm_batch_release(in);
  return rc;
}

int tm_source__finish_batch(const tm_predicate *pred, const char *const *columns,
                            size_t n_columns, tm_batch *b, tm_batch *out, tm_error *err) {
  tm_batch_init(out);
  int rc = TM_OK;
  tm_batch filtered;
  tm_batch_init(&filtered);
  if (pred && pred->n_terms > 0 && b->n_rows > 0) {
    uint8_t *keep = tm_calloc((size_t)(b->n_rows + 7) / 8 + 1, 1);
    if (!keep) {
      tm_batch_release(b);
      return tm_error_nomem(err);
    }
    int64_t kept = 0;
    rc = tm_predicate_eval(pred, b, keep, &kept, err);
    if (rc == TM_OK && kept < b->n_rows) {
      rc = tm_batch_filter(b, keep, &filtered, err);
      tm_batch_release(b);
      if (rc == TM_OK) tm_batch_move(b, &filtered);
    }
    tm_free(keep);
  }
  if (rc == TM_OK && columns) {
    size_t *idx = tm_calloc(n_columns ? n_columns : 1, sizeof *idx);
    if (!idx) rc = tm_error_nomem(err);
    for (size_t i = 0; i < n_columns && rc == TM_OK; i++) {
      int j = tm_schema_find(&b->schema, columns[i]);
      if (j < 0) rc = tm_error_set(err, TM_ENOTFOUND, "no column '%s' in the data", columns[i]);
      else idx[i] = (size_t)j;
    }
    if (rc == TM_OK) rc = tm_batch_project(b, idx, n_columns, out, err);
    tm_free(idx);
    tm_batch_release(b);
    return rc;
  }
  if (rc == TM_OK) tm_batch_move(out, b);
  else tm_batch_release(b);
  return rc;
}
