/*
 * session.c - the SQL catalog, sessions and statements over DuckDB (engine
 * layer). See sql.h.
 *
 * The catalog makes each engine's dataset a view in the tm_db's main
 * catalog, and each federated dataset a name that a replacement scan turns
 * into tm_scan('source$NAME') when a query reads it. A session is a DuckDB
 * connection; a statement passes the gate (gate.c), posts the pushdown of
 * its federated reads (pushdown.c), then runs as a streaming result whose
 * chunks the caller steps through row by row, with the watchdog armed for
 * the session's time limit. A statement that runs again (a kept one, a text
 * of a known shape) reads the engines' tables directly instead of through
 * the views where that means the same (direct_text).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sql/sql_int.h"
#include "source/source.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

/* ---- the catalog ------------------------------------------------------------------ */

/*
 * The federated names, shared with the replacement-scan callback; DuckDB owns
 * it (freed when the database closes), so that a callback can never outlive it.
 */
typedef struct fed_names {
  pthread_mutex_t mu;
  char **names;           /* owned: dataset names */
  size_t n, cap;
} fed_names;

typedef struct cat_item {
  char *name;             /* owned */
  tm_engine *engine;      /* a reference, or NULL when federated */
  char *provider;         /* owned: federated relation name "source$NAME" */
  tm_sql_source *source;  /* federated: the provider's state (the registry owns it) */
  bool view;              /* a view of the config (`views:`) over datasets */
} cat_item;

/* The comments of one relation (tm_sql_catalog_describe), set whenever its view is made. */
typedef struct cat_comments {
  char *name;             /* owned: the relation */
  char *description;      /* owned or NULL */
  char **cols, **descs;   /* owned arrays of n owned strings */
  size_t n;
} cat_comments;

struct tm_sql_catalog {
  tm_db *db;              /* a reference */
  pthread_mutex_t mu;     /* guards items and comments */
  cat_item *items;        /* owned */
  size_t n, cap;
  cat_comments *comments; /* owned */
  size_t n_comments;
  fed_names *fed;         /* owned by DuckDB */
  uint64_t generation;    /* counts changes of items; under mu (kept statements naming an
                             engine's table are prepared again after one: prep_entry) */
};

static void fed_names_free(void *p) {
  fed_names *f = p;
  for (size_t i = 0; i < f->n; i++) tm_free(f->names[i]);
  tm_free(f->names);
  pthread_mutex_destroy(&f->mu);
  tm_free(f);
}

static void replacement(duckdb_replacement_scan_info info, const char *table_name, void *data) {
  fed_names *f = data;
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->n; i++)
    if (!strcasecmp(f->names[i], table_name)) {
      char *rel = tm_asprintf("source$%s", f->names[i]);
      if (rel) {
        duckdb_replacement_scan_set_function_name(info, "tm_scan");
        duckdb_value v = duckdb_create_varchar(rel);
        duckdb_replacement_scan_add_parameter(info, v);
        duckdb_destroy_value(&v);
        tm_free(rel);
      } else {
        duckdb_replacement_scan_set_error(info, "out of memory");
      }
      break;
    }
  pthread_mutex_unlock(&f->mu);
}

static int fed_names_set(fed_names *f, const char *name, bool add, tm_error *err) {
  int rc = TM_OK;
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->n; i++)
    if (!strcasecmp(f->names[i], name)) {
      tm_free(f->names[i]);
      f->names[i] = f->names[--f->n];
      break;
    }
  if (add) {
    char *copy = tm_strdup(name);
    if (!copy) rc = tm_error_nomem(err);
    if (rc == TM_OK && f->n == f->cap) {
      size_t cap = f->cap ? f->cap * 2 : 8;
      char **g = tm_reallocarray(f->names, cap, sizeof *g);
      if (!g) rc = tm_error_nomem(err);
      else {
        f->names = g;
        f->cap = cap;
      }
    }
    if (rc == TM_OK) f->names[f->n++] = copy;
    else tm_free(copy);
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

int tm_sql_catalog_new(tm_sql_catalog **out, tm_db *db, tm_error *err) {
  tm_sql_catalog *c = tm_calloc(1, sizeof *c);
  fed_names *f = tm_calloc(1, sizeof *f);
  if (!c || !f) {
    tm_free(c);
    tm_free(f);
    return tm_error_nomem(err);
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_mutex_init(&c->mu, NULL);
  c->db = tm_db_retain(db);
  c->fed = f;
  duckdb_add_replacement_scan(tm_db__handle(db), replacement, f, fed_names_free);
  *out = c;
  return TM_OK;
}

static int view_sql(tm_buf *b, const char *verb, const char *name, tm_error *err) {
  TM_TRY(tm_buf_puts(b, verb, err));
  return tm_engine__quote_ident(b, name, err);
}

/* Drops what item i showed (its view, or its provider and name); under c->mu. */
static void item_clear(tm_sql_catalog *c, cat_item *it) {
  tm_error err;
  if (it->engine || it->view) {
    tm_buf sql = TM_BUF_INIT(1 << 16);
    if (view_sql(&sql, "DROP VIEW IF EXISTS main.", it->name, &err) == TM_OK &&
        tm_db__admin_exec(c->db, tm_buf_cstr(&sql), &err) != TM_OK)
      tm_log(TM_LOG_WARN, it->name, "cannot drop the view: %s", err.message);
    tm_buf_dispose(&sql);
    tm_engine_release(it->engine);
  }
  if (it->provider) {
    if (fed_names_set(c->fed, it->name, false, &err) != TM_OK) { /* removing never allocates */ }
    tm_db__provider_remove(c->db, it->provider);
  }
  tm_free(it->name);
  tm_free(it->provider);
  memset(it, 0, sizeof *it);
}

static cat_item *find_item(tm_sql_catalog *c, const char *name) {
  for (size_t i = 0; i < c->n; i++)
    if (!strcasecmp(c->items[i].name, name)) return &c->items[i];
  return NULL;
}

static int new_item(tm_sql_catalog *c, const char *name, cat_item **out, tm_error *err) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    cat_item *g = tm_reallocarray(c->items, cap, sizeof *g);
    if (!g) return tm_error_nomem(err);
    c->items = g;
    c->cap = cap;
  }
  cat_item *it = &c->items[c->n];
  memset(it, 0, sizeof *it);
  if (!(it->name = tm_strdup(name))) return tm_error_nomem(err);
  c->n++;
  *out = it;
  return TM_OK;
}

static void comments_dispose(cat_comments *k) {
  tm_free(k->name);
  tm_free(k->description);
  for (size_t i = 0; i < k->n; i++) {
    tm_free(k->cols[i]);
    tm_free(k->descs[i]);
  }
  tm_free(k->cols);
  tm_free(k->descs);
  memset(k, 0, sizeof *k);
}

/*
 * Sets the recorded comments of the view `name` (just made); under c->mu. A
 * failure is logged, never returned: a comment is documentation, the view stands.
 */
