/*
 * awscreds.c - the AWS default credential chain (objstore layer). See
 * awscreds.h for the links and their order.
 */
#include "objstore/awscreds.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/fetch.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/time.h"

#define CREDS_BODY_LIMIT ((size_t)64 << 10)
#define CREDS_FILE_LIMIT ((size_t)1 << 20)
#define RENEW_BEFORE_MS ((int64_t)5 * 60 * 1000)

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void wipe(tm_aws_creds *c) { tm_wipe(c, sizeof *c); }

/* Copies n bytes of v into a fixed field; TM_ETOOLARGE naming it when it does not fit. */
static int put_field(char *dst, size_t cap, const char *v, size_t n, const char *what,
                     const char *from, tm_error *err) {
  if (n == 0) return tm_error_set(err, TM_ECORRUPT, "%s: empty %s", from, what);
  if (n >= cap) return tm_error_set(err, TM_ETOOLARGE, "%s: %s longer than %zu bytes", from, what, cap - 1);
  memcpy(dst, v, n);
  dst[n] = '\0';
  return TM_OK;
}

static int set_keys(tm_aws_creds *out, const char *key, const char *secret, const char *token,
                    const char *from, tm_error *err) {
  if (!key || !secret)
    return tm_error_set(err, TM_EINVALID, "%s: an access key id needs its secret access key", from);
  TM_TRY(put_field(out->access_key, sizeof out->access_key, key, strlen(key), "access key id", from, err));
  TM_TRY(put_field(out->secret_key, sizeof out->secret_key, secret, strlen(secret),
                   "secret access key", from, err));
  out->session_token[0] = '\0';
  if (token && *token)
    TM_TRY(put_field(out->session_token, sizeof out->session_token, token, strlen(token),
                     "session token", from, err));
  return TM_OK;
}

/* "2026-12-03T17:00:00Z" into Unix ms. */
static int parse_expiration(const char *s, int64_t *ms, const char *from, tm_error *err) {
  int64_t sec;
  int32_t nsec;
  bool zone;
  if (!s || tm_time_parse(s, strlen(s), &sec, &nsec, &zone) != TM_OK)
    return tm_error_set(err, TM_ECORRUPT, "%s: bad Expiration '%s'", from, s ? s : "");
  *ms = sec * 1000 + nsec / 1000000;
  return TM_OK;
}

/* ---- 2. shared credentials and config files ----------------------------------- */

static int read_small_file(const char *path, tm_buf *out, bool *missing, tm_error *err) {
  *missing = false;
  FILE *f = fopen(path, "rb");
  if (!f) {
    *missing = true;
    return TM_OK;
  }
  char chunk[4096];
  size_t n;
  int rc = TM_OK;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (tm_buf_append(out, chunk, n, NULL) < 0) {
      rc = tm_error_set(err, TM_ETOOLARGE, "%s: larger than %zu bytes", path, out->limit);
      break;
    }
  }
  if (rc == TM_OK && ferror(f)) rc = tm_error_set(err, TM_EIO, "%s: read failed", path);
  fclose(f);
  if (rc == TM_OK) tm_buf_cstr(out);
  return rc;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
  return s;
}

typedef struct profile_keys {
  char *key, *secret, *token; /* borrowed from the file's buffer */
  const char *unsupported;    /* the first key naming a provider we do not run */
  bool found;
} profile_keys;

/*
 * Finds [section] (credentials: the profile name; config: "profile NAME", or
 * "default") in text (modified in place) and picks its keys.
 */
static void scan_ini(char *text, const char *section, profile_keys *pk) {
  bool in = false;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *l = trim(line);
    if (*l == '[') {
      char *end = strchr(l, ']');
      if (end) {
        *end = '\0';
        char *name = trim(l + 1);
        in = strcmp(name, section) == 0;
        pk->found = pk->found || in;
      } else {
        in = false;
      }
    } else if (in && *l && *l != '#' && *l != ';') {
      char *eq = strchr(l, '=');
      if (eq) {
        *eq = '\0';
        char *k = trim(l), *v = trim(eq + 1);
        if (strcmp(k, "aws_access_key_id") == 0) pk->key = v;
        else if (strcmp(k, "aws_secret_access_key") == 0) pk->secret = v;
        else if (strcmp(k, "aws_session_token") == 0) pk->token = v;
        else if (!pk->unsupported &&
                 (strcmp(k, "role_arn") == 0 || strcmp(k, "credential_process") == 0 ||
                  strcmp(k, "credential_source") == 0 || strcmp(k, "web_identity_token_file") == 0 ||
                  strncmp(k, "sso_", 4) == 0))
          pk->unsupported = strcmp(k, "role_arn") == 0 ? "role_arn"
                            : strcmp(k, "credential_process") == 0 ? "credential_process"
                            : strcmp(k, "credential_source") == 0 ? "credential_source"
                            : strcmp(k, "web_identity_token_file") == 0 ? "web_identity_token_file"
                                                                        : "sso_*";
      }
    }
    line = nl ? nl + 1 : NULL;
  }
}

