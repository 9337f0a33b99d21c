/*
 * s3_http.c - one signed S3 request through libcurl, with retries (objstore
 * layer, s3 backend).
 *
 * Each attempt takes an easy handle from the store's pool (handles share
 * one connection cache, DNS cache and TLS session cache through a CURLSH,
 * so connections are reused across threads), signs the request afresh
 * (x-amz-date changes), and classifies the outcome:
 *
 *   success      2xx, or a status the caller listed as acceptable
 *   transient    connection refused/reset, timeouts, 5xx, 429, S3's
 *                RequestTimeout: retried after base * 2^n ms (capped, with
 *                jitter); a ranged read resumes after the bytes it already
 *                delivered, with If-Match on the ETag so that a replaced
 *                object cannot splice two versions together
 *   final        everything else, mapped to a tm_code with S3's error code
 *                and message in the text
 *
 * Bodies: a ranged GET delivers exactly the requested bytes to the sink,
 * checking Content-Range; a server that ignores the Range header (200 with
 * the whole object) is handled by skipping to the wanted offset and
 * stopping once the range is complete. Error bodies are kept (16 KiB at
 * most) only to pick out Code and Message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "objstore/s3/s3_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/str.h"
#include "util/time.h"

#define ERRBODY_MAX 16384

typedef struct xfer {
  tm_s3_store *s;
  const tm_s3_req *req;
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
  char region_hint[64];
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
  TM_OBJSTORE_COUNT(&x->s->base, bytes_in, n);
  long st = response_status(x);
  if (!is_2xx(st)) {
    size_t room = sizeof x->errbody - x->errlen;
    size_t k = n < room ? n : room;
    memcpy(x->errbody + x->errlen, data, k);
    x->errlen += k;
    return n;
  }
  const tm_s3_req *r = x->req;
  if (!r->sink) {
    if (!r->body_out) return n;
    x->sink_rc = tm_buf_append(r->body_out, data, n, x->err);
    if (x->sink_rc == TM_ETOOLARGE)
      x->sink_rc = TM_CORRUPT(x->err, "s3://%s: response body larger than %zu bytes",
                              x->s->bucket, r->body_out->limit);
    return x->sink_rc < 0 ? 0 : n;
  }
  if (!x->body_started) {
    x->body_started = true;
    x->body_pos = 0;
    if (st == 206 && !parse_content_range(x->content_range, &x->body_pos)) {
      x->sink_rc = TM_CORRUPT(x->err, "s3://%s/%s: 206 response with Content-Range '%s'",
                              x->s->bucket, r->key, x->content_range);
      return 0;
    }
    if (x->body_pos > x->want_start) {
      x->sink_rc = TM_CORRUPT(x->err,
                              "s3://%s/%s: response starts at byte %llu, %llu was requested",
                              x->s->bucket, r->key, (unsigned long long)x->body_pos,
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
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp) {
  xfer *x = userp;
  size_t n = size * nmemb;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    /* A new response (after a 100 Continue): forget the previous headers. */
    x->content_range[0] = x->etag[0] = x->region_hint[0] = '\0';
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
  } else if ((v = header_value(data, n, "x-amz-bucket-region", &vlen)) != NULL) {
    copy_header(x->region_hint, sizeof x->region_hint, v, vlen);
  } else if ((v = header_value(data, n, "content-length", &vlen)) != NULL) {
    x->has_content_length = tm_parse_uint64(v, vlen, &x->content_length) == TM_OK;
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
  x->read_rc = tm_input_read_at(x->req->upload, x->up_pos, buf, want, &n, x->err);
  if (x->read_rc == TM_OK && n == 0)
    x->read_rc = TM_CORRUPT(x->err, "%s: ended before its size of %llu bytes",
                            tm_input_name(x->req->upload),
                            (unsigned long long)x->req->upload_len);
  if (x->read_rc < 0) return CURL_READFUNC_ABORT;
  x->up_pos += n;
  TM_OBJSTORE_COUNT(&x->s->base, bytes_out, n);
  return n;
}

/* ---- the handle pool ---- */

static CURL *pool_take(tm_s3_store *s) {
  CURL *h = NULL;
  pthread_mutex_lock(&s->pool_lock);
  if (s->n_idle > 0) h = s->idle[--s->n_idle];
  pthread_mutex_unlock(&s->pool_lock);
  return h ? h : curl_easy_init();
}

