/*
 * runtime_int.h - what the runtime layer's files share (runtime layer,
 * private): the runtime struct, one dataset's scheduling state, and the
 * functions the scheduler, the HTTP server, the SQL endpoint and the
 * snapshots code call in each other.
 *
 * Locking: rt->mu guards every field of tm_rt_dataset except `accel` reads
 * after `loaded` is seen true under the lock (the pointer never changes
 * again until tm_runtime_free, which runs after every thread is joined).
 * The accel's own getters are thread-safe.
 */
#ifndef TM_RUNTIME_RUNTIME_INT_H
#define TM_RUNTIME_RUNTIME_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/sql.h"
#include "objstore/objstore.h"
#include "refresh/accel.h"
#include "runtime/http/http.h"
#include "runtime/pgwire/auth.h"
#include "runtime/runtime.h"
#include "util/metrics.h"

#define TM_RT_NEVER INT64_MAX
#define TM_RT_SNAPSHOT_KEEP 5          /* acceleration snapshots kept per dataset */

/* One dataset of the config and its scheduling state. */
typedef struct tm_rt_dataset {
  const tm_dataset_def *def;    /* borrowed from the config */
  bool accelerated;             /* has an enabled acceleration */
  tm_accel *accel;              /* owned; NULL until loaded (or when the load failed) */
  bool loaded;                  /* the load job finished successfully */
  bool load_failed;             /* reported and skipped (the others run) */
  bool settled;                 /* datasets that dependsOn it may load: its load failed, or it
                                   loaded and (accelerated) its first refresh ended or waits
                                   (refresh_on_startup: auto) */
  char load_error[TM_ERROR_MESSAGE_MAX];
  bool running;                 /* a worker holds this dataset (one job at a time, C4) */
  int64_t next_load_ms;         /* monotonic ms; TM_RT_NEVER once loaded or failed */
  int load_attempts;            /* bootstrap retries (bootstrap_on_failure_behavior: retry) */
  int64_t next_refresh_ms;      /* monotonic ms of the next scheduled refresh, or NEVER */
  int64_t next_retention_ms;    /* monotonic ms of the next retention check, or NEVER */
  int attempts;                 /* consecutive failed scheduled refreshes (retries) */
  bool has_trigger;             /* an API refresh is queued */
  int64_t trigger_due_ms;       /* monotonic ms when it may start (refresh_jitter_max) */
  bool trigger_full;
  char *trigger_sql;            /* owned or NULL */
  tm_engine *catalog_engine;    /* a reference: the engine the SQL catalog lists */
  /* acceleration snapshots (C2) */
  bool bootstrapped;            /* restored from a snapshot at start */
  char *snapshot_key;           /* owned: the last snapshot created or restored, or NULL */
  int64_t snapshot_ms;          /* wall clock of that snapshot */
  char snapshot_error[TM_ERROR_MESSAGE_MAX]; /* "" after a success */
} tm_rt_dataset;

struct tm_runtime {
  const tm_config *cfg;         /* borrowed */
  tm_runtime_options opts;      /* strings below are owned copies */
  char *http_addr, *metrics_addr;
  char **api_keys;              /* owned: --api-key's and runtime.auth's keys (D4) */
  size_t n_api_keys;
  tm_metrics *metrics;          /* owned registry: accel families + the ones below */
  tm_metric *m_http, *m_http_dur, *m_query_exec, *m_query_fail, *m_query_dur, *m_query_busy;
  tm_metric *m_active;          /* dataset_active_count{engine}, set on each scrape */
  tm_rt_dataset *ds;            /* owned array, one per config dataset, same order */
  size_t n_ds;
  pthread_mutex_t mu;           /* guards ds[] scheduling fields, stopping, started */
  pthread_cond_t cv;            /* workers wait here (CLOCK_MONOTONIC) */
  pthread_t *workers;           /* owned */
  int n_workers;                /* started workers */
  bool started, stopping, stopped;
  uint64_t rng;                 /* xorshift state for refresh jitter (under mu) */
  pthread_mutex_t view_mu;      /* guards view_state and view creation */
  unsigned char *view_state;    /* owned, one per cfg view: 0 pending, 1 created, 2 failure logged */
  char http_endpoint[80];       /* bound "host:port" of the API, "" before (under mu) */
  char metrics_endpoint[80];    /* of the metrics server, "" when off (under mu) */
  bool wrote_server_file;       /* <data dir>/server.json is ours */
  int lock_fd;                  /* <data dir>/server.lock, flocked; -1 when not taken */
  bool fatal;                   /* DuckDB stopped for good (under mu) */
  char fatal_why[512];
  volatile int cancel;          /* set at shutdown: refreshes in flight roll back */
  tm_db *db;                    /* owned reference: the DuckDB instance */
  tm_sql_catalog *catalog;      /* owned */
  pthread_mutex_t pool_mu;      /* guards the idle session pool */
  tm_sql_session **pool;        /* owned idle sessions */
  size_t n_pool, cap_pool;
  tm_sql_session **active;      /* sessions running a query (not owned), for shutdown */
  size_t n_active, cap_active;
  tm_http_route routes[16];     /* the API's routes (body limits from opts) */
  size_t n_routes;
  tm_http_route metrics_routes[1];
  struct tm_qpool *queries;     /* owned: the query slots (query/pool.h) */
  tm_http_server *http;         /* owned: the API */
  tm_http_server *metrics_http; /* owned: /metrics, or NULL */
  struct tm_pg_server *pg;      /* owned: the PostgreSQL wire protocol, or NULL (pgwire/) */
  char *pg_addr;                /* owned copy of opts.pg_addr, or NULL */
  tm_pg_auth pg_auth;           /* its password method (opts.pg_auth) */
  tm_objstore *snap_store;      /* owned: the snapshot location, or NULL when disabled */
  char *snap_prefix;            /* owned: key prefix inside snap_store */
};

