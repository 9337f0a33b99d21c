/*
 * special.c - the statements a PostgreSQL client sends that are about the
 * session, not the data (runtime layer, pgwire; docs/PGWIRE.md "SET, SHOW
 * and transactions"), and the SQLSTATE of a failed statement.
 *
 * Clients set and read a few parameters of their session (JDBC sends
 * `SET extra_float_digits = 3`, psql reads `SHOW server_version` ...).
 * tidemark's output is fixed (UTF-8, ISO dates, UTC, shortest exact floats),
 * so SET of a known client parameter is accepted when its value asks for
 * what tidemark does anyway, and refused, naming the parameter, otherwise;
 * application_name is kept. SET of any other parameter is refused (42704):
 * nothing is accepted and then ignored. BEGIN, COMMIT and ROLLBACK are
 * accepted: every statement reads one committed state (C5) and none writes,
 * so a transaction block changes nothing.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "runtime/pgwire/pgwire_int.h"
#include "util/alloc.h"

static const char *const k_reported[] = {
    "server_version", "server_encoding", "client_encoding", "DateStyle", "IntervalStyle",
    "TimeZone", "integer_datetimes", "standard_conforming_strings", "application_name",
    "is_superuser", "default_transaction_read_only", NULL};

const char *tm_pg__reported(size_t i) {
  return i < sizeof k_reported / sizeof k_reported[0] ? k_reported[i] : NULL;
}

/* Parameters with one fixed value: name, value. */
static const char *const k_fixed[][2] = {
    {"server_version", "15.0"},
    {"server_version_num", "150000"},
    {"server_encoding", "UTF8"},
    {"client_encoding", "UTF8"},
    {"DateStyle", "ISO, MDY"},
    {"IntervalStyle", "iso_8601"},
    {"TimeZone", "UTC"},
    {"integer_datetimes", "on"},
    {"standard_conforming_strings", "on"},
    {"is_superuser", "off"},
    {"default_transaction_read_only", "on"},
    {"transaction_read_only", "on"},
    {"transaction_isolation", "serializable"},
    {"default_transaction_isolation", "serializable"},
    {"max_identifier_length", "63"},
    {"lc_collate", "C"},
    {"lc_ctype", "C"},
};

const char *tm_pg__param_value(const tm_pg_params *p, const char *name) {
  if (!strcasecmp(name, "application_name")) return p->application_name;
  if (!strcasecmp(name, "extra_float_digits")) return p->extra_float_digits;
  for (size_t i = 0; i < sizeof k_fixed / sizeof k_fixed[0]; i++)
    if (!strcasecmp(name, k_fixed[i][0])) return k_fixed[i][1];
  return NULL;
}

/* The canonical spelling of a known parameter name. */
static const char *canonical(const char *name) {
  if (!strcasecmp(name, "application_name")) return "application_name";
  if (!strcasecmp(name, "extra_float_digits")) return "extra_float_digits";
  for (size_t i = 0; i < sizeof k_fixed / sizeof k_fixed[0]; i++)
    if (!strcasecmp(name, k_fixed[i][0])) return k_fixed[i][0];
  return NULL;
}

/* ---- a small lexer over the statement's head ------------------------------------------------ */

static const char *skip_blank(const char *p) {
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      int depth = 1;
      p += 2;
      while (*p && depth) {
        if (p[0] == '/' && p[1] == '*') depth++, p += 2;
        else if (p[0] == '*' && p[1] == '/') depth--, p += 2;
        else p++;
      }
    } else {
      return p;
    }
  }
}

/* Reads a word (letters, digits, _ and .) or a "quoted" identifier into out (lower-cased). */
static const char *word(const char *p, char *out, size_t cap) {
  size_t n = 0;
  p = skip_blank(p);
  if (*p == '"') {
    for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
      if (*p == '"') p++;
      if (n + 1 < cap) out[n++] = *p;
    }
    if (*p == '"') p++;
  } else {
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '.') {
      if (n + 1 < cap) out[n++] = (char)tolower((unsigned char)*p);
      p++;
    }
  }
  out[n] = '\0';
  return p;
}

