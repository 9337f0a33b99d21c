/*
 * render.c - DuckDB result values as the outputs show them (engine layer).
 *
 * One text per type, the same as format/arrow/render.h gives tm values:
 * integers (to 128 bits) and decimals exactly; floats in the shortest form
 * that reads back (NaN, inf, -inf); booleans true/false; dates YYYY-MM-DD;
 * times HH:MM:SS[.fraction] (TIME WITH TIME ZONE with its offset);
 * timestamps RFC 3339, `Z` for TIMESTAMPTZ (DuckDB's session zone is UTC),
 * `infinity` / `-infinity` for DuckDB's infinite values; UUIDs 8-4-4-4-12;
 * blobs printable with \xHH escapes; intervals ISO 8601 (P1Y2M3DT4H5M6.5S);
 * ENUM values by name; BIT as 0s and 1s; LIST, ARRAY, STRUCT, MAP and UNION
 * as JSON (a MAP as an object, as DuckDB's to_json writes it: a key that is
 * not text as a string of its text; issue 16).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/sql/sql_int.h"
#include "format/arrow/render.h"
#include "util/alloc.h"

#define MAX_DEPTH 64

static bool valid(duckdb_vector v, idx_t row) {
  uint64_t *m = duckdb_vector_get_validity(v);
  return !m || duckdb_validity_row_is_valid(m, row);
}

/* An unsigned 128-bit integer in decimal. */
static int put_u128(tm_buf *out, unsigned __int128 x, tm_error *err) {
  char buf[48];
  size_t n = sizeof buf;
  buf[--n] = '\0';
  do {
    buf[--n] = (char)('0' + (int)(x % 10));
    x /= 10;
  } while (x);
  return tm_buf_puts(out, buf + n, err);
}

static int put_i128(tm_buf *out, __int128 x, tm_error *err) {
  if (x < 0) {
    TM_TRY(tm_buf_putc(out, '-', err));
    return put_u128(out, (unsigned __int128)0 - (unsigned __int128)x, err);
  }
  return put_u128(out, (unsigned __int128)x, err);
}

static __int128 hugeint_value(const duckdb_hugeint *h) {
  return (__int128)(((unsigned __int128)(uint64_t)h->upper << 64) | h->lower);
}

static int put_tm(tm_buf *out, tm_type t, tm_value v, tm_error *err) {
  v.type = t.id;
  v.is_null = false;
  return tm_value_render(out, &t, &v, err);
}

static int put_interval(tm_buf *out, duckdb_interval iv, tm_error *err) {
  TM_TRY(tm_buf_putc(out, 'P', err));
  int32_t y = iv.months / 12, mo = iv.months % 12;
  if (y) TM_TRY(tm_buf_printf(out, err, "%dY", (int)y));
  if (mo) TM_TRY(tm_buf_printf(out, err, "%dM", (int)mo));
  if (iv.days) TM_TRY(tm_buf_printf(out, err, "%dD", (int)iv.days));
  int64_t us = iv.micros;
  if (us || (!iv.months && !iv.days)) {
    TM_TRY(tm_buf_putc(out, 'T', err));
    bool neg = us < 0;
    uint64_t a = neg ? (uint64_t)0 - (uint64_t)us : (uint64_t)us;
    uint64_t h = a / 3600000000u, m = a / 60000000u % 60, s = a / 1000000u % 60, f = a % 1000000u;
    const char *sg = neg ? "-" : "";
    if (h) TM_TRY(tm_buf_printf(out, err, "%s%lluH", sg, (unsigned long long)h));
    if (m) TM_TRY(tm_buf_printf(out, err, "%s%lluM", sg, (unsigned long long)m));
    if (s || f || (!h && !m)) {
      TM_TRY(tm_buf_printf(out, err, "%s%llu", sg, (unsigned long long)s));
      if (f) {
        char frac[8];
        snprintf(frac, sizeof frac, "%06llu", (unsigned long long)f);
        size_t n = 6;
        while (n > 0 && frac[n - 1] == '0') n--;
        frac[n] = '\0';
        TM_TRY(tm_buf_printf(out, err, ".%s", frac));
      }
      TM_TRY(tm_buf_putc(out, 'S', err));
    }
  }
  return TM_OK;
}

