/*
 * engine_int.h - what the engine layer's files share and nobody else sees
 * (engine layer, private).
 *
 * The base structs every backend embeds and the options resolved against the
 * schema; time-column ordering; and the DuckDB toolkit every part of the
 * layer uses: connections and statements with errors mapped to tm codes, the
 * type map between tm_type and DuckDB, moving rows between tm_batch and
 * DuckDB vectors, typed values for parameters, and the registry of scans that
 * the tm_scan table function serves (sqlite datasets, federated sources,
 * refresh_sql's source).
 */
#ifndef TM_ENGINE_ENGINE_INT_H
#define TM_ENGINE_ENGINE_INT_H

#include <duckdb.h>
#include <pthread.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "util/buf.h"

/* ---- engines ------------------------------------------------------------ */

/* An index of the table (tm_engine_index), resolved against the schema. */
typedef struct tm_engine_ix {
  size_t *cols;           /* owned: schema indices */
  size_t n_cols;
  bool unique;
  char name[24];          /* "tm_ix_" and 16 hex digits of a hash of the definition */
} tm_engine_ix;

/* The options, resolved against the schema once at open. */
typedef struct tm_engine_config {
  char *dataset;          /* owned */
  tm_engine_mode mode;
  char *path;             /* owned; NULL in memory mode */
  size_t *pk;             /* owned: schema indices of the key columns */
  size_t n_pk;
  int time_col;           /* schema index, or -1 */
  tm_time_format time_format; /* resolved (never UNSET when time_col >= 0) */
  tm_on_conflict on_conflict;
  int busy_timeout_ms;
  tm_engine_ix *indexes;  /* owned */
  size_t n_indexes;
} tm_engine_config;

struct tm_engine {
  const tm_engine_vtable *vt;
  int refs;               /* atomic */
  tm_db *db;              /* one reference */
  tm_schema schema;       /* owned */
  tm_engine_config cfg;   /* owned */
  int txn_open;           /* atomic: the writer slot (the open write transaction) */
  const bool *json_cols;  /* traits.nested_as_json backends that tell JSON columns from text
                             ones (postgres: jsonb): borrowed, one per column; else NULL */
};

struct tm_engine_txn {
  tm_engine *engine;      /* not a reference: the engine outlives its transaction */
  tm_txn_kind kind;
};

struct tm_engine_scan {
  tm_engine *engine;      /* one reference */
};

/** Backends: fills e's base fields (db reference, schema copy, resolved config, caps). */
int tm_engine__init_base(tm_engine *e, const tm_engine_vtable *vt, const tm_schema *schema,
                         const tm_engine_options *opts, tm_error *err) TM_WARN_UNUSED;
/** A new reference, or NULL when e is closing (its last reference went). */
tm_engine *tm_engine__try_retain(tm_engine *e);
/** Backends: frees what tm_engine__init_base allocated. */
void tm_engine__dispose_base(tm_engine *e);
/** Backends: takes/releases the writer slot. TM_ECONFLICT when taken. */
int tm_engine__writer_acquire(tm_engine *e, tm_error *err) TM_WARN_UNUSED;
void tm_engine__writer_release(tm_engine *e);
/** Backends: checks that b's columns match the schema (names, types, order). */
int tm_engine__check_batch(const tm_engine *e, const tm_batch *b, tm_error *err)
    TM_WARN_UNUSED;
/** Process-wide SQLite settings, applied once before the first connection. */
void tm_engine__sqlite_setup(void);
/**
 * The tm_scan provider a query of e's dataset reads (the sqlite engine's
 * relation), to post WHERE-clause terms to; NULL when DuckDB reads the rows
 * itself (cayenne, duckdb, arrow).
 */
const char *tm_engine__scan_provider(tm_engine *e);
const char *tm_engine__sqlite_provider(tm_engine *e);
/** The vtable of a kind. */
const tm_engine_vtable *tm_engine__vtable(tm_engine_kind kind);
/* Each backend's vtables (functions, not exported data, so that sanitizer
 * builds export only tm_ symbols). */
