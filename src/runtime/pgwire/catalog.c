/*
 * catalog.c - psql's describe commands over the PostgreSQL wire protocol
 * (runtime layer, pgwire; docs/PGWIRE.md "Catalog").
 *
 * psql's \dt, \d, \dv, \d NAME and \l send queries written for PostgreSQL's
 * own catalog (pg_class, pg_attribute, pg_get_userbyid, OPERATOR(pg_catalog.~),
 * ...), which DuckDB's pg_catalog schema only partly answers; and DuckDB
 * shows every dataset as a view in schema main, where a PostgreSQL client
 * looks for tables in public. So each such query is recognised by its text
 * and replaced by one over the config's relations that answers the columns
 * psql reads, in its order: datasets as tables (relkind 'r'), the config's
 * views as views ('v'), schema public, owner tidemark, a relation's oid
 * 16384 + its index in the config. A relation's columns come from DuckDB's
 * DESCRIBE of it. The footer queries of \d NAME (indexes, constraints,
 * policies, triggers, statistics, publications, inheritance) get an empty
 * answer: the relations have none of them. Any other query goes to DuckDB
 * unchanged (DuckDB's pg_catalog and information_schema answer what they can).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "runtime/pgwire/pgwire_int.h"
#include "util/alloc.h"

#define OID_BASE 16384

/* Appends s as a SQL string literal ('' doubled). */
static int put_literal(tm_buf *b, const char *s, size_t n, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '\'', err));
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\'') TM_TRY(tm_buf_putc(b, '\'', err));
    TM_TRY(tm_buf_putc(b, s[i], err));
  }
  return tm_buf_putc(b, '\'', err);
}

/* The relations as a VALUES list: rel(oid, relname, relkind). */
static int put_relations(tm_buf *b, tm_runtime *rt, tm_error *err) {
  const tm_config *cfg = rt->cfg;
  size_t n = cfg->n_datasets + cfg->n_views;
  TM_TRY(tm_buf_puts(b, "(SELECT * FROM (VALUES ", err));
  for (size_t i = 0; i < n; i++) {
    bool view = i >= cfg->n_datasets;
    const char *name = view ? cfg->views[i - cfg->n_datasets].name : cfg->datasets[i].name;
    TM_TRY(tm_buf_printf(b, err, "%s(%zu::BIGINT, ", i ? ", " : "", (size_t)OID_BASE + i));
    TM_TRY(put_literal(b, name, strlen(name), err));
    TM_TRY(tm_buf_puts(b, view ? ", 'v')" : ", 'r')", err));
  }
  if (n == 0) TM_TRY(tm_buf_puts(b, "(0::BIGINT, '', 'r')", err));
  TM_TRY(tm_buf_puts(b, ") AS t(oid, relname, relkind)", err));
  if (n == 0) TM_TRY(tm_buf_puts(b, " WHERE false", err));
  return tm_buf_puts(b, ") AS rel", err);
}

/* The text of the first '...' literal after marker in sql (NULL when none); *len its length. */
static const char *literal_after(const char *sql, const char *marker, size_t *len) {
  const char *p = strstr(sql, marker);
  if (!p) return NULL;
  p = strchr(p + strlen(marker), '\'');
  if (!p) return NULL;
  const char *e = p + 1;
  while (*e && !(*e == '\'' && e[1] != '\'')) e += *e == '\'' ? 2 : 1;
  if (!*e) return NULL;
  *len = (size_t)(e - p - 1);
  return p + 1;
}

/* AND the relation name matches psql's pattern, when the query has one. */
static int put_name_filter(tm_buf *b, const char *sql, tm_error *err) {
  size_t n;
  const char *pat = literal_after(sql, "c.relname OPERATOR(pg_catalog.~)", &n);
  if (!pat) return TM_OK;
  TM_TRY(tm_buf_puts(b, " AND regexp_matches(rel.relname, ", err));
  TM_TRY(tm_buf_append(b, "'", 1, err));
  TM_TRY(tm_buf_append(b, pat, n, err)); /* already a literal's text: quotes are doubled */
  return tm_buf_puts(b, "')", err);
}

/* The relation kinds the list asks for: c.relkind IN ('r','p','v',...). */
static int put_kind_filter(tm_buf *b, const char *sql, tm_error *err) {
  const char *p = strstr(sql, "c.relkind IN (");
  if (!p) return TM_OK;
  const char *e = strchr(p, ')');
  if (!e) return TM_OK;
  bool r = false, v = false;
  for (const char *q = p; q < e; q++) {
    if (q[0] == '\'' && q[1] == 'r' && q[2] == '\'') r = true;
    if (q[0] == '\'' && q[1] == 'v' && q[2] == '\'') v = true;
  }
  return tm_buf_printf(b, err, " AND rel.relkind IN ('%s', '%s')", r ? "r" : "-", v ? "v" : "-");
}

