/*
 * cayenne.c - the cayenne engine: columnar segment files and a crash-safe
 * manifest in the dataset's folder (engine layer).
 *
 * The columnar core (columnar/table.c) does the work; this file makes it
 * durable. The fsync discipline of a commit (docs/ENGINES.md):
 *   1. each new segment is written to a new file (never overwritten) and its
 *      write-back started;
 *   2. before publishing, every new segment file is fdatasync'ed and the
 *      folder fsync'ed (the files and their names are durable);
 *   3. the manifest is written to a temporary file, fsync'ed, renamed over
 *      MANIFEST, and the folder fsync'ed (tm_write_file_atomic);
 *   4. only then are segments the new manifest no longer names unlinked.
 * A crash before step 3's rename leaves the old manifest, which names none
 * of the new files; a crash after it leaves the new one, whose files are all
 * durable. A manifest is never modified in place, so it is never torn. At
 * open, files that the manifest does not name are removed.
 *
 * Keyed rows: newest time_column wins per key (SPEC A8); see table.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/cayenne/cayenne_int.h"
#include "io/io.h"
#include "util/alloc.h"

/* One segment file being written in the background. */
typedef struct wjob {
  uint64_t id;
  tm_cseg *seg;         /* the memory segment (one reference), until handed over */
  tm_cseg *mapped;      /* its file-backed twin (one reference), once mapped */
  bool handed;          /* the twin went to the transaction (written) */
  int fd;               /* open until sync's fdatasync; -1 after */
  uint64_t size, checksum;
  int rc;               /* the write's result */
  tm_error err;
  bool done, cancelled;
} wjob;

typedef struct cay_store {
  char *dir;            /* owned */
  int lock_fd;
  char *schema_text;    /* owned */
  char *options_text;   /* owned */
  /* The background writer of the current transaction. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool running;         /* the thread exists (joined by sync or finish) */
  bool closing;         /* no more jobs: the thread exits when the queue is empty */
  wjob **jobs;          /* owned; in seal order */
  size_t n_jobs, cap_jobs, next_job;
  /*
   * A publish failed after its MANIFEST took the name (only the folder fsync
   * failed): the file on disk may name this transaction's segments, so the
   * rollback must not unlink them. The next open removes what no manifest
   * names. Reset by finish.
   */
  bool keep_files;
} cay_store;

static const tm_engine_vtable k_vtable;
static const tm_cstore k_store;

static cay_store *store_of(tm_cengine *e) { return e->store_data; }

static char *seg_path(const char *dir, uint64_t id) {
  return tm_asprintf("%s/seg-%016llx.tmc", dir, (unsigned long long)id);
}

/* Copies zone maps (string payloads into dst->zone_buf). */
static int copy_zones(tm_cseg *dst, const tm_col_stats *zones, tm_error *err) {
  size_t bytes = 0;
  for (size_t c = 0; c < dst->n_cols; c++) {
    tm_type_id id = dst->cols[c].type.id;
    bool b = id == TM_TYPE_UTF8 || id == TM_TYPE_BINARY || id == TM_TYPE_FIXED_BINARY;
    if (b && zones[c].has_min) bytes += zones[c].min.v.s.len;
    if (b && zones[c].has_max) bytes += zones[c].max.v.s.len;
  }
  tm_free(dst->zone_buf);
  dst->zone_buf = tm_malloc(bytes ? bytes : 1);
  if (!dst->zone_buf) return tm_error_nomem(err);
  size_t pos = 0;
  for (size_t c = 0; c < dst->n_cols; c++) {
    tm_col_stats z = zones[c];
    tm_type_id id = dst->cols[c].type.id;
    bool b = id == TM_TYPE_UTF8 || id == TM_TYPE_BINARY || id == TM_TYPE_FIXED_BINARY;
    if (b && z.has_min) {
      memcpy(dst->zone_buf + pos, z.min.v.s.ptr, z.min.v.s.len);
      z.min.v.s.ptr = dst->zone_buf + pos;
      pos += z.min.v.s.len;
    }
    if (b && z.has_max) {
      memcpy(dst->zone_buf + pos, z.max.v.s.ptr, z.max.v.s.len);
      z.max.v.s.ptr = dst->zone_buf + pos;
      pos += z.max.v.s.len;
    }
    z.min.type = z.max.type = id;
    z.row_count = dst->n_rows;
    dst->cols[c].zone = z;
  }
  return TM_OK;
}

