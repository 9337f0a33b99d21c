/*
 * sync.c - condition variables on the monotonic clock (util layer). See sync.h.
 */
#include "util/sync.h"

#include <errno.h>
#include <time.h>

void tm_cond_init_monotonic(pthread_cond_t *cv) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(cv, &ca);
  pthread_condattr_destroy(&ca);
}

int tm_cond_wait_ns(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t wait_ns) {
  if (wait_ns <= 0) return ETIMEDOUT;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(wait_ns / 1000000000);
  ts.tv_nsec += (long)(wait_ns % 1000000000);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return pthread_cond_timedwait(cv, mu, &ts);
}
