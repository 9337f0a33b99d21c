/*
 * time.c - durations, civil dates and RFC 3339 (util layer). See time.h.
 *
 * Date arithmetic uses Howard Hinnant's published days_from_civil algorithm
 * (a public-domain description of proleptic Gregorian arithmetic).
 */
#include "util/time.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const struct {
  const char *name;
  tm_time_format format;
} k_formats[] = {
    {"timestamp", TM_TIME_FORMAT_TIMESTAMP},       {"timestamptz", TM_TIME_FORMAT_TIMESTAMPTZ},
    {"unix_seconds", TM_TIME_FORMAT_UNIX_SECONDS}, {"unix_millis", TM_TIME_FORMAT_UNIX_MILLIS},
    {"unix_nanos", TM_TIME_FORMAT_UNIX_NANOS},     {"ISO8601", TM_TIME_FORMAT_ISO8601},
    {"date", TM_TIME_FORMAT_DATE},
};

int tm_time_format_parse(const char *s, tm_time_format *out) {
  for (size_t i = 0; i < sizeof k_formats / sizeof k_formats[0]; i++) {
    if (strcasecmp(s, k_formats[i].name) == 0) {
      *out = k_formats[i].format;
      return TM_OK;
    }
  }
  return TM_EINVALID;
}

const char *tm_time_format_name(tm_time_format f) {
  for (size_t i = 0; i < sizeof k_formats / sizeof k_formats[0]; i++)
    if (k_formats[i].format == f) return k_formats[i].name;
  return "unset";
}

int tm_duration_parse(const char *s, int64_t *ms_out, tm_error *err) {
  if (!s || !*s)
    return tm_error_set(err, TM_EINVALID, "empty duration (expected e.g. 500ms, 10s, 5m, 2h, 1d)");
  int64_t total = 0;
  const char *p = s;
  while (*p) {
    if (*p < '0' || *p > '9')
      return tm_error_set(err, TM_EINVALID,
                          "bad duration '%s' (expected e.g. 500ms, 10s, 5m, 2h, 1d)", s);
    int64_t n = 0;
    while (*p >= '0' && *p <= '9') {
      if (n > (INT64_MAX - 9) / 10)
        return tm_error_set(err, TM_EINVALID, "duration '%s' is too large", s);
      n = n * 10 + (*p++ - '0');
    }
    int64_t unit;
    if (p[0] == 'm' && p[1] == 's') {
      unit = 1;
      p += 2;
    } else if (*p == 's') {
      unit = 1000;
      p++;
    } else if (*p == 'm') {
      unit = 60 * 1000;
      p++;
    } else if (*p == 'h') {
      unit = 3600 * 1000;
      p++;
    } else if (*p == 'd') {
      unit = TM_MS_PER_DAY;
      p++;
    } else {
      return tm_error_set(err, TM_EINVALID,
                          "bad duration '%s': a number needs a unit (ms, s, m, h, d)", s);
    }
    int64_t part;
    if (__builtin_mul_overflow(n, unit, &part) || __builtin_add_overflow(total, part, &total))
      return tm_error_set(err, TM_EINVALID, "duration '%s' is too large", s);
  }
  *ms_out = total;
  return TM_OK;
}

