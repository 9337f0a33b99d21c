/*
 * Unit tests for source/iceberg_rest: the REST catalog client against a
 * spec-following catalog (tests/node/iceberg-rest-server.mjs) on 127.0.0.1
 * over a file-system warehouse we author: config prefix, table loading,
 * bearer tokens, and the error model for 404, 401 and 500 (SPEC B14, D3).
 */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/writer.h"
#include "source/iceberg_local.h"
#include "source/iceberg_rest.h"
#include "tm_test.h"
#include "util/alloc.h"

extern char **environ;

typedef struct server {
  pid_t pid;
  int lifeline; /* write end of the server's stdin; closing it stops the server */
  int port;
} server;

/* Starts the catalog; false when node is not available. */
static bool start_server(server *s, const char *warehouse, const char *prefix,
                         const char *token) {
  char script[4096];
  snprintf(script, sizeof script, "%s/tests/node/iceberg-rest-server.mjs", tm_test_source_dir());
  int in[2], out[2];
  TM_ASSERT(pipe(in) == 0 && pipe(out) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  char *argv[16];
  int n = 0;
  argv[n++] = "node";
  argv[n++] = script;
  argv[n++] = "--warehouse";
  argv[n++] = (char *)warehouse;
  argv[n++] = "--lifeline";
  argv[n++] = "1";
  if (prefix) {
    argv[n++] = "--prefix";
    argv[n++] = (char *)prefix;
  }
  if (token) {
    argv[n++] = "--token";
    argv[n++] = (char *)token;
  }
  argv[n] = NULL;
  int rc = posix_spawnp(&s->pid, "node", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    return false;
  }
  s->lifeline = in[1];
  char line[64];
  size_t len = 0;
  while (len + 1 < sizeof line) {
    ssize_t r = read(out[0], line + len, 1);
    if (r <= 0 || line[len] == '\n') break;
    len++;
  }
  line[len] = '\0';
  close(out[0]);
  s->port = 0;
  if (strncmp(line, "listening ", 10) == 0) s->port = atoi(line + 10); /* lint-ok: test */
  if (s->port <= 0) {
    close(s->lifeline);
    waitpid(s->pid, NULL, 0);
    return false;
  }
  return true;
}

static void stop_server(server *s) {
  close(s->lifeline);
  kill(s->pid, SIGTERM);
  waitpid(s->pid, NULL, 0);
}

/* A warehouse with table sales.events: one append of one described file. */
static const char *make_warehouse(int64_t *snapshot_out) {
  const char *wh = tm_test_path("wh");
  char root[4096];
  snprintf(root, sizeof root, "%s/sales/events", wh);
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_error err;
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = "[{\"name\": \"id\", \"type\": \"long\"}]";
  TM_ASSERT_OK(tm_iceberg_create_table(&io, root, &co, &err), &err);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  tm_iceberg_commit *c = NULL;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, "append", &err), &err);
  tm_iceberg_data_file f;
  memset(&f, 0, sizeof f);
  char path[4200];
  snprintf(path, sizeof path, "%s/data/one.parquet", tm_iceberg_table_metadata(t)->location);
  f.path = path;
  f.record_count = 42;
  f.file_size = 100;
  TM_ASSERT_OK(tm_iceberg_commit_add_file(c, &f, &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_finish(c, snapshot_out, &err), &err);
  tm_iceberg_commit_free(c);
  tm_iceberg_table_free(t);
  return wh;
}

