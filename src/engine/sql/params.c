/*
 * params.c - parameters of a query: Spice's `:name` spelling and the binding
 * of values to a prepared statement (engine layer; SPEC 1.3). See sql.h.
 *
 * DuckDB knows `?`, `$1` and `$name`; Spice's clients also write `:name`
 * (DataFusion's placeholder). tm_sql_colon_params turns each `:name` that
 * stands where a value may start into `$name`, in place: a small lexer skips
 * what is not SQL code ('strings', E'strings', "identifiers", -- and nested
 * block comments, $$dollar$$ and $tag$quoted$tag$ strings) and leaves `::`
 * casts, `:=` and the colons of slices (`x[1:n]`, `x[:n]`) and struct
 * literals (`{'a': v}`) alone: a colon right after an identifier, a number, a
 * quote or a closing bracket separates, it does not start a value.
 *
 * Values are bound through the C API (duckdb_bind_*), never written into
 * the SQL text: a value is data whatever it holds.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"

/* ---- :name ------------------------------------------------------------------------- */

static bool ident_start(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool ident_char(unsigned char c) {
  return ident_start(c) || (c >= '0' && c <= '9');
}

/* The end of a quoted run that started at p (the quote), doubling as escape; len when
 * unclosed. */
static size_t skip_quoted(const char *s, size_t len, size_t p, char q, bool backslash) {
  for (size_t i = p + 1; i < len; i++) {
    if (backslash && s[i] == '\\') {
      i++;
      continue;
    }
    if (s[i] == q) {
      if (i + 1 < len && s[i + 1] == q) {
        i++;
        continue;
      }
      return i + 1;
    }
  }
  return len;
}

/* The end of the (nested) block comment that starts at p ("/ *"); len when unclosed. */
static size_t skip_block_comment(const char *s, size_t len, size_t p) {
  size_t depth = 0;
  for (size_t i = p; i + 1 < len; i++) {
    if (s[i] == '/' && s[i + 1] == '*') {
      depth++;
      i++;
    } else if (s[i] == '*' && s[i + 1] == '/') {
      i++;
      if (--depth == 0) return i + 1;
    }
  }
  return len;
}

/*
 * At s[p] == '$': the end of a dollar-quoted string ($$...$$, $tag$...$tag$)
 * starting there, or 0 when it is not one ($1, $name: a parameter).
 */
static size_t skip_dollar(const char *s, size_t len, size_t p) {
  size_t t = p + 1;
  if (t < len && ident_start((unsigned char)s[t]))
    while (t < len && ident_char((unsigned char)s[t])) t++;
  if (t >= len || s[t] != '$') return 0;
  size_t tag = t + 1 - p; /* the delimiter, both dollars included */
  for (size_t i = t + 1; i + tag <= len; i++)
    if (s[i] == '$' && memcmp(s + i, s + p, tag) == 0) return i + tag;
  return len;
}

size_t tm_sql_colon_params(char *sql, size_t len) {
  size_t n = 0;
  size_t i = 0;
  while (i < len) {
    unsigned char c = (unsigned char)sql[i];
    if (c == '\'') {
      /* E'...' (backslash escapes): the E is the word just before. */
      bool e = i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
               (i < 2 || !ident_char((unsigned char)sql[i - 2]));
      i = skip_quoted(sql, len, i, '\'', e);
    } else if (c == '"') {
      i = skip_quoted(sql, len, i, '"', false);
    } else if (c == '-' && i + 1 < len && sql[i + 1] == '-') {
      while (i < len && sql[i] != '\n') i++;
    } else if (c == '/' && i + 1 < len && sql[i + 1] == '*') {
      i = skip_block_comment(sql, len, i);
    } else if (c == '$') {
      size_t end = skip_dollar(sql, len, i);
      i = end ? end : i + 1;
    } else if (ident_char(c)) {
      /* A word or a number, with the `$` an identifier may hold (a$b). */
      while (i < len && (ident_char((unsigned char)sql[i]) || sql[i] == '$')) i++;
    } else if (c == ':' && i + 1 < len && sql[i + 1] == ':') {
      i += 2; /* a cast */
    } else if (c == ':') {
      unsigned char before = i > 0 ? (unsigned char)sql[i - 1] : ' ';
      bool operand_before = ident_char(before) || before == '\'' || before == '"' ||
                            before == ')' || before == ']' || before == '}' ||
                            before == '[' || before == '$';
      size_t end = i + 1;
      if (end < len && ident_start((unsigned char)sql[end]))
        while (end < len && ident_char((unsigned char)sql[end])) end++;
      /* `:name$` would read as a dollar quote once rewritten: left for DuckDB to refuse.
       */
      if (!operand_before && end > i + 1 && (end == len || sql[end] != '$')) {
        sql[i] = '$';
        n++;
      }
      i = end;
    } else {
      i++;
    }
  }
  return n;
}

/* ---- binding ----------------------------------------------------------------------- */

void tm_sql_params_dispose(tm_sql_params *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) {
    tm_free(p->items[i].name);
    tm_free(p->items[i].text);
  }
  tm_free(p->items);
  memset(p, 0, sizeof *p);
}

