/*
 * dv.c - Iceberg deletion vectors: the deletion-vector-v1 blob framing and
 * the portable 64-bit Roaring bitmap inside it (see puffin.h).
 */
#include <string.h>
#include <zlib.h>

#include "format/puffin/puffin.h"
#include "util/alloc.h"

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define NO_OFFSET_THRESHOLD 4u
#define ARRAY_MAX 4096u
#define BITSET_BYTES 8192u

static const uint8_t k_dv_magic[4] = {0xD1, 0xD3, 0x39, 0x64};

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* ---- decoding ---------------------------------------------------------------------- */

typedef struct dv_reader {
  const uint8_t *p;
  size_t len, at;
  int64_t max_pos;
  size_t max_n;
  int64_t *v;
  size_t n, cap;
  int64_t last; /* last position emitted, -1 before the first */
} dv_reader;

static bool need(const dv_reader *r, size_t n) { return r->len - r->at >= n; }

static int grow(dv_reader *r, size_t extra, tm_error *err) {
  if (extra > r->max_n - r->n) {
    return tm_error_set(err, TM_ETOOLARGE,
                        "deletion vector holds more than %zu positions", r->max_n);
  }
  if (r->n + extra <= r->cap) return TM_OK;
  size_t cap = r->cap ? r->cap : 256;
  while (cap < r->n + extra) cap = cap > r->max_n / 2 ? r->max_n : cap * 2;
  int64_t *nv = tm_reallocarray(r->v, cap, sizeof *nv);
  if (!nv) return tm_error_nomem(err);
  r->v = nv;
  r->cap = cap;
  return TM_OK;
}

static int emit(dv_reader *r, int64_t pos, tm_error *err) {
  if (pos <= r->last) {
    return TM_CORRUPT(err, "deletion vector positions are not ascending at %lld",
                      (long long)pos);
  }
  if (pos >= r->max_pos) {
    return TM_CORRUPT(err, "deletion vector position %lld is beyond the data file's %lld rows",
                      (long long)pos, (long long)r->max_pos);
  }
  r->v[r->n++] = pos;
  r->last = pos;
  return TM_OK;
}

