/*
 * pushdown.c - predicate terms from a query's WHERE clause, to prune a
 * scanned relation's files and row groups (engine layer; SPEC C6, A10).
 *
 * Input: the parse tree DuckDB serializes (json_serialize_sql). For the one
 * SELECT that reads the relation (from a single table, not a join; nothing
 * is pushed when the relation is read twice), each top-level AND conjunct of
 * the form
 *
 *   col <op> constant, constant <op> col    (=, <, <=, >, >=)
 *   col IN (constants...), col BETWEEN a AND b, col IS [NOT] NULL
 *
 * becomes a tm_predicate term, when the constant converts *exactly* to the
 * column's type with the meaning DuckDB gives the comparison: integers to
 * integer, float and decimal columns when representable; decimals and
 * integral doubles likewise; text to text; text (or TIMESTAMP/DATE literals)
 * to date and timestamp columns through the same ISO 8601 parser the
 * refresh uses, only in the plain forms both parsers read alike (no leap
 * seconds, at most nine fraction digits, a zone only for zoned columns).
 * Anything else is left out: a term only prunes, and DuckDB filters every
 * row with the whole WHERE clause, so leaving a term out costs reading, never
 * an answer.
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"
#include "util/time.h"

/* ---- finding the relation's SELECT ------------------------------------------------ */

static bool is_type(const json_t *n, const char *type) {
  const char *t = json_string_value(json_object_get(n, "type"));
  return t && !strcmp(t, type);
}

/* Counts BASE_TABLE references to name anywhere in the tree. */
static size_t count_refs(const json_t *n, const char *name, int depth) {
  if (depth > 4096) return 2; /* too deep to be sure: as if read twice */
  size_t c = 0;
  if (json_is_array(n)) {
    size_t i;
    const json_t *v;
    json_array_foreach(n, i, v) c += count_refs(v, name, depth + 1);
    return c;
  }
  if (!json_is_object(n)) return 0;
  if (is_type(n, "BASE_TABLE")) {
    const char *t = json_string_value(json_object_get(n, "table_name"));
    const char *schema = json_string_value(json_object_get(n, "schema_name"));
    const char *cat = json_string_value(json_object_get(n, "catalog_name"));
    if (t && !strcasecmp(t, name) && (!schema || !*schema) && (!cat || !*cat)) c++;
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)n, key, v) c += count_refs(v, name, depth + 1);
  return c;
}

/* The SELECT_NODE whose FROM is exactly the base table name (NULL if none). */
static const json_t *find_select(const json_t *n, const char *name, int depth) {
  if (depth > 4096) return NULL;
  if (json_is_array(n)) {
    size_t i;
    const json_t *v;
    json_array_foreach(n, i, v) {
      const json_t *f = find_select(v, name, depth + 1);
      if (f) return f;
    }
    return NULL;
  }
  if (!json_is_object(n)) return NULL;
  if (is_type(n, "SELECT_NODE")) {
    const json_t *from = json_object_get(n, "from_table");
    const char *t = json_string_value(json_object_get(from, "table_name"));
    if (is_type(from, "BASE_TABLE") && t && !strcasecmp(t, name)) return n;
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)n, key, v) {
    const json_t *f = find_select(v, name, depth + 1);
    if (f) return f;
  }
  return NULL;
}

/* ---- constants ---------------------------------------------------------------------- */

typedef enum { K_INT, K_DOUBLE, K_DEC, K_STR, K_BOOL } const_kind;

typedef struct sqlconst {
  const_kind kind;
  int64_t i;            /* K_INT, K_DEC (unscaled) */
  int scale;            /* K_DEC */
  double d;             /* K_DOUBLE */
  const char *s;        /* K_STR: a view into the tree */
  size_t n;
  bool b;
  const char *cast;     /* CAST(... AS cast) around the constant, or NULL */
} sqlconst;

