/*
 * engine.h - one dataset's acceleration: the engine interface (engine layer).
 *
 * An engine stores the rows of one dataset and shows them to SQL as a table
 * of the process's DuckDB instance (db.h, sql.h). Five backends plug in
 * through tm_engine_vtable (SPEC section 3):
 *
 *   cayenne  file mode only. A DuckDB database file in the dataset's folder.
 *            Keyed rows: newest time_column wins (A8).
 *   duckdb   memory and file mode. A DuckDB database (file: Spice's
 *            duckdb_file). Keyed rows: arrival order (on_conflict drop | upsert).
 *   arrow    memory mode only. An in-memory DuckDB database. Arrival order.
 *   sqlite   memory and file mode. One SQLite table, scanned by DuckDB.
 *            Arrival order.
 *   postgres file mode only. One table of an external PostgreSQL server
 *            (libpq), scanned by DuckDB; several tidemark processes may
 *            share it (tm_engine_lease_take). Arrival order.
 *
 * The refresh layer drives an engine through a write transaction (begin,
 * write batches, delete, commit with a state map, or abort). A commit is
 * atomic: rows, deletes and the state map become visible together, and in
 * file mode they survive a crash together or not at all (SPEC D1). Readers
 * (SQL, and the reads below) see the state before or after a commit, never
 * part of one (SPEC C5): each read is one DuckDB (or SQLite WAL) transaction.
 *
 * Threads: tm_engine_read_state, tm_engine_row_count, tm_engine_column_bounds,
 * tm_engine_scan and tm_engine_size_bytes may be called from any thread at
 * any time. At most one write transaction is open per engine (a second
 * tm_engine_begin returns TM_ECONFLICT); its functions are called by one
 * thread at a time. A backup (backup.h) is a read: it runs beside writes.
 *
 * Ownership: tm_engine_open returns an engine holding one reference; pass it
 * to tm_engine_release. A scan holds a reference on its engine.
 *
 * Errors: every function returning int returns 0 or a negative tm_code and
 * fills err (may be NULL). Expected codes are listed per function.
 */
#ifndef TM_ENGINE_ENGINE_H
#define TM_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/db.h"
#include "format/arrow/batch.h"
#include "format/arrow/schema.h"
#include "format/predicate.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

typedef enum tm_engine_kind {
  TM_ENGINE_CAYENNE = 0, /* the default */
  TM_ENGINE_ARROW,
  TM_ENGINE_SQLITE,
  TM_ENGINE_DUCKDB,
  TM_ENGINE_POSTGRES, /* a table in an external PostgreSQL server (libpq) */
  TM_ENGINE__COUNT
} tm_engine_kind;

/** Parses "cayenne", "arrow", "sqlite", "duckdb", "postgres" (case-insensitive). TM_EINVALID when unknown. */
int tm_engine_kind_parse(const char *s, tm_engine_kind *out);
const char *tm_engine_kind_name(tm_engine_kind k);

typedef enum tm_engine_mode {
  TM_ENGINE_MEMORY = 0,
  TM_ENGINE_FILE
} tm_engine_mode;

/** Parses "memory", "file". TM_EINVALID when unknown. */
int tm_engine_mode_parse(const char *s, tm_engine_mode *out);
const char *tm_engine_mode_name(tm_engine_mode m);

/** What a repeated primary key does on an arrival-order engine (SPEC A8). */
typedef enum tm_on_conflict {
  TM_ON_CONFLICT_DROP = 0, /* keep the stored row, or the first of a batch */
  TM_ON_CONFLICT_UPSERT    /* keep the row that arrived last */
} tm_on_conflict;

/** How an engine resolves a repeated primary key (SPEC A8, section 3). */
typedef enum tm_engine_rule {
  TM_ENGINE_RULE_ARRIVAL = 0,   /* duckdb, arrow, sqlite: on_conflict decides by arrival order */
  TM_ENGINE_RULE_NEWEST_BY_TIME /* cayenne: newest time_column wins; ties: later arrival */
} tm_engine_rule;

