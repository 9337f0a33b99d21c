/*
 * segment.c - columnar segments: building, dictionary encoding, zone maps,
 * cell access and validation (engine layer). See columnar.h.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/columnar/columnar.h"
#include "util/alloc.h"
#include "util/hash.h"

#define DICT_SAMPLE 4096

tm_cseg *tm_cseg_retain(tm_cseg *s) {
  __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
  return s;
}

void tm_cseg_release(tm_cseg *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (size_t i = 0; i < s->n_heap; i++) tm_free(s->heap[i]);
  tm_free(s->heap);
  if (s->map) munmap(s->map, s->map_len);
  tm_free(s->cols);
  tm_free(s->zone_buf);
  tm_free(s);
}

/* ---- cells ------------------------------------------------------------------------ */

void tm_ccol_get(const tm_ccol *c, int64_t row, tm_value *out) {
  out->type = c->type.id;
  out->is_null = tm_ccol_is_null(c, row);
  if (out->is_null) {
    out->v.u = 0;
    return;
  }
  switch (c->enc) {
    case TM_CENC_BOOL: out->v.b = (((const uint8_t *)c->values)[row >> 3] >> (row & 7)) & 1; return;
    case TM_CENC_VAR:
    case TM_CENC_DICT: out->v.s = tm_ccol_bytes(c, row); return;
    default: break;
  }
  const void *p = c->values;
  switch (c->type.id) {
    case TM_TYPE_UINT8: out->v.u = ((const uint8_t *)p)[row]; break;
    case TM_TYPE_UINT16: out->v.u = ((const uint16_t *)p)[row]; break;
    case TM_TYPE_UINT32: out->v.u = ((const uint32_t *)p)[row]; break;
    case TM_TYPE_UINT64: out->v.u = ((const uint64_t *)p)[row]; break;
    case TM_TYPE_FLOAT32: out->v.f = ((const float *)p)[row]; break;
    case TM_TYPE_FLOAT64: out->v.f = ((const double *)p)[row]; break;
    case TM_TYPE_DECIMAL128: memcpy(out->v.dec, (const uint8_t *)p + (size_t)row * 16, 16); break;
    case TM_TYPE_FIXED_BINARY: {
      size_t w = (size_t)c->type.width;
      out->v.s = tm_sv((const char *)p + (size_t)row * w, w);
      break;
    }
    default: out->v.i = tm_ccol_int(c, row); break;
  }
}

int tm_ccol_check(const tm_ccol *c, const char *name, tm_error *err) {
  int state = __atomic_load_n(&c->checked, __ATOMIC_ACQUIRE);
  if (state == 1) return TM_OK;
  if (state < 0) return TM_CORRUPT(err, "%s: column data is malformed", name);
  bool ok = true;
  tm_ccol *mc = (tm_ccol *)c;
  /* Row count is implied by the value buffer sizes the segment loader checked. */
  (void)mc;
  if (c->enc == TM_CENC_VAR) {
    /* The loader guarantees (n + 1) offsets; they must rise inside data. */
    const int32_t *off = c->values;
    int64_t n = (int64_t)c->zone.row_count;
    if (off[0] < 0) ok = false;
    for (int64_t i = 0; i < n && ok; i++)
      if (off[i + 1] < off[i]) ok = false;
    if (ok && (uint64_t)off[n] > c->data_len) ok = false;
  } else if (c->enc == TM_CENC_DICT) {
    if (c->dict_len == 0) ok = false;
    for (uint32_t i = 0; i < c->dict_len && ok; i++)
      if (c->dict_off[i] < 0 || c->dict_off[i + 1] < c->dict_off[i]) ok = false;
    if (ok && (uint64_t)c->dict_off[c->dict_len] > c->dict_data_len) ok = false;
    int64_t n = (int64_t)c->zone.row_count;
    uint32_t lim = c->dict_len;
    if (ok) {
      uint32_t bad = 0;
      if (c->code_width == 1) {
        const uint8_t *k = c->values;
        for (int64_t i = 0; i < n; i++) bad |= k[i] >= lim;
      } else if (c->code_width == 2) {
        const uint16_t *k = c->values;
        for (int64_t i = 0; i < n; i++) bad |= k[i] >= lim;
      } else {
        const uint32_t *k = c->values;
        for (int64_t i = 0; i < n; i++) bad |= k[i] >= lim;
      }
      ok = bad == 0;
    }
  }
  __atomic_store_n(&mc->checked, ok ? 1 : -1, __ATOMIC_RELEASE);
  if (!ok) return TM_CORRUPT(err, "%s: column data is malformed", name);
  return TM_OK;
}

