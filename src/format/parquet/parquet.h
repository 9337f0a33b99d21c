/*
 * parquet.h - the Parquet reader and writer (format layer).
 *
 * Debian packages no Parquet library for C, so tidemark has its own. The
 * reader reads every byte through a tm_input (local pread today, ranged
 * object-store reads later): it reads the footer with at most two reads,
 * then one read per projected column chunk of each row group it decodes.
 * Memory is bounded by the projected column chunks of one row group plus one
 * decompressed page per column and the batch being built.
 *
 * Reading:
 *
 *   tm_input *in;  tm_parquet_file *f;  tm_parquet_scan *s;  tm_batch b;
 *   tm_input_open_file(&in, path, &err);
 *   tm_parquet_open(&f, in, NULL, &err);              // takes `in`
 *   tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
 *   o.columns = idx; o.n_columns = 2;                 // projection (optional)
 *   o.predicate = &pred;                              // row-group pruning (optional)
 *   tm_parquet_scan_new(&s, f, &o, &err);
 *   tm_batch_init(&b);
 *   while ((rc = tm_parquet_scan_next(s, &b, &err)) == TM_OK) { ...; tm_batch_release(&b); }
 *   // rc == TM_ITEROVER at the end
 *   tm_parquet_scan_free(s);  tm_parquet_close(f);
 *
 * Schema: the top-level fields of the file, in order (tm_parquet_field).
 * Flat fields (required or optional primitives) are read as their type;
 * nested fields (groups, lists, maps, repeated primitives, at any depth and in
 * the legacy list encodings) are read as Arrow LIST / STRUCT / MAP arrays
 * (nested_native: a LIST group or a bare repeated field -> list, a MAP ->
 * map<key, value>, another group -> struct; nested.c) or as JSON text
 * (nested_as_json) when the scan asks for it; otherwise projecting one fails
 * with "unsupported nested column NAME" (issue 16).
 * Field ids (Parquet SchemaElement.field_id, used by Iceberg) are kept.
 *
 * Types (Parquet physical/logical -> tm_type):
 *   BOOLEAN -> bool; INT32 -> int32; INT64 -> int64; FLOAT -> float32;
 *   DOUBLE -> float64; BYTE_ARRAY -> binary; FIXED_LEN_BYTE_ARRAY(n) -> fixed(n);
 *   STRING/UTF8, ENUM, JSON -> utf8; INT(8|16|32|64, signed) -> int8..int64;
 *   INT(.., unsigned) -> uint8..uint64; DATE -> date32;
 *   TIME(MILLIS) -> time64(us); TIME(MICROS|NANOS) -> time64(us|ns);
 *   TIMESTAMP(unit, utc) -> timestamp(ms|us|ns, utc); legacy TIMESTAMP_MILLIS/
 *   MICROS -> timestamp(ms|us, UTC); INT96 -> timestamp(ns) (no zone; the unit
 *   is an open option);
 *   DECIMAL(p,s) on INT32, INT64, FIXED or BYTE_ARRAY -> decimal128(p,s);
 *   FLOAT16 -> float32; UUID -> fixed(16) with uuid = true.
 * INTERVAL and decimals wider than 38 digits are unsupported (the field has
 * an `unsupported` reason; scanning it fails).
 *
 * Errors: TM_ENOTFOUND / TM_EIO from the input; TM_ECORRUPT for malformed
 * bytes; TM_EUNSUPPORTED for valid files using something we do not read
 * (encryption, nested columns without nested_as_json, LZO, INTERVAL);
 * TM_ETOOLARGE past a limit;
 * TM_ENOMEM. Every message names the file, and the column where one applies.
 *
 * Thread safety: an open tm_parquet_file is immutable; several scans of one
 * file may run on different threads when its tm_input supports concurrent
 * read_at calls (the file and memory inputs do; their bytes_read/reads
 * counters are then not exact). One scan is one thread's.
 */
