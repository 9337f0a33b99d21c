/*
 * encoding.c - Parquet's integer encodings: the RLE / bit-packed hybrid
 * (levels, dictionary indices, booleans), legacy BIT_PACKED levels,
 * DELTA_BINARY_PACKED, and IEEE half floats (format layer, parquet).
 *
 * Every decoder reads from a byte range it does not own and checks each run
 * header, width and length against the bytes left. Bit unpacking uses one
 * unaligned 64-bit load per value while at least 8 bytes remain, and a byte
 * loop at the tail, so it never reads past the range.
 */
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

static int enc_corrupt(tm_error *err, int line, const char *what) {
  return tm_error__corrupt(err, __FILE__, line, "%s", what);
}
#define CORRUPT(err, what) enc_corrupt((err), __LINE__, (what))

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Bits [bit_pos, bit_pos + w) of the little-endian bit stream p[0..len),
 * w <= 64; the caller has checked that they lie inside the range. */
static inline uint64_t get_bits(const uint8_t *p, size_t len, uint64_t bit_pos, int w) {
  if (w == 0) return 0;
  size_t byte = (size_t)(bit_pos >> 3);
  int shift = (int)(bit_pos & 7);
  uint64_t mask = w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
  if (w + shift <= 64 && byte + 8 <= len) return (load64(p + byte) >> shift) & mask;
  /* Slow path: assemble up to 9 bytes. */
  uint64_t lo = 0, hi = 0;
  size_t need = (size_t)((shift + w + 7) / 8);
  for (size_t i = 0; i < need && i < 8; i++) lo |= (uint64_t)p[byte + i] << (8 * i);
  if (need > 8) hi = p[byte + 8];
  uint64_t v = lo >> shift;
  if (shift && need > 8) v |= hi << (64 - shift);
  return v & mask;
}

/* ---- RLE / bit-packed hybrid -------------------------------------------- */

void tm_parquet__rle_init(tm_pq_rle *d, const uint8_t *p, size_t len, int bit_width) {
  memset(d, 0, sizeof *d);
  d->p = p;
  d->end = p + len;
  d->bit_width = bit_width;
}

static int read_uleb32(const uint8_t **pp, const uint8_t *end, uint32_t *out) {
  uint64_t v = 0;
  const uint8_t *p = *pp;
  for (int shift = 0; shift < 35; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (v > UINT32_MAX) return -1;
      *out = (uint32_t)v;
      *pp = p;
      return 0;
    }
  }
  return -1;
}

static int next_run(tm_pq_rle *d, tm_error *err) {
  uint32_t header;
  if (d->p >= d->end) return CORRUPT(err, "RLE data ends before all values were read");
  if (read_uleb32(&d->p, d->end, &header) < 0) return CORRUPT(err, "bad RLE run header");
  uint32_t count = header >> 1;
  if (count == 0) return CORRUPT(err, "RLE run of length 0");
  int bw = d->bit_width;
  if (header & 1) {
    if (count > (UINT32_MAX >> 3)) return CORRUPT(err, "bit-packed run too long");
    uint64_t bytes = (uint64_t)count * (uint64_t)bw;
    size_t left = (size_t)(d->end - d->p);
    /* The last run may be cut short: only the values actually present count. */
    if (bytes > left) bytes = left;
    d->packed = true;
    d->run_start = d->p;
    d->run_bytes = (uint32_t)bytes;
    d->bit_pos = 0;
    d->run_left = count * 8;
    if (bw > 0) {
      uint64_t avail = bytes * 8 / (uint64_t)bw;
      if (avail < d->run_left) d->run_left = (uint32_t)avail;
      if (d->run_left == 0) return CORRUPT(err, "bit-packed run ends before its first value");
    }
    d->p += bytes;
  } else {
    int nbytes = (bw + 7) / 8;
    if (d->end - d->p < nbytes) return CORRUPT(err, "RLE run value passes the end");
    uint32_t v = 0;
    for (int i = 0; i < nbytes; i++) v |= (uint32_t)d->p[i] << (8 * i);
    d->p += nbytes;
    if (bw < 32 && (v >> bw) != 0) return CORRUPT(err, "RLE value wider than its bit width");
    d->packed = false;
    d->value = v;
    d->run_left = count;
  }
  return TM_OK;
}

int tm_parquet__rle_get(tm_pq_rle *d, uint32_t *out, size_t n, tm_error *err) {
  while (n > 0) {
    if (d->run_left == 0) TM_TRY(next_run(d, err));
    size_t k = n < d->run_left ? n : d->run_left;
    if (d->packed) {
      int bw = d->bit_width;
      const uint8_t *p = d->run_start;
      size_t len = d->run_bytes;
      uint64_t pos = d->bit_pos;
      if (bw == 0) {
        memset(out, 0, k * sizeof *out);
      } else {
        uint32_t mask = bw == 32 ? 0xffffffffu : ((1u << bw) - 1);
        size_t i = 0;
        /* Fast loop while a full 8-byte load stays inside the run. */
        while (i < k && (pos >> 3) + 8 <= len) {
          out[i++] = (uint32_t)(load64(p + (pos >> 3)) >> (pos & 7)) & mask;
          pos += (uint64_t)bw;
        }
        for (; i < k; i++) {
          out[i] = (uint32_t)get_bits(p, len, pos, bw);
          pos += (uint64_t)bw;
        }
      }
      d->bit_pos = pos;
    } else {
      uint32_t v = d->value;
      for (size_t i = 0; i < k; i++) out[i] = v;
    }
    d->run_left -= (uint32_t)k;
    out += k;
    n -= k;
  }
  return TM_OK;
}