static void pool_give(tm_s3_store *s, CURL *h) {
  curl_easy_reset(h);
  pthread_mutex_lock(&s->pool_lock);
  if (s->n_idle < s->opts.max_idle_handles && s->n_idle < TM_S3_MAX_IDLE) {
    s->idle[s->n_idle++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&s->pool_lock);
  if (h) curl_easy_cleanup(h);
}

/* ---- one attempt ---- */

typedef struct attempt_out {
  CURLcode cc;
  char curl_msg[CURL_ERROR_SIZE];
} attempt_out;

static int add_header(struct curl_slist **list, tm_error *err, const char *fmt, ...)
    TM_PRINTF(3, 4);
static int add_header(struct curl_slist **list, tm_error *err, const char *fmt, ...) {
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
  tm_buf_dispose(&b);
  return rc;
}

/*
 * Builds, signs and performs one attempt of req on handle h. Fills x and
 * out; returns TM_OK when the transfer ran (whatever its outcome), or an
 * error that happened before it could (out of memory, signing).
 */
static int attempt(tm_s3_store *s, const tm_s3_req *req, const char *if_match, CURL *h, xfer *x,
                   attempt_out *out, tm_error *err) {
  tm_buf raw_path = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf url = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf authz = TM_BUF_INIT(TM_BUF_UNLIMITED);
  struct curl_slist *hdrs = NULL;
  char range[80] = "";
  int rc;
  /* Path: prefix + "/" + key, or the prefix alone (bucket requests). */
  TM_CHECK(tm_buf_puts(&raw_path, s->path_prefix, err));
  if (req->key) {
    TM_CHECK(tm_buf_putc(&raw_path, '/', err));
    TM_CHECK(tm_buf_puts(&raw_path, req->key, err));
  } else if (raw_path.len == 0) {
    TM_CHECK(tm_buf_putc(&raw_path, '/', err));
  }
  TM_CHECK(tm_buf_printf(&url, err, "%s://%s", s->https ? "https" : "http", s->host));
  TM_CHECK(tm_sigv4__uri_encode(&url, raw_path.ptr, raw_path.len, true, err));
  if (req->n_query) {
    TM_CHECK(tm_buf_putc(&url, '?', err));
    TM_CHECK(tm_sigv4__canonical_query(&url, req->query, req->n_query, err));
  }
  bool ranged = req->sink && (x->want_start > 0 || x->want_end != UINT64_MAX);
  if (ranged) {
    if (x->want_end == UINT64_MAX)
      snprintf(range, sizeof range, "bytes=%llu-", (unsigned long long)x->want_start);
    else
      snprintf(range, sizeof range, "bytes=%llu-%llu", (unsigned long long)x->want_start,
               (unsigned long long)(x->want_end - 1));
  }
  char amz_date[17];
  tm_sigv4__amz_date(amz_date, tm_now_ms() / 1000);
  const char *payload = req->upload ? req->upload_sha256 : TM_SHA256_EMPTY;
  tm_sigv4_kv sh[8];
  size_t nh = 0;
  sh[nh++] = (tm_sigv4_kv){"host", s->host};
  sh[nh++] = (tm_sigv4_kv){"x-amz-content-sha256", payload};
  sh[nh++] = (tm_sigv4_kv){"x-amz-date", amz_date};
  if (ranged) sh[nh++] = (tm_sigv4_kv){"range", range};
  if (req->if_none_match) sh[nh++] = (tm_sigv4_kv){"if-none-match", req->if_none_match};
  if (if_match) sh[nh++] = (tm_sigv4_kv){"if-match", if_match};
  if (s->session_token) sh[nh++] = (tm_sigv4_kv){"x-amz-security-token", s->session_token};
  for (size_t i = 0; i < nh; i++) TM_CHECK(add_header(&hdrs, err, "%s: %s", sh[i].name, sh[i].value));
  if (s->access_key) {
    tm_sigv4_request sr = {req->method, raw_path.ptr, req->query, req->n_query, sh, nh,
                           payload, amz_date, s->region, "s3", s->access_key, s->secret_key};
    TM_CHECK(tm_sigv4__authorization(&authz, NULL, &sr, err));
    TM_CHECK(add_header(&hdrs, err, "Authorization: %s", tm_buf_cstr(&authz)));
  }
  TM_CHECK(add_header(&hdrs, err, "Expect:"));
  TM_CHECK(add_header(&hdrs, err, "User-Agent: tidemark/%s", TM_VERSION));

  curl_easy_setopt(h, CURLOPT_URL, tm_buf_cstr(&url));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_SHARE, s->share);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)s->opts.connect_timeout_ms);
  if (s->opts.request_timeout_ms > 0)
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)s->opts.request_timeout_ms);
  long stall_s = (long)((s->opts.stall_timeout_ms + 999) / 1000);
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
  TM_OBJSTORE_COUNT(&s->base, requests, 1);
  out->cc = curl_easy_perform(h);
  long connects = 0;
  if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && connects > 0)
    __atomic_fetch_add(&s->connections, (uint64_t)connects, __ATOMIC_RELAXED);
  rc = TM_OK;
