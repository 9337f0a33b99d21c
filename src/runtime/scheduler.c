/*
 * scheduler.c - the refresh workers: loading datasets, scheduled and
 * triggered refreshes, retries with backoff, retention, snapshots
 * (runtime layer; SPEC C1-C4).
 *
 * There is no separate scheduler thread: a bounded pool of workers share one
 * mutex and one condition variable. A free worker picks the dataset whose
 * next job is the most overdue, marks it running (so a dataset never has two
 * jobs at once, C4), runs the job without the lock, then computes the
 * dataset's next due times and wakes the others. With nothing due, workers
 * sleep until the earliest due time (CLOCK_MONOTONIC) or a signal (an API
 * trigger, shutdown).
 *
 * Jobs, in priority order for one dataset:
 *   load       bootstrap from an acceleration snapshot when the local
 *              acceleration is missing (C2), open it (tm_accel_new; an existing
 *              file-mode acceleration is ready at once, C1), list it in SQL;
 *   trigger    an API refresh with its overrides (refresh_sql, full);
 *   refresh    scheduled: at start, then every refresh_check_interval
 *              (start to start); a failure is retried after
 *              base * 2^(attempt-1) (capped) while refresh_retry_enabled and
 *              attempts remain (refresh_retry_max_attempts; unlimited by
 *              default);
 *   retention  every retention_check_interval (C3).
 * After a refresh or retention that changed the rows, a file-mode dataset
 * with snapshots enabled copies its acceleration to the snapshot location.
 *
 * Shutdown sets rt->cancel, which every refresh polls between batches: a
 * refresh in flight rolls back (TM_ECANCELLED), or finishes its commit if it
 * was already committing. Workers then exit and are joined.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"
#include "util/sync.h"

typedef enum job_kind { JOB_NONE = 0, JOB_LOAD, JOB_TRIGGER, JOB_REFRESH, JOB_RETENTION } job_kind;

static int64_t mono_ms(void) { return tm_monotonic_ns() / 1000000; }

/* A uniform random number in [0, n) for n > 0 (xorshift64*; rt->mu held). */
static int64_t random_below(tm_runtime *rt, int64_t n) {
  uint64_t x = rt->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  rt->rng = x;
  return (int64_t)((x * 0x2545F4914F6CDD1DULL) % (uint64_t)n);
}

/*
 * Spice's refresh jitter: period shifted by a random amount in [0, max_ms),
 * later or earlier with equal odds, never below 0 (rt->mu held).
 */
static int64_t jittered(tm_runtime *rt, int64_t period, int64_t max_ms) {
  if (max_ms <= 0) return period;
  int64_t j = random_below(rt, max_ms);
  if (random_below(rt, 2)) return period + j;
  return period > j ? period - j : 0;
}

int64_t tm_rt__backoff_ms(int64_t base_ms, int64_t max_ms, int attempt) {
  int64_t d = base_ms;
  for (int i = 1; i < attempt && d < max_ms; i++) d *= 2;
  return d < max_ms ? d : max_ms;
}

/*
 * When the schedule of acc fires next (monotonic ms), for a refresh that
 * started at `started` and a clock that reads now (both monotonic ms):
 * refresh_check_interval counts from start to start (jittered); refresh_cron
 * fires at its first instant after now in local time (jittered; firings
 * missed while a refresh ran are not made up); neither: never. rt->mu held.
 */
static int64_t next_scheduled(tm_runtime *rt, const tm_acceleration_def *acc, int64_t started,
                              int64_t now) {
  int64_t jitter = tm_acceleration_max_jitter_ms(acc);
  if (acc->refresh_check_interval_ms > 0) {
    int64_t next = started + jittered(rt, acc->refresh_check_interval_ms, jitter);
    return next > now ? next : now;
  }
  if (!acc->refresh_cron) return TM_RT_NEVER;
  int64_t wall = tm_now_ms(), fire = 0;
  if (tm_cron_next(&acc->cron, wall / 1000, &fire) != TM_OK) return TM_RT_NEVER;
  /* + 1: now and wall are whole milliseconds, cut down; without it the wake-up can come up to
   * a millisecond before the cron second (a refresh seen starting at 45.999 for 46). */
  int64_t next = now + 1 + jittered(rt, fire * 1000 - wall, jitter);
  return next > now ? next : now;
}

