/*
 * session.c - SQL sessions over the catalog of accelerations (engine layer).
 * See sql.h.
 *
 * A session is one in-memory SQLite connection. Before each statement it
 * brings its tables in line with the catalog: a "tidemark" virtual table in
 * the temp schema per columnar dataset, an ATTACH (read-only URI) per sqlite
 * dataset. SQLite allows 10 attached databases; beyond that a query that
 * names a detached sqlite dataset attaches it in place of the least recently
 * used one and is prepared again.
 *
 * Statements from outside pass the read-only authorizer at prepare time
 * (SPEC D4). Each statement gets a new generation number: columnar tables
 * pin their snapshot once per generation, when the statement is planned, and
 * are unpinned when the statement is freed (SPEC C5).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/sql/sql_int.h"
#include "engine/sqlsource.h"
#include "util/alloc.h"

#define MAX_ATTACHED 10

/* ---- catalog ---------------------------------------------------------------------- */

typedef struct cat_item {
  char *name;       /* owned */
  tm_engine *engine; /* one reference; NULL for a federated dataset */
  tm_source_spec *source; /* owned: a federated dataset's source (C6), or NULL */
} cat_item;

static void source_free(tm_source_spec *s) {
  if (!s) return;
  tm_source_spec_dispose(s);
  tm_free(s);
}

static tm_source_spec *source_copy(const tm_source_spec *from) {
  tm_source_spec *c = tm_calloc(1, sizeof *c);
  if (!c) return NULL;
  tm_source_options o;
  tm_source_spec_options(from, &o);
  if (tm_source_spec_init(c, &o, NULL) != TM_OK) {
    source_free(c);
    return NULL;
  }
  return c;
}

struct tm_sql_catalog {
  pthread_mutex_t mu;
  cat_item *items;
  size_t n, cap;
  uint64_t version; /* bumped by every change */
};

int tm_sql_catalog_new(tm_sql_catalog **out, tm_error *err) {
  tm_sql_catalog *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  pthread_mutex_init(&c->mu, NULL);
  c->version = 1;
  *out = c;
  return TM_OK;
}

void tm_sql_catalog_free(tm_sql_catalog *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n; i++) {
    tm_free(c->items[i].name);
    tm_engine_release(c->items[i].engine);
    source_free(c->items[i].source);
  }
  tm_free(c->items);
  pthread_mutex_destroy(&c->mu);
  tm_free(c);
}

/* Lists an engine's dataset, or a federated one (e NULL, spec given and taken). */
static int add_item(tm_sql_catalog *c, const char *name, tm_engine *e, tm_source_spec *spec,
                    tm_error *err) {
  int rc = TM_OK;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++)
    if (strcasecmp(c->items[i].name, name) == 0) {
      rc = tm_error_set(err, TM_ECONFLICT, "a dataset named '%s' is already listed", name);
      goto done;
    }
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    cat_item *items = tm_reallocarray(c->items, cap, sizeof *items);
    if (!items) {
      rc = tm_error_nomem(err);
      goto done;
    }
    c->items = items;
    c->cap = cap;
  }
  char *copy = tm_strdup(name);
  if (!copy) {
    rc = tm_error_nomem(err);
    goto done;
  }
  c->items[c->n].name = copy;
  c->items[c->n].engine = e ? tm_engine_retain(e) : NULL;
  c->items[c->n].source = spec;
  spec = NULL;
  c->n++;
  c->version++;
done:
  pthread_mutex_unlock(&c->mu);
  source_free(spec);
  return rc;
}

int tm_sql_catalog_add(tm_sql_catalog *c, tm_engine *e, tm_error *err) {
  return add_item(c, tm_engine_dataset(e), e, NULL, err);
}

int tm_sql_catalog_add_source(tm_sql_catalog *c, const tm_source_options *opts, tm_error *err) {
  tm_source_spec *spec = tm_calloc(1, sizeof *spec);
  if (!spec) return tm_error_nomem(err);
  int rc = tm_source_spec_init(spec, opts, err);
  if (rc < 0) {
    source_free(spec);
    return rc;
  }
  return add_item(c, opts->name, NULL, spec, err);
}