/* ---- the store hooks ---------------------------------------------------------------------
 *
 * Sealed segments are written by a background thread while the transaction
 * goes on building the next ones (direct I/O keeps that thread mostly
 * waiting on the device). sync joins it, fdatasyncs every file, maps each
 * back and fsyncs the folder; resolve hands the mapped twins to the next
 * snapshot.
 */

static void *writer_main(void *arg) {
  tm_cengine *e = arg;
  cay_store *st = store_of(e);
  pthread_mutex_lock(&st->mu);
  for (;;) {
    while (st->next_job == st->n_jobs && !st->closing) pthread_cond_wait(&st->cv, &st->mu);
    if (st->next_job == st->n_jobs) break;
    wjob *j = st->jobs[st->next_job++];
    if (j->cancelled) {
      j->done = true;
      continue;
    }
    pthread_mutex_unlock(&st->mu);
    char *path = seg_path(st->dir, j->id);
    tm_error_init(&j->err);
    j->rc = path ? tm_cay_segment_write(path, j->seg, &j->fd, &j->size, &j->checksum, &j->err)
                 : tm_error_nomem(&j->err);
    tm_free(path);
    pthread_mutex_lock(&st->mu);
    j->done = true;
  }
  pthread_mutex_unlock(&st->mu);
  return NULL;
}

/* Stops the writer after the jobs queued so far. */
static void writer_join(cay_store *st) {
  if (!st->running) return;
  pthread_mutex_lock(&st->mu);
  st->closing = true;
  pthread_cond_signal(&st->cv);
  pthread_mutex_unlock(&st->mu);
  pthread_join(st->thread, NULL);
  st->running = false;
  st->closing = false;
}

static int cay_persist(tm_cengine *e, tm_cseg *seg, tm_error *err) {
  cay_store *st = store_of(e);
  wjob *j = tm_calloc(1, sizeof *j);
  if (!j) return tm_error_nomem(err);
  j->fd = -1;
  j->id = seg->id;
  j->seg = tm_cseg_retain(seg);
  pthread_mutex_lock(&st->mu);
  int rc = TM_OK;
  if (st->n_jobs == st->cap_jobs) {
    size_t cap = st->cap_jobs ? st->cap_jobs * 2 : 16;
    wjob **jobs = tm_reallocarray(st->jobs, cap, sizeof *jobs);
    if (!jobs) rc = tm_error_nomem(err);
    else {
      st->jobs = jobs;
      st->cap_jobs = cap;
    }
  }
  if (rc == TM_OK) {
    st->jobs[st->n_jobs++] = j;
    j = NULL;
    if (!st->running) {
      if (pthread_create(&st->thread, NULL, writer_main, e) == 0) st->running = true;
      else rc = tm_error_set(err, TM_ERROR, "%s: cannot start the segment writer", st->dir);
    }
    pthread_cond_signal(&st->cv);
  }
  pthread_mutex_unlock(&st->mu);
  if (j) {
    tm_cseg_release(j->seg);
    tm_free(j);
  }
  return rc;
}

/* Maps a written segment file back as the memory segment's twin. */
static int map_twin(tm_cengine *e, wjob *j, tm_error *err) {
  cay_store *st = store_of(e);
  char *path = seg_path(st->dir, j->id);
  int rc = path ? tm_cay_segment_open(path, &e->base.schema, j->id, j->size, j->checksum, false,
                                      &j->mapped, err)
                : tm_error_nomem(err);
  tm_free(path);
  tm_col_stats *zones = rc == TM_OK ? tm_calloc(j->seg->n_cols ? j->seg->n_cols : 1, sizeof *zones) : NULL;
  if (rc == TM_OK && !zones) rc = tm_error_nomem(err);
  for (size_t c = 0; rc == TM_OK && c < j->seg->n_cols; c++) zones[c] = j->seg->cols[c].zone;
  if (rc == TM_OK) rc = copy_zones(j->mapped, zones, err);
  tm_free(zones);
  if (rc == TM_OK) {
    /* Written by this process a moment ago: offsets and codes are right. */
    for (size_t c = 0; c < j->mapped->n_cols; c++) j->mapped->cols[c].checked = 1;
    j->mapped->checksum = j->checksum;
    j->mapped->slot = j->seg->slot;
  } else {
    tm_cseg_release(j->mapped);
    j->mapped = NULL;
  }
  return rc;
}

