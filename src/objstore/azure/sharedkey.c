/*
 * sharedkey.c - Azure Storage Shared Key signing (objstore layer, azure
 * backend), written from Microsoft's "Authorize with Shared Key" page for
 * the Blob service (version 2015-02-21 and later):
 *
 *   StringToSign = VERB \n Content-Encoding \n Content-Language \n
 *                  Content-Length \n Content-MD5 \n Content-Type \n Date \n
 *                  If-Modified-Since \n If-Match \n If-None-Match \n
 *                  If-Unmodified-Since \n Range \n
 *                  CanonicalizedHeaders CanonicalizedResource
 *   Signature    = Base64(HMAC-SHA256(Base64Decode(key), UTF8(StringToSign)))
 *   Authorization: SharedKey ACCOUNT:Signature
 *
 * Date is left empty: x-ms-date (a canonicalized header) carries the time.
 * Also the helpers signing needs: base64, RFC 1123 dates, SAS checks.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/azure/azure_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define HEADERS_MAX 32
#define QUERY_MAX 32

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void tm_azure__base64_encode(char *out, const uint8_t *in, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < n) v |= (uint32_t)in[i + 1] << 8;
    if (i + 2 < n) v |= in[i + 2];
    out[o++] = k_b64[(v >> 18) & 63];
    out[o++] = k_b64[(v >> 12) & 63];
    out[o++] = i + 1 < n ? k_b64[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? k_b64[v & 63] : '=';
  }
  out[o] = '\0';
}

static int b64_value(char c) {
  const char *p = c ? strchr(k_b64, c) : NULL;
  return p ? (int)(p - k_b64) : -1;
}

bool tm_azure__base64_decode(uint8_t *out, size_t cap, size_t *n_out, const char *in, size_t len) {
  if (len == 0 || len % 4 != 0) return false;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 4) {
    int v[4];
    size_t pad = 0;
    for (size_t j = 0; j < 4; j++) {
      if (in[i + j] == '=' && i + 4 == len && j >= 2) {
        v[j] = 0;
        pad++;
      } else {
        if (pad) return false; /* data after '=' */
        v[j] = b64_value(in[i + j]);
        if (v[j] < 0) return false;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    size_t k = 3 - pad;
    if (o + k > cap) return false;
    out[o++] = (uint8_t)(w >> 16);
    if (k > 1) out[o++] = (uint8_t)(w >> 8);
    if (k > 2) out[o++] = (uint8_t)w;
  }
  *n_out = o;
  return true;
}

int tm_azure__signature(char out[45], const char *key_b64, const char *sts, size_t len,
                        tm_error *err) {
  uint8_t key[256];
  size_t n = 0;
  if (!tm_azure__base64_decode(key, sizeof key, &n, key_b64, strlen(key_b64)))
    return tm_error_set(err, TM_EINVALID, "abfs_access_key is not a base64 account key");
  uint8_t mac[32];
  unsigned int mac_len = 0;
  bool ok = HMAC(EVP_sha256(), key, (int)n, (const unsigned char *)sts, len, mac, &mac_len) &&
            mac_len == 32;
  memset(key, 0, sizeof key);
  if (!ok) return tm_error_set(err, TM_ERROR, "HMAC-SHA256 failed in OpenSSL");
  tm_azure__base64_encode(out, mac, 32);
  return TM_OK;
}

/* ---- dates ---- */