/* Sets *answered when the profile was found in either file. */
static int from_shared_files(tm_aws_creds *out, bool *answered, tm_buf *tried, tm_error *err) {
  *answered = false;
  const char *home = env("HOME");
  const char *profile = env("AWS_PROFILE");
  bool named = profile != NULL;
  if (!profile) profile = "default";
  char cred_path[1024], conf_path[1024], section[300];
  const char *c = env("AWS_SHARED_CREDENTIALS_FILE"), *f = env("AWS_CONFIG_FILE");
  snprintf(cred_path, sizeof cred_path, "%s", c ? c : "");
  snprintf(conf_path, sizeof conf_path, "%s", f ? f : "");
  if (!c && home) snprintf(cred_path, sizeof cred_path, "%s/.aws/credentials", home);
  if (!f && home) snprintf(conf_path, sizeof conf_path, "%s/.aws/config", home);
  TM_TRY(tm_buf_printf(tried, err, "; shared files (%s, %s; profile %s): ",
                       *cred_path ? cred_path : "no HOME", *conf_path ? conf_path : "no HOME",
                       profile));
  tm_buf a = TM_BUF_INIT(CREDS_FILE_LIMIT), b = TM_BUF_INIT(CREDS_FILE_LIMIT);
  profile_keys pc = {0}, pf = {0};
  bool miss_a = true, miss_b = true;
  int rc = TM_OK;
  if (*cred_path) TM_CHECK(read_small_file(cred_path, &a, &miss_a, err));
  if (*conf_path) TM_CHECK(read_small_file(conf_path, &b, &miss_b, err));
  if (!miss_a) scan_ini(a.ptr, profile, &pc);
  if (strcmp(profile, "default") == 0) snprintf(section, sizeof section, "default");
  else snprintf(section, sizeof section, "profile %s", profile);
  if (!miss_b) scan_ini(b.ptr, section, &pf);
  if (!pc.found && !pf.found) {
    if (named) {
      rc = tm_error_set(err, TM_EINVALID, "AWS_PROFILE=%s: no such profile in %s or %s", profile,
                        cred_path, conf_path);
      goto done;
    }
    TM_CHECK(tm_buf_puts(tried, "no such profile", err));
    goto done;
  }
  /* The credentials file wins key by key, as in the AWS CLI. */
  char *key = pc.key ? pc.key : pf.key, *secret = pc.secret ? pc.secret : pf.secret;
  char *token = pc.token ? pc.token : pf.token;
  char from[400];
  snprintf(from, sizeof from, "AWS profile %s", profile);
  if (!key) {
    const char *u = pc.unsupported ? pc.unsupported : pf.unsupported;
    if (u)
      rc = tm_error_set(err, TM_EUNSUPPORTED,
                        "%s uses %s, which tidemark does not run; give the profile "
                        "aws_access_key_id and aws_secret_access_key, or use s3_auth: key",
                        from, u);
    else
      rc = tm_error_set(err, TM_EINVALID, "%s has no aws_access_key_id (%s, %s)", from, cred_path,
                        conf_path);
    goto done;
  }
  TM_CHECK(set_keys(out, key, secret, token, from, err));
  snprintf(out->source, sizeof out->source, "profile %.50s", profile);
  *answered = true;
done:
  if (a.ptr) memset(a.ptr, 0, a.len);
  if (b.ptr) memset(b.ptr, 0, b.len);
  tm_buf_dispose(&a);
  tm_buf_dispose(&b);
  return rc;
}

/* ---- JSON credential documents (container, IMDS) ------------------------------- */

