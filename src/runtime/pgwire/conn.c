/*
 * conn.c - one PostgreSQL wire protocol connection, start to end (runtime
 * layer, pgwire; docs/PGWIRE.md).
 *
 * The connection's thread reads the startup packet (answering SSLRequest and
 * GSSENCRequest with 'N', serving a CancelRequest), authenticates against the
 * API keys, then reads messages: a type byte and an Int32 length, checked
 * against TM_PG_MSG_MAX before a byte of the body is read. Statements run on
 * this thread in a session of the runtime's pool (tm_rt__session_take: the
 * same gate, time limit and memory limit as /v1/sql), their rows encoded as
 * DataRows and sent as they come, so memory stays bounded by one flush.
 *
 * Extended protocol state: named and unnamed prepared statements (their SQL
 * and, once described, their shape) and portals (a statement with its bound
 * values and result formats; a portal suspended by Execute's row limit keeps
 * its DuckDB statement and session until it completes or is closed). After
 * an error, messages are skipped until Sync.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "runtime/pgwire/pgwire_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/sqlsplit.h"
#include "util/time.h"

#define FLUSH_AT ((size_t)64 << 10)    /* send the pending output past this */
#define OUT_LIMIT ((size_t)256 << 20)  /* one row past this is refused */
#define STARTUP_TIMEOUT_MS 10000
#define SEND_TIMEOUT_MS 60000
#define MAX_STMTS 256                  /* named prepared statements per connection */
#define MAX_PORTALS 64
#define IN_BUF ((size_t)16 << 10)      /* buffered input (read_full) */

typedef struct pg_stmt {
  char *name;                 /* owned; "" unnamed */
  char *sql;                  /* owned: the SQL DuckDB runs (rewritten) */
  tm_pg_special_result special;
  uint32_t *oids;             /* owned: the client's parameter types (0: unspecified) */
  size_t n_oids;
  tm_sql_shape shape;         /* described at Parse (PG_DUCKDB) */
} pg_stmt;

typedef struct pg_portal {
  char *name;                 /* owned */
  pg_stmt *stmt;              /* borrowed: a portal is closed with its statement */
  tm_sql_params params;       /* owned */
  bool *binary;               /* owned, one per result column */
  size_t n_binary;
  tm_sql_session *session;    /* running: the session and statement, or NULL */
  tm_sql_stmt *st;
  int all_format;             /* Bind gave 0 or 1 result formats: that format (0, 1) for every
                                 column; -1: one per column */
  int64_t rows;               /* rows sent so far */
  int64_t t0_ns;              /* when its statement started (monotonic) */
  bool done;                  /* ran to completion (another Execute returns no rows) */
} pg_portal;

typedef struct conn_state {
  tm_pg_conn *c;
  tm_runtime *rt;
  tm_buf out;                 /* pending output */
  tm_buf scratch;
  uint8_t in[IN_BUF];         /* received, not yet read: in[in_pos..in_len) */
  size_t in_pos, in_len;
  uint8_t *body;              /* owned: the current message's body */
  size_t body_cap;
  char user[64];
  tm_pg_params params;
  pg_stmt *stmts[MAX_STMTS];
  size_t n_stmts;
  pg_portal *portals[MAX_PORTALS];
  size_t n_portals;
  bool skip_to_sync;          /* an extended-protocol error happened */
  bool in_txn;                /* between BEGIN and COMMIT/ROLLBACK */
  bool failed_txn;            /* an error inside it: 'E' until ROLLBACK */
  bool closing;
  tm_error err;
  tm_sql_session *own;        /* the connection's session, kept between statements (its
                                 memory of passed texts and prepared statements), or NULL */
  bool own_busy;              /* a statement or portal is using it */
} conn_state;

/* ---- socket I/O ----------------------------------------------------------------------------- */

