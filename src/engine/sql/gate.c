/*
 * gate.c - the read-only gate of outside SQL (engine layer; SPEC D4, 1.3).
 *
 * A query passes when:
 *   1. it is one statement (duckdb_extract_statements);
 *   2. DuckDB prepares it (parse and bind errors come back as they are);
 *   3. the prepared statement is a SELECT (DESCRIBE, SHOW, SUMMARIZE and
 *      VALUES are SELECTs) or an EXPLAIN: INSERT, UPDATE, DELETE, COPY,
 *      ATTACH, DETACH, SET, PRAGMA, CALL, INSTALL, LOAD, EXPORT, CHECKPOINT,
 *      transactions and DDL are all other statement types;
 *   4. its parse tree (json_serialize_sql) names no table function that
 *      reads files or changes state (read_*, glob, parquet_*, checkpoint,
 *      query, ...) and no path as a table ('/etc/passwd', 'x/y.csv').
 * Step 4 is a second fence behind the tm_db's own lock-down (no file access
 * outside the accelerations' folders, no extensions, configuration locked):
 * it keeps SQL from reading even the acceleration files as files.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"

/* Table functions that read files, list them, or act on the database. */
static const char *const k_denied_prefixes[] = {"read_", "parquet_", "iceberg_", "delta_",
                                                "sqlite_", "postgres_", "mysql_", "json_execute",
                                                "pragma_", NULL};
static const char *const k_denied[] = {
    "glob",          "sniff_csv",      "checkpoint",    "force_checkpoint", "query",
    "query_table",   "csv_scan",       "parquet_scan",  "json_scan",        "arrow_scan",
    "arrow_scan_dumb", "seq_scan",     "index_scan",    "duckdb_secrets",   "which_secret",
    "load_aws_credentials", "repeat_row_table",
    /* Issue 22: these list paths of the data folder (databases, settings, spill files). */
    "duckdb_databases", "duckdb_settings", "duckdb_temporary_files", "duckdb_extensions",
    "duckdb_external_file_cache", "duckdb_logs", "duckdb_log_contexts", NULL};

/* Scalar functions and tables (views) that show the same: settings hold the folders. */
static const char *const k_denied_scalars[] = {"current_setting", NULL};
static const char *const k_denied_tables[] = {"pg_settings", NULL};

static bool listed(const char *name, const char *const *list) {
  for (size_t i = 0; name && list[i]; i++)
    if (strcasecmp(name, list[i]) == 0) return true;
  return false;
}

bool tm_sql__function_allowed(const char *name) {
  if (!name) return false;
  for (size_t i = 0; k_denied_prefixes[i]; i++)
    if (strncasecmp(name, k_denied_prefixes[i], strlen(k_denied_prefixes[i])) == 0) return false;
  for (size_t i = 0; k_denied[i]; i++)
    if (strcasecmp(name, k_denied[i]) == 0) return false;
  return true;
}

/* Walks the tree: the first refused table function or path-like table name. */
static int walk(const json_t *n, int depth, tm_error *err) {
  if (depth > 4096) return tm_error_set(err, TM_EINVALID, "the query is nested too deeply");
  if (json_is_array(n)) {
    size_t i;
    const json_t *v;
    json_array_foreach(n, i, v) TM_TRY(walk(v, depth + 1, err));
    return TM_OK;
  }
  if (!json_is_object(n)) return TM_OK;
  const char *type = json_string_value(json_object_get(n, "type"));
  if (type && !strcmp(type, "TABLE_FUNCTION")) {
    const json_t *fn = json_object_get(n, "function");
    const char *name = json_string_value(json_object_get(fn, "function_name"));
    if (!tm_sql__function_allowed(name))
      return tm_error_set(err, TM_EINVALID,
                          "the table function %s is not allowed: queries only read the datasets "
                          "(SPEC D4)",
                          name ? name : "?");
  }
  if (type && !strcmp(type, "FUNCTION")) {
    const char *name = json_string_value(json_object_get(n, "function_name"));
    if (listed(name, k_denied_scalars))
      return tm_error_set(err, TM_EINVALID,
                          "the function %s is not allowed: queries only read the datasets "
                          "(SPEC D4)",
                          name);
  }
  if (type && !strcmp(type, "BASE_TABLE")) {
    const char *name = json_string_value(json_object_get(n, "table_name"));
    if (listed(name, k_denied_tables))
      return tm_error_set(err, TM_EINVALID,
                          "%s is not allowed: queries only read the datasets (SPEC D4)", name);
    if (name && (strchr(name, '/') || strchr(name, '\\')))
      return tm_error_set(err, TM_EINVALID,
                          "'%s' names a file: queries only read the datasets (SPEC D4)", name);
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)n, key, v) TM_TRY(walk(v, depth + 1, err));
  return TM_OK;
}