const tm_engine_vtable *tm_engine__sqlite_vtable(void);
const tm_engine_vtable *tm_engine__duck_vtable(tm_engine_kind kind);
const tm_engine_vtable *tm_engine__pg_vtable(void);
const char *tm_engine__pg_provider(tm_engine *e);
/* Backups of the DuckDB engines (backup.c dispatches; sqlite's are in backup.c). */
int tm_engine__duck_backup(tm_engine *e, const char *dest_path, tm_error *err) TM_WARN_UNUSED;
/** TM_ECORRUPT unless path is a DuckDB-engine backup of kind (its _tm_meta). */
int tm_engine__duck_check_backup(tm_db *db, tm_engine_kind kind, const char *path, tm_error *err)
    TM_WARN_UNUSED;
/** The DuckDB database file of a DuckDB-engine acceleration at opts->path. *out: tm_free. */
int tm_engine__duck_file(tm_engine_kind kind, const tm_engine_options *opts, char **out,
                         tm_error *err) TM_WARN_UNUSED;

/**
 * A text form of a schema that keeps every type detail (stored by file-mode
 * engines to check or recover the schema at reopen): one line per column,
 * `arrow-format|nullable|uuid|field_id|name-length|name`.
 */
int tm_engine__schema_encode(const tm_schema *s, tm_buf *out, tm_error *err) TM_WARN_UNUSED;
/** Parses tm_engine__schema_encode's text into an initialised, empty schema. TM_ECORRUPT. */
int tm_engine__schema_decode(tm_schema *out, const char *text, size_t len, tm_error *err)
    TM_WARN_UNUSED;
/**
 * The options that must not change between opens of a file-mode acceleration
 * (primary key and time column), as text.
 */