static int put_time_tz(tm_buf *out, uint64_t bits, tm_error *err) {
  duckdb_time_tz_struct t = duckdb_from_time_tz((duckdb_time_tz){bits});
  TM_TRY(tm_buf_printf(out, err, "%02d:%02d:%02d", (int)t.time.hour, (int)t.time.min, (int)t.time.sec));
  if (t.time.micros) {
    char frac[8];
    snprintf(frac, sizeof frac, "%06d", (int)t.time.micros);
    size_t n = 6;
    while (n > 0 && frac[n - 1] == '0') n--;
    frac[n] = '\0';
    TM_TRY(tm_buf_printf(out, err, ".%s", frac));
  }
  int off = t.offset;
  char sign = off < 0 ? '-' : '+';
  if (off < 0) off = -off;
  return tm_buf_printf(out, err, "%c%02d:%02d", sign, off / 3600, off / 60 % 60);
}

static int put_bits(tm_buf *out, duckdb_string_t *s, tm_error *err) {
  uint32_t len = duckdb_string_t_length(*s);
  const uint8_t *p = (const uint8_t *)duckdb_string_t_data(s);
  if (len == 0) return TM_OK;
  unsigned pad = p[0];
  for (uint32_t byte = 1; byte < len; byte++)
    for (int bit = 7; bit >= 0; bit--) {
      if (byte == 1 && (unsigned)(7 - bit) < pad) continue;
      TM_TRY(tm_buf_putc(out, (p[byte] >> bit) & 1 ? '1' : '0', err));
    }
  return TM_OK;
}

static int64_t int_at(duckdb_type id, const void *data, idx_t row) {
  switch (id) {
    case DUCKDB_TYPE_TINYINT: return ((const int8_t *)data)[row];
    case DUCKDB_TYPE_SMALLINT: return ((const int16_t *)data)[row];
    case DUCKDB_TYPE_INTEGER: return ((const int32_t *)data)[row];
    case DUCKDB_TYPE_UTINYINT: return ((const uint8_t *)data)[row];
    case DUCKDB_TYPE_USMALLINT: return ((const uint16_t *)data)[row];
    case DUCKDB_TYPE_UINTEGER: return ((const uint32_t *)data)[row];
    default: return ((const int64_t *)data)[row];
  }
}

static int render_json(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out, int depth,
                       tm_error *err);

