/*
 * dataset.h - the typed definition of one dataset and its acceleration
 * (refresh layer).
 *
 * This is what the config loader (runtime layer) produces from one entry of
 * `datasets:` and what the refresh layer decides with (SPEC 1.1). Every field
 * has been validated by the loader; defaults are filled in. Strings are owned
 * by the struct and freed by tm_dataset_def_dispose.
 */
#ifndef TM_REFRESH_DATASET_H
#define TM_REFRESH_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "source/source.h"
#include "util/cron.h"
#include "util/str.h"
#include "util/time.h"

typedef enum tm_refresh_mode {
  TM_REFRESH_FULL = 0,
  TM_REFRESH_APPEND,
  TM_REFRESH_CHANGES /* Iceberg: apply each snapshot's changes (SPEC E1-E6) */
} tm_refresh_mode;

/** Spice's refresh_on_startup (docs/REFRESH.md "Scheduling"). */
typedef enum tm_refresh_on_startup {
  TM_REFRESH_ON_STARTUP_ALWAYS = 0, /* tidemark's default: every start refreshes */
  TM_REFRESH_ON_STARTUP_AUTO        /* Spice's default: only when the schedule is due */
} tm_refresh_on_startup;

typedef enum tm_snapshots_mode {
  TM_SNAPSHOTS_DISABLED = 0,
  TM_SNAPSHOTS_ENABLED,        /* create after refreshes and bootstrap at start */
  TM_SNAPSHOTS_BOOTSTRAP_ONLY, /* only restore at start */
  TM_SNAPSHOTS_CREATE_ONLY     /* only create after refreshes */
} tm_snapshots_mode;

/** What `from` names (SPEC 4). */
typedef enum tm_source_kind {
  TM_SOURCE_FILE = 0,    /* file:PATH, file://PATH */
  TM_SOURCE_S3,          /* s3://BUCKET/PREFIX */
  TM_SOURCE_ICEBERG_FILE,/* iceberg:file://PATH, iceberg:PATH */
  TM_SOURCE_ICEBERG_S3,  /* iceberg:s3://BUCKET/PREFIX */
  TM_SOURCE_ICEBERG_REST,/* iceberg:http[s]://HOST/v1/namespaces/NS/tables/T */
  TM_SOURCE_ABFS,        /* abfs[s]://CONTAINER[@ACCOUNT.dfs.core.windows.net]/PATH */
  TM_SOURCE_ICEBERG_ABFS,/* iceberg:abfs[s]://CONTAINER/PATH */
  TM_SOURCE_GLUE         /* glue:DATABASE.TABLE (an Iceberg table, or files, per the catalog) */
} tm_source_kind;

typedef struct tm_conflict_def {
  char *column;          /* owned; a primary key column */
  tm_on_conflict rule;   /* drop (default) or upsert */
} tm_conflict_def;

/** One of Spice's acceleration indexes (`col: enabled`, `"(a, b)": unique`); its strings
 * and array are owned by the dataset definition. */
typedef tm_engine_index tm_index_def;

/** A column described by Spice's `columns: [{name, description}]`. */
typedef struct tm_column_doc {
  char *name;             /* owned */
  char *description;      /* owned or NULL */
} tm_column_doc;

typedef struct tm_acceleration_def {
  bool enabled;                       /* default true when the block exists */
  tm_engine_kind engine;              /* default cayenne */
  tm_engine_mode mode;                /* default file for cayenne, memory otherwise */
  tm_refresh_mode refresh_mode;       /* default full */
  int64_t refresh_check_interval_ms;  /* 0: refresh once at start, then on demand */
  char *refresh_cron;                 /* owned or NULL: Spice's refresh_cron as written; excludes
                                         refresh_check_interval */
  tm_cron cron;                       /* refresh_cron parsed; valid when refresh_cron is set */
  bool has_overlap;
  int64_t refresh_append_overlap_ms;  /* valid when has_overlap */
  char *refresh_sql;                  /* owned or NULL */
  tm_refresh_on_startup refresh_on_startup; /* default always */
  int64_t refresh_data_window_ms;     /* 0: none; else only rows with time_column > now - this */
  bool refresh_jitter_enabled;        /* default false (Spice's) */
  int64_t refresh_jitter_max_ms;      /* 0: 10% of refresh_check_interval */
  bool refresh_retry_enabled;         /* default true */
  int64_t refresh_retry_max_attempts; /* -1: unlimited (default) */
  char **primary_key;                 /* owned array of n_primary_key owned names */
  size_t n_primary_key;
  tm_conflict_def *on_conflict;       /* owned array */
  size_t n_on_conflict;
  bool retention_check_enabled;
  int64_t retention_period_ms;        /* 0: unset */
  int64_t retention_check_interval_ms;/* default 1h */
  char *retention_sql;                /* owned or NULL */
  tm_snapshots_mode snapshots;
  tm_index_def *indexes;              /* owned array (Spice's indexes) */
  size_t n_indexes;
  tm_kv params;                       /* engine params, ${env:} expanded */
} tm_acceleration_def;

typedef struct tm_dataset_def {
  char *from;                   /* owned, as written */
  tm_source_kind source_kind;
  char *name;                   /* owned; unique in the config */
  tm_kv params;                 /* connector params, ${env:} expanded */
  char *time_column;            /* owned or NULL */
  tm_time_format time_format;   /* UNSET when not given */
  char *time_partition_column;  /* owned or NULL */
  tm_time_format time_partition_format;
  bool has_acceleration;        /* an acceleration block was given */
  tm_acceleration_def acceleration;
  char *data_path;              /* owned: where a file-mode acceleration lives */
  int line;                     /* where the entry starts in the config, for messages */
  char *description;            /* owned or NULL: the SQL table's comment */
  tm_column_doc *columns;       /* owned array: column comments (Spice's columns) */
  size_t n_columns;
  char **depends_on;            /* owned array of n_depends_on dataset names (Spice's
                                   dependsOn): this dataset loads after them */
  size_t n_depends_on;
  tm_unsupported_action unsupported_type_action; /* Spice's key; default error */
} tm_dataset_def;

void tm_dataset_def_init(tm_dataset_def *d);
void tm_dataset_def_dispose(tm_dataset_def *d);

/** The on_conflict rule of a primary-key column (drop when not listed). */
tm_on_conflict tm_dataset_conflict_rule(const tm_dataset_def *d, const char *column);
/** Whether the primary key includes the time column (SPEC A9, B1, B4). */
bool tm_dataset_key_includes_time(const tm_dataset_def *d);
/**
 * The largest random shift of a refresh (Spice's refresh_jitter_*): 0 when
 * jitter is off; refresh_jitter_max, or 10% of refresh_check_interval.
 */
int64_t tm_acceleration_max_jitter_ms(const tm_acceleration_def *a);

const char *tm_refresh_mode_name(tm_refresh_mode m);
const char *tm_snapshots_mode_name(tm_snapshots_mode m);
const char *tm_source_kind_name(tm_source_kind k);

#endif
