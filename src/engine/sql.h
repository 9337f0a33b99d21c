/*
 * sql.h - SQL over the accelerations (engine layer).
 *
 * A catalog lists the datasets (engines) that SQL can see; a session is one
 * SQLite connection (SQLite's dialect, SPEC section 3) in which every
 * dataset of its catalog is a table of its name:
 *
 *   sqlite engines    the engine's database, attached with a read-only URI
 *                     (SQLite attaches at most 10: beyond that, on demand,
 *                     replacing the least recently used);
 *   cayenne, arrow    a virtual table (module "tidemark") that pushes =, <,
 *                     <=, >, >=, IS [NOT] NULL and IN down into the segment
 *                     scan (zone maps skip segments) and reads only the
 *                     columns the query uses.
 *
 * A statement pins one published snapshot per columnar dataset it reads, when
 * it is planned (prepare), and keeps it until the statement is freed, so it
 * sees every dataset as of one commit even while refreshes and compactions
 * commit (SPEC C5). SQLite datasets get the same from WAL read transactions.
 *
 * Queries are read-only (SPEC D4, 1.3): an authorizer refuses INSERT,
 * UPDATE, DELETE, DDL, ATTACH/DETACH, transactions, PRAGMA that sets a value
 * or is not on a short read-only list, and the functions load_extension and
 * fts3_tokenizer. Such statements fail with TM_EINVALID and a message naming
 * what was refused. One statement per query.
 *
 * Results render through tm_out (table, CSV, JSON) with faithful types: the
 * declared type of a result column (engine_int.h's SQL face of types) says
 * how to render its values: booleans as true/false, timestamps in RFC 3339
 * with their zone, decimals exactly with their scale.
 *
 * Threads: the catalog is thread-safe. A session is used by one thread at a
 * time; run many sessions (one per worker) for concurrent readers; they
 * share the engines' published snapshots. tm_sql_session_interrupt may be
 * called from any thread.
 */
#ifndef TM_ENGINE_SQL_H
#define TM_ENGINE_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "format/arrow/render.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct tm_sql_catalog tm_sql_catalog;
typedef struct tm_sql_session tm_sql_session;
typedef struct tm_sql_stmt tm_sql_stmt;

/** A new empty catalog; release with tm_sql_catalog_free after its sessions. */
int tm_sql_catalog_new(tm_sql_catalog **out, tm_error *err) TM_WARN_UNUSED;
/** Frees the catalog and its engine references. Every session must be freed first. */
void tm_sql_catalog_free(tm_sql_catalog *c);
/**
 * Makes engine e's dataset visible as a table of its name (tm_engine_dataset).
 * The catalog keeps a reference on e. Sessions see it from their next query.
 * Errors: TM_ECONFLICT (a dataset of that name is listed), TM_ENOMEM.
 */
int tm_sql_catalog_add(tm_sql_catalog *c, tm_engine *e, tm_error *err) TM_WARN_UNUSED;
/**
 * Makes a dataset without acceleration visible as a table that reads its
 * source on every query (SPEC C6): a file set, or an Iceberg table with its
 * delete files applied (B12). opts is copied; each session opens its own
 * source. Errors: TM_ECONFLICT (the name is listed), TM_ENOMEM.
 */
