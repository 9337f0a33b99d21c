/*
 * render.h - values as text, and tabular output as table, CSV or JSON
 * (format layer).
 *
 * One text form per type, used by every output (CLI, HTTP, tests):
 * integers in decimal; floats in the shortest form that reads back exactly
 * (NaN, inf, -inf); bool true/false; decimals exactly with their scale
 * ("-12.30"); dates YYYY-MM-DD; times HH:MM:SS[.ffffff]; timestamps
 * RFC 3339 (`2026-11-30T03:08:13.5Z` with a zone, no `Z` without one);
 * UUIDs 8-4-4-4-12; binary as printable ASCII with \xHH escapes.
 *
 * tm_out is a streaming writer: header once, then rows of cells, then end.
 * Rows come from batches (tm_out_batch) or from any row source that can give
 * each cell as text plus a kind (the SQL layer feeds DuckDB results).
 *
 * JSON is written compact, as Spice's /v1/sql writes it: `[{"a":1},{"a":2}]`
 * and a newline, one line whatever the row count (Spice's clients split an
 * answer on newlines to tell a stream of JSON documents from one document).
 */
#ifndef TM_FORMAT_ARROW_RENDER_H
#define TM_FORMAT_ARROW_RENDER_H

#include <stdio.h>

#include "format/arrow/batch.h"
#include "util/buf.h"

/**
 * Decimal digits without printf, for renderers of whole columns: the count of
 * v's digits, and v written so that its last digit is just before end
 * (returns its first; end - 20 must be writable).
 */
size_t tm_u64_digits(uint64_t v);
char *tm_u64_format_back(char *end, uint64_t v);

