/*
 * table.c - the columnar engine core shared by cayenne and arrow: write
 * transactions with the conflict rules, publication of snapshots, scans,
 * bounds and compaction (engine layer). See columnar.h.
 *
 * A transaction works on a private list of segments (the published ones plus
 * the ones it writes) with copy-on-write deletion sets, and a pending
 * builder that becomes a segment every segment_rows rows. Nothing of it is
 * visible until commit builds the next snapshot and publishes it (first
 * durably through the store, then in memory under pub_mu).
 *
 * Keyed writes resolve a batch in three steps: the versions of a key inside
 * the batch (arrival order), then the batch's winner against the stored row
 * found through the key index, then the surviving rows are appended and
 * indexed. Rules (SPEC A8): cayenne keeps the newest time_column value and
 * the later arrival on equal times; arrow keeps the last arrival (upsert) or
 * the first (drop). A row identical to the stored one is "unchanged" and not
 * rewritten. Rows with a NULL in a key column never conflict.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/columnar/columnar.h"
#include "util/alloc.h"
#include "util/hash.h"

/* ---- snapshots ------------------------------------------------------------------ */

int tm_csnap_new(tm_csnap **out, tm_cengine *e, tm_error *err) {
  tm_csnap *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  tm_engine__snapshot_init(&s->base, &e->base);
  tm_kv_init(&s->state);
  *out = s;
  return TM_OK;
}

void tm_cengine_snapshot_free(tm_engine_snapshot *sb) {
  tm_csnap *s = (tm_csnap *)sb;
  for (size_t i = 0; i < s->n_segs; i++) {
    tm_cseg_release(s->segs[i].seg);
    tm_cdel_release(s->segs[i].del);
  }
  tm_free(s->segs);
  tm_kv_dispose(&s->state);
  tm_free(s);
}

tm_cdel *tm_cdel_retain(tm_cdel *d) {
  if (d) __atomic_add_fetch(&d->refs, 1, __ATOMIC_RELAXED);
  return d;
}

