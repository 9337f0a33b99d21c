/*
 * Unit tests for objstore/fault: the N-th operation fails, waits or comes
 * back short, and the layers above (the range reader, get_file) turn each
 * into a clean error (STYLE.md §7 fault injection; SPEC D2, D3).
 */
#include "objstore/fault/fault.h"
#include "objstore/mem/mem.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

static tm_objstore *new_fault(tm_objstore **inner_out) {
  tm_error err;
  tm_objstore *inner = NULL, *f = NULL;
  TM_ASSERT_OK(tm_objstore_mem_new(&inner, "in", &err), &err);
  TM_ASSERT_OK(tm_objstore_fault_new(&f, inner, true, &err), &err);
  if (inner_out) *inner_out = inner;
  return f;
}

static tm_fault_rule rule(tm_fault_op op, uint64_t nth, tm_fault_action action) {
  tm_fault_rule r = {TM_FAULT_RULE_VERSION, op, nth, 1, action, 0, 0, 0};
  return r;
}

TM_TEST(fault_fails_only_the_nth_get) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  TM_ASSERT_OK(tm_objstore_put(s, "k", "abcdef", 6, 0, &err), &err);
  tm_fault_rule r = rule(TM_FAULT_GET, 2, TM_FAULT_FAIL);
  r.code = TM_EUNAVAILABLE;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  char buf[8];
  size_t n;
  TM_ASSERT_OK(tm_objstore_read(s, "k", 0, buf, 6, &n, &err), &err);
  TM_ASSERT_RC(tm_objstore_read(s, "k", 0, buf, 6, &n, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "injected read failure");
  TM_ASSERT_OK(tm_objstore_read(s, "k", 0, buf, 6, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 6);
  TM_ASSERT_INT_EQ(tm_objstore_fault_seen(s, TM_FAULT_GET), 3);
  TM_ASSERT_INT_EQ(tm_objstore_fault_fired(s), 1);
  /* Other kinds of operation are not counted against a GET rule. */
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "k", &st, &err), &err);
  TM_ASSERT_INT_EQ(tm_objstore_fault_seen(s, TM_FAULT_STAT), 1);
  tm_objstore_free(s);
}

