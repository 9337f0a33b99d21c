/*
 * decode.c - Avro binary decoding into value trees, and value helpers
 * (format layer). See avro.h.
 *
 * The decoder trusts nothing: every varint is at most 10 bytes, every length
 * and block count is checked against the bytes that remain before anything
 * is allocated, and nesting is bounded by max_depth. Items of zero encoded
 * size (null, empty records) cannot be used to allocate without bound
 * because every allocation is charged to the arena's limit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/avro/avro.h"
#include "format/avro/avro_int.h"
#include "util/alloc.h"

int tm_avro__read_long(const uint8_t **p, const uint8_t *end, int64_t *out,
                       tm_error *err) {
  uint64_t v = 0;
  const uint8_t *q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return TM_CORRUPT(err, "Avro varint runs past the end of the data");
    uint8_t b = *q++;
    if (shift == 63 && (b & 0x7e)) return TM_CORRUPT(err, "Avro varint overflows 64 bits");
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *p = q;
      *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
      return TM_OK;
    }
  }
  return TM_CORRUPT(err, "Avro varint is longer than 10 bytes");
}

static int read_int(const uint8_t **p, const uint8_t *end, int64_t *out, tm_error *err) {
  TM_TRY(tm_avro__read_long(p, end, out, err));
  if (*out < INT32_MIN || *out > INT32_MAX) {
    return TM_CORRUPT(err, "Avro int value %lld is out of the 32-bit range",
                      (long long)*out);
  }
  return TM_OK;
}

/* Reads a length prefix and checks it against the bytes left. */
static int read_len(const uint8_t **p, const uint8_t *end, size_t *out, tm_error *err) {
  int64_t n;
  TM_TRY(tm_avro__read_long(p, end, &n, err));
  if (n < 0) return TM_CORRUPT(err, "Avro length %lld is negative", (long long)n);
  if ((uint64_t)n > (uint64_t)(end - *p)) {
    return TM_CORRUPT(err, "Avro length %lld runs past the end of the data (%zu bytes left)",
                      (long long)n, (size_t)(end - *p));
  }
  *out = (size_t)n;
  return TM_OK;
}

/*
 * Reads an array or map block header: the item count (negative counts are
 * followed by a byte size, which we check and ignore). *count_out is 0 at
 * the end of the blocks.
 */
static int read_block_count(const uint8_t **p, const uint8_t *end, int64_t *count_out,
                            tm_error *err) {
  int64_t count;
  TM_TRY(tm_avro__read_long(p, end, &count, err));
  if (count < 0) {
    if (count == INT64_MIN) return TM_CORRUPT(err, "Avro block count is out of range");
    count = -count;
    int64_t size;
    TM_TRY(tm_avro__read_long(p, end, &size, err));
    if (size < 0 || (uint64_t)size > (uint64_t)(end - *p)) {
      return TM_CORRUPT(err, "Avro block byte size %lld runs past the end of the data",
                        (long long)size);
    }
  }
  *count_out = count;
  return TM_OK;
}

static int decode_value(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                        tm_arena *arena, int depth, tm_avro_value *out, tm_error *err);

/* Grows an arena array of values (old contents copied). */
static tm_avro_value *grow_values(tm_arena *arena, tm_avro_value *old, size_t n_old,
                                  size_t n_new, tm_error *err) {
  tm_avro_value *v = tm_arena_calloc(arena, n_new, sizeof *v, err);
  if (v && n_old) memcpy(v, old, n_old * sizeof *v);
  return v;
}

static int decode_array(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                        tm_arena *arena, int depth, tm_avro_value *out, tm_error *err) {
  tm_avro_value *items = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    int64_t count;
    TM_TRY(read_block_count(p, end, &count, err));
    if (count == 0) break;
    size_t need;
    if ((uint64_t)count > SIZE_MAX / 2 || tm_add_overflow(n, (size_t)count, &need)) {
      return TM_CORRUPT(err, "Avro array block count %lld is too large", (long long)count);
    }
    if (need > cap) {
      size_t new_cap = cap * 2 > need ? cap * 2 : need;
      tm_avro_value *grown = grow_values(arena, items, n, new_cap, err);
      if (!grown) return err ? err->code : TM_ENOMEM;
      items = grown;
      cap = new_cap;
    }
    for (int64_t i = 0; i < count; i++) {
      TM_TRY(decode_value(p, end, s->items, arena, depth, &items[n], err));
      n++;
    }
  }
  out->u.list.items = items;
  out->u.list.n = n;
  return TM_OK;
}