#ifndef TM_FORMAT_PARQUET_PARQUET_H
#define TM_FORMAT_PARQUET_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/predicate.h"
#include "io/io.h"
#include "util/error.h"
#include "util/str.h"

/* ---- opening a file ------------------------------------------------------ */

typedef struct tm_parquet_file tm_parquet_file;

typedef struct tm_parquet_open_options {
  int version;       /* TM_PARQUET_OPTIONS_VERSION */
  bool verify_crc;   /* check page CRCs where present (default: only in files tidemark wrote) */
  size_t max_footer; /* 0: 256 MiB */
  /*
   * Unit of INT96 timestamps: TM_UNIT_NANO (default; 0 means the default
   * too), TM_UNIT_MICRO or TM_UNIT_MILLI. Nanoseconds cover the years 1677
   * to 2262 only; a value outside the unit's range is a TM_ECORRUPT error
   * naming the column ("9999-12-31" end-of-time markers need MICRO).
   */
  tm_time_unit int96_unit;
  bool skip_crc;     /* check no page CRC, not even in files tidemark wrote */
} tm_parquet_open_options;

#define TM_PARQUET_OPTIONS_VERSION 1
#define TM_PARQUET_OPEN_OPTIONS_INIT {TM_PARQUET_OPTIONS_VERSION, false, 0, TM_UNIT_NANO, false}

/**
 * Reads and checks the footer of the Parquet file behind `in`. Takes
 * ownership of `in` (closed by tm_parquet_close, or at once on failure).
 * opts may be NULL. *out: release with tm_parquet_close.
 * Errors: TM_ECORRUPT (bad magic, footer, schema), TM_EUNSUPPORTED
 * (encrypted), TM_ETOOLARGE, TM_EIO, TM_ENOMEM.
 */
int tm_parquet_open(tm_parquet_file **out, tm_input *in, const tm_parquet_open_options *opts,
                    tm_error *err) TM_WARN_UNUSED;
/** Opens a local file (tm_input_open_file + tm_parquet_open). */
int tm_parquet_open_path(tm_parquet_file **out, const char *path,
                         const tm_parquet_open_options *opts, tm_error *err) TM_WARN_UNUSED;
/** Closes the file and its input. NULL is a no-op. */
void tm_parquet_close(tm_parquet_file *f);

/** The input's name (path or URL); valid while f lives. */
const char *tm_parquet_name(const tm_parquet_file *f);
/** The input, for I/O accounting (bytes_read, reads); owned by f. */
tm_input *tm_parquet_input(tm_parquet_file *f);
int64_t tm_parquet_num_rows(const tm_parquet_file *f);
size_t tm_parquet_num_row_groups(const tm_parquet_file *f);
int64_t tm_parquet_row_group_rows(const tm_parquet_file *f, size_t rg);
/** `created_by` (empty when absent); a view valid while f lives, not NUL-terminated. */
tm_strview tm_parquet_created_by(const tm_parquet_file *f);
/** File key/value metadata: count and entry i (views valid while f lives). */
size_t tm_parquet_kv_count(const tm_parquet_file *f);
void tm_parquet_kv_at(const tm_parquet_file *f, size_t i, tm_strview *key, tm_strview *value,
                      bool *has_value);

/* ---- schema -------------------------------------------------------------- */

typedef struct tm_parquet_field {
  char *name;              /* owned by the file */
  int32_t field_id;        /* -1 when the file has none */
  bool nullable;           /* OPTIONAL (or a nested field) */
  bool nested;             /* a group, list, map or repeated field (JSON text only) */
  tm_type type;            /* the column's type; id INVALID when unsupported */
  const char *unsupported; /* NULL when readable; else why not (owned by the file) */
  int32_t physical_type;   /* Parquet physical type (0..7), -1 for groups */
  int32_t type_length;     /* FIXED_LEN_BYTE_ARRAY width, else -1 */
  size_t leaf;             /* column-chunk index of a flat field */
  size_t elem;             /* its schema element (index in the footer's list) */
  size_t first_leaf;       /* the column chunks of its leaves: first_leaf.. */
  size_t n_leaves;         /* ..first_leaf + n_leaves - 1 (leaves are in field order) */
} tm_parquet_field;

