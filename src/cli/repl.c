/*
 * repl.c - the `tidemark sql` loop: lines in, statements and dot-commands
 * out to a tm_repl_target (cli layer; see repl.h).
 *
 * A line that starts a statement (nothing pending in the splitter) and
 * begins with '.' or '\' is a dot-command, as in sqlite3 and psql; `exit`,
 * `quit` and `help` alone on such a line work too (psql's and Spice's REPL
 * habits). Every other line goes to the splitter, and each complete
 * statement runs at once, in order. Output of statements and commands goes
 * to stdout in the current mode; errors go to stderr and the loop goes on.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/edit.h"
#include "cli/repl.h"
#include "util/sqlsplit.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/time.h"

#define PROMPT "tidemark> "
#define PROMPT_MORE "     ...> "      /* as wide as PROMPT: continued lines align */
#define STATEMENT_MAX ((size_t)64 << 20) /* one statement's text */
#define HISTORY_ENTRY_MAX ((size_t)64 << 10) /* a longer statement is not kept in the history */
#define PIECE_MAX 65536                  /* bytes read at once from a pipe or a file */
#define CAPTURE_MAX ((size_t)16 << 20)   /* answers the REPL reads itself (.tables, .schema) */
#define WORD_MAX 512                     /* a dot-command's word */
#define WORDS_MAX 4

typedef struct repl {
  const tm_repl_target *t;
  tm_out_format format;  /* .mode */
  bool timer;            /* .timer */
  tm_edit *edit;         /* on a terminal; NULL reading a pipe or file */
  tm_sqlsplit split;
  tm_buf hist;           /* the lines of the statement being typed, for the history */
  bool hist_overflow;    /* hist grew past HISTORY_ENTRY_MAX: the entry is not kept */
  int code;              /* the exit code so far (repl.h) */
  bool quit;
} repl;

/* Notes a failure: 2 (refused, bad command) unless a 1 (anything else) was seen. */
static void failed(repl *r, int code) {
  if (r->code == TM_EXIT_OK || code == TM_EXIT_FAILURE) r->code = code;
}

static int print_error(repl *r, int rc, const tm_error *err) {
  fprintf(stderr, "tidemark: %s\n", err->message[0] ? err->message : tm_code_name(rc));
  int code = rc == TM_EINVALID ? TM_EXIT_USAGE : TM_EXIT_FAILURE;
  failed(r, code);
  return code;
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Runs sql on the target with Ctrl-C armed; output to sink. */
static int query(repl *r, const char *sql, tm_out_format format, tm_out_sink_fn sink,
                 void *payload, tm_error *err) {
  if (r->edit) tm_edit_busy(r->edit, true);
  int rc = r->t->query(r->t->self, sql, format, sink, payload, err);
  if (r->edit) tm_edit_busy(r->edit, false);
  return rc;
}

static void run_statement(repl *r, const char *sql) {
  tm_error err;
  tm_error_init(&err);
  int64_t start = tm_monotonic_ns();
  int rc = query(r, sql, r->format, tm_out_file_sink, stdout, &err);
  double secs = (double)(tm_monotonic_ns() - start) / 1e9;
  if (rc == TM_ECANCELLED && r->edit) fputc('\n', stdout); /* past the terminal's ^C */
  fflush(stdout);
  if (rc != TM_OK) print_error(r, rc, &err);
  if (r->timer) {
    printf("Run Time: %.3f s\n", secs);
    fflush(stdout);
  }
}

/* The answer of sql as JSON rows (an array of objects); NULL with err set. */
static json_t *capture(repl *r, const char *sql, tm_error *err) {
  tm_buf b = TM_BUF_INIT(CAPTURE_MAX);
  json_t *rows = NULL;
  int rc = query(r, sql, TM_OUT_JSON, buf_sink, &b, err);
  if (rc == TM_OK) {
    json_error_t jerr;
    rows = json_loadb(b.ptr ? b.ptr : "", b.len, 0, &jerr);
    if (!json_is_array(rows)) {
      json_decref(rows);
      rows = NULL;
      tm_error_set(err, TM_ECORRUPT, "malformed answer to %s", sql);
    }
  }
  tm_buf_dispose(&b);
  return rows;
}

/* "name" as an SQL identifier: double-quoted, inner quotes doubled. Result: tm_free. */
static char *quote_ident(const char *name) {
  tm_buf b = TM_BUF_INIT(4 * WORD_MAX);
  int rc = tm_buf_putc(&b, '"', NULL);
  for (const char *p = name; rc == TM_OK && *p; p++)
    rc = *p == '"' ? tm_buf_puts(&b, "\"\"", NULL) : tm_buf_putc(&b, *p, NULL);
  if (rc == TM_OK) rc = tm_buf_putc(&b, '"', NULL);
  char *s = rc == TM_OK ? tm_buf_take(&b, NULL) : NULL;
  tm_buf_dispose(&b);
  return s;
}

/* Writes rows (arrays of strings or nulls) under names in the current mode to stdout. */
static int print_rows(repl *r, const char *const *names, size_t n_cols, json_t *rows,
                      tm_error *err) {
  tm_out o;
  TM_TRY(tm_out_begin(&o, r->format, names, n_cols, tm_out_file_sink, stdout, err));
  int rc = TM_OK;
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    const char *texts[8] = {0};
    size_t lens[8] = {0};
    tm_cell_kind kinds[8] = {0};
    for (size_t c = 0; c < n_cols && c < 8; c++) {
      texts[c] = json_string_value(json_array_get(row, c));
      lens[c] = texts[c] ? strlen(texts[c]) : 0;
      kinds[c] = texts[c] ? TM_CELL_TEXT : TM_CELL_NULL;
    }
    if ((rc = tm_out_row(&o, texts, lens, kinds, err)) != TM_OK) break;
  }
  if (rc == TM_OK) return tm_out_end(&o, err);
  tm_out_dispose(&o);
  return rc;
}

