/*
 * run.c - one refresh: makes the plan (plan.c) and carries it out (refresh
 * layer). See accel.h and docs/REFRESH.md.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sqlsource.h"
#include "refresh/accel_int.h"
#include "refresh/dedup.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

/*
 * One refresh, step by step (DESIGN.md): describe the source (open
 * refresh_sql over it); open or (re)create the engine for the rows' schema;
 * plan (plan.c) from the saved state, the table's snapshots and the
 * high-water mark; carry the plan out: read, filter by the bound (A4),
 * de-duplicate the re-read window (A3, A5), write into one transaction and
 * commit it with the state map (D1, B8). Any error before the commit aborts
 * the transaction: nothing changes.
 */
typedef struct run {
  tm_accel *a;
  const tm_refresh_request *req;
  tm_refresh_result *res;
  tm_error *err;
  bool explain;              /* plan only: open no new engine, read no row */
  const tm_schema *schema;   /* the rows' schema (the source's, or refresh_sql's) */
  tm_sqlsource *sql;         /* refresh_sql over the source, or NULL */
  bool new_engine;           /* engine is not published yet: its first commit publishes it */
  bool rebuild;              /* the stored acceleration is damaged: replace it (D5) */
  bool has_tc;               /* the plan's time column, for the mark after the refresh */
  tm_time_column tc;
  bool warn_fallback;        /* the plan's B6 verdict */
  tm_engine *engine;         /* a reference for this run, or NULL (explain without rows) */
  tm_kv state;               /* the state map to commit */
  tm_kv stored_state;        /* the state map as committed before (file mode) */
  int64_t rows_offered;      /* rows written into (or deleted by) the transaction */
  tm_source_table table;
  tm_schema prov_schema;     /* refresh_mode changes: the source's columns + provenance (E4) */
  bool files_expired;        /* a changes read met a file that is gone: plan a reload (E5) */
} run;

static void run_init(run *r, tm_accel *a, const tm_refresh_request *req, tm_refresh_result *res,
                     tm_error *err) {
  memset(r, 0, sizeof *r);
  r->a = a;
  r->req = req;
  r->res = res;
  r->err = err;
  tm_kv_init(&r->state);
  tm_kv_init(&r->stored_state);
  tm_schema_init(&r->prov_schema);
}

static void run_dispose(run *r) {
  tm_sqlsource_free(r->sql);
  tm_engine_release(r->engine);
  tm_source_table_dispose(&r->table);
  tm_kv_dispose(&r->state);
  tm_kv_dispose(&r->stored_state);
  tm_schema_dispose(&r->prov_schema);
}

/*
 * refresh_mode changes (SPEC E4): the acceleration stores the source's
 * columns and each row's provenance, which the dataset's SQL view leaves out.
 */
static int provenance_schema(run *r) {
  static const char *const names[] = {TM_PROV_SEQ, TM_PROV_FILE, TM_PROV_POS};
  tm_schema_dispose(&r->prov_schema);
  tm_schema_init(&r->prov_schema);
  TM_TRY(tm_schema_copy(&r->prov_schema, r->schema, r->err));
  for (size_t i = 0; i < TM_PROV_COLUMNS; i++) {
    TM_TRY(tm_schema_add(&r->prov_schema, names[i], tm_type_of(TM_TYPE_INT64), false, -1, r->err));
  }
  r->schema = &r->prov_schema;
  return TM_OK;
}

/*
 * Column names that start with _tm_ (any case) are tidemark's own: the
 * provenance of refresh_mode changes, and the columns the engines' keyed
 * merges stage rows with (_tm_arrival, ...). A source column of such a
 * name would be confused with them: it is refused, named.
 */
static int check_reserved(run *r) {
  for (size_t i = 0; i < r->schema->n_cols; i++) {
    const char *n = r->schema->cols[i].name;
    if (strncasecmp(n, "_tm_", 4) == 0)
      return tm_error_set(r->err, TM_EINVALID, "dataset %s: column '%s': names that start with "
                          "_tm_ are reserved for tidemark's own columns (rename it in a "
                          "refresh_sql: SELECT %s AS other_name, ...)", r->a->def->name, n, n);
  }
  return TM_OK;
}

/* Describes the source and, with a refresh_sql, opens the statement over it. */
static int describe_source(run *r) {
  tm_accel *a = r->a;
  TM_TRY(tm_source_describe(a->source, r->err));
  r->schema = tm_source_schema(a->source);
  /* A one-off refresh_sql, else the dataset's (the config's, or one set through the API). */
  char *set = r->req->sql ? NULL : tm_accel_refresh_sql(a);
  const char *sql = r->req->sql ? r->req->sql : set;
  int rc = TM_OK;
  if (sql) {
    rc = tm_sqlsource_new(&r->sql, a->db, a->source, a->def->name, sql, r->err);
    if (rc == TM_OK) r->schema = tm_sqlsource_schema(r->sql);
  }
  tm_free(set);
  if (rc == TM_OK) rc = check_reserved(r);
  if (rc == TM_OK && a->def->acceleration.refresh_mode == TM_REFRESH_CHANGES) rc = provenance_schema(r);
  return rc;
}

