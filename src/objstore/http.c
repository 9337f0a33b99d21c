/*
 * http.c - one request to a remote object store through libcurl, with a
 * shared connection pool, retries and error classes (objstore layer,
 * shared by the s3 and azure backends; http_int.h has the contract).
 *
 * Each attempt takes an easy handle from the client's pool, asks the
 * backend for the URL and the (freshly signed) headers, and classifies
 * the outcome:
 *
 *   success      2xx, or a status the caller listed as acceptable
 *   transient    connection refused/reset, timeouts, 5xx, 429, and what
 *                the backend adds (S3's RequestTimeout): retried after
 *                base * factor^n ms (capped, with jitter); a ranged read
 *                resumes after the bytes it already delivered, with
 *                If-Match on the ETag
 *   final        everything else, worded by the backend with the
 *                service's error code and message in the text
 *
 * Error bodies are kept (16 KiB at most) only to pick out Code and Message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "objstore/http_int.h"
#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#define ERRBODY_MAX 16384

void tm_http_options_init(tm_http_options *o) {
  memset(o, 0, sizeof *o);
  o->max_retries = 4;
  o->retry_base_ms = 200;
  o->retry_max_ms = 5000;
  o->backoff_factor = 2.0;
  o->retry_timeout_ms = 0;
  o->connect_timeout_ms = 10000;
  o->request_timeout_ms = 0;
  o->stall_timeout_ms = 30000;
  o->max_idle_handles = 16;
}

typedef struct xfer {
  tm_http_client *c;
  const tm_http_req *req;
  CURL *h;
  tm_error *err;
  long status;           /* of the final response (after any 100 Continue) */
  bool status_known;
  /* Ranged delivery: object offsets. */
  uint64_t want_start;   /* next object byte the sink wants */
  uint64_t want_end;     /* exclusive; UINT64_MAX: to the end */
  uint64_t body_pos;     /* object offset of the next body byte */
  bool body_started;
  bool done_early;       /* we stopped a body that went past the range */
  uint64_t delivered;    /* this attempt */
  int sink_rc;           /* a sink or buffer error that aborted the transfer */
  /* Headers of the final response. */
  char content_range[128];
  char etag[160];
  char hint[64];         /* the backend's hint_header */
  char code_hdr[64];     /* the backend's code_header */
  uint64_t content_length;
  bool has_content_length;
  /* Error body. */
  char errbody[ERRBODY_MAX];
  size_t errlen;
  /* Upload. */
  uint64_t up_pos;
  int read_rc;
} xfer;

static bool is_2xx(long st) { return st >= 200 && st < 300; }

static long response_status(xfer *x) {
  if (!x->status_known) {
    long st = 0;
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
    x->status = st;
    x->status_known = true;
  }
  return x->status;
}

void tm_http__what(char *buf, size_t cap, const tm_http_client *c, const tm_http_req *req) {
  snprintf(buf, cap, "%s%s%s", c->store->name, req->key ? "/" : "", req->key ? req->key : "");
}