static size_t cay_written(tm_cengine *e, tm_cseg **mem, tm_cseg **twin, size_t cap) {
  cay_store *st = store_of(e);
  size_t n = 0;
  for (size_t i = 0; i < st->n_jobs && n < cap; i++) {
    wjob *j = st->jobs[i];
    pthread_mutex_lock(&st->mu);
    bool ready = j->done && !j->cancelled && !j->handed && j->rc == TM_OK;
    pthread_mutex_unlock(&st->mu);
    if (!ready) continue;
    tm_error sub;
    tm_error_init(&sub);
    if (!j->mapped && map_twin(e, j, &sub) < 0) continue; /* sync reports it */
    mem[n] = j->seg;    /* the store's reference goes with it: the caller drops it */
    twin[n] = tm_cseg_retain(j->mapped);
    j->seg = NULL;
    j->handed = true;
    n++;
  }
  /* The store's reference on a handed memory segment is released here. */
  for (size_t i = 0; i < n; i++) tm_cseg_release(mem[i]);
  return n;
}

static int cay_sync(tm_cengine *e, tm_error *err) {
  cay_store *st = store_of(e);
  writer_join(st);
  if (st->next_job < st->n_jobs) {
    /* The writer could not start: write what is left here. */
    for (size_t i = st->next_job; i < st->n_jobs; i++) {
      wjob *j = st->jobs[i];
      if (j->cancelled) continue;
      char *path = seg_path(st->dir, j->id);
      j->rc = path ? tm_cay_segment_write(path, j->seg, &j->fd, &j->size, &j->checksum, &j->err)
                   : tm_error_nomem(&j->err);
      tm_free(path);
      j->done = true;
    }
    st->next_job = st->n_jobs;
  }
  int rc = TM_OK;
  for (size_t i = 0; i < st->n_jobs; i++) {
    wjob *j = st->jobs[i];
    if (j->cancelled) continue;
    if (rc == TM_OK && j->rc < 0) rc = tm_error_copy(err, &j->err);
    if (rc == TM_OK && j->fd >= 0 && tm_io_fdatasync(j->fd) != 0)
      rc = tm_error_set(err, TM_EIO, "%s: segment %016llx: fdatasync: %s", st->dir,
                        (unsigned long long)j->id, strerror(errno));
    if (j->fd >= 0) close(j->fd);
    j->fd = -1;
    if (rc == TM_OK && !j->mapped) rc = map_twin(e, j, err);
  }
  if (rc == TM_OK && st->n_jobs > 0) rc = tm_fsync_dir(st->dir, err);
  return rc;
}

static tm_cseg *cay_resolve(tm_cengine *e, tm_cseg *seg) {
  cay_store *st = store_of(e);
  for (size_t i = 0; i < st->n_jobs; i++)
    if (st->jobs[i]->id == seg->id && st->jobs[i]->mapped) return tm_cseg_retain(st->jobs[i]->mapped);
  return tm_cseg_retain(seg);
}

static int cay_publish(tm_cengine *e, const tm_csnap *next, tm_error *err) {
  cay_store *st = store_of(e);
  tm_buf b = TM_BUF_INIT(TM_CAY_MANIFEST_MAX);
  int rc = tm_cay_manifest_encode(&b, next, st->schema_text, st->options_text, e->next_seg_id, err);
  char *path = rc == TM_OK ? tm_path_join(st->dir, TM_CAY_MANIFEST) : NULL;
  if (rc == TM_OK && !path) rc = tm_error_nomem(err);
  tm_atomic_file f;
  if (rc == TM_OK) rc = tm_atomic_file_begin(&f, path, err);
  if (rc == TM_OK) {
    rc = tm_atomic_file_write(&f, b.ptr, b.len, err);
    if (rc == TM_OK) {
      rc = tm_atomic_file_commit(&f, err);
      if (rc < 0 && f.renamed) st->keep_files = true;
    } else {
      tm_atomic_file_abort(&f);
    }
  }
  tm_free(path);
  tm_buf_dispose(&b);
  return rc;
}

