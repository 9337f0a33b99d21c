/*
 * sqlite.c - the sqlite engine: one SQLite table per dataset, queried through
 * DuckDB (engine layer).
 *
 * The dataset is a table named after it in its own database file, in WAL
 * mode so that readers keep a snapshot while a refresh writes. File mode
 * keeps the file at the configured path (synchronous=FULL: a commit is
 * durable when it returns). Memory mode keeps no data across restarts: the
 * database is a scratch file in TMPDIR with synchronous=OFF, removed at
 * close; it is a file only so that readers get WAL snapshot isolation.
 *
 * Beside the dataset's table the database holds _tm_state (the state map,
 * written in the same transaction as the rows) and _tm_meta (schema, options
 * fingerprint, row count). A primary key is the table's PRIMARY KEY; a
 * repeated key resolves by arrival order: `drop` is ON CONFLICT DO NOTHING,
 * `upsert` is ON CONFLICT DO UPDATE (SPEC A8). A full refresh (A11) and a
 * replacement for a new schema (B9) fill a new table and swap it in with
 * DROP + ALTER TABLE RENAME inside the commit. Values are stored as
 * sqlite_int.h describes.
 *
 * SQL sees the table through DuckDB's tm_scan table function: the engine
 * registers itself as a scan provider, and each query scans the columns it
 * uses in one SQLite read transaction (WAL: one committed state, C5), with
 * the pushed-down comparisons in SQLite's WHERE. The rowid is a hidden
 * column of the scan, so that a retention condition in DuckDB's dialect can
 * name the rows to delete.
 *
 * A table of refresh_mode: changes ends with the provenance columns
 * (_tm_seq, _tm_file, _tm_pos) and has an index on them: its deletes by
 * provenance are native DELETEs, one index search per file or row (SPEC E4).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/sqlite/sqlite_int.h"
#include "format/arrow/render.h"
#include "io/io.h"
#include "source/source.h"
#include "util/log.h"
#include "util/alloc.h"

#define POOL_MAX 8
#define TABLE_NEW_SUFFIX "__tm_new"
#define ROWID_COLUMN "_tm_rowid"

typedef struct sq_engine {
  tm_engine base;
  sqlite3 *db;          /* writer connection; also used for DDL at open */
  char *file;           /* owned: database path */
  char *provider;       /* owned: the tm_scan relation name, once registered */
  char *provider_w;     /* owned: the same through the writer's transaction (delete_where) */
  bool pending;         /* a replacement (B9): the first commit swaps the new table in */
  tm_engine_shares shares; /* the read transactions of running statements (head under mu) */
  char *table_q;        /* owned: the dataset's quoted table name */
  char *new_q;          /* owned: the quoted name of a full refresh's new table */
  char *index_q;        /* owned: quoted name of the time-column index */
  char *prov_q;         /* owned: quoted name of the provenance index (refresh_mode: changes) */
  bool scratch;         /* memory mode: remove the files at close */
  pthread_mutex_t mu;   /* guards pool and shares */
  sqlite3 *pool[POOL_MAX]; /* idle read connections */
  size_t n_pool;
} sq_engine;

static int share_begin(void *backend, void **conn, tm_error *err);
static void share_end(void *backend, void *conn);

typedef struct sq_txn {
  tm_engine_txn base;
  sqlite3_stmt *ins;    /* the insert statement for the target table */
  const char *target_q; /* table_q or new_q */
  int64_t count_before; /* live rows when the transaction began */
  int64_t inserted;     /* rows added (new keys) */
  int64_t updated;      /* upserts that replaced a stored row */
  int64_t deleted;
  int64_t sup[TM_SUPERSEDED__COUNT];
} sq_txn;

typedef struct sq_scan {
  tm_engine_scan base;
  sqlite3 *db;          /* a read connection holding the scan's read transaction */
  bool borrowed;        /* db is the writer's connection (inside its transaction) */
  sqlite3_stmt *st;
  tm_schema out_schema; /* the scanned columns */
  size_t *cols;         /* schema index per scanned column */
  size_t n_cols;        /* projection first, then residual-filter columns */
  size_t n_proj;
  tm_predicate residual; /* terms SQL cannot evaluate exactly */
  bool done;
} sq_scan;

static sq_engine *sq_of(tm_engine *e) { return (sq_engine *)e; }
static const tm_engine_vtable k_vtable;
static int register_provider(sq_engine *e, tm_error *err);
static int reserve_bytes(sqlite3 *db);

/* ---- helpers -------------------------------------------------------------------- */

/*
 * The errno behind SQLite's last I/O error, or 0: the connection's, else the
 * last one of the database file, else of its WAL (where commits write).
 */
static int last_errno(sqlite3 *db) {
  int e = sqlite3_system_errno(db);
  if (e > 0) return e;
  int v = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &v) == SQLITE_OK && v > 0) return v;
  sqlite3_file *j = NULL;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &j) == SQLITE_OK && j &&
      j->pMethods && j->pMethods->xFileControl(j, SQLITE_FCNTL_LAST_ERRNO, &v) == SQLITE_OK && v > 0)
    return v;
  return 0;
}

static int sql_error(tm_error *err, sqlite3 *db, const char *what, const char *name) {
  int code = sqlite3_errcode(db);
  /* cksum.c: a page of the file failed its checksum, or the file is cut short. */
  if (sqlite3_extended_errcode(db) == SQLITE_IOERR_DATA)
    return tm_error_set(err, TM_ECORRUPT, "%s: %s: page %u failed its checksum (the file is damaged)",
                        name, what, (unsigned)tm_sqlite_cksum_last_bad_page());
  int tc = code == SQLITE_NOMEM ? TM_ENOMEM
           : (code == SQLITE_BUSY || code == SQLITE_LOCKED) ? TM_ECONFLICT
           : (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) ? TM_ECORRUPT
           : (code == SQLITE_ERROR || code == SQLITE_AUTH || code == SQLITE_RANGE) ? TM_EINVALID
           : TM_EIO;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(db));
  /* For I/O errors, the system's reason too ("File too large" under RLIMIT_FSIZE,
   * where SQLite only says "disk I/O error"). */
  int sys = (code == SQLITE_IOERR || code == SQLITE_FULL || code == SQLITE_CANTOPEN)
                ? last_errno(db) : 0;
  if (sys > 0) return tm_error_set(err, tc, "%s: %s: %s (%s)", name, what, msg, strerror(sys));
  return tm_error_set(err, tc, "%s: %s: %s", name, what, msg);
}

static int quote_ident(tm_buf *b, const char *name, const char *suffix, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const char *p = name; *p; p++) {
    if (*p == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, *p, err));
  }
  if (suffix) TM_TRY(tm_buf_puts(b, suffix, err));
  return tm_buf_putc(b, '"', err);
}

static char *quoted(const char *name, const char *suffix) {
  tm_buf b = TM_BUF_INIT(1 << 20);
  if (quote_ident(&b, name, suffix, NULL) < 0) {
    tm_buf_dispose(&b);
    return NULL;
  }
  return tm_buf_take(&b, NULL);
}

static int exec(sqlite3 *db, const char *sql, const char *name, tm_error *err) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return sql_error(err, db, "statement failed", name);
  return TM_OK;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, const char *name,
                   tm_error *err) {
  if (sqlite3_prepare_v2(db, sql, -1, out, NULL) != SQLITE_OK) {
    *out = NULL;
    return sql_error(err, db, "cannot prepare", name);
  }
  return TM_OK;
}

static int open_conn(sq_engine *e, bool create, sqlite3 **out, tm_error *err) {
  sqlite3 *db = NULL;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  if (tm_sqlite_cksum_register() != SQLITE_OK)
    return tm_error_set(err, TM_EIO, "%s: cannot set up SQLite's checksum VFS", e->file);
  int src = sqlite3_open_v2(e->file, &db, flags, TM_SQLITE_CKSUM_VFS);
  if (src != SQLITE_OK) {
    int rc = !db ? tm_error_nomem(err)
             : src == SQLITE_CANTOPEN && !create
                 ? tm_error_set(err, TM_ENOTFOUND, "%s: no acceleration database", e->file)
                 : sql_error(err, db, "cannot open", e->file);
    sqlite3_close(db);
    return rc;
  }
  sqlite3_busy_timeout(db, e->base.cfg.busy_timeout_ms);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  *out = db;
  return TM_OK;
}

/* ---- connection pool for snapshots -------------------------------------------- */

