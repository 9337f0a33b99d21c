/*
 * iceberg_source.c - an Apache Iceberg table as a source (source layer;
 * SPEC B1-B14, C6).
 *
 * `from` names the table:
 *   iceberg:file://PATH, iceberg:file:PATH   a file-system table folder, or its
 *                                            metadata file (*.metadata.json)
 *   iceberg:s3://BUCKET/PATH                 the same on S3
 *   iceberg:http[s]://HOST/v1/[PREFIX/]namespaces/NS/tables/T   a REST catalog
 * Params (Spice's names, tm_source__iceberg_check_params): metadata_path
 * (an explicit metadata file), iceberg_warehouse (REST) and the REST
 * catalog's authentication, one of iceberg_token, iceberg_oauth2_credential
 * (+ iceberg_oauth2_scope, iceberg_oauth2_server_url) or
 * iceberg_sigv4_enabled (+ iceberg_signing_region, iceberg_signing_name;
 * keys: iceberg_s3_access_key_id, iceberg_s3_secret_access_key,
 * iceberg_s3_session_token, else the AWS chain; on by default for a
 * glue.REGION.amazonaws.com catalog, as Spice), see iceberg_rest.h;
 * iceberg_s3_* (S3 params for the table's files: Spice's access_key_id,
 * secret_access_key, session_token, region, endpoint, path_style_access;
 * any other iceberg_s3_X is read as the s3_X param), s3_* for an s3://
 * table, and tidemark's location_from / location_to (remap the paths the
 * writer recorded: the prefix as written, and where it really is; default:
 * the table's location field -> the table folder).
 *
 * A REST table's files on S3 use what loadTable's answer gives for them
 * (iceberg_rest_s3_settings: s3.endpoint, s3.region, s3.path-style-access
 * unless the params set them; vended keys unless the params give keys or
 * s3_auth, as iceberg-rust lets local properties win). Vended keys reach the
 * store through a provider (objstore.h) that loads the table again when they
 * are about to expire (s3.session-token-expires-at-ms) or S3 refuses them.
 *
 * describe() reads the current metadata (one metadata file, SPEC B3); the
 * snapshot list comes from it without reading any manifest. Scans plan with
 * the format layer: the current table (or as of a snapshot) with delete
 * files, or what each listed snapshot added (B4); data files are read as
 * batches in the table's current schema, columns matched by field id (B14).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "io/io.h"
#include "objstore/objstore.h"
#include "source/iceberg/changes_scan.h"
#include "source/iceberg_local.h"
#include "source/iceberg_rest.h"
#include "source/source_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

#define MAX_STORES 8

typedef enum ice_kind { ICE_FILE = 0, ICE_S3, ICE_REST } ice_kind;

typedef struct ice_source ice_source;

/* The vended S3 keys of one store, renewed by loading the table again (thread-safe). */
typedef struct vend_slot {
  ice_source *s;        /* view: the source (its REST settings never change after open) */
  char *root;           /* owned: "s3://bucket/" */
  pthread_mutex_t mu;   /* guards the fields below */
  bool have;            /* creds hold keys */
  tm_aws_creds creds;   /* the current keys; expires_ms 0: no expiry given */
  int64_t loaded_ms;    /* when creds were loaded */
  char source[160];     /* where they came from, for messages */
} vend_slot;

/* A store for the files under one URL root ("s3://bucket/"), opened on first use. */
typedef struct store_slot {
  char *root;         /* owned: "s3://bucket/" */
  tm_objstore *store; /* owned */
  vend_slot *vend;    /* owned, or NULL: the store's keys come from params */
} store_slot;

struct ice_source {
  tm_source base;
  ice_kind kind;
  tm_unsupported_action unsupported_action; /* nested columns (schema_of) */
  atomic_bool own_warned;
  atomic_bool *warned;     /* `warn` logs once: the options' flag, or own_warned */
  char *root;              /* owned: table folder (local path) or s3://bucket/path; NULL for REST */
  char *metadata_location; /* owned: explicit metadata file, or NULL */
  char *location_from;     /* owned or NULL */
  char *location_to;       /* owned or NULL */
  char *base_dir;          /* owned or NULL: relative local paths */
  tm_kv s3_params;         /* params for the stores of s3:// and abfs:// files */
  tm_kv rest_params;       /* the dataset params (token, warehouse) */
  char *rest_url;          /* owned */
  store_slot stores[MAX_STORES];
  size_t n_stores;
  tm_iceberg_io io;        /* ours: local paths go to `local`, URLs to stores */
  tm_iceberg_io local;     /* the local file system (iceberg_local.h) */
  tm_iceberg_table *table; /* owned; the metadata describe() read */
  tm_iceberg_rest_auth *auth; /* owned (REST): how catalog requests authenticate */
  bool user_s3_keys;       /* the params give S3 keys or s3_auth: vended keys are not used */
  pthread_mutex_t rest_mu; /* guards rest_last */
  tm_iceberg_rest_table rest_last; /* the last loadTable answer (config, storage credentials) */
  bool has_rest_last;
};

/* ---- file io over local files and object stores ------------------------------ */

static bool is_url(const char *p) { return strstr(p, "://") != NULL; }


/* ---- REST catalogs: loading, and the keys they vend ------------------------------ */

/* Loads the table from the catalog into *out (initialised here; tm_iceberg_rest_table_dispose). */
static int rest_load(ice_source *s, tm_iceberg_rest_table *out, tm_error *err) {
  char *base = NULL, *prefix = NULL, *ns = NULL, *table = NULL;
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->config);
  int rc = tm_iceberg_rest_parse_url(s->rest_url, &base, &prefix, &ns, &table, err);
  if (rc == TM_OK) {
    tm_iceberg_rest_options ro = TM_ICEBERG_REST_OPTIONS_INIT;
    ro.base_url = base;
    ro.warehouse = tm_kv_get(&s->rest_params, "iceberg_warehouse");
    ro.auth = s->auth;
    ro.vended_credentials = !s->user_s3_keys;
    rc = tm_iceberg_rest_load_table(&ro, prefix, ns, table, out, err);
  }
  tm_free(base);
  tm_free(prefix);
  tm_free(ns);
  tm_free(table);
  return rc;
}

/* When keys expiring at expires_ms (loaded at loaded_ms) should be renewed: a fifth of their
 * lifetime early, at most a minute. */
static int64_t renew_at(int64_t loaded_ms, int64_t expires_ms) {
  int64_t life = expires_ms - loaded_ms, margin = life / 5 < 60000 ? life / 5 : 60000;
  return life > 0 ? expires_ms - margin : expires_ms;
}