/* The query EXPLAIN [ANALYZE] explains: the text after the keywords. */
static const char *explained(const char *sql) {
  const char *p = sql;
  for (int word = 0; word < 2; word++) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (word == 0 && strncasecmp(p, "EXPLAIN", 7) == 0 && !isalnum((unsigned char)p[7])) p += 7;
    else if (word == 1 && strncasecmp(p, "ANALYZE", 7) == 0 && !isalnum((unsigned char)p[7])) p += 7;
    else if (word == 1 && strncasecmp(p, "ANALYSE", 7) == 0 && !isalnum((unsigned char)p[7])) p += 7;
    else if (word == 0) return NULL;
  }
  return p;
}

/*
 * DuckDB writes unsigned 64-bit numbers (an unset query_location is
 * 18446744073709551615; HUGEINT halves) that jansson's int64 cannot hold:
 * they become -1, in place. Nothing read from the tree needs them.
 */
static void clamp_big_numbers(char *js) {
  bool in_str = false;
  for (char *p = js; *p; p++) {
    if (in_str) {
      if (*p == '\\' && p[1]) p++;
      else if (*p == '"') in_str = false;
      continue;
    }
    if (*p == '"') {
      in_str = true;
      continue;
    }
    if (*p < '0' || *p > '9' || (p > js && (p[-1] == '.' || p[-1] == 'e' || p[-1] == 'E' ||
                                            (p[-1] >= '0' && p[-1] <= '9'))))
      continue;
    char *q = p;
    while (*q >= '0' && *q <= '9') q++;
    size_t n = (size_t)(q - p);
    bool big = n > 19 || (n == 19 && strncmp(p, "9223372036854775807", 19) > 0);
    if (big && *q != '.' && *q != 'e' && *q != 'E') {
      bool neg = p > js && p[-1] == '-';
      char *w = neg ? p - 1 : p;
      *w++ = '-';
      *w++ = '1';
      while (w < q) *w++ = ' ';
    }
    p = q - 1;
  }
}

#define READ_ONLY "queries are read-only, datasets may not be modified (SPEC D4)"

/* The statement's first keyword, upper-cased, for an error message ("DELETE"). */
static void first_word(const char *text, char *out, size_t cap) {
  const char *p = text;
  while (*p && !isalpha((unsigned char)*p)) p++;
  size_t n = 0;
  while (isalpha((unsigned char)p[n]) && n + 1 < cap) {
    out[n] = (char)toupper((unsigned char)p[n]);
    n++;
  }
  out[n] = '\0';
  if (n == 0) snprintf(out, cap, "this statement");
}

/*
 * json_serialize_sql(text) parsed, or an error naming why it cannot be read.
 * helper (may be NULL): the caller's prepared `SELECT json_serialize_sql($1)`
 * on c, made at its first use and kept by the caller (tm_sql__gate).
 */
