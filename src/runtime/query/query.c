/*
 * query.c - POST /v1/sql: read-only SQL over the accelerations, answered as
 * JSON, CSV, a text table, NDJSON or Spice's application/vnd.spiceai.sql.v1+json,
 * streamed when large (runtime layer; SPEC 1.3, C5, D4).
 *
 * The body is the SQL text (DuckDB's dialect), or Spice's JSON envelope
 * {"sql", "parameters"} when the Content-Type is application/json, whose
 * values are bound to the statement's parameters (sqlreq.h; the Accept
 * header is read there too). The statement runs in a SQL
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
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "runtime/http/http.h"
#include "runtime/query/pool.h"
#include "runtime/query/sqlreq.h"
#include "runtime/runtime_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"
#include "util/sync.h"

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

/* ---- one query ------------------------------------------------------------------------------ */

/*
 * A query job: the SQL text and its answer, shared by the connection thread
 * that waits for the answer (the consumer) and the query slot that runs it
 * (the worker). Two references, one each; the last release frees it.
 *
 * The worker renders the result into `pending` (its own); when the first
 * chunk is ready (or the whole result, or an error) it hands it over in
 * `ready` and sets `answered`; for a streamed result it then renders the next
 * chunk while the consumer sends this one, and swaps again once `ready` is
 * drained. The consumer waits for each hand-over until the query's deadline
 * plus GRACE_MS: past that it answers (400 past the time limit, 503 if the
 * query never got a slot) and marks the job abandoned, interrupts its
 * statement and leaves; the worker stops at its next chance. A statement
 * DuckDB cannot interrupt at once (one scalar call over huge values) keeps
 * its slot until it returns, which bounds such runaways by the slot count.
 */
typedef struct sql_job {
  tm_qpool_job base; /* first: the pool's view */
  tm_runtime *rt;
  const tm_sqlreq_media *m;
  char *sql;         /* owned */
  tm_sql_params params; /* owned: the JSON body's values */
  bool bind;         /* the JSON body had "parameters": bind params */
  int64_t t0_ns, deadline_ns;

  /* worker only */
  tm_sql_session *session;
  tm_sql_stmt *st;
  tm_out out;
  bool out_open, done;
  tm_buf pending;    /* rendered output not yet handed over */
  tm_buf cells;      /* one row's rendered cells */
  size_t n_cols;
  size_t *offs;      /* n_cols + 1 offsets into cells */
  const char **texts;
  size_t *lens;
  tm_cell_kind *kinds;
  tm_error err;

  /* shared, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  bool started;      /* a worker took it */
  bool answered;     /* the first hand-over happened: rc, first_err, ready */
  bool ended;        /* ready holds the end of the result */
  bool failed;       /* the statement failed after streaming began */
  bool abandoned;    /* the consumer left: stop */
  int rc;
  tm_error first_err;
  tm_buf ready;      /* handed over, being sent */
  size_t sent;       /* bytes of ready already sent */
  tm_sql_session *live; /* the running session, for interrupts */
  char datasets[1024]; /* the `datasets` label: what the statement read (worker) */
} sql_job;

#define GRACE_MS 500

static int pending_sink(const char *data, size_t len, void *payload) {
  sql_job *j = payload;
  return tm_buf_append(&j->pending, data, len, &j->err);
}

static void job_release(sql_job *j) {
  pthread_mutex_lock(&j->mu);
  bool last = --j->refs == 0;
  pthread_mutex_unlock(&j->mu);
  if (!last) return;
  tm_buf_dispose(&j->pending);
  tm_buf_dispose(&j->cells);
  tm_buf_dispose(&j->ready);
  tm_free(j->offs);
  tm_free(j->texts);
  tm_free(j->lens);
  tm_free(j->kinds);
  tm_free(j->sql);
  tm_sql_params_dispose(&j->params);
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->mu);
  tm_free(j);
}

