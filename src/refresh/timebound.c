/*
 * timebound.c - time columns, high-water marks and bounds (refresh layer).
 * See timebound.h.
 */
#include "refresh/timebound.h"

#include <string.h>

#define NSEC 1000000000

/* Units per second of an integer or timestamp time column. */
static int64_t per_second(const tm_time_column *tc) {
  switch (tc->format) {
    case TM_TIME_FORMAT_UNIX_SECONDS: return 1;
    case TM_TIME_FORMAT_UNIX_MILLIS: return 1000;
    case TM_TIME_FORMAT_UNIX_NANOS: return NSEC;
    default: break;
  }
  if (tc->type.id == TM_TYPE_TIMESTAMP) return tm_unit_per_second(tc->type.unit);
  return 1;
}

/*
 * The instant in the column's unit: floor when round_up is false, ceiling
 * when true. Saturates at the int64 range.
 */
static int64_t to_native(const tm_time_column *tc, tm_instant t, bool round_up) {
  int64_t per = tc->type.id == TM_TYPE_DATE32 ? 0 : per_second(tc);
  if (tc->type.id == TM_TYPE_DATE32) {
    int64_t days = tm_floor_div(t.sec, 86400);
    if (round_up && (t.sec - days * 86400 != 0 || t.nsec != 0)) days++;
    return days;
  }
  int64_t v;
  if (!tm_instant_to_units(t, per, round_up, &v)) return t.sec < 0 ? INT64_MIN : INT64_MAX;
  return v;
}

int tm_time_column_init(tm_time_column *out, const char *name, tm_type type,
                        tm_time_format configured, tm_error *err) {
  memset(out, 0, sizeof *out);
  out->name = name;
  out->type = type;
  tm_time_format want;
  const char *want_text;
  if (type.id == TM_TYPE_UTF8) {
    want = TM_TIME_FORMAT_ISO8601;
    want_text = "ISO8601";
  } else if (tm_type_is_integer(&type)) {
    want = TM_TIME_FORMAT_UNIX_SECONDS;
    want_text = "unix_seconds, unix_millis or unix_nanos";
  } else if (type.id == TM_TYPE_TIMESTAMP) {
    want = type.utc ? TM_TIME_FORMAT_TIMESTAMPTZ : TM_TIME_FORMAT_TIMESTAMP;
    want_text = type.utc ? "timestamptz" : "timestamp";
  } else if (type.id == TM_TYPE_DATE32) {
    want = TM_TIME_FORMAT_DATE;
    want_text = "date";
  } else {
    char tn[64];
    tm_type_name(&type, tn, sizeof tn);
    return tm_error_set(err, TM_EINVALID,
                        "time column '%s' has type %s, which cannot hold times (use a timestamp, "
                        "date, integer or ISO8601 string column)",
                        name, tn);
  }
  tm_time_format f = configured == TM_TIME_FORMAT_UNSET ? want : configured;
  bool fits = f == want;
  if (tm_type_is_integer(&type))
    fits = f == TM_TIME_FORMAT_UNIX_SECONDS || f == TM_TIME_FORMAT_UNIX_MILLIS ||
           f == TM_TIME_FORMAT_UNIX_NANOS;
  if (!fits) {
    char tn[64];
    tm_type_name(&type, tn, sizeof tn);
    return tm_error_set(err, TM_EINVALID,
                        "time_format '%s' does not fit time column '%s' of type %s (expected %s) "
                        "(SPEC A1)",
                        tm_time_format_name(f), name, tn, want_text);
  }
  out->format = f;
  out->day_granular = type.id == TM_TYPE_DATE32;
  return TM_OK;
}

bool tm_time_cell_instant(const tm_time_column *tc, const tm_colview *col, int64_t row,
                          tm_instant *out) {
  tm_value v;
  tm_colview_get(col, row, &v);
  return tm_value_instant(&tc->type, tc->format, &v, out);
}

