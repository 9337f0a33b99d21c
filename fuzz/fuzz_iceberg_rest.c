/*
 * fuzz_iceberg_rest.c - libFuzzer target for what the Iceberg REST catalog
 * client reads from a catalog (source/iceberg_rest.c; issue 17): the token
 * endpoint's answer and loadTable's answer with the S3 settings derived from
 * its config and storage-credentials. The first byte picks the parser (even:
 * a token answer, odd: a loadTable answer, read for the files of
 * s3://b/t/data/ and of s3a://other/); the rest is the response body.
 * Parsing must succeed or fail with a message, never crash, leak or hang,
 * and an accepted token or key must be safe in a header line.
 *
 * Seed corpus (fuzz/corpora/fuzz_iceberg_rest/): token answers (bearer with
 * expiry, N_A, broken ones) and loadTable answers with vended keys in config
 * and in storage-credentials, and malformed ones.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/iceberg_rest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_iceberg_rest: %s\n", what);
  abort();
}

/* A value that goes into a header line: no control characters. */
static void header_safe(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) broken("a control character in a header value");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  tm_error err;
  tm_error_init(&err);
  if (data[0] % 2 == 0) {
    tm_iceberg_rest_token t;
    if (tm_iceberg_rest_parse_token(body, len, &t, &err) != TM_OK) {
      if (!err.message[0]) broken("a token error without a message");
      if (t.access_token) broken("a token kept after an error");
      return 0;
    }
    if (!t.access_token || !*t.access_token || strlen(t.access_token) > 8192) broken("a bad token accepted");
    for (const char *p = t.access_token; *p; p++)
      if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) broken("a token that breaks a header");
    tm_iceberg_rest_token_dispose(&t);
    return 0;
  }
  tm_iceberg_rest_table t;
  if (tm_iceberg_rest_parse_table(body, len, "fuzz", &t, &err) != TM_OK) {
    if (!err.message[0]) broken("a table error without a message");
    return 0;
  }
  static const char *const where[] = {"s3://b/t/data/x.parquet", "s3a://other/x", "abfs://c/x"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    tm_iceberg_rest_s3 s3;
    tm_error_init(&err);
    if (tm_iceberg_rest_s3_settings(&t, where[i], &s3, &err) != TM_OK) {
      if (!err.message[0]) broken("an S3 settings error without a message");
      if (s3.creds.access_key[0]) broken("keys kept after an error");
      continue;
    }
    if (!s3.creds.access_key[0] != !s3.creds.secret_key[0]) broken("a key without its secret");
    header_safe(s3.creds.access_key);
    header_safe(s3.creds.secret_key);
    header_safe(s3.creds.session_token);
    header_safe(s3.endpoint);
    header_safe(s3.region);
    if (s3.path_style < -1 || s3.path_style > 1) broken("a path style out of range");
  }
  tm_iceberg_rest_table_dispose(&t);
  return 0;
}
