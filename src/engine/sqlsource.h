/*
 * sqlsource.h - SQL over a source: refresh_sql (SPEC A10) (engine layer).
 *
 * A refresh_sql such as `SELECT id, ts, amount FROM events WHERE region =
 * 'eu'` narrows what a refresh reads. It runs in DuckDB, on a connection of
 * its own where the dataset's name is a temporary view over the source
 * (tm_scan): the source reads only the columns the statement uses, and
 * prunes files and row groups with the terms of its WHERE clause that
 * compare a column with a constant (sql/pushdown.c) together with the
 * refresh's own bounds (the request's predicate); DuckDB evaluates the whole
 * statement on what is read. SQL is DuckDB's dialect, as in queries.
 *
 * Result columns that name a source column keep its type; computed columns
 * take the tm type of their DuckDB type (BIGINT int64, DOUBLE float64,
 * VARCHAR utf8, DECIMAL decimal, TIMESTAMPTZ timestamp(us, UTC), ...); a type
 * an acceleration cannot store (HUGEINT, INTERVAL, LIST, ...) is an error
 * that names the column.
 */
#ifndef TM_ENGINE_SQLSOURCE_H
#define TM_ENGINE_SQLSOURCE_H

#include "engine/db.h"
#include "source/source.h"

typedef struct tm_sqlsource tm_sqlsource;

/**
 * Prepares sql (one SELECT reading the relation `name`) over src, which must
 * be described and must outlive the result. Learns the result schema.
 * Errors: TM_EINVALID (syntax, unknown column, not a SELECT, more than one
 * statement, a file-reading function), TM_EUNSUPPORTED (a result type), the
 * source's errors. *out: tm_sqlsource_free.
 */
int tm_sqlsource_new(tm_sqlsource **out, tm_db *db, tm_source *src, const char *name,
                     const char *sql, tm_error *err) TM_WARN_UNUSED;
void tm_sqlsource_free(tm_sqlsource *s);
/** The result's schema; valid while s lives. */
const tm_schema *tm_sqlsource_schema(const tm_sqlsource *s);
/**
 * Runs the statement. req's predicate, modification bound, snapshot mode and
 * deletes apply to the source scan underneath, together with the pushdown of
 * the statement's WHERE clause; req's projection is ignored (the statement
 * decides). The scan's batches have the result schema; its statistics are
 * the source scan's. One scan at a time per tm_sqlsource; req must outlive it.
 */
int tm_sqlsource_scan(tm_sqlsource *s, const tm_scan_request *req, tm_scan **out,
                      tm_error *err) TM_WARN_UNUSED;

#endif