/* One 32-bit Roaring bitmap (RoaringFormatSpec) for the high 32 bits `key`. */
static int read_bitmap32(dv_reader *r, uint32_t key, tm_error *err) {
  if (!need(r, 4)) return TM_CORRUPT(err, "deletion vector bitmap truncated in its cookie");
  uint32_t cookie = le32(r->p + r->at);
  r->at += 4;
  size_t n;
  const uint8_t *runs = NULL;
  if (cookie == COOKIE_NO_RUN) {
    if (!need(r, 4)) return TM_CORRUPT(err, "deletion vector bitmap truncated in its size");
    uint32_t cnt = le32(r->p + r->at);
    r->at += 4;
    if (cnt > 65536) {
      return TM_CORRUPT(err, "deletion vector bitmap declares %u containers (at most 65536)",
                        cnt);
    }
    n = cnt;
  } else if ((cookie & 0xFFFFu) == COOKIE_RUN) {
    n = (size_t)(cookie >> 16) + 1;
    size_t rb = (n + 7) / 8;
    if (!need(r, rb)) return TM_CORRUPT(err, "deletion vector bitmap truncated in its run flags");
    runs = r->p + r->at;
    r->at += rb;
  } else {
    return TM_CORRUPT(err, "deletion vector bitmap has an unknown cookie %u", cookie);
  }
  if (!need(r, n * 4)) {
    return TM_CORRUPT(err, "deletion vector bitmap truncated in its container headers");
  }
  const uint8_t *desc = r->p + r->at;
  r->at += n * 4;
  if (!runs || n >= NO_OFFSET_THRESHOLD) {
    /* Offsets: containers are read in order, so only their presence matters. */
    if (!need(r, n * 4)) {
      return TM_CORRUPT(err, "deletion vector bitmap truncated in its offset header");
    }
    r->at += n * 4;
  }
  int32_t prev_key = -1;
  for (size_t c = 0; c < n; c++) {
    uint16_t ckey = le16(desc + 4 * c);
    size_t card = (size_t)le16(desc + 4 * c + 2) + 1;
    if ((int32_t)ckey <= prev_key) {
      return TM_CORRUPT(err, "deletion vector containers are not in ascending key order");
    }
    prev_key = ckey;
    int64_t hi = (int64_t)((uint64_t)key << 32 | (uint64_t)ckey << 16);
    bool is_run = runs && (runs[c / 8] >> (c % 8) & 1);
    TM_TRY(grow(r, card, err));
    if (is_run) {
      if (!need(r, 2)) return TM_CORRUPT(err, "deletion vector run container truncated");
      size_t nruns = le16(r->p + r->at);
      r->at += 2;
      if (!need(r, nruns * 4)) return TM_CORRUPT(err, "deletion vector run container truncated");
      size_t got = 0;
      for (size_t k = 0; k < nruns; k++) {
        uint32_t start = le16(r->p + r->at + 4 * k), extra = le16(r->p + r->at + 4 * k + 2);
        if (start + extra > 0xFFFFu || got + extra + 1 > card) {
          return TM_CORRUPT(err, "deletion vector run container does not match its cardinality");
        }
        for (uint32_t x = start; x <= start + extra; x++) TM_TRY(emit(r, hi | x, err));
        got += extra + 1;
      }
      if (got != card) {
        return TM_CORRUPT(err, "deletion vector run container holds %zu values, declares %zu",
                          got, card);
      }
      r->at += nruns * 4;
    } else if (card <= ARRAY_MAX) {
      if (!need(r, card * 2)) {
        return TM_CORRUPT(err, "deletion vector array container truncated");
      }
      for (size_t k = 0; k < card; k++) TM_TRY(emit(r, hi | le16(r->p + r->at + 2 * k), err));
      r->at += card * 2;
    } else {
      if (!need(r, BITSET_BYTES)) {
        return TM_CORRUPT(err, "deletion vector bitset container truncated");
      }
      size_t got = 0;
      for (uint32_t w = 0; w < BITSET_BYTES / 8; w++) {
        uint64_t word = le64(r->p + r->at + 8 * w);
        while (word) {
          if (got == card) {
            return TM_CORRUPT(err, "deletion vector bitset container holds more than its %zu "
                                   "values", card);
          }
          int b = __builtin_ctzll(word);
          TM_TRY(emit(r, hi | (int64_t)(w * 64 + (uint32_t)b), err));
          word &= word - 1;
          got++;
        }
      }
      if (got != card) {
        return TM_CORRUPT(err, "deletion vector bitset container holds %zu values, declares %zu",
                          got, card);
      }
      r->at += BITSET_BYTES;
    }
  }
  return TM_OK;
}

