/*
 * cmd_parquet.c - `tidemark parquet schema|meta|cat FILE` (cli layer).
 */
#include <stdint.h>

#include "cli/cli.h"

static const tm_cli_opt k_opts[] = {
    {"columns", 0, "a,b", "cat: only these columns"},
    {"format", 0, "csv|json|table", "cat: output format (default csv)"},
    {"limit", 0, "N", "cat: at most N rows"},
    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  (void)args;
  return tm_cli_unavailable(cmd, "the Parquet reader has not landed");
}

const tm_cli_cmd tm_cli_cmd_parquet = {
    "parquet",
    "inspect Parquet files: schema, metadata, rows",
    "tidemark parquet <schema|meta|cat> FILE [--columns a,b] [--format csv|json|table] "
    "[--limit N]",
    "Inspects a Parquet file: `schema` prints its columns, `meta` its row groups, column\n"
    "chunks, encodings, codecs and statistics, `cat` its rows.",
    k_opts,
    2,
    run};
