/*
 * Unit tests for cayenne's files: recovery at open (orphans removed, the last
 * manifest intact, SPEC D1), the process lock, corruption detection,
 * compaction (files reclaimed, answers unchanged), deletion sets and the key
 * index across reopen (A8), and constant-time bounds from zone maps (A2).
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/sql.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

static void kv_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MILLI, true), true, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "tag", tm_type_of(TM_TYPE_UTF8), true, 3, &err), &err);
}

static tm_engine *open_cay(const char *dir, bool keyed, int compact_min, bool verify, int *rc_out) {
  tm_error err;
  tm_schema s;
  kv_schema(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.dataset = "kv";
  o.mode = TM_ENGINE_FILE;
  o.path = dir;
  o.time_column = "ts";
  const char *pk[] = {"id"};
  if (keyed) {
    o.primary_key = pk;
    o.n_primary_key = 1;
  }
  o.segment_rows = 100;
  o.compact_min_segments = compact_min;
  o.verify_checksums = verify;
  tm_engine *e = NULL;
  int rc = tm_engine_open(&e, TM_ENGINE_CAYENNE, &s, &o, &err);
  tm_schema_dispose(&s);
  if (rc_out) *rc_out = rc;
  else TM_ASSERT_MSG(rc == TM_OK, "open %s: %s", dir, err.message);
  return e;
}

/*
 * Commits rows id in [from, from + n) (only ids with id % 10 >= 5 when
 * upper_half) with ts = id * 1000 + bump and tag "t<id % 5>".
 */
static tm_engine_commit_info put_ids(tm_engine *e, int64_t from, int64_t n, int64_t bump,
                                     const char *state_value, bool upper_half) {
  tm_error err;
  tm_schema s;
  kv_schema(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = from; i < from + n; i++) {
    if (upper_half && i % 10 < 5) continue;
    char tag[16];
    int len = snprintf(tag, sizeof tag, "t%lld", (long long)(i % 5));
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], i * 1000 + bump, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[2], tag, (size_t)len, &err), &err);
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
  tm_engine_txn *t;
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
  tm_kv st;
  tm_kv_init(&st);
  if (state_value) TM_ASSERT_OK(tm_kv_set(&st, "batch", state_value, &err), &err);
  tm_engine_commit_info info;
  TM_ASSERT_OK(tm_engine_txn_commit(t, state_value ? &st : NULL, &info, &err), &err);
  tm_kv_dispose(&st);
  tm_batch_release(&b);
  return info;
}

