/*
 * tm_test.h - the unit-test harness.
 *
 * A test file defines cases with TM_TEST(name) { ... }; they register
 * themselves at start-up and the harness's main runs them all, or those whose
 * name contains argv[1]. A failed assertion ends the case (longjmp) and marks
 * it failed; the run exits 1 if any case failed.
 *
 * Helpers give each case a fresh temporary folder and locate the source tree
 * and ../shared/testdata (TM_SOURCE_DIR, set by ctest).
 */
#ifndef TM_TEST_H
#define TM_TEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

typedef void (*tm_test_fn)(void);
void tm_test__register(const char *name, tm_test_fn fn, const char *file);
void tm_test__fail(const char *file, int line, const char *fmt, ...) TM_PRINTF(3, 4)
    __attribute__((noreturn));
void tm_test__note(const char *fmt, ...) TM_PRINTF(1, 2);
void tm_test__skip(const char *file, int line, const char *fmt, ...) TM_PRINTF(3, 4)
    __attribute__((noreturn));

/*
 * Ends the running case as skipped, with a reason. A test binary with a
 * skipped case and no failed one exits 77, which ctest shows as "Skipped"
 * (SKIP_RETURN_CODE): a skip is never a pass.
 */
#define TM_SKIP(...) tm_test__skip(__FILE__, __LINE__, __VA_ARGS__)

#define TM_TEST(name)                                                               \
  static void name(void);                                                           \
  __attribute__((constructor)) static void tm_test_reg_##name(void) {               \
    tm_test__register(#name, name, __FILE__);                                       \
  }                                                                                 \
  static void name(void)

#define TM_ASSERT(cond)                                                             \
  do {                                                                              \
    if (!(cond)) tm_test__fail(__FILE__, __LINE__, "assertion failed: %s", #cond);  \
  } while (0)

#define TM_ASSERT_MSG(cond, ...)                                                    \
  do {                                                                              \
    if (!(cond)) tm_test__fail(__FILE__, __LINE__, __VA_ARGS__);                    \
  } while (0)

#define TM_ASSERT_INT_EQ(a, b)                                                      \
  do {                                                                              \
    long long tm_a_ = (long long)(a), tm_b_ = (long long)(b);                       \
    if (tm_a_ != tm_b_)                                                             \
      tm_test__fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, tm_a_,    \
                    tm_b_);                                                         \
  } while (0)

#define TM_ASSERT_DBL_EQ(a, b)                                                      \
  do {                                                                              \
    double tm_a_ = (double)(a), tm_b_ = (double)(b);                                \
    if (tm_a_ != tm_b_)                                                             \
      tm_test__fail(__FILE__, __LINE__, "%s == %s: %.17g != %.17g", #a, #b, tm_a_,  \
                    tm_b_);                                                         \
  } while (0)

#define TM_ASSERT_STR_EQ(a, b)                                                      \
  do {                                                                              \
    const char *tm_a_ = (a), *tm_b_ = (b);                                          \
    if (!tm_a_ || !tm_b_ || strcmp(tm_a_, tm_b_) != 0)                              \
      tm_test__fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,       \
                    tm_a_ ? tm_a_ : "(null)", tm_b_ ? tm_b_ : "(null)");            \
  } while (0)

/* The message must contain needle. */
#define TM_ASSERT_CONTAINS(haystack, needle)                                        \
  do {                                                                              \
    const char *tm_h_ = (haystack), *tm_n_ = (needle);                              \
    if (!tm_h_ || !strstr(tm_h_, tm_n_))                                            \
      tm_test__fail(__FILE__, __LINE__, "\"%s\" does not contain \"%s\"",           \
                    tm_h_ ? tm_h_ : "(null)", tm_n_);                               \
  } while (0)

/* expr returns a tm status; err is the tm_error it filled. */
#define TM_ASSERT_OK(expr, err)                                                     \
  do {                                                                              \
    int tm_rc_ = (expr);                                                            \
    if (tm_rc_ < 0)                                                                 \
      tm_test__fail(__FILE__, __LINE__, "%s returned %d (%s): %s", #expr, tm_rc_,   \
                    tm_code_name(tm_rc_), (err)->message);                          \
  } while (0)

#define TM_ASSERT_RC(expr, want)                                                    \
  do {                                                                              \
    int tm_rc_ = (expr);                                                            \
    if (tm_rc_ != (want))                                                           \
      tm_test__fail(__FILE__, __LINE__, "%s returned %d (%s), expected %s", #expr,  \
                    tm_rc_, tm_code_name(tm_rc_), #want);                           \
  } while (0)

/** A fresh empty folder for the running case, removed after it passes. */
const char *tm_test_tmpdir(void);
/** The source tree (TM_SOURCE_DIR or the current folder). */
const char *tm_test_source_dir(void);
/** ../shared/testdata beside the source tree (or TM_TESTDATA), or NULL when absent. */
const char *tm_test_shared_testdata(void);
/**
 * ../shared/testdata for a case that needs it. When it is absent the case is
 * skipped, or fails when TM_REQUIRE_SHARED is set (CI, which always has it).
 */
const char *tm_test_require_shared(void);
/**
 * The seed of a randomised case: TM_SEED when set, else one from the clock
 * and the pid. Printed, so that TM_SEED=<n> replays the same choices.
 */
uint64_t tm_test_seed(void);
/** The tidemark binary under test (TM_BIN), or NULL. */
const char *tm_test_bin(void);
/** A path under tm_test_tmpdir(); valid until the next call + 16 calls. */
const char *tm_test_path(const char *name);
/** Writes a whole file (test setup); fails the test on error. */
void tm_test_write_file(const char *path, const char *text);
/**
 * A DuckDB instance for the running case (engine/db.h), whose allowed folder
 * is the case's tmpdir; released after the case. Engines of the case must be
 * released before it ends.
 */
struct tm_db *tm_test_db(void);
/** Whether TM_STRESS is set (long variants of tests run). */
bool tm_test_stress(void);

#endif
