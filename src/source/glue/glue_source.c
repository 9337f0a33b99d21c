/*
 * glue_source.c - a table of the AWS Glue Data Catalog as a source:
 * `from: glue:DATABASE.TABLE` (source layer; Spice's Glue connector; SPEC
 * B1-B14 for Iceberg tables, 4 for file tables).
 *
 * The catalog says where the table is; the rows are read by the backend
 * that reads that kind of table (the "inner" source):
 *   - Parameters.table_type ICEBERG: an Iceberg source on the table's
 *     Parameters.metadata_location. Each describe asks Glue again; a new
 *     metadata location (a commit through the catalog) moves the Iceberg
 *     source to it (tm_source__iceberg_follow), so snapshots are followed
 *     exactly as for an iceberg: dataset, a replaced table (new uuid) is
 *     the refresh's table_replaced fallback (B5), and an unchanged location
 *     reads no metadata at all (B3).
 *   - otherwise a file set on StorageDescriptor.Location, its format from
 *     Parameters.classification, else the InputFormat / SerDe class
 *     (Parquet, CSV with the SerDe's field.delim / separatorChar and
 *     skip.header.line.count, JSON lines).
 *
 * Params: glue_region, glue_key, glue_secret, glue_session_token (Spice's
 * names), glue_endpoint (tidemark's: the catalog's URL, http:// only with
 * allow_http), and for the table's files s3_* (glue_key, glue_secret,
 * glue_session_token and glue_region are the s3_ ones unless those are
 * given), allow_http, client_timeout. Without glue_key and glue_secret the
 * catalog is signed with the AWS default credential chain (awscreds.h), as
 * Spice does, and the table's S3 files use s3_auth: iam_role unless s3_*
 * credentials are given.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "objstore/awscreds.h"
#include "objstore/objstore.h"
#include "source/glue_catalog.h"
#include "source/source_int.h"
#include "util/alloc.h"
#include "util/log.h"

typedef struct glue_source {
  tm_source base;
  char *db, *table;   /* owned */
  tm_source_spec spec;/* the dataset's options, for the inner source */
  tm_source *inner;   /* owned, or NULL before the first describe */
  bool inner_iceberg;
  char *inner_key;    /* owned: what a file-set inner was opened on ("FORMAT LOCATION") */
  tm_aws_chain *chain;/* owned, or NULL: keys when neither glue_key nor AWS_ACCESS_KEY_ID is set */
} glue_source;

/* A param, else the first set environment variable of envs (NULL-ended), else NULL. */
static const char *setting(const tm_kv *params, const char *k, const char *const *envs) {
  const char *v = params ? tm_kv_get(params, k) : NULL;
  for (size_t i = 0; (!v || !*v) && envs && envs[i]; i++) v = getenv(envs[i]);
  return v && *v ? v : NULL;
}

static const char *const k_env_region[] = {"AWS_REGION", "AWS_DEFAULT_REGION", NULL};
static const char *const k_env_key[] = {"AWS_ACCESS_KEY_ID", NULL};
static const char *const k_env_secret[] = {"AWS_SECRET_ACCESS_KEY", NULL};
static const char *const k_env_token[] = {"AWS_SESSION_TOKEN", NULL};

/* The catalog's settings: the params, else the AWS_* variables (as the S3 store does). */
static void glue_options(const tm_kv *params, tm_glue_options *o) {
  *o = (tm_glue_options)TM_GLUE_OPTIONS_INIT;
  o->region = setting(params, "glue_region", k_env_region);
  o->endpoint = setting(params, "glue_endpoint", NULL);
  o->access_key = setting(params, "glue_key", k_env_key);
  o->secret_key = setting(params, "glue_secret", k_env_secret);
  /* The environment's token goes only with the environment's keys. */
  o->session_token = setting(params, "glue_session_token",
                             setting(params, "glue_key", NULL) ? NULL : k_env_token);
  const char *t = setting(params, "client_timeout", NULL);
  int64_t ms;
  if (t && tm_parse_int64(t, strlen(t), &ms) == TM_OK && ms > 0) o->timeout_ms = (long)ms;
}

static bool is_s3(const char *loc) {
  return tm_str_has_prefix(loc, "s3://") || tm_str_has_prefix(loc, "s3a://");
}