static void apply_comments(tm_sql_catalog *c, const char *name) {
  const cat_comments *k = NULL;
  for (size_t i = 0; i < c->n_comments && !k; i++)
    if (!strcasecmp(c->comments[i].name, name)) k = &c->comments[i];
  if (!k) return;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  tm_error err;
  tm_error_init(&err);
  for (size_t i = 0; i <= k->n; i++) {
    const char *text = i == 0 ? k->description : k->descs[i - 1];
    if (!text) continue;
    tm_buf_clear(&sql);
    int rc = tm_buf_puts(&sql, i == 0 ? "COMMENT ON VIEW main." : "COMMENT ON COLUMN main.", &err);
    if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, name, &err);
    if (rc == TM_OK && i > 0) rc = tm_buf_puts(&sql, ".", &err);
    if (rc == TM_OK && i > 0) rc = tm_engine__quote_ident(&sql, k->cols[i - 1], &err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " IS ", &err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, text, strlen(text), &err);
    if (rc == TM_OK) rc = tm_db__admin_exec(c->db, tm_buf_cstr(&sql), &err);
    if (rc != TM_OK && i > 0)
      tm_log(TM_LOG_ERROR, name, "columns: the description of column '%s' is not set: %s",
             k->cols[i - 1], err.message);
    else if (rc != TM_OK)
      tm_log(TM_LOG_ERROR, name, "the description is not set: %s", err.message);
  }
  tm_buf_dispose(&sql);
}

int tm_sql_catalog_describe(tm_sql_catalog *c, const char *name, const char *description,
                            const char *const *col_names, const char *const *col_descs, size_t n,
                            tm_error *err) {
  cat_comments k;
  memset(&k, 0, sizeof k);
  bool oom = !(k.name = tm_strdup(name)) || (description && !(k.description = tm_strdup(description)));
  if (!oom && n) {
    k.cols = tm_calloc(n, sizeof *k.cols);
    k.descs = tm_calloc(n, sizeof *k.descs);
    oom = !k.cols || !k.descs;
  }
  for (size_t i = 0; !oom && i < n; i++) {
    k.n = i + 1;
    oom = !(k.cols[i] = tm_strdup(col_names[i])) ||
          (col_descs[i] && !(k.descs[i] = tm_strdup(col_descs[i])));
  }
  pthread_mutex_lock(&c->mu);
  cat_comments *grown = oom ? NULL : tm_reallocarray(c->comments, c->n_comments + 1, sizeof *grown);
  if (grown) {
    c->comments = grown;
    c->comments[c->n_comments++] = k;
    cat_item *it = find_item(c, name);
    if (it && (it->engine || it->view)) apply_comments(c, it->name);
  }
  pthread_mutex_unlock(&c->mu);
  if (grown) return TM_OK;
  comments_dispose(&k);
  return tm_error_nomem(err);
}

void tm_sql_catalog_free(tm_sql_catalog *c) {
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++) item_clear(c, &c->items[i]);
  pthread_mutex_unlock(&c->mu);
  for (size_t i = 0; i < c->n_comments; i++) comments_dispose(&c->comments[i]);
  tm_free(c->comments);
  tm_free(c->items);
  pthread_mutex_destroy(&c->mu);
  tm_db_release(c->db);
  tm_free(c);
}

int tm_sql_catalog_add(tm_sql_catalog *c, tm_engine *e, tm_error *err) {
  if (e->db != c->db)
    return tm_error_set(err, TM_EINVALID, "dataset %s: its engine is on another DuckDB instance",
                        tm_engine_dataset(e));
  const char *name = tm_engine_dataset(e);
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = view_sql(&sql, "CREATE OR REPLACE VIEW main.", name, err);
  /* refresh_mode changes: the rows' provenance is not the dataset's (SPEC E4). */
  const char *cols = tm_engine_hidden_columns(tm_engine_schema(e))
                         ? " AS SELECT * EXCLUDE (" TM_PROV_SEQ ", " TM_PROV_FILE ", " TM_PROV_POS ") FROM "
                         : " AS SELECT * FROM ";
  if (rc == TM_OK) rc = tm_buf_puts(&sql, cols, err);
  if (rc == TM_OK) rc = tm_engine_relation(e, &sql, err);
  pthread_mutex_lock(&c->mu);
  cat_item *it = find_item(c, name);
  if (rc == TM_OK && it && it->provider)
    rc = tm_error_set(err, TM_ECONFLICT, "dataset %s is listed as federated", name);
  if (rc == TM_OK) rc = tm_db__admin_exec(c->db, tm_buf_cstr(&sql), err);
  if (rc == TM_OK) apply_comments(c, name);
  if (rc == TM_OK && !it) rc = new_item(c, name, &it, err);
  if (rc == TM_OK) {
    tm_engine_release(it->engine);
    it->engine = tm_engine_retain(e);
  }
  c->generation++;
  pthread_mutex_unlock(&c->mu);
  tm_buf_dispose(&sql);
  return rc;
}

int tm_sql_catalog_add_source(tm_sql_catalog *c, const tm_source_options *opts, tm_error *err) {
  pthread_mutex_lock(&c->mu);
  int rc = find_item(c, opts->name) ? tm_error_set(err, TM_ECONFLICT, "dataset %s is listed", opts->name)
                                    : TM_OK;
  char *provider = rc == TM_OK ? tm_asprintf("source$%s", opts->name) : NULL;
  if (rc == TM_OK && !provider) rc = tm_error_nomem(err);
  tm_sql_source *src = NULL;
  if (rc == TM_OK) rc = tm_sql__source_add(c->db, provider, opts, &src, err);
  cat_item *it = NULL;
  if (rc == TM_OK) rc = new_item(c, opts->name, &it, err);
  if (rc == TM_OK) {
    it->provider = provider;
    it->source = src;
    provider = NULL;
    rc = fed_names_set(c->fed, opts->name, true, err);
  } else if (src) {
    tm_db__provider_remove(c->db, provider);
  }
  pthread_mutex_unlock(&c->mu);
  tm_free(provider);
  return rc;
}

int tm_sql_catalog_remove(tm_sql_catalog *c, const char *name, tm_error *err) {
  pthread_mutex_lock(&c->mu);
  cat_item *it = find_item(c, name);
  int rc = TM_OK;
  if (!it) {
    rc = tm_error_set(err, TM_ENOTFOUND, "no dataset %s", name);
  } else {
    item_clear(c, it);
    *it = c->items[--c->n];
  }
  c->generation++;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/*
 * Posts the pushdown terms of every dataset the query reads through tm_scan:
 * federated ones (files and row groups pruned) and sqlite accelerations (the
 * terms become SQLite's WHERE, so a point lookup uses the key's index).
 */
static int post_pushdown(tm_sql_catalog *c, duckdb_connection conn, const json_t *ast, bool *posted,
                         tm_error *err) {
  char **names = NULL;
  size_t n = 0;
  TM_TRY(tm_sql__tables(ast, &names, &n, err));
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    tm_schema schema;
    tm_schema_init(&schema);
    char *provider = NULL;
    pthread_mutex_lock(&c->mu);
    cat_item *it = find_item(c, names[i]);
    const char *sq = it && it->engine ? tm_engine__scan_provider(it->engine) : NULL;
    if (it && it->provider) {
      rc = tm_sql__source_schema(it->source, &schema, err);
      if (rc == TM_OK && !(provider = tm_strdup(it->provider))) rc = tm_error_nomem(err);
    } else if (sq) {
      rc = tm_schema_copy(&schema, tm_engine_schema(it->engine), err);
      if (rc == TM_OK && !(provider = tm_strdup(sq))) rc = tm_error_nomem(err);
    }
    pthread_mutex_unlock(&c->mu);
    tm_predicate pred;
    tm_predicate_init(&pred);
    if (rc == TM_OK && provider) rc = tm_sql__pushdown(ast, names[i], &schema, &pred, err);
    if (rc == TM_OK && pred.n_terms) {
      rc = tm_db__pushdown_post(c->db, conn, provider, &pred, err);
      *posted = true;
    }
    tm_predicate_dispose(&pred);
    tm_schema_dispose(&schema);
    tm_free(provider);
  }
  for (size_t i = 0; i < n; i++) tm_free(names[i]);
  tm_free(names);
  return rc;
}

