/*
 * thrift.h - the Thrift compact protocol: a bounded decoder and an encoder
 * (format layer).
 *
 * Parquet stores its footer (FileMetaData) and every page header as Thrift
 * structs in the compact protocol. The decoder works on a byte range that is
 * already in memory and never allocates: binary fields come back as views
 * into the input, and list sizes are checked against the bytes left before a
 * caller may allocate from them (every list element takes at least one
 * byte). Nesting is limited (TM_THRIFT_MAX_DEPTH) so that hostile input
 * cannot exhaust the stack while skipping unknown fields.
 *
 * Decoding pattern:
 *
 *   tm_thrift_struct st;
 *   tm_thrift_field f;
 *   TM_TRY(tm_thrift_struct_begin(r, &st, err));
 *   while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
 *     switch (f.id) {
 *       case 1: TM_TRY(tm_thrift_read_i32(r, f.type, &x, err)); break;
 *       default: TM_TRY(tm_thrift_skip(r, f.type, err));
 *     }
 *   }
 *   if (rc < 0) return rc;   // 0: the struct ended (STOP)
 *
 * Every error is TM_ECORRUPT with a message that says what was wrong and
 * at which byte offset of the range; callers prefix the file name.
 *
 * The encoder appends to a tm_buf and keeps a sticky status so that a long
 * sequence of writes needs one check at the end (tm_thrift_writer_status).
 */
#ifndef TM_FORMAT_THRIFT_THRIFT_H
#define TM_FORMAT_THRIFT_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

/* Compact protocol type ids (field headers and list element types). */
enum {
  TM_THRIFT_STOP = 0,
  TM_THRIFT_TRUE = 1, /* a bool field holding true; BOOL element type in lists */
  TM_THRIFT_FALSE = 2,
  TM_THRIFT_BYTE = 3,
  TM_THRIFT_I16 = 4,
  TM_THRIFT_I32 = 5,
  TM_THRIFT_I64 = 6,
  TM_THRIFT_DOUBLE = 7,
  TM_THRIFT_BINARY = 8,
  TM_THRIFT_LIST = 9,
  TM_THRIFT_SET = 10,
  TM_THRIFT_MAP = 11,
  TM_THRIFT_STRUCT = 12
};

#define TM_THRIFT_MAX_DEPTH 48

typedef struct tm_thrift_reader {
  const uint8_t *start; /* view of the whole range (not owned) */
  const uint8_t *p;     /* next byte to read */
  const uint8_t *end;   /* one past the last readable byte */
  int depth;            /* structs/containers currently open */
} tm_thrift_reader;

typedef struct tm_thrift_struct {
  int16_t last_id; /* previous field id, for delta-encoded headers */
} tm_thrift_struct;

typedef struct tm_thrift_field {
  int16_t id;
  uint8_t type; /* TM_THRIFT_*; TRUE/FALSE carry a bool field's value */
} tm_thrift_field;

void tm_thrift_reader_init(tm_thrift_reader *r, const void *data, size_t len);
/** Bytes consumed so far. */
static inline size_t tm_thrift_reader_offset(const tm_thrift_reader *r) {
  return (size_t)(r->p - r->start);
}
static inline size_t tm_thrift_reader_left(const tm_thrift_reader *r) {
  return (size_t)(r->end - r->p);
}

