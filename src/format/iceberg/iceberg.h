/*
 * iceberg.h - Apache Iceberg tables: metadata, manifests and scan planning
 * (format layer).
 *
 * Pure decoding and planning: bytes come only through tm_input, and files
 * are opened through a caller-supplied tm_iceberg_io (open, optional list,
 * and for authoring write/remove), never an object store directly. The
 * source layer wires io to the file system, S3 or a REST catalog.
 *
 * Objects and ownership:
 *   tm_iceberg_metadata  one table metadata document (v1, v2, v3), parsed
 *                        from JSON (gzip accepted); owns every string,
 *                        schema, spec and snapshot in one arena.
 *   tm_iceberg_table     metadata + where it was read from + the location
 *                        remapping + the io; owns its metadata.
 *   tm_iceberg_manifest_list / tm_iceberg_manifest
 *                        decoded Avro files with v2 inheritance applied;
 *                        each owns its entries (arena).
 *   tm_iceberg_scan      a planned scan: live data files with the delete
 *                        files that apply to each, plus pruning counters.
 *
 * Location remapping: files inside metadata carry the writer's paths
 * (s3a://warehouse/t/data/x.parquet, /test-warehouse/t/..., relative
 * paths). A path is normalised (scheme and authority stripped, leading "./"
 * and duplicate slashes removed), and when it starts with the normalised
 * table location, that prefix is replaced by the real table root. The same
 * normalisation gives the key used to match position deletes to data files.
 *
 * Errors: TM_ECORRUPT (bad JSON, Avro or metadata, with the file named),
 * TM_EUNSUPPORTED (format-version > 3, encrypted
 * manifests), TM_ENOTFOUND (snapshot, metadata file), TM_EIO from io.
 */
#ifndef TM_FORMAT_ICEBERG_ICEBERG_H
#define TM_FORMAT_ICEBERG_ICEBERG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/arrow/schema.h"
#include "format/predicate.h"
#include "io/io.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#define TM_ICEBERG_MAX_FORMAT_VERSION 3

/* ---- io ----------------------------------------------------------------- */

/** Called once per folder entry name by tm_iceberg_io.list; non-zero stops. */
typedef int (*tm_iceberg_list_fn)(void *ctx, const char *name);

typedef struct tm_iceberg_io {
  int version; /* TM_ICEBERG_IO_VERSION */
  void *payload;
  /** Opens path for reading; TM_ENOTFOUND when absent. Required. */
  int (*open)(void *payload, const char *path, tm_input **out, tm_error *err);
  /** Calls fn for each entry name in folder dir. Optional (NULL). */
  int (*list)(void *payload, const char *dir, tm_iceberg_list_fn fn, void *ctx,
              tm_error *err);
  /**
   * Writes a whole file (creating folders). exclusive: create only, fail
   * with TM_ECONFLICT when path exists; otherwise replace atomically.
   * Needed for authoring only.
   */
  int (*write)(void *payload, const char *path, const void *data, size_t len, bool exclusive,
               tm_error *err);
  /** Removes a file; TM_ENOTFOUND when absent. Needed for expire only. */
  int (*remove)(void *payload, const char *path, tm_error *err);
  /* Counters, updated by the Iceberg module for every file it opens. */
  uint64_t files_opened;
  uint64_t bytes_read;
} tm_iceberg_io;

#define TM_ICEBERG_IO_VERSION 1

/* ---- schemas and types -------------------------------------------------- */

typedef enum tm_iceberg_type_id {
  TM_ICEBERG_UNKNOWN = 0, /* v3 "unknown" */
  TM_ICEBERG_BOOLEAN,
  TM_ICEBERG_INT,
  TM_ICEBERG_LONG,
  TM_ICEBERG_FLOAT,
  TM_ICEBERG_DOUBLE,
  TM_ICEBERG_DECIMAL,
  TM_ICEBERG_DATE,
  TM_ICEBERG_TIME,
  TM_ICEBERG_TIMESTAMP,
  TM_ICEBERG_TIMESTAMPTZ,
  TM_ICEBERG_TIMESTAMP_NS,
  TM_ICEBERG_TIMESTAMPTZ_NS,
  TM_ICEBERG_STRING,
  TM_ICEBERG_UUID,
  TM_ICEBERG_FIXED,
  TM_ICEBERG_BINARY,
  TM_ICEBERG_VARIANT,
  TM_ICEBERG_GEOMETRY,
  TM_ICEBERG_GEOGRAPHY,
  TM_ICEBERG_STRUCT,
  TM_ICEBERG_LIST,
  TM_ICEBERG_MAP
} tm_iceberg_type_id;

