/*
 * cmd_run.c - `tidemark run`: the long-running runtime (cli layer; SPEC 1.2).
 *
 * Loads the config, starts the runtime (runtime/runtime.h) and waits for
 * SIGINT or SIGTERM, which start a clean shutdown: stop accepting, cancel
 * refreshes in flight (they roll back or finish committing), join, exit 0.
 * A second signal during the shutdown exits at once with code 130.
 */
#include <pthread.h>
#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"http", 0, "ADDR", "HTTP API address (default 127.0.0.1:8090; port 0 picks a free one)"},
    {"metrics", 0, "ADDR", "Prometheus metrics address (default 127.0.0.1:9090; off: none)"},
    {"api-key", 0, "KEY", "require this key on every endpoint but /health (or TIDEMARK_API_KEY)"},
    {"pg", 0, "ADDR", "PostgreSQL wire protocol address (default off; a port alone: loopback)"},
    {"pg-auth", 0, "METHOD", "its password method with API keys: scram-sha-256 (default), md5, "
                            "password"},
    {"pg-max-connections", 0, "N", "its connections at once (default 64)"},
    {"refresh-workers", 0, "N", "refresh worker threads (default min(4, datasets))"},
    {"query-timeout", 0, "DURATION", "limit of one /v1/sql statement (default 30s)"},
    {"query-slots", 0, "N", "queries running at once (default one per CPU, at least 2)"},
    {"query-queue", 0, "N", "queries waiting for a slot before 503 (default 8 per slot, >= 64)"},
    {"max-connections", 0, "N", "HTTP connections at once (default 1024)"},
    {"max-connections-per-client", 0, "N", "from one client address (default a quarter)"},
    {"request-timeout", 0, "DURATION", "a request's head and body arrive within (default 10s)"},
    {0}};

static int parse_count(const tm_cli_cmd *cmd, const tm_cli_args *args, const char *name,
                       int64_t lo, int64_t hi, int *out) {
  const char *v = tm_cli_get(cmd, args, name);
  if (!v) return TM_EXIT_OK;
  int64_t n;
  if (tm_parse_int64(v, strlen(v), &n) != TM_OK || n < lo || n > hi)
    return tm_cli_usage_error(cmd, "bad --%s '%s' (expected %lld..%lld)", name, v, (long long)lo,
                              (long long)hi);
  *out = (int)n;
  return TM_EXIT_OK;
}

static sigset_t g_signals;

/* After the first signal: a second one ends the process at once. */
static void *second_signal(void *arg) {
  (void)arg;
  int sig;
  if (sigwait(&g_signals, &sig) == 0) {
    static const char msg[] = "tidemark: second signal, exiting without a clean shutdown\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(130);
  }
  return NULL;
}

/*
 * Allocator settings for a long-running server (glibc only; docs/RELIABILITY.md, Soak).
 * Without them the resident size of a soak kept rising while the bytes in use did not:
 * freed memory stayed in up to 8 x CPUs arenas (one per busy HTTP or refresh thread), and
 * glibc's dynamic mmap threshold moved buffers of a few MB (row groups, query results)
 * from mmap, which returns them on free, into those arenas. Two arenas and a fixed
 * threshold of 256 KiB bound both. An environment that tunes malloc itself wins.
 */
