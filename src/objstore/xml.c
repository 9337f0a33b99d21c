/*
 * xml.c - the bounded XML scanner shared by the object-store backends
 * (objstore layer): S3 and Azure listings and error bodies. The bytes come
 * from the network and are treated as hostile; xml_int.h lists, rule by
 * rule, what the scanner accepts. There is no DTD, no entity expansion
 * beyond the predefined five and numeric references, and no allocation
 * that the input can grow without a limit.
 */
#include <string.h>

#include "objstore/xml_int.h"
#include "util/alloc.h"
#include "util/str.h"

static bool starts(const tm_xml_scan *x, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)(x->end - x->p) >= n && memcmp(x->p, lit, n) == 0;
}

/* Moves past the next occurrence of lit; TM_ECORRUPT when there is none. */
static int skip_past(tm_xml_scan *x, const char *lit, const char *what, tm_error *err) {
  size_t n = strlen(lit);
  for (const char *q = x->p; (size_t)(x->end - q) >= n; q++) {
    if (memcmp(q, lit, n) == 0) {
      x->p = q + n;
      return TM_OK;
    }
  }
  return TM_CORRUPT(err, "%s: unterminated %s", x->label, what);
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static bool is_name_char(char c) {
  return !is_space(c) && c != '/' && c != '>' && c != '<' && c != '=' && c != '"' &&
         c != '\'' && c != '&';
}

static int add_text(tm_xml_scan *x, const char *s, size_t n, tm_error *err) {
  if (n > TM_XML_TEXT_MAX - x->text.len)
    return TM_CORRUPT(err, "%s: text of <%s> is longer than %u bytes", x->label,
                      x->depth ? x->names[x->depth - 1] : "?", TM_XML_TEXT_MAX);
  return tm_buf_append(&x->text, s, n, err);
}

static int put_utf8(tm_xml_scan *x, uint32_t cp, tm_error *err) {
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
static int entity(tm_xml_scan *x, tm_error *err) {
  const char *semi = NULL;
  for (const char *q = x->p + 1; q < x->end && q - x->p <= 12; q++) {
    if (*q == ';') {
      semi = q;
      break;
    }
  }
  if (!semi) return TM_CORRUPT(err, "%s: unterminated '&' reference", x->label);
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
    if (i == n) return TM_CORRUPT(err, "%s: empty character reference", x->label);
    for (; i < n; i++) {
      char c = name[i];
      uint32_t d;
      if (c >= '0' && c <= '9') d = (uint32_t)(c - '0');
      else if (hex && c >= 'a' && c <= 'f') d = (uint32_t)(c - 'a' + 10);
      else if (hex && c >= 'A' && c <= 'F') d = (uint32_t)(c - 'A' + 10);
      else return TM_CORRUPT(err, "%s: bad character reference", x->label);
      cp = cp * (hex ? 16 : 10) + d;
      if (cp > 0x10FFFF) return TM_CORRUPT(err, "%s: character reference out of range", x->label);
    }
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
      return TM_CORRUPT(err, "%s: character reference to U+%04X", x->label, cp);
    return put_utf8(x, cp, err);
  }
  return TM_CORRUPT(err, "%s: unknown entity '&%.*s;'", x->label, (int)(n > 20 ? 20 : n), name);
}

/* Reads an element name at x->p into out (namespace prefix stripped). */
static int read_name(tm_xml_scan *x, char out[TM_XML_NAME_MAX + 1], tm_error *err) {
  const char *s = x->p;
  while (x->p < x->end && is_name_char(*x->p)) x->p++;
  size_t n = (size_t)(x->p - s);
  if (n == 0) return TM_CORRUPT(err, "%s: missing element name", x->label);
  if (n > TM_XML_NAME_MAX)
    return TM_CORRUPT(err, "%s: element name longer than %d", x->label, TM_XML_NAME_MAX);
  const char *colon = memchr(s, ':', n);
  if (colon) {
    n -= (size_t)(colon + 1 - s);
    s = colon + 1;
    if (n == 0) return TM_CORRUPT(err, "%s: missing element name", x->label);
  }
  memcpy(out, s, n);
  out[n] = '\0';
  return TM_OK;
}

static void skip_space(tm_xml_scan *x) {
  while (x->p < x->end && is_space(*x->p)) x->p++;
}

static int close_element(tm_xml_scan *x, tm_error *err) {
  int rc = x->on_close(x, x->names[x->depth - 1], tm_buf_cstr(&x->text), x->text.len, err);
  x->depth--;
  tm_buf_clear(&x->text);
  return rc;
}

/* A start tag at x->p ('<' already checked, not "</" or "<!" or "<?"). */
static int start_tag(tm_xml_scan *x, tm_error *err) {
  x->p++;
  if (x->depth == 0 && x->root_seen)
    return TM_CORRUPT(err, "%s: content after the root element", x->label);
  if (x->depth == TM_XML_DEPTH_MAX)
    return TM_CORRUPT(err, "%s: elements nested more than %d deep", x->label, TM_XML_DEPTH_MAX);
  TM_TRY(read_name(x, x->names[x->depth], err));
  x->depth++; /* open now, so that on_attr sees the element; undone on errors */
  x->root_seen = true;
  tm_buf_clear(&x->text);
  for (;;) {
    skip_space(x);
    if (x->p >= x->end) return TM_CORRUPT(err, "%s: unterminated start tag", x->label);
    if (*x->p == '>') {
      x->p++;
      return TM_OK;
    }
    if (*x->p == '/') {
      if (x->end - x->p < 2 || x->p[1] != '>')
        return TM_CORRUPT(err, "%s: stray '/' in a start tag", x->label);
      x->p += 2;
      return close_element(x, err);
    }
    char attr[TM_XML_NAME_MAX + 1];
    TM_TRY(read_name(x, attr, err));
    skip_space(x);
    if (x->p >= x->end || *x->p != '=')
      return TM_CORRUPT(err, "%s: attribute without value", x->label);
    x->p++;
    skip_space(x);
    if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
      return TM_CORRUPT(err, "%s: unquoted attribute value", x->label);
    char q = *x->p++;
    const char *close = memchr(x->p, q, (size_t)(x->end - x->p));
    if (!close) return TM_CORRUPT(err, "%s: unterminated attribute value", x->label);
    if (x->on_attr) TM_TRY(x->on_attr(x, attr, x->p, (size_t)(close - x->p), err));
    x->p = close + 1;
  }
}

static int end_tag(tm_xml_scan *x, tm_error *err) {
  x->p += 2;
  char name[TM_XML_NAME_MAX + 1];
  TM_TRY(read_name(x, name, err));
  skip_space(x);
  if (x->p >= x->end || *x->p != '>') return TM_CORRUPT(err, "%s: unterminated end tag", x->label);
  x->p++;
  if (x->depth == 0) return TM_CORRUPT(err, "%s: </%s> without a start tag", x->label, name);
  if (strcmp(name, x->names[x->depth - 1]) != 0)
    return TM_CORRUPT(err, "%s: </%s> closes <%s>", x->label, name, x->names[x->depth - 1]);
  return close_element(x, err);
}

static int scan(tm_xml_scan *x, tm_error *err) {
  while (x->p < x->end) {
    if (*x->p != '<') {
      if (x->depth == 0) {
        if (!is_space(*x->p)) return TM_CORRUPT(err, "%s: text outside the root element", x->label);
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
      if (x->depth == 0) return TM_CORRUPT(err, "%s: CDATA outside the root element", x->label);
      x->p += 9;
      const char *s = x->p;
      TM_TRY(skip_past(x, "]]>", "CDATA section", err));
      TM_TRY(add_text(x, s, (size_t)(x->p - 3 - s), err));
    } else if (starts(x, "<!")) {
      return TM_CORRUPT(err, "%s: DTDs and declarations are not accepted", x->label);
    } else if (starts(x, "</")) {
      TM_TRY(end_tag(x, err));
    } else {
      TM_TRY(start_tag(x, err));
    }
  }
  if (x->depth != 0)
    return TM_CORRUPT(err, "%s: <%s> is not closed", x->label, x->names[x->depth - 1]);
  if (!x->root_seen) return TM_CORRUPT(err, "%s: no XML element", x->label);
  return TM_OK;
}

int tm_xml__scan(const char *label, const char *xml, size_t len, tm_xml_close_fn on_close,
                 tm_xml_attr_fn on_attr, void *ctx, tm_error *err) {
  if (len > TM_XML_MAX)
    return TM_CORRUPT(err, "%s: %zu bytes of XML is over the limit of %u", label, len,
                      TM_XML_MAX);
  tm_xml_scan *x = tm_calloc(1, sizeof *x);
  if (!x) return tm_error_nomem(err);
  x->label = label;
  x->p = xml;
  x->end = xml + len;
  tm_buf_init(&x->text, TM_XML_TEXT_MAX);
  x->on_close = on_close;
  x->on_attr = on_attr;
  x->ctx = ctx;
  int rc = scan(x, err);
  tm_buf_dispose(&x->text);
  tm_free(x);
  return rc;
}

const char *tm_xml__parent(const tm_xml_scan *x) {
  return x->depth >= 2 ? x->names[x->depth - 2] : "";
}

/* ---- picking fields out of error bodies ---- */

typedef struct pick_ctx {
  const char *root;
  tm_xml_field *fields;
  size_t n;
} pick_ctx;

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

static int pick_close(tm_xml_scan *x, const char *name, const char *text, size_t len,
                      tm_error *err) {
  TM_UNUSED(err);
  pick_ctx *c = x->ctx;
  if (x->depth != 2 || strcmp(x->names[0], c->root) != 0) return TM_OK;
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(name, c->fields[i].name) == 0)
      copy_field(c->fields[i].out, c->fields[i].cap, text, len);
  return TM_OK;
}

void tm_xml__pick(const char *xml, size_t len, const char *root, tm_xml_field *fields,
                  size_t n_fields) {
  for (size_t i = 0; i < n_fields; i++)
    if (fields[i].cap) fields[i].out[0] = '\0';
  pick_ctx c = {root, fields, n_fields};
  tm_error ignored;
  int rc = tm_xml__scan("response", xml, len, pick_close, NULL, &c, &ignored);
  TM_UNUSED(rc); /* what was found before a malformed part is kept */
}
