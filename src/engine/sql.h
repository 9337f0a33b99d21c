/*
 * sql.h - SQL over the datasets, in DuckDB (engine layer; SPEC section 3, C5,
 * C6, D4).
 *
 * A catalog lists the datasets SQL can see in one tm_db (db.h); a session is
 * one DuckDB connection to it. Every dataset is a relation of its name
 * (DuckDB matches names case-insensitively):
 *
 *   engines     a view over the engine's relation (tm_engine_relation): a
 *               table of its attached database, or a tm_scan of a sqlite
 *               table;
 *   federated   (C6) a replacement scan: each query that names the dataset
 *               reads its source through tm_scan, freshly described (a new
 *               listing, the current Iceberg snapshot), delete files applied
 *               (B12). Comparisons of the query's WHERE clause with
 *               constants prune files and row groups on the way
 *               (sql/pushdown.c); DuckDB checks every row again.
 *
 * Consistency (C5): a statement runs in one DuckDB transaction, which sees
 * each dataset as of one commit; a refresh commits beside it without
 * blocking it.
 *
 * Read-only and bounded (SPEC D4, 1.3; sql/gate.c): one statement per query;
 * only SELECT (with DESCRIBE, SHOW, SUMMARIZE, which are SELECTs) and
 * EXPLAIN run; functions that read files (read_*, glob, parquet_*, ...),
 * paths as tables, and catalog-changing or checkpointing functions are
 * refused by name. Beneath that, the tm_db allows no file access outside the
 * acceleration folders, installs and loads no extension and has its
 * configuration locked. A statement is interrupted once it has run for the
 * session's time limit (TM_ETIMEOUT); the tm_db's memory limit holds for all
 * statements together (past it, TM_ETOOLARGE).
 *
 * Results render through tm_out (table, CSV, JSON) with faithful types:
 * integers and decimals exactly, floats in the shortest exact form (NaN, inf,
 * -inf), timestamps in RFC 3339 (with `Z` for TIMESTAMPTZ), intervals in
 * ISO 8601, nested values (LIST, STRUCT, MAP, ...) as JSON.
 *
 * Threads: the catalog is thread-safe. A session is used by one thread at a
 * time; run many sessions for concurrent readers. tm_sql_session_interrupt
 * may be called from any thread.
 */
#ifndef TM_ENGINE_SQL_H
#define TM_ENGINE_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "format/arrow/render.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct tm_sql_catalog tm_sql_catalog;
typedef struct tm_sql_session tm_sql_session;
typedef struct tm_sql_stmt tm_sql_stmt;

/**
 * A new empty catalog over db (which it holds a reference on). One catalog
 * per tm_db: the views it makes are the db's. Release with tm_sql_catalog_free
 * after its sessions.
 */
int tm_sql_catalog_new(tm_sql_catalog **out, tm_db *db, tm_error *err) TM_WARN_UNUSED;
/** Drops the catalog's views and frees it. Every session must be freed first. */
void tm_sql_catalog_free(tm_sql_catalog *c);
/**
 * Makes engine e's dataset visible as a relation of its name (tm_engine_dataset),
 * replacing what that name showed before. The catalog keeps a reference on e.
 * Errors: TM_EINVALID (e is on another tm_db), TM_ENOMEM, DuckDB's errors.
 */
int tm_sql_catalog_add(tm_sql_catalog *c, tm_engine *e, tm_error *err) TM_WARN_UNUSED;
/**
 * Makes a dataset without acceleration visible as a relation that reads its
 * source on every query (SPEC C6). opts is copied.
 * Errors: TM_ECONFLICT (the name is listed), TM_ENOMEM.
 */
