/*
 * column.c - decoding one flat column chunk into Arrow buffers (format
 * layer, parquet).
 *
 * A tm_pq_column owns the compressed bytes of one column chunk (read by the
 * scan with a single tm_input read) and turns its pages into rows on demand:
 * each page is decompressed when the first of its rows is requested, so
 * memory holds the chunk, one decompressed page and the dictionary.
 *
 * Rows are written straight into a tm_colbuilder's buffers:
 *   1. definition levels (bit width 1 for a flat optional column) go
 *      directly into the validity bitmap and give the count of non-null
 *      values;
 *   2. that many values are decoded densely at the first row's slot;
 *   3. when the run had nulls, values are spread backwards to their rows.
 * Value sources per page: PLAIN bytes in the page (converted from the
 * physical to the output representation in bulk), dictionary indices
 * (gathered from a dictionary already in output form), and values decoded
 * at page load (DELTA_*, BYTE_STREAM_SPLIT) into scratch buffers.
 *
 * Every count and length from the file is checked against the bytes present
 * before it is used; errors name the file and the column.
 */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"
#include "util/time.h"

enum {
  ENC_PLAIN = 0,
  ENC_PLAIN_DICTIONARY = 2,
  ENC_RLE = 3,
  ENC_BIT_PACKED = 4,
  ENC_DELTA_BINARY_PACKED = 5,
  ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
  ENC_DELTA_BYTE_ARRAY = 7,
  ENC_RLE_DICTIONARY = 8,
  ENC_BYTE_STREAM_SPLIT = 9
};

typedef enum src_kind {
  SRC_NONE = 0,
  SRC_PLAIN_FIXED,   /* physical fixed-width values in the page */
  SRC_PLAIN_VAR,     /* length-prefixed byte arrays in the page */
  SRC_DICT,          /* RLE/bit-packed dictionary indices */
  SRC_DECODED_FIXED, /* physical fixed-width values in scratch */
  SRC_DECODED_VAR,   /* offsets in scratch, bytes at dec_data */
  SRC_BOOL_PLAIN,    /* bit-packed booleans in the page */
  SRC_BOOL_RLE       /* RLE/bit-packed hybrid booleans */
} src_kind;

typedef void (*conv_fn)(uint8_t *dst, const uint8_t *src, size_t n, size_t width);

#define IDX_CHUNK 1024
/* Bytes readable past a dictionary's string data and writable past the end
 * of reserved output string data (see copy_short). */
#define COPY_SLACK 64

struct tm_pq_column {
  tm_pq_column_desc d;
  uint8_t *chunk; /* compressed chunk; owned unless d.chunk_borrowed */
  size_t chunk_len;
  size_t pos;          /* next page header in chunk */
  int64_t values_left; /* values of the chunk not yet returned */
  tm_pq_codec_ctx codec;
  tm_buf page_buf; /* decompressed page */
  tm_buf scratch;  /* values decoded at page load (fixed) or their offsets (var) */
  tm_buf scratch2; /* DELTA_BYTE_ARRAY: reconstructed bytes */
  tm_buf levels;   /* bool scratch */
  uint32_t idx[IDX_CHUNK];
  /* dictionary, in output representation */
  bool has_dict;
  tm_buf dict_values; /* fixed: n * out_width bytes; var: (n + 1) int32 offsets */
  tm_buf dict_data;   /* var: bytes */
  size_t dict_n;
  /* current page */
  int64_t page_left; /* levels (= rows) left in the page */
  int def_kind;      /* 0: none (all valid), 1: RLE, 2: legacy BIT_PACKED */
  tm_pq_rle def_rle;
  bool has_rep;      /* levels mode: the page has repetition levels */
  tm_pq_rle rep_rle;
  const uint8_t *def_bp;
  size_t def_bp_len;
  uint64_t def_bp_pos;
  src_kind src;
  const uint8_t *vp; /* values section */
  size_t vlen;
  size_t vpos;
  uint64_t bool_bit;
  tm_pq_rle val_rle;
  size_t dec_n, dec_pos; /* decoded values available / next */
  const uint8_t *dec_data; /* SRC_DECODED_VAR bytes; SRC_DECODED_FIXED values */
  /* value geometry */
  size_t phys_width; /* bytes per physical fixed value */
  size_t out_width;  /* bytes per output value (0: var or bool) */
  bool out_var;      /* utf8/binary output */
  bool out_bool;
  bool var_to_dec;   /* BYTE_ARRAY decimal: var physical, fixed output */
  conv_fn conv;
};

static int col_error(const tm_pq_column *c, tm_error *err, int code, const char *fmt, ...)
    TM_PRINTF(4, 5);

static int col_error(const tm_pq_column *c, tm_error *err, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (code == TM_ECORRUPT)
    return tm_error__corrupt(err, __FILE__, __LINE__, "%s: column '%s': %s", c->d.file,
                             c->d.name, msg);
  return tm_error_set(err, code, "%s: column '%s': %s", c->d.file, c->d.name, msg);
}

/* Adds the file and column to an error raised by a helper. */
static int col_wrap(const tm_pq_column *c, tm_error *err, int rc) {
  if (rc < 0) tm_error_prefix(err, "%s: column '%s'", c->d.file, c->d.name);
  return rc;
}

static inline uint32_t le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* ---- conversions: physical -> output representation ---------------------- */

static void conv_copy(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  if (n) memcpy(dst, src, n * w);
}

static void conv_i32_to_i8(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) dst[i] = (uint8_t)le32(src + 4 * i);
}

static void conv_i32_to_i16(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) {
    uint16_t v = (uint16_t)le32(src + 4 * i);
    memcpy(dst + 2 * i, &v, 2);
  }
}

static void conv_ms_to_us(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) {
    int64_t v = (int64_t)(int32_t)le32(src + 4 * i) * 1000;
    memcpy(dst + 8 * i, &v, 8);
  }
}

static void put_dec(uint8_t *dst, int64_t v) {
  int64_t hi = v < 0 ? -1 : 0;
  memcpy(dst, &v, 8);
  memcpy(dst + 8, &hi, 8);
}

static void conv_i32_to_dec(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) put_dec(dst + 16 * i, (int32_t)le32(src + 4 * i));
}

static void conv_i64_to_dec(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    memcpy(&v, src + 8 * i, 8);
    put_dec(dst + 16 * i, v);
  }
}

/* INT96: 8 bytes of nanoseconds in the day, then a 4-byte Julian day.
 * Instants outside the output unit's range cannot be represented: they
 * become INT64_MIN here and the caller reports them (check_int96). */
static void int96_to(uint8_t *dst, const uint8_t *src, size_t n, int64_t per_day, int64_t div) {
  for (size_t i = 0; i < n; i++) {
    int64_t nanos;
    memcpy(&nanos, src + 12 * i, 8);
    int64_t day = (int64_t)(int32_t)le32(src + 12 * i + 8) - INT64_C(2440588);
    int64_t v;
    if (__builtin_mul_overflow(day, per_day, &v) ||
        __builtin_add_overflow(v, tm_floor_div(nanos, div), &v))
      v = INT64_MIN;
    memcpy(dst + 8 * i, &v, 8);
  }
}

