/*
 * remote.c - commands that talk to a running `tidemark run` over HTTP (cli layer).
 */
#include <stdio.h>

#include "cli/cli.h"
#include "format/arrow/render.h"
#include "format/arrow/render.h"

int tm_cli_refresh_remote(const tm_cli_cmd *cmd, const char *url, const tm_cli_args *args);

int tm_cli_refresh_remote(const tm_cli_cmd *cmd, const char *url, const tm_cli_args *args) {
  (void)url;
  (void)args;
  return tm_cli_unavailable(cmd, "--url needs the runtime's HTTP API, which has not landed");
}

int tm_cli_sql_remote(const tm_cli_cmd *cmd, const char *url, const char *query,
                      tm_out_format format, const char *api_key);
int tm_cli_sql_remote(const tm_cli_cmd *cmd, const char *url, const char *query,
                      tm_out_format format, const char *api_key) {
  (void)url; (void)query; (void)format; (void)api_key;
  return tm_cli_unavailable(cmd, "--url");
}
