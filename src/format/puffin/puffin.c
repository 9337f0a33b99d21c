/*
 * puffin.c - Puffin file reader and writer (see puffin.h for the layout).
 */
#include "format/puffin/puffin.h"

#include <jansson.h>
#include <lz4frame.h>
#include <string.h>
#include <zstd.h>

#include "util/alloc.h"

#define MAGIC_LEN 4
/* Footer tail: FooterPayloadSize (4) + Flags (4) + Magic (4). */
#define TAIL_LEN 12
#define FLAG_COMPRESSED 0x01
#define PUFFIN_ARENA_LIMIT ((size_t)64 << 20)

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* ---- decompression ---------------------------------------------------------------- */

/* One LZ4 frame that declares its content size, into out (cleared). */
static int lz4_frame(const tm_puffin_file *pf, const uint8_t *src, size_t len, size_t cap,
                     tm_buf *out, tm_error *err) {
  LZ4F_dctx *d = NULL;
  int rc = TM_OK;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION))) {
    return tm_error_nomem(err);
  }
  LZ4F_frameInfo_t info;
  memset(&info, 0, sizeof info);
  size_t used = len;
  size_t r = LZ4F_getFrameInfo(d, &info, src, &used);
  if (LZ4F_isError(r)) {
    rc = TM_CORRUPT(err, "%s: bad LZ4 frame: %s", pf->name, LZ4F_getErrorName(r));
    goto done;
  }
  if (info.contentSize == 0 || info.contentSize > cap) {
    rc = TM_CORRUPT(err, "%s: LZ4 frame content size %llu missing or over %zu bytes", pf->name,
                    (unsigned long long)info.contentSize, cap);
    goto done;
  }
  tm_buf_clear(out);
  void *dst = NULL;
  TM_CHECK(tm_buf_extend(out, (size_t)info.contentSize, &dst, err));
  size_t in_at = used, out_at = 0;
  while (in_at < len && out_at < info.contentSize) {
    size_t in_n = len - in_at, out_n = (size_t)info.contentSize - out_at;
    r = LZ4F_decompress(d, (uint8_t *)dst + out_at, &out_n, src + in_at, &in_n, NULL);
    if (LZ4F_isError(r)) {
      rc = TM_CORRUPT(err, "%s: bad LZ4 frame: %s", pf->name, LZ4F_getErrorName(r));
      goto done;
    }
    if (in_n == 0 && out_n == 0) break;
    in_at += in_n;
    out_at += out_n;
    if (r == 0) break;
  }
  if (out_at != info.contentSize) {
    rc = TM_CORRUPT(err, "%s: LZ4 frame holds %zu bytes, declares %llu", pf->name, out_at,
                    (unsigned long long)info.contentSize);
  }
done:
  LZ4F_freeDecompressionContext(d);
  return rc;
}

static int zstd_frame(const tm_puffin_file *pf, const uint8_t *src, size_t len, size_t cap,
                      tm_buf *out, tm_error *err) {
  unsigned long long n = ZSTD_getFrameContentSize(src, len);
  if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > cap) {
    return TM_CORRUPT(err, "%s: zstd frame without a content size of at most %zu bytes",
                      pf->name, cap);
  }
  tm_buf_clear(out);
  void *dst = NULL;
  TM_TRY(tm_buf_extend(out, (size_t)n, &dst, err));
  size_t got = ZSTD_decompress(dst, (size_t)n, src, len);
  if (ZSTD_isError(got) || got != n) {
    return TM_CORRUPT(err, "%s: bad zstd frame: %s", pf->name,
                      ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short content");
  }
  return TM_OK;
}

/* ---- footer ------------------------------------------------------------------------ */

static int get_i64(const tm_puffin_file *pf, json_t *o, const char *key, size_t i, int64_t *out,
                   tm_error *err) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v)) {
    return TM_CORRUPT(err, "%s: blob %zu: \"%s\" is missing or not an integer", pf->name, i, key);
  }
  *out = (int64_t)json_integer_value(v);
  return TM_OK;
}

