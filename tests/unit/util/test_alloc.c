/*
 * Unit tests for util/alloc: the N-th allocation fails (once or from then
 * on), counts, and the live-block count that the allocation-failure sweeps
 * use to find leaks (issue 10).
 */
#include "tm_test.h"
#include "util/alloc.h"

TM_TEST(alloc_fails_the_nth_allocation_once_or_sticky) {
  tm_alloc_fail_at(2, false);
  void *a = tm_malloc(8), *b = tm_malloc(8), *c = tm_malloc(8);
  TM_ASSERT(a && !b && c);
  TM_ASSERT(tm_alloc_failed());
  TM_ASSERT_INT_EQ(tm_alloc_count(), 3);
  tm_free(a);
  tm_free(c);
  tm_alloc_fail_at(1, true);
  a = tm_calloc(1, 8);
  char *s = tm_strdup("x");
  void *r = tm_realloc(NULL, 4);
  TM_ASSERT(!a && !s && !r);
  tm_alloc_fail_at(0, false);
  TM_ASSERT(!tm_alloc_failed());
  a = tm_aligned_alloc(100);
  TM_ASSERT(a && ((uintptr_t)a % 64) == 0);
  tm_free(a);
}

TM_TEST(alloc_live_counts_blocks_not_bytes) {
  int64_t base = tm_alloc_live();
  void *a = tm_malloc(10);
  void *b = tm_calloc(3, 4);
  char *s = tm_asprintf("%d", 42);
  void *r = tm_realloc(NULL, 5); /* a new block */
  TM_ASSERT_INT_EQ(tm_alloc_live() - base, 4);
  r = tm_realloc(r, 500); /* moved or grown: still one block */
  TM_ASSERT_INT_EQ(tm_alloc_live() - base, 4);
  tm_alloc_fail_at(1, false);
  TM_ASSERT(tm_realloc(r, 5000) == NULL); /* a failed realloc keeps the block */
  tm_alloc_fail_at(0, false);
  TM_ASSERT_INT_EQ(tm_alloc_live() - base, 4);
  tm_free(NULL);
  tm_free(a);
  tm_free(b);
  tm_free(s);
  tm_free(r);
  TM_ASSERT_INT_EQ(tm_alloc_live(), base);
}