/* ---- sessions and statements --------------------------------------------------------------- */

/* The longest `datasets` a statement reports: names past it are left out (a label, not a list). */
#define DATASETS_MAX 1024

/*
 * What a session remembers of the texts that passed the gate (a session is
 * used by one thread at a time, so none of this is shared): by shape
 * (tm_sql__shape_key: the text with its standalone numbers made `?`), the
 * verdict and the tables read, so that the same query again, or with other
 * numbers (a point lookup by id, the extended protocol's Parse then Execute
 * of one text), is only prepared and its type checked again
 * (tm_sql__gate_again), without serializing and walking its parse tree.
 * Only texts that passed are remembered; a refused text is checked whole
 * each time. A query whose tables take pushdown terms (a sqlite acceleration
 * or a federated dataset: the terms are read from its own parse tree) goes
 * through the whole gate. A text made to be run again also keeps its DuckDB
 * prepared statement (prep_entry, below), except over scan providers: a
 * table-function scan bound once would keep reading the state it was bound
 * on; DuckDB tables are read in each run's own transaction.
 */
#define CACHE_SHAPES 64
#define CACHE_PREPARED 16  /* DuckDB prepared statements kept per session, by text */
/*
 * How often a kept DuckDB prepared statement runs before it is prepared
 * afresh. DuckDB 1.4 adds a result collector to a prepared statement's plan
 * at each execution and frees them only with the statement
 * (duckdb/duckdb#21089): about 2 KB per streamed run, so a statement kept
 * for the life of a session grew without end (a server answering `SELECT
 * $1::BIGINT` over pgwire's extended protocol gained 130 MB per 65,000
 * queries, and a seventh of its CPU went to page faults on the new
 * memory). A statement DuckDB plans again at each run (a parameter in a
 * table's filter) drops them with the old plan. Preparing again after this
 * many runs bounds it at about 0.5 MB per statement, for one gate and
 * prepare per 256 runs.
 */
#define PREP_RUNS_MAX 256
#define CACHE_SQL_MAX 4096 /* longer texts are not remembered */

typedef struct gate_names {
  char **names;           /* owned: the tables the text reads */
  size_t n;
} gate_names;

/* A statement that passed the gate: what it reads, and its parse tree for pushdown. */
typedef struct gated {
  duckdb_prepared_statement ps;
  json_t *ast;            /* owned, or NULL when the shape path made it (or EXPLAIN) */
  gate_names tables;
  bool direct;            /* ps reads engines' tables by their own names (direct_text), as the */
  uint64_t generation;    /* catalog had them at this generation */
} gated;

/* A reference to a dataset that a statement may read directly (direct_text, below). */
typedef struct direct_ref {
  size_t at;              /* where the name starts: in the text, or in a shape's key (shape_entry) */
  char *name;             /* owned */
  bool aliased;
} direct_ref;

typedef struct direct_plan {
  direct_ref *refs;       /* owned, n, by offset */
  size_t n;
} direct_plan;

static void plan_dispose(direct_plan *p) {
  for (size_t i = 0; i < p->n; i++) tm_free(p->refs[i].name);
  tm_free(p->refs);
  memset(p, 0, sizeof *p);
}

typedef struct shape_entry {
  char *key;              /* owned */
  gate_names tables;
  uint64_t used;
  direct_plan plan;       /* the texts' dataset references, at offsets of the key (n == 0: none
                             may be read directly) */
} shape_entry;

/*
 * A text prepared to be run again (a pgwire Parse, a text with parameters):
 * DuckDB's prepared statement, kept across runs so that each run binds and
 * executes without parsing and planning again. DuckDB binds it again itself
 * when the catalog changed since (a dataset swapped in, a view redefined).
 * Never kept for a statement that reads a scan provider: its pushdown terms
 * come from the parse tree at each run.
 */
typedef struct prep_entry {
  char *sql;              /* owned: the exact text */
  duckdb_prepared_statement ps; /* owned */
  gate_names tables;
  uint64_t used;
  uint32_t runs;          /* executions of ps (PREP_RUNS_MAX) */
  bool direct;            /* ps reads engines' tables by their own names (direct_text) ... */
  uint64_t generation;    /* ... as the catalog had them at this generation */
} prep_entry;

struct tm_sql_session {
  tm_sql_catalog *cat;    /* borrowed: outlives the session */
  duckdb_connection conn;
  int64_t timeout_ms;
  tm_sql_stmt *open;      /* the statement running, or NULL */
  char datasets[DATASETS_MAX]; /* what the last prepared statement reads */
  duckdb_prepared_statement serializer; /* the gate's json_serialize_sql, or NULL */
  uint32_t serializer_runs; /* its executions (PREP_RUNS_MAX) */
  shape_entry shapes[CACHE_SHAPES];
  size_t n_shapes;
  prep_entry preps[CACHE_PREPARED];
  size_t n_preps;
  uint64_t tick;
  tm_buf key;             /* scratch: a shape key */
  uint64_t direct_runs;   /* statements run reading engines' tables directly (for tests) */
};

struct tm_sql_stmt {
  tm_sql_session *s;
  duckdb_prepared_statement ps;
  gated g;                 /* ps (g.ps), its parse tree and tables */
  bool cached;             /* ps is the session's (preps), not g.ps: not destroyed with q */
  duckdb_result result;
  bool has_result;
  duckdb_data_chunk chunk; /* the current chunk, or NULL */
  idx_t row, rows;         /* the current row of the chunk, and its size */
  size_t n_cols;
  duckdb_logical_type *types; /* owned, n_cols */
  uint64_t watch;          /* the watchdog token, or 0 */
  bool pushed;             /* pushdown terms were posted for this statement */
  bool started;            /* the first step has run */
};

int tm_sql_session_new(tm_sql_session **out, tm_sql_catalog *c, tm_error *err) {
  tm_sql_session *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->cat = c;
  tm_buf_init(&s->key, CACHE_SQL_MAX * 2);
  int rc = tm_db__connect(c->db, &s->conn, err);
  if (rc < 0) {
    tm_free(s);
    return rc;
  }
  *out = s;
  return TM_OK;
}

static void names_dispose(gate_names *g) {
  for (size_t i = 0; i < g->n; i++) tm_free(g->names[i]);
  tm_free(g->names);
  g->names = NULL;
  g->n = 0;
}

static int names_copy(gate_names *dst, const gate_names *src, tm_error *err) {
  dst->n = 0;
  dst->names = tm_calloc(src->n ? src->n : 1, sizeof *dst->names);
  if (!dst->names) return tm_error_nomem(err);
  for (size_t i = 0; i < src->n; i++) {
    if (!(dst->names[i] = tm_strdup(src->names[i]))) {
      names_dispose(dst);
      return tm_error_nomem(err);
    }
    dst->n = i + 1;
  }
  return TM_OK;
}

static void gated_dispose(gated *e) {
  if (e->ps) duckdb_destroy_prepare(&e->ps);
  json_decref(e->ast);
  names_dispose(&e->tables);
  memset(e, 0, sizeof *e);
}

