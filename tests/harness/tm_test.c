/*
 * tm_test.c - the unit-test runner. See tm_test.h.
 */
#include "tm_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/db.h"
#include "io/io.h"
#include "util/alloc.h"

#define MAX_TESTS 1024

static struct {
  const char *name;
  tm_test_fn fn;
  const char *file;
} g_tests[MAX_TESTS];
static int g_n_tests;
static jmp_buf g_jmp;
static char g_tmpdir[512];
static char g_root_tmp[512];
static tm_db *g_db;

#define TM_TEST_SKIP_EXIT 77 /* ctest's SKIP_RETURN_CODE */

void tm_test__register(const char *name, tm_test_fn fn, const char *file) {
  if (g_n_tests >= MAX_TESTS) {
    fprintf(stderr, "too many tests\n");
    exit(2); /* lint-ok: test harness */
  }
  g_tests[g_n_tests].name = name;
  g_tests[g_n_tests].fn = fn;
  g_tests[g_n_tests].file = file;
  g_n_tests++;
}

/* Prints "    <what> file:line: message" and leaves the case (setjmp returns how). */
static void leave(int how, const char *what, const char *file, int line, const char *msg)
    __attribute__((noreturn));
static void leave(int how, const char *what, const char *file, int line, const char *msg) {
  fprintf(stderr, "    %s %s:%d: %s\n", what, file, line, msg);
  longjmp(g_jmp, how);
}

#define FORMAT(buf, fmt)                  \
  char buf[16384];                        \
  do {                                    \
    va_list ap_;                          \
    va_start(ap_, fmt);                   \
    vsnprintf(buf, sizeof buf, fmt, ap_); \
    va_end(ap_);                          \
  } while (0)

void tm_test__fail(const char *file, int line, const char *fmt, ...) {
  FORMAT(msg, fmt);
  leave(1, "FAIL", file, line, msg);
}

void tm_test__skip(const char *file, int line, const char *fmt, ...) {
  FORMAT(msg, fmt);
  leave(2, "skip", file, line, msg);
}

const char *tm_test_require_shared(void) {
  const char *td = tm_test_shared_testdata();
  if (td) return td;
  const char *req = getenv("TM_REQUIRE_SHARED");
  if (req && *req && strcmp(req, "0") != 0)
    tm_test__fail(__FILE__, __LINE__, "../shared/testdata is missing, and TM_REQUIRE_SHARED is set");
  tm_test__skip(__FILE__, __LINE__, "../shared/testdata is missing");
}

uint64_t tm_test_seed(void) {
  const char *env = getenv("TM_SEED");
  uint64_t seed;
  if (env && *env) {
    char *end;
    seed = strtoull(env, &end, 10);
    if (*end) tm_test__fail(__FILE__, __LINE__, "TM_SEED=%s is not a number", env);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = ((uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20)) % 1000000000000u;
  }
  tm_test__note("seed %llu (TM_SEED=%llu replays it)", (unsigned long long)seed, (unsigned long long)seed);
  return seed;
}

void tm_test__note(const char *fmt, ...) {
  va_list ap;
  fputs("    note: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

const char *tm_test_tmpdir(void) {
  if (!g_tmpdir[0]) {
    snprintf(g_tmpdir, sizeof g_tmpdir, "%s/case-XXXXXX", g_root_tmp);
    if (!mkdtemp(g_tmpdir)) tm_test__fail(__FILE__, __LINE__, "mkdtemp failed");
  }
  return g_tmpdir;
}

const char *tm_test_source_dir(void) {
  const char *s = getenv("TM_SOURCE_DIR");
  return s && *s ? s : ".";
}

const char *tm_test_shared_testdata(void) {
  static char path[4096];
  const char *env = getenv("TM_TESTDATA");
  if (env && *env) return tm_is_dir(env) ? env : NULL;
  char joined[1024];
  snprintf(joined, sizeof joined, "%s/../shared/testdata", tm_test_source_dir());
  if (!realpath(joined, path)) return NULL;
  return tm_is_dir(path) ? path : NULL;
}

const char *tm_test_bin(void) {
  const char *s = getenv("TM_BIN");
  return s && *s ? s : NULL;
}

const char *tm_test_path(const char *name) {
  static char ring[16][1024];
  static int next;
  char *p = ring[next++ % 16];
  snprintf(p, 1024, "%s/%s", tm_test_tmpdir(), name);
  return p;
}

void tm_test_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) tm_test__fail(__FILE__, __LINE__, "cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

tm_db *tm_test_db(void) {
  if (!g_db) {
    tm_db_options o;
    tm_db_options_init(&o);
    const char *dirs[1] = {tm_test_tmpdir()};
    o.dirs = dirs;
    o.n_dirs = 1;
    o.threads = 2;
    o.memory_limit = (int64_t)1 << 30;
    tm_error err;
    tm_error_init(&err);
    if (tm_db_open(&g_db, &o, &err) != TM_OK)
      tm_test__fail(__FILE__, __LINE__, "tm_db_open: %s", err.message);
  }
  return g_db;
}

bool tm_test_stress(void) {
  const char *s = getenv("TM_STRESS");
  return s && *s && strcmp(s, "0") != 0;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root_tmp, sizeof g_root_tmp, "%s/tm-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_root_tmp)) {
    perror("mkdtemp");
    return 2;
  }
  int failed = 0, skipped = 0, ran = 0;
  for (int i = 0; i < g_n_tests; i++) {
    if (filter && !strstr(g_tests[i].name, filter)) continue;
    ran++;
    g_tmpdir[0] = '\0';
    tm_alloc_fail_at(0, false);
    fprintf(stderr, "  %s ...\n", g_tests[i].name);
    int jumped = setjmp(g_jmp);
    if (jumped == 0) {
      g_tests[i].fn();
      tm_db_release(g_db);
      g_db = NULL;
      fprintf(stderr, "  ok   %s\n", g_tests[i].name);
    } else if (jumped == 2) {
      skipped++;
      tm_db_release(g_db);
      g_db = NULL;
      fprintf(stderr, "  SKIP %s (%s)\n", g_tests[i].name, g_tests[i].file);
    } else {
      failed++;
      tm_db_release(g_db); /* engines a failed case left open keep it alive */
      g_db = NULL;
      fprintf(stderr, "  FAIL %s (%s)%s%s\n", g_tests[i].name, g_tests[i].file,
              g_tmpdir[0] ? "; files kept in " : "", g_tmpdir);
      continue;
    }
    if (g_tmpdir[0]) {
      tm_error err;
      tm_error_init(&err);
      if (tm_remove_tree(g_tmpdir, &err) != TM_OK) fprintf(stderr, "  %s\n", err.message);
    }
  }
  if (failed == 0) {
    tm_error err;
    tm_error_init(&err);
    if (tm_remove_tree(g_root_tmp, &err) != TM_OK) fprintf(stderr, "%s\n", err.message);
  }
  fprintf(stderr, "%d/%d passed, %d skipped\n", ran - failed - skipped, ran, skipped);
  if (ran == 0) {
    fprintf(stderr, "no test matched\n");
    return 1;
  }
  return failed ? 1 : skipped ? TM_TEST_SKIP_EXIT : 0;
}
