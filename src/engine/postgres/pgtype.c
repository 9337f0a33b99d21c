/*
 * pgtype.c - tm values in PostgreSQL's binary format and back (engine layer,
 * postgres backend). The column types are listed in pg_int.h.
 */
#include <stdio.h>
#include <string.h>

#include "engine/postgres/pg_int.h"

#define PG_EPOCH_DAYS 10957                       /* 2000-01-01 in days since 1970-01-01 */
#define PG_EPOCH_US ((int64_t)946684800 * 1000000) /* the same in microseconds */

/* PostgreSQL type OIDs (pg_type.dat; fixed across versions). */
enum {
  OID_BOOL = 16,
  OID_BYTEA = 17,
  OID_INT8 = 20,
  OID_INT2 = 21,
  OID_INT4 = 23,
  OID_TEXT = 25,
  OID_FLOAT4 = 700,
  OID_FLOAT8 = 701,
  OID_DATE = 1082,
  OID_TIME = 1083,
  OID_TIMESTAMP = 1114,
  OID_TIMESTAMPTZ = 1184,
  OID_NUMERIC = 1700,
  OID_UUID = 2950
};

typedef unsigned __int128 u128;

static bool stored_as_bigint_ns(const tm_type *t) {
  return (t->id == TM_TYPE_TIMESTAMP || t->id == TM_TYPE_TIME64) && t->unit == TM_UNIT_NANO;
}

void tm_pg_type_decl(const tm_type *t, char *buf, size_t cap) {
  const char *s = "text";
  switch (t->id) {
    case TM_TYPE_BOOL: s = "boolean"; break;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_UINT8: s = "smallint"; break;
    case TM_TYPE_INT32:
    case TM_TYPE_UINT16: s = "integer"; break;
    case TM_TYPE_INT64:
    case TM_TYPE_UINT32: s = "bigint"; break;
    case TM_TYPE_UINT64: s = "numeric(20,0)"; break;
    case TM_TYPE_FLOAT32: s = "real"; break;
    case TM_TYPE_FLOAT64: s = "double precision"; break;
    case TM_TYPE_DECIMAL128:
      snprintf(buf, cap, "numeric(%d,%d)", (int)t->precision, (int)t->scale);
      return;
    case TM_TYPE_UTF8: s = "text COLLATE \"C\""; break;
    case TM_TYPE_BINARY: s = "bytea"; break;
    case TM_TYPE_FIXED_BINARY: s = t->uuid && t->width == 16 ? "uuid" : "bytea"; break;
    case TM_TYPE_DATE32: s = "date"; break;
    case TM_TYPE_TIME64: s = t->unit == TM_UNIT_NANO ? "bigint" : "time"; break;
    case TM_TYPE_TIMESTAMP:
      s = t->unit == TM_UNIT_NANO ? "bigint" : t->utc ? "timestamptz" : "timestamp";
      break;
    default: break;
  }
  snprintf(buf, cap, "%s", s);
}

unsigned tm_pg_type_oid(const tm_type *t) {
  switch (t->id) {
    case TM_TYPE_BOOL: return OID_BOOL;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_UINT8: return OID_INT2;
    case TM_TYPE_INT32:
    case TM_TYPE_UINT16: return OID_INT4;
    case TM_TYPE_INT64:
    case TM_TYPE_UINT32: return OID_INT8;
    case TM_TYPE_UINT64:
    case TM_TYPE_DECIMAL128: return OID_NUMERIC;
    case TM_TYPE_FLOAT32: return OID_FLOAT4;
    case TM_TYPE_FLOAT64: return OID_FLOAT8;
    case TM_TYPE_UTF8: return OID_TEXT;
    case TM_TYPE_BINARY: return OID_BYTEA;
    case TM_TYPE_FIXED_BINARY: return t->uuid && t->width == 16 ? OID_UUID : OID_BYTEA;
    case TM_TYPE_DATE32: return OID_DATE;
    case TM_TYPE_TIME64: return t->unit == TM_UNIT_NANO ? OID_INT8 : OID_TIME;
    case TM_TYPE_TIMESTAMP:
      return t->unit == TM_UNIT_NANO ? OID_INT8 : t->utc ? OID_TIMESTAMPTZ : OID_TIMESTAMP;
    default: return OID_TEXT;
  }
}

