/*
 * backup.c - consistent copies of a file-mode acceleration and their
 * restore (engine layer; SPEC C2). See backup.h.
 *
 * DuckDB engines: duckdb/duckdb.c copies the database file (see backup.h);
 * restoring checks DuckDB's file header and moves the file into place.
 *
 * sqlite: the online-backup API copies every page of the database through a
 * read connection of our own in a single sqlite3_backup_step(-1) call, which
 * holds one read transaction for the whole copy: the copy is one committed
 * state, and the refresh writer (WAL mode) is never blocked by it. The copy
 * goes to a temporary file beside the destination that is synced and renamed
 * into place.
 */
#include "engine/backup.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine_int.h"
#include "engine/sqlite/cksum.h"
#include "io/io.h"
#include "util/alloc.h"

#define BACKUP_BUSY_MS 10000

const char *tm_engine_backup_ext(tm_engine_kind kind) {
  switch (kind) {
    case TM_ENGINE_SQLITE: return "sqlite";
    case TM_ENGINE_CAYENNE:
    case TM_ENGINE_DUCKDB: return "duckdb";
    default: return NULL;
  }
}

/* A temporary name beside path, unique in this process. Result: tm_free. */
static char *temp_beside(const char *path) {
  static int counter;
  int n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  return tm_asprintf("%s.tmp.%d.%d", path, (int)getpid(), n);
}

static int sqlite_err(tm_error *err, sqlite3 *db, const char *what, const char *path) {
  int code = db ? sqlite3_errcode(db) : SQLITE_NOMEM;
  if (code == SQLITE_NOMEM) return tm_error_nomem(err);
  return tm_error_set(err, code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? TM_ECORRUPT : TM_EIO,
                      "%s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* Opens an existing database without creating it; read-only in spirit. */
static int open_existing(sqlite3 **out, const char *path, tm_error *err) {
  tm_engine__sqlite_setup();
  if (tm_sqlite_cksum_register() != SQLITE_OK)
    return tm_error_set(err, TM_EIO, "%s: cannot set up SQLite's checksum VFS", path);
  sqlite3 *db = NULL;
  int src = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                            TM_SQLITE_CKSUM_VFS);
  if (src != SQLITE_OK) {
    int rc = src == SQLITE_CANTOPEN ? tm_error_set(err, TM_ENOTFOUND, "%s: no database", path)
                                    : sqlite_err(err, db, "cannot open", path);
    sqlite3_close(db);
    return rc;
  }
  sqlite3_busy_timeout(db, BACKUP_BUSY_MS);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  if (sqlite3_exec(db, "PRAGMA query_only=1", NULL, NULL, NULL) != SQLITE_OK) {
    int rc = sqlite_err(err, db, "cannot configure", path);
    sqlite3_close(db);
    return rc;
  }
  *out = db;
  return TM_OK;
}

static int fsync_path(const char *path, tm_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  int r = tm_io_fsync(fd);
  int e = errno;
  close(fd);
  if (r != 0) return tm_error_set(err, TM_EIO, "%s: fsync: %s", path, strerror(e));
  return TM_OK;
}

/* Renames from over to and makes the rename durable. */
static int publish(const char *from, const char *to, tm_error *err) {
  if (rename(from, to) != 0)
    return tm_error_set(err, TM_EIO, "%s: rename to %s: %s", from, to, strerror(errno));
  char *dir = tm_path_dirname(to);
  if (!dir) return tm_error_nomem(err);
  int rc = tm_fsync_dir(dir, err);
  tm_free(dir);
  return rc;
}

static void remove_sqlite_files(const char *path) {
  const char *sfx[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
    char *p = tm_asprintf("%s%s", path, sfx[i]);
    if (p) unlink(p);
    tm_free(p);
  }
}

static int sqlite_backup(tm_engine *e, const char *dest, tm_error *err) {
  const char *src_path = e->cfg.path;
  sqlite3 *src = NULL, *dst = NULL;
  sqlite3_backup *b = NULL;
  char *tmp = temp_beside(dest);
  if (!tmp) return tm_error_nomem(err);
  int rc = open_existing(&src, src_path, err);
  if (rc == TM_OK) {
    int s = sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                           SQLITE_OPEN_NOMUTEX, TM_SQLITE_CKSUM_VFS);
    if (s != SQLITE_OK) rc = sqlite_err(err, dst, "cannot create", tmp);
  }
  if (rc == TM_OK) {
    b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b) rc = sqlite_err(err, dst, "cannot start the backup", src_path);
  }
  if (rc == TM_OK) {
    /*
     * One step copies every page under one read transaction. BUSY only
     * happens while a checkpoint holds the WAL; wait and try again.
     */
    int s;
    for (int attempt = 0;; attempt++) {
      s = sqlite3_backup_step(b, -1);
      if ((s != SQLITE_BUSY && s != SQLITE_LOCKED) || attempt >= 100) break;
      sqlite3_sleep(50);
    }
    int f = sqlite3_backup_finish(b);
    b = NULL;
    if (s != SQLITE_DONE || f != SQLITE_OK)
      rc = tm_error_set(err, TM_EIO, "%s: backup: %s", src_path, sqlite3_errmsg(dst));
  }
  if (b) sqlite3_backup_finish(b);
  if (dst && sqlite3_close(dst) != SQLITE_OK && rc == TM_OK)
    rc = tm_error_set(err, TM_EIO, "%s: cannot close the copy", tmp);
  sqlite3_close(src);
  if (rc == TM_OK) rc = fsync_path(tmp, err);
  if (rc == TM_OK) rc = publish(tmp, dest, err);
  if (rc != TM_OK) remove_sqlite_files(tmp);
  tm_free(tmp);
  return rc;
}