/**
 * An index of the acceleration's table (Spice's `indexes`): the engine
 * creates it with the table and keeps it across replacements; a unique one
 * makes a commit that would store a duplicate fail (nothing is committed).
 */
typedef struct tm_engine_index {
  char **columns;          /* column names (owned by whoever holds the struct) */
  size_t n_columns;
  bool unique;
} tm_engine_index;

#define TM_ENGINE_OPTIONS_VERSION 2

/*
 * Options for tm_engine_open. Strings and arrays are borrowed for the call
 * only; the engine copies what it keeps.
 */
typedef struct tm_engine_options {
  int version;                     /* TM_ENGINE_OPTIONS_VERSION */
  tm_db *db;                       /* required: the DuckDB instance SQL sees it in */
  const char *dataset;             /* required: dataset name, also the SQL table name */
  tm_engine_mode mode;             /* cayenne: file only; arrow: memory only */
  /*
   * File mode: cayenne, the dataset's folder (the database is data.duckdb in
   * it); duckdb, the database file; sqlite, the database file. Its folder
   * must be one of the tm_db's folders (DuckDB engines).
   */
  const char *path;
  const char *const *primary_key;  /* key column names, or NULL */
  size_t n_primary_key;
  /*
   * Column -> "drop" | "upsert" (the config's on_conflict map), or NULL.
   * Names must be primary-key columns (a "(a, b)" entry names several).
   * The dataset's rule is upsert when any entry says upsert, else drop.
   * cayenne accepts the map but resolves by time (SPEC A8).
   */
  const tm_kv *on_conflict;
  const tm_engine_index *indexes;  /* Spice's indexes, or NULL: created with the table and
                                      kept in step at each open (names tm_ix_<hash>) */
  size_t n_indexes;
  const char *time_column;         /* or NULL */
  tm_time_format time_format;      /* UNSET: derived from the column's type */
  /*
   * Open as a replacement of what is stored (needs a schema): the first
   * commit swaps new tables in, the stored rows serve until then. For an
   * acceleration found damaged while reading (SPEC D5), as for a new schema (B9).
   */
  bool replace;
  /* sqlite: */
  int busy_timeout_ms;             /* 0: 5000 */
  /*
   * postgres: the acceleration's params (pg_host, pg_port, pg_db, pg_user,
   * pg_pass, pg_sslmode, pg_sslrootcert, connection_pool_size), or NULL.
   */
  const tm_kv *params;
} tm_engine_options;

/** Zeroes o and sets its version. */
void tm_engine_options_init(tm_engine_options *o);

typedef struct tm_engine tm_engine;
typedef struct tm_engine_txn tm_engine_txn;
typedef struct tm_engine_scan tm_engine_scan;

/*
 * What a kind of engine is, declared by its backend (its vtable) and known
 * before any engine is opened: the config checks modes and paths with it,
 * the refresh plans with its conflict rule. Callers ask the traits instead
 * of testing the kind.
 */
typedef struct tm_engine_traits {
  tm_engine_kind kind;
  unsigned modes;              /* bit (1 << tm_engine_mode) per supported mode */
  tm_engine_mode default_mode;
  tm_engine_rule conflict_rule;
  bool columnar;               /* DuckDB storage (zone maps prune scans) */
  bool folder;                 /* file mode keeps a folder of its own, not one database file */
  bool shares_duck_dir;        /* its files live in a folder the tm_db must allow */
  const char *path_param;      /* its own params key naming the file, or NULL */
  const char *file_suffix;     /* appended to the default file name: "" or ".duckdb" */
  bool nested_as_json;         /* keeps nested columns (LIST, STRUCT, MAP) as JSON text: utf8 in
                                  its schema (tm_engine_txn_write converts the batches) */
} tm_engine_traits;

