/*
 * bench_parquet.c - Parquet reader benchmarks (run by bench/parquet.sh).
 *
 *   bench_parquet decode FILE...        full decode of every column, one thread
 *                                       (nested columns as native arrays)
 *   bench_parquet decode-json FILE...   the same, nested columns as JSON text
 *                                       (nested columns as JSON text)
 *   bench_parquet project LO HI FILE... columns ts, amount with ts in [LO, HI]
 *                                       (microseconds): pruned scan vs the same
 *                                       projection without the predicate
 *   bench_parquet rss FILE              full decode of one file; peak RSS
 *
 * Prints one `key=value` line per measurement for the script to format.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "format/parquet/parquet.h"
#include "util/time.h"

typedef struct totals {
  int64_t rows;
  uint64_t file_bytes;
  uint64_t arrow_bytes;
  size_t rg_read, rg_skipped;
} totals;

static bool g_nested_json; /* decode-json: nested columns as JSON text, else native */

static int scan_file(const char *path, const char *const *cols, size_t n_cols,
                     const tm_predicate *pred, totals *t) {
  tm_error err;
  tm_parquet_file *f;
  if (tm_parquet_open_path(&f, path, NULL, &err) < 0) {
    fprintf(stderr, "bench_parquet: %s\n", err.message);
    return -1;
  }
  size_t idx[16];
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  /* Nested columns as native LIST/STRUCT/MAP arrays, or (decode-json) as the
   * JSON text of unsupported_type_action: string (issue 16). */
  o.nested_native = true;
  o.nested_as_json = g_nested_json;
  if (cols) {
    for (size_t i = 0; i < n_cols; i++) {
      int k = tm_parquet_find_field(f, cols[i]);
      if (k < 0) {
        fprintf(stderr, "bench_parquet: %s: no column %s\n", path, cols[i]);
        tm_parquet_close(f);
        return -1;
      }
      idx[i] = (size_t)k;
    }
    o.columns = idx;
    o.n_columns = n_cols;
  }
  o.predicate = pred;
  tm_parquet_scan *s;
  if (tm_parquet_scan_new(&s, f, &o, &err) < 0) {
    fprintf(stderr, "bench_parquet: %s\n", err.message);
    tm_parquet_close(f);
    return -1;
  }
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  while ((rc = tm_parquet_scan_next(s, &b, &err)) == TM_OK) {
    t->rows += b.n_rows;
    t->arrow_bytes += tm_batch_byte_size(&b);
    tm_batch_release(&b);
  }
  tm_parquet_scan_stats st;
  tm_parquet_scan_get_stats(s, &st);
  t->rg_read += st.row_groups_read;
  t->rg_skipped += st.row_groups_skipped;
  t->file_bytes += st.bytes_read;
  tm_parquet_scan_free(s);
  tm_parquet_close(f);
  if (rc != TM_ITEROVER) {
    fprintf(stderr, "bench_parquet: %s\n", err.message);
    return -1;
  }
  return 0;
}

static double seconds_since(int64_t t0) { return (double)(tm_monotonic_ns() - t0) / 1e9; }

/* CPU seconds (user + system) of this process: steadier than wall time on a
 * machine shared with other work. */
static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Best of `runs` full passes over the files. */
static int run(char **files, int n, const char *const *cols, size_t n_cols,
               const tm_predicate *pred, int runs, const char *label) {
  double best = 1e30, best_cpu = 1e30;
  totals t;
  for (int r = 0; r < runs; r++) {
    memset(&t, 0, sizeof t);
    int64_t t0 = tm_monotonic_ns();
    double c0 = cpu_seconds();
    for (int i = 0; i < n; i++)
      if (scan_file(files[i], cols, n_cols, pred, &t) < 0) return 1;
    double s = seconds_since(t0), c = cpu_seconds() - c0;
    if (s < best) best = s;
    if (c < best_cpu) best_cpu = c;
  }
  uint64_t on_disk = 0;
  for (int i = 0; i < n; i++) on_disk += file_size(files[i]);
  printf("%s seconds=%.3f cpu_seconds=%.3f rows=%lld rows_per_s=%.0f file_mb=%.1f chunk_mb=%.1f "
         "file_mb_per_s=%.1f arrow_mb_per_s=%.1f rg_read=%zu rg_skipped=%zu\n",
         label, best, best_cpu, (long long)t.rows, (double)t.rows / best, (double)on_disk / 1e6,
         (double)t.file_bytes / 1e6, (double)on_disk / 1e6 / best,
         (double)t.arrow_bytes / 1e6 / best, t.rg_read, t.rg_skipped);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_parquet decode|project|rss ...\n");
    return 2;
  }
  int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 3; /* lint-ok: bench tool */
  if (runs < 1) runs = 1;
  if (strcmp(argv[1], "decode") == 0) return run(argv + 2, argc - 2, NULL, 0, NULL, runs, "decode");
  if (strcmp(argv[1], "decode-json") == 0) {
    g_nested_json = true;
    return run(argv + 2, argc - 2, NULL, 0, NULL, runs, "decode_json");
  }
  if (strcmp(argv[1], "rss") == 0) {
    int rc = run(argv + 2, 1, NULL, 0, NULL, 1, "rss_scan");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("peak_rss_mb=%.1f\n", (double)ru.ru_maxrss / 1024.0);
    return rc;
  }
  if (strcmp(argv[1], "project") == 0 && argc >= 5) {
    int64_t lo, hi;
    tm_error err;
    if (tm_parse_int64(argv[2], strlen(argv[2]), &lo) < 0 ||
        tm_parse_int64(argv[3], strlen(argv[3]), &hi) < 0) {
      fprintf(stderr, "bench_parquet: bad bounds\n");
      return 2;
    }
    const char *cols[2] = {"ts", "amount"};
    tm_type ts = tm_type_timestamp(TM_UNIT_MICRO, false);
    tm_predicate p;
    tm_predicate_init(&p);
    tm_value v;
    memset(&v, 0, sizeof v);
    v.type = TM_TYPE_TIMESTAMP;
    v.v.i = lo;
    if (tm_predicate_add(&p, "ts", ts, TM_PRED_GE, &v, &err) < 0) return 1;
    v.v.i = hi;
    if (tm_predicate_add(&p, "ts", ts, TM_PRED_LE, &v, &err) < 0) return 1;
    int rc = run(argv + 4, argc - 4, cols, 2, NULL, runs, "project_full");
    if (rc == 0) rc = run(argv + 4, argc - 4, cols, 2, &p, runs, "project_pruned");
    tm_predicate_dispose(&p);
    return rc;
  }
  fprintf(stderr, "bench_parquet: unknown mode %s\n", argv[1]);
  return 2;
}
