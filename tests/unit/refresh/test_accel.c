/*
 * Unit tests for refresh/accel: append and full refresh by time on a folder
 * of JSON-lines files into the sqlite engine (SPEC A2, A3, A4, A5, A7, A10,
 * A11, C3, D1, D3). End-to-end tests with Parquet and the CLI are in
 * tests/integration/test_refresh_*.sh.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <utime.h>

#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/log.h"

typedef struct fixture {
  tm_config cfg;
  tm_accel *a;
  char dir[1024];
} fixture;

static void write_lines(const char *dir, const char *file, const char *text) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  tm_test_write_file(path, text);
}

/* A config with one dataset over <tmp>/data, with extra acceleration lines. */
static void setup(fixture *f, const char *extra_dataset, const char *extra_accel) {
  tm_error err;
  tm_log_set_level(TM_LOG_WARN);
  snprintf(f->dir, sizeof f->dir, "%s/data", tm_test_tmpdir());
  mkdir(f->dir, 0755);
  char yaml[4096];
  snprintf(yaml, sizeof yaml,
           "datasets:\n"
           "  - from: file:data\n"
           "    name: events\n"
           "    time_column: ts\n"
           "%s"
           "    acceleration:\n"
           "      engine: sqlite\n"
           "      mode: file\n"
           "      refresh_mode: append\n"
           "%s",
           extra_dataset, extra_accel);
  TM_ASSERT_OK(tm_config_load_text(&f->cfg, yaml, strlen(yaml), "t.yaml", tm_test_tmpdir(), &err), &err);
  tm_accel_options o;
  tm_accel_options_init(&o);
  o.db = tm_test_db();
  o.base_dir = f->cfg.dir;
  TM_ASSERT_OK(tm_accel_new(&f->a, &f->cfg.datasets[0], &o, &err), &err);
}

static void teardown(fixture *f) {
  tm_accel_free(f->a);
  tm_config_dispose(&f->cfg);
}

static tm_refresh_result refresh(fixture *f) {
  tm_error err;
  tm_refresh_result r;
  TM_ASSERT_OK(tm_accel_refresh(f->a, NULL, &r, &err), &err);
  return r;
}

/* Sum of the id column and row count of the acceleration (a multiset check). */
static void totals(fixture *f, int64_t *rows, int64_t *id_sum) {
  tm_error err;
  tm_engine *e = tm_accel_engine(f->a);
  TM_ASSERT(e);
  tm_engine_scan *sc;
  TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &sc, &err), &err);
  *rows = 0;
  *id_sum = 0;
  tm_batch b;
  int rc;
  int id = tm_schema_find(tm_engine_schema(e), "id");
  while ((rc = tm_engine_scan_next(sc, &b, &err)) == TM_OK) {
    tm_colview c = tm_batch_col(&b, (size_t)id);
    for (int64_t i = 0; i < b.n_rows; i++) *id_sum += tm_colview_int(&c, i);
    *rows += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  tm_engine_scan_free(sc);
  tm_engine_release(e);
}

TM_TEST(A2_strict_boundary_ties_loaded_once) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  write_lines(f.dir, "a.jsonl",
              "{\"id\": 1, \"ts\": 100}\n{\"id\": 2, \"ts\": 200}\n{\"id\": 3, \"ts\": 300}\n"
              "{\"id\": 4, \"ts\": 300}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 4);
  TM_ASSERT_INT_EQ(r.how, TM_READ_BY_TIME);
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 0); /* the rows at the maximum are not read again */
  write_lines(f.dir, "b.jsonl", "{\"id\": 5, \"ts\": 301}\n{\"id\": 6, \"ts\": 250}\n");
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 1); /* 250 is below the mark: never loaded by append */
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 5);
  TM_ASSERT_INT_EQ(sum, 1 + 2 + 3 + 4 + 5);
  teardown(&f);
}

