/*
 * fuzz_parquet_footer.c - libFuzzer target: a whole Parquet file from memory
 * (format layer). Exercises the magic and footer checks, the Thrift decoder,
 * the schema walk, nested fields' types and member ids, statistics and a
 * bounded scan of every flat column.
 * Seeds: fuzz/corpora/fuzz_parquet_footer/ (small files written by DuckDB
 * and by tidemark's writer; see fuzz/corpora/README.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet/parquet.h"
#include "io/io.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_error err;
  tm_input *in;
  if (tm_input_open_memory(&in, "fuzz.parquet", data, size, false, &err) < 0) return 0;
  tm_parquet_file *f;
  if (tm_parquet_open(&f, in, NULL, &err) < 0) return 0;
  size_t nf = tm_parquet_num_fields(f);
  size_t *cols = tm_calloc(nf ? nf : 1, sizeof *cols);
  size_t n = 0;
  for (size_t i = 0; i < nf; i++)
    if (!tm_parquet_field_at(f, i)->unsupported) cols[n++] = i;
  for (size_t g = 0; g < tm_parquet_num_row_groups(f) && g < 64; g++) {
    for (size_t i = 0; i < nf; i++) {
      tm_col_stats st;
      tm_parquet_column_stats(f, g, i, &st);
    }
    for (size_t l = 0; l < tm_parquet_num_leaves(f) && l < 256; l++) {
      tm_parquet_chunk_info ci;
      if (tm_parquet_chunk_info_at(f, g, l, &ci, &err) < 0) continue;
    }
  }
  /* Nested fields: their native type and their members' field ids (a hostile schema tree
   * must give exactly one id per member, never more). */
  for (size_t i = 0; i < nf && i < 256; i++) {
    if (!tm_parquet_field_at(f, i)->nested) continue;
    tm_type t;
    bool nullable;
    if (tm_parquet_nested_type(f, i, &t, &nullable, &err) != TM_OK) continue;
    size_t slots = tm_type_id_slots(&t);
    int32_t *ids = tm_calloc(slots + 1, sizeof *ids);
    if (!ids) continue;
    ids[slots] = INT32_MIN; /* a guard: the ids fill slots entries, not one more */
    if (tm_parquet_nested_ids(f, i, &t, ids, &err) != TM_OK || ids[slots] != INT32_MIN) abort();
    tm_free(ids);
  }
  tm_schema schema;
  tm_schema_init(&schema);
  if (tm_parquet_schema(f, &schema, &err) == TM_OK) tm_schema_dispose(&schema);
  if (cols) {
    tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = n;
    o.batch_rows = 1024;
    tm_parquet_scan *s;
    if (tm_parquet_scan_new(&s, f, &o, &err) == TM_OK) {
      tm_batch b;
      tm_batch_init(&b);
      /* Bounded: a footer may claim billions of rows. */
      for (int k = 0; k < 64 && tm_parquet_scan_next(s, &b, &err) == TM_OK; k++)
        tm_batch_release(&b);
      tm_batch_release(&b);
      tm_parquet_scan_free(s);
    }
  }
  tm_free(cols);
  tm_parquet_close(f);
  return 0;
}
