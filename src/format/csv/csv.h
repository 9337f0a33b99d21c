/*
 * csv.h - CSV files as batches (format layer).
 *
 * RFC 4180: a header row (unless no_header), comma-separated (or another
 * delimiter), fields optionally quoted (opts->quote, doubled for itself;
 * opts->escape, when set, makes the next byte inside quotes literal),
 * newlines inside quotes. An empty unquoted field is NULL; a quoted empty
 * field is an empty string. A record with more or fewer fields than the
 * header is TM_ECORRUPT naming the file and line; blank lines are skipped. Types come from a given schema or are inferred from a sample of
 * rows (format/text/text.h). With a header, columns are matched to the
 * schema by name (ASCII case-insensitive); schema columns the file lacks read
 * as NULL, file columns the schema lacks are skipped.
 */
#ifndef TM_FORMAT_CSV_CSV_H
#define TM_FORMAT_CSV_CSV_H

#include "format/text/text.h"

typedef struct tm_csv_reader tm_csv_reader;

/**
 * Infers a schema from the header and the first opts->sample_rows rows.
 * out must be initialised and empty. TM_ECORRUPT for a malformed file.
 */
int tm_csv_infer_schema(tm_schema *out, tm_input *in, const tm_text_options *opts,
                        tm_error *err) TM_WARN_UNUSED;

/**
 * Opens a reader producing batches of schema (copied). in is borrowed and
 * must outlive the reader. Release with tm_csv_reader_free.
 */
int tm_csv_reader_open(tm_csv_reader **out, tm_input *in, const tm_schema *schema,
                       const tm_text_options *opts, tm_error *err) TM_WARN_UNUSED;
/** The next batch; TM_ITEROVER at the end. Errors name the file and line. */
int tm_csv_reader_next(tm_csv_reader *r, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
void tm_csv_reader_free(tm_csv_reader *r);

#endif
