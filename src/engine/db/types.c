/*
 * types.c - the map between tm_type and DuckDB's types, and tm values as
 * DuckDB values for statement parameters (engine layer). The table is in
 * engine_int.h ("DuckDB: types").
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"

static duckdb_type duck_id(const tm_type *t) {
  switch (t->id) {
    case TM_TYPE_BOOL: return DUCKDB_TYPE_BOOLEAN;
    case TM_TYPE_INT8: return DUCKDB_TYPE_TINYINT;
    case TM_TYPE_INT16: return DUCKDB_TYPE_SMALLINT;
    case TM_TYPE_INT32: return DUCKDB_TYPE_INTEGER;
    case TM_TYPE_INT64: return DUCKDB_TYPE_BIGINT;
    case TM_TYPE_UINT8: return DUCKDB_TYPE_UTINYINT;
    case TM_TYPE_UINT16: return DUCKDB_TYPE_USMALLINT;
    case TM_TYPE_UINT32: return DUCKDB_TYPE_UINTEGER;
    case TM_TYPE_UINT64: return DUCKDB_TYPE_UBIGINT;
    case TM_TYPE_FLOAT32: return DUCKDB_TYPE_FLOAT;
    case TM_TYPE_FLOAT64: return DUCKDB_TYPE_DOUBLE;
    case TM_TYPE_DECIMAL128: return DUCKDB_TYPE_DECIMAL;
    case TM_TYPE_UTF8: return DUCKDB_TYPE_VARCHAR;
    case TM_TYPE_BINARY: return DUCKDB_TYPE_BLOB;
    case TM_TYPE_FIXED_BINARY:
      return t->uuid && t->width == 16 ? DUCKDB_TYPE_UUID : DUCKDB_TYPE_BLOB;
    case TM_TYPE_DATE32: return DUCKDB_TYPE_DATE;
    case TM_TYPE_TIME64: return t->unit == TM_UNIT_NANO ? DUCKDB_TYPE_TIME_NS : DUCKDB_TYPE_TIME;
    case TM_TYPE_TIMESTAMP:
      if (t->unit == TM_UNIT_NANO) return DUCKDB_TYPE_TIMESTAMP_NS;
      if (t->utc) return DUCKDB_TYPE_TIMESTAMP_TZ;
      return t->unit == TM_UNIT_SECOND  ? DUCKDB_TYPE_TIMESTAMP_S
             : t->unit == TM_UNIT_MILLI ? DUCKDB_TYPE_TIMESTAMP_MS
                                        : DUCKDB_TYPE_TIMESTAMP;
    case TM_TYPE_LIST: return DUCKDB_TYPE_LIST;
    case TM_TYPE_STRUCT: return DUCKDB_TYPE_STRUCT;
    case TM_TYPE_MAP: return DUCKDB_TYPE_MAP;
    default: return DUCKDB_TYPE_INVALID;
  }
}

duckdb_logical_type tm_duck_type(const tm_type *t) {
  if (t->id == TM_TYPE_DECIMAL128)
    return duckdb_create_decimal_type((uint8_t)t->precision, (uint8_t)t->scale);
  if (tm_type_is_nested(t) && t->nested) {
    const tm_ntype *nt = t->nested;
    if (t->id == TM_TYPE_LIST) {
      duckdb_logical_type e = tm_duck_type(&nt->child[0]);
      duckdb_logical_type l = duckdb_create_list_type(e);
      duckdb_destroy_logical_type(&e);
      return l;
    }
    if (t->id == TM_TYPE_MAP) {
      const tm_ntype *kv = nt->child[0].nested;
      duckdb_logical_type k = tm_duck_type(&kv->child[0]), v = tm_duck_type(&kv->child[1]);
      duckdb_logical_type m = duckdb_create_map_type(k, v);
      duckdb_destroy_logical_type(&k);
      duckdb_destroy_logical_type(&v);
      return m;
    }
    duckdb_logical_type *types = tm_calloc(nt->n, sizeof *types);
    if (!types) return duckdb_create_logical_type(DUCKDB_TYPE_INVALID);
    for (size_t i = 0; i < nt->n; i++) types[i] = tm_duck_type(&nt->child[i]);
    duckdb_logical_type st = duckdb_create_struct_type(types, (const char **)nt->name, nt->n);
    for (size_t i = 0; i < nt->n; i++) duckdb_destroy_logical_type(&types[i]);
    tm_free(types);
    return st;
  }
  return duckdb_create_logical_type(duck_id(t));
}

int tm_duck_type_sql_buf(tm_buf *b, const tm_type *t, tm_error *err) {
  if (!tm_type_is_nested(t) || !t->nested) {
    char ty[48];
    tm_duck_type_sql(t, ty, sizeof ty);
    return tm_buf_puts(b, ty, err);
  }
  const tm_ntype *nt = t->nested;
  switch (t->id) {
    case TM_TYPE_LIST:
      TM_TRY(tm_duck_type_sql_buf(b, &nt->child[0], err));
      return tm_buf_puts(b, "[]", err);
    case TM_TYPE_MAP: {
      const tm_ntype *kv = nt->child[0].nested;
      TM_TRY(tm_buf_puts(b, "MAP(", err));
      TM_TRY(tm_duck_type_sql_buf(b, &kv->child[0], err));
      TM_TRY(tm_buf_puts(b, ", ", err));
      TM_TRY(tm_duck_type_sql_buf(b, &kv->child[1], err));
      return tm_buf_putc(b, ')', err);
    }
    default:
      TM_TRY(tm_buf_puts(b, "STRUCT(", err));
      for (size_t i = 0; i < nt->n; i++) {
        if (i) TM_TRY(tm_buf_puts(b, ", ", err));
        TM_TRY(tm_engine__quote_ident(b, nt->name[i], err));
        TM_TRY(tm_buf_putc(b, ' ', err));
        TM_TRY(tm_duck_type_sql_buf(b, &nt->child[i], err));
      }
      return tm_buf_putc(b, ')', err);
  }
}

/* Equal but for the nullability of nested children. */
static bool same_shape(const tm_type *a, const tm_type *b) {
  if (!tm_type_is_nested(a) || !tm_type_is_nested(b)) return tm_type_equal(a, b);
  if (a->id != b->id || !a->nested || !b->nested || a->nested->n != b->nested->n) return false;
  for (size_t i = 0; i < a->nested->n; i++)
    if (strcmp(a->nested->name[i], b->nested->name[i]) != 0 ||
        !same_shape(&a->nested->child[i], &b->nested->child[i]))
      return false;
  return true;
}