/* Parses "bytes A-B/T"; *start_out = A. */
static bool parse_content_range(const char *v, uint64_t *start_out) {
  if (strncmp(v, "bytes ", 6) != 0) return false;
  const char *a = v + 6;
  const char *dash = strchr(a, '-');
  if (!dash) return false;
  return tm_parse_uint64(a, (size_t)(dash - a), start_out) == TM_OK;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp) {
  xfer *x = userp;
  size_t n = size * nmemb;
  TM_OBJSTORE_COUNT(x->c->store, bytes_in, n);
  long st = response_status(x);
  if (!is_2xx(st)) {
    size_t room = sizeof x->errbody - x->errlen;
    size_t k = n < room ? n : room;
    memcpy(x->errbody + x->errlen, data, k);
    x->errlen += k;
    return n;
  }
  const tm_http_req *r = x->req;
  if (!r->sink) {
    if (!r->body_out) return n;
    x->sink_rc = tm_buf_append(r->body_out, data, n, x->err);
    if (x->sink_rc == TM_ETOOLARGE)
      x->sink_rc = TM_CORRUPT(x->err, "%s: response body larger than %zu bytes",
                              x->c->store->name, r->body_out->limit);
    return x->sink_rc < 0 ? 0 : n;
  }
  if (!x->body_started) {
    x->body_started = true;
    x->body_pos = 0;
    if (st == 206 && !parse_content_range(x->content_range, &x->body_pos)) {
      x->sink_rc = TM_CORRUPT(x->err, "%s/%s: 206 response with Content-Range '%s'",
                              x->c->store->name, r->key, x->content_range);
      return 0;
    }
    if (x->body_pos > x->want_start) {
      x->sink_rc = TM_CORRUPT(x->err, "%s/%s: response starts at byte %llu, %llu was requested",
                              x->c->store->name, r->key, (unsigned long long)x->body_pos,
                              (unsigned long long)x->want_start);
      return 0;
    }
  }
  uint64_t chunk_start = x->body_pos, chunk_end = x->body_pos + n;
  x->body_pos = chunk_end;
  uint64_t from = chunk_start > x->want_start ? chunk_start : x->want_start;
  uint64_t to = chunk_end < x->want_end ? chunk_end : x->want_end;
  if (from < to) {
    x->sink_rc = r->sink(data + (from - chunk_start), (size_t)(to - from), r->sink_payload, x->err);
    if (x->sink_rc < 0) return 0;
    x->delivered += to - from;
    x->want_start = to;
  }
  if (x->want_end != UINT64_MAX && x->want_start >= x->want_end && chunk_end > x->want_end) {
    x->done_early = true; /* the server sends more than we asked for: stop it */
    return 0;
  }
  return n;
}

/* Case-insensitive header-name match; returns the trimmed value or NULL. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen) {
  size_t n = strlen(name);
  if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0) return NULL;
  const char *v = line + n + 1;
  const char *end = line + len;
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  *vlen = (size_t)(end - v);
  return v;
}

static void copy_header(char *dst, size_t cap, const char *v, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = '\0';
  for (size_t i = 0; i < n; i++) /* into one-line messages: no control characters */
    if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f) dst[i] = ' ';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp) {
  xfer *x = userp;
  size_t n = size * nmemb;
  const tm_http_backend *be = x->c->be;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    /* A new response (after a 100 Continue): forget the previous headers. */
    x->content_range[0] = x->etag[0] = x->hint[0] = x->code_hdr[0] = '\0';
    x->has_content_length = false;
    x->status_known = false;
    return n;
  }
  size_t vlen = 0;
  const char *v;
  if ((v = header_value(data, n, "content-range", &vlen)) != NULL) {
    copy_header(x->content_range, sizeof x->content_range, v, vlen);
  } else if ((v = header_value(data, n, "etag", &vlen)) != NULL) {
    copy_header(x->etag, sizeof x->etag, v, vlen);
  } else if ((v = header_value(data, n, "content-length", &vlen)) != NULL) {
    x->has_content_length = tm_parse_uint64(v, vlen, &x->content_length) == TM_OK;
  } else if (be->hint_header && (v = header_value(data, n, be->hint_header, &vlen)) != NULL) {
    copy_header(x->hint, sizeof x->hint, v, vlen);
  } else if (be->code_header && (v = header_value(data, n, be->code_header, &vlen)) != NULL) {
    copy_header(x->code_hdr, sizeof x->code_hdr, v, vlen);
  }
  return n;
}

