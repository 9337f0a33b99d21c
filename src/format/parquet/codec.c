/*
 * codec.c - page compression codecs through Debian's libraries (format
 * layer, parquet): SNAPPY (libsnappy), GZIP (zlib; concatenated members
 * too), ZSTD (libzstd), LZ4 with Hadoop framing and LZ4_RAW (liblz4),
 * BROTLI (libbrotlidec). LZO is not supported.
 *
 * Decompression always targets a buffer of exactly the size the page header
 * promises; producing more or less is TM_ECORRUPT.
 */
#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

enum {
  CODEC_UNCOMPRESSED = 0,
  CODEC_SNAPPY = 1,
  CODEC_GZIP = 2,
  CODEC_LZO = 3,
  CODEC_BROTLI = 4,
  CODEC_LZ4 = 5,
  CODEC_ZSTD = 6,
  CODEC_LZ4_RAW = 7
};

void tm_parquet__codec_ctx_dispose(tm_pq_codec_ctx *c) {
  if (c->zstd_d) ZSTD_freeDCtx(c->zstd_d);
  if (c->zstd_c) ZSTD_freeCCtx(c->zstd_c);
  c->zstd_d = c->zstd_c = NULL;
}

bool tm_parquet__codec_supported(int codec) {
  return codec >= CODEC_UNCOMPRESSED && codec <= CODEC_LZ4_RAW && codec != CODEC_LZO;
}

static int size_mismatch(tm_error *err, const char *codec, size_t got, size_t want) {
  return tm_error_set(err, TM_ECORRUPT, "%s page decompressed to %zu bytes, header says %zu",
                      codec, got, want);
}

static int gzip_inflate(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                        tm_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  /* 15 + 32: accept zlib and gzip headers. */
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return tm_error_set(err, TM_ENOMEM, "zlib init failed");
  zs.next_in = (Bytef *)src;
  zs.avail_in = (uInt)0;
  zs.next_out = dst;
  zs.avail_out = 0;
  size_t in_left = src_len, out_left = dst_len;
  int rc = TM_OK;
  for (;;) {
    if (zs.avail_in == 0 && in_left > 0) {
      uInt chunk = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
      zs.avail_in = chunk;
      in_left -= chunk;
    }
    if (zs.avail_out == 0 && out_left > 0) {
      uInt chunk = out_left > (1u << 30) ? (1u << 30) : (uInt)out_left;
      zs.avail_out = chunk;
      out_left -= chunk;
    }
    int z = inflate(&zs, Z_NO_FLUSH);
    if (z == Z_STREAM_END) {
      /* Another gzip member may follow (concatenated members). */
      if (zs.avail_in == 0 && in_left == 0) break;
      if (inflateReset(&zs) != Z_OK) {
        rc = tm_error_set(err, TM_ECORRUPT, "GZIP stream cannot restart");
        break;
      }
      continue;
    }
    if (z == Z_OK) continue;
    if (z == Z_BUF_ERROR && zs.avail_out == 0 && out_left == 0) {
      rc = tm_error_set(err, TM_ECORRUPT, "GZIP page decompresses to more than %zu bytes",
                        dst_len);
      break;
    }
    rc = tm_error_set(err, TM_ECORRUPT, "GZIP data is corrupt (%s)", zs.msg ? zs.msg : "error");
    break;
  }
  /* total_out restarts with every member: measure the output by position. */
  size_t got = (size_t)(zs.next_out - dst);
  inflateEnd(&zs);
  if (rc == TM_OK && got != dst_len) rc = size_mismatch(err, "GZIP", got, dst_len);
  return rc;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Hadoop's LZ4 framing: blocks of [u32be raw size][u32be compressed size][data]. */
static bool lz4_hadoop(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len) {
  size_t in = 0, out = 0;
  while (in < src_len) {
    if (src_len - in < 8) return false;
    uint32_t raw = be32(src + in), comp = be32(src + in + 4);
    in += 8;
    if (comp > src_len - in || raw > dst_len - out || comp > INT32_MAX || raw > INT32_MAX)
      return false;
    int n = LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)comp, (int)raw);
    if (n < 0 || (uint32_t)n != raw) return false;
    in += comp;
    out += raw;
  }
  return out == dst_len;
}