static tm_engine_commit_info put(tm_engine *e, int64_t from, int64_t n, int64_t bump,
                                 const char *state_value) {
  return put_ids(e, from, n, bump, state_value, false);
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

static int count_files(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  TM_ASSERT(d != NULL);
  int n = 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL)
    if (strncmp(ent->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

/* sum(ts) over the live rows, through a scan. */
static int64_t sum_ts(tm_engine *e, int64_t *rows) {
  tm_error err;
  tm_engine_snapshot *s;
  TM_ASSERT_OK(tm_engine_snapshot_acquire(e, &s, &err), &err);
  tm_engine_scan *sc;
  size_t cols[] = {1};
  TM_ASSERT_OK(tm_engine_snapshot_scan(s, cols, 1, NULL, &sc, &err), &err);
  tm_batch b;
  int64_t sum = 0, n = 0;
  while (tm_engine_scan_next(sc, &b, &err) == TM_OK) {
    tm_colview v = tm_batch_col(&b, 0);
    for (int64_t r = 0; r < b.n_rows; r++) sum += tm_colview_int(&v, r);
    n += b.n_rows;
    tm_batch_release(&b);
  }
  tm_engine_scan_free(sc);
  tm_engine_snapshot_release(s);
  if (rows) *rows = n;
  return sum;
}

TM_TEST(cayenne_d1_open_removes_orphans_and_keeps_the_manifest) {
  tm_error err;
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, -1, false, NULL);
  put(e, 0, 250, 0, "1");
  tm_engine_release(e);
  int segs = count_files(dir, "seg-");
  TM_ASSERT_INT_EQ(segs, 3);
  /* What a crash mid-commit leaves: written segments and a temporary manifest. */
  char p[512];
  snprintf(p, sizeof p, "%s/seg-00000000000000ff.tmc", dir);
  tm_test_write_file(p, "half a segment");
  snprintf(p, sizeof p, "%s/MANIFEST.tmp.99.123", dir);
  tm_test_write_file(p, "half a manifest");
  e = open_cay(dir, false, -1, true, NULL);
  TM_ASSERT_INT_EQ(count_files(dir, "seg-"), segs);
  TM_ASSERT_INT_EQ(count_files(dir, "MANIFEST.tmp"), 0);
  int64_t n;
  TM_ASSERT_INT_EQ(sum_ts(e, &n), 1000 * (249 * 250 / 2));
  TM_ASSERT_INT_EQ(n, 250);
  tm_kv st;
  tm_kv_init(&st);
  TM_ASSERT_OK(tm_engine_read_state(e, &st, &err), &err);
  TM_ASSERT_STR_EQ(tm_kv_get(&st, "batch"), "1");
  tm_kv_dispose(&st);
  /* Another process (or open) cannot take the folder meanwhile. */
  int rc;
  tm_engine *twice = open_cay(dir, false, -1, false, &rc);
  TM_ASSERT_RC(rc, TM_ECONFLICT);
  TM_ASSERT(twice == NULL);
  tm_engine_release(e);
  e = open_cay(dir, false, -1, false, NULL);
  tm_engine_release(e);
}

TM_TEST(cayenne_detects_corrupt_files) {
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, -1, false, NULL);
  put(e, 0, 150, 0, "1");
  tm_engine_release(e);
  char mpath[512];
  snprintf(mpath, sizeof mpath, "%s/MANIFEST", dir);
  /* A flipped byte in the manifest. */
  tm_error err;
  char *bytes;
  size_t len;
  TM_ASSERT_OK(tm_read_file(mpath, 1 << 20, &bytes, &len, &err), &err);
  bytes[len / 2] ^= 0x40;
  TM_ASSERT_OK(tm_write_file_atomic(mpath, bytes, len, &err), &err);
  int rc;
  e = open_cay(dir, false, -1, false, &rc);
  TM_ASSERT_RC(rc, TM_ECORRUPT);
  bytes[len / 2] ^= 0x40;
  /* A truncated one. */
  TM_ASSERT_OK(tm_write_file_atomic(mpath, bytes, len - 9, &err), &err);
  e = open_cay(dir, false, -1, false, &rc);
  TM_ASSERT_RC(rc, TM_ECORRUPT);
  TM_ASSERT_OK(tm_write_file_atomic(mpath, bytes, len, &err), &err);
  tm_free(bytes);
  /* A flipped byte in a segment's data: found by checksums when asked. */
  char spath[512];
  snprintf(spath, sizeof spath, "%s/seg-0000000000000000.tmc", dir);
  int fd = open(spath, O_RDWR);
  TM_ASSERT(fd >= 0);
  unsigned char c;
  TM_ASSERT(pread(fd, &c, 1, 200) == 1);
  c ^= 1;
  TM_ASSERT(pwrite(fd, &c, 1, 200) == 1);
  close(fd);
  e = open_cay(dir, false, -1, true, &rc);
  TM_ASSERT_RC(rc, TM_ECORRUPT);
  e = open_cay(dir, false, -1, false, NULL);
  tm_engine_release(e);
}

TM_TEST(cayenne_compaction_reclaims_and_keeps_answers) {
  tm_error err;
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, true, -1, false, NULL);
  for (int i = 0; i < 30; i++) put(e, i * 10, 10, 0, NULL);
  /* Newer versions of half the keys of every segment: holes everywhere. */
  tm_engine_commit_info info = put_ids(e, 0, 300, 7, NULL, true);
  TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_OLDER], 150);
  int64_t n;
  int64_t want = sum_ts(e, &n);
  TM_ASSERT_INT_EQ(n, 300);
  TM_ASSERT_INT_EQ(want, 1000 * (299 * 300 / 2) + 7 * 150);
  int files_before = count_files(dir, "seg-");
  TM_ASSERT_INT_EQ(files_before, 32);
  tm_engine_snapshot *old;
  TM_ASSERT_OK(tm_engine_snapshot_acquire(e, &old, &err), &err);
  tm_engine_compact_info ci;
  TM_ASSERT_OK(tm_engine_compact(e, true, &ci, &err), &err);
  TM_ASSERT_INT_EQ(ci.rows_reclaimed, 150);
  TM_ASSERT(ci.segments_after <= 4);
  TM_ASSERT(count_files(dir, "seg-") == ci.segments_after);
  TM_ASSERT_INT_EQ(sum_ts(e, &n), want);
  TM_ASSERT_INT_EQ(n, 300);
  /* A snapshot from before compaction still reads its (unlinked) files. */
  int64_t old_rows;
  TM_ASSERT_OK(tm_engine_snapshot_row_count(old, &old_rows, &err), &err);
  TM_ASSERT_INT_EQ(old_rows, 300);
  tm_engine_snapshot_release(old);
  /* After compaction the key index still finds every key (A8). */
  info = put(e, 100, 100, 3, NULL);
  TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_OLDER], 100);
  TM_ASSERT_INT_EQ(info.rows_after, 300);
  tm_engine_release(e);
  /* And across a reopen, from the files alone: 150 (+7) and 50 (+3) stored
   * rows are newer than +1; the other 100 (+0) are older. */
  e = open_cay(dir, true, -1, false, NULL);
  info = put(e, 0, 300, 1, NULL);
  TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_OLDER], 300);
  TM_ASSERT_INT_EQ(info.rows_written, 100);
  TM_ASSERT_INT_EQ(info.rows_after, 300);
  TM_ASSERT_INT_EQ(sum_ts(e, &n), want + 3 * 50 + 1 * 100);
  tm_engine_release(e);
}