/* ---- datasets (runtime.c) ------------------------------------------------------------- */

/** The dataset named name (NULL when none). Stable for the runtime's life. */
tm_rt_dataset *tm_rt__find(tm_runtime *rt, const char *name);
/** The accel of a loaded dataset, or NULL (read under rt->mu). */
tm_accel *tm_rt__accel(tm_runtime *rt, tm_rt_dataset *ds);
/** The status name SPEC 1.3 shows for a dataset. */
const char *tm_rt__status_name(tm_runtime *rt, tm_rt_dataset *ds);
/** After a failed job: whether DuckDB stopped for good; then logs, and calls on_fatal once. */
void tm_rt__check_fatal(tm_runtime *rt);
/** Lists d's current engine in the SQL catalog (after a load or a schema change). */
void tm_rt__sync_catalog(tm_runtime *rt, tm_rt_dataset *ds);
/**
 * Sets dataset_active_count{engine} (Spice's gauge, crates/runtime-metrics/
 * src/datasets/mod.rs): the datasets loaded and not failed, by acceleration
 * engine, "None" for federated ones; 0 for an engine of the config with none
 * loaded. Called on each scrape of /metrics.
 */
void tm_rt__count_active(tm_runtime *rt);
/**
 * Creates the config's views (Spice's `views:`) that are still pending and
 * can be created now: each binds when created, so its datasets must be
 * listed. Called after each dataset is listed; once every dataset has
 * loaded or failed, a view that still cannot be created is logged once.
 */
void tm_rt__sync_views(tm_runtime *rt);

/* ---- scheduler (scheduler.c) ------------------------------------------------------------ */

int tm_rt__sched_start(tm_runtime *rt, tm_error *err) TM_WARN_UNUSED;
/** Sets the cancel flag, wakes and joins the workers. */
void tm_rt__sched_stop(tm_runtime *rt);
/**
 * Queues an API refresh of ds (full and/or a one-off refresh_sql, which is
 * copied). TM_ECONFLICT when a different one is already queued,
 * TM_EUNAVAILABLE while shutting down.
 */
/**
 * A query failed with TM_ECORRUPT (SPEC D5). If the message says that an
 * acceleration's storage is damaged (tm_db_message_is_storage_damage; DuckDB's
 * message does not say which file), every file-mode acceleration is suspected
 * and refreshed now, which checks it first and replaces it from the source if
 * it is damaged; other TM_ECORRUPT errors (a malformed source file) are not.
 */
void tm_rt__note_damage(tm_runtime *rt, const char *why);
/**
 * Queues an on-demand refresh of ds (C4). It starts after a random delay of
 * up to jitter_max_ms (Spice's refresh_jitter_max); -1: the dataset's own
 * (tm_acceleration_max_jitter_ms), 0: at once.
 */
int tm_rt__trigger(tm_runtime *rt, tm_rt_dataset *ds, bool full, const char *sql,
                   int64_t jitter_max_ms, tm_error *err) TM_WARN_UNUSED;
/** Delay before retry number attempt (1, 2, ...): base * 2^(attempt-1), capped. */
int64_t tm_rt__backoff_ms(int64_t base_ms, int64_t max_ms, int attempt);

/* ---- acceleration snapshots (snapshots.c) ------------------------------------------------ */

/** Whether snapshots are created after ds's refreshes / restored at its start. */
bool tm_rt__snapshots_create(const tm_runtime *rt, const tm_dataset_def *d);
bool tm_rt__snapshots_bootstrap(const tm_runtime *rt, const tm_dataset_def *d);
/**
 * At start, before the dataset's accel opens: when its file-mode
 * acceleration is missing, restores the newest snapshot (older ones too when
 * `fallback` is set) and discards the saved Iceberg snapshot (B9). *restored
 * says whether it did. TM_ENOTFOUND when the location holds no snapshot.
 */
int tm_rt__snapshot_bootstrap(tm_runtime *rt, tm_rt_dataset *ds, bool fallback, bool *restored,
                              tm_error *err) TM_WARN_UNUSED;
/** After a refresh that changed ds: copies its acceleration to the location. */
int tm_rt__snapshot_create(tm_runtime *rt, tm_rt_dataset *ds, tm_error *err) TM_WARN_UNUSED;
/** The key of a snapshot taken at wall-clock ms: PREFIX/dataset=NAME/NAME_YYYYMMDDTHHMMSSZ.EXT. */
char *tm_rt__snapshot_key(const char *prefix, const char *dataset, const char *ext, int64_t ms);

/* ---- HTTP routes (routes.c, query.c) ---------------------------------------------------------- */

/** Fills rt->routes and rt->metrics_routes. */
void tm_rt__routes_init(tm_runtime *rt);
/** POST /v1/sql (query.c). */
void tm_rt__handle_sql(void *app, tm_http_request *req, tm_http_reply *rep);

/* ---- SQL sessions (query.c) ---------------------------------------------------------------- */

/** A session for one query (from the pool or new); tracked until put back. */
int tm_rt__session_take(tm_runtime *rt, tm_sql_session **out, tm_error *err) TM_WARN_UNUSED;
void tm_rt__session_put(tm_runtime *rt, tm_sql_session *s);
/** Interrupts every running query (shutdown): they end with TM_ECANCELLED. */
void tm_rt__sessions_interrupt(tm_runtime *rt);

#endif