typedef struct tm_iceberg_type tm_iceberg_type;

typedef struct tm_iceberg_field {
  int32_t id;
  const char *name;
  bool required;
  tm_iceberg_type *type;
  const char *doc;             /* NULL when absent */
  const char *initial_default; /* JSON text of "initial-default", NULL when absent */
  const char *write_default;   /* JSON text of "write-default", NULL when absent */
} tm_iceberg_field;

struct tm_iceberg_type {
  tm_iceberg_type_id id;
  int32_t precision, scale;  /* DECIMAL */
  int32_t length;            /* FIXED */
  const char *text;          /* the type as written for primitives ("decimal(9,2)") */
  tm_iceberg_field *fields;  /* STRUCT: n_fields */
  size_t n_fields;
  tm_iceberg_field *element; /* LIST */
  tm_iceberg_field *key;     /* MAP */
  tm_iceberg_field *value;   /* MAP */
};

typedef struct tm_iceberg_schema {
  int32_t schema_id;
  tm_iceberg_type *root; /* STRUCT */
  int32_t *identifier_ids;
  size_t n_identifier_ids;
} tm_iceberg_schema;

/** The canonical name of a type id ("long", "timestamptz", "struct"). */
const char *tm_iceberg_type_name(tm_iceberg_type_id id);
bool tm_iceberg_type_is_primitive(const tm_iceberg_type *t);
/**
 * The columnar type for an Iceberg primitive (int -> int32, timestamptz ->
 * timestamp(us, UTC), timestamp_ns -> timestamp(ns), uuid -> fixed(16) uuid,
 * ...). Nested types read as UTF-8 JSON text, geo types as binary; v3
 * "unknown" is UTF-8 (its values are always null). TM_EUNSUPPORTED for v3
 * "variant".
 */
int tm_iceberg_type_to_tm(const tm_iceberg_type *t, tm_type *out, tm_error *err)
    TM_WARN_UNUSED;
/** The same, nested types (struct, list, map) as native STRUCT / LIST / MAP
 * (issue 16) rather than JSON text. */
int tm_iceberg_type_to_tm_native(const tm_iceberg_type *t, tm_type *out, tm_error *err)
    TM_WARN_UNUSED;
/** Finds a field anywhere in the schema (nested too) by id; NULL if absent. */
const tm_iceberg_field *tm_iceberg_schema_find_id(const tm_iceberg_schema *s, int32_t id);
/** Top-level field by name (exact, then ignoring ASCII case); NULL if absent. */
const tm_iceberg_field *tm_iceberg_schema_find_name(const tm_iceberg_schema *s,
                                                    const char *name);

/* ---- name mapping (schema.name-mapping.default) ------------------------- */

typedef struct tm_iceberg_name_map tm_iceberg_name_map;
struct tm_iceberg_name_map {
  const char **names;
  size_t n_names;
  int32_t field_id;           /* -1 when absent */
  tm_iceberg_name_map *fields; /* children */
  size_t n_fields;
};

typedef struct tm_iceberg_name_mapping {
  tm_iceberg_name_map *fields;
  size_t n_fields;
} tm_iceberg_name_mapping;

/** The entry among maps (a level of the mapping) that lists name, or NULL. */
const tm_iceberg_name_map *tm_iceberg_name_map_lookup(const tm_iceberg_name_map *maps,
                                                       size_t n_maps, const char *name);
/** Field id mapped to a top-level name in the mapping, or -1. */
int32_t tm_iceberg_name_mapping_find(const tm_iceberg_name_mapping *m, const char *name);

/* ---- partition specs and sort orders ------------------------------------ */

