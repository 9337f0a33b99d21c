/*
 * edit.h - line editing, history and Ctrl-C for the `tidemark sql` REPL on
 * a terminal (cli layer), over Debian's libedit.
 *
 * History lives in a file (tm_edit_history_path): loaded at the start,
 * bounded to TM_EDIT_HISTORY_MAX entries, written back (mode 0600, through a
 * temporary file and a rename) at the end. A history file that exists but
 * cannot be loaded is left as it is: this session's lines are not saved over
 * it.
 *
 * Ctrl-C never ends the process while a tm_edit exists: at the prompt it
 * drops the line being typed (tm_edit_read answers TM_ECANCELLED); while the
 * caller has marked itself busy (a statement running), it calls the
 * interrupt function from a helper thread. Ctrl-D on an empty line is the
 * end of input.
 */
#ifndef TM_CLI_EDIT_H
#define TM_CLI_EDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define TM_EDIT_HISTORY_MAX 1000               /* entries kept */
#define TM_EDIT_HISTORY_FILE_MAX ((long)8 << 20) /* a larger history file is not loaded */

typedef struct tm_edit tm_edit;

/**
 * The history file: $TIDEMARK_HISTORY (empty: none), else
 * $HOME/.tidemark_history, else none (NULL). Result: tm_free.
 */
char *tm_edit_history_path(void);

/**
 * Starts line editing on this process's terminal (stdin, stdout), with the
 * history of history_path (NULL: no history file), and takes over SIGINT
 * and SIGWINCH until tm_edit_free. A history file that cannot be loaded is
 * reported on stderr and kept. Errors: TM_ENOMEM, TM_EIO (libedit or the
 * signal plumbing could not start). Release with tm_edit_free.
 */
int tm_edit_new(tm_edit **out, const char *history_path, tm_error *err) TM_WARN_UNUSED;
/**
 * Saves the history (unless its file could not be loaded), gives SIGINT and
 * SIGWINCH back and frees e. NULL is a no-op.
 */
void tm_edit_free(tm_edit *e);

/**
 * Reads one line after prompt. TM_OK with *line (without its newline; owned
 * by e, valid until the next call) and *len; TM_ECANCELLED when Ctrl-C
 * dropped the line; TM_ITEROVER at the end of input (Ctrl-D); TM_EIO when
 * the terminal fails.
 */
int tm_edit_read(tm_edit *e, const char *prompt, const char **line, size_t *len,
                 tm_error *err) TM_WARN_UNUSED;
/** Adds an entry (a statement, maybe of several lines) to the history. */
void tm_edit_history_add(tm_edit *e, const char *entry);

/**
 * While busy, Ctrl-C calls fn(payload) from another thread (fn must be
 * thread-safe: tm_sql_session_interrupt, setting an atomic flag).
 */
void tm_edit_set_interrupt(tm_edit *e, void (*fn)(void *payload), void *payload);
void tm_edit_busy(tm_edit *e, bool busy);

#endif
