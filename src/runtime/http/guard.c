/*
 * guard.c - request deadlines and room for new clients (runtime layer).
 * See guard.h.
 */
#include "runtime/http/guard.h"

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"
#include "util/sync.h"

#define TICK_MS 100
#define EVICT_AFTER_NS ((int64_t)1000000000) /* a connection cut for room has waited this long */

typedef struct gconn {
  struct gconn *prev, *next;
  int fd;
  int64_t since_ns;  /* the current request's clock started */
  bool waiting;      /* its request has not fully arrived */
  bool cut;          /* shut down by the guard */
} gconn;

struct tm_http_guard {
  char *name;        /* owned */
  unsigned soft_cap;
  int64_t timeout_ns;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* stop */
  gconn *head;       /* open connections */
  unsigned n_open;
  uint64_t n_cut, n_cut_logged;
  bool stop;
  pthread_t thread;
  bool started;
};

static void cut(tm_http_guard *g, gconn *c) {
  shutdown(c->fd, SHUT_RDWR);
  c->cut = true;
  g->n_cut++;
}

static void *reaper(void *arg) {
  tm_http_guard *g = arg;
  pthread_mutex_lock(&g->mu);
  int64_t last_log = tm_monotonic_ns();
  while (!g->stop) {
    tm_cond_wait_ns(&g->cv, &g->mu, TICK_MS * (int64_t)1000000);
    int64_t now = tm_monotonic_ns();
    for (gconn *c = g->head; c; c = c->next)
      if (c->waiting && !c->cut && now - c->since_ns > g->timeout_ns) cut(g, c);
    /* One line at most every 10 s, so that an attack does not flood the log. */
    if (g->n_cut != g->n_cut_logged && now - last_log > 10 * (int64_t)1000000000) {
      tm_log(TM_LOG_WARN, NULL,
             "%s: closed %llu connections whose request did not arrive within %lld ms or that "
             "waited longest while %u were open (slow or idle clients)",
             g->name, (unsigned long long)(g->n_cut - g->n_cut_logged),
             (long long)(g->timeout_ns / 1000000), g->n_open);
      g->n_cut_logged = g->n_cut;
      last_log = now;
    }
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

int tm_http_guard_new(tm_http_guard **out, const char *name, unsigned soft_cap,
                      int64_t request_timeout_ms, tm_error *err) {
  *out = NULL;
  tm_http_guard *g = tm_calloc(1, sizeof *g);
  if (!g || !(g->name = tm_strdup(name))) {
    tm_free(g);
    return tm_error_nomem(err);
  }
  g->soft_cap = soft_cap ? soft_cap : 1;
  g->timeout_ns = request_timeout_ms * 1000000;
  pthread_mutex_init(&g->mu, NULL);
  tm_cond_init_monotonic(&g->cv);
  if (pthread_create(&g->thread, NULL, reaper, g) != 0) {
    tm_http_guard_free(g);
    return tm_error_set(err, TM_ERROR, "%s: cannot start the connection guard", name);
  }
  g->started = true;
  *out = g;
  return TM_OK;
}

void tm_http_guard_free(tm_http_guard *g) {
  if (!g) return;
  if (g->started) {
    pthread_mutex_lock(&g->mu);
    g->stop = true;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
  }
  for (gconn *c = g->head, *n; c; c = n) {
    n = c->next;
    tm_free(c);
  }
  pthread_cond_destroy(&g->cv);
  pthread_mutex_destroy(&g->mu);
  tm_free(g->name);
  tm_free(g);
}

void tm_http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  tm_http_guard *g = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    gconn *c = fi ? tm_calloc(1, sizeof *c) : NULL;
    *socket_context = c;
    if (!c) return; /* not guarded: libmicrohttpd's idle timeout still applies */
    c->fd = fi->connect_fd;
    c->since_ns = tm_monotonic_ns();
    c->waiting = true;
    pthread_mutex_lock(&g->mu);
    if (g->n_open >= g->soft_cap) {
      gconn *oldest = NULL;
      for (gconn *o = g->head; o; o = o->next)
        if (o->waiting && !o->cut && (!oldest || o->since_ns < oldest->since_ns)) oldest = o;
      /* Not one that just opened: it is likely a client about to send (a probe). */
      if (oldest && c->since_ns - oldest->since_ns > EVICT_AFTER_NS) cut(g, oldest);
    }
    c->next = g->head;
    if (g->head) g->head->prev = c;
    g->head = c;
    g->n_open++;
    pthread_mutex_unlock(&g->mu);
    return;
  }
  gconn *c = *socket_context;
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  if (c->prev) c->prev->next = c->next;
  else g->head = c->next;
  if (c->next) c->next->prev = c->prev;
  g->n_open--;
  pthread_mutex_unlock(&g->mu);
  tm_free(c);
  *socket_context = NULL;
}

static gconn *conn_entry(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *i = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

void tm_http_guard_request_in(tm_http_guard *g, struct MHD_Connection *conn) {
  gconn *c = conn_entry(conn);
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  c->waiting = false;
  pthread_mutex_unlock(&g->mu);
}

void tm_http_guard_request_done(tm_http_guard *g, struct MHD_Connection *conn) {
  gconn *c = conn_entry(conn);
  if (!c) return;
  pthread_mutex_lock(&g->mu);
  c->waiting = true;
  c->since_ns = tm_monotonic_ns();
  pthread_mutex_unlock(&g->mu);
}

uint64_t tm_http_guard_cut_count(tm_http_guard *g) {
  pthread_mutex_lock(&g->mu);
  uint64_t n = g->n_cut;
  pthread_mutex_unlock(&g->mu);
  return n;
}
