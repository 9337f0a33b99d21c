/*
 * cron.c - parsing and evaluating cron schedules (util layer; see cron.h).
 *
 * A schedule is a set of bits per field. tm_cron_next walks the calendar one
 * civil day at a time (at most eight years), and on a matching day takes the
 * first matching second of the day after the start; mktime turns it into an
 * instant, and a result whose local fields differ from the ones asked for
 * (a daylight-saving gap) is skipped.
 */
#include "util/cron.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/time.h"

#define SEARCH_DAYS (8 * 366)

typedef enum field_kind { F_SEC, F_MIN, F_HOUR, F_DOM, F_MON, F_DOW } field_kind;

typedef struct field_info {
  const char *name;
  int lo, hi;
} field_info;

static const field_info k_fields[] = {
    [F_SEC] = {"second", 0, 59},         [F_MIN] = {"minute", 0, 59},
    [F_HOUR] = {"hour", 0, 23},          [F_DOM] = {"day of month", 1, 31},
    [F_MON] = {"month", 1, 12},          [F_DOW] = {"day of week", 0, 7},
};

static const char *const k_months[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
static const char *const k_days[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

static const struct {
  const char *name, *pattern;
} k_nicknames[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@hourly", "0 * * * *"},
};

typedef struct parser {
  tm_cron *c;
  const char *text;     /* the whole schedule, for messages */
  field_kind kind;
  tm_error *err;
} parser;

static int fail(parser *p, const char *item, const char *why) {
  return tm_error_set(p->err, TM_EINVALID, "bad cron schedule '%s': %s field '%s': %s", p->text,
                      k_fields[p->kind].name, item, why);
}

/*
 * A number or (months, weekdays) a three-letter name at *s; advances *s.
 * False when there is none or it is out of the field's range.
 */
static bool parse_value(parser *p, const char **s, int *out) {
  const char *q = *s;
  if (isdigit((unsigned char)*q)) {
    int v = 0;
    while (isdigit((unsigned char)*q)) {
      if (v > 1000) return false;
      v = v * 10 + (*q++ - '0');
    }
    *out = v;
    *s = q;
    return v >= k_fields[p->kind].lo && v <= k_fields[p->kind].hi;
  }
  const char *const *names = p->kind == F_MON ? k_months : p->kind == F_DOW ? k_days : NULL;
  int n = p->kind == F_MON ? 12 : 7;
  if (!names) return false;
  for (int i = 0; i < n; i++) {
    if (strncasecmp(q, names[i], 3) == 0 && !isalpha((unsigned char)q[3])) {
      *out = p->kind == F_MON ? i + 1 : i;
      *s = q + 3;
      return true;
    }
  }
  return false;
}

static void set_bit(parser *p, int v) {
  tm_cron *c = p->c;
  switch (p->kind) {
  case F_SEC: c->seconds |= UINT64_C(1) << v; break;
  case F_MIN: c->minutes |= UINT64_C(1) << v; break;
  case F_HOUR: c->hours |= UINT32_C(1) << v; break;
  case F_DOM: c->days |= UINT32_C(1) << v; break;
  case F_MON: c->months |= (uint16_t)(1u << v); break;
  case F_DOW: c->weekdays |= (uint8_t)(1u << (v % 7)); break;
  }
}

/* The day-of-month and day-of-week specials: L, LW, nW; nL, n#k, n#L. True when item was one. */
static bool parse_special(parser *p, const char *item, int *rc) {
  tm_cron *c = p->c;
  size_t len = strlen(item);
  *rc = TM_OK;
  if (p->kind == F_DOM) {
    if (strcasecmp(item, "L") == 0) {
      c->last_day = true;
      return true;
    }
    if (strcasecmp(item, "LW") == 0) {
      c->last_weekday_of_month = true;
      return true;
    }
    if (len >= 2 && toupper((unsigned char)item[len - 1]) == 'W') {
      const char *s = item;
      int v;
      if (!parse_value(p, &s, &v) || s != item + len - 1)
        *rc = fail(p, item, "W needs a day of month 1-31 before it (e.g. 15W)");
      else c->nearest_weekday |= UINT32_C(1) << v;
      return true;
    }
    return false;
  }
  if (p->kind != F_DOW) return false;
  const char *hash = strchr(item, '#');
  bool last = len >= 2 && toupper((unsigned char)item[len - 1]) == 'L';
  if (!hash && !last) return false;
  const char *s = item;
  int w;
  if (!parse_value(p, &s, &w) || (hash ? s != hash : s != item + len - 1)) {
    *rc = fail(p, item, "L and # need a weekday 0-7 or SUN-SAT before them (e.g. 5L, FRI#2)");
    return true;
  }
  w %= 7;
  if (!hash || strcasecmp(hash + 1, "L") == 0) {
    c->last_weekdays |= (uint8_t)(1u << w);
    return true;
  }
  if (hash[1] < '1' || hash[1] > '5' || hash[2] != '\0') {
    *rc = fail(p, item, "# needs an occurrence 1-5 or L after it (e.g. MON#1)");
    return true;
  }
  c->nth_weekdays[hash[1] - '1'] |= (uint8_t)(1u << w);
  return true;
}

/* One comma-separated item: `*`, `?`, a value, a range, each with an optional /step; or a special. */
static int parse_item(parser *p, const char *item) {
  int rc;
  if (parse_special(p, item, &rc)) return rc;
  const field_info *f = &k_fields[p->kind];
  const char *s = item;
  int lo, hi, step = 1;
  bool open_range = false;
  if (*s == '*' || *s == '?') {
    if (*s == '?' && p->kind != F_DOM && p->kind != F_DOW)
      return fail(p, item, "? is allowed in the day fields only");
    s++;
    lo = f->lo;
    hi = p->kind == F_DOW ? 6 : f->hi;
  } else {
    if (!parse_value(p, &s, &lo)) {
      char why[96];
      snprintf(why, sizeof why, "expected %s%d-%d", p->kind == F_MON ? "JAN-DEC or " :
               p->kind == F_DOW ? "SUN-SAT or " : "", f->lo, f->hi);
      return fail(p, item, why);
    }
    hi = lo;
    if (*s == '-') {
      s++;
      if (!parse_value(p, &s, &hi)) return fail(p, item, "bad end of range");
      if (hi < lo) return fail(p, item, "a range must go upwards");
    } else if (*s == '/') {
      open_range = true; /* a/n: from a to the field's end */
      hi = p->kind == F_DOW ? 6 : f->hi;
    }
  }
  if (*s == '/') {
    s++;
    if (!isdigit((unsigned char)*s)) return fail(p, item, "a step needs a number");
    step = 0;
    while (isdigit((unsigned char)*s)) {
      if (step > 1000) return fail(p, item, "step too large");
      step = step * 10 + (*s++ - '0');
    }
    if (step == 0) return fail(p, item, "a step must be at least 1");
  } else if (open_range) {
    return fail(p, item, "bad item");
  }
  if (*s != '\0') return fail(p, item, "unexpected text");
  for (int v = lo; v <= hi; v += step) set_bit(p, v);
  return TM_OK;
}

static int parse_field(parser *p, field_kind kind, const char *field) {
  p->kind = kind;
  if (kind == F_DOM) p->c->dom_any = field[0] == '*' || field[0] == '?';
  if (kind == F_DOW) p->c->dow_any = field[0] == '*' || field[0] == '?';
  char item[TM_CRON_TEXT_MAX];
  const char *s = field;
  for (;;) {
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    memcpy(item, s, n);
    item[n] = '\0';
    if (n == 0) return fail(p, field, "empty list item");
    TM_TRY(parse_item(p, item));
    if (!comma) return TM_OK;
    s = comma + 1;
  }
}

int tm_cron_parse(const char *text, tm_cron *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  size_t len = strlen(text);
  if (len >= TM_CRON_TEXT_MAX)
    return tm_error_set(err, TM_EINVALID, "bad cron schedule: longer than %d characters",
                        TM_CRON_TEXT_MAX - 1);
  char buf[TM_CRON_TEXT_MAX];
  memcpy(buf, text, len + 1);
  /* Trim, then a nickname stands for its pattern. */
  char *start = buf;
  while (isspace((unsigned char)*start)) start++;
  char *end = start + strlen(start);
  while (end > start && isspace((unsigned char)end[-1])) *--end = '\0';
  if (*start == '@') {
    for (size_t i = 0; i < sizeof k_nicknames / sizeof k_nicknames[0]; i++)
      if (strcasecmp(start, k_nicknames[i].name) == 0) return tm_cron_parse(k_nicknames[i].pattern, out, err);
    return tm_error_set(err, TM_EINVALID,
                        "bad cron schedule '%s': unknown nickname (allowed: @yearly, @annually, "
                        "@monthly, @weekly, @daily, @hourly)", text);
  }
  char *fields[7];
  int n = 0;
  for (char *s = start; *s;) {
    if (n == 7) break;
    fields[n++] = s;
    while (*s && !isspace((unsigned char)*s)) s++;
    if (*s) *s++ = '\0';
    while (isspace((unsigned char)*s)) s++;
  }
  if (n != 5 && n != 6)
    return tm_error_set(err, TM_EINVALID,
                        "bad cron schedule '%s': expected 5 fields (minute hour day-of-month "
                        "month day-of-week) or 6 with seconds first, got %d", text, n);
  parser p = {out, text, F_SEC, err};
  int f = 0;
  if (n == 6) TM_TRY(parse_field(&p, F_SEC, fields[f++]));
  else out->seconds = 1; /* second 0 */
  TM_TRY(parse_field(&p, F_MIN, fields[f++]));
  TM_TRY(parse_field(&p, F_HOUR, fields[f++]));
  TM_TRY(parse_field(&p, F_DOM, fields[f++]));
  TM_TRY(parse_field(&p, F_MON, fields[f++]));
  TM_TRY(parse_field(&p, F_DOW, fields[f++]));
  /* A schedule that never fires (Feb 30) is a mistake: refuse it now, not at the first refresh. */
  int64_t next;
  if (tm_cron_next(out, (int64_t)time(NULL), &next) != TM_OK)
    return tm_error_set(err, TM_EINVALID, "bad cron schedule '%s': it never fires", text);
  return TM_OK;
}

/* ---- evaluation --------------------------------------------------------------------------- */

static unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned k[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : k[m - 1];
}

/* 0 = Sunday. */
static unsigned weekday_of(int64_t y, unsigned m, unsigned d) {
  int64_t days = tm_days_from_civil(y, m, d); /* 1970-01-01 was a Thursday */
  return (unsigned)(((days % 7) + 7 + 4) % 7);
}

/* The weekday (Mon-Fri) nearest day d of the month, never leaving it (Quartz's W). */
static unsigned nearest_weekday(int64_t y, unsigned m, unsigned d, unsigned last) {
  unsigned w = weekday_of(y, m, d);
  if (w == 6) return d == 1 ? d + 2 : d - 1;
  if (w == 0) return d == last ? d - 2 : d + 1;
  return d;
}

static bool day_matches(const tm_cron *c, int64_t y, unsigned m, unsigned d) {
  unsigned last = days_in_month(y, m), w = weekday_of(y, m, d);
  bool dom = (c->days >> d) & 1u;
  if (!dom && c->last_day) dom = d == last;
  if (!dom && c->last_weekday_of_month) dom = d == nearest_weekday(y, m, last, last);
  for (unsigned n = 1; !dom && n <= 31; n++)
    if (((c->nearest_weekday >> n) & 1u) && n <= last) dom = d == nearest_weekday(y, m, n, last);
  bool dow = (c->weekdays >> w) & 1u;
  if (!dow && ((c->last_weekdays >> w) & 1u)) dow = d + 7 > last;
  if (!dow && ((c->nth_weekdays[(d - 1) / 7] >> w) & 1u)) dow = true;
  /* Vixie's rule: a field starting with '*' makes the two ANDed, else ORed. */
  return c->dom_any || c->dow_any ? dom && dow : dom || dow;
}

/*
 * Local y-m-d h:mi:s as an instant: false when that local time does not
 * exist (a daylight-saving gap); the earlier one when it exists twice.
 */
static bool local_instant(int64_t y, unsigned m, unsigned d, int h, int mi, int s, int64_t *out) {
  bool found = false;
  for (int dst = 0; dst <= 1; dst++) {
    struct tm t = {0};
    t.tm_year = (int)(y - 1900);
    t.tm_mon = (int)m - 1;
    t.tm_mday = (int)d;
    t.tm_hour = h;
    t.tm_min = mi;
    t.tm_sec = s;
    t.tm_isdst = dst;
    time_t r = mktime(&t);
    /* mktime moves a time given with the other offset: then the fields differ. */
    if (r == (time_t)-1 || t.tm_isdst != dst || t.tm_year != (int)(y - 1900) ||
        t.tm_mon != (int)m - 1 || t.tm_mday != (int)d || t.tm_hour != h || t.tm_min != mi ||
        t.tm_sec != s)
      continue;
    if (!found || (int64_t)r < *out) *out = (int64_t)r;
    found = true;
  }
  return found;
}

int tm_cron_next(const tm_cron *c, int64_t after, int64_t *next) {
  time_t from = (time_t)(after + 1);
  struct tm lt;
  if (!localtime_r(&from, &lt)) return TM_ENOTFOUND;
  int64_t day = tm_days_from_civil(lt.tm_year + 1900, (unsigned)lt.tm_mon + 1, (unsigned)lt.tm_mday);
  int h0 = lt.tm_hour, m0 = lt.tm_min, s0 = lt.tm_sec;
  for (int i = 0; i < SEARCH_DAYS; i++, day++, h0 = m0 = s0 = 0) {
    int64_t y;
    unsigned m, d;
    tm_civil_from_days(day, &y, &m, &d);
    if (!((c->months >> m) & 1u) || !day_matches(c, y, m, d)) continue;
    for (int h = h0; h < 24; h++) {
      if (!((c->hours >> h) & 1u)) continue;
      for (int mi = h == h0 ? m0 : 0; mi < 60; mi++) {
        if (!((c->minutes >> mi) & 1u)) continue;
        for (int s = h == h0 && mi == m0 ? s0 : 0; s < 60; s++) {
          int64_t t = 0;
          if (((c->seconds >> s) & 1u) && local_instant(y, m, d, h, mi, s, &t) && t > after) {
            *next = t;
            return TM_OK;
          }
        }
      }
    }
  }
  return TM_ENOTFOUND;
}
