/*
 * azure.c - the Azure Blob Storage object store: the objstore vtable over
 * the Blob service REST API (objstore layer, azure backend). See azure.h
 * for behaviour and errors, sharedkey.c for signing, azure_xml.c for
 * listings; requests, retries and the pool are the shared HTTP client's
 * (objstore/http.c).
 *
 *   stat    HEAD (Get Blob Properties; 404: absent); size from
 *           Content-Length, time from Last-Modified (whole seconds)
 *   list    List Blobs (restype=container&comp=list, flat, with prefix),
 *           following NextMarker; keys must carry the prefix and ascend
 *   get     GET with Range (none for a whole blob); 416 = past the end
 *   put     Put Blob (x-ms-blob-type: BlockBlob) up to single_put_max;
 *           larger bodies: Put Block of block_size each, then Put Block
 *           List, which commits them at once (readers see the old blob or
 *           the new one); If-None-Match: * for create-only puts (409 or
 *           412: TM_ECONFLICT)
 *   delete  DELETE (404 is fine)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/azure/azure_int.h"
#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define MAX_BLOCKS 50000 /* the service's limit of blocks in one blob */

void tm_azure_options_init(tm_azure_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_AZURE_OPTIONS_VERSION;
  tm_http_options h;
  tm_http_options_init(&h);
  o->max_retries = h.max_retries;
  o->retry_base_ms = h.retry_base_ms;
  o->retry_max_ms = h.retry_max_ms;
  o->backoff_factor = h.backoff_factor;
  o->retry_timeout_ms = h.retry_timeout_ms;
  o->connect_timeout_ms = h.connect_timeout_ms;
  o->stall_timeout_ms = h.stall_timeout_ms;
  o->max_idle_handles = h.max_idle_handles;
  o->single_put_max = (uint64_t)64 * 1024 * 1024;
  o->block_size = (uint64_t)64 * 1024 * 1024;
  o->list_page_size = 5000;
}

/* ---- requests ---- */

/* What a request adds to the shared tm_http_req. */
typedef struct az_req {
  tm_http_req http;
  const tm_azure_kv *query;      /* raw names and values */
  size_t n_query;
  const tm_azure_kv *ms_headers; /* extra x-ms-* headers (x-ms-blob-type) */
  size_t n_ms_headers;
} az_req;

static int az_prepare(tm_http_client *c, const tm_http_req *hreq, const tm_http_attempt *at,
                      tm_buf *url, struct curl_slist **hdrs, tm_error *err) {
  tm_azure_store *s = c->owner;
  const az_req *req = hreq->backend;
  tm_buf path = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_buf sts = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc;
  /* The encoded path: base (already a path) + /container[/key]. */
  TM_CHECK(tm_http__uri_encode(&path, s->base_path, strlen(s->base_path), true, err));
  TM_CHECK(tm_buf_putc(&path, '/', err));
  TM_CHECK(tm_buf_puts(&path, s->container, err));
  if (hreq->key) {
    TM_CHECK(tm_buf_putc(&path, '/', err));
    TM_CHECK(tm_http__uri_encode(&path, hreq->key, strlen(hreq->key), true, err));
  }
  TM_CHECK(tm_buf_printf(url, err, "%s://%s%s", s->https ? "https" : "http", s->authority,
                         tm_buf_cstr(&path)));
  char sep = '?';
  if (s->auth == TM_AZURE_AUTH_SAS) {
    TM_CHECK(tm_buf_printf(url, err, "?%s", s->secret));
    sep = '&';
  }
  for (size_t i = 0; i < req->n_query; i++) {
    TM_CHECK(tm_buf_printf(url, err, "%c%s=", sep, req->query[i].name));
    TM_CHECK(tm_http__uri_encode(url, req->query[i].value, strlen(req->query[i].value), false,
                                 err));
    sep = '&';
  }
  char date[30];
  tm_azure__http_date(date, tm_now_ms() / 1000);
  tm_azure_kv h[8];
  size_t nh = 0;
  h[nh++] = (tm_azure_kv){"x-ms-date", date};
  h[nh++] = (tm_azure_kv){"x-ms-version", TM_AZURE_API_VERSION};
  for (size_t i = 0; i < req->n_ms_headers && nh < 8; i++) h[nh++] = req->ms_headers[i];
  for (size_t i = 0; i < nh; i++)
    TM_CHECK(tm_http__add_header(hdrs, err, "%s: %s", h[i].name, h[i].value));
  if (at->range) TM_CHECK(tm_http__add_header(hdrs, err, "Range: %s", at->range));
  if (at->if_match) TM_CHECK(tm_http__add_header(hdrs, err, "If-Match: %s", at->if_match));
  if (hreq->if_none_match)
    TM_CHECK(tm_http__add_header(hdrs, err, "If-None-Match: %s", hreq->if_none_match));
  if (s->auth == TM_AZURE_AUTH_SHARED_KEY) {
    tm_azure_sign_req sr = {hreq->method, s->account, tm_buf_cstr(&path), req->query,
                            req->n_query, h, nh, hreq->upload ? hreq->upload_len : 0, NULL,
                            at->range, at->if_match, hreq->if_none_match};
    char sig[45];
    TM_CHECK(tm_azure__string_to_sign(&sts, &sr, err));
    TM_CHECK(tm_azure__signature(sig, s->secret, sts.ptr, sts.len, err));
    rc = tm_http__add_header(hdrs, err, "Authorization: SharedKey %s:%s", s->account, sig);
    memset(sig, 0, sizeof sig);
    TM_CHECK(rc);
  } else if (s->auth == TM_AZURE_AUTH_BEARER) {
    TM_CHECK(tm_http__add_header(hdrs, err, "Authorization: Bearer %s", s->secret));
  }
  rc = TM_OK;
done:
  tm_buf_dispose(&path);
  tm_buf_dispose(&sts);
  return rc;
}

