/*
 * s3_int.h - internals of the S3 backend (objstore layer, private to
 * src/objstore/s3/ and its tests and fuzz target).
 *
 *   s3_xml.c  the two documents S3 sends us: ListObjectsV2 results and
 *             error bodies
 *   s3_http.c how one request is addressed, signed and its errors worded,
 *             for the shared HTTP client (objstore/http.c)
 *   s3.c      the objstore vtable on top of those
 *
 * XML is read with the shared bounded scanner (objstore/xml_int.h lists what
 * it accepts); HTTP goes through the shared client (objstore/http_int.h:
 * pool, retries, ranged bodies, error classes). In a listing, every
 * <Contents> needs Key, Size (a decimal uint64) and LastModified (RFC
 * 3339); a truncated page needs a non-empty NextContinuationToken; keys are
 * URL-decoded only when the document says <EncodingType>url</EncodingType>.
 */
#ifndef TM_OBJSTORE_S3_S3_INT_H
#define TM_OBJSTORE_S3_S3_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/awscreds.h"
#include "objstore/http_int.h"
#include "objstore/objstore_int.h"
#include "objstore/s3/s3.h"
#include "objstore/sigv4.h"
#include "util/buf.h"

/* ---- XML ---------------------------------------------------------------------- */


/** One page of a ListObjectsV2 response. */
typedef struct tm_s3_list_page {
  tm_obj_list items;       /* owned: keys decoded, in document order */
  bool truncated;          /* IsTruncated was true */
  char *next_token;        /* owned: NextContinuationToken, or NULL */
} tm_s3_list_page;

void tm_s3_list_page_init(tm_s3_list_page *p);
void tm_s3_list_page_dispose(tm_s3_list_page *p);

/**
 * Parses a ListObjectsV2 response body into *out (initialised by the
 * caller; disposed by the caller on error too). TM_ECORRUPT for anything
 * malformed (see the file comment), TM_ENOMEM.
 */
int tm_s3__parse_list(tm_s3_list_page *out, const char *xml, size_t len, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Picks Code, Message and Region out of an S3 error body, if it is one.
 * Never fails: fields it cannot find are left "" (a body that is not XML
 * leaves all three empty). Each output is NUL-terminated and truncated.
 */
void tm_s3__parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                        size_t message_cap, char *region, size_t region_cap);

/* ---- HTTP --------------------------------------------------------------------- */

/* One bucket on one endpoint. Strings are owned and fixed after creation. */
typedef struct tm_s3_store {
  tm_objstore base;
  char *bucket;
  bool https;
  char *host;          /* Host header and URL authority: "host[:port]" (virtual: "bucket.host") */
  char *path_prefix;   /* raw path before "/key": "/base/bucket" (path-style), "/base" or "" */
  char *endpoint_desc; /* "http://127.0.0.1:9000", for messages */
  char *region;
  char *access_key;    /* NULL: unsigned requests */
  char *secret_key;
  char *session_token; /* NULL: none */
  tm_aws_chain *chain; /* owned; set: keys come from it per request (s3_auth: iam_role) */
  tm_objstore_creds creds; /* fn set: keys come from it per request (vended credentials) */
  tm_s3_options opts;  /* numbers only; its string pointers are not used after creation */
  tm_http_client http; /* pool, retries */
} tm_s3_store;

/**
 * What a request learnt about its keys, for one renewal after a 403 with
 * keys from a provider (tm_objstore_creds): the access key the last attempt
 * was signed with, and whether the store answered 403.
 */
typedef struct tm_s3_denial {
  char key[256]; /* the provider's access key of the last attempt ("" when none) */
  bool denied;   /* the final answer was 403 */
} tm_s3_denial;

/** One logical request: the shared part, and what SigV4 signs besides it. */
typedef struct tm_s3_req {
  tm_http_req http;          /* method, key, range, sink, upload (http.backend: set by perform) */
  const tm_sigv4_kv *query;  /* raw names and values */
  size_t n_query;
  const char *upload_sha256; /* hex, with an upload */
  tm_s3_denial *denial;      /* written by prepare and fail when set (reads with a provider) */
} tm_s3_req;

/** The shared client's callbacks for S3 (s3_http.c). */
const tm_http_backend *tm_s3__http_backend(void);

/**
 * After a read failed with rc: when it was a 403 with keys from the store's
 * provider, asks the provider for fresh keys (denied_key: the refused one)
 * and returns true (retry once). A provider error is added to err's message
 * and returns false.
 */
bool tm_s3__renew_after_denial(tm_s3_store *s, const tm_s3_denial *d, int rc, tm_error *err);

/** Performs req through s->http (tm_http__perform). */
int tm_s3__perform(tm_s3_store *s, tm_s3_req *req, const long *ok_statuses, size_t n_ok,
                   tm_http_resp *resp, tm_error *err) TM_WARN_UNUSED;

#endif
