/*
 * s3.h - the S3-compatible object store (objstore layer, s3 backend; SPEC §4,
 * A7, C2, D3).
 *
 * Requests go through libcurl and are signed with AWS Signature Version 4.
 * One store is one bucket. Addressing is path-style (http://host/bucket/key)
 * when an endpoint is given (MinIO, s3rver, most S3-compatible servers) and
 * virtual-hosted (https://bucket.s3.REGION.amazonaws.com/key) against AWS;
 * s3_url_style overrides either. Connections are kept in a pool shared by
 * every thread using the store. Transient failures (connection errors,
 * timeouts, 5xx, 429, S3's RequestTimeout and SlowDown) are retried with
 * exponential backoff and jitter; a ranged read that fails half-way resumes
 * after the bytes it already delivered.
 *
 * Errors: TM_ENOTFOUND (404: no such key or bucket), TM_EIO (403 access
 * denied, other refusals; the message carries S3's error code and message),
 * TM_EINVALID (a bucket in another region, a malformed option),
 * TM_EUNAVAILABLE (unreachable endpoint or persistent 5xx/429/timeouts after
 * the retries; the message names the endpoint), TM_ECORRUPT (a response that
 * makes no sense: bad XML, a Content-Range that does not match the request),
 * TM_ECONFLICT (create-only put of an existing key, on servers that support
 * If-None-Match), TM_ETOOLARGE (a put over 5 GiB: multipart upload is not
 * implemented).
 */
#ifndef TM_OBJSTORE_S3_S3_H
#define TM_OBJSTORE_S3_S3_H

#include "objstore/objstore.h"

typedef enum tm_s3_url_style {
  TM_S3_URL_AUTO = 0, /* path-style with an endpoint, virtual-hosted against AWS */
  TM_S3_URL_PATH,
  TM_S3_URL_VIRTUAL
} tm_s3_url_style;

typedef struct tm_s3_options {
  int version;                /* TM_S3_OPTIONS_VERSION */
  const char *bucket;         /* required */
  const char *endpoint;       /* "http[s]://host[:port][/base]"; NULL: AWS */
  const char *region;         /* NULL: us-east-1 */
  const char *access_key;     /* NULL or "": unsigned (anonymous) requests */
  const char *secret_key;
  const char *session_token;  /* NULL: none */
  bool credential_chain;      /* sign with the AWS default chain (awscreds.h); no keys then */
  bool allow_http;            /* an http:// endpoint is refused unless set */
  tm_s3_url_style url_style;
  int max_retries;            /* attempts after the first; default 4 */
  int64_t retry_base_ms;      /* first backoff; doubles, with jitter; default 200 */
  int64_t retry_max_ms;       /* backoff cap; default 5000 */
  int64_t connect_timeout_ms; /* default 10000 */
  int64_t request_timeout_ms; /* whole request; 0 (default): none, see stall_timeout_ms */
  int64_t stall_timeout_ms;   /* no byte received for this long fails the request; default 30000 */
  int max_idle_handles;       /* idle connections kept for reuse; default 16 */
  tm_objstore_creds creds;    /* fn set: keys come from it per request (objstore.h); no keys then */
} tm_s3_options;

#define TM_S3_OPTIONS_VERSION 1
/** Zeroes opts and fills the defaults above. */
void tm_s3_options_init(tm_s3_options *opts);

/**
 * A store for one bucket. Checks the options (endpoint syntax, allow_http,
 * key without secret) but does not contact the server. The caller owns
 * *out (tm_objstore_free). TM_EINVALID for bad options.
 */
int tm_objstore_s3_new(tm_objstore **out, const tm_s3_options *opts, tm_error *err)
    TM_WARN_UNUSED;

/**
 * A store for bucket configured from dataset params (s3_endpoint, s3_region,
 * s3_auth, s3_key, s3_secret, s3_session_token, s3_url_style, allow_http,
 * client_timeout) and the
 * AWS_* environment variables, as tm_objstore_open_url documents. params
 * may be NULL. creds (may be NULL) supplies the keys instead
 * (tm_objstore_open_url_creds): params then must not name any, and the
 * AWS_* keys are not read. TM_EINVALID for an unknown s3_* param or a bad
 * value.
 */
int tm_objstore_s3_new_from_params(tm_objstore **out, const char *bucket, const tm_kv *params,
                                   const tm_objstore_creds *creds, tm_error *err) TM_WARN_UNUSED;

/** New connections the store has opened (for tests of connection reuse). */
uint64_t tm_objstore_s3_connections(tm_objstore *s);

#endif
