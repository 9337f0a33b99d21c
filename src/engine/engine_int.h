/*
 * engine_int.h - what the engine layer's files share and nobody else sees
 * (engine layer, private).
 *
 * The base structs every backend embeds, the options resolved against the
 * schema, time-column ordering, and the SQL face of column types (the
 * mapping between tm_type values and SQLite values that the sqlite backend,
 * the virtual-table module and the SQL session must agree on).
 */
#ifndef TM_ENGINE_ENGINE_INT_H
#define TM_ENGINE_ENGINE_INT_H

#include <sqlite3.h>

#include "engine/engine.h"
#include "util/buf.h"

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
  int64_t segment_rows;
  int compact_min_segments;
  bool verify_checksums;
  int busy_timeout_ms;
} tm_engine_config;

struct tm_engine {
  const tm_engine_vtable *vt;
  int refs;               /* atomic */
  tm_schema schema;       /* owned */
  tm_engine_config cfg;   /* owned */
  tm_engine_caps caps;
  int txn_open;           /* atomic: the writer slot (a transaction or compaction) */
};

struct tm_engine_txn {
  tm_engine *engine;      /* not a reference: the engine outlives its transaction */
  tm_txn_kind kind;
};

struct tm_engine_snapshot {
  tm_engine *engine;      /* one reference */
  int refs;               /* atomic */
};

struct tm_engine_scan {
  tm_engine_snapshot *snap; /* one reference */
  tm_engine_scan_stats stats;
};

/** Backends: fills e's base fields (schema copy, resolved config, caps). */
int tm_engine__init_base(tm_engine *e, const tm_engine_vtable *vt, const tm_schema *schema,
                         const tm_engine_options *opts, tm_error *err) TM_WARN_UNUSED;
/** Backends: frees what tm_engine__init_base allocated. */
void tm_engine__dispose_base(tm_engine *e);
/**
 * Backends: the base of a new snapshot with one reference and no engine
 * reference (vt->snapshot returns it; tm_engine_snapshot_acquire adds the
 * caller's engine reference).
 */
void tm_engine__snapshot_init(tm_engine_snapshot *s, tm_engine *e);
/** Backends: drops a snapshot reference that holds no engine reference. */
void tm_engine__snapshot_drop(tm_engine_snapshot *s);
/** Backends: takes/releases the writer slot. TM_ECONFLICT when taken. */
int tm_engine__writer_acquire(tm_engine *e, tm_error *err) TM_WARN_UNUSED;
void tm_engine__writer_release(tm_engine *e);
/** Backends: checks that b's columns match the schema (names, types, order). */
int tm_engine__check_batch(const tm_engine *e, const tm_batch *b, tm_error *err)
    TM_WARN_UNUSED;
/** Process-wide SQLite settings, applied once before the first connection. */
void tm_engine__sqlite_setup(void);
/** The vtable of a kind. */
const tm_engine_vtable *tm_engine__vtable(tm_engine_kind kind);
/* Each backend's vtable (functions, not exported data, so that sanitizer
 * builds export only tm_ symbols). */
const tm_engine_vtable *tm_engine__sqlite_vtable(void);
const tm_engine_vtable *tm_engine__arrow_vtable(void);
const tm_engine_vtable *tm_engine__cayenne_vtable(void);
/* Acceleration snapshots of cayenne (cayenne/backup.c), for backup.c. */
int tm_engine__cayenne_backup(tm_engine *e, const char *dest_path, tm_error *err) TM_WARN_UNUSED;
int tm_engine__cayenne_restore(const tm_engine_options *opts, const char *backup_path,
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

/* ---- time column ordering (SPEC A8, C3) --------------------------------- */

/*
 * An instant for ordering and retention: seconds and nanoseconds since the
 * epoch. `null` orders before everything (a NULL or unparsable time never
 * wins against a real one).
 */
typedef struct tm_instant {
  bool null;
  int64_t sec;
  int32_t nsec;
} tm_instant;

/** The instant of a time-column value of type t under format f. */
tm_instant tm_engine__instant(const tm_type *t, tm_time_format f, const tm_value *v);
static inline int tm_instant_cmp(tm_instant a, tm_instant b) {
  if (a.null || b.null) return (int)b.null - (int)a.null;
  if (a.sec != b.sec) return a.sec < b.sec ? -1 : 1;
  return (a.nsec > b.nsec) - (a.nsec < b.nsec);
}
/** The time format implied by a column type when the config gives none. */
tm_time_format tm_engine__default_time_format(const tm_type *t);

/* ---- the SQL face of column types --------------------------------------
 *
 * Every engine shows a column to SQL the same way, so that a query gives the
 * same answer on every engine and the output renders faithful types:
 *
 *   tm type            declared SQL type        SQLite value
 *   bool               BOOLEAN                  INTEGER 0/1
 *   int8..int64        TINYINT, SMALLINT, INT,  INTEGER
 *                      BIGINT
 *   uint8..uint32      UTINYINT..UINTEGER       INTEGER
 *   uint64             UBIGINT                  INTEGER (bits of the uint64)
 *   float32, float64   FLOAT, DOUBLE            REAL (NaN becomes NULL in SQLite)
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
 * Temporal texts have a fixed width per column, so text order is time order
 * and `ts >= '2024-05-01'` compares as expected. Values outside years
 * 0000-9999 are given as the raw INTEGER instead. The declared types pick
 * SQLite affinities that never convert these values.
 */

/** A value as SQLite sees it. */
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
 * Makes v the result of a virtual-table column. SQLite may keep a text or blob
 * result by pointer until the statement ends (a bare column of an aggregate, a
 * group key), so it is passed as SQLITE_STATIC only when pinned says that its
 * bytes outlive the statement (a pinned engine snapshot); otherwise, and for
 * text rendered into v's own buf, SQLite copies it.
 */
void tm_sqlval_result(sqlite3_context *ctx, const tm_sqlval *v, bool pinned);
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

/** How the SQL output renders a result column (from its declared type). */
typedef enum tm_sqlrender {
  TM_SQLRENDER_PLAIN = 0, /* by storage class */
  TM_SQLRENDER_BOOL,      /* INTEGER 0/1 as true/false */
  TM_SQLRENDER_UINT64,    /* INTEGER bits as unsigned */
  TM_SQLRENDER_FLOAT32,   /* REAL as the shortest float32 text */
  TM_SQLRENDER_DECIMAL,   /* REAL or TEXT with `scale` fraction digits, a number */
  TM_SQLRENDER_TEMPORAL   /* TEXT; fraction zeros trimmed for timestamps */
} tm_sqlrender;

typedef struct tm_sqlrender_spec {
  tm_sqlrender how;
  int32_t scale;          /* DECIMAL */
  bool timestamp;         /* TEMPORAL: trim the fraction's trailing zeros */
} tm_sqlrender_spec;

/** The rendering of a result column declared `decltype` (may be NULL). */
tm_sqlrender_spec tm_sqlrender_for_decl(const char *decltype);

/* ---- SQL access to engines (used by sql.c) ------------------------------ */

/*
 * How the SQL session shows an engine's dataset:
 *   columnar engines (cayenne, arrow): a virtual table over snapshots;
 *   sqlite: ATTACH of the engine's database, whose table has the dataset's name.
 */
bool tm_engine__is_columnar(const tm_engine *e);
/** sqlite engines: the URI to ATTACH (owned by e) and the table name in it. */
const char *tm_sqlite_engine__uri(const tm_engine *e);

#endif