TM_TEST(fault_count_and_any_op) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  tm_fault_rule r = rule(TM_FAULT_ANY, 1, TM_FAULT_FAIL);
  r.count = 2;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  TM_ASSERT_RC(tm_objstore_put(s, "k", "a", 1, 0, &err), TM_EIO);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_RC(tm_objstore_list_all(s, "", 10, &l, &err), TM_EIO);
  TM_ASSERT_OK(tm_objstore_put(s, "k", "a", 1, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_list_all(s, "", 10, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 1);
  tm_obj_list_dispose(&l);
  tm_objstore_fault_clear(s);
  r.count = UINT64_MAX;
  r.op = TM_FAULT_DELETE;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  for (int i = 0; i < 3; i++) TM_ASSERT_RC(tm_objstore_delete(s, "k", &err), TM_EIO);
  tm_objstore_free(s);
}

TM_TEST(fault_truncated_get_is_caught_by_the_reader) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  char *data = tm_malloc(300000);
  memset(data, 'p', 300000);
  TM_ASSERT_OK(tm_objstore_put(s, "t.parquet", data, 300000, 0, &err), &err);
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_objstore_open_input(s, "t.parquet", 300000, &in, &err), &err);
  tm_fault_rule r = rule(TM_FAULT_GET, 1, TM_FAULT_TRUNCATE);
  r.keep_bytes = 1000;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  TM_ASSERT_RC(tm_input_read_exact(in, 0, data, 200000, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "t.parquet");
  /* The next read works: only the first get was cut. */
  TM_ASSERT_OK(tm_input_read_exact(in, 0, data, 200000, &err), &err);
  tm_input_close(in);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(fault_fail_after_partial_delivery_leaves_no_download) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  TM_ASSERT_OK(tm_objstore_put(s, "snap", "0123456789", 10, 0, &err), &err);
  tm_fault_rule r = rule(TM_FAULT_GET, 1, TM_FAULT_FAIL);
  r.keep_bytes = 4;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  const char *path = tm_test_path("restore.db");
  TM_ASSERT_RC(tm_objstore_get_file(s, "snap", path, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "after 4 bytes");
  TM_ASSERT(!tm_path_exists(path));
  TM_ASSERT_OK(tm_objstore_get_file(s, "snap", path, &err), &err);
  char *back = NULL;
  TM_ASSERT_OK(tm_read_file(path, 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "0123456789");
  tm_free(back);
  tm_objstore_free(s);
}

TM_TEST(fault_torn_put_stores_a_prefix) {
  tm_error err;
  tm_objstore *inner = NULL;
  tm_objstore *s = new_fault(&inner);
  tm_fault_rule r = rule(TM_FAULT_PUT, 1, TM_FAULT_TRUNCATE);
  r.keep_bytes = 3;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  TM_ASSERT_OK(tm_objstore_put(s, "m.json", "{\"a\":1}", 7, 0, &err), &err);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_objstore_read_all(inner, "m.json", 100, &data, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, 3);
  TM_ASSERT_STR_EQ(data, "{\"a");
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(fault_delay_waits_then_succeeds) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  TM_ASSERT_OK(tm_objstore_put(s, "k", "v", 1, 0, &err), &err);
  tm_fault_rule r = rule(TM_FAULT_STAT, 1, TM_FAULT_DELAY);
  r.delay_ms = 120;
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  int64_t t0 = tm_monotonic_ns();
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "k", &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT(tm_monotonic_ns() - t0 >= 110 * 1000000LL);
  tm_objstore_free(s);
}

TM_TEST(fault_rejects_bad_rules_and_other_stores) {
  tm_error err;
  tm_objstore *inner = NULL;
  tm_objstore *s = new_fault(&inner);
  tm_fault_rule r = rule(TM_FAULT_GET, 0, TM_FAULT_FAIL);
  TM_ASSERT_RC(tm_objstore_fault_add(s, &r, &err), TM_EINVALID);
  r.nth = 1;
  r.code = 5;
  TM_ASSERT_RC(tm_objstore_fault_add(s, &r, &err), TM_EINVALID);
  r.code = 0;
  TM_ASSERT_RC(tm_objstore_fault_add(inner, &r, &err), TM_EINVALID);
  for (int i = 0; i < TM_FAULT_MAX_RULES; i++) TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  TM_ASSERT_RC(tm_objstore_fault_add(s, &r, &err), TM_EINVALID);
  TM_ASSERT_INT_EQ(tm_objstore_fault_seen(inner, TM_FAULT_ANY), 0);
  tm_objstore_free(s);
}

TM_TEST(fault_last_hit_names_the_object) {
  tm_error err;
  tm_objstore *s = new_fault(NULL);
  char key[64];
  TM_ASSERT_INT_EQ(tm_objstore_fault_last_hit(s, key, sizeof key), TM_FAULT_ANY);
  TM_ASSERT_STR_EQ(key, "");
  TM_ASSERT_OK(tm_objstore_put(s, "dir/a", "abc", 3, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_put(s, "dir/b", "abc", 3, 0, &err), &err);
  tm_fault_rule r = rule(TM_FAULT_GET, 2, TM_FAULT_FAIL);
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  char buf[8];
  size_t n;
  TM_ASSERT_OK(tm_objstore_read(s, "dir/a", 0, buf, 3, &n, &err), &err);
  TM_ASSERT_RC(tm_objstore_read(s, "dir/b", 0, buf, 3, &n, &err), TM_EIO);
  TM_ASSERT_INT_EQ(tm_objstore_fault_last_hit(s, key, sizeof key), TM_FAULT_GET);
  TM_ASSERT_STR_EQ(key, "dir/b");
  /* A list names its prefix; a short buffer truncates. */
  tm_fault_rule l = rule(TM_FAULT_LIST, 1, TM_FAULT_FAIL);
  TM_ASSERT_OK(tm_objstore_fault_add(s, &l, &err), &err);
  tm_obj_list list;
  tm_obj_list_init(&list);
  TM_ASSERT_RC(tm_objstore_list_all(s, "dir/", 10, &list, &err), TM_EIO);
  TM_ASSERT_INT_EQ(tm_objstore_fault_last_hit(s, key, 3), TM_FAULT_LIST);
  TM_ASSERT_STR_EQ(key, "di");
  tm_obj_list_dispose(&list);
  tm_objstore_free(s);
}

/* The open hook wraps every store tm_objstore_open_url opens (fault tests of sources). */
static int wrap_in_fault(tm_objstore **store, const char *url, void *payload, tm_error *err) {
  int *calls = payload;
  (*calls)++;
  if (strstr(url, "refuse")) return tm_error_set(err, TM_EIO, "%s: refused by the hook", url);
  tm_objstore *f = NULL;
  TM_TRY(tm_objstore_fault_new(&f, *store, true, err));
  *store = f;
  return TM_OK;
}

TM_TEST(fault_open_hook_wraps_stores_opened_by_url) {
  tm_error err;
  int calls = 0;
  tm_objstore_set_open_hook(wrap_in_fault, &calls);
  tm_objstore *s = NULL;
  char *prefix = NULL;
  TM_ASSERT_OK(tm_objstore_open_url(&s, &prefix, "mem://b/p", NULL, &err), &err);
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), "fault");
  TM_ASSERT_STR_EQ(prefix, "p");
  tm_fault_rule r = rule(TM_FAULT_PUT, 1, TM_FAULT_FAIL);
  TM_ASSERT_OK(tm_objstore_fault_add(s, &r, &err), &err);
  TM_ASSERT_RC(tm_objstore_put(s, "p/k", "x", 1, 0, &err), TM_EIO);
  tm_objstore_free(s);
  tm_free(prefix);
  /* A hook error fails the open and frees what it opened (ASan would see a leak). */
  s = NULL;
  prefix = NULL;
  TM_ASSERT_RC(tm_objstore_open_url(&s, &prefix, "mem://refuse", NULL, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "refused by the hook");
  TM_ASSERT(s == NULL && prefix == NULL);
  TM_ASSERT_INT_EQ(calls, 2);
  tm_objstore_set_open_hook(NULL, NULL);
  TM_ASSERT_OK(tm_objstore_open_url(&s, &prefix, "mem://b", NULL, &err), &err);
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), "mem");
  TM_ASSERT_INT_EQ(calls, 2);
  tm_objstore_free(s);
  tm_free(prefix);
}