/*
 * Loads the table again for v's keys. refused: the keys S3 just refused (the
 * new ones must differ), or NULL. Called with v->mu held.
 */
static int vend_reload(vend_slot *v, const tm_aws_creds *refused, tm_error *err) {
  ice_source *s = v->s;
  tm_iceberg_rest_table rt;
  tm_iceberg_rest_s3 *st = tm_calloc(1, sizeof *st);
  if (!st) return tm_error_nomem(err);
  int rc = rest_load(s, &rt, err);
  if (rc == TM_OK) rc = tm_iceberg_rest_s3_settings(&rt, v->root, st, err);
  int64_t now = tm_now_ms();
  const tm_aws_creds *c = &st->creds;
  if (rc == TM_OK && !c->access_key[0]) {
    rc = tm_error_set(err, TM_EIO, "%s: the catalog vended no S3 credentials for %s (the files "
                      "need keys: set iceberg_s3_access_key_id and iceberg_s3_secret_access_key, "
                      "or s3_auth)", s->rest_url, v->root);
  } else if (rc == TM_OK && c->expires_ms && c->expires_ms <= now) {
    rc = tm_error_set(err, TM_EIO, "%s: the catalog vended S3 credentials for %s that expired "
                      "%lld ms ago (%s)", s->rest_url, v->root,
                      (long long)(now - c->expires_ms), st->source);
  } else if (rc == TM_OK && refused && !strcmp(refused->access_key, c->access_key) &&
             !strcmp(refused->secret_key, c->secret_key) &&
             !strcmp(refused->session_token, c->session_token)) {
    rc = tm_error_set(err, TM_EIO, "%s: S3 refused the credentials the catalog vends for %s, and "
                      "the catalog gives the same ones again", s->rest_url, v->root);
  }
  if (rc == TM_OK) {
    v->creds = *c;
    v->have = true;
    v->loaded_ms = now;
    snprintf(v->source, sizeof v->source, "%s", st->source);
    tm_log(TM_LOG_DEBUG, s->base.name, "S3 credentials for %s vended by the catalog (%s)%s",
           v->root, st->source, c->expires_ms ? ", with an expiry" : "");
  }
  memset(st, 0, sizeof *st);
  tm_free(st);
  tm_iceberg_rest_table_dispose(&rt);
  return rc;
}

/* The store's key provider (tm_objstore_creds_fn): v's keys, renewed when needed. */
static int vend_creds(void *payload, const char *denied_key, tm_aws_creds *out, tm_error *err) {
  vend_slot *v = payload;
  pthread_mutex_lock(&v->mu);
  int64_t now = tm_now_ms();
  bool refused = denied_key && v->have && strcmp(denied_key, v->creds.access_key) == 0;
  bool stale = v->have && v->creds.expires_ms && now >= renew_at(v->loaded_ms, v->creds.expires_ms);
  int rc = TM_OK;
  if (!v->have || refused || stale) {
    tm_log(TM_LOG_INFO, v->s->base.name, "loading the table again for the S3 credentials of %s "
           "(%s)", v->root, !v->have ? "none held" : refused ? "S3 refused them" : "they expire soon");
    tm_aws_creds *old = refused ? tm_malloc(sizeof *old) : NULL;
    if (refused && !old) rc = tm_error_nomem(err);
    if (old) *old = v->creds;
    if (rc == TM_OK) rc = vend_reload(v, old, err);
    if (old) {
      memset(old, 0, sizeof *old);
      tm_free(old);
    }
    if (rc < 0 && stale && !refused && now < v->creds.expires_ms) {
      tm_log(TM_LOG_WARN, v->s->base.name, "renewing the S3 credentials of %s: %s; the current "
             "ones are still valid", v->root, err ? err->message : "failed");
      rc = TM_OK;
    }
  }
  if (rc == TM_OK) *out = v->creds;
  pthread_mutex_unlock(&v->mu);
  return rc;
}

static void vend_free(vend_slot *v) {
  if (!v) return;
  pthread_mutex_destroy(&v->mu);
  tm_free(v->root);
  memset(&v->creds, 0, sizeof v->creds);
  tm_free(v);
}

/*
 * Keeps a loadTable answer for the stores opened later, and hands the keys
 * it vends to the stores already open (describe loads the table at every
 * refresh, so their keys are renewed then too). TM_ECORRUPT when the answer's
 * S3 settings are malformed.
 */
static int rest_keep(ice_source *s, tm_iceberg_rest_table *rt, tm_error *err) {
  tm_iceberg_rest_s3 *st = tm_calloc(1, sizeof *st);
  if (!st) return tm_error_nomem(err);
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && i < s->n_stores; i++) {
    vend_slot *v = s->stores[i].vend;
    if (!v) continue;
    rc = tm_iceberg_rest_s3_settings(rt, v->root, st, err);
    if (rc < 0) break;
    pthread_mutex_lock(&v->mu);
    v->have = st->creds.access_key[0] != '\0';
    if (v->have) {
      v->creds = st->creds;
      v->loaded_ms = tm_now_ms();
      snprintf(v->source, sizeof v->source, "%s", st->source);
    }
    pthread_mutex_unlock(&v->mu);
  }
  memset(st, 0, sizeof *st);
  tm_free(st);
  if (rc < 0) return rc;
  pthread_mutex_lock(&s->rest_mu);
  tm_iceberg_rest_table_dispose(&s->rest_last);
  s->rest_last = *rt;
  s->has_rest_last = true;
  memset(rt, 0, sizeof *rt);
  tm_kv_init(&rt->config);
  pthread_mutex_unlock(&s->rest_mu);
  return TM_OK;
}

/*
 * The params of the store for root (an s3:// URL of a REST table's files):
 * the dataset's, plus what the catalog's answer says unless the params say
 * it. *vend_out: a provider slot when the catalog vends keys and the params
 * give none (the caller owns it), else NULL. *from_catalog: the endpoint came
 * from the catalog.
 */
