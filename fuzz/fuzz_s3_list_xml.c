/*
 * fuzz_s3_list_xml.c - libFuzzer target for the S3 response scanner
 * (objstore/s3/s3_xml.c): ListObjectsV2 pages and error bodies arrive from
 * the network and must never crash, leak or over-read, whatever the bytes.
 * The corpus in fuzz/corpora/fuzz_s3_list_xml/ is replayed by `make check`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "objstore/s3/s3_int.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private copy of exactly size bytes, so that any over-read is caught. */
  char *copy = tm_malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  tm_error err;
  tm_s3_list_page page;
  tm_s3_list_page_init(&page);
  if (tm_s3__parse_list(&page, copy, size, &err) == TM_OK) {
    /* Whatever parses must be usable: keys are C strings of sane length. */
    for (size_t i = 0; i < page.items.len; i++) {
      size_t n = strlen(page.items.items[i].key);
      if (n == 0 || n > 1024) __builtin_trap();
    }
    if (page.truncated && (!page.next_token || !*page.next_token)) __builtin_trap();
  }
  tm_s3_list_page_dispose(&page);
  char code[64], message[256], region[32];
  tm_s3__parse_error(copy, size, code, sizeof code, message, sizeof message, region,
                     sizeof region);
  tm_free(copy);
  return 0;
}
