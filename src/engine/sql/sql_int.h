/*
 * sql_int.h - what the SQL parts of the engine layer share (engine layer,
 * private): the read-only gate, result rendering, WHERE-clause pushdown and
 * the scan providers of federated sources.
 */
#ifndef TM_ENGINE_SQL_SQL_INT_H
#define TM_ENGINE_SQL_SQL_INT_H

#include <jansson.h>

#include "engine/engine_int.h"
#include "engine/sql.h"

/*
 * gate.c: checks that sql is one statement that only reads (SPEC D4) and
 * prepares it on c. *ast_out (json_decref; NULL for EXPLAIN) is the parse
 * tree DuckDB serialized (json_serialize_sql), for pushdown.
 * Errors: TM_EINVALID naming what was refused, DuckDB's parse and bind errors.
 */
int tm_sql__gate(duckdb_connection c, const char *sql, duckdb_prepared_statement *helper,
                 duckdb_prepared_statement *ps_out, json_t **ast_out, tm_error *err) TM_WARN_UNUSED;
/*
 * gate.c: the key under which a session remembers that a text passed the
 * gate (session.c): sql with its standalone numbers made `?`; texts with one
 * key get one verdict (the comment at the definition says why). out is cleared.
 */
int tm_sql__shape_key(const char *sql, tm_buf *out, tm_error *err) TM_WARN_UNUSED;
/*
 * gate.c: prepares sql, whose shape passed tm_sql__gate, and checks again
 * what depends on the text itself: DuckDB parses it as one statement and its
 * type is a SELECT (or the EXPLAIN it starts with).
 */
int tm_sql__gate_again(duckdb_connection c, const char *sql, duckdb_prepared_statement *ps_out,
                       tm_error *err) TM_WARN_UNUSED;

/*
 * params.c: binds p's values to ps (positional or by name, sql.h), checking
 * that each of the statement's parameters gets one and each value is used.
 * Errors: TM_EINVALID naming the parameter, TM_ENOMEM.
 */
int tm_sql__bind(duckdb_prepared_statement ps, const tm_sql_params *p, tm_error *err)
    TM_WARN_UNUSED;

/*
 * arrowtype.c: the Arrow type of a result column of type lt, as arrow-rs
 * serializes a DataType with serde (JSON text), appended to out.
 * Errors: TM_EUNSUPPORTED (a type the outputs cannot show), TM_ENOMEM.
 */
int tm_sql__arrow_type(duckdb_logical_type lt, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/** gate.c: whether a table function may run in a query (not a file reader, ...). */
bool tm_sql__function_allowed(const char *name);

/*
 * render.c: row `row` of vector v (of type lt) as the outputs show it:
 * appended to out, with its kind. Nested values become JSON.
 */
int tm_sql__render(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out,
                   tm_cell_kind *kind, tm_error *err) TM_WARN_UNUSED;

/* cell.c: the kind of DuckDB type lt (sql.h, tm_sql_type). */
tm_sql_type tm_sql__kind(duckdb_logical_type lt);
/* cell.c: row `row` of vector v (of type lt, not NULL there) as a value; false: no value form. */
bool tm_sql__value(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_sql_value *out);

/*
 * pushdown.c: the conjuncts of the WHERE clauses in ast that filter the
 * relation `name` (of columns schema) alone, as predicate terms added to out:
 * `column op constant`, IN lists, BETWEEN, IS [NOT] NULL, with the constant
 * converted exactly to the column's type (a constant that does not convert
 * exactly is left to DuckDB). Nothing is extracted when name is read more
 * than once in the query, or joined. The terms only prune: DuckDB evaluates
 * the whole WHERE clause on every row.
 */
int tm_sql__pushdown(const json_t *ast, const char *name, const tm_schema *schema,
                     tm_predicate *out, tm_error *err) TM_WARN_UNUSED;
/** pushdown.c: the names of base tables ast reads (tm_free each, then the array). */
int tm_sql__tables(const json_t *ast, char ***names_out, size_t *n_out, tm_error *err)
    TM_WARN_UNUSED;

/*
 * federated.c: a scan provider over a source (SPEC C6): each query opens and
 * describes it, and scans it with delete files applied (B12). The provider's
 * last described schema types the pushdown of the next query
 * (tm_sql__source_schema).
 */
typedef struct tm_sql_source tm_sql_source;
/** Registers spec (copied) as relation provider_name on db. *out: the provider's state. */
int tm_sql__source_add(tm_db *db, const char *provider_name, const tm_source_options *opts,
                       tm_sql_source **out, tm_error *err) TM_WARN_UNUSED;
/** Copies the schema the source had when last described into out (initialised, empty). */
int tm_sql__source_schema(tm_sql_source *s, tm_schema *out, tm_error *err) TM_WARN_UNUSED;

/* session.c, for tests: how many statements the session keeps that read engines' tables directly. */
size_t tm_sql__kept_direct(const tm_sql_session *s);
/* ... and how many statements it ran that way (kept ones, and texts of a known shape). */
uint64_t tm_sql__direct_runs(const tm_sql_session *s);
/* ... and how often the statement it keeps for the text sql has run since it was prepared (-1: none). */
int64_t tm_sql__kept_runs(const tm_sql_session *s, const char *sql);

#endif
