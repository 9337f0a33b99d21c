/*
 * iceberg_rest_int.h - what the REST catalog client (iceberg_rest.c) asks of
 * its authentication (iceberg_rest_auth.c); private to src/source/.
 */
#ifndef TM_SOURCE_ICEBERG_REST_INT_H
#define TM_SOURCE_ICEBERG_REST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "source/iceberg_rest.h"

#define TM_REST_MAX_HEADERS 12

/** The header lines of one request ("Name: value", owned), NULL-terminated. */
typedef struct tm_rest_headers {
  char *lines[TM_REST_MAX_HEADERS + 1];
  size_t n;
} tm_rest_headers;

/** Appends one line; TM_ETOOLARGE past TM_REST_MAX_HEADERS. */
int tm_rest_headers_add(tm_rest_headers *h, tm_error *err, const char *fmt, ...)
    TM_PRINTF(3, 4) TM_WARN_UNUSED;
/** Frees the lines, wiping them (an Authorization line is a secret). */
void tm_rest_headers_dispose(tm_rest_headers *h);

/**
 * Adds a's headers for one request to h: Authorization with the bearer or
 * OAuth2 token (obtained or renewed first when needed), or the SigV4 headers
 * for method, url (as sent, query included) and body. *generation_out
 * receives the OAuth2 token's generation (for tm_iceberg_rest__auth_refused).
 * Errors of the token endpoint are worded here (they name its URL).
 */
int tm_iceberg_rest__authorize(tm_iceberg_rest_auth *a, const char *method, const char *url,
                               const char *body, size_t body_len, tm_rest_headers *h,
                               uint64_t *generation_out, tm_error *err) TM_WARN_UNUSED;

/**
 * After the catalog answered 401 or 419 to a request authorized with the
 * OAuth2 token of generation: forgets that token (unless another thread
 * already renewed it) and returns true, so the request is retried once with
 * a new one. False for every other method.
 */
bool tm_iceberg_rest__auth_refused(tm_iceberg_rest_auth *a, uint64_t generation);

/** What to check after the catalog refused a's credentials (one phrase). */
const char *tm_iceberg_rest__auth_hint(const tm_iceberg_rest_auth *a);

/** Replaces each occurrence of a's secrets (client secret, tokens, SigV4 secret) in msg by "***". */
void tm_iceberg_rest__redact(tm_iceberg_rest_auth *a, char *msg, size_t cap);

#endif