static void cay_finish(tm_cengine *e) {
  cay_store *st = store_of(e);
  writer_join(st);
  for (size_t i = 0; i < st->n_jobs; i++) {
    wjob *j = st->jobs[i];
    if (j->fd >= 0) close(j->fd);
    tm_cseg_release(j->seg);
    tm_cseg_release(j->mapped);
    tm_free(j);
  }
  st->n_jobs = st->next_job = 0;
  st->keep_files = false;
}

static void cay_forget(tm_cengine *e, tm_cseg *seg) {
  cay_store *st = store_of(e);
  /* A segment still queued is not written at all; one being written is
   * unlinked now and its descriptor closed by finish. */
  pthread_mutex_lock(&st->mu);
  for (size_t i = 0; i < st->n_jobs; i++)
    if (st->jobs[i]->id == seg->id) st->jobs[i]->cancelled = true;
  pthread_mutex_unlock(&st->mu);
  writer_join(st);
  if (st->keep_files) return;
  char *path = seg_path(st->dir, seg->id);
  if (path) unlink(path); /* mapped readers keep their pages */
  tm_free(path);
}

static const tm_cstore k_store = {cay_persist, cay_written, cay_sync, cay_resolve,
                                   cay_publish, cay_finish, cay_forget};

/* ---- open / close ------------------------------------------------------------------------- */

static void store_free(cay_store *st) {
  if (!st) return;
  tm_free(st->jobs);
  pthread_mutex_destroy(&st->mu);
  pthread_cond_destroy(&st->cv);
  if (st->lock_fd >= 0) close(st->lock_fd); /* releases the flock */
  tm_free(st->dir);
  tm_free(st->schema_text);
  tm_free(st->options_text);
  tm_free(st);
}

static void cay_close(tm_engine *base) {
  tm_cengine *e = (tm_cengine *)base;
  tm_cengine_dispose(e);
  store_free(e->store_data);
  tm_engine__dispose_base(&e->base);
  tm_free(e);
}

static int take_lock(cay_store *st, tm_error *err) {
  char *path = tm_path_join(st->dir, "LOCK");
  if (!path) return tm_error_nomem(err);
  st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  int e = errno;
  tm_free(path);
  if (st->lock_fd < 0) return tm_error_set(err, TM_EIO, "%s/LOCK: %s", st->dir, strerror(e));
  if (flock(st->lock_fd, LOCK_EX | LOCK_NB) != 0)
    return tm_error_set(err, TM_ECONFLICT, "%s: the acceleration is open in another process",
                        st->dir);
  return TM_OK;
}

static bool named(const tm_csnap *s, uint64_t id) {
  for (size_t i = 0; i < s->n_segs; i++)
    if (s->segs[i].seg->id == id) return true;
  return false;
}

/* Removes segment files no manifest names and leftover temporary manifests. */
static int remove_orphans(cay_store *st, const tm_csnap *s, tm_error *err) {
  DIR *d = opendir(st->dir);
  if (!d) return tm_error_set(err, TM_EIO, "%s: %s", st->dir, strerror(errno));
  bool removed = false;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    const char *n = ent->d_name;
    bool orphan = false;
    unsigned long long id;
    if (tm_str_has_prefix(n, "seg-") && tm_str_has_suffix(n, ".tmc") && strlen(n) == 4 + 16 + 4) {
      char hex[17];
      memcpy(hex, n + 4, 16);
      hex[16] = '\0';
      char *end;
      id = strtoull(hex, &end, 16);
      orphan = *end != '\0' || !named(s, id);
    } else if (tm_str_has_prefix(n, TM_CAY_MANIFEST ".tmp.")) {
      orphan = true;
    }
    if (!orphan) continue;
    char *p = tm_path_join(st->dir, n);
    if (p && unlink(p) == 0) removed = true;
    tm_free(p);
  }
  closedir(d);
  return removed ? tm_fsync_dir(st->dir, err) : TM_OK;
}

/* Names and types equal (nullability may change between source versions). */
static bool same_columns(const tm_schema *a, const tm_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (size_t i = 0; i < a->n_cols; i++)
    if (strcmp(a->cols[i].name, b->cols[i].name) != 0 ||
        !tm_type_equal(&a->cols[i].type, &b->cols[i].type))
      return false;
  return true;
}