int tm_dv_decode(const uint8_t *blob, size_t len, int64_t max_pos, size_t max_n, int64_t **out,
                 size_t *n_out, tm_error *err) {
  *out = NULL;
  *n_out = 0;
  if (len < 4 + 4 + 8 + 4) {
    return TM_CORRUPT(err, "deletion vector blob of %zu bytes is too short", len);
  }
  uint32_t vlen = be32(blob);
  if ((uint64_t)vlen + 8 != len) {
    return TM_CORRUPT(err, "deletion vector length field %u does not match the blob's %zu bytes",
                      vlen, len);
  }
  if (memcmp(blob + 4, k_dv_magic, 4) != 0) {
    return TM_CORRUPT(err, "deletion vector blob has no D1 D3 39 64 magic");
  }
  uint32_t want = be32(blob + 4 + vlen);
  uint32_t have = (uint32_t)crc32(crc32(0L, Z_NULL, 0), blob + 4, (uInt)vlen);
  if (want != have) {
    return TM_CORRUPT(err, "deletion vector CRC-32 mismatch (stored %08x, computed %08x)", want,
                      have);
  }
  dv_reader r;
  memset(&r, 0, sizeof r);
  r.p = blob + 8;
  r.len = vlen - 4;
  r.max_pos = max_pos;
  r.max_n = max_n;
  r.last = -1;
  int rc = TM_OK;
  uint64_t nb = le64(r.p);
  r.at = 8;
  /* Each bitmap takes at least a key and an 8-byte cookie header. */
  if (nb > (r.len - r.at) / 12) {
    rc = TM_CORRUPT(err, "deletion vector declares %llu bitmaps in %zu bytes",
                    (unsigned long long)nb, r.len);
    goto done;
  }
  int64_t prev = -1;
  for (uint64_t i = 0; i < nb; i++) {
    if (!need(&r, 4)) {
      rc = TM_CORRUPT(err, "deletion vector truncated in bitmap %llu", (unsigned long long)i);
      goto done;
    }
    uint32_t key = le32(r.p + r.at);
    r.at += 4;
    if ((int64_t)key <= prev || key > 0x7FFFFFFFu) {
      rc = TM_CORRUPT(err, "deletion vector bitmap key %u is out of order or negative", key);
      goto done;
    }
    prev = key;
    TM_CHECK(read_bitmap32(&r, key, err));
  }
  if (r.at != r.len) {
    rc = TM_CORRUPT(err, "deletion vector has %zu bytes after its last bitmap", r.len - r.at);
    goto done;
  }
  *out = r.v;
  *n_out = r.n;
  r.v = NULL;
done:
  tm_free(r.v);
  return rc;
}

/* ---- encoding ---------------------------------------------------------------------- */

typedef enum { C_ARRAY, C_BITSET, C_RUN } ctype;

typedef struct container {
  uint16_t key;
  size_t first, card, nruns; /* positions [first, first+card) of the input */
  ctype type;
} container;

static size_t container_bytes(const container *c) {
  return c->type == C_RUN ? 2 + 4 * c->nruns : c->type == C_ARRAY ? 2 * c->card : BITSET_BYTES;
}

static int put_u16(tm_buf *b, uint32_t v, tm_error *err) {
  uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  return tm_buf_append(b, x, 2, err);
}
static int put_u32(tm_buf *b, uint32_t v, tm_error *err) {
  uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  return tm_buf_append(b, x, 4, err);
}
static int put_be32(tm_buf *b, uint32_t v, tm_error *err) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
  return tm_buf_append(b, x, 4, err);
}