void tm_cdel_release(tm_cdel *d) {
  if (!d || __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  roaring_bitmap_free(d->bm);
  tm_free(d);
}

tm_cdel *tm_cdel_take(roaring_bitmap_t *bm) {
  tm_cdel *d = tm_calloc(1, sizeof *d);
  if (!d) {
    roaring_bitmap_free(bm);
    return NULL;
  }
  roaring_bitmap_run_optimize(bm);
  d->refs = 1;
  d->bm = bm;
  d->card = roaring_bitmap_get_cardinality(bm);
  return d;
}

tm_csnap *tm_cengine_pin(tm_engine *eb) {
  tm_cengine *e = (tm_cengine *)eb;
  pthread_mutex_lock(&e->pub_mu);
  tm_csnap *s = e->published;
  tm_engine_snapshot_retain(&s->base);
  pthread_mutex_unlock(&e->pub_mu);
  return s;
}

int tm_cengine_snapshot(tm_engine *eb, tm_engine_snapshot **out, tm_error *err) {
  (void)err;
  tm_cengine *e = (tm_cengine *)eb;
  /* A reference without an engine reference: the caller (acquire) adds that. */
  pthread_mutex_lock(&e->pub_mu);
  tm_csnap *s = e->published;
  __atomic_add_fetch(&s->base.refs, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&e->pub_mu);
  *out = &s->base;
  return TM_OK;
}

int tm_cengine_row_count(tm_engine_snapshot *s, int64_t *out, tm_error *err) {
  (void)err;
  *out = ((tm_csnap *)s)->n_live;
  return TM_OK;
}

int tm_cengine_snapshot_state(tm_engine_snapshot *s, tm_kv *out, tm_error *err) {
  return tm_kv_copy(out, &((tm_csnap *)s)->state, err);
}

int tm_cengine_read_state(tm_engine *eb, tm_kv *out, tm_error *err) {
  tm_csnap *s = tm_cengine_pin(eb);
  int rc = tm_kv_copy(out, &s->state, err);
  tm_engine_snapshot_release(&s->base);
  return rc;
}

/* ---- slots ------------------------------------------------------------------------ */

/* Marks a slot reserved for a transaction's pending rows (not free, no segment yet). */
static char g_reserved_marker;
#define SLOT_RESERVED ((tm_cseg *)(void *)&g_reserved_marker)

/* Takes a free slot for seg (NULL: reserve one for pending rows). */
static int slot_alloc(tm_cengine *e, tm_cseg *seg, uint32_t *out, tm_error *err) {
  if (!seg) seg = SLOT_RESERVED;
  for (uint32_t i = 0; i < e->n_slots; i++)
    if (e->slots[i] == NULL) {
      e->slots[i] = seg;
      *out = i;
      return TM_OK;
    }
  if (e->n_slots == e->cap_slots) {
    uint32_t cap = e->cap_slots ? e->cap_slots * 2 : 64;
    tm_cseg **s = tm_reallocarray(e->slots, cap, sizeof *s);
    if (!s) return tm_error_nomem(err);
    e->slots = s;
    e->cap_slots = cap;
  }
  e->slots[e->n_slots] = seg;
  *out = e->n_slots++;
  return TM_OK;
}

static void slot_free(tm_cengine *e, uint32_t slot) {
  if (slot < e->n_slots) e->slots[slot] = NULL;
  while (e->n_slots > 0 && e->slots[e->n_slots - 1] == NULL) e->n_slots--;
}

int tm_cengine_init(tm_cengine *e, tm_csnap *initial, tm_error *err) {
  pthread_mutex_init(&e->pub_mu, NULL);
  e->published = initial;
  for (size_t i = 0; i < initial->n_segs; i++) {
    tm_cseg *s = initial->segs[i].seg;
    TM_TRY(slot_alloc(e, s, &s->slot, err));
    if (s->id >= e->next_seg_id) e->next_seg_id = s->id + 1;
  }
  return TM_OK;
}

void tm_cengine_dispose(tm_cengine *e) {
  if (e->published) tm_engine__snapshot_drop(&e->published->base);
  e->published = NULL;
  tm_kix_free(e->kix);
  e->kix = NULL;
  tm_free(e->slots);
  e->slots = NULL;
  pthread_mutex_destroy(&e->pub_mu);
}

/* ---- the transaction --------------------------------------------------------------- */

typedef struct wseg {
  tm_cseg *seg;           /* one reference */
  tm_cdel *base;          /* the published deletion set (one reference), or NULL */
  roaring_bitmap_t *del;  /* the transaction's copy once it deletes here, or NULL */
  bool fresh;             /* written by this transaction */
} wseg;

typedef struct ctxn {
  tm_engine_txn base;
  tm_csnap *from;         /* the published state at begin (one reference) */
  wseg *w;                /* owned working list */
  size_t n_w, cap_w;
  int32_t *w_of_slot;     /* slot -> index in w, or -1 (sized cap_w_of_slot) */
  uint32_t cap_w_of_slot;
  tm_colbuilder *pend;    /* pending rows, one builder per column */
  int64_t pend_rows;
  uint32_t pend_slot;
  roaring_bitmap_t *pend_del; /* pending rows superseded within the transaction */
  bool kix_touched;       /* the key index changed: drop it on abort */
  tm_engine_commit_info info;
  /* Per-batch scratch (keyed writes). */
  uint64_t *hashes;
  uint8_t *win;
  int32_t *table;
  size_t scratch_cap;
} ctxn;

/* How rows are read: a segment's columns, or views (batch, pending builder). */
typedef struct rowref {
  const tm_ccol *cols;
  const tm_colview *views;
  int64_t row;
} rowref;

static inline void cell(rowref r, size_t c, tm_value *out) {
  if (r.cols) tm_ccol_get(&r.cols[c], r.row, out);
  else tm_colview_get(&r.views[c], r.row, out);
}

static tm_cengine *eng(ctxn *t) { return (tm_cengine *)t->base.engine; }

static int w_map(ctxn *t, uint32_t slot, int32_t wi, tm_error *err) {
  if (slot >= t->cap_w_of_slot) {
    uint32_t cap = t->cap_w_of_slot ? t->cap_w_of_slot : 64;
    while (cap <= slot) cap *= 2;
    int32_t *m = tm_reallocarray(t->w_of_slot, cap, sizeof *m);
    if (!m) return tm_error_nomem(err);
    for (uint32_t i = t->cap_w_of_slot; i < cap; i++) m[i] = -1;
    t->w_of_slot = m;
    t->cap_w_of_slot = cap;
  }
  t->w_of_slot[slot] = wi;
  return TM_OK;
}

/* Appends a working segment. Takes seg, base and del, also when it fails
 * (then they are released). */
static int w_push(ctxn *t, tm_cseg *seg, tm_cdel *base, roaring_bitmap_t *del, bool fresh,
                  tm_error *err) {
  int rc = TM_OK;
  if (t->n_w == t->cap_w) {
    size_t cap = t->cap_w ? t->cap_w * 2 : 32;
    wseg *w = tm_reallocarray(t->w, cap, sizeof *w);
    if (!w) rc = tm_error_nomem(err);
    else {
      t->w = w;
      t->cap_w = cap;
    }
  }
  if (rc == TM_OK) rc = w_map(t, seg->slot, (int32_t)t->n_w, err);
  if (rc < 0) {
    tm_cseg_release(seg);
    tm_cdel_release(base);
    if (del) roaring_bitmap_free(del);
    return rc;
  }
  wseg *w = &t->w[t->n_w++];
  w->seg = seg;
  w->base = base;
  w->del = del;
  w->fresh = fresh;
  return TM_OK;
}

static uint64_t w_deleted(const wseg *w) {
  if (w->del) return roaring_bitmap_get_cardinality(w->del);
  return w->base ? w->base->card : 0;
}

static bool w_is_deleted(const wseg *w, uint32_t row) {
  if (w->del) return roaring_bitmap_contains(w->del, row);
  return w->base && roaring_bitmap_contains(w->base->bm, row);
}

/* The transaction's own deletion set of w (copied from the published one). */
static int w_del(wseg *w, roaring_bitmap_t **out, tm_error *err) {
  if (!w->del) {
    w->del = w->base ? roaring_bitmap_copy(w->base->bm) : roaring_bitmap_create();
    if (!w->del) return tm_error_nomem(err);
  }
  *out = w->del;
  return TM_OK;
}

/* Checks every column of a segment once (file segments are validated lazily). */
static int seg_ready(const tm_cengine *e, const tm_cseg *s, tm_error *err) {
  for (size_t c = 0; c < s->n_cols; c++)
    TM_TRY(tm_ccol_check(&s->cols[c], e->base.cfg.dataset, err));
  return TM_OK;
}

static void pend_views(ctxn *t, tm_colview *views) {
  const tm_schema *s = &t->base.engine->schema;
  for (size_t c = 0; c < s->n_cols; c++) {
    tm_colbuilder *cb = &t->pend[c];
    tm_colview *v = &views[c];
    memset(v, 0, sizeof *v);
    v->type = cb->type;
    v->length = cb->length;
    v->null_count = cb->null_count;
    v->validity = cb->null_count ? (const uint8_t *)cb->validity.ptr : NULL;
    v->values = cb->values.ptr;
    v->data = (const uint8_t *)cb->data.ptr;
  }
}

/* ---- keys and rules -------------------------------------------------------------------- */

/* Hash of a row's key; false when a key column is NULL (such rows never conflict). */
static bool key_hash(const tm_engine_config *cfg, rowref r, uint64_t *out) {
  uint64_t h = UINT64_C(0x2545f4914f6cdd1d);
  for (size_t i = 0; i < cfg->n_pk; i++) {
    tm_value v;
    cell(r, cfg->pk[i], &v);
    if (v.is_null) return false;
    h = tm_hash_combine(h, tm_value_hash(&v));
  }
  *out = h;
  return true;
}

static bool key_eq(const tm_engine_config *cfg, rowref a, rowref b) {
  for (size_t i = 0; i < cfg->n_pk; i++) {
    tm_value x, y;
    cell(a, cfg->pk[i], &x);
    cell(b, cfg->pk[i], &y);
    if (x.is_null || y.is_null || tm_value_cmp(&x, &y) != 0) return false;
  }
  return true;
}

static bool rows_equal(size_t n_cols, rowref a, rowref b) {
  for (size_t c = 0; c < n_cols; c++) {
    tm_value x, y;
    cell(a, c, &x);
    cell(b, c, &y);
    if (x.is_null != y.is_null) return false;
    if (!x.is_null && tm_value_cmp(&x, &y) != 0) return false;
  }
  return true;
}

static tm_instant row_time(const tm_engine *e, rowref r) {
  tm_instant none = {true, 0, 0};
  if (e->cfg.time_col < 0) return none;
  tm_value v;
  cell(r, (size_t)e->cfg.time_col, &v);
  return tm_engine__instant(&e->schema.cols[e->cfg.time_col].type, e->cfg.time_format, &v);
}

/* Whether `later` replaces `earlier` (same key); *reason: why the loser lost. */
static bool later_wins(const tm_engine *e, rowref earlier, rowref later,
                       tm_superseded_reason *reason) {
  if (rows_equal(e->schema.n_cols, earlier, later)) {
    *reason = TM_SUPERSEDED_UNCHANGED;
    return false;
  }
  if (e->caps.conflict_rule == TM_ENGINE_RULE_NEWEST_BY_TIME) {
    int c = tm_instant_cmp(row_time(e, later), row_time(e, earlier));
    if (c < 0) {
      *reason = TM_SUPERSEDED_OLDER;
      return false;
    }
    *reason = c == 0 ? TM_SUPERSEDED_EQUAL_TIME : TM_SUPERSEDED_OLDER;
    return true;
  }
  *reason = TM_SUPERSEDED_ARRIVAL;
  return e->cfg.on_conflict == TM_ON_CONFLICT_UPSERT;
}

/* The stored row at (slot, row) as a rowref, for comparisons. */
static rowref stored_ref(ctxn *t, const tm_colview *pviews, uint32_t slot, uint32_t row) {
  rowref r = {NULL, NULL, row};
  if (slot == t->pend_slot) r.views = pviews;
  else r.cols = eng(t)->slots[slot]->cols;
  return r;
}

/* Marks the stored row (slot, row) deleted in the transaction's state. */
static int mark_deleted(ctxn *t, uint32_t slot, uint32_t row, tm_error *err) {
  if (slot == t->pend_slot) {
    if (!t->pend_del && !(t->pend_del = roaring_bitmap_create())) return tm_error_nomem(err);
    roaring_bitmap_add(t->pend_del, row);
    return TM_OK;
  }
  if (slot >= t->cap_w_of_slot || t->w_of_slot[slot] < 0)
    return tm_error_set(err, TM_ERROR, "key index names an unknown segment");
  roaring_bitmap_t *d = NULL;
  TM_TRY(w_del(&t->w[t->w_of_slot[slot]], &d, err));
  roaring_bitmap_add(d, row);
  return TM_OK;
}

/* Builds the key index over the live rows of the working list. */
static int build_kix(ctxn *t, tm_error *err) {
  tm_cengine *e = eng(t);
  const tm_engine_config *cfg = &e->base.cfg;
  uint64_t live = 0;
  for (size_t i = 0; i < t->n_w; i++) live += (uint64_t)t->w[i].seg->n_rows - w_deleted(&t->w[i]);
  kix *k;
  TM_TRY(tm_kix_new(&k, live, err));
  int rc = TM_OK;
  for (size_t i = 0; i < t->n_w && rc == TM_OK; i++) {
    wseg *w = &t->w[i];
    rc = seg_ready(e, w->seg, err);
    for (int64_t r = 0; r < w->seg->n_rows && rc == TM_OK; r++) {
      if (w_is_deleted(w, (uint32_t)r)) continue;
      uint64_t h;
      rowref ref = {w->seg->cols, NULL, r};
      if (key_hash(cfg, ref, &h)) rc = tm_kix_insert(k, h, w->seg->slot, (uint32_t)r, err);
    }
  }
  if (rc < 0) {
    tm_kix_free(k);
    return rc;
  }
  e->kix = k;
  return TM_OK;
}

/* ---- begin / seal ---------------------------------------------------------------------- */

static void txn_free(ctxn *t) {
  for (size_t i = 0; i < t->n_w; i++) {
    tm_cseg_release(t->w[i].seg);
    tm_cdel_release(t->w[i].base);
    if (t->w[i].del) roaring_bitmap_free(t->w[i].del);
  }
  tm_free(t->w);
  tm_free(t->w_of_slot);
  if (t->pend) {
    for (size_t c = 0; c < t->base.engine->schema.n_cols; c++) tm_colbuilder_dispose(&t->pend[c]);
    tm_free(t->pend);
  }
  if (t->pend_del) roaring_bitmap_free(t->pend_del);
  if (t->from) tm_engine_snapshot_release(&t->from->base);
  tm_free(t->hashes);
  tm_free(t->win);
  tm_free(t->table);
  tm_free(t);
}

/* Starts a working list from the published state (or empty: replace). */
static int txn_new(tm_cengine *e, tm_txn_kind kind, ctxn **out, tm_error *err) {
  int rc = TM_OK;
  ctxn *t = tm_calloc(1, sizeof *t);
  if (!t) return tm_error_nomem(err);
  t->base.engine = &e->base;
  t->base.kind = kind;
  t->pend_slot = UINT32_MAX;
  t->from = tm_cengine_pin(&e->base);
  size_t n = e->base.schema.n_cols;
  t->pend = tm_calloc(n ? n : 1, sizeof *t->pend);
  if (!t->pend) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t c = 0; c < n; c++) tm_colbuilder_init(&t->pend[c], e->base.schema.cols[c].type, 0);
  if (kind == TM_TXN_APPEND)
    for (size_t i = 0; i < t->from->n_segs; i++) {
      tm_csnap_seg *s = &t->from->segs[i];
      TM_CHECK(w_push(t, tm_cseg_retain(s->seg), tm_cdel_retain(s->del), NULL, false, err));
    }
  TM_CHECK(slot_alloc(e, NULL, &t->pend_slot, err));
  *out = t;
  t = NULL;
done:
  if (t) {
    if (t->pend_slot != UINT32_MAX) slot_free(e, t->pend_slot);
    txn_free(t);
  }
  return rc;
}

