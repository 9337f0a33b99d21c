/*
 * hash.h - hash functions and a string-keyed hash map (util layer).
 *
 * tm_hash64 is a fast 64-bit non-cryptographic hash for hash tables and row
 * fingerprints (de-duplication confirms collisions by comparing rows, so it
 * need not be collision-free). tm_murmur3_32 is MurmurHash3 x86_32, the hash
 * Iceberg's bucket transform is defined with.
 */
#ifndef TM_UTIL_HASH_H
#define TM_UTIL_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

uint64_t tm_hash64(const void *data, size_t len, uint64_t seed);
static inline uint64_t tm_hash_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}
/** Combines a running hash h with a value hash v (order-sensitive). */
static inline uint64_t tm_hash_combine(uint64_t h, uint64_t v) {
  return tm_hash_mix64(h ^ (v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2)));
}
uint32_t tm_murmur3_32(const void *data, size_t len, uint32_t seed);

/*
 * tm_map - string keys (copied, owned by the map) to void * values (not
 * owned unless a value destructor is given to tm_map_dispose). Open
 * addressing with linear probing; not thread-safe.
 */
typedef struct tm_map_entry {
  char *key;      /* owned; NULL: empty slot */
  size_t key_len;
  uint64_t hash;
  void *value;    /* owned by whoever the map's user says */
  bool tombstone;
} tm_map_entry;

typedef struct tm_map {
  tm_map_entry *slots; /* owned */
  size_t cap;          /* power of two, or 0 */
  size_t len;          /* live entries */
  size_t used;         /* live + tombstones */
} tm_map;

typedef void (*tm_map_value_free_fn)(void *value);

void tm_map_init(tm_map *m);
/** Frees keys; values through value_free when not NULL. */
void tm_map_dispose(tm_map *m, tm_map_value_free_fn value_free);
/**
 * Inserts or replaces. When replacing, the old value is returned through
 * old_out (may be NULL, in which case the caller must not need it).
 */
int tm_map_put(tm_map *m, const char *key, size_t key_len, void *value, void **old_out,
               tm_error *err) TM_WARN_UNUSED;
int tm_map_puts(tm_map *m, const char *key, void *value, void **old_out, tm_error *err)
    TM_WARN_UNUSED;
/** Value for key, or NULL. found_out (may be NULL) tells a stored NULL apart. */
void *tm_map_get(const tm_map *m, const char *key, size_t key_len, bool *found_out);
void *tm_map_gets(const tm_map *m, const char *key);
/** Removes key and returns its value (NULL if absent). */
void *tm_map_remove(tm_map *m, const char *key, size_t key_len);
/** Iteration: *pos starts at 0; returns false when done. */
bool tm_map_next(const tm_map *m, size_t *pos, const char **key_out, void **value_out);

#endif