bool tm_pg_order_exact(const tm_type *t) {
  /* NaN: PostgreSQL orders it above every number; tidemark's comparison does not. */
  return t->id != TM_TYPE_FLOAT32 && t->id != TM_TYPE_FLOAT64 && t->id != TM_TYPE_INVALID;
}

/* ---- big-endian bytes -------------------------------------------------------------- */

static void put16(char *p, uint16_t v) {
  p[0] = (char)(v >> 8);
  p[1] = (char)v;
}
static void put32(char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (char)(v >> (24 - 8 * i));
}
static void put64(char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (char)(v >> (56 - 8 * i));
}
static uint16_t get16(const char *p) {
  return (uint16_t)(((uint16_t)(uint8_t)p[0] << 8) | (uint8_t)p[1]);
}
static uint32_t get32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v = (v << 8) | (uint8_t)p[i];
  return v;
}
static uint64_t get64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | (uint8_t)p[i];
  return v;
}

/* ---- numeric ----------------------------------------------------------------------
 *
 * PostgreSQL's binary numeric: int16 ndigits, int16 weight (of the first
 * base-10000 digit), int16 sign (0 positive, 0x4000 negative, 0xC000 NaN),
 * int16 dscale (decimal digits after the point), then ndigits int16 digits.
 */

static int numeric_from(tm_pgval *out, bool neg, u128 mag, int scale) {
  char dig[48];
  int n = 0;
  char tmp[48];
  int k = 0;
  do {
    tmp[k++] = (char)('0' + (int)(mag % 10));
    mag /= 10;
  } while (mag);
  for (int i = k - 1; i >= 0; i--) dig[n++] = tmp[i];
  /* Integer digits, then `scale` fraction digits (left-padded with zeros). */
  char ip[48], fp[48];
  int ni = n > scale ? n - scale : 0;
  memcpy(ip, dig, (size_t)ni);
  int nf = 0;
  for (int i = 0; i < scale - (n - ni); i++) fp[nf++] = '0';
  memcpy(fp + nf, dig + ni, (size_t)(n - ni));
  nf += n - ni;
  /* Groups of four, aligned at the point. */
  uint16_t groups[24];
  int ng = 0;
  int lead = (4 - ni % 4) % 4;
  int n_int_groups = (ni + lead) / 4;
  for (int g = 0; g < n_int_groups; g++) {
    int v = 0;
    for (int j = 0; j < 4; j++) {
      int pos = g * 4 + j - lead;
      v = v * 10 + (pos >= 0 ? ip[pos] - '0' : 0);
    }
    groups[ng++] = (uint16_t)v;
  }
  int n_frac_groups = (nf + 3) / 4;
  for (int g = 0; g < n_frac_groups; g++) {
    int v = 0;
    for (int j = 0; j < 4; j++) {
      int pos = g * 4 + j;
      v = v * 10 + (pos < nf ? fp[pos] - '0' : 0);
    }
    groups[ng++] = (uint16_t)v;
  }
  int weight = n_int_groups - 1;
  int first = 0;
  while (first < ng && groups[first] == 0) {
    first++;
    weight--;
  }
  int last = ng;
  while (last > first && groups[last - 1] == 0) last--;
  int nd = last - first;
  if (nd == 0) {
    weight = 0;
    neg = false;
  }
  char *p = out->buf;
  put16(p, (uint16_t)nd);
  put16(p + 2, (uint16_t)(int16_t)weight);
  put16(p + 4, neg ? 0x4000 : 0);
  put16(p + 6, (uint16_t)scale);
  for (int i = 0; i < nd; i++) put16(p + 8 + 2 * i, groups[first + i]);
  out->p = out->buf;
  out->len = 8 + 2 * nd;
  return TM_OK;
}

static u128 pow10u(int e) {
  u128 v = 1;
  while (e-- > 0) v *= 10;
  return v;
}

