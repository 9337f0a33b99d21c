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
  const char *schema_json;    /* Iceberg schema JSON; field "id"s optional (assigned) */
  const tm_schema *schema;    /* or columns (e.g. a Parquet file's), when no JSON */
  const char *partition;      /* "day(ts), bucket[16](id), region"; NULL: unpartitioned */
  const tm_kv *properties;    /* table properties; may be NULL */
  bool replace;               /* replace-table: a new uuid over an existing table */
} tm_iceberg_create_options;

#define TM_ICEBERG_CREATE_OPTIONS_VERSION 1
#define TM_ICEBERG_CREATE_OPTIONS_INIT \
  {TM_ICEBERG_CREATE_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, false}

/**
 * Creates a v2 table at table_root (metadata/v1.metadata.json and the
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
 * and truncate(W, col)). Writes the spec "fields" JSON array into out.
 */
int tm_iceberg_partition_text_to_json(const char *text, const tm_iceberg_schema *schema,
                                      int32_t first_field_id, tm_buf *out, tm_error *err)
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
