/*
 * Faulty storage under whole refreshes (issue 10; SPEC D1, D2, D3).
 *
 * Reads: the source's object store is wrapped in the fault backend
 * (objstore/fault) through tm_objstore_set_open_hook; a file dataset is
 * read from file:data, an Iceberg table from iceberg:s3://wh/tbl, which the
 * hook serves from the run's folder. A clean refresh counts the store
 * operations it makes (T); then for N in 1..T the N-th operation fails, fails
 * after delivering part of its bytes, comes back truncated, or is delayed,
 * and:
 *   - the refresh fails with an error naming the object (its file name) and
 *     the cause, or succeeds where the fault does not matter (a delay; a
 *     truncated listing or stat is no fault);
 *   - after a failure the acceleration is unchanged (exactly the old rows),
 *     also when reopened; after a success it holds exactly the new rows;
 *   - the next refresh without faults ends with exactly the new rows (no
 *     duplicate, no missing row), and nothing leaked (tm_alloc_live).
 *
 * Writes: DuckDB (cayenne) writes its files with pwrite, fsync, ftruncate
 * and fallocate from libduckdb.so; this test program defines those calls,
 * so the dynamic linker binds DuckDB's to them (below), and the N-th call on
 * a DuckDB file (.duckdb, .duckdb.wal) fails with ENOSPC or EIO, or writes
 * half and then fails every later call (a disk filling up). sqlite's writes
 * go through SQLite's VFS, so a fault VFS (below), placed in front of the
 * engine's checksum VFS, fails the N-th xWrite/xSync/xTruncate with
 * SQLITE_FULL or SQLITE_IOERR.
 * The refresh fails naming the file and the cause, the previous rows keep
 * serving (or, when only the final folder fsync failed, the new ones), and
 * the next refresh completes.
 *
 * TM_STRESS=1 sweeps every N with every fault kind; otherwise an evenly
 * spread sample of N (TM_STORAGE_SAMPLES, default 2; make stress sweeps every N) per kind.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/types.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sqlite/cksum.h"
#include "io/io.h"
#include "objstore/fault/fault.h"
#include "objstore/file/file.h"
#include "refresh_fixture.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

/* ---- DuckDB's writes: interposed system calls ------------------------------------------ */

typedef struct duck_faults {
  pthread_mutex_t mu;
  bool on;
  int64_t nth, seen;
  int error;
  bool sticky, short_first, fired;
} duck_faults;

static duck_faults g_duck = {PTHREAD_MUTEX_INITIALIZER, false, 0, 0, 0, false, false, false};

static bool is_duck_fd(int fd) {
  char link[64], path[1024];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  return strstr(path, ".duckdb") != NULL;
}

typedef enum duck_verdict { D_PASS, D_FAIL, D_SHORT } duck_verdict;

static duck_verdict duck_decide(int fd, bool is_write_call) {
  if (!__atomic_load_n(&g_duck.on, __ATOMIC_ACQUIRE) || !is_duck_fd(fd)) return D_PASS;
  pthread_mutex_lock(&g_duck.mu);
  duck_verdict v = D_PASS;
  int64_t n = ++g_duck.seen;
  if (g_duck.nth > 0 && (n == g_duck.nth || (n > g_duck.nth && g_duck.sticky))) {
    v = n == g_duck.nth && g_duck.short_first && is_write_call ? D_SHORT : D_FAIL;
    g_duck.fired = true;
  }
  pthread_mutex_unlock(&g_duck.mu);
  return v;
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset);
ssize_t write(int fd, const void *buf, size_t count);
int fsync(int fd);
int ftruncate(int fd, off_t length);
int fallocate(int fd, int mode, off_t offset, off_t len);

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "pwrite");
  duck_verdict v = duck_decide(fd, true);
  if (v == D_FAIL) {
    errno = g_duck.error;
    return -1;
  }
  return real(fd, buf, v == D_SHORT && count > 1 ? count / 2 : count, offset);
}

ssize_t write(int fd, const void *buf, size_t count) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "write");
  duck_verdict v = duck_decide(fd, true);
  if (v == D_FAIL) {
    errno = g_duck.error;
    return -1;
  }
  return real(fd, buf, v == D_SHORT && count > 1 ? count / 2 : count);
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fsync");
  if (duck_decide(fd, false) != D_PASS) {
    errno = g_duck.error;
    return -1;
  }
  return real(fd);
}

