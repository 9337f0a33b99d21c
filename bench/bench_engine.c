/*
 * bench_engine.c - engine benchmark: ingest and queries on every engine
 * (issue 5; run by bench/engine.sh, which adds DuckDB's figures and ratios).
 *
 * The events data (id BIGINT, ts TIMESTAMP, day DATE, user_id INT, kind
 * VARCHAR of 8 values, amount DOUBLE, payload VARCHAR of 40 characters) is
 * generated in memory as 64K-row batches by one formula that
 * bench/engine_duckdb.mjs repeats in DuckDB:
 *   ts = 2024-01-01 + 3 s * id, day = date(ts), user_id = id * 7919 % 100000,
 *   kind = kinds[id % 8], amount = (id * 37 % 100000) / 100,
 *   payload = 'payload-' || lpad(id, 32, '0').
 * For each engine it times the ingest of every batch in one transaction up to
 * a durable commit (the engine's write path: batches into DuckDB or SQLite),
 * the size on disk, then four queries through the SQL session in process
 * (best of several runs): count(*), sum(amount) GROUP BY kind, a 1% time
 * range, and a point lookup by id; and max(ts), the high-water mark a refresh
 * reads (SPEC A2). Queries over HTTP, against DuckDB on the same rows and on
 * the Parquet files, are bench/query.sh's.
 *
 * Output: human-readable lines, and "RESULT <engine> <metric> <value>" lines.
 * Usage: bench_engine [--rows N] [--dir DIR] [--threads N]
 *                     [--engines cayenne,duckdb-file,arrow,sqlite,cayenne-keyed] [--no-queries]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "engine/sql.h"
#include "io/io.h"
#include "util/alloc.h"
#include "util/time.h"

#define T0_SEC INT64_C(1704067200) /* 2024-01-01T00:00:00 */

static const char *const k_kinds[] = {"click", "view", "purchase", "cart",
                                      "search", "login", "logout", "share"};

static void die(const char *what, const tm_error *err) {
  fprintf(stderr, "bench_engine: %s: %s\n", what, err ? err->message : "");
  exit(1); /* lint-ok: benchmark program */
}

static void events_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  if (tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err) ||
      tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, false), false, 2, &err) ||
      tm_schema_add(s, "day", tm_type_of(TM_TYPE_DATE32), false, 3, &err) ||
      tm_schema_add(s, "user_id", tm_type_of(TM_TYPE_INT32), false, 4, &err) ||
      tm_schema_add(s, "kind", tm_type_of(TM_TYPE_UTF8), false, 5, &err) ||
      tm_schema_add(s, "amount", tm_type_of(TM_TYPE_FLOAT64), false, 6, &err) ||
      tm_schema_add(s, "payload", tm_type_of(TM_TYPE_UTF8), false, 7, &err))
    die("schema", &err);
}

static tm_batch *generate(int64_t rows, size_t *n_out) {
  tm_error err;
  tm_schema s;
  events_schema(&s);
  size_t n = (size_t)((rows + TM_BATCH_DEFAULT_ROWS - 1) / TM_BATCH_DEFAULT_ROWS);
  tm_batch *batches = tm_calloc(n ? n : 1, sizeof *batches);
  tm_batch_builder bb;
  if (!batches || tm_batch_builder_init(&bb, &s, &err) != TM_OK) die("generate", &err);
  for (size_t k = 0; k < n; k++) {
    int64_t from = (int64_t)k * TM_BATCH_DEFAULT_ROWS;
    int64_t to = from + TM_BATCH_DEFAULT_ROWS < rows ? from + TM_BATCH_DEFAULT_ROWS : rows;
    for (size_t c = 0; c < 7; c++)
      if (tm_colbuilder_reserve(&bb.cols[c], to - from, c == 6 ? (size_t)(to - from) * 40 : 0, &err))
        die("reserve", &err);
    for (int64_t i = from; i < to; i++) {
      int64_t sec = T0_SEC + i * 3;
      char p[48];
      int len = snprintf(p, sizeof p, "payload-%032lld", (long long)i);
      const char *kind = k_kinds[i % 8];
      if (tm_colbuilder_append_int(&bb.cols[0], i, &err) ||
          tm_colbuilder_append_int(&bb.cols[1], sec * 1000000, &err) ||
          tm_colbuilder_append_int(&bb.cols[2], sec / 86400, &err) ||
          tm_colbuilder_append_int(&bb.cols[3], i * 7919 % 100000, &err) ||
          tm_colbuilder_append_bytes(&bb.cols[4], kind, strlen(kind), &err) ||
          tm_colbuilder_append_double(&bb.cols[5], (double)(i * 37 % 100000) / 100.0, &err) ||
          tm_colbuilder_append_bytes(&bb.cols[6], p, (size_t)len, &err))
        die("generate", &err);
    }
    if (tm_batch_builder_finish(&bb, &batches[k], &err) != TM_OK) die("finish", &err);
  }
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
  *n_out = n;
  return batches;
}

