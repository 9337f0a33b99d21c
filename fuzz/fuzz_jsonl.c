/*
 * fuzz_jsonl.c - libFuzzer target: JSON schema inference and reading of
 * arbitrary bytes, as JSON lines and as one top-level array of objects
 * (format/json). Must end in a clean error or a clean read.
 */
#include <stdint.h>

#include "format/json/jsonl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, int json_format) {
  tm_error err;
  tm_input *in;
  if (tm_input_open_memory(&in, "fuzz.jsonl", data, size, false, &err) != TM_OK) return;
  tm_text_options o;
  tm_text_options_init(&o);
  o.batch_rows = 7;
  o.max_record_bytes = 4096;
  o.json_format = json_format;
  tm_schema s;
  tm_schema_init(&s);
  if (tm_jsonl_infer_schema(&s, in, &o, &err) == TM_OK) {
    tm_jsonl_reader *r;
    if (tm_jsonl_reader_open(&r, in, &s, &o, &err) == TM_OK) {
      tm_batch b;
      while (tm_jsonl_reader_next(r, &b, &err) == TM_OK) tm_batch_release(&b);
      tm_jsonl_reader_free(r);
    }
  }
  tm_schema_dispose(&s);
  tm_input_close(in);
}

/* As the file says (AUTO: lines, or one array when it starts with '['), then as an array. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_all(data, size, TM_JSON_AUTO);
  read_all(data, size, TM_JSON_ARRAY);
  return 0;
}
