/*
 * s3.c - the S3 object store: the objstore vtable over signed HTTP requests
 * (objstore layer, s3 backend). See s3.h for behaviour and errors,
 * s3_http.c for signing and errors (requests and retries: objstore/http.c),
 * s3_xml.c for listings.
 *
 *   stat    HEAD key (404: absent); size from Content-Length, time from
 *           Last-Modified (whole seconds, as HTTP dates are)
 *   list    ListObjectsV2 (list-type=2, encoding-type=url), following
 *           NextContinuationToken; every key must carry the prefix and
 *           come after the previous one, which also stops a server that
 *           sends the same page forever
 *   get     GET with Range (none for a whole object); 416 = past the end
 *   put     one PUT with the body's SHA-256 signed; If-None-Match: * for
 *           create-only puts; a single PUT is atomic on S3
 *   delete  DELETE (404 is fine)
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/s3/s3_int.h"
#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define MAX_PUT ((uint64_t)5 * 1024 * 1024 * 1024) /* S3's single-PUT limit */

void tm_s3_options_init(tm_s3_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_S3_OPTIONS_VERSION;
  o->max_retries = 4;
  o->retry_base_ms = 200;
  o->retry_max_ms = 5000;
  o->connect_timeout_ms = 10000;
  o->request_timeout_ms = 0;
  o->stall_timeout_ms = 30000;
  o->max_idle_handles = 16;
}

static int s3_stat(tm_objstore *base, const char *key, tm_obj_stat *out, tm_error *err) {
  tm_s3_store *s = (tm_s3_store *)base;
  for (int attempt = 0;; attempt++) {
    tm_s3_denial d = {"", false};
    tm_s3_req req = {0};
    req.http.backend = &req;
    req.denial = &d;
    int rc = tm_http__stat(&s->http, &req.http, key, out, err);
    if (attempt > 0 || !tm_s3__renew_after_denial(s, &d, rc, err)) return rc;
  }
}

typedef struct list_ctx {
  tm_s3_store *s;
  const char *prefix;
  tm_buf body; /* one page, capped at TM_XML_MAX */
} list_ctx;

/* One ListObjectsV2 page after token (tm_http_page_fn). */
static int list_page(void *payload, const char *token, tm_obj_list *items, char **next_out,
                     tm_error *err) {
  list_ctx *c = payload;
  tm_sigv4_kv q[4];
  size_t nq = 0;
  q[nq++] = (tm_sigv4_kv){"list-type", "2"};
  q[nq++] = (tm_sigv4_kv){"encoding-type", "url"};
  if (*c->prefix) q[nq++] = (tm_sigv4_kv){"prefix", c->prefix};
  if (token) q[nq++] = (tm_sigv4_kv){"continuation-token", token};
  for (int attempt = 0;; attempt++) {
    tm_s3_denial d = {"", false};
    tm_s3_req req = {0};
    req.http.method = "GET";
    req.http.body_out = &c->body;
    req.query = q;
    req.n_query = nq;
    req.denial = &d;
    tm_buf_clear(&c->body);
    tm_http_resp resp;
    int prc = tm_s3__perform(c->s, &req, NULL, 0, &resp, err);
    if (prc == TM_OK) break;
    if (attempt > 0 || !tm_s3__renew_after_denial(c->s, &d, prc, err)) return prc;
  }
  tm_s3_list_page page;
  tm_s3_list_page_init(&page);
  int rc = tm_s3__parse_list(&page, c->body.ptr ? c->body.ptr : "", c->body.len, err);
  if (rc < 0) {
    tm_error_prefix(err, "listing s3://%s/%s", c->s->bucket, c->prefix);
  } else {
    *items = page.items;
    tm_obj_list_init(&page.items);
    if (page.truncated) {
      *next_out = page.next_token;
      page.next_token = NULL;
    }
  }
  tm_s3_list_page_dispose(&page);
  return rc;
}

static int s3_list(tm_objstore *base, const char *prefix, tm_objstore_list_fn fn, void *payload,
                   tm_error *err) {
  list_ctx c = {(tm_s3_store *)base, prefix, TM_BUF_INIT(TM_XML_MAX)};
  int rc = tm_http__list_paged(base, prefix, list_page, &c, fn, payload, err);
  tm_buf_dispose(&c.body);
  return rc;
}

/* Counts what a get delivered, so that a renewal retries only a get that delivered nothing. */
typedef struct counting_sink {
  tm_objstore_sink_fn sink;
  void *payload;
  uint64_t delivered;
} counting_sink;

