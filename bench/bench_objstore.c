/*
 * bench_objstore.c - object-store read benchmark (issue 9): one ~100 MB
 * object read by ranges from an S3-protocol server on 127.0.0.1 versus the
 * same file on local disk, with bytes transferred and request counts.
 *
 * With --parquet PATH (a ~100 MB Parquet file with columns c2 and c7, as
 * bench/objstore.sh generates with DuckDB) it also scans a two-column
 * projection through the Parquet reader over the S3 object, and reports the
 * bytes transferred against the file size: without hints, with the column
 * chunks announced through tm_input_will_need, and from local disk.
 *
 * Usage: bench_objstore --port PORT --key K --secret S --file PATH [--parquet PATH]
 * (bench/objstore.sh starts s3rver and passes these). Prints one line per
 * scenario:
 *   scenario  MB/s  bytes_transferred  requests  seconds
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet/parquet.h"
#include "io/io.h"
#include "objstore/azure/azure.h"
#include "objstore/file/file.h"
#include "objstore/s3/s3.h"
#include "util/alloc.h"
#include "util/time.h"

#define BUCKET "bench"
#define READ_SIZE (1024 * 1024)

static void die(const char *what, const tm_error *err) {
  fprintf(stderr, "bench_objstore: %s: %s\n", what, err->message);
  exit(1); /* lint-ok: benchmark program */
}

static double secs_since(int64_t t0) { return (double)(tm_monotonic_ns() - t0) / 1e9; }

static void report(const char *name, uint64_t size, double secs, uint64_t bytes, uint64_t reqs) {
  printf("%-34s %9.1f MB/s  %12llu bytes  %6llu requests  %7.3f s\n", name,
         (double)size / 1e6 / (secs > 0 ? secs : 1e-9), (unsigned long long)bytes,
         (unsigned long long)reqs, secs);
}

/* Reads the whole input in READ_SIZE pieces, in order; returns a checksum. */
static uint64_t read_sequential(tm_input *in, uint64_t size) {
  tm_error err;
  char *buf = tm_malloc(READ_SIZE);
  uint64_t sum = 0;
  for (uint64_t off = 0; off < size; off += READ_SIZE) {
    size_t n = size - off < READ_SIZE ? (size_t)(size - off) : READ_SIZE;
    if (tm_input_read_exact(in, off, buf, n, &err) < 0) die("read", &err);
    sum += (unsigned char)buf[0] + (unsigned char)buf[n - 1];
  }
  tm_free(buf);
  return sum;
}

/* 200 reads of 64 KiB at pseudo-random offsets (column-chunk-like access). */
static uint64_t read_random(tm_input *in, uint64_t size) {
  tm_error err;
  char buf[65536];
  uint64_t sum = 0, x = 88172645463325252ull;
  for (int i = 0; i < 200; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint64_t off = x % (size - sizeof buf);
    if (tm_input_read_exact(in, off, buf, sizeof buf, &err) < 0) die("read", &err);
    sum += (unsigned char)buf[0];
  }
  return sum;
}

/*
 * Scans columns c1n and c2n of an open Parquet file to the end; with
 * `hint`, first announces their column chunks to the input. Returns rows.
 */
static int64_t scan_projection(tm_parquet_file *f, const char *c1n, const char *c2n, bool hint) {
  tm_error err;
  int a = tm_parquet_find_field(f, c1n), b = tm_parquet_find_field(f, c2n);
  if (a < 0 || b < 0) {
    fprintf(stderr, "bench_objstore: the Parquet file lacks column %s or %s\n", c1n, c2n);
    exit(1); /* lint-ok: benchmark program */
  }
  size_t cols[2] = {(size_t)a, (size_t)b};
  if (hint) {
    size_t n_rg = tm_parquet_num_row_groups(f), n = 0;
    tm_io_range *r = tm_calloc(n_rg * 2 + 1, sizeof *r);
    for (size_t rg = 0; rg < n_rg; rg++) {
      for (int c = 0; c < 2; c++) {
        tm_parquet_chunk_info ci;
        size_t leaf = tm_parquet_field_at(f, cols[c])->leaf;
        if (tm_parquet_chunk_info_at(f, rg, leaf, &ci, &err) < 0) die("chunk info", &err);
        int64_t start = ci.data_page_offset;
        if (ci.dictionary_page_offset > 0 && ci.dictionary_page_offset < start)
          start = ci.dictionary_page_offset;
        r[n].off = (uint64_t)start;
        r[n].len = (uint64_t)ci.compressed_size;
        n++;
      }
    }
    if (tm_input_will_need(tm_parquet_input(f), r, n, &err) < 0) die("will_need", &err);
    tm_free(r);
  }
  tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
  o.columns = cols;
  o.n_columns = 2;
  tm_parquet_scan *scan = NULL;
  if (tm_parquet_scan_new(&scan, f, &o, &err) < 0) die("scan", &err);
  tm_batch batch;
  tm_batch_init(&batch);
  int rc;
  int64_t rows = 0;
  while ((rc = tm_parquet_scan_next(scan, &batch, &err)) == TM_OK) {
    rows += batch.n_rows;
    tm_batch_release(&batch);
  }
  if (rc != TM_ITEROVER) die("scan", &err);
  tm_parquet_scan_free(scan);
  return rows;
}