static int rest_store_params(ice_source *s, const char *root, tm_kv *params, vend_slot **vend_out,
                             bool *from_catalog, tm_error *err) {
  *vend_out = NULL;
  *from_catalog = false;
  tm_iceberg_rest_s3 *st = tm_calloc(1, sizeof *st);
  if (!st) return tm_error_nomem(err);
  int rc = TM_OK;
  pthread_mutex_lock(&s->rest_mu);
  if (s->has_rest_last) rc = tm_iceberg_rest_s3_settings(&s->rest_last, root, st, err);
  pthread_mutex_unlock(&s->rest_mu);
  if (rc == TM_OK && st->endpoint[0] && !tm_kv_get(params, "s3_endpoint")) {
    rc = tm_kv_set(params, "s3_endpoint", st->endpoint, err);
    *from_catalog = true;
  }
  if (rc == TM_OK && st->region[0] && !tm_kv_get(params, "s3_region"))
    rc = tm_kv_set(params, "s3_region", st->region, err);
  if (rc == TM_OK && st->path_style >= 0 && !tm_kv_get(params, "s3_url_style"))
    rc = tm_kv_set(params, "s3_url_style", st->path_style ? "path" : "virtual", err);
  if (rc == TM_OK && st->creds.access_key[0] && !s->user_s3_keys) {
    vend_slot *v = tm_calloc(1, sizeof *v);
    if (!v || !(v->root = tm_strdup(root))) {
      tm_free(v);
      rc = tm_error_nomem(err);
    } else {
      pthread_mutex_init(&v->mu, NULL);
      v->s = s;
      v->have = true;
      v->creds = st->creds;
      v->loaded_ms = tm_now_ms();
      snprintf(v->source, sizeof v->source, "%s", st->source);
      tm_log(TM_LOG_DEBUG, s->base.name, "S3 credentials for %s vended by the catalog (%s)%s",
             root, st->source, st->creds.expires_ms ? ", with an expiry" : "");
      *vend_out = v;
    }
  }
  memset(st, 0, sizeof *st);
  tm_free(st);
  return rc;
}

/* The store for url's bucket and the key inside it. */
static int store_for(ice_source *s, const char *url, tm_objstore **store_out, const char **key_out,
                     store_slot **slot_out, tm_error *err) {
  const char *scheme_end = strstr(url, "://");
  if (!scheme_end) return tm_error_set(err, TM_EINVALID, "not a URL: %s", url);
  const char *bucket = scheme_end + 3;
  const char *slash = strchr(bucket, '/');
  size_t root_len = slash ? (size_t)(slash - url) + 1 : strlen(url);
  for (size_t i = 0; i < s->n_stores; i++) {
    if (strlen(s->stores[i].root) == root_len && !strncmp(s->stores[i].root, url, root_len)) {
      *store_out = s->stores[i].store;
      *key_out = url + root_len;
      if (slot_out) *slot_out = &s->stores[i];
      return TM_OK;
    }
  }
  if (s->n_stores == MAX_STORES)
    return tm_error_set(err, TM_ETOOLARGE, "%s: files in too many buckets", s->base.name);
  char *root = tm_strndup(url, root_len);
  if (!root) return tm_error_nomem(err);
  char *prefix = NULL;
  tm_objstore *st = NULL;
  vend_slot *vend = NULL;
  bool from_catalog = false;
  tm_kv params;
  tm_kv_init(&params);
  int rc = tm_kv_copy(&params, &s->s3_params, err);
  if (rc == TM_OK && s->kind == ICE_REST &&
      (tm_str_has_prefix(root, "s3://") || tm_str_has_prefix(root, "s3a://")))
    rc = rest_store_params(s, root, &params, &vend, &from_catalog, err);
  tm_objstore_creds creds = {vend_creds, vend};
  if (rc == TM_OK)
    rc = tm_objstore_open_url_creds(&st, &prefix, root, &params, vend ? &creds : NULL, err);
  if (rc == TM_EINVALID && from_catalog)
    tm_error_prefix(err, "%s: the S3 endpoint the catalog gives (s3.endpoint)", s->base.name);
  tm_kv_dispose(&params);
  tm_free(prefix);
  if (rc < 0) {
    vend_free(vend);
    tm_free(root);
    return rc;
  }
  store_slot *slot = &s->stores[s->n_stores++];
  slot->root = root;
  slot->store = st;
  slot->vend = vend;
  *store_out = st;
  *key_out = url + root_len;
  if (slot_out) *slot_out = slot;
  return TM_OK;
}

static int io_open(void *payload, const char *path, tm_input **out, tm_error *err) {
  ice_source *s = payload;
  if (is_url(path) && !tm_str_has_prefix(path, "file:")) {
    tm_objstore *st;
    const char *key;
    store_slot *slot = NULL;
    TM_TRY(store_for(s, path, &st, &key, &slot, err));
    int rc = tm_objstore_open_input(st, key, TM_OBJ_SIZE_UNKNOWN, out, err);
    if (rc == TM_EIO && s->kind == ICE_REST && !s->user_s3_keys && !slot->vend && err) {
      size_t n = strlen(err->message);
      snprintf(err->message + n, sizeof err->message - n, " (the catalog vended no credentials "
               "for these files)");
    }
    return rc;
  }
  return s->local.open(s->local.payload, path, out, err);
}

typedef struct list_payload {
  const char *prefix;
  tm_iceberg_list_fn fn;
  void *ctx;
  int stop;
} list_payload;

static int on_listed(const tm_obj_info *info, void *payload) {
  list_payload *lp = payload;
  const char *name = info->key + strlen(lp->prefix);
  if (strchr(name, '/')) return TM_OK; /* deeper */
  int r = lp->fn(lp->ctx, name);
  if (r) {
    lp->stop = r;
    return TM_ITEROVER;
  }
  return TM_OK;
}

static int io_list(void *payload, const char *dir, tm_iceberg_list_fn fn, void *ctx,
                   tm_error *err) {
  ice_source *s = payload;
  if (is_url(dir) && !tm_str_has_prefix(dir, "file:")) {
    tm_objstore *st;
    const char *key;
    TM_TRY(store_for(s, dir, &st, &key, NULL, err));
    char *prefix = tm_asprintf("%s%s", key, key[0] && key[strlen(key) - 1] != '/' ? "/" : "");
    if (!prefix) return tm_error_nomem(err);
    list_payload lp = {prefix, fn, ctx, 0};
    int rc = tm_objstore_list(st, prefix, on_listed, &lp, err);
    tm_free(prefix);
    return rc;
  }
  return s->local.list(s->local.payload, dir, fn, ctx, err);
}

/* ---- describe ------------------------------------------------------------------- */

/*
 * Reads the table's current metadata into *out, or sets *out to NULL when it
 * is the metadata s->table was made from (the table is unchanged: SPEC B3,
 * and no JSON is parsed).
 */
