/*
 * arena.h - a bump allocator for short-lived, same-lifetime objects (util layer).
 *
 * Decoders that build many small objects which all die together (an Avro
 * record's value tree, the entries of one manifest) take them from an arena
 * and release them at once with tm_arena_reset or tm_arena_dispose. Every
 * arena has a hard byte limit, so a hostile input cannot grow it without
 * bound.
 *
 * Debug mode: builds with sanitizers (TM_SANITIZE) give every allocation its
 * own block, so AddressSanitizer still sees each object's bounds.
 */
#ifndef TM_UTIL_ARENA_H
#define TM_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct tm_arena_block tm_arena_block;

typedef struct tm_arena {
  tm_arena_block *head; /* owned list of blocks, newest first */
  size_t used;          /* bytes handed out since the last reset */
  size_t limit;         /* hard cap on used */
  size_t block_size;    /* size of regular blocks */
} tm_arena;

/** Initialises an empty arena; limit caps the bytes handed out between resets. */
void tm_arena_init(tm_arena *a, size_t limit);
/**
 * Returns n zeroed bytes aligned for any scalar type, owned by the arena.
 * NULL with err set (TM_ETOOLARGE past the limit, TM_ENOMEM).
 */
void *tm_arena_alloc(tm_arena *a, size_t n, tm_error *err) TM_WARN_UNUSED;
/** tm_arena_alloc of n * size bytes with an overflow check. */
void *tm_arena_calloc(tm_arena *a, size_t n, size_t size, tm_error *err) TM_WARN_UNUSED;
/** A NUL-terminated copy of len bytes at s, owned by the arena. */
char *tm_arena_strndup(tm_arena *a, const char *s, size_t len, tm_error *err)
    TM_WARN_UNUSED;
/** Frees everything handed out; keeps one block for reuse. */
void tm_arena_reset(tm_arena *a);
/** Frees all memory. The arena may be initialised again. */
void tm_arena_dispose(tm_arena *a);

#endif
