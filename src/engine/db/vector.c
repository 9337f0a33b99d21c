/*
 * vector.c - rows between tm_batch columns (Arrow layout) and DuckDB vectors
 * of the mapped types (engine layer). See engine_int.h ("DuckDB: rows").
 *
 * Layouts, as DuckDB's C API documents them: a validity mask of uint64
 * words, bit i of word i/64 set when row i is valid (the Arrow bitmap's bit
 * order); fixed-width values in the vector's data array; VARCHAR and BLOB as
 * duckdb_string_t (assigned, so DuckDB copies the bytes); DECIMAL in the
 * smallest integer of its width (int16 to 4 digits, int32 to 9, int64 to 18,
 * hugeint beyond); UUID as a hugeint of its big-endian bytes with the top bit
 * flipped (so that signed order is byte order); TIMESTAMPTZ in microseconds.
 *
 * VARCHAR must be valid UTF-8 (DuckDB's contract): text that is not is
 * refused with the column and row, never stored.
 */
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"

#define UUID_FLIP (UINT64_C(1) << 63)

static int decimal_bytes(int32_t precision) {
  return precision <= 4 ? 2 : precision <= 9 ? 4 : precision <= 18 ? 8 : 16;
}

static int64_t dec_low64(const uint8_t le[16]) {
  int64_t v;
  memcpy(&v, le, 8);
  return v;
}

/* Sign-extends v into 16 little-endian bytes. */
static void dec_from64(int64_t v, uint8_t le[16]) {
  memcpy(le, &v, 8);
  memset(le + 8, v < 0 ? 0xFF : 0, 8);
}

static int64_t ts_factor(const tm_type *t) {
  /* Only zoned s/ms timestamps change unit on their way into DuckDB (TIMESTAMPTZ). */
  if (t->id != TM_TYPE_TIMESTAMP || !t->utc || t->unit == TM_UNIT_NANO) return 1;
  return t->unit == TM_UNIT_SECOND ? 1000000 : t->unit == TM_UNIT_MILLI ? 1000 : 1;
}