static void set_timeout(int fd, int opt, int64_t ms) {
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
  (void)setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/*
 * Reads exactly n bytes; false on EOF, error or time out. Input is buffered
 * (IN_BUF): a client's Parse/Bind/Describe/Execute/Sync arrive together, and
 * one recv for them all instead of two per message is a tenth of a short
 * query's time. A read of IN_BUF or more past the buffered bytes goes
 * straight to the caller's memory.
 */
static bool read_full(conn_state *s, void *buf, size_t n) {
  uint8_t *p = buf;
  size_t have = s->in_len - s->in_pos;
  size_t take = have < n ? have : n;
  memcpy(p, s->in + s->in_pos, take);
  s->in_pos += take;
  p += take;
  n -= take;
  while (n) {
    bool direct = n >= IN_BUF;
    ssize_t r = recv(s->c->fd, direct ? p : s->in, direct ? n : IN_BUF, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    size_t got = (size_t)r;
    if (!direct) {
      s->in_len = got;
      s->in_pos = take = got < n ? got : n;
      memcpy(p, s->in, take);
      got = take;
    }
    p += got;
    n -= got;
  }
  return true;
}

static bool write_full(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* Sends the pending output; marks the connection closing when the client is gone. */
static bool flush(conn_state *s) {
  if (s->out.len && !write_full(s->c->fd, s->out.ptr, s->out.len)) s->closing = true;
  tm_buf_clear(&s->out);
  return !s->closing;
}

static uint32_t be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Reads a body of n bytes into s->body (grown as needed, bounded by the caller's check). */
static bool read_body(conn_state *s, size_t n) {
  if (n + 1 > s->body_cap) {
    size_t cap = n + 1 < 4096 ? 4096 : n + 1;
    uint8_t *b = tm_realloc(s->body, cap);
    if (!b) return false;
    s->body = b;
    s->body_cap = cap;
  }
  if (!read_full(s, s->body, n)) return false;
  s->body[n] = 0; /* a guard only: parsers stay within n */
  return true;
}

/* Sends an ErrorResponse now (FATAL ones end the connection after). */
static void send_error(conn_state *s, const char *severity, const char *code, const char *msg) {
  tm_error e;
  tm_error_init(&e);
  if (tm_pg_put_error(&s->out, severity, code, msg, &e) != TM_OK) s->closing = true;
  if (!strcmp(severity, "FATAL")) {
    flush(s);
    s->closing = true;
  }
}

/* ---- sessions ------------------------------------------------------------------------------- */

/*
 * A session for one statement: the connection's own when it is free (taken
 * from the runtime's pool at the first statement and kept until the
 * connection ends, so that a text it has run before skips the gate's parse
 * and DuckDB's prepare: engine/sql/session.c), else one of the pool's (a
 * portal suspended by a row limit holds the connection's own).
 */
static int session_take(conn_state *s, tm_sql_session **out, tm_error *err) {
  if (!s->own) TM_TRY(tm_rt__session_take(s->rt, &s->own, err));
  if (!s->own_busy) {
    s->own_busy = true;
    *out = s->own;
    return TM_OK;
  }
  return tm_rt__session_take(s->rt, out, err);
}

static void session_put(conn_state *s, tm_sql_session *ss) {
  if (!ss) return;
  if (ss == s->own) s->own_busy = false;
  else tm_rt__session_put(s->rt, ss);
}

/* ---- startup and authentication -------------------------------------------------------------- */

static void cancel_request(tm_pg_server *srv, uint32_t pid, uint32_t secret) {
  pthread_mutex_lock(&srv->mu);
  for (tm_pg_conn *o = srv->conns; o; o = o->next)
    if (o->pid == pid) {
      /* The key compared whole, so a wrong guess learns nothing from the time. */
      if ((o->secret ^ secret) == 0 && o->live) tm_sql_session_interrupt(o->live);
      break;
    }
  pthread_mutex_unlock(&srv->mu);
}

/* Reads one password-type message ('p') into s->body; false when the client left or erred. */
static bool read_password_msg(conn_state *s, size_t *len) {
  uint8_t h[5];
  if (!read_full(s, h, 5)) return false;
  uint32_t n = be32(h + 1);
  if (h[0] != 'p' || n < 4 || n - 4 > 4096) {
    send_error(s, "FATAL", "08P01", "expected a password message");
    return false;
  }
  if (!read_body(s, n - 4)) return false;
  *len = n - 4;
  return true;
}

static void auth_request(conn_state *s, int32_t code, const void *extra, size_t n) {
  size_t mark;
  tm_error e;
  if (tm_pg_begin(&s->out, 'R', &mark, &e) != TM_OK || tm_pg_put_i32(&s->out, code, &e) != TM_OK ||
      (n && tm_buf_append(&s->out, extra, n, &e) != TM_OK))
    s->closing = true;
  else tm_pg_end(&s->out, mark);
  flush(s);
}

/* Authenticates the user; true when the client may go on. */
static bool authenticate(conn_state *s) {
  tm_runtime *rt = s->rt;
  const char *const *keys = (const char *const *)rt->api_keys;
  size_t n_keys = rt->n_api_keys;
  if (n_keys == 0) return true; /* no keys: trust, as the HTTP API */
  bool ok = false;
  size_t len = 0;
  tm_pg_auth method = s->c->srv->o.auth;
  if (method == TM_PG_AUTH_PASSWORD) {
    auth_request(s, 3, NULL, 0);
    if (!read_password_msg(s, &len)) return false;
    size_t pl = strnlen((const char *)s->body, len);
    ok = pl + 1 == len && tm_pg_auth_cleartext(keys, n_keys, (const char *)s->body, pl);
  } else if (method == TM_PG_AUTH_MD5) {
    uint8_t salt[4];
    if (RAND_bytes(salt, 4) != 1) return false;
    auth_request(s, 5, salt, 4);
    if (!read_password_msg(s, &len)) return false;
    size_t pl = strnlen((const char *)s->body, len);
    ok = pl + 1 == len && tm_pg_auth_md5(keys, n_keys, s->user, salt, (const char *)s->body, pl);
  } else {
    static const char mech[] = "SCRAM-SHA-256\0"; /* the list ends with an empty name */
    auth_request(s, 10, mech, sizeof mech);
    if (!read_password_msg(s, &len)) return false;
    const char *m;
    const uint8_t *data;
    int32_t dl;
    tm_pg_scram sc;
    tm_buf msg = TM_BUF_INIT(4096);
    tm_error e;
    tm_error_init(&e);
    int rc = tm_pg_parse_sasl_initial(s->body, len, &m, &data, &dl, &e);
    if (rc == TM_OK && (strcmp(m, "SCRAM-SHA-256") != 0 || dl < 0))
      rc = tm_error_set(&e, TM_EINVALID, "SASL: only SCRAM-SHA-256 (without channel binding)");
    if (rc == TM_OK) rc = tm_pg_scram_first(&sc, data, (size_t)dl, &msg, &e);
    if (rc == TM_OK) {
      auth_request(s, 11, msg.ptr, msg.len);
      tm_buf_clear(&msg);
      if (!read_password_msg(s, &len)) rc = TM_ERROR;
      else rc = tm_pg_scram_final(&sc, keys, n_keys, s->body, len, &ok, &msg, &e);
    }
    if (rc == TM_OK && ok) auth_request(s, 12, msg.ptr, msg.len);
    tm_buf_dispose(&msg);
    if (rc != TM_OK && !s->closing) {
      send_error(s, "FATAL", "28000", e.message[0] ? e.message : "authentication failed");
      return false;
    }
  }
  if (!ok && !s->closing) {
    char m[160];
    snprintf(m, sizeof m, "password authentication failed for user \"%s\" (the password is an "
             "API key)", s->user);
    tm_log(TM_LOG_WARN, NULL, "pgwire: %s: password authentication failed for user \"%s\"",
           s->c->peer, s->user);
    send_error(s, "FATAL", "28P01", m);
  }
  return ok;
}

/* The startup phase; true when the connection is ready for queries. */
static bool startup(conn_state *s) {
  tm_pg_conn *c = s->c;
  set_timeout(c->fd, SO_RCVTIMEO, STARTUP_TIMEOUT_MS);
  for (int round = 0; round < 3; round++) {
    uint8_t h[4];
    if (!read_full(s, h, 4)) return false;
    uint32_t n = be32(h);
    if (n < 8 || n > TM_PG_STARTUP_MAX) {
      send_error(s, "FATAL", "08P01", "invalid length of startup packet");
      return false;
    }
    if (!read_body(s, n - 4)) return false;
    tm_pg_startup st;
    tm_error e;
    tm_error_init(&e);
    int rc = tm_pg_startup_parse(s->body, n - 4, &st, &e);
    if (rc != TM_OK) {
      send_error(s, "FATAL", rc == TM_EUNSUPPORTED ? "0A000" : "08P01", e.message);
      return false;
    }
    if (st.code == TM_PG_CODE_SSL || st.code == TM_PG_CODE_GSSENC) {
      /* Neither TLS nor GSSAPI encryption: 'N', and the client goes on in the clear or leaves. */
      if (!write_full(c->fd, "N", 1)) return false;
      continue;
    }
    if (st.code == TM_PG_CODE_CANCEL) {
      cancel_request(c->srv, st.cancel_pid, st.cancel_key);
      return false;
    }
    if (c->refuse) {
      send_error(s, "FATAL", "53300", "sorry, too many clients already");
      return false;
    }
    snprintf(s->user, sizeof s->user, "%s", st.user);
    if (st.application_name)
      snprintf(s->params.application_name, sizeof s->params.application_name, "%s",
               st.application_name);
    if (st.client_encoding && strcasecmp(st.client_encoding, "UTF8") != 0 &&
        strcasecmp(st.client_encoding, "UTF-8") != 0 && strcasecmp(st.client_encoding, "unicode") &&
        strcasecmp(st.client_encoding, "auto") != 0 && strcasecmp(st.client_encoding, "SQL_ASCII"))
      tm_log(TM_LOG_INFO, NULL, "pgwire: %s asked for client_encoding %s; the server sends UTF8",
             c->peer, st.client_encoding);
    if (!authenticate(s)) return false;
    tm_error_init(&e);
    int w = TM_OK;
    size_t mark;
    auth_request(s, 0, NULL, 0); /* AuthenticationOk */
    for (size_t i = 0; w == TM_OK && tm_pg__reported(i); i++)
      w = tm_pg_put_param(&s->out, tm_pg__reported(i),
                          tm_pg__param_value(&s->params, tm_pg__reported(i)), &e);
    if (w == TM_OK) w = tm_pg_begin(&s->out, 'K', &mark, &e);
    if (w == TM_OK) w = tm_pg_put_i32(&s->out, (int32_t)c->pid, &e);
    if (w == TM_OK) w = tm_pg_put_i32(&s->out, (int32_t)c->secret, &e);
    if (w == TM_OK) {
      tm_pg_end(&s->out, mark);
      w = tm_pg_put_ready(&s->out, 'I', &e);
    }
    if (w != TM_OK || !flush(s)) return false;
    set_timeout(c->fd, SO_RCVTIMEO, 0); /* an idle client may stay */
    return true;
  }
  send_error(s, "FATAL", "08P01", "too many encryption requests");
  return false;
}

/* ---- statements and portals ------------------------------------------------------------------ */

static void portal_stop(conn_state *s, pg_portal *p) {
  if (!p->session) return;
  tm_sql_stmt_free(p->st);
  p->st = NULL;
  pthread_mutex_lock(&s->c->srv->mu);
  if (s->c->live == p->session) s->c->live = NULL;
  pthread_mutex_unlock(&s->c->srv->mu);
  session_put(s, p->session);
  p->session = NULL;
}

static void portal_free(conn_state *s, pg_portal *p) {
  if (!p) return;
  portal_stop(s, p);
  tm_sql_params_dispose(&p->params);
  tm_free(p->binary);
  tm_free(p->name);
  tm_free(p);
}

static void stmt_free(pg_stmt *st) {
  if (!st) return;
  tm_pg__special_dispose(&st->special);
  tm_sql_shape_dispose(&st->shape);
  tm_free(st->oids);
  tm_free(st->sql);
  tm_free(st->name);
  tm_free(st);
}

static pg_portal **find_portal(conn_state *s, const char *name) {
  for (size_t i = 0; i < s->n_portals; i++)
    if (!strcmp(s->portals[i]->name, name)) return &s->portals[i];
  return NULL;
}

static pg_stmt **find_stmt(conn_state *s, const char *name) {
  for (size_t i = 0; i < s->n_stmts; i++)
    if (!strcmp(s->stmts[i]->name, name)) return &s->stmts[i];
  return NULL;
}

static void drop_portal(conn_state *s, const char *name) {
  pg_portal **pp = find_portal(s, name);
  if (!pp) return;
  portal_free(s, *pp);
  *pp = s->portals[--s->n_portals];
}

static void drop_stmt(conn_state *s, const char *name) {
  pg_stmt **sp = find_stmt(s, name);
  if (!sp) return;
  /* Portals made from it go with it. */
  for (size_t i = 0; i < s->n_portals;) {
    if (s->portals[i]->stmt == *sp) {
      portal_free(s, s->portals[i]);
      s->portals[i] = s->portals[--s->n_portals];
    } else {
      i++;
    }
  }
  stmt_free(*sp);
  *sp = s->stmts[--s->n_stmts];
}

/* The end of an implicit transaction (Sync outside BEGIN): portals close. */
static void close_portals(conn_state *s) {
  while (s->n_portals) portal_free(s, s->portals[--s->n_portals]);
}

/* Reports a failed statement: ErrorResponse with its SQLSTATE; marks the block failed. */
static void statement_error(conn_state *s, int rc, const tm_error *e) {
  const char *msg = e->message[0] ? e->message : tm_code_name(rc);
  char buf[TM_ERROR_MESSAGE_MAX + 64];
  pthread_mutex_lock(&s->c->srv->mu);
  bool stopping = s->c->srv->stopping;
  pthread_mutex_unlock(&s->c->srv->mu);
  if (rc == TM_ECANCELLED && stopping) {
    /* The server stops: its statements were interrupted, the connection goes. */
    send_error(s, "FATAL", "57P01", "terminating connection due to administrator command");
    return;
  }
  if (rc == TM_ECANCELLED) snprintf(buf, sizeof buf, "canceling statement due to user request");
  else snprintf(buf, sizeof buf, "%s", msg);
  send_error(s, "ERROR", tm_pg__sqlstate(rc, msg), buf);
  if (s->in_txn) s->failed_txn = true;
}

/* RowDescription for columns (names, kinds), with per-column formats (NULL: text). */
static int row_description(conn_state *s, size_t n, const char *const *names,
                           const tm_sql_type *kinds, const bool *binary, tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(&s->out, 'T', &mark, err));
  TM_TRY(tm_pg_put_i16(&s->out, (int16_t)n, err));
  for (size_t i = 0; i < n; i++) {
    TM_TRY(tm_pg_put_str(&s->out, names[i], err));
    TM_TRY(tm_pg_put_i32(&s->out, 0, err));  /* table OID */
    TM_TRY(tm_pg_put_i16(&s->out, 0, err));  /* column number */
    TM_TRY(tm_pg_put_i32(&s->out, (int32_t)tm_pg__oid(kinds[i]), err));
    TM_TRY(tm_pg_put_i16(&s->out, tm_pg__typlen(kinds[i]), err));
    TM_TRY(tm_pg_put_i32(&s->out, -1, err)); /* type modifier */
    TM_TRY(tm_pg_put_i16(&s->out, binary && binary[i] ? 1 : 0, err));
  }
  tm_pg_end(&s->out, mark);
  return TM_OK;
}

/* RowDescription of a running statement. */
static int describe_running(conn_state *s, tm_sql_stmt *st, const bool *binary, tm_error *err) {
  size_t n = tm_sql_column_count(st);
  const char **names = tm_calloc(n ? n : 1, sizeof *names);
  tm_sql_type *kinds = tm_calloc(n ? n : 1, sizeof *kinds);
  int rc = names && kinds ? TM_OK : tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < n; i++) {
    names[i] = tm_sql_column_name(st, i);
    kinds[i] = tm_sql_column_type(st, i);
  }
  if (rc == TM_OK) rc = row_description(s, n, names, kinds, binary, err);
  tm_free(names);
  tm_free(kinds);
  return rc;
}

/* One DataRow of the current row. */
static int data_row(conn_state *s, const pg_portal *p, tm_error *err) {
  size_t n = tm_sql_column_count(p->st), mark;
  TM_TRY(tm_pg_begin(&s->out, 'D', &mark, err));
  TM_TRY(tm_pg_put_i16(&s->out, (int16_t)n, err));
  for (size_t i = 0; i < n; i++) {
    bool bin = p->binary && i < p->n_binary ? p->binary[i] : p->all_format == 1;
    TM_TRY(tm_pg__cell(p->st, i, bin, &s->scratch, &s->out, err));
  }
  tm_pg_end(&s->out, mark);
  return TM_OK;
}

/*
 * Runs (or resumes) a portal's DuckDB statement: DataRows, then
 * CommandComplete, or PortalSuspended after max_rows (0: no limit). The
 * RowDescription is sent first when describe is set (simple query).
 */
/*
 * Counts a statement that ended (rc: how) in the query families /v1/sql
 * counts in (query_executions, query_failures, query_duration_ms), with the
 * protocol label `postgres`. Reads the datasets of p's session: call before
 * portal_stop.
 */
static void note_query(conn_state *s, const pg_portal *p, int rc, const tm_error *e) {
  tm_runtime *rt = s->rt;
  const char *datasets = p->session ? tm_sql_session_datasets(p->session) : "";
  bool failed = rc != TM_OK;
  const char *tags = failed ? "error" : "";
  const char *l3[] = {tags, datasets, "postgres"};
  tm_metric_add(rt->m_query_exec, l3, 1);
  if (failed)
    tm_metric_add(rt->m_query_fail,
                  (const char *[]){tags, datasets, tm_sql_error_code(rc, e->message), "postgres"}, 1);
  tm_metric_observe(rt->m_query_dur, l3, (double)(tm_monotonic_ns() - p->t0_ns) / 1e6);
}

/* Starts a portal's DuckDB statement in a session of the pool (the session stays the portal's). */
static int portal_start(conn_state *s, pg_portal *p, tm_error *err) {
  p->t0_ns = tm_monotonic_ns();
  TM_TRY(session_take(s, &p->session, err));
  pthread_mutex_lock(&s->c->srv->mu);
  s->c->live = p->session;
  pthread_mutex_unlock(&s->c->srv->mu);
  int rc = tm_sql_prepare_params(p->session, p->stmt->sql, p->params.n ? &p->params : NULL,
                                 &p->st, err);
  if (rc != TM_OK) {
    note_query(s, p, rc, err);
    portal_stop(s, p);
  }
  return rc;
}

static int run_portal(conn_state *s, pg_portal *p, uint32_t max_rows, bool describe,
                      tm_error *err) {
  int rc = TM_OK;
  if (p->done) return tm_pg_put_complete(&s->out, "SELECT 0", err);
  if (!p->st) {
    TM_TRY(portal_start(s, p, err));
    if (describe) rc = describe_running(s, p->st, p->binary, err);
  }
  uint32_t sent = 0;
  while (rc == TM_OK) {
    if (max_rows && sent == max_rows) {
      rc = tm_pg_put_empty(&s->out, 's', err); /* PortalSuspended: the statement stays open */
      return rc == TM_OK ? TM_OK : rc;
    }
    rc = tm_sql_step(p->st, err);
    if (rc == TM_ITEROVER) {
      char tag[40];
      snprintf(tag, sizeof tag, "SELECT %lld", (long long)p->rows);
      p->done = true;
      note_query(s, p, TM_OK, err);
      portal_stop(s, p);
      return tm_pg_put_complete(&s->out, tag, err);
    }
    if (rc != TM_OK) break;
    rc = data_row(s, p, err);
    p->rows++;
    sent++;
    if (rc == TM_OK && s->out.len >= FLUSH_AT && !flush(s))
      rc = tm_error_set(err, TM_ECANCELLED, "the client left");
  }
  note_query(s, p, rc, err);
  portal_stop(s, p);
  p->done = true;
  return rc;
}

/* One COPY text or CSV field from a DataRow field (Int32 length, bytes) at f. */
static int copy_field(conn_state *s, const tm_pg_special_result *sp, const uint8_t *f,
                      tm_error *err) {
  int32_t n = (int32_t)(((uint32_t)f[0] << 24) | ((uint32_t)f[1] << 16) | ((uint32_t)f[2] << 8) | f[3]);
  const char *v = (const char *)f + 4;
  if (n < 0) return sp->copy_csv ? TM_OK : tm_buf_puts(&s->out, "\\N", err);
  if (sp->copy_csv) {
    bool quote = n == 0;
    for (int32_t i = 0; i < n && !quote; i++)
      quote = v[i] == sp->copy_delim || v[i] == '"' || v[i] == '\n' || v[i] == '\r';
    if (!quote) return tm_buf_append(&s->out, v, (size_t)n, err);
    TM_TRY(tm_buf_putc(&s->out, '"', err));
    for (int32_t i = 0; i < n; i++) {
      if (v[i] == '"') TM_TRY(tm_buf_putc(&s->out, '"', err));
      TM_TRY(tm_buf_putc(&s->out, v[i], err));
    }
    return tm_buf_putc(&s->out, '"', err);
  }
  for (int32_t i = 0; i < n; i++) {
    char c = v[i];
    const char *esc = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
    if (!esc && c == sp->copy_delim) {
      TM_TRY(tm_buf_putc(&s->out, '\\', err));
      TM_TRY(tm_buf_putc(&s->out, c, err));
    } else if (esc) {
      TM_TRY(tm_buf_puts(&s->out, esc, err));
    } else {
      TM_TRY(tm_buf_putc(&s->out, c, err));
    }
  }
  return TM_OK;
}

/* COPY ... TO STDOUT: CopyOutResponse, a CopyData per row, CopyDone, "COPY n". */
static int copy_out(conn_state *s, const tm_pg_special_result *sp, tm_error *err) {
  pg_portal p;
  memset(&p, 0, sizeof p);
  tm_buf row = TM_BUF_INIT(OUT_LIMIT);
  p.t0_ns = tm_monotonic_ns();
  int rc = session_take(s, &p.session, err);
  if (rc != TM_OK) return rc;
  pthread_mutex_lock(&s->c->srv->mu);
  s->c->live = p.session;
  pthread_mutex_unlock(&s->c->srv->mu);
  rc = tm_sql_prepare(p.session, sp->inner_sql, &p.st, err);
  size_t n = rc == TM_OK ? tm_sql_column_count(p.st) : 0, mark;
  if (rc == TM_OK) rc = tm_pg_begin(&s->out, 'H', &mark, err);
  if (rc == TM_OK) rc = tm_buf_putc(&s->out, 0, err);
  if (rc == TM_OK) rc = tm_pg_put_i16(&s->out, (int16_t)n, err);
  for (size_t i = 0; rc == TM_OK && i < n; i++) rc = tm_pg_put_i16(&s->out, 0, err);
  if (rc == TM_OK) tm_pg_end(&s->out, mark);
  if (rc == TM_OK && sp->copy_header) {
    rc = tm_pg_begin(&s->out, 'd', &mark, err);
    for (size_t i = 0; rc == TM_OK && i < n; i++) {
      const char *name = tm_sql_column_name(p.st, i);
      tm_buf_clear(&row);
      rc = tm_pg_put_i32(&row, (int32_t)strlen(name), err);
      if (rc == TM_OK) rc = tm_buf_puts(&row, name, err);
      if (rc == TM_OK && i) rc = tm_buf_putc(&s->out, sp->copy_delim, err);
      if (rc == TM_OK) rc = copy_field(s, sp, (const uint8_t *)row.ptr, err);
    }
    if (rc == TM_OK) rc = tm_buf_putc(&s->out, '\n', err);
    if (rc == TM_OK) tm_pg_end(&s->out, mark);
  }
  int64_t rows = 0;
  while (rc == TM_OK) {
    rc = tm_sql_step(p.st, err);
    if (rc == TM_ITEROVER) {
      rc = TM_OK;
      break;
    }
    if (rc == TM_OK) rc = tm_pg_begin(&s->out, 'd', &mark, err);
    for (size_t i = 0; rc == TM_OK && i < n; i++) {
      tm_buf_clear(&row);
      rc = tm_pg__cell(p.st, i, false, &s->scratch, &row, err);
      if (rc == TM_OK && i) rc = tm_buf_putc(&s->out, sp->copy_delim, err);
      if (rc == TM_OK) rc = copy_field(s, sp, (const uint8_t *)row.ptr, err);
    }
    if (rc == TM_OK) rc = tm_buf_putc(&s->out, '\n', err);
    if (rc == TM_OK) {
      tm_pg_end(&s->out, mark);
      rows++;
      if (s->out.len >= FLUSH_AT && !flush(s)) rc = tm_error_set(err, TM_ECANCELLED, "the client left");
    }
  }
  note_query(s, &p, rc, err);
  portal_stop(s, &p);
  tm_buf_dispose(&row);
  if (rc != TM_OK) return rc; /* an ErrorResponse ends the copy for the client */
  char tag[40];
  snprintf(tag, sizeof tag, "COPY %lld", (long long)rows);
  TM_TRY(tm_pg_put_empty(&s->out, 'c', err));
  return tm_pg_put_complete(&s->out, tag, err);
}

static int stmt_new(conn_state *s, const char *name, const char *sql, bool apply, bool describe,
                    pg_stmt **out, tm_error *err);

/* EXECUTE name [(args)]: the arguments evaluated by DuckDB, bound as text to the statement. */
static int execute_prepared(conn_state *s, const tm_pg_special_result *sp, tm_error *err) {
  pg_stmt **sp_stmt = find_stmt(s, sp->stmt_name);
  if (!sp_stmt)
    return tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" does not exist", sp->stmt_name);
  pg_stmt *st = *sp_stmt;
  if (st->special.kind != PG_DUCKDB)
    return tm_error_set(err, TM_EINVALID, "EXECUTE of a prepared %s is not supported", st->special.tag);
  pg_portal p;
  memset(&p, 0, sizeof p);
  p.stmt = st;
  int rc = TM_OK;
  if (sp->inner_sql) {
    tm_sql_session *ss = NULL;
    tm_sql_stmt *args = NULL;
    rc = session_take(s, &ss, err);
    if (rc == TM_OK) rc = tm_sql_prepare(ss, sp->inner_sql, &args, err);
    if (rc == TM_OK) rc = tm_sql_step(args, err);
    size_t n = rc == TM_OK ? tm_sql_column_count(args) : 0;
    if (rc == TM_OK && n && !(p.params.items = tm_calloc(n, sizeof *p.params.items)))
      rc = tm_error_nomem(err);
    tm_buf cell = TM_BUF_INIT(TM_PG_MSG_MAX);
    for (size_t i = 0; rc == TM_OK && i < n; i++) {
      tm_sql_param *v = &p.params.items[i];
      p.params.n = i + 1;
      if (tm_sql_column_is_null(args, i)) {
        v->kind = TM_SQL_PARAM_NULL;
        continue;
      }
      tm_cell_kind kind;
      tm_buf_clear(&cell);
      rc = tm_sql_column_render(args, i, &cell, &kind, err);
      if (rc == TM_OK && !(v->text = tm_malloc(cell.len + 1))) rc = tm_error_nomem(err);
      if (rc == TM_OK) {
        memcpy(v->text, cell.ptr ? cell.ptr : "", cell.len);
        v->text[cell.len] = '\0';
        v->text_len = cell.len;
        v->kind = TM_SQL_PARAM_TEXT;
      }
    }
    tm_buf_dispose(&cell);
    tm_sql_stmt_free(args);
    session_put(s, ss);
  }
  if (rc == TM_OK && p.params.n != st->shape.n_params)
    rc = tm_error_set(err, TM_EINVALID, "EXECUTE %s: %zu arguments for %zu parameters",
                      sp->stmt_name, p.params.n, st->shape.n_params);
  if (rc == TM_OK) rc = run_portal(s, &p, 0, true, err);
  portal_stop(s, &p);
  tm_sql_params_dispose(&p.params);
  return rc;
}

/* Answers a special statement (SET, SHOW, BEGIN, ...) as a portal's execution. */
static int run_special(conn_state *s, const tm_pg_special_result *sp, const bool *binary,
                       bool describe, tm_error *err) {
  switch (sp->kind) {
    case PG_EMPTY: return tm_pg_put_empty(&s->out, 'I', err);
    case PG_COPY: return copy_out(s, sp, err);
    case PG_EXECUTE: return execute_prepared(s, sp, err);
    case PG_DEALLOCATE:
      if (sp->stmt_name[0] && !find_stmt(s, sp->stmt_name))
        return tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" does not exist",
                            sp->stmt_name);
      if (sp->stmt_name[0]) drop_stmt(s, sp->stmt_name);
      else
        for (size_t i = s->n_stmts; i-- > 0;)
          if (s->stmts[i]->name[0]) drop_stmt(s, s->stmts[i]->name);
      return tm_pg_put_complete(&s->out, sp->tag, err);
    case PG_PREPARE: {
      if (find_stmt(s, sp->stmt_name))
        return tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" already exists",
                            sp->stmt_name);
      if (s->n_stmts == MAX_STMTS)
        return tm_error_set(err, TM_ETOOLARGE, "more than %d prepared statements", MAX_STMTS);
      pg_stmt *st = NULL;
      TM_TRY(stmt_new(s, sp->stmt_name, sp->inner_sql, false, true, &st, err));
      s->stmts[s->n_stmts++] = st;
      return tm_pg_put_complete(&s->out, sp->tag, err);
    }
    case PG_TXN:
      if (!strcmp(sp->tag, "BEGIN") || !strcmp(sp->tag, "START TRANSACTION")) s->in_txn = true;
      else {
        s->in_txn = false;
        s->failed_txn = false;
      }
      return tm_pg_put_complete(&s->out, sp->tag, err);
    case PG_SET:
      if (sp->report)
        TM_TRY(tm_pg_put_param(&s->out, sp->report, tm_pg__param_value(&s->params, sp->report), err));
      return tm_pg_put_complete(&s->out, sp->tag, err);
    case PG_SHOW: {
      const char *names[1] = {sp->show_name};
      tm_sql_type kinds[1] = {TM_SQLT_TEXT};
      if (describe) TM_TRY(row_description(s, 1, names, kinds, NULL, err));
      size_t mark;
      const char *v = tm_pg__param_value(&s->params, sp->show_name);
      if (!v) v = sp->show_value;
      TM_TRY(tm_pg_begin(&s->out, 'D', &mark, err));
      TM_TRY(tm_pg_put_i16(&s->out, 1, err));
      TM_TRY(tm_pg_put_i32(&s->out, (int32_t)strlen(v), err));
      (void)binary; /* text's binary form is the same bytes */
      TM_TRY(tm_buf_puts(&s->out, v, err));
      tm_pg_end(&s->out, mark);
      return tm_pg_put_complete(&s->out, "SHOW", err);
    }
    default: return tm_error_set(err, TM_ERROR, "not a special statement");
  }
}

