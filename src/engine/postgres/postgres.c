/*
 * postgres.c - the postgres engine: the acceleration is one table of an
 * external PostgreSQL server, reached through libpq (engine layer).
 *
 * The dataset's table is named after the dataset in the connection's current
 * schema. Beside it, shared by every dataset of the database, tidemark_meta
 * (one row per dataset: schema, options fingerprint, row count) and
 * tidemark_state (the state map), both written in the refresh's transaction
 * (SPEC D1): rows, deletes and the state map commit together or not at all.
 *
 * Loading: the rows of a write transaction stream into the server with one
 * COPY ... FROM STDIN (FORMAT binary). A table without a primary key takes
 * them directly. A keyed table stages them in a temporary table in arrival
 * order and merges them at the end (or before a delete) with one INSERT ...
 * SELECT DISTINCT ON (key) ... ON CONFLICT: `drop` keeps the stored row, or
 * the first arrival (DO NOTHING); `upsert` keeps the last arrival (DO UPDATE,
 * an identical row is left alone) (SPEC A8). A full refresh (A11) and a
 * replacement for a new schema (B9) load a new table and swap it in (DROP,
 * ALTER TABLE RENAME) inside the commit, so readers see the old rows until
 * then. Retention by time is one DELETE, and so is retention_sql (its
 * condition run by PostgreSQL: pg_delete_where).
 *
 * Reading: SQL runs in DuckDB over the tm_scan table function. Each query
 * (every scan of one DuckDB statement) reads in one REPEATABLE READ
 * transaction of a pooled connection (one committed state, C5) through a
 * server-side cursor whose SELECT names only the columns the query uses and
 * carries the pushed-down comparisons (=, <, <=, >, >=, IN, IS [NOT] NULL on
 * every type but floats) as binary parameters; DuckDB filters again.
 *
 * Several processes: a refresh first takes the lease (tm_engine_lease_take),
 * a session advisory lock held by a connection of its own; the server drops
 * it when that connection goes, so a refresher killed mid-refresh leaves the
 * last committed state (its transaction is rolled back) and no lock behind.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/postgres/pg_int.h"
#include "format/arrow/render.h"
#include "source/source.h"
#include "util/alloc.h"
#include "util/log.h"

#define POOL_DEFAULT 10
#define POOL_MAX 1000
#define FETCH_ROWS 8192
#define COPY_FLUSH_BYTES (1u << 20)
#define META_TABLE "tidemark_meta"
#define STATE_TABLE "tidemark_state"
#define STAGE_TABLE "pg_temp.tm_stage"
#define SEQ_COLUMN "_tm_arrival" /* the stage's arrival number (not a provenance column) */
/* Positions of one file per DELETE (an int8[] parameter). */
#define DELETE_IN_MAX 4096
/* The advisory lock that serializes tidemark's DDL (creating the shared tables). */
#define DDL_LOCK_KEY 0x746964656d61726bLL /* "tidemark" */

typedef struct pg_engine {
  tm_engine base;
  tm_kv params;           /* owned: the connection params */
  char *where;            /* owned: "postgres user@host:port/db" for messages (no password) */
  PGconn *wconn;          /* the writer's connection (and DDL at open) */
  char *table_q;          /* owned: the dataset's quoted table name */
  char *new_q;            /* owned: the quoted name of a replacement's new table */
  char hash[17];          /* 16 hex digits of a hash of the dataset name (index names) */
  char *provider;         /* owned: the tm_scan relation name */
  bool pending;           /* a replacement (B9): the first commit swaps the new table in */
  bool *jsonb;            /* owned, one per column: stored as jsonb (a nested source column,
                             JSON text in tidemark); base.json_cols borrows it */
  pthread_mutex_t mu;     /* guards the pool and shares */
  pthread_cond_t cv;      /* a pooled connection came back */
  PGconn **pool;          /* idle read connections */
  size_t n_pool;
  int open_reads;         /* read connections in existence (idle or in use) */
  int pool_max;           /* connection_pool_size */
  tm_engine_shares shares; /* the read transactions of running statements (head under mu) */
  uint64_t cursor_seq;    /* atomic: cursor names */
} pg_engine;

static int share_begin(void *backend, void **conn, tm_error *err);
static void share_end(void *backend, void *conn);

typedef struct pg_txn {
  tm_engine_txn base;
  const char *target_q;   /* table_q or new_q */
  bool keyed;
  /* The key's unique index on the target: 0 none yet (a new table, loaded before it is
   * indexed), 1 tm_pk_<hash>_new on the new table, 2 the table's own tm_pk_<hash>. */
  int pk_index;
  int64_t merged;         /* rows merged into the target so far */
  bool copying;           /* a COPY is open on the writer's connection */
  tm_buf copy;            /* encoded rows not yet sent */
  int64_t count_before;
  int64_t inserted, updated, deleted;
  int64_t sup[TM_SUPERSEDED__COUNT];
} pg_txn;

typedef struct pg_scan {
  tm_engine_scan base;
  PGconn *conn;           /* the connection holding the scan's transaction */
  bool own_conn;          /* a pooled connection this scan began a transaction on */
  char cursor[32];
  bool cursor_open;
  tm_schema out_schema;   /* the scanned columns */
  size_t *cols;           /* schema index per scanned column */
  size_t n_cols, n_proj;  /* projection first, then the residual filter's columns */
  tm_predicate residual;  /* terms PostgreSQL does not order as tidemark does (floats) */
  bool done;
} pg_scan;

static pg_engine *pg_of(tm_engine *e) { return (pg_engine *)e; }
static const tm_engine_vtable k_vtable;

/* ---- connections ------------------------------------------------------------------ */

static uint64_t fnv64(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return h;
}

static const char *const k_params[] = {"pg_host", "pg_port",        "pg_db",
                                       "pg_user", "pg_pass",        "pg_sslmode",
                                       "pg_sslrootcert", "connection_pool_size", NULL};

bool tm_engine_pg_param_known(const char *key) {
  for (size_t i = 0; k_params[i]; i++)
    if (strcmp(key, k_params[i]) == 0) return true;
  return false;
}

/* A decimal number sent by the server or written in the config; 0 when it is not one. */
static int64_t num(const char *s) {
  int64_t v = 0;
  return s && tm_parse_int64(s, strlen(s), &v) == TM_OK ? v : 0;
}

static bool all_digits(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return false;
  return true;
}

int tm_engine_pg_params_check(const tm_kv *params, tm_error *err) {
  static const char *const required[] = {"pg_host", "pg_db", "pg_user"};
  for (size_t i = 0; params && i < params->len; i++)
    if (!tm_engine_pg_param_known(params->items[i].key))
      return tm_error_set(err, TM_EINVALID,
                          "unknown param '%s' of engine postgres (allowed: pg_host, pg_port, "
                          "pg_db, pg_user, pg_pass, pg_sslmode, pg_sslrootcert, "
                          "connection_pool_size)",
                          params->items[i].key);
  for (size_t i = 0; i < 3; i++) {
    const char *v = params ? tm_kv_get(params, required[i]) : NULL;
    if (!v || !*v)
      return tm_error_set(err, TM_EINVALID, "engine postgres needs the param %s", required[i]);
  }
  const char *port = tm_kv_get(params, "pg_port");
  if (port && (!all_digits(port) || strlen(port) > 5 || num(port) < 1 || num(port) > 65535))
    return tm_error_set(err, TM_EINVALID, "pg_port '%s' is not a port number (1-65535)", port);
  const char *ssl = tm_kv_get(params, "pg_sslmode");
  if (ssl && strcmp(ssl, "disable") && strcmp(ssl, "prefer") && strcmp(ssl, "require") &&
      strcmp(ssl, "verify-ca") && strcmp(ssl, "verify-full"))
    return tm_error_set(err, TM_EINVALID,
                        "pg_sslmode '%s' is not one of disable, prefer, require, verify-ca, "
                        "verify-full",
                        ssl);
  const char *pool = tm_kv_get(params, "connection_pool_size");
  if (pool && (!all_digits(pool) || strlen(pool) > 4 || num(pool) < 1 || num(pool) > POOL_MAX))
    return tm_error_set(err, TM_EINVALID, "connection_pool_size '%s' is not a number from 1 to %d",
                        pool, POOL_MAX);
  return TM_OK;
}

/* The server's notices ("already exists, skipping") go to the debug log, not stderr. */
static void notice_to_log(void *arg, const char *message) {
  (void)arg;
  TM_LOG_DEBUG_(NULL, "postgres: %s", message);
}

/* Connects with the params (libpq's defaults and environment are not consulted). */
static int connect_with(const tm_kv *params, const char *where, PGconn **out, tm_error *err) {
  const char *ssl = tm_kv_get(params, "pg_sslmode");
  const char *port = tm_kv_get(params, "pg_port");
  const char *keys[12], *vals[12];
  size_t n = 0;
#define KV(k, v) \
  do {           \
    keys[n] = k; \
    vals[n] = v; \
    n++;         \
  } while (0)
  KV("host", tm_kv_get(params, "pg_host"));
  KV("port", port ? port : "5432");
  KV("dbname", tm_kv_get(params, "pg_db"));
  KV("user", tm_kv_get(params, "pg_user"));
  /* An empty password rather than ~/.pgpass: only the config says who connects. */
  KV("password", tm_kv_get(params, "pg_pass") ? tm_kv_get(params, "pg_pass") : "");
  KV("sslmode", ssl ? ssl : "verify-full"); /* Spice's default */
  if (tm_kv_get(params, "pg_sslrootcert")) KV("sslrootcert", tm_kv_get(params, "pg_sslrootcert"));
  KV("application_name", "tidemark");
  KV("client_encoding", "UTF8");
  KV("connect_timeout", "10");
  keys[n] = NULL;
  vals[n] = NULL;
#undef KV
  PGconn *c = PQconnectdbParams(keys, vals, 0);
  if (!c) return tm_error_nomem(err);
  if (PQstatus(c) != CONNECTION_OK) {
    int rc = tm_error_set(err, TM_EIO, "%s: cannot connect: %s", where, PQerrorMessage(c));
    PQfinish(c);
    return rc;
  }
  PQsetNoticeProcessor(c, notice_to_log, NULL);
  *out = c;
  return TM_OK;
}

