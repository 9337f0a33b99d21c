/*
 * sqlreq.h - what a POST /v1/sql request asks for, read as Spice reads it
 * (runtime layer; SPEC 1.3, D4): the answer's format from the Accept header,
 * and the SQL text with its parameter values from the body.
 *
 * The body is the SQL text, except when the Content-Type is application/json
 * (Spice's clients: spice.js, spice-rs, spice-py): then it is Spice's
 * envelope {"sql": "...", "parameters": [...] or {...}} (Spice's
 * crates/runtime/src/http/v1/query.rs and datafusion/param_utils.rs).
 */
#ifndef TM_RUNTIME_QUERY_SQLREQ_H
#define TM_RUNTIME_QUERY_SQLREQ_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/sql.h"
#include "format/arrow/render.h"
#include "util/error.h"

/** One answer format: a media type a client may name. Static. */
typedef struct tm_sqlreq_media {
  const char *type; /* the media type ("application/json") */
  tm_out_format format;
  const char *content_type; /* the answer's Content-Type */
} tm_sqlreq_media;

/**
 * The answer's format for an Accept header, by HTTP's rules (RFC 9110
 * 12.5.1): each format takes the q of the most specific range that matches
 * it (`text/csv` over `text/ *` over `* / *`; q=0 refuses it); the highest q
 * wins, then the more specific range, then the range listed first, then the
 * server's order (JSON, text table, CSV, Spice's
 * application/vnd.spiceai.sql.v1+json, NDJSON). No header, or one without a
 * media range, is JSON. NULL when no format is acceptable (406).
 */
const tm_sqlreq_media *tm_sqlreq_negotiate(const char *accept);

/** The media types the server answers, comma-separated, for a 406's message. */
const char *tm_sqlreq_supported(void);

/** Whether a Content-Type is application/json (any case, any parameters). */
bool tm_sqlreq_is_json(const char *content_type);

/**
 * Reads Spice's JSON body: an object with "sql" (a string, required) and
 * "parameters" (optional: an array of positional values for `?` / `$1` ...,
 * or an object of named ones for `:name` / `$name`). A value is null, a
 * boolean, a number (an integer that fits 64 bits is BIGINT, another number
 * DOUBLE) or a string (VARCHAR: DuckDB casts it where the query needs another
 * type); an array or object value is refused, as Spice does. Any other key is
 * refused (Spice ignores one; tidemark accepts nothing it then ignores), and
 * so are duplicate keys and more than TM_SQL_PARAMS_MAX values.
 *
 * On success *sql_out is the SQL (tm_free), and *bind_out says whether
 * "parameters" was given; params (initialised empty by the call) holds them
 * (tm_sql_params_dispose). Nothing is set on failure.
 * Errors: TM_EINVALID with a message for the client, TM_ENOMEM.
 */
int tm_sqlreq_parse_json(const char *body, size_t len, char **sql_out,
                         tm_sql_params *params, bool *bind_out,
                         tm_error *err) TM_WARN_UNUSED;

#endif