static int from_json(tm_aws_creds *out, const tm_buf *body, const char *from, tm_error *err) {
  json_error_t je;
  json_t *j = json_loadb(body->ptr ? body->ptr : "", body->len, 0, &je);
  if (!json_is_object(j)) {
    json_decref(j);
    return tm_error_set(err, TM_ECORRUPT, "%s: the answer is not a JSON object", from);
  }
  const char *code = json_string_value(json_object_get(j, "Code"));
  int rc = TM_OK;
  if (code && strcmp(code, "Success") != 0) {
    rc = tm_error_set(err, TM_EINVALID, "%s: Code %.64s", from, code);
    goto done;
  }
  const char *k = json_string_value(json_object_get(j, "AccessKeyId"));
  const char *s = json_string_value(json_object_get(j, "SecretAccessKey"));
  const char *t = json_string_value(json_object_get(j, "Token"));
  const char *x = json_string_value(json_object_get(j, "Expiration"));
  if (!k || !s) {
    rc = tm_error_set(err, TM_ECORRUPT, "%s: no AccessKeyId and SecretAccessKey in the answer", from);
    goto done;
  }
  TM_CHECK(set_keys(out, k, s, t, from, err));
  out->expires_ms = 0;
  if (x) TM_CHECK(parse_expiration(x, &out->expires_ms, from, err));
done:
  json_decref(j);
  return rc;
}

static bool ok_status(long st) { return st >= 200 && st < 300; }

/* ---- 3. web identity ------------------------------------------------------------ */

/* The text between <tag> and </tag> in xml, or NULL (*n its length). */
static const char *xml_field(const char *xml, const char *tag, size_t *n) {
  char open[64], close[64];
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  const char *a = strstr(xml, open);
  if (!a) return NULL;
  a += strlen(open);
  const char *b = strstr(a, close);
  if (!b) return NULL;
  *n = (size_t)(b - a);
  return a;
}

static int form_put(tm_buf *b, const char *name, const char *value, tm_error *err) {
  static const char hex[] = "0123456789ABCDEF";
  TM_TRY(tm_buf_printf(b, err, "%s%s=", b->len ? "&" : "", name));
  for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        *p == '-' || *p == '_' || *p == '.' || *p == '~') {
      TM_TRY(tm_buf_putc(b, (char)*p, err));
    } else {
      char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      TM_TRY(tm_buf_append(b, e, 3, err));
    }
  }
  return TM_OK;
}