static double seconds_since(int64_t t0) { return (double)(tm_monotonic_ns() - t0) / 1e9; }

/* CPU seconds (user + system) of the whole process, every thread. */
static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         (double)ru.ru_stime.tv_usec / 1e6;
}

static int null_sink(const char *data, size_t len, void *payload) {
  (void)data;
  (void)len;
  (void)payload;
  return TM_OK;
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Best wall time in ms of `runs` runs of sql (after one warm-up run). */
static double time_query(tm_sql_session *s, const char *sql, int runs) {
  tm_error err;
  double best = 1e30;
  for (int r = 0; r <= runs; r++) {
    int64_t t0 = tm_monotonic_ns();
    if (tm_sql_query(s, sql, TM_OUT_CSV, null_sink, NULL, NULL, &err) != TM_OK) die(sql, &err);
    double ms = (double)(tm_monotonic_ns() - t0) / 1e6;
    if (r > 0 && ms < best) best = ms;
  }
  return best;
}

static void print_query(tm_sql_session *s, const char *engine, const char *label, const char *sql) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(1 << 20);
  if (tm_sql_query(s, sql, TM_OUT_CSV, buf_sink, &out, NULL, &err) != TM_OK) die(sql, &err);
  /* One line: rows joined by '|'. */
  for (size_t i = 0; i < out.len; i++)
    if (out.ptr[i] == '\r') out.ptr[i] = ' ';
    else if (out.ptr[i] == '\n') out.ptr[i] = '|';
  printf("CHECK %s %s %s\n", engine, label, tm_buf_cstr(&out));
  tm_buf_dispose(&out);
}

static void render_ts(int64_t sec, char *buf, size_t cap) {
  tm_time_print(buf, cap, sec, 0, 6, false);
}

typedef struct engine_run {
  const char *name;
  tm_engine_kind kind;
  bool keyed;
} engine_run;

static bool g_no_queries;
static tm_db *g_db;

/*
 * Issue 22's target: opening an acceleration with its checks (SPEC D5: what
 * the store's format checks at open: DuckDB's header and metadata checksums,
 * the sqlite engine's checksummed schema pages and the reserve-byte check;
 * then the meta and state) costs under 10% of a full scan, here
 * tm_engine_verify, which reads every column of every row and so checks
 * every data block or page. Both run on a warm page cache.
 */
static void time_open_and_scan(const engine_run *er, const tm_engine_options *o) {
  tm_error err;
  tm_engine *e = NULL;
  int runs = 5;
  int64_t t0 = tm_monotonic_ns();
  for (int i = 0; i < runs; i++) {
    if (tm_engine_open(&e, er->kind, NULL, o, &err) != TM_OK) die("reopen", &err);
    if (i + 1 < runs) tm_engine_release(e);
  }
  double open_ms = (double)(tm_monotonic_ns() - t0) / 1e6 / runs;
  t0 = tm_monotonic_ns();
  if (tm_engine_verify(e, &err) != TM_OK) die("verify", &err);
  double scan_ms = (double)(tm_monotonic_ns() - t0) / 1e6;
  tm_engine_release(e);
  printf("%-14s open with checks %.2f ms, full scan (verify) %.1f ms: %.2f%%\n", er->name, open_ms,
         scan_ms, 100.0 * open_ms / scan_ms);
  printf("RESULT %s open_ms %.3f\n", er->name, open_ms);
  printf("RESULT %s scan_ms %.3f\n", er->name, scan_ms);
}

