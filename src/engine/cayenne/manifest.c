/*
 * manifest.c - cayenne's manifest: the published state in one file
 * (engine layer). The format is described in cayenne_int.h.
 *
 * The manifest names the live segments with their zone maps and deletion
 * sets, and holds the state map, so that the rows and the state map of a
 * commit become durable in one atomic rename (SPEC D1). Parsing checks every
 * length against the bytes left, and the trailing checksum.
 */
#include <string.h>

#include "engine/cayenne/cayenne_int.h"
#include "util/alloc.h"
#include "util/hash.h"

#define MAGIC "TMCAYMAN"
#define END_MAGIC "TMCAYEND"
#define VERSION 1

static int put_u8(tm_buf *b, uint8_t v, tm_error *err) { return tm_buf_append(b, &v, 1, err); }
static int put_u32(tm_buf *b, uint32_t v, tm_error *err) { return tm_buf_append(b, &v, 4, err); }
static int put_u64(tm_buf *b, uint64_t v, tm_error *err) { return tm_buf_append(b, &v, 8, err); }
static int put_str(tm_buf *b, const void *p, size_t n, tm_error *err) {
  if (n > UINT32_MAX) return tm_error_set(err, TM_ETOOLARGE, "manifest string too long");
  TM_TRY(put_u32(b, (uint32_t)n, err));
  return tm_buf_append(b, n ? p : "", n, err);
}

static bool is_bytes(tm_type_id id) {
  return id == TM_TYPE_UTF8 || id == TM_TYPE_BINARY || id == TM_TYPE_FIXED_BINARY;
}

static int put_value(tm_buf *b, const tm_type *t, const tm_value *v, tm_error *err) {
  if (is_bytes(t->id)) return put_str(b, v->v.s.ptr, v->v.s.len, err);
  if (t->id == TM_TYPE_BOOL) return put_u8(b, v->v.b ? 1 : 0, err);
  if (t->id == TM_TYPE_DECIMAL128) return tm_buf_append(b, v->v.dec, 16, err);
  if (t->id == TM_TYPE_FLOAT32 || t->id == TM_TYPE_FLOAT64) return tm_buf_append(b, &v->v.f, 8, err);
  return put_u64(b, v->v.u, err);
}

int tm_cay_manifest_encode(tm_buf *out, const tm_csnap *s, const char *schema_text,
                           const char *options_text, uint64_t next_seg_id, tm_error *err) {
  const tm_schema *schema = &s->base.engine->schema;
  TM_TRY(tm_buf_append(out, MAGIC, 8, err));
  TM_TRY(put_u32(out, VERSION, err));
  TM_TRY(put_u32(out, 0, err));
  TM_TRY(put_u64(out, s->generation, err));
  TM_TRY(put_u64(out, next_seg_id, err));
  TM_TRY(put_str(out, schema_text, strlen(schema_text), err));
  TM_TRY(put_str(out, options_text, strlen(options_text), err));
  TM_TRY(put_u32(out, (uint32_t)s->state.len, err));
  for (size_t i = 0; i < s->state.len; i++) {
    TM_TRY(put_str(out, s->state.items[i].key, strlen(s->state.items[i].key), err));
    TM_TRY(put_str(out, s->state.items[i].value, strlen(s->state.items[i].value), err));
  }
  TM_TRY(put_u32(out, (uint32_t)s->n_segs, err));
  char *del = NULL;
  for (size_t i = 0; i < s->n_segs; i++) {
    const tm_csnap_seg *g = &s->segs[i];
    TM_TRY(put_u64(out, g->seg->id, err));
    TM_TRY(put_u64(out, (uint64_t)g->seg->n_rows, err));
    TM_TRY(put_u64(out, g->seg->file_size, err));
    TM_TRY(put_u64(out, g->seg->checksum, err));
    for (size_t c = 0; c < schema->n_cols; c++) {
      const tm_col_stats *z = &g->seg->cols[c].zone;
      TM_TRY(put_u8(out, (uint8_t)((z->has_min ? 1 : 0) | (z->has_max ? 2 : 0)), err));
      TM_TRY(put_u64(out, (uint64_t)z->null_count, err));
      if (z->has_min) TM_TRY(put_value(out, &schema->cols[c].type, &z->min, err));
      if (z->has_max) TM_TRY(put_value(out, &schema->cols[c].type, &z->max, err));
    }
    if (!g->del || g->del->card == 0) {
      TM_TRY(put_u32(out, 0, err));
      continue;
    }
    size_t n = roaring_bitmap_portable_size_in_bytes(g->del->bm);
    del = tm_malloc(n ? n : 1);
    if (!del) return tm_error_nomem(err);
    size_t w = roaring_bitmap_portable_serialize(g->del->bm, del);
    int rc = put_str(out, del, w, err);
    tm_free(del);
    TM_TRY(rc);
  }
  uint64_t sum = tm_hash64(out->ptr, out->len, 0x3a4f);
  TM_TRY(put_u64(out, sum, err));
  return tm_buf_append(out, END_MAGIC, 8, err);
}

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct rd {
  const uint8_t *p;
  size_t left;
  bool bad;
} rd;

static const void *take(rd *r, size_t n) {
  if (r->bad || n > r->left) {
    r->bad = true;
    return NULL;
  }
  const void *p = r->p;
  r->p += n;
  r->left -= n;
  return p;
}
static uint8_t get_u8(rd *r) {
  const uint8_t *p = take(r, 1);
  return p ? *p : 0;
}
static uint32_t get_u32(rd *r) {
  const void *p = take(r, 4);
  uint32_t v = 0;
  if (p) memcpy(&v, p, 4);
  return v;
}
static uint64_t get_u64(rd *r) {
  const void *p = take(r, 8);
  uint64_t v = 0;
  if (p) memcpy(&v, p, 8);
  return v;
}
static tm_strview get_str(rd *r) {
  uint32_t n = get_u32(r);
  const char *p = take(r, n);
  return p ? tm_sv(p, n) : tm_sv("", 0);
}

