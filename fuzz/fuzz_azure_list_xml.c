/*
 * fuzz_azure_list_xml.c - libFuzzer target for the Azure response parsers
 * (objstore/azure/azure_xml.c over the shared scanner objstore/xml.c): List
 * Blobs pages and error bodies arrive from the network and must never
 * crash, leak or over-read, whatever the bytes. The corpus in
 * fuzz/corpora/fuzz_azure_list_xml/ is replayed by `make check`.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "objstore/azure/azure_int.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private copy of exactly size bytes, so that any over-read is caught. */
  char *copy = tm_malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  tm_error err;
  tm_azure_list_page page;
  tm_azure_list_page_init(&page);
  if (tm_azure__parse_list(&page, copy, size, &err) == TM_OK) {
    /* Whatever parses must be usable: names are C strings of sane length. */
    for (size_t i = 0; i < page.items.len; i++) {
      size_t n = strlen(page.items.items[i].key);
      if (n == 0 || n > 1024) __builtin_trap();
    }
    if (page.next_marker && !*page.next_marker) __builtin_trap();
  }
  tm_azure_list_page_dispose(&page);
  char code[64], message[256];
  tm_azure__parse_error(copy, size, code, sizeof code, message, sizeof message);
  int64_t t;
  (void)tm_azure__parse_http_date(copy, size, &t);
  tm_free(copy);
  return 0;
}
