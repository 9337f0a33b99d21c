/*
 * cron.h - cron schedules: Spice's refresh_cron (util layer).
 *
 * The syntax is the one Spice documents (it uses the croner crate): five
 * fields "minute hour day-of-month month day-of-week", or six with seconds
 * first; `*`, `?`, lists `a,b`, ranges `a-b`, steps `*\/n`, `a-b/n`, `a/n`;
 * month names JAN-DEC and day names SUN-SAT (any case); day-of-week 0-7 with
 * 0 and 7 Sunday; `L` (last day of the month), `nW` (the weekday nearest day
 * n, within the month) and `LW` in day-of-month; `nL` / `n#L` (the last
 * weekday n of the month) and `n#k` (the k-th, 1-5) in day-of-week; and the
 * nicknames @yearly, @annually, @monthly, @weekly, @daily, @hourly.
 *
 * As in Vixie cron and croner's default: when both day fields are
 * restricted (neither starts with `*` or `?`), a day matches if either does;
 * otherwise it must match both (so with a plain `*` the other decides).
 *
 * Schedules are evaluated in the local time zone of the process (TZ), as
 * Spice's runtime does. A local time that does not exist (a daylight-saving
 * gap) is skipped; one that exists twice fires once.
 */
#ifndef TM_UTIL_CRON_H
#define TM_UTIL_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

/** The longest schedule text accepted. */
#define TM_CRON_TEXT_MAX 256

/** A parsed schedule; plain data, no ownership. */
typedef struct tm_cron {
  uint64_t seconds;          /* bit s: second s (0-59) */
  uint64_t minutes;          /* bit m: minute m (0-59) */
  uint32_t hours;            /* bit h: hour h (0-23) */
  uint32_t days;             /* bit d: day of month d (1-31) */
  uint32_t nearest_weekday;  /* bit d: `dW`, the weekday nearest day d */
  uint16_t months;           /* bit m: month m (1-12) */
  uint8_t weekdays;          /* bit w: weekday w (0 = Sunday) */
  uint8_t last_weekdays;     /* bit w: `wL`, the last weekday w of the month */
  uint8_t nth_weekdays[5];   /* [k-1] bit w: `w#k`, the k-th weekday w of the month */
  bool last_day;             /* `L` in day-of-month */
  bool last_weekday_of_month;/* `LW` */
  bool dom_any, dow_any;     /* the field started with `*` or `?` */
} tm_cron;

/**
 * Parses text into *out. TM_EINVALID with a message naming the field and
 * the cause; a schedule that can never fire (e.g. "0 0 30 2 *") is refused.
 */
int tm_cron_parse(const char *text, tm_cron *out, tm_error *err) TM_WARN_UNUSED;

/**
 * The first time strictly after `after` (seconds since the epoch) that c
 * fires, in local time. TM_ENOTFOUND when none within eight years (a
 * schedule tm_cron_parse accepted always has one).
 */
int tm_cron_next(const tm_cron *c, int64_t after, int64_t *next) TM_WARN_UNUSED;

#endif
