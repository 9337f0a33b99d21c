/*
 * columnar.h - columnar segments, snapshots and transactions shared by the
 * cayenne and arrow engines (engine layer, private).
 *
 * A segment is an immutable block of up to segment_rows rows, one column
 * after another: fixed-width values usable in place, bit-packed booleans,
 * strings either plain (int32 offsets + bytes) or dictionary-encoded
 * (1, 2 or 4-byte codes into a sorted dictionary, so code order is value
 * order). Each column carries a zone map (min, max, null count). Arrow keeps
 * segments in memory; cayenne writes each to a file and maps it back.
 *
 * A snapshot (tm_csnap) is the published state: a list of segments, each
 * with an optional deletion set (rows superseded or deleted, CRoaring), the
 * state map and the live row count. Snapshots are immutable and reference
 * counted; a commit builds the next one and publishes it under a mutex, so
 * a reader holds either the old or the new state, never a mix (SPEC C5).
 *
 * Only the writer (one transaction or compaction at a time) touches the key
 * index and the slot table.
 */
#ifndef TM_ENGINE_COLUMNAR_COLUMNAR_H
#define TM_ENGINE_COLUMNAR_COLUMNAR_H

#include <pthread.h>
#include <roaring/roaring.h>

#include "engine/engine_int.h"

/* ---- segments -------------------------------------------------------------- */

typedef enum tm_cenc {
  TM_CENC_FIXED = 0, /* values: n * width bytes */
  TM_CENC_BOOL = 1,  /* values: ceil(n / 8) bytes of bits */
  TM_CENC_VAR = 2,   /* values: (n + 1) int32 offsets into data */
  TM_CENC_DICT = 3   /* values: n codes of code_width bytes into the dictionary */
} tm_cenc;

#define TM_ZONE_MAX_BYTES 64 /* longer string bounds are not kept */

typedef struct tm_ccol {
  tm_type type;
  uint8_t enc;              /* tm_cenc */
  uint8_t code_width;       /* DICT: 1, 2 or 4 */
  int64_t null_count;
  const uint8_t *validity;  /* bit i set: row i valid; NULL: no nulls */
  const void *values;
  const uint8_t *data;      /* VAR: bytes */
  uint64_t data_len;
  uint32_t dict_len;        /* DICT: entries */
  const int32_t *dict_off;  /* DICT: dict_len + 1 offsets into dict_data */
  const uint8_t *dict_data;
  uint64_t dict_data_len;
  tm_col_stats zone;        /* min/max payloads point into the segment or zone_buf */
  int checked;              /* atomic: offsets and codes validated (0 no, 1 yes, -1 corrupt) */
} tm_ccol;

typedef struct tm_cseg {
  int refs;                 /* atomic; the last reference frees the segment */
  uint64_t id;              /* unique within the dataset; names the file */
  int64_t n_rows;
  size_t n_cols;
  tm_ccol *cols;            /* owned array */
  void **heap;              /* owned heap buffers (memory segments) */
  size_t n_heap;
  void *map;                /* cayenne: the mapped file (munmap on free) */
  size_t map_len;
  char *zone_buf;           /* owned copies of zone-map string payloads */
  uint64_t file_size;       /* cayenne */
  uint64_t checksum;        /* cayenne: of the whole file */
  uint64_t mem_bytes;       /* bytes held in memory (arrow's size) */
  uint32_t slot;            /* writer: index in the slot table */
} tm_cseg;

tm_cseg *tm_cseg_retain(tm_cseg *s);
void tm_cseg_release(tm_cseg *s);

