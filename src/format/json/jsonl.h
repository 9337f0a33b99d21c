/*
 * jsonl.h - JSON files as batches: JSON lines or one top-level array of
 * objects (format layer).
 *
 * One JSON object per line (blank lines skipped), or one array of objects
 * ("[{...}, {...}]"): opts->json_format says which, or TM_JSON_AUTO decides
 * by the first byte that is not blank ('[': an array). Keys become columns;
 * a schema is given or inferred from a sample (JSON numbers, booleans and
 * strings; strings that are RFC 3339 dates or timestamps infer as such unless
 * listed in opts->string_columns; nested objects and arrays become their JSON
 * text). Keys missing on a line are NULL; keys not in the schema are skipped.
 * Parsing uses jansson, one line or one array element at a time (the array is
 * cut into elements by the text scanner), so memory is bounded by the batch
 * and the longest line or element.
 */
#ifndef TM_FORMAT_JSON_JSONL_H
#define TM_FORMAT_JSON_JSONL_H

#include "format/text/text.h"

typedef struct tm_jsonl_reader tm_jsonl_reader;

int tm_jsonl_infer_schema(tm_schema *out, tm_input *in, const tm_text_options *opts,
                          tm_error *err) TM_WARN_UNUSED;
/** in is borrowed and must outlive the reader. Release with tm_jsonl_reader_free. */
int tm_jsonl_reader_open(tm_jsonl_reader **out, tm_input *in, const tm_schema *schema,
                         const tm_text_options *opts, tm_error *err) TM_WARN_UNUSED;
/** The next batch; TM_ITEROVER at the end. Errors name the file and line. */
int tm_jsonl_reader_next(tm_jsonl_reader *r, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
void tm_jsonl_reader_free(tm_jsonl_reader *r);

#endif
