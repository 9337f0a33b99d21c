/*
 * batch.h - the columnar batch every layer exchanges (format layer).
 *
 * A tm_batch is up to 64K rows: a typed tm_schema plus one Arrow C Data
 * Interface struct array (format "+s") whose children are the columns.
 * Sources produce batches, engines and output encoders consume them; nothing
 * else carries rows. tm_batch_export hands the same memory to any Arrow
 * consumer through the standard ArrowSchema/ArrowArray pair.
 *
 * Invariant: every array we build has offset 0, and column buffers follow the
 * Arrow layout: validity bitmap (NULL when no nulls), then values (fixed
 * width; bit-packed for bool) or int32 offsets + data for utf8/binary.
 *
 * Reading: tm_batch_col() returns a tm_colview, a non-owning view of one
 * column valid while the batch lives. Building: tm_batch_builder holds one
 * tm_colbuilder per column; tm_batch_builder_finish moves the buffers into a
 * batch without copying.
 */
#ifndef TM_FORMAT_ARROW_BATCH_H
#define TM_FORMAT_ARROW_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/arrow/abi.h"
#include "format/arrow/schema.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"
#include "util/time.h"

#define TM_BATCH_DEFAULT_ROWS 65536

typedef struct tm_batch {
  tm_schema schema;        /* owned: the column names and types */
  struct ArrowArray array; /* owned struct array; array.release == NULL when empty */
  int64_t n_rows;          /* == array.length */
} tm_batch;

/** An empty, released batch: safe to release again. */
void tm_batch_init(tm_batch *b);
/** Frees the batch's memory; leaves it empty (idempotent). */
void tm_batch_release(tm_batch *b);
/** Moves src into dst (dst must be empty); src becomes empty. */
void tm_batch_move(tm_batch *dst, tm_batch *src);
/**
 * Exports the batch through the Arrow C Data Interface. On success the
 * caller owns schema_out and array_out (release through their callbacks) and
 * b is empty.
 */
int tm_batch_export(tm_batch *b, struct ArrowSchema *schema_out,
                    struct ArrowArray *array_out, tm_error *err) TM_WARN_UNUSED;
/** Total bytes held by the batch's buffers (for memory accounting). */
size_t tm_batch_byte_size(const tm_batch *b);

/* ---- reading --------------------------------------------------------- */

typedef struct tm_colview {
  tm_type type;
  int64_t length;
  int64_t null_count;
  const uint8_t *validity; /* bit i set: row i valid; NULL: all valid */
  const void *values;      /* fixed-width values, bool bits, or int32 offsets */
  const uint8_t *data;     /* utf8/binary bytes */
  const struct ArrowArray *array; /* the column's array (nested types: their children) */
} tm_colview;

/** A view of column i of b; valid while b lives. */
tm_colview tm_batch_col(const tm_batch *b, size_t i);
/** A view of an array of type t (as tm_batch_col; nested arrays keep their children). */
tm_colview tm_colview_of(const struct ArrowArray *a, const tm_type *t);
/**
 * Child k of a nested column: LIST and MAP have one (every element, or every
 * entry struct, of all rows: row i's are [offsets[i], offsets[i+1])); a
 * STRUCT has one per field, as long as the struct.
 */
tm_colview tm_colview_child(const tm_colview *c, size_t k);
/**
 * Checks a nested column's offsets against its child: offsets[0] >= 0, never
 * decreasing, the last within the child's length; children of a struct as
 * long as the struct; recursively. For arrays that come from outside.
 */
int tm_colview_check(const tm_colview *c, tm_error *err) TM_WARN_UNUSED;

