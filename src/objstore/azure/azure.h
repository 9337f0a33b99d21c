/*
 * azure.h - the Azure Blob Storage / ADLS Gen2 object store (objstore
 * layer, azure backend; SPEC §4, A7, C2, D3).
 *
 * One store is one container of one storage account, reached through the
 * Blob service REST API (ADLS Gen2 accounts answer it too) with libcurl
 * and the shared HTTP client (objstore/http_int.h: pool, retries, ranged
 * reads that resume). Requests are signed with the account's Shared Key
 * (HMAC-SHA256, x-ms-version 2021-08-06), carry a SAS token in the query,
 * a bearer token, or nothing (anonymous, public containers).
 *
 * Addressing: every request goes to ENDPOINT/CONTAINER/BLOB, where
 * ENDPOINT is the account URL: https://ACCOUNT.blob.core.windows.net by
 * default, abfs_endpoint when given, or EMULATOR/ACCOUNT for Azurite
 * (path-style, http://127.0.0.1:10000/devstoreaccount1).
 *
 * Errors: TM_ENOTFOUND (404: no such blob or container), TM_EIO (403
 * access denied: the message says which credentials to check; other
 * refusals with the service's error code and message), TM_EINVALID (a
 * malformed option), TM_EUNAVAILABLE (unreachable endpoint or persistent
 * 5xx/429/timeouts after the retries), TM_ECORRUPT (bad XML, a
 * Content-Range that does not match the request), TM_ECONFLICT (a
 * create-only put of an existing blob: 409 or 412).
 */
#ifndef TM_OBJSTORE_AZURE_AZURE_H
#define TM_OBJSTORE_AZURE_AZURE_H

#include "objstore/objstore.h"

/** Azurite's well-known development account and key (public, documented by Microsoft). */
#define TM_AZURE_EMULATOR_ACCOUNT "devstoreaccount1"
#define TM_AZURE_EMULATOR_KEY \
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#define TM_AZURE_EMULATOR_URL "http://127.0.0.1:10000"

typedef struct tm_azure_options {
  int version;                /* TM_AZURE_OPTIONS_VERSION */
  const char *container;      /* required */
  const char *account;        /* needed for Shared Key and the default endpoint */
  const char *endpoint;       /* the account URL "http[s]://host[:port][/base]"; NULL: https://ACCOUNT.blob.SUFFIX */
  const char *endpoint_suffix; /* NULL: "core.windows.net" */
  const char *access_key;     /* base64 account key: Shared Key signing; NULL: none */
  const char *sas;            /* SAS token (a leading '?' is dropped); NULL: none */
  const char *bearer_token;   /* OAuth access token; NULL: none */
  bool allow_http;            /* an http:// endpoint is refused unless set */
  int max_retries;            /* attempts after the first; default 4 */
  int64_t retry_base_ms;      /* first backoff; default 200 */
  int64_t retry_max_ms;       /* backoff cap; default 5000 */
  double backoff_factor;      /* default 2 */
  int64_t retry_timeout_ms;   /* no retry starts this long after the first attempt; 0 (default): none */
  int64_t connect_timeout_ms; /* default 10000 */
  int64_t stall_timeout_ms;   /* no byte received for this long fails the request; default 30000 */
  int max_idle_handles;       /* default 16 */
  uint64_t single_put_max;    /* bodies up to this are one Put Blob; default 64 MiB */
  uint64_t block_size;        /* larger ones: Put Block of this size + Put Block List; default 64 MiB */
  int list_page_size;         /* maxresults of List Blobs, 1..5000; default 5000 */
} tm_azure_options;

#define TM_AZURE_OPTIONS_VERSION 1
/** Zeroes opts and fills the defaults above. */
void tm_azure_options_init(tm_azure_options *opts);

/**
 * A store for one container. Checks the options (names, endpoint syntax,
 * allow_http, a key that is base64, one kind of credentials) but does not
 * contact the service. The caller owns *out (tm_objstore_free).
 * TM_EINVALID for bad options.
 */
int tm_objstore_azure_new(tm_objstore **out, const tm_azure_options *opts, tm_error *err)
    TM_WARN_UNUSED;

/**
 * A store for an abfs:// URL's container configured from dataset params
 * (Spice's abfs_* names and allow_http; objstore.h lists them). host is
 * the part after '@' in abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...,
 * or NULL. params may be NULL. TM_EINVALID for an unknown abfs_* param or a
 * bad value, TM_EUNSUPPORTED for a documented Spice param tidemark does not
 * implement (the message names it).
 */
int tm_objstore_azure_new_from_params(tm_objstore **out, const char *container,
                                      const char *host, const tm_kv *params, tm_error *err)
    TM_WARN_UNUSED;

#endif
