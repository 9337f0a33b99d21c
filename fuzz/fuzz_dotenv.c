/*
 * fuzz_dotenv.c - libFuzzer target for the dotenv files of Spice's env
 * secret store (runtime/config/secrets.c; issue 17). The input is the text
 * of a .env file; a config whose params refer to secrets through every
 * reference form is loaded from a folder holding it. The load must succeed
 * or fail with a message, never crash, leak or hang; a load pins both
 * dotenv files (.env.local, missing, and .env) for the no-op stamp.
 *
 * Seed corpus (fuzz/corpora/fuzz_dotenv/): hand-written dotenv files (bare,
 * quoted, exported, commented and malformed lines, CRLF, long keys).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64];

static void broken(const char *what) {
  fprintf(stderr, "fuzz_dotenv: %s\n", what);
  abort();
}

static const char k_pod[] =
    "datasets:\n"
    "  - from: file:a\n"
    "    name: x\n"
    "    acceleration:\n"
    "      params: {a: '${secrets:A}', b: '${env:b_key}', c: '${ secrets:FUZZ.KEY }', d: 'x'}\n";

/* Leaves no folder behind. */
static void cleanup(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/.env", g_dir);
  unlink(path);
  rmdir(g_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_dir[0]) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tm-fuzz-dotenv-XXXXXX");
    if (!mkdtemp(g_dir)) broken("cannot make a folder");
    atexit(cleanup);
  }
  char path[128];
  snprintf(path, sizeof path, "%s/.env", g_dir);
  FILE *f = fopen(path, "wb");
  if (!f) broken("cannot write .env");
  if (size && fwrite(data, 1, size, f) != size) broken("short write");
  fclose(f);
  tm_config cfg;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_config_load_text(&cfg, k_pod, sizeof k_pod - 1, "fuzz.yaml", g_dir, &err);
  if (rc == TM_OK) {
    if (cfg.n_datasets != 1) broken("one dataset expected");
    if (cfg.n_secret_files != 2) broken("both dotenv files are pinned");
  } else if (!err.message[0]) {
    broken("a load error without a message");
  }
  tm_config_dispose(&cfg);
  return 0;
}
