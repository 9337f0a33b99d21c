/*
 * runtime.c - the runtime's datasets, SQL catalog, metrics and lifecycle
 * (runtime layer). See runtime.h; the scheduler is scheduler.c, the HTTP API
 * routes.c and query.c, acceleration snapshots snapshots.c.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <unistd.h>

#include "io/io.h"

#include "runtime/http/http.h"
#include "runtime/pgwire/pgwire.h"
#include "runtime/query/pool.h"
#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/sync.h"

void tm_runtime_options_init(tm_runtime_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_RUNTIME_OPTIONS_VERSION;
  o->query_queue = -1;
}

/* ---- datasets ------------------------------------------------------------------------------ */

/* Names match case-insensitively, as Spice's API and SQL identifiers do (the config refuses two
 * names that differ only in case). */
tm_rt_dataset *tm_rt__find(tm_runtime *rt, const char *name) {
  for (size_t i = 0; i < rt->n_ds; i++)
    if (strcasecmp(rt->ds[i].def->name, name) == 0) return &rt->ds[i];
  return NULL;
}

tm_accel *tm_rt__accel(tm_runtime *rt, tm_rt_dataset *ds) {
  pthread_mutex_lock(&rt->mu);
  tm_accel *a = ds->loaded ? ds->accel : NULL;
  pthread_mutex_unlock(&rt->mu);
  return a;
}

const char *tm_rt__status_name(tm_runtime *rt, tm_rt_dataset *ds) {
  pthread_mutex_lock(&rt->mu);
  bool failed = ds->load_failed, loaded = ds->loaded, stopping = rt->stopping;
  tm_accel *a = ds->accel;
  pthread_mutex_unlock(&rt->mu);
  if (failed) return tm_accel_status_name(TM_ACCEL_ERROR);
  if (stopping) return tm_accel_status_name(TM_ACCEL_SHUTTING_DOWN);
  if (!loaded || !a) return tm_accel_status_name(TM_ACCEL_INITIALIZING);
  /* A federated dataset (C6) serves from its source as soon as it is registered. */
  if (!ds->accelerated) return tm_accel_status_name(TM_ACCEL_READY);
  return tm_accel_status_name(tm_accel_get_status(a));
}

bool tm_runtime_ready(tm_runtime *rt) {
  bool ready = true;
  for (size_t i = 0; i < rt->n_ds && ready; i++) {
    tm_rt_dataset *ds = &rt->ds[i];
    pthread_mutex_lock(&rt->mu);
    bool failed = ds->load_failed, stopping = rt->stopping;
    tm_accel *a = ds->loaded ? ds->accel : NULL;
    pthread_mutex_unlock(&rt->mu);
    if (stopping) return false;
    if (failed) continue; /* reported and skipped: it does not hold the others back */
    if (!a) ready = false;
    else if (ds->accelerated && !tm_accel_ready(a)) ready = false;
  }
  return ready;
}

void tm_rt__sync_catalog(tm_runtime *rt, tm_rt_dataset *ds) {
  tm_accel *a = ds->accel;
  tm_engine *e = a ? tm_accel_engine(a) : NULL;
  pthread_mutex_lock(&rt->mu);
  tm_engine *old = ds->catalog_engine;
  bool same = old == e;
  if (!same) ds->catalog_engine = e;
  pthread_mutex_unlock(&rt->mu);
  if (same) {
    tm_engine_release(e);
    return;
  }
  tm_error err;
  tm_error_init(&err);
  /* Adding replaces the view in one statement: queries see the old or the new engine. */
  if (e && tm_sql_catalog_add(rt->catalog, e, &err) != TM_OK)
    tm_log(TM_LOG_ERROR, ds->def->name, "cannot add the table to SQL: %s", err.message);
  if (!e && old && tm_sql_catalog_remove(rt->catalog, ds->def->name, &err) != TM_OK)
    tm_log(TM_LOG_WARN, ds->def->name, "cannot remove the table from SQL: %s", err.message);
  tm_engine_release(old);
  if (e) tm_rt__sync_views(rt);
}

