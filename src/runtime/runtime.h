/*
 * runtime.h - `tidemark run`: datasets, scheduler, HTTP API, metrics,
 * acceleration snapshots (runtime layer; SPEC 1.2-1.5, C1-C5, D2-D4).
 *
 * A runtime owns one loaded config's datasets: for each accelerated dataset
 * a tm_accel (refresh layer) that a bounded pool of refresh workers drives
 * (refresh_check_interval, retries with exponential backoff, retention, API
 * triggers; one job per dataset at a time), a SQL catalog over their engines,
 * the HTTP API of SPEC 1.3 and the Prometheus endpoint of SPEC 1.4 on
 * libmicrohttpd, and the acceleration snapshots of SPEC C2 (created after
 * refreshes, restored at start when the local acceleration is missing).
 *
 * Lifecycle: tm_runtime_new (nothing runs yet) -> tm_runtime_start (binds the
 * addresses, starts the threads; datasets load in the background) ->
 * tm_runtime_stop (stops accepting, cancels refreshes in flight, which roll
 * back or finish committing, joins every thread) -> tm_runtime_free. Signals
 * are the caller's business (the cli layer turns SIGINT and SIGTERM into
 * tm_runtime_stop). docs/RUNTIME.md and docs/HTTP_API.md describe behaviour.
 *
 * Threads: every function except tm_runtime_free may be called from any
 * thread; tm_runtime_stop may be called more than once.
 */
#ifndef TM_RUNTIME_RUNTIME_H
#define TM_RUNTIME_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/db.h"
#include "engine/sql.h"
#include "runtime/config/config.h"
#include "util/error.h"

typedef struct tm_runtime tm_runtime;

#define TM_RUNTIME_DEFAULT_HTTP "127.0.0.1:8090"
#define TM_RUNTIME_DEFAULT_METRICS "127.0.0.1:9090"

typedef struct tm_runtime_options {
  int version;               /* TM_RUNTIME_OPTIONS_VERSION */
  const char *http_addr;     /* HOST:PORT, [IPV6]:PORT or PORT (loopback); NULL: default;
                                port 0 picks a free port (tm_runtime_port) */
  const char *metrics_addr;  /* same forms; NULL: default; "off": no metrics endpoint */
  const char *api_key;       /* every endpoint but /health needs it (D4); NULL or "": none */
  int refresh_workers;       /* refresh worker threads; 0: min(4, accelerated datasets) */
  int64_t query_timeout_ms;  /* a /v1/sql statement's limit; 0: 30 s */
  int query_slots;           /* queries running at once; 0: one per CPU, 2..64 */
  int query_queue;           /* queries waiting for a slot; -1: 8 per slot, at least 64 */
  int max_connections;       /* HTTP connections at once; 0: 1024 */
  int max_connections_per_client; /* from one address; 0: a quarter of max_connections */
  int64_t request_timeout_ms; /* a request's head and body must arrive within; 0: 10 s */
  size_t max_sql_bytes;      /* /v1/sql body limit; 0: 1 MiB */
  const char *pg_addr;       /* PostgreSQL wire protocol address (runtime/pgwire/pgwire.h),
                                same forms as http_addr; NULL: off */
  const char *pg_auth;       /* its password method with API keys: "scram-sha-256" (NULL),
                                "md5" or "password" */
  int pg_max_connections;    /* its connections at once; 0: 64 */
  int64_t retry_base_ms;     /* first retry delay (C4); 0: 1 s; doubles up to retry_max_ms */
  int64_t retry_max_ms;      /* 0: 5 min */
  /*
   * Called once, from a worker thread, when the DuckDB instance has stopped
   * for good (tm_db_healthy): the process must restart. The cli layer turns
   * it into a shutdown with a failing exit code. May be NULL.
   */
  void (*on_fatal)(void *payload, const char *why);
  void *fatal_payload;
} tm_runtime_options;

#define TM_RUNTIME_OPTIONS_VERSION 1
void tm_runtime_options_init(tm_runtime_options *o);

/**
 * A runtime for cfg, which must outlive it. Opens nothing and binds nothing
 * yet; checks the options (TM_EINVALID naming a bad address). Release with
 * tm_runtime_free.
 */
int tm_runtime_new(tm_runtime **out, const tm_config *cfg, const tm_runtime_options *opts,
                   tm_error *err) TM_WARN_UNUSED;

/**
 * Binds the HTTP and metrics addresses and starts the HTTP threads, the
 * refresh workers and the loading of every dataset (a dataset that cannot
 * load is reported and skipped; the others run). Errors: TM_EIO (an address
 * cannot be bound), TM_ENOMEM.
 */
int tm_runtime_start(tm_runtime *rt, tm_error *err) TM_WARN_UNUSED;

/**
 * Shuts down: stops accepting connections, marks every dataset ShuttingDown,
 * cancels refreshes in flight (they roll back, or finish committing if they
 * already were), joins the workers and stops the HTTP servers. Idempotent.
 */
void tm_runtime_stop(tm_runtime *rt);

/** Stops if needed and frees everything. NULL is a no-op. */
void tm_runtime_free(tm_runtime *rt);

/** Whether DuckDB stopped for good (a fatal I/O error); the reason in why. */
bool tm_runtime_fatal(tm_runtime *rt, char *why, size_t cap);

/** Every dataset is ready to serve (SPEC C1; what GET /v1/ready answers). */
bool tm_runtime_ready(tm_runtime *rt);

/** The bound port of the HTTP API (which = "http"), metrics ("metrics") or the PostgreSQL
 * wire protocol ("pg"); 0 if none. */
int tm_runtime_port(tm_runtime *rt, const char *which);

/**
 * Opens the DuckDB instance for cfg's datasets (the one a runtime, and every
 * command working on the accelerations in-process, uses): runtime.query's
 * memory limit, threads and spill folder (default <config dir>/.tidemark/tmp),
 * and the folders of every file-mode acceleration (db.h). *out: tm_db_release.
 */
int tm_runtime_db_open(const tm_config *cfg, tm_db **out, tm_error *err) TM_WARN_UNUSED;
/**
 * Records on cat the SQL comments the config gives: each dataset's and
 * view's description and its columns' descriptions (Spice's description
 * and columns keys; tm_sql_catalog_describe). Errors: TM_ENOMEM.
 */
int tm_runtime_catalog_describe(tm_sql_catalog *cat, const tm_config *cfg, tm_error *err)
    TM_WARN_UNUSED;

/*
 * One process owns an acceleration's files (DuckDB locks them). A started
 * runtime says so in <data dir>/server.json, {"pid": N, "url": "http://..."},
 * removed when it stops, so that `tidemark sql|status|refresh` on the same
 * config ask it instead of opening the files (SPEC 1.2).
 */
#define TM_RUNTIME_SERVER_FILE "server.json"
#define TM_RUNTIME_LOCK_FILE "server.lock" /* held (flock) by the running server */

/**
 * The URL of the live runtime that owns cfg's data folder: its server file
 * names a process that exists. *url_out (tm_free) and *pid_out; TM_ENOTFOUND
 * when there is none (or the file is stale).
 */
int tm_runtime_owner(const tm_config *cfg, char **url_out, int64_t *pid_out, tm_error *err)
    TM_WARN_UNUSED;

#endif