/* A scalar (non-nested) value. */
static int render_scalar(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out,
                         tm_cell_kind *kind, tm_error *err) {
  duckdb_type id = duckdb_get_type_id(lt);
  const void *data = duckdb_vector_get_data(v);
  tm_value tv;
  memset(&tv, 0, sizeof tv);
  *kind = TM_CELL_TEXT;
  switch (id) {
    case DUCKDB_TYPE_BOOLEAN:
      *kind = TM_CELL_BOOL;
      return tm_buf_puts(out, ((const bool *)data)[row] ? "true" : "false", err);
    case DUCKDB_TYPE_TINYINT:
    case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT:
    case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER:
      *kind = TM_CELL_NUMBER;
      return tm_buf_printf(out, err, "%lld", (long long)int_at(id, data, row));
    case DUCKDB_TYPE_UBIGINT:
      *kind = TM_CELL_NUMBER;
      return tm_buf_printf(out, err, "%llu", (unsigned long long)((const uint64_t *)data)[row]);
    case DUCKDB_TYPE_HUGEINT:
      *kind = TM_CELL_NUMBER;
      return put_i128(out, hugeint_value(&((const duckdb_hugeint *)data)[row]), err);
    case DUCKDB_TYPE_UHUGEINT: {
      const duckdb_uhugeint *u = &((const duckdb_uhugeint *)data)[row];
      *kind = TM_CELL_NUMBER;
      return put_u128(out, ((unsigned __int128)u->upper << 64) | u->lower, err);
    }
    case DUCKDB_TYPE_FLOAT:
      *kind = TM_CELL_NUMBER;
      tv.v.f = ((const float *)data)[row];
      return put_tm(out, tm_type_of(TM_TYPE_FLOAT32), tv, err);
    case DUCKDB_TYPE_DOUBLE:
      *kind = TM_CELL_NUMBER;
      tv.v.f = ((const double *)data)[row];
      return put_tm(out, tm_type_of(TM_TYPE_FLOAT64), tv, err);
    case DUCKDB_TYPE_DECIMAL: {
      __int128 x;
      switch (duckdb_decimal_internal_type(lt)) {
        case DUCKDB_TYPE_SMALLINT: x = ((const int16_t *)data)[row]; break;
        case DUCKDB_TYPE_INTEGER: x = ((const int32_t *)data)[row]; break;
        case DUCKDB_TYPE_BIGINT: x = ((const int64_t *)data)[row]; break;
        default: x = hugeint_value(&((const duckdb_hugeint *)data)[row]);
      }
      uint8_t le[16];
      memcpy(le, &x, 16);
      char buf[64];
      size_t n = tm_decimal_format(le, duckdb_decimal_scale(lt), buf, sizeof buf);
      *kind = TM_CELL_NUMBER;
      return tm_buf_append(out, buf, n, err);
    }
    case DUCKDB_TYPE_VARCHAR: {
      duckdb_string_t *s = &((duckdb_string_t *)data)[row];
      return tm_buf_append(out, duckdb_string_t_data(s), duckdb_string_t_length(*s), err);
    }
    case DUCKDB_TYPE_BLOB: {
      duckdb_string_t *s = &((duckdb_string_t *)data)[row];
      tv.v.s = tm_sv(duckdb_string_t_data(s), duckdb_string_t_length(*s));
      return put_tm(out, tm_type_of(TM_TYPE_BINARY), tv, err);
    }
    case DUCKDB_TYPE_BIT: return put_bits(out, &((duckdb_string_t *)data)[row], err);
    case DUCKDB_TYPE_UUID: {
      const duckdb_hugeint *h = &((const duckdb_hugeint *)data)[row];
      uint64_t hi = (uint64_t)h->upper ^ (UINT64_C(1) << 63), lo = h->lower;
      uint8_t b[16];
      for (int k = 7; k >= 0; k--, hi >>= 8) b[k] = (uint8_t)hi;
      for (int k = 15; k >= 8; k--, lo >>= 8) b[k] = (uint8_t)lo;
      tm_type t = tm_type_fixed(16);
      t.uuid = true;
      tv.v.s = tm_sv((const char *)b, 16);
      return put_tm(out, t, tv, err);
    }
    case DUCKDB_TYPE_DATE: {
      int32_t d = ((const int32_t *)data)[row];
      if (d == INT32_MAX) return tm_buf_puts(out, "infinity", err);
      if (d == -INT32_MAX) return tm_buf_puts(out, "-infinity", err);
      tv.v.i = d;
      return put_tm(out, tm_type_of(TM_TYPE_DATE32), tv, err);
    }
    case DUCKDB_TYPE_TIME:
    case DUCKDB_TYPE_TIME_NS: {
      tm_type t = tm_type_of(TM_TYPE_TIME64);
      t.unit = id == DUCKDB_TYPE_TIME_NS ? TM_UNIT_NANO : TM_UNIT_MICRO;
      tv.v.i = ((const int64_t *)data)[row];
      return put_tm(out, t, tv, err);
    }
    case DUCKDB_TYPE_TIME_TZ: return put_time_tz(out, ((const uint64_t *)data)[row], err);
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_TZ:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS: {
      int64_t x = ((const int64_t *)data)[row];
      if (x == INT64_MAX) return tm_buf_puts(out, "infinity", err);
      if (x == -INT64_MAX) return tm_buf_puts(out, "-infinity", err);
      tm_time_unit u = id == DUCKDB_TYPE_TIMESTAMP_S    ? TM_UNIT_SECOND
                       : id == DUCKDB_TYPE_TIMESTAMP_MS ? TM_UNIT_MILLI
                       : id == DUCKDB_TYPE_TIMESTAMP_NS ? TM_UNIT_NANO
                                                        : TM_UNIT_MICRO;
      tv.v.i = x;
      return put_tm(out, tm_type_timestamp(u, id == DUCKDB_TYPE_TIMESTAMP_TZ), tv, err);
    }
    case DUCKDB_TYPE_INTERVAL: return put_interval(out, ((const duckdb_interval *)data)[row], err);
    case DUCKDB_TYPE_ENUM: {
      idx_t ix;
      switch (duckdb_enum_internal_type(lt)) {
        case DUCKDB_TYPE_UTINYINT: ix = ((const uint8_t *)data)[row]; break;
        case DUCKDB_TYPE_USMALLINT: ix = ((const uint16_t *)data)[row]; break;
        default: ix = ((const uint32_t *)data)[row];
      }
      char *name = duckdb_enum_dictionary_value(lt, ix);
      int rc = name ? tm_buf_puts(out, name, err) : tm_error_set(err, TM_ERROR, "bad ENUM value");
      if (name) duckdb_free(name);
      return rc;
    }
    default: {
      char *alias = duckdb_logical_type_get_alias(lt);
      int rc = tm_error_set(err, TM_EUNSUPPORTED,
                            "results of DuckDB type id %d%s%s cannot be shown; cast the column "
                            "to VARCHAR",
                            (int)id, alias ? " " : "", alias ? alias : "");
      if (alias) duckdb_free(alias);
      return rc;
    }
  }
}

