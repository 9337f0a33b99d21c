/*
 * fuzz_cayenne.c - libFuzzer target for cayenne's file readers
 * (engine/cayenne): the manifest decoder and the segment loader with the
 * column validation that runs before a query reads a string column.
 *
 * The first input byte picks the reader: even, the rest is a MANIFEST
 * (its schema is decoded first, then the body against it, then each
 * deletion set); odd, the rest is a segment file of the schema below (loaded,
 * every column validated, every cell of valid columns read). Either must end
 * in a clean error or a clean read.
 *
 * Checksums would stop almost every mutation at the door, so the target
 * recomputes them (the manifest's trailing checksum, the segment's directory
 * checksum) before parsing: the fuzzer then reaches the structure checks.
 *
 * Seed corpus (fuzz/corpora/fuzz_cayenne/): manifests and segments written by
 * the cayenne engine (see the corpora README).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/cayenne/cayenne_int.h"
#include "util/alloc.h"
#include "util/hash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The schema of the seed segments: id int64, ts timestamp(ms, UTC), tag utf8, ok bool. */
static void seed_schema(tm_schema *s) {
  tm_schema_init(s);
  tm_error err;
  if (tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err) ||
      tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MILLI, true), true, 2, &err) ||
      tm_schema_add(s, "tag", tm_type_of(TM_TYPE_UTF8), true, 3, &err) ||
      tm_schema_add(s, "ok", tm_type_of(TM_TYPE_BOOL), true, 4, &err))
    tm_schema_dispose(s);
}

static void fuzz_manifest(char *data, size_t size) {
  tm_error err;
  tm_strview text;
  if (size >= 16) {
    uint64_t sum = tm_hash64(data, size - 16, 0x3a4f);
    memcpy(data + size - 16, &sum, 8);
  }
  if (tm_cay_manifest_schema(data, size, &text, &err) != TM_OK) return;
  tm_schema s;
  tm_schema_init(&s);
  if (tm_engine__schema_decode(&s, text.ptr, text.len, &err) == TM_OK) {
    tm_cay_manifest m;
    if (tm_cay_manifest_decode(&m, data, size, &s, &err) == TM_OK) {
      for (size_t i = 0; i < m.n_segs; i++) {
        if (!m.segs[i].del) continue;
        roaring_bitmap_t *bm = roaring_bitmap_portable_deserialize_safe(m.segs[i].del, m.segs[i].del_len);
        if (bm) roaring_bitmap_free(bm);
      }
      tm_cay_manifest_dispose(&m);
    }
  }
  tm_schema_dispose(&s);
}

static void fuzz_segment(uint8_t *data, size_t size) {
  if (size >= 64) {
    uint64_t off, len;
    memcpy(&off, data + 24, 8);
    memcpy(&len, data + 32, 8);
    if (off <= size && len <= size - off) {
      uint64_t sum = tm_hash64(data + off, (size_t)len, 0xd1c);
      memcpy(data + 48, &sum, 8);
    }
  }
  char path[] = "/tmp/tm-fuzz-cayenne-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return;
  bool ok = write(fd, data, size) == (ssize_t)size;
  close(fd);
  tm_schema s;
  seed_schema(&s);
  tm_cseg *seg = NULL;
  tm_error err;
  uint64_t id = 0;
  if (size >= 48) memcpy(&id, data + 40, 8); /* the loader checks the header's id against it */
  if (ok && s.n_cols == 4 &&
      tm_cay_segment_open(path, &s, id, size, 0, false, &seg, &err) == TM_OK) {
    for (size_t c = 0; c < seg->n_cols; c++) {
      const tm_ccol *col = &seg->cols[c];
      if (tm_ccol_check(col, "fuzz", &err) != TM_OK) continue;
      for (int64_t r = 0; r < seg->n_rows; r++) {
        tm_value v;
        tm_ccol_get(col, r, &v);
      }
    }
    tm_cseg_release(seg);
  }
  tm_schema_dispose(&s);
  unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t *copy = tm_malloc(size);
  if (!copy) return 0;
  memcpy(copy, data, size);
  if (copy[0] % 2 == 0) fuzz_manifest((char *)copy + 1, size - 1);
  else fuzz_segment(copy + 1, size - 1);
  tm_free(copy);
  return 0;
}
