/*
 * cmd_refresh.c - `tidemark refresh`: one refresh of the named datasets in
 * this process, then exit (cli layer; SPEC 1.2, A10, B11).
 *
 * Prints one summary line per dataset on stdout; logs (warnings such as a
 * fallback, B6) go to stderr. On a terminal, a long refresh shows progress
 * on stderr. Exit code 0 when every refresh succeeded, 1 otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

/* DuckDB's memory limit of `tidemark refresh` when the config sets none. */
#define TM_CLI_REFRESH_MEMORY_LIMIT ((int64_t)128 << 20)

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"full", 0, NULL, "a full refresh instead of the configured mode"},
    {"sql", 0, "SQL", "a one-off refresh_sql for this refresh (reads by time, SPEC A10/B11)"},
    {"url", 0, "URL", "trigger the refresh on a running server instead (tidemark run)"},
    {"api-key", 0, "KEY", "with --url: the server's API key (or TIDEMARK_API_KEY)"},
    {0}};

typedef struct progress {
  int64_t last_ns;
  int64_t start_ns;
  bool shown;
} progress;

static void on_progress(const char *dataset, int64_t files, int64_t rows, void *payload) {
  progress *p = payload;
  int64_t now = tm_monotonic_ns();
  if (now - p->last_ns < 200000000) return;
  p->last_ns = now;
  double secs = (double)(now - p->start_ns) / 1e9;
  fprintf(stderr, "\r\033[K%s: %lld files, %lld rows read (%.0f rows/s)", dataset,
          (long long)files, (long long)rows, secs > 0 ? (double)rows / secs : 0.0);
  fflush(stderr);
  p->shown = true;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *url = tm_cli_get(cmd, args, "url");
  if (url) return tm_cli_refresh_remote(cmd, url, args);
  const char *sql = tm_cli_get(cmd, args, "sql");
  if (sql && args->n_positional != 1)
    return tm_cli_usage_error(cmd, "--sql applies to one dataset: name it");
  if (!getenv("TIDEMARK_LOG")) tm_log_set_level(TM_LOG_WARN);
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  for (size_t i = 0; i < args->n_positional; i++) {
    const tm_dataset_def *d = tm_config_find(&cfg, args->positional[i]);
    if (!d) {
      code = tm_cli_usage_error(cmd, "no dataset named '%s' in %s", args->positional[i], cfg.path);
      tm_config_dispose(&cfg);
      return code;
    }
    if (!d->has_acceleration || !d->acceleration.enabled) {
      code = tm_cli_usage_error(cmd, "dataset '%s' has no acceleration to refresh", d->name);
      tm_config_dispose(&cfg);
      return code;
    }
  }
  /* A running server owns these accelerations: it refreshes them (SPEC 1.2). */
  char *owner = tm_cli_owner_url(&cfg);
  if (owner) {
    fprintf(stderr, "tidemark: the server at %s owns these accelerations; asking it to refresh\n", owner);
    code = tm_cli_refresh_remote(cmd, owner, args);
    tm_free(owner);
    tm_config_dispose(&cfg);
    return code;
  }
  /*
   * This process serves no query: DuckDB's buffer pool would only cache the
   * blocks the refresh writes, growing with the data. A small default keeps
   * the refresh's memory bounded (DuckDB spills past it); a configured
   * runtime.query.memory_limit is kept (docs/RUNTIME.md).
   */
  if (cfg.query_memory_limit == 0) cfg.query_memory_limit = TM_CLI_REFRESH_MEMORY_LIMIT;
  tm_db *db = NULL;
  tm_error dberr;
  tm_error_init(&dberr);
  if (tm_runtime_db_open(&cfg, &db, &dberr) != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", dberr.message);
    tm_config_dispose(&cfg);
    return TM_EXIT_FAILURE;
  }
  tm_accel_options ao;
  tm_accel_options_init(&ao);
  ao.db = db;
  ao.base_dir = cfg.dir;
  bool tty = isatty(STDERR_FILENO);
  int failures = 0, refreshed = 0;
  for (size_t i = 0; i < cfg.n_datasets; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    bool named = args->n_positional == 0;
    for (size_t k = 0; k < args->n_positional; k++)
      if (strcmp(args->positional[k], d->name) == 0) named = true;
    if (!named || !d->has_acceleration || !d->acceleration.enabled) continue;
    refreshed++;
    tm_error err;
    tm_error_init(&err);
    tm_accel *a = NULL;
    if (tm_accel_new(&a, d, &ao, &err) != TM_OK) {
      fprintf(stderr, "tidemark: %s: %s\n", d->name, err.message);
      failures++;
      continue;
    }
    tm_refresh_request req;
    tm_refresh_request_init(&req);
    req.full = tm_cli_flag(cmd, args, "full");
    req.sql = sql;
    progress p = {0, tm_monotonic_ns(), false};
    if (tty) {
      req.progress = on_progress;
      req.payload = &p;
    }
    tm_refresh_result res;
    int rc = tm_accel_refresh(a, &req, &res, &err);
    if (p.shown) fprintf(stderr, "\r\033[K");
    if (rc == TM_OK) {
      char line[512];
      tm_refresh_result_line(&res, d->name, line, sizeof line);
      printf("%s\n", line);
      fflush(stdout);
    } else {
      fprintf(stderr, "tidemark: %s: refresh failed: %s\n", d->name, err.message);
      failures++;
    }
    tm_accel_free(a);
  }
  tm_db_release(db);
  tm_config_dispose(&cfg);
  if (refreshed == 0) fprintf(stderr, "tidemark: no accelerated dataset to refresh\n");
  return failures ? TM_EXIT_FAILURE : TM_EXIT_OK;
}

const tm_cli_cmd tm_cli_cmd_refresh = {
    "refresh",
    "refresh datasets once in this process, then exit",
    "tidemark refresh [-c FILE] [DATASET...] [--full] [--sql SQL] [--url URL [--api-key KEY]]",
    "Refreshes the named datasets (default: every accelerated dataset) once, then exits.\n"
    "Prints one summary line per dataset: rows added, how it read (snapshots or time),\n"
    "the fallback reason if any, and the time taken. For cron users and tests.\n"
    "With --url, asks a running server (tidemark run) to refresh them instead and returns\n"
    "once the refreshes are queued; `tidemark status --url` shows how they went.",
    k_opts,
    SIZE_MAX,
    run};
