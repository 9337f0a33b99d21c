/*
 * s3_xml.c - S3's XML documents (objstore layer, s3 backend): ListObjectsV2
 * pages and error bodies, read with the shared bounded scanner
 * (objstore/xml.c; xml_int.h lists what it accepts). The bytes come from
 * the network and are treated as hostile; s3_int.h lists what a listing
 * must hold.
 */
#include <string.h>

#include "objstore/s3/s3_int.h"
#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define KEY_MAX 1024

/* ---- ListObjectsV2 ---- */

void tm_s3_list_page_init(tm_s3_list_page *p) {
  memset(p, 0, sizeof *p);
  tm_obj_list_init(&p->items);
}

void tm_s3_list_page_dispose(tm_s3_list_page *p) {
  tm_obj_list_dispose(&p->items);
  tm_free(p->next_token);
  memset(p, 0, sizeof *p);
}

typedef struct list_ctx {
  tm_s3_list_page *page;
  char *key; /* owned: Key of the open <Contents> */
  uint64_t size;
  int64_t mtime_ms;
  bool has_size, has_mtime;
  bool url_encoded;
  bool root_ok;
} list_ctx;

static int push_item(list_ctx *c, tm_error *err) {
  TM_TRY(tm_obj_list__push(&c->page->items, c->key, c->size, c->mtime_ms, err));
  c->key = NULL;
  return TM_OK;
}

static int list_close(tm_xml_scan *x, const char *name, const char *text, size_t len,
                      tm_error *err) {
  list_ctx *c = x->ctx;
  const char *parent = tm_xml__parent(x);
  if (x->depth == 1) {
    if (strcmp(name, "ListBucketResult") != 0)
      return TM_CORRUPT(err, "S3 response: <%s> instead of <ListBucketResult>", name);
    c->root_ok = true;
    return TM_OK;
  }
  if (x->depth == 3 && strcmp(parent, "Contents") == 0) {
    if (strcmp(name, "Key") == 0) {
      if (c->key) return TM_CORRUPT(err, "S3 response: two <Key> in one <Contents>");
      if (len == 0) return TM_CORRUPT(err, "S3 response: empty <Key>");
      if (memchr(text, '\0', len)) return TM_CORRUPT(err, "S3 response: NUL in <Key>");
      c->key = tm_strndup(text, len);
      return c->key ? TM_OK : tm_error_nomem(err);
    }
    if (strcmp(name, "Size") == 0) {
      tm_strview v = tm_sv_trim(tm_sv(text, len));
      if (tm_parse_uint64(v.ptr, v.len, &c->size) != TM_OK)
        return TM_CORRUPT(err, "S3 response: <Size> '%.*s' is not a byte count",
                          (int)(v.len > 40 ? 40 : v.len), v.ptr);
      c->has_size = true;
      return TM_OK;
    }
    if (strcmp(name, "LastModified") == 0) {
      tm_strview v = tm_sv_trim(tm_sv(text, len));
      int64_t sec = 0;
      int32_t nsec = 0;
      bool zone = false;
      if (tm_time_parse(v.ptr, v.len, &sec, &nsec, &zone) != TM_OK ||
          sec > INT64_MAX / 1000 - 1 || sec < INT64_MIN / 1000 + 1)
        return TM_CORRUPT(err, "S3 response: <LastModified> '%.*s' is not a timestamp",
                          (int)(v.len > 40 ? 40 : v.len), v.ptr);
      c->mtime_ms = sec * 1000 + nsec / 1000000;
      c->has_mtime = true;
      return TM_OK;
    }
    return TM_OK;
  }
  if (x->depth == 2 && strcmp(name, "Contents") == 0) {
    if (!c->key || !c->has_size || !c->has_mtime)
      return TM_CORRUPT(err, "S3 response: <Contents> without %s",
                        !c->key ? "<Key>" : !c->has_size ? "<Size>" : "<LastModified>");
    TM_TRY(push_item(c, err));
    c->has_size = c->has_mtime = false;
    return TM_OK;
  }
  if (x->depth == 2) {
    tm_strview v = tm_sv_trim(tm_sv(text, len));
    if (strcmp(name, "IsTruncated") == 0) {
      if (tm_sv_eq_cstr(v, "true")) c->page->truncated = true;
      else if (tm_sv_eq_cstr(v, "false")) c->page->truncated = false;
      else return TM_CORRUPT(err, "S3 response: <IsTruncated> is neither true nor false");
    } else if (strcmp(name, "NextContinuationToken") == 0) {
      tm_free(c->page->next_token);
      c->page->next_token = tm_strndup(v.ptr, v.len);
      if (!c->page->next_token) return tm_error_nomem(err);
    } else if (strcmp(name, "EncodingType") == 0) {
      c->url_encoded = tm_sv_eq_cstr(v, "url");
    }
  }
  return TM_OK;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* URL-decodes s in place ("%2F" and '+' for space, as S3 encodes keys). */
static int url_decode(char *s, tm_error *err) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (*r == '+') {
      *w++ = ' ';
    } else if (*r == '%') {
      int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
      if (hi < 0 || lo < 0) return TM_CORRUPT(err, "S3 response: bad %%-escape in a key");
      if (hi == 0 && lo == 0) return TM_CORRUPT(err, "S3 response: NUL in a key");
      *w++ = (char)(hi * 16 + lo);
      r += 2;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
  return TM_OK;
}

int tm_s3__parse_list(tm_s3_list_page *out, const char *xml, size_t len, tm_error *err) {
  list_ctx c;
  memset(&c, 0, sizeof c);
  c.page = out;
  int rc = tm_xml__scan("S3 response", xml, len, list_close, NULL, &c, err);
  tm_free(c.key);
  if (rc < 0) return rc;
  if (!c.root_ok) return TM_CORRUPT(err, "S3 response: no <ListBucketResult>");
  if (out->truncated && (!out->next_token || !*out->next_token))
    return TM_CORRUPT(err, "S3 response: a truncated listing without NextContinuationToken");
  for (size_t i = 0; i < out->items.len; i++) {
    char *key = (char *)out->items.items[i].key;
    if (c.url_encoded) TM_TRY(url_decode(key, err));
    size_t n = strlen(key);
    if (n == 0 || n > KEY_MAX)
      return TM_CORRUPT(err, "S3 response: a key of %zu bytes", n);
  }
  return TM_OK;
}

/* ---- error bodies ---- */

void tm_s3__parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                        size_t message_cap, char *region, size_t region_cap) {
  tm_xml_field f[] = {{"Code", code, code_cap}, {"Message", message, message_cap},
                      {"Region", region, region_cap}};
  tm_xml__pick(xml, len, "Error", f, 3);
}