/* The rest as a value: trimmed, a trailing ';' dropped, one level of quotes removed. */
static void value_of(const char *p, char *out, size_t cap) {
  p = skip_blank(p);
  size_t n = strlen(p);
  while (n && (isspace((unsigned char)p[n - 1]) || p[n - 1] == ';')) n--;
  if (n >= 2 && (p[0] == '\'' || p[0] == '"') && p[n - 1] == p[0]) {
    p++;
    n -= 2;
  }
  if (n >= cap) n = cap - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}

static bool only_blank(const char *p) {
  p = skip_blank(p);
  while (*p == ';') p = skip_blank(p + 1);
  return *p == '\0';
}

/* Applies SET name = value (canonical name) to p, or refuses it. */
static int set_param(tm_pg_params *p, const char *name, const char *value, bool apply,
                     tm_error *err) {
  if (!strcmp(name, "application_name")) {
    if (apply) snprintf(p->application_name, sizeof p->application_name, "%s", value);
    return TM_OK;
  }
  if (!strcmp(name, "extra_float_digits")) {
    char *end;
    long v = strtol(value, &end, 10);
    if (*end || end == value || v < 1 || v > 3)
      return tm_error_set(err, TM_EINVALID, "SET extra_float_digits: tidemark sends floats in "
                          "their shortest exact form, what 1 to 3 ask for; '%s' is refused", value);
    if (apply) snprintf(p->extra_float_digits, sizeof p->extra_float_digits, "%ld", v);
    return TM_OK;
  }
  bool ok = false;
  if (!strcmp(name, "client_encoding"))
    ok = !strcasecmp(value, "UTF8") || !strcasecmp(value, "UTF-8") || !strcasecmp(value, "unicode");
  else if (!strcmp(name, "DateStyle"))
    ok = !strncasecmp(value, "ISO", 3) && (!value[3] || !strcasecmp(value + 3, ", MDY") ||
                                           !strcasecmp(value + 3, ",MDY"));
  else if (!strcmp(name, "TimeZone"))
    ok = !strcasecmp(value, "UTC") || !strcasecmp(value, "GMT") || !strcasecmp(value, "Etc/UTC") ||
         !strcasecmp(value, "Z") || !strcmp(value, "0") || !strcasecmp(value, "+00") ||
         !strcasecmp(value, "+00:00");
  else if (!strcmp(name, "IntervalStyle")) ok = !strcasecmp(value, "iso_8601");
  else if (!strcmp(name, "standard_conforming_strings")) ok = !strcasecmp(value, "on");
  else
    return tm_error_set(err, TM_EINVALID, "SET %s: the parameter is fixed in tidemark (value "
                        "'%s')", name, tm_pg__param_value(p, name));
  if (!ok)
    return tm_error_set(err, TM_EINVALID, "SET %s TO '%s': tidemark answers only with %s = '%s'",
                        name, value, name, tm_pg__param_value(p, name));
  return TM_OK;
}

void tm_pg__special_dispose(tm_pg_special_result *r) {
  tm_free(r->inner_sql);
  r->inner_sql = NULL;
}

/* Past a '(' at p: the matching ')' outside strings and quoted names, or NULL. */
static const char *close_paren(const char *p) {
  int depth = 0;
  for (; *p; p++) {
    if (*p == '\'' || *p == '"') {
      char q = *p;
      for (p++; *p && !(*p == q && p[1] != q); p++)
        if (*p == q) p++;
      if (!*p) return NULL;
    } else if (*p == '(') {
      depth++;
    } else if (*p == ')' && --depth == 0) {
      return p;
    }
  }
  return NULL;
}

/*
 * COPY ... TO STDOUT: the query and the options (FORMAT text|csv, HEADER,
 * DELIMITER, in the parenthesised or the old `CSV HEADER` form). Anything
 * else (TO a file, FROM STDIN) is left to the gate, which refuses COPY.
 */