static int from_web_identity(tm_aws_creds *out, const char *token_file, tm_error *err) {
  const char *role = env("AWS_ROLE_ARN");
  if (!role)
    return tm_error_set(err, TM_EINVALID,
                        "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not");
  char session[128], url[1024];
  const char *sn = env("AWS_ROLE_SESSION_NAME");
  snprintf(session, sizeof session, "%s", sn ? sn : "tidemark");
  const char *ep = env("AWS_ENDPOINT_URL_STS");
  const char *region = env("AWS_REGION");
  if (!region) region = env("AWS_DEFAULT_REGION");
  if (ep) snprintf(url, sizeof url, "%s", ep);
  else if (region) snprintf(url, sizeof url, "https://sts.%s.amazonaws.com/", region);
  else snprintf(url, sizeof url, "https://sts.amazonaws.com/");
  tm_buf tok = TM_BUF_INIT(CREDS_BODY_LIMIT), form = TM_BUF_INIT(4 * CREDS_BODY_LIMIT);
  tm_buf body = TM_BUF_INIT(CREDS_BODY_LIMIT);
  bool missing;
  int rc = TM_OK;
  TM_CHECK(read_small_file(token_file, &tok, &missing, err));
  if (missing) {
    rc = tm_error_set(err, TM_EINVALID, "AWS_WEB_IDENTITY_TOKEN_FILE %s: cannot be read", token_file);
    goto done;
  }
  char *t = trim(tok.ptr ? tok.ptr : (char *)"");
  size_t tl = strlen(t);
  while (tl && (t[tl - 1] == '\n' || t[tl - 1] == '\r')) t[--tl] = '\0';
  if (!tl) {
    rc = tm_error_set(err, TM_EINVALID, "AWS_WEB_IDENTITY_TOKEN_FILE %s: empty", token_file);
    goto done;
  }
  TM_CHECK(form_put(&form, "Action", "AssumeRoleWithWebIdentity", err));
  TM_CHECK(form_put(&form, "Version", "2011-06-15", err));
  TM_CHECK(form_put(&form, "RoleArn", role, err));
  TM_CHECK(form_put(&form, "RoleSessionName", session, err));
  TM_CHECK(form_put(&form, "WebIdentityToken", t, err));
  const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", "Accept: text/xml", NULL};
  tm_fetch_req fr = {"POST", url, hdr, form.ptr, form.len, 10000, 0};
  long st;
  TM_CHECK(tm_fetch(&fr, &st, &body, err));
  const char *xml = tm_buf_cstr(&body);
  if (!ok_status(st)) {
    size_t n = 0;
    const char *m = xml_field(xml, "Message", &n);
    rc = tm_error_set(err, st >= 500 ? TM_EUNAVAILABLE : TM_EINVALID,
                      "STS AssumeRoleWithWebIdentity at %s (role %s): HTTP %ld: %.*s", url, role,
                      st, m ? (int)(n > 300 ? 300 : n) : 0, m ? m : "");
    goto done;
  }
  size_t nk = 0, ns = 0, nt = 0, nx = 0;
  const char *k = xml_field(xml, "AccessKeyId", &nk), *s = xml_field(xml, "SecretAccessKey", &ns);
  const char *tk = xml_field(xml, "SessionToken", &nt), *x = xml_field(xml, "Expiration", &nx);
  const char *from = "STS AssumeRoleWithWebIdentity";
  if (!k || !s || !tk) {
    rc = tm_error_set(err, TM_ECORRUPT, "%s at %s: no AccessKeyId, SecretAccessKey and SessionToken "
                      "in the answer", from, url);
    goto done;
  }
  TM_CHECK(put_field(out->access_key, sizeof out->access_key, k, nk, "AccessKeyId", from, err));
  TM_CHECK(put_field(out->secret_key, sizeof out->secret_key, s, ns, "SecretAccessKey", from, err));
  TM_CHECK(put_field(out->session_token, sizeof out->session_token, tk, nt, "SessionToken", from, err));
  out->expires_ms = 0;
  if (x) {
    char xs[64];
    snprintf(xs, sizeof xs, "%.*s", (int)(nx < 63 ? nx : 63), x);
    TM_CHECK(parse_expiration(xs, &out->expires_ms, from, err));
  }
  snprintf(out->source, sizeof out->source, "web identity");
done:
  if (tok.ptr) memset(tok.ptr, 0, tok.len);
  if (form.ptr) memset(form.ptr, 0, form.len);
  if (body.ptr) memset(body.ptr, 0, body.len);
  tm_buf_dispose(&tok);
  tm_buf_dispose(&form);
  tm_buf_dispose(&body);
  return rc;
}

/* ---- 4. container credentials ------------------------------------------------- */

static bool allowed_plain_http(const char *url) {
  static const char *const k[] = {"http://127.0.0.1", "http://localhost", "http://[::1]",
                                  "http://169.254.170.2", "http://169.254.170.23",
                                  "http://[fd00:ec2::23]", NULL};
  for (size_t i = 0; k[i]; i++) {
    size_t n = strlen(k[i]);
    if (strncmp(url, k[i], n) == 0 && (url[n] == ':' || url[n] == '/' || url[n] == '\0'))
      return true;
  }
  return false;
}

