/*
 * source.h - a dataset's `from` turned into scans (source layer; SPEC 4).
 *
 * A source is opened from the dataset's `from` and params. describe() learns
 * its schema (the first data file's, for file sets; the current schema, for
 * Iceberg tables) and, for snapshot sources, the table's snapshots. A scan
 * takes a request — a projection, a predicate (time bound, partition bound,
 * refresh_sql filter), a last-modified bound (A7), or for Iceberg "what
 * these snapshots added" — and yields batches of rows that satisfy the
 * predicate, counting files and row groups read and skipped.
 *
 * Backends (file sets over an object store, Iceberg tables) plug in through
 * tm_source_vtable; callers use only the functions below. Nothing here
 * assumes a local file system: every byte is read through the objstore
 * layer.
 */
#ifndef TM_SOURCE_SOURCE_H
#define TM_SOURCE_SOURCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/predicate.h"
#include "util/str.h"

typedef struct tm_source tm_source;
typedef struct tm_scan tm_scan;

/** How to open a source. Views; they must outlive tm_source_open only. */
/*
 * What a source does with a column of a type tidemark cannot read (today:
 * Parquet's nested LIST, MAP and STRUCT columns and the types listed as
 * unsupported in parquet.h), the dataset key unsupported_type_action:
 *   ERROR   the column is in the schema (typed utf8) and reading it fails,
 *           naming the file and the column: a scan that does not project it
 *           (a refresh_sql or a query that selects other columns) reads the rest;
 *   WARN    the column is left out of the schema, logged once per source;
 *   IGNORE  the column is left out of the schema silently;
 *   STRING  a nested column loads as JSON text (utf8); another unreadable
 *           column is as with ERROR.
 */
typedef enum tm_unsupported_action {
  TM_UNSUPPORTED_ERROR = 0,
  TM_UNSUPPORTED_WARN,
  TM_UNSUPPORTED_IGNORE,
  TM_UNSUPPORTED_STRING
} tm_unsupported_action;

typedef struct tm_source_options {
  int version;                   /* TM_SOURCE_OPTIONS_VERSION */
  const char *from;              /* the dataset's `from` */
  const char *name;              /* the dataset's name, for messages */
  const tm_kv *params;           /* connector params (may be NULL) */
  const char *base_dir;          /* relative file paths resolve against it (NULL: cwd) */
  const char *time_column;       /* the dataset's time column, or NULL */
  const char *time_partition_column; /* or NULL */
  bool time_column_is_text;      /* time_format ISO8601: keep it as a string in CSV/JSON */
  tm_unsupported_action unsupported_action; /* a column of a type tidemark cannot read */
  atomic_bool *warned_unsupported; /* optional: `warn` logs once per flag (shared by the
                                      sources opened from one spec), else once per source */
} tm_source_options;

#define TM_SOURCE_OPTIONS_VERSION 1

/** An owned copy of tm_source_options, for sources opened later (federated tables). */
typedef struct tm_source_spec {
  char *from, *name, *base_dir, *time_column, *time_partition_column; /* owned or NULL */
  bool time_column_is_text;
  tm_unsupported_action unsupported_action;
  atomic_bool warned_unsupported; /* the `warn` of the sources opened from it logged */
  tm_kv params;
} tm_source_spec;

/** Deep-copies o into out (initialised by this call; dispose even after an error). */
int tm_source_spec_init(tm_source_spec *out, const tm_source_options *o, tm_error *err)
    TM_WARN_UNUSED;
void tm_source_spec_dispose(tm_source_spec *s);
/** Options that view s (valid while s lives). */
void tm_source_spec_options(const tm_source_spec *s, tm_source_options *out);

/** The name of the file-time pseudo column (SPEC A7). */
#define TM_SOURCE_LAST_MODIFIED "last_modified"

/** One snapshot of a snapshot source (Iceberg), as the refresh layer needs it. */
typedef struct tm_source_snapshot {
  int64_t id;
  bool has_parent;
  int64_t parent_id;
  char *operation;          /* owned: append, replace, overwrite, delete, or NULL */
  int64_t added_data_files; /* from the summary; -1 when unknown */
  int64_t timestamp_ms;
  int64_t sequence_number;
} tm_source_snapshot;

typedef struct tm_source_table {
  bool has_current;
  int64_t current_id;
  char *uuid;                    /* owned, or NULL */
  tm_source_snapshot *snapshots; /* owned */
  size_t n_snapshots;
} tm_source_table;

void tm_source_table_dispose(tm_source_table *t);

/** What a scan reads. */
typedef enum tm_scan_mode {
  TM_SCAN_CURRENT = 0,  /* every row of the current data (deletes applied, B12) */
  TM_SCAN_ADDED_BY,     /* Iceberg: the data files the listed snapshots added, as of them */
  TM_SCAN_CHANGES       /* Iceberg: what changed from changes_from to as_of (SPEC E2) */
} tm_scan_mode;

/*
 * A TM_SCAN_CHANGES scan (refresh_mode: changes, SPEC E1-E4) yields rows
 * with their provenance: every row batch has the dataset's columns followed
 * by TM_PROV_SEQ (the data file's data sequence number), TM_PROV_FILE (its
 * id, tm_iceberg_file_id) and TM_PROV_POS (the row's position in the file),
 * all int64 NOT NULL. Before any row batch it yields delete batches, whose
 * first column is TM_PROV_SEQ: [seq, file] deletes every stored row of those
 * files (removed by the snapshots); [seq, file, pos] deletes those positions
 * (rows a delete file added since removes). Apply the deletes before the
 * rows: a file is never both deleted and inserted by one scan, except a
 * file whose deletes shrank (a delete file rewritten), which is deleted
 * whole and inserted again.
 */