/* The tm code of a failed command (SQLSTATE classes). */
static int code_of(const PGresult *r, PGconn *c) {
  const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
  if (PQstatus(c) != CONNECTION_OK || !st) return TM_EIO;
  if (!strncmp(st, "23", 2) || !strncmp(st, "40", 2) || !strcmp(st, "55P03")) return TM_ECONFLICT;
  if (!strncmp(st, "22", 2) || !strncmp(st, "42", 2)) return TM_EINVALID;
  if (!strcmp(st, "XX001") || !strcmp(st, "XX002")) return TM_ECORRUPT;
  if (!strcmp(st, "53200")) return TM_ENOMEM;
  if (!strcmp(st, "57014")) return TM_ECANCELLED;
  return TM_EIO;
}

static int pg_fail(tm_error *err, pg_engine *e, PGconn *c, PGresult *r, const char *what) {
  const char *msg = r && PQresultErrorMessage(r)[0] ? PQresultErrorMessage(r) : PQerrorMessage(c);
  size_t len = strlen(msg);
  while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) len--;
  int rc = tm_error_set(err, code_of(r, c), "dataset '%s' (%s): %s: %.*s", e->base.cfg.dataset
                        ? e->base.cfg.dataset : "?", e->where, what, (int)len, msg);
  PQclear(r);
  return rc;
}

/* Runs a command without parameters; its result is discarded. */
static int exec_sql(pg_engine *e, PGconn *c, const char *sql, const char *what, tm_error *err) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) return pg_fail(err, e, c, r, what);
  PQclear(r);
  return TM_OK;
}

/* Runs a statement with text parameters; *out (may be NULL) receives a result with rows. */
static int query_text(pg_engine *e, PGconn *c, const char *sql, int n, const char *const *vals,
                      bool binary, PGresult **out, const char *what, tm_error *err) {
  PGresult *r = PQexecParams(c, sql, n, NULL, vals, NULL, NULL, binary ? 1 : 0);
  ExecStatusType s = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) return pg_fail(err, e, c, r, what);
  if (out) *out = r;
  else PQclear(r);
  return TM_OK;
}

static void rollback_quiet(PGconn *c) {
  if (!c || PQstatus(c) != CONNECTION_OK) return;
  PGTransactionStatusType ts = PQtransactionStatus(c);
  if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) PQclear(PQexec(c, "ROLLBACK"));
}

/* The writer's connection, reconnected when the server dropped it. */
static int writer_conn(pg_engine *e, tm_error *err) {
  if (e->wconn && PQstatus(e->wconn) == CONNECTION_OK) return TM_OK;
  if (e->wconn) PQfinish(e->wconn);
  e->wconn = NULL;
  return connect_with(&e->params, e->where, &e->wconn, err);
}

static int pool_take(pg_engine *e, PGconn **out, tm_error *err) {
  pthread_mutex_lock(&e->mu);
  while (e->n_pool == 0 && e->open_reads >= e->pool_max) pthread_cond_wait(&e->cv, &e->mu);
  if (e->n_pool) {
    *out = e->pool[--e->n_pool];
    pthread_mutex_unlock(&e->mu);
    if (PQstatus(*out) == CONNECTION_OK) return TM_OK;
    PQfinish(*out); /* the server dropped it: connect again in its place */
  } else {
    e->open_reads++;
    pthread_mutex_unlock(&e->mu);
  }
  int rc = connect_with(&e->params, e->where, out, err);
  if (rc < 0) {
    pthread_mutex_lock(&e->mu);
    e->open_reads--;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
  }
  return rc;
}

static void pool_put(pg_engine *e, PGconn *c) {
  if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) rollback_quiet(c);
  pthread_mutex_lock(&e->mu);
  if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE) {
    e->pool[e->n_pool++] = c;
  } else {
    PQfinish(c);
    e->open_reads--;
  }
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu);
}

/* A pooled connection inside a read-only REPEATABLE READ transaction: one committed state. */
static int read_begin(pg_engine *e, PGconn **out, tm_error *err) {
  TM_TRY(pool_take(e, out, err));
  int rc = exec_sql(e, *out, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "begin a read",
                    err);
  if (rc < 0) pool_put(e, *out);
  return rc;
}

static void read_end(pg_engine *e, PGconn *c) {
  PQclear(PQexec(c, "COMMIT"));
  pool_put(e, c);
}

/* ---- SQL text ---------------------------------------------------------------------- */

static int quote(tm_buf *b, const char *name, tm_error *err) {
  return tm_engine__quote_ident(b, name, err);
}

static int col_list(tm_buf *b, const tm_schema *s, const char *prefix, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    if (i) TM_TRY(tm_buf_puts(b, ", ", err));
    if (prefix) TM_TRY(tm_buf_puts(b, prefix, err));
    TM_TRY(quote(b, s->cols[i].name, err));
  }
  return TM_OK;
}

static int pk_list(tm_buf *b, const pg_engine *e, tm_error *err) {
  for (size_t i = 0; i < e->base.cfg.n_pk; i++) {
    if (i) TM_TRY(tm_buf_puts(b, ", ", err));
    TM_TRY(quote(b, e->base.schema.cols[e->base.cfg.pk[i]].name, err));
  }
  return TM_OK;
}