static int serialize(duckdb_connection c, const char *text, duckdb_prepared_statement *helper,
                     json_t **out, tm_error *err) {
  duckdb_prepared_statement ps = helper ? *helper : NULL;
  int rc = TM_OK;
  if (!ps && duckdb_prepare(c, "SELECT json_serialize_sql($1::VARCHAR)", &ps) == DuckDBError) {
    rc = tm_error_set(err, TM_ERROR, "DuckDB: %s", duckdb_prepare_error(ps));
    duckdb_destroy_prepare(&ps);
  }
  if (helper) *helper = ps;
  if (rc == TM_OK) duckdb_clear_bindings(ps);
  if (rc == TM_OK) duckdb_bind_varchar(ps, 1, text);
  duckdb_result r;
  bool have = false;
  if (rc == TM_OK) {
    if (duckdb_execute_prepared(ps, &r) == DuckDBError) rc = tm_db__result_error(err, &r, NULL);
    have = true;
  }
  char *js = rc == TM_OK ? duckdb_value_varchar(&r, 0, 0) : NULL;
  if (rc == TM_OK && !js) rc = tm_error_set(err, TM_ERROR, "DuckDB could not serialize the query");
  if (rc == TM_OK) {
    json_error_t je;
    clamp_big_numbers(js);
    *out = json_loads(js, 0, &je);
    if (!*out) rc = tm_error_set(err, TM_ERROR, "the query's parse tree does not read: %s", je.text);
  }
  if (rc == TM_OK && json_is_true(json_object_get(*out, "error"))) {
    const char *msg = json_string_value(json_object_get(*out, "error_message"));
    if (msg && strstr(msg, "Only SELECT")) {
      char word[24];
      first_word(text, word, sizeof word);
      rc = tm_error_set(err, TM_EINVALID, "%s is not allowed: " READ_ONLY, word);
    } else {
      rc = tm_error_set(err, TM_EINVALID, "only queries are allowed: %s",
                        msg ? msg : "the statement cannot be checked");
    }
    json_decref(*out);
    *out = NULL;
  }
  if (js) duckdb_free(js);
  if (have) duckdb_destroy_result(&r);
  if (ps && !helper) duckdb_destroy_prepare(&ps);
  return rc;
}

static const char *type_name(duckdb_statement_type t) {
  switch (t) {
    case DUCKDB_STATEMENT_TYPE_INSERT: return "INSERT";
    case DUCKDB_STATEMENT_TYPE_UPDATE: return "UPDATE";
    case DUCKDB_STATEMENT_TYPE_DELETE: return "DELETE";
    case DUCKDB_STATEMENT_TYPE_CREATE: return "CREATE";
    case DUCKDB_STATEMENT_TYPE_DROP: return "DROP";
    case DUCKDB_STATEMENT_TYPE_ALTER: return "ALTER";
    case DUCKDB_STATEMENT_TYPE_COPY: return "COPY";
    case DUCKDB_STATEMENT_TYPE_ATTACH: return "ATTACH";
    case DUCKDB_STATEMENT_TYPE_DETACH: return "DETACH";
    case DUCKDB_STATEMENT_TYPE_SET: return "SET";
    case DUCKDB_STATEMENT_TYPE_PRAGMA: return "PRAGMA";
    case DUCKDB_STATEMENT_TYPE_TRANSACTION: return "a transaction statement";
    case DUCKDB_STATEMENT_TYPE_LOAD: return "INSTALL/LOAD";
    case DUCKDB_STATEMENT_TYPE_CALL: return "CALL";
    case DUCKDB_STATEMENT_TYPE_EXPORT: return "EXPORT";
    case DUCKDB_STATEMENT_TYPE_PREPARE:
    case DUCKDB_STATEMENT_TYPE_EXECUTE: return "PREPARE/EXECUTE";
    case DUCKDB_STATEMENT_TYPE_VACUUM: return "VACUUM";
    case DUCKDB_STATEMENT_TYPE_MULTI: return "a multi-statement";
    default: return "this statement";
  }
}