/* A numeric's value times 10^scale, exactly; false when it is not an integer or too large. */
static bool numeric_to(const char *p, int len, int scale, bool *neg, u128 *mag) {
  if (len < 8) return false;
  int nd = (int16_t)get16(p);
  int weight = (int16_t)get16(p + 2);
  uint16_t sign = get16(p + 4);
  if (nd < 0 || len != 8 + 2 * nd || (sign != 0 && sign != 0x4000)) return false;
  *neg = sign == 0x4000;
  u128 acc = 0;
  for (int i = 0; i < nd; i++) {
    uint16_t d = get16(p + 8 + 2 * i);
    if (d > 9999) return false;
    int e = (weight - i) * 4 + scale;
    if (d == 0) continue;
    if (e < 0) {
      u128 div = pow10u(-e);
      if (-e > 4 || d % div) return false;
      acc += d / div;
    } else {
      if (e > 38) return false;
      u128 add = (u128)d * pow10u(e);
      if (acc + add < acc) return false;
      acc += add;
    }
  }
  *mag = acc;
  return true;
}

/* ---- values ----------------------------------------------------------------------- */

static int to_us(const tm_type *t, int64_t v, int64_t *out) {
  int64_t f = t->unit == TM_UNIT_SECOND ? 1000000 : t->unit == TM_UNIT_MILLI ? 1000 : 1;
  return __builtin_mul_overflow(v, f, out) ? TM_EINVALID : TM_OK;
}

int tm_pgval_from(tm_pgval *out, const tm_type *t, const tm_value *v, tm_error *err) {
  out->p = out->buf;
  if (v->is_null) {
    out->len = -1;
    return TM_OK;
  }
  char *b = out->buf;
  switch (t->id) {
    case TM_TYPE_BOOL:
      b[0] = v->v.b ? 1 : 0;
      out->len = 1;
      return TM_OK;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
      put16(b, (uint16_t)(int16_t)v->v.i);
      out->len = 2;
      return TM_OK;
    case TM_TYPE_UINT8:
      put16(b, (uint16_t)v->v.u);
      out->len = 2;
      return TM_OK;
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32:
      if (t->id == TM_TYPE_DATE32) put32(b, (uint32_t)(int32_t)(v->v.i - PG_EPOCH_DAYS));
      else put32(b, (uint32_t)(int32_t)v->v.i);
      out->len = 4;
      return TM_OK;
    case TM_TYPE_UINT16:
      put32(b, (uint32_t)v->v.u);
      out->len = 4;
      return TM_OK;
    case TM_TYPE_INT64:
      put64(b, (uint64_t)v->v.i);
      out->len = 8;
      return TM_OK;
    case TM_TYPE_UINT32:
      put64(b, v->v.u);
      out->len = 8;
      return TM_OK;
    case TM_TYPE_UINT64: return numeric_from(out, false, v->v.u, 0);
    case TM_TYPE_DECIMAL128: {
      u128 raw = 0;
      for (int i = 15; i >= 0; i--) raw = (raw << 8) | v->v.dec[i];
      bool neg = (v->v.dec[15] & 0x80) != 0;
      u128 mag = neg ? (u128)0 - raw : raw;
      return numeric_from(out, neg, mag, t->scale);
    }
    case TM_TYPE_FLOAT32: {
      float f = (float)v->v.f;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      put32(b, bits);
      out->len = 4;
      return TM_OK;
    }
    case TM_TYPE_FLOAT64: {
      uint64_t bits;
      memcpy(&bits, &v->v.f, 8);
      put64(b, bits);
      out->len = 8;
      return TM_OK;
    }
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY:
      if (v->v.s.len > (size_t)INT32_MAX - 1)
        return tm_error_set(err, TM_ETOOLARGE, "a value of %zu bytes is too large for PostgreSQL",
                            v->v.s.len);
      out->p = v->v.s.len ? v->v.s.ptr : "";
      out->len = (int)v->v.s.len;
      return TM_OK;
    case TM_TYPE_TIME64:
      put64(b, (uint64_t)v->v.i); /* time: microseconds; ns: bigint nanoseconds */
      out->len = 8;
      return TM_OK;
    case TM_TYPE_TIMESTAMP: {
      int64_t us = v->v.i;
      if (!stored_as_bigint_ns(t) &&
          (to_us(t, v->v.i, &us) != TM_OK || __builtin_sub_overflow(us, PG_EPOCH_US, &us)))
        return tm_error_set(err, TM_EINVALID, "timestamp %lld (%s) is outside PostgreSQL's range",
                            (long long)v->v.i, tm_unit_name(t->unit));
      put64(b, (uint64_t)us);
      out->len = 8;
      return TM_OK;
    }
    default: return tm_error_set(err, TM_EUNSUPPORTED, "type %d has no PostgreSQL form", (int)t->id);
  }
}

