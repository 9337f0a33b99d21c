/*
 * where.c - a small filter syntax typed by an Iceberg schema, for the
 * authoring commands' --where (format layer). See iceberg.h.
 */
#include <ctype.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"
#include "util/time.h"

typedef struct lexer {
  const char *p;
  const char *text;
  tm_error *err;
} lexer;

static void skip_ws(lexer *l) {
  while (isspace((unsigned char)*l->p)) l->p++;
}

static bool keyword(lexer *l, const char *kw) {
  skip_ws(l);
  size_t n = strlen(kw);
  if (strncasecmp(l->p, kw, n) != 0) return false;
  char next = l->p[n];
  if (isalnum((unsigned char)next) || next == '_') return false;
  l->p += n;
  return true;
}

static bool punct(lexer *l, const char *s) {
  skip_ws(l);
  size_t n = strlen(s);
  if (strncmp(l->p, s, n) != 0) return false;
  l->p += n;
  return true;
}

static int bad(lexer *l, const char *what) {
  return tm_error_set(l->err, TM_EINVALID, "filter \"%s\": %s at offset %zu", l->text, what,
                      (size_t)(l->p - l->text));
}

/* An identifier or "quoted identifier" into buf. */
static int ident(lexer *l, char *buf, size_t cap) {
  skip_ws(l);
  size_t n = 0;
  if (*l->p == '"') {
    l->p++;
    while (*l->p && *l->p != '"' && n + 1 < cap) buf[n++] = *l->p++;
    if (*l->p != '"') return bad(l, "unterminated quoted column name");
    l->p++;
  } else {
    while ((isalnum((unsigned char)*l->p) || *l->p == '_' || *l->p == '.') && n + 1 < cap)
      buf[n++] = *l->p++;
  }
  buf[n] = '\0';
  return n ? TM_OK : bad(l, "expected a column name");
}

/* A literal's text into *out (tm_free); quoted tells strings apart. */
static int literal(lexer *l, char **out, bool *quoted) {
  skip_ws(l);
  tm_buf b = TM_BUF_INIT(1 << 20);
  *quoted = *l->p == '\'';
  if (*quoted) {
    l->p++;
    for (;;) {
      if (!*l->p) {
        tm_buf_dispose(&b);
        return bad(l, "unterminated string");
      }
      if (*l->p == '\'') {
        if (l->p[1] != '\'') break;
        l->p++;
      }
      if (tm_buf_putc(&b, *l->p++, l->err) < 0) {
        tm_buf_dispose(&b);
        return l->err->code;
      }
    }
    l->p++;
  } else {
    while (*l->p && (isalnum((unsigned char)*l->p) || strchr("+-._:", *l->p))) {
      if (tm_buf_putc(&b, *l->p++, l->err) < 0) {
        tm_buf_dispose(&b);
        return l->err->code;
      }
    }
    if (b.len == 0) {
      tm_buf_dispose(&b);
      return bad(l, "expected a value");
    }
  }
  *out = tm_buf_take(&b, NULL);
  return *out ? TM_OK : tm_error_nomem(l->err);
}

/* Converts literal text to a value of the column's type. */
static int to_value(lexer *l, const char *col, const tm_type *t, const char *s, tm_value *v,
                    uint8_t u[16]) {
  memset(v, 0, sizeof *v);
  v->type = t->id;
  size_t len = strlen(s);
  int64_t sec = 0;
  int32_t ns = 0;
  bool zone = false;
  switch (t->id) {
    case TM_TYPE_BOOL:
      if (tm_parse_bool(s, len, &v->v.b) == TM_OK) return TM_OK;
      break;
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
      if (tm_parse_int64(s, len, &v->v.i) == TM_OK &&
          (t->id == TM_TYPE_INT64 || (v->v.i >= INT32_MIN && v->v.i <= INT32_MAX)))
        return TM_OK;
      break;
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (tm_parse_double(s, len, &v->v.f) == TM_OK) return TM_OK;
      break;
    case TM_TYPE_DECIMAL128: {
      __int128 x = 0;
      bool neg = false, dot = false, digits = false;
      int frac = 0;
      const char *p = s;
      if (*p == '-' || *p == '+') neg = *p++ == '-';
      for (; *p; p++) {
        if (*p == '.' && !dot) {
          dot = true;
          continue;
        }
        if (*p < '0' || *p > '9' || frac >= 38) break;
        digits = true;
        if (dot) frac++;
        x = x * 10 + (*p - '0');
      }
      if (*p || !digits || frac > t->scale) break;
      for (; frac < t->scale; frac++) x *= 10;
      if (neg) x = -x;
      memcpy(v->v.dec, &x, 16);
      return TM_OK;
    }
    case TM_TYPE_DATE32:
      if (tm_time_parse(s, len, &sec, &ns, &zone) == TM_OK) {
        v->v.i = tm_floor_div(sec, 86400);
        return TM_OK;
      }
      break;
    case TM_TYPE_TIMESTAMP:
      if (tm_time_parse(s, len, &sec, &ns, &zone) == TM_OK) {
        if (tm_instant_to_units((tm_instant){sec, ns}, tm_unit_per_second(t->unit), false, &v->v.i))
          return TM_OK;
      }
      break;
    case TM_TYPE_TIME64: {
      char buf[64];
      snprintf(buf, sizeof buf, "1970-01-01T%s", s);
      if (tm_time_parse(buf, strlen(buf), &sec, &ns, &zone) == TM_OK) {
        if (tm_instant_to_units((tm_instant){sec, ns}, tm_unit_per_second(t->unit), false, &v->v.i))
          return TM_OK;
      }
      break;
    }
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
      v->v.s = tm_sv(s, len);
      return TM_OK;
    case TM_TYPE_FIXED_BINARY:
      if (t->uuid && len == 36) {
        size_t n = 0;
        for (size_t i = 0; i < len && n < 32; i++) {
          char c = s[i];
          int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
          if (d < 0) continue;
          u[n / 2] = (uint8_t)(n % 2 ? (u[n / 2] | d) : (d << 4));
          n++;
        }
        if (n == 32) {
          v->v.s = tm_sv((const char *)u, 16);
          return TM_OK;
        }
      }
      break;
    default:
      break;
  }
  char tn[64];
  tm_type_name(t, tn, sizeof tn);
  return tm_error_set(l->err, TM_EINVALID, "filter: '%s' is not a %s value for column %s", s, tn,
                      col);
}

