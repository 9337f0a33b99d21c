/*
 * sql_int.h - what the SQL session and the virtual-table module share
 * (engine layer, private).
 */
#ifndef TM_ENGINE_SQL_SQL_INT_H
#define TM_ENGINE_SQL_SQL_INT_H

#include "engine/columnar/columnar.h"
#include "engine/sql.h"

typedef struct tm_sql_vtab tm_sql_vtab;

/*
 * The context a connection's "tidemark" module serves: either a session
 * (tables follow the published snapshots, pinned per statement) or one
 * fixed snapshot (a retention condition evaluated inside a transaction).
 */
typedef struct tm_vtab_host {
  tm_engine *creating;      /* the engine of the table being created (set around CREATE) */
  tm_csnap *fixed;          /* a fixed snapshot, or NULL */
  uint64_t gen;             /* statement generation; pins of older ones are stale */
  tm_sql_vtab *vtabs;       /* the connection's tables (to unpin at statement end) */
  tm_sql_scan_stats stats;  /* cumulative */
} tm_vtab_host;

/** Registers the module "tidemark" on db, serving host (which must outlive db). */
int tm_sql__vtab_register(sqlite3 *db, tm_vtab_host *host, tm_error *err) TM_WARN_UNUSED;
/** Releases every snapshot the host's tables pinned (statement end). */
void tm_sql__vtab_unpin_all(tm_vtab_host *host);

/**
 * The read-only authorizer of outside queries (SPEC D4). payload: a char
 * buffer of TM_SQL_DENIED_MAX bytes receiving what was refused, or NULL.
 */
#define TM_SQL_DENIED_MAX 160
int tm_sql__authorizer(void *payload, int action, const char *a, const char *b,
                       const char *db_name, const char *trigger);
/** Whether the rest of a statement after its tail is only blanks, ';' and comments. */
bool tm_sql__only_blank(const char *tail);

#endif
