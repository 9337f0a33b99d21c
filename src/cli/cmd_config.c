/*
 * cmd_config.c - `tidemark config check`: validate a config file and show
 * what tidemark understood from it (cli layer).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/config/config.h"

static const tm_cli_opt k_opts[] = {{"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
                                    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  if (args->n_positional != 1 || strcmp(args->positional[0], "check") != 0)
    return tm_cli_usage_error(cmd, "expected the subcommand 'check'");
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  printf("%s: valid, %zu dataset%s\n", cfg.path, cfg.n_datasets, cfg.n_datasets == 1 ? "" : "s");
  for (size_t i = 0; i < cfg.n_datasets; i++) {
    const tm_dataset_def *d = &cfg.datasets[i];
    const tm_acceleration_def *a = &d->acceleration;
    printf("  %s: %s (%s)", d->name, d->from, tm_source_kind_name(d->source_kind));
    if (d->has_acceleration && a->enabled)
      printf(", accelerated: %s/%s, refresh %s%s%s", tm_engine_kind_name(a->engine),
             tm_engine_mode_name(a->mode), tm_refresh_mode_name(a->refresh_mode),
             d->time_column ? " by " : "", d->time_column ? d->time_column : "");
    else
      printf(", federated (no acceleration)");
    printf("\n");
  }
  tm_config_dispose(&cfg);
  return TM_EXIT_OK;
}

const tm_cli_cmd tm_cli_cmd_config = {
    "config",
    "validate a config file",
    "tidemark config check [-c FILE]",
    "Loads the config file with the same strict validation as `tidemark run` and prints\n"
    "what tidemark understood: each dataset, its source, engine and refresh mode.\n"
    "Exit code 0 when valid, 2 with the error (file:line:column, key path) when not.",
    k_opts,
    1,
    run};
