/*
 * http.h - a small HTTP server on libmicrohttpd: routes, limits, API keys,
 * per-request metrics (runtime layer; SPEC 1.3, 1.4, D2, D4).
 *
 * The server answers from a table of routes (method + path template such as
 * "/v1/datasets/{name}/acceleration"). For each request it
 *   - matches the route (404 for an unknown path, 405 with Allow for a known
 *     path and another method; HEAD is served as GET without a body);
 *   - checks the API key when one is set and the route is not public
 *     (`Authorization: Bearer KEY` or `X-API-Key: KEY`; 401 otherwise);
 *   - refuses a body larger than the route's limit (413), before reading it
 *     when Content-Length says so, and a body on a route that takes none;
 *   - collects the body into a capped buffer and calls the handler, which
 *     fills a tm_http_reply (a buffered body, or a streamed response);
 *   - counts http_requests{method,path,status} and observes the time to the
 *     reply in http_requests_duration_ms{method,path,status}, with the path
 *     label being the route template, so that the label set stays bounded.
 * Paths are matched as strings against the table; nothing in a request
 * reaches the file system (D4).
 *
 * Threads: one per connection (libmicrohttpd's thread-per-connection mode),
 * so a handler that waits holds up only its own connection; SQL runs on the
 * query slots (runtime/query/pool.h), not here. Connections are limited in
 * all, per client address, and by a deadline for each request to arrive
 * (guard.h), which leaves room for health probes under a slow-client attack.
 */
#ifndef TM_RUNTIME_HTTP_HTTP_H
#define TM_RUNTIME_HTTP_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/metrics.h"

typedef struct tm_http_server tm_http_server;

#define TM_HTTP_PARAM_MAX 256 /* bytes of a {name} path segment */

/** One request, as a handler sees it. */
typedef struct tm_http_request {
  struct MHD_Connection *conn;    /* for headers (tm_http_header); NULL under tm_http_serve */
  const char *const *headers;     /* tm_http_serve: name, value pairs (borrowed) */
  size_t n_headers;               /* pairs in headers */
  const char *method;             /* "GET", "POST", ... (HEAD is served as GET) */
  const char *path;               /* decoded path, without the query string */
  const struct tm_http_route *route;
  char param[TM_HTTP_PARAM_MAX];  /* the {name} segment, decoded */
  tm_buf body;                    /* the request body, capped at the route's limit */
  int64_t t0_ns;                  /* monotonic start */
  bool responded;                 /* a response was queued */
  bool too_large;                 /* the body passed the limit */
} tm_http_request;

/**
 * What a handler answers: a status with a buffered body, or a streamed
 * response it built itself (`response`, owned by the reply until queued).
 */
typedef struct tm_http_reply {
  unsigned status;
  const char *content_type;       /* static string */
  tm_buf body;
  struct MHD_Response *response;  /* a streamed response, or NULL */
  const char *extra_header[2];    /* name, value (static), or NULLs */
} tm_http_reply;

typedef void (*tm_http_handler)(void *app, tm_http_request *req, tm_http_reply *rep);

typedef struct tm_http_route {
  const char *method;    /* "GET" (also answers HEAD) or "POST" */
  const char *pattern;   /* "/v1/datasets/{name}/acceleration"; also the metric label */
  tm_http_handler handler;
  bool public_route;     /* no API key needed (/health) */
  size_t body_limit;     /* bytes; 0: the route takes no body */
} tm_http_route;

typedef struct tm_http_server_options {
  const char *name;              /* "HTTP API", "metrics": for logs */
  const char *addr;              /* see tm_http_parse_addr */
  const char *const *api_keys;   /* borrowed for the call: any of them opens every route but
                                    the public ones (D4); n_api_keys 0: no key needed */
  size_t n_api_keys;
  const tm_http_route *routes;   /* borrowed; outlives the server */
  size_t n_routes;
  void *app;                     /* passed to handlers */
  tm_metric *requests;           /* http_requests counter, or NULL */
  tm_metric *durations;          /* http_requests_duration_ms histogram, or NULL */
  unsigned timeout_s;            /* idle connection timeout */
  unsigned connection_limit;     /* concurrent connections; 0: 1024 */
  unsigned per_client_limit;     /* concurrent connections from one address; 0: no own limit */
  int64_t request_timeout_ms;    /* a request's head and body arrive within; 0: 10 s */
} tm_http_server_options;

/**
 * Parses ADDR: HOST:PORT, [IPV6]:PORT, or PORT alone (loopback). HOST may be
 * a name (resolved now) or a numeric address. *loopback says whether the
 * address is a loopback one (D4 warns about others without an API key).
 * TM_EINVALID naming the address.
 */
int tm_http_parse_addr(const char *addr, struct sockaddr_storage *out, socklen_t *len_out,
                       bool *loopback, tm_error *err) TM_WARN_UNUSED;

/**
 * Binds and starts serving. TM_EIO when the address cannot be bound
 * (in use, not local), TM_EINVALID for a bad address.
 */
int tm_http_server_start(tm_http_server **out, const tm_http_server_options *o, tm_error *err)
    TM_WARN_UNUSED;
/** The bound port. */
int tm_http_server_port(const tm_http_server *s);
/** The bound address and port ("127.0.0.1:8090"); "" for NULL. Lives as long as s. */
const char *tm_http_server_endpoint(const tm_http_server *s);
/** Stops accepting new connections; those open are served. */
void tm_http_server_quiesce(tm_http_server *s);
/** Stops (closing open connections) and frees. NULL is a no-op. */
void tm_http_server_free(tm_http_server *s);

/**
 * Serves one request without a connection, through the same route matching,
 * API key check, body limits, handler and request counting as the server
 * (o's routes, n_routes, api_keys, app and requests are used). For tests and
 * fuzzing: the request is method and path (decoded, without the query
 * string, as libmicrohttpd hands them over), headers as n_headers name, value
 * pairs and the whole body. Where the server would close the connection (a
 * body over the limit that Content-Length did not announce), the reply is 413.
 * rep is initialised by this call; release it with tm_http_reply_dispose. A
 * streamed response a handler built is left in rep->response, unread.
 */
void tm_http_serve(tm_http_reply *rep, const tm_http_server_options *o, const char *method,
                   const char *path, const char *const *headers, size_t n_headers,
                   const char *body, size_t body_len);
/** Releases a reply's body and unqueued response. */
void tm_http_reply_dispose(tm_http_reply *r);

/** A request header (case-insensitive name), or NULL. Valid during the request. */
const char *tm_http_header(tm_http_request *req, const char *name);
/** A query-string argument, decoded, or NULL (always NULL under tm_http_serve). */
const char *tm_http_query_arg(tm_http_request *req, const char *name);

/** Replies with JSON (the reply takes j's reference). */
void tm_http_reply_json(tm_http_reply *r, unsigned status, json_t *j);
/** Replies {"message": "..."} with status. */
void tm_http_reply_message(tm_http_reply *r, unsigned status, const char *fmt, ...)
    TM_PRINTF(3, 4);
/** Replies with text/plain. */
void tm_http_reply_text(tm_http_reply *r, unsigned status, const char *text);

/**
 * Compares an offered key with the expected one in time independent of
 * where they differ (D4).
 */
bool tm_http_key_equal(const char *offered, size_t offered_len, const char *expected);

#endif
