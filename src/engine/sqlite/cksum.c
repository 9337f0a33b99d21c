/*
 * cksum.c - page checksums for the sqlite engine's database files (engine
 * layer, SPEC D5): a VFS that wraps the default one.
 *
 * SQLite keeps no checksum of the values it stores, so a flipped byte inside
 * a value reads back as another value. The sqlite engine creates its
 * databases with 8 reserved bytes at the end of every page (byte 20 of the
 * database header; SQLite never looks at them) and opens them through this
 * VFS, which fills those bytes on every page written to the database file
 * and checks them on every page read from it:
 *
 *   page[size-8 .. size-4)  CRC-32 (zlib) of the page number (4 bytes, big
 *                           endian) then page[0 .. size-8), little endian
 *   page[size-4 .. size)    the page number, little endian
 *
 * The page number in both catches a page written in the wrong place. A page
 * whose check fails, and a short read inside a checksummed file (the file was
 * truncated under SQLite), is SQLITE_IOERR_DATA: the statement fails, and
 * tm_sqlite_cksum_last_bad_page() names the page for the message.
 *
 * Only the database file is checked. The WAL is passed through untouched:
 * SQLite checksums each WAL frame over the page as it hands it over, before
 * xWrite, so changing the reserved bytes there would invalidate the frame and
 * lose committed transactions at the next recovery. Pages reach the database
 * file from the WAL by a checkpoint, which writes them through this VFS and
 * gets their checksums then; the engine checkpoints after each refresh
 * commit, so at rest the WAL holds little. A damaged frame is caught by
 * SQLite's own frame checksum when the WAL is recovered (after a crash),
 * which ends the WAL at that frame: an older committed state, never a mixed
 * one (the rows and the state map commit together, D1).
 *
 * The wrapper offers io-methods version 2 (with shared memory for WAL, without
 * xFetch), so SQLite never maps the file and every page read comes through
 * xRead. Files without the 8 reserved bytes (created before this VFS) are
 * read and written without checks.
 */
#include "engine/sqlite/cksum.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define CK_RESERVE TM_SQLITE_CKSUM_RESERVE
#define CK_HEADER 100

typedef struct ck_file {
  sqlite3_file base;    /* must be first: SQLite sees this */
  sqlite3_file *real;   /* the wrapped file: the memory right after this struct */
  bool main_db;         /* the database file (not a journal, WAL or temp file) */
  bool checked;         /* the header says 8 reserved bytes: pages carry checksums */
  uint32_t page_size;   /* from the header; 0 until it has been seen */
} ck_file;

static sqlite3_vfs g_ck_vfs;
static sqlite3_vfs *g_real_vfs;
static _Thread_local uint32_t g_last_bad_page;

static uint32_t get_be16(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }
static void put_le32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16),
  p[3] = (unsigned char)(v >> 24);
}
static uint32_t get_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t page_crc(const unsigned char *page, uint32_t size, uint32_t pgno) {
  unsigned char be[4] = {(unsigned char)(pgno >> 24), (unsigned char)(pgno >> 16),
                         (unsigned char)(pgno >> 8), (unsigned char)pgno};
  uLong c = crc32(0L, be, 4);
  return (uint32_t)crc32(c, page, size - CK_RESERVE);
}

/* Learns the page size and the reserved bytes from the first bytes of page 1. */
static void note_header(ck_file *f, const unsigned char *h) {
  if (memcmp(h, "SQLite format 3", 16) != 0) return;
  uint32_t size = get_be16(h + 16);
  if (size == 1) size = 65536;
  if (size < 512 || size > 65536 || (size & (size - 1))) return;
  f->page_size = size;
  f->checked = h[20] == CK_RESERVE;
}

/* A whole page of the checked database file at a page boundary. */
static bool is_page(const ck_file *f, int amt, sqlite3_int64 off) {
  return f->main_db && f->checked && f->page_size && (uint32_t)amt == f->page_size &&
         off % f->page_size == 0;
}