int tm_iceberg_parse_where(const char *text, const tm_iceberg_schema *schema, tm_predicate *out,
                           tm_error *err) {
  lexer l = {text, text, err};
  char col[256];
  int rc = TM_OK;
  for (;;) {
    TM_TRY(ident(&l, col, sizeof col));
    const tm_iceberg_field *f = tm_iceberg_schema_find_name(schema, col);
    if (!f || !tm_iceberg_type_is_primitive(f->type)) {
      return tm_error_set(err, TM_EINVALID, "filter: %s is not a column of the table", col);
    }
    tm_type t;
    TM_TRY(tm_iceberg_type_to_tm(f->type, &t, err));
    if (keyword(&l, "IS")) {
      bool neg = keyword(&l, "NOT");
      if (!keyword(&l, "NULL")) return bad(&l, "expected NULL");
      TM_TRY(tm_predicate_add_null(out, f->name, t, !neg, err));
    } else if (keyword(&l, "IN")) {
      if (!punct(&l, "(")) return bad(&l, "expected (");
      tm_value vals[256];
      char *texts[256];
      uint8_t scratch[256][16];
      size_t n = 0;
      do {
        if (n == 256) {
          rc = bad(&l, "more than 256 values in IN");
          break;
        }
        bool q;
        rc = literal(&l, &texts[n], &q);
        if (rc < 0) break;
        n++;
        rc = to_value(&l, f->name, &t, texts[n - 1], &vals[n - 1], scratch[n - 1]);
        if (rc < 0) break;
      } while (punct(&l, ","));
      if (rc == TM_OK && !punct(&l, ")")) rc = bad(&l, "expected )");
      if (rc == TM_OK) rc = tm_predicate_add_in(out, f->name, t, vals, n, err);
      for (size_t i = 0; i < n; i++) tm_free(texts[i]);
      if (rc < 0) return rc;
    } else {
      tm_pred_op op;
      if (punct(&l, "<=")) {
        op = TM_PRED_LE;
      } else if (punct(&l, ">=")) {
        op = TM_PRED_GE;
      } else if (punct(&l, "!=") || punct(&l, "<>")) {
        return bad(&l, "!= is not supported (use <, > or IN)");
      } else if (punct(&l, "==") || punct(&l, "=")) {
        op = TM_PRED_EQ;
      } else if (punct(&l, "<")) {
        op = TM_PRED_LT;
      } else if (punct(&l, ">")) {
        op = TM_PRED_GT;
      } else {
        return bad(&l, "expected =, <, <=, >, >=, IS or IN");
      }
      char *lit = NULL;
      bool q;
      TM_TRY(literal(&l, &lit, &q));
      tm_value v;
      uint8_t scratch[16];
      rc = to_value(&l, f->name, &t, lit, &v, scratch);
      if (rc == TM_OK) rc = tm_predicate_add(out, f->name, t, op, &v, err);
      tm_free(lit);
      if (rc < 0) return rc;
    }
    skip_ws(&l);
    if (!*l.p) return TM_OK;
    if (!keyword(&l, "AND")) return bad(&l, "expected AND or the end");
  }
}