/* A DuckDB LIST, STRUCT or MAP as a tm_type (children by tm_duck_type_to_tm,
 * with the hint's children where the hint has the same shape). */
static int nested_to_tm(duckdb_logical_type lt, duckdb_type id, const tm_type *hint, tm_type *out,
                        const char *what, int depth, tm_error *err);

static int child_to_tm(duckdb_logical_type lt, const tm_type *hint, tm_type *out,
                       const char *what, int depth, tm_error *err) {
  duckdb_type id = duckdb_get_type_id(lt);
  if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_STRUCT || id == DUCKDB_TYPE_MAP)
    return nested_to_tm(lt, id, hint, out, what, depth + 1, err);
  return tm_duck_type_to_tm(lt, hint && !tm_type_is_nested(hint) ? hint : NULL, out, what, err);
}

static int nested_to_tm(duckdb_logical_type lt, duckdb_type id, const tm_type *hint, tm_type *out,
                        const char *what, int depth, tm_error *err) {
  if (depth > TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "%s is nested deeper than %d levels",
                        what ? what : "a column", TM_NTYPE_MAX_DEPTH);
  const tm_ntype *h = hint && hint->nested && duck_id(hint) == id ? hint->nested : NULL;
  int rc = TM_OK;
  if (id == DUCKDB_TYPE_LIST) {
    duckdb_logical_type e = duckdb_list_type_child_type(lt);
    tm_type et;
    rc = child_to_tm(e, h ? &h->child[0] : NULL, &et, what, depth, err);
    duckdb_destroy_logical_type(&e);
    return rc == TM_OK ? tm_type_list(&et, true, out, err) : rc;
  }
  if (id == DUCKDB_TYPE_MAP) {
    const tm_ntype *hkv = h ? h->child[0].nested : NULL;
    duckdb_logical_type k = duckdb_map_type_key_type(lt), v = duckdb_map_type_value_type(lt);
    tm_type kt, vt;
    rc = child_to_tm(k, hkv ? &hkv->child[0] : NULL, &kt, what, depth, err);
    if (rc == TM_OK) rc = child_to_tm(v, hkv ? &hkv->child[1] : NULL, &vt, what, depth, err);
    duckdb_destroy_logical_type(&k);
    duckdb_destroy_logical_type(&v);
    return rc == TM_OK ? tm_type_map(&kt, &vt, true, out, err) : rc;
  }
  idx_t n = duckdb_struct_type_child_count(lt);
  if (n == 0 || n > TM_NTYPE_MAX_FIELDS)
    return tm_error_set(err, TM_EUNSUPPORTED, "%s is a struct of %llu fields",
                        what ? what : "a column", (unsigned long long)n);
  if (h && h->n != n) h = NULL;
  tm_type *types = tm_calloc(n, sizeof *types);
  char **names = tm_calloc(n, sizeof *names);
  bool *nl = tm_calloc(n, sizeof *nl);
  if (!types || !names || !nl) rc = tm_error_nomem(err);
  for (idx_t i = 0; i < n && rc == TM_OK; i++) {
    names[i] = duckdb_struct_type_child_name(lt, i);
    nl[i] = true;
    duckdb_logical_type c = duckdb_struct_type_child_type(lt, i);
    const tm_type *ch = h && names[i] && strcmp(h->name[i], names[i]) == 0 ? &h->child[i] : NULL;
    rc = names[i] ? child_to_tm(c, ch, &types[i], what, depth, err) : tm_error_nomem(err);
    duckdb_destroy_logical_type(&c);
  }
  if (rc == TM_OK) rc = tm_type_struct(n, (const char *const *)names, types, nl, out, err);
  for (idx_t i = 0; names && i < n; i++)
    if (names[i]) duckdb_free(names[i]);
  tm_free(types);
  tm_free(names);
  tm_free(nl);
  return rc;
}