int tm_cengine_begin(tm_engine *eb, tm_txn_kind kind, tm_engine_txn **out, tm_error *err) {
  tm_cengine *e = (tm_cengine *)eb;
  TM_TRY(tm_engine__writer_acquire(eb, err));
  ctxn *t;
  int rc = txn_new(e, kind, &t, err);
  if (rc < 0) {
    tm_engine__writer_release(eb);
    return rc;
  }
  if (kind == TM_TXN_REPLACE_ALL && e->base.cfg.n_pk) {
    /* The new contents start with an empty index. */
    tm_kix_free(e->kix);
    e->kix = NULL;
    t->kix_touched = true;
    rc = tm_kix_new(&e->kix, 1024, err);
    if (rc < 0) {
      slot_free(e, t->pend_slot);
      txn_free(t);
      tm_engine__writer_release(eb);
      return rc;
    }
  }
  *out = &t->base;
  return TM_OK;
}

/* Turns the pending rows into a segment of the working list. */
static int seal(ctxn *t, tm_error *err) {
  tm_cengine *e = eng(t);
  if (t->pend_rows == 0) return TM_OK;
  tm_cseg *seg;
  TM_TRY(tm_cseg_build(&seg, e->next_seg_id++, &e->base.schema, t->pend, err));
  seg->slot = t->pend_slot;
  if (e->store) {
    int rc = e->store->persist(e, seg, err);
    if (rc < 0) {
      tm_cseg_release(seg);
      return rc;
    }
  }
  e->slots[t->pend_slot] = seg;
  roaring_bitmap_t *del = t->pend_del;
  t->pend_del = NULL;
  t->pend_rows = 0;
  t->info.segments_written++;
  t->info.bytes_written += seg->mem_bytes;
  int rc = w_push(t, seg, NULL, del, true, err);
  if (rc < 0) {
    /* w_push released it. A file the store wrote for it is named by no
     * manifest: the next open removes it. */
    e->slots[t->pend_slot] = NULL;
    return rc;
  }
  uint32_t slot;
  rc = slot_alloc(e, NULL, &slot, err);
  if (rc < 0) {
    t->pend_slot = UINT32_MAX;
    return rc;
  }
  t->pend_slot = slot;
  /* Segments already on disk replace their memory copies. */
  if (e->store && e->store->written) {
    tm_cseg *mem[16], *twin[16];
    size_t n;
    while ((n = e->store->written(e, mem, twin, 16)) > 0)
      for (size_t i = 0; i < n; i++) {
        uint32_t sl = mem[i]->slot;
        twin[i]->slot = sl;
        if (sl < t->cap_w_of_slot && t->w_of_slot[sl] >= 0 && t->w[t->w_of_slot[sl]].seg == mem[i]) {
          t->w[t->w_of_slot[sl]].seg = twin[i];
          if (e->slots[sl] == mem[i]) e->slots[sl] = twin[i];
          tm_cseg_release(mem[i]);
        } else {
          tm_cseg_release(twin[i]);
        }
      }
  }
  return TM_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

/*
 * Appends rows [from, from + n) of a column view to a builder. Columns
 * without NULLs on either side take a bulk path (one copy of the values, and
 * for strings one copy of the bytes and a loop over offsets); the rest go
 * through tm_colbuilder_append_range.
 */
static int append_view(tm_colbuilder *cb, const tm_colview *v, int64_t from, int64_t n,
                       tm_error *err) {
  if (n <= 0) return TM_OK;
  if (v->validity || cb->validity.len || cb->type.id == TM_TYPE_BOOL)
    return tm_colbuilder_append_range(cb, v, from, n, err);
  if (tm_type_is_var(&cb->type)) {
    const int32_t *off = v->values;
    size_t bytes = (size_t)(off[from + n] - off[from]);
    if (cb->data.len + bytes > (size_t)INT32_MAX)
      return tm_error_set(err, TM_ETOOLARGE, "string column of one segment passes 2 GiB");
    if (cb->values.len == 0) {
      int32_t zero = 0;
      TM_TRY(tm_buf_append(&cb->values, &zero, 4, err));
    }
    int32_t base = (int32_t)cb->data.len - off[from];
    TM_TRY(tm_buf_append(&cb->data, v->data + off[from], bytes, err));
    void *p;
    TM_TRY(tm_buf_extend(&cb->values, (size_t)n * 4, &p, err));
    int32_t *dst = p;
    for (int64_t i = 0; i < n; i++) dst[i] = off[from + i + 1] + base;
  } else {
    size_t w = tm_type_byte_width(&cb->type);
    TM_TRY(tm_buf_append(&cb->values, (const uint8_t *)v->values + (size_t)from * w,
                         (size_t)n * w, err));
  }
  cb->length += n;
  return TM_OK;
}

/*
 * Appends the rows of b whose win flag is set (all when win is NULL) to the
 * pending builder, sealing at segment_rows, and indexes them when hashes is
 * given (hash_ok flags rows with a non-NULL key).
 */
static int append_rows(ctxn *t, const tm_batch *b, const tm_colview *views, const uint8_t *win,
                       const uint64_t *hashes, tm_error *err) {
  tm_cengine *e = eng(t);
  size_t n_cols = e->base.schema.n_cols;
  int64_t cap = e->base.cfg.segment_rows;
  int64_t i = 0;
  while (i < b->n_rows) {
    if (win && !(win[i] & 1)) {
      i++;
      continue;
    }
    if (t->pend_rows == 0) {
      /* A new segment: size its buffers once (strings from this batch's average). */
      for (size_t c = 0; c < n_cols; c++) {
        size_t bytes = 0;
        if (tm_type_is_var(&views[c].type) && b->n_rows > 0) {
          const int32_t *off = views[c].values;
          double avg = (double)(off[b->n_rows] - off[0]) / (double)b->n_rows;
          bytes = (size_t)(avg * 1.1 * (double)cap) + 64;
        }
        TM_TRY(tm_colbuilder_reserve(&t->pend[c], cap, bytes, err));
      }
    }
    int64_t j = i;
    while (j < b->n_rows && (!win || (win[j] & 1)) && j - i < cap - t->pend_rows) j++;
    for (size_t c = 0; c < n_cols; c++) TM_TRY(append_view(&t->pend[c], &views[c], i, j - i, err));
    if (hashes)
      for (int64_t k = i; k < j; k++)
        if (win[k] & 2)
          TM_TRY(tm_kix_insert(e->kix, hashes[k], t->pend_slot, (uint32_t)(t->pend_rows + (k - i)), err));
    t->pend_rows += j - i;
    t->info.rows_written += j - i;
    if (t->pend_rows >= cap) TM_TRY(seal(t, err));
    i = j;
  }
  return TM_OK;
}

static int reserve_scratch(ctxn *t, size_t n, tm_error *err) {
  if (n <= t->scratch_cap) return TM_OK;
  size_t tab = 16;
  while (tab < 2 * n) tab <<= 1;
  tm_free(t->hashes);
  tm_free(t->win);
  tm_free(t->table);
  t->hashes = tm_malloc(n * sizeof *t->hashes);
  t->win = tm_malloc(n);
  t->table = tm_malloc(tab * sizeof *t->table);
  if (!t->hashes || !t->win || !t->table) {
    t->scratch_cap = 0;
    return tm_error_nomem(err);
  }
  t->scratch_cap = n;
  return TM_OK;
}

static int write_keyed(ctxn *t, const tm_batch *b, const tm_colview *views, tm_error *err) {
  tm_cengine *e = eng(t);
  const tm_engine_config *cfg = &e->base.cfg;
  size_t n = (size_t)b->n_rows;
  if (!e->kix) TM_TRY(build_kix(t, err));
  t->kix_touched = true;
  TM_TRY(reserve_scratch(t, n, err));
  size_t tab = 16;
  while (tab < 2 * n) tab <<= 1;
  uint64_t mask = tab - 1;
  for (size_t i = 0; i < tab; i++) t->table[i] = -1;
  /* win bit 0: the row is kept; bit 1: it has a key (index it). */
  uint8_t *win = t->win;
  uint64_t *h = t->hashes;
  /* 1. Versions of a key within the batch. */
  for (size_t i = 0; i < n; i++) {
    rowref ri = {NULL, views, (int64_t)i};
    if (!key_hash(cfg, ri, &h[i])) {
      win[i] = 1;
      continue;
    }
    win[i] = 3;
    uint64_t p = h[i] & mask;
    for (;;) {
      int32_t j = t->table[p];
      if (j < 0) {
        t->table[p] = (int32_t)i;
        break;
      }
      rowref rj = {NULL, views, j};
      if (h[j] == h[i] && key_eq(cfg, rj, ri)) {
        tm_superseded_reason why;
        if (later_wins(&e->base, rj, ri, &why)) {
          win[j] = 0;
          t->table[p] = (int32_t)i;
        } else {
          win[i] = 0;
        }
        t->info.rows_superseded[why]++;
        break;
      }
      p = (p + 1) & mask;
    }
  }
  /* 2. Each batch winner against the stored version of its key. */
  tm_colview *pv = tm_calloc(e->base.schema.n_cols ? e->base.schema.n_cols : 1, sizeof *pv);
  if (!pv) return tm_error_nomem(err);
  pend_views(t, pv);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    if (win[i] != 3) continue;
    rowref ri = {NULL, views, (int64_t)i};
    uint64_t pos = TM_KIX_START;
    tm_kix_entry *ent;
    while ((ent = tm_kix_next(e->kix, h[i], &pos)) != NULL) {
      rowref rs = stored_ref(t, pv, ent->slot, ent->row);
      if (!key_eq(cfg, rs, ri)) continue;
      tm_superseded_reason why;
      if (later_wins(&e->base, rs, ri, &why)) {
        rc = mark_deleted(t, ent->slot, ent->row, err);
        tm_kix_remove(e->kix, ent);
      } else {
        win[i] = 0;
      }
      t->info.rows_superseded[why]++;
      break;
    }
  }
  tm_free(pv);
  /* 3. Append and index the survivors. */
  if (rc == TM_OK) rc = append_rows(t, b, views, win, h, err);
  return rc;
}

