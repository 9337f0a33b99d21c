/*
 * sqlsource.c - refresh_sql over a source, in DuckDB (engine layer, SQL module; SPEC
 * A10). See sqlsource.h.
 */
#include "engine/sqlsource.h"

#include <string.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"

struct tm_sqlsource {
  tm_db *db;                      /* a reference */
  tm_source *src;                 /* borrowed */
  duckdb_connection conn;         /* owned: holds the temporary view */
  duckdb_prepared_statement ps;   /* owned: the statement */
  char *provider;                 /* owned: the relation name, once registered */
  tm_schema schema;               /* owned: the result's columns */
  tm_predicate pushdown;          /* owned: terms of the statement's WHERE clause */
  const tm_scan_request *req;     /* the running scan's request (borrowed) */
  tm_scan *inner;                 /* the running source scan (owned by its cursor) */
  tm_scan_stats inner_stats;      /* the last source scan's statistics */
  bool busy;
};

/* ---- the provider: the source scan under the statement -------------------------------- */

typedef struct ss_cursor {
  tm_sqlsource *s;
  tm_scan *scan;                  /* owned */
  const char **names;             /* owned array */
  tm_predicate pred;              /* owned */
} ss_cursor;

static int ss_bind(void *payload, uint64_t query, void **handle, tm_schema *out, tm_error *err) {
  (void)query;
  tm_sqlsource *s = payload;
  *handle = s;
  return tm_schema_copy(out, tm_source_schema(s->src), err);
}

static void ss_close(void *cursor) {
  ss_cursor *c = cursor;
  if (!c) return;
  if (c->scan) c->s->inner_stats = *tm_scan_get_stats(c->scan);
  if (c->s->inner == c->scan) c->s->inner = NULL;
  tm_scan_free(c->scan);
  tm_free(c->names);
  tm_predicate_dispose(&c->pred);
  tm_free(c);
}

static int ss_open(void *handle, const size_t *cols, size_t n_cols, const tm_predicate *pred,
                   void **cursor, tm_error *err) {
  tm_sqlsource *s = handle;
  const tm_schema *sch = tm_source_schema(s->src);
  ss_cursor *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  c->s = s;
  tm_predicate_init(&c->pred);
  c->names = tm_calloc(n_cols ? n_cols : 1, sizeof *c->names);
  int rc = c->names ? TM_OK : tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < n_cols; i++) c->names[i] = sch->cols[cols[i]].name;
  const tm_predicate *parts[3] = {s->req ? s->req->predicate : NULL, &s->pushdown, pred};
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; rc == TM_OK && parts[k] && i < parts[k]->n_terms; i++)
      rc = tm_predicate_add_term(&c->pred, &parts[k]->terms[i], err);
  tm_scan_request req;
  if (s->req) req = *s->req;
  else tm_scan_request_init(&req);
  req.columns = c->names;
  req.n_columns = n_cols;
  req.predicate = c->pred.n_terms ? &c->pred : NULL;
  if (rc == TM_OK) rc = tm_source_scan(s->src, &req, &c->scan, err);
  /* The source decodes ahead while DuckDB runs the statement (readahead.c). */
  if (rc == TM_OK) rc = tm_scan_readahead(&c->scan, err);
  if (rc < 0) {
    ss_close(c);
    return rc;
  }
  s->inner = c->scan;
  *cursor = c;
  return TM_OK;
}

static int ss_next(void *cursor, tm_batch *out, tm_error *err) {
  return tm_scan_next(((ss_cursor *)cursor)->scan, out, err);
}

static void ss_unbind(void *handle) { (void)handle; }
static void ss_release(void *payload) { (void)payload; }

/* ---- the statement ------------------------------------------------------------------------ */

void tm_sqlsource_free(tm_sqlsource *s) {
  if (!s) return;
  if (s->ps) duckdb_destroy_prepare(&s->ps);
  if (s->conn) duckdb_disconnect(&s->conn);
  if (s->provider) tm_db__provider_remove(s->db, s->provider);
  tm_free(s->provider);
  tm_schema_dispose(&s->schema);
  tm_predicate_dispose(&s->pushdown);
  tm_db_release(s->db);
  tm_free(s);
}

