/*
 * objstore.h - object stores: local folders, S3-compatible buckets, memory
 * (objstore layer; SPEC A7, §4, C2, D3).
 *
 * An object store maps keys ("data/2024/a.parquet") to immutable byte
 * objects with a size and a last-modified time. Every backend plugs in
 * through one versioned vtable (tm_objstore_vtable); callers use the
 * tm_objstore_* functions below and never a backend directly:
 *
 *   file/   a local folder (keys are paths below a root folder)
 *   s3/     an S3-compatible bucket through libcurl, signed with SigV4
 *   azure/  an Azure Blob Storage / ADLS Gen2 container (Shared Key, SAS)
 *   mem/    an in-memory map, for tests
 *   fault/  wraps another store and fails, delays or truncates its N-th
 *           operation, for fault-injection tests
 *
 * Format readers never call a store: they read a tm_input (io/io.h) that
 * tm_objstore_open_input returns, so the same Parquet code reads a local
 * file or a remote object by ranges (STYLE.md §2).
 *
 * Thread safety: every tm_objstore_* function may be called from several
 * threads at once on the same store. A tm_input opened from a store is used
 * by one thread at a time, like every tm_input.
 *
 * Errors (besides TM_ENOMEM and TM_EINVALID for bad arguments):
 *   TM_ENOTFOUND     the object (or bucket) does not exist
 *   TM_EUNAVAILABLE  the store is unreachable or keeps failing (connection
 *                    refused, timeouts, 5xx/429 after the retries); transient
 *   TM_EIO           the store refused or failed the request (403 access
 *                    denied, disk errors); the message says why
 *   TM_ECORRUPT      the store answered with bytes that make no sense
 *   TM_ETOOLARGE     an object is larger than the caller's cap
 *   TM_ECONFLICT     a create-only put found the object already there
 */
#ifndef TM_OBJSTORE_OBJSTORE_H
#define TM_OBJSTORE_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "objstore/awscreds.h"
#include "util/error.h"
#include "util/str.h"

typedef struct tm_objstore tm_objstore;

/** Metadata of one object. */
typedef struct tm_obj_stat {
  bool exists;      /* false: no such object (stat returns TM_OK) */
  uint64_t size;    /* bytes */
  int64_t mtime_ms; /* last modified, milliseconds since the Unix epoch */
} tm_obj_stat;

/** One listed object; the key is relative to the store's root. */
typedef struct tm_obj_info {
  const char *key;  /* valid during the callback (or owned by a tm_obj_list) */
  uint64_t size;    /* bytes */
  int64_t mtime_ms; /* last modified, milliseconds since the Unix epoch */
} tm_obj_info;

/**
 * Called once per listed object, in ascending byte order of keys. Return
 * 0 to go on, TM_ITEROVER to stop early (the listing then returns TM_OK),
 * or a negative code to stop with that error.
 */
typedef int (*tm_objstore_list_fn)(const tm_obj_info *info, void *payload);

/**
 * Receives the bytes of a get, in order, in chunks. Return 0 to go on or a
 * negative code (filling err) to abort the get with that code.
 */
typedef int (*tm_objstore_sink_fn)(const void *data, size_t len, void *payload,
                                   tm_error *err);

/** Put flags. */
#define TM_OBJ_PUT_ATOMIC 0x1u    /* readers see the old object or the new one, never part */
#define TM_OBJ_PUT_IF_ABSENT 0x2u /* create only; TM_ECONFLICT when the key exists */

/** Size argument of tm_objstore_open_input when the caller does not know it. */
#define TM_OBJ_SIZE_UNKNOWN UINT64_MAX
/** Length argument of get: up to the end of the object. */
#define TM_OBJ_TO_END UINT64_MAX

/**
 * Counters of one store, summed over every operation since it opened. The
 * backend counts what crossed the wire (bytes, requests, retries); the
 * tm_objstore_* wrappers count the calls.
 */
