/*
 * sigv4.h - AWS Signature Version 4 (objstore layer), shared by the S3
 * backend and the AWS Glue catalog client (source/glue_catalog.c).
 *
 * The caller lists every header to sign (host and x-amz-date included) and
 * the payload's hash; tm_sigv4_authorization returns the Authorization
 * header value. Paths are encoded once and not normalised: S3's rule, and
 * the same bytes for any service whose path is "/" (Glue, JSON 1.1).
 */
#ifndef TM_OBJSTORE_SIGV4_H
#define TM_OBJSTORE_SIGV4_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "util/buf.h"
#include "util/error.h"

#define TM_SHA256_HEX_LEN 64
/** SHA-256 of the empty string, the payload hash of bodiless requests. */
#define TM_SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct tm_sigv4_kv {
  const char *name;
  const char *value;
} tm_sigv4_kv;

/** One request to sign. Strings are not copied and need not outlive the call. */
typedef struct tm_sigv4_request {
  const char *method;       /* "GET", "PUT", ... */
  const char *path;         /* raw (not percent-encoded) path, starting with '/' */
  const tm_sigv4_kv *query; /* raw names and values; n_query of them, any order */
  size_t n_query;
  const tm_sigv4_kv *headers; /* every header to sign (host and x-amz-date included) */
  size_t n_headers;
  const char *payload_hash; /* lowercase hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
  const char *amz_date;     /* YYYYMMDD'T'HHMMSS'Z', the x-amz-date value */
  const char *region;       /* "us-east-1" */
  const char *service;      /* "s3" */
  const char *access_key;
  const char *secret_key;
} tm_sigv4_request;

/** The canonical query string: encoded pairs sorted by name then value, '&'-joined. */
int tm_sigv4_canonical_query(tm_buf *out, const tm_sigv4_kv *query, size_t n,
                             tm_error *err) TM_WARN_UNUSED;
/** The canonical request (task 1 of the signing process). */
int tm_sigv4_canonical_request(tm_buf *out, const tm_sigv4_request *req,
                               tm_error *err) TM_WARN_UNUSED;
/** The string to sign for a canonical request (task 2). */
int tm_sigv4_string_to_sign(tm_buf *out, const tm_sigv4_request *req, const char *creq,
                            size_t creq_len, tm_error *err) TM_WARN_UNUSED;
/** The signing key for date (YYYYMMDD), region and service (task 3). */
int tm_sigv4_signing_key(uint8_t key[32], const char *secret, const char *date8,
                         const char *region, const char *service,
                         tm_error *err) TM_WARN_UNUSED;
/**
 * The Authorization header value: "AWS4-HMAC-SHA256 Credential=...,
 * SignedHeaders=..., Signature=..." (task 4). signature_out (65 bytes, may
 * be NULL) receives the hex signature alone.
 */
int tm_sigv4_authorization(tm_buf *out, char *signature_out, const tm_sigv4_request *req,
                           tm_error *err) TM_WARN_UNUSED;
/** Lowercase hex SHA-256 of len bytes (out: 65 bytes). */
int tm_sha256_hex(char out[TM_SHA256_HEX_LEN + 1], const void *data, size_t len,
                  tm_error *err) TM_WARN_UNUSED;
/** Lowercase hex SHA-256 of the whole of an input, read in chunks. */
int tm_sha256_hex_input(char out[TM_SHA256_HEX_LEN + 1], tm_input *in,
                        tm_error *err) TM_WARN_UNUSED;
/** The x-amz-date value for a Unix time (UTC). out: 17 bytes. */
void tm_sigv4_amz_date(char out[17], int64_t unix_sec);

#endif
