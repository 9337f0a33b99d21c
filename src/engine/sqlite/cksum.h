/*
 * cksum.h - page checksums for the sqlite engine's files (engine layer;
 * used by sqlite.c and by engine/backup.c, which copies those files).
 *
 * The sqlite engine opens its databases through the VFS named
 * TM_SQLITE_CKSUM_VFS and creates them with TM_SQLITE_CKSUM_RESERVE reserved
 * bytes per page, which hold each page's checksum (SPEC D5; the format is in
 * docs/FORMATS.md). A page that fails its check reads as SQLITE_IOERR_DATA.
 */
#ifndef TM_ENGINE_SQLITE_CKSUM_H
#define TM_ENGINE_SQLITE_CKSUM_H

#include <stdint.h>

#define TM_SQLITE_CKSUM_VFS "tidemark-cksum"
#define TM_SQLITE_CKSUM_RESERVE 8

/** Registers the VFS once (thread-safe); SQLITE_OK or SQLite's error code. */
int tm_sqlite_cksum_register(void);
/** The page number of this thread's last page that failed its check (0: none). */
uint32_t tm_sqlite_cksum_last_bad_page(void);

#endif
