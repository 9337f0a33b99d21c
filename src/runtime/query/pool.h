/*
 * pool.h - the query slots: a fixed set of worker threads that run queries,
 * and a bounded queue of queries waiting for one (runtime layer; SPEC D4,
 * C1; docs/RELIABILITY.md "Hostile clients").
 *
 * Queries do not run on the HTTP connection threads: a connection hands its
 * query to the pool and waits for the answer with a deadline, so that it can
 * answer at the time limit even when DuckDB cannot be interrupted (a single
 * scalar call over huge values), and so that the number of queries burning
 * CPU at once is the number of slots whatever the number of clients. A job
 * that finds the queue full is refused at once (the caller answers 503).
 *
 * A job is a function and its argument; the pool does not own the argument.
 * The function runs on a worker thread exactly once, unless the job is taken
 * back (tm_qpool_cancel) while still queued.
 */
#ifndef TM_RUNTIME_QUERY_POOL_H
#define TM_RUNTIME_QUERY_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

typedef struct tm_qpool tm_qpool;

typedef struct tm_qpool_job {
  void (*run)(struct tm_qpool_job *job); /* runs on a worker */
  struct tm_qpool_job *next;             /* the pool's queue link */
} tm_qpool_job;

/** Starts `slots` workers (>= 1) with room for `queue` waiting jobs (>= 0). */
int tm_qpool_new(tm_qpool **out, size_t slots, size_t queue, tm_error *err) TM_WARN_UNUSED;

/**
 * Queues job (borrowed until it has run or was cancelled). TM_EUNAVAILABLE
 * naming the slots when the queue is full or the pool is stopping.
 */
int tm_qpool_submit(tm_qpool *p, tm_qpool_job *job, tm_error *err) TM_WARN_UNUSED;

/** Takes a still-queued job back: true if it was queued (it will not run). */
bool tm_qpool_cancel(tm_qpool *p, tm_qpool_job *job);

/** Running and queued jobs now (for tests and the busy message). */
void tm_qpool_load(tm_qpool *p, size_t *running, size_t *queued);
size_t tm_qpool_slots(const tm_qpool *p);

/**
 * Refuses new jobs, lets the workers finish what is queued and running, and
 * joins them; then frees. NULL is a no-op.
 */
void tm_qpool_free(tm_qpool *p);

#endif
