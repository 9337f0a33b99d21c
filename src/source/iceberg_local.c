/*
 * iceberg_local.c - tm_iceberg_io over the local file system (source
 * layer). See iceberg_local.h.
 */
#include "source/iceberg_local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "format/iceberg/writer.h"
#include "io/io.h"
#include "util/alloc.h"

const char *tm_iceberg_local_path(const char *uri) {
  if (strncmp(uri, "file://", 7) == 0) {
    const char *p = uri + 7;
    /* file:///abs -> /abs; file://localhost/abs -> /abs */
    if (*p != '/') {
      const char *slash = strchr(p, '/');
      p = slash ? slash : p;
    }
    return p;
  }
  if (strncmp(uri, "file:", 5) == 0 && uri[5] == '/') return uri + 5;
  return uri;
}

static int local_open(void *payload, const char *path, tm_input **out, tm_error *err) {
  (void)payload;
  return tm_input_open_file(out, tm_iceberg_local_path(path), err);
}

static int local_list(void *payload, const char *dir, tm_iceberg_list_fn fn, void *ctx,
                      tm_error *err) {
  (void)payload;
  const char *p = tm_iceberg_local_path(dir);
  DIR *d = opendir(p);
  if (!d) {
    int e = errno;
    return tm_error_set(err, e == ENOENT || e == ENOTDIR ? TM_ENOTFOUND : TM_EIO, "%s: %s", p,
                        strerror(e));
  }
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue;
    if (fn(ctx, ent->d_name) != 0) break;
  }
  closedir(d);
  return TM_OK;
}

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = tm_io_write(fd, p, len);
    if (n < 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Creates path with data only if it does not exist: the data goes to a
 * temporary file that is then hard-linked to the final name (link fails
 * with EEXIST when another writer got there first). */
static int write_exclusive(const char *path, const void *data, size_t len, tm_error *err) {
  char uuid[37];
  tm_iceberg_uuid(uuid); /* unique even for two writers in one process */
  char *tmp = tm_asprintf("%s.tmp-%ld-%s", path, (long)getpid(), uuid);
  if (!tmp) return tm_error_nomem(err);
  int rc = TM_OK;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", tmp, strerror(errno));
    goto done;
  }
  if (write_all(fd, data, len) < 0 || tm_io_fsync(fd) < 0) {
    rc = tm_error_set(err, TM_EIO, "%s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    goto done;
  }
  close(fd);
  if (link(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    rc = tm_error_set(err, e == EEXIST ? TM_ECONFLICT : TM_EIO, "%s: %s", path,
                      e == EEXIST ? "already exists (a concurrent commit?)" : strerror(e));
    goto done;
  }
  unlink(tmp);
  char *dir = tm_path_dirname(path);
  if (dir) {
    rc = tm_fsync_dir(dir, err);
    tm_free(dir);
  }
done:
  tm_free(tmp);
  return rc;
}

static int local_write(void *payload, const char *path, const void *data, size_t len,
                       bool exclusive, tm_error *err) {
  (void)payload;
  const char *p = tm_iceberg_local_path(path);
  char *dir = tm_path_dirname(p);
  if (!dir) return tm_error_nomem(err);
  int rc = tm_mkdir_p(dir, err);
  tm_free(dir);
  if (rc < 0) return rc;
  if (exclusive) return write_exclusive(p, data, len, err);
  return tm_write_file_atomic(p, data, len, err);
}

static int local_remove(void *payload, const char *path, tm_error *err) {
  (void)payload;
  const char *p = tm_iceberg_local_path(path);
  if (unlink(p) < 0) {
    int e = errno;
    return tm_error_set(err, e == ENOENT ? TM_ENOTFOUND : TM_EIO, "%s: %s", p, strerror(e));
  }
  return TM_OK;
}

void tm_iceberg_io_local(tm_iceberg_io *io) {
  memset(io, 0, sizeof *io);
  io->version = TM_ICEBERG_IO_VERSION;
  io->open = local_open;
  io->list = local_list;
  io->write = local_write;
  io->remove = local_remove;
}
