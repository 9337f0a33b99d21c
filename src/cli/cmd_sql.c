/*
 * cmd_sql.c - `tidemark sql`: a read-only query over the accelerations
 * (cli layer; SPEC 1.2, D4).
 *
 * With -c, the query runs in this process over the file-mode accelerations
 * of the config (memory-mode ones live only inside `tidemark run`); with
 * --url, on a running server. Without QUERY on a terminal, a small REPL
 * reads one statement per line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "engine/sql.h"
#include "format/arrow/render.h"
#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/alloc.h"
#include "util/log.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"url", 0, "URL", "query a running server instead (e.g. http://127.0.0.1:8090)"},
    {"format", 0, "table|csv|json", "output format (default table)"},
    {"api-key", 0, "KEY", "with --url: the server's API key (or TIDEMARK_API_KEY)"},
    {0}};

static int run_one(tm_sql_session *s, const char *query, tm_out_format format) {
  tm_error err;
  tm_error_init(&err);
  int rc = tm_sql_query(s, query, format, tm_out_file_sink, stdout, NULL, &err);
  fflush(stdout);
  if (rc != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", err.message);
    return rc == TM_EINVALID ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
  }
  return TM_EXIT_OK;
}

static int repl(tm_sql_session *s, tm_out_format format) {
  char *line = NULL;
  size_t cap = 0;
  int last = TM_EXIT_OK;
  for (;;) {
    fputs("tidemark> ", stdout);
    fflush(stdout);
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) break;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n == 0) continue;
    if (!strcmp(line, ".quit") || !strcmp(line, ".exit") || !strcmp(line, "\\q")) break;
    last = run_one(s, line, format);
  }
  free(line); /* lint-ok: getline allocates with malloc */
  fputc('\n', stdout);
  return last;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *fmt = tm_cli_get(cmd, args, "format");
  tm_out_format format = TM_OUT_TABLE;
  if (fmt && tm_out_format_parse(fmt, &format) != TM_OK)
    return tm_cli_usage_error(cmd, "bad --format '%s' (allowed: table, csv, json)", fmt);
  const char *query = args->n_positional ? args->positional[0] : NULL;
  const char *url = tm_cli_get(cmd, args, "url");
  /* Neither -c nor --url, and no config here: a server running at the
   * default address answers (it holds the accelerations). */
  if (!url && query && !tm_cli_get(cmd, args, "config") && tm_cli_use_default_server())
    url = "http://" TM_RUNTIME_DEFAULT_HTTP;
  if (url) {
    if (!query) return tm_cli_usage_error(cmd, "--url needs a QUERY");
    const char *key = tm_cli_get(cmd, args, "api-key");
    if (!key) key = getenv("TIDEMARK_API_KEY");
    return tm_cli_sql_remote(cmd, url, query, format, key);
  }
  if (!query && !isatty(STDIN_FILENO)) return tm_cli_usage_error(cmd, "expected a QUERY");
  if (!getenv("TIDEMARK_LOG")) tm_log_set_level(TM_LOG_WARN);
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  /* A running server owns these accelerations: it answers (SPEC 1.2). */
  char *owner = tm_cli_owner_url(&cfg);
  if (owner) {
    if (!query) code = tm_cli_usage_error(cmd, "a server (%s) owns these accelerations: give a QUERY", owner);
    else {
      const char *key = tm_cli_get(cmd, args, "api-key");
      if (!key) key = getenv("TIDEMARK_API_KEY");
      code = tm_cli_sql_remote(cmd, owner, query, format, key);
    }
    tm_free(owner);
    tm_config_dispose(&cfg);
    return code;
  }
  tm_error err;
  tm_error_init(&err);
  tm_db *db = NULL;
  tm_sql_catalog *cat = NULL;
  tm_sql_session *session = NULL;
  tm_accel **accels = tm_calloc(cfg.n_datasets ? cfg.n_datasets : 1, sizeof *accels);
  int rc = accels ? tm_runtime_db_open(&cfg, &db, &err) : tm_error_nomem(&err);
  if (rc == TM_OK) rc = tm_sql_catalog_new(&cat, db, &err);
  if (rc == TM_OK) rc = tm_runtime_catalog_describe(cat, &cfg, &err);
  tm_accel_options ao;
  tm_accel_options_init(&ao);
  ao.db = db;
  ao.base_dir = cfg.dir;
  for (size_t i = 0; i < cfg.n_datasets && rc == TM_OK; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    rc = tm_accel_new(&accels[i], d, &ao, &err);
    if (rc != TM_OK) break;
    tm_engine *e = tm_accel_engine(accels[i]);
    if (e) {
      rc = tm_sql_catalog_add(cat, e, &err);
      tm_engine_release(e);
    } else if (!d->has_acceleration || !d->acceleration.enabled) {
      /* Federated (C6): the table reads the source on every query. */
      tm_source_options so;
      tm_accel_source_options(d, cfg.dir, &so);
      rc = tm_sql_catalog_add_source(cat, &so, &err);
    } else {
      tm_accel_info info;
      tm_accel_get_info(accels[i], &info);
      if (d->acceleration.mode == TM_ENGINE_MEMORY)
        tm_log(TM_LOG_WARN, d->name,
               "a memory-mode acceleration lives only in `tidemark run`; query it with --url");
      else if (info.status == TM_ACCEL_ERROR && info.last_error[0])
        tm_log(TM_LOG_WARN, d->name, "not queryable: %s", info.last_error);
      else tm_log(TM_LOG_WARN, d->name, "no acceleration yet: run `tidemark refresh` first");
    }
  }
  if (rc == TM_OK) rc = tm_sql_session_new(&session, cat, &err);
  if (rc == TM_OK) {
    code = query ? run_one(session, query, format) : repl(session, format);
  } else {
    fprintf(stderr, "tidemark: %s\n", err.message);
    code = TM_EXIT_FAILURE;
  }
  tm_sql_session_free(session);
  tm_sql_catalog_free(cat);
  for (size_t i = 0; accels && i < cfg.n_datasets; i++) tm_accel_free(accels[i]);
  tm_free(accels);
  tm_db_release(db);
  tm_config_dispose(&cfg);
  return code;
}

const tm_cli_cmd tm_cli_cmd_sql = {
    "sql",
    "run SQL over the accelerations",
    "tidemark sql [-c FILE | --url URL] [QUERY] [--format table|csv|json]",
    "Runs a read-only SQL query (DuckDB's dialect) over the datasets of the config, or of a\n"
    "running server with --url. With neither, the config in the current folder, or if\n"
    "there is none, the server at http://" TM_RUNTIME_DEFAULT_HTTP ". When a server runs\n"
    "on the config (tidemark run), it owns the accelerations and answers the query.\n"
    "Without QUERY on a terminal, starts a REPL (.quit ends it).\n"
    "Writes, ATTACH, PRAGMA changes and extension loading are refused (SPEC D4).",
    k_opts,
    1,
    run};
