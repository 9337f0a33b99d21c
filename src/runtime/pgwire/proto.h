/*
 * proto.h - the PostgreSQL frontend/backend protocol 3.0, as bytes
 * (runtime layer, pgwire; docs/PGWIRE.md): the startup packet, the frontend
 * messages a client sends and a writer for the backend messages.
 *
 * Everything here is pure: no sockets, no SQL. A message arrives as a type
 * byte and a body (its 32-bit length, which counts itself, already checked
 * against TM_PG_MSG_MAX by the reader); the parsers below read a body with
 * a bounded cursor and answer TM_OK or TM_ECORRUPT naming the field that
 * does not fit. What they return points into the body (views): it lives as
 * long as the body does.
 *
 * Wire format trusted here, field by field (PostgreSQL's protocol-message-
 * formats): integers big-endian; Int16 counts are >= 0; a String is bytes up
 * to a NUL inside the body; a parameter value is Int32 length (-1: NULL) and
 * that many bytes.
 */
#ifndef TM_RUNTIME_PGWIRE_PROTO_H
#define TM_RUNTIME_PGWIRE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

#define TM_PG_MSG_MAX ((size_t)16 << 20)     /* a frontend message's body, at most */
#define TM_PG_STARTUP_MAX ((size_t)10000)    /* a startup packet, as PostgreSQL caps it */
#define TM_PG_PARAMS_MAX 65535               /* values in one Bind */

#define TM_PG_CODE_V3 196608u                /* protocol 3.0 */
#define TM_PG_CODE_CANCEL 80877102u
#define TM_PG_CODE_SSL 80877103u
#define TM_PG_CODE_GSSENC 80877104u

/** A bounded reader over one body. */
typedef struct tm_pg_cursor {
  const uint8_t *p;
  size_t n, off;
} tm_pg_cursor;

/** The startup packet's body (after its length). Views into the body. */
typedef struct tm_pg_startup {
  uint32_t code;                 /* TM_PG_CODE_* */
  uint32_t cancel_pid, cancel_key; /* CancelRequest */
  const char *user, *database, *application_name, *client_encoding, *options;
} tm_pg_startup;

/** Parses a startup packet body of n bytes. TM_ECORRUPT or TM_EUNSUPPORTED (another version). */
int tm_pg_startup_parse(const uint8_t *body, size_t n, tm_pg_startup *out, tm_error *err)
    TM_WARN_UNUSED;

/** One value of a Bind: NULL when len < 0. */
typedef struct tm_pg_value {
  const uint8_t *ptr;
  int32_t len;
} tm_pg_value;

/** Parse ('P'). */
typedef struct tm_pg_parse {
  const char *name, *query;
  size_t n_types;
  const uint8_t *types;          /* n_types big-endian Int32 OIDs: tm_pg_oid_at */
} tm_pg_parse;

/** Bind ('B'). */
typedef struct tm_pg_bind {
  const char *portal, *stmt;
  size_t n_formats;
  const uint8_t *formats;        /* n_formats Int16 */
  size_t n_values;
  tm_pg_value *values;           /* owned (tm_free), n_values; ptrs into the body */
  size_t n_rformats;
  const uint8_t *rformats;       /* n_rformats Int16 */
} tm_pg_bind;

int tm_pg_parse_parse(const uint8_t *body, size_t n, tm_pg_parse *out, tm_error *err) TM_WARN_UNUSED;
/** On success out->values is the caller's (tm_free). */
int tm_pg_parse_bind(const uint8_t *body, size_t n, tm_pg_bind *out, tm_error *err) TM_WARN_UNUSED;
/** Describe ('D') and Close ('C'): a kind byte ('S' or 'P') and a name. */
int tm_pg_parse_target(const uint8_t *body, size_t n, char *kind, const char **name,
                       tm_error *err) TM_WARN_UNUSED;
/** Execute ('E'): a portal and a row limit (0: all). */
int tm_pg_parse_execute(const uint8_t *body, size_t n, const char **portal, uint32_t *max_rows,
                        tm_error *err) TM_WARN_UNUSED;
/** Query ('Q'): one String. */
int tm_pg_parse_query(const uint8_t *body, size_t n, const char **sql, tm_error *err) TM_WARN_UNUSED;
/** SASLInitialResponse ('p' after AuthenticationSASL): a mechanism and its data (len -1: none). */
int tm_pg_parse_sasl_initial(const uint8_t *body, size_t n, const char **mechanism,
                             const uint8_t **data, int32_t *len, tm_error *err) TM_WARN_UNUSED;

/** The i-th big-endian Int16 / Int32 of an array the parsers checked. */
int16_t tm_pg_i16_at(const uint8_t *a, size_t i);
uint32_t tm_pg_u32_at(const uint8_t *a, size_t i);

/*
 * The writer: backend messages appended to a buffer. tm_pg_begin opens a
 * message (type byte and a length to fill), tm_pg_end fills its length.
 */
int tm_pg_begin(tm_buf *b, char type, size_t *mark, tm_error *err) TM_WARN_UNUSED;
void tm_pg_end(tm_buf *b, size_t mark);
int tm_pg_put_i16(tm_buf *b, int16_t v, tm_error *err) TM_WARN_UNUSED;
int tm_pg_put_i32(tm_buf *b, int32_t v, tm_error *err) TM_WARN_UNUSED;
int tm_pg_put_i64(tm_buf *b, int64_t v, tm_error *err) TM_WARN_UNUSED;
int tm_pg_put_str(tm_buf *b, const char *s, tm_error *err) TM_WARN_UNUSED; /* with its NUL */

/** ErrorResponse: severity ERROR/FATAL, SQLSTATE code, message (NULs and newlines kept out). */
int tm_pg_put_error(tm_buf *b, const char *severity, const char *sqlstate, const char *message,
                    tm_error *err) TM_WARN_UNUSED;
/** ParameterStatus. */
int tm_pg_put_param(tm_buf *b, const char *name, const char *value, tm_error *err) TM_WARN_UNUSED;
/** A message with an empty body ('1' ParseComplete, '2', '3', 'n', 'I', 's'). */
int tm_pg_put_empty(tm_buf *b, char type, tm_error *err) TM_WARN_UNUSED;
/** CommandComplete with its tag. */
int tm_pg_put_complete(tm_buf *b, const char *tag, tm_error *err) TM_WARN_UNUSED;
/** ReadyForQuery with the transaction status ('I', 'T' or 'E'). */
int tm_pg_put_ready(tm_buf *b, char status, tm_error *err) TM_WARN_UNUSED;

#endif
