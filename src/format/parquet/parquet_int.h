/*
 * parquet_int.h - Parquet internals shared by the files of
 * src/format/parquet/ (format layer, private: include only from this folder,
 * the unit tests and the fuzz targets).
 *
 * The on-disk format we trust, field by field (parquet.thrift):
 *
 *   file   := "PAR1" column-chunk* footer len:u32le "PAR1"
 *             ("PARE" at the end: encrypted footer, refused)
 *   footer := FileMetaData, Thrift compact protocol, `len` bytes
 *
 *   FileMetaData  1 version:i32  2 schema:list<SchemaElement>  3 num_rows:i64
 *                 4 row_groups:list<RowGroup>  5 key_value_metadata:list<KeyValue>
 *                 6 created_by:string  7 column_orders:list<ColumnOrder>
 *                 8 encryption_algorithm (present: plaintext-footer encryption, refused)
 *   SchemaElement 1 type  2 type_length  3 repetition_type  4 name  5 num_children
 *                 6 converted_type  7 scale  8 precision  9 field_id  10 logicalType
 *                 (depth-first; the first element is the root group)
 *   RowGroup      1 columns:list<ColumnChunk>  2 total_byte_size  3 num_rows
 *                 5 file_offset  6 total_compressed_size  7 ordinal
 *   ColumnChunk   1 file_path (external files: refused)  2 file_offset  3 meta_data
 *                 4..7 offset/column index location  8 crypto_metadata  9 encrypted meta
 *   ColumnMetaData 1 type  2 encodings  3 path_in_schema  4 codec  5 num_values
 *                 6 total_uncompressed_size  7 total_compressed_size  8 kv metadata
 *                 9 data_page_offset  10 index_page_offset  11 dictionary_page_offset
 *                 12 statistics  14 bloom_filter_offset  15 bloom_filter_length
 *   Statistics    1 max (deprecated)  2 min (deprecated)  3 null_count  4 distinct_count
 *                 5 max_value  6 min_value  7 is_max_value_exact  8 is_min_value_exact
 *   PageHeader    1 type  2 uncompressed_page_size  3 compressed_page_size  4 crc
 *                 5 DataPageHeader  7 DictionaryPageHeader  8 DataPageHeaderV2
 *   DataPageHeader   1 num_values  2 encoding  3 definition_level_encoding
 *                    4 repetition_level_encoding  5 statistics
 *   DictionaryPageHeader 1 num_values  2 encoding  3 is_sorted
 *   DataPageHeaderV2 1 num_values  2 num_nulls  3 num_rows  4 encoding
 *                    5 definition_levels_byte_length  6 repetition_levels_byte_length
 *                    7 is_compressed (default true)  8 statistics
 *
 * Every string in these structs is a view into the footer (or page) bytes,
 * which the owner keeps alive. Counts read from the footer are checked
 * against the bytes left before anything is allocated from them, and the
 * whole parse is charged against an allocation budget proportional to the
 * footer size, so a small hostile footer cannot make us allocate much.
 */
#ifndef TM_FORMAT_PARQUET_PARQUET_INT_H
#define TM_FORMAT_PARQUET_PARQUET_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "format/parquet/parquet.h"
#include "format/thrift/thrift.h"
#include "util/str.h"

/* parquet.thrift enums */
enum {
  TM_PQ_BOOLEAN = 0,
  TM_PQ_INT32 = 1,
  TM_PQ_INT64 = 2,
  TM_PQ_INT96 = 3,
  TM_PQ_FLOAT = 4,
  TM_PQ_DOUBLE = 5,
  TM_PQ_BYTE_ARRAY = 6,
  TM_PQ_FLBA = 7
};