int tm_sql_catalog_remove(tm_sql_catalog *c, const char *name, tm_error *err) {
  tm_engine *gone = NULL;
  tm_source_spec *gone_src = NULL;
  bool found = false;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->n; i++)
    if (strcasecmp(c->items[i].name, name) == 0) {
      gone = c->items[i].engine;
      gone_src = c->items[i].source;
      tm_free(c->items[i].name);
      c->items[i] = c->items[--c->n];
      c->version++;
      found = true;
      break;
    }
  pthread_mutex_unlock(&c->mu);
  if (!found) return tm_error_set(err, TM_ENOTFOUND, "no dataset named '%s'", name);
  tm_engine_release(gone);
  source_free(gone_src);
  return TM_OK;
}

/* ---- sessions ------------------------------------------------------------------------- */

typedef struct sess_item {
  char *name;       /* owned */
  tm_engine *engine; /* one reference; NULL for a federated dataset */
  tm_source_spec *source; /* owned copy for a federated dataset (C6) */
  bool columnar;    /* a virtual table (columnar engines and federated sources) */
  bool ready;       /* the vtab exists / the database is attached */
  char alias[32];   /* sqlite: the attach name */
  uint64_t used;    /* LRU clock of the last query that needed it */
  char *error;      /* owned: why the table could not be set up */
} sess_item;

struct tm_sql_session {
  tm_sql_catalog *cat;
  sqlite3 *db;
  tm_vtab_host host;
  uint64_t cat_version;
  sess_item *items;
  size_t n, cap;
  int n_attached;
  uint64_t clock;
  unsigned alias_seq;
  tm_sql_stmt *open;    /* the statement in progress */
  int64_t timeout_ms;
  int64_t deadline_ns;
  bool timed_out;
  int interrupted;      /* atomic */
};

struct tm_sql_stmt {
  tm_sql_session *s;
  sqlite3_stmt *st;
  tm_sqlrender_spec *render; /* per column */
  size_t n_cols;
};

static int lookup_source(void *payload, const char *name, tm_source_options *out);

static int progress(void *payload) {
  tm_sql_session *s = payload;
  if (s->deadline_ns && tm_monotonic_ns() > s->deadline_ns) {
    s->timed_out = true;
    return 1;
  }
  return 0;
}

int tm_sql_session_new(tm_sql_session **out, tm_sql_catalog *c, tm_error *err) {
  tm_engine__sqlite_setup();
  tm_sql_session *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->cat = c;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  if (sqlite3_open_v2(":memory:", &s->db, flags, NULL) != SQLITE_OK) {
    sqlite3_close(s->db);
    tm_free(s);
    return tm_error_nomem(err);
  }
  sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_busy_timeout(s->db, 5000);
  sqlite3_progress_handler(s->db, 4096, progress, s);
  sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, TM_SQL_VALUE_MAX);
  int rc = tm_sql__vtab_register(s->db, &s->host, err);
  if (rc == TM_OK) rc = tm_sqlsource_register_federated(s->db, lookup_source, s, err);
  if (rc < 0) {
    sqlite3_close(s->db);
    tm_free(s);
    return rc;
  }
  *out = s;
  return TM_OK;
}

static void item_dispose(sess_item *it) {
  tm_free(it->name);
  tm_free(it->error);
  tm_engine_release(it->engine);
  source_free(it->source);
}

/* The federated module's lookup: a session item's source options. */
static int lookup_source(void *payload, const char *name, tm_source_options *out) {
  tm_sql_session *s = payload;
  for (size_t i = 0; i < s->n; i++)
    if (s->items[i].source && strcmp(s->items[i].name, name) == 0) {
      tm_source_spec_options(s->items[i].source, out);
      return TM_OK;
    }
  return TM_ENOTFOUND;
}

void tm_sql_session_free(tm_sql_session *s) {
  if (!s) return;
  if (s->open) tm_sql_stmt_free(s->open);
  tm_sql__vtab_unpin_all(&s->host);
  sqlite3_close(s->db); /* disconnects the virtual tables (their engine references) */
  for (size_t i = 0; i < s->n; i++) item_dispose(&s->items[i]);
  tm_free(s->items);
  tm_free(s);
}

void tm_sql_session_set_timeout(tm_sql_session *s, int64_t ms) { s->timeout_ms = ms; }

void tm_sql_session_set_value_limit(tm_sql_session *s, int bytes) {
  if (bytes < 1024) bytes = 1024;
  if (bytes > TM_SQL_VALUE_MAX) bytes = TM_SQL_VALUE_MAX;
  sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, bytes);
}

void tm_sql_session_interrupt(tm_sql_session *s) {
  __atomic_store_n(&s->interrupted, 1, __ATOMIC_RELEASE);
  sqlite3_interrupt(s->db);
}

