/*
 * source_int.h - shared by the source backends only (source layer).
 */
#ifndef TM_SOURCE_SOURCE_INT_H
#define TM_SOURCE_SOURCE_INT_H

#include "format/text/compress.h"
#include "source/source.h"

/** file:PATH, file://PATH, s3://BUCKET/PREFIX: sets of Parquet, CSV or JSON-lines files. */
int tm_source__open_fileset(tm_source **out, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/** The format params of a file, S3 or Azure source (fileset.c), checked and parsed. */
typedef struct tm_source__file_params {
  int forced;            /* file_format: a format of fileset.c, or its FMT_UNKNOWN */
  char delimiter, quote, escape;
  bool delimiter_set;    /* csv_delimiter given (a .tsv file is tab-separated otherwise) */
  bool no_header;
  int64_t sample_rows;   /* csv_schema_infer_max_records */
  int json_format;       /* json_format: TM_JSON_* of format/text/text.h */
  tm_compression compression; /* file_compression_type (CSV and JSON files) */
  bool compression_set;  /* given: it applies to every file, whatever its extension */
} tm_source__file_params;

/**
 * Parses file_format, csv_*, json_format and file_compression_type; an
 * unreadable value is TM_EINVALID naming the dataset, the param and the
 * allowed values. Other params are not looked at.
 */
int tm_source__file_params_parse(tm_source__file_params *out, const char *dataset,
                                 const tm_kv *params, tm_error *err) TM_WARN_UNUSED;

/** iceberg:... tables. The params of an iceberg: source (tm_source_check_params). */
int tm_source__iceberg_check_params(const char *from, const tm_kv *params,
                                    tm_error *err) TM_WARN_UNUSED;
int tm_source__open_iceberg(tm_source **out, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Points an iceberg: source opened on a metadata file at another one (a
 * catalog's new commit): the next describe reads it, or nothing when it is
 * the file already read. metadata_location: an absolute path, file: URL or
 * object-store URL of a *.metadata.json file.
 */
int tm_source__iceberg_follow(tm_source *ice, const char *metadata_location, tm_error *err)
    TM_WARN_UNUSED;
/** glue:DATABASE.TABLE (glue/glue_source.c). */
int tm_source__glue_check_params(const tm_kv *params, tm_error *err) TM_WARN_UNUSED;
int tm_source__open_glue(tm_source **out, const tm_source_options *opts, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Rearranges the columns of in (consumed) into want's order and types:
 * columns in is missing become NULL (when nullable), extra columns are
 * dropped, a type mismatch is an error naming file_name.
 */
int tm_source__conform(const tm_schema *want, tm_batch *in, tm_batch *out,
                       const char *file_name, tm_error *err) TM_WARN_UNUSED;

/**
 * Filters b (consumed) by pred and projects it onto columns (NULL: all) into
 * out. out may come back with zero rows.
 */
int tm_source__finish_batch(const tm_predicate *pred, const char *const *columns,
                            size_t n_columns, tm_batch *b, tm_batch *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