/* Worst transfer share of a two-column projection, over the runs (checked against 25%). */
static double g_worst_share;

static void bench_projection(tm_objstore *s3, const char *path, const char *label) {
  tm_error err;
  const char *obj = "bench/projection.parquet";
  if (tm_objstore_put_file(s3, obj, path, 0, &err) < 0) die("put parquet", &err);
  tm_obj_stat st;
  if (tm_objstore_stat(s3, obj, &st, &err) < 0) die("stat parquet", &err);
  printf("two-column projections of a %llu-byte Parquet object (10 columns, %s):\n",
         (unsigned long long)st.size, path);
  /* c2, c7: chunks far apart; c2, c3: neighbouring chunks (coalesced when announced). */
  static const char *const pairs[2][2] = {{"c2", "c7"}, {"c2", "c3"}};
  for (int p = 0; p < 2; p++) {
    int64_t rows[3];
    for (int hint = 0; hint < 2; hint++) {
      tm_objstore_stats a, b;
      tm_objstore_get_stats(s3, &a);
      int64_t t0 = tm_monotonic_ns();
      tm_input *in = NULL;
      tm_parquet_file *f = NULL;
      if (tm_objstore_open_input(s3, obj, st.size, &in, &err) < 0) die("open", &err);
      if (tm_parquet_open(&f, in, NULL, &err) < 0) die("parquet open", &err);
      rows[hint] = scan_projection(f, pairs[p][0], pairs[p][1], hint == 1);
      tm_parquet_close(f);
      double secs = secs_since(t0);
      tm_objstore_get_stats(s3, &b);
      uint64_t bytes = b.bytes_in - a.bytes_in;
      char name[64];
      double share = 100.0 * (double)bytes / (double)st.size;
      if (share > g_worst_share) g_worst_share = share;
      snprintf(name, sizeof name, "%s %s+%s%s (%.1f%%)", label, pairs[p][0], pairs[p][1],
               hint ? " announced" : "", share);
      report(name, bytes, secs, bytes, b.requests - a.requests);
    }
    tm_parquet_file *f = NULL;
    int64_t t0 = tm_monotonic_ns();
    if (tm_parquet_open_path(&f, path, NULL, &err) < 0) die("parquet open local", &err);
    rows[2] = scan_projection(f, pairs[p][0], pairs[p][1], false);
    double secs = secs_since(t0);
    tm_input *in = tm_parquet_input(f);
    char name[64];
    snprintf(name, sizeof name, "local %s+%s", pairs[p][0], pairs[p][1]);
    report(name, in->bytes_read, secs, in->bytes_read, in->reads);
    tm_parquet_close(f);
    if (rows[0] != rows[2] || rows[1] != rows[2]) {
      fprintf(stderr, "bench_objstore: row counts differ\n");
      exit(1); /* lint-ok: benchmark program */
    }
  }
  if (tm_objstore_delete(s3, obj, &err) < 0) die("delete", &err);
}

/* Puts n empty-ish objects under list/ (skipped when they are there already). */
static void fill_listing(tm_objstore *st, const char *label, int n) {
  tm_error err;
  tm_obj_list l;
  memset(&l, 0, sizeof l);
  if (tm_objstore_list_all(st, "list/", (size_t)n + 1, &l, &err) < 0) die("list", &err);
  size_t have = l.len;
  tm_obj_list_dispose(&l);
  if (have == (size_t)n) return;
  int64_t t0 = tm_monotonic_ns();
  for (int i = 0; i < n; i++) {
    char key[64];
    snprintf(key, sizeof key, "list/day=%03d/part-%06d.parquet", i % 100, i);
    if (tm_objstore_put(st, key, "x", 1, 0, &err) < 0) die("put", &err);
  }
  printf("  %s: %d objects put in %.1f s\n", label, n, secs_since(t0));
}