void tm_rt__count_active(tm_runtime *rt) {
  if (!rt->m_active) return;
  double counts[TM_ENGINE__COUNT + 1] = {0}; /* the last: federated ("None") */
  bool listed[TM_ENGINE__COUNT + 1] = {false};
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->n_ds; i++) {
    const tm_rt_dataset *d = &rt->ds[i];
    size_t k = d->accelerated ? (size_t)d->def->acceleration.engine : TM_ENGINE__COUNT;
    if (k > TM_ENGINE__COUNT) continue;
    listed[k] = true;
    if (d->loaded && !d->load_failed) counts[k] += 1;
  }
  pthread_mutex_unlock(&rt->mu);
  for (size_t k = 0; k <= TM_ENGINE__COUNT; k++) {
    if (!listed[k]) continue;
    const char *engine = k == TM_ENGINE__COUNT ? "None" : tm_engine_kind_name((tm_engine_kind)k);
    tm_metric_set(rt->m_active, (const char *[]){engine}, counts[k]);
  }
}

void tm_rt__sync_views(tm_runtime *rt) {
  const tm_config *cfg = rt->cfg;
  if (!cfg->n_views || !rt->view_state) return;
  pthread_mutex_lock(&rt->mu);
  bool settled = true;
  /* Settled: every dataset failed to load, or is listed in SQL (accelerated ones once they have rows). */
  for (size_t i = 0; i < rt->n_ds; i++) {
    const tm_rt_dataset *d = &rt->ds[i];
    settled = settled && (d->load_failed || (d->loaded && (!d->accelerated || d->catalog_engine)));
  }
  /* A view waits for the datasets its dependsOn names to settle (as a dataset would). */
  bool *waits = tm_calloc(cfg->n_views, sizeof *waits);
  for (size_t i = 0; waits && i < cfg->n_views; i++)
    for (size_t j = 0; j < cfg->views[i].n_depends_on; j++)
      for (size_t k = 0; k < rt->n_ds; k++)
        if (strcasecmp(rt->ds[k].def->name, cfg->views[i].depends_on[j]) == 0 && !rt->ds[k].settled)
          waits[i] = true;
  pthread_mutex_unlock(&rt->mu);
  if (!waits) {
    tm_log(TM_LOG_WARN, NULL, "out of memory: the views are created later");
    return;
  }
  pthread_mutex_lock(&rt->view_mu);
  for (size_t i = 0; i < cfg->n_views; i++) {
    const tm_view_def *v = &cfg->views[i];
    if (rt->view_state[i] == 1 || waits[i]) continue;
    tm_error err;
    tm_error_init(&err);
    if (tm_sql_catalog_add_view(rt->catalog, v->name, v->sql, &err) == TM_OK) {
      rt->view_state[i] = 1;
      tm_log(TM_LOG_INFO, v->name, "view created");
    } else if (settled && rt->view_state[i] == 0) {
      rt->view_state[i] = 2;
      tm_log(TM_LOG_ERROR, v->name, "view not created: %s", err.message);
    }
  }
  pthread_mutex_unlock(&rt->view_mu);
  tm_free(waits);
}

void tm_rt__note_damage(tm_runtime *rt, const char *why) {
  /* A malformed source file (a federated query) is TM_ECORRUPT too: it must not make a
   * client able to start a full check of every acceleration with each failing query. */
  if (!tm_db_message_is_storage_damage(why)) return;
  for (size_t i = 0; i < rt->n_ds; i++) {
    tm_rt_dataset *ds = &rt->ds[i];
    pthread_mutex_lock(&rt->mu);
    tm_accel *a = ds->loaded && ds->accelerated ? ds->accel : NULL;
    pthread_mutex_unlock(&rt->mu);
    if (!a || ds->def->acceleration.mode != TM_ENGINE_FILE) continue;
    tm_accel_suspect(a, why);
    tm_error err;
    tm_error_init(&err);
    int rc = tm_rt__trigger(rt, ds, false, NULL, 0, &err);
    if (rc != TM_OK && rc != TM_ECONFLICT)
      tm_log(TM_LOG_WARN, ds->def->name, "cannot start the check: %s", err.message);
  }
}

