/*
 * s3_xml.c - a small, bounded XML scanner for S3 responses (objstore layer,
 * s3 backend): ListObjectsV2 pages and error bodies. The bytes come from
 * the network and are treated as hostile; s3_int.h lists, rule by rule,
 * what the scanner accepts. There is no DTD, no entity expansion beyond the
 * predefined five and numeric references, and no allocation that the input
 * can grow without a limit.
 */
#include <string.h>

#include "objstore/s3/s3_int.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define DEPTH_MAX 16
#define NAME_MAX_LEN 64
#define KEY_MAX 1024

typedef struct xml_scan xml_scan;

/* Called when an element closes; text is its decoded text since its last child. */
typedef int (*close_fn)(xml_scan *x, const char *name, const char *text, size_t len,
                        tm_error *err);

struct xml_scan {
  const char *p, *end;
  char names[DEPTH_MAX][NAME_MAX_LEN + 1]; /* open elements, prefix-stripped */
  size_t depth;
  tm_buf text; /* decoded text of the innermost element, capped */
  bool root_seen;
  close_fn on_close;
  void *ctx;
};

static bool starts(const xml_scan *x, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(x->end - x->p) >= n && memcmp(x->p, lit, n) == 0;
}

/* Moves past the next occurrence of lit; TM_ECORRUPT when there is none. */
static int skip_past(xml_scan *x, const char *lit, const char *what, tm_error *err) {
  size_t n = strlen(lit);
  for (const char *q = x->p; (size_t)(x->end - q) >= n; q++) {
    if (memcmp(q, lit, n) == 0) {
      x->p = q + n;
      return TM_OK;
    }
  }
  return TM_CORRUPT(err, "S3 response: unterminated %s", what);
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static bool is_name_char(char c) {
  return !is_space(c) && c != '/' && c != '>' && c != '<' && c != '=' && c != '"' &&
         c != '\'' && c != '&';
}

static int add_text(xml_scan *x, const char *s, size_t n, tm_error *err) {
  if (n > TM_S3_XML_TEXT_MAX - x->text.len)
    return TM_CORRUPT(err, "S3 response: text of <%s> is longer than %u bytes",
                      x->depth ? x->names[x->depth - 1] : "?", TM_S3_XML_TEXT_MAX);
  return tm_buf_append(&x->text, s, n, err);
}

static int put_utf8(xml_scan *x, uint32_t cp, tm_error *err) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return add_text(x, u, n, err);
}

