/*
 * remote.c - commands that talk to a running `tidemark run` over its HTTP
 * API with libcurl (cli layer; SPEC 1.2, 1.3).
 *
 *   tidemark sql --url URL QUERY       POST /v1/sql, the answer streamed to stdout
 *   tidemark refresh --url URL [DS...] POST /v1/datasets/DS/acceleration/refresh
 *   tidemark status --url URL          GET /v1/datasets and each acceleration
 *
 * The API key comes from --api-key or TIDEMARK_API_KEY and is sent as
 * `Authorization: Bearer KEY`. A 4xx answer prints the server's message and
 * exits 2 (like a local usage or SQL error), anything else that fails exits 1.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "format/arrow/render.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/log.h"
#include "util/alloc.h"
#include "util/buf.h"

#define RESPONSE_LIMIT ((size_t)64 << 20) /* buffered answers (JSON documents, errors) */

typedef struct call {
  tm_buf body;            /* buffered answer (errors always; the body unless streaming) */
  tm_out_sink_fn sink;    /* a 2xx body goes here when set */
  void *payload;          /* sink's */
  const atomic_bool *cancel; /* the transfer stops once *cancel is set; may be NULL */
  CURL *curl;
  bool sink_failed;
} call;

static size_t on_data(char *ptr, size_t size, size_t n, void *payload) {
  call *c = payload;
  size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
  if (c->sink && status >= 200 && status < 300) {
    if (c->sink(ptr, len, c->payload) != TM_OK) {
      c->sink_failed = true;
      return 0;
    }
    return len;
  }
  tm_error err;
  return tm_buf_append(&c->body, ptr, len, &err) == TM_OK ? len : 0;
}

/* libcurl's progress callback: a non-zero answer aborts the transfer (Ctrl-C in the REPL). */
static int on_progress(void *payload, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
  (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
  const call *c = payload;
  return c->cancel && atomic_load(c->cancel) ? 1 : 0;
}

/* base + path, without a doubled '/'. Result: tm_free. */
static char *join_url(const char *base, const char *path) {
  size_t n = strlen(base);
  while (n && base[n - 1] == '/') n--;
  return tm_asprintf("%.*s%s", (int)n, base, path);
}

/*
 * One request. Returns the HTTP status, or -1 when there is no answer (the
 * server could not be reached, the sink failed, the transfer was cancelled),
 * with err set: TM_EIO, the sink's code, TM_ECANCELLED, TM_ENOMEM. sink: where
 * a 2xx body goes, or NULL to buffer it into c->body. cancel may be NULL.
 */
static long request(const char *method, const char *base, const char *path, const char *accept,
                    const char *body, const char *api_key, tm_out_sink_fn sink, void *payload,
                    const atomic_bool *cancel, call *c, tm_error *err) {
  memset(c, 0, sizeof *c);
  tm_buf_init(&c->body, RESPONSE_LIMIT);
  c->sink = sink;
  c->payload = payload;
  c->cancel = cancel;
  char *url = join_url(base, path);
  char *auth = api_key && *api_key ? tm_asprintf("Authorization: Bearer %s", api_key) : NULL;
  char *acc = accept ? tm_asprintf("Accept: %s", accept) : NULL;
  c->curl = curl_easy_init();
  if (!url || !c->curl || (api_key && *api_key && !auth) || (accept && !acc)) {
    tm_error_nomem(err);
    tm_free(url);
    tm_free(auth);
    tm_free(acc);
    if (c->curl) curl_easy_cleanup(c->curl);
    c->curl = NULL;
    return -1;
  }
  struct curl_slist *headers = NULL;
  if (auth) headers = curl_slist_append(headers, auth);
  if (acc) headers = curl_slist_append(headers, acc);
  headers = curl_slist_append(headers, "Expect:");
  if (body) headers = curl_slist_append(headers, "Content-Type: text/plain; charset=utf-8");
  curl_easy_setopt(c->curl, CURLOPT_URL, url);
  curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
  curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (cancel) {
    curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
  }
  if (body) {
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  } else if (strcmp(method, "POST") == 0) {
    curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, "");
  }
  CURLcode cc = curl_easy_perform(c->curl);
  long status = -1;
  if (cc == CURLE_OK) {
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
  } else if (c->sink_failed) {
    tm_error_set(err, TM_EIO, "cannot write the answer");
  } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
    tm_error_set(err, TM_ECANCELLED, "the query was cancelled");
  } else {
    tm_error_set(err, TM_EIO, "%s: %s", url, curl_easy_strerror(cc));
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(c->curl);
  c->curl = NULL;
  tm_free(url);
  tm_free(auth);
  tm_free(acc);
  return status;
}