static int cmp_bytes(tm_strview a, tm_strview b) {
  size_t n = a.len < b.len ? a.len : b.len;
  int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
  if (c) return c;
  return a.len < b.len ? -1 : a.len > b.len;
}

int64_t tm_ccol_dict_find(const tm_ccol *c, tm_strview s) {
  int64_t lo = 0, hi = (int64_t)c->dict_len;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    tm_strview e = tm_sv((const char *)c->dict_data + c->dict_off[mid],
                         (size_t)(c->dict_off[mid + 1] - c->dict_off[mid]));
    int r = cmp_bytes(e, s);
    if (r == 0) return mid;
    if (r < 0) lo = mid + 1;
    else hi = mid;
  }
  return -lo - 1;
}

/* ---- zone maps ------------------------------------------------------------------------ */

static int cmp_dec(const uint8_t *a, const uint8_t *b) {
  __int128 x, y;
  memcpy(&x, a, 16);
  memcpy(&y, b, 16);
  return (x > y) - (x < y);
}

/* Zone map of one column: min/max over non-null (and non-NaN) values. */
static void zone_of(tm_ccol *c, int64_t n) {
  tm_col_stats *z = &c->zone;
  z->row_count = n;
  z->null_count = c->null_count;
  z->has_min = z->has_max = false;
  z->min.type = z->max.type = c->type.id;
  z->min.is_null = z->max.is_null = false;
  if (c->null_count >= n) return;
  if (c->enc == TM_CENC_DICT) {
    z->min.v.s = tm_sv((const char *)c->dict_data + c->dict_off[0],
                       (size_t)(c->dict_off[1] - c->dict_off[0]));
    uint32_t k = c->dict_len - 1;
    z->max.v.s = tm_sv((const char *)c->dict_data + c->dict_off[k],
                       (size_t)(c->dict_off[k + 1] - c->dict_off[k]));
    z->has_min = z->min.v.s.len <= TM_ZONE_MAX_BYTES;
    z->has_max = z->max.v.s.len <= TM_ZONE_MAX_BYTES;
    return;
  }
  const tm_type_id id = c->type.id;
  bool any = false;
  if (!c->validity && c->enc == TM_CENC_FIXED &&
      (id == TM_TYPE_INT64 || id == TM_TYPE_TIMESTAMP || id == TM_TYPE_TIME64)) {
    const int64_t *v = c->values;
    int64_t lo = v[0], hi = v[0];
    for (int64_t i = 1; i < n; i++) {
      lo = v[i] < lo ? v[i] : lo;
      hi = v[i] > hi ? v[i] : hi;
    }
    z->min.v.i = lo;
    z->max.v.i = hi;
    z->has_min = z->has_max = true;
    return;
  }
  if (!c->validity && c->enc == TM_CENC_FIXED && (id == TM_TYPE_INT32 || id == TM_TYPE_DATE32)) {
    const int32_t *v = c->values;
    int32_t lo = v[0], hi = v[0];
    for (int64_t i = 1; i < n; i++) {
      lo = v[i] < lo ? v[i] : lo;
      hi = v[i] > hi ? v[i] : hi;
    }
    z->min.v.i = lo;
    z->max.v.i = hi;
    z->has_min = z->has_max = true;
    return;
  }
  if (!c->validity && c->enc == TM_CENC_FIXED && id == TM_TYPE_FLOAT64) {
    const double *v = c->values;
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
      double x = v[i];
      if (x != x) continue;
      if (!any) lo = hi = x, any = true;
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
    }
    z->min.v.f = lo;
    z->max.v.f = hi;
    z->has_min = z->has_max = any;
    return;
  }
  if (c->enc == TM_CENC_VAR) {
    /* Strings: compare views in place. */
    const int32_t *off = c->values;
    tm_strview lo = {NULL, 0}, hi = {NULL, 0};
    for (int64_t i = 0; i < n; i++) {
      if (tm_ccol_is_null(c, i)) continue;
      tm_strview v = tm_sv((const char *)c->data + off[i], (size_t)(off[i + 1] - off[i]));
      if (!any) {
        lo = hi = v;
        any = true;
        continue;
      }
      if (cmp_bytes(v, lo) < 0) lo = v;
      else if (cmp_bytes(v, hi) > 0) hi = v;
    }
    z->min.v.s = lo;
    z->max.v.s = hi;
    z->has_min = any && lo.len <= TM_ZONE_MAX_BYTES;
    z->has_max = any && hi.len <= TM_ZONE_MAX_BYTES;
    return;
  }
  tm_value lo, hi, v;
  memset(&lo, 0, sizeof lo);
  memset(&hi, 0, sizeof hi);
  for (int64_t i = 0; i < n; i++) {
    tm_ccol_get(c, i, &v);
    if (v.is_null) continue;
    if ((id == TM_TYPE_FLOAT32 || id == TM_TYPE_FLOAT64) && v.v.f != v.v.f) continue;
    if (!any) {
      lo = hi = v;
      any = true;
      continue;
    }
    int a, b;
    if (id == TM_TYPE_DECIMAL128) {
      a = cmp_dec(v.v.dec, lo.v.dec);
      b = cmp_dec(v.v.dec, hi.v.dec);
    } else {
      a = tm_value_cmp(&v, &lo);
      b = tm_value_cmp(&v, &hi);
    }
    if (a < 0) lo = v;
    if (b > 0) hi = v;
  }
  if (!any) return;
  z->min = lo;
  z->max = hi;
  bool bytes = id == TM_TYPE_UTF8 || id == TM_TYPE_BINARY || id == TM_TYPE_FIXED_BINARY;
  z->has_min = !bytes || lo.v.s.len <= TM_ZONE_MAX_BYTES;
  z->has_max = !bytes || hi.v.s.len <= TM_ZONE_MAX_BYTES;
}

