/*
 * Unit tests for util/cron: Spice's refresh_cron schedules (croner's syntax,
 * docs/REFRESH.md "Cron schedules"). Expected instants were worked out from
 * the calendar (python's datetime), not from this code.
 */
#include <stdlib.h>
#include <time.h>

#include "tm_test.h"
#include "util/cron.h"
#include "util/time.h"

static void use_zone(const char *tz) {
  setenv("TZ", tz, 1);
  tzset();
}

/* Seconds since the epoch of a UTC civil time. */
static int64_t utc(int64_t y, unsigned mo, unsigned d, int h, int mi, int s) {
  return tm_days_from_civil(y, mo, d) * TM_SEC_PER_DAY + h * 3600 + mi * 60 + s;
}

/* The next firing of text after `after`, asserting it parses. */
static int64_t next_of(const char *text, int64_t after) {
  tm_cron c;
  tm_error err;
  tm_error_init(&err);
  if (tm_cron_parse(text, &c, &err) != TM_OK) {
    fprintf(stderr, "parse '%s': %s\n", text, err.message);
    return -1;
  }
  int64_t next = -1;
  if (tm_cron_next(&c, after, &next) != TM_OK) return -2;
  return next;
}

#define ASSERT_NEXT(text, after, want) TM_ASSERT_INT_EQ(next_of(text, after), want)

TM_TEST(spice_doc_examples) {
  use_zone("UTC");
  int64_t thu = utc(2026, 12, 3, 17, 45, 30); /* a Thursday */
  /* Spice's reference/cron.md */
  ASSERT_NEXT("0 1 * * 1", thu, utc(2026, 12, 7, 1, 0, 0));        /* 1am every Monday */
  ASSERT_NEXT("0 12 * * 1-5", thu, utc(2026, 12, 4, 12, 0, 0));    /* midday on weekdays */
  ASSERT_NEXT("0 12 * * 1-5", utc(2026, 12, 4, 12, 0, 0), utc(2026, 12, 7, 12, 0, 0));
  ASSERT_NEXT("5 * * * *", thu, utc(2026, 12, 3, 18, 5, 0));
  ASSERT_NEXT("*/10 * * * *", thu, utc(2026, 12, 3, 17, 50, 0));
  ASSERT_NEXT("30 */5 * * * *", thu, utc(2026, 12, 3, 17, 50, 30)); /* six fields: seconds */
  ASSERT_NEXT("*/10 * * * * *", thu, utc(2026, 12, 3, 17, 45, 40));
}

TM_TEST(strictly_after) {
  use_zone("UTC");
  ASSERT_NEXT("0 * * * *", utc(2026, 12, 3, 17, 0, 0), utc(2026, 12, 3, 18, 0, 0));
  ASSERT_NEXT("0 * * * *", utc(2026, 12, 3, 16, 59, 59), utc(2026, 12, 3, 17, 0, 0));
  ASSERT_NEXT("* * * * * *", utc(2026, 12, 3, 23, 59, 59), utc(2026, 12, 4, 0, 0, 0));
  /* across a year end */
  ASSERT_NEXT("0 0 1 1 *", utc(2026, 12, 3, 0, 0, 0), utc(2027, 1, 1, 0, 0, 0));
}

TM_TEST(lists_ranges_steps_names) {
  use_zone("UTC");
  int64_t t = utc(2026, 12, 3, 17, 45, 30);
  ASSERT_NEXT("0 9 * jan,Jul mon-fri", t, utc(2027, 1, 1, 9, 0, 0)); /* 2027-01-01 is a Friday */
  ASSERT_NEXT("0 9 * * SAT,sun", t, utc(2026, 12, 5, 9, 0, 0));
  ASSERT_NEXT("0 9 * * 7", t, utc(2026, 12, 6, 9, 0, 0)); /* 7 is Sunday too */
  ASSERT_NEXT("0 9 * * 0", t, utc(2026, 12, 6, 9, 0, 0));
  ASSERT_NEXT("0 9 * * 5-7", t, utc(2026, 12, 4, 9, 0, 0));
  ASSERT_NEXT("10-20/5 * * * *", t, utc(2026, 12, 3, 18, 10, 0));
  ASSERT_NEXT("50/5 * * * *", t, utc(2026, 12, 3, 17, 50, 0));
  ASSERT_NEXT("50/5 * * * *", utc(2026, 12, 3, 17, 55, 0), utc(2026, 12, 3, 18, 50, 0));
  ASSERT_NEXT("0 0,12 * * *", t, utc(2026, 12, 4, 0, 0, 0));
  ASSERT_NEXT("  0  0  *  *  *  ", t, utc(2026, 12, 4, 0, 0, 0));
  ASSERT_NEXT("0 0 * * ?", t, utc(2026, 12, 4, 0, 0, 0));
}

