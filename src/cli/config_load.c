/*
 * config_load.c - finding and loading the config file for a command, and
 * opening its accelerations in this process (cli layer).
 */
#include <stdio.h>

#include "cli/cli.h"
#include "refresh/accel.h"
#include "runtime/runtime.h"
#include "runtime/config/config.h"
#include "util/alloc.h"
#include "util/log.h"

int tm_cli_load_config(const char *path, tm_config *cfg) {
  tm_error err;
  tm_error_init(&err);
  char *found = NULL;
  if (!path) {
    if (tm_config_default_path(&found, &err) != TM_OK) {
      fprintf(stderr, "tidemark: %s\n", err.message);
      return TM_EXIT_USAGE;
    }
    path = found;
  }
  int rc = tm_config_load(cfg, path, &err);
  tm_free(found);
  if (rc != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", err.message);
    tm_config_dispose(cfg);
    return rc == TM_ENOTFOUND || rc == TM_EINVALID ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
  }
  for (size_t i = 0; i < cfg->n_warnings; i++) tm_log(TM_LOG_WARN, NULL, "%s", cfg->warnings[i]);
  return TM_EXIT_OK;
}

bool tm_cli_open_accels(const tm_config *cfg, tm_db **db, tm_accel_options *ao) {
  tm_error err;
  tm_error_init(&err);
  *db = NULL;
  if (tm_runtime_db_open(cfg, db, &err) != TM_OK) {
    fprintf(stderr, "tidemark: %s\n", err.message);
    return false;
  }
  tm_accel_options_init(ao);
  ao->db = *db;
  ao->base_dir = cfg->dir;
  return true;
}
