/*
 * tar.h - a minimal POSIX ustar writer and a strict reader (format layer).
 *
 * Acceleration snapshots of folder-shaped accelerations (cayenne: a MANIFEST
 * and segment files) travel as one tar object, so that an upload is one
 * atomic put and a download one get (SPEC C2). Only what that needs:
 *
 *   writer  regular files with short names (<= 100 bytes, no folders),
 *           mode 0644, sizes in octal (base-256 past 8 GiB), two zero blocks
 *           at the end; written through a temporary file renamed into place.
 *   reader  checks every header (checksum, ustar magic, a NUL-terminated
 *           name, octal or base-256 size, regular-file type) and that every
 *           entry lies inside the input, then reports entries in order. A
 *           header of another type (links, folders, pax or GNU long names)
 *           is TM_EUNSUPPORTED; a malformed one TM_ECORRUPT with its offset.
 *           What names are acceptable is the caller's business.
 */
#ifndef TM_FORMAT_TAR_TAR_H
#define TM_FORMAT_TAR_TAR_H

#include <stdbool.h>
#include <stdint.h>

#include "io/io.h"
#include "util/error.h"

#define TM_TAR_BLOCK 512
#define TM_TAR_NAME_MAX 100

typedef struct tm_tar_writer {
  tm_atomic_file f;
  bool open;
} tm_tar_writer;

/** Starts a tar file at path (written to a temporary name until commit). */
int tm_tar_writer_begin(tm_tar_writer *w, const char *path, tm_error *err) TM_WARN_UNUSED;
/**
 * Adds a regular file `name` (1..100 bytes, no '/') with size bytes at data.
 * TM_EINVALID for a bad name.
 */
int tm_tar_writer_add(tm_tar_writer *w, const char *name, const void *data, uint64_t size,
                      int64_t mtime_s, tm_error *err) TM_WARN_UNUSED;
/** Writes the end marker, syncs and renames into place. The writer is done either way. */
int tm_tar_writer_commit(tm_tar_writer *w, tm_error *err) TM_WARN_UNUSED;
/** Discards an unfinished tar file. Safe after commit. */
void tm_tar_writer_abort(tm_tar_writer *w);

typedef struct tm_tar_entry {
  char name[TM_TAR_NAME_MAX + 1]; /* NUL-terminated */
  uint64_t offset;                /* of the data in the input */
  uint64_t size;
} tm_tar_entry;

/**
 * Called per entry in order; in is the input being read (read the data at
 * e->offset). Return 0 to go on, TM_ITEROVER to stop (TM_OK), or an error.
 */
typedef int (*tm_tar_entry_fn)(const tm_tar_entry *e, tm_input *in, void *payload,
                               tm_error *err);

/**
 * Reads the headers of the tar in `in` (which the caller keeps owning) and
 * calls fn for each entry. Stops at the end marker (two zero blocks, or one
 * zero block followed by the end of the input).
 * Errors: TM_ECORRUPT, TM_EUNSUPPORTED, the input's and fn's errors.
 */
int tm_tar_read(tm_input *in, tm_tar_entry_fn fn, void *payload, tm_error *err)
    TM_WARN_UNUSED;

#endif
