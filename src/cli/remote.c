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
  tm_buf body;        /* buffered answer (errors always; the body unless streaming) */
  FILE *stream;       /* a 2xx body goes here when set */
  CURL *curl;
  bool stream_failed;
} call;

static size_t on_data(char *ptr, size_t size, size_t n, void *payload) {
  call *c = payload;
  size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
  if (c->stream && status >= 200 && status < 300) {
    if (fwrite(ptr, 1, len, c->stream) != len) {
      c->stream_failed = true;
      return 0;
    }
    return len;
  }
  tm_error err;
  return tm_buf_append(&c->body, ptr, len, &err) == TM_OK ? len : 0;
}

/* base + path, without a doubled '/'. Result: tm_free. */
static char *join_url(const char *base, const char *path) {
  size_t n = strlen(base);
  while (n && base[n - 1] == '/') n--;
  return tm_asprintf("%.*s%s", (int)n, base, path);
}

/*
 * One request. Returns the HTTP status, or -1 when the server could not be
 * reached (the reason printed). stream: where a 2xx body goes, or NULL to
 * buffer it into c->body.
 */
static long request(const char *method, const char *base, const char *path, const char *accept,
                    const char *body, const char *api_key, FILE *stream, call *c) {
  memset(c, 0, sizeof *c);
  tm_buf_init(&c->body, RESPONSE_LIMIT);
  c->stream = stream;
  char *url = join_url(base, path);
  char *auth = api_key && *api_key ? tm_asprintf("Authorization: Bearer %s", api_key) : NULL;
  char *acc = accept ? tm_asprintf("Accept: %s", accept) : NULL;
  c->curl = curl_easy_init();
  if (!url || !c->curl || (api_key && *api_key && !auth) || (accept && !acc)) {
    fprintf(stderr, "tidemark: out of memory\n");
    tm_free(url);
    tm_free(auth);
    tm_free(acc);
    if (c->curl) curl_easy_cleanup(c->curl);
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
  } else if (c->stream_failed) {
    fprintf(stderr, "tidemark: cannot write the answer\n");
  } else {
    fprintf(stderr, "tidemark: %s: %s\n", url, curl_easy_strerror(cc));
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(c->curl);
  c->curl = NULL;
  tm_free(url);
  tm_free(auth);
  tm_free(acc);
  return status;
}

/* Prints the server's {"message"} (or the raw body) for a failed call; the exit code. */
static int report(long status, call *c, const char *what) {
  if (status < 0) return TM_EXIT_FAILURE;
  json_error_t jerr;
  json_t *j = json_loadb(c->body.ptr ? c->body.ptr : "", c->body.len, 0, &jerr);
  const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
  fprintf(stderr, "tidemark: %s%s%s (HTTP %ld)\n", what ? what : "", what ? ": " : "",
          msg ? msg : tm_buf_cstr(&c->body), status);
  json_decref(j);
  return status >= 400 && status < 500 ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
}

int tm_cli_sql_remote(const tm_cli_cmd *cmd, const char *url, const char *query,
                      tm_out_format format, const char *api_key) {
  (void)cmd;
  const char *accept = format == TM_OUT_CSV     ? "text/csv"
                       : format == TM_OUT_TABLE ? "text/plain"
                       : format == TM_OUT_JSONL ? "application/x-ndjson"
                                                : "application/json";
  call c;
  long status = request("POST", url, "/v1/sql", accept, query, api_key, stdout, &c);
  int code = TM_EXIT_OK;
  if (status < 200 || status >= 300) code = report(status, &c, NULL);
  fflush(stdout);
  tm_buf_dispose(&c.body);
  return code;
}

/* GETs a JSON document; NULL (reported) on failure, *code set. */
static json_t *get_json(const char *base, const char *path, const char *api_key, int *code) {
  call c;
  long status = request("GET", base, path, "application/json", NULL, api_key, NULL, &c);
  json_t *j = NULL;
  if (status == 200) {
    json_error_t jerr;
    j = json_loadb(c.body.ptr ? c.body.ptr : "", c.body.len, 0, &jerr);
    if (!j) {
      fprintf(stderr, "tidemark: %s: malformed answer: %s\n", path, jerr.text);
      *code = TM_EXIT_FAILURE;
    }
  } else {
    *code = report(status, &c, path);
  }
  tm_buf_dispose(&c.body);
  return j;
}

int tm_cli_refresh_remote(const tm_cli_cmd *cmd, const char *url, const tm_cli_args *args) {
  const char *api_key = tm_cli_get(cmd, args, "api-key");
  if (!api_key) api_key = getenv("TIDEMARK_API_KEY");
  json_t *opts = json_object();
  const char *sql = tm_cli_get(cmd, args, "sql");
  if (sql) json_object_set_new(opts, "refresh_sql", json_string(sql));
  if (tm_cli_flag(cmd, args, "full")) json_object_set_new(opts, "refresh_mode", json_string("full"));
  char *body = json_dumps(opts, JSON_COMPACT);
  json_decref(opts);
  /* Without names: every accelerated dataset the server has. */
  json_t *list = NULL;
  int code = TM_EXIT_OK;
  if (args->n_positional == 0) {
    list = get_json(url, "/v1/datasets", api_key, &code);
    if (!list) {
      free(body); /* lint-ok: allocated by jansson */
      return code;
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
    long status = path ? request("POST", url, path, "application/json", body, api_key, NULL, &c) : -1;
    if (status == 201) {
      json_error_t jerr;
      json_t *j = json_loadb(c.body.ptr ? c.body.ptr : "", c.body.len, 0, &jerr);
      const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
      printf("%s: %s\n", name, msg ? msg : "refresh triggered");
      json_decref(j);
      triggered++;
    } else {
      int c2 = report(status, &c, name);
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
  json_t *list = get_json(url, "/v1/datasets?status=true", api_key, code);
  if (!list) return NULL;
  json_t *out = json_array();
  for (size_t i = 0; out && i < json_array_size(list); i++) {
    json_t *d = json_array_get(list, i);
    const char *name = json_string_value(json_object_get(d, "name"));
    json_t *full = NULL;
    if (name && json_is_true(json_object_get(d, "acceleration_enabled"))) {
      char *path = tm_asprintf("/v1/datasets/%s/acceleration", name);
      int c2 = TM_EXIT_OK;
      full = path ? get_json(url, path, api_key, &c2) : NULL;
      tm_free(path);
      if (!full && c2 != TM_EXIT_OK) *code = c2;
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
