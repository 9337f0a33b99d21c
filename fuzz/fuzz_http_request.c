/*
 * fuzz_http_request.c - libFuzzer target for the HTTP API's request handling
 * (runtime/http, runtime/query, the routes of SPEC 1.3; D2, D4).
 * libmicrohttpd parses the wire format; this drives our side of it: route
 * matching on method and path, the API key headers, body limits, content
 * negotiation (Accept), the SQL body of POST /v1/sql (text, or Spice's JSON
 * body with parameters under Content-Type: application/json) and the JSON body of
 * POST /v1/datasets/{name}/acceleration/refresh, through tm_http_serve, the
 * same dispatch the server runs for each request.
 *
 * The input is a small HTTP-like text:
 *
 *   METHOD PATH\n
 *   Name: value\n          (up to 8 header lines)
 *   \n
 *   body bytes...
 *
 * It is served by one real runtime, started once: an `events` dataset
 * accelerated in memory (arrow engine, append refresh by `ts`) and a
 * federated `raw` dataset, both over a three-row JSON-lines file in a
 * temporary folder; API key "fuzz-key"; queries time out after 250 ms, so
 * loops end. The HTTP listener is bound to a loopback port the kernel picks
 * but never used. Every reply must have a status between 200 and 599, and a
 * JSON reply (errors, /v1/datasets, /v1/sql with the default Accept or
 * Spice's application/vnd.spiceai.sql.v1+json) must parse as JSON.
 *
 * Seed corpus (fuzz/corpora/fuzz_http_request/): one request per endpoint
 * and format, the API key in both forms, refresh bodies (valid, malformed,
 * unknown keys, wrong types), refused SQL, Spice's JSON bodies and
 * application/vnd.spiceai.sql.v1+json, over-long and odd paths.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "runtime/http/http.h"
#include "runtime/runtime.h"
#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 8
#define API_KEY "fuzz-key"

static char g_dir[64];
static tm_config g_cfg;
static tm_runtime *g_rt;

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_http_request: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void discard_log(tm_log_level level, const char *line, void *payload) {
  (void)level;
  (void)line;
  (void)payload;
}

static void teardown(void) {
  tm_runtime_free(g_rt);
  g_rt = NULL;
  tm_config_dispose(&g_cfg);
  tm_error err;
  if (g_dir[0] && tm_remove_tree(g_dir, &err) != TM_OK) fprintf(stderr, "%s\n", err.message);
}

static const char k_rows[] =
    "{\"id\":1,\"ts\":\"2024-01-01T00:00:01Z\",\"kind\":\"click\",\"amount\":1.5}\n"
    "{\"id\":2,\"ts\":\"2024-01-01T00:00:02Z\",\"kind\":\"view\",\"amount\":null}\n"
    "{\"id\":3,\"ts\":\"2024-01-01T00:00:03Z\",\"kind\":\"buy\",\"amount\":-7}\n";

static const char k_config[] =
    "version: v1\n"
    "kind: Spicepod\n"
    "name: fuzz\n"
    "datasets:\n"
    "  - from: file:data\n"
    "    name: events\n"
    "    params: {file_format: jsonl}\n"
    "    time_column: ts\n"
    "    acceleration:\n"
    "      engine: arrow\n"
    "      mode: memory\n"
    "      refresh_mode: append\n"
    "  - from: file:data\n"
    "    name: raw\n"
    "    params: {file_format: jsonl}\n";

/* Starts the runtime once and waits until both datasets serve. */
static void setup(void) {
  tm_error err;
  tm_error_init(&err);
  tm_log_set_sink(discard_log, NULL);
  tm_log_set_level(TM_LOG_DEBUG); /* hostile paths and messages go through the formatter */
  snprintf(g_dir, sizeof g_dir, "/tmp/tm-fuzz-http-XXXXXX");
  if (!mkdtemp(g_dir)) broken("mkdtemp", NULL);
  atexit(teardown);
  char path[128];
  snprintf(path, sizeof path, "%s/data", g_dir);
  if (mkdir(path, 0700) != 0) broken("mkdir", path);
  snprintf(path, sizeof path, "%s/data/rows.jsonl", g_dir);
  if (tm_write_file_atomic(path, k_rows, strlen(k_rows), &err) != TM_OK) broken(err.message, NULL);
  if (tm_config_load_text(&g_cfg, k_config, strlen(k_config), "fuzz.yaml", g_dir, &err) != TM_OK)
    broken(err.message, NULL);
  tm_runtime_options o;
  tm_runtime_options_init(&o);
  o.http_addr = "127.0.0.1:0";
  o.metrics_addr = "off";
  o.api_key = API_KEY;
  o.query_slots = 1;
  o.refresh_workers = 1;
  o.query_timeout_ms = 250;
  o.max_sql_bytes = (size_t)64 << 10;
  if (tm_runtime_new(&g_rt, &g_cfg, &o, &err) != TM_OK || tm_runtime_start(g_rt, &err) != TM_OK)
    broken(err.message, NULL);
  for (int i = 0; i < 600 && !tm_runtime_ready(g_rt); i++) usleep(50 * 1000);
  if (!tm_runtime_ready(g_rt)) broken("the runtime did not become ready", NULL);
}

