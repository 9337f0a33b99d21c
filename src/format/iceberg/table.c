/*
 * table.c - opening Iceberg tables: finding the current metadata file,
 * location remapping and opening the files metadata names (format layer).
 * See iceberg.h.
 *
 * Finding metadata follows what writers really produce (see the test data's
 * traps): version-hint.text holding a number or a file name, an empty hint,
 * gzip metadata (vN.gz.metadata.json), and catalogs that write
 * NNNNN-<uuid>.metadata.json without any hint.
 */
#include <ctype.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"
#include "util/hash.h"

#define HINT_LIMIT 4096

struct tm_iceberg_table {
  tm_iceberg_metadata *meta; /* owned */
  tm_iceberg_io *io;         /* not owned */
  char *metadata_path;       /* owned, NULL for JSON given directly */
  char *root;                /* owned: where the location really is, or NULL */
  char *from_norm;           /* owned: normalised location prefix, or NULL */
  size_t json_len;           /* the metadata JSON's length and hash: tm_iceberg_table_unchanged */
  uint64_t json_hash;
};

/* ---- io helpers ------------------------------------------------------------ */

static int io_open(tm_iceberg_io *io, const char *path, tm_input **out, tm_error *err) {
  int rc = io->open(io->payload, path, out, err);
  if (rc == TM_OK) io->files_opened++;
  return rc;
}

int tm_iceberg__read_all(tm_iceberg_io *io, const char *path, size_t limit, char **out,
                         size_t *len_out, tm_error *err) {
  tm_input *in = NULL;
  char *data = NULL;
  uint64_t size = 0;
  int rc;
  TM_CHECK(io_open(io, path, &in, err));
  TM_CHECK(tm_input_size(in, &size, err));
  if (size > limit) {
    rc = tm_error_set(err, TM_ETOOLARGE, "%s: %llu bytes exceeds the %zu-byte limit", path,
                      (unsigned long long)size, limit);
    goto done;
  }
  data = tm_malloc((size_t)size + 1);
  if (!data) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (size) TM_CHECK(tm_input_read_exact(in, 0, data, (size_t)size, err));
  data[size] = '\0';
  io->bytes_read += size;
  *out = data;
  *len_out = (size_t)size;
  data = NULL;
done:
  tm_free(data);
  tm_input_close(in);
  return rc;
}

/* ---- paths ------------------------------------------------------------------ */

tm_strview tm_iceberg_path_normalize(const char *path, char *out, size_t cap) {
  const char *p = path;
  /* scheme: [A-Za-z][A-Za-z0-9+.-]* ':' */
  if (isalpha((unsigned char)p[0])) {
    const char *q = p + 1;
    while (isalnum((unsigned char)*q) || *q == '+' || *q == '.' || *q == '-') q++;
    if (*q == ':' && q - p > 1) {
      if (q[1] == '/' && q[2] == '/') {
        const char *slash = strchr(q + 3, '/');
        p = slash ? slash : q + strlen(q);
      } else {
        p = q + 1;
      }
    }
  }
  size_t n = 0;
  bool at_start = true;
  while (*p && n + 1 < cap) {
    if (p[0] == '/' && n > 0 && out[n - 1] == '/') {
      p++;
      continue;
    }
    /* "./" at the start or after a slash */
    if (p[0] == '.' && (p[1] == '/' || p[1] == '\0') && (at_start || (n > 0 && out[n - 1] == '/'))) {
      p += p[1] ? 2 : 1;
      continue;
    }
    at_start = false;
    out[n++] = *p++;
  }
  while (n > 1 && out[n - 1] == '/') n--;
  if (n + 1 <= cap) out[n] = '\0';
  return tm_sv(out, n);
}

/* Whether rest (after a prefix) contains a ".." segment. */
static bool has_dotdot(const char *rest) {
  const char *p = rest;
  while ((p = strstr(p, "..")) != NULL) {
    bool start = p == rest || p[-1] == '/';
    bool end = p[2] == '\0' || p[2] == '/';
    if (start && end) return true;
    p += 2;
  }
  return false;
}

/* If norm(path) is inside the location, returns the offset of the rest in
 * the normalised buffer (pointing at '/' or the end); else -1. */
static ssize_t rel_offset(const tm_iceberg_table *t, tm_strview np) {
  if (!t->from_norm) return -1;
  size_t fl = strlen(t->from_norm);
  if (np.len < fl || memcmp(np.ptr, t->from_norm, fl) != 0) return -1;
  if (np.len > fl && np.ptr[fl] != '/' && !(fl == 1 && t->from_norm[0] == '/')) return -1;
  return (ssize_t)fl;
}

