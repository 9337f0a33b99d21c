/* Unit tests for the Parquet page codecs (format/parquet/codec.c): every
 * codec the reader supports decompresses what its library compressed, sizes
 * are enforced, and corrupt input is an error (issue 3). */
#include <brotli/encode.h>
#include <lz4.h>
#include <string.h>
#include <zlib.h>

#include "format/parquet/parquet_int.h"
#include "tm_test.h"
#include "util/alloc.h"

enum { UNCOMPRESSED = 0, SNAPPY = 1, GZIP = 2, LZO = 3, BROTLI = 4, LZ4 = 5, ZSTD = 6, LZ4_RAW = 7 };

static size_t sample(uint8_t *buf, size_t n) {
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)((i * 7) % 13 + (i / 100) % 5);
  return n;
}

TM_TEST(codec_round_trips_through_our_compressor) {
  static uint8_t raw[100000], back[100000];
  sample(raw, sizeof raw);
  int codecs[] = {UNCOMPRESSED, SNAPPY, GZIP, ZSTD};
  tm_pq_codec_ctx ctx = {0};
  tm_error err;
  for (size_t k = 0; k < 4; k++) {
    tm_buf out = TM_BUF_INIT(1 << 24);
    TM_ASSERT_OK(tm_parquet__compress(&ctx, codecs[k], 0, raw, sizeof raw, &out, &err), &err);
    if (codecs[k] != UNCOMPRESSED) TM_ASSERT(out.len < sizeof raw / 2);
    memset(back, 0, sizeof back);
    TM_ASSERT_OK(tm_parquet__decompress(&ctx, codecs[k], (const uint8_t *)out.ptr, out.len, back,
                                        sizeof back, &err), &err);
    TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
    /* A wrong announced size is corrupt. */
    TM_ASSERT_RC(tm_parquet__decompress(&ctx, codecs[k], (const uint8_t *)out.ptr, out.len, back,
                                        sizeof back - 1, &err), TM_ECORRUPT);
    /* Damaged data is corrupt, never a crash. */
    if (codecs[k] != UNCOMPRESSED && out.len > 20) {
      for (size_t i = 5; i < 15; i++) out.ptr[i] ^= 0x5a;
      int rc = tm_parquet__decompress(&ctx, codecs[k], (const uint8_t *)out.ptr, out.len, back,
                                      sizeof back, &err);
      TM_ASSERT(rc == TM_ECORRUPT || (rc == TM_OK && codecs[k] == SNAPPY));
    }
    tm_buf_dispose(&out);
  }
  tm_parquet__codec_ctx_dispose(&ctx);
}

TM_TEST(codec_gzip_concatenated_members) {
  static uint8_t raw[5000], back[5000];
  sample(raw, sizeof raw);
  tm_pq_codec_ctx ctx = {0};
  tm_error err;
  tm_buf out = TM_BUF_INIT(1 << 24);
  TM_ASSERT_OK(tm_parquet__compress(&ctx, GZIP, 0, raw, 2000, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet__compress(&ctx, GZIP, 0, raw + 2000, 3000, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet__decompress(&ctx, GZIP, (const uint8_t *)out.ptr, out.len, back, sizeof back, &err), &err);
  TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
  tm_buf_dispose(&out);
}

TM_TEST(codec_lz4_hadoop_raw_and_brotli) {
  static uint8_t raw[70000], back[70000];
  sample(raw, sizeof raw);
  tm_pq_codec_ctx ctx = {0};
  tm_error err;
  /* LZ4_RAW: one block. */
  int cap = LZ4_compressBound((int)sizeof raw);
  char *blk = tm_malloc((size_t)cap * 2 + 16);
  TM_ASSERT(blk);
  int n = LZ4_compress_default((const char *)raw, blk, (int)sizeof raw, cap);
  TM_ASSERT(n > 0);
  TM_ASSERT_OK(tm_parquet__decompress(&ctx, LZ4_RAW, (const uint8_t *)blk, (size_t)n, back, sizeof back, &err), &err);
  TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
  /* LZ4 (deprecated id) holding a raw block: accepted too. */
  memset(back, 0, sizeof back);
  TM_ASSERT_OK(tm_parquet__decompress(&ctx, LZ4, (const uint8_t *)blk, (size_t)n, back, sizeof back, &err), &err);
  TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
  /* Hadoop framing: two frames of [u32be raw][u32be compressed][block]. */
  uint8_t *framed = tm_malloc((size_t)cap * 2 + 16);
  TM_ASSERT(framed);
  size_t pos = 0;
  size_t halves[2] = {30000, sizeof raw - 30000};
  const uint8_t *src = raw;
  for (int h = 0; h < 2; h++) {
    int m = LZ4_compress_default((const char *)src, (char *)framed + pos + 8, (int)halves[h], cap);
    TM_ASSERT(m > 0);
    uint32_t a = (uint32_t)halves[h], b = (uint32_t)m;
    uint8_t hdr[8] = {(uint8_t)(a >> 24), (uint8_t)(a >> 16), (uint8_t)(a >> 8), (uint8_t)a,
                      (uint8_t)(b >> 24), (uint8_t)(b >> 16), (uint8_t)(b >> 8), (uint8_t)b};
    memcpy(framed + pos, hdr, 8);
    pos += 8 + (size_t)m;
    src += halves[h];
  }
  memset(back, 0, sizeof back);
  TM_ASSERT_OK(tm_parquet__decompress(&ctx, LZ4, framed, pos, back, sizeof back, &err), &err);
  TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
  /* Garbage under LZ4: neither framing nor a block. */
  memset(framed, 0xee, 64);
  TM_ASSERT_RC(tm_parquet__decompress(&ctx, LZ4, framed, 64, back, sizeof back, &err), TM_ECORRUPT);
  /* BROTLI. */
  size_t bl = BrotliEncoderMaxCompressedSize(sizeof raw);
  uint8_t *br = tm_malloc(bl);
  TM_ASSERT(br);
  TM_ASSERT(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, sizeof raw, raw, &bl, br));
  memset(back, 0, sizeof back);
  TM_ASSERT_OK(tm_parquet__decompress(&ctx, BROTLI, br, bl, back, sizeof back, &err), &err);
  TM_ASSERT(memcmp(raw, back, sizeof raw) == 0);
  TM_ASSERT_RC(tm_parquet__decompress(&ctx, BROTLI, br, bl / 2, back, sizeof back, &err), TM_ECORRUPT);
  tm_free(br);
  tm_free(framed);
  tm_free(blk);
  tm_parquet__codec_ctx_dispose(&ctx);
}

TM_TEST(codec_unsupported_and_unknown) {
  tm_pq_codec_ctx ctx = {0};
  tm_error err;
  uint8_t b[4] = {0};
  TM_ASSERT_RC(tm_parquet__decompress(&ctx, LZO, b, 4, b, 4, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "LZO");
  TM_ASSERT_RC(tm_parquet__decompress(&ctx, 99, b, 4, b, 4, &err), TM_ECORRUPT);
  TM_ASSERT(!tm_parquet__codec_supported(LZO));
  TM_ASSERT(tm_parquet__codec_supported(LZ4_RAW));
}
