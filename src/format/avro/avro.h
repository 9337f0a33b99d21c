/*
 * avro.h - Avro object container files: schemas, a bounded decoder into value
 * trees, and a writer (format layer).
 *
 * We read Avro for Iceberg manifest lists and manifests, which come from
 * third parties (Spark, Trino, Impala, DuckDB, PyIceberg). The decoder is our
 * own rather than Debian's libavro, which lacks the zstandard codec and is
 * not hardened against hostile input (docs/FORMATS.md, "Avro"). Every length,
 * count and nesting level read from a file is checked against the file and
 * against tm_avro_limits before it is used.
 *
 * Reading: tm_avro_reader_open() parses the header (magic, metadata map with
 * the writer schema and codec, sync marker) through a tm_input; then
 * tm_avro_reader_next() returns one record at a time as a tm_avro_value tree
 * decoded with the writer schema. Codecs: null, deflate, snappy (with its
 * CRC32 trailer) and zstandard; bzip2 and xz are refused with
 * TM_EUNSUPPORTED.
 *
 * Writing: tm_avro_writer builds a container file (codecs null and deflate)
 * in memory from encoded datums (the tm_avro_put_* helpers) or from value
 * trees; the caller publishes the bytes (atomically, through io.h).
 */
#ifndef TM_FORMAT_AVRO_AVRO_H
#define TM_FORMAT_AVRO_AVRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

/* ---- schemas ----------------------------------------------------------- */

typedef enum tm_avro_kind {
  TM_AVRO_NULL = 0,
  TM_AVRO_BOOLEAN,
  TM_AVRO_INT,
  TM_AVRO_LONG,
  TM_AVRO_FLOAT,
  TM_AVRO_DOUBLE,
  TM_AVRO_BYTES,
  TM_AVRO_STRING,
  TM_AVRO_RECORD,
  TM_AVRO_ENUM,
  TM_AVRO_ARRAY,
  TM_AVRO_MAP,
  TM_AVRO_UNION,
  TM_AVRO_FIXED
} tm_avro_kind;

/* Logical types we recognise; an invalid or unknown one reads as NONE. */
typedef enum tm_avro_logical {
  TM_AVRO_LT_NONE = 0,
  TM_AVRO_LT_DECIMAL,          /* bytes or fixed: big-endian two's complement */
  TM_AVRO_LT_UUID,             /* string or fixed(16) */
  TM_AVRO_LT_DATE,             /* int: days since the epoch */
  TM_AVRO_LT_TIME_MILLIS,      /* int */
  TM_AVRO_LT_TIME_MICROS,      /* long */
  TM_AVRO_LT_TIMESTAMP_MILLIS, /* long */
  TM_AVRO_LT_TIMESTAMP_MICROS, /* long */
  TM_AVRO_LT_TIMESTAMP_NANOS,  /* long */
  TM_AVRO_LT_LOCAL_TIMESTAMP_MILLIS,
  TM_AVRO_LT_LOCAL_TIMESTAMP_MICROS,
  TM_AVRO_LT_LOCAL_TIMESTAMP_NANOS,
  TM_AVRO_LT_DURATION,         /* fixed(12) */
  TM_AVRO_LT_MAP               /* Iceberg: array of 2-field key/value records */
} tm_avro_logical;

typedef struct tm_avro_schema tm_avro_schema;

typedef struct tm_avro_field {
  const char *name;     /* owned by the schema tree */
  tm_avro_schema *type; /* owned by the schema tree */
  int32_t field_id;     /* Iceberg "field-id", -1 when absent */
  bool has_default;
} tm_avro_field;

struct tm_avro_schema {
  tm_avro_kind kind;
  tm_avro_logical logical;
  const char *name;            /* fullname of a record, enum or fixed; else NULL */
  tm_avro_field *fields;       /* RECORD: n_fields entries */
  size_t n_fields;
  const char **symbols;        /* ENUM: n_symbols entries */
  size_t n_symbols;
  tm_avro_schema *items;       /* ARRAY: item schema; MAP: value schema */
  tm_avro_schema **branches;   /* UNION: n_branches entries */
  size_t n_branches;
  int64_t size;                /* FIXED: bytes per value */
  int32_t precision, scale;    /* DECIMAL */
  bool adjust_to_utc;          /* Iceberg "adjust-to-utc" on timestamps */
  int32_t element_id;          /* Iceberg "element-id" on arrays, -1 when absent */
  int32_t key_id, value_id;    /* Iceberg "key-id"/"value-id" on maps, -1 when absent */
  tm_arena *arena;             /* root only: owns every node of the tree */
};

