/*
 * query.c - POST /v1/sql: read-only SQL over the accelerations, answered as
 * JSON, CSV or a text table, streamed when large (runtime layer; SPEC 1.3,
 * C5, D4).
 *
 * The body is the SQL text (DuckDB's dialect). The statement runs in a SQL
 * session taken from a pool (one DuckDB connection each; engine/sql.h), as
 * one DuckDB transaction, so the answer is one consistent state even while
 * refreshes commit (C5); the gate refuses writes and file access (D4), the
 * session's time limit and DuckDB's memory limit bound the statement.
 *
 * Rows are rendered by a tm_out writer into a pending buffer. If the whole
 * result fits in the first FIRST_CHUNK bytes it is sent with a length (and an
 * error before that point is a 400 with {"message"}); otherwise the response
 * streams with chunked encoding: libmicrohttpd calls the content reader,
 * which steps the statement for more rows as the client drains them, so
 * memory stays bounded whatever the result's size. An error after streaming
 * began can no longer change the status: the connection is closed without
 * the final chunk, which clients report as a truncated response.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "runtime/http/http.h"
#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#define FIRST_CHUNK ((size_t)256 << 10) /* answered with a length when the result fits */
#define STREAM_CHUNK ((size_t)64 << 10)
#define POOL_MAX_IDLE 64
#define CELLS_LIMIT ((size_t)256 << 20) /* one row's rendered cells */

/* ---- the session pool ---------------------------------------------------------------------- */

int tm_rt__session_take(tm_runtime *rt, tm_sql_session **out, tm_error *err) {
  pthread_mutex_lock(&rt->pool_mu);
  tm_sql_session *s = rt->n_pool ? rt->pool[--rt->n_pool] : NULL;
  /* Room to track it as active, so that a shutdown can interrupt it. */
  if (rt->n_active == rt->cap_active) {
    size_t cap = rt->cap_active ? rt->cap_active * 2 : 16;
    tm_sql_session **p = tm_reallocarray(rt->active, cap, sizeof *p);
    if (p) {
      rt->active = p;
      rt->cap_active = cap;
    }
  }
  bool room = rt->n_active < rt->cap_active;
  pthread_mutex_unlock(&rt->pool_mu);
  if (!room) {
    if (s) tm_rt__session_put(rt, s);
    return tm_error_nomem(err);
  }
  if (!s) TM_TRY(tm_sql_session_new(&s, rt->catalog, err));
  tm_sql_session_set_timeout(s, rt->opts.query_timeout_ms);
  pthread_mutex_lock(&rt->pool_mu);
  if (rt->n_active < rt->cap_active) rt->active[rt->n_active++] = s;
  pthread_mutex_unlock(&rt->pool_mu);
  *out = s;
  return TM_OK;
}

void tm_rt__session_put(tm_runtime *rt, tm_sql_session *s) {
  if (!s) return;
  pthread_mutex_lock(&rt->pool_mu);
  for (size_t i = 0; i < rt->n_active; i++)
    if (rt->active[i] == s) {
      rt->active[i] = rt->active[--rt->n_active];
      break;
    }
  if (rt->n_pool < POOL_MAX_IDLE) {
    if (rt->n_pool == rt->cap_pool) {
      size_t cap = rt->cap_pool ? rt->cap_pool * 2 : 8;
      tm_sql_session **p = tm_reallocarray(rt->pool, cap, sizeof *p);
      if (p) {
        rt->pool = p;
        rt->cap_pool = cap;
      }
    }
    if (rt->n_pool < rt->cap_pool) {
      rt->pool[rt->n_pool++] = s;
      s = NULL;
    }
  }
  pthread_mutex_unlock(&rt->pool_mu);
  tm_sql_session_free(s);
}

void tm_rt__sessions_interrupt(tm_runtime *rt) {
  pthread_mutex_lock(&rt->pool_mu);
  for (size_t i = 0; i < rt->n_active; i++) tm_sql_session_interrupt(rt->active[i]);
  pthread_mutex_unlock(&rt->pool_mu);
}

/* ---- content negotiation --------------------------------------------------------------------- */

typedef struct media {
  const char *type;
  tm_out_format format;
  const char *content_type;
} media;

