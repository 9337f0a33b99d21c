/*
 * s3_http.c - how one S3 request is addressed, signed and its errors
 * worded (objstore layer, s3 backend), for the shared HTTP client
 * (objstore/http.c: pool, retries, ranged bodies).
 *
 * Each attempt is signed afresh with SigV4 (x-amz-date changes): host,
 * x-amz-date, x-amz-content-sha256 and, when present, range, if-match,
 * if-none-match and x-amz-security-token. S3's RequestTimeout (a 400) is
 * transient; 404 NoSuchBucket, a bucket in another region, redirects and
 * 403 get messages that say what to change.
 */
#include <stdio.h>
#include <string.h>

#include "objstore/s3/s3_int.h"
#include "util/alloc.h"
#include "util/time.h"

static int s3_prepare(tm_http_client *c, const tm_http_req *hreq, const tm_http_attempt *at,
                      tm_buf *url, struct curl_slist **hdrs, tm_error *err) {
  tm_s3_store *s = c->owner;
  const tm_s3_req *req = hreq->backend;
  tm_buf raw_path = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf authz = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_aws_creds *creds = NULL; /* from the chain, wiped and freed below */
  const char *access_key = s->access_key, *secret_key = s->secret_key;
  const char *session_token = s->session_token;
  int rc;
  if (s->chain || s->creds.fn) {
    if (!(creds = tm_malloc(sizeof *creds))) return tm_error_nomem(err);
    rc = s->chain ? tm_aws_chain_get(s->chain, creds, err)
                  : s->creds.fn(s->creds.payload, NULL, creds, err);
    if (rc != TM_OK) {
      tm_free(creds);
      return rc;
    }
    access_key = creds->access_key[0] ? creds->access_key : NULL;
    secret_key = creds->secret_key;
    session_token = creds->session_token[0] ? creds->session_token : NULL;
    if (req->denial) snprintf(req->denial->key, sizeof req->denial->key, "%s", creds->access_key);
  }
  /* Path: prefix + "/" + key, or the prefix alone (bucket requests). */
  TM_CHECK(tm_buf_puts(&raw_path, s->path_prefix, err));
  if (hreq->key) {
    TM_CHECK(tm_buf_putc(&raw_path, '/', err));
    TM_CHECK(tm_buf_puts(&raw_path, hreq->key, err));
  } else if (raw_path.len == 0) {
    TM_CHECK(tm_buf_putc(&raw_path, '/', err));
  }
  TM_CHECK(tm_buf_printf(url, err, "%s://%s", s->https ? "https" : "http", s->host));
  TM_CHECK(tm_http__uri_encode(url, raw_path.ptr, raw_path.len, true, err));
  if (req->n_query) {
    TM_CHECK(tm_buf_putc(url, '?', err));
    TM_CHECK(tm_sigv4_canonical_query(url, req->query, req->n_query, err));
  }
  char amz_date[17];
  tm_sigv4_amz_date(amz_date, tm_now_ms() / 1000);
  const char *payload = hreq->upload ? req->upload_sha256 : TM_SHA256_EMPTY;
  tm_sigv4_kv sh[8];
  size_t nh = 0;
  sh[nh++] = (tm_sigv4_kv){"host", s->host};
  sh[nh++] = (tm_sigv4_kv){"x-amz-content-sha256", payload};
  sh[nh++] = (tm_sigv4_kv){"x-amz-date", amz_date};
  if (at->range) sh[nh++] = (tm_sigv4_kv){"range", at->range};
  if (hreq->if_none_match) sh[nh++] = (tm_sigv4_kv){"if-none-match", hreq->if_none_match};
  if (at->if_match) sh[nh++] = (tm_sigv4_kv){"if-match", at->if_match};
  if (session_token) sh[nh++] = (tm_sigv4_kv){"x-amz-security-token", session_token};
  for (size_t i = 0; i < nh; i++)
    TM_CHECK(tm_http__add_header(hdrs, err, "%s: %s", sh[i].name, sh[i].value));
  if (access_key) {
    tm_sigv4_request sr = {hreq->method, raw_path.ptr, req->query, req->n_query, sh, nh,
                           payload, amz_date, s->region, "s3", access_key, secret_key};
    TM_CHECK(tm_sigv4_authorization(&authz, NULL, &sr, err));
    TM_CHECK(tm_http__add_header(hdrs, err, "Authorization: %s", tm_buf_cstr(&authz)));
  }
  rc = TM_OK;
done:
  tm_buf_dispose(&raw_path);
  /* The Authorization value is derived from the secret: wipe it. */
  if (authz.ptr) memset(authz.ptr, 0, authz.len);
  tm_buf_dispose(&authz);
  if (creds) {
    memset(creds, 0, sizeof *creds);
    tm_free(creds);
  }
  return rc;
}