static int load_table(ice_source *s, tm_iceberg_table **out, tm_error *err) {
  *out = NULL;
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.location_from = s->location_from;
  o.location_to = s->location_to;
  if (s->kind != ICE_REST) {
    o.table_root = s->root;
    o.metadata_location = s->metadata_location;
    int rc = tm_iceberg_table_reopen(out, s->table, &s->io, &o, err);
    if (rc == TM_ENOTFOUND || rc == TM_EIO)
      tm_error_prefix(err, "%s: the Iceberg table is unavailable", s->base.name);
    return rc == TM_ENOTFOUND || rc == TM_EIO ? TM_EUNAVAILABLE : rc;
  }
  tm_iceberg_rest_table rt;
  int rc = rest_load(s, &rt, err);
  if (rc == TM_OK && !tm_iceberg_table_unchanged(s->table, rt.metadata_json, rt.metadata_len,
                                                  rt.metadata_location))
    rc = tm_iceberg_table_from_json(out, &s->io, rt.metadata_json, rt.metadata_len,
                                    rt.metadata_location, &o, err);
  if (rc == TM_OK) rc = rest_keep(s, &rt, err);
  if (rc < 0 && *out) {
    tm_iceberg_table_free(*out);
    *out = NULL;
  }
  tm_iceberg_rest_table_dispose(&rt);
  return rc;
}

/*
 * The current schema's top-level fields as columns (with field ids). Nested
 * fields (struct, list, map) follow unsupported_type_action (source.h):
 * error and string keep them as text columns (string reads them as JSON
 * text; error fails a read that selects one), warn leaves them out with a
 * warning (once per dataset), ignore leaves them out silently.
 */
static int schema_of(ice_source *s, const tm_iceberg_schema *is, tm_schema *out, tm_error *err) {
  const tm_iceberg_type *root = is->root;
  tm_unsupported_action action = s->unsupported_action;
  for (size_t i = 0; i < root->n_fields; i++) {
    const tm_iceberg_field *f = &root->fields[i];
    if (!tm_iceberg_type_is_primitive(f->type) &&
        (action == TM_UNSUPPORTED_WARN || action == TM_UNSUPPORTED_IGNORE)) {
      if (action == TM_UNSUPPORTED_WARN && !atomic_exchange(s->warned, true)) {
        tm_log(TM_LOG_WARN, s->base.name,
               "column '%s' (%s) is nested; it is left out (unsupported_type_action: warn)",
               f->name, tm_iceberg_type_name(f->type->id));
      }
      continue;
    }
    tm_type t;
    int rc = tm_iceberg_type_to_tm(f->type, &t, err); /* nested: utf8 */
    if (rc < 0) return tm_error_prefix(err, "column '%s'", f->name);
    TM_TRY(tm_schema_add(out, f->name, t, !f->required || !tm_iceberg_type_is_primitive(f->type),
                         f->id, err));
  }
  return TM_OK;
}

static int ice_describe(tm_source *src, tm_error *err) {
  ice_source *s = (ice_source *)src;
  tm_iceberg_table *t = NULL;
  TM_TRY(load_table(s, &t, err));
  if (!t) return TM_OK; /* unchanged since the last describe: same schema and snapshots */
  tm_schema schema;
  tm_schema_init(&schema);
  const tm_iceberg_schema *cur = tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t));
  int rc = cur ? schema_of(s, cur, &schema, err)
               : tm_error_set(err, TM_ECORRUPT, "%s: the table has no current schema", src->name);
  if (rc < 0) {
    tm_schema_dispose(&schema);
    tm_iceberg_table_free(t);
    return rc;
  }
  tm_iceberg_table_free(s->table);
  s->table = t;
  tm_schema_dispose(&src->schema);
  src->schema = schema;
  return TM_OK;
}

static int ice_table(tm_source *src, tm_source_table *out, tm_error *err) {
  ice_source *s = (ice_source *)src;
  if (!s->table) TM_TRY(ice_describe(src, err));
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(s->table);
  memset(out, 0, sizeof *out);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  out->has_current = cur != NULL;
  out->current_id = cur ? cur->snapshot_id : 0;
  if (m->table_uuid && !(out->uuid = tm_strdup(m->table_uuid))) return tm_error_nomem(err);
  out->snapshots = tm_calloc(m->n_snapshots ? m->n_snapshots : 1, sizeof *out->snapshots);
  if (!out->snapshots) return tm_error_nomem(err);
  for (size_t i = 0; i < m->n_snapshots; i++) {
    const tm_iceberg_snapshot *sn = &m->snapshots[i];
    tm_source_snapshot *d = &out->snapshots[out->n_snapshots++];
    d->id = sn->snapshot_id;
    d->has_parent = sn->has_parent;
    d->parent_id = sn->parent_id;
    d->timestamp_ms = sn->timestamp_ms;
    d->sequence_number = sn->sequence_number;
    d->added_data_files = -1;
    const char *added = tm_iceberg_snapshot_summary(sn, "added-data-files");
    int64_t v;
    if (added && tm_parse_int64(added, strlen(added), &v) == TM_OK) d->added_data_files = v;
    if (sn->operation && !(d->operation = tm_strdup(sn->operation))) return tm_error_nomem(err);
  }
  return TM_OK;
}

/* ---- scans ------------------------------------------------------------------------- */

typedef struct ice_scan {
  tm_scan base;
  ice_source *s;
  tm_scan_request req;
  tm_iceberg_scan *plan;        /* TM_SCAN_CURRENT: owned */
  tm_iceberg_added **added;     /* TM_SCAN_ADDED_BY: owned, one per snapshot */
  size_t n_added;
  const tm_iceberg_data_file **files; /* owned array of views into `added` */
  const char **names;           /* projection: the dataset's columns (owned array) */
  tm_iceberg_rows *rows;        /* owned */
  tm_changes_scan *chg;         /* TM_SCAN_CHANGES: owned */
  int64_t files_planned, files_skipped;
} ice_scan;

static void update_stats(ice_scan *sc) {
  tm_iceberg_read_stats st;
  tm_iceberg_rows_stats(sc->rows, &st);
  tm_scan_stats *o = &sc->base.stats;
  o->files_total = sc->files_planned + sc->files_skipped;
  o->files_read = st.data_files_read;
  o->files_skipped = sc->files_skipped;
  o->row_groups_read = st.row_groups_read;
  o->row_groups_skipped = st.row_groups_skipped;
  o->rows_read = st.rows_read;
  o->bytes_read = st.bytes_read;
}

/* TM_SCAN_CHANGES: delete batches, then rows with provenance (source.h). */
static int changes_next(ice_scan *sc, tm_batch *out, tm_error *err) {
  int rc = tm_changes_scan_next(sc->chg, out, err);
  const tm_changes_stats *st = tm_changes_scan_stats(sc->chg);
  tm_scan_stats *o = &sc->base.stats;
  o->files_total = st->files_added + st->files_removed + st->files_changed;
  o->files_read = st->files_read;
  o->row_groups_read = st->row_groups_read;
  o->row_groups_skipped = st->row_groups_skipped;
  o->rows_read = st->rows_read;
  o->bytes_read = st->bytes_read;
  if (rc == TM_OK && out->schema.n_cols && strcmp(out->schema.cols[0].name, TM_PROV_SEQ) != 0)
    o->rows_returned += out->n_rows;
  return rc;
}