static void tune_allocator(void) {
#ifdef __GLIBC__
  if (getenv("GLIBC_TUNABLES") || getenv("MALLOC_ARENA_MAX") || getenv("MALLOC_MMAP_THRESHOLD_"))
    return;
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

/* DuckDB stopped for good: shut down (as on SIGTERM) and exit failing, so a supervisor restarts us. */
static void on_fatal(void *payload, const char *why) {
  (void)payload;
  (void)why;
  kill(getpid(), SIGTERM);
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  tm_runtime_options o;
  tm_runtime_options_init(&o);
  o.on_fatal = on_fatal;
  o.http_addr = tm_cli_get(cmd, args, "http");
  o.metrics_addr = tm_cli_get(cmd, args, "metrics");
  o.api_key = tm_cli_get(cmd, args, "api-key");
  o.pg_addr = tm_cli_get(cmd, args, "pg");
  o.pg_auth = tm_cli_get(cmd, args, "pg-auth");
  if (!o.api_key) o.api_key = getenv("TIDEMARK_API_KEY");
  const char *v;
  int code = TM_EXIT_OK;
  if ((code = parse_count(cmd, args, "refresh-workers", 1, 1024, &o.refresh_workers)) ||
      (code = parse_count(cmd, args, "query-slots", 1, 256, &o.query_slots)) ||
      (code = parse_count(cmd, args, "pg-max-connections", 1, 4096, &o.pg_max_connections)) ||
      (code = parse_count(cmd, args, "query-queue", 0, 65536, &o.query_queue)) ||
      (code = parse_count(cmd, args, "max-connections", 8, 16384, &o.max_connections)) ||
      (code = parse_count(cmd, args, "max-connections-per-client", 1, 16384,
                          &o.max_connections_per_client)))
    return code;
  tm_error err;
  tm_error_init(&err);
  if ((v = tm_cli_get(cmd, args, "query-timeout")) &&
      (tm_duration_parse(v, &o.query_timeout_ms, &err) != TM_OK || o.query_timeout_ms <= 0))
    return tm_cli_usage_error(cmd, "bad --query-timeout '%s' (expected e.g. 30s)", v);
  if ((v = tm_cli_get(cmd, args, "request-timeout")) &&
      (tm_duration_parse(v, &o.request_timeout_ms, &err) != TM_OK || o.request_timeout_ms < 100))
    return tm_cli_usage_error(cmd, "bad --request-timeout '%s' (expected e.g. 10s, at least 100ms)",
                              v);

  tune_allocator();
  tm_config cfg;
  code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  /* Spice's runtime.output_level: verbose; TIDEMARK_LOG, when set, wins. */
  if (cfg.log_debug && !getenv("TIDEMARK_LOG")) tm_log_set_level(TM_LOG_DEBUG);

  /* Every thread the runtime starts inherits this mask: only sigwait sees the signals. */
  sigemptyset(&g_signals);
  sigaddset(&g_signals, SIGINT);
  sigaddset(&g_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &g_signals, NULL);
  signal(SIGPIPE, SIG_IGN);

  tm_runtime *rt = NULL;
  int rc = tm_runtime_new(&rt, &cfg, &o, &err);
  if (rc != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", err.message);
    tm_config_dispose(&cfg);
    return rc == TM_EINVALID ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
  }
  rc = tm_runtime_start(rt, &err);
  if (rc != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", err.message);
    tm_runtime_free(rt);
    tm_config_dispose(&cfg);
    return TM_EXIT_FAILURE;
  }
  tm_log(TM_LOG_INFO, NULL, "tidemark %s running %s%s%s%s (%zu datasets); Ctrl-C stops", TM_VERSION,
         cfg.name ? "pod " : "", cfg.name ? cfg.name : "", cfg.name ? " from " : "", cfg.path,
         cfg.n_datasets);
  int sig = 0;
  sigwait(&g_signals, &sig);
  char why[512];
  bool fatal = tm_runtime_fatal(rt, why, sizeof why);
  if (fatal) tm_log(TM_LOG_ERROR, NULL, "stopping: DuckDB failed (%s); restart tidemark", why);
  else tm_log(TM_LOG_INFO, NULL, "received %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
  pthread_t watcher;
  if (pthread_create(&watcher, NULL, second_signal, NULL) == 0) pthread_detach(watcher);
  tm_runtime_stop(rt);
  tm_runtime_free(rt);
  tm_config_dispose(&cfg);
  return fatal ? TM_EXIT_FAILURE : TM_EXIT_OK;
}

const tm_cli_cmd tm_cli_cmd_run = {
    "run",
    "run the runtime: refresh on schedule, serve SQL over HTTP and metrics",
    "tidemark run [-c FILE] [--http ADDR] [--metrics ADDR] [--api-key KEY]",
    "Loads every dataset of the config, opens existing accelerations, refreshes them on\n"
    "schedule, serves the HTTP API and Prometheus metrics, and shuts down cleanly on\n"
    "SIGINT or SIGTERM (a refresh in flight rolls back or finishes committing).",
    k_opts,
    0,
    run};