/*
 * The first scheduled refresh after a dataset loaded (monotonic ms; rt->mu
 * held). refresh_on_startup: always (tidemark's default) refreshes now.
 * auto (Spice's default) refreshes now only an acceleration that did not
 * survive the restart (memory mode, a new or rebuilt one) or whose schedule
 * fell due since its last committed refresh; otherwise at its next due time
 * (never, without a schedule: only on demand).
 */
static int64_t first_refresh(tm_runtime *rt, const tm_rt_dataset *ds, int64_t now) {
  const tm_acceleration_def *acc = &ds->def->acceleration;
  int64_t jitter = tm_acceleration_max_jitter_ms(acc);
  int64_t at_start = now + jittered(rt, 0, jitter);
  if (acc->refresh_on_startup != TM_REFRESH_ON_STARTUP_AUTO) return at_start;
  tm_accel_info info;
  tm_accel_get_info(ds->accel, &info);
  if (!info.ready || info.last_commit_ms <= 0) return at_start;
  int64_t wall = tm_now_ms(), last = info.last_commit_ms < wall ? info.last_commit_ms : wall;
  int64_t due = TM_RT_NEVER;
  if (acc->refresh_check_interval_ms > 0) {
    int64_t wait = last + acc->refresh_check_interval_ms - wall;
    due = wait > 0 ? now + jittered(rt, wait, jitter) : at_start;
  } else if (acc->refresh_cron) {
    int64_t fire = 0;
    if (tm_cron_next(&acc->cron, last / 1000, &fire) == TM_OK)
      due = fire * 1000 <= wall ? at_start : next_scheduled(rt, acc, now, now);
  }
  char when[64] = "only on demand (no refresh_check_interval or refresh_cron)";
  if (due != TM_RT_NEVER)
    snprintf(when, sizeof when, "in %.1f s", (double)(due > now ? due - now : 0) / 1000.0);
  tm_log(TM_LOG_INFO, ds->def->name,
         "refresh_on_startup: auto: the last refresh was %.1f s ago; the next one %s",
         (double)(wall - last) / 1000.0, when);
  return due;
}

/* Whether every dataset ds dependsOn (Spice's) has settled, so ds may load. rt->mu held. */
static bool deps_settled(const tm_runtime *rt, const tm_rt_dataset *ds) {
  for (size_t j = 0; j < ds->def->n_depends_on; j++)
    for (size_t k = 0; k < rt->n_ds; k++)
      if (strcmp(rt->ds[k].def->name, ds->def->depends_on[j]) == 0 && !rt->ds[k].settled)
        return false;
  return true;
}

/* The next job of ds and when it is due; JOB_NONE when it has none. rt->mu held. */
static job_kind next_job(const tm_runtime *rt, const tm_rt_dataset *ds, int64_t *due) {
  *due = TM_RT_NEVER;
  if (ds->load_failed) return JOB_NONE;
  if (!ds->loaded) {
    if (!deps_settled(rt, ds)) return JOB_NONE; /* a job that settles one wakes the workers */
    *due = ds->next_load_ms;
    return JOB_LOAD;
  }
  if (!ds->accelerated) return JOB_NONE;
  if (ds->has_trigger) {
    *due = ds->trigger_due_ms;
    return JOB_TRIGGER;
  }
  if (ds->next_refresh_ms <= ds->next_retention_ms) {
    *due = ds->next_refresh_ms;
    return ds->next_refresh_ms == TM_RT_NEVER ? JOB_NONE : JOB_REFRESH;
  }
  *due = ds->next_retention_ms;
  return JOB_RETENTION;
}

/* ---- jobs (run without rt->mu) ------------------------------------------------------------ */

/*
 * Loads ds. Returns TM_OK (loaded), TM_EUNAVAILABLE (try again later: a
 * bootstrap with bootstrap_on_failure_behavior: retry failed) or another
 * error (the dataset is skipped).
 */