static int pool_take(sq_engine *e, sqlite3 **out, tm_error *err) {
  pthread_mutex_lock(&e->mu);
  sqlite3 *db = e->n_pool ? e->pool[--e->n_pool] : NULL;
  pthread_mutex_unlock(&e->mu);
  if (db) {
    *out = db;
    return TM_OK;
  }
  TM_TRY(open_conn(e, false, &db, err));
  if (sqlite3_exec(db, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK) {
    int rc = sql_error(err, db, "cannot configure", e->file);
    sqlite3_close(db);
    return rc;
  }
  *out = db;
  return TM_OK;
}

/*
 * Returns a reader connection to the pool. One still inside a transaction (its
 * COMMIT or ROLLBACK failed, e.g. for lack of memory) is closed instead, which
 * ends the transaction: pooled, its next BEGIN would fail.
 */
static void pool_put(sq_engine *e, sqlite3 *db) {
  if (!sqlite3_get_autocommit(db)) {
    sqlite3_close(db);
    return;
  }
  pthread_mutex_lock(&e->mu);
  if (e->n_pool < POOL_MAX) {
    e->pool[e->n_pool++] = db;
    db = NULL;
  }
  pthread_mutex_unlock(&e->mu);
  if (db) sqlite3_close(db);
}

/* ---- schema and metadata ------------------------------------------------------- */

static int build_create(sq_engine *e, const char *table_q, tm_buf *sql, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  TM_TRY(tm_buf_printf(sql, err, "CREATE TABLE main.%s (", table_q));
  for (size_t i = 0; i < s->n_cols; i++) {
    char decl[48];
    tm_sqltype_decl(&s->cols[i].type, decl, sizeof decl);
    if (i) TM_TRY(tm_buf_puts(sql, ", ", err));
    TM_TRY(quote_ident(sql, s->cols[i].name, NULL, err));
    TM_TRY(tm_buf_printf(sql, err, " %s", decl));
  }
  if (e->base.cfg.n_pk) {
    TM_TRY(tm_buf_puts(sql, ", PRIMARY KEY (", err));
    for (size_t i = 0; i < e->base.cfg.n_pk; i++) {
      if (i) TM_TRY(tm_buf_puts(sql, ", ", err));
      TM_TRY(quote_ident(sql, s->cols[e->base.cfg.pk[i]].name, NULL, err));
    }
    TM_TRY(tm_buf_putc(sql, ')', err));
  }
  return tm_buf_puts(sql, ")", err);
}

static int create_time_index(sq_engine *e, tm_error *err) {
  if (e->base.cfg.time_col < 0) return TM_OK;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = tm_buf_printf(&sql, err, "CREATE INDEX IF NOT EXISTS main.%s ON %s (", e->index_q,
                         e->table_q);
  if (rc == TM_OK) rc = quote_ident(&sql, e->base.schema.cols[e->base.cfg.time_col].name, NULL, err);
  if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', err);
  if (rc == TM_OK) rc = exec(e->db, sql.ptr, e->file, err);
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * A table of refresh_mode: changes (its schema ends with the provenance
 * columns) is indexed on (_tm_seq, _tm_file, _tm_pos): a changes refresh
 * deletes a whole file by its prefix (seq, file) and single rows by all
 * three, each an index search, never a scan of the table (SPEC E4). Rows
 * arrive in sequence and position order, so the index grows at its end.
 */
static int create_prov_index(sq_engine *e, tm_error *err) {
  if (tm_engine_hidden_columns(&e->base.schema) != TM_PROV_COLUMNS) return TM_OK;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = tm_buf_printf(&sql, err,
                         "CREATE INDEX IF NOT EXISTS main.%s ON %s (" TM_PROV_SEQ ", " TM_PROV_FILE
                         ", " TM_PROV_POS ")",
                         e->prov_q, e->table_q);
  if (rc == TM_OK) rc = exec(e->db, sql.ptr, e->file, err);
  tm_buf_dispose(&sql);
  return rc;
}

int tm_sqlite__prov_delete_sql(tm_buf *out, const char *table_q, bool by_pos, tm_error *err) {
  return tm_buf_printf(out, err,
                       "DELETE FROM main.%s WHERE " TM_PROV_SEQ " = ?1 AND " TM_PROV_FILE
                       " = ?2%s",
                       table_q, by_pos ? " AND " TM_PROV_POS " = ?3" : "");
}

/* The configured indexes (Spice's indexes) on the table; it holds none of them yet. */
static int create_indexes(sq_engine *e, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && i < e->base.cfg.n_indexes; i++) {
    tm_buf_clear(&sql);
    rc = tm_engine__index_sql(&sql, &e->base, &e->base.cfg.indexes[i], "main.", e->table_q, err);
    if (rc == TM_OK) rc = exec(e->db, sql.ptr, e->file, err);
    if (rc != TM_OK) tm_error_prefix(err, "index %s", e->base.cfg.indexes[i].name);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * Brings a reopened acceleration's indexes in step with the config: drops
 * tidemark's (tm_ix_*) that it no longer names, creates the missing ones,
 * in one transaction. A unique index over repeated keys fails, naming it.
 */
static int sync_indexes(sq_engine *e, tm_error *err) {
  sqlite3_stmt *st = NULL;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  bool *have = tm_calloc(e->base.cfg.n_indexes ? e->base.cfg.n_indexes : 1, sizeof *have);
  char **drop = NULL;
  size_t n_drop = 0;
  int rc = TM_OK;
  if (!have) {
    rc = tm_error_nomem(err);
    goto done;
  }
  TM_CHECK(prepare(e->db, "SELECT name FROM main.sqlite_master WHERE type = 'index' AND name LIKE 'tm\\_ix\\_%' ESCAPE '\\'",
                   &st, e->file, err));
  for (int s; (s = sqlite3_step(st)) != SQLITE_DONE;) {
    if (s != SQLITE_ROW) {
      rc = sql_error(err, e->db, "cannot list the indexes", e->file);
      goto done;
    }
    const char *name = (const char *)sqlite3_column_text(st, 0);
    bool ours = false;
    if (!name) continue;
    if (tm_engine__index_wanted(&e->base, name, &ours)) {
      for (size_t k = 0; k < e->base.cfg.n_indexes; k++)
        if (strcmp(e->base.cfg.indexes[k].name, name) == 0) have[k] = true;
    } else if (ours) {
      char **g = tm_reallocarray(drop, n_drop + 1, sizeof *g);
      if (!g || !(g[n_drop] = tm_strdup(name))) {
        if (g) drop = g;
        rc = tm_error_nomem(err);
        goto done;
      }
      drop = g;
      n_drop++;
    }
  }
  sqlite3_finalize(st);
  st = NULL;
  bool missing = false;
  for (size_t k = 0; k < e->base.cfg.n_indexes; k++) missing = missing || !have[k];
  if (!n_drop && !missing) goto done;
  TM_CHECK(exec(e->db, "BEGIN IMMEDIATE", e->file, err));
  for (size_t i = 0; rc == TM_OK && i < n_drop; i++) {
    tm_buf_clear(&sql);
    rc = tm_buf_puts(&sql, "DROP INDEX main.", err);
    if (rc == TM_OK) rc = quote_ident(&sql, drop[i], NULL, err);
    if (rc == TM_OK) rc = exec(e->db, sql.ptr, e->file, err);
    if (rc == TM_OK) tm_log(TM_LOG_INFO, e->base.cfg.dataset, "dropped index %s (no longer configured)", drop[i]);
  }
  for (size_t k = 0; rc == TM_OK && k < e->base.cfg.n_indexes; k++) {
    if (have[k]) continue;
    tm_buf_clear(&sql);
    rc = tm_engine__index_sql(&sql, &e->base, &e->base.cfg.indexes[k], "main.", e->table_q, err);
    if (rc == TM_OK) rc = exec(e->db, sql.ptr, e->file, err);
    if (rc != TM_OK) tm_error_prefix(err, "index %s", e->base.cfg.indexes[k].name);
    else tm_log(TM_LOG_INFO, e->base.cfg.dataset, "created index %s", e->base.cfg.indexes[k].name);
  }
  if (rc == TM_OK) rc = exec(e->db, "COMMIT", e->file, err);
  else sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
done:
  sqlite3_finalize(st);
  for (size_t i = 0; i < n_drop; i++) tm_free(drop[i]);
  tm_free(drop);
  tm_free(have);
  tm_buf_dispose(&sql);
  return rc;
}

static int meta_get(sqlite3 *db, const char *key, char **out, const char *name, tm_error *err) {
  sqlite3_stmt *st;
  *out = NULL;
  TM_TRY(prepare(db, "SELECT value FROM main._tm_meta WHERE key = ?1", &st, name, err));
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int rc = TM_OK;
  int s = sqlite3_step(st);
  if (s == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(st, 0);
    *out = tm_strndup(v ? v : "", (size_t)sqlite3_column_bytes(st, 0));
    if (!*out) rc = tm_error_nomem(err);
  } else if (s == SQLITE_DONE) {
    rc = TM_CORRUPT(err, "%s: metadata '%s' is missing", name, key);
  } else {
    rc = sql_error(err, db, "cannot read metadata", name);
  }
  sqlite3_finalize(st);
  return rc;
}

static int meta_set(sqlite3 *db, const char *key, const char *value, const char *name,
                    tm_error *err) {
  sqlite3_stmt *st;
  TM_TRY(prepare(db, "INSERT OR REPLACE INTO main._tm_meta(key, value) VALUES (?1, ?2)", &st,
                 name, err));
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st) == SQLITE_DONE ? TM_OK : sql_error(err, db, "cannot write metadata", name);
  sqlite3_finalize(st);
  return rc;
}

/*
 * Whether the database has the table `table` (NULL: any table). An error
 * reading the schema (a damaged file) is an error, not an answer.
 */
static int has_table(sqlite3 *db, const char *table, bool *yes, const char *name, tm_error *err) {
  sqlite3_stmt *st;
  TM_TRY(prepare(db,
                 table ? "SELECT 1 FROM main.sqlite_schema WHERE type='table' AND name=?1"
                       : "SELECT 1 FROM main.sqlite_schema WHERE type='table' LIMIT 1",
                 &st, name, err));
  if (table) sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  int s = sqlite3_step(st);
  int rc = s == SQLITE_ROW || s == SQLITE_DONE ? TM_OK : sql_error(err, db, "cannot read the schema", name);
  *yes = s == SQLITE_ROW;
  sqlite3_finalize(st);
  return rc;
}

/* Names and types equal (nullability may change between source versions). */
static bool same_columns(const tm_schema *a, const tm_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (size_t i = 0; i < a->n_cols; i++)
    if (strcmp(a->cols[i].name, b->cols[i].name) != 0 ||
        !tm_type_equal(&a->cols[i].type, &b->cols[i].type))
      return false;
  return true;
}

static int create_tables(sq_engine *e, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 24), text = TM_BUF_INIT(1 << 24);
  int rc = TM_OK;
  TM_CHECK(exec(e->db, "BEGIN IMMEDIATE", e->file, err));
  TM_CHECK(build_create(e, e->table_q, &sql, err));
  TM_CHECK(exec(e->db, sql.ptr, e->file, err));
  TM_CHECK(exec(e->db,
                "CREATE TABLE main._tm_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                "CREATE TABLE main._tm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                e->file, err));
  TM_CHECK(tm_engine__schema_encode(&e->base.schema, &text, err));
  TM_CHECK(meta_set(e->db, "schema", tm_buf_cstr(&text), e->file, err));
  tm_buf_clear(&text);
  TM_CHECK(tm_engine__options_fingerprint(&e->base, &text, err));
  TM_CHECK(meta_set(e->db, "options", tm_buf_cstr(&text), e->file, err));
  TM_CHECK(meta_set(e->db, "row_count", "0", e->file, err));
  TM_CHECK(meta_set(e->db, "format", "1", e->file, err));
  TM_CHECK(meta_set(e->db, "page_checksums", reserve_bytes(e->db) == TM_SQLITE_CKSUM_RESERVE ? "1" : "0",
                    e->file, err));
  TM_CHECK(create_time_index(e, err));
  TM_CHECK(create_prov_index(e, err));
  TM_CHECK(create_indexes(e, err));
  TM_CHECK(exec(e->db, "COMMIT", e->file, err));
done:
  if (rc < 0) sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
  tm_buf_dispose(&sql);
  tm_buf_dispose(&text);
  return rc;
}

static int check_options(sq_engine *e, tm_error *err) {
  char *stored = NULL;
  tm_buf want = TM_BUF_INIT(1 << 20);
  int rc = meta_get(e->db, "options", &stored, e->file, err);
  if (rc == TM_OK) rc = tm_engine__options_fingerprint(&e->base, &want, err);
  if (rc == TM_OK && strcmp(stored, tm_buf_cstr(&want)) != 0)
    rc = tm_error_set(err, TM_ECONFLICT,
                      "%s: stored acceleration has options '%s', the dataset has '%s'", e->file,
                      stored, tm_buf_cstr(&want));
  tm_free(stored);
  tm_buf_dispose(&want);
  return rc;
}

/* The reserved bytes per page of the main database (cksum.c keeps its checksums there). */
static int reserve_bytes(sqlite3 *db) {
  int n = -1;
  return sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n) == SQLITE_OK ? n : -1;
}