/**
 * Parses an Avro schema from JSON text (at most 4 MiB, nesting at most 64).
 * On success *out is the root of a tree owned by the caller
 * (tm_avro_schema_free). TM_ECORRUPT names the problem for malformed schemas,
 * TM_ETOOLARGE past the limits.
 */
int tm_avro_schema_parse(tm_avro_schema **out, const char *json, size_t len,
                         tm_error *err) TM_WARN_UNUSED;
/** Frees a tree returned by tm_avro_schema_parse (NULL is a no-op). */
void tm_avro_schema_free(tm_avro_schema *root);
/** "record", "long", ... */
const char *tm_avro_kind_name(tm_avro_kind kind);
/** Index of the record field named name, or -1. */
int tm_avro_schema_field_index(const tm_avro_schema *record, const char *name);
/** Index of the record field with Iceberg field id id, or -1. */
int tm_avro_schema_field_index_by_id(const tm_avro_schema *record, int32_t id);
/** For a union of null and one other branch, that branch; else s itself. */
const tm_avro_schema *tm_avro_schema_nonnull(const tm_avro_schema *s);

/* ---- values ------------------------------------------------------------ */

typedef struct tm_avro_value tm_avro_value;

/**
 * One decoded value. `schema` is the value's own (non-union) schema: for a
 * value of a union it is the branch that was taken, and `branch` its index
 * (-1 outside unions). Byte payloads point into the reader's block buffer.
 */
struct tm_avro_value {
  const tm_avro_schema *schema;
  int32_t branch;
  union {
    bool b;                        /* BOOLEAN */
    int64_t l;                     /* INT, LONG, ENUM (symbol index) */
    float f;                       /* FLOAT */
    double d;                      /* DOUBLE */
    struct {
      const uint8_t *ptr;
      size_t len;
    } bytes;                       /* BYTES, STRING, FIXED */
    struct {
      tm_avro_value *items;
      size_t n;
    } list;                        /* RECORD (fields in schema order), ARRAY */
    struct {
      tm_strview *keys;
      tm_avro_value *values;
      size_t n;
    } map;                         /* MAP */
  } u;
};

static inline tm_avro_kind tm_avro_value_kind(const tm_avro_value *v) {
  return v->schema->kind;
}
static inline bool tm_avro_is_null(const tm_avro_value *v) {
  return !v || v->schema->kind == TM_AVRO_NULL;
}
/** The record field named name, or NULL (v must be a RECORD). */
const tm_avro_value *tm_avro_record_get(const tm_avro_value *v, const char *name);
/** The record field with Iceberg field id id, or NULL. */
const tm_avro_value *tm_avro_record_get_id(const tm_avro_value *v, int32_t id);
/**
 * Integer of an INT, LONG or ENUM value; false for other kinds and NULL.
 */
bool tm_avro_get_long(const tm_avro_value *v, int64_t *out);
/** Bytes of a STRING, BYTES or FIXED value; false for other kinds and NULL. */
bool tm_avro_get_bytes(const tm_avro_value *v, tm_strview *out);

/**
 * Converts a big-endian two's complement integer of len bytes (Avro and
 * Iceberg decimals) to a 16-byte little-endian one. TM_ECORRUPT when it
 * does not fit in 128 bits.
 */
int tm_avro_decimal_to_le16(const uint8_t *be, size_t len, uint8_t le[16], tm_error *err)
    TM_WARN_UNUSED;

/**
 * Renders v as JSON-like text (for tests and debugging): records as objects,
 * bytes as "\uXXXX"-escaped strings, enums by symbol.
 */
int tm_avro_value_to_text(tm_buf *out, const tm_avro_value *v, tm_error *err)
    TM_WARN_UNUSED;

/* ---- decoding ---------------------------------------------------------- */

typedef struct tm_avro_limits {
  size_t max_block_bytes;  /* one block, compressed or decompressed; default 64 MiB */
  size_t max_record_bytes; /* memory of one decoded record tree; default 64 MiB */
  size_t max_meta_bytes;   /* the header's metadata map; default 16 MiB */
  int max_depth;           /* nesting of values; default 64 */
} tm_avro_limits;

/** Fills lim with the defaults above. */
void tm_avro_limits_default(tm_avro_limits *lim);

/**
 * Decodes one datum of schema s from [*p, end) into *out, advancing *p.
 * Values are allocated from arena. TM_ECORRUPT when the bytes do not match
 * the schema, TM_ETOOLARGE past the arena's limit or max_depth.
 */
int tm_avro_decode(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                   tm_arena *arena, int max_depth, tm_avro_value *out, tm_error *err)
    TM_WARN_UNUSED;