typedef enum tm_iceberg_transform_kind {
  TM_ICEBERG_TR_IDENTITY = 0,
  TM_ICEBERG_TR_BUCKET,
  TM_ICEBERG_TR_TRUNCATE,
  TM_ICEBERG_TR_YEAR,
  TM_ICEBERG_TR_MONTH,
  TM_ICEBERG_TR_DAY,
  TM_ICEBERG_TR_HOUR,
  TM_ICEBERG_TR_VOID,
  TM_ICEBERG_TR_UNKNOWN /* ignored for filtering, kept for equality */
} tm_iceberg_transform_kind;

typedef struct tm_iceberg_transform {
  tm_iceberg_transform_kind kind;
  int32_t param;    /* N of bucket[N], W of truncate[W] */
  const char *text; /* as written */
} tm_iceberg_transform;

/** Parses "bucket[16]", "day", ...; unknown names give TM_ICEBERG_TR_UNKNOWN. */
tm_iceberg_transform tm_iceberg_transform_parse(const char *text);

typedef struct tm_iceberg_partition_field {
  int32_t source_id;
  int32_t field_id;
  const char *name;
  tm_iceberg_transform transform;
} tm_iceberg_partition_field;

typedef struct tm_iceberg_spec {
  int32_t spec_id;
  tm_iceberg_partition_field *fields;
  size_t n_fields;
} tm_iceberg_spec;

typedef struct tm_iceberg_sort_field {
  int32_t source_id;
  tm_iceberg_transform transform;
  bool descending;
  bool nulls_first;
} tm_iceberg_sort_field;

typedef struct tm_iceberg_sort_order {
  int32_t order_id;
  tm_iceberg_sort_field *fields;
  size_t n_fields;
} tm_iceberg_sort_order;

/**
 * The result type of a transform applied to source (identity and truncate:
 * the source type; bucket, year, month, hour: int; day: date; void: the
 * source type). TM_EUNSUPPORTED for a transform the source type does not
 * allow.
 */
int tm_iceberg_transform_result(const tm_iceberg_transform *tr, const tm_iceberg_type *source,
                                tm_type *out, tm_error *err) TM_WARN_UNUSED;
/**
 * Applies tr to v (a value of source's columnar type). Byte payloads of the
 * result point into v or into scratch (16 bytes). NULL gives NULL.
 */
int tm_iceberg_transform_apply(const tm_iceberg_transform *tr, const tm_iceberg_type *source,
                               const tm_value *v, tm_value *out, uint8_t scratch[16],
                               tm_error *err) TM_WARN_UNUSED;
/** Iceberg's 32-bit bucket hash of a value of the given source type. */
int tm_iceberg_bucket_hash(const tm_iceberg_type *source, const tm_value *v, int32_t *out,
                           tm_error *err) TM_WARN_UNUSED;

/* ---- snapshots and metadata --------------------------------------------- */

typedef struct tm_iceberg_snapshot {
  int64_t snapshot_id;
  bool has_parent;
  int64_t parent_id;
  int64_t sequence_number;     /* 0 for v1 */
  int64_t timestamp_ms;
  const char *manifest_list;   /* NULL for v1 snapshots with "manifests" */
  const char **manifests;      /* v1 legacy list */
  size_t n_manifests;
  const char *operation;       /* summary "operation", NULL when absent */
  tm_kv_pair *summary;         /* all summary entries (arena-owned) */
  size_t n_summary;
  int32_t schema_id;           /* -1 when absent */
  bool has_first_row_id;
  int64_t first_row_id;        /* v3 */
  int64_t added_rows;          /* v3, -1 when absent */
  const char *key_id;          /* v3 encryption, NULL when absent */
} tm_iceberg_snapshot;

/** A summary value, or NULL. */
const char *tm_iceberg_snapshot_summary(const tm_iceberg_snapshot *s, const char *key);

typedef struct tm_iceberg_ref {
  const char *name;
  int64_t snapshot_id;
  bool is_tag;
} tm_iceberg_ref;

typedef struct tm_iceberg_log_entry {
  int64_t timestamp_ms;
  int64_t snapshot_id;     /* snapshot-log */
  const char *file;        /* metadata-log */
} tm_iceberg_log_entry;

