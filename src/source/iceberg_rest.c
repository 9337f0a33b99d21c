/*
 * iceberg_rest.c - Iceberg REST catalog client (source layer; HTTP
 * through objstore/fetch.h, authentication in iceberg_rest_auth.c).
 * See iceberg_rest.h.
 */
#include "source/iceberg_rest.h"

#include <jansson.h>
#include <string.h>

#include "objstore/fetch.h"
#include "objstore/sigv4.h"
#include "source/iceberg_rest_int.h"
#include "util/alloc.h"
#include "util/buf.h"

#define REST_BODY_LIMIT ((size_t)64 << 20)
#define MAX_CONFIG 1024
#define MAX_CONFIG_KEY 256
#define MAX_CONFIG_VALUE ((size_t)64 << 10)
#define MAX_CREDS 256
#define MAX_PREFIX 4096

/* Percent-encodes s for a path segment (multi-level namespaces use %1F). */
static int encode_segment(tm_buf *out, const char *s, bool dots_are_levels, tm_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '~' ||
                 (*p == '.' && !dots_are_levels);
    if (plain) {
      TM_TRY(tm_buf_putc(out, (char)*p, err));
    } else if (*p == '.' && dots_are_levels) {
      TM_TRY(tm_buf_puts(out, "%1F", err));
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      TM_TRY(tm_buf_append(out, e, 3, err));
    }
  }
  return TM_OK;
}

/* A message from the REST error model, or the body's start: one line, redacted. */
static void error_message(const tm_iceberg_rest_options *o, const tm_buf *body, char *msg,
                          size_t cap, char *type, size_t tcap) {
  msg[0] = type[0] = '\0';
  json_t *j = body->len ? json_loadb(body->ptr, body->len, 0, NULL) : NULL;
  json_t *e = json_object_get(j, "error");
  if (json_is_object(e)) {
    const char *m = json_string_value(json_object_get(e, "message"));
    const char *t = json_string_value(json_object_get(e, "type"));
    if (m) snprintf(msg, cap, "%.400s", m);
    if (t) snprintf(type, tcap, "%s", t);
  } else if (body->len) {
    snprintf(msg, cap, "%.*s", (int)(body->len > 200 ? 200 : body->len), body->ptr);
  }
  json_decref(j);
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20) *p = ' ';
  for (char *p = type; *p; p++)
    if ((unsigned char)*p < 0x20) *p = ' ';
  tm_iceberg_rest__redact(o->auth, msg, cap);
  tm_iceberg_rest__redact(o->auth, type, tcap);
}

/*
 * GET url (query: raw pairs, encoded here) into body, authenticated; maps
 * HTTP and transport failures to tm codes. extra: one more header line, or
 * NULL. An OAuth2 token the catalog refuses (401, 419) is renewed once.
 */
static int http_get(const tm_iceberg_rest_options *o, const char *path_url,
                    const tm_sigv4_kv *query, size_t n_query, const char *extra, tm_buf *body,
                    tm_error *err) {
  tm_buf url = TM_BUF_INIT(1 << 16);
  tm_rest_headers h;
  memset(&h, 0, sizeof h);
  int rc;
  long status = 0;
  TM_CHECK(tm_buf_puts(&url, path_url, err));
  if (n_query) {
    TM_CHECK(tm_buf_putc(&url, '?', err));
    TM_CHECK(tm_sigv4_canonical_query(&url, query, n_query, err));
  }
  for (int attempt = 0;; attempt++) {
    tm_rest_headers_dispose(&h);
    tm_buf_clear(body);
    uint64_t generation = 0;
    TM_CHECK(tm_rest_headers_add(&h, err, "Accept: application/json"));
    if (extra) TM_CHECK(tm_rest_headers_add(&h, err, "%s", extra));
    if (o->auth) {
      TM_CHECK(tm_iceberg_rest__authorize(o->auth, "GET", url.ptr, NULL, 0, &h, &generation, err));
    } else if (o->token && *o->token) {
      TM_CHECK(tm_rest_headers_add(&h, err, "Authorization: Bearer %s", o->token));
    }
    tm_fetch_req fr = {"GET", url.ptr, (const char *const *)h.lines, NULL, 0, o->timeout_ms, 0};
    TM_CHECK(tm_fetch(&fr, &status, body, err));
    if ((status == 401 || status == 419) && attempt == 0 &&
        tm_iceberg_rest__auth_refused(o->auth, generation))
      continue;
    break;
  }
  if (status >= 200 && status < 300) {
    rc = TM_OK;
    goto done;
  }
  char msg[512], type[128];
  error_message(o, body, msg, sizeof msg, type, sizeof type);
  const char *sep = type[0] ? " " : "";
  if (status == 404) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: not found (HTTP 404%s%s): %s", url.ptr, sep, type, msg);
  } else if (status == 401 || status == 419) {
    rc = tm_error_set(err, TM_EINVALID, "%s: the catalog refused the credentials (HTTP %ld%s%s): "
                      "%s; %s", url.ptr, status, sep, type, msg,
                      o->auth || !o->token || !*o->token ? tm_iceberg_rest__auth_hint(o->auth)
                                                         : "check iceberg_token");
  } else if (status == 403) {
    rc = tm_error_set(err, TM_EINVALID, "%s: the catalog denied access (HTTP 403%s%s): %s", url.ptr,
                      sep, type, msg);
  } else if (status >= 500 || status == 429) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: catalog error (HTTP %ld%s%s): %s", url.ptr, status,
                      sep, type, msg);
  } else {
    rc = tm_error_set(err, TM_EINVALID, "%s: request refused (HTTP %ld%s%s): %s", url.ptr, status,
                      sep, type, msg);
  }
