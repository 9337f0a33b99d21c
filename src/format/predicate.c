/*
 * predicate.c - column-bound predicates and statistics pruning (format
 * layer). See predicate.h.
 */
#include "format/predicate.h"

#include <math.h>

#include "format/arrow/render.h"
#include "util/alloc.h"

int tm_value_copy(tm_value *dst, const tm_value *src, char **owned_out, tm_error *err) {
  *dst = *src;
  *owned_out = NULL;
  bool bytes = src->type == TM_TYPE_UTF8 || src->type == TM_TYPE_BINARY ||
               src->type == TM_TYPE_FIXED_BINARY;
  if (!bytes || src->is_null) return TM_OK;
  char *p = tm_malloc(src->v.s.len + 1);
  if (!p) return tm_error_nomem(err);
  if (src->v.s.len) memcpy(p, src->v.s.ptr, src->v.s.len);
  p[src->v.s.len] = '\0';
  dst->v.s.ptr = p;
  *owned_out = p;
  return TM_OK;
}

static bool is_bytes(tm_type_id id) {
  return id == TM_TYPE_UTF8 || id == TM_TYPE_BINARY || id == TM_TYPE_FIXED_BINARY;
}

static void free_value_payload(tm_value *v) {
  if (!v->is_null && is_bytes(v->type)) tm_free((void *)v->v.s.ptr);
}

static void dispose_term(tm_pred_term *t) {
  tm_free(t->column);
  if (t->op <= TM_PRED_GE) free_value_payload(&t->value);
  for (size_t i = 0; i < t->n_in; i++) free_value_payload(&t->in_values[i]);
  tm_free(t->in_values);
}

void tm_predicate_init(tm_predicate *p) { memset(p, 0, sizeof *p); }

void tm_predicate_dispose(tm_predicate *p) {
  for (size_t i = 0; i < p->n_terms; i++) dispose_term(&p->terms[i]);
  tm_free(p->terms);
  memset(p, 0, sizeof *p);
}

static int new_term(tm_predicate *p, const char *column, tm_type type, tm_pred_op op,
                    tm_pred_term **out, tm_error *err) {
  if (p->n_terms == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 4;
    tm_pred_term *terms = tm_reallocarray(p->terms, cap, sizeof *terms);
    if (!terms) return tm_error_nomem(err);
    p->terms = terms;
    p->cap = cap;
  }
  tm_pred_term *t = &p->terms[p->n_terms];
  memset(t, 0, sizeof *t);
  t->column = tm_strdup(column);
  if (!t->column) return tm_error_nomem(err);
  t->type = type;
  t->op = op;
  p->n_terms++;
  *out = t;
  return TM_OK;
}

int tm_predicate_add(tm_predicate *p, const char *column, tm_type type, tm_pred_op op,
                     const tm_value *value, tm_error *err) {
  if (op > TM_PRED_GE) return tm_error_set(err, TM_EINVALID, "bad operator for a bound");
  tm_pred_term *t;
  TM_TRY(new_term(p, column, type, op, &t, err));
  char *owned;
  int rc = tm_value_copy(&t->value, value, &owned, err);
  if (rc < 0) {
    t->value.is_null = true; /* nothing to free */
    return rc;
  }
  return TM_OK;
}

int tm_predicate_add_null(tm_predicate *p, const char *column, tm_type type, bool is_null,
                          tm_error *err) {
  tm_pred_term *t;
  TM_TRY(new_term(p, column, type, is_null ? TM_PRED_IS_NULL : TM_PRED_IS_NOT_NULL, &t, err));
  return TM_OK;
}