int tm_sql_catalog_add_source(tm_sql_catalog *c, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Removes a dataset (sessions drop the table at their next query) and
 * releases the catalog's reference. Errors: TM_ENOTFOUND.
 */
int tm_sql_catalog_remove(tm_sql_catalog *c, const char *name, tm_error *err) TM_WARN_UNUSED;

/** A session over catalog c (which must outlive it). Release with tm_sql_session_free. */
int tm_sql_session_new(tm_sql_session **out, tm_sql_catalog *c, tm_error *err) TM_WARN_UNUSED;
void tm_sql_session_free(tm_sql_session *s);
/**
 * Makes statements of this session fail with TM_ETIMEOUT once they have run
 * for ms milliseconds (0: no limit).
 */
void tm_sql_session_set_timeout(tm_sql_session *s, int64_t ms);
/** Cancels the running statement (TM_ECANCELLED). Thread-safe. */
void tm_sql_session_interrupt(tm_sql_session *s);

/* The largest string or blob one query may build or return, and the longest
 * SQL text (SQLite's SQLITE_LIMIT_LENGTH). A single function call such as
 * printf('%.*c', 1000000000, 'x') runs between two progress-handler ticks, so
 * the time limit cannot stop it; this cap bounds its memory and time. Past
 * it the query fails with "string or blob too big" (TM_EINVALID). */
#define TM_SQL_VALUE_MAX ((int)(64 << 20))
/** Lowers (or restores) the session's value cap; bytes is clamped to
 * [1 KiB, TM_SQL_VALUE_MAX]. */
void tm_sql_session_set_value_limit(tm_sql_session *s, int bytes);

/* What the virtual tables of a session read (cumulative since the last reset). */
typedef struct tm_sql_scan_stats {
  int64_t scans;            /* xFilter calls */
  int64_t segments_total;   /* segments in the scanned snapshots */
  int64_t segments_skipped; /* pruned by zone maps */
  int64_t segments_read;
  int64_t columns_read;     /* segment columns touched (only those the query uses) */
  int64_t rows_read;        /* rows examined in read segments */
  int64_t rows_out;         /* rows handed to SQLite */
} tm_sql_scan_stats;

/** The session's scan statistics; reset zeroes them afterwards when true. */
tm_sql_scan_stats tm_sql_session_scan_stats(tm_sql_session *s, bool reset);

/**
 * Prepares one read-only statement. At most one statement per session is
 * open at a time (TM_ECONFLICT otherwise). The caller owns *out
 * (tm_sql_stmt_free).
 * Errors: TM_EINVALID (syntax, unknown table or column, a refused statement,
 * more than one statement), TM_ECONFLICT, TM_ENOMEM.
 */
int tm_sql_prepare(tm_sql_session *s, const char *sql, tm_sql_stmt **out, tm_error *err)
    TM_WARN_UNUSED;
/** Steps: TM_OK with a row, TM_ITEROVER at the end, or an error (TM_ETIMEOUT, ...). */
int tm_sql_step(tm_sql_stmt *st, tm_error *err) TM_WARN_UNUSED;
size_t tm_sql_column_count(const tm_sql_stmt *st);
/** The result column's name; valid until the statement is freed. */
const char *tm_sql_column_name(const tm_sql_stmt *st, size_t i);
/** Whether column i of the current row is NULL. */
bool tm_sql_column_is_null(const tm_sql_stmt *st, size_t i);
/**
 * The current row's cell i rendered as text (appended to out) and its kind
 * (number, bool, text or NULL), as the table/CSV/JSON outputs show it.
 */
int tm_sql_column_render(tm_sql_stmt *st, size_t i, tm_buf *out, tm_cell_kind *kind,
                         tm_error *err) TM_WARN_UNUSED;
/**
 * The current row's cell i as a value of type t (e.g. the time column's
 * type for `SELECT max(ts)`). Byte payloads are copied into *owned (tm_free;
 * NULL when none). Errors: TM_EINVALID (the value does not fit t).
 */
int tm_sql_column_value(tm_sql_stmt *st, size_t i, const tm_type *t, tm_value *out,
                        char **owned, tm_error *err) TM_WARN_UNUSED;
/** Finalizes the statement and unpins its snapshots. NULL is a no-op. */
void tm_sql_stmt_free(tm_sql_stmt *st);

typedef struct tm_sql_result_info {
  int64_t rows;
  size_t columns;
} tm_sql_result_info;

/**
 * Runs one read-only query and streams its result through a tm_out writer in
 * `format` to sink. info (may be NULL) gets the row count. Errors as
 * tm_sql_prepare and tm_sql_step, and the sink's error.
 */
int tm_sql_query(tm_sql_session *s, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                 void *payload, tm_sql_result_info *info, tm_error *err) TM_WARN_UNUSED;

/**
 * Splits a retention_sql statement (`DELETE FROM <dataset> WHERE <cond>`,
 * SPEC C3) into its condition, for tm_engine_txn_delete_where. The table
 * must be `dataset` (quoted or not, any case). *where_out: tm_free.
 * Errors: TM_EINVALID naming what is wrong.
 */
int tm_sql_retention_condition(const char *retention_sql, const char *dataset, char **where_out,
                               tm_error *err) TM_WARN_UNUSED;

#endif