/*
 * Shrinking a file needs no space, so a full disk never fails it: only a
 * growing truncation is a fault here. (DuckDB 1.4 ends the process when the
 * truncation that rolls its log back fails: RELIABILITY.md.)
 */
int ftruncate(int fd, off_t length) {
  static int (*real)(int, off_t);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "ftruncate");
  off_t size = lseek(fd, 0, SEEK_END);
  if (size >= 0 && length <= size) return real(fd, length);
  if (duck_decide(fd, false) != D_PASS) {
    errno = g_duck.error;
    return -1;
  }
  return real(fd, length);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
  static int (*real)(int, int, off_t, off_t);
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fallocate");
  if (duck_decide(fd, false) != D_PASS) {
    errno = g_duck.error;
    return -1;
  }
  return real(fd, mode, offset, len);
}

/* ---- the open hook: fault stores over the run's folder ------------------------------- */

typedef struct hook_ctx {
  char root[1024];      /* the folder s3://wh/ stands for */
  bool has_rule;        /* installed on each fault store the hook makes */
  tm_fault_rule rule;
  tm_objstore *last;    /* the last fault store made (owned by its source) */
} hook_ctx;

static hook_ctx g_hook;

static int hook(tm_objstore **store, const char *url, void *payload, tm_error *err) {
  hook_ctx *h = payload;
  tm_objstore *inner = *store;
  bool s3 = strncmp(url, "s3://", 5) == 0;
  if (s3) TM_TRY(tm_objstore_file_new(&inner, h->root, err));
  tm_objstore *f = NULL;
  int rc = tm_objstore_fault_new(&f, inner, true, err);
  if (rc == TM_OK && h->has_rule) rc = tm_objstore_fault_add(f, &h->rule, err);
  if (rc < 0) {
    if (f) tm_objstore_free(f);
    else if (s3) tm_objstore_free(inner);
    return rc;
  }
  if (s3) tm_objstore_free(*store); /* the S3 store is never contacted */
  *store = f;
  h->last = f;
  return TM_OK;
}

static void hook_on(const char *root) {
  memset(&g_hook, 0, sizeof g_hook);
  snprintf(g_hook.root, sizeof g_hook.root, "%s", root);
  tm_objstore_set_open_hook(hook, &g_hook);
}

static void hook_off(void) { tm_objstore_set_open_hook(NULL, NULL); }

/* ---- a fault VFS for the sqlite engine ------------------------------------------------ */

typedef struct vfs_state {
  bool on;
  int64_t nth, seen;  /* the nth counted call fails; 0: count only */
  bool sticky, fired;
  bool in_ckpt;       /* SQLite holds the WAL's checkpoint lock */
  bool fired_in_ckpt; /* the first fault hit a checkpoint's write or sync */
  int code;           /* SQLITE_FULL or SQLITE_IOERR_* */
} vfs_state;

static vfs_state g_vfs;
static sqlite3_vfs *g_real;

typedef struct ffile {
  sqlite3_file base;
  sqlite3_file *real; /* follows this struct in the same block */
} ffile;

static bool vfs_fail(void) {
  if (!g_vfs.on) return false;
  int64_t n = __atomic_add_fetch(&g_vfs.seen, 1, __ATOMIC_SEQ_CST);
  if (g_vfs.nth > 0 && (n == g_vfs.nth || (n > g_vfs.nth && g_vfs.sticky))) {
    if (!g_vfs.fired) g_vfs.fired_in_ckpt = g_vfs.in_ckpt;
    g_vfs.fired = true;
    return true;
  }
  return false;
}

