/*
 * routes.c - the HTTP API of SPEC 1.3 and the metrics endpoint of SPEC 1.4
 * (runtime layer). The route table is the one place that lists them;
 * docs/HTTP_API.md documents each with examples. POST /v1/sql is query.c.
 */
#include <string.h>
#include <strings.h>

#include "runtime/http/http.h"
#include "runtime/runtime_int.h"
#include "runtime/status.h"
#include "util/log.h"
#include "util/time.h"

#define REFRESH_BODY_LIMIT ((size_t)64 << 10)

static void h_health(void *app, tm_http_request *req, tm_http_reply *rep) {
  (void)req;
  /* DuckDB stopped for good: the process serves nothing any more and must restart. */
  if (tm_runtime_fatal(app, NULL, 0)) tm_http_reply_text(rep, 503, "failed: DuckDB stopped, restart");
  else tm_http_reply_text(rep, 200, "ok");
}

/* C1: ready only when every dataset is. */
static void h_ready(void *app, tm_http_request *req, tm_http_reply *rep) {
  (void)req;
  if (tm_runtime_ready(app)) tm_http_reply_text(rep, 200, "ready");
  else tm_http_reply_text(rep, 503, "not ready");
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static int put_csv_field(tm_buf *b, const char *v, bool last, tm_error *err) {
  bool quote = strpbrk(v, ",\"\r\n") != NULL;
  int rc = quote ? tm_buf_putc(b, '"', err) : TM_OK;
  for (const char *p = v; rc == TM_OK && *p; p++) {
    if (*p == '"') rc = tm_buf_putc(b, '"', err);
    if (rc == TM_OK) rc = tm_buf_putc(b, *p, err);
  }
  if (rc == TM_OK && quote) rc = tm_buf_putc(b, '"', err);
  if (rc == TM_OK) rc = tm_buf_putc(b, last ? '\n' : ',', err);
  return rc;
}

/*
 * GET /v1/datasets as Spice shapes it: from, name, replication_enabled
 * (tidemark replicates nothing: false) and acceleration_enabled, plus status
 * with ?status=true; ?source=CONNECTOR keeps the datasets whose `from` starts
 * with CONNECTOR: ("file", "s3", "iceberg"); ?format=csv.
 */
static void h_datasets(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  const char *st = tm_http_query_arg(req, "status");
  const char *fmt = tm_http_query_arg(req, "format");
  const char *source = tm_http_query_arg(req, "source");
  if (st && strcmp(st, "true") != 0 && strcmp(st, "false") != 0) {
    tm_http_reply_message(rep, 400, "bad status '%s' (allowed: true, false)", st);
    return;
  }
  if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "csv") != 0) {
    tm_http_reply_message(rep, 400, "bad format '%s' (allowed: json, csv)", fmt);
    return;
  }
  bool with_status = st && strcmp(st, "true") == 0;
  bool csv = fmt && strcmp(fmt, "csv") == 0;
  tm_error err;
  tm_error_init(&err);
  json_t *arr = csv ? NULL : json_array();
  int rc = csv || arr ? TM_OK : tm_error_nomem(&err);
  if (csv) {
    tm_buf_clear(&rep->body);
    rc = tm_buf_puts(&rep->body, with_status ? "from,name,replication_enabled,acceleration_enabled,status\n"
                                             : "from,name,replication_enabled,acceleration_enabled\n", &err);
  }
  for (size_t i = 0; rc == TM_OK && i < rt->n_ds; i++) {
    tm_rt_dataset *ds = &rt->ds[i];
    const char *from = ds->def->from;
    size_t n = source ? strlen(source) : 0;
    if (source && !(strncmp(from, source, n) == 0 && from[n] == ':')) continue;
    const char *status = tm_rt__status_name(rt, ds);
    if (csv) {
      rc = put_csv_field(&rep->body, from, false, &err);
      if (rc == TM_OK) rc = put_csv_field(&rep->body, ds->def->name, false, &err);
      if (rc == TM_OK) rc = put_csv_field(&rep->body, "false", false, &err);
      if (rc == TM_OK)
        rc = put_csv_field(&rep->body, ds->accelerated ? "true" : "false", !with_status, &err);
      if (rc == TM_OK && with_status) rc = put_csv_field(&rep->body, status, true, &err);
      continue;
    }
    json_t *o = json_pack("{s:o, s:o, s:b, s:b}", "from", tm_json_text(from), "name",
                          tm_json_text(ds->def->name), "replication_enabled", 0,
                          "acceleration_enabled", ds->accelerated);
    if (o && with_status && json_object_set_new(o, "status", json_string(status)) != 0) {
      json_decref(o);
      o = NULL;
    }
    if (!o || json_array_append_new(arr, o) != 0) rc = tm_error_nomem(&err);
  }
  if (rc != TM_OK) {
    json_decref(arr);
    tm_http_reply_message(rep, 500, "%s", err.message);
  } else if (csv) {
    rep->status = 200;
    rep->content_type = "text/csv; charset=utf-8";
  } else {
    tm_http_reply_json(rep, 200, arr);
  }
}

