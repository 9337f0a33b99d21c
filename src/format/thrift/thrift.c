/*
 * thrift.c - Thrift compact protocol decoder and encoder (format layer).
 * See thrift.h. The decoder checks every length and count against the bytes
 * left before it is used; it never allocates.
 */
#include "format/thrift/thrift.h"

#include <stdio.h>
#include <string.h>

#define CORRUPT(r, err, ...) thrift_corrupt((r), (err), __LINE__, __VA_ARGS__)

static int thrift_corrupt(const tm_thrift_reader *r, tm_error *err, int line, const char *what,
                          ...) TM_PRINTF(4, 5);

static int thrift_corrupt(const tm_thrift_reader *r, tm_error *err, int line, const char *what,
                          ...) {
  char msg[256];
  va_list ap;
  va_start(ap, what);
  vsnprintf(msg, sizeof msg, what, ap);
  va_end(ap);
  return tm_error__corrupt(err, __FILE__, line, "thrift: %s at byte %zu", msg,
                           tm_thrift_reader_offset(r));
}

void tm_thrift_reader_init(tm_thrift_reader *r, const void *data, size_t len) {
  r->start = data;
  r->p = data;
  r->end = r->start + len;
  r->depth = 0;
}

int tm_thrift_read_uvarint(tm_thrift_reader *r, uint64_t *out, tm_error *err) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return CORRUPT(r, err, "truncated varint");
    uint8_t b = *r->p++;
    if (shift == 63 && (b & 0x7e)) return CORRUPT(r, err, "varint overflows 64 bits");
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return TM_OK;
    }
  }
  return CORRUPT(r, err, "varint longer than 10 bytes");
}

static int read_zigzag(tm_thrift_reader *r, int64_t *out, tm_error *err) {
  uint64_t u;
  TM_TRY(tm_thrift_read_uvarint(r, &u, err));
  *out = tm_unzigzag64(u);
  return TM_OK;
}

int tm_thrift_struct_begin(tm_thrift_reader *r, tm_thrift_struct *s, tm_error *err) {
  if (r->depth >= TM_THRIFT_MAX_DEPTH) return CORRUPT(r, err, "nesting deeper than %d", TM_THRIFT_MAX_DEPTH);
  r->depth++;
  s->last_id = 0;
  return TM_OK;
}

int tm_thrift_next_field(tm_thrift_reader *r, tm_thrift_struct *s, tm_thrift_field *f,
                         tm_error *err) {
  if (r->p >= r->end) return CORRUPT(r, err, "struct not terminated");
  uint8_t b = *r->p++;
  if (b == TM_THRIFT_STOP) {
    r->depth--;
    return 0;
  }
  uint8_t type = b & 0x0f;
  if (type > TM_THRIFT_STRUCT) return CORRUPT(r, err, "unknown field type %u", type);
  int delta = b >> 4;
  int64_t id;
  if (delta == 0) {
    TM_TRY(read_zigzag(r, &id, err));
    if (id < INT16_MIN || id > INT16_MAX) return CORRUPT(r, err, "field id out of range");
  } else {
    id = (int64_t)s->last_id + delta;
    if (id > INT16_MAX) return CORRUPT(r, err, "field id out of range");
  }
  s->last_id = (int16_t)id;
  f->id = (int16_t)id;
  f->type = type;
  return 1;
}

static bool is_int_type(uint8_t t) {
  return t == TM_THRIFT_BYTE || t == TM_THRIFT_I16 || t == TM_THRIFT_I32 || t == TM_THRIFT_I64;
}

int tm_thrift_read_i64(tm_thrift_reader *r, uint8_t type, int64_t *out, tm_error *err) {
  if (!is_int_type(type)) return CORRUPT(r, err, "expected an integer, found type %u", type);
  if (type == TM_THRIFT_BYTE) {
    if (r->p >= r->end) return CORRUPT(r, err, "truncated byte");
    *out = (int8_t)*r->p++;
    return TM_OK;
  }
  return read_zigzag(r, out, err);
}

int tm_thrift_read_i32(tm_thrift_reader *r, uint8_t type, int32_t *out, tm_error *err) {
  int64_t v;
  TM_TRY(tm_thrift_read_i64(r, type, &v, err));
  if (v < INT32_MIN || v > INT32_MAX) return CORRUPT(r, err, "integer out of i32 range");
  *out = (int32_t)v;
  return TM_OK;
}

int tm_thrift_read_double(tm_thrift_reader *r, uint8_t type, double *out, tm_error *err) {
  if (type != TM_THRIFT_DOUBLE) return CORRUPT(r, err, "expected a double, found type %u", type);
  if (tm_thrift_reader_left(r) < 8) return CORRUPT(r, err, "truncated double");
  memcpy(out, r->p, 8);
  r->p += 8;
  return TM_OK;
}

int tm_thrift_read_bool(tm_thrift_reader *r, uint8_t type, bool *out, tm_error *err) {
  if (type != TM_THRIFT_TRUE && type != TM_THRIFT_FALSE)
    return CORRUPT(r, err, "expected a bool, found type %u", type);
  *out = type == TM_THRIFT_TRUE;
  return TM_OK;
}