TM_TEST(A3_overlap_loads_late_rows_once_and_keeps_duplicates) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "      refresh_append_overlap: 100s\n");
  write_lines(f.dir, "a.jsonl",
              "{\"id\": 1, \"ts\": 100, \"v\": \"x\"}\n{\"id\": 2, \"ts\": 200, \"v\": \"y\"}\n"
              "{\"id\": 2, \"ts\": 200, \"v\": \"y\"}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 3); /* a genuine duplicate in the source is kept */
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 0);
  TM_ASSERT_INT_EQ(r.rows_deduplicated, 3); /* the window ts >= 100 holds all three */
  /* A late row inside the window (150 > 200 - 100), one outside (50), and a
   * third copy of the (2, 200, y) row, which the source now holds three times. */
  write_lines(f.dir, "b.jsonl",
              "{\"id\": 7, \"ts\": 150, \"v\": \"late\"}\n{\"id\": 8, \"ts\": 50, \"v\": \"old\"}\n"
              "{\"id\": 2, \"ts\": 200, \"v\": \"y\"}\n");
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 5);
  TM_ASSERT_INT_EQ(sum, 1 + 2 + 2 + 7 + 2);
  teardown(&f);
}

TM_TEST(A5_date_column_later_rows_of_boundary_day) {
  fixture f;
  setup(&f, "    time_format: date\n", "");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": \"2026-11-29\"}\n{\"id\": 2, \"ts\": \"2026-11-30\"}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2);
  write_lines(f.dir, "b.jsonl", "{\"id\": 3, \"ts\": \"2026-11-30\"}\n{\"id\": 4, \"ts\": \"2026-12-01\"}\n");
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2); /* the later row of the boundary day is not lost */
  TM_ASSERT_INT_EQ(r.rows_deduplicated, 1);
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 0);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 4);
  TM_ASSERT_INT_EQ(sum, 10);
  teardown(&f);
}

TM_TEST(A4_iso8601_zones_and_null_times) {
  fixture f;
  setup(&f, "    time_format: ISO8601\n", "");
  write_lines(f.dir, "a.jsonl",
              "{\"id\": 1, \"ts\": \"2026-11-30T10:00:00Z\"}\n"
              "{\"id\": 2, \"ts\": \"2026-11-30T12:00:00+01:00\"}\n"
              "{\"id\": 3, \"ts\": null}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 3); /* the first load reads everything */
  write_lines(f.dir, "b.jsonl",
              "{\"id\": 4, \"ts\": \"2026-11-30 11:00:00 UTC\"}\n"
              "{\"id\": 5, \"ts\": \"2026-11-30T11:00:01+00:00\"}\n"
              "{\"id\": 6, \"ts\": null}\n");
  r = refresh(&f);
  /* The mark is 11:00Z (row 2): 11:00 UTC is not above it, 11:00:01 is. */
  TM_ASSERT_INT_EQ(r.rows_written, 1);
  TM_ASSERT_INT_EQ(r.rows_null_time, 2);
  TM_ASSERT(r.has_max_time);
  teardown(&f);
}

TM_TEST(A7_last_modified_reads_only_newer_files) {
  fixture f;
  setup(&f, "", "");
  /* time_column: ts was set by setup; use a second config with last_modified. */
  teardown(&f);
  tm_error err;
  snprintf(f.dir, sizeof f.dir, "%s/data", tm_test_tmpdir());
  const char *yaml =
      "datasets:\n  - from: file:data\n    name: files\n    time_column: last_modified\n"
      "    acceleration: {engine: sqlite, mode: file, refresh_mode: append}\n";
  TM_ASSERT_OK(tm_config_load_text(&f.cfg, yaml, strlen(yaml), "t.yaml", tm_test_tmpdir(), &err), &err);
  write_lines(f.dir, "a.jsonl", "{\"id\": 1}\n{\"id\": 2}\n");
  char path[2048];
  snprintf(path, sizeof path, "%s/a.jsonl", f.dir);
  struct utimbuf t = {1700000000, 1700000000};
  utime(path, &t);
  tm_accel_options o;
  tm_accel_options_init(&o);
  o.db = tm_test_db();
  o.base_dir = f.cfg.dir;
  TM_ASSERT_OK(tm_accel_new(&f.a, &f.cfg.datasets[0], &o, &err), &err);
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2);
  write_lines(f.dir, "b.jsonl", "{\"id\": 3}\n");
  snprintf(path, sizeof path, "%s/b.jsonl", f.dir);
  struct utimbuf t2 = {1700000100, 1700000100};
  utime(path, &t2);
  r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 1);
  TM_ASSERT_INT_EQ(r.files_read, 1);
  TM_ASSERT_INT_EQ(r.files_skipped, 1);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 3);
  teardown(&f);
}