void tm_rt__check_fatal(tm_runtime *rt) {
  char why[512];
  if (tm_db_healthy(rt->db, why, sizeof why)) return;
  pthread_mutex_lock(&rt->mu);
  bool first = !rt->fatal;
  if (first) {
    rt->fatal = true;
    snprintf(rt->fatal_why, sizeof rt->fatal_why, "%s", why);
  }
  pthread_mutex_unlock(&rt->mu);
  if (!first) return;
  tm_log(TM_LOG_ERROR, NULL,
         "DuckDB stopped after a fatal I/O error; the accelerations on disk are intact (their "
         "log replays at the next start), but this process must restart: %s",
         why);
  if (rt->opts.on_fatal) rt->opts.on_fatal(rt->opts.fatal_payload, why);
}

bool tm_runtime_fatal(tm_runtime *rt, char *why, size_t cap) {
  pthread_mutex_lock(&rt->mu);
  bool f = rt->fatal;
  if (f && why && cap) snprintf(why, cap, "%s", rt->fatal_why);
  pthread_mutex_unlock(&rt->mu);
  return f;
}

int tm_runtime_db_open(const tm_config *cfg, tm_db **out, tm_error *err) {
  tm_db_options o;
  tm_db_options_init(&o);
  o.threads = cfg->query_threads;
  o.memory_limit = cfg->query_memory_limit;
  char **dirs = tm_calloc(cfg->n_datasets + 1, sizeof *dirs);
  char *temp = cfg->query_temp_dir ? tm_strdup(cfg->query_temp_dir)
                                   : tm_asprintf("%s/.tidemark/tmp", cfg->dir);
  int rc = dirs && temp ? TM_OK : tm_error_nomem(err);
  size_t n = 0;
  if (rc == TM_OK && !(dirs[n++] = tm_strdup(cfg->data_dir))) rc = tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < cfg->n_datasets; i++) {
    char *d = NULL;
    rc = tm_accel_duck_dir(&cfg->datasets[i], &d, err);
    if (d) dirs[n++] = d;
  }
  o.dirs = (const char *const *)dirs;
  o.n_dirs = n;
  o.temp_dir = temp;
  if (rc == TM_OK) rc = tm_db_open(out, &o, err);
  for (size_t i = 0; dirs && i < n; i++) tm_free(dirs[i]);
  tm_free(dirs);
  tm_free(temp);
  return rc;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

/*
 * The runtime's families, named and labelled as Spice's (its sources:
 * crates/runtime-metrics/src/http.rs, telemetry/mod.rs, query.rs and
 * datasets/mod.rs; docs/METRICS.md). The query families carry Spice's
 * `tags`, `datasets` and `protocol` (the one request-context label tidemark
 * has: every query comes over HTTP), query_failures also `err_code`.
 */
static int register_metrics(tm_runtime *rt, tm_error *err) {
  static const double ms_buckets[] = {0.5, 1,   2.5,  5,    10,   25,    50,    100,
                                      250, 500, 1000, 2500, 5000, 10000, 30000, 60000};
  const size_t n_ms = sizeof ms_buckets / sizeof ms_buckets[0];
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_http, TM_METRIC_COUNTER, "http_requests",
                             "HTTP requests by method, route template and status",
                             "method,path,status", NULL, 0, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_http_dur, TM_METRIC_HISTOGRAM,
                             "http_requests_duration_ms",
                             "Time from an HTTP request's arrival to its reply, in milliseconds",
                             "method,path,status", ms_buckets, n_ms, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_query_exec, TM_METRIC_COUNTER,
                             "query_executions", "SQL queries run (HTTP /v1/sql)",
                             "tags,datasets,protocol", NULL, 0, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_query_fail, TM_METRIC_COUNTER, "query_failures",
                             "SQL queries that failed, by Spice's error code",
                             "tags,datasets,err_code,protocol", NULL, 0, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_query_dur, TM_METRIC_HISTOGRAM,
                             "query_duration_ms", "SQL query duration in milliseconds",
                             "tags,datasets,protocol", ms_buckets, n_ms, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_query_busy, TM_METRIC_COUNTER, "query_rejections",
                             "SQL queries refused with 503 because every query slot was busy", "",
                             NULL, 0, err));
  TM_TRY(tm_metrics_register(rt->metrics, &rt->m_active, TM_METRIC_GAUGE, "dataset_active_count",
                             "Number of currently loaded datasets, by acceleration engine "
                             "(None: federated)",
                             "engine", NULL, 0, err));
  /* Touch the unlabelled series so that it is scraped as 0 before the first rejection. */
  tm_metric_add(rt->m_query_busy, NULL, 0);
  return TM_OK;
}