/* Steps until at least `want` bytes are pending or the result ends (worker). */
static int fill(sql_job *j, size_t want) {
  while (!j->done && j->pending.len < want) {
    int rc = tm_sql_step(j->st, &j->err);
    if (rc == TM_ITEROVER) {
      rc = tm_out_end(&j->out, &j->err);
      j->out_open = false;
      if (rc != TM_OK) return rc;
      j->done = true;
      break;
    }
    if (rc != TM_OK) return rc;
    tm_buf_clear(&j->cells);
    for (size_t i = 0; i < j->n_cols; i++) {
      j->offs[i] = j->cells.len;
      TM_TRY(tm_sql_column_render(j->st, i, &j->cells, &j->kinds[i], &j->err));
    }
    j->offs[j->n_cols] = j->cells.len;
    for (size_t i = 0; i < j->n_cols; i++) {
      j->texts[i] = j->kinds[i] == TM_CELL_NULL ? NULL : j->cells.ptr + j->offs[i];
      j->lens[i] = j->offs[i + 1] - j->offs[i];
    }
    TM_TRY(tm_out_row(&j->out, j->texts, j->lens, j->kinds, &j->err));
  }
  return TM_OK;
}

/*
 * Opens the writer of Spice's application/vnd.spiceai.sql.v1+json, which
 * names each column's Arrow type (worker; texts hold the names). The types'
 * texts live in cells until the writer has copied them.
 */
static int begin_spice(sql_job *j) {
  for (size_t i = 0; i < j->n_cols; i++) {
    j->offs[i] = j->cells.len;
    TM_TRY(tm_sql_column_arrow_type(j->st, i, &j->cells, &j->err));
    TM_TRY(tm_buf_putc(&j->cells, '\0', &j->err));
  }
  const char **types = tm_calloc(j->n_cols ? j->n_cols : 1, sizeof *types);
  if (!types) return tm_error_nomem(&j->err);
  for (size_t i = 0; i < j->n_cols; i++) types[i] = j->cells.ptr + j->offs[i];
  int rc = tm_out_begin_fields(&j->out, TM_OUT_SPICE_V1, j->texts, types, j->n_cols,
                               pending_sink, j, &j->err);
  tm_free(types);
  tm_buf_clear(&j->cells);
  return rc;
}

/* Prepares the statement and renders the first chunk (worker). */
static int start_statement(sql_job *j) {
  tm_runtime *rt = j->rt;
  int64_t left_ms = (j->deadline_ns - tm_monotonic_ns()) / 1000000;
  if (left_ms <= 0)
    return tm_error_set(&j->err, TM_ETIMEOUT, "time limit");
  TM_TRY(tm_rt__session_take(rt, &j->session, &j->err));
  tm_sql_session_set_timeout(j->session, left_ms);
  pthread_mutex_lock(&j->mu);
  bool abandoned = j->abandoned;
  if (!abandoned) j->live = j->session;
  pthread_mutex_unlock(&j->mu);
  if (abandoned) return tm_error_set(&j->err, TM_ECANCELLED, "the client left");
  TM_TRY(tm_sql_prepare_params(j->session, j->sql, j->bind ? &j->params : NULL, &j->st, &j->err));
  j->n_cols = tm_sql_column_count(j->st);
  size_t n = j->n_cols ? j->n_cols : 1;
  j->offs = tm_calloc(n + 1, sizeof *j->offs);
  j->texts = tm_calloc(n, sizeof *j->texts);
  j->lens = tm_calloc(n, sizeof *j->lens);
  j->kinds = tm_calloc(n, sizeof *j->kinds);
  if (!j->offs || !j->texts || !j->lens || !j->kinds) return tm_error_nomem(&j->err);
  for (size_t i = 0; i < j->n_cols; i++) j->texts[i] = tm_sql_column_name(j->st, i);
  if (j->m->format == TM_OUT_SPICE_V1) TM_TRY(begin_spice(j));
  else TM_TRY(tm_out_begin(&j->out, j->m->format, j->texts, j->n_cols, pending_sink, j, &j->err));
  j->out_open = true;
  return fill(j, FIRST_CHUNK);
}