done:
  tm_rest_headers_dispose(&h);
  tm_buf_dispose(&url);
  return rc;
}

int tm_iceberg_rest_parse_url(const char *url, char **base_out, char **prefix_out,
                              char **ns_out, char **table_out, tm_error *err) {
  if (!tm_str_has_prefix(url, "http://") && !tm_str_has_prefix(url, "https://")) {
    return tm_error_set(err, TM_EINVALID, "%s: a REST catalog table URL starts with http(s)://", url);
  }
  const char *v1 = strstr(url, "/v1/");
  const char *nsp = v1 ? strstr(v1, "/namespaces/") : NULL;
  const char *tp = nsp ? strstr(nsp + 12, "/tables/") : NULL;
  if (!v1 || !nsp || !tp || !tp[8] || strchr(tp + 8, '/')) {
    return tm_error_set(err, TM_EINVALID,
                        "%s: expected .../v1/[PREFIX/]namespaces/NS/tables/TABLE", url);
  }
  char *base = tm_strndup(url, (size_t)(v1 - url));
  char *prefix = nsp > v1 + 3 ? tm_strndup(v1 + 4, (size_t)(nsp - v1 - 4)) : NULL;
  char *ns = tm_strndup(nsp + 12, (size_t)(tp - nsp - 12));
  char *table = tm_strdup(tp + 8);
  if (!base || !ns || !table || (nsp > v1 + 3 && !prefix)) {
    tm_free(base);
    tm_free(prefix);
    tm_free(ns);
    tm_free(table);
    return tm_error_nomem(err);
  }
  /* %1F separates namespace levels; keep them as dots. */
  for (char *p = ns; *p; p++) {
    if (p[0] == '%' && p[1] == '1' && (p[2] == 'F' || p[2] == 'f')) {
      *p = '.';
      memmove(p + 1, p + 3, strlen(p + 3) + 1);
    }
  }
  if (!*ns) {
    tm_free(base);
    tm_free(prefix);
    tm_free(ns);
    tm_free(table);
    return tm_error_set(err, TM_EINVALID, "%s: empty namespace", url);
  }
  *base_out = base;
  *prefix_out = prefix;
  *ns_out = ns;
  *table_out = table;
  return TM_OK;
}

static int get_prefix(const tm_iceberg_rest_options *o, char **out, tm_error *err) {
  tm_buf url = TM_BUF_INIT(1 << 16), body = TM_BUF_INIT(REST_BODY_LIMIT);
  int rc;
  TM_CHECK(tm_buf_printf(&url, err, "%s/v1/config", o->base_url));
  tm_sigv4_kv q = {"warehouse", o->warehouse};
  rc = http_get(o, url.ptr, &q, o->warehouse ? 1 : 0, NULL, &body, err);
  if (rc == TM_ENOTFOUND) {
    /* A catalog without /v1/config: no prefix. */
    *out = tm_strdup("");
    rc = *out ? TM_OK : tm_error_nomem(err);
    goto done;
  }
  if (rc < 0) goto done;
  json_error_t jerr;
  json_t *j = json_loadb(body.ptr ? body.ptr : "", body.len, 0, &jerr);
  if (!json_is_object(j)) {
    json_decref(j);
    rc = TM_CORRUPT(err, "%s: the catalog config is not a JSON object", url.ptr);
    goto done;
  }
  const char *prefix = json_string_value(json_object_get(json_object_get(j, "overrides"), "prefix"));
  if (!prefix) prefix = json_string_value(json_object_get(json_object_get(j, "defaults"), "prefix"));
  *out = tm_strdup(prefix ? prefix : "");
  json_decref(j);
  rc = *out ? TM_OK : tm_error_nomem(err);
done:
  tm_buf_dispose(&url);
  tm_buf_dispose(&body);
  return rc;
}