static int ice_scan_next(tm_scan *base, tm_batch *out, tm_error *err) {
  ice_scan *sc = (ice_scan *)base;
  tm_batch_init(out);
  if (sc->chg) return changes_next(sc, out, err);
  for (;;) {
    tm_batch raw;
    tm_batch_init(&raw);
    int rc = tm_iceberg_rows_next(sc->rows, &raw, err);
    update_stats(sc);
    if (rc != TM_OK) return rc;
    TM_TRY(tm_source__finish_batch(sc->req.predicate, sc->req.columns, sc->req.n_columns, &raw,
                                   out, err));
    if (out->n_rows == 0) {
      tm_batch_release(out);
      continue;
    }
    base->stats.rows_returned += out->n_rows;
    return TM_OK;
  }
}

static void ice_scan_free(tm_scan *base) {
  ice_scan *sc = (ice_scan *)base;
  tm_iceberg_rows_free(sc->rows);
  tm_changes_scan_free(sc->chg);
  tm_iceberg_scan_free(sc->plan);
  for (size_t i = 0; i < sc->n_added; i++) tm_iceberg_added_free(sc->added[i]);
  tm_free(sc->added);
  tm_free(sc->files);
  tm_free(sc->names);
  tm_free(sc);
}

static const tm_scan_vtable k_scan_vt = {ice_scan_next, ice_scan_free};

/* Plans what the snapshots added (B4): their ADDED data files, pruned by the filter. */
static int plan_added(ice_scan *sc, const tm_scan_request *req, tm_error *err) {
  const tm_iceberg_table *t = sc->s->table;
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_schema *schema = tm_iceberg_metadata_current_schema(m);
  sc->added = tm_calloc(req->n_snapshot_ids ? req->n_snapshot_ids : 1, sizeof *sc->added);
  if (!sc->added) return tm_error_nomem(err);
  size_t total = 0;
  for (size_t i = 0; i < req->n_snapshot_ids; i++) {
    TM_TRY(tm_iceberg_plan_added(t, req->snapshot_ids[i], &sc->added[i], err));
    sc->n_added++;
    total += sc->added[i]->n_data_files;
  }
  sc->files = tm_calloc(total ? total : 1, sizeof *sc->files);
  if (!sc->files) return tm_error_nomem(err);
  size_t n = 0;
  for (size_t i = 0; i < sc->n_added; i++) {
    for (size_t k = 0; k < sc->added[i]->n_data_files; k++) {
      const tm_iceberg_data_file *f = sc->added[i]->data_files[k];
      if (req->predicate && !tm_iceberg_file_may_match(m, schema, f, req->predicate)) {
        sc->files_skipped++;
        continue;
      }
      sc->files[n++] = f;
    }
  }
  sc->files_planned = (int64_t)n;
  tm_iceberg_read_options o = TM_ICEBERG_READ_OPTIONS_INIT;
  o.columns = sc->names;
  o.n_columns = sc->s->base.schema.n_cols;
  o.filter = req->predicate;
  o.skip_deletes = true;
  o.batch_rows = req->batch_rows;
  o.nested_as_json = sc->s->unsupported_action == TM_UNSUPPORTED_STRING;
  return tm_iceberg_rows_open_files(&sc->rows, t, schema, sc->files, n, &o, err);
}

/* Plans the table as of a snapshot (current by default), deletes applied on request. */
static int plan_current(ice_scan *sc, const tm_scan_request *req, tm_error *err) {
  const tm_iceberg_table *t = sc->s->table;
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.snapshot_id = req->has_as_of ? req->as_of_snapshot : -1;
  so.filter = req->predicate;
  TM_TRY(tm_iceberg_plan_scan(t, &so, &sc->plan, err));
  sc->files_planned = (int64_t)sc->plan->n_tasks;
  sc->files_skipped = sc->plan->stats.data_files_skipped;
  tm_iceberg_read_options o = TM_ICEBERG_READ_OPTIONS_INIT;
  o.columns = sc->names;
  o.n_columns = sc->s->base.schema.n_cols;
  o.filter = req->predicate;
  o.skip_deletes = !req->apply_deletes;
  o.batch_rows = req->batch_rows;
  o.nested_as_json = sc->s->unsupported_action == TM_UNSUPPORTED_STRING;
  return tm_iceberg_rows_open(&sc->rows, t, sc->plan, &o, err);
}

static int ice_scan_open(tm_source *src, const tm_scan_request *req, tm_scan **out, tm_error *err) {
  ice_source *s = (ice_source *)src;
  if (!s->table) TM_TRY(ice_describe(src, err));
  ice_scan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  sc->base.vt = &k_scan_vt;
  sc->s = s;
  sc->req = *req;
  /* The dataset's columns (nested ones left out at describe under warn and ignore). */
  sc->names = tm_calloc(src->schema.n_cols ? src->schema.n_cols : 1, sizeof *sc->names);
  int rc = sc->names ? TM_OK : tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < src->schema.n_cols; i++) sc->names[i] = src->schema.cols[i].name;
  if (rc == TM_OK && req->mode == TM_SCAN_CHANGES)
    rc = tm_changes_scan_open(&sc->chg, s->table, req->has_changes_from, req->changes_from,
                              req->has_as_of ? req->as_of_snapshot : -1, sc->names, src->schema.n_cols,
                              s->unsupported_action == TM_UNSUPPORTED_STRING, req->batch_rows, err);
  else if (rc == TM_OK)
    rc = req->mode == TM_SCAN_ADDED_BY ? plan_added(sc, req, err) : plan_current(sc, req, err);
  if (rc < 0) {
    ice_scan_free(&sc->base);
    return tm_error_prefix(err, "dataset %s", src->name);
  }
  *out = &sc->base;
  return TM_OK;
}

/* ---- opening ----------------------------------------------------------------------- */

static void ice_free(tm_source *src) {
  ice_source *s = (ice_source *)src;
  tm_iceberg_table_free(s->table);
  for (size_t i = 0; i < s->n_stores; i++) {
    tm_objstore_free(s->stores[i].store);
    vend_free(s->stores[i].vend);
    tm_free(s->stores[i].root);
  }
  tm_iceberg_rest_auth_free(s->auth);
  tm_iceberg_rest_table_dispose(&s->rest_last);
  pthread_mutex_destroy(&s->rest_mu);
  tm_free(s->root);
  tm_free(s->metadata_location);
  tm_free(s->location_from);
  tm_free(s->location_to);
  tm_free(s->base_dir);
  tm_free(s->rest_url);
  tm_kv_dispose(&s->s3_params);
  tm_kv_dispose(&s->rest_params);
  tm_source__dispose(src);
  tm_free(s);
}

