/*
 * objstore_int.h - helpers shared by the object-store backends (objstore
 * layer, private: only files under src/objstore/ include it).
 *
 * A backend embeds struct tm_objstore as its first member, fills it with
 * tm_objstore__init, counts its traffic with TM_OBJSTORE_COUNT and releases
 * it with tm_objstore__dispose. Backends never include each other's headers.
 */
#ifndef TM_OBJSTORE_OBJSTORE_INT_H
#define TM_OBJSTORE_OBJSTORE_INT_H

#include "objstore/objstore.h"

/** Sets vt, copies name, default read options, zero counters. */
int tm_objstore__init(tm_objstore *s, const tm_objstore_vtable *vt, const char *name,
                      tm_error *err) TM_WARN_UNUSED;
/** Frees what tm_objstore__init allocated (not s itself). */
void tm_objstore__dispose(tm_objstore *s);

/* Adds n to one of the tm_objstore_stats counters of s, atomically. */
#define TM_OBJSTORE_COUNT(s, field, n) \
  ((void)__atomic_fetch_add(&(s)->stats.field, (uint64_t)(n), __ATOMIC_RELAXED))

/**
 * The generic cached range reader over s->vt->get (reader.c); what
 * tm_objstore_open_input uses when a backend has no open_input of its own.
 * size must be known here.
 */
int tm_objstore__open_range_input(tm_objstore *s, const char *key, uint64_t size,
                                  tm_input **out, tm_error *err) TM_WARN_UNUSED;

/**
 * Appends one object to l, taking key (tm_free'd by tm_obj_list_dispose) on
 * success; on TM_ENOMEM key stays the caller's.
 */
int tm_obj_list__push(tm_obj_list *l, char *key, uint64_t size, int64_t mtime_ms, tm_error *err)
    TM_WARN_UNUSED;

/** Parses a boolean param value (true/false, yes/no, 1/0); TM_EINVALID naming the param. */
int tm_objstore__param_bool(const char *name, const char *value, bool *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
