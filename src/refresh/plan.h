/*
 * plan.h - what one refresh does, as a value (refresh layer; SPEC A2-A6,
 * A9-A11, B1-B12).
 *
 * tm_refresh_plan is a pure function. From the dataset definition, the
 * engine's conflict rule, the request, the state saved with the
 * acceleration, the source's schema and snapshot list and the high-water
 * mark, it decides everything a refresh does before it reads a row: what it
 * reads (everything, rows above a time bound, what a list of snapshots
 * added, or nothing), with which predicate, whether a re-read window is
 * de-duplicated, which transaction it opens, which state it commits, whether
 * a commit that changes nothing may be skipped, and whether it warns. It does
 * no I/O; refresh/run.c only carries the plan out. Every rule is in
 * plan.c, and tests/unit/refresh/test_plan.c has a row per SPEC ID.
 *
 * The high-water mark costs a read of the acceleration, so the input may
 * leave it unknown: when the plan reads by time and needs it,
 * needs_high_water_mark is set and the caller plans again with it.
 */
#ifndef TM_REFRESH_PLAN_H
#define TM_REFRESH_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "format/predicate.h"
#include "refresh/dataset.h"
#include "refresh/timebound.h"
#include "source/source.h"
#include "util/buf.h"
#include "util/error.h"

/** One snapshot of a table's metadata, as the decision needs it. */
typedef struct tm_snapshot_ref {
  int64_t id;
  bool has_parent;
  int64_t parent_id;
  const char *operation;    /* view: append, replace, overwrite, delete (or NULL) */
  int64_t added_data_files; /* from the summary; -1 when unknown */
} tm_snapshot_ref;

/** What the source knows about its table (Iceberg); views valid during the call. */
typedef struct tm_table_info {
  bool follows_snapshots;         /* the source is a snapshot source (Iceberg) */
  bool has_current;               /* the table has a current snapshot */
  int64_t current_id;
  const char *uuid;               /* table uuid, or NULL */
  const tm_snapshot_ref *snapshots; /* every snapshot the metadata lists */
  size_t n_snapshots;
} tm_table_info;

/** The state committed with the acceleration (B2, B8). */
typedef struct tm_saved_snapshot {
  bool present;
  int64_t id;
  const char *uuid; /* view, or NULL */
} tm_saved_snapshot;

typedef enum tm_read_kind {
  TM_READ_FULL = 0,  /* replace everything with the source's contents (A11) */
  TM_READ_BY_TIME,   /* rows above the high-water mark, less the overlap (A2, A3) */
  TM_READ_SNAPSHOTS, /* the data files the listed snapshots added (B2, B4) */
  TM_READ_NOTHING,   /* no new snapshot (B3) */
  TM_READ_CHANGES    /* refresh_mode changes: what changed since the saved snapshot (E2) */
} tm_read_kind;

typedef enum tm_fallback {
  TM_FALLBACK_NONE = 0,
  TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT,
  TM_FALLBACK_TABLE_REPLACED,
  TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR,
  TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY,
  TM_FALLBACK_FILES_EXPIRED /* changes: the saved snapshot or a file it needs was expired (E5) */
} tm_fallback;

typedef enum tm_snapshot_rule {
  TM_SNAP_SKIP = 0,             /* replace, delete, or no added data file */
  TM_SNAP_ADDED_FILES,          /* append: the files it added, as of it */
  TM_SNAP_ADDED_FILES_BY_KEY,   /* overwrite on keyed cayenne: added files, newest per key */
  TM_SNAP_CHANGES               /* refresh_mode changes: everything it changed (E2) */
} tm_snapshot_rule;

typedef struct tm_snapshot_step {
  int64_t id;
  const char *operation; /* view into the input's snapshot list */
  tm_snapshot_rule rule;
} tm_snapshot_step;

/** What the input knows of the high-water mark (A2). */
typedef enum tm_hwm_state {
  TM_HWM_UNKNOWN = 0, /* not read yet: a plan by time asks for it */
  TM_HWM_EMPTY,       /* the acceleration holds no row with a time */
  TM_HWM_KNOWN        /* hwm holds max(time_column) */
} tm_hwm_state;