int tm_cengine_write(tm_engine_txn *tb, const tm_batch *b, tm_error *err) {
  ctxn *t = (ctxn *)tb;
  tm_cengine *e = eng(t);
  size_t n_cols = e->base.schema.n_cols;
  if (t->pend_slot == UINT32_MAX)
    return tm_error_set(err, TM_ERROR, "dataset '%s': the transaction failed earlier",
                        e->base.cfg.dataset);
  tm_colview *views = tm_calloc(n_cols ? n_cols : 1, sizeof *views);
  if (!views) return tm_error_nomem(err);
  for (size_t c = 0; c < n_cols; c++) views[c] = tm_batch_col(b, c);
  int rc = e->base.cfg.n_pk ? write_keyed(t, b, views, err)
                            : append_rows(t, b, views, NULL, NULL, err);
  tm_free(views);
  return rc;
}

/* ---- deleting ------------------------------------------------------------------------------ */

/* Deletes live row r of working segment wi (and its index entry). */
static int delete_row(ctxn *t, size_t wi, uint32_t r, tm_error *err) {
  tm_cengine *e = eng(t);
  wseg *w = &t->w[wi];
  roaring_bitmap_t *d = NULL;
  TM_TRY(w_del(w, &d, err));
  roaring_bitmap_add(d, r);
  if (e->kix) {
    uint64_t h;
    rowref ref = {w->seg->cols, NULL, r};
    if (key_hash(&e->base.cfg, ref, &h)) {
      tm_kix_entry *ent = tm_kix_find_loc(e->kix, h, w->seg->slot, r);
      if (ent) tm_kix_remove(e->kix, ent);
    }
  }
  t->info.rows_deleted++;
  return TM_OK;
}

