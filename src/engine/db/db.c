/*
 * db.c - the process's DuckDB instance: opening it locked down, connections,
 * statements with errors mapped to tm codes, and the watchdog that enforces
 * query time limits (engine layer). See db.h and engine_int.h.
 *
 * Lock-down order matters (SPEC D4): the folders that accelerations and
 * spill files live in are set as allowed_directories before external access
 * is turned off (DuckDB refuses to change them afterwards), then the
 * configuration is locked, so no statement can widen what SQL may reach.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_int.h"
#include "io/io.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"
#include "util/sync.h"

typedef struct attachment {
  char *alias;                  /* owned: catalog name */
  char *path;                   /* owned: absolute file path; NULL for memory */
  int refs;
  dev_t dev;                    /* the file DuckDB opened (path's identity at attach) */
  ino_t ino;
} attachment;

typedef struct watch_entry {
  uint64_t token;
  duckdb_connection conn;
  int64_t deadline_ns;
  bool fired;
} watch_entry;

struct tm_db {
  int refs;                     /* atomic */
  duckdb_database handle;
  duckdb_connection admin;      /* DDL (ATTACH, DETACH, views), under admin_mu */
  pthread_mutex_t admin_mu;
  int threads;
  int64_t memory_limit;
  int64_t lock_wait_ms;         /* >= 0 */
  char **dirs;                  /* owned: absolute folders, each ending in '/' */
  size_t n_dirs;
  attachment *att;              /* owned, under admin_mu */
  size_t n_att, cap_att;
  uint64_t att_seq;
  /* watchdog */
  pthread_mutex_t watch_mu;
  pthread_cond_t watch_cv;
  pthread_t watch_thread;
  bool watch_running, watch_stop;
  int64_t watch_wake_ns;        /* the watchdog sleeps until then (INT64_MAX: until signalled;
                                   INT64_MIN: it is awake); under watch_mu */
  watch_entry *watches;         /* owned */
  size_t n_watches, cap_watches;
  uint64_t next_token;
  tm_scan_registry *registry;   /* owned (scan.c) */
};

void tm_db_options_init(tm_db_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_DB_OPTIONS_VERSION;
}

const char *tm_db_version(void) { return duckdb_library_version(); }

duckdb_database tm_db__handle(tm_db *db) { return db->handle; }
int tm_db_threads(const tm_db *db) { return db->threads; }
int64_t tm_db_memory_limit(const tm_db *db) { return db->memory_limit; }
tm_scan_registry **tm_db__registry(tm_db *db) { return &db->registry; }

/* ---- errors ---------------------------------------------------------------- */

int tm_db__code(duckdb_error_type t) {
  switch (t) {
    case DUCKDB_ERROR_OUT_OF_MEMORY: return TM_ENOMEM;
    case DUCKDB_ERROR_INTERRUPT: return TM_ECANCELLED;
    case DUCKDB_ERROR_IO: return TM_EIO;
    case DUCKDB_ERROR_SERIALIZATION: return TM_ECORRUPT;
    case DUCKDB_ERROR_TRANSACTION: return TM_ECONFLICT;
    case DUCKDB_ERROR_PERMISSION:
    case DUCKDB_ERROR_PARSER:
    case DUCKDB_ERROR_BINDER:
    case DUCKDB_ERROR_CATALOG:
    case DUCKDB_ERROR_CONVERSION:
    case DUCKDB_ERROR_OUT_OF_RANGE:
    case DUCKDB_ERROR_CONSTRAINT:
    case DUCKDB_ERROR_NOT_IMPLEMENTED:
    case DUCKDB_ERROR_SYNTAX:
    case DUCKDB_ERROR_MISMATCH_TYPE:
    case DUCKDB_ERROR_INVALID_TYPE:
    case DUCKDB_ERROR_DIVIDE_BY_ZERO:
    case DUCKDB_ERROR_INVALID_INPUT:
    case DUCKDB_ERROR_DEPENDENCY:
    case DUCKDB_ERROR_SEQUENCE:
    case DUCKDB_ERROR_PARAMETER_NOT_RESOLVED:
    case DUCKDB_ERROR_PARAMETER_NOT_ALLOWED: return TM_EINVALID;
    default: return TM_ERROR;
  }
}