int tm_sqlsource_new(tm_sqlsource **out, tm_db *db, tm_source *src, const char *name,
                     const char *sql, tm_error *err) {
  static uint64_t counter;
  tm_sqlsource *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->db = tm_db_retain(db);
  s->src = src;
  tm_schema_init(&s->schema);
  tm_predicate_init(&s->pushdown);
  uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  s->provider = tm_asprintf("refresh$%llu$%s", (unsigned long long)n, name);
  int rc = s->provider ? TM_OK : tm_error_nomem(err);
  tm_scan_provider p = {s, ss_bind, ss_open, ss_next, ss_close, ss_unbind, ss_release};
  if (rc == TM_OK) {
    rc = tm_db__provider_add(db, s->provider, &p, err);
    if (rc < 0) {
      tm_free(s->provider);
      s->provider = NULL;
    }
  }
  if (rc == TM_OK) rc = tm_db__connect(db, &s->conn, err);
  /* The dataset's name, on this connection only: the source. */
  tm_buf view = TM_BUF_INIT(1 << 20);
  if (rc == TM_OK) rc = tm_buf_puts(&view, "CREATE TEMP VIEW ", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&view, name, err);
  if (rc == TM_OK) rc = tm_buf_puts(&view, " AS SELECT * FROM tm_scan(", err);
  if (rc == TM_OK) rc = tm_engine__quote_string(&view, s->provider, strlen(s->provider), err);
  if (rc == TM_OK) rc = tm_buf_puts(&view, ")", err);
  if (rc == TM_OK) rc = tm_db__exec(s->conn, tm_buf_cstr(&view), "refresh_sql", err);
  tm_buf_dispose(&view);
  json_t *ast = NULL;
  if (rc == TM_OK) {
    rc = tm_sql__gate(s->conn, sql, NULL, &s->ps, &ast, err);
    if (rc < 0) tm_error_prefix(err, "refresh_sql");
  }
  if (rc == TM_OK && !ast)
    rc = tm_error_set(err, TM_EINVALID, "refresh_sql must be a SELECT");
  if (rc == TM_OK) rc = tm_sql__pushdown(ast, name, tm_source_schema(src), &s->pushdown, err);
  json_decref(ast);
  idx_t ncol = rc == TM_OK ? duckdb_prepared_statement_column_count(s->ps) : 0;
  const tm_schema *srcs = tm_source_schema(src);
  for (idx_t i = 0; rc == TM_OK && i < ncol; i++) {
    const char *cname = duckdb_prepared_statement_column_name(s->ps, i);
    duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(s->ps, i);
    int si = cname ? tm_schema_find(srcs, cname) : -1;
    tm_type t;
    char what[300];
    snprintf(what, sizeof what, "refresh_sql column '%s'", cname ? cname : "?");
    rc = tm_duck_type_to_tm(lt, si >= 0 ? &srcs->cols[si].type : NULL, &t, what, err);
    if (rc == TM_OK)
      rc = tm_schema_add(&s->schema, cname ? cname : "", t, si >= 0 ? srcs->cols[si].nullable : true,
                         si >= 0 ? srcs->cols[si].field_id : -1, err);
    duckdb_destroy_logical_type(&lt);
    duckdb_free((void *)cname); /* the C API's copy */
  }
  if (rc < 0) {
    tm_sqlsource_free(s);
    return rc;
  }
  *out = s;
  return TM_OK;
}

const tm_schema *tm_sqlsource_schema(const tm_sqlsource *s) { return &s->schema; }

/* ---- the scan ------------------------------------------------------------------------------- */

typedef struct ss_scan {
  tm_scan base;
  tm_sqlsource *s;
  tm_duck_reader rd;
} ss_scan;

static void sync_stats(ss_scan *sc) {
  tm_sqlsource *s = sc->s;
  sc->base.stats = s->inner ? *tm_scan_get_stats(s->inner) : s->inner_stats;
}

static int ss_scan_next(tm_scan *b, tm_batch *out, tm_error *err) {
  ss_scan *sc = (ss_scan *)b;
  int rc = tm_duck_reader_next(&sc->rd, out, err);
  sync_stats(sc);
  if (rc < 0 && rc != TM_ITEROVER) tm_error_prefix(err, "refresh_sql");
  return rc;
}

static void ss_scan_free(tm_scan *b) {
  ss_scan *sc = (ss_scan *)b;
  tm_duck_reader_dispose(&sc->rd);
  sync_stats(sc);
  sc->s->req = NULL;
  sc->s->busy = false;
  tm_free(sc);
}

static const tm_scan_vtable k_scan_vt = {ss_scan_next, ss_scan_free};

int tm_sqlsource_scan(tm_sqlsource *s, const tm_scan_request *req, tm_scan **out,
                      tm_error *err) {
  if (s->busy) return tm_error_set(err, TM_ECONFLICT, "refresh_sql is already scanning");
  ss_scan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  sc->base.vt = &k_scan_vt;
  sc->s = s;
  s->req = req;
  s->busy = true;
  memset(&s->inner_stats, 0, sizeof s->inner_stats);
  duckdb_result r;
  if (duckdb_execute_prepared_streaming(s->ps, &r) == DuckDBError) {
    int rc = tm_db__result_error(err, &r, "refresh_sql");
    duckdb_destroy_result(&r);
    s->req = NULL;
    s->busy = false;
    tm_free(sc);
    return rc;
  }
  tm_duck_reader_init(&sc->rd, &r, &s->schema, TM_BATCH_DEFAULT_ROWS);
  *out = &sc->base;
  return TM_OK;
}