static char *dup_or_null(const char *s, bool *oom) {
  if (!s) return NULL;
  char *d = tm_strdup(s);
  if (!d) *oom = true;
  return d;
}

/*
 * <data folder>/server.lock: a `tidemark run` holds an exclusive flock on it
 * for its whole life, so a second server on the same config refuses to start
 * and a client can tell a live owner from a server file left by a crash
 * (the kernel drops the lock with the process, whatever killed it).
 */
static char *lock_file(const tm_config *cfg) {
  return tm_path_join(cfg->data_dir, TM_RUNTIME_LOCK_FILE);
}

static int take_server_lock(tm_runtime *rt, tm_error *err) {
  char *path = lock_file(rt->cfg);
  if (!path) return tm_error_nomem(err);
  int rc = tm_mkdir_p(rt->cfg->data_dir, err);
  int fd = rc == TM_OK ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
  if (rc == TM_OK && fd < 0)
    rc = tm_error_set(err, TM_EIO, "%s: cannot open: %s", path, strerror(errno));
  if (rc == TM_OK && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char *url = NULL;
    int64_t pid = 0;
    tm_error e2;
    tm_error_init(&e2);
    if (errno == EWOULDBLOCK && tm_runtime_owner(rt->cfg, &url, &pid, &e2) == TM_OK)
      rc = tm_error_set(err, TM_ECONFLICT,
                        "another tidemark run (pid %lld, %s) owns the accelerations in %s: "
                        "stop it first, or query it",
                        (long long)pid, url, rt->cfg->data_dir);
    else if (errno == EWOULDBLOCK)
      rc = tm_error_set(err, TM_ECONFLICT, "another tidemark run owns the accelerations in %s (%s is locked)",
                        rt->cfg->data_dir, path);
    else
      rc = tm_error_set(err, TM_EIO, "%s: cannot lock: %s", path, strerror(errno));
    tm_free(url);
  }
  if (rc == TM_OK) rt->lock_fd = fd;
  else if (fd >= 0) close(fd);
  tm_free(path);
  return rc;
}

/* Whether a live server holds the lock (a shared try-lock fails). */
static bool server_lock_held(const tm_config *cfg) {
  char *path = lock_file(cfg);
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  tm_free(path);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd); /* drops our shared lock, if we took it */
  return held;
}

int tm_runtime_catalog_describe(tm_sql_catalog *cat, const tm_config *cfg, tm_error *err) {
  for (size_t i = 0; i < cfg->n_datasets; i++) {
    const tm_dataset_def *d = &cfg->datasets[i];
    if (!d->description && !d->n_columns) continue;
    const char **names = tm_calloc(d->n_columns ? d->n_columns : 1, sizeof *names);
    const char **descs = tm_calloc(d->n_columns ? d->n_columns : 1, sizeof *descs);
    int rc = names && descs ? TM_OK : tm_error_nomem(err);
    for (size_t j = 0; rc == TM_OK && j < d->n_columns; j++) {
      names[j] = d->columns[j].name;
      descs[j] = d->columns[j].description;
    }
    if (rc == TM_OK)
      rc = tm_sql_catalog_describe(cat, d->name, d->description, names, descs, d->n_columns, err);
    tm_free(names);
    tm_free(descs);
    TM_TRY(rc);
  }
  for (size_t i = 0; i < cfg->n_views; i++)
    if (cfg->views[i].description)
      TM_TRY(tm_sql_catalog_describe(cat, cfg->views[i].name, cfg->views[i].description, NULL,
                                     NULL, 0, err));
  return TM_OK;
}