/* A scalar inside JSON: numbers bare (NaN and infinities as strings), the rest quoted. */
static int json_scalar(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out,
                       tm_error *err) {
  tm_buf tmp = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_cell_kind kind;
  int rc = render_scalar(v, lt, row, &tmp, &kind, err);
  if (rc == TM_OK) {
    const char *t = tm_buf_cstr(&tmp);
    bool special = kind == TM_CELL_NUMBER && (!strcmp(t, "NaN") || !strcmp(t, "inf") || !strcmp(t, "-inf"));
    if ((kind == TM_CELL_NUMBER && !special) || kind == TM_CELL_BOOL) rc = tm_buf_append(out, t, tmp.len, err);
    else rc = tm_json_string(out, t, tmp.len, err);
  }
  tm_buf_dispose(&tmp);
  return rc;
}

static int json_list(duckdb_vector child, duckdb_logical_type ct, uint64_t off, uint64_t len,
                     tm_buf *out, int depth, tm_error *err) {
  TM_TRY(tm_buf_putc(out, '[', err));
  for (uint64_t i = 0; i < len; i++) {
    if (i) TM_TRY(tm_buf_putc(out, ',', err));
    TM_TRY(render_json(child, ct, off + i, out, depth + 1, err));
  }
  return tm_buf_putc(out, ']', err);
}

