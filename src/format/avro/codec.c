/*
 * codec.c - Avro block codecs: null, deflate (raw RFC 1951), snappy (with
 * its CRC32 trailer) and zstandard (format layer, private to the Avro
 * module). See avro_int.h.
 *
 * Every decompressor writes into a tm_buf whose limit is the caller's block
 * limit, so a small hostile block cannot expand without bound.
 */
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "format/avro/avro_int.h"
#include "util/alloc.h"

int tm_avro__codec_lookup(const char *name, tm_avro__codec_id *out, tm_error *err) {
  if (!name || strcmp(name, "null") == 0) {
    *out = TM_AVRO__CODEC_NULL;
  } else if (strcmp(name, "deflate") == 0) {
    *out = TM_AVRO__CODEC_DEFLATE;
  } else if (strcmp(name, "snappy") == 0) {
    *out = TM_AVRO__CODEC_SNAPPY;
  } else if (strcmp(name, "zstandard") == 0) {
    *out = TM_AVRO__CODEC_ZSTD;
  } else {
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "unsupported Avro codec \"%.64s\" (supported: null, deflate, snappy, "
                        "zstandard)",
                        name);
  }
  return TM_OK;
}

static int inflate_raw(const uint8_t *in, size_t in_len, size_t limit, tm_buf *out,
                       tm_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -15) != Z_OK) return tm_error_nomem(err);
  int rc = TM_OK;
  zs.next_in = (Bytef *)(uintptr_t)in;
  size_t left = in_len;
  for (;;) {
    uInt chunk_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
    if (zs.avail_in == 0) {
      zs.avail_in = chunk_in;
      left -= chunk_in;
    }
    size_t room = in_len > 4096 ? in_len : 4096;
    if (room > limit - out->len) room = limit - out->len;
    if (room == 0) {
      rc = tm_error_set(err, TM_ETOOLARGE,
                        "Avro deflate block expands past the %zu-byte limit", limit);
      goto done;
    }
    if (room > (1u << 30)) room = 1u << 30;
    rc = tm_buf_reserve(out, room, err);
    if (rc < 0) goto done;
    zs.next_out = (Bytef *)out->ptr + out->len;
    zs.avail_out = (uInt)room;
    int z = inflate(&zs, Z_NO_FLUSH);
    out->len += room - zs.avail_out;
    out->ptr[out->len] = '\0';
    if (z == Z_STREAM_END) break;
    if (z == Z_BUF_ERROR && zs.avail_in == 0 && left == 0) {
      rc = TM_CORRUPT(err, "Avro deflate block is truncated");
      goto done;
    }
    if (z != Z_OK && z != Z_BUF_ERROR) {
      rc = TM_CORRUPT(err, "Avro deflate block is corrupt (%s)", zs.msg ? zs.msg : "zlib error");
      goto done;
    }
  }
done:
  inflateEnd(&zs);
  return rc;
}

static int snappy_block(const uint8_t *in, size_t in_len, size_t limit, tm_buf *out,
                        tm_error *err) {
  if (in_len < 4) return TM_CORRUPT(err, "Avro snappy block is shorter than its checksum");
  size_t body = in_len - 4;
  size_t n;
  if (snappy_uncompressed_length((const char *)in, body, &n) != SNAPPY_OK) {
    return TM_CORRUPT(err, "Avro snappy block has a bad length header");
  }
  if (n > limit) {
    return tm_error_set(err, TM_ETOOLARGE, "Avro snappy block of %zu bytes exceeds the %zu-byte limit",
                        n, limit);
  }
  TM_TRY(tm_buf_reserve(out, n, err));
  size_t got = n;
  if (snappy_uncompress((const char *)in, body, out->ptr, &got) != SNAPPY_OK || got != n) {
    return TM_CORRUPT(err, "Avro snappy block is corrupt");
  }
  out->len = n;
  out->ptr[n] = '\0';
  uint32_t want = (uint32_t)in[body] << 24 | (uint32_t)in[body + 1] << 16 |
                  (uint32_t)in[body + 2] << 8 | (uint32_t)in[body + 3];
  uint32_t have = (uint32_t)crc32(0L, (const Bytef *)out->ptr, 0);
  size_t done = 0;
  while (done < n) {
    uInt step = n - done > (1u << 30) ? (1u << 30) : (uInt)(n - done);
    have = (uint32_t)crc32(have, (const Bytef *)out->ptr + done, step);
    done += step;
  }
  if (have != want) {
    return TM_CORRUPT(err, "Avro snappy block checksum mismatch (stored %08x, computed %08x)",
                      want, have);
  }
  return TM_OK;
}

