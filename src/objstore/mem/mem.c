/*
 * mem.c - the in-memory object store (objstore layer, mem backend). See
 * mem.h.
 */
#include "objstore/mem/mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "objstore/objstore_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/time.h"

#define CHUNK (256 * 1024)
#define MAX_OBJECT ((uint64_t)1 << 32) /* 4 GiB: a test store, not a warehouse */

/* One object version; shared by the map and by readers in flight. */
typedef struct mem_obj {
  char *data; /* owned */
  size_t len;
  int64_t mtime_ms;
  int refs; /* atomic */
} mem_obj;

typedef struct mem_store {
  tm_objstore base;
  pthread_mutex_t lock;
  tm_map objects; /* key -> mem_obj*, guarded by lock */
} mem_store;

static void obj_unref(mem_obj *o) {
  if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    tm_free(o->data);
    tm_free(o);
  }
}

static void obj_unref_void(void *o) { obj_unref(o); }

/* The object for key with a reference taken, or NULL. */
static mem_obj *obj_get(mem_store *m, const char *key) {
  pthread_mutex_lock(&m->lock);
  mem_obj *o = tm_map_gets(&m->objects, key);
  if (o) __atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&m->lock);
  return o;
}

static int mem_stat(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err) {
  TM_UNUSED(err);
  mem_store *m = (mem_store *)s;
  TM_OBJSTORE_COUNT(s, requests, 1);
  pthread_mutex_lock(&m->lock);
  const mem_obj *o = tm_map_gets(&m->objects, key);
  out->exists = o != NULL;
  if (o) {
    out->size = o->len;
    out->mtime_ms = o->mtime_ms;
  }
  pthread_mutex_unlock(&m->lock);
  return TM_OK;
}

typedef struct snap {
  char *key;
  uint64_t size;
  int64_t mtime_ms;
} snap;

static int cmp_snap(const void *a, const void *b) {
  return strcmp(((const snap *)a)->key, ((const snap *)b)->key);
}

static int mem_list(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
                    tm_error *err) {
  mem_store *m = (mem_store *)s;
  TM_OBJSTORE_COUNT(s, requests, 1);
  size_t lp = strlen(prefix);
  tm_vec items;
  tm_vec_init(&items, sizeof(snap), SIZE_MAX);
  int rc = TM_OK;
  pthread_mutex_lock(&m->lock);
  size_t pos = 0;
  const char *key;
  void *value;
  while (rc == TM_OK && tm_map_next(&m->objects, &pos, &key, &value)) {
    if (strncmp(key, prefix, lp) != 0) continue;
    const mem_obj *o = value;
    snap it = {tm_strdup(key), o->len, o->mtime_ms};
    if (!it.key) rc = tm_error_nomem(err);
    else if ((rc = tm_vec_push(&items, &it, err)) < 0) tm_free(it.key);
  }
  pthread_mutex_unlock(&m->lock);
  if (rc == TM_OK) {
    if (items.len > 1) qsort(items.ptr, items.len, sizeof(snap), cmp_snap);
    for (size_t i = 0; i < items.len; i++) {
      snap *it = tm_vec_at(&items, i);
      tm_obj_info info = {it->key, it->size, it->mtime_ms};
      rc = fn(&info, payload);
      if (rc != TM_OK) break;
    }
    if (rc == TM_ITEROVER) rc = TM_OK;
  }
  for (size_t i = 0; i < items.len; i++) tm_free(((snap *)tm_vec_at(&items, i))->key);
  tm_vec_dispose(&items);
  return rc;
}

static int mem_get(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
                   tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  TM_OBJSTORE_COUNT(s, requests, 1);
  mem_obj *o = obj_get((mem_store *)s, key);
  if (!o) return tm_error_set(err, TM_ENOTFOUND, "%s/%s: no such object", s->name, key);
  int rc = TM_OK;
  if (off < o->len) {
    uint64_t end = len > o->len - off ? o->len : off + len;
    /* Chunks, as a network backend delivers them. */
    for (uint64_t pos = off; pos < end && rc == TM_OK;) {
      size_t n = end - pos < CHUNK ? (size_t)(end - pos) : CHUNK;
      TM_OBJSTORE_COUNT(s, bytes_in, n);
      rc = sink(o->data + pos, n, payload, err);
      pos += n;
    }
  }
  obj_unref(o);
  return rc;
}

