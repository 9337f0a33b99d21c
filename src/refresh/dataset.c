/*
 * dataset.c - the typed dataset definition (refresh layer). See dataset.h.
 */
#include "refresh/dataset.h"

#include <string.h>

#include "util/alloc.h"

void tm_dataset_def_init(tm_dataset_def *d) {
  memset(d, 0, sizeof *d);
  tm_kv_init(&d->params);
  tm_kv_init(&d->acceleration.params);
  d->acceleration.refresh_retry_enabled = true;
  d->acceleration.refresh_retry_max_attempts = -1;
  d->acceleration.retention_check_interval_ms = 3600 * 1000;
}

void tm_dataset_def_dispose(tm_dataset_def *d) {
  tm_acceleration_def *a = &d->acceleration;
  tm_free(d->from);
  tm_free(d->name);
  tm_kv_dispose(&d->params);
  tm_free(d->time_column);
  tm_free(d->time_partition_column);
  tm_free(d->data_path);
  tm_free(a->refresh_sql);
  tm_free(a->refresh_cron);
  tm_free(a->retention_sql);
  for (size_t i = 0; i < a->n_primary_key; i++) tm_free(a->primary_key[i]);
  tm_free(a->primary_key);
  for (size_t i = 0; i < a->n_on_conflict; i++) tm_free(a->on_conflict[i].column);
  tm_free(a->on_conflict);
  for (size_t i = 0; i < a->n_indexes; i++) {
    for (size_t j = 0; j < a->indexes[i].n_columns; j++) tm_free(a->indexes[i].columns[j]);
    tm_free(a->indexes[i].columns);
  }
  tm_free(a->indexes);
  tm_kv_dispose(&a->params);
  tm_free(d->description);
  for (size_t i = 0; i < d->n_columns; i++) {
    tm_free(d->columns[i].name);
    tm_free(d->columns[i].description);
  }
  tm_free(d->columns);
  for (size_t i = 0; i < d->n_depends_on; i++) tm_free(d->depends_on[i]);
  tm_free(d->depends_on);
  memset(d, 0, sizeof *d);
}

tm_on_conflict tm_dataset_conflict_rule(const tm_dataset_def *d, const char *column) {
  for (size_t i = 0; i < d->acceleration.n_on_conflict; i++)
    if (strcmp(d->acceleration.on_conflict[i].column, column) == 0)
      return d->acceleration.on_conflict[i].rule;
  /* A key listed as a whole (e.g. "(a, b)": upsert) applies to each of its columns. */
  return TM_ON_CONFLICT_DROP;
}

bool tm_dataset_key_includes_time(const tm_dataset_def *d) {
  if (!d->time_column) return false;
  for (size_t i = 0; i < d->acceleration.n_primary_key; i++)
    if (strcmp(d->acceleration.primary_key[i], d->time_column) == 0) return true;
  return false;
}

int64_t tm_acceleration_max_jitter_ms(const tm_acceleration_def *a) {
  if (!a->refresh_jitter_enabled) return 0;
  return a->refresh_jitter_max_ms > 0 ? a->refresh_jitter_max_ms : a->refresh_check_interval_ms / 10;
}

const char *tm_refresh_mode_name(tm_refresh_mode m) {
  return m == TM_REFRESH_APPEND ? "append" : m == TM_REFRESH_CHANGES ? "changes" : "full";
}

const char *tm_snapshots_mode_name(tm_snapshots_mode m) {
  switch (m) {
    case TM_SNAPSHOTS_DISABLED: return "disabled";
    case TM_SNAPSHOTS_ENABLED: return "enabled";
    case TM_SNAPSHOTS_BOOTSTRAP_ONLY: return "bootstrap_only";
    case TM_SNAPSHOTS_CREATE_ONLY: return "create_only";
  }
  return "?";
}

const char *tm_source_kind_name(tm_source_kind k) {
  switch (k) {
    case TM_SOURCE_FILE: return "file";
    case TM_SOURCE_S3: return "s3";
    case TM_SOURCE_ICEBERG_FILE: return "iceberg (file system)";
    case TM_SOURCE_ICEBERG_S3: return "iceberg (s3)";
    case TM_SOURCE_ICEBERG_REST: return "iceberg (REST catalog)";
    case TM_SOURCE_ABFS: return "abfs";
    case TM_SOURCE_ICEBERG_ABFS: return "iceberg (abfs)";
    case TM_SOURCE_GLUE: return "glue";
  }
  return "?";
}