/* The oid in WHERE ... = '<oid>' after marker; 0 when none. */
static long oid_after(const char *sql, const char *marker) {
  size_t n;
  const char *lit = literal_after(sql, marker, &n);
  if (!lit || n == 0 || n > 10) return 0;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (lit[i] < '0' || lit[i] > '9') return 0;
    v = v * 10 + (lit[i] - '0');
  }
  return v;
}

/* Whether sql holds a literal '<digits>' at or above OID_BASE (a relation's oid). */
static bool names_oid(const char *sql) {
  for (const char *p = strchr(sql, '\''); p; p = strchr(p + 1, '\'')) {
    const char *q = p + 1;
    long v = 0;
    while (*q >= '0' && *q <= '9' && v < OID_BASE * 1000L) v = v * 10 + (*q++ - '0');
    if (*q == '\'' && q > p + 1 && v >= OID_BASE) return true;
  }
  return false;
}

/* The relation of an oid, or NULL. */
static const char *relation_of(tm_runtime *rt, long oid) {
  const tm_config *cfg = rt->cfg;
  if (oid < OID_BASE) return NULL;
  size_t i = (size_t)(oid - OID_BASE);
  if (i < cfg->n_datasets) return cfg->datasets[i].name;
  if (i - cfg->n_datasets < cfg->n_views) return cfg->views[i - cfg->n_datasets].name;
  return NULL;
}

/* DuckDB's type names (DESCRIBE's column_type) as PostgreSQL's format_type spells them. */
#define PG_TYPE_NAME                                                                          \
  "CASE WHEN column_type IN ('BIGINT', 'UINTEGER') THEN 'bigint' "                            \
  "WHEN column_type IN ('INTEGER', 'USMALLINT') THEN 'integer' "                              \
  "WHEN column_type IN ('SMALLINT', 'TINYINT', 'UTINYINT') THEN 'smallint' "                  \
  "WHEN column_type = 'DOUBLE' THEN 'double precision' WHEN column_type = 'FLOAT' THEN 'real' " \
  "WHEN column_type = 'BOOLEAN' THEN 'boolean' WHEN column_type = 'VARCHAR' THEN 'text' "      \
  "WHEN column_type = 'BLOB' THEN 'bytea' WHEN column_type = 'DATE' THEN 'date' "              \
  "WHEN column_type IN ('TIME', 'TIME_NS') THEN 'time without time zone' "                    \
  "WHEN column_type = 'TIME WITH TIME ZONE' THEN 'time with time zone' "                      \
  "WHEN column_type = 'TIMESTAMP WITH TIME ZONE' THEN 'timestamp with time zone' "            \
  "WHEN column_type LIKE 'TIMESTAMP%' THEN 'timestamp without time zone' "                    \
  "WHEN column_type LIKE 'DECIMAL(%' THEN 'numeric' || substr(column_type, 8) "               \
  "WHEN column_type IN ('HUGEINT', 'UHUGEINT', 'UBIGINT') THEN 'numeric' "                    \
  "WHEN column_type = 'UUID' THEN 'uuid' WHEN column_type = 'INTERVAL' THEN 'interval' "      \
  "WHEN column_type LIKE 'ENUM(%' THEN 'text' ELSE 'json' END"

/* The type OIDs tidemark sends (types.c) as PostgreSQL's format_type names them. */
#define PG_OID_NAME                                                                           \
  "CASE tp WHEN 16 THEN 'boolean' WHEN 20 THEN 'bigint' WHEN 21 THEN 'smallint' "             \
  "WHEN 23 THEN 'integer' WHEN 25 THEN 'text' WHEN 700 THEN 'real' "                          \
  "WHEN 701 THEN 'double precision' WHEN 1700 THEN 'numeric' WHEN 17 THEN 'bytea' "           \
  "WHEN 1082 THEN 'date' WHEN 1083 THEN 'time without time zone' "                            \
  "WHEN 1266 THEN 'time with time zone' WHEN 1114 THEN 'timestamp without time zone' "        \
  "WHEN 1184 THEN 'timestamp with time zone' WHEN 2950 THEN 'uuid' WHEN 1186 THEN 'interval' " \
  "WHEN 114 THEN 'json' ELSE 'unknown' END"