static int from_container(tm_aws_creds *out, const char *full, const char *rel, tm_error *err) {
  char url[1200];
  if (full) snprintf(url, sizeof url, "%s", full);
  else snprintf(url, sizeof url, "http://169.254.170.2%s%s", rel[0] == '/' ? "" : "/", rel);
  if (strncmp(url, "https://", 8) != 0 && !allowed_plain_http(url))
    return tm_error_set(err, TM_EINVALID,
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI %s: plain http must be a loopback or "
                        "the ECS/EKS credential host", url);
  tm_buf tok = TM_BUF_INIT(CREDS_BODY_LIMIT), body = TM_BUF_INIT(CREDS_BODY_LIMIT);
  char *auth = NULL;
  int rc = TM_OK;
  const char *tf = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  const char *tv = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  if (tf) {
    bool missing;
    TM_CHECK(read_small_file(tf, &tok, &missing, err));
    if (missing) {
      rc = tm_error_set(err, TM_EINVALID, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: cannot be read", tf);
      goto done;
    }
    tv = trim(tok.ptr ? tok.ptr : (char *)"");
  }
  if (tv) {
    char *t = tm_strdup(tv);
    if (!t) {
      rc = tm_error_nomem(err);
      goto done;
    }
    for (char *p = t; *p; p++)
      if (*p == '\r' || *p == '\n') *p = '\0';
    auth = tm_asprintf("Authorization: %s", t);
    memset(t, 0, strlen(t));
    tm_free(t);
    if (!auth) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  const char *hdr[] = {"Accept: application/json", auth, NULL};
  tm_fetch_req fr = {"GET", url, hdr, NULL, 0, 5000, 2000};
  long st;
  TM_CHECK(tm_fetch(&fr, &st, &body, err));
  if (!ok_status(st)) {
    rc = tm_error_set(err, st >= 500 ? TM_EUNAVAILABLE : TM_EINVALID,
                      "container credentials at %s: HTTP %ld", url, st);
    goto done;
  }
  char from[1300];
  snprintf(from, sizeof from, "container credentials at %s", url);
  TM_CHECK(from_json(out, &body, from, err));
  snprintf(out->source, sizeof out->source, "container");
done:
  if (auth) memset(auth, 0, strlen(auth));
  tm_free(auth);
  if (tok.ptr) memset(tok.ptr, 0, tok.len);
  if (body.ptr) memset(body.ptr, 0, body.len);
  tm_buf_dispose(&tok);
  tm_buf_dispose(&body);
  return rc;
}

/* ---- 5. IMDSv2 -------------------------------------------------------------------- */

/* *reached is false when the service did not answer at all (the chain's end). */
static int from_imds(tm_aws_creds *out, bool *reached, tm_buf *tried, tm_error *err) {
  *reached = false;
  const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  char base[512], url[1024], hdr_token[1200];
  snprintf(base, sizeof base, "%s", ep ? ep : "http://169.254.169.254");
  size_t bl = strlen(base);
  while (bl && base[bl - 1] == '/') base[--bl] = '\0';
  tm_buf tok = TM_BUF_INIT(1024), role = TM_BUF_INIT(1024), body = TM_BUF_INIT(CREDS_BODY_LIMIT);
  int rc = TM_OK;
  long st;
  tm_error e;
  tm_error_init(&e);
  snprintf(url, sizeof url, "%s/latest/api/token", base);
  const char *h1[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
  tm_fetch_req fr = {"PUT", url, h1, "", 0, 2000, 1000};
  if (tm_fetch(&fr, &st, &tok, &e) != TM_OK) {
    TM_CHECK(tm_buf_printf(tried, err, "; IMDS (%s): %s", base, e.message));
    goto done;
  }
  *reached = true;
  if (!ok_status(st) || tok.len == 0) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "IMDS at %s: token request: HTTP %ld", base, st);
    goto done;
  }
  for (size_t i = 0; i < tok.len; i++) /* it goes into a header line */
    if (tok.ptr[i] <= ' ' || tok.ptr[i] > '~') {
      rc = tm_error_set(err, TM_ECORRUPT, "IMDS at %s: the session token is not printable", base);
      goto done;
    }
  snprintf(hdr_token, sizeof hdr_token, "X-aws-ec2-metadata-token: %s", tm_buf_cstr(&tok));
  const char *h2[] = {hdr_token, NULL};
  snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/", base);
  fr = (tm_fetch_req){"GET", url, h2, NULL, 0, 2000, 1000};
  TM_CHECK(tm_fetch(&fr, &st, &role, err));
  TM_CHECK(tm_buf_putc(&role, '\0', err)); /* owned and writable, even when the body is empty */
  char *name = trim(role.ptr);
  name[strcspn(name, "\r\n")] = '\0';
  if (st == 404 || (ok_status(st) && !*name)) {
    rc = tm_error_set(err, TM_EINVALID, "IMDS at %s: this instance has no IAM role", base);
    goto done;
  }
  if (!ok_status(st)) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "IMDS at %s: role request: HTTP %ld", base, st);
    goto done;
  }
  for (const char *p = name; *p; p++)
    if (!(*p == '-' || *p == '_' || *p == '+' || *p == '=' || *p == ',' || *p == '.' ||
          *p == '@' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
          (*p >= 'A' && *p <= 'Z'))) {
      rc = tm_error_set(err, TM_ECORRUPT, "IMDS at %s: the role name is not an IAM name", base);
      goto done;
    }
  snprintf(url, sizeof url, "%s/latest/meta-data/iam/security-credentials/%.128s", base, name);
  fr = (tm_fetch_req){"GET", url, h2, NULL, 0, 2000, 1000};
  TM_CHECK(tm_fetch(&fr, &st, &body, err));
  if (!ok_status(st)) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "IMDS at %s: credentials request: HTTP %ld", base, st);
    goto done;
  }
  char from[600];
  snprintf(from, sizeof from, "IMDS at %s", base);
  TM_CHECK(from_json(out, &body, from, err));
  snprintf(out->source, sizeof out->source, "IMDS role %.40s", name);