static size_t on_upload(char *buf, size_t size, size_t nitems, void *userp) {
  xfer *x = userp;
  size_t cap = size * nitems;
  uint64_t left = x->req->upload_len - x->up_pos;
  if (left == 0) return 0;
  size_t want = left < cap ? (size_t)left : cap;
  size_t n = 0;
  x->read_rc = tm_input_read_at(x->req->upload, x->req->upload_off + x->up_pos, buf, want, &n,
                                x->err);
  if (x->read_rc == TM_OK && n == 0)
    x->read_rc = TM_CORRUPT(x->err, "%s: ended before its size of %llu bytes",
                            tm_input_name(x->req->upload),
                            (unsigned long long)(x->req->upload_off + x->req->upload_len));
  if (x->read_rc < 0) return CURL_READFUNC_ABORT;
  x->up_pos += n;
  TM_OBJSTORE_COUNT(x->c->store, bytes_out, n);
  return n;
}

/* ---- the handle pool ---- */

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;
static CURLcode g_curl_init_rc;

static void curl_init_once(void) { g_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userp) {
  TM_UNUSED(h);
  TM_UNUSED(access);
  tm_http_client *c = userp;
  if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_lock(&c->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *userp) {
  TM_UNUSED(h);
  tm_http_client *c = userp;
  if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST) pthread_mutex_unlock(&c->share_locks[data]);
}

int tm_http__client_init(tm_http_client *c, tm_objstore *store, const tm_http_backend *be,
                         void *owner, const char *endpoint_desc, const tm_http_options *o,
                         tm_error *err) {
  if (o->max_retries < 0 || o->max_retries > 100 || o->retry_base_ms < 0 ||
      o->retry_max_ms < o->retry_base_ms || !(o->backoff_factor >= 1.0 && o->backoff_factor <= 100.0) ||
      o->retry_timeout_ms < 0 || o->connect_timeout_ms <= 0 || o->request_timeout_ms < 0 ||
      o->stall_timeout_ms <= 0 || o->max_idle_handles < 0)
    return tm_error_set(err, TM_EINVALID, "%s: invalid retry or timeout options", store->name);
  pthread_once(&g_curl_once, curl_init_once);
  if (g_curl_init_rc != CURLE_OK)
    return tm_error_set(err, TM_ERROR, "libcurl initialisation failed: %s",
                        curl_easy_strerror(g_curl_init_rc));
  c->store = store;
  c->be = be;
  c->owner = owner;
  c->endpoint_desc = endpoint_desc;
  c->opts = *o;
  c->share = curl_share_init();
  if (!c->share) return tm_error_nomem(err);
  pthread_mutex_init(&c->pool_lock, NULL);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_init(&c->share_locks[i], NULL);
  c->ready = true;
  curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  return TM_OK;
}

void tm_http__client_dispose(tm_http_client *c) {
  if (!c->ready) {
    if (c->share) curl_share_cleanup(c->share);
    c->share = NULL;
    return;
  }
  for (int i = 0; i < c->n_idle; i++) curl_easy_cleanup(c->idle[i]);
  c->n_idle = 0;
  curl_share_cleanup(c->share);
  c->share = NULL;
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++) pthread_mutex_destroy(&c->share_locks[i]);
  pthread_mutex_destroy(&c->pool_lock);
  c->ready = false;
}

uint64_t tm_http__connections(const tm_http_client *c) {
  return __atomic_load_n(&c->connections, __ATOMIC_RELAXED);
}

static CURL *pool_take(tm_http_client *c) {
  CURL *h = NULL;
  pthread_mutex_lock(&c->pool_lock);
  if (c->n_idle > 0) h = c->idle[--c->n_idle];
  pthread_mutex_unlock(&c->pool_lock);
  return h ? h : curl_easy_init();
}

