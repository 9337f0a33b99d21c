/*
 * cmd_sql.c - `tidemark sql`: read-only SQL over the accelerations (cli
 * layer; SPEC 1.2, D4).
 *
 * Where statements run: with --url, on that server; else on the server that
 * owns the config's accelerations when one runs (tm_cli_owner_url); else in
 * this process, over the config's file-mode accelerations, federated
 * datasets and views (memory-mode ones live only inside `tidemark run`).
 * Given neither -c nor --url and no config here, the server at the default
 * address answers when it runs.
 *
 * With QUERY, that one statement runs. Without, the REPL (repl.h) reads
 * statements: from the terminal with prompts, line editing and history, or
 * from a pipe or file without them. Either way the same loop runs over a
 * tm_repl_target: a local session, or the server's POST /v1/sql.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "cli/repl.h"
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
    {"format", 0, "table|csv|json|jsonl", "output format (default table)"},
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

/* ---- statements in this process ---------------------------------------------------------- */

typedef struct local_target {
  tm_sql_session *session;
  json_t *datasets; /* [{"name", "kind"}] of the datasets listed in the catalog */
} local_target;

static int local_query(void *self, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                       void *payload, tm_error *err) {
  local_target *l = self;
  return tm_sql_query(l->session, sql, format, sink, payload, NULL, err);
}

static int local_datasets(void *self, json_t **out, tm_error *err) {
  local_target *l = self;
  json_t *copy = json_deep_copy(l->datasets);
  if (!copy) return tm_error_nomem(err);
  *out = copy;
  return TM_OK;
}

static void local_interrupt(void *self) {
  local_target *l = self;
  tm_sql_session_interrupt(l->session);
}

/* ---- statements on a server -------------------------------------------------------------- */

typedef struct remote_target {
  const char *url;
  const char *api_key; /* may be NULL */
  atomic_bool cancel;  /* set by Ctrl-C: the request in flight stops */
} remote_target;

static int remote_query(void *self, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                        void *payload, tm_error *err) {
  remote_target *t = self;
  atomic_store(&t->cancel, false);
  return tm_cli_remote_query(t->url, t->api_key, sql, format, sink, payload, &t->cancel, err);
}

static int remote_datasets(void *self, json_t **out, tm_error *err) {
  remote_target *t = self;
  json_t *list = tm_cli_remote_datasets(t->url, t->api_key, err);
  if (!list) return err->code ? err->code : TM_ERROR;
  json_t *rows = json_array();
  size_t i;
  json_t *d;
  json_array_foreach(list, i, d) {
    const char *name = json_string_value(json_object_get(d, "name"));
    bool accel = json_is_true(json_object_get(d, "acceleration_enabled"));
    if (name) json_array_append_new(rows, json_pack("{ss,ss}", "name", name, "kind",
                                                    accel ? "accelerated" : "federated"));
  }
  json_decref(list);
  if (!rows) return tm_error_nomem(err);
  *out = rows;
  return TM_OK;
}

static void remote_interrupt(void *self) {
  remote_target *t = self;
  atomic_store(&t->cancel, true);
}

/* The REPL (or the piped statements) against the server at url. */
static int repl_remote(const char *url, const char *api_key, const char *owner_of,
                       tm_out_format format) {
  remote_target rt = {url, api_key, false};
  char *where = owner_of ? tm_asprintf("%s (the server running %s)", url, owner_of) : NULL;
  tm_repl_target t = {where ? where : url, remote_query, remote_datasets, remote_interrupt, &rt};
  tm_repl_options o = {format, isatty(STDIN_FILENO) != 0, stdin};
  int code = tm_repl_run(&t, &o);
  tm_free(where);
  return code;
}

/* Creates the config's views (Spice's `views:`) over what the catalog lists; a view that fails is logged. */
static void add_views(const tm_config *cfg, tm_sql_catalog *cat) {
  for (size_t i = 0; i < cfg->n_views; i++) {
    tm_error err;
    tm_error_init(&err);
    if (tm_sql_catalog_add_view(cat, cfg->views[i].name, cfg->views[i].sql, &err) != TM_OK)
      tm_log(TM_LOG_WARN, cfg->views[i].name, "view not created: %s", err.message);
  }
}

