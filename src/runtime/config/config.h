/*
 * config.h - loading and validating tidemark.yaml / spicepod.yaml
 * (runtime layer; SPEC 1.1).
 *
 * The loader reads the YAML document with libyaml and validates it strictly:
 * an unknown key, a wrong type, a bad enum value or duration, a missing
 * `name`/`from`, and the cross-field rules (A1, engine/mode pairs, on_conflict
 * columns, duplicate names, source schemes) are load errors of the form
 *
 *   FILE:LINE:COLUMN: datasets[2].acceleration.refresh_append_overlap: bad duration ...
 *
 * Keys that Spice.ai defines but tidemark does not use are accepted and
 * reported in `warnings` (the caller logs them), so a spicepod.yaml written
 * for Spice loads. `${env:NAME}` and `${secrets:NAME}` in params expand from
 * the environment. docs/CONFIG.md is the reference.
 */
#ifndef TM_RUNTIME_CONFIG_CONFIG_H
#define TM_RUNTIME_CONFIG_CONFIG_H

#include <stddef.h>

#include "refresh/dataset.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

typedef struct tm_snapshots_def {
  bool enabled;
  char *location;                 /* owned: file:///... or s3://... ; NULL when unset */
  char *bootstrap_on_failure;     /* owned: warn | retry | fallback (default warn) */
  tm_kv params;                   /* ${env:} expanded */
} tm_snapshots_def;

/** A view of Spice's `views:`: a query over datasets, queried by name. */
typedef struct tm_view_def {
  char *name; /* owned */
  char *sql;  /* owned: a SELECT (or WITH) */
  char *description; /* owned or NULL: the view's comment in SQL */
  char **depends_on; /* owned: dataset names (Spice's dependsOn) the view waits for */
  size_t n_depends_on;
  int line;
} tm_view_def;

typedef struct tm_config {
  char *path;                /* owned: the file loaded (as given) */
  char *dir;                 /* owned: its folder, absolute */
  char *data_dir;            /* owned: <dir>/.tidemark/data */
  char *version;             /* owned or NULL */
  char *kind;                /* owned or NULL */
  char *name;                /* owned or NULL */
  tm_dataset_def *datasets;  /* owned array */
  size_t n_datasets;
  tm_snapshots_def snapshots;
  tm_view_def *views;        /* owned array (Spice's top-level views) */
  size_t n_views;
  /* runtime.query: the DuckDB instance's limits (0 / NULL: defaults, db.h) */
  int64_t query_memory_limit;  /* bytes */
  char *query_temp_dir;      /* owned: absolute spill folder, or NULL: <dir>/.tidemark/tmp */
  bool reads_volatile_env;   /* a ${env:} names _, SHLVL or OLDPWD (util/noop.h) */
  char **secret_files;       /* owned: the dotenv files the secret stores looked in */
  size_t n_secret_files;
  int query_threads;
  char **api_keys;           /* owned: runtime.auth.api-key.keys (any opens the API, D4) */
  size_t n_api_keys;
  int load_parallelism;      /* runtime.dataset_load_parallelism; 0: unset */
  bool log_debug;            /* runtime.output_level: verbose (or very_verbose) */
  char **warnings;           /* owned: ignored Spice keys, one line each */
  size_t n_warnings;
} tm_config;

#define TM_CONFIG_MAX_BYTES ((size_t)4 << 20)
#define TM_CONFIG_MAX_DEPTH 64 /* nesting of lists and maps */
#define TM_DATASET_NAME_MAX 128 /* characters of a dataset name (it names files) */

/**
 * Loads and validates the config file at path into out (initialised by this
 * call; release with tm_config_dispose, also after an error). TM_ENOTFOUND
 * when the file does not exist, TM_EINVALID with a located message when it
 * is malformed.
 */
int tm_config_load(tm_config *out, const char *path, tm_error *err) TM_WARN_UNUSED;
/**
 * Same from text; name_for_messages stands for the file name in errors and
 * dir for the folder relative paths resolve against.
 */
int tm_config_load_text(tm_config *out, const char *text, size_t len,
                        const char *name_for_messages, const char *dir, tm_error *err)
    TM_WARN_UNUSED;
void tm_config_dispose(tm_config *cfg);

/** The dataset named name, or NULL. Valid while cfg lives. */
const tm_dataset_def *tm_config_find(const tm_config *cfg, const char *name);

/**
 * The config file to use when none is given: tidemark.yaml, else
 * spicepod.yaml, in the current folder. *path_out: tm_free. TM_ENOTFOUND
 * (with a message) when neither exists.
 */
int tm_config_default_path(char **path_out, tm_error *err) TM_WARN_UNUSED;


#endif
