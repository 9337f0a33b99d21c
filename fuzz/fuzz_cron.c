/*
 * fuzz_cron.c - libFuzzer target for cron schedules (util/cron.c; Spice's
 * refresh_cron, issue 17). The input is a schedule's text. Parsing must
 * succeed or fail with a message, never crash or hang; an accepted schedule
 * must fire, strictly later, and its next firing must match it again when
 * asked from one second before (the search is consistent with itself).
 *
 * Seed corpus (fuzz/corpora/fuzz_cron/): Spice's documented examples and
 * the specials (L, W, LW, #, nicknames), plus malformed ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cron.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_cron: %s\n", what);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool zoned;
  if (!zoned) {
    setenv("TZ", "America/New_York", 1); /* daylight saving: gaps and repeated hours */
    zoned = true;
  }
  char text[TM_CRON_TEXT_MAX + 64];
  if (size >= sizeof text) size = sizeof text - 1;
  memcpy(text, data, size);
  text[size] = '\0';
  tm_cron c;
  tm_error err;
  tm_error_init(&err);
  if (tm_cron_parse(text, &c, &err) != TM_OK) {
    if (!err.message[0]) broken("a refusal without a message");
    return 0;
  }
  const int64_t after = INT64_C(1796320000); /* 2026-12-03 */
  int64_t next = 0, again = 0;
  if (tm_cron_next(&c, after, &next) != TM_OK) broken("an accepted schedule never fires");
  if (next <= after) broken("next is not after");
  if (tm_cron_next(&c, next - 1, &again) != TM_OK || again != next) broken("the search disagrees with itself");
  return 0;
}
