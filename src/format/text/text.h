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
  bool no_header;                   /* CSV: the first record is data */
  const char *const *string_columns;/* inferred as utf8 whatever they hold (ISO8601 time columns) */
  size_t n_string_columns;
  size_t max_record_bytes;          /* longest record or line (default 16 MiB) */
} tm_text_options;

#define TM_TEXT_OPTIONS_VERSION 1
void tm_text_options_init(tm_text_options *o);

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
int tm_text_scanner_csv(tm_text_scanner *s, char delimiter, tm_csv_record *rec, tm_error *err)
    TM_WARN_UNUSED;

#endif
