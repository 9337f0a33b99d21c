/*
 * sqltype.c - how the sqlite engine stores values of each tm_type in SQLite,
 * and reads them back exactly (engine layer, sqlite backend). The table is in
 * sqlite_int.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sqlite/sqlite_int.h"
#include "format/arrow/render.h"
#include "util/alloc.h"

/* Years 0000..9999: the range whose canonical text has a fixed width. */
#define MIN_DAY INT64_C(-719528) /* 0000-01-01 */
#define MAX_DAY INT64_C(2932896) /* 9999-12-31 */

static const char *ts_suffix(tm_time_unit u) {
  static const char *const k[] = {"_S", "_MS", "", "_NS"};
  return k[u & 3];
}

void tm_sqltype_decl(const tm_type *t, char *buf, size_t cap) {
  switch (t->id) {
    case TM_TYPE_BOOL: snprintf(buf, cap, "BOOLEAN"); break;
    case TM_TYPE_INT8: snprintf(buf, cap, "TINYINT"); break;
    case TM_TYPE_INT16: snprintf(buf, cap, "SMALLINT"); break;
    case TM_TYPE_INT32: snprintf(buf, cap, "INT"); break; /* not "INTEGER": never a rowid alias */
    case TM_TYPE_INT64: snprintf(buf, cap, "BIGINT"); break;
    case TM_TYPE_UINT8: snprintf(buf, cap, "UTINYINT"); break;
    case TM_TYPE_UINT16: snprintf(buf, cap, "USMALLINT"); break;
    case TM_TYPE_UINT32: snprintf(buf, cap, "UINTEGER"); break;
    case TM_TYPE_UINT64: snprintf(buf, cap, "UBIGINT"); break;
    case TM_TYPE_FLOAT32: snprintf(buf, cap, "FLOAT"); break;
    case TM_TYPE_FLOAT64: snprintf(buf, cap, "DOUBLE"); break;
    case TM_TYPE_DECIMAL128:
      /* Up to 15 digits a double holds the value exactly; beyond, exact text
       * (TEXT affinity, so SQLite never converts it to a lossy REAL). */
      if (t->precision <= 15) snprintf(buf, cap, "DECIMAL(%d,%d)", (int)t->precision, (int)t->scale);
      else snprintf(buf, cap, "DECIMAL TEXT(%d,%d)", (int)t->precision, (int)t->scale);
      break;
    case TM_TYPE_UTF8: snprintf(buf, cap, "TEXT"); break;
    case TM_TYPE_BINARY: snprintf(buf, cap, "BLOB"); break;
    case TM_TYPE_FIXED_BINARY:
      if (t->uuid) snprintf(buf, cap, "UUID TEXT");
      else snprintf(buf, cap, "FIXED BLOB(%d)", (int)t->width);
      break;
    case TM_TYPE_DATE32: snprintf(buf, cap, "DATE"); break;
    case TM_TYPE_TIME64: snprintf(buf, cap, "TIME%s", t->unit == TM_UNIT_NANO ? "_NS" : ""); break;
    case TM_TYPE_TIMESTAMP:
      snprintf(buf, cap, "%s%s", t->utc ? "TIMESTAMPTZ" : "TIMESTAMP", ts_suffix(t->unit));
      break;
    default: snprintf(buf, cap, "BLOB"); break;
  }
}

/* ---- canonical temporal text --------------------------------------------- */

static int frac_digits(tm_time_unit u) {
  static const int k[] = {0, 3, 6, 9};
  return k[u & 3];
}

