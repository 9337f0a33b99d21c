/*
 * log.h - one line per event on stderr (util layer; SPEC 1.5).
 *
 * Line format: `2026-11-30T03:08:13.123Z WARN  [events] message`. The
 * dataset part is left out for process-wide events. The level comes from
 * TIDEMARK_LOG (debug, info, warn, error; default info) or tm_log_set_level.
 * Tests capture lines with tm_log_set_sink.
 */
#ifndef TM_UTIL_LOG_H
#define TM_UTIL_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdbool.h>

#include "util/error.h"

typedef enum tm_log_level {
  TM_LOG_DEBUG = 0,
  TM_LOG_INFO = 1,
  TM_LOG_WARN = 2,
  TM_LOG_ERROR = 3,
  TM_LOG_OFF = 4
} tm_log_level;

/** Reads TIDEMARK_LOG. Unknown values keep the default (info). */
void tm_log_init_from_env(void);
void tm_log_set_level(tm_log_level level);
tm_log_level tm_log_get_level(void);
bool tm_log_enabled(tm_log_level level);
/** Parses "debug", "info", "warn"/"warning", "error", "off". */
int tm_log_level_parse(const char *s, tm_log_level *out);
const char *tm_log_level_name(tm_log_level level);

/** dataset may be NULL. Thread-safe: lines never interleave. */
/** Lines written so far (past the level filter), process wide. */
int64_t tm_log_emitted(void);
void tm_log(tm_log_level level, const char *dataset, const char *fmt, ...) TM_PRINTF(3, 4);
void tm_logv(tm_log_level level, const char *dataset, const char *fmt, va_list ap);

/*
 * A sink receives every emitted line (without the trailing newline) instead
 * of stderr. NULL restores stderr. The payload is passed back untouched.
 */
typedef void (*tm_log_sink_fn)(tm_log_level level, const char *line, void *payload);
void tm_log_set_sink(tm_log_sink_fn sink, void *payload);

#define TM_LOG_DEBUG_(ds, ...) \
  do { if (tm_log_enabled(TM_LOG_DEBUG)) tm_log(TM_LOG_DEBUG, (ds), __VA_ARGS__); } while (0)

#endif
