/*
 * iceberg_int.h - helpers shared by the Iceberg module's files (format
 * layer, private to src/format/iceberg/).
 *
 * Formats trusted here, field by field (Iceberg table spec v1-v3):
 *   metadata JSON   format-version 1..3; v2+ requires table-uuid,
 *                   last-sequence-number, schemas + current-schema-id,
 *                   partition-specs + default-spec-id, last-partition-id,
 *                   sort-orders + default-sort-order-id; v1 accepts the
 *                   deprecated schema / partition-spec. current-snapshot-id
 *                   -1 means none. Numbers must be JSON integers in range.
 *   manifest list   Avro records of manifest_file, fields located by field
 *                   id (500 path, 501 length, 502 spec id, 517 content, 515
 *                   sequence number, 516 min sequence number, 503 added
 *                   snapshot id, 504-506 file counts, 512-514 row counts,
 *                   507 partitions: list of 509 contains_null, 518
 *                   contains_nan, 510 lower, 511 upper; 519 key_metadata,
 *                   520 first_row_id).
 *   manifest        Avro records of manifest_entry (0 status, 1 snapshot id,
 *                   3 sequence number, 4 file sequence number, 2 data_file:
 *                   134 content, 100 path, 101 format, 102 partition (fields
 *                   by partition field id), 103 record count, 104 size,
 *                   108/109/110/137 count maps, 125/128 bound maps, 131 key
 *                   metadata, 132 split offsets, 135 equality ids, 140 sort
 *                   order, 142 first row id, 143 referenced data file,
 *                   144/145 content offset/size). Header metadata:
 *                   partition-spec-id, format-version, content.
 * Maps are either Avro maps or arrays of key/value records (Iceberg's
 * logical "map"); both are accepted.
 */
#ifndef TM_FORMAT_ICEBERG_ICEBERG_INT_H
#define TM_FORMAT_ICEBERG_ICEBERG_INT_H

#include <jansson.h>

#include "format/avro/avro.h"
#include "format/iceberg/iceberg.h"

#define TM_ICEBERG__MAX_METADATA_BYTES ((size_t)256 << 20)
#define TM_ICEBERG__MAX_DEPTH 48

/* Arena string helpers: NULL with err set on failure. */
const char *tm_iceberg__strdup(tm_arena *a, const char *s, tm_error *err);

/* Parses an Iceberg type JSON node (string or object). */
tm_iceberg_type *tm_iceberg__parse_type(tm_arena *a, json_t *j, int depth, const char *where,
                                        tm_error *err);
/* Parses a schema object (struct with schema-id / identifier-field-ids). */
int tm_iceberg__parse_schema(tm_arena *a, json_t *j, tm_iceberg_schema *out, const char *where,
                             tm_error *err) TM_WARN_UNUSED;
/* Parses a partition field list (spec "fields" or v1 "partition-spec"). */
int tm_iceberg__parse_spec_fields(tm_arena *a, json_t *arr, bool v1, tm_iceberg_spec *out,
                                  const char *where, tm_error *err) TM_WARN_UNUSED;
/* Parses a name mapping JSON text. */
int tm_iceberg__parse_name_mapping(tm_arena *a, const char *text,
                                   tm_iceberg_name_mapping **out, tm_error *err)
    TM_WARN_UNUSED;

/* JSON builders (NULL on allocation failure). */
json_t *tm_iceberg__type_to_json(const tm_iceberg_type *t);
json_t *tm_iceberg__schema_to_json(const tm_iceberg_schema *s);
json_t *tm_iceberg__spec_fields_to_json(const tm_iceberg_spec *s);

/*
 * Converts an Avro value holding a partition value (int, long, string,
 * bytes, fixed, boolean, float, double) to a tm_value of type want.
 * Payloads are copied into the arena.
 */
int tm_iceberg__avro_to_value(tm_arena *a, const tm_avro_value *v, const tm_type *want,
                              tm_value *out, tm_error *err) TM_WARN_UNUSED;

/* Reads a whole file through the table's io into *out (tm_free), at most limit. */
int tm_iceberg__read_all(tm_iceberg_io *io, const char *path, size_t limit, char **out,
                         size_t *len_out, tm_error *err) TM_WARN_UNUSED;

/*
 * Appends a canonical byte encoding of (spec id, partition values) to out,
 * so that equal partitions give equal keys (floats by bit pattern, NaNs
 * normalised).
 */