static int by_name(const void *a, const void *b) {
  const char *x = json_string_value(json_array_get(*(json_t *const *)a, 0));
  const char *y = json_string_value(json_array_get(*(json_t *const *)b, 0));
  return strcasecmp(x ? x : "", y ? y : "");
}

/*
 * Every relation SQL can name, as rows [name, kind] sorted by name: the
 * target's datasets, and the views of the main schema that are not datasets
 * (accelerated datasets are views too). NULL with err set.
 */
static json_t *list_tables(repl *r, tm_error *err) {
  json_t *ds = NULL, *views = NULL, *rows = json_array();
  if (!rows) {
    tm_error_nomem(err);
    return NULL;
  }
  int rc = r->t->datasets(r->t->self, &ds, err);
  if (rc == TM_OK)
    views = capture(r,
                    "SELECT table_name AS name FROM information_schema.tables "
                    "WHERE table_catalog = current_database() AND table_schema = 'main' "
                    "AND table_type = 'VIEW'",
                    err);
  if (rc != TM_OK || !views) goto fail;
  size_t i, j;
  json_t *d, *v;
  json_array_foreach(ds, i, d) {
    json_array_append_new(rows, json_pack("[OO]", json_object_get(d, "name"),
                                          json_object_get(d, "kind")));
  }
  json_array_foreach(views, i, v) {
    const char *name = json_string_value(json_object_get(v, "name"));
    bool dataset = false;
    json_array_foreach(ds, j, d) {
      const char *dn = json_string_value(json_object_get(d, "name"));
      dataset = dataset || (name && dn && !strcasecmp(name, dn));
    }
    if (name && !dataset) json_array_append_new(rows, json_pack("[ss]", name, "view"));
  }
  size_t n = json_array_size(rows);
  json_t **sorted = tm_calloc(n ? n : 1, sizeof *sorted);
  if (!sorted) {
    tm_error_nomem(err);
    goto fail;
  }
  for (i = 0; i < n; i++) sorted[i] = json_incref(json_array_get(rows, i));
  qsort(sorted, n, sizeof *sorted, by_name);
  json_array_clear(rows);
  for (i = 0; i < n; i++) json_array_append_new(rows, sorted[i]);
  tm_free(sorted);
  json_decref(ds);
  json_decref(views);
  return rows;
fail:
  json_decref(ds);
  json_decref(views);
  json_decref(rows);
  return NULL;
}

