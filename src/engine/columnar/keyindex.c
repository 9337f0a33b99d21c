/*
 * keyindex.c - the primary-key index of the columnar engines (engine layer).
 *
 * Maps a key's hash to the location (slot, row) of the live row that holds
 * the key, so that a write can find the stored version of each incoming key
 * in constant time (SPEC A8). Linear probing over 16-byte entries, grown at
 * 70% occupancy; removal leaves a tombstone. Equal hashes of different keys
 * are told apart by the caller, which compares the key values.
 */
#include <string.h>

#include "engine/columnar/columnar.h"
#include "util/alloc.h"

static uint64_t cap_for(uint64_t n) {
  uint64_t cap = 64;
  while (cap * 7 / 10 < n + 1) cap <<= 1;
  return cap;
}

static tm_kix_entry *alloc_table(uint64_t cap) {
  tm_kix_entry *t = tm_malloc((size_t)cap * sizeof *t);
  if (!t) return NULL;
  for (uint64_t i = 0; i < cap; i++) t[i].slot = TM_KIX_EMPTY;
  return t;
}

int tm_kix_new(kix **out, uint64_t expect, tm_error *err) {
  kix *k = tm_calloc(1, sizeof *k);
  if (!k) return tm_error_nomem(err);
  uint64_t cap = cap_for(expect);
  k->t = alloc_table(cap);
  if (!k->t) {
    tm_free(k);
    return tm_error_nomem(err);
  }
  k->mask = cap - 1;
  *out = k;
  return TM_OK;
}

void tm_kix_free(kix *k) {
  if (!k) return;
  tm_free(k->t);
  tm_free(k);
}

static int grow(kix *k, tm_error *err) {
  uint64_t cap = cap_for(k->n * 2 + 16);
  tm_kix_entry *t = alloc_table(cap);
  if (!t) return tm_error_nomem(err);
  uint64_t mask = cap - 1;
  for (uint64_t i = 0; i <= k->mask; i++) {
    tm_kix_entry *e = &k->t[i];
    if (e->slot >= TM_KIX_TOMB) continue;
    uint64_t p = e->hash & mask;
    while (t[p].slot != TM_KIX_EMPTY) p = (p + 1) & mask;
    t[p] = *e;
  }
  tm_free(k->t);
  k->t = t;
  k->mask = mask;
  k->used = k->n;
  return TM_OK;
}

tm_kix_entry *tm_kix_next(kix *k, uint64_t h, uint64_t *pos) {
  uint64_t p = *pos == TM_KIX_START ? h & k->mask : (*pos + 1) & k->mask;
  for (;;) {
    tm_kix_entry *e = &k->t[p];
    if (e->slot == TM_KIX_EMPTY) return NULL;
    if (e->slot != TM_KIX_TOMB && e->hash == h) {
      *pos = p;
      return e;
    }
    p = (p + 1) & k->mask;
  }
}

int tm_kix_insert(kix *k, uint64_t h, uint32_t slot, uint32_t row, tm_error *err) {
  if ((k->used + 1) * 10 > (k->mask + 1) * 7) TM_TRY(grow(k, err));
  uint64_t p = h & k->mask;
  while (k->t[p].slot < TM_KIX_TOMB) p = (p + 1) & k->mask;
  if (k->t[p].slot == TM_KIX_EMPTY) k->used++;
  k->t[p].hash = h;
  k->t[p].slot = slot;
  k->t[p].row = row;
  k->n++;
  return TM_OK;
}

void tm_kix_remove(kix *k, tm_kix_entry *e) {
  e->slot = TM_KIX_TOMB;
  k->n--;
}

tm_kix_entry *tm_kix_find_loc(kix *k, uint64_t h, uint32_t slot, uint32_t row) {
  uint64_t pos = TM_KIX_START;
  tm_kix_entry *e;
  while ((e = tm_kix_next(k, h, &pos)) != NULL)
    if (e->slot == slot && e->row == row) return e;
  return NULL;
}