void tm_duck_type_sql(const tm_type *t, char *buf, size_t cap) {
  const char *name = "VARCHAR";
  switch (duck_id(t)) {
    case DUCKDB_TYPE_BOOLEAN: name = "BOOLEAN"; break;
    case DUCKDB_TYPE_TINYINT: name = "TINYINT"; break;
    case DUCKDB_TYPE_SMALLINT: name = "SMALLINT"; break;
    case DUCKDB_TYPE_INTEGER: name = "INTEGER"; break;
    case DUCKDB_TYPE_BIGINT: name = "BIGINT"; break;
    case DUCKDB_TYPE_UTINYINT: name = "UTINYINT"; break;
    case DUCKDB_TYPE_USMALLINT: name = "USMALLINT"; break;
    case DUCKDB_TYPE_UINTEGER: name = "UINTEGER"; break;
    case DUCKDB_TYPE_UBIGINT: name = "UBIGINT"; break;
    case DUCKDB_TYPE_FLOAT: name = "FLOAT"; break;
    case DUCKDB_TYPE_DOUBLE: name = "DOUBLE"; break;
    case DUCKDB_TYPE_DECIMAL:
      snprintf(buf, cap, "DECIMAL(%d,%d)", (int)t->precision, (int)t->scale);
      return;
    case DUCKDB_TYPE_BLOB: name = "BLOB"; break;
    case DUCKDB_TYPE_UUID: name = "UUID"; break;
    case DUCKDB_TYPE_DATE: name = "DATE"; break;
    case DUCKDB_TYPE_TIME: name = "TIME"; break;
    case DUCKDB_TYPE_TIME_NS: name = "TIME_NS"; break;
    case DUCKDB_TYPE_TIMESTAMP_TZ: name = "TIMESTAMPTZ"; break;
    case DUCKDB_TYPE_TIMESTAMP_S: name = "TIMESTAMP_S"; break;
    case DUCKDB_TYPE_TIMESTAMP_MS: name = "TIMESTAMP_MS"; break;
    case DUCKDB_TYPE_TIMESTAMP: name = "TIMESTAMP"; break;
    case DUCKDB_TYPE_TIMESTAMP_NS: name = "TIMESTAMP_NS"; break;
    default: break;
  }
  snprintf(buf, cap, "%s", name);
}

