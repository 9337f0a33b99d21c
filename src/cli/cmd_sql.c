/*
 * cmd_sql.c - `tidemark sql`: a query over the accelerations (cli layer; SPEC 1.2).
 */
#include <stdint.h>
#include <string.h>

#include "cli/cli.h"
#include "format/arrow/render.h"
#include "runtime/config/config.h"

static const tm_cli_opt k_opts[] = {
    {"config", 'c', "FILE", "config file (default: tidemark.yaml or spicepod.yaml)"},
    {"url", 0, "URL", "query a running server instead"},
    {"format", 0, "table|csv|json", "output format (default table)"},
    {0}};

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *format = tm_cli_get(cmd, args, "format");
  tm_out_format f;
  if (format && tm_out_format_parse(format, &f) != TM_OK)
    return tm_cli_usage_error(cmd, "bad --format '%s' (allowed: table, csv, json)", format);
  if (!tm_cli_get(cmd, args, "url")) {
    tm_config cfg;
    int code = tm_cli_load_config(tm_cli_get(cmd, args, "config"), &cfg);
    if (code != TM_EXIT_OK) return code;
    tm_config_dispose(&cfg);
  }
  return tm_cli_unavailable(cmd, "the engines have not landed");
}

const tm_cli_cmd tm_cli_cmd_sql = {
    "sql",
    "run SQL over the accelerations",
    "tidemark sql [-c FILE | --url URL] [QUERY] [--format table|csv|json]",
    "Runs a read-only SQL query (SQLite dialect) over the datasets of the config, or of a\n"
    "running server with --url. Without QUERY on a terminal, starts a REPL.",
    k_opts,
    1,
    run};
