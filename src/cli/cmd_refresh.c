/*
 * cmd_refresh.c - `tidemark refresh`: one refresh of the named datasets in
 * this process, then exit (cli layer; SPEC 1.2, A10, B11).
 *
 * --explain prints each dataset's refresh plan instead (refresh/plan.h): it
 * reads the source's metadata and the acceleration's state, never a row,
 * and changes nothing.
 *
 * Prints one summary line per dataset on stdout; logs (warnings such as a
 * fallback, B6) go to stderr. On a terminal, a long refresh shows progress
 * on stderr. Exit code 0 when every refresh succeeded, 1 otherwise.
 *
 * A run that changed nothing leaves the no-op stamp (noop.h), so that the
 * next identical run is answered by the front program without starting
 * this one. Only a run whose outcome depends on nothing but the files the
 * stamp pins leaves one: every dataset it refreshes reads a local source
 * (file: or a file-system Iceberg table without remapped locations) into
 * a file-mode acceleration without retention or snapshots, and reports +0
 * rows by time or "no new snapshot"; nothing was logged; no --full or
 * --sql; and the sources did not change while it ran.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "io/io.h"
#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/noop.h"
#include "util/time.h"

/* DuckDB's memory limit of `tidemark refresh` when the config sets none. */
#define TM_CLI_REFRESH_MEMORY_LIMIT ((int64_t)128 << 20)

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"full", 0, NULL, "a full refresh instead of the configured mode"},
    {"explain", 0, NULL, "print each refresh's plan (what it would read and commit) and change nothing"},
    {"sql", 0, "SQL", "a one-off refresh_sql for this refresh (reads by time, SPEC A10/B11)"},
    {"refresh-sql", 0, "SQL", "Spice's spelling of --sql"},
    {"refresh-mode", 0, "full|append", "Spice's: full is --full; append, the configured append"},
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

/* The no-op stamp this run may leave (noop.h). */
typedef struct stamp_plan {
  bool ok;            /* the run can still leave a stamp */
  uint64_t key;
  int64_t logs;       /* tm_log_emitted() when the command started */
  char *stamp;        /* owned: <config dir>/.tidemark/refresh.noop */
  char **paths;       /* owned: the config file, then each dataset's source root */
  uint64_t *before;   /* the trees of paths before the refreshes */
  size_t n_paths;
  char **lines;       /* owned: each dataset's summary without its duration */
  size_t n_lines;
} stamp_plan;

static void plan_dispose(stamp_plan *p) {
  for (size_t i = 0; i < p->n_paths; i++) tm_free(p->paths[i]);
  for (size_t i = 0; i < p->n_lines; i++) tm_free(p->lines[i]);
  tm_free(p->paths);
  tm_free(p->before);
  tm_free(p->lines);
  tm_free(p->stamp);
  memset(p, 0, sizeof *p);
}

/* Appends an owned path and its tree now; false (and the plan off) when that fails. */
static void plan_path(stamp_plan *p, char *path) {
  if (!p->ok || !path) {
    tm_free(path);
    p->ok = false;
    return;
  }
  char **paths = tm_reallocarray(p->paths, p->n_paths + 1, sizeof *paths);
  if (paths) p->paths = paths;
  uint64_t *before = tm_reallocarray(p->before, p->n_paths + 1, sizeof *before);
  if (before) p->before = before;
  if (!paths || !before || !tm_noop_tree(path, &p->before[p->n_paths])) {
    tm_free(path);
    p->ok = false;
    return;
  }
  p->paths[p->n_paths++] = path;
}

static char *absolute(const char *dir, const char *path) {
  if (path[0] == '/') return tm_strdup(path);
  return tm_path_join(dir, path);
}

