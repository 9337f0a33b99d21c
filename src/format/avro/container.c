/*
 * container.c - the Avro object container file reader (format layer).
 * See avro.h and the on-disk layout in avro_int.h.
 *
 * The reader pulls bytes through a tm_input in chunks (64 KiB, or one whole
 * block when larger), so a small manifest costs one or two reads and a
 * large one is never held in memory beyond one block.
 */
#include <string.h>

#include "format/avro/avro.h"
#include "format/avro/avro_int.h"
#include "util/alloc.h"

#define READ_CHUNK ((size_t)64 * 1024)

typedef struct meta_entry {
  char *key;   /* owned */
  char *value; /* owned, NUL-terminated */
  size_t len;
} meta_entry;

struct tm_avro_reader {
  tm_input *in;          /* not owned */
  uint64_t size;         /* input size */
  tm_avro_limits lim;
  /* read-ahead window over the input */
  uint8_t *win;          /* owned */
  size_t win_cap;
  size_t win_len;        /* valid bytes in win */
  size_t win_pos;        /* consumed bytes in win */
  uint64_t win_off;      /* input offset of win[0] */
  /* header */
  meta_entry *meta;      /* owned array */
  size_t n_meta;
  tm_avro_schema *schema;
  tm_avro__codec_id codec;
  const char *codec_name;
  uint8_t sync[16];
  /* current block */
  tm_buf block;          /* decompressed datums */
  const uint8_t *cur, *end;
  int64_t left_in_block; /* objects not yet decoded */
  tm_arena arena;        /* values of the current record */
  tm_avro_value value;
  int64_t records;
  bool eof;
};

void tm_avro_limits_default(tm_avro_limits *lim) {
  lim->max_block_bytes = (size_t)64 << 20;
  lim->max_record_bytes = (size_t)64 << 20;
  lim->max_meta_bytes = (size_t)16 << 20;
  lim->max_depth = 64;
}

/* Offset of the next unconsumed byte in the input. */
static uint64_t cur_offset(const tm_avro_reader *r) { return r->win_off + r->win_pos; }

/*
 * Makes at least `need` unconsumed bytes available in the window (fewer only
 * at the end of the input; *avail_out says how many).
 */
static int fill(tm_avro_reader *r, size_t need, size_t *avail_out, tm_error *err) {
  size_t avail = r->win_len - r->win_pos;
  if (avail >= need) {
    *avail_out = avail;
    return TM_OK;
  }
  /* Move the unconsumed tail to the front. */
  if (r->win_pos) {
    memmove(r->win, r->win + r->win_pos, avail);
    r->win_off += r->win_pos;
    r->win_len = avail;
    r->win_pos = 0;
  }
  uint64_t file_left = r->size - (r->win_off + r->win_len);
  size_t want = need > READ_CHUNK ? need : READ_CHUNK;
  if ((uint64_t)(want - avail) > file_left) want = avail + (size_t)file_left;
  if (want > r->win_cap) {
    uint8_t *w = tm_realloc(r->win, want);
    if (!w) return tm_error_nomem(err);
    r->win = w;
    r->win_cap = want;
  }
  size_t to_read = want - r->win_len;
  if (to_read) {
    size_t got = 0;
    TM_TRY(tm_input_read_at(r->in, r->win_off + r->win_len, r->win + r->win_len, to_read,
                            &got, err));
    r->win_len += got;
  }
  *avail_out = r->win_len - r->win_pos;
  return TM_OK;
}

/* Reads a varint from the window. */
static int win_long(tm_avro_reader *r, int64_t *out, tm_error *err) {
  size_t avail;
  TM_TRY(fill(r, 10, &avail, err));
  const uint8_t *p = r->win + r->win_pos;
  TM_TRY(tm_avro__read_long(&p, p + avail, out, err));
  r->win_pos = (size_t)(p - r->win);
  return TM_OK;
}

/* Makes exactly n bytes available and returns a pointer to them (consumed). */
static int win_take(tm_avro_reader *r, size_t n, const uint8_t **out, tm_error *err) {
  size_t avail;
  TM_TRY(fill(r, n, &avail, err));
  if (avail < n) {
    return TM_CORRUPT(err, "%s: truncated at byte %llu (need %zu more bytes, %zu left)",
                      tm_input_name(r->in), (unsigned long long)cur_offset(r), n, avail);
  }
  *out = r->win + r->win_pos;
  r->win_pos += n;
  return TM_OK;
}