/* ---- dot-commands ----------------------------------------------------------------------- */

typedef struct words {
  size_t n;
  char w[WORDS_MAX][WORD_MAX];
} words;

static int cmd_tables(repl *r, const words *a) {
  (void)a;
  tm_error err;
  tm_error_init(&err);
  json_t *rows = list_tables(r, &err);
  static const char *const names[] = {"name", "kind"};
  int rc = rows ? print_rows(r, names, 2, rows, &err) : err.code;
  json_decref(rows);
  fflush(stdout);
  return rc == TM_OK ? TM_EXIT_OK : print_error(r, rc, &err);
}

/* Appends the columns of relation name to rows, as [table?, column, type, nullable]. */
static int describe(repl *r, const char *name, bool with_table, json_t *rows, tm_error *err) {
  char *ident = quote_ident(name);
  char *sql = ident ? tm_asprintf("SELECT column_name, column_type, \"null\" FROM (DESCRIBE %s)",
                                  ident)
                    : NULL;
  tm_free(ident);
  if (!sql) return tm_error_nomem(err);
  json_t *cols = capture(r, sql, err);
  tm_free(sql);
  if (!cols) return err->code ? err->code : TM_ERROR;
  size_t i;
  json_t *c;
  json_array_foreach(cols, i, c) {
    json_t *row = with_table ? json_pack("[s]", name) : json_array();
    json_array_append(row, json_object_get(c, "column_name"));
    json_array_append(row, json_object_get(c, "column_type"));
    json_array_append(row, json_object_get(c, "null"));
    json_array_append_new(rows, row);
  }
  json_decref(cols);
  return TM_OK;
}

static int cmd_schema(repl *r, const words *a) {
  tm_error err;
  tm_error_init(&err);
  json_t *rows = json_array();
  if (!rows) return print_error(r, tm_error_nomem(&err), &err);
  int rc = TM_OK;
  bool all = a->n < 2;
  if (!all) {
    rc = describe(r, a->w[1], false, rows, &err);
  } else {
    json_t *tables = list_tables(r, &err);
    if (!tables) rc = err.code ? err.code : TM_ERROR;
    size_t i;
    json_t *t;
    json_array_foreach(tables, i, t) {
      const char *name = json_string_value(json_array_get(t, 0));
      tm_error e2;
      tm_error_init(&e2);
      if (name && describe(r, name, true, rows, &e2) != TM_OK) {
        fprintf(stderr, "tidemark: %s: %s\n", name, e2.message);
        failed(r, TM_EXIT_FAILURE);
      }
    }
    json_decref(tables);
  }
  static const char *const names_all[] = {"table", "column", "type", "nullable"};
  static const char *const names_one[] = {"column", "type", "nullable"};
  if (rc == TM_OK)
    rc = all ? print_rows(r, names_all, 4, rows, &err) : print_rows(r, names_one, 3, rows, &err);
  json_decref(rows);
  fflush(stdout);
  return rc == TM_OK ? TM_EXIT_OK : print_error(r, rc, &err);
}

static const char *format_name(tm_out_format f) {
  return f == TM_OUT_CSV ? "csv" : f == TM_OUT_JSON ? "json" : f == TM_OUT_JSONL ? "jsonl" : "table";
}

static int cmd_mode(repl *r, const words *a) {
  if (a->n < 2) {
    printf("%s\n", format_name(r->format));
    return TM_EXIT_OK;
  }
  if (tm_out_format_parse(a->w[1], &r->format) != TM_OK) {
    fprintf(stderr, "tidemark: .mode: unknown mode '%s' (allowed: table, csv, json, jsonl)\n",
            a->w[1]);
    failed(r, TM_EXIT_USAGE);
    return TM_EXIT_USAGE;
  }
  return TM_EXIT_OK;
}