typedef struct tm_avro_reader tm_avro_reader;

/**
 * Opens a container file read through in (not owned; must outlive the
 * reader). lim may be NULL for the defaults. On success the caller owns *out
 * (tm_avro_reader_free). Errors: TM_ECORRUPT (bad magic, header, schema),
 * TM_EUNSUPPORTED (codec), TM_ETOOLARGE, TM_EIO from the input. Messages
 * name the input.
 */
int tm_avro_reader_open(tm_avro_reader **out, tm_input *in, const tm_avro_limits *lim,
                        tm_error *err) TM_WARN_UNUSED;
/** The writer schema; owned by the reader. */
const tm_avro_schema *tm_avro_reader_schema(const tm_avro_reader *r);
/** The codec name ("null" when absent). */
const char *tm_avro_reader_codec(const tm_avro_reader *r);
/**
 * A header metadata value (NUL-terminated copy owned by the reader), or NULL
 * when absent. len_out may be NULL.
 */
const char *tm_avro_reader_meta(const tm_avro_reader *r, const char *key, size_t *len_out);
/**
 * Decodes the next record. *out is valid until the next call or free.
 * TM_ITEROVER after the last record; TM_ECORRUPT for bad blocks (wrong sync
 * marker, truncated data, bytes left over in a block, bad checksum).
 */
int tm_avro_reader_next(tm_avro_reader *r, const tm_avro_value **out, tm_error *err)
    TM_WARN_UNUSED;
/** Records returned so far. */
int64_t tm_avro_reader_records(const tm_avro_reader *r);
void tm_avro_reader_free(tm_avro_reader *r);

/* ---- encoding ---------------------------------------------------------- */

/* Binary encoding of primitives, appended to b. */
int tm_avro_put_long(tm_buf *b, int64_t v, tm_error *err) TM_WARN_UNUSED; /* int too */
int tm_avro_put_bool(tm_buf *b, bool v, tm_error *err) TM_WARN_UNUSED;
int tm_avro_put_float(tm_buf *b, float v, tm_error *err) TM_WARN_UNUSED;
int tm_avro_put_double(tm_buf *b, double v, tm_error *err) TM_WARN_UNUSED;
/** bytes and string: length, then the bytes. */
int tm_avro_put_bytes(tm_buf *b, const void *p, size_t len, tm_error *err) TM_WARN_UNUSED;
int tm_avro_put_string(tm_buf *b, const char *s, tm_error *err) TM_WARN_UNUSED;
/** fixed: the bytes only. */
int tm_avro_put_fixed(tm_buf *b, const void *p, size_t len, tm_error *err) TM_WARN_UNUSED;

/**
 * Encodes v as a datum of schema s (which may be a union: the branch is
 * v->branch, or the branch whose kind matches v). TM_EINVALID when v does
 * not fit s.
 */
int tm_avro_encode(tm_buf *out, const tm_avro_schema *s, const tm_avro_value *v,
                   tm_error *err) TM_WARN_UNUSED;

typedef enum tm_avro_codec {
  TM_AVRO_CODEC_NULL = 0,
  TM_AVRO_CODEC_DEFLATE
} tm_avro_codec;

typedef struct tm_avro_writer tm_avro_writer;

/**
 * Starts a container file in memory. schema_json is the writer schema text
 * (parsed and kept; TM_ECORRUPT if invalid); meta (may be NULL) adds header
 * metadata entries (keys starting "avro." are refused with TM_EINVALID).
 * The caller owns *out (tm_avro_writer_free).
 */
int tm_avro_writer_new(tm_avro_writer **out, const char *schema_json, tm_avro_codec codec,
                       const tm_kv *meta, tm_error *err) TM_WARN_UNUSED;
/** The parsed writer schema (owned by the writer). */
const tm_avro_schema *tm_avro_writer_schema(const tm_avro_writer *w);
/** Appends one datum already encoded with the writer schema. */
int tm_avro_writer_append_encoded(tm_avro_writer *w, const void *datum, size_t len,
                                  tm_error *err) TM_WARN_UNUSED;
/** Encodes v with the writer schema and appends it. */
int tm_avro_writer_append(tm_avro_writer *w, const tm_avro_value *v, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Flushes the last block and moves the whole file into out (out's previous
 * contents are freed). The writer cannot be appended to afterwards.
 */
int tm_avro_writer_finish(tm_avro_writer *w, tm_buf *out, tm_error *err) TM_WARN_UNUSED;
void tm_avro_writer_free(tm_avro_writer *w);

#endif
