/*
 * batch.c - columnar batches, column views and builders (format layer).
 * See batch.h.
 */
#include "format/arrow/batch.h"

#include <math.h>

#include "util/alloc.h"
#include "util/hash.h"

#define DEFAULT_LIMIT ((size_t)1 << 30)

/* ---- Arrow array ownership ---------------------------------------------- */

/* private_data of a column array: the buffers it owns. */
typedef struct col_private {
  void *owned[3];          /* validity, values/offsets, data */
  const void *buffers[3];  /* what ArrowArray.buffers points at */
  struct ArrowArray *children; /* nested types: n_children arrays */
  struct ArrowArray **child_ptrs;
} col_private;

static void release_column(struct ArrowArray *a) {
  if (!a || !a->release) return;
  col_private *p = a->private_data;
  if (p) {
    for (int i = 0; i < 3; i++) tm_free(p->owned[i]);
    for (int64_t i = 0; p->children && i < a->n_children; i++)
      if (p->children[i].release) p->children[i].release(&p->children[i]);
    tm_free(p->children);
    tm_free(p->child_ptrs);
    tm_free(p);
  }
  a->release = NULL;
}

/* private_data of a struct array: its children. */
typedef struct struct_private {
  struct ArrowArray *children;      /* n_children arrays */
  struct ArrowArray **child_ptrs;
  const void *buffers[1];           /* no validity */
} struct_private;

static void release_struct(struct ArrowArray *a) {
  if (!a || !a->release) return;
  struct_private *p = a->private_data;
  if (p) {
    for (int64_t i = 0; i < a->n_children; i++)
      if (p->children[i].release) p->children[i].release(&p->children[i]);
    tm_free(p->children);
    tm_free(p->child_ptrs);
    tm_free(p);
  }
  a->release = NULL;
}

void tm_batch_init(tm_batch *b) {
  memset(b, 0, sizeof *b);
  tm_schema_init(&b->schema);
}

void tm_batch_release(tm_batch *b) {
  if (b->array.release) b->array.release(&b->array);
  tm_schema_dispose(&b->schema);
  memset(b, 0, sizeof *b);
}

void tm_batch_move(tm_batch *dst, tm_batch *src) {
  *dst = *src;
  memset(src, 0, sizeof *src);
}

int tm_batch_export(tm_batch *b, struct ArrowSchema *schema_out,
                    struct ArrowArray *array_out, tm_error *err) {
  TM_TRY(tm_schema_to_arrow(&b->schema, schema_out, err));
  *array_out = b->array;
  memset(&b->array, 0, sizeof b->array);
  tm_batch_release(b);
  return TM_OK;
}

static size_t col_bytes(const tm_colview *v) {
  size_t total = 0;
  const struct ArrowArray *c = v->array;
  if (c->n_buffers > 0 && c->buffers[0]) total += (size_t)(c->length + 7) / 8;
  size_t w = tm_type_byte_width(&v->type);
  if (v->type.id == TM_TYPE_BOOL) total += (size_t)(c->length + 7) / 8;
  else if (tm_type_is_var(&v->type)) {
    total += (size_t)(c->length + 1) * 4;
    if (c->length > 0) total += (size_t)((const int32_t *)v->values)[c->length];
  } else if (tm_type_is_nested(&v->type)) {
    if (v->type.id != TM_TYPE_STRUCT) total += (size_t)(c->length + 1) * 4;
    for (size_t k = 0; k < v->type.nested->n && k < (size_t)c->n_children; k++) {
      tm_colview ch = tm_colview_child(v, k);
      total += col_bytes(&ch);
    }
  } else total += w * (size_t)c->length;
  return total;
}

size_t tm_batch_byte_size(const tm_batch *b) {
  size_t total = 0;
  for (size_t i = 0; i < b->schema.n_cols && b->array.release; i++) {
    tm_colview v = tm_batch_col(b, i);
    total += col_bytes(&v);
  }
  return total;
}

/* ---- reading ------------------------------------------------------------- */

tm_colview tm_colview_of(const struct ArrowArray *c, const tm_type *t) {
  tm_colview v;
  memset(&v, 0, sizeof v);
  v.type = *t;
  v.length = c->length;
  v.null_count = c->null_count;
  v.validity = c->null_count == 0 || c->n_buffers < 1 ? NULL : c->buffers[0];
  v.values = c->n_buffers > 1 ? c->buffers[1] : NULL;
  v.data = c->n_buffers > 2 ? c->buffers[2] : NULL;
  v.array = c;
  return v;
}

tm_colview tm_batch_col(const tm_batch *b, size_t i) {
  return tm_colview_of(b->array.children[i], &b->schema.cols[i].type);
}

tm_colview tm_colview_child(const tm_colview *c, size_t k) {
  return tm_colview_of(c->array->children[k], &c->type.nested->child[k]);
}

