/*
 * accel.h - one dataset's acceleration and its refreshes (refresh layer).
 *
 * A tm_accel ties a dataset definition to its source and its engine and runs
 * refreshes: plan (plan.h), read (the source), filter by time and
 * de-duplicate (timebound.h, dedup.h), write and commit atomically with the
 * state map (the engine); run.c carries a plan out. It keeps what must survive between refreshes
 * in memory (the saved snapshot of a memory-mode acceleration, the last
 * fallback reason for SPEC B6's warning, the last result and error).
 *
 * Threads: one refresh or retention run at a time per accel (a second one
 * gets TM_ECONFLICT); the getters are safe from any thread. The runtime and
 * `tidemark refresh` use the same code.
 */
#ifndef TM_REFRESH_ACCEL_H
#define TM_REFRESH_ACCEL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "refresh/dataset.h"
#include "refresh/plan.h"
#include "source/source.h"
#include "util/metrics.h"

typedef struct tm_accel tm_accel;

typedef struct tm_accel_options {
  int version;          /* TM_ACCEL_OPTIONS_VERSION */
  tm_db *db;            /* required: the DuckDB instance the engines live in */
  tm_metrics *metrics;  /* may be NULL; families are registered on it */
  const char *base_dir; /* the config's folder (relative source paths) */
  size_t dedup_budget;  /* bytes for A3 de-duplication before spilling; 0: 256 MiB */
  const char *temp_dir; /* spill files; NULL: TMPDIR or /tmp */
} tm_accel_options;

#define TM_ACCEL_OPTIONS_VERSION 2
void tm_accel_options_init(tm_accel_options *o);

typedef enum tm_accel_status {
  TM_ACCEL_INITIALIZING = 0,
  TM_ACCEL_READY,
  TM_ACCEL_REFRESHING,
  TM_ACCEL_ERROR,
  TM_ACCEL_SHUTTING_DOWN
} tm_accel_status;

/** "Initializing", "Ready", "Refreshing", "Error", "ShuttingDown" (SPEC 1.3). */
const char *tm_accel_status_name(tm_accel_status s);

/** Progress of a running refresh, for a terminal (SPEC 1.2). */
typedef void (*tm_refresh_progress_fn)(const char *dataset, int64_t files_read,
                                       int64_t rows_read, void *payload);

typedef struct tm_refresh_request {
  int version;                      /* TM_REFRESH_REQUEST_VERSION */
  bool full;                        /* a full refresh whatever the configured mode */
  const char *sql;                  /* a one-off refresh_sql (A10, B11), or NULL */
  tm_refresh_progress_fn progress;  /* may be NULL */
  void *payload;
  /*
   * Cancellation (shutdown): when *cancel becomes non-zero the refresh stops
   * at the next batch and rolls back (TM_ECANCELLED). May be NULL.
   */
  const volatile int *cancel;
  /*
   * Healing from a copy (SPEC D5): when the stored acceleration is damaged,
   * its files are removed and restore(restore_arg, err) may install another
   * copy of it there (the runtime: the newest acceleration snapshot, C2);
   * TM_OK: the refresh goes on from that copy (append from its high-water
   * mark). Any error, or no restore: the refresh loads the source again.
   * May be NULL.
   */
  int (*restore)(void *restore_arg, tm_error *err);
  void *restore_arg;
  /*
   * The refresh took a damaged engine out of the acceleration (SPEC D5):
   * tm_accel_engine answers NULL from now on. unpublished(unpublished_arg)
   * then drops what the caller holds of the old engine (the runtime: its SQL
   * table), so that the engine closes and its files are released before
   * they are removed and replaced; an engine still open would keep the old
   * files attached. Called on the refreshing thread, without locks held.
   * May be NULL.
   */
  void (*unpublished)(void *unpublished_arg);
  void *unpublished_arg;
} tm_refresh_request;

#define TM_REFRESH_REQUEST_VERSION 1
void tm_refresh_request_init(tm_refresh_request *r);

