/*
 * schema.h - column types and schemas (format layer).
 *
 * tm_type is the logical type of a column as every layer sees it; it maps
 * one-to-one onto an Arrow C Data Interface format string. tm_schema is an
 * ordered list of named columns with nullability and, when known, the
 * Parquet/Iceberg field id.
 */
#ifndef TM_FORMAT_ARROW_SCHEMA_H
#define TM_FORMAT_ARROW_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/abi.h"
#include "util/buf.h"
#include "util/error.h"

typedef enum tm_type_id {
  TM_TYPE_INVALID = 0,
  TM_TYPE_BOOL,
  TM_TYPE_INT8,
  TM_TYPE_INT16,
  TM_TYPE_INT32,
  TM_TYPE_INT64,
  TM_TYPE_UINT8,
  TM_TYPE_UINT16,
  TM_TYPE_UINT32,
  TM_TYPE_UINT64,
  TM_TYPE_FLOAT32,
  TM_TYPE_FLOAT64,
  TM_TYPE_DECIMAL128, /* 16-byte little-endian two's complement, precision/scale */
  TM_TYPE_UTF8,       /* int32 offsets + bytes */
  TM_TYPE_BINARY,     /* int32 offsets + bytes */
  TM_TYPE_FIXED_BINARY, /* `width` bytes per value; `uuid` marks UUIDs */
  TM_TYPE_DATE32,     /* int32 days since the epoch */
  TM_TYPE_TIME64,     /* int64 since midnight in `unit` (micro or nano) */
  TM_TYPE_TIMESTAMP,  /* int64 since the epoch in `unit`; `utc`: has a zone */
  TM_TYPE_LIST,       /* "+l": int32 offsets (length + 1) + one child, the elements */
  TM_TYPE_STRUCT,     /* "+s": one child per field, each as long as the struct */
  TM_TYPE_MAP,        /* "+m": int32 offsets + one child, struct<key not null, value> */
  TM_TYPE__COUNT
} tm_type_id;

typedef enum tm_time_unit {
  TM_UNIT_SECOND = 0,
  TM_UNIT_MILLI = 1,
  TM_UNIT_MICRO = 2,
  TM_UNIT_NANO = 3
} tm_time_unit;

struct tm_ntype;

typedef struct tm_type {
  tm_type_id id;
  /* LIST, STRUCT, MAP: the children, interned (tm_type_nested): immutable and
   * alive for the whole process, so a tm_type stays a plain value to copy. */
  const struct tm_ntype *nested;
  tm_time_unit unit; /* TIMESTAMP, TIME64 */
  bool utc;          /* TIMESTAMP: adjusted to UTC (a zone was given) */
  bool uuid;         /* FIXED_BINARY(16) holding a UUID */
  int32_t precision; /* DECIMAL128: 1..38 */
  int32_t scale;     /* DECIMAL128: 0..precision */
  int32_t width;     /* FIXED_BINARY: bytes per value, > 0 */
} tm_type;

/** A type with only the id set (for ids without parameters). */
static inline tm_type tm_type_of(tm_type_id id) {
  tm_type t = {0};
  t.id = id;
  return t;
}
tm_type tm_type_timestamp(tm_time_unit unit, bool utc);

/*
 * Nested types (issue 16). A LIST has one child (the element, named
 * "element"), a MAP one child (the entries: a STRUCT of "key", not null, and
 * "value"), a STRUCT one child per field. Descriptors are interned: equal
 * types share one descriptor, so tm_type_equal compares pointers. The table
 * is capped (TM_NTYPE_MAX distinct types, TM_NTYPE_MAX_BYTES of descriptors)
 * because a hostile file can name many types.
 */
typedef struct tm_ntype {
  tm_type_id id;              /* LIST, STRUCT, MAP */
  size_t n;                   /* children */
  const struct tm_type *child; /* n types */
  const char *const *name;    /* n names */
  const bool *nullable;       /* n flags */
  const char *sig;            /* canonical text, e.g. list<int32>, struct<"a":int64!> */
  int depth;                  /* 1 + the deepest child's depth */
} tm_ntype;

#define TM_NTYPE_MAX 65536
#define TM_NTYPE_MAX_BYTES ((size_t)64 << 20)
#define TM_NTYPE_MAX_DEPTH 64
#define TM_NTYPE_MAX_FIELDS 4096

/** A LIST of elem (elements nullable or not). */
int tm_type_list(const tm_type *elem, bool elem_nullable, tm_type *out, tm_error *err)
    TM_WARN_UNUSED;
/** A MAP of key (never null) to value. */
int tm_type_map(const tm_type *key, const tm_type *value, bool value_nullable, tm_type *out,
                tm_error *err) TM_WARN_UNUSED;
/** A STRUCT of n fields (names copied; n >= 1). */
int tm_type_struct(size_t n, const char *const *names, const tm_type *types,
                   const bool *nullable, tm_type *out, tm_error *err) TM_WARN_UNUSED;
