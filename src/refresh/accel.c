/*
 * accel.c - one dataset's acceleration: its engine, status and metrics, and
 * the executor of a refresh plan (refresh layer). See accel.h, plan.h and
 * docs/REFRESH.md.
 */
#include "refresh/accel.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sql.h"
#include "engine/sqlsource.h"
#include "io/io.h"
#include "refresh/dedup.h"
#include "refresh/timebound.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

typedef struct accel_metrics {
  tm_metric *fallbacks, *errors, *duration, *rows_written, *rows_superseded, *last_refresh,
      *max_timestamp, *size_bytes, *load_state;
} accel_metrics;

struct tm_accel {
  const tm_dataset_def *def;  /* borrowed; outlives the accel */
  tm_db *db;                  /* a reference */
  char *base_dir;             /* owned or NULL */
  char *temp_dir;             /* owned or NULL */
  size_t dedup_budget;
  tm_source *source;          /* owned */
  accel_metrics m;
  bool has_metrics;
  pthread_mutex_t refresh_lock; /* one refresh or retention at a time */
  pthread_mutex_t state_lock;   /* guards the fields below */
  tm_engine *engine;            /* owned reference, or NULL before the first load */
  tm_accel_status status;
  bool ready;
  bool has_result;
  tm_refresh_result last;
  bool mem_has_snapshot;        /* memory mode: the saved snapshot (B8) */
  int64_t mem_snapshot;
  char *mem_uuid;               /* owned */
  tm_fallback last_fallback;    /* for B6: warn when it changes */
  char last_error[TM_ERROR_MESSAGE_MAX];
  int64_t last_error_ms;
};

/* ---- small helpers --------------------------------------------------------- */

void tm_accel_options_init(tm_accel_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_ACCEL_OPTIONS_VERSION;
}

void tm_refresh_request_init(tm_refresh_request *r) {
  memset(r, 0, sizeof *r);
  r->version = TM_REFRESH_REQUEST_VERSION;
}

const char *tm_accel_status_name(tm_accel_status s) {
  switch (s) {
    case TM_ACCEL_INITIALIZING: return "Initializing";
    case TM_ACCEL_READY: return "Ready";
    case TM_ACCEL_REFRESHING: return "Refreshing";
    case TM_ACCEL_ERROR: return "Error";
    case TM_ACCEL_SHUTTING_DOWN: return "ShuttingDown";
  }
  return "?";
}

size_t tm_refresh_result_line(const tm_refresh_result *r, const char *dataset, char *buf,
                              size_t cap) {
  if (cap == 0) return 0;
  size_t n = tm_refresh_result_what(r, dataset, buf, cap);
  /* cli/noop.c prints a replayed line with the same " in %.2f s". */
  int k = snprintf(buf + n, cap - n, " in %.2f s", (double)r->duration_ms / 1000.0);
  if (k < 0) return n;
  return (size_t)k < cap - n ? n + (size_t)k : cap - 1;
}

