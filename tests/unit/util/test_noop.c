/*
 * Unit tests for the no-op stamp (util/noop.c; SPEC 1.2, docs/REFRESH.md
 * "What a no-op refresh costs"): a tree's hash changes with every change a
 * refresh could see and with nothing else; the key changes with the
 * command line and the environment; a stamp replays only while every tree
 * and the key hold; a damaged stamp (any truncation, any flipped bit) is
 * never replayed.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tm_test.h"
#include "util/alloc.h"
#include "util/noop.h"

static uint64_t tree(const char *path) {
  uint64_t h = 0;
  TM_ASSERT_MSG(tm_noop_tree(path, &h), "tree of %s", path);
  return h;
}

static void path_in(char *out, size_t cap, const char *dir, const char *name) {
  snprintf(out, cap, "%s/%s", dir, name);
}

TM_TEST(noop_tree_sees_every_change_a_refresh_could) {
  char src[1024], sub[1100], a[1100], b[1100], c[1100], link[1100];
  path_in(src, sizeof src, tm_test_tmpdir(), "src");
  path_in(sub, sizeof sub, src, "year=2026");
  path_in(a, sizeof a, src, "a.parquet");
  path_in(b, sizeof b, sub, "b.parquet");
  path_in(c, sizeof c, src, "c.parquet");
  path_in(link, sizeof link, src, "l.parquet");
  TM_ASSERT(mkdir(src, 0755) == 0 && mkdir(sub, 0755) == 0);
  tm_test_write_file(a, "aaaa");
  tm_test_write_file(b, "bbbb");
  uint64_t h0 = tree(src);
  TM_ASSERT(tree(src) == h0); /* reading changes nothing */
  /* A new file, a file rewritten with the same size, a touch, a rename, a removal. */
  tm_test_write_file(c, "cccc");
  uint64_t h1 = tree(src);
  TM_ASSERT(h1 != h0);
  tm_test_write_file(b, "BBBB"); /* in a sub-folder, same size */
  uint64_t h2 = tree(src);
  TM_ASSERT(h2 != h1);
  struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
  TM_ASSERT(utimensat(AT_FDCWD, a, old, 0) == 0);
  uint64_t h3 = tree(src);
  TM_ASSERT(h3 != h2);
  char moved[1100];
  path_in(moved, sizeof moved, src, "d.parquet");
  TM_ASSERT(rename(c, moved) == 0);
  uint64_t h4 = tree(src);
  TM_ASSERT(h4 != h3);
  TM_ASSERT(unlink(moved) == 0);
  TM_ASSERT(tree(src) != h4);
  /* A symbolic link is followed: pointing it elsewhere is a change. */
  TM_ASSERT(symlink(a, link) == 0);
  uint64_t h5 = tree(src);
  TM_ASSERT(unlink(link) == 0 && symlink(b, link) == 0);
  TM_ASSERT(tree(src) != h5);
  /* A missing path hashes, differently from an empty folder. */
  char none[1100], empty[1100];
  path_in(none, sizeof none, tm_test_tmpdir(), "none");
  path_in(empty, sizeof empty, tm_test_tmpdir(), "empty");
  TM_ASSERT(mkdir(empty, 0755) == 0);
  TM_ASSERT(tree(none) != tree(empty));
  /* A single file is a tree too. */
  uint64_t fa = tree(a);
  tm_test_write_file(a, "aaaaa");
  TM_ASSERT(tree(a) != fa);
}