static void cache_clear(tm_sql_session *s) {
  for (size_t i = 0; i < s->n_shapes; i++) {
    tm_free(s->shapes[i].key);
    names_dispose(&s->shapes[i].tables);
    plan_dispose(&s->shapes[i].plan);
  }
  s->n_shapes = 0;
  for (size_t i = 0; i < s->n_preps; i++) {
    tm_free(s->preps[i].sql);
    duckdb_destroy_prepare(&s->preps[i].ps);
    names_dispose(&s->preps[i].tables);
  }
  s->n_preps = 0;
}

void tm_sql_session_free(tm_sql_session *s) {
  if (!s) return;
  tm_sql_stmt_free(s->open);
  cache_clear(s);
  if (s->serializer) duckdb_destroy_prepare(&s->serializer);
  tm_buf_dispose(&s->key);
  duckdb_disconnect(&s->conn);
  tm_free(s);
}

int tm_sql_catalog_add_view(tm_sql_catalog *c, const char *name, const char *sql, tm_error *err) {
  /* The view's query passes the read-only gate as a query does (it binds, so its tables must be listed). */
  tm_sql_session *s = NULL;
  TM_TRY(tm_sql_session_new(&s, c, err));
  duckdb_prepared_statement ps = NULL;
  json_t *ast = NULL;
  int rc = tm_sql__gate(s->conn, sql, NULL, &ps, &ast, err);
  if (ps) duckdb_destroy_prepare(&ps);
  json_decref(ast);
  tm_sql_session_free(s);
  TM_TRY(rc);
  tm_buf text = TM_BUF_INIT(1 << 20);
  rc = view_sql(&text, "CREATE OR REPLACE VIEW main.", name, err);
  if (rc == TM_OK) rc = tm_buf_puts(&text, " AS ", err);
  if (rc == TM_OK) rc = tm_buf_puts(&text, sql, err);
  pthread_mutex_lock(&c->mu);
  cat_item *it = find_item(c, name);
  if (rc == TM_OK && it && !it->view)
    rc = tm_error_set(err, TM_ECONFLICT, "view %s: a dataset has that name", name);
  if (rc == TM_OK) rc = tm_db__admin_exec(c->db, tm_buf_cstr(&text), err);
  if (rc == TM_OK) apply_comments(c, name);
  if (rc == TM_OK && !it) rc = new_item(c, name, &it, err);
  if (rc == TM_OK) it->view = true;
  c->generation++;
  pthread_mutex_unlock(&c->mu);
  tm_buf_dispose(&text);
  return rc;
}

void tm_sql_session_set_timeout(tm_sql_session *s, int64_t ms) { s->timeout_ms = ms > 0 ? ms : 0; }

void tm_sql_session_interrupt(tm_sql_session *s) { duckdb_interrupt(s->conn); }

/* The error of a failed statement: a deadline that fired is TM_ETIMEOUT. */
static int stmt_error(tm_sql_stmt *q, duckdb_result *r, tm_error *err) {
  bool fired = q->watch && tm_db__unwatch(q->s->cat->db, q->watch);
  q->watch = 0;
  if (fired)
    return tm_error_set(err, TM_ETIMEOUT, "the query ran past its time limit of %lld ms (SPEC D4)",
                        (long long)q->s->timeout_ms);
  tm_error e2;
  tm_error_init(&e2);
  int rc = tm_db__result_error(&e2, r, NULL);
  if (rc == TM_ECANCELLED) return tm_error_set(err, TM_ECANCELLED, "the query was cancelled");
  if (rc == TM_ENOMEM) {
    /* DuckDB's advice (SET memory_limit, ...) does not apply: the limit is the server's. */
    char *cut = strstr(e2.message, " Possible solutions");
    if (cut) *cut = '\0';
    /* The query passed a configured limit: the client's request, not the process, failed. */
    return tm_error_set(err, TM_ETOOLARGE, "the query needs more memory than the limit allows (%s)",
                        e2.message);
  }
  tm_error_copy(err, &e2);
  return rc;
}

void tm_sql_stmt_free(tm_sql_stmt *q) {
  if (!q) return;
  tm_sql_session *s = q->s;
  if (q->chunk) duckdb_destroy_data_chunk(&q->chunk);
  if (q->has_result) duckdb_destroy_result(&q->result);
  gated_dispose(&q->g);
  if (q->watch) tm_db__unwatch(s->cat->db, q->watch);
  if (q->pushed) tm_db__pushdown_clear(s->cat->db, s->conn);
  for (size_t i = 0; q->types && i < q->n_cols; i++) duckdb_destroy_logical_type(&q->types[i]);
  tm_free(q->types);
  if (s->open == q) s->open = NULL;
  tm_free(q);
}

const char *tm_sql_session_datasets(const tm_sql_session *s) { return s->datasets; }

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Sets s->datasets to the catalog names (datasets and views, as the catalog
 * spells them) among the tables t a statement reads: distinct, sorted,
 * comma-joined. Names that would pass DATASETS_MAX are left out.
 */
static int note_datasets(tm_sql_session *s, const gate_names *t, tm_error *err) {
  const char **names = tm_calloc(t->n ? t->n : 1, sizeof *names);
  if (!names) return tm_error_nomem(err);
  size_t k = 0;
  tm_sql_catalog *c = s->cat;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < t->n; i++) {
    cat_item *it = find_item(c, t->names[i]);
    if (!it) continue; /* a CTE, a table function, or a name SQL does not know */
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++) seen = strcmp(names[j], it->name) == 0;
    if (!seen) names[k++] = it->name; /* borrowed below, under the lock */
  }
  if (k > 1) qsort(names, k, sizeof *names, cmp_names);
  size_t len = 0;
  for (size_t i = 0; i < k; i++) {
    size_t w = strlen(names[i]) + (i ? 1 : 0);
    if (len + w >= sizeof s->datasets) break;
    snprintf(s->datasets + len, sizeof s->datasets - len, "%s%s", i ? "," : "", names[i]);
    len += w;
  }
  pthread_mutex_unlock(&c->mu);
  tm_free(names);
  return TM_OK;
}

/* Whether a table of t takes pushdown terms (read from the statement's own parse tree). */
static bool needs_pushdown(tm_sql_catalog *c, const gate_names *t) {
  bool any = false;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < t->n && !any; i++) {
    cat_item *it = find_item(c, t->names[i]);
    any = it && (it->provider || (it->engine && tm_engine__scan_provider(it->engine)));
  }
  pthread_mutex_unlock(&c->mu);
  return any;
}

static void prep_dispose(prep_entry *pe) {
  tm_free(pe->sql);
  if (pe->ps) duckdb_destroy_prepare(&pe->ps);
  names_dispose(&pe->tables);
  memset(pe, 0, sizeof *pe);
}

/* The session's prepared statement for the text sql, or NULL (none, or one now needing pushdown). */
static prep_entry *find_prep(tm_sql_session *s, const char *sql) {
  for (size_t i = 0; i < s->n_preps; i++) {
    prep_entry *pe = &s->preps[i];
    if (strcmp(pe->sql, sql) != 0) continue;
    pthread_mutex_lock(&s->cat->mu);
    bool stale = pe->direct && pe->generation != s->cat->generation;
    pthread_mutex_unlock(&s->cat->mu);
    if (stale || pe->runs >= PREP_RUNS_MAX || needs_pushdown(s->cat, &pe->tables)) {
      prep_dispose(pe);
      *pe = s->preps[--s->n_preps];
      return NULL;
    }
    pe->used = ++s->tick;
    return pe;
  }
  return NULL;
}

