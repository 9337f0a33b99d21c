/*
 * accel.c - one dataset's acceleration: its source and engine, status,
 * metrics, info and retention (refresh layer). A refresh is in run.c, what
 * it reports in report.c. See accel.h and docs/REFRESH.md.
 */
#include "refresh/accel.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sql.h"
#include "io/io.h"
#include "refresh/accel_int.h"
#include "refresh/timebound.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"


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

static void register_metrics(tm_accel *a, tm_metrics *r) {
  static const double ms_buckets[] = {1,    5,    10,    25,    50,    100,   250,
                                      500,  1000, 2500,  5000,  10000, 30000, 60000,
                                      300000};
  tm_error err;
  int rc = TM_OK;
#define REG(field, kind, name, help, labels, b, nb)                                     \
  if (rc == TM_OK) rc = tm_metrics_register(r, &a->m.field, kind, name, help, labels, b, nb, &err)
  REG(fallbacks, TM_METRIC_COUNTER, "dataset_acceleration_refresh_fallbacks",
      "Refreshes of Iceberg datasets that could not follow snapshots: append read by time (SPEC "
      "B6), changes reloaded in full (SPEC E5)",
      "dataset,reason", NULL, 0);
  REG(errors, TM_METRIC_COUNTER, "dataset_acceleration_refresh_errors", "Failed refreshes",
      "dataset,mode", NULL, 0);
  REG(duration, TM_METRIC_HISTOGRAM, "dataset_acceleration_refresh_duration_ms",
      "Refresh duration in milliseconds", "dataset,mode", ms_buckets,
      sizeof ms_buckets / sizeof ms_buckets[0]);
  REG(rows_written, TM_METRIC_COUNTER, "dataset_acceleration_refresh_rows_written",
      "Rows written by refreshes", "dataset", NULL, 0);
  REG(rows_deleted, TM_METRIC_COUNTER, "dataset_acceleration_refresh_rows_deleted",
      "Stored rows removed by refresh_mode: changes (SPEC E2)", "dataset", NULL, 0);
  REG(snapshot_ops, TM_METRIC_COUNTER, "dataset_acceleration_refresh_snapshots",
      "Iceberg snapshots applied by refreshes, by operation", "dataset,operation", NULL, 0);
  REG(rows_superseded, TM_METRIC_COUNTER, "dataset_acceleration_refresh_rows_superseded",
      "Rows that lost a primary-key conflict, by reason (SPEC A8)", "dataset,reason", NULL, 0);
  REG(last_refresh, TM_METRIC_GAUGE, "dataset_acceleration_last_refresh_unix_time_ms",
      "When the last refresh finished (Unix time, ms)", "dataset", NULL, 0);
  /* Spice labels it {dataset,mode} (crates/runtime-metrics/src/acceleration.rs and its docs). */
  REG(max_timestamp, TM_METRIC_GAUGE, "dataset_acceleration_max_timestamp_after_refresh_ms",
      "The high-water mark after the last refresh (Unix time, ms)", "dataset,mode", NULL, 0);
  REG(size_bytes, TM_METRIC_GAUGE, "dataset_acceleration_size_bytes",
      "Bytes the acceleration occupies", "dataset", NULL, 0);
  REG(load_state, TM_METRIC_GAUGE, "dataset_load_state",
      "Status of the dataset. 0=Initializing, 1=Ready, 2=Disabled, 3=Error, 4=Refreshing, "
      "5=ShuttingDown.", "dataset", NULL, 0);
#undef REG
  a->has_metrics = rc == TM_OK;
  if (rc != TM_OK) tm_log(TM_LOG_WARN, a->def->name, "metrics unavailable: %s", err.message);
}

/* dataset_load_state as Spice numbers its states (SPEC 1.4; 2, Disabled, is never ours). */
static double spice_load_state(tm_accel_status s) {
  switch (s) {
    case TM_ACCEL_INITIALIZING: return 0;
    case TM_ACCEL_READY: return 1;
    case TM_ACCEL_ERROR: return 3;
    case TM_ACCEL_REFRESHING: return 4;
    case TM_ACCEL_SHUTTING_DOWN: return 5;
  }
  return 0;
}

