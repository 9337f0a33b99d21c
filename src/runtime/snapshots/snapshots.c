/*
 * snapshots.c - acceleration snapshots: copies of file-mode accelerations on
 * a file:// or s3:// location, created after refreshes and restored at
 * start (runtime layer; SPEC C2, B9).
 *
 * Layout at the location (top-level `snapshots.location`):
 *
 *   PREFIX/dataset=NAME/NAME_YYYYMMDDTHHMMSSZ.EXT
 *
 * one object per snapshot, EXT naming the engine's backup format
 * (engine/backup.h: `sqlite` is a SQLite database file). A snapshot is one
 * object put atomically, so a reader never sees half of one; the time in
 * the name (UTC, when it was taken) orders them, newest last. After each new
 * snapshot the oldest beyond TM_RT_SNAPSHOT_KEEP are deleted.
 *
 * Creating: the engine copies its last committed state to a local temporary
 * file (tm_engine_backup: consistent while refreshes commit), which is
 * uploaded and removed.
 *
 * Bootstrap: when the dataset's file-mode acceleration does not exist, the
 * newest snapshot (or, with bootstrap_on_failure_behavior: fallback, the
 * next ones in turn) is downloaded beside the acceleration's path, checked
 * and installed (tm_engine_restore), and the saved Iceberg snapshot is
 * removed from its state map with an empty commit (B9), so the first refresh
 * reads by time from the restored high-water mark and is not a fallback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backup.h"
#include "io/io.h"
#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

#define MAX_LISTED 100000
#define ICEBERG_STATE_PREFIX "tidemark.iceberg."

static bool file_mode(const tm_dataset_def *d) {
  return d->has_acceleration && d->acceleration.enabled &&
         d->acceleration.mode == TM_ENGINE_FILE && tm_engine_backup_ext(d->acceleration.engine);
}

bool tm_rt__snapshots_create(const tm_runtime *rt, const tm_dataset_def *d) {
  tm_snapshots_mode m = d->acceleration.snapshots;
  return rt->snap_store && file_mode(d) &&
         (m == TM_SNAPSHOTS_ENABLED || m == TM_SNAPSHOTS_CREATE_ONLY);
}

bool tm_rt__snapshots_bootstrap(const tm_runtime *rt, const tm_dataset_def *d) {
  tm_snapshots_mode m = d->acceleration.snapshots;
  return rt->snap_store && file_mode(d) &&
         (m == TM_SNAPSHOTS_ENABLED || m == TM_SNAPSHOTS_BOOTSTRAP_ONLY);
}

char *tm_rt__snapshot_key(const char *prefix, const char *dataset, const char *ext, int64_t ms) {
  int64_t sec = tm_floor_div(ms, 1000);
  int64_t days = tm_floor_div(sec, TM_SEC_PER_DAY);
  int64_t rem = sec - days * TM_SEC_PER_DAY;
  int64_t y;
  unsigned mo, d;
  tm_civil_from_days(days, &y, &mo, &d);
  char *rel = tm_asprintf("dataset=%s/%s_%04lld%02u%02uT%02d%02d%02dZ.%s", dataset, dataset,
                          (long long)y, mo, d, (int)(rem / 3600), (int)(rem / 60 % 60),
                          (int)(rem % 60), ext);
  if (!rel) return NULL;
  char *key = tm_objstore_join(prefix, rel);
  tm_free(rel);
  return key;
}

static int64_t digits(const char *s, int n) {
  int64_t v = 0;
  for (int i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
  return v;
}

/* The wall-clock ms encoded in a snapshot name's YYYYMMDDTHHMMSSZ, or -1. */
static int64_t key_time_ms(const char *ts) {
  for (int i = 0; i < 16; i++) {
    bool digit = ts[i] >= '0' && ts[i] <= '9';
    if ((i == 8 && ts[i] != 'T') || (i == 15 && ts[i] != 'Z') || (i != 8 && i != 15 && !digit))
      return -1;
  }
  int64_t y = digits(ts, 4), mo = digits(ts + 4, 2), d = digits(ts + 6, 2), h = digits(ts + 9, 2),
          mi = digits(ts + 11, 2), s = digits(ts + 13, 2);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return -1;
  int64_t days = tm_days_from_civil(y, (unsigned)mo, (unsigned)d);
  return ((days * 24 + h) * 60 + mi) * 60000 + s * 1000;
}

/* The folder prefix of a dataset's snapshots ("PREFIX/dataset=NAME/"). Result: tm_free. */
static char *dataset_prefix(const char *prefix, const char *name) {
  char *rel = tm_asprintf("dataset=%s/", name);
  if (!rel) return NULL;
  char *p = tm_objstore_join(prefix, rel);
  tm_free(rel);
  return p;
}

static int cmp_desc(const void *a, const void *b) {
  return strcmp(*(const char *const *)b, *(const char *const *)a);
}

/*
 * The keys of the dataset's snapshots, newest first, in *keys_out (an array
 * of n owned strings; free with free_keys).
 */
