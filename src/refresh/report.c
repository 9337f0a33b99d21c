/*
 * report.c - what a refresh reports (refresh layer): the summary line of
 * `tidemark refresh` and the log, the fallback's warning and count (B6), the
 * last result and status (`tidemark status`, the API), the refresh metrics
 * (docs/METRICS.md). See accel_int.h.
 */
#include <stdio.h>
#include <string.h>

#include "refresh/accel_int.h"
#include "util/log.h"
#include "util/time.h"

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
  if (r->how == TM_READ_SNAPSHOTS || r->how == TM_READ_CHANGES) {
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
    snprintf(how, sizeof how, "via %s (%d: %s)", r->how == TM_READ_CHANGES ? "changes" : "snapshots",
             r->n_snapshots, parts);
  } else if (r->how == TM_READ_NOTHING) {
    snprintf(how, sizeof how, "via snapshots (no new snapshot)");
  } else if (r->how == TM_READ_FULL && r->fallback != TM_FALLBACK_NONE) {
    snprintf(how, sizeof how, "via full reload (fallback: %s)", tm_fallback_name(r->fallback));
  } else if (r->how == TM_READ_FULL) {
    snprintf(how, sizeof how, "via full refresh");
  } else if (r->fallback != TM_FALLBACK_NONE) {
    snprintf(how, sizeof how, "via time (fallback: %s)", tm_fallback_name(r->fallback));
  } else {
    snprintf(how, sizeof how, "via time");
  }
  char deleted[40] = "";
  if (r->how == TM_READ_CHANGES) snprintf(deleted, sizeof deleted, " -%lld", (long long)r->rows_deleted);
  int n = snprintf(buf, cap, "%s: %s%lld%s rows %s", dataset, r->full ? "" : "+",
                   (long long)r->rows_written, deleted, how);
  if (n < 0 || cap == 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
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
  if (warn && a->def->acceleration.refresh_mode == TM_REFRESH_CHANGES)
    tm_log(TM_LOG_WARN, a->def->name,
           "changes refresh reloads the table in full instead of applying its snapshots: %s "
           "(SPEC E5)", tm_fallback_name(f));
  else if (warn)
    tm_log(TM_LOG_WARN, a->def->name,
           "append refresh reads by time instead of following snapshots: %s (SPEC B5)",
           tm_fallback_name(f));
  if (a->has_metrics)
    tm_metric_add(a->m.fallbacks, (const char *[]){a->def->name, tm_fallback_name(f)}, 1);
}

/* The outcome of a refresh, for the log, status and metrics. */
void tm_accel__report_success(tm_accel *a, const tm_refresh_result *out, const char *mode,
                              bool warn_fallback, tm_engine *e) {
  const tm_dataset_def *d = a->def;
  note_fallback(a, out->fallback, warn_fallback);
  char line[512];
  tm_refresh_result_line(out, d->name, line, sizeof line);
  tm_log(TM_LOG_INFO, d->name,
         "refresh finished: %s; read %lld rows, deleted %lld, de-duplicated %lld, superseded %lld; files "
         "%lld read, %lld skipped; row groups %lld read, %lld skipped; %.3f ms",
         line + strlen(d->name) + 2, (long long)out->rows_read, (long long)out->rows_deleted,
         (long long)out->rows_deduplicated,
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
  if (out->committed) a->last_commit_ms = out->started_ms;
  a->ready = a->engine != NULL;
  a->last_error[0] = '\0';
  tm_accel__set_status_locked(a, a->ready ? TM_ACCEL_READY : TM_ACCEL_INITIALIZING);
  pthread_mutex_unlock(&a->state_lock);
  if (a->has_metrics) {
    const char *ds[] = {d->name};
    tm_metric_observe(a->m.duration, (const char *[]){d->name, mode}, (double)out->duration_ms);
    tm_metric_add(a->m.rows_written, ds, (double)out->rows_written);
    if (out->rows_deleted) tm_metric_add(a->m.rows_deleted, ds, (double)out->rows_deleted);
    const struct { const char *op; int n; } ops[] = {
        {"append", out->n_append}, {"overwrite", out->n_overwrite}, {"replace", out->n_replace},
        {"delete", out->n_delete}, {"other", out->n_other}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
      if (ops[i].n) tm_metric_add(a->m.snapshot_ops, (const char *[]){d->name, ops[i].op}, ops[i].n);
    tm_metric_set(a->m.last_refresh, ds, (double)tm_now_ms());
    if (out->has_max_time)
      tm_metric_set(a->m.max_timestamp, (const char *[]){d->name, mode}, (double)out->max_time_ms);
    uint64_t size = 0;
    tm_error e3;
    if (e && tm_engine_size_bytes(e, &size, &e3) == TM_OK)
      tm_metric_set(a->m.size_bytes, ds, (double)size);
  }
}

void tm_accel__report_failure(tm_accel *a, int rc, const tm_error *err, tm_accel_status before,
                              const char *mode) {
  const char *why = err ? err->message : tm_code_name(rc);
  tm_log(TM_LOG_ERROR, a->def->name, "refresh failed: %s", why);
  pthread_mutex_lock(&a->state_lock);
  snprintf(a->last_error, sizeof a->last_error, "%s", why);
  a->last_error_ms = tm_now_ms();
  tm_accel__set_status_locked(a, a->ready ? (before == TM_ACCEL_SHUTTING_DOWN ? before : TM_ACCEL_ERROR)
                                : TM_ACCEL_ERROR);
  pthread_mutex_unlock(&a->state_lock);
  if (a->has_metrics) tm_metric_add(a->m.errors, (const char *[]){a->def->name, mode}, 1);
}
