/*
 * objstore.c - the backend-independent half of the object-store layer: key
 * checks, call counting, and the helpers built on the vtable (read into a
 * buffer, read a whole small object, download to a file, put from memory or
 * a file, collect a listing). See objstore.h.
 */
#include "objstore/objstore_int.h"

#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"

#define KEY_MAX 1024

int tm_objstore__init(tm_objstore *s, const tm_objstore_vtable *vt, const char *name,
                      tm_error *err) {
  memset(s, 0, sizeof *s);
  s->vt = vt;
  tm_objstore_read_options_init(&s->read_opts);
  s->name = tm_strdup(name ? name : "");
  return s->name ? TM_OK : tm_error_nomem(err);
}

void tm_objstore__dispose(tm_objstore *s) {
  tm_free(s->name);
  s->name = NULL;
}

void tm_objstore_read_options_init(tm_objstore_read_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_OBJSTORE_READ_OPTIONS_VERSION;
  o->tail_bytes = 64 * 1024;
  o->min_fetch = 64 * 1024;
  o->coalesce_gap = 64 * 1024;
  o->max_request = 8 * 1024 * 1024;
  o->max_readahead = 8 * 1024 * 1024;
  o->cache_bytes = 32 * 1024 * 1024;
}

void tm_objstore_free(tm_objstore *s) {
  if (s) s->vt->free(s);
}

const char *tm_objstore_scheme(const tm_objstore *s) { return s->vt->scheme; }
const char *tm_objstore_name(const tm_objstore *s) { return s->name; }

void tm_objstore_get_stats(const tm_objstore *s, tm_objstore_stats *out) {
#define LOAD(f) out->f = __atomic_load_n(&s->stats.f, __ATOMIC_RELAXED)
  LOAD(bytes_in);
  LOAD(bytes_out);
  LOAD(requests);
  LOAD(retries);
  LOAD(gets);
  LOAD(puts);
  LOAD(lists);
  LOAD(stats);
  LOAD(deletes);
#undef LOAD
}

/* ---- keys ---- */

int tm_objstore_check_key(const char *key, bool is_prefix, tm_error *err) {
  if (!key) return tm_error_set(err, TM_EINVALID, "object key is missing");
  size_t len = strlen(key);
  if (len == 0) {
    if (is_prefix) return TM_OK;
    return tm_error_set(err, TM_EINVALID, "object key is empty");
  }
  if (len > KEY_MAX)
    return tm_error_set(err, TM_EINVALID, "object key of %zu bytes is longer than %d", len,
                        KEY_MAX);
  if (key[0] == '/')
    return tm_error_set(err, TM_EINVALID, "object key '%s' starts with '/'", key);
  const char *seg = key;
  for (;;) {
    const char *slash = strchr(seg, '/');
    size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
    if (n == 0) {
      if (!slash && is_prefix) break; /* "data/": a folder-like prefix */
      if (!slash) return tm_error_set(err, TM_EINVALID, "object key '%s' ends with '/'", key);
      return tm_error_set(err, TM_EINVALID, "object key '%s' has an empty path segment", key);
    }
    if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
      return tm_error_set(err, TM_EINVALID, "object key '%s' has a '%.*s' segment", key, (int)n,
                          seg);
    if (!slash) break;
    seg = slash + 1;
  }
  return TM_OK;
}

/*
 * What every backend can take: a key of 1..1024 bytes (a prefix may be
 * empty) without a leading '/'. S3 keys may contain "//" or "..", so the
 * stricter path rules of tm_objstore_check_key are the file backend's.
 */
static int basic_key(const char *key, bool is_prefix, tm_error *err) {
  if (!key) return tm_error_set(err, TM_EINVALID, "object key is missing");
  size_t len = strlen(key);
  if (len == 0 && !is_prefix) return tm_error_set(err, TM_EINVALID, "object key is empty");
  if (len > KEY_MAX)
    return tm_error_set(err, TM_EINVALID, "object key of %zu bytes is longer than %d", len,
                        KEY_MAX);
  if (key[0] == '/')
    return tm_error_set(err, TM_EINVALID, "object key '%s' starts with '/'", key);
  if (!is_prefix && key[len - 1] == '/')
    return tm_error_set(err, TM_EINVALID, "object key '%s' ends with '/'", key);
  return TM_OK;
}