tm_sql_scan_stats tm_sql_session_scan_stats(tm_sql_session *s, bool reset) {
  tm_sql_scan_stats st = s->host.stats;
  if (reset) memset(&s->host.stats, 0, sizeof s->host.stats);
  return st;
}

static int quote_ident(tm_buf *b, const char *name, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const char *p = name; *p; p++) {
    if (*p == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, *p, err));
  }
  return tm_buf_putc(b, '"', err);
}

/* Creates the virtual table of a columnar or federated dataset. */
static int create_vtab(tm_sql_session *s, sess_item *it, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = tm_buf_puts(&sql, "CREATE VIRTUAL TABLE temp.", err);
  if (rc == TM_OK) rc = quote_ident(&sql, it->name, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, it->source ? " USING tm_source" : " USING tidemark", err);
  if (rc == TM_OK) {
    s->host.creating = it->engine;
    if (sqlite3_exec(s->db, sql.ptr, NULL, NULL, NULL) != SQLITE_OK)
      rc = tm_error_set(err, TM_EINVALID, "dataset '%s' cannot be a table: %s", it->name,
                        sqlite3_errmsg(s->db));
    s->host.creating = NULL;
  }
  tm_buf_dispose(&sql);
  return rc;
}

static int attach(tm_sql_session *s, sess_item *it, tm_error *err) {
  sqlite3_stmt *st = NULL;
  snprintf(it->alias, sizeof it->alias, "tm_ds_%u", ++s->alias_seq);
  char *uri = tm_asprintf("%s?mode=ro", tm_sqlite_engine__uri(it->engine));
  if (!uri) return tm_error_nomem(err);
  int rc = TM_OK;
  if (sqlite3_prepare_v2(s->db, "ATTACH DATABASE ?1 AS ?2", -1, &st, NULL) != SQLITE_OK) {
    rc = tm_error_set(err, TM_ERROR, "cannot prepare ATTACH: %s", sqlite3_errmsg(s->db));
  } else {
    sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, it->alias, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = tm_error_set(err, TM_EIO, "dataset '%s' cannot be attached: %s", it->name,
                        sqlite3_errmsg(s->db));
  }
  sqlite3_finalize(st);
  tm_free(uri);
  if (rc == TM_OK) {
    it->ready = true;
    s->n_attached++;
  }
  return rc;
}

static void detach(tm_sql_session *s, sess_item *it) {
  char sql[64];
  snprintf(sql, sizeof sql, "DETACH DATABASE \"%s\"", it->alias);
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK) {
    it->ready = false;
    s->n_attached--;
  }
}

static void drop_item(tm_sql_session *s, sess_item *it) {
  if (it->ready) {
    if (it->columnar) {
      tm_buf sql = TM_BUF_INIT(1 << 20);
      if (tm_buf_puts(&sql, "DROP TABLE temp.", NULL) == TM_OK &&
          quote_ident(&sql, it->name, NULL) == TM_OK)
        sqlite3_exec(s->db, sql.ptr, NULL, NULL, NULL);
      tm_buf_dispose(&sql);
    } else {
      detach(s, it);
    }
  }
  item_dispose(it);
}

