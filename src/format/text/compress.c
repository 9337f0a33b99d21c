/*
 * compress.c - a decompressing tm_input over zlib, libzstd, libbz2 and
 * liblzma (format layer). See compress.h.
 */
#include "format/text/compress.h"

#include <bzlib.h>
#include <lzma.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#include "util/alloc.h"

#define IN_CHUNK ((size_t)64 << 10)
#define XZ_MEMLIMIT ((uint64_t)256 << 20)

int tm_compression_parse(tm_compression *out, const char *name, tm_error *err) {
  static const struct {
    const char *name;
    tm_compression c;
  } k[] = {{"gzip", TM_COMPRESSION_GZIP},   {"zstd", TM_COMPRESSION_ZSTD},
           {"bzip2", TM_COMPRESSION_BZIP2}, {"xz", TM_COMPRESSION_XZ},
           {"uncompressed", TM_COMPRESSION_NONE}, {"", TM_COMPRESSION_NONE}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcasecmp(name, k[i].name) == 0) {
      *out = k[i].c;
      return TM_OK;
    }
  return tm_error_set(err, TM_EINVALID,
                      "bad file_compression_type '%s' (allowed: gzip, zstd, bzip2, xz, uncompressed)",
                      name);
}

const char *tm_compression_name(tm_compression c) {
  switch (c) {
    case TM_COMPRESSION_GZIP: return "gzip";
    case TM_COMPRESSION_ZSTD: return "zstd";
    case TM_COMPRESSION_BZIP2: return "bzip2";
    case TM_COMPRESSION_XZ: return "xz";
    default: return "uncompressed";
  }
}

tm_compression tm_compression_of_name(const char *name, size_t *stem_len_out) {
  static const struct {
    const char *ext;
    tm_compression c;
  } k[] = {{".gz", TM_COMPRESSION_GZIP},   {".gzip", TM_COMPRESSION_GZIP},
           {".zst", TM_COMPRESSION_ZSTD},  {".zstd", TM_COMPRESSION_ZSTD},
           {".bz2", TM_COMPRESSION_BZIP2}, {".xz", TM_COMPRESSION_XZ}};
  size_t len = strlen(name);
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    size_t el = strlen(k[i].ext);
    if (len > el && strcasecmp(name + len - el, k[i].ext) == 0) {
      *stem_len_out = len - el;
      return k[i].c;
    }
  }
  *stem_len_out = len;
  return TM_COMPRESSION_NONE;
}

uint64_t tm_compression_default_cap(uint64_t compressed_size) {
  uint64_t floor = (uint64_t)1 << 30;
  if (compressed_size > UINT64_MAX / 1024) return UINT64_MAX;
  uint64_t cap = compressed_size * 1024;
  return cap > floor ? cap : floor;
}

typedef struct dz_input {
  tm_input base;
  tm_input *inner;        /* owned */
  tm_compression codec;
  uint64_t in_size;       /* compressed size */
  uint64_t in_off;        /* next compressed offset to read */
  unsigned char *ibuf;    /* owned: IN_CHUNK */
  size_t ilen, ipos;
  unsigned char *scratch; /* owned: for skipping forward */
  uint64_t out_pos;       /* decompressed bytes served or skipped */
  uint64_t max_bytes;
  bool ended;             /* the last stream ended with the input */
  bool open;              /* inside a stream (gzip member, zstd frame, bzip2 stream) */
  bool ready;             /* the codec state below is initialised */
  z_stream z;
  ZSTD_DStream *zs;
  bz_stream bz;
  lzma_stream lz;
} dz_input;

static void codec_end(dz_input *d) {
  if (!d->ready) return;
  switch (d->codec) {
    case TM_COMPRESSION_GZIP: inflateEnd(&d->z); break;
    case TM_COMPRESSION_ZSTD: ZSTD_freeDStream(d->zs); d->zs = NULL; break;
    case TM_COMPRESSION_BZIP2: BZ2_bzDecompressEnd(&d->bz); break;
    case TM_COMPRESSION_XZ: lzma_end(&d->lz); break;
    default: break;
  }
  d->ready = false;
}

static int codec_start(dz_input *d, tm_error *err) {
  codec_end(d);
  int ok = 0;
  switch (d->codec) {
    case TM_COMPRESSION_GZIP:
      memset(&d->z, 0, sizeof d->z);
      ok = inflateInit2(&d->z, 16 + MAX_WBITS) == Z_OK;
      break;
    case TM_COMPRESSION_ZSTD:
      d->zs = ZSTD_createDStream();
      ok = d->zs && !ZSTD_isError(ZSTD_initDStream(d->zs));
      if (!ok && d->zs) ZSTD_freeDStream(d->zs);
      if (!ok) d->zs = NULL;
      break;
    case TM_COMPRESSION_BZIP2:
      memset(&d->bz, 0, sizeof d->bz);
      ok = BZ2_bzDecompressInit(&d->bz, 0, 0) == BZ_OK;
      break;
    case TM_COMPRESSION_XZ: {
      lzma_stream init = LZMA_STREAM_INIT;
      d->lz = init;
      ok = lzma_stream_decoder(&d->lz, XZ_MEMLIMIT, LZMA_CONCATENATED) == LZMA_OK;
      break;
    }
    default: return tm_error_set(err, TM_EINVALID, "%s: no compression to read", d->base.name);
  }
  if (!ok) return tm_error_nomem(err);
  d->ready = true;
  d->open = false;
  return TM_OK;
}

