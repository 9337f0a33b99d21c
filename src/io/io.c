/*
 * io.c - positional inputs, atomic outputs and file-system helpers (io layer).
 * See io.h.
 */
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/time.h"

int tm_input__init(tm_input *in, const tm_input_vtable *vt, const char *name, tm_error *err) {
  in->vt = vt;
  in->bytes_read = 0;
  in->reads = 0;
  in->name = tm_strdup(name ? name : "");
  return in->name ? TM_OK : tm_error_nomem(err);
}

void tm_input__dispose(tm_input *in) {
  tm_free(in->name);
  in->name = NULL;
}

int tm_input_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                     tm_error *err) {
  int rc = in->vt->read_at(in, off, buf, len, n_out, err);
  if (rc == TM_OK) {
    in->bytes_read += *n_out;
    in->reads++;
  }
  return rc;
}

int tm_input_read_exact(tm_input *in, uint64_t off, void *buf, size_t len, tm_error *err) {
  size_t n = 0;
  TM_TRY(tm_input_read_at(in, off, buf, len, &n, err));
  if (n != len)
    return TM_CORRUPT(err, "%s: unexpected end of file reading %zu bytes at offset %llu",
                      in->name, len, (unsigned long long)off);
  return TM_OK;
}

int tm_input_size(tm_input *in, uint64_t *out, tm_error *err) {
  return in->vt->size(in, out, err);
}

int tm_input_will_need(tm_input *in, const tm_io_range *ranges, size_t n_ranges,
                       tm_error *err) {
  if (in->vt->version < 2 || !in->vt->will_need || n_ranges == 0) return TM_OK;
  return in->vt->will_need(in, ranges, n_ranges, err);
}

void tm_input_close(tm_input *in) {
  if (in) in->vt->close(in);
}

/* ---- local files ---- */

typedef struct file_input {
  tm_input base;
  int fd;
  uint64_t size;
} file_input;

static int file_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                        tm_error *err) {
  file_input *f = (file_input *)in;
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return tm_error_set(err, TM_EIO, "%s: read at offset %llu: %s", in->name,
                          (unsigned long long)(off + done), strerror(errno));
    }
    if (n == 0) break;
    done += (size_t)n;
  }
  *n_out = done;
  return TM_OK;
}

static int file_size(tm_input *in, uint64_t *out, tm_error *err) {
  TM_UNUSED(err);
  *out = ((file_input *)in)->size;
  return TM_OK;
}

static void file_close(tm_input *in) {
  file_input *f = (file_input *)in;
  if (f->fd >= 0) close(f->fd);
  tm_input__dispose(in);
  tm_free(f);
}

static const tm_input_vtable k_file_vt = {TM_INPUT_VTABLE_VERSION, file_read_at, file_size,
                                          file_close, NULL};

int tm_input_open_file(tm_input **out, const char *path, tm_error *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return tm_error_set(err, e == ENOENT ? TM_ENOTFOUND : TM_EIO, "%s: %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    close(fd);
    return tm_error_set(err, TM_EIO, "%s: %s", path,
                        S_ISDIR(st.st_mode) ? "is a folder, not a file" : strerror(e));
  }
  file_input *f = tm_calloc(1, sizeof *f);
  if (!f) {
    close(fd);
    return tm_error_nomem(err);
  }
  if (tm_input__init(&f->base, &k_file_vt, path, err) != TM_OK) {
    close(fd);
    tm_free(f);
    return TM_ENOMEM;
  }
  f->fd = fd;
  f->size = (uint64_t)st.st_size;
  *out = &f->base;
  return TM_OK;
}

/* ---- memory ---- */

typedef struct mem_input {
  tm_input base;
  const uint8_t *data;
  size_t len;
  bool owned;
} mem_input;

static int mem_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                       tm_error *err) {
  TM_UNUSED(err);
  mem_input *m = (mem_input *)in;
  if (off >= m->len) {
    *n_out = 0;
    return TM_OK;
  }
  size_t n = m->len - (size_t)off;
  if (n > len) n = len;
  memcpy(buf, m->data + off, n);
  *n_out = n;
  return TM_OK;
}

static int mem_size(tm_input *in, uint64_t *out, tm_error *err) {
  TM_UNUSED(err);
  *out = ((mem_input *)in)->len;
  return TM_OK;
}

static void mem_close(tm_input *in) {
  mem_input *m = (mem_input *)in;
  if (m->owned) tm_free((void *)m->data);
  tm_input__dispose(in);
  tm_free(m);
}

static const tm_input_vtable k_mem_vt = {TM_INPUT_VTABLE_VERSION, mem_read_at, mem_size,
                                         mem_close, NULL};

int tm_input_open_memory(tm_input **out, const char *name, const void *data, size_t len,
                         bool take_ownership, tm_error *err) {
  mem_input *m = tm_calloc(1, sizeof *m);
  if (!m) return tm_error_nomem(err);
  if (tm_input__init(&m->base, &k_mem_vt, name, err) != TM_OK) {
    tm_free(m);
    return TM_ENOMEM;
  }
  m->data = data;
  m->len = len;
  m->owned = take_ownership;
  *out = &m->base;
  return TM_OK;
}

/* ---- atomic output ---- */

int tm_atomic_file_begin(tm_atomic_file *f, const char *path, tm_error *err) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->path = tm_strdup(path);
  f->tmp_path = tm_asprintf("%s.tmp.%d.%lld", path, (int)getpid(), (long long)tm_monotonic_ns());
  if (!f->path || !f->tmp_path) {
    tm_atomic_file_abort(f);
    return tm_error_nomem(err);
  }
  f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    int e = errno;
    tm_error_set(err, TM_EIO, "%s: %s", f->tmp_path, strerror(e));
    tm_atomic_file_abort(f);
    return TM_EIO;
  }
  return TM_OK;
}

