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

/* Appends name as a quoted identifier. */
static int put_ident(tm_buf *b, const char *name, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const char *p = name; *p; p++) {
    if (*p == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, *p, err));
  }
  return tm_buf_putc(b, '"', err);
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

/* Footer queries of \d NAME: the catalogs of things the relations never have. */
static const char *const k_empty_catalogs[] = {
    "pg_catalog.pg_index",     "pg_catalog.pg_constraint", "pg_catalog.pg_policy",
    "pg_catalog.pg_trigger",   "pg_catalog.pg_statistic_ext", "pg_catalog.pg_publication",
    "pg_catalog.pg_inherits",  "pg_catalog.pg_rewrite",    "pg_catalog.pg_partitioned_table",
    NULL};

int tm_pg__rewrite(tm_runtime *rt, const char *sql, char **out, tm_error *err) {
  tm_buf b = TM_BUF_INIT((size_t)64 << 20);
  int rc = TM_OK;
  bool done = false;
  if (!strstr(sql, "pg_catalog.")) {
    /* not a catalog query */
  } else if (strstr(sql, "as \"Owner\"") && strstr(sql, "FROM pg_catalog.pg_class c")) {
    /* \dt, \dv, \d: the relation list. */
    rc = tm_buf_puts(&b, "SELECT 'public' AS \"Schema\", rel.relname AS \"Name\", CASE rel.relkind "
                     "WHEN 'r' THEN 'table' ELSE 'view' END AS \"Type\", 'tidemark' AS \"Owner\" FROM ",
                     err);
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
                       "NULL::VARCHAR AS attrdef, \"null\" = 'NO' AS attnotnull, NULL::VARCHAR AS "
                       "attcollation, '' AS attidentity, '' AS attgenerated FROM (DESCRIBE ", err);
      if (rc == TM_OK) rc = put_ident(&b, name, err);
      if (rc == TM_OK) rc = tm_buf_puts(&b, ")", err);
    }
    done = true;
  } else if (strstr(sql, "pg_catalog.format_type(tp, tpm)") && strstr(sql, "s(name, tp, tpm)")) {
    /* \gdesc: the columns psql described, their type OIDs named. */
    tm_buf t = TM_BUF_INIT((size_t)64 << 20);
    rc = put_replaced(&t, sql, "pg_catalog.format_type(tp, tpm)", PG_OID_NAME, err);
    if (rc == TM_OK) rc = put_replaced(&b, tm_buf_cstr(&t), "::pg_catalog.oid", "::INTEGER", err);
    tm_buf_dispose(&t);
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
  if (rc == TM_OK && !done) rc = tm_buf_puts(&b, sql, err);
  if (rc != TM_OK) {
    tm_buf_dispose(&b);
    return rc;
  }
  *out = tm_buf_take(&b, NULL);
  return *out ? TM_OK : tm_error_nomem(err);
}
