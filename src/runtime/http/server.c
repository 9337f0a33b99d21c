/*
 * server.c - the HTTP server on libmicrohttpd: routing, API keys, body
 * limits, replies and request metrics (runtime layer). See http.h.
 *
 * One request goes through on_access three ways: the first call (headers
 * read) checks the key, matches the route and checks the announced body
 * size, and may answer at once (401, 404, 405, 413); the calls with body bytes append
 * them to a capped buffer; the last call runs the handler and queues its
 * reply. A body larger than the limit without a Content-Length (chunked)
 * closes the connection, because libmicrohttpd cannot queue a response in
 * the middle of an upload.
 */
#include "runtime/http/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "runtime/http/guard.h"
#include "runtime/status.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#define TM_HTTP_THREAD_STACK ((size_t)1 << 20) /* per connection thread */

struct tm_http_server {
  tm_http_server_options o;    /* routes, app and metric borrowed */
  char *name;                  /* owned */
  char **api_keys;             /* owned copies of o.api_keys (s->o.api_keys points at them) */
  struct MHD_Daemon *daemon;
  tm_http_guard *guard;        /* owned: request deadlines, room for new clients */
  int port;
  char endpoint[INET6_ADDRSTRLEN + 16]; /* "127.0.0.1:8090", "[::1]:8090" */
  bool quiesced;
  pthread_mutex_t log_mu;      /* the rate limit of libmicrohttpd's messages */
  int64_t log_window_ns;
  unsigned log_lines, log_dropped;
};

#define MHD_LOG_WINDOW_NS ((int64_t)10 * 1000000000) /* at most MHD_LOG_LINES per window */
#define MHD_LOG_LINES 5

/* ---- addresses ----------------------------------------------------------------------------- */

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

int tm_http_parse_addr(const char *addr, struct sockaddr_storage *out, socklen_t *len_out,
                       bool *loopback, tm_error *err) {
  char host[256];
  const char *port_s;
  size_t n = addr ? strlen(addr) : 0;
  if (n == 0 || n >= sizeof host)
    return tm_error_set(err, TM_EINVALID, "bad address '%s' (expected HOST:PORT or PORT)",
                        addr ? addr : "");
  const char *colon = strrchr(addr, ':');
  if (addr[0] == '[') {
    const char *close = strchr(addr, ']');
    if (!close || close[1] != ':')
      return tm_error_set(err, TM_EINVALID, "bad address '%s' (expected [IPV6]:PORT)", addr);
    memcpy(host, addr + 1, (size_t)(close - addr - 1));
    host[close - addr - 1] = '\0';
    port_s = close + 2;
  } else if (!colon) {
    snprintf(host, sizeof host, "127.0.0.1");
    port_s = addr;
  } else {
    if (strchr(addr, ':') != colon)
      return tm_error_set(err, TM_EINVALID, "bad address '%s' (write an IPv6 host as [HOST]:PORT)",
                          addr);
    if (colon == addr) snprintf(host, sizeof host, "127.0.0.1");
    else {
      memcpy(host, addr, (size_t)(colon - addr));
      host[colon - addr] = '\0';
    }
    port_s = colon + 1;
  }
  int64_t port;
  if (tm_parse_int64(port_s, strlen(port_s), &port) != TM_OK || port < 0 || port > 65535)
    return tm_error_set(err, TM_EINVALID, "bad port in address '%s'", addr);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int g = getaddrinfo(host, NULL, &hints, &res);
  if (g != 0 || !res)
    return tm_error_set(err, TM_EINVALID, "bad address '%s': %s", addr, gai_strerror(g));
  memset(out, 0, sizeof *out);
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len_out = res->ai_addrlen;
  freeaddrinfo(res);
  if (out->ss_family == AF_INET) ((struct sockaddr_in *)out)->sin_port = htons((uint16_t)port);
  else if (out->ss_family == AF_INET6) ((struct sockaddr_in6 *)out)->sin6_port = htons((uint16_t)port);
  else return tm_error_set(err, TM_EINVALID, "bad address '%s': not IPv4 or IPv6", addr);
  *loopback = is_loopback(out);
  return TM_OK;
}

/* ---- replies ------------------------------------------------------------------------------ */