static int read_header(tm_avro_reader *r, tm_error *err) {
  const uint8_t *p;
  TM_TRY(win_take(r, 4, &p, err));
  if (memcmp(p, "Obj\x01", 4) != 0) {
    return TM_CORRUPT(err, "%s: not an Avro container file (bad magic bytes)",
                      tm_input_name(r->in));
  }
  size_t meta_bytes = 0, cap = 0;
  for (;;) {
    int64_t count;
    TM_TRY(win_long(r, &count, err));
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return TM_CORRUPT(err, "%s: bad metadata block count", tm_input_name(r->in));
      count = -count;
      int64_t bytes;
      TM_TRY(win_long(r, &bytes, err));
      if (bytes < 0) return TM_CORRUPT(err, "%s: bad metadata block size", tm_input_name(r->in));
    }
    if ((uint64_t)count > r->lim.max_meta_bytes) {
      return TM_CORRUPT(err, "%s: metadata block count %lld is too large", tm_input_name(r->in),
                        (long long)count);
    }
    for (int64_t i = 0; i < count; i++) {
      int64_t klen, vlen;
      const uint8_t *kp, *vp;
      TM_TRY(win_long(r, &klen, err));
      if (klen < 0 || (uint64_t)klen > r->lim.max_meta_bytes - meta_bytes) {
        return tm_error_set(err, klen < 0 ? TM_ECORRUPT : TM_ETOOLARGE,
                            "%s: header metadata exceeds %zu bytes or has a negative length",
                            tm_input_name(r->in), r->lim.max_meta_bytes);
      }
      meta_bytes += (size_t)klen;
      TM_TRY(win_take(r, (size_t)klen, &kp, err));
      char *key = tm_strndup((const char *)kp, (size_t)klen);
      if (!key) return tm_error_nomem(err);
      int rc = win_long(r, &vlen, err);
      if (rc == TM_OK && (vlen < 0 || (uint64_t)vlen > r->lim.max_meta_bytes - meta_bytes)) {
        rc = tm_error_set(err, vlen < 0 ? TM_ECORRUPT : TM_ETOOLARGE,
                          "%s: header metadata exceeds %zu bytes or has a negative length",
                          tm_input_name(r->in), r->lim.max_meta_bytes);
      }
      if (rc == TM_OK) rc = win_take(r, (size_t)vlen, &vp, err);
      char *value = rc == TM_OK ? tm_strndup((const char *)vp, (size_t)vlen) : NULL;
      if (rc == TM_OK && !value) rc = tm_error_nomem(err);
      if (rc == TM_OK && r->n_meta == cap) {
        size_t ncap = cap ? cap * 2 : 8;
        meta_entry *m = tm_reallocarray(r->meta, ncap, sizeof *m);
        if (!m) {
          rc = tm_error_nomem(err);
        } else {
          r->meta = m;
          cap = ncap;
        }
      }
      if (rc < 0) {
        tm_free(key);
        tm_free(value);
        return rc;
      }
      meta_bytes += (size_t)vlen;
      r->meta[r->n_meta].key = key;
      r->meta[r->n_meta].value = value;
      r->meta[r->n_meta].len = (size_t)vlen;
      r->n_meta++;
    }
  }
  TM_TRY(win_take(r, 16, &p, err));
  memcpy(r->sync, p, 16);

  size_t schema_len;
  const char *schema = tm_avro_reader_meta(r, "avro.schema", &schema_len);
  if (!schema) return TM_CORRUPT(err, "%s: Avro header has no avro.schema", tm_input_name(r->in));
  int rc = tm_avro_schema_parse(&r->schema, schema, schema_len, err);
  if (rc < 0) return tm_error_prefix(err, "%s", tm_input_name(r->in));
  r->codec_name = tm_avro_reader_meta(r, "avro.codec", NULL);
  if (!r->codec_name || !*r->codec_name) r->codec_name = "null";
  rc = tm_avro__codec_lookup(r->codec_name, &r->codec, err);
  if (rc < 0) return tm_error_prefix(err, "%s", tm_input_name(r->in));
  return TM_OK;
}

int tm_avro_reader_open(tm_avro_reader **out, tm_input *in, const tm_avro_limits *lim,
                        tm_error *err) {
  tm_avro_reader *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  int rc;
  r->in = in;
  if (lim) {
    r->lim = *lim;
  } else {
    tm_avro_limits_default(&r->lim);
  }
  if (r->lim.max_depth <= 0) r->lim.max_depth = 64;
  tm_buf_init(&r->block, r->lim.max_block_bytes);
  tm_arena_init(&r->arena, r->lim.max_record_bytes);
  TM_CHECK(tm_input_size(in, &r->size, err));
  TM_CHECK(read_header(r, err));
  *out = r;
  return TM_OK;
done:
  tm_avro_reader_free(r);
  return rc;
}

