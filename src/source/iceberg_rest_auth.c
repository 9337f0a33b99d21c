/*
 * iceberg_rest_auth.c - authentication of Iceberg REST catalog requests
 * (source layer): a bearer token, OAuth2 client credentials with a cached
 * token, or AWS SigV4 (objstore/sigv4.h, keys from the options or the AWS
 * default chain, objstore/awscreds.h). See iceberg_rest.h for the rules and
 * iceberg_rest_int.h for what the client asks of it.
 *
 * The token endpoint's answer is hostile input: capped at 64 KiB, parsed by
 * tm_iceberg_rest_parse_token, and a token is refused unless it is visible
 * ASCII (it goes into a header line). Messages never carry the client secret
 * or a token: the server's own words are redacted before they are quoted.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "objstore/awscreds.h"
#include "objstore/fetch.h"
#include "objstore/sigv4.h"
#include "source/iceberg_rest_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/time.h"

#define TOKEN_BODY_LIMIT ((size_t)64 << 10)
#define TOKEN_MAX 8192
#define EXPIRES_IN_MAX ((int64_t)10 * 366 * 86400)

typedef enum auth_mode { AUTH_NONE = 0, AUTH_BEARER, AUTH_OAUTH2, AUTH_SIGV4 } auth_mode;

struct tm_iceberg_rest_auth {
  auth_mode mode;
  char *token;          /* owned: AUTH_BEARER's token */
  char *client_id;      /* owned or NULL (a secret alone) */
  char *client_secret;  /* owned */
  char *scope;          /* owned */
  char *server_url;     /* owned: the token endpoint */
  char *region;         /* owned: SigV4 signing region */
  char *service;        /* owned: SigV4 signing name */
  char *access_key;     /* owned or NULL: then chain */
  char *secret_key;     /* owned or NULL */
  char *session_token;  /* owned or NULL */
  tm_aws_chain *chain;  /* owned or NULL */
  long timeout_ms;
  pthread_mutex_t mu;   /* guards the fields below */
  char *cached;         /* owned: the current OAuth2 token, or NULL */
  int64_t renew_at_ms;  /* fetch a new token from then on; 0: only after a refusal */
  uint64_t generation;  /* bumped at every new token */
  uint64_t obtained;    /* tokens obtained */
};

/* ---- header lines --------------------------------------------------------------- */

int tm_rest_headers_add(tm_rest_headers *h, tm_error *err, const char *fmt, ...) {
  if (h->n >= TM_REST_MAX_HEADERS) return tm_error_set(err, TM_ETOOLARGE, "too many request headers");
  va_list ap;
  va_start(ap, fmt);
  tm_buf b = TM_BUF_INIT(TOKEN_MAX + 8192);
  int rc = tm_buf_vprintf(&b, err, fmt, ap);
  va_end(ap);
  if (rc < 0) {
    tm_buf_dispose(&b);
    return rc;
  }
  char *line = tm_buf_take(&b, NULL);
  if (!line) return tm_error_nomem(err);
  h->lines[h->n++] = line;
  h->lines[h->n] = NULL;
  return TM_OK;
}

void tm_rest_headers_dispose(tm_rest_headers *h) {
  for (size_t i = 0; i < h->n; i++) {
    memset(h->lines[i], 0, strlen(h->lines[i]));
    tm_free(h->lines[i]);
  }
  memset(h, 0, sizeof *h);
}

/* ---- helpers ------------------------------------------------------------------------ */

static void wipe_free(char *s) {
  if (s) {
    memset(s, 0, strlen(s));
    tm_free(s);
  }
}

static bool visible_ascii(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f) return false;
  return true;
}

/* application/x-www-form-urlencoded: unreserved bytes stay, every other byte is %XX. */
static int form_encode(tm_buf *out, const char *s, tm_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' || *p == '~';
    if (plain) {
      TM_TRY(tm_buf_putc(out, (char)*p, err));
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      TM_TRY(tm_buf_append(out, e, 3, err));
    }
  }
  return TM_OK;
}

