/*
 * sigv4.c - AWS Signature Version 4 (objstore layer; see sigv4.h), written
 * from the AWS documentation ("Create a signed AWS API request" and the S3
 * "Signature Calculations for the Authorization Header" pages):
 *
 *   1. canonical request: method, URI-encoded path, sorted encoded query,
 *      lowercased sorted headers with trimmed values, signed header names,
 *      payload hash, one per line;
 *   2. string to sign: algorithm, timestamp, scope, SHA-256 of (1);
 *   3. signing key: HMAC-SHA256 chain over date, region, service and
 *      "aws4_request", keyed by "AWS4" + secret;
 *   4. signature: HMAC-SHA256 of (2) with (3), in hex.
 *
 * S3 paths are encoded once and not normalised (S3's rule; other services
 * normalise and double-encode, which this signer does not need).
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "objstore/sigv4.h"

#include "objstore/http_int.h"
#include "util/alloc.h"

#define HEADERS_MAX 64

static const char k_hex[] = "0123456789abcdef";

static void to_hex(char *out, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = k_hex[p[i] >> 4];
    out[2 * i + 1] = k_hex[p[i] & 15];
  }
  out[2 * n] = '\0';
}

int tm_sha256_hex(char out[TM_SHA256_HEX_LEN + 1], const void *data, size_t len,
                  tm_error *err) {
  uint8_t md[32];
  unsigned int n = 0;
  if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
    return tm_error_set(err, TM_ERROR, "SHA-256 failed in OpenSSL");
  to_hex(out, md, 32);
  return TM_OK;
}

int tm_sha256_hex_input(char out[TM_SHA256_HEX_LEN + 1], tm_input *in, tm_error *err) {
  uint64_t size = 0;
  TM_TRY(tm_input_size(in, &size, err));
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  size_t cap = 1024 * 1024;
  char *buf = tm_malloc(cap);
  int rc = TM_OK;
  if (!ctx || !buf) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
    rc = tm_error_set(err, TM_ERROR, "SHA-256 failed in OpenSSL");
    goto done;
  }
  for (uint64_t pos = 0; pos < size;) {
    size_t want = size - pos < cap ? (size_t)(size - pos) : cap;
    size_t n = 0;
    TM_CHECK(tm_input_read_at(in, pos, buf, want, &n, err));
    if (n == 0) {
      rc = TM_CORRUPT(err, "%s: ended at byte %llu, before its size of %llu", tm_input_name(in),
                      (unsigned long long)pos, (unsigned long long)size);
      goto done;
    }
    if (EVP_DigestUpdate(ctx, buf, n) != 1) {
      rc = tm_error_set(err, TM_ERROR, "SHA-256 failed in OpenSSL");
      goto done;
    }
    pos += n;
  }
  uint8_t md[32];
  unsigned int mdlen = 0;
  if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
    rc = tm_error_set(err, TM_ERROR, "SHA-256 failed in OpenSSL");
    goto done;
  }
  to_hex(out, md, 32);
done:
  EVP_MD_CTX_free(ctx);
  tm_free(buf);
  return rc;
}

static int hmac(uint8_t out[32], const void *key, size_t key_len, const void *data, size_t len,
                tm_error *err) {
  unsigned int n = 0;
  if (key_len > INT32_MAX ||
      !HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n) || n != 32)
    return tm_error_set(err, TM_ERROR, "HMAC-SHA256 failed in OpenSSL");
  return TM_OK;
}

void tm_sigv4_amz_date(char out[17], int64_t unix_sec) {
  time_t t = (time_t)unix_sec;
  struct tm tmv;
  gmtime_r(&t, &tmv);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tmv);
}

/* ---- canonical query ---- */

typedef struct enc_pair {
  char *name;  /* owned, encoded */
  char *value; /* owned, encoded */
} enc_pair;

