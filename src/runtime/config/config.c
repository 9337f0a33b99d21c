/*
 * config.c - strict loading of tidemark.yaml / spicepod.yaml (runtime layer).
 * See config.h and docs/CONFIG.md.
 *
 * The document is loaded with libyaml's node API (every node keeps its
 * start mark, so errors name line and column), then walked section by
 * section. Each section declares its keys in a table (k_dataset, k_accel,
 * k_snapshots, k_top): for each key tidemark uses, how its value is read
 * and the field it fills; beside it, the keys Spice defines that tidemark
 * ignores (a warning, not an error). One walk (read.c, tm_cfg__walk) reads
 * a section by its table; what depends on several keys (on_conflict against
 * primary_key, mode against the engine, A1) is checked here afterwards.
 */
#include "runtime/config/config_int.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

#include "io/io.h"
#include "source/source.h"
#include "util/alloc.h"

/* ---- sections ------------------------------------------------------------ */

/*
 * Spice's keys that tidemark honours in one form only (docs/SPICE.md): the
 * form that is tidemark's behaviour loads, any other is refused with the
 * reason. Spice's AI components (models, embeddings, tools, ...) load only
 * empty: tidemark is a data runtime.
 */
#define AI "tidemark is a data runtime: it has no models, embeddings, tools or evals"
static const tm_cfg_spice_key k_top_spice[] = {
    {"models", TM_CFG_FORM_EMPTY, NULL, AI},
    {"embeddings", TM_CFG_FORM_EMPTY, NULL, AI},
    {"tools", TM_CFG_FORM_EMPTY, NULL, AI},
    {"evals", TM_CFG_FORM_EMPTY, NULL, AI},
    {"workers", TM_CFG_FORM_EMPTY, NULL, AI},
    {"catalogs", TM_CFG_FORM_EMPTY, NULL,
     "tidemark mounts no catalogs: list each table as a dataset (from: glue:DB.TABLE, "
     "iceberg:http(s)://HOST/v1/namespaces/NS/tables/T)"},
    {"extensions", TM_CFG_FORM_EMPTY, NULL, "tidemark loads no extensions"},
    {"dependencies", TM_CFG_FORM_EMPTY, NULL,
     "tidemark fetches no other spicepods: copy their datasets into this file"},
    {"management", TM_CFG_FORM_DISABLED, NULL, "tidemark connects to no management platform"},
    {"params", TM_CFG_FORM_EMPTY, NULL, "tidemark has no spicepod-wide params"},
    {NULL, 0, NULL, NULL}};

static const tm_cfg_spice_key k_dataset_spice[] = {
    {"metadata", TM_CFG_FORM_EMPTY, NULL,
     "tidemark adds no metadata columns (such as _location) and keeps no metadata for models"},
    {"invalid_type_action", TM_CFG_FORM_VALUE, "error",
     "a value tidemark cannot read fails the refresh, naming the file (SPEC D2)"},
    {"replication", TM_CFG_FORM_DISABLED, NULL, "tidemark replicates no dataset"},
    {"embeddings", TM_CFG_FORM_EMPTY, NULL, AI},
    {"vectors", TM_CFG_FORM_DISABLED, NULL, "tidemark keeps no vector index"},
    {"has_metadata_table", TM_CFG_FORM_VALUE, "false", "tidemark lists no metadata tables"},
    {"mode", TM_CFG_FORM_VALUE, "read",
     "tidemark's SQL is read-only (SPEC D4)"},
    {NULL, 0, NULL, NULL}};

static const tm_cfg_spice_key k_accel_spice[] = {
    {"on_zero_results", TM_CFG_FORM_VALUE, "return_empty",
     "a query of an accelerated dataset answers from the acceleration only, never from the source"},
    {"engine_secret", TM_CFG_FORM_NONE, NULL,
     "engine postgres takes its password from params.pg_pass (use ${secrets:NAME} there)"},
    {"snapshots_trigger", TM_CFG_FORM_VALUE, "refresh_complete",
     "tidemark writes an acceleration snapshot after each refresh or retention run that changed "
     "the rows"},
    {"snapshots_trigger_threshold", TM_CFG_FORM_NONE, NULL,
     "it belongs to the time_interval and stream_batches snapshot triggers, which tidemark does "
     "not have"},
    {"snapshots_creation_policy", TM_CFG_FORM_NONE, NULL,
     "tidemark writes an acceleration snapshot after each refresh or retention run that changed "
     "the rows"},
    {"partition_by", TM_CFG_FORM_NONE, NULL,
     "tidemark keeps one table per acceleration; DuckDB's zone maps prune its scans"},
    {"snapshots_compaction", TM_CFG_FORM_NONE, NULL,
     "tidemark does not compact acceleration snapshots (each is a whole database)"},
    {NULL, 0, NULL, NULL}};

/* In tm_engine_kind order (engine/engine.h). */
static const char *const k_engines[] = {"cayenne", "arrow", "sqlite", "duckdb", "postgres", NULL};
static const char *const k_modes[] = {"memory", "file", NULL};
static const char *const k_refresh_modes[] = {"full", "append", "changes", NULL};
static const char *const k_conflicts[] = {"drop", "upsert", NULL};
static const char *const k_snap_modes[] = {"disabled", "enabled", "bootstrap_only", "create_only",
                                           NULL};
static const char *const k_bootstrap_failure[] = {"warn", "retry", "fallback", NULL};

/* TM_CFG_ENUM stores an int: the enum fields it fills must be int-sized. */
_Static_assert(sizeof(tm_engine_kind) == sizeof(int) && sizeof(tm_engine_mode) == sizeof(int) &&
                   sizeof(tm_refresh_mode) == sizeof(int) && sizeof(tm_snapshots_mode) == sizeof(int),
               "enum fields read by TM_CFG_ENUM are int-sized");

static int get_time_format(ctx *c, yaml_node_t *n, tm_time_format *out) {
  const char *s = NULL;
  TM_TRY(tm_cfg__scalar(c, n, "a time format", &s));
  if (tm_time_format_parse(s, out) == TM_OK) return TM_OK;
  return tm_cfg__fail(c, n,
              "bad value '%s' (allowed: timestamp, timestamptz, unix_seconds, unix_millis, "
              "unix_nanos, ISO8601, date)",
              s);
}

/* Classifies `from` (SPEC 4). */
static int parse_from(ctx *c, yaml_node_t *n, const char *from, tm_source_kind *out) {
  static const char allowed[] =
      "file:PATH, file://PATH, s3://BUCKET/PREFIX, abfs://CONTAINER/PATH, iceberg:file://PATH, "
      "iceberg:s3://BUCKET/PATH, iceberg:abfs://CONTAINER/PATH, "
      "iceberg:http(s)://HOST/v1/namespaces/NS/tables/T, glue:DATABASE.TABLE";
  const char *rest;
  if (tm_str_has_prefix(from, "iceberg:")) {
    rest = from + 8;
    if (tm_str_has_prefix(rest, "http://") || tm_str_has_prefix(rest, "https://")) {
      if (!strstr(rest, "/namespaces/") || !strstr(rest, "/tables/"))
        return tm_cfg__fail(c, n, "REST catalog source '%s' must name /v1/namespaces/NS/tables/TABLE",
                    from);
      *out = TM_SOURCE_ICEBERG_REST;
    } else if (tm_str_has_prefix(rest, "s3://") || tm_str_has_prefix(rest, "s3a://")) {
      *out = TM_SOURCE_ICEBERG_S3;
    } else if (tm_str_has_prefix(rest, "abfs://") || tm_str_has_prefix(rest, "abfss://")) {
      *out = TM_SOURCE_ICEBERG_ABFS;
    } else if (tm_str_has_prefix(rest, "file:")) {
      *out = TM_SOURCE_ICEBERG_FILE;
    } else {
      return tm_cfg__fail(c, n, "unknown source '%s' (allowed: %s)", from, allowed);
    }
  } else if (tm_str_has_prefix(from, "file:")) {
    rest = from + 5;
    *out = TM_SOURCE_FILE;
  } else if (tm_str_has_prefix(from, "s3://") || tm_str_has_prefix(from, "s3a://")) {
    rest = strstr(from, "://") + 3;
    if (!*rest || *rest == '/') return tm_cfg__fail(c, n, "source '%s' names no bucket", from);
    *out = TM_SOURCE_S3;
  } else if (tm_str_has_prefix(from, "abfs://") || tm_str_has_prefix(from, "abfss://")) {
    rest = strstr(from, "://") + 3;
    if (!*rest || *rest == '/' || *rest == '@')
      return tm_cfg__fail(c, n, "source '%s' names no container", from);
    *out = TM_SOURCE_ABFS;
  } else if (tm_str_has_prefix(from, "glue:")) {
    rest = from + 5;
    const char *dot = strchr(rest, '.');
    if (!dot || dot == rest || !dot[1] || strchr(rest, '/'))
      return tm_cfg__fail(c, n, "Glue source '%s' must be glue:DATABASE.TABLE", from);
    *out = TM_SOURCE_GLUE;
  } else {
    return tm_cfg__fail(c, n, "unknown source '%s' (allowed: %s)", from, allowed);
  }
  const char *path = strstr(from, "://") ? strstr(from, "://") + 3 : strchr(from, ':') + 1;
  if (!*path) return tm_cfg__fail(c, n, "source '%s' names no path", from);
  return TM_OK;
}

static bool starts_with_word(const char *s, const char *word) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '(') s++;
  size_t n = strlen(word);
  return strncasecmp(s, word, n) == 0 && (s[n] == ' ' || s[n] == '\t' || s[n] == '\n');
}

/* ---- readers of keys with their own checks (TM_CFG_READER) ---------------- */

static int read_refresh_mode(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  const char *s;
  TM_TRY(tm_cfg__scalar(c, v, "a refresh mode", &s));
  if (strcmp(s, "caching") == 0)
    return tm_cfg__fail(c, v, "refresh_mode '%s' is not supported by tidemark (allowed: full, append, "
                        "changes)", s);
  int e = 0;
  TM_TRY(tm_cfg__get_enum(c, v, k_refresh_modes, &e));
  *(tm_refresh_mode *)field = (tm_refresh_mode)e;
  return TM_OK;
}

/*
 * Spice's unsupported_type_action (a dataset key): what a column of a type
 * tidemark cannot read does (source.h tm_unsupported_action): error, warn,
 * ignore, string (nested columns as JSON text).
 */
