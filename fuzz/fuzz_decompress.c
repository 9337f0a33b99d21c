/*
 * fuzz_decompress.c - libFuzzer target: the decompressing input
 * (format/text/compress) under the CSV reader. The first byte picks the
 * codec (gzip, zstd, bzip2, xz); the rest is the compressed file. Must end
 * in a clean error or a clean read, within the 1 MiB output cap.
 */
#include <stdint.h>

#include "format/csv/csv.h"
#include "format/text/compress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const tm_compression codecs[] = {TM_COMPRESSION_GZIP, TM_COMPRESSION_ZSTD,
                                          TM_COMPRESSION_BZIP2, TM_COMPRESSION_XZ};
  if (size < 1) return 0;
  tm_error err;
  tm_input *raw, *in;
  if (tm_input_open_memory(&raw, "fuzz.csv.z", data + 1, size - 1, false, &err) != TM_OK) return 0;
  if (tm_input_open_decompress(&in, raw, codecs[data[0] % 4], (uint64_t)1 << 20, &err) != TM_OK)
    return 0;
  tm_text_options o;
  tm_text_options_init(&o);
  o.batch_rows = 64;
  o.max_record_bytes = 4096;
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
  /* A read behind the position restarts the stream. */
  char buf[16];
  size_t n;
  if (tm_input_read_at(in, 3, buf, sizeof buf, &n, &err) == TM_OK &&
      tm_input_read_at(in, 0, buf, sizeof buf, &n, &err) == TM_OK && n > sizeof buf)
    __builtin_trap();
  tm_input_close(in);
  return 0;
}