/* Hands pending over as ready (under mu; ready is drained). */
static void hand_over(sql_job *j) {
  tm_buf t = j->ready;
  j->ready = j->pending;
  j->pending = t;
  tm_buf_clear(&j->pending);
  j->sent = 0;
  j->ended = j->done;
  pthread_cond_broadcast(&j->cv);
}

static void run_job(tm_qpool_job *base) {
  sql_job *j = (sql_job *)base;
  tm_runtime *rt = j->rt;
  pthread_mutex_lock(&j->mu);
  j->started = true;
  bool skip = j->abandoned;
  pthread_mutex_unlock(&j->mu);
  pthread_mutex_lock(&rt->mu);
  bool stopping = rt->stopping || rt->stopped;
  pthread_mutex_unlock(&rt->mu);
  int rc = skip ? tm_error_set(&j->err, TM_ECANCELLED, "the client left")
           : stopping ? tm_error_set(&j->err, TM_EUNAVAILABLE, "the runtime is shutting down")
                      : start_statement(j);
  /* The session's limit was what was left after the wait for a slot: name the configured one. */
  if (rc == TM_ETIMEOUT)
    tm_error_set(&j->err, TM_ETIMEOUT, "the query ran past its time limit of %lld ms (SPEC D4)",
                 (long long)rt->opts.query_timeout_ms);
  pthread_mutex_lock(&j->mu);
  j->rc = rc;
  j->first_err = j->err;
  j->answered = true;
  if (rc == TM_OK) hand_over(j);
  else pthread_cond_broadcast(&j->cv);
  while (rc == TM_OK && !j->ended && !j->abandoned) {
    pthread_mutex_unlock(&j->mu);
    rc = fill(j, STREAM_CHUNK);
    pthread_mutex_lock(&j->mu);
    if (rc != TM_OK) {
      j->failed = true;
      pthread_cond_broadcast(&j->cv);
      if (!j->abandoned)
        tm_log(TM_LOG_WARN, NULL, "/v1/sql: query failed while streaming its result: %s",
               j->err.message);
      break;
    }
    while (j->sent < j->ready.len && !j->abandoned) pthread_cond_wait(&j->cv, &j->mu);
    if (!j->abandoned) hand_over(j);
  }
  j->live = NULL;
  bool failed = j->rc != TM_OK || j->failed;
  bool damaged = rc == TM_ECORRUPT;
  /* The failure to name: the first answer's, else the one that ended the stream. */
  int fail_rc = j->rc != TM_OK ? j->rc : rc;
  const char *err_code = failed ? tm_sql_error_code(fail_rc, j->rc != TM_OK ? j->first_err.message
                                                                            : j->err.message)
                                : NULL;
  pthread_mutex_unlock(&j->mu);
  if (j->out_open) tm_out_dispose(&j->out);
  j->out_open = false;
  tm_sql_stmt_free(j->st);
  j->st = NULL;
  snprintf(j->datasets, sizeof j->datasets, "%s",
           j->session ? tm_sql_session_datasets(j->session) : "");
  tm_rt__session_put(rt, j->session);
  j->session = NULL;
  if (damaged) tm_rt__note_damage(rt, j->err.message);
  if (!skip) {
    /* Spice's labels (crates/runtime/src/datafusion/query/tracker.rs): `tags` is "error" for a
     * failure (tidemark has no results cache for "cache-hit"/"cache-miss"), `datasets` what
     * the statement read, `protocol` http; a failure also has its `err_code`. */
    const char *tags = failed ? "error" : "";
    const char *l3[] = {tags, j->datasets, "http"};
    tm_metric_add(rt->m_query_exec, l3, 1);
    if (failed)
      tm_metric_add(rt->m_query_fail, (const char *[]){tags, j->datasets, err_code, "http"}, 1);
    tm_metric_observe(rt->m_query_dur, l3, (double)(tm_monotonic_ns() - j->t0_ns) / 1e6);
  }
  job_release(j);
}