/* Rewrites msg (cap bytes) with each occurrence of secret replaced by "***". */
static void redact_one(char *msg, size_t cap, const char *secret) {
  size_t n = secret ? strlen(secret) : 0;
  if (n == 0 || cap == 0 || !strstr(msg, secret)) return;
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = TM_OK;
  for (const char *p = msg, *hit; rc == TM_OK; p = hit + n) {
    hit = strstr(p, secret);
    if (!hit) {
      rc = tm_buf_puts(&b, p, NULL);
      break;
    }
    rc = tm_buf_append(&b, p, (size_t)(hit - p), NULL);
    if (rc == TM_OK) rc = tm_buf_puts(&b, "***", NULL);
  }
  if (rc == TM_OK) snprintf(msg, cap, "%s", tm_buf_cstr(&b));
  else msg[0] = '\0'; /* never keep the secret, even out of memory */
  tm_buf_dispose(&b);
}

/* Redacts a's secrets in msg; the caller holds a->mu (the cached token changes under it). */
static void redact_locked(tm_iceberg_rest_auth *a, char *msg, size_t cap) {
  redact_one(msg, cap, a->token);
  redact_one(msg, cap, a->client_secret);
  redact_one(msg, cap, a->secret_key);
  redact_one(msg, cap, a->session_token);
  redact_one(msg, cap, a->cached);
}

void tm_iceberg_rest__redact(tm_iceberg_rest_auth *a, char *msg, size_t cap) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  redact_locked(a, msg, cap);
  pthread_mutex_unlock(&a->mu);
}

/* ---- tokens ------------------------------------------------------------------------- */

void tm_iceberg_rest_token_dispose(tm_iceberg_rest_token *t) {
  wipe_free(t->access_token);
  memset(t, 0, sizeof *t);
  t->expires_in = -1;
}

int tm_iceberg_rest_parse_token(const char *json, size_t len, tm_iceberg_rest_token *out,
                                tm_error *err) {
  memset(out, 0, sizeof *out);
  out->expires_in = -1;
  json_error_t jerr;
  json_t *j = json_loadb(json ? json : "", len, JSON_REJECT_DUPLICATES, &jerr);
  int rc = TM_OK;
  if (!json_is_object(j)) {
    rc = TM_CORRUPT(err, "the token answer is not a JSON object");
    goto done;
  }
  json_t *tok = json_object_get(j, "access_token");
  json_t *type = json_object_get(j, "token_type");
  json_t *exp = json_object_get(j, "expires_in");
  if (!json_is_string(tok)) {
    rc = TM_CORRUPT(err, "the token answer has no access_token string");
    goto done;
  }
  size_t n = json_string_length(tok);
  if (n == 0 || n > TOKEN_MAX || !visible_ascii(json_string_value(tok), n)) {
    rc = TM_CORRUPT(err, "the token answer's access_token is empty, longer than %d bytes or "
                    "not visible ASCII", TOKEN_MAX);
    goto done;
  }
  if (!json_is_string(type)) {
    rc = TM_CORRUPT(err, "the token answer has no token_type string");
    goto done;
  }
  const char *tt = json_string_value(type);
  if (strcasecmp(tt, "bearer") != 0 && strcmp(tt, "N_A") != 0) {
    rc = TM_CORRUPT(err, "the token answer's token_type '%.31s' is not bearer", tt);
    goto done;
  }
  if (exp && !json_is_null(exp)) {
    if (!json_is_integer(exp) || json_integer_value(exp) <= 0 ||
        json_integer_value(exp) > EXPIRES_IN_MAX) {
      rc = TM_CORRUPT(err, "the token answer's expires_in is not a number of seconds between 1 "
                      "and 10 years");
      goto done;
    }
    out->expires_in = (int64_t)json_integer_value(exp);
  }
  snprintf(out->token_type, sizeof out->token_type, "%s", tt);
  if (!(out->access_token = tm_strndup(json_string_value(tok), n))) rc = tm_error_nomem(err);
done:
  json_decref(j);
  if (rc < 0) tm_iceberg_rest_token_dispose(out);
  return rc;
}

/* The OAuth2 error of a token endpoint's refusal ({"error", "error_description"}, or the
 * REST error model), redacted. Called with a->mu held. */
