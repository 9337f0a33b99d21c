/*
 * tar.c - a minimal POSIX ustar writer and a strict reader (format layer).
 * See tar.h.
 *
 * A header block (512 bytes) as written and trusted:
 *   0   name[100]    NUL-terminated (we never use the prefix field)
 *   100 mode[8]      octal, ignored when reading
 *   108 uid[8], 116 gid[8]  ignored
 *   124 size[12]     octal digits (spaces or NULs around them), or base-256
 *                    when the first byte has its high bit set
 *   136 mtime[12]    octal, ignored when reading
 *   148 chksum[8]    octal sum of the header's bytes with this field as spaces
 *   156 typeflag     '0' or NUL: a regular file; anything else unsupported
 *   257 magic[6]     "ustar" NUL (POSIX) or "ustar " (GNU; then version " \0")
 *   345 prefix[155]  must be empty
 * Data follows, padded with zeros to a multiple of 512. Two zero blocks end
 * the archive.
 */
#include "format/tar/tar.h"

#include <stdio.h>
#include <string.h>

static void octal(char *field, size_t width, uint64_t v) {
  /* width-1 digits and a NUL, zero-padded. */
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = (char)('0' + (v & 7));
    v >>= 3;
  }
}

static int size_field(char *field, uint64_t size) {
  if (size < (UINT64_C(1) << 33)) {
    octal(field, 12, size);
    return TM_OK;
  }
  /* base-256: high bit set, big-endian value in the remaining bytes */
  memset(field, 0, 12);
  field[0] = (char)0x80;
  for (int i = 11; i >= 4; i--) {
    field[i] = (char)(size & 0xff);
    size >>= 8;
  }
  return TM_OK;
}

static unsigned checksum(const unsigned char *h) {
  unsigned sum = 0;
  for (int i = 0; i < TM_TAR_BLOCK; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum;
}

int tm_tar_writer_begin(tm_tar_writer *w, const char *path, tm_error *err) {
  memset(w, 0, sizeof *w);
  w->f.fd = -1;
  TM_TRY(tm_atomic_file_begin(&w->f, path, err));
  w->open = true;
  return TM_OK;
}

int tm_tar_writer_add(tm_tar_writer *w, const char *name, const void *data, uint64_t size,
                      int64_t mtime_s, tm_error *err) {
  size_t n = strlen(name);
  if (n == 0 || n > TM_TAR_NAME_MAX || strchr(name, '/'))
    return tm_error_set(err, TM_EINVALID, "tar entry name '%s' is not a plain name of 1..100 bytes",
                        name);
  unsigned char h[TM_TAR_BLOCK];
  memset(h, 0, sizeof h);
  memcpy(h, name, n);
  octal((char *)h + 100, 8, 0644);
  octal((char *)h + 108, 8, 0);
  octal((char *)h + 116, 8, 0);
  TM_TRY(size_field((char *)h + 124, size));
  octal((char *)h + 136, 12, mtime_s > 0 ? (uint64_t)mtime_s : 0);
  h[156] = '0';
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  octal((char *)h + 148, 7, checksum(h));
  h[155] = ' ';
  TM_TRY(tm_atomic_file_write(&w->f, h, sizeof h, err));
  if (size) TM_TRY(tm_atomic_file_write(&w->f, data, (size_t)size, err));
  size_t pad = (size_t)((TM_TAR_BLOCK - size % TM_TAR_BLOCK) % TM_TAR_BLOCK);
  static const unsigned char zeros[TM_TAR_BLOCK];
  if (pad) TM_TRY(tm_atomic_file_write(&w->f, zeros, pad, err));
  return TM_OK;
}

int tm_tar_writer_commit(tm_tar_writer *w, tm_error *err) {
  static const unsigned char zeros[2 * TM_TAR_BLOCK];
  int rc = tm_atomic_file_write(&w->f, zeros, sizeof zeros, err);
  if (rc == TM_OK) rc = tm_atomic_file_commit(&w->f, err);
  else tm_atomic_file_abort(&w->f);
  w->open = false;
  return rc;
}

void tm_tar_writer_abort(tm_tar_writer *w) {
  if (w->open) tm_atomic_file_abort(&w->f);
  w->open = false;
}

/* ---- reading ----------------------------------------------------------------------------- */

static bool all_zero(const unsigned char *b) {
  for (int i = 0; i < TM_TAR_BLOCK; i++)
    if (b[i]) return false;
  return true;
}

/* Parses an octal field: optional leading spaces, digits, then spaces or NULs. */
static bool parse_octal(const unsigned char *f, size_t width, uint64_t *out) {
  size_t i = 0;
  while (i < width && f[i] == ' ') i++;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < width && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (v > (UINT64_MAX >> 3)) return false;
    v = (v << 3) | (uint64_t)(f[i] - '0');
  }
  if (digits == 0) return false;
  for (; i < width; i++)
    if (f[i] != ' ' && f[i] != '\0') return false;
  *out = v;
  return true;
}

