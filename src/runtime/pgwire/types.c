/*
 * types.c - result values in PostgreSQL's text and binary formats, and Bind
 * values as statement parameters (runtime layer, pgwire; docs/PGWIRE.md
 * "Types").
 *
 * Text output follows PostgreSQL's output functions with DateStyle ISO and
 * IntervalStyle iso_8601 (what the server reports): booleans t/f, floats in
 * the shortest exact form with Infinity/-Infinity/NaN, bytea as \x and hex,
 * timestamps 'YYYY-MM-DD HH:MM:SS[.ffffff]' (timestamptz with +00, the
 * session zone being UTC). Binary follows the types' send functions:
 * big-endian integers and IEEE floats, dates as days and timestamps as
 * microseconds since 2000-01-01, numeric as base-10000 digits.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/pgwire/pgwire_int.h"
#include "util/alloc.h"
#include "util/str.h"

#define PG_EPOCH_DAYS 10957                        /* 1970-01-01 to 2000-01-01 */
#define PG_EPOCH_MICROS ((int64_t)PG_EPOCH_DAYS * 86400 * 1000000)

uint32_t tm_pg__oid(tm_sql_type t) {
  switch (t) {
    case TM_SQLT_BOOL: return 16;
    case TM_SQLT_INT16: return 21;
    case TM_SQLT_INT32: return 23;
    case TM_SQLT_INT64: return 20;
    case TM_SQLT_NUMERIC: return 1700;
    case TM_SQLT_FLOAT32: return 700;
    case TM_SQLT_FLOAT64: return 701;
    case TM_SQLT_BLOB: return 17;
    case TM_SQLT_DATE: return 1082;
    case TM_SQLT_TIME: return 1083;
    case TM_SQLT_TIMETZ: return 1266;
    case TM_SQLT_TIMESTAMP: return 1114;
    case TM_SQLT_TIMESTAMPTZ: return 1184;
    case TM_SQLT_UUID: return 2950;
    case TM_SQLT_INTERVAL: return 1186;
    case TM_SQLT_NESTED: return 114; /* json */
    default: return 25;              /* text */
  }
}

int16_t tm_pg__typlen(tm_sql_type t) {
  switch (t) {
    case TM_SQLT_BOOL: return 1;
    case TM_SQLT_INT16: return 2;
    case TM_SQLT_INT32:
    case TM_SQLT_FLOAT32:
    case TM_SQLT_DATE: return 4;
    case TM_SQLT_INT64:
    case TM_SQLT_FLOAT64:
    case TM_SQLT_TIME:
    case TM_SQLT_TIMESTAMP:
    case TM_SQLT_TIMESTAMPTZ: return 8;
    case TM_SQLT_TIMETZ: return 12;
    case TM_SQLT_UUID: return 16;
    case TM_SQLT_INTERVAL: return 16;
    default: return -1;
  }
}

/* ---- one cell ------------------------------------------------------------------------------- */

/* Appends the field's 4-byte length, zero until patched; *mark is where it is. */
static int field_begin(tm_buf *out, size_t *mark, tm_error *err) {
  *mark = out->len;
  return tm_buf_append(out, "\0\0\0\0", 4, err);
}

static void field_end(tm_buf *out, size_t mark) {
  uint32_t n = (uint32_t)(out->len - mark - 4);
  uint8_t *p = (uint8_t *)out->ptr + mark;
  p[0] = (uint8_t)(n >> 24);
  p[1] = (uint8_t)(n >> 16);
  p[2] = (uint8_t)(n >> 8);
  p[3] = (uint8_t)n;
}

static int put_be(tm_buf *out, uint64_t v, int bytes, tm_error *err) {
  uint8_t b[8];
  for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
  return tm_buf_append(out, b, (size_t)bytes, err);
}