static bool az_transient(long st, const char *code) {
  TM_UNUSED(code);
  return st == 408;
}

static const char *auth_hint(const tm_azure_store *s) {
  switch (s->auth) {
    case TM_AZURE_AUTH_SHARED_KEY: return "check abfs_account and abfs_access_key";
    case TM_AZURE_AUTH_SAS:
      return "check abfs_sas_string: its permissions (r, l, w, d), resource types, expiry and "
             "signature";
    case TM_AZURE_AUTH_BEARER: return "check abfs_bearer_token and its expiry";
    case TM_AZURE_AUTH_NONE: break;
  }
  return "no credentials were given (abfs_access_key, abfs_sas_string or abfs_bearer_token), "
         "and the container does not allow anonymous access";
}

static int az_fail(tm_http_client *c, const tm_http_req *req, const tm_http_failure *f,
                   tm_error *err) {
  tm_azure_store *s = c->owner;
  char obj[1200];
  tm_http__what(obj, sizeof obj, c, req);
  long st = f->status;
  if (st == 404) {
    if (strcmp(f->code, "ContainerNotFound") == 0 || !req->key)
      return tm_error_set(err, TM_ENOTFOUND, "abfs://%s: no such container at %s (%s)",
                          s->container, s->endpoint_desc, f->detail);
    return tm_error_set(err, TM_ENOTFOUND, "%s: no such blob (%s)", obj, f->detail);
  }
  if (st == 403 || st == 401)
    return tm_error_set(err, TM_EIO, "%s: access denied (%s); %s", obj, f->detail, auth_hint(s));
  if ((st == 409 || st == 412) && req->if_none_match)
    return tm_error_set(err, TM_ECONFLICT, "%s: blob already exists", obj);
  if (st == 412)
    return TM_CORRUPT(err, "%s: blob changed while it was being read (ETag no longer matches)",
                      obj);
  if (st == 301 || st == 307)
    return tm_error_set(err, TM_EINVALID, "%s: redirected (%s); check abfs_endpoint", obj,
                        f->detail);
  return tm_error_set(err, TM_EIO, "%s: %s", obj, f->detail);
}

static const tm_http_backend k_az_backend = {NULL, "x-ms-error-code", az_prepare, az_transient,
                                             az_fail};

static int perform(tm_azure_store *s, az_req *req, const long *ok, size_t n_ok,
                   tm_http_resp *resp, tm_error *err) {
  req->http.backend = req;
  return tm_http__perform(&s->http, &req->http, ok, n_ok, resp, err);
}

/* ---- the vtable ---- */

static int az_stat(tm_objstore *base, const char *key, tm_obj_stat *out, tm_error *err) {
  az_req req = {0};
  req.http.backend = &req;
  return tm_http__stat(&((tm_azure_store *)base)->http, &req.http, key, out, err);
}