static bool parse_size(const unsigned char *f, uint64_t *out) {
  if (f[0] & 0x80) {
    if (f[0] != 0x80 || f[1] || f[2] || f[3]) return false; /* > 2^64 or negative */
    uint64_t v = 0;
    for (int i = 4; i < 12; i++) v = (v << 8) | f[i];
    *out = v;
    return true;
  }
  return parse_octal(f, 12, out);
}

int tm_tar_read(tm_input *in, tm_tar_entry_fn fn, void *payload, tm_error *err) {
  uint64_t total;
  TM_TRY(tm_input_size(in, &total, err));
  uint64_t off = 0;
  unsigned char h[TM_TAR_BLOCK];
  for (;;) {
    if (total - off < TM_TAR_BLOCK)
      return TM_CORRUPT(err, "%s: tar ends at byte %llu without an end marker", tm_input_name(in),
                        (unsigned long long)off);
    TM_TRY(tm_input_read_exact(in, off, h, sizeof h, err));
    if (all_zero(h)) {
      /* The end: a second zero block, or the end of the input. */
      if (total - off >= 2 * TM_TAR_BLOCK) {
        TM_TRY(tm_input_read_exact(in, off + TM_TAR_BLOCK, h, sizeof h, err));
        if (!all_zero(h))
          return TM_CORRUPT(err, "%s: a lone zero block at byte %llu", tm_input_name(in),
                            (unsigned long long)off);
      }
      return TM_OK;
    }
    uint64_t sum;
    if (!parse_octal(h + 148, 8, &sum) || sum != checksum(h))
      return TM_CORRUPT(err, "%s: bad tar header checksum at byte %llu", tm_input_name(in),
                        (unsigned long long)off);
    if (memcmp(h + 257, "ustar", 5) != 0 || (h[262] != '\0' && h[262] != ' '))
      return TM_CORRUPT(err, "%s: not a ustar header at byte %llu", tm_input_name(in),
                        (unsigned long long)off);
    if (h[156] != '0' && h[156] != '\0')
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "%s: tar entry of type '%c' at byte %llu (only regular files)",
                          tm_input_name(in), h[156] >= 32 && h[156] < 127 ? h[156] : '?',
                          (unsigned long long)off);
    if (h[345] != '\0')
      return tm_error_set(err, TM_EUNSUPPORTED, "%s: tar entry with a name prefix at byte %llu",
                          tm_input_name(in), (unsigned long long)off);
    tm_tar_entry e;
    memset(&e, 0, sizeof e);
    size_t n = 0;
    while (n < TM_TAR_NAME_MAX && h[n]) n++;
    if (n == 0)
      return TM_CORRUPT(err, "%s: tar entry without a name at byte %llu", tm_input_name(in),
                        (unsigned long long)off);
    memcpy(e.name, h, n);
    e.name[n] = '\0';
    if (!parse_size(h + 124, &e.size))
      return TM_CORRUPT(err, "%s: bad tar entry size at byte %llu", tm_input_name(in),
                        (unsigned long long)off);
    e.offset = off + TM_TAR_BLOCK;
    uint64_t padded = e.size + (TM_TAR_BLOCK - e.size % TM_TAR_BLOCK) % TM_TAR_BLOCK;
    if (padded < e.size || e.offset > total || padded > total - e.offset)
      return TM_CORRUPT(err, "%s: tar entry '%s' at byte %llu runs past the end", tm_input_name(in),
                        e.name, (unsigned long long)off);
    int rc = fn(&e, in, payload, err);
    if (rc == TM_ITEROVER) return TM_OK;
    TM_TRY(rc);
    off = e.offset + padded;
  }
}