enum {
  TM_PQ_CT_UTF8 = 0,
  TM_PQ_CT_MAP = 1,
  TM_PQ_CT_MAP_KEY_VALUE = 2,
  TM_PQ_CT_LIST = 3,
  TM_PQ_CT_ENUM = 4,
  TM_PQ_CT_DECIMAL = 5,
  TM_PQ_CT_DATE = 6,
  TM_PQ_CT_TIME_MILLIS = 7,
  TM_PQ_CT_TIME_MICROS = 8,
  TM_PQ_CT_TIMESTAMP_MILLIS = 9,
  TM_PQ_CT_TIMESTAMP_MICROS = 10,
  TM_PQ_CT_UINT_8 = 11,
  TM_PQ_CT_UINT_16 = 12,
  TM_PQ_CT_UINT_32 = 13,
  TM_PQ_CT_UINT_64 = 14,
  TM_PQ_CT_INT_8 = 15,
  TM_PQ_CT_INT_16 = 16,
  TM_PQ_CT_INT_32 = 17,
  TM_PQ_CT_INT_64 = 18,
  TM_PQ_CT_JSON = 19,
  TM_PQ_CT_BSON = 20,
  TM_PQ_CT_INTERVAL = 21
};

#define TM_PQ_ABSENT INT32_MIN

enum { TM_PQ_REQUIRED = 0, TM_PQ_OPTIONAL = 1, TM_PQ_REPEATED = 2 };

/* LogicalType union member ids. */
enum {
  TM_PQ_LT_NONE = 0,
  TM_PQ_LT_STRING = 1,
  TM_PQ_LT_MAP = 2,
  TM_PQ_LT_LIST = 3,
  TM_PQ_LT_ENUM = 4,
  TM_PQ_LT_DECIMAL = 5,
  TM_PQ_LT_DATE = 6,
  TM_PQ_LT_TIME = 7,
  TM_PQ_LT_TIMESTAMP = 8,
  TM_PQ_LT_INTEGER = 10,
  TM_PQ_LT_UNKNOWN = 11, /* NullType: always null */
  TM_PQ_LT_JSON = 12,
  TM_PQ_LT_BSON = 13,
  TM_PQ_LT_UUID = 14,
  TM_PQ_LT_FLOAT16 = 15,
  TM_PQ_LT_FUTURE = 1000 /* a member this reader does not know */
};

enum { TM_PQ_UNIT_MILLIS = 1, TM_PQ_UNIT_MICROS = 2, TM_PQ_UNIT_NANOS = 3 };

enum {
  TM_PQ_PAGE_DATA = 0,
  TM_PQ_PAGE_INDEX = 1,
  TM_PQ_PAGE_DICTIONARY = 2,
  TM_PQ_PAGE_DATA_V2 = 3
};

typedef struct tm_pq_logical {
  int kind;          /* TM_PQ_LT_* */
  int32_t scale;     /* DECIMAL */
  int32_t precision; /* DECIMAL */
  bool utc;          /* TIME, TIMESTAMP: isAdjustedToUTC */
  int unit;          /* TIME, TIMESTAMP: TM_PQ_UNIT_*, 0 when unknown */
  int bit_width;     /* INTEGER: 8, 16, 32, 64 */
  bool is_signed;    /* INTEGER */
} tm_pq_logical;

typedef struct tm_pq_schema_elem {
  tm_strview name;
  int32_t type;           /* TM_PQ_BOOLEAN.., -1 for groups */
  int32_t type_length;    /* FLBA width, -1 when absent */
  int32_t repetition;     /* TM_PQ_REQUIRED.., -1 when absent */
  int32_t num_children;   /* 0 for leaves */
  int32_t converted_type; /* TM_PQ_CT_*, -1 when absent */
  int32_t scale;          /* TM_PQ_ABSENT when absent */
  int32_t precision;      /* TM_PQ_ABSENT when absent */
  int32_t field_id;       /* -1 when absent */
  tm_pq_logical logical;
} tm_pq_schema_elem;

typedef struct tm_pq_stats {
  tm_strview max, min;             /* deprecated fields 1, 2 (signed order) */
  tm_strview max_value, min_value; /* fields 5, 6 (the column's sort order) */
  bool has_max, has_min, has_max_value, has_min_value;
  int64_t null_count;     /* -1 when absent */
  int64_t distinct_count; /* -1 when absent */
  bool max_exact, min_exact; /* fields 7, 8 (true when absent) */
} tm_pq_stats;