int tm_cseg_compute_zones(tm_cseg *s, tm_error *err) {
  (void)err;
  for (size_t i = 0; i < s->n_cols; i++) zone_of(&s->cols[i], s->n_rows);
  return TM_OK;
}

/* ---- building ------------------------------------------------------------------------ */

static int keep_heap(tm_cseg *s, void *p, size_t bytes, tm_error *err) {
  void **h = tm_reallocarray(s->heap, s->n_heap + 1, sizeof *h);
  if (!h) {
    tm_free(p);
    return tm_error_nomem(err);
  }
  s->heap = h;
  s->heap[s->n_heap++] = p;
  s->mem_bytes += bytes;
  return TM_OK;
}

/* Takes a builder buffer into the segment's heap list. */
static int take_buf(tm_cseg *s, tm_buf *b, const void **out, uint64_t *len_out, tm_error *err) {
  size_t len = 0;
  char *p = tm_buf_take(b, &len);
  if (!p) return tm_error_nomem(err);
  TM_TRY(keep_heap(s, p, len, err));
  *out = p;
  if (len_out) *len_out = len;
  return TM_OK;
}

typedef struct dict_entry {
  int32_t off, len; /* into the column's data */
} dict_entry;

static int cmp_entries(const void *a, const void *b, void *payload) {
  const dict_entry *x = a, *y = b;
  const char *data = payload;
  return cmp_bytes(tm_sv(data + x->off, (size_t)x->len), tm_sv(data + y->off, (size_t)y->len));
}

/* Open-addressing set of strings for distinct counts and code assignment. */
typedef struct strset {
  uint32_t *slots; /* entry index + 1; 0 empty */
  uint64_t mask;
} strset;

static uint32_t strset_find_or_add(strset *t, dict_entry *entries, uint32_t *n_entries,
                                   const char *data, int32_t off, int32_t len) {
  uint64_t h = tm_hash64(data + off, (size_t)len, 0x5eed) & t->mask;
  for (;;) {
    uint32_t e = t->slots[h];
    if (e == 0) {
      entries[*n_entries].off = off;
      entries[*n_entries].len = len;
      t->slots[h] = ++*n_entries;
      return *n_entries - 1;
    }
    const dict_entry *d = &entries[e - 1];
    if (d->len == len && memcmp(data + d->off, data + off, (size_t)len) == 0) return e - 1;
    h = (h + 1) & t->mask;
  }
}