static int cmp_pair(const void *a, const void *b) {
  const enc_pair *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

/* A percent-encoded copy of s (tm_free), or NULL when out of memory. */
static char *encode_dup(const char *s) {
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  if (tm_http__uri_encode(&b, s, strlen(s), false, NULL) < 0) {
    tm_buf_dispose(&b);
    return NULL;
  }
  return tm_buf_take(&b, NULL);
}

int tm_sigv4_canonical_query(tm_buf *out, const tm_sigv4_kv *query, size_t n, tm_error *err) {
  if (n == 0) return TM_OK;
  enc_pair *pairs = tm_calloc(n, sizeof *pairs);
  if (!pairs) return tm_error_nomem(err);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    pairs[i].name = encode_dup(query[i].name);
    pairs[i].value = encode_dup(query[i].value ? query[i].value : "");
    if (!pairs[i].name || !pairs[i].value) rc = tm_error_nomem(err);
  }
  if (rc == TM_OK) {
    qsort(pairs, n, sizeof *pairs, cmp_pair);
    for (size_t i = 0; i < n && rc == TM_OK; i++)
      rc = tm_buf_printf(out, err, "%s%s=%s", i ? "&" : "", pairs[i].name, pairs[i].value);
  }
  for (size_t i = 0; i < n; i++) {
    tm_free(pairs[i].name);
    tm_free(pairs[i].value);
  }
  tm_free(pairs);
  return rc < 0 ? rc : TM_OK;
}

/* ---- canonical headers ---- */

typedef struct canon_header {
  char *name;  /* owned, lowercase */
  char *value; /* owned, trimmed, spaces collapsed */
  size_t order;
} canon_header;

static int cmp_header(const void *a, const void *b) {
  const canon_header *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Trims leading and trailing blanks and collapses runs of blanks to one space. */
static char *trim_value(const char *v) {
  size_t n = strlen(v);
  char *out = tm_malloc(n + 1);
  if (!out) return NULL;
  size_t k = 0;
  bool space = false;
  for (size_t i = 0; i < n; i++) {
    char c = v[i];
    if (c == ' ' || c == '\t') {
      space = k > 0;
      continue;
    }
    if (space) out[k++] = ' ';
    space = false;
    out[k++] = c;
  }
  out[k] = '\0';
  return out;
}

static void free_headers(canon_header *h, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tm_free(h[i].name);
    tm_free(h[i].value);
  }
  tm_free(h);
}

/*
 * Appends the canonical headers block (each "name:value\n", duplicates
 * joined by ',') to creq and the signed header list ("a;b;c") to signed_out.
 */
static int canonical_headers(tm_buf *creq, tm_buf *signed_out, const tm_sigv4_request *req,
                             tm_error *err) {
  size_t n = req->n_headers;
  if (n > HEADERS_MAX) return tm_error_set(err, TM_EINVALID, "more than %d headers to sign", HEADERS_MAX);
  canon_header *h = tm_calloc(n ? n : 1, sizeof *h);
  if (!h) return tm_error_nomem(err);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    h[i].name = tm_strdup(req->headers[i].name);
    h[i].value = trim_value(req->headers[i].value ? req->headers[i].value : "");
    h[i].order = i;
    if (!h[i].name || !h[i].value) {
      rc = tm_error_nomem(err);
      break;
    }
    for (char *p = h[i].name; *p; p++)
      if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  }
  if (rc == TM_OK && n > 1) qsort(h, n, sizeof *h, cmp_header);
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    bool same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
    if (same) {
      rc = tm_buf_printf(creq, err, ",%s", h[i].value);
      continue;
    }
    if (i > 0) rc = tm_buf_putc(creq, '\n', err);
    if (rc == TM_OK) rc = tm_buf_printf(creq, err, "%s:%s", h[i].name, h[i].value);
    if (rc == TM_OK)
      rc = tm_buf_printf(signed_out, err, "%s%s", signed_out->len ? ";" : "", h[i].name);
  }
  if (rc == TM_OK && n > 0) rc = tm_buf_putc(creq, '\n', err);
  free_headers(h, n);
  return rc;
}

static int signed_headers_only(tm_buf *signed_out, const tm_sigv4_request *req, tm_error *err) {
  tm_buf scratch = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = canonical_headers(&scratch, signed_out, req, err);
  tm_buf_dispose(&scratch);
  return rc;
}