static int cmd_timer(repl *r, const words *a) {
  if (a->n < 2) {
    printf("%s\n", r->timer ? "on" : "off");
    return TM_EXIT_OK;
  }
  if (!strcasecmp(a->w[1], "on")) r->timer = true;
  else if (!strcasecmp(a->w[1], "off")) r->timer = false;
  else {
    fprintf(stderr, "tidemark: .timer: expected on or off, not '%s'\n", a->w[1]);
    failed(r, TM_EXIT_USAGE);
    return TM_EXIT_USAGE;
  }
  return TM_EXIT_OK;
}

static int cmd_quit(repl *r, const words *a) {
  (void)a;
  r->quit = true;
  return TM_EXIT_OK;
}

static int cmd_help(repl *r, const words *a);

typedef struct command {
  const char *name;
  const char *args;
  size_t max_args;
  const char *help;
  int (*run)(repl *r, const words *a);
} command;

static const command k_commands[] = {
    {".tables", "", 0, "the datasets and views, with their kind", cmd_tables},
    {".schema", "[NAME]", 1, "the columns and types of a dataset or view (of each, without NAME)",
     cmd_schema},
    {".mode", "[table|csv|json|jsonl]", 1, "the output format of the answers", cmd_mode},
    {".timer", "[on|off]", 1, "print each statement's run time", cmd_timer},
    {".help", "", 0, "this list", cmd_help},
    {".quit", "", 0, "leave (also .exit, \\q, exit, quit, Ctrl-D)", cmd_quit},
    {".exit", "", 0, NULL, cmd_quit},
    {"\\q", "", 0, NULL, cmd_quit},
};
#define N_COMMANDS (sizeof k_commands / sizeof k_commands[0])

static int cmd_help(repl *r, const words *a) {
  (void)r, (void)a;
  printf("Statements are DuckDB's SQL, read-only, each ended by ';' (it may span lines).\n"
         "Commands, at the start of a line:\n");
  for (size_t i = 0; i < N_COMMANDS; i++) {
    if (!k_commands[i].help) continue;
    char head[64];
    snprintf(head, sizeof head, "%s %s", k_commands[i].name, k_commands[i].args);
    printf("  %-30s %s\n", head, k_commands[i].help);
  }
  printf("Ctrl-C drops the statement being typed, or stops the one running.\n");
  fflush(stdout);
  return TM_EXIT_OK;
}

/*
 * Splits a command line into words: blanks separate them, "..." quotes one
 * ("" inside is a quote). false (the reason printed) when a word is too long,
 * there are too many or a quote is not closed.
 */
static bool split_words(const char *s, size_t len, words *out) {
  out->n = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && isspace((unsigned char)s[i])) i++;
    if (i == len) break;
    if (out->n == WORDS_MAX) {
      fprintf(stderr, "tidemark: too many words in the command\n");
      return false;
    }
    char *w = out->w[out->n++];
    size_t n = 0;
    bool quoted = s[i] == '"';
    if (quoted) i++;
    for (;;) {
      if (i == len) {
        if (quoted) {
          fprintf(stderr, "tidemark: unterminated \" in the command\n");
          return false;
        }
        break;
      }
      char c = s[i];
      if (quoted && c == '"') {
        if (i + 1 < len && s[i + 1] == '"') {
          i++;
        } else {
          i++;
          break;
        }
      } else if (!quoted && isspace((unsigned char)c)) {
        break;
      }
      if (n + 1 >= WORD_MAX) {
        fprintf(stderr, "tidemark: a word of the command is longer than %d bytes\n",
                WORD_MAX - 1);
        return false;
      }
      w[n++] = c;
      i++;
    }
    w[n] = '\0';
  }
  return true;
}

/* Whether line (trimmed) is a bare `word` or `word;`, ignoring case. */
static bool bare(const char *s, size_t len, const char *word) {
  size_t n = strlen(word);
  if (len && s[len - 1] == ';') len--;
  while (len && isspace((unsigned char)s[len - 1])) len--;
  return len == n && !strncasecmp(s, word, n);
}

/* Whether a line that starts a statement is a command rather than SQL. */
static bool is_command(const char *s, size_t len) {
  return len && (s[0] == '.' || s[0] == '\\' || bare(s, len, "exit") || bare(s, len, "quit") ||
                 bare(s, len, "help"));
}

