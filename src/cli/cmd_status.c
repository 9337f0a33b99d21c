/*
 * cmd_status.c - `tidemark status` (cli layer).
 */
#include <stdint.h>

#include "cli/cli.h"

static const tm_cli_opt k_opts[] = {{"config", 'c', "FILE", "config file"}, {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  (void)args;
  return tm_cli_unavailable(cmd, "the runtime has not landed");
}

const tm_cli_cmd tm_cli_cmd_status = {"status", "status", "tidemark status", NULL, k_opts, SIZE_MAX, run};