static bool read_const(const json_t *e, sqlconst *out) {
  memset(out, 0, sizeof *out);
  const char *cls = json_string_value(json_object_get(e, "class"));
  if (cls && !strcmp(cls, "CAST")) {
    if (json_is_true(json_object_get(e, "try_cast"))) return false;
    const char *to = json_string_value(json_object_get(json_object_get(e, "cast_type"), "id"));
    if (!to || !read_const(json_object_get(e, "child"), out) || out->cast) return false;
    out->cast = to;
    return out->kind == K_STR;
  }
  if (!cls || strcmp(cls, "CONSTANT") != 0) return false;
  const json_t *val = json_object_get(e, "value");
  if (json_is_true(json_object_get(val, "is_null"))) return false;
  const char *tid = json_string_value(json_object_get(json_object_get(val, "type"), "id"));
  const json_t *v = json_object_get(val, "value");
  if (!tid) return false;
  if (!strcmp(tid, "INTEGER") || !strcmp(tid, "BIGINT") || !strcmp(tid, "SMALLINT") ||
      !strcmp(tid, "TINYINT") || !strcmp(tid, "INTEGER_LITERAL")) {
    if (!json_is_integer(v)) return false;
    out->kind = K_INT;
    out->i = json_integer_value(v);
    return true;
  }
  if (!strcmp(tid, "DOUBLE") || !strcmp(tid, "FLOAT")) {
    if (!json_is_number(v)) return false;
    out->kind = K_DOUBLE;
    out->d = json_number_value(v);
    return true;
  }
  if (!strcmp(tid, "DECIMAL")) {
    const json_t *ti = json_object_get(json_object_get(val, "type"), "type_info");
    const json_t *sc = json_object_get(ti, "scale");
    if (!json_is_integer(v) || !json_is_integer(sc)) return false;
    out->kind = K_DEC;
    out->i = json_integer_value(v);
    out->scale = (int)json_integer_value(sc);
    return out->scale >= 0 && out->scale <= 18;
  }
  if (!strcmp(tid, "VARCHAR") || !strcmp(tid, "STRING_LITERAL")) {
    if (!json_is_string(v)) return false;
    out->kind = K_STR;
    out->s = json_string_value(v);
    out->n = json_string_length(v);
    return true;
  }
  if (!strcmp(tid, "BOOLEAN")) {
    if (!json_is_boolean(v)) return false;
    out->kind = K_BOOL;
    out->b = json_is_true(v);
    return true;
  }
  return false;
}

static const int64_t k_pow10[19] = {1,
                                    10,
                                    100,
                                    1000,
                                    10000,
                                    100000,
                                    1000000,
                                    10000000,
                                    100000000,
                                    1000000000,
                                    10000000000,
                                    100000000000,
                                    1000000000000,
                                    10000000000000,
                                    100000000000000,
                                    1000000000000000,
                                    10000000000000000,
                                    100000000000000000,
                                    1000000000000000000};

static bool int_fits(const tm_type *t, int64_t v) {
  switch (t->id) {
    case TM_TYPE_INT8: return v >= INT8_MIN && v <= INT8_MAX;
    case TM_TYPE_INT16: return v >= INT16_MIN && v <= INT16_MAX;
    case TM_TYPE_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case TM_TYPE_INT64: return true;
    case TM_TYPE_UINT8: return v >= 0 && v <= UINT8_MAX;
    case TM_TYPE_UINT16: return v >= 0 && v <= UINT16_MAX;
    case TM_TYPE_UINT32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case TM_TYPE_UINT64: return v >= 0;
    default: return false;
  }
}

/* The plain ISO 8601 forms both DuckDB's cast and tm_time_parse read alike. */
static bool plain_time_text(const char *s, size_t n, bool *has_zone) {
  *has_zone = false;
  if (n < 10 || n > 40) return false;
  size_t frac = 0;
  bool in_frac = false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      if (in_frac) frac++;
      continue;
    }
    in_frac = c == '.';
    if (c == 'Z' || c == 'z' || c == '+' || (c == '-' && i > 10)) *has_zone = true;
    if (!(c == '-' || c == ':' || c == 'T' || c == ' ' || c == '.' || c == 'Z' || c == 'z' || c == '+'))
      return false;
  }
  if (frac > 9) return false;
  /* No leap second: DuckDB and tm_time_parse treat :60 differently. */
  for (size_t i = 0; i + 3 <= n; i++)
    if (s[i] == ':' && s[i + 1] == '6' && s[i + 2] == '0') return false;
  return true;
}