static void conv_int96_to_ns(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  int96_to(dst, src, n, INT64_C(86400000000000), 1);
}

static void conv_int96_to_us(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  int96_to(dst, src, n, INT64_C(86400000000), 1000);
}

static void conv_int96_to_ms(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  int96_to(dst, src, n, INT64_C(86400000), 1000000);
}

static void conv_half_to_f32(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  (void)w;
  for (size_t i = 0; i < n; i++) {
    uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
    float f = tm_parquet__half_to_float(h);
    memcpy(dst + 4 * i, &f, 4);
  }
}

static void conv_flba_to_dec(uint8_t *dst, const uint8_t *src, size_t n, size_t w) {
  for (size_t i = 0; i < n; i++) tm_parquet__be_to_dec128(src + w * i, w, dst + 16 * i);
}

/* ---- setup ---------------------------------------------------------------- */

static size_t phys_width_of(const tm_pq_column_desc *d) {
  switch (d->phys) {
    case TM_PQ_INT32:
    case TM_PQ_FLOAT: return 4;
    case TM_PQ_INT64:
    case TM_PQ_DOUBLE: return 8;
    case TM_PQ_INT96: return 12;
    case TM_PQ_FLBA: return d->type_length > 0 ? (size_t)d->type_length : 0;
    default: return 0;
  }
}

static int setup_conv(tm_pq_column *c, tm_error *err) {
  const tm_type *t = &c->d.type;
  int phys = c->d.phys;
  c->phys_width = phys_width_of(&c->d);
  c->out_var = tm_type_is_var(t);
  c->out_bool = t->id == TM_TYPE_BOOL;
  c->out_width = c->out_var || c->out_bool ? 0 : tm_type_byte_width(t);
  c->conv = conv_copy;
  bool ok = false;
  switch (phys) {
    case TM_PQ_BOOLEAN: ok = c->out_bool; break;
    case TM_PQ_INT32:
      switch (t->id) {
        case TM_TYPE_INT8:
        case TM_TYPE_UINT8: c->conv = conv_i32_to_i8; ok = true; break;
        case TM_TYPE_INT16:
        case TM_TYPE_UINT16: c->conv = conv_i32_to_i16; ok = true; break;
        case TM_TYPE_INT32:
        case TM_TYPE_UINT32:
        case TM_TYPE_DATE32: ok = true; break;
        case TM_TYPE_TIME64: c->conv = conv_ms_to_us; ok = t->unit == TM_UNIT_MICRO; break;
        case TM_TYPE_DECIMAL128: c->conv = conv_i32_to_dec; ok = true; break;
        default: break;
      }
      break;
    case TM_PQ_INT64:
      switch (t->id) {
        case TM_TYPE_INT64:
        case TM_TYPE_UINT64:
        case TM_TYPE_TIMESTAMP:
        case TM_TYPE_TIME64: ok = true; break;
        case TM_TYPE_DECIMAL128: c->conv = conv_i64_to_dec; ok = true; break;
        default: break;
      }
      break;
    case TM_PQ_INT96:
      c->conv = t->unit == TM_UNIT_NANO    ? conv_int96_to_ns
                : t->unit == TM_UNIT_MICRO ? conv_int96_to_us
                                           : conv_int96_to_ms;
      ok = t->id == TM_TYPE_TIMESTAMP && t->unit != TM_UNIT_SECOND;
      break;
    case TM_PQ_FLOAT: ok = t->id == TM_TYPE_FLOAT32; break;
    case TM_PQ_DOUBLE: ok = t->id == TM_TYPE_FLOAT64; break;
    case TM_PQ_BYTE_ARRAY:
      if (t->id == TM_TYPE_DECIMAL128) {
        c->var_to_dec = true;
        ok = true;
      } else {
        ok = c->out_var;
      }
      break;
    case TM_PQ_FLBA:
      if (c->phys_width == 0) break;
      if (t->id == TM_TYPE_FIXED_BINARY) ok = (size_t)t->width == c->phys_width;
      else if (t->id == TM_TYPE_FLOAT32 && c->phys_width == 2) {
        c->conv = conv_half_to_f32;
        ok = true;
      } else if (t->id == TM_TYPE_DECIMAL128 && c->phys_width <= 16) {
        c->conv = conv_flba_to_dec;
        ok = true;
      }
      break;
    default: break;
  }
  if (!ok) {
    char tn[64];
    tm_type_name(t, tn, sizeof tn);
    return col_error(c, err, TM_EUNSUPPORTED, "cannot read %s as %s",
                     tm_parquet_physical_name(phys), tn);
  }
  return TM_OK;
}

int tm_parquet__column_new(tm_pq_column **out, const tm_pq_column_desc *desc, uint8_t *chunk,
                           size_t chunk_len, tm_error *err) {
  tm_pq_column *c = tm_calloc(1, sizeof *c);
  if (!c) {
    if (!desc->chunk_borrowed) tm_free(chunk);
    return tm_error_nomem(err);
  }
  c->d = *desc;
  c->chunk = chunk;
  c->chunk_len = chunk_len;
  c->values_left = desc->num_values;
  tm_buf_init(&c->page_buf, TM_PQ_MAX_PAGE);
  tm_buf_init(&c->scratch, (size_t)4 << 30);
  tm_buf_init(&c->scratch2, TM_PQ_MAX_PAGE);
  tm_buf_init(&c->levels, (size_t)1 << 30);
  tm_buf_init(&c->dict_values, (size_t)4 << 30);
  tm_buf_init(&c->dict_data, TM_PQ_MAX_PAGE);
  int rc = setup_conv(c, err);
  if (rc == TM_OK && !desc->levels && (desc->max_def > 1 || desc->max_rep > 0))
    rc = col_error(c, err, TM_EUNSUPPORTED, "definition level %d on a flat column", desc->max_def);
  if (rc == TM_OK && (desc->max_def > 255 || desc->max_rep > 255 || desc->max_def < 0 ||
                      desc->max_rep < 0))
    rc = col_error(c, err, TM_EUNSUPPORTED, "levels deeper than 255");
  if (rc == TM_OK && !tm_parquet__codec_supported(desc->codec))
    rc = col_error(c, err, desc->codec == 3 ? TM_EUNSUPPORTED : TM_ECORRUPT,
                   desc->codec == 3 ? "LZO compression is not supported"
                                    : "unknown compression codec %d",
                   (int)desc->codec);
  if (rc < 0) {
    tm_parquet__column_free(c);
    return rc;
  }
  *out = c;
  return TM_OK;
}

int tm_parquet__column_reset(tm_pq_column *c, const tm_pq_column_desc *desc, uint8_t *chunk,
                             size_t chunk_len, tm_error *err) {
  if (!c->d.chunk_borrowed) tm_free(c->chunk);
  c->d = *desc;
  c->chunk = chunk;
  c->chunk_len = chunk_len;
  c->pos = 0;
  c->values_left = desc->num_values;
  c->has_dict = false;
  c->dict_n = 0;
  c->page_left = 0;
  c->src = SRC_NONE;
  c->var_to_dec = false;
  int rc = setup_conv(c, err);
  if (rc == TM_OK && !tm_parquet__codec_supported(desc->codec))
    rc = col_error(c, err, desc->codec == 3 ? TM_EUNSUPPORTED : TM_ECORRUPT,
                   desc->codec == 3 ? "LZO compression is not supported"
                                    : "unknown compression codec %d",
                   (int)desc->codec);
  return rc;
}