static const media k_media[] = {
    {"application/json", TM_OUT_JSON, "application/json"},
    {"text/csv", TM_OUT_CSV, "text/csv; charset=utf-8"},
    {"text/plain", TM_OUT_TABLE, "text/plain; charset=utf-8"},
    {"application/x-ndjson", TM_OUT_JSONL, "application/x-ndjson"},
    {"application/jsonl", TM_OUT_JSONL, "application/x-ndjson"},
    {"*/*", TM_OUT_JSON, "application/json"},
    {"application/*", TM_OUT_JSON, "application/json"},
    {"text/*", TM_OUT_TABLE, "text/plain; charset=utf-8"},
};

/*
 * Picks the output for an Accept header: the supported type with the highest
 * q (the first listed on a tie); no header is JSON. NULL when nothing fits.
 */
static const media *negotiate(const char *accept) {
  if (!accept || !*accept) return &k_media[0];
  const media *best = NULL;
  double best_q = 0;
  const char *p = accept;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    tm_strview item = tm_sv_trim(tm_sv(p, n));
    const char *semi = memchr(item.ptr, ';', item.len);
    tm_strview type = tm_sv_trim(tm_sv(item.ptr, semi ? (size_t)(semi - item.ptr) : item.len));
    double q = 1;
    if (semi) {
      tm_strview params = tm_sv(semi + 1, item.len - (size_t)(semi + 1 - item.ptr));
      const char *qp = NULL;
      for (size_t i = 0; i + 1 < params.len; i++)
        if ((params.ptr[i] == 'q' || params.ptr[i] == 'Q') && params.ptr[i + 1] == '=') {
          qp = params.ptr + i + 2;
          break;
        }
      if (qp) {
        size_t ql = 0;
        while (qp + ql < params.ptr + params.len && qp[ql] != ';' && qp[ql] != ' ') ql++;
        if (tm_parse_double(qp, ql, &q) != TM_OK || q < 0 || q > 1) q = 0;
      }
    }
    for (size_t i = 0; i < sizeof k_media / sizeof k_media[0]; i++)
      if (tm_sv_eq_nocase(type, k_media[i].type) && q > best_q) {
        best = &k_media[i];
        best_q = q;
      }
    if (!end) break;
    p = end + 1;
  }
  return best;
}

/* ---- one query ------------------------------------------------------------------------------ */

typedef struct sql_stream {
  tm_runtime *rt;
  tm_sql_session *session;
  tm_sql_stmt *st;
  tm_out out;
  bool out_open;
  tm_buf pending;       /* rendered output not yet sent */
  size_t sent;          /* bytes of pending already sent */
  tm_buf cells;         /* one row's rendered cells */
  size_t n_cols;
  size_t *offs;         /* n_cols + 1 offsets into cells */
  const char **texts;
  size_t *lens;
  tm_cell_kind *kinds;
  bool done, failed;
  int64_t t0_ns;
  tm_error err;
} sql_stream;

static int pending_sink(const char *data, size_t len, void *payload) {
  sql_stream *s = payload;
  return tm_buf_append(&s->pending, data, len, &s->err);
}

static void stream_free(sql_stream *s) {
  if (!s) return;
  if (s->out_open) tm_out_dispose(&s->out);
  tm_sql_stmt_free(s->st);
  tm_rt__session_put(s->rt, s->session);
  tm_runtime *rt = s->rt;
  tm_metric_add(rt->m_query_exec, NULL, 1);
  if (s->failed) tm_metric_add(rt->m_query_fail, NULL, 1);
  tm_metric_observe(rt->m_query_dur, NULL, (double)(tm_monotonic_ns() - s->t0_ns) / 1e6);
  tm_buf_dispose(&s->pending);
  tm_buf_dispose(&s->cells);
  tm_free(s->offs);
  tm_free(s->texts);
  tm_free(s->lens);
  tm_free(s->kinds);
  tm_free(s);
}