int tm_runtime_new(tm_runtime **out, const tm_config *cfg, const tm_runtime_options *opts,
                   tm_error *err) {
  tm_runtime *rt = tm_calloc(1, sizeof *rt);
  if (!rt) return tm_error_nomem(err);
  rt->cfg = cfg;
  rt->lock_fd = -1;
  if (opts) rt->opts = *opts;
  else tm_runtime_options_init(&rt->opts);
  pthread_mutex_init(&rt->mu, NULL);
  pthread_mutex_init(&rt->pool_mu, NULL);
  pthread_mutex_init(&rt->view_mu, NULL);
  rt->rng = ((uint64_t)tm_monotonic_ns() ^ ((uint64_t)getpid() << 32)) | 1;
  tm_cond_init_monotonic(&rt->cv);
  int rc = TM_OK;
  bool oom = false;
  rt->http_addr = dup_or_null(rt->opts.http_addr ? rt->opts.http_addr : TM_RUNTIME_DEFAULT_HTTP, &oom);
  rt->metrics_addr =
      dup_or_null(rt->opts.metrics_addr ? rt->opts.metrics_addr : TM_RUNTIME_DEFAULT_METRICS, &oom);
  /* The API keys (D4): --api-key / TIDEMARK_API_KEY, and the config's runtime.auth keys. */
  bool flag_key = rt->opts.api_key && *rt->opts.api_key;
  size_t n_keys = (flag_key ? 1 : 0) + cfg->n_api_keys;
  if (n_keys && !(rt->api_keys = tm_calloc(n_keys, sizeof *rt->api_keys))) oom = true;
  for (size_t i = 0; !oom && i < n_keys; i++) {
    const char *k = flag_key ? (i == 0 ? rt->opts.api_key : cfg->api_keys[i - 1]) : cfg->api_keys[i];
    if ((rt->api_keys[i] = dup_or_null(k, &oom))) rt->n_api_keys = i + 1;
  }
  if (rt->opts.pg_addr) rt->pg_addr = dup_or_null(rt->opts.pg_addr, &oom);
  rt->opts.pg_addr = rt->pg_addr;
  rt->opts.http_addr = rt->http_addr;
  rt->opts.metrics_addr = rt->metrics_addr;
  rt->opts.api_key = NULL; /* the caller's string: rt->api_keys holds a copy */
  if (oom) rc = tm_error_nomem(err);
  if (rt->opts.query_timeout_ms <= 0) rt->opts.query_timeout_ms = 30000;
  if (rt->opts.max_sql_bytes == 0) rt->opts.max_sql_bytes = (size_t)1 << 20;
  if (rt->opts.retry_base_ms <= 0) rt->opts.retry_base_ms = 1000;
  if (rt->opts.retry_max_ms <= 0) rt->opts.retry_max_ms = 300000;
  if (rt->opts.query_slots <= 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rt->opts.query_slots = cpus < 2 ? 2 : cpus > 64 ? 64 : (int)cpus;
  }
  if (rt->opts.query_queue < 0)
    rt->opts.query_queue = 8 * rt->opts.query_slots < 64 ? 64 : 8 * rt->opts.query_slots;
  if (rt->opts.max_connections <= 0) rt->opts.max_connections = 1024;
  if (rt->opts.max_connections_per_client <= 0)
    rt->opts.max_connections_per_client = rt->opts.max_connections / 4;
  if (rt->opts.request_timeout_ms <= 0) rt->opts.request_timeout_ms = 10000;
  /* Check the addresses now, so that a typo is a usage error. */
  struct sockaddr_storage ss;
  socklen_t len;
  bool lb;
  if (rc == TM_OK) rc = tm_http_parse_addr(rt->http_addr, &ss, &len, &lb, err);
  if (rc == TM_OK && strcmp(rt->metrics_addr, "off") != 0)
    rc = tm_http_parse_addr(rt->metrics_addr, &ss, &len, &lb, err);
  if (rc == TM_OK && rt->pg_addr) rc = tm_http_parse_addr(rt->pg_addr, &ss, &len, &lb, err);
  if (rc == TM_OK && rt->opts.pg_auth && !tm_pg_auth_parse(rt->opts.pg_auth, &rt->pg_auth))
    rc = tm_error_set(err, TM_EINVALID,
                      "bad PostgreSQL password method '%s' (scram-sha-256, md5 or password)",
                      rt->opts.pg_auth);
  rt->opts.pg_auth = NULL; /* the caller's string: rt->pg_auth holds what it named */
  if (rc == TM_OK && !(rt->metrics = tm_metrics_new())) rc = tm_error_nomem(err);
  if (rc == TM_OK) rc = register_metrics(rt, err);
  if (rc == TM_OK) rc = take_server_lock(rt, err);
  if (rc == TM_OK) rc = tm_runtime_db_open(cfg, &rt->db, err);
  if (rc == TM_OK)
    tm_log(TM_LOG_INFO, NULL, "DuckDB %s: %d threads, memory limit %lld MB", tm_db_version(),
           tm_db_threads(rt->db), (long long)((tm_db_memory_limit(rt->db) + 500000) / 1000000));
  if (rc == TM_OK) rc = tm_sql_catalog_new(&rt->catalog, rt->db, err);
  if (rc == TM_OK) rc = tm_runtime_catalog_describe(rt->catalog, cfg, err);
  if (rc == TM_OK) {
    rt->n_ds = cfg->n_datasets;
    rt->ds = tm_calloc(rt->n_ds ? rt->n_ds : 1, sizeof *rt->ds);
    rt->view_state = tm_calloc(cfg->n_views ? cfg->n_views : 1, 1);
    if (!rt->ds || !rt->view_state) rc = tm_error_nomem(err);
  }
  for (size_t i = 0; rc == TM_OK && i < rt->n_ds; i++) {
    tm_rt_dataset *ds = &rt->ds[i];
    ds->def = &cfg->datasets[i];
    ds->accelerated = ds->def->has_acceleration && ds->def->acceleration.enabled;
    ds->next_load_ms = 0;
    ds->next_refresh_ms = TM_RT_NEVER;
    ds->next_retention_ms = TM_RT_NEVER;
  }
  if (rc == TM_OK && cfg->snapshots.enabled && cfg->snapshots.location) {
    rc = tm_objstore_open_url(&rt->snap_store, &rt->snap_prefix, cfg->snapshots.location,
                              &cfg->snapshots.params, err);
    if (rc != TM_OK) tm_error_prefix(err, "snapshots.location");
  }
  if (rc != TM_OK) {
    tm_runtime_free(rt);
    return rc;
  }
  *out = rt;
  return TM_OK;
}

