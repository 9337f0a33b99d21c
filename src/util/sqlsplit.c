/*
 * sqlsplit.c - statements out of SQL text fed in pieces (util layer; see
 * sqlsplit.h).
 *
 * A small lexer walks the buffer once, remembering its state between
 * pieces. Where it must see the next byte to decide ("-" then "-"? "/" then
 * "*"? "$tag$" complete?) and that byte has not arrived, it stops and waits;
 * tm_sqlsplit_finish decides those at the end of the input.
 */
#include <string.h>

#include "util/sqlsplit.h"
#include "util/alloc.h"

enum {
  NORMAL = 0,
  SQUOTE,        /* in '...' (or E'...' with backslash set) */
  DQUOTE,        /* in "..." */
  DOLLAR,        /* in $tag$...$tag$ */
  LINE_COMMENT,  /* after --, up to the end of the line */
  BLOCK_COMMENT  /* in a block comment, depth levels deep */
};

void tm_sqlsplit_init(tm_sqlsplit *s, size_t limit) {
  memset(s, 0, sizeof *s);
  tm_buf_init(&s->buf, limit);
}

void tm_sqlsplit_dispose(tm_sqlsplit *s) { tm_buf_dispose(&s->buf); }

/* The lexer back at the start of a statement (buf untouched). */
static void restart(tm_sqlsplit *s) {
  s->scan = 0;
  s->state = NORMAL;
  s->depth = 0;
  s->backslash = false;
  s->content = false;
  s->tag_off = s->tag_len = 0;
  s->closed = 0;
}

void tm_sqlsplit_reset(tm_sqlsplit *s) {
  tm_buf_clear(&s->buf);
  restart(s);
}

int tm_sqlsplit_feed(tm_sqlsplit *s, const char *text, size_t len, tm_error *err) {
  /* A statement goes on as a C string: a NUL would cut it short without a word. */
  const char *nul = memchr(text, '\0', len);
  if (nul)
    return tm_error_set(err, TM_EINVALID, "a NUL byte in the statement (at byte %zu of the text)",
                        s->buf.len + (size_t)(nul - text));
  if (len > s->buf.limit - s->buf.len)
    return tm_error_set(err, TM_ETOOLARGE, "the statement is longer than %zu bytes",
                        s->buf.limit);
  return tm_buf_append(&s->buf, text, len, err);
}

bool tm_sqlsplit_pending(const tm_sqlsplit *s) { return s->content || s->state != NORMAL; }

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* A byte that may continue an identifier (a '$' after one is not a dollar quote). */
static bool ident_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '$' || c >= 0x80;
}

static bool tag_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

/*
 * At p[0] == '$' (not after an identifier): the length of a complete $tag$
 * opener, 0 when these bytes are no opener ($1, a lone $), -1 when the end of
 * the text comes first and more bytes could still make one.
 */
static long dollar_tag(const char *p, size_t avail) {
  size_t i = 1;
  while (i < avail) {
    unsigned char c = (unsigned char)p[i];
    if (c == '$') return (long)(i + 1);
    if (i == 1 ? !tag_start(c) : !(tag_start(c) || (c >= '0' && c <= '9'))) return 0;
    i++;
  }
  return -1;
}

/* The statement buf[0, end) trimmed, as a new string (NULL when out of memory). */
static char *cut(const tm_sqlsplit *s, size_t end) {
  const char *p = s->buf.ptr;
  size_t a = 0, b = end;
  while (a < b && is_space(p[a])) a++;
  while (b > a && is_space(p[b - 1])) b--;
  return tm_strndup(p + a, b - a);
}

/* Drops buf[0, n) and restarts the lexer on what follows. */
static void consume(tm_sqlsplit *s, size_t n) {
  size_t rest = s->buf.len - n;
  memmove(s->buf.ptr, s->buf.ptr + n, rest);
  tm_buf_truncate(&s->buf, rest);
  restart(s);
}

/*
 * Runs the lexer from s->scan. Returns the offset of a statement-ending ';'
 * (scan stops on it), or -1 when the text ran out (scan stops at the first
 * byte it could not yet decide). at_end: no more text will come, so a byte
 * waiting for its successor is decided as it stands.
 */