/*
 * Spice's GET /v1/status: the runtime's endpoints, each with its state as a
 * component status. tidemark has no Flight or OpenTelemetry endpoint: they
 * are listed as Spice lists a disabled one. ?format=csv as in Spice.
 */
static void h_status(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  const char *fmt = tm_http_query_arg(req, "format");
  if (fmt && strcmp(fmt, "json") != 0 && strcmp(fmt, "csv") != 0) {
    tm_http_reply_message(rep, 400, "bad format '%s' (allowed: json, csv)", fmt);
    return;
  }
  char http[sizeof rt->http_endpoint], metrics[sizeof rt->metrics_endpoint];
  pthread_mutex_lock(&rt->mu);
  memcpy(http, rt->http_endpoint, sizeof http);
  memcpy(metrics, rt->metrics_endpoint, sizeof metrics);
  pthread_mutex_unlock(&rt->mu);
  struct {
    const char *name, *endpoint, *status;
  } rows[] = {
      {"http", http[0] ? http : "N/A", "Ready"},
      {"flight", "N/A", "Disabled"},
      {"metrics", metrics[0] ? metrics : "N/A", metrics[0] ? "Ready" : "Disabled"},
      {"opentelemetry", "N/A", "Disabled"},
  };
  size_t n = sizeof rows / sizeof rows[0];
  if (fmt && strcmp(fmt, "csv") == 0) {
    tm_error err;
    tm_error_init(&err);
    tm_buf_clear(&rep->body);
    int rc = tm_buf_puts(&rep->body, "name,endpoint,status\n", &err);
    for (size_t i = 0; rc == TM_OK && i < n; i++)
      rc = tm_buf_printf(&rep->body, &err, "%s,%s,%s\n", rows[i].name, rows[i].endpoint,
                         rows[i].status);
    if (rc != TM_OK) {
      tm_http_reply_message(rep, 500, "%s", err.message);
      return;
    }
    rep->status = 200;
    rep->content_type = "text/csv; charset=utf-8";
    return;
  }
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++) {
    json_t *o = json_pack("{s:s, s:s, s:s}", "name", rows[i].name, "endpoint", rows[i].endpoint,
                          "status", rows[i].status);
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  }
  if (!arr) tm_http_reply_message(rep, 500, "out of memory");
  else tm_http_reply_json(rep, 200, arr);
}

/* The dataset named by the path, or a 404 reply. */
static tm_rt_dataset *path_dataset(tm_runtime *rt, tm_http_request *req, tm_http_reply *rep) {
  tm_rt_dataset *ds = tm_rt__find(rt, req->param);
  if (!ds) tm_http_reply_message(rep, 404, "no dataset named '%s'", req->param);
  return ds;
}

static void h_acceleration(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  tm_rt_dataset *ds = path_dataset(rt, req, rep);
  if (!ds) return;
  if (!ds->accelerated) {
    tm_http_reply_message(rep, 404, "dataset '%s' is federated: it has no acceleration",
                          ds->def->name);
    return;
  }
  tm_accel *a = tm_rt__accel(rt, ds);
  json_t *o = tm_status_json(a, ds->def, tm_rt__status_name(rt, ds));
  if (!o) {
    tm_http_reply_message(rep, 500, "out of memory");
    return;
  }
  pthread_mutex_lock(&rt->mu);
  if (ds->load_failed) {
    json_t *le = json_object();
    json_object_set_new(le, "message", tm_json_text(ds->load_error));
    json_object_set_new(o, "last_error", le);
  }
  json_t *snap = json_null();
  if (ds->snapshot_key || ds->snapshot_error[0]) {
    snap = json_object();
    json_object_set_new(snap, "key", ds->snapshot_key ? tm_json_text(ds->snapshot_key) : json_null());
    if (ds->snapshot_key && ds->snapshot_ms >= 0) tm_status_set_time(snap, "taken_at", ds->snapshot_ms);
    json_object_set_new(snap, "bootstrapped", json_boolean(ds->bootstrapped));
    json_object_set_new(snap, "error",
                        ds->snapshot_error[0] ? tm_json_text(ds->snapshot_error) : json_null());
  }
  pthread_mutex_unlock(&rt->mu);
  json_object_set_new(o, "acceleration_snapshot", snap);
  tm_http_reply_json(rep, 200, o);
}