/*
 * A kept statement names the engines' tables directly. A dataset is a view
 * over its engine's table (tm_sql_catalog_add), and DuckDB binds a view's
 * query again each time it binds a statement that reads it; a point lookup
 * by a parameter is bound at every execution (DuckDB plans it again so that
 * the value can choose an index scan), and the view was about a seventh of
 * its time (PGWIRE.md "Throughput"). So the text of a statement that is kept
 * to run again is prepared once more with each dataset reference written as
 * the view's own relation, under the dataset's name as its alias:
 * `FROM events WHERE id = $1` runs as `FROM "tm$events".main."rows" AS
 * "events" WHERE id = $1`, which means the same (the view is `SELECT *` of
 * that relation; the gate checked the text as written).
 *
 * Only where that is plainly the same: a reference by the bare name, at the
 * place DuckDB's parse tree gives, to a dataset whose view is the whole
 * relation (no hidden provenance columns, not a scan provider, not a view of
 * the config), in a statement with no CTE and no column reference of three
 * or more parts. Otherwise, or when the new text does not prepare, the
 * statement stays as written. A change of the catalog (a dataset replaced,
 * added or removed) makes the kept statement be prepared again (find_prep).
 */
/* Collects the tree's BASE_TABLE references into refs; false when the rewrite must not be tried. */
static bool direct_refs(const json_t *n, int depth, tm_vec *refs, tm_error *err) {
  if (depth > 4096) return false;
  if (json_is_array(n)) {
    size_t i;
    const json_t *v;
    json_array_foreach(n, i, v) if (!direct_refs(v, depth + 1, refs, err)) return false;
    return true;
  }
  if (!json_is_object(n)) return true;
  const json_t *ctes = json_object_get(json_object_get(n, "cte_map"), "map");
  if (json_array_size(ctes) > 0) return false;
  const char *type = json_string_value(json_object_get(n, "type"));
  if (type && !strcmp(type, "COLUMN_REF") && json_array_size(json_object_get(n, "column_names")) > 2)
    return false;
  if (type && !strcmp(type, "BASE_TABLE")) {
    const char *schema = json_string_value(json_object_get(n, "schema_name"));
    const char *catalog = json_string_value(json_object_get(n, "catalog_name"));
    const char *alias = json_string_value(json_object_get(n, "alias"));
    const json_t *at = json_object_get(n, "query_location");
    const json_t *when = json_object_get(n, "at_clause");
    const char *name = json_string_value(json_object_get(n, "table_name"));
    if (!name || (schema && *schema) || (catalog && *catalog) || !json_is_integer(at) ||
        json_integer_value(at) < 0 || (when && !json_is_null(when)))
      return false;
    direct_ref r = {(size_t)json_integer_value(at), tm_strdup(name), alias && *alias};
    if (!r.name || tm_vec_push(refs, &r, err) != TM_OK) {
      tm_free(r.name);
      return false;
    }
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)n, key, v) if (!direct_refs(v, depth + 1, refs, err)) return false;
  return true;
}

static int cmp_refs(const void *a, const void *b) {
  size_t x = ((const direct_ref *)a)->at, y = ((const direct_ref *)b)->at;
  return x < y ? -1 : x > y;
}

/* The references of the parse tree ast (text offsets, in order); false when there is none to
 * make direct, or one may not be. */
static bool plan_from_ast(const json_t *ast, direct_plan *out) {
  memset(out, 0, sizeof *out);
  tm_error err;
  tm_error_init(&err);
  tm_vec refs;
  tm_vec_init(&refs, sizeof(direct_ref), 1 << 16);
  bool ok = ast && direct_refs(ast, 0, &refs, &err) && refs.len > 0;
  if (ok && refs.len > 1) qsort(refs.ptr, refs.len, sizeof(direct_ref), cmp_refs);
  out->refs = (direct_ref *)refs.ptr;
  out->n = refs.len;
  if (!ok) plan_dispose(out);
  return ok;
}

/*
 * Maps an offset between a text and its shape key (tm_sql__shape_key: each
 * standalone run of digits is one '?', all else is as written): to_key, at is
 * in sql and the key's offset is returned; else the reverse. SIZE_MAX when
 * the two do not correspond there.
 */
static size_t shape_map(const char *sql, const char *key, size_t at, bool to_key) {
  size_t i = 0, j = 0;
  for (;;) {
    if ((to_key ? i : j) == at) return to_key ? j : i;
    if (!sql[i] || !key[j]) return SIZE_MAX;
    if (key[j] == '?' && isdigit((unsigned char)sql[i])) {
      while (isdigit((unsigned char)sql[i])) i++;
      j++;
      continue;
    }
    if (sql[i] != key[j]) return SIZE_MAX;
    i++;
    j++;
  }
}

/* The length of the identifier naming name at text + at (bare, any case, or quoted exactly); 0 when it does not. */
static size_t name_at(const char *text, size_t len, size_t at, const char *name) {
  size_t n = strlen(name);
  if (at >= len) return 0;
  if (text[at] == '"') {
    size_t i = at + 1, k = 0;
    while (i < len) {
      if (text[i] == '"') {
        if (i + 1 < len && text[i + 1] == '"') {
          if (k >= n || name[k] != '"') return 0;
          k++;
          i += 2;
          continue;
        }
        return k == n ? i + 1 - at : 0;
      }
      if (k >= n || text[i] != name[k]) return 0;
      k++;
      i++;
    }
    return 0;
  }
  if (at + n > len || strncasecmp(text + at, name, n) != 0) return 0;
  unsigned char next = at + n < len ? (unsigned char)text[at + n] : ' ';
  return isalnum(next) || next == '_' || next == '$' || next == '"' || next == '.' ? 0 : n;
}

/*
 * Writes into out the text of sql with each reference of p made direct
 * (above); p's offsets are sql's, or its shape key's when key is given.
 * False when a reference may not be made direct. Under the catalog's lock
 * (the relations, and *generation with them).
 */
static bool direct_text(tm_sql_catalog *c, const char *sql, const char *key, const direct_plan *p,
                        tm_buf *out, uint64_t *generation) {
  tm_error err;
  tm_error_init(&err);
  size_t len = strlen(sql), done = 0;
  bool ok = p->n > 0;
  pthread_mutex_lock(&c->mu);
  *generation = c->generation;
  for (size_t i = 0; ok && i < p->n; i++) {
    const direct_ref *r = &p->refs[i];
    size_t at = key ? shape_map(sql, key, r->at, false) : r->at;
    cat_item *it = at != SIZE_MAX ? find_item(c, r->name) : NULL;
    size_t n = it && it->engine && !it->provider && !it->view &&
                       !tm_engine__scan_provider(it->engine) &&
                       tm_engine_hidden_columns(tm_engine_schema(it->engine)) == 0 && at >= done
                   ? name_at(sql, len, at, r->name)
                   : 0;
    ok = n > 0 && tm_buf_append(out, sql + done, at - done, &err) == TM_OK &&
         tm_engine_relation(it->engine, out, &err) == TM_OK;
    if (ok && !r->aliased)
      ok = tm_buf_puts(out, " AS ", &err) == TM_OK && tm_engine__quote_ident(out, r->name, &err) == TM_OK;
    done = at + n;
  }
  pthread_mutex_unlock(&c->mu);
  if (ok) ok = tm_buf_append(out, sql + done, len - done, &err) == TM_OK;
  return ok;
}