static int get_props(tm_puffin_file *pf, json_t *o, const char *what, const char *const **keys,
                     const char *const **vals, size_t *n, tm_error *err) {
  *keys = *vals = NULL;
  *n = 0;
  if (!o) return TM_OK;
  if (!json_is_object(o)) {
    return TM_CORRUPT(err, "%s: %s \"properties\" is not an object", pf->name, what);
  }
  size_t cnt = json_object_size(o);
  if (cnt == 0) return TM_OK;
  const char **k = tm_arena_calloc(&pf->arena, cnt, sizeof *k, err);
  const char **v = tm_arena_calloc(&pf->arena, cnt, sizeof *v, err);
  if (!k || !v) return err->code;
  const char *key;
  json_t *val;
  size_t at = 0;
  json_object_foreach(o, key, val) {
    if (!json_is_string(val)) {
      return TM_CORRUPT(err, "%s: %s property \"%s\" is not a string", pf->name, what, key);
    }
    k[at] = tm_arena_strndup(&pf->arena, key, strlen(key), err);
    v[at] = tm_arena_strndup(&pf->arena, json_string_value(val), json_string_length(val), err);
    if (!k[at] || !v[at]) return err->code;
    at++;
  }
  *keys = k;
  *vals = v;
  *n = at;
  return TM_OK;
}

static int parse_blob(tm_puffin_file *pf, json_t *o, size_t i, uint64_t data_end,
                      tm_puffin_blob *b, tm_error *err) {
  if (!json_is_object(o)) return TM_CORRUPT(err, "%s: blob %zu is not an object", pf->name, i);
  json_t *type = json_object_get(o, "type");
  if (!json_is_string(type)) {
    return TM_CORRUPT(err, "%s: blob %zu: \"type\" is missing or not a string", pf->name, i);
  }
  b->type = tm_arena_strndup(&pf->arena, json_string_value(type), json_string_length(type), err);
  if (!b->type) return err->code;
  json_t *fields = json_object_get(o, "fields");
  if (!json_is_array(fields)) {
    return TM_CORRUPT(err, "%s: blob %zu: \"fields\" is missing or not a list", pf->name, i);
  }
  size_t nf = json_array_size(fields);
  int32_t *fv = tm_arena_calloc(&pf->arena, nf ? nf : 1, sizeof *fv, err);
  if (!fv) return err->code;
  for (size_t k = 0; k < nf; k++) {
    json_t *f = json_array_get(fields, k);
    if (!json_is_integer(f) || json_integer_value(f) < INT32_MIN ||
        json_integer_value(f) > INT32_MAX) {
      return TM_CORRUPT(err, "%s: blob %zu: field %zu is not an int", pf->name, i, k);
    }
    fv[k] = (int32_t)json_integer_value(f);
  }
  b->fields = fv;
  b->n_fields = nf;
  TM_TRY(get_i64(pf, o, "snapshot-id", i, &b->snapshot_id, err));
  TM_TRY(get_i64(pf, o, "sequence-number", i, &b->sequence_number, err));
  TM_TRY(get_i64(pf, o, "offset", i, &b->offset, err));
  TM_TRY(get_i64(pf, o, "length", i, &b->length, err));
  if (b->offset < MAGIC_LEN || b->length < 0 || (uint64_t)b->offset > data_end ||
      (uint64_t)b->length > data_end - (uint64_t)b->offset) {
    return TM_CORRUPT(err,
                      "%s: blob %zu: offset %lld and length %lld are outside the blob area "
                      "(bytes 4 to %llu)",
                      pf->name, i, (long long)b->offset, (long long)b->length,
                      (unsigned long long)data_end);
  }
  json_t *codec = json_object_get(o, "compression-codec");
  if (codec && !json_is_null(codec)) {
    if (!json_is_string(codec)) {
      return TM_CORRUPT(err, "%s: blob %zu: \"compression-codec\" is not a string", pf->name, i);
    }
    b->codec =
        tm_arena_strndup(&pf->arena, json_string_value(codec), json_string_length(codec), err);
    if (!b->codec) return err->code;
  }
  char what[32];
  snprintf(what, sizeof what, "blob %zu", i);
  const char *const *keys, *const *vals;
  TM_TRY(get_props(pf, json_object_get(o, "properties"), what, &keys, &vals, &b->n_props, err));
  b->prop_keys = keys;
  b->prop_vals = vals;
  return TM_OK;
}

