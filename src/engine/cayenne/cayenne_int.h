/*
 * cayenne_int.h - cayenne's on-disk formats (engine layer, private).
 *
 * A dataset folder holds:
 *   LOCK                  flock()ed by the process that has the acceleration open
 *   MANIFEST              the published state; replaced only by atomic rename
 *   seg-<id:016x>.tmc     immutable segment files named by the manifest
 * Anything else named seg-*.tmc, and MANIFEST.tmp.* leftovers, belong to no
 * published state and are removed at open (a crash mid-commit leaves them).
 *
 * Segment file (all integers little-endian; docs/FORMATS.md "cayenne segments"):
 *   0   "TMCAYSEG"                magic
 *   8   u32 version (1)           12  u32 n_cols
 *   16  u64 n_rows                24  u64 dir_offset
 *   32  u64 dir_len               40  u64 segment id
 *   48  u64 dir checksum          56  u64 zero
 *   64  column buffers, each starting at a multiple of 64
 *   dir_offset: n_cols records of SEG_DIR_ENTRY bytes:
 *     u8 type id, u8 encoding, u8 code width, u8 unit, u8 utc, u8 uuid, u16 zero,
 *     i32 precision, i32 scale, i32 width, u32 dict_len,
 *     i64 null_count,
 *     5 x (u64 offset, u64 length): validity, values, data, dict offsets, dict data
 *   (a length of 0 means the buffer is absent);
 *   then zeros up to a multiple of 4096 bytes (the file is written with direct I/O).
 * The file checksum chains tm_hash64 over every buffer, then the directory.
 *
 * Trust: files are written by this process's code; at open the loader checks
 * sizes, bounds and the directory checksum (cheap), and the first reader of
 * a string column checks its offsets and codes (tm_ccol_check). The whole-file
 * checksum is verified only with verify_checksums.
 */
#ifndef TM_ENGINE_CAYENNE_CAYENNE_INT_H
#define TM_ENGINE_CAYENNE_CAYENNE_INT_H

#include "engine/columnar/columnar.h"

#define TM_CAY_SEG_MAGIC "TMCAYSEG"
#define TM_CAY_SEG_VERSION 1
#define TM_CAY_SEG_HEADER 64
#define TM_CAY_SEG_DIR_ENTRY 120
#define TM_CAY_MANIFEST "MANIFEST"
#define TM_CAY_MANIFEST_MAX ((size_t)1 << 30)

/**
 * Writes segment s into path (created, must not exist), leaving the data on
 * its way to disk (sync_file_range) but not yet durable: *fd_out stays open
 * for the commit's fdatasync. Returns the size and checksum.
 */
int tm_cay_segment_write(const char *path, const tm_cseg *s, int *fd_out, uint64_t *size_out,
                         uint64_t *checksum_out, tm_error *err) TM_WARN_UNUSED;

/**
 * Maps a segment file and checks it against the schema and the manifest's
 * size (and checksum when verify). Zone maps are left empty (the manifest
 * holds them). Errors: TM_ENOTFOUND, TM_ECORRUPT, TM_EIO.
 */
int tm_cay_segment_open(const char *path, const tm_schema *schema, uint64_t id,
                        uint64_t expect_size, uint64_t expect_checksum, bool verify,
                        tm_cseg **out, tm_error *err) TM_WARN_UNUSED;

/* ---- manifest ---------------------------------------------------------------------
 *
 * MANIFEST (little-endian):
 *   "TMCAYMAN" magic, u32 version (1), u32 zero,
 *   u64 generation, u64 next segment id,
 *   str schema (tm_engine__schema_encode), str options fingerprint,
 *   u32 n state pairs, then (str key, str value) each,
 *   u32 n segments, then per segment:
 *     u64 id, u64 n_rows, u64 file size, u64 file checksum,
 *     per column: u8 flags (1 has_min, 2 has_max), i64 null_count, [min], [max]
 *       (a value: 1 byte bool, 8 bytes int/uint/float/temporal, 16 decimal,
 *        or str for byte types),
 *     str deletion set (CRoaring portable serialization; empty: none),
 *   u64 checksum (tm_hash64 of every byte before it), "TMCAYEND".
 * str is u32 length + bytes.
 */

typedef struct tm_cay_manifest_seg {
  uint64_t id, n_rows, file_size, checksum;
  tm_col_stats *zones;   /* owned, n_cols; byte payloads point into the manifest bytes */
  const char *del;       /* serialized deletion set in the manifest bytes, or NULL */
  size_t del_len;
} tm_cay_manifest_seg;

typedef struct tm_cay_manifest {
  uint64_t generation, next_seg_id;
  tm_strview schema_text, options_text; /* into the manifest bytes */
  tm_kv state;                          /* owned */
  tm_cay_manifest_seg *segs;            /* owned */
  size_t n_segs;
} tm_cay_manifest;

/** Serializes a snapshot into out (the schema text and options given). */
int tm_cay_manifest_encode(tm_buf *out, const tm_csnap *s, const char *schema_text,
                           const char *options_text, uint64_t next_seg_id, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Parses manifest bytes (which must outlive m). n_cols comes from the schema
 * text (decoded by the caller first); pass SIZE_MAX to learn it here only to
 * read the header. TM_ECORRUPT naming the problem.
 */
int tm_cay_manifest_decode(tm_cay_manifest *m, const char *data, size_t len,
                           const tm_schema *schema, tm_error *err) TM_WARN_UNUSED;
/** Reads only the schema text of a manifest (to decode the schema before the rest). */
int tm_cay_manifest_schema(const char *data, size_t len, tm_strview *schema_text, tm_error *err)
    TM_WARN_UNUSED;
void tm_cay_manifest_dispose(tm_cay_manifest *m);

#endif
