/*
 * sqlreq.c - the Accept header and the JSON body of POST /v1/sql (runtime
 * layer; SPEC 1.3, D4). See sqlreq.h.
 *
 * Both read untrusted bytes. The Accept header is walked once, range by
 * range, without allocating; the body (already capped by the route's limit)
 * is parsed by jansson with duplicate keys refused, and every value is
 * checked for its type before it is copied into a tm_sql_params.
 */
#include "runtime/query/sqlreq.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/str.h"

/* ---- Accept ------------------------------------------------------------------------ */

/* The formats in the server's order of preference (the tie-break of a wildcard). */
static const tm_sqlreq_media k_media[] = {
    {"application/json", TM_OUT_JSON, "application/json"},
    {"text/plain", TM_OUT_TABLE, "text/plain; charset=utf-8"},
    {"text/csv", TM_OUT_CSV, "text/csv; charset=utf-8"},
    {"application/vnd.spiceai.sql.v1+json", TM_OUT_SPICE_V1,
     "application/vnd.spiceai.sql.v1+json"},
    {"application/x-ndjson", TM_OUT_JSONL, "application/x-ndjson"},
    {"application/jsonl", TM_OUT_JSONL, "application/x-ndjson"},
};
#define N_MEDIA (sizeof k_media / sizeof k_media[0])

const char *tm_sqlreq_supported(void) {
  return "application/json, text/plain, text/csv, application/vnd.spiceai.sql.v1+json, "
         "application/x-ndjson, application/jsonl";
}

/* How well a range (type/subtype) matches a media type: 3 exact, 2 type/ *, 1 * / *, 0
 * not. */
static int specificity(tm_strview range, const char *media) {
  if (tm_sv_eq_nocase(range, media)) return 3;
  if (tm_sv_eq_cstr(range, "*/*")) return 1;
  const char *slash = strchr(media, '/');
  size_t tl = (size_t)(slash - media);
  if (range.len == tl + 2 && strncasecmp(range.ptr, media, tl) == 0 &&
      range.ptr[tl] == '/' && range.ptr[tl + 1] == '*')
    return 2;
  return 0;
}

/* The q of a range's parameters ("; q=0.5; level=1"): 1 without one, 0 when malformed. */
static double range_q(tm_strview params) {
  double q = 1;
  size_t i = 0;
  while (i < params.len) {
    size_t j = i;
    while (j < params.len && params.ptr[j] != ';') j++;
    tm_strview p = tm_sv_trim(tm_sv(params.ptr + i, j - i));
    if (p.len >= 2 && (p.ptr[0] == 'q' || p.ptr[0] == 'Q')) {
      tm_strview rest = tm_sv_trim(tm_sv(p.ptr + 1, p.len - 1));
      if (rest.len >= 1 && rest.ptr[0] == '=') {
        tm_strview v = tm_sv_trim(tm_sv(rest.ptr + 1, rest.len - 1));
        if (tm_parse_double(v.ptr, v.len, &q) != TM_OK || !(q >= 0 && q <= 1)) q = 0;
      }
    }
    i = j + 1;
  }
  return q;
}

const tm_sqlreq_media *tm_sqlreq_negotiate(const char *accept) {
  /* Per format: the q, specificity and position of its most specific matching range. */
  double q[N_MEDIA];
  int spec[N_MEDIA];
  size_t pos[N_MEDIA];
  for (size_t m = 0; m < N_MEDIA; m++) {
    q[m] = 0;
    spec[m] = 0;
    pos[m] = 0;
  }
  size_t n_ranges = 0;
  const char *p = accept ? accept : "";
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    tm_strview item = tm_sv_trim(tm_sv(p, n));
    const char *semi = item.len ? memchr(item.ptr, ';', item.len) : NULL;
    size_t tl = semi ? (size_t)(semi - item.ptr) : item.len;
    tm_strview range = tm_sv_trim(tm_sv(item.ptr, tl));
    if (range.len && memchr(range.ptr, '/', range.len)) {
      double rq = range_q(semi ? tm_sv(semi + 1, item.len - tl - 1) : tm_sv("", 0));
      for (size_t m = 0; m < N_MEDIA; m++) {
        int s = specificity(range, k_media[m].type);
        if (s > spec[m]) {
          spec[m] = s;
          q[m] = rq;
          pos[m] = n_ranges;
        }
      }
      n_ranges++;
    }
    if (!end) break;
    p = end + 1;
  }
  if (n_ranges == 0) return &k_media[0];
  const tm_sqlreq_media *best = NULL;
  size_t b = 0;
  for (size_t m = 0; m < N_MEDIA; m++) {
    if (spec[m] == 0 || q[m] <= 0) continue;
    bool better = !best || q[m] > q[b] || (q[m] == q[b] && spec[m] > spec[b]) ||
                  (q[m] == q[b] && spec[m] == spec[b] && pos[m] < pos[b]);
    if (better) {
      best = &k_media[m];
      b = m;
    }
  }
  return best;
}

bool tm_sqlreq_is_json(const char *content_type) {
  if (!content_type) return false;
  const char *semi = strchr(content_type, ';');
  tm_strview t = tm_sv_trim(
      tm_sv(content_type, semi ? (size_t)(semi - content_type) : strlen(content_type)));
  return tm_sv_eq_nocase(t, "application/json");
}