static void pool_give(tm_http_client *c, CURL *h) {
  curl_easy_reset(h);
  pthread_mutex_lock(&c->pool_lock);
  if (c->n_idle < c->opts.max_idle_handles && c->n_idle < TM_HTTP_MAX_IDLE) {
    c->idle[c->n_idle++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&c->pool_lock);
  if (h) curl_easy_cleanup(h);
}

/* ---- one attempt ---- */

typedef struct attempt_out {
  CURLcode cc;
  char curl_msg[CURL_ERROR_SIZE];
} attempt_out;

int tm_http__add_header(struct curl_slist **list, tm_error *err, const char *fmt, ...) {
  va_list ap;
  tm_buf b = TM_BUF_INIT(64 * 1024);
  va_start(ap, fmt);
  int rc = tm_buf_vprintf(&b, err, fmt, ap);
  va_end(ap);
  if (rc == TM_OK) {
    struct curl_slist *l = curl_slist_append(*list, tm_buf_cstr(&b));
    if (!l) rc = tm_error_nomem(err);
    else *list = l;
  }
  /* Header values may be derived from a secret (Authorization): wipe them. */
  if (b.ptr) memset(b.ptr, 0, b.len);
  tm_buf_dispose(&b);
  return rc;
}

static void free_headers(struct curl_slist *l) {
  for (struct curl_slist *p = l; p; p = p->next)
    if (p->data) memset(p->data, 0, strlen(p->data));
  curl_slist_free_all(l);
}

/*
 * Builds (through the backend) and performs one attempt of req on handle h.
 * Fills x and out; returns TM_OK when the transfer ran (whatever its
 * outcome), or an error that happened before it could (out of memory,
 * signing).
 */
static int attempt(tm_http_client *c, const tm_http_req *req, const char *if_match, CURL *h,
                   xfer *x, attempt_out *out, tm_error *err) {
  tm_buf url = TM_BUF_INIT(TM_BUF_UNLIMITED);
  struct curl_slist *hdrs = NULL;
  char range[80] = "";
  int rc;
  bool ranged = req->sink && (x->want_start > 0 || x->want_end != UINT64_MAX);
  if (ranged) {
    if (x->want_end == UINT64_MAX)
      snprintf(range, sizeof range, "bytes=%llu-", (unsigned long long)x->want_start);
    else
      snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)x->want_start,
               (unsigned long long)(x->want_end - 1));
  }
  tm_http_attempt at = {ranged ? range : NULL, if_match};
  TM_CHECK(c->be->prepare(c, req, &at, &url, &hdrs, err));
  TM_CHECK(tm_http__add_header(&hdrs, err, "Expect:"));
  TM_CHECK(tm_http__add_header(&hdrs, err, "User-Agent: tidemark/%s", TM_VERSION));

  curl_easy_setopt(h, CURLOPT_URL, tm_buf_cstr(&url));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_SHARE, c->share);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->opts.connect_timeout_ms);
  if (c->opts.request_timeout_ms > 0)
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->opts.request_timeout_ms);
  long stall_s = (long)((c->opts.stall_timeout_ms + 999) / 1000);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s > 0 ? stall_s : 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, out->curl_msg);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
  if (strcmp(req->method, "HEAD") == 0) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(h, CURLOPT_FILETIME, 1L);
  } else if (strcmp(req->method, "PUT") == 0) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
    curl_easy_setopt(h, CURLOPT_READDATA, x);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->upload_len);
  } else if (strcmp(req->method, "GET") != 0) {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  }
  out->curl_msg[0] = '\0';
  TM_OBJSTORE_COUNT(c->store, requests, 1);
  out->cc = curl_easy_perform(h);
  long connects = 0;
  if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
    __atomic_fetch_add(&c->connections, (uint64_t)connects, __ATOMIC_RELAXED);
  rc = TM_OK;
done:
  free_headers(hdrs);
  /* A SAS token may be in the query: wipe the URL too. */
  if (url.ptr) memset(url.ptr, 0, url.len);
  tm_buf_dispose(&url);
  return rc;
}