static inline bool tm_ccol_is_null(const tm_ccol *c, int64_t row) {
  return c->validity && !((c->validity[row >> 3] >> (row & 7)) & 1);
}
static inline uint32_t tm_ccol_code(const tm_ccol *c, int64_t row) {
  switch (c->code_width) {
    case 1: return ((const uint8_t *)c->values)[row];
    case 2: return ((const uint16_t *)c->values)[row];
    default: return ((const uint32_t *)c->values)[row];
  }
}
/** Bytes of a VAR or DICT cell (the column must be checked, tm_ccol_check). */
static inline tm_strview tm_ccol_bytes(const tm_ccol *c, int64_t row) {
  if (c->enc == TM_CENC_DICT) {
    uint32_t k = tm_ccol_code(c, row);
    return tm_sv((const char *)c->dict_data + c->dict_off[k],
                 (size_t)(c->dict_off[k + 1] - c->dict_off[k]));
  }
  const int32_t *off = c->values;
  return tm_sv((const char *)c->data + off[row], (size_t)(off[row + 1] - off[row]));
}
/** One cell as a tm_value (payloads point into the segment). */
void tm_ccol_get(const tm_ccol *c, int64_t row, tm_value *out);
/** Integer-like cells (ints, temporal) as int64 (uint64 as its bits). */
static inline int64_t tm_ccol_int(const tm_ccol *c, int64_t row) {
  const void *p = c->values;
  switch (c->type.id) {
    case TM_TYPE_INT8: return ((const int8_t *)p)[row];
    case TM_TYPE_INT16: return ((const int16_t *)p)[row];
    case TM_TYPE_INT32:
    case TM_TYPE_DATE32: return ((const int32_t *)p)[row];
    case TM_TYPE_UINT8: return ((const uint8_t *)p)[row];
    case TM_TYPE_UINT16: return ((const uint16_t *)p)[row];
    case TM_TYPE_UINT32: return ((const uint32_t *)p)[row];
    default: return ((const int64_t *)p)[row];
  }
}
/**
 * Validates a column's offsets and dictionary codes once (O(rows)); after it
 * every cell access stays inside the segment. TM_ECORRUPT otherwise, naming
 * `name`. Thread-safe; the result is remembered in c->checked.
 */
int tm_ccol_check(const tm_ccol *c, const char *name, tm_error *err) TM_WARN_UNUSED;
/** Index of the dictionary entry equal to s, or -(insertion point) - 1. */
int64_t tm_ccol_dict_find(const tm_ccol *c, tm_strview s);

/**
 * Builds a memory segment from column builders of n rows (moves their
 * buffers; the builders are reset). Strings are dictionary-encoded when that
 * pays. Computes zone maps.
 */
int tm_cseg_build(tm_cseg **out, uint64_t id, const tm_schema *schema, tm_colbuilder *cols,
                  tm_error *err) TM_WARN_UNUSED;
/** Computes the zone map of column c (min/max payloads copied into zone_buf when needed). */
int tm_cseg_compute_zones(tm_cseg *s, tm_error *err) TM_WARN_UNUSED;

/* ---- deletion sets ----------------------------------------------------------- */

/* An immutable deletion set shared by snapshots. */
typedef struct tm_cdel {
  int refs;                 /* atomic */
  roaring_bitmap_t *bm;     /* owned; rows deleted */
  uint64_t card;
} tm_cdel;

tm_cdel *tm_cdel_retain(tm_cdel *d);
void tm_cdel_release(tm_cdel *d);
/** Wraps bm (ownership moves in; run-optimized). NULL on allocation failure (bm freed). */
tm_cdel *tm_cdel_take(roaring_bitmap_t *bm);

/* ---- snapshots ------------------------------------------------------------------ */

typedef struct tm_csnap_seg {
  tm_cseg *seg;             /* one reference */
  tm_cdel *del;             /* one reference, or NULL */
} tm_csnap_seg;

typedef struct tm_csnap {
  tm_engine_snapshot base;
  tm_csnap_seg *segs;       /* owned array */
  size_t n_segs;
  int64_t n_live;
  tm_kv state;              /* owned */
  uint64_t generation;      /* commits since creation */
} tm_csnap;

/* ---- the columnar engine (cayenne and arrow) ------------------------------------ */

typedef struct tm_cengine tm_cengine;

