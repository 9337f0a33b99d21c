/*
 * scan.c - the tm_scan table function and the registry it serves from, and
 * tidemark's scalar functions (engine layer). See engine_int.h ("DuckDB: the
 * tm_scan table function").
 *
 * `tm_scan('name')` reads the relation a provider registered under name. The
 * function supports projection pushdown: DuckDB names the columns a query
 * uses, and only those are read. Predicates come from the pushdown registry:
 * terms that a SQL session (or refresh_sql) extracted from a WHERE clause and
 * posted for its connection; the provider prunes files and row groups with
 * them, and DuckDB checks every row against the full WHERE clause anyway, so
 * a term the extraction missed only costs reading, never a wrong answer.
 *
 * Lifetime: a registry entry is reference counted; each bound query holds a
 * reference, so a provider removed while a query runs is released when that
 * query ends.
 *
 * Scalar functions: tm_iso8601_ns(text) is the instant of an ISO 8601 text as
 * nanoseconds since the epoch (HUGEINT; NULL when it does not parse), with
 * the same parser the refresh uses, so that ordering (A8), retention (C3)
 * and the high-water mark (A2) of text time columns agree with it.
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"
#include "util/time.h"

typedef struct provider_entry {
  char *name;              /* owned */
  tm_scan_provider p;
  int refs;                /* under the registry mutex */
  bool removed;
} provider_entry;

typedef struct pushdown_entry {
  idx_t conn_id;
  char *name;              /* owned: relation */
  tm_predicate pred;       /* owned */
} pushdown_entry;

struct tm_scan_registry {
  pthread_mutex_t mu;
  provider_entry **entries; /* owned */
  size_t n, cap;
  pushdown_entry *pushdowns; /* owned */
  size_t n_push, cap_push;
};

static tm_scan_registry *reg_of(tm_db *db) { return *tm_db__registry(db); }

static void entry_unref_locked(tm_scan_registry *r, provider_entry *e, bool *release) {
  (void)r;
  *release = --e->refs == 0 && e->removed;
}

static void entry_free(provider_entry *e) {
  if (e->p.release) e->p.release(e->p.payload);
  tm_free(e->name);
  tm_free(e);
}

int tm_db__provider_add(tm_db *db, const char *name, const tm_scan_provider *p, tm_error *err) {
  tm_scan_registry *r = reg_of(db);
  provider_entry *e = tm_calloc(1, sizeof *e);
  if (!e || !(e->name = tm_strdup(name))) {
    tm_free(e);
    return tm_error_nomem(err);
  }
  e->p = *p;
  e->refs = 1; /* the registry's */
  int rc = TM_OK;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->entries[i]->name, name)) rc = tm_error_set(err, TM_ECONFLICT, "relation %s is registered", name);
  if (rc == TM_OK && r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 8;
    provider_entry **g = tm_reallocarray(r->entries, cap, sizeof *g);
    if (!g) rc = tm_error_nomem(err);
    else {
      r->entries = g;
      r->cap = cap;
    }
  }
  if (rc == TM_OK) r->entries[r->n++] = e;
  pthread_mutex_unlock(&r->mu);
  if (rc < 0) {
    tm_free(e->name);
    tm_free(e);
  }
  return rc;
}

void tm_db__provider_remove(tm_db *db, const char *name) {
  tm_scan_registry *r = reg_of(db);
  provider_entry *gone = NULL;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->entries[i]->name, name)) {
      provider_entry *e = r->entries[i];
      r->entries[i] = r->entries[--r->n];
      e->removed = true;
      bool release;
      entry_unref_locked(r, e, &release);
      if (release) gone = e;
      break;
    }
  pthread_mutex_unlock(&r->mu);
  if (gone) entry_free(gone);
}

static provider_entry *entry_find(tm_scan_registry *r, const char *name) {
  provider_entry *e = NULL;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->entries[i]->name, name)) {
      e = r->entries[i];
      e->refs++;
      break;
    }
  pthread_mutex_unlock(&r->mu);
  return e;
}

static void entry_put(tm_scan_registry *r, provider_entry *e) {
  bool release;
  pthread_mutex_lock(&r->mu);
  entry_unref_locked(r, e, &release);
  pthread_mutex_unlock(&r->mu);
  if (release) entry_free(e);
}

static idx_t conn_id(duckdb_connection c) {
  duckdb_client_context ctx = NULL;
  duckdb_connection_get_client_context(c, &ctx);
  idx_t id = ctx ? duckdb_client_context_get_connection_id(ctx) : (idx_t)-1;
  if (ctx) duckdb_destroy_client_context(&ctx);
  return id;
}