typedef struct tm_iceberg_metadata {
  int format_version;
  const char *table_uuid;   /* NULL only in v1 metadata without one */
  const char *location;
  int64_t last_sequence_number;
  int64_t last_updated_ms;
  int32_t last_column_id;
  tm_iceberg_schema *schemas;
  size_t n_schemas;
  int32_t current_schema_id;
  tm_iceberg_spec *specs;
  size_t n_specs;
  int32_t default_spec_id;
  int32_t last_partition_id;
  tm_kv_pair *properties;
  size_t n_properties;
  bool has_current_snapshot;
  int64_t current_snapshot_id;
  tm_iceberg_snapshot *snapshots;
  size_t n_snapshots;
  tm_iceberg_log_entry *snapshot_log;
  size_t n_snapshot_log;
  tm_iceberg_log_entry *metadata_log;
  size_t n_metadata_log;
  tm_iceberg_sort_order *sort_orders;
  size_t n_sort_orders;
  int32_t default_sort_order_id;
  tm_iceberg_ref *refs;
  size_t n_refs;
  bool has_next_row_id;
  int64_t next_row_id;
  tm_iceberg_name_mapping *name_mapping; /* from the property; NULL when absent */
  size_t *snap_index;     /* indices of snapshots sorted by id (lookup) */
  tm_arena arena;         /* owns everything above */
} tm_iceberg_metadata;

/**
 * Parses table metadata JSON (gzip-compressed input is detected by its magic
 * and inflated, at most 256 MiB). name is used in messages. Validates what
 * the spec requires per format version and refuses format-version > 3.
 * Caller owns *out (tm_iceberg_metadata_free). TM_ECORRUPT names the
 * problem ("... metadata.json: v2 metadata needs \"last-partition-id\"").
 */