static int parse_footer(tm_puffin_file *pf, const char *json, size_t len, uint64_t data_end,
                        tm_error *err) {
  json_error_t jerr;
  json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
  int rc = TM_OK;
  if (!root) {
    return TM_CORRUPT(err, "%s: footer payload is not JSON: %s (line %d)", pf->name, jerr.text,
                      jerr.line);
  }
  if (!json_is_object(root)) {
    rc = TM_CORRUPT(err, "%s: footer payload is not a JSON object", pf->name);
    goto done;
  }
  json_t *blobs = json_object_get(root, "blobs");
  if (!json_is_array(blobs)) {
    rc = TM_CORRUPT(err, "%s: footer has no \"blobs\" list", pf->name);
    goto done;
  }
  size_t n = json_array_size(blobs);
  pf->blobs = tm_arena_calloc(&pf->arena, n ? n : 1, sizeof *pf->blobs, err);
  if (!pf->blobs) {
    rc = err->code;
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    TM_CHECK(parse_blob(pf, json_array_get(blobs, i), i, data_end, &pf->blobs[i], err));
    pf->n_blobs = i + 1;
  }
  const char *const *keys, *const *vals;
  TM_CHECK(get_props(pf, json_object_get(root, "properties"), "file", &keys, &vals,
                     &pf->n_props, err));
  pf->prop_keys = keys;
  pf->prop_vals = vals;
done:
  json_decref(root);
  return rc;
}

int tm_puffin_open(tm_puffin_file **out, tm_input *in, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  *out = NULL;
  tm_buf payload = TM_BUF_INIT(TM_PUFFIN_FOOTER_MAX);
  tm_buf plain = TM_BUF_INIT(TM_PUFFIN_FOOTER_MAX);
  int rc = TM_OK;
  tm_puffin_file *pf = tm_calloc(1, sizeof *pf);
  if (!pf) {
    tm_input_close(in);
    return tm_error_nomem(err);
  }
  pf->in = in;
  tm_arena_init(&pf->arena, PUFFIN_ARENA_LIMIT);
  pf->name = tm_strdup(tm_input_name(in) ? tm_input_name(in) : "puffin file");
  if (!pf->name) {
    rc = tm_error_nomem(err);
    goto done;
  }
  TM_CHECK(tm_input_size(in, &pf->size, err));
  /* Magic, then the smallest footer: Magic + empty payload + tail. */
  if (pf->size < MAGIC_LEN + MAGIC_LEN + TAIL_LEN) {
    rc = TM_CORRUPT(err, "%s: not a Puffin file (%llu bytes, too short)", pf->name,
                    (unsigned long long)pf->size);
    goto done;
  }
  uint8_t head[MAGIC_LEN], tail[TAIL_LEN];
  TM_CHECK(tm_input_read_exact(in, 0, head, sizeof head, err));
  TM_CHECK(tm_input_read_exact(in, pf->size - TAIL_LEN, tail, sizeof tail, err));
  if (memcmp(head, TM_PUFFIN_MAGIC, MAGIC_LEN) != 0 ||
      memcmp(tail + 8, TM_PUFFIN_MAGIC, MAGIC_LEN) != 0) {
    rc = TM_CORRUPT(err, "%s: not a Puffin file (no PFA1 magic at %s)", pf->name,
                    memcmp(head, TM_PUFFIN_MAGIC, MAGIC_LEN) != 0 ? "the start" : "the end");
    goto done;
  }
  int32_t psize = (int32_t)le32(tail);
  uint8_t flags0 = tail[4];
  if (psize < 0 || (uint64_t)psize > pf->size - (MAGIC_LEN + MAGIC_LEN + TAIL_LEN) ||
      (size_t)psize > TM_PUFFIN_FOOTER_MAX) {
    rc = TM_CORRUPT(err, "%s: footer payload size %d does not fit the file (%llu bytes)",
                    pf->name, psize, (unsigned long long)pf->size);
    goto done;
  }
  uint64_t footer_at = pf->size - TAIL_LEN - (uint64_t)psize - MAGIC_LEN;
  void *dst = NULL;
  TM_CHECK(tm_buf_extend(&payload, (size_t)psize + MAGIC_LEN, &dst, err));
  TM_CHECK(tm_input_read_exact(in, footer_at, dst, (size_t)psize + MAGIC_LEN, err));
  if (memcmp(payload.ptr, TM_PUFFIN_MAGIC, MAGIC_LEN) != 0) {
    rc = TM_CORRUPT(err, "%s: no PFA1 magic at the start of the footer (byte %llu)", pf->name,
                    (unsigned long long)footer_at);
    goto done;
  }
  const char *json = payload.ptr + MAGIC_LEN;
  size_t json_len = (size_t)psize;
  if (flags0 & FLAG_COMPRESSED) {
    TM_CHECK(lz4_frame(pf, (const uint8_t *)json, json_len, TM_PUFFIN_FOOTER_MAX, &plain, err));
    json = plain.ptr;
    json_len = plain.len;
  }
  TM_CHECK(parse_footer(pf, json, json_len, footer_at, err));
  *out = pf;
  pf = NULL;
done:
  tm_buf_dispose(&payload);
  tm_buf_dispose(&plain);
  tm_puffin_close(pf);
  return rc;
}