/* CREATE TABLE <name> (columns), and the unique index of the key named pk_name. */
static int create_table(pg_engine *e, PGconn *c, const char *name_q, const char *pk_name,
                        bool temp_stage, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = tm_buf_printf(&sql, err, "CREATE %sTABLE %s (", temp_stage ? "TEMP " : "", name_q);
  for (size_t i = 0; rc == TM_OK && i < s->n_cols; i++) {
    char decl[64];
    if (e->jsonb[i]) snprintf(decl, sizeof decl, "jsonb");
    else tm_pg_type_decl(&s->cols[i].type, decl, sizeof decl);
    if (i) rc = tm_buf_puts(&sql, ", ", err);
    if (rc == TM_OK) rc = quote(&sql, s->cols[i].name, err);
    if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " %s", decl);
  }
  if (rc == TM_OK && temp_stage)
    rc = tm_buf_puts(&sql, ", " SEQ_COLUMN " bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP", err);
  else if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
  if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot create the table", err);
  if (rc == TM_OK && pk_name && e->base.cfg.n_pk) {
    tm_buf_clear(&sql);
    rc = tm_buf_printf(&sql, err, "CREATE UNIQUE INDEX \"%s\" ON %s (", pk_name, name_q);
    if (rc == TM_OK) rc = pk_list(&sql, e, err);
    if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
    if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot create the key's index", err);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * The time column's index (max() for the high-water mark), the provenance
 * index of refresh_mode: changes (a file's rows by (seq, file), a row by
 * (seq, file, pos): deletes search it, SPEC E4) and the config's indexes.
 */
static int create_indexes(pg_engine *e, PGconn *c, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = TM_OK;
  if (tm_engine_hidden_columns(s) == TM_PROV_COLUMNS) {
    rc = tm_buf_printf(&sql, err,
                       "CREATE INDEX IF NOT EXISTS \"tm_pv_%s\" ON %s (" TM_PROV_SEQ ", " TM_PROV_FILE
                       ", " TM_PROV_POS ")",
                       e->hash, e->table_q);
    if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot index the provenance", err);
    tm_buf_clear(&sql);
  }
  if (e->base.cfg.time_col >= 0) {
    rc = tm_buf_printf(&sql, err, "CREATE INDEX IF NOT EXISTS \"tm_tc_%s\" ON %s (", e->hash,
                       e->table_q);
    if (rc == TM_OK) rc = quote(&sql, s->cols[e->base.cfg.time_col].name, err);
    if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
    if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot index the time column", err);
  }
  for (size_t i = 0; rc == TM_OK && i < e->base.cfg.n_indexes; i++) {
    const tm_engine_ix *ix = &e->base.cfg.indexes[i];
    tm_buf_clear(&sql);
    rc = tm_buf_printf(&sql, err, "CREATE %sINDEX IF NOT EXISTS \"tm_ix_%s_%s\" ON %s (",
                       ix->unique ? "UNIQUE " : "", e->hash, ix->name + 6, e->table_q);
    for (size_t k = 0; rc == TM_OK && k < ix->n_cols; k++) {
      if (k) rc = tm_buf_puts(&sql, ", ", err);
      if (rc == TM_OK) rc = quote(&sql, s->cols[ix->cols[k]].name, err);
    }
    if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
    if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot create an index", err);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/* Drops the config's indexes of this dataset that the config no longer lists. */
static int drop_stale_indexes(pg_engine *e, PGconn *c, tm_error *err) {
  char like[40];
  snprintf(like, sizeof like, "tm\\_ix\\_%s\\_%%", e->hash);
  const char *vals[1] = {like};
  PGresult *r = NULL;
  TM_TRY(query_text(e, c,
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND "
                    "indexname LIKE $1",
                    1, vals, false, &r, "cannot list the indexes", err));
  int rc = TM_OK;
  for (int i = 0; rc == TM_OK && i < PQntuples(r); i++) {
    const char *name = PQgetvalue(r, i, 0);
    bool wanted = false;
    for (size_t k = 0; k < e->base.cfg.n_indexes; k++)
      wanted |= strcmp(name + 6 + 16 + 1, e->base.cfg.indexes[k].name + 6) == 0;
    if (wanted) continue;
    tm_buf sql = TM_BUF_INIT(4096);
    rc = tm_buf_printf(&sql, err, "DROP INDEX IF EXISTS \"%s\"", name);
    if (rc == TM_OK) rc = exec_sql(e, c, tm_buf_cstr(&sql), "cannot drop an index", err);
    tm_buf_dispose(&sql);
  }
  PQclear(r);
  return rc;
}

/* ---- open, close, drop ------------------------------------------------------------- */

static char *describe_where(const tm_kv *p) {
  const char *port = tm_kv_get(p, "pg_port");
  return tm_asprintf("postgres %s@%s:%s/%s", tm_kv_get(p, "pg_user"), tm_kv_get(p, "pg_host"),
                     port ? port : "5432", tm_kv_get(p, "pg_db"));
}

static void pg_free(pg_engine *e) {
  for (size_t i = 0; i < e->n_pool; i++) PQfinish(e->pool[i]);
  tm_free(e->pool);
  if (e->wconn) PQfinish(e->wconn);
  pthread_mutex_destroy(&e->mu);
  pthread_cond_destroy(&e->cv);
  tm_kv_dispose(&e->params);
  tm_free(e->where);
  tm_free(e->table_q);
  tm_free(e->new_q);
  tm_free(e->provider);
  tm_free(e->jsonb);
  if (e->base.vt) tm_engine__dispose_base(&e->base);
  tm_free(e);
}

static void pg_close(tm_engine *base) {
  pg_engine *e = pg_of(base);
  /* The provider's release frees the engine once no query uses it. */
  if (e->provider) tm_db__provider_remove(base->db, e->provider);
  else pg_free(e);
}

static bool same_columns(const tm_schema *a, const tm_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (size_t i = 0; i < a->n_cols; i++)
    if (strcmp(a->cols[i].name, b->cols[i].name) != 0 ||
        !tm_type_equal(&a->cols[i].type, &b->cols[i].type))
      return false;
  return true;
}

/*
 * Nested columns (LIST, STRUCT, MAP) are JSON text in the engine's schema, as
 * in the sqlite engine (tm_engine_txn_write converts the batches), and jsonb
 * columns in PostgreSQL. *out (owned by the caller): one flag per column of s.
 */
static int nested_flags(const tm_schema *s, bool **out, tm_error *err) {
  bool *f = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *f);
  if (!f) return tm_error_nomem(err);
  for (size_t i = 0; i < s->n_cols; i++) f[i] = tm_type_is_nested(&s->cols[i].type);
  *out = f;
  return TM_OK;
}

/* The columns of s that are jsonb in the stored table (its catalog, not the config: the truth). */
static int stored_jsonb(pg_engine *e, PGconn *c, const tm_schema *s, bool **out, tm_error *err) {
  PGresult *r = NULL;
  const char *vals[1] = {e->table_q};
  TM_TRY(query_text(e, c,
                    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND "
                    "attnum > 0 AND NOT attisdropped AND atttypid = 'jsonb'::regtype",
                    1, vals, false, &r, "cannot read the table's columns", err));
  bool *f = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *f);
  for (int i = 0; f && i < PQntuples(r); i++) {
    int col = tm_schema_find(s, PQgetvalue(r, i, 0));
    if (col >= 0) f[col] = true;
  }
  PQclear(r);
  if (!f) return tm_error_nomem(err);
  *out = f;
  return TM_OK;
}

static bool same_flags(const bool *a, const bool *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static int register_provider(pg_engine *e, tm_error *err);

static int pg_open(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
                   tm_error *err) {
  int rc = TM_OK;
  tm_schema stored, as_json;
  tm_schema_init(&stored);
  tm_schema_init(&as_json);
  PGresult *meta = NULL;
  bool *want_jsonb = NULL, *have_jsonb = NULL;
  tm_buf fp = TM_BUF_INIT(1 << 20);
  TM_TRY(tm_engine_pg_params_check(opts->params, err));
  pg_engine *e = tm_calloc(1, sizeof *e);
  if (!e) return tm_error_nomem(err);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  e->shares = (tm_engine_shares){.mu = &e->mu, .begin = share_begin, .end = share_end, .backend = e};
  tm_kv_init(&e->params);
  if (schema) {
    TM_CHECK(nested_flags(schema, &want_jsonb, err));
    TM_CHECK(tm_schema_copy(&as_json, schema, err));
    tm_schema_nested_as_json(&as_json);
    schema = &as_json;
  }
  TM_CHECK(tm_kv_copy(&e->params, opts->params, err));
  const char *pool = tm_kv_get(&e->params, "connection_pool_size");
  e->pool_max = pool ? (int)num(pool) : POOL_DEFAULT;
  e->pool = tm_calloc((size_t)e->pool_max, sizeof *e->pool);
  e->where = describe_where(&e->params);
  snprintf(e->hash, sizeof e->hash, "%016llx", (unsigned long long)fnv64(opts->dataset));
  char new_name[32];
  snprintf(new_name, sizeof new_name, "tm_new_%s", e->hash);
  tm_buf q = TM_BUF_INIT(1 << 16);
  rc = quote(&q, opts->dataset, err);
  e->table_q = rc == TM_OK ? tm_strdup(tm_buf_cstr(&q)) : NULL;
  tm_buf_clear(&q);
  if (rc == TM_OK) rc = quote(&q, new_name, err);
  e->new_q = rc == TM_OK ? tm_strdup(tm_buf_cstr(&q)) : NULL;
  tm_buf_dispose(&q);
  if (rc < 0) goto done;
  if (!e->pool || !e->where || !e->table_q || !e->new_q) {
    rc = tm_error_nomem(err);
    goto done;
  }
  TM_CHECK(connect_with(&e->params, e->where, &e->wconn, err));
  PGconn *c = e->wconn;
  /* One tidemark process at a time creates the shared tables and this dataset's table. */
  TM_CHECK(exec_sql(e, c, "BEGIN", "begin", err));
  char lock_sql[96];
  snprintf(lock_sql, sizeof lock_sql, "SELECT pg_advisory_xact_lock(%lld)", (long long)DDL_LOCK_KEY);
  TM_CHECK(exec_sql(e, c, lock_sql, "cannot lock", err));
  if (schema) {
    TM_CHECK(exec_sql(e, c,
                      "CREATE TABLE IF NOT EXISTS " META_TABLE " (dataset text PRIMARY KEY, "
                      "schema text NOT NULL, options text NOT NULL, row_count bigint NOT NULL)",
                      "cannot create " META_TABLE, err));
    TM_CHECK(exec_sql(e, c,
                      "CREATE TABLE IF NOT EXISTS " STATE_TABLE " (dataset text NOT NULL, "
                      "key text NOT NULL, value text NOT NULL, PRIMARY KEY (dataset, key))",
                      "cannot create " STATE_TABLE, err));
  }
  const char *vals[2] = {META_TABLE, NULL};
  TM_CHECK(query_text(e, c, "SELECT to_regclass($1) IS NOT NULL", 1, vals, false, &meta,
                      "cannot look up " META_TABLE, err));
  bool have_meta = PQntuples(meta) == 1 && PQgetvalue(meta, 0, 0)[0] == 't';
  PQclear(meta);
  meta = NULL;
  bool exists = false;
  if (have_meta) {
    vals[0] = opts->dataset;
    TM_CHECK(query_text(e, c, "SELECT schema, options FROM " META_TABLE " WHERE dataset = $1", 1,
                        vals, false, &meta, "cannot read " META_TABLE, err));
    exists = PQntuples(meta) == 1;
  }
  if (!exists && !schema) {
    rc = tm_error_set(err, TM_ENOTFOUND, "dataset '%s' (%s): no acceleration stored",
                      opts->dataset, e->where);
    goto done;
  }
  if (!exists) {
    /* Someone's table of that name, not an acceleration: never ours to fill or drop. */
    PGresult *r = NULL;
    vals[0] = e->table_q;
    TM_CHECK(query_text(e, c, "SELECT to_regclass($1) IS NOT NULL", 1, vals, false, &r,
                        "cannot look up the table", err));
    bool taken = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (taken) {
      rc = tm_error_set(err, TM_EINVALID,
                        "dataset '%s' (%s): a table %s exists that is not a tidemark acceleration: "
                        "tidemark leaves it alone (rename the dataset or use another pg_db)",
                        opts->dataset, e->where, e->table_q);
      goto done;
    }
  }
  if (exists) {
    const char *text = PQgetvalue(meta, 0, 0);
    TM_CHECK(tm_engine__schema_decode(&stored, text, strlen(text), err));
    TM_CHECK(stored_jsonb(e, c, &stored, &have_jsonb, err));
    if (schema && (opts->replace || !same_columns(schema, &stored) ||
                   !same_flags(want_jsonb, have_jsonb, stored.n_cols)))
      e->pending = true;
  }
  if (exists && !e->pending) {
    e->jsonb = have_jsonb;
    have_jsonb = NULL;
  } else {
    e->jsonb = want_jsonb;
    want_jsonb = NULL;
  }
  TM_CHECK(tm_engine__init_base(&e->base, &k_vtable, exists && !e->pending ? &stored : schema,
                                opts, err));
  e->base.json_cols = e->jsonb;
  if (exists && !e->pending) {
    TM_CHECK(tm_engine__options_fingerprint(&e->base, &fp, err));
    if (strcmp(tm_buf_cstr(&fp), PQgetvalue(meta, 0, 1)) != 0) e->pending = true;
  }
  if (!exists) {
    char pk_name[32];
    snprintf(pk_name, sizeof pk_name, "tm_pk_%s", e->hash);
    TM_CHECK(create_table(e, c, e->table_q, pk_name, false, err));
    TM_CHECK(create_indexes(e, c, err));
    tm_buf text = TM_BUF_INIT(1 << 24);
    rc = tm_engine__schema_encode(&e->base.schema, &text, err);
    tm_buf_clear(&fp);
    if (rc == TM_OK) rc = tm_engine__options_fingerprint(&e->base, &fp, err);
    const char *ins[3] = {opts->dataset, tm_buf_cstr(&text), tm_buf_cstr(&fp)};
    if (rc == TM_OK)
      rc = query_text(e, c,
                      "INSERT INTO " META_TABLE " (dataset, schema, options, row_count) VALUES "
                      "($1, $2, $3, 0)",
                      3, ins, false, NULL, "cannot write " META_TABLE, err);
    tm_buf_dispose(&text);
    if (rc == TM_OK) {
      const char *del[1] = {opts->dataset};
      rc = query_text(e, c, "DELETE FROM " STATE_TABLE " WHERE dataset = $1", 1, del, false,
                      NULL, "cannot clear the state", err);
    }
    if (rc < 0) goto done;
  } else if (!e->pending) {
    TM_CHECK(create_indexes(e, c, err));
    TM_CHECK(drop_stale_indexes(e, c, err));
  }
  TM_CHECK(exec_sql(e, c, "COMMIT", "commit", err));
  TM_CHECK(register_provider(e, err));
  *out = &e->base;
  e = NULL;
done:
  PQclear(meta);
  tm_buf_dispose(&fp);
  tm_schema_dispose(&stored);
  tm_schema_dispose(&as_json);
  tm_free(want_jsonb);
  tm_free(have_jsonb);
  if (e) {
    rollback_quiet(e->wconn);
    pg_free(e);
  }
  return rc;
}

static int pg_drop(const tm_engine_options *opts, tm_error *err) {
  TM_TRY(tm_engine_pg_params_check(opts->params, err));
  pg_engine tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.where = describe_where(opts->params);
  tmp.base.cfg.dataset = (char *)opts->dataset;
  if (!tmp.where) return tm_error_nomem(err);
  PGconn *c = NULL;
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = connect_with(opts->params, tmp.where, &c, err);
  char hash[17];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)fnv64(opts->dataset));
  if (rc == TM_OK) rc = exec_sql(&tmp, c, "BEGIN", "begin", err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "DROP TABLE IF EXISTS ", err);
  if (rc == TM_OK) rc = quote(&sql, opts->dataset, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, ", \"tm_new_%s\"", hash);
  if (rc == TM_OK) rc = exec_sql(&tmp, c, tm_buf_cstr(&sql), "cannot drop the table", err);
  const char *vals[2] = {META_TABLE, opts->dataset};
  PGresult *r = NULL;
  if (rc == TM_OK)
    rc = query_text(&tmp, c, "SELECT to_regclass($1) IS NOT NULL", 1, vals, false, &r,
                    "cannot look up " META_TABLE, err);
  bool have_meta = rc == TM_OK && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
  PQclear(r);
  if (rc == TM_OK && have_meta)
    rc = query_text(&tmp, c, "DELETE FROM " META_TABLE " WHERE dataset = $1", 1, vals + 1, false,
                    NULL, "cannot clear " META_TABLE, err);
  if (rc == TM_OK && have_meta)
    rc = query_text(&tmp, c, "DELETE FROM " STATE_TABLE " WHERE dataset = $1", 1, vals + 1, false,
                    NULL, "cannot clear " STATE_TABLE, err);
  if (rc == TM_OK) rc = exec_sql(&tmp, c, "COMMIT", "commit", err);
  if (c) PQfinish(c);
  tm_buf_dispose(&sql);
  tm_free(tmp.where);
  return rc;
}

