/*
 * fuzz_avro.c - libFuzzer target for the Avro container reader and datum
 * decoder (format/avro). The input is a whole container file; every record
 * is decoded and rendered, and each value is re-encoded with the writer
 * schema to exercise the encoder on whatever the decoder accepted.
 *
 * Seed corpus (fuzz/corpora/fuzz_avro/): small containers written by
 * tidemark's own Avro writer (null and deflate codecs; records with unions,
 * maps, arrays, enums, fixed and decimals; an Iceberg manifest-list-shaped
 * record), plus hand-cut variants (bad magic, truncated block, bad sync).
 */
#include <stddef.h>
#include <stdint.h>

#include "format/avro/avro.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_error err;
  tm_input *in = NULL;
  tm_avro_reader *r = NULL;
  tm_avro_limits lim;
  tm_avro_limits_default(&lim);
  lim.max_block_bytes = (size_t)4 << 20;
  lim.max_record_bytes = (size_t)4 << 20;
  lim.max_meta_bytes = (size_t)1 << 20;
  if (tm_input_open_memory(&in, "fuzz.avro", data, size, false, &err) < 0) return 0;
  if (tm_avro_reader_open(&r, in, &lim, &err) == TM_OK) {
    tm_buf text = TM_BUF_INIT((size_t)16 << 20);
    tm_buf enc = TM_BUF_INIT((size_t)16 << 20);
    const tm_avro_value *v;
    int n = 0;
    while (n++ < 10000 && tm_avro_reader_next(r, &v, &err) == TM_OK) {
      tm_buf_clear(&text);
      tm_buf_clear(&enc);
      if (tm_avro_value_to_text(&text, v, &err) < 0) continue;
      if (tm_avro_encode(&enc, tm_avro_reader_schema(r), v, &err) < 0) continue;
    }
    tm_buf_dispose(&text);
    tm_buf_dispose(&enc);
  }
  tm_avro_reader_free(r);
  tm_input_close(in);
  return 0;
}