/* The constant as a value of type t, when it converts exactly. */
static bool const_value(const sqlconst *c, const tm_type *t, tm_value *out) {
  memset(out, 0, sizeof *out);
  out->type = t->id;
  switch (t->id) {
    case TM_TYPE_BOOL:
      if (c->kind == K_BOOL) {
        out->v.b = c->b;
        return true;
      }
      if (c->kind == K_STR && c->cast && !strcmp(c->cast, "BOOLEAN")) {
        if ((c->n == 1 && c->s[0] == 't') || (c->n == 4 && !strncasecmp(c->s, "true", 4))) out->v.b = true;
        else if ((c->n == 1 && c->s[0] == 'f') || (c->n == 5 && !strncasecmp(c->s, "false", 5))) out->v.b = false;
        else return false;
        return true;
      }
      return false;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: {
      int64_t v;
      if (c->kind == K_INT) v = c->i;
      else if (c->kind == K_DEC && c->i % k_pow10[c->scale] == 0) v = c->i / k_pow10[c->scale];
      else if (c->kind == K_DOUBLE && c->d == floor(c->d) && fabs(c->d) < 9e15) v = (int64_t)c->d;
      else return false;
      if (!int_fits(t, v)) return false;
      if (t->id >= TM_TYPE_UINT8) out->v.u = (uint64_t)v;
      else out->v.i = v;
      return true;
    }
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: {
      double d;
      if (c->kind == K_INT && c->i > -(INT64_C(1) << 53) && c->i < (INT64_C(1) << 53)) d = (double)c->i;
      else if (c->kind == K_DOUBLE) d = c->d;
      else return false;
      if (t->id == TM_TYPE_FLOAT32 && (double)(float)d != d) return false;
      out->v.f = d;
      return true;
    }
    case TM_TYPE_DECIMAL128: {
      if (t->scale < 0 || t->scale > 18) return false;
      __int128 x;
      if (c->kind == K_INT) x = (__int128)c->i * k_pow10[t->scale];
      else if (c->kind == K_DEC && c->scale <= t->scale) x = (__int128)c->i * k_pow10[t->scale - c->scale];
      else return false;
      memcpy(out->v.dec, &x, 16);
      return true;
    }
    case TM_TYPE_UTF8:
      if (c->kind != K_STR || (c->cast && strcmp(c->cast, "VARCHAR") != 0)) return false;
      out->v.s = tm_sv(c->s, c->n);
      return true;
    case TM_TYPE_DATE32:
    case TM_TYPE_TIMESTAMP: {
      if (c->kind != K_STR) return false;
      if (c->cast && strcmp(c->cast, "DATE") && strcmp(c->cast, "TIMESTAMP") &&
          strcmp(c->cast, "TIMESTAMP WITH TIME ZONE") && strcmp(c->cast, "TIMESTAMP_TZ"))
        return false;
      bool zone_text, zone;
      if (!plain_time_text(c->s, c->n, &zone_text)) return false;
      int64_t sec;
      int32_t nsec;
      if (tm_time_parse(c->s, c->n, &sec, &nsec, &zone) != TM_OK) return false;
      if (zone || zone_text) {
        /* An offset only means the same to a zoned column and a zoned literal. */
        if (t->id != TM_TYPE_TIMESTAMP || !t->utc) return false;
        if (c->cast && strcmp(c->cast, "TIMESTAMP WITH TIME ZONE") && strcmp(c->cast, "TIMESTAMP_TZ"))
          return false;
      }
      if (c->cast && !strcmp(c->cast, "DATE") && (sec % 86400 != 0 || nsec != 0)) return false;
      if (t->id == TM_TYPE_DATE32) {
        if (sec % 86400 != 0 || nsec != 0) return false;
        out->v.i = sec / 86400;
        return true;
      }
      int64_t per = tm_unit_per_second(t->unit);
      if (nsec % (1000000000 / per) != 0) return false; /* not exact in the column's unit */
      return tm_instant_to_units((tm_instant){sec, nsec}, per, false, &out->v.i);
    }
    default: return false;
  }
}