/* A new statement for sql: classified (SET applied when apply), rewritten, described. */
static int stmt_new(conn_state *s, const char *name, const char *sql, bool apply, bool describe,
                    pg_stmt **out, tm_error *err) {
  pg_stmt *st = tm_calloc(1, sizeof *st);
  if (!st) return tm_error_nomem(err);
  int rc = (st->name = tm_strdup(name)) ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_pg__classify(sql, &s->params, apply, &st->special, err);
  if (rc == TM_OK && st->special.kind == PG_DUCKDB) rc = tm_pg__rewrite(s->rt, sql, &st->sql, err);
  else if (rc == TM_OK && !(st->sql = tm_strdup(sql))) rc = tm_error_nomem(err);
  if (rc == TM_OK && st->special.kind == PG_DUCKDB && describe) {
    tm_sql_session *ss = NULL;
    rc = session_take(s, &ss, err);
    if (rc == TM_OK) rc = tm_sql_describe(ss, st->sql, &st->shape, err);
    session_put(s, ss);
  }
  if (rc != TM_OK) {
    stmt_free(st);
    return rc;
  }
  *out = st;
  return TM_OK;
}

/* ---- the simple query protocol --------------------------------------------------------------- */

static int simple_one(conn_state *s, const char *sql, tm_error *err) {
  if (s->failed_txn) {
    tm_pg_special_result sp;
    bool ends = tm_pg__classify(sql, &s->params, false, &sp, err) == TM_OK && sp.kind == PG_TXN &&
                strcmp(sp.tag, "BEGIN") != 0 && strcmp(sp.tag, "START TRANSACTION") != 0;
    tm_pg__special_dispose(&sp);
    if (!ends)
      return tm_error_set(err, TM_EINVALID, "current transaction is aborted, commands ignored "
                          "until end of transaction block");
  }
  pg_stmt *st = NULL;
  TM_TRY(stmt_new(s, "", sql, true, false, &st, err));
  int rc;
  if (st->special.kind != PG_DUCKDB) {
    rc = run_special(s, &st->special, NULL, true, err);
  } else {
    pg_portal p;
    memset(&p, 0, sizeof p);
    p.stmt = st;
    rc = run_portal(s, &p, 0, true, err);
    portal_stop(s, &p);
  }
  stmt_free(st);
  return rc;
}