typedef struct list_ctx {
  tm_azure_store *s;
  const char *prefix;
  tm_buf body; /* one page, capped at TM_XML_MAX */
} list_ctx;

/* One List Blobs page after marker (tm_http_page_fn). */
static int list_page(void *payload, const char *marker, tm_obj_list *items, char **next_out,
                     tm_error *err) {
  list_ctx *c = payload;
  char max[16];
  snprintf(max, sizeof max, "%d", c->s->opts.list_page_size);
  tm_azure_kv q[5];
  size_t nq = 0;
  q[nq++] = (tm_azure_kv){"restype", "container"};
  q[nq++] = (tm_azure_kv){"comp", "list"};
  q[nq++] = (tm_azure_kv){"maxresults", max};
  if (*c->prefix) q[nq++] = (tm_azure_kv){"prefix", c->prefix};
  if (marker) q[nq++] = (tm_azure_kv){"marker", marker};
  az_req req = {0};
  req.http.method = "GET";
  req.http.body_out = &c->body;
  req.query = q;
  req.n_query = nq;
  tm_http_resp resp;
  TM_TRY(perform(c->s, &req, NULL, 0, &resp, err));
  tm_azure_list_page page;
  tm_azure_list_page_init(&page);
  int rc = tm_azure__parse_list(&page, c->body.ptr ? c->body.ptr : "", c->body.len, err);
  if (rc < 0) {
    tm_error_prefix(err, "listing abfs://%s/%s", c->s->container, c->prefix);
  } else {
    *items = page.items;
    tm_obj_list_init(&page.items);
    *next_out = page.next_marker;
    page.next_marker = NULL;
  }
  tm_azure_list_page_dispose(&page);
  return rc;
}

static int az_list(tm_objstore *base, const char *prefix, tm_objstore_list_fn fn, void *payload,
                   tm_error *err) {
  list_ctx c = {(tm_azure_store *)base, prefix, TM_BUF_INIT(TM_XML_MAX)};
  int rc = tm_http__list_paged(base, prefix, list_page, &c, fn, payload, err);
  tm_buf_dispose(&c.body);
  return rc;
}

static int az_get(tm_objstore *base, const char *key, uint64_t off, uint64_t len,
                  tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  az_req req = {0};
  req.http.backend = &req;
  return tm_http__get(&((tm_azure_store *)base)->http, &req.http, key, off, len, sink, payload,
                      err);
}

static const tm_azure_kv k_block_blob[] = {{"x-ms-blob-type", "BlockBlob"}};

/* Block i's id: the base64 of a fixed-length name, as the service wants (all ids one length). */
static void block_id(char out[32], size_t i) {
  char raw[16];
  snprintf(raw, sizeof raw, "tmblk-%09zu", i); /* 15 bytes: 20 base64 characters, no '=' */
  tm_azure__base64_encode(out, (const uint8_t *)raw, 15);
}

