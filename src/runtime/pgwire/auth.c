/*
 * auth.c - the PostgreSQL wire protocol's password methods checked against
 * the API keys (runtime layer, pgwire; see auth.h). OpenSSL does the
 * hashing: MD5, SHA-256, HMAC, PBKDF2, random bytes and base64.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#include "runtime/http/http.h"
#include "runtime/pgwire/auth.h"
#include "util/alloc.h"

#define SCRAM_ITERATIONS 4096

bool tm_pg_auth_parse(const char *s, tm_pg_auth *out) {
  if (!strcmp(s, "scram-sha-256")) *out = TM_PG_AUTH_SCRAM;
  else if (!strcmp(s, "md5")) *out = TM_PG_AUTH_MD5;
  else if (!strcmp(s, "password")) *out = TM_PG_AUTH_PASSWORD;
  else return false;
  return true;
}

const char *tm_pg_auth_name(tm_pg_auth a) {
  return a == TM_PG_AUTH_MD5 ? "md5" : a == TM_PG_AUTH_PASSWORD ? "password" : "scram-sha-256";
}

/* Compares all n bytes whatever differs. */
static bool same(const void *a, const void *b, size_t n) {
  const uint8_t *x = a, *y = b;
  uint8_t d = 0;
  for (size_t i = 0; i < n; i++) d |= (uint8_t)(x[i] ^ y[i]);
  return d == 0;
}

bool tm_pg_auth_cleartext(const char *const *keys, size_t n_keys, const char *pw, size_t len) {
  bool found = false;
  for (size_t i = 0; i < n_keys; i++) found |= tm_http_key_equal(pw, len, keys[i]);
  return found;
}

static void hex(const uint8_t *d, size_t n, char *out) {
  static const char k[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = k[d[i] >> 4];
    out[2 * i + 1] = k[d[i] & 15];
  }
  out[2 * n] = '\0';
}

/* md5 of a || b in hex (33 bytes with the NUL); false if OpenSSL fails. */
static bool md5_hex(const void *a, size_t a_len, const void *b, size_t b_len, char out[33]) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  uint8_t md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  bool ok = c && EVP_DigestInit_ex(c, EVP_md5(), NULL) == 1 &&
            EVP_DigestUpdate(c, a, a_len) == 1 && EVP_DigestUpdate(c, b, b_len) == 1 &&
            EVP_DigestFinal_ex(c, md, &n) == 1 && n == 16;
  EVP_MD_CTX_free(c);
  if (ok) hex(md, 16, out);
  return ok;
}

bool tm_pg_auth_md5(const char *const *keys, size_t n_keys, const char *user,
                    const uint8_t salt[4], const char *response, size_t len) {
  bool found = false;
  for (size_t i = 0; i < n_keys; i++) {
    char inner[33], outer[36];
    memcpy(outer, "md5", 3);
    if (!md5_hex(keys[i], strlen(keys[i]), user, strlen(user), inner) ||
        !md5_hex(inner, 32, salt, 4, outer + 3))
      continue;
    found |= len == 35 && same(outer, response, 35);
  }
  return found;
}

/* ---- SCRAM-SHA-256 ------------------------------------------------------------------------- */

static int b64(const uint8_t *d, size_t n, char *out, size_t cap, tm_error *err) {
  if (4 * ((n + 2) / 3) + 1 > cap) return tm_error_set(err, TM_ERROR, "SCRAM: value too long");
  EVP_EncodeBlock((unsigned char *)out, d, (int)n);
  return TM_OK;
}

/* Decodes base64 text (len bytes) into out (cap); *n_out the decoded length. */
static bool unb64(const char *s, size_t len, uint8_t *out, size_t cap, size_t *n_out) {
  if (len == 0 || len % 4 || len / 4 * 3 > cap) return false;
  int n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
  if (n < 0) return false;
  size_t pad = (s[len - 1] == '=') + (len > 1 && s[len - 2] == '=');
  *n_out = (size_t)n - pad;
  return true;
}

static bool printable_nonce(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',') return false;
  return n > 0;
}

int tm_pg_scram_first(tm_pg_scram *s, const uint8_t *data, size_t len, tm_buf *out,
                      tm_error *err) {
  memset(s, 0, sizeof *s);
  const char *m = (const char *)data;
  /* gs2 header: "n,," (no channel binding) or "y,," (client could but thinks we cannot). */
  if (len < 3 || (m[0] != 'n' && m[0] != 'y') || m[1] != ',')
    return tm_error_set(err, TM_EINVALID, "SCRAM: channel binding is not supported "
                        "(use sslmode=disable or channel_binding=disable)");
  const char *comma = memchr(m + 2, ',', len - 2);
  if (!comma) return tm_error_set(err, TM_EINVALID, "SCRAM: malformed client-first-message");
  const char *bare = comma + 1;
  size_t bare_len = len - (size_t)(bare - m);
  if (bare_len >= sizeof s->client_first_bare)
    return tm_error_set(err, TM_EINVALID, "SCRAM: client-first-message too long");
  memcpy(s->client_first_bare, bare, bare_len);
  s->client_first_bare[bare_len] = '\0';
  if (strlen(s->client_first_bare) != bare_len)
    return tm_error_set(err, TM_EINVALID, "SCRAM: NUL in client-first-message");
  const char *r = strstr(s->client_first_bare, ",r=");
  if (strncmp(s->client_first_bare, "n=", 2) != 0 || !r)
    return tm_error_set(err, TM_EINVALID, "SCRAM: client-first-message has no nonce");
  const char *cn = r + 3;
  size_t cn_len = strcspn(cn, ",");
  if (!printable_nonce(cn, cn_len) || cn_len + 33 >= sizeof s->nonce)
    return tm_error_set(err, TM_EINVALID, "SCRAM: bad client nonce");
  uint8_t rnd[18];
  if (RAND_bytes(rnd, sizeof rnd) != 1 || RAND_bytes(s->salt, sizeof s->salt) != 1)
    return tm_error_set(err, TM_ERROR, "SCRAM: no random bytes from OpenSSL");
  char rnd64[32], salt64[32];
  TM_TRY(b64(rnd, sizeof rnd, rnd64, sizeof rnd64, err));
  TM_TRY(b64(s->salt, sizeof s->salt, salt64, sizeof salt64, err));
  snprintf(s->nonce, sizeof s->nonce, "%.*s%s", (int)cn_len, cn, rnd64);
  snprintf(s->server_first, sizeof s->server_first, "r=%s,s=%s,i=%d", s->nonce, salt64,
           SCRAM_ITERATIONS);
  return tm_buf_puts(out, s->server_first, err);
}

