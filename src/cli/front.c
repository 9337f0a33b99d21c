/*
 * front.c - `tidemark`, the front program (cli layer; noop.h says why).
 *
 * It links libc only, so it starts in about a millisecond. For a
 * `tidemark refresh [-c FILE] [DATASET...]` whose no-op stamp still holds,
 * it prints the stamp's summary lines and exits 0. Everything else, and
 * every refresh the stamp does not cover, runs tidemark-core (the runtime,
 * with DuckDB) in this process with the same arguments: beside this
 * program in a build tree, ../libexec/tidemark/ once installed.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/noop.h"

#define CORE_NAME "tidemark-core"

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* tidemark-core: beside this program, or in ../libexec/tidemark/. */
static bool find_core(char *out, size_t cap) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return false;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return false;
  *slash = '\0';
  const char *tails[] = {"/" CORE_NAME, "/../libexec/tidemark/" CORE_NAME};
  for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
    int k = snprintf(out, cap, "%s%s", self, tails[i]);
    if (k > 0 && (size_t)k < cap && access(out, X_OK) == 0) return true;
  }
  return false;
}

/*
 * The stamp path of `refresh` arguments the stamp can cover: -c FILE,
 * --config FILE, --config=FILE and dataset names. false for anything else
 * (--full, --sql, --url, --help, ...): tidemark-core handles those.
 */
static bool stamp_path(int argc, char **argv, char *out, size_t cap) {
  const char *config = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
      if (++i >= argc) return false;
      config = argv[i];
    } else if (!strncmp(a, "--config=", 9)) {
      config = a + 9;
    } else if (a[0] == '-' || a[0] == '\0') {
      return false;
    }
  }
  if (!config) { /* the default names, in tm_config_default_path's order */
    static const char *const names[] = {"tidemark.yaml", "tidemark.yml", "spicepod.yaml",
                                        "spicepod.yml"};
    for (size_t i = 0; !config && i < sizeof names / sizeof names[0]; i++)
      if (is_file(names[i])) config = names[i];
    if (!config) return false;
  }
  const char *slash = strrchr(config, '/');
  int k = slash ? snprintf(out, cap, "%.*s/.tidemark/%s", (int)(slash - config), config,
                           TM_NOOP_STAMP_NAME)
                : snprintf(out, cap, ".tidemark/%s", TM_NOOP_STAMP_NAME);
  return k > 0 && (size_t)k < cap;
}

int main(int argc, char **argv) {
  int64_t start = tm_noop_now_ns();
  char core[PATH_MAX];
  if (!find_core(core, sizeof core)) {
    fprintf(stderr, "tidemark: cannot find %s beside this program or in ../libexec/tidemark/\n",
            CORE_NAME);
    return 1;
  }
  char stamp[PATH_MAX];
  uint64_t key;
  if (argc >= 2 && !strcmp(argv[1], "refresh") && stamp_path(argc, argv, stamp, sizeof stamp) &&
      tm_noop_key(argc, argv, core, &key) && tm_noop_replay(stamp, key, start, stdout))
    return 0;
  execv(core, argv);
  fprintf(stderr, "tidemark: cannot run %s: %s\n", core, strerror(errno));
  return 1;
}
