/*
 * sqlsplit.h - splits SQL text typed or piped into `tidemark sql` into
 * statements (util layer; SPEC 1.2; also the
 * PostgreSQL wire protocol's simple queries, runtime/pgwire).
 *
 * Text arrives in pieces (a line at a time); a statement ends at a `;`
 * outside a string or comment, as in psql. The lexer knows DuckDB's
 * (PostgreSQL's) quoting: '...' strings with '' doubling, E'...' strings
 * with backslash escapes, "..." identifiers with "" doubling, $$...$$ and
 * $tag$...$tag$ dollar quoting, -- line comments and block comments
 * (slash-star to star-slash, nested as DuckDB nests them). A statement made
 * only of comments and blanks is no statement (";;" and "-- note;" run
 * nothing). It never judges the SQL itself: DuckDB does that, and the
 * read-only gate after it.
 */
#ifndef TM_UTIL_SQLSPLIT_H
#define TM_UTIL_SQLSPLIT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tm_sqlsplit {
  tm_buf buf;      /* text fed and not yet returned; the statement being read starts at 0 */
  size_t scan;     /* bytes of buf the lexer has consumed */
  int state;       /* lexer state at scan (sqlsplit.c) */
  int depth;       /* block comment nesting, in a block comment */
  bool backslash;  /* in an E'...' string: a backslash escapes the next byte */
  bool content;    /* the statement so far has text outside comments and blanks */
  size_t tag_off;  /* in a dollar-quoted string: where its opening $tag$ starts in buf */
  size_t tag_len;  /* ... and its length, both $ included */
  size_t closed;   /* offset just past the quote that last closed a string, or 0 */
} tm_sqlsplit;

/** Initialises an empty splitter; limit caps the bytes held (one long statement). */
void tm_sqlsplit_init(tm_sqlsplit *s, size_t limit);
void tm_sqlsplit_dispose(tm_sqlsplit *s);
/** Forgets everything fed (Ctrl-C at the prompt). */
void tm_sqlsplit_reset(tm_sqlsplit *s);

/**
 * Appends text. Errors: TM_EINVALID when text holds a NUL byte, TM_ETOOLARGE
 * when the unreturned text would pass the limit (either way nothing is
 * appended; the caller usually resets), TM_ENOMEM.
 */
int tm_sqlsplit_feed(tm_sqlsplit *s, const char *text, size_t len, tm_error *err)
    TM_WARN_UNUSED;
/**
 * The next complete statement, without its `;` and outer blanks: TM_OK with
 * *out (the caller's, tm_free), or TM_ITEROVER when no complete statement is
 * left (the rest waits for more text). TM_ENOMEM.
 */
int tm_sqlsplit_next(tm_sqlsplit *s, char **out, tm_error *err) TM_WARN_UNUSED;
/**
 * At the end of the input: the unterminated last statement, when it has
 * content (psql runs it too), as tm_sqlsplit_next gives one; TM_ITEROVER when
 * there is none. The splitter is empty afterwards. Call tm_sqlsplit_next
 * until TM_ITEROVER first.
 */
int tm_sqlsplit_finish(tm_sqlsplit *s, char **out, tm_error *err) TM_WARN_UNUSED;
/**
 * Whether a statement has begun: it has content, or a string or comment is
 * open. Up to date once tm_sqlsplit_next returned TM_ITEROVER. The REPL shows
 * its continuation prompt then, and takes a dot-command only when false.
 */
bool tm_sqlsplit_pending(const tm_sqlsplit *s);

#endif