/* A temporary snapshot of the transaction's state (for SQL conditions). */
static int working_snapshot(ctxn *t, tm_csnap **out, tm_error *err) {
  tm_csnap *s = NULL;
  TM_TRY(tm_csnap_new(&s, eng(t), err));
  int rc = TM_OK;
  s->segs = tm_calloc(t->n_w ? t->n_w : 1, sizeof *s->segs);
  if (!s->segs) rc = tm_error_nomem(err);
  for (size_t i = 0; i < t->n_w && rc == TM_OK; i++) {
    wseg *w = &t->w[i];
    s->segs[i].seg = tm_cseg_retain(w->seg);
    s->n_segs++;
    if (w->del) {
      roaring_bitmap_t *copy = roaring_bitmap_copy(w->del);
      s->segs[i].del = copy ? tm_cdel_take(copy) : NULL;
      if (!s->segs[i].del) rc = tm_error_nomem(err);
    } else {
      s->segs[i].del = tm_cdel_retain(w->base);
    }
    s->n_live += w->seg->n_rows - (int64_t)w_deleted(w);
  }
  if (rc < 0) {
    tm_engine__snapshot_drop(&s->base);
    return rc;
  }
  *out = s;
  return TM_OK;
}

int tm_cengine_delete_where(tm_engine_txn *tb, const char *where_sql, int64_t *n_out,
                            tm_error *err) {
  ctxn *t = (ctxn *)tb;
  TM_TRY(seal(t, err));
  tm_csnap *s = NULL;
  TM_TRY(working_snapshot(t, &s, err));
  tm_vec rowids;
  tm_vec_init(&rowids, sizeof(int64_t), SIZE_MAX / 16);
  int rc = tm_cvtab_where_rowids(s, where_sql, &rowids, err);
  int64_t before = t->info.rows_deleted;
  for (size_t i = 0; i < rowids.len && rc == TM_OK; i++) {
    int64_t id = *(int64_t *)tm_vec_at(&rowids, i);
    size_t wi = (size_t)(id >> 32);
    uint32_t r = (uint32_t)(id & 0xffffffff);
    if (wi >= t->n_w || r >= (uint64_t)t->w[wi].seg->n_rows)
      rc = tm_error_set(err, TM_ERROR, "condition returned an unknown row");
    else rc = delete_row(t, wi, r, err);
  }
  *n_out = t->info.rows_deleted - before;
  tm_vec_dispose(&rowids);
  tm_engine__snapshot_drop(&s->base);
  return rc;
}

/* The smallest raw value of the time column at or after an instant (ceiling). */
static int64_t raw_ceiling(const tm_type *t, tm_time_format f, int64_t sec, int32_t nsec) {
  int64_t per;
  switch (t->id) {
    case TM_TYPE_TIMESTAMP: per = tm_unit_per_second(t->unit); break;
    case TM_TYPE_DATE32: {
      int64_t d = tm_floor_div(sec, TM_SEC_PER_DAY);
      return (d * TM_SEC_PER_DAY == sec && nsec == 0) ? d : d + 1;
    }
    default:
      per = f == TM_TIME_FORMAT_UNIX_MILLIS ? 1000 : f == TM_TIME_FORMAT_UNIX_NANOS ? 1000000000 : 1;
      break;
  }
  int64_t sub = (int64_t)nsec * per / 1000000000;
  int64_t rem = (int64_t)nsec * per % 1000000000;
  int64_t v;
  if (__builtin_mul_overflow(sec, per, &v)) return sec < 0 ? INT64_MIN : INT64_MAX;
  if (__builtin_add_overflow(v, sub + (rem ? 1 : 0), &v)) return INT64_MAX;
  return v;
}

int tm_cengine_delete_before(tm_engine_txn *tb, int64_t sec, int32_t nsec, int64_t *n_out,
                             tm_error *err) {
  ctxn *t = (ctxn *)tb;
  tm_cengine *e = eng(t);
  size_t tc = (size_t)e->base.cfg.time_col;
  const tm_type *type = &e->base.schema.cols[tc].type;
  tm_instant bound = {false, sec, nsec};
  TM_TRY(seal(t, err));
  int64_t before = t->info.rows_deleted;
  bool raw = type->id != TM_TYPE_UTF8 && !(type->id >= TM_TYPE_UINT8 && type->id <= TM_TYPE_UINT64);
  int64_t lim = raw ? raw_ceiling(type, e->base.cfg.time_format, sec, nsec) : 0;
  tm_value zl = {type->id, false, {.i = lim}};
  tm_pred_term below = {NULL, *type, TM_PRED_LT, zl, NULL, 0};
  for (size_t i = 0; i < t->n_w; i++) {
    wseg *w = &t->w[i];
    const tm_ccol *c = &w->seg->cols[tc];
    TM_TRY(tm_ccol_check(c, e->base.cfg.dataset, err));
    if (raw && !tm_pred_term_may_match(&below, &c->zone)) continue;
    for (int64_t r = 0; r < w->seg->n_rows; r++) {
      if (w_is_deleted(w, (uint32_t)r) || tm_ccol_is_null(c, r)) continue;
      bool old;
      if (raw) {
        old = tm_ccol_int(c, r) < lim;
      } else {
        tm_value v;
        tm_ccol_get(c, r, &v);
        tm_instant at = tm_engine__instant(type, e->base.cfg.time_format, &v);
        old = !at.null && tm_instant_cmp(at, bound) < 0;
      }
      if (old) TM_TRY(delete_row(t, i, (uint32_t)r, err));
    }
  }
  *n_out = t->info.rows_deleted - before;
  return TM_OK;
}