/* Waits (under mu) for pred or the job's deadline plus the grace; false on time out. */
static bool wait_job(sql_job *j, bool (*pred)(const sql_job *)) {
  int64_t until = j->deadline_ns + (int64_t)GRACE_MS * 1000000;
  while (!pred(j)) {
    int64_t left = until - tm_monotonic_ns();
    if (left <= 0) return false;
    tm_cond_wait_ns(&j->cv, &j->mu, left < 100000000 ? left : 100000000);
  }
  return true;
}

static bool is_answered(const sql_job *j) { return j->answered; }
static bool has_bytes(const sql_job *j) {
  return j->sent < j->ready.len || j->ended || j->failed;
}

/* The consumer leaves (under mu): the worker stops at its next chance. */
static void abandon(sql_job *j) {
  j->abandoned = true;
  if (j->live) tm_sql_session_interrupt(j->live);
  pthread_cond_broadcast(&j->cv);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  sql_job *j = cls;
  pthread_mutex_lock(&j->mu);
  ssize_t r;
  if (!wait_job(j, has_bytes)) {
    abandon(j);
    tm_log(TM_LOG_WARN, NULL, "/v1/sql: query ran past its time limit of %lld ms while streaming "
           "its result; closing the connection", (long long)j->rt->opts.query_timeout_ms);
    r = MHD_CONTENT_READER_END_WITH_ERROR;
  } else if (j->sent < j->ready.len) {
    size_t n = j->ready.len - j->sent;
    if (n > max) n = max;
    memcpy(buf, j->ready.ptr + j->sent, n);
    j->sent += n;
    if (j->sent == j->ready.len) pthread_cond_broadcast(&j->cv);
    r = (ssize_t)n;
  } else {
    r = j->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
  }
  pthread_mutex_unlock(&j->mu);
  return r;
}

static void stream_done(void *cls) {
  sql_job *j = cls;
  pthread_mutex_lock(&j->mu);
  abandon(j);
  pthread_mutex_unlock(&j->mu);
  job_release(j);
}

static unsigned status_for(int rc) {
  if (rc == TM_EUNAVAILABLE) return 503;
  return rc == TM_ENOMEM || rc == TM_EIO || rc == TM_ERROR ? 500 : 400;
}