int tm_colview_check(const tm_colview *c, tm_error *err) {
  if (!tm_type_is_nested(&c->type)) return TM_OK;
  const struct ArrowArray *a = c->array;
  size_t want = c->type.nested->n;
  if (!a || a->offset != 0 || a->n_children != (int64_t)want || !a->children ||
      a->length < 0 || a->n_buffers != (c->type.id == TM_TYPE_STRUCT ? 1 : 2))
    return tm_error_set(err, TM_ECORRUPT, "a nested array does not match its type");
  for (size_t k = 0; k < want; k++) {
    tm_colview ch = tm_colview_child(c, k);
    if (c->type.id == TM_TYPE_STRUCT && ch.length != c->length)
      return tm_error_set(err, TM_ECORRUPT, "a struct field is not as long as the struct");
    TM_TRY(tm_colview_check(&ch, err));
  }
  if (c->type.id == TM_TYPE_STRUCT || c->length == 0) return TM_OK;
  const int32_t *off = c->values;
  if (!off) return tm_error_set(err, TM_ECORRUPT, "a list array without offsets");
  int64_t child_len = a->children[0]->length;
  if (off[0] < 0) return tm_error_set(err, TM_ECORRUPT, "a list offset below 0");
  for (int64_t i = 0; i < c->length; i++)
    if (off[i + 1] < off[i])
      return tm_error_set(err, TM_ECORRUPT, "list offsets decrease at row %lld", (long long)i);
  if (off[c->length] > child_len)
    return tm_error_set(err, TM_ECORRUPT, "a list offset passes its %lld elements",
                        (long long)child_len);
  return TM_OK;
}

static void read_decimal(const tm_colview *c, int64_t row, uint8_t out[16]) {
  memcpy(out, (const uint8_t *)c->values + (size_t)row * 16, 16);
}

void tm_colview_get(const tm_colview *c, int64_t row, tm_value *out) {
  out->type = c->type.id;
  out->is_null = tm_colview_is_null(c, row);
  if (out->is_null) {
    out->v.u = 0;
    return;
  }
  const void *p = c->values;
  switch (c->type.id) {
    case TM_TYPE_BOOL: out->v.b = tm_bit_get(p, row); break;
    case TM_TYPE_INT8: out->v.i = ((const int8_t *)p)[row]; break;
    case TM_TYPE_INT16: out->v.i = ((const int16_t *)p)[row]; break;
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32: out->v.i = ((const int32_t *)p)[row]; break;
    case TM_TYPE_INT64:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: out->v.i = ((const int64_t *)p)[row]; break;
    case TM_TYPE_UINT8: out->v.u = ((const uint8_t *)p)[row]; break;
    case TM_TYPE_UINT16: out->v.u = ((const uint16_t *)p)[row]; break;
    case TM_TYPE_UINT32: out->v.u = ((const uint32_t *)p)[row]; break;
    case TM_TYPE_UINT64: out->v.u = ((const uint64_t *)p)[row]; break;
    case TM_TYPE_FLOAT32: out->v.f = ((const float *)p)[row]; break;
    case TM_TYPE_FLOAT64: out->v.f = ((const double *)p)[row]; break;
    case TM_TYPE_DECIMAL128: read_decimal(c, row, out->v.dec); break;
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: out->v.s = tm_colview_bytes(c, row); break;
    case TM_TYPE_LIST:
    case TM_TYPE_STRUCT:
    case TM_TYPE_MAP: out->v.u = 0; break; /* no scalar payload: read through the children */
    default: out->is_null = true; break;
  }
}

int64_t tm_colview_int(const tm_colview *c, int64_t row) {
  tm_value v;
  tm_colview_get(c, row, &v);
  if (v.is_null) return 0;
  switch (c->type.id) {
    case TM_TYPE_BOOL: return v.v.b;
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: return v.v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.v.u;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: return (int64_t)v.v.f;
    default: return v.v.i;
  }
}

double tm_colview_double(const tm_colview *c, int64_t row) {
  tm_value v;
  tm_colview_get(c, row, &v);
  if (v.is_null) return 0;
  switch (c->type.id) {
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: return v.v.f;
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: return (double)v.v.u;
    case TM_TYPE_BOOL: return v.v.b;
    default: return (double)v.v.i;
  }
}

static int cmp_bytes(tm_strview a, tm_strview b) {
  size_t n = a.len < b.len ? a.len : b.len;
  int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
  if (c) return c;
  return a.len < b.len ? -1 : a.len > b.len;
}

static int cmp_dec(const uint8_t *a, const uint8_t *b) {
  int64_t ah, bh;
  uint64_t al, bl;
  memcpy(&al, a, 8);
  memcpy(&ah, a + 8, 8);
  memcpy(&bl, b, 8);
  memcpy(&bh, b + 8, 8);
  if (ah != bh) return ah < bh ? -1 : 1;
  if (al != bl) return al < bl ? -1 : 1;
  return 0;
}

int tm_value_cmp(const tm_value *a, const tm_value *b) {
  switch (a->type) {
    case TM_TYPE_BOOL: return (int)a->v.b - (int)b->v.b;
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: return a->v.u < b->v.u ? -1 : a->v.u > b->v.u;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: {
      bool an = isnan(a->v.f), bn = isnan(b->v.f);
      if (an || bn) return (int)an - (int)bn;
      return a->v.f < b->v.f ? -1 : a->v.f > b->v.f;
    }
    case TM_TYPE_DECIMAL128: return cmp_dec(a->v.dec, b->v.dec);
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: return cmp_bytes(a->v.s, b->v.s);
    default: return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
  }
}