char *tm_objstore_join(const char *prefix, const char *rel) {
  size_t lp = strlen(prefix);
  if (lp == 0) return tm_strdup(rel);
  while (rel[0] == '/') rel++;
  return tm_asprintf("%s%s%s", prefix, prefix[lp - 1] == '/' ? "" : "/", rel);
}

/* ---- calls ---- */

int tm_objstore_stat(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  TM_OBJSTORE_COUNT(s, stats, 1);
  tm_obj_stat st = {false, 0, 0};
  TM_TRY(s->vt->stat(s, key, &st, err));
  *out = st;
  return TM_OK;
}

int tm_objstore_list(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
                     tm_error *err) {
  TM_TRY(basic_key(prefix, true, err));
  TM_OBJSTORE_COUNT(s, lists, 1);
  return s->vt->list(s, prefix, fn, payload, err);
}

void tm_obj_list_init(tm_obj_list *l) { memset(l, 0, sizeof *l); }

void tm_obj_list_dispose(tm_obj_list *l) {
  for (size_t i = 0; i < l->len; i++) tm_free((char *)l->items[i].key);
  tm_free(l->items);
  memset(l, 0, sizeof *l);
}

typedef struct collect_ctx {
  tm_obj_list *out;
  size_t max_items;
  size_t added;
  tm_error *err;
  const char *prefix;
} collect_ctx;

static int collect_one(const tm_obj_info *info, void *payload) {
  collect_ctx *c = payload;
  if (c->added >= c->max_items)
    return tm_error_set(c->err, TM_ETOOLARGE, "listing of '%s' has more than %zu objects",
                        c->prefix, c->max_items);
  char *key = tm_strdup(info->key);
  if (!key) return tm_error_nomem(c->err);
  int rc = tm_obj_list__push(c->out, key, info->size, info->mtime_ms, c->err);
  if (rc < 0) tm_free(key);
  else c->added++;
  return rc;
}

int tm_obj_list__push(tm_obj_list *l, char *key, uint64_t size, int64_t mtime_ms, tm_error *err) {
  if (l->len == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    tm_obj_info *items = tm_reallocarray(l->items, cap, sizeof *items);
    if (!items) return tm_error_nomem(err);
    l->items = items;
    l->cap = cap;
  }
  l->items[l->len].key = key;
  l->items[l->len].size = size;
  l->items[l->len].mtime_ms = mtime_ms;
  l->len++;
  return TM_OK;
}

int tm_objstore_list_all(tm_objstore *s, const char *prefix, size_t max_items, tm_obj_list *out,
                         tm_error *err) {
  collect_ctx c = {out, max_items, 0, err, prefix};
  return tm_objstore_list(s, prefix, collect_one, &c, err);
}

int tm_objstore_get(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
                    tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  TM_OBJSTORE_COUNT(s, gets, 1);
  if (len == 0) return TM_OK;
  return s->vt->get(s, key, off, len, sink, payload, err);
}

/* Sink into a fixed buffer; more bytes than asked for is a backend bug. */
typedef struct buf_sink {
  char *buf;
  size_t cap;
  size_t len;
  const char *what;
} buf_sink;

static int to_buffer(const void *data, size_t len, void *payload, tm_error *err) {
  buf_sink *b = payload;
  if (TM_NEVER(len > b->cap - b->len))
    return TM_CORRUPT(err, "%s: store returned more bytes than requested", b->what);
  memcpy(b->buf + b->len, data, len);
  b->len += len;
  return TM_OK;
}