static bool transient_curl(CURLcode cc) {
  switch (cc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

static bool transient_status(const tm_http_client *c, long st, const char *code) {
  return st == 429 || st == 500 || st == 502 || st == 503 || st == 504 ||
         (c->be->transient && c->be->transient(st, code));
}

static bool status_ok(long st, const long *ok, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ok[i] == st) return true;
  return false;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* The backoff before retry n (1-based), with jitter: a random point in the upper half. */
static int64_t backoff_ms(const tm_http_options *o, int n, unsigned *seed) {
  double delay = (double)o->retry_base_ms;
  for (int i = 1; i < n && delay < (double)o->retry_max_ms; i++) delay *= o->backoff_factor;
  if (delay > (double)o->retry_max_ms) delay = (double)o->retry_max_ms;
  int64_t d = (int64_t)delay;
  return d / 2 + (d > 1 ? (int64_t)(rand_r(seed) % (unsigned)(d / 2 + 1)) : 0);
}

/* Maps a final non-2xx response to an error. */
static int http_error(tm_http_client *c, const tm_http_req *req, xfer *x, const char *code,
                      const char *message, const char *region, int attempts, tm_error *err) {
  char detail[600];
  snprintf(detail, sizeof detail, "%ld%s%s%s%s", x->status, *code ? " " : "", code,
           *message ? ": " : "", message);
  if (transient_status(c, x->status, code)) {
    char obj[1200];
    tm_http__what(obj, sizeof obj, c, req);
    return tm_error_set(err, TM_EUNAVAILABLE, "%s: %s answered %s (%d attempts)", obj,
                        c->endpoint_desc, detail, attempts);
  }
  tm_http_failure f = {x->status, code, message, detail, x->hint, region, attempts};
  return c->be->fail(c, req, &f, err);
}

int tm_http__perform(tm_http_client *c, const tm_http_req *req, const long *ok_statuses,
                     size_t n_ok, tm_http_resp *resp, tm_error *err) {
  memset(resp, 0, sizeof *resp);
  resp->mtime_ms = -1;
  int max_attempts = c->opts.max_retries + 1;
  uint64_t delivered = 0;
  char etag[160] = "";
  unsigned seed = (unsigned)(tm_monotonic_ns() ^ (uintptr_t)req);
  int64_t started_ms = tm_monotonic_ns() / 1000000;
  xfer *x = tm_malloc(sizeof *x);
  attempt_out out;
  if (!x) return tm_error_nomem(err);
  int rc = TM_OK;
  for (int n = 1;; n++) {
    memset(x, 0, sizeof *x);
    x->c = c;
    x->req = req;
    x->err = err;
    x->want_start = req->off + delivered;
    x->want_end = req->len == TM_OBJ_TO_END || req->len > UINT64_MAX - req->off
                      ? UINT64_MAX
                      : req->off + req->len;
    if (req->body_out) tm_buf_clear(req->body_out);
    CURL *h = pool_take(c);
    if (!h) {
      rc = tm_error_nomem(err);
      break;
    }
    x->h = h;
    rc = attempt(c, req, delivered > 0 && etag[0] ? etag : NULL, h, x, &out, err);
    if (rc == TM_OK) (void)response_status(x);
    if (rc == TM_OK && req->sink && is_2xx(x->status) && !etag[0])
      memcpy(etag, x->etag, sizeof etag);
    if (rc == TM_OK && strcmp(req->method, "HEAD") == 0 && is_2xx(x->status)) {
      curl_off_t ft = -1;
      if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft >= 0)
        resp->mtime_ms = (int64_t)ft * 1000;
    }
    pool_give(c, h);
    if (rc < 0) break;
    delivered += x->delivered;
    resp->delivered = delivered;
    resp->status = x->status;
    resp->content_length = x->content_length;
    resp->has_content_length = x->has_content_length;
    /* A retry must not start past the caller's total budget (abfs_retry_timeout). */
    bool out_of_time = c->opts.retry_timeout_ms > 0 &&
                       tm_monotonic_ns() / 1000000 - started_ms >= c->opts.retry_timeout_ms;
    bool last = n >= max_attempts || out_of_time;

    char code[64] = "", message[400] = "", region[64] = "";
    char why[600] = "";
    if (x->sink_rc < 0 && (out.cc == CURLE_WRITE_ERROR || out.cc == CURLE_OK)) {
      rc = x->sink_rc; /* the sink refused the bytes: not the network's fault */
      break;
    }
    if (x->read_rc < 0) {
      rc = x->read_rc;
      break;
    }
    if (out.cc == CURLE_OK || (out.cc == CURLE_WRITE_ERROR && x->done_early)) {
      if (is_2xx(x->status) || status_ok(x->status, ok_statuses, n_ok)) {
        rc = TM_OK;
        break;
      }
      tm_xml_field f[] = {{"Code", code, sizeof code}, {"Message", message, sizeof message},
                          {"Region", region, sizeof region}};
      tm_xml__pick(x->errbody, x->errlen, "Error", f, 3);
      if (!code[0] && x->code_hdr[0]) snprintf(code, sizeof code, "%s", x->code_hdr);
      if (!transient_status(c, x->status, code) || last) {
        rc = http_error(c, req, x, code, message, region, n, err);
        break;
      }
      snprintf(why, sizeof why, "HTTP %ld %s", x->status, code);
    } else if (transient_curl(out.cc)) {
      snprintf(why, sizeof why, "%s%s%s", curl_easy_strerror(out.cc), out.curl_msg[0] ? ": " : "",
               out.curl_msg);
      if (last) {
        char obj[1200];
        tm_http__what(obj, sizeof obj, c, req);
        bool timeout = out.cc == CURLE_OPERATION_TIMEDOUT;
        rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: endpoint %s %s: %s (%d attempts)", obj,
                          c->endpoint_desc, timeout ? "timed out" : "is unreachable", why, n);
        break;
      }
    } else {
      char obj[1200];
      tm_http__what(obj, sizeof obj, c, req);
      rc = tm_error_set(err, TM_EIO, "%s: %s: %s%s%s", obj, c->endpoint_desc,
                        curl_easy_strerror(out.cc), out.curl_msg[0] ? ": " : "", out.curl_msg);
      break;
    }
    /* Transient: back off, then try again. */
    int64_t delay = backoff_ms(&c->opts, n, &seed);
    char obj[1200];
    tm_http__what(obj, sizeof obj, c, req);
    tm_log(TM_LOG_INFO, NULL, "%s %s: %s; retry %d of %d in %lld ms", req->method, obj, why, n,
           max_attempts - 1, (long long)delay);
    TM_OBJSTORE_COUNT(c->store, retries, 1);
    sleep_ms(delay);
  }
  tm_free(x);
  return rc;
}