/** What one refresh did (log line, metrics, `tidemark status`, the API). */
typedef struct tm_refresh_result {
  bool skipped;              /* another process holds this shared acceleration's refresh */
  tm_read_kind how;          /* full, time, snapshots, nothing */
  tm_fallback fallback;
  bool full;                 /* replaced everything */
  int64_t rows_read;         /* rows the source returned */
  int64_t rows_written;      /* rows the commit stored */
  int64_t rows_deleted;      /* refresh_mode changes: stored rows the changes removed (E2) */
  int64_t rows_deduplicated; /* re-read rows already stored (A3) */
  int64_t dedup_window_rows; /* stored rows of the re-read window */
  size_t dedup_peak_bytes;   /* memory the de-duplication held at its peak */
  bool dedup_spilled;        /* it passed its budget and spilled to disk */
  int64_t rows_superseded;   /* rows that lost a key conflict (A8) */
  int64_t rows_null_time;    /* rows skipped for a NULL or unreadable time (A4) */
  int64_t files_read, files_skipped, row_groups_read, row_groups_skipped;
  int n_snapshots;           /* snapshots walked (TM_READ_SNAPSHOTS, TM_READ_CHANGES) */
  int n_append, n_overwrite, n_replace, n_delete, n_other;
  bool has_saved_snapshot;   /* after the refresh */
  int64_t saved_snapshot;
  bool has_max_time;         /* the high-water mark after the refresh */
  int64_t max_time_ms;
  int64_t started_ms;        /* wall clock */
  int64_t duration_ms;
  int64_t duration_us;
  int64_t rows_after;        /* live rows after the commit */
  bool committed;            /* rows or state were committed (a refresh that changes nothing
                                commits nothing) */
} tm_refresh_result;

/**
 * Formats the one-line summary of SPEC 1.2 / issue 7:
 * "events: +1200 rows via snapshots (3: append 2, replace 1) in 0.04 s" or
 * "events: +800 rows via time (fallback: snapshot_not_ancestor) in 0.21 s".
 */
size_t tm_refresh_result_line(const tm_refresh_result *r, const char *dataset, char *buf,
                              size_t cap);
/** The line without its duration: "events: +1200 rows via time" (the no-op stamp, cli/noop.h). */
size_t tm_refresh_result_what(const tm_refresh_result *r, const char *dataset, char *buf,
                              size_t cap);

/**
 * A new acceleration for def (which must outlive it). Opens the source
 * (nothing is read) and, in file mode, reopens an existing acceleration, so
 * an append dataset with one is ready at once (SPEC C1). Logs the dataset's
 * registration and SPEC A9's warning. Release with tm_accel_free.
 */
int tm_accel_new(tm_accel **out, const tm_dataset_def *def, const tm_accel_options *opts,
                 tm_error *err) TM_WARN_UNUSED;
void tm_accel_free(tm_accel *a);

/**
 * Runs one refresh. On failure nothing is committed: the acceleration keeps
 * serving what it had (D1, D2, D3), and the error is also kept for status.
 * Errors: TM_ECONFLICT (a refresh is already running), the source's and the
 * engine's errors.
 */
int tm_accel_refresh(tm_accel *a, const tm_refresh_request *req, tm_refresh_result *out,
                     tm_error *err) TM_WARN_UNUSED;

/**
 * The plan the next refresh with req would carry out (plan.h), as text, one
 * "key: value" line each, appended to out (`tidemark refresh --explain`).
 * Reads the source's metadata and the acceleration's state and high-water
 * mark, never a row of the source, and changes nothing. The errors are
 * tm_accel_refresh's before it reads.
 */