/* DuckDB's messages can span lines (a caret under the query); ours are one line. */
static void one_line(char *s) {
  char *w = s;
  bool space = false;
  for (char *p = s; *p; p++) {
    if (*p == '\n' || *p == '\r' || *p == '\t') {
      space = true;
      continue;
    }
    if (space && w != s) *w++ = ' ';
    space = false;
    *w++ = *p;
  }
  *w = '\0';
  /* The LINE 1: excerpt repeats the query; keep the message before it. */
  char *line = strstr(s, " LINE ");
  if (line) *line = '\0';
}

bool tm_db_message_is_storage_damage(const char *msg) {
  return msg && (strstr(msg, "Corrupt database file") || strstr(msg, "not a valid DuckDB database") ||
                 strstr(msg, "database disk image is malformed") ||
                 strstr(msg, "file is not a database") || strstr(msg, "failed its checksum"));
}

int tm_db__result_error(tm_error *err, duckdb_result *r, const char *what) {
  const char *msg = duckdb_result_error(r);
  int code = tm_db__code(duckdb_result_error_type(r));
  /* DuckDB reports a damaged file as an I/O or internal error that says so. */
  if (msg && (strstr(msg, "orrupt") || strstr(msg, "not a valid DuckDB database") ||
              strstr(msg, "checksum") || strstr(msg, "Could not read enough bytes") ||
              strstr(msg, "database file is too small")))
    code = TM_ECORRUPT;
  /* A commit that failed writing or syncing its log is an I/O error, not a conflict. */
  if (msg && code == TM_ECONFLICT &&
      (strstr(msg, "Could not") || strstr(msg, "fsync") || strstr(msg, "write")))
    code = TM_EIO;
  char buf[TM_ERROR_MESSAGE_MAX];
  snprintf(buf, sizeof buf, "%s", msg ? msg : "unknown DuckDB error");
  one_line(buf);
  if (what) return tm_error_set(err, code, "%s: %s", what, buf);
  return tm_error_set(err, code, "%s", buf);
}

int tm_db__exec(duckdb_connection c, const char *sql, const char *what, tm_error *err) {
  duckdb_result r;
  if (duckdb_query(c, sql, &r) == DuckDBError) {
    int rc = tm_db__result_error(err, &r, what);
    duckdb_destroy_result(&r);
    return rc;
  }
  duckdb_destroy_result(&r);
  return TM_OK;
}

void tm_db__exec_quiet(duckdb_connection c, const char *sql) {
  duckdb_result r;
  duckdb_query(c, sql, &r);
  duckdb_destroy_result(&r);
}

int tm_db__exec_prepared(duckdb_prepared_statement ps, const char *what, int64_t *changed,
                         tm_error *err) {
  duckdb_result r;
  if (duckdb_execute_prepared(ps, &r) == DuckDBError) {
    int rc = tm_db__result_error(err, &r, what);
    duckdb_destroy_result(&r);
    return rc;
  }
  if (changed) *changed = (int64_t)duckdb_rows_changed(&r);
  duckdb_destroy_result(&r);
  return TM_OK;
}

int tm_db__query_int64(duckdb_connection c, const char *sql, int64_t *out, tm_error *err) {
  duckdb_result r;
  if (duckdb_query(c, sql, &r) == DuckDBError) {
    int rc = tm_db__result_error(err, &r, NULL);
    duckdb_destroy_result(&r);
    return rc;
  }
  *out = duckdb_row_count(&r) && duckdb_column_count(&r) ? duckdb_value_int64(&r, 0, 0) : 0;
  duckdb_destroy_result(&r);
  return TM_OK;
}