int tm_db__pushdown_post(tm_db *db, duckdb_connection c, const char *name,
                         const tm_predicate *pred, tm_error *err) {
  tm_scan_registry *r = reg_of(db);
  pushdown_entry pe;
  memset(&pe, 0, sizeof pe);
  pe.conn_id = conn_id(c);
  tm_predicate_init(&pe.pred);
  if (!(pe.name = tm_strdup(name))) return tm_error_nomem(err);
  int rc = tm_predicate_copy(&pe.pred, pred, err);
  pthread_mutex_lock(&r->mu);
  if (rc == TM_OK && r->n_push == r->cap_push) {
    size_t cap = r->cap_push ? r->cap_push * 2 : 8;
    pushdown_entry *g = tm_reallocarray(r->pushdowns, cap, sizeof *g);
    if (!g) rc = tm_error_nomem(err);
    else {
      r->pushdowns = g;
      r->cap_push = cap;
    }
  }
  if (rc == TM_OK) r->pushdowns[r->n_push++] = pe;
  pthread_mutex_unlock(&r->mu);
  if (rc < 0) {
    tm_free(pe.name);
    tm_predicate_dispose(&pe.pred);
  }
  return rc;
}

void tm_db__pushdown_clear(tm_db *db, duckdb_connection c) {
  tm_scan_registry *r = reg_of(db);
  idx_t id = conn_id(c);
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n_push;) {
    if (r->pushdowns[i].conn_id == id) {
      tm_free(r->pushdowns[i].name);
      tm_predicate_dispose(&r->pushdowns[i].pred);
      r->pushdowns[i] = r->pushdowns[--r->n_push];
    } else {
      i++;
    }
  }
  pthread_mutex_unlock(&r->mu);
}

/* Copies the predicate posted for (id, name) into out, if any. */
static int pushdown_get(tm_scan_registry *r, idx_t id, const char *name, tm_predicate *out,
                        tm_error *err) {
  int rc = TM_OK;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n_push && rc == TM_OK; i++)
    if (r->pushdowns[i].conn_id == id && !strcmp(r->pushdowns[i].name, name))
      for (size_t k = 0; k < r->pushdowns[i].pred.n_terms && rc == TM_OK; k++)
        rc = tm_predicate_add_term(out, &r->pushdowns[i].pred.terms[k], err);
  pthread_mutex_unlock(&r->mu);
  return rc;
}

/* ---- the table function ------------------------------------------------------- */

typedef struct scan_bind {
  tm_scan_registry *reg;
  provider_entry *entry;   /* one reference */
  void *handle;            /* the provider's, for this query */
  tm_schema schema;        /* owned: the relation's columns */
  char *name;              /* owned: the relation's name */
  idx_t query;             /* the binding connection's id: whose pushdown terms apply */
} scan_bind;

typedef struct scan_init {
  scan_bind *bind;         /* borrowed */
  tm_predicate pred;       /* owned: the pushdown terms posted for this execution */
  void *cursor;            /* the provider's */
  size_t *cols;            /* owned: schema indices requested from the provider */
  size_t n_cols;
  int *out_col;            /* owned: per output column, index into cols or -1 (row id) */
  size_t n_out;
  tm_batch batch;          /* the current batch */
  int64_t pos;             /* next row of batch */
  int64_t row_id;
  bool done;
} scan_init;

static void bind_free(void *p) {
  scan_bind *b = p;
  if (!b) return;
  if (b->handle && b->entry->p.unbind) b->entry->p.unbind(b->handle);
  if (b->entry) entry_put(b->reg, b->entry);
  tm_schema_dispose(&b->schema);
  tm_free(b->name);
  tm_free(b);
}

static void init_free(void *p) {
  scan_init *s = p;
  if (!s) return;
  if (s->cursor) s->bind->entry->p.close(s->cursor);
  tm_predicate_dispose(&s->pred);
  tm_batch_release(&s->batch);
  tm_free(s->cols);
  tm_free(s->out_col);
  tm_free(s);
}