/* The source exists but holds no data yet: whether this refresh then reads nothing (plan.h). */
static bool empty_source_reads_nothing(run *r) {
  tm_engine *e = tm_accel_engine(r->a);
  bool nothing = tm_refresh_plan_empty_source_reads_nothing(r->a->def, r->req->full, e != NULL);
  tm_engine_release(e);
  return nothing;
}

/*
 * Known damage (D5) and a copy to restore (req->restore): removes the
 * damaged files, installs the copy and publishes it as the acceleration (it
 * holds committed rows and their state) once all of it reads back. Returns
 * a reference to it, or NULL when there is no intact copy (its files are
 * removed again, and the refresh loads the source into empty ones).
 */
static tm_engine *restore_copy(run *r) {
  tm_accel *a = r->a;
  const tm_dataset_def *d = a->def;
  pthread_mutex_lock(&a->state_lock);
  bool damaged = a->damaged && !a->engine;
  pthread_mutex_unlock(&a->state_lock);
  if (!damaged || !r->req->restore || r->explain || d->acceleration.mode != TM_ENGINE_FILE)
    return NULL;
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(d, a->db, &eo, &oc);
  tm_engine_kind kind = d->acceleration.engine;
  tm_engine *e = NULL;
  tm_error e2;
  tm_error_init(&e2);
  int rc = tm_engine_drop(kind, &eo, &e2);
  if (rc == TM_OK) rc = r->req->restore(r->req->restore_arg, &e2);
  if (rc == TM_OK) rc = tm_engine_open(&e, kind, NULL, &eo, &e2);
  /* A snapshot copies files as they were: it is read in full before it serves. */
  if (rc == TM_OK) rc = tm_engine_verify(e, &e2);
  if (rc != TM_OK) {
    tm_engine_release(e);
    e = NULL;
  }
  if (rc == TM_OK) {
    tm_log(TM_LOG_INFO, d->name, "the damaged acceleration was replaced by its snapshot; the "
           "refresh goes on from there");
    pthread_mutex_lock(&a->state_lock);
    a->engine = tm_engine_retain(e);
    a->ready = true;
    a->damaged = false;
    pthread_mutex_unlock(&a->state_lock);
  } else {
    tm_log(TM_LOG_WARN, d->name, "no snapshot replaces the damaged acceleration (%s): loading "
           "the source again", e2.message);
    if (tm_engine_drop(kind, &eo, &e2) != TM_OK)
      tm_log(TM_LOG_WARN, d->name, "cannot remove the copy: %s", e2.message);
  }
  tm_kv_dispose(&oc);
  return e;
}

/*
 * The engine for the rows' schema. The published engine when its schema is
 * the one read; otherwise a new engine for it: in file mode one that
 * replaces the stored rows at its first commit (B9: the old rows and their
 * saved snapshot serve until then), in memory mode an empty one. A new
 * engine is published when the refresh commits (publish_engine). An
 * explaining run opens no engine: it plans as for an empty one.
 */
static int ensure_engine(run *r, bool *recreated) {
  tm_accel *a = r->a;
  const tm_dataset_def *d = a->def;
  *recreated = false;
  tm_engine *e = tm_accel_engine(a);
  if (!e) e = restore_copy(r);
  if (e && !r->rebuild && tm_engine_schema_matches(e, r->schema)) {
    r->engine = e;
    return TM_OK;
  }
  if (r->explain) {
    *recreated = e != NULL;
    tm_engine_release(e);
    return TM_OK;
  }
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(d, a->db, &eo, &oc);
  tm_engine_kind kind = d->acceleration.engine;
  tm_engine *created = NULL;
  if (e && r->rebuild) {
    eo.replace = true; /* D5: a full load replaces the damaged rows at its commit */
    *recreated = true;
  } else if (e) {
    tm_log(TM_LOG_INFO, d->name,
           "the source's schema changed: the acceleration is rebuilt for it (the stored rows "
           "serve until the rebuild commits; the saved snapshot is discarded, SPEC B9)");
    *recreated = true;
  }
  pthread_mutex_lock(&a->state_lock);
  bool damaged = a->damaged && !e;
  pthread_mutex_unlock(&a->state_lock);
  /* Known damage (D5): the files go first, whatever they still hold. */
  int rc = damaged ? tm_engine_drop(kind, &eo, r->err) : TM_OK;
  if (rc == TM_OK) rc = tm_engine_open(&created, kind, r->schema, &eo, r->err);
  if (damaged) *recreated = true;
  if (rc == TM_ECORRUPT && d->acceleration.mode == TM_ENGINE_FILE && !e) {
    tm_log(TM_LOG_WARN, d->name, "the stored acceleration is damaged, rebuilding it: %s",
           r->err ? r->err->message : "");
    rc = tm_engine_drop(kind, &eo, r->err);
    if (rc == TM_OK) rc = tm_engine_open(&created, kind, r->schema, &eo, r->err);
    *recreated = true;
  }
  tm_kv_dispose(&oc);
  tm_engine_release(e);
  if (rc < 0) return rc;
  r->engine = created;
  r->new_engine = true;
  return TM_OK;
}

