/*
 * fetch.h - one small HTTP request with a capped response body (objstore
 * layer), for the clients that talk to a service rather than to a store:
 * the Iceberg REST catalog, AWS Glue and the AWS credential providers
 * (awscreds.h). No pool and no retries: callers decide what a failure means
 * (a catalog maps statuses to its own errors, the credential chain moves on).
 *
 * libcurl is initialised once per process (thread-safe). Redirects are not
 * followed; only http and https are allowed.
 */
#ifndef TM_OBJSTORE_FETCH_H
#define TM_OBJSTORE_FETCH_H

#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tm_fetch_req {
  const char *method;          /* "GET", "PUT", "POST"; NULL: GET, or POST when body is set */
  const char *url;
  const char *const *headers;  /* "Name: value" lines ending in NULL, or NULL */
  const char *body;            /* request body, or NULL */
  size_t body_len;
  long timeout_ms;             /* the whole request; 0: 30000 */
  long connect_timeout_ms;     /* 0: the smaller of timeout_ms and 10000 */
} tm_fetch_req;

/**
 * Performs r, appending the response body to *body (the caller's, with its
 * limit as the cap) and setting *status. Any HTTP status is TM_OK: the
 * caller words it. TM_EUNAVAILABLE for a transport failure (refused,
 * timeout, DNS, TLS) and TM_ETOOLARGE for a body past body->limit, both
 * naming the URL; TM_ENOMEM.
 */
int tm_fetch(const tm_fetch_req *r, long *status, tm_buf *body, tm_error *err) TM_WARN_UNUSED;

#endif