/** The traits kind's backend declares; NULL for an unknown kind. */
const tm_engine_traits *tm_engine_kind_traits(tm_engine_kind kind);
/** Whether kind supports mode. */
bool tm_engine_kind_supports(tm_engine_kind kind, tm_engine_mode mode);

/**
 * Opens (file mode: creates or reopens) an acceleration of `kind`.
 *
 * schema: the dataset's columns. NULL reopens an existing file-mode
 * acceleration with its stored schema (TM_ENOTFOUND when none exists).
 * Supported column types: every tm_type_id. The time column must be a
 * timestamp, date, integer (unix_* formats) or utf8 (ISO8601) column.
 *
 * Reopening checks that the stored schema, primary key and time column equal
 * the given ones; a difference is TM_ECONFLICT (the caller drops and
 * recreates the acceleration, SPEC B9). Opening also recovers from a crash
 * (DuckDB replays its write-ahead log). An acceleration in a format of an
 * earlier tidemark (cayenne's segment files) is removed with a log line and
 * reported as TM_ENOTFOUND, so the next refresh rebuilds it.
 *
 * Errors: TM_EINVALID (bad options: unknown column, unsupported mode, a
 * folder the tm_db may not use), TM_ENOTFOUND, TM_ECONFLICT (schema differs;
 * or another process has the acceleration open), TM_ECORRUPT, TM_EIO,
 * TM_ENOMEM.
 */
int tm_engine_open(tm_engine **out, tm_engine_kind kind, const tm_schema *schema,
                   const tm_engine_options *opts, tm_error *err) TM_WARN_UNUSED;

/**
 * Removes a file-mode acceleration's files (the database file and its
 * write-ahead log; for sqlite its -wal/-shm). Missing files are not an error.
 * The acceleration must not be open.
 */
int tm_engine_drop(tm_engine_kind kind, const tm_engine_options *opts, tm_error *err)
    TM_WARN_UNUSED;

/** Adds a reference; returns e. */
tm_engine *tm_engine_retain(tm_engine *e);
/**
 * Drops a reference; the last one closes the engine (an open transaction is
 * aborted). NULL is a no-op.
 */
void tm_engine_release(tm_engine *e);

tm_engine_kind tm_engine_get_kind(const tm_engine *e);
tm_engine_mode tm_engine_get_mode(const tm_engine *e);
/** The dataset name; lives as long as e. */
const char *tm_engine_dataset(const tm_engine *e);
/** The schema; lives as long as e. */
const tm_schema *tm_engine_schema(const tm_engine *e);
/**
 * Whether rows of schema s are what e stores: its schema, or (an engine that
 * keeps nested values as JSON text, sqlite) s with nested columns as utf8.
 */
bool tm_engine_schema_matches(const tm_engine *e, const tm_schema *s);

/* ---- refresh leases -------------------------------------------------------
 *
 * An acceleration stored outside the process (postgres) may be shared by
 * several tidemark processes: every one serves queries, one at a time
 * refreshes. A refresh first takes the acceleration's lease; a process that
 * does not get it skips that refresh. The lease is held by a connection of
 * its own, so a process that dies loses it at once. Engines whose storage
 * is the process's own always grant it (*lease_out NULL).
 */
typedef struct tm_engine_lease tm_engine_lease;

/**
 * Tries to take the refresh lease of the acceleration that opts name.
 * *got: whether it was taken (false: another process holds it). *lease_out:
 * release it with tm_engine_lease_release (NULL when the kind needs none).
 * Errors: TM_EIO (the server cannot be reached), TM_EINVALID, TM_ENOMEM.
 */
int tm_engine_lease_take(tm_engine_kind kind, const tm_engine_options *opts,
                         tm_engine_lease **lease_out, bool *got, tm_error *err) TM_WARN_UNUSED;
/** Releases a lease (NULL is a no-op). */
void tm_engine_lease_release(tm_engine_lease *l);