/* The local folder or file dataset d reads, or NULL when it reads none (or not only one). */
static char *local_source(const tm_config *cfg, const tm_dataset_def *d) {
  const char *p = d->from;
  if (d->source_kind == TM_SOURCE_ICEBERG_FILE) {
    p += strlen("iceberg:");
    /* An explicit metadata file or remapped data locations: other paths are read too. */
    for (size_t i = 0; i < d->params.len; i++)
      if (!strcmp(d->params.items[i].key, "metadata_path") ||
          tm_str_has_prefix(d->params.items[i].key, "location_"))
        return NULL;
  } else if (d->source_kind != TM_SOURCE_FILE) {
    return NULL;
  }
  if (tm_str_has_prefix(p, "file://")) p += 7;
  else if (tm_str_has_prefix(p, "file:")) p += 5;
  else return NULL;
  if (!*p) return NULL;
  char *abs = absolute(cfg->dir, p);
  if (abs && d->source_kind == TM_SOURCE_ICEBERG_FILE && tm_str_has_suffix(abs, ".metadata.json")) {
    char *meta = tm_path_dirname(abs); /* <table>/metadata */
    tm_free(abs);
    abs = meta ? tm_path_dirname(meta) : NULL;
    tm_free(meta);
  }
  return abs;
}

/*
 * Whether the outcome of refreshing d depends only on its files (see the top
 * of this file), its acceleration's among them: inside <config dir>/.tidemark,
 * which the stamp pins whole (not a file a param put elsewhere).
 */
static bool stampable(const tm_config *cfg, const tm_dataset_def *d) {
  const tm_acceleration_def *a = &d->acceleration;
  if (a->mode != TM_ENGINE_FILE || a->retention_check_enabled ||
      a->snapshots != TM_SNAPSHOTS_DISABLED || !d->data_path)
    return false;
  size_t n = strlen(cfg->dir);
  return strncmp(d->data_path, cfg->dir, n) == 0 && strncmp(d->data_path + n, "/.tidemark/", 11) == 0 &&
         !strstr(d->data_path + n, "/..");
}

/* Starts the plan: removes any stamp, pins the key, the config file and the sources. */
static void plan_start(stamp_plan *p, const tm_config *cfg, const tm_cli_cmd *cmd,
                       const tm_cli_args *args, int64_t logs) {
  memset(p, 0, sizeof *p);
  p->logs = logs;
  p->stamp = tm_asprintf("%s/.tidemark/%s", cfg->dir, TM_NOOP_STAMP_NAME);
  if (!p->stamp) return;
  unlink(p->stamp); /* whatever this run does, the old stamp no longer holds */
  p->ok = !tm_cli_refresh_sql(cmd, args) && !tm_cli_refresh_full(cmd, args) &&
          tm_noop_key(tm_cli_argc(), tm_cli_argv(), "/proc/self/exe", &p->key);
  char cwd[4096];
  if (p->ok && getcwd(cwd, sizeof cwd)) plan_path(p, absolute(cwd, cfg->path));
  else p->ok = false;
  /* The dotenv files the secret stores looked in, read or missing. */
  for (size_t i = 0; p->ok && i < cfg->n_secret_files; i++) plan_path(p, tm_strdup(cfg->secret_files[i]));
  /* Values the key leaves out (util/noop.h) must not matter. */
  if (cfg->reads_volatile_env) p->ok = false;
}

/* Whether this command refreshes d: named, or every accelerated dataset when none is. */
static bool selected(const tm_dataset_def *d, const tm_cli_args *args) {
  if (!d->has_acceleration || !d->acceleration.enabled) return false;
  bool named = args->n_positional == 0;
  for (size_t k = 0; k < args->n_positional; k++)
    if (strcmp(args->positional[k], d->name) == 0) named = true;
  return named;
}

/* Pins the source of every dataset this command refreshes, before it reads them. */
static void plan_sources(stamp_plan *p, const tm_config *cfg, const tm_cli_args *args) {
  for (size_t i = 0; p->ok && i < cfg->n_datasets; i++) {
    const tm_dataset_def *d = &cfg->datasets[i];
    if (!selected(d, args)) continue;
    char *root = stampable(cfg, d) ? local_source(cfg, d) : NULL;
    plan_path(p, root); /* NULL: the plan is off */
  }
}

