/*
 * cli_batch.c - many tidemark command lines in one process (test tool).
 *
 * The Parquet differential tests (tests/node/parquet-difftest.mjs) run
 * `tidemark parquet cat` and `parquet schema` on some two hundred files; as
 * one process each, under the sanitizers, the process start and the leak
 * check at exit cost more than the reads (about 0.15 s a run). This tool
 * reads command lines on stdin and runs each through tm_cli_main, the
 * dispatch tidemark-core's main() calls, in this one process.
 *
 * Usage: cli_batch DIR
 *   Each stdin line is one command line, its arguments separated by tabs
 *   (without the program name: "parquet\tcat\tFILE"). Its stdout goes to
 *   DIR/out and its stderr to DIR/err, both truncated first; then the line
 *   "exit CODE" is written to this tool's own stdout. Leaks of every command
 *   are reported by LeakSanitizer when the tool exits (a non-zero status);
 *   a sanitizer error stops the tool, its report in DIR/err.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define MAX_LINE (1 << 16)
#define MAX_ARGS 64

/* Points fd at path, truncated (fd stays the same number). */
static int redirect(int fd, const char *dir, const char *name) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return -1;
  int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f < 0) return -1;
  int rc = dup2(f, fd) < 0 ? -1 : 0;
  close(f);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cli_batch DIR\n");
    return 2;
  }
  const char *dir = argv[1];
  int reply = dup(STDOUT_FILENO), err_saved = dup(STDERR_FILENO);
  if (reply < 0 || err_saved < 0) return 2;
  FILE *replies = fdopen(reply, "w");
  char *line = malloc(MAX_LINE);
  if (!replies || !line) return 2;
  while (fgets(line, MAX_LINE, stdin)) {
    size_t n = strlen(line);
    if (n && line[n - 1] == '\n') line[--n] = '\0';
    char *args[MAX_ARGS + 2];
    int k = 0;
    args[k++] = "tidemark";
    for (char *p = line, *tab; k <= MAX_ARGS; p = tab + 1) {
      args[k++] = p;
      if (!(tab = strchr(p, '\t'))) break;
      *tab = '\0';
    }
    args[k] = NULL;
    fflush(stdout);
    fflush(stderr);
    if (redirect(STDOUT_FILENO, dir, "out") < 0 || redirect(STDERR_FILENO, dir, "err") < 0) {
      fprintf(replies, "error cannot write to %s\n", dir);
      fflush(replies);
      return 2;
    }
    int code = tm_cli_main(k, args);
    fflush(stdout);
    fflush(stderr);
    /* The next command's output must not land in this one's files, nor the
     * leak report at exit in the last one's. */
    if (dup2(err_saved, STDERR_FILENO) < 0 || dup2(reply, STDOUT_FILENO) < 0) return 2;
    fprintf(replies, "exit %d\n", code);
    fflush(replies);
  }
  free(line);
  fclose(replies);
  return 0;
}