static int list_snapshots(tm_runtime *rt, const tm_dataset_def *d, char ***keys_out,
                          size_t *n_out, tm_error *err) {
  const char *ext = tm_engine_backup_ext(d->acceleration.engine);
  char *dir = dataset_prefix(rt->snap_prefix, d->name);
  if (!dir) return tm_error_nomem(err);
  tm_obj_list list;
  tm_obj_list_init(&list);
  char **keys = NULL;
  size_t n = 0;
  int rc = tm_objstore_list_all(rt->snap_store, dir, MAX_LISTED, &list, err);
  if (rc == TM_OK && !(keys = tm_calloc(list.len ? list.len : 1, sizeof *keys)))
    rc = tm_error_nomem(err);
  size_t dlen = strlen(dir), nlen = strlen(d->name), elen = strlen(ext);
  for (size_t i = 0; rc == TM_OK && i < list.len; i++) {
    const char *k = list.items[i].key;
    /* Exactly PREFIX/dataset=NAME/NAME_YYYYMMDDTHHMMSSZ.EXT */
    if (strlen(k) != dlen + nlen + 1 + 16 + 1 + elen) continue;
    const char *base = k + dlen;
    if (strncmp(base, d->name, nlen) != 0 || base[nlen] != '_' || base[nlen + 17] != '.' ||
        strcmp(base + nlen + 18, ext) != 0 || key_time_ms(base + nlen + 1) < 0)
      continue;
    if (!(keys[n] = tm_strdup(k))) rc = tm_error_nomem(err);
    else n++;
  }
  tm_obj_list_dispose(&list);
  tm_free(dir);
  if (rc != TM_OK) {
    for (size_t i = 0; i < n; i++) tm_free(keys[i]);
    tm_free(keys);
    return rc;
  }
  qsort(keys, n, sizeof *keys, cmp_desc);
  *keys_out = keys;
  *n_out = n;
  return TM_OK;
}

static void free_keys(char **keys, size_t n) {
  for (size_t i = 0; keys && i < n; i++) tm_free(keys[i]);
  tm_free(keys);
}

/* The time in a snapshot key of dataset `name`, or -1. */
static int64_t key_ms(const char *key, const char *name) {
  const char *slash = strrchr(key, '/');
  const char *base = slash ? slash + 1 : key;
  size_t n = strlen(name);
  if (strlen(base) < n + 17 || strncmp(base, name, n) != 0 || base[n] != '_') return -1;
  return key_time_ms(base + n + 1);
}

static void record(tm_runtime *rt, tm_rt_dataset *ds, const char *key) {
  char *copy = tm_strdup(key);
  pthread_mutex_lock(&rt->mu);
  if (copy) {
    tm_free(ds->snapshot_key);
    ds->snapshot_key = copy;
    ds->snapshot_ms = key_ms(key, ds->def->name);
  }
  pthread_mutex_unlock(&rt->mu);
}

/* ---- create ----------------------------------------------------------------------------------- */

static void prune(tm_runtime *rt, const tm_dataset_def *d) {
  char **keys = NULL;
  size_t n = 0;
  tm_error err;
  tm_error_init(&err);
  if (list_snapshots(rt, d, &keys, &n, &err) != TM_OK) {
    tm_log(TM_LOG_WARN, d->name, "cannot list acceleration snapshots to prune: %s", err.message);
    return;
  }
  for (size_t i = TM_RT_SNAPSHOT_KEEP; i < n; i++) {
    if (tm_objstore_delete(rt->snap_store, keys[i], &err) != TM_OK)
      tm_log(TM_LOG_WARN, d->name, "cannot delete old snapshot %s: %s", keys[i], err.message);
    else
      TM_LOG_DEBUG_(d->name, "deleted old acceleration snapshot %s", keys[i]);
  }
  free_keys(keys, n);
}

int tm_rt__snapshot_create(tm_runtime *rt, tm_rt_dataset *ds, tm_error *err) {
  const tm_dataset_def *d = ds->def;
  tm_engine *e = ds->accel ? tm_accel_engine(ds->accel) : NULL;
  if (!e) return TM_OK; /* nothing loaded */
  int64_t t0 = tm_monotonic_ns();
  int64_t now = tm_now_ms();
  const char *ext = tm_engine_backup_ext(tm_engine_get_kind(e));
  char *local = tm_asprintf("%s.snapshot-%d.%s", d->data_path, (int)getpid(), ext ? ext : "bin");
  char *key = tm_rt__snapshot_key(rt->snap_prefix, d->name, ext ? ext : "bin", now);
  int rc = local && key ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_engine_backup(e, local, err);
  tm_engine_release(e);
  tm_obj_stat st = {0};
  if (rc == TM_OK) rc = tm_objstore_put_file(rt->snap_store, key, local, TM_OBJ_PUT_ATOMIC, err);
  if (rc == TM_OK && tm_objstore_stat(rt->snap_store, key, &st, err) != TM_OK) st.size = 0;
  if (local) unlink(local);
  if (rc == TM_OK) {
    tm_log(TM_LOG_INFO, d->name, "acceleration snapshot written: %s/%s (%llu bytes, %.2f s)",
           tm_objstore_name(rt->snap_store), key, (unsigned long long)st.size,
           (double)(tm_monotonic_ns() - t0) / 1e9);
    record(rt, ds, key);
    prune(rt, d);
  }
  tm_free(local);
  tm_free(key);
  return rc;
}

