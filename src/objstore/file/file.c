/*
 * file.c - the local file-system object store (objstore layer, file
 * backend). See file.h.
 *
 * Keys pass tm_objstore_check_key, so no key reaches outside the root
 * folder. Reads go through pread; opened inputs are the io layer's plain
 * file inputs (the cached range reader would only add copies).
 */
#include "objstore/file/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objstore/objstore_int.h"
#include "util/alloc.h"
#include "util/buf.h"

#define CHUNK (1024 * 1024)
#define TMP_PREFIX ".tm-tmp-"
#define MAX_DEPTH 64
#define MAX_LISTED 10000000

typedef struct file_store {
  tm_objstore base;
  char *root; /* owned: the root folder */
} file_store;

static int64_t mtime_ms(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* root/key, after checking the key. *out: tm_free. */
static int key_path(file_store *f, const char *key, bool is_prefix, char **out, tm_error *err) {
  TM_TRY(tm_objstore_check_key(key, is_prefix, err));
  char *p = tm_path_join(f->root, key);
  if (!p) return tm_error_nomem(err);
  *out = p;
  return TM_OK;
}

static int file_stat(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err) {
  file_store *f = (file_store *)s;
  char *path = NULL;
  TM_TRY(key_path(f, key, false, &path, err));
  TM_OBJSTORE_COUNT(s, requests, 1);
  struct stat st;
  int rc = TM_OK;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) out->exists = false;
    else rc = tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    out->exists = false;
  } else {
    out->exists = true;
    out->size = (uint64_t)st.st_size;
    out->mtime_ms = mtime_ms(&st);
  }
  tm_free(path);
  return rc;
}

/* ---- listing ---- */

typedef struct listed {
  char *key; /* owned */
  uint64_t size;
  int64_t mtime_ms;
} listed;

typedef struct walk_ctx {
  file_store *f;
  const char *prefix;
  size_t prefix_len;
  tm_vec items; /* of listed */
  tm_error *err;
} walk_ctx;

/* Whether the folder whose key is dir_key (ending in '/') can hold keys with the prefix. */
static bool dir_matters(const walk_ctx *w, const char *dir_key, size_t dir_len) {
  size_t n = dir_len < w->prefix_len ? dir_len : w->prefix_len;
  return memcmp(dir_key, w->prefix, n) == 0;
}

/*
 * Walks the folder at path, whose key is rel ("" for the root, else ending
 * in '/'), appending matching regular files to w->items.
 */
static int walk(walk_ctx *w, const char *path, const char *rel, int depth) {
  if (depth > MAX_DEPTH)
    return tm_error_set(w->err, TM_EIO, "%s: folders nested more than %d deep", path,
                        MAX_DEPTH);
  DIR *d = opendir(path);
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR) return TM_OK;
    return tm_error_set(w->err, TM_EIO, "%s: %s", path, strerror(errno));
  }
  int rc = TM_OK;
  struct dirent *e;
  while (rc == TM_OK && (errno = 0, e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) continue;
    char *child = tm_path_join(path, name);
    char *key = tm_asprintf("%s%s", rel, name);
    if (!child || !key) {
      rc = tm_error_nomem(w->err);
    } else {
      struct stat st;
      if (lstat(child, &st) != 0) {
        if (errno != ENOENT) rc = tm_error_set(w->err, TM_EIO, "%s: %s", child, strerror(errno));
      } else if (S_ISDIR(st.st_mode)) {
        char *dir_key = tm_asprintf("%s/", key);
        if (!dir_key) rc = tm_error_nomem(w->err);
        else if (dir_matters(w, dir_key, strlen(dir_key))) rc = walk(w, child, dir_key, depth + 1);
        tm_free(dir_key);
      } else {
        bool is_link = S_ISLNK(st.st_mode);
        if (is_link && stat(child, &st) != 0) st.st_mode = 0; /* dangling link: skip */
        if (S_ISREG(st.st_mode) && strncmp(key, w->prefix, w->prefix_len) == 0 &&
            strlen(key) <= 1024) {
          listed item = {key, (uint64_t)st.st_size, mtime_ms(&st)};
          rc = tm_vec_push(&w->items, &item, w->err);
          if (rc == TM_ETOOLARGE)
            rc = tm_error_set(w->err, TM_ETOOLARGE, "%s: more than %d files to list", w->f->root,
                              MAX_LISTED);
          if (rc == TM_OK) key = NULL; /* now owned by items */
        }
      }
    }
    tm_free(child);
    tm_free(key);
  }
  if (rc == TM_OK && errno != 0) rc = tm_error_set(w->err, TM_EIO, "%s: %s", path, strerror(errno));
  closedir(d);
  return rc;
}

static int cmp_listed(const void *a, const void *b) {
  return strcmp(((const listed *)a)->key, ((const listed *)b)->key);
}