/** Whether key is a param of engine postgres (Spice's names). */
bool tm_engine_pg_param_known(const char *key);
/**
 * Checks engine postgres's params: the required pg_host, pg_db, pg_user;
 * pg_port, pg_sslmode, connection_pool_size well-formed. TM_EINVALID naming
 * the param.
 */
int tm_engine_pg_params_check(const tm_kv *params, tm_error *err) TM_WARN_UNUSED;

/* ---- write transactions ------------------------------------------------ */

typedef enum tm_txn_kind {
  TM_TXN_APPEND = 0,  /* adds to the stored rows */
  TM_TXN_REPLACE_ALL  /* the committed rows replace every stored row (full refresh, A11) */
} tm_txn_kind;

/** Why a row lost to another row with the same key (SPEC 1.4 rows_superseded). */
typedef enum tm_superseded_reason {
  TM_SUPERSEDED_OLDER = 0,  /* cayenne: its time was older than the winner's */
  TM_SUPERSEDED_EQUAL_TIME, /* cayenne: same time, the later arrival won */
  TM_SUPERSEDED_UNCHANGED,  /* an identical row was already stored; nothing rewritten */
  TM_SUPERSEDED_ARRIVAL,    /* duckdb, arrow, sqlite: on_conflict kept the other arrival */
  TM_SUPERSEDED__COUNT
} tm_superseded_reason;

/** "older", "equal_time", "unchanged", "arrival". */
const char *tm_superseded_reason_name(tm_superseded_reason r);

typedef struct tm_engine_commit_info {
  int64_t rows_written;   /* rows the commit stored (after conflict resolution) */
  int64_t rows_deleted;   /* stored rows removed by delete_where / delete_provenance / delete_before */
  int64_t rows_superseded[TM_SUPERSEDED__COUNT];
  int64_t rows_after;     /* live rows once committed */
} tm_engine_commit_info;

/**
 * Opens the engine's write transaction. The transaction sees the last
 * committed state (or nothing, for TM_TXN_REPLACE_ALL).
 * Errors: TM_ECONFLICT (a transaction or compaction is running), TM_EIO, TM_ENOMEM.
 */