void tm_accel__set_status_locked(tm_accel *a, tm_accel_status s) {
  a->status = s;
  if (a->has_metrics)
    tm_metric_set(a->m.load_state, (const char *[]){a->def->name}, spice_load_state(s));
}

void tm_accel_set_status(tm_accel *a, tm_accel_status s) {
  pthread_mutex_lock(&a->state_lock);
  tm_accel__set_status_locked(a, s);
  pthread_mutex_unlock(&a->state_lock);
}

tm_accel_status tm_accel_get_status(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  tm_accel_status s = a->status;
  pthread_mutex_unlock(&a->state_lock);
  return s;
}

void tm_accel_suspect(tm_accel *a, const char *why) {
  pthread_mutex_lock(&a->state_lock);
  bool first = !a->suspect && a->engine;
  if (first) a->suspect = true;
  pthread_mutex_unlock(&a->state_lock);
  if (first)
    tm_log(TM_LOG_WARN, a->def->name,
           "a query met damaged data (%s): the next refresh checks the acceleration", why);
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
  o->indexes = d->acceleration.indexes;
  o->n_indexes = d->acceleration.n_indexes;
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
  so->unsupported_action = d->unsupported_type_action;
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
  tm_accel__set_status_locked(a, TM_ACCEL_INITIALIZING);

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
      tm_accel__set_status_locked(a, TM_ACCEL_READY);
      /* The last fallback reason survives restarts, so B6's warning repeats
       * only when the reason changes, also across `tidemark refresh` runs. */
      tm_kv st;
      tm_kv_init(&st);
      if (tm_engine_read_state(a->engine, &st, &e2) == TM_OK) {
        const char *fb = tm_kv_get(&st, TM_STATE_FALLBACK);
        for (int f = TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT; fb && f <= TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY; f++)
          if (!strcmp(fb, tm_fallback_name((tm_fallback)f))) a->last_fallback = (tm_fallback)f;
        /* When the last committed refresh started (refresh_on_startup: auto); a value that
         * is not a positive number is left out: the schedule then refreshes at once. */
        const char *at = tm_kv_get(&st, TM_STATE_REFRESHED_AT);
        int64_t ms = 0;
        if (at && tm_parse_int64(at, strlen(at), &ms) == TM_OK && ms > 0) a->last_commit_ms = ms;
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
      a->damaged = true;
      snprintf(a->last_error, sizeof a->last_error,
               "the acceleration is damaged; the next refresh rebuilds it from the source: %s",
               e2.message);
      a->last_error_ms = tm_now_ms();
      tm_accel__set_status_locked(a, TM_ACCEL_ERROR);
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
  tm_free(a->refresh_sql);
  pthread_mutex_destroy(&a->refresh_lock);
  pthread_mutex_destroy(&a->state_lock);
  tm_free(a);
}

int tm_accel_set_refresh_sql(tm_accel *a, const char *sql, tm_error *err) {
  char *copy = tm_strdup(sql);
  if (!copy) return tm_error_nomem(err);
  pthread_mutex_lock(&a->state_lock);
  tm_free(a->refresh_sql);
  a->refresh_sql = copy;
  pthread_mutex_unlock(&a->state_lock);
  tm_log(TM_LOG_INFO, a->def->name, "refresh_sql updated through the API: the next refreshes read %s", sql);
  return TM_OK;
}

char *tm_accel_refresh_sql(tm_accel *a) {
  pthread_mutex_lock(&a->state_lock);
  const char *sql = a->refresh_sql ? a->refresh_sql : a->def->acceleration.refresh_sql;
  char *copy = sql ? tm_strdup(sql) : NULL;
  pthread_mutex_unlock(&a->state_lock);
  return copy;
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
  out->last_commit_ms = a->last_commit_ms;
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
    tm_instant cutoff = tm_instant_minus_ms(tm_instant_from_ms(now_ms), acc->retention_period_ms);
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
