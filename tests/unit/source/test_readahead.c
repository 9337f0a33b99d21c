/*
 * Unit tests for the read-ahead scan (source/readahead.c; SPEC D1 by way of
 * the refresh it feeds, docs/REFRESH.md "Speed"): the caller sees the same
 * batches, in the same order, with the same stats and the same first error
 * as from the scan it wraps; freeing it early stops the worker and leaks
 * nothing; while an allocation failure is set up it does not wrap at all.
 */
#include <string.h>
#include <unistd.h>

#include "source/source.h"
#include "tm_test.h"
#include "util/alloc.h"

/* A scan of n batches of `rows` int64 values counting up from 0; batch
 * fail_at (1-based; 0: none) fails instead with a message naming it. */
typedef struct fake_scan {
  tm_scan base;
  int n, rows, fail_at, made;
  int slow_us;           /* sleep before each batch: the caller waits on the worker */
  bool *freed;           /* set when freed */
} fake_scan;

static int fake_next(tm_scan *s, tm_batch *out, tm_error *err) {
  fake_scan *f = (fake_scan *)s;
  if (f->slow_us) usleep((useconds_t)f->slow_us);
  if (f->made == f->n) return TM_ITEROVER;
  if (f->made + 1 == f->fail_at) return tm_error_set(err, TM_ECORRUPT, "batch %d is damaged", f->fail_at);
  tm_schema sch;
  tm_schema_init(&sch);
  int rc = tm_schema_add(&sch, "v", tm_type_of(TM_TYPE_INT64), false, -1, err);
  tm_batch_builder bb;
  if (rc == TM_OK) rc = tm_batch_builder_init(&bb, &sch, err);
  tm_schema_dispose(&sch);
  if (rc < 0) return rc;
  for (int i = 0; rc == TM_OK && i < f->rows; i++)
    rc = tm_colbuilder_append_int(&bb.cols[0], (int64_t)f->made * f->rows + i, err);
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  if (rc < 0) return rc;
  f->made++;
  f->base.stats.rows_read += f->rows;
  f->base.stats.row_groups_read++;
  return TM_OK;
}

static void fake_free(tm_scan *s) {
  fake_scan *f = (fake_scan *)s;
  if (f->freed) *f->freed = true;
  tm_free(f);
}

static const tm_scan_vtable k_fake_vt = {fake_next, fake_free};

static tm_scan *fake(int n, int rows, int fail_at, bool *freed) {
  fake_scan *f = tm_calloc(1, sizeof *f);
  TM_ASSERT(f);
  f->base.vt = &k_fake_vt;
  f->n = n;
  f->rows = rows;
  f->fail_at = fail_at;
  f->freed = freed;
  return &f->base;
}

/* Reads s to its end; returns the batches seen, checks values and stats. */
static int drain(tm_scan *s, int rows, int *rc_out, tm_error *err) {
  int seen = 0;
  int rc;
  tm_batch b;
  tm_batch_init(&b);
  while ((rc = tm_scan_next(s, &b, err)) == TM_OK) {
    TM_ASSERT_INT_EQ(b.n_rows, rows);
    tm_colview v = tm_batch_col(&b, 0);
    const int64_t *x = v.values;
    for (int i = 0; i < rows; i++) TM_ASSERT_INT_EQ(x[i], (int64_t)seen * rows + i);
    seen++;
    /* The stats are the inner scan's as of this batch, not of the ones decoded ahead. */
    TM_ASSERT_INT_EQ(tm_scan_get_stats(s)->row_groups_read, seen);
    TM_ASSERT_INT_EQ(tm_scan_get_stats(s)->rows_read, (int64_t)seen * rows);
    tm_batch_release(&b);
  }
  *rc_out = rc;
  return seen;
}

