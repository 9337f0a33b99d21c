/*
 * transform.c - Iceberg partition transforms, the bucket hash, the
 * single-value binary serialisation and partition keys (format layer).
 * See iceberg.h.
 *
 * Values travel as tm_value typed with the columnar type of the Iceberg
 * type (tm_iceberg_type_to_tm): int -> INT32, date -> DATE32, timestamps ->
 * TIMESTAMP (us or ns), decimals -> 16-byte little-endian DECIMAL128, uuid ->
 * FIXED_BINARY(16), strings -> UTF8 views.
 */
#include <math.h>
#include <string.h>

#include "format/avro/avro.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/time.h"

#define US_PER_DAY INT64_C(86400000000)
#define US_PER_HOUR INT64_C(3600000000)

int tm_iceberg_transform_result(const tm_iceberg_transform *tr, const tm_iceberg_type *source,
                                tm_type *out, tm_error *err) {
  tm_iceberg_type_id s = source->id;
  bool is_ts = s == TM_ICEBERG_TIMESTAMP || s == TM_ICEBERG_TIMESTAMPTZ ||
               s == TM_ICEBERG_TIMESTAMP_NS || s == TM_ICEBERG_TIMESTAMPTZ_NS;
  switch (tr->kind) {
    case TM_ICEBERG_TR_IDENTITY:
    case TM_ICEBERG_TR_VOID:
    case TM_ICEBERG_TR_UNKNOWN:
      if (!tm_iceberg_type_is_primitive(source)) break;
      return tm_iceberg_type_to_tm(source, out, err);
    case TM_ICEBERG_TR_BUCKET:
      if (s == TM_ICEBERG_INT || s == TM_ICEBERG_LONG || s == TM_ICEBERG_DECIMAL ||
          s == TM_ICEBERG_DATE || s == TM_ICEBERG_TIME || is_ts || s == TM_ICEBERG_STRING ||
          s == TM_ICEBERG_UUID || s == TM_ICEBERG_FIXED || s == TM_ICEBERG_BINARY) {
        *out = tm_type_of(TM_TYPE_INT32);
        return TM_OK;
      }
      break;
    case TM_ICEBERG_TR_TRUNCATE:
      if (s == TM_ICEBERG_INT || s == TM_ICEBERG_LONG || s == TM_ICEBERG_DECIMAL ||
          s == TM_ICEBERG_STRING || s == TM_ICEBERG_BINARY) {
        return tm_iceberg_type_to_tm(source, out, err);
      }
      break;
    case TM_ICEBERG_TR_YEAR:
    case TM_ICEBERG_TR_MONTH:
    case TM_ICEBERG_TR_DAY:
      if (s == TM_ICEBERG_DATE || is_ts) {
        *out = tm_type_of(tr->kind == TM_ICEBERG_TR_DAY ? TM_TYPE_DATE32 : TM_TYPE_INT32);
        return TM_OK;
      }
      break;
    case TM_ICEBERG_TR_HOUR:
      if (is_ts) {
        *out = tm_type_of(TM_TYPE_INT32);
        return TM_OK;
      }
      break;
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "transform %s does not apply to type %s",
                      tr->text ? tr->text : "?", tm_iceberg_type_name(source->id));
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int32_t hash_long(int64_t v) {
  uint8_t b[8];
  put_le64(b, (uint64_t)v);
  return (int32_t)tm_murmur3_32(b, 8, 0);
}

/* The minimal big-endian two's complement bytes of a 128-bit integer. */
static size_t decimal_min_be(const uint8_t le[16], uint8_t be[16]) {
  for (int i = 0; i < 16; i++) be[i] = le[15 - i];
  size_t start = 0;
  while (start < 15) {
    bool redundant = (be[start] == 0x00 && !(be[start + 1] & 0x80)) ||
                     (be[start] == 0xff && (be[start + 1] & 0x80));
    if (!redundant) break;
    start++;
  }
  memmove(be, be + start, 16 - start);
  return 16 - start;
}

int tm_iceberg_bucket_hash(const tm_iceberg_type *source, const tm_value *v, int32_t *out,
                           tm_error *err) {
  switch (source->id) {
    case TM_ICEBERG_INT:
    case TM_ICEBERG_LONG:
    case TM_ICEBERG_DATE:
    case TM_ICEBERG_TIME:
    case TM_ICEBERG_TIMESTAMP:
    case TM_ICEBERG_TIMESTAMPTZ:
      *out = hash_long(v->v.i);
      return TM_OK;
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      *out = hash_long(tm_floor_div(v->v.i, 1000));
      return TM_OK;
    case TM_ICEBERG_DECIMAL: {
      uint8_t be[16];
      size_t n = decimal_min_be(v->v.dec, be);
      *out = (int32_t)tm_murmur3_32(be, n, 0);
      return TM_OK;
    }
    case TM_ICEBERG_STRING:
    case TM_ICEBERG_UUID:
    case TM_ICEBERG_FIXED:
    case TM_ICEBERG_BINARY:
      *out = (int32_t)tm_murmur3_32(v->v.s.ptr, v->v.s.len, 0);
      return TM_OK;
    default:
      break;
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "bucket transform does not apply to type %s",
                      tm_iceberg_type_name(source->id));
}

/* Microseconds of a timestamp or date value. */
static int64_t to_micros(const tm_iceberg_type *source, const tm_value *v) {
  switch (source->id) {
    case TM_ICEBERG_DATE:
      return v->v.i * US_PER_DAY;
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      return tm_floor_div(v->v.i, 1000);
    default:
      return v->v.i;
  }
}

/* Truncates a UTF-8 string to at most w code points. */
static size_t utf8_prefix(const char *s, size_t len, int32_t w) {
  size_t i = 0;
  int32_t cps = 0;
  while (i < len && cps < w) {
    unsigned char ch = (unsigned char)s[i];
    size_t step = ch < 0x80 ? 1 : (ch >> 5) == 6 ? 2 : (ch >> 4) == 14 ? 3 : (ch >> 3) == 30 ? 4 : 1;
    if (i + step > len) step = len - i;
    i += step;
    cps++;
  }
  return i;
}

int tm_iceberg_transform_apply(const tm_iceberg_transform *tr, const tm_iceberg_type *source,
                               const tm_value *v, tm_value *out, uint8_t scratch[16],
                               tm_error *err) {
  tm_type rt;
  TM_TRY(tm_iceberg_transform_result(tr, source, &rt, err));
  memset(out, 0, sizeof *out);
  out->type = rt.id;
  if (v->is_null || tr->kind == TM_ICEBERG_TR_VOID) {
    out->is_null = true;
    return TM_OK;
  }
  switch (tr->kind) {
    case TM_ICEBERG_TR_IDENTITY:
    case TM_ICEBERG_TR_UNKNOWN:
      *out = *v;
      return TM_OK;
    case TM_ICEBERG_TR_BUCKET: {
      int32_t h;
      TM_TRY(tm_iceberg_bucket_hash(source, v, &h, err));
      out->v.i = (int64_t)((uint32_t)h & 0x7fffffffu) % tr->param;
      return TM_OK;
    }
    case TM_ICEBERG_TR_TRUNCATE: {
      int64_t w = tr->param;
      switch (source->id) {
        case TM_ICEBERG_INT:
        case TM_ICEBERG_LONG: {
          int64_t x = v->v.i;
          out->v.i = x - (((x % w) + w) % w);
          return TM_OK;
        }
        case TM_ICEBERG_DECIMAL: {
          __int128 x = 0;
          memcpy(&x, v->v.dec, 16); /* little-endian host */
          __int128 r = ((x % w) + w) % w;
          x -= r;
          memcpy(out->v.dec, &x, 16);
          return TM_OK;
        }
        case TM_ICEBERG_STRING:
          out->v.s = tm_sv(v->v.s.ptr, utf8_prefix(v->v.s.ptr, v->v.s.len, tr->param));
          return TM_OK;
        case TM_ICEBERG_BINARY:
          out->v.s = tm_sv(v->v.s.ptr, v->v.s.len < (size_t)w ? v->v.s.len : (size_t)w);
          return TM_OK;
        default:
          break;
      }
      break;
    }
    case TM_ICEBERG_TR_YEAR:
    case TM_ICEBERG_TR_MONTH:
    case TM_ICEBERG_TR_DAY: {
      int64_t days = source->id == TM_ICEBERG_DATE ? v->v.i
                                                    : tm_floor_div(to_micros(source, v), US_PER_DAY);
      if (tr->kind == TM_ICEBERG_TR_DAY) {
        out->v.i = days;
        return TM_OK;
      }
      int64_t y;
      unsigned m, d;
      tm_civil_from_days(days, &y, &m, &d);
      out->v.i = tr->kind == TM_ICEBERG_TR_YEAR ? y - 1970 : (y - 1970) * 12 + (int64_t)m - 1;
      return TM_OK;
    }
    case TM_ICEBERG_TR_HOUR:
      out->v.i = tm_floor_div(to_micros(source, v), US_PER_HOUR);
      return TM_OK;
    case TM_ICEBERG_TR_VOID:
      break;
  }
  (void)scratch;
  return tm_error_set(err, TM_EUNSUPPORTED, "transform %s does not apply to type %s",
                      tr->text ? tr->text : "?", tm_iceberg_type_name(source->id));
}

/* ---- single-value serialisation ----------------------------------------- */

static int64_t le_signed(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  if (n < 8 && (p[n - 1] & 0x80)) v |= ~UINT64_C(0) << (8 * n);
  return (int64_t)v;
}

int tm_iceberg_value_from_bytes(const tm_iceberg_type *t, tm_strview bytes, tm_value *out,
                                tm_error *err) {
  tm_type tt;
  TM_TRY(tm_iceberg_type_to_tm(t, &tt, err));
  memset(out, 0, sizeof *out);
  out->type = tt.id;
  const uint8_t *p = (const uint8_t *)bytes.ptr;
  size_t n = bytes.len;
  switch (t->id) {
    case TM_ICEBERG_BOOLEAN:
      if (n != 1) break;
      out->v.b = p[0] != 0;
      return TM_OK;
    case TM_ICEBERG_INT:
    case TM_ICEBERG_DATE:
      if (n != 4) break;
      out->v.i = le_signed(p, 4);
      return TM_OK;
    case TM_ICEBERG_LONG:
    case TM_ICEBERG_TIME:
      if (n != 8 && n != 4) break;
      out->v.i = le_signed(p, n);
      return TM_OK;
    case TM_ICEBERG_TIMESTAMP:
    case TM_ICEBERG_TIMESTAMPTZ:
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      if (n == 8) {
        out->v.i = le_signed(p, 8);
        return TM_OK;
      }
      if (n == 4) { /* promoted from date */
        int64_t days = le_signed(p, 4);
        bool ns = t->id == TM_ICEBERG_TIMESTAMP_NS || t->id == TM_ICEBERG_TIMESTAMPTZ_NS;
        out->v.i = days * US_PER_DAY * (ns ? 1000 : 1);
        return TM_OK;
      }
      break;
    case TM_ICEBERG_FLOAT:
      if (n != 4) break;
      {
        float f;
        uint32_t bits = (uint32_t)le_signed(p, 4);
        memcpy(&f, &bits, 4);
        out->v.f = f;
      }
      return TM_OK;
    case TM_ICEBERG_DOUBLE:
      if (n == 8) {
        uint64_t bits = (uint64_t)le_signed(p, 8);
        memcpy(&out->v.f, &bits, 8);
        return TM_OK;
      }
      if (n == 4) { /* promoted from float */
        float f;
        uint32_t bits = (uint32_t)le_signed(p, 4);
        memcpy(&f, &bits, 4);
        out->v.f = f;
        return TM_OK;
      }
      break;
    case TM_ICEBERG_DECIMAL:
      if (n == 0) break;
      return tm_avro_decimal_to_le16(p, n, out->v.dec, err);
    case TM_ICEBERG_UUID:
      if (n != 16) break;
      out->v.s = bytes;
      return TM_OK;
    case TM_ICEBERG_FIXED:
      if (n != (size_t)t->length) break;
      out->v.s = bytes;
      return TM_OK;
    case TM_ICEBERG_STRING:
    case TM_ICEBERG_BINARY:
      out->v.s = bytes;
      return TM_OK;
    default:
      return tm_error_set(err, TM_EUNSUPPORTED, "no single-value serialisation for type %s",
                          tm_iceberg_type_name(t->id));
  }
  return TM_CORRUPT(err, "a %s value cannot be %zu bytes long", tm_iceberg_type_name(t->id), n);
}

int tm_iceberg_value_to_bytes(const tm_iceberg_type *t, const tm_value *v, tm_buf *out,
                              tm_error *err) {
  uint8_t b[16];
  switch (t->id) {
    case TM_ICEBERG_BOOLEAN:
      b[0] = v->v.b ? 1 : 0;
      return tm_buf_append(out, b, 1, err);
    case TM_ICEBERG_INT:
    case TM_ICEBERG_DATE:
      put_le64(b, (uint64_t)v->v.i);
      return tm_buf_append(out, b, 4, err);
    case TM_ICEBERG_LONG:
    case TM_ICEBERG_TIME:
    case TM_ICEBERG_TIMESTAMP:
    case TM_ICEBERG_TIMESTAMPTZ:
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      put_le64(b, (uint64_t)v->v.i);
      return tm_buf_append(out, b, 8, err);
    case TM_ICEBERG_FLOAT: {
      float f = (float)v->v.f;
      uint32_t bits;
      memcpy(&bits, &f, 4);
      put_le64(b, bits);
      return tm_buf_append(out, b, 4, err);
    }
    case TM_ICEBERG_DOUBLE: {
      uint64_t bits;
      memcpy(&bits, &v->v.f, 8);
      put_le64(b, bits);
      return tm_buf_append(out, b, 8, err);
    }
    case TM_ICEBERG_DECIMAL: {
      size_t n = decimal_min_be(v->v.dec, b);
      return tm_buf_append(out, b, n, err);
    }
    case TM_ICEBERG_STRING:
    case TM_ICEBERG_UUID:
    case TM_ICEBERG_FIXED:
    case TM_ICEBERG_BINARY:
      return tm_buf_append(out, v->v.s.ptr, v->v.s.len, err);
    default:
      break;
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "no single-value serialisation for type %s",
                      tm_iceberg_type_name(t->id));
}

/* ---- Avro partition values and partition keys ---------------------------- */

int tm_iceberg__avro_to_value(tm_arena *a, const tm_avro_value *v, const tm_type *want,
                              tm_value *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  out->type = want->id;
  if (tm_avro_is_null(v)) {
    out->is_null = true;
    return TM_OK;
  }
  tm_avro_kind k = tm_avro_value_kind(v);
  switch (want->id) {
    case TM_TYPE_BOOL:
      if (k != TM_AVRO_BOOLEAN) break;
      out->v.b = v->u.b;
      return TM_OK;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
    case TM_TYPE_DATE32:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP:
      if (k != TM_AVRO_INT && k != TM_AVRO_LONG) break;
      out->v.i = v->u.l;
      return TM_OK;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (k == TM_AVRO_FLOAT) {
        out->v.f = v->u.f;
      } else if (k == TM_AVRO_DOUBLE) {
        out->v.f = v->u.d;
      } else {
        break;
      }
      return TM_OK;
    case TM_TYPE_DECIMAL128:
      if (k != TM_AVRO_BYTES && k != TM_AVRO_FIXED) break;
      return tm_avro_decimal_to_le16(v->u.bytes.ptr, v->u.bytes.len, out->v.dec, err);
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY:
      if (k != TM_AVRO_STRING && k != TM_AVRO_BYTES && k != TM_AVRO_FIXED) break;
      if (want->id == TM_TYPE_FIXED_BINARY && want->uuid && k == TM_AVRO_STRING) {
        /* A uuid written as text: parse "8-4-4-4-12" hex into 16 bytes. */
        uint8_t *u = tm_arena_alloc(a, 16, err);
        if (!u) return err->code;
        size_t nib = 0;
        for (size_t i = 0; i < v->u.bytes.len && nib < 32; i++) {
          char ch = (char)v->u.bytes.ptr[i];
          int d = ch >= '0' && ch <= '9' ? ch - '0'
                  : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                  : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                           : -1;
          if (d < 0) continue;
          u[nib / 2] = (uint8_t)(u[nib / 2] | (nib % 2 ? d : d << 4));
          nib++;
        }
        if (nib != 32) return TM_CORRUPT(err, "uuid partition value is not 32 hex digits");
        out->v.s = tm_sv((const char *)u, 16);
        return TM_OK;
      }
      {
        char *copy = tm_arena_strndup(a, (const char *)v->u.bytes.ptr, v->u.bytes.len, err);
        if (!copy) return err->code;
        out->v.s = tm_sv(copy, v->u.bytes.len);
      }
      return TM_OK;
    default:
      break;
  }
  return TM_CORRUPT(err, "partition value of Avro kind %s does not fit the partition type",
                    tm_avro_kind_name(k));
}

int tm_iceberg__partition_key(const tm_iceberg_data_file *f, tm_buf *out, tm_error *err) {
  TM_TRY(tm_buf_printf(out, err, "%d|", (int)f->spec_id));
  for (size_t i = 0; i < f->n_partition; i++) {
    const tm_value *v = &f->partition[i];
    if (v->is_null) {
      TM_TRY(tm_buf_puts(out, "N|", err));
      continue;
    }
    switch (v->type) {
      case TM_TYPE_FLOAT32:
      case TM_TYPE_FLOAT64: {
        double d = isnan(v->v.f) ? NAN : v->v.f;
        uint64_t bits;
        memcpy(&bits, &d, 8);
        TM_TRY(tm_buf_printf(out, err, "F%llx|", (unsigned long long)bits));
        break;
      }
      case TM_TYPE_DECIMAL128:
        TM_TRY(tm_buf_putc(out, 'D', err));
        for (int k = 0; k < 16; k++) TM_TRY(tm_buf_printf(out, err, "%02x", v->v.dec[k]));
        TM_TRY(tm_buf_putc(out, '|', err));
        break;
      case TM_TYPE_UTF8:
      case TM_TYPE_BINARY:
      case TM_TYPE_FIXED_BINARY:
        TM_TRY(tm_buf_printf(out, err, "S%zu:", v->v.s.len));
        TM_TRY(tm_buf_append(out, v->v.s.ptr, v->v.s.len, err));
        TM_TRY(tm_buf_putc(out, '|', err));
        break;
      case TM_TYPE_BOOL:
        TM_TRY(tm_buf_puts(out, v->v.b ? "T|" : "f|", err));
        break;
      default:
        TM_TRY(tm_buf_printf(out, err, "I%lld|", (long long)v->v.i));
        break;
    }
  }
  return TM_OK;
}
