/*
 * glue_catalog.h - a small client for the AWS Glue Data Catalog (source
 * layer): it finds a table's location, its format and, for an Iceberg
 * table, its current metadata file.
 *
 * Glue speaks AWS JSON 1.1: every call is `POST /` with
 *   Content-Type: application/x-amz-json-1.1
 *   X-Amz-Target: AWSGlue.<Operation>
 * and a JSON body, signed with SigV4 for service "glue" (objstore/sigv4.h;
 * content-type, host, x-amz-date, x-amz-target and, with a session token,
 * x-amz-security-token are signed). Calls used: GetTable; GetTables and
 * GetDatabases (paginated with NextToken) only to word "not found" errors
 * with what the catalog does hold.
 *
 * Errors name the call and Glue's error type (the body's "__type", as
 * "EntityNotFoundException"):
 *   EntityNotFoundException                     -> TM_ENOTFOUND
 *   signature, key, token and access errors     -> TM_EINVALID ("authentication failed")
 *   throttling, internal errors, HTTP 5xx,
 *   timeouts and connection errors              -> TM_EUNAVAILABLE (retry later, SPEC D3)
 *   any other refusal                           -> TM_EINVALID
 * Responses are capped (16 MiB) and requests time out (default 30 s).
 */
#ifndef TM_SOURCE_GLUE_CATALOG_H
#define TM_SOURCE_GLUE_CATALOG_H

#include <stddef.h>

#include "util/error.h"
#include "util/str.h"

typedef struct tm_glue_options {
  int version;               /* TM_GLUE_OPTIONS_VERSION */
  const char *region;        /* required: signs the requests, names the default endpoint */
  const char *endpoint;      /* http[s]://host[:port]; NULL: https://glue.REGION.amazonaws.com */
  const char *access_key;    /* required */
  const char *secret_key;    /* required */
  const char *session_token; /* or NULL */
  const char *catalog_id;    /* CatalogId (an account id), or NULL: the caller's */
  long timeout_ms;           /* 0: 30000 */
} tm_glue_options;

#define TM_GLUE_OPTIONS_VERSION 1
#define TM_GLUE_OPTIONS_INIT {TM_GLUE_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, 0}

/** What GetTable says about one table. Every string is owned, or NULL when absent. */
typedef struct tm_glue_table {
  char *database;
  char *name;
  char *table_type;        /* Parameters.table_type: "ICEBERG" for an Iceberg table */
  char *metadata_location; /* Parameters.metadata_location (Iceberg) */
  char *classification;    /* Parameters.classification: parquet, csv, json */
  char *location;          /* StorageDescriptor.Location */
  char *input_format;      /* StorageDescriptor.InputFormat */
  char *serde;             /* StorageDescriptor.SerdeInfo.SerializationLibrary */
  tm_kv serde_params;      /* StorageDescriptor.SerdeInfo.Parameters */
  tm_kv params;            /* Parameters */
} tm_glue_table;

void tm_glue_table_dispose(tm_glue_table *t);

/** True when the table is an Iceberg table (table_type ICEBERG, any case). */
bool tm_glue_table_is_iceberg(const tm_glue_table *t);

/**
 * Splits `glue:DATABASE.TABLE` (or `DATABASE.TABLE`) at its first dot into
 * the two names (tm_free). TM_EINVALID when either is empty.
 */
int tm_glue_parse_name(const char *from, char **db_out, char **table_out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * GetTable. out is initialised by this call (dispose it on success only).
 * A missing table or database is TM_ENOTFOUND, worded with what the catalog
 * has (the database's tables, or the databases, from GetTables or
 * GetDatabases).
 */
int tm_glue_get_table(const tm_glue_options *o, const char *db, const char *table,
                      tm_glue_table *out, tm_error *err) TM_WARN_UNUSED;

/**
 * Parses a GetTable response body into out (initialised by this call;
 * dispose it on success only): what tm_glue_get_table does with the
 * catalog's answer (also the fuzz target's entry, fuzz/fuzz_glue_table.c).
 * TM_ECORRUPT when it is not JSON or has no Table object.
 */
int tm_glue_parse_table(const char *json, size_t len, tm_glue_table *out, tm_error *err)
    TM_WARN_UNUSED;

/**
 * The names of the tables of db (GetTables), or of the databases when db is
 * NULL (GetDatabases), every page followed; appended to *names (tm_kv keys,
 * values ""). At most max_names are kept; *more is set when there were more.
 */
int tm_glue_list_names(const tm_glue_options *o, const char *db, size_t max_names, tm_kv *names,
                       bool *more, tm_error *err) TM_WARN_UNUSED;

#endif
