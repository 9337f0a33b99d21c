/*
 * fuzz_tar.c - libFuzzer target for the strict tar reader (format/tar), which
 * reads cayenne acceleration snapshots downloaded from a snapshot location
 * (SPEC C2). Every entry's data is read back to exercise the bounds.
 *
 * Seed corpus (fuzz/corpora/fuzz_tar/): archives written by tidemark's tar
 * writer (one entry, three entries with an empty one, a cayenne-shaped
 * archive), and hand-cut variants (truncated data, no end marker, a symlink
 * entry, a base-256 size).
 */
#include <stddef.h>
#include <stdint.h>

#include "format/tar/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_entry(const tm_tar_entry *e, tm_input *in, void *payload, tm_error *err) {
  (void)payload;
  char buf[4096];
  uint64_t n = e->size < sizeof buf ? e->size : sizeof buf;
  return tm_input_read_exact(in, e->offset, buf, (size_t)n, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_error err;
  tm_input *in = NULL;
  if (tm_input_open_memory(&in, "fuzz.tar", data, size, false, &err) < 0) return 0;
  int rc = tm_tar_read(in, on_entry, NULL, &err);
  (void)rc;
  tm_input_close(in);
  return 0;
}