/* Steps until at least `want` bytes are pending or the result ends. */
static int fill(sql_stream *s, size_t want) {
  while (!s->done && s->pending.len - s->sent < want) {
    int rc = tm_sql_step(s->st, &s->err);
    if (rc == TM_ITEROVER) {
      rc = tm_out_end(&s->out, &s->err);
      s->out_open = false;
      if (rc != TM_OK) return rc;
      s->done = true;
      break;
    }
    if (rc != TM_OK) return rc;
    tm_buf_clear(&s->cells);
    for (size_t i = 0; i < s->n_cols; i++) {
      s->offs[i] = s->cells.len;
      TM_TRY(tm_sql_column_render(s->st, i, &s->cells, &s->kinds[i], &s->err));
    }
    s->offs[s->n_cols] = s->cells.len;
    for (size_t i = 0; i < s->n_cols; i++) {
      s->texts[i] = s->kinds[i] == TM_CELL_NULL ? NULL : s->cells.ptr + s->offs[i];
      s->lens[i] = s->offs[i + 1] - s->offs[i];
    }
    TM_TRY(tm_out_row(&s->out, s->texts, s->lens, s->kinds, &s->err));
  }
  return TM_OK;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  sql_stream *s = cls;
  if (s->pending.len == s->sent) {
    tm_buf_clear(&s->pending);
    s->sent = 0;
    if (fill(s, STREAM_CHUNK) != TM_OK) {
      s->failed = true;
      tm_log(TM_LOG_WARN, NULL, "/v1/sql: query failed while streaming its result: %s",
             s->err.message);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (s->pending.len == 0) return MHD_CONTENT_READER_END_OF_STREAM;
  }
  size_t n = s->pending.len - s->sent;
  if (n > max) n = max;
  memcpy(buf, s->pending.ptr + s->sent, n);
  s->sent += n;
  return (ssize_t)n;
}

static void stream_done(void *cls) { stream_free(cls); }

static unsigned status_for(int rc) {
  return rc == TM_ENOMEM || rc == TM_EIO || rc == TM_ERROR ? 500 : 400;
}

void tm_rt__handle_sql(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  pthread_mutex_lock(&rt->mu);
  bool stopping = rt->stopping;
  pthread_mutex_unlock(&rt->mu);
  if (stopping) {
    tm_http_reply_message(rep, 503, "the runtime is shutting down");
    return;
  }
  const media *m = negotiate(tm_http_header(req, MHD_HTTP_HEADER_ACCEPT));
  if (!m) {
    tm_http_reply_message(rep, 406,
                          "unsupported Accept (allowed: application/json, text/csv, text/plain)");
    return;
  }
  const char *sql = tm_buf_cstr(&req->body);
  if (strlen(sql) != req->body.len) {
    tm_http_reply_message(rep, 400, "the query contains a NUL byte");
    return;
  }
  tm_strview trimmed = tm_sv_trim(tm_sv_cstr(sql));
  if (trimmed.len == 0) {
    tm_http_reply_message(rep, 400, "empty query: send the SQL text as the request body");
    return;
  }
  sql_stream *s = tm_calloc(1, sizeof *s);
  if (!s) {
    tm_http_reply_message(rep, 500, "out of memory");
    return;
  }
  s->rt = rt;
  s->t0_ns = tm_monotonic_ns();
  tm_buf_init(&s->pending, TM_BUF_UNLIMITED);
  tm_buf_init(&s->cells, CELLS_LIMIT);
  tm_error_init(&s->err);
  int rc = tm_rt__session_take(rt, &s->session, &s->err);
  if (rc == TM_OK) rc = tm_sql_prepare(s->session, sql, &s->st, &s->err);
  if (rc == TM_OK) {
    s->n_cols = tm_sql_column_count(s->st);
    size_t n = s->n_cols ? s->n_cols : 1;
    s->offs = tm_calloc(n + 1, sizeof *s->offs);
    s->texts = tm_calloc(n, sizeof *s->texts);
    s->lens = tm_calloc(n, sizeof *s->lens);
    s->kinds = tm_calloc(n, sizeof *s->kinds);
    if (!s->offs || !s->texts || !s->lens || !s->kinds) rc = tm_error_nomem(&s->err);
  }
  if (rc == TM_OK) {
    for (size_t i = 0; i < s->n_cols; i++) s->texts[i] = tm_sql_column_name(s->st, i);
    rc = tm_out_begin(&s->out, m->format, s->texts, s->n_cols, pending_sink, s, &s->err);
    s->out_open = rc == TM_OK;
  }
  if (rc == TM_OK) rc = fill(s, FIRST_CHUNK);
  if (rc != TM_OK) {
    s->failed = true;
    tm_http_reply_message(rep, status_for(rc), "%s", s->err.message);
    stream_free(s);
    return;
  }
  rep->status = 200;
  rep->content_type = m->content_type;
  if (s->done) {
    tm_buf_dispose(&rep->body);
    rep->body = s->pending;
    tm_buf_init(&s->pending, TM_BUF_UNLIMITED);
    stream_free(s);
    return;
  }
  rep->response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_CHUNK, stream_read,
                                                    s, stream_done);
  if (!rep->response) {
    s->failed = true;
    stream_free(s);
    tm_http_reply_message(rep, 500, "out of memory");
  }
}