/* ---- requests every remote store makes alike ---- */

int tm_http__stat(tm_http_client *c, tm_http_req *req, const char *key, tm_obj_stat *out,
                  tm_error *err) {
  req->method = "HEAD";
  req->key = key;
  static const long ok[] = {404};
  tm_http_resp resp;
  TM_TRY(tm_http__perform(c, req, ok, 1, &resp, err));
  if (resp.status == 404) {
    out->exists = false;
    return TM_OK;
  }
  if (!resp.has_content_length)
    return TM_CORRUPT(err, "%s/%s: HEAD response without Content-Length", c->store->name, key);
  out->exists = true;
  out->size = resp.content_length;
  out->mtime_ms = resp.mtime_ms >= 0 ? resp.mtime_ms : 0;
  return TM_OK;
}

int tm_http__get(tm_http_client *c, tm_http_req *req, const char *key, uint64_t off,
                 uint64_t len, tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  req->method = "GET";
  req->key = key;
  req->off = off;
  req->len = len;
  req->sink = sink;
  req->sink_payload = payload;
  static const long ok[] = {416}; /* a range starting at or past the end */
  tm_http_resp resp;
  return tm_http__perform(c, req, ok, 1, &resp, err);
}

int tm_http__delete(tm_http_client *c, tm_http_req *req, const char *key, tm_error *err) {
  req->method = "DELETE";
  req->key = key;
  static const long ok[] = {404};
  tm_http_resp resp;
  return tm_http__perform(c, req, ok, 1, &resp, err);
}

/* ---- helpers for the backends ---- */

static bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_' || c == '.' || c == '~';
}

