/* Unit tests for util/arena: alignment, zeroing, the byte limit, reset. */
#include <stdint.h>

#include "tm_test.h"
#include "util/arena.h"

TM_TEST(arena_allocations_are_zeroed_and_aligned) {
  tm_error err;
  tm_arena a;
  tm_arena_init(&a, 1 << 20);
  for (size_t n = 1; n < 200; n += 7) {
    unsigned char *p = tm_arena_alloc(&a, n, &err);
    TM_ASSERT(p != NULL);
    TM_ASSERT((uintptr_t)p % _Alignof(max_align_t) == 0);
    for (size_t i = 0; i < n; i++) TM_ASSERT(p[i] == 0);
    for (size_t i = 0; i < n; i++) p[i] = 0xab;
  }
  char *s = tm_arena_strndup(&a, "hello world", 5, &err);
  TM_ASSERT_STR_EQ(s, "hello");
  /* Larger than a block. */
  TM_ASSERT(tm_arena_alloc(&a, 100000, &err) != NULL);
  tm_arena_dispose(&a);
}

TM_TEST(arena_limit_and_reset) {
  tm_error err;
  tm_arena a;
  tm_arena_init(&a, 1000);
  TM_ASSERT(tm_arena_alloc(&a, 900, &err) != NULL);
  TM_ASSERT(tm_arena_alloc(&a, 200, &err) == NULL);
  TM_ASSERT_INT_EQ(err.code, TM_ETOOLARGE);
  TM_ASSERT(tm_arena_calloc(&a, SIZE_MAX / 2, 4, &err) == NULL);
  TM_ASSERT_INT_EQ(err.code, TM_ETOOLARGE);
  tm_arena_reset(&a);
  TM_ASSERT(tm_arena_alloc(&a, 900, &err) != NULL);
  tm_arena_dispose(&a);
}
