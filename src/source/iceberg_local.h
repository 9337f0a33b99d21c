/*
 * iceberg_local.h - the local file system as a tm_iceberg_io (source layer).
 *
 * Paths are plain paths or file:// URIs. Exclusive writes publish a whole
 * file under its final name with link(2) from a temporary file, so a
 * concurrent writer that created the name first is detected (TM_ECONFLICT)
 * and never overwritten; replacing writes use io.h's atomic rename.
 */
#ifndef TM_SOURCE_ICEBERG_LOCAL_H
#define TM_SOURCE_ICEBERG_LOCAL_H

#include "format/iceberg/iceberg.h"

/** Fills io (caller-allocated, no resources to free) with local callbacks. */
void tm_iceberg_io_local(tm_iceberg_io *io);

/** The local path of a plain path or file:// URI (a view into uri). */
const char *tm_iceberg_local_path(const char *uri);

#endif
