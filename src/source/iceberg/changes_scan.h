/*
 * changes_scan.h - what changed in an Iceberg table between two snapshots,
 * as the batches of a TM_SCAN_CHANGES scan (source layer; SPEC E1-E4; the
 * batches are described in source.h).
 */
#ifndef TM_SOURCE_ICEBERG_CHANGES_SCAN_H
#define TM_SOURCE_ICEBERG_CHANGES_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/iceberg/iceberg.h"
#include "source/source.h"

typedef struct tm_changes_scan tm_changes_scan;

typedef struct tm_changes_stats {
  int64_t files_added, files_removed, files_changed, files_reinserted;
  int64_t files_read, delete_files_read, row_groups_read, row_groups_skipped, rows_read;
  uint64_t bytes_read;
} tm_changes_stats;

/**
 * Plans the changes from from_id (has_from false: from nothing, every live
 * row) to to_id (< 0: the current snapshot). names: the dataset's columns
 * (borrowed; they and t must outlive the scan). TM_ENOTFOUND when a
 * snapshot or a file it needs is gone (expired).
 */
int tm_changes_scan_open(tm_changes_scan **out, const tm_iceberg_table *t, bool has_from,
                         int64_t from_id, int64_t to_id, const char *const *names, size_t n_names,
                         bool nested_as_json, int64_t batch_rows, tm_error *err) TM_WARN_UNUSED;
/** The next delete or row batch (source.h); TM_ITEROVER at the end. */
int tm_changes_scan_next(tm_changes_scan *cs, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
const tm_changes_stats *tm_changes_scan_stats(const tm_changes_scan *cs);
void tm_changes_scan_free(tm_changes_scan *cs);

#endif