int tm_duck_vector_write(duckdb_vector v, idx_t at, const tm_colview *c, int64_t from, idx_t n,
                         tm_error *err) {
  const tm_type *t = &c->type;
  void *dst = duckdb_vector_get_data(v);
  bool nulls = c->validity && c->null_count != 0;
  uint64_t *mask = duckdb_vector_get_validity(v); /* NULL: every row valid so far */
  if (nulls && !mask) {
    duckdb_vector_ensure_validity_writable(v);
    mask = duckdb_vector_get_validity(v);
  }
  if (mask) {
    /* Whole bytes at once when both sides are byte-aligned; the tail row by row. */
    idx_t done = 0;
    if (nulls && (from & 7) == 0 && (at & 7) == 0) {
      done = n & ~(idx_t)7;
      memcpy((uint8_t *)mask + at / 8, c->validity + from / 8, done / 8);
    }
    for (idx_t i = done; i < n; i++)
      duckdb_validity_set_row_validity(mask, at + i,
                                       !nulls || tm_bit_get(c->validity, from + (int64_t)i));
  }
  size_t w = tm_type_byte_width(t);
  switch (t->id) {
    case TM_TYPE_STRUCT:
      for (size_t k = 0; k < t->nested->n; k++) {
        tm_colview ch = tm_colview_child(c, k);
        TM_TRY(tm_duck_vector_write(duckdb_struct_vector_get_child(v, k), at, &ch, from, n, err));
      }
      return TM_OK;
    case TM_TYPE_LIST:
    case TM_TYPE_MAP: {
      const int32_t *off = (const int32_t *)c->values;
      tm_colview ch = tm_colview_child(c, 0);
      int64_t first = off[from], last = off[from + (int64_t)n];
      if (first < 0 || last < first || last > ch.length)
        return tm_error_set(err, TM_ECORRUPT, "list offsets out of bounds");
      idx_t size = duckdb_list_vector_get_size(v);
      idx_t total = (idx_t)(last - first);
      if (duckdb_list_vector_reserve(v, size + total) != DuckDBSuccess)
        return tm_error_set(err, TM_ENOMEM, "DuckDB could not hold %llu list elements",
                            (unsigned long long)(size + total));
      duckdb_vector child = duckdb_list_vector_get_child(v);
      if (total) TM_TRY(tm_duck_vector_write(child, size, &ch, first, total, err));
      if (duckdb_list_vector_set_size(v, size + total) != DuckDBSuccess)
        return tm_error_set(err, TM_ERROR, "DuckDB refused a list size");
      duckdb_list_entry *e = (duckdb_list_entry *)dst + at;
      for (idx_t i = 0; i < n; i++) {
        int64_t a = off[from + (int64_t)i], b = off[from + (int64_t)i + 1];
        if (b < a) return tm_error_set(err, TM_ECORRUPT, "list offsets decrease");
        e[i].offset = size + (uint64_t)(a - first);
        e[i].length = (uint64_t)(b - a);
      }
      return TM_OK;
    }
    case TM_TYPE_BOOL: {
      bool *out = (bool *)dst + at;
      for (idx_t i = 0; i < n; i++) out[i] = tm_bit_get(c->values, from + (int64_t)i);
      return TM_OK;
    }
    case TM_TYPE_TIMESTAMP: {
      int64_t per = ts_factor(t);
      const int64_t *in = (const int64_t *)c->values + from;
      int64_t *out = (int64_t *)dst + at;
      if (per == 1) {
        memcpy(out, in, n * sizeof *in);
        return TM_OK;
      }
      for (idx_t i = 0; i < n; i++) {
        if (__builtin_mul_overflow(in[i], per, &out[i]) && !tm_colview_is_null(c, from + (int64_t)i))
          return tm_error_set(err, TM_EINVALID,
                              "timestamp %lld %s is outside DuckDB's range (years 290309 BC - 294247)",
                              (long long)in[i], tm_unit_name(t->unit));
      }
      return TM_OK;
    }
    case TM_TYPE_DECIMAL128: {
      const uint8_t *in = (const uint8_t *)c->values + (size_t)from * 16;
      int nb = decimal_bytes(t->precision);
      for (idx_t i = 0; i < n; i++) {
        const uint8_t *d = in + i * 16;
        idx_t k = at + i;
        switch (nb) {
          case 2: ((int16_t *)dst)[k] = (int16_t)dec_low64(d); break;
          case 4: ((int32_t *)dst)[k] = (int32_t)dec_low64(d); break;
          case 8: ((int64_t *)dst)[k] = dec_low64(d); break;
          default: {
            duckdb_hugeint *h = &((duckdb_hugeint *)dst)[k];
            uint64_t hi;
            memcpy(&h->lower, d, 8);
            memcpy(&hi, d + 8, 8);
            h->upper = (int64_t)hi;
          }
        }
      }
      return TM_OK;
    }
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: {
      bool uuid = t->id == TM_TYPE_FIXED_BINARY && t->uuid && t->width == 16;
      for (idx_t i = 0; i < n; i++) {
        int64_t row = from + (int64_t)i;
        if (tm_colview_is_null(c, row)) continue;
        tm_strview s = tm_colview_bytes(c, row);
        if (uuid) {
          const uint8_t *b = (const uint8_t *)s.ptr;
          uint64_t hi = 0, lo = 0;
          for (int k = 0; k < 8; k++) hi = (hi << 8) | b[k];
          for (int k = 8; k < 16; k++) lo = (lo << 8) | b[k];
          duckdb_hugeint *h = &((duckdb_hugeint *)dst)[at + i];
          h->lower = lo;
          h->upper = (int64_t)(hi ^ UUID_FLIP);
          continue;
        }
        size_t bad;
        if (t->id == TM_TYPE_UTF8 && !tm_utf8_valid(s.ptr, s.len, &bad))
          return tm_error_set(err, TM_ECORRUPT,
                              "a text value is not valid UTF-8 (byte %zu of %zu)", bad, s.len);
        duckdb_vector_assign_string_element_len(v, at + i, s.ptr, s.len);
      }
      return TM_OK;
    }
    default:
      if (w == 0) return tm_error_set(err, TM_EUNSUPPORTED, "a column type DuckDB cannot take");
      memcpy((char *)dst + (size_t)at * w, (const char *)c->values + (size_t)from * w, n * w);
      return TM_OK;
  }
}

static int read_rows(duckdb_vector v, idx_t base, idx_t n, tm_colbuilder *cb, int depth,
                     tm_error *err);