int tm_iceberg_table_resolve(const tm_iceberg_table *t, const char *path, char **out,
                             tm_error *err) {
  size_t cap = strlen(path) + 2;
  char *buf = tm_malloc(cap);
  if (!buf) return tm_error_nomem(err);
  tm_strview np = tm_iceberg_path_normalize(path, buf, cap);
  ssize_t off = rel_offset(t, np);
  char *res = NULL;
  if (off >= 0 && t->root) {
    const char *rest = np.ptr + off;
    if (has_dotdot(rest)) {
      tm_free(buf);
      return TM_CORRUPT(err, "path %s leaves the table location", path);
    }
    while (*rest == '/') rest++;
    res = *rest ? tm_path_join(t->root, rest) : tm_strdup(t->root);
  } else if (tm_str_has_prefix(path, "file:")) {
    res = tm_strdup(np.ptr[0] ? np.ptr : "/");
  } else {
    res = tm_strdup(path);
  }
  tm_free(buf);
  if (!res) return tm_error_nomem(err);
  *out = res;
  return TM_OK;
}

int tm_iceberg_table_path_key(const tm_iceberg_table *t, const char *path, char **out,
                              tm_error *err) {
  size_t cap = strlen(path) + 2;
  char *buf = tm_malloc(cap);
  if (!buf) return tm_error_nomem(err);
  tm_strview np = tm_iceberg_path_normalize(path, buf, cap);
  ssize_t off = rel_offset(t, np);
  const char *rest = off >= 0 ? np.ptr + off : np.ptr;
  while (off >= 0 && *rest == '/') rest++;
  char *res = tm_strdup(rest);
  tm_free(buf);
  if (!res) return tm_error_nomem(err);
  *out = res;
  return TM_OK;
}

int tm_iceberg_table_open_file(const tm_iceberg_table *t, const char *path, tm_input **out,
                               tm_error *err) {
  char *real = NULL;
  TM_TRY(tm_iceberg_table_resolve(t, path, &real, err));
  int rc = io_open(t->io, real, out, err);
  if (rc < 0 && err && !strstr(err->message, real)) tm_error_prefix(err, "%s", real);
  tm_free(real);
  return rc;
}

int tm_iceberg__open_avro(const tm_iceberg_table *t, const char *path, tm_input **in_out,
                          tm_avro_reader **r_out, tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(tm_iceberg_table_open_file(t, path, &in, err));
  int rc = tm_avro_reader_open(r_out, in, NULL, err);
  if (rc < 0) {
    tm_input_close(in);
    return rc;
  }
  *in_out = in;
  return TM_OK;
}

/* ---- locating metadata ------------------------------------------------------ */

typedef struct scan_names {
  int64_t best_v;      /* highest N of vN[.gz].metadata.json */
  char *best_v_name;   /* owned */
  int64_t best_seq;    /* highest NNNNN of NNNNN-*.metadata.json */
  char *best_seq_name; /* owned */
  bool oom;
} scan_names;

static bool is_metadata_name(const char *name) {
  return tm_str_has_suffix(name, ".metadata.json") || tm_str_has_suffix(name, ".metadata.json.gz");
}

static int on_name(void *ctx, const char *name) {
  scan_names *s = ctx;
  if (!is_metadata_name(name)) return 0;
  size_t len = strlen(name);
  if (name[0] == 'v') {
    size_t i = 1;
    while (i < len && isdigit((unsigned char)name[i])) i++;
    const char *rest = name + i;
    int64_t n;
    if (i > 1 && i < 19 &&
        (strcmp(rest, ".metadata.json") == 0 || strcmp(rest, ".gz.metadata.json") == 0 ||
         strcmp(rest, ".metadata.json.gz") == 0) &&
        tm_parse_int64(name + 1, i - 1, &n) == TM_OK && n > s->best_v) {
      char *copy = tm_strdup(name);
      if (!copy) {
        s->oom = true;
        return 1;
      }
      tm_free(s->best_v_name);
      s->best_v_name = copy;
      s->best_v = n;
    }
    return 0;
  }
  size_t i = 0;
  while (i < len && isdigit((unsigned char)name[i])) i++;
  int64_t n;
  if (i > 0 && i < 19 && name[i] == '-' && tm_parse_int64(name, i, &n) == TM_OK &&
      n > s->best_seq) {
    char *copy = tm_strdup(name);
    if (!copy) {
      s->oom = true;
      return 1;
    }
    tm_free(s->best_seq_name);
    s->best_seq_name = copy;
    s->best_seq = n;
  }
  return 0;
}

/*
 * Reads metadata/<name>: TM_OK with *path_out (tm_free) and the bytes,
 * TM_ENOTFOUND when it does not exist, or the read's error.
 */
