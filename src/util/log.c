/*
 * log.c - line-oriented logging to stderr (util layer). See log.h.
 */
#include "util/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/time.h"

static _Atomic int g_level = TM_LOG_INFO;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_log_sink_fn g_sink;
static void *g_sink_payload;
static int64_t g_emitted; /* guarded by g_lock */

int tm_log_level_parse(const char *s, tm_log_level *out) {
  static const struct { const char *name; tm_log_level level; } names[] = {
      {"debug", TM_LOG_DEBUG}, {"trace", TM_LOG_DEBUG}, {"info", TM_LOG_INFO},
      {"warn", TM_LOG_WARN},   {"warning", TM_LOG_WARN}, {"error", TM_LOG_ERROR},
      {"off", TM_LOG_OFF},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strcasecmp(s, names[i].name) == 0) {
      *out = names[i].level;
      return TM_OK;
    }
  }
  return TM_EINVALID;
}

void tm_log_init_from_env(void) {
  const char *v = getenv("TIDEMARK_LOG");
  tm_log_level level;
  if (v && *v && tm_log_level_parse(v, &level) == TM_OK) tm_log_set_level(level);
}

void tm_log_set_level(tm_log_level level) { atomic_store(&g_level, (int)level); }
tm_log_level tm_log_get_level(void) { return (tm_log_level)atomic_load(&g_level); }
bool tm_log_enabled(tm_log_level level) { return (int)level >= atomic_load(&g_level); }

const char *tm_log_level_name(tm_log_level level) {
  switch (level) {
    case TM_LOG_DEBUG: return "DEBUG";
    case TM_LOG_INFO: return "INFO";
    case TM_LOG_WARN: return "WARN";
    case TM_LOG_ERROR: return "ERROR";
    default: return "OFF";
  }
}

void tm_log_set_sink(tm_log_sink_fn sink, void *payload) {
  pthread_mutex_lock(&g_lock);
  g_sink = sink;
  g_sink_payload = payload;
  pthread_mutex_unlock(&g_lock);
}

void tm_logv(tm_log_level level, const char *dataset, const char *fmt, va_list ap) {
  if (!tm_log_enabled(level) || level >= TM_LOG_OFF) return;
  char line[4096];
  size_t n = tm_time_print_now(line, sizeof line);
  int k = snprintf(line + n, sizeof line - n, " %-5s ", tm_log_level_name(level));
  if (k > 0) n += (size_t)k;
  if (dataset && n < sizeof line) {
    k = snprintf(line + n, sizeof line - n, "[%s] ", dataset);
    if (k > 0) n += (size_t)k;
  }
  if (n < sizeof line) vsnprintf(line + n, sizeof line - n, fmt, ap);
  /* One event, one line: newlines inside a message become spaces. */
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  pthread_mutex_lock(&g_lock);
  g_emitted++;
  if (g_sink) {
    g_sink(level, line, g_sink_payload);
  } else {
    fputs(line, stderr);
    fputc('\n', stderr);
    fflush(stderr);
  }
  pthread_mutex_unlock(&g_lock);
}

int64_t tm_log_emitted(void) {
  pthread_mutex_lock(&g_lock);
  int64_t n = g_emitted;
  pthread_mutex_unlock(&g_lock);
  return n;
}

void tm_log(tm_log_level level, const char *dataset, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tm_logv(level, dataset, fmt, ap);
  va_end(ap);
}
