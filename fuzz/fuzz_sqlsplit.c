/*
 * fuzz_sqlsplit.c - libFuzzer target for the `tidemark sql` statement
 * splitter (cli/sqlsplit.c, issue 17). The input is SQL text as a pipe or a
 * terminal hands it over. Fed whole and fed in pieces of 1 to 7 bytes (the
 * first input byte picks the size), it must give the same statements; each
 * is non-empty with no blank at either end, and nothing is pending after
 * the end of the input. A NUL byte is refused (the text before it is
 * split).
 *
 * Seed corpus (fuzz/corpora/fuzz_sqlsplit/): the quoting and comment forms
 * of the unit tests, and unterminated ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sqlsplit.h"
#include "util/alloc.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_sqlsplit: %s\n", what);
  abort();
}

static bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Every statement of text fed in pieces of chunk bytes, each followed by a NUL, into out. */
static void split(const char *text, size_t n, size_t chunk, tm_buf *out) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, (size_t)1 << 20);
  char *stmt = NULL;
  for (size_t at = 0; at < n; at += chunk) {
    size_t len = n - at < chunk ? n - at : chunk;
    if (tm_sqlsplit_feed(&s, text + at, len, &err) != TM_OK)
      broken("a feed under the limit failed");
    int rc;
    while ((rc = tm_sqlsplit_next(&s, &stmt, &err)) == TM_OK) {
      size_t k = strlen(stmt);
      if (!k || blank(stmt[0]) || blank(stmt[k - 1])) broken("an empty or untrimmed statement");
      if (tm_buf_append(out, stmt, k + 1, &err) != TM_OK) broken("out of memory");
      tm_free(stmt);
    }
    if (rc != TM_ITEROVER) broken("next failed");
  }
  if (tm_sqlsplit_finish(&s, &stmt, &err) == TM_OK) {
    if (tm_buf_append(out, stmt, strlen(stmt) + 1, &err) != TM_OK) broken("out of memory");
    tm_free(stmt);
  }
  if (tm_sqlsplit_pending(&s)) broken("pending after the end of the input");
  tm_sqlsplit_dispose(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  size_t chunk = (size_t)(data[0] % 7) + 1;
  const char *text = (const char *)data + 1;
  size_t n = size - 1;
  const char *nul = memchr(text, '\0', n);
  if (nul) { /* refused as a whole; the text before it is split below */
    tm_sqlsplit s;
    tm_error err;
    tm_sqlsplit_init(&s, (size_t)1 << 20);
    if (tm_sqlsplit_feed(&s, text, n, &err) != TM_EINVALID || s.buf.len)
      broken("a NUL byte was not refused");
    tm_sqlsplit_dispose(&s);
    n = (size_t)(nul - text);
  }
  tm_buf whole = TM_BUF_INIT((size_t)4 << 20), pieces = TM_BUF_INIT((size_t)4 << 20);
  split(text, n, n ? n : 1, &whole);
  split(text, n, chunk, &pieces);
  if (whole.len != pieces.len || (whole.len && memcmp(whole.ptr, pieces.ptr, whole.len) != 0))
    broken("pieces split differently from the whole text");
  tm_buf_dispose(&whole);
  tm_buf_dispose(&pieces);
  return 0;
}