static int read_unsupported_action(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  static const char *const values[] = {"error", "warn", "ignore", "string", NULL};
  int e = 0;
  TM_TRY(tm_cfg__get_enum(c, v, values, &e));
  *(tm_unsupported_action *)field = (tm_unsupported_action)e;
  return TM_OK;
}

/*
 * Spice's refresh_on_startup. always (tidemark's default): every start
 * refreshes an accelerated dataset. auto (Spice's default): an acceleration
 * that survived the restart is refreshed at start only when its schedule
 * says a refresh is due since its last one (docs/REFRESH.md "Scheduling").
 */
static int read_refresh_on_startup(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  static const char *const values[] = {"always", "auto", NULL};
  int e = 0;
  TM_TRY(tm_cfg__get_enum(c, v, values, &e));
  *(tm_refresh_on_startup *)field = (tm_refresh_on_startup)e;
  return TM_OK;
}

/* Spice's refresh_cron: a schedule in croner's syntax (util/cron.h), run in local time. */
static int read_refresh_cron(ctx *c, yaml_node_t *v, void *field, void *obj) {
  tm_acceleration_def *a = obj;
  TM_TRY(tm_cfg__get_string(c, v, field));
  tm_error perr;
  tm_error_init(&perr);
  if (tm_cron_parse(a->refresh_cron, &a->cron, &perr) != TM_OK) return tm_cfg__fail(c, v, "%s", perr.message);
  return TM_OK;
}

/* A SQL string whose first word is the statement kind the key needs. */
static int read_sql(ctx *c, yaml_node_t *v, char **field, const char *word, const char *key) {
  TM_TRY(tm_cfg__get_string(c, v, field));
  if (!starts_with_word(*field, word)) return tm_cfg__fail(c, v, "%s must be a %s statement", key, word);
  return TM_OK;
}
static int read_refresh_sql(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  return read_sql(c, v, field, "SELECT", "refresh_sql");
}
static int read_retention_sql(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  return read_sql(c, v, field, "DELETE", "retention_sql");
}

static int read_primary_key(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)field;
  tm_acceleration_def *a = obj;
  return tm_cfg__parse_column_list(c, v, &a->primary_key, &a->n_primary_key);
}

static int read_time_format(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  return get_time_format(c, v, field);
}

static int read_from(ctx *c, yaml_node_t *v, void *field, void *obj) {
  tm_dataset_def *d = obj;
  TM_TRY(tm_cfg__get_string(c, v, field));
  return parse_from(c, v, d->from, &d->source_kind);
}

static int read_dataset_name(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  char **name = field;
  TM_TRY(tm_cfg__get_string(c, v, name));
  bool ok = (*name)[0] != '\0';
  for (const char *q = *name; *q && ok; q++)
    ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' ||
         (q != *name && ((*q >= '0' && *q <= '9') || *q == '-' || *q == '.'));
  if (!ok)
    return tm_cfg__fail(c, v,
                        "bad dataset name '%.*s' (letters, digits, '_', '-', '.'; starting with a "
                        "letter or '_')",
                        64, *name);
  /* The name becomes file names (its folder, its database and their suffixes): issue 22. */
  if (strlen(*name) > TM_DATASET_NAME_MAX)
    return tm_cfg__fail(c, v, "dataset name '%.32s...' is %zu characters long (at most %d)", *name,
                        strlen(*name), TM_DATASET_NAME_MAX);
  return TM_OK;
}

/* Spice's keys of a `columns` entry, beside name and description. */
static const tm_cfg_spice_key k_column_spice[] = {
    {"embeddings", TM_CFG_FORM_EMPTY, NULL, AI},
    {"full_text_search", TM_CFG_FORM_DISABLED, NULL, "tidemark keeps no full-text search index"},
    {"vectors", TM_CFG_FORM_DISABLED, NULL, "tidemark keeps no vector index"},
    {"metadata", TM_CFG_FORM_EMPTY, NULL, "tidemark keeps no column metadata for models"},
    {NULL, 0, NULL, NULL}};

/*
 * Spice's columns: [{name, description, ...}]: each description becomes the
 * comment of its column in SQL (information_schema.columns, duckdb_columns).
 */
static int read_columns(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)field;
  tm_dataset_def *d = obj;
  if (tm_cfg__is_null_scalar(v)) return TM_OK;
  if (v->type != YAML_SEQUENCE_NODE)
    return tm_cfg__fail(c, v, "wrong type: expected a list of columns {name, description}, got %s",
                        tm_cfg__kind_name(v));
  size_t count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  d->columns = tm_calloc(count ? count : 1, sizeof *d->columns);
  if (!d->columns) return tm_error_nomem(c->err);
  for (size_t i = 0; i < count; i++) {
    yaml_node_t *cn = tm_cfg__node_at(c, v->data.sequence.items.start[i]);
    size_t old = tm_cfg__path_push_index(c, i);
    tm_column_doc *col = &d->columns[d->n_columns++];
    int rc = cn->type == YAML_MAPPING_NODE
                 ? TM_OK
                 : tm_cfg__fail(c, cn, "wrong type: expected a column {name, description}, got %s",
                                tm_cfg__kind_name(cn));
    for (yaml_node_pair_t *p = rc == TM_OK ? cn->data.mapping.pairs.start : NULL;
         rc == TM_OK && p < cn->data.mapping.pairs.top; p++) {
      yaml_node_t *k = tm_cfg__node_at(c, p->key), *val = tm_cfg__node_at(c, p->value);
      const char *key;
      rc = tm_cfg__scalar(c, k, "a key", &key);
      if (rc != TM_OK) break;
      size_t old2 = tm_cfg__path_push_key(c, key);
      const tm_cfg_spice_key *sk = tm_cfg__spice_key(k_column_spice, key);
      if ((!strcmp(key, "name") && col->name) || (!strcmp(key, "description") && col->description))
        rc = tm_cfg__fail(c, k, "duplicate key '%s'", key);
      else if (strcmp(key, "name") == 0) rc = tm_cfg__get_string(c, val, &col->name);
      else if (strcmp(key, "description") == 0) rc = tm_cfg__get_string(c, val, &col->description);
      else if (sk) rc = tm_cfg__check_spice(c, sk, val);
      else
        rc = tm_cfg__fail(c, k, "unknown key '%s' (allowed: name, description, embeddings, "
                                "full_text_search, vectors, metadata)", key);
      tm_cfg__path_pop(c, old2);
    }
    if (rc == TM_OK && !col->name) rc = tm_cfg__fail(c, cn, "missing 'name'");
    for (size_t j = 0; rc == TM_OK && j + 1 < d->n_columns; j++)
      if (strcasecmp(d->columns[j].name, col->name) == 0)
        rc = tm_cfg__fail(c, cn, "column '%s' is described twice", col->name);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/* Spice's dependsOn (or depends_on): dataset names, checked once every dataset is read. */
static int read_depends_on(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)field;
  tm_dataset_def *d = obj;
  if (d->depends_on)
    return tm_cfg__fail(c, v, "dependsOn is given twice (dependsOn and depends_on)");
  if (tm_cfg__is_null_scalar(v)) return TM_OK;
  if (v->type != YAML_SEQUENCE_NODE)
    return tm_cfg__fail(c, v, "wrong type: expected a list of dataset names, got %s",
                        tm_cfg__kind_name(v));
  size_t count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
  d->depends_on = tm_calloc(count ? count : 1, sizeof *d->depends_on);
  if (!d->depends_on) return tm_error_nomem(c->err);
  for (size_t i = 0; i < count; i++) {
    size_t old = tm_cfg__path_push_index(c, i);
    int rc = tm_cfg__get_string(c, tm_cfg__node_at(c, v->data.sequence.items.start[i]),
                                &d->depends_on[i]);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
    d->n_depends_on++;
  }
  return TM_OK;
}

/*
 * Spice's indexes: {column or "(a, b)": enabled | unique}: an index of the
 * acceleration's table (a unique one refuses duplicates: a refresh that
 * would store one fails and commits nothing). docs/ENGINES.md "Indexes".
 */
static int read_indexes(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)field;
  static const char *const kinds[] = {"enabled", "unique", NULL};
  tm_acceleration_def *a = obj;
  if (tm_cfg__is_null_scalar(v)) return TM_OK;
  if (v->type != YAML_MAPPING_NODE)
    return tm_cfg__fail(c, v, "wrong type: expected a mapping of column: enabled|unique, got %s",
                        tm_cfg__kind_name(v));
  size_t count = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
  a->indexes = tm_calloc(count ? count : 1, sizeof *a->indexes);
  if (!a->indexes) return tm_error_nomem(c->err);
  for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key), *val = tm_cfg__node_at(c, p->value);
    tm_index_def *ix = &a->indexes[a->n_indexes++];
    int e = 0;
    int rc = tm_cfg__parse_column_list(c, k, &ix->columns, &ix->n_columns);
    if (rc == TM_OK && ix->n_columns == 0) rc = tm_cfg__fail(c, k, "an index needs a column");
    if (rc == TM_OK) rc = tm_cfg__get_enum(c, val, kinds, &e);
    ix->unique = e == 1;
    for (size_t i = 0; rc == TM_OK && i < ix->n_columns; i++)
      for (size_t j = 0; rc == TM_OK && j < i; j++)
        if (strcasecmp(ix->columns[i], ix->columns[j]) == 0)
          rc = tm_cfg__fail(c, k, "column '%s' is twice in the index", ix->columns[i]);
    TM_TRY(rc);
  }
  return TM_OK;
}

static int load_acceleration(ctx *c, yaml_node_t *n, tm_dataset_def *d);
static int read_acceleration(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)field;
  return load_acceleration(c, v, obj);
}

static int read_location(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  char **loc = field;
  TM_TRY(tm_cfg__get_string(c, v, loc));
  if (!tm_str_has_prefix(*loc, "file://") && !tm_str_has_prefix(*loc, "file:") &&
      !tm_str_has_prefix(*loc, "s3://") && !tm_str_has_prefix(*loc, "abfs://") &&
      !tm_str_has_prefix(*loc, "abfss://"))
    return tm_cfg__fail(c, v,
                        "bad location '%s' (allowed: file://PATH, s3://BUCKET/PREFIX, "
                        "abfs://CONTAINER/PREFIX)",
                        *loc);
  return TM_OK;
}