/*
 * The error of a call that did not succeed: for an answer, the server's
 * {"message"} (or the raw body) with its status, TM_EINVALID for a 4xx and
 * TM_EIO otherwise; without one (status < 0), err as request() left it.
 */
static int call_error(long status, const call *c, const char *what, tm_error *err) {
  if (status < 0) return err->code ? err->code : TM_EIO;
  json_error_t jerr;
  json_t *j = json_loadb(c->body.ptr ? c->body.ptr : "", c->body.len, 0, &jerr);
  const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
  int code = status >= 400 && status < 500 ? TM_EINVALID : TM_EIO;
  tm_error_set(err, code, "%s%s%s (HTTP %ld)", what ? what : "", what ? ": " : "",
               msg ? msg : tm_buf_cstr(&c->body), status);
  json_decref(j);
  return code;
}

/* Prints err as a failed command does; the exit code (2 for a refused request, as locally). */
static int report(const tm_error *err) {
  fprintf(stderr, "tidemark: %s\n", err->message);
  return err->code == TM_EINVALID ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
}

int tm_cli_remote_query(const char *url, const char *api_key, const char *sql,
                        tm_out_format format, tm_out_sink_fn sink, void *payload,
                        const atomic_bool *cancel, tm_error *err) {
  const char *accept = format == TM_OUT_CSV     ? "text/csv"
                       : format == TM_OUT_TABLE ? "text/plain"
                       : format == TM_OUT_JSONL ? "application/x-ndjson"
                                                : "application/json";
  call c;
  long status = request("POST", url, "/v1/sql", accept, sql, api_key, sink, payload, cancel, &c,
                        err);
  int rc = status >= 200 && status < 300 ? TM_OK : call_error(status, &c, NULL, err);
  tm_buf_dispose(&c.body);
  return rc;
}

int tm_cli_sql_remote(const tm_cli_cmd *cmd, const char *url, const char *query,
                      tm_out_format format, const char *api_key) {
  (void)cmd;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_cli_remote_query(url, api_key, query, format, tm_out_file_sink, stdout, NULL, &err);
  fflush(stdout);
  return rc == TM_OK ? TM_EXIT_OK : report(&err);
}

/* GETs a JSON document; NULL with err set on failure (call_error's codes, TM_ECORRUPT). */
static json_t *get_json(const char *base, const char *path, const char *api_key, tm_error *err) {
  call c;
  long status = request("GET", base, path, "application/json", NULL, api_key, NULL, NULL, NULL,
                        &c, err);
  json_t *j = NULL;
  if (status == 200) {
    json_error_t jerr;
    j = json_loadb(c.body.ptr ? c.body.ptr : "", c.body.len, 0, &jerr);
    if (!j) tm_error_set(err, TM_ECORRUPT, "%s: malformed answer: %s", path, jerr.text);
  } else {
    call_error(status, &c, path, err);
  }
  tm_buf_dispose(&c.body);
  return j;
}

json_t *tm_cli_remote_datasets(const char *url, const char *api_key, tm_error *err) {
  json_t *list = get_json(url, "/v1/datasets", api_key, err);
  if (list && !json_is_array(list)) {
    json_decref(list);
    tm_error_set(err, TM_ECORRUPT, "/v1/datasets: malformed answer: not an array");
    return NULL;
  }
  return list;
}

