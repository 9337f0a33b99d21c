/*
 * buf.h - capped growable byte buffers (util layer).
 *
 * Every buffer grown from outside input gets a hard limit when it is
 * initialised (curl's dynbuf): HTTP bodies, Thrift footers, pages,
 * decompressed blocks, metadata JSON. Growing past the limit fails with
 * TM_ETOOLARGE instead of allocating.
 *
 * The contents are always followed by a NUL byte (not counted in len) once
 * anything was appended, so a buffer of text can be used as a C string.
 */
#ifndef TM_UTIL_BUF_H
#define TM_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct tm_buf {
  char *ptr;    /* owned; NULL until the first growth */
  size_t len;   /* bytes in use */
  size_t cap;   /* bytes allocated, including room for the trailing NUL */
  size_t limit; /* hard cap on len */
} tm_buf;

#define TM_BUF_INIT(lim) {NULL, 0, 0, (lim)}
#define TM_BUF_UNLIMITED ((size_t)1 << 40)

void tm_buf_init(tm_buf *b, size_t limit);
/** Ensures room for `extra` more bytes. TM_ETOOLARGE past the limit, TM_ENOMEM. */
int tm_buf_reserve(tm_buf *b, size_t extra, tm_error *err) TM_WARN_UNUSED;
int tm_buf_append(tm_buf *b, const void *data, size_t n, tm_error *err) TM_WARN_UNUSED;
int tm_buf_puts(tm_buf *b, const char *s, tm_error *err) TM_WARN_UNUSED;
int tm_buf_putc(tm_buf *b, char c, tm_error *err) TM_WARN_UNUSED;
int tm_buf_printf(tm_buf *b, tm_error *err, const char *fmt, ...) TM_PRINTF(3, 4)
    TM_WARN_UNUSED;
int tm_buf_vprintf(tm_buf *b, tm_error *err, const char *fmt, va_list ap) TM_WARN_UNUSED;
/** Grows len by n zero bytes and returns a pointer to them via out. */
int tm_buf_extend(tm_buf *b, size_t n, void **out, tm_error *err) TM_WARN_UNUSED;
/** Keeps the allocation, empties the contents. */
void tm_buf_clear(tm_buf *b);
/** Shrinks len to n (n <= len). */
void tm_buf_truncate(tm_buf *b, size_t n);
/**
 * Steals the contents: returns the pointer (owned by the caller, release with
 * tm_free; never NULL unless allocation fails) and leaves b empty.
 */
char *tm_buf_take(tm_buf *b, size_t *len_out);
void tm_buf_dispose(tm_buf *b);
/** A C string view of the contents; "" when empty. Valid until b changes. */
const char *tm_buf_cstr(const tm_buf *b);

/*
 * tm_vec - a growable array of fixed-size elements, capped by element count.
 */
typedef struct tm_vec {
  void *ptr;        /* owned */
  size_t len;       /* elements in use */
  size_t cap;       /* elements allocated */
  size_t elem_size; /* bytes per element */
  size_t limit;     /* hard cap on len */
} tm_vec;

void tm_vec_init(tm_vec *v, size_t elem_size, size_t limit);
int tm_vec_reserve(tm_vec *v, size_t extra, tm_error *err) TM_WARN_UNUSED;
/** Appends a copy of *elem (elem_size bytes). */
int tm_vec_push(tm_vec *v, const void *elem, tm_error *err) TM_WARN_UNUSED;
/** Appends a zeroed element and returns it via out. */
int tm_vec_push_zero(tm_vec *v, void **out, tm_error *err) TM_WARN_UNUSED;
static inline void *tm_vec_at(const tm_vec *v, size_t i) {
  return (char *)v->ptr + i * v->elem_size;
}
void tm_vec_clear(tm_vec *v);
void tm_vec_dispose(tm_vec *v);

#endif