void tm_parquet__column_free(tm_pq_column *c) {
  if (!c) return;
  if (!c->d.chunk_borrowed) tm_free(c->chunk);
  tm_parquet__codec_ctx_dispose(&c->codec);
  tm_buf_dispose(&c->page_buf);
  tm_buf_dispose(&c->scratch);
  tm_buf_dispose(&c->scratch2);
  tm_buf_dispose(&c->levels);
  tm_buf_dispose(&c->dict_values);
  tm_buf_dispose(&c->dict_data);
  tm_free(c);
}

/* ---- pages --------------------------------------------------------------- */

/* Decompresses len bytes at src (codec of the chunk) into page_buf as
 * raw_len bytes; *out points at the result (src itself when uncompressed). */
static int page_bytes(tm_pq_column *c, const uint8_t *src, size_t len, size_t raw_len,
                      bool compressed, const uint8_t **out, tm_error *err) {
  if (!compressed || c->d.codec == 0) {
    if (len != raw_len)
      return col_error(c, err, TM_ECORRUPT, "uncompressed page of %zu bytes claims %zu", len,
                       raw_len);
    *out = src;
    return TM_OK;
  }
  if (raw_len > TM_PQ_MAX_PAGE)
    return col_error(c, err, TM_ETOOLARGE, "page of %zu bytes exceeds the limit", raw_len);
  if (len == 0 && raw_len == 0) {
    *out = src;
    return TM_OK;
  }
  tm_buf_clear(&c->page_buf);
  TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->page_buf, raw_len, err)));
  uint8_t *dst = (uint8_t *)c->page_buf.ptr;
  TM_TRY(col_wrap(c, err, tm_parquet__decompress(&c->codec, c->d.codec, src, len, dst, raw_len, err)));
  c->page_buf.len = raw_len;
  *out = dst;
  return TM_OK;
}

/* Decodes n PLAIN values of the dictionary page into output form. */
static int load_dictionary(tm_pq_column *c, const uint8_t *p, size_t len, int64_t n64,
                           tm_error *err) {
  if (c->has_dict) return col_error(c, err, TM_ECORRUPT, "second dictionary page");
  if (n64 < 0 || (uint64_t)n64 > len + 1)
    return col_error(c, err, TM_ECORRUPT, "dictionary of %lld values in %zu bytes",
                     (long long)n64, len);
  size_t n = (size_t)n64;
  tm_buf_clear(&c->dict_values);
  tm_buf_clear(&c->dict_data);
  if (c->out_bool) return col_error(c, err, TM_EUNSUPPORTED, "dictionary-encoded BOOLEAN column");
  if (c->out_var || c->var_to_dec) {
    if (c->out_var) {
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->dict_values, (n + 1) * 4, err)));
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->dict_data, len + COPY_SLACK, err)));
    } else {
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->dict_values, n * 16, err)));
    }
    int32_t *off = (int32_t *)c->dict_values.ptr;
    uint8_t *data = (uint8_t *)c->dict_data.ptr;
    size_t pos = 0, dlen = 0;
    if (c->out_var) off[0] = 0;
    for (size_t i = 0; i < n; i++) {
      if (len - pos < 4) return col_error(c, err, TM_ECORRUPT, "dictionary value passes the page end");
      uint32_t l = le32(p + pos);
      pos += 4;
      if (l > len - pos)
        return col_error(c, err, TM_ECORRUPT, "dictionary string of %u bytes passes the page end", l);
      if (c->out_var) {
        memcpy(data + dlen, p + pos, l);
        dlen += l;
        off[i + 1] = (int32_t)dlen;
      } else if (!tm_parquet__be_to_dec128(p + pos, l, (uint8_t *)c->dict_values.ptr + 16 * i)) {
        return col_error(c, err, TM_ECORRUPT, "decimal of %u bytes does not fit 128 bits", l);
      }
      pos += l;
    }
    c->dict_values.len = c->out_var ? (n + 1) * 4 : n * 16;
    c->dict_data.len = dlen;
  } else {
    size_t w = c->phys_width;
    if (w == 0 || n > len / w)
      return col_error(c, err, TM_ECORRUPT, "dictionary of %zu values does not fit its page", n);
    TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->dict_values, n * c->out_width, err)));
    c->conv((uint8_t *)c->dict_values.ptr, p, n, w);
    c->dict_values.len = n * c->out_width;
  }
  c->dict_n = n;
  c->has_dict = true;
  return TM_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY at p: lengths, then bytes. Fills scratch with
 * n + 1 offsets and points dec_data at the bytes. */
static int decode_delta_length(tm_pq_column *c, const uint8_t *p, size_t len, size_t max_n,
                               tm_buf *offsets, const uint8_t **data_out, size_t *n_out,
                               size_t *used_out, tm_error *err) {
  size_t n, used;
  tm_buf_clear(offsets);
  /* Decode the lengths as int32 right after a leading zero offset. */
  int32_t zero = 0;
  TM_TRY(col_wrap(c, err, tm_buf_append(offsets, &zero, 4, err)));
  TM_TRY(col_wrap(c, err, tm_parquet__delta_decode(p, len, false, max_n, offsets, &n, &used, err)));
  int32_t *off = (int32_t *)offsets->ptr;
  int64_t total = 0;
  for (size_t i = 1; i <= n; i++) {
    int32_t l = off[i];
    if (l < 0) return col_error(c, err, TM_ECORRUPT, "negative byte array length %d", (int)l);
    total += l;
    if (total > (int64_t)(len - used))
      return col_error(c, err, TM_ECORRUPT, "byte array lengths pass the page end");
    off[i] = (int32_t)total;
  }
  *data_out = p + used;
  *n_out = n;
  *used_out = used + (size_t)total;
  return TM_OK;
}