static char *put2(char *p, unsigned v) {
  p[0] = (char)('0' + v / 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

static char *put_frac(char *p, int64_t frac, int digits) {
  *p++ = '.';
  for (int i = digits - 1; i >= 0; i--) {
    p[i] = (char)('0' + frac % 10);
    frac /= 10;
  }
  return p + digits;
}

static char *put_date(char *p, int64_t days) {
  int64_t y;
  unsigned m, d;
  tm_civil_from_days(days, &y, &m, &d);
  unsigned yy = (unsigned)y;
  p[0] = (char)('0' + yy / 1000);
  p[1] = (char)('0' + yy / 100 % 10);
  p[2] = (char)('0' + yy / 10 % 10);
  p[3] = (char)('0' + yy % 10);
  p[4] = '-';
  p = put2(p + 5, m);
  *p++ = '-';
  return put2(p, d);
}

static char *put_clock(char *p, int64_t sec_of_day) {
  p = put2(p, (unsigned)(sec_of_day / 3600));
  *p++ = ':';
  p = put2(p, (unsigned)(sec_of_day / 60 % 60));
  *p++ = ':';
  return put2(p, (unsigned)(sec_of_day % 60));
}

size_t tm_sqltype_render_temporal(const tm_type *t, int64_t raw, char *buf, size_t cap) {
  char tmp[48];
  char *p = tmp;
  switch (t->id) {
    case TM_TYPE_DATE32:
      if (raw < MIN_DAY || raw > MAX_DAY) return 0;
      p = put_date(p, raw);
      break;
    case TM_TYPE_TIME64: {
      int64_t per = tm_unit_per_second(t->unit);
      if (raw < 0 || raw >= TM_SEC_PER_DAY * per) return 0;
      p = put_clock(p, raw / per);
      p = put_frac(p, raw % per, frac_digits(t->unit));
      break;
    }
    case TM_TYPE_TIMESTAMP: {
      int64_t per = tm_unit_per_second(t->unit);
      int64_t sec = tm_floor_div(raw, per);
      int64_t frac = raw - sec * per;
      int64_t days = tm_floor_div(sec, TM_SEC_PER_DAY);
      if (days < MIN_DAY || days > MAX_DAY) return 0;
      p = put_date(p, days);
      *p++ = 'T';
      p = put_clock(p, sec - days * TM_SEC_PER_DAY);
      if (per > 1) p = put_frac(p, frac, frac_digits(t->unit));
      if (t->utc) *p++ = 'Z';
      break;
    }
    default: return 0;
  }
  size_t n = (size_t)(p - tmp);
  if (n + 1 > cap) return 0;
  memcpy(buf, tmp, n);
  buf[n] = '\0';
  return n;
}

static int parse_time_of_day(const char *s, size_t n, int64_t per, int64_t *out) {
  /* HH:MM:SS[.fraction] */
  if (n < 8 || s[2] != ':' || s[5] != ':') return TM_EINVALID;
  int64_t parts[3];
  for (int k = 0; k < 3; k++) {
    const char *q = s + k * 3;
    if (q[0] < '0' || q[0] > '9' || q[1] < '0' || q[1] > '9') return TM_EINVALID;
    parts[k] = (q[0] - '0') * 10 + (q[1] - '0');
  }
  if (parts[0] > 23 || parts[1] > 59 || parts[2] > 59) return TM_EINVALID;
  int64_t frac = 0;
  size_t i = 8;
  if (i < n) {
    if (s[i] != '.') return TM_EINVALID;
    i++;
    int64_t scale = per;
    size_t start = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      scale /= 10;
      if (scale == 0 && s[i] != '0') return TM_EINVALID; /* more precision than the unit */
      frac += (s[i] - '0') * scale;
      i++;
    }
    if (i == start || i != n) return TM_EINVALID;
  }
  *out = ((parts[0] * 60 + parts[1]) * 60 + parts[2]) * per + frac;
  return TM_OK;
}

int tm_sqltype_parse_temporal(const tm_type *t, const char *s, size_t n, int64_t *out) {
  int64_t sec;
  int32_t nsec;
  bool zone;
  switch (t->id) {
    case TM_TYPE_DATE32:
      if (tm_time_parse(s, n, &sec, &nsec, &zone) != TM_OK) return TM_EINVALID;
      *out = tm_floor_div(sec, TM_SEC_PER_DAY);
      return TM_OK;
    case TM_TYPE_TIME64: return parse_time_of_day(s, n, tm_unit_per_second(t->unit), out);
    case TM_TYPE_TIMESTAMP: {
      if (tm_time_parse(s, n, &sec, &nsec, &zone) != TM_OK) return TM_EINVALID;
      return tm_instant_to_units((tm_instant){sec, nsec}, tm_unit_per_second(t->unit), false, out)
                 ? TM_OK
                 : TM_EINVALID;
    }
    default: return TM_EINVALID;
  }
}

/* ---- values --------------------------------------------------------------- */

static const double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static void put_uuid(char *buf, const uint8_t *b) {
  static const char hex[] = "0123456789abcdef";
  char *p = buf;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    *p++ = hex[b[i] >> 4];
    *p++ = hex[b[i] & 15];
  }
  *p = '\0';
}