/*
 * A database created with page checksums must still have them: a damaged
 * header byte would otherwise turn the checks off. Databases from before
 * page checksums have no such meta and are read without checks.
 */
static int check_page_checksums(sq_engine *e, tm_error *err) {
  sqlite3_stmt *st;
  TM_TRY(prepare(e->db, "SELECT value FROM main._tm_meta WHERE key = 'page_checksums'", &st,
                 e->file, err));
  int s = sqlite3_step(st);
  bool want = s == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
  int rc = s == SQLITE_ROW || s == SQLITE_DONE ? TM_OK : sql_error(err, e->db, "cannot read metadata", e->file);
  sqlite3_finalize(st);
  if (rc == TM_OK && want && reserve_bytes(e->db) != TM_SQLITE_CKSUM_RESERVE)
    rc = TM_CORRUPT(err, "%s: the database header lost its page checksums (the file is damaged)",
                    e->file);
  return rc;
}

/* ---- open / close ---------------------------------------------------------------- */

static void sq_free(sq_engine *e) {
  for (size_t i = 0; i < e->n_pool; i++) sqlite3_close(e->pool[i]);
  if (e->db) sqlite3_close(e->db);
  if (e->scratch && e->file) {
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 4; i++) {
      char *p = tm_asprintf("%s%s", e->file, sfx[i]);
      if (p) unlink(p);
      tm_free(p);
    }
  }
  pthread_mutex_destroy(&e->mu);
  tm_free(e->file);
  tm_free(e->provider);
  tm_free(e->provider_w);
  tm_free(e->table_q);
  tm_free(e->new_q);
  tm_free(e->index_q);
  tm_free(e->prov_q);
  tm_engine__dispose_base(&e->base);
  tm_free(e);
}

/*
 * The last reference went. A query may still be binding the scan provider
 * (it looked the provider up, then finds the engine closing): the memory is
 * freed when the registry releases the provider, after such a query.
 */
static void sq_close(tm_engine *base) {
  sq_engine *e = sq_of(base);
  /* The reading provider's release frees the engine (the writer's releases nothing). */
  if (e->provider_w) tm_db__provider_remove(base->db, e->provider_w);
  if (e->provider) tm_db__provider_remove(base->db, e->provider);
  else sq_free(e);
}

/*
 * Scratch databases of processes that died (killed, crashed) would stay in
 * TMPDIR: the first memory-mode open of a process removes those whose process
 * no longer exists.
 */
static void remove_dead_scratch(void) {
  const char *tmp = getenv("TMPDIR");
  const char *dir = tmp && *tmp ? tmp : "/tmp";
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    const char *n = ent->d_name;
    if (strncmp(n, "tidemark-mem-", 13) != 0) continue;
    const char *p = n + 13;
    const char *dash = strchr(p, '-');
    int64_t pid;
    if (!dash || tm_parse_int64(p, (size_t)(dash - p), &pid) != TM_OK || pid <= 0) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    char *path = tm_path_join(dir, n);
    if (path) unlink(path);
    tm_free(path);
  }
  closedir(d);
}

static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;

static int scratch_path(char **out, const char *dataset) {
  pthread_once(&g_scratch_once, remove_dead_scratch);
  static int counter;
  const char *tmp = getenv("TMPDIR");
  int n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  /* The dataset name is kept out of the path: it may hold any character. */
  (void)dataset;
  *out = tm_asprintf("%s/tidemark-mem-%d-%d.db", tmp && *tmp ? tmp : "/tmp", (int)getpid(), n);
  return *out ? TM_OK : TM_ENOMEM;
}