#define REAL(f) (((ffile *)(f))->real)
static int f_close(sqlite3_file *f) {
  int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
  return rc;
}
static int f_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o) {
  return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int f_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) {
  if (vfs_fail()) return g_vfs.code;
  return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size) {
  if (vfs_fail()) return g_vfs.code == SQLITE_FULL ? SQLITE_IOERR_TRUNCATE : g_vfs.code;
  return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags) {
  if (vfs_fail()) return g_vfs.code == SQLITE_FULL ? SQLITE_IOERR_FSYNC : g_vfs.code;
  return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int f_size(sqlite3_file *f, sqlite3_int64 *out) { return REAL(f)->pMethods->xFileSize(REAL(f), out); }
static int f_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int f_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int f_check(sqlite3_file *f, int *out) {
  return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_ctl(sqlite3_file *f, int op, void *arg) { return REAL(f)->pMethods->xFileControl(REAL(f), op, arg); }
static int f_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int f_dev(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int f_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp) {
  return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp);
}
/* Slot 1 of the WAL's shared-memory locks, taken alone, is its checkpoint lock. */
static int f_shm_lock(sqlite3_file *f, int off, int n, int flags) {
  int rc = REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
  if (off == 1 && n == 1 && rc == SQLITE_OK) g_vfs.in_ckpt = (flags & SQLITE_SHM_LOCK) != 0;
  return rc;
}
static void f_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int f_shm_unmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }

/* Version 2 methods: WAL needs the shared-memory ones; no mmap (xFetch) so every page goes through xRead/xWrite. */
static const sqlite3_io_methods k_fmethods = {
    2,      f_close, f_read,   f_write,  f_truncate,    f_sync,        f_size,
    f_lock, f_unlock, f_check, f_ctl,    f_sector,      f_dev,         f_shm_map,
    f_shm_lock, f_shm_barrier, f_shm_unmap, NULL, NULL};

static int v_open(sqlite3_vfs *v, const char *name, sqlite3_file *file, int flags, int *out_flags) {
  (void)v;
  ffile *f = (ffile *)file;
  f->real = (sqlite3_file *)(f + 1);
  memset(f->real, 0, (size_t)g_real->szOsFile);
  int rc = g_real->xOpen(g_real, name, f->real, flags, out_flags);
  f->base.pMethods = f->real->pMethods ? &k_fmethods : NULL;
  return rc;
}
static int v_delete(sqlite3_vfs *v, const char *n, int sync) {
  (void)v;
  return g_real->xDelete(g_real, n, sync);
}
static int v_access(sqlite3_vfs *v, const char *n, int flags, int *out) {
  (void)v;
  return g_real->xAccess(g_real, n, flags, out);
}
static int v_full(sqlite3_vfs *v, const char *n, int len, char *out) {
  (void)v;
  return g_real->xFullPathname(g_real, n, len, out);
}
static void *v_dlopen(sqlite3_vfs *v, const char *n) {
  (void)v;
  return g_real->xDlOpen(g_real, n);
}
static void v_dlerror(sqlite3_vfs *v, int n, char *out) {
  (void)v;
  g_real->xDlError(g_real, n, out);
}
static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void) {
  (void)v;
  return g_real->xDlSym(g_real, h, s);
}
static void v_dlclose(sqlite3_vfs *v, void *h) {
  (void)v;
  g_real->xDlClose(g_real, h);
}
static int v_random(sqlite3_vfs *v, int n, char *out) {
  (void)v;
  return g_real->xRandomness(g_real, n, out);
}
static int v_sleep(sqlite3_vfs *v, int us) {
  (void)v;
  return g_real->xSleep(g_real, us);
}
static int v_time(sqlite3_vfs *v, double *out) {
  (void)v;
  return g_real->xCurrentTime(g_real, out);
}
static int v_lasterr(sqlite3_vfs *v, int n, char *out) {
  (void)v;
  return g_real->xGetLastError ? g_real->xGetLastError(g_real, n, out) : 0;
}
static int v_time64(sqlite3_vfs *v, sqlite3_int64 *out) {
  (void)v;
  return g_real->xCurrentTimeInt64(g_real, out);
}

static sqlite3_vfs g_fvfs;

/* Puts the fault VFS in front of the engine's checksum VFS (once): it takes
 * that VFS's name and is found first, so the engine opens its files through
 * it, and it hands every call on to the checksum VFS. */
static void vfs_install(void) {
  if (g_real) return;
  g_real = sqlite3_vfs_find(TM_SQLITE_CKSUM_VFS);
  TM_ASSERT(g_real);
  sqlite3_vfs v = {2,        (int)(sizeof(ffile) + (size_t)g_real->szOsFile), g_real->mxPathname,
                   NULL,     TM_SQLITE_CKSUM_VFS, NULL,       v_open,     v_delete,  v_access,
                   v_full,   v_dlopen,    v_dlerror,  v_dlsym,    v_dlclose, v_random,
                   v_sleep,  v_time,      v_lasterr,  v_time64,   NULL,      NULL,
                   NULL};
  g_fvfs = v;
  TM_ASSERT(sqlite3_vfs_register(&g_fvfs, 0) == SQLITE_OK);
  TM_ASSERT(sqlite3_vfs_find(TM_SQLITE_CKSUM_VFS) == &g_fvfs);
}

