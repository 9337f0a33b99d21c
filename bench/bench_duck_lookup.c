/*
 * bench_duck_lookup.c - the peer of the point-lookup benchmarks (issue 20):
 * DuckDB alone, through its C API, on the very database file an acceleration
 * keeps (cayenne, duckdb engines), with nothing of tidemark in the way. T
 * threads, each with its own DuckDB connection, run `SELECT * FROM <table>
 * WHERE id = <random>` for S seconds, reading every row of the result.
 *
 * Usage: bench_duck_lookup --db FILE --table NAME --max-id N [--threads T] [--seconds S]
 *                          [--duckdb-threads D]  (DuckDB's own threads setting; default: its own)
 *                          [--mode query|prepared|fixed] [--pin-settings 1|0]
 * Modes (where a lookup's time goes, PGWIRE.md "Measured"):
 *   query     (default) the text with the key written in, parsed, planned and run each time
 *   prepared  one prepared statement `... WHERE id = $1`, the key bound each time: DuckDB
 *             binds and plans it again at each execution (a parameter in a table filter)
 *   fixed     one prepared statement with one key written in, run again and again: the
 *             execution alone, with the plan DuckDB keeps
 * --pin-settings 1 (default): the settings DuckDB reads for every statement are set to their
 * own values first, as tidemark's instance does (engine/db/db.c k_pinned_settings: a set
 * value is read faster than a default), so that the peer is DuckDB at its fastest; 0: as
 * DuckDB opens.
 * Prints: threads  queries  queries/s  p50 ms  p99 ms  rows/query
 */
#include <duckdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"
#include "util/time.h"

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_duck_lookup: %s: %s\n", what, why ? why : "");
  exit(1); /* lint-ok: benchmark program */
}

typedef struct worker {
  duckdb_database db;
  const char *table;
  long long max_id;
  int64_t deadline_ns;
  unsigned seed;
  double *lat_ms; /* owned */
  size_t n, cap;
  long long rows;
  const char *mode;
} worker;

