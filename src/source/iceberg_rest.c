/*
 * iceberg_rest.c - Iceberg REST catalog client (source layer; HTTP
 * through objstore/fetch.h).
 * See iceberg_rest.h.
 */
#include "source/iceberg_rest.h"

#include <jansson.h>
#include <string.h>

#include "objstore/fetch.h"
#include "util/alloc.h"
#include "util/buf.h"

#define REST_BODY_LIMIT ((size_t)64 << 20)

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

/* A message from the REST error model, or the body's start. */
static void error_message(const tm_buf *body, char *msg, size_t cap, char *type, size_t tcap) {
  msg[0] = type[0] = '\0';
  json_t *j = body->len ? json_loadb(body->ptr, body->len, 0, NULL) : NULL;
  json_t *e = j ? json_object_get(j, "error") : NULL;
  if (json_is_object(e)) {
    const char *m = json_string_value(json_object_get(e, "message"));
    const char *t = json_string_value(json_object_get(e, "type"));
    if (m) snprintf(msg, cap, "%s", m);
    if (t) snprintf(type, tcap, "%s", t);
  } else if (body->len) {
    snprintf(msg, cap, "%.*s", (int)(body->len > 200 ? 200 : body->len), body->ptr);
  }
  json_decref(j);
}

/* GET url into body; maps HTTP and transport failures to tm codes. */
static int http_get(const tm_iceberg_rest_options *o, const char *url, tm_buf *body,
                    tm_error *err) {
  char *auth = NULL;
  if (o->token && *o->token && !(auth = tm_asprintf("Authorization: Bearer %s", o->token)))
    return tm_error_nomem(err);
  const char *hdr[] = {"Accept: application/json", auth, NULL};
  tm_fetch_req fr = {"GET", url, hdr, NULL, 0, o->timeout_ms, 0};
  long status = 0;
  int rc = tm_fetch(&fr, &status, body, err);
  if (rc != TM_OK) goto done;
  if (status >= 200 && status < 300) goto done;
  char msg[512], type[128];
  error_message(body, msg, sizeof msg, type, sizeof type);
  const char *sep = type[0] ? " " : "";
  if (status == 404) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: not found (HTTP 404%s%s): %s", url, sep, type, msg);
  } else if (status == 401 || status == 403) {
    rc = tm_error_set(err, TM_EINVALID, "%s: authentication failed (HTTP %ld%s%s): %s", url,
                      status, sep, type, msg);
  } else if (status >= 500) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: catalog error (HTTP %ld%s%s): %s", url, status,
                      sep, type, msg);
  } else {
    rc = tm_error_set(err, TM_EINVALID, "%s: request refused (HTTP %ld%s%s): %s", url, status,
                      sep, type, msg);
  }
done:
  tm_free(auth);
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
  if (o->warehouse) {
    TM_CHECK(tm_buf_puts(&url, "?warehouse=", err));
    TM_CHECK(encode_segment(&url, o->warehouse, false, err));
  }
  rc = http_get(o, url.ptr, &body, err);
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
  json_t *j = NULL;
  char *text = NULL;
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
  TM_CHECK(http_get(opts, url.ptr, &body, err));
  json_error_t jerr;
  j = json_loadb(body.ptr ? body.ptr : "", body.len, 0, &jerr);
  json_t *meta = json_object_get(j, "metadata");
  if (!json_is_object(meta)) {
    rc = TM_CORRUPT(err, "%s: the response has no \"metadata\" object", url.ptr);
    goto done;
  }
  const char *loc = json_string_value(json_object_get(j, "metadata-location"));
  if (loc && !(out->metadata_location = tm_strdup(loc))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  text = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (!text) {
    rc = tm_error_nomem(err);
    goto done;
  }
  out->metadata_json = tm_strdup(text);
  if (!out->metadata_json) {
    rc = tm_error_nomem(err);
    goto done;
  }
  out->metadata_len = strlen(out->metadata_json);
  json_t *cfg = json_object_get(j, "config");
  const char *k;
  json_t *v;
  json_object_foreach(cfg, k, v) {
    if (json_is_string(v)) TM_CHECK(tm_kv_set(&out->config, k, json_string_value(v), err));
  }
done:
  free(text); /* lint-ok: allocated by jansson */
  json_decref(j);
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
  memset(t, 0, sizeof *t);
  tm_kv_init(&t->config);
}