static int sq_open(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
                   tm_error *err) {
  int rc = TM_OK;
  tm_schema stored, as_json;
  tm_schema_init(&stored);
  tm_schema_init(&as_json);
  char *text = NULL;
  if (schema) {
    /* Nested columns are stored as JSON text (tm_engine_txn_write converts
     * the batches; issue 16). */
    TM_TRY(tm_schema_copy(&as_json, schema, err));
    tm_schema_nested_as_json(&as_json);
    schema = &as_json;
  }
  sq_engine *e = tm_calloc(1, sizeof *e);
  if (!e) {
    tm_schema_dispose(&as_json);
    return tm_error_nomem(err);
  }
  pthread_mutex_init(&e->mu, NULL);
  e->shares = (tm_engine_shares){.mu = &e->mu, .begin = share_begin, .end = share_end, .backend = e};
  e->scratch = opts->mode == TM_ENGINE_MEMORY;
  if (e->scratch) {
    if (scratch_path(&e->file, opts->dataset) < 0) {
      rc = tm_error_nomem(err);
      goto done;
    }
    unlink(e->file);
  } else {
    e->file = tm_strdup(opts->path);
    char *dir = e->file ? tm_path_dirname(e->file) : NULL;
    if (!dir) {
      rc = tm_error_nomem(err);
      goto done;
    }
    rc = schema ? tm_mkdir_p(dir, err) : TM_OK;
    tm_free(dir);
    if (rc < 0) goto done;
  }
  /* Connect first (with a provisional config) to learn whether a table exists. */
  e->base.cfg.busy_timeout_ms = opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : 5000;
  TM_CHECK(open_conn(e, schema != NULL, &e->db, err));
  bool exists, others = false;
  TM_CHECK(has_table(e->db, "_tm_meta", &exists, e->file, err));
  if (!exists && !schema) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: no acceleration stored", e->file);
    goto done;
  }
  if (!exists) TM_CHECK(has_table(e->db, NULL, &others, e->file, err));
  if (!exists && others) {
    /* Someone's database, not an acceleration: never ours to fill or drop. */
    rc = tm_error_set(err, TM_EINVALID,
                      "%s: a SQLite database with tables that is not a tidemark acceleration: "
                      "tidemark leaves it alone (choose another sqlite_file)",
                      e->file);
    goto done;
  }
  if (exists) {
    size_t len;
    TM_CHECK(meta_get(e->db, "schema", &text, e->file, err));
    len = strlen(text);
    TM_CHECK(tm_engine__schema_decode(&stored, text, len, err));
    /* Another schema: a replacement that the first commit swaps in (B9). */
    if (schema && (opts->replace || !same_columns(schema, &stored))) e->pending = true;
  }
  TM_CHECK(tm_engine__init_base(&e->base, &k_vtable, exists && !e->pending ? &stored : schema,
                                opts, err));
  e->table_q = quoted(e->base.cfg.dataset, NULL);
  e->new_q = quoted(e->base.cfg.dataset, TABLE_NEW_SUFFIX);
  e->index_q = quoted(e->base.cfg.dataset, "__tm_time");
  e->prov_q = quoted(e->base.cfg.dataset, "__tm_prov");
  if (!e->table_q || !e->new_q || !e->index_q || !e->prov_q) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (!exists) {
    /* Before the first page is written: room for each page's checksum (cksum.c). */
    int n = TM_SQLITE_CKSUM_RESERVE;
    if (sqlite3_file_control(e->db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n) != SQLITE_OK) {
      rc = sql_error(err, e->db, "cannot reserve room for page checksums", e->file);
      goto done;
    }
  }
  TM_CHECK(exec(e->db, "PRAGMA journal_mode=WAL", e->file, err));
  TM_CHECK(exec(e->db, e->scratch ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL",
                e->file, err));
  /* Bulk loads touch the table and its time index all over: a large page
   * cache for the writer (readers keep the default). */
  TM_CHECK(exec(e->db, "PRAGMA cache_size=-131072", e->file, err));
  /* After a checkpoint the WAL shrinks back instead of keeping a full refresh's size. */
  TM_CHECK(exec(e->db, "PRAGMA journal_size_limit=67108864", e->file, err));
  if (exists) TM_CHECK(check_page_checksums(e, err));
  if (exists && !e->pending) {
    rc = check_options(e, err);
    if (rc == TM_ECONFLICT) {
      e->pending = true; /* the key options changed: a replacement too */
      rc = TM_OK;
    }
    if (rc < 0) goto done;
  }
  if (!exists) TM_CHECK(create_tables(e, err));
  else if (!e->pending) TM_CHECK(sync_indexes(e, err));
  TM_CHECK(register_provider(e, err));
  *out = &e->base;
  e = NULL;
done:
  tm_free(text);
  tm_schema_dispose(&stored);
  tm_schema_dispose(&as_json);
  if (e) {
    if (!e->base.vt) {
      /* init_base did not run: free by hand. */
      if (e->db) sqlite3_close(e->db);
      if (e->scratch && e->file) unlink(e->file);
      pthread_mutex_destroy(&e->mu);
      tm_free(e->file);
      tm_free(e);
    } else {
      sq_free(e);
    }
  }
  return rc;
}

static int sq_drop(const tm_engine_options *opts, tm_error *err) {
  const char *sfx[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < 4; i++) {
    char *p = tm_asprintf("%s%s", opts->path, sfx[i]);
    if (!p) return tm_error_nomem(err);
    int r = unlink(p);
    int e = errno;
    tm_free(p);
    if (r != 0 && e != ENOENT)
      return tm_error_set(err, TM_EIO, "%s%s: %s", opts->path, sfx[i], strerror(e));
  }
  return TM_OK;
}


/* ---- write transactions ---------------------------------------------------------- */

static int read_count(sqlite3 *db, int64_t *out, const char *name, tm_error *err) {
  char *v = NULL;
  TM_TRY(meta_get(db, "row_count", &v, name, err));
  int rc = tm_parse_int64(v, strlen(v), out) == TM_OK
               ? TM_OK
               : TM_CORRUPT(err, "%s: stored row count '%s' is malformed", name, v);
  tm_free(v);
  return rc;
}

static int build_insert(sq_engine *e, const char *target_q, tm_buf *sql, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  const tm_engine_config *c = &e->base.cfg;
  TM_TRY(tm_buf_printf(sql, err, "INSERT INTO main.%s VALUES (", target_q));
  for (size_t i = 0; i < s->n_cols; i++) TM_TRY(tm_buf_printf(sql, err, "%s?%zu", i ? ", " : "", i + 1));
  TM_TRY(tm_buf_putc(sql, ')', err));
  if (c->n_pk == 0) return TM_OK;
  TM_TRY(tm_buf_puts(sql, " ON CONFLICT (", err));
  for (size_t i = 0; i < c->n_pk; i++) {
    if (i) TM_TRY(tm_buf_puts(sql, ", ", err));
    TM_TRY(quote_ident(sql, s->cols[c->pk[i]].name, NULL, err));
  }
  TM_TRY(tm_buf_puts(sql, ") DO ", err));
  if (c->on_conflict == TM_ON_CONFLICT_DROP || c->n_pk == s->n_cols)
    return tm_buf_puts(sql, "NOTHING", err);
  /* Upsert; an identical row is left alone (and counted as unchanged). */
  TM_TRY(tm_buf_puts(sql, "UPDATE SET ", err));
  bool first = true;
  for (size_t i = 0; i < s->n_cols; i++) {
    bool is_pk = false;
    for (size_t k = 0; k < c->n_pk; k++) is_pk |= c->pk[k] == i;
    if (is_pk) continue;
    if (!first) TM_TRY(tm_buf_puts(sql, ", ", err));
    first = false;
    TM_TRY(quote_ident(sql, s->cols[i].name, NULL, err));
    TM_TRY(tm_buf_puts(sql, " = excluded.", err));
    TM_TRY(quote_ident(sql, s->cols[i].name, NULL, err));
  }
  TM_TRY(tm_buf_puts(sql, " WHERE NOT (", err));
  first = true;
  for (size_t i = 0; i < s->n_cols; i++) {
    if (!first) TM_TRY(tm_buf_puts(sql, " AND ", err));
    first = false;
    TM_TRY(quote_ident(sql, s->cols[i].name, NULL, err));
    TM_TRY(tm_buf_puts(sql, " IS excluded.", err));
    TM_TRY(quote_ident(sql, s->cols[i].name, NULL, err));
  }
  return tm_buf_putc(sql, ')', err);
}

static void txn_free(sq_txn *t) {
  sqlite3_finalize(t->ins);
  tm_free(t);
}

static int sq_begin(tm_engine *base, tm_txn_kind kind, tm_engine_txn **out, tm_error *err) {
  sq_engine *e = sq_of(base);
  TM_TRY(tm_engine__writer_acquire(base, err));
  int rc = TM_OK;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  sq_txn *t = tm_calloc(1, sizeof *t);
  if (!t) {
    rc = tm_error_nomem(err);
    goto done;
  }
  t->base.engine = base;
  t->base.kind = kind;
  /* A ROLLBACK that failed (for lack of memory) left the last write transaction
   * open, uncommitted: end it before beginning this one. */
  if (!sqlite3_get_autocommit(e->db)) sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
  TM_CHECK(exec(e->db, "BEGIN IMMEDIATE", e->file, err));
  t->target_q = e->table_q;
  if (!e->pending) TM_CHECK(read_count(e->db, &t->count_before, e->file, err));
  if (kind == TM_TXN_REPLACE_ALL || e->pending) {
    TM_CHECK(tm_buf_printf(&sql, err, "DROP TABLE IF EXISTS main.%s", e->new_q));
    TM_CHECK(exec(e->db, sql.ptr, e->file, err));
    tm_buf_clear(&sql);
    TM_CHECK(build_create(e, e->new_q, &sql, err));
    TM_CHECK(exec(e->db, sql.ptr, e->file, err));
    tm_buf_clear(&sql);
    t->target_q = e->new_q;
    t->count_before = 0;
  }
  TM_CHECK(build_insert(e, t->target_q, &sql, err));
  TM_CHECK(prepare(e->db, sql.ptr, &t->ins, e->file, err));
  *out = &t->base;
  t = NULL;
done:
  tm_buf_dispose(&sql);
  if (t) {
    sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
    txn_free(t);
  }
  if (rc < 0) tm_engine__writer_release(base);
  return rc;
}