/* Makes the run's new engine the accel's (after its first commit). */
static void publish_engine(run *r) {
  if (!r->new_engine) return;
  tm_accel *a = r->a;
  pthread_mutex_lock(&a->state_lock);
  tm_engine *old = a->engine;
  a->engine = tm_engine_retain(r->engine);
  pthread_mutex_unlock(&a->state_lock);
  tm_engine_release(old);
  r->new_engine = false;
}

/* The saved snapshot (B2): the engine's state map in file mode, memory otherwise. */
static int load_saved(run *r, bool recreated, tm_saved_snapshot *saved, char **uuid_owned) {
  tm_accel *a = r->a;
  memset(saved, 0, sizeof *saved);
  *uuid_owned = NULL;
  if (recreated) return TM_OK; /* B9 */
  if (a->def->acceleration.mode == TM_ENGINE_FILE) {
    if (!r->engine) return TM_OK;
    TM_TRY(tm_engine_read_state(r->engine, &r->state, r->err));
    tm_kv_dispose(&r->stored_state);
    tm_kv_init(&r->stored_state);
    TM_TRY(tm_kv_copy(&r->stored_state, &r->state, r->err));
    const char *id = tm_kv_get(&r->state, TM_STATE_SNAPSHOT_ID);
    if (id && tm_parse_int64(id, strlen(id), &saved->id) == TM_OK) saved->present = true;
    const char *u = tm_kv_get(&r->state, TM_STATE_TABLE_UUID);
    if (u && !(*uuid_owned = tm_strdup(u))) return tm_error_nomem(r->err);
  } else {
    pthread_mutex_lock(&a->state_lock);
    saved->present = a->mem_has_snapshot;
    saved->id = a->mem_snapshot;
    *uuid_owned = a->mem_uuid ? tm_strdup(a->mem_uuid) : NULL;
    pthread_mutex_unlock(&a->state_lock);
  }
  saved->uuid = *uuid_owned;
  return TM_OK;
}