int tm_db__connect(tm_db *db, duckdb_connection *out, tm_error *err) {
  if (duckdb_connect(db->handle, out) == DuckDBError)
    return tm_error_set(err, TM_ERROR, "DuckDB refused a new connection");
  return TM_OK;
}

int tm_db__admin_exec(tm_db *db, const char *sql, tm_error *err) {
  pthread_mutex_lock(&db->admin_mu);
  int rc = tm_db__exec(db->admin, sql, NULL, err);
  pthread_mutex_unlock(&db->admin_mu);
  return rc;
}

/* ---- attachments ------------------------------------------------------------- */

static bool alias_taken(const tm_db *db, const char *alias) {
  for (size_t i = 0; i < db->n_att; i++)
    if (!strcasecmp(db->att[i].alias, alias)) return true;
  return false;
}

static void detach_locked(tm_db *db, const char *alias);

/*
 * One try of tm_db__attach. *held: the file is not free yet and a later try
 * may succeed: another process holds its lock, or a query of this process
 * that began before its DETACH still uses the database (DuckDB keeps a
 * detached database, and its claim on the file, until the last transaction
 * that uses it ends).
 */
static int attach_once(tm_db *db, const char *path, const char *name_hint, char **alias_out,
                       bool *held, tm_error *err) {
  *held = false;
  char *abs = NULL;
  if (path) {
    char *dir = tm_path_dirname(path);
    if (!dir) return tm_error_nomem(err);
    char real[PATH_MAX];
    bool ok = realpath(dir, real);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (ok) abs = tm_asprintf("%s/%s", real, base);
    tm_free(dir);
    if (!ok) return tm_error_set(err, TM_EIO, "%s: the folder does not exist", path);
    if (!abs) return tm_error_nomem(err);
    if (!tm_db__path_allowed(db, abs)) {
      int rc = tm_error_set(err, TM_EINVALID,
                            "%s: not in a folder this process's DuckDB may use (SPEC D4)", abs);
      tm_free(abs);
      return rc;
    }
  }
  int rc = TM_OK;
  pthread_mutex_lock(&db->admin_mu);
  for (size_t i = 0; abs && i < db->n_att; i++)
    if (db->att[i].path && !strcmp(db->att[i].path, abs)) {
      /* The attached database reads the file it opened: a file put in its place since (a
       * restore while the old engine is still open) is not it, and must not be served or
       * written through it. */
      struct stat st;
      if (stat(abs, &st) != 0 || st.st_dev != db->att[i].dev || st.st_ino != db->att[i].ino) {
        rc = tm_error_set(err, TM_ECONFLICT,
                          "%s was replaced while the acceleration that had it open (%s) is still "
                          "in use; try again when it has closed",
                          abs, db->att[i].alias);
        pthread_mutex_unlock(&db->admin_mu);
        tm_free(abs);
        return rc;
      }
      db->att[i].refs++;
      *alias_out = tm_strdup(db->att[i].alias);
      if (!*alias_out) {
        db->att[i].refs--;
        rc = tm_error_nomem(err);
      }
      pthread_mutex_unlock(&db->admin_mu);
      tm_free(abs);
      return rc;
    }
  /* "tm$events", or "tm$events$2" while another incarnation is attached. */
  const char *hint = name_hint ? name_hint : "db";
  char *alias = tm_asprintf("tm$%s", hint);
  while (alias && alias_taken(db, alias)) {
    tm_free(alias);
    alias = tm_asprintf("tm$%s$%llu", hint, (unsigned long long)++db->att_seq);
  }
  tm_buf sql = TM_BUF_INIT(1 << 20);
  if (!alias) rc = tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "ATTACH ", err);
  if (rc == TM_OK) rc = abs ? tm_engine__quote_string(&sql, abs, strlen(abs), err)
                            : tm_buf_puts(&sql, "':memory:'", err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " AS ", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, alias, err);
  if (rc == TM_OK && db->n_att == db->cap_att) {
    size_t cap = db->cap_att ? db->cap_att * 2 : 8;
    attachment *g = tm_reallocarray(db->att, cap, sizeof *g);
    if (!g) rc = tm_error_nomem(err);
    else {
      db->att = g;
      db->cap_att = cap;
    }
  }
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_query(db->admin, tm_buf_cstr(&sql), &r) == DuckDBError) {
      const char *msg = duckdb_result_error(&r);
      if (msg && strstr(msg, "Unique file handle conflict")) {
        /* Not in the list, so detached: a query that began before the DETACH still uses it. */
        *held = true;
        rc = tm_error_set(err, TM_ECONFLICT,
                          "%s is still in use by a query that began before it was closed",
                          abs ? abs : "in-memory database");
      } else if (msg && strstr(msg, "Could not set lock on file")) {
        *held = true;
        /* DuckDB names the holder: "Conflicting lock is held in PROGRAM (PID N)". */
        const char *named = strstr(msg, "held in ");
        char holder[300] = "another process";
        if (named) {
          snprintf(holder, sizeof holder, "%s", named + 8);
          char *end = strstr(holder, ")");
          if (end) end[1] = '\0';
        }
        rc = tm_error_set(err, TM_ECONFLICT,
                          "%s is held by %s: one process owns an acceleration (SPEC 1.2); "
                          "query the server that runs on it with --url, or wait for the "
                          "refresh that holds it to end",
                          abs, holder);
      }
      else
        rc = tm_db__result_error(err, &r, abs ? abs : "in-memory database");
    }
    duckdb_destroy_result(&r);
  }
  if (rc == TM_OK) {
    struct stat st = {0};
    bool known = !abs || stat(abs, &st) == 0;
    int stat_errno = errno;
    db->att[db->n_att++] = (attachment){alias, abs, 1, st.st_dev, st.st_ino};
    *alias_out = known ? tm_strdup(alias) : NULL;
    if (!*alias_out) {
      rc = known ? tm_error_nomem(err) : tm_error_set(err, TM_EIO, "%s: %s", abs, strerror(stat_errno));
      detach_locked(db, alias); /* frees alias and abs */
    }
    alias = NULL;
    abs = NULL;
  }
  pthread_mutex_unlock(&db->admin_mu);
  tm_buf_dispose(&sql);
  tm_free(alias);
  tm_free(abs);
  return rc;
}