static int read_metadata_named(tm_iceberg_io *io, const char *mdir, const char *name,
                               char **path_out, char **data_out, size_t *len_out, tm_error *err) {
  char *cand = tm_path_join(mdir, name);
  if (!cand) return tm_error_nomem(err);
  int rc = tm_iceberg__read_all(io, cand, TM_ICEBERG__MAX_METADATA_BYTES, data_out, len_out, err);
  if (rc == TM_OK) *path_out = cand;
  else tm_free(cand);
  return rc;
}

/*
 * Finds and reads the current metadata file of a table root. On success
 * *path_out (tm_free) names it and *data_out/len_out hold its bytes.
 */
static int find_metadata(tm_iceberg_io *io, const char *root, char **path_out, char **data_out,
                         size_t *len_out, tm_error *err) {
  char *mdir = tm_path_join(root, "metadata");
  char *hint_path = mdir ? tm_path_join(mdir, "version-hint.text") : NULL;
  char *hint = NULL;
  size_t hint_len = 0;
  scan_names names = {-1, NULL, -1, NULL, false};
  int rc;
  if (!hint_path) {
    rc = tm_error_nomem(err);
    goto done;
  }
  rc = tm_iceberg__read_all(io, hint_path, HINT_LIMIT, &hint, &hint_len, err);
  if (rc == TM_OK) {
    tm_strview h = tm_sv_trim(tm_sv(hint, hint_len));
    int64_t n;
    const char *forms[3] = {"v%lld.metadata.json", "v%lld.gz.metadata.json",
                            "v%lld.metadata.json.gz"};
    if (h.len > 0 && tm_parse_int64(h.ptr, h.len, &n) == TM_OK && n >= 0) {
      for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, forms[i], (long long)n);
        rc = read_metadata_named(io, mdir, name, path_out, data_out, len_out, err);
        if (rc != TM_ENOTFOUND) goto done;
      }
    } else if (h.len > 0 && h.len < 256 && !memchr(h.ptr, '/', h.len)) {
      char name[256];
      memcpy(name, h.ptr, h.len);
      name[h.len] = '\0';
      if (is_metadata_name(name)) {
        rc = read_metadata_named(io, mdir, name, path_out, data_out, len_out, err);
        if (rc != TM_ENOTFOUND) goto done;
      }
    }
    /* An empty or stale hint: fall back to listing. */
  } else if (rc != TM_ENOTFOUND) {
    goto done;
  }
  if (!io->list) {
    rc = tm_error_set(err, TM_ENOTFOUND,
                      "%s: no usable metadata/version-hint.text and the store cannot list "
                      "metadata/",
                      root);
    goto done;
  }
  rc = io->list(io->payload, mdir, on_name, &names, err);
  if (rc == TM_ENOTFOUND) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: not an Iceberg table (no metadata folder)", root);
    goto done;
  }
  if (rc < 0) goto done;
  if (names.oom) {
    rc = tm_error_nomem(err);
    goto done;
  }
  const char *best = names.best_v_name ? names.best_v_name : names.best_seq_name;
  if (!best) {
    rc = tm_error_set(err, TM_ENOTFOUND, "%s: no *.metadata.json file in metadata/", root);
    goto done;
  }
  rc = read_metadata_named(io, mdir, best, path_out, data_out, len_out, err);
done:
  tm_free(mdir);
  tm_free(hint_path);
  tm_free(hint);
  tm_free(names.best_v_name);
  tm_free(names.best_seq_name);
  return rc;
}

int tm_iceberg_locate_metadata(const tm_iceberg_io *io, const char *table_root, char **out,
                               tm_error *err) {
  char *data = NULL;
  size_t len = 0;
  /* The counters are informational; locating through a const io does not count. */
  tm_iceberg_io copy = *io;
  int rc = find_metadata(&copy, table_root, out, &data, &len, err);
  tm_free(data);
  return rc;
}

/* ---- tables -------------------------------------------------------------------- */

static char *dirname_of(const char *path) { return tm_path_dirname(path); }

static int setup_remap(tm_iceberg_table *t, const tm_iceberg_open_options *opts,
                       const char *root, tm_error *err) {
  const char *from = opts && opts->location_from ? opts->location_from : t->meta->location;
  const char *to = opts && opts->location_to ? opts->location_to : root;
  if (from && *from) {
    size_t cap = strlen(from) + 2;
    t->from_norm = tm_malloc(cap);
    if (!t->from_norm) return tm_error_nomem(err);
    tm_iceberg_path_normalize(from, t->from_norm, cap);
  }
  if (to) {
    t->root = tm_strdup(to);
    if (!t->root) return tm_error_nomem(err);
    size_t n = strlen(t->root);
    while (n > 1 && t->root[n - 1] == '/') t->root[--n] = '\0';
  }
  return TM_OK;
}

/* The table root implied by a metadata file path: the parent of its
 * "metadata" folder, or NULL. */
