/*
 * dedup.h - multiset de-duplication of a re-read window (refresh layer;
 * SPEC A3, A5).
 *
 * An append refresh with an overlap (or a day-granular bound) re-reads rows
 * that may already be stored. Each stored row of the window cancels at most
 * one equal incoming row (whole-row equality, NULL equals NULL), so genuine
 * duplicate rows in the source are kept.
 *
 * Rows are encoded into a canonical byte form; equality is on those bytes
 * (a 64-bit hash buckets them, and every hash match is confirmed by
 * comparing the bytes, so a collision can never drop a row). Memory is
 * bounded by a budget: while the stored window fits, incoming batches are
 * filtered as they stream; past the budget both sides are partitioned by
 * hash into temporary files and matched one partition at a time (a grace
 * hash join), and the rows that survive come back from tm_dedup_finish.
 * Cost is proportional to the rows of the window, not of the table.
 *
 * Usage: add every stored row of the window (tm_dedup_add_stored), then
 * pass incoming batches through tm_dedup_filter, then drain tm_dedup_next.
 */
#ifndef TM_REFRESH_DEDUP_H
#define TM_REFRESH_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"

typedef struct tm_dedup tm_dedup;

typedef struct tm_dedup_stats {
  int64_t stored_rows;    /* rows of the window already stored */
  int64_t incoming_rows;  /* rows offered */
  int64_t removed_rows;   /* incoming rows cancelled by a stored row */
  int64_t collisions;     /* hash matches whose bytes differed */
  bool spilled;           /* the budget was passed */
  size_t peak_bytes;      /* peak memory held */
} tm_dedup_stats;

/**
 * A new de-duplicator for rows of schema (copied). budget_bytes caps its
 * memory (0: 256 MiB); temp_dir is where spill files go (NULL: TMPDIR or
 * /tmp). Release with tm_dedup_free.
 */
int tm_dedup_new(tm_dedup **out, const tm_schema *schema, size_t budget_bytes,
                 const char *temp_dir, tm_error *err) TM_WARN_UNUSED;
void tm_dedup_free(tm_dedup *d);

/** Adds the rows of a stored batch (same columns, same order as schema). */
int tm_dedup_add_stored(tm_dedup *d, const tm_batch *stored, tm_error *err) TM_WARN_UNUSED;

/**
 * Filters an incoming batch. In memory mode, *out receives the surviving
 * rows (possibly zero). After a spill, incoming rows are parked in partition
 * files, *out is left empty (n_rows 0, released) and the survivors come from
 * tm_dedup_next.
 */
int tm_dedup_filter(tm_dedup *d, const tm_batch *incoming, tm_batch *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * After the last tm_dedup_filter: the next batch of surviving parked rows,
 * or TM_ITEROVER when there are none left (always at once in memory mode).
 */
int tm_dedup_next(tm_dedup *d, tm_batch *out, tm_error *err) TM_WARN_UNUSED;

const tm_dedup_stats *tm_dedup_get_stats(const tm_dedup *d);

/** Test hook: keeps only the hash bits in mask (0 makes every row collide). */
void tm_dedup__set_hash_mask(tm_dedup *d, uint64_t mask);

#endif
