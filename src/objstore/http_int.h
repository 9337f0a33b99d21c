/*
 * http_int.h - the HTTP machinery shared by the remote object-store
 * backends, S3 and Azure Blob Storage (objstore layer, private: only files
 * under src/objstore/ include it).
 *
 * A backend embeds a tm_http_client in its store and hands it a
 * tm_http_backend: how to build and sign one attempt (URL and headers),
 * which extra statuses are transient, and how to word a final error. The
 * client owns what every backend would otherwise repeat:
 *
 *   - a pool of libcurl easy handles sharing one connection cache, DNS
 *     cache and TLS session cache (a CURLSH with a mutex per lock), so
 *     connections are reused across requests and threads;
 *   - retries of transient failures (connection refused or reset, DNS,
 *     timeouts, an empty reply, a body cut short, HTTP 429, 500, 502, 503,
 *     504 and what the backend adds) after base * factor^n ms, capped, with
 *     jitter (a random point in the upper half); a ranged read resumes
 *     after the bytes it already delivered, with If-Match on the first
 *     response's ETag so that two versions of a replaced object are never
 *     spliced together;
 *   - ranged bodies: exactly the requested bytes reach the sink, checked
 *     against Content-Range; a server that ignores Range (200 with the
 *     whole object) is handled by skipping to the wanted offset and
 *     stopping once the range is complete;
 *   - counting: bytes in and out, requests, retries (tm_objstore_stats);
 *   - the paged listing loop (tm_http__list_paged): keys must carry the
 *     prefix and ascend, a repeated page token is an error.
 */
#ifndef TM_OBJSTORE_HTTP_INT_H
#define TM_OBJSTORE_HTTP_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/objstore_int.h"
#include "util/buf.h"

#define TM_HTTP_MAX_IDLE 64

/** Retries, timeouts and the pool; tm_http_options_init fills the defaults. */
typedef struct tm_http_options {
  int max_retries;            /* attempts after the first; default 4 */
  int64_t retry_base_ms;      /* first backoff; default 200 */
  int64_t retry_max_ms;       /* backoff cap; default 5000 */
  double backoff_factor;      /* each backoff is this times the previous one; default 2 */
  int64_t retry_timeout_ms;   /* no retry starts this long after the first attempt; 0: no limit */
  int64_t connect_timeout_ms; /* default 10000 */
  int64_t request_timeout_ms; /* whole request; 0 (default): none, see stall_timeout_ms */
  int64_t stall_timeout_ms;   /* no byte received for this long fails the request; default 30000 */
  int max_idle_handles;       /* idle connections kept for reuse; default 16 */
} tm_http_options;

void tm_http_options_init(tm_http_options *o);

/** One logical request; the backend's prepare turns it into an attempt. */
typedef struct tm_http_req {
  const char *method;        /* GET, HEAD, PUT, DELETE */
  const char *key;           /* object key, or NULL for a bucket/container request (list) */
  /* Ranged body (GET): bytes [off, off+len) of the object go to sink. */
  uint64_t off;
  uint64_t len;              /* TM_OBJ_TO_END: to the end */
  tm_objstore_sink_fn sink;  /* NULL: the body goes to body_out */
  void *sink_payload;
  tm_buf *body_out;          /* a capped buffer for XML bodies (list); NULL: discarded */
  /* Upload (PUT): upload_len bytes of upload from upload_off. */
  tm_input *upload;
  uint64_t upload_off;
  uint64_t upload_len;
  const char *if_none_match; /* "*" for create-only puts, or NULL */
  const void *backend;       /* the backend's own request data (query, payload hash) */
} tm_http_req;

/** What one attempt must send besides the request itself. */
typedef struct tm_http_attempt {
  const char *range;    /* "bytes=A-B" or "bytes=A-", or NULL for a whole body */
  const char *if_match; /* the ETag a resumed read must match, or NULL */
} tm_http_attempt;

/** What came back. */
typedef struct tm_http_resp {
  long status;             /* HTTP status of the last attempt */
  uint64_t content_length; /* from the headers (HEAD) */
  bool has_content_length;
  int64_t mtime_ms;        /* Last-Modified (HEAD), or -1 */
  uint64_t delivered;      /* body bytes handed to the sink */
} tm_http_resp;

/** A final, non-transient HTTP error, for the backend to word. */
typedef struct tm_http_failure {
  long status;
  const char *code;    /* the service's error code, or "" */
  const char *message; /* the service's message, or "" */
  const char *detail;  /* "403 Code: message", ready for a message */
  const char *hint;    /* the backend's hint_header, or "" */
  const char *region;  /* <Region> of an S3 error body, or "" */
  int attempts;
} tm_http_failure;

typedef struct tm_http_client tm_http_client;

typedef struct tm_http_backend {
  const char *hint_header; /* a response header kept for fail() ("x-amz-bucket-region"), or NULL */
  const char *code_header; /* a header with the error code, for bodiless errors ("x-ms-error-code"), or NULL */
  /**
   * Appends the full URL of one attempt to url and its headers to
   * *headers (signed afresh: dates change between attempts).
   */
  int (*prepare)(tm_http_client *c, const tm_http_req *req, const tm_http_attempt *at,
                 tm_buf *url, struct curl_slist **headers, tm_error *err);
  /** Optional: a status (with the service's error code) that is transient besides 429/5xx. */
  bool (*transient)(long status, const char *code);
  /** Words a final non-2xx answer as an error; returns its code. */
  int (*fail)(tm_http_client *c, const tm_http_req *req, const tm_http_failure *f,
              tm_error *err);
} tm_http_backend;

