/*
 * backup.c - cayenne's consistent copy and restore, for acceleration
 * snapshots (engine layer, cayenne backend; SPEC C2). engine/backup.h is the
 * interface; this file is what it calls for cayenne.
 *
 * Copy: a pinned snapshot names the segments of one committed state, and
 * holds them mapped. Segment files are immutable, and a segment a commit
 * retires is unlinked but stays mapped while a snapshot holds it, so the
 * copy takes every segment's bytes from its mapping (never from a path that
 * a compaction may have removed meanwhile) and writes a MANIFEST encoded
 * from the same snapshot. The result is one tar file:
 *
 *   seg-<id:016x>.tmc ...   the segments, as written
 *   MANIFEST                 the pinned state, last
 *
 * Restore: the tar is read strictly (format/tar), only entries named
 * MANIFEST or seg-<16 hex>.tmc are accepted, exactly one MANIFEST; they are
 * extracted into a temporary folder beside the acceleration's path, which is
 * opened once with every segment checksum verified (and the dataset's
 * options, so a snapshot of another configuration is refused), then renamed
 * into place.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/cayenne/cayenne_int.h"
#include "format/tar/tar.h"
#include "io/io.h"
#include "util/alloc.h"
#include "util/time.h"

#define COPY_CHUNK ((size_t)1 << 20)

int tm_engine__cayenne_backup(tm_engine *e, const char *dest_path, tm_error *err) {
  tm_engine_snapshot *sb = NULL;
  TM_TRY(tm_engine_snapshot_acquire(e, &sb, err));
  const tm_csnap *s = (const tm_csnap *)sb;
  tm_buf schema_text = TM_BUF_INIT(1 << 24), options_text = TM_BUF_INIT(1 << 24);
  tm_buf manifest = TM_BUF_INIT(TM_CAY_MANIFEST_MAX);
  tm_tar_writer w;
  memset(&w, 0, sizeof w);
  int64_t now = tm_now_ms() / 1000;
  uint64_t next_id = 1;
  for (size_t i = 0; i < s->n_segs; i++)
    if (s->segs[i].seg->id >= next_id) next_id = s->segs[i].seg->id + 1;
  int rc = tm_engine__schema_encode(&e->schema, &schema_text, err);
  if (rc == TM_OK) rc = tm_engine__options_fingerprint(e, &options_text, err);
  if (rc == TM_OK)
    rc = tm_cay_manifest_encode(&manifest, s, tm_buf_cstr(&schema_text), tm_buf_cstr(&options_text),
                                next_id, err);
  if (rc == TM_OK) rc = tm_tar_writer_begin(&w, dest_path, err);
  for (size_t i = 0; rc == TM_OK && i < s->n_segs; i++) {
    const tm_cseg *seg = s->segs[i].seg;
    if (!seg->map || seg->map_len < seg->file_size) {
      rc = tm_error_set(err, TM_ERROR, "dataset %s: segment %llu is not mapped", e->cfg.dataset,
                        (unsigned long long)seg->id);
      break;
    }
    char name[32];
    snprintf(name, sizeof name, "seg-%016llx.tmc", (unsigned long long)seg->id);
    rc = tm_tar_writer_add(&w, name, seg->map, seg->file_size, now, err);
  }
  if (rc == TM_OK) rc = tm_tar_writer_add(&w, TM_CAY_MANIFEST, manifest.ptr, manifest.len, now, err);
  if (rc == TM_OK) rc = tm_tar_writer_commit(&w, err);
  else tm_tar_writer_abort(&w);
  tm_buf_dispose(&schema_text);
  tm_buf_dispose(&options_text);
  tm_buf_dispose(&manifest);
  tm_engine_snapshot_release(sb);
  return rc;
}

typedef struct extract {
  const char *dir;
  int n_manifest;
  char *buf;       /* COPY_CHUNK bytes */
} extract;

