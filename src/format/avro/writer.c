/*
 * writer.c - Avro binary encoding and the container file writer (format
 * layer). See avro.h.
 *
 * The writer keeps the whole file in memory (manifests are small) and
 * flushes a block every 256 KiB of encoded datums. Codecs: null and deflate,
 * the two every Avro reader must support.
 */
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "format/avro/avro.h"
#include "format/avro/avro_int.h"
#include "util/alloc.h"
#include "util/hash.h"

#define BLOCK_FLUSH_BYTES ((size_t)256 * 1024)
#define WRITER_LIMIT ((size_t)1 << 34)

int tm_avro_put_long(tm_buf *b, int64_t v, tm_error *err) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  uint8_t tmp[10];
  size_t n = 0;
  while (z >= 0x80) {
    tmp[n++] = (uint8_t)(z | 0x80);
    z >>= 7;
  }
  tmp[n++] = (uint8_t)z;
  return tm_buf_append(b, tmp, n, err);
}

int tm_avro_put_bool(tm_buf *b, bool v, tm_error *err) {
  return tm_buf_putc(b, v ? 1 : 0, err);
}

int tm_avro_put_float(tm_buf *b, float v, tm_error *err) {
  uint32_t bits;
  memcpy(&bits, &v, 4);
  uint8_t tmp[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
                    (uint8_t)(bits >> 24)};
  return tm_buf_append(b, tmp, 4, err);
}

int tm_avro_put_double(tm_buf *b, double v, tm_error *err) {
  uint64_t bits;
  memcpy(&bits, &v, 8);
  uint8_t tmp[8];
  for (int i = 0; i < 8; i++) tmp[i] = (uint8_t)(bits >> (8 * i));
  return tm_buf_append(b, tmp, 8, err);
}

int tm_avro_put_bytes(tm_buf *b, const void *p, size_t len, tm_error *err) {
  TM_TRY(tm_avro_put_long(b, (int64_t)len, err));
  return tm_buf_append(b, p, len, err);
}

int tm_avro_put_string(tm_buf *b, const char *s, tm_error *err) {
  return tm_avro_put_bytes(b, s, strlen(s), err);
}

int tm_avro_put_fixed(tm_buf *b, const void *p, size_t len, tm_error *err) {
  return tm_buf_append(b, p, len, err);
}

/* Picks the union branch for v: its recorded branch, else the first branch
 * of the same kind (and name, for named types). */
static int pick_branch(const tm_avro_schema *u, const tm_avro_value *v, size_t *out) {
  if (v->branch >= 0 && (size_t)v->branch < u->n_branches &&
      u->branches[v->branch]->kind == v->schema->kind) {
    *out = (size_t)v->branch;
    return 0;
  }
  for (size_t i = 0; i < u->n_branches; i++) {
    const tm_avro_schema *b = u->branches[i];
    if (b == v->schema) {
      *out = i;
      return 0;
    }
  }
  for (size_t i = 0; i < u->n_branches; i++) {
    const tm_avro_schema *b = u->branches[i];
    if (b->kind != v->schema->kind) continue;
    if (b->name && v->schema->name && strcmp(b->name, v->schema->name) != 0) continue;
    *out = i;
    return 0;
  }
  return -1;
}

