/* Unit tests for util/hash: tm_hash64, MurmurHash3 (Iceberg bucket), tm_map. */
#include "tm_test.h"
#include "util/alloc.h"
#include "util/hash.h"

TM_TEST(murmur3_iceberg_vectors) {
  /* Iceberg spec appendix B: hash of int 34 (as long, 8 bytes LE) is 2017239379. */
  int64_t v = 34;
  TM_ASSERT_INT_EQ((int32_t)tm_murmur3_32(&v, 8, 0), 2017239379);
  /* "iceberg" as UTF-8 bytes hashes to 1210000089. */
  TM_ASSERT_INT_EQ((int32_t)tm_murmur3_32("iceberg", 7, 0), 1210000089);
}

TM_TEST(hash64_distinguishes_lengths_and_bytes) {
  char buf[64] = {0};
  uint64_t seen[64];
  for (size_t n = 0; n < 64; n++) {
    seen[n] = tm_hash64(buf, n, 0);
    for (size_t k = 0; k < n; k++) TM_ASSERT(seen[k] != seen[n]);
  }
  TM_ASSERT(tm_hash64("abc", 3, 0) != tm_hash64("abd", 3, 0));
  TM_ASSERT(tm_hash64("abc", 3, 0) == tm_hash64("abc", 3, 0));
}

TM_TEST(map_put_get_remove_grow) {
  tm_error err;
  tm_map m;
  tm_map_init(&m);
  char key[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "k%d", i);
    TM_ASSERT_OK(tm_map_puts(&m, key, (void *)(intptr_t)(i + 1), NULL, &err), &err);
  }
  TM_ASSERT_INT_EQ(m.len, 1000);
  for (int i = 0; i < 1000; i += 2) {
    snprintf(key, sizeof key, "k%d", i);
    TM_ASSERT_INT_EQ((intptr_t)tm_map_remove(&m, key, strlen(key)), i + 1);
  }
  for (int i = 0; i < 1000; i++) {
    snprintf(key, sizeof key, "k%d", i);
    bool found;
    void *v = tm_map_get(&m, key, strlen(key), &found);
    TM_ASSERT_INT_EQ(found, i % 2 == 1);
    if (found) TM_ASSERT_INT_EQ((intptr_t)v, i + 1);
  }
  size_t pos = 0, n = 0;
  while (tm_map_next(&m, &pos, NULL, NULL)) n++;
  TM_ASSERT_INT_EQ(n, 500);
  tm_map_dispose(&m, NULL);
}