int tm_db__attach(tm_db *db, const char *path, const char *name_hint, char **alias_out,
                  tm_error *err) {
  int64_t start = tm_monotonic_ns() / 1000000, waited = 0;
  for (;;) {
    bool held;
    int rc = attach_once(db, path, name_hint, alias_out, &held, err);
    if (rc != TM_ECONFLICT || !held) return rc;
    waited = tm_monotonic_ns() / 1000000 - start;
    if (waited >= db->lock_wait_ms) break;
    if (waited == 0 && db->lock_wait_ms > 0)
      tm_log(TM_LOG_INFO, name_hint, "waiting up to %lld ms for %s: %s",
             (long long)db->lock_wait_ms, path, err->message);
    nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
  }
  if (db->lock_wait_ms > 0) tm_error_prefix(err, "after waiting %lld ms", (long long)waited);
  return TM_ECONFLICT;
}

/* Drops one reference to alias; the last detaches. Under admin_mu. */
static void detach_locked(tm_db *db, const char *alias) {
  for (size_t i = 0; i < db->n_att; i++) {
    attachment *a = &db->att[i];
    if (strcmp(a->alias, alias) != 0 || --a->refs > 0) continue;
    /*
     * The statement is built on the stack: a DETACH that could not even be
     * written (out of memory) would leave DuckDB holding a database that the
     * list no longer names, and the next ATTACH of the file would conflict.
     */
    char sql[1100] = "DETACH \"";
    size_t n = strlen(sql);
    bool fits = true;
    for (const char *p = a->alias; *p && fits; p++) {
      if (n + 3 >= sizeof sql) fits = false;
      else if (*p == '"') sql[n++] = '"', sql[n++] = '"';
      else sql[n++] = *p;
    }
    if (fits && n + 2 < sizeof sql) {
      sql[n++] = '"';
      sql[n] = '\0';
    } else {
      fits = false;
    }
    tm_error err;
    tm_error_init(&err);
    if (!fits || tm_db__exec(db->admin, sql, "detach", &err) != TM_OK) {
      /* Still attached: kept in the list, unused, for the next attach of the file. */
      if (!fits) tm_log(TM_LOG_WARN, NULL, "cannot detach %s: its name is too long", a->alias);
      else tm_log(TM_LOG_WARN, NULL, "%s", err.message);
      break;
    }
    tm_free(a->alias);
    tm_free(a->path);
    db->att[i] = db->att[--db->n_att];
    break;
  }
}

