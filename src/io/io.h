/*
 * io.h - "read N bytes at offset O" and "write a file atomically" (io layer).
 *
 * Format readers touch bytes only through a tm_input: a pread-backed local
 * file, a memory block, or (through the objstore layer) a remote object read
 * by ranges. Each input counts the bytes and read calls it served, so callers
 * can report I/O and tests can assert that nothing was read (SPEC B3).
 *
 * Writers publish whole files atomically: write to a temporary name in the
 * same folder, fsync, rename over the target, fsync the folder. A crash at
 * any instant leaves either the old file or the new one.
 */
#ifndef TM_IO_IO_H
#define TM_IO_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

typedef struct tm_input tm_input;

/** A byte range of an input: len bytes at off. */
typedef struct tm_io_range {
  uint64_t off;
  uint64_t len;
} tm_io_range;

typedef struct tm_input_vtable {
  int version; /* TM_INPUT_VTABLE_VERSION */
  /** Reads up to len bytes at off into buf; *n_out < len only at end of input. */
  int (*read_at)(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                 tm_error *err);
  /** Total size in bytes. */
  int (*size)(tm_input *in, uint64_t *out, tm_error *err);
  /** Frees the input (and the struct itself). */
  void (*close)(tm_input *in);
  /*
   * Version 2. Optional (NULL: no-op): the ranges the caller is about to
   * read, e.g. the column chunks of a projection. A remote input merges
   * nearby ranges into fewer, larger requests; a local file ignores it.
   * The input copies what it keeps; the array need not outlive the call.
   */
  int (*will_need)(tm_input *in, const tm_io_range *ranges, size_t n_ranges, tm_error *err);
} tm_input_vtable;

#define TM_INPUT_VTABLE_VERSION 2

struct tm_input {
  const tm_input_vtable *vt;
  char *name;          /* owned: path or URL, for error messages */
  uint64_t bytes_read; /* bytes served so far */
  uint64_t reads;      /* read calls served so far */
};

/** Base initialisation for implementations: copies name. */
int tm_input__init(tm_input *in, const tm_input_vtable *vt, const char *name, tm_error *err)
    TM_WARN_UNUSED;
/** Base cleanup for implementations: frees name. */
void tm_input__dispose(tm_input *in);

int tm_input_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                     tm_error *err) TM_WARN_UNUSED;
/** Reads exactly len bytes; a short read is TM_ECORRUPT naming the input and offset. */
int tm_input_read_exact(tm_input *in, uint64_t off, void *buf, size_t len, tm_error *err)
    TM_WARN_UNUSED;
int tm_input_size(tm_input *in, uint64_t *out, tm_error *err) TM_WARN_UNUSED;
/**
 * Announces the ranges about to be read (see tm_input_vtable.will_need).
 * A hint only: inputs without support return TM_OK and do nothing; reads
 * outside the ranges still work. TM_ENOMEM at most.
 */
int tm_input_will_need(tm_input *in, const tm_io_range *ranges, size_t n_ranges,
                       tm_error *err) TM_WARN_UNUSED;
/** Closes and frees in (NULL is a no-op). */
void tm_input_close(tm_input *in);
static inline const char *tm_input_name(const tm_input *in) { return in->name; }

/**
 * Opens a local file for positional reads. TM_ENOTFOUND when it does not
 * exist, TM_EIO otherwise. The caller owns *out (tm_input_close).
 */
int tm_input_open_file(tm_input **out, const char *path, tm_error *err) TM_WARN_UNUSED;
/**
 * An input over len bytes at data. With take_ownership the input frees data
 * (tm_free) when closed; otherwise data must outlive the input.
 */
int tm_input_open_memory(tm_input **out, const char *name, const void *data, size_t len,
                         bool take_ownership, tm_error *err) TM_WARN_UNUSED;

/* ---- atomic file output ------------------------------------------------ */

typedef struct tm_atomic_file {
  int fd;          /* -1 when closed */
  char *path;      /* owned: the final name */
  char *tmp_path;  /* owned: the temporary name */
  uint64_t written;
  bool renamed;    /* set by commit once the new file has taken the final name */
} tm_atomic_file;