/* Builds the published snapshot from a parsed manifest. */
static int load_state(tm_cengine *e, const tm_cay_manifest *m, tm_csnap **out, tm_error *err) {
  cay_store *st = store_of(e);
  tm_csnap *s;
  TM_TRY(tm_csnap_new(&s, e, err));
  int rc = tm_kv_copy(&s->state, &m->state, err);
  s->generation = m->generation;
  s->segs = tm_calloc(m->n_segs ? m->n_segs : 1, sizeof *s->segs);
  if (rc == TM_OK && !s->segs) rc = tm_error_nomem(err);
  for (size_t i = 0; i < m->n_segs && rc == TM_OK; i++) {
    const tm_cay_manifest_seg *g = &m->segs[i];
    char *path = seg_path(st->dir, g->id);
    tm_cseg *seg = NULL;
    rc = path ? tm_cay_segment_open(path, &e->base.schema, g->id, g->file_size, g->checksum,
                                    e->base.cfg.verify_checksums, &seg, err)
              : tm_error_nomem(err);
    tm_free(path);
    if (rc == TM_OK && (uint64_t)seg->n_rows != g->n_rows)
      rc = TM_CORRUPT(err, "%s: segment %016llx row count differs from the manifest", st->dir,
                      (unsigned long long)g->id);
    if (rc == TM_OK) rc = copy_zones(seg, g->zones, err);
    if (rc == TM_OK) seg->checksum = g->checksum;
    if (rc < 0) {
      tm_cseg_release(seg);
      break;
    }
    s->segs[s->n_segs].seg = seg;
    s->n_segs++;
    if (g->del) {
      roaring_bitmap_t *bm = roaring_bitmap_portable_deserialize_safe(g->del, g->del_len);
      if (!bm || roaring_bitmap_portable_size_in_bytes(bm) != g->del_len ||
          (roaring_bitmap_get_cardinality(bm) &&
           roaring_bitmap_maximum(bm) >= (uint64_t)seg->n_rows)) {
        if (bm) roaring_bitmap_free(bm);
        rc = TM_CORRUPT(err, "%s: deletion set of segment %016llx is malformed", st->dir,
                        (unsigned long long)g->id);
        break;
      }
      s->segs[s->n_segs - 1].del = tm_cdel_take(bm);
      if (!s->segs[s->n_segs - 1].del) rc = tm_error_nomem(err);
    }
    if (rc == TM_OK) {
      uint64_t dead = s->segs[s->n_segs - 1].del ? s->segs[s->n_segs - 1].del->card : 0;
      s->n_live += seg->n_rows - (int64_t)dead;
    }
  }
  if (rc < 0) {
    tm_engine__snapshot_drop(&s->base);
    return rc;
  }
  *out = s;
  return TM_OK;
}

