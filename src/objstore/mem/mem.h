/*
 * mem.h - an in-memory object store, for tests (objstore layer, mem backend).
 *
 * Objects live in a hash map guarded by a mutex; every put is atomic. Reads
 * take a reference to the object, so a concurrent overwrite never changes
 * bytes under a reader. Last-modified times come from the wall clock unless
 * a test sets them (tm_objstore_mem_set_mtime) to exercise SPEC A7.
 */
#ifndef TM_OBJSTORE_MEM_MEM_H
#define TM_OBJSTORE_MEM_MEM_H

#include "objstore/objstore.h"

/** A new empty store named name (for messages: "mem://name"). Caller frees. */
int tm_objstore_mem_new(tm_objstore **out, const char *name, tm_error *err) TM_WARN_UNUSED;

/**
 * Sets the last-modified time of key. TM_ENOTFOUND when key is absent,
 * TM_EINVALID when s is not a mem store.
 */
int tm_objstore_mem_set_mtime(tm_objstore *s, const char *key, int64_t mtime_ms, tm_error *err)
    TM_WARN_UNUSED;

#endif
