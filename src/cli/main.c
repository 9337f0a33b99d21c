/*
 * main.c - tidemark-core (cli layer): the process set-up around the command
 * dispatch (dispatch.c). The `tidemark` program users run is front.c, which
 * runs this one.
 */
#include <signal.h>

#include "cli/cli.h"

int main(int argc, char **argv) {
  /* Past RLIMIT_FSIZE a write fails with EFBIG ("File too large") and the refresh
   * fails cleanly, keeping the previous acceleration; the default action of
   * SIGXFSZ would kill the process instead (SPEC D1, D3). */
  signal(SIGXFSZ, SIG_IGN);
  return tm_cli_main(argc, argv);
}