static inline bool tm_bit_get(const uint8_t *bits, int64_t i) {
  return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void tm_bit_set(uint8_t *bits, int64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void tm_bit_clear(uint8_t *bits, int64_t i) {
  bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

static inline bool tm_colview_is_null(const tm_colview *c, int64_t i) {
  return c->validity && !tm_bit_get(c->validity, i);
}
static inline tm_strview tm_colview_bytes(const tm_colview *c, int64_t i) {
  if (c->type.id == TM_TYPE_FIXED_BINARY) {
    size_t w = (size_t)c->type.width;
    return tm_sv((const char *)c->values + (size_t)i * w, w);
  }
  const int32_t *off = c->values;
  return tm_sv((const char *)c->data + off[i], (size_t)(off[i + 1] - off[i]));
}

/** One cell as a tagged value; var-width payloads point into the batch. */
typedef struct tm_value {
  tm_type_id type;
  bool is_null;
  union {
    bool b;
    int64_t i;       /* signed ints, DATE32, TIME64, TIMESTAMP */
    uint64_t u;      /* unsigned ints */
    double f;        /* FLOAT32, FLOAT64 */
    tm_strview s;    /* UTF8, BINARY, FIXED_BINARY */
    uint8_t dec[16]; /* DECIMAL128, little-endian two's complement */
  } v;
} tm_value;

/**
 * The instant of a time value of type t read under time_format f (SPEC A4):
 * timestamps in their unit, dates as midnight UTC, integers as unix_seconds
 * (UNSET), unix_millis or unix_nanos, strings as RFC 3339. False for NULL,
 * for text that does not parse and for a type that holds no time. The one
 * conversion of a value to an instant (refresh bounds, the engines' retention
 * and newest-per-key ordering, status).
 */
bool tm_value_instant(const tm_type *t, tm_time_format f, const tm_value *v, tm_instant *out);

void tm_colview_get(const tm_colview *c, int64_t row, tm_value *out);
/** Integer-like cells (ints, date, time, timestamp, bool) as int64; uint64 > INT64_MAX clamps. */
int64_t tm_colview_int(const tm_colview *c, int64_t row);
double tm_colview_double(const tm_colview *c, int64_t row);

/**
 * Total order on non-null values of one type: <0, 0, >0. Floats order NaN
 * after everything; strings and binaries compare bytewise (unsigned).
 */
int tm_value_cmp(const tm_value *a, const tm_value *b);
/** Hash of a cell's value, equal for equal values (NULL hashes to a constant). */
uint64_t tm_value_hash(const tm_value *v);

/* ---- building -------------------------------------------------------- */

typedef struct tm_colbuilder {
  tm_type type;
  int64_t length;
  int64_t null_count;
  tm_buf validity; /* bitmap; empty until the first null */
  tm_buf values;   /* fixed-width values, bool bits, or int32 offsets (length + 1) */
  tm_buf data;     /* utf8/binary bytes */
  /* Nested types: LIST and MAP one child builder (the elements, the entry
   * structs), STRUCT one per field; values holds a LIST's or MAP's offsets. */
  struct tm_colbuilder *children;
  size_t n_children;
  bool broken;     /* a child builder could not be allocated: appends fail */
} tm_colbuilder;

/** limit_bytes caps each buffer (0: 1 GiB). */
void tm_colbuilder_init(tm_colbuilder *cb, tm_type type, size_t limit_bytes);
void tm_colbuilder_dispose(tm_colbuilder *cb);
void tm_colbuilder_reset(tm_colbuilder *cb);
/** Room for n more rows and data_bytes more var-width bytes. */
int tm_colbuilder_reserve(tm_colbuilder *cb, int64_t n, size_t data_bytes, tm_error *err)
    TM_WARN_UNUSED;

int tm_colbuilder_append_null(tm_colbuilder *cb, tm_error *err) TM_WARN_UNUSED;
int tm_colbuilder_append_nulls(tm_colbuilder *cb, int64_t n, tm_error *err) TM_WARN_UNUSED;
/** Signed ints, DATE32, TIME64, TIMESTAMP, BOOL (0/1); range-checked for narrow types. */
int tm_colbuilder_append_int(tm_colbuilder *cb, int64_t v, tm_error *err) TM_WARN_UNUSED;
int tm_colbuilder_append_uint(tm_colbuilder *cb, uint64_t v, tm_error *err) TM_WARN_UNUSED;
int tm_colbuilder_append_double(tm_colbuilder *cb, double v, tm_error *err) TM_WARN_UNUSED;
int tm_colbuilder_append_bool(tm_colbuilder *cb, bool v, tm_error *err) TM_WARN_UNUSED;
/** UTF8, BINARY, FIXED_BINARY (len must equal width). No UTF-8 validation. */
int tm_colbuilder_append_bytes(tm_colbuilder *cb, const void *p, size_t len, tm_error *err)
    TM_WARN_UNUSED;
int tm_colbuilder_append_decimal(tm_colbuilder *cb, const uint8_t le16[16], tm_error *err)
    TM_WARN_UNUSED;
/**
 * Nested builders: append the slot's elements (LIST, MAP) or one value to
 * every field (STRUCT) through tm_colbuilder_child, then close the slot as a
 * valid value with tm_colbuilder_append_nested. A NULL slot is
 * tm_colbuilder_append_null (a STRUCT then appends a NULL to each field).
 */
static inline tm_colbuilder *tm_colbuilder_child(tm_colbuilder *cb, size_t k) {
  return &cb->children[k];
}
int tm_colbuilder_append_nested(tm_colbuilder *cb, tm_error *err) TM_WARN_UNUSED;
/** A NULL slot whose children the caller appended already (a STRUCT's fields). */
int tm_colbuilder_append_nested_null(tm_colbuilder *cb, tm_error *err) TM_WARN_UNUSED;
/** Appends a value of the builder's type family (NULL values too). */
int tm_colbuilder_append_value(tm_colbuilder *cb, const tm_value *v, tm_error *err)
    TM_WARN_UNUSED;
/** Copies rows [from, from+n) of src, which must have the builder's type. */
int tm_colbuilder_append_range(tm_colbuilder *cb, const tm_colview *src, int64_t from,
                               int64_t n, tm_error *err) TM_WARN_UNUSED;

/**
 * Moves the buffers into an Arrow array (owned by the caller, released via
 * its callback) and resets the builder for reuse.
 */
int tm_colbuilder_finish(tm_colbuilder *cb, struct ArrowArray *out, tm_error *err)
    TM_WARN_UNUSED;

typedef struct tm_batch_builder {
  tm_schema schema;    /* owned copy */
  tm_colbuilder *cols; /* owned, schema.n_cols entries */
} tm_batch_builder;

int tm_batch_builder_init(tm_batch_builder *bb, const tm_schema *schema, tm_error *err)
    TM_WARN_UNUSED;
void tm_batch_builder_dispose(tm_batch_builder *bb);
static inline tm_colbuilder *tm_batch_builder_col(tm_batch_builder *bb, size_t i) {
  return &bb->cols[i];
}
/** Rows appended so far (column 0's length; 0 for an empty schema). */
int64_t tm_batch_builder_rows(const tm_batch_builder *bb);
/**
 * Finishes every column into out (which must be empty) and resets the builder.
 * All columns must have the same length, else TM_EINVALID.
 */
int tm_batch_builder_finish(tm_batch_builder *bb, tm_batch *out, tm_error *err)
    TM_WARN_UNUSED;

/** Builds a batch from arrays already made; takes ownership of cols. */
int tm_batch_from_arrays(tm_batch *out, const tm_schema *schema, struct ArrowArray *cols,
                         int64_t n_rows, tm_error *err) TM_WARN_UNUSED;

/**
 * Moves column i of b into *out (owned by the caller, released through its
 * callback). b keeps a released placeholder in that slot: do not read
 * column i of b again. For zero-copy re-assembly with tm_batch_from_arrays.
 */
int tm_batch_take_column(tm_batch *b, size_t i, struct ArrowArray *out, tm_error *err)
    TM_WARN_UNUSED;
/** An array of n NULLs of type t (owned by the caller). */
int tm_array_make_nulls(tm_type t, int64_t n, struct ArrowArray *out, tm_error *err)
    TM_WARN_UNUSED;
/** An array of n copies of v (of type t; NULL allowed), owned by the caller. */
int tm_array_make_constant(tm_type t, const tm_value *v, int64_t n, struct ArrowArray *out,
                           tm_error *err) TM_WARN_UNUSED;

/**
 * Copies the rows of in whose bit is set in keep (n_rows bits) into out
 * (empty). Column order and types are kept.
 */
int tm_batch_filter(const tm_batch *in, const uint8_t *keep, tm_batch *out, tm_error *err)
    TM_WARN_UNUSED;
/** Copies the columns listed in idx (n entries) into out, in that order. */
int tm_batch_project(const tm_batch *in, const size_t *idx, size_t n, tm_batch *out,
                     tm_error *err) TM_WARN_UNUSED;

#endif