/* ---- one sweep ------------------------------------------------------------------------- */

typedef enum fault_kind {
  F_READ_FAIL,     /* the nth store operation fails (TM_EIO) */
  F_READ_PARTIAL,  /* a get delivers 100 bytes, then fails */
  F_READ_TRUNCATE, /* a get delivers at most 7 bytes and succeeds */
  F_READ_DELAY,    /* the nth operation waits 2 ms */
  F_WRITE_ENOSPC,  /* the nth local write or sync fails with ENOSPC (sqlite: SQLITE_FULL) */
  F_WRITE_EIO,     /* ... with EIO (sqlite: SQLITE_IOERR) */
  F_WRITE_FILLING, /* the nth write is short, every call after it fails (a disk filling up) */
  F__COUNT
} fault_kind;

static const char *const k_kind_names[F__COUNT] = {"read-fail",  "read-partial", "read-truncate",
                                                  "read-delay", "write-enospc", "write-eio",
                                                  "write-filling"};

static bool is_write(fault_kind k) { return k >= F_WRITE_ENOSPC; }

typedef struct tally {
  int64_t runs, failed, succeeded, reopened_new, restarts;
  int64_t ckpt_failed; /* succeeded although a checkpoint after the commit failed */
  int64_t codes[32];
  char sample[F__COUNT][TM_ERROR_MESSAGE_MAX];
} tally;

static bool sqlite_engine(const rfx_scenario *s) { return strstr(s->accel, "sqlite") != NULL; }

/* Counting (n 0) or injecting fault k at n, before the refresh; returns the count so far. */
static void arm(const rfx_scenario *s, fault_kind k, int64_t n) {
  if (!is_write(k)) {
    tm_fault_rule r = {TM_FAULT_RULE_VERSION, TM_FAULT_ANY, n ? (uint64_t)n : UINT64_MAX, 1,
                       TM_FAULT_FAIL, TM_EIO, 0, 0};
    if (k == F_READ_PARTIAL || k == F_READ_TRUNCATE) r.op = TM_FAULT_GET;
    if (k == F_READ_PARTIAL) r.keep_bytes = 100;
    if (k == F_READ_TRUNCATE) {
      r.action = TM_FAULT_TRUNCATE;
      r.keep_bytes = 7;
    }
    if (k == F_READ_DELAY) {
      r.action = TM_FAULT_DELAY;
      r.delay_ms = 2;
    }
    g_hook.rule = r;
    g_hook.has_rule = true;
    return;
  }
  if (sqlite_engine(s)) {
    g_vfs.nth = n;
    g_vfs.seen = 0;
    g_vfs.fired = g_vfs.fired_in_ckpt = false;
    g_vfs.sticky = k == F_WRITE_FILLING;
    g_vfs.code = k == F_WRITE_EIO ? SQLITE_IOERR_WRITE : SQLITE_FULL;
    g_vfs.on = true;
    return;
  }
  pthread_mutex_lock(&g_duck.mu);
  g_duck.nth = n;
  g_duck.seen = 0;
  g_duck.fired = false;
  g_duck.error = k == F_WRITE_EIO ? EIO : ENOSPC;
  g_duck.sticky = g_duck.short_first = k == F_WRITE_FILLING;
  pthread_mutex_unlock(&g_duck.mu);
  __atomic_store_n(&g_duck.on, true, __ATOMIC_RELEASE);
}