/* numeric's binary form from its exact decimal text ("-12.3400"). */
static int put_numeric(tm_buf *out, const char *s, size_t n, tm_error *err) {
  bool neg = n && s[0] == '-';
  size_t i = neg ? 1 : 0;
  const char *dot = memchr(s, '.', n);
  size_t int_end = dot ? (size_t)(dot - s) : n;
  size_t frac_len = dot ? n - int_end - 1 : 0;
  if (int_end < i || int_end - i > 1000 || frac_len > 1000)
    return tm_error_set(err, TM_EUNSUPPORTED, "numeric value out of range for binary output");
  /* Digits left-padded to a multiple of 4 before the point, right-padded after. */
  char digits[2100];
  size_t ilen = int_end - i, lead = (4 - ilen % 4) % 4, nd = 0;
  for (size_t k = 0; k < lead; k++) digits[nd++] = '0';
  for (size_t k = i; k < int_end; k++) digits[nd++] = s[k];
  size_t int_groups = (lead + ilen) / 4;
  for (size_t k = 0; k < frac_len; k++) digits[nd++] = s[int_end + 1 + k];
  while (nd % 4) digits[nd++] = '0';
  size_t groups = nd / 4;
  int16_t g[600];
  if (groups > sizeof g / sizeof g[0])
    return tm_error_set(err, TM_EUNSUPPORTED, "numeric value out of range for binary output");
  for (size_t k = 0; k < groups; k++)
    g[k] = (int16_t)((digits[4 * k] - '0') * 1000 + (digits[4 * k + 1] - '0') * 100 +
                     (digits[4 * k + 2] - '0') * 10 + (digits[4 * k + 3] - '0'));
  size_t first = 0, last = groups;
  while (first < groups && g[first] == 0) first++;
  while (last > first && g[last - 1] == 0) last--;
  int weight = (int)int_groups - 1 - (int)first;
  size_t ndig = last - first;
  if (ndig == 0) weight = 0;
  TM_TRY(put_be(out, ndig, 2, err));
  TM_TRY(put_be(out, (uint16_t)(int16_t)weight, 2, err));
  TM_TRY(put_be(out, neg && ndig ? 0x4000 : 0, 2, err));
  TM_TRY(put_be(out, frac_len, 2, err));
  for (size_t k = first; k < last; k++) TM_TRY(put_be(out, (uint16_t)g[k], 2, err));
  return TM_OK;
}

/* A uuid's 16 bytes from its 8-4-4-4-12 text. */
static int put_uuid(tm_buf *out, const char *s, size_t n, tm_error *err) {
  uint8_t b[16];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 32; i++) {
    char c = s[i];
    if (c == '-') continue;
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return tm_error_set(err, TM_ERROR, "bad uuid text");
    if (k % 2 == 0) b[k / 2] = (uint8_t)(v << 4);
    else b[k / 2] |= (uint8_t)v;
    k++;
  }
  if (k != 32) return tm_error_set(err, TM_ERROR, "bad uuid text");
  return tm_buf_append(out, b, 16, err);
}