uint64_t tm_value_hash(const tm_value *v) {
  if (v->is_null) return UINT64_C(0x6e756c6c6e756c6c);
  switch (v->type) {
    case TM_TYPE_BOOL: return tm_hash_mix64(v->v.b ? 1 : 2);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: {
      double d = v->v.f;
      if (d == 0) d = 0; /* -0.0 equals 0.0 */
      uint64_t bits;
      if (isnan(d)) bits = UINT64_C(0x7ff8000000000000);
      else memcpy(&bits, &d, 8);
      return tm_hash_mix64(bits);
    }
    case TM_TYPE_DECIMAL128: return tm_hash64(v->v.dec, 16, 7);
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: return tm_hash64(v->v.s.ptr, v->v.s.len, 11);
    default: return tm_hash_mix64((uint64_t)v->v.i ^ UINT64_C(0x243f6a8885a308d3));
  }
}

/* ---- building ------------------------------------------------------------ */

void tm_colbuilder_init(tm_colbuilder *cb, tm_type type, size_t limit_bytes) {
  size_t limit = limit_bytes ? limit_bytes : DEFAULT_LIMIT;
  memset(cb, 0, sizeof *cb);
  cb->type = type;
  tm_buf_init(&cb->validity, limit);
  tm_buf_init(&cb->values, limit);
  tm_buf_init(&cb->data, limit);
  if (tm_type_is_nested(&type)) {
    size_t n = type.nested ? type.nested->n : 0;
    cb->children = n ? tm_calloc(n, sizeof *cb->children) : NULL;
    if (!cb->children) {
      cb->broken = true;
      return;
    }
    cb->n_children = n;
    for (size_t k = 0; k < n; k++)
      tm_colbuilder_init(&cb->children[k], type.nested->child[k], limit_bytes);
  }
}

void tm_colbuilder_dispose(tm_colbuilder *cb) {
  tm_buf_dispose(&cb->validity);
  tm_buf_dispose(&cb->values);
  tm_buf_dispose(&cb->data);
  for (size_t k = 0; k < cb->n_children; k++) tm_colbuilder_dispose(&cb->children[k]);
  tm_free(cb->children);
  cb->children = NULL;
  cb->n_children = 0;
  cb->length = 0;
  cb->null_count = 0;
}

void tm_colbuilder_reset(tm_colbuilder *cb) {
  tm_buf_clear(&cb->validity);
  tm_buf_clear(&cb->values);
  tm_buf_clear(&cb->data);
  for (size_t k = 0; k < cb->n_children; k++) tm_colbuilder_reset(&cb->children[k]);
  cb->length = 0;
  cb->null_count = 0;
}

static size_t bitmap_bytes(int64_t n) { return (size_t)(n + 7) / 8; }

/* Makes sure the var-width offsets buffer starts with its leading 0. */
static int ensure_offsets(tm_colbuilder *cb, tm_error *err) {
  if (cb->values.len == 0) {
    int32_t zero = 0;
    TM_TRY(tm_buf_append(&cb->values, &zero, 4, err));
  }
  return TM_OK;
}

int tm_colbuilder_reserve(tm_colbuilder *cb, int64_t n, size_t data_bytes, tm_error *err) {
  if (n < 0) return tm_error_set(err, TM_EINVALID, "negative reserve");
  size_t w = tm_type_byte_width(&cb->type);
  if (cb->type.id == TM_TYPE_BOOL) {
    size_t need = bitmap_bytes(cb->length + n);
    if (need > cb->values.len) TM_TRY(tm_buf_reserve(&cb->values, need - cb->values.len, err));
  } else if (tm_type_is_var(&cb->type)) {
    TM_TRY(ensure_offsets(cb, err));
    TM_TRY(tm_buf_reserve(&cb->values, (size_t)n * 4, err));
    TM_TRY(tm_buf_reserve(&cb->data, data_bytes, err));
  } else if (cb->type.id == TM_TYPE_LIST || cb->type.id == TM_TYPE_MAP) {
    TM_TRY(ensure_offsets(cb, err));
    TM_TRY(tm_buf_reserve(&cb->values, (size_t)n * 4, err));
  } else {
    size_t bytes;
    if (tm_mul_overflow(w, (size_t)n, &bytes))
      return tm_error_set(err, TM_ETOOLARGE, "column too large");
    TM_TRY(tm_buf_reserve(&cb->values, bytes, err));
  }
  if (cb->validity.len) {
    size_t need = bitmap_bytes(cb->length + n);
    if (need > cb->validity.len)
      TM_TRY(tm_buf_reserve(&cb->validity, need - cb->validity.len, err));
  }
  return TM_OK;
}

/* Sets the validity bit of row `row` (allocating the bitmap on the first null). */
static int set_valid(tm_colbuilder *cb, int64_t row, bool valid, tm_error *err) {
  if (valid && cb->validity.len == 0) return TM_OK;
  if (cb->validity.len == 0) {
    /* First null: every earlier row was valid. */
    size_t n = bitmap_bytes(row + 1);
    void *p;
    TM_TRY(tm_buf_extend(&cb->validity, n, &p, err));
    memset(p, 0xff, n);
  }
  size_t need = bitmap_bytes(row + 1);
  if (need > cb->validity.len) {
    void *p;
    TM_TRY(tm_buf_extend(&cb->validity, need - cb->validity.len, &p, err));
  }
  uint8_t *bits = (uint8_t *)cb->validity.ptr;
  if (valid) tm_bit_set(bits, row);
  else tm_bit_clear(bits, row);
  return TM_OK;
}