static int decode_map(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                      tm_arena *arena, int depth, tm_avro_value *out, tm_error *err) {
  tm_strview *keys = NULL;
  tm_avro_value *values = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    int64_t count;
    TM_TRY(read_block_count(p, end, &count, err));
    if (count == 0) break;
    /* Every entry has at least one byte: the key's length. */
    if ((uint64_t)count > (uint64_t)(end - *p)) {
      return TM_CORRUPT(err, "Avro map block count %lld exceeds the bytes left",
                        (long long)count);
    }
    size_t need = n + (size_t)count;
    if (need > cap) {
      size_t new_cap = cap * 2 > need ? cap * 2 : need;
      tm_strview *k2 = tm_arena_calloc(arena, new_cap, sizeof *k2, err);
      if (!k2) return err ? err->code : TM_ENOMEM;
      if (n) memcpy(k2, keys, n * sizeof *k2);
      tm_avro_value *v2 = grow_values(arena, values, n, new_cap, err);
      if (!v2) return err ? err->code : TM_ENOMEM;
      keys = k2;
      values = v2;
      cap = new_cap;
    }
    for (int64_t i = 0; i < count; i++) {
      size_t len;
      TM_TRY(read_len(p, end, &len, err));
      keys[n] = tm_sv((const char *)*p, len);
      *p += len;
      TM_TRY(decode_value(p, end, s->items, arena, depth, &values[n], err));
      n++;
    }
  }
  out->u.map.keys = keys;
  out->u.map.values = values;
  out->u.map.n = n;
  return TM_OK;
}

static int decode_value(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                        tm_arena *arena, int depth, tm_avro_value *out, tm_error *err) {
  if (depth <= 0) return tm_error_set(err, TM_ETOOLARGE, "Avro value nests too deeply");
  out->schema = s;
  out->branch = -1;
  switch (s->kind) {
    case TM_AVRO_NULL:
      return TM_OK;
    case TM_AVRO_BOOLEAN:
      if (*p >= end) return TM_CORRUPT(err, "Avro boolean runs past the end of the data");
      if (**p > 1) return TM_CORRUPT(err, "Avro boolean byte is %u, not 0 or 1", **p);
      out->u.b = **p == 1;
      (*p)++;
      return TM_OK;
    case TM_AVRO_INT:
      return read_int(p, end, &out->u.l, err);
    case TM_AVRO_LONG:
      return tm_avro__read_long(p, end, &out->u.l, err);
    case TM_AVRO_FLOAT:
      if (end - *p < 4) return TM_CORRUPT(err, "Avro float runs past the end of the data");
      {
        uint32_t bits = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8 |
                        (uint32_t)(*p)[2] << 16 | (uint32_t)(*p)[3] << 24;
        memcpy(&out->u.f, &bits, 4);
      }
      *p += 4;
      return TM_OK;
    case TM_AVRO_DOUBLE:
      if (end - *p < 8) return TM_CORRUPT(err, "Avro double runs past the end of the data");
      {
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--) bits = bits << 8 | (*p)[i];
        memcpy(&out->u.d, &bits, 8);
      }
      *p += 8;
      return TM_OK;
    case TM_AVRO_BYTES:
    case TM_AVRO_STRING: {
      size_t len;
      TM_TRY(read_len(p, end, &len, err));
      out->u.bytes.ptr = *p;
      out->u.bytes.len = len;
      *p += len;
      return TM_OK;
    }
    case TM_AVRO_FIXED:
      if ((uint64_t)s->size > (uint64_t)(end - *p)) {
        return TM_CORRUPT(err, "Avro fixed(%lld) runs past the end of the data",
                          (long long)s->size);
      }
      out->u.bytes.ptr = *p;
      out->u.bytes.len = (size_t)s->size;
      *p += s->size;
      return TM_OK;
    case TM_AVRO_ENUM:
      TM_TRY(read_int(p, end, &out->u.l, err));
      if (out->u.l < 0 || (uint64_t)out->u.l >= s->n_symbols) {
        return TM_CORRUPT(err, "Avro enum index %lld is outside the %zu symbols of \"%s\"",
                          (long long)out->u.l, s->n_symbols, s->name);
      }
      return TM_OK;
    case TM_AVRO_UNION: {
      int64_t idx;
      TM_TRY(tm_avro__read_long(p, end, &idx, err));
      if (idx < 0 || (uint64_t)idx >= s->n_branches) {
        return TM_CORRUPT(err, "Avro union branch %lld is outside the %zu branches",
                          (long long)idx, s->n_branches);
      }
      TM_TRY(decode_value(p, end, s->branches[idx], arena, depth - 1, out, err));
      out->branch = (int32_t)idx;
      return TM_OK;
    }
    case TM_AVRO_RECORD: {
      tm_avro_value *items = NULL;
      if (s->n_fields) {
        items = tm_arena_calloc(arena, s->n_fields, sizeof *items, err);
        if (!items) return err ? err->code : TM_ENOMEM;
      }
      for (size_t i = 0; i < s->n_fields; i++) {
        TM_TRY(decode_value(p, end, s->fields[i].type, arena, depth - 1, &items[i], err));
      }
      out->u.list.items = items;
      out->u.list.n = s->n_fields;
      return TM_OK;
    }
    case TM_AVRO_ARRAY:
      return decode_array(p, end, s, arena, depth - 1, out, err);
    case TM_AVRO_MAP:
      return decode_map(p, end, s, arena, depth - 1, out, err);
  }
  return TM_CORRUPT(err, "Avro schema node of unknown kind %d", (int)s->kind);
}