static int read_bootstrap_failure(ctx *c, yaml_node_t *v, void *field, void *obj) {
  (void)obj;
  char **out = field;
  int e = 0;
  TM_TRY(tm_cfg__get_enum(c, v, k_bootstrap_failure, &e));
  tm_free(*out);
  *out = tm_strdup(k_bootstrap_failure[e]);
  return *out ? TM_OK : tm_error_nomem(c->err);
}

/* ---- the key tables (SPICE.md lists what each key does) -------------------- */

#define KEY(name, kind, type, field) {name, kind, offsetof(type, field), NULL, NULL}
#define ENUM_KEY(name, type, field, names) {name, TM_CFG_ENUM, offsetof(type, field), names, NULL}
#define READ_KEY(name, type, field, fn) {name, TM_CFG_READER, offsetof(type, field), NULL, fn}
#define LATER_KEY(name) {name, TM_CFG_LATER, 0, NULL, NULL}

/* Top level: read in a fixed order by load_root (snapshots before datasets). */
static const tm_cfg_key k_top[] = {
    LATER_KEY("version"), LATER_KEY("kind"), LATER_KEY("name"), LATER_KEY("datasets"),
    LATER_KEY("snapshots"), LATER_KEY("runtime"), LATER_KEY("secrets"),
    LATER_KEY("views"), LATER_KEY("metadata"), {NULL, 0, 0, NULL, NULL}};

static const tm_cfg_key k_dataset[] = {
    LATER_KEY("version"), LATER_KEY("kind"), /* only in a dataset file (ref:) */
    LATER_KEY("access"), LATER_KEY("ready_state"), /* Spice's; only the values tidemark keeps */
    READ_KEY("from", tm_dataset_def, from, read_from),
    READ_KEY("name", tm_dataset_def, name, read_dataset_name),
    KEY("params", TM_CFG_PARAMS, tm_dataset_def, params),
    KEY("time_column", TM_CFG_STRING, tm_dataset_def, time_column),
    READ_KEY("time_format", tm_dataset_def, time_format, read_time_format),
    KEY("time_partition_column", TM_CFG_STRING, tm_dataset_def, time_partition_column),
    READ_KEY("time_partition_format", tm_dataset_def, time_partition_format, read_time_format),
    READ_KEY("acceleration", tm_dataset_def, acceleration, read_acceleration),
    KEY("description", TM_CFG_STRING, tm_dataset_def, description),
    READ_KEY("columns", tm_dataset_def, columns, read_columns),
    READ_KEY("dependsOn", tm_dataset_def, depends_on, read_depends_on),
    READ_KEY("unsupported_type_action", tm_dataset_def, unsupported_type_action,
             read_unsupported_action),
    READ_KEY("depends_on", tm_dataset_def, depends_on, read_depends_on),
    {NULL, 0, 0, NULL, NULL}};

static const tm_cfg_key k_accel[] = {
    KEY("enabled", TM_CFG_BOOL, tm_acceleration_def, enabled),
    ENUM_KEY("engine", tm_acceleration_def, engine, k_engines),
    ENUM_KEY("mode", tm_acceleration_def, mode, k_modes),
    READ_KEY("refresh_mode", tm_acceleration_def, refresh_mode, read_refresh_mode),
    KEY("refresh_check_interval", TM_CFG_DURATION, tm_acceleration_def, refresh_check_interval_ms),
    KEY("refresh_append_overlap", TM_CFG_DURATION0, tm_acceleration_def, refresh_append_overlap_ms),
    READ_KEY("refresh_sql", tm_acceleration_def, refresh_sql, read_refresh_sql),
    KEY("refresh_data_window", TM_CFG_DURATION, tm_acceleration_def, refresh_data_window_ms),
    READ_KEY("refresh_on_startup", tm_acceleration_def, refresh_on_startup,
             read_refresh_on_startup),
    READ_KEY("refresh_cron", tm_acceleration_def, refresh_cron, read_refresh_cron),
    KEY("refresh_jitter_enabled", TM_CFG_BOOL, tm_acceleration_def, refresh_jitter_enabled),
    KEY("refresh_jitter_max", TM_CFG_DURATION, tm_acceleration_def, refresh_jitter_max_ms),
    KEY("refresh_retry_enabled", TM_CFG_BOOL, tm_acceleration_def, refresh_retry_enabled),
    KEY("refresh_retry_max_attempts", TM_CFG_COUNT, tm_acceleration_def, refresh_retry_max_attempts),
    READ_KEY("primary_key", tm_acceleration_def, primary_key, read_primary_key),
    LATER_KEY("on_conflict"), /* checked against primary_key once both are read */
    KEY("retention_check_enabled", TM_CFG_BOOL, tm_acceleration_def, retention_check_enabled),
    KEY("retention_period", TM_CFG_DURATION, tm_acceleration_def, retention_period_ms),
    KEY("retention_check_interval", TM_CFG_DURATION, tm_acceleration_def, retention_check_interval_ms),
    READ_KEY("retention_sql", tm_acceleration_def, retention_sql, read_retention_sql),
    ENUM_KEY("snapshots", tm_acceleration_def, snapshots, k_snap_modes),
    READ_KEY("indexes", tm_acceleration_def, indexes, read_indexes),
    KEY("params", TM_CFG_PARAMS, tm_acceleration_def, params),
    {NULL, 0, 0, NULL, NULL}};

static const tm_cfg_key k_snapshots[] = {
    KEY("enabled", TM_CFG_BOOL, tm_snapshots_def, enabled),
    READ_KEY("location", tm_snapshots_def, location, read_location),
    READ_KEY("bootstrap_on_failure_behavior", tm_snapshots_def, bootstrap_on_failure,
             read_bootstrap_failure),
    KEY("params", TM_CFG_PARAMS, tm_snapshots_def, params),
    {NULL, 0, 0, NULL, NULL}};

/*
 * The engine params (acceleration.params): file_path and the engine's own
 * Spice name (cayenne_file_path, duckdb_file, sqlite_file) in file mode,
 * nothing in memory mode. Any other is refused, naming what is allowed.
 */
static int check_engine_params(ctx *c, yaml_node_t *n, const tm_acceleration_def *a) {
  const tm_engine_traits *t = tm_engine_kind_traits(a->engine);
  bool file = a->mode == TM_ENGINE_FILE;
  if (a->engine == TM_ENGINE_POSTGRES) {
    /* Spice's connection params; the table lives in the server, so no file_path. */
    tm_error e2;
    tm_error_init(&e2);
    if (tm_engine_pg_params_check(&a->params, &e2) == TM_OK) return TM_OK;
    size_t old = tm_cfg__path_push_key(c, "params");
    yaml_node_t *pn = tm_cfg__lookup(c, n, "params");
    int rc = tm_cfg__fail(c, pn ? pn : n, "%s", e2.message);
    tm_cfg__path_pop(c, old);
    return rc;
  }
  for (size_t i = 0; i < a->params.len; i++) {
    const char *k = a->params.items[i].key;
    if (file && (strcmp(k, "file_path") == 0 || (t->path_param && strcmp(k, t->path_param) == 0)))
      continue;
    char allowed[128] = "none: a memory acceleration has no file";
    if (file)
      snprintf(allowed, sizeof allowed, "file_path%s%s", t->path_param ? ", " : "",
               t->path_param ? t->path_param : "");
    size_t old = tm_cfg__path_push_key(c, "params");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "params"),
                          "unknown param '%s' of engine %s in mode %s (allowed: %s)%s", k,
                          tm_engine_kind_name(a->engine), tm_engine_mode_name(a->mode), allowed,
                          strcmp(k, "duckdb_memory_limit") == 0
                              ? "; tidemark's one DuckDB instance is capped by runtime.query.memory_limit"
                          : strcmp(k, "file_watcher") == 0
                              ? "; tidemark watches no files: it refreshes on refresh_check_interval, "
                                "refresh_cron or an API trigger"
                              : "");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  return TM_OK;
}

/* Keys that act only beside another: alone they would be accepted and do nothing. */
static int check_needs(ctx *c, yaml_node_t *n, const tm_acceleration_def *a) {
  static const struct {
    const char *key, *why;
  } needs[] = {
      {"refresh_append_overlap", "refresh_append_overlap applies to refresh_mode: append"},
      {"refresh_retry_max_attempts", "refresh_retry_max_attempts needs refresh_retry_enabled: true"},
      {"retention_period", "retention_period needs retention_check_enabled: true"},
      {"retention_sql", "retention_sql needs retention_check_enabled: true"},
      {"retention_check_interval", "retention_check_interval needs retention_check_enabled: true"},
  };
  bool off[] = {a->refresh_mode != TM_REFRESH_APPEND, !a->refresh_retry_enabled,
                !a->retention_check_enabled, !a->retention_check_enabled,
                !a->retention_check_enabled};
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
    yaml_node_t *v = tm_cfg__lookup(c, n, needs[i].key);
    if (!v || !off[i]) continue;
    size_t old = tm_cfg__path_push_key(c, needs[i].key);
    int rc = tm_cfg__fail(c, v, "%s (alone it would do nothing)", needs[i].why);
    tm_cfg__path_pop(c, old);
    return rc;
  }
  return TM_OK;
}