size_t tm_parquet_num_fields(const tm_parquet_file *f);
/** Field i (0 <= i < num_fields); valid while f lives. */
const tm_parquet_field *tm_parquet_field_at(const tm_parquet_file *f, size_t i);
/** Index of the field named name, or -1. */
int tm_parquet_find_field(const tm_parquet_file *f, const char *name);
/** Index of the field with this field id, or -1. */
int tm_parquet_find_field_id(const tm_parquet_file *f, int32_t field_id);
/**
 * The readable schema as a tm_schema (names, types, nullability, field ids)
 * into an initialised, empty out. TM_EUNSUPPORTED naming the first field
 * that cannot be read ("unsupported nested column NAME").
 */
int tm_parquet_schema(const tm_parquet_file *f, tm_schema *out, tm_error *err) TM_WARN_UNUSED;

/**
 * The native type of nested field i (a LIST, STRUCT or MAP with its children,
 * as a scan with nested_native reads it) and its nullability. TM_EUNSUPPORTED
 * naming the column when a part has no type (an unsupported leaf, a MAP
 * without values), TM_ECORRUPT for a malformed subtree.
 */
int tm_parquet_nested_type(const tm_parquet_file *f, size_t i, tm_type *out, bool *nullable,
                           tm_error *err) TM_WARN_UNUSED;

/**
 * The field ids of nested field i's members (-1 where the file has none),
 * into ids: tm_type_id_slots(type) slots (schema.h) of type, the field's
 * tm_parquet_nested_type. A bare repeated field's element has no id.
 */
int tm_parquet_nested_ids(const tm_parquet_file *f, size_t i, const tm_type *type, int32_t *ids,
                          tm_error *err) TM_WARN_UNUSED;

/* ---- statistics ------------------------------------------------------------- */

/**
 * Statistics of field `field` in row group rg, as values of the field's
 * tm_type (min/max payloads are views into f's footer, valid while f lives).
 * Follows Parquet's sort-order rules: min_value/max_value are used when
 * present; the deprecated min/max only for signed-order columns; no min/max
 * for INT96, intervals, unknown column orders, or when a bound is NaN.
 * Unknown parts are unset (has_min false, null_count -1). row_count is the
 * row group's row count. Nested or unsupported fields get empty stats.
 */
void tm_parquet_column_stats(const tm_parquet_file *f, size_t rg, size_t field,
                             tm_col_stats *out);
/**
 * Whether row group rg may hold rows satisfying pred (conservative: true
 * unless statistics prove otherwise). Terms on columns the file lacks, or
 * whose type differs from the column's, cannot prune.
 */
bool tm_parquet_row_group_may_match(const tm_parquet_file *f, size_t rg,
                                    const tm_predicate *pred);

/* ---- column chunk metadata (for `tidemark parquet meta`) ------------------ */

typedef struct tm_parquet_chunk_info {
  const char *path;         /* dotted column path; owned by f */
  int32_t physical_type;
  int32_t codec;            /* Parquet CompressionCodec */
  uint32_t encodings;       /* bit (1 << Encoding) per listed encoding */
  int64_t num_values;
  int64_t compressed_size;
  int64_t uncompressed_size;
  int64_t data_page_offset;
  int64_t dictionary_page_offset; /* -1 when absent */
  bool has_null_count;
  int64_t null_count;
  bool has_distinct_count;
  int64_t distinct_count;
  size_t field;             /* the top-level field the leaf belongs to */
} tm_parquet_chunk_info;

/** Number of leaf columns (column chunks per row group). */
size_t tm_parquet_num_leaves(const tm_parquet_file *f);
/** Column chunk `leaf` of row group rg. TM_ECORRUPT when its metadata is missing. */
int tm_parquet_chunk_info_at(const tm_parquet_file *f, size_t rg, size_t leaf,
                             tm_parquet_chunk_info *out, tm_error *err) TM_WARN_UNUSED;