static int push_fixed(tm_colbuilder *cb, const void *v, size_t w, tm_error *err) {
  TM_TRY(tm_buf_append(&cb->values, v, w, err));
  TM_TRY(set_valid(cb, cb->length, true, err));
  cb->length++;
  return TM_OK;
}

static int out_of_range(tm_colbuilder *cb, tm_error *err);

static int child_end(tm_colbuilder *cb, int32_t *end, tm_error *err) {
  if (cb->broken) return tm_error_nomem(err);
  if (cb->children[0].length > INT32_MAX)
    return tm_error_set(err, TM_ETOOLARGE, "a list column of one batch passes 2^31 elements");
  *end = (int32_t)cb->children[0].length;
  return TM_OK;
}

int tm_colbuilder_append_nested(tm_colbuilder *cb, tm_error *err) {
  if (cb->broken) return tm_error_nomem(err);
  if (cb->type.id == TM_TYPE_STRUCT) {
    for (size_t k = 0; k < cb->n_children; k++)
      if (cb->children[k].length != cb->length + 1)
        return tm_error_set(err, TM_EINVALID, "struct field '%s' has %lld values, expected %lld",
                            cb->type.nested->name[k], (long long)cb->children[k].length,
                            (long long)cb->length + 1);
  } else if (cb->type.id == TM_TYPE_LIST || cb->type.id == TM_TYPE_MAP) {
    int32_t end = 0;
    TM_TRY(child_end(cb, &end, err));
    TM_TRY(ensure_offsets(cb, err));
    TM_TRY(tm_buf_append(&cb->values, &end, 4, err));
  } else {
    return out_of_range(cb, err);
  }
  TM_TRY(set_valid(cb, cb->length, true, err));
  cb->length++;
  return TM_OK;
}

int tm_colbuilder_append_nested_null(tm_colbuilder *cb, tm_error *err) {
  if (cb->type.id != TM_TYPE_STRUCT) return tm_colbuilder_append_null(cb, err);
  if (cb->broken) return tm_error_nomem(err);
  for (size_t k = 0; k < cb->n_children; k++)
    if (cb->children[k].length != cb->length + 1)
      return tm_error_set(err, TM_EINVALID, "struct field '%s' has %lld values, expected %lld",
                          cb->type.nested->name[k], (long long)cb->children[k].length,
                          (long long)cb->length + 1);
  TM_TRY(set_valid(cb, cb->length, false, err));
  cb->length++;
  cb->null_count++;
  return TM_OK;
}

int tm_colbuilder_append_nulls(tm_colbuilder *cb, int64_t n, tm_error *err) {
  for (int64_t k = 0; k < n; k++) {
    size_t w = tm_type_byte_width(&cb->type);
    if (cb->broken) return tm_error_nomem(err);
    if (cb->type.id == TM_TYPE_STRUCT) {
      for (size_t f = 0; f < cb->n_children; f++)
        TM_TRY(tm_colbuilder_append_null(&cb->children[f], err));
    } else if (cb->type.id == TM_TYPE_LIST || cb->type.id == TM_TYPE_MAP) {
      int32_t end = 0;
      TM_TRY(child_end(cb, &end, err));
      TM_TRY(ensure_offsets(cb, err));
      TM_TRY(tm_buf_append(&cb->values, &end, 4, err));
    } else if (cb->type.id == TM_TYPE_BOOL) {
      size_t need = bitmap_bytes(cb->length + 1);
      if (need > cb->values.len) {
        void *p;
        TM_TRY(tm_buf_extend(&cb->values, need - cb->values.len, &p, err));
      }
    } else if (tm_type_is_var(&cb->type)) {
      TM_TRY(ensure_offsets(cb, err));
      int32_t end = (int32_t)cb->data.len;
      TM_TRY(tm_buf_append(&cb->values, &end, 4, err));
    } else {
      void *p;
      TM_TRY(tm_buf_extend(&cb->values, w, &p, err));
    }
    TM_TRY(set_valid(cb, cb->length, false, err));
    cb->length++;
    cb->null_count++;
  }
  return TM_OK;
}

int tm_colbuilder_append_null(tm_colbuilder *cb, tm_error *err) {
  return tm_colbuilder_append_nulls(cb, 1, err);
}

int tm_colbuilder_append_bool(tm_colbuilder *cb, bool v, tm_error *err) {
  if (cb->type.id != TM_TYPE_BOOL) return tm_colbuilder_append_int(cb, v, err);
  size_t need = bitmap_bytes(cb->length + 1);
  if (need > cb->values.len) {
    void *p;
    TM_TRY(tm_buf_extend(&cb->values, need - cb->values.len, &p, err));
  }
  if (v) tm_bit_set((uint8_t *)cb->values.ptr, cb->length);
  TM_TRY(set_valid(cb, cb->length, true, err));
  cb->length++;
  return TM_OK;
}

static int out_of_range(tm_colbuilder *cb, tm_error *err) {
  char tn[64];
  tm_type_name(&cb->type, tn, sizeof tn);
  return tm_error_set(err, TM_EINVALID, "value out of range for %s", tn);
}