/* DuckDB's prepare error, without its LINE excerpt, on one line. */
static int prepare_error(duckdb_prepared_statement ps, tm_error *err) {
  char buf[TM_ERROR_MESSAGE_MAX];
  snprintf(buf, sizeof buf, "%s", duckdb_prepare_error(ps) ? duckdb_prepare_error(ps) : "cannot prepare");
  char *line = strstr(buf, "\n\nLINE ");
  if (line) *line = '\0';
  for (char *p = buf; *p; p++)
    if (*p == '\n') *p = ' ';
  return tm_error_set(err, TM_EINVALID, "%s", buf);
}

int tm_sql__gate(duckdb_connection c, const char *sql, duckdb_prepared_statement *helper,
                 duckdb_prepared_statement *ps_out, json_t **ast_out, tm_error *err) {
  *ast_out = NULL;
  duckdb_extracted_statements ex = NULL;
  duckdb_prepared_statement ps = NULL;
  json_t *ast = NULL;
  int rc = TM_OK;
  idx_t n = duckdb_extract_statements(c, sql, &ex);
  if (n == 0) {
    const char *msg = duckdb_extract_statements_error(ex);
    char buf[TM_ERROR_MESSAGE_MAX];
    snprintf(buf, sizeof buf, "%s", msg ? msg : "an empty query");
    for (char *p = buf; *p; p++)
      if (*p == '\n') *p = ' ';
    rc = tm_error_set(err, TM_EINVALID, "%s", buf);
  } else if (n > 1) {
    rc = tm_error_set(err, TM_EINVALID, "one statement per query (this has %llu)",
                      (unsigned long long)n);
  }
  /*
   * The parse tree first: it says whether this is a query before DuckDB binds
   * it (binding a DELETE of a view fails with a message about views, not about
   * what is allowed), and which functions and tables it names.
   */
  bool explain = rc == TM_OK && explained(sql) != NULL;
  if (rc == TM_OK) {
    const char *text = explain ? explained(sql) : sql;
    rc = serialize(c, text, helper, &ast, err);
    if (rc == TM_OK) rc = walk(ast, 0, err);
  }
  if (rc == TM_OK && duckdb_prepare_extracted_statement(c, ex, 0, &ps) == DuckDBError)
    rc = prepare_error(ps, err);
  /* And the prepared statement's own type, in case the two readings differ. */
  duckdb_statement_type type = rc == TM_OK ? duckdb_prepared_statement_type(ps) : DUCKDB_STATEMENT_TYPE_INVALID;
  if (rc == TM_OK && type != DUCKDB_STATEMENT_TYPE_SELECT && type != DUCKDB_STATEMENT_TYPE_EXPLAIN)
    rc = tm_error_set(err, TM_EINVALID, "%s is not allowed: " READ_ONLY, type_name(type));
  if (rc == TM_OK && (type == DUCKDB_STATEMENT_TYPE_EXPLAIN) != explain)
    rc = tm_error_set(err, TM_EINVALID, "this EXPLAIN form is not allowed");
  if (ex) duckdb_destroy_extracted(&ex);
  if (rc < 0) {
    if (ps) duckdb_destroy_prepare(&ps);
    json_decref(ast);
    return rc;
  }
  *ps_out = ps;
  if (type == DUCKDB_STATEMENT_TYPE_EXPLAIN) json_decref(ast);
  else *ast_out = ast;
  return TM_OK;
}

/*
 * The shape key: sql with every run of decimal digits that stands alone (not
 * inside a quoted string, quoted identifier or comment, not part of a word or
 * of a `$n` parameter) replaced by `?`. Two texts with one key differ only in
 * such numbers, and the gate's verdict does not depend on them: the checks of
 * the parse tree read function and table names (which hold no standalone
 * number; the refused names hold no digit at all), the statement count and
 * the EXPLAIN prefix are made of other characters, and the statement type is
 * checked again on each text's own prepared statement (tm_sql__gate_again).
 * A text the lexer reads differently from DuckDB only keeps more of itself
 * in the key (a digit is never a quote or a comment mark).
 */