static int load_acceleration(ctx *c, yaml_node_t *n, tm_dataset_def *d) {
  static const section sec = {k_accel, k_accel_spice};
  tm_acceleration_def *a = &d->acceleration;
  d->has_acceleration = true;
  a->enabled = true;
  TM_TRY(tm_cfg__walk(c, n, &sec, a));
  a->has_overlap = tm_cfg__lookup(c, n, "refresh_append_overlap") != NULL;
  yaml_node_t *jmax = tm_cfg__lookup(c, n, "refresh_jitter_max");
  if (jmax && !a->refresh_jitter_enabled) {
    size_t old = tm_cfg__path_push_key(c, "refresh_jitter_max");
    int rc = tm_cfg__fail(c, jmax, "refresh_jitter_max needs refresh_jitter_enabled: true (without "
                                   "it there is no jitter, as in Spice)");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  yaml_node_t *cron = tm_cfg__lookup(c, n, "refresh_cron");
  if (cron && a->refresh_check_interval_ms) {
    size_t old = tm_cfg__path_push_key(c, "refresh_cron");
    int rc = tm_cfg__fail(c, cron, "refresh_cron and refresh_check_interval exclude each other "
                                   "(one schedule per dataset, as in Spice)");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  if (cron && a->refresh_jitter_enabled && !a->refresh_jitter_max_ms) {
    size_t old = tm_cfg__path_push_key(c, "refresh_jitter_enabled");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "refresh_jitter_enabled"),
                          "with refresh_cron, refresh_jitter_enabled needs refresh_jitter_max (its "
                          "default is 10%% of refresh_check_interval, which a cron schedule has not)");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  const tm_engine_traits *traits = tm_engine_kind_traits(a->engine);
  if (!tm_cfg__lookup(c, n, "mode")) a->mode = traits->default_mode;
  if (!tm_engine_kind_supports(a->engine, a->mode)) {
    /* The engines that do support it, from their traits. */
    char others[128] = "";
    for (int k = 0; k < TM_ENGINE__COUNT; k++)
      if (tm_engine_kind_supports((tm_engine_kind)k, a->mode))
        snprintf(others + strlen(others), sizeof others - strlen(others), "%s%s",
                 others[0] ? ", " : "", tm_engine_kind_name((tm_engine_kind)k));
    size_t old = tm_cfg__path_push_key(c, "mode");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "mode"), "engine %s supports mode %s only (use %s for %s)",
                  tm_engine_kind_name(a->engine),
                  tm_engine_mode_name(a->mode == TM_ENGINE_FILE ? TM_ENGINE_MEMORY : TM_ENGINE_FILE),
                  others, tm_engine_mode_name(a->mode));
    tm_cfg__path_pop(c, old);
    return rc;
  }
  TM_TRY(check_engine_params(c, n, a));
  TM_TRY(check_needs(c, n, a));
  /* on_conflict: { column or "(a, b)": drop|upsert } ; columns must be in primary_key. */
  yaml_node_t *oc = tm_cfg__lookup(c, n, "on_conflict");
  if (oc) {
    size_t old = tm_cfg__path_push_key(c, "on_conflict");
    int rc = TM_OK;
    if (oc->type != YAML_MAPPING_NODE)
      rc = tm_cfg__fail(c, oc, "wrong type: expected a mapping of column: drop|upsert, got %s",
                tm_cfg__kind_name(oc));
    else if (a->n_primary_key == 0)
      rc = tm_cfg__fail(c, oc, "on_conflict needs primary_key");
    for (yaml_node_pair_t *p = rc == TM_OK ? oc->data.mapping.pairs.start : NULL;
         p && p < oc->data.mapping.pairs.top && rc == TM_OK; p++) {
      yaml_node_t *k = tm_cfg__node_at(c, p->key), *v = tm_cfg__node_at(c, p->value);
      char **cols = NULL;
      size_t n_cols = 0;
      int e = 0;
      rc = tm_cfg__parse_column_list(c, k, &cols, &n_cols);
      if (rc == TM_OK) rc = tm_cfg__get_enum(c, v, k_conflicts, &e);
      for (size_t i = 0; rc == TM_OK && i < n_cols; i++) {
        bool in_key = false;
        for (size_t j = 0; j < a->n_primary_key; j++)
          if (strcmp(a->primary_key[j], cols[i]) == 0) in_key = true;
        if (!in_key) {
          char key_text[256] = "";
          for (size_t j = 0; j < a->n_primary_key; j++) {
            size_t len = strlen(key_text);
            snprintf(key_text + len, sizeof key_text - len, "%s%s", j ? ", " : "",
                     a->primary_key[j]);
          }
          rc = tm_cfg__fail(c, k, "on_conflict column '%s' is not in primary_key (%s)", cols[i], key_text);
          break;
        }
        tm_conflict_def *grown =
            tm_reallocarray(a->on_conflict, a->n_on_conflict + 1, sizeof *grown);
        if (!grown) {
          rc = tm_error_nomem(c->err);
          break;
        }
        a->on_conflict = grown;
        a->on_conflict[a->n_on_conflict].column = cols[i];
        a->on_conflict[a->n_on_conflict].rule = (tm_on_conflict)e;
        a->n_on_conflict++;
        cols[i] = NULL;
      }
      for (size_t i = 0; i < n_cols; i++) tm_free(cols[i]);
      tm_free(cols);
    }
    /* SPEC A8: cayenne's rule is the newest time_column per key: on_conflict cannot apply. */
    if (rc == TM_OK && tm_engine_kind_traits(a->engine)->conflict_rule == TM_ENGINE_RULE_NEWEST_BY_TIME)
      rc = tm_cfg__fail(c, oc,
                "on_conflict does not apply to engine cayenne, which keeps the newest row per key "
                "by time_column (SPEC A8); remove it, or use engine duckdb, arrow or sqlite");
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * Where the acceleration's files live: params.file_path (or the engine's own
 * param: cayenne_file_path, duckdb_file, sqlite_file), else
 * <config dir>/.tidemark/data/<name> (a folder for cayenne, the database file
 * for sqlite, <name>.duckdb for duckdb).
 */
static int resolve_data_path(ctx *c, tm_dataset_def *d) {
  const tm_kv *ps = &d->acceleration.params;
  const tm_engine_traits *traits = tm_engine_kind_traits(d->acceleration.engine);
  const char *p = tm_kv_get(ps, "file_path");
  if (!p && traits->path_param) p = tm_kv_get(ps, traits->path_param);
  char *path;
  if (p && p[0] == '/') path = tm_strdup(p);
  else if (p) path = tm_path_join(c->dir, p);
  else path = tm_asprintf("%s/.tidemark/data/%s%s", c->dir, d->name, traits->file_suffix);
  if (!path) return tm_error_nomem(c->err);
  d->data_path = path;
  return TM_OK;
}

/* version and kind of a dataset file (ref:): Spice's versions, kind Dataset; not in an entry. */
static int check_file_header(ctx *c, yaml_node_t *n, bool in_file) {
  static const char *const keys[] = {"version", "kind"};
  for (size_t i = 0; i < 2; i++) {
    yaml_node_t *v = tm_cfg__lookup(c, n, keys[i]);
    if (!v) continue;
    size_t old = tm_cfg__path_push_key(c, keys[i]);
    const char *s = NULL;
    int rc = tm_cfg__scalar(c, v, "a string", &s);
    if (rc == TM_OK && !in_file)
      rc = tm_cfg__fail(c, v, "belongs to the top level, or to a dataset file read with ref:");
    else if (rc == TM_OK && i == 0 && strcmp(s, "v1") != 0 && strcmp(s, "v1beta1") != 0 &&
             strcmp(s, "v2") != 0)
      rc = tm_cfg__fail(c, v, "bad value '%s' (allowed: v1beta1, v1, v2)", s);
    else if (rc == TM_OK && i == 1 && strcmp(s, "Dataset") != 0)
      rc = tm_cfg__fail(c, v, "bad value '%s' (allowed: Dataset)", s);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * Spice's access and ready_state, where tidemark has one behaviour: access:
 * read (queries are read-only, SPEC D4) and ready_state: on_load (a dataset
 * is ready once its acceleration has loaded, C1). The other values would
 * change what a query does, so they are refused, not ignored.
 */
static int check_spice_modes(ctx *c, yaml_node_t *n) {
  static const struct {
    const char *key, *value, *why;
  } modes[] = {
      {"access", "read", "tidemark's SQL is read-only (SPEC D4): access: read_write is not supported"},
      {"ready_state", "on_load", "a dataset is ready once its acceleration has loaded (SPEC C1): "
                                 "ready_state: on_registration is not supported"},
  };
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    yaml_node_t *v = tm_cfg__lookup(c, n, modes[i].key);
    if (!v) continue;
    size_t old = tm_cfg__path_push_key(c, modes[i].key);
    const char *s = NULL;
    int rc = tm_cfg__scalar(c, v, "a string", &s);
    if (rc == TM_OK && strcmp(s, modes[i].value) != 0) rc = tm_cfg__fail(c, v, "%s", modes[i].why);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * refresh_mode: changes (SPEC E1-E6) applies an Iceberg table's snapshots:
 * it needs an Iceberg source, an engine that can delete rows by their
 * provenance at the cost of the change (the DuckDB ones), and no key that
 * would change which rows are stored (refresh_sql, refresh_data_window).
 */
static int check_changes(ctx *c, yaml_node_t *acc, const tm_dataset_def *d) {
  const tm_acceleration_def *a = &d->acceleration;
  if (a->refresh_mode != TM_REFRESH_CHANGES) return TM_OK;
  const char *why = NULL, *key = "refresh_mode";
  bool iceberg = d->source_kind == TM_SOURCE_ICEBERG_FILE || d->source_kind == TM_SOURCE_ICEBERG_S3 ||
                 d->source_kind == TM_SOURCE_ICEBERG_REST || d->source_kind == TM_SOURCE_ICEBERG_ABFS ||
                 d->source_kind == TM_SOURCE_GLUE;
  if (!iceberg) {
    why = "refresh_mode: changes applies an Iceberg table's snapshots: it needs an iceberg: source "
          "(use append or full for files)";
  } else if (a->refresh_sql) {
    key = "refresh_sql";
    why = "refresh_mode: changes keeps the table's rows exactly (SPEC E3): refresh_sql is not "
          "allowed with it";
  } else if (a->refresh_data_window_ms) {
    key = "refresh_data_window";
    why = "refresh_mode: changes keeps the table's rows exactly (SPEC E3): refresh_data_window is "
          "not allowed with it";
  }
  if (!why) return TM_OK;
  char path[64];
  snprintf(path, sizeof path, "acceleration.%s", key);
  size_t old = tm_cfg__path_push_key(c, path);
  yaml_node_t *v = tm_cfg__lookup(c, acc, key);
  int rc = tm_cfg__fail(c, v ? v : tm_cfg__lookup(c, acc, "refresh_mode"), "%s", why);
  tm_cfg__path_pop(c, old);
  return rc;
}

static int load_dataset(ctx *c, yaml_node_t *n, tm_dataset_def *d, bool in_file) {
  static const section sec = {k_dataset, k_dataset_spice};
  if (n->type == YAML_MAPPING_NODE) d->line = (int)n->start_mark.line + 1;
  TM_TRY(tm_cfg__walk(c, n, &sec, d));
  TM_TRY(check_file_header(c, n, in_file));
  TM_TRY(check_spice_modes(c, n));
  if (!d->from) return tm_cfg__fail(c, n, "missing 'from' (where the data comes from, e.g. file:data/)");
  if (!d->name) return tm_cfg__fail(c, n, "missing 'name'");
  /* The connector's params, checked as opening the source checks them. */
  tm_error perr;
  tm_error_init(&perr);
  if (tm_source_check_params(d->from, &d->params, &perr) != TM_OK) {
    size_t old = tm_cfg__path_push_key(c, "params");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "params"), "%s", perr.message);
    tm_cfg__path_pop(c, old);
    return rc;
  }
  const tm_acceleration_def *a = &d->acceleration;
  if (d->time_partition_column && !d->time_column) {
    size_t old = tm_cfg__path_push_key(c, "time_partition_column");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "time_partition_column"),
                  "time_partition_column needs time_column");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  yaml_node_t *acc = tm_cfg__lookup(c, n, "acceleration");
  if (d->has_acceleration && a->enabled) {
    if (a->refresh_mode == TM_REFRESH_APPEND && !d->time_column) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.refresh_mode");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "refresh_mode"),
                    "refresh_mode: append needs time_column (a time column of the data, or "
                    "last_modified for file and S3 sources) (SPEC A1)");
      tm_cfg__path_pop(c, old);
      return rc;
    }
    TM_TRY(check_changes(c, acc, d));
    if (a->refresh_data_window_ms &&
        (!d->time_column || strcmp(d->time_column, "last_modified") == 0)) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.refresh_data_window");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "refresh_data_window"),
                    d->time_column ? "refresh_data_window needs a time_column of the data (not "
                                     "last_modified, a file's time)"
                                   : "refresh_data_window needs time_column (as in Spice)");
      tm_cfg__path_pop(c, old);
      return rc;
    }
    if (a->retention_check_enabled && !a->retention_period_ms && !a->retention_sql) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.retention_check_enabled");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "retention_check_enabled"),
                    "retention_check_enabled needs retention_period or retention_sql");
      tm_cfg__path_pop(c, old);
      return rc;
    }
    if (a->retention_period_ms && !d->time_column) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.retention_period");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "retention_period"), "retention_period needs time_column");
      tm_cfg__path_pop(c, old);
      return rc;
    }
    if (a->engine == TM_ENGINE_POSTGRES && a->snapshots != TM_SNAPSHOTS_DISABLED) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.snapshots");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "snapshots"),
                            "engine postgres keeps no acceleration snapshots: the PostgreSQL server's "
                            "own backups cover its table");
      tm_cfg__path_pop(c, old);
      return rc;
    }
    if (a->snapshots != TM_SNAPSHOTS_DISABLED && a->mode != TM_ENGINE_FILE) {
      size_t old = tm_cfg__path_push_key(c, "acceleration.snapshots");
      int rc = tm_cfg__fail(c, tm_cfg__lookup(c, acc, "snapshots"),
                    "acceleration snapshots need mode file (this dataset is in memory)");
      tm_cfg__path_pop(c, old);
      return rc;
    }
  }
  if (d->time_column && strcmp(d->time_column, "last_modified") == 0 &&
      d->source_kind != TM_SOURCE_FILE && d->source_kind != TM_SOURCE_S3 &&
      d->source_kind != TM_SOURCE_ABFS) {
    size_t old = tm_cfg__path_push_key(c, "time_column");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "time_column"),
                  "last_modified is a file property: it needs a file:, s3:// or abfs:// source (SPEC A7)");
    tm_cfg__path_pop(c, old);
    return rc;
  }
  return resolve_data_path(c, d);
}