/* ---- the server file ---------------------------------------------------------------------- */

static char *server_file(const tm_config *cfg) {
  return tm_path_join(cfg->data_dir, TM_RUNTIME_SERVER_FILE);
}

/* The address clients reach the API at: a wildcard bind is reached on loopback. */
static char *client_url(const char *addr, int port) {
  const char *colon = strrchr(addr, ':');
  size_t host_len = colon ? (size_t)(colon - addr) : 0;
  char host[256];
  snprintf(host, sizeof host, "%.*s", (int)host_len, addr);
  const char *h = host;
  if (!*h || !strcmp(h, "0.0.0.0") || !strcmp(h, "*")) h = "127.0.0.1";
  else if (!strcmp(h, "[::]")) h = "[::1]";
  return tm_asprintf("http://%s:%d", h, port);
}

static void write_server_file(tm_runtime *rt) {
  char *path = server_file(rt->cfg);
  char *url = client_url(rt->http_addr, tm_runtime_port(rt, "http"));
  tm_error err;
  tm_error_init(&err);
  int rc = path && url ? tm_mkdir_p(rt->cfg->data_dir, &err) : tm_error_nomem(&err);
  char doc[1024];
  int n = snprintf(doc, sizeof doc, "{\"pid\": %d, \"url\": \"%s\"}\n", (int)getpid(), url ? url : "");
  if (rc == TM_OK) rc = tm_write_file_atomic(path, doc, (size_t)n, &err);
  if (rc != TM_OK)
    tm_log(TM_LOG_WARN, NULL, "cannot write %s (tidemark sql and status will not find this server): %s",
           path ? path : TM_RUNTIME_SERVER_FILE, err.message);
  else rt->wrote_server_file = true;
  tm_free(path);
  tm_free(url);
}

static void remove_server_file(tm_runtime *rt) {
  if (!rt->wrote_server_file) return;
  char *url = NULL;
  int64_t pid = 0;
  tm_error err;
  /* Only ours: a newer server may have taken the folder since. */
  if (tm_runtime_owner(rt->cfg, &url, &pid, &err) == TM_OK && pid == (int64_t)getpid()) {
    char *path = server_file(rt->cfg);
    if (path) unlink(path);
    tm_free(path);
  }
  tm_free(url);
  rt->wrote_server_file = false;
}