static int corrupt(dz_input *d, const char *why, tm_error *err) {
  return tm_error_set(err, TM_ECORRUPT, "%s: corrupt %s data: %s", d->base.name,
                      tm_compression_name(d->codec), why);
}

static int truncated(dz_input *d, tm_error *err) {
  return tm_error_set(err, TM_ECORRUPT, "%s: the %s data ends early (truncated file)",
                      d->base.name, tm_compression_name(d->codec));
}

/*
 * One decompression step from ibuf into dst[*got..cap). Sets *progress when
 * input was consumed or output produced.
 */
static int step(dz_input *d, unsigned char *dst, size_t cap, size_t *got, bool in_eof,
                bool *progress, tm_error *err) {
  if (cap - *got > ((size_t)1 << 30)) cap = *got + ((size_t)1 << 30); /* fits uInt/unsigned */
  size_t avail_in = d->ilen - d->ipos, before_out = *got;
  size_t used = 0;
  switch (d->codec) {
    case TM_COMPRESSION_GZIP: {
      if (!d->open && avail_in == 0) break;
      d->z.next_in = d->ibuf + d->ipos;
      d->z.avail_in = (uInt)avail_in;
      d->z.next_out = dst + *got;
      d->z.avail_out = (uInt)(cap - *got);
      int r = inflate(&d->z, Z_NO_FLUSH);
      used = avail_in - d->z.avail_in;
      *got = cap - d->z.avail_out;
      if (r == Z_STREAM_END) {
        if (inflateReset(&d->z) != Z_OK) return corrupt(d, "cannot restart", err);
        d->open = false;
      } else if (r == Z_OK) {
        d->open = true;
      } else if (r == Z_BUF_ERROR) {
        if (in_eof && used == 0 && *got == before_out) return truncated(d, err);
      } else if (r == Z_MEM_ERROR) {
        return tm_error_nomem(err);
      } else {
        return corrupt(d, d->z.msg ? d->z.msg : "bad deflate stream", err);
      }
      break;
    }
    case TM_COMPRESSION_ZSTD: {
      if (!d->open && avail_in == 0) break;
      ZSTD_inBuffer in = {d->ibuf + d->ipos, avail_in, 0};
      ZSTD_outBuffer out = {dst, cap, *got};
      size_t r = ZSTD_decompressStream(d->zs, &out, &in);
      if (ZSTD_isError(r)) return corrupt(d, ZSTD_getErrorName(r), err);
      used = in.pos;
      *got = out.pos;
      d->open = r != 0;
      if (d->open && in_eof && used == 0 && *got == before_out) return truncated(d, err);
      break;
    }
    case TM_COMPRESSION_BZIP2: {
      if (!d->open && avail_in == 0) break;
      if (!d->ready) TM_TRY(codec_start(d, err));
      d->bz.next_in = (char *)(d->ibuf + d->ipos);
      d->bz.avail_in = (unsigned)avail_in;
      d->bz.next_out = (char *)(dst + *got);
      d->bz.avail_out = (unsigned)(cap - *got);
      int r = BZ2_bzDecompress(&d->bz);
      used = avail_in - d->bz.avail_in;
      *got = cap - d->bz.avail_out;
      if (r == BZ_STREAM_END) {
        codec_end(d); /* started again if another stream follows */
        d->open = false;
      } else if (r == BZ_OK) {
        d->open = true;
        if (in_eof && used == 0 && *got == before_out) return truncated(d, err);
      } else if (r == BZ_MEM_ERROR) {
        return tm_error_nomem(err);
      } else {
        return corrupt(d, r == BZ_DATA_ERROR_MAGIC ? "not a bzip2 stream" : "bad bzip2 block", err);
      }
      break;
    }
    case TM_COMPRESSION_XZ: {
      d->lz.next_in = d->ibuf + d->ipos;
      d->lz.avail_in = avail_in;
      d->lz.next_out = dst + *got;
      d->lz.avail_out = cap - *got;
      lzma_ret r = lzma_code(&d->lz, in_eof ? LZMA_FINISH : LZMA_RUN);
      used = avail_in - d->lz.avail_in;
      *got = cap - d->lz.avail_out;
      if (r == LZMA_STREAM_END) {
        d->ended = true;
      } else if (r == LZMA_BUF_ERROR) {
        if (in_eof) return truncated(d, err);
      } else if (r == LZMA_MEM_ERROR) {
        return tm_error_nomem(err);
      } else if (r == LZMA_MEMLIMIT_ERROR) {
        return tm_error_set(err, TM_ETOOLARGE, "%s: the xz data needs more than %llu MiB to decode",
                            d->base.name, (unsigned long long)(XZ_MEMLIMIT >> 20));
      } else if (r != LZMA_OK) {
        return corrupt(d, r == LZMA_FORMAT_ERROR ? "not an xz stream" : "bad xz block", err);
      }
      break;
    }
    default: return tm_error_set(err, TM_EINVALID, "%s: no compression to read", d->base.name);
  }
  d->ipos += used;
  *progress = used > 0 || *got > before_out;
  return TM_OK;
}