/*
 * What a persistent backend does at the writer's key moments. A transaction
 * calls persist for each segment it seals (the write may proceed in the
 * background), then at commit sync, resolve for each segment of the next
 * state, publish, and finally finish (also after an abort).
 */
typedef struct tm_cstore {
  /** Starts writing a sealed memory segment (the store keeps a reference). */
  int (*persist)(tm_cengine *e, tm_cseg *seg, tm_error *err);
  /**
   * Segments whose write finished since the last call, each with its
   * file-backed twin (at most cap pairs). The caller swaps them in and takes
   * over the references: one on each twin; the store drops its reference on
   * the memory segments. Lets a long transaction keep memory flat. May be NULL.
   */
  size_t (*written)(tm_cengine *e, tm_cseg **mem, tm_cseg **twin, size_t cap);
  /** Waits for every started write and makes them durable. */
  int (*sync)(tm_cengine *e, tm_error *err);
  /** The segment to publish for seg (a new reference): its file-backed twin, or seg. */
  tm_cseg *(*resolve)(tm_cengine *e, tm_cseg *seg);
  /** Publishes `next` durably (cayenne: the manifest by atomic rename). */
  int (*publish)(tm_cengine *e, const tm_csnap *next, tm_error *err);
  /** The transaction is over: drops what persist kept. Idempotent. */
  void (*finish)(tm_cengine *e);
  /** A segment that no published state names any more (cayenne: unlink its file). */
  void (*forget)(tm_cengine *e, tm_cseg *seg);
} tm_cstore;

/*
 * The key index (keyindex.c): primary-key hash -> (slot, row) of the live
 * row holding that key in the writer's state. Open addressing; the caller
 * confirms candidates by comparing key values. Writer-only.
 */
typedef struct tm_kix_entry {
  uint64_t hash;
  uint32_t slot; /* TM_KIX_EMPTY / TM_KIX_TOMB mark free entries */
  uint32_t row;
} tm_kix_entry;

#define TM_KIX_EMPTY UINT32_MAX
#define TM_KIX_TOMB (UINT32_MAX - 1)

typedef struct kix {
  tm_kix_entry *t; /* owned; power-of-two entries */
  uint64_t mask;
  uint64_t n;      /* live entries */
  uint64_t used;   /* live + tombstones */
} kix;

int tm_kix_new(kix **out, uint64_t expect, tm_error *err) TM_WARN_UNUSED;
void tm_kix_free(kix *k);
/**
 * Iterates the entries whose hash is h: *pos starts at TM_KIX_START; returns
 * the next candidate or NULL when none is left.
 */
#define TM_KIX_START UINT64_MAX
tm_kix_entry *tm_kix_next(kix *k, uint64_t h, uint64_t *pos);
int tm_kix_insert(kix *k, uint64_t h, uint32_t slot, uint32_t row, tm_error *err) TM_WARN_UNUSED;
/** Removes a candidate returned by tm_kix_next. */
void tm_kix_remove(kix *k, tm_kix_entry *e);
/** The entry (h, slot, row), or NULL. */
tm_kix_entry *tm_kix_find_loc(kix *k, uint64_t h, uint32_t slot, uint32_t row);

struct tm_cengine {
  tm_engine base;
  const tm_cstore *store;   /* NULL: memory only */
  void *store_data;         /* the backend's */
  pthread_mutex_t pub_mu;   /* guards published */
  tm_csnap *published;      /* one reference */
  uint64_t next_seg_id;
  /* Writer state: */
  kix *kix;                 /* NULL until the first keyed write; rebuilt when invalid */
  tm_cseg **slots;          /* slot -> segment of the writer's current state, or NULL */
  uint32_t n_slots, cap_slots;
};

/** Common part of opening: base init done by the caller; publishes `initial` (owned). */
int tm_cengine_init(tm_cengine *e, tm_csnap *initial, tm_error *err) TM_WARN_UNUSED;
void tm_cengine_dispose(tm_cengine *e);
/** An empty snapshot of e (no segments). */
int tm_csnap_new(tm_csnap **out, tm_cengine *e, tm_error *err) TM_WARN_UNUSED;