static int cay_open(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
                    tm_error *err) {
  int rc = TM_OK;
  char *bytes = NULL, *mpath = NULL;
  size_t len = 0;
  tm_schema stored;
  tm_schema_init(&stored);
  tm_cay_manifest m;
  memset(&m, 0, sizeof m);
  tm_buf text = TM_BUF_INIT(1 << 24);
  tm_cengine *e = NULL;
  tm_csnap *initial = NULL;
  cay_store *st = tm_calloc(1, sizeof *st);
  if (!st) return tm_error_nomem(err);
  st->lock_fd = -1;
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  st->dir = tm_strdup(opts->path);
  if (!st->dir) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (schema) TM_CHECK(tm_mkdir_p(st->dir, err));
  else if (!tm_is_dir(st->dir)) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: no acceleration stored", st->dir);
    goto done;
  }
  TM_CHECK(take_lock(st, err));
  mpath = tm_path_join(st->dir, TM_CAY_MANIFEST);
  if (!mpath) {
    rc = tm_error_nomem(err);
    goto done;
  }
  int r = tm_read_file(mpath, TM_CAY_MANIFEST_MAX, &bytes, &len, err);
  bool exists = r == TM_OK;
  if (r < 0 && r != TM_ENOTFOUND) {
    rc = r;
    goto done;
  }
  if (!exists && !schema) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: no acceleration stored", st->dir);
    goto done;
  }
  if (exists) {
    tm_strview stext;
    TM_CHECK(tm_cay_manifest_schema(bytes, len, &stext, err));
    TM_CHECK(tm_engine__schema_decode(&stored, stext.ptr, stext.len, err));
    if (schema && !same_columns(schema, &stored)) {
      rc = tm_error_set(err, TM_ECONFLICT, "%s: the stored acceleration has a different schema",
                        st->dir);
      goto done;
    }
  }
  e = tm_calloc(1, sizeof *e);
  if (!e) {
    rc = tm_error_nomem(err);
    goto done;
  }
  rc = tm_engine__init_base(&e->base, &k_vtable, exists ? &stored : schema, opts, err);
  if (rc < 0) {
    tm_free(e);
    e = NULL;
    goto done;
  }
  e->store = &k_store;
  e->store_data = st;
  TM_CHECK(tm_engine__schema_encode(&e->base.schema, &text, err));
  st->schema_text = tm_buf_take(&text, NULL);
  TM_CHECK(tm_engine__options_fingerprint(&e->base, &text, err));
  st->options_text = tm_buf_take(&text, NULL);
  if (!st->schema_text || !st->options_text) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (exists) {
    TM_CHECK(tm_cay_manifest_decode(&m, bytes, len, &e->base.schema, err));
    if (!tm_sv_eq_cstr(m.options_text, st->options_text)) {
      rc = tm_error_set(err, TM_ECONFLICT,
                        "%s: stored acceleration has options '%.*s', the dataset has '%s'",
                        st->dir, (int)m.options_text.len, m.options_text.ptr, st->options_text);
      goto done;
    }
    TM_CHECK(load_state(e, &m, &initial, err));
    e->next_seg_id = m.next_seg_id;
  } else {
    TM_CHECK(tm_csnap_new(&initial, e, err));
    /* Publish the empty state, so that a reopen finds the schema. */
    TM_CHECK(cay_publish(e, initial, err));
  }
  TM_CHECK(remove_orphans(st, initial, err));
  tm_csnap *pub = initial;
  initial = NULL;
  rc = tm_cengine_init(e, pub, err);
  if (rc < 0) goto done;
  *out = &e->base;
  e = NULL;
  st = NULL;
done:
  if (initial) tm_engine__snapshot_drop(&initial->base);
  if (e) {
    e->store_data = NULL;
    tm_cengine_dispose(e);
    tm_engine__dispose_base(&e->base);
    tm_free(e);
  }
  store_free(st);
  tm_cay_manifest_dispose(&m);
  tm_schema_dispose(&stored);
  tm_buf_dispose(&text);
  tm_free(bytes);
  tm_free(mpath);
  return rc;
}

static int cay_drop(const tm_engine_options *opts, tm_error *err) {
  if (!tm_path_exists(opts->path)) return TM_OK;
  return tm_remove_tree(opts->path, err);
}

static int cay_size(tm_engine *base, uint64_t *out, tm_error *err) {
  tm_cengine *e = (tm_cengine *)base;
  tm_csnap *s = tm_cengine_pin(base);
  uint64_t total = 0;
  for (size_t i = 0; i < s->n_segs; i++) total += s->segs[i].seg->file_size;
  tm_engine_snapshot_release(&s->base);
  char *mpath = tm_path_join(store_of(e)->dir, TM_CAY_MANIFEST);
  struct stat stbuf;
  if (mpath && stat(mpath, &stbuf) == 0) total += (uint64_t)stbuf.st_size;
  tm_free(mpath);
  (void)err;
  *out = total;
  return TM_OK;
}

static const tm_engine_vtable k_vtable = {
    TM_ENGINE_VTABLE_VERSION,
    TM_ENGINE_CAYENNE,
    1u << TM_ENGINE_FILE,
    cay_open,
    cay_drop,
    cay_close,
    tm_cengine_begin,
    tm_cengine_write,
    tm_cengine_delete_where,
    tm_cengine_delete_before,
    tm_cengine_commit,
    tm_cengine_abort,
    tm_cengine_read_state,
    tm_cengine_snapshot,
    tm_cengine_snapshot_free,
    tm_cengine_row_count,
    tm_cengine_snapshot_state,
    tm_cengine_bounds,
    tm_cengine_scan,
    tm_cengine_scan_next,
    tm_cengine_scan_free,
    cay_size,
    tm_cengine_compact,
};

const tm_engine_vtable *tm_engine__cayenne_vtable(void) { return &k_vtable; }