/* The inner source's params: the store params, Glue's credentials as S3's unless given. */
static int inner_params(const glue_source *g, const char *location, tm_kv *out, tm_error *err) {
  static const char *const as_s3[][2] = {{"glue_key", "s3_key"},
                                         {"glue_secret", "s3_secret"},
                                         {"glue_session_token", "s3_session_token"},
                                         {"glue_region", "s3_region"}};
  if (!is_s3(location)) return TM_OK;
  const tm_kv *p = &g->spec.params;
  if (!tm_kv_get(p, "glue_key") && !tm_kv_get(p, "s3_key") && !tm_kv_get(p, "s3_auth"))
    TM_TRY(tm_kv_set(out, "s3_auth", "iam_role", err));
  for (size_t i = 0; i < p->len; i++) {
    const char *k = p->items[i].key;
    if (tm_str_has_prefix(k, "s3_") || !strcmp(k, "allow_http") || !strcmp(k, "client_timeout"))
      TM_TRY(tm_kv_set(out, k, p->items[i].value, err));
  }
  for (size_t i = 0; i < sizeof as_s3 / sizeof as_s3[0]; i++) {
    const char *v = tm_kv_get(p, as_s3[i][0]);
    if (v && !tm_kv_get(out, as_s3[i][1])) TM_TRY(tm_kv_set(out, as_s3[i][1], v, err));
  }
  return TM_OK;
}

/* A location as a `from`: "/abs/path" is a local path (file:), URLs stay. */
static char *as_from(const char *prefix, const char *location) {
  if (location[0] == '/') return tm_asprintf("%sfile://%s", prefix, location);
  return tm_asprintf("%s%s", prefix, location);
}

static int open_inner(glue_source *g, const char *from, const char *location, tm_kv *extra,
                      tm_source **out, tm_error *err) {
  tm_kv params;
  tm_kv_init(&params);
  int rc = inner_params(g, location, &params, err);
  for (size_t i = 0; rc == TM_OK && extra && i < extra->len; i++)
    rc = tm_kv_set(&params, extra->items[i].key, extra->items[i].value, err);
  tm_source_options o;
  tm_source_spec_options(&g->spec, &o);
  o.from = from;
  o.params = &params;
  if (rc == TM_OK) {
    rc = strncmp(from, "iceberg:", 8) == 0 ? tm_source__open_iceberg(out, &o, err)
                                            : tm_source__open_fileset(out, &o, err);
  }
  tm_kv_dispose(&params);
  return rc;
}

static void drop_inner(glue_source *g) {
  tm_source_free(g->inner);
  g->inner = NULL;
  tm_free(g->inner_key);
  g->inner_key = NULL;
}

/* The Iceberg table at t's metadata location. */
static int use_iceberg(glue_source *g, const tm_glue_table *t, tm_error *err) {
  if (!t->metadata_location || !*t->metadata_location)
    return tm_error_set(err, TM_EINVALID, "dataset %s: Glue table %s.%s is an Iceberg table "
                        "without Parameters.metadata_location", g->base.name, g->db, g->table);
  if (g->inner && !g->inner_iceberg) {
    tm_log(TM_LOG_WARN, g->base.name, "Glue table %s.%s is now an Iceberg table", g->db, g->table);
    drop_inner(g);
  }
  if (!g->inner) {
    char *from = as_from("iceberg:", t->metadata_location);
    if (!from) return tm_error_nomem(err);
    int rc = open_inner(g, from, t->metadata_location, NULL, &g->inner, err);
    tm_free(from);
    TM_TRY(rc);
    g->inner_iceberg = true;
  }
  const char *loc = t->metadata_location;
  char *abs = loc[0] == '/' ? tm_asprintf("file://%s", loc) : NULL;
  if (loc[0] == '/' && !abs) return tm_error_nomem(err);
  int rc = tm_source__iceberg_follow(g->inner, abs ? abs : loc, err);
  tm_free(abs);
  return rc;
}

/* The file format of a non-Iceberg table, from its classification or classes. */
static const char *format_of(const tm_glue_table *t) {
  const char *c = t->classification;
  if (c) {
    if (!strcasecmp(c, "parquet")) return "parquet";
    if (!strcasecmp(c, "csv")) return "csv";
    if (!strcasecmp(c, "json")) return "json";
    return NULL;
  }
  const char *in = t->input_format ? t->input_format : "";
  const char *serde = t->serde ? t->serde : "";
  if (strstr(in, "Parquet") || strstr(serde, "Parquet")) return "parquet";
  if (strstr(serde, "JsonSerDe") || strstr(serde, "json")) return "json";
  if (strstr(serde, "OpenCSVSerde") || strstr(serde, "LazySimpleSerDe")) return "csv";
  return NULL;
}