int tm_colbuilder_append_int(tm_colbuilder *cb, int64_t v, tm_error *err) {
  switch (cb->type.id) {
    case TM_TYPE_BOOL: return tm_colbuilder_append_bool(cb, v != 0, err);
    case TM_TYPE_INT8: {
      if (v < INT8_MIN || v > INT8_MAX) return out_of_range(cb, err);
      int8_t x = (int8_t)v;
      return push_fixed(cb, &x, 1, err);
    }
    case TM_TYPE_INT16: {
      if (v < INT16_MIN || v > INT16_MAX) return out_of_range(cb, err);
      int16_t x = (int16_t)v;
      return push_fixed(cb, &x, 2, err);
    }
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32: {
      if (v < INT32_MIN || v > INT32_MAX) return out_of_range(cb, err);
      int32_t x = (int32_t)v;
      return push_fixed(cb, &x, 4, err);
    }
    case TM_TYPE_INT64:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: return push_fixed(cb, &v, 8, err);
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
      if (v < 0) return out_of_range(cb, err);
      return tm_colbuilder_append_uint(cb, (uint64_t)v, err);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: return tm_colbuilder_append_double(cb, (double)v, err);
    case TM_TYPE_DECIMAL128: {
      uint8_t d[16];
      int64_t hi = v < 0 ? -1 : 0;
      memcpy(d, &v, 8);
      memcpy(d + 8, &hi, 8);
      return tm_colbuilder_append_decimal(cb, d, err);
    }
    default: return out_of_range(cb, err);
  }
}

int tm_colbuilder_append_uint(tm_colbuilder *cb, uint64_t v, tm_error *err) {
  switch (cb->type.id) {
    case TM_TYPE_UINT8: {
      if (v > UINT8_MAX) return out_of_range(cb, err);
      uint8_t x = (uint8_t)v;
      return push_fixed(cb, &x, 1, err);
    }
    case TM_TYPE_UINT16: {
      if (v > UINT16_MAX) return out_of_range(cb, err);
      uint16_t x = (uint16_t)v;
      return push_fixed(cb, &x, 2, err);
    }
    case TM_TYPE_UINT32: {
      if (v > UINT32_MAX) return out_of_range(cb, err);
      uint32_t x = (uint32_t)v;
      return push_fixed(cb, &x, 4, err);
    }
    case TM_TYPE_UINT64: return push_fixed(cb, &v, 8, err);
    default:
      if (v > (uint64_t)INT64_MAX) return out_of_range(cb, err);
      return tm_colbuilder_append_int(cb, (int64_t)v, err);
  }
}

int tm_colbuilder_append_double(tm_colbuilder *cb, double v, tm_error *err) {
  if (cb->type.id == TM_TYPE_FLOAT32) {
    float f = (float)v;
    return push_fixed(cb, &f, 4, err);
  }
  if (cb->type.id == TM_TYPE_FLOAT64) return push_fixed(cb, &v, 8, err);
  return out_of_range(cb, err);
}

int tm_colbuilder_append_bytes(tm_colbuilder *cb, const void *p, size_t len, tm_error *err) {
  if (cb->type.id == TM_TYPE_FIXED_BINARY) {
    if (len != (size_t)cb->type.width)
      return tm_error_set(err, TM_EINVALID, "fixed-size value of %zu bytes, expected %d", len,
                          (int)cb->type.width);
    return push_fixed(cb, p, len, err);
  }
  if (!tm_type_is_var(&cb->type)) return out_of_range(cb, err);
  TM_TRY(ensure_offsets(cb, err));
  if (cb->data.len + len > (size_t)INT32_MAX)
    return tm_error_set(err, TM_ETOOLARGE, "string column of one batch passes 2 GiB");
  TM_TRY(tm_buf_append(&cb->data, p, len, err));
  int32_t end = (int32_t)cb->data.len;
  TM_TRY(tm_buf_append(&cb->values, &end, 4, err));
  TM_TRY(set_valid(cb, cb->length, true, err));
  cb->length++;
  return TM_OK;
}

int tm_colbuilder_append_decimal(tm_colbuilder *cb, const uint8_t le16[16], tm_error *err) {
  if (cb->type.id != TM_TYPE_DECIMAL128) return out_of_range(cb, err);
  return push_fixed(cb, le16, 16, err);
}

int tm_colbuilder_append_value(tm_colbuilder *cb, const tm_value *v, tm_error *err) {
  if (v->is_null) return tm_colbuilder_append_null(cb, err);
  switch (v->type) {
    case TM_TYPE_BOOL: return tm_colbuilder_append_bool(cb, v->v.b, err);
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: return tm_colbuilder_append_uint(cb, v->v.u, err);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: return tm_colbuilder_append_double(cb, v->v.f, err);
    case TM_TYPE_DECIMAL128: return tm_colbuilder_append_decimal(cb, v->v.dec, err);
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
    case TM_TYPE_FIXED_BINARY: return tm_colbuilder_append_bytes(cb, v->v.s.ptr, v->v.s.len, err);
    default: return tm_colbuilder_append_int(cb, v->v.i, err);
  }
}

