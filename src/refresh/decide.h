/*
 * decide.h - what one refresh reads (refresh layer; SPEC A2, A10, A11, B1-B11).
 *
 * tm_refresh_decide is a pure function: from the dataset definition, the
 * engine's conflict rule, the request, the state saved with the acceleration
 * and the source's snapshot list, it decides to read everything, to read by
 * time, to read what a list of snapshots added, or nothing — and whether
 * that is a fallback, and which snapshot to save afterwards. It does no I/O;
 * every rule of SPEC B1-B11 is in decide.c, in the order issue 7 gives, and
 * each has a unit test named after its ID.
 */
#ifndef TM_REFRESH_DECIDE_H
#define TM_REFRESH_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "refresh/dataset.h"
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

typedef struct tm_decide_input {
  const tm_dataset_def *def;
  bool engine_newest_by_time; /* cayenne's conflict rule (A8) */
  bool full;                  /* refresh_mode full, or a one-off full refresh */
  bool one_off_sql;           /* a one-off refresh with its own refresh_sql (A10, B11) */
  bool computed_columns;      /* the dataset has computed columns (B11) */
  tm_table_info table;
  tm_saved_snapshot saved;
} tm_decide_input;

typedef enum tm_read_kind {
  TM_READ_FULL = 0,  /* replace everything with the source's contents (A11) */
  TM_READ_BY_TIME,   /* rows above the high-water mark, less the overlap (A2, A3) */
  TM_READ_SNAPSHOTS, /* the data files the listed snapshots added (B2, B4) */
  TM_READ_NOTHING    /* no new snapshot (B3) */
} tm_read_kind;

typedef enum tm_fallback {
  TM_FALLBACK_NONE = 0,
  TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT,
  TM_FALLBACK_TABLE_REPLACED,
  TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR,
  TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY
} tm_fallback;

typedef enum tm_snapshot_rule {
  TM_SNAP_SKIP = 0,             /* replace, delete, or no added data file */
  TM_SNAP_ADDED_FILES,          /* append: the files it added, as of it */
  TM_SNAP_ADDED_FILES_BY_KEY    /* overwrite on keyed cayenne: added files, newest per key */
} tm_snapshot_rule;

typedef struct tm_snapshot_step {
  int64_t id;
  const char *operation; /* view into the input's snapshot list */
  tm_snapshot_rule rule;
} tm_snapshot_step;

typedef struct tm_decision {
  tm_read_kind kind;
  tm_fallback fallback;
  const char *why;          /* static: a short reason for logs */
  tm_snapshot_step *steps;  /* owned (TM_READ_SNAPSHOTS): oldest first */
  size_t n_steps;
  bool save_snapshot;       /* commit snapshot_to_save with the rows */
  int64_t snapshot_to_save;
} tm_decision;

/** Decides. *out is owned by the caller: tm_decision_dispose. */
int tm_refresh_decide(const tm_decide_input *in, tm_decision *out, tm_error *err)
    TM_WARN_UNUSED;
void tm_decision_dispose(tm_decision *d);

/** "table_replaced", ... ("" for none): the metric label and log text (B6). */
const char *tm_fallback_name(tm_fallback f);
const char *tm_read_kind_name(tm_read_kind k); /* "full", "time", "snapshots", "nothing" */

/**
 * Whether snapshot `id` is `current` or one of its ancestors by parent id,
 * within the listed snapshots (a broken chain is "not an ancestor").
 */
bool tm_snapshot_is_ancestor(const tm_snapshot_ref *snaps, size_t n, int64_t current, int64_t id);

#endif