static int sq_write(tm_engine_txn *tb, const tm_batch *b, tm_error *err) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  size_t n = e->base.schema.n_cols;
  bool keyed = e->base.cfg.n_pk > 0;
  bool upsert = keyed && e->base.cfg.on_conflict == TM_ON_CONFLICT_UPSERT;
  tm_colview *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  for (size_t c = 0; c < n; c++) cols[c] = tm_batch_col(b, c);
  int rc = TM_OK;
  tm_sqlval sv;
  for (int64_t r = 0; r < b->n_rows && rc == TM_OK; r++) {
    for (size_t c = 0; c < n; c++) {
      tm_value v;
      tm_colview_get(&cols[c], r, &v);
      tm_sqlval_from(&sv, &cols[c].type, &v);
      if (tm_sqlval_bind(t->ins, (int)c + 1, &sv) != SQLITE_OK) {
        rc = sql_error(err, e->db, "cannot bind", e->file);
        break;
      }
    }
    if (rc < 0) break;
    sqlite3_set_last_insert_rowid(e->db, 0);
    if (sqlite3_step(t->ins) != SQLITE_DONE) {
      rc = sql_error(err, e->db, "cannot insert", e->file);
      sqlite3_reset(t->ins);
      break;
    }
    sqlite3_reset(t->ins);
    int changed = sqlite3_changes(e->db);
    if (!keyed || (changed && sqlite3_last_insert_rowid(e->db) != 0)) {
      t->inserted++;
    } else if (changed) {
      /* Upsert replaced the stored row of this key. */
      t->updated++;
      t->sup[TM_SUPERSEDED_ARRIVAL]++;
    } else {
      t->sup[upsert ? TM_SUPERSEDED_UNCHANGED : TM_SUPERSEDED_ARRIVAL]++;
    }
  }
  sqlite3_clear_bindings(t->ins);
  tm_free(cols);
  return rc;
}

/*
 * The retention condition is in DuckDB's dialect, so DuckDB evaluates it: a
 * scan of this dataset through tm_scan names the rowids of the rows it holds
 * for, and they are deleted in the SQLite transaction. The condition is
 * wrapped in one SELECT, which must stay one statement.
 */
static int sq_delete_where(tm_engine_txn *tb, const char *where_sql, int64_t *n_out,
                           tm_error *err) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  tm_buf sql = TM_BUF_INIT(1 << 24);
  duckdb_connection c = NULL;
  duckdb_extracted_statements ex = NULL;
  duckdb_prepared_statement ps = NULL;
  duckdb_result r;
  bool have_result = false;
  sqlite3_stmt *del = NULL;
  int rc = TM_OK;
  *n_out = 0;
  /* Through the writer's connection: the rows this transaction sees. */
  TM_CHECK(tm_buf_puts(&sql, "SELECT " ROWID_COLUMN " FROM tm_scan(", err));
  TM_CHECK(tm_engine__quote_string(&sql, e->provider_w, strlen(e->provider_w), err));
  TM_CHECK(tm_buf_puts(&sql, ") AS ", err));
  TM_CHECK(tm_engine__quote_ident(&sql, e->base.cfg.dataset, err));
  TM_CHECK(tm_buf_printf(&sql, err, " WHERE (%s\n)", where_sql));
  TM_CHECK(tm_db__connect(e->base.db, &c, err));
  if (duckdb_extract_statements(c, tm_buf_cstr(&sql), &ex) != 1) {
    rc = tm_error_set(err, TM_EINVALID, "dataset '%s': retention condition: %s", e->base.cfg.dataset,
                      duckdb_extract_statements_error(ex) ? duckdb_extract_statements_error(ex)
                                                          : "it must be one condition");
    goto done;
  }
  if (duckdb_prepare_extracted_statement(c, ex, 0, &ps) == DuckDBError ||
      duckdb_prepared_statement_type(ps) != DUCKDB_STATEMENT_TYPE_SELECT) {
    rc = tm_error_set(err, TM_EINVALID, "dataset '%s': retention condition: %s", e->base.cfg.dataset,
                      duckdb_prepare_error(ps) ? duckdb_prepare_error(ps) : "not a condition");
    goto done;
  }
  if (duckdb_execute_prepared_streaming(ps, &r) == DuckDBError) {
    rc = tm_db__result_error(err, &r, e->base.cfg.dataset);
    duckdb_destroy_result(&r);
    goto done;
  }
  have_result = true;
  tm_buf_clear(&sql);
  TM_CHECK(tm_buf_printf(&sql, err, "DELETE FROM main.%s WHERE rowid = ?1", t->target_q));
  TM_CHECK(prepare(e->db, sql.ptr, &del, e->file, err));
  for (;;) {
    duckdb_data_chunk ch = duckdb_fetch_chunk(r);
    if (!ch) {
      if (duckdb_result_error(&r)) rc = tm_db__result_error(err, &r, e->base.cfg.dataset);
      break;
    }
    idx_t n = duckdb_data_chunk_get_size(ch);
    const int64_t *ids = duckdb_vector_get_data(duckdb_data_chunk_get_vector(ch, 0));
    for (idx_t i = 0; i < n && rc == TM_OK; i++) {
      sqlite3_bind_int64(del, 1, ids[i]);
      if (sqlite3_step(del) != SQLITE_DONE) rc = sql_error(err, e->db, "delete failed", e->file);
      else *n_out += sqlite3_changes(e->db);
      sqlite3_reset(del);
    }
    duckdb_destroy_data_chunk(&ch);
    if (rc < 0) break;
  }
  t->deleted += *n_out;
done:
  sqlite3_finalize(del);
  if (have_result) duckdb_destroy_result(&r);
  if (ps) duckdb_destroy_prepare(&ps);
  if (ex) duckdb_destroy_extracted(&ex);
  if (c) duckdb_disconnect(&c);
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * Provenance keys are deleted by native SQLite statements, one index search
 * per key (create_prov_index): a file by (seq, file), a row by (seq, file,
 * pos). A keyed table writes its rows straight into the table, so the
 * stored rows are all the transaction sees.
 */
static int sq_delete_provenance(tm_engine_txn *tb, const tm_batch *keys, int64_t *n_out,
                                tm_error *err) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  bool by_pos = keys->schema.n_cols == 3;
  tm_colview seq = tm_batch_col(keys, 0), file = tm_batch_col(keys, 1);
  tm_colview pos = by_pos ? tm_batch_col(keys, 2) : seq;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  sqlite3_stmt *st = NULL;
  int rc = TM_OK;
  *n_out = 0;
  TM_CHECK(tm_sqlite__prov_delete_sql(&sql, t->target_q, by_pos, err));
  TM_CHECK(prepare(e->db, sql.ptr, &st, e->file, err));
  for (int64_t i = 0; i < keys->n_rows && rc == TM_OK; i++) {
    sqlite3_bind_int64(st, 1, tm_colview_int(&seq, i));
    sqlite3_bind_int64(st, 2, tm_colview_int(&file, i));
    if (by_pos) sqlite3_bind_int64(st, 3, tm_colview_int(&pos, i));
    if (sqlite3_step(st) != SQLITE_DONE) rc = sql_error(err, e->db, "delete failed", e->file);
    else *n_out += sqlite3_changes(e->db);
    sqlite3_reset(st);
  }
  t->deleted += *n_out;
done:
  sqlite3_finalize(st);
  tm_buf_dispose(&sql);
  return rc;
}

/* SQL function tm__older(value, sec, nsec): whether a time value is older. */
static void older_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  sq_engine *e = sqlite3_user_data(ctx);
  const tm_column *col = &e->base.schema.cols[e->base.cfg.time_col];
  tm_instant bound = {sqlite3_value_int64(argv[1]), (int32_t)sqlite3_value_int64(argv[2])};
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = col->type.id;
  int k = sqlite3_value_type(argv[0]);
  if (k == SQLITE_NULL) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  if (col->type.id == TM_TYPE_UTF8) {
    v.v.s = tm_sv((const char *)sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]));
  } else if (tm_type_is_temporal(&col->type) && k == SQLITE_TEXT) {
    if (tm_sqltype_parse_temporal(&col->type, (const char *)sqlite3_value_text(argv[0]),
                                  (size_t)sqlite3_value_bytes(argv[0]), &v.v.i) != TM_OK) {
      sqlite3_result_int(ctx, 0);
      return;
    }
  } else if (col->type.id >= TM_TYPE_UINT8 && col->type.id <= TM_TYPE_UINT64) {
    v.v.u = (uint64_t)sqlite3_value_int64(argv[0]);
  } else {
    v.v.i = sqlite3_value_int64(argv[0]);
  }
  tm_instant at;
  bool known = tm_value_instant(&col->type, e->base.cfg.time_format, &v, &at);
  sqlite3_result_int(ctx, known && tm_instant_cmp(at, bound) < 0);
}