int tm_duck_type_to_tm(duckdb_logical_type lt, const tm_type *hint, tm_type *out,
                       const char *what, tm_error *err) {
  duckdb_type id = duckdb_get_type_id(lt);
  if (id == DUCKDB_TYPE_LIST || id == DUCKDB_TYPE_STRUCT || id == DUCKDB_TYPE_MAP) {
    TM_TRY(nested_to_tm(lt, id, hint, out, what, 1, err));
    /* DuckDB keeps no nullability inside nested types: the hint itself when
     * its shape is DuckDB's. */
    if (hint && same_shape(hint, out)) *out = *hint;
    return TM_OK;
  }
  if (hint && duck_id(hint) == id &&
      (id != DUCKDB_TYPE_DECIMAL || (duckdb_decimal_width(lt) == hint->precision &&
                                     duckdb_decimal_scale(lt) == hint->scale))) {
    *out = *hint;
    return TM_OK;
  }
  tm_type t = {0};
  switch (id) {
    case DUCKDB_TYPE_BOOLEAN: t.id = TM_TYPE_BOOL; break;
    case DUCKDB_TYPE_TINYINT: t.id = TM_TYPE_INT8; break;
    case DUCKDB_TYPE_SMALLINT: t.id = TM_TYPE_INT16; break;
    case DUCKDB_TYPE_INTEGER: t.id = TM_TYPE_INT32; break;
    case DUCKDB_TYPE_BIGINT: t.id = TM_TYPE_INT64; break;
    case DUCKDB_TYPE_UTINYINT: t.id = TM_TYPE_UINT8; break;
    case DUCKDB_TYPE_USMALLINT: t.id = TM_TYPE_UINT16; break;
    case DUCKDB_TYPE_UINTEGER: t.id = TM_TYPE_UINT32; break;
    case DUCKDB_TYPE_UBIGINT: t.id = TM_TYPE_UINT64; break;
    case DUCKDB_TYPE_FLOAT: t.id = TM_TYPE_FLOAT32; break;
    case DUCKDB_TYPE_DOUBLE: t.id = TM_TYPE_FLOAT64; break;
    case DUCKDB_TYPE_DECIMAL:
      t = tm_type_decimal(duckdb_decimal_width(lt), duckdb_decimal_scale(lt));
      break;
    case DUCKDB_TYPE_VARCHAR: t.id = TM_TYPE_UTF8; break;
    case DUCKDB_TYPE_BLOB: t.id = TM_TYPE_BINARY; break;
    case DUCKDB_TYPE_UUID:
      t = tm_type_fixed(16);
      t.uuid = true;
      break;
    case DUCKDB_TYPE_DATE: t.id = TM_TYPE_DATE32; break;
    case DUCKDB_TYPE_TIME: t.id = TM_TYPE_TIME64; t.unit = TM_UNIT_MICRO; break;
    case DUCKDB_TYPE_TIME_NS: t.id = TM_TYPE_TIME64; t.unit = TM_UNIT_NANO; break;
    case DUCKDB_TYPE_TIMESTAMP_TZ: t = tm_type_timestamp(TM_UNIT_MICRO, true); break;
    case DUCKDB_TYPE_TIMESTAMP_S: t = tm_type_timestamp(TM_UNIT_SECOND, false); break;
    case DUCKDB_TYPE_TIMESTAMP_MS: t = tm_type_timestamp(TM_UNIT_MILLI, false); break;
    case DUCKDB_TYPE_TIMESTAMP: t = tm_type_timestamp(TM_UNIT_MICRO, false); break;
    case DUCKDB_TYPE_TIMESTAMP_NS: t = tm_type_timestamp(TM_UNIT_NANO, false); break;
    default: {
      char *name = duckdb_logical_type_get_alias(lt);
      int rc = tm_error_set(err, TM_EUNSUPPORTED,
                            "%s has DuckDB type %s (type id %d), which tidemark cannot store "
                            "(cast it, e.g. to VARCHAR or DOUBLE)",
                            what ? what : "a column", name ? name : "?", (int)id);
      if (name) duckdb_free(name);
      return rc;
    }
  }
  *out = t;
  return TM_OK;
}