TM_TEST(noop_tree_leaves_out_the_stamp_in_its_own_folder) {
  char dir[1024], data[1100], f[1100], stamp[1100], other[1100], other_stamp[1200];
  path_in(dir, sizeof dir, tm_test_tmpdir(), ".tidemark");
  path_in(data, sizeof data, dir, "data");
  path_in(f, sizeof f, data, "events.duckdb");
  path_in(stamp, sizeof stamp, dir, TM_NOOP_STAMP_NAME);
  TM_ASSERT(mkdir(dir, 0755) == 0 && mkdir(data, 0755) == 0);
  tm_test_write_file(f, "db");
  uint64_t h = tree(dir);
  tm_test_write_file(stamp, "stamp");
  char tmp[1200];
  snprintf(tmp, sizeof tmp, "%s/%s", dir, TM_NOOP_STAMP_TMP);
  tm_test_write_file(tmp, "tmp");
  TM_ASSERT(tree(dir) == h);
  /* Elsewhere a file of that name is data like any other. */
  path_in(other, sizeof other, tm_test_tmpdir(), "src");
  TM_ASSERT(mkdir(other, 0755) == 0);
  uint64_t s = tree(other);
  snprintf(other_stamp, sizeof other_stamp, "%s/%s", other, TM_NOOP_STAMP_NAME);
  tm_test_write_file(other_stamp, "x");
  TM_ASSERT(tree(other) != s);
  /* The acceleration changing is seen. */
  tm_test_write_file(f, "db2");
  TM_ASSERT(tree(dir) != h);
}

TM_TEST(noop_tree_refuses_a_tree_too_deep) {
  char p[4096];
  snprintf(p, sizeof p, "%s/deep", tm_test_tmpdir());
  TM_ASSERT(mkdir(p, 0755) == 0);
  char root[1100];
  snprintf(root, sizeof root, "%s", p);
  for (int i = 0; i < 20; i++) {
    strcat(p, "/d");
    TM_ASSERT(mkdir(p, 0755) == 0);
  }
  uint64_t h;
  TM_ASSERT(!tm_noop_tree(root, &h));
}

TM_TEST(noop_key_pins_arguments_folder_and_environment) {
  char *argv1[] = {"tidemark", "refresh", "-c", "a.yaml", NULL};
  char *argv2[] = {"tidemark", "refresh", "-c", "b.yaml", NULL};
  const char *core = tm_test_bin();
  uint64_t k1, k1b, k2, k3, k4;
  TM_ASSERT(tm_noop_key(4, argv1, core, &k1));
  TM_ASSERT(tm_noop_key(4, argv1, core, &k1b));
  TM_ASSERT(k1 == k1b);
  TM_ASSERT(tm_noop_key(4, argv2, core, &k2));
  TM_ASSERT(k2 != k1);
  TM_ASSERT(setenv("TM_NOOP_TEST", "1", 1) == 0);
  TM_ASSERT(tm_noop_key(4, argv1, core, &k3));
  TM_ASSERT(unsetenv("TM_NOOP_TEST") == 0);
  TM_ASSERT(k3 != k1);
  /* The shell's bookkeeping variables differ between two runs from one script: left out. */
  const char *shlvl = getenv("SHLVL");
  char saved[64];
  snprintf(saved, sizeof saved, "%s", shlvl ? shlvl : "");
  TM_ASSERT(setenv("SHLVL", "7", 1) == 0 && setenv("_", "/bin/x", 1) == 0 &&
            setenv("OLDPWD", "/elsewhere", 1) == 0);
  TM_ASSERT(tm_noop_key(4, argv1, core, &k3));
  if (shlvl) TM_ASSERT(setenv("SHLVL", saved, 1) == 0);
  else TM_ASSERT(unsetenv("SHLVL") == 0);
  TM_ASSERT(k3 == k1);
  TM_ASSERT(tm_noop_volatile_env("SHLVL=2") && tm_noop_volatile_env("_=/usr/bin/env") &&
            !tm_noop_volatile_env("SHLVLX=1") && !tm_noop_volatile_env("PWD=/"));
  char here[4096];
  TM_ASSERT(getcwd(here, sizeof here));
  TM_ASSERT(chdir(tm_test_tmpdir()) == 0);
  TM_ASSERT(tm_noop_key(4, argv1, core, &k4));
  TM_ASSERT(chdir(here) == 0);
  TM_ASSERT(k4 != k1);
  /* No program to identify: no key. */
  TM_ASSERT(!tm_noop_key(4, argv1, "/nonexistent/tidemark-core", &k4));
}