static void simple_query(conn_state *s, const uint8_t *body, size_t n) {
  const char *sql;
  tm_error e;
  tm_error_init(&e);
  if (tm_pg_parse_query(body, n, &sql, &e) != TM_OK) {
    send_error(s, "FATAL", "08P01", e.message);
    return;
  }
  close_portals(s); /* a Query ends the unnamed portal, as PostgreSQL */
  drop_stmt(s, "");
  tm_sqlsplit sp;
  tm_sqlsplit_init(&sp, TM_PG_MSG_MAX + 1);
  int rc = tm_sqlsplit_feed(&sp, sql, strlen(sql), &e);
  size_t ran = 0;
  char *one = NULL;
  while (rc == TM_OK && !s->closing) {
    rc = tm_sqlsplit_next(&sp, &one, &e);
    if (rc == TM_ITEROVER) rc = tm_sqlsplit_finish(&sp, &one, &e);
    if (rc == TM_ITEROVER) break;
    if (rc != TM_OK) break;
    tm_error_init(&e);
    rc = simple_one(s, one, &e);
    tm_free(one);
    one = NULL;
    ran++;
  }
  tm_sqlsplit_dispose(&sp);
  if (rc != TM_OK && rc != TM_ITEROVER) statement_error(s, rc, &e);
  else if (ran == 0 && tm_pg_put_empty(&s->out, 'I', &e) != TM_OK) /* EmptyQueryResponse */
    s->closing = true;
  char status = s->failed_txn ? 'E' : s->in_txn ? 'T' : 'I';
  if (tm_pg_put_ready(&s->out, status, &e) != TM_OK) s->closing = true;
  flush(s);
}

