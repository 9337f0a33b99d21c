/*
 * iceberg_rest.h - a small client for the Iceberg REST catalog (source
 * layer): it finds a table's current metadata, authenticates as Spice's
 * Iceberg connector does, and reads the storage credentials a catalog vends.
 *
 * GET {base}/v1/config[?warehouse=W] gives the catalog's "prefix" (from
 * "overrides", else "defaults"); GET {base}/v1/{prefix}/namespaces/{ns}/
 * tables/{table} returns {"metadata-location", "metadata", "config",
 * "storage-credentials"}. Requests are authenticated by one of (never two):
 *   - a bearer token (iceberg_token) in Authorization;
 *   - OAuth2 client credentials (iceberg_oauth2_credential): a token from
 *     POST {oauth2_server_url} (default {base}/v1/oauth/tokens), form-encoded
 *     grant_type=client_credentials, client_id, client_secret, scope
 *     (default "catalog"); the token is cached, fetched again shortly before
 *     its expires_in ends, and once more when the catalog answers 401 or 419;
 *   - AWS SigV4 (iceberg_sigv4_enabled): every request is signed for
 *     signing_name (default "glue") in signing_region (default us-east-1)
 *     with the given keys, else the AWS default credential chain (awscreds.h).
 *     The path is signed as sent, so percent-escapes are encoded once more
 *     (AWS's rule for every service but S3).
 * With vended_credentials, loadTable carries "X-Iceberg-Access-Delegation:
 * vended-credentials".
 *
 * Errors follow the REST spec's error model ({"error": {"message", "type",
 * "code"}}; OAuth2's {"error", "error_description"} for the token endpoint)
 * and name the URL: 404 -> TM_ENOTFOUND, 401/419 -> TM_EINVALID ("the catalog
 * refused the credentials"), 403 -> TM_EINVALID ("the catalog denied
 * access"), other 4xx -> TM_EINVALID, 5xx, timeouts and connection errors ->
 * TM_EUNAVAILABLE (transient: retry later, SPEC D3). Answers are hostile
 * input: bodies are capped (64 MiB, 64 KiB for tokens), every field used is
 * type- and length-checked, and no message ever carries the client secret
 * or a token (text from the server is redacted). Requests time out (30 s).
 */
#ifndef TM_SOURCE_ICEBERG_REST_H
#define TM_SOURCE_ICEBERG_REST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore/awscreds.h"
#include "util/error.h"
#include "util/str.h"

/* ---- authentication ------------------------------------------------------------ */

/** How catalog requests authenticate; at most one of token, oauth2_credential, sigv4. */
typedef struct tm_iceberg_rest_auth_options {
  int version;                   /* TM_ICEBERG_REST_AUTH_OPTIONS_VERSION */
  const char *token;             /* a fixed bearer token, or NULL */
  const char *oauth2_credential; /* "CLIENT_ID:CLIENT_SECRET" or "CLIENT_SECRET", or NULL */
  const char *oauth2_scope;      /* NULL: "catalog" */
  const char *oauth2_server_url; /* token endpoint; NULL: {base}/v1/oauth/tokens */
  bool sigv4;                    /* sign requests with AWS SigV4 */
  const char *signing_region;    /* NULL: us-east-1 */
  const char *signing_name;      /* NULL: "glue" */
  const char *access_key;        /* SigV4 keys; NULL: the AWS default credential chain */
  const char *secret_key;
  const char *session_token;     /* or NULL */
  long timeout_ms;               /* token requests; 0: 30000 */
} tm_iceberg_rest_auth_options;

#define TM_ICEBERG_REST_AUTH_OPTIONS_VERSION 1
#define TM_ICEBERG_REST_AUTH_OPTIONS_INIT \
  {TM_ICEBERG_REST_AUTH_OPTIONS_VERSION, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, 0}

/** The authentication state of one catalog (cached token, AWS chain): thread-safe. */
typedef struct tm_iceberg_rest_auth tm_iceberg_rest_auth;

/**
 * Prepares authentication for the catalog at base_url (contacts nothing).
 * The caller owns *out (tm_iceberg_rest_auth_free). TM_EINVALID when two
 * methods are given, for an empty credential or a bad token endpoint URL.
 */
int tm_iceberg_rest_auth_new(tm_iceberg_rest_auth **out, const char *base_url,
                             const tm_iceberg_rest_auth_options *opts,
                             tm_error *err) TM_WARN_UNUSED;
/** Frees a (NULL is fine), wiping the secrets and the cached token. */
void tm_iceberg_rest_auth_free(tm_iceberg_rest_auth *a);
/** How many OAuth2 tokens a has obtained so far (tests and logs). */
uint64_t tm_iceberg_rest_auth_tokens_obtained(tm_iceberg_rest_auth *a);

/** A token endpoint's answer (RFC 6749 5.1), checked. */
typedef struct tm_iceberg_rest_token {
  char *access_token;  /* owned (wiped by dispose): 1..8192 visible ASCII characters */
  char token_type[32]; /* as given ("bearer", "Bearer", "N_A") */
  int64_t expires_in;  /* seconds, 1..10 years; -1 when the answer has none */
} tm_iceberg_rest_token;