/* The files at t's location, read as a file set. */
static int use_files(glue_source *g, const tm_glue_table *t, tm_error *err) {
  const char *fmt = format_of(t);
  if (!fmt)
    return tm_error_set(err, TM_EINVALID, "dataset %s: Glue table %s.%s: format '%s' is not "
                        "read (tidemark reads Iceberg tables and Parquet, CSV and JSON files)",
                        g->base.name, g->db, g->table,
                        t->classification ? t->classification
                        : t->input_format ? t->input_format : "unknown");
  if (!t->location || !*t->location)
    return tm_error_set(err, TM_EINVALID, "dataset %s: Glue table %s.%s has no "
                        "StorageDescriptor.Location", g->base.name, g->db, g->table);
  char *key = tm_asprintf("%s %s", fmt, t->location);
  if (!key) return tm_error_nomem(err);
  if (g->inner && g->inner_key && strcmp(g->inner_key, key) == 0) {
    tm_free(key);
    return TM_OK;
  }
  if (g->inner)
    tm_log(TM_LOG_WARN, g->base.name, "Glue table %s.%s moved to %s (%s)", g->db, g->table,
           t->location, fmt);
  drop_inner(g);
  tm_kv extra;
  tm_kv_init(&extra);
  int rc = tm_kv_set(&extra, "file_format", fmt, err);
  if (rc == TM_OK && !strcmp(fmt, "csv")) {
    const char *d = tm_kv_get(&t->serde_params, "field.delim");
    if (!d) d = tm_kv_get(&t->serde_params, "separatorChar");
    if (d && strlen(d) != 1)
      rc = tm_error_set(err, TM_EINVALID, "dataset %s: Glue table %s.%s: CSV delimiter '%s' is "
                        "not one byte", g->base.name, g->db, g->table, d);
    if (rc == TM_OK && d) rc = tm_kv_set(&extra, "csv_delimiter", d, err);
    const char *skip = tm_kv_get(&t->params, "skip.header.line.count");
    if (!skip) skip = tm_kv_get(&t->serde_params, "skip.header.line.count");
    if (rc == TM_OK && skip && strcmp(skip, "0") && strcmp(skip, "1"))
      rc = tm_error_set(err, TM_EINVALID, "dataset %s: Glue table %s.%s skips %s header lines "
                        "(tidemark reads 0 or 1)", g->base.name, g->db, g->table, skip);
    if (rc == TM_OK) rc = tm_kv_set(&extra, "csv_has_header", skip && !strcmp(skip, "1") ? "true" : "false", err);
  }
  char *from = rc == TM_OK ? as_from("", t->location) : NULL;
  if (rc == TM_OK && !from) rc = tm_error_nomem(err);
  if (rc == TM_OK) rc = open_inner(g, from, t->location, &extra, &g->inner, err);
  tm_free(from);
  tm_kv_dispose(&extra);
  if (rc < 0) {
    tm_free(key);
    return rc;
  }
  g->inner_iceberg = false;
  g->inner_key = key;
  return TM_OK;
}

static int glue_describe(tm_source *src, tm_error *err) {
  glue_source *g = (glue_source *)src;
  tm_glue_options o;
  glue_options(&g->spec.params, &o);
  tm_aws_creds *creds = NULL; /* from the chain; wiped and freed once the call is done */
  int rc = TM_OK;
  if (!o.access_key) {
    if (!g->chain) rc = tm_aws_chain_new(&g->chain, err);
    if (rc == TM_OK && !(creds = tm_malloc(sizeof *creds))) rc = tm_error_nomem(err);
    if (rc == TM_OK) rc = tm_aws_chain_get(g->chain, creds, err);
    if (rc == TM_OK) {
      o.access_key = creds->access_key;
      o.secret_key = creds->secret_key;
      o.session_token = creds->session_token[0] ? creds->session_token : NULL;
    }
  }
  tm_glue_table t;
  if (rc == TM_OK) rc = tm_glue_get_table(&o, g->db, g->table, &t, err);
  if (creds) {
    memset(creds, 0, sizeof *creds);
    tm_free(creds);
  }
  if (rc < 0) {
    tm_error_prefix(err, "dataset %s", src->name);
    /* A table the catalog does not have is unreachable (as a missing folder is), not an
     * empty one: TM_ENOTFOUND from describe would read as "no data yet". */
    if (rc == TM_ENOTFOUND && err) err->code = TM_EUNAVAILABLE;
    return rc == TM_ENOTFOUND ? TM_EUNAVAILABLE : rc;
  }
  rc = tm_glue_table_is_iceberg(&t) ? use_iceberg(g, &t, err) : use_files(g, &t, err);
  tm_glue_table_dispose(&t);
  if (rc == TM_OK) rc = tm_source_describe(g->inner, err);
  if (rc < 0) return rc;
  tm_schema copy;
  tm_schema_init(&copy);
  rc = tm_schema_copy(&copy, &g->inner->schema, err);
  if (rc < 0) {
    tm_schema_dispose(&copy);
    return rc;
  }
  tm_schema_dispose(&src->schema);
  src->schema = copy;
  src->follows_snapshots = g->inner->follows_snapshots;
  src->has_file_times = g->inner->has_file_times;
  return TM_OK;
}