/* ---- the extended query protocol ------------------------------------------------------------- */

static int ext_parse(conn_state *s, const uint8_t *body, size_t n, tm_error *err) {
  tm_pg_parse m;
  TM_TRY(tm_pg_parse_parse(body, n, &m, err));
  if (m.name[0] && find_stmt(s, m.name))
    return tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" already exists", m.name);
  if (!m.name[0]) drop_stmt(s, "");
  if (s->n_stmts == MAX_STMTS)
    return tm_error_set(err, TM_ETOOLARGE, "more than %d prepared statements", MAX_STMTS);
  pg_stmt *st = NULL;
  TM_TRY(stmt_new(s, m.name, m.query, false, true, &st, err));
  pg_special k = st->special.kind;
  if (k == PG_PREPARE || k == PG_EXECUTE || k == PG_DEALLOCATE) {
    stmt_free(st);
    return tm_error_set(err, TM_EINVALID, "PREPARE, EXECUTE and DEALLOCATE are for the simple "
                        "query protocol: the extended protocol has Parse, Bind and Close");
  }
  if (m.n_types) {
    st->oids = tm_calloc(m.n_types, sizeof *st->oids);
    if (!st->oids) {
      stmt_free(st);
      return tm_error_nomem(err);
    }
    st->n_oids = m.n_types;
    for (size_t i = 0; i < m.n_types; i++) st->oids[i] = tm_pg_u32_at(m.types, i);
  }
  s->stmts[s->n_stmts++] = st;
  return tm_pg_put_empty(&s->out, '1', err);
}