void tm_http_reply_json(tm_http_reply *r, unsigned status, json_t *j) {
  r->status = status;
  r->content_type = "application/json";
  tm_buf_clear(&r->body);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  tm_error err;
  if (!text || tm_buf_puts(&r->body, text, &err) != TM_OK) {
    tm_buf_clear(&r->body);
    r->status = 500;
    if (tm_buf_puts(&r->body, "{\"message\":\"out of memory\"}", &err) != TM_OK)
      tm_buf_clear(&r->body);
  }
  free(text); /* lint-ok: allocated by jansson */
}

void tm_http_reply_message(tm_http_reply *r, unsigned status, const char *fmt, ...) {
  char msg[TM_ERROR_MESSAGE_MAX + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *o = json_object();
  if (o && json_object_set_new(o, "message", tm_json_text(msg)) != 0) {
    json_decref(o);
    o = NULL;
  }
  tm_http_reply_json(r, status, o);
}

void tm_http_reply_text(tm_http_reply *r, unsigned status, const char *text) {
  r->status = status;
  r->content_type = "text/plain; charset=utf-8";
  tm_buf_clear(&r->body);
  tm_error err;
  if (tm_buf_puts(&r->body, text, &err) != TM_OK) r->status = 500;
}

bool tm_http_key_equal(const char *offered, size_t offered_len, const char *expected) {
  size_t n = strlen(expected);
  unsigned char diff = offered_len != n;
  for (size_t i = 0; i < n; i++) diff |= (unsigned char)(expected[i] ^ (i < offered_len ? offered[i] : 0));
  return diff == 0;
}

const char *tm_http_header(tm_http_request *req, const char *name) {
  if (req->conn) return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
  for (size_t i = 0; i < req->n_headers; i++)
    if (strcasecmp(req->headers[2 * i], name) == 0) return req->headers[2 * i + 1];
  return NULL;
}

/* ---- routing --------------------------------------------------------------------------------- */

/*
 * Matches path against pattern; a "{...}" segment matches one non-empty
 * segment, copied into param. Returns false on a mismatch or a parameter too
 * long for the buffer.
 */
static bool match(const char *pattern, const char *path, char *param, size_t cap) {
  const char *p = pattern, *s = path;
  while (*p && *s) {
    if (*p == '{') {
      const char *pe = strchr(p, '}');
      const char *se = strchr(s, '/');
      size_t n = se ? (size_t)(se - s) : strlen(s);
      if (!pe || n == 0 || n >= cap) return false;
      memcpy(param, s, n);
      param[n] = '\0';
      p = pe + 1;
      s += n;
      continue;
    }
    if (*p != *s) return false;
    p++;
    s++;
  }
  return *p == '\0' && *s == '\0';
}

/* The route for (method, path); *path_known says whether any route has the path. */
static const tm_http_route *find_route(const tm_http_server_options *o, const char *method,
                                       const char *path, char *param, bool *path_known,
                                       const char **allow) {
  *path_known = false;
  *allow = NULL;
  bool head = strcmp(method, "HEAD") == 0;
  for (size_t i = 0; i < o->n_routes; i++) {
    const tm_http_route *r = &o->routes[i];
    if (!match(r->pattern, path, param, TM_HTTP_PARAM_MAX)) continue;
    *path_known = true;
    *allow = strcmp(r->method, "GET") == 0 ? "GET, HEAD" : r->method;
    if (strcmp(r->method, method) == 0 || (head && strcmp(r->method, "GET") == 0)) return r;
  }
  return NULL;
}

static const char *method_label(const char *m) {
  static const char *const known[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(m, known[i]) == 0) return known[i];
  return "OTHER";
}

/* Whether the token t (n bytes) is one of the keys. */
static bool is_key(const tm_http_server_options *o, const char *t, size_t n) {
  bool found = false;
  for (size_t i = 0; i < o->n_api_keys; i++) found |= tm_http_key_equal(t, n, o->api_keys[i]);
  return found; /* every key compared, so the time says nothing of which matched */
}

/* Whether the request carries an API key (D4); no keys: none needed. */
static bool authorized(const tm_http_server_options *o, tm_http_request *req) {
  if (o->n_api_keys == 0) return true;
  const char *k = tm_http_header(req, "X-API-Key");
  if (k && is_key(o, k, strlen(k))) return true;
  const char *a = tm_http_header(req, "Authorization");
  if (a && strncasecmp(a, "Bearer ", 7) == 0) {
    const char *t = a + 7;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (is_key(o, t, n)) return true;
  }
  return false;
}

static void reply_init(tm_http_reply *r) {
  memset(r, 0, sizeof *r);
  tm_buf_init(&r->body, TM_BUF_UNLIMITED);
  r->status = 200;
}

void tm_http_reply_dispose(tm_http_reply *r) {
  if (r->response) MHD_destroy_response(r->response);
  r->response = NULL;
  tm_buf_dispose(&r->body);
}

/*
 * Counts a reply in http_requests{method,path,status}, observes the time from
 * the request's arrival to its reply in http_requests_duration_ms (Spice's
 * pair, crates/runtime-metrics/src/http.rs) and logs it at debug level.
 */
static void count_reply(const tm_http_server_options *o, const tm_http_request *req,
                        unsigned status) {
  double ms = (double)(tm_monotonic_ns() - req->t0_ns) / 1e6;
  char label[8];
  snprintf(label, sizeof label, "%u", status);
  const char *labels[] = {method_label(req->method), req->route ? req->route->pattern : "unmatched",
                          label};
  if (o->requests) tm_metric_add(o->requests, labels, 1);
  if (o->durations) tm_metric_observe(o->durations, labels, ms);
  if (tm_log_enabled(TM_LOG_DEBUG))
    tm_log(TM_LOG_DEBUG, NULL, "%s %s %u (%.1f ms)", req->method, req->path, status, ms);
}

/* Queues the reply and counts it; the reply is disposed. */
static enum MHD_Result respond(tm_http_server *s, tm_http_request *req, tm_http_reply *rep) {
  struct MHD_Response *resp = rep->response;
  rep->response = NULL;
  if (!resp) {
    size_t len = 0;
    char *body = tm_buf_take(&rep->body, &len);
    if (!body) {
      tm_http_reply_dispose(rep);
      return MHD_NO;
    }
    resp = MHD_create_response_from_buffer_with_free_callback(len, body, tm_free);
    if (!resp) {
      tm_free(body);
      tm_http_reply_dispose(rep);
      return MHD_NO;
    }
  }
  if (rep->content_type) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (rep->extra_header[0]) MHD_add_response_header(resp, rep->extra_header[0], rep->extra_header[1]);
  enum MHD_Result r = MHD_queue_response(req->conn, rep->status, resp);
  MHD_destroy_response(resp);
  req->responded = true;
  count_reply(&s->o, req, rep->status);
  tm_http_reply_dispose(rep);
  return r;
}

/*
 * The checks made once the headers are in: the route, the API key and the
 * body size Content-Length announces. Returns true when the request is
 * answered now (404, 405, 401, 400, 413), with rep (initialised) filled;
 * false when its body is to be read, with req->route set and req->body
 * initialised to the route's limit.
 */
static bool admit(const tm_http_server_options *o, tm_http_request *req,
                  tm_http_reply *rep) {
  bool known;
  const char *allow;
  req->route = find_route(o, req->method, req->path, req->param, &known, &allow);
  /* The key first: without it, no path says whether it exists (D4). */
  if (!(req->route && req->route->public_route) && !authorized(o, req)) {
    req->route = NULL;
    tm_http_reply_message(
        rep, 401, "an API key is required: send Authorization: Bearer KEY or X-API-Key: KEY");
    rep->extra_header[0] = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
    rep->extra_header[1] = "Bearer";
    return true;
  }
  if (!req->route) {
    if (!known) {
      tm_http_reply_message(rep, 404, "no such endpoint");
      return true;
    }
    tm_http_reply_message(rep, 405, "method %s is not allowed here (allowed: %s)",
                          method_label(req->method), allow);
    rep->extra_header[0] = MHD_HTTP_HEADER_ALLOW;
    rep->extra_header[1] = allow;
    return true;
  }
  size_t limit = req->route->body_limit;
  const char *cl = tm_http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
  uint64_t announced = 0;
  if (cl && tm_parse_uint64(cl, strlen(cl), &announced) == TM_OK && announced > limit) {
    if (limit == 0)
      tm_http_reply_message(rep, 400, "%s takes no request body", req->route->pattern);
    else
      tm_http_reply_message(rep, 413, "request body too large: %llu bytes (limit %zu)",
                            (unsigned long long)announced, limit);
    return true;
  }
  tm_buf_init(&req->body, limit);
  return false;
}

void tm_http_serve(tm_http_reply *rep, const tm_http_server_options *o, const char *method,
                   const char *path, const char *const *headers, size_t n_headers,
                   const char *body, size_t body_len) {
  tm_http_request req;
  memset(&req, 0, sizeof req);
  req.method = method;
  req.path = path;
  req.headers = headers;
  req.n_headers = n_headers;
  req.t0_ns = tm_monotonic_ns();
  tm_buf_init(&req.body, 0);
  reply_init(rep);
  if (!admit(o, &req, rep)) {
    tm_error err;
    if (tm_buf_append(&req.body, body, body_len, &err) != TM_OK)
      tm_http_reply_message(rep, 413, "request body too large: %zu bytes (limit %zu)", body_len,
                            req.route->body_limit);
    else
      req.route->handler(o->app, &req, rep);
  }
  count_reply(o, &req, rep->status);
  tm_buf_dispose(&req.body);
}

/* ---- the access handler ------------------------------------------------------------------------ */

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_size, void **con_cls) {
  (void)version;
  tm_http_server *s = cls;
  tm_http_request *req = *con_cls;
  if (!req) {
    req = tm_calloc(1, sizeof *req);
    if (!req) return MHD_NO;
    *con_cls = req;
    req->conn = conn;
    req->method = method;
    req->path = url;
    req->t0_ns = tm_monotonic_ns();
    tm_http_reply rep;
    reply_init(&rep);
    if (admit(&s->o, req, &rep)) {
      tm_http_guard_request_in(s->guard, conn);
      return respond(s, req, &rep);
    }
    tm_http_reply_dispose(&rep);
    return MHD_YES;
  }
  if (req->responded) {
    *upload_size = 0; /* an early answer was queued: the body is discarded */
    return MHD_YES;
  }
  if (*upload_size) {
    tm_error err;
    if (tm_buf_append(&req->body, upload_data, *upload_size, &err) != TM_OK) {
      tm_log(TM_LOG_WARN, NULL, "%s %s: request body over %zu bytes without Content-Length; "
             "closing the connection", req->method, req->path, req->route->body_limit);
      return MHD_NO;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  tm_http_guard_request_in(s->guard, conn);
  tm_http_reply rep;
  reply_init(&rep);
  req->route->handler(s->o.app, req, &rep);
  return respond(s, req, &rep);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  tm_http_server *s = cls;
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) tm_http_guard_request_done(s->guard, conn);
  tm_http_request *req = *con_cls;
  if (!req) return;
  tm_buf_dispose(&req->body);
  tm_free(req);
  *con_cls = NULL;
}

/*
 * libmicrohttpd's messages, through tm_log. A client can cause one per
 * connection (a request cut short, the connection limit), so at most
 * MHD_LOG_LINES go out per window and the next window says how many were
 * dropped: an attack must not flood the log.
 */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  tm_http_server *s = cls;
  int64_t now = tm_monotonic_ns();
  pthread_mutex_lock(&s->log_mu);
  unsigned dropped = 0;
  if (now - s->log_window_ns > MHD_LOG_WINDOW_NS) {
    dropped = s->log_dropped;
    s->log_window_ns = now;
    s->log_lines = s->log_dropped = 0;
  }
  bool emit = s->log_lines < MHD_LOG_LINES;
  if (emit) s->log_lines++;
  else s->log_dropped++;
  pthread_mutex_unlock(&s->log_mu);
  if (dropped)
    tm_log(TM_LOG_WARN, NULL, "%s: %u more connection messages in the last %d s were not logged",
           s->name, dropped, (int)(MHD_LOG_WINDOW_NS / 1000000000));
  if (!emit) return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  tm_log(TM_LOG_WARN, NULL, "%s: %s", s->name, line);
}