int tm_http__uri_encode(tm_buf *out, const char *s, size_t len, bool keep_slash, tm_error *err) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (unreserved(c) || (keep_slash && c == '/')) {
      TM_TRY(tm_buf_putc(out, (char)c, err));
    } else {
      char e[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
      TM_TRY(tm_buf_append(out, e, 3, err));
    }
  }
  return TM_OK;
}

int tm_http__parse_endpoint(const char *ep, const char *param, const char *cred_params,
                            bool allow_http, bool *https_out, char **authority_out,
                            char **base_out, tm_error *err) {
  const char *rest;
  bool https;
  if (strncmp(ep, "https://", 8) == 0) {
    https = true;
    rest = ep + 8;
  } else if (strncmp(ep, "http://", 7) == 0) {
    https = false;
    rest = ep + 7;
  } else {
    return tm_error_set(err, TM_EINVALID,
                        "%s '%s' must start with https:// (or http:// with allow_http)", param, ep);
  }
  if (!https && !allow_http)
    return tm_error_set(err, TM_EINVALID,
                        "%s '%s' is plain http; set allow_http: true to allow it", param, ep);
  size_t alen = strcspn(rest, "/");
  if (alen == 0) return tm_error_set(err, TM_EINVALID, "%s '%s' has no host", param, ep);
  for (const char *p = ep; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch <= ' ' || ch == 0x7f || ch == '?' || ch == '#' || ch == '\\')
      return tm_error_set(err, TM_EINVALID, "%s '%s' has a '%c'", param, ep, ch > ' ' ? ch : '?');
  }
  if (memchr(rest, '@', alen))
    return tm_error_set(err, TM_EINVALID, "%s '%s': credentials belong in %s", param, ep,
                        cred_params);
  char *authority = tm_strndup(rest, alen);
  const char *base = rest + alen;
  size_t blen = strlen(base);
  while (blen > 0 && base[blen - 1] == '/') blen--;
  char *b = tm_strndup(base, blen);
  if (!authority || !b) {
    tm_free(authority);
    tm_free(b);
    return tm_error_nomem(err);
  }
  for (char *p = authority; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  *https_out = https;
  *authority_out = authority;
  *base_out = b;
  return TM_OK;
}

int tm_http__list_paged(tm_objstore *s, const char *prefix, tm_http_page_fn page,
                        void *page_payload, tm_objstore_list_fn fn, void *payload,
                        tm_error *err) {
  size_t lp = strlen(prefix);
  char *token = NULL, *last_key = NULL;
  int rc = TM_OK;
  for (;;) {
    tm_obj_list items;
    tm_obj_list_init(&items);
    char *next = NULL;
    rc = page(page_payload, token, &items, &next, err);
    for (size_t i = 0; rc == TM_OK && i < items.len; i++) {
      const tm_obj_info *it = &items.items[i];
      if (strncmp(it->key, prefix, lp) != 0) {
        rc = TM_CORRUPT(err, "listing %s/%s: the server returned key '%s' outside the prefix",
                        s->name, prefix, it->key);
      } else if (last_key && strcmp(it->key, last_key) <= 0) {
        rc = TM_CORRUPT(err, "listing %s/%s: key '%s' is not after '%s'", s->name, prefix,
                        it->key, last_key);
      } else {
        rc = fn(it, payload);
        tm_free(last_key);
        last_key = tm_strdup(it->key);
        if (!last_key && rc == TM_OK) rc = tm_error_nomem(err);
      }
    }
    tm_obj_list_dispose(&items);
    if (rc < 0 || rc == TM_ITEROVER || !next || !*next) {
      tm_free(next);
      break;
    }
    if (token && strcmp(token, next) == 0) {
      tm_free(next);
      rc = TM_CORRUPT(err, "listing %s/%s: the server repeated a continuation token", s->name,
                      prefix);
      break;
    }
    tm_free(token);
    token = next;
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_free(token);
  tm_free(last_key);
  return rc;
}