int tm_thrift_read_bool_elem(tm_thrift_reader *r, bool *out, tm_error *err) {
  if (r->p >= r->end) return CORRUPT(r, err, "truncated bool");
  uint8_t b = *r->p++;
  if (b > 2) return CORRUPT(r, err, "bad bool byte %u", b);
  *out = b == 1;
  return TM_OK;
}

int tm_thrift_read_binary(tm_thrift_reader *r, uint8_t type, tm_strview *out, tm_error *err) {
  if (type != TM_THRIFT_BINARY) return CORRUPT(r, err, "expected binary, found type %u", type);
  uint64_t n;
  TM_TRY(tm_thrift_read_uvarint(r, &n, err));
  if (n > tm_thrift_reader_left(r))
    return CORRUPT(r, err, "binary of %llu bytes passes the end", (unsigned long long)n);
  *out = tm_sv((const char *)r->p, (size_t)n);
  r->p += n;
  return TM_OK;
}

int tm_thrift_list_begin(tm_thrift_reader *r, uint8_t type, uint8_t *elem_type_out,
                         uint32_t *n_out, tm_error *err) {
  if (type != TM_THRIFT_LIST && type != TM_THRIFT_SET)
    return CORRUPT(r, err, "expected a list, found type %u", type);
  if (r->depth >= TM_THRIFT_MAX_DEPTH) return CORRUPT(r, err, "nesting deeper than %d", TM_THRIFT_MAX_DEPTH);
  if (r->p >= r->end) return CORRUPT(r, err, "truncated list header");
  uint8_t b = *r->p++;
  uint64_t n = b >> 4;
  uint8_t et = b & 0x0f;
  if (n == 15) TM_TRY(tm_thrift_read_uvarint(r, &n, err));
  if (et == TM_THRIFT_STOP || et > TM_THRIFT_STRUCT)
    return CORRUPT(r, err, "bad list element type %u", et);
  /* Every element takes at least one byte: a count above the bytes left is a lie. */
  if (n > tm_thrift_reader_left(r) || n > UINT32_MAX)
    return CORRUPT(r, err, "list of %llu elements passes the end", (unsigned long long)n);
  r->depth++;
  *elem_type_out = et;
  *n_out = (uint32_t)n;
  return TM_OK;
}

void tm_thrift_list_end(tm_thrift_reader *r) { r->depth--; }

int tm_thrift_skip(tm_thrift_reader *r, uint8_t type, tm_error *err) {
  switch (type) {
    case TM_THRIFT_TRUE:
    case TM_THRIFT_FALSE: return TM_OK; /* value is in the field header */
    case TM_THRIFT_BYTE:
      if (r->p >= r->end) return CORRUPT(r, err, "truncated byte");
      r->p++;
      return TM_OK;
    case TM_THRIFT_I16:
    case TM_THRIFT_I32:
    case TM_THRIFT_I64: {
      uint64_t u;
      return tm_thrift_read_uvarint(r, &u, err);
    }
    case TM_THRIFT_DOUBLE:
      if (tm_thrift_reader_left(r) < 8) return CORRUPT(r, err, "truncated double");
      r->p += 8;
      return TM_OK;
    case TM_THRIFT_BINARY: {
      tm_strview v;
      return tm_thrift_read_binary(r, type, &v, err);
    }
    case TM_THRIFT_LIST:
    case TM_THRIFT_SET: {
      uint8_t et;
      uint32_t n;
      TM_TRY(tm_thrift_list_begin(r, type, &et, &n, err));
      for (uint32_t i = 0; i < n; i++) {
        if (et == TM_THRIFT_TRUE || et == TM_THRIFT_FALSE) {
          bool b;
          TM_TRY(tm_thrift_read_bool_elem(r, &b, err));
        } else {
          TM_TRY(tm_thrift_skip(r, et, err));
        }
      }
      tm_thrift_list_end(r);
      return TM_OK;
    }
    case TM_THRIFT_MAP: {
      uint64_t n;
      TM_TRY(tm_thrift_read_uvarint(r, &n, err));
      if (n == 0) return TM_OK;
      if (r->p >= r->end) return CORRUPT(r, err, "truncated map header");
      uint8_t kv = *r->p++;
      uint8_t kt = kv >> 4, vt = kv & 0x0f;
      if (kt == 0 || kt > TM_THRIFT_STRUCT || vt == 0 || vt > TM_THRIFT_STRUCT)
        return CORRUPT(r, err, "bad map types");
      if (n > tm_thrift_reader_left(r)) return CORRUPT(r, err, "map passes the end");
      if (r->depth >= TM_THRIFT_MAX_DEPTH) return CORRUPT(r, err, "nesting too deep");
      r->depth++;
      for (uint64_t i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
          uint8_t t = k == 0 ? kt : vt;
          if (t == TM_THRIFT_TRUE || t == TM_THRIFT_FALSE) {
            bool b;
            TM_TRY(tm_thrift_read_bool_elem(r, &b, err));
          } else {
            TM_TRY(tm_thrift_skip(r, t, err));
          }
        }
      }
      r->depth--;
      return TM_OK;
    }
    case TM_THRIFT_STRUCT: {
      tm_thrift_struct s;
      tm_thrift_field f;
      int rc;
      TM_TRY(tm_thrift_struct_begin(r, &s, err));
      while ((rc = tm_thrift_next_field(r, &s, &f, err)) > 0) TM_TRY(tm_thrift_skip(r, f.type, err));
      return rc;
    }
    default: return CORRUPT(r, err, "cannot skip type %u", type);
  }
}