typedef struct tm_objstore_stats {
  uint64_t bytes_in;  /* object bytes received (S3: response bodies of gets, discarded ones too) */
  uint64_t bytes_out; /* object bytes sent (S3: request bodies of puts, retries too) */
  uint64_t requests;  /* backend requests, retries included (S3: HTTP requests) */
  uint64_t retries;   /* requests that were repeated after a transient failure */
  uint64_t gets;      /* tm_objstore_get calls (reads, range fetches, downloads) */
  uint64_t puts;
  uint64_t lists;     /* tm_objstore_list calls (S3: one or more pages each) */
  uint64_t stats;
  uint64_t deletes;
} tm_objstore_stats;

/* ---- the backend interface ------------------------------------------------ */

/*
 * A backend fills a vtable and embeds struct tm_objstore first in its own
 * struct (objstore_int.h has the helpers). Keys handed to a backend were
 * checked by tm_objstore_*: 1..1024 bytes (a list prefix may be empty), no
 * leading '/', no trailing '/' except on a prefix. Path rules beyond that
 * (no "." or ".." segment) are the backend's: the file backend applies
 * tm_objstore_check_key, S3 takes any such key.
 */
typedef struct tm_objstore_vtable {
  int version;        /* TM_OBJSTORE_VTABLE_VERSION */
  const char *scheme; /* "file", "s3", "mem", "fault" */
  /** Fills *out; a missing object is TM_OK with out->exists false. */
  int (*stat)(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err);
  /** Every object whose key starts with prefix ("" = all), recursively. */
  int (*list)(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
              tm_error *err);
  /**
   * Streams bytes [off, off+len) (clipped to the object's end) to sink.
   * Exactly those bytes, in order, and no others: a backend that retries
   * resumes after what it already delivered. off at or past the end
   * delivers nothing and is TM_OK. TM_ENOTFOUND for a missing object.
   */
  int (*get)(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
             tm_objstore_sink_fn sink, void *payload, tm_error *err);
  /** Stores the whole of body (read from offset 0 to its size) as key. */
  int (*put)(tm_objstore *s, const char *key, tm_input *body, unsigned flags, tm_error *err);
  /** Removes key; a missing key is TM_OK. */
  int (*del)(tm_objstore *s, const char *key, tm_error *err);
  /**
   * Optional (NULL: the generic cached range reader of reader.c). Opens key
   * for positional reads; size is TM_OBJ_SIZE_UNKNOWN or the known size.
   */
  int (*open_input)(tm_objstore *s, const char *key, uint64_t size, tm_input **out,
                    tm_error *err);
  /** Releases the store and the struct itself. */
  void (*free)(tm_objstore *s);
} tm_objstore_vtable;

#define TM_OBJSTORE_VTABLE_VERSION 1
/** Initialiser for a backend vtable: TM_OBJSTORE_VTABLE_INIT("mem", stat, ...). */
#define TM_OBJSTORE_VTABLE_INIT(scheme, stat, list, get, put, del, open_input, free) \
  {TM_OBJSTORE_VTABLE_VERSION, (scheme), (stat), (list), (get), (put), (del), (open_input), (free)}

/** Options of the generic range reader (tm_objstore_open_input). */
typedef struct tm_objstore_read_options {
  int version;             /* TM_OBJSTORE_READ_OPTIONS_VERSION */
  uint64_t tail_bytes;     /* a first read in the object's last tail_bytes fetches all of them (Parquet footer); 0 = off */
  uint64_t min_fetch;      /* a smaller read fetches this much (later small reads hit the cache) */
  uint64_t coalesce_gap;   /* will_need ranges closer than this are fetched together */
  uint64_t max_request;    /* upper bound of one coalesced or read-ahead request */
  uint64_t max_readahead;  /* sequential reads double their read-ahead up to this */
  uint64_t cache_bytes;    /* bytes of fetched ranges kept per input */
} tm_objstore_read_options;