static uint64_t pow2_at_least(uint64_t n) {
  uint64_t p = 16;
  while (p < n) p <<= 1;
  return p;
}

/*
 * Dictionary-encodes a VAR column when few distinct values repeat (sample,
 * then full pass with a cap). Returns TM_OK with *done false to keep it plain.
 */
static int try_dict(tm_cseg *s, tm_ccol *c, tm_colbuilder *cb, bool *done, tm_error *err) {
  *done = false;
  int64_t n = cb->length;
  if (n < 64 || cb->null_count == n) return TM_OK;
  const int32_t *off = (const int32_t *)cb->values.ptr;
  const char *data = cb->data.ptr ? cb->data.ptr : "";
  const uint8_t *valid = cb->null_count ? (const uint8_t *)cb->validity.ptr : NULL;
  int64_t sample = n < DICT_SAMPLE ? n : DICT_SAMPLE;
  uint32_t cap_entries = (uint32_t)(n / 2 > 65536 ? n / 2 : (n < 65536 ? n : 65536));
  int rc = TM_OK;
  strset t = {NULL, 0};
  dict_entry *entries = NULL;
  uint32_t *codes = NULL, *remap = NULL;
  uint32_t n_entries = 0;
  uint64_t cap_slots = pow2_at_least((uint64_t)cap_entries * 2);
  t.slots = tm_calloc(cap_slots, sizeof *t.slots);
  t.mask = cap_slots - 1;
  entries = tm_calloc(cap_entries + 1, sizeof *entries);
  if (!t.slots || !entries) {
    rc = tm_error_nomem(err);
    goto done;
  }
  /* Sample: most values distinct means a dictionary would not pay. */
  for (int64_t i = 0; i < sample; i++) {
    if (valid && !((valid[i >> 3] >> (i & 7)) & 1)) continue;
    strset_find_or_add(&t, entries, &n_entries, data, off[i], off[i + 1] - off[i]);
  }
  if (n_entries * 2 > (uint32_t)sample) goto done;
  codes = tm_malloc((size_t)n * sizeof *codes);
  if (!codes) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (int64_t i = 0; i < n; i++) {
    if (valid && !((valid[i >> 3] >> (i & 7)) & 1)) {
      codes[i] = 0;
      continue;
    }
    if (n_entries >= cap_entries) goto done;
    codes[i] = strset_find_or_add(&t, entries, &n_entries, data, off[i], off[i + 1] - off[i]);
  }
  /* Sort the dictionary so that code order is value order. */
  remap = tm_malloc((size_t)n_entries * sizeof *remap);
  dict_entry *sorted = tm_malloc((size_t)n_entries * sizeof *sorted);
  if (!remap || !sorted) {
    tm_free(sorted);
    rc = tm_error_nomem(err);
    goto done;
  }
  memcpy(sorted, entries, (size_t)n_entries * sizeof *sorted);
  qsort_r(sorted, n_entries, sizeof *sorted, cmp_entries, (void *)data);
  /* Map old code -> new code through each entry's offset (unique per entry). */
  for (uint32_t k = 0; k < n_entries; k++) {
    /* Find the old index of sorted[k] through the hash set. */
    uint32_t old = strset_find_or_add(&t, entries, &n_entries, data, sorted[k].off, sorted[k].len);
    remap[old] = k;
  }
  size_t dict_bytes = 0;
  for (uint32_t k = 0; k < n_entries; k++) dict_bytes += (size_t)sorted[k].len;
  int32_t *doff = tm_malloc(((size_t)n_entries + 1) * sizeof *doff);
  uint8_t *ddata = tm_malloc(dict_bytes ? dict_bytes : 1);
  uint8_t width = n_entries <= 256 ? 1 : n_entries <= 65536 ? 2 : 4;
  void *kv = tm_malloc((size_t)n * width);
  if (!doff || !ddata || !kv) {
    tm_free(doff);
    tm_free(ddata);
    tm_free(kv);
    tm_free(sorted);
    rc = tm_error_nomem(err);
    goto done;
  }
  size_t pos = 0;
  for (uint32_t k = 0; k < n_entries; k++) {
    doff[k] = (int32_t)pos;
    memcpy(ddata + pos, data + sorted[k].off, (size_t)sorted[k].len);
    pos += (size_t)sorted[k].len;
  }
  doff[n_entries] = (int32_t)pos;
  tm_free(sorted);
  for (int64_t i = 0; i < n; i++) {
    uint32_t k = remap[codes[i]];
    if (width == 1) ((uint8_t *)kv)[i] = (uint8_t)k;
    else if (width == 2) ((uint16_t *)kv)[i] = (uint16_t)k;
    else ((uint32_t *)kv)[i] = k;
  }
  if ((rc = keep_heap(s, doff, ((size_t)n_entries + 1) * 4, err)) < 0) {
    tm_free(ddata);
    tm_free(kv);
    goto done;
  }
  if ((rc = keep_heap(s, ddata, dict_bytes, err)) < 0) {
    tm_free(kv);
    goto done;
  }
  if ((rc = keep_heap(s, kv, (size_t)n * width, err)) < 0) goto done;
  c->enc = TM_CENC_DICT;
  c->code_width = width;
  c->values = kv;
  c->dict_len = n_entries;
  c->dict_off = doff;
  c->dict_data = ddata;
  c->dict_data_len = dict_bytes;
  tm_buf_clear(&cb->values);
  tm_buf_clear(&cb->data);
  *done = true;
done:
  tm_free(t.slots);
  tm_free(entries);
  tm_free(codes);
  tm_free(remap);
  return rc;
}