static int classify_copy(const char *rest, tm_pg_special_result *out, tm_error *err) {
  const char *p = skip_blank(rest);
  char w[64];
  const char *q_start, *q_end;
  bool table = false;
  if (*p == '(') {
    const char *e = close_paren(p);
    if (!e) return TM_OK;
    q_start = p + 1;
    q_end = e;
    p = e + 1;
  } else {
    /* A table name, with an optional column list. */
    q_start = p;
    p = word(p, w, sizeof w);
    if (!w[0]) return TM_OK;
    const char *after = skip_blank(p);
    if (*after == '(') {
      const char *e = close_paren(after);
      if (!e) return TM_OK;
      p = e + 1;
    }
    q_end = p;
    table = true;
  }
  const char *r = word(p, w, sizeof w);
  if (strcmp(w, "to") != 0) return TM_OK;
  r = word(r, w, sizeof w);
  if (strcmp(w, "stdout") != 0) return TM_OK;
  out->copy_delim = '\t';
  bool delim_set = false;
  r = skip_blank(r);
  const char *wr = word(r, w, sizeof w);
  if (!strcmp(w, "with")) r = skip_blank(wr);
  bool paren = *r == '(';
  if (paren) r++;
  for (;;) {
    r = skip_blank(r);
    if (*r == ',') r++;
    r = skip_blank(r);
    if (!*r || *r == ';' || (paren && *r == ')')) break;
    r = word(r, w, sizeof w);
    if (!strcmp(w, "format")) {
      r = word(r, w, sizeof w);
      if (!strcmp(w, "csv")) out->copy_csv = true;
      else if (strcmp(w, "text") != 0)
        return tm_error_set(err, TM_EINVALID, "COPY TO STDOUT: FORMAT %s is not supported (text or "
                            "csv)", w);
    } else if (!strcmp(w, "csv")) {
      out->copy_csv = true;
    } else if (!strcmp(w, "header")) {
      out->copy_header = true;
      const char *r2 = word(r, w, sizeof w);
      if (!strcmp(w, "true") || !strcmp(w, "on") || !strcmp(w, "1")) r = r2;
      else if (!strcmp(w, "false") || !strcmp(w, "off") || !strcmp(w, "0")) {
        out->copy_header = false;
        r = r2;
      }
    } else if (!strcmp(w, "delimiter")) {
      r = skip_blank(r);
      if (r[0] != '\'' || !r[1] || r[1] == '\'' || r[2] != '\'')
        return tm_error_set(err, TM_EINVALID, "COPY TO STDOUT: DELIMITER must be one character");
      out->copy_delim = r[1];
      delim_set = true;
      r += 3;
    } else {
      return tm_error_set(err, TM_EINVALID, "COPY TO STDOUT: the option %s is not supported "
                          "(FORMAT text|csv, HEADER, DELIMITER)", w[0] ? w : "here");
    }
  }
  if (out->copy_csv && !delim_set) out->copy_delim = ',';
  char *q = table ? tm_asprintf("SELECT * FROM %.*s", (int)(q_end - q_start), q_start)
                  : tm_asprintf("%.*s", (int)(q_end - q_start), q_start);
  if (!q) return tm_error_nomem(err);
  if (table) {
    /* COPY t (a, b) TO STDOUT: SELECT a, b FROM t. */
    const char *open = memchr(q_start, '(', (size_t)(q_end - q_start));
    if (open) {
      tm_free(q);
      q = tm_asprintf("SELECT %.*s FROM %.*s", (int)(q_end - open - 2), open + 1,
                      (int)(open - q_start), q_start);
      if (!q) return tm_error_nomem(err);
    }
  }
  out->inner_sql = q;
  out->kind = PG_COPY;
  snprintf(out->tag, sizeof out->tag, "COPY");
  return TM_OK;
}

/*
 * PREPARE name AS query, EXECUTE name [(arg, ...)], DEALLOCATE [PREPARE]
 * name | ALL: prepared statements in SQL, as psycopg2 and other clients that
 * paste values use them; the statement's $1, $2, ... are bound, not pasted.
 */