static int ck_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 off) {
  ck_file *f = (ck_file *)file;
  int rc = f->real->pMethods->xRead(f->real, buf, amt, off);
  if (f->main_db && off == 0 && amt >= CK_HEADER && rc == SQLITE_OK) note_header(f, buf);
  if (!is_page(f, amt, off)) return rc;
  uint32_t pgno = (uint32_t)(off / f->page_size) + 1;
  if (rc == SQLITE_IOERR_SHORT_READ) {
    /* Inside a file that has a header: it was cut short under SQLite. */
    g_last_bad_page = pgno;
    return SQLITE_IOERR_DATA;
  }
  if (rc != SQLITE_OK) return rc;
  const unsigned char *p = buf;
  if (get_le32(p + amt - 4) != pgno || get_le32(p + amt - 8) != page_crc(p, (uint32_t)amt, pgno)) {
    g_last_bad_page = pgno;
    return SQLITE_IOERR_DATA;
  }
  return SQLITE_OK;
}

static int ck_write(sqlite3_file *file, const void *buf, int amt, sqlite3_int64 off) {
  ck_file *f = (ck_file *)file;
  if (f->main_db && off == 0 && amt >= CK_HEADER) note_header(f, buf);
  if (!is_page(f, amt, off)) return f->real->pMethods->xWrite(f->real, buf, amt, off);
  /* The reserved bytes are ours: SQLite's copy of the page stays as it is. */
  unsigned char stack[4096];
  unsigned char *copy = (uint32_t)amt <= sizeof stack ? stack : sqlite3_malloc(amt);
  if (!copy) return SQLITE_IOERR_NOMEM;
  memcpy(copy, buf, (size_t)amt);
  uint32_t pgno = (uint32_t)(off / f->page_size) + 1;
  put_le32(copy + amt - 8, page_crc(copy, (uint32_t)amt, pgno));
  put_le32(copy + amt - 4, pgno);
  int rc = f->real->pMethods->xWrite(f->real, copy, amt, off);
  if (copy != stack) sqlite3_free(copy);
  return rc;
}

/* ---- the rest forwards ----------------------------------------------------------- */

#define REAL(file) (((ck_file *)(file))->real)

static int ck_close(sqlite3_file *file) {
  ck_file *f = (ck_file *)file;
  int rc = f->real->pMethods ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
  return rc;
}
static int ck_truncate(sqlite3_file *file, sqlite3_int64 size) {
  return REAL(file)->pMethods->xTruncate(REAL(file), size);
}
static int ck_sync(sqlite3_file *file, int flags) {
  return REAL(file)->pMethods->xSync(REAL(file), flags);
}
static int ck_file_size(sqlite3_file *file, sqlite3_int64 *out) {
  return REAL(file)->pMethods->xFileSize(REAL(file), out);
}
static int ck_lock(sqlite3_file *file, int level) {
  return REAL(file)->pMethods->xLock(REAL(file), level);
}
static int ck_unlock(sqlite3_file *file, int level) {
  return REAL(file)->pMethods->xUnlock(REAL(file), level);
}
static int ck_check_reserved(sqlite3_file *file, int *out) {
  return REAL(file)->pMethods->xCheckReservedLock(REAL(file), out);
}
static int ck_file_control(sqlite3_file *file, int op, void *arg) {
  int rc = REAL(file)->pMethods->xFileControl(REAL(file), op, arg);
  if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK && arg) {
    char *inner = *(char **)arg;
    *(char **)arg = sqlite3_mprintf("%s/%z", g_ck_vfs.zName, inner);
  }
  return rc;
}
static int ck_sector_size(sqlite3_file *file) {
  return REAL(file)->pMethods->xSectorSize(REAL(file));
}
static int ck_device_characteristics(sqlite3_file *file) {
  return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}
static int ck_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out) {
  return REAL(file)->pMethods->xShmMap(REAL(file), region, size, extend, out);
}
static int ck_shm_lock(sqlite3_file *file, int offset, int n, int flags) {
  return REAL(file)->pMethods->xShmLock(REAL(file), offset, n, flags);
}
static void ck_shm_barrier(sqlite3_file *file) { REAL(file)->pMethods->xShmBarrier(REAL(file)); }
static int ck_shm_unmap(sqlite3_file *file, int delete_flag) {
  return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}

static const sqlite3_io_methods k_ck_methods = {
    2, ck_close, ck_read, ck_write, ck_truncate, ck_sync, ck_file_size, ck_lock, ck_unlock,
    ck_check_reserved, ck_file_control, ck_sector_size, ck_device_characteristics, ck_shm_map,
    ck_shm_lock, ck_shm_barrier, ck_shm_unmap, NULL, NULL};