TM_TEST(readahead_same_batches_order_and_stats) {
  tm_error err;
  tm_error_init(&err);
  bool freed = false;
  tm_scan *s = fake(50, 1000, 0, &freed);
  tm_scan *inner = s;
  TM_ASSERT_OK(tm_scan_readahead(&s, &err), &err);
  TM_ASSERT(s != inner); /* wrapped: no allocation failure is set up */
  int rc;
  TM_ASSERT_INT_EQ(drain(s, 1000, &rc, &err), 50);
  TM_ASSERT_INT_EQ(rc, TM_ITEROVER);
  tm_batch b;
  tm_batch_init(&b);
  TM_ASSERT_INT_EQ(tm_scan_next(s, &b, &err), TM_ITEROVER); /* the end stays the end */
  TM_ASSERT_INT_EQ(tm_scan_get_stats(s)->rows_read, 50000);
  TM_ASSERT(!freed);
  tm_scan_free(s);
  TM_ASSERT(freed);
}

TM_TEST(readahead_error_comes_after_the_batches_before_it) {
  tm_error err;
  tm_error_init(&err);
  tm_scan *s = fake(10, 7, 4, NULL);
  TM_ASSERT_OK(tm_scan_readahead(&s, &err), &err);
  int rc;
  TM_ASSERT_INT_EQ(drain(s, 7, &rc, &err), 3);
  TM_ASSERT_INT_EQ(rc, TM_ECORRUPT);
  TM_ASSERT_STR_EQ(err.message, "batch 4 is damaged");
  tm_batch b;
  tm_batch_init(&b);
  tm_error_init(&err);
  TM_ASSERT_INT_EQ(tm_scan_next(s, &b, &err), TM_ECORRUPT); /* and stays */
  TM_ASSERT_STR_EQ(err.message, "batch 4 is damaged");
  tm_scan_free(s);
  /* An error on the very first batch. */
  s = fake(10, 7, 1, NULL);
  TM_ASSERT_OK(tm_scan_readahead(&s, &err), &err);
  TM_ASSERT_INT_EQ(drain(s, 7, &rc, &err), 0);
  TM_ASSERT_INT_EQ(rc, TM_ECORRUPT);
  tm_scan_free(s);
}

TM_TEST(readahead_freed_early_stops_the_worker) {
  tm_error err;
  tm_error_init(&err);
  int64_t live = tm_alloc_live();
  /* Freed before reading anything, and after one batch of many (the worker
   * is blocked on a full queue, or mid-batch on a slow one). */
  for (int k = 0; k < 3; k++) {
    bool freed = false;
    tm_scan *s = fake(1000, 100, 0, &freed);
    if (k == 2) ((fake_scan *)s)->slow_us = 2000;
    TM_ASSERT_OK(tm_scan_readahead(&s, &err), &err);
    if (k > 0) {
      tm_batch b;
      tm_batch_init(&b);
      TM_ASSERT_OK(tm_scan_next(s, &b, &err), &err);
      TM_ASSERT_INT_EQ(b.n_rows, 100);
      tm_batch_release(&b);
      if (k == 1) usleep(20000); /* lets the worker fill the queue */
    }
    tm_scan_free(s);
    TM_ASSERT(freed);
    TM_ASSERT_INT_EQ(tm_alloc_live(), live);
  }
}

TM_TEST(readahead_off_while_an_allocation_failure_is_set_up) {
  tm_error err;
  tm_error_init(&err);
  tm_alloc_fail_at(1000000000, false);
  TM_ASSERT(tm_alloc_fault_armed());
  tm_scan *s = fake(3, 5, 0, NULL);
  tm_scan *inner = s;
  TM_ASSERT_OK(tm_scan_readahead(&s, &err), &err);
  TM_ASSERT(s == inner);
  int rc;
  TM_ASSERT_INT_EQ(drain(s, 5, &rc, &err), 3);
  TM_ASSERT_INT_EQ(rc, TM_ITEROVER);
  tm_scan_free(s);
  tm_alloc_fail_at(0, false);
  TM_ASSERT(!tm_alloc_fault_armed());
}
