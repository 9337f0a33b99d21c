/*
 * Unit tests for objstore/mem: the in-memory backend that other layers'
 * tests use (puts, stat, list order, mtimes for SPEC A7, create-only puts,
 * concurrent readers and writers).
 */
#include <pthread.h>

#include "objstore/mem/mem.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

static tm_objstore *new_store(void) {
  tm_error err;
  tm_objstore *s = NULL;
  TM_ASSERT_OK(tm_objstore_mem_new(&s, "unit", &err), &err);
  return s;
}

TM_TEST(mem_put_stat_get_delete) {
  tm_error err;
  tm_objstore *s = new_store();
  TM_ASSERT_STR_EQ(tm_objstore_name(s), "mem://unit");
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), "mem");
  int64_t before = tm_now_ms();
  TM_ASSERT_OK(tm_objstore_put(s, "a/b", "hello", 5, 0, &err), &err);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "a/b", &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(st.size, 5);
  TM_ASSERT(st.mtime_ms >= before && st.mtime_ms <= tm_now_ms());
  char buf[8];
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read(s, "a/b", 1, buf, 3, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 3);
  TM_ASSERT(memcmp(buf, "ell", 3) == 0);
  TM_ASSERT_OK(tm_objstore_delete(s, "a/b", &err), &err);
  TM_ASSERT_OK(tm_objstore_stat(s, "a/b", &st, &err), &err);
  TM_ASSERT(!st.exists);
  TM_ASSERT_RC(tm_objstore_read(s, "a/b", 0, buf, 3, &n, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "mem://unit/a/b");
  TM_ASSERT_OK(tm_objstore_delete(s, "a/b", &err), &err);
  tm_objstore_stats stats;
  tm_objstore_get_stats(s, &stats);
  TM_ASSERT_INT_EQ(stats.puts, 1);
  TM_ASSERT_INT_EQ(stats.bytes_out, 5);
  TM_ASSERT_INT_EQ(stats.bytes_in, 3);
  TM_ASSERT_INT_EQ(stats.deletes, 2);
  tm_objstore_free(s);
}

TM_TEST(mem_list_in_key_order_with_set_mtimes) {
  /* SPEC A7: a listing carries each object's last-modified time. */
  tm_error err;
  tm_objstore *s = new_store();
  const char *keys[] = {"t/c", "t/a", "u/x", "t/b/1"};
  for (int i = 0; i < 4; i++) TM_ASSERT_OK(tm_objstore_put(s, keys[i], "z", 1, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_mem_set_mtime(s, "t/a", 1000, &err), &err);
  TM_ASSERT_OK(tm_objstore_mem_set_mtime(s, "t/c", 3000, &err), &err);
  TM_ASSERT_RC(tm_objstore_mem_set_mtime(s, "t/none", 1, &err), TM_ENOTFOUND);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "t/", 10, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 3);
  TM_ASSERT_STR_EQ(l.items[0].key, "t/a");
  TM_ASSERT_STR_EQ(l.items[1].key, "t/b/1");
  TM_ASSERT_STR_EQ(l.items[2].key, "t/c");
  TM_ASSERT_INT_EQ(l.items[0].mtime_ms, 1000);
  TM_ASSERT_INT_EQ(l.items[2].mtime_ms, 3000);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(mem_if_absent_and_set_mtime_checks_the_store_kind) {
  tm_error err;
  tm_objstore *s = new_store();
  TM_ASSERT_OK(tm_objstore_put(s, "k", "1", 1, TM_OBJ_PUT_IF_ABSENT, &err), &err);
  TM_ASSERT_RC(tm_objstore_put(s, "k", "2", 1, TM_OBJ_PUT_IF_ABSENT, &err), TM_ECONFLICT);
  char *data = NULL;
  TM_ASSERT_OK(tm_objstore_read_all(s, "k", 10, &data, NULL, &err), &err);
  TM_ASSERT_STR_EQ(data, "1");
  tm_free(data);
  tm_objstore *other = NULL;
  TM_ASSERT_OK(tm_objstore_mem_new(&other, "o", &err), &err);
  tm_objstore_free(other);
  tm_objstore_free(s);
}

typedef struct race {
  tm_objstore *s;
  int errors;
} race;

static void *writer(void *p) {
  race *r = p;
  tm_error err;
  char buf[4096];
  for (int i = 0; i < 200; i++) {
    memset(buf, 'a' + i % 26, sizeof buf);
    if (tm_objstore_put(r->s, "hot", buf, sizeof buf, TM_OBJ_PUT_ATOMIC, &err) < 0) r->errors++;
  }
  return NULL;
}

static void *reader(void *p) {
  race *r = p;
  tm_error err;
  for (int i = 0; i < 200; i++) {
    char *data = NULL;
    size_t len = 0;
    if (tm_objstore_read_all(r->s, "hot", 8192, &data, &len, &err) < 0) {
      r->errors++;
      continue;
    }
    /* An atomic put is seen whole: every byte of one version is the same. */
    for (size_t j = 1; j < len; j++)
      if (data[j] != data[0]) r->errors++;
    tm_free(data);
  }
  return NULL;
}

TM_TEST(mem_concurrent_puts_are_atomic_for_readers) {
  tm_error err;
  tm_objstore *s = new_store();
  TM_ASSERT_OK(tm_objstore_put(s, "hot", "x", 1, 0, &err), &err);
  race r = {s, 0};
  pthread_t t[3];
  pthread_create(&t[0], NULL, writer, &r);
  pthread_create(&t[1], NULL, reader, &r);
  pthread_create(&t[2], NULL, reader, &r);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  TM_ASSERT_INT_EQ(r.errors, 0);
  tm_objstore_free(s);
}