/** Names for display: "INT64", "ZSTD", "RLE_DICTIONARY" ("?" when unknown). */
const char *tm_parquet_physical_name(int32_t t);
const char *tm_parquet_codec_name(int32_t codec);
const char *tm_parquet_encoding_name(int32_t enc);

/* ---- scanning -------------------------------------------------------------- */

typedef struct tm_parquet_scan tm_parquet_scan;

typedef struct tm_parquet_scan_options {
  int version;                 /* TM_PARQUET_OPTIONS_VERSION */
  const size_t *columns;       /* field indices to read, in output order; NULL: all */
  size_t n_columns;
  const tm_predicate *predicate; /* prunes row groups; rows are not filtered; may be NULL */
  const size_t *row_groups;    /* row groups to consider, ascending; NULL: all */
  size_t n_row_groups;
  int64_t batch_rows;          /* rows per batch; 0: TM_BATCH_DEFAULT_ROWS */
  bool nested_as_json;         /* nested fields read as utf8 JSON text (nested.c), else refused */
  bool nested_native;          /* nested fields read as Arrow LIST/STRUCT/MAP arrays (nested.c);
                                * nested_as_json wins when both are set */
  const bool *native_columns;  /* per projected column (n_columns; may be NULL): read a nested
                                * one natively even under nested_as_json */
} tm_parquet_scan_options;

#define TM_PARQUET_SCAN_OPTIONS_INIT \
  {TM_PARQUET_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0, 0, false, false, NULL}

/**
 * Plans a scan of f (which must outlive the scan): checks the projection,
 * prunes row groups with the predicate's terms. Reads nothing yet.
 * opts may be NULL (every column, every row group). *out: tm_parquet_scan_free.
 * Errors: TM_EINVALID (bad column or row-group index), TM_EUNSUPPORTED
 * (a projected column is nested or of an unsupported type), TM_ENOMEM.
 */
int tm_parquet_scan_new(tm_parquet_scan **out, tm_parquet_file *f,
                        const tm_parquet_scan_options *opts, tm_error *err) TM_WARN_UNUSED;
/**
 * Decodes the next batch (at most batch_rows rows, never spanning row
 * groups) into out, which must be empty (tm_batch_init or released). The
 * batch's columns are the projection, named and typed as the fields.
 * Returns TM_OK, TM_ITEROVER after the last batch, or an error (the scan
 * cannot continue after an error).
 */
int tm_parquet_scan_next(tm_parquet_scan *s, tm_batch *out, tm_error *err) TM_WARN_UNUSED;

typedef struct tm_parquet_scan_stats {
  size_t row_groups_total;   /* row groups considered (the subset, or all) */
  size_t row_groups_read;    /* kept by pruning */
  size_t row_groups_skipped; /* pruned by statistics */
  int64_t rows_total;        /* rows in the kept row groups */
  int64_t rows_read;         /* rows returned so far */
  uint64_t bytes_read;       /* column-chunk bytes read so far */
} tm_parquet_scan_stats;

void tm_parquet_scan_get_stats(const tm_parquet_scan *s, tm_parquet_scan_stats *out);
/** The output schema of the scan's batches; valid while s lives. */
const tm_schema *tm_parquet_scan_schema(const tm_parquet_scan *s);
void tm_parquet_scan_free(tm_parquet_scan *s);

/* ---- writing ------------------------------------------------------------------ */

/**
 * Where the writer sends bytes, in order. Returns 0 or a negative tm_code
 * (with detail in err).
 */
typedef int (*tm_parquet_sink_fn)(const void *data, size_t len, void *payload, tm_error *err);

/** A sink appending to a tm_buf (payload: tm_buf *). */
int tm_parquet_sink_buf(const void *data, size_t len, void *payload, tm_error *err);
/** A sink writing to a tm_atomic_file (payload: tm_atomic_file *). */
int tm_parquet_sink_atomic_file(const void *data, size_t len, void *payload, tm_error *err);

