/*
 * alloc.h - the one allocator interface (util layer).
 *
 * Every allocation in tidemark goes through these wrappers (raw malloc/free
 * are banned by scripts/lint). They return NULL on failure, never abort, and
 * let tests fail the N-th allocation (SQLite's fault simulator, curl's torture
 * mode) and let metrics count live bytes.
 *
 * Size arithmetic that can overflow goes through tm_mul_overflow/tm_add_overflow
 * or tm_calloc/tm_reallocarray, which check it.
 */
#ifndef TM_UTIL_ALLOC_H
#define TM_UTIL_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/** Like malloc; tm_malloc(0) returns a unique pointer. Release with tm_free. */
void *tm_malloc(size_t n) TM_WARN_UNUSED;
/** Zeroed n*size bytes; NULL when the product overflows. */
void *tm_calloc(size_t n, size_t size) TM_WARN_UNUSED;
/** Like realloc; on failure p is untouched and still owned by the caller. */
void *tm_realloc(void *p, size_t n) TM_WARN_UNUSED;
/** realloc to n*size bytes, NULL when the product overflows. */
void *tm_reallocarray(void *p, size_t n, size_t size) TM_WARN_UNUSED;
/** 64-byte aligned block (Arrow buffers). Release with tm_free. */
void *tm_aligned_alloc(size_t n) TM_WARN_UNUSED;
void tm_free(void *p);
/** Overwrites n bytes at p with zeros in a way the compiler keeps (secrets before a free). */
void tm_wipe(void *p, size_t n);

/** Copies of strings; release with tm_free. */
char *tm_strdup(const char *s) TM_WARN_UNUSED;
char *tm_strndup(const char *s, size_t n) TM_WARN_UNUSED;
char *tm_asprintf(const char *fmt, ...) TM_PRINTF(1, 2) TM_WARN_UNUSED;

static inline bool tm_mul_overflow(size_t a, size_t b, size_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
static inline bool tm_add_overflow(size_t a, size_t b, size_t *out) {
  return __builtin_add_overflow(a, b, out);
}

/*
 * Test hooks. tm_alloc_fail_at(n) makes the n-th allocation counted from now
 * fail (1 = the next one); 0 disables. With `sticky`, every allocation after
 * the first failure fails too. Counts are process-wide and thread-safe.
 */
void tm_alloc_fail_at(int64_t n, bool sticky);
/**
 * Whether a failure is set up (tm_alloc_fail_at(n > 0)): code that would
 * make the order of allocations vary between runs (another thread) stays
 * sequential then, so the N-th allocation is the same one on each run.
 */
bool tm_alloc_fault_armed(void);
/** Allocations since the last tm_alloc_fail_at() or start. */
int64_t tm_alloc_count(void);
/** Whether an injected failure has fired since the last tm_alloc_fail_at(). */
bool tm_alloc_failed(void);
/**
 * Blocks handed out by these wrappers and not yet passed to tm_free, process
 * wide. Tests compare it before and after a piece of work to find leaks on
 * the paths an injected failure takes (not reset by tm_alloc_fail_at).
 */
int64_t tm_alloc_live(void);

#endif