typedef struct tm_pq_kv {
  tm_strview key;
  tm_strview value;
  bool has_value;
} tm_pq_kv;

typedef struct tm_pq_column_meta {
  int32_t type;
  int32_t *encodings; /* owned, n_encodings */
  uint32_t n_encodings;
  tm_strview *path;   /* owned array of views, n_path */
  uint32_t n_path;
  int32_t codec;
  int64_t num_values;
  int64_t total_uncompressed_size;
  int64_t total_compressed_size;
  tm_pq_kv *kv;       /* owned, n_kv */
  uint32_t n_kv;
  int64_t data_page_offset;
  int64_t index_page_offset;      /* -1 when absent */
  int64_t dictionary_page_offset; /* -1 when absent */
  bool has_stats;
  tm_pq_stats stats;
  int64_t bloom_filter_offset; /* -1 when absent */
  int32_t bloom_filter_length; /* -1 when absent */
} tm_pq_column_meta;

typedef struct tm_pq_column_chunk {
  bool has_file_path;
  tm_strview file_path;
  int64_t file_offset;
  bool has_meta;
  tm_pq_column_meta meta;
  int64_t offset_index_offset; /* -1 when absent */
  int32_t offset_index_length;
  int64_t column_index_offset; /* -1 when absent */
  int32_t column_index_length;
  bool encrypted; /* crypto_metadata or encrypted_column_metadata present */
} tm_pq_column_chunk;

typedef struct tm_pq_row_group {
  tm_pq_column_chunk *columns; /* owned, n_columns */
  uint32_t n_columns;
  int64_t total_byte_size;
  int64_t num_rows;
  int64_t file_offset;           /* -1 when absent */
  int64_t total_compressed_size; /* -1 when absent */
} tm_pq_row_group;

typedef struct tm_pq_file_meta {
  int32_t version;
  tm_pq_schema_elem *schema; /* owned, n_schema; [0] is the root */
  uint32_t n_schema;
  int64_t num_rows;
  tm_pq_row_group *row_groups; /* owned, n_row_groups */
  uint32_t n_row_groups;
  tm_pq_kv *kv; /* owned, n_kv */
  uint32_t n_kv;
  bool has_created_by;
  tm_strview created_by;
  uint8_t *column_orders; /* owned, n_column_orders: 1 = TYPE_ORDER, 0 = other */
  uint32_t n_column_orders;
  bool encrypted; /* encryption_algorithm present */
} tm_pq_file_meta;

typedef struct tm_pq_page_header {
  int32_t type;              /* TM_PQ_PAGE_* */
  int32_t uncompressed_size; /* >= 0 */
  int32_t compressed_size;   /* >= 0 */
  bool has_crc;
  uint32_t crc;
  bool has_data, has_dict, has_v2;
  /* DataPageHeader / DataPageHeaderV2 / DictionaryPageHeader */
  int32_t num_values;
  int32_t encoding;
  int32_t def_encoding; /* v1 */
  int32_t rep_encoding; /* v1 */
  int32_t num_nulls;    /* v2 */
  int32_t num_rows;     /* v2 */
  int32_t def_len;      /* v2: definition levels byte length */
  int32_t rep_len;      /* v2: repetition levels byte length */
  bool is_compressed;   /* v2 (default true) */
} tm_pq_page_header;

/* The largest footer we read (metadata of many thousand columns fits). */
#define TM_PQ_MAX_FOOTER ((size_t)256 << 20)
/* Largest page (compressed or not). */
#define TM_PQ_MAX_PAGE ((size_t)1 << 30)

/** Parses a footer of len bytes. Views point into data, which must outlive out. */
int tm_parquet__parse_footer(tm_pq_file_meta *out, const uint8_t *data, size_t len,
                             tm_error *err) TM_WARN_UNUSED;
void tm_parquet__file_meta_dispose(tm_pq_file_meta *m);
/** Parses a page header at data; *used_out is its size in bytes. */
int tm_parquet__parse_page_header(tm_pq_page_header *out, const uint8_t *data, size_t len,
                                  size_t *used_out, tm_error *err) TM_WARN_UNUSED;

