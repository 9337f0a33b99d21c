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
