/*
 * arena.c - bump allocator with a byte limit (util layer). See arena.h.
 */
#include "util/arena.h"

#include <string.h>

#include "util/alloc.h"

struct tm_arena_block {
  tm_arena_block *next;
  size_t cap; /* usable bytes after the header */
  size_t pos; /* bytes used */
  /* data follows, aligned to max_align_t */
};

#define ALIGN ((size_t)_Alignof(max_align_t))
#define HEADER (((sizeof(tm_arena_block) + ALIGN - 1) / ALIGN) * ALIGN)
#define DEFAULT_BLOCK ((size_t)32 * 1024)

void tm_arena_init(tm_arena *a, size_t limit) {
  a->head = NULL;
  a->used = 0;
  a->limit = limit;
  a->block_size = DEFAULT_BLOCK;
}

static tm_arena_block *new_block(size_t cap) {
  tm_arena_block *b = tm_malloc(HEADER + cap);
  if (!b) return NULL;
  b->next = NULL;
  b->cap = cap;
  b->pos = 0;
  return b;
}

void *tm_arena_alloc(tm_arena *a, size_t n, tm_error *err) {
  size_t rounded;
  if (tm_add_overflow(n, ALIGN - 1, &rounded)) {
    tm_error_set(err, TM_ETOOLARGE, "arena allocation of %zu bytes is too large", n);
    return NULL;
  }
  rounded = rounded / ALIGN * ALIGN;
  if (rounded == 0) rounded = ALIGN;
  if (rounded > a->limit - a->used || a->used > a->limit) {
    tm_error_set(err, TM_ETOOLARGE, "memory limit of %zu bytes exceeded", a->limit);
    return NULL;
  }
  tm_arena_block *b = a->head;
#ifdef TM_SANITIZE
  /* Debug mode: one block per allocation so that ASan sees every object. */
  b = new_block(n ? n : 1);
  if (!b) {
    tm_error_nomem(err);
    return NULL;
  }
  b->next = a->head;
  a->head = b;
  b->pos = b->cap;
  a->used += rounded;
  char *p = (char *)b + HEADER;
  memset(p, 0, b->cap);
  return p;
#else
  if (!b || b->cap - b->pos < rounded) {
    size_t cap = rounded > a->block_size ? rounded : a->block_size;
    b = new_block(cap);
    if (!b) {
      tm_error_nomem(err);
      return NULL;
    }
    b->next = a->head;
    a->head = b;
  }
  char *p = (char *)b + HEADER + b->pos;
  b->pos += rounded;
  a->used += rounded;
  memset(p, 0, n);
  return p;
#endif
}

void *tm_arena_calloc(tm_arena *a, size_t n, size_t size, tm_error *err) {
  size_t total;
  if (tm_mul_overflow(n, size, &total)) {
    tm_error_set(err, TM_ETOOLARGE, "arena allocation of %zu x %zu bytes overflows", n,
                 size);
    return NULL;
  }
  return tm_arena_alloc(a, total, err);
}

char *tm_arena_strndup(tm_arena *a, const char *s, size_t len, tm_error *err) {
  size_t n;
  if (tm_add_overflow(len, 1, &n)) {
    tm_error_set(err, TM_ETOOLARGE, "string too large");
    return NULL;
  }
  char *p = tm_arena_alloc(a, n, err);
  if (!p) return NULL;
  if (len) memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

void tm_arena_reset(tm_arena *a) {
  tm_arena_block *keep = NULL;
  tm_arena_block *b = a->head;
  while (b) {
    tm_arena_block *next = b->next;
#ifndef TM_SANITIZE
    if (!keep && b->cap == a->block_size) {
      keep = b;
      keep->pos = 0;
      keep->next = NULL;
      b = next;
      continue;
    }
#endif
    tm_free(b);
    b = next;
  }
  a->head = keep;
  a->used = 0;
}

void tm_arena_dispose(tm_arena *a) {
  tm_arena_block *b = a->head;
  while (b) {
    tm_arena_block *next = b->next;
    tm_free(b);
    b = next;
  }
  a->head = NULL;
  a->used = 0;
}