static int mem_put(tm_objstore *s, const char *key, tm_input *body, unsigned flags,
                   tm_error *err) {
  mem_store *m = (mem_store *)s;
  TM_OBJSTORE_COUNT(s, requests, 1);
  uint64_t size = 0;
  TM_TRY(tm_input_size(body, &size, err));
  if (size > MAX_OBJECT)
    return tm_error_set(err, TM_ETOOLARGE, "%s/%s: %llu bytes is too large for a memory store",
                        s->name, key, (unsigned long long)size);
  mem_obj *o = tm_calloc(1, sizeof *o);
  char *data = tm_malloc(size ? (size_t)size : 1);
  if (!o || !data) {
    tm_free(o);
    tm_free(data);
    return tm_error_nomem(err);
  }
  o->data = data;
  o->len = (size_t)size;
  o->refs = 1;
  o->mtime_ms = tm_now_ms();
  int rc = size ? tm_input_read_exact(body, 0, data, (size_t)size, err) : TM_OK;
  if (rc < 0) {
    obj_unref(o);
    return rc;
  }
  TM_OBJSTORE_COUNT(s, bytes_out, size);
  void *old = NULL;
  pthread_mutex_lock(&m->lock);
  if ((flags & TM_OBJ_PUT_IF_ABSENT) && tm_map_gets(&m->objects, key))
    rc = tm_error_set(err, TM_ECONFLICT, "%s/%s: object already exists", s->name, key);
  else
    rc = tm_map_puts(&m->objects, key, o, &old, err);
  pthread_mutex_unlock(&m->lock);
  if (rc < 0) obj_unref(o);
  obj_unref(old);
  return rc;
}

static int mem_del(tm_objstore *s, const char *key, tm_error *err) {
  TM_UNUSED(err);
  mem_store *m = (mem_store *)s;
  TM_OBJSTORE_COUNT(s, requests, 1);
  pthread_mutex_lock(&m->lock);
  mem_obj *o = tm_map_remove(&m->objects, key, strlen(key));
  pthread_mutex_unlock(&m->lock);
  obj_unref(o);
  return TM_OK;
}

static void mem_free(tm_objstore *s) {
  mem_store *m = (mem_store *)s;
  tm_map_dispose(&m->objects, obj_unref_void);
  pthread_mutex_destroy(&m->lock);
  tm_objstore__dispose(s);
  tm_free(m);
}

static const tm_objstore_vtable k_mem_vt = TM_OBJSTORE_VTABLE_INIT(
    "mem", mem_stat, mem_list, mem_get, mem_put, mem_del, NULL, mem_free);

int tm_objstore_mem_new(tm_objstore **out, const char *name, tm_error *err) {
  mem_store *m = tm_calloc(1, sizeof *m);
  if (!m) return tm_error_nomem(err);
  char *full = tm_asprintf("mem://%s", name ? name : "");
  int rc = full ? tm_objstore__init(&m->base, &k_mem_vt, full, err) : tm_error_nomem(err);
  tm_free(full);
  if (rc < 0) {
    tm_free(m);
    return rc;
  }
  pthread_mutex_init(&m->lock, NULL);
  tm_map_init(&m->objects);
  *out = &m->base;
  return TM_OK;
}

int tm_objstore_mem_set_mtime(tm_objstore *s, const char *key, int64_t mtime_ms, tm_error *err) {
  if (s->vt != &k_mem_vt)
    return tm_error_set(err, TM_EINVALID, "%s: not a memory store", s->name);
  mem_store *m = (mem_store *)s;
  pthread_mutex_lock(&m->lock);
  mem_obj *o = tm_map_gets(&m->objects, key);
  if (o) o->mtime_ms = mtime_ms;
  pthread_mutex_unlock(&m->lock);
  if (!o) return tm_error_set(err, TM_ENOTFOUND, "%s/%s: no such object", s->name, key);
  return TM_OK;
}