/* Fills dst with up to cap decompressed bytes; fewer only at the end. */
static int produce(dz_input *d, unsigned char *dst, size_t cap, size_t *got_out, tm_error *err) {
  size_t got = 0;
  int stalls = 0;
  while (got < cap && !d->ended) {
    if (d->ipos == d->ilen && d->in_off < d->in_size) {
      size_t want = d->in_size - d->in_off < IN_CHUNK ? (size_t)(d->in_size - d->in_off) : IN_CHUNK;
      size_t n = 0;
      TM_TRY(tm_input_read_at(d->inner, d->in_off, d->ibuf, want, &n, err));
      if (n == 0) d->in_size = d->in_off; /* shorter than it said */
      d->in_off += n;
      d->ilen = n;
      d->ipos = 0;
    }
    bool in_eof = d->ipos == d->ilen && d->in_off >= d->in_size;
    bool progress = false;
    TM_TRY(step(d, dst, cap, &got, in_eof, &progress, err));
    if (progress) {
      stalls = 0;
      continue;
    }
    if (d->ended) break;
    if (!in_eof) {
      if (d->ipos < d->ilen) return corrupt(d, "the decoder makes no progress", err);
      continue; /* read more input */
    }
    if (!d->open && d->codec != TM_COMPRESSION_XZ) {
      d->ended = true; /* the last stream ended with the input */
      break;
    }
    if (++stalls > 2) return truncated(d, err);
  }
  if (d->max_bytes && (got > d->max_bytes || d->out_pos > d->max_bytes - got))
    return tm_error_set(err, TM_ETOOLARGE,
                        "%s: decompresses to more than %llu bytes (a decompression bomb?)",
                        d->base.name, (unsigned long long)d->max_bytes);
  d->out_pos += got;
  *got_out = got;
  return TM_OK;
}

static int dz_restart(dz_input *d, tm_error *err) {
  d->in_off = 0;
  d->ilen = d->ipos = 0;
  d->out_pos = 0;
  d->ended = false;
  TM_TRY(tm_input_size(d->inner, &d->in_size, err));
  return codec_start(d, err);
}

static int dz_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                      tm_error *err) {
  dz_input *d = (dz_input *)in;
  *n_out = 0;
  if (off < d->out_pos) TM_TRY(dz_restart(d, err));
  while (d->out_pos < off) {
    if (!d->scratch && !(d->scratch = tm_malloc(IN_CHUNK))) return tm_error_nomem(err);
    uint64_t gap = off - d->out_pos;
    size_t got = 0;
    TM_TRY(produce(d, d->scratch, gap < IN_CHUNK ? (size_t)gap : IN_CHUNK, &got, err));
    if (got == 0) return TM_OK; /* off is past the end */
  }
  return produce(d, buf, len, n_out, err);
}

static int dz_size(tm_input *in, uint64_t *out, tm_error *err) {
  (void)in;
  (void)err;
  *out = UINT64_MAX; /* unknown before the end: read until a short read */
  return TM_OK;
}

static void dz_close(tm_input *in) {
  dz_input *d = (dz_input *)in;
  codec_end(d);
  tm_input_close(d->inner);
  tm_free(d->ibuf);
  tm_free(d->scratch);
  tm_input__dispose(&d->base);
  tm_free(d);
}

static const tm_input_vtable k_dz_vt = {TM_INPUT_VTABLE_VERSION, dz_read_at, dz_size, dz_close,
                                        NULL};

int tm_input_open_decompress(tm_input **out, tm_input *inner, tm_compression c,
                             uint64_t max_bytes, tm_error *err) {
  if (c == TM_COMPRESSION_NONE) {
    tm_input_close(inner);
    return tm_error_set(err, TM_EINVALID, "no compression to read");
  }
  dz_input *d = tm_calloc(1, sizeof *d);
  if (!d) {
    tm_input_close(inner);
    return tm_error_nomem(err);
  }
  int rc = tm_input__init(&d->base, &k_dz_vt, tm_input_name(inner), err);
  if (rc < 0) {
    tm_free(d);
    tm_input_close(inner);
    return rc;
  }
  d->inner = inner;
  d->codec = c;
  d->max_bytes = max_bytes;
  d->ibuf = tm_malloc(IN_CHUNK);
  rc = d->ibuf ? dz_restart(d, err) : tm_error_nomem(err);
  if (rc < 0) {
    dz_close(&d->base);
    return rc;
  }
  *out = &d->base;
  return TM_OK;
}