int tm_iceberg_rest_load_table(const tm_iceberg_rest_options *opts, const char *prefix,
                               const char *ns, const char *table, tm_iceberg_rest_table *out,
                               tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->config);
  if (!opts || !opts->base_url) return tm_error_set(err, TM_EINVALID, "no REST catalog URL");
  tm_buf url = TM_BUF_INIT(1 << 16), body = TM_BUF_INIT(REST_BODY_LIMIT);
  int rc;
  if (prefix) {
    out->prefix = tm_strdup(prefix);
    if (!out->prefix) {
      rc = tm_error_nomem(err);
      goto done;
    }
  } else {
    TM_CHECK(get_prefix(opts, &out->prefix, err));
  }
  TM_CHECK(tm_buf_printf(&url, err, "%s/v1/", opts->base_url));
  if (*out->prefix) {
    TM_CHECK(encode_segment(&url, out->prefix, false, err));
    TM_CHECK(tm_buf_putc(&url, '/', err));
  }
  TM_CHECK(tm_buf_puts(&url, "namespaces/", err));
  TM_CHECK(encode_segment(&url, ns, true, err));
  TM_CHECK(tm_buf_puts(&url, "/tables/", err));
  TM_CHECK(encode_segment(&url, table, false, err));
  TM_CHECK(http_get(opts, url.ptr, NULL, 0,
                    opts->vended_credentials ? "X-Iceberg-Access-Delegation: vended-credentials"
                                             : NULL,
                    &body, err));
  char *keep_prefix = out->prefix;
  out->prefix = NULL;
  rc = tm_iceberg_rest_parse_table(body.ptr, body.len, url.ptr, out, err);
  out->prefix = keep_prefix;
done:
  tm_buf_dispose(&url);
  tm_buf_dispose(&body);
  if (rc < 0) tm_iceberg_rest_table_dispose(out);
  return rc;
}

void tm_iceberg_rest_table_dispose(tm_iceberg_rest_table *t) {
  tm_free(t->metadata_location);
  tm_free(t->metadata_json);
  tm_free(t->prefix);
  tm_kv_dispose(&t->config);
  for (size_t i = 0; i < t->n_creds; i++) {
    tm_free(t->creds[i].prefix);
    tm_kv_dispose(&t->creds[i].config);
  }
  tm_free(t->creds);
  memset(t, 0, sizeof *t);
  tm_kv_init(&t->config);
}

/* A string map of at most MAX_CONFIG entries (non-string values are skipped, as before). */
static int read_map(json_t *obj, const char *where, const char *what, tm_kv *out, tm_error *err) {
  if (!obj || json_is_null(obj)) return TM_OK;
  if (!json_is_object(obj)) return TM_CORRUPT(err, "%s: \"%s\" is not an object", where, what);
  if (json_object_size(obj) > MAX_CONFIG)
    return TM_CORRUPT(err, "%s: \"%s\" has more than %d entries", where, what, MAX_CONFIG);
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    if (!json_is_string(v)) continue;
    if (strlen(k) > MAX_CONFIG_KEY || json_string_length(v) > MAX_CONFIG_VALUE)
      return TM_CORRUPT(err, "%s: \"%s\" has a key or value past its limit (%d, %zu bytes)", where,
                        what, MAX_CONFIG_KEY, MAX_CONFIG_VALUE);
    if (strlen(json_string_value(v)) != json_string_length(v))
      return TM_CORRUPT(err, "%s: \"%s\" entry '%.64s' has a NUL byte", where, what, k);
    TM_TRY(tm_kv_set(out, k, json_string_value(v), err));
  }
  return TM_OK;
}