int tm_avro_decode(const uint8_t **p, const uint8_t *end, const tm_avro_schema *s,
                   tm_arena *arena, int max_depth, tm_avro_value *out, tm_error *err) {
  return decode_value(p, end, s, arena, max_depth, out, err);
}

/* ---- helpers ------------------------------------------------------------ */

const tm_avro_value *tm_avro_record_get(const tm_avro_value *v, const char *name) {
  if (!v || v->schema->kind != TM_AVRO_RECORD) return NULL;
  int i = tm_avro_schema_field_index(v->schema, name);
  return i < 0 ? NULL : &v->u.list.items[i];
}

const tm_avro_value *tm_avro_record_get_id(const tm_avro_value *v, int32_t id) {
  if (!v || v->schema->kind != TM_AVRO_RECORD) return NULL;
  int i = tm_avro_schema_field_index_by_id(v->schema, id);
  return i < 0 ? NULL : &v->u.list.items[i];
}

bool tm_avro_get_long(const tm_avro_value *v, int64_t *out) {
  if (!v) return false;
  switch (v->schema->kind) {
    case TM_AVRO_INT:
    case TM_AVRO_LONG:
    case TM_AVRO_ENUM:
      *out = v->u.l;
      return true;
    default:
      return false;
  }
}

bool tm_avro_get_bytes(const tm_avro_value *v, tm_strview *out) {
  if (!v) return false;
  switch (v->schema->kind) {
    case TM_AVRO_BYTES:
    case TM_AVRO_STRING:
    case TM_AVRO_FIXED:
      *out = tm_sv((const char *)v->u.bytes.ptr, v->u.bytes.len);
      return true;
    default:
      return false;
  }
}

int tm_avro_decimal_to_le16(const uint8_t *be, size_t len, uint8_t le[16], tm_error *err) {
  uint8_t fill = (len > 0 && (be[0] & 0x80)) ? 0xff : 0x00;
  memset(le, fill, 16);
  if (len > 16) {
    /* Leading bytes beyond 16 must be pure sign extension. */
    size_t extra = len - 16;
    for (size_t i = 0; i < extra; i++) {
      if (be[i] != fill) return TM_CORRUPT(err, "decimal of %zu bytes exceeds 128 bits", len);
    }
    if ((be[extra] & 0x80) != (fill & 0x80)) {
      return TM_CORRUPT(err, "decimal of %zu bytes exceeds 128 bits", len);
    }
    be += extra;
    len = 16;
  }
  for (size_t i = 0; i < len; i++) le[i] = be[len - 1 - i];
  return TM_OK;
}

