/*
 * remote.h - the client side of the HTTP API for `tidemark sql|refresh|status
 * --url` (cli layer). See remote.c.
 */
#ifndef TM_CLI_REMOTE_H
#define TM_CLI_REMOTE_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "cli/cli.h"
#include "format/arrow/render.h"
#include "runtime/config/config.h"
#include "util/error.h"

/**
 * POST /v1/sql: runs sql on the server at url, its answer in format streamed
 * to sink. The transfer stops once *cancel is set (cancel may be NULL).
 * Errors: TM_EINVALID (the server refused the query: a 4xx, its message in
 * err), TM_EIO (no answer, or another status), TM_ECANCELLED, the sink's
 * code, TM_ENOMEM.
 */
int tm_cli_remote_query(const char *url, const char *api_key, const char *sql,
                        tm_out_format format, tm_out_sink_fn sink, void *payload,
                        const atomic_bool *cancel, tm_error *err) TM_WARN_UNUSED;
/**
 * GET /v1/datasets: the server's datasets as a new JSON array of objects
 * (name, from, acceleration_enabled, ...), or NULL with err set (as
 * tm_cli_remote_query's, and TM_ECORRUPT for a malformed answer).
 */
json_t *tm_cli_remote_datasets(const char *url, const char *api_key, tm_error *err);
/** POST /v1/sql; the answer goes to stdout. Returns the exit code. */
int tm_cli_sql_remote(const tm_cli_cmd *cmd, const char *url, const char *query,
                      tm_out_format format, const char *api_key);
/** Triggers refreshes of the named (default: every accelerated) datasets. Exit code. */
/* config_key: the key to send when neither --api-key nor TIDEMARK_API_KEY gives one (the
 * owner server's config's runtime.auth key), or NULL. */
int tm_cli_refresh_remote(const tm_cli_cmd *cmd, const char *url, const tm_cli_args *args,
                          const char *config_key);
/**
 * Every dataset's state (runtime/status.h documents the objects), as a new
 * JSON array; NULL with *code set (and the reason printed) on failure.
 */
json_t *tm_cli_status_remote(const char *url, const char *api_key, int *code);
/** Whether GET /health answers at url. */
bool tm_cli_server_reachable(const char *url);
/**
 * For `tidemark sql|status` given neither -c nor --url: true when the
 * current folder has no config file (tidemark.yaml, spicepod.yaml) and a
 * server answers at the default address, which then answers the command.
 */
bool tm_cli_use_default_server(void);
/**
 * The URL of the running server that owns cfg's accelerations (SPEC 1.2:
 * one process owns the files), when its server file names a live process
 * that answers; NULL otherwise. Result: tm_free.
 */
char *tm_cli_owner_url(const tm_config *cfg);

#endif