struct tm_http_client {
  tm_objstore *store;            /* view: counters, and its name in messages */
  const tm_http_backend *be;     /* view, static */
  void *owner;                   /* view: the backend's store, for its callbacks */
  const char *endpoint_desc;     /* view (the backend's): "http://127.0.0.1:9000", for messages */
  tm_http_options opts;
  pthread_mutex_t pool_lock;     /* guards idle, n_idle */
  CURL *idle[TM_HTTP_MAX_IDLE];  /* easy handles ready for reuse */
  int n_idle;
  CURLSH *share;                 /* connection, DNS and TLS-session caches */
  pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
  uint64_t connections;          /* atomic: new connections opened */
  bool ready;                    /* init succeeded: dispose has work to do */
};

/**
 * Sets up c (allocated by the caller, zeroed) for store. Checks opts
 * (TM_EINVALID naming what), initialises libcurl once per process.
 * Release with tm_http__client_dispose, also after a failed init.
 */
int tm_http__client_init(tm_http_client *c, tm_objstore *store, const tm_http_backend *be,
                         void *owner, const char *endpoint_desc, const tm_http_options *opts,
                         tm_error *err) TM_WARN_UNUSED;
void tm_http__client_dispose(tm_http_client *c);

/**
 * Performs req with retries. Status codes other than 2xx become errors
 * (be->fail, or TM_EUNAVAILABLE for transient ones after the retries)
 * except those listed in ok_statuses (e.g. 404 for HEAD and DELETE, 416
 * for a ranged GET at the end), which return TM_OK with resp->status set.
 */
int tm_http__perform(tm_http_client *c, const tm_http_req *req, const long *ok_statuses,
                     size_t n_ok, tm_http_resp *resp, tm_error *err) TM_WARN_UNUSED;

/*
 * The three requests every remote store makes alike. req is the caller's,
 * zeroed but for req->backend (its own request data, e.g. no query); these
 * fill the rest and perform it.
 */
/** HEAD key: size from Content-Length, time from Last-Modified; 404 is exists = false. */
int tm_http__stat(tm_http_client *c, tm_http_req *req, const char *key, tm_obj_stat *out,
                  tm_error *err) TM_WARN_UNUSED;
/** GET key with Range (none for a whole object); 416 (past the end) delivers nothing. */
int tm_http__get(tm_http_client *c, tm_http_req *req, const char *key, uint64_t off,
                 uint64_t len, tm_objstore_sink_fn sink, void *payload, tm_error *err)
    TM_WARN_UNUSED;
/** DELETE key; 404 is fine. */
int tm_http__delete(tm_http_client *c, tm_http_req *req, const char *key, tm_error *err)
    TM_WARN_UNUSED;

/** The object a request names, for messages: "s3://bucket/key" (store name + key). */
void tm_http__what(char *buf, size_t cap, const tm_http_client *c, const tm_http_req *req);

/** Appends one "Name: value" header to *list. */
int tm_http__add_header(struct curl_slist **list, tm_error *err, const char *fmt, ...)
    TM_PRINTF(3, 4) TM_WARN_UNUSED;

/**
 * Percent-encodes s (len bytes) as RFC 3986 (and SigV4) want: A-Z a-z 0-9
 * - _ . ~ stay, every other byte becomes %XX (uppercase hex); '/' stays
 * when keep_slash.
 */
int tm_http__uri_encode(tm_buf *out, const char *s, size_t len, bool keep_slash,
                        tm_error *err) TM_WARN_UNUSED;

/**
 * Splits an endpoint "http[s]://authority[/base]" (the value of param) into
 * its parts: the authority lowercased, the base path without a trailing
 * '/' ("" when absent). Refuses plain http unless allow_http, and
 * credentials in the URL (they belong in cred_params). *authority_out and
 * *base_out: tm_free. TM_EINVALID naming param.
 */
int tm_http__parse_endpoint(const char *ep, const char *param, const char *cred_params,
                            bool allow_http, bool *https_out, char **authority_out,
                            char **base_out, tm_error *err) TM_WARN_UNUSED;

/**
 * Fetches one page of a listing: the objects of the page after token (NULL:
 * the first) into *items (initialised by the caller, owned by it), and the
 * token of the next page into *next_out (tm_free; NULL or "" on the last).
 */
typedef int (*tm_http_page_fn)(void *payload, const char *token, tm_obj_list *items,
                               char **next_out, tm_error *err);

/**
 * The listing loop of remote stores: calls page until the last one and fn
 * for each object, checking that every key starts with prefix and comes
 * after the previous one, and that no token repeats (so that a misbehaving
 * server cannot loop the client). TM_ECORRUPT naming the store and prefix.
 */
int tm_http__list_paged(tm_objstore *s, const char *prefix, tm_http_page_fn page,
                        void *page_payload, tm_objstore_list_fn fn, void *payload,
                        tm_error *err) TM_WARN_UNUSED;

/** New connections the client has opened (tests of connection reuse). */
uint64_t tm_http__connections(const tm_http_client *c);

#endif