static char *root_of_metadata_file(const char *path) {
  char *dir = dirname_of(path);
  if (!dir) return NULL;
  const char *base = strrchr(dir, '/');
  base = base ? base + 1 : dir;
  char *root = NULL;
  if (strcmp(base, "metadata") == 0) root = dirname_of(dir);
  tm_free(dir);
  return root;
}

static bool same_json(const tm_iceberg_table *prev, const char *path, const char *json,
                      size_t len) {
  if (!prev || !prev->metadata_path || !path || strcmp(prev->metadata_path, path) != 0)
    return false;
  return prev->json_len == len && prev->json_hash == tm_hash64(json, len, 0);
}

int tm_iceberg_table_open(tm_iceberg_table **out, tm_iceberg_io *io,
                          const tm_iceberg_open_options *opts, tm_error *err) {
  return tm_iceberg_table_reopen(out, NULL, io, opts, err);
}

int tm_iceberg_table_reopen(tm_iceberg_table **out, const tm_iceberg_table *prev,
                            tm_iceberg_io *io, const tm_iceberg_open_options *opts,
                            tm_error *err) {
  *out = NULL;
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  char *path = NULL, *data = NULL, *root = NULL;
  size_t len = 0;
  tm_iceberg_table *t = NULL;
  int rc;
  if (!opts || (!opts->metadata_location && !opts->table_root)) {
    return tm_error_set(err, TM_EINVALID, "an Iceberg table needs a folder or a metadata file");
  }
  if (opts->metadata_location) {
    path = tm_strdup(opts->metadata_location);
    if (!path) return tm_error_nomem(err);
    TM_CHECK(tm_iceberg__read_all(io, path, TM_ICEBERG__MAX_METADATA_BYTES, &data, &len, err));
    root = opts->table_root ? tm_strdup(opts->table_root) : root_of_metadata_file(path);
  } else {
    TM_CHECK(find_metadata(io, opts->table_root, &path, &data, &len, err));
    root = tm_strdup(opts->table_root);
    if (!root) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  if (same_json(prev, path, data, len)) { /* unchanged: nothing to parse */
    rc = TM_OK;
    goto done;
  }
  t = tm_calloc(1, sizeof *t);
  if (!t) {
    rc = tm_error_nomem(err);
    goto done;
  }
  t->io = io;
  t->json_len = len;
  t->json_hash = tm_hash64(data, len, 0);
  TM_CHECK(tm_iceberg_metadata_parse(&t->meta, data, len, path, err));
  TM_CHECK(setup_remap(t, opts, root, err));
  t->metadata_path = path;
  path = NULL;
  *out = t;
  t = NULL;
done:
  tm_iceberg_table_free(t);
  tm_free(path);
  tm_free(data);
  tm_free(root);
  return rc;
}

bool tm_iceberg_table_unchanged(const tm_iceberg_table *prev, const char *json, size_t len,
                                const char *metadata_location) {
  return same_json(prev, metadata_location, json, len);
}

int tm_iceberg_table_from_json(tm_iceberg_table **out, tm_iceberg_io *io, const char *json,
                               size_t len, const char *metadata_location,
                               const tm_iceberg_open_options *opts, tm_error *err) {
  tm_iceberg_table *t = tm_calloc(1, sizeof *t);
  if (!t) return tm_error_nomem(err);
  int rc;
  t->io = io;
  t->json_len = len;
  t->json_hash = tm_hash64(json, len, 0);
  TM_CHECK(tm_iceberg_metadata_parse(&t->meta, json, len,
                                     metadata_location ? metadata_location : "table metadata",
                                     err));
  if (metadata_location) {
    t->metadata_path = tm_strdup(metadata_location);
    if (!t->metadata_path) {
      rc = tm_error_nomem(err);
      goto done;
    }
  }
  TM_CHECK(setup_remap(t, opts, opts ? opts->table_root : NULL, err));
  *out = t;
  return TM_OK;
done:
  tm_iceberg_table_free(t);
  return rc;
}

void tm_iceberg_table_free(tm_iceberg_table *t) {
  if (!t) return;
  tm_iceberg_metadata_free(t->meta);
  tm_free(t->metadata_path);
  tm_free(t->root);
  tm_free(t->from_norm);
  tm_free(t);
}

const tm_iceberg_metadata *tm_iceberg_table_metadata(const tm_iceberg_table *t) {
  return t->meta;
}
const char *tm_iceberg_table_metadata_path(const tm_iceberg_table *t) {
  return t->metadata_path;
}
tm_iceberg_io *tm_iceberg_table_io(const tm_iceberg_table *t) { return t->io; }
const char *tm_iceberg_table_root(const tm_iceberg_table *t) { return t->root; }