static int ext_bind(conn_state *s, const uint8_t *body, size_t n, tm_error *err) {
  tm_pg_bind b;
  TM_TRY(tm_pg_parse_bind(body, n, &b, err));
  int rc = TM_OK;
  pg_portal *p = NULL;
  pg_stmt **sp = find_stmt(s, b.stmt);
  if (!sp) rc = tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" does not exist", b.stmt);
  else if (b.portal[0] && find_portal(s, b.portal))
    rc = tm_error_set(err, TM_EINVALID, "portal \"%s\" already exists", b.portal);
  else if ((*sp)->special.kind == PG_DUCKDB && b.n_values != (*sp)->shape.n_params)
    rc = tm_error_set(err, TM_EINVALID, "bind message supplies %zu parameters, but prepared "
                      "statement \"%s\" requires %zu", b.n_values, b.stmt, (*sp)->shape.n_params);
  if (rc == TM_OK && !b.portal[0]) drop_portal(s, "");
  if (rc == TM_OK && s->n_portals == MAX_PORTALS)
    rc = tm_error_set(err, TM_ETOOLARGE, "more than %d open portals", MAX_PORTALS);
  if (rc == TM_OK && !(p = tm_calloc(1, sizeof *p))) rc = tm_error_nomem(err);
  if (rc == TM_OK && !(p->name = tm_strdup(b.portal))) rc = tm_error_nomem(err);
  pg_stmt *st = rc == TM_OK ? *sp : NULL;
  if (rc == TM_OK && b.n_values) {
    p->params.items = tm_calloc(b.n_values, sizeof *p->params.items);
    if (!p->params.items) rc = tm_error_nomem(err);
    for (size_t i = 0; rc == TM_OK && i < b.n_values; i++) {
      int16_t f = b.n_formats == 0 ? 0 : tm_pg_i16_at(b.formats, b.n_formats == 1 ? 0 : i);
      uint32_t oid = i < st->n_oids ? st->oids[i] : 0;
      tm_sql_type kind = i < st->shape.n_params ? st->shape.param_types[i] : TM_SQLT_OTHER;
      if (f != 0 && f != 1) rc = tm_error_set(err, TM_EINVALID, "unsupported format code %d", f);
      else rc = tm_pg__param(&b.values[i], f == 1, oid, kind, &p->params.items[i], err);
      if (rc == TM_OK) p->params.n = i + 1;
    }
  }
  size_t n_cols = st && st->special.kind == PG_DUCKDB ? st->shape.n_cols : 1;
  if (st && st->shape.cols_unknown && b.n_rformats > 1) n_cols = b.n_rformats;
  if (rc == TM_OK) {
    p->n_binary = n_cols;
    if (!(p->binary = tm_calloc(n_cols ? n_cols : 1, sizeof *p->binary))) rc = tm_error_nomem(err);
    if (b.n_rformats > 1 && b.n_rformats != n_cols)
      rc = tm_error_set(err, TM_EINVALID, "bind message has %zu result formats but the query "
                        "has %zu columns", b.n_rformats, n_cols);
    p->all_format = b.n_rformats == 0 ? 0 : b.n_rformats == 1 ? tm_pg_i16_at(b.rformats, 0) : -1;
    for (size_t i = 0; rc == TM_OK && i < n_cols && b.n_rformats; i++) {
      int16_t f = tm_pg_i16_at(b.rformats, b.n_rformats == 1 ? 0 : i);
      if (f != 0 && f != 1) rc = tm_error_set(err, TM_EINVALID, "unsupported format code %d", f);
      p->binary[i] = f == 1;
    }
  }
  tm_free(b.values);
  if (rc != TM_OK) {
    portal_free(s, p);
    return rc;
  }
  p->stmt = st;
  s->portals[s->n_portals++] = p;
  return tm_pg_put_empty(&s->out, '2', err);
}