int tm_colbuilder_append_range(tm_colbuilder *cb, const tm_colview *src, int64_t from,
                               int64_t n, tm_error *err) {
  if (n <= 0) return TM_OK;
  if (from < 0 || from + n > src->length)
    return tm_error_set(err, TM_EINVALID, "row range out of bounds");
  if (!tm_type_equal(&cb->type, &src->type) && cb->type.id != src->type.id)
    return tm_error_set(err, TM_EINVALID, "column type mismatch in copy");
  if (cb->type.id == TM_TYPE_BOOL) {
    for (int64_t i = from; i < from + n; i++) {
      if (tm_colview_is_null(src, i)) TM_TRY(tm_colbuilder_append_null(cb, err));
      else TM_TRY(tm_colbuilder_append_bool(cb, tm_bit_get(src->values, i), err));
    }
    return TM_OK;
  }
  int64_t start = cb->length;
  if (tm_type_is_nested(&cb->type)) {
    if (cb->broken) return tm_error_nomem(err);
    if (cb->type.id == TM_TYPE_STRUCT) {
      for (size_t k = 0; k < cb->n_children; k++) {
        tm_colview ch = tm_colview_child(src, k);
        TM_TRY(tm_colbuilder_append_range(&cb->children[k], &ch, from, n, err));
      }
    } else {
      const int32_t *off = src->values;
      tm_colview ch = tm_colview_child(src, 0);
      if (off[from] < 0 || off[from + n] < off[from] || off[from + n] > ch.length)
        return tm_error_set(err, TM_ECORRUPT, "list offsets out of bounds");
      int32_t end = 0;
      TM_TRY(child_end(cb, &end, err));
      int64_t base = (int64_t)end - off[from];
      if ((int64_t)end + (off[from + n] - off[from]) > INT32_MAX)
        return tm_error_set(err, TM_ETOOLARGE, "a list column of one batch passes 2^31 elements");
      TM_TRY(tm_colbuilder_append_range(&cb->children[0], &ch, off[from], off[from + n] - off[from],
                                        err));
      TM_TRY(ensure_offsets(cb, err));
      TM_TRY(tm_buf_reserve(&cb->values, (size_t)n * 4, err));
      for (int64_t i = from; i < from + n; i++) {
        if (off[i + 1] < off[i]) return tm_error_set(err, TM_ECORRUPT, "list offsets decrease");
        int32_t e = (int32_t)(off[i + 1] + base);
        TM_TRY(tm_buf_append(&cb->values, &e, 4, err));
      }
    }
  } else if (tm_type_is_var(&cb->type)) {
    const int32_t *off = src->values;
    size_t bytes = (size_t)(off[from + n] - off[from]);
    TM_TRY(tm_colbuilder_reserve(cb, n, bytes, err));
    int32_t base = (int32_t)cb->data.len - off[from];
    TM_TRY(tm_buf_append(&cb->data, src->data + off[from], bytes, err));
    for (int64_t i = from; i < from + n; i++) {
      int32_t end = off[i + 1] + base;
      TM_TRY(tm_buf_append(&cb->values, &end, 4, err));
    }
  } else {
    size_t w = tm_type_byte_width(&cb->type);
    TM_TRY(tm_buf_append(&cb->values, (const uint8_t *)src->values + (size_t)from * w,
                         (size_t)n * w, err));
  }
  cb->length += n;
  bool any_null = src->validity != NULL;
  if (any_null || cb->validity.len) {
    for (int64_t i = 0; i < n; i++) {
      bool valid = !tm_colview_is_null(src, from + i);
      TM_TRY(set_valid(cb, start + i, valid, err));
      if (!valid) cb->null_count++;
    }
  }
  return TM_OK;
}

static int finish_nested(tm_colbuilder *cb, struct ArrowArray *out, tm_error *err) {
  if (cb->broken) return tm_error_nomem(err);
  size_t n = cb->n_children;
  bool lists = cb->type.id != TM_TYPE_STRUCT;
  if (lists) TM_TRY(ensure_offsets(cb, err));
  col_private *p = tm_calloc(1, sizeof *p);
  int rc = TM_OK;
  if (p) {
    p->children = tm_calloc(n, sizeof *p->children);
    p->child_ptrs = tm_calloc(n, sizeof *p->child_ptrs);
  }
  if (!p || !p->children || !p->child_ptrs) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  for (size_t k = 0; k < n; k++) {
    if (cb->type.id == TM_TYPE_STRUCT && cb->children[k].length != cb->length) {
      rc = tm_error_set(err, TM_EINVALID, "struct field '%s' has %lld values, expected %lld",
                        cb->type.nested->name[k], (long long)cb->children[k].length,
                        (long long)cb->length);
      goto fail;
    }
    rc = tm_colbuilder_finish(&cb->children[k], &p->children[k], err);
    if (rc < 0) goto fail;
    p->child_ptrs[k] = &p->children[k];
  }
  if (cb->null_count > 0) p->owned[0] = tm_buf_take(&cb->validity, NULL);
  else tm_buf_clear(&cb->validity);
  if (lists) p->owned[1] = tm_buf_take(&cb->values, NULL);
  if ((cb->null_count > 0 && !p->owned[0]) || (lists && !p->owned[1])) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  for (int i = 0; i < 2; i++) p->buffers[i] = p->owned[i];
  memset(out, 0, sizeof *out);
  out->length = cb->length;
  out->null_count = cb->null_count;
  out->n_buffers = lists ? 2 : 1;
  out->buffers = p->buffers;
  out->n_children = (int64_t)n;
  out->children = p->child_ptrs;
  out->release = release_column;
  out->private_data = p;
  cb->length = 0;
  cb->null_count = 0;
  tm_buf_clear(&cb->validity);
  tm_buf_clear(&cb->values);
  return TM_OK;
fail:
  if (p) {
    for (size_t k = 0; p->children && k < n; k++)
      if (p->children[k].release) p->children[k].release(&p->children[k]);
    for (int i = 0; i < 3; i++) tm_free(p->owned[i]);
    tm_free(p->children);
    tm_free(p->child_ptrs);
    tm_free(p);
  }
  return rc;
}

