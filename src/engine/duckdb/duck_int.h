/*
 * duck_int.h - the DuckDB-storage engines cayenne, duckdb and arrow: what
 * duckdb.c (open, reads) and txn.c (write transactions) share (engine layer,
 * private to this backend).
 *
 * One database (a file, or in memory) per dataset, attached to the tm_db,
 * holding three tables:
 *
 *   rows       the dataset's columns, in the mapped DuckDB types (engine_int.h)
 *   _tm_state  (key VARCHAR, value VARCHAR): the state map, written in the
 *              transaction that writes the rows (D1, B8)
 *   _tm_meta   (key VARCHAR, value VARCHAR): format, engine kind, schema
 *              (tm_engine__schema_encode), options fingerprint; and the
 *              time column's min and max at the last commit (time_min,
 *              time_max: hints that make the high-water mark cheap, below)
 *
 * A replacement (the schema or the key options changed, SPEC B9) builds its
 * rows in a table of its own and swaps it in at its first commit, so the
 * stored rows keep serving until then.
 */
#ifndef TM_ENGINE_DUCKDB_DUCK_INT_H
#define TM_ENGINE_DUCKDB_DUCK_INT_H

#include <pthread.h>

#include "engine/engine_int.h"

#define TM_DUCK_FORMAT "tidemark-duckdb 1"
#define TM_DUCK_FILE "data.duckdb"
#define TM_DUCK_ROWS "rows"
#define TM_DUCK_NEW "rows__tm_new"

typedef struct tm_duck_engine {
  tm_engine base;
  char *alias;            /* owned: the attached database's catalog name */
  char *q;                /* owned: quoted alias, for SQL: "tm$events" */
  char *file;             /* owned: the database file; NULL in memory mode */
  bool pending;           /* a replacement: the first commit swaps TM_DUCK_NEW in */
  duckdb_connection writer; /* write transactions (one at a time) */
  /*
   * The time column's min and max as of the last commit, as DuckDB text of
   * the column's type (owned; NULL: unknown). DuckDB answers max() by
   * scanning every row; `max(c) WHERE c >= hint` reads only the row groups
   * whose zone maps reach the hint. Any hint gives the exact answer: a row
   * beyond the hint passes the filter, and when none does (the bound moved
   * inward: a retention), the full aggregate runs. Under hint_mu.
   */
  pthread_mutex_t hint_mu;
  char *hint[2];          /* [0] min, [1] max */
} tm_duck_engine;

static inline tm_duck_engine *tm_duck_of(tm_engine *e) { return (tm_duck_engine *)e; }

/* txn.c */
int tm_duck__begin(tm_engine *e, tm_txn_kind kind, tm_engine_txn **out, tm_error *err);
int tm_duck__write(tm_engine_txn *t, const tm_batch *b, tm_error *err);
int tm_duck__delete_where(tm_engine_txn *t, const char *where_sql, int64_t *n_out, tm_error *err);
int tm_duck__delete_provenance(tm_engine_txn *t, const tm_batch *keys, int64_t *n_out,
                                tm_error *err);
int tm_duck__delete_before(tm_engine_txn *t, int64_t sec, int32_t nsec, int64_t *n_out,
                           tm_error *err);
int tm_duck__commit(tm_engine_txn *t, const tm_kv *state, tm_engine_commit_info *info,
                    tm_error *err);
void tm_duck__abort(tm_engine_txn *t);

/** Appends `<q>.main."<table>"`. */
int tm_duck__table(tm_buf *b, const tm_duck_engine *e, const char *table, tm_error *err)
    TM_WARN_UNUSED;
/** Appends the column list `"a", "b", ...` of the schema (prefix: "s." or NULL). */
int tm_duck__columns(tm_buf *b, const tm_schema *s, const char *prefix, tm_error *err)
    TM_WARN_UNUSED;
/** Creates the configured indexes on the rows table, on connection c (in its transaction). */
int tm_duck__create_indexes(tm_duck_engine *e, duckdb_connection c, tm_error *err) TM_WARN_UNUSED;
/** Appends `CREATE TABLE <table> (...)` for the schema's columns. */
int tm_duck__create_rows(tm_buf *b, const tm_duck_engine *e, const char *table, tm_error *err)
    TM_WARN_UNUSED;
/**
 * The time column's exact bounds over table (TM_DUCK_ROWS) on c, as DuckDB
 * text (tm_free each; NULL when the table has no non-NULL value), using
 * e's hints (duck_int.h).
 */
int tm_duck__time_bounds(tm_duck_engine *e, duckdb_connection c, char *out[2], tm_error *err)
    TM_WARN_UNUSED;
/** Replaces e's hints by bounds (owned strings moved in; NULL entries allowed). */
void tm_duck__set_hints(tm_duck_engine *e, char *bounds[2]);
/** Writes the meta table's rows for e (format, kind, schema, fingerprint) on c. */
int tm_duck__write_meta(tm_duck_engine *e, duckdb_connection c, tm_error *err) TM_WARN_UNUSED;

#endif