int tm_engine_begin(tm_engine *e, tm_txn_kind kind, tm_engine_txn **out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Adds the rows of b. b's columns must match the engine's schema by name and
 * type, in the same order (nullability is not checked; a NULL in a column
 * declared NOT NULL is stored). Keyed engines apply their conflict rule (A8)
 * against the stored rows and the rows written earlier in this transaction,
 * including earlier rows of b. b is only read.
 * Errors: TM_EINVALID (schema mismatch), TM_EIO, TM_ENOMEM, TM_ETOOLARGE.
 */
int tm_engine_txn_write(tm_engine_txn *t, const tm_batch *b, tm_error *err) TM_WARN_UNUSED;

/**
 * Deletes the rows for which an SQL boolean expression (DuckDB's dialect, the
 * text after WHERE of a retention_sql statement, SPEC C3) is true, among the
 * rows the transaction sees. The expression may reference the dataset's
 * columns by name; it cannot write, attach or contain a second statement.
 * *n_out (may be NULL): rows deleted.
 * Errors: TM_EINVALID (a syntax error, an unknown column, a second statement).
 */
int tm_engine_txn_delete_where(tm_engine_txn *t, const char *where_sql, int64_t *n_out,
                               tm_error *err) TM_WARN_UNUSED;

/**
 * Deletes the stored rows whose provenance (refresh_mode: changes, SPEC E2,
 * E4) keys names. keys: a batch of two or three int64 columns, (seq, file)
 * for every row of those data files, or (seq, file, pos) for those rows:
 * the delete batches of a TM_SCAN_CHANGES scan (source.h), in their order
 * (rows of one file together). The engine's schema must end with the
 * provenance columns (tm_engine_hidden_columns). Each engine reaches the
 * rows without scanning the acceleration (E4): the DuckDB engines through
 * the zone maps of rows stored in sequence order, sqlite and postgres
 * through their index on (_tm_seq, _tm_file, _tm_pos). Among the rows the
 * transaction sees. *n_out (may be NULL): rows deleted.
 * Errors: TM_EINVALID (no provenance columns; keys of another shape or
 * with NULLs), TM_EIO.
 */
int tm_engine_txn_delete_provenance(tm_engine_txn *t, const tm_batch *keys, int64_t *n_out,
                                    tm_error *err) TM_WARN_UNUSED;

/**
 * Deletes the rows whose time column is older than the instant (sec, nsec)
 * (retention, SPEC C3). A date is older when its day starts before the
 * instant; NULL times are kept; an ISO8601 text that does not parse is kept.
 * Errors: TM_EINVALID (the engine has no time column).
 */
int tm_engine_txn_delete_before(tm_engine_txn *t, int64_t sec, int32_t nsec, int64_t *n_out,
                                tm_error *err) TM_WARN_UNUSED;

/**
 * Commits the transaction atomically together with the state map: `state`
 * replaces the stored map, or NULL keeps the previous one. In file mode the
 * commit is durable when this returns. The transaction is freed whether or
 * not the commit succeeds; on failure nothing of it is visible (the previous
 * state keeps serving). info (may be NULL) receives the counts.
 * Errors: TM_EIO, TM_ENOMEM, TM_ETOOLARGE.
 */
int tm_engine_txn_commit(tm_engine_txn *t, const tm_kv *state, tm_engine_commit_info *info,
                         tm_error *err) TM_WARN_UNUSED;

/** Discards the transaction and frees it. NULL is a no-op. */
void tm_engine_txn_abort(tm_engine_txn *t);

/* ---- reading -------------------------------------------------------------
 *
 * Each read below is one consistent state: the last commit, or the one
 * before it when a commit lands meanwhile, never part of one.
 */

/** Copies the last committed state map into out (initialised, usually empty). */
int tm_engine_read_state(tm_engine *e, tm_kv *out, tm_error *err) TM_WARN_UNUSED;

/** Live rows. */
int tm_engine_row_count(tm_engine *e, int64_t *out, tm_error *err) TM_WARN_UNUSED;

/*
 * Minimum and maximum of a column over the live rows (the high-water mark,
 * SPEC A2). NULLs are ignored; `found` is false when there is no non-NULL
 * value. Byte payloads of min/max are owned by the struct.
 */
typedef struct tm_engine_bounds {
  bool found;
  tm_value min, max;  /* typed as the column */
  char *owned[2];     /* payload copies (tm_free through tm_engine_bounds_dispose) */
} tm_engine_bounds;

void tm_engine_bounds_dispose(tm_engine_bounds *b);

/**
 * Bounds of column `column`: min() and max() in DuckDB (SQLite for sqlite,
 * over an index for the time column).
 * Errors: TM_ENOTFOUND (no such column).
 */
int tm_engine_column_bounds(tm_engine *e, const char *column, tm_engine_bounds *out,
                            tm_error *err) TM_WARN_UNUSED;

/**
 * Scans the live rows satisfying pred (NULL: all rows), as batches holding
 * the columns `cols` (schema indices, in that order; NULL with n_cols 0: every
 * column). The scan is one read transaction; it holds a reference on e. Used
 * by the refresh layer for the A3 de-duplication window.
 * Errors: TM_EINVALID (bad column index, a term on an unknown column).
 */
int tm_engine_scan_open(tm_engine *e, const size_t *cols, size_t n_cols,
                        const tm_predicate *pred, tm_engine_scan **out, tm_error *err)
    TM_WARN_UNUSED;
/** Next batch into out (empty; never empty on success); TM_ITEROVER at the end. */
int tm_engine_scan_next(tm_engine_scan *sc, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
void tm_engine_scan_free(tm_engine_scan *sc);

/** Bytes the acceleration occupies on disk (file mode) or in memory (memory mode). */
int tm_engine_size_bytes(tm_engine *e, uint64_t *out, tm_error *err) TM_WARN_UNUSED;
/**
 * Reads everything stored, to find damage (SPEC D5): TM_ECORRUPT naming the
 * file when some of it cannot be read. Costs a full scan (duckdb engines:
 * every column of every row, each block's checksum checked as DuckDB reads
 * it; sqlite: PRAGMA quick_check, which checks the structure, not the values).
 */
int tm_engine_verify(tm_engine *e, tm_error *err) TM_WARN_UNUSED;

/**
 * How many trailing columns of an acceleration's schema are hidden from SQL:
 * TM_PROVENANCE_COLUMNS when it ends with the provenance columns of
 * refresh_mode: changes (_tm_seq, _tm_file, _tm_pos, int64; source.h), else
 * 0. The dataset's view leaves them out (SPEC E4).
 */
size_t tm_engine_hidden_columns(const tm_schema *s);

/**
 * The SQL that reads the dataset in e's tm_db, for the view that names it
 * (sql.h): a table of an attached database, or a table-function scan.
 * Appended to out.
 */
int tm_engine_relation(tm_engine *e, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/* ---- backends -----------------------------------------------------------
 *
 * A backend fills a tm_engine_vtable and embeds the base structs of
 * engine_int.h as the first member of its own. Callers never touch either;
 * they use the functions above. Backends live in src/engine/<name>/ and never
 * include each other.
 */

#define TM_ENGINE_VTABLE_VERSION 4

typedef struct tm_engine_vtable {
  int version; /* TM_ENGINE_VTABLE_VERSION */
  tm_engine_traits traits;
  int (*open)(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
              tm_error *err);
  int (*drop)(const tm_engine_options *opts, tm_error *err);
  void (*close)(tm_engine *e);
  int (*begin)(tm_engine *e, tm_txn_kind kind, tm_engine_txn **out, tm_error *err);
  int (*write)(tm_engine_txn *t, const tm_batch *b, tm_error *err);
  int (*delete_where)(tm_engine_txn *t, const char *where_sql, int64_t *n_out, tm_error *err);
  /* keys checked by tm_engine_txn_delete_provenance: 2 or 3 int64 columns, no NULL, n_rows > 0 */
  int (*delete_provenance)(tm_engine_txn *t, const tm_batch *keys, int64_t *n_out, tm_error *err);
  int (*delete_before)(tm_engine_txn *t, int64_t sec, int32_t nsec, int64_t *n_out,
                       tm_error *err);
  int (*commit)(tm_engine_txn *t, const tm_kv *state, tm_engine_commit_info *info,
                tm_error *err);
  void (*abort)(tm_engine_txn *t);
  int (*read_state)(tm_engine *e, tm_kv *out, tm_error *err);
  int (*row_count)(tm_engine *e, int64_t *out, tm_error *err);
  int (*bounds)(tm_engine *e, size_t col, tm_engine_bounds *out, tm_error *err);
  int (*scan)(tm_engine *e, const size_t *cols, size_t n_cols, const tm_predicate *pred,
              tm_engine_scan **out, tm_error *err);
  int (*scan_next)(tm_engine_scan *sc, tm_batch *out, tm_error *err);
  void (*scan_free)(tm_engine_scan *sc);
  int (*size_bytes)(tm_engine *e, uint64_t *out, tm_error *err);
  int (*relation)(tm_engine *e, tm_buf *out, tm_error *err);
  int (*verify)(tm_engine *e, tm_error *err);
  /* Optional (NULL: the lease is always granted, see tm_engine_lease_take). */
  int (*lease_take)(const tm_engine_options *opts, tm_engine_lease **out, bool *got,
                    tm_error *err);
  void (*lease_release)(tm_engine_lease *l);
} tm_engine_vtable;


#endif