/* Brings the session's tables in line with the catalog. */
static int sync(tm_sql_session *s, tm_error *err) {
  tm_sql_catalog *c = s->cat;
  pthread_mutex_lock(&c->mu);
  if (c->version == s->cat_version) {
    pthread_mutex_unlock(&c->mu);
    return TM_OK;
  }
  size_t n = c->n;
  cat_item *snap = tm_calloc(n ? n : 1, sizeof *snap);
  if (!snap) {
    pthread_mutex_unlock(&c->mu);
    return tm_error_nomem(err);
  }
  for (size_t i = 0; i < n; i++) {
    snap[i].name = c->items[i].name; /* borrowed until unlock; copied below */
    snap[i].engine = c->items[i].engine ? tm_engine_retain(c->items[i].engine) : NULL;
    snap[i].source = c->items[i].source; /* borrowed until unlock; copied below */
  }
  /* Copy names and sources while holding the lock. */
  int rc = TM_OK;
  for (size_t i = 0; i < n; i++) {
    snap[i].name = tm_strdup(snap[i].name);
    if (!snap[i].name) rc = tm_error_nomem(err);
    if (snap[i].source && !(snap[i].source = source_copy(snap[i].source))) rc = tm_error_nomem(err);
  }
  uint64_t version = c->version;
  pthread_mutex_unlock(&c->mu);
  /* Drop the tables of datasets that left (or were replaced by another engine). */
  for (size_t i = 0; i < s->n;) {
    bool keep = false;
    for (size_t k = 0; k < n; k++)
      if (snap[k].name && strcmp(snap[k].name, s->items[i].name) == 0 &&
          snap[k].engine == s->items[i].engine && !snap[k].source == !s->items[i].source)
        keep = true;
    if (keep) {
      i++;
      continue;
    }
    drop_item(s, &s->items[i]);
    s->items[i] = s->items[--s->n];
  }
  /* Add the new ones. */
  for (size_t k = 0; k < n && rc == TM_OK; k++) {
    bool have = false;
    for (size_t i = 0; i < s->n; i++)
      if (s->items[i].engine == snap[k].engine && !snap[k].source == !s->items[i].source &&
          strcmp(s->items[i].name, snap[k].name) == 0)
        have = true;
    if (have) continue;
    if (s->n == s->cap) {
      size_t cap = s->cap ? s->cap * 2 : 8;
      sess_item *items = tm_reallocarray(s->items, cap, sizeof *items);
      if (!items) {
        rc = tm_error_nomem(err);
        break;
      }
      s->items = items;
      s->cap = cap;
    }
    sess_item *it = &s->items[s->n++];
    memset(it, 0, sizeof *it);
    it->name = snap[k].name;
    it->engine = snap[k].engine;
    it->source = snap[k].source;
    snap[k].name = NULL;
    snap[k].engine = NULL;
    snap[k].source = NULL;
    it->columnar = it->source || tm_engine__is_columnar(it->engine);
    tm_error sub;
    tm_error_init(&sub);
    int r = it->columnar ? create_vtab(s, it, &sub)
                         : (s->n_attached < MAX_ATTACHED ? attach(s, it, &sub) : TM_OK);
    if (r == TM_OK && it->columnar) it->ready = true;
    /* A dataset that cannot be a table keeps its error; the others still serve (D2). */
    if (r < 0) it->error = tm_strdup(sub.message);
  }
  for (size_t k = 0; k < n; k++) {
    tm_free(snap[k].name);
    tm_engine_release(snap[k].engine);
    source_free(snap[k].source);
  }
  tm_free(snap);
  if (rc == TM_OK) s->cat_version = version;
  return rc;
}

/* ---- the read-only authorizer --------------------------------------------------------- */

static const char *const k_read_pragmas[] = {"table_info", "table_xinfo", "table_list",
                                             "index_list", "index_info", "index_xinfo",
                                             "collation_list", "function_list", "module_list",
                                             "pragma_list", "compile_options", NULL};

static int deny(void *payload, const char *what, const char *name) {
  if (payload && !((char *)payload)[0]) /* the first refusal names the statement best */
    snprintf(payload, TM_SQL_DENIED_MAX, "%s%s%s is not allowed (queries are read-only)", what,
             name ? " " : "", name ? name : "");
  return SQLITE_DENY;
}

int tm_sql__authorizer(void *payload, int action, const char *a, const char *b,
                       const char *db_name, const char *trigger) {
  (void)db_name;
  (void)trigger;
  bool schema_table = a && (sqlite3_stricmp(a, "sqlite_master") == 0 ||
                            sqlite3_stricmp(a, "sqlite_schema") == 0 ||
                            sqlite3_stricmp(a, "sqlite_temp_master") == 0 ||
                            sqlite3_stricmp(a, "sqlite_temp_schema") == 0);
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE: return SQLITE_OK;
    case SQLITE_FUNCTION:
      if (b && (sqlite3_stricmp(b, "load_extension") == 0 ||
                sqlite3_stricmp(b, "fts3_tokenizer") == 0 ||
                sqlite3_stricmp(b, "readfile") == 0 || sqlite3_stricmp(b, "writefile") == 0 ||
                sqlite3_stricmp(b, "edit") == 0))
        return deny(payload, "the function", b);
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if (!b)
        for (int i = 0; k_read_pragmas[i]; i++)
          if (a && sqlite3_stricmp(a, k_read_pragmas[i]) == 0) return SQLITE_OK;
      if (b && a)
        for (int i = 0; k_read_pragmas[i]; i++)
          if (sqlite3_stricmp(a, k_read_pragmas[i]) == 0 && strcmp(k_read_pragmas[i], "table_list") != 0 &&
              strcmp(k_read_pragmas[i], "compile_options") != 0)
            return SQLITE_OK; /* table_info(x): the argument names a table */
      return deny(payload, "PRAGMA", a);
    case SQLITE_ATTACH: return deny(payload, "ATTACH", NULL);
    case SQLITE_DETACH: return deny(payload, "DETACH", NULL);
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
      /* SQLite also reports schema-table writes when it sets up an eponymous
       * table (pragma_table_info, ...); real DDL is refused by its own code. */
      if (schema_table) return SQLITE_OK;
      return deny(payload, action == SQLITE_INSERT ? "INSERT into" : action == SQLITE_UPDATE ? "UPDATE of" : "DELETE from", a);
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TEMP_VIEW:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_VTABLE: return deny(payload, "CREATE", NULL);
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_INDEX:
    case SQLITE_DROP_TEMP_TABLE:
    case SQLITE_DROP_TEMP_TRIGGER:
    case SQLITE_DROP_TEMP_VIEW:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_VTABLE: return deny(payload, "DROP", NULL);
    case SQLITE_ALTER_TABLE: return deny(payload, "ALTER TABLE", NULL);
    case SQLITE_TRANSACTION: return deny(payload, "a transaction statement", NULL);
    case SQLITE_SAVEPOINT: return deny(payload, "SAVEPOINT", NULL);
    default: return deny(payload, "a statement that changes the database", NULL);
  }
}