static const tm_source_vtable k_ice_vt = {TM_SOURCE_VTABLE_VERSION, ice_describe, ice_table,
                                          ice_scan_open, ice_free};

static bool is_metadata_file(const char *p) {
  return tm_str_has_suffix(p, ".metadata.json") || tm_str_has_suffix(p, ".metadata.json.gz");
}

/*
 * A local path made absolute against base_dir, and canonical when it exists
 * ("a/./b/../c"), because location remapping compares path prefixes.
 */
static char *absolute(const char *p, const char *base_dir) {
  char *joined;
  if (p[0] == '/') joined = tm_strdup(p);
  else if (base_dir) joined = tm_path_join(base_dir, p);
  else {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    joined = tm_path_join(cwd, p);
  }
  if (!joined) return NULL;
  char *real = realpath(joined, NULL);
  if (!real) return joined;
  tm_free(joined);
  char *copy = tm_strdup(real);
  free(real); /* lint-ok: realpath allocates with malloc */
  return copy;
}

/* Spice's Iceberg params that tidemark does not implement: refused by name. */
static const char *const k_ice_unsupported[] = {
    "iceberg_s3_role_arn", "iceberg_s3_role_session_name", "iceberg_s3_iam_role_source",
    "iceberg_s3_connect_timeout", NULL};

/* Spice's names of the S3 params of the table's files, and the s3_ param each is. */
static const char *const k_ice_s3_names[][2] = {
    {"iceberg_s3_access_key_id", "s3_key"},
    {"iceberg_s3_secret_access_key", "s3_secret"},
    {"iceberg_s3_path_style_access", "s3_url_style"}, /* true: path, false: virtual */
};

/* "glue.REGION.amazonaws.com" in a REST table URL: its region (Spice turns SigV4 on there). */
static bool glue_host_region(const char *url, char *region, size_t cap) {
  const char *p = tm_str_has_prefix(url, "iceberg:") ? url + 8 : url;
  p = tm_str_has_prefix(p, "https://") ? p + 8 : tm_str_has_prefix(p, "http://") ? p + 7 : NULL;
  if (!p || !tm_str_has_prefix(p, "glue.")) return false;
  size_t host = strcspn(p, ":/?#");
  const char *suffix = ".amazonaws.com";
  size_t sl = strlen(suffix);
  if (host <= 5 + sl || strncmp(p + host - sl, suffix, sl) != 0) return false;
  size_t n = host - 5 - sl;
  if (n >= cap) return false;
  memcpy(region, p + 5, n);
  region[n] = '\0';
  return true;
}

/*
 * Whether a REST table's requests are signed with SigV4: iceberg_sigv4_enabled,
 * else on for an AWS Glue catalog URL (as Spice). region_out: the default
 * signing region (the Glue URL's, else "").
 */
static bool sigv4_on(const char *from, const tm_kv *params, char *region_out, size_t cap) {
  region_out[0] = '\0';
  bool glue = from && glue_host_region(from, region_out, cap);
  const char *v = params ? tm_kv_get(params, "iceberg_sigv4_enabled") : NULL;
  return v ? strcmp(v, "true") == 0 : glue;
}

/* The REST catalog's authentication params, checked together (one method at a time). */
static int check_auth_params(const char *from, const tm_kv *params, tm_error *err) {
  const char *token = tm_kv_get(params, "iceberg_token");
  const char *cred = tm_kv_get(params, "iceberg_oauth2_credential");
  const char *sv = tm_kv_get(params, "iceberg_sigv4_enabled");
  if (sv && strcmp(sv, "true") != 0 && strcmp(sv, "false") != 0)
    return tm_error_set(err, TM_EINVALID, "param 'iceberg_sigv4_enabled': bad value '%s' "
                        "(allowed: true, false)", sv);
  bool rest = from && (tm_str_has_prefix(from, "iceberg:http://") ||
                       tm_str_has_prefix(from, "iceberg:https://"));
  static const char *const rest_only[] = {"iceberg_token", "iceberg_oauth2_credential",
                                          "iceberg_oauth2_scope", "iceberg_oauth2_server_url",
                                          "iceberg_sigv4_enabled", "iceberg_signing_region",
                                          "iceberg_signing_name", "iceberg_warehouse", NULL};
  for (size_t i = 0; from && !rest && rest_only[i]; i++)
    if (tm_kv_get(params, rest_only[i]))
      return tm_error_set(err, TM_EINVALID, "param '%s' is for REST catalogs "
                          "(iceberg:http(s)://HOST/v1/.../namespaces/NS/tables/T)", rest_only[i]);
  if (token && cred)
    return tm_error_set(err, TM_EINVALID, "params 'iceberg_token' and 'iceberg_oauth2_credential' "
                        "are two ways to authenticate to the catalog: give one");
  if (cred && !*cred)
    return tm_error_set(err, TM_EINVALID, "param 'iceberg_oauth2_credential' is empty");
  if (!cred) {
    const char *o = tm_kv_get(params, "iceberg_oauth2_scope") ? "iceberg_oauth2_scope"
                    : tm_kv_get(params, "iceberg_oauth2_server_url") ? "iceberg_oauth2_server_url"
                                                                      : NULL;
    if (o) return tm_error_set(err, TM_EINVALID, "param '%s' needs iceberg_oauth2_credential", o);
  }
  char region[128];
  bool sigv4 = sigv4_on(from, params, region, sizeof region);
  if (!sigv4) {
    const char *o = tm_kv_get(params, "iceberg_signing_region") ? "iceberg_signing_region"
                    : tm_kv_get(params, "iceberg_signing_name") ? "iceberg_signing_name"
                                                                 : NULL;
    if (o) return tm_error_set(err, TM_EINVALID, "param '%s' needs iceberg_sigv4_enabled: true", o);
  }
  if (sigv4 && (token || cred))
    return tm_error_set(err, TM_EINVALID, "iceberg_sigv4_enabled signs catalog requests with AWS "
                        "keys: it takes no '%s'%s", token ? "iceberg_token" : "iceberg_oauth2_credential",
                        sv ? "" : " (SigV4 is on for an AWS Glue catalog URL; "
                                  "iceberg_sigv4_enabled: false turns it off)");
  return TM_OK;
}