static int run_load(tm_runtime *rt, tm_rt_dataset *ds, tm_error *err) {
  const tm_dataset_def *d = ds->def;
  if (ds->accelerated && tm_rt__snapshots_bootstrap(rt, d)) {
    const char *behavior = rt->cfg->snapshots.bootstrap_on_failure;
    bool fallback = behavior && strcmp(behavior, "fallback") == 0;
    bool retry = behavior && strcmp(behavior, "retry") == 0;
    bool restored = false;
    tm_error berr;
    tm_error_init(&berr);
    int rc = tm_rt__snapshot_bootstrap(rt, ds, fallback, &restored, &berr);
    if (rc == TM_ENOTFOUND) {
      tm_log(TM_LOG_INFO, d->name, "no acceleration snapshot to bootstrap from: %s", berr.message);
    } else if (rc != TM_OK) {
      if (retry) {
        tm_error_copy(err, &berr);
        return TM_EUNAVAILABLE;
      }
      tm_log(TM_LOG_WARN, d->name,
             "bootstrap from an acceleration snapshot failed, loading from the source instead: %s",
             berr.message);
    }
    if (restored) {
      pthread_mutex_lock(&rt->mu);
      ds->bootstrapped = true;
      pthread_mutex_unlock(&rt->mu);
    }
  }
  tm_accel_options ao;
  tm_accel_options_init(&ao);
  ao.metrics = rt->metrics;
  ao.db = rt->db;
  ao.base_dir = rt->cfg->dir;
  tm_accel *a = NULL;
  TM_TRY(tm_accel_new(&a, d, &ao, err));
  if (!ds->accelerated) {
    /* Federated (C6): a table that reads the source on every query. */
    tm_source_options so;
    tm_accel_source_options(d, rt->cfg->dir, &so);
    int rc = tm_sql_catalog_add_source(rt->catalog, &so, err);
    if (rc != TM_OK) {
      tm_accel_free(a);
      return rc;
    }
    tm_accel_set_status(a, TM_ACCEL_READY);
  }
  pthread_mutex_lock(&rt->mu);
  ds->accel = a;
  pthread_mutex_unlock(&rt->mu);
  if (ds->accelerated) tm_rt__sync_catalog(rt, ds);
  else tm_rt__sync_views(rt);
  return TM_OK;
}

typedef struct job_result {
  int rc;
  bool changed;    /* rows changed: a snapshot is due */
} job_result;

typedef struct heal_ctx {
  tm_runtime *rt;
  tm_rt_dataset *ds;
} heal_ctx;

/* tm_refresh_request.restore: a damaged acceleration heals from its newest snapshot (D5, C2). */
static int restore_snapshot(void *arg, tm_error *err) {
  heal_ctx *h = arg;
  const char *behavior = h->rt->cfg->snapshots.bootstrap_on_failure;
  bool restored = false;
  int rc = tm_rt__snapshot_bootstrap(h->rt, h->ds, behavior && strcmp(behavior, "fallback") == 0,
                                     &restored, err);
  if (rc == TM_OK && !restored) rc = tm_error_set(err, TM_ENOTFOUND, "no snapshot was restored");
  return rc;
}

/* tm_refresh_request.unpublished: SQL lets go of the damaged engine, which then closes. */
static void unpublished(void *arg) {
  heal_ctx *h = arg;
  tm_rt__sync_catalog(h->rt, h->ds);
}

static job_result run_refresh(tm_runtime *rt, tm_rt_dataset *ds, bool full, const char *sql) {
  job_result jr = {TM_OK, false};
  tm_refresh_request req;
  tm_refresh_request_init(&req);
  req.full = full;
  req.sql = sql;
  req.cancel = &rt->cancel;
  heal_ctx heal = {rt, ds};
  req.unpublished = unpublished;
  req.unpublished_arg = &heal;
  if (!full && tm_rt__snapshots_bootstrap(rt, ds->def)) {
    req.restore = restore_snapshot;
    req.restore_arg = &heal;
  }
  tm_refresh_result res;
  tm_error err;
  tm_error_init(&err);
  jr.rc = tm_accel_refresh(ds->accel, &req, &res, &err);
  /* A schema change may have replaced the engine (B9): list the current one. */
  tm_rt__sync_catalog(rt, ds);
  if (jr.rc == TM_OK) {
    jr.changed = res.rows_written > 0 || res.full;
  } else if (jr.rc == TM_ECANCELLED) {
    tm_log(TM_LOG_INFO, ds->def->name, "refresh cancelled for shutdown; rolled back");
  } else {
    tm_rt__check_fatal(rt);
  }
  return jr;
}