static int count_bytes(const void *data, size_t len, void *payload, tm_error *err) {
  counting_sink *c = payload;
  c->delivered += len;
  return c->sink(data, len, c->payload, err);
}

static int s3_get(tm_objstore *base, const char *key, uint64_t off, uint64_t len,
                  tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  tm_s3_store *s = (tm_s3_store *)base;
  counting_sink cs = {sink, payload, 0};
  for (int attempt = 0;; attempt++) {
    tm_s3_denial d = {"", false};
    tm_s3_req req = {0};
    req.http.backend = &req;
    req.denial = &d;
    int rc = tm_http__get(&s->http, &req.http, key, off, len, count_bytes, &cs, err);
    if (attempt > 0 || cs.delivered > 0 || !tm_s3__renew_after_denial(s, &d, rc, err)) return rc;
  }
}

static int s3_put(tm_objstore *base, const char *key, tm_input *body, unsigned flags,
                  tm_error *err) {
  tm_s3_store *s = (tm_s3_store *)base;
  uint64_t size = 0;
  TM_TRY(tm_input_size(body, &size, err));
  if (size > MAX_PUT)
    return tm_error_set(err, TM_ETOOLARGE,
                        "s3://%s/%s: %llu bytes is over the 5 GiB of a single PUT (multipart "
                        "upload is not implemented)",
                        s->bucket, key, (unsigned long long)size);
  char sha[TM_SHA256_HEX_LEN + 1];
  TM_TRY(tm_sha256_hex_input(sha, body, err));
  tm_s3_req req = {0};
  req.http.method = "PUT";
  req.http.key = key;
  req.http.upload = body;
  req.http.upload_len = size;
  req.http.if_none_match = (flags & TM_OBJ_PUT_IF_ABSENT) ? "*" : NULL;
  req.upload_sha256 = sha;
  tm_http_resp resp;
  return tm_s3__perform(s, &req, NULL, 0, &resp, err);
}

static int s3_del(tm_objstore *base, const char *key, tm_error *err) {
  tm_s3_req req = {0};
  req.http.backend = &req;
  return tm_http__delete(&((tm_s3_store *)base)->http, &req.http, key, err);
}

static void s3_free(tm_objstore *base) {
  tm_s3_store *s = (tm_s3_store *)base;
  tm_http__client_dispose(&s->http);
  if (s->secret_key) memset(s->secret_key, 0, strlen(s->secret_key));
  tm_free(s->bucket);
  tm_free(s->host);
  tm_free(s->path_prefix);
  tm_free(s->endpoint_desc);
  tm_free(s->region);
  tm_free(s->access_key);
  tm_free(s->secret_key);
  tm_free(s->session_token);
  tm_aws_chain_free(s->chain);
  tm_objstore__dispose(base);
  tm_free(s);
}

static const tm_objstore_vtable k_s3_vt =
    TM_OBJSTORE_VTABLE_INIT("s3", s3_stat, s3_list, s3_get, s3_put, s3_del, NULL, s3_free);

static bool valid_bucket(const char *b) {
  size_t n = strlen(b);
  if (n == 0 || n > 255) return false;
  for (size_t i = 0; i < n; i++) {
    char c = b[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '-' || c == '_'))
      return false;
  }
  return true;
}

static char *dup_or_null(const char *s) { return s && *s ? tm_strdup(s) : NULL; }

