/*
 * fuzz_csv.c - libFuzzer target: CSV schema inference and reading of
 * arbitrary bytes (format/csv). Must end in a clean error or a clean read.
 * Each input is read twice: as RFC 4180 CSV, and with a tab delimiter, "'"
 * quotes and a "\" escape (csv_delimiter, csv_quote, csv_escape).
 */
#include <stdint.h>

#include "format/csv/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, char delimiter, char quote, char escape) {
  tm_error err;
  tm_input *in;
  if (tm_input_open_memory(&in, "fuzz.csv", data, size, false, &err) != TM_OK) return;
  tm_text_options o;
  tm_text_options_init(&o);
  o.batch_rows = 7;
  o.max_record_bytes = 4096;
  o.delimiter = delimiter;
  o.quote = quote;
  o.escape = escape;
  tm_schema s;
  tm_schema_init(&s);
  if (tm_csv_infer_schema(&s, in, &o, &err) == TM_OK) {
    tm_csv_reader *r;
    if (tm_csv_reader_open(&r, in, &s, &o, &err) == TM_OK) {
      tm_batch b;
      while (tm_csv_reader_next(r, &b, &err) == TM_OK) tm_batch_release(&b);
      tm_csv_reader_free(r);
    }
  }
  tm_schema_dispose(&s);
  tm_input_close(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_all(data, size, ',', '"', 0);
  read_all(data, size, '\t', '\'', '\\');
  return 0;
}