/* The description of relation (an SQL expression) as the config gives it (COMMENT ON VIEW). */
#define DESCRIPTION_OF(rel)                                                                    \
  "SELECT comment FROM duckdb_views() WHERE database_name = current_database() AND "            \
  "schema_name = 'main' AND view_name = " rel " LIMIT 1"

/* Appends sql with each `from` replaced by `to`. */
static int put_replaced(tm_buf *b, const char *sql, const char *from, const char *to,
                        tm_error *err) {
  size_t n = strlen(from);
  for (const char *p = sql;;) {
    const char *q = strstr(p, from);
    if (!q) return tm_buf_puts(b, p, err);
    TM_TRY(tm_buf_append(b, p, (size_t)(q - p), err));
    TM_TRY(tm_buf_puts(b, to, err));
    p = q + n;
  }
}

/* DuckDB's type names (column_type) as the type OIDs tidemark sends (types.c). */
#define PG_TYPE_OID                                                                           \
  "CASE WHEN column_type IN ('BIGINT', 'UINTEGER') THEN 20 "                                  \
  "WHEN column_type IN ('INTEGER', 'USMALLINT') THEN 23 "                                     \
  "WHEN column_type IN ('SMALLINT', 'TINYINT', 'UTINYINT') THEN 21 "                          \
  "WHEN column_type = 'DOUBLE' THEN 701 WHEN column_type = 'FLOAT' THEN 700 "                 \
  "WHEN column_type = 'BOOLEAN' THEN 16 WHEN column_type = 'VARCHAR' THEN 25 "                \
  "WHEN column_type = 'BLOB' THEN 17 WHEN column_type = 'DATE' THEN 1082 "                    \
  "WHEN column_type IN ('TIME', 'TIME_NS') THEN 1083 "                                        \
  "WHEN column_type = 'TIME WITH TIME ZONE' THEN 1266 "                                       \
  "WHEN column_type = 'TIMESTAMP WITH TIME ZONE' THEN 1184 "                                  \
  "WHEN column_type LIKE 'TIMESTAMP%' THEN 1114 "                                             \
  "WHEN column_type LIKE 'DECIMAL(%' OR column_type IN ('HUGEINT', 'UHUGEINT', 'UBIGINT') "    \
  "THEN 1700 WHEN column_type = 'UUID' THEN 2950 WHEN column_type = 'INTERVAL' THEN 1186 "     \
  "WHEN column_type LIKE 'ENUM(%' THEN 25 ELSE 114 END"

/* pg_type's rows for those OIDs: oid, typname, typlen, typcategory. */
#define PG_TYPE_ROWS                                                                          \
  "(16, 'bool', 1, 'B'), (17, 'bytea', -1, 'U'), (20, 'int8', 8, 'N'), (21, 'int2', 2, 'N'), " \
  "(23, 'int4', 4, 'N'), (25, 'text', -1, 'S'), (114, 'json', -1, 'U'), "                    \
  "(700, 'float4', 4, 'N'), (701, 'float8', 8, 'N'), (1082, 'date', 4, 'D'), "                \
  "(1083, 'time', 8, 'D'), (1114, 'timestamp', 8, 'D'), (1184, 'timestamptz', 8, 'D'), "      \
  "(1186, 'interval', 16, 'T'), (1266, 'timetz', 12, 'D'), (1700, 'numeric', -1, 'N'), "      \
  "(2950, 'uuid', 16, 'U')"

#define NS_PUBLIC 2200   /* pg_namespace.oid of public, as in PostgreSQL */
#define PG_CLASS_OID 1259 /* 'pg_class'::regclass */

/* Appends the columns of every relation as pg_attribute's rows (DuckDB's duckdb_columns()). */
static int put_attributes(tm_buf *b, tm_runtime *rt, tm_error *err) {
  TM_TRY(tm_buf_puts(b, "(SELECT rel.oid AS attrelid, k.column_name AS attname, "
                        "k.column_index::SMALLINT AS attnum, (" PG_TYPE_OID ")::BIGINT AS atttypid, "
                        "-1 AS atttypmod, NOT k.is_nullable AS attnotnull, false AS attisdropped, "
                        "false AS atthasdef, '' AS attidentity, '' AS attgenerated, -1 AS attlen, "
                        "0 AS attndims, 0 AS attcollation, k.comment AS attdescription, "
                        "CASE WHEN column_type LIKE 'DECIMAL(%' THEN column_type END AS decl FROM ", err));
  TM_TRY(put_relations(b, rt, err));
  return tm_buf_puts(b, " JOIN (SELECT column_name, data_type AS column_type, is_nullable, comment, "
                        "column_index, table_name FROM duckdb_columns() WHERE database_name = "
                        "current_database() AND schema_name = 'main') AS k ON k.table_name = "
                        "rel.relname)", err);
}