bool tm_sql__only_blank(const char *p) {
  while (p && *p) {
    if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ';') {
      p++;
    } else if (p[0] == '-' && p[1] == '-') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e) return true; /* an unterminated comment runs to the end */
      p = e + 2;
    } else {
      return false;
    }
  }
  return true;
}

/* ---- statements ---------------------------------------------------------------------------- */

/* The name in "no such table: [schema.]name", matched against detached sqlite datasets. */
static sess_item *missing_table(tm_sql_session *s, const char *msg) {
  const char *p = strstr(msg, "no such table: ");
  if (!p) return NULL;
  p += strlen("no such table: ");
  const char *dot = strrchr(p, '.');
  if (dot) p = dot + 1;
  for (size_t i = 0; i < s->n; i++)
    if (!s->items[i].ready && !s->items[i].columnar && sqlite3_stricmp(s->items[i].name, p) == 0)
      return &s->items[i];
  return NULL;
}

static sess_item *broken_table(tm_sql_session *s, const char *msg) {
  const char *p = strstr(msg, "no such table: ");
  if (!p) return NULL;
  p += strlen("no such table: ");
  const char *dot = strrchr(p, '.');
  if (dot) p = dot + 1;
  for (size_t i = 0; i < s->n; i++)
    if (s->items[i].error && sqlite3_stricmp(s->items[i].name, p) == 0) return &s->items[i];
  return NULL;
}

/* Attaches a detached sqlite dataset, detaching the least recently used one if full. */
static int make_room_and_attach(tm_sql_session *s, sess_item *want, tm_error *err) {
  if (s->n_attached >= MAX_ATTACHED) {
    sess_item *lru = NULL;
    for (size_t i = 0; i < s->n; i++) {
      sess_item *it = &s->items[i];
      if (!it->columnar && it->ready && (!lru || it->used < lru->used)) lru = it;
    }
    if (lru) detach(s, lru);
  }
  want->used = ++s->clock;
  return attach(s, want, err);
}