void tm_db__detach(tm_db *db, const char *alias) {
  if (!alias) return;
  pthread_mutex_lock(&db->admin_mu);
  detach_locked(db, alias);
  pthread_mutex_unlock(&db->admin_mu);
}

bool tm_db_healthy(tm_db *db, char *why, size_t cap) {
  tm_error err;
  tm_error_init(&err);
  int rc = tm_db__admin_exec(db, "SELECT 1", &err);
  if (rc == TM_OK || !strstr(err.message, "invalidated")) return true;
  if (why && cap) snprintf(why, cap, "%s", err.message);
  return false;
}

bool tm_db__path_allowed(const tm_db *db, const char *path) {
  for (size_t i = 0; i < db->n_dirs; i++)
    if (tm_str_has_prefix(path, db->dirs[i])) return true;
  return false;
}

/* ---- the watchdog ----------------------------------------------------------- */

static void *watch_main(void *arg) {
  tm_db *db = arg;
  pthread_mutex_lock(&db->watch_mu);
  while (!db->watch_stop) {
    int64_t now = tm_monotonic_ns(), next = INT64_MAX;
    for (size_t i = 0; i < db->n_watches; i++) {
      watch_entry *w = &db->watches[i];
      if (w->fired) continue;
      if (w->deadline_ns <= now) {
        /* Under watch_mu: tm_db__unwatch cannot return meanwhile, so the
         * connection is still running the statement this deadline is for. */
        w->fired = true;
        duckdb_interrupt(w->conn);
      } else if (w->deadline_ns < next) {
        next = w->deadline_ns;
      }
    }
    db->watch_wake_ns = next;
    if (next == INT64_MAX) {
      pthread_cond_wait(&db->watch_cv, &db->watch_mu);
    } else {
      tm_cond_wait_ns(&db->watch_cv, &db->watch_mu, next - now);
    }
    db->watch_wake_ns = INT64_MIN; /* awake: it reads the list before it sleeps again */
  }
  pthread_mutex_unlock(&db->watch_mu);
  return NULL;
}

uint64_t tm_db__watch(tm_db *db, duckdb_connection c, int64_t deadline_ns) {
  pthread_mutex_lock(&db->watch_mu);
  uint64_t token = 0;
  if (db->n_watches == db->cap_watches) {
    size_t cap = db->cap_watches ? db->cap_watches * 2 : 16;
    watch_entry *p = tm_reallocarray(db->watches, cap, sizeof *p);
    if (p) {
      db->watches = p;
      db->cap_watches = cap;
    }
  }
  if (db->watch_running && db->n_watches < db->cap_watches) {
    token = ++db->next_token;
    db->watches[db->n_watches++] = (watch_entry){token, c, deadline_ns, false};
    /* Woken only when it would sleep past this deadline: a statement's deadline is most often
     * later than the earliest armed one, and a wake per statement is a context switch. */
    if (deadline_ns < db->watch_wake_ns) pthread_cond_signal(&db->watch_cv);
  }
  pthread_mutex_unlock(&db->watch_mu);
  if (!token) tm_log(TM_LOG_WARN, NULL, "query time limit not armed (no memory)");
  return token;
}

