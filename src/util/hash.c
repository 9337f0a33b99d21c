/*
 * hash.c - hashing and tm_map (util layer). See hash.h.
 */
#include "util/hash.h"

#include <string.h>

#include "util/alloc.h"

static inline uint64_t read64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint64_t read32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static inline uint64_t mum(uint64_t a, uint64_t b) {
  __uint128_t r = (__uint128_t)a * b;
  return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t tm_hash64(const void *data, size_t len, uint64_t seed) {
  /* Multiply-fold over 16-byte blocks; the tail is read with overlapping
   * loads so no byte is read twice as different data and none out of bounds. */
  static const uint64_t k0 = UINT64_C(0xa0761d6478bd642f);
  static const uint64_t k1 = UINT64_C(0xe7037ed1a0b428db);
  static const uint64_t k2 = UINT64_C(0x8ebc6af09c88c6e3);
  const unsigned char *p = data;
  uint64_t h = seed ^ mum(seed ^ k0, (uint64_t)len ^ k1);
  size_t n = len;
  while (n > 16) {
    h = mum(read64(p) ^ k1, read64(p + 8) ^ h);
    p += 16;
    n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = read64(p);
    b = read64(p + n - 8);
  } else if (n >= 4) {
    a = read32(p);
    b = read32(p + n - 4);
  } else if (n > 0) {
    a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
  }
  h = mum(a ^ k2 ^ h, b ^ k0);
  return tm_hash_mix64(h ^ len);
}

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t tm_murmur3_32(const void *data, size_t len, uint32_t seed) {
  const unsigned char *p = data;
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  uint32_t h = seed;
  size_t nblocks = len / 4;
  for (size_t i = 0; i < nblocks; i++) {
    uint32_t k;
    memcpy(&k, p + i * 4, 4); /* little-endian hosts only; checked at build */
    k *= c1;
    k = rotl32(k, 15);
    k *= c2;
    h ^= k;
    h = rotl32(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  const unsigned char *tail = p + nblocks * 4;
  uint32_t k = 0;
  switch (len & 3) {
    case 3: k ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
      k ^= tail[0];
      k *= c1;
      k = rotl32(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= (uint32_t)len;
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tidemark assumes little-endian");

void tm_map_init(tm_map *m) { memset(m, 0, sizeof *m); }

void tm_map_dispose(tm_map *m, tm_map_value_free_fn value_free) {
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slots[i].key && !m->slots[i].tombstone) {
      if (value_free) value_free(m->slots[i].value);
    }
    tm_free(m->slots[i].key);
  }
  tm_free(m->slots);
  memset(m, 0, sizeof *m);
}

static tm_map_entry *find_slot(const tm_map *m, const char *key, size_t key_len,
                               uint64_t hash, bool for_insert) {
  if (m->cap == 0) return NULL;
  size_t mask = m->cap - 1;
  tm_map_entry *first_tomb = NULL;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    tm_map_entry *e = &m->slots[i];
    if (!e->key) return for_insert ? (first_tomb ? first_tomb : e) : NULL;
    if (e->tombstone) {
      if (!first_tomb) first_tomb = e;
      continue;
    }
    if (e->hash == hash && e->key_len == key_len && memcmp(e->key, key, key_len) == 0)
      return e;
  }
}

static int grow(tm_map *m, tm_error *err) {
  size_t cap = m->cap ? m->cap * 2 : 16;
  tm_map_entry *slots = tm_calloc(cap, sizeof *slots);
  if (!slots) return tm_error_nomem(err);
  tm_map old = *m;
  m->slots = slots;
  m->cap = cap;
  m->len = 0;
  m->used = 0;
  for (size_t i = 0; i < old.cap; i++) {
    tm_map_entry *e = &old.slots[i];
    if (!e->key) continue;
    if (e->tombstone) {
      tm_free(e->key);
      continue;
    }
    tm_map_entry *d = find_slot(m, e->key, e->key_len, e->hash, true);
    *d = *e;
    m->len++;
    m->used++;
  }
  tm_free(old.slots);
  return TM_OK;
}

int tm_map_put(tm_map *m, const char *key, size_t key_len, void *value, void **old_out,
               tm_error *err) {
  uint64_t hash = tm_hash64(key, key_len, 0);
  tm_map_entry *e = find_slot(m, key, key_len, hash, false);
  if (e) {
    if (old_out) *old_out = e->value;
    e->value = value;
    return TM_OK;
  }
  if ((m->used + 1) * 4 >= m->cap * 3) TM_TRY(grow(m, err));
  char *copy = tm_malloc(key_len + 1);
  if (!copy) return tm_error_nomem(err);
  memcpy(copy, key, key_len);
  copy[key_len] = '\0';
  e = find_slot(m, key, key_len, hash, true);
  if (e->key) {
    tm_free(e->key); /* reusing a tombstone */
  } else {
    m->used++;
  }
  e->key = copy;
  e->key_len = key_len;
  e->hash = hash;
  e->value = value;
  e->tombstone = false;
  m->len++;
  if (old_out) *old_out = NULL;
  return TM_OK;
}

int tm_map_puts(tm_map *m, const char *key, void *value, void **old_out, tm_error *err) {
  return tm_map_put(m, key, strlen(key), value, old_out, err);
}

void *tm_map_get(const tm_map *m, const char *key, size_t key_len, bool *found_out) {
  tm_map_entry *e = find_slot(m, key, key_len, tm_hash64(key, key_len, 0), false);
  if (found_out) *found_out = e != NULL;
  return e ? e->value : NULL;
}

void *tm_map_gets(const tm_map *m, const char *key) {
  return tm_map_get(m, key, strlen(key), NULL);
}

void *tm_map_remove(tm_map *m, const char *key, size_t key_len) {
  tm_map_entry *e = find_slot(m, key, key_len, tm_hash64(key, key_len, 0), false);
  if (!e) return NULL;
  void *v = e->value;
  e->tombstone = true;
  e->value = NULL;
  m->len--;
  return v;
}

bool tm_map_next(const tm_map *m, size_t *pos, const char **key_out, void **value_out) {
  for (size_t i = *pos; i < m->cap; i++) {
    tm_map_entry *e = &m->slots[i];
    if (e->key && !e->tombstone) {
      if (key_out) *key_out = e->key;
      if (value_out) *value_out = e->value;
      *pos = i + 1;
      return true;
    }
  }
  *pos = m->cap;
  return false;
}