static int render_json(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out, int depth,
                       tm_error *err) {
  if (depth > MAX_DEPTH) return tm_error_set(err, TM_ETOOLARGE, "a value nested too deeply to show");
  if (!valid(v, row)) return tm_buf_puts(out, "null", err);
  duckdb_type id = duckdb_get_type_id(lt);
  int rc = TM_OK;
  switch (id) {
    case DUCKDB_TYPE_LIST: {
      const duckdb_list_entry *e = &((const duckdb_list_entry *)duckdb_vector_get_data(v))[row];
      duckdb_logical_type ct = duckdb_list_type_child_type(lt);
      rc = json_list(duckdb_list_vector_get_child(v), ct, e->offset, e->length, out, depth, err);
      duckdb_destroy_logical_type(&ct);
      return rc;
    }
    case DUCKDB_TYPE_ARRAY: {
      duckdb_logical_type ct = duckdb_array_type_child_type(lt);
      idx_t size = duckdb_array_type_array_size(lt);
      rc = json_list(duckdb_array_vector_get_child(v), ct, (uint64_t)row * size, size, out, depth, err);
      duckdb_destroy_logical_type(&ct);
      return rc;
    }
    case DUCKDB_TYPE_STRUCT: {
      idx_t n = duckdb_struct_type_child_count(lt);
      rc = tm_buf_putc(out, '{', err);
      for (idx_t i = 0; rc == TM_OK && i < n; i++) {
        char *name = duckdb_struct_type_child_name(lt, i);
        duckdb_logical_type ct = duckdb_struct_type_child_type(lt, i);
        if (i) rc = tm_buf_putc(out, ',', err);
        if (rc == TM_OK) rc = tm_json_string(out, name ? name : "", name ? strlen(name) : 0, err);
        if (rc == TM_OK) rc = tm_buf_putc(out, ':', err);
        if (rc == TM_OK) rc = render_json(duckdb_struct_vector_get_child(v, i), ct, row, out, depth + 1, err);
        duckdb_destroy_logical_type(&ct);
        if (name) duckdb_free(name);
      }
      return rc == TM_OK ? tm_buf_putc(out, '}', err) : rc;
    }
    case DUCKDB_TYPE_MAP: {
      const duckdb_list_entry *e = &((const duckdb_list_entry *)duckdb_vector_get_data(v))[row];
      duckdb_vector entries = duckdb_list_vector_get_child(v);
      duckdb_vector keys = duckdb_struct_vector_get_child(entries, 0);
      duckdb_vector vals = duckdb_struct_vector_get_child(entries, 1);
      duckdb_logical_type kt = duckdb_map_type_key_type(lt), vt = duckdb_map_type_value_type(lt);
      /* An object, as DuckDB's to_json writes a MAP: a key that is not text
       * as a string of its text (issue 16: the form of Parquet maps too). */
      tm_buf key = TM_BUF_INIT(TM_BUF_UNLIMITED);
      rc = tm_buf_putc(out, '{', err);
      for (uint64_t i = 0; rc == TM_OK && i < e->length; i++) {
        idx_t at = e->offset + i;
        if (i) rc = tm_buf_putc(out, ',', err);
        tm_buf_clear(&key);
        if (rc == TM_OK) rc = render_json(keys, kt, at, &key, depth + 1, err);
        if (rc == TM_OK)
          rc = key.len && key.ptr[0] == '"' ? tm_buf_append(out, key.ptr, key.len, err)
                                            : tm_json_string(out, key.ptr, key.len, err);
        if (rc == TM_OK) rc = tm_buf_putc(out, ':', err);
        if (rc == TM_OK) rc = render_json(vals, vt, at, out, depth + 1, err);
      }
      tm_buf_dispose(&key);
      if (rc == TM_OK) rc = tm_buf_putc(out, '}', err);
      duckdb_destroy_logical_type(&kt);
      duckdb_destroy_logical_type(&vt);
      return rc;
    }
    case DUCKDB_TYPE_UNION: {
      /* A struct vector: the tag (child 0), then one child per member. */
      uint8_t tag = ((const uint8_t *)duckdb_vector_get_data(duckdb_struct_vector_get_child(v, 0)))[row];
      if (tag >= duckdb_union_type_member_count(lt)) return tm_error_set(err, TM_ERROR, "bad UNION tag");
      duckdb_logical_type mt = duckdb_union_type_member_type(lt, tag);
      rc = render_json(duckdb_struct_vector_get_child(v, (idx_t)tag + 1), mt, row, out, depth + 1, err);
      duckdb_destroy_logical_type(&mt);
      return rc;
    }
    default: return json_scalar(v, lt, row, out, err);
  }
}

int tm_sql__render(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_buf *out,
                   tm_cell_kind *kind, tm_error *err) {
  if (!valid(v, row)) {
    *kind = TM_CELL_NULL;
    return TM_OK;
  }
  switch (duckdb_get_type_id(lt)) {
    case DUCKDB_TYPE_SQLNULL: *kind = TM_CELL_NULL; return TM_OK;
    case DUCKDB_TYPE_LIST:
    case DUCKDB_TYPE_ARRAY:
    case DUCKDB_TYPE_STRUCT:
    case DUCKDB_TYPE_MAP:
    case DUCKDB_TYPE_UNION:
      *kind = TM_CELL_JSON;
      return render_json(v, lt, row, out, 0, err);
    default: return render_scalar(v, lt, row, out, kind, err);
  }
}
