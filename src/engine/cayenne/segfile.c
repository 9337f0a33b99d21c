/*
 * segfile.c - cayenne segment files: writing and mapping back (engine layer).
 * The format is described in cayenne_int.h and docs/FORMATS.md.
 *
 * A segment is written once, in one sequential pass: header, column buffers
 * (each at a multiple of 64 bytes so that fixed-width values are usable in
 * place once mapped), directory, then zero padding to a multiple of 4 KiB
 * (direct I/O). The file is then mapped read-only; readers use the page cache
 * directly and nothing is decoded.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/cayenne/cayenne_int.h"
#include "io/io.h"
#include "util/alloc.h"
#include "util/hash.h"

#define N_BUFS 5

static const uint8_t k_zeros[64];

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The buffers of a column, in file order, with their lengths. */
static void column_buffers(const tm_ccol *c, int64_t n_rows, const void *ptr[N_BUFS],
                           uint64_t len[N_BUFS]) {
  memset(len, 0, sizeof(uint64_t) * N_BUFS);
  for (int i = 0; i < N_BUFS; i++) ptr[i] = NULL;
  uint64_t n = (uint64_t)n_rows;
  if (c->validity) ptr[0] = c->validity, len[0] = (n + 7) / 8;
  ptr[1] = c->values;
  switch (c->enc) {
    case TM_CENC_FIXED: len[1] = n * tm_type_byte_width(&c->type); break;
    case TM_CENC_BOOL: len[1] = (n + 7) / 8; break;
    case TM_CENC_VAR:
      len[1] = (n + 1) * 4;
      ptr[2] = c->data, len[2] = c->data_len;
      break;
    default:
      len[1] = n * c->code_width;
      ptr[3] = c->dict_off, len[3] = ((uint64_t)c->dict_len + 1) * 4;
      ptr[4] = c->dict_data, len[4] = c->dict_data_len;
      break;
  }
}

/*
 * A staging writer: bytes are copied into a page-aligned buffer and written
 * in large chunks, with O_DIRECT when the file system allows it. Direct I/O
 * keeps the write-back of big segments out of the page cache, whose flush
 * speed varies with every other writer on the machine; the commit still
 * fdatasyncs (sizes and block allocation). Without O_DIRECT the same chunks
 * go through the page cache and their write-back starts at once.
 */
#define STAGE_BYTES ((size_t)4 << 20)
#define DIRECT_ALIGN 4096

typedef struct stager {
  int fd;
  bool direct;
  uint8_t *raw;   /* owned allocation */
  uint8_t *buf;   /* DIRECT_ALIGN-aligned inside raw */
  size_t used;
  uint64_t written;
  const char *path;
} stager;

static int stage_flush(stager *w, bool final, tm_error *err) {
  size_t n = w->used;
  if (final && w->direct && n % DIRECT_ALIGN) {
    size_t pad = DIRECT_ALIGN - n % DIRECT_ALIGN;
    memset(w->buf + n, 0, pad);
    n += pad;
  }
  size_t done = 0;
  while (done < n) {
    ssize_t r = tm_io_write(w->fd, w->buf + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EINVAL && w->direct) {
        /* The file system took O_DIRECT at open but not for writes: go buffered. */
        int fl = fcntl(w->fd, F_GETFL);
        if (fl >= 0 && fcntl(w->fd, F_SETFL, fl & ~O_DIRECT) == 0) {
          w->direct = false;
          continue;
        }
      }
      return tm_error_set(err, TM_EIO, "%s: %s", w->path, strerror(errno));
    }
    done += (size_t)r;
  }
  w->written += n;
  w->used = 0;
  if (!w->direct) sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  return TM_OK;
}

static int stage_put(stager *w, const void *p, size_t n, tm_error *err) {
  const uint8_t *src = p;
  while (n > 0) {
    size_t room = STAGE_BYTES - w->used;
    size_t k = n < room ? n : room;
    if (src) memcpy(w->buf + w->used, src, k);
    else memset(w->buf + w->used, 0, k);
    w->used += k;
    if (src) src += k;
    n -= k;
    if (w->used == STAGE_BYTES) TM_TRY(stage_flush(w, false, err));
  }
  return TM_OK;
}

