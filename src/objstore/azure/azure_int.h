/*
 * azure_int.h - internals of the Azure Blob Storage backend (objstore
 * layer, private to src/objstore/azure/ and its tests and fuzz target).
 *
 *   sharedkey.c  Shared Key signing (string to sign, HMAC-SHA256 with the
 *                base64 account key), RFC 1123 dates, base64, SAS tokens
 *   azure_xml.c  the List Blobs result and error bodies, with the shared
 *                bounded scanner (objstore/xml_int.h)
 *   azure.c      the objstore vtable, request building for the shared HTTP
 *                client (objstore/http_int.h), params
 *
 * What a List Blobs page must hold (the bytes are hostile): the root
 * <EnumerationResults>; each <Blobs><Blob> needs <Name> (1..1024 bytes, no
 * NUL; percent-decoded when it carries Encoded="true") and
 * <Properties><Content-Length> (a decimal uint64) and <Last-Modified> (an
 * RFC 1123 date, "Wed, 09 Sep 2009 09:20:02 GMT"); a blob whose
 * <ResourceType> is "directory" (ADLS Gen2 folders) is skipped;
 * <NextMarker> (at most TM_XML_TEXT_MAX bytes) is the next page's marker,
 * absent or empty on the last page. <BlobPrefix> entries are ignored.
 */
#ifndef TM_OBJSTORE_AZURE_AZURE_INT_H
#define TM_OBJSTORE_AZURE_AZURE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/azure/azure.h"
#include "objstore/http_int.h"
#include "objstore/objstore_int.h"
#include "util/buf.h"

#define TM_AZURE_API_VERSION "2021-08-06"

/* ---- Shared Key ------------------------------------------------------------- */

typedef struct tm_azure_kv {
  const char *name;
  const char *value;
} tm_azure_kv;

/** One request to sign. Strings are not copied and need not outlive the call. */
typedef struct tm_azure_sign_req {
  const char *method;          /* "GET", "PUT", ... */
  const char *account;         /* the account name */
  const char *encoded_path;    /* the URL path as sent, percent-encoded: "/container/blob" */
  const tm_azure_kv *query;    /* raw (decoded) names and values, any order */
  size_t n_query;
  const tm_azure_kv *headers;  /* every x-ms-* header sent (names in any case) */
  size_t n_headers;
  uint64_t content_length;     /* of the body; 0 signs as "" */
  const char *content_type;    /* or NULL */
  const char *range;           /* the Range header, or NULL */
  const char *if_match;        /* or NULL */
  const char *if_none_match;   /* or NULL */
} tm_azure_sign_req;

/**
 * The Shared Key string to sign (Blob service, version 2015-02-21 and
 * later): VERB, Content-Encoding, Content-Language, Content-Length ("" for
 * 0), Content-MD5, Content-Type, Date, If-Modified-Since, If-Match,
 * If-None-Match, If-Unmodified-Since, Range, one per line; then the
 * canonicalized x-ms-* headers (lowercased, sorted, "name:value\n" with the
 * value trimmed and inner runs of blanks folded); then the canonicalized
 * resource "/ACCOUNT/PATH" and "\nname:value" per query parameter
 * (lowercased names, sorted; repeated names join their sorted values with
 * ','). Appended to out.
 */
int tm_azure__string_to_sign(tm_buf *out, const tm_azure_sign_req *req, tm_error *err)
    TM_WARN_UNUSED;

/**
 * Base64 HMAC-SHA256 of sts (len bytes) keyed by the decoded key (out: 45
 * bytes). TM_EINVALID when key_b64 is not base64.
 */
int tm_azure__signature(char out[45], const char *key_b64, const char *sts, size_t len,
                        tm_error *err) TM_WARN_UNUSED;

/** Decodes strict base64 (padding required) into out; *n_out bytes. false: not base64 or too long. */
bool tm_azure__base64_decode(uint8_t *out, size_t cap, size_t *n_out, const char *in, size_t len);
/** Base64 of n bytes into out (4 * ceil(n / 3) + 1 bytes). */
void tm_azure__base64_encode(char *out, const uint8_t *in, size_t n);

/** The x-ms-date value for a Unix time: "Sun, 11 Oct 2009 21:49:13 GMT" (out: 30 bytes). */
void tm_azure__http_date(char out[30], int64_t unix_sec);
/** Parses exactly an RFC 1123 date in GMT (surrounding blanks allowed). false: not one. */
bool tm_azure__parse_http_date(const char *s, size_t len, int64_t *unix_sec_out);

/**
 * Checks a SAS token and returns the part to append to queries (a leading
 * '?' dropped). TM_EINVALID (never echoing the token) when it is empty,
 * has blanks, '#' or control characters, or carries no "sig=".
 */
int tm_azure__check_sas(const char *sas, const char **query_out, tm_error *err) TM_WARN_UNUSED;

/* ---- XML ---------------------------------------------------------------------- */

/** One page of a List Blobs response. */
typedef struct tm_azure_list_page {
  tm_obj_list items;  /* owned: names decoded, in document order */
  char *next_marker;  /* owned: NextMarker, or NULL on the last page */
} tm_azure_list_page;

void tm_azure_list_page_init(tm_azure_list_page *p);
void tm_azure_list_page_dispose(tm_azure_list_page *p);

/**
 * Parses a List Blobs response body into *out (initialised by the caller;
 * disposed by the caller on error too). TM_ECORRUPT for anything malformed
 * (see the file comment), TM_ENOMEM.
 */
int tm_azure__parse_list(tm_azure_list_page *out, const char *xml, size_t len, tm_error *err)
    TM_WARN_UNUSED;

/** Picks Code and Message out of an error body; never fails ("" when absent). */
void tm_azure__parse_error(const char *xml, size_t len, char *code, size_t code_cap,
                           char *message, size_t message_cap);

/* ---- the store ------------------------------------------------------------------ */

typedef enum tm_azure_auth {
  TM_AZURE_AUTH_NONE = 0, /* anonymous */
  TM_AZURE_AUTH_SHARED_KEY,
  TM_AZURE_AUTH_SAS,
  TM_AZURE_AUTH_BEARER
} tm_azure_auth;

/* One container on one endpoint. Strings are owned and fixed after creation. */
typedef struct tm_azure_store {
  tm_objstore base;
  char *container;
  char *account;        /* or NULL (SAS and anonymous requests against an explicit endpoint) */
  bool https;
  char *authority;      /* "host[:port]" */
  char *base_path;      /* raw path before "/container": "" or "/devstoreaccount1" */
  char *endpoint_desc;  /* "http://127.0.0.1:10000/devstoreaccount1", for messages */
  tm_azure_auth auth;
  char *secret;         /* the key (base64), the SAS query, or the bearer token; wiped on free */
  tm_azure_options opts; /* numbers only; its string pointers are not used after creation */
  tm_http_client http;  /* pool, retries */
} tm_azure_store;

#endif