static int decode_delta_byte_array(tm_pq_column *c, const uint8_t *p, size_t len, size_t max_n,
                                   tm_error *err) {
  size_t n_pre, used_pre;
  tm_buf prefixes;
  tm_buf_init(&prefixes, (size_t)1 << 31);
  int rc = tm_parquet__delta_decode(p, len, false, max_n, &prefixes, &n_pre, &used_pre, err);
  if (rc < 0) {
    tm_buf_dispose(&prefixes);
    return col_wrap(c, err, rc);
  }
  const uint8_t *suffix_data;
  size_t n_suf, used_suf;
  tm_buf suffix_off;
  tm_buf_init(&suffix_off, (size_t)1 << 31);
  rc = decode_delta_length(c, p + used_pre, len - used_pre, max_n, &suffix_off, &suffix_data,
                           &n_suf, &used_suf, err);
  if (rc == TM_OK && n_suf != n_pre)
    rc = col_error(c, err, TM_ECORRUPT, "DELTA_BYTE_ARRAY has %zu prefixes and %zu suffixes",
                   n_pre, n_suf);
  /* Rebuild every value: prefix of the previous value + suffix. */
  tm_buf_clear(&c->scratch);
  tm_buf_clear(&c->scratch2);
  if (rc == TM_OK) rc = col_wrap(c, err, tm_buf_reserve(&c->scratch, (n_pre + 1) * 4, err));
  const int32_t *pre = (const int32_t *)prefixes.ptr;
  const int32_t *soff = (const int32_t *)suffix_off.ptr;
  size_t prev_start = 0, prev_len = 0;
  if (rc == TM_OK) ((int32_t *)c->scratch.ptr)[0] = 0;
  for (size_t i = 0; i < n_pre && rc == TM_OK; i++) {
    int32_t pl = pre[i];
    size_t sl = (size_t)(soff[i + 1] - soff[i]);
    if (pl < 0 || (size_t)pl > prev_len) {
      rc = col_error(c, err, TM_ECORRUPT, "DELTA_BYTE_ARRAY prefix of %d bytes, previous value has %zu",
                     (int)pl, prev_len);
      break;
    }
    size_t vl = (size_t)pl + sl;
    size_t start = c->scratch2.len;
    if (start + vl > (size_t)INT32_MAX) {
      rc = col_error(c, err, TM_ETOOLARGE, "decoded page passes 2 GiB");
      break;
    }
    rc = col_wrap(c, err, tm_buf_reserve(&c->scratch2, vl, err));
    if (rc < 0) break;
    uint8_t *dst = (uint8_t *)c->scratch2.ptr + start;
    if (pl) memmove(dst, c->scratch2.ptr + prev_start, (size_t)pl);
    if (sl) memcpy(dst + pl, suffix_data + soff[i], sl);
    c->scratch2.len = start + vl;
    ((int32_t *)c->scratch.ptr)[i + 1] = (int32_t)c->scratch2.len;
    prev_start = start;
    prev_len = vl;
  }
  tm_buf_dispose(&prefixes);
  tm_buf_dispose(&suffix_off);
  if (rc < 0) return rc;
  c->scratch.len = (n_pre + 1) * 4;
  c->dec_n = n_pre;
  c->dec_pos = 0;
  c->dec_data = (const uint8_t *)c->scratch2.ptr;
  return TM_OK;
}

/* Sets up the value source of a data page whose values section is p[0..len). */
static int setup_values(tm_pq_column *c, int enc, const uint8_t *p, size_t len, int64_t n_levels,
                        tm_error *err) {
  c->vp = p;
  c->vlen = len;
  c->vpos = 0;
  c->dec_n = c->dec_pos = 0;
  size_t max_n = (size_t)n_levels;
  int phys = c->d.phys;
  switch (enc) {
    case ENC_PLAIN:
      if (phys == TM_PQ_BOOLEAN) {
        c->src = SRC_BOOL_PLAIN;
        c->bool_bit = 0;
      } else if (phys == TM_PQ_BYTE_ARRAY) {
        c->src = SRC_PLAIN_VAR;
      } else {
        c->src = SRC_PLAIN_FIXED;
      }
      return TM_OK;
    case ENC_PLAIN_DICTIONARY:
    case ENC_RLE_DICTIONARY: {
      if (!c->has_dict)
        return col_error(c, err, TM_ECORRUPT, "dictionary-encoded page without a dictionary page");
      c->src = SRC_DICT;
      int bw = 0;
      if (len > 0) {
        bw = p[0];
        if (bw > 32) return col_error(c, err, TM_ECORRUPT, "dictionary index bit width %d", bw);
        p++;
        len--;
      }
      tm_parquet__rle_init(&c->val_rle, p, len, bw);
      return TM_OK;
    }
    case ENC_RLE:
      if (phys != TM_PQ_BOOLEAN)
        return col_error(c, err, TM_EUNSUPPORTED, "RLE encoding for %s values",
                         tm_parquet_physical_name(phys));
      if (len < 4) return col_error(c, err, TM_ECORRUPT, "RLE boolean page without its length");
      {
        uint32_t l = le32(p);
        if (l > len - 4) return col_error(c, err, TM_ECORRUPT, "RLE boolean data passes the page end");
        tm_parquet__rle_init(&c->val_rle, p + 4, l, 1);
      }
      c->src = SRC_BOOL_RLE;
      return TM_OK;
    case ENC_DELTA_BINARY_PACKED: {
      if (phys != TM_PQ_INT32 && phys != TM_PQ_INT64)
        return col_error(c, err, TM_ECORRUPT, "DELTA_BINARY_PACKED for %s values",
                         tm_parquet_physical_name(phys));
      size_t n, used;
      tm_buf_clear(&c->scratch);
      TM_TRY(col_wrap(c, err, tm_parquet__delta_decode(p, len, phys == TM_PQ_INT64, max_n,
                                                        &c->scratch, &n, &used, err)));
      c->src = SRC_DECODED_FIXED;
      c->dec_n = n;
      c->dec_data = (const uint8_t *)c->scratch.ptr;
      return TM_OK;
    }
    case ENC_DELTA_LENGTH_BYTE_ARRAY: {
      if (phys != TM_PQ_BYTE_ARRAY)
        return col_error(c, err, TM_ECORRUPT, "DELTA_LENGTH_BYTE_ARRAY for %s values",
                         tm_parquet_physical_name(phys));
      size_t n, used;
      TM_TRY(decode_delta_length(c, p, len, max_n, &c->scratch, &c->dec_data, &n, &used, err));
      c->src = SRC_DECODED_VAR;
      c->dec_n = n;
      return TM_OK;
    }
    case ENC_DELTA_BYTE_ARRAY:
      if (phys != TM_PQ_BYTE_ARRAY && phys != TM_PQ_FLBA)
        return col_error(c, err, TM_ECORRUPT, "DELTA_BYTE_ARRAY for %s values",
                         tm_parquet_physical_name(phys));
      TM_TRY(decode_delta_byte_array(c, p, len, max_n, err));
      if (phys == TM_PQ_FLBA) {
        const int32_t *off = (const int32_t *)c->scratch.ptr;
        for (size_t i = 0; i < c->dec_n; i++)
          if ((size_t)(off[i + 1] - off[i]) != c->phys_width)
            return col_error(c, err, TM_ECORRUPT, "DELTA_BYTE_ARRAY value of %d bytes in a %zu-byte column",
                             (int)(off[i + 1] - off[i]), c->phys_width);
        c->src = SRC_DECODED_FIXED;
      } else {
        c->src = SRC_DECODED_VAR;
      }
      return TM_OK;
    case ENC_BYTE_STREAM_SPLIT: {
      size_t w = c->phys_width;
      if (phys == TM_PQ_BOOLEAN || phys == TM_PQ_BYTE_ARRAY || phys == TM_PQ_INT96 || w == 0)
        return col_error(c, err, TM_ECORRUPT, "BYTE_STREAM_SPLIT for %s values",
                         tm_parquet_physical_name(phys));
      if (len % w != 0)
        return col_error(c, err, TM_ECORRUPT, "BYTE_STREAM_SPLIT page of %zu bytes for width %zu",
                         len, w);
      size_t n = len / w;
      if (n > max_n) return col_error(c, err, TM_ECORRUPT, "BYTE_STREAM_SPLIT page holds too many values");
      tm_buf_clear(&c->scratch);
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->scratch, len, err)));
      uint8_t *dst = (uint8_t *)c->scratch.ptr;
      for (size_t b = 0; b < w; b++) {
        const uint8_t *s = p + b * n;
        for (size_t i = 0; i < n; i++) dst[i * w + b] = s[i];
      }
      c->scratch.len = len;
      c->src = SRC_DECODED_FIXED;
      c->dec_n = n;
      c->dec_data = dst;
      return TM_OK;
    }
    case ENC_BIT_PACKED:
      return col_error(c, err, TM_EUNSUPPORTED, "BIT_PACKED encoding for values");
    default: return col_error(c, err, TM_ECORRUPT, "unknown encoding %d", enc);
  }
}