/* Shared vtable entries (table.c). */
int tm_cengine_begin(tm_engine *e, tm_txn_kind kind, tm_engine_txn **out, tm_error *err);
int tm_cengine_write(tm_engine_txn *t, const tm_batch *b, tm_error *err);
int tm_cengine_delete_where(tm_engine_txn *t, const char *where_sql, int64_t *n_out,
                            tm_error *err);
int tm_cengine_delete_before(tm_engine_txn *t, int64_t sec, int32_t nsec, int64_t *n_out,
                             tm_error *err);
int tm_cengine_commit(tm_engine_txn *t, const tm_kv *state, tm_engine_commit_info *info,
                      tm_error *err);
void tm_cengine_abort(tm_engine_txn *t);
int tm_cengine_read_state(tm_engine *e, tm_kv *out, tm_error *err);
int tm_cengine_snapshot(tm_engine *e, tm_engine_snapshot **out, tm_error *err);
void tm_cengine_snapshot_free(tm_engine_snapshot *s);
int tm_cengine_row_count(tm_engine_snapshot *s, int64_t *out, tm_error *err);
int tm_cengine_snapshot_state(tm_engine_snapshot *s, tm_kv *out, tm_error *err);
int tm_cengine_bounds(tm_engine_snapshot *s, size_t col, tm_engine_bounds *out, tm_error *err);
int tm_cengine_scan(tm_engine_snapshot *s, const size_t *cols, size_t n_cols,
                    const tm_predicate *pred, tm_engine_scan **out, tm_error *err);
int tm_cengine_scan_next(tm_engine_scan *sc, tm_batch *out, tm_error *err);
void tm_cengine_scan_free(tm_engine_scan *sc);
int tm_cengine_compact(tm_engine *e, bool force, tm_engine_compact_info *info, tm_error *err);

/* ---- row selection (filter.c) --------------------------------------------------- */

/*
 * A row filter over one segment: the terms of a predicate resolved to column
 * indices. Terms on strings use the column's dictionary when it has one.
 */
typedef struct tm_cfilter_term {
  const tm_pred_term *term;
  size_t col;               /* schema index */
} tm_cfilter_term;

/** Whether the zone maps of seg let any row satisfy every term. */
bool tm_cfilter_may_match(const tm_cseg *seg, const tm_cfilter_term *terms, size_t n_terms);

/**
 * Selects rows [from, to) of seg that are not deleted (dense bitset of
 * seg->n_rows bits, or NULL) and satisfy every term: their indices go to
 * sel (room for to - from), their count is returned. Columns the terms use
 * must be checked (tm_ccol_check) before.
 */
size_t tm_cfilter_select(const tm_cseg *seg, const uint8_t *deleted, const tm_cfilter_term *terms,
                         size_t n_terms, int64_t from, int64_t to, uint32_t *sel);

/** Fills a dense bitset (ceil(n_rows / 8) bytes, zeroed by the caller) from a deletion set. */
void tm_cdel_to_bits(const tm_cdel *d, uint8_t *bits);

/* ---- SQL access (sql/vtab.c) ------------------------------------------------------ */

/** The published snapshot of a columnar engine, with one reference for the caller. */
tm_csnap *tm_cengine_pin(tm_engine *e);

/**
 * Row ids (segment index << 32 | row) of the live rows of snapshot s for
 * which the SQL condition `where_sql` holds, appended to rowids (int64
 * elements). The condition runs in a private read-only SQLite connection
 * where s is the table of the dataset's name. TM_EINVALID for a bad
 * condition (syntax, unknown column, a refused construct, a second statement).
 */
int tm_cvtab_where_rowids(tm_csnap *s, const char *where_sql, tm_vec *rowids, tm_error *err)
    TM_WARN_UNUSED;

#endif