int tm_cseg_build(tm_cseg **out, uint64_t id, const tm_schema *schema, tm_colbuilder *cols,
                  tm_error *err) {
  int rc = TM_OK;
  tm_cseg *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->refs = 1;
  s->id = id;
  s->n_cols = schema->n_cols;
  s->n_rows = schema->n_cols ? cols[0].length : 0;
  s->cols = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *s->cols);
  if (!s->cols) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < s->n_cols; i++) {
    tm_ccol *c = &s->cols[i];
    tm_colbuilder *cb = &cols[i];
    c->type = schema->cols[i].type;
    c->null_count = cb->null_count;
    c->zone.row_count = s->n_rows;
    if (cb->null_count > 0) {
      /* The bitmap may be shorter than n rows when the tail is valid: pad it. */
      size_t need = (size_t)(s->n_rows + 7) / 8;
      if (cb->validity.len < need) {
        size_t have = cb->validity.len;
        void *p;
        TM_CHECK(tm_buf_extend(&cb->validity, need - have, &p, err));
        memset(p, 0xff, need - have);
      }
      TM_CHECK(take_buf(s, &cb->validity, (const void **)&c->validity, NULL, err));
    }
    if (c->type.id == TM_TYPE_BOOL) {
      c->enc = TM_CENC_BOOL;
      size_t need = (size_t)(s->n_rows + 7) / 8;
      if (cb->values.len < need) {
        void *p;
        TM_CHECK(tm_buf_extend(&cb->values, need - cb->values.len, &p, err));
      }
      TM_CHECK(take_buf(s, &cb->values, &c->values, NULL, err));
    } else if (tm_type_is_var(&c->type)) {
      if (cb->values.len == 0) {
        int32_t zero = 0;
        TM_CHECK(tm_buf_append(&cb->values, &zero, 4, err));
      }
      bool dict;
      TM_CHECK(try_dict(s, c, cb, &dict, err));
      if (!dict) {
        c->enc = TM_CENC_VAR;
        TM_CHECK(take_buf(s, &cb->values, &c->values, NULL, err));
        if (cb->data.len == 0) TM_CHECK(tm_buf_putc(&cb->data, 0, err));
        TM_CHECK(take_buf(s, &cb->data, (const void **)&c->data, &c->data_len, err));
      }
    } else {
      c->enc = TM_CENC_FIXED;
      if (cb->values.len == 0) TM_CHECK(tm_buf_putc(&cb->values, 0, err));
      TM_CHECK(take_buf(s, &cb->values, &c->values, NULL, err));
    }
    c->checked = 1; /* built here: offsets and codes are right by construction */
    tm_colbuilder_reset(cb);
  }
  TM_CHECK(tm_cseg_compute_zones(s, err));
  *out = s;
  s = NULL;
done:
  if (s) tm_cseg_release(s);
  for (size_t i = 0; i < schema->n_cols; i++) tm_colbuilder_reset(&cols[i]);
  return rc;
}