/* ---- encoder ------------------------------------------------------------ */

int tm_thrift_put_uvarint(tm_buf *b, uint64_t v, tm_error *err) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v) byte |= 0x80;
    tmp[n++] = byte;
  } while (v);
  return tm_buf_append(b, tmp, n, err);
}

void tm_thrift_writer_init(tm_thrift_writer *w, tm_buf *out) {
  memset(w, 0, sizeof *w);
  w->out = out;
}

int tm_thrift_writer_status(const tm_thrift_writer *w, tm_error *err) {
  if (w->status < 0) return tm_error_copy(err, &w->err);
  return TM_OK;
}

static void put_byte(tm_thrift_writer *w, uint8_t b) {
  if (w->status < 0) return;
  w->status = tm_buf_putc(w->out, (char)b, &w->err);
}

static void put_uvarint(tm_thrift_writer *w, uint64_t v) {
  if (w->status < 0) return;
  w->status = tm_thrift_put_uvarint(w->out, v, &w->err);
}

static void put_field_header(tm_thrift_writer *w, int16_t id, uint8_t type) {
  if (w->status < 0) return;
  if (w->depth <= 0) {
    w->status = tm_error_set(&w->err, TM_ERROR, "thrift: field written outside a struct");
    return;
  }
  int16_t last = w->last_id[w->depth - 1];
  int delta = (int)id - (int)last;
  if (delta > 0 && delta <= 15) {
    put_byte(w, (uint8_t)(delta << 4 | type));
  } else {
    put_byte(w, type);
    put_uvarint(w, tm_zigzag64(id));
  }
  w->last_id[w->depth - 1] = id;
}

void tm_thrift_write_struct_begin(tm_thrift_writer *w) {
  if (w->status < 0) return;
  if (w->depth >= TM_THRIFT_MAX_DEPTH) {
    w->status = tm_error_set(&w->err, TM_ERROR, "thrift: structs nested too deep");
    return;
  }
  w->last_id[w->depth++] = 0;
}

void tm_thrift_write_struct_end(tm_thrift_writer *w) {
  put_byte(w, TM_THRIFT_STOP);
  if (w->status >= 0 && w->depth > 0) w->depth--;
}

void tm_thrift_write_field_struct(tm_thrift_writer *w, int16_t id) {
  put_field_header(w, id, TM_THRIFT_STRUCT);
  tm_thrift_write_struct_begin(w);
}

void tm_thrift_write_field_bool(tm_thrift_writer *w, int16_t id, bool v) {
  put_field_header(w, id, v ? TM_THRIFT_TRUE : TM_THRIFT_FALSE);
}

void tm_thrift_write_field_i8(tm_thrift_writer *w, int16_t id, int8_t v) {
  put_field_header(w, id, TM_THRIFT_BYTE);
  put_byte(w, (uint8_t)v);
}

void tm_thrift_write_field_i32(tm_thrift_writer *w, int16_t id, int32_t v) {
  put_field_header(w, id, TM_THRIFT_I32);
  put_uvarint(w, tm_zigzag64(v));
}

void tm_thrift_write_field_i64(tm_thrift_writer *w, int16_t id, int64_t v) {
  put_field_header(w, id, TM_THRIFT_I64);
  put_uvarint(w, tm_zigzag64(v));
}

void tm_thrift_write_field_binary(tm_thrift_writer *w, int16_t id, const void *p, size_t len) {
  put_field_header(w, id, TM_THRIFT_BINARY);
  tm_thrift_write_binary(w, p, len);
}

void tm_thrift_write_field_list(tm_thrift_writer *w, int16_t id, uint8_t elem_type,
                                uint32_t n) {
  put_field_header(w, id, TM_THRIFT_LIST);
  if (n < 15) {
    put_byte(w, (uint8_t)(n << 4 | elem_type));
  } else {
    put_byte(w, (uint8_t)(0xf0 | elem_type));
    put_uvarint(w, n);
  }
}

void tm_thrift_write_i32(tm_thrift_writer *w, int32_t v) { put_uvarint(w, tm_zigzag64(v)); }
void tm_thrift_write_i64(tm_thrift_writer *w, int64_t v) { put_uvarint(w, tm_zigzag64(v)); }

void tm_thrift_write_binary(tm_thrift_writer *w, const void *p, size_t len) {
  put_uvarint(w, len);
  if (w->status < 0 || len == 0) return;
  w->status = tm_buf_append(w->out, p, len, &w->err);
}