int tm_sigv4_canonical_request(tm_buf *out, const tm_sigv4_request *req, tm_error *err) {
  tm_buf signed_h = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = tm_buf_printf(out, err, "%s\n", req->method);
  if (rc == TM_OK) rc = tm_http__uri_encode(out, req->path, strlen(req->path), true, err);
  if (rc == TM_OK) rc = tm_buf_putc(out, '\n', err);
  if (rc == TM_OK) rc = tm_sigv4_canonical_query(out, req->query, req->n_query, err);
  if (rc == TM_OK) rc = tm_buf_putc(out, '\n', err);
  if (rc == TM_OK) rc = canonical_headers(out, &signed_h, req, err);
  if (rc == TM_OK)
    rc = tm_buf_printf(out, err, "\n%s\n%s", tm_buf_cstr(&signed_h), req->payload_hash);
  tm_buf_dispose(&signed_h);
  return rc;
}

static int scope(tm_buf *out, const tm_sigv4_request *req, tm_error *err) {
  if (!req->amz_date || strlen(req->amz_date) != 16)
    return tm_error_set(err, TM_EINVALID, "x-amz-date '%s' is not YYYYMMDDTHHMMSSZ",
                        req->amz_date ? req->amz_date : "");
  return tm_buf_printf(out, err, "%.8s/%s/%s/aws4_request", req->amz_date, req->region,
                       req->service);
}

int tm_sigv4_string_to_sign(tm_buf *out, const tm_sigv4_request *req, const char *creq,
                             size_t creq_len, tm_error *err) {
  char hash[TM_SHA256_HEX_LEN + 1];
  TM_TRY(tm_sha256_hex(hash, creq, creq_len, err));
  TM_TRY(tm_buf_printf(out, err, "AWS4-HMAC-SHA256\n%s\n", req->amz_date));
  TM_TRY(scope(out, req, err));
  return tm_buf_printf(out, err, "\n%s", hash);
}

int tm_sigv4_signing_key(uint8_t key[32], const char *secret, const char *date8,
                          const char *region, const char *service, tm_error *err) {
  char *k = tm_asprintf("AWS4%s", secret);
  if (!k) return tm_error_nomem(err);
  uint8_t a[32], b[32];
  int rc = hmac(a, k, strlen(k), date8, 8, err);
  if (rc == TM_OK) rc = hmac(b, a, 32, region, strlen(region), err);
  if (rc == TM_OK) rc = hmac(a, b, 32, service, strlen(service), err);
  if (rc == TM_OK) rc = hmac(key, a, 32, "aws4_request", 12, err);
  /* The secret-derived material does not linger in freed memory. */
  memset(k, 0, strlen(k));
  tm_free(k);
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  return rc;
}

int tm_sigv4_authorization(tm_buf *out, char *signature_out, const tm_sigv4_request *req,
                            tm_error *err) {
  tm_buf creq = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf sts = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf signed_h = TM_BUF_INIT(TM_BUF_UNLIMITED);
  uint8_t key[32], sig[32];
  char sig_hex[TM_SHA256_HEX_LEN + 1];
  int rc;
  TM_CHECK(tm_sigv4_canonical_request(&creq, req, err));
  TM_CHECK(tm_sigv4_string_to_sign(&sts, req, creq.ptr, creq.len, err));
  TM_CHECK(tm_sigv4_signing_key(key, req->secret_key, req->amz_date, req->region,
                                 req->service, err));
  TM_CHECK(hmac(sig, key, 32, sts.ptr, sts.len, err));
  to_hex(sig_hex, sig, 32);
  TM_CHECK(signed_headers_only(&signed_h, req, err));
  TM_CHECK(tm_buf_printf(out, err, "AWS4-HMAC-SHA256 Credential=%s/", req->access_key));
  TM_CHECK(scope(out, req, err));
  TM_CHECK(tm_buf_printf(out, err, ", SignedHeaders=%s, Signature=%s", tm_buf_cstr(&signed_h),
                         sig_hex));
  if (signature_out) memcpy(signature_out, sig_hex, sizeof sig_hex);
done:
  memset(key, 0, sizeof key);
  tm_buf_dispose(&creq);
  tm_buf_dispose(&sts);
  tm_buf_dispose(&signed_h);
  return rc;
}
