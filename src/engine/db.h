/*
 * db.h - the process's one DuckDB instance (engine layer; SPEC section 3, D4).
 *
 * DuckDB (C API, 1.4 LTS) is tidemark's one SQL engine and the columnar store
 * of its accelerations. A tm_db is one in-memory DuckDB database in which
 * every dataset is a view of its name (engine/sql.h), over:
 *
 *   cayenne, duckdb  a DuckDB database file per dataset, ATTACHed;
 *   arrow, duckdb    an in-memory database per dataset, ATTACHed (memory mode);
 *   sqlite           a scan of the dataset's SQLite table (table function);
 *   federated        a scan of the dataset's source (table function, C6).
 *
 * The instance is locked down when it opens, before any user SQL can run
 * (SPEC D4): file access is limited to the folders the accelerations live in
 * and the spill folder (enable_external_access = false, allowed_directories),
 * extensions are neither installed nor loaded automatically, the time zone is
 * UTC, and the configuration is locked. The folders must therefore be known
 * at open: every file-mode acceleration of the process lives in one of them.
 *
 * Threads: a tm_db may be used from any thread. Ownership: tm_db_open returns
 * one reference (tm_db_release); every engine and SQL session opened on it
 * holds another, so the instance closes when the last of them goes.
 */
#ifndef TM_ENGINE_DB_H
#define TM_ENGINE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct tm_db tm_db;

#define TM_DB_OPTIONS_VERSION 1

/* Defaults (docs/ENGINES.md): every core, a third of physical memory. */
#define TM_DB_DEFAULT_MEMORY_FRACTION 3

typedef struct tm_db_options {
  int version;              /* TM_DB_OPTIONS_VERSION */
  int threads;              /* DuckDB worker threads; 0: the machine's cores */
  int64_t memory_limit;     /* bytes DuckDB may hold; 0: a third of physical memory */
  const char *temp_dir;     /* spill folder (created when missing); NULL: no spilling */
  const char *const *dirs;  /* folders the file-mode accelerations live in (created) */
  size_t n_dirs;
  /*
   * How long opening a database file waits while another process holds it
   * (DuckDB allows one read-write opener per file: a `tidemark refresh` from
   * cron, say) before failing with TM_ECONFLICT. 0: TM_DB_DEFAULT_LOCK_WAIT_MS;
   * negative: do not wait.
   */
  int64_t lock_wait_ms;
} tm_db_options;

#define TM_DB_DEFAULT_LOCK_WAIT_MS 10000

void tm_db_options_init(tm_db_options *o);

/**
 * Opens a DuckDB instance with the options (copied). Folders are made
 * absolute; missing ones are created.
 * Errors: TM_EINVALID (a bad option), TM_EIO, TM_ENOMEM, TM_ERROR (DuckDB).
 */
int tm_db_open(tm_db **out, const tm_db_options *opts, tm_error *err) TM_WARN_UNUSED;
/** Adds a reference; returns db. */
tm_db *tm_db_retain(tm_db *db);
/** Drops a reference; the last one closes DuckDB. NULL is a no-op. */
void tm_db_release(tm_db *db);

/** The settings in force (for logs and status). */
int tm_db_threads(const tm_db *db);
int64_t tm_db_memory_limit(const tm_db *db);

/**
 * Whether the instance still works. DuckDB stops a whole instance after a
 * fatal I/O error (fsync failing: like PostgreSQL, it cannot trust what the
 * kernel may have dropped); every statement then fails until the process
 * opens a new instance. False with DuckDB's reason in why (may be NULL).
 */
bool tm_db_healthy(tm_db *db, char *why, size_t cap);

/**
 * Whether an error message says that an acceleration's own storage is
 * damaged (DuckDB: a block whose checksum does not match, a file that is not
 * a database; SQLite: a malformed database image), as opposed to malformed
 * input from a source, which is TM_ECORRUPT too (SPEC D5).
 */
bool tm_db_message_is_storage_damage(const char *msg);

/** DuckDB's version string ("v1.4.4"). */
const char *tm_db_version(void);

#endif
