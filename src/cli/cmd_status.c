/*
 * cmd_status.c - `tidemark status`: datasets and their refresh state (cli
 * layer; SPEC 1.2).
 *
 * With --url (or, given neither --url nor -c, when the current folder has no
 * config and a server answers at the default address) it asks a running
 * server; with -c (or the config in the current folder) it opens the config's
 * accelerations in this process and shows what a server starting now would
 * report. Both print the documents of runtime/status.h, as a table or as
 * JSON (--format json).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/remote.h"
#include "format/arrow/render.h"
#include "refresh/accel.h"
#include "runtime/config/config.h"
#include "runtime/runtime.h"
#include "runtime/status.h"
#include "util/alloc.h"
#include "util/log.h"

#define DEFAULT_URL "http://" TM_RUNTIME_DEFAULT_HTTP

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "read the accelerations of this config in this process"},
    {"url", 0, "URL", "ask a running server (default " DEFAULT_URL ")"},
    {"api-key", 0, "KEY", "with --url: the server's API key (or TIDEMARK_API_KEY)"},
    {"format", 0, "table|json", "output format (default table)"},
    {0}};

/*
 * The state of every dataset of the config at path: from the server that owns
 * its accelerations when one runs (SPEC 1.2), else read in this process.
 */
static json_t *status_local(const char *path, const char *api_key, int *code) {
  if (!getenv("TIDEMARK_LOG")) tm_log_set_level(TM_LOG_WARN);
  tm_config cfg;
  *code = tm_cli_load_config(path, &cfg);
  if (*code != TM_EXIT_OK) return NULL;
  char *owner = tm_cli_owner_url(&cfg);
  if (owner) {
    /* The server checks the config's runtime.auth keys: without --api-key, one of them. */
    json_t *arr = tm_cli_status_remote(owner, api_key ? api_key : cfg.n_api_keys ? cfg.api_keys[0] : NULL, code);
    tm_free(owner);
    tm_config_dispose(&cfg);
    return arr;
  }
  tm_db *db = NULL;
  tm_accel_options ao;
  if (!tm_cli_open_accels(&cfg, &db, &ao)) {
    *code = TM_EXIT_FAILURE;
    tm_config_dispose(&cfg);
    return NULL;
  }
  json_t *out = json_array();
  for (size_t i = 0; out && i < cfg.n_datasets; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    bool accelerated = d->has_acceleration && d->acceleration.enabled;
    tm_accel *a = NULL;
    tm_error err;
    tm_error_init(&err);
    int rc = tm_accel_new(&a, d, &ao, &err);
    const char *status = rc != TM_OK                                ? "Error"
                         : !accelerated || tm_accel_ready(a)          ? "Ready"
                         : tm_accel_get_status(a) == TM_ACCEL_ERROR ? "Error" /* damaged (D5) */
                                                                      : "Initializing";
    json_t *o = tm_status_json(a, d, status);
    if (o && rc != TM_OK) {
      json_t *le = json_object();
      json_object_set_new(le, "message", tm_json_text(err.message));
      json_object_set_new(o, "last_error", le);
    }
    if (o) json_array_append_new(out, o);
    tm_accel_free(a);
  }
  tm_db_release(db);
  tm_config_dispose(&cfg);
  return out;
}

static const char *str_or(json_t *o, const char *key, const char *dflt) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : dflt;
}