/* Prepares sql with its datasets read directly (above) into pe when that can be done; g keeps its own. */
static void direct_prepare(tm_sql_session *s, const char *sql, const gated *g, prep_entry *pe) {
  direct_plan plan;
  if (!plan_from_ast(g->ast, &plan)) return;
  tm_buf text = TM_BUF_INIT((size_t)CACHE_SQL_MAX * 4);
  duckdb_prepared_statement ps = NULL;
  uint64_t generation = 0;
  if (direct_text(s->cat, sql, NULL, &plan, &text, &generation) &&
      duckdb_prepare(s->conn, tm_buf_cstr(&text), &ps) == DuckDBSuccess &&
      duckdb_nparams(ps) == duckdb_nparams(g->ps) &&
      duckdb_prepared_statement_column_count(ps) == duckdb_prepared_statement_column_count(g->ps)) {
    pe->ps = ps;
    pe->direct = true;
    pe->generation = generation;
    ps = NULL;
  }
  if (ps) duckdb_destroy_prepare(&ps);
  tm_buf_dispose(&text);
  plan_dispose(&plan);
}

/*
 * Keeps g's prepared statement as the session's for the text sql (g gives it
 * up: g->ps becomes NULL). NULL when it is not kept (too long a text, a scan
 * provider read, no memory): g keeps it then.
 */
static prep_entry *keep_prep(tm_sql_session *s, const char *sql, gated *g) {
  if (!g->ps || strlen(sql) > CACHE_SQL_MAX || needs_pushdown(s->cat, &g->tables)) return NULL;
  prep_entry fresh = {0};
  tm_error e;
  tm_error_init(&e);
  if (!(fresh.sql = tm_strdup(sql)) || names_copy(&fresh.tables, &g->tables, &e) != TM_OK) {
    tm_free(fresh.sql);
    return NULL;
  }
  if (g->direct) {
    fresh.direct = true;
    fresh.generation = g->generation;
  } else {
    direct_prepare(s, sql, g, &fresh);
  }
  prep_entry *slot = NULL;
  if (s->n_preps < CACHE_PREPARED) {
    slot = &s->preps[s->n_preps++];
  } else {
    for (size_t i = 0; i < s->n_preps; i++)
      if (!slot || s->preps[i].used < slot->used) slot = &s->preps[i];
    prep_dispose(slot);
  }
  if (!fresh.ps) {
    fresh.ps = g->ps;
    g->ps = NULL;
  }
  fresh.used = ++s->tick;
  *slot = fresh;
  return slot;
}

uint64_t tm_sql__direct_runs(const tm_sql_session *s) { return s->direct_runs; }

int64_t tm_sql__kept_runs(const tm_sql_session *s, const char *sql) {
  for (size_t i = 0; i < s->n_preps; i++)
    if (!strcmp(s->preps[i].sql, sql)) return s->preps[i].runs;
  return -1;
}

size_t tm_sql__kept_direct(const tm_sql_session *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_preps; i++) n += s->preps[i].direct;
  return n;
}

/* Remembers that the texts of shape key pass the gate, reading tables t. */
static void remember_shape(tm_sql_session *s, const char *key, const gate_names *t, const char *sql,
                           const json_t *ast) {
  shape_entry *slot = NULL;
  if (s->n_shapes < CACHE_SHAPES) {
    slot = &s->shapes[s->n_shapes];
  } else {
    for (size_t i = 0; i < s->n_shapes; i++)
      if (!slot || s->shapes[i].used < slot->used) slot = &s->shapes[i];
  }
  tm_error e;
  tm_error_init(&e);
  gate_names copy;
  char *k = tm_strdup(key);
  if (!k || names_copy(&copy, t, &e) != TM_OK) {
    tm_free(k);
    return; /* not remembered: the next text of this shape is checked whole */
  }
  if (slot == &s->shapes[s->n_shapes]) {
    s->n_shapes++;
  } else {
    tm_free(slot->key);
    names_dispose(&slot->tables);
    plan_dispose(&slot->plan);
  }
  slot->key = k;
  slot->tables = copy;
  slot->used = ++s->tick;
  /* Where the texts of this shape name datasets, at offsets of the key (the same for all). */
  if (plan_from_ast(ast, &slot->plan))
    for (size_t i = 0; i < slot->plan.n; i++)
      if ((slot->plan.refs[i].at = shape_map(sql, key, slot->plan.refs[i].at, true)) == SIZE_MAX) {
        plan_dispose(&slot->plan);
        break;
      }
}

/*
 * The read-only gate with the session's memory (see struct tm_sql_session):
 * fills out (the prepared statement, bindings clear; its parse tree, NULL for
 * EXPLAIN or when the shape path made it; its tables) for the caller to
 * dispose (gated_dispose).
 */
static int session_gate(tm_sql_session *s, const char *sql, gated *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  shape_entry *shape = NULL;
  bool have_key = false;
  if (strlen(sql) <= CACHE_SQL_MAX) {
    tm_error ke;
    tm_error_init(&ke);
    have_key = tm_sql__shape_key(sql, &s->key, &ke) == TM_OK;
    for (size_t i = 0; have_key && i < s->n_shapes && !shape; i++)
      if (!strcmp(s->shapes[i].key, tm_buf_cstr(&s->key))) shape = &s->shapes[i];
    if (shape && needs_pushdown(s->cat, &shape->tables)) shape = NULL;
  }
  int rc;
  if (shape) {
    shape->used = ++s->tick;
    /* Its datasets read directly when they may be; as written when not, or when the direct text
     * fails (the error then names what the user wrote). */
    tm_buf direct = TM_BUF_INIT((size_t)CACHE_SQL_MAX * 4);
    tm_error de;
    tm_error_init(&de);
    if (shape->plan.n && direct_text(s->cat, sql, shape->key, &shape->plan, &direct, &out->generation) &&
        tm_sql__gate_again(s->conn, tm_buf_cstr(&direct), &out->ps, &de) == TM_OK)
      out->direct = true;
    tm_buf_dispose(&direct);
    rc = out->ps ? TM_OK : tm_sql__gate_again(s->conn, sql, &out->ps, err);
    if (rc == TM_OK) rc = names_copy(&out->tables, &shape->tables, err);
  } else {
    if (s->serializer && s->serializer_runs >= PREP_RUNS_MAX) {
      duckdb_destroy_prepare(&s->serializer); /* made again at its next use (tm_sql__gate) */
      s->serializer_runs = 0;
    }
    s->serializer_runs++;
    rc = tm_sql__gate(s->conn, sql, &s->serializer, &out->ps, &out->ast, err);
    if (rc == TM_OK && out->ast)
      rc = tm_sql__tables(out->ast, &out->tables.names, &out->tables.n, err);
    if (rc == TM_OK && out->ast && have_key)
      remember_shape(s, tm_buf_cstr(&s->key), &out->tables, sql, out->ast);
  }
  if (rc != TM_OK) gated_dispose(out);
  return rc;
}

int tm_sql_prepare(tm_sql_session *s, const char *sql, tm_sql_stmt **out, tm_error *err) {
  return tm_sql_prepare_params(s, sql, NULL, out, err);
}