int tm_runtime_owner(const tm_config *cfg, char **url_out, int64_t *pid_out, tm_error *err) {
  char *path = server_file(cfg);
  if (!path) return tm_error_nomem(err);
  char *text = NULL;
  size_t len = 0;
  int rc = tm_read_file(path, 4096, &text, &len, err);
  json_t *j = NULL;
  if (rc == TM_OK) {
    json_error_t je;
    j = json_loadb(text, len, 0, &je);
    const char *url = json_string_value(json_object_get(j, "url"));
    json_t *pid = json_object_get(j, "pid");
    if (!url || !json_is_integer(pid) || json_integer_value(pid) <= 0)
      rc = tm_error_set(err, TM_ENOTFOUND, "%s: not a server file", path);
    else if ((kill((pid_t)json_integer_value(pid), 0) != 0 && errno == ESRCH) || !server_lock_held(cfg))
      rc = tm_error_set(err, TM_ENOTFOUND, "%s: the server (pid %lld) is gone", path,
                        (long long)json_integer_value(pid));
    else if (!(*url_out = tm_strdup(url))) rc = tm_error_nomem(err);
    else *pid_out = json_integer_value(pid);
  } else {
    rc = tm_error_set(err, TM_ENOTFOUND, "no server owns %s", cfg->data_dir);
  }
  json_decref(j);
  tm_free(text);
  tm_free(path);
  return rc;
}

int tm_runtime_start(tm_runtime *rt, tm_error *err) {
  tm_rt__routes_init(rt);
  tm_http_server_options o;
  memset(&o, 0, sizeof o);
  o.name = "HTTP API";
  o.addr = rt->http_addr;
  o.api_keys = (const char *const *)rt->api_keys;
  o.n_api_keys = rt->n_api_keys;
  o.routes = rt->routes;
  o.n_routes = rt->n_routes;
  o.app = rt;
  o.requests = rt->m_http;
  o.durations = rt->m_http_dur;
  o.timeout_s = 60;
  o.connection_limit = (unsigned)rt->opts.max_connections;
  o.per_client_limit = (unsigned)rt->opts.max_connections_per_client;
  o.request_timeout_ms = rt->opts.request_timeout_ms;
  TM_TRY(tm_qpool_new(&rt->queries, (size_t)rt->opts.query_slots, (size_t)rt->opts.query_queue,
                      err));
  tm_log(TM_LOG_INFO, NULL, "queries: %d slots, %d waiting at most, time limit %lld ms",
         rt->opts.query_slots, rt->opts.query_queue, (long long)rt->opts.query_timeout_ms);
  int hrc = tm_http_server_start(&rt->http, &o, err);
  if (hrc != TM_OK) {
    tm_qpool_free(rt->queries);
    rt->queries = NULL;
    return hrc;
  }
  if (strcmp(rt->metrics_addr, "off") != 0) {
    o.name = "metrics";
    o.addr = rt->metrics_addr;
    o.routes = rt->metrics_routes;
    o.n_routes = 1;
    o.connection_limit = 64;
    o.per_client_limit = 32;
    int rc = tm_http_server_start(&rt->metrics_http, &o, err);
    if (rc != TM_OK) {
      tm_http_server_free(rt->http);
      rt->http = NULL;
      tm_qpool_free(rt->queries);
      rt->queries = NULL;
      return rc;
    }
  }
  if (rt->pg_addr) {
    tm_pg_options po;
    memset(&po, 0, sizeof po);
    po.addr = rt->pg_addr;
    po.max_connections = rt->opts.pg_max_connections;
    po.auth = rt->pg_auth;
    int rc = tm_pg_server_start(&rt->pg, rt, &po, err);
    if (rc != TM_OK) {
      tm_http_server_free(rt->metrics_http);
      tm_http_server_free(rt->http);
      rt->metrics_http = rt->http = NULL;
      tm_qpool_free(rt->queries);
      rt->queries = NULL;
      return rc;
    }
  }
  pthread_mutex_lock(&rt->mu);
  snprintf(rt->http_endpoint, sizeof rt->http_endpoint, "%s", tm_http_server_endpoint(rt->http));
  snprintf(rt->metrics_endpoint, sizeof rt->metrics_endpoint, "%s",
           tm_http_server_endpoint(rt->metrics_http));
  pthread_mutex_unlock(&rt->mu);
  int rc = tm_rt__sched_start(rt, err);
  if (rc != TM_OK) {
    tm_pg_server_free(rt->pg);
    rt->pg = NULL;
    tm_http_server_free(rt->metrics_http);
    tm_http_server_free(rt->http);
    rt->metrics_http = rt->http = NULL;
    tm_qpool_free(rt->queries);
    rt->queries = NULL;
    return rc;
  }
  pthread_mutex_lock(&rt->mu);
  rt->started = true;
  pthread_mutex_unlock(&rt->mu);
  write_server_file(rt);
  return TM_OK;
}

