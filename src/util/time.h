/*
 * time.h - durations, civil dates and RFC 3339 instants (util layer).
 *
 * Instants are (seconds since the Unix epoch, nanoseconds 0..999999999), so
 * every Parquet time unit and every date from year 0001 to 9999 fits without
 * loss. Durations in config (`500ms`, `10s`, `5m`, `2h`, `1d`, and sums such
 * as `1h30m`) are milliseconds.
 */
#ifndef TM_UTIL_TIME_H
#define TM_UTIL_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/** SPEC 1.1 `time_format` values. */
typedef enum tm_time_format {
  TM_TIME_FORMAT_UNSET = 0,
  TM_TIME_FORMAT_TIMESTAMP,    /* timestamp without zone */
  TM_TIME_FORMAT_TIMESTAMPTZ,  /* timestamp with zone */
  TM_TIME_FORMAT_UNIX_SECONDS,
  TM_TIME_FORMAT_UNIX_MILLIS,
  TM_TIME_FORMAT_UNIX_NANOS,
  TM_TIME_FORMAT_ISO8601,      /* RFC 3339 strings */
  TM_TIME_FORMAT_DATE          /* days */
} tm_time_format;

/** Parses a time_format name (case-insensitive). TM_EINVALID when unknown. */
int tm_time_format_parse(const char *s, tm_time_format *out);
const char *tm_time_format_name(tm_time_format f);

#define TM_MS_PER_SEC INT64_C(1000)
#define TM_MS_PER_DAY INT64_C(86400000)
#define TM_SEC_PER_DAY INT64_C(86400)

/**
 * Parses a duration: one or more <digits><unit> with unit ms, s, m, h, d
 * (e.g. "500ms", "1h30m"). TM_EINVALID on anything else, with a message.
 */
int tm_duration_parse(const char *s, int64_t *ms_out, tm_error *err) TM_WARN_UNUSED;
/** Formats ms as the shortest sum of units ("1h30m", "500ms", "0s"). */
size_t tm_duration_format(int64_t ms, char *buf, size_t cap);

/*
 * An instant: seconds since the epoch and nanoseconds (0..999999999), UTC.
 * The one instant type of the program: time columns, high-water marks,
 * bounds, retention cut-offs (a value becomes one with tm_value_instant,
 * format/arrow/batch.h).
 */
typedef struct tm_instant {
  int64_t sec;
  int32_t nsec;
} tm_instant;

int tm_instant_cmp(tm_instant a, tm_instant b);
/** a - ms, saturating at the representable range. */
tm_instant tm_instant_minus_ms(tm_instant a, int64_t ms);
/** Milliseconds since the epoch (floor), saturating. */
int64_t tm_instant_to_ms(tm_instant a);
/** The instant ms milliseconds after the epoch. */
tm_instant tm_instant_from_ms(int64_t ms);
/** The instant v units after the epoch, per units in a second (1, 1000, ..., 1e9). */
tm_instant tm_instant_from_units(int64_t v, int64_t per_second);
/**
 * t in units of 1/per_second s: the floor, or the ceiling when ceil is set.
 * False (and *out untouched) when the result does not fit in int64.
 */
bool tm_instant_to_units(tm_instant t, int64_t per_second, bool ceil, int64_t *out);

/** Days since 1970-01-01 of a proleptic Gregorian date (no validation). */
int64_t tm_days_from_civil(int64_t y, unsigned m, unsigned d);
void tm_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
/** floor(a / b) for b > 0. */
static inline int64_t tm_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/**
 * Parses an RFC 3339 / ISO 8601 timestamp: `YYYY-MM-DD`, optionally followed
 * by `T`, `t` or a space and `HH:MM[:SS[.fraction]]`, optionally followed by a
 * zone: `Z`, `z`, `+HH:MM`, `+HHMM`, `+HH`, or ` UTC`/`UTC`. Without a zone
 * the wall-clock time is taken as UTC and *has_zone_out is false. The result
 * is the instant in UTC. TM_EINVALID on malformed text.
 */
int tm_time_parse(const char *s, size_t len, int64_t *sec_out, int32_t *nsec_out,
                  bool *has_zone_out) TM_WARN_UNUSED;

/**
 * Formats an instant as RFC 3339 in UTC: `2026-11-30T03:08:13.5Z`.
 * frac_digits: 0..9 fixed digits, or -1 for the fewest that are exact.
 * with_zone: append `Z`. Returns the length written (truncated to cap-1).
 */
size_t tm_time_print(char *buf, size_t cap, int64_t sec, int32_t nsec, int frac_digits,
                      bool with_zone);
/** Formats a date (days since epoch) as YYYY-MM-DD. */
size_t tm_date_print(char *buf, size_t cap, int64_t days);
/** The current time as in log lines: millisecond precision, `Z`. */
size_t tm_time_print_now(char *buf, size_t cap);

/** Wall clock, milliseconds since the epoch. */
int64_t tm_now_ms(void);
/** Wall clock, (seconds, nanoseconds). */
void tm_now(int64_t *sec_out, int32_t *nsec_out);
/** Monotonic clock, nanoseconds. */
int64_t tm_monotonic_ns(void);

#endif
