/*
 * cmd_iceberg.c - `tidemark iceberg`: author and inspect Iceberg tables in a
 * file-system warehouse (cli layer).
 */
#include <stdint.h>

#include "cli/cli.h"

static const tm_cli_opt k_opts[] = {{0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  (void)args;
  return tm_cli_unavailable(cmd, "the Iceberg layer has not landed");
}

const tm_cli_cmd tm_cli_cmd_iceberg = {
    "iceberg",
    "author and inspect Iceberg tables in a file-system warehouse",
    "tidemark iceberg <create|append|overwrite|delete|compact|replace-table|rollback|expire|"
    "history|files> ...",
    "Authors and inspects Apache Iceberg tables in a file-system warehouse.",
    k_opts,
    SIZE_MAX,
    run};