static int encode(tm_buf *out, const tm_avro_schema *s, const tm_avro_value *v, int depth,
                  tm_error *err) {
  if (depth > 64) return tm_error_set(err, TM_EINVALID, "Avro value nests too deeply");
  if (s->kind == TM_AVRO_UNION) {
    size_t idx;
    if (pick_branch(s, v, &idx) < 0) {
      return tm_error_set(err, TM_EINVALID, "Avro value of kind %s fits no branch of the union",
                          tm_avro_kind_name(v->schema->kind));
    }
    TM_TRY(tm_avro_put_long(out, (int64_t)idx, err));
    return encode(out, s->branches[idx], v, depth + 1, err);
  }
  if (v->schema->kind != s->kind) {
    return tm_error_set(err, TM_EINVALID, "Avro value of kind %s where the schema has %s",
                        tm_avro_kind_name(v->schema->kind), tm_avro_kind_name(s->kind));
  }
  switch (s->kind) {
    case TM_AVRO_NULL:
      return TM_OK;
    case TM_AVRO_BOOLEAN:
      return tm_avro_put_bool(out, v->u.b, err);
    case TM_AVRO_INT:
      if (v->u.l < INT32_MIN || v->u.l > INT32_MAX) {
        return tm_error_set(err, TM_EINVALID, "Avro int value %lld is out of range",
                            (long long)v->u.l);
      }
      return tm_avro_put_long(out, v->u.l, err);
    case TM_AVRO_LONG:
      return tm_avro_put_long(out, v->u.l, err);
    case TM_AVRO_FLOAT:
      return tm_avro_put_float(out, v->u.f, err);
    case TM_AVRO_DOUBLE:
      return tm_avro_put_double(out, v->u.d, err);
    case TM_AVRO_BYTES:
    case TM_AVRO_STRING:
      return tm_avro_put_bytes(out, v->u.bytes.ptr, v->u.bytes.len, err);
    case TM_AVRO_FIXED:
      if ((int64_t)v->u.bytes.len != s->size) {
        return tm_error_set(err, TM_EINVALID, "Avro fixed value of %zu bytes for fixed(%lld)",
                            v->u.bytes.len, (long long)s->size);
      }
      return tm_avro_put_fixed(out, v->u.bytes.ptr, v->u.bytes.len, err);
    case TM_AVRO_ENUM:
      if (v->u.l < 0 || (uint64_t)v->u.l >= s->n_symbols) {
        return tm_error_set(err, TM_EINVALID, "Avro enum index %lld is out of range",
                            (long long)v->u.l);
      }
      return tm_avro_put_long(out, v->u.l, err);
    case TM_AVRO_RECORD:
      if (v->u.list.n != s->n_fields) {
        return tm_error_set(err, TM_EINVALID, "Avro record value has %zu fields, schema %zu",
                            v->u.list.n, s->n_fields);
      }
      for (size_t i = 0; i < s->n_fields; i++) {
        TM_TRY(encode(out, s->fields[i].type, &v->u.list.items[i], depth + 1, err));
      }
      return TM_OK;
    case TM_AVRO_ARRAY:
      if (v->u.list.n) {
        TM_TRY(tm_avro_put_long(out, (int64_t)v->u.list.n, err));
        for (size_t i = 0; i < v->u.list.n; i++) {
          TM_TRY(encode(out, s->items, &v->u.list.items[i], depth + 1, err));
        }
      }
      return tm_avro_put_long(out, 0, err);
    case TM_AVRO_MAP:
      if (v->u.map.n) {
        TM_TRY(tm_avro_put_long(out, (int64_t)v->u.map.n, err));
        for (size_t i = 0; i < v->u.map.n; i++) {
          TM_TRY(tm_avro_put_bytes(out, v->u.map.keys[i].ptr, v->u.map.keys[i].len, err));
          TM_TRY(encode(out, s->items, &v->u.map.values[i], depth + 1, err));
        }
      }
      return tm_avro_put_long(out, 0, err);
    case TM_AVRO_UNION:
      break;
  }
  return tm_error_set(err, TM_EINVALID, "Avro schema node of unknown kind");
}

int tm_avro_encode(tm_buf *out, const tm_avro_schema *s, const tm_avro_value *v,
                   tm_error *err) {
  return encode(out, s, v, 0, err);
}

struct tm_avro_writer {
  tm_avro_schema *schema; /* owned */
  tm_avro_codec codec;
  uint8_t sync[16];
  tm_buf file;    /* header and flushed blocks */
  tm_buf pending; /* encoded datums of the open block */
  tm_buf scratch; /* compressed block, encoded datum */
  int64_t pending_count;
  bool finished;
};

