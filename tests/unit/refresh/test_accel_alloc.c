/*
 * Allocation-failure sweeps over whole refreshes (issue 10; SPEC D1, D2; STYLE.md
 * "running out of memory is an error, never an abort").
 *
 * For each scenario — a file dataset (Parquet and CSV files) or an Iceberg
 * table, a first load, an append or a full refresh, into cayenne (file),
 * sqlite (file) or arrow (memory) — a clean run first counts the allocations
 * the refresh makes (T). Then for N in 1..T (every N with TM_STRESS=1, an
 * evenly spread sample of TM_ALLOC_SAMPLES, default 6, otherwise) the
 * refresh runs again from the same starting state with the N-th allocation failing, and:
 *   - it returns an error (TM_ENOMEM, or a code an ENOMEM turned into, which
 *     the test reports) or succeeds; it never crashes (ASan/UBSan abort);
 *   - every block allocated from the accel's creation to its release is freed
 *     (tm_alloc_live), so no failure path leaks;
 *   - the rows served right after, and after reopening the acceleration
 *     normally (file mode), are exactly the old multiset or exactly the new
 *     one, and the new one when the refresh said it succeeded;
 *   - the next refresh without faults ends with exactly the new rows.
 * With TM_STRESS=1 each N also runs "sticky" (every allocation from the N-th
 * on fails, as when memory is really exhausted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "refresh_fixture.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
/* Prints LeakSanitizer's report (the leaked blocks' allocation stacks). */
static void show_leaks(void) { __lsan_do_recoverable_leak_check(); }
#else
static void show_leaks(void) {}
#endif

/* What one sweep saw. */
typedef struct tally {
  int64_t runs, failed, succeeded, fired_ok, committed_on_error;
  int64_t codes[32];   /* by -rc, for failed runs */
  int64_t total;       /* allocations of the clean refresh */
  int64_t max_total;
} tally;

static void expect_old_or_new(const rfx_scenario *s, const rfx_template *t, tm_accel *a, bool must_be_new,
                              int64_t n, const char *when, bool *is_new) {
  tm_error err;
  rfx_sig got;
  int rc = rfx_accel_sig(a, &got, &err);
  TM_ASSERT_MSG(rc == TM_OK, "%s, allocation %lld failing: %s the rows cannot be read: %s",
                s->name, (long long)n, when, err.message);
  bool was_new = rfx_sig_eq(got, t->new_rows), was_old = rfx_sig_eq(got, t->old_rows);
  TM_ASSERT_MSG(was_new || (was_old && !must_be_new),
                "%s, allocation %lld failing: %s the acceleration holds %lld rows, neither the "
                "old (%lld) nor the new (%lld) multiset%s",
                s->name, (long long)n, when, (long long)got.rows, (long long)t->old_rows.rows,
                (long long)t->new_rows.rows, must_be_new ? " (the refresh succeeded)" : "");
  if (is_new) *is_new = was_new;
}

/*
 * One run from the template: copy it, open, (memory mode: load the base),
 * apply the change, refresh with allocation n failing (0: none), check.
 * Returns the allocations the refresh made.
 */
static int64_t one_run(const rfx_scenario *s, const rfx_template *t, const char *run_dir, int64_t n,
                       bool sticky, tally *ty) {
  tm_error err;
  tm_error_init(&err);
  rfx_remove_tree(run_dir);
  rfx_copy_tree(t->dir, run_dir);
  int64_t live0 = tm_alloc_live();
  rfx f;
  rfx_open(&f, run_dir, t->yaml);
  tm_refresh_result r;
  if (s->memory && s->kind != RFX_FIRST) TM_ASSERT_OK(tm_accel_refresh(f.a, NULL, &r, &err), &err);
  rfx_template_apply(s, run_dir);

  tm_alloc_fail_at(n, sticky);
  int rc = tm_accel_refresh(f.a, NULL, &r, &err);
  int64_t count = tm_alloc_count();
  bool fired = tm_alloc_failed();
  tm_alloc_fail_at(0, false);

  ty->runs++;
  if (rc < 0) {
    TM_ASSERT_MSG(fired, "%s: the refresh failed without an injected failure: %s", s->name,
                  err.message);
    TM_ASSERT_MSG(err.message[0] != '\0', "%s, allocation %lld failing: error %s without a message",
                  s->name, (long long)n, tm_code_name(rc));
    ty->failed++;
    if (-rc < 32) ty->codes[-rc]++;
    if (rc != TM_ENOMEM && tm_test_stress())
      tm_test__note("%s, allocation %lld failing: %s: %s", s->name, (long long)n,
                    tm_code_name(rc), err.message);
  } else {
    ty->succeeded++;
    if (fired) ty->fired_ok++;
  }
  bool is_new = false;
  expect_old_or_new(s, t, f.a, rc == TM_OK, n, "right after the refresh,", &is_new);
  if (rc < 0 && is_new) ty->committed_on_error++;
  if (!s->memory) {
    rfx_reopen(&f);
    expect_old_or_new(s, t, f.a, rc == TM_OK, n, "reopened,", NULL);
  }
  /* The next refresh without faults completes: exactly the new rows. */
  TM_ASSERT_OK(tm_accel_refresh(f.a, NULL, &r, &err), &err);
  expect_old_or_new(s, t, f.a, true, n, "after the next refresh,", NULL);
  rfx_close(&f);
  int64_t leaked = tm_alloc_live() - live0;
  if (leaked) show_leaks();
  TM_ASSERT_MSG(leaked == 0, "%s, allocation %lld failing%s: %lld blocks leaked (%s)", s->name,
                (long long)n, sticky ? " (sticky)" : "", (long long)leaked,
                rc < 0 ? err.message : "the refresh succeeded");
  return count;
}

