/* Unit tests for util/time: durations, civil dates, RFC 3339 (SPEC 1.1, A4). */
#include "tm_test.h"
#include "util/time.h"

TM_TEST(duration_units) {
  tm_error err;
  int64_t ms;
  TM_ASSERT_OK(tm_duration_parse("500ms", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 500);
  TM_ASSERT_OK(tm_duration_parse("10s", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 10000);
  TM_ASSERT_OK(tm_duration_parse("5m", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 300000);
  TM_ASSERT_OK(tm_duration_parse("2h", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 7200000);
  TM_ASSERT_OK(tm_duration_parse("1d", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 86400000);
  TM_ASSERT_OK(tm_duration_parse("1h30m", &ms, &err), &err);
  TM_ASSERT_INT_EQ(ms, 5400000);
}

TM_TEST(duration_rejects_garbage) {
  tm_error err;
  int64_t ms;
  const char *bad[] = {"", "10", "s", "10x", "-5s", "1.5s", "10 s", "99999999999999999999d"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_error_init(&err);
    TM_ASSERT_MSG(tm_duration_parse(bad[i], &ms, &err) == TM_EINVALID, "accepted '%s'", bad[i]);
    TM_ASSERT(err.message[0] != '\0');
  }
}

TM_TEST(duration_format_round_trip) {
  char buf[64];
  tm_duration_format(5400000, buf, sizeof buf);
  TM_ASSERT_STR_EQ(buf, "1h30m");
  tm_duration_format(500, buf, sizeof buf);
  TM_ASSERT_STR_EQ(buf, "500ms");
  tm_duration_format(0, buf, sizeof buf);
  TM_ASSERT_STR_EQ(buf, "0s");
}

TM_TEST(civil_dates) {
  TM_ASSERT_INT_EQ(tm_days_from_civil(1970, 1, 1), 0);
  TM_ASSERT_INT_EQ(tm_days_from_civil(2026, 11, 30), 20787);
  TM_ASSERT_INT_EQ(tm_days_from_civil(1969, 12, 31), -1);
  TM_ASSERT_INT_EQ(tm_days_from_civil(1, 1, 1), -719162);
  for (int64_t d = -800000; d < 800000; d += 997) {
    int64_t y;
    unsigned m, dd;
    tm_civil_from_days(d, &y, &m, &dd);
    TM_ASSERT_INT_EQ(tm_days_from_civil(y, m, dd), d);
  }
}

TM_TEST(rfc3339_zone_spellings_A4) {
  const char *same[] = {"2026-11-30T10:00:00Z", "2026-11-30T10:00:00+00:00",
                        "2026-11-30 10:00:00 UTC", "2026-11-30T11:00:00+01:00",
                        "2026-11-30T05:30:00-04:30", "2026-11-30t10:00:00z",
                        "2026-11-30T10:00:00+0000", "2026-11-30T10:00Z"};
  int64_t want = tm_days_from_civil(2026, 11, 30) * 86400 + 36000;
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    int64_t sec;
    int32_t nsec;
    bool zone;
    TM_ASSERT_MSG(tm_time_parse(same[i], strlen(same[i]), &sec, &nsec, &zone) == TM_OK,
                  "rejected %s", same[i]);
    TM_ASSERT_MSG(sec == want, "%s parsed to %lld", same[i], (long long)sec);
    TM_ASSERT(zone);
  }
}

TM_TEST(rfc3339_fraction_and_naive) {
  int64_t sec;
  int32_t nsec;
  bool zone;
  TM_ASSERT_RC(tm_time_parse("2026-01-02T03:04:05.123456789", 29, &sec, &nsec, &zone), TM_OK);
  TM_ASSERT_INT_EQ(nsec, 123456789);
  TM_ASSERT(!zone);
  TM_ASSERT_RC(tm_time_parse("2026-01-02T03:04:05.5", 21, &sec, &nsec, &zone), TM_OK);
  TM_ASSERT_INT_EQ(nsec, 500000000);
  TM_ASSERT_RC(tm_time_parse("2026-01-02", 10, &sec, &nsec, &zone), TM_OK);
  TM_ASSERT_INT_EQ(sec, tm_days_from_civil(2026, 1, 2) * 86400);
  const char *bad[] = {"2026-13-01", "2026-02-30", "2026-01-02T25:00:00", "2026-01-02T10:00:00+",
                       "x2026-01-02", "2026-01-02T10:00:00.", "2026-1-2", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    TM_ASSERT_MSG(tm_time_parse(bad[i], strlen(bad[i]), &sec, &nsec, &zone) == TM_EINVALID,
                  "accepted '%s'", bad[i]);
}

TM_TEST(rfc3339_format) {
  char buf[64];
  int64_t sec = tm_days_from_civil(2026, 11, 30) * 86400 + 3 * 3600 + 8 * 60 + 13;
  tm_time_print(buf, sizeof buf, sec, 500000000, -1, true);
  TM_ASSERT_STR_EQ(buf, "2026-11-30T03:08:13.5Z");
  tm_time_print(buf, sizeof buf, sec, 0, -1, false);
  TM_ASSERT_STR_EQ(buf, "2026-11-30T03:08:13");
  tm_time_print(buf, sizeof buf, -1, 0, 3, true);
  TM_ASSERT_STR_EQ(buf, "1969-12-31T23:59:59.000Z");
}

TM_TEST(time_format_names) {
  tm_time_format f;
  TM_ASSERT_RC(tm_time_format_parse("timestamptz", &f), TM_OK);
  TM_ASSERT_INT_EQ(f, TM_TIME_FORMAT_TIMESTAMPTZ);
  TM_ASSERT_RC(tm_time_format_parse("iso8601", &f), TM_OK);
  TM_ASSERT_INT_EQ(f, TM_TIME_FORMAT_ISO8601);
  TM_ASSERT_RC(tm_time_format_parse("weekly", &f), TM_EINVALID);
}

TM_TEST(instant_arithmetic_saturates) {
  tm_instant t = {INT64_MIN / 2 + 5, 0};
  tm_instant r = tm_instant_minus_ms(t, INT64_MAX);
  TM_ASSERT(r.sec <= t.sec);
  TM_ASSERT_INT_EQ(tm_instant_to_ms((tm_instant){INT64_MAX / 10, 0}), INT64_MAX);
}

/* Before the epoch the seconds floor and the nanoseconds stay positive. */
TM_TEST(instant_from_units_floors_before_the_epoch) {
  tm_instant t = tm_instant_from_ms(-1);
  TM_ASSERT_INT_EQ(t.sec, -1);
  TM_ASSERT_INT_EQ(t.nsec, 999000000);
  t = tm_instant_from_units(-1500001, 1000000);
  TM_ASSERT_INT_EQ(t.sec, -2);
  TM_ASSERT_INT_EQ(t.nsec, 499999000);
  t = tm_instant_from_units(1714557600123456789, 1000000000);
  TM_ASSERT_INT_EQ(t.sec, 1714557600);
  TM_ASSERT_INT_EQ(t.nsec, 123456789);
  TM_ASSERT_INT_EQ(tm_instant_to_ms(tm_instant_from_ms(-12345)), -12345);
  TM_ASSERT(tm_instant_cmp(tm_instant_from_ms(-1), tm_instant_from_ms(0)) < 0);
  TM_ASSERT_INT_EQ(tm_instant_cmp((tm_instant){5, 1}, (tm_instant){5, 1}), 0);
}

/* The other direction, as the readers, the pushdown and the bounds use it. */
TM_TEST(instant_to_units_floor_ceiling_and_overflow) {
  int64_t v = 0;
  tm_instant t = {-2, 500000001};
  TM_ASSERT(tm_instant_to_units(t, 1000, false, &v) && v == -1500);
  TM_ASSERT(tm_instant_to_units(t, 1000, true, &v) && v == -1499);
  TM_ASSERT(tm_instant_to_units(t, 1000000000, false, &v) && v == -1499999999);
  TM_ASSERT(tm_instant_to_units((tm_instant){7, 0}, 1000000, true, &v) && v == 7000000);
  v = 42;
  TM_ASSERT(!tm_instant_to_units((tm_instant){INT64_MAX / 1000, 0}, 1000000, false, &v));
  TM_ASSERT_INT_EQ(v, 42);
  TM_ASSERT(!tm_instant_to_units((tm_instant){INT64_MIN / 1000, 0}, 1000000, false, &v));
}

/* The extremes of int64 (Impala's nanosecond timestamps reach them) do not overflow. */
TM_TEST(instant_from_units_at_the_int64_extremes) {
  tm_instant t = tm_instant_from_units(INT64_MIN, 1000000000);
  TM_ASSERT_INT_EQ(t.sec, INT64_MIN / 1000000000 - 1);
  TM_ASSERT(t.nsec >= 0 && t.nsec < 1000000000);
  t = tm_instant_from_units(INT64_MAX, 1000000000);
  TM_ASSERT_INT_EQ(t.sec, INT64_MAX / 1000000000);
  TM_ASSERT_INT_EQ(t.nsec, INT64_MAX % 1000000000);
  t = tm_instant_from_units(INT64_MIN, 1);
  TM_ASSERT(t.sec == INT64_MIN && t.nsec == 0);
}
