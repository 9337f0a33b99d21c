/*
 * pool.c - the query slots (runtime layer). See pool.h.
 */
#include "runtime/query/pool.h"

#include <pthread.h>

#include "util/alloc.h"

struct tm_qpool {
  pthread_mutex_t mu;
  pthread_cond_t cv;        /* a job was queued, or the pool stops */
  tm_qpool_job *head, *tail;
  size_t n_queued, queue_cap;
  size_t n_running;
  size_t n_workers;         /* started */
  size_t slots;
  bool stopping;
  pthread_t *workers;       /* owned, n_workers */
};

static void *worker(void *arg) {
  tm_qpool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->head && !p->stopping) pthread_cond_wait(&p->cv, &p->mu);
    tm_qpool_job *j = p->head;
    if (!j) break; /* stopping with nothing queued */
    p->head = j->next;
    if (!p->head) p->tail = NULL;
    p->n_queued--;
    p->n_running++;
    pthread_mutex_unlock(&p->mu);
    j->next = NULL;
    j->run(j);
    pthread_mutex_lock(&p->mu);
    p->n_running--;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int tm_qpool_new(tm_qpool **out, size_t slots, size_t queue, tm_error *err) {
  *out = NULL;
  if (slots == 0) slots = 1;
  tm_qpool *p = tm_calloc(1, sizeof *p);
  if (!p) return tm_error_nomem(err);
  p->workers = tm_calloc(slots, sizeof *p->workers);
  if (!p->workers) {
    tm_free(p);
    return tm_error_nomem(err);
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->slots = slots;
  p->queue_cap = queue;
  for (size_t i = 0; i < slots; i++) {
    if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
      tm_qpool_free(p);
      return tm_error_set(err, TM_ERROR, "cannot start query worker %zu of %zu", i + 1, slots);
    }
    p->n_workers++;
  }
  *out = p;
  return TM_OK;
}

int tm_qpool_submit(tm_qpool *p, tm_qpool_job *job, tm_error *err) {
  pthread_mutex_lock(&p->mu);
  if (p->stopping || p->n_running + p->n_queued >= p->slots + p->queue_cap) {
    size_t running = p->n_running, queued = p->n_queued;
    bool stopping = p->stopping;
    pthread_mutex_unlock(&p->mu);
    if (stopping) return tm_error_set(err, TM_EUNAVAILABLE, "the runtime is shutting down");
    return tm_error_set(err, TM_EUNAVAILABLE,
                        "every query slot is busy (%zu running, %zu waiting, queue limit %zu): "
                        "retry later",
                        running, queued, p->queue_cap);
  }
  job->next = NULL;
  if (p->tail) p->tail->next = job;
  else p->head = job;
  p->tail = job;
  p->n_queued++;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  return TM_OK;
}

bool tm_qpool_cancel(tm_qpool *p, tm_qpool_job *job) {
  bool found = false;
  pthread_mutex_lock(&p->mu);
  for (tm_qpool_job **at = &p->head, *prev = NULL; *at; prev = *at, at = &(*at)->next) {
    if (*at != job) continue;
    *at = job->next;
    if (p->tail == job) p->tail = prev;
    p->n_queued--;
    job->next = NULL;
    found = true;
    break;
  }
  pthread_mutex_unlock(&p->mu);
  return found;
}

void tm_qpool_load(tm_qpool *p, size_t *running, size_t *queued) {
  pthread_mutex_lock(&p->mu);
  *running = p->n_running;
  *queued = p->n_queued;
  pthread_mutex_unlock(&p->mu);
}

size_t tm_qpool_slots(const tm_qpool *p) { return p->slots; }

void tm_qpool_free(tm_qpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stopping = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (size_t i = 0; i < p->n_workers; i++) pthread_join(p->workers[i], NULL);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  tm_free(p->workers);
  tm_free(p);
}