int tm_iceberg__partition_key(const tm_iceberg_data_file *f, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

/* Reads the Avro container at path (resolved through the table) fully:
 * opens, counts the file, returns the open reader and input. */
int tm_iceberg__open_avro(const tm_iceberg_table *t, const char *path, tm_input **in_out,
                          tm_avro_reader **r_out, tm_error *err) TM_WARN_UNUSED;

/* Inflates data when it starts with the gzip magic. *out is NULL when the
 * input was not compressed; else a tm_malloc'd copy (limit: metadata max). */
int tm_iceberg__maybe_gunzip(const void *data, size_t len, char **out, size_t *out_len,
                             tm_error *err) TM_WARN_UNUSED;

/* Converts v (of type from) to type to (convert.c); false when it does not
 * convert. Byte payloads stay views into v. */
bool tm_iceberg__convert_value(const tm_value *in, const tm_type *from, const tm_type *to,
                               tm_value *out);
/* n rows of src converted to type to, as a new array (col names errors). */
int tm_iceberg__convert_column(const tm_colview *src, const tm_type *to, int64_t n,
                               struct ArrowArray *out, const char *col, tm_error *err)
    TM_WARN_UNUSED;

/*
 * A data file's nested column as the table's nested type (convert.c, issue
 * 16). Iceberg evolves a struct's members by field id: added (the file lacks
 * them: their initial-default, else NULL), dropped (the file's extra members
 * are not read), renamed and reordered (matched by id, never by position),
 * promoted (int -> long, float -> double, wider decimals, converted per
 * value). A shape maps each member of the table's type to the file's: by the
 * file's member ids (ids: tm_type_id_slots(from) slots, schema.h), or by name
 * (by_name) for files without ids and no name mapping.
 */
typedef struct tm_iceberg__shape tm_iceberg__shape;
/* The shape reading the file's column (type from) as table field fld (its
 * native type to), allocated in a; *out NULL when the file's column is the
 * table's as it is (take its arrays). A primitive member the file lacks reads
 * missing(payload, ...) in every row. TM_EUNSUPPORTED naming the column when
 * a member's kind or type does not convert. */
/* The value a data file gives a member it lacks (its identity partition
 * value, its initial-default, or NULL), as a value of type to (read.c). */
typedef void (*tm_iceberg__missing_fn)(void *payload, const tm_iceberg_field *fld,
                                       const tm_type *to, tm_value *out);
int tm_iceberg__shape_new(tm_arena *a, const tm_iceberg_field *fld, const tm_type *to,
                          const tm_type *from, const int32_t *ids, bool by_name,
                          tm_iceberg__missing_fn missing, void *payload,
                          tm_iceberg__shape **out, tm_error *err) TM_WARN_UNUSED;
/* n rows of src (the file's column) as a new array of the table's type. */
int tm_iceberg__shape_apply(const tm_iceberg__shape *sh, const tm_colview *src, int64_t n,
                            struct ArrowArray *out, const char *col, tm_error *err)
    TM_WARN_UNUSED;
/* The table's type the shape builds. */
const tm_type *tm_iceberg__shape_type(const tm_iceberg__shape *sh);
/* The id slots of a file column of type t that has no ids, from the name
 * mapping's entry for the column (its nested "fields"; -1 where unmapped). */
void tm_iceberg__name_mapping_ids(const tm_iceberg_name_map *entry, const tm_type *t,
                                  int32_t *ids);
/* The initial-default of field f as a value of type t (payload in a); false
 * when it does not parse as t. A field without one gives NULL (read.c). */
bool tm_iceberg__default_value(tm_arena *a, const tm_iceberg_field *f, const tm_type *t,
                               tm_value *out);

/* ---- writing (writer.c, manifest_write.c) ---------------------------------- */

/* Schema JSON text (a list of fields, or an object with "fields") as a
 * struct type object in *out (a new reference); TM_EINVALID otherwise. */
int tm_iceberg__schema_json(const char *text, json_t **out, tm_error *err) TM_WARN_UNUSED;
/* Assigns missing ids in a schema JSON type tree (struct "id", list
 * "element-id", map "key-id"/"value-id") from *next, depth first, and the
 * missing "required" flags (false); tracks the highest id in *max_id. */
int tm_iceberg__assign_ids(json_t *type, int32_t *next, int32_t *max_id, int depth,
                           tm_error *err) TM_WARN_UNUSED;
/* Raises *max_id to the largest explicit id in a schema JSON type tree. */
void tm_iceberg__max_explicit_id(json_t *type, int32_t *max_id, int depth);

/* One manifest entry to write; -1 writes null (inherited) where allowed. */
typedef struct tm_iceberg__entry {
  int status;
  int64_t snapshot_id;
  int64_t sequence_number;
  int64_t file_sequence_number;
  const tm_iceberg_data_file *file;
} tm_iceberg__entry;

/*
 * Writes a manifest of entries (all of one content kind and spec) under
 * metadata/<uuid>-m<k>.avro and fills *out for the manifest list: path in
 * location terms, length, spec, content, sequence numbers (seq is the new
 * snapshot's), counts and partition summaries. Strings of *out live in a.
 */
int tm_iceberg__write_manifest(const tm_iceberg_table *t, const tm_iceberg_schema *schema,
                               const tm_iceberg_spec *spec, int content,
                               const tm_iceberg__entry *entries, size_t n,
                               int64_t snapshot_id, int64_t seq, tm_arena *a,
                               tm_iceberg_manifest_file *out, tm_error *err) TM_WARN_UNUSED;
/* Writes a v2 manifest list; *path_out (arena) is in location terms. */
int tm_iceberg__write_manifest_list(const tm_iceberg_table *t,
                                    const tm_iceberg_manifest_file *files, size_t n,
                                    int64_t snapshot_id, int64_t parent_id, int64_t seq,
                                    tm_arena *a, const char **path_out, tm_error *err)
    TM_WARN_UNUSED;
/* location + "/" + rel (no double slash), in the arena. */
const char *tm_iceberg__location_path(tm_arena *a, const tm_iceberg_table *t, const char *rel,
                                      tm_error *err);
/* Writes bytes to a path in location terms through the table's io. */
int tm_iceberg__write_file(const tm_iceberg_table *t, const char *path, const void *data,
                           size_t len, bool exclusive, tm_error *err) TM_WARN_UNUSED;
/* The base metadata document as JSON (re-read, unknown members kept). */
int tm_iceberg__load_base_json(const tm_iceberg_table *t, json_t **out, tm_error *err)
    TM_WARN_UNUSED;
/* Makes id the current snapshot in root (refs.main, snapshot-log at now). */
int tm_iceberg__set_current(json_t *root, int64_t id, int64_t now, tm_error *err)
    TM_WARN_UNUSED;
/* Commits root as the next metadata version of t (see writer.h). */
int tm_iceberg__publish(const tm_iceberg_table *t, json_t *root, tm_error *err) TM_WARN_UNUSED;

#endif