static void run_engine(const engine_run *er, const tm_batch *batches, size_t n_batches,
                       int64_t rows, const char *dir) {
  tm_error err;
  tm_schema s;
  events_schema(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = g_db;
  o.dataset = "events";
  o.mode = er->kind == TM_ENGINE_ARROW ? TM_ENGINE_MEMORY : TM_ENGINE_FILE;
  char path[1024];
  snprintf(path, sizeof path, "%s/%s%s", dir, er->name,
           er->kind == TM_ENGINE_SQLITE ? ".db" : er->kind == TM_ENGINE_DUCKDB ? ".duckdb" : "");
  o.path = path;
  o.time_column = "ts";
  const char *pk[] = {"id"};
  if (er->keyed) {
    o.primary_key = pk;
    o.n_primary_key = 1;
  }
  if (tm_engine_drop(er->kind, &o, &err) != TM_OK) die("drop", &err);
  tm_engine *e;
  if (tm_engine_open(&e, er->kind, &s, &o, &err) != TM_OK) die("open", &err);
  /* Ingest: every batch in one transaction, up to the durable commit. */
  int64_t t0 = tm_monotonic_ns();
  double c0 = cpu_seconds();
  tm_engine_txn *t;
  if (tm_engine_begin(e, TM_TXN_APPEND, &t, &err) != TM_OK) die("begin", &err);
  for (size_t i = 0; i < n_batches; i++)
    if (tm_engine_txn_write(t, &batches[i], &err) != TM_OK) die("write", &err);
  double write_secs = seconds_since(t0);
  tm_engine_commit_info info;
  if (tm_engine_txn_commit(t, NULL, &info, &err) != TM_OK) die("commit", &err);
  double secs = seconds_since(t0), cpu = cpu_seconds() - c0;
  uint64_t size = 0;
  if (tm_engine_size_bytes(e, &size, &err) != TM_OK) die("size", &err);
  printf("%-14s ingest %lld rows in %.2f s: %.2f M rows/s (writes %.2f s + commit %.2f s; CPU %.2f s; "
         "%.0f MB)\n",
         er->name, (long long)rows, secs, (double)rows / secs / 1e6, write_secs, secs - write_secs, cpu,
         (double)size / 1e6);
  printf("RESULT %s ingest_rows_per_s %.0f\n", er->name, (double)rows / secs);
  printf("RESULT %s ingest_cpu_s %.3f\n", er->name, cpu);
  printf("RESULT %s size_mb %.1f\n", er->name, (double)size / 1e6);
  if (er->keyed || g_no_queries) {
    tm_engine_release(e);
    tm_schema_dispose(&s);
    return;
  }
  tm_sql_catalog *cat;
  tm_sql_session *ss;
  if (tm_sql_catalog_new(&cat, g_db, &err) || tm_sql_catalog_add(cat, e, &err) ||
      tm_sql_session_new(&ss, cat, &err))
    die("session", &err);
  char lo[64], hi[64], range[512], point[128];
  int64_t mid = rows / 2, span = rows / 100;
  render_ts(T0_SEC + (mid - span / 2) * 3, lo, sizeof lo);
  render_ts(T0_SEC + (mid + span / 2) * 3, hi, sizeof hi);
  snprintf(range, sizeof range,
           "SELECT count(*), sum(amount) FROM events WHERE ts >= TIMESTAMP '%s' AND ts < TIMESTAMP '%s'",
           lo, hi);
  snprintf(point, sizeof point, "SELECT * FROM events WHERE id = %lld", (long long)(rows * 3 / 4 + 21));
  struct {
    const char *metric;
    const char *sql;
    int runs;
  } qs[] = {{"q_count_ms", "SELECT count(*) FROM events", 3},
            {"q_groupby_ms", "SELECT kind, sum(amount) FROM events GROUP BY kind", 3},
            {"q_range_ms", range, 5},
            {"q_point_ms", point, 9}};
  for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++) {
    double ms = time_query(ss, qs[q].sql, qs[q].runs);
    printf("%-14s %-13s %9.2f ms\n", er->name, qs[q].metric, ms);
    printf("RESULT %s %s %.3f\n", er->name, qs[q].metric, ms);
  }
  print_query(ss, er->name, "count", "SELECT count(*) FROM events");
  print_query(ss, er->name, "groupby",
              "SELECT kind, printf('%.2f', sum(amount)) FROM events GROUP BY kind ORDER BY kind");
  char check[600];
  snprintf(check, sizeof check,
           "SELECT count(*), printf('%%.2f', sum(amount)) FROM events WHERE ts >= TIMESTAMP '%s' "
           "AND ts < TIMESTAMP '%s'",
           lo, hi);
  print_query(ss, er->name, "range", check);
  snprintf(check, sizeof check, "SELECT id, user_id, kind, amount, payload FROM events WHERE id = %lld",
           (long long)(rows * 3 / 4 + 21));
  print_query(ss, er->name, "point", check);
  {
    /* The high-water mark a refresh reads: max(ts) (SPEC A2). */
    tm_engine_bounds bd;
    int n = 1000;
    int64_t b0 = tm_monotonic_ns();
    for (int i = 0; i < n; i++) {
      if (tm_engine_column_bounds(e, "ts", &bd, &err) != TM_OK) die("bounds", &err);
      tm_engine_bounds_dispose(&bd);
    }
    double us = (double)(tm_monotonic_ns() - b0) / 1e3 / n;
    printf("%-14s max(ts): %.2f us\n", er->name, us);
    printf("RESULT %s max_ts_us %.3f\n", er->name, us);
  }
  printf("RESULT %s range_bounds %s|%s\n", er->name, lo, hi);
  tm_sql_session_free(ss);
  tm_sql_catalog_free(cat);
  tm_engine_release(e);
  if (o.mode == TM_ENGINE_FILE) time_open_and_scan(er, &o);
  tm_schema_dispose(&s);
}

