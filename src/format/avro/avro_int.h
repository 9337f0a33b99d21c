/*
 * avro_int.h - helpers shared by the Avro module's files (format layer,
 * private to src/format/avro/).
 *
 * On-disk format trusted by the reader (Avro 1.x object container file):
 *   magic     4 bytes "Obj\x01"
 *   metadata  map<bytes>: blocks of (zigzag varint count, [byte size if count
 *             < 0], count x (string key, bytes value)), ended by count 0;
 *             "avro.schema" (JSON, required), "avro.codec" (default "null")
 *   sync      16 bytes
 *   blocks    repeated: varint object count (>= 0), varint byte size (>= 0,
 *             <= max_block_bytes), that many bytes of (compressed) datums,
 *             then the 16 sync bytes again. Snappy blocks end with the
 *             big-endian CRC32 of the uncompressed bytes.
 * Every count and size is checked against the bytes that remain.
 */
#ifndef TM_FORMAT_AVRO_AVRO_INT_H
#define TM_FORMAT_AVRO_AVRO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "format/avro/avro.h"
#include "util/buf.h"
#include "util/error.h"

/** Zigzag varint at *p (at most 10 bytes), advancing *p. TM_ECORRUPT if bad. */
int tm_avro__read_long(const uint8_t **p, const uint8_t *end, int64_t *out, tm_error *err)
    TM_WARN_UNUSED;

typedef enum tm_avro__codec_id {
  TM_AVRO__CODEC_NULL = 0,
  TM_AVRO__CODEC_DEFLATE,
  TM_AVRO__CODEC_SNAPPY,
  TM_AVRO__CODEC_ZSTD
} tm_avro__codec_id;

/** Maps a codec name to its id; TM_EUNSUPPORTED naming the codec otherwise. */
int tm_avro__codec_lookup(const char *name, tm_avro__codec_id *out, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Decompresses one block into out (cleared first), at most limit bytes.
 * TM_ECORRUPT for bad data or checksum, TM_ETOOLARGE past limit.
 */
int tm_avro__decompress(tm_avro__codec_id codec, const uint8_t *in, size_t in_len,
                        size_t limit, tm_buf *out, tm_error *err) TM_WARN_UNUSED;
/** Raw deflate of in, appended to out. */
int tm_avro__deflate(const uint8_t *in, size_t in_len, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
