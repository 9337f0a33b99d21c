/*
 * predicate.h - a conjunction of column bounds, and pruning by statistics
 * (format layer).
 *
 * The same predicate prunes at every level: Iceberg manifest summaries,
 * data-file bounds, Parquet row-group statistics and cayenne zone maps. A
 * term compares one column with literals that are already typed as the
 * column (a time bound on a timestamp(us) column is an int64 of
 * microseconds); the layer that builds the predicate does the conversion.
 *
 * Pruning is conservative: "may match" is true unless the statistics prove
 * that no row can satisfy the term. Evaluation on rows (tm_predicate_eval)
 * is exact and follows SQL as DuckDB has it: a comparison with NULL is not
 * true; NaN equals NaN and is greater than every other number (so
 * `x > 1e308` holds for a NaN x, `x = 'NaN'` for a NaN x). Statistics never
 * prune a float unit by a term that NaN satisfies, since writers leave NaN
 * out of their bounds.
 */
#ifndef TM_FORMAT_PREDICATE_H
#define TM_FORMAT_PREDICATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"

typedef enum tm_pred_op {
  TM_PRED_EQ,
  TM_PRED_LT,
  TM_PRED_LE,
  TM_PRED_GT,
  TM_PRED_GE,
  TM_PRED_IS_NULL,
  TM_PRED_IS_NOT_NULL,
  TM_PRED_IN
} tm_pred_op;

typedef struct tm_pred_term {
  char *column;        /* owned */
  tm_type type;        /* the column's type; literals are of this type */
  tm_pred_op op;
  tm_value value;      /* EQ..GE; string payloads owned by the term */
  tm_value *in_values; /* IN: owned array of n_in values (payloads owned) */
  size_t n_in;
} tm_pred_term;

typedef struct tm_predicate {
  tm_pred_term *terms; /* owned; all must hold (AND) */
  size_t n_terms;
  size_t cap;
} tm_predicate;

void tm_predicate_init(tm_predicate *p);
void tm_predicate_dispose(tm_predicate *p);
/** Adds `column op value` (value copied, including string payloads). */
int tm_predicate_add(tm_predicate *p, const char *column, tm_type type, tm_pred_op op,
                     const tm_value *value, tm_error *err) TM_WARN_UNUSED;
/** Adds `column IS [NOT] NULL`. */
int tm_predicate_add_null(tm_predicate *p, const char *column, tm_type type, bool is_null,
                          tm_error *err) TM_WARN_UNUSED;
/** Adds `column IN (values...)` (copied). */
int tm_predicate_add_in(tm_predicate *p, const char *column, tm_type type,
                        const tm_value *values, size_t n, tm_error *err) TM_WARN_UNUSED;
int tm_predicate_copy(tm_predicate *dst, const tm_predicate *src, tm_error *err)
    TM_WARN_UNUSED;
/** Appends a copy of one term (of another predicate). */
int tm_predicate_add_term(tm_predicate *dst, const tm_pred_term *t, tm_error *err)
    TM_WARN_UNUSED;
/** Terms on one column (indices into p->terms), for readers that prune per column. */
bool tm_predicate_has_column(const tm_predicate *p, const char *column);
/** Text for logs and errors: `ts >= 1764472093500000 AND kind IN (...)`. */
int tm_predicate_describe(const tm_predicate *p, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/*
 * Statistics of one column over a unit (row group, file, segment). Any part
 * may be unknown: has_min/has_max false, null_count < 0, row_count < 0.
 * min/max are values of the column's type (payloads are views).
 */
typedef struct tm_col_stats {
  bool has_min, has_max;
  tm_value min, max;
  int64_t null_count; /* -1: unknown */
  int64_t row_count;  /* -1: unknown */
} tm_col_stats;

/** False only when stats prove that no row of the unit satisfies term. */
bool tm_pred_term_may_match(const tm_pred_term *term, const tm_col_stats *stats);

/**
 * Evaluates the predicate on every row of b and sets bit i of keep_out
 * (n_rows bits, caller-allocated and zeroed) for rows that satisfy it.
 * Columns are found by name in b; a term on a column b lacks is an error.
 */
int tm_predicate_eval(const tm_predicate *p, const tm_batch *b, uint8_t *keep_out,
                      int64_t *n_kept_out, tm_error *err) TM_WARN_UNUSED;

/** Deep copy of a value (string payloads duplicated into *owned_out, tm_free). */
int tm_value_copy(tm_value *dst, const tm_value *src, char **owned_out, tm_error *err)
    TM_WARN_UNUSED;

#endif