/* ---- write transactions ------------------------------------------------------------- */

static int copy_send(pg_engine *e, pg_txn *t, tm_error *err) {
  if (t->copy.len == 0) return TM_OK;
  if (PQputCopyData(e->wconn, t->copy.ptr, (int)t->copy.len) != 1)
    return pg_fail(err, e, e->wconn, NULL, "cannot send rows");
  tm_buf_clear(&t->copy);
  return TM_OK;
}

static int copy_start(pg_engine *e, pg_txn *t, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = tm_buf_printf(&sql, err, "COPY %s (", t->keyed ? STAGE_TABLE : t->target_q);
  if (rc == TM_OK) rc = col_list(&sql, &e->base.schema, NULL, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, ") FROM STDIN (FORMAT binary)", err);
  PGresult *r = rc == TM_OK ? PQexec(e->wconn, tm_buf_cstr(&sql)) : NULL;
  tm_buf_dispose(&sql);
  TM_TRY(rc);
  if (!r || PQresultStatus(r) != PGRES_COPY_IN) return pg_fail(err, e, e->wconn, r, "cannot start COPY");
  PQclear(r);
  t->copying = true;
  /* The binary COPY header: signature, flags, header extension length. */
  static const char header[19] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', '\377', '\r', '\n', '\0',
                                  0,   0,   0,   0,   0,   0,   0,    0};
  return tm_buf_append(&t->copy, header, sizeof header, err);
}

/* Ends an open COPY; *rows: the rows it stored. */
static int copy_finish(pg_engine *e, pg_txn *t, int64_t *rows, tm_error *err) {
  *rows = 0;
  if (!t->copying) return TM_OK;
  t->copying = false;
  static const char trailer[2] = {'\377', '\377'};
  int rc = tm_buf_append(&t->copy, trailer, 2, err);
  if (rc == TM_OK) rc = copy_send(e, t, err);
  if (PQputCopyEnd(e->wconn, rc == TM_OK ? NULL : "tidemark stopped the load") != 1 && rc == TM_OK)
    rc = pg_fail(err, e, e->wconn, NULL, "cannot end COPY");
  PGresult *r;
  while ((r = PQgetResult(e->wconn)) != NULL) {
    if (rc == TM_OK && PQresultStatus(r) != PGRES_COMMAND_OK) {
      rc = pg_fail(err, e, e->wconn, r, "COPY failed");
      continue;
    }
    if (rc == TM_OK) *rows += num(PQcmdTuples(r));
    PQclear(r);
  }
  tm_buf_clear(&t->copy);
  return rc;
}

/* Moves the staged rows of a keyed table into the target by the conflict rule (A8). */
static int merge_stage(pg_engine *e, pg_txn *t, int64_t staged, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  const tm_engine_config *c = &e->base.cfg;
  bool upsert = c->on_conflict == TM_ON_CONFLICT_UPSERT && c->n_pk < s->n_cols;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = TM_OK;
  if (t->pk_index == 0 && t->merged > 0) {
    /* A second merge into the new table: it needs its key's index now. */
    rc = tm_buf_printf(&sql, err, "CREATE UNIQUE INDEX \"tm_pk_%s_new\" ON %s (", e->hash,
                       t->target_q);
    if (rc == TM_OK) rc = pk_list(&sql, e, err);
    if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
    if (rc == TM_OK) rc = exec_sql(e, e->wconn, tm_buf_cstr(&sql), "cannot index the key", err);
    tm_buf_clear(&sql);
    if (rc < 0) {
      tm_buf_dispose(&sql);
      return rc;
    }
    t->pk_index = 1;
  }
  /* An empty new table without its index: the distinct rows go in as they are (the
   * index is built once, at the commit, which is faster than row by row). */
  bool plain = t->pk_index == 0;
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "WITH src AS (SELECT DISTINCT ON (", err);
  if (rc == TM_OK) rc = pk_list(&sql, e, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, ") ", err);
  if (rc == TM_OK) rc = col_list(&sql, s, NULL, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " FROM " STAGE_TABLE " ORDER BY ", err);
  if (rc == TM_OK) rc = pk_list(&sql, e, err);
  /* drop: the first arrival of a key; upsert: the last. */
  if (rc == TM_OK)
    rc = tm_buf_printf(&sql, err, ", " SEQ_COLUMN " %s)%s INSERT INTO %s AS t (",
                       c->on_conflict == TM_ON_CONFLICT_UPSERT ? "DESC" : "ASC",
                       plain ? "" : ", m AS (", t->target_q);
  if (rc == TM_OK) rc = col_list(&sql, s, NULL, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, ") SELECT ", err);
  if (rc == TM_OK) rc = col_list(&sql, s, NULL, err);
  if (rc == TM_OK && plain) rc = tm_buf_puts(&sql, " FROM src", err);
  if (rc == TM_OK && !plain) rc = tm_buf_puts(&sql, " FROM src ON CONFLICT (", err);
  if (rc == TM_OK && !plain) rc = pk_list(&sql, e, err);
  if (rc == TM_OK && !plain) rc = tm_buf_puts(&sql, upsert ? ") DO UPDATE SET " : ") DO NOTHING", err);
  if (rc == TM_OK && upsert && !plain) {
    bool first = true;
    for (size_t i = 0; rc == TM_OK && i < s->n_cols; i++) {
      bool is_pk = false;
      for (size_t k = 0; k < c->n_pk; k++) is_pk |= c->pk[k] == i;
      if (is_pk) continue;
      if (!first) rc = tm_buf_puts(&sql, ", ", err);
      first = false;
      if (rc == TM_OK) rc = quote(&sql, s->cols[i].name, err);
      if (rc == TM_OK) rc = tm_buf_puts(&sql, " = excluded.", err);
      if (rc == TM_OK) rc = quote(&sql, s->cols[i].name, err);
    }
    /* An identical row is left alone (counted as unchanged). */
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " WHERE (", err);
    if (rc == TM_OK) rc = col_list(&sql, s, "t.", err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ") IS DISTINCT FROM (", err);
    if (rc == TM_OK) rc = col_list(&sql, s, "excluded.", err);
    if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
  }
  /* Inserted rows have no xmax; rows an upsert replaced carry this transaction's. */
  if (rc == TM_OK && !plain)
    rc = tm_buf_puts(&sql,
                     " RETURNING (t.xmax = 0) AS fresh) SELECT (SELECT count(*) FROM src), "
                     "count(*) FILTER (WHERE fresh), count(*) FILTER (WHERE NOT fresh) FROM m",
                     err);
  PGresult *r = NULL;
  if (rc == TM_OK)
    rc = query_text(e, e->wconn, tm_buf_cstr(&sql), 0, NULL, false, &r, "cannot merge the rows", err);
  tm_buf_dispose(&sql);
  TM_TRY(rc);
  int64_t fresh, updated = 0, distinct;
  if (plain) {
    fresh = distinct = num(PQcmdTuples(r));
  } else {
    distinct = num(PQgetvalue(r, 0, 0));
    fresh = num(PQgetvalue(r, 0, 1));
    updated = num(PQgetvalue(r, 0, 2));
  }
  PQclear(r);
  t->merged += fresh;
  t->inserted += fresh;
  t->updated += updated;
  /* Earlier arrivals of a key in this load lost to the one kept. */
  t->sup[TM_SUPERSEDED_ARRIVAL] += staged - distinct;
  if (upsert) {
    t->sup[TM_SUPERSEDED_ARRIVAL] += updated;
    t->sup[TM_SUPERSEDED_UNCHANGED] += distinct - fresh - updated;
  } else {
    t->sup[TM_SUPERSEDED_ARRIVAL] += distinct - fresh;
  }
  return exec_sql(e, e->wconn, "TRUNCATE " STAGE_TABLE, "cannot clear the staged rows", err);
}

