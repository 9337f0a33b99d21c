/*
 * azure_xml.c - the Blob service's XML documents (objstore layer, azure
 * backend): List Blobs results and error bodies, read with the shared
 * bounded scanner (objstore/xml.c). The bytes come from the network and are
 * hostile; azure_int.h lists what a page must hold.
 */
#include <string.h>

#include "objstore/azure/azure_int.h"
#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/str.h"

#define KEY_MAX 1024
#define LABEL "Azure response"

void tm_azure_list_page_init(tm_azure_list_page *p) {
  memset(p, 0, sizeof *p);
  tm_obj_list_init(&p->items);
}

void tm_azure_list_page_dispose(tm_azure_list_page *p) {
  tm_obj_list_dispose(&p->items);
  tm_free(p->next_marker);
  memset(p, 0, sizeof *p);
}

typedef struct list_ctx {
  tm_azure_list_page *page;
  char *name; /* owned: Name of the open <Blob> */
  bool name_encoded;   /* the open <Name> carries Encoded="true" */
  bool blob_encoded;   /* the <Name> of the open <Blob> did */
  uint64_t size;
  int64_t mtime_ms;
  bool has_size, has_mtime, is_dir;
  bool root_ok;
} list_ctx;

static bool in_blob(const tm_xml_scan *x, size_t depth) {
  /* EnumerationResults > Blobs > Blob at depths 1, 2, 3. */
  return x->depth == depth && strcmp(x->names[1], "Blobs") == 0 &&
         strcmp(x->names[2], "Blob") == 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decodes s in place (Encoded="true" names). */
static int percent_decode(char *s, tm_error *err) {
  char *w = s;
  for (const char *r = s; *r; r++) {
    if (*r == '%') {
      int hi = hexval(r[1]), lo = hi < 0 ? -1 : hexval(r[2]);
      if (hi < 0 || lo < 0) return TM_CORRUPT(err, LABEL ": bad %%-escape in a blob name");
      if (hi == 0 && lo == 0) return TM_CORRUPT(err, LABEL ": NUL in a blob name");
      *w++ = (char)(hi * 16 + lo);
      r += 2;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
  return TM_OK;
}

static int push_item(list_ctx *c, tm_error *err) {
  TM_TRY(tm_obj_list__push(&c->page->items, c->name, c->size, c->mtime_ms, err));
  c->name = NULL;
  return TM_OK;
}

static int list_attr(tm_xml_scan *x, const char *name, const char *value, size_t len,
                     tm_error *err) {
  TM_UNUSED(err);
  list_ctx *c = x->ctx;
  if (in_blob(x, 4) && strcmp(x->names[3], "Name") == 0 && strcmp(name, "Encoded") == 0)
    c->name_encoded = len == 4 && memcmp(value, "true", 4) == 0;
  return TM_OK;
}

static int property(list_ctx *c, const char *name, const char *text, size_t len, tm_error *err) {
  tm_strview v = tm_sv_trim(tm_sv(text, len));
  int shown = (int)(v.len > 40 ? 40 : v.len);
  if (strcmp(name, "Content-Length") == 0) {
    if (c->has_size) return TM_CORRUPT(err, LABEL ": two <Content-Length> in one <Blob>");
    if (v.len == 0 || v.len > 20 || tm_parse_uint64(v.ptr, v.len, &c->size) != TM_OK)
      return TM_CORRUPT(err, LABEL ": <Content-Length> '%.*s' is not a byte count", shown, v.ptr);
    c->has_size = true;
  } else if (strcmp(name, "Last-Modified") == 0) {
    int64_t sec = 0;
    if (c->has_mtime) return TM_CORRUPT(err, LABEL ": two <Last-Modified> in one <Blob>");
    if (!tm_azure__parse_http_date(v.ptr, v.len, &sec))
      return TM_CORRUPT(err, LABEL ": <Last-Modified> '%.*s' is not an RFC 1123 date", shown,
                        v.ptr);
    c->mtime_ms = sec * 1000;
    c->has_mtime = true;
  } else if (strcmp(name, "ResourceType") == 0) {
    c->is_dir = tm_sv_eq_cstr(v, "directory");
  }
  return TM_OK;
}

static int list_close(tm_xml_scan *x, const char *name, const char *text, size_t len,
                      tm_error *err) {
  list_ctx *c = x->ctx;
  if (x->depth == 1) {
    if (strcmp(name, "EnumerationResults") != 0)
      return TM_CORRUPT(err, LABEL ": <%s> instead of <EnumerationResults>", name);
    c->root_ok = true;
    return TM_OK;
  }
  if (in_blob(x, 5) && strcmp(x->names[3], "Properties") == 0)
    return property(c, name, text, len, err);
  if (in_blob(x, 4) && strcmp(name, "Name") == 0) {
    if (c->name) return TM_CORRUPT(err, LABEL ": two <Name> in one <Blob>");
    if (len == 0) return TM_CORRUPT(err, LABEL ": empty <Name>");
    if (memchr(text, '\0', len)) return TM_CORRUPT(err, LABEL ": NUL in <Name>");
    c->name = tm_strndup(text, len);
    if (!c->name) return tm_error_nomem(err);
    c->blob_encoded = c->name_encoded;
    c->name_encoded = false;
    if (c->blob_encoded) TM_TRY(percent_decode(c->name, err));
    size_t n = strlen(c->name);
    if (n == 0 || n > KEY_MAX) return TM_CORRUPT(err, LABEL ": a blob name of %zu bytes", n);
    return TM_OK;
  }
  if (in_blob(x, 3)) {
    if (!c->name || !c->has_size || !c->has_mtime)
      return TM_CORRUPT(err, LABEL ": <Blob> without %s",
                        !c->name ? "<Name>" : !c->has_size ? "<Content-Length>" : "<Last-Modified>");
    if (c->is_dir) {
      tm_free(c->name); /* an ADLS Gen2 folder, not an object */
      c->name = NULL;
    } else {
      TM_TRY(push_item(c, err));
    }
    c->has_size = c->has_mtime = c->is_dir = false;
    return TM_OK;
  }
  if (x->depth == 2 && strcmp(name, "NextMarker") == 0) {
    tm_strview v = tm_sv_trim(tm_sv(text, len));
    if (memchr(v.ptr, '\0', v.len)) return TM_CORRUPT(err, LABEL ": NUL in <NextMarker>");
    tm_free(c->page->next_marker);
    c->page->next_marker = v.len ? tm_strndup(v.ptr, v.len) : NULL;
    if (v.len && !c->page->next_marker) return tm_error_nomem(err);
  }
  return TM_OK;
}

int tm_azure__parse_list(tm_azure_list_page *out, const char *xml, size_t len, tm_error *err) {
  list_ctx c;
  memset(&c, 0, sizeof c);
  c.page = out;
  int rc = tm_xml__scan(LABEL, xml, len, list_close, list_attr, &c, err);
  tm_free(c.name);
  if (rc < 0) return rc;
  if (!c.root_ok) return TM_CORRUPT(err, LABEL ": no <EnumerationResults>");
  return TM_OK;
}

void tm_azure__parse_error(const char *xml, size_t len, char *code, size_t code_cap,
                           char *message, size_t message_cap) {
  tm_xml_field f[] = {{"Code", code, code_cap}, {"Message", message, message_cap}};
  tm_xml__pick(xml, len, "Error", f, 2);
}