/* ---- commit and abort ----------------------------------------------------------------------- */

static bool in_snapshot(const tm_csnap *s, const tm_cseg *seg) {
  for (size_t i = 0; i < s->n_segs; i++)
    if (s->segs[i].seg->id == seg->id) return true;
  return false;
}

/*
 * Builds the next snapshot from a working list, publishes it (store first,
 * then memory) and retires what the old state held and the new does not.
 * On failure nothing is published; the caller aborts.
 */
static int publish_working(ctxn *t, const tm_kv *state, tm_error *err) {
  tm_cengine *e = eng(t);
  /* The new segments first become durable files (cayenne). */
  int rc = e->store ? e->store->sync(e, err) : TM_OK;
  if (rc < 0) return rc;
  tm_csnap *next = NULL;
  TM_TRY(tm_csnap_new(&next, e, err));
  next->segs = tm_calloc(t->n_w ? t->n_w : 1, sizeof *next->segs);
  if (!next->segs) rc = tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_kv_copy(&next->state, state ? state : &t->from->state, err);
  next->generation = t->from->generation + 1;
  for (size_t i = 0; i < t->n_w && rc == TM_OK; i++) {
    wseg *w = &t->w[i];
    uint64_t dead = w_deleted(w);
    if (dead >= (uint64_t)w->seg->n_rows) continue; /* nothing live: leaves the state */
    tm_csnap_seg *ns = &next->segs[next->n_segs];
    ns->seg = e->store ? e->store->resolve(e, w->seg) : tm_cseg_retain(w->seg);
    ns->seg->slot = w->seg->slot;
    next->n_segs++;
    if (w->del && dead > 0) {
      roaring_bitmap_t *copy = roaring_bitmap_copy(w->del);
      ns->del = copy ? tm_cdel_take(copy) : NULL;
      if (!ns->del) rc = tm_error_nomem(err);
    } else if (!w->del) {
      ns->del = tm_cdel_retain(w->base);
    }
    next->n_live += w->seg->n_rows - (int64_t)dead;
  }
  if (rc == TM_OK && e->store) rc = e->store->publish(e, next, err);
  if (rc < 0) {
    tm_engine__snapshot_drop(&next->base);
    return rc;
  }
  pthread_mutex_lock(&e->pub_mu);
  tm_csnap *old = e->published;
  e->published = next;
  pthread_mutex_unlock(&e->pub_mu);
  /* The writer reads the published segments from now on (file-backed twins). */
  for (size_t i = 0; i < next->n_segs; i++) e->slots[next->segs[i].seg->slot] = next->segs[i].seg;
  /* Retire segments the new state no longer names. */
  for (size_t i = 0; i < old->n_segs; i++) {
    tm_cseg *s = old->segs[i].seg;
    if (in_snapshot(next, s)) continue;
    if (e->store) e->store->forget(e, s);
    if (s->slot < e->n_slots && e->slots[s->slot] == s) slot_free(e, s->slot);
  }
  for (size_t i = 0; i < t->n_w; i++) {
    tm_cseg *s = t->w[i].seg;
    if (!t->w[i].fresh || in_snapshot(next, s)) continue;
    if (e->store) e->store->forget(e, s);
    if (s->slot < e->n_slots && e->slots[s->slot] == s) slot_free(e, s->slot);
  }
  t->info.rows_after = next->n_live;
  tm_engine__snapshot_drop(&old->base);
  if (e->store) e->store->finish(e);
  return TM_OK;
}

/* Undoes a transaction's writer-side effects (slots, files, key index). */
static void rollback(ctxn *t) {
  tm_cengine *e = eng(t);
  for (size_t i = 0; i < t->n_w; i++) {
    tm_cseg *s = t->w[i].seg;
    if (!t->w[i].fresh) continue;
    if (e->store) e->store->forget(e, s);
    if (s->slot < e->n_slots && e->slots[s->slot] == s) slot_free(e, s->slot);
  }
  if (e->store) e->store->finish(e);
  if (t->pend_slot != UINT32_MAX) slot_free(e, t->pend_slot);
  t->pend_slot = UINT32_MAX;
  if (t->kix_touched) {
    tm_kix_free(e->kix);
    e->kix = NULL;
  }
}

static int small_segments(const tm_cengine *e, const tm_csnap *s) {
  int n = 0;
  for (size_t i = 0; i < s->n_segs; i++) {
    int64_t live = s->segs[i].seg->n_rows - (int64_t)(s->segs[i].del ? s->segs[i].del->card : 0);
    if (live < e->base.cfg.segment_rows / 2) n++;
  }
  return n;
}

static int compact_locked(tm_cengine *e, bool force, tm_engine_compact_info *info, tm_error *err);

int tm_cengine_commit(tm_engine_txn *tb, const tm_kv *state, tm_engine_commit_info *info,
                      tm_error *err) {
  ctxn *t = (ctxn *)tb;
  tm_cengine *e = eng(t);
  int rc = t->pend_slot == UINT32_MAX
               ? tm_error_set(err, TM_ERROR, "dataset '%s': the transaction failed earlier",
                              e->base.cfg.dataset)
               : seal(t, err);
  if (rc == TM_OK) rc = publish_working(t, state, err);
  if (rc < 0) {
    rollback(t);
  } else {
    slot_free(e, t->pend_slot);
    *info = t->info;
  }
  txn_free(t);
  if (rc == TM_OK && e->base.cfg.compact_min_segments > 0) {
    tm_csnap *now = tm_cengine_pin(&e->base);
    bool due = small_segments(e, now) >= e->base.cfg.compact_min_segments;
    tm_engine_snapshot_release(&now->base);
    if (due) {
      /* The commit stands even if compaction fails; it runs again next time. */
      tm_engine_compact_info ci;
      tm_error sub;
      tm_error_init(&sub);
      if (compact_locked(e, false, &ci, &sub) == TM_OK && ci.segments_after != ci.segments_before)
        info->compacted = true;
    }
  }
  tm_engine__writer_release(&e->base);
  return rc;
}

void tm_cengine_abort(tm_engine_txn *tb) {
  ctxn *t = (ctxn *)tb;
  tm_cengine *e = eng(t);
  rollback(t);
  txn_free(t);
  tm_engine__writer_release(&e->base);
}

/* ---- compaction -------------------------------------------------------------------------------- */

/* Copies live rows of w into the pending builder, moving their index entries. */
static int move_rows(ctxn *t, wseg *w, tm_error *err) {
  tm_cengine *e = eng(t);
  size_t n_cols = e->base.schema.n_cols;
  int64_t cap = e->base.cfg.segment_rows;
  TM_TRY(seg_ready(e, w->seg, err));
  for (int64_t r = 0; r < w->seg->n_rows; r++) {
    if (w_is_deleted(w, (uint32_t)r)) continue;
    for (size_t c = 0; c < n_cols; c++) {
      tm_value v;
      tm_ccol_get(&w->seg->cols[c], r, &v);
      TM_TRY(tm_colbuilder_append_value(&t->pend[c], &v, err));
    }
    if (e->kix) {
      uint64_t h;
      rowref ref = {w->seg->cols, NULL, r};
      if (key_hash(&e->base.cfg, ref, &h)) {
        tm_kix_entry *ent = tm_kix_find_loc(e->kix, h, w->seg->slot, (uint32_t)r);
        if (ent) {
          ent->slot = t->pend_slot;
          ent->row = (uint32_t)t->pend_rows;
        }
      }
    }
    t->pend_rows++;
    if (t->pend_rows >= cap) TM_TRY(seal(t, err));
  }
  return TM_OK;
}