static int file_list(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
                     tm_error *err) {
  file_store *f = (file_store *)s;
  TM_TRY(tm_objstore_check_key(prefix, true, err));
  TM_OBJSTORE_COUNT(s, requests, 1);
  walk_ctx w = {f, prefix, strlen(prefix), {0}, err};
  tm_vec_init(&w.items, sizeof(listed), MAX_LISTED);
  /* Start at the deepest folder the prefix names: "a/b/c" walks a/b. */
  const char *slash = strrchr(prefix, '/');
  char *rel = slash ? tm_strndup(prefix, (size_t)(slash - prefix) + 1) : tm_strdup("");
  char *start = rel ? tm_path_join(f->root, rel) : NULL;
  int rc = start ? walk(&w, start, rel, 0) : tm_error_nomem(err);
  if (rc == TM_OK) {
    if (w.items.len > 1) qsort(w.items.ptr, w.items.len, sizeof(listed), cmp_listed);
    for (size_t i = 0; i < w.items.len; i++) {
      listed *it = tm_vec_at(&w.items, i);
      tm_obj_info info = {it->key, it->size, it->mtime_ms};
      rc = fn(&info, payload);
      if (rc != TM_OK) break;
    }
    if (rc == TM_ITEROVER) rc = TM_OK;
  }
  for (size_t i = 0; i < w.items.len; i++) tm_free(((listed *)tm_vec_at(&w.items, i))->key);
  tm_vec_dispose(&w.items);
  tm_free(start);
  tm_free(rel);
  return rc;
}

/* ---- reads ---- */

static int file_get(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
                    tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  file_store *f = (file_store *)s;
  char *path = NULL;
  TM_TRY(key_path(f, key, false, &path, err));
  TM_OBJSTORE_COUNT(s, requests, 1);
  int rc = TM_OK;
  char *buf = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    rc = tm_error_set(err, e == ENOENT || e == ENOTDIR ? TM_ENOTFOUND : TM_EIO, "%s: %s", path,
                      e == ENOENT || e == ENOTDIR ? "no such object" : strerror(e));
    goto done;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
    goto done;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: not a regular file", path);
    goto done;
  }
  uint64_t size = (uint64_t)st.st_size;
  if (off >= size) goto done;
  uint64_t end = len > size - off ? size : off + len;
  size_t cap = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
  buf = tm_malloc(cap);
  if (!buf) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (uint64_t pos = off; pos < end;) {
    size_t want = end - pos < cap ? (size_t)(end - pos) : cap;
    ssize_t n = pread(fd, buf, want, (off_t)pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      rc = tm_error_set(err, TM_EIO, "%s: read at offset %llu: %s", path,
                        (unsigned long long)pos, strerror(errno));
      goto done;
    }
    if (n == 0) break; /* truncated meanwhile: deliver what there is */
    TM_OBJSTORE_COUNT(s, bytes_in, n);
    rc = sink(buf, (size_t)n, payload, err);
    if (rc < 0) goto done;
    pos += (uint64_t)n;
  }
done:
  if (fd >= 0) close(fd);
  tm_free(buf);
  tm_free(path);
  return rc;
}

static int file_open_input(tm_objstore *s, const char *key, uint64_t size, tm_input **out,
                           tm_error *err) {
  TM_UNUSED(size);
  file_store *f = (file_store *)s;
  char *path = NULL;
  TM_TRY(key_path(f, key, false, &path, err));
  int rc = tm_input_open_file(out, path, err);
  tm_free(path);
  return rc;
}

/* ---- writes ---- */

static int write_all(int fd, const char *path, const char *p, size_t n, tm_error *err) {
  while (n > 0) {
    ssize_t w = tm_io_write(fd, p, n);
    if (w < 0) {
      return tm_error_set(err, TM_EIO, "%s: write: %s", path, strerror(errno));
    }
    p += w;
    n -= (size_t)w;
  }
  return TM_OK;
}

/* Copies the whole of body into fd. */
static int copy_body(tm_objstore *s, int fd, const char *path, tm_input *body, tm_error *err) {
  uint64_t size = 0;
  TM_TRY(tm_input_size(body, &size, err));
  size_t cap = size < CHUNK ? (size_t)size : CHUNK;
  char *buf = tm_malloc(cap ? cap : 1);
  if (!buf) return tm_error_nomem(err);
  int rc = TM_OK;
  for (uint64_t pos = 0; pos < size && rc == TM_OK;) {
    size_t want = size - pos < cap ? (size_t)(size - pos) : cap;
    size_t n = 0;
    rc = tm_input_read_at(body, pos, buf, want, &n, err);
    if (rc == TM_OK && n == 0)
      rc = TM_CORRUPT(err, "%s: ended at byte %llu, before its size of %llu",
                      tm_input_name(body), (unsigned long long)pos, (unsigned long long)size);
    if (rc == TM_OK) rc = write_all(fd, path, buf, n, err);
    if (rc == TM_OK) {
      TM_OBJSTORE_COUNT(s, bytes_out, n);
      pos += n;
    }
  }
  tm_free(buf);
  return rc;
}