int tm_sql_prepare(tm_sql_session *s, const char *sql, tm_sql_stmt **out, tm_error *err) {
  if (s->open)
    return tm_error_set(err, TM_ECONFLICT, "the session has a statement in progress");
  TM_TRY(sync(s, err));
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  char denied[TM_SQL_DENIED_MAX];
  int rc = TM_OK;
  /* A new generation: planning (xBestIndex) pins the snapshots this statement reads. */
  tm_sql__vtab_unpin_all(&s->host);
  s->host.gen++;
  for (int attempt = 0;; attempt++) {
    denied[0] = '\0';
    sqlite3_set_authorizer(s->db, tm_sql__authorizer, denied);
    int src = sqlite3_prepare_v2(s->db, sql, -1, &st, &tail);
    sqlite3_set_authorizer(s->db, NULL, NULL);
    if (src == SQLITE_OK && st) break;
    if (src == SQLITE_OK) {
      tm_sql__vtab_unpin_all(&s->host);
      return tm_error_set(err, TM_EINVALID, "empty query");
    }
    const char *msg = sqlite3_errmsg(s->db);
    sess_item *it = attempt < MAX_ATTACHED + 1 ? missing_table(s, msg) : NULL;
    if (it) {
      TM_TRY(make_room_and_attach(s, it, err));
      continue;
    }
    tm_sql__vtab_unpin_all(&s->host);
    sess_item *broken = broken_table(s, msg);
    if (broken) return tm_error_set(err, TM_EINVALID, "%s", broken->error);
    if (denied[0]) return tm_error_set(err, TM_EINVALID, "%s", denied);
    return tm_error_set(err, src == SQLITE_NOMEM ? TM_ENOMEM : TM_EINVALID, "%s", msg);
  }
  if (!tm_sql__only_blank(tail)) {
    sqlite3_finalize(st);
    tm_sql__vtab_unpin_all(&s->host);
    return tm_error_set(err, TM_EINVALID, "one statement per query");
  }
  if (!sqlite3_stmt_readonly(st)) {
    sqlite3_finalize(st);
    tm_sql__vtab_unpin_all(&s->host);
    return tm_error_set(err, TM_EINVALID,
                        "a statement that changes the database is not allowed (queries are read-only)");
  }
  /* Note which sqlite datasets this query uses (LRU for attachment). */
  for (size_t i = 0; i < s->n; i++)
    if (s->items[i].ready && !s->items[i].columnar && strstr(sql, s->items[i].name))
      s->items[i].used = ++s->clock;
  tm_sql_stmt *q = tm_calloc(1, sizeof *q);
  if (!q) {
    sqlite3_finalize(st);
    tm_sql__vtab_unpin_all(&s->host);
    return tm_error_nomem(err);
  }
  q->s = s;
  q->st = st;
  q->n_cols = (size_t)sqlite3_column_count(st);
  q->render = tm_calloc(q->n_cols ? q->n_cols : 1, sizeof *q->render);
  if (!q->render) rc = tm_error_nomem(err);
  for (size_t i = 0; i < q->n_cols && rc == TM_OK; i++)
    q->render[i] = tm_sqlrender_for_decl(sqlite3_column_decltype(st, (int)i));
  if (rc < 0) {
    sqlite3_finalize(st);
    tm_free(q->render);
    tm_free(q);
    tm_sql__vtab_unpin_all(&s->host);
    return rc;
  }
  s->open = q;
  s->timed_out = false;
  __atomic_store_n(&s->interrupted, 0, __ATOMIC_RELEASE);
  s->deadline_ns = s->timeout_ms > 0 ? tm_monotonic_ns() + s->timeout_ms * 1000000 : 0;
  *out = q;
  return TM_OK;
}

int tm_sql_step(tm_sql_stmt *q, tm_error *err) {
  tm_sql_session *s = q->s;
  int src = sqlite3_step(q->st);
  if (src == SQLITE_ROW) return TM_OK;
  if (src == SQLITE_DONE) return TM_ITEROVER;
  if (src == SQLITE_INTERRUPT) {
    if (s->timed_out)
      return tm_error_set(err, TM_ETIMEOUT, "query ran past its time limit of %lld ms",
                          (long long)s->timeout_ms);
    return tm_error_set(err, TM_ECANCELLED, "query cancelled");
  }
  int code = src == SQLITE_NOMEM ? TM_ENOMEM : src == SQLITE_CORRUPT ? TM_ECORRUPT
             : (src == SQLITE_IOERR) ? TM_EIO : TM_EINVALID;
  return tm_error_set(err, code, "%s", sqlite3_errmsg(s->db));
}

size_t tm_sql_column_count(const tm_sql_stmt *q) { return q->n_cols; }

const char *tm_sql_column_name(const tm_sql_stmt *q, size_t i) {
  const char *n = sqlite3_column_name(q->st, (int)i);
  return n ? n : "";
}

bool tm_sql_column_is_null(const tm_sql_stmt *q, size_t i) {
  return sqlite3_column_type(q->st, (int)i) == SQLITE_NULL;
}

/* Trims trailing zeros of a timestamp's fraction: "...:05.500000Z" -> "...:05.5Z". */
static size_t trim_fraction(const char *p, size_t n, char *buf, size_t cap) {
  const char *dot = memchr(p, '.', n);
  if (!dot || n >= cap) {
    memcpy(buf, p, n < cap ? n : cap - 1);
    return n < cap ? n : cap - 1;
  }
  size_t frac_end = (size_t)(dot - p) + 1;
  while (frac_end < n && p[frac_end] >= '0' && p[frac_end] <= '9') frac_end++;
  size_t last = frac_end;
  while (last > (size_t)(dot - p) + 1 && p[last - 1] == '0') last--;
  if (last == (size_t)(dot - p) + 1) last = (size_t)(dot - p); /* drop the '.' too */
  memcpy(buf, p, last);
  memcpy(buf + last, p + frac_end, n - frac_end);
  return last + (n - frac_end);
}

