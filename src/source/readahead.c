/*
 * readahead.c - a scan that decodes its next batch on another thread
 * (source layer). See source.h, tm_scan_readahead.
 *
 * A refresh is a pipeline of two halves of about the same weight: the
 * source decodes a batch (reading, decompressing, decoding Parquet pages),
 * the engine stores it (DuckDB compresses row groups). One thread does them
 * one after the other; with read-ahead a worker thread runs the inner scan
 * while the caller stores the previous batch, so the two halves overlap on
 * two cores (docs/REFRESH.md "Speed").
 *
 * The worker is the only thread that touches the inner scan until it has
 * finished. It hands over whole batches (each owns its buffers) through a
 * queue of at most TM_READAHEAD_DEPTH, so memory stays bounded by a few
 * batches: the one the caller holds, the queued ones and the one being
 * decoded. Its first error, or the end, is reported after the batches that
 * came before it, in order, so the caller sees what it would have seen
 * without read-ahead.
 */
#include <pthread.h>
#include <string.h>

#include "source/source.h"
#include "util/alloc.h"

#define TM_READAHEAD_DEPTH 2

typedef struct readahead {
  tm_scan base;         /* base.stats: as of the last batch handed out */
  tm_scan *inner;       /* owned; the worker's alone until `done` */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;    /* the queue changed, or stop was asked */
  /* Guarded by mu: */
  tm_batch queue[TM_READAHEAD_DEPTH];
  tm_scan_stats queue_stats[TM_READAHEAD_DEPTH]; /* inner stats after each batch */
  int head, count;
  bool done;            /* the worker has returned; end_rc and end_err are set */
  bool stop;            /* the caller is freeing the scan */
  int end_rc;           /* TM_ITEROVER or the inner scan's error */
  tm_error end_err;
} readahead;

static void *worker(void *arg) {
  readahead *r = arg;
  tm_error err;
  tm_error_init(&err);
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while (r->count == TM_READAHEAD_DEPTH && !r->stop) pthread_cond_wait(&r->cv, &r->mu);
    bool stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    tm_batch b;
    tm_batch_init(&b);
    int rc = tm_scan_next(r->inner, &b, &err);
    pthread_mutex_lock(&r->mu);
    if (rc == TM_OK) {
      int at = (r->head + r->count) % TM_READAHEAD_DEPTH;
      tm_batch_move(&r->queue[at], &b);
      r->queue_stats[at] = *tm_scan_get_stats(r->inner);
      r->count++;
    } else {
      r->end_rc = rc;
      r->end_err = err;
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (rc != TM_OK) break;
  }
  pthread_mutex_lock(&r->mu);
  if (r->end_rc == TM_OK) r->end_rc = TM_ITEROVER; /* stopped early */
  r->done = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

static int ra_next(tm_scan *s, tm_batch *out, tm_error *err) {
  readahead *r = (readahead *)s;
  pthread_mutex_lock(&r->mu);
  while (r->count == 0 && !r->done) pthread_cond_wait(&r->cv, &r->mu);
  int rc;
  if (r->count > 0) {
    tm_batch_move(out, &r->queue[r->head]);
    r->base.stats = r->queue_stats[r->head];
    r->head = (r->head + 1) % TM_READAHEAD_DEPTH;
    r->count--;
    pthread_cond_broadcast(&r->cv);
    rc = TM_OK;
  } else {
    /* done: the worker no longer touches the inner scan. */
    r->base.stats = *tm_scan_get_stats(r->inner);
    rc = r->end_rc;
    if (rc != TM_ITEROVER && err) *err = r->end_err;
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

static void ra_free(tm_scan *s) {
  readahead *r = (readahead *)s;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  /* Waits for the batch being decoded, if any: at most one batch's work. */
  pthread_join(r->thread, NULL);
  for (int i = 0; i < TM_READAHEAD_DEPTH; i++) tm_batch_release(&r->queue[i]);
  tm_scan_free(r->inner);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  tm_free(r);
}

static const tm_scan_vtable k_readahead_vt = {ra_next, ra_free};

int tm_scan_readahead(tm_scan **scan, tm_error *err) {
  /*
   * The allocation-failure sweeps fail the N-th allocation and need the
   * same order of allocations on every run; a second thread would make it
   * vary. They cover the sequential path, which is the same code.
   */
  if (tm_alloc_fault_armed()) return TM_OK;
  readahead *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  r->base.vt = &k_readahead_vt;
  r->base.stats = (*scan)->stats;
  r->inner = *scan;
  for (int i = 0; i < TM_READAHEAD_DEPTH; i++) tm_batch_init(&r->queue[i]);
  tm_error_init(&r->end_err);
  if (pthread_mutex_init(&r->mu, NULL) != 0) {
    tm_free(r);
    return TM_OK; /* no read-ahead: the scan stays as it was */
  }
  if (pthread_cond_init(&r->cv, NULL) != 0) {
    pthread_mutex_destroy(&r->mu);
    tm_free(r);
    return TM_OK;
  }
  if (pthread_create(&r->thread, NULL, worker, r) != 0) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    tm_free(r);
    return TM_OK;
  }
  *scan = &r->base;
  return TM_OK;
}