void tm_puffin_close(tm_puffin_file *pf) {
  if (!pf) return;
  tm_input_close(pf->in);
  tm_arena_dispose(&pf->arena);
  tm_free(pf->name);
  tm_free(pf);
}

const tm_puffin_blob *tm_puffin_find_blob(const tm_puffin_file *pf, int64_t offset,
                                          int64_t length) {
  for (size_t i = 0; i < pf->n_blobs; i++) {
    if (pf->blobs[i].offset == offset && pf->blobs[i].length == length) return &pf->blobs[i];
  }
  return NULL;
}

const char *tm_puffin_blob_prop(const tm_puffin_blob *b, const char *key) {
  for (size_t i = 0; i < b->n_props; i++) {
    if (strcmp(b->prop_keys[i], key) == 0) return b->prop_vals[i];
  }
  return NULL;
}

int tm_puffin_read_blob(tm_puffin_file *pf, const tm_puffin_blob *b, tm_buf *out,
                        tm_error *err) {
  if ((uint64_t)b->length > TM_PUFFIN_BLOB_MAX) {
    return tm_error_set(err, TM_ETOOLARGE, "%s: blob of %lld bytes is over the %zu-byte limit",
                        pf->name, (long long)b->length, TM_PUFFIN_BLOB_MAX);
  }
  tm_buf_clear(out);
  if (!b->codec) {
    void *dst = NULL;
    TM_TRY(tm_buf_extend(out, (size_t)b->length, &dst, err));
    return tm_input_read_exact(pf->in, (uint64_t)b->offset, dst, (size_t)b->length, err);
  }
  bool lz4 = strcmp(b->codec, "lz4") == 0, zstd = strcmp(b->codec, "zstd") == 0;
  if (!lz4 && !zstd) {
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "%s: blob compression codec \"%s\" is not supported (lz4, zstd)",
                        pf->name, b->codec);
  }
  tm_buf raw = TM_BUF_INIT(TM_PUFFIN_BLOB_MAX);
  void *dst = NULL;
  int rc;
  TM_CHECK(tm_buf_extend(&raw, (size_t)b->length, &dst, err));
  TM_CHECK(tm_input_read_exact(pf->in, (uint64_t)b->offset, dst, (size_t)b->length, err));
  rc = lz4 ? lz4_frame(pf, (const uint8_t *)raw.ptr, raw.len, out->limit, out, err)
           : zstd_frame(pf, (const uint8_t *)raw.ptr, raw.len, out->limit, out, err);
done:
  tm_buf_dispose(&raw);
  return rc;
}

/* ---- writer ------------------------------------------------------------------------ */

int tm_puffin_writer_init(tm_puffin_writer *w, tm_error *err) {
  memset(w, 0, sizeof *w);
  tm_buf_init(&w->out, TM_PUFFIN_BLOB_MAX);
  tm_buf_init(&w->blobs, TM_PUFFIN_FOOTER_MAX);
  return tm_buf_append(&w->out, TM_PUFFIN_MAGIC, MAGIC_LEN, err);
}