/* The outcome r of a refresh: whether the stamp can replay it. */
static void plan_result(stamp_plan *p, const tm_dataset_def *d, const tm_refresh_result *r) {
  /* A postgres acceleration lives in a server other processes write too: never replayed. */
  bool noop = !r->skipped && d->acceleration.engine != TM_ENGINE_POSTGRES &&
              r->rows_written == 0 && r->fallback == TM_FALLBACK_NONE &&
              (r->how == TM_READ_NOTHING || r->how == TM_READ_BY_TIME || r->how == TM_READ_FULL);
  if (!p->ok || !noop) {
    p->ok = false;
    return;
  }
  char line[512];
  tm_refresh_result_what(r, d->name, line, sizeof line);
  char **lines = tm_reallocarray(p->lines, p->n_lines + 1, sizeof *lines);
  if (lines) p->lines = lines;
  char *copy = lines ? tm_strdup(line) : NULL;
  if (!copy) {
    p->ok = false;
    return;
  }
  p->lines[p->n_lines++] = copy;
}

/*
 * After the refreshes, with every acceleration closed: when nothing was
 * logged and no source changed while they ran, writes the stamp with the
 * trees as they are now and the .tidemark folder's.
 */
static void plan_finish(stamp_plan *p, const tm_config *cfg) {
  if (!p->ok || p->n_lines == 0 || tm_log_emitted() != p->logs) return;
  for (size_t i = 0; i < p->n_paths; i++) {
    uint64_t now;
    if (!tm_noop_tree(p->paths[i], &now) || now != p->before[i]) return;
  }
  /* The accelerations as this run left them (plan_path hashes the tree now). */
  plan_path(p, tm_asprintf("%s/.tidemark", cfg->dir));
  if (!p->ok) return;
  /* Best effort: without a stamp the next run is just not shortened. */
  (void)tm_noop_write(p->stamp, p->key, (const char *const *)p->paths, p->before, p->n_paths,
                      (const char *const *)p->lines, p->n_lines);
}

/*
 * --explain: each selected dataset's plan, under a "<name>:" line, indented.
 * A running server keeps its files locked; the plan is then made by this
 * process only if it can open them (it fails clearly otherwise).
 */