/**
 * Parses a token endpoint's JSON answer: access_token (required, visible
 * ASCII, at most 8192 bytes), token_type (required; bearer in any case, or
 * N_A), expires_in (optional positive integer). TM_ECORRUPT naming the field
 * (never its value). Release with tm_iceberg_rest_token_dispose.
 */
int tm_iceberg_rest_parse_token(const char *json, size_t len, tm_iceberg_rest_token *out,
                                tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_rest_token_dispose(tm_iceberg_rest_token *t);

/* ---- tables ---------------------------------------------------------------------- */

typedef struct tm_iceberg_rest_options {
  int version;                /* TM_ICEBERG_REST_OPTIONS_VERSION */
  const char *base_url;       /* catalog root, e.g. http://127.0.0.1:8181 (without /v1) */
  const char *token;          /* bearer token, or NULL; unused when auth is set */
  const char *warehouse;      /* "warehouse" query parameter of /v1/config, or NULL */
  long timeout_ms;            /* 0: 30000 */
  tm_iceberg_rest_auth *auth; /* view, or NULL: the token alone */
  bool vended_credentials;    /* ask loadTable for vended credentials */
} tm_iceberg_rest_options;

#define TM_ICEBERG_REST_OPTIONS_VERSION 1
#define TM_ICEBERG_REST_OPTIONS_INIT \
  {TM_ICEBERG_REST_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, false}

/** One entry of a loadTable answer's "storage-credentials". */
typedef struct tm_iceberg_rest_storage_cred {
  char *prefix;  /* owned: the storage location the credentials are for */
  tm_kv config;  /* its "config" map (s3.access-key-id, ...) */
} tm_iceberg_rest_storage_cred;

typedef struct tm_iceberg_rest_table {
  char *metadata_location; /* owned; NULL when the catalog gave none */
  char *metadata_json;     /* owned: the "metadata" member as JSON text */
  size_t metadata_len;
  tm_kv config;            /* the table's "config" map (string values; at most 1024) */
  tm_iceberg_rest_storage_cred *creds; /* owned: "storage-credentials" (at most 256) */
  size_t n_creds;
  char *prefix;            /* owned: the prefix /v1/config gave ("" when none) */
} tm_iceberg_rest_table;

/**
 * Splits a table URL of the form http[s]://host[:port][/path]/v1/[PREFIX/]
 * namespaces/NS/tables/T into the catalog base, the namespace and the table
 * (all tm_free). A prefix in the URL is returned in *prefix_out (NULL when
 * absent; tm_free). Multi-level namespaces may use "." or %1F.
 * TM_EINVALID naming what is wrong.
 */
int tm_iceberg_rest_parse_url(const char *url, char **base_out, char **prefix_out,
                              char **ns_out, char **table_out, tm_error *err) TM_WARN_UNUSED;

/**
 * Loads a table: /v1/config (for the prefix, unless prefix is given), then
 * the table. out is filled (release with tm_iceberg_rest_table_dispose).
 */
int tm_iceberg_rest_load_table(const tm_iceberg_rest_options *opts, const char *prefix,
                               const char *ns, const char *table, tm_iceberg_rest_table *out,
                               tm_error *err) TM_WARN_UNUSED;

/**
 * Parses a loadTable answer (json, len) into out (its prefix is left NULL).
 * where names the answer in messages (the URL). TM_ECORRUPT for a body that
 * is not an object with a "metadata" object, a config or storage credential
 * that is not a string map, or past the limits above.
 */
int tm_iceberg_rest_parse_table(const char *json, size_t len, const char *where,
                                tm_iceberg_rest_table *out, tm_error *err) TM_WARN_UNUSED;
void tm_iceberg_rest_table_dispose(tm_iceberg_rest_table *t);

/** The S3 settings a loaded table gives for the files under one location. */
typedef struct tm_iceberg_rest_s3 {
  tm_aws_creds creds;   /* access_key "" when none were vended; expires_ms 0: no expiry given */
  char endpoint[512];   /* s3.endpoint, or "" */
  char region[128];     /* s3.region, else client.region, or "" */
  int path_style;       /* s3.path-style-access: 1 true, 0 false, -1 absent */
  char source[160];     /* where the keys came from: "config", "storage-credentials for PREFIX" */
} tm_iceberg_rest_s3;

/**
 * The S3 settings for location (an s3:// or s3a:// URL; s3a counts as s3):
 * keys from the storage credential with the longest prefix of location that
 * has s3.access-key-id, else from "config" (the spec's order); endpoint,
 * region and path style from that credential's config, else from "config".
 * Keys are s3.access-key-id, s3.secret-access-key, s3.session-token and
 * s3.session-token-expires-at-ms (else expiration-time), in Unix ms.
 * TM_ECORRUPT (naming the key, never a secret) for a key without its
 * secret, a value too long or with control characters, a bad number, an
 * endpoint that is not http(s)://, a path style that is not true or false.
 */
int tm_iceberg_rest_s3_settings(const tm_iceberg_rest_table *t, const char *location,
                                tm_iceberg_rest_s3 *out, tm_error *err) TM_WARN_UNUSED;

#endif