static int run_delete(sq_engine *e, sqlite3_stmt *st, int64_t *n_out, tm_error *err) {
  int rc = sqlite3_step(st) == SQLITE_DONE ? TM_OK : sql_error(err, e->db, "delete failed", e->file);
  if (rc == TM_OK) *n_out = sqlite3_changes(e->db);
  return rc;
}

static int sq_delete_before(tm_engine_txn *tb, int64_t sec, int32_t nsec, int64_t *n_out,
                            tm_error *err) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  tm_buf sql = TM_BUF_INIT(1 << 20);
  sqlite3_stmt *st = NULL;
  int rc = TM_OK;
  if (sqlite3_create_function_v2(e->db, "tm__older", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, e,
                                 older_fn, NULL, NULL, NULL) != SQLITE_OK) {
    rc = sql_error(err, e->db, "cannot register a function", e->file);
    goto done;
  }
  TM_CHECK(tm_buf_printf(&sql, err, "DELETE FROM main.%s WHERE tm__older(", t->target_q));
  TM_CHECK(quote_ident(&sql, e->base.schema.cols[e->base.cfg.time_col].name, NULL, err));
  TM_CHECK(tm_buf_puts(&sql, ", ?1, ?2)", err));
  TM_CHECK(prepare(e->db, sql.ptr, &st, e->file, err));
  sqlite3_bind_int64(st, 1, sec);
  sqlite3_bind_int64(st, 2, nsec);
  TM_CHECK(run_delete(e, st, n_out, err));
  t->deleted += *n_out;
done:
  sqlite3_finalize(st);
  tm_buf_dispose(&sql);
  return rc;
}