TM_TEST(A10_refresh_sql_narrows_columns_and_rows) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n",
        "      refresh_sql: SELECT id, ts FROM events WHERE region = 'eu' AND id > 1\n");
  write_lines(f.dir, "a.jsonl",
              "{\"id\": 1, \"ts\": 1, \"region\": \"eu\"}\n{\"id\": 2, \"ts\": 2, \"region\": \"us\"}\n"
              "{\"id\": 3, \"ts\": 3, \"region\": \"eu\"}\n{\"id\": 4, \"ts\": 4, \"region\": \"eu\"}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2);
  tm_engine *e = tm_accel_engine(f.a);
  TM_ASSERT_INT_EQ(tm_engine_schema(e)->n_cols, 2);
  tm_engine_release(e);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(sum, 7);
  teardown(&f);
}

/* Source columns named _tm_* would be confused with tidemark's own (provenance, keyed stages). */
TM_TEST(reserved_column_names_are_refused) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "      primary_key: id\n");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1, \"_TM_arrival\": 5}\n");
  tm_error err;
  tm_refresh_result r;
  TM_ASSERT_RC(tm_accel_refresh(f.a, NULL, &r, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "column '_TM_arrival': names that start with _tm_ are reserved");
  TM_ASSERT(!tm_accel_engine(f.a));
  teardown(&f);
  /* Renamed in a refresh_sql, it loads. */
  setup(&f, "    time_format: unix_seconds\n",
        "      primary_key: id\n      refresh_sql: SELECT id, ts, \"_TM_arrival\" AS arrival FROM events\n");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1, \"_TM_arrival\": 5}\n");
  TM_ASSERT_INT_EQ(refresh(&f).rows_written, 1);
  teardown(&f);
}

TM_TEST(A11_full_refresh_replaces) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1}\n{\"id\": 2, \"ts\": 2}\n");
  refresh(&f);
  write_lines(f.dir, "a.jsonl", "{\"id\": 10, \"ts\": 1}\n");
  tm_error err;
  tm_refresh_request req;
  tm_refresh_request_init(&req);
  req.full = true;
  tm_refresh_result r;
  TM_ASSERT_OK(tm_accel_refresh(f.a, &req, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.how, TM_READ_FULL);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 1);
  TM_ASSERT_INT_EQ(sum, 10);
  teardown(&f);
}

TM_TEST(D2_D3_errors_leave_the_acceleration_unchanged) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1}\n{\"id\": 2, \"ts\": 2}\n");
  refresh(&f);
  write_lines(f.dir, "b.jsonl", "{\"id\": 3, \"ts\": 3}\n{\"id\": 4, \"ts\": \n");
  tm_error err;
  tm_refresh_result r;
  TM_ASSERT_RC(tm_accel_refresh(f.a, NULL, &r, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "b.jsonl: line 2");
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 2); /* row 3 of the bad file was not committed */
  tm_accel_info info;
  tm_accel_get_info(f.a, &info);
  TM_ASSERT(info.ready);
  TM_ASSERT_INT_EQ(info.status, TM_ACCEL_ERROR);
  TM_ASSERT_CONTAINS(info.last_error, "b.jsonl");
  /* D3: the folder disappears. */
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f.dir);
  TM_ASSERT(system(cmd) == 0);
  TM_ASSERT_RC(tm_accel_refresh(f.a, NULL, &r, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "does not exist");
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 2);
  teardown(&f);
}

TM_TEST(C1_file_mode_reopens_ready) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1}\n");
  refresh(&f);
  tm_accel_free(f.a);
  tm_error err;
  tm_accel_options o;
  tm_accel_options_init(&o);
  o.db = tm_test_db();
  o.base_dir = f.cfg.dir;
  TM_ASSERT_OK(tm_accel_new(&f.a, &f.cfg.datasets[0], &o, &err), &err);
  TM_ASSERT(tm_accel_ready(f.a));
  write_lines(f.dir, "b.jsonl", "{\"id\": 2, \"ts\": 2}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 1); /* catches up from the stored mark */
  teardown(&f);
}