static int ext_describe(conn_state *s, const uint8_t *body, size_t n, tm_error *err) {
  char kind;
  const char *name;
  TM_TRY(tm_pg_parse_target(body, n, &kind, &name, err));
  pg_stmt *st;
  const bool *binary = NULL;
  if (kind == 'S') {
    pg_stmt **sp = find_stmt(s, name);
    if (!sp) return tm_error_set(err, TM_EINVALID, "prepared statement \"%s\" does not exist", name);
    st = *sp;
    size_t mark;
    size_t np = st->special.kind == PG_DUCKDB ? st->shape.n_params : 0;
    TM_TRY(tm_pg_begin(&s->out, 't', &mark, err));
    TM_TRY(tm_pg_put_i16(&s->out, (int16_t)np, err));
    for (size_t i = 0; i < np; i++) {
      uint32_t oid = i < st->n_oids && st->oids[i] ? st->oids[i] : tm_pg__oid(st->shape.param_types[i]);
      TM_TRY(tm_pg_put_i32(&s->out, (int32_t)oid, err));
    }
    tm_pg_end(&s->out, mark);
  } else {
    pg_portal **pp = find_portal(s, name);
    if (!pp) return tm_error_set(err, TM_EINVALID, "portal \"%s\" does not exist", name);
    st = (*pp)->stmt;
    binary = (*pp)->binary;
  }
  if (st->special.kind == PG_SHOW) {
    const char *names[1] = {st->special.show_name};
    tm_sql_type kinds[1] = {TM_SQLT_TEXT};
    return row_description(s, 1, names, kinds, binary, err);
  }
  if (kind == 'P' && st->special.kind == PG_DUCKDB) {
    /* The portal's columns as they will be sent: its statement starts now (DuckDB streams it
     * from the next Execute), so that the types described are the bound statement's. */
    pg_portal *p = *find_portal(s, name);
    if (!p->st && !p->done) TM_TRY(portal_start(s, p, err));
    size_t nc = p->st ? tm_sql_column_count(p->st) : p->n_binary;
    if (nc != p->n_binary) {
      /* DuckDB's description before binding had another column count (an untyped parameter). */
      if (p->all_format < 0)
        return tm_error_set(err, TM_EINVALID, "the bound statement has %zu columns, not the %zu "
                            "its result formats were given for", nc, p->n_binary);
      bool *b = tm_calloc(nc ? nc : 1, sizeof *b);
      if (!b) return tm_error_nomem(err);
      for (size_t i = 0; i < nc; i++) b[i] = p->all_format == 1;
      tm_free(p->binary);
      p->binary = b;
      p->n_binary = nc;
    }
    if (p->st && tm_sql_column_count(p->st) == 0) return tm_pg_put_empty(&s->out, 'n', err);
    if (p->st) return describe_running(s, p->st, p->binary, err);
  }
  /* A statement's columns, as DuckDB knows them before binding (none: NoData; columns that wait
   * for the parameters' types are described by Describe of the portal). */
  if (st->special.kind != PG_DUCKDB || st->shape.n_cols == 0) return tm_pg_put_empty(&s->out, 'n', err);
  return row_description(s, st->shape.n_cols, (const char *const *)st->shape.col_names,
                         st->shape.col_types, binary, err);
}

