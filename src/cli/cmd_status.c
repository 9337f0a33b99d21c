/*
 * cmd_status.c - `tidemark status`: datasets and their refresh state (cli layer).
 */
#include <stdint.h>

#include "cli/cli.h"
#include "runtime/config/config.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"url", 0, "URL", "ask a running server (default http://127.0.0.1:8090)"},
    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  if (!tm_cli_get(cmd, args, "url")) {
    tm_config cfg;
    int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
    if (code != TM_EXIT_OK) return code;
    tm_config_dispose(&cfg);
  }
  return tm_cli_unavailable(cmd, "the runtime layer has not landed");
}

const tm_cli_cmd tm_cli_cmd_status = {
    "status",
    "show datasets: status, rows, high-water mark, saved snapshot, last refresh",
    "tidemark status [-c FILE | --url URL]",
    "Shows every dataset with its status, rows, high-water mark, saved Iceberg snapshot,\n"
    "last refresh and last error.",
    k_opts,
    0,
    run};