static int ck_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags,
                   int *out_flags) {
  (void)vfs;
  ck_file *f = (ck_file *)file;
  memset(f, 0, sizeof *f);
  f->real = (sqlite3_file *)(f + 1);
  f->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  int rc = g_real_vfs->xOpen(g_real_vfs, name, f->real, flags, out_flags);
  /* SQLite calls xClose only when pMethods is set; the real file must close then too. */
  if (f->real->pMethods) file->pMethods = &k_ck_methods;
  return rc;
}

/* The VFS-level calls are the real VFS's. */
static int ck_delete(sqlite3_vfs *v, const char *n, int s) {
  (void)v;
  return g_real_vfs->xDelete(g_real_vfs, n, s);
}
static int ck_access(sqlite3_vfs *v, const char *n, int f, int *o) {
  (void)v;
  return g_real_vfs->xAccess(g_real_vfs, n, f, o);
}
static int ck_full_pathname(sqlite3_vfs *v, const char *n, int cap, char *o) {
  (void)v;
  return g_real_vfs->xFullPathname(g_real_vfs, n, cap, o);
}
static void *ck_dl_open(sqlite3_vfs *v, const char *n) {
  (void)v;
  return g_real_vfs->xDlOpen(g_real_vfs, n);
}
static void ck_dl_error(sqlite3_vfs *v, int n, char *o) {
  (void)v;
  g_real_vfs->xDlError(g_real_vfs, n, o);
}
static void (*ck_dl_sym(sqlite3_vfs *v, void *h, const char *s))(void) {
  (void)v;
  return g_real_vfs->xDlSym(g_real_vfs, h, s);
}
static void ck_dl_close(sqlite3_vfs *v, void *h) {
  (void)v;
  g_real_vfs->xDlClose(g_real_vfs, h);
}
static int ck_randomness(sqlite3_vfs *v, int n, char *o) {
  (void)v;
  return g_real_vfs->xRandomness(g_real_vfs, n, o);
}
static int ck_sleep(sqlite3_vfs *v, int us) {
  (void)v;
  return g_real_vfs->xSleep(g_real_vfs, us);
}
static int ck_current_time(sqlite3_vfs *v, double *o) {
  (void)v;
  return g_real_vfs->xCurrentTime(g_real_vfs, o);
}
static int ck_last_error(sqlite3_vfs *v, int n, char *o) {
  (void)v;
  return g_real_vfs->xGetLastError ? g_real_vfs->xGetLastError(g_real_vfs, n, o) : 0;
}
static int ck_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *o) {
  (void)v;
  return g_real_vfs->xCurrentTimeInt64(g_real_vfs, o);
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_register_rc = SQLITE_ERROR;

static void ck_register(void) {
  g_real_vfs = sqlite3_vfs_find(NULL);
  if (!g_real_vfs || g_real_vfs->iVersion < 2 || !g_real_vfs->xCurrentTimeInt64) return;
  g_ck_vfs = (sqlite3_vfs){
      .iVersion = 2,
      .szOsFile = (int)sizeof(ck_file) + g_real_vfs->szOsFile,
      .mxPathname = g_real_vfs->mxPathname,
      .zName = TM_SQLITE_CKSUM_VFS,
      .xOpen = ck_open,
      .xDelete = ck_delete,
      .xAccess = ck_access,
      .xFullPathname = ck_full_pathname,
      .xDlOpen = ck_dl_open,
      .xDlError = ck_dl_error,
      .xDlSym = ck_dl_sym,
      .xDlClose = ck_dl_close,
      .xRandomness = ck_randomness,
      .xSleep = ck_sleep,
      .xCurrentTime = ck_current_time,
      .xGetLastError = ck_last_error,
      .xCurrentTimeInt64 = ck_current_time_int64,
  };
  g_register_rc = sqlite3_vfs_register(&g_ck_vfs, 0);
}

int tm_sqlite_cksum_register(void) {
  pthread_once(&g_once, ck_register);
  return g_register_rc;
}

uint32_t tm_sqlite_cksum_last_bad_page(void) { return g_last_bad_page; }