int tm_cay_segment_write(const char *path, const tm_cseg *s, int *fd_out, uint64_t *size_out,
                         uint64_t *checksum_out, tm_error *err) {
  int rc = TM_OK;
  size_t dir_len = s->n_cols * TM_CAY_SEG_DIR_ENTRY;
  uint8_t *dir = tm_calloc(dir_len ? dir_len : 1, 1);
  stager w;
  memset(&w, 0, sizeof w);
  w.fd = -1;
  w.path = path;
  w.raw = tm_malloc(STAGE_BYTES + DIRECT_ALIGN);
  if (!dir || !w.raw) {
    rc = tm_error_nomem(err);
    goto done;
  }
  w.buf = w.raw + (DIRECT_ALIGN - (uintptr_t)w.raw % DIRECT_ALIGN) % DIRECT_ALIGN;
  /* Lay the file out first: the header and directory precede nothing they describe. */
  uint64_t off = TM_CAY_SEG_HEADER, checksum = 0x7ca7e5e9;
  for (size_t c = 0; c < s->n_cols; c++) {
    const tm_ccol *col = &s->cols[c];
    const void *ptr[N_BUFS];
    uint64_t len[N_BUFS];
    column_buffers(col, s->n_rows, ptr, len);
    uint8_t *d = dir + c * TM_CAY_SEG_DIR_ENTRY;
    d[0] = (uint8_t)col->type.id;
    d[1] = col->enc;
    d[2] = col->code_width;
    d[3] = (uint8_t)col->type.unit;
    d[4] = col->type.utc;
    d[5] = col->type.uuid;
    put_u32(d + 8, (uint32_t)col->type.precision);
    put_u32(d + 12, (uint32_t)col->type.scale);
    put_u32(d + 16, (uint32_t)col->type.width);
    put_u32(d + 20, col->dict_len);
    put_u64(d + 24, (uint64_t)col->null_count);
    for (int b = 0; b < N_BUFS; b++) {
      if (len[b] == 0) continue;
      off += (64 - off % 64) % 64;
      put_u64(d + 32 + b * 16, off);
      put_u64(d + 40 + b * 16, len[b]);
      checksum = tm_hash64(ptr[b], (size_t)len[b], checksum);
      off += len[b];
    }
  }
  off += (64 - off % 64) % 64;
  uint64_t dir_off = off;
  checksum = tm_hash64(dir, dir_len, checksum);
  uint8_t h[TM_CAY_SEG_HEADER];
  memset(h, 0, sizeof h);
  memcpy(h, TM_CAY_SEG_MAGIC, 8);
  put_u32(h + 8, TM_CAY_SEG_VERSION);
  put_u32(h + 12, (uint32_t)s->n_cols);
  put_u64(h + 16, (uint64_t)s->n_rows);
  put_u64(h + 24, dir_off);
  put_u64(h + 32, dir_len);
  put_u64(h + 40, s->id);
  put_u64(h + 48, tm_hash64(dir, dir_len, 0xd1c));
  w.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0644);
  w.direct = w.fd >= 0;
  if (w.fd < 0 && errno == EINVAL)
    w.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (w.fd < 0) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
    goto done;
  }
  /* Stream: header, buffers in directory order with their padding, directory. */
  TM_CHECK(stage_put(&w, h, sizeof h, err));
  uint64_t pos = TM_CAY_SEG_HEADER;
  for (size_t c = 0; c < s->n_cols; c++) {
    const void *ptr[N_BUFS];
    uint64_t len[N_BUFS];
    column_buffers(&s->cols[c], s->n_rows, ptr, len);
    for (int b = 0; b < N_BUFS; b++) {
      if (len[b] == 0) continue;
      uint64_t at = get_u64(dir + c * TM_CAY_SEG_DIR_ENTRY + 32 + b * 16);
      TM_CHECK(stage_put(&w, NULL, (size_t)(at - pos), err));
      TM_CHECK(stage_put(&w, ptr[b], (size_t)len[b], err));
      pos = at + len[b];
    }
  }
  TM_CHECK(stage_put(&w, NULL, (size_t)(dir_off - pos), err));
  TM_CHECK(stage_put(&w, dir, dir_len, err));
  TM_CHECK(stage_flush(&w, true, err));
  *fd_out = w.fd;
  w.fd = -1;
  *size_out = w.written;
  *checksum_out = checksum;
done:
  if (w.fd >= 0) {
    close(w.fd);
    unlink(path);
  }
  tm_free(w.raw);
  tm_free(dir);
  return rc;
}

/* ---- opening ---------------------------------------------------------------------------- */

static int bad(tm_error *err, const char *path, const char *what) {
  return TM_CORRUPT(err, "%s: %s", path, what);
}

