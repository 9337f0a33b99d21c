/*
 * Unit tests for objstore/file: the local folder backend (stat, recursive
 * listing with sizes and last-modified times as SPEC A7 needs them, ranged
 * reads, atomic and create-only puts, delete, key confinement).
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "objstore/file/file.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_objstore *new_store(const char *root) {
  tm_error err;
  tm_objstore *s = NULL;
  TM_ASSERT_OK(tm_objstore_file_new(&s, root, &err), &err);
  return s;
}

static void mkdirs(const char *rel) {
  tm_error err;
  TM_ASSERT_OK(tm_mkdir_p(tm_test_path(rel), &err), &err);
}

static void set_mtime(const char *path, int64_t ms) {
  struct timeval tv[2];
  tv[0].tv_sec = tv[1].tv_sec = (time_t)(ms / 1000);
  tv[0].tv_usec = tv[1].tv_usec = (suseconds_t)((ms % 1000) * 1000);
  TM_ASSERT(utimes(path, tv) == 0);
}

TM_TEST(file_stat_reports_size_mtime_and_absence) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  mkdirs("d");
  tm_test_write_file(tm_test_path("d/a.csv"), "hello");
  set_mtime(tm_test_path("d/a.csv"), INT64_C(1700000000123));
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "d/a.csv", &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(st.size, 5);
  TM_ASSERT_INT_EQ(st.mtime_ms, INT64_C(1700000000123));
  TM_ASSERT_OK(tm_objstore_stat(s, "d/missing", &st, &err), &err);
  TM_ASSERT(!st.exists);
  /* A folder is not an object; a path through a file is simply absent. */
  TM_ASSERT_OK(tm_objstore_stat(s, "d", &st, &err), &err);
  TM_ASSERT(!st.exists);
  TM_ASSERT_OK(tm_objstore_stat(s, "d/a.csv/x", &st, &err), &err);
  TM_ASSERT(!st.exists);
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), "file");
  tm_objstore_free(s);
}

TM_TEST(file_list_is_recursive_sorted_and_prefix_filtered) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  mkdirs("events/2024/01");
  mkdirs("events/2024/02");
  mkdirs("events_old");
  mkdirs("other");
  tm_test_write_file(tm_test_path("events/2024/02/b.parquet"), "bb");
  tm_test_write_file(tm_test_path("events/2024/01/a.parquet"), "a");
  tm_test_write_file(tm_test_path("events/top.parquet"), "ttt");
  tm_test_write_file(tm_test_path("events_old/x.parquet"), "x");
  tm_test_write_file(tm_test_path("other/y"), "y");
  tm_test_write_file(tm_test_path("events/.tm-tmp-z.1.1"), "in progress");
  set_mtime(tm_test_path("events/top.parquet"), INT64_C(1600000000000));
  TM_ASSERT(symlink("2024/01/a.parquet", tm_test_path("events/link.parquet")) == 0);
  TM_ASSERT(symlink("..", tm_test_path("events/loop")) == 0);

  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "events/", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 4);
  TM_ASSERT_STR_EQ(l.items[0].key, "events/2024/01/a.parquet");
  TM_ASSERT_STR_EQ(l.items[1].key, "events/2024/02/b.parquet");
  TM_ASSERT_STR_EQ(l.items[2].key, "events/link.parquet");
  TM_ASSERT_STR_EQ(l.items[3].key, "events/top.parquet");
  TM_ASSERT_INT_EQ(l.items[1].size, 2);
  TM_ASSERT_INT_EQ(l.items[3].mtime_ms, INT64_C(1600000000000));
  tm_obj_list_dispose(&l);

  /* A string prefix, not a folder: "events" also matches events_old. */
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "events", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 5);
  TM_ASSERT_STR_EQ(l.items[4].key, "events_old/x.parquet");
  tm_obj_list_dispose(&l);

  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "events/2024/0", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 2);
  tm_obj_list_dispose(&l);

  /* A missing folder lists nothing, like an empty S3 prefix. */
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "nothing/here/", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 0);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(file_get_ranges_and_input) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  tm_test_write_file(tm_test_path("f.bin"), "0123456789");
  char buf[16];
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read(s, "f.bin", 3, buf, 4, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 4);
  TM_ASSERT(memcmp(buf, "3456", 4) == 0);
  TM_ASSERT_OK(tm_objstore_read(s, "f.bin", 8, buf, 16, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 2);
  TM_ASSERT_RC(tm_objstore_read(s, "nope.bin", 0, buf, 4, &n, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "nope.bin");
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_objstore_open_input(s, "f.bin", TM_OBJ_SIZE_UNKNOWN, &in, &err), &err);
  TM_ASSERT_OK(tm_input_read_exact(in, 7, buf, 3, &err), &err);
  TM_ASSERT(memcmp(buf, "789", 3) == 0);
  tm_input_close(in);
  in = NULL;
  TM_ASSERT_RC(tm_objstore_open_input(s, "nope.bin", TM_OBJ_SIZE_UNKNOWN, &in, &err),
               TM_ENOTFOUND);
  tm_objstore_free(s);
}