/** Appends the text form of v (which must not be NULL) to out. */
int tm_value_render(tm_buf *out, const tm_type *type, const tm_value *v, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Appends cell `row` of c as JSON, as DuckDB's to_json writes it: nested
 * values as arrays ([..]), objects ({"f":..}; a MAP's keys as strings of their
 * text), NULL as null; numbers (finite) and booleans bare; every other value
 * as a string of its text form. The one JSON form of nested data (issue 16):
 * JSON output, the text of nested cells in CSV and tables, the sqlite engine.
 */
int tm_colview_json(tm_buf *out, const tm_colview *c, int64_t row, tm_error *err)
    TM_WARN_UNUSED;
/**
 * A copy of in whose nested columns are utf8 JSON text (tm_colview_json; a
 * NULL stays NULL), for stores that keep nested values as text (the sqlite
 * engine).
 */
int tm_batch_nested_as_json(const tm_batch *in, tm_batch *out, tm_error *err) TM_WARN_UNUSED;
/** s with every nested column's type replaced by utf8 (in place). */
void tm_schema_nested_as_json(tm_schema *s);
/** Decimal128 (little-endian) with scale to text. buf needs 48 bytes. */
size_t tm_decimal_format(const uint8_t le16[16], int32_t scale, char *buf, size_t cap);
/** Shortest exact text of a double (NaN, inf, -inf for specials). buf needs 32 bytes. */
size_t tm_double_format(double v, char *buf, size_t cap);

typedef enum tm_out_format {
  TM_OUT_TABLE = 0, /* aligned text table with a header rule */
  TM_OUT_CSV,       /* RFC 4180, header row */
  TM_OUT_JSON,      /* an array of row objects */
  TM_OUT_JSONL,     /* one object per line */
  TM_OUT_SPICE_V1   /* Spice's application/vnd.spiceai.sql.v1+json (tm_out_begin_fields) */
} tm_out_format;

/*
 * TM_OUT_SPICE_V1 writes {"row_count":N,"schema":{"fields":[...],"metadata":{}},
 * "data":[row objects as TM_OUT_JSON writes them]}, the fields as arrow-rs
 * serializes an Arrow Field (name, data_type, nullable, dict_id 0,
 * dict_is_ordered false, metadata {}). Spice puts row_count first, and so does
 * the writer while the rows it holds stay under TM_OUT_SPICE_HOLD bytes: it
 * keeps them until the end. Past that it sends the schema and the rows held,
 * streams the rest, and writes row_count last (`..."data":[...],"row_count":N}`),
 * so that memory stays bounded; JSON member order carries no meaning.
 */
#define TM_OUT_SPICE_HOLD ((size_t)256 << 10)

/** Parses "table", "csv", "json", "jsonl". */
int tm_out_format_parse(const char *s, tm_out_format *out);

typedef enum tm_cell_kind {
  TM_CELL_NULL = 0,
  TM_CELL_NUMBER, /* emitted bare in JSON */
  TM_CELL_BOOL,   /* emitted bare in JSON ("true"/"false") */
  TM_CELL_TEXT,   /* quoted in JSON */
  TM_CELL_JSON    /* a JSON value (nested data): bare in JSON, its text in CSV and tables */
} tm_cell_kind;

/** Appends s as a JSON string literal (quoted, escaped; invalid UTF-8 as U+FFFD). */
int tm_json_string(tm_buf *b, const char *s, size_t len, tm_error *err) TM_WARN_UNUSED;

/*
 * The writer sends bytes to a sink. A table is buffered until the end (to
 * align columns) up to a row cap; CSV and JSON stream.
 */
typedef int (*tm_out_sink_fn)(const char *data, size_t len, void *payload);

typedef struct tm_out {
  tm_out_format format;
  tm_out_sink_fn sink;
  void *payload;
  size_t n_cols;
  char **names;        /* owned column names */
  int64_t n_rows;      /* rows written */
  tm_buf line;         /* scratch for one row */
  tm_buf table;        /* TABLE: all cells, NUL-separated */
  size_t *widths;      /* TABLE: display width per column */
  bool *right_align;   /* TABLE: numbers align right */
  char **types;        /* SPICE_V1: owned data_type JSON texts, n_cols */
  bool streaming;      /* SPICE_V1: the head went out; rows are no longer held (in table) */
  tm_error sink_err;
} tm_out;

/** A sink writing to a FILE * (payload). */
int tm_out_file_sink(const char *data, size_t len, void *payload);

int tm_out_begin(tm_out *o, tm_out_format format, const char *const *names, size_t n_cols,
                 tm_out_sink_fn sink, void *payload, tm_error *err) TM_WARN_UNUSED;
/**
 * tm_out_begin with each column's Arrow type: data_types[i] is the JSON text
 * of the arrow-rs DataType of column i ("Int64", {"Decimal128":[10,2]}; copied,
 * written as it is). TM_OUT_SPICE_V1 needs them (TM_EINVALID without); the
 * other formats do not use them (NULL is fine).
 */
int tm_out_begin_fields(tm_out *o, tm_out_format format, const char *const *names,
                        const char *const *data_types, size_t n_cols, tm_out_sink_fn sink,
                        void *payload, tm_error *err) TM_WARN_UNUSED;
/** One row: n_cols cells; texts[i] may be NULL for TM_CELL_NULL. */
int tm_out_row(tm_out *o, const char *const *texts, const size_t *lens,
               const tm_cell_kind *kinds, tm_error *err) TM_WARN_UNUSED;
/** Every row of a batch (whose columns match the header). */
int tm_out_batch(tm_out *o, const tm_batch *b, tm_error *err) TM_WARN_UNUSED;
/** The same, where json[i] marks utf8 columns that hold JSON texts (TM_CELL_JSON:
 * bare in JSON output, their text in CSV and tables); json may be NULL. */
int tm_out_batch_json(tm_out *o, const tm_batch *b, const bool *json,
                      tm_error *err) TM_WARN_UNUSED;
/** Flushes (the table, the closing bracket) and frees the writer. */
int tm_out_end(tm_out *o, tm_error *err) TM_WARN_UNUSED;
/** Frees without flushing (on an error path). */
void tm_out_dispose(tm_out *o);

#endif