TM_TEST(cayenne_auto_compaction_bounds_small_segments) {
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, 4, false, NULL);
  bool compacted = false;
  for (int i = 0; i < 40; i++) compacted |= put(e, i * 5, 5, 0, NULL).compacted;
  TM_ASSERT(compacted);
  TM_ASSERT(count_files(dir, "seg-") <= 6);
  int64_t n;
  sum_ts(e, &n);
  TM_ASSERT_INT_EQ(n, 200);
  tm_engine_release(e);
}

TM_TEST(cayenne_deletes_and_replace_survive_reopen) {
  tm_error err;
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, -1, false, NULL);
  put(e, 0, 300, 0, NULL);
  tm_engine_txn *t;
  int64_t n;
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_delete_where(t, "tag = 't1' OR id >= 290", &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 60 + 8);
  TM_ASSERT_OK(tm_engine_txn_delete_before(t, 100, 0, &n, &err), &err); /* ts < 100 s: ids < 100 */
  TM_ASSERT_INT_EQ(n, 80);
  TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
  tm_engine_release(e);
  e = open_cay(dir, false, -1, true, NULL);
  int64_t rows;
  sum_ts(e, &rows);
  TM_ASSERT_INT_EQ(rows, 300 - 68 - 80);
  tm_engine_bounds bd;
  TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
  TM_ASSERT_INT_EQ(bd.min.v.i, 100000);
  TM_ASSERT_INT_EQ(bd.max.v.i, 289000); /* 290..299 deleted: the zone map max is stale */
  tm_engine_bounds_dispose(&bd);
  /* A full refresh swaps the whole set; the old files go. */
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_REPLACE_ALL, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
  TM_ASSERT_INT_EQ(count_files(dir, "seg-"), 0);
  tm_engine_release(e);
  e = open_cay(dir, false, -1, false, NULL);
  TM_ASSERT_OK(tm_engine_row_count(e, &rows, &err), &err);
  TM_ASSERT_INT_EQ(rows, 0);
  tm_engine_release(e);
}