TM_TEST(nicknames) {
  use_zone("UTC");
  int64_t t = utc(2026, 12, 3, 17, 45, 30);
  ASSERT_NEXT("@hourly", t, utc(2026, 12, 3, 18, 0, 0));
  ASSERT_NEXT("@daily", t, utc(2026, 12, 4, 0, 0, 0));
  ASSERT_NEXT("@weekly", t, utc(2026, 12, 6, 0, 0, 0));
  ASSERT_NEXT("@monthly", t, utc(2027, 1, 1, 0, 0, 0));
  ASSERT_NEXT("@yearly", t, utc(2027, 1, 1, 0, 0, 0));
  ASSERT_NEXT("@ANNUALLY", t, utc(2027, 1, 1, 0, 0, 0));
}

/* Both day fields restricted: either matches (Vixie cron, croner's default). */
TM_TEST(day_of_month_or_day_of_week) {
  use_zone("UTC");
  ASSERT_NEXT("0 0 1 * MON", utc(2026, 12, 1, 0, 0, 0), utc(2026, 12, 7, 0, 0, 0));
  ASSERT_NEXT("0 0 1 * MON", utc(2026, 12, 28, 0, 0, 0), utc(2027, 1, 1, 0, 0, 0));
  /* one restricted ('*' in the other): it alone decides */
  ASSERT_NEXT("0 0 1 * *", utc(2026, 12, 1, 0, 0, 0), utc(2027, 1, 1, 0, 0, 0));
  ASSERT_NEXT("0 0 * * MON", utc(2026, 12, 28, 0, 0, 0), utc(2027, 1, 4, 0, 0, 0));
  /* a day field starting with '*' makes them ANDed (Vixie): a Monday that is day 1, 11, 21 or 31 */
  ASSERT_NEXT("0 0 */10 * MON", utc(2026, 12, 1, 0, 0, 0), utc(2026, 12, 21, 0, 0, 0));
}

TM_TEST(last_nearest_nth) {
  use_zone("UTC");
  ASSERT_NEXT("0 0 L * *", utc(2027, 2, 1, 0, 0, 0), utc(2027, 2, 28, 0, 0, 0));
  ASSERT_NEXT("0 0 L * *", utc(2028, 2, 1, 0, 0, 0), utc(2028, 2, 29, 0, 0, 0)); /* leap year */
  ASSERT_NEXT("0 0 L 2 *", utc(2028, 3, 1, 0, 0, 0), utc(2029, 2, 28, 0, 0, 0));
  /* 2026-11-15 is a Sunday: 15W is Monday the 16th */
  ASSERT_NEXT("0 0 15W * *", utc(2026, 11, 1, 0, 0, 0), utc(2026, 11, 16, 0, 0, 0));
  /* 2026-08-01 is a Saturday: 1W stays in August, Monday the 3rd */
  ASSERT_NEXT("0 0 1W * *", utc(2026, 7, 31, 0, 0, 0), utc(2026, 8, 3, 0, 0, 0));
  /* 2027-01-31 is a Sunday: LW is Friday the 29th; 31W stays in January too */
  ASSERT_NEXT("0 0 LW * *", utc(2027, 1, 2, 0, 0, 0), utc(2027, 1, 29, 0, 0, 0));
  ASSERT_NEXT("0 0 31W 1 *", utc(2027, 1, 2, 0, 0, 0), utc(2027, 1, 29, 0, 0, 0));
  ASSERT_NEXT("0 0 * * 5L", utc(2026, 12, 3, 0, 0, 0), utc(2026, 12, 25, 0, 0, 0));
  ASSERT_NEXT("0 0 * * FRI#L", utc(2026, 12, 3, 0, 0, 0), utc(2026, 12, 25, 0, 0, 0));
  ASSERT_NEXT("0 0 * * FRI#2", utc(2026, 12, 3, 0, 0, 0), utc(2026, 12, 11, 0, 0, 0));
  ASSERT_NEXT("0 0 * * 5#5", utc(2026, 12, 3, 0, 0, 0), utc(2027, 1, 29, 0, 0, 0));
}