static job_result run_retention(tm_runtime *rt, tm_rt_dataset *ds) {
  job_result jr = {TM_OK, false};
  int64_t deleted = 0;
  tm_error err;
  tm_error_init(&err);
  jr.rc = tm_accel_retention(ds->accel, tm_now_ms(), &deleted, &err);
  jr.changed = jr.rc == TM_OK && deleted > 0;
  if (jr.rc < 0) tm_rt__check_fatal(rt);
  return jr;
}

static void maybe_snapshot(tm_runtime *rt, tm_rt_dataset *ds) {
  if (!tm_rt__snapshots_create(rt, ds->def)) return;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_rt__snapshot_create(rt, ds, &err);
  pthread_mutex_lock(&rt->mu);
  if (rc == TM_OK) ds->snapshot_error[0] = '\0';
  else snprintf(ds->snapshot_error, sizeof ds->snapshot_error, "%s", err.message);
  pthread_mutex_unlock(&rt->mu);
  if (rc != TM_OK)
    tm_log(TM_LOG_WARN, ds->def->name, "acceleration snapshot not written: %s", err.message);
}

/* ---- the worker loop ----------------------------------------------------------------------- */

static void after_load(tm_runtime *rt, tm_rt_dataset *ds, int rc, const tm_error *err,
                       int64_t now) {
  const tm_dataset_def *d = ds->def;
  if (rc == TM_OK) {
    ds->loaded = true;
    ds->next_load_ms = TM_RT_NEVER;
    /* Refresh at start (C4; refresh_on_startup: auto may wait), jittered as in Spice. */
    ds->next_refresh_ms = ds->accelerated ? first_refresh(rt, ds, now) : TM_RT_NEVER;
    /* Settled unless a first refresh is due now (auto may let it wait, serving what it has). */
    ds->settled = !ds->accelerated || ds->next_refresh_ms > now + tm_acceleration_max_jitter_ms(&d->acceleration);
    if (ds->accelerated && d->acceleration.retention_check_enabled)
      ds->next_retention_ms = now + d->acceleration.retention_check_interval_ms;
    return;
  }
  if (rc == TM_EUNAVAILABLE && !rt->stopping) {
    ds->load_attempts++;
    int64_t delay = tm_rt__backoff_ms(rt->opts.retry_base_ms, rt->opts.retry_max_ms,
                                      ds->load_attempts);
    ds->next_load_ms = now + delay;
    tm_log(TM_LOG_WARN, d->name, "bootstrap failed (attempt %d), retrying in %.1f s: %s",
           ds->load_attempts, (double)delay / 1000.0, err->message);
    return;
  }
  ds->load_failed = true;
  ds->settled = true;
  ds->next_load_ms = TM_RT_NEVER;
  snprintf(ds->load_error, sizeof ds->load_error, "%s", err->message);
  tm_log(TM_LOG_ERROR, d->name, "dataset not loaded, skipped (the others run): %s", err->message);
}

static void after_refresh(tm_runtime *rt, tm_rt_dataset *ds, job_kind kind, int rc,
                          int64_t started, int64_t now) {
  const tm_acceleration_def *acc = &ds->def->acceleration;
  if (kind == JOB_TRIGGER) return; /* triggers do not move the schedule and are not retried */
  int64_t scheduled = next_scheduled(rt, acc, started, now);
  if (rc == TM_OK || rc == TM_ECANCELLED) {
    ds->attempts = 0;
    ds->next_refresh_ms = scheduled;
    return;
  }
  bool may_retry = acc->refresh_retry_enabled && rc != TM_EINVALID && rc != TM_EUNSUPPORTED &&
                   (acc->refresh_retry_max_attempts < 0 ||
                    ds->attempts < acc->refresh_retry_max_attempts);
  if (may_retry) {
    ds->attempts++;
    int64_t delay = tm_rt__backoff_ms(rt->opts.retry_base_ms, rt->opts.retry_max_ms, ds->attempts);
    /* A retry never waits past the next scheduled refresh (but at least the base backoff). */
    if (scheduled != TM_RT_NEVER && now + delay > scheduled)
      delay = scheduled - now > rt->opts.retry_base_ms ? scheduled - now : rt->opts.retry_base_ms;
    ds->next_refresh_ms = now + delay;
    char left[32] = "unlimited";
    if (acc->refresh_retry_max_attempts >= 0)
      snprintf(left, sizeof left, "%lld", (long long)acc->refresh_retry_max_attempts);
    tm_log(TM_LOG_WARN, ds->def->name, "retrying the refresh in %.1f s (retry %d of %s)",
           (double)delay / 1000.0, ds->attempts, left);
    return;
  }
  if (acc->refresh_retry_enabled && ds->attempts > 0)
    tm_log(TM_LOG_WARN, ds->def->name, "giving up after %d retries%s", ds->attempts,
           scheduled != TM_RT_NEVER ? "; the next scheduled refresh tries again" : "");
  ds->attempts = 0;
  ds->next_refresh_ms = scheduled;
}