/* Bits needed for levels 0..max. */
static int level_width(int max) {
  int w = 0;
  while (max > 0) {
    w++;
    max >>= 1;
  }
  return w;
}

/* Reads page headers until a data page is open (page_left > 0). */
static int next_page(tm_pq_column *c, tm_error *err) {
  for (;;) {
    if (c->pos >= c->chunk_len)
      return col_error(c, err, TM_ECORRUPT, "column chunk ends %lld values early",
                       (long long)c->values_left);
    tm_pq_page_header h;
    size_t used;
    int rc = tm_parquet__parse_page_header(&h, c->chunk + c->pos, c->chunk_len - c->pos, &used, err);
    if (rc < 0) {
      tm_error_prefix(err, "%s: column '%s': page header at chunk byte %zu", c->d.file, c->d.name,
                      c->pos);
      return rc;
    }
    c->pos += used;
    if ((size_t)h.compressed_size > c->chunk_len - c->pos)
      return col_error(c, err, TM_ECORRUPT, "page of %d bytes passes the end of the column chunk",
                       (int)h.compressed_size);
    const uint8_t *raw = c->chunk + c->pos;
    size_t raw_len = (size_t)h.compressed_size;
    c->pos += raw_len;
    if (c->d.verify_crc && h.has_crc) {
      uint32_t crc = (uint32_t)crc32(0L, raw, (uInt)raw_len);
      if (crc != h.crc)
        return col_error(c, err, TM_ECORRUPT, "page CRC mismatch (stored %08x, computed %08x)",
                         h.crc, crc);
    }
    if (h.type == TM_PQ_PAGE_DICTIONARY) {
      if (!h.has_dict) return col_error(c, err, TM_ECORRUPT, "dictionary page without its header");
      if (h.encoding != ENC_PLAIN && h.encoding != ENC_PLAIN_DICTIONARY)
        return col_error(c, err, TM_ECORRUPT, "dictionary page in encoding %d", (int)h.encoding);
      const uint8_t *p;
      TM_TRY(page_bytes(c, raw, raw_len, (size_t)h.uncompressed_size, true, &p, err));
      TM_TRY(load_dictionary(c, p, (size_t)h.uncompressed_size, h.num_values, err));
      continue;
    }
    if (h.type == TM_PQ_PAGE_DATA) {
      if (!h.has_data) return col_error(c, err, TM_ECORRUPT, "data page without its header");
      const uint8_t *p;
      size_t len = (size_t)h.uncompressed_size;
      TM_TRY(page_bytes(c, raw, raw_len, len, true, &p, err));
      if (h.num_values == 0) continue;
      if (h.num_values > c->values_left)
        return col_error(c, err, TM_ECORRUPT, "page holds %d values, the chunk only %lld more",
                         (int)h.num_values, (long long)c->values_left);
      c->def_kind = 0;
      c->has_rep = false;
      if (c->d.max_rep > 0) {
        if (h.rep_encoding != ENC_RLE)
          return col_error(c, err, TM_EUNSUPPORTED, "repetition levels in encoding %d",
                           (int)h.rep_encoding);
        if (len < 4) return col_error(c, err, TM_ECORRUPT, "repetition levels pass the page end");
        uint32_t l = le32(p);
        if (l > len - 4) return col_error(c, err, TM_ECORRUPT, "repetition levels pass the page end");
        tm_parquet__rle_init(&c->rep_rle, p + 4, l, level_width(c->d.max_rep));
        c->has_rep = true;
        p += 4 + l;
        len -= 4 + (size_t)l;
      }
      if (c->d.max_def > 0) {
        if (h.def_encoding == ENC_RLE) {
          if (len < 4) return col_error(c, err, TM_ECORRUPT, "definition levels pass the page end");
          uint32_t l = le32(p);
          if (l > len - 4) return col_error(c, err, TM_ECORRUPT, "definition levels pass the page end");
          tm_parquet__rle_init(&c->def_rle, p + 4, l, level_width(c->d.max_def));
          c->def_kind = 1;
          p += 4 + l;
          len -= 4 + (size_t)l;
        } else if (h.def_encoding == ENC_BIT_PACKED && !c->d.levels) {
          size_t l = ((size_t)h.num_values + 7) / 8;
          if (l > len) return col_error(c, err, TM_ECORRUPT, "definition levels pass the page end");
          c->def_bp = p;
          c->def_bp_len = l;
          c->def_bp_pos = 0;
          c->def_kind = 2;
          p += l;
          len -= l;
        } else {
          return col_error(c, err, TM_ECORRUPT, "definition levels in encoding %d",
                           (int)h.def_encoding);
        }
      }
      TM_TRY(setup_values(c, h.encoding, p, len, h.num_values, err));
      c->page_left = h.num_values;
      return TM_OK;
    }
    if (h.type == TM_PQ_PAGE_DATA_V2) {
      if (!h.has_v2) return col_error(c, err, TM_ECORRUPT, "v2 data page without its header");
      size_t levels = (size_t)h.def_len + (size_t)h.rep_len;
      if (levels > raw_len || levels > (size_t)h.uncompressed_size)
        return col_error(c, err, TM_ECORRUPT, "v2 page levels pass the page end");
      /* Some writers store repetition levels for flat columns too; they
       * are all zero and are skipped. */
      if (h.num_values == 0) continue;
      if (h.num_values > c->values_left)
        return col_error(c, err, TM_ECORRUPT, "page holds %d values, the chunk only %lld more",
                         (int)h.num_values, (long long)c->values_left);
      if (h.num_nulls > h.num_values)
        return col_error(c, err, TM_ECORRUPT, "v2 page has more nulls than values");
      c->def_kind = 0;
      c->has_rep = false;
      if (c->d.max_rep > 0) {
        if (h.rep_len <= 0)
          return col_error(c, err, TM_ECORRUPT, "v2 page of a repeated column without repetition levels");
        tm_parquet__rle_init(&c->rep_rle, raw, (size_t)h.rep_len, level_width(c->d.max_rep));
        c->has_rep = true;
      }
      if (c->d.max_def > 0 && h.def_len > 0) {
        tm_parquet__rle_init(&c->def_rle, raw + h.rep_len, (size_t)h.def_len,
                             level_width(c->d.max_def));
        c->def_kind = 1;
      } else if (h.num_nulls > 0) {
        return col_error(c, err, TM_ECORRUPT, "v2 page has nulls but no definition levels");
      }
      const uint8_t *p;
      size_t len = (size_t)h.uncompressed_size - levels;
      /* parquet-cpp before 3.0 compressed v2 pages but wrote is_compressed =
       * false (ARROW-17100): sizes that differ can only mean compression. */
      bool compressed = h.is_compressed || raw_len - levels != len;
      TM_TRY(page_bytes(c, raw + levels, raw_len - levels, len, compressed, &p, err));
      TM_TRY(setup_values(c, h.encoding, p, len, h.num_values, err));
      c->page_left = h.num_values;
      return TM_OK;
    }
    /* Index pages and page types from the future carry no rows. */
  }
}

