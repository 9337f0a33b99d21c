/*
 * auth.h - password checks of the PostgreSQL wire protocol against the API
 * keys (runtime layer, pgwire; SPEC D4; docs/PGWIRE.md "Authentication").
 *
 * A client's password must equal one of the runtime's API keys. Three
 * methods: cleartext (AuthenticationCleartextPassword), MD5
 * (AuthenticationMD5Password: md5(md5(password || user) || salt), PostgreSQL's
 * scheme) and SCRAM-SHA-256 (RFC 5802 and 7677 over SASL, as PostgreSQL
 * does it: 4096 iterations, a fresh random salt and nonce per connection, no
 * channel binding). Every key is tried whichever matches, so that the time
 * taken says nothing of which key (or how much of one) matched.
 */
#ifndef TM_RUNTIME_PGWIRE_AUTH_H
#define TM_RUNTIME_PGWIRE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

typedef enum tm_pg_auth {
  TM_PG_AUTH_SCRAM = 0, /* default */
  TM_PG_AUTH_MD5,
  TM_PG_AUTH_PASSWORD   /* cleartext */
} tm_pg_auth;

/** The method named s ("scram-sha-256", "md5", "password"); false when none. */
bool tm_pg_auth_parse(const char *s, tm_pg_auth *out);
const char *tm_pg_auth_name(tm_pg_auth a);

/** Whether the cleartext password (len bytes) is one of the keys. */
bool tm_pg_auth_cleartext(const char *const *keys, size_t n_keys, const char *pw, size_t len);

/**
 * Whether the MD5 response ("md5" and 32 hex digits) matches one key for
 * user and the 4-byte salt.
 */
bool tm_pg_auth_md5(const char *const *keys, size_t n_keys, const char *user,
                    const uint8_t salt[4], const char *response, size_t len);

/** One SCRAM-SHA-256 exchange, server side. */
typedef struct tm_pg_scram {
  char client_first_bare[512]; /* "n=...,r=<client nonce>" */
  char server_first[256];      /* "r=<nonce>,s=<salt>,i=4096" */
  char nonce[128];             /* client nonce + server nonce */
  uint8_t salt[16];
} tm_pg_scram;

/**
 * Reads the client-first-message (data, len) and writes the
 * server-first-message into out. TM_EINVALID naming what the client got wrong
 * (channel binding asked for, no nonce, ...), TM_ERROR if OpenSSL fails.
 */
int tm_pg_scram_first(tm_pg_scram *s, const uint8_t *data, size_t len, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Reads the client-final-message and checks its proof against every key.
 * *ok says whether one matched; then out holds the server-final-message
 * ("v=<signature>"). TM_EINVALID when the message is malformed.
 */
int tm_pg_scram_final(tm_pg_scram *s, const char *const *keys, size_t n_keys,
                      const uint8_t *data, size_t len, bool *ok, tm_buf *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