int tm_colbuilder_finish(tm_colbuilder *cb, struct ArrowArray *out, tm_error *err) {
  if (tm_type_is_nested(&cb->type)) return finish_nested(cb, out, err);
  col_private *p = tm_calloc(1, sizeof *p);
  if (!p) return tm_error_nomem(err);
  if (tm_type_is_var(&cb->type)) {
    int rc = ensure_offsets(cb, err);
    if (rc < 0) {
      tm_free(p);
      return rc;
    }
  }
  size_t n_buffers = tm_type_is_var(&cb->type) ? 3 : 2;
  if (cb->null_count > 0) p->owned[0] = tm_buf_take(&cb->validity, NULL);
  else tm_buf_clear(&cb->validity);
  p->owned[1] = tm_buf_take(&cb->values, NULL);
  if (n_buffers == 3) p->owned[2] = tm_buf_take(&cb->data, NULL);
  if ((cb->null_count > 0 && !p->owned[0]) || !p->owned[1] || (n_buffers == 3 && !p->owned[2])) {
    for (int i = 0; i < 3; i++) tm_free(p->owned[i]);
    tm_free(p);
    return tm_error_nomem(err);
  }
  for (int i = 0; i < 3; i++) p->buffers[i] = p->owned[i];
  memset(out, 0, sizeof *out);
  out->length = cb->length;
  out->null_count = cb->null_count;
  out->offset = 0;
  out->n_buffers = (int64_t)n_buffers;
  out->buffers = p->buffers;
  out->release = release_column;
  out->private_data = p;
  tm_colbuilder_reset(cb);
  return TM_OK;
}

int tm_batch_builder_init(tm_batch_builder *bb, const tm_schema *schema, tm_error *err) {
  memset(bb, 0, sizeof *bb);
  tm_schema_init(&bb->schema);
  TM_TRY(tm_schema_copy(&bb->schema, schema, err));
  bb->cols = tm_calloc(schema->n_cols ? schema->n_cols : 1, sizeof *bb->cols);
  if (!bb->cols) {
    tm_schema_dispose(&bb->schema);
    return tm_error_nomem(err);
  }
  for (size_t i = 0; i < schema->n_cols; i++)
    tm_colbuilder_init(&bb->cols[i], schema->cols[i].type, 0);
  return TM_OK;
}

void tm_batch_builder_dispose(tm_batch_builder *bb) {
  if (bb->cols)
    for (size_t i = 0; i < bb->schema.n_cols; i++) tm_colbuilder_dispose(&bb->cols[i]);
  tm_free(bb->cols);
  tm_schema_dispose(&bb->schema);
  memset(bb, 0, sizeof *bb);
}

int64_t tm_batch_builder_rows(const tm_batch_builder *bb) {
  return bb->schema.n_cols ? bb->cols[0].length : 0;
}

int tm_batch_from_arrays(tm_batch *out, const tm_schema *schema, struct ArrowArray *cols,
                         int64_t n_rows, tm_error *err) {
  size_t n = schema->n_cols;
  int rc = TM_OK;
  struct_private *p = tm_calloc(1, sizeof *p);
  if (p) {
    p->children = tm_calloc(n ? n : 1, sizeof *p->children);
    p->child_ptrs = tm_calloc(n ? n : 1, sizeof *p->child_ptrs);
  }
  tm_batch_init(out);
  if (!p || !p->children || !p->child_ptrs) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  TM_CHECK(tm_schema_copy(&out->schema, schema, err));
  for (size_t i = 0; i < n; i++) {
    if (cols[i].length != n_rows) {
      rc = tm_error_set(err, TM_EINVALID, "column '%s' has %lld rows, batch has %lld",
                        schema->cols[i].name, (long long)cols[i].length, (long long)n_rows);
      goto fail;
    }
  }
  for (size_t i = 0; i < n; i++) {
    p->children[i] = cols[i];
    memset(&cols[i], 0, sizeof cols[i]);
    p->child_ptrs[i] = &p->children[i];
  }
  out->array.length = n_rows;
  out->array.null_count = 0;
  out->array.offset = 0;
  out->array.n_buffers = 1;
  out->array.buffers = p->buffers;
  out->array.n_children = (int64_t)n;
  out->array.children = p->child_ptrs;
  out->array.release = release_struct;
  out->array.private_data = p;
  out->n_rows = n_rows;
  return TM_OK;
done:
fail:
  for (size_t i = 0; i < n; i++)
    if (cols[i].release) cols[i].release(&cols[i]);
  if (p) {
    tm_free(p->children);
    tm_free(p->child_ptrs);
    tm_free(p);
  }
  tm_batch_release(out);
  return rc;
}