static int text_bytes(tm_buf *out, const uint8_t *p, size_t len, bool as_string,
                      tm_error *err) {
  TM_TRY(tm_buf_putc(out, '"', err));
  for (size_t i = 0; i < len; i++) {
    uint8_t ch = p[i];
    if (ch == '"' || ch == '\\') {
      TM_TRY(tm_buf_putc(out, '\\', err));
      TM_TRY(tm_buf_putc(out, (char)ch, err));
    } else if (ch < 0x20 || (!as_string && ch >= 0x7f)) {
      TM_TRY(tm_buf_printf(out, err, "\\u%04x", ch));
    } else {
      TM_TRY(tm_buf_putc(out, (char)ch, err));
    }
  }
  return tm_buf_putc(out, '"', err);
}

/* The shortest decimal text that reads back as the same float or double. */
static int text_double(tm_buf *out, double d, bool is_float, tm_error *err) {
  if (isnan(d)) return tm_buf_puts(out, "NaN", err);
  if (isinf(d)) return tm_buf_puts(out, d < 0 ? "-Infinity" : "Infinity", err);
  char tmp[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    double back = strtod(tmp, NULL);
    if (is_float ? (float)back == (float)d : back == d) break;
  }
  return tm_buf_puts(out, tmp, err);
}

int tm_avro_value_to_text(tm_buf *out, const tm_avro_value *v, tm_error *err) {
  const tm_avro_schema *s = v->schema;
  switch (s->kind) {
    case TM_AVRO_NULL:
      return tm_buf_puts(out, "null", err);
    case TM_AVRO_BOOLEAN:
      return tm_buf_puts(out, v->u.b ? "true" : "false", err);
    case TM_AVRO_INT:
    case TM_AVRO_LONG:
      return tm_buf_printf(out, err, "%lld", (long long)v->u.l);
    case TM_AVRO_FLOAT:
      return text_double(out, (double)v->u.f, true, err);
    case TM_AVRO_DOUBLE:
      return text_double(out, v->u.d, false, err);
    case TM_AVRO_STRING:
      return text_bytes(out, v->u.bytes.ptr, v->u.bytes.len, true, err);
    case TM_AVRO_BYTES:
    case TM_AVRO_FIXED:
      return text_bytes(out, v->u.bytes.ptr, v->u.bytes.len, false, err);
    case TM_AVRO_ENUM:
      return text_bytes(out, (const uint8_t *)s->symbols[v->u.l], strlen(s->symbols[v->u.l]),
                        true, err);
    case TM_AVRO_RECORD:
      TM_TRY(tm_buf_putc(out, '{', err));
      for (size_t i = 0; i < v->u.list.n; i++) {
        if (i) TM_TRY(tm_buf_puts(out, ", ", err));
        TM_TRY(tm_buf_printf(out, err, "\"%s\": ", s->fields[i].name));
        TM_TRY(tm_avro_value_to_text(out, &v->u.list.items[i], err));
      }
      return tm_buf_putc(out, '}', err);
    case TM_AVRO_ARRAY:
      TM_TRY(tm_buf_putc(out, '[', err));
      for (size_t i = 0; i < v->u.list.n; i++) {
        if (i) TM_TRY(tm_buf_puts(out, ", ", err));
        TM_TRY(tm_avro_value_to_text(out, &v->u.list.items[i], err));
      }
      return tm_buf_putc(out, ']', err);
    case TM_AVRO_MAP:
      TM_TRY(tm_buf_putc(out, '{', err));
      for (size_t i = 0; i < v->u.map.n; i++) {
        if (i) TM_TRY(tm_buf_puts(out, ", ", err));
        TM_TRY(text_bytes(out, (const uint8_t *)v->u.map.keys[i].ptr, v->u.map.keys[i].len,
                          true, err));
        TM_TRY(tm_buf_puts(out, ": ", err));
        TM_TRY(tm_avro_value_to_text(out, &v->u.map.values[i], err));
      }
      return tm_buf_putc(out, '}', err);
    case TM_AVRO_UNION:
      break;
  }
  return tm_error_set(err, TM_EINVALID, "Avro value has no printable kind");
}