static bool hmac(const uint8_t *key, size_t key_len, const void *d, size_t n, uint8_t out[32]) {
  unsigned len = 0;
  return HMAC(EVP_sha256(), key, (int)key_len, d, n, out, &len) && len == 32;
}

static bool sha256(const uint8_t *d, size_t n, uint8_t out[32]) {
  unsigned len = 0;
  return EVP_Digest(d, n, out, &len, EVP_sha256(), NULL) == 1 && len == 32;
}

int tm_pg_scram_final(tm_pg_scram *s, const char *const *keys, size_t n_keys,
                      const uint8_t *data, size_t len, bool *ok, tm_buf *out, tm_error *err) {
  *ok = false;
  char msg[1024];
  if (len >= sizeof msg) return tm_error_set(err, TM_EINVALID, "SCRAM: client-final-message too long");
  memcpy(msg, data, len);
  msg[len] = '\0';
  if (strlen(msg) != len) return tm_error_set(err, TM_EINVALID, "SCRAM: NUL in client-final-message");
  /* "c=biws,r=<nonce>,p=<proof>": biws is "n,," in base64 (y,, is eSws). */
  const char *p = strstr(msg, ",p=");
  if ((strncmp(msg, "c=biws,", 7) != 0 && strncmp(msg, "c=eSws,", 7) != 0) || !p)
    return tm_error_set(err, TM_EINVALID, "SCRAM: malformed client-final-message");
  size_t without_proof = (size_t)(p - msg);
  const char *r = msg + 6;
  size_t nlen = strlen(s->nonce);
  if (strncmp(r, ",r=", 3) != 0 || strncmp(r + 3, s->nonce, nlen) != 0 ||
      (r[3 + nlen] != ',' && r[3 + nlen] != '\0'))
    return tm_error_set(err, TM_EINVALID, "SCRAM: the nonce does not match");
  uint8_t proof[64];
  size_t proof_len = 0;
  if (!unb64(p + 3, strlen(p + 3), proof, sizeof proof, &proof_len) || proof_len != 32)
    return tm_error_set(err, TM_EINVALID, "SCRAM: malformed proof");
  char auth_msg[2048];
  int am = snprintf(auth_msg, sizeof auth_msg, "%s,%s,%.*s", s->client_first_bare, s->server_first,
                    (int)without_proof, msg);
  if (am < 0 || (size_t)am >= sizeof auth_msg)
    return tm_error_set(err, TM_EINVALID, "SCRAM: messages too long");
  uint8_t server_sig[32];
  bool found = false;
  for (size_t k = 0; k < n_keys; k++) {
    uint8_t salted[32], client_key[32], stored[32], sig[32], recovered[32], check[32], sk[32],
        ssig[32];
    if (PKCS5_PBKDF2_HMAC(keys[k], (int)strlen(keys[k]), s->salt, sizeof s->salt,
                          SCRAM_ITERATIONS, EVP_sha256(), 32, salted) != 1 ||
        !hmac(salted, 32, "Client Key", 10, client_key) || !sha256(client_key, 32, stored) ||
        !hmac(stored, 32, auth_msg, (size_t)am, sig))
      return tm_error_set(err, TM_ERROR, "SCRAM: OpenSSL failed");
    for (int i = 0; i < 32; i++) recovered[i] = (uint8_t)(proof[i] ^ sig[i]);
    if (!sha256(recovered, 32, check)) return tm_error_set(err, TM_ERROR, "SCRAM: OpenSSL failed");
    bool match = same(check, stored, 32);
    if (match && !found) {
      if (!hmac(salted, 32, "Server Key", 10, sk) || !hmac(sk, 32, auth_msg, (size_t)am, ssig))
        return tm_error_set(err, TM_ERROR, "SCRAM: OpenSSL failed");
      memcpy(server_sig, ssig, 32);
    }
    found |= match;
    tm_wipe(salted, sizeof salted);
    tm_wipe(client_key, sizeof client_key);
  }
  if (!found) return TM_OK;
  char v[64];
  TM_TRY(b64(server_sig, 32, v, sizeof v, err));
  TM_TRY(tm_buf_printf(out, err, "v=%s", v));
  *ok = true;
  return TM_OK;
}