int tm_sql_catalog_add_source(tm_sql_catalog *c, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Adds (or replaces) a view NAME AS sql over the listed datasets (Spice's
 * `views:`). sql passes the read-only gate as a query does, and binds now:
 * a table it reads must be listed already. Errors: TM_EINVALID (the gate or
 * DuckDB refused it, e.g. a table not listed yet), TM_ECONFLICT (a dataset
 * has the name).
 */
int tm_sql_catalog_add_view(tm_sql_catalog *c, const char *name, const char *sql, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Records the comments of relation name (a dataset or view, listed now or
 * later): description (may be NULL) for the relation, and col_descs[i] for
 * column col_names[i] (n columns; a NULL description is skipped). They are
 * set now if name is a view of the catalog, and again each time its view is
 * made (datasets: each schema change), so that information_schema and
 * duckdb_columns() show them. A column the relation does not have is logged
 * (naming it) and skipped. A federated dataset has no view: its comments
 * are kept and show nowhere. Strings are copied. Errors: TM_ENOMEM.
 */
int tm_sql_catalog_describe(tm_sql_catalog *c, const char *name, const char *description,
                            const char *const *col_names, const char *const *col_descs, size_t n,
                            tm_error *err) TM_WARN_UNUSED;
/** Removes a dataset and releases what the catalog held for it. Errors: TM_ENOTFOUND. */
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
/**
 * The datasets (and views) the last statement given to tm_sql_prepare reads,
 * as the catalog names them: distinct, sorted, comma-joined ("a,b"), at most
 * about 1 KiB (names past it are left out). "" when the statement failed
 * before it was read (a parse error, a refused statement) or reads none.
 * What Spice labels `datasets` on its query metrics. Valid until the next
 * tm_sql_prepare on the session.
 */
const char *tm_sql_session_datasets(const tm_sql_session *s);

/*
 * Parameters (Spice's JSON body of /v1/sql): values bound to a statement's
 * `?`, `$1`, `$name` (and, through tm_sql_colon_params, `:name`), never
 * written into its text. DuckDB casts a value to the type its place needs
 * (a TEXT '2024-01-02T03:04:05Z' compared with a TIMESTAMPTZ column), or
 * fails the statement with a conversion error.
 */
#define TM_SQL_PARAMS_MAX 65535 /* values one statement takes, as PostgreSQL */

typedef enum tm_sql_param_kind {
  TM_SQL_PARAM_NULL = 0,
  TM_SQL_PARAM_BOOL,   /* b */
  TM_SQL_PARAM_INT,    /* i: BIGINT */
  TM_SQL_PARAM_DOUBLE, /* d: DOUBLE */
  TM_SQL_PARAM_TEXT,   /* text, text_len: VARCHAR (UTF-8) */
  TM_SQL_PARAM_BLOB    /* text, text_len: BLOB (any bytes; the PostgreSQL wire protocol's bytea) */
} tm_sql_param_kind;

typedef struct tm_sql_param {
  char *name;             /* owned: the name, when the values are named; else NULL */
  tm_sql_param_kind kind;
  bool b;
  int64_t i;
  double d;
  char *text;             /* owned (TEXT, BLOB) */
  size_t text_len;
} tm_sql_param;

typedef struct tm_sql_params {
  tm_sql_param *items;    /* owned array of n */
  size_t n;
  bool named;             /* by name (items[k].name; any case); else by position: $1 = items[0] */
} tm_sql_params;

/** Frees the items, their names and texts, and empties p. NULL is a no-op. */
void tm_sql_params_dispose(tm_sql_params *p);

/**
 * Rewrites each `:name` parameter of sql (Spice's spelling, DataFusion's) to
 * DuckDB's `$name`, in place: the text keeps its length. Quoted strings and
 * identifiers, comments, dollar-quoted strings, `::` casts, `:=`, and a colon
 * right after an identifier, number, quote or bracket (slices `x[1:n]`,
 * struct literals `{'k': v}`) are left alone. Returns the number rewritten.
 */
size_t tm_sql_colon_params(char *sql, size_t len);

/**
 * Prepares one read-only statement and starts it. At most one statement per
 * session is open at a time (TM_ECONFLICT otherwise). The caller owns *out
 * (tm_sql_stmt_free).
 * Errors: TM_EINVALID (syntax, unknown table or column, a refused statement,
 * more than one statement), TM_ECONFLICT, TM_ETIMEOUT, TM_ETOOLARGE (past the
 * memory limit), TM_ENOMEM.
 */
int tm_sql_prepare(tm_sql_session *s, const char *sql, tm_sql_stmt **out, tm_error *err)
    TM_WARN_UNUSED;
/**
 * tm_sql_prepare with parameter values (NULL: none). Given values first turn
 * the text's `:name` into `$name` (tm_sql_colon_params), then the statement
 * passes the gate as text does, and the values are bound: positional ones
 * must be as many as the statement's parameters, named ones must name each
 * of them and nothing else (names match in any case, as DuckDB's).
 * Errors: tm_sql_prepare's; TM_EINVALID for a count or a name that does not
 * match, or a value DuckDB cannot bind.
 */
int tm_sql_prepare_params(tm_sql_session *s, const char *sql, const tm_sql_params *params,
                          tm_sql_stmt **out, tm_error *err) TM_WARN_UNUSED;
/** Steps: TM_OK with a row, TM_ITEROVER at the end, or an error (TM_ETIMEOUT, ...). */
int tm_sql_step(tm_sql_stmt *st, tm_error *err) TM_WARN_UNUSED;
size_t tm_sql_column_count(const tm_sql_stmt *st);
/** The result column's name; valid until the statement is freed. */
const char *tm_sql_column_name(const tm_sql_stmt *st, size_t i);
/** Whether column i of the current row is NULL. */
bool tm_sql_column_is_null(const tm_sql_stmt *st, size_t i);
/**
 * The current row's cell i rendered as text (appended to out) and its kind,
 * as the table/CSV/JSON outputs show it.
 */
int tm_sql_column_render(tm_sql_stmt *st, size_t i, tm_buf *out, tm_cell_kind *kind,
                         tm_error *err) TM_WARN_UNUSED;
/**
 * The Arrow type of result column i as arrow-rs serializes a DataType (JSON
 * text: "Int64", {"Timestamp":["Microsecond","UTC"]}, ...; arrowtype.c says
 * which for each DuckDB type), appended to out. Spice's
 * application/vnd.spiceai.sql.v1+json names each field's type so.
 * Errors: TM_EUNSUPPORTED (a type the outputs cannot show), TM_ENOMEM.
 */
int tm_sql_column_arrow_type(const tm_sql_stmt *st, size_t i, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;
/** Finalizes the statement. NULL is a no-op. */
void tm_sql_stmt_free(tm_sql_stmt *st);

/*
 * Typed access, for clients that type their values (the PostgreSQL wire
 * protocol, runtime/pgwire): DuckDB's types folded into the kinds such a
 * client tells apart (sql/cell.c says which DuckDB type is which kind).
 */
typedef enum tm_sql_type {
  TM_SQLT_OTHER = 0,   /* shown as its rendered text (BIT, SQLNULL, ...) */
  TM_SQLT_BOOL,        /* value: i 0 or 1 */
  TM_SQLT_INT16,       /* TINYINT, UTINYINT, SMALLINT; value: i */
  TM_SQLT_INT32,       /* USMALLINT, INTEGER; value: i */
  TM_SQLT_INT64,       /* UINTEGER, BIGINT; value: i */
  TM_SQLT_NUMERIC,     /* DECIMAL, UBIGINT, HUGEINT, UHUGEINT: exact, rendered text only */
  TM_SQLT_FLOAT32,     /* value: d */
  TM_SQLT_FLOAT64,     /* value: d */
  TM_SQLT_TEXT,        /* VARCHAR (value: ptr, len), ENUM (rendered text only) */
  TM_SQLT_BLOB,        /* value: ptr, len */
  TM_SQLT_DATE,        /* value: i days since 1970-01-01; INT32_MAX / -INT32_MAX: +-infinity */
  TM_SQLT_TIME,        /* TIME, TIME_NS; value: i microseconds since midnight */
  TM_SQLT_TIMETZ,      /* rendered text only */
  TM_SQLT_TIMESTAMP,   /* any unit; value: i microseconds since the epoch; +-INT64_MAX: +-infinity */
  TM_SQLT_TIMESTAMPTZ, /* as TIMESTAMP, UTC */
  TM_SQLT_UUID,        /* rendered text only */
  TM_SQLT_INTERVAL,    /* rendered text only */
  TM_SQLT_NESTED       /* LIST, ARRAY, STRUCT, MAP, UNION: rendered JSON text only */
} tm_sql_type;

/** A cell's value, for the kinds tm_sql_type says have one. ptr: valid until the next step. */
typedef struct tm_sql_value {
  int64_t i;
  double d;
  const char *ptr;
  size_t len;
} tm_sql_value;

/** The kind of result column i (TM_SQLT_OTHER past the last column). */
tm_sql_type tm_sql_column_type(const tm_sql_stmt *st, size_t i);
/**
 * The current row's cell i as a value (the cell is not NULL). false when the
 * column's kind has no value form (see tm_sql_type): render it instead.
 */
bool tm_sql_column_value(const tm_sql_stmt *st, size_t i, tm_sql_value *out);

/** A statement's parameters and result columns, known before it runs. */
typedef struct tm_sql_shape {
  size_t n_params;
  tm_sql_type *param_types; /* owned, n_params; TM_SQLT_OTHER when DuckDB cannot tell */
  size_t n_cols;
  char **col_names;         /* owned, n_cols owned strings */
  tm_sql_type *col_types;   /* owned, n_cols */
  bool cols_unknown;        /* the columns depend on parameters DuckDB cannot type before they
                               are bound ($1 || 'x'): n_cols is 0; they are known once it runs */
} tm_sql_shape;

/**
 * Checks sql as tm_sql_prepare does (the gate: one read-only statement) and
 * describes it without running it: the number and kinds of its parameters
 * ($1, $2, ...) and its result columns. out is initialised by the call;
 * release with tm_sql_shape_dispose. Errors: tm_sql_prepare's.
 */
int tm_sql_describe(tm_sql_session *s, const char *sql, tm_sql_shape *out, tm_error *err)
    TM_WARN_UNUSED;
/** Frees what a shape owns and empties it. */
void tm_sql_shape_dispose(tm_sql_shape *sh);

/**
 * Spice's error code for a query that failed with rc and message (what
 * tm_sql_prepare or tm_sql_step returned), as its query_failures metric
 * labels it (err_code; Spice's crates/runtime/src/datafusion/query/
 * error_code.rs): "SyntaxError" (DuckDB's parser refused it),
 * "QueryPlanningError" (binding: an unknown table or column; a statement the
 * read-only gate refuses), "QueryExecutionError" (it failed while running:
 * a conversion, the time limit, reading an acceleration), "ResourcesExhausted"
 * (past the memory limit, TM_ETOOLARGE) or "InternalError" (anything else).
 */
const char *tm_sql_error_code(int rc, const char *message);

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
