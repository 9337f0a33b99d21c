/*
 * writer.h - authoring Iceberg tables in a file-system warehouse (format
 * layer).
 *
 * Everything is written through the table's tm_iceberg_io (write with
 * exclusive create, atomic replace, remove), never the file system directly.
 * What we write follows the Iceberg spec v2: manifests and manifest lists
 * with the spec's Avro schemas and field ids (deflate), snapshot summaries,
 * sequence numbers inherited by ADDED entries, refs.main, snapshot-log and
 * metadata-log.
 *
 * Commit protocol (file-system tables): the new metadata is written as
 * metadata/v<N+1>.metadata.json with an exclusive create, so of two
 * concurrent writers based on vN exactly one wins and the other gets
 * TM_ECONFLICT (nothing it wrote is referenced); then metadata/
 * version-hint.text is replaced atomically. Readers that find a stale hint
 * fall back to listing, so a crash between the two steps loses nothing.
 *
 * A tm_iceberg_table passed to these functions is the base of the commit;
 * after a successful commit it is stale and should be reopened.
 */
#ifndef TM_FORMAT_ICEBERG_WRITER_H
#define TM_FORMAT_ICEBERG_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/schema.h"
#include "format/iceberg/iceberg.h"
#include "util/error.h"
#include "util/str.h"

/* ---- creating tables ------------------------------------------------------ */

typedef struct tm_iceberg_create_options {
  int version;                /* TM_ICEBERG_CREATE_OPTIONS_VERSION */
  const char *location;       /* written as "location"; default file://<table_root> */
  const char *schema_json;    /* Iceberg schema JSON, nested types too; ids (field "id",
                               * "element-id", "key-id", "value-id") optional: missing
                               * ones are assigned above the highest given */
  const tm_schema *schema;    /* or columns (e.g. a Parquet file's), when no JSON; nested
                               * STRUCT/LIST/MAP become Iceberg struct/list/map, fresh ids
                               * at every level, nullability kept */
  const char *partition;      /* "day(ts), bucket[16](id), region"; NULL: unpartitioned */
  const tm_kv *properties;    /* table properties; may be NULL */
  bool replace;               /* replace-table: a new uuid over an existing table */
  int format_version;         /* create: 2 or 3 (row lineage, deletion vectors); 0 means 2 */
} tm_iceberg_create_options;

#define TM_ICEBERG_CREATE_OPTIONS_VERSION 1
#define TM_ICEBERG_CREATE_OPTIONS_INIT \
  {TM_ICEBERG_CREATE_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, false, 0}

/**
 * Creates a v2 (or, with format_version 3, a v3: next-row-id 0) table at
 * table_root (metadata/v1.metadata.json and the
 * version hint), or with opts->replace, commits a new metadata version with
 * a new table-uuid, the given (or the old) schema and spec, and no current
 * snapshot. TM_ECONFLICT when a table exists (create) or a concurrent commit
 * won (replace); TM_EINVALID for a bad schema or partition text.
 */