static int load_snapshots(ctx *c, yaml_node_t *n) {
  static const section sec = {k_snapshots, NULL};
  tm_snapshots_def *s = &c->cfg->snapshots;
  s->enabled = true; /* Spice's default once the section is there */
  TM_TRY(tm_cfg__walk(c, n, &sec, s));
  if (s->enabled && !s->location) return tm_cfg__fail(c, n, "enabled snapshots need a location");
  /* The location's store params, checked as a dataset's on that store are (unknown: refused). */
  /* Only the store's own params: a source's format params say nothing to a snapshot store. */
  for (size_t i = 0; i < s->params.len; i++) {
    const char *k = s->params.items[i].key;
    if (tm_str_has_prefix(k, "s3_") || tm_str_has_prefix(k, "abfs_") || !strcmp(k, "allow_http") ||
        !strcmp(k, "client_timeout"))
      continue;
    size_t old = tm_cfg__path_push_key(c, "params");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "params"),
                          "unknown param '%s' of a snapshot store (allowed: s3_*, abfs_*, "
                          "allow_http, client_timeout)", k);
    tm_cfg__path_pop(c, old);
    return rc;
  }
  tm_error perr;
  tm_error_init(&perr);
  if (s->location && tm_source_check_params(s->location, &s->params, &perr) != TM_OK) {
    size_t old = tm_cfg__path_push_key(c, "params");
    int rc = tm_cfg__fail(c, tm_cfg__lookup(c, n, "params") ? tm_cfg__lookup(c, n, "params") : n,
                          "%s", perr.message);
    tm_cfg__path_pop(c, old);
    return rc;
  }
  return TM_OK;
}

/*
 * runtime: tidemark reads runtime.query.{memory_limit, temp_directory,
 * threads} (and Spice's older runtime.memory_limit / temp_directory), the
 * API keys of runtime.auth and runtime.dataset_load_parallelism; Spice's
 * other runtime settings load only in the form that is tidemark's behaviour
 * (k_runtime_spice) and any other key is refused.
 */
static const tm_cfg_spice_key k_query_spice[] = {
    {"spill_compression", TM_CFG_FORM_NONE, NULL,
     "DuckDB compresses its spill files in its own way (runtime.query.temp_directory)"},
    {NULL, 0, NULL, NULL}};

static const tm_cfg_spice_key k_runtime_spice[] = {
    {"tls", TM_CFG_FORM_DISABLED, NULL,
     "tidemark serves plain HTTP; put a TLS proxy in front of it"},
    {"cors", TM_CFG_FORM_DISABLED, NULL,
     "tidemark sends no CORS headers: pages of other origins cannot call its API"},
    {"results_cache", TM_CFG_FORM_DISABLED, NULL,
     "tidemark keeps no results cache: every query reads the acceleration"},
    {"task_history", TM_CFG_FORM_DISABLED, NULL,
     "tidemark records no task history table (its logs and metrics say what ran)"},
    {"telemetry", TM_CFG_FORM_DISABLED, NULL, "tidemark sends no telemetry"},
    {"tracing", TM_CFG_FORM_DISABLED, NULL, "tidemark exports no traces"},
    {"params", TM_CFG_FORM_EMPTY, NULL, "tidemark has no runtime params"},
    {"scheduler", TM_CFG_FORM_NONE, NULL,
     "tidemark runs no asynchronous queries (Spice's /v1/queries): /v1/sql answers each query "
     "at once"},
    {"shutdown_timeout", TM_CFG_FORM_NONE, NULL,
     "at shutdown tidemark rolls back a refresh in flight at its next batch; there is no "
     "timeout to set"},
    {NULL, 0, NULL, NULL}};

/* Checks key/value against a Spice table; TM_ENOTFOUND when the table does not name key. */
static int spice_entry(ctx *c, const tm_cfg_spice_key *table, const char *key, yaml_node_t *v) {
  const tm_cfg_spice_key *sk = tm_cfg__spice_key(table, key);
  return sk ? tm_cfg__check_spice(c, sk, v) : TM_ENOTFOUND;
}

/* The keys a mapping may hold, for an unknown key's message. */
static int unknown_key(ctx *c, yaml_node_t *k, const char *key, const char *const *ours,
                       const tm_cfg_spice_key *spice) {
  char allowed[512] = "";
  for (size_t i = 0; ours[i]; i++)
    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s", i ? ", " : "", ours[i]);
  for (const tm_cfg_spice_key *sk = spice; sk && sk->key; sk++)
    snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), ", %s", sk->key);
  return tm_cfg__fail(c, k, "unknown key '%s' (allowed: %s)", key, allowed);
}

