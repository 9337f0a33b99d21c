/*
 * buf.c - capped growable buffers and vectors (util layer). See buf.h.
 */
#include "util/buf.h"

#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

void tm_buf_init(tm_buf *b, size_t limit) {
  b->ptr = NULL;
  b->len = 0;
  b->cap = 0;
  b->limit = limit;
}

int tm_buf_reserve(tm_buf *b, size_t extra, tm_error *err) {
  size_t need;
  if (tm_add_overflow(b->len, extra, &need) || need > b->limit)
    return tm_error_set(err, TM_ETOOLARGE, "buffer limit of %zu bytes exceeded", b->limit);
  if (need + 1 <= b->cap) return TM_OK;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need + 1) {
    if (cap > SIZE_MAX / 2) {
      cap = need + 1;
      break;
    }
    cap *= 2;
  }
  if (cap > b->limit + 1) cap = b->limit + 1;
  char *p = tm_realloc(b->ptr, cap);
  if (!p) return tm_error_nomem(err);
  b->ptr = p;
  b->cap = cap;
  return TM_OK;
}

int tm_buf_append(tm_buf *b, const void *data, size_t n, tm_error *err) {
  TM_TRY(tm_buf_reserve(b, n, err));
  if (n) memcpy(b->ptr + b->len, data, n);
  b->len += n;
  b->ptr[b->len] = '\0';
  return TM_OK;
}

int tm_buf_puts(tm_buf *b, const char *s, tm_error *err) {
  return tm_buf_append(b, s, strlen(s), err);
}

int tm_buf_putc(tm_buf *b, char c, tm_error *err) { return tm_buf_append(b, &c, 1, err); }

int tm_buf_vprintf(tm_buf *b, tm_error *err, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return tm_error_set(err, TM_ERROR, "bad format string");
  TM_TRY(tm_buf_reserve(b, (size_t)n, err));
  vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return TM_OK;
}

int tm_buf_printf(tm_buf *b, tm_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = tm_buf_vprintf(b, err, fmt, ap);
  va_end(ap);
  return rc;
}

int tm_buf_extend(tm_buf *b, size_t n, void **out, tm_error *err) {
  TM_TRY(tm_buf_reserve(b, n, err));
  memset(b->ptr + b->len, 0, n);
  *out = b->ptr + b->len;
  b->len += n;
  b->ptr[b->len] = '\0';
  return TM_OK;
}

void tm_buf_clear(tm_buf *b) {
  b->len = 0;
  if (b->ptr) b->ptr[0] = '\0';
}

void tm_buf_truncate(tm_buf *b, size_t n) {
  if (n < b->len) {
    b->len = n;
    b->ptr[n] = '\0';
  }
}

char *tm_buf_take(tm_buf *b, size_t *len_out) {
  char *p = b->ptr;
  if (!p) p = tm_strdup("");
  if (len_out) *len_out = b->len;
  b->ptr = NULL;
  b->len = 0;
  b->cap = 0;
  return p;
}

void tm_buf_dispose(tm_buf *b) {
  tm_free(b->ptr);
  b->ptr = NULL;
  b->len = 0;
  b->cap = 0;
}

const char *tm_buf_cstr(const tm_buf *b) { return b->ptr ? b->ptr : ""; }

void tm_vec_init(tm_vec *v, size_t elem_size, size_t limit) {
  v->ptr = NULL;
  v->len = 0;
  v->cap = 0;
  v->elem_size = elem_size;
  v->limit = limit;
}

int tm_vec_reserve(tm_vec *v, size_t extra, tm_error *err) {
  size_t need;
  if (tm_add_overflow(v->len, extra, &need) || need > v->limit)
    return tm_error_set(err, TM_ETOOLARGE, "list limit of %zu entries exceeded", v->limit);
  if (need <= v->cap) return TM_OK;
  size_t cap = v->cap ? v->cap : 8;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  if (cap > v->limit) cap = v->limit;
  void *p = tm_reallocarray(v->ptr, cap, v->elem_size);
  if (!p) return tm_error_nomem(err);
  v->ptr = p;
  v->cap = cap;
  return TM_OK;
}

int tm_vec_push(tm_vec *v, const void *elem, tm_error *err) {
  TM_TRY(tm_vec_reserve(v, 1, err));
  memcpy(tm_vec_at(v, v->len), elem, v->elem_size);
  v->len++;
  return TM_OK;
}

int tm_vec_push_zero(tm_vec *v, void **out, tm_error *err) {
  TM_TRY(tm_vec_reserve(v, 1, err));
  void *slot = tm_vec_at(v, v->len);
  memset(slot, 0, v->elem_size);
  v->len++;
  *out = slot;
  return TM_OK;
}

void tm_vec_clear(tm_vec *v) { v->len = 0; }

void tm_vec_dispose(tm_vec *v) {
  tm_free(v->ptr);
  v->ptr = NULL;
  v->len = 0;
  v->cap = 0;
}