static int explain_all(const tm_config *cfg, const tm_cli_cmd *cmd, const tm_cli_args *args) {
  tm_db *db = NULL;
  tm_accel_options ao;
  if (!tm_cli_open_accels(cfg, &db, &ao)) return TM_EXIT_FAILURE;
  tm_error err;
  tm_error_init(&err);
  int failures = 0;
  for (size_t i = 0; i < cfg->n_datasets; i++) {
    const tm_dataset_def *d = &cfg->datasets[i];
    if (!selected(d, args)) continue;
    tm_accel *a = NULL;
    tm_refresh_request req;
    tm_refresh_request_init(&req);
    req.full = tm_cli_refresh_full(cmd, args);
    req.sql = tm_cli_refresh_sql(cmd, args);
    tm_buf text = TM_BUF_INIT(1 << 20);
    int rc = tm_accel_new(&a, d, &ao, &err);
    if (rc == TM_OK) rc = tm_accel_explain(a, &req, &text, &err);
    if (rc == TM_OK) {
      printf("%s:\n", d->name);
      const char *line = tm_buf_cstr(&text);
      while (*line) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        printf("  %.*s\n", (int)n, line);
        line += n + (nl != NULL);
      }
    } else {
      fprintf(stderr, "tidemark: %s: cannot plan the refresh: %s\n", d->name, err.message);
      failures++;
    }
    tm_buf_dispose(&text);
    tm_accel_free(a);
  }
  tm_db_release(db);
  fflush(stdout);
  return failures ? TM_EXIT_FAILURE : TM_EXIT_OK;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  int64_t logs = tm_log_emitted();
  const char *url = tm_cli_get(cmd, args, "url");
  bool explain = tm_cli_flag(cmd, args, "explain");
  if (url && explain) return tm_cli_usage_error(cmd, "--explain plans in this process: drop --url");
  const char *mode = tm_cli_get(cmd, args, "refresh-mode");
  if (tm_cli_get(cmd, args, "sql") && tm_cli_get(cmd, args, "refresh-sql"))
    return tm_cli_usage_error(cmd, "give --sql or --refresh-sql, not both");
  if (mode && strcmp(mode, "full") != 0 && strcmp(mode, "append") != 0)
    return tm_cli_usage_error(cmd, "bad --refresh-mode '%s' (allowed: full, append)", mode);
  if (mode && strcmp(mode, "append") == 0 && tm_cli_flag(cmd, args, "full"))
    return tm_cli_usage_error(cmd, "--full and --refresh-mode append contradict each other");
  if (url) return tm_cli_refresh_remote(cmd, url, args, NULL);
  const char *sql = tm_cli_refresh_sql(cmd, args);
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
  /* --refresh-mode append: what the datasets do already, so it must be their mode (as the API). */
  for (size_t i = 0; mode && strcmp(mode, "append") == 0 && i < cfg.n_datasets; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    if (selected(d, args) && d->has_acceleration && d->acceleration.enabled &&
        d->acceleration.refresh_mode != TM_REFRESH_APPEND) {
      code = tm_cli_usage_error(cmd, "dataset '%s' refreshes in %s mode; an append refresh needs "
                                     "refresh_mode: append in the config", d->name,
                                tm_refresh_mode_name(d->acceleration.refresh_mode));
      tm_config_dispose(&cfg);
      return code;
    }
  }
  if (explain) {
    code = explain_all(&cfg, cmd, args);
    tm_config_dispose(&cfg);
    return code;
  }
  stamp_plan plan;
  plan_start(&plan, &cfg, cmd, args, logs);
  plan_sources(&plan, &cfg, args);
  /* A running server owns these accelerations: it refreshes them (SPEC 1.2). */
  char *owner = tm_cli_owner_url(&cfg);
  if (owner) {
    fprintf(stderr, "tidemark: the server at %s owns these accelerations; asking it to refresh\n", owner);
    code = tm_cli_refresh_remote(cmd, owner, args, cfg.n_api_keys ? cfg.api_keys[0] : NULL);
    tm_free(owner);
    plan_dispose(&plan);
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
  tm_accel_options ao;
  if (!tm_cli_open_accels(&cfg, &db, &ao)) {
    plan_dispose(&plan);
    tm_config_dispose(&cfg);
    return TM_EXIT_FAILURE;
  }
  bool tty = isatty(STDERR_FILENO);
  int failures = 0, refreshed = 0;
  for (size_t i = 0; i < cfg.n_datasets; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    if (!selected(d, args)) continue;
    refreshed++;
    tm_error err;
    tm_error_init(&err);
    tm_accel *a = NULL;
    if (tm_accel_new(&a, d, &ao, &err) != TM_OK) {
      fprintf(stderr, "tidemark: %s: %s\n", d->name, err.message);
      failures++;
      plan.ok = false;
      continue;
    }
    tm_refresh_request req;
    tm_refresh_request_init(&req);
    req.full = tm_cli_refresh_full(cmd, args);
    req.sql = sql;
    progress p = {0, tm_monotonic_ns(), false};
    if (tty) {
      req.progress = on_progress;
      req.payload = &p;
    }
    tm_refresh_result res;
    int rc = tm_accel_refresh(a, &req, &res, &err);
    if (p.shown) {
      fprintf(stderr, "\r\033[K");
      plan.ok = false;
    }
    if (rc == TM_OK) {
      plan_result(&plan, d, &res);
      char line[512];
      tm_refresh_result_line(&res, d->name, line, sizeof line);
      printf("%s\n", line);
      fflush(stdout);
    } else {
      fprintf(stderr, "tidemark: %s: refresh failed: %s\n", d->name, err.message);
      failures++;
      plan.ok = false;
    }
    tm_accel_free(a);
  }
  tm_db_release(db);
  if (failures == 0) plan_finish(&plan, &cfg);
  plan_dispose(&plan);
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