int tm_iceberg_rest_parse_table(const char *json, size_t len, const char *where,
                                tm_iceberg_rest_table *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->config);
  if (!where) where = "the catalog's answer";
  json_error_t jerr;
  json_t *j = json_loadb(json ? json : "", len, 0, &jerr);
  char *text = NULL;
  int rc = TM_OK;
  if (!j) {
    rc = TM_CORRUPT(err, "%s: the response is not JSON (line %d: %s)", where, jerr.line, jerr.text);
    goto done;
  }
  json_t *meta = json_object_get(j, "metadata");
  if (!json_is_object(meta)) {
    rc = TM_CORRUPT(err, "%s: the response has no \"metadata\" object", where);
    goto done;
  }
  json_t *loc = json_object_get(j, "metadata-location");
  if (json_is_string(loc)) {
    if (json_string_length(loc) > MAX_PREFIX ||
        strlen(json_string_value(loc)) != json_string_length(loc)) {
      rc = TM_CORRUPT(err, "%s: \"metadata-location\" is longer than %d bytes or has a NUL", where,
                      MAX_PREFIX);
      goto done;
    }
    if (!(out->metadata_location = tm_strdup(json_string_value(loc)))) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  text = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!text || !(out->metadata_json = tm_strdup(text))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  out->metadata_len = strlen(out->metadata_json);
  TM_CHECK(read_map(json_object_get(j, "config"), where, "config", &out->config, err));
  json_t *sc = json_object_get(j, "storage-credentials");
  if (sc && !json_is_null(sc)) {
    if (!json_is_array(sc) || json_array_size(sc) > MAX_CREDS) {
      rc = TM_CORRUPT(err, "%s: \"storage-credentials\" is not a list of at most %d", where,
                      MAX_CREDS);
      goto done;
    }
    size_t n = json_array_size(sc);
    out->creds = tm_calloc(n ? n : 1, sizeof *out->creds);
    if (!out->creds) {
      rc = tm_error_nomem(err);
      goto done;
    }
    for (size_t i = 0; i < n; i++) {
      json_t *c = json_array_get(sc, i);
      json_t *pfx = json_object_get(c, "prefix");
      tm_iceberg_rest_storage_cred *d = &out->creds[out->n_creds++];
      tm_kv_init(&d->config);
      if (!json_is_string(pfx) || !json_is_object(json_object_get(c, "config")) ||
          json_string_length(pfx) > MAX_PREFIX ||
          strlen(json_string_value(pfx)) != json_string_length(pfx)) {
        rc = TM_CORRUPT(err, "%s: storage credential %zu has no \"prefix\" string (at most %d "
                        "bytes) and \"config\" object", where, i, MAX_PREFIX);
        goto done;
      }
      if (!(d->prefix = tm_strdup(json_string_value(pfx)))) {
        rc = tm_error_nomem(err);
        goto done;
      }
      TM_CHECK(read_map(json_object_get(c, "config"), where, "storage-credentials config",
                        &d->config, err));
    }
  }
done:
  free(text); /* lint-ok: allocated by jansson */
  json_decref(j);
  if (rc < 0) tm_iceberg_rest_table_dispose(out);
  return rc;
}

/* ---- vended S3 settings ---------------------------------------------------------------- */

/* s3a://b/p reads as s3://b/p; other URLs as written. */
static const char *s3_tail(const char *url) {
  if (tm_str_has_prefix(url, "s3://")) return url + 5;
  if (tm_str_has_prefix(url, "s3a://")) return url + 6;
  return NULL;
}

/* Copies config value key into out (cap bytes): no control characters, shorter than cap. */
static int copy_value(const tm_kv *cfg, const char *key, const char *source, char *out, size_t cap,
                      bool secret, tm_error *err) {
  out[0] = '\0';
  const char *v = cfg ? tm_kv_get(cfg, key) : NULL;
  if (!v) return TM_OK;
  size_t n = strlen(v);
  bool bad = n >= cap;
  for (size_t i = 0; !bad && i < n; i++) bad = (unsigned char)v[i] < 0x20 || v[i] == 0x7f;
  if (bad)
    return TM_CORRUPT(err, "the catalog's %s: %s is %s", source, key,
                      n >= cap ? "too long" : "not printable");
  if (secret && (n == 0 || strchr(v, ' ')))
    return TM_CORRUPT(err, "the catalog's %s: %s is empty or has a space", source, key);
  memcpy(out, v, n + 1);
  return TM_OK;
}