size_t tm_refresh_result_what(const tm_refresh_result *r, const char *dataset, char *buf,
                              size_t cap) {
  char how[160];
  if (r->how == TM_READ_SNAPSHOTS) {
    char parts[128] = "";
    size_t n = 0;
    const struct { const char *name; int count; } ops[] = {
        {"append", r->n_append}, {"overwrite", r->n_overwrite}, {"replace", r->n_replace},
        {"delete", r->n_delete}, {"other", r->n_other}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      if (!ops[i].count) continue;
      int k = snprintf(parts + n, sizeof parts - n, "%s%s %d", n ? ", " : "", ops[i].name,
                       ops[i].count);
      if (k > 0) n += (size_t)k;
    }
    snprintf(how, sizeof how, "via snapshots (%d: %s)", r->n_snapshots, parts);
  } else if (r->how == TM_READ_NOTHING) {
    snprintf(how, sizeof how, "via snapshots (no new snapshot)");
  } else if (r->how == TM_READ_FULL) {
    snprintf(how, sizeof how, "via full refresh");
  } else if (r->fallback != TM_FALLBACK_NONE) {
    snprintf(how, sizeof how, "via time (fallback: %s)", tm_fallback_name(r->fallback));
  } else {
    snprintf(how, sizeof how, "via time");
  }
  int n = snprintf(buf, cap, "%s: %s%lld rows %s", dataset, r->full ? "" : "+",
                   (long long)r->rows_written, how);
  if (n < 0 || cap == 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

static void register_metrics(tm_accel *a, tm_metrics *r) {
  static const double ms_buckets[] = {1,    5,    10,    25,    50,    100,   250,
                                      500,  1000, 2500,  5000,  10000, 30000, 60000,
                                      300000};
  tm_error err;
  int rc = TM_OK;
#define REG(field, kind, name, help, labels, b, nb)                                     \
  if (rc == TM_OK) rc = tm_metrics_register(r, &a->m.field, kind, name, help, labels, b, nb, &err)
  REG(fallbacks, TM_METRIC_COUNTER, "dataset_acceleration_refresh_fallbacks",
      "Append refreshes of Iceberg datasets that read by time instead of following snapshots (SPEC B6)",
      "dataset,reason", NULL, 0);
  REG(errors, TM_METRIC_COUNTER, "dataset_acceleration_refresh_errors", "Failed refreshes",
      "dataset,mode", NULL, 0);
  REG(duration, TM_METRIC_HISTOGRAM, "dataset_acceleration_refresh_duration_ms",
      "Refresh duration in milliseconds", "dataset,mode", ms_buckets,
      sizeof ms_buckets / sizeof ms_buckets[0]);
  REG(rows_written, TM_METRIC_COUNTER, "dataset_acceleration_refresh_rows_written",
      "Rows written by refreshes", "dataset", NULL, 0);
  REG(rows_superseded, TM_METRIC_COUNTER, "dataset_acceleration_refresh_rows_superseded",
      "Rows that lost a primary-key conflict, by reason (SPEC A8)", "dataset,reason", NULL, 0);
  REG(last_refresh, TM_METRIC_GAUGE, "dataset_acceleration_last_refresh_unix_time_ms",
      "When the last refresh finished (Unix time, ms)", "dataset", NULL, 0);
  REG(max_timestamp, TM_METRIC_GAUGE, "dataset_acceleration_max_timestamp_after_refresh_ms",
      "The high-water mark after the last refresh (Unix time, ms)", "dataset", NULL, 0);
  REG(size_bytes, TM_METRIC_GAUGE, "dataset_acceleration_size_bytes",
      "Bytes the acceleration occupies", "dataset", NULL, 0);
  REG(load_state, TM_METRIC_GAUGE, "dataset_load_state",
      "0 initializing, 1 ready, 2 refreshing, 3 error, 4 shutting down", "dataset", NULL, 0);
#undef REG
  a->has_metrics = rc == TM_OK;
  if (rc != TM_OK) tm_log(TM_LOG_WARN, a->def->name, "metrics unavailable: %s", err.message);
}

static void set_status_locked(tm_accel *a, tm_accel_status s) {
  a->status = s;
  if (a->has_metrics) tm_metric_set(a->m.load_state, (const char *[]){a->def->name}, (double)s);
}

void tm_accel_set_status(tm_accel *a, tm_accel_status s) {
  pthread_mutex_lock(&a->state_lock);
  set_status_locked(a, s);
  pthread_mutex_unlock(&a->state_lock);
}

tm_accel_status tm_accel_get_status(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  tm_accel_status s = a->status;
  pthread_mutex_unlock(&a->state_lock);
  return s;
}

bool tm_accel_ready(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  bool r = a->ready;
  pthread_mutex_unlock(&a->state_lock);
  return r;
}

const tm_dataset_def *tm_accel_def(const tm_accel *a) { return a->def; }

tm_engine *tm_accel_engine(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  tm_engine *e = a->engine ? tm_engine_retain(a->engine) : NULL;
  pthread_mutex_unlock(&a->state_lock);
  return e;
}

void tm_accel_engine_options(const tm_dataset_def *d, tm_db *db, tm_engine_options *o,
                             tm_kv *on_conflict) {
  tm_engine_options_init(o);
  o->db = db;
  o->dataset = d->name;
  o->mode = d->acceleration.mode;
  o->path = d->data_path;
  o->primary_key = (const char *const *)d->acceleration.primary_key;
  o->n_primary_key = d->acceleration.n_primary_key;
  for (size_t i = 0; i < d->acceleration.n_on_conflict; i++) {
    tm_error err;
    if (tm_kv_set(on_conflict, d->acceleration.on_conflict[i].column,
                  d->acceleration.on_conflict[i].rule == TM_ON_CONFLICT_UPSERT ? "upsert" : "drop",
                  &err) != TM_OK)
      break;
  }
  o->on_conflict = on_conflict->len ? on_conflict : NULL;
  o->time_column = d->time_column;
  o->time_format = d->time_format;
}

int tm_accel_duck_dir(const tm_dataset_def *d, char **out, tm_error *err) {
  *out = NULL;
  const tm_acceleration_def *a = &d->acceleration;
  const tm_engine_traits *t = tm_engine_kind_traits(a->engine);
  if (!d->has_acceleration || !a->enabled || a->mode != TM_ENGINE_FILE || !t->shares_duck_dir)
    return TM_OK;
  *out = t->folder ? tm_strdup(d->data_path) : tm_path_dirname(d->data_path);
  return *out ? TM_OK : tm_error_nomem(err);
}

void tm_accel_source_options(const tm_dataset_def *d, const char *base_dir, tm_source_options *so) {
  memset(so, 0, sizeof *so);
  so->version = TM_SOURCE_OPTIONS_VERSION;
  so->from = d->from;
  so->name = d->name;
  so->params = &d->params;
  so->base_dir = base_dir;
  so->time_column = d->time_column;
  so->time_partition_column = d->time_partition_column;
  so->time_column_is_text = d->time_format == TM_TIME_FORMAT_ISO8601;
}

/* ---- lifecycle -------------------------------------------------------------- */

int tm_accel_new(tm_accel **out, const tm_dataset_def *def, const tm_accel_options *opts,
                 tm_error *err) {
  if (!opts || !opts->db) return tm_error_set(err, TM_EINVALID, "accel options without a DuckDB instance");
  tm_accel *a = tm_calloc(1, sizeof *a);
  if (!a) return tm_error_nomem(err);
  a->def = def;
  a->db = tm_db_retain(opts->db);
  pthread_mutex_init(&a->refresh_lock, NULL);
  pthread_mutex_init(&a->state_lock, NULL);
  int rc = TM_OK;
  if (opts && opts->base_dir && !(a->base_dir = tm_strdup(opts->base_dir))) rc = tm_error_nomem(err);
  if (opts && opts->temp_dir && !(a->temp_dir = tm_strdup(opts->temp_dir))) rc = tm_error_nomem(err);
  a->dedup_budget = opts ? opts->dedup_budget : 0;
  if (rc == TM_OK && opts && opts->metrics) register_metrics(a, opts->metrics);
  set_status_locked(a, TM_ACCEL_INITIALIZING);

  if (rc == TM_OK) {
    tm_source_options so;
    tm_accel_source_options(def, a->base_dir, &so);
    rc = tm_source_open(&a->source, &so, err);
  }
  const tm_acceleration_def *acc = &def->acceleration;
  bool accelerated = def->has_acceleration && acc->enabled;
  /* Reopen an existing file-mode acceleration: it serves at once (C1). */
  if (rc == TM_OK && accelerated && acc->mode == TM_ENGINE_FILE) {
    tm_engine_options eo;
    tm_kv oc;
    tm_kv_init(&oc);
    tm_accel_engine_options(a->def, a->db, &eo, &oc);
    tm_error e2;
    tm_error_init(&e2);
    int orc = tm_engine_open(&a->engine, acc->engine, NULL, &eo, &e2);
    tm_kv_dispose(&oc);
    if (orc == TM_OK) {
      a->ready = true;
      set_status_locked(a, TM_ACCEL_READY);
      /* The last fallback reason survives restarts, so B6's warning repeats
       * only when the reason changes, also across `tidemark refresh` runs. */
      tm_kv st;
      tm_kv_init(&st);
      if (tm_engine_read_state(a->engine, &st, &e2) == TM_OK) {
        const char *fb = tm_kv_get(&st, TM_STATE_FALLBACK);
        for (int f = TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT; fb && f <= TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY; f++)
          if (!strcmp(fb, tm_fallback_name((tm_fallback)f))) a->last_fallback = (tm_fallback)f;
      }
      tm_kv_dispose(&st);
      int64_t rows = 0;
      if (tm_engine_row_count(a->engine, &rows, &e2) != TM_OK) rows = -1;
      tm_log(TM_LOG_INFO, def->name, "opened existing acceleration (%s, %lld rows)",
             tm_engine_kind_name(acc->engine), (long long)rows);
    } else if (orc == TM_ECORRUPT) {
      tm_log(TM_LOG_WARN, def->name, "the acceleration is damaged; the next refresh rebuilds it: %s",
             e2.message);
      a->engine = NULL;
    } else if (orc == TM_ECONFLICT) {
      /* Another process owns the files (SPEC 1.2): nothing here may use them. */
      tm_error_copy(err, &e2);
      rc = orc;
      a->engine = NULL;
    } else if (orc != TM_ENOTFOUND) {
      tm_log(TM_LOG_WARN, def->name, "cannot open the acceleration: %s", e2.message);
      a->engine = NULL;
    }
  }
  if (rc < 0) {
    tm_accel_free(a);
    return rc;
  }
  if (accelerated)
    tm_log(TM_LOG_INFO, def->name, "dataset registered: source %s (%s), engine %s, mode %s, refresh %s",
           def->from, tm_source_kind_name(def->source_kind), tm_engine_kind_name(acc->engine),
           tm_engine_mode_name(acc->mode), tm_refresh_mode_name(acc->refresh_mode));
  else
    tm_log(TM_LOG_INFO, def->name, "dataset registered: source %s, federated (no acceleration)",
           def->from);
  /* A9: late updates to a key will not be seen. */
  if (tm_refresh_plan_warns_late_updates(def, tm_engine_kind_traits(acc->engine)->conflict_rule))
    tm_log(TM_LOG_WARN, def->name,
           "primary_key does not include time_column and there is no refresh_append_overlap: "
           "late updates to a key will not be seen (SPEC A9)");
  *out = a;
  return TM_OK;
}

void tm_accel_free(tm_accel *a) {
  if (!a) return;
  tm_engine_release(a->engine);
  tm_db_release(a->db);
  tm_source_free(a->source);
  tm_free(a->base_dir);
  tm_free(a->temp_dir);
  tm_free(a->mem_uuid);
  pthread_mutex_destroy(&a->refresh_lock);
  pthread_mutex_destroy(&a->state_lock);
  tm_free(a);
}

void tm_accel_get_info(tm_accel *a, tm_accel_info *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&a->state_lock);
  out->status = a->status;
  out->ready = a->ready;
  out->has_result = a->has_result;
  out->last = a->last;
  out->has_saved_snapshot = a->last.has_saved_snapshot;
  out->saved_snapshot = a->last.saved_snapshot;
  snprintf(out->last_fallback, sizeof out->last_fallback, "%s", tm_fallback_name(a->last_fallback));
  snprintf(out->last_error, sizeof out->last_error, "%s", a->last_error);
  out->last_error_ms = a->last_error_ms;
  tm_engine *e = a->engine ? tm_engine_retain(a->engine) : NULL;
  bool mem = a->mem_has_snapshot;
  int64_t mem_id = a->mem_snapshot;
  pthread_mutex_unlock(&a->state_lock);
  /* Without a refresh yet, the saved snapshot comes from the acceleration's state. */
  if (!out->has_result && e) {
    tm_kv st;
    tm_kv_init(&st);
    tm_error err;
    if (tm_engine_read_state(e, &st, &err) == TM_OK) {
      const char *id = tm_kv_get(&st, TM_STATE_SNAPSHOT_ID);
      if (id && tm_parse_int64(id, strlen(id), &out->saved_snapshot) == TM_OK)
        out->has_saved_snapshot = true;
    }
    tm_kv_dispose(&st);
  } else if (!out->has_result && mem) {
    out->has_saved_snapshot = true;
    out->saved_snapshot = mem_id;
  }
  tm_engine_release(e);
}

/* ---- the refresh --------------------------------------------------------------- */

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
  bool has_tc;               /* the plan's time column, for the mark after the refresh */
  tm_time_column tc;
  bool warn_fallback;        /* the plan's B6 verdict */
  tm_engine *engine;         /* a reference for this run, or NULL (explain without rows) */
  tm_kv state;               /* the state map to commit */
  tm_kv stored_state;        /* the state map as committed before (file mode) */
  int64_t rows_offered;      /* rows written into the transaction */
  tm_source_table table;
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
}