done:
  curl_slist_free_all(hdrs);
  tm_buf_dispose(&raw_path);
  tm_buf_dispose(&url);
  /* The Authorization value is derived from the secret: wipe it. */
  if (authz.ptr) memset(authz.ptr, 0, authz.len);
  tm_buf_dispose(&authz);
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

static bool transient_status(long st, const char *code) {
  return st == 429 || st == 500 || st == 502 || st == 503 || st == 504 ||
         (st == 400 && strcmp(code, "RequestTimeout") == 0);
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

/* The object the request names, for messages: "s3://bucket/key". */
static void what(char *buf, size_t cap, const tm_s3_store *s, const tm_s3_req *req) {
  snprintf(buf, cap, "s3://%s%s%s", s->bucket, req->key ? "/" : "", req->key ? req->key : "");
}

/* Maps a final non-2xx response to an error. */
static int http_error(tm_s3_store *s, const tm_s3_req *req, xfer *x, const char *code,
                      const char *message, const char *region, int attempts, tm_error *err) {
  char obj[1200];
  what(obj, sizeof obj, s, req);
  long st = x->status;
  char detail[600];
  snprintf(detail, sizeof detail, "%ld%s%s%s%s", st, *code ? " " : "", code,
           *message ? ": " : "", message);
  const char *hint_region = *region ? region : x->region_hint;
  if (st == 404) {
    if (strcmp(code, "NoSuchBucket") == 0)
      return tm_error_set(err, TM_ENOTFOUND, "s3://%s: no such bucket at %s", s->bucket,
                          s->endpoint_desc);
    return tm_error_set(err, TM_ENOTFOUND, "%s: no such object (%s)", obj, detail);
  }
  if (*hint_region && strcmp(hint_region, s->region) != 0 &&
      (st == 301 || st == 307 || st == 400 || st == 403))
    return tm_error_set(err, TM_EINVALID, "%s: the bucket is in region %s, not %s; set s3_region (%s)",
                        obj, hint_region, s->region, detail);
  if (st == 301 || st == 307)
    return tm_error_set(err, TM_EINVALID,
                        "%s: redirected (%s); check s3_endpoint, s3_region and s3_url_style", obj,
                        detail);
  if (st == 403) {
    if (!s->access_key)
      return tm_error_set(err, TM_EIO,
                          "%s: access denied (%s); no credentials were given (s3_key and "
                          "s3_secret, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
                          obj, detail);
    return tm_error_set(err, TM_EIO, "%s: access denied (%s); check s3_key and s3_secret", obj,
                        detail);
  }
  if (st == 412 && req->if_none_match)
    return tm_error_set(err, TM_ECONFLICT, "%s: object already exists", obj);
  if (st == 412)
    return TM_CORRUPT(err, "%s: object changed while it was being read (ETag no longer matches)",
                      obj);
  if (transient_status(st, code))
    return tm_error_set(err, TM_EUNAVAILABLE, "%s: %s answered %s (%d attempts)", obj,
                        s->endpoint_desc, detail, attempts);
  return tm_error_set(err, TM_EIO, "%s: %s", obj, detail);
}

int tm_s3__perform(tm_s3_store *s, const tm_s3_req *req, const long *ok_statuses, size_t n_ok,
                   tm_s3_resp *resp, tm_error *err) {
  memset(resp, 0, sizeof *resp);
  resp->mtime_ms = -1;
  int max_attempts = s->opts.max_retries + 1;
  uint64_t delivered = 0;
  char etag[160] = "";
  unsigned seed = (unsigned)(tm_monotonic_ns() ^ (uintptr_t)req);
  xfer *x = tm_malloc(sizeof *x);
  attempt_out out;
  if (!x) return tm_error_nomem(err);
  int rc = TM_OK;
  for (int n = 1;; n++) {
    memset(x, 0, sizeof *x);
    x->s = s;
    x->req = req;
    x->err = err;
    x->want_start = req->off + delivered;
    x->want_end = req->len == TM_OBJ_TO_END || req->len > UINT64_MAX - req->off
                      ? UINT64_MAX
                      : req->off + req->len;
    if (req->body_out) tm_buf_clear(req->body_out);
    CURL *h = pool_take(s);
    if (!h) {
      rc = tm_error_nomem(err);
      break;
    }
    x->h = h;
    rc = attempt(s, req, delivered > 0 && etag[0] ? etag : NULL, h, x, &out, err);
    if (rc == TM_OK) (void)response_status(x);
    if (rc == TM_OK && req->sink && is_2xx(x->status) && !etag[0])
      memcpy(etag, x->etag, sizeof etag);
    if (rc == TM_OK && strcmp(req->method, "HEAD") == 0 && is_2xx(x->status)) {
      curl_off_t ft = -1;
      if (curl_easy_getinfo(h, CURLINFO_FILETIME_T, &ft) == CURLE_OK && ft >= 0)
        resp->mtime_ms = (int64_t)ft * 1000;
    }
    pool_give(s, h);
    if (rc < 0) break;
    delivered += x->delivered;
    resp->delivered = delivered;
    resp->status = x->status;
    resp->content_length = x->content_length;
    resp->has_content_length = x->has_content_length;

    char code[64] = "", message[400] = "", region[64] = "";
    bool transient = false;
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
      tm_s3__parse_error(x->errbody, x->errlen, code, sizeof code, message, sizeof message,
                         region, sizeof region);
      if (!transient_status(x->status, code) || n >= max_attempts) {
        rc = http_error(s, req, x, code, message, region, n, err);
        break;
      }
      transient = true;
      snprintf(why, sizeof why, "HTTP %ld %s", x->status, code);
    } else if (transient_curl(out.cc)) {
      snprintf(why, sizeof why, "%s%s%s", curl_easy_strerror(out.cc), out.curl_msg[0] ? ": " : "",
               out.curl_msg);
      if (n >= max_attempts) {
        char obj[1200];
        what(obj, sizeof obj, s, req);
        bool timeout = out.cc == CURLE_OPERATION_TIMEDOUT;
        rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: endpoint %s %s: %s (%d attempts)", obj,
                          s->endpoint_desc, timeout ? "timed out" : "is unreachable", why, n);
        break;
      }
      transient = true;
    } else {
      char obj[1200];
      what(obj, sizeof obj, s, req);
      rc = tm_error_set(err, TM_EIO, "%s: %s: %s%s%s", obj, s->endpoint_desc,
                        curl_easy_strerror(out.cc), out.curl_msg[0] ? ": " : "", out.curl_msg);
      break;
    }
    /* Transient: back off, then try again. */
    TM_UNUSED(transient);
    int64_t delay = s->opts.retry_base_ms;
    for (int i = 1; i < n && delay < s->opts.retry_max_ms; i++) delay *= 2;
    if (delay > s->opts.retry_max_ms) delay = s->opts.retry_max_ms;
    delay = delay / 2 + (delay > 1 ? (int64_t)(rand_r(&seed) % (unsigned)(delay / 2 + 1)) : 0);
    char obj[1200];
    what(obj, sizeof obj, s, req);
    tm_log(TM_LOG_INFO, NULL, "%s %s: %s; retry %d of %d in %lld ms", req->method, obj, why, n,
           max_attempts - 1, (long long)delay);
    TM_OBJSTORE_COUNT(&s->base, retries, 1);
    sleep_ms(delay);
  }
  tm_free(x);
  return rc;
}
