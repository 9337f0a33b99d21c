/*
 * Unit tests for objstore/objstore.c and objstore/reader.c: key rules, the
 * helpers built on the vtable, and the cached range reader (tail fetch,
 * will_need coalescing, read-ahead, cache limits), run over the mem backend
 * whose counters show every request the reader makes.
 */
#include <stdlib.h>

#include "objstore/mem/mem.h"
#include "objstore/objstore.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_objstore *new_mem(void) {
  tm_error err;
  tm_objstore *s = NULL;
  TM_ASSERT_OK(tm_objstore_mem_new(&s, "t", &err), &err);
  return s;
}

/* An object of n bytes whose byte i is (i * 7 + i / 251) & 0xff. */
static char *pattern(size_t n) {
  char *p = tm_malloc(n ? n : 1);
  TM_ASSERT(p != NULL);
  for (size_t i = 0; i < n; i++) p[i] = (char)((i * 7 + i / 251) & 0xff);
  return p;
}

static void put_pattern(tm_objstore *s, const char *key, size_t n) {
  tm_error err;
  char *p = pattern(n);
  TM_ASSERT_OK(tm_objstore_put(s, key, p, n, 0, &err), &err);
  tm_free(p);
}

static void check_bytes(const char *buf, uint64_t off, size_t len) {
  for (size_t i = 0; i < len; i++) {
    uint64_t j = off + i;
    char want = (char)((j * 7 + j / 251) & 0xff);
    TM_ASSERT_MSG(buf[i] == want, "byte %llu differs", (unsigned long long)j);
  }
}

static uint64_t requests(tm_objstore *s) {
  tm_objstore_stats st;
  tm_objstore_get_stats(s, &st);
  return st.requests;
}