int tm_sql_prepare_params(tm_sql_session *s, const char *sql, const tm_sql_params *params,
                          tm_sql_stmt **out, tm_error *err) {
  if (s->open) return tm_error_set(err, TM_ECONFLICT, "the session is running another statement");
  s->datasets[0] = '\0';
  tm_sql_stmt *q = tm_calloc(1, sizeof *q);
  if (!q) return tm_error_nomem(err);
  q->s = s;
  s->open = q;
  char *text = NULL; /* the text with `:name` made `$name`, when values are given */
  int rc = TM_OK;
  if (params) {
    if (!(text = tm_strdup(sql))) rc = tm_error_nomem(err);
    else tm_sql_colon_params(text, strlen(text));
  }
  const char *gsql = text ? text : sql;
  prep_entry *pe = rc == TM_OK ? find_prep(s, gsql) : NULL;
  if (pe) {
    /* A text prepared before in this session: bind and run (its tables for the names). */
    q->ps = pe->ps;
    q->cached = true;
    duckdb_clear_bindings(q->ps);
    rc = names_copy(&q->g.tables, &pe->tables, err);
  } else if (rc == TM_OK) {
    rc = session_gate(s, gsql, &q->g, err);
    /* A text with parameters is made to be run again: its prepared statement is kept. */
    if (rc == TM_OK && params && (pe = keep_prep(s, gsql, &q->g))) q->cached = true;
    if (rc == TM_OK) q->ps = pe ? pe->ps : q->g.ps;
  }
  tm_free(text);
  if (rc == TM_OK && (pe ? pe->direct : q->g.direct)) s->direct_runs++;
  if (rc == TM_OK) rc = note_datasets(s, &q->g.tables, err);
  if (rc == TM_OK && params) rc = tm_sql__bind(q->ps, params, err);
  if (rc == TM_OK && q->g.ast) rc = post_pushdown(s->cat, s->conn, q->g.ast, &q->pushed, err);
  if (rc == TM_OK && s->timeout_ms > 0)
    q->watch = tm_db__watch(s->cat->db, s->conn, tm_monotonic_ns() + s->timeout_ms * 1000000);
  if (rc == TM_OK && pe) pe->runs++;
  if (rc == TM_OK) {
    if (duckdb_execute_prepared_streaming(q->ps, &q->result) == DuckDBError) {
      rc = stmt_error(q, &q->result, err);
      duckdb_destroy_result(&q->result);
    } else {
      q->has_result = true;
    }
  }
  if (rc == TM_OK) {
    q->n_cols = (size_t)duckdb_column_count(&q->result);
    q->types = tm_calloc(q->n_cols ? q->n_cols : 1, sizeof *q->types);
    if (!q->types) rc = tm_error_nomem(err);
    for (size_t i = 0; rc == TM_OK && i < q->n_cols; i++)
      q->types[i] = duckdb_column_logical_type(&q->result, i);
  }
  if (rc < 0) {
    tm_sql_stmt_free(q);
    return rc;
  }
  *out = q;
  return TM_OK;
}

/* Whether msg starts with DuckDB's "<Kind> Error: " (one or more capitalised words). */
static bool duckdb_kind(const char *msg, const char *kind) {
  size_t n = strlen(kind);
  return strncmp(msg, kind, n) == 0 && strncmp(msg + n, " Error: ", 8) == 0;
}

static bool any_duckdb_kind(const char *msg) {
  const char *p = msg;
  while (isupper((unsigned char)*p)) {
    while (isalpha((unsigned char)*p)) p++;
    if (strncmp(p, " Error: ", 8) == 0) return true;
    if (*p != ' ') return false;
    p++;
  }
  return false;
}

const char *tm_sql_error_code(int rc, const char *message) {
  const char *msg = message ? message : "";
  switch (rc) {
    case TM_ETOOLARGE: return "ResourcesExhausted";
    case TM_ETIMEOUT:
    case TM_EIO:
    case TM_ECORRUPT: return "QueryExecutionError";
    case TM_EINVALID:
      if (duckdb_kind(msg, "Parser")) return "SyntaxError";
      if (duckdb_kind(msg, "Binder") || duckdb_kind(msg, "Catalog")) return "QueryPlanningError";
      /* Another DuckDB kind (Conversion, Invalid Input, Out of Range, ...) comes from running
       * the statement; a message of the gate's own refuses it before it runs. */
      return any_duckdb_kind(msg) ? "QueryExecutionError" : "QueryPlanningError";
    default: return "InternalError";
  }
}

int tm_sql_step(tm_sql_stmt *q, tm_error *err) {
  if (q->chunk && q->row + 1 < q->rows) {
    q->row++;
    return TM_OK;
  }
  for (;;) {
    if (q->chunk) duckdb_destroy_data_chunk(&q->chunk);
    q->chunk = duckdb_fetch_chunk(q->result);
    if (!q->chunk) {
      if (duckdb_result_error(&q->result)) return stmt_error(q, &q->result, err);
      return TM_ITEROVER;
    }
    q->rows = duckdb_data_chunk_get_size(q->chunk);
    q->row = 0;
    if (q->rows > 0) return TM_OK;
  }
}

size_t tm_sql_column_count(const tm_sql_stmt *q) { return q->n_cols; }

const char *tm_sql_column_name(const tm_sql_stmt *q, size_t i) {
  const char *n = duckdb_column_name((duckdb_result *)&q->result, i);
  return n ? n : "";
}

bool tm_sql_column_is_null(const tm_sql_stmt *q, size_t i) {
  if (!q->chunk) return true;
  uint64_t *m = duckdb_vector_get_validity(duckdb_data_chunk_get_vector(q->chunk, i));
  return m && !duckdb_validity_row_is_valid(m, q->row);
}

int tm_sql_column_arrow_type(const tm_sql_stmt *q, size_t i, tm_buf *out, tm_error *err) {
  if (i >= q->n_cols) return tm_error_set(err, TM_EINVALID, "no such column");
  return tm_sql__arrow_type(q->types[i], out, err);
}

int tm_sql_column_render(tm_sql_stmt *q, size_t i, tm_buf *out, tm_cell_kind *kind, tm_error *err) {
  if (!q->chunk || i >= q->n_cols) return tm_error_set(err, TM_EINVALID, "no such cell");
  return tm_sql__render(duckdb_data_chunk_get_vector(q->chunk, i), q->types[i], q->row, out, kind, err);
}

tm_sql_type tm_sql_column_type(const tm_sql_stmt *q, size_t i) {
  return i < q->n_cols ? tm_sql__kind(q->types[i]) : TM_SQLT_OTHER;
}

bool tm_sql_column_value(const tm_sql_stmt *q, size_t i, tm_sql_value *out) {
  if (!q->chunk || i >= q->n_cols) return false;
  return tm_sql__value(duckdb_data_chunk_get_vector(q->chunk, i), q->types[i], q->row, out);
}

void tm_sql_shape_dispose(tm_sql_shape *sh) {
  if (!sh) return;
  for (size_t i = 0; sh->col_names && i < sh->n_cols; i++) tm_free(sh->col_names[i]);
  tm_free(sh->col_names);
  tm_free(sh->col_types);
  tm_free(sh->param_types);
  memset(sh, 0, sizeof *sh);
}