/* The best of 3 full listings of list/ (every page), in seconds. */
static double time_listing(tm_objstore *st, int n, uint64_t *requests) {
  tm_error err;
  double best = 1e9;
  for (int run = 0; run < 3; run++) {
    tm_objstore_stats a, b;
    tm_objstore_get_stats(st, &a);
    tm_obj_list l;
    memset(&l, 0, sizeof l);
    int64_t t0 = tm_monotonic_ns();
    if (tm_objstore_list_all(st, "list/", (size_t)n + 1, &l, &err) < 0) die("list", &err);
    double secs = secs_since(t0);
    tm_objstore_get_stats(st, &b);
    if (l.len != (size_t)n) {
      fprintf(stderr, "bench_objstore: listed %zu objects, want %d\n", l.len, n);
      exit(1); /* lint-ok: benchmark program */
    }
    tm_obj_list_dispose(&l);
    if (secs < best) best = secs;
    *requests = b.requests - a.requests;
  }
  return best;
}

int main(int argc, char **argv) {
  const char *port = NULL, *key = NULL, *secret = NULL, *file = NULL, *parquet = NULL;
  const char *azure = NULL;
  int list_n = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--port") == 0) port = argv[i + 1];
    else if (strcmp(argv[i], "--key") == 0) key = argv[i + 1];
    else if (strcmp(argv[i], "--secret") == 0) secret = argv[i + 1];
    else if (strcmp(argv[i], "--file") == 0) file = argv[i + 1];
    else if (strcmp(argv[i], "--parquet") == 0) parquet = argv[i + 1];
    else if (strcmp(argv[i], "--azure") == 0) azure = argv[i + 1];
    else if (strcmp(argv[i], "--list") == 0) list_n = atoi(argv[i + 1]);
  }
  if (!port || !key || !secret || !file || file[0] != '/') {
    fprintf(stderr, "usage: bench_objstore --port P --key K --secret S --file /ABSOLUTE/PATH "
                    "[--parquet PATH] [--azure ACCOUNT_URL [--list N]]\n");
    return 2;
  }
  tm_error err;
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%s", port);
  tm_s3_options o;
  tm_s3_options_init(&o);
  o.bucket = BUCKET;
  o.endpoint = endpoint;
  o.allow_http = true;
  o.access_key = key;
  o.secret_key = secret;
  tm_objstore *s3 = NULL, *local = NULL;
  if (tm_objstore_s3_new(&s3, &o, &err) < 0) die("s3 store", &err);
  if (tm_objstore_file_new(&local, "/", &err) < 0) die("file store", &err);
  const char *obj = "bench/object.bin";

  tm_objstore_stats a, b;
  tm_obj_stat st;
  if (tm_objstore_stat(local, file + 1, &st, &err) < 0 || !st.exists) die(file, &err);
  uint64_t size = st.size;
  printf("object: %llu bytes; s3rver (node) on 127.0.0.1 behind the test proxy\n",
         (unsigned long long)size);

  /* Upload: one signed PUT, body hashed first. */
  tm_objstore_get_stats(s3, &a);
  int64_t t0 = tm_monotonic_ns();
  if (tm_objstore_put_file(s3, obj, file, TM_OBJ_PUT_ATOMIC, &err) < 0) die("put", &err);
  double up = secs_since(t0);
  tm_objstore_get_stats(s3, &b);
  report("s3 upload (one PUT)", size, up, b.bytes_out - a.bytes_out, b.requests - a.requests);

  /* Sequential 1 MiB reads through the range reader (read-ahead grows to 8 MiB). */
  uint64_t sums[4];
  tm_input *in = NULL;
  tm_objstore_get_stats(s3, &a);
  t0 = tm_monotonic_ns();
  if (tm_objstore_open_input(s3, obj, size, &in, &err) < 0) die("open", &err);
  sums[0] = read_sequential(in, size);
  double s3_seq = secs_since(t0);
  tm_input_close(in);
  tm_objstore_get_stats(s3, &b);
  report("s3 full read, 1 MiB reads", size, s3_seq, b.bytes_in - a.bytes_in,
         b.requests - a.requests);

  /* The same with one 8 MiB ranged GET per call, no reader. */
  char *buf = tm_malloc(8 * 1024 * 1024);
  tm_objstore_get_stats(s3, &a);
  t0 = tm_monotonic_ns();
  for (uint64_t off = 0; off < size; off += 8 * 1024 * 1024) {
    size_t n = 0;
    if (tm_objstore_read(s3, obj, off, buf, 8 * 1024 * 1024, &n, &err) < 0) die("get", &err);
  }
  double s3_ranges = secs_since(t0);
  tm_objstore_get_stats(s3, &b);
  report("s3 full read, 8 MiB ranged GETs", size, s3_ranges, b.bytes_in - a.bytes_in,
         b.requests - a.requests);
  tm_free(buf);

  /* Local disk, the same reads. */
  t0 = tm_monotonic_ns();
  if (tm_objstore_open_input(local, file + 1, size, &in, &err) < 0) die("open local", &err);
  sums[1] = read_sequential(in, size);
  double loc_seq = secs_since(t0);
  uint64_t loc_bytes = in->bytes_read, loc_reads = in->reads;
  tm_input_close(in);
  report("local full read, 1 MiB reads", size, loc_seq, loc_bytes, loc_reads);
  if (sums[0] != sums[1]) {
    fprintf(stderr, "bench_objstore: S3 and local reads differ\n");
    return 1;
  }

  /* Random 64 KiB reads: request latency dominates. */
  tm_objstore_get_stats(s3, &a);
  t0 = tm_monotonic_ns();
  if (tm_objstore_open_input(s3, obj, size, &in, &err) < 0) die("open", &err);
  sums[2] = read_random(in, size);
  double s3_rand = secs_since(t0);
  tm_input_close(in);
  tm_objstore_get_stats(s3, &b);
  report("s3 200 random 64 KiB reads", 200 * 65536, s3_rand, b.bytes_in - a.bytes_in,
         b.requests - a.requests);
  t0 = tm_monotonic_ns();
  if (tm_objstore_open_input(local, file + 1, size, &in, &err) < 0) die("open local", &err);
  sums[3] = read_random(in, size);
  double loc_rand = secs_since(t0);
  report("local 200 random 64 KiB reads", 200 * 65536, loc_rand, in->bytes_read, in->reads);
  tm_input_close(in);
  if (sums[2] != sums[3]) {
    fprintf(stderr, "bench_objstore: S3 and local random reads differ\n");
    return 1;
  }

  /* A Parquet-style footer: last 8 bytes, then 40 KB before them. */
  tm_objstore_get_stats(s3, &a);
  t0 = tm_monotonic_ns();
  if (tm_objstore_open_input(s3, obj, size, &in, &err) < 0) die("open", &err);
  char tail[8];
  char *footer = tm_malloc(40000);
  if (tm_input_read_exact(in, size - 8, tail, 8, &err) < 0 ||
      tm_input_read_exact(in, size - 8 - 40000, footer, 40000, &err) < 0)
    die("footer", &err);
  double foot = secs_since(t0);
  tm_input_close(in);
  tm_free(footer);
  tm_objstore_get_stats(s3, &b);
  report("s3 footer (8 B + 40 KB)", 40008, foot, b.bytes_in - a.bytes_in,
         b.requests - a.requests);
  printf("connections opened to s3rver: %llu\n",
         (unsigned long long)tm_objstore_s3_connections(s3));

  if (tm_objstore_delete(s3, obj, &err) < 0) die("delete", &err);
  if (parquet) bench_projection(s3, parquet, "s3");
  int status = 0;
  if (azure) {
    /* Azurite (node) on 127.0.0.1, Shared Key with its well-known account. */
    tm_azure_options ao;
    tm_azure_options_init(&ao);
    ao.container = BUCKET;
    ao.account = TM_AZURE_EMULATOR_ACCOUNT;
    ao.access_key = TM_AZURE_EMULATOR_KEY;
    ao.endpoint = azure;
    ao.allow_http = true;
    tm_objstore *az = NULL;
    if (tm_objstore_azure_new(&az, &ao, &err) < 0) die("azure store", &err);
    if (parquet) {
      g_worst_share = 0;
      bench_projection(az, parquet, "azure");
      printf("azure projection: at most %.1f%% of the object transferred (target: 25%%)\n",
             g_worst_share);
      if (g_worst_share > 25.0) status = 1;
    }
    if (list_n > 0) {
      printf("listing %d objects (every page; best of 3):\n", list_n);
      fill_listing(s3, "s3rver", list_n);
      fill_listing(az, "azurite", list_n);
      uint64_t s3_req = 0, az_req = 0;
      double s3_t = time_listing(s3, list_n, &s3_req);
      double az_t = time_listing(az, list_n, &az_req);
      printf("  %-36s %8.1f ms  %4llu requests\n", "s3rver list", s3_t * 1e3,
             (unsigned long long)s3_req);
      printf("  %-36s %8.1f ms  %4llu requests\n", "azurite list", az_t * 1e3,
             (unsigned long long)az_req);
      printf("  azure / s3: %.2fx (target: at most 1.5x)\n", az_t / s3_t);
      if (az_t > 1.5 * s3_t) status = 1;
    }
    tm_objstore_free(az);
  }
  tm_objstore_free(s3);
  tm_objstore_free(local);
  if (status) fprintf(stderr, "bench_objstore: a target was missed\n");
  return status;
}
