/*
 * repl.h - the `tidemark sql` read-eval-print loop (cli layer; SPEC 1.2).
 *
 * One loop for both places statements run: this process's datasets (the
 * config's accelerations, opened here) and a running server (POST /v1/sql).
 * Each is a tm_repl_target; the loop, the statement splitting (sqlsplit.h),
 * the dot-commands and the output modes are the same for both.
 *
 * On a terminal it prompts, edits lines and keeps a history (edit.h); from
 * a pipe or a file it reads statements without prompts, like `psql -f`.
 */
#ifndef TM_CLI_REPL_H
#define TM_CLI_REPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "format/arrow/render.h"
#include "util/error.h"

/** Where statements run. */
typedef struct tm_repl_target {
  const char *where; /* for the banner: "http://127.0.0.1:8090", "tidemark.yaml, in this process" */
  /**
   * Runs one read-only statement; its answer in format goes to sink. Errors:
   * TM_EINVALID (the SQL or the gate refused it), TM_ECANCELLED (interrupted),
   * others (the server unreachable, the engine failing).
   */
  int (*query)(void *self, const char *sql, tm_out_format format, tm_out_sink_fn sink,
               void *payload, tm_error *err);
  /**
   * The datasets SQL can name: a new JSON array of {"name", "kind"}, kind
   * "accelerated" or "federated". Views are found through SQL.
   */
  int (*datasets)(void *self, json_t **out, tm_error *err);
  /** Stops the running statement; called from another thread (Ctrl-C). */
  void (*interrupt)(void *self);
  void *self;
} tm_repl_target;

typedef struct tm_repl_options {
  tm_out_format format; /* the first output mode (.mode changes it) */
  bool interactive;     /* a terminal: prompts, line editing, history, Ctrl-C */
  FILE *in;             /* not interactive: where statements come from */
} tm_repl_options;

/**
 * Runs statements and dot-commands until .quit or the end of the input.
 * Returns the exit code: interactive, 0 (1 if the terminal could not be
 * set up); otherwise 0 when every statement and command succeeded, else 2
 * when all failures were refused SQL or bad commands, 1 for any other
 * failure. A failure never stops the loop.
 */
int tm_repl_run(const tm_repl_target *t, const tm_repl_options *o);

#endif
