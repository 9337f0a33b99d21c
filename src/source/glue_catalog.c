/*
 * glue_catalog.c - AWS Glue Data Catalog client (source
 * layer; HTTP through objstore/fetch.h). See glue_catalog.h.
 */
#include "source/glue_catalog.h"

#include <jansson.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "objstore/fetch.h"
#include "objstore/sigv4.h"
#include "util/alloc.h"
#include "util/buf.h"

#define GLUE_BODY_LIMIT ((size_t)16 << 20)
#define GLUE_MAX_PAGES 1000

/* Glue's error types that mean the caller's identity or rights are wrong. */
static bool is_auth_error(const char *type) {
  static const char *const k[] = {"AccessDeniedException", "UnrecognizedClientException",
                                  "InvalidSignatureException", "IncompleteSignature",
                                  "MissingAuthenticationTokenException", "MissingAuthenticationToken",
                                  "ExpiredTokenException", "InvalidClientTokenId",
                                  "SignatureDoesNotMatch", NULL};
  for (size_t i = 0; k[i]; i++)
    if (strcmp(type, k[i]) == 0) return true;
  return false;
}

/* Errors worth retrying later. */
static bool is_transient_error(const char *type) {
  static const char *const k[] = {"ThrottlingException", "InternalServiceException",
                                  "OperationTimeoutException", "ServiceUnavailableException",
                                  "ConcurrentModificationException", NULL};
  for (size_t i = 0; k[i]; i++)
    if (strcmp(type, k[i]) == 0) return true;
  return false;
}

/* "__type" may be "com.amazonaws.glue#EntityNotFoundException" or "...:http://..." : the name. */
static void error_type(const char *raw, char *out, size_t cap) {
  const char *s = strrchr(raw, '#');
  s = s ? s + 1 : raw;
  size_t n = strcspn(s, ":");
  snprintf(out, cap, "%.*s", (int)n, s);
}

/* The endpoint's scheme, authority ("host[:port]") and base path, checked. */
static int split_endpoint(const char *url, bool *https, char *authority, size_t acap,
                          tm_error *err) {
  const char *rest;
  if (tm_str_has_prefix(url, "https://")) {
    *https = true;
    rest = url + 8;
  } else if (tm_str_has_prefix(url, "http://")) {
    *https = false;
    rest = url + 7;
  } else {
    return tm_error_set(err, TM_EINVALID, "glue_endpoint '%s': expected http(s)://HOST[:PORT]", url);
  }
  size_t n = strcspn(rest, "/?#");
  if (n == 0 || n >= acap || (rest[n] && strcmp(rest + n, "/") != 0))
    return tm_error_set(err, TM_EINVALID, "glue_endpoint '%s': expected http(s)://HOST[:PORT] "
                        "with no path", url);
  memcpy(authority, rest, n);
  authority[n] = '\0';
  return TM_OK;
}

/*
 * One call: POST / with the JSON body, signed. On success *out holds the
 * parsed response (json_decref). what names the call in messages.
 */