TM_TEST(cayenne_a2_bounds_from_zone_maps_in_constant_time) {
  tm_error err;
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, -1, false, NULL);
  for (int i = 0; i < 20; i++) put(e, i * 100, 100, 0, NULL);
  /* Make the data pages cold for the check below: bounds must not read them. */
  tm_engine_bounds bd;
  int64_t t0 = tm_monotonic_ns();
  for (int i = 0; i < 1000; i++) {
    TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
    tm_engine_bounds_dispose(&bd);
  }
  int64_t per = (tm_monotonic_ns() - t0) / 1000;
  TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
  TM_ASSERT_INT_EQ(bd.max.v.i, 1999000);
  TM_ASSERT_INT_EQ(bd.min.v.i, 0);
  tm_engine_bounds_dispose(&bd);
  tm_test__note("bounds over 20 segments: %lld ns", (long long)per);
  TM_ASSERT(per < 1000000);
  tm_engine_release(e);
}

TM_TEST(cayenne_corrupt_dictionary_fails_queries_cleanly) {
  tm_error err;
  const char *dir = tm_test_path("acc");
  tm_engine *e = open_cay(dir, false, -1, false, NULL);
  put(e, 0, 100, 0, NULL);
  tm_engine_release(e);
  /* Point every code of the tag dictionary past its end. */
  char spath[512];
  snprintf(spath, sizeof spath, "%s/seg-0000000000000000.tmc", dir);
  int fd = open(spath, O_RDWR);
  TM_ASSERT(fd >= 0);
  unsigned char dir_ref[16];
  unsigned char hdr[64];
  TM_ASSERT(pread(fd, hdr, 64, 0) == 64);
  uint64_t dir_off;
  memcpy(&dir_off, hdr + 24, 8);
  /* Column 2's values buffer reference: entry 2, buffer 1. */
  TM_ASSERT(pread(fd, dir_ref, 16, (off_t)(dir_off + 2 * 120 + 32 + 16)) == 16);
  uint64_t off, len;
  memcpy(&off, dir_ref, 8);
  memcpy(&len, dir_ref + 8, 8);
  TM_ASSERT(hdr[0] == 'T' && len == 100);
  unsigned char bad[100];
  memset(bad, 200, sizeof bad);
  TM_ASSERT(pwrite(fd, bad, sizeof bad, (off_t)off) == 100);
  close(fd);
  e = open_cay(dir, false, -1, false, NULL);
  tm_sql_catalog *cat;
  TM_ASSERT_OK(tm_sql_catalog_new(&cat, &err), &err);
  TM_ASSERT_OK(tm_sql_catalog_add(cat, e, &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, cat, &err), &err);
  tm_buf out = TM_BUF_INIT(1 << 20);
  int rc = tm_sql_query(s, "SELECT max(tag) FROM kv", TM_OUT_CSV, buf_sink, &out, NULL, &err);
  TM_ASSERT(rc < 0);
  TM_ASSERT_CONTAINS(err.message, "malformed");
  /* Columns that are intact still answer. */
  tm_sql_stmt *q;
  TM_ASSERT_OK(tm_sql_prepare(s, "SELECT count(*), max(id) FROM kv", &q, &err), &err);
  TM_ASSERT_OK(tm_sql_step(q, &err), &err);
  tm_sql_stmt_free(q);
  tm_buf_dispose(&out);
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
  tm_engine_release(e);
}