/* Rows [base, base + n) of a DuckDB LIST, MAP or STRUCT vector. */
static int read_nested(duckdb_vector v, idx_t base, idx_t n, tm_colbuilder *cb, int depth,
                       tm_error *err) {
  if (depth > TM_NTYPE_MAX_DEPTH) return tm_error_set(err, TM_EUNSUPPORTED, "nested too deep");
  uint64_t *mask = duckdb_vector_get_validity(v);
  if (cb->type.id == TM_TYPE_STRUCT) {
    /* Row by row: a slot closes once each field holds its value. */
    for (idx_t i = 0; i < n; i++) {
      for (size_t k = 0; k < cb->n_children; k++)
        TM_TRY(read_rows(duckdb_struct_vector_get_child(v, k), base + i, 1,
                         tm_colbuilder_child(cb, k), depth + 1, err));
      bool valid = !mask || duckdb_validity_row_is_valid(mask, base + i);
      TM_TRY(valid ? tm_colbuilder_append_nested(cb, err)
                   : tm_colbuilder_append_nested_null(cb, err));
    }
    return TM_OK;
  }
  const duckdb_list_entry *e = (const duckdb_list_entry *)duckdb_vector_get_data(v);
  duckdb_vector child = duckdb_list_vector_get_child(v);
  idx_t size = duckdb_list_vector_get_size(v);
  for (idx_t i = 0; i < n; i++) {
    if (mask && !duckdb_validity_row_is_valid(mask, base + i)) {
      TM_TRY(tm_colbuilder_append_null(cb, err));
      continue;
    }
    const duckdb_list_entry *x = &e[base + i];
    if (x->offset > size || x->length > size - x->offset)
      return tm_error_set(err, TM_ECORRUPT, "a DuckDB list entry passes its child vector");
    if (x->length)
      TM_TRY(read_rows(child, x->offset, x->length, tm_colbuilder_child(cb, 0), depth + 1, err));
    TM_TRY(tm_colbuilder_append_nested(cb, err));
  }
  return TM_OK;
}

int tm_duck_vector_read(duckdb_vector v, idx_t n, tm_colbuilder *cb, tm_error *err) {
  return read_rows(v, 0, n, cb, 0, err);
}

static int read_rows(duckdb_vector v, idx_t base, idx_t n, tm_colbuilder *cb, int depth,
                     tm_error *err) {
  const tm_type *t = &cb->type;
  if (tm_type_is_nested(t)) return read_nested(v, base, n, cb, depth, err);
  const void *src = duckdb_vector_get_data(v);
  uint64_t *mask = duckdb_vector_get_validity(v);
  TM_TRY(tm_colbuilder_reserve(cb, (int64_t)n, 0, err));
  int64_t per = ts_factor(t);
  for (idx_t j = 0; j < n; j++) {
    idx_t i = base + j;
    if (mask && !duckdb_validity_row_is_valid(mask, i)) {
      TM_TRY(tm_colbuilder_append_null(cb, err));
      continue;
    }
    switch (t->id) {
      case TM_TYPE_BOOL: TM_TRY(tm_colbuilder_append_bool(cb, ((const bool *)src)[i], err)); break;
      case TM_TYPE_INT8: TM_TRY(tm_colbuilder_append_int(cb, ((const int8_t *)src)[i], err)); break;
      case TM_TYPE_INT16: TM_TRY(tm_colbuilder_append_int(cb, ((const int16_t *)src)[i], err)); break;
      case TM_TYPE_INT32:
      case TM_TYPE_DATE32: TM_TRY(tm_colbuilder_append_int(cb, ((const int32_t *)src)[i], err)); break;
      case TM_TYPE_INT64:
      case TM_TYPE_TIME64: TM_TRY(tm_colbuilder_append_int(cb, ((const int64_t *)src)[i], err)); break;
      case TM_TYPE_TIMESTAMP: {
        int64_t x = ((const int64_t *)src)[i];
        /* Exact: a zoned s/ms value went in multiplied by per. */
        TM_TRY(tm_colbuilder_append_int(cb, per == 1 ? x : tm_floor_div(x, per), err));
        break;
      }
      case TM_TYPE_UINT8: TM_TRY(tm_colbuilder_append_uint(cb, ((const uint8_t *)src)[i], err)); break;
      case TM_TYPE_UINT16: TM_TRY(tm_colbuilder_append_uint(cb, ((const uint16_t *)src)[i], err)); break;
      case TM_TYPE_UINT32: TM_TRY(tm_colbuilder_append_uint(cb, ((const uint32_t *)src)[i], err)); break;
      case TM_TYPE_UINT64: TM_TRY(tm_colbuilder_append_uint(cb, ((const uint64_t *)src)[i], err)); break;
      case TM_TYPE_FLOAT32: TM_TRY(tm_colbuilder_append_double(cb, ((const float *)src)[i], err)); break;
      case TM_TYPE_FLOAT64: TM_TRY(tm_colbuilder_append_double(cb, ((const double *)src)[i], err)); break;
      case TM_TYPE_DECIMAL128: {
        uint8_t le[16];
        switch (decimal_bytes(t->precision)) {
          case 2: dec_from64(((const int16_t *)src)[i], le); break;
          case 4: dec_from64(((const int32_t *)src)[i], le); break;
          case 8: dec_from64(((const int64_t *)src)[i], le); break;
          default: {
            const duckdb_hugeint *h = &((const duckdb_hugeint *)src)[i];
            uint64_t hi = (uint64_t)h->upper;
            memcpy(le, &h->lower, 8);
            memcpy(le + 8, &hi, 8);
          }
        }
        TM_TRY(tm_colbuilder_append_decimal(cb, le, err));
        break;
      }
      case TM_TYPE_UTF8:
      case TM_TYPE_BINARY:
      case TM_TYPE_FIXED_BINARY: {
        if (t->id == TM_TYPE_FIXED_BINARY && t->uuid && t->width == 16) {
          const duckdb_hugeint *h = &((const duckdb_hugeint *)src)[i];
          uint64_t hi = (uint64_t)h->upper ^ UUID_FLIP, lo = h->lower;
          uint8_t b[16];
          for (int k = 7; k >= 0; k--, hi >>= 8) b[k] = (uint8_t)hi;
          for (int k = 15; k >= 8; k--, lo >>= 8) b[k] = (uint8_t)lo;
          TM_TRY(tm_colbuilder_append_bytes(cb, b, 16, err));
          break;
        }
        duckdb_string_t *s = &((duckdb_string_t *)src)[i];
        uint32_t len = duckdb_string_t_length(*s);
        if (t->id == TM_TYPE_FIXED_BINARY && len != (uint32_t)t->width)
          return tm_error_set(err, TM_ECORRUPT, "a stored fixed(%d) value has %u bytes",
                              (int)t->width, len);
        TM_TRY(tm_colbuilder_append_bytes(cb, duckdb_string_t_data(s), len, err));
        break;
      }
      default: return tm_error_set(err, TM_EUNSUPPORTED, "a column type tidemark cannot read");
    }
  }
  return TM_OK;
}