/* ---- the leaf columns of a file's schema ------------------------------- */

typedef struct tm_pq_leaf {
  size_t elem;       /* index into meta.schema */
  size_t field;      /* top-level field it belongs to */
  int max_def;
  int max_rep;
  char *path;        /* owned: dotted path for messages */
} tm_pq_leaf;

struct tm_parquet_file {
  tm_input *in;          /* owned */
  char *name;            /* owned: the input's name, for messages */
  uint64_t size;         /* file size */
  uint8_t *footer;       /* owned footer bytes */
  size_t footer_len;
  tm_pq_file_meta meta;
  tm_pq_leaf *leaves;    /* owned, n_leaves, in column-chunk order */
  size_t n_leaves;
  tm_parquet_field *fields; /* owned, n_fields (names and reasons owned) */
  size_t n_fields;
  bool pad_chunks;       /* old parquet-mr: chunk sizes omit the dictionary header */
  bool verify_crc;       /* page CRCs are checked (opts, and files tidemark wrote) */
  tm_parquet_open_options opts;
  tm_time_unit int96_unit; /* unit INT96 columns are read in */
};

/** Builds leaves and fields from meta.schema. */
int tm_parquet__build_schema(tm_parquet_file *f, tm_error *err) TM_WARN_UNUSED;
/**
 * The tm_type of a leaf schema element. TM_EUNSUPPORTED (reason in err) for
 * types we cannot represent, TM_ECORRUPT for invalid annotations.
 */
int tm_parquet__map_type(const tm_pq_schema_elem *e, tm_time_unit int96_unit, tm_type *out,
                         tm_error *err) TM_WARN_UNUSED;

/* ---- codecs (codec.c) --------------------------------------------------- */

typedef struct tm_pq_codec_ctx {
  void *zstd_d; /* ZSTD_DCtx *, created on first use */
  void *zstd_c; /* ZSTD_CCtx *, created on first use */
} tm_pq_codec_ctx;

void tm_parquet__codec_ctx_dispose(tm_pq_codec_ctx *c);
/** Whether the reader can decompress codec. */
bool tm_parquet__codec_supported(int codec);
/**
 * Decompresses src into exactly dst_len bytes at dst. Output of any other
 * size is TM_ECORRUPT.
 */
int tm_parquet__decompress(tm_pq_codec_ctx *c, int codec, const uint8_t *src, size_t src_len,
                           uint8_t *dst, size_t dst_len, tm_error *err) TM_WARN_UNUSED;