/*
 * A value bound with a type other than the one DuckDB inferred for its place
 * makes DuckDB bind, plan and optimise the statement again at every execution
 * (a prepared statement "requires a rebind" when a value's type differs):
 * over the wire protocol, whose values come as text, that was half the time
 * of a short statement whose plan DuckDB keeps (`SELECT $1::BIGINT`). So a value is bound with the place's own type where it converts
 * exactly and simply: an integer written as plain digits within the type's
 * range, a plain decimal number for FLOAT and DOUBLE, t/f/true/false for
 * BOOLEAN. Any other spelling is bound as it came (VARCHAR, BIGINT) and DuckDB
 * casts it by its own rules, errors included: the fast path never changes
 * what a value means.
 */

/* text as a plain integer (-?[0-9]+, at most 19 digits): *out; false otherwise. */
static bool plain_int(const char *text, size_t len, int64_t *out) {
  size_t i = len && text[0] == '-' ? 1 : 0;
  if (len == i || len - i > 19) return false;
  uint64_t u = 0;
  for (size_t k = i; k < len; k++) {
    if (text[k] < '0' || text[k] > '9') return false;
    u = u * 10 + (uint64_t)(text[k] - '0'); /* 19 digits stay below 2^64 */
  }
  if (i ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX) return false;
  *out = i ? (int64_t)(0 - u) : (int64_t)u;
  return true;
}

/* text as a plain decimal number: -?digits[.digits][(e|E)[+-]digits], nothing else. */
static bool plain_decimal(const char *text, size_t len) {
  size_t i = len && text[0] == '-' ? 1 : 0, digits = 0;
  while (i < len && text[i] >= '0' && text[i] <= '9') i++, digits++;
  if (i < len && text[i] == '.')
    for (i++; i < len && text[i] >= '0' && text[i] <= '9'; i++) digits++;
  if (!digits) return false;
  if (i < len && (text[i] == 'e' || text[i] == 'E')) {
    size_t at = ++i < len && (text[i] == '+' || text[i] == '-') ? i + 1 : i;
    for (i = at; i < len && text[i] >= '0' && text[i] <= '9'; i++) {}
    if (i == at) return false;
  }
  return i == len;
}