int tm_runtime_port(tm_runtime *rt, const char *which) {
  if (strcmp(which, "http") == 0) return tm_http_server_port(rt->http);
  if (strcmp(which, "metrics") == 0) return tm_http_server_port(rt->metrics_http);
  if (strcmp(which, "pg") == 0) return tm_pg_server_port(rt->pg);
  return 0;
}

void tm_runtime_stop(tm_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  bool already = rt->stopped;
  rt->stopped = true;
  pthread_mutex_unlock(&rt->mu);
  if (already) return;
  tm_log(TM_LOG_INFO, NULL, "shutting down");
  /* Stop accepting; requests in progress finish meanwhile. */
  tm_http_server_quiesce(rt->http);
  tm_http_server_quiesce(rt->metrics_http);
  tm_pg_server_quiesce(rt->pg);
  tm_rt__sched_stop(rt);
  /* Queries still running end now (their connections close), so that the
   * HTTP threads can be joined without waiting for the query timeout. */
  tm_rt__sessions_interrupt(rt);
  tm_pg_server_free(rt->pg);
  rt->pg = NULL;
  tm_http_server_free(rt->http);
  tm_http_server_free(rt->metrics_http);
  rt->http = rt->metrics_http = NULL;
  /* After the connections: a query that DuckDB could not interrupt is waited for here. */
  tm_rt__sessions_interrupt(rt);
  tm_qpool_free(rt->queries);
  rt->queries = NULL;
  remove_server_file(rt);
  tm_log(TM_LOG_INFO, NULL, "stopped");
}

void tm_runtime_free(tm_runtime *rt) {
  if (!rt) return;
  if (rt->started) tm_runtime_stop(rt);
  /* Sessions before the catalog, the catalog before the engines it lists. */
  for (size_t i = 0; i < rt->n_pool; i++) tm_sql_session_free(rt->pool[i]);
  tm_free(rt->pool);
  tm_free(rt->active);
  tm_sql_catalog_free(rt->catalog);
  for (size_t i = 0; rt->ds && i < rt->n_ds; i++) {
    tm_rt_dataset *ds = &rt->ds[i];
    tm_engine_release(ds->catalog_engine);
    tm_accel_free(ds->accel);
    tm_free(ds->trigger_sql);
    tm_free(ds->snapshot_key);
  }
  tm_free(rt->ds);
  tm_db_release(rt->db);
  tm_objstore_free(rt->snap_store);
  tm_free(rt->snap_prefix);
  tm_metrics_free(rt->metrics);
  tm_free(rt->http_addr);
  tm_free(rt->metrics_addr);
  tm_free(rt->pg_addr);
  for (size_t i = 0; i < rt->n_api_keys; i++) {
    tm_wipe(rt->api_keys[i], strlen(rt->api_keys[i]));
    tm_free(rt->api_keys[i]);
  }
  tm_free(rt->api_keys);
  if (rt->lock_fd >= 0) close(rt->lock_fd); /* last: the files are free from here */
  pthread_cond_destroy(&rt->cv);
  pthread_mutex_destroy(&rt->mu);
  pthread_mutex_destroy(&rt->pool_mu);
  pthread_mutex_destroy(&rt->view_mu);
  tm_free(rt->view_state);
  tm_free(rt);
}