/* ---- comparisons ---------------------------------------------------------------------- */

/* The column a reference names, when it is unqualified or qualified by the relation or its alias. */
static int column_of(const json_t *e, const char *name, const char *alias, const tm_schema *s) {
  const char *cls = json_string_value(json_object_get(e, "class"));
  if (!cls || strcmp(cls, "COLUMN_REF") != 0) return -1;
  const json_t *names = json_object_get(e, "column_names");
  size_t n = json_array_size(names);
  if (n == 0 || n > 2) return -1;
  if (n == 2) {
    const char *q = json_string_value(json_array_get(names, 0));
    if (!q || (strcasecmp(q, name) != 0 && (!alias || !*alias || strcasecmp(q, alias) != 0))) return -1;
  }
  const char *col = json_string_value(json_array_get(names, n - 1));
  return col ? tm_schema_find_nocase(s, col) : -1;
}

static bool op_of(const char *type, tm_pred_op *op, bool flip) {
  static const struct { const char *name; tm_pred_op op, flipped; } k[] = {
      {"COMPARE_EQUAL", TM_PRED_EQ, TM_PRED_EQ},
      {"COMPARE_LESSTHAN", TM_PRED_LT, TM_PRED_GT},
      {"COMPARE_LESSTHANOREQUALTO", TM_PRED_LE, TM_PRED_GE},
      {"COMPARE_GREATERTHAN", TM_PRED_GT, TM_PRED_LT},
      {"COMPARE_GREATERTHANOREQUALTO", TM_PRED_GE, TM_PRED_LE},
  };
  for (size_t i = 0; type && i < sizeof k / sizeof k[0]; i++)
    if (!strcmp(type, k[i].name)) {
      *op = flip ? k[i].flipped : k[i].op;
      return true;
    }
  return false;
}

static int add_cmp(tm_predicate *out, const tm_schema *s, int col, tm_pred_op op, const json_t *cexpr,
                   tm_error *err) {
  sqlconst c;
  tm_value v;
  const tm_column *column = &s->cols[col];
  if (!read_const(cexpr, &c) || !const_value(&c, &column->type, &v)) return TM_OK;
  /*
   * NaN literals and float bounds go as they are: the predicate follows
   * DuckDB's order (NaN equals NaN, above every number; format/predicate.h),
   * so a lower bound keeps the NaN rows DuckDB returns (the case
   * tests/unit/engine/test_sql_pushdown.c found when it did not).
   */
  return tm_predicate_add(out, column->name, column->type, op, &v, err);
}