typedef struct tm_plan_input {
  const tm_dataset_def *def;
  tm_engine_rule conflict_rule; /* the engine's rule (A8): newest-by-time follows overwrites */
  bool has_engine;            /* rows are stored already (they may be replaced, B9) */
  bool full;                  /* a one-off full refresh (refresh_mode full is read from def) */
  bool one_off_sql;           /* a one-off refresh with its own refresh_sql (A10, B11) */
  bool through_sql;           /* rows come through refresh_sql: the partition column may be gone */
  const tm_schema *schema;    /* the rows' schema (the source's, or refresh_sql's) */
  tm_table_info table;
  tm_saved_snapshot saved;
  tm_hwm_state hwm_state;
  tm_instant hwm;             /* TM_HWM_KNOWN */
  tm_fallback last_fallback;  /* the last fallback logged (B6 warns when it changes) */
  int64_t now_ms;             /* the clock for refresh_data_window (Unix ms) */
  bool files_expired;         /* changes: a read of the changes met a file that is gone (E5) */
} tm_plan_input;

typedef struct tm_refresh_plan {
  tm_read_kind kind;
  tm_fallback fallback;
  const char *why;           /* static: a short reason for logs */
  tm_snapshot_step *steps;   /* owned (TM_READ_SNAPSHOTS): oldest first */
  size_t n_steps;
  bool has_time_column;      /* tc is the dataset's time column in the rows' schema */
  tm_time_column tc;         /* its name is a view into the def */
  bool needs_high_water_mark;/* by time with an unknown mark: read it, plan again */

  /* The read. */
  bool writes;               /* a transaction is opened (every kind but NOTHING) */
  tm_txn_kind txn;           /* REPLACE_ALL for full (A11) */
  bool reads;                /* the source is scanned */
  tm_scan_mode scan_mode;
  bool apply_deletes;        /* B12: full and by time apply deletes; snapshots never do */
  bool has_as_of;            /* read the snapshot the state will name (B10) */
  int64_t as_of_snapshot;
  int64_t *snapshot_ids;     /* owned: the steps whose added files are read */
  bool provenance;           /* refresh_mode changes: rows carry _tm_seq, _tm_file, _tm_pos (E4) */
  bool has_changes_from;     /* TM_READ_CHANGES: the changes since this snapshot (the saved one) */
  int64_t changes_from;
  size_t n_snapshot_ids;
  tm_time_bound bound;       /* the exact row filter (A2-A5); inactive: none */
  tm_predicate predicate;    /* owned: bound and partition terms that prune (A2, A6) */
  bool dedup;                /* A3: keyless re-read window, de-duplicated against stored rows */

  /* The commit. */
  bool save_snapshot;        /* the state names snapshot_to_save (B2, B8) */
  int64_t snapshot_to_save;
  const char *save_uuid;     /* view into the input: the table uuid to save, or NULL */
  bool skip_unchanged_commit;/* no rows and an unchanged state map: commit nothing */
  bool warn_fallback;        /* B6: log the fallback (its reason changed) */
} tm_refresh_plan;

/** Plans. *out is owned by the caller: tm_refresh_plan_dispose. */
int tm_refresh_plan_make(const tm_plan_input *in, tm_refresh_plan *out, tm_error *err)
    TM_WARN_UNUSED;
void tm_refresh_plan_dispose(tm_refresh_plan *p);

/** The scan request for the plan's read; it points into p. */
void tm_refresh_plan_scan_request(const tm_refresh_plan *p, tm_scan_request *out);

/** The plan as text, one "key: value" line each (`tidemark refresh --explain`). */
int tm_refresh_plan_describe(const tm_refresh_plan *p, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/**
 * A source that exists but holds no data yet: true when an append refresh of
 * rows already stored just reads nothing; false when the refresh fails
 * (there is nothing to build the acceleration from, or a full refresh would
 * replace the rows with nothing it can describe).
 */
bool tm_refresh_plan_empty_source_reads_nothing(const tm_dataset_def *d, bool full, bool has_engine);

/**
 * SPEC A9: a keyed dataset on an arrival-order engine, whose key lacks the
 * time column and which has no overlap, warns once when it loads.
 */
bool tm_refresh_plan_warns_late_updates(const tm_dataset_def *d, tm_engine_rule rule);

/** "table_replaced", ... ("" for none): the metric label and log text (B6). */
const char *tm_fallback_name(tm_fallback f);
const char *tm_read_kind_name(tm_read_kind k); /* "full", "time", "snapshots", "nothing", "changes" */

/**
 * Whether snapshot `id` is `current` or one of its ancestors by parent id,
 * within the listed snapshots (a broken chain is "not an ancestor").
 */
bool tm_snapshot_is_ancestor(const tm_snapshot_ref *snaps, size_t n, int64_t current, int64_t id);

#endif