/* The DuckDB hugeint of a 16-byte little-endian two's complement. */
static duckdb_hugeint hugeint_of(const uint8_t le[16]) {
  duckdb_hugeint h;
  uint64_t lo, hi;
  memcpy(&lo, le, 8);
  memcpy(&hi, le + 8, 8);
  h.lower = lo;
  h.upper = (int64_t)hi;
  return h;
}

duckdb_value tm_duck_value(const tm_type *t, const tm_value *v) {
  if (v->is_null) return duckdb_create_null_value();
  switch (t->id) {
    case TM_TYPE_BOOL: return duckdb_create_bool(v->v.b);
    case TM_TYPE_INT8: return duckdb_create_int8((int8_t)v->v.i);
    case TM_TYPE_INT16: return duckdb_create_int16((int16_t)v->v.i);
    case TM_TYPE_INT32: return duckdb_create_int32((int32_t)v->v.i);
    case TM_TYPE_INT64: return duckdb_create_int64(v->v.i);
    case TM_TYPE_UINT8: return duckdb_create_uint8((uint8_t)v->v.u);
    case TM_TYPE_UINT16: return duckdb_create_uint16((uint16_t)v->v.u);
    case TM_TYPE_UINT32: return duckdb_create_uint32((uint32_t)v->v.u);
    case TM_TYPE_UINT64: return duckdb_create_uint64(v->v.u);
    case TM_TYPE_FLOAT32: return duckdb_create_float((float)v->v.f);
    case TM_TYPE_FLOAT64: return duckdb_create_double(v->v.f);
    case TM_TYPE_DECIMAL128: {
      duckdb_decimal d;
      d.width = (uint8_t)t->precision;
      d.scale = (uint8_t)t->scale;
      d.value = hugeint_of(v->v.dec);
      return duckdb_create_decimal(d);
    }
    case TM_TYPE_UTF8: return duckdb_create_varchar_length(v->v.s.ptr, v->v.s.len);
    case TM_TYPE_BINARY: return duckdb_create_blob((const uint8_t *)v->v.s.ptr, v->v.s.len);
    case TM_TYPE_FIXED_BINARY:
      if (t->uuid && t->width == 16 && v->v.s.len == 16) {
        /* UUID bytes are big-endian; DuckDB's uhugeint holds them as a number. */
        const uint8_t *b = (const uint8_t *)v->v.s.ptr;
        duckdb_uhugeint u = {0, 0};
        for (int i = 0; i < 8; i++) u.upper = (u.upper << 8) | b[i];
        for (int i = 8; i < 16; i++) u.lower = (u.lower << 8) | b[i];
        return duckdb_create_uuid(u);
      }
      return duckdb_create_blob((const uint8_t *)v->v.s.ptr, v->v.s.len);
    case TM_TYPE_DATE32: return duckdb_create_date((duckdb_date){(int32_t)v->v.i});
    case TM_TYPE_TIME64:
      if (t->unit == TM_UNIT_NANO) return duckdb_create_time_ns((duckdb_time_ns){v->v.i});
      return duckdb_create_time((duckdb_time){v->v.i});
    case TM_TYPE_TIMESTAMP:
      if (t->unit == TM_UNIT_NANO) return duckdb_create_timestamp_ns((duckdb_timestamp_ns){v->v.i});
      if (t->utc) {
        int64_t per = t->unit == TM_UNIT_SECOND ? 1000000 : t->unit == TM_UNIT_MILLI ? 1000 : 1;
        int64_t us;
        if (__builtin_mul_overflow(v->v.i, per, &us)) us = v->v.i < 0 ? -INT64_MAX : INT64_MAX;
        return duckdb_create_timestamp_tz((duckdb_timestamp){us});
      }
      if (t->unit == TM_UNIT_SECOND) return duckdb_create_timestamp_s((duckdb_timestamp_s){v->v.i});
      if (t->unit == TM_UNIT_MILLI)
        return duckdb_create_timestamp_ms((duckdb_timestamp_ms){v->v.i});
      return duckdb_create_timestamp((duckdb_timestamp){v->v.i});
    default: return duckdb_create_null_value();
  }
}
