/*
 * fuzz_glue_table.c - libFuzzer target for what the AWS Glue client reads
 * from a catalog's GetTable answer (source/glue_catalog.c; issue 18). The
 * input is a response body; parsing must succeed or fail with a message,
 * never crash, leak or hang. A parsed table is used as the Glue source uses
 * it (is it Iceberg, its strings and maps), so every field is touched.
 *
 * Seed corpus (fuzz/corpora/fuzz_glue_table/): GetTable answers for an
 * Iceberg table, Parquet and CSV tables with SerDe parameters, and broken
 * ones (no Table, wrong member types, deep nesting).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/glue_catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_glue_table: %s\n", what);
  abort();
}

static size_t touch(const char *s) { return s ? strlen(s) : 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_glue_table t;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_glue_parse_table((const char *)data, size, &t, &err);
  if (rc != TM_OK) {
    if (!err.message[0]) broken("a parse error without a message");
    return 0;
  }
  size_t n = touch(t.database) + touch(t.name) + touch(t.metadata_location) + touch(t.location) +
             touch(t.input_format) + touch(t.serde) + touch(t.classification);
  for (size_t i = 0; i < t.params.len; i++) n += touch(t.params.items[i].value);
  for (size_t i = 0; i < t.serde_params.len; i++) n += touch(t.serde_params.items[i].value);
  if (tm_glue_table_is_iceberg(&t) && !t.table_type) broken("Iceberg without a table_type");
  tm_glue_table_dispose(&t);
  return n == (size_t)-1;
}