static void run_command(repl *r, const char *s, size_t len) {
  if (bare(s, len, "exit") || bare(s, len, "quit")) {
    r->quit = true;
    return;
  }
  words a;
  if (bare(s, len, "help")) {
    cmd_help(r, &a);
    return;
  }
  if (!split_words(s, len, &a)) {
    failed(r, TM_EXIT_USAGE);
    return;
  }
  for (size_t i = 0; i < N_COMMANDS; i++) {
    const command *c = &k_commands[i];
    if (strcmp(a.w[0], c->name) != 0) continue;
    if (a.n - 1 > c->max_args) {
      fprintf(stderr, "tidemark: %s takes %s\n", c->name,
              c->max_args ? c->args : "no argument");
      failed(r, TM_EXIT_USAGE);
      return;
    }
    c->run(r, &a);
    return;
  }
  fprintf(stderr, "tidemark: unknown command '%s' (.help lists the commands)\n", a.w[0]);
  failed(r, TM_EXIT_USAGE);
}

/* ---- the loop --------------------------------------------------------------------------- */

static void trim(const char **s, size_t *len) {
  while (*len && isspace((unsigned char)**s)) (*s)++, (*len)--;
  while (*len && isspace((unsigned char)(*s)[*len - 1])) (*len)--;
}

/* Keeps a typed line for the history entry of the statement it belongs to. */
static void hist_line(repl *r, const char *s, size_t len) {
  if (!r->edit || r->hist_overflow) return;
  if ((r->hist.len && tm_buf_putc(&r->hist, '\n', NULL) != TM_OK) ||
      tm_buf_append(&r->hist, s, len, NULL) != TM_OK)
    r->hist_overflow = true;
}

/* The statement typed is complete (or dropped): its lines become one history entry. */
static void hist_flush(repl *r, bool keep) {
  if (r->edit && keep && !r->hist_overflow && r->hist.len) {
    const char *s = r->hist.ptr;
    size_t n = r->hist.len;
    trim(&s, &n);
    char *entry = tm_strndup(s, n);
    if (entry) tm_edit_history_add(r->edit, entry);
    tm_free(entry);
  }
  tm_buf_clear(&r->hist);
  r->hist_overflow = false;
}

/* Runs every complete statement the splitter holds. */
static void drain(repl *r) {
  tm_error err;
  tm_error_init(&err);
  char *sql = NULL;
  int rc;
  while (!r->quit && (rc = tm_sqlsplit_next(&r->split, &sql, &err)) == TM_OK) {
    run_statement(r, sql);
    tm_free(sql);
  }
  if (!r->quit && rc != TM_ITEROVER) print_error(r, rc, &err);
}

/*
 * One piece of input: a whole line, or part of a line longer than
 * PIECE_MAX (line_start says whether it begins one; ended whether it ends it).
 */
static void piece(repl *r, const char *s, size_t len, bool line_start, bool ended) {
  const char *t = s;
  size_t tn = len;
  trim(&t, &tn);
  if (line_start && !tm_sqlsplit_pending(&r->split) && is_command(t, tn)) {
    tm_sqlsplit_reset(&r->split); /* comments before the command */
    hist_flush(r, false);
    hist_line(r, t, tn);
    hist_flush(r, true);
    if (!ended) {
      fprintf(stderr, "tidemark: a command line is longer than %d bytes\n", PIECE_MAX);
      failed(r, TM_EXIT_USAGE);
      return;
    }
    run_command(r, t, tn);
    return;
  }
  tm_error err;
  tm_error_init(&err);
  int rc = tm_sqlsplit_feed(&r->split, s, len, &err);
  if (rc == TM_OK && ended && (len == 0 || s[len - 1] != '\n'))
    rc = tm_sqlsplit_feed(&r->split, "\n", 1, &err);
  if (rc != TM_OK) {
    print_error(r, rc, &err);
    tm_sqlsplit_reset(&r->split);
    hist_flush(r, false);
    return;
  }
  hist_line(r, s, len && s[len - 1] == '\n' ? len - 1 : len);
  drain(r);
  if (!tm_sqlsplit_pending(&r->split)) hist_flush(r, true);
}

