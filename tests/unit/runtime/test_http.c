/*
 * Unit tests for the HTTP server's request handling without a socket
 * (tm_http_serve): route matching with a {name} parameter, 404 and 405 with
 * Allow, the API key in both header forms (D4), body limits (413, a body on a
 * route that takes none), headers looked up case-insensitively, and the
 * http_requests counter labelled by route template (SPEC 1.3, 1.4, D2).
 * The same checks run on the wire in tests/integration/test_runtime_api.sh.
 */
#include "runtime/http/http.h"
#include "tm_test.h"

/* Echoes what the handler saw: the parameter, the X-Test header and the body. */
static void h_echo(void *app, tm_http_request *req, tm_http_reply *rep) {
  int *calls = app;
  (*calls)++;
  const char *h = tm_http_header(req, "x-test");
  tm_http_reply_message(rep, 200, "%s|%s|%s|%s", req->method, req->param, h ? h : "-",
                        tm_buf_cstr(&req->body));
}

static const tm_http_route k_routes[] = {
    {"GET", "/health", h_echo, true, 0},
    {"GET", "/v1/things/{name}", h_echo, false, 0},
    {"POST", "/v1/things/{name}/poke", h_echo, false, 8},
};

static const char *g_keys[2]; /* the keys options() sets */

static void options(tm_http_server_options *o, int *calls, const char *key, tm_metric *m) {
  memset(o, 0, sizeof *o);
  o->routes = k_routes;
  o->n_routes = sizeof k_routes / sizeof k_routes[0];
  g_keys[0] = key;
  o->api_keys = g_keys;
  o->n_api_keys = key ? 1 : 0;
  o->app = calls;
  o->requests = m;
}

/* Serves a request and returns its status; *body_out gets the reply body (static buffer). */
static unsigned serve(const tm_http_server_options *o, const char *method, const char *path,
                      const char *const *headers, size_t n_headers, const char *body,
                      char *body_out, size_t cap, const char **extra) {
  tm_http_reply rep;
  tm_http_serve(&rep, o, method, path, headers, n_headers, body, body ? strlen(body) : 0);
  snprintf(body_out, cap, "%s", tm_buf_cstr(&rep.body));
  if (extra) *extra = rep.extra_header[1];
  unsigned st = rep.status;
  TM_ASSERT(rep.response == NULL);
  tm_http_reply_dispose(&rep);
  return st;
}

TM_TEST(http_serve_routes_and_parameters) {
  int calls = 0;
  tm_http_server_options o;
  options(&o, &calls, NULL, NULL);
  char body[512];
  const char *hdr[] = {"X-Test", "yes"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/alpha", hdr, 1, NULL, body, sizeof body, NULL),
                   200);
  TM_ASSERT_STR_EQ(body, "{\"message\":\"GET|alpha|yes|\"}");
  /* HEAD is served as GET. */
  TM_ASSERT_INT_EQ(serve(&o, "HEAD", "/health", NULL, 0, NULL, body, sizeof body, NULL), 200);
  TM_ASSERT_INT_EQ(calls, 2);
  /* An empty parameter, an extra segment and a prefix match nothing (D4: plain strings). */
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/", NULL, 0, NULL, body, sizeof body, NULL), 404);
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a/b", NULL, 0, NULL, body, sizeof body, NULL),
                   404);
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/../etc/passwd", NULL, 0, NULL, body, sizeof body, NULL),
                   404);
  TM_ASSERT_STR_EQ(body, "{\"message\":\"no such endpoint\"}");
  const char *allow = NULL;
  TM_ASSERT_INT_EQ(serve(&o, "DELETE", "/v1/things/x", NULL, 0, NULL, body, sizeof body, &allow),
                   405);
  TM_ASSERT_STR_EQ(allow, "GET, HEAD");
  TM_ASSERT_CONTAINS(body, "method DELETE is not allowed here");
  TM_ASSERT_INT_EQ(serve(&o, "BREW", "/v1/things/x/poke", NULL, 0, NULL, body, sizeof body, &allow),
                   405);
  TM_ASSERT_STR_EQ(allow, "POST");
  TM_ASSERT_CONTAINS(body, "method OTHER is not allowed");
  /* A parameter as long as the buffer does not match (it would be cut). */
  char path[TM_HTTP_PARAM_MAX + 32];
  memset(path, 'n', sizeof path);
  memcpy(path, "/v1/things/", 11);
  path[11 + TM_HTTP_PARAM_MAX] = '\0';
  TM_ASSERT_INT_EQ(serve(&o, "GET", path, NULL, 0, NULL, body, sizeof body, NULL), 404);
  path[11 + TM_HTTP_PARAM_MAX - 1] = '\0';
  TM_ASSERT_INT_EQ(serve(&o, "GET", path, NULL, 0, NULL, body, sizeof body, NULL), 200);
  TM_ASSERT_INT_EQ(calls, 3);
}

