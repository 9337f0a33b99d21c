/*
 * url.c - the object-store front door: a dataset URL plus its params become
 * a store and a key prefix (objstore layer; SPEC §4). See objstore.h for the
 * accepted URLs and params.
 *
 * A file URL's store is rooted at the folder that holds the named path (the
 * path's dirname, kept as written, so "../data/x" works), and the prefix is
 * the last path component: file:/data/events gives the store file:/data and
 * the prefix "events". A trailing '/' (file:/data/events/) roots the store at
 * the folder itself with an empty prefix.
 */
#include <pthread.h>
#include <string.h>

#include "objstore/azure/azure.h"
#include "objstore/file/file.h"
#include "objstore/mem/mem.h"
#include "objstore/objstore_int.h"
#include "objstore/s3/s3.h"
#include "util/alloc.h"

static const char *after_scheme(const char *url, const char *scheme) {
  size_t n = strlen(scheme);
  return strncmp(url, scheme, n) == 0 ? url + n : NULL;
}

bool tm_objstore_url_supported(const char *url) {
  return url && (after_scheme(url, "file:") || after_scheme(url, "s3://") ||
                 after_scheme(url, "s3a://") || after_scheme(url, "abfs://") ||
                 after_scheme(url, "abfss://") || after_scheme(url, "mem://"));
}

static int open_file_url(tm_objstore **store_out, char **prefix_out, const char *url,
                         const char *path, tm_error *err) {
  if (path[0] == '/' && path[1] == '/') path += 2; /* file://PATH */
  if (!*path) return tm_error_set(err, TM_EINVALID, "URL '%s' has no path", url);
  size_t len = strlen(path);
  char *root = NULL, *prefix = NULL;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
    /* A folder: file:/data/events/, file:., file:.. */
    root = tm_strndup(path, *base == '\0' && len > 1 ? len - 1 : len);
    prefix = tm_strdup("");
  } else if (!slash) {
    root = tm_strdup(".");
    prefix = tm_strdup(path);
  } else {
    root = slash == path ? tm_strdup("/") : tm_strndup(path, (size_t)(slash - path));
    prefix = tm_strdup(base);
  }
  int rc = (!root || !prefix) ? tm_error_nomem(err) : TM_OK;
  if (rc == TM_OK) rc = tm_objstore_check_key(prefix, true, err);
  tm_objstore *s = NULL;
  if (rc == TM_OK) rc = tm_objstore_file_new(&s, root, err);
  tm_free(root);
  if (rc < 0) {
    tm_free(prefix);
    return rc;
  }
  *store_out = s;
  *prefix_out = prefix;
  return TM_OK;
}