static void sweep(const rfx_scenario *s) {
  rfx_quiet_logs();
  char dir[1200], run_dir[1200];
  snprintf(dir, sizeof dir, "%s/%s", tm_test_tmpdir(), "template");
  snprintf(run_dir, sizeof run_dir, "%s/%s", tm_test_tmpdir(), "run");
  rfx_template t;
  rfx_template_make(&t, s, dir);
  tally ty;
  memset(&ty, 0, sizeof ty);
  int64_t t0 = tm_monotonic_ns();
  /* The clean run counts the allocations. */
  int64_t total = one_run(s, &t, run_dir, 0, false, &ty);
  TM_ASSERT(total > 0);
  bool stress = tm_test_stress();
  const char *env = getenv("TM_ALLOC_SAMPLES");
  int64_t samples = env ? atoll(env) : 6;
  int64_t step = stress || samples <= 0 || total <= samples ? 1 : total / samples;
  tally sticky;
  memset(&sticky, 0, sizeof sticky);
  /* TM_ALLOC_N=k runs only N = k (to reproduce one failure). */
  const char *only = getenv("TM_ALLOC_N");
  int64_t first = only ? atoll(only) : 1, last = only ? first : total + 3;
  /* A few past the end: nothing fails, the refresh must succeed. */
  for (int64_t n = first; n <= last; n += step) {
    int64_t c = one_run(s, &t, run_dir, n, false, &ty);
    if (c > ty.max_total) ty.max_total = c;
    if (stress) one_run(s, &t, run_dir, n, true, &sticky);
  }
  double secs = (double)(tm_monotonic_ns() - t0) / 1e9;
  char codes[512] = "";
  size_t used = 0;
  for (int c = 1; c < 32; c++) {
    if (!ty.codes[c] && !sticky.codes[c]) continue;
    int k = snprintf(codes + used, sizeof codes - used, " %s=%lld", tm_code_name(-c),
                     (long long)(ty.codes[c] + sticky.codes[c]));
    if (k > 0 && (size_t)k < sizeof codes - used) used += (size_t)k;
  }
  tm_test__note("%s: %lld allocations; %lld runs (step %lld%s) in %.1f s: %lld failed, %lld "
                "succeeded (%lld absorbed an injected failure), %lld reported an error after "
                "committing; codes:%s",
                s->name, (long long)total, (long long)(ty.runs + sticky.runs), (long long)step,
                stress ? ", plus sticky" : "", secs, (long long)(ty.failed + sticky.failed),
                (long long)(ty.succeeded + sticky.succeeded), (long long)(ty.fired_ok + sticky.fired_ok),
                (long long)(ty.committed_on_error + sticky.committed_on_error), codes);
  rfx_remove_tree(run_dir);
}

#define SCENARIO(fn, label, src, kind, accel, memory)           \
  TM_TEST(fn) {                                                  \
    static const rfx_scenario s = {label, src, kind, accel, memory, NULL}; \
    sweep(&s);                                                   \
  }

SCENARIO(D1_alloc_files_first_load_cayenne, "files/first/cayenne", RFX_FILES, RFX_FIRST, RFX_CAYENNE, false)
SCENARIO(D1_alloc_files_append_cayenne, "files/append/cayenne", RFX_FILES, RFX_APPEND, RFX_CAYENNE, false)
SCENARIO(D1_alloc_files_full_cayenne, "files/full/cayenne", RFX_FILES, RFX_FULL, RFX_CAYENNE, false)
SCENARIO(D1_alloc_iceberg_append_cayenne, "iceberg/append/cayenne", RFX_ICEBERG, RFX_APPEND, RFX_CAYENNE, false)
SCENARIO(D1_alloc_iceberg_full_cayenne, "iceberg/full/cayenne", RFX_ICEBERG, RFX_FULL, RFX_CAYENNE, false)
SCENARIO(D1_alloc_files_first_load_sqlite, "files/first/sqlite", RFX_FILES, RFX_FIRST, RFX_SQLITE, false)
SCENARIO(D1_alloc_files_append_sqlite, "files/append/sqlite", RFX_FILES, RFX_APPEND, RFX_SQLITE, false)
SCENARIO(D1_alloc_files_full_sqlite, "files/full/sqlite", RFX_FILES, RFX_FULL, RFX_SQLITE, false)
SCENARIO(D1_alloc_iceberg_append_sqlite, "iceberg/append/sqlite", RFX_ICEBERG, RFX_APPEND, RFX_SQLITE, false)
SCENARIO(D1_alloc_iceberg_full_sqlite, "iceberg/full/sqlite", RFX_ICEBERG, RFX_FULL, RFX_SQLITE, false)
SCENARIO(D1_alloc_files_append_arrow, "files/append/arrow", RFX_FILES, RFX_APPEND, RFX_ARROW, true)
SCENARIO(D1_alloc_iceberg_append_arrow, "iceberg/append/arrow", RFX_ICEBERG, RFX_APPEND, RFX_ARROW, true)
SCENARIO(D1_alloc_iceberg_full_arrow, "iceberg/full/arrow", RFX_ICEBERG, RFX_FULL, RFX_ARROW, true)