static int cell_binary(tm_sql_stmt *st, size_t i, tm_sql_type t, tm_buf *scratch, tm_buf *out,
                       tm_error *err) {
  tm_sql_value v;
  bool has = tm_sql_column_value(st, i, &v);
  tm_cell_kind kind;
  switch (t) {
    case TM_SQLT_BOOL: return has ? put_be(out, (uint64_t)v.i, 1, err) : TM_ERROR;
    case TM_SQLT_INT16: return has ? put_be(out, (uint64_t)v.i, 2, err) : TM_ERROR;
    case TM_SQLT_INT32: return has ? put_be(out, (uint64_t)v.i, 4, err) : TM_ERROR;
    case TM_SQLT_INT64: return has ? put_be(out, (uint64_t)v.i, 8, err) : TM_ERROR;
    case TM_SQLT_FLOAT32: {
      float f = (float)v.d;
      uint32_t u;
      memcpy(&u, &f, 4);
      return put_be(out, u, 4, err);
    }
    case TM_SQLT_FLOAT64: {
      uint64_t u;
      memcpy(&u, &v.d, 8);
      return put_be(out, u, 8, err);
    }
    case TM_SQLT_BLOB: return tm_buf_append(out, v.ptr, v.len, err);
    case TM_SQLT_DATE: {
      int64_t d = v.i == INT32_MAX ? INT32_MAX : v.i == -INT32_MAX ? INT32_MIN : v.i - PG_EPOCH_DAYS;
      return put_be(out, (uint64_t)(int32_t)d, 4, err);
    }
    case TM_SQLT_TIME: return put_be(out, (uint64_t)v.i, 8, err);
    case TM_SQLT_TIMESTAMP:
    case TM_SQLT_TIMESTAMPTZ: {
      int64_t x = v.i == INT64_MAX ? INT64_MAX : v.i == -INT64_MAX ? INT64_MIN : v.i - PG_EPOCH_MICROS;
      return put_be(out, (uint64_t)x, 8, err);
    }
    case TM_SQLT_TEXT:
    case TM_SQLT_NESTED: /* json's binary form is its text */
    case TM_SQLT_OTHER:
      if (has) return tm_buf_append(out, v.ptr, v.len, err);
      return tm_sql_column_render(st, i, out, &kind, err);
    case TM_SQLT_NUMERIC:
    case TM_SQLT_UUID:
      tm_buf_clear(scratch);
      TM_TRY(tm_sql_column_render(st, i, scratch, &kind, err));
      return t == TM_SQLT_UUID ? put_uuid(out, scratch->ptr, scratch->len, err)
                               : put_numeric(out, scratch->ptr, scratch->len, err);
    default:
      return tm_error_set(err, TM_EUNSUPPORTED, "binary format for %s results is not supported: "
                          "ask for text", t == TM_SQLT_INTERVAL ? "interval" : "timetz");
  }
}

static int cell_text(tm_sql_stmt *st, size_t i, tm_sql_type t, tm_buf *scratch, tm_buf *out,
                     tm_error *err) {
  tm_sql_value v;
  tm_cell_kind kind;
  if (t == TM_SQLT_BOOL && tm_sql_column_value(st, i, &v)) return tm_buf_putc(out, v.i ? 't' : 'f', err);
  if (t == TM_SQLT_BLOB && tm_sql_column_value(st, i, &v)) {
    static const char k[] = "0123456789abcdef";
    TM_TRY(tm_buf_puts(out, "\\x", err));
    for (size_t j = 0; j < v.len; j++) {
      unsigned char c = (unsigned char)v.ptr[j];
      char h[2] = {k[c >> 4], k[c & 15]};
      TM_TRY(tm_buf_append(out, h, 2, err));
    }
    return TM_OK;
  }
  if (t == TM_SQLT_FLOAT32 || t == TM_SQLT_FLOAT64) {
    if (tm_sql_column_value(st, i, &v) && isinf(v.d))
      return tm_buf_puts(out, v.d > 0 ? "Infinity" : "-Infinity", err);
    if (isnan(v.d)) return tm_buf_puts(out, "NaN", err);
  }
  if (t != TM_SQLT_TIMESTAMP && t != TM_SQLT_TIMESTAMPTZ)
    return tm_sql_column_render(st, i, out, &kind, err);
  /* RFC 3339 as rendered ("2024-01-02T03:04:05.5Z") to ISO ("2024-01-02 03:04:05.5+00"). */
  tm_buf_clear(scratch);
  TM_TRY(tm_sql_column_render(st, i, scratch, &kind, err));
  const char *s = scratch->ptr;
  size_t n = scratch->len;
  bool z = n && s[n - 1] == 'Z';
  for (size_t j = 0; j < n - (z ? 1 : 0); j++) TM_TRY(tm_buf_putc(out, j == 10 && s[j] == 'T' ? ' ' : s[j], err));
  if (z) TM_TRY(tm_buf_puts(out, "+00", err));
  return TM_OK;
}

int tm_pg__cell(tm_sql_stmt *st, size_t i, bool binary, tm_buf *scratch, tm_buf *out,
                tm_error *err) {
  if (tm_sql_column_is_null(st, i)) return tm_buf_append(out, "\xff\xff\xff\xff", 4, err);
  tm_sql_type t = tm_sql_column_type(st, i);
  size_t mark;
  TM_TRY(field_begin(out, &mark, err));
  int rc = binary ? cell_binary(st, i, t, scratch, out, err) : cell_text(st, i, t, scratch, out, err);
  if (rc == TM_ERROR && !err->message[0]) rc = tm_error_set(err, TM_ERROR, "a cell has no value");
  if (rc != TM_OK) return rc;
  field_end(out, mark);
  return TM_OK;
}