static int compact_locked(tm_cengine *e, bool force, tm_engine_compact_info *info, tm_error *err) {
  memset(info, 0, sizeof *info);
  ctxn *src;
  TM_TRY(txn_new(e, TM_TXN_APPEND, &src, err));
  int64_t half = e->base.cfg.segment_rows / 2;
  size_t n = src->n_w;
  info->segments_before = (int64_t)n;
  info->segments_after = (int64_t)n;
  /* Candidates: small segments, and segments that are mostly holes. */
  size_t n_small = 0, n_holey = 0, n_cand = 0;
  bool *cand = tm_calloc(n ? n : 1, sizeof *cand);
  if (!cand) {
    slot_free(e, src->pend_slot);
    txn_free(src);
    return tm_error_nomem(err);
  }
  for (size_t i = 0; i < n; i++) {
    wseg *w = &src->w[i];
    int64_t dead = (int64_t)w_deleted(w);
    int64_t live = w->seg->n_rows - dead;
    bool small = live < half;
    bool holey = dead * 10 > w->seg->n_rows * 3 || (force && dead > 0);
    n_small += small;
    n_holey += holey;
    cand[i] = small || holey;
    n_cand += cand[i];
  }
  bool due = force ? (n_cand > 1 || n_holey > 0)
                   : e->base.cfg.compact_min_segments > 0 &&
                         n_small >= (size_t)e->base.cfg.compact_min_segments;
  int rc = TM_OK;
  if (!due) goto done;
  /* The new list: untouched segments keep their place; merged rows follow. */
  ctxn *t;
  TM_CHECK(txn_new(e, TM_TXN_APPEND, &t, err));
  for (size_t i = 0; i < t->n_w; i++) {
    tm_cseg_release(t->w[i].seg);
    tm_cdel_release(t->w[i].base);
    if (t->w[i].del) roaring_bitmap_free(t->w[i].del);
  }
  t->n_w = 0;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    wseg *w = &src->w[i];
    if (!cand[i]) {
      rc = w_push(t, tm_cseg_retain(w->seg), tm_cdel_retain(w->base), NULL, false, err);
      continue;
    }
    info->rows_reclaimed += (int64_t)w_deleted(w);
    rc = move_rows(t, w, err);
  }
  if (rc == TM_OK) rc = seal(t, err);
  if (rc == TM_OK) rc = publish_working(t, NULL, err);
  if (rc < 0) {
    rollback(t);
    /* Index entries may point at merged rows: rebuild on the next keyed write. */
    tm_kix_free(e->kix);
    e->kix = NULL;
  } else {
    slot_free(e, t->pend_slot);
    tm_csnap *now = tm_cengine_pin(&e->base);
    info->segments_after = (int64_t)now->n_segs;
    tm_engine_snapshot_release(&now->base);
  }
  txn_free(t);
done:
  tm_free(cand);
  slot_free(e, src->pend_slot);
  txn_free(src);
  return rc;
}

int tm_cengine_compact(tm_engine *eb, bool force, tm_engine_compact_info *info, tm_error *err) {
  tm_cengine *e = (tm_cengine *)eb;
  TM_TRY(tm_engine__writer_acquire(eb, err));
  int rc = compact_locked(e, force, info, err);
  tm_engine__writer_release(eb);
  return rc;
}

/* ---- bounds -------------------------------------------------------------------------------------- */

/* Exact min/max of the live rows of one segment's column (segments with deletions). */
static int live_bounds(const tm_cengine *e, const tm_csnap_seg *s, size_t col, tm_value *lo,
                       tm_value *hi, bool *found, tm_error *err) {
  const tm_ccol *c = &s->seg->cols[col];
  TM_TRY(tm_ccol_check(c, e->base.cfg.dataset, err));
  *found = false;
  bool is_float = c->type.id == TM_TYPE_FLOAT32 || c->type.id == TM_TYPE_FLOAT64;
  for (int64_t r = 0; r < s->seg->n_rows; r++) {
    if (s->del && roaring_bitmap_contains(s->del->bm, (uint32_t)r)) continue;
    tm_value v;
    tm_ccol_get(c, r, &v);
    if (v.is_null || (is_float && v.v.f != v.v.f)) continue;
    if (!*found) {
      *lo = *hi = v;
      *found = true;
      continue;
    }
    if (tm_value_cmp(&v, lo) < 0) *lo = v;
    if (tm_value_cmp(&v, hi) > 0) *hi = v;
  }
  return TM_OK;
}

int tm_cengine_bounds(tm_engine_snapshot *sb, size_t col, tm_engine_bounds *out, tm_error *err) {
  tm_csnap *s = (tm_csnap *)sb;
  tm_cengine *e = (tm_cengine *)sb->engine;
  tm_value lo, hi;
  bool have_lo = false, have_hi = false;
  memset(&lo, 0, sizeof lo);
  memset(&hi, 0, sizeof hi);
  /* Segments without deletions (and with zone bounds) give exact answers. */
  for (size_t i = 0; i < s->n_segs; i++) {
    const tm_csnap_seg *g = &s->segs[i];
    const tm_col_stats *z = &g->seg->cols[col].zone;
    if (g->del && g->del->card > 0) continue;
    if (z->null_count >= z->row_count) continue;
    if (!z->has_min || !z->has_max) continue;
    if (!have_lo || tm_value_cmp(&z->min, &lo) < 0) lo = z->min, have_lo = true;
    if (!have_hi || tm_value_cmp(&z->max, &hi) > 0) hi = z->max, have_hi = true;
  }
  /* The others only when their zone map could beat the answer so far. */
  for (size_t i = 0; i < s->n_segs; i++) {
    const tm_csnap_seg *g = &s->segs[i];
    const tm_col_stats *z = &g->seg->cols[col].zone;
    bool holes = g->del && g->del->card > 0;
    bool zoned = z->has_min && z->has_max;
    if (!holes && zoned) continue;
    if (z->null_count >= z->row_count) continue;
    if (zoned && have_lo && have_hi && tm_value_cmp(&z->min, &lo) >= 0 &&
        tm_value_cmp(&z->max, &hi) <= 0)
      continue;
    tm_value l, h;
    bool found;
    TM_TRY(live_bounds(e, g, col, &l, &h, &found, err));
    if (!found) continue;
    if (!have_lo || tm_value_cmp(&l, &lo) < 0) lo = l, have_lo = true;
    if (!have_hi || tm_value_cmp(&h, &hi) > 0) hi = h, have_hi = true;
  }
  out->found = have_lo && have_hi;
  if (!out->found) return TM_OK;
  int rc = tm_value_copy(&out->min, &lo, &out->owned[0], err);
  if (rc == TM_OK) rc = tm_value_copy(&out->max, &hi, &out->owned[1], err);
  if (rc < 0) tm_engine_bounds_dispose(out);
  return rc;
}