done:
  memset(hdr_token, 0, sizeof hdr_token);
  if (tok.ptr) memset(tok.ptr, 0, tok.len);
  if (body.ptr) memset(body.ptr, 0, body.len);
  tm_buf_dispose(&tok);
  tm_buf_dispose(&role);
  tm_buf_dispose(&body);
  return rc;
}

/* ---- the chain ----------------------------------------------------------------------- */

int tm_aws_creds_resolve(tm_aws_creds *out, tm_error *err) {
  wipe(out);
  tm_buf tried = TM_BUF_INIT(8192);
  int rc = TM_OK;
  const char *k = env("AWS_ACCESS_KEY_ID"), *s = env("AWS_SECRET_ACCESS_KEY");
  if (k || s) {
    TM_CHECK(set_keys(out, k, s, env("AWS_SESSION_TOKEN"), "environment (AWS_ACCESS_KEY_ID)", err));
    snprintf(out->source, sizeof out->source, "environment");
    goto done;
  }
  TM_CHECK(tm_buf_puts(&tried, "environment: AWS_ACCESS_KEY_ID unset", err));
  bool answered;
  TM_CHECK(from_shared_files(out, &answered, &tried, err));
  if (answered) goto done;
  const char *wi = env("AWS_WEB_IDENTITY_TOKEN_FILE");
  if (wi) {
    rc = from_web_identity(out, wi, err);
    goto done;
  }
  TM_CHECK(tm_buf_puts(&tried, "; web identity: AWS_WEB_IDENTITY_TOKEN_FILE unset", err));
  const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  if (full || rel) {
    rc = from_container(out, full, rel, err);
    goto done;
  }
  TM_CHECK(tm_buf_puts(&tried, "; container: AWS_CONTAINER_CREDENTIALS_*_URI unset", err));
  const char *off = env("AWS_EC2_METADATA_DISABLED");
  if (off && strcmp(off, "true") == 0) {
    TM_CHECK(tm_buf_puts(&tried, "; IMDS: AWS_EC2_METADATA_DISABLED=true", err));
  } else {
    bool reached;
    TM_CHECK(from_imds(out, &reached, &tried, err));
    if (reached) goto done;
  }
  rc = tm_error_set(err, TM_EINVALID, "s3_auth: iam_role: no AWS credentials found (%s)",
                    tm_buf_cstr(&tried));
done:
  if (rc != TM_OK) wipe(out);
  tm_buf_dispose(&tried);
  return rc;
}

struct tm_aws_chain {
  pthread_mutex_t mu;
  bool have;
  tm_aws_creds creds;
};

int tm_aws_chain_new(tm_aws_chain **out, tm_error *err) {
  tm_aws_chain *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    tm_free(c);
    return tm_error_set(err, TM_ERROR, "aws credential chain: mutex init failed");
  }
  *out = c;
  return TM_OK;
}

static bool fresh(const tm_aws_creds *c, int64_t now, int64_t margin) {
  return c->expires_ms == 0 || now < c->expires_ms - margin;
}

int tm_aws_chain_get(tm_aws_chain *c, tm_aws_creds *out, tm_error *err) {
  int rc = TM_OK;
  pthread_mutex_lock(&c->mu);
  int64_t now = tm_now_ms();
  if (!c->have || !fresh(&c->creds, now, RENEW_BEFORE_MS)) {
    tm_aws_creds next;
    rc = tm_aws_creds_resolve(&next, err);
    if (rc == TM_OK) {
      c->creds = next;
      c->have = true;
    } else if (c->have && fresh(&c->creds, now, 0)) {
      rc = TM_OK; /* renewal failed; the old keys are still valid */
      if (err) tm_error_init(err);
    }
    wipe(&next);
  }
  if (rc == TM_OK) *out = c->creds;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void tm_aws_chain_free(tm_aws_chain *c) {
  if (!c) return;
  wipe(&c->creds);
  pthread_mutex_destroy(&c->mu);
  tm_free(c);
}
