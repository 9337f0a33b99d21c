/*
 * read.h - reading the rows of an Iceberg table: Parquet data files in the
 * table's schema with position and equality deletes applied (format
 * layer; SPEC B12, B13, B14).
 *
 * Columns are matched by Parquet field id. A column a data file lacks reads
 * as its identity-partition value when the file's partition has one, else
 * as its "initial-default", else NULL (schema evolution: added columns);
 * renamed and reordered columns follow their ids. Files written without
 * field ids are matched through the table's schema.name-mapping.default,
 * and by column name when the table has no mapping. Values are converted to
 * the table's type (int -> long, float -> double, wider decimals, timestamp
 * units). Nested columns (struct, list, map) read as NULL for now: the
 * Parquet reader cannot decode nested columns yet.
 *
 * Deletes (when not skipped): a position delete applies to the rows of the
 * file whose normalised path equals its file_path (the table's location
 * remapping on both sides, so hdfs:// inside a delete file matches
 * /test-warehouse/... in a manifest; NULL paths are ignored); an equality
 * delete removes rows whose values equal a delete row on every equality id
 * (NULL equals NULL). Decoded delete files are cached for the whole read,
 * so a delete file that covers many data files is read once.
 *
 * Pruning: row groups are skipped with the filter and Parquet statistics;
 * with filter_rows the remaining rows are filtered too. Stats count files,
 * row groups and rows read, skipped and deleted.
 */
#ifndef TM_FORMAT_ICEBERG_READ_H
#define TM_FORMAT_ICEBERG_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/iceberg/iceberg.h"
#include "format/predicate.h"

typedef struct tm_iceberg_read_options {
  int version;                 /* TM_ICEBERG_READ_OPTIONS_VERSION */
  const char *const *columns;  /* projection by name in the read schema; NULL: every column */
  size_t n_columns;
  const tm_predicate *filter;  /* prunes row groups; with filter_rows, rows too */
  bool filter_rows;            /* filter columns must then be in the projection */
  bool skip_deletes;           /* rows as written, without the tasks' delete files */
  int64_t batch_rows;          /* 0: TM_BATCH_DEFAULT_ROWS */
  bool with_positions;         /* add "_pos" (int64): each row's position in its data file */
  bool nested_as_json;         /* nested columns read as JSON text; else projecting one whose
                                  data file holds it fails (TM_EUNSUPPORTED) */
} tm_iceberg_read_options;

#define TM_ICEBERG_READ_OPTIONS_VERSION 1
#define TM_ICEBERG_READ_OPTIONS_INIT \
  {TM_ICEBERG_READ_OPTIONS_VERSION, NULL, 0, NULL, false, false, 0, false, false}
#define TM_ICEBERG_POS_COLUMN "_pos"

typedef struct tm_iceberg_read_stats {
  int64_t data_files_read;
  int64_t delete_files_read;
  int64_t row_groups_read;
  int64_t row_groups_skipped;
  int64_t rows_read;     /* rows decoded from data files */
  int64_t rows_deleted;  /* removed by position or equality deletes */
  int64_t rows_filtered; /* removed by the filter (filter_rows) */
  int64_t rows_returned;
  uint64_t bytes_read;   /* data and delete file bytes */
} tm_iceberg_read_stats;

typedef struct tm_iceberg_rows tm_iceberg_rows;

/**
 * Reads the rows of a planned scan (in scan->schema), one data file after
 * the other. t and scan must outlive the reader. Caller owns *out
 * (tm_iceberg_rows_free). TM_EINVALID for an unknown projected column,
 * TM_EUNSUPPORTED for a file format other than Parquet.
 */
int tm_iceberg_rows_open(tm_iceberg_rows **out, const tm_iceberg_table *t,
                         const tm_iceberg_scan *scan, const tm_iceberg_read_options *opts,
                         tm_error *err) TM_WARN_UNUSED;
/**
 * Reads the given data files (e.g. what a snapshot added) in schema, with no
 * delete files: rows as they were committed (SPEC B4, B12). files and their
 * owner must outlive the reader.
 */
int tm_iceberg_rows_open_files(tm_iceberg_rows **out, const tm_iceberg_table *t,
                               const tm_iceberg_schema *schema,
                               const tm_iceberg_data_file *const *files, size_t n_files,
                               const tm_iceberg_read_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/** The schema of the batches (valid while r lives). */
const tm_schema *tm_iceberg_rows_schema(const tm_iceberg_rows *r);
/**
 * The next non-empty batch into out (empty on entry). TM_ITEROVER at the
 * end. Errors name the data or delete file.
 */
int tm_iceberg_rows_next(tm_iceberg_rows *r, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_rows_stats(const tm_iceberg_rows *r, tm_iceberg_read_stats *out);

/**
 * The row positions of task's data file that its position delete files and
 * deletion vector delete, sorted and without duplicates, read from the delete
 * files alone (the data file is not opened); its equality delete files are
 * not consulted. Caller owns *out (tm_free; NULL when none). stats (may be
 * NULL) is added the delete files and bytes read. Errors name the file.
 */
int tm_iceberg_task_positions(const tm_iceberg_table *t, const tm_iceberg_scan_task *task,
                              int64_t **out, size_t *n_out, tm_iceberg_read_stats *stats,
                              tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_rows_free(tm_iceberg_rows *r);

/**
 * The columnar schema of an Iceberg schema's top-level fields (names,
 * types, nullability, field ids), into an initialised, empty out.
 */
int tm_iceberg_schema_to_tm(const tm_iceberg_schema *s, tm_schema *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
