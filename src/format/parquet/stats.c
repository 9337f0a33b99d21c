/*
 * stats.c - column-chunk statistics as tm_col_stats, and row-group pruning
 * (format layer, parquet).
 *
 * Which bounds we trust (the Parquet sort-order rules):
 *   - min_value / max_value (fields 6, 5) are written in the column's own
 *     sort order and are used whenever present, unless the file's
 *     column_orders names an order we do not know for this column;
 *   - the deprecated min / max (fields 2, 1) were written by old writers with
 *     a signed comparison, so they are used only for columns whose sort
 *     order is signed and whose physical type is not a byte array
 *     (BOOLEAN, INT32, INT64, FLOAT, DOUBLE without an unsigned annotation);
 *   - columns with an undefined order (INT96, INTERVAL) have no bounds;
 *   - a NaN bound, or a bound of the wrong byte length, is dropped;
 *   - null_count is used from either generation.
 * Truncated bounds (is_min/max_value_exact = false) are still a lower and
 * an upper bound, so they stay usable for pruning.
 */
#include <math.h>
#include <string.h>

#include "format/parquet/parquet_int.h"

typedef enum sort_order { ORDER_SIGNED, ORDER_UNSIGNED, ORDER_UNKNOWN } sort_order;

static sort_order order_of(const tm_parquet_field *fd, const tm_pq_schema_elem *e) {
  if (e->type == TM_PQ_INT96 || e->converted_type == TM_PQ_CT_INTERVAL) return ORDER_UNKNOWN;
  switch (fd->type.id) {
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: return ORDER_UNSIGNED;
    default: return ORDER_SIGNED;
  }
}

/* Big-endian two's complement of len bytes to decimal128 LE. False when the
 * value does not fit in 16 bytes. */
bool tm_parquet__be_to_dec128(const uint8_t *src, size_t len, uint8_t out[16]) {
  uint8_t fill = (len > 0 && (src[0] & 0x80)) ? 0xff : 0x00;
  if (len > 16) {
    for (size_t i = 0; i < len - 16; i++)
      if (src[i] != fill) return false;
    src += len - 16;
    len = 16;
  }
  for (size_t i = 0; i < 16; i++) out[i] = i < len ? src[len - 1 - i] : fill;
  return true;
}

static void dec_from_i64(int64_t v, uint8_t out[16]) {
  int64_t hi = v < 0 ? -1 : 0;
  memcpy(out, &v, 8);
  memcpy(out + 8, &hi, 8);
}

/* Decodes one bound; false when it cannot be used. */
static bool decode_bound(const tm_parquet_field *fd, tm_strview raw, tm_value *out) {
  const uint8_t *p = (const uint8_t *)raw.ptr;
  size_t n = raw.len;
  memset(out, 0, sizeof *out);
  out->type = fd->type.id;
  switch (fd->physical_type) {
    case TM_PQ_BOOLEAN:
      if (n != 1) return false;
      out->v.b = p[0] != 0;
      return true;
    case TM_PQ_INT32: {
      if (n != 4) return false;
      int32_t v;
      memcpy(&v, p, 4);
      switch (fd->type.id) {
        case TM_TYPE_UINT8:
        case TM_TYPE_UINT16:
        case TM_TYPE_UINT32: out->v.u = (uint32_t)v; return true;
        case TM_TYPE_TIME64: out->v.i = (int64_t)v * 1000; return true;
        case TM_TYPE_DECIMAL128: dec_from_i64(v, out->v.dec); return true;
        default: out->v.i = v; return true;
      }
    }
    case TM_PQ_INT64: {
      if (n != 8) return false;
      int64_t v;
      memcpy(&v, p, 8);
      if (fd->type.id == TM_TYPE_UINT64) out->v.u = (uint64_t)v;
      else if (fd->type.id == TM_TYPE_DECIMAL128) dec_from_i64(v, out->v.dec);
      else out->v.i = v;
      return true;
    }
    case TM_PQ_FLOAT: {
      if (n != 4) return false;
      float v;
      memcpy(&v, p, 4);
      if (isnan(v)) return false;
      out->v.f = v;
      return true;
    }
    case TM_PQ_DOUBLE: {
      if (n != 8) return false;
      double v;
      memcpy(&v, p, 8);
      if (isnan(v)) return false;
      out->v.f = v;
      return true;
    }
    case TM_PQ_BYTE_ARRAY:
      if (fd->type.id == TM_TYPE_DECIMAL128)
        return n > 0 && tm_parquet__be_to_dec128(p, n, out->v.dec);
      out->v.s = raw;
      return true;
    case TM_PQ_FLBA:
      if (fd->type.id == TM_TYPE_DECIMAL128) {
        if ((int32_t)n != fd->type_length) return false;
        return n > 0 && tm_parquet__be_to_dec128(p, n, out->v.dec);
      }
      if (fd->type.id == TM_TYPE_FLOAT32) {
        if (n != 2) return false;
        float v = tm_parquet__half_to_float((uint16_t)(p[0] | p[1] << 8));
        if (isnan(v)) return false;
        out->v.f = v;
        return true;
      }
      /* Fixed binaries: a truncated bound would not be of the column's width. */
      if ((int32_t)n != fd->type_length) return false;
      out->v.s = raw;
      return true;
    default: return false;
  }
}