static int classify_prepared(const char *verb, const char *rest, tm_pg_special_result *out,
                             tm_error *err) {
  char w[64];
  const char *p = word(rest, out->stmt_name, sizeof out->stmt_name);
  if (verb[0] == 'd') {
    if (!strcmp(out->stmt_name, "prepare")) p = word(p, out->stmt_name, sizeof out->stmt_name);
    if (!out->stmt_name[0] || !only_blank(p))
      return tm_error_set(err, TM_EINVALID, "DEALLOCATE: expected a statement name or ALL");
    out->kind = PG_DEALLOCATE;
    bool all = !strcmp(out->stmt_name, "all");
    if (all) out->stmt_name[0] = '\0';
    snprintf(out->tag, sizeof out->tag, "%s", all ? "DEALLOCATE ALL" : "DEALLOCATE");
    return TM_OK;
  }
  if (!out->stmt_name[0])
    return tm_error_set(err, TM_EINVALID, "%s: expected a statement name",
                        verb[0] == 'p' ? "PREPARE" : "EXECUTE");
  p = skip_blank(p);
  if (verb[0] == 'p') {
    if (*p == '(')
      return tm_error_set(err, TM_EINVALID, "PREPARE with parameter types is not supported: "
                          "write casts in the statement ($1::INTEGER)");
    const char *q = word(p, w, sizeof w);
    if (strcmp(w, "as") != 0) return tm_error_set(err, TM_EINVALID, "PREPARE: expected AS");
    q = skip_blank(q);
    size_t n = strlen(q);
    while (n && (q[n - 1] == ';' || q[n - 1] == ' ' || q[n - 1] == '\n')) n--;
    if (!(out->inner_sql = tm_asprintf("%.*s", (int)n, q))) return tm_error_nomem(err);
    out->kind = PG_PREPARE;
    snprintf(out->tag, sizeof out->tag, "PREPARE");
    return TM_OK;
  }
  if (*p == '(') {
    const char *e = close_paren(p);
    if (!e || !only_blank(e + 1)) return tm_error_set(err, TM_EINVALID, "EXECUTE: malformed arguments");
    if (!(out->inner_sql = tm_asprintf("SELECT %.*s", (int)(e - p - 1), p + 1)))
      return tm_error_nomem(err);
  } else if (!only_blank(p)) {
    return tm_error_set(err, TM_EINVALID, "EXECUTE: expected (arguments)");
  }
  out->kind = PG_EXECUTE;
  return TM_OK;
}