static void *run(void *arg) {
  worker *w = arg;
  duckdb_connection c;
  if (duckdb_connect(w->db, &c) == DuckDBError) die("connect", "");
  char sql[512];
  duckdb_prepared_statement ps = NULL;
  bool query = !strcmp(w->mode, "query");
  if (!query) {
    if (!strcmp(w->mode, "prepared"))
      snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE id = $1", w->table);
    else
      snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE id = %lld", w->table, w->max_id / 2);
    if (duckdb_prepare(c, sql, &ps) == DuckDBError) die(sql, duckdb_prepare_error(ps));
  }
  while (tm_monotonic_ns() < w->deadline_ns) {
    long long id = (long long)(rand_r(&w->seed) % (unsigned)(w->max_id + 1));
    int64_t t0 = tm_monotonic_ns();
    duckdb_result r;
    if (query) {
      snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE id = %lld", w->table, id);
      if (duckdb_query(c, sql, &r) == DuckDBError) die(sql, duckdb_result_error(&r));
    } else {
      if (duckdb_nparams(ps) && duckdb_bind_int64(ps, 1, id) == DuckDBError) die("bind", "");
      if (duckdb_execute_prepared(ps, &r) == DuckDBError) die(sql, duckdb_result_error(&r));
    }
    w->rows += (long long)duckdb_row_count(&r);
    duckdb_destroy_result(&r);
    if (w->n == w->cap) {
      w->cap = w->cap ? w->cap * 2 : 4096;
      w->lat_ms = tm_realloc(w->lat_ms, w->cap * sizeof *w->lat_ms);
      if (!w->lat_ms) die("memory", "");
    }
    w->lat_ms[w->n++] = (double)(tm_monotonic_ns() - t0) / 1e6;
  }
  if (ps) duckdb_destroy_prepare(&ps);
  duckdb_disconnect(&c);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *path = NULL, *table = NULL;
  long long max_id = -1;
  int threads = 1, seconds = 5;
  const char *duck_threads = NULL, *mode = "query";
  bool pin = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--db")) path = argv[i + 1];
    else if (!strcmp(argv[i], "--table")) table = argv[i + 1];
    else if (!strcmp(argv[i], "--max-id")) max_id = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--duckdb-threads")) duck_threads = argv[i + 1];
    else if (!strcmp(argv[i], "--mode")) mode = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-settings")) pin = atoi(argv[i + 1]) != 0;
    else die("unknown option", argv[i]);
  }
  if (strcmp(mode, "query") && strcmp(mode, "prepared") && strcmp(mode, "fixed")) die("mode", mode);
  if (!path || !table || max_id < 0 || threads < 1 || threads > 256 || seconds < 1)
    die("usage", "--db FILE --table NAME --max-id N [--threads T] [--seconds S]");
  duckdb_database db;
  duckdb_config cfg;
  char *open_err = NULL;
  if (duckdb_create_config(&cfg) == DuckDBError) die("config", "");
  if (duckdb_set_config(cfg, "access_mode", "READ_ONLY") == DuckDBError) die("config", "");
  if (duck_threads && duckdb_set_config(cfg, "threads", duck_threads) == DuckDBError) die("threads", duck_threads);
  if (duckdb_open_ext(path, &db, cfg, &open_err) == DuckDBError) die(path, open_err);
  duckdb_destroy_config(&cfg);
  if (pin) {
    duckdb_connection c;
    if (duckdb_connect(db, &c) == DuckDBError) die("connect", "");
    size_t n = 0;
    const char *const *names = tm_db__pinned_settings(&n);
    for (size_t i = 0; i < n; i++) {
      char sql[512];
      snprintf(sql, sizeof sql, "SELECT current_setting('%s')::VARCHAR", names[i]);
      duckdb_result r;
      char *v = NULL;
      if (duckdb_query(c, sql, &r) == DuckDBSuccess && !duckdb_value_is_null(&r, 0, 0))
        v = duckdb_value_varchar(&r, 0, 0);
      duckdb_destroy_result(&r);
      if (!v) continue;
      snprintf(sql, sizeof sql, "SET GLOBAL \"%s\" = '%s'", names[i], v);
      duckdb_free(v);
      if (duckdb_query(c, sql, &r) == DuckDBError) die(sql, duckdb_result_error(&r));
      duckdb_destroy_result(&r);
    }
    duckdb_disconnect(&c);
  }
  worker *w = tm_calloc((size_t)threads, sizeof *w);
  pthread_t *tids = tm_calloc((size_t)threads, sizeof *tids);
  if (!w || !tids) die("memory", "");
  int64_t deadline = tm_monotonic_ns() + (int64_t)seconds * 1000000000;
  for (int i = 0; i < threads; i++) {
    w[i] = (worker){.db = db, .table = table, .max_id = max_id, .deadline_ns = deadline,
                    .seed = 7919u * (unsigned)(i + 1), .mode = mode};
    if (pthread_create(&tids[i], NULL, run, &w[i]) != 0) die("thread", "");
  }
  size_t total = 0;
  long long rows = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tids[i], NULL);
    total += w[i].n;
    rows += w[i].rows;
  }
  double *all = tm_malloc((total ? total : 1) * sizeof *all);
  if (!all) die("memory", "");
  size_t k = 0;
  for (int i = 0; i < threads; i++) {
    memcpy(all + k, w[i].lat_ms, w[i].n * sizeof *all);
    k += w[i].n;
    tm_free(w[i].lat_ms);
  }
  qsort(all, total, sizeof *all, cmp_double);
  printf("%d %zu %.0f %.3f %.3f %.2f\n", threads, total, (double)total / seconds,
         total ? all[total / 2] : 0.0, total ? all[total * 99 / 100] : 0.0,
         total ? (double)rows / (double)total : 0.0);
  tm_free(all);
  tm_free(w);
  tm_free(tids);
  duckdb_close(&db);
  return 0;
}