static int ext_execute(conn_state *s, const uint8_t *body, size_t n, tm_error *err) {
  const char *name;
  uint32_t max_rows;
  TM_TRY(tm_pg_parse_execute(body, n, &name, &max_rows, err));
  pg_portal **pp = find_portal(s, name);
  if (!pp) return tm_error_set(err, TM_EINVALID, "portal \"%s\" does not exist", name);
  pg_portal *p = *pp;
  if (s->failed_txn && p->stmt->special.kind != PG_TXN)
    return tm_error_set(err, TM_EINVALID, "current transaction is aborted, commands ignored until "
                        "end of transaction block");
  if (p->stmt->special.kind != PG_DUCKDB) {
    if (p->stmt->special.kind == PG_SET) {
      /* Parse checked it; Execute applies it. */
      tm_pg_special_result again;
      TM_TRY(tm_pg__classify(p->stmt->sql, &s->params, true, &again, err));
    }
    return run_special(s, &p->stmt->special, p->binary, false, err);
  }
  return run_portal(s, p, max_rows, false, err);
}

static int ext_close(conn_state *s, const uint8_t *body, size_t n, tm_error *err) {
  char kind;
  const char *name;
  TM_TRY(tm_pg_parse_target(body, n, &kind, &name, err));
  if (kind == 'S') drop_stmt(s, name);
  else drop_portal(s, name);
  return tm_pg_put_empty(&s->out, '3', err);
}

/* ---- the message loop ------------------------------------------------------------------------ */

static void serve(conn_state *s) {
  while (!s->closing) {
    uint8_t h[5];
    if (!read_full(s, h, 5)) return;
    uint32_t n = be32(h + 1);
    if (n < 4 || (size_t)(n - 4) > TM_PG_MSG_MAX) {
      char m[128];
      snprintf(m, sizeof m, "invalid message length %u (at most %zu bytes)", n, TM_PG_MSG_MAX);
      send_error(s, "FATAL", n < 4 ? "08P01" : "54000", m);
      return;
    }
    if (!read_body(s, n - 4)) {
      if (!s->body) send_error(s, "FATAL", "53200", "out of memory");
      return;
    }
    size_t len = n - 4;
    char type = (char)h[0];
    if (type == 'X') return; /* Terminate */
    tm_error_init(&s->err);
    int rc = TM_OK;
    if (s->skip_to_sync && type != 'S') continue;
    switch (type) {
      case 'Q': simple_query(s, s->body, len); continue;
      case 'P': rc = ext_parse(s, s->body, len, &s->err); break;
      case 'B': rc = ext_bind(s, s->body, len, &s->err); break;
      case 'D': rc = ext_describe(s, s->body, len, &s->err); break;
      case 'E': rc = ext_execute(s, s->body, len, &s->err); break;
      case 'C': rc = ext_close(s, s->body, len, &s->err); break;
      case 'H': flush(s); continue;
      case 'S': {
        s->skip_to_sync = false;
        if (!s->in_txn) close_portals(s);
        char status = s->failed_txn ? 'E' : s->in_txn ? 'T' : 'I';
        if (tm_pg_put_ready(&s->out, status, &s->err) != TM_OK) s->closing = true;
        flush(s);
        continue;
      }
      case 'd': case 'c': case 'f': continue; /* COPY data from a client: no COPY FROM here */
      default: {
        char m[96];
        snprintf(m, sizeof m, "invalid frontend message type %d", (int)(unsigned char)type);
        send_error(s, "FATAL", "08P01", m);
        return;
      }
    }
    if (rc == TM_ECORRUPT) {
      send_error(s, "FATAL", "08P01", s->err.message);
      return;
    }
    if (rc != TM_OK) {
      statement_error(s, rc, &s->err);
      s->skip_to_sync = true;
    }
    if (s->out.len >= FLUSH_AT) flush(s);
  }
}

void tm_pg__conn_run(tm_pg_conn *c) {
  conn_state *s = tm_calloc(1, sizeof *s);
  if (s) {
    s->c = c;
    s->rt = c->srv->rt;
    tm_buf_init(&s->out, OUT_LIMIT);
    tm_buf_init(&s->scratch, OUT_LIMIT);
    tm_error_init(&s->err);
    snprintf(s->params.extra_float_digits, sizeof s->params.extra_float_digits, "1");
    set_timeout(c->fd, SO_SNDTIMEO, SEND_TIMEOUT_MS);
    if (startup(s)) serve(s);
    flush(s);
    close_portals(s);
    while (s->n_stmts) stmt_free(s->stmts[--s->n_stmts]);
    tm_rt__session_put(s->rt, s->own);
    tm_buf_dispose(&s->out);
    tm_buf_dispose(&s->scratch);
    tm_free(s->body);
    tm_free(s);
  }
}