static int call(const tm_glue_options *o, const char *op, json_t *req, json_t **out,
                tm_error *err) {
  *out = NULL;
  if (!o->region || !*o->region) return tm_error_set(err, TM_EINVALID, "glue: no region (glue_region)");
  if (!o->access_key || !*o->access_key || !o->secret_key || !*o->secret_key)
    return tm_error_set(err, TM_EINVALID, "glue: no credentials (glue_key, glue_secret)");
  char authority[512], url[600], target[96], amz_date[17], hash[TM_SHA256_HEX_LEN + 1];
  bool https = true;
  if (o->endpoint) {
    TM_TRY(split_endpoint(o->endpoint, &https, authority, sizeof authority, err));
  } else {
    snprintf(authority, sizeof authority, "glue.%s.amazonaws.com", o->region);
  }
  snprintf(url, sizeof url, "%s://%s/", https ? "https" : "http", authority);
  snprintf(target, sizeof target, "AWSGlue.%s", op);
  tm_sigv4_amz_date(amz_date, (int64_t)time(NULL));
  char *body = json_dumps(req, JSON_COMPACT);
  if (!body) return tm_error_nomem(err);
  size_t body_len = strlen(body);
  tm_buf auth = TM_BUF_INIT(1 << 14), resp = TM_BUF_INIT(GLUE_BODY_LIMIT);
  char *lines[7] = {0}; /* header lines, NULL-terminated */
  json_t *j = NULL;
  int rc;
  TM_CHECK(tm_sha256_hex(hash, body, body_len, err));
  tm_sigv4_kv h[5] = {{"Content-Type", "application/x-amz-json-1.1"},
                      {"Host", authority},
                      {"X-Amz-Date", amz_date},
                      {"X-Amz-Target", target},
                      {"X-Amz-Security-Token", o->session_token}};
  size_t n_h = o->session_token && *o->session_token ? 5 : 4;
  tm_sigv4_request sr = {"POST", "/", NULL, 0, h, n_h, hash, amz_date, o->region, "glue",
                         o->access_key, o->secret_key};
  TM_CHECK(tm_sigv4_authorization(&auth, NULL, &sr, err));
  for (size_t i = 0; i < n_h; i++) {
    if (!(lines[i] = tm_asprintf("%s: %s", h[i].name, h[i].value))) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  if (!(lines[n_h] = tm_asprintf("Authorization: %s", tm_buf_cstr(&auth)))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  tm_fetch_req fr = {"POST", url, (const char *const *)lines, body, body_len, o->timeout_ms, 0};
  long status = 0;
  tm_error ferr;
  tm_error_init(&ferr);
  rc = tm_fetch(&fr, &status, &resp, &ferr);
  if (rc != TM_OK) {
    /* ferr starts with the URL: word it as the other glue errors are, "glue OP at URL: …". */
    rc = tm_error_set(err, rc, "glue %s at %s", op, ferr.message);
    goto done;
  }
  json_error_t jerr;
  j = resp.len ? json_loadb(resp.ptr, resp.len, 0, &jerr) : NULL;
  if (status == 200) {
    if (!json_is_object(j)) {
      rc = TM_CORRUPT(err, "glue %s at %s: the response is not a JSON object", op, url);
      goto done;
    }
    *out = j;
    j = NULL;
    rc = TM_OK;
    goto done;
  }
  char type[128] = "", msg[512] = "";
  const char *t = json_string_value(json_object_get(j, "__type"));
  const char *m = json_string_value(json_object_get(j, "Message"));
  if (!m) m = json_string_value(json_object_get(j, "message"));
  if (t) error_type(t, type, sizeof type);
  if (m) snprintf(msg, sizeof msg, "%s", m);
  else if (!j && resp.len) snprintf(msg, sizeof msg, "%.*s", (int)(resp.len > 200 ? 200 : resp.len), resp.ptr);
  const char *sep = type[0] ? " " : "";
  if (strcmp(type, "EntityNotFoundException") == 0) {
    rc = tm_error_set(err, TM_ENOTFOUND, "glue %s: not found (%s): %s", op, type, msg);
  } else if (is_auth_error(type) || status == 401 || status == 403) {
    rc = tm_error_set(err, TM_EINVALID, "glue %s at %s: authentication failed (HTTP %ld%s%s): %s "
                      "(check glue_key, glue_secret, glue_session_token and glue_region)", op, url,
                      status, sep, type, msg);
  } else if (is_transient_error(type) || status >= 500 || status == 429) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "glue %s at %s: catalog error (HTTP %ld%s%s): %s", op,
                      url, status, sep, type, msg);
  } else {
    rc = tm_error_set(err, TM_EINVALID, "glue %s at %s: request refused (HTTP %ld%s%s): %s", op,
                      url, status, sep, type, msg);
  }
done:
  json_decref(j);
  for (size_t i = 0; i < 7; i++) tm_free(lines[i]);
  free(body); /* lint-ok: allocated by jansson */
  tm_buf_dispose(&auth);
  tm_buf_dispose(&resp);
  return rc;
}

static json_t *request_object(const tm_glue_options *o) {
  json_t *r = json_object();
  if (r && o->catalog_id && *o->catalog_id &&
      json_object_set_new(r, "CatalogId", json_string(o->catalog_id)) < 0) {
    json_decref(r);
    return NULL;
  }
  return r;
}

static int set_str(json_t *obj, const char *key, const char *value, tm_error *err) {
  json_t *v = json_string(value);
  if (!v || json_object_set_new(obj, key, v) < 0) return tm_error_nomem(err);
  return TM_OK;
}