static int load_query(ctx *c, yaml_node_t *n) {
  static const char *const ours[] = {"memory_limit", "temp_directory", "threads", NULL};
  tm_config *cfg = c->cfg;
  if (n->type != YAML_MAPPING_NODE) return tm_cfg__fail(c, n, "wrong type: expected a mapping, got %s", tm_cfg__kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    const char *key;
    TM_TRY(tm_cfg__scalar(c, tm_cfg__node_at(c, p->key), "a key", &key));
    yaml_node_t *v = tm_cfg__node_at(c, p->value);
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = TM_OK;
    if (strcmp(key, "memory_limit") == 0) {
      const char *txt = NULL;
      rc = tm_cfg__scalar(c, v, "a size", &txt);
      if (rc == TM_OK && (tm_size_parse(txt, &cfg->query_memory_limit) != TM_OK || cfg->query_memory_limit < (1 << 20)))
        rc = tm_cfg__fail(c, v, "bad size '%s' (e.g. 4GiB, 512MiB, 1GB; at least 1MiB)", txt);
    } else if (strcmp(key, "temp_directory") == 0) {
      char *dir = NULL;
      rc = tm_cfg__get_string(c, v, &dir);
      if (rc == TM_OK) {
        tm_free(cfg->query_temp_dir);
        cfg->query_temp_dir = dir[0] == '/' ? tm_strdup(dir) : tm_path_join(c->dir, dir);
        if (!cfg->query_temp_dir) rc = tm_error_nomem(c->err);
      }
      tm_free(dir);
    } else if (strcmp(key, "threads") == 0) {
      int64_t t = 0;
      rc = tm_cfg__get_int(c, v, 1, &t);
      if (rc == TM_OK && t > 1024) rc = tm_cfg__fail(c, v, "bad value %lld (allowed: 1 to 1024)", (long long)t);
      cfg->query_threads = (int)t;
    } else if ((rc = spice_entry(c, k_query_spice, key, v)) == TM_ENOTFOUND) {
      rc = unknown_key(c, tm_cfg__node_at(c, p->key), key, ours, k_query_spice);
    }
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * Spice's runtime.auth: {api-key (or api_key): {enabled, keys: [...]}}. The
 * keys (secrets expanded as in params) go into cfg->api_keys; any of them
 * opens the API (SPEC D4). enabled: false, or no keys, asks for none.
 */
static int load_auth(ctx *c, yaml_node_t *n) {
  if (tm_cfg__is_null_scalar(n)) return TM_OK;
  if (n->type != YAML_MAPPING_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected a mapping, got %s", tm_cfg__kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key), *v = tm_cfg__node_at(c, p->value);
    const char *key;
    TM_TRY(tm_cfg__scalar(c, k, "a key", &key));
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = TM_OK;
    if (strcmp(key, "api-key") != 0 && strcmp(key, "api_key") != 0) {
      rc = tm_cfg__fail(c, k, "unknown key '%s' (allowed: api-key)", key);
    } else if (v->type != YAML_MAPPING_NODE) {
      rc = tm_cfg__fail(c, v, "wrong type: expected {enabled, keys}, got %s", tm_cfg__kind_name(v));
    } else {
      bool enabled = true;
      yaml_node_t *keys = NULL;
      for (yaml_node_pair_t *q = v->data.mapping.pairs.start; rc == TM_OK && q < v->data.mapping.pairs.top; q++) {
        yaml_node_t *qk = tm_cfg__node_at(c, q->key), *qv = tm_cfg__node_at(c, q->value);
        const char *name;
        rc = tm_cfg__scalar(c, qk, "a key", &name);
        if (rc != TM_OK) break;
        size_t old2 = tm_cfg__path_push_key(c, name);
        if (strcmp(name, "enabled") == 0) rc = tm_cfg__get_bool(c, qv, &enabled);
        else if (strcmp(name, "keys") == 0) keys = qv;
        else rc = tm_cfg__fail(c, qk, "unknown key '%s' (allowed: enabled, keys)", name);
        tm_cfg__path_pop(c, old2);
      }
      if (rc == TM_OK && enabled && (!keys || keys->type != YAML_SEQUENCE_NODE ||
                                     keys->data.sequence.items.top == keys->data.sequence.items.start))
        rc = tm_cfg__fail(c, keys ? keys : v, "api-key needs keys: a list of at least one key");
      size_t count = rc == TM_OK && enabled
                         ? (size_t)(keys->data.sequence.items.top - keys->data.sequence.items.start)
                         : 0;
      for (size_t i = 0; rc == TM_OK && i < count; i++) {
        yaml_node_t *kn = tm_cfg__node_at(c, keys->data.sequence.items.start[i]);
        size_t old2 = tm_cfg__path_push_key(c, "keys");
        tm_cfg__path_push_index(c, i);
        const char *raw = NULL;
        char *key_text = NULL;
        tm_error e;
        tm_error_init(&e);
        rc = tm_cfg__scalar(c, kn, "a key", &raw);
        if (rc == TM_OK && tm_cfg__expand(c, raw, &key_text, &c->cfg->reads_volatile_env, &e) != TM_OK)
          rc = tm_cfg__fail(c, kn, "%s", e.message);
        if (rc == TM_OK && !key_text[0]) rc = tm_cfg__fail(c, kn, "an API key cannot be empty");
        char **grown = rc == TM_OK ? tm_reallocarray(c->cfg->api_keys, c->cfg->n_api_keys + 1,
                                                      sizeof *grown)
                                   : NULL;
        if (rc == TM_OK && !grown) rc = tm_error_nomem(c->err);
        if (rc == TM_OK) {
          c->cfg->api_keys = grown;
          c->cfg->api_keys[c->cfg->n_api_keys++] = key_text;
          key_text = NULL;
        }
        tm_free(key_text);
        tm_cfg__path_pop(c, old2);
      }
    }
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

static int load_runtime(ctx *c, yaml_node_t *n) {
  static const char *const ours[] = {"query", "memory_limit", "temp_directory", "auth",
                                     "dataset_load_parallelism",
                                     "num_of_parallel_loading_at_start_up", "caching",
                                     "output_level", NULL};
  if (n->type != YAML_MAPPING_NODE) return tm_cfg__fail(c, n, "wrong type: expected a mapping, got %s", tm_cfg__kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    const char *key;
    TM_TRY(tm_cfg__scalar(c, tm_cfg__node_at(c, p->key), "a key", &key));
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++)
      if (tm_cfg__node_at(c, q->key)->type == YAML_SCALAR_NODE &&
          strcmp((const char *)tm_cfg__node_at(c, q->key)->data.scalar.value, key) == 0)
        return tm_cfg__fail(c, tm_cfg__node_at(c, p->key), "duplicate key '%s'", key);
    yaml_node_t *v = tm_cfg__node_at(c, p->value);
    int rc = TM_OK;
    size_t old = tm_cfg__path_push_key(c, key);
    if (strcmp(key, "query") == 0) {
      rc = load_query(c, v);
    } else if (strcmp(key, "memory_limit") == 0 || strcmp(key, "temp_directory") == 0) {
      /* Spice's older spelling of runtime.query.*: read as a one-key query section. */
      tm_cfg__path_pop(c, old);
      yaml_node_pair_t *saved_s = n->data.mapping.pairs.start, *saved_t = n->data.mapping.pairs.top;
      n->data.mapping.pairs.start = p;
      n->data.mapping.pairs.top = p + 1;
      rc = load_query(c, n);
      n->data.mapping.pairs.start = saved_s;
      n->data.mapping.pairs.top = saved_t;
      old = tm_cfg__path_push_key(c, key);
    } else if (strcmp(key, "auth") == 0) {
      rc = load_auth(c, v);
    } else if (strcmp(key, "dataset_load_parallelism") == 0 ||
               strcmp(key, "num_of_parallel_loading_at_start_up") == 0) {
      int64_t w = 0;
      rc = tm_cfg__get_int(c, v, 1, &w);
      if (rc == TM_OK && w > 256) rc = tm_cfg__fail(c, v, "bad value %lld (allowed: 1 to 256)", (long long)w);
      c->cfg->load_parallelism = (int)w;
    } else if (strcmp(key, "output_level") == 0) {
      /* Spice's log verbosity: info (default), verbose, very_verbose; TIDEMARK_LOG wins. */
      static const char *const levels[] = {"info", "verbose", "very_verbose", NULL};
      int e = 0;
      rc = tm_cfg__get_enum(c, v, levels, &e);
      c->cfg->log_debug = e > 0;
      if (rc == TM_OK && e == 2)
        rc = tm_cfg__warn(c, v, "very_verbose logs as verbose: tidemark's most detailed level is debug");
    } else if (strcmp(key, "caching") == 0) {
      /* Spice's caches (sql_results, search_results, embeddings): each must be disabled. */
      static const tm_cfg_spice_key cache = {"caching", TM_CFG_FORM_DISABLED, NULL,
                                             "tidemark keeps no caches: every query reads the "
                                             "acceleration"};
      if (v->type != YAML_MAPPING_NODE && !tm_cfg__is_null_scalar(v))
        rc = tm_cfg__fail(c, v, "wrong type: expected a mapping of caches, got %s", tm_cfg__kind_name(v));
      for (yaml_node_pair_t *q = v->type == YAML_MAPPING_NODE ? v->data.mapping.pairs.start : NULL;
           rc == TM_OK && q && q < v->data.mapping.pairs.top; q++) {
        const char *name;
        rc = tm_cfg__scalar(c, tm_cfg__node_at(c, q->key), "a key", &name);
        if (rc != TM_OK) break;
        size_t old2 = tm_cfg__path_push_key(c, name);
        rc = tm_cfg__check_spice(c, &cache, tm_cfg__node_at(c, q->value));
        tm_cfg__path_pop(c, old2);
      }
    } else if ((rc = spice_entry(c, k_runtime_spice, key, v)) == TM_ENOTFOUND) {
      rc = unknown_key(c, tm_cfg__node_at(c, p->key), key, ours, k_runtime_spice);
    }
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

static int syntax_error(const yaml_parser_t *p, const char *name, tm_error *err);
static int check_depth(const char *text, size_t len, const char *name, tm_error *err);

/*
 * Spice's `- ref: PATH` entry (dependsOn aside): the dataset is the file
 * PATH/dataset.yaml, or PATH/dataset.yml, below the config's folder, with
 * the keys of a datasets entry (and version, kind: Dataset). Its messages
 * name that file; relative paths in it resolve against the config's folder.
 */
static int load_dataset_ref(ctx *c, yaml_node_t *dn, tm_dataset_def *d) {
  const char *ref = NULL;
  yaml_node_t *deps = NULL; /* dependsOn beside ref, read once the dataset is */
  for (yaml_node_pair_t *p = dn->data.mapping.pairs.start; p < dn->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key), *v = tm_cfg__node_at(c, p->value);
    const char *key;
    TM_TRY(tm_cfg__scalar(c, k, "a key", &key));
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = TM_OK;
    if (strcmp(key, "ref") == 0) rc = tm_cfg__scalar(c, v, "a folder", &ref);
    else if (strcmp(key, "dependsOn") == 0 || strcmp(key, "depends_on") == 0) deps = v;
    else rc = tm_cfg__fail(c, k, "unknown key '%s' beside ref (allowed: ref, dependsOn)", key);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  char *base = ref[0] == '/' ? tm_strdup(ref) : tm_path_join(c->dir, ref);
  if (!base) return tm_error_nomem(c->err);
  char *path = NULL, *text = NULL;
  size_t len = 0;
  int rc = TM_ENOTFOUND;
  static const char *const names[] = {"dataset.yaml", "dataset.yml"};
  for (size_t i = 0; rc == TM_ENOTFOUND && i < 2; i++) {
    tm_free(path);
    path = tm_path_join(base, names[i]);
    if (!path) {
      rc = tm_error_nomem(c->err);
      break;
    }
    tm_error e;
    tm_error_init(&e);
    rc = tm_read_file(path, TM_CONFIG_MAX_BYTES, &text, &len, &e);
    if (rc < 0 && rc != TM_ENOTFOUND) rc = tm_cfg__fail(c, dn, "ref: %s", e.message);
  }
  if (rc == TM_ENOTFOUND) {
    size_t old = tm_cfg__path_push_key(c, "ref");
    rc = tm_cfg__fail(c, tm_cfg__lookup(c, dn, "ref"), "no dataset.yaml or dataset.yml in %s", base);
    tm_cfg__path_pop(c, old);
  }
  tm_free(base);
  if (rc == TM_OK) rc = check_depth(text, len, path, c->err);
  yaml_parser_t parser;
  yaml_document_t doc;
  bool parsed = false;
  if (rc == TM_OK) {
    if (!yaml_parser_initialize(&parser)) {
      rc = tm_error_nomem(c->err);
    } else {
      yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
      if (!yaml_parser_load(&parser, &doc)) rc = syntax_error(&parser, path, c->err);
      else parsed = true;
      if (!parsed) yaml_parser_delete(&parser);
    }
  }
  if (parsed) {
    ctx sub = *c;
    sub.file = path;
    sub.doc = &doc;
    sub.path[0] = '\0';
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE)
      rc = tm_error_set(c->err, TM_EINVALID, "%s: expected a dataset (a mapping with from and name)",
                        path);
    else rc = load_dataset(&sub, root, d, true);
    yaml_document_delete(&doc);
    if (rc == TM_OK && deps) {
      size_t old = tm_cfg__path_push_key(c, "dependsOn");
      rc = read_depends_on(c, deps, NULL, d);
      tm_cfg__path_pop(c, old);
    }
    yaml_parser_delete(&parser);
  }
  tm_free(text);
  tm_free(path);
  return rc;
}

/*
 * Spice's top-level views: [{name, sql}], each a query over the datasets,
 * listed in SQL under its name (description allowed, dependsOn warned). The
 * query must start with SELECT or WITH; the runtime runs it through the
 * read-only gate when it creates the view.
 */
static int load_views(ctx *c, yaml_node_t *n) {
  tm_config *cfg = c->cfg;
  if (tm_cfg__is_null_scalar(n)) return TM_OK;
  if (n->type != YAML_SEQUENCE_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected a list of views, got %s", tm_cfg__kind_name(n));
  size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  cfg->views = tm_calloc(count ? count : 1, sizeof *cfg->views);
  if (!cfg->views) return tm_error_nomem(c->err);
  for (size_t i = 0; i < count; i++) {
    yaml_node_t *vn = tm_cfg__node_at(c, n->data.sequence.items.start[i]);
    size_t old_i = tm_cfg__path_push_index(c, i);
    tm_view_def *v = &cfg->views[cfg->n_views++];
    v->line = (int)vn->start_mark.line + 1;
    int rc = vn->type == YAML_MAPPING_NODE
                 ? TM_OK
                 : tm_cfg__fail(c, vn, "wrong type: expected a view {name, sql}, got %s",
                                tm_cfg__kind_name(vn));
    for (yaml_node_pair_t *p = rc == TM_OK ? vn->data.mapping.pairs.start : NULL;
         rc == TM_OK && p < vn->data.mapping.pairs.top; p++) {
      yaml_node_t *k = tm_cfg__node_at(c, p->key), *val = tm_cfg__node_at(c, p->value);
      const char *key;
      rc = tm_cfg__scalar(c, k, "a key", &key);
      if (rc != TM_OK) break;
      size_t old = tm_cfg__path_push_key(c, key);
      if ((strcmp(key, "name") == 0 && v->name) || (strcmp(key, "sql") == 0 && v->sql))
        rc = tm_cfg__fail(c, k, "duplicate key '%s'", key);
      else if (strcmp(key, "name") == 0) rc = read_dataset_name(c, val, &v->name, NULL);
      else if (strcmp(key, "sql") == 0) rc = tm_cfg__get_string(c, val, &v->sql);
      else if (strcmp(key, "description") == 0 && v->description) rc = tm_cfg__fail(c, k, "duplicate key '%s'", key);
      else if (strcmp(key, "description") == 0) rc = tm_cfg__get_string(c, val, &v->description);
      else if (strcmp(key, "dependsOn") == 0 || strcmp(key, "depends_on") == 0) {
        tm_dataset_def deps; /* read_depends_on fills a dataset's list: borrow one */
        memset(&deps, 0, sizeof deps);
        deps.depends_on = v->depends_on;
        deps.n_depends_on = v->n_depends_on;
        rc = read_depends_on(c, val, NULL, &deps);
        v->depends_on = deps.depends_on;
        v->n_depends_on = deps.n_depends_on;
      }
      else rc = tm_cfg__fail(c, k, "unknown key '%s' (allowed: name, sql, description, dependsOn)", key);
      if (rc == TM_OK && strcmp(key, "sql") == 0) {
        const char *q = v->sql;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r' || *q == '(') q++;
        if (strncasecmp(q, "select", 6) != 0 && strncasecmp(q, "with", 4) != 0)
          rc = tm_cfg__fail(c, val, "a view's sql must be a query (SELECT or WITH)");
      }
      tm_cfg__path_pop(c, old);
    }
    if (rc == TM_OK && (!v->name || !v->sql))
      rc = tm_cfg__fail(c, vn, "a view needs a name and sql");
    for (size_t j = 0; rc == TM_OK && j < cfg->n_datasets; j++)
      if (strcasecmp(cfg->datasets[j].name, v->name) == 0)
        rc = tm_cfg__fail(c, vn, "view '%s': a dataset has that name (line %d)", v->name,
                          cfg->datasets[j].line);
    for (size_t j = 0; rc == TM_OK && j + 1 < cfg->n_views; j++)
      if (strcasecmp(cfg->views[j].name, v->name) == 0)
        rc = tm_cfg__fail(c, vn, "duplicate view name '%s' (first at line %d)", v->name,
                          cfg->views[j].line);
    tm_cfg__path_pop(c, old_i);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * Spice's dependsOn: each name must be another dataset (matched ignoring
 * case, and rewritten to its spelling) and the dependencies must not form a
 * cycle. The runtime loads a dataset after the ones it depends on.
 */
static int check_depends_on(ctx *c) {
  tm_config *cfg = c->cfg;
  for (size_t i = 0; i < cfg->n_datasets; i++) {
    tm_dataset_def *d = &cfg->datasets[i];
    for (size_t j = 0; j < d->n_depends_on; j++) {
      const tm_dataset_def *dep = NULL;
      for (size_t k = 0; k < cfg->n_datasets && !dep; k++)
        if (strcasecmp(cfg->datasets[k].name, d->depends_on[j]) == 0) dep = &cfg->datasets[k];
      if (!dep || dep == d)
        return tm_error_set(c->err, TM_EINVALID,
                            "%s:%d: datasets[%zu].dependsOn: %s '%s'", c->file, d->line, i,
                            dep ? "a dataset cannot depend on itself:" : "no dataset named",
                            d->depends_on[j]);
      if (strcmp(dep->name, d->depends_on[j]) != 0) {
        char *name = tm_strdup(dep->name);
        if (!name) return tm_error_nomem(c->err);
        tm_free(d->depends_on[j]);
        d->depends_on[j] = name;
      }
    }
  }
  /* A cycle: place, round after round, every dataset whose dependencies are placed
   * (Kahn's order); what is never placed is on a cycle or depends on one. */
  size_t n = cfg->n_datasets, done = 0;
  bool *placed = tm_calloc(n ? n : 1, sizeof *placed);
  if (!placed) return tm_error_nomem(c->err);
  for (bool progress = true; progress && done < n;) {
    progress = false;
    for (size_t i = 0; i < n; i++) {
      if (placed[i]) continue;
      bool ready = true;
      for (size_t j = 0; j < cfg->datasets[i].n_depends_on && ready; j++)
        for (size_t k = 0; k < n; k++)
          if (!placed[k] && strcmp(cfg->datasets[k].name, cfg->datasets[i].depends_on[j]) == 0)
            ready = false;
      if (ready) {
        placed[i] = true;
        done++;
        progress = true;
      }
    }
  }
  int rc = TM_OK;
  for (size_t i = 0; i < n && done < n; i++)
    if (!placed[i]) {
      rc = tm_error_set(c->err, TM_EINVALID,
                        "%s:%d: datasets[%zu].dependsOn: a cycle of dependencies through '%s'",
                        c->file, cfg->datasets[i].line, i, cfg->datasets[i].name);
      break;
    }
  tm_free(placed);
  return rc;
}

/* The views, after the datasets (their names must differ; dependsOn names datasets). */
static int load_root_views(ctx *c, yaml_node_t *root) {
  yaml_node_t *n = tm_cfg__lookup(c, root, "views");
  if (!n) return TM_OK;
  size_t old = tm_cfg__path_push_key(c, "views");
  int rc = load_views(c, n);
  tm_cfg__path_pop(c, old);
  tm_config *cfg = c->cfg;
  for (size_t i = 0; rc == TM_OK && i < cfg->n_views; i++)
    for (size_t j = 0; rc == TM_OK && j < cfg->views[i].n_depends_on; j++) {
      bool found = false;
      for (size_t k = 0; k < cfg->n_datasets && !found; k++)
        found = strcasecmp(cfg->datasets[k].name, cfg->views[i].depends_on[j]) == 0;
      if (!found)
        rc = tm_error_set(c->err, TM_EINVALID, "%s:%d: views[%zu].dependsOn: no dataset named '%s'",
                          c->file, cfg->views[i].line, i, cfg->views[i].depends_on[j]);
    }
  return rc;
}

static int load_root(ctx *c, yaml_node_t *root) {
  static const section sec = {k_top, k_top_spice};
  tm_config *cfg = c->cfg;
  TM_TRY(tm_cfg__check_mapping(c, root, &sec));
  yaml_node_t *n;
  if ((n = tm_cfg__lookup(c, root, "version"))) {
    size_t old = tm_cfg__path_push_key(c, "version");
    int rc = tm_cfg__get_string(c, n, &cfg->version);
    /* Spice's versions; v2 (what `spice init` writes) keeps the dataset keys tidemark reads. */
    if (rc == TM_OK && strcmp(cfg->version, "v1") != 0 && strcmp(cfg->version, "v1beta1") != 0 &&
        strcmp(cfg->version, "v2") != 0)
      rc = tm_cfg__fail(c, n, "bad value '%s' (allowed: v1beta1, v1, v2)", cfg->version);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  if ((n = tm_cfg__lookup(c, root, "kind"))) {
    size_t old = tm_cfg__path_push_key(c, "kind");
    int rc = tm_cfg__get_string(c, n, &cfg->kind);
    if (rc == TM_OK && strcmp(cfg->kind, "Spicepod") != 0)
      rc = tm_cfg__fail(c, n, "bad value '%s' (allowed: Spicepod)", cfg->kind);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  if ((n = tm_cfg__lookup(c, root, "name"))) {
    size_t old = tm_cfg__path_push_key(c, "name");
    int rc = tm_cfg__get_string(c, n, &cfg->name);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  /* Descriptive, as in Spice (whose runtime reads it nowhere either): a mapping. */
  if ((n = tm_cfg__lookup(c, root, "metadata")) && !tm_cfg__is_null_scalar(n) &&
      n->type != YAML_MAPPING_NODE) {
    size_t old = tm_cfg__path_push_key(c, "metadata");
    int rc = tm_cfg__fail(c, n, "wrong type: expected a mapping, got %s", tm_cfg__kind_name(n));
    tm_cfg__path_pop(c, old);
    return rc;
  }
  /* Before anything with params: they may refer to secrets. */
  TM_TRY(tm_cfg__load_secrets(c, root, tm_cfg__lookup(c, root, "secrets")));
  if ((n = tm_cfg__lookup(c, root, "snapshots"))) {
    size_t old = tm_cfg__path_push_key(c, "snapshots");
    int rc = load_snapshots(c, n);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  if ((n = tm_cfg__lookup(c, root, "runtime")) && !tm_cfg__is_null_scalar(n)) {
    size_t old = tm_cfg__path_push_key(c, "runtime");
    int rc = load_runtime(c, n);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  n = tm_cfg__lookup(c, root, "datasets");
  if (!n || tm_cfg__is_null_scalar(n)) return load_root_views(c, root);
  size_t old = tm_cfg__path_push_key(c, "datasets");
  if (n->type != YAML_SEQUENCE_NODE) {
    int rc = tm_cfg__fail(c, n, "wrong type: expected a list of datasets, got %s", tm_cfg__kind_name(n));
    tm_cfg__path_pop(c, old);
    return rc;
  }
  size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
  cfg->datasets = tm_calloc(count ? count : 1, sizeof *cfg->datasets);
  if (!cfg->datasets) return tm_error_nomem(c->err);
  for (size_t i = 0; i < count; i++) {
    yaml_node_t *dn = tm_cfg__node_at(c, n->data.sequence.items.start[i]);
    tm_dataset_def *d = &cfg->datasets[i];
    tm_dataset_def_init(d);
    cfg->n_datasets++;
    size_t old_i = tm_cfg__path_push_index(c, i);
    bool is_ref = dn->type == YAML_MAPPING_NODE && tm_cfg__lookup(c, dn, "ref");
    int rc = is_ref ? load_dataset_ref(c, dn, d) : load_dataset(c, dn, d, false);
    yaml_node_t *name_at = is_ref ? dn : tm_cfg__lookup(c, dn, "name");
    for (size_t j = 0; rc == TM_OK && j < i; j++)
      if (strcasecmp(cfg->datasets[j].name, d->name) == 0)
        rc = tm_cfg__fail(c, name_at,
                          "duplicate dataset name '%s' (first at line %d as '%s'; names match "
                          "case-insensitively, in SQL and the API)",
                          d->name, cfg->datasets[j].line, cfg->datasets[j].name);
    if (rc == TM_OK && d->has_acceleration && d->acceleration.snapshots != TM_SNAPSHOTS_DISABLED &&
        (!cfg->snapshots.location || !cfg->snapshots.enabled))
      rc = tm_cfg__fail(c, is_ref ? dn : tm_cfg__lookup(c, dn, "acceleration"),
                cfg->snapshots.location
                    ? "acceleration.snapshots needs the top-level snapshots.enabled: true (with "
                      "snapshots disabled it would do nothing)"
                    : "acceleration.snapshots needs a top-level snapshots.location");
    tm_cfg__path_pop(c, old_i);
    if (rc < 0) {
      tm_cfg__path_pop(c, old);
      return rc;
    }
  }
  tm_cfg__path_pop(c, old);
  TM_TRY(check_depends_on(c));
  return load_root_views(c, root);
}

static char *absolute_dir(const char *dir) {
  if (dir[0] == '/') return tm_strdup(dir);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  if (strcmp(dir, ".") == 0) return tm_strdup(cwd);
  return tm_path_join(cwd, dir);
}

static int syntax_error(const yaml_parser_t *p, const char *name, tm_error *err) {
  return tm_error_set(err, TM_EINVALID, "%s:%lu:%lu: YAML syntax error: %s%s%s", name,
                      (unsigned long)p->problem_mark.line + 1,
                      (unsigned long)p->problem_mark.column + 1,
                      p->problem ? p->problem : "malformed document", p->context ? " " : "",
                      p->context ? p->context : "");
}

/*
 * A first pass over the events, before libyaml builds the document: nesting
 * deeper than TM_CONFIG_MAX_DEPTH is refused at the line where it passes the
 * cap (issue 22). libyaml's loader would otherwise take time quadratic in
 * the depth (100,000 nested '[' in an ignored key took 15 s). Events come
 * one at a time, so a file that nests too deep is refused after reading
 * little more than the part up to the cap.
 */
static int check_depth(const char *text, size_t len, const char *name, tm_error *err) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return tm_error_nomem(err);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int depth = 0, rc = TM_OK;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      rc = syntax_error(&p, name, err);
      break;
    }
    yaml_event_type_t t = ev.type;
    unsigned long line = (unsigned long)ev.start_mark.line + 1;
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT) break;
    if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
      if (++depth > TM_CONFIG_MAX_DEPTH) {
        rc = tm_error_set(err, TM_EINVALID,
                          "%s:%lu: lists and maps nest deeper than %d levels (the limit)", name,
                          line, TM_CONFIG_MAX_DEPTH);
        break;
      }
    } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
      depth--;
    }
  }
  yaml_parser_delete(&p);
  return rc;
}

int tm_config_load_text(tm_config *out, const char *text, size_t len,
                        const char *name_for_messages, const char *dir, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->snapshots.params);
  out->path = tm_strdup(name_for_messages);
  out->dir = absolute_dir(dir ? dir : ".");
  if (!out->path || !out->dir) return tm_error_nomem(err);
  out->data_dir = tm_asprintf("%s/.tidemark/data", out->dir);
  out->snapshots.bootstrap_on_failure = tm_strdup("warn");
  if (!out->data_dir || !out->snapshots.bootstrap_on_failure) return tm_error_nomem(err);
  if (len > TM_CONFIG_MAX_BYTES)
    return tm_error_set(err, TM_ETOOLARGE, "%s: config file is larger than %zu bytes",
                        name_for_messages, TM_CONFIG_MAX_BYTES);

  TM_TRY(check_depth(text, len, name_for_messages, err));
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) return tm_error_nomem(err);
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    int rc = syntax_error(&parser, name_for_messages, err);
    yaml_parser_delete(&parser);
    return rc;
  }
  ctx c = {name_for_messages, out->dir, &doc, out, err, "", NULL};
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  int rc;
  if (!root)
    rc = tm_error_set(err, TM_EINVALID, "%s: the config file is empty", name_for_messages);
  else rc = load_root(&c, root);
  /* A second document in the stream is a mistake worth reporting. */
  if (rc == TM_OK) {
    yaml_document_t next;
    if (yaml_parser_load(&parser, &next)) {
      if (yaml_document_get_root_node(&next))
        rc = tm_error_set(err, TM_EINVALID, "%s: expected one YAML document, found several",
                          name_for_messages);
      yaml_document_delete(&next);
    }
  }
  tm_cfg__secrets_free(c.secrets);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return rc;
}

int tm_config_load(tm_config *out, const char *path, tm_error *err) {
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t len = 0;
  int rc = tm_read_file(path, TM_CONFIG_MAX_BYTES, &text, &len, err);
  if (rc < 0) {
    if (rc == TM_ENOTFOUND)
      tm_error_set(err, TM_ENOTFOUND, "%s: config file not found", path);
    tm_kv_init(&out->snapshots.params);
    return rc;
  }
  char *dir = tm_path_dirname(path);
  if (!dir) {
    tm_free(text);
    tm_kv_init(&out->snapshots.params);
    return tm_error_nomem(err);
  }
  rc = tm_config_load_text(out, text, len, path, dir, err);
  tm_free(dir);
  tm_free(text);
  return rc;
}

void tm_config_dispose(tm_config *cfg) {
  tm_free(cfg->path);
  tm_free(cfg->dir);
  tm_free(cfg->data_dir);
  tm_free(cfg->query_temp_dir);
  tm_free(cfg->version);
  tm_free(cfg->kind);
  tm_free(cfg->name);
  for (size_t i = 0; i < cfg->n_datasets; i++) tm_dataset_def_dispose(&cfg->datasets[i]);
  tm_free(cfg->datasets);
  tm_free(cfg->snapshots.location);
  tm_free(cfg->snapshots.bootstrap_on_failure);
  tm_kv_dispose(&cfg->snapshots.params);
  for (size_t i = 0; i < cfg->n_warnings; i++) tm_free(cfg->warnings[i]);
  tm_free(cfg->warnings);
  for (size_t i = 0; i < cfg->n_views; i++) {
    tm_free(cfg->views[i].name);
    tm_free(cfg->views[i].sql);
    tm_free(cfg->views[i].description);
    for (size_t j = 0; j < cfg->views[i].n_depends_on; j++) tm_free(cfg->views[i].depends_on[j]);
    tm_free(cfg->views[i].depends_on);
  }
  tm_free(cfg->views);
  for (size_t i = 0; i < cfg->n_secret_files; i++) tm_free(cfg->secret_files[i]);
  tm_free(cfg->secret_files);
  for (size_t i = 0; i < cfg->n_api_keys; i++) {
    tm_wipe(cfg->api_keys[i], strlen(cfg->api_keys[i]));
    tm_free(cfg->api_keys[i]);
  }
  tm_free(cfg->api_keys);
  memset(cfg, 0, sizeof *cfg);
}

const tm_dataset_def *tm_config_find(const tm_config *cfg, const char *name) {
  for (size_t i = 0; i < cfg->n_datasets; i++)
    if (strcmp(cfg->datasets[i].name, name) == 0) return &cfg->datasets[i];
  return NULL;
}

int tm_config_default_path(char **path_out, tm_error *err) {
  static const char *const names[] = {"tidemark.yaml", "tidemark.yml", "spicepod.yaml",
                                      "spicepod.yml"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (tm_path_exists(names[i])) {
      *path_out = tm_strdup(names[i]);
      return *path_out ? TM_OK : tm_error_nomem(err);
    }
  }
  return tm_error_set(err, TM_ENOTFOUND,
                      "no config file: give -c FILE, or run where tidemark.yaml or spicepod.yaml "
                      "is");
}
