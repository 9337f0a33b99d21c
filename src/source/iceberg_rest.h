/*
 * iceberg_rest.h - a small client for the Iceberg REST catalog (source
 * layer): it finds a table's current metadata.
 *
 * GET {base}/v1/config[?warehouse=W] gives the catalog's "prefix" (from
 * "overrides", else "defaults"); GET {base}/v1/{prefix}/namespaces/{ns}/
 * tables/{table} returns {"metadata-location", "metadata", "config"}. A
 * bearer token, when given, goes in an Authorization header on every
 * request. Errors follow the REST spec's error model
 * ({"error": {"message", "type", "code"}}) and name the URL:
 *   404 -> TM_ENOTFOUND, 401/403 -> TM_EINVALID ("authentication failed"),
 *   other 4xx -> TM_EINVALID, 5xx, timeouts and connection errors ->
 *   TM_EUNAVAILABLE (transient: retry later, SPEC D3).
 * Responses are capped (64 MiB) and requests time out (default 30 s).
 */
#ifndef TM_SOURCE_ICEBERG_REST_H
#define TM_SOURCE_ICEBERG_REST_H

#include <stddef.h>

#include "util/error.h"
#include "util/str.h"

typedef struct tm_iceberg_rest_options {
  int version;            /* TM_ICEBERG_REST_OPTIONS_VERSION */
  const char *base_url;   /* catalog root, e.g. http://127.0.0.1:8181 (without /v1) */
  const char *token;      /* bearer token, or NULL */
  const char *warehouse;  /* "warehouse" query parameter of /v1/config, or NULL */
  long timeout_ms;        /* 0: 30000 */
} tm_iceberg_rest_options;

#define TM_ICEBERG_REST_OPTIONS_VERSION 1
#define TM_ICEBERG_REST_OPTIONS_INIT {TM_ICEBERG_REST_OPTIONS_VERSION, NULL, NULL, NULL, 0}

typedef struct tm_iceberg_rest_table {
  char *metadata_location; /* owned; NULL when the catalog gave none */
  char *metadata_json;     /* owned: the "metadata" member as JSON text */
  size_t metadata_len;
  tm_kv config;            /* the table's "config" map */
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
void tm_iceberg_rest_table_dispose(tm_iceberg_rest_table *t);

#endif