/* Everything written so far reaches the target table. */
static int flush(pg_engine *e, pg_txn *t, tm_error *err) {
  if (!t->copying) return TM_OK;
  int64_t rows = 0;
  TM_TRY(copy_finish(e, t, &rows, err));
  if (!t->keyed) {
    t->inserted += rows;
    return TM_OK;
  }
  return merge_stage(e, t, rows, err);
}

static void txn_free(pg_txn *t) {
  tm_buf_dispose(&t->copy);
  tm_free(t);
}

static int pg_begin(tm_engine *base, tm_txn_kind kind, tm_engine_txn **out, tm_error *err) {
  pg_engine *e = pg_of(base);
  TM_TRY(tm_engine__writer_acquire(base, err));
  int rc = TM_OK;
  pg_txn *t = tm_calloc(1, sizeof *t);
  if (!t) {
    rc = tm_error_nomem(err);
    goto done;
  }
  t->base.engine = base;
  t->base.kind = kind;
  t->keyed = e->base.cfg.n_pk > 0;
  tm_buf_init(&t->copy, (size_t)1 << 31);
  TM_CHECK(writer_conn(e, err));
  rollback_quiet(e->wconn);
  TM_CHECK(exec_sql(e, e->wconn, "BEGIN", "begin", err));
  t->target_q = e->table_q;
  t->pk_index = 2;
  /* The meta row, locked for the transaction: one writer at a time, whoever it is. */
  const char *vals[1] = {e->base.cfg.dataset};
  PGresult *r = NULL;
  TM_CHECK(query_text(e, e->wconn,
                      "SELECT row_count FROM " META_TABLE " WHERE dataset = $1 FOR UPDATE", 1,
                      vals, false, &r, "cannot read " META_TABLE, err));
  if (PQntuples(r) != 1) {
    PQclear(r);
    rc = tm_error_set(err, TM_ENOTFOUND, "dataset '%s' (%s): the acceleration was dropped",
                      e->base.cfg.dataset, e->where);
    goto done;
  }
  t->count_before = num(PQgetvalue(r, 0, 0));
  PQclear(r);
  if (kind == TM_TXN_REPLACE_ALL || e->pending) {
    tm_buf sql = TM_BUF_INIT(4096);
    rc = tm_buf_printf(&sql, err, "DROP TABLE IF EXISTS %s", e->new_q);
    if (rc == TM_OK) rc = exec_sql(e, e->wconn, tm_buf_cstr(&sql), "cannot drop the new table", err);
    tm_buf_dispose(&sql);
    if (rc < 0) goto done;
    TM_CHECK(create_table(e, e->wconn, e->new_q, NULL, false, err));
    t->target_q = e->new_q;
    t->pk_index = 0;
    t->count_before = 0;
  }
  if (t->keyed) TM_CHECK(create_table(e, e->wconn, STAGE_TABLE, NULL, true, err));
  *out = &t->base;
  t = NULL;
done:
  if (t) {
    rollback_quiet(e->wconn);
    txn_free(t);
  }
  if (rc < 0) tm_engine__writer_release(base);
  return rc;
}

static int pg_write(tm_engine_txn *tb, const tm_batch *b, tm_error *err) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  size_t n = e->base.schema.n_cols;
  if (!t->copying) TM_TRY(copy_start(e, t, err));
  tm_colview *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  for (size_t c = 0; c < n; c++) cols[c] = tm_batch_col(b, c);
  int rc = TM_OK;
  for (int64_t row = 0; row < b->n_rows && rc == TM_OK; row++) {
    char fields[2] = {(char)(n >> 8), (char)n};
    rc = tm_buf_append(&t->copy, fields, 2, err);
    for (size_t c = 0; c < n && rc == TM_OK; c++) {
      tm_value v;
      tm_pgval pv;
      tm_colview_get(&cols[c], row, &v);
      rc = tm_pgval_from(&pv, &cols[c].type, &v, err);
      if (rc < 0) {
        tm_error_prefix(err, "dataset '%s', column '%s'", e->base.cfg.dataset,
                        e->base.schema.cols[c].name);
        break;
      }
      /* jsonb's binary form is a version byte (1) and the JSON text. */
      bool jsonb = e->jsonb[c] && pv.len >= 0;
      uint32_t len = (uint32_t)pv.len + (jsonb ? 1u : 0u);
      char lb[5] = {(char)(len >> 24), (char)(len >> 16), (char)(len >> 8), (char)len, 1};
      rc = tm_buf_append(&t->copy, lb, jsonb ? 5 : 4, err);
      if (rc == TM_OK && pv.len > 0) rc = tm_buf_append(&t->copy, pv.p, (size_t)pv.len, err);
    }
    if (rc == TM_OK && t->copy.len >= COPY_FLUSH_BYTES) rc = copy_send(e, t, err);
  }
  tm_free(cols);
  return rc;
}

/*
 * retention_sql on this engine: one DELETE in the refresh's transaction, its
 * condition evaluated by PostgreSQL (so written in PostgreSQL's dialect; the
 * table is aliased by the dataset's name, so `events.status` reads as it
 * would in DuckDB). The extended protocol runs one statement only: the
 * condition cannot end the DELETE and start another.
 */
/* Runs a retention DELETE (sql; one binary parameter pv of type pty, or
 * none) on the writer connection and counts the rows it removed. */
static int run_delete(pg_engine *e, pg_txn *t, const tm_buf *sql, const tm_type *pty,
                      const tm_pgval *pv, const char *what, int64_t *n_out, tm_error *err) {
  Oid oid = pty ? tm_pg_type_oid(pty) : 0;
  int fmt = 1;
  PGresult *r = PQexecParams(e->wconn, tm_buf_cstr(sql), pv ? 1 : 0, pv ? &oid : NULL,
                             pv ? &pv->p : NULL, pv ? &pv->len : NULL, pv ? &fmt : NULL, 0);
  if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) return pg_fail(err, e, e->wconn, r, what);
  *n_out = num(PQcmdTuples(r));
  PQclear(r);
  t->deleted += *n_out;
  return TM_OK;
}

static int pg_delete_where(tm_engine_txn *tb, const char *where_sql, int64_t *n_out,
                           tm_error *err) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  *n_out = 0;
  TM_TRY(flush(e, t, err));
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = tm_buf_printf(&sql, err, "DELETE FROM %s AS ", t->target_q);
  if (rc == TM_OK) rc = quote(&sql, e->base.cfg.dataset, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " WHERE (%s\n)", where_sql);
  if (rc == TM_OK)
    rc = run_delete(e, t, &sql, NULL, NULL, "retention_sql (run by PostgreSQL) failed", n_out, err);
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * Deletes by provenance (refresh_mode: changes) as indexed DELETEs in the
 * refresh's transaction: one per file, `_tm_seq = $1 AND _tm_file = $2`,
 * with `AND _tm_pos = ANY($3)` naming up to DELETE_IN_MAX of its positions
 * (tm_pv_<hash>, create_indexes). Staged rows of a keyed table are merged
 * first, so the deletes see every row written before them.
 */
static int pg_delete_provenance(tm_engine_txn *tb, const tm_batch *keys, int64_t *n_out,
                                tm_error *err) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  bool by_pos = keys->schema.n_cols == 3;
  tm_colview seq = tm_batch_col(keys, 0), file = tm_batch_col(keys, 1);
  tm_colview pos = by_pos ? tm_batch_col(keys, 2) : seq;
  *n_out = 0;
  TM_TRY(flush(e, t, err));
  tm_buf sql = TM_BUF_INIT(1 << 16), arr = TM_BUF_INIT(1 << 20);
  int rc = tm_buf_printf(&sql, err,
                         "DELETE FROM %s WHERE " TM_PROV_SEQ " = $1::int8 AND " TM_PROV_FILE
                         " = $2::int8%s",
                         t->target_q, by_pos ? " AND " TM_PROV_POS " = ANY($3::int8[])" : "");
  for (int64_t i = 0; i < keys->n_rows && rc == TM_OK;) {
    int64_t s = tm_colview_int(&seq, i), f = tm_colview_int(&file, i);
    char sv[24], fv[24];
    snprintf(sv, sizeof sv, "%lld", (long long)s);
    snprintf(fv, sizeof fv, "%lld", (long long)f);
    int64_t j = i + 1;
    tm_buf_clear(&arr);
    if (by_pos) {
      rc = tm_buf_printf(&arr, err, "{%lld", (long long)tm_colview_int(&pos, i));
      while (rc == TM_OK && j < keys->n_rows && j - i < DELETE_IN_MAX &&
             tm_colview_int(&seq, j) == s && tm_colview_int(&file, j) == f)
        rc = tm_buf_printf(&arr, err, ",%lld", (long long)tm_colview_int(&pos, j++));
      if (rc == TM_OK) rc = tm_buf_putc(&arr, '}', err);
    }
    const char *vals[3] = {sv, fv, tm_buf_cstr(&arr)};
    PGresult *r = NULL;
    if (rc == TM_OK)
      rc = query_text(e, e->wconn, tm_buf_cstr(&sql), by_pos ? 3 : 2, vals, false, &r,
                      "delete by provenance failed", err);
    if (rc == TM_OK) {
      *n_out += num(PQcmdTuples(r));
      PQclear(r);
    }
    i = j;
  }
  tm_buf_dispose(&sql);
  tm_buf_dispose(&arr);
  t->deleted += *n_out;
  return rc;
}

static int64_t ceil_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) q++;
  return q;
}