int tm_predicate_add_in(tm_predicate *p, const char *column, tm_type type,
                        const tm_value *values, size_t n, tm_error *err) {
  tm_pred_term *t;
  TM_TRY(new_term(p, column, type, TM_PRED_IN, &t, err));
  t->in_values = tm_calloc(n ? n : 1, sizeof *t->in_values);
  if (!t->in_values) return tm_error_nomem(err);
  for (size_t i = 0; i < n; i++) {
    char *owned;
    TM_TRY(tm_value_copy(&t->in_values[i], &values[i], &owned, err));
    t->n_in++;
  }
  return TM_OK;
}

int tm_predicate_add_term(tm_predicate *dst, const tm_pred_term *t, tm_error *err) {
  if (t->op <= TM_PRED_GE) return tm_predicate_add(dst, t->column, t->type, t->op, &t->value, err);
  if (t->op == TM_PRED_IN)
    return tm_predicate_add_in(dst, t->column, t->type, t->in_values, t->n_in, err);
  return tm_predicate_add_null(dst, t->column, t->type, t->op == TM_PRED_IS_NULL, err);
}

int tm_predicate_copy(tm_predicate *dst, const tm_predicate *src, tm_error *err) {
  for (size_t i = 0; i < src->n_terms; i++) TM_TRY(tm_predicate_add_term(dst, &src->terms[i], err));
  return TM_OK;
}

bool tm_predicate_has_column(const tm_predicate *p, const char *column) {
  for (size_t i = 0; i < p->n_terms; i++)
    if (strcmp(p->terms[i].column, column) == 0) return true;
  return false;
}

int tm_predicate_describe(const tm_predicate *p, tm_buf *out, tm_error *err) {
  static const char *ops[] = {"=", "<", "<=", ">", ">="};
  for (size_t i = 0; i < p->n_terms; i++) {
    const tm_pred_term *t = &p->terms[i];
    if (i) TM_TRY(tm_buf_puts(out, " AND ", err));
    TM_TRY(tm_buf_puts(out, t->column, err));
    if (t->op == TM_PRED_IS_NULL) {
      TM_TRY(tm_buf_puts(out, " IS NULL", err));
    } else if (t->op == TM_PRED_IS_NOT_NULL) {
      TM_TRY(tm_buf_puts(out, " IS NOT NULL", err));
    } else if (t->op == TM_PRED_IN) {
      TM_TRY(tm_buf_puts(out, " IN (", err));
      for (size_t k = 0; k < t->n_in; k++) {
        if (k) TM_TRY(tm_buf_puts(out, ", ", err));
        if (t->in_values[k].is_null) TM_TRY(tm_buf_puts(out, "NULL", err));
        else TM_TRY(tm_value_render(out, &t->type, &t->in_values[k], err));
      }
      TM_TRY(tm_buf_putc(out, ')', err));
    } else {
      TM_TRY(tm_buf_printf(out, err, " %s ", ops[t->op]));
      if (t->value.is_null) TM_TRY(tm_buf_puts(out, "NULL", err));
      else TM_TRY(tm_value_render(out, &t->type, &t->value, err));
    }
  }
  return TM_OK;
}

static bool all_null(const tm_col_stats *s) {
  return s->null_count >= 0 && s->row_count >= 0 && s->null_count == s->row_count;
}

static bool may_equal(const tm_value *v, const tm_col_stats *s) {
  if (v->is_null) return false; /* col = NULL is never true */
  if (s->has_min && tm_value_cmp(v, &s->min) < 0) return false;
  if (s->has_max && tm_value_cmp(v, &s->max) > 0) return false;
  return true;
}

static bool is_nan_value(const tm_value *v) {
  return (v->type == TM_TYPE_FLOAT32 || v->type == TM_TYPE_FLOAT64) && isnan(v->v.f);
}

/*
 * One rule for NaN, DuckDB's (and PostgreSQL's), since the predicates prune
 * rows that DuckDB then filters again: NaN equals NaN and is greater than
 * every other number, the order of tm_value_cmp. term_holds is that order.
 */
