/*
 * replay_main.c - replays a fuzz target's corpus without libFuzzer, so that
 * `make check` runs every saved input under the sanitizers (libgit2's
 * standalone fuzzer driver).
 *
 * Usage: replay_<target> CORPUS_DIR_OR_FILE...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1); /* lint-ok: standalone driver */
  if (!buf) {
    fclose(f);
    return 1;
  }
  size_t got = fread(buf, 1, (size_t)n, f);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, got);
  free(buf); /* lint-ok */
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: no such corpus\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      failed += run_file(argv[i]);
      files++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      failed += run_file(path);
      files++;
    }
    if (d) closedir(d);
  }
  fprintf(stderr, "replay: %d inputs, %d unreadable\n", files, failed);
  return files == 0 || failed ? 1 : 0;
}
