/*
 * federated.c - datasets without acceleration, read from their source on
 * every query (engine layer; SPEC C6, B12). See sql_int.h.
 *
 * The provider behind `tm_scan('source$NAME')`: each query opens the source
 * and describes it afresh (a new listing, the current Iceberg snapshot), then
 * scans the columns it uses with Iceberg delete files applied, pruning with
 * the pushed-down terms (sql/pushdown.c). The last described schema is kept
 * so that the next query can type its pushdown constants; a term whose
 * column changed type since is dropped.
 */
#include <string.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"
#include "util/log.h"

struct tm_sql_source {
  tm_source_spec spec;     /* owned */
  pthread_mutex_t mu;      /* guards last */
  tm_schema last;          /* the schema at the last describe */
};

typedef struct fed_handle {
  tm_sql_source *src;      /* borrowed: outlives the query (the registry's reference) */
  tm_source *source;       /* owned: opened and described for this query */
} fed_handle;

typedef struct fed_cursor {
  const char *dataset;     /* borrowed: the dataset's name */
  tm_scan *scan;           /* owned */
  const char **names;      /* owned array; names borrowed from the source's schema */
  tm_predicate pred;       /* owned: the terms that still fit the schema */
} fed_cursor;

static int fed_bind(void *payload, uint64_t query, void **handle, tm_schema *out, tm_error *err) {
  (void)query;
  tm_sql_source *src = payload;
  fed_handle *h = tm_calloc(1, sizeof *h);
  if (!h) return tm_error_nomem(err);
  h->src = src;
  tm_source_options so;
  tm_source_spec_options(&src->spec, &so);
  int rc = tm_source_open(&h->source, &so, err);
  if (rc == TM_OK) rc = tm_source_describe(h->source, err);
  if (rc == TM_ENOTFOUND)
    rc = tm_error_set(err, TM_ENOTFOUND, "dataset %s: the source holds no data yet (%s)", src->spec.name,
                      err ? err->message : "");
  if (rc == TM_OK) rc = tm_schema_copy(out, tm_source_schema(h->source), err);
  if (rc == TM_OK) {
    pthread_mutex_lock(&src->mu);
    tm_schema fresh;
    tm_schema_init(&fresh);
    if (tm_schema_copy(&fresh, out, NULL) == TM_OK) {
      tm_schema_dispose(&src->last);
      src->last = fresh;
    }
    pthread_mutex_unlock(&src->mu);
  }
  if (rc < 0) {
    tm_source_free(h->source);
    tm_free(h);
    return rc;
  }
  *handle = h;
  return TM_OK;
}

static void fed_close(void *cursor) {
  fed_cursor *c = cursor;
  if (!c) return;
  if (c->scan && tm_log_enabled(TM_LOG_DEBUG)) {
    /* What the pushed terms saved: visible with TIDEMARK_LOG=debug. */
    const tm_scan_stats *st = tm_scan_get_stats(c->scan);
    tm_buf d = TM_BUF_INIT(4096);
    if (tm_predicate_describe(&c->pred, &d, NULL) != TM_OK) tm_buf_clear(&d);
    tm_log(TM_LOG_DEBUG, c->dataset,
           "federated scan: pushed [%s]; files %lld read, %lld skipped; row groups %lld read, "
           "%lld skipped; rows %lld read, %lld returned",
           tm_buf_cstr(&d), (long long)st->files_read, (long long)st->files_skipped,
           (long long)st->row_groups_read, (long long)st->row_groups_skipped, (long long)st->rows_read,
           (long long)st->rows_returned);
    tm_buf_dispose(&d);
  }
  tm_scan_free(c->scan);
  tm_free(c->names);
  tm_predicate_dispose(&c->pred);
  tm_free(c);
}

static int fed_open(void *handle, const size_t *cols, size_t n_cols, const tm_predicate *pred,
                    void **cursor, tm_error *err) {
  fed_handle *h = handle;
  const tm_schema *s = tm_source_schema(h->source);
  fed_cursor *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  c->dataset = h->src->spec.name;
  tm_predicate_init(&c->pred);
  c->names = tm_calloc(n_cols ? n_cols : 1, sizeof *c->names);
  int rc = c->names ? TM_OK : tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < n_cols; i++) c->names[i] = s->cols[cols[i]].name;
  for (size_t i = 0; rc == TM_OK && pred && i < pred->n_terms; i++) {
    int idx = tm_schema_find(s, pred->terms[i].column);
    if (idx >= 0 && tm_type_equal(&s->cols[idx].type, &pred->terms[i].type))
      rc = tm_predicate_add_term(&c->pred, &pred->terms[i], err);
  }
  tm_scan_request req;
  tm_scan_request_init(&req);
  req.columns = c->names;
  req.n_columns = n_cols;
  req.predicate = c->pred.n_terms ? &c->pred : NULL;
  req.apply_deletes = true; /* B12 */
  if (rc == TM_OK) rc = tm_source_scan(h->source, &req, &c->scan, err);
  if (rc < 0) {
    fed_close(c);
    return rc;
  }
  *cursor = c;
  return TM_OK;
}

static int fed_next(void *cursor, tm_batch *out, tm_error *err) {
  return tm_scan_next(((fed_cursor *)cursor)->scan, out, err);
}

static void fed_unbind(void *handle) {
  fed_handle *h = handle;
  tm_source_free(h->source);
  tm_free(h);
}

static void fed_release(void *payload) {
  tm_sql_source *src = payload;
  tm_source_spec_dispose(&src->spec);
  tm_schema_dispose(&src->last);
  pthread_mutex_destroy(&src->mu);
  tm_free(src);
}

int tm_sql__source_add(tm_db *db, const char *provider_name, const tm_source_options *opts,
                       tm_sql_source **out, tm_error *err) {
  tm_sql_source *src = tm_calloc(1, sizeof *src);
  if (!src) return tm_error_nomem(err);
  pthread_mutex_init(&src->mu, NULL);
  tm_schema_init(&src->last);
  int rc = tm_source_spec_init(&src->spec, opts, err);
  tm_scan_provider p = {src, fed_bind, fed_open, fed_next, fed_close, fed_unbind, fed_release};
  if (rc == TM_OK) rc = tm_db__provider_add(db, provider_name, &p, err);
  if (rc < 0) {
    fed_release(src);
    return rc;
  }
  *out = src;
  return TM_OK;
}

int tm_sql__source_schema(tm_sql_source *s, tm_schema *out, tm_error *err) {
  pthread_mutex_lock(&s->mu);
  int rc = tm_schema_copy(out, &s->last, err);
  pthread_mutex_unlock(&s->mu);
  return rc;
}
