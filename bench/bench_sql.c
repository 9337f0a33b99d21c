/*
 * bench_sql.c - point lookups through the SQL layer in process, without HTTP
 * (issue 8): the baseline next to which bench/runtime.sh puts /v1/sql under
 * wrk. Opens the config's accelerations like `tidemark sql -c`, then T
 * threads, each with its own SQL session, run `SELECT * FROM <table> WHERE
 * id = <random>` rendered as JSON (what /v1/sql answers by default) for S
 * seconds.
 *
 * Usage: bench_sql -c CONFIG --table NAME --max-id N [--threads T] [--seconds S]
 * Prints: threads  queries  queries/s  p50 ms  p99 ms  rows/query
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sql.h"
#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

static void die(const char *what, const tm_error *err) {
  fprintf(stderr, "bench_sql: %s: %s\n", what, err ? err->message : "");
  exit(1); /* lint-ok: benchmark program */
}

typedef struct worker {
  tm_sql_catalog *cat;
  const char *table;
  int64_t max_id;
  int64_t deadline_ns;
  unsigned seed;
  double *lat_ms;   /* owned */
  size_t n, cap;
  int64_t rows;
} worker;

static int null_sink(const char *data, size_t len, void *payload) {
  (void)data;
  *(size_t *)payload += len;
  return 0;
}

static void *run(void *arg) {
  worker *w = arg;
  tm_error err;
  tm_sql_session *s = NULL;
  if (tm_sql_session_new(&s, w->cat, &err) != TM_OK) die("session", &err);
  char sql[256];
  while (tm_monotonic_ns() < w->deadline_ns) {
    int64_t id = (int64_t)(rand_r(&w->seed) % (unsigned)(w->max_id + 1));
    snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE id = %lld", w->table, (long long)id);
    size_t bytes = 0;
    tm_sql_result_info info;
    int64_t t0 = tm_monotonic_ns();
    if (tm_sql_query(s, sql, TM_OUT_JSON, null_sink, &bytes, &info, &err) != TM_OK)
      die("query", &err);
    double ms = (double)(tm_monotonic_ns() - t0) / 1e6;
    if (w->n == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 4096;
      w->lat_ms = tm_realloc(w->lat_ms, w->cap * sizeof *w->lat_ms);
      if (!w->lat_ms) die("out of memory", NULL);
    }
    w->lat_ms[w->n++] = ms;
    w->rows += info.rows;
  }
  tm_sql_session_free(s);
  return NULL;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *config = NULL, *table = "events";
  int64_t max_id = 0, threads = 1, seconds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    int64_t n = 0;
    bool num = tm_parse_int64(v, strlen(v), &n) == TM_OK;
    if (!strcmp(k, "-c")) config = v;
    else if (!strcmp(k, "--table")) table = v;
    else if (!strcmp(k, "--max-id") && num) max_id = n;
    else if (!strcmp(k, "--threads") && num) threads = n;
    else if (!strcmp(k, "--seconds") && num) seconds = n;
    else die("usage: bench_sql -c CONFIG --table T --max-id N [--threads T] [--seconds S]", NULL);
  }
  if (!config || max_id <= 0 || threads < 1 || threads > 256) die("bad arguments", NULL);
  tm_log_set_level(TM_LOG_ERROR);
  tm_error err;
  tm_config cfg;
  if (tm_config_load(&cfg, config, &err) != TM_OK) die(config, &err);
  tm_db *db = NULL;
  if (tm_runtime_db_open(&cfg, &db, &err) != TM_OK) die("DuckDB", &err);
  tm_sql_catalog *cat = NULL;
  if (tm_sql_catalog_new(&cat, db, &err) != TM_OK) die("catalog", &err);
  tm_accel **accels = tm_calloc(cfg.n_datasets, sizeof *accels);
  tm_accel_options ao;
  tm_accel_options_init(&ao);
  ao.db = db;
  ao.base_dir = cfg.dir;
  for (size_t i = 0; i < cfg.n_datasets; i++) {
    if (tm_accel_new(&accels[i], &cfg.datasets[i], &ao, &err) != TM_OK) die("open", &err);
    tm_engine *e = tm_accel_engine(accels[i]);
    if (!e) die("no acceleration: run tidemark refresh first", NULL);
    if (tm_sql_catalog_add(cat, e, &err) != TM_OK) die("catalog add", &err);
    tm_engine_release(e);
  }
  worker *w = tm_calloc((size_t)threads, sizeof *w);
  pthread_t *tids = tm_calloc((size_t)threads, sizeof *tids);
  int64_t deadline = tm_monotonic_ns() + seconds * INT64_C(1000000000);
  for (int64_t i = 0; i < threads; i++) {
    w[i].cat = cat;
    w[i].table = table;
    w[i].max_id = max_id;
    w[i].deadline_ns = deadline;
    w[i].seed = (unsigned)(12345 + i);
    pthread_create(&tids[i], NULL, run, &w[i]);
  }
  size_t total = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    total += w[i].n;
    rows += w[i].rows;
  }
  double *all = tm_malloc((total ? total : 1) * sizeof *all);
  size_t k = 0;
  for (int64_t i = 0; i < threads; i++) {
    memcpy(all + k, w[i].lat_ms, w[i].n * sizeof *all);
    k += w[i].n;
    tm_free(w[i].lat_ms);
  }
  qsort(all, total, sizeof *all, cmp_dbl);
  double p50 = total ? all[total / 2] : 0, p99 = total ? all[(size_t)((double)total * 0.99)] : 0;
  printf("%-8lld %10zu %12.0f %9.3f %9.3f %6.2f\n", (long long)threads, total,
         (double)total / (double)seconds, p50, p99, total ? (double)rows / (double)total : 0);
  tm_free(all);
  tm_free(w);
  tm_free(tids);
  tm_sql_catalog_free(cat);
  for (size_t i = 0; i < cfg.n_datasets; i++) tm_accel_free(accels[i]);
  tm_free(accels);
  tm_db_release(db);
  tm_config_dispose(&cfg);
  return 0;
}
