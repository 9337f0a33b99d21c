/*
 * puffin.h - Apache Puffin files and Iceberg deletion vectors (format layer).
 *
 * A Puffin file (Iceberg's format/puffin-spec.md) is
 *
 *   Magic Blob1 .. BlobN Footer
 *   Footer = Magic FooterPayload FooterPayloadSize(int32 LE) Flags(4 bytes) Magic
 *
 * with Magic = "PFA1" (50 46 41 31). The footer payload is UTF-8 JSON
 * {"blobs": [BlobMetadata...], "properties": {...}}, LZ4-compressed (one LZ4
 * frame with its content size) when bit 0 of the first flag byte is set.
 * A BlobMetadata carries type, fields, snapshot-id, sequence-number, offset,
 * length, an optional compression-codec ("lz4" or "zstd", one frame with its
 * content size) and optional string properties.
 *
 * The reader trusts nothing: the footer size, every blob's offset and length
 * are checked against the file (blobs lie between the leading magic and the
 * footer), payloads and decompressed sizes are capped, and every error names
 * the file. tm_puffin_open reads only the head magic and the footer; a blob is
 * read on demand.
 *
 * A deletion vector (`deletion-vector-v1` blob, Iceberg v3) is
 *
 *   length (4 bytes BE: magic + vector) | D1 D3 39 64 | vector | CRC-32 (4 bytes BE,
 *   of magic + vector)
 *
 * where the vector is a Roaring bitmap in the "portable" 64-bit layout: the
 * number of 32-bit bitmaps (8 bytes LE), then per bitmap, by ascending key,
 * the key (the high 32 bits, 4 bytes LE) and a 32-bit Roaring bitmap in the
 * RoaringFormatSpec layout (cookie 12346 or 12347, descriptive header,
 * optional offset header, array / bitset / run containers). tm_dv_decode
 * checks every count against the bytes present, keys and values strictly
 * ascending, declared cardinalities against the containers, positions against
 * the data file's row count, and caps the number of positions it expands.
 * The codec is tidemark's own (docs/DEPENDENCIES.md says why).
 */
#ifndef TM_FORMAT_PUFFIN_H
#define TM_FORMAT_PUFFIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/error.h"

#define TM_PUFFIN_MAGIC "PFA1"
/* The largest footer payload read (compressed or not), and blob size served. */
#define TM_PUFFIN_FOOTER_MAX ((size_t)16 << 20)
#define TM_PUFFIN_BLOB_MAX ((size_t)1 << 30)
/* The most positions one deletion vector may expand to (8 bytes each). */
#define TM_DV_MAX_POSITIONS ((size_t)1 << 27)

#define TM_PUFFIN_DV_TYPE "deletion-vector-v1"

typedef struct tm_puffin_blob {
  const char *type;
  const int32_t *fields;
  size_t n_fields;
  int64_t snapshot_id, sequence_number;
  int64_t offset, length;
  const char *codec; /* NULL: uncompressed, else "lz4" or "zstd" (others refused on read) */
  const char *const *prop_keys;
  const char *const *prop_vals;
  size_t n_props;
} tm_puffin_blob;

typedef struct tm_puffin_file {
  char *name; /* owned, for errors */
  uint64_t size;
  tm_puffin_blob *blobs;
  size_t n_blobs;
  const char *const *prop_keys;
  const char *const *prop_vals;
  size_t n_props;
  tm_input *in; /* owned */
  tm_arena arena;
} tm_puffin_file;

/* Opens a Puffin file over `in` (taken over, closed by tm_puffin_close even on error). */
int tm_puffin_open(tm_puffin_file **out, tm_input *in, tm_error *err) TM_WARN_UNUSED;
void tm_puffin_close(tm_puffin_file *pf);

/* The blob at exactly (offset, length), or NULL. */
const tm_puffin_blob *tm_puffin_find_blob(const tm_puffin_file *pf, int64_t offset,
                                          int64_t length);
/* A blob property, or NULL. */
const char *tm_puffin_blob_prop(const tm_puffin_blob *b, const char *key);

/* Reads a blob's bytes into `out` (cleared first), decompressed. */
int tm_puffin_read_blob(tm_puffin_file *pf, const tm_puffin_blob *b, tm_buf *out,
                        tm_error *err) TM_WARN_UNUSED;

/* ---- writing ------------------------------------------------------------------ */

typedef struct tm_puffin_writer {
  tm_buf out;    /* the file so far */
  tm_buf blobs;  /* footer JSON of the blobs so far */
  size_t n_blobs;
} tm_puffin_writer;

int tm_puffin_writer_init(tm_puffin_writer *w, tm_error *err) TM_WARN_UNUSED;
/*
 * Appends one uncompressed blob; props is n_props key/value pairs
 * (keys[i], vals[i]). Sets *offset and *length of the blob in the file.
 */
int tm_puffin_writer_add(tm_puffin_writer *w, const char *type, const int32_t *fields,
                         size_t n_fields, int64_t snapshot_id, int64_t sequence_number,
                         const char *const *keys, const char *const *vals, size_t n_props,
                         const void *data, size_t len, int64_t *offset, int64_t *length,
                         tm_error *err) TM_WARN_UNUSED;
/* Appends the footer (uncompressed, file property created-by); the file is w->out. */
int tm_puffin_writer_finish(tm_puffin_writer *w, const char *created_by,
                            tm_error *err) TM_WARN_UNUSED;
void tm_puffin_writer_dispose(tm_puffin_writer *w);

/* ---- deletion vectors ------------------------------------------------------- */

/*
 * Decodes a deletion-vector-v1 blob into ascending positions (tm_malloc'd
 * *out, *n_out; NULL when empty). Positions must be < max_pos (the data
 * file's row count; pass INT64_MAX when unknown); at most max_n are expanded.
 * A violation is TM_ECORRUPT; too many positions TM_ETOOLARGE.
 */
int tm_dv_decode(const uint8_t *blob, size_t len, int64_t max_pos, size_t max_n,
                 int64_t **out, size_t *n_out, tm_error *err) TM_WARN_UNUSED;

/*
 * Encodes ascending, distinct, non-negative positions as a deletion-vector-v1
 * blob appended to out. Containers are array, bitset or run, whichever is
 * smallest.
 */
int tm_dv_encode(const int64_t *pos, size_t n, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

#endif