tm_time_bound tm_time_bound_for_append(const tm_time_column *tc, tm_instant hwm,
                                       int64_t overlap_ms) {
  tm_time_bound b;
  memset(&b, 0, sizeof b);
  b.active = true;
  tm_instant t = overlap_ms > 0 ? tm_instant_minus_ms(hwm, overlap_ms) : hwm;
  if (tc->day_granular) {
    /* A5: inclusive against the start of the day. */
    t.sec = tm_floor_div(t.sec, 86400) * 86400;
    t.nsec = 0;
    b.inclusive = true;
  } else {
    /* A2 strict without an overlap; with one (A3) the boundary instant is
     * re-read too, and de-duplication removes what is already stored. */
    b.inclusive = overlap_ms > 0;
  }
  b.instant = t;
  if (tc->type.id != TM_TYPE_UTF8) {
    b.has_native = true;
    /* col > x  <=>  col > floor(x);  col >= x  <=>  col >= ceil(x)  (integer col). */
    b.native = to_native(tc, t, b.inclusive);
  }
  return b;
}

bool tm_time_bound_rereads(const tm_time_bound *b, int64_t overlap_ms) {
  return b->active && (b->inclusive || overlap_ms > 0);
}

static int add_native_term(const char *column, tm_type type, bool inclusive, int64_t native,
                           tm_predicate *pred, tm_error *err) {
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = type.id;
  switch (type.id) {
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
      if (native < 0) return TM_OK; /* every unsigned value is above it */
      v.v.u = (uint64_t)native;
      break;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32: {
      int64_t lo = type.id == TM_TYPE_INT8 ? INT8_MIN : type.id == TM_TYPE_INT16 ? INT16_MIN : INT32_MIN;
      int64_t hi = type.id == TM_TYPE_INT8 ? INT8_MAX : type.id == TM_TYPE_INT16 ? INT16_MAX : INT32_MAX;
      if (native < lo) return TM_OK;
      if (native > hi) native = hi; /* nothing can be above; keep the term true to its meaning */
      v.v.i = native;
      break;
    }
    default: v.v.i = native; break;
  }
  return tm_predicate_add(pred, column, type, inclusive ? TM_PRED_GE : TM_PRED_GT, &v, err);
}

int tm_time_bound_to_predicate(const tm_time_column *tc, const tm_time_bound *b,
                               tm_predicate *pred, tm_error *err) {
  if (!b->active || !b->has_native) return TM_OK;
  return add_native_term(tc->name, tc->type, b->inclusive, b->native, pred, err);
}

int tm_time_bound_to_partition_predicate(const tm_time_column *part, const tm_time_bound *b,
                                         tm_predicate *pred, tm_error *err) {
  if (!b->active || part->type.id == TM_TYPE_UTF8) return TM_OK;
  /* A partition value is the start of its period: floor the bound to the day
   * (A6) and compare inclusively, so the period holding the bound stays. */
  tm_instant t = b->instant;
  t.sec = tm_floor_div(t.sec, 86400) * 86400;
  t.nsec = 0;
  return add_native_term(part->name, part->type, true, to_native(part, t, false), pred, err);
}

int tm_time_bound_filter(const tm_time_column *tc, const tm_time_bound *b, const tm_batch *batch,
                         uint8_t *keep, int64_t *n_kept_out, int64_t *n_null_out, tm_error *err) {
  int idx = tm_schema_find(&batch->schema, tc->name);
  if (idx < 0) return tm_error_set(err, TM_ENOTFOUND, "time column '%s' is not in the data", tc->name);
  tm_colview col = tm_batch_col(batch, (size_t)idx);
  int64_t kept = 0, nulls = 0;
  for (int64_t i = 0; i < batch->n_rows; i++) {
    bool ok;
    if (!b->active) {
      ok = true;
    } else {
      tm_instant t;
      if (!tm_time_cell_instant(tc, &col, i, &t)) {
        nulls++;
        ok = false;
      } else {
        int c = tm_instant_cmp(t, b->instant);
        ok = b->inclusive ? c >= 0 : c > 0;
      }
    }
    if (ok) {
      tm_bit_set(keep, i);
      kept++;
    }
  }
  if (n_kept_out) *n_kept_out = kept;
  if (n_null_out) *n_null_out = nulls;
  return TM_OK;
}

bool tm_time_batch_max(const tm_time_column *tc, const tm_batch *batch, tm_instant *out) {
  int idx = tm_schema_find(&batch->schema, tc->name);
  if (idx < 0) return false;
  tm_colview col = tm_batch_col(batch, (size_t)idx);
  bool any = false;
  for (int64_t i = 0; i < batch->n_rows; i++) {
    tm_instant t;
    if (!tm_time_cell_instant(tc, &col, i, &t)) continue;
    if (!any || tm_instant_cmp(t, *out) > 0) *out = t;
    any = true;
  }
  return any;
}