/* Stops injecting; returns the operations counted and whether a fault fired. */
static int64_t disarm(const rfx_scenario *s, fault_kind k, bool *fired, bool *in_ckpt) {
  int64_t n;
  if (!is_write(k)) {
    /* Operations of the kind the rule counts. */
    n = g_hook.last ? (int64_t)tm_objstore_fault_seen(g_hook.last, g_hook.rule.op) : 0;
    *fired = g_hook.last && tm_objstore_fault_fired(g_hook.last) > 0;
    if (g_hook.last) tm_objstore_fault_clear(g_hook.last);
    g_hook.has_rule = false;
  } else if (sqlite_engine(s)) {
    g_vfs.on = false;
    n = g_vfs.seen;
    *fired = g_vfs.fired;
    *in_ckpt = g_vfs.fired_in_ckpt;
  } else {
    __atomic_store_n(&g_duck.on, false, __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_duck.mu);
    n = g_duck.seen;
    *fired = g_duck.fired;
    pthread_mutex_unlock(&g_duck.mu);
  }
  return n;
}

/* The last segment of a key or prefix ("data/a.parquet" -> "a.parquet", "data/" -> "data"). */
static void last_segment(const char *key, char *out, size_t cap) {
  size_t len = strlen(key);
  while (len && key[len - 1] == '/') len--;
  size_t start = len;
  while (start && key[start - 1] != '/') start--;
  snprintf(out, cap, "%.*s", (int)(len - start), key + start);
}

static void expect_rows(const rfx_scenario *s, fault_kind k, int64_t n, tm_accel *a,
                        rfx_sig want, const char *want_name, const char *when) {
  tm_error err;
  rfx_sig got;
  TM_ASSERT_OK(rfx_accel_sig(a, &got, &err), &err);
  TM_ASSERT_MSG(rfx_sig_eq(got, want), "%s, %s at %lld: %s the acceleration holds %lld rows, not the %s %lld",
                s->name, k_kind_names[k], (long long)n, when, (long long)got.rows, want_name,
                (long long)want.rows);
}