/* ---- values -------------------------------------------------------------- */

/* Moves the nv dense values at slot 0.. of base to their rows among k rows
 * starting at bit `row` of bits (width w); null slots are zeroed. */
static void spread_fixed(uint8_t *base, size_t w, const uint8_t *bits, int64_t row, size_t k,
                         size_t nv) {
  size_t j = nv; /* values not yet placed */
  for (size_t i = k; i-- > 0;) {
    if (j == i + 1) break; /* rows 0..i are all valid and already in place */
    int64_t r = row + (int64_t)i;
    if ((bits[r >> 3] >> (r & 7)) & 1) {
      j--;
      memcpy(base + i * w, base + j * w, w);
    } else {
      memset(base + i * w, 0, w);
    }
  }
}

/* The same for var-width ends: off[1..nv] hold the ends of the dense values
 * and off[0] the start; a null row ends where the value before it ended. */
static void spread_offsets(int32_t *off, const uint8_t *bits, int64_t row, size_t k, size_t nv) {
  size_t j = nv;
  for (size_t i = k; i-- > 0;) {
    if (j == i + 1) break;
    int64_t r = row + (int64_t)i;
    off[i + 1] = off[j];
    if ((bits[r >> 3] >> (r & 7)) & 1) j--;
  }
}

static int need_values(tm_pq_column *c, size_t have, size_t want, tm_error *err) {
  if (have < want)
    return col_error(c, err, TM_ECORRUPT, "page has %zu values where %zu are needed", have, want);
  return TM_OK;
}

/* nv fixed-width output values into dst. */
static int read_fixed(tm_pq_column *c, uint8_t *dst, size_t nv, tm_error *err) {
  size_t ow = c->out_width, pw = c->phys_width;
  if (nv == 0) return TM_OK;
  switch (c->src) {
    case SRC_PLAIN_FIXED: {
      size_t avail = pw ? (c->vlen - c->vpos) / pw : 0;
      TM_TRY(need_values(c, avail, nv, err));
      c->conv(dst, c->vp + c->vpos, nv, pw);
      c->vpos += nv * pw;
      return TM_OK;
    }
    case SRC_DECODED_FIXED:
      TM_TRY(need_values(c, c->dec_n - c->dec_pos, nv, err));
      c->conv(dst, c->dec_data + c->dec_pos * pw, nv, pw);
      c->dec_pos += nv;
      return TM_OK;
    case SRC_DICT: {
      const uint8_t *dict = (const uint8_t *)c->dict_values.ptr;
      size_t dn = c->dict_n;
      while (nv > 0) {
        size_t m = nv < IDX_CHUNK ? nv : IDX_CHUNK;
        TM_TRY(col_wrap(c, err, tm_parquet__rle_get(&c->val_rle, c->idx, m, err)));
        for (size_t i = 0; i < m; i++)
          if (c->idx[i] >= dn)
            return col_error(c, err, TM_ECORRUPT, "dictionary index %u out of %zu entries",
                             c->idx[i], dn);
        switch (ow) {
          case 4:
            for (size_t i = 0; i < m; i++) memcpy(dst + 4 * i, dict + 4 * (size_t)c->idx[i], 4);
            break;
          case 8:
            for (size_t i = 0; i < m; i++) memcpy(dst + 8 * i, dict + 8 * (size_t)c->idx[i], 8);
            break;
          case 16:
            for (size_t i = 0; i < m; i++) memcpy(dst + 16 * i, dict + 16 * (size_t)c->idx[i], 16);
            break;
          default:
            for (size_t i = 0; i < m; i++) memcpy(dst + ow * i, dict + ow * (size_t)c->idx[i], ow);
        }
        dst += m * ow;
        nv -= m;
      }
      return TM_OK;
    }
    case SRC_PLAIN_VAR:
    case SRC_DECODED_VAR:
      /* BYTE_ARRAY decimals. */
      for (size_t i = 0; i < nv; i++) {
        const uint8_t *v;
        size_t l;
        if (c->src == SRC_PLAIN_VAR) {
          if (c->vlen - c->vpos < 4) return need_values(c, i, nv, err);
          l = le32(c->vp + c->vpos);
          c->vpos += 4;
          if (l > c->vlen - c->vpos)
            return col_error(c, err, TM_ECORRUPT, "value of %zu bytes passes the page end", l);
          v = c->vp + c->vpos;
          c->vpos += l;
        } else {
          TM_TRY(need_values(c, c->dec_n - c->dec_pos, nv - i, err));
          const int32_t *off = (const int32_t *)c->scratch.ptr;
          v = c->dec_data + off[c->dec_pos];
          l = (size_t)(off[c->dec_pos + 1] - off[c->dec_pos]);
          c->dec_pos++;
        }
        if (!tm_parquet__be_to_dec128(v, l, dst + 16 * i))
          return col_error(c, err, TM_ECORRUPT, "decimal of %zu bytes does not fit 128 bits", l);
      }
      return TM_OK;
    default: return col_error(c, err, TM_ECORRUPT, "no value source for this page");
  }
}

/* INT96 values that did not fit the output unit were set to INT64_MIN. */
static int check_int96(tm_pq_column *c, const uint8_t *vals, size_t n, tm_error *err) {
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    memcpy(&v, vals + 8 * i, 8);
    if (v == INT64_MIN)
      return col_error(c, err, TM_ECORRUPT,
                       "INT96 timestamp outside the range of timestamp(%s); open the file with "
                       "a coarser int96_unit",
                       tm_unit_name(c->d.type.unit));
  }
  return TM_OK;
}

/*
 * Copies l bytes where at least COPY_SLACK bytes may be read at src and
 * written at dst: short strings move as one vector-sized block instead of a
 * call to memcpy with a variable length.
 */
static inline void copy_short(uint8_t *dst, const uint8_t *src, size_t l) {
  if (l <= 16) memcpy(dst, src, 16);
  else if (l <= 32) memcpy(dst, src, 32);
  else if (l <= 48) memcpy(dst, src, 48);
  else if (l <= 64) memcpy(dst, src, 64);
  else memcpy(dst, src, l);
}

static int data_overflow(tm_pq_column *c, tm_error *err) {
  return col_error(c, err, TM_ETOOLARGE, "string data of one batch passes 2 GiB");
}

