/*
 * noop.c - the no-op stamp of `tidemark refresh` (util layer). See noop.h.
 *
 * Shared by the front program and tidemark-core, so it needs nothing but
 * libc and the util layer's hash and allocator. The stamp is text:
 *
 *   tidemark-noop 1
 *   key <16 hex digits>
 *   tree <16 hex digits> <absolute path>
 *   line <summary line without its duration>
 *   end <16 hex digits: the hash of every byte before this line>
 *
 * It is read as hostile input: at most TM_NOOP_MAX_STAMP_BYTES, every line
 * checked, and any surprise means "no stamp".
 */
/* environ: _GNU_SOURCE comes from the build (CMakeLists.txt) */
#include "util/noop.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/hash.h"

extern char **environ;

#define STAMP_MAGIC "tidemark-noop 1\n"
#define MAX_DEPTH 16

int64_t tm_noop_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t hash_str(uint64_t h, const char *s) { return tm_hash64(s, strlen(s) + 1, h); }

/* What identifies a file's content without reading it. */
static uint64_t hash_stat(uint64_t h, const struct stat *st) {
  int64_t v[] = {(int64_t)st->st_mode,         (int64_t)st->st_dev,          (int64_t)st->st_ino,
                 (int64_t)st->st_size,         (int64_t)st->st_mtim.tv_sec,  st->st_mtim.tv_nsec,
                 (int64_t)st->st_ctim.tv_sec,  st->st_ctim.tv_nsec};
  return tm_hash64(v, sizeof v, h);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct walk {
  uint64_t h;
  size_t entries;
} walk;

static bool walk_path(walk *w, const char *path, int depth, bool root);

/* The entries of folder path, sorted, each hashed by name and content. */
static bool walk_dir(walk *w, const char *path, int depth) {
  DIR *d = opendir(path);
  if (!d) return false;
  char **names = NULL;
  size_t n = 0, cap = 0;
  bool ok = true;
  const char *base = strrchr(path, '/');
  bool skip = strcmp(base ? base + 1 : path, ".tidemark") == 0; /* the stamp's own folder */
  struct dirent *e;
  while (ok && (e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (skip && (!strcmp(e->d_name, TM_NOOP_STAMP_NAME) || !strcmp(e->d_name, TM_NOOP_STAMP_TMP)))
      continue;
    if (++w->entries > TM_NOOP_MAX_ENTRIES) {
      ok = false;
      break;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      char **grown = tm_reallocarray(names, ncap, sizeof *names);
      if (!grown) {
        ok = false;
        break;
      }
      names = grown;
      cap = ncap;
    }
    names[n] = tm_strdup(e->d_name);
    if (!names[n]) ok = false;
    else n++;
  }
  closedir(d);
  if (ok && n > 1) qsort(names, n, sizeof *names, cmp_names);
  char child[PATH_MAX];
  for (size_t i = 0; ok && i < n; i++) {
    int k = snprintf(child, sizeof child, "%s/%s", path, names[i]);
    if (k < 0 || (size_t)k >= sizeof child) ok = false;
    else {
      w->h = hash_str(w->h, names[i]);
      ok = walk_path(w, child, depth + 1, false);
    }
  }
  for (size_t i = 0; i < n; i++) tm_free(names[i]);
  tm_free(names);
  return ok;
}

static bool walk_path(walk *w, const char *path, int depth, bool root) {
  if (depth > MAX_DEPTH) return false;
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno != ENOENT) return false;
    w->h = hash_str(w->h, "(missing)"); /* also a dangling symbolic link */
    return true;
  }
  /* A folder's own times change when a stamp is renamed into it; its entries say the rest. */
  if (!(root && S_ISDIR(st.st_mode))) w->h = hash_stat(w->h, &st);
  else w->h = hash_str(w->h, "(folder)");
  return S_ISDIR(st.st_mode) ? walk_dir(w, path, depth) : true;
}

bool tm_noop_tree(const char *path, uint64_t *hash_out) {
  walk w = {UINT64_C(0x74696465), 0};
  if (!walk_path(&w, path, 0, true)) return false;
  *hash_out = w.h;
  return true;
}

bool tm_noop_volatile_env(const char *entry) {
  static const char *const names[] = {"_=", "SHLVL=", "OLDPWD="};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strncmp(entry, names[i], strlen(names[i]))) return true;
  return false;
}

bool tm_noop_key(int argc, char *const *argv, const char *core_path, uint64_t *key_out) {
  uint64_t h = UINT64_C(0x6e6f6f70);
  for (int i = 1; i < argc; i++) h = hash_str(h, argv[i]);
  h = hash_str(h, "(cwd)");
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return false;
  h = hash_str(h, cwd);
  size_t n = 0;
  while (environ && environ[n]) n++;
  char **env = tm_calloc(n ? n : 1, sizeof *env);
  if (!env) return false;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (!tm_noop_volatile_env(environ[i])) env[kept++] = environ[i];
  n = kept;
  if (n > 1) qsort(env, n, sizeof *env, cmp_names);
  h = hash_str(h, "(env)");
  for (size_t i = 0; i < n; i++) h = hash_str(h, env[i]);
  tm_free(env);
  struct stat st;
  if (stat(core_path, &st) != 0) return false;
  *key_out = hash_stat(hash_str(h, "(core)"), &st);
  return true;
}