/** Compresses src, appending to out (UNCOMPRESSED, SNAPPY, GZIP, ZSTD). */
int tm_parquet__compress(tm_pq_codec_ctx *c, int codec, int level, const uint8_t *src,
                         size_t src_len, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

/* ---- encodings (encoding.c) ---------------------------------------------- */

/*
 * RLE / bit-packed hybrid decoder (levels, dictionary indices, RLE booleans).
 * Reads from a byte range it does not own.
 */
typedef struct tm_pq_rle {
  const uint8_t *p, *end;
  int bit_width;      /* 0..32 */
  uint32_t run_left;  /* values left in the current run */
  bool packed;        /* current run is bit-packed */
  uint32_t value;     /* RLE run value */
  uint64_t bit_pos;   /* packed run: next bit (relative to run_start) */
  const uint8_t *run_start;
  uint32_t run_bytes; /* packed run: bytes available for the run */
} tm_pq_rle;

void tm_parquet__rle_init(tm_pq_rle *d, const uint8_t *p, size_t len, int bit_width);
/**
 * Decodes exactly n values into out. TM_ECORRUPT when the data ends first or
 * a run is malformed (zero length, value wider than bit_width).
 */
int tm_parquet__rle_get(tm_pq_rle *d, uint32_t *out, size_t n, tm_error *err) TM_WARN_UNUSED;
/**
 * Decodes n definition levels of width 1 (max_def = 1) straight into a
 * validity bitmap starting at bit `bit_off`; counts the valid ones. Bits must
 * be zeroed beforehand.
 */
int tm_parquet__rle_validity(tm_pq_rle *d, uint8_t *bits, int64_t bit_off, size_t n,
                             size_t *valid_out, tm_error *err) TM_WARN_UNUSED;
/** Largest value the decoder returned so far is not tracked; callers check bounds. */

/** Legacy BIT_PACKED levels (MSB first) of width 1 into a validity bitmap. */
int tm_parquet__bitpacked_validity(const uint8_t *p, size_t len, uint64_t first, uint8_t *bits,
                                   int64_t bit_off, size_t n, size_t *valid_out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * DELTA_BINARY_PACKED: decodes every value of the stream at p (up to len
 * bytes) into a growing buffer of int64 (is64) or int32 values. *used_out is
 * the bytes the stream took. At most max_values are accepted.
 */
int tm_parquet__delta_decode(const uint8_t *p, size_t len, bool is64, size_t max_values,
                             tm_buf *out, size_t *n_out, size_t *used_out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Appends n values of bit_width bits (0..32) in the RLE / bit-packed hybrid:
 * repeats of 8 or more become RLE runs, the rest bit-packed groups of 8 (the
 * last group zero-padded; readers know the count).
 */
int tm_parquet__rle_encode(tm_buf *out, const uint32_t *v, size_t n, int bit_width,
                           tm_error *err) TM_WARN_UNUSED;

/** Bit width needed for values up to max (0 for 0). */
static inline int tm_parquet__bit_width(uint64_t max) {
  return max == 0 ? 0 : 64 - __builtin_clzll(max);
}

/** IEEE half (binary16, little-endian bytes) to float. */
float tm_parquet__half_to_float(uint16_t h);
uint16_t tm_parquet__float_to_half(float f);

/* ---- statistics (stats.c) ------------------------------------------------- */

/**
 * Converts a column chunk's statistics to tm_col_stats of the field's type,
 * following the sort-order rules (see stats.c). Unknown parts are left unset.
 */
void tm_parquet__chunk_stats(const tm_parquet_file *f, size_t rg, size_t field,
                             tm_col_stats *out);

/* ---- column chunk decoding (column.c) ------------------------------------ */

typedef struct tm_pq_column tm_pq_column;

/** Describes one flat column to decode (used by the reader and the page fuzzer). */
typedef struct tm_pq_column_desc {
  const char *file;    /* for messages */
  const char *name;    /* column name, for messages */
  int32_t phys;        /* TM_PQ_* physical type */
  int32_t type_length; /* FLBA width */
  tm_type type;        /* output type */
  int max_def;         /* 0 or 1; any (<= 255) with `levels` */
  int max_rep;         /* 0; any (<= 255) with `levels` */
  bool levels;         /* a leaf of a nested field: read with tm_parquet__column_read_levels */
  int32_t codec;
  int64_t num_values;  /* values in the chunk */
  bool verify_crc;
  bool chunk_borrowed; /* the chunk bytes belong to the caller (not freed) */
} tm_pq_column_desc;

/**
 * A decoder over one column chunk held in memory (chunk: owned by the
 * decoder after the call and released with tm_free, unless
 * desc->chunk_borrowed, when it must outlive the decoder's use of it). Pages
 * are decompressed one at a time as rows are requested.
 */
int tm_parquet__column_new(tm_pq_column **out, const tm_pq_column_desc *desc, uint8_t *chunk,
                           size_t chunk_len, tm_error *err) TM_WARN_UNUSED;
/**
 * Points an existing decoder at the next column chunk (of the same column in
 * another row group), keeping its buffers and codec contexts. Takes chunk.
 */
int tm_parquet__column_reset(tm_pq_column *c, const tm_pq_column_desc *desc, uint8_t *chunk,
                             size_t chunk_len, tm_error *err) TM_WARN_UNUSED;
/**
 * Reads n level entries of a nested leaf (desc.levels; n <= the entries left
 * in the chunk): their repetition and definition levels into rep[0..n) and
 * def[0..n) (each checked against max_rep/max_def), and the value of every
 * entry whose definition level is max_def appended densely (no nulls) to
 * vals. *n_vals gets the count of values appended.
 */
int tm_parquet__column_read_levels(tm_pq_column *c, int64_t n, uint8_t *rep, uint8_t *def,
                                   tm_colbuilder *vals, int64_t *n_vals,
                                   tm_error *err) TM_WARN_UNUSED;
/** Level entries not yet read from the chunk. */
int64_t tm_parquet__column_left(const tm_pq_column *c);
/** Appends the next n rows to cb (whose type is desc->type). */
int tm_parquet__column_read(tm_pq_column *c, tm_colbuilder *cb, int64_t n, tm_error *err)
    TM_WARN_UNUSED;
void tm_parquet__column_free(tm_pq_column *c);

/*
 * Big-endian two's complement of len bytes (Parquet's DECIMAL in binary) to
 * decimal128 little-endian; 0 bytes are 0 (stats.c). False when the value
 * does not fit in 16 bytes.
 */
bool tm_parquet__be_to_dec128(const uint8_t *src, size_t len, uint8_t out[16]);

/* ---- nested fields as JSON text (nested.c) ------------------------------ */

/** The node tree of one nested field. */
typedef struct tm_pq_ntree tm_pq_ntree;
/**
 * Builds the tree of the field whose schema elements (depth-first, as in the
 * footer) start at elems[0]; n_elems bounds the walk (elements after the
 * field's subtree are not read). Leaves get their tm_type (an unsupported
 * leaf type is TM_EUNSUPPORTED naming it); LIST and MAP groups are checked.
 */
int tm_parquet__ntree_new(tm_pq_ntree **out, const tm_pq_schema_elem *elems, size_t n_elems,
                          tm_time_unit int96_unit, tm_error *err) TM_WARN_UNUSED;
void tm_parquet__ntree_free(tm_pq_ntree *t);
size_t tm_parquet__ntree_leaves(const tm_pq_ntree *t);
/** Leaf `leaf` (0.. in schema order): its value type and maximum levels. */
int tm_parquet__ntree_leaf_info(const tm_pq_ntree *t, size_t leaf, tm_type *type, int *max_def,
                                int *max_rep);

/** The decoded levels and values of one leaf (of a row group), and the read position. */
typedef struct tm_pq_nleaf {
  const uint8_t *rep, *def; /* n entries */
  size_t n;
  tm_colview vals;          /* the values of entries at the maximum definition level */
  size_t pos;               /* next entry (a row start) */
  int64_t vcur;             /* next value */
} tm_pq_nleaf;

/**
 * Appends the next `rows` rows of the field as JSON text (a NULL field as
 * NULL) to out (utf8), advancing each leaf's pos and vcur. Levels that do
 * not agree between leaves, or announce more values than stored, are
 * TM_ECORRUPT naming file and column.
 */
int tm_parquet__nested_render(const tm_pq_ntree *t, tm_pq_nleaf *leaves, int64_t rows,
                              tm_colbuilder *out, const char *file, const char *column,
                              tm_error *err) TM_WARN_UNUSED;

/** The Arrow type of the whole field (LIST, STRUCT or MAP) and whether it is nullable. */
int tm_parquet__ntree_type(const tm_pq_ntree *t, tm_type *out, bool *nullable, tm_error *err)
    TM_WARN_UNUSED;
/* The id slots (schema.h) of the tree's type, n_ids of them (the type's
 * tm_type_id_slots); TM_ECORRUPT when the count differs. */
int tm_parquet__ntree_ids(const tm_pq_ntree *t, int32_t *ids, size_t n_ids);
/**
 * Appends the next `rows` rows of the field as native nested values to out
 * (a builder of tm_parquet__ntree_type's type), with the checks of
 * tm_parquet__nested_render.
 */
int tm_parquet__nested_build(const tm_pq_ntree *t, tm_pq_nleaf *leaves, int64_t rows,
                             tm_colbuilder *out, const char *file, const char *column,
                             tm_error *err) TM_WARN_UNUSED;

#endif