static int pg_delete_before(tm_engine_txn *tb, int64_t sec, int32_t nsec, int64_t *n_out,
                            tm_error *err) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  const tm_column *col = &e->base.schema.cols[e->base.cfg.time_col];
  const tm_type *ty = &col->type;
  /* The first value that is not older than the instant, in the column's stored form. */
  tm_value bound;
  memset(&bound, 0, sizeof bound);
  bound.type = ty->id;
  tm_type pty = *ty;
  int64_t ns;
  if (__builtin_mul_overflow(sec, (int64_t)1000000000, &ns) || __builtin_add_overflow(ns, nsec, &ns))
    ns = sec < 0 ? INT64_MIN : INT64_MAX;
  switch (ty->id) {
    case TM_TYPE_TIMESTAMP:
      if (ty->unit == TM_UNIT_NANO) bound.v.i = ns;
      else {
        /* Compared in microseconds: the stored form of s, ms and us alike. */
        pty.unit = TM_UNIT_MICRO;
        bound.v.i = ceil_div(sec, 1) * 1000000 + ceil_div(nsec, 1000);
      }
      break;
    case TM_TYPE_DATE32: bound.v.i = ceil_div(sec, 86400) + (sec % 86400 == 0 && nsec > 0); break;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: {
      tm_time_format f = e->base.cfg.time_format;
      pty = tm_type_of(TM_TYPE_INT64);
      bound.type = TM_TYPE_INT64;
      if (f == TM_TIME_FORMAT_UNIX_MILLIS) bound.v.i = sec * 1000 + ceil_div(nsec, 1000000);
      else if (f == TM_TIME_FORMAT_UNIX_NANOS) bound.v.i = ns;
      else bound.v.i = sec + (nsec > 0);
      break;
    }
    default:
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "dataset '%s': engine postgres applies retention_period to a timestamp, "
                          "date or signed integer time column, not to '%s'",
                          e->base.cfg.dataset, col->name);
  }
  TM_TRY(flush(e, t, err));
  tm_pgval pv;
  TM_TRY(tm_pgval_from(&pv, &pty, &bound, err));
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_buf_printf(&sql, err, "DELETE FROM %s WHERE ", t->target_q);
  if (rc == TM_OK) rc = quote(&sql, col->name, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " < $1", err);
  if (rc == TM_OK)
    rc = run_delete(e, t, &sql, &pty, &pv, "retention delete failed", n_out, err);
  tm_buf_dispose(&sql);
  return rc;
}

static int write_state(pg_engine *e, const tm_kv *state, tm_error *err) {
  const char *vals[3] = {e->base.cfg.dataset, NULL, NULL};
  TM_TRY(query_text(e, e->wconn, "DELETE FROM " STATE_TABLE " WHERE dataset = $1", 1, vals, false,
                    NULL, "cannot write the state", err));
  for (size_t i = 0; i < state->len; i++) {
    vals[1] = state->items[i].key;
    vals[2] = state->items[i].value;
    TM_TRY(query_text(e, e->wconn,
                      "INSERT INTO " STATE_TABLE " (dataset, key, value) VALUES ($1, $2, $3)", 3,
                      vals, false, NULL, "cannot write the state", err));
  }
  return TM_OK;
}

static int pg_commit(tm_engine_txn *tb, const tm_kv *state, tm_engine_commit_info *info,
                     tm_error *err) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  tm_buf sql = TM_BUF_INIT(1 << 20);
  tm_buf text = TM_BUF_INIT(1 << 24);
  int rc = flush(e, t, err);
  int64_t after = t->count_before + t->inserted - t->deleted;
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)after);
  /* A replacement starts without the state of what it replaces (B9). */
  tm_kv none;
  tm_kv_init(&none);
  if (rc == TM_OK && (state || e->pending)) rc = write_state(e, state ? state : &none, err);
  if (rc == TM_OK && (tb->kind == TM_TXN_REPLACE_ALL || e->pending)) {
    rc = tm_buf_printf(&sql, err,
                       "DROP TABLE IF EXISTS %s; ALTER TABLE %s RENAME TO %s; ALTER INDEX IF "
                       "EXISTS \"tm_pk_%s_new\" RENAME TO \"tm_pk_%s\"",
                       e->table_q, e->new_q, e->table_q, e->hash, e->hash);
    if (rc == TM_OK) rc = exec_sql(e, e->wconn, tm_buf_cstr(&sql), "cannot swap the new table in", err);
    if (rc == TM_OK && t->keyed && t->pk_index == 0) {
      /* Built once over the loaded rows; a duplicate key cannot be there (DISTINCT ON). */
      tm_buf_clear(&sql);
      rc = tm_buf_printf(&sql, err, "CREATE UNIQUE INDEX \"tm_pk_%s\" ON %s (", e->hash, e->table_q);
      if (rc == TM_OK) rc = pk_list(&sql, e, err);
      if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
      if (rc == TM_OK) rc = exec_sql(e, e->wconn, tm_buf_cstr(&sql), "cannot index the key", err);
    }
    if (rc == TM_OK) rc = create_indexes(e, e->wconn, err);
  }
  if (rc == TM_OK && e->pending) {
    rc = tm_engine__schema_encode(&e->base.schema, &text, err);
    tm_buf_clear(&sql);
    if (rc == TM_OK) rc = tm_engine__options_fingerprint(&e->base, &sql, err);
    const char *vals[3] = {e->base.cfg.dataset, tm_buf_cstr(&text), tm_buf_cstr(&sql)};
    if (rc == TM_OK)
      rc = query_text(e, e->wconn,
                      "UPDATE " META_TABLE " SET schema = $2, options = $3 WHERE dataset = $1",
                      3, vals, false, NULL, "cannot write " META_TABLE, err);
  }
  const char *vals[2] = {e->base.cfg.dataset, num};
  if (rc == TM_OK)
    rc = query_text(e, e->wconn, "UPDATE " META_TABLE " SET row_count = $2 WHERE dataset = $1", 2,
                    vals, false, NULL, "cannot write " META_TABLE, err);
  if (rc == TM_OK) rc = exec_sql(e, e->wconn, "COMMIT", "commit failed", err);
  if (rc == TM_OK) {
    e->pending = false;
    info->rows_written = t->inserted + t->updated;
    info->rows_deleted = t->deleted;
    memcpy(info->rows_superseded, t->sup, sizeof t->sup);
    info->rows_after = after;
  } else {
    rollback_quiet(e->wconn);
  }
  tm_buf_dispose(&sql);
  tm_buf_dispose(&text);
  txn_free(t);
  tm_engine__writer_release(&e->base);
  return rc;
}

static void pg_abort(tm_engine_txn *tb) {
  pg_txn *t = (pg_txn *)tb;
  pg_engine *e = pg_of(tb->engine);
  if (t->copying && e->wconn && PQstatus(e->wconn) == CONNECTION_OK) {
    PQputCopyEnd(e->wconn, "tidemark aborted the refresh");
    PGresult *r;
    while ((r = PQgetResult(e->wconn)) != NULL) PQclear(r);
  }
  rollback_quiet(e->wconn);
  txn_free(t);
  tm_engine__writer_release(&e->base);
}

/* ---- reads --------------------------------------------------------------------------- */

static int pg_read_state(tm_engine *base, tm_kv *out, tm_error *err) {
  pg_engine *e = pg_of(base);
  if (e->pending) return TM_OK;
  PGconn *c;
  TM_TRY(pool_take(e, &c, err));
  const char *vals[1] = {e->base.cfg.dataset};
  PGresult *r = NULL;
  int rc = query_text(e, c, "SELECT key, value FROM " STATE_TABLE " WHERE dataset = $1 ORDER BY key",
                      1, vals, false, &r, "cannot read the state", err);
  for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
    rc = tm_kv_set(out, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), err);
  PQclear(r);
  pool_put(e, c);
  return rc;
}

static int pg_row_count(tm_engine *base, int64_t *out, tm_error *err) {
  pg_engine *e = pg_of(base);
  *out = 0;
  if (e->pending) return TM_OK;
  PGconn *c;
  TM_TRY(pool_take(e, &c, err));
  const char *vals[1] = {e->base.cfg.dataset};
  PGresult *r = NULL;
  int rc = query_text(e, c, "SELECT row_count FROM " META_TABLE " WHERE dataset = $1", 1, vals,
                      false, &r, "cannot read the row count", err);
  if (rc == TM_OK && PQntuples(r) == 1) *out = num(PQgetvalue(r, 0, 0));
  PQclear(r);
  pool_put(e, c);
  return rc;
}

/* The stored row count against count(*): a table changed behind tidemark's back is damage. */
static int pg_verify(tm_engine *base, tm_error *err) {
  pg_engine *e = pg_of(base);
  if (e->pending) return TM_OK;
  PGconn *c;
  TM_TRY(read_begin(e, &c, err));
  tm_buf sql = TM_BUF_INIT(1 << 16);
  PGresult *r = NULL;
  int rc = tm_buf_printf(&sql, err,
                         "SELECT (SELECT count(*) FROM %s), (SELECT row_count FROM " META_TABLE
                         " WHERE dataset = $1)",
                         e->table_q);
  const char *vals[1] = {e->base.cfg.dataset};
  if (rc == TM_OK)
    rc = query_text(e, c, tm_buf_cstr(&sql), 1, vals, false, &r, "cannot count the rows", err);
  if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)) != 0)
    rc = tm_error_set(err, TM_ECORRUPT,
                      "dataset '%s' (%s): the table holds %s rows, tidemark committed %s: it was "
                      "changed outside tidemark",
                      e->base.cfg.dataset, e->where, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
  PQclear(r);
  tm_buf_dispose(&sql);
  read_end(e, c);
  return rc;
}