static void *worker_main(void *arg) {
  tm_runtime *rt = arg;
  pthread_mutex_lock(&rt->mu);
  while (!rt->stopping) {
    int64_t now = mono_ms();
    tm_rt_dataset *pick = NULL;
    job_kind pick_kind = JOB_NONE;
    int64_t pick_due = TM_RT_NEVER, earliest = TM_RT_NEVER;
    for (size_t i = 0; i < rt->n_ds; i++) {
      tm_rt_dataset *ds = &rt->ds[i];
      if (ds->running) continue;
      int64_t due;
      job_kind k = next_job(rt, ds, &due);
      if (k == JOB_NONE) continue;
      if (due <= now) {
        if (!pick || due < pick_due) {
          pick = ds;
          pick_kind = k;
          pick_due = due;
        }
      } else if (due < earliest) {
        earliest = due;
      }
    }
    if (!pick) {
      if (earliest == TM_RT_NEVER) {
        pthread_cond_wait(&rt->cv, &rt->mu);
      } else {
        /* ETIMEDOUT or a wake-up: look again either way */
        tm_cond_wait_ns(&rt->cv, &rt->mu, (earliest - now) * (int64_t)1000000);
      }
      continue;
    }
    pick->running = true;
    bool full = false;
    char *sql = NULL;
    if (pick_kind == JOB_TRIGGER) {
      full = pick->trigger_full;
      sql = pick->trigger_sql;
      pick->trigger_sql = NULL;
      pick->has_trigger = false;
    }
    pthread_mutex_unlock(&rt->mu);

    int64_t started = mono_ms();
    int rc = TM_OK;
    bool changed = false;
    tm_error err;
    tm_error_init(&err);
    if (pick_kind == JOB_LOAD) {
      rc = run_load(rt, pick, &err);
    } else if (pick_kind == JOB_RETENTION) {
      job_result jr = run_retention(rt, pick);
      rc = jr.rc;
      changed = jr.changed;
    } else {
      job_result jr = run_refresh(rt, pick, full, sql);
      rc = jr.rc;
      changed = jr.changed;
    }
    tm_free(sql);
    if (changed && !rt->cancel) maybe_snapshot(rt, pick);

    pthread_mutex_lock(&rt->mu);
    int64_t end = mono_ms();
    if (pick_kind == JOB_LOAD) {
      after_load(rt, pick, rc, &err, end);
      /* Views wait for their datasets; a load that ended may settle them (without rt->mu). */
      pthread_mutex_unlock(&rt->mu);
      tm_rt__sync_views(rt);
      pthread_mutex_lock(&rt->mu);
    } else if (pick_kind == JOB_RETENTION) {
      pick->next_retention_ms = end + pick->def->acceleration.retention_check_interval_ms;
    } else {
      after_refresh(rt, pick, pick_kind, rc, started, end);
      /* Its first refresh ended, well or not: datasets and views that dependsOn it may go. */
      if (!pick->settled) {
        pick->settled = true;
        pthread_mutex_unlock(&rt->mu);
        tm_rt__sync_views(rt);
        pthread_mutex_lock(&rt->mu);
      }
    }
    pick->running = false;
    pthread_cond_broadcast(&rt->cv);
  }
  pthread_mutex_unlock(&rt->mu);
  return NULL;
}