TM_TEST(iceberg_rest_loads_tables_and_maps_errors) {
  int64_t snap = 0;
  const char *wh = make_warehouse(&snap);
  server s;
  if (!start_server(&s, wh, "wh1", "secret")) {
    tm_test__note("node is not available; skipping the REST catalog test");
    return;
  }
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d", s.port);
  tm_iceberg_rest_options o = TM_ICEBERG_REST_OPTIONS_INIT;
  o.base_url = base;
  o.token = "secret";
  o.timeout_ms = 10000;
  tm_iceberg_rest_table rt;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_rest_load_table(&o, NULL, "sales", "events", &rt, &err), &err);
  TM_ASSERT_STR_EQ(rt.prefix, "wh1");
  TM_ASSERT(rt.metadata_location && tm_str_has_suffix(rt.metadata_location, "v2.metadata.json"));
  TM_ASSERT_STR_EQ(tm_kv_get(&rt.config, "client.region"), "local");
  /* The metadata plans through the local io (the table's paths are file://). */
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_iceberg_table *t = NULL;
  TM_ASSERT_OK(tm_iceberg_table_from_json(&t, &io, rt.metadata_json, rt.metadata_len,
                                          rt.metadata_location, NULL, &err), &err);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(tm_iceberg_table_metadata(t));
  TM_ASSERT(cur && cur->snapshot_id == snap);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  TM_ASSERT_INT_EQ(sc->n_tasks, 1);
  TM_ASSERT_INT_EQ(sc->tasks[0].file->record_count, 42);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  tm_iceberg_rest_table_dispose(&rt);

  /* 404: missing table and missing namespace, with the server's error type. */
  TM_ASSERT_RC(tm_iceberg_rest_load_table(&o, NULL, "sales", "nope", &rt, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "NoSuchTableException");
  TM_ASSERT_CONTAINS(err.message, "/v1/wh1/namespaces/sales/tables/nope");
  TM_ASSERT_RC(tm_iceberg_rest_load_table(&o, NULL, "hr", "events", &rt, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "NoSuchNamespaceException");
  /* 500: transient, so the refresh retries (SPEC D3). */
  TM_ASSERT_RC(tm_iceberg_rest_load_table(&o, NULL, "sales", "fail500", &rt, &err),
               TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "HTTP 500");
  TM_ASSERT_CONTAINS(err.message, "internal failure injected");
  /* 401 without the right token. */
  o.token = "wrong";
  TM_ASSERT_RC(tm_iceberg_rest_load_table(&o, NULL, "sales", "events", &rt, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "the catalog refused the credentials (HTTP 401");
  TM_ASSERT_CONTAINS(err.message, "check iceberg_token");
  o.token = "secret";
  /* A prefix given by the URL skips /v1/config. */
  TM_ASSERT_OK(tm_iceberg_rest_load_table(&o, "wh1", "sales", "events", &rt, &err), &err);
  tm_iceberg_rest_table_dispose(&rt);
  stop_server(&s);
  /* The catalog is down: unavailable, not a crash. */
  TM_ASSERT_RC(tm_iceberg_rest_load_table(&o, NULL, "sales", "events", &rt, &err),
               TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, base);
}

TM_TEST(iceberg_rest_url_parsing) {
  tm_error err;
  char *base, *prefix, *ns, *table;
  TM_ASSERT_OK(tm_iceberg_rest_parse_url("http://host:8181/v1/namespaces/sales/tables/events",
                                         &base, &prefix, &ns, &table, &err), &err);
  TM_ASSERT_STR_EQ(base, "http://host:8181");
  TM_ASSERT(prefix == NULL);
  TM_ASSERT_STR_EQ(ns, "sales");
  TM_ASSERT_STR_EQ(table, "events");
  tm_free(base);
  tm_free(ns);
  tm_free(table);
  TM_ASSERT_OK(tm_iceberg_rest_parse_url("https://h/cat/v1/wh/namespaces/a%1Fb/tables/t", &base,
                                         &prefix, &ns, &table, &err), &err);
  TM_ASSERT_STR_EQ(base, "https://h/cat");
  TM_ASSERT_STR_EQ(prefix, "wh");
  TM_ASSERT_STR_EQ(ns, "a.b");
  tm_free(base);
  tm_free(prefix);
  tm_free(ns);
  tm_free(table);
  TM_ASSERT_RC(tm_iceberg_rest_parse_url("ftp://h/v1/namespaces/a/tables/t", &base, &prefix, &ns,
                                         &table, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_iceberg_rest_parse_url("http://h/v1/namespaces/a", &base, &prefix, &ns, &table,
                                         &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "namespaces/NS/tables/TABLE");
}

/* ---- what the catalog and its token endpoint answer (hostile input) ---------------- */

TM_TEST(iceberg_rest_token_answers) {
  tm_iceberg_rest_token t;
  tm_error err;
  const char *ok = "{\"access_token\": \"abc.DEF-123\", \"token_type\": \"Bearer\", "
                   "\"expires_in\": 3600, \"issued_token_type\": \"x\"}";
  TM_ASSERT_OK(tm_iceberg_rest_parse_token(ok, strlen(ok), &t, &err), &err);
  TM_ASSERT_STR_EQ(t.access_token, "abc.DEF-123");
  TM_ASSERT_STR_EQ(t.token_type, "Bearer");
  TM_ASSERT_INT_EQ(t.expires_in, 3600);
  tm_iceberg_rest_token_dispose(&t);
  const char *na = "{\"access_token\": \"t\", \"token_type\": \"N_A\"}";
  TM_ASSERT_OK(tm_iceberg_rest_parse_token(na, strlen(na), &t, &err), &err);
  TM_ASSERT_INT_EQ(t.expires_in, -1);
  tm_iceberg_rest_token_dispose(&t);
  /* Each refusal names the field, never the token. */
  static const struct { const char *json, *want; } bad[] = {
      {"[]", "not a JSON object"},
      {"{\"token_type\": \"bearer\"}", "no access_token string"},
      {"{\"access_token\": \"\", \"token_type\": \"bearer\"}", "access_token is empty"},
      {"{\"access_token\": \"se cret\", \"token_type\": \"bearer\"}", "not visible ASCII"},
      {"{\"access_token\": \"se\\r\\ncret\", \"token_type\": \"bearer\"}", "not visible ASCII"},
      {"{\"access_token\": \"s\\u00e9cret\", \"token_type\": \"bearer\"}", "not visible ASCII"},
      {"{\"access_token\": \"secret\"}", "no token_type string"},
      {"{\"access_token\": \"secret\", \"token_type\": \"mac\"}", "token_type 'mac' is not bearer"},
      {"{\"access_token\": \"secret\", \"token_type\": \"bearer\", \"expires_in\": -5}", "expires_in"},
      {"{\"access_token\": \"secret\", \"token_type\": \"bearer\", \"expires_in\": \"60\"}", "expires_in"},
      {"{\"access_token\": \"secret\", \"token_type\": \"bearer\", \"expires_in\": 9999999999}", "expires_in"},
      {"{\"access_token\": \"secret\", \"access_token\": \"x\", \"token_type\": \"bearer\"}", "not a JSON object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_RC(tm_iceberg_rest_parse_token(bad[i].json, strlen(bad[i].json), &t, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, bad[i].want);
    TM_ASSERT(!strstr(err.message, "secret"));
    TM_ASSERT(t.access_token == NULL);
  }
  /* A token past 8 KiB. */
  size_t n = 9000;
  char *big = tm_malloc(n + 64);
  TM_ASSERT(big);
  int k = snprintf(big, 64, "{\"access_token\": \"");
  memset(big + k, 'a', n);
  snprintf(big + k + n, 64, "\", \"token_type\": \"bearer\"}");
  TM_ASSERT_RC(tm_iceberg_rest_parse_token(big, strlen(big), &t, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "longer than 8192 bytes");
  tm_free(big);
}

static void parse(const char *json, tm_iceberg_rest_table *t) {
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_rest_parse_table(json, strlen(json), "http://cat/t", t, &err), &err);
}

TM_TEST(iceberg_rest_table_answers_and_vended_s3) {
  tm_iceberg_rest_table t;
  tm_iceberg_rest_s3 s3;
  tm_error err;
  /* Keys in config, with expiry, endpoint, region (client.region as fallback), path style. */
  parse("{\"metadata\": {\"format-version\": 2}, \"metadata-location\": \"s3://b/t/m.json\", "
        "\"config\": {\"s3.access-key-id\": \"AK\", \"s3.secret-access-key\": \"SK\", "
        "\"s3.session-token\": \"TOK\", \"s3.session-token-expires-at-ms\": \"1700000000000\", "
        "\"s3.endpoint\": \"http://127.0.0.1:9000\", \"client.region\": \"eu-west-1\", "
        "\"s3.path-style-access\": \"true\", \"n\": 5}}", &t);
  TM_ASSERT_STR_EQ(t.metadata_location, "s3://b/t/m.json");
  TM_ASSERT(tm_kv_get(&t.config, "n") == NULL); /* non-string values are skipped */
  TM_ASSERT_OK(tm_iceberg_rest_s3_settings(&t, "s3a://b/t/data/x.parquet", &s3, &err), &err);
  TM_ASSERT_STR_EQ(s3.creds.access_key, "AK");
  TM_ASSERT_STR_EQ(s3.creds.secret_key, "SK");
  TM_ASSERT_STR_EQ(s3.creds.session_token, "TOK");
  TM_ASSERT_INT_EQ(s3.creds.expires_ms, 1700000000000LL);
  TM_ASSERT_STR_EQ(s3.endpoint, "http://127.0.0.1:9000");
  TM_ASSERT_STR_EQ(s3.region, "eu-west-1");
  TM_ASSERT_INT_EQ(s3.path_style, 1);
  TM_ASSERT_STR_EQ(s3.source, "config");
  tm_iceberg_rest_table_dispose(&t);

  /* storage-credentials first, the longest matching prefix; config keys otherwise. */
  parse("{\"metadata\": {}, \"config\": {\"s3.access-key-id\": \"CFG\", "
        "\"s3.secret-access-key\": \"CFGS\", \"s3.region\": \"us-east-2\"}, "
        "\"storage-credentials\": ["
        "{\"prefix\": \"s3://b/\", \"config\": {\"s3.access-key-id\": \"B\", \"s3.secret-access-key\": \"BS\"}},"
        "{\"prefix\": \"s3://b/t/\", \"config\": {\"s3.access-key-id\": \"BT\", \"s3.secret-access-key\": \"BTS\", "
        "\"s3.region\": \"ap-south-1\"}},"
        "{\"prefix\": \"s3://b/t/deeper/\", \"config\": {\"s3.access-key-id\": \"D\", \"s3.secret-access-key\": \"DS\"}},"
        "{\"prefix\": \"abfs://c@a/\", \"config\": {\"adls.sas-token.a\": \"x\"}}]}", &t);
  TM_ASSERT_INT_EQ(t.n_creds, 4);
  TM_ASSERT_OK(tm_iceberg_rest_s3_settings(&t, "s3://b/t/data/x.parquet", &s3, &err), &err);
  TM_ASSERT_STR_EQ(s3.creds.access_key, "BT");
  TM_ASSERT_STR_EQ(s3.region, "ap-south-1");
  TM_ASSERT_STR_EQ(s3.source, "storage-credentials for s3://b/t/");
  TM_ASSERT_OK(tm_iceberg_rest_s3_settings(&t, "s3://b/other/x", &s3, &err), &err);
  TM_ASSERT_STR_EQ(s3.creds.access_key, "B");
  TM_ASSERT_STR_EQ(s3.region, "us-east-2");
  TM_ASSERT_OK(tm_iceberg_rest_s3_settings(&t, "s3://elsewhere/x", &s3, &err), &err);
  TM_ASSERT_STR_EQ(s3.creds.access_key, "CFG");
  TM_ASSERT_INT_EQ(s3.path_style, -1);
  tm_iceberg_rest_table_dispose(&t);

  /* Malformed settings: TM_ECORRUPT naming the key, never a secret. */
  static const struct { const char *config, *want; } bad[] = {
      {"{\"s3.access-key-id\": \"AK\"}", "s3.access-key-id without s3.secret-access-key"},
      {"{\"s3.secret-access-key\": \"sekrit\"}", "s3.secret-access-key without s3.access-key-id"},
      {"{\"s3.access-key-id\": \"AK\", \"s3.secret-access-key\": \"se\\nkrit\"}", "s3.secret-access-key is not printable"},
      {"{\"s3.access-key-id\": \"AK\", \"s3.secret-access-key\": \"sekrit\", \"s3.session-token\": \"a b\"}", "s3.session-token is empty or has a space"},
      {"{\"s3.access-key-id\": \"AK\", \"s3.secret-access-key\": \"sekrit\", \"s3.session-token-expires-at-ms\": \"soon\"}", "is not a time in Unix milliseconds"},
      {"{\"s3.endpoint\": \"ftp://x\"}", "is not an http(s):// URL"},
      {"{\"s3.path-style-access\": \"yes\"}", "s3.path-style-access 'yes' is not true or false"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char json[1024];
    snprintf(json, sizeof json, "{\"metadata\": {}, \"config\": %s}", bad[i].config);
    parse(json, &t);
    TM_ASSERT_RC(tm_iceberg_rest_s3_settings(&t, "s3://b/x", &s3, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, bad[i].want);
    TM_ASSERT(!strstr(err.message, "sekrit"));
    TM_ASSERT(s3.creds.access_key[0] == '\0');
    tm_iceberg_rest_table_dispose(&t);
  }
  /* Malformed answers. */
  static const struct { const char *json, *want; } broken[] = {
      {"{}", "no \"metadata\" object"},
      {"{\"metadata\": {}, \"config\": []}", "\"config\" is not an object"},
      {"{\"metadata\": {}, \"storage-credentials\": {}}", "\"storage-credentials\" is not a list"},
      {"{\"metadata\": {}, \"storage-credentials\": [{\"prefix\": 1, \"config\": {}}]}", "storage credential 0"},
      {"{\"metadata\": {}, \"storage-credentials\": [{\"prefix\": \"s3://b/\"}]}", "storage credential 0"},
      {"{\"metadata\": {}, \"config\": {\"k\": \"a\\u0000b\"}}", "is not JSON"},
      {"{\"metadata\": ", "is not JSON"},
  };
  for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
    TM_ASSERT_RC(tm_iceberg_rest_parse_table(broken[i].json, strlen(broken[i].json), "http://cat/t",
                                             &t, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, broken[i].want);
    TM_ASSERT_CONTAINS(err.message, "http://cat/t");
  }
}

TM_TEST(iceberg_rest_auth_options) {
  tm_iceberg_rest_auth *a = NULL;
  tm_error err;
  tm_iceberg_rest_auth_options o = TM_ICEBERG_REST_AUTH_OPTIONS_INIT;
  o.token = "t";
  o.oauth2_credential = "id:secret";
  TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &o, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "give one");
  o.token = NULL;
  o.sigv4 = true;
  TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &o, &err), TM_EINVALID);
  o.sigv4 = false;
  static const char *const bad_creds[] = {":secret", "id:", ""};
  for (size_t i = 0; i < 3; i++) {
    o.oauth2_credential = bad_creds[i];
    TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &o, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, "iceberg_oauth2_credential");
  }
  o.oauth2_credential = "secret-alone";
  o.oauth2_server_url = "ftp://tokens";
  TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &o, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "iceberg_oauth2_server_url");
  o.oauth2_server_url = NULL;
  TM_ASSERT_OK(tm_iceberg_rest_auth_new(&a, "http://cat", &o, &err), &err);
  TM_ASSERT_INT_EQ(tm_iceberg_rest_auth_tokens_obtained(a), 0);
  tm_iceberg_rest_auth_free(a);
  /* SigV4 keys go together. */
  tm_iceberg_rest_auth_options s = TM_ICEBERG_REST_AUTH_OPTIONS_INIT;
  s.sigv4 = true;
  s.access_key = "AK";
  TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &s, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "go together");
  /* A bearer token that would break the header line. */
  tm_iceberg_rest_auth_options b = TM_ICEBERG_REST_AUTH_OPTIONS_INIT;
  b.token = "abc\r\nX-Evil: 1";
  TM_ASSERT_RC(tm_iceberg_rest_auth_new(&a, "http://cat", &b, &err), TM_EINVALID);
  TM_ASSERT(!strstr(err.message, "Evil"));
}
