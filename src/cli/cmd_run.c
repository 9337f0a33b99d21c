/*
 * cmd_run.c - `tidemark run`: the long-running runtime (cli layer; SPEC 1.2).
 */
#include <stdint.h>

#include "cli/cli.h"
#include "runtime/config/config.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"http", 0, "ADDR", "HTTP API address (default 127.0.0.1:8090)"},
    {"metrics", 0, "ADDR", "Prometheus metrics address (default 127.0.0.1:9090)"},
    {"api-key", 0, "KEY", "require this key on every endpoint but /health (or TIDEMARK_API_KEY)"},
    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  tm_config cfg;
  int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
  if (code != TM_EXIT_OK) return code;
  tm_config_dispose(&cfg);
  return tm_cli_unavailable(cmd, "the runtime layer has not landed; `tidemark config check` "
                                 "validates the config");
}

const tm_cli_cmd tm_cli_cmd_run = {
    "run",
    "run the runtime: refresh on schedule, serve SQL over HTTP and metrics",
    "tidemark run [-c FILE] [--http ADDR] [--metrics ADDR] [--api-key KEY]",
    "Loads every dataset of the config, opens existing accelerations, refreshes them on\n"
    "schedule, serves the HTTP API and Prometheus metrics, and shuts down cleanly on\n"
    "SIGINT or SIGTERM.",
    k_opts,
    0,
    run};