static int pg_bounds(tm_engine *base, size_t col, tm_engine_bounds *out, tm_error *err) {
  pg_engine *e = pg_of(base);
  if (e->pending) return TM_OK;
  const tm_column *cd = &e->base.schema.cols[col];
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_buf_puts(&sql, "SELECT min(", err);
  if (rc == TM_OK) rc = quote(&sql, cd->name, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "), max(", err);
  if (rc == TM_OK) rc = quote(&sql, cd->name, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, ") FROM %s", e->table_q);
  PGconn *c = NULL;
  PGresult *r = NULL;
  if (rc == TM_OK) rc = pool_take(e, &c, err);
  if (rc == TM_OK) rc = query_text(e, c, tm_buf_cstr(&sql), 0, NULL, true, &r, "cannot read bounds", err);
  bool found = false;
  for (int k = 0; rc == TM_OK && k < 2; k++) {
    tm_value *v = k ? &out->max : &out->min;
    bool null = PQgetisnull(r, 0, k);
    rc = tm_pg_to_value(&cd->type, PQgetvalue(r, 0, k), null ? -1 : PQgetlength(r, 0, k), v, err);
    if (rc == TM_OK && !null && (cd->type.id == TM_TYPE_UTF8 || cd->type.id == TM_TYPE_BINARY ||
                                 cd->type.id == TM_TYPE_FIXED_BINARY)) {
      out->owned[k] = tm_malloc(v->v.s.len + 1);
      if (!out->owned[k]) rc = tm_error_nomem(err);
      else {
        memcpy(out->owned[k], v->v.s.ptr, v->v.s.len);
        v->v.s.ptr = out->owned[k];
      }
    }
    found = !null;
  }
  PQclear(r);
  if (c) pool_put(e, c);
  tm_buf_dispose(&sql);
  if (rc < 0) tm_engine_bounds_dispose(out);
  else out->found = found;
  return rc;
}

static int pg_size_bytes(tm_engine *base, uint64_t *out, tm_error *err) {
  pg_engine *e = pg_of(base);
  *out = 0;
  PGconn *c;
  TM_TRY(pool_take(e, &c, err));
  const char *vals[1] = {e->table_q};
  PGresult *r = NULL;
  int rc = query_text(e, c, "SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)", 1, vals,
                      false, &r, "cannot read the table's size", err);
  if (rc == TM_OK) *out = (uint64_t)num(PQgetvalue(r, 0, 0));
  PQclear(r);
  pool_put(e, c);
  return rc;
}

/* ---- scans ----------------------------------------------------------------------------- */

static void scan_free(pg_scan *sc) {
  pg_engine *e = sc->base.engine ? pg_of(sc->base.engine) : NULL;
  if (sc->conn && sc->cursor_open && !sc->own_conn) {
    char sql[48];
    snprintf(sql, sizeof sql, "CLOSE %s", sc->cursor);
    PQclear(PQexec(sc->conn, sql));
  }
  if (sc->conn && sc->own_conn && e) read_end(e, sc->conn);
  tm_schema_dispose(&sc->out_schema);
  tm_free(sc->cols);
  tm_predicate_dispose(&sc->residual);
  tm_engine_release(sc->base.engine);
  tm_free(sc);
}

static int add_scan_col(pg_scan *sc, const tm_schema *s, size_t idx, tm_error *err) {
  for (size_t i = 0; i < sc->n_cols; i++)
    if (sc->cols[i] == idx) return TM_OK;
  sc->cols[sc->n_cols++] = idx;
  const tm_column *c = &s->cols[idx];
  return tm_schema_add(&sc->out_schema, c->name, c->type, c->nullable, c->field_id, err);
}

/* The parameters of the pushed terms: binary values, with their types. */
typedef struct pg_params {
  int n;
  Oid *types;
  const char **vals;
  int *lens;
  int *fmts;
  tm_pgval *pv;
} pg_params;

static int add_term(tm_buf *sql, const tm_pred_term *term, pg_params *pp, tm_error *err) {
  static const char *const ops[] = {"=", "<", "<=", ">", ">="};
  TM_TRY(quote(sql, term->column, err));
  if (term->op == TM_PRED_IS_NULL) return tm_buf_puts(sql, " IS NULL", err);
  if (term->op == TM_PRED_IS_NOT_NULL) return tm_buf_puts(sql, " IS NOT NULL", err);
  size_t nv = term->op == TM_PRED_IN ? term->n_in : 1;
  const tm_value *vals = term->op == TM_PRED_IN ? term->in_values : &term->value;
  if (term->op == TM_PRED_IN) TM_TRY(tm_buf_puts(sql, " IN (", err));
  else TM_TRY(tm_buf_printf(sql, err, " %s ", ops[term->op]));
  if (nv == 0) TM_TRY(tm_buf_puts(sql, "NULL", err));
  for (size_t k = 0; k < nv; k++) {
    int i = pp->n++;
    TM_TRY(tm_pgval_from(&pp->pv[i], &term->type, &vals[k], err));
    pp->types[i] = tm_pg_type_oid(&term->type);
    pp->vals[i] = pp->pv[i].len < 0 ? NULL : pp->pv[i].p;
    pp->lens[i] = pp->pv[i].len;
    pp->fmts[i] = 1;
    TM_TRY(tm_buf_printf(sql, err, "%s$%d", k ? ", " : "", i + 1));
  }
  return term->op == TM_PRED_IN ? tm_buf_putc(sql, ')', err) : TM_OK;
}

/*
 * Whether PostgreSQL evaluates term as tidemark does: not on floats (NaN
 * order) nor on jsonb columns (JSON text in tidemark, jsonb values there).
 */
static bool pushable(const pg_engine *e, const tm_pred_term *term) {
  int col = tm_schema_find(&e->base.schema, term->column);
  if (col >= 0 && e->jsonb[col]) return false;
  return tm_pg_order_exact(&term->type);
}

/*
 * A scan on conn (NULL: a pooled connection in a read transaction of its
 * own): a cursor over SELECT <columns> FROM table WHERE <pushed terms>.
 */
static int scan_open(tm_engine *base, PGconn *conn, const size_t *cols, size_t n_cols,
                     const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  pg_engine *e = pg_of(base);
  const tm_schema *s = &e->base.schema;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  pg_params pp;
  memset(&pp, 0, sizeof pp);
  int rc = TM_OK;
  pg_scan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  sc->base.engine = tm_engine_retain(base);
  tm_schema_init(&sc->out_schema);
  tm_predicate_init(&sc->residual);
  size_t n_terms = pred ? pred->n_terms : 0;
  size_t n_vals = 0;
  for (size_t i = 0; i < n_terms; i++)
    n_vals += pred->terms[i].op == TM_PRED_IN ? pred->terms[i].n_in : 1;
  sc->cols = tm_calloc(s->n_cols + n_cols + n_terms + 1, sizeof *sc->cols);
  pp.types = tm_calloc(n_vals + 1, sizeof *pp.types);
  pp.vals = tm_calloc(n_vals + 1, sizeof *pp.vals);
  pp.lens = tm_calloc(n_vals + 1, sizeof *pp.lens);
  pp.fmts = tm_calloc(n_vals + 1, sizeof *pp.fmts);
  pp.pv = tm_calloc(n_vals + 1, sizeof *pp.pv);
  if (!sc->cols || !pp.types || !pp.vals || !pp.lens || !pp.fmts || !pp.pv) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (!cols)
    for (size_t i = 0; i < s->n_cols; i++) TM_CHECK(add_scan_col(sc, s, i, err));
  for (size_t i = 0; cols && i < n_cols; i++) TM_CHECK(add_scan_col(sc, s, cols[i], err));
  sc->n_proj = sc->n_cols;
  if (e->pending) {
    sc->done = true; /* a replacement not yet committed: nothing stored */
    *out = &sc->base;
    sc = NULL;
    goto done;
  }
  for (size_t i = 0; i < n_terms; i++) {
    const tm_pred_term *term = &pred->terms[i];
    if (pushable(e, term)) continue;
    TM_CHECK(add_scan_col(sc, s, (size_t)tm_schema_find(s, term->column), err));
    TM_CHECK(tm_predicate_add_term(&sc->residual, term, err));
  }
  snprintf(sc->cursor, sizeof sc->cursor, "tm_c%llu",
           (unsigned long long)__atomic_add_fetch(&e->cursor_seq, 1, __ATOMIC_RELAXED));
  TM_CHECK(tm_buf_printf(&sql, err, "DECLARE %s NO SCROLL CURSOR FOR SELECT ", sc->cursor));
  for (size_t i = 0; i < sc->n_cols; i++) {
    if (i) TM_CHECK(tm_buf_puts(&sql, ", ", err));
    TM_CHECK(quote(&sql, s->cols[sc->cols[i]].name, err));
    if (e->jsonb[sc->cols[i]]) TM_CHECK(tm_buf_puts(&sql, "::text", err));
  }
  if (sc->n_cols == 0) TM_CHECK(tm_buf_puts(&sql, "1", err));
  TM_CHECK(tm_buf_printf(&sql, err, " FROM %s", e->table_q));
  bool first = true;
  for (size_t i = 0; i < n_terms; i++) {
    const tm_pred_term *term = &pred->terms[i];
    if (!pushable(e, term)) continue;
    TM_CHECK(tm_buf_puts(&sql, first ? " WHERE " : " AND ", err));
    first = false;
    TM_CHECK(add_term(&sql, term, &pp, err));
  }
  if (conn) {
    sc->conn = conn;
  } else {
    TM_CHECK(read_begin(e, &sc->conn, err));
    sc->own_conn = true;
  }
  PGresult *r = PQexecParams(sc->conn, tm_buf_cstr(&sql), pp.n, pp.types, pp.vals, pp.lens,
                             pp.fmts, 1);
  if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
    rc = pg_fail(err, e, sc->conn, r, "cannot start a scan");
    goto done;
  }
  PQclear(r);
  sc->cursor_open = true;
  if (tm_log_enabled(TM_LOG_DEBUG))
    tm_log(TM_LOG_DEBUG, e->base.cfg.dataset, "postgres scan: %s", tm_buf_cstr(&sql));
  *out = &sc->base;
  sc = NULL;
done:
  tm_buf_dispose(&sql);
  tm_free(pp.types);
  tm_free(pp.vals);
  tm_free(pp.lens);
  tm_free(pp.fmts);
  tm_free(pp.pv);
  if (sc) scan_free(sc);
  return rc;
}