int tm_batch_builder_finish(tm_batch_builder *bb, tm_batch *out, tm_error *err) {
  size_t n = bb->schema.n_cols;
  int64_t rows = tm_batch_builder_rows(bb);
  for (size_t i = 0; i < n; i++)
    if (bb->cols[i].length != rows)
      return tm_error_set(err, TM_EINVALID, "column '%s' has %lld rows, expected %lld",
                          bb->schema.cols[i].name, (long long)bb->cols[i].length,
                          (long long)rows);
  struct ArrowArray *arrays = tm_calloc(n ? n : 1, sizeof *arrays);
  if (!arrays) return tm_error_nomem(err);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) rc = tm_colbuilder_finish(&bb->cols[i], &arrays[i], err);
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, &bb->schema, arrays, rows, err);
  } else {
    for (size_t i = 0; i < n; i++)
      if (arrays[i].release) arrays[i].release(&arrays[i]);
  }
  tm_free(arrays);
  return rc;
}

int tm_batch_take_column(tm_batch *b, size_t i, struct ArrowArray *out, tm_error *err) {
  if (!b->array.release || i >= (size_t)b->array.n_children)
    return tm_error_set(err, TM_EINVALID, "no column %zu to take", i);
  struct ArrowArray *child = b->array.children[i];
  if (!child->release) return tm_error_set(err, TM_EINVALID, "column %zu was already taken", i);
  *out = *child;
  child->release = NULL; /* release_struct skips released children */
  return TM_OK;
}

int tm_array_make_constant(tm_type t, const tm_value *v, int64_t n, struct ArrowArray *out,
                           tm_error *err) {
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, t, 0);
  int rc = tm_colbuilder_reserve(&cb, n, tm_type_is_var(&t) && v && !v->is_null ? v->v.s.len * (size_t)n : 0, err);
  for (int64_t k = 0; k < n && rc == TM_OK; k++)
    rc = (!v || v->is_null) ? tm_colbuilder_append_null(&cb, err) : tm_colbuilder_append_value(&cb, v, err);
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  return rc;
}

int tm_array_make_nulls(tm_type t, int64_t n, struct ArrowArray *out, tm_error *err) {
  return tm_array_make_constant(t, NULL, n, out, err);
}

int tm_batch_filter(const tm_batch *in, const uint8_t *keep, tm_batch *out, tm_error *err) {
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, &in->schema, err));
  int rc = TM_OK;
  for (size_t c = 0; c < in->schema.n_cols && rc == TM_OK; c++) {
    tm_colview v = tm_batch_col(in, c);
    int64_t i = 0;
    while (i < in->n_rows && rc == TM_OK) {
      if (!tm_bit_get(keep, i)) {
        i++;
        continue;
      }
      int64_t j = i;
      while (j < in->n_rows && tm_bit_get(keep, j)) j++;
      rc = tm_colbuilder_append_range(&bb.cols[c], &v, i, j - i, err);
      i = j;
    }
  }
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  return rc;
}

int tm_batch_project(const tm_batch *in, const size_t *idx, size_t n, tm_batch *out,
                     tm_error *err) {
  tm_schema schema;
  tm_schema_init(&schema);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    if (idx[i] >= in->schema.n_cols) {
      rc = tm_error_set(err, TM_EINVALID, "projection index out of range");
      break;
    }
    const tm_column *c = &in->schema.cols[idx[i]];
    rc = tm_schema_add(&schema, c->name, c->type, c->nullable, c->field_id, err);
  }
  tm_batch_builder bb;
  memset(&bb, 0, sizeof bb);
  if (rc == TM_OK) rc = tm_batch_builder_init(&bb, &schema, err);
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    tm_colview v = tm_batch_col(in, idx[i]);
    rc = tm_colbuilder_append_range(&bb.cols[i], &v, 0, in->n_rows, err);
  }
  if (rc == TM_OK && n == 0) {
    /* A zero-column batch still carries its row count. */
    tm_batch_init(out);
    out->n_rows = in->n_rows;
    rc = tm_batch_from_arrays(out, &schema, NULL, in->n_rows, err);
  } else if (rc == TM_OK) {
    rc = tm_batch_builder_finish(&bb, out, err);
  }
  if (bb.cols) tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&schema);
  return rc;
}

/* ---- time values -------------------------------------------------------- */

bool tm_value_instant(const tm_type *t, tm_time_format f, const tm_value *v, tm_instant *out) {
  if (v->is_null) return false;
  switch (t->id) {
    case TM_TYPE_TIMESTAMP: *out = tm_instant_from_units(v->v.i, tm_unit_per_second(t->unit)); return true;
    case TM_TYPE_DATE32: *out = (tm_instant){v->v.i * TM_SEC_PER_DAY, 0}; return true;
    case TM_TYPE_UTF8: {
      bool zone;
      return tm_time_parse(v->v.s.ptr, v->v.s.len, &out->sec, &out->nsec, &zone) == TM_OK;
    }
    default: break;
  }
  if (!tm_type_is_integer(t)) return false;
  int64_t x = t->id >= TM_TYPE_UINT8 && t->id <= TM_TYPE_UINT64
                  ? (v->v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v->v.u)
                  : v->v.i;
  switch (f) {
    case TM_TIME_FORMAT_UNIX_MILLIS: *out = tm_instant_from_units(x, 1000); return true;
    case TM_TIME_FORMAT_UNIX_NANOS: *out = tm_instant_from_units(x, 1000000000); return true;
    default: *out = (tm_instant){x, 0}; return true;
  }
}