int tm_accel_explain(tm_accel *a, const tm_refresh_request *req, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Retention (SPEC C3): deletes rows whose time is older than now_ms minus
 * retention_period, and applies retention_sql, in one commit. *deleted_out
 * (may be NULL) receives the count.
 */
int tm_accel_retention(tm_accel *a, int64_t now_ms, int64_t *deleted_out, tm_error *err)
    TM_WARN_UNUSED;

const tm_dataset_def *tm_accel_def(const tm_accel *a);
/**
 * Replaces the dataset's refresh_sql for the refreshes that start from now on
 * (Spice's PATCH /v1/datasets/{name}/acceleration); it acts as the config's
 * would (A10), is kept in memory only (a restart reads the config again), and
 * a refresh running now keeps the one it started with. Thread-safe.
 * Errors: TM_ENOMEM.
 */
int tm_accel_set_refresh_sql(tm_accel *a, const char *sql, tm_error *err) TM_WARN_UNUSED;
/** The refresh_sql in force (set, else the config's, else NULL), as a copy: tm_free. */
char *tm_accel_refresh_sql(tm_accel *a);
/**
 * Fills o with the engine options of dataset d on db: mode, path, primary
 * key, time column, and on_conflict, whose rules go into oc (caller-owned,
 * must outlive o; o->on_conflict points at it when it holds any).
 */
void tm_accel_engine_options(const tm_dataset_def *d, tm_db *db, tm_engine_options *o, tm_kv *oc);
/**
 * The folder a file-mode DuckDB-engine acceleration of d lives in (which the
 * tm_db must allow), or NULL for memory mode and sqlite. *out: tm_free.
 */
int tm_accel_duck_dir(const tm_dataset_def *d, char **out, tm_error *err) TM_WARN_UNUSED;
/**
 * Fills so with the source options of dataset d (from, params, time columns);
 * relative paths resolve against base_dir. so borrows from d and base_dir.
 */
void tm_accel_source_options(const tm_dataset_def *d, const char *base_dir, tm_source_options *so);
/**
 * The engine, with a reference the caller must release (tm_engine_release),
 * or NULL before the first load created it.
 */
tm_engine *tm_accel_engine(tm_accel *a);
/** Ready to serve: it has an acceleration (opened or loaded), SPEC C1. */
bool tm_accel_ready(tm_accel *a);
/**
 * A read of the acceleration met damage somewhere (a query failed on a
 * checksum; SPEC D5): the next refresh reads all of it first (a full scan,
 * tm_engine_verify) and, if it is damaged, loads the source again into a
 * replacement instead of appending to it. Thread-safe.
 */
void tm_accel_suspect(tm_accel *a, const char *why);
tm_accel_status tm_accel_get_status(tm_accel *a);
void tm_accel_set_status(tm_accel *a, tm_accel_status s);

/** A copy of the state for `tidemark status` and the API. */
typedef struct tm_accel_info {
  tm_accel_status status;
  bool ready;
  bool has_result;
  tm_refresh_result last;       /* the last successful refresh */
  bool has_saved_snapshot;
  int64_t saved_snapshot;
  char last_fallback[64];       /* "" when the last refresh was not a fallback */
  char last_error[TM_ERROR_MESSAGE_MAX]; /* "" after a success */
  int64_t last_error_ms;
  /* Wall-clock ms when the last committed refresh started, from this process's refreshes or
   * the acceleration's state map (it survives restarts in file mode); 0: none known. */
  int64_t last_commit_ms;
} tm_accel_info;

void tm_accel_get_info(tm_accel *a, tm_accel_info *out);

/* State-map keys committed with the rows (B2, B8, B9). */
#define TM_STATE_SNAPSHOT_ID "tidemark.iceberg.snapshot_id"
#define TM_STATE_TABLE_UUID "tidemark.iceberg.table_uuid"
#define TM_STATE_SCHEMA "tidemark.schema"
#define TM_STATE_FALLBACK "tidemark.last_fallback"
/* Wall-clock ms when the last committed refresh started (refresh_on_startup: auto). A refresh
 * that changes nothing commits nothing, so this is the last refresh that changed the rows or
 * the state. */
#define TM_STATE_REFRESHED_AT "tidemark.refreshed_at_ms"

#endif