int main(int argc, char **argv) {
  int64_t rows = 10000000;
  const char *dir = "build/bench-data/engine";
  const char *engines = "cayenne,duckdb-file,arrow,sqlite,cayenne-keyed";
  int64_t threads = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
      if (tm_parse_int64(argv[i + 1], strlen(argv[i + 1]), &rows) != TM_OK || rows < 1000) {
        fprintf(stderr, "bench_engine: bad --rows\n");
        return 2;
      }
      i++;
    } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (strcmp(argv[i], "--engines") == 0 && i + 1 < argc) {
      engines = argv[++i];
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      if (tm_parse_int64(argv[i + 1], strlen(argv[i + 1]), &threads) != TM_OK || threads < 0) {
        fprintf(stderr, "bench_engine: bad --threads\n");
        return 2;
      }
      i++;
    } else if (strcmp(argv[i], "--no-queries") == 0) {
      g_no_queries = true;
    } else {
      fprintf(stderr, "usage: bench_engine [--rows N] [--dir DIR] [--engines LIST]\n");
      return 2;
    }
  }
  tm_error err;
  if (tm_mkdir_p(dir, &err) != TM_OK) die("mkdir", &err);
  tm_db_options dbo;
  tm_db_options_init(&dbo);
  dbo.threads = (int)threads;
  dbo.dirs = (const char *const[]){dir};
  dbo.n_dirs = 1;
  if (tm_db_open(&g_db, &dbo, &err) != TM_OK) die("DuckDB", &err);
  printf("DuckDB %s, %d threads\n", tm_db_version(), tm_db_threads(g_db));
  int64_t g0 = tm_monotonic_ns();
  size_t n_batches;
  tm_batch *batches = generate(rows, &n_batches);
  printf("generated %lld rows in %zu batches (%.1f s)\n", (long long)rows, n_batches, seconds_since(g0));
  printf("RESULT data rows %lld\n", (long long)rows);
  static const engine_run runs[] = {{"cayenne", TM_ENGINE_CAYENNE, false},
                                    {"duckdb-file", TM_ENGINE_DUCKDB, false},
                                    {"arrow", TM_ENGINE_ARROW, false},
                                    {"sqlite", TM_ENGINE_SQLITE, false},
                                    {"cayenne-keyed", TM_ENGINE_CAYENNE, true}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    /* Match whole names in the comma-separated list. */
    const char *p = engines;
    size_t len = strlen(runs[i].name);
    bool want = false;
    while (p && *p) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      if (n == len && strncmp(p, runs[i].name, n) == 0) want = true;
      p = comma ? comma + 1 : NULL;
    }
    if (want) run_engine(&runs[i], batches, n_batches, rows, dir);
    fflush(stdout);
  }
  for (size_t i = 0; i < n_batches; i++) tm_batch_release(&batches[i]);
  tm_free(batches);
  tm_db_release(g_db);
  return 0;
}
