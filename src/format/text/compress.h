/*
 * compress.h - whole-file compression of text files: gzip, zstd, bzip2, xz
 * (format layer).
 *
 * A compressed CSV or JSON file is read through a tm_input that
 * decompresses as it goes: memory is one input chunk plus the codec's
 * window, whatever the file's size. Reads are meant to be sequential (the
 * text scanner's); a read behind the current position restarts the stream
 * and one ahead of it decompresses and drops the bytes between, so any
 * read_at is answered correctly. The decompressed size is not known before
 * the end, so tm_input_size answers UINT64_MAX; a short read is the end.
 *
 * Concatenated streams (several gzip members, zstd frames, bzip2 streams or
 * xz streams back to back, as pigz, pbzip2 and `cat a.gz b.gz` make) read as
 * one. A corrupt or truncated stream is TM_ECORRUPT naming the file; more
 * decompressed bytes than max_bytes is TM_ETOOLARGE (decompression bombs).
 */
#ifndef TM_FORMAT_TEXT_COMPRESS_H
#define TM_FORMAT_TEXT_COMPRESS_H

#include <stdint.h>

#include "io/io.h"

typedef enum tm_compression {
  TM_COMPRESSION_NONE = 0,
  TM_COMPRESSION_GZIP,
  TM_COMPRESSION_ZSTD,
  TM_COMPRESSION_BZIP2,
  TM_COMPRESSION_XZ
} tm_compression;

/**
 * Spice's file_compression_type values, ASCII case-insensitive: gzip, zstd,
 * bzip2, xz, uncompressed (also "" as DataFusion reads it). Anything else
 * is TM_EINVALID naming the value and the allowed ones.
 */
int tm_compression_parse(tm_compression *out, const char *name, tm_error *err) TM_WARN_UNUSED;
/** The value's name ("gzip", ..., "uncompressed"). */
const char *tm_compression_name(tm_compression c);
/**
 * The compression a file name's last extension says (.gz/.gzip, .zst/.zstd,
 * .bz2, .xz), and in *stem_len_out the length of the name without it;
 * TM_COMPRESSION_NONE and the whole length otherwise.
 */
tm_compression tm_compression_of_name(const char *name, size_t *stem_len_out);

/** The default cap: 1024 times the compressed size, and at least 1 GiB. */
uint64_t tm_compression_default_cap(uint64_t compressed_size);

/**
 * Wraps inner (taken, also on failure) in an input that serves its
 * decompressed bytes, at most max_bytes of them (0: no cap). The name is
 * inner's. Release with tm_input_close.
 */
int tm_input_open_decompress(tm_input **out, tm_input *inner, tm_compression c,
                             uint64_t max_bytes, tm_error *err) TM_WARN_UNUSED;

#endif