void tm_rt__handle_sql(void *app, tm_http_request *req, tm_http_reply *rep) {
  tm_runtime *rt = app;
  pthread_mutex_lock(&rt->mu);
  bool stopping = rt->stopping;
  pthread_mutex_unlock(&rt->mu);
  if (stopping || !rt->queries) {
    tm_http_reply_message(rep, 503, "the runtime is shutting down");
    return;
  }
  const tm_sqlreq_media *m = tm_sqlreq_negotiate(tm_http_header(req, MHD_HTTP_HEADER_ACCEPT));
  if (!m) {
    tm_http_reply_message(rep, 406, "unsupported Accept (allowed: %s)", tm_sqlreq_supported());
    return;
  }
  /* Spice's clients send {"sql", "parameters"} as application/json; anything else is SQL text. */
  char *sql = NULL;
  tm_sql_params params;
  memset(&params, 0, sizeof params);
  bool bind = false;
  bool json = tm_sqlreq_is_json(tm_http_header(req, MHD_HTTP_HEADER_CONTENT_TYPE));
  if (json) {
    tm_error perr;
    tm_error_init(&perr);
    if (tm_sqlreq_parse_json(req->body.ptr, req->body.len, &sql, &params, &bind, &perr) != TM_OK) {
      tm_http_reply_message(rep, perr.code == TM_ENOMEM ? 500 : 400, "%s", perr.message);
      return;
    }
  } else {
    const char *text = tm_buf_cstr(&req->body);
    if (strlen(text) != req->body.len) {
      tm_http_reply_message(rep, 400, "the query contains a NUL byte");
      return;
    }
    if (!(sql = tm_strdup(text))) {
      tm_http_reply_message(rep, 500, "out of memory");
      return;
    }
  }
  tm_strview trimmed = tm_sv_trim(tm_sv_cstr(sql));
  if (trimmed.len == 0) {
    tm_free(sql);
    tm_sql_params_dispose(&params);
    tm_http_reply_message(rep, 400, json ? "empty query: the JSON body's \"sql\" holds no SQL"
                                         : "empty query: send the SQL text as the request body");
    return;
  }
  sql_job *j = tm_calloc(1, sizeof *j);
  if (!j) {
    tm_free(sql);
    tm_sql_params_dispose(&params);
    tm_http_reply_message(rep, 500, "out of memory");
    return;
  }
  j->sql = sql;
  j->params = params;
  j->bind = bind;
  j->base.run = run_job;
  j->rt = rt;
  j->m = m;
  j->t0_ns = tm_monotonic_ns();
  j->deadline_ns = j->t0_ns + rt->opts.query_timeout_ms * 1000000;
  j->refs = 2;
  pthread_mutex_init(&j->mu, NULL);
  tm_cond_init_monotonic(&j->cv);
  tm_buf_init(&j->pending, TM_BUF_UNLIMITED);
  tm_buf_init(&j->ready, TM_BUF_UNLIMITED);
  tm_buf_init(&j->cells, CELLS_LIMIT);
  tm_error_init(&j->err);
  tm_error err;
  tm_error_init(&err);
  if (tm_qpool_submit(rt->queries, &j->base, &err) != TM_OK) {
    tm_metric_add(rt->m_query_busy, NULL, 1);
    tm_http_reply_message(rep, 503, "%s", err.message);
    rep->extra_header[0] = MHD_HTTP_HEADER_RETRY_AFTER;
    rep->extra_header[1] = "1";
    j->refs = 1;
    job_release(j);
    return;
  }
  pthread_mutex_lock(&j->mu);
  if (!wait_job(j, is_answered)) {
    bool started = j->started;
    abandon(j);
    pthread_mutex_unlock(&j->mu);
    if (!started && tm_qpool_cancel(rt->queries, &j->base)) {
      job_release(j); /* the worker's reference: it will not run */
      tm_metric_add(rt->m_query_busy, NULL, 1);
      tm_http_reply_message(rep, 503,
                            "every query slot stayed busy for the query's time limit of %lld ms: "
                            "retry later",
                            (long long)rt->opts.query_timeout_ms);
      rep->extra_header[0] = MHD_HTTP_HEADER_RETRY_AFTER;
      rep->extra_header[1] = "1";
    } else {
      tm_log(TM_LOG_WARN, NULL,
             "/v1/sql: a query ran past its time limit of %lld ms and could not be stopped at "
             "once; answered, its slot stays busy until DuckDB returns",
             (long long)rt->opts.query_timeout_ms);
      tm_http_reply_message(rep, 400, "the query ran past its time limit of %lld ms (SPEC D4)",
                            (long long)rt->opts.query_timeout_ms);
    }
    job_release(j);
    return;
  }
  if (j->rc != TM_OK) {
    int rc = j->rc;
    tm_error e = j->first_err;
    pthread_mutex_unlock(&j->mu);
    tm_http_reply_message(rep, status_for(rc), "%s", e.message);
    job_release(j);
    return;
  }
  rep->status = 200;
  rep->content_type = m->content_type;
  if (j->ended) {
    tm_buf_dispose(&rep->body);
    rep->body = j->ready;
    tm_buf_init(&j->ready, TM_BUF_UNLIMITED);
    j->sent = 0;
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    return;
  }
  pthread_mutex_unlock(&j->mu);
  rep->response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_CHUNK, stream_read,
                                                    j, stream_done);
  if (!rep->response) {
    pthread_mutex_lock(&j->mu);
    abandon(j);
    pthread_mutex_unlock(&j->mu);
    job_release(j);
    tm_http_reply_message(rep, 500, "out of memory");
  }
}