int tm_source__iceberg_check_params(const char *from, const tm_kv *params, tm_error *err) {
  static const char *const known[] = {"iceberg_token", "iceberg_warehouse", "metadata_path",
                                      "location_from", "location_to", "allow_http",
                                      "iceberg_oauth2_credential", "iceberg_oauth2_scope",
                                      "iceberg_oauth2_server_url", "iceberg_sigv4_enabled",
                                      "iceberg_signing_region", "iceberg_signing_name", NULL};
  for (size_t i = 0; params && i < params->len; i++) {
    const char *k = params->items[i].key, *v = params->items[i].value;
    bool ok = false;
    for (size_t j = 0; known[j] && !ok; j++) ok = strcmp(k, known[j]) == 0;
    if (ok) continue;
    for (size_t j = 0; k_ice_unsupported[j]; j++)
      if (strcmp(k, k_ice_unsupported[j]) == 0)
        return tm_error_set(err, TM_EINVALID, "param '%s' is not supported by tidemark's Iceberg "
                            "connector (S3 keys: iceberg_s3_access_key_id, "
                            "iceberg_s3_secret_access_key, iceberg_s3_session_token)", k);
    if (strcmp(k, "iceberg_s3_path_style_access") == 0) {
      if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
        return tm_error_set(err, TM_EINVALID, "param '%s': bad value '%s' (allowed: true, false)", k, v);
      continue;
    }
    /* iceberg_s3_*, iceberg_abfs_*, s3_* and abfs_* go to the object stores: the S3 ones are
     * checked below, the Azure ones when their stores open. */
    if (tm_str_has_prefix(k, "iceberg_s3_") || tm_str_has_prefix(k, "s3_") ||
        tm_str_has_prefix(k, "iceberg_abfs_") || tm_str_has_prefix(k, "abfs_"))
      continue;
    if (strcmp(k, "token") == 0 || strcmp(k, "warehouse") == 0 || strcmp(k, "metadata_location") == 0)
      return tm_error_set(err, TM_EINVALID, "unknown param '%s' of the Iceberg connector: Spice's "
                          "name is '%s'", k, strcmp(k, "token") == 0 ? "iceberg_token"
                          : strcmp(k, "warehouse") == 0 ? "iceberg_warehouse" : "metadata_path");
    return tm_error_set(err, TM_EINVALID, "unknown param '%s' of the Iceberg connector (allowed: "
                        "iceberg_token, iceberg_oauth2_credential, iceberg_oauth2_scope, "
                        "iceberg_oauth2_server_url, iceberg_sigv4_enabled, iceberg_signing_region, "
                        "iceberg_signing_name, iceberg_warehouse, metadata_path, iceberg_s3_*, "
                        "s3_*, iceberg_abfs_*, abfs_*, allow_http, location_from, location_to)", k);
  }
  if (params) TM_TRY(check_auth_params(from, params, err));
  /* The S3 settings of the table's files, checked as their stores will check them. */
  tm_kv s3;
  tm_kv_init(&s3);
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && params && i < params->len; i++) {
    const char *k = params->items[i].key, *v = params->items[i].value;
    if (!tm_str_has_prefix(k, "iceberg_s3_") && !tm_str_has_prefix(k, "s3_") && strcmp(k, "allow_http") != 0)
      continue;
    const char *as = tm_str_has_prefix(k, "iceberg_s3_") ? k + strlen("iceberg_") : k;
    for (size_t j = 0; j < sizeof k_ice_s3_names / sizeof k_ice_s3_names[0]; j++)
      if (strcmp(k, k_ice_s3_names[j][0]) == 0) as = k_ice_s3_names[j][1];
    if (strcmp(as, "s3_url_style") == 0 && tm_str_has_prefix(k, "iceberg_")) v = "path";
    rc = tm_kv_set(&s3, as, v, err);
  }
  if (rc == TM_OK && s3.len) rc = tm_objstore_check_params("s3://tidemark-check/", &s3, err);
  tm_kv_dispose(&s3);
  return rc;
}

/* s->auth from the params (the REST catalog's authentication); also sets user_s3_keys. */
static int open_rest_auth(ice_source *s, const char *from, const tm_kv *params, tm_error *err) {
  static const char *const key_params[] = {"s3_key", "s3_secret", "s3_session_token", "s3_auth"};
  for (size_t i = 0; i < sizeof key_params / sizeof key_params[0]; i++)
    s->user_s3_keys = s->user_s3_keys || tm_kv_get(&s->s3_params, key_params[i]);
  char *base = NULL, *prefix = NULL, *ns = NULL, *table = NULL;
  TM_TRY(tm_iceberg_rest_parse_url(s->rest_url, &base, &prefix, &ns, &table, err));
  char region[128];
  tm_iceberg_rest_auth_options ao = TM_ICEBERG_REST_AUTH_OPTIONS_INIT;
  ao.token = params ? tm_kv_get(params, "iceberg_token") : NULL;
  ao.oauth2_credential = params ? tm_kv_get(params, "iceberg_oauth2_credential") : NULL;
  ao.oauth2_scope = params ? tm_kv_get(params, "iceberg_oauth2_scope") : NULL;
  ao.oauth2_server_url = params ? tm_kv_get(params, "iceberg_oauth2_server_url") : NULL;
  ao.sigv4 = sigv4_on(from, params, region, sizeof region);
  ao.signing_region = params ? tm_kv_get(params, "iceberg_signing_region") : NULL;
  if (!ao.signing_region && region[0]) ao.signing_region = region;
  ao.signing_name = params ? tm_kv_get(params, "iceberg_signing_name") : NULL;
  /* Spice signs with iceberg_s3_access_key_id & co (its rest.access-key-id), else the chain. */
  ao.access_key = params ? tm_kv_get(params, "iceberg_s3_access_key_id") : NULL;
  ao.secret_key = params ? tm_kv_get(params, "iceberg_s3_secret_access_key") : NULL;
  ao.session_token = params ? tm_kv_get(params, "iceberg_s3_session_token") : NULL;
  int rc = tm_iceberg_rest_auth_new(&s->auth, base, &ao, err);
  if (rc < 0) tm_error_prefix(err, "dataset %s", s->base.name);
  tm_free(base);
  tm_free(prefix);
  tm_free(ns);
  tm_free(table);
  return rc;
}

static int copy_param(const tm_kv *params, const char *key, char **out, tm_error *err) {
  const char *v = params ? tm_kv_get(params, key) : NULL;
  if (!v) return TM_OK;
  *out = tm_strdup(v);
  return *out ? TM_OK : tm_error_nomem(err);
}