static void run_dispose(run *r) {
  tm_sqlsource_free(r->sql);
  tm_engine_release(r->engine);
  tm_source_table_dispose(&r->table);
  tm_kv_dispose(&r->state);
  tm_kv_dispose(&r->stored_state);
}

/* Describes the source and, with a refresh_sql, opens the statement over it. */
static int describe_source(run *r) {
  tm_accel *a = r->a;
  TM_TRY(tm_source_describe(a->source, r->err));
  r->schema = tm_source_schema(a->source);
  const char *sql = r->req->sql ? r->req->sql : a->def->acceleration.refresh_sql;
  if (sql) {
    TM_TRY(tm_sqlsource_new(&r->sql, a->db, a->source, a->def->name, sql, r->err));
    r->schema = tm_sqlsource_schema(r->sql);
  }
  return TM_OK;
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
  if (e && tm_schema_equal(tm_engine_schema(e), r->schema)) {
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
  if (e) {
    tm_log(TM_LOG_INFO, d->name,
           "the source's schema changed: the acceleration is rebuilt for it (the stored rows "
           "serve until the rebuild commits; the saved snapshot is discarded, SPEC B9)");
    *recreated = true;
  }
  int rc = tm_engine_open(&created, kind, r->schema, &eo, r->err);
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
    if (b.found) *found = tm_time_value_instant(tc, &b.max, hwm);
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
  in.through_sql = r->sql != NULL;
  in.schema = r->schema;
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

static bool same_state(const tm_kv *a, const tm_kv *b) {
  if (a->len != b->len) return false;
  for (size_t i = 0; i < a->len; i++) {
    const char *v = tm_kv_get(b, a->items[i].key);
    if (!v || strcmp(v, a->items[i].value) != 0) return false;
  }
  return true;
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
  if (rc == TM_ENOTFOUND) {
    /* The source exists but holds no data yet. */
    tm_engine *e = tm_accel_engine(r->a);
    bool nothing = tm_refresh_plan_empty_source_reads_nothing(r->a->def, r->req->full, e != NULL);
    tm_engine_release(e);
    if (!nothing) return rc;
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
  if (rc == TM_OK && txn) rc = commit(r, &p, &txn);
  tm_engine_txn_abort(txn);
  if (rc == TM_OK) remember_saved(r, &p);
  tm_refresh_plan_dispose(&p);
  return rc;
}

/*
 * Logs a fallback (B6): a warning when the plan says its reason differs from
 * the last fallback's (refreshes that follow snapshots in between do not
 * reset it, so a recurring cause warns once), a count always.
 */
static void note_fallback(tm_accel *a, tm_fallback f, bool warn) {
  if (f == TM_FALLBACK_NONE) return;
  pthread_mutex_lock(&a->state_lock);
  a->last_fallback = f;
  pthread_mutex_unlock(&a->state_lock);
  if (warn)
    tm_log(TM_LOG_WARN, a->def->name,
           "append refresh reads by time instead of following snapshots: %s (SPEC B5)",
           tm_fallback_name(f));
  if (a->has_metrics)
    tm_metric_add(a->m.fallbacks, (const char *[]){a->def->name, tm_fallback_name(f)}, 1);
}

/* The outcome of a refresh, for the log, status and metrics. */
static void report_success(run *r, const char *mode) {
  tm_accel *a = r->a;
  const tm_dataset_def *d = a->def;
  tm_refresh_result *out = r->res;
  note_fallback(a, out->fallback, r->warn_fallback);
  /* The high-water mark after the refresh, for status and metrics. */
  tm_instant hwm;
  bool found = false;
  if (r->has_tc && high_water_mark(r, &r->tc, &hwm, &found) == TM_OK && found) {
    out->has_max_time = true;
    out->max_time_ms = tm_instant_to_ms(hwm);
  }
  char line[512];
  tm_refresh_result_line(out, d->name, line, sizeof line);
  tm_log(TM_LOG_INFO, d->name,
         "refresh finished: %s; read %lld rows, de-duplicated %lld, superseded %lld; files "
         "%lld read, %lld skipped; row groups %lld read, %lld skipped; %.3f ms",
         line + strlen(d->name) + 2, (long long)out->rows_read, (long long)out->rows_deduplicated,
         (long long)out->rows_superseded, (long long)out->files_read,
         (long long)out->files_skipped, (long long)out->row_groups_read,
         (long long)out->row_groups_skipped, (double)out->duration_us / 1000.0);
  if (out->dedup_window_rows)
    tm_log(TM_LOG_INFO, d->name, "de-duplication: %lld stored rows in the window, peak %.1f MB%s",
           (long long)out->dedup_window_rows, (double)out->dedup_peak_bytes / 1048576.0,
           out->dedup_spilled ? ", spilled to disk" : "");
  if (out->rows_null_time)
    tm_log(TM_LOG_WARN, d->name, "%lld rows had a NULL or unreadable time and were skipped (A4)",
           (long long)out->rows_null_time);
  pthread_mutex_lock(&a->state_lock);
  a->has_result = true;
  a->last = *out;
  a->ready = a->engine != NULL;
  a->last_error[0] = '\0';
  set_status_locked(a, a->ready ? TM_ACCEL_READY : TM_ACCEL_INITIALIZING);
  pthread_mutex_unlock(&a->state_lock);
  if (a->has_metrics) {
    const char *ds[] = {d->name};
    tm_metric_observe(a->m.duration, (const char *[]){d->name, mode}, (double)out->duration_ms);
    tm_metric_add(a->m.rows_written, ds, (double)out->rows_written);
    tm_metric_set(a->m.last_refresh, ds, (double)tm_now_ms());
    if (out->has_max_time) tm_metric_set(a->m.max_timestamp, ds, (double)out->max_time_ms);
    uint64_t size = 0;
    tm_error e3;
    if (r->engine && tm_engine_size_bytes(r->engine, &size, &e3) == TM_OK)
      tm_metric_set(a->m.size_bytes, ds, (double)size);
  }
}

static void report_failure(tm_accel *a, int rc, const tm_error *err, tm_accel_status before,
                           const char *mode) {
  const char *why = err ? err->message : tm_code_name(rc);
  tm_log(TM_LOG_ERROR, a->def->name, "refresh failed: %s", why);
  pthread_mutex_lock(&a->state_lock);
  snprintf(a->last_error, sizeof a->last_error, "%s", why);
  a->last_error_ms = tm_now_ms();
  set_status_locked(a, a->ready ? (before == TM_ACCEL_SHUTTING_DOWN ? before : TM_ACCEL_ERROR)
                                : TM_ACCEL_ERROR);
  pthread_mutex_unlock(&a->state_lock);
  if (a->has_metrics) tm_metric_add(a->m.errors, (const char *[]){a->def->name, mode}, 1);
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
  const char *mode = req->full ? "full" : tm_refresh_mode_name(d->acceleration.refresh_mode);
  tm_accel_status before = tm_accel_get_status(a);
  tm_accel_set_status(a, TM_ACCEL_REFRESHING);
  out->started_ms = tm_now_ms();
  int64_t t0 = tm_monotonic_ns();
  tm_log(TM_LOG_INFO, d->name, "refresh started (%s)", mode);
  run r;
  run_init(&r, a, req, out, err);
  int rc = do_refresh(&r);
  out->duration_us = (tm_monotonic_ns() - t0) / 1000;
  out->duration_ms = out->duration_us / 1000;
  if (rc == TM_OK) report_success(&r, mode);
  else report_failure(a, rc, err, before, mode);
  run_dispose(&r);
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
  if (rc == TM_ENOTFOUND) {
    tm_engine *e = tm_accel_engine(a);
    bool nothing = tm_refresh_plan_empty_source_reads_nothing(a->def, req->full, e != NULL);
    tm_engine_release(e);
    if (nothing) rc = tm_buf_printf(out, err, "read: nothing (the source holds no data yet)\n");
  } else if (rc == TM_OK) {
    rc = make_plan(&r, &p);
    if (rc == TM_OK) rc = tm_refresh_plan_describe(&p, out, err);
  }
  tm_refresh_plan_dispose(&p);
  run_dispose(&r);
  pthread_mutex_unlock(&a->refresh_lock);
  return rc;
}

/* ---- retention ---------------------------------------------------------------- */

int tm_accel_retention(tm_accel *a, int64_t now_ms, int64_t *deleted_out, tm_error *err) {
  const tm_dataset_def *d = a->def;
  const tm_acceleration_def *acc = &d->acceleration;
  if (deleted_out) *deleted_out = 0;
  tm_engine *e = tm_accel_engine(a);
  if (!e) return TM_OK; /* nothing loaded yet */
  if (pthread_mutex_trylock(&a->refresh_lock) != 0) {
    tm_engine_release(e);
    return tm_error_set(err, TM_ECONFLICT, "dataset %s: a refresh is running", d->name);
  }
  char *where = NULL;
  tm_engine_txn *txn = NULL;
  int64_t by_time = 0, by_sql = 0;
  int rc = tm_engine_begin(e, TM_TXN_APPEND, &txn, err);
  if (rc == TM_OK && acc->retention_period_ms > 0) {
    tm_instant cutoff = {tm_floor_div(now_ms, 1000), (int32_t)((now_ms - tm_floor_div(now_ms, 1000) * 1000) * 1000000)};
    cutoff = tm_instant_minus_ms(cutoff, acc->retention_period_ms);
    rc = tm_engine_txn_delete_before(txn, cutoff.sec, cutoff.nsec, &by_time, err);
  }
  if (rc == TM_OK && acc->retention_sql) {
    rc = tm_sql_retention_condition(acc->retention_sql, d->name, &where, err);
    if (rc == TM_OK) rc = tm_engine_txn_delete_where(txn, where, &by_sql, err);
  }
  if (rc == TM_OK) {
    rc = tm_engine_txn_commit(txn, NULL, NULL, err);
    txn = NULL;
  }
  tm_engine_txn_abort(txn);
  tm_free(where);
  pthread_mutex_unlock(&a->refresh_lock);
  tm_engine_release(e);
  if (rc == TM_OK) {
    if (by_time + by_sql > 0)
      tm_log(TM_LOG_INFO, d->name, "retention deleted %lld rows (%lld by retention_period, %lld by retention_sql)",
             (long long)(by_time + by_sql), (long long)by_time, (long long)by_sql);
    if (deleted_out) *deleted_out = by_time + by_sql;
  } else {
    tm_log(TM_LOG_ERROR, d->name, "retention failed: %s", err ? err->message : tm_code_name(rc));
  }
  return rc;
}