/* The next line of [*p, end) without its \r\n, NUL-terminated in place of the \n. */
static char *next_line(char **p, char *end) {
  if (*p >= end) return NULL;
  char *line = *p;
  char *nl = memchr(line, '\n', (size_t)(end - line));
  if (!nl) nl = end;
  *nl = '\0';
  *p = nl < end ? nl + 1 : end;
  if (nl > line && nl[-1] == '\r') nl[-1] = '\0';
  return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_rt) setup();
  /* A private copy with room for a terminating NUL: the parts are cut out of it in place. */
  char *text = tm_malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *p = text, *end = text + size;
  char *request = next_line(&p, end);
  const char *method = "GET", *path = "/";
  if (request) {
    char *sp = strchr(request, ' ');
    method = request;
    if (sp) {
      *sp = '\0';
      path = sp + 1;
    }
  }
  const char *headers[2 * MAX_HEADERS];
  size_t n_headers = 0;
  char *line;
  while ((line = next_line(&p, end)) != NULL && line[0]) {
    char *colon = strchr(line, ':');
    if (!colon || n_headers == MAX_HEADERS) continue;
    *colon = '\0';
    const char *value = colon + 1;
    while (*value == ' ' || *value == '\t') value++;
    headers[2 * n_headers] = line;
    headers[2 * n_headers + 1] = value;
    n_headers++;
  }
  tm_http_server_options o;
  memset(&o, 0, sizeof o);
  o.routes = g_rt->routes;
  o.n_routes = g_rt->n_routes;
  o.api_keys = (const char *const *)g_rt->api_keys;
  o.n_api_keys = g_rt->n_api_keys;
  o.app = g_rt;
  o.requests = g_rt->m_http;
  tm_http_reply rep;
  tm_http_serve(&rep, &o, method, path, headers, n_headers, p, (size_t)(end - p));
  char status[16];
  snprintf(status, sizeof status, "%u", rep.status);
  if (getenv("TM_FUZZ_VERBOSE")) /* to see what a corpus reaches */
    fprintf(stderr, "%s %s -> %u %.200s\n", method, path, rep.status,
            rep.response ? "(streamed)" : tm_buf_cstr(&rep.body));
  if (rep.status < 200 || rep.status > 599) broken("a reply with status", status);
  if (!rep.response && rep.content_type &&
      (strcmp(rep.content_type, "application/json") == 0 ||
       strcmp(rep.content_type, "application/vnd.spiceai.sql.v1+json") == 0)) {
    json_error_t jerr;
    json_t *j = json_loadb(rep.body.ptr ? rep.body.ptr : "", rep.body.len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &jerr); /* JSON numbers may pass int64 (UBIGINT, HUGEINT) */
    if (!j) broken("a JSON reply that does not parse", jerr.text);
    json_decref(j);
  }
  tm_http_reply_dispose(&rep);
  tm_free(text);
  return 0;
}