int tm_parquet__decompress(tm_pq_codec_ctx *c, int codec, const uint8_t *src, size_t src_len,
                           uint8_t *dst, size_t dst_len, tm_error *err) {
  switch (codec) {
    case CODEC_UNCOMPRESSED:
      if (src_len != dst_len) return size_mismatch(err, "uncompressed", src_len, dst_len);
      if (dst_len) memcpy(dst, src, dst_len);
      return TM_OK;
    case CODEC_SNAPPY: {
      size_t n;
      if (snappy_uncompressed_length((const char *)src, src_len, &n) != SNAPPY_OK)
        return tm_error_set(err, TM_ECORRUPT, "SNAPPY data is corrupt");
      if (n != dst_len) return size_mismatch(err, "SNAPPY", n, dst_len);
      size_t out_len = dst_len;
      if (snappy_uncompress((const char *)src, src_len, (char *)dst, &out_len) != SNAPPY_OK ||
          out_len != dst_len)
        return tm_error_set(err, TM_ECORRUPT, "SNAPPY data is corrupt");
      return TM_OK;
    }
    case CODEC_GZIP: return gzip_inflate(src, src_len, dst, dst_len, err);
    case CODEC_ZSTD: {
      if (!c->zstd_d) {
        c->zstd_d = ZSTD_createDCtx();
        if (!c->zstd_d) return tm_error_nomem(err);
      }
      size_t n = ZSTD_decompressDCtx(c->zstd_d, dst, dst_len, src, src_len);
      if (ZSTD_isError(n))
        return tm_error_set(err, TM_ECORRUPT, "ZSTD data is corrupt (%s)", ZSTD_getErrorName(n));
      if (n != dst_len) return size_mismatch(err, "ZSTD", n, dst_len);
      return TM_OK;
    }
    case CODEC_LZ4:
      /* parquet-mr writes Hadoop framing; old parquet-cpp wrote raw blocks
       * under this id. Try the framing first, then a raw block. */
      if (lz4_hadoop(src, src_len, dst, dst_len)) return TM_OK;
      /* fall through */
    case CODEC_LZ4_RAW: {
      if (src_len > INT32_MAX || dst_len > INT32_MAX)
        return tm_error_set(err, TM_ETOOLARGE, "LZ4 page too large");
      int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
      if (n < 0) return tm_error_set(err, TM_ECORRUPT, "LZ4 data is corrupt");
      if ((size_t)n != dst_len) return size_mismatch(err, "LZ4", (size_t)n, dst_len);
      return TM_OK;
    }
    case CODEC_BROTLI: {
      size_t out_len = dst_len;
      BrotliDecoderResult r = BrotliDecoderDecompress(src_len, src, &out_len, dst);
      if (r != BROTLI_DECODER_RESULT_SUCCESS)
        return tm_error_set(err, TM_ECORRUPT, "BROTLI data is corrupt");
      if (out_len != dst_len) return size_mismatch(err, "BROTLI", out_len, dst_len);
      return TM_OK;
    }
    case CODEC_LZO: return tm_error_set(err, TM_EUNSUPPORTED, "LZO compression is not supported");
    default: return tm_error_set(err, TM_ECORRUPT, "unknown compression codec %d", codec);
  }
}

int tm_parquet__compress(tm_pq_codec_ctx *c, int codec, int level, const uint8_t *src,
                         size_t src_len, tm_buf *out, tm_error *err) {
  switch (codec) {
    case CODEC_UNCOMPRESSED: return tm_buf_append(out, src, src_len, err);
    case CODEC_SNAPPY: {
      size_t cap = snappy_max_compressed_length(src_len);
      TM_TRY(tm_buf_reserve(out, cap, err));
      size_t n = cap;
      if (snappy_compress((const char *)src, src_len, out->ptr + out->len, &n) != SNAPPY_OK)
        return tm_error_set(err, TM_ERROR, "SNAPPY compression failed");
      out->len += n;
      return TM_OK;
    }
    case CODEC_GZIP: {
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      if (deflateInit2(&zs, level ? level : 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return tm_error_set(err, TM_ENOMEM, "zlib init failed");
      size_t cap = deflateBound(&zs, (uLong)src_len);
      int rc = tm_buf_reserve(out, cap, err);
      if (rc == TM_OK) {
        zs.next_in = (Bytef *)src;
        zs.avail_in = (uInt)src_len;
        zs.next_out = (Bytef *)out->ptr + out->len;
        zs.avail_out = (uInt)cap;
        if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
          rc = tm_error_set(err, TM_ERROR, "GZIP compression failed");
        else out->len += zs.total_out;
      }
      deflateEnd(&zs);
      return rc;
    }
    case CODEC_ZSTD: {
      if (!c->zstd_c) {
        c->zstd_c = ZSTD_createCCtx();
        if (!c->zstd_c) return tm_error_nomem(err);
      }
      size_t cap = ZSTD_compressBound(src_len);
      TM_TRY(tm_buf_reserve(out, cap, err));
      size_t n = ZSTD_compressCCtx(c->zstd_c, out->ptr + out->len, cap, src, src_len,
                                   level ? level : 3);
      if (ZSTD_isError(n))
        return tm_error_set(err, TM_ERROR, "ZSTD compression failed (%s)", ZSTD_getErrorName(n));
      out->len += n;
      return TM_OK;
    }
    default:
      return tm_error_set(err, TM_EUNSUPPORTED, "writing %s is not supported",
                          tm_parquet_codec_name(codec));
  }
}