int tm_pg__classify(const char *sql, tm_pg_params *p, bool apply, tm_pg_special_result *out,
                    tm_error *err) {
  memset(out, 0, sizeof *out);
  out->kind = PG_DUCKDB;
  if (only_blank(sql)) {
    out->kind = PG_EMPTY;
    return TM_OK;
  }
  char w[64], name[64], value[256];
  const char *rest = word(sql, w, sizeof w);
  if (!strcmp(w, "begin") || !strcmp(w, "start")) {
    out->kind = PG_TXN;
    snprintf(out->tag, sizeof out->tag, "%s", !strcmp(w, "begin") ? "BEGIN" : "START TRANSACTION");
    return TM_OK;
  }
  if (!strcmp(w, "commit") || !strcmp(w, "end")) {
    out->kind = PG_TXN;
    snprintf(out->tag, sizeof out->tag, "COMMIT");
    return TM_OK;
  }
  if (!strcmp(w, "rollback") || !strcmp(w, "abort")) {
    out->kind = PG_TXN;
    snprintf(out->tag, sizeof out->tag, "ROLLBACK");
    return TM_OK;
  }
  if (!strcmp(w, "copy")) return classify_copy(rest, out, err);
  if (!strcmp(w, "prepare") || !strcmp(w, "execute") || !strcmp(w, "deallocate"))
    return classify_prepared(w, rest, out, err);
  if (!strcmp(w, "show")) {
    const char *after = word(rest, name, sizeof name);
    if (!strcmp(name, "transaction")) { /* SHOW TRANSACTION ISOLATION LEVEL */
      snprintf(name, sizeof name, "transaction_isolation");
      after = "";
    } else if (!strcmp(name, "time")) { /* SHOW TIME ZONE */
      snprintf(name, sizeof name, "TimeZone");
      after = "";
    }
    const char *c = canonical(name);
    if (!c || !only_blank(after)) return TM_OK; /* DuckDB's SHOW TABLES, SHOW <table>, ... */
    out->kind = PG_SHOW;
    snprintf(out->show_name, sizeof out->show_name, "%s", c);
    snprintf(out->show_value, sizeof out->show_value, "%s", tm_pg__param_value(p, c));
    return TM_OK;
  }
  if (!strcmp(w, "set") || !strcmp(w, "reset")) {
    bool reset = w[0] == 'r';
    out->kind = PG_SET;
    snprintf(out->tag, sizeof out->tag, "%s", reset ? "RESET" : "SET");
    rest = word(rest, name, sizeof name);
    if (!reset && (!strcmp(name, "session") || !strcmp(name, "local")))
      rest = word(rest, name, sizeof name);
    if (!reset && !strcmp(name, "time")) { /* SET TIME ZONE value */
      char zone[16];
      rest = word(rest, zone, sizeof zone);
      snprintf(name, sizeof name, "timezone");
    } else if (!reset) {
      rest = skip_blank(rest);
      if (*rest == '=') rest++;
      else {
        char to[8];
        const char *r2 = word(rest, to, sizeof to);
        if (strcmp(to, "to") != 0)
          return tm_error_set(err, TM_EINVALID, "SET %s: expected TO or =", name);
        rest = r2;
      }
    }
    if (reset && !strcmp(name, "all")) {
      if (apply) p->application_name[0] = '\0';
      return TM_OK;
    }
    const char *c = canonical(name);
    if (!c)
      return tm_error_set(err, TM_EINVALID, "unrecognized configuration parameter \"%s\": "
                          "tidemark's SET takes only client parameters (application_name, "
                          "client_encoding, DateStyle, extra_float_digits, IntervalStyle, "
                          "TimeZone, standard_conforming_strings)", name);
    if (reset) {
      if (apply && !strcmp(c, "application_name")) p->application_name[0] = '\0';
      if (apply && !strcmp(c, "extra_float_digits")) snprintf(p->extra_float_digits, sizeof p->extra_float_digits, "1");
      out->report = !strcmp(c, "application_name") ? "application_name" : NULL;
      return TM_OK;
    }
    value_of(rest, value, sizeof value);
    if (!strcasecmp(value, "default")) return TM_OK;
    TM_TRY(set_param(p, c, value, apply, err));
    out->report = !strcmp(c, "application_name") ? "application_name" : NULL;
    return TM_OK;
  }
  return TM_OK;
}

/* ---- SQLSTATE ------------------------------------------------------------------------------- */

const char *tm_pg__sqlstate(int rc, const char *message) {
  const char *m = message ? message : "";
  switch (rc) {
    case TM_ETIMEOUT:
    case TM_ECANCELLED: return "57014";   /* query_canceled */
    case TM_ETOOLARGE:
    case TM_ENOMEM: return "53200";       /* out_of_memory */
    case TM_EUNAVAILABLE: return "57P03"; /* cannot_connect_now */
    case TM_EUNSUPPORTED: return "0A000"; /* feature_not_supported */
    case TM_EINVALID:
      if (strstr(m, "queries are read-only")) return "25006"; /* read_only_sql_transaction */
      if (strstr(m, "queries only read the datasets")) return "42501"; /* insufficient_privilege */
      if (strstr(m, "unrecognized configuration parameter")) return "42704";
      if (strstr(m, "prepared statement \"") && strstr(m, "does not exist")) return "26000";
      if (strstr(m, "prepared statement \"") && strstr(m, "already exists")) return "42P05";
      if (!strncmp(m, "SET ", 4)) return "22023"; /* invalid_parameter_value */
      if (!strncmp(m, "Parser Error", 12)) return "42601"; /* syntax_error */
      if (!strncmp(m, "Catalog Error", 13)) {
        if (strstr(m, "Table with name") || strstr(m, "does not exist")) return "42P01";
        if (strstr(m, "Function")) return "42883";
        return "42P01";
      }
      if (!strncmp(m, "Binder Error", 12))
        return strstr(m, "olumn") ? "42703" : "42883";
      if (!strncmp(m, "Conversion Error", 16)) return "22P02";
      if (!strncmp(m, "Out of Range Error", 18)) return "22003";
      if (!strncmp(m, "Invalid Input Error", 19)) return "22023";
      if (strstr(m, "one statement per query")) return "42601";
      return "42000";
    default: return "XX000";
  }
}