static void make_sync(uint8_t sync[16]) {
  if (getrandom(sync, 16, GRND_NONBLOCK) == 16) return;
  /* No entropy available yet: derive a marker from the clock and address. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t a = tm_hash_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
  uint64_t b = tm_hash_mix64(a ^ (uint64_t)(uintptr_t)sync);
  memcpy(sync, &a, 8);
  memcpy(sync + 8, &b, 8);
}

static int put_meta(tm_buf *b, const char *key, const void *val, size_t len, tm_error *err) {
  TM_TRY(tm_avro_put_string(b, key, err));
  return tm_avro_put_bytes(b, val, len, err);
}

int tm_avro_writer_new(tm_avro_writer **out, const char *schema_json, tm_avro_codec codec,
                       const tm_kv *meta, tm_error *err) {
  if (meta) {
    for (size_t i = 0; i < meta->len; i++) {
      if (tm_str_has_prefix(meta->items[i].key, "avro.")) {
        return tm_error_set(err, TM_EINVALID, "Avro metadata key \"%s\" is reserved",
                            meta->items[i].key);
      }
    }
  }
  tm_avro_writer *w = tm_calloc(1, sizeof *w);
  if (!w) return tm_error_nomem(err);
  int rc;
  tm_buf_init(&w->file, WRITER_LIMIT);
  tm_buf_init(&w->pending, WRITER_LIMIT);
  tm_buf_init(&w->scratch, WRITER_LIMIT);
  w->codec = codec;
  TM_CHECK(tm_avro_schema_parse(&w->schema, schema_json, strlen(schema_json), err));
  make_sync(w->sync);
  TM_CHECK(tm_buf_append(&w->file, "Obj\x01", 4, err));
  size_t n_meta = 2 + (meta ? meta->len : 0);
  TM_CHECK(tm_avro_put_long(&w->file, (int64_t)n_meta, err));
  TM_CHECK(put_meta(&w->file, "avro.schema", schema_json, strlen(schema_json), err));
  const char *codec_name = codec == TM_AVRO_CODEC_DEFLATE ? "deflate" : "null";
  TM_CHECK(put_meta(&w->file, "avro.codec", codec_name, strlen(codec_name), err));
  for (size_t i = 0; meta && i < meta->len; i++) {
    TM_CHECK(put_meta(&w->file, meta->items[i].key, meta->items[i].value,
                      strlen(meta->items[i].value), err));
  }
  TM_CHECK(tm_avro_put_long(&w->file, 0, err));
  TM_CHECK(tm_buf_append(&w->file, w->sync, 16, err));
  *out = w;
  return TM_OK;
done:
  tm_avro_writer_free(w);
  return rc;
}

const tm_avro_schema *tm_avro_writer_schema(const tm_avro_writer *w) { return w->schema; }

static int flush_block(tm_avro_writer *w, tm_error *err) {
  if (w->pending_count == 0) return TM_OK;
  const uint8_t *data = (const uint8_t *)w->pending.ptr;
  size_t len = w->pending.len;
  if (w->codec == TM_AVRO_CODEC_DEFLATE) {
    tm_buf_clear(&w->scratch);
    TM_TRY(tm_avro__deflate(data, len, &w->scratch, err));
    data = (const uint8_t *)w->scratch.ptr;
    len = w->scratch.len;
  }
  TM_TRY(tm_avro_put_long(&w->file, w->pending_count, err));
  TM_TRY(tm_avro_put_long(&w->file, (int64_t)len, err));
  TM_TRY(tm_buf_append(&w->file, data, len, err));
  TM_TRY(tm_buf_append(&w->file, w->sync, 16, err));
  tm_buf_clear(&w->pending);
  w->pending_count = 0;
  return TM_OK;
}

int tm_avro_writer_append_encoded(tm_avro_writer *w, const void *datum, size_t len,
                                  tm_error *err) {
  if (w->finished) return tm_error_set(err, TM_EINVALID, "Avro writer is already finished");
  TM_TRY(tm_buf_append(&w->pending, datum, len, err));
  w->pending_count++;
  if (w->pending.len >= BLOCK_FLUSH_BYTES) return flush_block(w, err);
  return TM_OK;
}

int tm_avro_writer_append(tm_avro_writer *w, const tm_avro_value *v, tm_error *err) {
  if (w->finished) return tm_error_set(err, TM_EINVALID, "Avro writer is already finished");
  size_t before = w->pending.len;
  int rc = tm_avro_encode(&w->pending, w->schema, v, err);
  if (rc < 0) {
    tm_buf_truncate(&w->pending, before);
    return rc;
  }
  w->pending_count++;
  if (w->pending.len >= BLOCK_FLUSH_BYTES) return flush_block(w, err);
  return TM_OK;
}

int tm_avro_writer_finish(tm_avro_writer *w, tm_buf *out, tm_error *err) {
  if (w->finished) return tm_error_set(err, TM_EINVALID, "Avro writer is already finished");
  TM_TRY(flush_block(w, err));
  w->finished = true;
  tm_buf_dispose(out);
  *out = w->file;
  out->limit = w->file.limit;
  tm_buf_init(&w->file, WRITER_LIMIT);
  return TM_OK;
}

void tm_avro_writer_free(tm_avro_writer *w) {
  if (!w) return;
  tm_avro_schema_free(w->schema);
  tm_buf_dispose(&w->file);
  tm_buf_dispose(&w->pending);
  tm_buf_dispose(&w->scratch);
  tm_free(w);
}