/* ---- Bind values ---------------------------------------------------------------------------- */

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

/* The kind a parameter OID stands for (TM_SQLT_OTHER: unknown, 0, text-like). */
static tm_sql_type kind_of_oid(uint32_t oid) {
  switch (oid) {
    case 16: return TM_SQLT_BOOL;
    case 21: return TM_SQLT_INT16;
    case 23: return TM_SQLT_INT32;
    case 20: return TM_SQLT_INT64;
    case 700: return TM_SQLT_FLOAT32;
    case 701: return TM_SQLT_FLOAT64;
    case 17: return TM_SQLT_BLOB;
    case 1082: return TM_SQLT_DATE;
    case 1114: return TM_SQLT_TIMESTAMP;
    case 1184: return TM_SQLT_TIMESTAMPTZ;
    case 1700: return TM_SQLT_NUMERIC;
    case 2950: return TM_SQLT_UUID;
    case 25: case 1043: case 19: case 114: case 3802: case 705: return TM_SQLT_TEXT;
    default: return TM_SQLT_OTHER;
  }
}

static int set_text(tm_sql_param *out, const char *s, size_t n, tm_error *err) {
  out->kind = TM_SQL_PARAM_TEXT;
  if (!(out->text = tm_malloc(n + 1))) return tm_error_nomem(err);
  memcpy(out->text, s, n);
  out->text[n] = '\0';
  out->text_len = n;
  return TM_OK;
}

/*
 * A binary numeric (numeric_send: Int16 ndigits, weight, sign, dscale, then
 * ndigits base-10000 digits, the first of weight 10000^weight) as its exact
 * decimal text, which DuckDB casts to what its place needs. The counts are
 * checked against the value's length and bounded (PostgreSQL's own limits:
 * weight and dscale within 1000 groups and digits here).
 */
static int numeric_param(tm_sql_param *out, const uint8_t *p, size_t n, tm_error *err) {
  if (n < 8) return tm_error_set(err, TM_EINVALID, "a binary numeric parameter of %zu bytes", n);
  int ndigits = (int16_t)be(p, 2), weight = (int16_t)be(p + 2, 2), dscale = (int16_t)be(p + 6, 2);
  unsigned sign = (unsigned)be(p + 4, 2);
  if (sign == 0xC000) return set_text(out, "NaN", 3, err);
  if (sign == 0xD000) return set_text(out, "Infinity", 8, err);
  if (sign == 0xF000) return set_text(out, "-Infinity", 9, err);
  if ((sign != 0 && sign != 0x4000) || ndigits < 0 || (size_t)ndigits * 2 + 8 != n ||
      weight < -1000 || weight > 1000 || dscale < 0 || dscale > 1000)
    return tm_error_set(err, TM_EINVALID, "a malformed binary numeric parameter");
  for (int i = 0; i < ndigits; i++)
    if (be(p + 8 + 2 * i, 2) > 9999) return tm_error_set(err, TM_EINVALID, "a malformed binary numeric parameter");
  tm_buf t = TM_BUF_INIT(16384);
  int rc = sign == 0x4000 ? tm_buf_putc(&t, '-', err) : TM_OK;
  /* The group of exponent weight - j is digit j (0 past the digits or before them). */
  if (rc == TM_OK && weight < 0) rc = tm_buf_putc(&t, '0', err);
  for (int j = 0; rc == TM_OK && j <= weight; j++) {
    unsigned g = j < ndigits ? (unsigned)be(p + 8 + 2 * j, 2) : 0;
    rc = j == 0 ? tm_buf_printf(&t, err, "%u", g) : tm_buf_printf(&t, err, "%04u", g);
  }
  if (rc == TM_OK && dscale > 0) {
    rc = tm_buf_putc(&t, '.', err);
    size_t at = t.len;
    for (int j = weight + 1; rc == TM_OK && (int)(t.len - at) < dscale; j++) {
      unsigned g = j >= 0 && j < ndigits ? (unsigned)be(p + 8 + 2 * j, 2) : 0;
      rc = tm_buf_printf(&t, err, "%04u", g);
    }
    if (rc == TM_OK) t.len = at + (size_t)dscale;
  }
  if (rc == TM_OK) rc = set_text(out, t.ptr, t.len, err);
  tm_buf_dispose(&t);
  return rc;
}