bool tm_db__unwatch(tm_db *db, uint64_t token) {
  if (!token) return false;
  bool fired = false;
  pthread_mutex_lock(&db->watch_mu);
  for (size_t i = 0; i < db->n_watches; i++)
    if (db->watches[i].token == token) {
      fired = db->watches[i].fired;
      db->watches[i] = db->watches[--db->n_watches];
      break;
    }
  pthread_mutex_unlock(&db->watch_mu);
  return fired;
}

/* ---- open / close ------------------------------------------------------------- */

static int64_t physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || size <= 0) return (int64_t)4 << 30;
  return (int64_t)pages * size;
}

/* Creates dir and returns its absolute form with a trailing '/'. */
static int absolute_dir(const char *dir, char **out, tm_error *err) {
  TM_TRY(tm_mkdir_p(dir, err));
  char real[PATH_MAX];
  if (!realpath(dir, real)) return tm_error_set(err, TM_EIO, "%s: cannot resolve the folder", dir);
  *out = tm_asprintf("%s%s", real, real[strlen(real) - 1] == '/' ? "" : "/");
  return *out ? TM_OK : tm_error_nomem(err);
}

static int add_dir(tm_db *db, const char *dir, tm_error *err) {
  char *abs = NULL;
  TM_TRY(absolute_dir(dir, &abs, err));
  for (size_t i = 0; i < db->n_dirs; i++)
    if (!strcmp(db->dirs[i], abs)) {
      tm_free(abs);
      return TM_OK;
    }
  char **p = tm_reallocarray(db->dirs, db->n_dirs + 1, sizeof *p);
  if (!p) {
    tm_free(abs);
    return tm_error_nomem(err);
  }
  db->dirs = p;
  db->dirs[db->n_dirs++] = abs;
  return TM_OK;
}

static int set_config(duckdb_config cfg, const char *name, const char *value, tm_error *err) {
  if (duckdb_set_config(cfg, name, value) == DuckDBError)
    return tm_error_set(err, TM_EINVALID, "DuckDB refused setting %s = %s", name, value);
  return TM_OK;
}

/*
 * Settings DuckDB reads while it plans and runs each statement. DuckDB 1.4
 * answers a setting nobody set by parsing its type name and casting its
 * default from text, at every read; one that was set is a map lookup. A
 * point lookup reads a dozen of them (the result's client properties, the
 * index scan's limits, late materialization, insertion order): pinned to
 * the values DuckDB itself reports, lookups ran 11-18% faster and `SELECT
 * $1` 38% (in process, 5 December 2026; PGWIRE.md "Throughput"). Nothing
 * changes but where the value comes from. A name this DuckDB does not know
 * is skipped.
 */
static const char *const k_pinned_settings[] = {
    "late_materialization_max_rows", "preserve_insertion_order", "index_scan_percentage",
    "index_scan_max_count", "debug_verify_vector", "arrow_large_buffer_size",
    "arrow_lossless_conversion", "produce_arrow_string_view", "arrow_output_version",
    "arrow_output_list_view", "Calendar", "default_collation", "old_implicit_casting",
    "integer_division", "preserve_identifier_case",
};

const char *const *tm_db__pinned_settings(size_t *n) {
  *n = sizeof k_pinned_settings / sizeof *k_pinned_settings;
  return k_pinned_settings;
}