int tm_iceberg_rest_s3_settings(const tm_iceberg_rest_table *t, const char *location,
                                tm_iceberg_rest_s3 *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  out->path_style = -1;
  const char *tail = location ? s3_tail(location) : NULL;
  /* The most specific storage credential with S3 keys, else "config" (the spec's order). */
  const tm_kv *keys = &t->config, *best = NULL;
  size_t best_len = 0;
  const char *best_prefix = NULL;
  for (size_t i = 0; tail && i < t->n_creds; i++) {
    const char *pt = s3_tail(t->creds[i].prefix);
    if (!pt || !tm_kv_get(&t->creds[i].config, "s3.access-key-id")) continue;
    size_t n = strlen(pt);
    if (strncmp(tail, pt, n) == 0 && (!best || n > best_len)) {
      best = &t->creds[i].config;
      best_len = n;
      best_prefix = t->creds[i].prefix;
    }
  }
  if (best) {
    keys = best;
    snprintf(out->source, sizeof out->source, "storage-credentials for %.120s", best_prefix);
  } else {
    snprintf(out->source, sizeof out->source, "config");
  }
  tm_aws_creds *c = &out->creds;
  int rc = copy_value(keys, "s3.access-key-id", out->source, c->access_key, sizeof c->access_key,
                      true, err);
  if (rc == TM_OK)
    rc = copy_value(keys, "s3.secret-access-key", out->source, c->secret_key, sizeof c->secret_key,
                    true, err);
  if (rc == TM_OK)
    rc = copy_value(keys, "s3.session-token", out->source, c->session_token,
                    sizeof c->session_token, true, err);
  if (rc == TM_OK && (!c->access_key[0]) != (!c->secret_key[0]))
    rc = TM_CORRUPT(err, "the catalog's %s: %s without %s", out->source,
                    c->access_key[0] ? "s3.access-key-id" : "s3.secret-access-key",
                    c->access_key[0] ? "s3.secret-access-key" : "s3.access-key-id");
  if (rc == TM_OK && !c->access_key[0] && c->session_token[0])
    rc = TM_CORRUPT(err, "the catalog's %s: s3.session-token without s3.access-key-id", out->source);
  const char *exp_key = "s3.session-token-expires-at-ms";
  const char *exp = tm_kv_get(keys, exp_key);
  if (!exp) exp = tm_kv_get(keys, exp_key = "expiration-time");
  if (rc == TM_OK && exp && c->access_key[0]) {
    int64_t ms = 0;
    if (tm_parse_int64(exp, strlen(exp), &ms) != TM_OK || ms <= 0)
      rc = TM_CORRUPT(err, "the catalog's %s: %s '%.40s' is not a time in Unix milliseconds",
                      out->source, exp_key, exp);
    c->expires_ms = ms;
  }
  /* Where the files are: the credential's own settings first, then the table's config. */
  const tm_kv *cfgs[2] = {best, &t->config};
  for (int k = 0; rc == TM_OK && k < 2; k++) {
    const tm_kv *cfg = cfgs[k];
    if (!cfg) continue;
    if (!out->endpoint[0])
      rc = copy_value(cfg, "s3.endpoint", "config", out->endpoint, sizeof out->endpoint, false, err);
    if (rc == TM_OK && out->endpoint[0] && !tm_str_has_prefix(out->endpoint, "http://") &&
        !tm_str_has_prefix(out->endpoint, "https://"))
      rc = TM_CORRUPT(err, "the catalog's s3.endpoint '%.200s' is not an http(s):// URL",
                      out->endpoint);
    if (rc == TM_OK && !out->region[0])
      rc = copy_value(cfg, "s3.region", "config", out->region, sizeof out->region, false, err);
    if (rc == TM_OK && !out->region[0])
      rc = copy_value(cfg, "client.region", "config", out->region, sizeof out->region, false, err);
    const char *ps = tm_kv_get(cfg, "s3.path-style-access");
    if (rc == TM_OK && ps && out->path_style < 0) {
      if (strcmp(ps, "true") == 0) out->path_style = 1;
      else if (strcmp(ps, "false") == 0) out->path_style = 0;
      else rc = TM_CORRUPT(err, "the catalog's s3.path-style-access '%.20s' is not true or false", ps);
    }
  }
  if (rc < 0) {
    memset(out, 0, sizeof *out);
    out->path_style = -1;
  }
  return rc;
}