TM_TEST(http_serve_api_key_D4) {
  int calls = 0;
  tm_http_server_options o;
  options(&o, &calls, "s3cret", NULL);
  char body[512];
  const char *allow = NULL;
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", NULL, 0, NULL, body, sizeof body, &allow),
                   401);
  TM_ASSERT_STR_EQ(allow, "Bearer");
  TM_ASSERT_CONTAINS(body, "an API key is required");
  const char *wrong[] = {"X-API-Key", "s3cre"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", wrong, 1, NULL, body, sizeof body, NULL), 401);
  const char *longer[] = {"authorization", "Bearer s3cretx"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", longer, 1, NULL, body, sizeof body, NULL), 401);
  const char *basic[] = {"Authorization", "Basic s3cret"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", basic, 1, NULL, body, sizeof body, NULL), 401);
  TM_ASSERT_INT_EQ(calls, 0);
  const char *xkey[] = {"x-api-key", "s3cret"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", xkey, 1, NULL, body, sizeof body, NULL), 200);
  const char *bearer[] = {"X-Other", "1", "AUTHORIZATION", "bearer   s3cret \t"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", bearer, 2, NULL, body, sizeof body, NULL), 200);
  /* /health is public. */
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/health", NULL, 0, NULL, body, sizeof body, NULL), 200);
  TM_ASSERT_INT_EQ(calls, 3);
  /* Issue 22: without the key nothing tells which paths exist: an unknown path and a
   * wrong method are 401 as well (and /health's other methods), with the key 404 and 405. */
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/nosuch", NULL, 0, NULL, body, sizeof body, NULL), 401);
  TM_ASSERT_INT_EQ(serve(&o, "DELETE", "/v1/things/a", NULL, 0, NULL, body, sizeof body, NULL),
                   401);
  TM_ASSERT_INT_EQ(serve(&o, "POST", "/health", NULL, 0, NULL, body, sizeof body, NULL), 401);
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/nosuch", xkey, 1, NULL, body, sizeof body, NULL), 404);
  TM_ASSERT_INT_EQ(serve(&o, "DELETE", "/v1/things/a", xkey, 1, NULL, body, sizeof body, NULL),
                   405);
  TM_ASSERT_INT_EQ(calls, 3);
}

/* Spice's runtime.auth.api-key takes several keys: any of them opens the API. */
TM_TEST(http_serve_several_api_keys) {
  int calls = 0;
  tm_http_server_options o;
  options(&o, &calls, "first-key", NULL);
  g_keys[1] = "second-key";
  o.n_api_keys = 2;
  char body[512];
  const char *first[] = {"X-API-Key", "first-key"};
  const char *second[] = {"Authorization", "Bearer second-key"};
  const char *neither[] = {"X-API-Key", "third-key"};
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", first, 1, NULL, body, sizeof body, NULL), 200);
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", second, 1, NULL, body, sizeof body, NULL), 200);
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/a", neither, 1, NULL, body, sizeof body, NULL), 401);
  TM_ASSERT_INT_EQ(calls, 2);
}

TM_TEST(http_serve_body_limits_D2) {
  int calls = 0;
  tm_http_server_options o;
  options(&o, &calls, NULL, NULL);
  char body[512];
  TM_ASSERT_INT_EQ(serve(&o, "POST", "/v1/things/b/poke", NULL, 0, "12345678", body, sizeof body,
                         NULL),
                   200);
  TM_ASSERT_STR_EQ(body, "{\"message\":\"POST|b|-|12345678\"}");
  /* Over the limit without Content-Length: the server would close the connection. */
  TM_ASSERT_INT_EQ(serve(&o, "POST", "/v1/things/b/poke", NULL, 0, "123456789", body, sizeof body,
                         NULL),
                   413);
  TM_ASSERT_CONTAINS(body, "request body too large: 9 bytes (limit 8)");
  /* Announced too large: refused before the body is read. */
  const char *cl[] = {"Content-Length", "100"};
  TM_ASSERT_INT_EQ(serve(&o, "POST", "/v1/things/b/poke", cl, 1, "", body, sizeof body, NULL), 413);
  TM_ASSERT_CONTAINS(body, "100 bytes (limit 8)");
  TM_ASSERT_INT_EQ(serve(&o, "GET", "/v1/things/b", cl, 1, NULL, body, sizeof body, NULL), 400);
  TM_ASSERT_CONTAINS(body, "/v1/things/{name} takes no request body");
  /* A Content-Length that is not a number is left to the body's own limit. */
  const char *junk[] = {"Content-Length", "12x"};
  TM_ASSERT_INT_EQ(serve(&o, "POST", "/v1/things/b/poke", junk, 1, "ok", body, sizeof body, NULL),
                   200);
  TM_ASSERT_INT_EQ(calls, 2);
}

TM_TEST(http_serve_counts_requests_by_route) {
  tm_error err;
  tm_metrics *reg = tm_metrics_new();
  TM_ASSERT(reg);
  tm_metric *m;
  TM_ASSERT_OK(tm_metrics_register(reg, &m, TM_METRIC_COUNTER, "http_requests", "requests",
                                   "method,path,status", NULL, 0, &err),
               &err);
  int calls = 0;
  tm_http_server_options o;
  options(&o, &calls, NULL, m);
  char body[256];
  serve(&o, "GET", "/v1/things/a", NULL, 0, NULL, body, sizeof body, NULL);
  serve(&o, "GET", "/v1/things/b", NULL, 0, NULL, body, sizeof body, NULL);
  serve(&o, "PUT", "/nowhere", NULL, 0, NULL, body, sizeof body, NULL);
  tm_buf text = TM_BUF_INIT(TM_BUF_UNLIMITED);
  TM_ASSERT_OK(tm_metrics_render(reg, &text, &err), &err);
  TM_ASSERT_CONTAINS(tm_buf_cstr(&text),
                     "http_requests{method=\"GET\",path=\"/v1/things/{name}\",status=\"200\"} 2");
  TM_ASSERT_CONTAINS(tm_buf_cstr(&text),
                     "http_requests{method=\"PUT\",path=\"unmatched\",status=\"404\"} 1");
  tm_buf_dispose(&text);
  tm_metrics_free(reg);
}