static void oauth_error(tm_iceberg_rest_auth *a, const tm_buf *body, char *msg, size_t cap) {
  msg[0] = '\0';
  json_t *j = body->len ? json_loadb(body->ptr, body->len, 0, NULL) : NULL;
  json_t *e = json_object_get(j, "error");
  if (json_is_string(e)) {
    const char *d = json_string_value(json_object_get(j, "error_description"));
    snprintf(msg, cap, "%.100s%s%.300s", json_string_value(e), d ? ": " : "", d ? d : "");
  } else if (json_is_object(e)) {
    const char *m = json_string_value(json_object_get(e, "message"));
    const char *t = json_string_value(json_object_get(e, "type"));
    snprintf(msg, cap, "%.100s%s%.300s", t ? t : "", t && m ? ": " : "", m ? m : "");
  } else if (body->len) {
    snprintf(msg, cap, "%.*s", (int)(body->len > 200 ? 200 : body->len), body->ptr);
  }
  json_decref(j);
  for (char *p = msg; *p; p++)
    if ((unsigned char)*p < 0x20) *p = ' ';
  redact_locked(a, msg, cap);
}

/* POSTs the client credentials; sets a->cached. Called with a->mu held. */
static int fetch_token(tm_iceberg_rest_auth *a, tm_error *err) {
  tm_buf form = TM_BUF_INIT(1 << 16), body = TM_BUF_INIT(TOKEN_BODY_LIMIT);
  tm_iceberg_rest_token t;
  memset(&t, 0, sizeof t);
  int rc;
  TM_CHECK(tm_buf_puts(&form, "grant_type=client_credentials", err));
  if (a->client_id) {
    TM_CHECK(tm_buf_puts(&form, "&client_id=", err));
    TM_CHECK(form_encode(&form, a->client_id, err));
  }
  TM_CHECK(tm_buf_puts(&form, "&client_secret=", err));
  TM_CHECK(form_encode(&form, a->client_secret, err));
  TM_CHECK(tm_buf_puts(&form, "&scope=", err));
  TM_CHECK(form_encode(&form, a->scope, err));
  const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded",
                       "Accept: application/json", NULL};
  tm_fetch_req fr = {"POST", a->server_url, hdr, form.ptr, form.len, a->timeout_ms, 0};
  long status = 0;
  TM_CHECK(tm_fetch(&fr, &status, &body, err));
  if (status != 200) {
    char msg[512];
    oauth_error(a, &body, msg, sizeof msg);
    int code = status >= 500 || status == 429 ? TM_EUNAVAILABLE : TM_EINVALID;
    bool refused = status == 400 || status == 401 || status == 403;
    const char *what = refused ? "the OAuth2 server refused the client credentials"
                       : status == 404 || status == 405 ? "no OAuth2 token endpoint there"
                                                        : "the OAuth2 server failed";
    const char *hint = refused ? "; check iceberg_oauth2_credential and iceberg_oauth2_scope"
                       : code == TM_EINVALID ? "; check iceberg_oauth2_server_url" : "";
    rc = tm_error_set(err, code, "%s: %s (HTTP %ld%s%s)%s", a->server_url, what, status,
                      msg[0] ? ": " : "", msg, hint);
    goto done;
  }
  rc = tm_iceberg_rest_parse_token(body.ptr, body.len, &t, err);
  if (rc < 0) {
    tm_error_prefix(err, "%s", a->server_url);
    goto done;
  }
  wipe_free(a->cached);
  a->cached = t.access_token;
  t.access_token = NULL;
  a->generation++;
  a->obtained++;
  int64_t now = tm_now_ms();
  if (t.expires_in > 0) {
    /* Renew a fifth of the lifetime early, at most a minute: a token is never sent stale. */
    int64_t life = t.expires_in * 1000, margin = life / 5 < 60000 ? life / 5 : 60000;
    a->renew_at_ms = now + life - margin;
  } else {
    a->renew_at_ms = 0;
  }
  tm_log(TM_LOG_DEBUG, "iceberg", "OAuth2 token %llu obtained from %s (%s)",
         (unsigned long long)a->obtained, a->server_url,
         t.expires_in > 0 ? "expires" : "no expiry given");
  rc = TM_OK;
done:
  tm_iceberg_rest_token_dispose(&t);
  if (form.ptr) memset(form.ptr, 0, form.len);
  tm_buf_dispose(&form);
  tm_buf_dispose(&body);
  return rc;
}