TM_TEST(file_put_creates_folders_and_replaces) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  TM_ASSERT_OK(tm_objstore_put(s, "a/b/c.txt", "one", 3, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_put(s, "a/b/c.txt", "second", 6, TM_OBJ_PUT_ATOMIC, &err), &err);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(tm_test_path("a/b/c.txt"), 100, &data, &len, &err), &err);
  TM_ASSERT_STR_EQ(data, "second");
  tm_free(data);
  /* No temporary file is left beside it. */
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "a/", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 1);
  tm_obj_list_dispose(&l);
  int entries = 0;
  DIR *d = opendir(tm_test_path("a/b"));
  TM_ASSERT(d != NULL);
  for (struct dirent *e; (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
  closedir(d);
  TM_ASSERT_INT_EQ(entries, 1);
  tm_objstore_free(s);
}

TM_TEST(file_put_if_absent_conflicts) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  TM_ASSERT_OK(tm_objstore_put(s, "v1.json", "a", 1, TM_OBJ_PUT_IF_ABSENT, &err), &err);
  TM_ASSERT_RC(tm_objstore_put(s, "v1.json", "b", 1, TM_OBJ_PUT_IF_ABSENT, &err), TM_ECONFLICT);
  TM_ASSERT_CONTAINS(err.message, "already exists");
  TM_ASSERT_RC(tm_objstore_put(s, "v1.json", "c", 1, TM_OBJ_PUT_IF_ABSENT | TM_OBJ_PUT_ATOMIC,
                               &err),
               TM_ECONFLICT);
  TM_ASSERT_OK(tm_objstore_put(s, "v2.json", "d", 1, TM_OBJ_PUT_IF_ABSENT | TM_OBJ_PUT_ATOMIC,
                               &err),
               &err);
  char *data = NULL;
  TM_ASSERT_OK(tm_read_file(tm_test_path("v1.json"), 10, &data, NULL, &err), &err);
  TM_ASSERT_STR_EQ(data, "a");
  tm_free(data);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 2); /* no temporary file left by the refused put */
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(file_delete_is_idempotent) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  TM_ASSERT_OK(tm_objstore_put(s, "x", "1", 1, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_delete(s, "x", &err), &err);
  TM_ASSERT(!tm_path_exists(tm_test_path("x")));
  TM_ASSERT_OK(tm_objstore_delete(s, "x", &err), &err);
  mkdirs("dir");
  TM_ASSERT_RC(tm_objstore_delete(s, "dir", &err), TM_EINVALID);
  tm_objstore_free(s);
}

TM_TEST(file_keys_cannot_escape_the_root) {
  tm_error err;
  mkdirs("root");
  tm_test_write_file(tm_test_path("secret"), "s");
  tm_objstore *s = new_store(tm_test_path("root"));
  tm_obj_stat st;
  TM_ASSERT_RC(tm_objstore_stat(s, "../secret", &st, &err), TM_EINVALID);
  char buf[4];
  size_t n;
  TM_ASSERT_RC(tm_objstore_read(s, "a/../../secret", 0, buf, 1, &n, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_objstore_put(s, "../x", "1", 1, 0, &err), TM_EINVALID);
  TM_ASSERT(!tm_path_exists(tm_test_path("x")));
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_RC(tm_objstore_list_all(s, "../", 10, &l, &err), TM_EINVALID);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(file_put_file_streams_a_large_file) {
  tm_error err;
  tm_objstore *s = new_store(tm_test_tmpdir());
  size_t n = 5 * 1024 * 1024 + 3;
  char *big = tm_malloc(n);
  for (size_t i = 0; i < n; i++) big[i] = (char)(i % 251);
  TM_ASSERT_OK(tm_write_file_atomic(tm_test_path("src.bin"), big, n, &err), &err);
  TM_ASSERT_OK(tm_objstore_put_file(s, "snap/dst.bin", tm_test_path("src.bin"),
                                    TM_OBJ_PUT_ATOMIC, &err),
               &err);
  char *back = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, "snap/dst.bin", n, &back, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, n);
  TM_ASSERT(memcmp(back, big, n) == 0);
  tm_objstore_stats st;
  tm_objstore_get_stats(s, &st);
  TM_ASSERT_INT_EQ(st.bytes_out, n);
  TM_ASSERT_INT_EQ(st.bytes_in, n);
  tm_free(back);
  tm_free(big);
  tm_objstore_free(s);
}
