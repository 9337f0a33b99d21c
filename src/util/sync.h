/*
 * sync.h - condition variables on the monotonic clock (util layer).
 *
 * Every timed wait in tidemark measures its deadline on CLOCK_MONOTONIC, so
 * that a wall-clock step (NTP, a changed date) neither cuts a wait short nor
 * stretches it. A condition variable waited on with tm_cond_wait_ns must be
 * initialised with tm_cond_init_monotonic.
 */
#ifndef TM_UTIL_SYNC_H
#define TM_UTIL_SYNC_H

#include <pthread.h>
#include <stdint.h>

/** pthread_cond_init with the monotonic clock. */
void tm_cond_init_monotonic(pthread_cond_t *cv);
/**
 * Waits on cv (mu held) for a signal or at most wait_ns nanoseconds (<= 0:
 * returns at once). Returns pthread_cond_timedwait's result (0 or ETIMEDOUT);
 * callers look at their predicate again either way.
 */
int tm_cond_wait_ns(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t wait_ns);

#endif