int tm_pg__param(const tm_pg_value *v, bool binary, uint32_t oid, tm_sql_type kind,
                 tm_sql_param *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  if (v->len < 0) {
    out->kind = TM_SQL_PARAM_NULL;
    return TM_OK;
  }
  const uint8_t *p = v->ptr;
  size_t n = (size_t)v->len;
  if (!binary) {
    if (memchr(p, 0, n)) return tm_error_set(err, TM_EINVALID, "a text parameter holds a NUL byte");
    return set_text(out, (const char *)p, n, err);
  }
  tm_sql_type t = oid ? kind_of_oid(oid) : kind;
  char tmp[64];
  size_t tn;
  switch (t) {
    case TM_SQLT_BOOL:
      if (n != 1) break;
      out->kind = TM_SQL_PARAM_BOOL;
      out->b = p[0] != 0;
      return TM_OK;
    case TM_SQLT_INT16:
    case TM_SQLT_INT32:
    case TM_SQLT_INT64:
      if (n != 2 && n != 4 && n != 8) break;
      out->kind = TM_SQL_PARAM_INT;
      out->i = n == 2 ? (int16_t)be(p, 2) : n == 4 ? (int32_t)be(p, 4) : (int64_t)be(p, 8);
      return TM_OK;
    case TM_SQLT_FLOAT32:
    case TM_SQLT_FLOAT64:
      if (n == 4) {
        uint32_t u = (uint32_t)be(p, 4);
        float f;
        memcpy(&f, &u, 4);
        out->d = f;
      } else if (n == 8) {
        uint64_t u = be(p, 8);
        memcpy(&out->d, &u, 8);
      } else {
        break;
      }
      out->kind = TM_SQL_PARAM_DOUBLE;
      return TM_OK;
    case TM_SQLT_DATE: {
      if (n != 4) break;
      int64_t d = (int32_t)be(p, 4);
      tn = tm_date_print(tmp, sizeof tmp, d + PG_EPOCH_DAYS);
      return set_text(out, tmp, tn, err);
    }
    case TM_SQLT_TIMESTAMP:
    case TM_SQLT_TIMESTAMPTZ: {
      if (n != 8) break;
      int64_t us = (int64_t)be(p, 8);
      if (us > INT64_MAX - PG_EPOCH_MICROS) break;
      us += PG_EPOCH_MICROS;
      int64_t sec = us / 1000000, frac = us % 1000000;
      if (frac < 0) {
        sec--;
        frac += 1000000;
      }
      tn = tm_time_print(tmp, sizeof tmp, sec, (int32_t)(frac * 1000), -1, t == TM_SQLT_TIMESTAMPTZ);
      return set_text(out, tmp, tn, err);
    }
    case TM_SQLT_NUMERIC:
      return numeric_param(out, p, n, err);
    case TM_SQLT_BLOB:
      out->kind = TM_SQL_PARAM_BLOB;
      if (!(out->text = tm_malloc(n ? n : 1))) return tm_error_nomem(err);
      memcpy(out->text, p, n);
      out->text_len = n;
      return TM_OK;
    case TM_SQLT_TEXT:
      if (memchr(p, 0, n)) break;
      return set_text(out, (const char *)p, n, err);
    case TM_SQLT_OTHER:
      if (oid == 0)
        return tm_error_set(err, TM_EINVALID, "a binary parameter without a type where the "
                            "statement does not say one: send it as text, or with its type");
      /* fall through */
    default:
      return tm_error_set(err, TM_EINVALID, "binary parameters of type %u are not supported: send "
                          "them as text", oid);
  }
  return tm_error_set(err, TM_EINVALID, "a binary parameter of type %u has %zu bytes", oid, n);
}