static int need_inner(tm_source *src, tm_error *err) {
  glue_source *g = (glue_source *)src;
  return g->inner ? TM_OK : glue_describe(src, err);
}

static int glue_table_info(tm_source *src, tm_source_table *out, tm_error *err) {
  TM_TRY(need_inner(src, err));
  return tm_source_table_info(((glue_source *)src)->inner, out, err);
}

static int glue_scan(tm_source *src, const tm_scan_request *req, tm_scan **out, tm_error *err) {
  TM_TRY(need_inner(src, err));
  return tm_source_scan(((glue_source *)src)->inner, req, out, err);
}

static void glue_free(tm_source *src) {
  glue_source *g = (glue_source *)src;
  drop_inner(g);
  tm_aws_chain_free(g->chain);
  tm_free(g->db);
  tm_free(g->table);
  tm_source_spec_dispose(&g->spec);
  tm_source__dispose(src);
  tm_free(g);
}

static const tm_source_vtable k_glue_vt = {TM_SOURCE_VTABLE_VERSION, glue_describe,
                                           glue_table_info, glue_scan, glue_free};

int tm_source__glue_check_params(const tm_kv *params, tm_error *err) {
  static const char *const known[] = {"glue_region", "glue_key", "glue_secret",
                                      "glue_session_token", "glue_endpoint", "allow_http",
                                      "client_timeout", NULL};
  for (size_t i = 0; params && i < params->len; i++) {
    const char *k = params->items[i].key;
    bool ok = tm_str_has_prefix(k, "s3_");
    for (size_t j = 0; known[j] && !ok; j++) ok = strcmp(k, known[j]) == 0;
    if (!ok)
      return tm_error_set(err, TM_EINVALID, "unknown param '%s' of the Glue connector (allowed: "
                          "glue_region, glue_key, glue_secret, glue_session_token, glue_endpoint, "
                          "s3_*, allow_http, client_timeout)", k);
  }
  tm_glue_options o;
  glue_options(params, &o);
  if (!o.region)
    return tm_error_set(err, TM_EINVALID, "the Glue connector needs param glue_region (or "
                        "AWS_REGION)");
  if (!o.access_key != !o.secret_key)
    return tm_error_set(err, TM_EINVALID, "params glue_key and glue_secret go together (or "
                        "neither: the AWS credential chain)");
  const char *ep = o.endpoint;
  if (ep && !tm_str_has_prefix(ep, "https://")) {
    const char *allow = setting(params, "allow_http", NULL);
    if (!tm_str_has_prefix(ep, "http://"))
      return tm_error_set(err, TM_EINVALID, "param glue_endpoint '%s' must start with https:// "
                          "(or http:// with allow_http)", ep);
    if (!allow || strcmp(allow, "true") != 0)
      return tm_error_set(err, TM_EINVALID, "param glue_endpoint '%s' is plain http; set "
                          "allow_http: true to allow it", ep);
  }
  const char *t = setting(params, "client_timeout", NULL);
  int64_t ms;
  if (t && (tm_parse_int64(t, strlen(t), &ms) != TM_OK || ms <= 0))
    return tm_error_set(err, TM_EINVALID, "param client_timeout '%s': expected milliseconds > 0", t);
  /* The S3 params of the table's files, as their store will check them. */
  tm_kv s3;
  tm_kv_init(&s3);
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && params && i < params->len; i++) {
    const char *k = params->items[i].key;
    if (tm_str_has_prefix(k, "s3_") || !strcmp(k, "allow_http"))
      rc = tm_kv_set(&s3, k, params->items[i].value, err);
  }
  if (rc == TM_OK && s3.len) rc = tm_objstore_check_params("s3://tidemark-check/", &s3, err);
  tm_kv_dispose(&s3);
  return rc;
}

int tm_source__open_glue(tm_source **out, const tm_source_options *opts, tm_error *err) {
  TM_TRY(tm_source__glue_check_params(opts->params, err));
  glue_source *g = tm_calloc(1, sizeof *g);
  if (!g) return tm_error_nomem(err);
  int rc = tm_source__init(&g->base, &k_glue_vt, opts, err);
  if (rc < 0) {
    tm_free(g);
    return rc;
  }
  rc = tm_source_spec_init(&g->spec, opts, err);
  if (rc == TM_OK) rc = tm_glue_parse_name(opts->from, &g->db, &g->table, err);
  if (rc < 0) {
    glue_free(&g->base);
    return tm_error_prefix(err, "dataset %s", opts->name);
  }
  *out = &g->base;
  return TM_OK;
}