/* QUERY or the REPL in this process, over cfg's accelerations. */
static int run_local(const tm_config *cfg, const char *query, tm_out_format format) {
  tm_error err;
  tm_error_init(&err);
  tm_db *db = NULL;
  tm_sql_catalog *cat = NULL;
  tm_sql_session *session = NULL;
  json_t *listed = json_array();
  tm_accel **accels = tm_calloc(cfg->n_datasets ? cfg->n_datasets : 1, sizeof *accels);
  int rc = accels && listed ? tm_runtime_db_open(cfg, &db, &err) : tm_error_nomem(&err);
  if (rc == TM_OK) rc = tm_sql_catalog_new(&cat, db, &err);
  if (rc == TM_OK) rc = tm_runtime_catalog_describe(cat, cfg, &err);
  tm_accel_options ao;
  tm_accel_options_init(&ao);
  ao.db = db;
  ao.base_dir = cfg->dir;
  for (size_t i = 0; i < cfg->n_datasets && rc == TM_OK; i++) {
    const tm_dataset_def *d = &cfg->datasets[i];
    rc = tm_accel_new(&accels[i], d, &ao, &err);
    if (rc != TM_OK) break;
    tm_engine *e = tm_accel_engine(accels[i]);
    const char *kind = NULL;
    if (e) {
      rc = tm_sql_catalog_add(cat, e, &err);
      tm_engine_release(e);
      kind = "accelerated";
    } else if (!d->has_acceleration || !d->acceleration.enabled) {
      /* Federated (C6): the table reads the source on every query. */
      tm_source_options so;
      tm_accel_source_options(d, cfg->dir, &so);
      rc = tm_sql_catalog_add_source(cat, &so, &err);
      kind = "federated";
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
    if (rc == TM_OK && kind &&
        json_array_append_new(listed, json_pack("{ss,ss}", "name", d->name, "kind", kind)) != 0)
      rc = tm_error_nomem(&err);
  }
  if (rc == TM_OK) add_views(cfg, cat);
  if (rc == TM_OK) rc = tm_sql_session_new(&session, cat, &err);
  int code = TM_EXIT_OK;
  if (rc == TM_OK && query) {
    code = run_one(session, query, format);
  } else if (rc == TM_OK) {
    local_target lt = {session, listed};
    char *where = tm_asprintf("%s, in this process", cfg->path);
    tm_repl_target t = {where ? where : cfg->path, local_query, local_datasets, local_interrupt,
                        &lt};
    tm_repl_options o = {format, isatty(STDIN_FILENO) != 0, stdin};
    code = tm_repl_run(&t, &o);
    tm_free(where);
  } else {
    fprintf(stderr, "tidemark: %s\n", err.message);
    code = TM_EXIT_FAILURE;
  }
  tm_sql_session_free(session);
  tm_sql_catalog_free(cat);
  for (size_t i = 0; accels && i < cfg->n_datasets; i++) tm_accel_free(accels[i]);
  tm_free(accels);
  tm_db_release(db);
  json_decref(listed);
  return code;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *fmt = tm_cli_get(cmd, args, "format");
  tm_out_format format = TM_OUT_TABLE;
  if (fmt && tm_out_format_parse(fmt, &format) != TM_OK)
    return tm_cli_usage_error(cmd, "bad --format '%s' (allowed: table, csv, json, jsonl)", fmt);
  const char *query = args->n_positional ? args->positional[0] : NULL;
  const char *url = tm_cli_get(cmd, args, "url");
  const char *key = tm_cli_get(cmd, args, "api-key");
  if (!key) key = getenv("TIDEMARK_API_KEY");
  /* Neither -c nor --url, and no config here: a server running at the
   * default address answers (it holds the accelerations). */
  if (!url && !tm_cli_get(cmd, args, "config") && tm_cli_use_default_server())
    url = "http://" TM_RUNTIME_DEFAULT_HTTP;
  if (url)
    return query ? tm_cli_sql_remote(cmd, url, query, format, key)
                 : repl_remote(url, key, NULL, format);
  if (!getenv("TIDEMARK_LOG")) tm_log_set_level(TM_LOG_WARN);
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  /* A running server owns these accelerations: it answers (SPEC 1.2). */
  char *owner = tm_cli_owner_url(&cfg);
  /* The server checks the config's runtime.auth keys: without --api-key, one of them. */
  if (!key && cfg.n_api_keys) key = cfg.api_keys[0];
  if (owner) {
    code = query ? tm_cli_sql_remote(cmd, owner, query, format, key)
                 : repl_remote(owner, key, cfg.path, format);
    tm_free(owner);
  } else {
    code = run_local(&cfg, query, format);
  }
  tm_config_dispose(&cfg);
  return code;
}

const tm_cli_cmd tm_cli_cmd_sql = {
    "sql",
    "run SQL over the accelerations",
    "tidemark sql [-c FILE | --url URL] [QUERY] [--format table|csv|json|jsonl]",
    "Runs read-only SQL (DuckDB's dialect) over the datasets and views of the config, or\n"
    "of a running server with --url. With neither, the config in the current folder, or\n"
    "if there is none, the server at http://" TM_RUNTIME_DEFAULT_HTTP ". When a server runs\n"
    "on the config (tidemark run), it owns the accelerations and answers.\n"
    "\n"
    "Without QUERY, statements come from stdin, each ended by ';' (it may span lines).\n"
    "On a terminal, a REPL with line editing and history (~/.tidemark_history, or the\n"
    "file $TIDEMARK_HISTORY names; empty: none); Ctrl-C drops the statement being typed\n"
    "or stops the one running, Ctrl-D leaves. From a pipe or a file (tidemark sql <\n"
    "q.sql), without prompts; every statement runs, and the exit code is non-zero when\n"
    "one failed. Commands at the start of a line: .tables, .schema [NAME],\n"
    ".mode table|csv|json|jsonl, .timer on|off, .help, .quit.\n"
    "\n"
    "Writes, ATTACH, PRAGMA changes and extension loading are refused (SPEC D4).",
    k_opts,
    1,
    run};