static long lex(tm_sqlsplit *s, bool at_end) {
  const char *p = s->buf.ptr;
  size_t n = s->buf.len;
  while (s->scan < n) {
    size_t i = s->scan;
    char c = p[i];
    bool more = i + 1 < n; /* whether p[i + 1] is there */
    switch (s->state) {
    case NORMAL:
      if (c == ';') return (long)i;
      if (c == '-' || c == '/') {
        if (!more && !at_end) return -1;
        if (more && c == '-' && p[i + 1] == '-') {
          s->state = LINE_COMMENT;
          s->scan = i + 2;
          continue;
        }
        if (more && c == '/' && p[i + 1] == '*') {
          s->state = BLOCK_COMMENT;
          s->depth = 1;
          s->scan = i + 2;
          continue;
        }
      } else if (c == '\'') {
        /* E'...' (not the end of an identifier like "some"): backslashes escape.
         * A quote right after a closing one continues that string ('' doubling). */
        bool e = i >= 1 && (p[i - 1] == 'E' || p[i - 1] == 'e') &&
                 (i < 2 || !ident_char((unsigned char)p[i - 2]));
        if (!(s->closed == i && s->backslash)) s->backslash = e;
        s->state = SQUOTE;
      } else if (c == '"') {
        s->state = DQUOTE;
      } else if (c == '$' && (i == 0 || !ident_char((unsigned char)p[i - 1]))) {
        long t = dollar_tag(p + i, n - i);
        if (t < 0 && !at_end) return -1;
        if (t > 0) {
          s->state = DOLLAR;
          s->tag_off = i;
          s->tag_len = (size_t)t;
          s->content = true;
          s->scan = i + (size_t)t;
          continue;
        }
      }
      if (!is_space(c)) s->content = true;
      s->scan = i + 1;
      break;
    case SQUOTE:
      if (s->backslash && c == '\\') {
        if (!more && !at_end) return -1;
        s->scan = more ? i + 2 : i + 1;
        continue;
      }
      if (c == '\'') {
        s->state = NORMAL;
        s->closed = i + 1;
      }
      s->scan = i + 1;
      break;
    case DQUOTE:
      if (c == '"') s->state = NORMAL; /* "" reopens at once: the same effect as doubling */
      s->scan = i + 1;
      break;
    case DOLLAR:
      if (c == '$') {
        if (n - i < s->tag_len && !at_end) return -1;
        if (n - i >= s->tag_len && memcmp(p + i, p + s->tag_off, s->tag_len) == 0) {
          s->state = NORMAL;
          s->scan = i + s->tag_len;
          continue;
        }
      }
      s->scan = i + 1;
      break;
    case LINE_COMMENT:
      if (c == '\n') s->state = NORMAL;
      s->scan = i + 1;
      break;
    case BLOCK_COMMENT:
      if (c == '*' || c == '/') {
        if (!more && !at_end) return -1;
        if (more && c == '*' && p[i + 1] == '/') {
          if (--s->depth == 0) s->state = NORMAL;
          s->scan = i + 2;
          continue;
        }
        if (more && c == '/' && p[i + 1] == '*') {
          s->depth++;
          s->scan = i + 2;
          continue;
        }
      }
      s->scan = i + 1;
      break;
    }
  }
  return -1;
}

int tm_sqlsplit_next(tm_sqlsplit *s, char **out, tm_error *err) {
  for (;;) {
    long end = lex(s, false);
    if (end < 0) return TM_ITEROVER;
    bool content = s->content;
    char *stmt = content ? cut(s, (size_t)end) : NULL;
    if (content && !stmt) return tm_error_nomem(err);
    consume(s, (size_t)end + 1);
    if (content) {
      *out = stmt;
      return TM_OK;
    }
  }
}

int tm_sqlsplit_finish(tm_sqlsplit *s, char **out, tm_error *err) {
  long end = lex(s, true);
  /* Statements still complete in the buffer were the caller's to take first. */
  size_t stop = end >= 0 ? (size_t)end : s->buf.len;
  char *stmt = NULL;
  if (s->content && !(stmt = cut(s, stop))) return tm_error_nomem(err);
  tm_sqlsplit_reset(s);
  if (!stmt) return TM_ITEROVER;
  *out = stmt;
  return TM_OK;
}
