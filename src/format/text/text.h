/*
 * text.h - typed values from text: CSV and JSON lines share this (format layer).
 *
 * Text formats carry no types, so a reader either takes a schema or infers
 * one from a sample of rows. Inference classifies each non-empty cell as
 * bool, integer, float, date, timestamp (with or without zone) or string and
 * widens per column (integer + float -> float; anything + string -> string;
 * date + timestamp -> timestamp). Parsing appends a cell to a column builder
 * of the schema's type, with an error that names the problem.
 */
#ifndef TM_FORMAT_TEXT_TEXT_H
#define TM_FORMAT_TEXT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/arrow/batch.h"
#include "io/io.h"

/** Options shared by the CSV and JSON-lines readers. */
typedef struct tm_text_options {
  int version;                      /* TM_TEXT_OPTIONS_VERSION */
  int64_t sample_rows;              /* rows read to infer a schema (default 1000) */
  int64_t batch_rows;               /* rows per batch (default 65,536) */
  char delimiter;                   /* CSV: field separator (default ',') */
  char quote;                       /* CSV: quote character (default '"'); doubled inside quotes */
  char escape;                      /* CSV: inside quotes, makes the next byte literal (0: none) */
  bool no_header;                   /* CSV: the first record is data */
  int json_format;                  /* JSON: TM_JSON_AUTO, TM_JSON_LINES or TM_JSON_ARRAY */
  const char *const *string_columns;/* inferred as utf8 whatever they hold (ISO8601 time columns) */
  size_t n_string_columns;
  size_t max_record_bytes;          /* longest record or line (default 16 MiB) */
} tm_text_options;

#define TM_TEXT_OPTIONS_VERSION 2
void tm_text_options_init(tm_text_options *o);

/*
 * How a JSON file holds its objects: one per line, or one top-level array
 * of objects. AUTO reads an array when the first byte that is not blank is
 * '[' (a JSON-lines file never starts so), lines otherwise.
 */
#define TM_JSON_AUTO 0
#define TM_JSON_LINES 1
#define TM_JSON_ARRAY 2

/** What a cell of text looks like. */
typedef enum tm_text_kind {
  TM_TEXT_NULL = 0, /* empty */
  TM_TEXT_BOOL,
  TM_TEXT_INT,
  TM_TEXT_FLOAT,
  TM_TEXT_DATE,
  TM_TEXT_TIMESTAMP,   /* no zone */
  TM_TEXT_TIMESTAMPTZ, /* with a zone */
  TM_TEXT_STRING
} tm_text_kind;

tm_text_kind tm_text_classify(const char *s, size_t len);
/** Widens a column's inferred kind with one more cell's kind. */
tm_text_kind tm_text_widen(tm_text_kind col, tm_text_kind cell);
/** The column type for an inferred kind (NULL-only columns become utf8). */
tm_type tm_text_kind_type(tm_text_kind k);

/**
 * Parses text into one more cell of cb's type. An empty cell is NULL. Bad
 * text is TM_EINVALID with a message like "expected an integer, got 'x1'".
 */
int tm_text_append(tm_colbuilder *cb, const char *s, size_t len, tm_error *err) TM_WARN_UNUSED;

/*
 * A buffered forward reader over a tm_input, for line- and record-oriented
 * formats. It keeps at most max_record_bytes plus one read chunk in memory.
 * A UTF-8 byte-order mark at the start of the input is skipped. An input
 * that starts with the magic bytes of a compressed stream (gzip, zstd,
 * bzip2, xz) or of a Parquet file is TM_ECORRUPT naming what it is: read
 * as text it would load garbage.
 */
typedef struct tm_text_scanner {
  tm_input *in;        /* borrowed */
  uint64_t pos;        /* input offset of buf[0] */
  uint64_t size;       /* input size */
  char *buf;           /* owned */
  size_t len, cap;     /* bytes held, capacity */
  size_t start;        /* first unconsumed byte in buf */
  size_t max_record;
  int64_t line;        /* 1-based line number of the next record */
  bool eof;
  bool started;        /* the start of the input was checked (BOM, magic) */
  int json_state;      /* tm_text_scanner_json_object: 0 before '[', 1 in, 2 after ']' */
  bool json_need_comma;
} tm_text_scanner;

int tm_text_scanner_init(tm_text_scanner *s, tm_input *in, size_t max_record, tm_error *err)
    TM_WARN_UNUSED;
void tm_text_scanner_dispose(tm_text_scanner *s);
/**
 * The next line without its "\n" or "\r\n" (a view valid until the next call).
 * TM_ITEROVER at the end; TM_ETOOLARGE for a line over max_record bytes.
 */
int tm_text_scanner_line(tm_text_scanner *s, tm_strview *out, tm_error *err) TM_WARN_UNUSED;
/**
 * The next CSV record (RFC 4180: quoted fields may hold delimiters, quotes
 * doubled, and newlines). fields receive views of unescaped text, valid
 * until the next call; quoted[i] tells a quoted empty string from an empty
 * (NULL) field. *n_out is the field count.
 */
typedef struct tm_csv_record {
  tm_strview *fields; /* owned by the record */
  bool *quoted;
  size_t n, cap;
  tm_buf text;        /* unescaped field bytes */
} tm_csv_record;

void tm_csv_record_init(tm_csv_record *r);
void tm_csv_record_dispose(tm_csv_record *r);
int tm_text_scanner_csv(tm_text_scanner *s, const tm_text_options *opts, tm_csv_record *rec,
                        tm_error *err) TM_WARN_UNUSED;

/**
 * The first byte that is not JSON whitespace, without consuming anything
 * (*c_out = -1 when the input is blank or only whitespace within the first
 * max_record bytes).
 */
int tm_text_scanner_peek(tm_text_scanner *s, int *c_out, tm_error *err) TM_WARN_UNUSED;
/**
 * The next object of a file holding one top-level JSON array of objects
 * ("[{...}, {...}]"): a view of the object's text (valid until the next
 * call), found by matching braces outside strings; the caller parses it.
 * *line_out is the line the object starts on. TM_ITEROVER after the closing
 * ']'; TM_ECORRUPT (naming the file and line) for anything else where an
 * object, ',' or ']' belongs, or for text after the array; TM_ETOOLARGE for
 * an object over max_record bytes.
 */
int tm_text_scanner_json_object(tm_text_scanner *s, tm_strview *out, int64_t *line_out,
                                tm_error *err) TM_WARN_UNUSED;

#endif