static bool segment_name(const char *n) {
  if (strlen(n) != 4 + 16 + 4 || strncmp(n, "seg-", 4) != 0 || strcmp(n + 20, ".tmc") != 0)
    return false;
  for (int i = 4; i < 20; i++)
    if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f'))) return false;
  return true;
}

static int on_entry(const tm_tar_entry *e, tm_input *in, void *payload, tm_error *err) {
  extract *x = payload;
  bool manifest = strcmp(e->name, TM_CAY_MANIFEST) == 0;
  if (!manifest && !segment_name(e->name))
    return TM_CORRUPT(err, "%s: unexpected entry '%s' in a cayenne snapshot", tm_input_name(in),
                      e->name);
  if (manifest && ++x->n_manifest > 1)
    return TM_CORRUPT(err, "%s: two MANIFEST entries", tm_input_name(in));
  char *path = tm_path_join(x->dir, e->name);
  if (!path) return tm_error_nomem(err);
  if (tm_path_exists(path)) {
    tm_free(path);
    return TM_CORRUPT(err, "%s: entry '%s' appears twice", tm_input_name(in), e->name);
  }
  tm_atomic_file f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  int rc = tm_atomic_file_begin(&f, path, err);
  for (uint64_t done = 0; rc == TM_OK && done < e->size;) {
    size_t n = e->size - done < COPY_CHUNK ? (size_t)(e->size - done) : COPY_CHUNK;
    rc = tm_input_read_exact(in, e->offset + done, x->buf, n, err);
    if (rc == TM_OK) rc = tm_atomic_file_write(&f, x->buf, n, err);
    done += n;
  }
  if (rc == TM_OK) rc = tm_atomic_file_commit(&f, err);
  else tm_atomic_file_abort(&f);
  tm_free(path);
  return rc;
}

int tm_engine__cayenne_restore(const tm_engine_options *opts, const char *backup_path,
                               tm_error *err) {
  char *tmp = tm_asprintf("%s.restore-%d", opts->path, (int)getpid());
  char *parent = tm_path_dirname(opts->path);
  extract x = {tmp, 0, tm_malloc(COPY_CHUNK)};
  tm_input *in = NULL;
  tm_engine *check = NULL;
  int rc = tmp && parent && x.buf ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK && tm_path_exists(tmp)) rc = tm_remove_tree(tmp, err);
  if (rc == TM_OK) rc = tm_mkdir_p(tmp, err);
  if (rc == TM_OK) rc = tm_input_open_file(&in, backup_path, err);
  if (rc == TM_OK) rc = tm_tar_read(in, on_entry, &x, err);
  if (rc == TM_OK && x.n_manifest != 1)
    rc = TM_CORRUPT(err, "%s: a cayenne snapshot without a MANIFEST", backup_path);
  if (rc == TM_OK) rc = tm_fsync_dir(tmp, err);
  if (rc == TM_OK) {
    /* Open once, verifying every checksum and the dataset's options. */
    tm_engine_options o = *opts;
    o.path = tmp;
    o.verify_checksums = true;
    rc = tm_engine_open(&check, TM_ENGINE_CAYENNE, NULL, &o, err);
    tm_engine_release(check);
  }
  if (rc == TM_OK) rc = tm_engine_drop(TM_ENGINE_CAYENNE, opts, err);
  if (rc == TM_OK && rename(tmp, opts->path) != 0)
    rc = tm_error_set(err, TM_EIO, "%s: rename to %s: %s", tmp, opts->path, strerror(errno));
  if (rc == TM_OK) rc = tm_fsync_dir(parent, err);
  tm_input_close(in);
  if (rc != TM_OK && tmp && tm_path_exists(tmp)) {
    tm_error e2;
    int r2 = tm_remove_tree(tmp, &e2); /* best effort: the first error is what matters */
    (void)r2;
  }
  unlink(backup_path);
  tm_free(x.buf);
  tm_free(tmp);
  tm_free(parent);
  return rc;
}