int tm_rt__sched_start(tm_runtime *rt, tm_error *err) {
  int accelerated = 0;
  for (size_t i = 0; i < rt->n_ds; i++) accelerated += rt->ds[i].accelerated;
  /* --refresh-workers, else Spice's runtime.dataset_load_parallelism, else up to 4. */
  int n = rt->opts.refresh_workers;
  if (n <= 0) n = rt->cfg->load_parallelism;
  if (n <= 0) n = accelerated < 4 ? accelerated : 4;
  if (n < 1) n = 1; /* federated datasets still load */
  rt->workers = tm_calloc((size_t)n, sizeof *rt->workers);
  if (!rt->workers) return tm_error_nomem(err);
  for (int i = 0; i < n; i++) {
    int e = pthread_create(&rt->workers[i], NULL, worker_main, rt);
    if (e != 0) {
      tm_rt__sched_stop(rt);
      return tm_error_set(err, TM_ERROR, "cannot start refresh workers: %s", strerror(e));
    }
    rt->n_workers = i + 1;
  }
  tm_log(TM_LOG_INFO, NULL, "%zu datasets, %d refresh workers", rt->n_ds, n);
  for (size_t i = 0; i < rt->n_ds; i++) {
    const tm_dataset_def *d = rt->ds[i].def;
    char names[512] = "";
    for (size_t j = 0; j < d->n_depends_on; j++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", j ? ", " : "",
               d->depends_on[j]);
    if (d->n_depends_on) tm_log(TM_LOG_INFO, d->name, "loads after %s (dependsOn)", names);
  }
  return TM_OK;
}

void tm_rt__sched_stop(tm_runtime *rt) {
  pthread_mutex_lock(&rt->mu);
  rt->stopping = true;
  __atomic_store_n(&rt->cancel, 1, __ATOMIC_SEQ_CST);
  for (size_t i = 0; i < rt->n_ds; i++)
    if (rt->ds[i].accel) tm_accel_set_status(rt->ds[i].accel, TM_ACCEL_SHUTTING_DOWN);
  pthread_cond_broadcast(&rt->cv);
  pthread_mutex_unlock(&rt->mu);
  for (int i = 0; i < rt->n_workers; i++) pthread_join(rt->workers[i], NULL);
  rt->n_workers = 0;
  tm_free(rt->workers);
  rt->workers = NULL;
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->n_ds; i++)
    if (rt->ds[i].accel) tm_accel_set_status(rt->ds[i].accel, TM_ACCEL_SHUTTING_DOWN);
  pthread_mutex_unlock(&rt->mu);
}

int tm_rt__trigger(tm_runtime *rt, tm_rt_dataset *ds, bool full, const char *sql,
                   int64_t jitter_max_ms, tm_error *err) {
  if (jitter_max_ms < 0) jitter_max_ms = tm_acceleration_max_jitter_ms(&ds->def->acceleration);
  char *copy = NULL;
  if (sql && !(copy = tm_strdup(sql))) return tm_error_nomem(err);
  pthread_mutex_lock(&rt->mu);
  int rc = TM_OK;
  if (rt->stopping) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "the runtime is shutting down");
  } else if (ds->has_trigger) {
    bool same = ds->trigger_full == full &&
                ((!ds->trigger_sql && !sql) || (ds->trigger_sql && sql && !strcmp(ds->trigger_sql, sql)));
    if (!same)
      rc = tm_error_set(err, TM_ECONFLICT,
                        "another refresh of %s with different options is already queued",
                        ds->def->name);
  } else {
    ds->has_trigger = true;
    int64_t delay = jittered(rt, 0, jitter_max_ms);
    ds->trigger_due_ms = mono_ms() + delay;
    if (jitter_max_ms > 0)
      tm_log(TM_LOG_INFO, ds->def->name, "the refresh starts in %.3f s (refresh_jitter_max %.3f s)",
             (double)delay / 1000.0, (double)jitter_max_ms / 1000.0);
    ds->trigger_full = full;
    ds->trigger_sql = copy;
    copy = NULL;
    pthread_cond_broadcast(&rt->cv);
  }
  pthread_mutex_unlock(&rt->mu);
  tm_free(copy);
  return rc;
}