#define TM_OBJSTORE_READ_OPTIONS_VERSION 1
/** Defaults: 64 KiB tail and min fetch, 64 KiB gap, 8 MiB requests and read-ahead, 32 MiB cache. */
void tm_objstore_read_options_init(tm_objstore_read_options *opts);

struct tm_objstore {
  const tm_objstore_vtable *vt;
  char *name;                        /* owned: "s3://bucket", "file:/data", for messages */
  tm_objstore_read_options read_opts; /* used by tm_objstore_open_input */
  tm_objstore_stats stats;           /* updated atomically (tm_objstore__count) */
};

/* ---- using a store --------------------------------------------------------- */

/** Frees the store (NULL is a no-op). Inputs opened from it must be closed first. */
void tm_objstore_free(tm_objstore *s);
/** "file", "s3", ... */
const char *tm_objstore_scheme(const tm_objstore *s);
/** A printable name ("s3://bucket"); lives as long as the store. */
const char *tm_objstore_name(const tm_objstore *s);
/** A consistent-enough copy of the counters (each read atomically). */
void tm_objstore_get_stats(const tm_objstore *s, tm_objstore_stats *out);

/**
 * Size and last-modified time of key. A missing object is TM_OK with
 * out->exists false (so that callers can test for existence without an
 * error); errors only when the store cannot answer.
 */