/* Sets bits [off, off + n) of bits. */
static void set_bit_range(uint8_t *bits, int64_t off, size_t n) {
  if (n == 0) return;
  int64_t end = off + (int64_t)n;
  while (off < end && (off & 7)) {
    bits[off >> 3] |= (uint8_t)(1u << (off & 7));
    off++;
  }
  int64_t full = (end - off) >> 3;
  if (full > 0) {
    memset(bits + (off >> 3), 0xff, (size_t)full);
    off += full * 8;
  }
  while (off < end) {
    bits[off >> 3] |= (uint8_t)(1u << (off & 7));
    off++;
  }
}

int tm_parquet__rle_validity(tm_pq_rle *d, uint8_t *bits, int64_t bit_off, size_t n,
                             size_t *valid_out, tm_error *err) {
  size_t valid = 0;
  if (d->bit_width != 1) return CORRUPT(err, "definition levels of unexpected bit width");
  while (n > 0) {
    if (d->run_left == 0) TM_TRY(next_run(d, err));
    size_t k = n < d->run_left ? n : d->run_left;
    if (d->packed) {
      const uint8_t *p = d->run_start;
      uint64_t pos = d->bit_pos;
      size_t i = 0;
      /* Whole source bytes while both sides allow it. */
      if ((pos & 7) == 0 && ((bit_off) & 7) == 0) {
        size_t whole = k / 8;
        memcpy(bits + (bit_off >> 3), p + (pos >> 3), whole);
        for (size_t b = 0; b < whole; b++) valid += (size_t)__builtin_popcount(p[(pos >> 3) + b]);
        i = whole * 8;
      }
      for (; i < k; i++) {
        uint64_t q = pos + i;
        if ((p[q >> 3] >> (q & 7)) & 1) {
          int64_t o = bit_off + (int64_t)i;
          bits[o >> 3] |= (uint8_t)(1u << (o & 7));
          valid++;
        }
      }
      d->bit_pos = pos + k;
    } else {
      if (d->value == 1) {
        set_bit_range(bits, bit_off, k);
        valid += k;
      }
    }
    d->run_left -= (uint32_t)k;
    bit_off += (int64_t)k;
    n -= k;
  }
  *valid_out = valid;
  return TM_OK;
}

int tm_parquet__bitpacked_validity(const uint8_t *p, size_t len, uint64_t first, uint8_t *bits,
                                   int64_t bit_off, size_t n, size_t *valid_out, tm_error *err) {
  if ((first + n + 7) / 8 > len) return CORRUPT(err, "BIT_PACKED levels pass the end");
  size_t valid = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t q = first + i;
    if ((p[q >> 3] >> (7 - (q & 7))) & 1) {
      int64_t o = bit_off + (int64_t)i;
      bits[o >> 3] |= (uint8_t)(1u << (o & 7));
      valid++;
    }
  }
  *valid_out = valid;
  return TM_OK;
}

/* Appends an unsigned LEB128 varint. */
static int put_uleb(tm_buf *out, uint64_t v, tm_error *err) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n] = v & 0x7f;
    v >>= 7;
    if (v) tmp[n] |= 0x80;
    n++;
  } while (v);
  return tm_buf_append(out, tmp, n, err);
}

/* Length of the run of equal values starting at v[i]. */
static size_t run_length(const uint32_t *v, size_t i, size_t n) {
  size_t j = i + 1;
  while (j < n && v[j] == v[i]) j++;
  return j - i;
}

int tm_parquet__rle_encode(tm_buf *out, const uint32_t *v, size_t n, int bw, tm_error *err) {
  size_t vbytes = (size_t)(bw + 7) / 8;
  size_t i = 0;
  while (i < n) {
    size_t run = run_length(v, i, n);
    if (run >= 8) {
      TM_TRY(put_uleb(out, (uint64_t)run << 1, err));
      uint8_t b[4] = {(uint8_t)v[i], (uint8_t)(v[i] >> 8), (uint8_t)(v[i] >> 16),
                      (uint8_t)(v[i] >> 24)};
      TM_TRY(tm_buf_append(out, b, vbytes, err));
      i += run;
      continue;
    }
    /* Literal groups of 8 until a long repeat begins at a group boundary. */
    size_t end = i;
    do {
      end += 8;
    } while (end < n && run_length(v, end, n) < 8);
    if (end > n) end = n;
    size_t groups = (end - i + 7) / 8;
    TM_TRY(put_uleb(out, (uint64_t)groups << 1 | 1, err));
    size_t bytes = groups * (size_t)bw;
    void *p;
    TM_TRY(tm_buf_extend(out, bytes, &p, err));
    uint8_t *dst = p;
    uint64_t pos = 0;
    for (size_t k = i; k < end; k++, pos += (uint64_t)bw)
      for (int bit = 0; bit < bw; bit++)
        if ((v[k] >> bit) & 1) dst[(pos + (uint64_t)bit) >> 3] |= (uint8_t)(1u << ((pos + (uint64_t)bit) & 7));
    i = end;
  }
  return TM_OK;
}

