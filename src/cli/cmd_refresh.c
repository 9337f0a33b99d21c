/*
 * cmd_refresh.c - `tidemark refresh`: one refresh of the named datasets in
 * this process, then exit (cli layer; SPEC 1.2).
 */
#include <stdint.h>

#include "cli/cli.h"
#include "runtime/config/config.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"full", 0, NULL, "a full refresh instead of the configured mode"},
    {"sql", 0, "SQL", "a one-off refresh_sql (reads by time, SPEC A10/B11)"},
    {"url", 0, "URL", "trigger the refresh on a running server instead"},
    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  for (size_t i = 0; i < args->n_positional; i++) {
    if (!tm_config_find(&cfg, args->positional[i])) {
      code = tm_cli_usage_error(cmd, "no dataset named '%s' in %s", args->positional[i], cfg.path);
      tm_config_dispose(&cfg);
      return code;
    }
  }
  tm_config_dispose(&cfg);
  return tm_cli_unavailable(cmd, "the refresh layer has not landed");
}

const tm_cli_cmd tm_cli_cmd_refresh = {
    "refresh",
    "refresh datasets once in this process, then exit",
    "tidemark refresh [-c FILE] [DATASET...] [--full] [--sql SQL]",
    "Refreshes the named datasets (default: all) once, then exits. Prints one summary\n"
    "line per dataset: rows added, how it read (snapshots or time), the fallback reason\n"
    "if any, and the time taken. For cron users and tests.",
    k_opts,
    SIZE_MAX,
    run};