void tm_parquet__chunk_stats(const tm_parquet_file *f, size_t rg, size_t field,
                             tm_col_stats *out) {
  memset(out, 0, sizeof *out);
  out->null_count = -1;
  out->row_count = -1;
  if (rg >= f->meta.n_row_groups || field >= f->n_fields) return;
  out->row_count = f->meta.row_groups[rg].num_rows;
  const tm_parquet_field *fd = &f->fields[field];
  if (fd->unsupported) return;
  const tm_pq_column_chunk *cc = &f->meta.row_groups[rg].columns[fd->leaf];
  if (!cc->has_meta || !cc->meta.has_stats) return;
  const tm_pq_stats *st = &cc->meta.stats;
  const tm_pq_schema_elem *e = &f->meta.schema[f->leaves[fd->leaf].elem];
  out->null_count = st->null_count;
  sort_order order = order_of(fd, e);
  if (order == ORDER_UNKNOWN) return;
  bool order_known = fd->leaf >= f->meta.n_column_orders || f->meta.column_orders[fd->leaf] == 1;
  tm_strview lo = {0}, hi = {0};
  bool has_lo = false, has_hi = false;
  if (order_known && (st->has_min_value || st->has_max_value)) {
    lo = st->min_value;
    hi = st->max_value;
    has_lo = st->has_min_value;
    has_hi = st->has_max_value;
  } else if (order == ORDER_SIGNED && fd->physical_type != TM_PQ_BYTE_ARRAY &&
             fd->physical_type != TM_PQ_FLBA) {
    lo = st->min;
    hi = st->max;
    has_lo = st->has_min;
    has_hi = st->has_max;
  }
  if (has_lo && decode_bound(fd, lo, &out->min)) out->has_min = true;
  if (has_hi && decode_bound(fd, hi, &out->max)) out->has_max = true;
  /* A NaN in one bound makes the other doubtful for floats: keep both or none. */
  if ((fd->physical_type == TM_PQ_FLOAT || fd->physical_type == TM_PQ_DOUBLE ||
       fd->type.id == TM_TYPE_FLOAT32) &&
      out->has_min != out->has_max)
    out->has_min = out->has_max = false;
}

void tm_parquet_column_stats(const tm_parquet_file *f, size_t rg, size_t field,
                             tm_col_stats *out) {
  tm_parquet__chunk_stats(f, rg, field, out);
}

bool tm_parquet_row_group_may_match(const tm_parquet_file *f, size_t rg,
                                    const tm_predicate *pred) {
  if (!pred) return true;
  for (size_t i = 0; i < pred->n_terms; i++) {
    const tm_pred_term *t = &pred->terms[i];
    int fi = tm_parquet_find_field(f, t->column);
    if (fi < 0) continue;
    const tm_parquet_field *fd = &f->fields[fi];
    if (fd->unsupported || !tm_type_equal(&fd->type, &t->type)) continue;
    tm_col_stats s;
    tm_parquet__chunk_stats(f, rg, (size_t)fi, &s);
    if (!tm_pred_term_may_match(t, &s)) return false;
  }
  return true;
}