static int pg_scan_open(tm_engine *base, const size_t *cols, size_t n_cols,
                        const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  return scan_open(base, NULL, cols, n_cols, pred, out, err);
}

static int pg_scan_next(tm_engine_scan *scb, tm_batch *out, tm_error *err) {
  pg_scan *sc = (pg_scan *)scb;
  pg_engine *e = pg_of(scb->engine);
  if (sc->done) return TM_ITEROVER;
  char fetch[64];
  snprintf(fetch, sizeof fetch, "FETCH %d FROM %s", FETCH_ROWS, sc->cursor);
  PGresult *r = PQexecParams(sc->conn, fetch, 0, NULL, NULL, NULL, NULL, 1);
  if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return pg_fail(err, e, sc->conn, r, "scan failed");
  int n = PQntuples(r);
  if (n < FETCH_ROWS) sc->done = true;
  if (n == 0) {
    PQclear(r);
    return TM_ITEROVER;
  }
  tm_batch_builder bb;
  int rc = tm_batch_builder_init(&bb, &sc->out_schema, err);
  if (rc < 0) {
    PQclear(r);
    return rc;
  }
  for (int i = 0; i < n && rc == TM_OK; i++)
    for (size_t c = 0; c < sc->n_cols && rc == TM_OK; c++) {
      tm_value v;
      int f = (int)c;
      rc = tm_pg_to_value(&sc->out_schema.cols[c].type, PQgetvalue(r, i, f),
                          PQgetisnull(r, i, f) ? -1 : PQgetlength(r, i, f), &v, err);
      if (rc == TM_OK) rc = tm_colbuilder_append_value(&bb.cols[c], &v, err);
    }
  PQclear(r);
  tm_batch full;
  tm_batch_init(&full);
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, &full, err);
  tm_batch_builder_dispose(&bb);
  if (rc < 0) return rc;
  if (sc->residual.n_terms == 0 && sc->n_cols == sc->n_proj) {
    tm_batch_move(out, &full);
    return TM_OK;
  }
  uint8_t *keep = tm_calloc((size_t)(full.n_rows + 7) / 8 + 1, 1);
  size_t *idx = tm_calloc(sc->n_proj + 1, sizeof *idx);
  tm_batch kept;
  tm_batch_init(&kept);
  int64_t n_kept = 0;
  if (!keep || !idx) rc = tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_predicate_eval(&sc->residual, &full, keep, &n_kept, err);
  if (rc == TM_OK) rc = tm_batch_filter(&full, keep, &kept, err);
  for (size_t i = 0; idx && i < sc->n_proj; i++) idx[i] = i;
  if (rc == TM_OK) rc = tm_batch_project(&kept, idx, sc->n_proj, out, err);
  tm_batch_release(&kept);
  tm_batch_release(&full);
  tm_free(keep);
  tm_free(idx);
  if (rc == TM_OK && out->n_rows == 0) {
    tm_batch_release(out);
    return pg_scan_next(scb, out, err);
  }
  return rc;
}

static void pg_scan_free(tm_engine_scan *scb) { scan_free((pg_scan *)scb); }

/* ---- the tm_scan provider: SQL over the table ------------------------------------------
 *
 * The scans of one DuckDB statement share one read transaction (C5): a
 * tm_engine_share (engine_int.h) whose connection is a pooled PGconn inside
 * read_begin's REPEATABLE READ transaction.
 */

typedef struct pg_handle {
  tm_engine *engine;      /* one reference */
  tm_engine_share *share; /* conn: a PGconn */
} pg_handle;

typedef struct pg_cursor {
  tm_engine_scan *scan;
  tm_engine_share *share; /* borrowed from the handle */
} pg_cursor;

/* A share's read (tm_engine_shares): a pooled connection inside read_begin's transaction. */
static int share_begin(void *backend, void **conn, tm_error *err) {
  PGconn *c = NULL;
  TM_TRY(read_begin(backend, &c, err));
  *conn = c;
  return TM_OK;
}

static void share_end(void *backend, void *conn) { read_end(backend, conn); }

static int prov_bind(void *payload, uint64_t query, void **handle, tm_schema *out, tm_error *err) {
  pg_engine *e = payload;
  tm_engine *ref = tm_engine__try_retain(&e->base);
  if (!ref) return tm_error_set(err, TM_ENOTFOUND, "dataset '%s' is closing", e->base.cfg.dataset);
  pg_handle *h = tm_calloc(1, sizeof *h);
  int rc = h ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_schema_copy(out, &e->base.schema, err);
  if (rc == TM_OK) rc = tm_engine__share_take(&e->shares, query, &h->share, err);
  if (rc < 0) {
    tm_free(h);
    tm_engine_release(ref);
    return rc;
  }
  h->engine = ref;
  *handle = h;
  return TM_OK;
}

static int prov_open(void *handle, const size_t *cols, size_t n_cols, const tm_predicate *pred,
                     void **cursor, tm_error *err) {
  pg_handle *h = handle;
  pg_cursor *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  c->share = h->share;
  pthread_mutex_lock(&h->share->mu);
  int rc = scan_open(h->engine, h->share->conn, cols, n_cols, pred, &c->scan, err);
  pthread_mutex_unlock(&h->share->mu);
  if (rc < 0) {
    tm_free(c);
    return rc;
  }
  *cursor = c;
  return TM_OK;
}

static int prov_next(void *cursor, tm_batch *out, tm_error *err) {
  pg_cursor *c = cursor;
  pthread_mutex_lock(&c->share->mu);
  int rc = pg_scan_next(c->scan, out, err);
  pthread_mutex_unlock(&c->share->mu);
  return rc;
}

static void prov_close(void *cursor) {
  pg_cursor *c = cursor;
  if (!c) return;
  pthread_mutex_lock(&c->share->mu);
  pg_scan_free(c->scan);
  pthread_mutex_unlock(&c->share->mu);
  tm_free(c);
}

static void prov_unbind(void *handle) {
  pg_handle *h = handle;
  tm_engine__share_put(&pg_of(h->engine)->shares, h->share);
  tm_engine_release(h->engine);
  tm_free(h);
}

static void prov_release(void *payload) { pg_free(payload); }

static int register_provider(pg_engine *e, tm_error *err) {
  static uint64_t counter;
  uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char *name = tm_asprintf("postgres$%llu$%s", (unsigned long long)n, e->base.cfg.dataset);
  if (!name) return tm_error_nomem(err);
  tm_scan_provider p = {e, prov_bind, prov_open, prov_next, prov_close, prov_unbind, prov_release};
  int rc = tm_db__provider_add(e->base.db, name, &p, err);
  if (rc < 0) {
    tm_free(name);
    return rc;
  }
  e->provider = name;
  return TM_OK;
}

const char *tm_engine__pg_provider(tm_engine *base) { return pg_of(base)->provider; }

static int pg_relation(tm_engine *base, tm_buf *out, tm_error *err) {
  pg_engine *e = pg_of(base);
  TM_TRY(tm_buf_puts(out, "(SELECT * FROM tm_scan(", err));
  TM_TRY(tm_engine__quote_string(out, e->provider, strlen(e->provider), err));
  return tm_buf_puts(out, "))", err);
}

/* ---- the refresh lease ---------------------------------------------------------------- */

struct tm_engine_lease {
  PGconn *conn;           /* holds the session advisory lock until it closes */
};

static int pg_lease_take(const tm_engine_options *opts, tm_engine_lease **out, bool *got,
                         tm_error *err) {
  *got = false;
  TM_TRY(tm_engine_pg_params_check(opts->params, err));
  pg_engine tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.where = describe_where(opts->params);
  tmp.base.cfg.dataset = (char *)opts->dataset;
  if (!tmp.where) return tm_error_nomem(err);
  PGconn *c = NULL;
  int rc = connect_with(opts->params, tmp.where, &c, err);
  /* The key: a hash of the dataset's table (the same in every process sharing it). */
  char *keytext = tm_asprintf("tidemark refresh %s", opts->dataset);
  char key[32];
  snprintf(key, sizeof key, "%lld", keytext ? (long long)fnv64(keytext) : 0LL);
  tm_free(keytext);
  const char *vals[1] = {key};
  PGresult *r = NULL;
  if (rc == TM_OK)
    rc = query_text(&tmp, c, "SELECT pg_try_advisory_lock($1::bigint)", 1, vals, false, &r,
                    "cannot take the refresh lock", err);
  if (rc == TM_OK) *got = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
  PQclear(r);
  tm_free(tmp.where);
  if (rc == TM_OK && *got) {
    tm_engine_lease *l = tm_calloc(1, sizeof *l);
    if (!l) {
      PQfinish(c);
      *got = false;
      return tm_error_nomem(err);
    }
    l->conn = c;
    *out = l;
    return TM_OK;
  }
  if (c) PQfinish(c);
  return rc;
}

static void pg_lease_release(tm_engine_lease *l) {
  /* Closing the session releases its advisory locks. */
  PQfinish(l->conn);
  tm_free(l);
}

static const tm_engine_vtable k_vtable = {
    TM_ENGINE_VTABLE_VERSION,
    /* postgres: file mode only (the rows outlive the process), no file of its own,
     * arrival order. */
    {TM_ENGINE_POSTGRES, 1u << TM_ENGINE_FILE, TM_ENGINE_FILE, TM_ENGINE_RULE_ARRIVAL, false,
     false, false, NULL, "", true},
    pg_open,
    pg_drop,
    pg_close,
    pg_begin,
    pg_write,
    pg_delete_where,
    pg_delete_provenance,
    pg_delete_before,
    pg_commit,
    pg_abort,
    pg_read_state,
    pg_row_count,
    pg_bounds,
    pg_scan_open,
    pg_scan_next,
    pg_scan_free,
    pg_size_bytes,
    pg_relation,
    pg_verify,
    pg_lease_take,
    pg_lease_release,
};

const tm_engine_vtable *tm_engine__pg_vtable(void) { return &k_vtable; }