/*
 * Catalog queries of other clients (JDBC's DatabaseMetaData, Grafana's query
 * builder, ...): the PostgreSQL catalog relations they name are replaced by
 * subqueries over the config's relations with PostgreSQL's column names and
 * OIDs — pg_namespace (public), pg_class (datasets 'r', views 'v'),
 * pg_attribute (duckdb_columns()), pg_type (the OIDs tidemark sends),
 * pg_description (the config's descriptions) — and the rest of the query is
 * DuckDB's to answer. Only these exact spellings with an alias are replaced.
 */
static int put_emulated(tm_buf *out, tm_runtime *rt, const char *sql, tm_error *err) {
  tm_buf rel = TM_BUF_INIT((size_t)64 << 20), attr = TM_BUF_INIT((size_t)64 << 20);
  tm_buf x = TM_BUF_INIT((size_t)64 << 20), y = TM_BUF_INIT((size_t)64 << 20);
  int rc = put_relations(&rel, rt, err);
  if (rc == TM_OK) rc = put_attributes(&attr, rt, err);
  struct {
    const char *from, *to1, *to2;
  } subst[] = {
      {"pg_catalog.pg_namespace ", "(SELECT 2200::BIGINT AS oid, 'public' AS nspname, 10 AS nspowner) ", NULL},
      {"pg_catalog.pg_class ", "(SELECT rel.oid, rel.relname, rel.relkind, 2200::BIGINT AS relnamespace, "
       "10 AS relowner, 0 AS reltuples, false AS relhasindex, 'p' AS relpersistence, 0 AS relam, "
       "0 AS reltoastrelid, false AS relispartition FROM ", ") "},
      {"pg_catalog.pg_attribute ", "", " "},
      {"pg_catalog.pg_type ", "(SELECT oid::BIGINT AS oid, typname, typlen, typcategory, 11::BIGINT AS "
       "typnamespace, 'b' AS typtype, 0::BIGINT AS typbasetype, -1 AS typtypmod, false AS typnotnull, "
       "0::BIGINT AS typrelid, 0::BIGINT AS typelem, 0 AS typcollation FROM (VALUES " PG_TYPE_ROWS
       ") AS v(oid, typname, typlen, typcategory)) ", NULL},
      {"pg_catalog.pg_description ", "(SELECT rel.oid AS objoid, 1259::BIGINT AS classoid, 0 AS objsubid, "
       "(" DESCRIPTION_OF("rel.relname") ") AS description FROM ", NULL},
      {"'pg_class'::regclass", "1259", NULL},
      {"'pg_catalog.pg_class'::regclass", "1259", NULL},
  };
  const char *cur = sql;
  tm_buf *dst = &x;
  for (size_t i = 0; rc == TM_OK && i < sizeof subst / sizeof subst[0]; i++) {
    if (!strstr(cur, subst[i].from)) continue;
    tm_buf to = TM_BUF_INIT((size_t)64 << 20);
    if (i == 1) {
      rc = tm_buf_puts(&to, subst[i].to1, err);
      if (rc == TM_OK) rc = tm_buf_append(&to, rel.ptr, rel.len, err);
      if (rc == TM_OK) rc = tm_buf_puts(&to, subst[i].to2, err);
    } else if (i == 2) {
      rc = tm_buf_append(&to, attr.ptr, attr.len, err);
      if (rc == TM_OK) rc = tm_buf_puts(&to, " ", err);
    } else if (i == 4) {
      rc = tm_buf_puts(&to, subst[i].to1, err);
      if (rc == TM_OK) rc = tm_buf_append(&to, rel.ptr, rel.len, err);
      /* and the columns' descriptions, objsubid their number */
      if (rc == TM_OK) rc = tm_buf_puts(&to, " UNION ALL SELECT attrelid, 1259, attnum, attdescription FROM ", err);
      if (rc == TM_OK) rc = tm_buf_append(&to, attr.ptr, attr.len, err);
      if (rc == TM_OK) rc = tm_buf_puts(&to, " AS a WHERE attdescription IS NOT NULL) ", err);
    } else {
      rc = tm_buf_puts(&to, subst[i].to1, err);
    }
    tm_buf_clear(dst);
    if (rc == TM_OK) rc = put_replaced(dst, cur, subst[i].from, tm_buf_cstr(&to), err);
    tm_buf_dispose(&to);
    cur = tm_buf_cstr(dst);
    dst = dst == &x ? &y : &x;
  }
  if (rc == TM_OK) rc = tm_buf_puts(out, cur, err);
  tm_buf_dispose(&rel);
  tm_buf_dispose(&attr);
  tm_buf_dispose(&x);
  tm_buf_dispose(&y);
  return rc;
}