bool tm_noop_write(const char *stamp_path, uint64_t key, const char *const *paths,
                   const uint64_t *tree_hashes, size_t n_paths, const char *const *lines,
                   size_t n_lines) {
  size_t cap = TM_NOOP_MAX_STAMP_BYTES, len = 0;
  char *text = tm_malloc(cap);
  if (!text) return false;
  bool ok = true;
#define PUT(...)                                                        \
  do {                                                                  \
    int k_ = ok ? snprintf(text + len, cap - len, __VA_ARGS__) : -1;    \
    if (k_ < 0 || (size_t)k_ >= cap - len) ok = false;                  \
    else len += (size_t)k_;                                             \
  } while (0)
  PUT("%s", STAMP_MAGIC);
  PUT("key %016" PRIx64 "\n", key);
  for (size_t i = 0; i < n_paths; i++) {
    if (strchr(paths[i], '\n')) ok = false;
    PUT("tree %016" PRIx64 " %s\n", tree_hashes[i], paths[i]);
  }
  for (size_t i = 0; i < n_lines; i++) {
    if (strchr(lines[i], '\n')) ok = false;
    PUT("line %s\n", lines[i]);
  }
  uint64_t sum = tm_hash64(text, len, 0);
  PUT("end %016" PRIx64 "\n", sum);
#undef PUT
  char tmp[PATH_MAX];
  int k = snprintf(tmp, sizeof tmp, "%s.tmp", stamp_path);
  if (k < 0 || (size_t)k >= sizeof tmp) ok = false;
  if (ok) {
    FILE *f = fopen(tmp, "wb");
    ok = f != NULL;
    if (ok && fwrite(text, 1, len, f) != len) ok = false;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, stamp_path) != 0) ok = false;
    if (!ok) unlink(tmp);
  }
  tm_free(text);
  return ok;
}

/*
 * Whether the line [p, nl) starts with word. The text is not NUL-terminated
 * (a stamp as read, a fuzz input), so never strncmp past the line: found by
 * fuzz_noop_stamp (fuzz/corpora/fuzz_noop_stamp/regress-strncmp-past-end).
 */
static bool starts(const char *p, const char *nl, const char *word) {
  size_t n = strlen(word);
  return (size_t)(nl - p) >= n && memcmp(p, word, n) == 0;
}

/* Parses 16 hex digits ending at end; false otherwise. */
static bool parse_hex(const char *s, const char *end, uint64_t *out) {
  if (end - s != 16) return false;
  uint64_t v = 0;
  for (const char *p = s; p < end; p++) {
    int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return true;
}

/* A "tree <hash> /path" line [p, nl): its hash and where its path starts. */
static bool parse_tree(const char *p, const char *nl, uint64_t *hash, const char **path) {
  if (nl - p <= 22 || p[21] != ' ' || p[22] != '/' || !parse_hex(p + 5, p + 21, hash)) return false;
  *path = p + 22;
  return true;
}

bool tm_noop_parse(const char *text, size_t len, tm_noop_info *out) {
  memset(out, 0, sizeof *out);
  size_t magic = strlen(STAMP_MAGIC);
  if (len < magic || len > TM_NOOP_MAX_STAMP_BYTES || memcmp(text, STAMP_MAGIC, magic) != 0 ||
      text[len - 1] != '\n' || memchr(text, '\0', len) != NULL)
    return false;
  /* The last line, "end <sum>", sums every byte before it. */
  const char *last = text + len - 1; /* its '\n' */
  while (last > text && last[-1] != '\n') last--;
  if (last < text + magic || !starts(last, text + len - 1, "end ")) return false;
  uint64_t sum;
  if (!parse_hex(last + 4, text + len - 1, &sum) || sum != tm_hash64(text, (size_t)(last - text), 0))
    return false;
  bool have_key = false;
  for (const char *p = text + magic; p < last;) {
    const char *nl = memchr(p, '\n', (size_t)(last - p));
    if (!nl) return false;
    uint64_t h;
    const char *path;
    if (starts(p, nl, "key ")) {
      if (have_key || !parse_hex(p + 4, nl, &out->key)) return false;
      have_key = true;
    } else if (starts(p, nl, "tree ")) {
      if (!parse_tree(p, nl, &h, &path)) return false;
      out->n_trees++;
    } else if (starts(p, nl, "line ")) {
      out->n_lines++;
    } else {
      return false;
    }
    p = nl + 1;
  }
  out->body_end = (size_t)(last - text);
  return have_key && out->n_lines > 0;
}

bool tm_noop_replay(const char *stamp_path, uint64_t key, int64_t start_ns, FILE *out) {
  FILE *f = fopen(stamp_path, "rb");
  if (!f) return false;
  char *text = tm_malloc(TM_NOOP_MAX_STAMP_BYTES + 1);
  size_t len = text ? fread(text, 1, TM_NOOP_MAX_STAMP_BYTES + 1, f) : 0;
  fclose(f);
  tm_noop_info info;
  bool ok = text && tm_noop_parse(text, len, &info) && info.key == key;
  /* Well formed (parsed above): every tree as it is now must hash as it did. */
  char path[PATH_MAX];
  const char *body = ok ? text + strlen(STAMP_MAGIC) : NULL;
  const char *end = ok ? text + info.body_end : NULL;
  for (const char *p = body; ok && p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    uint64_t want, now;
    const char *at;
    if (starts(p, nl, "tree ")) {
      ok = parse_tree(p, nl, &want, &at) && (size_t)(nl - at) < sizeof path;
      if (ok) {
        memcpy(path, at, (size_t)(nl - at));
        path[nl - at] = '\0';
        ok = tm_noop_tree(path, &now) && now == want;
      }
    }
    p = nl + 1;
  }
  if (ok) {
    double secs = (double)(tm_noop_now_ns() - start_ns) / 1e9;
    for (const char *p = body; p < end;) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      if (starts(p, nl, "line ")) fprintf(out, "%.*s in %.2f s\n", (int)(nl - p - 5), p + 5, secs);
      p = nl + 1;
    }
    fflush(out);
  }
  tm_free(text);
  return ok;
}