int tm_sql__shape_key(const char *sql, tm_buf *out, tm_error *err) {
  tm_buf_clear(out);
  const char *p = sql;
  while (*p) {
    char ch = *p;
    const char *start = p;
    if (ch == '\'' || ch == '"') {
      /* 'string' (E'' strings: a backslash escapes), "identifier"; doubled quotes stay inside. */
      bool esc = ch == '\'' && p > sql && (p[-1] == 'E' || p[-1] == 'e') &&
                 (p - 1 == sql || !(isalnum((unsigned char)p[-2]) || p[-2] == '_'));
      p++;
      while (*p) {
        if (esc && *p == '\\' && p[1]) {
          p += 2;
          continue;
        }
        if (*p == ch) {
          if (p[1] == ch) {
            p += 2;
            continue;
          }
          p++;
          break;
        }
        p++;
      }
    } else if (ch == '-' && p[1] == '-') {
      while (*p && *p != '\n') p++;
    } else if (ch == '/' && p[1] == '*') {
      int depth = 0;
      while (*p) {
        if (p[0] == '/' && p[1] == '*') depth++, p += 2;
        else if (p[0] == '*' && p[1] == '/') {
          p += 2;
          if (--depth == 0) break;
        } else p++;
      }
    } else if (ch == '$' && (p[1] == '$' || isalpha((unsigned char)p[1]) || p[1] == '_')) {
      /* $tag$ ... $tag$; $name (a named parameter) stays as it is. */
      const char *t = p + 1;
      while (isalnum((unsigned char)*t) || *t == '_') t++;
      if (*t != '$') {
        p = t;
      } else {
        size_t tl = (size_t)(t - p) + 1;
        const char *e = t + 1;
        while (*e && strncmp(e, p, tl) != 0) e++;
        p = *e ? e + tl : e;
      }
    } else if (ch == '$' && isdigit((unsigned char)p[1])) {
      p++; /* $n: the digits are the parameter's number and stay */
      while (isdigit((unsigned char)*p)) p++;
    } else if (isdigit((unsigned char)ch)) {
      while (isdigit((unsigned char)*p)) p++;
      bool word_after = isalpha((unsigned char)*p) || *p == '_' || *p == '$' ||
                        (unsigned char)*p >= 0x80;
      if (!word_after) {
        TM_TRY(tm_buf_putc(out, '?', err));
        continue;
      }
    } else if (isalpha((unsigned char)ch) || ch == '_' || (unsigned char)ch >= 0x80) {
      /* a word, with its digits */
      p++;
      while (isalnum((unsigned char)*p) || *p == '_' || *p == '$' || (unsigned char)*p >= 0x80) p++;
    } else {
      p++;
    }
    TM_TRY(tm_buf_append(out, start, (size_t)(p - start), err));
  }
  return TM_OK;
}

int tm_sql__gate_again(duckdb_connection c, const char *sql, duckdb_prepared_statement *ps_out,
                       tm_error *err) {
  duckdb_prepared_statement ps = NULL;
  if (duckdb_prepare(c, sql, &ps) == DuckDBError) {
    int rc = prepare_error(ps, err);
    duckdb_destroy_prepare(&ps);
    return rc;
  }
  duckdb_statement_type type = duckdb_prepared_statement_type(ps);
  bool explain = explained(sql) != NULL;
  int rc = TM_OK;
  if (type != DUCKDB_STATEMENT_TYPE_SELECT && type != DUCKDB_STATEMENT_TYPE_EXPLAIN)
    rc = tm_error_set(err, TM_EINVALID, "%s is not allowed: " READ_ONLY, type_name(type));
  else if ((type == DUCKDB_STATEMENT_TYPE_EXPLAIN) != explain)
    rc = tm_error_set(err, TM_EINVALID, "this EXPLAIN form is not allowed");
  if (rc != TM_OK) {
    duckdb_destroy_prepare(&ps);
    return rc;
  }
  *ps_out = ps;
  return TM_OK;
}
