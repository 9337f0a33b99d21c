/*
 * edit.c - the REPL's terminal: libedit, its history file, Ctrl-C (cli
 * layer; see edit.h).
 *
 * Signals: SIGINT and SIGWINCH handlers only write a byte to a pipe. A
 * watcher thread reads it: during a statement it calls the interrupt
 * function; otherwise it passes the event to the prompt through a second
 * pipe, which the character reader below polls beside the terminal. So
 * whichever thread the kernel picks for the signal (DuckDB has many), the
 * prompt sees it; and nothing async-signal-unsafe runs in a handler.
 *
 * Ctrl-C at the prompt: the reader flags the line as dropped and hands
 * libedit a ^C (the terminal's own ^C is a signal, as libedit leaves ISIG
 * on; a ^C byte, were ISIG off, does the same), which is bound to
 * ed-newline: el_gets ends, and tm_edit_read drops what it returns. (A
 * function of our own bound with EL_ADDFN would do too, but libedit never
 * frees the names it copies for one.)
 */
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wchar.h>

#include "cli/edit.h"
#include "util/alloc.h"

struct tm_edit {
  EditLine *el;
  History *hist;
  char *hist_path;          /* owned; NULL: no history file */
  bool hist_save;           /* the file loaded, or does not exist yet: write it at the end */
  const char *prompt;       /* borrowed, during tm_edit_read */
  bool cancelled;           /* Ctrl-C came during this read */
  mbstate_t mb;             /* the reader's multibyte state */
  int wake[2];              /* watcher -> reader: 'c' Ctrl-C, 'w' window resized */
  pthread_t watcher;
  bool watching;            /* the watcher thread runs */
  pthread_mutex_t mu;       /* guards busy, interrupt, payload */
  bool busy;
  void (*interrupt)(void *payload);
  void *payload;
  struct sigaction old_int, old_winch;
  bool handlers;            /* old_int and old_winch hold what to restore */
};

/* Signal handlers -> watcher. One tm_edit exists at a time (a process has one terminal). */
static int g_sigpipe[2] = {-1, -1};

static void on_signal(int sig) {
  int saved = errno;
  char b = sig == SIGINT ? 'i' : 'w';
  if (g_sigpipe[1] >= 0) {
    ssize_t k = write(g_sigpipe[1], &b, 1);
    (void)k; /* a full pipe already holds an event */
  }
  errno = saved;
}

static void *watch(void *arg) {
  tm_edit *e = arg;
  for (;;) {
    char b;
    ssize_t k = read(g_sigpipe[0], &b, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0 || b == 'q') break;
    /* The lock is held while fn runs: once tm_edit_busy(e, false) returns, fn is not called. */
    pthread_mutex_lock(&e->mu);
    bool handled = b == 'i' && e->busy && e->interrupt;
    if (handled) e->interrupt(e->payload);
    pthread_mutex_unlock(&e->mu);
    if (!handled) {
      char w = b == 'i' ? 'c' : 'w';
      k = write(e->wake[1], &w, 1);
      (void)k;
    }
  }
  return NULL;
}

/*
 * libedit's character reader: a character from the terminal, decoded in the
 * locale, or ^C when the watcher reports Ctrl-C. 1 with *wc, 0 at the end of
 * input, -1 on an error.
 */
