/*
 * args.c - option parsing and help for every subcommand (cli layer).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static size_t n_opts(const tm_cli_cmd *cmd) {
  size_t n = 0;
  while (cmd->opts && cmd->opts[n].long_name) n++;
  return n;
}

void tm_cli_print_help(const tm_cli_cmd *cmd) {
  printf("usage: %s\n\n%s\n", cmd->usage, cmd->description ? cmd->description : cmd->summary);
  size_t n = n_opts(cmd);
  if (n == 0) return;
  printf("\noptions:\n");
  for (size_t i = 0; i < n; i++) {
    const tm_cli_opt *o = &cmd->opts[i];
    char left[96];
    if (o->short_name)
      snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->long_name,
               o->value_name ? " " : "", o->value_name ? o->value_name : "");
    else
      snprintf(left, sizeof left, "    --%s%s%s", o->long_name, o->value_name ? " " : "",
               o->value_name ? o->value_name : "");
    printf("  %-28s %s\n", left, o->help);
  }
  printf("  %-28s %s\n", "-h, --help", "show this help");
}

int tm_cli_usage_error(const tm_cli_cmd *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "tidemark %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nusage: %s\n(see `tidemark %s --help`)\n", cmd->usage, cmd->name);
  return TM_EXIT_USAGE;
}

int tm_cli_fail(int code, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "tidemark: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return code;
}

int tm_cli_unavailable(const tm_cli_cmd *cmd, const char *what) {
  fprintf(stderr, "tidemark %s: not available in this build (%s)\n", cmd->name, what);
  return TM_EXIT_FAILURE;
}

int tm_cli_parse(const tm_cli_cmd *cmd, int argc, char **argv, tm_cli_args *out,
                 int *exit_code) {
  memset(out, 0, sizeof *out);
  size_t n = n_opts(cmd);
  bool only_positional = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (only_positional || a[0] != '-' || a[1] == '\0') {
      if (out->n_positional >= TM_CLI_MAX_ARGS) {
        *exit_code = tm_cli_usage_error(cmd, "too many arguments");
        return -1;
      }
      out->positional[out->n_positional++] = a;
      continue;
    }
    if (strcmp(a, "--") == 0) {
      only_positional = true;
      continue;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      tm_cli_print_help(cmd);
      *exit_code = TM_EXIT_OK;
      return -1;
    }
    const tm_cli_opt *opt = NULL;
    size_t idx = 0;
    const char *inline_value = NULL;
    if (a[1] == '-') {
      const char *name = a + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      for (idx = 0; idx < n; idx++)
        if (strlen(cmd->opts[idx].long_name) == len &&
            strncmp(cmd->opts[idx].long_name, name, len) == 0) {
          opt = &cmd->opts[idx];
          break;
        }
      if (eq) inline_value = eq + 1;
    } else if (a[2] == '\0') {
      for (idx = 0; idx < n; idx++)
        if (cmd->opts[idx].short_name == a[1]) {
          opt = &cmd->opts[idx];
          break;
        }
    }
    if (!opt) {
      *exit_code = tm_cli_usage_error(cmd, "unknown option '%s'", a);
      return -1;
    }
    if (!opt->value_name) {
      if (inline_value) {
        *exit_code = tm_cli_usage_error(cmd, "option '--%s' takes no value", opt->long_name);
        return -1;
      }
      out->values[idx] = "";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        *exit_code = tm_cli_usage_error(cmd, "option '--%s' needs a value (%s)", opt->long_name,
                                        opt->value_name);
        return -1;
      }
      inline_value = argv[++i];
    }
    out->values[idx] = inline_value;
  }
  if (cmd->max_positional != SIZE_MAX && out->n_positional > cmd->max_positional) {
    *exit_code = tm_cli_usage_error(cmd, "unexpected argument '%s'",
                                    out->positional[cmd->max_positional]);
    return -1;
  }
  return 0;
}

const char *tm_cli_get(const tm_cli_cmd *cmd, const tm_cli_args *args, const char *long_name) {
  for (size_t i = 0; cmd->opts && cmd->opts[i].long_name; i++)
    if (strcmp(cmd->opts[i].long_name, long_name) == 0) return args->values[i];
  return NULL;
}

bool tm_cli_flag(const tm_cli_cmd *cmd, const tm_cli_args *args, const char *long_name) {
  return tm_cli_get(cmd, args, long_name) != NULL;
}

const char *tm_cli_refresh_sql(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *sql = tm_cli_get(cmd, args, "sql");
  return sql ? sql : tm_cli_get(cmd, args, "refresh-sql");
}

bool tm_cli_refresh_full(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  const char *mode = tm_cli_get(cmd, args, "refresh-mode");
  return tm_cli_flag(cmd, args, "full") || (mode && strcmp(mode, "full") == 0);
}

static int g_argc;
static char **g_argv;

void tm_cli_set_argv(int argc, char **argv) {
  g_argc = argc;
  g_argv = argv;
}
int tm_cli_argc(void) { return g_argc; }
char **tm_cli_argv(void) { return g_argv; }