/* nv var-width values appended to data; their ends go to off[1..nv]. */
static int read_var(tm_pq_column *c, tm_buf *data, int32_t *off, size_t nv, tm_error *err) {
  size_t end = data->len;
  if (nv == 0) return TM_OK;
  switch (c->src) {
    case SRC_PLAIN_VAR: {
      /* The strings take at most the bytes left in the page. */
      size_t left = c->vlen - c->vpos;
      TM_TRY(col_wrap(c, err, tm_buf_reserve(data, left + COPY_SLACK, err)));
      uint8_t *out = (uint8_t *)data->ptr;
      const uint8_t *p = c->vp + c->vpos;
      size_t pos = 0;
      for (size_t i = 0; i < nv; i++) {
        if (left - pos < 4) return need_values(c, i, nv, err);
        uint32_t l = le32(p + pos);
        pos += 4;
        if (l > left - pos)
          return col_error(c, err, TM_ECORRUPT, "value of %u bytes passes the page end", l);
        /* The source may be read COPY_SLACK bytes on while inside the page. */
        if (left - pos >= COPY_SLACK) copy_short(out + end, p + pos, l);
        else memcpy(out + end, p + pos, l);
        pos += l;
        end += l;
        off[i + 1] = (int32_t)end;
      }
      if (end > (size_t)INT32_MAX) return data_overflow(c, err);
      c->vpos += pos;
      break;
    }
    case SRC_DECODED_VAR: {
      TM_TRY(need_values(c, c->dec_n - c->dec_pos, nv, err));
      const int32_t *doff = (const int32_t *)c->scratch.ptr + c->dec_pos;
      size_t bytes = (size_t)(doff[nv] - doff[0]);
      if (end + bytes > (size_t)INT32_MAX) return data_overflow(c, err);
      TM_TRY(col_wrap(c, err, tm_buf_reserve(data, bytes, err)));
      if (bytes) memcpy(data->ptr + end, c->dec_data + doff[0], bytes);
      int32_t base = (int32_t)end - doff[0];
      for (size_t i = 0; i < nv; i++) off[i + 1] = doff[i + 1] + base;
      end += bytes;
      c->dec_pos += nv;
      break;
    }
    case SRC_DICT: {
      const int32_t *doff = (const int32_t *)c->dict_values.ptr;
      const uint8_t *dd = (const uint8_t *)c->dict_data.ptr;
      size_t dn = c->dict_n;
      size_t done = 0;
      while (done < nv) {
        size_t m = nv - done < IDX_CHUNK ? nv - done : IDX_CHUNK;
        TM_TRY(col_wrap(c, err, tm_parquet__rle_get(&c->val_rle, c->idx, m, err)));
        size_t bytes = 0;
        for (size_t i = 0; i < m; i++) {
          uint32_t ix = c->idx[i];
          if (ix >= dn)
            return col_error(c, err, TM_ECORRUPT, "dictionary index %u out of %zu entries", ix, dn);
          bytes += (size_t)(doff[ix + 1] - doff[ix]);
        }
        if (end + bytes > (size_t)INT32_MAX) return data_overflow(c, err);
        TM_TRY(col_wrap(c, err, tm_buf_reserve(data, bytes + COPY_SLACK, err)));
        uint8_t *out = (uint8_t *)data->ptr;
        int32_t *o = off + 1 + done;
        for (size_t i = 0; i < m; i++) {
          uint32_t ix = c->idx[i];
          int32_t s = doff[ix];
          size_t l = (size_t)(doff[ix + 1] - s);
          copy_short(out + end, dd + s, l); /* dict_data has COPY_SLACK bytes after it */
          end += l;
          o[i] = (int32_t)end;
        }
        data->len = end; /* the next chunk's reserve counts from here */
        done += m;
      }
      break;
    }
    default: return col_error(c, err, TM_ECORRUPT, "no value source for this page");
  }
  data->len = end;
  return TM_OK;
}

/* nv booleans as bytes (0/1) into out. */
static int read_bools(tm_pq_column *c, uint8_t *out, size_t nv, tm_error *err) {
  if (nv == 0) return TM_OK;
  if (c->src == SRC_BOOL_PLAIN) {
    uint64_t avail = (uint64_t)c->vlen * 8 - c->bool_bit;
    TM_TRY(need_values(c, (size_t)avail, nv, err));
    for (size_t i = 0; i < nv; i++) {
      uint64_t b = c->bool_bit + i;
      out[i] = (c->vp[b >> 3] >> (b & 7)) & 1;
    }
    c->bool_bit += nv;
    return TM_OK;
  }
  if (c->src == SRC_BOOL_RLE) {
    while (nv > 0) {
      size_t m = nv < IDX_CHUNK ? nv : IDX_CHUNK;
      TM_TRY(col_wrap(c, err, tm_parquet__rle_get(&c->val_rle, c->idx, m, err)));
      for (size_t i = 0; i < m; i++) out[i] = (uint8_t)(c->idx[i] & 1);
      out += m;
      nv -= m;
    }
    return TM_OK;
  }
  return col_error(c, err, TM_ECORRUPT, "no boolean value source for this page");
}

static size_t bitmap_bytes(int64_t n) { return (size_t)(n + 7) / 8; }

/* Grows a bitmap buffer to cover `rows` bits; new bytes get `fill`. */
static int grow_bitmap(tm_buf *b, int64_t rows, uint8_t fill, tm_error *err) {
  size_t need = bitmap_bytes(rows);
  if (need <= b->len) return TM_OK;
  size_t extra = need - b->len;
  TM_TRY(tm_buf_reserve(b, extra, err));
  memset(b->ptr + b->len, fill, extra);
  b->len = need;
  b->ptr[b->len] = '\0';
  return TM_OK;
}