/* ---- bootstrap -------------------------------------------------------------------------------- */

/* Removes the saved Iceberg snapshot from the restored acceleration's state (B9). */
static int discard_iceberg_state(const tm_dataset_def *d, const tm_engine_options *eo,
                                 tm_error *err) {
  tm_engine *e = NULL;
  tm_engine_txn *txn = NULL;
  tm_kv st, kept;
  tm_kv_init(&st);
  tm_kv_init(&kept);
  bool removed = false;
  int rc = tm_engine_open(&e, d->acceleration.engine, NULL, eo, err);
  if (rc == TM_OK) rc = tm_engine_read_state(e, &st, err);
  for (size_t i = 0; rc == TM_OK && i < st.len; i++) {
    if (tm_str_has_prefix(st.items[i].key, ICEBERG_STATE_PREFIX)) removed = true;
    else rc = tm_kv_set(&kept, st.items[i].key, st.items[i].value, err);
  }
  if (rc == TM_OK && removed) {
    rc = tm_engine_begin(e, TM_TXN_APPEND, &txn, err);
    if (rc == TM_OK) {
      rc = tm_engine_txn_commit(txn, &kept, NULL, err);
      txn = NULL;
    }
    if (rc == TM_OK)
      tm_log(TM_LOG_INFO, d->name,
             "the restored acceleration's saved Iceberg snapshot was discarded (SPEC B9): the "
             "first refresh reads by time");
  }
  tm_engine_txn_abort(txn);
  tm_engine_release(e);
  tm_kv_dispose(&st);
  tm_kv_dispose(&kept);
  return rc;
}

static int restore_one(tm_runtime *rt, const tm_dataset_def *d, const tm_engine_options *eo,
                       const char *key, tm_error *err) {
  int64_t t0 = tm_monotonic_ns();
  char *dir = tm_path_dirname(d->data_path);
  char *tmp = tm_asprintf("%s.download-%d", d->data_path, (int)getpid());
  int rc = dir && tmp ? tm_mkdir_p(dir, err) : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_objstore_get_file(rt->snap_store, key, tmp, err);
  if (rc == TM_OK) rc = tm_engine_restore(d->acceleration.engine, eo, tmp, err);
  else if (tmp) unlink(tmp);
  if (rc == TM_OK) rc = discard_iceberg_state(d, eo, err);
  if (rc == TM_OK) {
    tm_log(TM_LOG_INFO, d->name, "acceleration restored from snapshot %s/%s (%.2f s)",
           tm_objstore_name(rt->snap_store), key, (double)(tm_monotonic_ns() - t0) / 1e9);
  } else if (rc != TM_OK) {
    /* Leave nothing half-restored: the first refresh then loads from the source. */
    tm_error e2;
    if (tm_engine_drop(d->acceleration.engine, eo, &e2) != TM_OK)
      tm_log(TM_LOG_WARN, d->name, "cannot remove a failed restore: %s", e2.message);
  }
  tm_free(dir);
  tm_free(tmp);
  return rc;
}

int tm_rt__snapshot_bootstrap(tm_runtime *rt, tm_rt_dataset *ds, bool fallback, bool *restored,
                              tm_error *err) {
  const tm_dataset_def *d = ds->def;
  *restored = false;
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(d, rt->db, &eo, &oc);
  /* Only a missing acceleration is restored; an existing one (even damaged) is not touched. */
  tm_engine *e = NULL;
  tm_error e2;
  tm_error_init(&e2);
  int orc = tm_engine_open(&e, d->acceleration.engine, NULL, &eo, &e2);
  tm_engine_release(e);
  if (orc != TM_ENOTFOUND) {
    tm_kv_dispose(&oc);
    return TM_OK;
  }
  char **keys = NULL;
  size_t n = 0;
  int rc = list_snapshots(rt, d, &keys, &n, err);
  if (rc == TM_OK && n == 0) {
    char *dp = dataset_prefix(rt->snap_prefix, d->name);
    rc = tm_error_set(err, TM_ENOTFOUND, "%s/%s holds no snapshot", tm_objstore_name(rt->snap_store),
                      dp ? dp : d->name);
    tm_free(dp);
  }
  for (size_t i = 0; rc == TM_OK && i < n; i++) {
    rc = restore_one(rt, d, &eo, keys[i], err);
    if (rc == TM_OK) {
      *restored = true;
      record(rt, ds, keys[i]);
      break;
    }
    tm_error_prefix(err, "%s", keys[i]);
    if (!fallback || i + 1 == n) break;
    tm_log(TM_LOG_WARN, d->name, "snapshot not restored, trying an older one: %s", err->message);
    rc = TM_OK;
  }
  free_keys(keys, n);
  tm_kv_dispose(&oc);
  return rc;
}