/* Splits "NAME[/PREFIX]" at the first '/'. */
static int split_bucket(const char *url, const char *rest, char **bucket_out, char **prefix_out,
                        tm_error *err) {
  const char *slash = strchr(rest, '/');
  size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
  if (n == 0) return tm_error_set(err, TM_EINVALID, "URL '%s' has no bucket name", url);
  for (size_t i = 0; i < n; i++) {
    char c = rest[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_';
    if (!ok)
      return tm_error_set(err, TM_EINVALID, "URL '%s': bucket name '%.*s' has a '%c'", url,
                          (int)n, rest, c);
  }
  if (n > 255) return tm_error_set(err, TM_EINVALID, "URL '%s': bucket name is too long", url);
  char *bucket = tm_strndup(rest, n);
  char *prefix = tm_strdup(slash ? slash + 1 : "");
  if (!bucket || !prefix) {
    tm_free(bucket);
    tm_free(prefix);
    return tm_error_nomem(err);
  }
  *bucket_out = bucket;
  *prefix_out = prefix;
  return TM_OK;
}

/* The test hook (tm_objstore_set_open_hook); both change together under g_hook_mu. */
static pthread_mutex_t g_hook_mu = PTHREAD_MUTEX_INITIALIZER;
static tm_objstore_open_hook_fn g_hook;
static void *g_hook_payload;

void tm_objstore_set_open_hook(tm_objstore_open_hook_fn fn, void *payload) {
  pthread_mutex_lock(&g_hook_mu);
  g_hook = fn;
  g_hook_payload = payload;
  pthread_mutex_unlock(&g_hook_mu);
}

/* Passes a freshly opened store through the hook; on failure frees it and the prefix. */
static int run_hook(tm_objstore **store_out, char **prefix_out, const char *url, tm_error *err) {
  pthread_mutex_lock(&g_hook_mu);
  tm_objstore_open_hook_fn fn = g_hook;
  void *payload = g_hook_payload;
  pthread_mutex_unlock(&g_hook_mu);
  if (!fn) return TM_OK;
  int rc = fn(store_out, url, payload, err);
  if (rc < 0) {
    tm_objstore_free(*store_out);
    tm_free(*prefix_out);
    *store_out = NULL;
    *prefix_out = NULL;
  }
  return rc;
}

static int open_url(tm_objstore **store_out, char **prefix_out, const char *url,
                    const tm_kv *params, const tm_objstore_creds *creds, tm_error *err);

int tm_objstore_open_url(tm_objstore **store_out, char **prefix_out, const char *url,
                         const tm_kv *params, tm_error *err) {
  return tm_objstore_open_url_creds(store_out, prefix_out, url, params, NULL, err);
}

int tm_objstore_open_url_creds(tm_objstore **store_out, char **prefix_out, const char *url,
                               const tm_kv *params, const tm_objstore_creds *creds,
                               tm_error *err) {
  tm_objstore *store = NULL;
  char *prefix = NULL;
  TM_TRY(open_url(&store, &prefix, url, params, creds && creds->fn ? creds : NULL, err));
  TM_TRY(run_hook(&store, &prefix, url, err));
  *store_out = store;
  *prefix_out = prefix;
  return TM_OK;
}

/* Opening a store contacts nothing: a store opened and freed checks the URL and the params. */
int tm_objstore_check_params(const char *url, const tm_kv *params, tm_error *err) {
  tm_objstore *store = NULL;
  char *prefix = NULL;
  TM_TRY(open_url(&store, &prefix, url, params, NULL, err));
  tm_objstore_free(store);
  tm_free(prefix);
  return TM_OK;
}

/*
 * abfs://CONTAINER[@HOST][/PATH] (abfss:// alike): the container, the host
 * after '@' (ACCOUNT.dfs.core.windows.net) or none, and the path as the
 * prefix, as written.
 */
static int open_abfs_url(tm_objstore **store_out, char **prefix_out, const char *url,
                         const char *rest, const tm_kv *params, tm_error *err) {
  size_t n = strcspn(rest, "/");
  const char *at = memchr(rest, '@', n);
  size_t cn = at ? (size_t)(at - rest) : n;
  if (cn == 0) return tm_error_set(err, TM_EINVALID, "URL '%s' has no container name", url);
  if (at && at + 1 == rest + n) return tm_error_set(err, TM_EINVALID, "URL '%s' has no host after '@'", url);
  const char *path = rest[n] == '/' ? rest + n + 1 : rest + n;
  if (path[0] == '/')
    return tm_error_set(err, TM_EINVALID, "URL '%s': '//' after the container name", url);
  char *container = tm_strndup(rest, cn);
  char *host = at ? tm_strndup(at + 1, (size_t)(rest + n - at - 1)) : NULL;
  char *prefix = tm_strdup(path);
  int rc = (!container || (at && !host) || !prefix) ? tm_error_nomem(err) : TM_OK;
  for (char *p = host; rc == TM_OK && p && *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  tm_objstore *s = NULL;
  if (rc == TM_OK) rc = tm_objstore_azure_new_from_params(&s, container, host, params, err);
  tm_free(container);
  tm_free(host);
  if (rc < 0) {
    tm_free(prefix);
    return rc;
  }
  *store_out = s;
  *prefix_out = prefix;
  return TM_OK;
}

static int open_url(tm_objstore **store_out, char **prefix_out, const char *url,
                    const tm_kv *params, const tm_objstore_creds *creds, tm_error *err) {
  if (!url || !*url) return tm_error_set(err, TM_EINVALID, "empty object-store URL");
  const char *rest;
  if (creds && !after_scheme(url, "s3://") && !after_scheme(url, "s3a://"))
    return tm_error_set(err, TM_EUNSUPPORTED, "URL '%s': supplied keys are for s3:// stores only",
                        url);
  if ((rest = after_scheme(url, "file:")) != NULL)
    return open_file_url(store_out, prefix_out, url, rest, err);
  if ((rest = after_scheme(url, "abfs://")) != NULL || (rest = after_scheme(url, "abfss://")) != NULL)
    return open_abfs_url(store_out, prefix_out, url, rest, params, err);
  bool is_s3 = false, is_mem = false;
  if ((rest = after_scheme(url, "s3://")) != NULL || (rest = after_scheme(url, "s3a://")) != NULL)
    is_s3 = true;
  else if ((rest = after_scheme(url, "mem://")) != NULL)
    is_mem = true;
  if (!is_s3 && !is_mem)
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "URL '%s': unsupported scheme (expected file:, s3://, s3a://, abfs:// or abfss://)", url);
  char *bucket = NULL, *prefix = NULL;
  TM_TRY(split_bucket(url, rest, &bucket, &prefix, err));
  int rc = TM_OK;
  if (prefix[0] == '/')
    rc = tm_error_set(err, TM_EINVALID, "URL '%s': '//' after the bucket name", url);
  tm_objstore *s = NULL;
  if (rc == TM_OK && is_mem) rc = tm_objstore_mem_new(&s, bucket, err);
  if (rc == TM_OK && is_s3) rc = tm_objstore_s3_new_from_params(&s, bucket, params, creds, err);
  tm_free(bucket);
  if (rc < 0) {
    tm_free(prefix);
    return rc;
  }
  *store_out = s;
  *prefix_out = prefix;
  return TM_OK;
}

/* ---- params ---- */

int tm_objstore__param_bool(const char *name, const char *value, bool *out, tm_error *err) {
  if (tm_parse_bool(value, strlen(value), out) != TM_OK)
    return tm_error_set(err, TM_EINVALID, "param %s: '%s' is not true or false", name, value);
  return TM_OK;
}