/* Sets each of k_pinned_settings to its current value (a SET of what is). */
static int pin_settings(tm_db *db, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && i < sizeof k_pinned_settings / sizeof *k_pinned_settings; i++) {
    const char *name = k_pinned_settings[i];
    tm_buf_clear(&sql);
    rc = tm_buf_puts(&sql, "SELECT current_setting(", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, name, strlen(name), err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ")::VARCHAR", err);
    if (rc != TM_OK) break;
    duckdb_result r;
    char *value = NULL;
    if (duckdb_query(db->admin, tm_buf_cstr(&sql), &r) == DuckDBSuccess && duckdb_row_count(&r) == 1 &&
        !duckdb_value_is_null(&r, 0, 0))
      value = duckdb_value_varchar(&r, 0, 0);
    duckdb_destroy_result(&r);
    if (!value) continue; /* not a setting of this DuckDB */
    tm_buf_clear(&sql);
    rc = tm_buf_puts(&sql, "SET GLOBAL ", err);
    if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, name, err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " = ", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, value, strlen(value), err);
    duckdb_free(value);
    if (rc == TM_OK) rc = tm_db__exec(db->admin, tm_buf_cstr(&sql), "DuckDB setup", err);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/* The statements that lock the instance down, in order (see the file comment). */
static int lock_down(tm_db *db, const char *temp_abs, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = tm_buf_puts(&sql, "SET allowed_directories = [", err);
  for (size_t i = 0; rc == TM_OK && i < db->n_dirs; i++) {
    if (i) rc = tm_buf_puts(&sql, ", ", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, db->dirs[i], strlen(db->dirs[i]), err);
  }
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "]", err);
  if (rc == TM_OK) rc = tm_db__exec(db->admin, tm_buf_cstr(&sql), "DuckDB setup", err);
  tm_buf_clear(&sql);
  if (rc == TM_OK && temp_abs) {
    rc = tm_buf_puts(&sql, "SET temp_directory = ", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, temp_abs, strlen(temp_abs), err);
    if (rc == TM_OK) rc = tm_db__exec(db->admin, tm_buf_cstr(&sql), "DuckDB setup", err);
  }
  static const char *const k_steps[] = {
      "SET enable_external_access = false",
      "SET TimeZone = 'UTC'",
  };
  for (size_t i = 0; rc == TM_OK && i < sizeof k_steps / sizeof k_steps[0]; i++)
    rc = tm_db__exec(db->admin, k_steps[i], "DuckDB setup", err);
  if (rc == TM_OK) rc = pin_settings(db, err);
  if (rc == TM_OK) rc = tm_db__exec(db->admin, "SET lock_configuration = true", "DuckDB setup", err);
  tm_buf_dispose(&sql);
  return rc;
}