/* ---- DELTA_BINARY_PACKED --------------------------------------------------- */

static int read_uleb64(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  const uint8_t *p = *pp;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      *pp = p;
      return 0;
    }
  }
  return -1;
}

int tm_parquet__delta_decode(const uint8_t *p, size_t len, bool is64, size_t max_values,
                             tm_buf *out, size_t *n_out, size_t *used_out, tm_error *err) {
  const uint8_t *start = p, *end = p + len;
  uint64_t block_size, n_mini, total, first_zz;
  if (read_uleb64(&p, end, &block_size) < 0 || read_uleb64(&p, end, &n_mini) < 0 ||
      read_uleb64(&p, end, &total) < 0 || read_uleb64(&p, end, &first_zz) < 0)
    return CORRUPT(err, "truncated DELTA_BINARY_PACKED header");
  if (block_size == 0 || block_size % 128 != 0 || block_size > ((uint64_t)1 << 20) ||
      n_mini == 0 || n_mini > block_size || block_size % n_mini != 0 ||
      (block_size / n_mini) % 32 != 0)
    return CORRUPT(err, "bad DELTA_BINARY_PACKED block layout");
  if (total > max_values) return CORRUPT(err, "DELTA_BINARY_PACKED holds more values than the page");
  size_t esz = is64 ? 8 : 4;
  void *dst = NULL;
  if (total > 0) {
    TM_TRY(tm_buf_reserve(out, (size_t)total * esz, err));
    dst = out->ptr + out->len;
  }
  uint64_t per_mini = block_size / n_mini;
  uint64_t prev = tm_unzigzag64(first_zz) ;
  size_t produced = 0;
  if (total > 0) {
    if (is64) memcpy(dst, &prev, 8);
    else {
      uint32_t v32 = (uint32_t)prev;
      memcpy(dst, &v32, 4);
    }
    produced = 1;
  }
  while (produced < total) {
    uint64_t min_zz;
    if (read_uleb64(&p, end, &min_zz) < 0) return CORRUPT(err, "truncated DELTA_BINARY_PACKED block");
    uint64_t min_delta = (uint64_t)tm_unzigzag64(min_zz);
    if ((uint64_t)(end - p) < n_mini) return CORRUPT(err, "truncated DELTA_BINARY_PACKED widths");
    const uint8_t *widths = p;
    p += n_mini;
    for (uint64_t m = 0; m < n_mini && produced < total; m++) {
      int w = widths[m];
      if (w > 64) return CORRUPT(err, "DELTA_BINARY_PACKED bit width above 64");
      uint64_t bytes = per_mini * (uint64_t)w / 8;
      if ((uint64_t)(end - p) < bytes) {
        /* Some writers do not pad the last miniblock: accept the values present. */
        bytes = (uint64_t)(end - p);
      }
      uint64_t avail = w ? bytes * 8 / (uint64_t)w : per_mini;
      uint64_t want = total - produced;
      if (want > per_mini) want = per_mini;
      if (avail < want) return CORRUPT(err, "DELTA_BINARY_PACKED miniblock passes the end");
      uint64_t pos = 0;
      if (is64) {
        int64_t *o = (int64_t *)dst;
        for (uint64_t i = 0; i < want; i++) {
          prev += min_delta + get_bits(p, (size_t)bytes, pos, w);
          pos += (uint64_t)w;
          memcpy(&o[produced++], &prev, 8);
        }
      } else {
        int32_t *o = (int32_t *)dst;
        for (uint64_t i = 0; i < want; i++) {
          prev += min_delta + get_bits(p, (size_t)bytes, pos, w);
          pos += (uint64_t)w;
          uint32_t v32 = (uint32_t)prev;
          memcpy(&o[produced++], &v32, 4);
        }
      }
      p += bytes;
    }
  }
  out->len += produced * esz;
  *n_out = produced;
  *used_out = (size_t)(p - start);
  return TM_OK;
}

/* ---- half floats --------------------------------------------------------- */

float tm_parquet__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      /* Subnormal: normalise. */
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while (!(mant & 0x400));
      mant &= 0x3ff;
      bits = sign | (uint32_t)(127 - 15 - e) << 23 | mant << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp - 15 + 127) << 23 | mant << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t tm_parquet__float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  int32_t exp = (int32_t)((x >> 23) & 0xff);
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = (uint32_t)e << 10 | mant >> 13;
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return (uint16_t)(sign | half);
}