int tm_sql_describe(tm_sql_session *s, const char *sql, tm_sql_shape *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  if (s->open) return tm_error_set(err, TM_ECONFLICT, "the session is running another statement");
  duckdb_prepared_statement ps = NULL;
  tm_sql_shape sh;
  memset(&sh, 0, sizeof sh);
  gated g;
  memset(&g, 0, sizeof g);
  /* A described text is about to run (pgwire's Parse, then Execute): its statement is kept. */
  prep_entry *pe = find_prep(s, sql);
  int rc = TM_OK;
  if (!pe) {
    rc = session_gate(s, sql, &g, err);
    if (rc == TM_OK) pe = keep_prep(s, sql, &g);
  }
  if (rc == TM_OK) ps = pe ? pe->ps : g.ps;
  if (rc == TM_OK) {
    sh.n_params = (size_t)duckdb_nparams(ps);
    sh.n_cols = (size_t)duckdb_prepared_statement_column_count(ps);
    sh.param_types = tm_calloc(sh.n_params ? sh.n_params : 1, sizeof *sh.param_types);
    sh.col_types = tm_calloc(sh.n_cols ? sh.n_cols : 1, sizeof *sh.col_types);
    sh.col_names = tm_calloc(sh.n_cols ? sh.n_cols : 1, sizeof *sh.col_names);
    if (!sh.param_types || !sh.col_types || !sh.col_names) rc = tm_error_nomem(err);
  }
  for (size_t i = 0; rc == TM_OK && i < sh.n_params; i++) {
    /* DuckDB numbers parameters from 1; one it cannot type yet is ANY (OTHER). */
    duckdb_logical_type lt = duckdb_param_logical_type(ps, (idx_t)i + 1);
    sh.param_types[i] = lt ? tm_sql__kind(lt) : TM_SQLT_OTHER;
    if (lt) duckdb_destroy_logical_type(&lt);
  }
  if (rc == TM_OK && sh.n_cols == 1) {
    /* DuckDB answers one column of type INVALID when a column's type waits for the values. */
    duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(ps, 0);
    if (lt && duckdb_get_type_id(lt) == DUCKDB_TYPE_INVALID) {
      sh.cols_unknown = true;
      sh.n_cols = 0;
    }
    if (lt) duckdb_destroy_logical_type(&lt);
  }
  for (size_t i = 0; rc == TM_OK && i < sh.n_cols; i++) {
    const char *name = duckdb_prepared_statement_column_name(ps, (idx_t)i); /* duckdb_free */
    if (!(sh.col_names[i] = tm_strdup(name ? name : ""))) rc = tm_error_nomem(err);
    if (name) duckdb_free((void *)name);
    duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(ps, (idx_t)i);
    sh.col_types[i] = lt ? tm_sql__kind(lt) : TM_SQLT_OTHER;
    if (lt) duckdb_destroy_logical_type(&lt);
  }
  gated_dispose(&g);
  if (rc != TM_OK) {
    tm_sql_shape_dispose(&sh);
    return rc;
  }
  *out = sh;
  return TM_OK;
}

int tm_sql_query(tm_sql_session *s, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                 void *payload, tm_sql_result_info *info, tm_error *err) {
  tm_sql_stmt *q;
  TM_TRY(tm_sql_prepare(s, sql, &q, err));
  size_t n = q->n_cols;
  int rc = TM_OK;
  tm_out o;
  bool begun = false;
  tm_buf cells = TM_BUF_INIT(TM_BUF_UNLIMITED);
  const char **names = tm_calloc(n ? n : 1, sizeof *names);
  const char **texts = tm_calloc(n ? n : 1, sizeof *texts);
  size_t *lens = tm_calloc(n ? n : 1, sizeof *lens);
  size_t *starts = tm_calloc(n ? n : 1, sizeof *starts);
  tm_cell_kind *kinds = tm_calloc(n ? n : 1, sizeof *kinds);
  int64_t rows = 0;
  if (!names || !texts || !lens || !starts || !kinds) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < n; i++) names[i] = tm_sql_column_name(q, i);
  TM_CHECK(tm_out_begin(&o, format, names, n, sink, payload, err));
  begun = true;
  while ((rc = tm_sql_step(q, err)) == TM_OK) {
    tm_buf_clear(&cells);
    for (size_t i = 0; i < n; i++) {
      starts[i] = cells.len;
      TM_CHECK(tm_sql_column_render(q, i, &cells, &kinds[i], err));
      lens[i] = cells.len - starts[i];
    }
    for (size_t i = 0; i < n; i++)
      texts[i] = kinds[i] == TM_CELL_NULL ? NULL : tm_buf_cstr(&cells) + starts[i];
    TM_CHECK(tm_out_row(&o, texts, lens, kinds, err));
    rows++;
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (rc == TM_OK) {
    begun = false;
    rc = tm_out_end(&o, err);
  }
done:
  if (begun) tm_out_dispose(&o);
  tm_buf_dispose(&cells);
  tm_free(names);
  tm_free(texts);
  tm_free(lens);
  tm_free(starts);
  tm_free(kinds);
  tm_sql_stmt_free(q);
  if (rc == TM_OK && info) {
    info->rows = rows;
    info->columns = n;
  }
  return rc;
}

/* ---- retention_sql --------------------------------------------------------------------------- */

static const char *skip_space(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static bool keyword(const char **pp, const char *kw) {
  const char *p = skip_space(*pp);
  size_t n = strlen(kw);
  if (strncasecmp(p, kw, n) != 0) return false;
  char c = p[n];
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
    return false;
  *pp = p + n;
  return true;
}

/* Reads an identifier: bare, "double", `back` or [bracket] quoted. */
static int read_ident(const char **pp, tm_buf *out, tm_error *err) {
  const char *p = skip_space(*pp);
  char close = *p == '"' ? '"' : *p == '`' ? '`' : *p == '[' ? ']' : 0;
  if (close) {
    p++;
    for (;;) {
      if (!*p) return tm_error_set(err, TM_EINVALID, "retention_sql: unterminated table name");
      if (*p == close) {
        if (close != ']' && p[1] == close) {
          TM_TRY(tm_buf_putc(out, close, err));
          p += 2;
          continue;
        }
        p++;
        break;
      }
      TM_TRY(tm_buf_putc(out, *p++, err));
    }
  } else {
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '_' || *p == '$' || *p == '-' || (unsigned char)*p >= 0x80)
      TM_TRY(tm_buf_putc(out, *p++, err));
    if (out->len == 0) return tm_error_set(err, TM_EINVALID, "retention_sql: a table name is missing");
  }
  *pp = p;
  return TM_OK;
}

int tm_sql_retention_condition(const char *sql, const char *dataset, char **where_out,
                               tm_error *err) {
  const char *p = sql;
  tm_buf name = TM_BUF_INIT(4096);
  int rc = TM_OK;
  if (!keyword(&p, "DELETE") || !keyword(&p, "FROM")) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql must read DELETE FROM %s WHERE ...",
                      dataset);
    goto done;
  }
  TM_CHECK(read_ident(&p, &name, err));
  if (*p == '.') { /* schema-qualified: keep the table part */
    p++;
    tm_buf_clear(&name);
    TM_CHECK(read_ident(&p, &name, err));
  }
  if (strcasecmp(tm_buf_cstr(&name), dataset) != 0) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql deletes from '%s', not from the dataset '%s'",
                      tm_buf_cstr(&name), dataset);
    goto done;
  }
  if (!keyword(&p, "WHERE")) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql needs a WHERE condition");
    goto done;
  }
  const char *start = skip_space(p);
  size_t n = strlen(start);
  while (n > 0 && (start[n - 1] == ';' || start[n - 1] == ' ' || start[n - 1] == '\n' ||
                   start[n - 1] == '\t' || start[n - 1] == '\r'))
    n--;
  if (n == 0) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql has an empty WHERE condition");
    goto done;
  }
  *where_out = tm_strndup(start, n);
  if (!*where_out) rc = tm_error_nomem(err);
done:
  tm_buf_dispose(&name);
  return rc;
}