static void scan_bind_fn(duckdb_bind_info info) {
  tm_db *db = duckdb_bind_get_extra_info(info);
  tm_scan_registry *r = reg_of(db);
  duckdb_value v = duckdb_bind_get_parameter(info, 0);
  char *name = v ? duckdb_get_varchar(v) : NULL;
  if (v) duckdb_destroy_value(&v);
  tm_error err;
  tm_error_init(&err);
  scan_bind *b = tm_calloc(1, sizeof *b);
  int rc = b ? TM_OK : tm_error_nomem(&err);
  if (rc == TM_OK) {
    b->reg = r;
    tm_schema_init(&b->schema);
    b->entry = name ? entry_find(r, name) : NULL;
    if (!b->entry) rc = tm_error_set(&err, TM_ENOTFOUND, "no relation %s to scan", name ? name : "?");
  }
  idx_t query = (idx_t)-1;
  if (rc == TM_OK) {
    duckdb_client_context ctx = NULL;
    duckdb_table_function_get_client_context(info, &ctx);
    if (ctx) {
      query = duckdb_client_context_get_connection_id(ctx);
      duckdb_destroy_client_context(&ctx);
    }
  }
  if (rc == TM_OK) rc = b->entry->p.bind(b->entry->p.payload, (uint64_t)query, &b->handle, &b->schema, &err);
  if (rc == TM_OK) {
    b->query = query;
    b->name = tm_strdup(name);
    if (!b->name) rc = tm_error_nomem(&err);
  }
  for (size_t i = 0; rc == TM_OK && i < b->schema.n_cols; i++) {
    duckdb_logical_type lt = tm_duck_type(&b->schema.cols[i].type);
    duckdb_bind_add_result_column(info, b->schema.cols[i].name, lt);
    duckdb_destroy_logical_type(&lt);
  }
  if (name) duckdb_free(name);
  if (rc < 0) {
    duckdb_bind_set_error(info, err.message);
    bind_free(b);
    return;
  }
  duckdb_bind_set_bind_data(info, b, bind_free);
}

static void scan_init_fn(duckdb_init_info info) {
  scan_bind *b = duckdb_init_get_bind_data(info);
  tm_error err;
  tm_error_init(&err);
  scan_init *s = tm_calloc(1, sizeof *s);
  idx_t n_out = duckdb_init_get_column_count(info);
  int rc = s ? TM_OK : tm_error_nomem(&err);
  if (rc == TM_OK) {
    s->bind = b;
    tm_predicate_init(&s->pred);
    tm_batch_init(&s->batch);
    s->n_out = (size_t)n_out;
    s->out_col = tm_calloc(n_out ? n_out : 1, sizeof *s->out_col);
    s->cols = tm_calloc(n_out ? n_out : 1, sizeof *s->cols);
    if (!s->out_col || !s->cols) rc = tm_error_nomem(&err);
  }
  for (idx_t i = 0; rc == TM_OK && i < n_out; i++) {
    idx_t col = duckdb_init_get_column_index(info, i);
    if (col >= b->schema.n_cols) {
      s->out_col[i] = -1; /* the row id: counted, not read */
      continue;
    }
    s->out_col[i] = (int)s->n_cols;
    s->cols[s->n_cols++] = (size_t)col;
  }
  /* A query that reads no column (count(*)) still needs the rows: read the first. */
  if (rc == TM_OK && s->n_cols == 0 && b->schema.n_cols > 0) s->cols[s->n_cols++] = 0;
  /*
   * The terms are taken here, at each execution, not at bind: a statement is
   * bound when it is prepared, before its session posts the terms it found
   * in the parse tree (sql/session.c).
   */
  if (rc == TM_OK) rc = pushdown_get(b->reg, b->query, b->name, &s->pred, &err);
  if (rc == TM_OK)
    rc = b->entry->p.open(b->handle, s->cols, s->n_cols, s->pred.n_terms ? &s->pred : NULL,
                          &s->cursor, &err);
  duckdb_init_set_max_threads(info, 1);
  if (rc < 0) {
    if (s) s->cursor = NULL;
    init_free(s);
    duckdb_init_set_error(info, err.message);
    return;
  }
  duckdb_init_set_init_data(info, s, init_free);
}