static int get_char(EditLine *el, wchar_t *wc) {
  tm_edit *e = NULL;
  el_get(el, EL_CLIENTDATA, &e);
  for (;;) {
    struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {e->wake[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (p[1].revents & POLLIN) {
      char b;
      if (read(e->wake[0], &b, 1) == 1) {
        if (b == 'c') {
          memset(&e->mb, 0, sizeof e->mb);
          fputs("^C", stdout); /* as the terminal echoes it elsewhere */
          fflush(stdout);
          e->cancelled = true;
          *wc = 0x03;
          return 1;
        }
        el_resize(el);
      }
      continue;
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char c;
    ssize_t k = read(STDIN_FILENO, &c, 1);
    if (k == 0) return 0;
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    size_t r = mbrtowc(wc, &c, 1, &e->mb);
    if (r == (size_t)-2) continue;           /* more bytes of this character */
    if (r == (size_t)-1) {                   /* not in the locale's encoding: dropped */
      memset(&e->mb, 0, sizeof e->mb);
      continue;
    }
    if (r == 0) *wc = 0;
    if (*wc == 0x03) e->cancelled = true;
    return 1;
  }
}

static char *prompt_fn(EditLine *el) {
  tm_edit *e = NULL;
  el_get(el, EL_CLIENTDATA, &e);
  return (char *)(e->prompt ? e->prompt : "");
}

char *tm_edit_history_path(void) {
  const char *env = getenv("TIDEMARK_HISTORY");
  if (env) return *env ? tm_strdup(env) : NULL;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  return tm_asprintf("%s/.tidemark_history", home);
}

/* Loads e->hist_path and decides whether it is saved at the end. */
static void history_load(tm_edit *e) {
  HistEvent ev;
  struct stat st;
  const char *why = NULL;
  if (stat(e->hist_path, &st) != 0) {
    if (errno == ENOENT) {
      e->hist_save = true;
      return;
    }
    why = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_size > TM_EDIT_HISTORY_FILE_MAX) {
    why = "larger than 8 MiB";
  } else if (history(e->hist, &ev, H_LOAD, e->hist_path) < 0) {
    why = "cannot be read";
  }
  if (why) {
    fprintf(stderr,
            "tidemark: history file %s: %s; it is left as it is and this session's lines "
            "are not saved\n",
            e->hist_path, why);
    return;
  }
  e->hist_save = true;
}

/* Writes the history through a temporary file (mode 0600) renamed over the file. */
static void history_save(tm_edit *e) {
  if (!e->hist_path || !e->hist_save) return;
  char real[PATH_MAX];
  const char *path = realpath(e->hist_path, real) ? real : e->hist_path; /* keep a symlink */
  char *tmp = tm_asprintf("%s.tmp-%ld", path, (long)getpid());
  if (!tmp) return;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (fd >= 0 && !f) close(fd);
  HistEvent ev;
  bool ok = f && history(e->hist, &ev, H_SAVE_FP, f) >= 0;
  if (f) ok = fclose(f) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) {
    fprintf(stderr, "tidemark: history file %s: not saved: %s\n", path, strerror(errno));
    unlink(tmp);
  }
  tm_free(tmp);
}

/* A UTF-8 terminal in the C locale still edits UTF-8 text (C.UTF-8). */
static void pick_locale(void) {
  const char *l = setlocale(LC_CTYPE, "");
  if (!l || !strcmp(l, "C") || !strcmp(l, "POSIX")) setlocale(LC_CTYPE, "C.UTF-8");
}

int tm_edit_new(tm_edit **out, const char *history_path, tm_error *err) {
  tm_edit *e = tm_calloc(1, sizeof *e);
  if (!e) return tm_error_nomem(err);
  e->wake[0] = e->wake[1] = -1;
  pthread_mutex_init(&e->mu, NULL);
  int rc = TM_OK;
  if (history_path && !(e->hist_path = tm_strdup(history_path))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  pick_locale();
  HistEvent ev;
  e->hist = history_init();
  e->el = el_init("tidemark", stdin, stdout, stderr);
  if (!e->hist || !e->el) {
    rc = tm_error_set(err, TM_EIO, "line editing (libedit) cannot start");
    goto done;
  }
  history(e->hist, &ev, H_SETSIZE, TM_EDIT_HISTORY_MAX);
  history(e->hist, &ev, H_SETUNIQUE, 1);
  if (e->hist_path) history_load(e);
  el_set(e->el, EL_CLIENTDATA, e);
  el_set(e->el, EL_EDITOR, "emacs");
  el_set(e->el, EL_SIGNAL, 0);
  el_set(e->el, EL_HIST, history, e->hist);
  el_set(e->el, EL_PROMPT, prompt_fn);
  el_set(e->el, EL_GETCFN, get_char);
  el_set(e->el, EL_BIND, "^C", "ed-newline", NULL);
  el_source(e->el, NULL); /* the user's ~/.editrc */
  if (pipe2(e->wake, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(g_sigpipe, O_CLOEXEC) != 0 ||
      fcntl(g_sigpipe[1], F_SETFL, O_NONBLOCK) != 0) {
    rc = tm_error_set(err, TM_EIO, "signal pipe: %s", strerror(errno));
    goto done;
  }
  if (pthread_create(&e->watcher, NULL, watch, e) != 0) {
    rc = tm_error_set(err, TM_EIO, "cannot start the Ctrl-C watcher thread");
    goto done;
  }
  e->watching = true;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &e->old_int);
  sigaction(SIGWINCH, &sa, &e->old_winch);
  e->handlers = true;
done:
  if (rc != TM_OK) {
    e->hist_save = false; /* nothing was typed: leave the file alone */
    tm_edit_free(e);
    return rc;
  }
  *out = e;
  return TM_OK;
}

void tm_edit_free(tm_edit *e) {
  if (!e) return;
  if (e->handlers) {
    sigaction(SIGINT, &e->old_int, NULL);
    sigaction(SIGWINCH, &e->old_winch, NULL);
  }
  if (e->watching) {
    char q = 'q';
    while (write(g_sigpipe[1], &q, 1) < 0 && errno == EAGAIN) usleep(1000);
    pthread_join(e->watcher, NULL);
  }
  for (int i = 0; i < 2; i++) {
    if (g_sigpipe[i] >= 0) close(g_sigpipe[i]);
    g_sigpipe[i] = -1;
    if (e->wake[i] >= 0) close(e->wake[i]);
  }
  if (e->hist) history_save(e);
  if (e->el) el_end(e->el);
  if (e->hist) history_end(e->hist);
  pthread_mutex_destroy(&e->mu);
  tm_free(e->hist_path);
  tm_free(e);
}

int tm_edit_read(tm_edit *e, const char *prompt, const char **line, size_t *len,
                 tm_error *err) {
  /* A Ctrl-C that came as a statement ended belongs to no line typed here. */
  char b;
  while (read(e->wake[0], &b, 1) == 1) {
  }
  e->cancelled = false;
  e->prompt = prompt;
  int count = 0;
  const char *s = el_gets(e->el, &count);
  e->prompt = NULL;
  if (e->cancelled) return TM_ECANCELLED;
  if (!s || count <= 0) {
    if (count < 0) return tm_error_set(err, TM_EIO, "terminal: %s", strerror(errno));
    return TM_ITEROVER;
  }
  size_t n = (size_t)count;
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  *line = s;
  *len = n;
  return TM_OK;
}

void tm_edit_history_add(tm_edit *e, const char *entry) {
  HistEvent ev;
  if (entry && *entry) history(e->hist, &ev, H_ENTER, entry);
}

void tm_edit_set_interrupt(tm_edit *e, void (*fn)(void *payload), void *payload) {
  pthread_mutex_lock(&e->mu);
  e->interrupt = fn;
  e->payload = payload;
  pthread_mutex_unlock(&e->mu);
}

void tm_edit_busy(tm_edit *e, bool busy) {
  pthread_mutex_lock(&e->mu);
  e->busy = busy;
  pthread_mutex_unlock(&e->mu);
}