void tm_sqlval_from(tm_sqlval *out, const tm_type *t, const tm_value *v) {
  out->p = NULL;
  out->n = 0;
  if (v->is_null) {
    out->kind = SQLITE_NULL;
    return;
  }
  switch (t->id) {
    case TM_TYPE_BOOL: out->kind = SQLITE_INTEGER; out->i = v->v.b ? 1 : 0; return;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: out->kind = SQLITE_INTEGER; out->i = v->v.i; return;
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: out->kind = SQLITE_INTEGER; out->i = (int64_t)v->v.u; return;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (isnan(v->v.f)) {
        /* SQLite turns a NaN REAL into NULL: NaN is kept as the text "NaN". */
        out->kind = SQLITE_TEXT;
        out->n = 3;
        memcpy(out->buf, "NaN", 3);
        out->p = out->buf;
        return;
      }
      out->kind = SQLITE_FLOAT;
      out->f = v->v.f;
      return;
    case TM_TYPE_DECIMAL128: {
      if (t->precision <= 15 && t->scale >= 0 && t->scale <= 22) {
        __int128 x;
        memcpy(&x, v->v.dec, 16);
        out->kind = SQLITE_FLOAT;
        /* |x| < 10^15 < 2^53: exact as a double; one rounding in the division. */
        out->f = (double)(int64_t)x / k_pow10[t->scale];
        return;
      }
      out->kind = SQLITE_TEXT;
      out->n = tm_decimal_format(v->v.dec, t->scale, out->buf, sizeof out->buf);
      out->p = out->buf;
      return;
    }
    case TM_TYPE_UTF8:
      out->kind = SQLITE_TEXT;
      out->p = v->v.s.ptr;
      out->n = v->v.s.len;
      return;
    case TM_TYPE_BINARY:
      out->kind = SQLITE_BLOB;
      out->p = v->v.s.ptr;
      out->n = v->v.s.len;
      return;
    case TM_TYPE_FIXED_BINARY:
      if (t->uuid && v->v.s.len == 16) {
        out->kind = SQLITE_TEXT;
        put_uuid(out->buf, (const uint8_t *)v->v.s.ptr);
        out->p = out->buf;
        out->n = 36;
        return;
      }
      out->kind = SQLITE_BLOB;
      out->p = v->v.s.ptr;
      out->n = v->v.s.len;
      return;
    case TM_TYPE_DATE32:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: {
      size_t n = tm_sqltype_render_temporal(t, v->v.i, out->buf, sizeof out->buf);
      if (n == 0) {
        out->kind = SQLITE_INTEGER;
        out->i = v->v.i;
        return;
      }
      out->kind = SQLITE_TEXT;
      out->p = out->buf;
      out->n = n;
      return;
    }
    default: out->kind = SQLITE_NULL; return;
  }
}

int tm_sqlval_bind(sqlite3_stmt *st, int idx, const tm_sqlval *v) {
  /* Text in our own buf is copied (TRANSIENT); payloads of the batch being
   * written stay valid until the statement steps (STATIC). */
  sqlite3_destructor_type d = v->p == v->buf ? SQLITE_TRANSIENT : SQLITE_STATIC;
  switch (v->kind) {
    case SQLITE_INTEGER: return sqlite3_bind_int64(st, idx, v->i);
    case SQLITE_FLOAT: return sqlite3_bind_double(st, idx, v->f);
    case SQLITE_TEXT: return sqlite3_bind_text64(st, idx, v->n ? v->p : "", v->n, d, SQLITE_UTF8);
    case SQLITE_BLOB: return sqlite3_bind_blob64(st, idx, v->n ? v->p : "", v->n, d);
    default: return sqlite3_bind_null(st, idx);
  }
}

/* Parses decimal text ("-12.5", "3") into an unscaled int128 of `scale`. */
static int parse_decimal(const char *s, size_t n, int32_t scale, uint8_t out[16]) {
  size_t i = 0;
  bool neg = false;
  if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  unsigned __int128 v = 0;
  int frac = -1, digits = 0;
  /* |x| < 2^127 (a 38-digit decimal is below 1.7e38). */
  const unsigned __int128 lim = ((unsigned __int128)1 << 127) - 1;
  for (; i < n; i++) {
    if (s[i] == '.' && frac < 0) {
      frac = 0;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') return TM_EINVALID;
    if (frac >= 0) {
      if (frac == scale) {
        if (s[i] != '0') return TM_EINVALID; /* more fraction digits than the scale */
        continue;
      }
      frac++;
    }
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (lim - d) / 10) return TM_EINVALID;
    v = v * 10 + d;
    digits++;
  }
  if (digits == 0) return TM_EINVALID;
  for (int k = frac < 0 ? 0 : frac; k < scale; k++) {
    if (v > lim / 10) return TM_EINVALID;
    v *= 10;
  }
  __int128 x = neg ? -(__int128)v : (__int128)v;
  memcpy(out, &x, 16);
  return TM_OK;
}

static int parse_uuid(const char *s, size_t n, uint8_t out[16]) {
  int k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '-') continue;
    int hi = s[i];
    if (i + 1 >= n || k >= 16) return TM_EINVALID;
    int lo = s[++i];
    int h = hi >= '0' && hi <= '9' ? hi - '0' : (hi | 32) >= 'a' && (hi | 32) <= 'f' ? (hi | 32) - 'a' + 10 : -1;
    int l = lo >= '0' && lo <= '9' ? lo - '0' : (lo | 32) >= 'a' && (lo | 32) <= 'f' ? (lo | 32) - 'a' + 10 : -1;
    if (h < 0 || l < 0) return TM_EINVALID;
    out[k++] = (uint8_t)(h * 16 + l);
  }
  return k == 16 ? TM_OK : TM_EINVALID;
}

