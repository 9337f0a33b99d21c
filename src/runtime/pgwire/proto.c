/*
 * proto.c - PostgreSQL protocol 3.0 messages as bytes (runtime layer, pgwire;
 * see proto.h). Every read is bounds-checked against the body; a field that
 * does not fit is TM_ECORRUPT naming it.
 */
#include <string.h>

#include "runtime/pgwire/proto.h"
#include "util/alloc.h"

static int bad(tm_error *err, const char *what) {
  return tm_error_set(err, TM_ECORRUPT, "malformed message: %s", what);
}

static bool get_u8(tm_pg_cursor *c, uint8_t *out) {
  if (c->n - c->off < 1) return false;
  *out = c->p[c->off++];
  return true;
}

static bool get_i16(tm_pg_cursor *c, int16_t *out) {
  if (c->n - c->off < 2) return false;
  *out = (int16_t)(((unsigned)c->p[c->off] << 8) | c->p[c->off + 1]);
  c->off += 2;
  return true;
}

static bool get_u32(tm_pg_cursor *c, uint32_t *out) {
  if (c->n - c->off < 4) return false;
  const uint8_t *p = c->p + c->off;
  *out = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
  c->off += 4;
  return true;
}

/* A NUL-terminated string inside the body. */
static bool get_str(tm_pg_cursor *c, const char **out) {
  const uint8_t *start = c->p + c->off;
  const uint8_t *nul = memchr(start, 0, c->n - c->off);
  if (!nul) return false;
  *out = (const char *)start;
  c->off += (size_t)(nul - start) + 1;
  return true;
}

/* n items of size w: a view, bounds-checked. */
static bool get_array(tm_pg_cursor *c, size_t n, size_t w, const uint8_t **out) {
  if (n > (c->n - c->off) / w) return false;
  *out = c->p + c->off;
  c->off += n * w;
  return true;
}

static bool at_end(const tm_pg_cursor *c) { return c->off == c->n; }

int16_t tm_pg_i16_at(const uint8_t *a, size_t i) {
  return (int16_t)(((unsigned)a[2 * i] << 8) | a[2 * i + 1]);
}