/* The high-water mark of tc as an instant (A2); false when the acceleration is empty. */
static int high_water_mark(run *r, const tm_time_column *tc, tm_instant *hwm, bool *found) {
  *found = false;
  if (!r->engine) return TM_OK;
  if (tc->type.id != TM_TYPE_UTF8) {
    tm_engine_bounds b;
    memset(&b, 0, sizeof b);
    TM_TRY(tm_engine_column_bounds(r->engine, tc->name, &b, r->err));
    if (b.found) *found = tm_value_instant(&tc->type, tc->format, &b.max, hwm);
    tm_engine_bounds_dispose(&b);
    return TM_OK;
  }
  /* ISO8601 text: the lexicographic maximum is not the latest instant when
   * zones differ, so scan the column and compare instants. */
  tm_engine_scan *sc = NULL;
  int idx = tm_schema_find(tm_engine_schema(r->engine), tc->name);
  if (idx < 0) return tm_error_set(r->err, TM_ENOTFOUND, "no time column '%s'", tc->name);
  size_t cols[1] = {(size_t)idx};
  int rc = tm_engine_scan_open(r->engine, cols, 1, NULL, &sc, r->err);
  tm_batch b;
  tm_batch_init(&b);
  while (rc == TM_OK && (rc = tm_engine_scan_next(sc, &b, r->err)) == TM_OK) {
    tm_instant t;
    if (tm_time_batch_max(tc, &b, &t) && (!*found || tm_instant_cmp(t, *hwm) > 0)) {
      *hwm = t;
      *found = true;
    }
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_engine_scan_free(sc);
  return rc;
}

/*
 * The plan (plan.c) for this run: the inputs gathered from the engine, the
 * saved state and the source's snapshots; planned again with the
 * high-water mark when a read by time needs it.
 */
static int make_plan(run *r, tm_refresh_plan *p) {
  tm_accel *a = r->a;
  bool recreated = false;
  TM_TRY(ensure_engine(r, &recreated));
  tm_plan_input in;
  memset(&in, 0, sizeof in);
  in.def = a->def;
  in.conflict_rule = tm_engine_kind_traits(a->def->acceleration.engine)->conflict_rule;
  in.has_engine = r->engine && !r->new_engine;
  in.full = r->req->full;
  in.one_off_sql = r->req->sql != NULL;
  in.now_ms = tm_now_ms();
  in.through_sql = r->sql != NULL;
  in.schema = r->schema;
  in.files_expired = r->files_expired;
  pthread_mutex_lock(&a->state_lock);
  in.last_fallback = a->last_fallback;
  pthread_mutex_unlock(&a->state_lock);
  tm_snapshot_ref *refs = NULL;
  char *uuid_owned = NULL;
  int rc = TM_OK;
  if (a->source->follows_snapshots) {
    rc = tm_source_table_info(a->source, &r->table, r->err);
    if (rc == TM_OK && !(refs = tm_calloc(r->table.n_snapshots ? r->table.n_snapshots : 1, sizeof *refs)))
      rc = tm_error_nomem(r->err);
    for (size_t i = 0; rc == TM_OK && i < r->table.n_snapshots; i++) {
      const tm_source_snapshot *s = &r->table.snapshots[i];
      refs[i] = (tm_snapshot_ref){s->id, s->has_parent, s->parent_id, s->operation, s->added_data_files};
    }
    in.table = (tm_table_info){true, r->table.has_current, r->table.current_id, r->table.uuid,
                               refs, r->table.n_snapshots};
  }
  if (rc == TM_OK) rc = load_saved(r, recreated, &in.saved, &uuid_owned);
  if (rc == TM_OK) rc = tm_refresh_plan_make(&in, p, r->err);
  if (rc == TM_OK && p->needs_high_water_mark) {
    bool found = false;
    rc = high_water_mark(r, &p->tc, &in.hwm, &found);
    in.hwm_state = found ? TM_HWM_KNOWN : TM_HWM_EMPTY;
    tm_refresh_plan_dispose(p);
    if (rc == TM_OK) rc = tm_refresh_plan_make(&in, p, r->err);
  }
  tm_free(refs);
  tm_free(uuid_owned);
  if (rc < 0) return rc;
  r->has_tc = p->has_time_column;
  r->tc = p->tc;
  r->warn_fallback = p->warn_fallback;
  return TM_OK;
}

/* Feeds the stored rows of the window (the plan's predicate) into the de-duplicator. */
static int load_window(run *r, const tm_predicate *window, tm_dedup *dd) {
  tm_engine_scan *sc = NULL;
  int rc = tm_engine_scan_open(r->engine, NULL, 0, window, &sc, r->err);
  tm_batch b;
  tm_batch_init(&b);
  while (rc == TM_OK && (rc = tm_engine_scan_next(sc, &b, r->err)) == TM_OK) {
    rc = tm_dedup_add_stored(dd, &b, r->err);
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_engine_scan_free(sc);
  return rc;
}

/*
 * The source's scan, decoding ahead on a second thread while this one hands
 * rows to the engine (readahead.c), or refresh_sql over it (whose source
 * scan reads ahead the same way, sqlsource.c).
 */
static int open_read(run *r, const tm_scan_request *sreq, tm_scan **scan_out) {
  if (r->sql) return tm_sqlsource_scan(r->sql, sreq, scan_out, r->err);
  TM_TRY(tm_source_scan(r->a->source, sreq, scan_out, r->err));
  int rc = tm_scan_readahead(scan_out, r->err);
  if (rc < 0) {
    tm_scan_free(*scan_out);
    *scan_out = NULL;
  }
  return rc;
}

static void report_progress(run *r, const tm_scan *scan) {
  if (!r->req->progress) return;
  const tm_scan_stats *st = tm_scan_get_stats(scan);
  r->req->progress(r->a->def->name, st->files_read, st->rows_read, r->req->payload);
}

/* Filters one batch by the plan's bound (A2-A5): *cur becomes kept when rows drop. */
static int filter_by_bound(run *r, const tm_time_bound *bound, tm_batch **cur, tm_batch *kept) {
  tm_batch *b = *cur;
  uint8_t *keep = tm_calloc((size_t)(b->n_rows + 7) / 8 + 1, 1);
  if (!keep) return tm_error_nomem(r->err);
  int64_t n_kept = 0, n_null = 0;
  int rc = tm_time_bound_filter(&r->tc, bound, b, keep, &n_kept, &n_null, r->err);
  r->res->rows_null_time += n_null;
  if (rc == TM_OK && n_kept < b->n_rows) {
    rc = tm_batch_filter(b, keep, kept, r->err);
    *cur = kept;
  }
  tm_free(keep);
  return rc;
}

/*
 * A delete batch of a changes scan (source.h): [seq, file] deletes every row
 * of those files, [seq, file, pos] those positions. The engine finds them by
 * provenance without scanning the acceleration (E4, engine.h).
 */
static int delete_rows(run *r, tm_engine_txn *txn, const tm_batch *b) {
  int64_t n = 0;
  int rc = tm_engine_txn_delete_provenance(txn, b, &n, r->err);
  r->res->rows_deleted += n;
  r->rows_offered += n;
  return rc;
}

static bool is_delete_batch(const tm_refresh_plan *p, const tm_batch *b) {
  return p->provenance && b->schema.n_cols > 0 && strcmp(b->schema.cols[0].name, TM_PROV_SEQ) == 0;
}

static int write_rows(run *r, tm_engine_txn *txn, const tm_batch *b) {
  if (b->n_rows == 0) return TM_OK;
  r->rows_offered += b->n_rows;
  return tm_engine_txn_write(txn, b, r->err);
}

/* Reads what the plan says into the transaction; dd de-duplicates (NULL: none). */
static int copy_rows(run *r, const tm_refresh_plan *p, tm_dedup *dd, tm_engine_txn *txn) {
  tm_scan_request sreq;
  tm_refresh_plan_scan_request(p, &sreq);
  tm_scan *scan = NULL;
  int rc = open_read(r, &sreq, &scan);
  tm_batch b, kept, unique;
  tm_batch_init(&b);
  tm_batch_init(&kept);
  tm_batch_init(&unique);
  while (rc == TM_OK && (rc = tm_scan_next(scan, &b, r->err)) == TM_OK) {
    if (r->req->cancel && *r->req->cancel) {
      tm_batch_release(&b);
      rc = tm_error_set(r->err, TM_ECANCELLED, "refresh cancelled (shutting down); rolled back");
      break;
    }
    if (is_delete_batch(p, &b)) {
      rc = delete_rows(r, txn, &b);
      tm_batch_release(&b);
      continue;
    }
    r->res->rows_read += b.n_rows;
    tm_batch *cur = &b;
    if (p->bound.active) rc = filter_by_bound(r, &p->bound, &cur, &kept);
    if (rc == TM_OK && dd) {
      rc = tm_dedup_filter(dd, cur, &unique, r->err);
      cur = &unique;
    }
    if (rc == TM_OK) rc = write_rows(r, txn, cur);
    tm_batch_release(&b);
    tm_batch_release(&kept);
    tm_batch_release(&unique);
    report_progress(r, scan);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  /* Rows parked by a spilled de-duplication come back now. */
  while (rc == TM_OK && dd && (rc = tm_dedup_next(dd, &unique, r->err)) == TM_OK) {
    rc = write_rows(r, txn, &unique);
    tm_batch_release(&unique);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (scan) {
    const tm_scan_stats *st = tm_scan_get_stats(scan);
    r->res->files_read += st->files_read;
    r->res->files_skipped += st->files_skipped;
    r->res->row_groups_read += st->row_groups_read;
    r->res->row_groups_skipped += st->row_groups_skipped;
  }
  tm_scan_free(scan);
  return rc;
}

/* Reads the plan's rows, through A3's de-duplication when it asks for it. */
static int read_rows(run *r, const tm_refresh_plan *p, tm_engine_txn *txn) {
  if (!p->reads) return TM_OK;
  tm_dedup *dd = NULL;
  int rc = TM_OK;
  if (p->dedup) {
    rc = tm_dedup_new(&dd, r->schema, r->a->dedup_budget, r->a->temp_dir, r->err);
    if (rc == TM_OK) rc = load_window(r, &p->predicate, dd);
  }
  if (rc == TM_OK) rc = copy_rows(r, p, dd, txn);
  if (dd) {
    const tm_dedup_stats *ds = tm_dedup_get_stats(dd);
    r->res->rows_deduplicated = ds->removed_rows;
    r->res->dedup_window_rows = ds->stored_rows;
    r->res->dedup_peak_bytes = ds->peak_bytes;
    r->res->dedup_spilled = ds->spilled;
  }
  tm_dedup_free(dd);
  return rc;
}

/* Whether a and b hold the same pairs, leaving out the refresh time (which always differs). */
static bool same_state(const tm_kv *a, const tm_kv *b) {
  size_t n_a = 0, n_b = 0;
  for (size_t i = 0; i < b->len; i++) n_b += strcmp(b->items[i].key, TM_STATE_REFRESHED_AT) != 0;
  for (size_t i = 0; i < a->len; i++) {
    if (strcmp(a->items[i].key, TM_STATE_REFRESHED_AT) == 0) continue;
    n_a++;
    const char *v = tm_kv_get(b, a->items[i].key);
    if (!v || strcmp(v, a->items[i].value) != 0) return false;
  }
  return n_a == n_b;
}

/* The state map committed with the rows (B2, B6, B8, B9, B10). */
static int plan_state(run *r, const tm_refresh_plan *p) {
  if (p->save_snapshot) {
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)p->snapshot_to_save);
    TM_TRY(tm_kv_set(&r->state, TM_STATE_SNAPSHOT_ID, id, r->err));
    if (p->save_uuid) TM_TRY(tm_kv_set(&r->state, TM_STATE_TABLE_UUID, p->save_uuid, r->err));
  }
  tm_buf fp = TM_BUF_INIT(1 << 20);
  int rc = tm_schema_fingerprint(r->schema, &fp, r->err);
  if (rc == TM_OK) rc = tm_kv_set(&r->state, TM_STATE_SCHEMA, tm_buf_cstr(&fp), r->err);
  tm_buf_dispose(&fp);
  /* The last fallback reason (B6): kept until another fallback replaces it. */
  if (rc == TM_OK && p->fallback != TM_FALLBACK_NONE)
    rc = tm_kv_set(&r->state, TM_STATE_FALLBACK, tm_fallback_name(p->fallback), r->err);
  /* When this refresh started: refresh_on_startup: auto schedules from it after a restart. */
  char at[32];
  snprintf(at, sizeof at, "%lld", (long long)r->res->started_ms);
  if (rc == TM_OK) rc = tm_kv_set(&r->state, TM_STATE_REFRESHED_AT, at, r->err);
  return rc;
}

/* Commits the transaction with the state map, or nothing when the plan allows and nothing changed. */
static int commit(run *r, const tm_refresh_plan *p, tm_engine_txn **txn) {
  tm_accel *a = r->a;
  TM_TRY(plan_state(r, p));
  tm_engine_commit_info ci;
  memset(&ci, 0, sizeof ci);
  if (p->skip_unchanged_commit && r->rows_offered == 0 && same_state(&r->state, &r->stored_state)) {
    tm_engine_txn_abort(*txn);
    *txn = NULL;
    TM_TRY(tm_engine_row_count(r->engine, &ci.rows_after, r->err));
  } else {
    int rc = tm_engine_txn_commit(*txn, &r->state, &ci, r->err);
    *txn = NULL;
    TM_TRY(rc);
    r->res->committed = true;
    publish_engine(r);
  }
  r->res->rows_written = ci.rows_written;
  r->res->rows_after = ci.rows_after;
  for (int k = 0; k < TM_SUPERSEDED__COUNT; k++) {
    r->res->rows_superseded += ci.rows_superseded[k];
    if (a->has_metrics && ci.rows_superseded[k])
      tm_metric_add(a->m.rows_superseded,
                    (const char *[]){a->def->name, tm_superseded_reason_name((tm_superseded_reason)k)},
                    (double)ci.rows_superseded[k]);
  }
  return TM_OK;
}

/* After the commit: memory mode keeps the saved snapshot (B8); the result names it. */
static void remember_saved(run *r, const tm_refresh_plan *p) {
  tm_accel *a = r->a;
  if (p->save_snapshot) {
    pthread_mutex_lock(&a->state_lock);
    a->mem_has_snapshot = true;
    a->mem_snapshot = p->snapshot_to_save;
    tm_free(a->mem_uuid);
    a->mem_uuid = p->save_uuid ? tm_strdup(p->save_uuid) : NULL;
    pthread_mutex_unlock(&a->state_lock);
    r->res->has_saved_snapshot = true;
    r->res->saved_snapshot = p->snapshot_to_save;
    return;
  }
  tm_saved_snapshot s;
  char *u = NULL;
  if (load_saved(r, false, &s, &u) == TM_OK && s.present) {
    r->res->has_saved_snapshot = true;
    r->res->saved_snapshot = s.id;
  }
  tm_free(u);
}

/* What the result reports of the plan: its kind, fallback and snapshot operations. */
static void report_plan(run *r, const tm_refresh_plan *p) {
  tm_refresh_result *res = r->res;
  res->how = p->kind;
  res->fallback = p->fallback;
  res->full = p->kind == TM_READ_FULL;
  res->n_snapshots = (int)p->n_steps;
  res->rows_deleted = 0;
  for (size_t i = 0; i < p->n_steps; i++) {
    const char *op = p->steps[i].operation ? p->steps[i].operation : "";
    if (!strcmp(op, "append")) res->n_append++;
    else if (!strcmp(op, "overwrite")) res->n_overwrite++;
    else if (!strcmp(op, "replace")) res->n_replace++;
    else if (!strcmp(op, "delete")) res->n_delete++;
    else res->n_other++;
  }
  TM_LOG_DEBUG_(r->a->def->name, "refresh plan: %s (%s)", tm_read_kind_name(p->kind), p->why);
}

/* The refresh proper: plan, then carry the plan out; a->refresh_lock is held. */
static int do_refresh(run *r) {
  int rc = describe_source(r);
  if (rc == TM_ENOTFOUND && empty_source_reads_nothing(r)) {
    r->res->how = TM_READ_BY_TIME;
    return TM_OK;
  }
  TM_TRY(rc);
  tm_refresh_plan p;
  TM_TRY(make_plan(r, &p));
  report_plan(r, &p);
  tm_engine_txn *txn = NULL;
  if (p.writes) rc = tm_engine_begin(r->engine, p.txn, &txn, r->err);
  if (rc == TM_OK) rc = read_rows(r, &p, txn);
  if (rc == TM_ENOTFOUND && p.kind == TM_READ_CHANGES) {
    /* E5: a file the changes need is gone (expired): this refresh reloads in full. */
    tm_log(TM_LOG_INFO, r->a->def->name, "the changes cannot be applied: %s",
           r->err ? r->err->message : "a file is gone");
    tm_engine_txn_abort(txn);
    txn = NULL;
    tm_refresh_plan_dispose(&p);
    tm_engine_release(r->engine);
    r->engine = NULL;
    tm_source_table_dispose(&r->table);
    memset(&r->table, 0, sizeof r->table);
    tm_kv_dispose(&r->state);
    tm_kv_init(&r->state);
    int64_t started = r->res->started_ms;
    memset(r->res, 0, sizeof *r->res);
    r->res->started_ms = started;
    r->rows_offered = 0;
    r->files_expired = true;
    if (r->err) tm_error_init(r->err);
    TM_TRY(make_plan(r, &p));
    report_plan(r, &p);
    rc = p.writes ? tm_engine_begin(r->engine, p.txn, &txn, r->err) : TM_OK;
    if (rc == TM_OK) rc = read_rows(r, &p, txn);
  }
  if (rc == TM_OK && txn) rc = commit(r, &p, &txn);
  tm_engine_txn_abort(txn);
  if (rc == TM_OK) remember_saved(r, &p);
  tm_refresh_plan_dispose(&p);
  return rc;
}

/* Takes the refresh lock of an accelerated dataset (TM_EINVALID, TM_ECONFLICT). */
static int lock_refresh(tm_accel *a, tm_error *err) {
  const tm_dataset_def *d = a->def;
  if (!(d->has_acceleration && d->acceleration.enabled))
    return tm_error_set(err, TM_EINVALID, "dataset %s has no acceleration to refresh", d->name);
  if (pthread_mutex_trylock(&a->refresh_lock) != 0)
    return tm_error_set(err, TM_ECONFLICT, "dataset %s: a refresh is already running", d->name);
  return TM_OK;
}

static void clear_damage(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  a->damaged = false;
  pthread_mutex_unlock(&a->state_lock);
}

/*
 * The damaged engine leaves the acceleration (D5): queries and the next
 * refresh no longer get it, and the caller's own references go
 * (req->unpublished), so that it closes before its files are removed.
 */
static void take_out_damaged(tm_accel *a, const tm_refresh_request *req) {
  pthread_mutex_lock(&a->state_lock);
  tm_engine *old = a->engine;
  a->engine = NULL;
  a->ready = false;
  a->damaged = true;
  pthread_mutex_unlock(&a->state_lock);
  tm_engine_release(old);
  if (req->unpublished) req->unpublished(req->unpublished_arg);
}

/*
 * Verifies the acceleration when a query met damage (tm_accel_suspect), then
 * refreshes. When the stored acceleration turns out damaged (SPEC D5), loads
 * the source again into a replacement that its commit swaps in (what is still
 * readable serves until then), so that append never reports "+0 rows" over
 * rows it cannot read; if even that fails on the damage, the acceleration
 * leaves SQL and the next refresh drops its files and starts afresh. r is
 * initialised here; the caller disposes it.
 */
static int refresh_healing(run *r, tm_accel *a, const tm_refresh_request *req,
                           tm_refresh_result *out, tm_error *err) {
  const tm_dataset_def *d = a->def;
  run_init(r, a, req, out, err);
  int rc = TM_OK;
  pthread_mutex_lock(&a->state_lock);
  tm_engine *held = a->suspect && a->engine ? tm_engine_retain(a->engine) : NULL;
  a->suspect = false;
  pthread_mutex_unlock(&a->state_lock);
  bool checked = held != NULL;
  if (held) {
    rc = tm_engine_verify(held, err);
    tm_engine_release(held);
    if (rc == TM_OK)
      tm_log(TM_LOG_INFO, d->name, "checked the acceleration after a failed query: intact");
  }
  if (rc == TM_OK) rc = do_refresh(r);
  if (rc == TM_OK && !r->new_engine) clear_damage(a); /* a rebuild after open committed */
  if (rc != TM_ECORRUPT || d->acceleration.mode != TM_ENGINE_FILE) return rc;
  /* TM_ECORRUPT also names malformed source input: the acceleration is damaged only if
   * the check said so, or reading all of it now fails. */
  bool damaged = checked;
  if (!checked && !r->new_engine && r->engine) {
    tm_error verr;
    tm_error_init(&verr);
    damaged = tm_engine_verify(r->engine, &verr) == TM_ECORRUPT;
  }
  if (!damaged) return rc;
  run_dispose(r);
  memset(out, 0, sizeof *out);
  out->started_ms = tm_now_ms();
  if (req->restore) {
    /* A copy to restore: the damaged files leave SQL now, and the refresh installs it. */
    tm_log(TM_LOG_WARN, d->name, "the acceleration is damaged (%s): replacing it with its snapshot",
           err->message);
    take_out_damaged(a, req);
    tm_error_init(err);
    run_init(r, a, req, out, err);
    return do_refresh(r);
  }
  tm_log(TM_LOG_WARN, d->name, "the acceleration is damaged (%s): loading the source again to "
         "replace it", err->message);
  tm_error_init(err);
  run_init(r, a, req, out, err);
  r->rebuild = true;
  rc = do_refresh(r);
  if (rc == TM_OK) {
    clear_damage(a);
  } else if (rc == TM_ECORRUPT) {
    take_out_damaged(a, req);
    tm_error_prefix(err, "the acceleration is damaged and could not be replaced in place; "
                         "the next refresh drops its files and loads the source again");
  }
  return rc;
}

/*
 * Another process holds the refresh of this shared acceleration: this one
 * skips its turn. It still serves the acceleration: when it has none open
 * yet (the other process created it), it opens what is stored.
 */
static void skip_refresh(tm_accel *a, tm_refresh_result *out) {
  const tm_dataset_def *d = a->def;
  out->skipped = true;
  tm_log(TM_LOG_INFO, d->name, "refresh skipped: another tidemark process is refreshing this "
         "acceleration (it holds the refresh lock); this process keeps serving it");
  tm_engine *e = tm_accel_engine(a);
  if (e) {
    tm_engine_release(e);
    return;
  }
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(d, a->db, &eo, &oc);
  tm_error e2;
  tm_error_init(&e2);
  tm_engine *opened = NULL;
  if (tm_engine_open(&opened, d->acceleration.engine, NULL, &eo, &e2) == TM_OK) {
    pthread_mutex_lock(&a->state_lock);
    if (!a->engine) {
      a->engine = opened;
      opened = NULL;
      a->ready = true;
      tm_accel__set_status_locked(a, TM_ACCEL_READY);
    }
    pthread_mutex_unlock(&a->state_lock);
    tm_engine_release(opened);
  }
  tm_kv_dispose(&oc);
}

/* Takes the cross-process refresh lease (engines shared by several processes). */
static int take_lease(tm_accel *a, tm_engine_lease **lease, bool *got, tm_error *err) {
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(a->def, a->db, &eo, &oc);
  int rc = tm_engine_lease_take(a->def->acceleration.engine, &eo, lease, got, err);
  tm_kv_dispose(&oc);
  return rc;
}

int tm_accel_refresh(tm_accel *a, const tm_refresh_request *req, tm_refresh_result *out,
                     tm_error *err) {
  const tm_dataset_def *d = a->def;
  tm_refresh_request defaults;
  if (!req) {
    tm_refresh_request_init(&defaults);
    req = &defaults;
  }
  memset(out, 0, sizeof *out);
  TM_TRY(lock_refresh(a, err));
  tm_engine_lease *lease = NULL;
  bool got = true;
  int lrc = take_lease(a, &lease, &got, err);
  if (lrc < 0 || !got) {
    if (lrc == TM_OK) skip_refresh(a, out);
    else tm_accel__report_failure(a, lrc, err, tm_accel_get_status(a),
                                  req->full ? "full" : tm_refresh_mode_name(d->acceleration.refresh_mode));
    pthread_mutex_unlock(&a->refresh_lock);
    return lrc;
  }
  const char *mode = req->full ? "full" : tm_refresh_mode_name(d->acceleration.refresh_mode);
  tm_accel_status before = tm_accel_get_status(a);
  tm_accel_set_status(a, TM_ACCEL_REFRESHING);
  out->started_ms = tm_now_ms();
  int64_t t0 = tm_monotonic_ns();
  tm_log(TM_LOG_INFO, d->name, "refresh started (%s)", mode);
  run r;
  int rc = refresh_healing(&r, a, req, out, err);
  out->duration_us = (tm_monotonic_ns() - t0) / 1000;
  out->duration_ms = out->duration_us / 1000;
  if (rc == TM_OK) {
    /* The high-water mark after the refresh, for status and metrics. */
    tm_instant hwm;
    bool found = false;
    if (r.has_tc && high_water_mark(&r, &r.tc, &hwm, &found) == TM_OK && found) {
      out->has_max_time = true;
      out->max_time_ms = tm_instant_to_ms(hwm);
    }
    tm_accel__report_success(a, out, mode, r.warn_fallback, r.engine);
  } else {
    tm_accel__report_failure(a, rc, err, before, mode);
  }
  run_dispose(&r);
  tm_engine_lease_release(lease);
  pthread_mutex_unlock(&a->refresh_lock);
  return rc;
}

int tm_accel_explain(tm_accel *a, const tm_refresh_request *req, tm_buf *out, tm_error *err) {
  tm_refresh_request defaults;
  if (!req) {
    tm_refresh_request_init(&defaults);
    req = &defaults;
  }
  TM_TRY(lock_refresh(a, err));
  tm_refresh_result res;
  memset(&res, 0, sizeof res);
  run r;
  run_init(&r, a, req, &res, err);
  r.explain = true;
  tm_refresh_plan p;
  memset(&p, 0, sizeof p);
  int rc = describe_source(&r);
  if (rc == TM_ENOTFOUND && empty_source_reads_nothing(&r)) {
    rc = tm_buf_printf(out, err, "read: nothing (the source holds no data yet)\n");
  } else if (rc == TM_OK) {
    rc = make_plan(&r, &p);
    if (rc == TM_OK) rc = tm_refresh_plan_describe(&p, out, err);
  }
  tm_refresh_plan_dispose(&p);
  run_dispose(&r);
  pthread_mutex_unlock(&a->refresh_lock);
  return rc;
}