static int file_put(tm_objstore *s, const char *key, tm_input *body, unsigned flags,
                    tm_error *err) {
  file_store *f = (file_store *)s;
  static uint64_t counter;
  char *path = NULL, *dir = NULL, *tmp = NULL;
  int fd = -1, rc = TM_OK;
  TM_CHECK(key_path(f, key, false, &path, err));
  TM_OBJSTORE_COUNT(s, requests, 1);
  dir = tm_path_dirname(path);
  if (!dir) {
    rc = tm_error_nomem(err);
    goto done;
  }
  TM_CHECK(tm_mkdir_p(dir, err));
  bool atomic = (flags & TM_OBJ_PUT_ATOMIC) != 0;
  bool if_absent = (flags & TM_OBJ_PUT_IF_ABSENT) != 0;
  if (!atomic) {
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (if_absent ? O_EXCL : O_TRUNC), 0644);
    if (fd < 0) {
      rc = tm_error_set(err, errno == EEXIST ? TM_ECONFLICT : TM_EIO, "%s: %s", path,
                        errno == EEXIST ? "object already exists" : strerror(errno));
      goto done;
    }
    TM_CHECK(copy_body(s, fd, path, body, err));
    if (close(fd) != 0) {
      fd = -1;
      rc = tm_error_set(err, TM_EIO, "%s: close: %s", path, strerror(errno));
      goto done;
    }
    fd = -1;
    goto done;
  }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  tmp = tm_asprintf("%s/%s%s.%d.%llu", dir, TMP_PREFIX, base, (int)getpid(),
                    (unsigned long long)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
  if (!tmp) {
    rc = tm_error_nomem(err);
    goto done;
  }
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", tmp, strerror(errno));
    goto done;
  }
  TM_CHECK(copy_body(s, fd, path, body, err));
  if (tm_io_fsync(fd) != 0) {
    rc = tm_error_set(err, TM_EIO, "%s: fsync: %s", tmp, strerror(errno));
    goto done;
  }
  int cr = close(fd);
  fd = -1;
  if (cr != 0) {
    rc = tm_error_set(err, TM_EIO, "%s: close: %s", tmp, strerror(errno));
    goto done;
  }
  if (if_absent) {
    /* link() fails when the target exists, unlike rename(). */
    if (link(tmp, path) != 0) {
      int e = errno;
      rc = tm_error_set(err, e == EEXIST ? TM_ECONFLICT : TM_EIO, "%s: %s", path,
                        e == EEXIST ? "object already exists" : strerror(e));
      goto done;
    }
  } else if (rename(tmp, path) != 0) {
    rc = tm_error_set(err, TM_EIO, "%s: rename: %s", path, strerror(errno));
    goto done;
  }
  if (!if_absent) {
    tm_free(tmp);
    tmp = NULL; /* renamed away: nothing to remove */
  }
  rc = tm_fsync_dir(dir, err);
done:
  if (fd >= 0) close(fd);
  if (tmp) unlink(tmp);
  tm_free(tmp);
  tm_free(dir);
  tm_free(path);
  return rc;
}

static int file_del(tm_objstore *s, const char *key, tm_error *err) {
  file_store *f = (file_store *)s;
  char *path = NULL;
  TM_TRY(key_path(f, key, false, &path, err));
  TM_OBJSTORE_COUNT(s, requests, 1);
  int rc = TM_OK;
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    rc = tm_error_set(err, TM_EINVALID, "%s: is a folder, not an object", path);
  } else if (unlink(path) != 0 && errno != ENOENT && errno != ENOTDIR) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  }
  tm_free(path);
  return rc;
}

static void file_free(tm_objstore *s) {
  file_store *f = (file_store *)s;
  tm_free(f->root);
  tm_objstore__dispose(s);
  tm_free(f);
}

static const tm_objstore_vtable k_file_vt =
    TM_OBJSTORE_VTABLE_INIT("file", file_stat, file_list, file_get, file_put, file_del,
                            file_open_input, file_free);

int tm_objstore_file_new(tm_objstore **out, const char *root, tm_error *err) {
  if (!root || !*root) return tm_error_set(err, TM_EINVALID, "file store: empty root folder");
  file_store *f = tm_calloc(1, sizeof *f);
  if (!f) return tm_error_nomem(err);
  char *name = tm_asprintf("file:%s", root);
  f->root = tm_strdup(root);
  int rc = (!name || !f->root) ? tm_error_nomem(err) : TM_OK;
  if (rc == TM_OK) rc = tm_objstore__init(&f->base, &k_file_vt, name, err);
  tm_free(name);
  if (rc < 0) {
    tm_free(f->root);
    tm_free(f);
    return rc;
  }
  *out = &f->base;
  return TM_OK;
}