/* Replays stamp with key; returns what it printed (owned) or NULL when it refused. */
static char *replay(const char *stamp, uint64_t key) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  TM_ASSERT(out);
  bool ok = tm_noop_replay(stamp, key, tm_noop_now_ns(), out);
  fclose(out);
  if (!ok) {
    TM_ASSERT_INT_EQ(len, 0); /* a refused stamp prints nothing */
    free(text);               /* lint-ok: open_memstream's buffer */
    return NULL;
  }
  return text;
}

TM_TEST(noop_stamp_replays_while_everything_holds) {
  char src[1024], f[1100], stamp[1100];
  path_in(src, sizeof src, tm_test_tmpdir(), "src");
  path_in(f, sizeof f, src, "a.csv");
  path_in(stamp, sizeof stamp, tm_test_tmpdir(), "stamp");
  TM_ASSERT(mkdir(src, 0755) == 0);
  tm_test_write_file(f, "id\n1\n");
  const char *paths[] = {src};
  uint64_t trees[] = {tree(src)};
  const char *lines[] = {"events: +0 rows via time", "other: +0 rows via snapshots (no new snapshot)"};
  TM_ASSERT(tm_noop_write(stamp, 42, paths, trees, 1, lines, 2));
  char *out = replay(stamp, 42);
  TM_ASSERT(out);
  TM_ASSERT_CONTAINS(out, "events: +0 rows via time in 0.0");
  TM_ASSERT_CONTAINS(out, "\nother: +0 rows via snapshots (no new snapshot) in 0.0");
  free(out); /* lint-ok: open_memstream's buffer */
  TM_ASSERT(replay(stamp, 43) == NULL); /* another invocation */
  tm_test_write_file(f, "id\n1\n2\n");
  TM_ASSERT(replay(stamp, 42) == NULL); /* the source changed */
  /* A path with a newline cannot be written into a stamp. */
  const char *bad[] = {"/tmp/a\nb"};
  TM_ASSERT(!tm_noop_write(stamp, 42, bad, trees, 1, lines, 1));
}

TM_TEST(noop_stamp_damaged_anywhere_is_refused) {
  char stamp[1100], damaged[1100], src[1100];
  path_in(stamp, sizeof stamp, tm_test_tmpdir(), "stamp");
  path_in(damaged, sizeof damaged, tm_test_tmpdir(), "damaged");
  path_in(src, sizeof src, tm_test_tmpdir(), "src");
  TM_ASSERT(mkdir(src, 0755) == 0);
  const char *paths[] = {src};
  uint64_t trees[] = {tree(src)};
  const char *lines[] = {"events: +0 rows via time"};
  TM_ASSERT(tm_noop_write(stamp, 7, paths, trees, 1, lines, 1));
  FILE *f = fopen(stamp, "rb");
  TM_ASSERT(f);
  char text[4096];
  size_t len = fread(text, 1, sizeof text, f);
  fclose(f);
  TM_ASSERT(len > 0 && len < sizeof text);
  tm_noop_info info;
  TM_ASSERT(tm_noop_parse(text, len, &info));
  TM_ASSERT_INT_EQ(info.key, 7);
  TM_ASSERT_INT_EQ(info.n_trees, 1);
  TM_ASSERT_INT_EQ(info.n_lines, 1);
  /* Every truncation, and every single flipped bit, is refused. */
  for (size_t n = 0; n < len; n++) TM_ASSERT_MSG(!tm_noop_parse(text, n, &info), "truncated to %zu", n);
  for (size_t i = 0; i < len; i++) {
    for (int bit = 0; bit < 8; bit++) {
      text[i] ^= (char)(1 << bit);
      TM_ASSERT_MSG(!tm_noop_parse(text, len, &info), "byte %zu bit %d flipped", i, bit);
      text[i] ^= (char)(1 << bit);
    }
  }
  /* The file itself: intact it replays; one flipped byte, and it does not. */
  char *out = replay(stamp, 7);
  TM_ASSERT(out);
  free(out); /* lint-ok: open_memstream's buffer */
  text[len / 2] ^= 0x20;
  f = fopen(damaged, "wb");
  TM_ASSERT(f && fwrite(text, 1, len, f) == len);
  fclose(f);
  TM_ASSERT(replay(damaged, 7) == NULL);
}