/** Creates a temporary file beside path. */
int tm_atomic_file_begin(tm_atomic_file *f, const char *path, tm_error *err) TM_WARN_UNUSED;
int tm_atomic_file_write(tm_atomic_file *f, const void *data, size_t len, tm_error *err)
    TM_WARN_UNUSED;
/**
 * fsync, rename over path, fsync the folder. The struct is disposed either
 * way. On an error, path still has its old content unless f->renamed is
 * set: then only the folder fsync failed, so path shows the new content now
 * but may show the old one after a crash (a caller that deletes files the
 * old content names must keep them). Nothing fails for lack of memory after
 * the rename.
 */
int tm_atomic_file_commit(tm_atomic_file *f, tm_error *err) TM_WARN_UNUSED;
/** Removes the temporary file. Safe after commit or on a zeroed struct. */
void tm_atomic_file_abort(tm_atomic_file *f);
/** Writes a whole file atomically. */
int tm_write_file_atomic(const char *path, const void *data, size_t len, tm_error *err)
    TM_WARN_UNUSED;
/** Reads a whole (small) file into memory, at most limit bytes. *out: tm_free. */
int tm_read_file(const char *path, size_t limit, char **out, size_t *len_out, tm_error *err)
    TM_WARN_UNUSED;

/* ---- writing local files ------------------------------------------------ */

/*
 * Every write and sync of a local file the program makes goes through these
 * (atomic files above, cayenne segments, backups), so that tests can make
 * the N-th one fail (tm_io_fault_set). They behave as write(2), fsync(2) and
 * fdatasync(2): -1 with errno set on failure; EINTR is retried inside.
 */
ssize_t tm_io_write(int fd, const void *buf, size_t len);
int tm_io_fsync(int fd);
int tm_io_fdatasync(int fd);

/* ---- write fault injection (tests; issue 10) ----------------------------- */

#define TM_IO_FAULT_WRITE 0x1u /* tm_io_write */
#define TM_IO_FAULT_SYNC 0x2u  /* tm_io_fsync, tm_io_fdatasync (files and folders) */

typedef struct tm_io_fault {
  int version;      /* TM_IO_FAULT_VERSION */
  unsigned ops;     /* TM_IO_FAULT_* mask of the calls counted */
  int64_t nth;      /* the nth counted call fails (1: the next); 0: count only */
  int error;        /* errno of a failed call; 0: ENOSPC */
  bool short_write; /* a write hit as the nth stores half its bytes and returns that
                       count instead of failing (what a filling disk does first) */
  bool sticky;      /* every counted call after the nth fails too (a disk that stays full) */
} tm_io_fault;

#define TM_IO_FAULT_VERSION 1

/**
 * Installs f (copied; NULL turns injection and counting off) and resets the
 * count. Process-wide and thread-safe: background writers are counted too.
 */
void tm_io_fault_set(const tm_io_fault *f);
/** Counted calls since the last tm_io_fault_set. */
int64_t tm_io_fault_count(void);
/** Whether an injected failure (or short write) happened since the last tm_io_fault_set. */
bool tm_io_fault_fired(void);

/* ---- file-system helpers ------------------------------------------------ */

/** mkdir -p. */
int tm_mkdir_p(const char *path, tm_error *err) TM_WARN_UNUSED;
/** fsync a folder so that a rename or create inside it is durable. */
int tm_fsync_dir(const char *path, tm_error *err) TM_WARN_UNUSED;
/** rm -rf (refuses "" and "/"). */
int tm_remove_tree(const char *path, tm_error *err) TM_WARN_UNUSED;
/** Whether path exists (any type). */
bool tm_path_exists(const char *path);
bool tm_is_dir(const char *path);
/** Joins two path parts with one '/'. Result: tm_free. */
char *tm_path_join(const char *a, const char *b);
/** The folder part of a path ("." when none). Result: tm_free. */
char *tm_path_dirname(const char *path);

#endif
