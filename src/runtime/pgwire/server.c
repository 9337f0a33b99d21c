/*
 * server.c - the PostgreSQL wire protocol listener (runtime layer, pgwire;
 * see pgwire.h): binds the address, accepts connections on its own thread
 * and runs each on a thread of its own (conn.c), at most max_connections at
 * once. Past the cap, a few more threads only answer SQLSTATE 53300 (after
 * the startup packet, as PostgreSQL does, so that clients show the message);
 * beyond those a connection is closed at once.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "runtime/http/http.h"
#include "runtime/pgwire/pgwire_int.h"
#include "util/alloc.h"
#include "util/log.h"

#define REFUSING_MAX 8 /* threads that only answer "too many clients" */

static void *conn_thread(void *arg) {
  tm_pg_conn *c = arg;
  tm_pg_server *srv = c->srv;
  tm_pg__conn_run(c);
  pthread_mutex_lock(&srv->mu);
  for (tm_pg_conn **pp = &srv->conns; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  close(c->fd);
  srv->n_conns--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  tm_free(c);
  return NULL;
}

static void peer_name(int fd, char *out, size_t cap) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  snprintf(out, cap, "?");
  if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0) return;
  char host[48] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  }
  snprintf(out, cap, "%s:%d", host, port);
}

/* Starts a connection's thread, or closes fd when even the refusing threads are busy. */
static void admit(tm_pg_server *srv, int fd) {
  tm_pg_conn *c = tm_calloc(1, sizeof *c);
  pthread_mutex_lock(&srv->mu);
  int cap = srv->o.max_connections;
  bool over = srv->n_conns >= cap;
  if (!c || srv->n_conns >= cap + REFUSING_MAX || srv->stopping) {
    pthread_mutex_unlock(&srv->mu);
    if (c && !srv->stopping)
      tm_log(TM_LOG_WARN, NULL, "pgwire: %d connections open; closing a new one at once",
             srv->n_conns);
    close(fd);
    tm_free(c);
    return;
  }
  c->srv = srv;
  c->fd = fd;
  c->refuse = over;
  c->pid = ++srv->next_pid;
  if (RAND_bytes((unsigned char *)&c->secret, sizeof c->secret) != 1) c->secret = 0;
  peer_name(fd, c->peer, sizeof c->peer);
  c->next = srv->conns;
  srv->conns = c;
  srv->n_conns++;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int prc = pthread_create(&t, &attr, conn_thread, c);
  pthread_attr_destroy(&attr);
  if (prc != 0) {
    srv->conns = c->next;
    srv->n_conns--;
    pthread_mutex_unlock(&srv->mu);
    close(fd);
    tm_free(c);
    return;
  }
  if (over)
    tm_log(TM_LOG_WARN, NULL, "pgwire: %s refused: %d connections open (the cap)", c->peer, cap);
  pthread_mutex_unlock(&srv->mu);
}

static void *accept_loop(void *arg) {
  tm_pg_server *srv = arg;
  for (;;) {
    pthread_mutex_lock(&srv->mu);
    bool stop = srv->stopping;
    pthread_mutex_unlock(&srv->mu);
    if (stop) break;
    struct pollfd pfd = {srv->fd, POLLIN, 0};
    int r = poll(&pfd, 1, 200);
    if (r <= 0) continue;
    int fd = accept(srv->fd, NULL, NULL);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) usleep(50000);
      continue;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    admit(srv, fd);
  }
  return NULL;
}

int tm_pg_server_start(tm_pg_server **out, struct tm_runtime *rt, const tm_pg_options *o,
                       tm_error *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  bool loopback;
  TM_TRY(tm_http_parse_addr(o->addr, &ss, &len, &loopback, err));
  tm_pg_server *srv = tm_calloc(1, sizeof *srv);
  if (!srv) return tm_error_nomem(err);
  srv->rt = rt;
  srv->o = *o;
  srv->o.addr = NULL;
  if (srv->o.max_connections <= 0) srv->o.max_connections = TM_PG_MAX_CONNECTIONS;
  srv->fd = -1;
  pthread_mutex_init(&srv->mu, NULL);
  pthread_cond_init(&srv->cv, NULL);
  int rc = TM_OK;
  srv->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (srv->fd < 0) rc = tm_error_set(err, TM_EIO, "PostgreSQL wire protocol: socket: %s", strerror(errno));
  if (rc == TM_OK) (void)setsockopt(srv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (rc == TM_OK && (bind(srv->fd, (struct sockaddr *)&ss, len) != 0 || listen(srv->fd, 128) != 0))
    rc = tm_error_set(err, TM_EIO, "PostgreSQL wire protocol: cannot listen on %s: %s", o->addr,
                      strerror(errno));
  if (rc == TM_OK) {
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    if (getsockname(srv->fd, (struct sockaddr *)&bound, &bl) == 0)
      srv->port = ntohs(bound.ss_family == AF_INET ? ((struct sockaddr_in *)&bound)->sin_port
                                                   : ((struct sockaddr_in6 *)&bound)->sin6_port);
    if (pthread_create(&srv->thread, NULL, accept_loop, srv) != 0)
      rc = tm_error_set(err, TM_ERROR, "PostgreSQL wire protocol: cannot start a thread");
    else srv->thread_started = true;
  }
  if (rc != TM_OK) {
    tm_pg_server_free(srv);
    return rc;
  }
  tm_log(TM_LOG_INFO, NULL, "PostgreSQL wire protocol on %s (port %d), %s, at most %d connections",
         o->addr, srv->port,
         rt->n_api_keys ? tm_pg_auth_name(srv->o.auth) : "no password (no API key configured)",
         srv->o.max_connections);
  if (!loopback && !rt->n_api_keys)
    tm_log(TM_LOG_WARN, NULL, "the PostgreSQL wire protocol listens beyond loopback without an "
           "API key: anyone who reaches %s can query", o->addr);
  *out = srv;
  return TM_OK;
}

int tm_pg_server_port(const tm_pg_server *s) { return s ? s->port : 0; }

void tm_pg_server_quiesce(tm_pg_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_mutex_unlock(&s->mu);
}

void tm_pg_server_free(tm_pg_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_mutex_unlock(&s->mu);
  if (s->thread_started) pthread_join(s->thread, NULL);
  if (s->fd >= 0) close(s->fd);
  /* Wake every connection: its statement is interrupted, its reads and writes fail. */
  pthread_mutex_lock(&s->mu);
  for (tm_pg_conn *c = s->conns; c; c = c->next) {
    if (c->live) tm_sql_session_interrupt(c->live);
    shutdown(c->fd, SHUT_RDWR);
  }
  while (s->n_conns > 0) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  tm_free(s);
}