int tm_parquet__column_read(tm_pq_column *c, tm_colbuilder *cb, int64_t n, tm_error *err) {
  if (n <= 0) return TM_OK;
  if (n > c->values_left)
    return col_error(c, err, TM_ECORRUPT, "column chunk has %lld values, %lld rows requested",
                     (long long)c->values_left, (long long)n);
  int64_t row0 = cb->length;
  /* Reserve the output buffers for n more rows. */
  if (c->out_var) {
    if (cb->values.len == 0) {
      int32_t zero = 0;
      TM_TRY(col_wrap(c, err, tm_buf_append(&cb->values, &zero, 4, err)));
    }
    TM_TRY(col_wrap(c, err, tm_buf_reserve(&cb->values, (size_t)n * 4, err)));
  } else if (c->out_bool) {
    TM_TRY(col_wrap(c, err, grow_bitmap(&cb->values, row0 + n, 0, err)));
    TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->levels, (size_t)n, err)));
  } else {
    size_t bytes;
    if (tm_mul_overflow((size_t)n, c->out_width, &bytes))
      return col_error(c, err, TM_ETOOLARGE, "batch too large");
    TM_TRY(col_wrap(c, err, tm_buf_reserve(&cb->values, bytes, err)));
  }
  if (c->d.max_def > 0) {
    /* Rows appended before without a bitmap were all valid. */
    if (cb->validity.len == 0 && row0 > 0)
      TM_TRY(col_wrap(c, err, grow_bitmap(&cb->validity, row0, 0xff, err)));
    if (cb->validity.len > 0 && (row0 & 7)) {
      /* Clear the unused tail bits of the last byte before OR-ing into it. */
      uint8_t *last = (uint8_t *)cb->validity.ptr + (row0 >> 3);
      *last &= (uint8_t)((1u << (row0 & 7)) - 1);
    }
    TM_TRY(col_wrap(c, err, grow_bitmap(&cb->validity, row0 + n, 0, err)));
  }
  while (n > 0) {
    if (c->page_left == 0) TM_TRY(next_page(c, err));
    int64_t k64 = n < c->page_left ? n : c->page_left;
    size_t k = (size_t)k64;
    int64_t row = cb->length;
    size_t nv = k;
    uint8_t *bits = NULL;
    if (c->d.max_def > 0) {
      bits = (uint8_t *)cb->validity.ptr;
      if (c->def_kind == 1) {
        TM_TRY(col_wrap(c, err, tm_parquet__rle_validity(&c->def_rle, bits, row, k, &nv, err)));
      } else if (c->def_kind == 2) {
        TM_TRY(col_wrap(c, err, tm_parquet__bitpacked_validity(c->def_bp, c->def_bp_len,
                                                               c->def_bp_pos, bits, row, k, &nv,
                                                               err)));
        c->def_bp_pos += k;
      } else {
        /* No levels: every value present. */
        for (size_t i = 0; i < k; i++) tm_bit_set(bits, row + (int64_t)i);
      }
    }
    if (c->out_var) {
      int32_t *off = (int32_t *)cb->values.ptr + row;
      TM_TRY(read_var(c, &cb->data, off, nv, err));
      if (nv < k) spread_offsets(off, bits, row, k, nv);
      cb->values.len = (size_t)(row + k64 + 1) * 4;
      cb->values.ptr[cb->values.len] = '\0';
    } else if (c->out_bool) {
      uint8_t *tmp = (uint8_t *)c->levels.ptr;
      TM_TRY(read_bools(c, tmp, nv, err));
      uint8_t *vb = (uint8_t *)cb->values.ptr;
      size_t j = 0;
      for (size_t i = 0; i < k; i++) {
        int64_t r = row + (int64_t)i;
        if (bits && !((bits[r >> 3] >> (r & 7)) & 1)) continue;
        if (tmp[j++]) vb[r >> 3] |= (uint8_t)(1u << (r & 7));
      }
    } else {
      uint8_t *base = (uint8_t *)cb->values.ptr + (size_t)row * c->out_width;
      TM_TRY(read_fixed(c, base, nv, err));
      if (c->d.phys == TM_PQ_INT96) TM_TRY(check_int96(c, base, nv, err));
      if (nv < k) spread_fixed(base, c->out_width, bits, row, k, nv);
      cb->values.len = (size_t)(row + k64) * c->out_width;
      cb->values.ptr[cb->values.len] = '\0';
    }
    cb->null_count += (int64_t)(k - nv);
    cb->length += k64;
    c->page_left -= k64;
    c->values_left -= k64;
    n -= k64;
  }
  return TM_OK;
}

/* ---- levels mode (leaves of nested fields) -------------------------------- */

int64_t tm_parquet__column_left(const tm_pq_column *c) { return c->values_left; }

/* k levels of the open page into out (max: the largest allowed). */
static int page_levels(tm_pq_column *c, tm_pq_rle *d, bool present, int max, uint8_t *out,
                       size_t k, const char *what, tm_error *err) {
  if (!present) {
    memset(out, max, k);
    return TM_OK;
  }
  for (size_t done = 0; done < k;) {
    size_t m = k - done < IDX_CHUNK ? k - done : IDX_CHUNK;
    TM_TRY(col_wrap(c, err, tm_parquet__rle_get(d, c->idx, m, err)));
    for (size_t i = 0; i < m; i++) {
      if (c->idx[i] > (uint32_t)max)
        return col_error(c, err, TM_ECORRUPT, "%s level %u above the column's maximum %d", what,
                         c->idx[i], max);
      out[done + i] = (uint8_t)c->idx[i];
    }
    done += m;
  }
  return TM_OK;
}

int tm_parquet__column_read_levels(tm_pq_column *c, int64_t n, uint8_t *rep, uint8_t *def,
                                   tm_colbuilder *vals, int64_t *n_vals, tm_error *err) {
  *n_vals = 0;
  if (!c->d.levels) return col_error(c, err, TM_EINVALID, "not a nested leaf");
  if (n <= 0) return TM_OK;
  if (n > c->values_left)
    return col_error(c, err, TM_ECORRUPT, "column chunk has %lld level entries, %lld requested",
                     (long long)c->values_left, (long long)n);
  if (c->out_var && vals->values.len == 0) {
    int32_t zero = 0;
    TM_TRY(col_wrap(c, err, tm_buf_append(&vals->values, &zero, 4, err)));
  }
  while (n > 0) {
    if (c->page_left == 0) TM_TRY(next_page(c, err));
    int64_t k64 = n < c->page_left ? n : c->page_left;
    size_t k = (size_t)k64;
    TM_TRY(page_levels(c, &c->rep_rle, c->has_rep, c->d.max_rep, rep, k, "repetition", err));
    if (c->d.max_def > 0 && c->def_kind != 1 && c->def_kind != 0)
      return col_error(c, err, TM_ECORRUPT, "definition levels in an unsupported encoding");
    TM_TRY(page_levels(c, &c->def_rle, c->def_kind == 1, c->d.max_def, def, k, "definition", err));
    size_t nv = 0;
    for (size_t i = 0; i < k; i++) nv += def[i] == c->d.max_def;
    int64_t row = vals->length;
    if (c->out_var) {
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&vals->values, nv * 4, err)));
      int32_t *off = (int32_t *)vals->values.ptr + row;
      TM_TRY(read_var(c, &vals->data, off, nv, err));
      vals->values.len = (size_t)(row + (int64_t)nv + 1) * 4;
      vals->values.ptr[vals->values.len] = '\0';
    } else if (c->out_bool) {
      TM_TRY(col_wrap(c, err, grow_bitmap(&vals->values, row + (int64_t)nv, 0, err)));
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&c->levels, nv, err)));
      uint8_t *tmp = (uint8_t *)c->levels.ptr;
      TM_TRY(read_bools(c, tmp, nv, err));
      uint8_t *vb = (uint8_t *)vals->values.ptr;
      for (size_t i = 0; i < nv; i++)
        if (tmp[i]) tm_bit_set(vb, row + (int64_t)i);
    } else {
      size_t bytes;
      if (tm_mul_overflow(nv, c->out_width, &bytes))
        return col_error(c, err, TM_ETOOLARGE, "batch too large");
      TM_TRY(col_wrap(c, err, tm_buf_reserve(&vals->values, bytes, err)));
      uint8_t *base = (uint8_t *)vals->values.ptr + (size_t)row * c->out_width;
      TM_TRY(read_fixed(c, base, nv, err));
      if (c->d.phys == TM_PQ_INT96) TM_TRY(check_int96(c, base, nv, err));
      vals->values.len = (size_t)(row + (int64_t)nv) * c->out_width;
      vals->values.ptr[vals->values.len] = '\0';
    }
    vals->length += (int64_t)nv;
    *n_vals += (int64_t)nv;
    rep += k;
    def += k;
    c->page_left -= k64;
    c->values_left -= k64;
    n -= k64;
  }
  return TM_OK;
}
