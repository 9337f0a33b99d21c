/*
 * fuzz_config.c - libFuzzer target for the config loader (runtime/config):
 * libyaml's parser and our strict validation into the typed tm_config
 * (SPEC 1.1, D2). The input is the text of a tidemark.yaml; it must load or
 * fail with a located message, never crash, leak or hang.
 *
 * What a successful load promises is checked too: every dataset has a name
 * and a source, tm_config_find finds each by its name, and an error always
 * carries a message.
 *
 * Seed corpus (fuzz/corpora/fuzz_config/): examples/tidemark.yaml and the
 * good and bad cases of tests/cases/config/, plus a few hand-written YAML
 * oddities (anchors and aliases, flow style, tags, deep nesting).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise of the loader: report it and stop, so libFuzzer saves the input. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_config: %s\n", what);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_config cfg;
  tm_error err;
  tm_error_init(&err);
  int rc = tm_config_load_text(&cfg, (const char *)data, size, "fuzz.yaml", "/fuzz-config-dir",
                               &err);
  if (rc == TM_OK) {
    for (size_t i = 0; i < cfg.n_datasets; i++) {
      const tm_dataset_def *d = &cfg.datasets[i];
      if (!d->name || !d->from) broken("a loaded dataset has no name or no source");
      if (tm_config_find(&cfg, d->name) != d) broken("tm_config_find misses a loaded dataset");
    }
  } else if (!err.message[0]) {
    broken("a load error without a message");
  }
  tm_config_dispose(&cfg);
  return 0;
}
