/*
 * filter.c - selecting the rows of a segment that satisfy a predicate
 * (engine layer). See columnar.h.
 *
 * Zone maps decide first whether a segment can hold a match at all. Inside
 * a segment, rows become a selection vector: deleted rows go first, then each
 * term narrows the vector with a tight loop over the column's raw values
 * (fixed-width compares, or a per-code table for dictionary strings). The
 * semantics are those of tm_predicate_eval: a comparison with NULL or NaN is
 * false.
 */
#include <string.h>

#include "engine/columnar/columnar.h"
#include "util/alloc.h"

bool tm_cfilter_may_match(const tm_cseg *seg, const tm_cfilter_term *terms, size_t n_terms) {
  for (size_t i = 0; i < n_terms; i++)
    if (!tm_pred_term_may_match(terms[i].term, &seg->cols[terms[i].col].zone)) return false;
  return true;
}

static bool set_bit(uint32_t r, void *payload) {
  uint8_t *bits = payload;
  bits[r >> 3] |= (uint8_t)(1u << (r & 7));
  return true;
}

void tm_cdel_to_bits(const tm_cdel *d, uint8_t *bits) { roaring_iterate(d->bm, set_bit, bits); }

static bool is_nan(const tm_value *v) {
  return (v->type == TM_TYPE_FLOAT32 || v->type == TM_TYPE_FLOAT64) && v->v.f != v->v.f;
}

/* The term on one non-NULL value. */
static bool holds(const tm_pred_term *t, const tm_value *cell) {
  if (t->op == TM_PRED_IN) {
    for (size_t i = 0; i < t->n_in; i++)
      if (!t->in_values[i].is_null && !is_nan(&t->in_values[i]) &&
          tm_value_cmp(cell, &t->in_values[i]) == 0)
        return true;
    return false;
  }
  if (t->value.is_null || is_nan(cell) || is_nan(&t->value)) return false;
  int c = tm_value_cmp(cell, &t->value);
  switch (t->op) {
    case TM_PRED_EQ: return c == 0;
    case TM_PRED_LT: return c < 0;
    case TM_PRED_LE: return c <= 0;
    case TM_PRED_GT: return c > 0;
    case TM_PRED_GE: return c >= 0;
    default: return false;
  }
}

#define RANGE_LOOP(T, get)                                   \
  do {                                                       \
    const T *v_ = c->values;                                 \
    for (size_t i = 0; i < n; i++) {                         \
      uint32_t r = sel[i];                                   \
      T x = v_[r];                                           \
      (void)get;                                             \
      bool ok;                                               \
      switch (t->op) {                                       \
        case TM_PRED_EQ: ok = x == lit; break;               \
        case TM_PRED_LT: ok = x < lit; break;                \
        case TM_PRED_LE: ok = x <= lit; break;               \
        case TM_PRED_GT: ok = x > lit; break;                \
        default: ok = x >= lit; break;                       \
      }                                                      \
      if (ok && (!valid || ((valid[r >> 3] >> (r & 7)) & 1))) sel[k++] = r; \
    }                                                        \
  } while (0)

/* Narrows sel (n entries) to the rows where term t holds on column c. */
static size_t apply_term(const tm_ccol *c, const tm_pred_term *t, uint32_t *sel, size_t n) {
  const uint8_t *valid = c->validity;
  size_t k = 0;
  if (t->op == TM_PRED_IS_NULL || t->op == TM_PRED_IS_NOT_NULL) {
    bool want_null = t->op == TM_PRED_IS_NULL;
    for (size_t i = 0; i < n; i++) {
      uint32_t r = sel[i];
      bool is_null = valid && !((valid[r >> 3] >> (r & 7)) & 1);
      if (is_null == want_null) sel[k++] = r;
    }
    return k;
  }
  bool cmp = t->op <= TM_PRED_GE;
  if (cmp && t->value.is_null) return 0;
  tm_type_id id = c->type.id;
  if (cmp && c->enc == TM_CENC_FIXED) {
    if (id == TM_TYPE_INT64 || id == TM_TYPE_TIMESTAMP || id == TM_TYPE_TIME64) {
      int64_t lit = t->value.v.i;
      RANGE_LOOP(int64_t, 0);
      return k;
    }
    if (id == TM_TYPE_INT32 || id == TM_TYPE_DATE32) {
      int64_t lit = t->value.v.i;
      const int32_t *v_ = c->values;
      for (size_t i = 0; i < n; i++) {
        uint32_t r = sel[i];
        int64_t x = v_[r];
        bool ok = t->op == TM_PRED_EQ   ? x == lit
                  : t->op == TM_PRED_LT ? x < lit
                  : t->op == TM_PRED_LE ? x <= lit
                  : t->op == TM_PRED_GT ? x > lit
                                        : x >= lit;
        if (ok && (!valid || ((valid[r >> 3] >> (r & 7)) & 1))) sel[k++] = r;
      }
      return k;
    }
    if (id == TM_TYPE_FLOAT64 && t->value.v.f == t->value.v.f) {
      double lit = t->value.v.f;
      RANGE_LOOP(double, 0); /* NaN compares false everywhere */
      return k;
    }
  }
  if (c->enc == TM_CENC_DICT) {
    /* Evaluate once per dictionary entry, then per row by code. */
    uint8_t *match = tm_calloc(c->dict_len ? c->dict_len : 1, 1);
    if (!match) goto generic;
    for (uint32_t e = 0; e < c->dict_len; e++) {
      tm_value v;
      v.type = id;
      v.is_null = false;
      v.v.s = tm_sv((const char *)c->dict_data + c->dict_off[e],
                    (size_t)(c->dict_off[e + 1] - c->dict_off[e]));
      match[e] = holds(t, &v);
    }
    for (size_t i = 0; i < n; i++) {
      uint32_t r = sel[i];
      if (match[tm_ccol_code(c, r)] && (!valid || ((valid[r >> 3] >> (r & 7)) & 1))) sel[k++] = r;
    }
    tm_free(match);
    return k;
  }
generic:
  k = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t r = sel[i];
    tm_value v;
    tm_ccol_get(c, r, &v);
    if (!v.is_null && holds(t, &v)) sel[k++] = r;
  }
  return k;
}

size_t tm_cfilter_select(const tm_cseg *seg, const uint8_t *deleted, const tm_cfilter_term *terms,
                         size_t n_terms, int64_t from, int64_t to, uint32_t *sel) {
  size_t n = 0;
  if (deleted) {
    for (int64_t r = from; r < to; r++)
      if (!((deleted[r >> 3] >> (r & 7)) & 1)) sel[n++] = (uint32_t)r;
  } else {
    for (int64_t r = from; r < to; r++) sel[n++] = (uint32_t)r;
  }
  for (size_t i = 0; i < n_terms && n > 0; i++)
    n = apply_term(&seg->cols[terms[i].col], terms[i].term, sel, n);
  return n;
}