/** Enters a struct (checks the depth limit). */
int tm_thrift_struct_begin(tm_thrift_reader *r, tm_thrift_struct *s, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Reads the next field header of the struct: 1 with *f filled, 0 at the STOP
 * byte (the struct is left), or a negative code.
 */
int tm_thrift_next_field(tm_thrift_reader *r, tm_thrift_struct *s, tm_thrift_field *f,
                         tm_error *err) TM_WARN_UNUSED;

/*
 * Value readers. `type` is the field's (or list element's) type; a value of
 * another type is TM_ECORRUPT. Integer readers accept narrower integer types
 * (an i64 reader takes i32, i16 and byte values); the i32 and i16 readers
 * reject values that do not fit.
 */
int tm_thrift_read_i64(tm_thrift_reader *r, uint8_t type, int64_t *out, tm_error *err)
    TM_WARN_UNUSED;
int tm_thrift_read_i32(tm_thrift_reader *r, uint8_t type, int32_t *out, tm_error *err)
    TM_WARN_UNUSED;
int tm_thrift_read_double(tm_thrift_reader *r, uint8_t type, double *out, tm_error *err)
    TM_WARN_UNUSED;
/** A struct field's bool (value in the header: TRUE/FALSE). */
int tm_thrift_read_bool(tm_thrift_reader *r, uint8_t type, bool *out, tm_error *err)
    TM_WARN_UNUSED;
/** A bool list element (one byte). */
int tm_thrift_read_bool_elem(tm_thrift_reader *r, bool *out, tm_error *err) TM_WARN_UNUSED;
/** Binary/string: a view into the reader's range, valid while that range lives. */
int tm_thrift_read_binary(tm_thrift_reader *r, uint8_t type, tm_strview *out, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Reads a list (or set) header. *n_out is guaranteed not to exceed the bytes
 * left in the range, so it is safe to allocate n_out elements of a small
 * struct. The caller reads exactly n elements of *elem_type_out, then calls
 * tm_thrift_list_end.
 */
int tm_thrift_list_begin(tm_thrift_reader *r, uint8_t type, uint8_t *elem_type_out,
                         uint32_t *n_out, tm_error *err) TM_WARN_UNUSED;
void tm_thrift_list_end(tm_thrift_reader *r);
/** Skips one value of the given type (recursively, depth-limited). */
int tm_thrift_skip(tm_thrift_reader *r, uint8_t type, tm_error *err) TM_WARN_UNUSED;

/* Varints outside Thrift structs (Parquet's RLE and delta encodings use them). */
int tm_thrift_read_uvarint(tm_thrift_reader *r, uint64_t *out, tm_error *err) TM_WARN_UNUSED;

/* ---- encoder ------------------------------------------------------------ */

typedef struct tm_thrift_writer {
  tm_buf *out;                         /* not owned */
  int16_t last_id[TM_THRIFT_MAX_DEPTH]; /* per open struct */
  int depth;                           /* open structs */
  int status;                          /* first error, sticky */
  tm_error err;                        /* detail of status */
} tm_thrift_writer;

void tm_thrift_writer_init(tm_thrift_writer *w, tm_buf *out);
/** TM_OK, or the first error any write met (copied into err). */
int tm_thrift_writer_status(const tm_thrift_writer *w, tm_error *err) TM_WARN_UNUSED;

/** Starts the top-level struct (or a list element that is a struct). */
void tm_thrift_write_struct_begin(tm_thrift_writer *w);
/** Writes STOP and leaves the struct. */
void tm_thrift_write_struct_end(tm_thrift_writer *w);
/** A struct-valued field: header, then the struct is open. */
void tm_thrift_write_field_struct(tm_thrift_writer *w, int16_t id);
void tm_thrift_write_field_bool(tm_thrift_writer *w, int16_t id, bool v);
void tm_thrift_write_field_i8(tm_thrift_writer *w, int16_t id, int8_t v);
void tm_thrift_write_field_i32(tm_thrift_writer *w, int16_t id, int32_t v);
void tm_thrift_write_field_i64(tm_thrift_writer *w, int16_t id, int64_t v);
void tm_thrift_write_field_binary(tm_thrift_writer *w, int16_t id, const void *p, size_t len);
/** A list-valued field header; then n elements of elem_type follow. */
void tm_thrift_write_field_list(tm_thrift_writer *w, int16_t id, uint8_t elem_type, uint32_t n);
void tm_thrift_write_i32(tm_thrift_writer *w, int32_t v);
void tm_thrift_write_i64(tm_thrift_writer *w, int64_t v);
void tm_thrift_write_binary(tm_thrift_writer *w, const void *p, size_t len);

/** Appends an unsigned LEB128 varint. */
int tm_thrift_put_uvarint(tm_buf *b, uint64_t v, tm_error *err) TM_WARN_UNUSED;
/** Zigzag mapping used for signed varints. */
static inline uint64_t tm_zigzag64(int64_t v) {
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t tm_unzigzag64(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#endif