/* One run from the template with fault k at n (0: count only); returns the operations counted. */
static int64_t one_run(const rfx_scenario *s, const rfx_template *t, const char *run_dir,
                       fault_kind k, int64_t n, tally *ty) {
  tm_error err;
  tm_error_init(&err);
  rfx_remove_tree(run_dir);
  rfx_copy_tree(t->dir, run_dir);
  snprintf(g_hook.root, sizeof g_hook.root, "%s", run_dir);
  g_hook.last = NULL;
  int64_t live0 = tm_alloc_live();
  rfx f;
  if (!is_write(k)) arm(s, k, n); /* store rules go on the stores the source opens */
  rfx_open(&f, run_dir, t->yaml);
  rfx_template_apply(s, run_dir);
  if (is_write(k)) arm(s, k, n);
  tm_refresh_result r;
  int rc = tm_accel_refresh(f.a, NULL, &r, &err);
  bool fired = false, in_ckpt = false;
  int64_t count = disarm(s, k, &fired, &in_ckpt);
  char key[1100] = "";
  if (!is_write(k) && g_hook.last) tm_objstore_fault_last_hit(g_hook.last, key, sizeof key);
  ty->runs++;
  bool renamed_then_failed = false;
  if (rc < 0) {
    ty->failed++;
    if (-rc < 32) ty->codes[-rc]++;
    TM_ASSERT_MSG(fired, "%s: the refresh failed without a fault: %s", s->name, err.message);
    if (!ty->sample[k][0]) snprintf(ty->sample[k], sizeof ty->sample[k], "%s", err.message);
    if (!is_write(k)) {
      char name[256];
      last_segment(key, name, sizeof name);
      TM_ASSERT_MSG(strstr(err.message, name), "%s, %s at %lld (%s): the error does not name %s: %s",
                    s->name, k_kind_names[k], (long long)n, key, name, err.message);
      if (k == F_READ_FAIL || k == F_READ_PARTIAL)
        TM_ASSERT_MSG(strstr(err.message, "injected"), "%s, %s at %lld: no cause in: %s", s->name,
                      k_kind_names[k], (long long)n, err.message);
    } else {
      /* SQLite reports a full disk on writes and an I/O error on syncs and truncations. */
      const char *cause = sqlite_engine(s)
                              ? (k == F_WRITE_EIO ? "disk I/O error" : "full")
                              : (k == F_WRITE_EIO ? "Input/output error" : "No space left on device");
      /* DuckDB says "fsync failed!" for an EIO from fsync (it reports no errno there). */
      bool said = strstr(err.message, cause) ||
                  (sqlite_engine(s) && strstr(err.message, "disk I/O error")) ||
                  (!sqlite_engine(s) && k == F_WRITE_EIO && strstr(err.message, "fsync failed"));
      TM_ASSERT_MSG(said, "%s, %s at %lld: the error does not say '%s': %s",
                    s->name, k_kind_names[k], (long long)n, cause, err.message);
      TM_ASSERT_MSG(strstr(err.message, run_dir), "%s, %s at %lld: the error names no file: %s",
                    s->name, k_kind_names[k], (long long)n, err.message);
      renamed_then_failed = strstr(err.message, ": fsync:") && !strstr(err.message, ".tmp.");
    }
    /* The acceleration is unchanged, in memory at least (D1, D3). DuckDB stops
     * its whole instance after fsync fails (like PostgreSQL, it cannot trust
     * what the kernel dropped): the runtime restarts, here simulated. */
    if (strstr(err.message, "fsync failed") || strstr(err.message, "invalidated")) {
      ty->restarts++;
      rfx_restart(&f);
    }
    expect_rows(s, k, n, f.a, t->old_rows, "old", "right after the failed refresh,");
  } else {
    ty->succeeded++;
    /* A failure is never swallowed; a delay, or a truncation that cut nothing,
     * is no fault, nor is a checkpoint that failed after the commit: the WAL
     * keeps the committed pages and the next checkpoint moves them. */
    if (fired && in_ckpt) ty->ckpt_failed++;
    TM_ASSERT_MSG(!fired || in_ckpt || k == F_READ_DELAY || k == F_READ_TRUNCATE,
                  "%s, %s at %lld: the fault went unnoticed", s->name, k_kind_names[k], (long long)n);
    expect_rows(s, k, n, f.a, t->new_rows, "new", "after the refresh succeeded,");
  }
  /* Reopened normally: the old rows after a failure (or the new ones when the
   * manifest took its name and only the folder fsync failed), the new after a success. */
  rfx_reopen(&f);
  rfx_sig got;
  TM_ASSERT_OK(rfx_accel_sig(f.a, &got, &err), &err);
  bool is_new = rfx_sig_eq(got, t->new_rows);
  if (rc < 0 && is_new) ty->reopened_new++;
  TM_ASSERT_MSG(is_new ? (rc == TM_OK || renamed_then_failed) : (rc < 0 && rfx_sig_eq(got, t->old_rows)),
                "%s, %s at %lld: reopened, the acceleration holds %lld rows (refresh %s: %s)", s->name,
                k_kind_names[k], (long long)n, (long long)got.rows, tm_code_name(rc),
                rc < 0 ? err.message : "");
  /* The next refresh, without faults, completes: no duplicate, no missing row. */
  TM_ASSERT_OK(tm_accel_refresh(f.a, NULL, &r, &err), &err);
  expect_rows(s, k, n, f.a, t->new_rows, "new", "after the next refresh,");
  rfx_close(&f);
  int64_t leaked = tm_alloc_live() - live0;
  TM_ASSERT_MSG(leaked == 0, "%s, %s at %lld: %lld blocks leaked", s->name, k_kind_names[k],
                (long long)n, (long long)leaked);
  return count;
}