int tm_atomic_file_write(tm_atomic_file *f, const void *data, size_t len, tm_error *err) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = tm_io_write(f->fd, p, len);
    if (n < 0) {
      return tm_error_set(err, TM_EIO, "%s: write: %s", f->path, strerror(errno));
    }
    p += n;
    len -= (size_t)n;
    f->written += (uint64_t)n;
  }
  return TM_OK;
}

int tm_atomic_file_commit(tm_atomic_file *f, tm_error *err) {
  int rc = TM_OK;
  f->renamed = false;
  /* Allocated first: once the rename is done, nothing may fail for lack of memory. */
  char *dir = tm_path_dirname(f->path);
  if (!dir) {
    rc = tm_error_nomem(err);
  } else if (tm_io_fsync(f->fd) != 0) {
    rc = tm_error_set(err, TM_EIO, "%s: fsync: %s", f->path, strerror(errno));
  } else if (close(f->fd) != 0) {
    f->fd = -1;
    rc = tm_error_set(err, TM_EIO, "%s: close: %s", f->path, strerror(errno));
  } else {
    f->fd = -1;
    if (rename(f->tmp_path, f->path) != 0) {
      rc = tm_error_set(err, TM_EIO, "%s: rename: %s", f->path, strerror(errno));
    } else {
      f->renamed = true;
      rc = tm_fsync_dir(dir, err);
      tm_free(f->tmp_path);
      f->tmp_path = NULL; /* nothing left to remove */
    }
  }
  tm_free(dir);
  tm_atomic_file_abort(f);
  return rc;
}

void tm_atomic_file_abort(tm_atomic_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp_path) unlink(f->tmp_path);
  tm_free(f->tmp_path);
  tm_free(f->path);
  f->tmp_path = NULL;
  f->path = NULL;
}

int tm_write_file_atomic(const char *path, const void *data, size_t len, tm_error *err) {
  tm_atomic_file f;
  TM_TRY(tm_atomic_file_begin(&f, path, err));
  int rc = tm_atomic_file_write(&f, data, len, err);
  if (rc < 0) {
    tm_atomic_file_abort(&f);
    return rc;
  }
  return tm_atomic_file_commit(&f, err);
}

int tm_read_file(const char *path, size_t limit, char **out, size_t *len_out, tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(tm_input_open_file(&in, path, err));
  uint64_t size = 0;
  int rc = tm_input_size(in, &size, err);
  char *buf = NULL;
  if (rc == TM_OK && size > limit)
    rc = tm_error_set(err, TM_ETOOLARGE, "%s: %llu bytes is over the limit of %zu", path,
                      (unsigned long long)size, limit);
  if (rc == TM_OK) {
    buf = tm_malloc((size_t)size + 1);
    if (!buf) rc = tm_error_nomem(err);
  }
  if (rc == TM_OK) rc = tm_input_read_exact(in, 0, buf, (size_t)size, err);
  tm_input_close(in);
  if (rc < 0) {
    tm_free(buf);
    return rc;
  }
  buf[size] = '\0';
  *out = buf;
  if (len_out) *len_out = (size_t)size;
  return TM_OK;
}

/* ---- file-system helpers ---- */

int tm_mkdir_p(const char *path, tm_error *err) {
  char *copy = tm_strdup(path);
  if (!copy) return tm_error_nomem(err);
  size_t len = strlen(copy);
  for (size_t i = 1; i <= len; i++) {
    if (copy[i] == '/' || copy[i] == '\0') {
      char saved = copy[i];
      copy[i] = '\0';
      if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
        int e = errno;
        tm_error_set(err, TM_EIO, "%s: mkdir: %s", copy, strerror(e));
        tm_free(copy);
        return TM_EIO;
      }
      copy[i] = saved;
    }
  }
  tm_free(copy);
  if (!tm_is_dir(path)) return tm_error_set(err, TM_EIO, "%s: not a folder", path);
  return TM_OK;
}

int tm_fsync_dir(const char *path, tm_error *err) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  int rc = TM_OK;
  if (tm_io_fsync(fd) != 0 && errno != EINVAL)
    rc = tm_error_set(err, TM_EIO, "%s: fsync: %s", path, strerror(errno));
  close(fd);
  return rc;
}

int tm_remove_tree(const char *path, tm_error *err) {
  if (!path || !*path || strcmp(path, "/") == 0)
    return tm_error_set(err, TM_EINVALID, "refusing to remove '%s'", path ? path : "");
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? TM_OK : tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
    struct dirent *e;
    int rc = TM_OK;
    while (rc == TM_OK && (e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *child = tm_path_join(path, e->d_name);
      if (!child) rc = tm_error_nomem(err);
      else rc = tm_remove_tree(child, err);
      tm_free(child);
    }
    closedir(d);
    if (rc < 0) return rc;
    if (rmdir(path) != 0) return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
    return TM_OK;
  }
  if (unlink(path) != 0) return tm_error_set(err, TM_EIO, "%s: %s", path, strerror(errno));
  return TM_OK;
}

bool tm_path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

bool tm_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *tm_path_join(const char *a, const char *b) {
  size_t la = strlen(a);
  if (la == 0) return tm_strdup(b);
  if (b[0] == '/') b++;
  return tm_asprintf("%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

char *tm_path_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return tm_strdup(".");
  if (slash == path) return tm_strdup("/");
  return tm_strndup(path, (size_t)(slash - path));
}