TM_TEST(objstore_key_rules) {
  tm_error err;
  TM_ASSERT_OK(tm_objstore_check_key("a/b.parquet", false, &err), &err);
  TM_ASSERT_OK(tm_objstore_check_key("", true, &err), &err);
  TM_ASSERT_OK(tm_objstore_check_key("data/", true, &err), &err);
  TM_ASSERT_RC(tm_objstore_check_key("", false, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_check_key("/abs", false, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_check_key("a//b", false, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_check_key("a/../b", false, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "'..' segment");
  TM_ASSERT_RC(tm_objstore_check_key("./b", false, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_check_key("data/", false, &err), TM_EINVALID);
  char big[1100];
  memset(big, 'k', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  TM_ASSERT_RC(tm_objstore_check_key(big, false, &err), TM_EINVALID);

  char *j = tm_objstore_join("data", "x.parquet");
  TM_ASSERT_STR_EQ(j, "data/x.parquet");
  tm_free(j);
  j = tm_objstore_join("data/", "/x");
  TM_ASSERT_STR_EQ(j, "data/x");
  tm_free(j);
  j = tm_objstore_join("", "x");
  TM_ASSERT_STR_EQ(j, "x");
  tm_free(j);
}

TM_TEST(objstore_wrappers_reject_bad_keys_before_the_backend) {
  tm_error err;
  tm_objstore *s = new_mem();
  tm_obj_stat st;
  TM_ASSERT_RC(tm_objstore_stat(s, "", &st, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_put(s, "/x", "a", 1, 0, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_put(s, "x/", "a", 1, 0, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_put(s, "x", "a", 1, 0x80, &err), TM_EINVALID);
  TM_ASSERT_INT_EQ(requests(s), 0);
  tm_objstore_free(s);
}

TM_TEST(objstore_read_all_respects_the_limit) {
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "meta.json", 1000);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, "meta.json", 1000, &data, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, 1000);
  TM_ASSERT(data[1000] == '\0');
  check_bytes(data, 0, len);
  tm_free(data);
  data = NULL;
  tm_objstore_stats before, after;
  tm_objstore_get_stats(s, &before);
  TM_ASSERT_RC(tm_objstore_read_all(s, "meta.json", 999, &data, &len, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "meta.json");
  TM_ASSERT(data == NULL);
  /* Nothing past limit + 1 bytes is asked for. */
  tm_objstore_get_stats(s, &after);
  TM_ASSERT(after.bytes_in - before.bytes_in <= 1000);
  TM_ASSERT_RC(tm_objstore_read_all(s, "missing.json", 10, &data, &len, &err), TM_ENOTFOUND);
  /* An empty object is an empty string. */
  TM_ASSERT_OK(tm_objstore_put(s, "empty", NULL, 0, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_read_all(s, "empty", 10, &data, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, 0);
  TM_ASSERT_STR_EQ(data, "");
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(objstore_read_range_and_end) {
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "a", 100);
  char buf[64];
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read(s, "a", 90, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 10);
  check_bytes(buf, 90, n);
  TM_ASSERT_OK(tm_objstore_read(s, "a", 100, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  TM_ASSERT_OK(tm_objstore_read(s, "a", 5000, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  tm_objstore_free(s);
}

TM_TEST(objstore_get_file_and_put_file_round_trip) {
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "snap/db", 3 * 1024 * 1024 + 17);
  const char *path = tm_test_path("restored.db");
  TM_ASSERT_OK(tm_objstore_get_file(s, "snap/db", path, &err), &err);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 16 << 20, &data, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, 3 * 1024 * 1024 + 17);
  check_bytes(data, 0, len);
  tm_free(data);
  TM_ASSERT_OK(tm_objstore_put_file(s, "snap/db2", path, TM_OBJ_PUT_ATOMIC, &err), &err);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "snap/db2", &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(st.size, 3 * 1024 * 1024 + 17);
  /* A failed download leaves no file behind. */
  const char *missing = tm_test_path("missing.db");
  TM_ASSERT_RC(tm_objstore_get_file(s, "nope", missing, &err), TM_ENOTFOUND);
  TM_ASSERT(!tm_path_exists(missing));
  tm_objstore_free(s);
}

static int count_cb(const tm_obj_info *info, void *payload) {
  TM_UNUSED(info);
  return ++*(int *)payload == 3 ? TM_ITEROVER : TM_OK;
}

TM_TEST(objstore_list_all_limit_and_early_stop) {
  tm_error err;
  tm_objstore *s = new_mem();
  for (int i = 0; i < 10; i++) {
    char key[32];
    snprintf(key, sizeof key, "p/%02d", 9 - i);
    put_pattern(s, key, (size_t)i);
  }
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "p/", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 10);
  TM_ASSERT_STR_EQ(l.items[0].key, "p/00");
  TM_ASSERT_STR_EQ(l.items[9].key, "p/09");
  TM_ASSERT_INT_EQ(l.items[0].size, 9);
  tm_obj_list_dispose(&l);
  tm_obj_list_init(&l);
  TM_ASSERT_RC(tm_objstore_list_all(s, "p/", 4, &l, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "more than 4");
  tm_obj_list_dispose(&l);
  int seen = 0;
  TM_ASSERT_OK(tm_objstore_list(s, "", count_cb, &seen, &err), &err);
  TM_ASSERT_INT_EQ(seen, 3);
  tm_objstore_free(s);
}

/* ---- the range reader ---- */

static tm_input *open_reader(tm_objstore *s, const char *key) {
  tm_error err;
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_objstore_open_input(s, key, TM_OBJ_SIZE_UNKNOWN, &in, &err), &err);
  return in;
}

static tm_objstore_input_stats in_stats(tm_input *in) {
  tm_error err;
  tm_objstore_input_stats st;
  TM_ASSERT_OK(tm_objstore_input_get_stats(in, &st, &err), &err);
  return st;
}

TM_TEST(reader_footer_costs_one_request) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 5 * 1024 * 1024;
  put_pattern(s, "t.parquet", size);
  tm_input *in = open_reader(s, "t.parquet");
  uint64_t got_size = 0;
  TM_ASSERT_OK(tm_input_size(in, &got_size, &err), &err);
  TM_ASSERT_INT_EQ(got_size, size);
  /* Parquet: the last 8 bytes, then a footer of 20 KiB before them. */
  char tail[8];
  TM_ASSERT_OK(tm_input_read_exact(in, size - 8, tail, 8, &err), &err);
  check_bytes(tail, size - 8, 8);
  char *footer = tm_malloc(20 * 1024);
  TM_ASSERT_OK(tm_input_read_exact(in, size - 8 - 20 * 1024, footer, 20 * 1024, &err), &err);
  check_bytes(footer, size - 8 - 20 * 1024, 20 * 1024);
  tm_free(footer);
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 1);
  TM_ASSERT_INT_EQ(st.fetched, 64 * 1024);
  TM_ASSERT_INT_EQ(st.hits, 1);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_will_need_coalesces_near_ranges_only) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 20 * 1024 * 1024;
  put_pattern(s, "t.parquet", size);
  tm_input *in = open_reader(s, "t.parquet");
  /* Two column chunks 10 KiB apart (merged), a third 2 MiB later (alone). */
  tm_io_range ranges[] = {{1000000, 300000}, {1310000, 200000}, {4000000, 500000}};
  TM_ASSERT_OK(tm_input_will_need(in, ranges, 3, &err), &err);
  char *buf = tm_malloc(500000);
  for (int i = 0; i < 3; i++) {
    TM_ASSERT_OK(tm_input_read_exact(in, ranges[i].off, buf, ranges[i].len, &err), &err);
    check_bytes(buf, ranges[i].off, ranges[i].len);
  }
  tm_free(buf);
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 2);
  /* Only the chunks and the 10 KiB hole between the first two. */
  TM_ASSERT_INT_EQ(st.fetched, 300000 + 10000 + 200000 + 500000);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_plan_splits_at_max_request) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 4 * 1024 * 1024;
  put_pattern(s, "big", size);
  s->read_opts.max_request = 1024 * 1024;
  tm_input *in = open_reader(s, "big");
  tm_io_range r = {0, size};
  TM_ASSERT_OK(tm_input_will_need(in, &r, 1, &err), &err);
  char *buf = tm_malloc(4096);
  for (uint64_t off = 0; off < size; off += 4096) {
    TM_ASSERT_OK(tm_input_read_exact(in, off, buf, 4096, &err), &err);
    check_bytes(buf, off, 4096);
  }
  tm_free(buf);
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 4);
  TM_ASSERT_INT_EQ(st.fetched, size);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_sequential_reads_grow_read_ahead) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 16 * 1024 * 1024;
  put_pattern(s, "seq", size);
  s->read_opts.tail_bytes = 0;
  tm_input *in = open_reader(s, "seq");
  char *buf = tm_malloc(256 * 1024);
  for (uint64_t off = 0; off < size; off += 256 * 1024) {
    TM_ASSERT_OK(tm_input_read_exact(in, off, buf, 256 * 1024, &err), &err);
    check_bytes(buf, off, 256 * 1024);
  }
  tm_free(buf);
  tm_objstore_input_stats st = in_stats(in);
  /* 64 reads; read-ahead doubling to 8 MiB needs far fewer requests, no extra bytes. */
  TM_ASSERT_MSG(st.requests <= 12, "%llu requests", (unsigned long long)st.requests);
  TM_ASSERT_INT_EQ(st.fetched, size);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_two_adjacent_chunks_do_not_trigger_read_ahead) {
  /* A projection of two neighbouring column chunks must not pull in the third. */
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 8 * 1024 * 1024;
  put_pattern(s, "p", size);
  tm_input *in = open_reader(s, "p");
  char *buf = tm_malloc(300000);
  uint64_t offs[] = {1000000, 1300000, 5000000, 5300000};
  for (int i = 0; i < 4; i++) {
    TM_ASSERT_OK(tm_input_read_exact(in, offs[i], buf, 300000, &err), &err);
    check_bytes(buf, offs[i], 300000);
  }
  tm_free(buf);
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 4);
  TM_ASSERT_INT_EQ(st.fetched, 4 * 300000);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_random_large_reads_are_exact) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 8 * 1024 * 1024;
  put_pattern(s, "r", size);
  tm_input *in = open_reader(s, "r");
  char *buf = tm_malloc(300000);
  uint64_t offs[] = {4000000, 100000, 2500000};
  for (int i = 0; i < 3; i++) {
    TM_ASSERT_OK(tm_input_read_exact(in, offs[i], buf, 300000, &err), &err);
    check_bytes(buf, offs[i], 300000);
  }
  /* A small random read fetches min_fetch; the next small read nearby hits. */
  TM_ASSERT_OK(tm_input_read_exact(in, 6000000, buf, 100, &err), &err);
  TM_ASSERT_OK(tm_input_read_exact(in, 6000500, buf, 100, &err), &err);
  check_bytes(buf, 6000500, 100);
  tm_free(buf);
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 4);
  TM_ASSERT_INT_EQ(st.fetched, 3 * 300000 + 64 * 1024);
  TM_ASSERT_INT_EQ(st.hits, 1);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_cache_stays_within_its_limit) {
  tm_error err;
  tm_objstore *s = new_mem();
  size_t size = 4 * 1024 * 1024;
  put_pattern(s, "c", size);
  s->read_opts.cache_bytes = 128 * 1024;
  s->read_opts.tail_bytes = 0;
  tm_input *in = open_reader(s, "c");
  char buf[100];
  /* Small reads at 64 KiB windows far apart: each fetches 64 KiB; only two fit. */
  uint64_t offs[] = {0, 1000000, 2000000, 0};
  for (int i = 0; i < 4; i++) {
    TM_ASSERT_OK(tm_input_read_exact(in, offs[i], buf, sizeof buf, &err), &err);
    check_bytes(buf, offs[i], sizeof buf);
  }
  tm_objstore_input_stats st = in_stats(in);
  TM_ASSERT_INT_EQ(st.requests, 4); /* offset 0 was evicted, fetched again */
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_reads_past_end_and_known_size) {
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "small", 100);
  tm_input *in = NULL;
  /* A known size skips the stat request. */
  uint64_t before = requests(s);
  TM_ASSERT_OK(tm_objstore_open_input(s, "small", 100, &in, &err), &err);
  TM_ASSERT_INT_EQ(requests(s), before);
  char buf[200];
  size_t n = 0;
  TM_ASSERT_OK(tm_input_read_at(in, 50, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 50);
  check_bytes(buf, 50, n);
  TM_ASSERT_OK(tm_input_read_at(in, 100, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  TM_ASSERT_RC(tm_input_read_exact(in, 90, buf, 20, &err), TM_ECORRUPT);
  tm_input_close(in);
  in = NULL;
  TM_ASSERT_RC(tm_objstore_open_input(s, "absent", TM_OBJ_SIZE_UNKNOWN, &in, &err),
               TM_ENOTFOUND);
  TM_ASSERT(in == NULL);
  tm_objstore_free(s);
}

TM_TEST(reader_detects_an_object_that_shrank) {
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "obj", 200000);
  tm_input *in = open_reader(s, "obj");
  put_pattern(s, "obj", 1000); /* replaced while open */
  char *buf = tm_malloc(100000);
  TM_ASSERT_RC(tm_input_read_exact(in, 50000, buf, 100000, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "before its size of 200000");
  tm_free(buf);
  tm_input_close(in);
  tm_objstore_free(s);
}

TM_TEST(reader_will_need_is_a_no_op_on_plain_inputs) {
  tm_error err;
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_input_open_memory(&in, "m", "abc", 3, false, &err), &err);
  tm_io_range r = {0, 3};
  TM_ASSERT_OK(tm_input_will_need(in, &r, 1, &err), &err);
  tm_objstore_input_stats st;
  TM_ASSERT_RC(tm_objstore_input_get_stats(in, &st, &err), TM_EINVALID);
  tm_input_close(in);
}

TM_TEST(reader_survives_allocation_failures) {
  /* Every allocation of open + will_need + reads fails in turn: errors, no leaks. */
  tm_error err;
  tm_objstore *s = new_mem();
  put_pattern(s, "x", 300000);
  for (int64_t n = 1; n < 200; n++) {
    tm_alloc_fail_at(n, false);
    tm_input *in = NULL;
    int rc = tm_objstore_open_input(s, "x", 300000, &in, &err);
    if (rc == TM_OK) {
      tm_io_range r[2] = {{0, 1000}, {200000, 1000}};
      char buf[1000];
      rc = tm_input_will_need(in, r, 2, &err);
      if (rc == TM_OK) rc = tm_input_read_exact(in, 0, buf, sizeof buf, &err);
      if (rc == TM_OK) rc = tm_input_read_exact(in, 299000, buf, sizeof buf, &err);
      if (rc == TM_OK) check_bytes(buf, 299000, sizeof buf);
      tm_input_close(in);
    }
    bool failed = tm_alloc_failed();
    tm_alloc_fail_at(0, false);
    if (rc < 0) TM_ASSERT_INT_EQ(rc, TM_ENOMEM);
    if (!failed) break;
  }
  tm_objstore_free(s);
}