#define TM_PROV_SEQ "_tm_seq"
#define TM_PROV_FILE "_tm_file"
#define TM_PROV_POS "_tm_pos"
#define TM_PROV_COLUMNS 3

typedef struct tm_scan_request {
  int version;                  /* TM_SCAN_REQUEST_VERSION */
  const char *const *columns;   /* projection by name; NULL: every column */
  size_t n_columns;
  const tm_predicate *predicate;/* prunes and filters rows; NULL: none */
  bool has_modified_bound;      /* A7: only files modified after the bound */
  int64_t modified_after_ms;
  bool modified_inclusive;
  tm_scan_mode mode;
  const int64_t *snapshot_ids;  /* TM_SCAN_ADDED_BY */
  size_t n_snapshot_ids;
  bool apply_deletes;           /* Iceberg delete files (full refresh, federated, by time) */
  bool has_as_of;               /* Iceberg TM_SCAN_CURRENT: read this snapshot, not the latest */
  int64_t as_of_snapshot;
  int64_t batch_rows;           /* 0: TM_BATCH_DEFAULT_ROWS */
  bool has_changes_from;        /* TM_SCAN_CHANGES: the saved snapshot; absent: every row */
  int64_t changes_from;
} tm_scan_request;

#define TM_SCAN_REQUEST_VERSION 1
void tm_scan_request_init(tm_scan_request *r);

typedef struct tm_scan_stats {
  int64_t files_total;        /* data files the source has (after listing) */
  int64_t files_read;
  int64_t files_skipped;      /* by partition values, bounds, modification time */
  int64_t row_groups_read;
  int64_t row_groups_skipped; /* by statistics */
  int64_t rows_read;          /* rows decoded */
  int64_t rows_returned;      /* rows that satisfied the predicate */
  uint64_t bytes_read;
} tm_scan_stats;

typedef struct tm_source_vtable {
  int version; /* TM_SOURCE_VTABLE_VERSION */
  /** Learns the schema (and snapshots); may be called again to refresh. */
  int (*describe)(tm_source *s, tm_error *err);
  /** Snapshot sources: the table's snapshots (TM_EUNSUPPORTED otherwise). */
  int (*table)(tm_source *s, tm_source_table *out, tm_error *err);
  int (*scan)(tm_source *s, const tm_scan_request *req, tm_scan **out, tm_error *err);
  void (*free)(tm_source *s);
} tm_source_vtable;

#define TM_SOURCE_VTABLE_VERSION 1

struct tm_source {
  const tm_source_vtable *vt;
  char *name;             /* owned: the dataset name */
  char *from;             /* owned */
  tm_schema schema;       /* owned: valid after describe */
  bool described;
  bool follows_snapshots; /* Iceberg */
  bool has_file_times;    /* file sets: last_modified is known per file */
};

typedef struct tm_scan_vtable {
  int (*next)(tm_scan *s, tm_batch *out, tm_error *err);
  void (*free)(tm_scan *s);
} tm_scan_vtable;

struct tm_scan {
  const tm_scan_vtable *vt;
  tm_scan_stats stats;
};

/**
 * Checks the connector params of a source named `from` as opening it does
 * (so that `tidemark config check` refuses what a refresh would): TM_OK, or
 * TM_EINVALID naming the param, why, and the allowed ones. Params of
 * connectors that check them only when their stores open (s3_*) are left to
 * that.
 */
int tm_source_check_params(const char *from, const tm_kv *params, tm_error *err) TM_WARN_UNUSED;

/**
 * Opens the source named by opts->from. Nothing is read yet.
 * TM_EINVALID for a `from` no backend takes. *out: tm_source_free.
 */
int tm_source_open(tm_source **out, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;
void tm_source_free(tm_source *s);
/**
 * Learns (or relearns) the schema. TM_EUNAVAILABLE when the source cannot be
 * reached (a missing folder, a catalog that is down: SPEC D3); TM_ENOTFOUND
 * when it exists but holds no data to learn a schema from.
 */
int tm_source_describe(tm_source *s, tm_error *err) TM_WARN_UNUSED;
/** The schema; valid after a successful describe, until the next. */
const tm_schema *tm_source_schema(const tm_source *s);
int tm_source_table_info(tm_source *s, tm_source_table *out, tm_error *err) TM_WARN_UNUSED;
/** Starts a scan; *out: tm_scan_free. Batches have the projection's columns. */
int tm_source_scan(tm_source *s, const tm_scan_request *req, tm_scan **out, tm_error *err)
    TM_WARN_UNUSED;
/** The next batch of matching rows (never empty); TM_ITEROVER at the end. */
int tm_scan_next(tm_scan *s, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
const tm_scan_stats *tm_scan_get_stats(const tm_scan *s);
void tm_scan_free(tm_scan *s);
/**
 * Wraps *scan (taken) in one that decodes the next batches on a worker
 * thread while the caller works on the current one (readahead.c). The
 * batches, their order, the stats as of each batch and the first error are
 * the ones *scan would give. Without a thread (none can be started, or an
 * allocation failure is set up, tm_alloc_fault_armed) *scan stays as it is. Errors: only
 * TM_ENOMEM, and then *scan stays too.
 */
int tm_scan_readahead(tm_scan **scan, tm_error *err) TM_WARN_UNUSED;

/* Base helpers for backends. */
int tm_source__init(tm_source *s, const tm_source_vtable *vt, const tm_source_options *opts,
                    tm_error *err) TM_WARN_UNUSED;
void tm_source__dispose(tm_source *s);

#endif