const tm_avro_schema *tm_avro_reader_schema(const tm_avro_reader *r) { return r->schema; }
const char *tm_avro_reader_codec(const tm_avro_reader *r) { return r->codec_name; }
int64_t tm_avro_reader_records(const tm_avro_reader *r) { return r->records; }

const char *tm_avro_reader_meta(const tm_avro_reader *r, const char *key, size_t *len_out) {
  for (size_t i = 0; i < r->n_meta; i++) {
    if (strcmp(r->meta[i].key, key) == 0) {
      if (len_out) *len_out = r->meta[i].len;
      return r->meta[i].value;
    }
  }
  return NULL;
}

/* Reads the next block into r->block; sets r->eof at the end of the file. */
static int next_block(tm_avro_reader *r, tm_error *err) {
  size_t avail;
  TM_TRY(fill(r, 1, &avail, err));
  if (avail == 0) {
    r->eof = true;
    return TM_OK;
  }
  uint64_t block_off = cur_offset(r);
  int64_t count, size;
  TM_TRY(win_long(r, &count, err));
  TM_TRY(win_long(r, &size, err));
  if (count < 0 || size < 0) {
    return TM_CORRUPT(err, "%s: block at byte %llu has a negative count or size",
                      tm_input_name(r->in), (unsigned long long)block_off);
  }
  if ((uint64_t)size > r->lim.max_block_bytes) {
    return tm_error_set(err, TM_ETOOLARGE, "%s: block at byte %llu of %lld bytes exceeds the %zu-byte limit",
                        tm_input_name(r->in), (unsigned long long)block_off, (long long)size,
                        r->lim.max_block_bytes);
  }
  if ((uint64_t)size + 16 > r->size - cur_offset(r)) {
    return TM_CORRUPT(err, "%s: block at byte %llu runs past the end of the file",
                      tm_input_name(r->in), (unsigned long long)block_off);
  }
  const uint8_t *data;
  TM_TRY(win_take(r, (size_t)size, &data, err));
  int rc = tm_avro__decompress(r->codec, data, (size_t)size, r->lim.max_block_bytes, &r->block,
                               err);
  if (rc < 0) {
    return tm_error_prefix(err, "%s: block at byte %llu", tm_input_name(r->in),
                           (unsigned long long)block_off);
  }
  const uint8_t *sync;
  TM_TRY(win_take(r, 16, &sync, err));
  if (memcmp(sync, r->sync, 16) != 0) {
    return TM_CORRUPT(err, "%s: sync marker mismatch after the block at byte %llu",
                      tm_input_name(r->in), (unsigned long long)block_off);
  }
  /* Datums of most schemas take at least one byte; zero-size ones (null,
   * empty records) are legal but never come by the million. */
  if ((uint64_t)count > (uint64_t)r->block.len + 65536) {
    return TM_CORRUPT(err, "%s: block at byte %llu claims %lld objects in %zu bytes",
                      tm_input_name(r->in), (unsigned long long)block_off, (long long)count,
                      r->block.len);
  }
  r->cur = (const uint8_t *)r->block.ptr;
  r->end = r->cur + r->block.len;
  if (!r->cur) r->cur = r->end = (const uint8_t *)"";
  r->left_in_block = count;
  return TM_OK;
}

int tm_avro_reader_next(tm_avro_reader *r, const tm_avro_value **out, tm_error *err) {
  while (r->left_in_block == 0) {
    if (r->cur != r->end) {
      return TM_CORRUPT(err, "%s: %zu bytes left over at the end of a block",
                        tm_input_name(r->in), (size_t)(r->end - r->cur));
    }
    if (r->eof) return TM_ITEROVER;
    TM_TRY(next_block(r, err));
    if (r->eof) return TM_ITEROVER;
  }
  tm_arena_reset(&r->arena);
  int rc = tm_avro_decode(&r->cur, r->end, r->schema, &r->arena, r->lim.max_depth, &r->value,
                          err);
  if (rc < 0) {
    return tm_error_prefix(err, "%s: record %lld", tm_input_name(r->in),
                           (long long)r->records);
  }
  r->left_in_block--;
  r->records++;
  *out = &r->value;
  return TM_OK;
}

void tm_avro_reader_free(tm_avro_reader *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_meta; i++) {
    tm_free(r->meta[i].key);
    tm_free(r->meta[i].value);
  }
  tm_free(r->meta);
  tm_free(r->win);
  tm_avro_schema_free(r->schema);
  tm_buf_dispose(&r->block);
  tm_arena_dispose(&r->arena);
  tm_free(r);
}
