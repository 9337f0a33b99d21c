/*
 * dispatch.c - the command table and the dispatch of a command line to its
 * command (cli layer). main.c is the process around it; the test tool
 * tests/tools/cli_batch.c runs many command lines through it in one process.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"

static const tm_cli_cmd *const k_commands[] = {
    &tm_cli_cmd_run,     &tm_cli_cmd_refresh, &tm_cli_cmd_sql,    &tm_cli_cmd_status,
    &tm_cli_cmd_iceberg, &tm_cli_cmd_parquet, &tm_cli_cmd_config,
};
#define N_COMMANDS (sizeof k_commands / sizeof k_commands[0])

static void print_main_help(FILE *out) {
  fprintf(out,
          "tidemark %s - local, queryable, always-fresh copies of remote datasets\n\n"
          "usage: tidemark <command> [options]\n\ncommands:\n",
          TM_VERSION);
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(out, "  %-10s %s\n", k_commands[i]->name, k_commands[i]->summary);
  fprintf(out,
          "\noptions:\n  -h, --help     show this help\n  -V, --version  print the version\n"
          "\nRun `tidemark <command> --help` for a command's options.\n"
          "Logs go to stderr; TIDEMARK_LOG=debug|info|warn|error sets the level.\n");
}

int tm_cli_main(int argc, char **argv) {
  tm_cli_set_argv(argc, argv);
  tm_log_init_from_env();
  if (argc < 2) {
    print_main_help(stderr);
    return TM_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
    if (argc > 2 && strcmp(name, "help") == 0) {
      for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(k_commands[i]->name, argv[2]) == 0) {
          tm_cli_print_help(k_commands[i]);
          return TM_EXIT_OK;
        }
    }
    print_main_help(stdout);
    return TM_EXIT_OK;
  }
  if (strcmp(name, "-V") == 0 || strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("tidemark %s\n", TM_VERSION);
    return TM_EXIT_OK;
  }
  for (size_t i = 0; i < N_COMMANDS; i++) {
    const tm_cli_cmd *cmd = k_commands[i];
    if (strcmp(cmd->name, name) != 0) continue;
    tm_cli_args args;
    int code = 0;
    if (tm_cli_parse(cmd, argc - 2, argv + 2, &args, &code) < 0) return code;
    return cmd->run(cmd, &args);
  }
  fprintf(stderr, "tidemark: unknown command '%s'\n\n", name);
  print_main_help(stderr);
  return TM_EXIT_USAGE;
}