/* ---- the JSON body ----------------------------------------------------------------- */

#define BODY_FORM "{\"sql\": \"...\", \"parameters\": [...] or {...}}"

/* Copies one JSON value into v; label names it in errors ("parameters[2]",
 * "parameters.id"). */
static int read_value(const json_t *j, tm_sql_param *v, const char *label,
                      tm_error *err) {
  switch (json_typeof(j)) {
    case JSON_NULL:
      v->kind = TM_SQL_PARAM_NULL;
      return TM_OK;
    case JSON_TRUE:
    case JSON_FALSE:
      v->kind = TM_SQL_PARAM_BOOL;
      v->b = json_is_true(j);
      return TM_OK;
    case JSON_INTEGER:
      v->kind = TM_SQL_PARAM_INT;
      v->i = (int64_t)json_integer_value(j);
      return TM_OK;
    case JSON_REAL:
      v->kind = TM_SQL_PARAM_DOUBLE;
      v->d = json_real_value(j);
      return TM_OK;
    case JSON_STRING: {
      size_t n = json_string_length(j);
      v->kind = TM_SQL_PARAM_TEXT;
      if (!(v->text = tm_malloc(n + 1))) return tm_error_nomem(err);
      memcpy(v->text, json_string_value(j), n);
      v->text[n] = '\0';
      v->text_len = n;
      return TM_OK;
    }
    default:
      return tm_error_set(
          err, TM_EINVALID,
          "%s: nested arrays or objects are not supported as parameter values", label);
  }
}

static int read_params(const json_t *j, tm_sql_params *out, tm_error *err) {
  bool named = json_is_object(j);
  if (!named && !json_is_array(j))
    return tm_error_set(
        err, TM_EINVALID,
        "\"parameters\" must be an array (positional values) or an object "
        "(named values)");
  size_t n = named ? json_object_size(j) : json_array_size(j);
  if (n > TM_SQL_PARAMS_MAX)
    return tm_error_set(err, TM_EINVALID, "\"parameters\" holds %zu values: at most %d",
                        n, TM_SQL_PARAMS_MAX);
  out->named = named;
  if (n == 0) return TM_OK;
  if (!(out->items = tm_calloc(n, sizeof *out->items))) return tm_error_nomem(err);
  char label[96];
  if (named) {
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)j, key, v) {
      tm_sql_param *p = &out->items[out->n++];
      snprintf(label, sizeof label, "parameter '%.64s'", key);
      if (!(p->name = tm_strdup(key))) return tm_error_nomem(err);
      TM_TRY(read_value(v, p, label, err));
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      tm_sql_param *p = &out->items[out->n++];
      snprintf(label, sizeof label, "parameter %zu ($%zu)", i + 1, i + 1);
      TM_TRY(read_value(json_array_get(j, i), p, label, err));
    }
  }
  return TM_OK;
}

int tm_sqlreq_parse_json(const char *body, size_t len, char **sql_out,
                         tm_sql_params *params, bool *bind_out, tm_error *err) {
  memset(params, 0, sizeof *params);
  json_error_t je;
  json_t *doc =
      json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
  char *sql = NULL;
  const json_t *jp = NULL;
  int rc = TM_OK;
  if (!doc) {
    bool big = strstr(je.text, "too big") != NULL;
    rc = tm_error_set(
        err, TM_EINVALID,
        "the body is not valid JSON (Content-Type: application/json): %s at line %d, "
        "column %d%s",
        je.text, je.line, je.column,
        big ? "; an integer must fit in 64 bits: send a larger one as a string or "
              "with a decimal point"
            : "");
    goto done;
  }
  if (!json_is_object(doc)) {
    rc = tm_error_set(err, TM_EINVALID, "the JSON body must be an object: " BODY_FORM);
    goto done;
  }
  const char *key;
  json_t *v;
  json_object_foreach(doc, key, v) {
    if (strcmp(key, "sql") == 0) {
      if (!json_is_string(v)) {
        rc = tm_error_set(err, TM_EINVALID, "\"sql\" must be a string");
        goto done;
      }
    } else if (strcmp(key, "parameters") == 0) {
      jp = v;
    } else {
      rc = tm_error_set(err, TM_EINVALID,
                        "unknown key '%.64s' in the JSON body (allowed: sql, "
                        "parameters)",
                        key);
      goto done;
    }
  }
  const json_t *js = json_object_get(doc, "sql");
  if (!js) {
    rc = tm_error_set(err, TM_EINVALID, "the JSON body has no \"sql\": " BODY_FORM);
    goto done;
  }
  /* jansson refuses \u0000 in strings: the text has no NUL. */
  size_t n = json_string_length(js);
  if (!(sql = tm_malloc(n + 1))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  memcpy(sql, json_string_value(js), n);
  sql[n] = '\0';
  if (jp) rc = read_params(jp, params, err);
done:
  json_decref(doc);
  if (rc != TM_OK) {
    tm_free(sql);
    tm_sql_params_dispose(params);
    return rc;
  }
  *sql_out = sql;
  *bind_out = jp != NULL;
  return TM_OK;
}
