/*
 * timebound.h - the time column: formats, high-water marks and bounds
 * (refresh layer; SPEC A1-A6).
 *
 * A dataset's time column has a type (from the source) and a time_format
 * (from the config, or derived from the type). This module checks that they
 * fit (A1), turns cells into comparable instants (A4), and turns "the
 * high-water mark less the overlap" into a lower bound in the column's own
 * unit (A2, A3), floored to the day for day-granular columns (A5) and for a
 * day-granular partition column (A6).
 *
 * Bounds are kept in the column's native unit (seconds, ms, us, ns or days
 * for integers, timestamps and dates) so that comparisons are exact; for
 * ISO8601 strings the bound is an instant and each cell is parsed.
 */
#ifndef TM_REFRESH_TIMEBOUND_H
#define TM_REFRESH_TIMEBOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/predicate.h"
#include "util/time.h"

/** How a time column is read. */
typedef struct tm_time_column {
  const char *name;     /* view; the column name */
  tm_type type;         /* the column's type in the data */
  tm_time_format format;/* effective format (never UNSET) */
  bool day_granular;    /* date format or DATE type (A5) */
} tm_time_column;

/**
 * Resolves the effective format for a column of type `type` given the
 * configured format (UNSET derives it from the type) and checks that they fit
 * (A1): string -> ISO8601, integer -> unix_*, timestamp without zone ->
 * timestamp, with zone -> timestamptz, date -> date. TM_EINVALID names the
 * column, its type and the format.
 */
int tm_time_column_init(tm_time_column *out, const char *name, tm_type type,
                        tm_time_format configured, tm_error *err) TM_WARN_UNUSED;

/**
 * The cell as an instant. Returns false for NULL and for strings that do not
 * parse (A4: such rows are never above the mark).
 */
bool tm_time_cell_instant(const tm_time_column *tc, const tm_colview *col, int64_t row,
                          tm_instant *out);
/** A lower bound on the time column. */
typedef struct tm_time_bound {
  bool active;         /* false: no bound (read everything) */
  bool inclusive;      /* >= instead of > */
  tm_instant instant;  /* the bound as an instant */
  int64_t native;      /* the bound in the column's unit (not for strings) */
  bool has_native;
} tm_time_bound;

/**
 * The bound for an append refresh (A2, A3, A5): from the high-water mark hwm
 * (an instant) and the overlap (ms, 0 when none): strict `> hwm` without an
 * overlap; `>= hwm - overlap` with one; for day-granular columns inclusive
 * `>= floor_day(hwm - overlap)`.
 */
tm_time_bound tm_time_bound_for_append(const tm_time_column *tc, tm_instant hwm,
                                       int64_t overlap_ms);
/** Whether reading with this bound re-reads stored rows (needs A3 de-duplication). */
bool tm_time_bound_rereads(const tm_time_bound *b, int64_t overlap_ms);

/**
 * Adds the bound as a predicate term on the column when the column's type
 * allows exact pruning (timestamps, dates, integers); strings get no term
 * (they are filtered row by row). No-op for an inactive bound.
 */
int tm_time_bound_to_predicate(const tm_time_column *tc, const tm_time_bound *b,
                               tm_predicate *pred, tm_error *err) TM_WARN_UNUSED;

/**
 * The same bound on a coarser partition column (A6): floored to the start of
 * the partition granularity (day for date-typed/date-format columns), always
 * inclusive, so the partition holding new rows is never excluded.
 */
int tm_time_bound_to_partition_predicate(const tm_time_column *part, const tm_time_bound *b,
                                         tm_predicate *pred, tm_error *err) TM_WARN_UNUSED;

/**
 * Sets bit i of keep (n_rows bits, caller-zeroed) for rows whose time value
 * satisfies the bound. Rows with NULL or unparseable times are dropped and
 * counted in *n_null_out (A4). An inactive bound keeps every row.
 */
int tm_time_bound_filter(const tm_time_column *tc, const tm_time_bound *b, const tm_batch *batch,
                         uint8_t *keep, int64_t *n_kept_out, int64_t *n_null_out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * The maximum instant of the time column over a batch (for tests and for
 * sources that cannot give min/max); false when every value is NULL.
 */
bool tm_time_batch_max(const tm_time_column *tc, const tm_batch *batch, tm_instant *out);

#endif