int tm_cay_segment_open(const char *path, const tm_schema *schema, uint64_t id,
                        uint64_t expect_size, uint64_t expect_checksum, bool verify,
                        tm_cseg **out, tm_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return tm_error_set(err, errno == ENOENT ? TM_ENOTFOUND : TM_EIO, "%s: %s", path,
                        strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(e));
  }
  uint64_t size = (uint64_t)st.st_size;
  if (size != expect_size || size < TM_CAY_SEG_HEADER) {
    close(fd);
    return bad(err, path, "size differs from the manifest");
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return tm_error_set(err, TM_EIO, "%s: mmap: %s", path, strerror(errno));
  int rc = TM_OK;
  const uint8_t *m = map;
  tm_cseg *s = tm_calloc(1, sizeof *s);
  if (!s) {
    munmap(map, (size_t)size);
    return tm_error_nomem(err);
  }
  s->refs = 1;
  s->map = map;
  s->map_len = (size_t)size;
  s->file_size = size;
  s->id = id;
  if (memcmp(m, TM_CAY_SEG_MAGIC, 8) != 0 || get_u32(m + 8) != TM_CAY_SEG_VERSION) {
    rc = bad(err, path, "not a cayenne segment of a known version");
    goto done;
  }
  uint64_t n_cols = get_u32(m + 12), n_rows = get_u64(m + 16);
  uint64_t dir_off = get_u64(m + 24), dir_len = get_u64(m + 32);
  if (n_cols != schema->n_cols || get_u64(m + 40) != id || n_rows > ((uint64_t)1 << 31) ||
      dir_len != n_cols * TM_CAY_SEG_DIR_ENTRY || dir_off > size || dir_len > size - dir_off ||
      dir_off % 8 != 0) {
    rc = bad(err, path, "header does not match the dataset");
    goto done;
  }
  if (get_u64(m + 48) != tm_hash64(m + dir_off, (size_t)dir_len, 0xd1c)) {
    rc = bad(err, path, "directory checksum mismatch");
    goto done;
  }
  s->n_rows = (int64_t)n_rows;
  s->n_cols = (size_t)n_cols;
  s->cols = tm_calloc(n_cols ? (size_t)n_cols : 1, sizeof *s->cols);
  if (!s->cols) {
    rc = tm_error_nomem(err);
    goto done;
  }
  uint64_t checksum = 0x7ca7e5e9;
  for (size_t c = 0; c < n_cols; c++) {
    const uint8_t *d = m + dir_off + c * TM_CAY_SEG_DIR_ENTRY;
    tm_ccol *col = &s->cols[c];
    const tm_type *want = &schema->cols[c].type;
    col->type = *want;
    col->enc = d[1];
    col->code_width = d[2];
    col->dict_len = get_u32(d + 20);
    col->null_count = (int64_t)get_u64(d + 24);
    bool type_ok = d[0] == want->id && d[3] == (uint8_t)want->unit && d[4] == want->utc &&
                   d[5] == want->uuid && (int32_t)get_u32(d + 8) == want->precision &&
                   (int32_t)get_u32(d + 12) == want->scale && (int32_t)get_u32(d + 16) == want->width;
    if (!type_ok || col->null_count < 0 || (uint64_t)col->null_count > n_rows) {
      rc = bad(err, path, "column directory does not match the schema");
      goto done;
    }
    const uint8_t *ptr[N_BUFS];
    uint64_t len[N_BUFS];
    for (int b = 0; b < N_BUFS; b++) {
      uint64_t o = get_u64(d + 32 + b * 16), l = get_u64(d + 40 + b * 16);
      if (l && (o > size || l > size - o || o % 64 != 0)) {
        rc = bad(err, path, "a column buffer lies outside the file");
        goto done;
      }
      ptr[b] = l ? m + o : NULL;
      len[b] = l;
      if (l && verify) checksum = tm_hash64(ptr[b], (size_t)l, checksum);
    }
    /* Each encoding needs exactly its buffers, of exactly their sizes. */
    uint64_t want_values;
    bool ok = (col->null_count == 0) == (len[0] == 0) && (len[0] == 0 || len[0] == (n_rows + 7) / 8);
    bool is_var = tm_type_is_var(want);
    switch (col->enc) {
      case TM_CENC_FIXED:
        want_values = n_rows * tm_type_byte_width(want);
        ok = ok && !is_var && want->id != TM_TYPE_BOOL && tm_type_byte_width(want) > 0 &&
             len[2] == 0 && len[3] == 0 && len[4] == 0;
        break;
      case TM_CENC_BOOL:
        want_values = (n_rows + 7) / 8;
        ok = ok && want->id == TM_TYPE_BOOL && len[2] == 0 && len[3] == 0 && len[4] == 0;
        break;
      case TM_CENC_VAR:
        want_values = (n_rows + 1) * 4;
        ok = ok && is_var && len[3] == 0 && len[4] == 0 && len[2] > 0;
        break;
      case TM_CENC_DICT:
        want_values = n_rows * col->code_width;
        ok = ok && is_var && (col->code_width == 1 || col->code_width == 2 || col->code_width == 4) &&
             col->dict_len > 0 && len[2] == 0 && len[3] == ((uint64_t)col->dict_len + 1) * 4;
        break;
      default: ok = false; want_values = 0;
    }
    if (!ok || len[1] != want_values || (n_rows > 0 && len[1] == 0 && want_values > 0)) {
      rc = bad(err, path, "column buffers have wrong sizes");
      goto done;
    }
    col->validity = ptr[0];
    col->values = ptr[1] ? (const void *)ptr[1] : (const void *)k_zeros;
    col->data = ptr[2];
    col->data_len = len[2];
    col->dict_off = (const int32_t *)ptr[3];
    col->dict_data = ptr[4];
    col->dict_data_len = len[4];
    col->zone.row_count = (int64_t)n_rows;
    col->zone.null_count = col->null_count;
    /* Fixed-width and boolean columns are safe to read in place at once. */
    col->checked = (col->enc == TM_CENC_VAR || col->enc == TM_CENC_DICT) ? 0 : 1;
  }
  if (verify && tm_hash64(m + dir_off, (size_t)dir_len, checksum) != expect_checksum) {
    rc = bad(err, path, "file checksum mismatch");
    goto done;
  }
  *out = s;
  s = NULL;
done:
  if (s) tm_cseg_release(s);
  return rc;
}