static int bad(tm_error *err, const tm_type *t, int len) {
  char name[64];
  tm_type_name(t, name, sizeof name);
  return TM_CORRUPT(err, "PostgreSQL sent %d bytes that are not a value of type %s", len, name);
}

int tm_pg_to_value(const tm_type *t, const char *p, int len, tm_value *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  out->type = t->id;
  if (len < 0) {
    out->is_null = true;
    return TM_OK;
  }
  switch (t->id) {
    case TM_TYPE_BOOL:
      if (len != 1) return bad(err, t, len);
      out->v.b = p[0] != 0;
      return TM_OK;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_UINT8:
      if (len != 2) return bad(err, t, len);
      if (t->id == TM_TYPE_UINT8) out->v.u = (uint16_t)get16(p);
      else out->v.i = (int16_t)get16(p);
      return TM_OK;
    case TM_TYPE_INT32:
    case TM_TYPE_UINT16:
    case TM_TYPE_DATE32:
      if (len != 4) return bad(err, t, len);
      if (t->id == TM_TYPE_UINT16) out->v.u = get32(p);
      else out->v.i = (int32_t)get32(p) + (t->id == TM_TYPE_DATE32 ? PG_EPOCH_DAYS : 0);
      return TM_OK;
    case TM_TYPE_INT64:
    case TM_TYPE_UINT32:
    case TM_TYPE_TIME64:
      if (len != 8) return bad(err, t, len);
      if (t->id == TM_TYPE_UINT32) out->v.u = get64(p);
      else out->v.i = (int64_t)get64(p);
      return TM_OK;
    case TM_TYPE_UINT64:
    case TM_TYPE_DECIMAL128: {
      bool neg = false;
      u128 mag = 0;
      if (!numeric_to(p, len, t->id == TM_TYPE_UINT64 ? 0 : t->scale, &neg, &mag))
        return bad(err, t, len);
      if (t->id == TM_TYPE_UINT64) {
        if (neg || mag > UINT64_MAX) return bad(err, t, len);
        out->v.u = (uint64_t)mag;
        return TM_OK;
      }
      u128 raw = neg ? (u128)0 - mag : mag;
      for (int i = 0; i < 16; i++) out->v.dec[i] = (uint8_t)(raw >> (8 * i));
      return TM_OK;
    }
    case TM_TYPE_FLOAT32: {
      if (len != 4) return bad(err, t, len);
      uint32_t bits = get32(p);
      float f;
      memcpy(&f, &bits, 4);
      out->v.f = f;
      return TM_OK;
    }
    case TM_TYPE_FLOAT64: {
      if (len != 8) return bad(err, t, len);
      uint64_t bits = get64(p);
      memcpy(&out->v.f, &bits, 8);
      return TM_OK;
    }
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY:
      if (t->id == TM_TYPE_FIXED_BINARY && len != t->width) return bad(err, t, len);
      out->v.s = tm_sv(p, (size_t)len);
      return TM_OK;
    case TM_TYPE_TIMESTAMP: {
      if (len != 8) return bad(err, t, len);
      int64_t v = (int64_t)get64(p);
      if (stored_as_bigint_ns(t)) {
        out->v.i = v;
        return TM_OK;
      }
      if (__builtin_add_overflow(v, PG_EPOCH_US, &v)) return bad(err, t, len);
      int64_t f = t->unit == TM_UNIT_SECOND ? 1000000 : t->unit == TM_UNIT_MILLI ? 1000 : 1;
      /* Floor division: a value written elsewhere with a finer unit rounds down. */
      int64_t q = v / f;
      if (v % f < 0) q--;
      out->v.i = q;
      return TM_OK;
    }
    default: return bad(err, t, len);
  }
}