/* ---- SigV4 ------------------------------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decodes [s, s+n) into an owned string ('+' stays '+'). */
static char *pct_decode(const char *s, size_t n) {
  char *out = tm_malloc(n + 1);
  if (!out) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out[k++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
  return out;
}

#define MAX_QUERY 8

/* Adds host, x-amz-date, x-amz-security-token, content-type and Authorization to h. */
static int sign(tm_iceberg_rest_auth *a, const char *method, const char *url, const char *body,
                size_t body_len, tm_rest_headers *h, tm_error *err) {
  const char *rest = tm_str_has_prefix(url, "https://") ? url + 8
                     : tm_str_has_prefix(url, "http://") ? url + 7 : NULL;
  if (!rest) return tm_error_set(err, TM_EINVALID, "%s: not an http(s) URL", url);
  size_t alen = strcspn(rest, "/?#");
  const char *path = rest + alen;
  size_t plen = strcspn(path, "?#");
  const char *query = path[plen] == '?' ? path + plen + 1 : "";
  size_t qlen = strcspn(query, "#");
  char authority[512], amz_date[17], hash[TM_SHA256_HEX_LEN + 1];
  if (alen == 0 || alen >= sizeof authority)
    return tm_error_set(err, TM_EINVALID, "%s: bad host", url);
  memcpy(authority, rest, alen);
  authority[alen] = '\0';
  tm_aws_creds *creds = NULL;
  char *raw_path = tm_strndup(plen ? path : "/", plen ? plen : 1);
  tm_sigv4_kv q[MAX_QUERY];
  size_t nq = 0;
  tm_buf auth = TM_BUF_INIT(1 << 14);
  int rc = raw_path ? TM_OK : tm_error_nomem(err);
  /* The query's pairs, decoded: the signer encodes them canonically again. */
  for (size_t i = 0; rc == TM_OK && i < qlen;) {
    size_t n = strcspn(query + i, "&");
    if (n > qlen - i) n = qlen - i;
    if (n > 0) {
      if (nq == MAX_QUERY) {
        rc = tm_error_set(err, TM_ETOOLARGE, "%s: too many query parameters to sign", url);
        break;
      }
      const char *eq = memchr(query + i, '=', n);
      size_t kn = eq ? (size_t)(eq - (query + i)) : n;
      char *k = pct_decode(query + i, kn);
      char *v = pct_decode(eq ? eq + 1 : "", eq ? n - kn - 1 : 0);
      q[nq].name = k;
      q[nq].value = v;
      nq++;
      if (!k || !v) rc = tm_error_nomem(err);
    }
    i += n + 1;
  }
  const char *ak = a->access_key, *sk = a->secret_key, *st = a->session_token;
  if (rc == TM_OK && a->chain) {
    if (!(creds = tm_malloc(sizeof *creds))) rc = tm_error_nomem(err);
    if (rc == TM_OK) rc = tm_aws_chain_get(a->chain, creds, err);
    if (rc == TM_OK) {
      ak = creds->access_key;
      sk = creds->secret_key;
      st = creds->session_token[0] ? creds->session_token : NULL;
    }
  }
  if (rc == TM_OK) rc = tm_sha256_hex(hash, body ? body : "", body ? body_len : 0, err);
  if (rc == TM_OK) {
    tm_sigv4_amz_date(amz_date, tm_now_ms() / 1000);
    tm_sigv4_kv sh[4];
    size_t nh = 0;
    if (body) sh[nh++] = (tm_sigv4_kv){"content-type", "application/x-www-form-urlencoded"};
    sh[nh++] = (tm_sigv4_kv){"host", authority};
    sh[nh++] = (tm_sigv4_kv){"x-amz-date", amz_date};
    if (st && *st) sh[nh++] = (tm_sigv4_kv){"x-amz-security-token", st};
    tm_sigv4_request sr = {method, raw_path, q, nq, sh, nh, hash, amz_date,
                           a->region, a->service, ak, sk};
    rc = tm_sigv4_authorization(&auth, NULL, &sr, err);
    for (size_t i = 0; rc == TM_OK && i < nh; i++)
      if (strcmp(sh[i].name, "content-type") != 0)
        rc = tm_rest_headers_add(h, err, "%s: %s", sh[i].name, sh[i].value);
    if (rc == TM_OK) rc = tm_rest_headers_add(h, err, "Authorization: %s", tm_buf_cstr(&auth));
  }
  for (size_t i = 0; i < nq; i++) {
    tm_free((char *)q[i].name);
    tm_free((char *)q[i].value);
  }
  if (auth.ptr) memset(auth.ptr, 0, auth.len);
  tm_buf_dispose(&auth);
  tm_free(raw_path);
  if (creds) {
    memset(creds, 0, sizeof *creds);
    tm_free(creds);
  }
  return rc;
}

/* ---- the auth object ------------------------------------------------------------------ */

static int dup_opt(const char *s, char **out, tm_error *err) {
  *out = NULL;
  if (!s || !*s) return TM_OK;
  *out = tm_strdup(s);
  return *out ? TM_OK : tm_error_nomem(err);
}

int tm_iceberg_rest_auth_new(tm_iceberg_rest_auth **out, const char *base_url,
                             const tm_iceberg_rest_auth_options *o, tm_error *err) {
  if (!o || o->version != TM_ICEBERG_REST_AUTH_OPTIONS_VERSION)
    return tm_error_set(err, TM_EINVALID, "REST catalog auth: options version mismatch");
  bool has_token = o->token && *o->token, has_cred = o->oauth2_credential != NULL;
  if (has_token + has_cred + o->sigv4 > 1)
    return tm_error_set(err, TM_EINVALID, "%s", has_token && has_cred
                        ? "iceberg_token and iceberg_oauth2_credential are two ways to "
                          "authenticate: give one"
                        : "iceberg_sigv4_enabled signs requests with AWS keys: it takes no "
                          "iceberg_token or iceberg_oauth2_credential");
  tm_iceberg_rest_auth *a = tm_calloc(1, sizeof *a);
  if (!a) return tm_error_nomem(err);
  pthread_mutex_init(&a->mu, NULL);
  a->timeout_ms = o->timeout_ms;
  int rc = TM_OK;
  if (has_token) {
    a->mode = AUTH_BEARER;
    if (!visible_ascii(o->token, strlen(o->token)) || strlen(o->token) > TOKEN_MAX)
      rc = tm_error_set(err, TM_EINVALID, "iceberg_token: not visible ASCII, or longer than %d "
                        "bytes", TOKEN_MAX);
    if (rc == TM_OK) rc = dup_opt(o->token, &a->token, err);
  } else if (has_cred) {
    a->mode = AUTH_OAUTH2;
    const char *c = o->oauth2_credential, *colon = strchr(c, ':');
    const char *secret = colon ? colon + 1 : c;
    if (!*secret || (colon && colon == c))
      rc = tm_error_set(err, TM_EINVALID, "iceberg_oauth2_credential: expected CLIENT_ID:"
                        "CLIENT_SECRET (or the secret alone), with neither part empty");
    if (rc == TM_OK && colon && !(a->client_id = tm_strndup(c, (size_t)(colon - c))))
      rc = tm_error_nomem(err);
    if (rc == TM_OK) rc = dup_opt(secret, &a->client_secret, err);
    if (rc == TM_OK)
      rc = dup_opt(o->oauth2_scope && *o->oauth2_scope ? o->oauth2_scope : "catalog", &a->scope, err);
    if (rc == TM_OK) {
      if (o->oauth2_server_url && *o->oauth2_server_url) {
        if (!tm_str_has_prefix(o->oauth2_server_url, "http://") &&
            !tm_str_has_prefix(o->oauth2_server_url, "https://"))
          rc = tm_error_set(err, TM_EINVALID, "iceberg_oauth2_server_url '%s' is not an "
                            "http(s):// URL", o->oauth2_server_url);
        else
          rc = dup_opt(o->oauth2_server_url, &a->server_url, err);
      } else if (!(a->server_url = tm_asprintf("%s/v1/oauth/tokens", base_url))) {
        rc = tm_error_nomem(err);
      }
    }
  } else if (o->sigv4) {
    a->mode = AUTH_SIGV4;
    rc = dup_opt(o->signing_region && *o->signing_region ? o->signing_region : "us-east-1",
                 &a->region, err);
    if (rc == TM_OK)
      rc = dup_opt(o->signing_name && *o->signing_name ? o->signing_name : "glue", &a->service, err);
    bool ak = o->access_key && *o->access_key, sk = o->secret_key && *o->secret_key;
    if (rc == TM_OK && ak != sk)
      rc = tm_error_set(err, TM_EINVALID, "SigV4 keys: iceberg_s3_access_key_id and "
                        "iceberg_s3_secret_access_key go together");
    if (rc == TM_OK && ak) {
      rc = dup_opt(o->access_key, &a->access_key, err);
      if (rc == TM_OK) rc = dup_opt(o->secret_key, &a->secret_key, err);
      if (rc == TM_OK) rc = dup_opt(o->session_token, &a->session_token, err);
    } else if (rc == TM_OK) {
      rc = tm_aws_chain_new(&a->chain, err);
    }
  }
  if (rc < 0) {
    tm_iceberg_rest_auth_free(a);
    return rc;
  }
  *out = a;
  return TM_OK;
}

void tm_iceberg_rest_auth_free(tm_iceberg_rest_auth *a) {
  if (!a) return;
  wipe_free(a->token);
  wipe_free(a->client_id);
  wipe_free(a->client_secret);
  tm_free(a->scope);
  tm_free(a->server_url);
  tm_free(a->region);
  tm_free(a->service);
  wipe_free(a->access_key);
  wipe_free(a->secret_key);
  wipe_free(a->session_token);
  wipe_free(a->cached);
  tm_aws_chain_free(a->chain);
  pthread_mutex_destroy(&a->mu);
  tm_free(a);
}

uint64_t tm_iceberg_rest_auth_tokens_obtained(tm_iceberg_rest_auth *a) {
  pthread_mutex_lock(&a->mu);
  uint64_t n = a->obtained;
  pthread_mutex_unlock(&a->mu);
  return n;
}

int tm_iceberg_rest__authorize(tm_iceberg_rest_auth *a, const char *method, const char *url,
                               const char *body, size_t body_len, tm_rest_headers *h,
                               uint64_t *generation_out, tm_error *err) {
  *generation_out = 0;
  if (!a || a->mode == AUTH_NONE) return TM_OK;
  if (a->mode == AUTH_BEARER) return tm_rest_headers_add(h, err, "Authorization: Bearer %s", a->token);
  if (a->mode == AUTH_SIGV4) return sign(a, method, url, body, body_len, h, err);
  pthread_mutex_lock(&a->mu);
  int rc = TM_OK;
  if (!a->cached || (a->renew_at_ms && tm_now_ms() >= a->renew_at_ms)) rc = fetch_token(a, err);
  if (rc == TM_OK) {
    *generation_out = a->generation;
    rc = tm_rest_headers_add(h, err, "Authorization: Bearer %s", a->cached);
  }
  pthread_mutex_unlock(&a->mu);
  return rc;
}

bool tm_iceberg_rest__auth_refused(tm_iceberg_rest_auth *a, uint64_t generation) {
  if (!a || a->mode != AUTH_OAUTH2) return false;
  pthread_mutex_lock(&a->mu);
  if (a->generation == generation) {
    wipe_free(a->cached);
    a->cached = NULL;
  }
  pthread_mutex_unlock(&a->mu);
  return true;
}

const char *tm_iceberg_rest__auth_hint(const tm_iceberg_rest_auth *a) {
  switch (a ? a->mode : AUTH_NONE) {
    case AUTH_BEARER: return "check iceberg_token";
    case AUTH_OAUTH2: return "a fresh OAuth2 token was refused too; check iceberg_oauth2_credential "
                             "and iceberg_oauth2_scope";
    case AUTH_SIGV4: return "check the AWS keys (iceberg_s3_access_key_id, "
                            "iceberg_s3_secret_access_key or the AWS credential chain), "
                            "iceberg_signing_region and iceberg_signing_name";
    default: return "the catalog wants credentials: iceberg_token, iceberg_oauth2_credential "
                    "or iceberg_sigv4_enabled";
  }
}