size_t tm_duration_format(int64_t ms, char *buf, size_t cap) {
  if (cap == 0) return 0;
  if (ms == 0) return (size_t)snprintf(buf, cap, "0s");
  static const struct { int64_t ms; const char *unit; } units[] = {
      {TM_MS_PER_DAY, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
  size_t n = 0;
  buf[0] = '\0';
  if (ms < 0) {
    n += (size_t)snprintf(buf, cap, "-");
    ms = -ms;
  }
  for (size_t i = 0; i < 5 && n < cap; i++) {
    if (ms >= units[i].ms) {
      n += (size_t)snprintf(buf + n, cap - n, "%lld%s", (long long)(ms / units[i].ms),
                            units[i].unit);
      ms %= units[i].ms;
    }
  }
  return n < cap ? n : cap - 1;
}

int64_t tm_days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

void tm_civil_from_days(int64_t z, int64_t *y_out, unsigned *m_out, unsigned *d_out) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  unsigned d = doy - (153 * mp + 2) / 5 + 1;
  unsigned m = mp < 10 ? mp + 3 : mp - 9;
  *y_out = y + (m <= 2);
  *m_out = m;
  *d_out = d;
}

/* Reads exactly n digits at s[*i]. */
static bool digits(const char *s, size_t len, size_t *i, int n, int *out) {
  int v = 0;
  for (int k = 0; k < n; k++) {
    if (*i >= len || s[*i] < '0' || s[*i] > '9') return false;
    v = v * 10 + (s[(*i)++] - '0');
  }
  *out = v;
  return true;
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static unsigned days_in_month(int64_t y, unsigned m) {
  static const unsigned k[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : k[m - 1];
}

int tm_time_parse(const char *s, size_t len, int64_t *sec_out, int32_t *nsec_out,
                  bool *has_zone_out) {
  size_t i = 0;
  int y, mo, d, h = 0, mi = 0, sec = 0;
  int32_t nsec = 0;
  bool has_zone = false;
  int64_t offset = 0;
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
  while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
  if (!digits(s, len, &i, 4, &y) || i >= len || s[i++] != '-') return TM_EINVALID;
  if (!digits(s, len, &i, 2, &mo) || i >= len || s[i++] != '-') return TM_EINVALID;
  if (!digits(s, len, &i, 2, &d)) return TM_EINVALID;
  if (mo < 1 || mo > 12 || d < 1 || (unsigned)d > days_in_month(y, (unsigned)mo))
    return TM_EINVALID;
  if (i < len && (s[i] == 'T' || s[i] == 't' || s[i] == ' ')) {
    i++;
    if (!digits(s, len, &i, 2, &h) || i >= len || s[i++] != ':') return TM_EINVALID;
    if (!digits(s, len, &i, 2, &mi)) return TM_EINVALID;
    if (i < len && s[i] == ':') {
      i++;
      if (!digits(s, len, &i, 2, &sec)) return TM_EINVALID;
      if (i < len && (s[i] == '.' || s[i] == ',')) {
        i++;
        int n = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
          if (n < 9) nsec = nsec * 10 + (s[i] - '0');
          n++;
          i++;
        }
        if (n == 0) return TM_EINVALID;
        for (int k = n; k < 9; k++) nsec *= 10;
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return TM_EINVALID;
    if (sec == 60) sec = 59; /* leap second: clamp, as most engines do */
    while (i < len && s[i] == ' ') i++;
    if (i < len) {
      if (s[i] == 'Z' || s[i] == 'z') {
        has_zone = true;
        i++;
      } else if (len - i == 3 && strncasecmp(s + i, "UTC", 3) == 0) {
        has_zone = true;
        i += 3;
      } else if (s[i] == '+' || s[i] == '-') {
        int sign = s[i++] == '-' ? -1 : 1;
        int oh, om = 0;
        if (!digits(s, len, &i, 2, &oh)) return TM_EINVALID;
        if (i < len && s[i] == ':') i++;
        if (i < len && !digits(s, len, &i, 2, &om)) return TM_EINVALID;
        if (oh > 23 || om > 59) return TM_EINVALID;
        offset = sign * ((int64_t)oh * 3600 + om * 60);
        has_zone = true;
      }
    }
  }
  if (i != len) return TM_EINVALID;
  int64_t days = tm_days_from_civil(y, (unsigned)mo, (unsigned)d);
  *sec_out = days * TM_SEC_PER_DAY + h * 3600 + mi * 60 + sec - offset;
  *nsec_out = nsec;
  if (has_zone_out) *has_zone_out = has_zone;
  return TM_OK;
}

size_t tm_date_print(char *buf, size_t cap, int64_t days) {
  int64_t y;
  unsigned m, d;
  tm_civil_from_days(days, &y, &m, &d);
  int n = snprintf(buf, cap, "%04lld-%02u-%02u", (long long)y, m, d);
  if (n < 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t tm_time_print(char *buf, size_t cap, int64_t sec, int32_t nsec, int frac_digits,
                      bool with_zone) {
  if (cap == 0) return 0;
  int64_t days = tm_floor_div(sec, TM_SEC_PER_DAY);
  int64_t rem = sec - days * TM_SEC_PER_DAY;
  size_t n = tm_date_print(buf, cap, days);
  int k = snprintf(buf + n, cap - n, "T%02d:%02d:%02d", (int)(rem / 3600),
                   (int)(rem / 60 % 60), (int)(rem % 60));
  if (k > 0) n += (size_t)k;
  if (n >= cap) return cap - 1;
  int digits_out = frac_digits;
  if (frac_digits < 0) {
    digits_out = 9;
    int32_t v = nsec;
    if (v == 0) digits_out = 0;
    else
      while (v % 10 == 0) {
        v /= 10;
        digits_out--;
      }
  }
  if (digits_out > 9) digits_out = 9;
  if (digits_out > 0) {
    int32_t v = nsec;
    for (int j = digits_out; j < 9; j++) v /= 10;
    k = snprintf(buf + n, cap - n, ".%0*d", digits_out, (int)v);
    if (k > 0) n += (size_t)k;
  }
  if (with_zone && n + 1 < cap) {
    buf[n++] = 'Z';
    buf[n] = '\0';
  }
  return n < cap ? n : cap - 1;
}

void tm_now(int64_t *sec_out, int32_t *nsec_out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  *sec_out = ts.tv_sec;
  *nsec_out = (int32_t)ts.tv_nsec;
}

int64_t tm_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tm_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

size_t tm_time_print_now(char *buf, size_t cap) {
  int64_t sec;
  int32_t nsec;
  tm_now(&sec, &nsec);
  return tm_time_print(buf, cap, sec, (nsec / 1000000) * 1000000, 3, true);
}

/* ---- instants ------------------------------------------------------------- */

int tm_instant_cmp(tm_instant a, tm_instant b) {
  if (a.sec != b.sec) return a.sec < b.sec ? -1 : 1;
  if (a.nsec != b.nsec) return a.nsec < b.nsec ? -1 : 1;
  return 0;
}

tm_instant tm_instant_minus_ms(tm_instant a, int64_t ms) {
  int64_t dsec = tm_floor_div(ms, 1000);
  int64_t dns = (ms - dsec * 1000) * 1000000;
  tm_instant r;
  if (__builtin_sub_overflow(a.sec, dsec, &r.sec)) {
    r.sec = dsec > 0 ? INT64_MIN / 2 : INT64_MAX / 2;
    r.nsec = 0;
    return r;
  }
  int64_t ns = a.nsec - dns;
  if (ns < 0) {
    ns += 1000000000;
    r.sec--;
  }
  r.nsec = (int32_t)ns;
  return r;
}

int64_t tm_instant_to_ms(tm_instant a) {
  int64_t ms;
  if (__builtin_mul_overflow(a.sec, 1000, &ms)) return a.sec < 0 ? INT64_MIN : INT64_MAX;
  return ms + a.nsec / 1000000;
}

tm_instant tm_instant_from_units(int64_t v, int64_t per_second) {
  /* Quotient and remainder, not v - floor * per: that overflows near INT64_MIN. */
  int64_t sec = v / per_second, rem = v % per_second;
  if (rem < 0) {
    sec--;
    rem += per_second;
  }
  return (tm_instant){sec, (int32_t)(rem * (1000000000 / per_second))};
}

tm_instant tm_instant_from_ms(int64_t ms) { return tm_instant_from_units(ms, 1000); }

bool tm_instant_to_units(tm_instant t, int64_t per_second, bool ceil, int64_t *out) {
  int64_t ns_per_unit = 1000000000 / per_second;
  int64_t v;
  bool rest = t.nsec % ns_per_unit != 0;
  if (__builtin_mul_overflow(t.sec, per_second, &v) ||
      __builtin_add_overflow(v, t.nsec / ns_per_unit + (ceil && rest ? 1 : 0), &v))
    return false;
  *out = v;
  return true;
}