int tm_cli_refresh_remote(const tm_cli_cmd *cmd, const char *url, const tm_cli_args *args,
                          const char *config_key) {
  const char *api_key = tm_cli_get(cmd, args, "api-key");
  if (!api_key) api_key = getenv("TIDEMARK_API_KEY");
  if (!api_key) api_key = config_key;
  json_t *opts = json_object();
  const char *sql = tm_cli_refresh_sql(cmd, args);
  const char *mode = tm_cli_get(cmd, args, "refresh-mode");
  if (sql) json_object_set_new(opts, "refresh_sql", json_string(sql));
  if (tm_cli_refresh_full(cmd, args)) json_object_set_new(opts, "refresh_mode", json_string("full"));
  else if (mode) json_object_set_new(opts, "refresh_mode", json_string(mode)); /* append: the server checks it */
  char *body = json_dumps(opts, JSON_COMPACT);
  json_decref(opts);
  /* Without names: every accelerated dataset the server has. */
  json_t *list = NULL;
  int code = TM_EXIT_OK;
  if (args->n_positional == 0) {
    tm_error err;
    tm_error_init(&err);
    list = get_json(url, "/v1/datasets", api_key, &err);
    if (!list) {
      free(body); /* lint-ok: allocated by jansson */
      return report(&err);
    }
  }
  size_t n = list ? json_array_size(list) : args->n_positional;
  int failures = 0, triggered = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = args->n_positional ? args->positional[i] : NULL;
    if (!name) {
      json_t *d = json_array_get(list, i);
      if (!json_is_true(json_object_get(d, "acceleration_enabled"))) continue;
      name = json_string_value(json_object_get(d, "name"));
      if (!name) continue;
    }
    char *path = tm_asprintf("/v1/datasets/%s/acceleration/refresh", name);
    call c;
    tm_error err;
    tm_error_init(&err);
    long status = path ? request("POST", url, path, "application/json", body, api_key, NULL, NULL,
                                 NULL, &c, &err)
                       : (tm_error_nomem(&err), -1);
    if (status == 201) {
      json_error_t jerr;
      json_t *j = json_loadb(c.body.ptr ? c.body.ptr : "", c.body.len, 0, &jerr);
      const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
      printf("%s: %s\n", name, msg ? msg : "refresh triggered");
      json_decref(j);
      triggered++;
    } else {
      if (path) call_error(status, &c, name, &err);
      int c2 = report(&err);
      if (code == TM_EXIT_OK || c2 == TM_EXIT_FAILURE) code = c2;
      failures++;
    }
    if (path) tm_buf_dispose(&c.body);
    tm_free(path);
  }
  json_decref(list);
  free(body); /* lint-ok: allocated by jansson */
  fflush(stdout);
  if (!failures && !triggered) fprintf(stderr, "tidemark: no accelerated dataset to refresh\n");
  return failures ? code : TM_EXIT_OK;
}

json_t *tm_cli_status_remote(const char *url, const char *api_key, int *code) {
  *code = TM_EXIT_OK;
  tm_error err;
  tm_error_init(&err);
  json_t *list = get_json(url, "/v1/datasets?status=true", api_key, &err);
  if (!list) {
    *code = report(&err);
    return NULL;
  }
  json_t *out = json_array();
  for (size_t i = 0; out && i < json_array_size(list); i++) {
    json_t *d = json_array_get(list, i);
    const char *name = json_string_value(json_object_get(d, "name"));
    json_t *full = NULL;
    if (name && json_is_true(json_object_get(d, "acceleration_enabled"))) {
      char *path = tm_asprintf("/v1/datasets/%s/acceleration", name);
      tm_error_init(&err);
      full = path ? get_json(url, path, api_key, &err) : NULL;
      if (!path) tm_error_nomem(&err);
      tm_free(path);
      if (!full) *code = report(&err);
    }
    json_array_append_new(out, full ? full : json_incref(d));
  }
  json_decref(list);
  return out;
}

/* Whether a server answers at url (for `tidemark status` without -c or --url). */
bool tm_cli_server_reachable(const char *url) {
  CURL *curl = curl_easy_init();
  if (!curl) return false;
  char *u = join_url(url, "/health");
  bool ok = false;
  if (u) {
    curl_easy_setopt(curl, CURLOPT_URL, u);
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 500L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    ok = curl_easy_perform(curl) == CURLE_OK;
  }
  tm_free(u);
  curl_easy_cleanup(curl);
  return ok;
}

bool tm_cli_use_default_server(void) {
  char *path = NULL;
  tm_error err;
  if (tm_config_default_path(&path, &err) == TM_OK) {
    tm_free(path);
    return false; /* a config here: it is what the user means */
  }
  return tm_cli_server_reachable("http://" TM_RUNTIME_DEFAULT_HTTP);
}

char *tm_cli_owner_url(const tm_config *cfg) {
  char *url = NULL;
  int64_t pid = 0;
  tm_error err;
  if (tm_runtime_owner(cfg, &url, &pid, &err) != TM_OK) return NULL;
  if (!tm_cli_server_reachable(url)) {
    tm_log(TM_LOG_WARN, NULL,
           "a server (pid %lld, %s) runs on this config but does not answer; "
           "trying the files here",
           (long long)pid, url);
    tm_free(url);
    return NULL;
  }
  return url;
}
