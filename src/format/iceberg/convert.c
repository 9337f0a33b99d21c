/*
 * convert.c - converting values and columns between columnar types the way
 * Iceberg schema evolution allows (format layer, private to the Iceberg
 * module): int -> long, float -> double, wider decimals of one scale,
 * timestamp and time units, date -> timestamp, binary <-> string.
 */
#include <string.h>

#include "format/iceberg/iceberg_int.h"
#include "util/time.h"

/* ---- value conversion ------------------------------------------------------ */

static int64_t unit_scale(tm_time_unit u) { return tm_unit_per_second(u); }

/* Converts v (of type from) to type to. False when the types do not convert. */
bool tm_iceberg__convert_value(const tm_value *in, const tm_type *from, const tm_type *to,
                          tm_value *out) {
  *out = *in;
  out->type = to->id;
  if (in->is_null) return true;
  tm_type_id f = from->id, t = to->id;
  bool f_int = tm_type_is_signed_int(from) || f == TM_TYPE_DATE32;
  bool f_uint = tm_type_is_integer(from) && !tm_type_is_signed_int(from);
  switch (t) {
    case TM_TYPE_BOOL:
      return f == TM_TYPE_BOOL;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: {
      int64_t x;
      if (f_int && f != TM_TYPE_DATE32) {
        x = in->v.i;
      } else if (f_uint && in->v.u <= (uint64_t)INT64_MAX) {
        x = (int64_t)in->v.u;
      } else {
        return false;
      }
      int64_t lo = t == TM_TYPE_INT8 ? INT8_MIN : t == TM_TYPE_INT16 ? INT16_MIN
                   : t == TM_TYPE_INT32 ? INT32_MIN : INT64_MIN;
      int64_t hi = t == TM_TYPE_INT8 ? INT8_MAX : t == TM_TYPE_INT16 ? INT16_MAX
                   : t == TM_TYPE_INT32 ? INT32_MAX : INT64_MAX;
      if (x < lo || x > hi) return false;
      out->v.i = x;
      return true;
    }
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (f == TM_TYPE_FLOAT32 || f == TM_TYPE_FLOAT64) return true;
      return false;
    case TM_TYPE_DECIMAL128:
      return f == TM_TYPE_DECIMAL128 && from->scale == to->scale;
    case TM_TYPE_DATE32:
      return f == TM_TYPE_DATE32;
    case TM_TYPE_TIME64:
      if (f != TM_TYPE_TIME64) return false;
      if (from->unit != to->unit) {
        int64_t a = unit_scale(from->unit), b = unit_scale(to->unit);
        out->v.i = a < b ? in->v.i * (b / a) : tm_floor_div(in->v.i, a / b);
      }
      return true;
    case TM_TYPE_TIMESTAMP:
      if (f == TM_TYPE_DATE32) {
        out->v.i = in->v.i * 86400 * unit_scale(to->unit);
        return true;
      }
      if (f != TM_TYPE_TIMESTAMP) return false;
      if (from->unit != to->unit) {
        int64_t a = unit_scale(from->unit), b = unit_scale(to->unit);
        out->v.i = a < b ? in->v.i * (b / a) : tm_floor_div(in->v.i, a / b);
      }
      return true;
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
      return f == TM_TYPE_UTF8 || f == TM_TYPE_BINARY || f == TM_TYPE_FIXED_BINARY;
    case TM_TYPE_FIXED_BINARY:
      return (f == TM_TYPE_FIXED_BINARY || f == TM_TYPE_BINARY) &&
             in->v.s.len == (size_t)to->width;
    default:
      return false;
  }
}

/* A column of n rows converted from src (type from) to type to. */
int tm_iceberg__convert_column(const tm_colview *src, const tm_type *to, int64_t n,
                          struct ArrowArray *out, const char *col, tm_error *err) {
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, *to, 0);
  int rc = tm_colbuilder_reserve(&cb, n, 0, err);
  for (int64_t i = 0; rc == TM_OK && i < n; i++) {
    tm_value v, c;
    tm_colview_get(src, i, &v);
    if (!tm_iceberg__convert_value(&v, &src->type, to, &c)) {
      char a[64], b[64];
      tm_type_name(&src->type, a, sizeof a);
      tm_type_name(to, b, sizeof b);
      rc = tm_error_set(err, TM_EUNSUPPORTED, "column %s: %s value does not convert to %s", col,
                        a, b);
      break;
    }
    rc = tm_colbuilder_append_value(&cb, &c, err);
  }
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  return rc;
}