int tm_engine__options_fingerprint(const tm_engine *e, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Appends `CREATE [UNIQUE] INDEX [IF NOT EXISTS] <prefix><name> ON <table_sql> (cols)` for
 * index ix of e (prefix: a schema qualifier such as "main.", or ""). The index name is
 * ix->name, quoted.
 */
int tm_engine__index_sql(tm_buf *b, const tm_engine *e, const tm_engine_ix *ix, const char *prefix,
                         const char *table_sql, tm_error *err) TM_WARN_UNUSED;
/** Whether name is a tidemark index name (tm_ix_...), and then whether e's config has it. */
bool tm_engine__index_wanted(const tm_engine *e, const char *name, bool *ours);
/** Appends name as a double-quoted SQL identifier. */
int tm_engine__quote_ident(tm_buf *b, const char *name, tm_error *err) TM_WARN_UNUSED;
/** Appends s as a single-quoted SQL string literal. */
int tm_engine__quote_string(tm_buf *b, const char *s, size_t len, tm_error *err) TM_WARN_UNUSED;

/* ---- statement shares of the scan-provider engines (sqlite, postgres; C5) ---
 *
 * Every scan of one DuckDB statement over an engine that serves DuckDB
 * through tm_scan binds with the statement's query id; the scans share one
 * read transaction on one of the engine's connections, so that the
 * statement sees one committed state. The first bind of a query takes the
 * share (begin: a pooled connection inside its read transaction), the last
 * unbind ends it (end). DuckDB may run the scans on different threads: the
 * share's mu serializes their commands on the connection.
 */
typedef struct tm_engine_share {
  uint64_t query;
  void *conn;             /* the backend's connection (sqlite3 *, PGconn *), inside its read */
  pthread_mutex_t mu;     /* one command at a time on conn */
  int refs;               /* bound handles; under the list's mutex */
  struct tm_engine_share *next;
} tm_engine_share;

/* A backend's list of shares and what begins and ends a share's read. */
typedef struct tm_engine_shares {
  pthread_mutex_t *mu;    /* borrowed: the backend's mutex, which guards head */
  tm_engine_share *head;
  int (*begin)(void *backend, void **conn, tm_error *err); /* on failure: no conn left open */
  void (*end)(void *backend, void *conn);
  void *backend;          /* borrowed: the begin/end argument */
} tm_engine_shares;

/* The share of query (a reference), begun when it has none yet. Two first binds
 * of one query at once would begin two shares: DuckDB binds a statement's scans
 * on the thread that plans it, one after another. */
int tm_engine__share_take(tm_engine_shares *l, uint64_t query, tm_engine_share **out,
                          tm_error *err) TM_WARN_UNUSED;
/* Drops a reference; the last ends the share's read and frees it. */
void tm_engine__share_put(tm_engine_shares *l, tm_engine_share *sh);

/* ---- time column ordering (SPEC A8, C3) --------------------------------- */

/** The time format implied by a column type when the config gives none. */
tm_time_format tm_engine__default_time_format(const tm_type *t);

/* ---- DuckDB: the instance ------------------------------------------------
 *
 * db/db.c. Statements that change the instance's catalog (ATTACH, DETACH,
 * views) run on one admin connection under a mutex, so that two engines
 * opening at once cannot interleave their DDL.
 */

/** The DuckDB database handle; lives as long as db. */
duckdb_database tm_db__handle(tm_db *db);
/** A new connection (duckdb_disconnect it). */
int tm_db__connect(tm_db *db, duckdb_connection *out, tm_error *err) TM_WARN_UNUSED;
/** Runs sql on the admin connection, under its mutex. */
int tm_db__admin_exec(tm_db *db, const char *sql, tm_error *err) TM_WARN_UNUSED;
/**
 * Attaches the database file at path (or, path NULL, a new in-memory
 * database) and returns its catalog name (*alias_out, tm_free; quote it in
 * SQL). A file attached already is shared: its reference count grows and the
 * same name comes back (DuckDB attaches a file once). name_hint (the dataset)
 * makes the name readable. Errors: TM_EINVALID (a folder the instance may not
 * use), TM_ECONFLICT (another process holds the file), TM_ECORRUPT, TM_EIO.
 */
int tm_db__attach(tm_db *db, const char *path, const char *name_hint, char **alias_out,
                  tm_error *err) TM_WARN_UNUSED;
/** Drops a reference taken by tm_db__attach; the last one detaches. */
void tm_db__detach(tm_db *db, const char *alias);
/** Whether path lies in one of db's folders (file-mode accelerations must). */
bool tm_db__path_allowed(const tm_db *db, const char *path);
/** The settings tm_db_open sets to their own values (db.c k_pinned_settings); *n: how many. */
const char *const *tm_db__pinned_settings(size_t *n);
/* The scan registry (scan.c) that db.c keeps: set up at open, freed at close. */
typedef struct tm_scan_registry tm_scan_registry;
tm_scan_registry **tm_db__registry(tm_db *db);
int tm_db__scan_register(tm_db *db, duckdb_connection c, tm_error *err) TM_WARN_UNUSED;
void tm_db__scan_dispose(tm_db *db);

/**
 * The tm code for a DuckDB error type: out of memory -> TM_ENOMEM, interrupt
 * -> TM_ECANCELLED, I/O -> TM_EIO, corruption/serialization -> TM_ECORRUPT,
 * permission, parser, binder, catalog, conversion... -> TM_EINVALID,
 * transaction conflicts -> TM_ECONFLICT, others TM_ERROR.
 */
int tm_db__code(duckdb_error_type t);
/** Sets err from a failed result ("what: DuckDB's message"); destroys nothing. */
int tm_db__result_error(tm_error *err, duckdb_result *r, const char *what);
/** Runs one statement, discarding its result. what names it in errors. */
int tm_db__exec(duckdb_connection c, const char *sql, const char *what, tm_error *err)
    TM_WARN_UNUSED;
/** Runs one statement whose failure changes nothing for the caller (a ROLLBACK). */
void tm_db__exec_quiet(duckdb_connection c, const char *sql);
/** Runs a query whose first row's first column is an integer (NULL reads as 0). */
int tm_db__query_int64(duckdb_connection c, const char *sql, int64_t *out, tm_error *err)
    TM_WARN_UNUSED;
/** Runs a prepared statement (parameters bound), discarding its result; *changed: rows. */
int tm_db__exec_prepared(duckdb_prepared_statement ps, const char *what, int64_t *changed,
                         tm_error *err) TM_WARN_UNUSED;

/*
 * The watchdog: interrupts a connection's running statement once its
 * deadline passes (the query time limit, SPEC D4). tm_db__watch returns a
 * token for tm_db__unwatch, which reports whether the deadline fired.
 */
uint64_t tm_db__watch(tm_db *db, duckdb_connection c, int64_t deadline_ns);
bool tm_db__unwatch(tm_db *db, uint64_t token);

/* ---- DuckDB: types ---------------------------------------------------------
 *
 * db/types.c. The tm_type of every stored column maps onto one DuckDB type:
 *
 *   bool BOOLEAN; int8..int64 TINYINT..BIGINT; uint8..uint64 UTINYINT..UBIGINT;
 *   float32 FLOAT; float64 DOUBLE (NaN and infinities kept); decimal(p,s)
 *   DECIMAL(p,s); utf8 VARCHAR; binary and fixed(n) BLOB; uuid UUID; date32
 *   DATE; time64(us) TIME, time64(ns) TIME_NS; timestamp(s|ms|us|ns) without
 *   a zone TIMESTAMP_S|_MS|TIMESTAMP|TIMESTAMP_NS; with a zone (UTC)
 *   TIMESTAMPTZ for s, ms and us, and TIMESTAMP_NS for ns (DuckDB has no
 *   nanosecond TIMESTAMPTZ; the values are UTC instants either way).
 *
 * The map is exact: every value reads back as it was written, which the A3
 * de-duplication (whole-row equality) depends on.
 */

/** The DuckDB type of t (duckdb_destroy_logical_type it). */
duckdb_logical_type tm_duck_type(const tm_type *t);
/** The DuckDB SQL name of t's type ("TIMESTAMPTZ", "DECIMAL(18,3)"); buf >= 32 bytes. */
void tm_duck_type_sql(const tm_type *t, char *buf, size_t cap);
/** The DuckDB SQL type of t appended to b, nested types included ("INTEGER[]",
 * "STRUCT(\"a\" BIGINT)", "MAP(VARCHAR, DOUBLE)"). */
int tm_duck_type_sql_buf(tm_buf *b, const tm_type *t, tm_error *err) TM_WARN_UNUSED;
/**
 * The tm_type of a DuckDB type (result columns of refresh_sql). hint, when
 * not NULL, is the type of a source column of the same name: kept when it
 * maps to the same DuckDB type (a fixed(16) stays fixed(16), a
 * timestamp(ms, UTC) stays so). TM_EUNSUPPORTED for types tidemark cannot
 * store (HUGEINT, INTERVAL, LIST, ...), naming `what`.
 */
int tm_duck_type_to_tm(duckdb_logical_type lt, const tm_type *hint, tm_type *out,
                       const char *what, tm_error *err) TM_WARN_UNUSED;
/** A DuckDB value of v (a value of type t; NULL allowed). duckdb_destroy_value it. */
duckdb_value tm_duck_value(const tm_type *t, const tm_value *v);

/* ---- DuckDB: rows -----------------------------------------------------------
 *
 * db/vector.c. Rows move between a tm_batch (Arrow layout) and DuckDB vectors
 * of the mapped types, at most duckdb_vector_size() rows at a time.
 */

/**
 * Writes rows [from, from + n) of column c (of type t) into vector v, rows
 * at..at+n-1 (the rows before at are kept). v has t's DuckDB type;
 * at + n <= duckdb_vector_size().
 */
int tm_duck_vector_write(duckdb_vector v, idx_t at, const tm_colview *c, int64_t from, idx_t n,
                         tm_error *err) TM_WARN_UNUSED;
/** Appends n rows of vector v (of t's DuckDB type) to cb (of type t). */
int tm_duck_vector_read(duckdb_vector v, idx_t n, tm_colbuilder *cb, tm_error *err)
    TM_WARN_UNUSED;
/* ---- DuckDB: feeds -----------------------------------------------------------
 *
 * db/feed.c. Batches go into a table through an Arrow stream that one
 * INSERT ... SELECT reads on DuckDB's threads, so that DuckDB converts and
 * compresses row groups in parallel, in arrival order.
 *
 * A feed owns the connection from start to finish: the caller runs nothing
 * else on it meanwhile (a statement that reads the table comes after
 * tm_duck_feed_finish). The connection must be inside a transaction.
 */
typedef struct tm_duck_feed tm_duck_feed;

/**
 * Starts INSERT INTO target_sql (a quoted table name) SELECT * FROM the
 * stream, on con, whose batches have the schema types (the table's column
 * types, in its column order). view_schema (quoted "catalog".schema) is
 * where the stream's view lives until the feed ends: a schema of the
 * database the transaction writes to.
 */
int tm_duck_feed_start(duckdb_connection con, const char *view_schema, const char *target_sql,
                       const tm_schema *types, tm_duck_feed **out, tm_error *err) TM_WARN_UNUSED;
/**
 * Hands b's rows to the insert, taking b's buffers (b is empty afterwards,
 * whatever the outcome). Blocks while the feed holds as many batches as it
 * may. Values DuckDB would take on trust are checked first: text that is
 * not UTF-8, a zoned timestamp past DuckDB's range (TM_ECORRUPT,
 * TM_EINVALID, naming the column and row; the batch is dropped, the feed
 * goes on). An error of the insert itself (TM_ERROR) ends the feed: the
 * caller then cancels it.
 */
int tm_duck_feed_put(tm_duck_feed *f, tm_batch *b, tm_error *err) TM_WARN_UNUSED;
/** Ends the stream, waits for the insert and frees f; *rows_out: the rows it stored. */
int tm_duck_feed_finish(tm_duck_feed *f, int64_t *rows_out, tm_error *err) TM_WARN_UNUSED;
/**
 * Stops the insert with an error and frees f. The connection's transaction
 * is then aborted: the caller rolls it back.
 */
void tm_duck_feed_cancel(tm_duck_feed *f);

/*
 * A streaming query result read as tm_batches of a known schema: each batch
 * holds up to `rows` rows (the chunks of DuckDB, gathered).
 */
typedef struct tm_duck_reader {
  duckdb_result result;     /* owned: a streaming or materialized result */
  bool has_result;
  const tm_schema *schema;  /* borrowed: the result's columns as tm types */
  int64_t rows;             /* batch size */
  bool done;
} tm_duck_reader;

/** Takes r (duckdb_execute_prepared_streaming's result) into the reader. */
void tm_duck_reader_init(tm_duck_reader *rd, duckdb_result *r, const tm_schema *schema,
                         int64_t rows);
/** The next batch (never empty on success), or TM_ITEROVER. */
int tm_duck_reader_next(tm_duck_reader *rd, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
void tm_duck_reader_dispose(tm_duck_reader *rd);

/* ---- DuckDB: the tm_scan table function -------------------------------------
 *
 * db/scan.c. `tm_scan('name')` reads a relation that a provider registered
 * under `name`: a sqlite dataset, a federated source, the source of a
 * refresh_sql. At bind (each query) the provider names the columns; at init
 * it starts a scan of the columns the query uses (projection pushdown) with a
 * predicate to prune with (the rows are filtered by DuckDB again). Pushdown
 * predicates come from the registry: a SQL session that extracted terms of a
 * query's WHERE clause (sql/pushdown.c) posts them for its connection.
 */

typedef struct tm_scan_provider {
  void *payload;
  /**
   * A handle for one query: the columns it has (out: initialised, empty).
   * query identifies the query's connection: scans bound together belong to
   * one statement, which must read one state (C5).
   */
  int (*bind)(void *payload, uint64_t query, void **handle, tm_schema *out, tm_error *err);
  /** Starts reading columns cols (schema indices) of the bound relation; pred may be NULL. */
  int (*open)(void *handle, const size_t *cols, size_t n_cols, const tm_predicate *pred,
              void **cursor, tm_error *err);
  /** The next batch of the projected columns (never empty), or TM_ITEROVER. */
  int (*next)(void *cursor, tm_batch *out, tm_error *err);
  void (*close)(void *cursor);
  void (*unbind)(void *handle);
  /** The provider was removed and no query uses it any more. */
  void (*release)(void *payload);
} tm_scan_provider;

/** Registers p under name (TM_ECONFLICT when taken). */
int tm_db__provider_add(tm_db *db, const char *name, const tm_scan_provider *p, tm_error *err)
    TM_WARN_UNUSED;
/** Unregisters name; its release runs once the last query using it ends. */
void tm_db__provider_remove(tm_db *db, const char *name);
/**
 * Posts the predicate (copied) that scans of relation `name` started by
 * connection c should prune with, until tm_db__pushdown_clear(c).
 */
int tm_db__pushdown_post(tm_db *db, duckdb_connection c, const char *name,
                         const tm_predicate *pred, tm_error *err) TM_WARN_UNUSED;
void tm_db__pushdown_clear(tm_db *db, duckdb_connection c);

#endif