/* ---- reading results as batches ---------------------------------------------- */

void tm_duck_reader_init(tm_duck_reader *rd, duckdb_result *r, const tm_schema *schema,
                         int64_t rows) {
  memset(rd, 0, sizeof *rd);
  rd->result = *r;
  memset(r, 0, sizeof *r);
  rd->has_result = true;
  rd->schema = schema;
  rd->rows = rows > 0 ? rows : TM_BATCH_DEFAULT_ROWS;
}

void tm_duck_reader_dispose(tm_duck_reader *rd) {
  if (rd->has_result) duckdb_destroy_result(&rd->result);
  memset(rd, 0, sizeof *rd);
}

int tm_duck_reader_next(tm_duck_reader *rd, tm_batch *out, tm_error *err) {
  if (rd->done) return TM_ITEROVER;
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, rd->schema, err));
  int rc = TM_OK;
  while (rc == TM_OK && tm_batch_builder_rows(&bb) < rd->rows) {
    duckdb_data_chunk ch = duckdb_fetch_chunk(rd->result);
    if (!ch) {
      const char *msg = duckdb_result_error(&rd->result);
      if (msg) rc = tm_db__result_error(err, &rd->result, NULL);
      rd->done = true;
      break;
    }
    idx_t n = duckdb_data_chunk_get_size(ch);
    if (duckdb_data_chunk_get_column_count(ch) != rd->schema->n_cols)
      rc = tm_error_set(err, TM_ERROR, "a DuckDB result has %llu columns, expected %zu",
                        (unsigned long long)duckdb_data_chunk_get_column_count(ch),
                        rd->schema->n_cols);
    for (size_t c = 0; rc == TM_OK && c < rd->schema->n_cols; c++)
      rc = tm_duck_vector_read(duckdb_data_chunk_get_vector(ch, c), n,
                               tm_batch_builder_col(&bb, c), err);
    duckdb_destroy_data_chunk(&ch);
  }
  if (rc == TM_OK && tm_batch_builder_rows(&bb) == 0) rc = TM_ITEROVER;
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  return rc;
}