/* Binds the integer x in the place of type want when it fits there; DuckDBError when not. */
static duckdb_state bind_int_as(duckdb_prepared_statement ps, idx_t at, duckdb_type want,
                                int64_t x) {
  switch (want) {
    case DUCKDB_TYPE_TINYINT:
      return x >= INT8_MIN && x <= INT8_MAX ? duckdb_bind_int8(ps, at, (int8_t)x) : DuckDBError;
    case DUCKDB_TYPE_SMALLINT:
      return x >= INT16_MIN && x <= INT16_MAX ? duckdb_bind_int16(ps, at, (int16_t)x) : DuckDBError;
    case DUCKDB_TYPE_INTEGER:
      return x >= INT32_MIN && x <= INT32_MAX ? duckdb_bind_int32(ps, at, (int32_t)x) : DuckDBError;
    case DUCKDB_TYPE_BIGINT: return duckdb_bind_int64(ps, at, x);
    case DUCKDB_TYPE_UTINYINT:
      return x >= 0 && x <= UINT8_MAX ? duckdb_bind_uint8(ps, at, (uint8_t)x) : DuckDBError;
    case DUCKDB_TYPE_USMALLINT:
      return x >= 0 && x <= UINT16_MAX ? duckdb_bind_uint16(ps, at, (uint16_t)x) : DuckDBError;
    case DUCKDB_TYPE_UINTEGER:
      return x >= 0 && x <= UINT32_MAX ? duckdb_bind_uint32(ps, at, (uint32_t)x) : DuckDBError;
    case DUCKDB_TYPE_UBIGINT: return x >= 0 ? duckdb_bind_uint64(ps, at, (uint64_t)x) : DuckDBError;
    default: return DuckDBError;
  }
}

/* Binds v in its place's own type when it converts exactly (above); DuckDBError when not. */
static duckdb_state bind_typed(duckdb_prepared_statement ps, idx_t at, const tm_sql_param *v) {
  duckdb_type want = duckdb_param_type(ps, at);
  int64_t x;
  if (v->kind == TM_SQL_PARAM_INT) return bind_int_as(ps, at, want, v->i);
  if (v->kind != TM_SQL_PARAM_TEXT || !v->text) return DuckDBError;
  const char *t = v->text;
  size_t n = v->text_len;
  switch (want) {
    case DUCKDB_TYPE_BOOLEAN:
      if ((n == 1 && t[0] == 't') || (n == 4 && !memcmp(t, "true", 4))) return duckdb_bind_boolean(ps, at, true);
      if ((n == 1 && t[0] == 'f') || (n == 5 && !memcmp(t, "false", 5))) return duckdb_bind_boolean(ps, at, false);
      return DuckDBError;
    case DUCKDB_TYPE_FLOAT:
    case DUCKDB_TYPE_DOUBLE: {
      char num[64]; /* the value alone, terminated: strtod reads no further than its length */
      if (n >= sizeof num || !plain_decimal(t, n)) return DuckDBError;
      memcpy(num, t, n);
      num[n] = '\0';
      if (want == DUCKDB_TYPE_FLOAT) {
        float f = strtof(num, NULL);
        return isfinite(f) ? duckdb_bind_float(ps, at, f) : DuckDBError; /* out of range: DuckDB says */
      }
      double d = strtod(num, NULL);
      return isfinite(d) ? duckdb_bind_double(ps, at, d) : DuckDBError;
    }
    default:
      return plain_int(t, n, &x) ? bind_int_as(ps, at, want, x) : DuckDBError;
  }
}

static int bind_one(duckdb_prepared_statement ps, idx_t at, const tm_sql_param *v,
                    const char *label, tm_error *err) {
  if (bind_typed(ps, at, v) == DuckDBSuccess) return TM_OK;
  duckdb_state st;
  switch (v->kind) {
    case TM_SQL_PARAM_NULL:
      st = duckdb_bind_null(ps, at);
      break;
    case TM_SQL_PARAM_BOOL:
      st = duckdb_bind_boolean(ps, at, v->b);
      break;
    case TM_SQL_PARAM_INT:
      st = duckdb_bind_int64(ps, at, v->i);
      break;
    case TM_SQL_PARAM_DOUBLE:
      st = duckdb_bind_double(ps, at, v->d);
      break;
    case TM_SQL_PARAM_BLOB:
      st = duckdb_bind_blob(ps, at, v->text ? v->text : "", v->text_len);
      break;
    default:
      st = duckdb_bind_varchar_length(ps, at, v->text ? v->text : "", v->text_len);
      break;
  }
  if (st == DuckDBError)
    return tm_error_set(err, TM_EINVALID, "the parameter %s cannot be bound", label);
  return TM_OK;
}

static int cmp_names(const void *a, const void *b) {
  return strcasecmp((*(const tm_sql_param *const *)a)->name,
                    (*(const tm_sql_param *const *)b)->name);
}

