/*
 * Unit tests for the query slots (runtime/query/pool.h; issue 22, SPEC D4):
 * no more jobs run at once than there are slots, the queue limit refuses the
 * next job with TM_EUNAVAILABLE, a queued job can be taken back and then
 * never runs, and freeing the pool runs what was queued before it returns.
 */
#include <pthread.h>
#include <unistd.h>

#include "runtime/query/pool.h"
#include "tm_test.h"

typedef struct gate_job {
  tm_qpool_job base;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  bool *open;       /* the jobs wait until the test opens the gate */
  int *running, *max_running, *ran;
} gate_job;

static void gate_run(tm_qpool_job *base) {
  gate_job *j = (gate_job *)base;
  pthread_mutex_lock(j->mu);
  (*j->running)++;
  if (*j->running > *j->max_running) *j->max_running = *j->running;
  pthread_cond_broadcast(j->cv);
  while (!*j->open) pthread_cond_wait(j->cv, j->mu);
  (*j->running)--;
  (*j->ran)++;
  pthread_mutex_unlock(j->mu);
}

TM_TEST(qpool_slots_queue_and_cancel) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool open = false;
  int running = 0, max_running = 0, ran = 0;
  tm_error err;
  tm_error_init(&err);
  tm_qpool *p = NULL;
  TM_ASSERT_OK(tm_qpool_new(&p, 2, 3, &err), &err);
  TM_ASSERT_INT_EQ((int)tm_qpool_slots(p), 2);
  gate_job jobs[6];
  for (int i = 0; i < 6; i++)
    jobs[i] = (gate_job){{gate_run, NULL}, &mu, &cv, &open, &running, &max_running, &ran};
  /* 2 run, 3 wait: the sixth is refused. */
  for (int i = 0; i < 5; i++) TM_ASSERT_OK(tm_qpool_submit(p, &jobs[i].base, &err), &err);
  pthread_mutex_lock(&mu);
  while (running < 2) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  size_t r = 0, q = 0;
  tm_qpool_load(p, &r, &q);
  TM_ASSERT_INT_EQ((int)r, 2);
  TM_ASSERT_INT_EQ((int)q, 3);
  TM_ASSERT_RC(tm_qpool_submit(p, &jobs[5].base, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "every query slot is busy (2 running, 3 waiting, queue limit 3)");
  /* A queued job taken back does not run; a running one cannot be taken back. */
  TM_ASSERT(tm_qpool_cancel(p, &jobs[4].base));
  TM_ASSERT(!tm_qpool_cancel(p, &jobs[4].base));
  TM_ASSERT(!tm_qpool_cancel(p, &jobs[0].base));
  /* Room again: the sixth is taken. */
  TM_ASSERT_OK(tm_qpool_submit(p, &jobs[5].base, &err), &err);
  pthread_mutex_lock(&mu);
  open = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  tm_qpool_free(p); /* runs what was queued, then joins */
  TM_ASSERT_INT_EQ(ran, 5);
  TM_ASSERT_INT_EQ(max_running, 2);
}

TM_TEST(qpool_zero_queue_takes_one_job_per_idle_slot) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  bool open = false;
  int running = 0, max_running = 0, ran = 0;
  tm_error err;
  tm_error_init(&err);
  tm_qpool *p = NULL;
  TM_ASSERT_OK(tm_qpool_new(&p, 1, 0, &err), &err);
  gate_job a = {{gate_run, NULL}, &mu, &cv, &open, &running, &max_running, &ran};
  gate_job b = a;
  TM_ASSERT_OK(tm_qpool_submit(p, &a.base, &err), &err);
  TM_ASSERT_RC(tm_qpool_submit(p, &b.base, &err), TM_EUNAVAILABLE);
  pthread_mutex_lock(&mu);
  open = true;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  tm_qpool_free(p);
  TM_ASSERT_INT_EQ(ran, 1);
}