TM_TEST(C3_retention_period_and_sql) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n",
        "      retention_check_enabled: true\n      retention_period: 1d\n"
        "      retention_sql: DELETE FROM events WHERE id = 3\n");
  int64_t now = tm_now_ms() / 1000;
  char text[512];
  snprintf(text, sizeof text,
           "{\"id\": 1, \"ts\": %lld}\n{\"id\": 2, \"ts\": %lld}\n{\"id\": 3, \"ts\": %lld}\n",
           (long long)(now - 3 * 86400), (long long)now, (long long)now);
  write_lines(f.dir, "a.jsonl", text);
  refresh(&f);
  tm_error err;
  int64_t deleted;
  TM_ASSERT_OK(tm_accel_retention(f.a, tm_now_ms(), &deleted, &err), &err);
  TM_ASSERT_INT_EQ(deleted, 2);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 1);
  TM_ASSERT_INT_EQ(sum, 2);
  teardown(&f);
}

/* The value column of key id 1, read through the engine. */
static void value_of_key1(fixture *f, char *out, size_t cap) {
  tm_error err;
  tm_engine *e = tm_accel_engine(f->a);
  tm_engine_scan *sc;
  TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &sc, &err), &err);
  int id = tm_schema_find(tm_engine_schema(e), "id"), v = tm_schema_find(tm_engine_schema(e), "v");
  tm_batch b;
  int n = 0;
  out[0] = '\0';
  while (tm_engine_scan_next(sc, &b, &err) == TM_OK) {
    tm_colview ic = tm_batch_col(&b, (size_t)id), vc = tm_batch_col(&b, (size_t)v);
    for (int64_t i = 0; i < b.n_rows; i++)
      if (tm_colview_int(&ic, i) == 1) {
        tm_strview sv = tm_colview_bytes(&vc, i);
        snprintf(out, cap, "%.*s", (int)sv.len, sv.ptr);
        n++;
      }
    tm_batch_release(&b);
  }
  TM_ASSERT_INT_EQ(n, 1);
  tm_engine_scan_free(sc);
  tm_engine_release(e);
}

static void a8_case(const char *sub, const char *accel, const char *after_first,
                    const char *after_late) {
  fixture f;
  tm_error err;
  tm_log_set_level(TM_LOG_ERROR);
  snprintf(f.dir, sizeof f.dir, "%s/%s", tm_test_tmpdir(), sub);
  mkdir(f.dir, 0755);
  char yaml[2048];
  /* A file-mode acceleration lives at acc-SUB; a memory one has no file (a file param is refused). */
  bool memory = strstr(accel, "engine: arrow") != NULL;
  snprintf(yaml, sizeof yaml,
           "datasets:\n  - from: file:%s\n    name: events\n    time_column: ts\n"
           "    time_format: unix_seconds\n    acceleration:\n%s"
           "      refresh_mode: append\n      refresh_append_overlap: 100s\n      primary_key: id\n"
           "%s%s%s",
           sub, accel, memory ? "" : "      params: {file_path: acc-", memory ? "" : sub,
           memory ? "" : "}\n");
  TM_ASSERT_OK(tm_config_load_text(&f.cfg, yaml, strlen(yaml), "t.yaml", tm_test_tmpdir(), &err), &err);
  tm_accel_options o;
  tm_accel_options_init(&o);
  o.db = tm_test_db();
  o.base_dir = f.cfg.dir;
  TM_ASSERT_OK(tm_accel_new(&f.a, &f.cfg.datasets[0], &o, &err), &err);
  /* Several versions of key 1 in one batch: times 10, 5, 10 (equal to the first). */
  write_lines(f.dir, "a.jsonl",
              "{\"id\": 1, \"ts\": 10, \"v\": \"a\"}\n{\"id\": 1, \"ts\": 5, \"v\": \"old\"}\n"
              "{\"id\": 1, \"ts\": 10, \"v\": \"b\"}\n{\"id\": 2, \"ts\": 10, \"v\": \"z\"}\n");
  refresh(&f);
  char v[64];
  value_of_key1(&f, v, sizeof v);
  TM_ASSERT_STR_EQ(v, after_first);
  /* A late, older version of key 1 arrives (inside the overlap window). */
  write_lines(f.dir, "b.jsonl", "{\"id\": 1, \"ts\": 7, \"v\": \"late\"}\n");
  refresh(&f);
  value_of_key1(&f, v, sizeof v);
  TM_ASSERT_STR_EQ(v, after_late);
  int64_t rows, sum;
  totals(&f, &rows, &sum);
  TM_ASSERT_INT_EQ(rows, 2);
  teardown(&f);
}