/* Decodes one reference at x->p ('&'), appending its character. */
static int entity(xml_scan *x, tm_error *err) {
  const char *semi = NULL;
  for (const char *q = x->p + 1; q < x->end && q - x->p <= 12; q++) {
    if (*q == ';') {
      semi = q;
      break;
    }
  }
  if (!semi) return TM_CORRUPT(err, "S3 response: unterminated '&' reference");
  const char *name = x->p + 1;
  size_t n = (size_t)(semi - name);
  x->p = semi + 1;
  static const struct {
    const char *name;
    char c;
  } k_named[] = {{"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
  for (size_t i = 0; i < sizeof k_named / sizeof k_named[0]; i++)
    if (strlen(k_named[i].name) == n && memcmp(name, k_named[i].name, n) == 0)
      return add_text(x, &k_named[i].c, 1, err);
  if (n >= 2 && name[0] == '#') {
    uint32_t cp = 0;
    bool hex = name[1] == 'x' || name[1] == 'X';
    size_t i = hex ? 2 : 1;
    if (i == n) return TM_CORRUPT(err, "S3 response: empty character reference");
    for (; i < n; i++) {
      char c = name[i];
      uint32_t d;
      if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
      else if (hex && c >= 'a' && c <= 'f') d = (uint32_t)(c - 'a' + 10);
      else if (hex && c >= 'A' && c <= 'F') d = (uint32_t)(c - 'A' + 10);
      else return TM_CORRUPT(err, "S3 response: bad character reference");
      cp = cp * (hex ? 16 : 10) + d;
      if (cp > 0x10FFFF) return TM_CORRUPT(err, "S3 response: character reference out of range");
    }
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
      return TM_CORRUPT(err, "S3 response: character reference to U+%04X", cp);
    return put_utf8(x, cp, err);
  }
  return TM_CORRUPT(err, "S3 response: unknown entity '&%.*s;'", (int)(n > 20 ? 20 : n), name);
}

/* Reads an element name at x->p into out (namespace prefix stripped). */
static int read_name(xml_scan *x, char out[NAME_MAX_LEN + 1], tm_error *err) {
  const char *s = x->p;
  while (x->p < x->end && is_name_char(*x->p)) x->p++;
  size_t n = (size_t)(x->p - s);
  if (n == 0) return TM_CORRUPT(err, "S3 response: missing element name");
  if (n > NAME_MAX_LEN) return TM_CORRUPT(err, "S3 response: element name longer than %d", NAME_MAX_LEN);
  const char *colon = memchr(s, ':', n);
  if (colon) {
    n -= (size_t)(colon + 1 - s);
    s = colon + 1;
    if (n == 0) return TM_CORRUPT(err, "S3 response: missing element name");
  }
  memcpy(out, s, n);
  out[n] = '\0';
  return TM_OK;
}

static void skip_space(xml_scan *x) {
  while (x->p < x->end && is_space(*x->p)) x->p++;
}

static int close_element(xml_scan *x, tm_error *err) {
  int rc = x->on_close(x, x->names[x->depth - 1], tm_buf_cstr(&x->text), x->text.len, err);
  x->depth--;
  tm_buf_clear(&x->text);
  return rc;
}

/* A start tag at x->p ('<' already checked, not "</" or "<!" or "<?"). */
static int start_tag(xml_scan *x, tm_error *err) {
  x->p++;
  if (x->depth == 0 && x->root_seen)
    return TM_CORRUPT(err, "S3 response: content after the root element");
  if (x->depth == DEPTH_MAX)
    return TM_CORRUPT(err, "S3 response: elements nested more than %d deep", DEPTH_MAX);
  TM_TRY(read_name(x, x->names[x->depth], err));
  /* Attributes: name = "value" pairs, skipped. */
  for (;;) {
    skip_space(x);
    if (x->p >= x->end) return TM_CORRUPT(err, "S3 response: unterminated start tag");
    if (*x->p == '>') {
      x->p++;
      x->depth++;
      x->root_seen = true;
      tm_buf_clear(&x->text);
      return TM_OK;
    }
    if (*x->p == '/') {
      if (x->end - x->p < 2 || x->p[1] != '>')
        return TM_CORRUPT(err, "S3 response: stray '/' in a start tag");
      x->p += 2;
      x->depth++;
      x->root_seen = true;
      tm_buf_clear(&x->text);
      return close_element(x, err);
    }
    char attr[NAME_MAX_LEN + 1];
    TM_TRY(read_name(x, attr, err));
    skip_space(x);
    if (x->p >= x->end || *x->p != '=') return TM_CORRUPT(err, "S3 response: attribute without value");
    x->p++;
    skip_space(x);
    if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
      return TM_CORRUPT(err, "S3 response: unquoted attribute value");
    char q = *x->p++;
    const char *close = memchr(x->p, q, (size_t)(x->end - x->p));
    if (!close) return TM_CORRUPT(err, "S3 response: unterminated attribute value");
    x->p = close + 1;
  }
}

static int end_tag(xml_scan *x, tm_error *err) {
  x->p += 2;
  char name[NAME_MAX_LEN + 1];
  TM_TRY(read_name(x, name, err));
  skip_space(x);
  if (x->p >= x->end || *x->p != '>') return TM_CORRUPT(err, "S3 response: unterminated end tag");
  x->p++;
  if (x->depth == 0) return TM_CORRUPT(err, "S3 response: </%s> without a start tag", name);
  if (strcmp(name, x->names[x->depth - 1]) != 0)
    return TM_CORRUPT(err, "S3 response: </%s> closes <%s>", name, x->names[x->depth - 1]);
  return close_element(x, err);
}

static int scan(xml_scan *x, tm_error *err) {
  while (x->p < x->end) {
    if (*x->p != '<') {
      if (x->depth == 0) {
        if (!is_space(*x->p)) return TM_CORRUPT(err, "S3 response: text outside the root element");
        x->p++;
      } else if (*x->p == '&') {
        TM_TRY(entity(x, err));
      } else {
        const char *s = x->p;
        while (x->p < x->end && *x->p != '<' && *x->p != '&') x->p++;
        TM_TRY(add_text(x, s, (size_t)(x->p - s), err));
      }
      continue;
    }
    if (starts(x, "<?")) {
      TM_TRY(skip_past(x, "?>", "processing instruction", err));
    } else if (starts(x, "<!--")) {
      TM_TRY(skip_past(x, "-->", "comment", err));
    } else if (starts(x, "<![CDATA[")) {
      if (x->depth == 0) return TM_CORRUPT(err, "S3 response: CDATA outside the root element");
      x->p += 9;
      const char *s = x->p;
      TM_TRY(skip_past(x, "]]>", "CDATA section", err));
      TM_TRY(add_text(x, s, (size_t)(x->p - 3 - s), err));
    } else if (starts(x, "<!")) {
      return TM_CORRUPT(err, "S3 response: DTDs and declarations are not accepted");
    } else if (starts(x, "</")) {
      TM_TRY(end_tag(x, err));
    } else {
      TM_TRY(start_tag(x, err));
    }
  }
  if (x->depth != 0) return TM_CORRUPT(err, "S3 response: <%s> is not closed", x->names[x->depth - 1]);
  if (!x->root_seen) return TM_CORRUPT(err, "S3 response: no XML element");
  return TM_OK;
}

static int run(const char *xml, size_t len, close_fn fn, void *ctx, tm_error *err) {
  if (len > TM_S3_XML_MAX)
    return TM_CORRUPT(err, "S3 response: %zu bytes of XML is over the limit of %u", len,
                      TM_S3_XML_MAX);
  xml_scan x;
  memset(&x, 0, sizeof x);
  x.p = xml;
  x.end = xml + len;
  tm_buf_init(&x.text, TM_S3_XML_TEXT_MAX);
  x.on_close = fn;
  x.ctx = ctx;
  int rc = scan(&x, err);
  tm_buf_dispose(&x.text);
  return rc;
}

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
  tm_obj_list *l = &c->page->items;
  if (l->len == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    tm_obj_info *items = tm_reallocarray(l->items, cap, sizeof *items);
    if (!items) return tm_error_nomem(err);
    l->items = items;
    l->cap = cap;
  }
  l->items[l->len].key = c->key;
  l->items[l->len].size = c->size;
  l->items[l->len].mtime_ms = c->mtime_ms;
  l->len++;
  c->key = NULL;
  return TM_OK;
}

static int list_close(xml_scan *x, const char *name, const char *text, size_t len,
                      tm_error *err) {
  list_ctx *c = x->ctx;
  const char *parent = x->depth >= 2 ? x->names[x->depth - 2] : "";
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
  int rc = run(xml, len, list_close, &c, err);
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

typedef struct error_ctx {
  char *code, *message, *region;
  size_t code_cap, message_cap, region_cap;
} error_ctx;

static void copy_field(char *dst, size_t cap, const char *text, size_t len) {
  if (cap == 0) return;
  tm_strview v = tm_sv_trim(tm_sv(text, len));
  size_t n = v.len < cap - 1 ? v.len : cap - 1;
  /* Messages end up in one-line errors: no control characters. */
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)v.ptr[i];
    dst[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
  }
  dst[n] = '\0';
}

static int error_close(xml_scan *x, const char *name, const char *text, size_t len,
                       tm_error *err) {
  TM_UNUSED(err);
  error_ctx *c = x->ctx;
  if (x->depth != 2 || strcmp(x->names[0], "Error") != 0) return TM_OK;
  if (strcmp(name, "Code") == 0) copy_field(c->code, c->code_cap, text, len);
  else if (strcmp(name, "Message") == 0) copy_field(c->message, c->message_cap, text, len);
  else if (strcmp(name, "Region") == 0) copy_field(c->region, c->region_cap, text, len);
  return TM_OK;
}

void tm_s3__parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                        size_t message_cap, char *region, size_t region_cap) {
  if (code_cap) code[0] = '\0';
  if (message_cap) message[0] = '\0';
  if (region_cap) region[0] = '\0';
  error_ctx c = {code, message, region, code_cap, message_cap, region_cap};
  tm_error ignored;
  (void)run(xml, len, error_close, &c, &ignored);
}
