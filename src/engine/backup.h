/*
 * backup.h - consistent copies of a file-mode acceleration, and restoring
 * one (engine layer; SPEC C2).
 *
 * The runtime's acceleration snapshots need a copy of an acceleration that is
 * exactly one committed state even while refreshes commit and queries read.
 * The engine knows what "one committed state" is on disk, so the copy is
 * taken here, as one file:
 *
 *   sqlite   a SQLite database file, made with the online-backup API through
 *            a connection of its own in one step (one read transaction, so
 *            one commit; a refresh committing meanwhile is not seen);
 *   cayenne, duckdb (file mode)
 *            a DuckDB database file written by COPY FROM DATABASE in one
 *            DuckDB transaction (one committed state; refreshes and queries
 *            go on meanwhile), checkpointed, then moved into place
 *            (duckdb/duckdb.c).
 *
 * The copy is written through a temporary name renamed into place, so a
 * reader never sees half of it. Restoring puts such a file where the
 * dataset's acceleration lives, before the engine opens it.
 */
#ifndef TM_ENGINE_BACKUP_H
#define TM_ENGINE_BACKUP_H

#include "engine/engine.h"
#include "util/error.h"

/**
 * Copies engine e's last committed state into the file dest_path (replaced
 * if it exists; its folder must exist). Safe while other threads refresh and
 * query e.
 * Errors: TM_EUNSUPPORTED (memory mode, or an engine kind without backups),
 * TM_EIO, TM_ENOMEM.
 */
int tm_engine_backup(tm_engine *e, const char *dest_path, tm_error *err) TM_WARN_UNUSED;

/**
 * Installs a backup file made by tm_engine_backup as the file-mode
 * acceleration that opts (path, dataset) describe. The acceleration must not
 * be open; whatever was stored there is replaced. The backup is checked to be
 * a backup of kind (TM_ECORRUPT otherwise) and is consumed (moved or
 * removed). Open it with tm_engine_open afterwards.
 * Errors: TM_EUNSUPPORTED, TM_ECORRUPT, TM_EIO, TM_ENOMEM.
 */
int tm_engine_restore(tm_engine_kind kind, const tm_engine_options *opts,
                      const char *backup_path, tm_error *err) TM_WARN_UNUSED;

/**
 * The file-name extension of kind's backups ("sqlite", "duckdb"), without
 * the leading dot; NULL when the kind has no backups (arrow: memory only).
 */
const char *tm_engine_backup_ext(tm_engine_kind kind);

#endif