/* At the end of piped input: an unterminated last statement runs too (as psql does). */
static void finish(repl *r) {
  tm_error err;
  tm_error_init(&err);
  char *sql = NULL;
  int rc = tm_sqlsplit_finish(&r->split, &sql, &err);
  if (rc == TM_OK) {
    run_statement(r, sql);
    tm_free(sql);
  } else if (rc != TM_ITEROVER) {
    print_error(r, rc, &err);
  }
}

static void loop_terminal(repl *r) {
  printf("tidemark %s: SQL over %s\n"
         "End statements with ';'. .help lists the commands; .quit or Ctrl-D leaves.\n",
         TM_VERSION, r->t->where);
  fflush(stdout);
  while (!r->quit) {
    tm_error err;
    tm_error_init(&err);
    const char *line = NULL;
    size_t len = 0;
    const char *prompt = tm_sqlsplit_pending(&r->split) ? PROMPT_MORE : PROMPT;
    int rc = tm_edit_read(r->edit, prompt, &line, &len, &err);
    if (rc == TM_ECANCELLED) {
      tm_sqlsplit_reset(&r->split);
      hist_flush(r, false);
      continue;
    }
    if (rc == TM_ITEROVER) {
      fputc('\n', stdout); /* the shell's prompt on its own line */
      break;
    }
    if (rc != TM_OK) {
      print_error(r, rc, &err);
      break;
    }
    piece(r, line, len, true, true);
  }
}

/*
 * Reads in up to cap bytes, through the next '\n' (NUL bytes included, for
 * the splitter to refuse). Returns the count, 0 at the end of the input;
 * *ended: the line ends with these bytes (a '\n', or the end of the input).
 */
static size_t read_piece(FILE *in, char *buf, size_t cap, bool *ended) {
  size_t n = 0;
  int c;
  while (n < cap && (c = getc(in)) != EOF) {
    buf[n++] = (char)c;
    if (c == '\n') {
      *ended = true;
      return n;
    }
  }
  *ended = true;
  if (n == cap && (c = getc(in)) != EOF) {
    ungetc(c, in);
    *ended = false;
  }
  return n;
}

static void loop_stream(repl *r, FILE *in) {
  char *buf = tm_malloc(PIECE_MAX);
  if (!buf) {
    fprintf(stderr, "tidemark: out of memory\n");
    failed(r, TM_EXIT_FAILURE);
    return;
  }
  bool line_start = true, ended = true;
  size_t len;
  while (!r->quit && (len = read_piece(in, buf, PIECE_MAX, &ended)) > 0) {
    piece(r, buf, len, line_start, ended);
    line_start = ended;
  }
  if (ferror(in)) {
    fprintf(stderr, "tidemark: reading the statements: read error\n");
    failed(r, TM_EXIT_FAILURE);
  }
  if (!r->quit) finish(r);
  tm_free(buf);
}

int tm_repl_run(const tm_repl_target *t, const tm_repl_options *o) {
  repl r;
  memset(&r, 0, sizeof r);
  r.t = t;
  r.format = o->format;
  tm_sqlsplit_init(&r.split, STATEMENT_MAX);
  tm_buf_init(&r.hist, HISTORY_ENTRY_MAX);
  if (o->interactive) {
    tm_error err;
    tm_error_init(&err);
    char *path = tm_edit_history_path();
    int rc = tm_edit_new(&r.edit, path, &err);
    tm_free(path);
    if (rc != TM_OK) {
      fprintf(stderr, "tidemark: %s\n", err.message);
      r.code = TM_EXIT_FAILURE;
    } else {
      if (t->interrupt) tm_edit_set_interrupt(r.edit, t->interrupt, t->self);
      loop_terminal(&r);
      r.code = TM_EXIT_OK; /* errors were shown as they came */
    }
    tm_edit_free(r.edit);
  } else {
    loop_stream(&r, o->in);
  }
  tm_sqlsplit_dispose(&r.split);
  tm_buf_dispose(&r.hist);
  fflush(stdout);
  return r.code;
}