/*
 * The request's body as a JSON object (an empty body: none, *out NULL), or a
 * 400 reply naming the problem; what names the keys expected, for messages.
 */
static bool body_object(tm_http_request *req, tm_http_reply *rep, const char *what, json_t **out) {
  *out = NULL;
  const char *text = tm_buf_cstr(&req->body);
  size_t i = 0;
  while (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') i++;
  if (!text[i]) return true;
  json_error_t jerr;
  json_t *body = json_loadb(req->body.ptr, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
  if (!body) {
    tm_http_reply_message(rep, 400, "malformed JSON body at line %d, column %d: %s", jerr.line,
                          jerr.column, jerr.text);
    return false;
  }
  if (!json_is_object(body)) {
    json_decref(body);
    tm_http_reply_message(rep, 400, "the body must be a JSON object: %s", what);
    return false;
  }
  *out = body;
  return true;
}

/* Whether sql starts with SELECT or WITH (a refresh_sql reads; SPEC A10). */
static bool looks_like_select(const char *sql) {
  while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r' || *sql == '(') sql++;
  return strncasecmp(sql, "SELECT", 6) == 0 || strncasecmp(sql, "WITH", 4) == 0;
}

static void h_refresh(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  tm_rt_dataset *ds = path_dataset(rt, req, rep);
  if (!ds) return;
  const tm_dataset_def *d = ds->def;
  if (!ds->accelerated) {
    tm_http_reply_message(rep, 400, "dataset '%s' has no acceleration to refresh", d->name);
    return;
  }
  pthread_mutex_lock(&rt->mu);
  bool failed = ds->load_failed;
  pthread_mutex_unlock(&rt->mu);
  if (failed) {
    tm_http_reply_message(rep, 400, "dataset '%s' did not load: %s", d->name, ds->load_error);
    return;
  }
  bool full = false;
  const char *sql = NULL;
  int64_t jitter_ms = -1; /* the dataset's refresh_jitter_* */
  json_t *body = NULL;
  if (!body_object(req, rep, "{\"refresh_sql\": ..., \"refresh_mode\": ...}", &body)) return;
  if (body) {
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
      if (strcmp(key, "refresh_sql") == 0) {
        if (json_is_null(v)) continue;
        if (!json_is_string(v) || !looks_like_select(json_string_value(v))) {
          tm_http_reply_message(rep, 400, "refresh_sql must be a SELECT statement (a string)");
          json_decref(body);
          return;
        }
        sql = json_string_value(v);
      } else if (strcmp(key, "refresh_mode") == 0) {
        if (json_is_null(v)) continue;
        const char *m = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(m, "full") == 0) {
          full = true;
        } else if (strcmp(m, "append") == 0) {
          if (d->acceleration.refresh_mode != TM_REFRESH_APPEND) {
            tm_http_reply_message(rep, 400,
                                  "dataset '%s' refreshes in %s mode; an append refresh needs "
                                  "refresh_mode: append in the config",
                                  d->name, tm_refresh_mode_name(d->acceleration.refresh_mode));
            json_decref(body);
            return;
          }
        } else {
          tm_http_reply_message(rep, 400, "bad refresh_mode (allowed: full, append)");
          json_decref(body);
          return;
        }
      } else if (strcmp(key, "refresh_jitter_max") == 0) {
        if (json_is_null(v)) continue;
        tm_error derr;
        tm_error_init(&derr);
        if (!json_is_string(v) ||
            tm_duration_parse(json_string_value(v), &jitter_ms, &derr) != TM_OK) {
          tm_http_reply_message(rep, 400, "refresh_jitter_max must be a duration string such as "
                                          "\"10s\"%s%s", derr.message[0] ? ": " : "", derr.message);
          json_decref(body);
          return;
        }
      } else {
        tm_http_reply_message(rep, 400, "unknown key '%s' (allowed: refresh_sql, refresh_mode, "
                                        "refresh_jitter_max)", key);
        json_decref(body);
        return;
      }
    }
  }
  tm_error err;
  tm_error_init(&err);
  int rc = tm_rt__trigger(rt, ds, full, sql, jitter_ms, &err);
  json_decref(body);
  if (rc == TM_OK) {
    tm_log(TM_LOG_INFO, d->name, "refresh triggered through the API%s%s", full ? " (full)" : "",
           sql ? " with a one-off refresh_sql" : "");
    tm_http_reply_message(rep, 201, "Dataset refresh triggered for %s.", d->name);
  } else {
    tm_http_reply_message(rep, rc == TM_ECONFLICT ? 409 : rc == TM_EUNAVAILABLE ? 503 : 500, "%s",
                          err.message);
  }
}

/*
 * PATCH /v1/datasets/{name}/acceleration {"refresh_sql": "SELECT ..."}:
 * Spice's update of a dataset's refresh_sql, used by the refreshes that start
 * from now on (it triggers none); null or no refresh_sql changes nothing.
 * 200 with no body, as Spice answers.
 */
static void h_update_acceleration(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  tm_rt_dataset *ds = path_dataset(rt, req, rep);
  if (!ds) return;
  if (!ds->accelerated) {
    tm_http_reply_message(rep, 400, "dataset '%s' has no acceleration to update", ds->def->name);
    return;
  }
  json_t *body = NULL;
  if (!body_object(req, rep, "{\"refresh_sql\": \"SELECT ...\"}", &body)) return;
  const char *sql = NULL, *key;
  json_t *v;
  json_object_foreach(body, key, v) {
    if (strcmp(key, "refresh_sql") != 0) {
      tm_http_reply_message(rep, 400, "unknown key '%s' (allowed: refresh_sql)", key);
      json_decref(body);
      return;
    }
    if (json_is_null(v)) continue;
    if (!json_is_string(v) || !looks_like_select(json_string_value(v))) {
      tm_http_reply_message(rep, 400, "refresh_sql must be a SELECT statement (a string)");
      json_decref(body);
      return;
    }
    sql = json_string_value(v);
  }
  tm_accel *a = sql ? tm_rt__accel(rt, ds) : NULL;
  tm_error err;
  tm_error_init(&err);
  if (sql && !a) {
    tm_http_reply_message(rep, 503, "dataset '%s' has not loaded yet", ds->def->name);
  } else if (sql && tm_accel_set_refresh_sql(a, sql, &err) != TM_OK) {
    tm_http_reply_message(rep, 500, "%s", err.message);
  } else {
    tm_buf_clear(&rep->body);
    rep->status = 200;
  }
  json_decref(body);
}

static void h_metrics(void *app, tm_http_request *req, tm_http_reply *rep) {
  (void)req;
  tm_runtime *rt = app;
  tm_error err;
  tm_error_init(&err);
  tm_buf_clear(&rep->body);
  tm_rt__count_active(rt);
  if (tm_metrics_render(rt->metrics, &rep->body, &err) != TM_OK) {
    tm_http_reply_message(rep, 500, "%s", err.message);
    return;
  }
  rep->status = 200;
  rep->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

void tm_rt__routes_init(tm_runtime *rt) {
  const tm_http_route api[] = {
      {"GET", "/health", h_health, true, 0},
      {"GET", "/v1/ready", h_ready, false, 0},
      {"GET", "/v1/status", h_status, false, 0},
      {"POST", "/v1/sql", tm_rt__handle_sql, false, rt->opts.max_sql_bytes},
      {"GET", "/v1/datasets", h_datasets, false, 0},
      {"GET", "/v1/datasets/{name}/acceleration", h_acceleration, false, 0},
      {"PATCH", "/v1/datasets/{name}/acceleration", h_update_acceleration, false, REFRESH_BODY_LIMIT},
      {"POST", "/v1/datasets/{name}/acceleration/refresh", h_refresh, false, REFRESH_BODY_LIMIT},
  };
  _Static_assert(sizeof api / sizeof api[0] <= sizeof rt->routes / sizeof rt->routes[0],
                 "rt->routes holds every route");
  rt->n_routes = sizeof api / sizeof api[0];
  memcpy(rt->routes, api, sizeof api);
  const tm_http_route m = {"GET", "/metrics", h_metrics, false, 0};
  rt->metrics_routes[0] = m;
}