/* An owned copy of obj[key] when it is a string (NULL otherwise). */
static int copy_str(json_t *obj, const char *key, char **out, tm_error *err) {
  const char *v = json_string_value(json_object_get(obj, key));
  *out = NULL;
  if (!v) return TM_OK;
  *out = tm_strdup(v);
  return *out ? TM_OK : tm_error_nomem(err);
}

static int copy_map(json_t *obj, tm_kv *out, tm_error *err) {
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    if (json_is_string(v)) TM_TRY(tm_kv_set(out, k, json_string_value(v), err));
  }
  return TM_OK;
}

void tm_glue_table_dispose(tm_glue_table *t) {
  tm_free(t->database);
  tm_free(t->name);
  tm_free(t->table_type);
  tm_free(t->metadata_location);
  tm_free(t->classification);
  tm_free(t->location);
  tm_free(t->input_format);
  tm_free(t->serde);
  tm_kv_dispose(&t->serde_params);
  tm_kv_dispose(&t->params);
  memset(t, 0, sizeof *t);
}

bool tm_glue_table_is_iceberg(const tm_glue_table *t) {
  return t->table_type && strcasecmp(t->table_type, "ICEBERG") == 0;
}

int tm_glue_parse_name(const char *from, char **db_out, char **table_out, tm_error *err) {
  const char *s = tm_str_has_prefix(from, "glue:") ? from + 5 : from;
  const char *dot = strchr(s, '.');
  if (!dot || dot == s || !dot[1] || strchr(s, '/'))
    return tm_error_set(err, TM_EINVALID, "'%s': expected glue:DATABASE.TABLE", from);
  *db_out = tm_strndup(s, (size_t)(dot - s));
  *table_out = tm_strdup(dot + 1);
  if (!*db_out || !*table_out) {
    tm_free(*db_out);
    tm_free(*table_out);
    return tm_error_nomem(err);
  }
  return TM_OK;
}

int tm_glue_list_names(const tm_glue_options *o, const char *db, size_t max_names, tm_kv *names,
                       bool *more, tm_error *err) {
  const char *op = db ? "GetTables" : "GetDatabases";
  const char *list_key = db ? "TableList" : "DatabaseList";
  char *token = NULL;
  int rc = TM_OK;
  *more = false;
  for (int page = 0; rc == TM_OK; page++) {
    if (page == GLUE_MAX_PAGES) {
      rc = tm_error_set(err, TM_ETOOLARGE, "glue %s: more than %d pages", op, GLUE_MAX_PAGES);
      break;
    }
    json_t *req = request_object(o), *resp = NULL;
    if (!req) {
      rc = tm_error_nomem(err);
      break;
    }
    if (db) rc = set_str(req, "DatabaseName", db, err);
    if (rc == TM_OK && token) rc = set_str(req, "NextToken", token, err);
    if (rc == TM_OK) rc = call(o, op, req, &resp, err);
    json_decref(req);
    if (rc < 0) break;
    json_t *list = json_object_get(resp, list_key);
    if (list && !json_is_array(list)) rc = TM_CORRUPT(err, "glue %s: %s is not a list", op, list_key);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
      if (rc < 0) break;
      const char *name = json_string_value(json_object_get(item, "Name"));
      if (!name) {
        rc = TM_CORRUPT(err, "glue %s: an entry of %s has no Name", op, list_key);
      } else if (names->len >= max_names) {
        *more = true;
      } else {
        rc = tm_kv_set(names, name, "", err);
      }
    }
    const char *next = json_string_value(json_object_get(resp, "NextToken"));
    if (rc == TM_OK && next && *next && token && strcmp(next, token) == 0)
      rc = TM_CORRUPT(err, "glue %s: the catalog repeated page token '%s'", op, next);
    tm_free(token);
    token = NULL;
    if (rc == TM_OK && next && *next && !(token = tm_strdup(next))) rc = tm_error_nomem(err);
    json_decref(resp);
    if (!token) break;
  }
  tm_free(token);
  return rc;
}