TM_TEST(A8_cayenne_newest_time_wins_equal_times_later_arrival) {
  a8_case("c", "      engine: cayenne\n", "b", "b");
}

TM_TEST(A8_sqlite_upsert_last_arrival_drop_first) {
  a8_case("su", "      engine: sqlite\n      mode: file\n      on_conflict: {id: upsert}\n", "b", "late");
  a8_case("sd", "      engine: sqlite\n      mode: file\n", "a", "a");
}

TM_TEST(A8_arrow_upsert_last_arrival_drop_first) {
  a8_case("au", "      engine: arrow\n      on_conflict: {id: upsert}\n", "b", "late");
  a8_case("ad", "      engine: arrow\n", "a", "a");
}

typedef struct reader_ctx {
  fixture *f;
  volatile int stop;
  int64_t checks, bad;
} reader_ctx;

static void *reader_main(void *p) {
  reader_ctx *rc = p;
  while (!rc->stop) {
    tm_error err;
    tm_engine *e = tm_accel_engine(rc->f->a);
    if (!e) continue;
    int64_t n = -1;
    if (tm_engine_row_count(e, &n, &err) != TM_OK || (n != 3000 && n != 5000)) rc->bad++;
    rc->checks++;
    tm_engine_release(e);
  }
  return NULL;
}

TM_TEST(A11_C5_full_refresh_swaps_atomically_for_concurrent_readers) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  /* Full refreshes alternate between 3000 and 5000 rows while a thread counts. */
  tm_buf text = TM_BUF_INIT(1 << 24);
  tm_error err;
  for (int i = 0; i < 3000; i++) TM_ASSERT_OK(tm_buf_printf(&text, &err, "{\"id\": %d, \"ts\": %d}\n", i, i), &err);
  write_lines(f.dir, "a.jsonl", tm_buf_cstr(&text));
  tm_refresh_request req;
  tm_refresh_request_init(&req);
  req.full = true;
  tm_refresh_result r;
  TM_ASSERT_OK(tm_accel_refresh(f.a, &req, &r, &err), &err);
  reader_ctx rc = {&f, 0, 0, 0};
  pthread_t th;
  TM_ASSERT(pthread_create(&th, NULL, reader_main, &rc) == 0);
  for (int round = 0; round < 6; round++) {
    if (round % 2 == 0) {
      char name[32];
      snprintf(name, sizeof name, "b.jsonl");
      tm_buf more = TM_BUF_INIT(1 << 24);
      for (int i = 0; i < 2000; i++) TM_ASSERT_OK(tm_buf_printf(&more, &err, "{\"id\": %d, \"ts\": %d}\n", 10000 + i, i), &err);
      write_lines(f.dir, name, tm_buf_cstr(&more));
      tm_buf_dispose(&more);
    } else {
      char path[2048];
      snprintf(path, sizeof path, "%s/b.jsonl", f.dir);
      unlink(path);
    }
    TM_ASSERT_OK(tm_accel_refresh(f.a, &req, &r, &err), &err);
    TM_ASSERT_INT_EQ(r.how, TM_READ_FULL);
  }
  rc.stop = 1;
  pthread_join(th, NULL);
  tm_test__note("%lld concurrent counts, all 3000 or 5000", (long long)rc.checks);
  TM_ASSERT(rc.checks > 0);
  TM_ASSERT_INT_EQ(rc.bad, 0);
  tm_buf_dispose(&text);
  teardown(&f);
}

TM_TEST(B9_schema_change_recreates_the_acceleration) {
  fixture f;
  setup(&f, "    time_format: unix_seconds\n", "");
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1}\n");
  refresh(&f);
  /* The first file (the schema's source) gains a column. */
  write_lines(f.dir, "a.jsonl", "{\"id\": 1, \"ts\": 1, \"extra\": \"x\"}\n{\"id\": 2, \"ts\": 2, \"extra\": \"y\"}\n");
  tm_refresh_result r = refresh(&f);
  TM_ASSERT_INT_EQ(r.rows_written, 2); /* recreated, then read everything */
  tm_engine *e = tm_accel_engine(f.a);
  TM_ASSERT_INT_EQ(tm_engine_schema(e)->n_cols, 3);
  tm_engine_release(e);
  teardown(&f);
}