int tm_objstore_stat(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Lists every object whose key starts with prefix, recursively (S3: no
 * delimiter; file: the whole folder tree), in ascending byte order of keys,
 * paging internally. A prefix that is not a folder boundary matches by
 * string ("data/a" lists "data/a.parquet" and "data/ab/x").
 */
int tm_objstore_list(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
                     tm_error *err) TM_WARN_UNUSED;

/** A listing collected into an array; release with tm_obj_list_dispose. */
typedef struct tm_obj_list {
  tm_obj_info *items; /* owned, and so is each items[i].key */
  size_t len;
  size_t cap;
} tm_obj_list;

void tm_obj_list_init(tm_obj_list *l);
void tm_obj_list_dispose(tm_obj_list *l);
/**
 * Collects tm_objstore_list into *out (initialised by the caller; appended
 * to). TM_ETOOLARGE past max_items objects.
 */
int tm_objstore_list_all(tm_objstore *s, const char *prefix, size_t max_items, tm_obj_list *out,
                         tm_error *err) TM_WARN_UNUSED;

/** Streams bytes [off, off+len) of key to sink (see tm_objstore_vtable.get). */
int tm_objstore_get(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
                    tm_objstore_sink_fn sink, void *payload, tm_error *err) TM_WARN_UNUSED;

/**
 * Reads up to len bytes at off into buf; *n_out < len only at the end of
 * the object. One request (plus retries) for remote stores.
 */
int tm_objstore_read(tm_objstore *s, const char *key, uint64_t off, void *buf, size_t len,
                     size_t *n_out, tm_error *err) TM_WARN_UNUSED;

/**
 * Reads a whole small object (metadata JSON, manifests) into memory.
 * TM_ETOOLARGE when it has more than limit bytes (nothing past limit is
 * downloaded). *out is NUL-terminated (not counted in *len_out) and owned
 * by the caller (tm_free).
 */
int tm_objstore_read_all(tm_objstore *s, const char *key, size_t limit, char **out,
                         size_t *len_out, tm_error *err) TM_WARN_UNUSED;

/**
 * Downloads key into the local file path, atomically (a temporary file
 * renamed over path). For snapshot restores (SPEC C2).
 */
int tm_objstore_get_file(tm_objstore *s, const char *key, const char *path, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Opens key for positional reads. size: the object's size when the caller
 * knows it (from a listing), which saves a stat request; otherwise
 * TM_OBJ_SIZE_UNKNOWN (then TM_ENOTFOUND here for a missing object).
 *
 * Remote objects are read through a cached range reader: a first read in
 * the last read_opts.tail_bytes fetches the whole tail once (a Parquet
 * footer costs one request), small reads fetch read_opts.min_fetch, ranges
 * announced with tm_input_will_need are merged across gaps up to
 * read_opts.coalesce_gap, and sequential reads grow a read-ahead window.
 * The caller owns *out (tm_input_close); it must not outlive the store.
 */
int tm_objstore_open_input(tm_objstore *s, const char *key, uint64_t size, tm_input **out,
                           tm_error *err) TM_WARN_UNUSED;

/** What a range reader fetched; TM_EINVALID for an input the store did not open this way. */
typedef struct tm_objstore_input_stats {
  uint64_t fetched;  /* bytes fetched from the store */
  uint64_t requests; /* gets issued to the store */
  uint64_t hits;     /* reads served from the cache without a request */
} tm_objstore_input_stats;
int tm_objstore_input_get_stats(const tm_input *in, tm_objstore_input_stats *out, tm_error *err)
    TM_WARN_UNUSED;

/** Stores len bytes at data as key (flags: TM_OBJ_PUT_*). */
int tm_objstore_put(tm_objstore *s, const char *key, const void *data, size_t len,
                    unsigned flags, tm_error *err) TM_WARN_UNUSED;
/** Stores the local file path as key, streaming it (acceleration snapshots, SPEC C2). */
int tm_objstore_put_file(tm_objstore *s, const char *key, const char *path, unsigned flags,
                         tm_error *err) TM_WARN_UNUSED;
/** Stores the whole of body as key. body stays owned by the caller. */
int tm_objstore_put_input(tm_objstore *s, const char *key, tm_input *body, unsigned flags,
                          tm_error *err) TM_WARN_UNUSED;

/** Deletes key; a missing key is TM_OK. */
int tm_objstore_delete(tm_objstore *s, const char *key, tm_error *err) TM_WARN_UNUSED;

/* ---- keys ------------------------------------------------------------------ */

/**
 * Checks a key as a relative path: not empty, at most 1024 bytes, no leading
 * '/', no empty, "." or ".." segment (a trailing '/' only on a prefix). The
 * file backend's rule, so that no key escapes its root folder.
 * TM_EINVALID with a message naming the key.
 */
int tm_objstore_check_key(const char *key, bool is_prefix, tm_error *err) TM_WARN_UNUSED;

/** Joins a prefix and a relative key with one '/' ("" prefix: the key). Result: tm_free. */
char *tm_objstore_join(const char *prefix, const char *rel);

/* ---- the URL front door ---------------------------------------------------- */

/*
 * URLs (SPEC §4):
 *   file:PATH, file://PATH     a local path (absolute, or relative to the
 *                              current folder); the store is rooted at the
 *                              folder holding the last path component, which
 *                              is the prefix: file:/data/events gives the
 *                              store file:/data and prefix "events";
 *                              file:/data/events/ gives file:/data/events
 *                              and ""
 *   s3://BUCKET[/PREFIX]       an S3-compatible bucket; s3a:// is an alias
 *   abfs://CONTAINER[@ACCOUNT.dfs.core.windows.net][/PREFIX]
 *                              an Azure Blob Storage container; abfss:// is
 *                              an alias; params abfs_* (azure/azure.h,
 *                              docs/OBJECT_STORAGE.md)
 *   mem://NAME[/PREFIX]        an in-memory store (tests); every mem:// URL
 *                              opens a new, empty store
 *
 * Params (strings, as in a dataset's `params`; SPEC §4):
 *   s3_endpoint       http[s]://host[:port] of an S3-compatible server
 *                     (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or
 *                     AWS itself); an endpoint means path-style addressing
 *   s3_region         default AWS_REGION, AWS_DEFAULT_REGION, us-east-1
 *   s3_auth           Spice's: public (unsigned), key (s3_key, s3_secret
 *                     required) or iam_role (the AWS default credential
 *                     chain, awscreds.h; no keys in params); unset: as below
 *   s3_key, s3_secret default AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY;
 *                     neither set: unsigned (anonymous) requests
 *   s3_session_token  default AWS_SESSION_TOKEN (only with env credentials)
 *   s3_url_style      path | virtual (default: path with an endpoint,
 *                     virtual-hosted without)
 *   allow_http        true to allow a plain http:// endpoint (refused otherwise)
 *   client_timeout    Spice's: a duration bounding each request (default: none,
 *                     a request fails after 30 s without a byte)
 * Other params are ignored, except an unknown name that starts with "s3_"
 * (for s3://) or "abfs_" (for abfs://), which is TM_EINVALID (a typo would
 * otherwise go unnoticed).
 */

/**
 * Opens the store a URL names and returns it with the key prefix the URL
 * points at ("" for a whole bucket), as written: no '/' is added or removed,
 * so a caller that means a folder lists prefix + "/".
 * params may be NULL. The caller owns *store_out (tm_objstore_free) and
 * *prefix_out (tm_free). TM_EINVALID for a malformed URL or param,
 * TM_EUNSUPPORTED for another scheme. Opening does not contact the store.
 */
int tm_objstore_open_url(tm_objstore **store_out, char **prefix_out, const char *url,
                         const tm_kv *params, tm_error *err) TM_WARN_UNUSED;

/**
 * Keys supplied per request by the caller instead of params: the credentials
 * an Iceberg REST catalog vends for a table's files. fn fills out's
 * access_key, secret_key and session_token ("" when none; expires_ms and
 * source are not read). denied_key is NULL, or, after the store was refused
 * (HTTP 403) with keys fn gave, that access key: fn should then fetch fresh
 * keys, unless it already holds others. fn may be called from several
 * threads at once, and must not call back into the store.
 */
typedef int (*tm_objstore_creds_fn)(void *payload, const char *denied_key, tm_aws_creds *out,
                                    tm_error *err);

/** A credential provider: fn and its payload (which must outlive the store). */
typedef struct tm_objstore_creds {
  tm_objstore_creds_fn fn;
  void *payload;
} tm_objstore_creds;

/**
 * tm_objstore_open_url with keys from creds (NULL: as tm_objstore_open_url).
 * Only s3:// and s3a:// take a provider (TM_EUNSUPPORTED for other schemes);
 * params must then give no s3_key, s3_secret, s3_session_token or s3_auth
 * (TM_EINVALID). Reads (stat, list, get) refused with HTTP 403 ask the
 * provider once for fresh keys (denied_key set) and are retried once, unless
 * bytes of a get were already delivered.
 */
int tm_objstore_open_url_creds(tm_objstore **store_out, char **prefix_out, const char *url,
                               const tm_kv *params, const tm_objstore_creds *creds,
                               tm_error *err) TM_WARN_UNUSED;

/**
 * Test hook (fault injection, issue 10): when set, every store that
 * tm_objstore_open_url opens is handed to fn with the URL, and fn may
 * replace *store by another one, taking the original (for instance wrapping
 * it in a fault store, fault/fault.h, or serving s3:// from a local folder).
 * On an error fn must leave *store as it was (tm_objstore_open_url then
 * frees it and fails). NULL removes the hook. Process-wide: set it before
 * the sources or runtimes that should see it are opened.
 */
typedef int (*tm_objstore_open_hook_fn)(tm_objstore **store, const char *url, void *payload,
                                        tm_error *err);
void tm_objstore_set_open_hook(tm_objstore_open_hook_fn fn, void *payload);

/**
 * Checks the params of the store url names as tm_objstore_open_url would
 * (names and values), contacting nothing: TM_EINVALID naming the param.
 */
int tm_objstore_check_params(const char *url, const tm_kv *params, tm_error *err) TM_WARN_UNUSED;

/** Whether url has a scheme tm_objstore_open_url knows (file, s3, s3a, abfs, abfss, mem). */
bool tm_objstore_url_supported(const char *url);


#endif
