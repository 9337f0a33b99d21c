/*
 * sqlite_int.h - how the sqlite engine stores each tm_type in SQLite (engine
 * layer, private to the sqlite backend: sqlite.c, sqltype.c).
 *
 * SQL runs in DuckDB; SQLite only stores. Values are stored in a form that
 * reads back exactly and that SQLite's own comparisons order correctly, so
 * that the engine's scans can filter in SQLite (the A3 window, retention):
 *
 *   tm type            declared SQL type        SQLite value
 *   bool               BOOLEAN                  INTEGER 0/1
 *   int8..int64        TINYINT, SMALLINT, INT,  INTEGER
 *                      BIGINT
 *   uint8..uint32      UTINYINT..UINTEGER       INTEGER
 *   uint64             UBIGINT                  INTEGER (bits of the uint64)
 *   float32, float64   FLOAT, DOUBLE            REAL; NaN as the TEXT 'NaN'
 *                                               (SQLite would store NULL)
 *   decimal(p<=15,s)   DECIMAL(p,s)             REAL (exact to p digits)
 *   decimal(p>15,s)    DECIMAL TEXT(p,s)        TEXT "-123.4500" (exact)
 *   utf8               TEXT                     TEXT
 *   binary, fixed(n)   BLOB, FIXED BLOB(n)      BLOB
 *   uuid               UUID TEXT                TEXT 8-4-4-4-12 lower-case
 *   date32             DATE                     TEXT YYYY-MM-DD
 *   time64(us|ns)      TIME, TIME_NS            TEXT HH:MM:SS.ffffff[fff]
 *   timestamp(unit)    TIMESTAMP_S, _MS,        TEXT YYYY-MM-DDTHH:MM:SS[.f] with
 *                      TIMESTAMP (us), _NS      fixed fraction digits per unit,
 *   timestamp(unit,UTC) TIMESTAMPTZ[_S|_MS|_NS] then Z when the type has a zone
 *
 * Temporal texts have a fixed width per column, so text order is time order.
 * Values outside years 0000-9999 are stored as the raw INTEGER instead. The
 * declared types pick SQLite affinities that never convert these values.
 */
#ifndef TM_ENGINE_SQLITE_SQLITE_INT_H
#define TM_ENGINE_SQLITE_SQLITE_INT_H

#include <sqlite3.h>

#include "engine/engine_int.h"
#include "engine/sqlite/cksum.h"

/** A value as SQLite stores it. */
typedef struct tm_sqlval {
  int kind;          /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB */
  int64_t i;
  double f;
  const char *p;     /* TEXT/BLOB bytes: into the tm_value's payload or `buf` */
  size_t n;
  char buf[64];      /* rendered text */
} tm_sqlval;

/** Writes the declared SQL type of t into buf (at least 32 bytes). */
void tm_sqltype_decl(const tm_type *t, char *buf, size_t cap);
/** The SQLite value of v (a value of type t). p may point into v or out->buf. */
void tm_sqlval_from(tm_sqlval *out, const tm_type *t, const tm_value *v);
/** Binds a tm_sqlval (SQLITE_TRANSIENT when it points into its own buf, else STATIC). */
int tm_sqlval_bind(sqlite3_stmt *st, int idx, const tm_sqlval *v);
/**
 * Appends the SQLite value `v` (read back from a column of type t) to cb.
 * TM_EINVALID when the value cannot be a value of t.
 */
int tm_sqltype_append(tm_colbuilder *cb, const tm_type *t, sqlite3_value *v, tm_error *err)
    TM_WARN_UNUSED;
/**
 * The SQLite value `v` as a tm_value of type t (TM_EINVALID when it does not
 * fit). Byte payloads are copied into *owned (tm_free; NULL when none).
 */
int tm_sqltype_to_value(const tm_type *t, sqlite3_value *v, tm_value *out, char **owned,
                        tm_error *err) TM_WARN_UNUSED;
/**
 * Parses a canonical temporal text of type t (as tm_sqlval_from renders it)
 * back to its raw value. TM_EINVALID when it does not parse.
 */
int tm_sqltype_parse_temporal(const tm_type *t, const char *s, size_t n, int64_t *out)
    TM_WARN_UNUSED;
/**
 * Renders a raw temporal value in its canonical text. Returns the length, or 0
 * when the value is outside the renderable range (years 0000-9999).
 */
size_t tm_sqltype_render_temporal(const tm_type *t, int64_t raw, char *buf, size_t cap);

/**
 * The DELETE the engine runs for one provenance key of refresh_mode:
 * changes (?1 _tm_seq, ?2 _tm_file, and ?3 _tm_pos when by_pos), on the
 * table table_q (quoted). It is an index search on the table's provenance
 * index (SPEC E4); tests check SQLite's plan for it.
 */
int tm_sqlite__prov_delete_sql(tm_buf *out, const char *table_q, bool by_pos, tm_error *err)
    TM_WARN_UNUSED;

#endif