static inline bool tm_type_is_nested(const tm_type *t) {
  return t->id == TM_TYPE_LIST || t->id == TM_TYPE_STRUCT || t->id == TM_TYPE_MAP;
}
/**
 * Any type as text (names, nullability and formats of every node, length
 * prefixed), for stores that keep a schema; tm_type_decode reads it back
 * (TM_ECORRUPT for text it did not write).
 */
int tm_type_encode(const tm_type *t, tm_buf *out, tm_error *err) TM_WARN_UNUSED;
int tm_type_decode(const char *s, size_t len, tm_type *out, tm_error *err) TM_WARN_UNUSED;
/** Same physical layout: equal flat types, nested ones of the same kinds and
 * child counts all the way down (names and nullability may differ). */
bool tm_type_same_layout(const tm_type *a, const tm_type *b);
/*
 * Field ids of the members of a nested type (Iceberg ids them all; Parquet
 * stores them on the members' schema elements) are kept as an array of
 * "id slots": one per member below the root, depth first, each member's slot
 * followed by the slots of its own subtree: a STRUCT's fields in order, a
 * LIST's element, a MAP's key then its value (the entries struct has no
 * slot). -1 in a slot: no id. The number of slots of t (0 for flat types).
 */
size_t tm_type_id_slots(const tm_type *t);
/** The type's nested depth: 0 for flat types. */
int tm_type_depth(const tm_type *t);
tm_type tm_type_decimal(int32_t precision, int32_t scale);
tm_type tm_type_fixed(int32_t width);

bool tm_type_equal(const tm_type *a, const tm_type *b);
/** Bytes per value in the values buffer; 0 for var-width and bool (bits). */
size_t tm_type_byte_width(const tm_type *t);
bool tm_type_is_var(const tm_type *t);      /* UTF8, BINARY */
bool tm_type_is_integer(const tm_type *t);  /* INT*, UINT* */
bool tm_type_is_signed_int(const tm_type *t);
bool tm_type_is_temporal(const tm_type *t); /* DATE32, TIME64, TIMESTAMP */
/** Units per second for a time unit (1, 1e3, 1e6, 1e9). */
int64_t tm_unit_per_second(tm_time_unit unit);
const char *tm_unit_name(tm_time_unit unit); /* "s", "ms", "us", "ns" */

/** Human-readable name, e.g. "int64", "timestamp(us, UTC)", "decimal(10,2)",
 * "list<int32>" (nested types: their full signature, cut at cap). */
size_t tm_type_name(const tm_type *t, char *buf, size_t cap);
/**
 * The Arrow format string (e.g. "l", "tsu:UTC", "d:10,2", "w:16").
 * buf must hold at least 32 bytes.
 */
int tm_type_to_arrow_format(const tm_type *t, char *buf, size_t cap);
/** Parses an Arrow format string we support; TM_EUNSUPPORTED otherwise. */
int tm_type_from_arrow_format(const char *fmt, tm_type *out, tm_error *err) TM_WARN_UNUSED;

typedef struct tm_column {
  char *name;       /* owned */
  tm_type type;
  bool nullable;
  int32_t field_id; /* Parquet/Iceberg field id, -1 when unknown */
} tm_column;

typedef struct tm_schema {
  tm_column *cols; /* owned array of n_cols */
  size_t n_cols;
  size_t cap;
} tm_schema;

void tm_schema_init(tm_schema *s);
void tm_schema_dispose(tm_schema *s);
/** Appends a column (name copied). */
int tm_schema_add(tm_schema *s, const char *name, tm_type type, bool nullable,
                  int32_t field_id, tm_error *err) TM_WARN_UNUSED;
/** Deep copy into an initialised, empty dst. */
int tm_schema_copy(tm_schema *dst, const tm_schema *src, tm_error *err) TM_WARN_UNUSED;
/** Index of the column named name (exact match), or -1. */
int tm_schema_find(const tm_schema *s, const char *name);
/** Same, ignoring ASCII case. */
int tm_schema_find_nocase(const tm_schema *s, const char *name);
/** Same names, types and nullability, in the same order. */
bool tm_schema_equal(const tm_schema *a, const tm_schema *b);
/**
 * A stable text fingerprint of names and types ("id:int64,ts:timestamp(us, UTC)"),
 * used to detect schema changes (SPEC B9). Appended to out.
 */
int tm_schema_fingerprint(const tm_schema *s, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/**
 * Exports the schema as an Arrow struct schema ("+s") with one child per
 * column. out is owned by the caller and released through out->release.
 */
int tm_schema_to_arrow(const tm_schema *s, struct ArrowSchema *out, tm_error *err)
    TM_WARN_UNUSED;
/** Imports a "+s" Arrow schema into an initialised, empty tm_schema. */
int tm_schema_from_arrow(tm_schema *out, const struct ArrowSchema *in, tm_error *err)
    TM_WARN_UNUSED;

#endif