int tm_db_open(tm_db **out, const tm_db_options *o, tm_error *err) {
  if (!o || o->version != TM_DB_OPTIONS_VERSION)
    return tm_error_set(err, TM_EINVALID, "DuckDB options of an unknown version");
  if (o->threads < 0 || o->memory_limit < 0)
    return tm_error_set(err, TM_EINVALID, "DuckDB threads and memory limit must not be negative");
  tm_db *db = tm_calloc(1, sizeof *db);
  if (!db) return tm_error_nomem(err);
  db->refs = 1;
  pthread_mutex_init(&db->admin_mu, NULL);
  pthread_mutex_init(&db->watch_mu, NULL);
  db->watch_wake_ns = INT64_MIN;
  tm_cond_init_monotonic(&db->watch_cv);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  db->lock_wait_ms = o->lock_wait_ms > 0 ? o->lock_wait_ms : o->lock_wait_ms < 0 ? 0 : TM_DB_DEFAULT_LOCK_WAIT_MS;
  db->threads = o->threads > 0 ? o->threads : (cores > 0 ? (int)cores : 1);
  db->memory_limit = o->memory_limit > 0 ? o->memory_limit
                                         : physical_memory() / TM_DB_DEFAULT_MEMORY_FRACTION;
  int rc = TM_OK;
  char *temp_abs = NULL;
  for (size_t i = 0; rc == TM_OK && i < o->n_dirs; i++) rc = add_dir(db, o->dirs[i], err);
  if (rc == TM_OK && o->temp_dir) {
    rc = absolute_dir(o->temp_dir, &temp_abs, err);
    if (rc == TM_OK) rc = add_dir(db, temp_abs, err);
  }

  duckdb_config cfg = NULL;
  if (rc == TM_OK && duckdb_create_config(&cfg) == DuckDBError)
    rc = tm_error_set(err, TM_ENOMEM, "DuckDB: cannot create a configuration");
  char num[32];
  snprintf(num, sizeof num, "%d", db->threads);
  if (rc == TM_OK) rc = set_config(cfg, "threads", num, err);
  snprintf(num, sizeof num, "%lldB", (long long)db->memory_limit);
  if (rc == TM_OK) rc = set_config(cfg, "memory_limit", num, err);
  if (rc == TM_OK) rc = set_config(cfg, "autoinstall_known_extensions", "false", err);
  if (rc == TM_OK) rc = set_config(cfg, "autoload_known_extensions", "false", err);
  if (rc == TM_OK) rc = set_config(cfg, "allow_community_extensions", "false", err);
  if (rc == TM_OK) rc = set_config(cfg, "allow_persistent_secrets", "false", err);
  if (rc == TM_OK && !temp_abs) rc = set_config(cfg, "temp_directory", "", err);
  if (rc == TM_OK) {
    char *msg = NULL;
    if (duckdb_open_ext(":memory:", &db->handle, cfg, &msg) == DuckDBError) {
      rc = tm_error_set(err, TM_ERROR, "DuckDB: %s", msg ? msg : "cannot open");
      db->handle = NULL;
    }
    if (msg) duckdb_free(msg);
  }
  if (cfg) duckdb_destroy_config(&cfg);
  if (rc == TM_OK && duckdb_connect(db->handle, &db->admin) == DuckDBError) {
    db->admin = NULL;
    rc = tm_error_set(err, TM_ERROR, "DuckDB: cannot connect");
  }
  /* Functions first: registering them is a catalog change of its own. */
  if (rc == TM_OK) rc = tm_db__scan_register(db, db->admin, err);
  if (rc == TM_OK) rc = lock_down(db, temp_abs, err);
  if (rc == TM_OK) {
    if (pthread_create(&db->watch_thread, NULL, watch_main, db) != 0)
      rc = tm_error_set(err, TM_ERROR, "cannot start the query watchdog");
    else db->watch_running = true;
  }
  tm_free(temp_abs);
  if (rc < 0) {
    tm_db_release(db);
    return rc;
  }
  *out = db;
  return TM_OK;
}

tm_db *tm_db_retain(tm_db *db) {
  __atomic_add_fetch(&db->refs, 1, __ATOMIC_RELAXED);
  return db;
}

void tm_db_release(tm_db *db) {
  if (!db || __atomic_sub_fetch(&db->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (db->watch_running) {
    pthread_mutex_lock(&db->watch_mu);
    db->watch_stop = true;
    pthread_cond_signal(&db->watch_cv);
    pthread_mutex_unlock(&db->watch_mu);
    pthread_join(db->watch_thread, NULL);
  }
  for (size_t i = 0; i < db->n_att; i++) {
    tm_free(db->att[i].alias);
    tm_free(db->att[i].path);
  }
  tm_free(db->att);
  if (db->admin) duckdb_disconnect(&db->admin);
  if (db->handle) duckdb_close(&db->handle);
  tm_db__scan_dispose(db);
  for (size_t i = 0; i < db->n_dirs; i++) tm_free(db->dirs[i]);
  tm_free(db->dirs);
  tm_free(db->watches);
  pthread_mutex_destroy(&db->admin_mu);
  pthread_mutex_destroy(&db->watch_mu);
  pthread_cond_destroy(&db->watch_cv);
  tm_free(db);
}