/* One call of the streaming decoder into out, within limit; *produced: bytes it wrote. */
static int zstd_step(ZSTD_DCtx *dctx, ZSTD_inBuffer *ib, size_t limit, tm_buf *out,
                     size_t *last, size_t *produced, tm_error *err) {
  size_t room = ZSTD_DStreamOutSize();
  if (room > limit - out->len) room = limit - out->len;
  if (room == 0)
    return tm_error_set(err, TM_ETOOLARGE, "Avro zstandard block expands past the %zu-byte limit",
                        limit);
  TM_TRY(tm_buf_reserve(out, room, err));
  ZSTD_outBuffer ob = {out->ptr + out->len, room, 0};
  *last = ZSTD_decompressStream(dctx, &ob, ib);
  if (ZSTD_isError(*last))
    return TM_CORRUPT(err, "Avro zstandard block is corrupt (%s)", ZSTD_getErrorName(*last));
  out->len += ob.pos;
  out->ptr[out->len] = '\0';
  *produced = ob.pos;
  return TM_OK;
}

static int zstd_block(const uint8_t *in, size_t in_len, size_t limit, tm_buf *out,
                      tm_error *err) {
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  if (!dctx) return tm_error_nomem(err);
  int rc = TM_OK;
  ZSTD_inBuffer ib = {in, in_len, 0};
  size_t last = 1, produced = 0;
  while (rc == TM_OK && ib.pos < ib.size) {
    rc = zstd_step(dctx, &ib, limit, out, &last, &produced, err);
    if (rc == TM_OK && produced == 0 && ib.pos == ib.size) break;
  }
  /* Flush anything still buffered in the decoder. */
  while (rc == TM_OK && last != 0) {
    rc = zstd_step(dctx, &ib, limit, out, &last, &produced, err);
    if (rc == TM_OK && produced == 0) rc = TM_CORRUPT(err, "Avro zstandard block is truncated");
  }
  ZSTD_freeDCtx(dctx);
  return rc;
}

int tm_avro__decompress(tm_avro__codec_id codec, const uint8_t *in, size_t in_len,
                        size_t limit, tm_buf *out, tm_error *err) {
  tm_buf_clear(out);
  switch (codec) {
    case TM_AVRO__CODEC_NULL:
      if (in_len > limit) {
        return tm_error_set(err, TM_ETOOLARGE, "Avro block of %zu bytes exceeds the %zu-byte limit",
                            in_len, limit);
      }
      return tm_buf_append(out, in, in_len, err);
    case TM_AVRO__CODEC_DEFLATE:
      return inflate_raw(in, in_len, limit, out, err);
    case TM_AVRO__CODEC_SNAPPY:
      return snappy_block(in, in_len, limit, out, err);
    case TM_AVRO__CODEC_ZSTD:
      return zstd_block(in, in_len, limit, out, err);
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "unknown Avro codec id %d", (int)codec);
}

int tm_avro__deflate(const uint8_t *in, size_t in_len, tm_buf *out, tm_error *err) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return tm_error_nomem(err);
  int rc = TM_OK;
  if (in_len > (1u << 30)) {
    rc = tm_error_set(err, TM_ETOOLARGE, "Avro block of %zu bytes is too large to deflate",
                      in_len);
    goto done;
  }
  uLong bound = deflateBound(&zs, (uLong)in_len);
  rc = tm_buf_reserve(out, (size_t)bound, err);
  if (rc < 0) goto done;
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)in_len;
  zs.next_out = (Bytef *)out->ptr + out->len;
  zs.avail_out = (uInt)bound;
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
    rc = tm_error_set(err, TM_ERROR, "deflate did not finish");
    goto done;
  }
  out->len += (size_t)bound - zs.avail_out;
  out->ptr[out->len] = '\0';
done:
  deflateEnd(&zs);
  return rc;
}