uint32_t tm_pg_u32_at(const uint8_t *a, size_t i) {
  const uint8_t *p = a + 4 * i;
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

int tm_pg_startup_parse(const uint8_t *body, size_t n, tm_pg_startup *out, tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  tm_pg_startup s;
  memset(&s, 0, sizeof s);
  if (!get_u32(&c, &s.code)) return bad(err, "startup packet shorter than its code");
  if (s.code == TM_PG_CODE_SSL || s.code == TM_PG_CODE_GSSENC) {
    if (!at_end(&c)) return bad(err, "SSLRequest/GSSENCRequest with a body");
  } else if (s.code == TM_PG_CODE_CANCEL) {
    if (!get_u32(&c, &s.cancel_pid) || !get_u32(&c, &s.cancel_key) || !at_end(&c))
      return bad(err, "CancelRequest is not 16 bytes");
  } else if (s.code >> 16 != 3) {
    return tm_error_set(err, TM_EUNSUPPORTED, "unsupported frontend protocol %u.%u: the server "
                        "speaks 3.0", s.code >> 16, s.code & 0xffff);
  } else {
    /* 3.x: name/value pairs up to an empty name. A minor version above 0 is answered as 3.0. */
    for (;;) {
      const char *k, *v;
      if (!get_str(&c, &k)) return bad(err, "startup parameter name not terminated");
      if (!*k) break;
      if (!get_str(&c, &v)) return bad(err, "startup parameter value not terminated");
      if (!strcmp(k, "user")) s.user = v;
      else if (!strcmp(k, "database")) s.database = v;
      else if (!strcmp(k, "application_name")) s.application_name = v;
      else if (!strcmp(k, "client_encoding")) s.client_encoding = v;
      else if (!strcmp(k, "options")) s.options = v;
    }
    if (!at_end(&c)) return bad(err, "bytes after the startup parameters");
    if (!s.user || !*s.user) return tm_error_set(err, TM_EINVALID, "no user name in the startup packet");
  }
  *out = s;
  return TM_OK;
}

int tm_pg_parse_parse(const uint8_t *body, size_t n, tm_pg_parse *out, tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  tm_pg_parse p;
  memset(&p, 0, sizeof p);
  int16_t nt;
  if (!get_str(&c, &p.name) || !get_str(&c, &p.query)) return bad(err, "Parse: strings");
  if (!get_i16(&c, &nt) || nt < 0) return bad(err, "Parse: parameter type count");
  p.n_types = (size_t)nt;
  if (!get_array(&c, p.n_types, 4, &p.types) || !at_end(&c)) return bad(err, "Parse: parameter types");
  *out = p;
  return TM_OK;
}

int tm_pg_parse_bind(const uint8_t *body, size_t n, tm_pg_bind *out, tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  tm_pg_bind b;
  memset(&b, 0, sizeof b);
  int16_t k;
  if (!get_str(&c, &b.portal) || !get_str(&c, &b.stmt)) return bad(err, "Bind: names");
  if (!get_i16(&c, &k) || k < 0) return bad(err, "Bind: format count");
  b.n_formats = (size_t)k;
  if (!get_array(&c, b.n_formats, 2, &b.formats)) return bad(err, "Bind: formats");
  if (!get_i16(&c, &k) || k < 0) return bad(err, "Bind: value count");
  b.n_values = (size_t)k;
  if (b.n_formats > 1 && b.n_formats != b.n_values)
    return bad(err, "Bind: format count is neither 0, 1 nor the value count");
  /* Each value takes at least its 4-byte length: a count the body cannot hold is refused
   * before anything is allocated. */
  if (b.n_values > (c.n - c.off) / 4) return bad(err, "Bind: more values than bytes");
  if (b.n_values && !(b.values = tm_calloc(b.n_values, sizeof *b.values))) return tm_error_nomem(err);
  for (size_t i = 0; i < b.n_values; i++) {
    uint32_t len;
    if (!get_u32(&c, &len)) goto fail;
    b.values[i].len = (int32_t)len;
    if (b.values[i].len < -1) goto fail;
    if (b.values[i].len >= 0 && !get_array(&c, (size_t)b.values[i].len, 1, &b.values[i].ptr))
      goto fail;
  }
  if (!get_i16(&c, &k) || k < 0) {
    tm_free(b.values);
    return bad(err, "Bind: result format count");
  }
  b.n_rformats = (size_t)k;
  if (!get_array(&c, b.n_rformats, 2, &b.rformats) || !at_end(&c)) {
    tm_free(b.values);
    return bad(err, "Bind: result formats");
  }
  *out = b;
  return TM_OK;
fail:
  tm_free(b.values);
  return bad(err, "Bind: a value's length");
}

int tm_pg_parse_target(const uint8_t *body, size_t n, char *kind, const char **name,
                       tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  uint8_t k;
  if (!get_u8(&c, &k) || (k != 'S' && k != 'P')) return bad(err, "Describe/Close: kind");
  if (!get_str(&c, name) || !at_end(&c)) return bad(err, "Describe/Close: name");
  *kind = (char)k;
  return TM_OK;
}

int tm_pg_parse_execute(const uint8_t *body, size_t n, const char **portal, uint32_t *max_rows,
                        tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  if (!get_str(&c, portal) || !get_u32(&c, max_rows) || !at_end(&c)) return bad(err, "Execute");
  return TM_OK;
}

int tm_pg_parse_query(const uint8_t *body, size_t n, const char **sql, tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  if (!get_str(&c, sql) || !at_end(&c)) return bad(err, "Query: not one string");
  return TM_OK;
}

int tm_pg_parse_sasl_initial(const uint8_t *body, size_t n, const char **mechanism,
                             const uint8_t **data, int32_t *len, tm_error *err) {
  tm_pg_cursor c = {body, n, 0};
  uint32_t l;
  if (!get_str(&c, mechanism) || !get_u32(&c, &l)) return bad(err, "SASLInitialResponse");
  *len = (int32_t)l;
  *data = NULL;
  if (*len < -1) return bad(err, "SASLInitialResponse: length");
  if (*len >= 0 && !get_array(&c, (size_t)*len, 1, data)) return bad(err, "SASLInitialResponse: data");
  if (!at_end(&c)) return bad(err, "SASLInitialResponse: trailing bytes");
  return TM_OK;
}

/* ---- the writer ------------------------------------------------------------------------------ */

int tm_pg_begin(tm_buf *b, char type, size_t *mark, tm_error *err) {
  TM_TRY(tm_buf_putc(b, type, err));
  *mark = b->len;
  return tm_buf_append(b, "\0\0\0\0", 4, err);
}

void tm_pg_end(tm_buf *b, size_t mark) {
  uint32_t len = (uint32_t)(b->len - mark);
  uint8_t *p = (uint8_t *)b->ptr + mark;
  p[0] = (uint8_t)(len >> 24);
  p[1] = (uint8_t)(len >> 16);
  p[2] = (uint8_t)(len >> 8);
  p[3] = (uint8_t)len;
}

int tm_pg_put_i16(tm_buf *b, int16_t v, tm_error *err) {
  uint8_t p[2] = {(uint8_t)((uint16_t)v >> 8), (uint8_t)v};
  return tm_buf_append(b, p, 2, err);
}

int tm_pg_put_i32(tm_buf *b, int32_t v, tm_error *err) {
  uint32_t u = (uint32_t)v;
  uint8_t p[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
  return tm_buf_append(b, p, 4, err);
}

int tm_pg_put_i64(tm_buf *b, int64_t v, tm_error *err) {
  TM_TRY(tm_pg_put_i32(b, (int32_t)(uint32_t)((uint64_t)v >> 32), err));
  return tm_pg_put_i32(b, (int32_t)(uint32_t)(uint64_t)v, err);
}

int tm_pg_put_str(tm_buf *b, const char *s, tm_error *err) {
  return tm_buf_append(b, s, strlen(s) + 1, err);
}

int tm_pg_put_error(tm_buf *b, const char *severity, const char *sqlstate, const char *message,
                    tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(b, 'E', &mark, err));
  TM_TRY(tm_buf_putc(b, 'S', err));
  TM_TRY(tm_pg_put_str(b, severity, err));
  TM_TRY(tm_buf_putc(b, 'V', err));
  TM_TRY(tm_pg_put_str(b, severity, err));
  TM_TRY(tm_buf_putc(b, 'C', err));
  TM_TRY(tm_pg_put_str(b, sqlstate, err));
  TM_TRY(tm_buf_putc(b, 'M', err));
  for (const char *p = message; *p; p++) TM_TRY(tm_buf_putc(b, *p == '\n' ? ' ' : *p, err));
  TM_TRY(tm_buf_putc(b, '\0', err));
  TM_TRY(tm_buf_putc(b, '\0', err));
  tm_pg_end(b, mark);
  return TM_OK;
}

int tm_pg_put_param(tm_buf *b, const char *name, const char *value, tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(b, 'S', &mark, err));
  TM_TRY(tm_pg_put_str(b, name, err));
  TM_TRY(tm_pg_put_str(b, value, err));
  tm_pg_end(b, mark);
  return TM_OK;
}

int tm_pg_put_empty(tm_buf *b, char type, tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(b, type, &mark, err));
  tm_pg_end(b, mark);
  return TM_OK;
}

int tm_pg_put_complete(tm_buf *b, const char *tag, tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(b, 'C', &mark, err));
  TM_TRY(tm_pg_put_str(b, tag, err));
  tm_pg_end(b, mark);
  return TM_OK;
}

int tm_pg_put_ready(tm_buf *b, char status, tm_error *err) {
  size_t mark;
  TM_TRY(tm_pg_begin(b, 'Z', &mark, err));
  TM_TRY(tm_buf_putc(b, status, err));
  tm_pg_end(b, mark);
  return TM_OK;
}