static void get_value(rd *r, const tm_type *t, tm_value *v) {
  v->type = t->id;
  v->is_null = false;
  if (is_bytes(t->id)) v->v.s = get_str(r);
  else if (t->id == TM_TYPE_BOOL) v->v.b = get_u8(r) != 0;
  else if (t->id == TM_TYPE_DECIMAL128) {
    const void *p = take(r, 16);
    if (p) memcpy(v->v.dec, p, 16);
  } else if (t->id == TM_TYPE_FLOAT32 || t->id == TM_TYPE_FLOAT64) {
    const void *p = take(r, 8);
    if (p) memcpy(&v->v.f, p, 8);
  } else {
    v->v.u = get_u64(r);
  }
}

/* Checks magic, version and checksum; positions r after the fixed header. */
static int open_reader(rd *r, const char *data, size_t len, tm_error *err) {
  if (len < 8 + 8 + 8 + 8 || memcmp(data, MAGIC, 8) != 0 ||
      memcmp(data + len - 8, END_MAGIC, 8) != 0)
    return TM_CORRUPT(err, "manifest: not a cayenne manifest");
  uint64_t sum;
  memcpy(&sum, data + len - 16, 8);
  if (tm_hash64(data, len - 16, 0x3a4f) != sum) return TM_CORRUPT(err, "manifest: checksum mismatch");
  r->p = (const uint8_t *)data + 8;
  r->left = len - 8 - 16;
  r->bad = false;
  uint32_t version = get_u32(r);
  (void)get_u32(r);
  if (version != VERSION) return TM_CORRUPT(err, "manifest: unknown version %u", version);
  return TM_OK;
}

int tm_cay_manifest_schema(const char *data, size_t len, tm_strview *schema_text, tm_error *err) {
  rd r;
  TM_TRY(open_reader(&r, data, len, err));
  (void)get_u64(&r);
  (void)get_u64(&r);
  *schema_text = get_str(&r);
  if (r.bad) return TM_CORRUPT(err, "manifest: truncated header");
  return TM_OK;
}

void tm_cay_manifest_dispose(tm_cay_manifest *m) {
  for (size_t i = 0; i < m->n_segs; i++) tm_free(m->segs[i].zones);
  tm_free(m->segs);
  tm_kv_dispose(&m->state);
  memset(m, 0, sizeof *m);
}

int tm_cay_manifest_decode(tm_cay_manifest *m, const char *data, size_t len,
                           const tm_schema *schema, tm_error *err) {
  memset(m, 0, sizeof *m);
  tm_kv_init(&m->state);
  rd r;
  TM_TRY(open_reader(&r, data, len, err));
  int rc = TM_OK;
  m->generation = get_u64(&r);
  m->next_seg_id = get_u64(&r);
  m->schema_text = get_str(&r);
  m->options_text = get_str(&r);
  uint32_t n_state = get_u32(&r);
  if (n_state > r.left / 8) r.bad = true;
  for (uint32_t i = 0; i < n_state && !r.bad && rc == TM_OK; i++) {
    tm_strview k = get_str(&r), v = get_str(&r);
    char *ks = tm_strndup(k.ptr, k.len), *vs = tm_strndup(v.ptr, v.len);
    rc = ks && vs ? tm_kv_set(&m->state, ks, vs, err) : tm_error_nomem(err);
    tm_free(ks);
    tm_free(vs);
  }
  uint32_t n_segs = get_u32(&r);
  if (n_segs > r.left / 36) r.bad = true;
  if (!r.bad && rc == TM_OK) {
    m->segs = tm_calloc(n_segs ? n_segs : 1, sizeof *m->segs);
    if (!m->segs) rc = tm_error_nomem(err);
  }
  size_t n_cols = schema->n_cols;
  for (uint32_t i = 0; i < n_segs && !r.bad && rc == TM_OK; i++) {
    tm_cay_manifest_seg *g = &m->segs[i];
    m->n_segs++;
    g->id = get_u64(&r);
    g->n_rows = get_u64(&r);
    g->file_size = get_u64(&r);
    g->checksum = get_u64(&r);
    g->zones = tm_calloc(n_cols ? n_cols : 1, sizeof *g->zones);
    if (!g->zones) {
      rc = tm_error_nomem(err);
      break;
    }
    for (size_t c = 0; c < n_cols && !r.bad; c++) {
      tm_col_stats *z = &g->zones[c];
      uint8_t flags = get_u8(&r);
      z->null_count = (int64_t)get_u64(&r);
      z->row_count = (int64_t)g->n_rows;
      z->has_min = flags & 1;
      z->has_max = (flags & 2) != 0;
      if (z->has_min) get_value(&r, &schema->cols[c].type, &z->min);
      if (z->has_max) get_value(&r, &schema->cols[c].type, &z->max);
      if (z->null_count < 0 || z->null_count > z->row_count || flags > 3) r.bad = true;
    }
    tm_strview del = get_str(&r);
    g->del = del.len ? del.ptr : NULL;
    g->del_len = del.len;
  }
  if (rc == TM_OK && (r.bad || r.left != 0)) rc = TM_CORRUPT(err, "manifest: malformed body");
  if (rc < 0) tm_cay_manifest_dispose(m);
  return rc;
}