static const char *const k_days[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};
static const char *const k_months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void tm_azure__http_date(char out[30], int64_t unix_sec) {
  int64_t days = unix_sec >= 0 ? unix_sec / 86400 : -((-unix_sec + 86399) / 86400);
  int64_t rem = unix_sec - days * 86400;
  int64_t y;
  unsigned m, d;
  tm_civil_from_days(days, &y, &m, &d);
  int64_t wd = days % 7;
  if (wd < 0) wd += 7;
  /* Written by hand: strftime's %a and %b follow the locale. */
  snprintf(out, 30, "%s, %02u %s %04lld %02d:%02d:%02d GMT", k_days[wd], d, k_months[m - 1],
           (long long)y, (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
}

static bool digits(const char *s, size_t n, unsigned *out) {
  unsigned v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  *out = v;
  return true;
}

bool tm_azure__parse_http_date(const char *s, size_t len, int64_t *unix_sec_out) {
  while (len && (*s == ' ' || *s == '\t')) s++, len--;
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
  /* "Wed, 09 Sep 2009 09:20:02 GMT": exactly 29 bytes. */
  if (len != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
    return false;
  bool day_ok = false;
  for (size_t i = 0; i < 7; i++) day_ok = day_ok || memcmp(s, k_days[i], 3) == 0;
  unsigned month = 0;
  for (unsigned i = 0; i < 12; i++)
    if (memcmp(s + 8, k_months[i], 3) == 0) month = i + 1;
  unsigned d, y, hh, mm, ss;
  if (!day_ok || !month || !digits(s + 5, 2, &d) || !digits(s + 12, 4, &y) ||
      !digits(s + 17, 2, &hh) || !digits(s + 20, 2, &mm) || !digits(s + 23, 2, &ss))
    return false;
  static const unsigned k_mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (d < 1 || d > k_mdays[month - 1] || hh > 23 || mm > 59 || ss > 60) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (month == 2 && d == 29 && !leap) return false;
  *unix_sec_out = tm_days_from_civil(y, month, d) * 86400 + hh * 3600 + mm * 60 + ss;
  return true;
}

/* ---- the string to sign ---- */

typedef struct canon_kv {
  char *name;  /* owned, lowercased */
  char *value; /* owned */
} canon_kv;

static int cmp_kv(const void *a, const void *b) {
  const canon_kv *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->value, y->value);
}

static char *lower_dup(const char *s) {
  char *d = tm_strdup(s);
  for (char *p = d; p && *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  return d;
}

/* A header value as Shared Key wants it: trimmed, runs of blanks folded to one space. */
static char *fold_value(const char *v) {
  char *d = tm_malloc(strlen(v) + 1);
  if (!d) return NULL;
  size_t o = 0;
  bool blank = false;
  for (const char *p = v; *p; p++) {
    bool is_blank = *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n';
    if (is_blank) {
      blank = o > 0;
      continue;
    }
    if (blank) d[o++] = ' ';
    blank = false;
    d[o++] = *p;
  }
  d[o] = '\0';
  return d;
}

static void free_kvs(canon_kv *kv, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tm_free(kv[i].name);
    tm_free(kv[i].value);
  }
}

int tm_azure__string_to_sign(tm_buf *out, const tm_azure_sign_req *r, tm_error *err) {
  if (r->n_headers > HEADERS_MAX || r->n_query > QUERY_MAX)
    return tm_error_set(err, TM_EINVALID, "Shared Key: too many headers or query parameters");
  canon_kv h[HEADERS_MAX], q[QUERY_MAX];
  size_t nh = 0, nq = 0;
  int rc = TM_OK;
  char clen[24] = "";
  if (r->content_length) snprintf(clen, sizeof clen, "%llu", (unsigned long long)r->content_length);
  for (size_t i = 0; i < r->n_headers; i++) {
    h[nh].name = lower_dup(r->headers[i].name);
    h[nh].value = fold_value(r->headers[i].value);
    nh++;
    if (!h[nh - 1].name || !h[nh - 1].value) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  for (size_t i = 0; i < r->n_query; i++) {
    q[nq].name = lower_dup(r->query[i].name);
    q[nq].value = tm_strdup(r->query[i].value);
    nq++;
    if (!q[nq - 1].name || !q[nq - 1].value) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  qsort(h, nh, sizeof h[0], cmp_kv);
  qsort(q, nq, sizeof q[0], cmp_kv);
  TM_CHECK(tm_buf_printf(out, err, "%s\n\n\n%s\n\n%s\n\n\n%s\n%s\n\n%s\n", r->method, clen,
                         r->content_type ? r->content_type : "", r->if_match ? r->if_match : "",
                         r->if_none_match ? r->if_none_match : "", r->range ? r->range : ""));
  for (size_t i = 0; i < nh; i++) {
    if (strncmp(h[i].name, "x-ms-", 5) != 0) continue;
    TM_CHECK(tm_buf_printf(out, err, "%s:%s\n", h[i].name, h[i].value));
  }
  TM_CHECK(tm_buf_printf(out, err, "/%s%s", r->account, r->encoded_path));
  for (size_t i = 0; i < nq; i++) {
    if (i == 0 || strcmp(q[i].name, q[i - 1].name) != 0)
      TM_CHECK(tm_buf_printf(out, err, "\n%s:%s", q[i].name, q[i].value));
    else
      TM_CHECK(tm_buf_printf(out, err, ",%s", q[i].value));
  }
  rc = TM_OK;
done:
  free_kvs(h, nh);
  free_kvs(q, nq);
  return rc;
}

/* ---- SAS ---- */

int tm_azure__check_sas(const char *sas, const char **query_out, tm_error *err) {
  if (*sas == '?') sas++;
  if (!*sas) return tm_error_set(err, TM_EINVALID, "abfs_sas_string is empty");
  for (const char *p = sas; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c <= ' ' || c == 0x7f || c == '#')
      return tm_error_set(err, TM_EINVALID,
                          "abfs_sas_string has a blank, '#' or control character (it is the "
                          "query part of a SAS URL, e.g. sv=...&sig=...)");
  }
  bool has_sig = strncmp(sas, "sig=", 4) == 0 || strstr(sas, "&sig=") != NULL;
  if (!has_sig)
    return tm_error_set(err, TM_EINVALID,
                        "abfs_sas_string has no sig= parameter (it is the query part of a SAS "
                        "URL, e.g. sv=...&sig=...)");
  *query_out = sas;
  return TM_OK;
}