/* Appends " (NOUN: a, b, c, ...)" to a not-found message, when the catalog answers. */
static void add_hint(const tm_glue_options *o, const char *db, tm_error *err) {
  if (!err) return;
  tm_kv names;
  tm_kv_init(&names);
  bool more = false;
  tm_error quiet;
  tm_error_init(&quiet);
  if (tm_glue_list_names(o, db, 20, &names, &more, &quiet) == TM_OK) {
    tm_buf b = TM_BUF_INIT(4096);
    int rc = TM_OK;
    for (size_t i = 0; rc == TM_OK && i < names.len; i++)
      rc = tm_buf_printf(&b, NULL, "%s%s", i ? ", " : "", names.items[i].key);
    if (rc == TM_OK && more) rc = tm_buf_puts(&b, ", ...", NULL);
    if (rc == TM_OK) {
      const char *noun = db ? "its tables" : "the catalog's databases";
      char *msg = tm_asprintf("%s (%s: %s)", err->message, noun, names.len ? tm_buf_cstr(&b) : "none");
      if (msg) {
        snprintf(err->message, sizeof err->message, "%s", msg);
        tm_free(msg);
      }
    }
    tm_buf_dispose(&b);
  }
  tm_kv_dispose(&names);
}

/* Fills out (initialised) from a GetTable response; disposes it on error. */
static int table_from_json(json_t *resp, tm_glue_table *out, tm_error *err) {
  json_t *t = json_object_get(resp, "Table");
  if (!json_is_object(t)) return TM_CORRUPT(err, "the response has no Table object");
  json_t *params = json_object_get(t, "Parameters");
  json_t *sd = json_object_get(t, "StorageDescriptor");
  json_t *serde = json_object_get(sd, "SerdeInfo");
  int rc = copy_str(t, "DatabaseName", &out->database, err);
  if (rc == TM_OK) rc = copy_str(t, "Name", &out->name, err);
  if (rc == TM_OK) rc = copy_str(params, "table_type", &out->table_type, err);
  if (rc == TM_OK) rc = copy_str(params, "metadata_location", &out->metadata_location, err);
  if (rc == TM_OK) rc = copy_str(params, "classification", &out->classification, err);
  if (rc == TM_OK) rc = copy_str(sd, "Location", &out->location, err);
  if (rc == TM_OK) rc = copy_str(sd, "InputFormat", &out->input_format, err);
  if (rc == TM_OK) rc = copy_str(serde, "SerializationLibrary", &out->serde, err);
  if (rc == TM_OK) rc = copy_map(json_object_get(serde, "Parameters"), &out->serde_params, err);
  if (rc == TM_OK) rc = copy_map(params, &out->params, err);
  if (rc < 0) tm_glue_table_dispose(out);
  return rc;
}

int tm_glue_get_table(const tm_glue_options *o, const char *db, const char *table,
                      tm_glue_table *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->serde_params);
  tm_kv_init(&out->params);
  json_t *req = request_object(o), *resp = NULL;
  if (!req) return tm_error_nomem(err);
  int rc = set_str(req, "DatabaseName", db, err);
  if (rc == TM_OK) rc = set_str(req, "Name", table, err);
  if (rc == TM_OK) rc = call(o, "GetTable", req, &resp, err);
  json_decref(req);
  if (rc == TM_ENOTFOUND) {
    /* Which one is missing: the table (GetTables answers) or the database. */
    tm_kv names;
    tm_kv_init(&names);
    bool more;
    tm_error probe;
    tm_error_init(&probe);
    int lr = tm_glue_list_names(o, db, 1, &names, &more, &probe);
    tm_kv_dispose(&names);
    if (lr == TM_ENOTFOUND) {
      tm_error_set(err, TM_ENOTFOUND, "glue: database '%s' not found", db);
      add_hint(o, NULL, err);
    } else {
      tm_error_set(err, TM_ENOTFOUND, "glue: table '%s' not found in database '%s'", table, db);
      if (lr == TM_OK) add_hint(o, db, err);
    }
    return TM_ENOTFOUND;
  }
  if (rc < 0) return rc;
  rc = table_from_json(resp, out, err);
  json_decref(resp);
  if (rc < 0) return tm_error_prefix(err, "glue GetTable %s.%s", db, table);
  return TM_OK;
}

int tm_glue_parse_table(const char *json, size_t len, tm_glue_table *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_kv_init(&out->serde_params);
  tm_kv_init(&out->params);
  json_error_t jerr;
  json_t *j = json_loadb(json, len, 0, &jerr);
  if (!j) return TM_CORRUPT(err, "not JSON: %s (line %d)", jerr.text, jerr.line);
  int rc = table_from_json(j, out, err);
  json_decref(j);
  return rc;
}
