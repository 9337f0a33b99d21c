/*
 * alloc.c - allocation wrappers with failure injection (util layer).
 *
 * The injection counter is a relaxed atomic: tests that inject failures run
 * the code under test on one thread, and other threads only need the
 * counter to stay consistent, not ordered.
 */
#include "util/alloc.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int64_t g_count;     /* allocations since the last reset */
static _Atomic int64_t g_fail_at;   /* 0: off; else fail when count reaches it */
static _Atomic bool g_sticky;
static _Atomic bool g_failed;
static _Atomic int64_t g_live;      /* blocks handed out and not yet freed */

/* Counts a block handed out (p non-NULL); returns p. */
static void *live(void *p) {
  if (p) atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
  return p;
}

void tm_alloc_fail_at(int64_t n, bool sticky) {
  atomic_store(&g_count, 0);
  atomic_store(&g_failed, false);
  atomic_store(&g_sticky, sticky);
  atomic_store(&g_fail_at, n);
}

bool tm_alloc_fault_armed(void) { return atomic_load(&g_fail_at) > 0; }
int64_t tm_alloc_count(void) { return atomic_load(&g_count); }
bool tm_alloc_failed(void) { return atomic_load(&g_failed); }
int64_t tm_alloc_live(void) { return atomic_load(&g_live); }

/* Returns true when this allocation must fail. */
static bool inject(void) {
  int64_t at = atomic_load_explicit(&g_fail_at, memory_order_relaxed);
  int64_t n = atomic_fetch_add_explicit(&g_count, 1, memory_order_relaxed) + 1;
  if (at <= 0) return false;
  if (n == at || (n > at && atomic_load(&g_sticky))) {
    atomic_store(&g_failed, true);
    return true;
  }
  return false;
}

void *tm_malloc(size_t n) {
  if (inject()) return NULL;
  return live(malloc(n ? n : 1)); /* lint-ok: the wrapper itself */
}

void *tm_calloc(size_t n, size_t size) {
  size_t total;
  if (tm_mul_overflow(n, size, &total)) return NULL;
  if (inject()) return NULL;
  return live(calloc(total ? total : 1, 1)); /* lint-ok */
}

void *tm_realloc(void *p, size_t n) {
  if (inject()) return NULL;
  void *q = realloc(p, n ? n : 1); /* lint-ok */
  return p ? q : live(q);
}

void *tm_reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (tm_mul_overflow(n, size, &total)) return NULL;
  return tm_realloc(p, total);
}

void *tm_aligned_alloc(size_t n) {
  if (inject()) return NULL;
  void *p = NULL;
  size_t rounded = (n + 63) & ~(size_t)63;
  if (rounded < n) return NULL;
  if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0) return NULL;
  return live(p);
}

void tm_free(void *p) {
  if (p) atomic_fetch_sub_explicit(&g_live, 1, memory_order_relaxed);
  free(p); /* lint-ok */
}

char *tm_strdup(const char *s) {
  if (!s) return NULL;
  return tm_strndup(s, strlen(s));
}

char *tm_strndup(const char *s, size_t n) {
  if (!s) return NULL;
  size_t len = strnlen(s, n);
  char *p = tm_malloc(len + 1);
  if (!p) return NULL;
  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *tm_asprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *p = tm_malloc((size_t)n + 1);
  if (!p) return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

void tm_wipe(void *p, size_t n) {
  volatile unsigned char *q = p;
  for (size_t i = 0; i < n; i++) q[i] = 0;
}