int tm_iceberg_create_table(tm_iceberg_io *io, const char *table_root,
                            const tm_iceberg_create_options *opts, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Parses the compact partition text: comma-separated items, each a column
 * name (identity) or transform(column) with transform one of identity,
 * year, month, day, hour, void, bucket[N], truncate[W] (also bucket(N, col)
 * and truncate(W, col)). A column may be a struct member by its dotted path
 * ("payload.region"); the source must be a primitive not inside a list or
 * map (Iceberg spec), else TM_EINVALID naming the path. A member's
 * partition field is named after its path with '_' for '.'
 * ("payload_region"). Writes the spec "fields" JSON array into out.
 */
int tm_iceberg_partition_text_to_json(const char *text, const tm_iceberg_schema *schema,
                                      int32_t first_field_id, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Schema evolution (evolve.c): commits schema_json as the table's new current
 * schema (a new schema id; no snapshot). It lists the columns as they should
 * be: members that stay keep their "id" (renamed, moved, promoted, made
 * optional; a list's element and a map's key and value keep theirs when left
 * out), new ones have none (fresh ids above last-column-id), members left out
 * are dropped. TM_EINVALID naming the field for: an id the current schema
 * lacks, a type change Iceberg does not allow (int -> long, float -> double,
 * decimal(P,S) -> decimal(P2,S) with P2 >= P; a struct, list or map keeps its
 * kind), optional -> required, a new required field without an
 * "initial-default", dropping a source of the default partition spec, of the
 * default sort order or an identifier field. TM_ECONFLICT when a concurrent
 * commit won.
 */
int tm_iceberg_update_schema(tm_iceberg_table *t, const char *schema_json, tm_error *err)
    TM_WARN_UNUSED;

/* ---- snapshots ------------------------------------------------------------ */

typedef struct tm_iceberg_commit tm_iceberg_commit;

/**
 * Starts a snapshot commit on base's current snapshot. operation is the
 * summary operation: "append", "overwrite", "delete" or "replace". The
 * caller owns *out (tm_iceberg_commit_free).
 */
int tm_iceberg_commit_begin(tm_iceberg_commit **out, tm_iceberg_table *base,
                            const char *operation, tm_error *err) TM_WARN_UNUSED;
/** The id the new snapshot will have. */
int64_t tm_iceberg_commit_snapshot_id(const tm_iceberg_commit *c);
/**
 * Adds a data or delete file (copied): path as it goes into metadata,
 * format, content, record_count, file_size, partition values typed as the
 * default spec's results, column stats, equality ids, split offsets.
 * Status, snapshot id and sequence numbers are assigned by the commit.
 */
int tm_iceberg_commit_add_file(tm_iceberg_commit *c, const tm_iceberg_data_file *f,
                               tm_error *err) TM_WARN_UNUSED;
/**
 * Removes a live data or delete file by its metadata path. At finish,
 * TM_ECONFLICT when the file is no longer live (a concurrent change).
 */
int tm_iceberg_commit_remove_file(tm_iceberg_commit *c, const char *path, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Removes one live deletion vector: the entry of the Puffin file `path`
 * whose content_offset is `offset` (a Puffin file may hold the vectors of
 * other data files, which stay). TM_ECONFLICT at finish when it is gone.
 */
int tm_iceberg_commit_remove_dv(tm_iceberg_commit *c, const char *path, int64_t offset,
                                tm_error *err) TM_WARN_UNUSED;
/** Adds a summary entry (copied), e.g. "engine-name". */
int tm_iceberg_commit_set_summary(tm_iceberg_commit *c, const char *key, const char *value,
                                  tm_error *err) TM_WARN_UNUSED;
/**
 * Writes the new manifest(s), the manifest list and the metadata file, then
 * the version hint. *snapshot_id_out (may be NULL) receives the new id.
 * TM_ECONFLICT when another commit won the race.
 */
int tm_iceberg_commit_finish(tm_iceberg_commit *c, int64_t *snapshot_id_out, tm_error *err)
    TM_WARN_UNUSED;
void tm_iceberg_commit_free(tm_iceberg_commit *c);

/* ---- data files ------------------------------------------------------------ */

typedef struct tm_iceberg_data_writer_options {
  int version;                  /* TM_ICEBERG_DATA_WRITER_OPTIONS_VERSION */
  int content;                  /* tm_iceberg_content; default DATA */
  const int32_t *equality_ids;  /* EQUALITY_DELETES: the columns, by field id */
  size_t n_equality_ids;
  const tm_value *partition;    /* delete files: their partition (spec_id's result types) */
  int32_t spec_id;              /* delete files: the spec of partition */
  int64_t target_file_bytes;    /* roll to a new file past this size; 0: 64 MiB */
} tm_iceberg_data_writer_options;

#define TM_ICEBERG_DATA_WRITER_OPTIONS_VERSION 1
#define TM_ICEBERG_DATA_WRITER_OPTIONS_INIT \
  {TM_ICEBERG_DATA_WRITER_OPTIONS_VERSION, TM_ICEBERG_CONTENT_DATA, NULL, 0, NULL, 0, 0}

typedef struct tm_iceberg_data_writer tm_iceberg_data_writer;

/**
 * Writes Parquet data or delete files under the table's data/ folder (with
 * Iceberg field ids), split by the default spec's partitions for data, and
 * describes them (metrics: value, null and NaN counts, column sizes, lower
 * and upper bounds, split offsets) for tm_iceberg_commit_add_file. Batches
 * are matched to the columns by name (ASCII case-insensitive) and converted
 * to the table's types; missing nullable columns are NULL. Data files hold
 * the table's columns; position delete files file_path and pos; equality
 * delete files the equality columns. Caller owns *out
 * (tm_iceberg_data_writer_free).
 *
 * Nested columns (STRUCT, LIST, MAP at any depth; issue 16): an input
 * column of the table's shape (kinds and member counts all the way down) is
 * written under the table's type (member names, requiredness; leaves of
 * other types converted as flat columns are), with the table's field id on
 * every member's Parquet element; another shape, or a leaf value that does
 * not convert, is TM_EINVALID naming the column and both types, a NULL in a
 * required member under a present parent TM_EINVALID naming the member.
 * Metrics are keyed by leaf field ids: leaves reached through structs only
 * get them all, leaves inside a list or map their column size only. A
 * partition source inside structs takes the member's value, NULL when an
 * enclosing struct is NULL.
 */
int tm_iceberg_data_writer_new(tm_iceberg_data_writer **out, const tm_iceberg_table *t,
                               const tm_iceberg_data_writer_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/** The columns written (names, types, field ids); valid while w lives. */
const tm_schema *tm_iceberg_data_writer_schema(const tm_iceberg_data_writer *w);
int tm_iceberg_data_writer_write(tm_iceberg_data_writer *w, const tm_batch *b, tm_error *err)
    TM_WARN_UNUSED;
/** Closes and publishes the open files (exclusive creates through the io). */
int tm_iceberg_data_writer_finish(tm_iceberg_data_writer *w, tm_error *err) TM_WARN_UNUSED;
/** The files written so far; valid while w lives. */
size_t tm_iceberg_data_writer_files(const tm_iceberg_data_writer *w,
                                    const tm_iceberg_data_file **out);
void tm_iceberg_data_writer_free(tm_iceberg_data_writer *w);

/* ---- table operations ------------------------------------------------------ */

/** Supplies input rows: TM_OK with a batch in out, TM_ITEROVER at the end. */
typedef int (*tm_iceberg_batch_fn)(void *payload, tm_batch *out, tm_error *err);

typedef struct tm_iceberg_op_options {
  int version;                /* TM_ICEBERG_OP_OPTIONS_VERSION */
  int64_t target_file_bytes;  /* data files roll past this size; 0: 64 MiB */
} tm_iceberg_op_options;

#define TM_ICEBERG_OP_OPTIONS_VERSION 1
#define TM_ICEBERG_OP_OPTIONS_INIT {TM_ICEBERG_OP_OPTIONS_VERSION, 0}

typedef struct tm_iceberg_op_result {
  int64_t snapshot_id;        /* -1 when there was nothing to commit */
  int64_t data_files_added;
  int64_t delete_files_added;
  int64_t files_removed;
  int64_t rows_added;         /* rows in the data files added */
  int64_t rows_deleted;       /* rows removed (deleted, or not rewritten) */
} tm_iceberg_op_result;

/** One "append" snapshot of the rows next supplies (no snapshot for no rows). */
int tm_iceberg_append(tm_iceberg_table *t, tm_iceberg_batch_fn next, void *payload,
                      const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                      tm_error *err) TM_WARN_UNUSED;
/**
 * Appends Parquet (*.parquet) or CSV (*.csv, with a header row, typed by the
 * table's schema) files, opened through the table's io, in one "append"
 * snapshot. Columns are matched by name.
 */
int tm_iceberg_append_files(tm_iceberg_table *t, const char *const *paths, size_t n_paths,
                            const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                            tm_error *err) TM_WARN_UNUSED;
/**
 * One "overwrite" snapshot: the live rows matching where are removed (files
 * whose rows all match are dropped, others rewritten without the matching
 * rows, deletes applied) and the given files are added.
 */
int tm_iceberg_overwrite(tm_iceberg_table *t, const tm_predicate *where,
                         const char *const *paths, size_t n_paths,
                         const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                         tm_error *err) TM_WARN_UNUSED;

typedef enum tm_iceberg_delete_mode {
  TM_ICEBERG_DELETE_POSITION = 0, /* position delete files (merge-on-read) */
  TM_ICEBERG_DELETE_EQUALITY,     /* equality delete files on given columns */
  TM_ICEBERG_DELETE_COPY_ON_WRITE /* rewrite the files without the rows */
} tm_iceberg_delete_mode;

/**
 * One "delete" snapshot removing the live rows matching where: whole files
 * whose rows all match are dropped; otherwise position delete files (one per
 * partition), equality delete files with the distinct values of eq_columns
 * of the matching rows (every row with those values is deleted), or
 * rewritten files. No snapshot when nothing matches.
 */
int tm_iceberg_delete_where(tm_iceberg_table *t, const tm_predicate *where,
                            tm_iceberg_delete_mode mode, const char *const *eq_columns,
                            size_t n_eq_columns, const tm_iceberg_op_options *opts,
                            tm_iceberg_op_result *res, tm_error *err) TM_WARN_UNUSED;
/**
 * A Flink-style upsert in one "overwrite" snapshot: the rows of the given
 * Parquet/CSV files are added as data files, and an equality delete file
 * (per partition written) on eq_columns holds the key values of those rows.
 * The delete file has the snapshot's data sequence number, so it removes
 * older rows with those keys and never the rows added with it (Iceberg
 * spec: an equality delete applies to data files with a lower data
 * sequence number). On a partitioned table every partition source column
 * must be a key column (a key's older row is then in the same partition),
 * as Flink requires; otherwise TM_EINVALID naming the column. Needs format
 * v2 or later. No snapshot when the files hold no rows.
 */
int tm_iceberg_upsert_files(tm_iceberg_table *t, const char *const *paths, size_t n_paths,
                            const char *const *eq_columns, size_t n_eq_columns,
                            const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                            tm_error *err) TM_WARN_UNUSED;
/**
 * One "replace" snapshot rewriting the live rows (deletes applied) into as
 * few data files as the target size allows, per partition of the default
 * spec, and dropping every delete file: the same rows, fewer files. No
 * snapshot when the table is already one file per partition without deletes.
 */
int tm_iceberg_compact(tm_iceberg_table *t, const tm_iceberg_op_options *opts,
                       tm_iceberg_op_result *res, tm_error *err) TM_WARN_UNUSED;

/* ---- metadata-only commits ------------------------------------------------ */

/**
 * Makes snapshot_id, which must be an ancestor of the current snapshot, the
 * current one (refs.main and snapshot-log follow). Later commits grow a new
 * line of history from it. TM_EINVALID when it is not an ancestor.
 */
int tm_iceberg_rollback(tm_iceberg_table *base, int64_t snapshot_id, tm_error *err)
    TM_WARN_UNUSED;

typedef struct tm_iceberg_expire_result {
  int64_t snapshots_expired;
  int64_t files_deleted; /* manifest lists, manifests, data and delete files */
} tm_iceberg_expire_result;

/**
 * Expires snapshots older than older_than_ms (except the current snapshot
 * and snapshots that refs name), commits the new metadata, then deletes the
 * manifest lists, manifests and data files that no remaining snapshot
 * reaches (through io->remove; files outside the table root are kept).
 */
int tm_iceberg_expire(tm_iceberg_table *base, int64_t older_than_ms,
                      tm_iceberg_expire_result *out, tm_error *err) TM_WARN_UNUSED;

/* ---- helpers ------------------------------------------------------------------ */

/** A random v4 UUID as 36 characters plus NUL. */
void tm_iceberg_uuid(char out[37]);
/** A random positive snapshot id. */
int64_t tm_iceberg_random_id(void);

#endif