TM_TEST(refusals_name_the_field) {
  use_zone("UTC");
  static const struct {
    const char *text, *want;
  } bad[] = {
      {"", "expected 5 fields"},
      {"* * * *", "got 4"},
      {"* * * * * * *", "got 7"},
      {"60 * * * *", "minute field '60'"},
      {"* 24 * * *", "hour field '24'"},
      {"* * 0 * *", "day of month field '0'"},
      {"* * * 13 *", "month field '13'"},
      {"* * * * 8", "day of week field '8'"},
      {"*/0 * * * *", "at least 1"},
      {"5-1 * * * *", "upwards"},
      {"1,,2 * * * *", "empty list item"},
      {"a * * * *", "minute field 'a'"},
      {"? * * * *", "day fields only"},
      {"0 0 32W * *", "W needs"},
      {"0 0 * * MON#6", "occurrence 1-5"},
      {"0 0 * * 9L", "L and # need"},
      {"0 0 * FEBRUARY *", "month field"},
      {"0 0 30 2 *", "never fires"},
      {"0 0 31 4,6,9,11 *", "never fires"},
      {"@every 5m", "unknown nickname"},
      {"1-", "expected 5 fields"},
      {"0 0 5-/2 * *", "bad end of range"},
      {"0 0 5/ * *", "a step needs a number"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_cron c;
    tm_error err;
    tm_error_init(&err);
    TM_ASSERT_MSG(tm_cron_parse(bad[i].text, &c, &err) == TM_EINVALID, "accepted '%s'", bad[i].text);
    TM_ASSERT_CONTAINS(err.message, bad[i].want);
  }
  char long_text[TM_CRON_TEXT_MAX + 10];
  memset(long_text, '1', sizeof long_text - 1);
  long_text[sizeof long_text - 1] = '\0';
  tm_cron c;
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_RC(tm_cron_parse(long_text, &c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "longer than");
}

/* Local time, as Spice: a daylight-saving gap is skipped, a repeated hour fires once. */
TM_TEST(local_time_and_daylight_saving) {
  use_zone("America/New_York");
  /* 09:00 local is 14:00 UTC in winter (EST, UTC-5) */
  ASSERT_NEXT("0 9 * * *", utc(2026, 12, 3, 17, 45, 30), utc(2026, 12, 4, 14, 0, 0));
  /* 2027-03-14: clocks go from 02:00 to 03:00 EDT; 02:30 does not exist that day */
  ASSERT_NEXT("30 2 * * *", utc(2027, 3, 13, 12, 0, 0), utc(2027, 3, 15, 6, 30, 0));
  /* 2027-11-07: 01:30 happens twice (EDT 05:30 UTC, EST 06:30 UTC): only the first fires */
  ASSERT_NEXT("30 1 * * *", utc(2027, 11, 7, 0, 0, 0), utc(2027, 11, 7, 5, 30, 0));
  ASSERT_NEXT("30 1 * * *", utc(2027, 11, 7, 5, 30, 0), utc(2027, 11, 8, 6, 30, 0));
  use_zone("Asia/Kolkata"); /* UTC+05:30 */
  ASSERT_NEXT("0 0 * * *", utc(2026, 12, 3, 17, 45, 30), utc(2026, 12, 3, 18, 30, 0));
  use_zone("UTC");
}