static bool s3_transient(long st, const char *code) {
  return st == 400 && strcmp(code, "RequestTimeout") == 0;
}

static int s3_fail(tm_http_client *c, const tm_http_req *req, const tm_http_failure *f,
                   tm_error *err) {
  tm_s3_store *s = c->owner;
  char obj[1200];
  tm_http__what(obj, sizeof obj, c, req);
  long st = f->status;
  const char *hint_region = *f->region ? f->region : f->hint;
  if (st == 404) {
    if (strcmp(f->code, "NoSuchBucket") == 0)
      return tm_error_set(err, TM_ENOTFOUND, "s3://%s: no such bucket at %s", s->bucket,
                          s->endpoint_desc);
    return tm_error_set(err, TM_ENOTFOUND, "%s: no such object (%s)", obj, f->detail);
  }
  if (*hint_region && strcmp(hint_region, s->region) != 0 &&
      (st == 301 || st == 307 || st == 400 || st == 403))
    return tm_error_set(err, TM_EINVALID, "%s: the bucket is in region %s, not %s; set s3_region (%s)",
                        obj, hint_region, s->region, f->detail);
  if (st == 301 || st == 307)
    return tm_error_set(err, TM_EINVALID,
                        "%s: redirected (%s); check s3_endpoint, s3_region and s3_url_style", obj,
                        f->detail);
  if (st == 403) {
    const tm_s3_req *sreq = req->backend;
    if (sreq && sreq->denial) sreq->denial->denied = true;
    if (s->creds.fn)
      return tm_error_set(err, TM_EIO, "%s: access denied (%s) to the credentials the table's "
                          "catalog supplied", obj, f->detail);
    if (s->chain)
      return tm_error_set(err, TM_EIO, "%s: access denied (%s) to the keys of the AWS credential "
                          "chain (s3_auth: iam_role)", obj, f->detail);
    if (!s->access_key)
      return tm_error_set(err, TM_EIO,
                          "%s: access denied (%s); no credentials were given (s3_key and "
                          "s3_secret, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
                          obj, f->detail);
    return tm_error_set(err, TM_EIO, "%s: access denied (%s); check s3_key and s3_secret", obj,
                        f->detail);
  }
  if (st == 412 && req->if_none_match)
    return tm_error_set(err, TM_ECONFLICT, "%s: object already exists", obj);
  if (st == 412)
    return TM_CORRUPT(err, "%s: object changed while it was being read (ETag no longer matches)",
                      obj);
  return tm_error_set(err, TM_EIO, "%s: %s", obj, f->detail);
}

static const tm_http_backend k_s3_backend = {"x-amz-bucket-region", NULL, s3_prepare,
                                             s3_transient, s3_fail};

const tm_http_backend *tm_s3__http_backend(void) { return &k_s3_backend; }

bool tm_s3__renew_after_denial(tm_s3_store *s, const tm_s3_denial *d, int rc, tm_error *err) {
  if (rc != TM_EIO || !d->denied || !s->creds.fn) return false;
  tm_aws_creds *fresh = tm_malloc(sizeof *fresh);
  if (!fresh) {
    tm_error_nomem(err);
    return false;
  }
  tm_error e;
  tm_error_init(&e);
  int r = s->creds.fn(s->creds.payload, d->key, fresh, &e);
  memset(fresh, 0, sizeof *fresh);
  tm_free(fresh);
  if (r == TM_OK) return true;
  if (err) {
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n, "; renewing them: %s", e.message);
  }
  return false;
}

int tm_s3__perform(tm_s3_store *s, tm_s3_req *req, const long *ok_statuses, size_t n_ok,
                   tm_http_resp *resp, tm_error *err) {
  req->http.backend = req;
  return tm_http__perform(&s->http, &req->http, ok_statuses, n_ok, resp, err);
}