static void sweep(const rfx_scenario *s, const fault_kind *kinds, size_t n_kinds) {
  rfx_quiet_logs();
  char dir[1200], run_dir[1200];
  snprintf(dir, sizeof dir, "%s/template", tm_test_tmpdir());
  snprintf(run_dir, sizeof run_dir, "%s/run", tm_test_tmpdir());
  hook_on(dir);
  rfx_template t;
  rfx_template_make(&t, s, dir);
  /* After the template's engine has set SQLite up (its allocator is tm_malloc,
   * so tm_alloc_live sees SQLite's blocks too): looking a VFS up initializes SQLite. */
  if (sqlite_engine(s)) vfs_install();
  bool stress = tm_test_stress();
  const char *env = getenv("TM_STORAGE_SAMPLES");
  int64_t samples = env ? atoll(env) : 2;
  /* The counting run (no fault armed) is the same clean refresh for every kind
   * that counts the same operations: store operations of any kind (read-fail,
   * read-delay), gets (read-partial, read-truncate), or local writes and syncs
   * (the write kinds). It runs once per class; the kinds after the first reuse
   * its count. */
  int64_t class_total[3] = {0, 0, 0};
  for (size_t i = 0; i < n_kinds; i++) {
    fault_kind k = kinds[i];
    tally ty;
    memset(&ty, 0, sizeof ty);
    int64_t t0 = tm_monotonic_ns();
    int cls = is_write(k) ? 2 : (k == F_READ_PARTIAL || k == F_READ_TRUNCATE) ? 1 : 0;
    if (!class_total[cls]) class_total[cls] = one_run(s, &t, run_dir, k, 0, &ty);
    int64_t total = class_total[cls];
    TM_ASSERT_MSG(total > 0, "%s: %s: nothing counted", s->name, k_kind_names[k]);
    int64_t step = stress || samples <= 0 || total <= samples ? 1 : total / samples;
    for (int64_t n = 1; n <= total + 1; n += step) one_run(s, &t, run_dir, k, n, &ty);
    char codes[256] = "";
    size_t used = 0;
    for (int c = 1; c < 32; c++) {
      if (!ty.codes[c]) continue;
      int w = snprintf(codes + used, sizeof codes - used, " %s=%lld", tm_code_name(-c),
                       (long long)ty.codes[c]);
      if (w > 0 && (size_t)w < sizeof codes - used) used += (size_t)w;
    }
    tm_test__note("%s %s: %lld %s; %lld runs (step %lld) in %.1f s: %lld failed (%lld left the "
                  "new rows after the rename, %lld restarted DuckDB), %lld succeeded (%lld with a "
                  "failed checkpoint); codes:%s; "
                  "e.g. \"%s\"",
                  s->name, k_kind_names[k], (long long)total,
                  is_write(k) ? "writes and syncs" : "store operations", (long long)ty.runs,
                  (long long)step, (double)(tm_monotonic_ns() - t0) / 1e9, (long long)ty.failed,
                  (long long)ty.reopened_new, (long long)ty.restarts, (long long)ty.succeeded,
                  (long long)ty.ckpt_failed, codes,
                  ty.sample[k]);
  }
  hook_off();
  rfx_remove_tree(run_dir);
}

static const fault_kind k_reads[] = {F_READ_FAIL, F_READ_PARTIAL, F_READ_TRUNCATE, F_READ_DELAY};
static const fault_kind k_writes[] = {F_WRITE_ENOSPC, F_WRITE_EIO, F_WRITE_FILLING};
static const fault_kind k_all[] = {F_READ_FAIL,    F_READ_PARTIAL, F_READ_TRUNCATE, F_READ_DELAY,
                                   F_WRITE_ENOSPC, F_WRITE_EIO,    F_WRITE_FILLING};

#define ICE_S3 "iceberg:s3://wh/tbl"
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

#define SCENARIO(fn, label, src, kind, accel, kinds)                   \
  TM_TEST(fn) {                                                         \
    static const rfx_scenario s = {label, src, kind, accel, false, ICE_S3}; \
    sweep(&s, kinds, N_OF(kinds));                                      \
  }

SCENARIO(D3_storage_files_append_cayenne, "files/append/cayenne", RFX_FILES, RFX_APPEND, RFX_CAYENNE, k_all)
SCENARIO(D3_storage_files_full_cayenne, "files/full/cayenne", RFX_FILES, RFX_FULL, RFX_CAYENNE, k_all)
SCENARIO(D3_storage_files_first_load_cayenne, "files/first/cayenne", RFX_FILES, RFX_FIRST, RFX_CAYENNE, k_writes)
SCENARIO(D3_storage_iceberg_append_cayenne, "iceberg/append/cayenne", RFX_ICEBERG, RFX_APPEND, RFX_CAYENNE, k_all)
SCENARIO(D3_storage_iceberg_full_cayenne, "iceberg/full/cayenne", RFX_ICEBERG, RFX_FULL, RFX_CAYENNE, k_all)
SCENARIO(D3_storage_files_append_sqlite, "files/append/sqlite", RFX_FILES, RFX_APPEND, RFX_SQLITE, k_all)
SCENARIO(D3_storage_iceberg_append_sqlite, "iceberg/append/sqlite", RFX_ICEBERG, RFX_APPEND, RFX_SQLITE, k_reads)
SCENARIO(D3_storage_iceberg_full_sqlite, "iceberg/full/sqlite", RFX_ICEBERG, RFX_FULL, RFX_SQLITE, k_writes)