/* Footer queries of \d NAME: the catalogs of things the relations never have. */
static const char *const k_empty_catalogs[] = {
    "pg_catalog.pg_index",     "pg_catalog.pg_constraint", "pg_catalog.pg_policy",
    "pg_catalog.pg_trigger",   "pg_catalog.pg_statistic_ext", "pg_catalog.pg_publication",
    "pg_catalog.pg_inherits",  "pg_catalog.pg_rewrite",    "pg_catalog.pg_partitioned_table",
    NULL};

/* The end of the parenthesized text that starts at open ('('), or NULL; quotes skipped. */
static const char *close_paren(const char *open) {
  int depth = 0;
  for (const char *p = open; *p; p++) {
    if (*p == '\'' || *p == '"') {
      char q = *p;
      for (p++; *p && *p != q; p++) {
      }
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
 * What PostgreSQL clients ask of the server's settings and catalog in
 * functions DuckDB does not have or the gate refuses (current_setting reads
 * the server's settings, D4), as constants and DuckDB functions, in their
 * exact spellings (Grafana's query builder, postgresMetaQuery.ts):
 *   current_setting('server_version_num') -> '150000'
 *   current_setting('search_path')        -> '"$user", public'
 *   ... IN (SELECT ... the search path's schemas ...) -> IN ('public')
 *   quote_ident(x)                        -> (x) (the names need no quotes
 *                                            when they are plain identifiers)
 *   parse_ident('a.b')                    -> string_split('a.b', '.')
 *   pg_extension, information_schema.schemata/.tables/.columns -> the
 *   config's relations in schema public.
 * *out is NULL when nothing was replaced.
 */
static int put_settings(tm_runtime *rt, const char *sql, char **out, tm_error *err) {
  *out = NULL;
  if (!strstr(sql, "current_setting('") && !strstr(sql, "quote_ident(") &&
      !strstr(sql, "parse_ident('") && !strstr(sql, "information_schema.") &&
      !strstr(sql, "pg_extension"))
    return TM_OK;
  tm_buf b = TM_BUF_INIT((size_t)64 << 20);
  tm_buf rel = TM_BUF_INIT((size_t)64 << 20);
  int rc = put_relations(&rel, rt, err);
  const char *p = sql;
  while (rc == TM_OK && *p) {
    const char *e;
    if (*p == '\'') { /* a string literal stays as it is */
      e = p + 1;
      while (*e && !(*e == '\'' && e[1] != '\'')) e += *e == '\'' ? 2 : 1;
      if (*e) e++;
      rc = tm_buf_append(&b, p, (size_t)(e - p), err);
      p = e;
    } else if (!strncmp(p, "IN (", 4) && (e = close_paren(p + 3)) != NULL &&
        memmem(p, (size_t)(e - p), "current_setting('search_path')", 30) &&
        memmem(p, (size_t)(e - p), "generate_series", 15)) {
      rc = tm_buf_puts(&b, "IN ('public')", err);
      p = e + 1;
    } else if (!strncmp(p, "current_setting('server_version_num')", 37)) {
      rc = tm_buf_puts(&b, "'150000'", err);
      p += 37;
    } else if (!strncmp(p, "current_setting('search_path')", 30)) {
      rc = tm_buf_puts(&b, "'\"$user\", public'", err);
      p += 30;
    } else if (!strncmp(p, "quote_ident(", 12) && (p == sql || !isalnum((unsigned char)p[-1]))) {
      rc = tm_buf_putc(&b, '(', err);
      p += 12;
    } else if (!strncmp(p, "parse_ident('", 13) && (e = strstr(p + 13, "')")) != NULL &&
               !memchr(p + 13, '\'', (size_t)(e - p - 13))) {
      rc = tm_buf_puts(&b, "string_split('", err);
      if (rc == TM_OK) rc = tm_buf_append(&b, p + 13, (size_t)(e - p - 13), err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, "', '.')", err);
      p = e + 2;
    } else if (!strncmp(p, "pg_extension ", 13) || !strncmp(p, "pg_catalog.pg_extension ", 24)) {
      rc = tm_buf_puts(&b, "(SELECT NULL::VARCHAR AS extname, NULL::VARCHAR AS extversion WHERE "
                       "false) ", err);
      p += p[0] == 'p' && p[3] == 'e' ? 13 : 24;
    } else if (!strncmp(p, "information_schema.schemata", 27)) {
      rc = tm_buf_puts(&b, "(SELECT 'tidemark' AS catalog_name, 'public' AS schema_name, 'tidemark' "
                       "AS schema_owner)", err);
      p += 27;
    } else if (!strncmp(p, "information_schema.tables", 25)) {
      rc = tm_buf_puts(&b, "(SELECT 'tidemark' AS table_catalog, 'public' AS table_schema, rel.relname "
                       "AS table_name, CASE rel.relkind WHEN 'r' THEN 'BASE TABLE' ELSE 'VIEW' END AS "
                       "table_type FROM ", err);
      if (rc == TM_OK) rc = tm_buf_append(&b, rel.ptr, rel.len, err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, ")", err);
      p += 25;
    } else if (!strncmp(p, "information_schema.columns", 26)) {
      rc = tm_buf_puts(&b, "(SELECT 'tidemark' AS table_catalog, 'public' AS table_schema, table_name, "
                       "column_name, column_index AS ordinal_position, " PG_TYPE_NAME " AS data_type, "
                       "CASE WHEN is_nullable THEN 'YES' ELSE 'NO' END AS is_nullable, NULL::VARCHAR AS "
                       "column_default FROM (SELECT table_name, column_name, column_index, data_type AS "
                       "column_type, is_nullable FROM duckdb_columns() WHERE database_name = "
                       "current_database() AND schema_name = 'main') WHERE table_name IN (SELECT relname "
                       "FROM ", err);
      if (rc == TM_OK) rc = tm_buf_append(&b, rel.ptr, rel.len, err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, "))", err);
      p += 26;
    } else {
      rc = tm_buf_putc(&b, *p++, err);
    }
  }
  tm_buf_dispose(&rel);
  if (rc == TM_OK && !(*out = tm_buf_take(&b, NULL))) rc = tm_error_nomem(err);
  tm_buf_dispose(&b);
  return rc;
}

int tm_pg__rewrite(tm_runtime *rt, const char *sql, char **out, tm_error *err) {
  char *pre = NULL;
  TM_TRY(put_settings(rt, sql, &pre, err));
  if (pre) sql = pre;
  tm_buf b = TM_BUF_INIT((size_t)64 << 20);
  int rc = TM_OK;
  bool done = false;
  if (!strstr(sql, "pg_catalog.")) {
    /* not a catalog query */
  } else if (strstr(sql, "as \"Owner\"") && strstr(sql, "FROM pg_catalog.pg_class c")) {
    /* \dt, \dv, \d: the relation list. */
    rc = tm_buf_puts(&b, "SELECT 'public' AS \"Schema\", rel.relname AS \"Name\", CASE rel.relkind "
                     "WHEN 'r' THEN 'table' ELSE 'view' END AS \"Type\", 'tidemark' AS \"Owner\"", err);
    if (rc == TM_OK && strstr(sql, "as \"Table\"")) /* \di: an index's table (there are none) */
      rc = tm_buf_puts(&b, ", NULL::VARCHAR AS \"Table\"", err);
    if (rc == TM_OK && strstr(sql, "as \"Persistence\"") && strstr(sql, "as \"Access method\""))
      rc = tm_buf_puts(&b, ", 'permanent' AS \"Persistence\", NULL::VARCHAR AS \"Access method\"", err);
    else if (rc == TM_OK && strstr(sql, "as \"Persistence\""))
      rc = tm_buf_puts(&b, ", 'permanent' AS \"Persistence\"", err);
    if (rc == TM_OK && strstr(sql, "as \"Size\""))
      rc = tm_buf_puts(&b, ", NULL::VARCHAR AS \"Size\"", err);
    if (rc == TM_OK && strstr(sql, "as \"Description\""))
      rc = tm_buf_puts(&b, ", (" DESCRIPTION_OF("rel.relname") ") AS \"Description\"", err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " FROM ", err);
    if (rc == TM_OK) rc = put_relations(&b, rt, err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " WHERE true", err);
    if (rc == TM_OK) rc = put_kind_filter(&b, sql, err);
    if (rc == TM_OK) rc = put_name_filter(&b, sql, err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " ORDER BY 1, 2", err);
    done = true;
  } else if (!strncmp(sql, "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c", 64)) {
    /* \d NAME, first step: the relations the pattern names. */
    rc = tm_buf_puts(&b, "SELECT rel.oid, 'public' AS nspname, rel.relname FROM ", err);
    if (rc == TM_OK) rc = put_relations(&b, rt, err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " WHERE true", err);
    if (rc == TM_OK) rc = put_name_filter(&b, sql, err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " ORDER BY 2, 3", err);
    done = true;
  } else if (strstr(sql, "c.relchecks, c.relkind, c.relhasindex")) {
    /* \d NAME, second step: the relation's flags. */
    const char *name = relation_of(rt, oid_after(sql, "WHERE c.oid ="));
    long oid = oid_after(sql, "WHERE c.oid =");
    rc = tm_buf_printf(&b, err,
                       "SELECT 0 AS relchecks, %s AS relkind, false AS relhasindex, false AS "
                       "relhasrules, false AS relhastriggers, false AS relrowsecurity, false AS "
                       "relforcerowsecurity, false AS relhasoids, false AS relispartition, '' AS "
                       "reloptions, 0 AS reltablespace, '' AS reloftype, 'p' AS relpersistence, "
                       "'d' AS relreplident, NULL::VARCHAR AS amname%s",
                       oid >= OID_BASE && (size_t)(oid - OID_BASE) >= rt->cfg->n_datasets ? "'v'" : "'r'",
                       name ? "" : " WHERE false");
    done = true;
  } else if (strstr(sql, "FROM pg_catalog.pg_attribute a") && strstr(sql, "a.attrelid =")) {
    /* \d NAME, third step: the columns, from DuckDB's DESCRIBE of the relation. */
    const char *name = relation_of(rt, oid_after(sql, "a.attrelid ="));
    if (!name) {
      rc = tm_buf_puts(&b, "SELECT NULL AS attname WHERE false", err);
    } else {
      rc = tm_buf_puts(&b, "SELECT column_name AS attname, " PG_TYPE_NAME " AS format_type, "
                       "NULL::VARCHAR AS attrdef, NOT is_nullable AS attnotnull, NULL::VARCHAR AS "
                       "attcollation, '' AS attidentity, '' AS attgenerated", err);
      /* \d+ NAME: storage (PostgreSQL's default for the type), compression, statistics target
       * and the column's description (the config's `columns:` descriptions). */
      if (rc == TM_OK && strstr(sql, "a.attstorage"))
        rc = tm_buf_puts(&b, ", CASE WHEN column_type IN ('VARCHAR', 'BLOB') OR " PG_TYPE_NAME " IN "
                         "('json', 'numeric') OR column_type LIKE 'DECIMAL(%' THEN 'x' ELSE 'p' END "
                         "AS attstorage", err);
      if (rc == TM_OK && strstr(sql, "a.attcompression"))
        rc = tm_buf_puts(&b, ", '' AS attcompression", err);
      if (rc == TM_OK && strstr(sql, "attstattarget"))
        rc = tm_buf_puts(&b, ", NULL::INTEGER AS attstattarget", err);
      if (rc == TM_OK && strstr(sql, "pg_catalog.col_description(a.attrelid, a.attnum)"))
        rc = tm_buf_puts(&b, ", comment AS col_description", err);
      if (rc == TM_OK)
        rc = tm_buf_puts(&b, " FROM (SELECT column_name, data_type AS column_type, is_nullable, comment, "
                         "column_index FROM duckdb_columns() WHERE database_name = current_database() "
                         "AND schema_name = 'main' AND table_name = ", err);
      if (rc == TM_OK) rc = put_literal(&b, name, strlen(name), err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, ") ORDER BY column_index", err);
    }
    done = true;
  } else if (strstr(sql, "pg_catalog.format_type(tp, tpm)") && strstr(sql, "s(name, tp, tpm)")) {
    /* \gdesc: the columns psql described, their type OIDs named. */
    tm_buf t = TM_BUF_INIT((size_t)64 << 20);
    rc = put_replaced(&t, sql, "pg_catalog.format_type(tp, tpm)", PG_OID_NAME, err);
    if (rc == TM_OK) rc = put_replaced(&b, tm_buf_cstr(&t), "::pg_catalog.oid", "::INTEGER", err);
    tm_buf_dispose(&t);
    done = true;
  } else if (strstr(sql, "FROM pg_catalog.pg_namespace n") && strstr(sql, "n.nspname AS \"Name\"")) {
    /* \dn [PATTERN], \dn+: one schema, public. */
    rc = tm_buf_puts(&b, "SELECT * FROM (SELECT 'public' AS \"Name\", 'tidemark' AS \"Owner\"", err);
    if (rc == TM_OK && strstr(sql, "AS \"Access privileges\""))
      rc = tm_buf_puts(&b, ", NULL::VARCHAR AS \"Access privileges\"", err);
    if (rc == TM_OK && strstr(sql, "AS \"Description\""))
      rc = tm_buf_puts(&b, ", 'the datasets and views of the config' AS \"Description\"", err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, ") AS n WHERE true", err);
    size_t n;
    const char *pat = literal_after(sql, "n.nspname OPERATOR(pg_catalog.~)", &n);
    if (rc == TM_OK && pat) {
      rc = tm_buf_puts(&b, " AND regexp_matches(n.\"Name\", '", err);
      if (rc == TM_OK) rc = tm_buf_append(&b, pat, n, err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, "')", err);
    }
    done = true;
  } else if (strstr(sql, "FROM pg_catalog.pg_publication p") && strstr(sql, "pn.pnnspid")) {
    /* \dn PATTERN, its footer: the schema's publications (none). */
    rc = tm_buf_puts(&b, "SELECT NULL::VARCHAR AS pubname WHERE false", err);
    done = true;
  } else if (strstr(sql, "FROM pg_catalog.pg_proc p") && strstr(sql, "as \"Result data type\"")) {
    /* \df [PATTERN]: tidemark has no user-defined functions; the list is empty. */
    rc = tm_buf_puts(&b, "SELECT NULL::VARCHAR AS \"Schema\", NULL::VARCHAR AS \"Name\", NULL::VARCHAR AS "
                     "\"Result data type\", NULL::VARCHAR AS \"Argument data types\", NULL::VARCHAR AS "
                     "\"Type\"", err);
    static const char *const extra[] = {"Volatility", "Parallel", "Owner", "Security",
                                        "Access privileges", "Language", "Source code",
                                        "Internal name", "Description", NULL};
    for (size_t i = 0; rc == TM_OK && extra[i]; i++) {
      char marker[48];
      snprintf(marker, sizeof marker, "as \"%s\"", extra[i]);
      if (strstr(sql, marker)) rc = tm_buf_printf(&b, err, ", NULL::VARCHAR AS \"%s\"", extra[i]);
    }
    if (rc == TM_OK) rc = tm_buf_puts(&b, " WHERE false", err);
    done = true;
  } else if (strstr(sql, "pg_catalog.pg_get_viewdef(") && names_oid(sql)) {
    /* \d+ VIEW: its definition, as the config gives it. */
    const char *name = relation_of(rt, oid_after(sql, "pg_get_viewdef("));
    const tm_config *cfg = rt->cfg;
    const char *def = NULL;
    for (size_t i = 0; name && i < cfg->n_views && !def; i++)
      if (!strcmp(cfg->views[i].name, name)) def = cfg->views[i].sql;
    rc = tm_buf_puts(&b, "SELECT ", err);
    if (rc == TM_OK && def) rc = put_literal(&b, def, strlen(def), err);
    else if (rc == TM_OK) rc = tm_buf_puts(&b, "NULL::VARCHAR", err);
    if (rc == TM_OK) rc = tm_buf_puts(&b, " AS pg_get_viewdef", err);
    done = true;
  } else if (strstr(sql, "d.datname as \"Name\"") && strstr(sql, "FROM pg_catalog.pg_database d")) {
    /* \l: one database. */
    rc = tm_buf_puts(&b, "SELECT 'tidemark' AS \"Name\", 'tidemark' AS \"Owner\", 'UTF8' AS "
                     "\"Encoding\", 'C' AS \"Collate\", 'C' AS \"Ctype\", NULL::VARCHAR AS \"ICU "
                     "Locale\", 'libc' AS \"Locale Provider\", NULL::VARCHAR AS \"Access "
                     "privileges\"", err);
    done = true;
  } else {
    for (size_t i = 0; k_empty_catalogs[i] && !done; i++)
      if (strstr(sql, k_empty_catalogs[i]) && names_oid(sql)) {
        rc = tm_buf_puts(&b, "SELECT NULL AS none WHERE false", err);
        done = true;
      }
  }
  if (rc == TM_OK && !done && strstr(sql, "pg_catalog.pg_")) rc = put_emulated(&b, rt, sql, err);
  else if (rc == TM_OK && !done) rc = tm_buf_puts(&b, sql, err);
  tm_free(pre);
  if (rc != TM_OK) {
    tm_buf_dispose(&b);
    return rc;
  }
  *out = tm_buf_take(&b, NULL);
  return *out ? TM_OK : tm_error_nomem(err);
}