int tm_iceberg_metadata_parse(tm_iceberg_metadata **out, const void *data, size_t len,
                              const char *name, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_metadata_free(tm_iceberg_metadata *m);
/** Serialises metadata as JSON (what tm_iceberg_metadata_parse reads back). */
int tm_iceberg_metadata_to_json(const tm_iceberg_metadata *m, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

const tm_iceberg_schema *tm_iceberg_metadata_schema(const tm_iceberg_metadata *m, int32_t id);
const tm_iceberg_schema *tm_iceberg_metadata_current_schema(const tm_iceberg_metadata *m);
const tm_iceberg_spec *tm_iceberg_metadata_spec(const tm_iceberg_metadata *m, int32_t id);
/** The snapshot with this id, or NULL (O(log n)). */
const tm_iceberg_snapshot *tm_iceberg_metadata_snapshot(const tm_iceberg_metadata *m,
                                                        int64_t id);
/** The current snapshot (main), or NULL for a table without one. */
const tm_iceberg_snapshot *tm_iceberg_metadata_current(const tm_iceberg_metadata *m);
const char *tm_iceberg_metadata_property(const tm_iceberg_metadata *m, const char *key);
/**
 * The schema a snapshot was written with (its schema-id), else the current
 * schema.
 */
const tm_iceberg_schema *tm_iceberg_snapshot_schema(const tm_iceberg_metadata *m,
                                                    const tm_iceberg_snapshot *s);

/* ---- ancestry ----------------------------------------------------------- */

/**
 * Whether ancestor_id is `id` itself or reached from it by parent ids
 * (bounded by the number of snapshots, so a cycle cannot loop).
 */
bool tm_iceberg_is_ancestor(const tm_iceberg_metadata *m, int64_t id, int64_t ancestor_id);
/**
 * The snapshots after `after_id` up to and including `to_id`, oldest first,
 * following parent ids back from to_id. after_id < 0 (or absent from the
 * chain) returns the whole known chain. *out is malloc'd (tm_free);
 * TM_ENOTFOUND when to_id is unknown.
 */
int tm_iceberg_ancestors_since(const tm_iceberg_metadata *m, int64_t to_id, int64_t after_id,
                               const tm_iceberg_snapshot ***out, size_t *n_out,
                               tm_error *err) TM_WARN_UNUSED;

/* ---- tables -------------------------------------------------------------- */

typedef struct tm_iceberg_open_options {
  int version;                   /* TM_ICEBERG_OPEN_OPTIONS_VERSION */
  const char *table_root;        /* real folder with metadata/ (file-system tables) */
  const char *metadata_location; /* explicit metadata file (real path); wins over root */
  const char *location_from;     /* the location prefix as written; default: "location" */
  const char *location_to;       /* where it really is; default: the table root */
} tm_iceberg_open_options;

#define TM_ICEBERG_OPEN_OPTIONS_VERSION 1
#define TM_ICEBERG_OPEN_OPTIONS_INIT {TM_ICEBERG_OPEN_OPTIONS_VERSION, NULL, NULL, NULL, NULL}

typedef struct tm_iceberg_table tm_iceberg_table;

/**
 * Finds the current metadata file of a file-system table: metadata/
 * version-hint.text (a version N, or a file name) naming vN.metadata.json,
 * vN.gz.metadata.json or vN.metadata.json.gz; else, with io->list, the
 * highest vN[.gz].metadata.json, else the highest NNNNN-*.metadata.json.
 * *out is malloc'd (tm_free). TM_ENOTFOUND names the folder.
 */
int tm_iceberg_locate_metadata(const tm_iceberg_io *io, const char *table_root, char **out,
                               tm_error *err) TM_WARN_UNUSED;

/**
 * Opens a table: locates and reads its metadata through io. io must outlive
 * the table. Caller owns *out (tm_iceberg_table_free).
 */
int tm_iceberg_table_open(tm_iceberg_table **out, tm_iceberg_io *io,
                          const tm_iceberg_open_options *opts, tm_error *err) TM_WARN_UNUSED;
/**
 * Like tm_iceberg_table_open, for a table read before: when the current
 * metadata file is the one prev was read from (same path, same bytes), sets
 * *out to NULL and returns TM_OK without parsing it, so checking an
 * unchanged table costs reading the metadata file and hashing it, not
 * parsing it (SPEC B3). prev may be NULL.
 */
int tm_iceberg_table_reopen(tm_iceberg_table **out, const tm_iceberg_table *prev,
                            tm_iceberg_io *io, const tm_iceberg_open_options *opts,
                            tm_error *err) TM_WARN_UNUSED;
/**
 * Whether prev was made from this metadata JSON at this location (same
 * bytes): a REST catalog's answer for an unchanged table. prev may be NULL.
 */
bool tm_iceberg_table_unchanged(const tm_iceberg_table *prev, const char *json, size_t len,
                                const char *metadata_location);
/**
 * A table from metadata JSON obtained elsewhere (a REST catalog):
 * metadata_location (may be NULL) is only recorded; remapping as opts says.
 */
int tm_iceberg_table_from_json(tm_iceberg_table **out, tm_iceberg_io *io, const char *json,
                               size_t len, const char *metadata_location,
                               const tm_iceberg_open_options *opts, tm_error *err)
    TM_WARN_UNUSED;
void tm_iceberg_table_free(tm_iceberg_table *t);
const tm_iceberg_metadata *tm_iceberg_table_metadata(const tm_iceberg_table *t);
/** The metadata file the table was read from (NULL for JSON given directly). */
const char *tm_iceberg_table_metadata_path(const tm_iceberg_table *t);
tm_iceberg_io *tm_iceberg_table_io(const tm_iceberg_table *t);
/** The real table root used for remapping (NULL when none). */
const char *tm_iceberg_table_root(const tm_iceberg_table *t);

/**
 * Normalises a path for matching: strips "scheme://authority" (or
 * "scheme:"), leading "./", duplicate and trailing slashes. Writes a view
 * into path or into out (cap bytes). Used on both sides of every match.
 */
tm_strview tm_iceberg_path_normalize(const char *path, char *out, size_t cap);
/**
 * Resolves a path from metadata to a real path through the remapping.
 * Paths outside the table location are returned as written (file:// URIs
 * of absolute paths become plain paths). *out: tm_free.
 */
int tm_iceberg_table_resolve(const tm_iceberg_table *t, const char *path, char **out,
                             tm_error *err) TM_WARN_UNUSED;
/**
 * The match key of a data file path: the normalised path relative to the
 * normalised table location when inside it, else the normalised path.
 * *out: tm_free.
 */
int tm_iceberg_table_path_key(const tm_iceberg_table *t, const char *path, char **out,
                              tm_error *err) TM_WARN_UNUSED;
/** Opens a file named in metadata (resolved, counted in io). */
int tm_iceberg_table_open_file(const tm_iceberg_table *t, const char *path, tm_input **out,
                               tm_error *err) TM_WARN_UNUSED;

/* ---- manifest lists and manifests --------------------------------------- */

typedef struct tm_iceberg_field_summary {
  bool contains_null;
  int contains_nan;             /* 1, 0, or -1 when unknown */
  bool has_lower, has_upper;
  tm_strview lower, upper;      /* single-value serialised bounds */
} tm_iceberg_field_summary;

typedef enum tm_iceberg_content {
  TM_ICEBERG_CONTENT_DATA = 0,
  TM_ICEBERG_CONTENT_POSITION_DELETES = 1,
  TM_ICEBERG_CONTENT_EQUALITY_DELETES = 2
} tm_iceberg_content;

typedef struct tm_iceberg_manifest_file {
  const char *path;
  int64_t length;
  int32_t spec_id;
  int content;                  /* 0 data, 1 deletes */
  int64_t sequence_number;
  int64_t min_sequence_number;
  int64_t added_snapshot_id;
  int64_t added_files, existing_files, deleted_files; /* -1 when unknown */
  int64_t added_rows, existing_rows, deleted_rows;    /* -1 when unknown */
  tm_iceberg_field_summary *partitions;
  size_t n_partitions;
  bool has_partitions;
  bool encrypted;               /* key_metadata set */
  bool has_first_row_id;
  int64_t first_row_id;
} tm_iceberg_manifest_file;

typedef struct tm_iceberg_manifest_list {
  tm_iceberg_manifest_file *files;
  size_t n_files;
  tm_arena arena;
} tm_iceberg_manifest_list;

/**
 * Reads a snapshot's manifest list (or, for a v1 snapshot with an inline
 * "manifests" list, builds one by reading each manifest's header). Caller
 * owns *out (tm_iceberg_manifest_list_free).
 */
int tm_iceberg_read_manifest_list(const tm_iceberg_table *t, const tm_iceberg_snapshot *snap,
                                  tm_iceberg_manifest_list **out, tm_error *err)
    TM_WARN_UNUSED;
void tm_iceberg_manifest_list_free(tm_iceberg_manifest_list *l);

typedef struct tm_iceberg_col_stats {
  int32_t field_id;
  int64_t column_size, value_count, null_count, nan_count; /* -1 when unknown */
  bool has_lower, has_upper;
  tm_strview lower, upper;                                  /* single-value serialised */
} tm_iceberg_col_stats;

typedef enum tm_iceberg_status {
  TM_ICEBERG_EXISTING = 0,
  TM_ICEBERG_ADDED = 1,
  TM_ICEBERG_DELETED = 2
} tm_iceberg_status;

typedef struct tm_iceberg_data_file {
  int status;                    /* tm_iceberg_status */
  int64_t snapshot_id;           /* inherited when null */
  int64_t sequence_number;       /* data sequence number, inherited */
  int64_t file_sequence_number;  /* inherited */
  int content;                   /* tm_iceberg_content */
  const char *path;              /* as written in the manifest */
  const char *format;            /* "PARQUET", "AVRO", "ORC", "PUFFIN" */
  int32_t spec_id;               /* the manifest's spec */
  tm_value *partition;           /* n_partition values, typed as the spec's results */
  size_t n_partition;
  int64_t record_count;
  int64_t file_size;
  tm_iceberg_col_stats *stats;   /* per field id */
  size_t n_stats;
  int32_t *equality_ids;
  size_t n_equality_ids;
  int64_t *split_offsets;
  size_t n_split_offsets;
  int32_t sort_order_id;         /* -1 when absent */
  const char *referenced_data_file; /* NULL when absent */
  bool has_content_offset;       /* deletion vectors */
  int64_t content_offset, content_size;
  bool has_first_row_id;
  int64_t first_row_id;
  bool encrypted;                /* key_metadata set */
} tm_iceberg_data_file;

typedef struct tm_iceberg_manifest {
  const tm_iceberg_spec *spec;   /* owned by the table's metadata */
  int32_t spec_id;
  int content;                   /* 0 data, 1 deletes */
  tm_iceberg_data_file *entries;
  size_t n_entries;
  tm_arena arena;
} tm_iceberg_manifest;

/**
 * Reads a manifest named by a manifest-list entry, applying inheritance:
 * null snapshot ids take the manifest's added_snapshot_id; null sequence
 * numbers of ADDED entries take its sequence_number (v1 manifests: 0).
 * Partition values are decoded into the spec's result types. With
 * only_added_by >= 0, only ADDED entries of that snapshot are kept.
 * Caller owns *out (tm_iceberg_manifest_free).
 */
int tm_iceberg_read_manifest(const tm_iceberg_table *t, const tm_iceberg_manifest_file *mf,
                             int64_t only_added_by, tm_iceberg_manifest **out, tm_error *err)
    TM_WARN_UNUSED;
void tm_iceberg_manifest_free(tm_iceberg_manifest *m);

/**
 * Whether a delete entry is a deletion vector (format v3): a position delete
 * entry with content_offset set or file_format "puffin". Its blob is a
 * deletion-vector-v1 in that Puffin file (format/puffin/puffin.h).
 */
bool tm_iceberg_is_deletion_vector(const tm_iceberg_data_file *f);

/* ---- single values and bounds ------------------------------------------- */

/**
 * Decodes a single-value binary serialisation (bounds, partition summaries)
 * as a value of type t, inferring the written type from the length for
 * promoted types (long/int, double/float, timestamp/date). Byte payloads
 * point into bytes; decimals are converted to 16-byte little-endian.
 */
int tm_iceberg_value_from_bytes(const tm_iceberg_type *t, tm_strview bytes, tm_value *out,
                                tm_error *err) TM_WARN_UNUSED;
/** Encodes a value of type t in the single-value binary serialisation. */
int tm_iceberg_value_to_bytes(const tm_iceberg_type *t, const tm_value *v, tm_buf *out,
                              tm_error *err) TM_WARN_UNUSED;

/* ---- scan planning ------------------------------------------------------ */

typedef struct tm_iceberg_scan_stats {
  int64_t manifest_lists_read;
  int64_t manifests_read;
  int64_t manifests_skipped;     /* pruned by partition summaries or counts */
  int64_t data_files;            /* live data files considered */
  int64_t data_files_skipped;    /* pruned by partition values or column bounds */
  int64_t delete_files;          /* live delete files that apply to a kept file */
} tm_iceberg_scan_stats;

typedef struct tm_iceberg_scan_task {
  const tm_iceberg_data_file *file;     /* owned by the scan */
  const tm_iceberg_data_file **deletes; /* delete files that apply, owned by the scan */
  size_t n_deletes;
  char *key;                            /* match key of file->path (scan-owned) */
} tm_iceberg_scan_task;

typedef struct tm_iceberg_scan {
  const tm_iceberg_snapshot *snapshot;  /* owned by the table's metadata */
  const tm_iceberg_schema *schema;      /* the schema rows are read in */
  tm_iceberg_scan_task *tasks;
  size_t n_tasks;
  tm_iceberg_scan_stats stats;
  tm_iceberg_manifest **manifests;      /* owned: keep the entries alive */
  size_t n_manifests;
  tm_arena arena;
} tm_iceberg_scan;

typedef struct tm_iceberg_scan_options {
  int version;                  /* TM_ICEBERG_SCAN_OPTIONS_VERSION */
  int64_t snapshot_id;          /* < 0: the current snapshot */
  const tm_predicate *filter;   /* NULL: no pruning; columns by name in the schema */
  bool use_snapshot_schema;     /* read in the snapshot's schema, not the current one */
} tm_iceberg_scan_options;

#define TM_ICEBERG_SCAN_OPTIONS_VERSION 1
#define TM_ICEBERG_SCAN_OPTIONS_INIT {TM_ICEBERG_SCAN_OPTIONS_VERSION, -1, NULL, false}

/**
 * Plans a scan: reads the snapshot's manifest list and manifests (skipping
 * manifests by partition summaries), keeps live data files that may match
 * the filter (partition values through each manifest's spec, column
 * bounds), and attaches the delete files that apply to each (position
 * deletes: same spec and partition, data seq <= delete seq, and the
 * referenced file when given; equality deletes: data seq < delete seq, same
 * partition unless the delete's spec is unpartitioned). A deletion vector
 * (v3) applies to its referenced_data_file when data seq <= its seq, and
 * then replaces that file's position delete files; two for one data file, or
 * one without referenced_data_file / content_offset / content_size_in_bytes,
 * is TM_ECORRUPT. A table without snapshots plans no task.
 * Caller owns *out (tm_iceberg_scan_free).
 */
int tm_iceberg_plan_scan(const tm_iceberg_table *t, const tm_iceberg_scan_options *opts,
                         tm_iceberg_scan **out, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_scan_free(tm_iceberg_scan *s);

typedef struct tm_iceberg_added {
  const tm_iceberg_snapshot *snapshot;
  const tm_iceberg_data_file **data_files;   /* ADDED data files, owned by this */
  size_t n_data_files;
  const tm_iceberg_data_file **delete_files; /* ADDED delete files */
  size_t n_delete_files;
  tm_iceberg_scan_stats stats;
  tm_iceberg_manifest **manifests;
  size_t n_manifests;
} tm_iceberg_added;

/**
 * What snapshot S added: reads S's manifest list and only the manifests
 * whose added_snapshot_id is S, and keeps their ADDED entries with snapshot
 * id S. Later compactions that removed the files do not hide them (SPEC B4).
 * Caller owns *out (tm_iceberg_added_free).
 */
int tm_iceberg_plan_added(const tm_iceberg_table *t, int64_t snapshot_id,
                          tm_iceberg_added **out, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_added_free(tm_iceberg_added *a);

/*
 * What changed between two snapshots of a table, file by file (SPEC E2, E4):
 * the live data files of `from` and of `to` (tm_iceberg_plan_scan, current
 * schema, each with the delete files that apply to it) matched by path key
 * and data sequence number. A file live at `to` only is added, at `from`
 * only is removed, at both with another set of delete files is changed
 * (deletes added, a deletion vector replaced, a delete file rewritten).
 * Files live at both with the same deletes are not listed: their visible
 * rows are the same. from_id < 0: nothing before, every live file is added
 * (SPEC E1). Reads the manifest lists and manifests of both snapshots, no
 * data file. Caller owns *out (tm_iceberg_changes_free).
 */
typedef struct tm_iceberg_changes {
  tm_iceberg_scan *from;                /* owned; NULL when from_id < 0 */
  tm_iceberg_scan *to;                  /* owned */
  const tm_iceberg_scan_task **removed; /* tasks of `from` */
  size_t n_removed;
  const tm_iceberg_scan_task **added;   /* tasks of `to` */
  size_t n_added;
  const tm_iceberg_scan_task **changed_from, **changed_to; /* pairs, n_changed each */
  size_t n_changed;
} tm_iceberg_changes;

int tm_iceberg_plan_changes(const tm_iceberg_table *t, int64_t from_id, int64_t to_id,
                            tm_iceberg_changes **out, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_changes_free(tm_iceberg_changes *c);
/**
 * The provenance id of a data file (SPEC E4): a 64-bit hash of its path key
 * (tm_iceberg_table_path_key), stable across snapshots and tables' remapping.
 */
int64_t tm_iceberg_file_id(const char *key);

/**
 * Whether a data file may hold rows matching filter (columns by name in
 * schema): its partition values through the spec's transforms and its column
 * bounds. Conservative: true unless statistics prove no row matches.
 */
bool tm_iceberg_file_may_match(const tm_iceberg_metadata *m, const tm_iceberg_schema *schema,
                               const tm_iceberg_data_file *f, const tm_predicate *filter);

/**
 * Parses a filter in a small SQL-like syntax over schema's columns into out
 * (initialised): terms joined by AND, each `col = | < | <= | > | >= literal`,
 * `col IS [NOT] NULL` or `col IN (literal, ...)`. Literals are numbers,
 * 'quoted strings' (dates, times, timestamps and decimals too), TRUE or
 * FALSE, converted to the column's type. TM_EINVALID names the problem.
 */
int tm_iceberg_parse_where(const char *text, const tm_iceberg_schema *schema, tm_predicate *out,
                           tm_error *err) TM_WARN_UNUSED;

#endif