static void scan_fn(duckdb_function_info info, duckdb_data_chunk output) {
  scan_init *s = duckdb_function_get_init_data(info);
  tm_error err;
  tm_error_init(&err);
  int rc = TM_OK;
  if (s->done) {
    duckdb_data_chunk_set_size(output, 0);
    return;
  }
  while (s->pos >= s->batch.n_rows) {
    tm_batch_release(&s->batch);
    s->pos = 0;
    rc = s->bind->entry->p.next(s->cursor, &s->batch, &err);
    if (rc == TM_ITEROVER) {
      s->done = true;
      duckdb_data_chunk_set_size(output, 0);
      return;
    }
    if (rc < 0) {
      duckdb_function_set_error(info, err.message);
      return;
    }
  }
  idx_t step = duckdb_vector_size();
  idx_t n = (idx_t)(s->batch.n_rows - s->pos) < step ? (idx_t)(s->batch.n_rows - s->pos) : step;
  for (size_t i = 0; rc == TM_OK && i < s->n_out; i++) {
    duckdb_vector v = duckdb_data_chunk_get_vector(output, i);
    if (s->out_col[i] < 0) {
      int64_t *ids = duckdb_vector_get_data(v);
      for (idx_t k = 0; k < n; k++) ids[k] = s->row_id + (int64_t)k;
      continue;
    }
    tm_colview cv = tm_batch_col(&s->batch, (size_t)s->out_col[i]);
    rc = tm_duck_vector_write(v, 0, &cv, s->pos, n, &err);
    if (rc < 0)
      tm_error_prefix(&err, "%s", s->bind->schema.cols[s->cols[s->out_col[i]]].name);
  }
  if (rc < 0) {
    duckdb_function_set_error(info, err.message);
    return;
  }
  s->pos += (int64_t)n;
  s->row_id += (int64_t)n;
  duckdb_data_chunk_set_size(output, n);
}

/* ---- tm_iso8601_ns --------------------------------------------------------------- */

static void iso_ns_fn(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  (void)info;
  idx_t n = duckdb_data_chunk_get_size(input);
  duckdb_vector in = duckdb_data_chunk_get_vector(input, 0);
  duckdb_string_t *src = duckdb_vector_get_data(in);
  uint64_t *in_mask = duckdb_vector_get_validity(in);
  duckdb_hugeint *dst = duckdb_vector_get_data(output);
  duckdb_vector_ensure_validity_writable(output);
  uint64_t *mask = duckdb_vector_get_validity(output);
  for (idx_t i = 0; i < n; i++) {
    int64_t sec;
    int32_t nsec;
    bool zone;
    if ((in_mask && !duckdb_validity_row_is_valid(in_mask, i)) ||
        tm_time_parse(duckdb_string_t_data(&src[i]), duckdb_string_t_length(src[i]), &sec, &nsec,
                      &zone) != TM_OK) {
      duckdb_validity_set_row_invalid(mask, i);
      continue;
    }
    /* sec * 1e9 + nsec in 128 bits. */
    __int128 v = (__int128)sec * 1000000000 + nsec;
    dst[i].lower = (uint64_t)v;
    dst[i].upper = (int64_t)(v >> 64);
  }
}

/* ---- registration ------------------------------------------------------------------ */

int tm_db__scan_register(tm_db *db, duckdb_connection c, tm_error *err) {
  tm_scan_registry *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  pthread_mutex_init(&r->mu, NULL);
  *tm_db__registry(db) = r;

  int rc = TM_OK;
  duckdb_table_function tf = duckdb_create_table_function();
  duckdb_table_function_set_name(tf, "tm_scan");
  duckdb_logical_type vc = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_table_function_add_parameter(tf, vc);
  duckdb_table_function_set_extra_info(tf, db, NULL);
  duckdb_table_function_set_bind(tf, scan_bind_fn);
  duckdb_table_function_set_init(tf, scan_init_fn);
  duckdb_table_function_set_function(tf, scan_fn);
  duckdb_table_function_supports_projection_pushdown(tf, true);
  if (duckdb_register_table_function(c, tf) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "DuckDB refused the tm_scan table function");
  duckdb_destroy_table_function(&tf);

  duckdb_scalar_function sf = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(sf, "tm_iso8601_ns");
  duckdb_scalar_function_add_parameter(sf, vc);
  duckdb_logical_type hi = duckdb_create_logical_type(DUCKDB_TYPE_HUGEINT);
  duckdb_scalar_function_set_return_type(sf, hi);
  duckdb_scalar_function_set_function(sf, iso_ns_fn);
  if (rc == TM_OK && duckdb_register_scalar_function(c, sf) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "DuckDB refused the tm_iso8601_ns function");
  duckdb_destroy_scalar_function(&sf);
  duckdb_destroy_logical_type(&hi);
  duckdb_destroy_logical_type(&vc);
  return rc;
}

void tm_db__scan_dispose(tm_db *db) {
  tm_scan_registry *r = *tm_db__registry(db);
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) entry_free(r->entries[i]);
  for (size_t i = 0; i < r->n_push; i++) {
    tm_free(r->pushdowns[i].name);
    tm_predicate_dispose(&r->pushdowns[i].pred);
  }
  tm_free(r->entries);
  tm_free(r->pushdowns);
  pthread_mutex_destroy(&r->mu);
  tm_free(r);
  *tm_db__registry(db) = NULL;
}