static int print_table(json_t *arr) {
  static const char *const names[] = {"NAME", "STATUS", "ROWS", "HIGH-WATER MARK",
                                      "SAVED SNAPSHOT", "LAST FALLBACK", "LAST REFRESH",
                                      "LAST ERROR"};
  tm_out out;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_out_begin(&out, TM_OUT_TABLE, names, 8, tm_out_file_sink, stdout, &err);
  for (size_t i = 0; rc == TM_OK && i < json_array_size(arr); i++) {
    json_t *o = json_array_get(arr, i);
    char rows[32] = "-", snap[32] = "-", last[256] = "-";
    json_t *v = json_object_get(o, "rows");
    if (json_is_integer(v)) snprintf(rows, sizeof rows, "%lld", (long long)json_integer_value(v));
    v = json_object_get(o, "saved_snapshot_id");
    if (json_is_integer(v)) snprintf(snap, sizeof snap, "%lld", (long long)json_integer_value(v));
    json_t *lr = json_object_get(o, "last_refresh");
    if (json_is_object(lr)) {
      const char *fb = str_or(lr, "fallback_reason", NULL);
      snprintf(last, sizeof last, "%s %s%lld rows via %s%s%s%s in %lld ms",
               str_or(lr, "started_at", "?"),
               strcmp(str_or(lr, "mode", ""), "full") == 0 ? "" : "+",
               (long long)json_integer_value(json_object_get(lr, "rows_written")),
               str_or(lr, "read", "?"), fb ? " (fallback: " : "", fb ? fb : "", fb ? ")" : "",
               (long long)json_integer_value(json_object_get(lr, "duration_ms")));
    } else if (!json_is_true(json_object_get(o, "acceleration_enabled"))) {
      snprintf(last, sizeof last, "federated (no acceleration)");
    }
    json_t *le = json_object_get(o, "last_error");
    const char *cells[8] = {str_or(o, "name", "?"), str_or(o, "status", "?"), rows,
                            str_or(o, "high_water_mark", "-"), snap,
                            str_or(o, "last_fallback_reason", "-"), last,
                            json_is_object(le) ? str_or(le, "message", "-") : "-"};
    size_t lens[8];
    tm_cell_kind kinds[8];
    for (int k = 0; k < 8; k++) {
      lens[k] = strlen(cells[k]);
      kinds[k] = (k == 2 || k == 4) && cells[k][0] != '-' ? TM_CELL_NUMBER : TM_CELL_TEXT;
    }
    rc = tm_out_row(&out, cells, lens, kinds, &err);
  }
  if (rc == TM_OK) rc = tm_out_end(&out, &err);
  else tm_out_dispose(&out);
  if (rc != TM_OK) return tm_cli_fail(TM_EXIT_FAILURE, "%s", err.message);
  return TM_EXIT_OK;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *url = tm_cli_get(cmd, args, "url");
  const char *config = tm_cli_get(cmd, args, "config");
  const char *format = tm_cli_get(cmd, args, "format");
  bool json = false;
  if (format && strcmp(format, "json") == 0) json = true;
  else if (format && strcmp(format, "table") != 0)
    return tm_cli_usage_error(cmd, "bad --format '%s' (allowed: table, json)", format);
  if (url && config) return tm_cli_usage_error(cmd, "give -c or --url, not both");
  const char *key = tm_cli_get(cmd, args, "api-key");
  if (!key) key = getenv("TIDEMARK_API_KEY");
  int code = TM_EXIT_OK;
  json_t *arr;
  if (url) arr = tm_cli_status_remote(url, key, &code);
  else if (config) arr = status_local(config, key, &code);
  else if (tm_cli_use_default_server()) arr = tm_cli_status_remote(DEFAULT_URL, key, &code);
  else arr = status_local(NULL, key, &code);
  if (!arr) return code != TM_EXIT_OK ? code : TM_EXIT_FAILURE;
  if (json) {
    if (json_dumpf(arr, stdout, JSON_INDENT(2)) != 0) code = TM_EXIT_FAILURE;
    fputc('\n', stdout);
  } else {
    int c2 = print_table(arr);
    if (code == TM_EXIT_OK) code = c2;
  }
  json_decref(arr);
  fflush(stdout);
  return code;
}

const tm_cli_cmd tm_cli_cmd_status = {
    "status",
    "show datasets: status, rows, high-water mark, saved snapshot, last refresh",
    "tidemark status [-c FILE | --url URL] [--format table|json]",
    "Shows every dataset with its status, rows, high-water mark, saved Iceberg snapshot,\n"
    "last refresh and last error. --url asks a running server; -c reads the config's\n"
    "accelerations (asking the server that owns them, when one runs on the config, else\n"
    "in this process: what a server starting now would report). With neither, the config\n"
    "in the current folder, or if there is none, the server at " DEFAULT_URL ".",
    k_opts,
    0,
    run};