static int bad_value(const tm_type *t, sqlite3_value *v, tm_error *err) {
  char tn[64];
  tm_type_name(t, tn, sizeof tn);
  static const char *const kinds[] = {"?", "integer", "real", "text", "blob", "null"};
  int k = sqlite3_value_type(v);
  return tm_error_set(err, TM_EINVALID, "SQL %s value does not fit %s",
                      kinds[k >= 1 && k <= 5 ? k : 0], tn);
}

int tm_sqltype_append(tm_colbuilder *cb, const tm_type *t, sqlite3_value *v, tm_error *err) {
  int k = sqlite3_value_type(v);
  if (k == SQLITE_NULL) return tm_colbuilder_append_null(cb, err);
  switch (t->id) {
    case TM_TYPE_BOOL:
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
      if (k != SQLITE_INTEGER) return bad_value(t, v, err);
      return tm_colbuilder_append_int(cb, sqlite3_value_int64(v), err);
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
      if (k != SQLITE_INTEGER) return bad_value(t, v, err);
      return tm_colbuilder_append_uint(cb, (uint64_t)sqlite3_value_int64(v), err);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (k == SQLITE_TEXT && sqlite3_value_bytes(v) == 3 &&
          memcmp(sqlite3_value_text(v), "NaN", 3) == 0)
        return tm_colbuilder_append_double(cb, NAN, err);
      if (k != SQLITE_FLOAT && k != SQLITE_INTEGER) return bad_value(t, v, err);
      return tm_colbuilder_append_double(cb, sqlite3_value_double(v), err);
    case TM_TYPE_DECIMAL128: {
      uint8_t d[16];
      if (k == SQLITE_INTEGER || k == SQLITE_FLOAT) {
        if (t->scale < 0 || t->scale > 22) return bad_value(t, v, err);
        double x = sqlite3_value_double(v) * k_pow10[t->scale];
        if (!(fabs(x) < 9.2e18)) return bad_value(t, v, err);
        __int128 q = (__int128)llround(x);
        memcpy(d, &q, 16);
      } else if (k == SQLITE_TEXT) {
        if (parse_decimal((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v),
                          t->scale, d) != TM_OK)
          return bad_value(t, v, err);
      } else {
        return bad_value(t, v, err);
      }
      return tm_colbuilder_append_decimal(cb, d, err);
    }
    case TM_TYPE_UTF8: {
      const unsigned char *p = sqlite3_value_text(v);
      if (!p) return tm_error_nomem(err);
      return tm_colbuilder_append_bytes(cb, p, (size_t)sqlite3_value_bytes(v), err);
    }
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: {
      if (t->uuid && k == SQLITE_TEXT) {
        uint8_t u[16];
        if (parse_uuid((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), u) !=
            TM_OK)
          return bad_value(t, v, err);
        return tm_colbuilder_append_bytes(cb, u, 16, err);
      }
      const void *p = sqlite3_value_blob(v);
      size_t n = (size_t)sqlite3_value_bytes(v);
      return tm_colbuilder_append_bytes(cb, n ? p : "", n, err);
    }
    case TM_TYPE_DATE32:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: {
      int64_t raw;
      if (k == SQLITE_INTEGER) raw = sqlite3_value_int64(v);
      else if (k != SQLITE_TEXT ||
               tm_sqltype_parse_temporal(t, (const char *)sqlite3_value_text(v),
                                         (size_t)sqlite3_value_bytes(v), &raw) != TM_OK)
        return bad_value(t, v, err);
      return tm_colbuilder_append_int(cb, raw, err);
    }
    default: return bad_value(t, v, err);
  }
}

int tm_sqltype_to_value(const tm_type *t, sqlite3_value *v, tm_value *out, char **owned,
                        tm_error *err) {
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, *t, 0);
  *owned = NULL;
  int rc = tm_sqltype_append(&cb, t, v, err);
  if (rc == TM_OK) {
    tm_colview view;
    memset(&view, 0, sizeof view);
    view.type = *t;
    view.length = cb.length;
    view.null_count = cb.null_count;
    view.validity = cb.null_count ? (const uint8_t *)cb.validity.ptr : NULL;
    view.values = cb.values.ptr;
    view.data = (const uint8_t *)cb.data.ptr;
    tm_value tmp;
    tm_colview_get(&view, 0, &tmp);
    rc = tm_value_copy(out, &tmp, owned, err);
  }
  tm_colbuilder_dispose(&cb);
  return rc;
}