static int conjunct(const json_t *e, const char *name, const char *alias, const tm_schema *s,
                    tm_predicate *out, int depth, tm_error *err) {
  if (depth > 256) return TM_OK;
  const char *cls = json_string_value(json_object_get(e, "class"));
  const char *type = json_string_value(json_object_get(e, "type"));
  if (!cls || !type) return TM_OK;
  if (!strcmp(cls, "CONJUNCTION") && !strcmp(type, "CONJUNCTION_AND")) {
    size_t i;
    const json_t *ch;
    json_array_foreach(json_object_get(e, "children"), i, ch)
        TM_TRY(conjunct(ch, name, alias, s, out, depth + 1, err));
    return TM_OK;
  }
  if (!strcmp(cls, "COMPARISON")) {
    const json_t *l = json_object_get(e, "left"), *r = json_object_get(e, "right");
    int col = column_of(l, name, alias, s);
    bool flip = false;
    if (col < 0) {
      col = column_of(r, name, alias, s);
      flip = true;
      const json_t *t = l;
      l = r;
      r = t;
    }
    tm_pred_op op;
    if (col < 0 || !op_of(type, &op, flip)) return TM_OK;
    return add_cmp(out, s, col, op, r, err);
  }
  if (!strcmp(cls, "BETWEEN")) {
    int col = column_of(json_object_get(e, "input"), name, alias, s);
    if (col < 0) return TM_OK;
    TM_TRY(add_cmp(out, s, col, TM_PRED_GE, json_object_get(e, "lower"), err));
    return add_cmp(out, s, col, TM_PRED_LE, json_object_get(e, "upper"), err);
  }
  if (!strcmp(cls, "OPERATOR")) {
    const json_t *ch = json_object_get(e, "children");
    int col = column_of(json_array_get(ch, 0), name, alias, s);
    if (col < 0) return TM_OK;
    const tm_column *column = &s->cols[col];
    if (!strcmp(type, "OPERATOR_IS_NULL") || !strcmp(type, "OPERATOR_IS_NOT_NULL"))
      return tm_predicate_add_null(out, column->name, column->type, !strcmp(type, "OPERATOR_IS_NULL"), err);
    if (!strcmp(type, "COMPARE_IN")) {
      size_t n = json_array_size(ch);
      if (n < 2 || n > 4097) return TM_OK;
      tm_value *vals = tm_calloc(n - 1, sizeof *vals);
      if (!vals) return tm_error_nomem(err);
      bool all = true;
      for (size_t i = 1; i < n && all; i++) {
        sqlconst c;
        all = read_const(json_array_get(ch, i), &c) && const_value(&c, &column->type, &vals[i - 1]);
      }
      int rc = all ? tm_predicate_add_in(out, column->name, column->type, vals, n - 1, err) : TM_OK;
      tm_free(vals);
      return rc;
    }
  }
  return TM_OK;
}

int tm_sql__pushdown(const json_t *ast, const char *name, const tm_schema *schema,
                     tm_predicate *out, tm_error *err) {
  if (!ast || !schema || schema->n_cols == 0) return TM_OK;
  if (count_refs(ast, name, 0) != 1) return TM_OK;
  const json_t *sel = find_select(ast, name, 0);
  if (!sel) return TM_OK;
  const json_t *where = json_object_get(sel, "where_clause");
  if (!where || json_is_null(where)) return TM_OK;
  const char *alias = json_string_value(json_object_get(json_object_get(sel, "from_table"), "alias"));
  return conjunct(where, name, alias, schema, out, 0, err);
}

/* ---- table names ------------------------------------------------------------------------ */

static int collect(const json_t *n, tm_vec *names, int depth, tm_error *err) {
  if (depth > 4096) return TM_OK;
  if (json_is_array(n)) {
    size_t i;
    const json_t *v;
    json_array_foreach(n, i, v) TM_TRY(collect(v, names, depth + 1, err));
    return TM_OK;
  }
  if (!json_is_object(n)) return TM_OK;
  if (is_type(n, "BASE_TABLE")) {
    const char *t = json_string_value(json_object_get(n, "table_name"));
    const char *schema = json_string_value(json_object_get(n, "schema_name"));
    if (t && (!schema || !*schema)) {
      bool seen = false;
      for (size_t i = 0; i < names->len && !seen; i++)
        seen = !strcasecmp(*(char **)tm_vec_at(names, i), t);
      if (!seen) {
        char *copy = tm_strdup(t);
        if (!copy) return tm_error_nomem(err);
        int rc = tm_vec_push(names, &copy, err);
        if (rc < 0) {
          tm_free(copy);
          return rc;
        }
      }
    }
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)n, key, v) TM_TRY(collect(v, names, depth + 1, err));
  return TM_OK;
}

int tm_sql__tables(const json_t *ast, char ***names_out, size_t *n_out, tm_error *err) {
  tm_vec names;
  tm_vec_init(&names, sizeof(char *), 1 << 20);
  int rc = collect(ast, &names, 0, err);
  if (rc < 0) {
    for (size_t i = 0; i < names.len; i++) tm_free(*(char **)tm_vec_at(&names, i));
    tm_vec_dispose(&names);
    return rc;
  }
  *n_out = names.len;
  *names_out = (char **)names.ptr;
  return TM_OK;
}
