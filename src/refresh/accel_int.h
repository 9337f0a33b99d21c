/*
 * accel_int.h - what the files of an acceleration share (refresh layer,
 * private to src/refresh/): accel.c owns the acceleration (lifecycle,
 * status, info, retention), run.c carries a refresh plan out, report.c
 * reports a refresh (log lines, status, metrics).
 */
#ifndef TM_REFRESH_ACCEL_INT_H
#define TM_REFRESH_ACCEL_INT_H

#include <pthread.h>

#include "refresh/accel.h"

typedef struct accel_metrics {
  tm_metric *fallbacks, *errors, *duration, *rows_written, *rows_deleted, *snapshot_ops,
      *rows_superseded, *last_refresh,
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
  bool damaged;                 /* the stored acceleration cannot be read: the next refresh
                                   drops it and loads the source again (SPEC D5) */
  bool suspect;                 /* a query met damage: verify before the next refresh */
  char last_error[TM_ERROR_MESSAGE_MAX];
  int64_t last_error_ms;
  int64_t last_commit_ms;       /* wall ms the last committed refresh started; 0: unknown */
  char *refresh_sql;            /* owned or NULL: Spice's PATCH .../acceleration replaced the
                                   config's refresh_sql with it (state_lock) */
};

/** Sets the status (and its gauge); a->state_lock is held. */
void tm_accel__set_status_locked(tm_accel *a, tm_accel_status s);

/**
 * After a refresh that committed: the fallback's count and (when the plan
 * said so, B6) warning, the log lines, the last result and status, the
 * metrics. e is the engine the refresh wrote (NULL: none).
 */
void tm_accel__report_success(tm_accel *a, const tm_refresh_result *out, const char *mode,
                              bool warn_fallback, tm_engine *e);
/** After a refresh that failed: the log line, the kept error, the status, the count. */
void tm_accel__report_failure(tm_accel *a, int rc, const tm_error *err, tm_accel_status before,
                              const char *mode);

#endif