/* One 32-bit bitmap: the low 32 bits of pos[0..n), all with the same high 32 bits. */
static int write_bitmap32(const int64_t *pos, size_t n, tm_buf *b, tm_error *err) {
  container *cs = tm_calloc(n < 65536 ? n : 65536, sizeof *cs);
  if (!cs) return tm_error_nomem(err);
  size_t nc = 0;
  bool any_run = false;
  int rc = TM_OK;
  for (size_t i = 0; i < n;) {
    uint16_t key = (uint16_t)((uint64_t)pos[i] >> 16);
    size_t j = i, nruns = 0;
    while (j < n && (uint16_t)((uint64_t)pos[j] >> 16) == key) {
      if (j == i || pos[j] != pos[j - 1] + 1) nruns++;
      j++;
    }
    container *c = &cs[nc++];
    c->key = key;
    c->first = i;
    c->card = j - i;
    c->nruns = nruns;
    c->type = c->card <= ARRAY_MAX ? C_ARRAY : C_BITSET;
    if (2 + 4 * nruns < container_bytes(c)) c->type = C_RUN;
    any_run = any_run || c->type == C_RUN;
    i = j;
  }
  size_t header;
  if (any_run) {
    TM_CHECK(put_u32(b, COOKIE_RUN | (uint32_t)(nc - 1) << 16, err));
    size_t rb = (nc + 7) / 8;
    for (size_t k = 0; k < rb; k++) {
      uint8_t byte = 0;
      for (size_t c = k * 8; c < nc && c < k * 8 + 8; c++) {
        if (cs[c].type == C_RUN) byte |= (uint8_t)(1u << (c % 8));
      }
      TM_CHECK(tm_buf_append(b, &byte, 1, err));
    }
    header = 4 + rb + 4 * nc + (nc >= NO_OFFSET_THRESHOLD ? 4 * nc : 0);
  } else {
    TM_CHECK(put_u32(b, COOKIE_NO_RUN, err));
    TM_CHECK(put_u32(b, (uint32_t)nc, err));
    header = 8 + 8 * nc;
  }
  for (size_t c = 0; c < nc; c++) {
    TM_CHECK(put_u16(b, cs[c].key, err));
    TM_CHECK(put_u16(b, (uint32_t)(cs[c].card - 1), err));
  }
  if (!any_run || nc >= NO_OFFSET_THRESHOLD) {
    size_t off = header;
    for (size_t c = 0; c < nc; c++) {
      TM_CHECK(put_u32(b, (uint32_t)off, err));
      off += container_bytes(&cs[c]);
    }
  }
  for (size_t c = 0; c < nc; c++) {
    const int64_t *v = pos + cs[c].first;
    size_t card = cs[c].card;
    if (cs[c].type == C_ARRAY) {
      for (size_t k = 0; k < card; k++) TM_CHECK(put_u16(b, (uint32_t)(v[k] & 0xFFFF), err));
    } else if (cs[c].type == C_RUN) {
      TM_CHECK(put_u16(b, (uint32_t)cs[c].nruns, err));
      for (size_t k = 0; k < card;) {
        size_t e = k;
        while (e + 1 < card && v[e + 1] == v[e] + 1) e++;
        TM_CHECK(put_u16(b, (uint32_t)(v[k] & 0xFFFF), err));
        TM_CHECK(put_u16(b, (uint32_t)(e - k), err));
        k = e + 1;
      }
    } else {
      void *dst = NULL;
      TM_CHECK(tm_buf_extend(b, BITSET_BYTES, &dst, err));
      uint8_t *bits = dst;
      for (size_t k = 0; k < card; k++) {
        uint32_t x = (uint32_t)(v[k] & 0xFFFF);
        bits[x / 8] |= (uint8_t)(1u << (x % 8));
      }
    }
  }
done:
  tm_free(cs);
  return rc;
}

int tm_dv_encode(const int64_t *pos, size_t n, tm_buf *out, tm_error *err) {
  for (size_t i = 0; i < n; i++) {
    if (pos[i] < 0 || (i && pos[i] <= pos[i - 1])) {
      return tm_error_set(err, TM_EINVALID,
                          "deletion vector positions must be ascending, distinct and >= 0");
    }
  }
  size_t start = out->len;
  TM_TRY(put_be32(out, 0, err)); /* length, patched below */
  TM_TRY(tm_buf_append(out, k_dv_magic, 4, err));
  uint64_t nb = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || (pos[i] >> 32) != (pos[i - 1] >> 32)) nb++;
  }
  uint8_t nb8[8];
  for (int k = 0; k < 8; k++) nb8[k] = (uint8_t)(nb >> (8 * k));
  TM_TRY(tm_buf_append(out, nb8, 8, err));
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && (pos[j] >> 32) == (pos[i] >> 32)) j++;
    TM_TRY(put_u32(out, (uint32_t)(pos[i] >> 32), err));
    TM_TRY(write_bitmap32(pos + i, j - i, out, err));
    i = j;
  }
  size_t vlen = out->len - start - 4;
  if (vlen > UINT32_MAX) {
    return tm_error_set(err, TM_ETOOLARGE, "deletion vector of %zu bytes is too large", vlen);
  }
  uint8_t *p = (uint8_t *)out->ptr + start;
  p[0] = (uint8_t)(vlen >> 24);
  p[1] = (uint8_t)(vlen >> 16);
  p[2] = (uint8_t)(vlen >> 8);
  p[3] = (uint8_t)vlen;
  uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + 4, (uInt)vlen);
  return put_be32(out, crc, err);
}