/* ---- lifecycle ------------------------------------------------------------------------------------ */

int tm_http_server_start(tm_http_server **out, const tm_http_server_options *o, tm_error *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  bool loopback;
  TM_TRY(tm_http_parse_addr(o->addr, &ss, &len, &loopback, err));
  tm_http_server *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->o = *o;
  pthread_mutex_init(&s->log_mu, NULL);
  s->log_window_ns = tm_monotonic_ns();
  s->name = tm_strdup(o->name ? o->name : "HTTP");
  bool oom = !s->name;
  s->o.api_keys = NULL;
  s->o.n_api_keys = 0;
  if (o->n_api_keys && !(s->api_keys = tm_calloc(o->n_api_keys, sizeof *s->api_keys))) oom = true;
  for (size_t i = 0; !oom && i < o->n_api_keys; i++) {
    if (!(s->api_keys[i] = tm_strdup(o->api_keys[i]))) oom = true;
    else s->o.n_api_keys = i + 1;
  }
  s->o.api_keys = (const char *const *)s->api_keys;
  if (oom) {
    tm_http_server_free(s);
    return tm_error_nomem(err);
  }
  unsigned limit = o->connection_limit ? o->connection_limit : 1024u;
  unsigned reserve = limit / 16 < 4 ? 4 : limit / 16;
  int rc = tm_http_guard_new(&s->guard, s->name, limit > reserve ? limit - reserve : 1,
                             o->request_timeout_ms > 0 ? o->request_timeout_ms : 10000, err);
  if (rc != TM_OK) {
    tm_http_server_free(s);
    return rc;
  }
  /*
   * A thread per connection: a handler may wait (for a query slot's answer)
   * without holding up any other connection; the threads are small because
   * no query runs on them (query/pool.h).
   */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG | MHD_USE_AUTO;
  if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  /* The logger comes first so that every message goes through tm_log. */
  s->daemon = MHD_start_daemon(
      flags, 0, NULL, NULL, on_access, s,
      MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
      MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
      MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s ? o->timeout_s : 60u,
      MHD_OPTION_CONNECTION_LIMIT, limit,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_client_limit ? o->per_client_limit : limit,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)128 * 1024,
      MHD_OPTION_THREAD_STACK_SIZE, (size_t)TM_HTTP_THREAD_STACK,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, 512u,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
      MHD_OPTION_NOTIFY_CONNECTION, tm_http_guard_notify, s->guard,
      MHD_OPTION_END);
  if (!s->daemon) {
    rc = tm_error_set(err, TM_EIO, "%s: cannot listen on %s (address in use or not local)",
                          s->name, o->addr);
    tm_http_server_free(s);
    return rc;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info ? (int)info->port : 0;
  char host[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof host);
  else
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof host);
  snprintf(s->endpoint, sizeof s->endpoint, "%s%s%s:%d", ss.ss_family == AF_INET6 ? "[" : "", host,
           ss.ss_family == AF_INET6 ? "]" : "", s->port);
  tm_log(TM_LOG_INFO, NULL, "%s listening on %s%s", s->name, s->endpoint,
         s->o.n_api_keys ? " (API key required)" : "");
  if (!loopback && !s->o.n_api_keys)
    tm_log(TM_LOG_WARN, NULL,
           "%s listens on %s, which is not a loopback address, without an API key "
           "(set --api-key or TIDEMARK_API_KEY, SPEC D4)",
           s->name, o->addr);
  *out = s;
  return TM_OK;
}

int tm_http_server_port(const tm_http_server *s) { return s ? s->port : 0; }

const char *tm_http_server_endpoint(const tm_http_server *s) { return s ? s->endpoint : ""; }

const char *tm_http_query_arg(tm_http_request *req, const char *name) {
  return req->conn ? MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

void tm_http_server_quiesce(tm_http_server *s) {
  if (!s || !s->daemon || s->quiesced) return;
  MHD_socket fd = MHD_quiesce_daemon(s->daemon);
  if (fd != MHD_INVALID_SOCKET) close(fd);
  s->quiesced = true;
}

void tm_http_server_free(tm_http_server *s) {
  if (!s) return;
  if (s->daemon) MHD_stop_daemon(s->daemon);
  tm_http_guard_free(s->guard);
  pthread_mutex_destroy(&s->log_mu);
  tm_free(s->name);
  for (size_t i = 0; i < s->o.n_api_keys; i++) {
    tm_wipe(s->api_keys[i], strlen(s->api_keys[i]));
    tm_free(s->api_keys[i]);
  }
  tm_free(s->api_keys);
  tm_free(s);
}
