/*
 * sqlsource.h - SQL over a source: refresh_sql (SPEC A10) (engine layer).
 *
 * A refresh_sql such as `SELECT id, ts, amount FROM events WHERE region =
 * 'eu'` narrows what a refresh reads. It runs in a private SQLite connection
 * where the dataset's name is a virtual table over the source's scan. SQLite
 * pushes the WHERE clause's simple comparisons (=, <, <=, >, >=, IS [NOT]
 * NULL) into the virtual table, which turns them into a tm_predicate, so the
 * source prunes files and row groups with them; SQLite checks every row
 * again, so any other condition works too. Only the columns the query uses
 * are read. Values cross into SQL as engine_int.h's "SQL face of types", so
 * refresh_sql compares timestamps, dates and decimals as queries do.
 *
 * Result columns that name a source column keep its type; computed columns
 * take the type of their first value (integer -> int64, real -> float64,
 * text -> utf8, blob -> binary; utf8 when the source is empty).
 */
#ifndef TM_ENGINE_SQLSOURCE_H
#define TM_ENGINE_SQLSOURCE_H

#include <sqlite3.h>

#include "source/source.h"

typedef struct tm_sqlsource tm_sqlsource;

/**
 * Prepares sql (one SELECT reading the table `name`) over src, which must be
 * described and must outlive the result. Learns the result schema.
 * Errors: TM_EINVALID (syntax, unknown column, not a SELECT, more than one
 * statement), the source's errors. *out: tm_sqlsource_free.
 */
int tm_sqlsource_new(tm_sqlsource **out, tm_source *src, const char *name, const char *sql,
                     tm_error *err) TM_WARN_UNUSED;
void tm_sqlsource_free(tm_sqlsource *s);
/** The result's schema; valid while s lives. */
const tm_schema *tm_sqlsource_schema(const tm_sqlsource *s);
/**
 * Runs the statement. req's predicate, modification bound, snapshot mode and
 * deletes apply to the source scan underneath, together with what SQLite
 * pushes down; req's projection is ignored (the SELECT list decides). The
 * scan's batches have the result schema. One scan at a time per tm_sqlsource.
 */
int tm_sqlsource_scan(tm_sqlsource *s, const tm_scan_request *req, tm_scan **out,
                      tm_error *err) TM_WARN_UNUSED;

/*
 * Federated tables (SPEC C6): registers the module "tm_source" on db. A
 * `CREATE VIRTUAL TABLE temp."NAME" USING tm_source` asks lookup for NAME's
 * source options (views that must stay valid while db lives), opens and
 * describes the source, and serves it: every query re-describes it (a fresh
 * listing, the current Iceberg snapshot) and scans it with delete files
 * applied (B12), pushing comparisons and the used columns down.
 */
typedef int (*tm_sqlsource_lookup_fn)(void *payload, const char *name, tm_source_options *out);
int tm_sqlsource_register_federated(sqlite3 *db, tm_sqlsource_lookup_fn lookup, void *payload,
                                    tm_error *err) TM_WARN_UNUSED;

#endif