int tm_source__iceberg_follow(tm_source *src, const char *metadata_location, tm_error *err) {
  ice_source *s = (ice_source *)src;
  if (src->vt != &k_ice_vt || s->kind == ICE_REST)
    return tm_error_set(err, TM_EINVALID, "%s: not a table found by its metadata file", src->name);
  bool local = !is_url(metadata_location) || tm_str_has_prefix(metadata_location, "file:");
  const char *path = tm_str_has_prefix(metadata_location, "file://") ? metadata_location + 7
                     : tm_str_has_prefix(metadata_location, "file:") ? metadata_location + 5
                                                                      : metadata_location;
  if (s->metadata_location && strcmp(s->metadata_location, path) == 0) return TM_OK;
  if (!is_metadata_file(path) || (local && path[0] != '/'))
    return tm_error_set(err, TM_EINVALID, "%s: '%s' is not an absolute path or URL of a "
                        "*.metadata.json file", src->name, metadata_location);
  char *meta = tm_strdup(path);
  char *dir = meta ? tm_path_dirname(meta) : NULL;
  char *root = dir ? tm_path_dirname(dir) : NULL;
  tm_free(dir);
  if (!root) {
    tm_free(meta);
    return tm_error_nomem(err);
  }
  tm_free(s->metadata_location);
  tm_free(s->root);
  s->metadata_location = meta;
  s->root = root;
  s->kind = local ? ICE_FILE : ICE_S3;
  return TM_OK;
}

int tm_source__open_iceberg(tm_source **out, const tm_source_options *opts, tm_error *err) {
  ice_source *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  tm_kv_init(&s->s3_params);
  tm_kv_init(&s->rest_params);
  int rc = tm_source__init(&s->base, &k_ice_vt, opts, err);
  if (rc < 0) {
    tm_free(s);
    return rc;
  }
  s->base.follows_snapshots = true;
  s->unsupported_action = opts->unsupported_action;
  s->warned = opts->warned_unsupported ? opts->warned_unsupported : &s->own_warned;
  s->io.version = TM_ICEBERG_IO_VERSION;
  s->io.payload = s;
  s->io.open = io_open;
  s->io.list = io_list;
  tm_iceberg_io_local(&s->local);
  const tm_kv *params = opts->params;
  const char *spec = opts->from + strlen("iceberg:");
  pthread_mutex_init(&s->rest_mu, NULL);
  tm_kv_init(&s->rest_last.config);
  rc = tm_source__iceberg_check_params(opts->from, params, err);
  if (rc == TM_OK && params) rc = tm_kv_copy(&s->rest_params, params, err);
  if (rc == TM_OK) rc = copy_param(params, "metadata_path", &s->metadata_location, err);
  if (rc == TM_OK) rc = copy_param(params, "location_from", &s->location_from, err);
  if (rc == TM_OK) rc = copy_param(params, "location_to", &s->location_to, err);
  if (rc == TM_OK && params) {
    /* iceberg_s3_X / iceberg_abfs_X are the s3_X / abfs_X params of the table's files' stores
     * (the S3 ones under Spice's names too). */
    for (size_t i = 0; rc == TM_OK && i < params->len; i++) {
      const char *k = params->items[i].key, *v = params->items[i].value;
      if (!tm_str_has_prefix(k, "iceberg_s3_") && !tm_str_has_prefix(k, "iceberg_abfs_")) continue;
      const char *as = NULL;
      for (size_t j = 0; !as && j < sizeof k_ice_s3_names / sizeof k_ice_s3_names[0]; j++)
        if (strcmp(k, k_ice_s3_names[j][0]) == 0) as = k_ice_s3_names[j][1];
      if (as && strcmp(as, "s3_url_style") == 0) v = strcmp(v, "true") == 0 ? "path" : "virtual";
      rc = tm_kv_set(&s->s3_params, as ? as : k + strlen("iceberg_"), v, err);
    }
    for (size_t i = 0; rc == TM_OK && i < params->len; i++)
      if (tm_str_has_prefix(params->items[i].key, "s3_") ||
          tm_str_has_prefix(params->items[i].key, "abfs_") || !strcmp(params->items[i].key, "allow_http"))
        if (!tm_kv_get(&s->s3_params, params->items[i].key))
          rc = tm_kv_set(&s->s3_params, params->items[i].key, params->items[i].value, err);
  }
  if (rc == TM_OK && opts->base_dir && !(s->base_dir = tm_strdup(opts->base_dir))) rc = tm_error_nomem(err);
  if (rc == TM_OK) {
    if (tm_str_has_prefix(spec, "http://") || tm_str_has_prefix(spec, "https://")) {
      s->kind = ICE_REST;
      s->rest_url = tm_strdup(spec);
      if (!s->rest_url) rc = tm_error_nomem(err);
      if (rc == TM_OK) rc = open_rest_auth(s, opts->from, params, err);
    } else if (tm_str_has_prefix(spec, "s3://") || tm_str_has_prefix(spec, "s3a://") ||
               tm_str_has_prefix(spec, "abfs://") || tm_str_has_prefix(spec, "abfss://")) {
      s->kind = ICE_S3;
      s->root = tm_strdup(spec);
      if (!s->root) rc = tm_error_nomem(err);
    } else if (tm_str_has_prefix(spec, "file:")) {
      /* As for file sources, file://PATH is PATH (relative to the config's
       * folder unless it starts with '/'): file://wh/t is wh/t, not host wh. */
      s->kind = ICE_FILE;
      const char *path = tm_str_has_prefix(spec, "file://") ? spec + 7 : spec + 5;
      s->root = absolute(path, s->base_dir);
      if (!s->root) rc = tm_error_nomem(err);
    } else {
      rc = tm_error_set(err, TM_EINVALID, "dataset %s: unknown Iceberg source '%s'", opts->name,
                        opts->from);
    }
  }
  /* A metadata file given as the table: its table root is two folders up. */
  if (rc == TM_OK && s->root && is_metadata_file(s->root)) {
    char *meta = s->root;
    char *dir = tm_path_dirname(meta);
    s->root = dir ? tm_path_dirname(dir) : NULL;
    tm_free(dir);
    if (!s->metadata_location) s->metadata_location = meta;
    else tm_free(meta);
    if (!s->root) rc = tm_error_nomem(err);
  }
  if (rc == TM_OK && s->metadata_location && s->kind == ICE_FILE && !is_url(s->metadata_location) &&
      s->metadata_location[0] != '/') {
    char *abs = absolute(s->metadata_location, s->base_dir);
    tm_free(s->metadata_location);
    s->metadata_location = abs;
    if (!abs) rc = tm_error_nomem(err);
  }
  if (rc < 0) {
    ice_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return TM_OK;
}
