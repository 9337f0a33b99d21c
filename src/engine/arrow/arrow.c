/*
 * arrow.c - the arrow engine: columnar segments held in memory (engine layer).
 *
 * The same segments, snapshots and transactions as cayenne (columnar/), with
 * no store: a commit publishes the next snapshot in memory only, and nothing
 * survives a restart (SPEC 3: memory mode only). A repeated primary key
 * resolves by arrival order: upsert keeps the last arrival, drop keeps the
 * stored row or the first of a batch (SPEC A8).
 */
#include <string.h>

#include "engine/columnar/columnar.h"
#include "util/alloc.h"

static const tm_engine_vtable k_vtable;

static void arrow_close(tm_engine *base) {
  tm_cengine *e = (tm_cengine *)base;
  tm_cengine_dispose(e);
  tm_engine__dispose_base(&e->base);
  tm_free(e);
}

static int arrow_open(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
                      tm_error *err) {
  tm_cengine *e = tm_calloc(1, sizeof *e);
  if (!e) return tm_error_nomem(err);
  int rc = tm_engine__init_base(&e->base, &k_vtable, schema, opts, err);
  if (rc < 0) {
    tm_free(e);
    return rc;
  }
  tm_csnap *initial;
  rc = tm_csnap_new(&initial, e, err);
  if (rc == TM_OK) rc = tm_cengine_init(e, initial, err);
  if (rc < 0) {
    tm_cengine_dispose(e);
    tm_engine__dispose_base(&e->base);
    tm_free(e);
    return rc;
  }
  *out = &e->base;
  return TM_OK;
}

static int arrow_drop(const tm_engine_options *opts, tm_error *err) {
  (void)opts;
  (void)err;
  return TM_OK;
}

static int arrow_size(tm_engine *base, uint64_t *out, tm_error *err) {
  (void)err;
  tm_csnap *s = tm_cengine_pin(base);
  uint64_t total = 0;
  for (size_t i = 0; i < s->n_segs; i++) total += s->segs[i].seg->mem_bytes;
  tm_engine_snapshot_release(&s->base);
  *out = total;
  return TM_OK;
}

static const tm_engine_vtable k_vtable = {
    TM_ENGINE_VTABLE_VERSION,
    TM_ENGINE_ARROW,
    1u << TM_ENGINE_MEMORY,
    arrow_open,
    arrow_drop,
    arrow_close,
    tm_cengine_begin,
    tm_cengine_write,
    tm_cengine_delete_where,
    tm_cengine_delete_before,
    tm_cengine_commit,
    tm_cengine_abort,
    tm_cengine_read_state,
    tm_cengine_snapshot,
    tm_cengine_snapshot_free,
    tm_cengine_row_count,
    tm_cengine_snapshot_state,
    tm_cengine_bounds,
    tm_cengine_scan,
    tm_cengine_scan_next,
    tm_cengine_scan_free,
    arrow_size,
    tm_cengine_compact,
};

const tm_engine_vtable *tm_engine__arrow_vtable(void) { return &k_vtable; }