/* A JSON string: quotes, backslashes and control bytes escaped; UTF-8 passes through. */
static int put_json_string(tm_buf *b, const char *s, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      TM_TRY(tm_buf_putc(b, '\\', err));
      TM_TRY(tm_buf_putc(b, (char)*p, err));
    } else if (*p < 0x20) {
      TM_TRY(tm_buf_printf(b, err, "\\u%04x", (unsigned)*p));
    } else {
      TM_TRY(tm_buf_putc(b, (char)*p, err));
    }
  }
  return tm_buf_putc(b, '"', err);
}

int tm_puffin_writer_add(tm_puffin_writer *w, const char *type, const int32_t *fields,
                         size_t n_fields, int64_t snapshot_id, int64_t sequence_number,
                         const char *const *keys, const char *const *vals, size_t n_props,
                         const void *data, size_t len, int64_t *offset, int64_t *length,
                         tm_error *err) {
  int64_t at = (int64_t)w->out.len;
  TM_TRY(tm_buf_append(&w->out, data, len, err));
  tm_buf *b = &w->blobs;
  TM_TRY(tm_buf_puts(b, w->n_blobs ? ",{\"type\":" : "{\"type\":", err));
  TM_TRY(put_json_string(b, type, err));
  TM_TRY(tm_buf_puts(b, ",\"fields\":[", err));
  for (size_t i = 0; i < n_fields; i++) {
    TM_TRY(tm_buf_printf(b, err, "%s%d", i ? "," : "", (int)fields[i]));
  }
  TM_TRY(tm_buf_printf(b, err,
                       "],\"snapshot-id\":%lld,\"sequence-number\":%lld,\"offset\":%lld,"
                       "\"length\":%lld",
                       (long long)snapshot_id, (long long)sequence_number, (long long)at,
                       (long long)len));
  if (n_props) {
    TM_TRY(tm_buf_puts(b, ",\"properties\":{", err));
    for (size_t i = 0; i < n_props; i++) {
      if (i) TM_TRY(tm_buf_putc(b, ',', err));
      TM_TRY(put_json_string(b, keys[i], err));
      TM_TRY(tm_buf_putc(b, ':', err));
      TM_TRY(put_json_string(b, vals[i], err));
    }
    TM_TRY(tm_buf_putc(b, '}', err));
  }
  TM_TRY(tm_buf_putc(b, '}', err));
  w->n_blobs++;
  *offset = at;
  *length = (int64_t)len;
  return TM_OK;
}

int tm_puffin_writer_finish(tm_puffin_writer *w, const char *created_by, tm_error *err) {
  size_t start = w->out.len;
  TM_TRY(tm_buf_append(&w->out, TM_PUFFIN_MAGIC, MAGIC_LEN, err));
  size_t payload_at = w->out.len;
  TM_TRY(tm_buf_puts(&w->out, "{\"blobs\":[", err));
  TM_TRY(tm_buf_append(&w->out, w->blobs.ptr ? w->blobs.ptr : "", w->blobs.len, err));
  TM_TRY(tm_buf_puts(&w->out, "],\"properties\":{\"created-by\":", err));
  TM_TRY(put_json_string(&w->out, created_by, err));
  TM_TRY(tm_buf_puts(&w->out, "}}", err));
  size_t psize = w->out.len - payload_at;
  if (psize > TM_PUFFIN_FOOTER_MAX) {
    tm_buf_truncate(&w->out, start);
    return tm_error_set(err, TM_ETOOLARGE, "Puffin footer of %zu bytes is over the limit", psize);
  }
  uint8_t tail[TAIL_LEN];
  put_le32(tail, (uint32_t)psize);
  memset(tail + 4, 0, 4); /* flags: payload not compressed */
  memcpy(tail + 8, TM_PUFFIN_MAGIC, MAGIC_LEN);
  return tm_buf_append(&w->out, tail, sizeof tail, err);
}

void tm_puffin_writer_dispose(tm_puffin_writer *w) {
  tm_buf_dispose(&w->out);
  tm_buf_dispose(&w->blobs);
}
