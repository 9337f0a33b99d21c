/*
 * cli.h - the `tidemark` command line (cli layer).
 *
 * Every subcommand is one entry of the table in main.c with its own file
 * cmd_<name>.c. Options are declared per command (tm_cli_opt) and parsed by
 * one parser, so `--help`, unknown flags and missing values behave the same
 * everywhere. Exit codes: 0 success, 1 runtime failure, 2 usage or config
 * error.
 */
#ifndef TM_CLI_CLI_H
#define TM_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#define TM_EXIT_OK 0
#define TM_EXIT_FAILURE 1
#define TM_EXIT_USAGE 2

typedef struct tm_cli_opt {
  const char *long_name; /* without "--" */
  char short_name;       /* 0 when none */
  const char *value_name;/* NULL: a flag without value */
  const char *help;
} tm_cli_opt;

#define TM_CLI_MAX_OPTS 24
#define TM_CLI_MAX_ARGS 256

typedef struct tm_cli_args {
  const char *values[TM_CLI_MAX_OPTS]; /* option i's value ("" for a set flag), NULL if absent */
  const char *positional[TM_CLI_MAX_ARGS];
  size_t n_positional;
} tm_cli_args;

typedef struct tm_cli_cmd {
  const char *name;
  const char *summary;        /* one line for `tidemark --help` */
  const char *usage;          /* "tidemark sql [-c FILE | --url URL] [QUERY] ..." */
  const char *description;    /* paragraph for `tidemark CMD --help` */
  const tm_cli_opt *opts;     /* terminated by a zero entry */
  size_t max_positional;      /* SIZE_MAX: any */
  int (*run)(const struct tm_cli_cmd *cmd, const tm_cli_args *args);
} tm_cli_cmd;

/**
 * Parses argv (after the command name) against cmd's options. Prints the
 * command's help and returns -1 with *exit_code 0 for --help; prints a usage
 * error and returns -1 with *exit_code 2 for a bad argument.
 */
int tm_cli_parse(const tm_cli_cmd *cmd, int argc, char **argv, tm_cli_args *out,
                 int *exit_code);
void tm_cli_print_help(const tm_cli_cmd *cmd);
/** Index of the option named long_name in cmd->opts (programming error if absent). */
const char *tm_cli_get(const tm_cli_cmd *cmd, const tm_cli_args *args, const char *long_name);
bool tm_cli_flag(const tm_cli_cmd *cmd, const tm_cli_args *args, const char *long_name);
/* `tidemark refresh`: the one-off refresh_sql (--sql, or Spice's --refresh-sql), or NULL. */
const char *tm_cli_refresh_sql(const tm_cli_cmd *cmd, const tm_cli_args *args);
/* `tidemark refresh`: a full refresh (--full, or Spice's --refresh-mode full). */
bool tm_cli_refresh_full(const tm_cli_cmd *cmd, const tm_cli_args *args);
/** Prints "tidemark CMD: message" to stderr and returns TM_EXIT_USAGE. */
int tm_cli_usage_error(const tm_cli_cmd *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/**
 * Runs one command line (argv[0] the program, argv[1] the command) and
 * returns its exit code: what tidemark-core's main does after its process
 * set-up. Output goes to stdout and stderr.
 */
int tm_cli_main(int argc, char **argv);
/** The process's command line, as main() got it (the no-op stamp's key, noop.h). */
void tm_cli_set_argv(int argc, char **argv);
int tm_cli_argc(void);
char **tm_cli_argv(void);
/** Prints "tidemark: message" to stderr and returns code. */
int tm_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Says that cmd needs a layer this build does not have yet; exit code 1. */
int tm_cli_unavailable(const tm_cli_cmd *cmd, const char *what);

struct tm_config;
/**
 * Loads the config at path (NULL: tidemark.yaml or spicepod.yaml in the
 * current folder) into cfg, printing any error to stderr and logging
 * warnings. Returns TM_EXIT_OK, or the exit code to end with (cfg disposed).
 */
int tm_cli_load_config(const char *path, struct tm_config *cfg);

struct tm_db;
struct tm_accel_options;
/**
 * Opens the DuckDB instance for cfg's accelerations in this process and
 * fills ao to open them with (db, base folder). Prints the error and returns
 * false when the instance cannot open. Release *db with tm_db_release.
 */
bool tm_cli_open_accels(const struct tm_config *cfg, struct tm_db **db, struct tm_accel_options *ao);

/* The commands (one file each). */
extern const tm_cli_cmd tm_cli_cmd_run;
extern const tm_cli_cmd tm_cli_cmd_refresh;
extern const tm_cli_cmd tm_cli_cmd_sql;
extern const tm_cli_cmd tm_cli_cmd_status;
extern const tm_cli_cmd tm_cli_cmd_iceberg;
extern const tm_cli_cmd tm_cli_cmd_parquet;
extern const tm_cli_cmd tm_cli_cmd_config;

#endif