static int write_state(sq_engine *e, const tm_kv *state, tm_error *err) {
  TM_TRY(exec(e->db, "DELETE FROM main._tm_state", e->file, err));
  sqlite3_stmt *st;
  TM_TRY(prepare(e->db, "INSERT INTO main._tm_state(key, value) VALUES (?1, ?2)", &st, e->file,
                 err));
  int rc = TM_OK;
  for (size_t i = 0; i < state->len && rc == TM_OK; i++) {
    sqlite3_bind_text(st, 1, state->items[i].key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, state->items[i].value, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE) rc = sql_error(err, e->db, "cannot write state", e->file);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

static int sq_commit(tm_engine_txn *tb, const tm_kv *state, tm_engine_commit_info *info,
                     tm_error *err) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = TM_OK;
  int64_t after = t->count_before + t->inserted - t->deleted;
  char num[32];
  sqlite3_finalize(t->ins);
  t->ins = NULL;
  /* A replacement starts without the state of what it replaces (B9). */
  tm_kv none;
  tm_kv_init(&none);
  if (state || e->pending) TM_CHECK(write_state(e, state ? state : &none, err));
  if (tb->kind == TM_TXN_REPLACE_ALL || e->pending) {
    TM_CHECK(tm_buf_printf(&sql, err, "DROP TABLE IF EXISTS main.%s; ALTER TABLE main.%s RENAME TO %s",
                           e->table_q, e->new_q, e->table_q));
    TM_CHECK(exec(e->db, sql.ptr, e->file, err));
    TM_CHECK(create_time_index(e, err));
    TM_CHECK(create_prov_index(e, err));
    TM_CHECK(create_indexes(e, err));
  }
  if (e->pending) {
    tm_buf text = TM_BUF_INIT(1 << 24);
    rc = tm_engine__schema_encode(&e->base.schema, &text, err);
    if (rc == TM_OK) rc = meta_set(e->db, "schema", tm_buf_cstr(&text), e->file, err);
    tm_buf_clear(&text);
    if (rc == TM_OK) rc = tm_engine__options_fingerprint(&e->base, &text, err);
    if (rc == TM_OK) rc = meta_set(e->db, "options", tm_buf_cstr(&text), e->file, err);
    tm_buf_dispose(&text);
    if (rc < 0) goto done;
  }
  snprintf(num, sizeof num, "%lld", (long long)after);
  TM_CHECK(meta_set(e->db, "row_count", num, e->file, err));
  if (sqlite3_exec(e->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    rc = sql_error(err, e->db, "commit failed", e->file);
    goto done;
  }
  e->pending = false;
  /*
   * Move the commit into the database file now, where its pages get their
   * checksums (cksum.c); PASSIVE never waits for readers. Failing is harmless:
   * the WAL keeps the pages and the next checkpoint moves them.
   */
  if (!e->scratch) {
    int ck = sqlite3_wal_checkpoint_v2(e->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (ck != SQLITE_OK && ck != SQLITE_BUSY)
      tm_log(TM_LOG_WARN, e->base.cfg.dataset, "%s: checkpoint failed (%s); the WAL keeps the commit",
             e->file, sqlite3_errstr(ck));
  }
  info->rows_written = t->inserted + t->updated;
  info->rows_deleted = t->deleted;
  memcpy(info->rows_superseded, t->sup, sizeof t->sup);
  info->rows_after = after;
done:
  if (rc < 0 && !sqlite3_get_autocommit(e->db)) sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
  tm_buf_dispose(&sql);
  txn_free(t);
  tm_engine__writer_release(&e->base);
  return rc;
}

static void sq_abort(tm_engine_txn *tb) {
  sq_txn *t = (sq_txn *)tb;
  sq_engine *e = sq_of(tb->engine);
  sqlite3_finalize(t->ins);
  t->ins = NULL;
  if (!sqlite3_get_autocommit(e->db)) sqlite3_exec(e->db, "ROLLBACK", NULL, NULL, NULL);
  txn_free(t);
  tm_engine__writer_release(&e->base);
}

/* ---- reads ----------------------------------------------------------------------
 *
 * Each read is one SQLite read transaction on a pooled connection: one
 * committed state. A replacement not yet committed (pending) holds nothing.
 */

/* Takes a pooled connection and starts a read transaction on it. */
static int read_begin(sq_engine *e, sqlite3 **out, tm_error *err) {
  sqlite3 *db = NULL;
  TM_TRY(pool_take(e, &db, err));
  int rc = exec(db, "BEGIN", e->file, err);
  if (rc < 0) {
    pool_put(e, db);
    return rc;
  }
  *out = db;
  return TM_OK;
}

static void read_end(sq_engine *e, sqlite3 *db) {
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  pool_put(e, db);
}

static int read_state_on(sqlite3 *db, tm_kv *out, const char *name, tm_error *err) {
  sqlite3_stmt *st;
  TM_TRY(prepare(db, "SELECT key, value FROM main._tm_state ORDER BY rowid", &st, name, err));
  int rc = TM_OK, s;
  while (rc == TM_OK && (s = sqlite3_step(st)) == SQLITE_ROW)
    rc = tm_kv_set(out, (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1), err);
  if (rc == TM_OK && s != SQLITE_DONE) rc = sql_error(err, db, "cannot read state", name);
  sqlite3_finalize(st);
  return rc;
}

static int sq_read_state(tm_engine *base, tm_kv *out, tm_error *err) {
  sq_engine *e = sq_of(base);
  if (e->pending) return TM_OK;
  sqlite3 *db;
  TM_TRY(read_begin(e, &db, err));
  int rc = read_state_on(db, out, e->file, err);
  read_end(e, db);
  return rc;
}

static int sq_row_count(tm_engine *base, int64_t *out, tm_error *err) {
  sq_engine *e = sq_of(base);
  *out = 0;
  if (e->pending) return TM_OK;
  sqlite3 *db;
  TM_TRY(read_begin(e, &db, err));
  int rc = read_count(db, out, e->file, err);
  read_end(e, db);
  return rc;
}

/*
 * quick_check reads every page of every table and index: their checksums
 * (cksum.c) catch damaged values, quick_check the structure.
 */
static int sq_verify(tm_engine *base, tm_error *err) {
  sq_engine *e = sq_of(base);
  if (e->pending) return TM_OK;
  sqlite3 *db;
  TM_TRY(read_begin(e, &db, err));
  sqlite3_stmt *st = NULL;
  int rc = prepare(db, "PRAGMA quick_check", &st, e->file, err);
  if (rc == TM_OK) {
    int s = sqlite3_step(st);
    const char *txt = s == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (s != SQLITE_ROW && sqlite3_extended_errcode(db) == SQLITE_IOERR_DATA)
      rc = sql_error(err, db, "damaged", e->file ? e->file : "memory");
    else if (s != SQLITE_ROW || !txt || strcmp(txt, "ok") != 0)
      rc = tm_error_set(err, TM_ECORRUPT, "%s: damaged: %s", e->file ? e->file : "memory",
                        txt ? txt : sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  read_end(e, db);
  return rc;
}

/* One aggregate of one column into a tm_value (payload copied into *owned). */
static int agg_value(sq_engine *e, sqlite3 *db, const char *fn, size_t col, tm_value *out,
                     char **owned, bool *found, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 20);
  sqlite3_stmt *st = NULL;
  const tm_type *t = &e->base.schema.cols[col].type;
  int rc = tm_buf_printf(&sql, err, "SELECT %s(", fn);
  if (rc == TM_OK) rc = quote_ident(&sql, e->base.schema.cols[col].name, NULL, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, ") FROM main.%s", e->table_q);
  if (rc == TM_OK) rc = prepare(db, sql.ptr, &st, e->file, err);
  if (rc == TM_OK && sqlite3_step(st) != SQLITE_ROW) rc = sql_error(err, db, "cannot read bounds", e->file);
  if (rc == TM_OK) rc = tm_sqltype_to_value(t, sqlite3_column_value(st, 0), out, owned, err);
  if (rc == TM_OK) *found = !out->is_null;
  sqlite3_finalize(st);
  tm_buf_dispose(&sql);
  return rc;
}

static int sq_bounds(tm_engine *base, size_t col, tm_engine_bounds *out, tm_error *err) {
  sq_engine *e = sq_of(base);
  if (e->pending) return TM_OK;
  sqlite3 *db;
  TM_TRY(read_begin(e, &db, err));
  bool f1 = false, f2 = false;
  int rc = agg_value(e, db, "min", col, &out->min, &out->owned[0], &f1, err);
  if (rc == TM_OK) rc = agg_value(e, db, "max", col, &out->max, &out->owned[1], &f2, err);
  read_end(e, db);
  if (rc < 0) tm_engine_bounds_dispose(out);
  else out->found = f1 && f2;
  return rc;
}

/* Whether SQL comparison on the stored form orders exactly like tm_value_cmp. */
static bool sql_order_exact(const tm_type *t) {
  switch (t->id) {
    case TM_TYPE_UINT64: return false; /* stored as int64 bits */
    case TM_TYPE_DECIMAL128: return t->precision <= 15;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: return false; /* NaN is stored as text */
    default: return true;
  }
}

static int add_term_sql(tm_buf *sql, const tm_pred_term *term, int *n_params, tm_error *err) {
  static const char *const ops[] = {"=", "<", "<=", ">", ">="};
  TM_TRY(quote_ident(sql, term->column, NULL, err));
  switch (term->op) {
    case TM_PRED_IS_NULL: return tm_buf_puts(sql, " IS NULL", err);
    case TM_PRED_IS_NOT_NULL: return tm_buf_puts(sql, " IS NOT NULL", err);
    case TM_PRED_IN:
      TM_TRY(tm_buf_puts(sql, " IN (", err));
      for (size_t i = 0; i < term->n_in; i++) TM_TRY(tm_buf_printf(sql, err, "%s?%d", i ? ", " : "", ++*n_params));
      if (term->n_in == 0) TM_TRY(tm_buf_puts(sql, "NULL", err));
      return tm_buf_putc(sql, ')', err);
    default: return tm_buf_printf(sql, err, " %s ?%d", ops[term->op], ++*n_params);
  }
}

static void scan_free(sq_scan *sc) {
  sqlite3_finalize(sc->st);
  sq_engine *e = sc->base.engine ? sq_of(sc->base.engine) : NULL;
  if (sc->db && e && !sc->borrowed) read_end(e, sc->db);
  tm_schema_dispose(&sc->out_schema);
  tm_free(sc->cols);
  tm_predicate_dispose(&sc->residual);
  tm_engine_release(sc->base.engine);
  tm_free(sc);
}

/* Adds schema column idx (idx == n_cols: the rowid) to the scanned columns. */
static int add_scan_col(sq_scan *sc, const tm_schema *s, size_t idx, tm_error *err) {
  for (size_t i = 0; i < sc->n_cols; i++)
    if (sc->cols[i] == idx) return TM_OK;
  sc->cols[sc->n_cols++] = idx;
  if (idx == s->n_cols)
    return tm_schema_add(&sc->out_schema, ROWID_COLUMN, tm_type_of(TM_TYPE_INT64), false, -1, err);
  const tm_column *c = &s->cols[idx];
  return tm_schema_add(&sc->out_schema, c->name, c->type, c->nullable, c->field_id, err);
}

/*
 * A scan in a read transaction of its own (conn NULL), or on a connection the
 * caller keeps inside its transaction (a statement's share, or the writer's).
 */
static int scan_open(tm_engine *base, sqlite3 *conn, const size_t *cols, size_t n_cols,
                     const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  sq_engine *e = sq_of(base);
  const tm_schema *s = &e->base.schema;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = TM_OK;
  sq_scan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  sc->base.engine = tm_engine_retain(base);
  tm_schema_init(&sc->out_schema);
  tm_predicate_init(&sc->residual);
  size_t n_terms = pred ? pred->n_terms : 0;
  sc->cols = tm_calloc(s->n_cols + n_cols + n_terms + 2, sizeof *sc->cols);
  if (!sc->cols) {
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
  /* Terms SQL orders exactly go into WHERE; the rest are evaluated here. */
  for (size_t i = 0; i < n_terms; i++) {
    const tm_pred_term *term = &pred->terms[i];
    if (sql_order_exact(&term->type)) continue;
    TM_CHECK(add_scan_col(sc, s, (size_t)tm_schema_find(s, term->column), err));
    TM_CHECK(tm_predicate_add_term(&sc->residual, term, err));
  }
  TM_CHECK(tm_buf_puts(&sql, "SELECT ", err));
  for (size_t i = 0; i < sc->n_cols; i++) {
    if (i) TM_CHECK(tm_buf_puts(&sql, ", ", err));
    if (sc->cols[i] == s->n_cols) TM_CHECK(tm_buf_puts(&sql, "rowid", err));
    else TM_CHECK(quote_ident(&sql, s->cols[sc->cols[i]].name, NULL, err));
  }
  if (sc->n_cols == 0) TM_CHECK(tm_buf_puts(&sql, "1", err));
  TM_CHECK(tm_buf_printf(&sql, err, " FROM main.%s", e->table_q));
  int n_params = 0;
  bool first = true;
  for (size_t i = 0; i < n_terms; i++) {
    const tm_pred_term *term = &pred->terms[i];
    if (!sql_order_exact(&term->type)) continue;
    TM_CHECK(tm_buf_puts(&sql, first ? " WHERE " : " AND ", err));
    first = false;
    TM_CHECK(add_term_sql(&sql, term, &n_params, err));
  }
  if (conn) {
    sc->db = conn;
    sc->borrowed = true;
  } else {
    TM_CHECK(read_begin(e, &sc->db, err));
  }
  TM_CHECK(prepare(sc->db, sql.ptr, &sc->st, e->file, err));
  n_params = 0;
  for (size_t i = 0; i < n_terms; i++) {
    const tm_pred_term *term = &pred->terms[i];
    if (!sql_order_exact(&term->type) || term->op == TM_PRED_IS_NULL ||
        term->op == TM_PRED_IS_NOT_NULL)
      continue;
    size_t nv = term->op == TM_PRED_IN ? term->n_in : 1;
    const tm_value *vals = term->op == TM_PRED_IN ? term->in_values : &term->value;
    for (size_t k = 0; k < nv; k++) {
      tm_sqlval sv;
      tm_sqlval_from(&sv, &term->type, &vals[k]);
      if (tm_sqlval_bind(sc->st, ++n_params, &sv) != SQLITE_OK) {
        rc = sql_error(err, sc->db, "cannot bind", e->file);
        goto done;
      }
    }
  }
  *out = &sc->base;
  sc = NULL;
done:
  tm_buf_dispose(&sql);
  if (sc) scan_free(sc);
  return rc;
}

static int sq_scan_open(tm_engine *base, const size_t *cols, size_t n_cols,
                        const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  return scan_open(base, NULL, cols, n_cols, pred, out, err);
}

static int sq_scan_next(tm_engine_scan *scb, tm_batch *out, tm_error *err) {
  sq_scan *sc = (sq_scan *)scb;
  sq_engine *e = sq_of(scb->engine);
  if (sc->done) return TM_ITEROVER;
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, &sc->out_schema, err));
  int rc = TM_OK;
  int64_t n = 0;
  while (n < TM_BATCH_DEFAULT_ROWS) {
    int s = sqlite3_step(sc->st);
    if (s == SQLITE_DONE) {
      sc->done = true;
      break;
    }
    if (s != SQLITE_ROW) {
      rc = sql_error(err, sc->db, "scan failed", e->file);
      break;
    }
    for (size_t c = 0; c < sc->n_cols && rc == TM_OK; c++)
      rc = tm_sqltype_append(&bb.cols[c], &sc->out_schema.cols[c].type,
                             sqlite3_column_value(sc->st, (int)c), err);
    if (rc < 0) break;
    n++;
  }
  tm_batch full;
  tm_batch_init(&full);
  if (rc == TM_OK && n == 0) rc = TM_ITEROVER;
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
  for (size_t i = 0; i < sc->n_proj; i++) idx[i] = i;
  if (rc == TM_OK) rc = tm_batch_project(&kept, idx, sc->n_proj, out, err);
  tm_batch_release(&kept);
  tm_batch_release(&full);
  tm_free(keep);
  tm_free(idx);
  /* A batch the residual emptied: read on (callers get no empty batches). */
  if (rc == TM_OK && out->n_rows == 0) {
    tm_batch_release(out);
    return sq_scan_next(scb, out, err);
  }
  return rc;
}

static void sq_scan_free(tm_engine_scan *scb) { scan_free((sq_scan *)scb); }

static int sq_size_bytes(tm_engine *base, uint64_t *out, tm_error *err) {
  (void)err;
  sq_engine *e = sq_of(base);
  uint64_t total = 0;
  const char *sfx[] = {"", "-wal"};
  for (size_t i = 0; i < 2; i++) {
    char *p = tm_asprintf("%s%s", e->file, sfx[i]);
    struct stat st;
    if (p && stat(p, &st) == 0) total += (uint64_t)st.st_size;
    tm_free(p);
  }
  *out = total;
  return TM_OK;
}

/* ---- the tm_scan provider: SQL over the table ---------------------------------------
 *
 * Every scan of this table within one DuckDB statement (a self-join reads it
 * twice) shares one SQLite read transaction, so the statement sees one
 * committed state (C5): the scans of a statement bind with the same query
 * id, and the first binds a share (tm_engine_share, engine_int.h: a pooled
 * connection inside its read transaction) that the last unbind ends.
 */

typedef struct sq_handle {
  tm_engine *engine;      /* one reference */
  tm_engine_share *share; /* NULL for the writer's provider */
} sq_handle;

typedef struct sq_cursor {
  tm_engine_scan *scan;   /* owned */
  tm_engine_share *share; /* borrowed from the handle, or NULL */
} sq_cursor;

/* A share's read (tm_engine_shares.begin): a pooled connection inside its read transaction,
 * started by its first read (the state the statement sees). */
static int share_begin(void *backend, void **conn, tm_error *err) {
  sq_engine *e = backend;
  sqlite3 *db = NULL;
  TM_TRY(read_begin(e, &db, err));
  int64_t rows;
  int rc = e->pending ? TM_OK : read_count(db, &rows, e->file, err);
  if (rc < 0) {
    read_end(e, db);
    return rc;
  }
  *conn = db;
  return TM_OK;
}

static void share_end(void *backend, void *conn) { read_end(backend, conn); }

static int bind_handle(sq_engine *e, uint64_t query, bool writer, void **handle, tm_schema *out,
                       tm_error *err) {
  tm_engine *ref = tm_engine__try_retain(&e->base);
  if (!ref) return tm_error_set(err, TM_ENOTFOUND, "dataset '%s' is closing", e->base.cfg.dataset);
  sq_handle *h = tm_calloc(1, sizeof *h);
  int rc = h ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_schema_copy(out, &e->base.schema, err);
  if (rc == TM_OK) rc = tm_schema_add(out, ROWID_COLUMN, tm_type_of(TM_TYPE_INT64), false, -1, err);
  if (rc == TM_OK && !writer) rc = tm_engine__share_take(&e->shares, query, &h->share, err);
  if (rc < 0) {
    tm_free(h);
    tm_engine_release(ref);
    return rc;
  }
  h->engine = ref;
  *handle = h;
  return TM_OK;
}

static int prov_bind(void *payload, uint64_t query, void **handle, tm_schema *out, tm_error *err) {
  return bind_handle(payload, query, false, handle, out, err);
}

static int prov_bind_writer(void *payload, uint64_t query, void **handle, tm_schema *out,
                            tm_error *err) {
  return bind_handle(payload, query, true, handle, out, err);
}

static int prov_open(void *handle, const size_t *cols, size_t n_cols, const tm_predicate *pred,
                     void **cursor, tm_error *err) {
  sq_handle *h = handle;
  sq_cursor *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  c->share = h->share;
  int rc;
  if (h->share) {
    pthread_mutex_lock(&h->share->mu);
    rc = scan_open(h->engine, h->share->conn, cols, n_cols, pred, &c->scan, err);
    pthread_mutex_unlock(&h->share->mu);
  } else {
    rc = scan_open(h->engine, sq_of(h->engine)->db, cols, n_cols, pred, &c->scan, err);
  }
  if (rc < 0) {
    tm_free(c);
    return rc;
  }
  if (pred && pred->n_terms && tm_log_enabled(TM_LOG_DEBUG)) {
    tm_buf d = TM_BUF_INIT(4096);
    if (tm_predicate_describe(pred, &d, NULL) != TM_OK) tm_buf_clear(&d);
    tm_log(TM_LOG_DEBUG, h->engine->cfg.dataset, "sqlite scan: pushed [%s]", tm_buf_cstr(&d));
    tm_buf_dispose(&d);
  }
  *cursor = c;
  return TM_OK;
}

static int prov_next(void *cursor, tm_batch *out, tm_error *err) {
  sq_cursor *c = cursor;
  if (c->share) pthread_mutex_lock(&c->share->mu);
  int rc = sq_scan_next(c->scan, out, err);
  if (c->share) pthread_mutex_unlock(&c->share->mu);
  return rc;
}

static void prov_close(void *cursor) {
  sq_cursor *c = cursor;
  if (!c) return;
  if (c->share) pthread_mutex_lock(&c->share->mu);
  sq_scan_free(c->scan);
  if (c->share) pthread_mutex_unlock(&c->share->mu);
  tm_free(c);
}

static void prov_unbind(void *handle) {
  sq_handle *h = handle;
  if (h->share) tm_engine__share_put(&sq_of(h->engine)->shares, h->share);
  tm_engine_release(h->engine);
  tm_free(h);
}

static void prov_release(void *payload) { sq_free(payload); }
static void prov_release_none(void *payload) { (void)payload; }

static int register_provider(sq_engine *e, tm_error *err) {
  static uint64_t counter;
  uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char *name = tm_asprintf("sqlite$%llu$%s", (unsigned long long)n, e->base.cfg.dataset);
  if (!name) return tm_error_nomem(err);
  if (tm_schema_find(&e->base.schema, ROWID_COLUMN) >= 0) {
    tm_free(name);
    return tm_error_set(err, TM_EINVALID, "dataset '%s': the column name %s is reserved",
                        e->base.cfg.dataset, ROWID_COLUMN);
  }
  char *wname = tm_asprintf("%s$writer", name);
  tm_scan_provider w = {e, prov_bind_writer, prov_open, prov_next, prov_close, prov_unbind,
                        prov_release_none};
  int rc = wname ? tm_db__provider_add(e->base.db, wname, &w, err) : tm_error_nomem(err);
  if (rc < 0) {
    tm_free(name);
    tm_free(wname);
    return rc;
  }
  tm_scan_provider p = {e, prov_bind, prov_open, prov_next, prov_close, prov_unbind, prov_release};
  rc = tm_db__provider_add(e->base.db, name, &p, err);
  if (rc < 0) {
    tm_db__provider_remove(e->base.db, wname);
    tm_free(name);
    tm_free(wname);
    return rc;
  }
  e->provider = name;
  e->provider_w = wname;
  return TM_OK;
}

const char *tm_engine__sqlite_provider(tm_engine *base) { return sq_of(base)->provider; }

static int sq_relation(tm_engine *base, tm_buf *out, tm_error *err) {
  sq_engine *e = sq_of(base);
  TM_TRY(tm_buf_puts(out, "(SELECT * EXCLUDE (" ROWID_COLUMN ") FROM tm_scan(", err));
  TM_TRY(tm_engine__quote_string(out, e->provider, strlen(e->provider), err));
  return tm_buf_puts(out, "))", err);
}

static const tm_engine_vtable k_vtable = {
    TM_ENGINE_VTABLE_VERSION,
    /* sqlite: either mode, one database file it opens itself, arrival order. */
    {TM_ENGINE_SQLITE, (1u << TM_ENGINE_MEMORY) | (1u << TM_ENGINE_FILE), TM_ENGINE_MEMORY,
     TM_ENGINE_RULE_ARRIVAL, false, false, false, "sqlite_file", "", true},
    sq_open,
    sq_drop,
    sq_close,
    sq_begin,
    sq_write,
    sq_delete_where,
    sq_delete_provenance,
    sq_delete_before,
    sq_commit,
    sq_abort,
    sq_read_state,
    sq_row_count,
    sq_bounds,
    sq_scan_open,
    sq_scan_next,
    sq_scan_free,
    sq_size_bytes,
    sq_relation,
    sq_verify,
    NULL,
    NULL,
};

const tm_engine_vtable *tm_engine__sqlite_vtable(void) { return &k_vtable; }