/* ---- scans ------------------------------------------------------------------------------------------ */

typedef struct cscan {
  tm_engine_scan base;
  tm_schema out_schema;
  size_t *cols;           /* schema index per output column */
  size_t n_cols;
  tm_cfilter_term *terms;
  size_t n_terms;
  size_t seg;             /* next segment */
  int64_t row;            /* next row in it */
  uint8_t *deleted;       /* dense deletion bits of the current segment */
  bool seg_open;
  uint32_t *sel;
} cscan;

void tm_cengine_scan_free(tm_engine_scan *sb) {
  cscan *sc = (cscan *)sb;
  tm_schema_dispose(&sc->out_schema);
  tm_free(sc->cols);
  tm_free(sc->terms);
  tm_free(sc->deleted);
  tm_free(sc->sel);
  if (sb->snap) tm_engine_snapshot_release(sb->snap);
  tm_free(sc);
}

int tm_cengine_scan(tm_engine_snapshot *sb, const size_t *cols, size_t n_cols,
                    const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  tm_csnap *s = (tm_csnap *)sb;
  const tm_schema *schema = &sb->engine->schema;
  cscan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  tm_schema_init(&sc->out_schema);
  sc->base.snap = tm_engine_snapshot_retain(sb);
  sc->base.stats.segments_total = (int64_t)s->n_segs;
  int rc = TM_OK;
  size_t n_out = n_cols ? n_cols : schema->n_cols;
  size_t n_terms = pred ? pred->n_terms : 0;
  sc->cols = tm_calloc(n_out ? n_out : 1, sizeof *sc->cols);
  sc->terms = tm_calloc(n_terms ? n_terms : 1, sizeof *sc->terms);
  sc->sel = tm_malloc(TM_BATCH_DEFAULT_ROWS * sizeof *sc->sel);
  if (!sc->cols || !sc->terms || !sc->sel) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < n_out; i++) {
    sc->cols[i] = n_cols ? cols[i] : i;
    const tm_column *c = &schema->cols[sc->cols[i]];
    TM_CHECK(tm_schema_add(&sc->out_schema, c->name, c->type, c->nullable, c->field_id, err));
  }
  sc->n_cols = n_out;
  for (size_t i = 0; i < n_terms; i++) {
    sc->terms[i].term = &pred->terms[i];
    sc->terms[i].col = (size_t)tm_schema_find(schema, pred->terms[i].column);
  }
  sc->n_terms = n_terms;
  *out = &sc->base;
  sc = NULL;
done:
  if (sc) tm_cengine_scan_free(&sc->base);
  return rc;
}

/* Appends the selected rows of a segment column to a builder. */
static int append_selected(tm_colbuilder *cb, const tm_ccol *c, const uint32_t *sel, size_t n,
                           tm_error *err) {
  size_t w = tm_type_byte_width(&c->type);
  if (c->enc == TM_CENC_FIXED && !c->validity && w > 0) {
    void *p;
    TM_TRY(tm_buf_extend(&cb->values, n * w, &p, err));
    uint8_t *dst = p;
    const uint8_t *src = c->values;
    if (w == 8)
      for (size_t i = 0; i < n; i++) memcpy(dst + i * 8, src + (size_t)sel[i] * 8, 8);
    else if (w == 4)
      for (size_t i = 0; i < n; i++) memcpy(dst + i * 4, src + (size_t)sel[i] * 4, 4);
    else
      for (size_t i = 0; i < n; i++) memcpy(dst + i * w, src + (size_t)sel[i] * w, w);
    if (cb->validity.len) {
      /* Earlier rows had nulls: mark these valid. */
      for (size_t i = 0; i < n; i++) {
        int64_t row = cb->length + (int64_t)i;
        size_t need = (size_t)(row / 8 + 1);
        if (need > cb->validity.len) {
          void *q;
          TM_TRY(tm_buf_extend(&cb->validity, need - cb->validity.len, &q, err));
        }
        ((uint8_t *)cb->validity.ptr)[row >> 3] |= (uint8_t)(1u << (row & 7));
      }
    }
    cb->length += (int64_t)n;
    return TM_OK;
  }
  for (size_t i = 0; i < n; i++) {
    tm_value v;
    tm_ccol_get(c, sel[i], &v);
    TM_TRY(tm_colbuilder_append_value(cb, &v, err));
  }
  return TM_OK;
}

int tm_cengine_scan_next(tm_engine_scan *sb, tm_batch *out, tm_error *err) {
  cscan *sc = (cscan *)sb;
  tm_csnap *s = (tm_csnap *)sb->snap;
  tm_cengine *e = (tm_cengine *)sb->snap->engine;
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, &sc->out_schema, err));
  int rc = TM_OK;
  int64_t rows = 0;
  while (rc == TM_OK && sc->seg < s->n_segs && rows < TM_BATCH_DEFAULT_ROWS) {
    tm_csnap_seg *g = &s->segs[sc->seg];
    if (!sc->seg_open) {
      if (!tm_cfilter_may_match(g->seg, sc->terms, sc->n_terms)) {
        sb->stats.segments_skipped++;
        sc->seg++;
        continue;
      }
      sb->stats.segments_read++;
      for (size_t i = 0; i < sc->n_cols && rc == TM_OK; i++)
        rc = tm_ccol_check(&g->seg->cols[sc->cols[i]], e->base.cfg.dataset, err);
      for (size_t i = 0; i < sc->n_terms && rc == TM_OK; i++)
        rc = tm_ccol_check(&g->seg->cols[sc->terms[i].col], e->base.cfg.dataset, err);
      if (rc < 0) break;
      tm_free(sc->deleted);
      sc->deleted = NULL;
      if (g->del && g->del->card) {
        sc->deleted = tm_calloc((size_t)(g->seg->n_rows + 7) / 8, 1);
        if (!sc->deleted) {
          rc = tm_error_nomem(err);
          break;
        }
        tm_cdel_to_bits(g->del, sc->deleted);
      }
      sc->seg_open = true;
      sc->row = 0;
    }
    int64_t to = sc->row + (TM_BATCH_DEFAULT_ROWS - rows);
    if (to > g->seg->n_rows) to = g->seg->n_rows;
    size_t n = tm_cfilter_select(g->seg, sc->deleted, sc->terms, sc->n_terms, sc->row, to, sc->sel);
    sb->stats.rows_read += to - sc->row;
    for (size_t i = 0; i < sc->n_cols && rc == TM_OK; i++)
      rc = append_selected(&bb.cols[i], &g->seg->cols[sc->cols[i]], sc->sel, n, err);
    rows += (int64_t)n;
    sc->row = to;
    if (sc->row >= g->seg->n_rows) {
      sc->seg++;
      sc->seg_open = false;
    }
  }
  if (rc == TM_OK && rows == 0) rc = TM_ITEROVER;
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  if (rc == TM_OK) sb->stats.rows_out += out->n_rows;
  tm_batch_builder_dispose(&bb);
  return rc;
}
