/*
 * fuzz_noop_stamp.c - libFuzzer target: the no-op stamp's parser
 * (util/noop.c) over arbitrary bytes, as read and with a valid "end" line
 * appended so that the fuzzer gets past the checksum into the lines. Must
 * accept or refuse cleanly; it never touches the file system.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/hash.h"
#include "util/noop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_noop_info info;
  (void)tm_noop_parse((const char *)data, size, &info);
  if (size > TM_NOOP_MAX_STAMP_BYTES - 64) return 0;
  char *text = tm_malloc(size + 64);
  if (!text) return 0;
  memcpy(text, data, size);
  uint64_t sum = tm_hash64(text, size, 0);
  int k = snprintf(text + size, 64, "end %016" PRIx64 "\n", sum);
  if (k > 0 && tm_noop_parse(text, size + (size_t)k, &info)) {
    /* Accepted: what it counted is in the text. */
    if (info.body_end > size || info.n_lines == 0) __builtin_trap();
  }
  tm_free(text);
  return 0;
}