/* Put Block for each block_size slice of body, then Put Block List. */
static int put_blocks(tm_azure_store *s, const char *key, tm_input *body, uint64_t size,
                      unsigned flags, tm_error *err) {
  uint64_t bs = s->opts.block_size;
  uint64_t n = (size + bs - 1) / bs;
  if (n > MAX_BLOCKS)
    return tm_error_set(err, TM_ETOOLARGE,
                        "abfs://%s/%s: %llu bytes would take more than %d blocks of %llu bytes",
                        s->container, key, (unsigned long long)size, MAX_BLOCKS,
                        (unsigned long long)bs);
  tm_buf list = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_input *list_in = NULL;
  int rc;
  TM_CHECK(tm_buf_puts(&list, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>", err));
  for (uint64_t i = 0; i < n; i++) {
    char id[32];
    block_id(id, (size_t)i);
    tm_azure_kv q[] = {{"comp", "block"}, {"blockid", id}};
    az_req req = {0};
    req.http.method = "PUT";
    req.http.key = key;
    req.http.upload = body;
    req.http.upload_off = i * bs;
    req.http.upload_len = i + 1 < n ? bs : size - i * bs;
    req.query = q;
    req.n_query = 2;
    tm_http_resp resp;
    TM_CHECK(perform(s, &req, NULL, 0, &resp, err));
    TM_CHECK(tm_buf_printf(&list, err, "<Latest>%s</Latest>", id));
  }
  TM_CHECK(tm_buf_puts(&list, "</BlockList>", err));
  TM_CHECK(tm_input_open_memory(&list_in, "block list", list.ptr, list.len, false, err));
  {
    tm_azure_kv q[] = {{"comp", "blocklist"}};
    az_req req = {0};
    req.http.method = "PUT";
    req.http.key = key;
    req.http.upload = list_in;
    req.http.upload_len = list.len;
    req.http.if_none_match = (flags & TM_OBJ_PUT_IF_ABSENT) ? "*" : NULL;
    req.query = q;
    req.n_query = 1;
    tm_http_resp resp;
    TM_CHECK(perform(s, &req, NULL, 0, &resp, err));
  }
  rc = TM_OK;
done:
  tm_input_close(list_in);
  tm_buf_dispose(&list);
  return rc;
}

static int az_put(tm_objstore *base, const char *key, tm_input *body, unsigned flags,
                  tm_error *err) {
  tm_azure_store *s = (tm_azure_store *)base;
  uint64_t size = 0;
  TM_TRY(tm_input_size(body, &size, err));
  if (size > s->opts.single_put_max) return put_blocks(s, key, body, size, flags, err);
  az_req req = {0};
  req.http.method = "PUT";
  req.http.key = key;
  req.http.upload = body;
  req.http.upload_len = size;
  req.http.if_none_match = (flags & TM_OBJ_PUT_IF_ABSENT) ? "*" : NULL;
  req.ms_headers = k_block_blob;
  req.n_ms_headers = 1;
  tm_http_resp resp;
  return perform(s, &req, NULL, 0, &resp, err);
}

static int az_del(tm_objstore *base, const char *key, tm_error *err) {
  az_req req = {0};
  req.http.backend = &req;
  return tm_http__delete(&((tm_azure_store *)base)->http, &req.http, key, err);
}

static void az_free(tm_objstore *base) {
  tm_azure_store *s = (tm_azure_store *)base;
  tm_http__client_dispose(&s->http);
  if (s->secret) memset(s->secret, 0, strlen(s->secret));
  tm_free(s->container);
  tm_free(s->account);
  tm_free(s->authority);
  tm_free(s->base_path);
  tm_free(s->endpoint_desc);
  tm_free(s->secret);
  tm_objstore__dispose(base);
  tm_free(s);
}

static const tm_objstore_vtable k_az_vt =
    TM_OBJSTORE_VTABLE_INIT("abfs", az_stat, az_list, az_get, az_put, az_del, NULL, az_free);

/* ---- creation ---- */

/* Container names: 3..63 of a-z 0-9 '-', starting with a letter or digit, no "--"; or $root. */
static bool valid_container(const char *c) {
  size_t n = strlen(c);
  if (strcmp(c, "$root") == 0) return true;
  if (n < 3 || n > 63 || c[0] == '-' || c[n - 1] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    bool ok = (c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '-';
    if (!ok || (c[i] == '-' && c[i + 1] == '-')) return false;
  }
  return true;
}

/* Account names: 3..24 of a-z 0-9. */
static bool valid_account(const char *a) {
  size_t n = strlen(a);
  if (n < 3 || n > 24) return false;
  for (size_t i = 0; i < n; i++)
    if (!((a[i] >= 'a' && a[i] <= 'z') || (a[i] >= '0' && a[i] <= '9'))) return false;
  return true;
}

static bool set(const char *s) { return s && *s; }

int tm_objstore_azure_new(tm_objstore **out, const tm_azure_options *o, tm_error *err) {
  if (!o || o->version != TM_AZURE_OPTIONS_VERSION)
    return tm_error_set(err, TM_EINVALID, "abfs store: options version mismatch");
  if (!o->container || !valid_container(o->container))
    return tm_error_set(err, TM_EINVALID,
                        "abfs store: invalid container name '%s' (3 to 63 lowercase letters, "
                        "digits and single hyphens)",
                        o->container ? o->container : "");
  if (set(o->account) && !valid_account(o->account))
    return tm_error_set(err, TM_EINVALID,
                        "abfs_account '%s' is not a storage account name (3 to 24 lowercase "
                        "letters and digits)",
                        o->account);
  int n_auth = set(o->access_key) + set(o->sas) + set(o->bearer_token);
  if (n_auth > 1)
    return tm_error_set(err, TM_EINVALID,
                        "abfs://%s: give one of abfs_access_key, abfs_sas_string and "
                        "abfs_bearer_token, not several",
                        o->container);
  if (set(o->access_key) && !set(o->account))
    return tm_error_set(err, TM_EINVALID,
                        "abfs://%s: abfs_access_key needs abfs_account (or a URL "
                        "abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/...)",
                        o->container);
  if (!set(o->endpoint) && !set(o->account))
    return tm_error_set(err, TM_EINVALID,
                        "abfs://%s: no storage account: set abfs_account, abfs_endpoint or "
                        "abfs_use_emulator, or write abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/",
                        o->container);
  if (o->list_page_size < 1 || o->list_page_size > 5000 || o->block_size == 0 ||
      o->block_size > (uint64_t)4000 * 1024 * 1024 || o->single_put_max > (uint64_t)5000 * 1024 * 1024)
    return tm_error_set(err, TM_EINVALID, "abfs store: invalid list or block sizes");
  const char *sas_query = NULL;
  if (set(o->sas)) TM_TRY(tm_azure__check_sas(o->sas, &sas_query, err));
  if (set(o->access_key)) {
    uint8_t key[256];
    size_t n = 0;
    bool ok = tm_azure__base64_decode(key, sizeof key, &n, o->access_key, strlen(o->access_key));
    memset(key, 0, sizeof key);
    if (!ok || n == 0)
      return tm_error_set(err, TM_EINVALID, "abfs_access_key is not a base64 account key");
  }
  bool https = true;
  char *authority = NULL, *basepath = NULL;
  if (set(o->endpoint)) {
    TM_TRY(tm_http__parse_endpoint(o->endpoint, "abfs_endpoint",
                                   "abfs_access_key or abfs_sas_string", o->allow_http, &https,
                                   &authority, &basepath, err));
  } else {
    authority = tm_asprintf("%s.blob.%s", o->account,
                            set(o->endpoint_suffix) ? o->endpoint_suffix : "core.windows.net");
    basepath = tm_strdup("");
    if (!authority || !basepath) {
      tm_free(authority);
      tm_free(basepath);
      return tm_error_nomem(err);
    }
  }
  tm_azure_store *s = tm_calloc(1, sizeof *s);
  char *name = tm_asprintf("abfs://%s", o->container);
  int rc = (!s || !name) ? tm_error_nomem(err) : tm_objstore__init(&s->base, &k_az_vt, name, err);
  tm_free(name);
  if (rc < 0) {
    tm_free(s);
    tm_free(authority);
    tm_free(basepath);
    return rc;
  }
  s->opts = *o;
  s->opts.container = s->opts.account = s->opts.endpoint = s->opts.endpoint_suffix = NULL;
  s->opts.access_key = s->opts.sas = s->opts.bearer_token = NULL;
  s->https = https;
  s->authority = authority;
  s->base_path = basepath;
  s->container = tm_strdup(o->container);
  s->account = set(o->account) ? tm_strdup(o->account) : NULL;
  s->endpoint_desc = tm_asprintf("%s://%s%s", https ? "https" : "http", authority, basepath);
  s->auth = set(o->access_key) ? TM_AZURE_AUTH_SHARED_KEY
            : sas_query        ? TM_AZURE_AUTH_SAS
            : set(o->bearer_token) ? TM_AZURE_AUTH_BEARER
                                   : TM_AZURE_AUTH_NONE;
  const char *secret = set(o->access_key) ? o->access_key : sas_query ? sas_query : o->bearer_token;
  s->secret = secret ? tm_strdup(secret) : NULL;
  if (!s->container || (set(o->account) && !s->account) || !s->endpoint_desc ||
      (secret && !s->secret)) {
    az_free(&s->base);
    return tm_error_nomem(err);
  }
  tm_http_options ho;
  tm_http_options_init(&ho);
  ho.max_retries = o->max_retries;
  ho.retry_base_ms = o->retry_base_ms;
  ho.retry_max_ms = o->retry_max_ms;
  ho.backoff_factor = o->backoff_factor;
  ho.retry_timeout_ms = o->retry_timeout_ms;
  ho.connect_timeout_ms = o->connect_timeout_ms;
  ho.stall_timeout_ms = o->stall_timeout_ms;
  ho.max_idle_handles = o->max_idle_handles;
  rc = tm_http__client_init(&s->http, &s->base, &k_az_backend, s, s->endpoint_desc, &ho, err);
  if (rc < 0) {
    az_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return TM_OK;
}