int tm_engine_backup(tm_engine *e, const char *dest_path, tm_error *err) {
  if (e->cfg.mode != TM_ENGINE_FILE || !e->cfg.path)
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "dataset %s: only a file-mode acceleration can be copied",
                        e->cfg.dataset);
  switch (e->vt->traits.kind) {
    case TM_ENGINE_SQLITE: return sqlite_backup(e, dest_path, err);
    case TM_ENGINE_CAYENNE:
    case TM_ENGINE_DUCKDB: return tm_engine__duck_backup(e, dest_path, err);
    default:
      return tm_error_set(err, TM_EUNSUPPORTED, "dataset %s: the %s engine has no backup",
                          e->cfg.dataset, tm_engine_kind_name(e->vt->traits.kind));
  }
}

/* Checks that path is an intact SQLite database holding an acceleration. */
static int sqlite_check(const char *path, tm_error *err) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  TM_TRY(open_existing(&db, path, err));
  int rc = TM_OK;
  if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK) {
    rc = sqlite_err(err, db, "not a database", path);
  } else if (sqlite3_step(st) != SQLITE_ROW ||
             strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
    rc = TM_CORRUPT(err, "%s: the backup is damaged (quick_check)", path);
  }
  sqlite3_finalize(st);
  st = NULL;
  if (rc == TM_OK) {
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='_tm_meta'",
                           -1, &st, NULL) != SQLITE_OK)
      rc = sqlite_err(err, db, "not a database", path);
    else if (sqlite3_step(st) != SQLITE_ROW)
      rc = TM_CORRUPT(err, "%s: not a tidemark sqlite acceleration", path);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return rc;
}

/*
 * A DuckDB database file starts with a checksum (8 bytes) and the magic
 * "DUCK"; anything else is not a backup of ours. Then its meta table must
 * name this engine (duckdb/duckdb.c); the engine checks the schema when it
 * opens the file.
 */
static int duck_restore(tm_engine_kind kind, const tm_engine_options *opts, const char *backup_path,
                        tm_error *err) {
  tm_input *in = NULL;
  char magic[4];
  int rc = tm_input_open_file(&in, backup_path, err);
  if (rc == TM_OK) rc = tm_input_read_exact(in, 8, magic, 4, err);
  tm_input_close(in);
  if (rc == TM_OK && memcmp(magic, "DUCK", 4) != 0)
    rc = TM_CORRUPT(err, "%s: not a DuckDB database", backup_path);
  if (rc == TM_ECORRUPT || rc == TM_EIO) rc = TM_CORRUPT(err, "%s: not a DuckDB database backup", backup_path);
  if (rc == TM_OK && !opts->db)
    rc = tm_error_set(err, TM_EINVALID, "dataset %s: a restore needs the DuckDB instance (options.db)",
                      opts->dataset ? opts->dataset : "?");
  if (rc == TM_OK) rc = tm_engine__duck_check_backup(opts->db, kind, backup_path, err);
  char *file = NULL;
  if (rc == TM_OK) rc = tm_engine__duck_file(kind, opts, &file, err);
  if (rc == TM_OK) rc = tm_engine_drop(kind, opts, err);
  if (rc == TM_OK) {
    char *dir = tm_path_dirname(file);
    rc = dir ? tm_mkdir_p(dir, err) : tm_error_nomem(err);
    tm_free(dir);
  }
  if (rc == TM_OK) rc = publish(backup_path, file, err);
  if (rc != TM_OK) unlink(backup_path);
  tm_free(file);
  return rc;
}

int tm_engine_restore(tm_engine_kind kind, const tm_engine_options *opts,
                      const char *backup_path, tm_error *err) {
  if (opts->mode != TM_ENGINE_FILE || !opts->path)
    return tm_error_set(err, TM_EUNSUPPORTED, "dataset %s: only a file-mode acceleration can be restored",
                        opts->dataset ? opts->dataset : "?");
  if (kind == TM_ENGINE_CAYENNE || kind == TM_ENGINE_DUCKDB) return duck_restore(kind, opts, backup_path, err);
  if (kind != TM_ENGINE_SQLITE)
    return tm_error_set(err, TM_EUNSUPPORTED, "dataset %s: the %s engine has no backup",
                        opts->dataset ? opts->dataset : "?", tm_engine_kind_name(kind));
  int rc = sqlite_check(backup_path, err);
  if (rc == TM_OK) rc = tm_engine_drop(kind, opts, err);
  if (rc == TM_OK) {
    char *dir = tm_path_dirname(opts->path);
    rc = dir ? tm_mkdir_p(dir, err) : tm_error_nomem(err);
    tm_free(dir);
  }
  if (rc == TM_OK) rc = publish(backup_path, opts->path, err);
  if (rc != TM_OK) remove_sqlite_files(backup_path);
  return rc;
}