int tm_sql_column_render(tm_sql_stmt *q, size_t i, tm_buf *out, tm_cell_kind *kind,
                         tm_error *err) {
  sqlite3_stmt *st = q->st;
  int c = (int)i;
  tm_sqlrender_spec r = q->render[i];
  char tmp[96];
  switch (sqlite3_column_type(st, c)) {
    case SQLITE_NULL: *kind = TM_CELL_NULL; return TM_OK;
    case SQLITE_INTEGER: {
      int64_t v = sqlite3_column_int64(st, c);
      if (r.how == TM_SQLRENDER_BOOL) {
        *kind = TM_CELL_BOOL;
        return tm_buf_puts(out, v ? "true" : "false", err);
      }
      *kind = TM_CELL_NUMBER;
      if (r.how == TM_SQLRENDER_UINT64) return tm_buf_printf(out, err, "%llu", (unsigned long long)v);
      if (r.how == TM_SQLRENDER_DECIMAL && r.scale > 0)
        return tm_buf_printf(out, err, "%lld.%0*d", (long long)v, (int)r.scale, 0);
      return tm_buf_printf(out, err, "%lld", (long long)v);
    }
    case SQLITE_FLOAT: {
      double v = sqlite3_column_double(st, c);
      *kind = TM_CELL_NUMBER;
      if (r.how == TM_SQLRENDER_DECIMAL && v == v && v - v == 0)
        return tm_buf_printf(out, err, "%.*f", (int)r.scale, v);
      if (r.how == TM_SQLRENDER_FLOAT32) {
        tm_type t = tm_type_of(TM_TYPE_FLOAT32);
        tm_value val = {TM_TYPE_FLOAT32, false, {.f = v}};
        return tm_value_render(out, &t, &val, err);
      }
      size_t n = tm_double_format(v, tmp, sizeof tmp);
      return tm_buf_append(out, tmp, n, err);
    }
    case SQLITE_TEXT: {
      const char *p = (const char *)sqlite3_column_text(st, c);
      size_t n = (size_t)sqlite3_column_bytes(st, c);
      if (!p) return tm_error_nomem(err);
      if (r.how == TM_SQLRENDER_DECIMAL) {
        *kind = TM_CELL_NUMBER;
        return tm_buf_append(out, p, n, err);
      }
      *kind = TM_CELL_TEXT;
      if (r.how == TM_SQLRENDER_TEMPORAL && r.timestamp && n < sizeof tmp) {
        size_t m = trim_fraction(p, n, tmp, sizeof tmp);
        return tm_buf_append(out, tmp, m, err);
      }
      return tm_buf_append(out, p, n, err);
    }
    default: {
      const void *p = sqlite3_column_blob(st, c);
      size_t n = (size_t)sqlite3_column_bytes(st, c);
      tm_type t = tm_type_of(TM_TYPE_BINARY);
      tm_value v = {TM_TYPE_BINARY, false, {.s = tm_sv(n ? p : "", n)}};
      *kind = TM_CELL_TEXT;
      return tm_value_render(out, &t, &v, err);
    }
  }
}

int tm_sql_column_value(tm_sql_stmt *q, size_t i, const tm_type *t, tm_value *out,
                        char **owned, tm_error *err) {
  return tm_sqltype_to_value(t, sqlite3_column_value(q->st, (int)i), out, owned, err);
}

void tm_sql_stmt_free(tm_sql_stmt *q) {
  if (!q) return;
  tm_sql_session *s = q->s;
  sqlite3_finalize(q->st);
  tm_sql__vtab_unpin_all(&s->host);
  if (s->open == q) s->open = NULL;
  tm_free(q->render);
  tm_free(q);
}