int tm_objstore_read(tm_objstore *s, const char *key, uint64_t off, void *buf, size_t len,
                     size_t *n_out, tm_error *err) {
  buf_sink b = {buf, len, 0, key};
  TM_TRY(tm_objstore_get(s, key, off, len, to_buffer, &b, err));
  *n_out = b.len;
  return TM_OK;
}

typedef struct grow_sink {
  tm_buf buf;
  const char *key;
  size_t limit;
} grow_sink;

static int to_growing(const void *data, size_t len, void *payload, tm_error *err) {
  grow_sink *g = payload;
  if (len > g->limit - g->buf.len)
    return tm_error_set(err, TM_ETOOLARGE, "%s: object is larger than the limit of %zu bytes",
                        g->key, g->limit);
  return tm_buf_append(&g->buf, data, len, err);
}

int tm_objstore_read_all(tm_objstore *s, const char *key, size_t limit, char **out,
                         size_t *len_out, tm_error *err) {
  grow_sink g = {TM_BUF_INIT(limit), key, limit};
  /*
   * The whole object, not a range: the sink stops the transfer at the first
   * byte past the limit. (A range would also make S3 answer 416 for an
   * empty object.)
   */
  int rc = tm_objstore_get(s, key, 0, TM_OBJ_TO_END, to_growing, &g, err);
  if (rc < 0) {
    tm_buf_dispose(&g.buf);
    return rc;
  }
  size_t n = 0;
  char *p = tm_buf_take(&g.buf, &n);
  if (!p) return tm_error_nomem(err);
  *out = p;
  if (len_out) *len_out = n;
  return TM_OK;
}

static int to_file(const void *data, size_t len, void *payload, tm_error *err) {
  return tm_atomic_file_write(payload, data, len, err);
}

int tm_objstore_get_file(tm_objstore *s, const char *key, const char *path, tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  tm_atomic_file f;
  TM_TRY(tm_atomic_file_begin(&f, path, err));
  int rc = tm_objstore_get(s, key, 0, TM_OBJ_TO_END, to_file, &f, err);
  if (rc < 0) {
    tm_atomic_file_abort(&f);
    return rc;
  }
  return tm_atomic_file_commit(&f, err);
}

int tm_objstore_open_input(tm_objstore *s, const char *key, uint64_t size, tm_input **out,
                           tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  if (s->vt->open_input) return s->vt->open_input(s, key, size, out, err);
  if (size == TM_OBJ_SIZE_UNKNOWN) {
    tm_obj_stat st;
    TM_TRY(tm_objstore_stat(s, key, &st, err));
    if (!st.exists)
      return tm_error_set(err, TM_ENOTFOUND, "%s/%s: no such object", s->name, key);
    size = st.size;
  }
  return tm_objstore__open_range_input(s, key, size, out, err);
}

int tm_objstore_put_input(tm_objstore *s, const char *key, tm_input *body, unsigned flags,
                          tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  if (flags & ~(TM_OBJ_PUT_ATOMIC | TM_OBJ_PUT_IF_ABSENT))
    return tm_error_set(err, TM_EINVALID, "unknown put flags 0x%x", flags);
  TM_OBJSTORE_COUNT(s, puts, 1);
  return s->vt->put(s, key, body, flags, err);
}

int tm_objstore_put(tm_objstore *s, const char *key, const void *data, size_t len,
                    unsigned flags, tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(tm_input_open_memory(&in, key, len ? data : "", len, false, err));
  int rc = tm_objstore_put_input(s, key, in, flags, err);
  tm_input_close(in);
  return rc;
}

int tm_objstore_put_file(tm_objstore *s, const char *key, const char *path, unsigned flags,
                         tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(tm_input_open_file(&in, path, err));
  int rc = tm_objstore_put_input(s, key, in, flags, err);
  tm_input_close(in);
  return rc;
}

int tm_objstore_delete(tm_objstore *s, const char *key, tm_error *err) {
  TM_TRY(basic_key(key, false, err));
  TM_OBJSTORE_COUNT(s, deletes, 1);
  return s->vt->del(s, key, err);
}