int tm_objstore_s3_new(tm_objstore **out, const tm_s3_options *o, tm_error *err) {
  if (!o || o->version != TM_S3_OPTIONS_VERSION)
    return tm_error_set(err, TM_EINVALID, "s3 store: options version mismatch");
  if (!o->bucket || !valid_bucket(o->bucket))
    return tm_error_set(err, TM_EINVALID, "s3 store: invalid bucket name '%s'",
                        o->bucket ? o->bucket : "");
  bool has_key = o->access_key && *o->access_key, has_secret = o->secret_key && *o->secret_key;
  if (has_key != has_secret)
    return tm_error_set(err, TM_EINVALID, "s3 store for bucket '%s': %s", o->bucket,
                        has_key ? "s3_key is set but s3_secret is not"
                                : "s3_secret is set but s3_key is not");
  if (o->credential_chain && (has_key || (o->session_token && *o->session_token)))
    return tm_error_set(err, TM_EINVALID, "s3 store for bucket '%s': the credential chain takes "
                        "no s3_key, s3_secret or s3_session_token", o->bucket);
  if (o->creds.fn && (has_key || o->credential_chain || (o->session_token && *o->session_token)))
    return tm_error_set(err, TM_EINVALID, "s3 store for bucket '%s': keys supplied by a provider "
                        "take no s3_key, s3_secret, s3_session_token or s3_auth", o->bucket);
  tm_http_options ho;
  tm_http_options_init(&ho);
  ho.max_retries = o->max_retries;
  ho.retry_base_ms = o->retry_base_ms;
  ho.retry_max_ms = o->retry_max_ms;
  ho.connect_timeout_ms = o->connect_timeout_ms;
  ho.request_timeout_ms = o->request_timeout_ms;
  ho.stall_timeout_ms = o->stall_timeout_ms;
  ho.max_idle_handles = o->max_idle_handles;

  const char *region = o->region && *o->region ? o->region : "us-east-1";
  bool https = true;
  char *authority = NULL, *basepath = NULL;
  int rc;
  if (o->endpoint && *o->endpoint) {
    TM_TRY(tm_http__parse_endpoint(o->endpoint, "s3_endpoint", "s3_key and s3_secret",
                                   o->allow_http, &https, &authority, &basepath, err));
  } else {
    authority = tm_asprintf("s3.%s.amazonaws.com", region);
    basepath = tm_strdup("");
    if (!authority || !basepath) {
      tm_free(authority);
      tm_free(basepath);
      return tm_error_nomem(err);
    }
  }
  tm_s3_url_style style = o->url_style;
  if (style == TM_S3_URL_AUTO)
    style = (o->endpoint && *o->endpoint) || strchr(o->bucket, '.') ? TM_S3_URL_PATH
                                                                    : TM_S3_URL_VIRTUAL;
  tm_s3_store *s = tm_calloc(1, sizeof *s);
  char *name = tm_asprintf("s3://%s", o->bucket);
  if (!s || !name) {
    tm_free(s);
    tm_free(name);
    tm_free(authority);
    tm_free(basepath);
    return tm_error_nomem(err);
  }
  rc = tm_objstore__init(&s->base, &k_s3_vt, name, err);
  tm_free(name);
  if (rc < 0) {
    tm_free(s);
    tm_free(authority);
    tm_free(basepath);
    return rc;
  }
  s->opts = *o;
  s->opts.bucket = s->opts.endpoint = s->opts.region = NULL;
  s->opts.access_key = s->opts.secret_key = s->opts.session_token = NULL;
  s->https = https;
  s->bucket = tm_strdup(o->bucket);
  s->region = tm_strdup(region);
  s->endpoint_desc = tm_asprintf("%s://%s%s", https ? "https" : "http", authority, basepath);
  if (style == TM_S3_URL_VIRTUAL) {
    s->host = tm_asprintf("%s.%s", o->bucket, authority);
    s->path_prefix = tm_strdup(basepath);
  } else {
    s->host = tm_strdup(authority);
    s->path_prefix = tm_asprintf("%s/%s", basepath, o->bucket);
  }
  s->access_key = dup_or_null(o->access_key);
  s->secret_key = dup_or_null(o->secret_key);
  s->session_token = dup_or_null(o->session_token);
  s->creds = o->creds;
  if (o->credential_chain && (rc = tm_aws_chain_new(&s->chain, err)) != TM_OK) {
    tm_free(authority);
    tm_free(basepath);
    s3_free(&s->base);
    return rc;
  }
  tm_free(authority);
  tm_free(basepath);
  if (!s->bucket || !s->region || !s->endpoint_desc || !s->host || !s->path_prefix ||
      (has_key && (!s->access_key || !s->secret_key)) ||
      (o->session_token && *o->session_token && !s->session_token)) {
    s3_free(&s->base);
    return tm_error_nomem(err);
  }
  rc = tm_http__client_init(&s->http, &s->base, tm_s3__http_backend(), s, s->endpoint_desc, &ho,
                            err);
  if (rc < 0) {
    s3_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return TM_OK;
}

uint64_t tm_objstore_s3_connections(tm_objstore *base) {
  if (base->vt != &k_s3_vt) return 0;
  return tm_http__connections(&((tm_s3_store *)base)->http);
}

/* ---- params ---- */

static const char *const k_s3_params[] = {"s3_endpoint",      "s3_region",    "s3_key",
                                          "s3_secret",        "s3_auth",      "s3_session_token",
                                          "s3_url_style"};

static const char *param(const tm_kv *params, const char *name) {
  const char *v = params ? tm_kv_get(params, name) : NULL;
  return v && *v ? v : NULL;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/*
 * Reads and checks params into o (strings borrowed from params). Spice's
 * s3_auth: public (unsigned, the environment's keys unused), key (s3_key and
 * s3_secret required); unset: s3_key / s3_secret, else the AWS_* variables,
 * else unsigned. iam_role: the AWS default credential chain (awscreds.h),
 * with no keys in params.
 */
static int read_params(tm_s3_options *o, const tm_kv *params, const tm_objstore_creds *creds,
                       tm_error *err) {
  for (size_t i = 0; params && i < params->len; i++) {
    const char *k = params->items[i].key;
    if (strncmp(k, "s3_", 3) != 0) continue;
    bool known = false;
    for (size_t j = 0; j < sizeof k_s3_params / sizeof k_s3_params[0]; j++)
      known = known || strcmp(k, k_s3_params[j]) == 0;
    if (!known)
      return tm_error_set(err, TM_EINVALID,
                          "unknown param '%s' (s3 params: s3_endpoint, s3_region, s3_auth, s3_key, "
                          "s3_secret, s3_session_token, s3_url_style, allow_http, client_timeout)",
                          k);
  }
  o->endpoint = param(params, "s3_endpoint");
  if (!o->endpoint) o->endpoint = env("AWS_ENDPOINT_URL_S3");
  if (!o->endpoint) o->endpoint = env("AWS_ENDPOINT_URL");
  o->region = param(params, "s3_region");
  if (!o->region) o->region = env("AWS_REGION");
  if (!o->region) o->region = env("AWS_DEFAULT_REGION");
  o->access_key = param(params, "s3_key");
  o->secret_key = param(params, "s3_secret");
  o->session_token = param(params, "s3_session_token");
  const char *auth = param(params, "s3_auth");
  if (creds && creds->fn) {
    if (o->access_key || o->secret_key || o->session_token || auth)
      return tm_error_set(err, TM_EINVALID, "keys supplied by the table's catalog take no s3_key, "
                          "s3_secret, s3_session_token or s3_auth");
    o->creds = *creds;
  } else if (auth && strcmp(auth, "public") == 0) {
    if (o->access_key || o->secret_key)
      return tm_error_set(err, TM_EINVALID, "param s3_auth: public takes no s3_key or s3_secret");
    o->session_token = NULL;
  } else if (auth && strcmp(auth, "key") == 0) {
    if (!o->access_key || !o->secret_key)
      return tm_error_set(err, TM_EINVALID, "param s3_auth: key needs s3_key and s3_secret");
  } else if (auth && strcmp(auth, "iam_role") == 0) {
    if (o->access_key || o->secret_key || o->session_token)
      return tm_error_set(err, TM_EINVALID, "param s3_auth: iam_role takes no s3_key, s3_secret or "
                          "s3_session_token (the AWS credential chain supplies them)");
    o->credential_chain = true;
  } else if (auth) {
    return tm_error_set(err, TM_EINVALID, "param s3_auth: bad value '%s' (allowed: public, key, "
                        "iam_role)", auth);
  } else if (!o->access_key && !o->secret_key) {
    o->access_key = env("AWS_ACCESS_KEY_ID");
    o->secret_key = env("AWS_SECRET_ACCESS_KEY");
    if (!o->session_token) o->session_token = env("AWS_SESSION_TOKEN");
  }
  const char *allow = param(params, "allow_http");
  if (allow) TM_TRY(tm_objstore__param_bool("allow_http", allow, &o->allow_http, err));
  const char *style = param(params, "s3_url_style");
  if (style) {
    if (strcmp(style, "path") == 0) o->url_style = TM_S3_URL_PATH;
    else if (strcmp(style, "virtual") == 0 || strcmp(style, "vhost") == 0)
      o->url_style = TM_S3_URL_VIRTUAL;
    else
      return tm_error_set(err, TM_EINVALID, "param s3_url_style: '%s' is not path or virtual",
                          style);
  }
  /* Spice's client_timeout: the whole of one request (a range of at most 8 MiB here). */
  const char *timeout = param(params, "client_timeout");
  if (timeout) {
    tm_error e;
    tm_error_init(&e);
    if (tm_duration_parse(timeout, &o->request_timeout_ms, &e) != TM_OK || o->request_timeout_ms <= 0)
      return tm_error_set(err, TM_EINVALID, "param client_timeout: bad duration '%s'%s%s", timeout,
                          e.message[0] ? ": " : "", e.message);
  }
  return TM_OK;
}

int tm_objstore_s3_new_from_params(tm_objstore **out, const char *bucket, const tm_kv *params,
                                   const tm_objstore_creds *creds, tm_error *err) {
  tm_s3_options o;
  tm_s3_options_init(&o);
  o.bucket = bucket;
  TM_TRY(read_params(&o, params, creds, err));
  return tm_objstore_s3_new(out, &o, err);
}