int tm_sql_query(tm_sql_session *s, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                 void *payload, tm_sql_result_info *info, tm_error *err) {
  tm_sql_stmt *q;
  TM_TRY(tm_sql_prepare(s, sql, &q, err));
  size_t n = q->n_cols;
  int rc = TM_OK;
  tm_out o;
  bool begun = false;
  tm_buf cells = TM_BUF_INIT(TM_BUF_UNLIMITED);
  const char **names = tm_calloc(n ? n : 1, sizeof *names);
  const char **texts = tm_calloc(n ? n : 1, sizeof *texts);
  size_t *lens = tm_calloc(n ? n : 1, sizeof *lens);
  size_t *starts = tm_calloc(n ? n : 1, sizeof *starts);
  tm_cell_kind *kinds = tm_calloc(n ? n : 1, sizeof *kinds);
  int64_t rows = 0;
  if (!names || !texts || !lens || !starts || !kinds) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < n; i++) names[i] = tm_sql_column_name(q, i);
  TM_CHECK(tm_out_begin(&o, format, names, n, sink, payload, err));
  begun = true;
  while ((rc = tm_sql_step(q, err)) == TM_OK) {
    tm_buf_clear(&cells);
    for (size_t i = 0; i < n; i++) {
      starts[i] = cells.len;
      TM_CHECK(tm_sql_column_render(q, i, &cells, &kinds[i], err));
      lens[i] = cells.len - starts[i];
    }
    for (size_t i = 0; i < n; i++)
      texts[i] = kinds[i] == TM_CELL_NULL ? NULL : tm_buf_cstr(&cells) + starts[i];
    TM_CHECK(tm_out_row(&o, texts, lens, kinds, err));
    rows++;
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (rc == TM_OK) {
    begun = false;
    rc = tm_out_end(&o, err);
  }
done:
  if (begun) tm_out_dispose(&o);
  tm_buf_dispose(&cells);
  tm_free(names);
  tm_free(texts);
  tm_free(lens);
  tm_free(starts);
  tm_free(kinds);
  tm_sql_stmt_free(q);
  if (rc == TM_OK && info) {
    info->rows = rows;
    info->columns = n;
  }
  return rc;
}

/* ---- retention_sql --------------------------------------------------------------------------- */

static const char *skip_space(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static bool keyword(const char **pp, const char *kw) {
  const char *p = skip_space(*pp);
  size_t n = strlen(kw);
  if (strncasecmp(p, kw, n) != 0) return false;
  char c = p[n];
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
    return false;
  *pp = p + n;
  return true;
}

/* Reads an identifier: bare, "double", `back` or [bracket] quoted. */
static int read_ident(const char **pp, tm_buf *out, tm_error *err) {
  const char *p = skip_space(*pp);
  char close = *p == '"' ? '"' : *p == '`' ? '`' : *p == '[' ? ']' : 0;
  if (close) {
    p++;
    for (;;) {
      if (!*p) return tm_error_set(err, TM_EINVALID, "retention_sql: unterminated table name");
      if (*p == close) {
        if (close != ']' && p[1] == close) {
          TM_TRY(tm_buf_putc(out, close, err));
          p += 2;
          continue;
        }
        p++;
        break;
      }
      TM_TRY(tm_buf_putc(out, *p++, err));
    }
  } else {
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '_' || *p == '$' || (unsigned char)*p >= 0x80)
      TM_TRY(tm_buf_putc(out, *p++, err));
    if (out->len == 0) return tm_error_set(err, TM_EINVALID, "retention_sql: a table name is missing");
  }
  *pp = p;
  return TM_OK;
}

int tm_sql_retention_condition(const char *sql, const char *dataset, char **where_out,
                               tm_error *err) {
  const char *p = sql;
  tm_buf name = TM_BUF_INIT(4096);
  int rc = TM_OK;
  if (!keyword(&p, "DELETE") || !keyword(&p, "FROM")) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql must read DELETE FROM %s WHERE ...",
                      dataset);
    goto done;
  }
  TM_CHECK(read_ident(&p, &name, err));
  if (*p == '.') { /* schema-qualified: keep the table part */
    p++;
    tm_buf_clear(&name);
    TM_CHECK(read_ident(&p, &name, err));
  }
  if (sqlite3_stricmp(tm_buf_cstr(&name), dataset) != 0) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql deletes from '%s', not from the dataset '%s'",
                      tm_buf_cstr(&name), dataset);
    goto done;
  }
  if (!keyword(&p, "WHERE")) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql needs a WHERE condition");
    goto done;
  }
  const char *start = skip_space(p);
  size_t n = strlen(start);
  while (n > 0 && (start[n - 1] == ';' || start[n - 1] == ' ' || start[n - 1] == '\n' ||
                   start[n - 1] == '\t' || start[n - 1] == '\r'))
    n--;
  if (n == 0) {
    rc = tm_error_set(err, TM_EINVALID, "retention_sql has an empty WHERE condition");
    goto done;
  }
  *where_out = tm_strndup(start, n);
  if (!*where_out) rc = tm_error_nomem(err);
done:
  tm_buf_dispose(&name);
  return rc;
}