/* Whether name is a positional parameter's ("1", "2", ...). */
static bool positional_name(const char *name) {
  if (!name || !*name) return true; /* DuckDB names no gap of $1, $3 */
  for (const char *p = name; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

/* Binds by position: items[k] to $k+1 (and the k+1-th `?`). */
static int bind_positional(duckdb_prepared_statement ps, const tm_sql_params *p, idx_t n,
                           tm_error *err) {
  for (idx_t i = 1; i <= n; i++) {
    const char *name = duckdb_parameter_name(ps, i);
    bool named = !positional_name(name);
    int rc = named ? tm_error_set(
                         err, TM_EINVALID,
                         "the query has the named parameter $%s: send \"parameters\" as "
                         "an object ({\"%s\": value})",
                         name, name)
                   : TM_OK;
    if (name) duckdb_free((void *)name);
    TM_TRY(rc);
  }
  if (p->n != n)
    return tm_error_set(
        err, TM_EINVALID,
        "the query has %llu parameter%s and \"parameters\" holds %zu value%s",
        (unsigned long long)n, n == 1 ? "" : "s", p->n, p->n == 1 ? "" : "s");
  for (idx_t i = 1; i <= n; i++) {
    char label[32];
    snprintf(label, sizeof label, "$%llu", (unsigned long long)i);
    TM_TRY(bind_one(ps, i, &p->items[i - 1], label, err));
  }
  return TM_OK;
}

/* Binds by name: each of the statement's parameters to the value of its name (any case).
 */
static int bind_named(duckdb_prepared_statement ps, const tm_sql_params *p, idx_t n,
                      tm_error *err) {
  const tm_sql_param **by_name = tm_calloc(p->n ? p->n : 1, sizeof *by_name);
  bool *used = tm_calloc(p->n ? p->n : 1, sizeof *used);
  int rc = TM_OK;
  if (!by_name || !used) rc = tm_error_nomem(err);
  for (size_t k = 0; rc == TM_OK && k < p->n; k++) by_name[k] = &p->items[k];
  if (rc == TM_OK && p->n > 1) qsort(by_name, p->n, sizeof *by_name, cmp_names);
  for (size_t k = 1; rc == TM_OK && k < p->n; k++)
    if (strcasecmp(by_name[k - 1]->name, by_name[k]->name) == 0)
      rc = tm_error_set(
          err, TM_EINVALID,
          "\"parameters\" names '%s' and '%s': names match in any case, as the "
          "query's do",
          by_name[k - 1]->name, by_name[k]->name);
  for (idx_t i = 1; rc == TM_OK && i <= n; i++) {
    const char *name = duckdb_parameter_name(ps, i);
    tm_sql_param key = {.name = (char *)(name ? name : "")};
    const tm_sql_param *want = &key;
    const tm_sql_param **hit =
        p->n ? bsearch(&want, by_name, p->n, sizeof *by_name, cmp_names) : NULL;
    if (!hit) {
      rc = tm_error_set(
          err, TM_EINVALID, "\"parameters\" has no value for the query's $%s%s",
          name ? name : "?",
          positional_name(name) ? " (send positional values as an array)" : "");
    } else {
      used[hit - by_name] = true;
      char label[80];
      snprintf(label, sizeof label, "'%.64s'", (*hit)->name);
      rc = bind_one(ps, i, *hit, label, err);
    }
    if (name) duckdb_free((void *)name);
  }
  for (size_t k = 0; rc == TM_OK && k < p->n; k++)
    if (!used[k])
      rc = tm_error_set(err, TM_EINVALID, "the parameter '%s' is not in the query",
                        by_name[k]->name);
  tm_free(by_name);
  tm_free(used);
  return rc;
}

int tm_sql__bind(duckdb_prepared_statement ps, const tm_sql_params *p, tm_error *err) {
  if (p->n > TM_SQL_PARAMS_MAX)
    return tm_error_set(err, TM_EINVALID, "%zu parameters: at most %d", p->n,
                        TM_SQL_PARAMS_MAX);
  idx_t n = duckdb_nparams(ps);
  return p->named ? bind_named(ps, p, n, err) : bind_positional(ps, p, n, err);
}