static bool holds(tm_pred_op op, const tm_value *cell, const tm_value *lit) {
  int c = tm_value_cmp(cell, lit);
  switch (op) {
    case TM_PRED_EQ: return c == 0;
    case TM_PRED_LT: return c < 0;
    case TM_PRED_LE: return c <= 0;
    case TM_PRED_GT: return c > 0;
    case TM_PRED_GE: return c >= 0;
    default: return false;
  }
}

static bool term_holds(const tm_pred_term *t, const tm_value *cell) {
  if (t->op == TM_PRED_IS_NULL) return cell->is_null;
  if (t->op == TM_PRED_IS_NOT_NULL) return !cell->is_null;
  if (cell->is_null) return false;
  if (t->op == TM_PRED_IN) {
    for (size_t i = 0; i < t->n_in; i++)
      if (!t->in_values[i].is_null && tm_value_cmp(cell, &t->in_values[i]) == 0) return true;
    return false;
  }
  if (t->value.is_null) return false;
  return holds(t->op, cell, &t->value);
}

bool tm_pred_term_may_match(const tm_pred_term *t, const tm_col_stats *s) {
  switch (t->op) {
    case TM_PRED_IS_NULL: return s->null_count != 0;
    case TM_PRED_IS_NOT_NULL: return !all_null(s);
    default: break;
  }
  if (all_null(s)) return false;
  /*
   * Statistics leave NaN out (Parquet and Iceberg writers drop it from their
   * bounds), so a float unit may hold a NaN whatever its bounds say: a term
   * that NaN satisfies prunes nothing there. A NaN bound proves nothing.
   */
  if (t->type.id == TM_TYPE_FLOAT32 || t->type.id == TM_TYPE_FLOAT64) {
    tm_value nan = {.type = t->type.id, .v.f = NAN};
    if (term_holds(t, &nan)) return true;
    if ((s->has_min && is_nan_value(&s->min)) || (s->has_max && is_nan_value(&s->max))) return true;
  }
  if (t->op == TM_PRED_IN) {
    for (size_t i = 0; i < t->n_in; i++)
      if (may_equal(&t->in_values[i], s)) return true;
    return false;
  }
  const tm_value *v = &t->value;
  if (v->is_null) return false;
  switch (t->op) {
    case TM_PRED_EQ: return may_equal(v, s);
    case TM_PRED_LT: return !s->has_min || tm_value_cmp(&s->min, v) < 0;
    case TM_PRED_LE: return !s->has_min || tm_value_cmp(&s->min, v) <= 0;
    case TM_PRED_GT: return !s->has_max || tm_value_cmp(&s->max, v) > 0;
    case TM_PRED_GE: return !s->has_max || tm_value_cmp(&s->max, v) >= 0;
    default: return true;
  }
}

int tm_predicate_eval(const tm_predicate *p, const tm_batch *b, uint8_t *keep_out,
                      int64_t *n_kept_out, tm_error *err) {
  int64_t n = b->n_rows;
  for (int64_t i = 0; i < n; i++) tm_bit_set(keep_out, i);
  for (size_t k = 0; k < p->n_terms; k++) {
    const tm_pred_term *t = &p->terms[k];
    int idx = tm_schema_find(&b->schema, t->column);
    if (idx < 0) return tm_error_set(err, TM_ENOTFOUND, "filter column '%s' is not in the data", t->column);
    tm_colview col = tm_batch_col(b, (size_t)idx);
    if (col.type.id != t->type.id)
      return tm_error_set(err, TM_EINVALID, "filter on '%s' has the wrong type", t->column);
    for (int64_t i = 0; i < n; i++) {
      if (!tm_bit_get(keep_out, i)) continue;
      tm_value cell;
      tm_colview_get(&col, i, &cell);
      if (!term_holds(t, &cell)) tm_bit_clear(keep_out, i);
    }
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) kept += tm_bit_get(keep_out, i);
  if (n_kept_out) *n_kept_out = kept;
  return TM_OK;
}