typedef enum tm_parquet_codec {
  TM_PARQUET_UNCOMPRESSED = 0,
  TM_PARQUET_SNAPPY = 1,
  TM_PARQUET_GZIP = 2,
  TM_PARQUET_ZSTD = 6
} tm_parquet_codec;

typedef struct tm_parquet_writer_options {
  int version;             /* TM_PARQUET_OPTIONS_VERSION */
  tm_parquet_codec codec;  /* default ZSTD */
  int compression_level;   /* 0: the codec's default (ZSTD 3, GZIP 6) */
  int64_t row_group_rows;  /* rows per row group; 0: 1,048,576 */
  size_t row_group_bytes;  /* also flush a row group past this many buffered bytes; 0: 128 MiB */
  size_t page_bytes;       /* target uncompressed data page size; 0: 1 MiB */
  bool dictionary;         /* RLE_DICTIONARY where it pays (default true) */
  const tm_kv *kv;         /* file key/value metadata (copied); may be NULL */
  /* Field ids of nested columns' members (copied; may be NULL): per column,
   * NULL or tm_type_id_slots(type) ids (schema.h), written on the members'
   * schema elements (struct fields, a list's "element", a map's "key" and
   * "value") as Iceberg wants them. */
  const int32_t *const *nested_ids;
} tm_parquet_writer_options;

#define TM_PARQUET_WRITER_OPTIONS_INIT \
  {TM_PARQUET_OPTIONS_VERSION, TM_PARQUET_ZSTD, 0, 0, 0, 0, true, NULL, NULL}

typedef struct tm_parquet_writer tm_parquet_writer;

/**
 * Starts a file with this schema (copied; every type of tm_type is
 * supported; field ids >= 0 are written). Writes the leading magic through
 * the sink. opts may be NULL. *out: finish with tm_parquet_writer_close, or
 * drop with tm_parquet_writer_free.
 * Types written: bool BOOLEAN; int8/16/32 INT32 + INT(n,true); int64 INT64;
 * uint8/16/32 INT32 + INT(n,false); uint64 INT64 + INT(64,false); float32 FLOAT;
 * float64 DOUBLE; decimal128(p,s) INT32 (p<=9), INT64 (p<=18) or
 * FIXED_LEN_BYTE_ARRAY(minimal width) + DECIMAL; utf8 BYTE_ARRAY + STRING;
 * binary BYTE_ARRAY; fixed(n) FIXED_LEN_BYTE_ARRAY(n) (+ UUID when uuid);
 * date32 INT32 + DATE; time64 INT64 + TIME(unit); timestamp(ms|us|ns) INT64 +
 * TIMESTAMP(unit, utc); timestamp(s) is written as milliseconds.
 */
int tm_parquet_writer_new(tm_parquet_writer **out, const tm_schema *schema,
                          const tm_parquet_writer_options *opts, tm_parquet_sink_fn sink,
                          void *payload, tm_error *err) TM_WARN_UNUSED;
/**
 * Appends the rows of b, whose columns must match the schema by position and
 * type. Flushes row groups as they fill. The batch is not taken.
 */
int tm_parquet_writer_write(tm_parquet_writer *w, const tm_batch *b, tm_error *err)
    TM_WARN_UNUSED;
/** Flushes the current row group now (no-op when empty). */
int tm_parquet_writer_flush(tm_parquet_writer *w, tm_error *err) TM_WARN_UNUSED;
/**
 * Flushes, writes the footer and frees w (also on failure). The sink is not
 * closed: commit or abort the atomic file afterwards.
 */
int tm_parquet_writer_close(tm_parquet_writer *w, tm_error *err) TM_WARN_UNUSED;
/** Frees a writer without finishing the file. NULL is a no-op. */
void tm_parquet_writer_free(tm_parquet_writer *w);
/** Rows written so far (including buffered ones). */
int64_t tm_parquet_writer_rows(const tm_parquet_writer *w);

#endif
