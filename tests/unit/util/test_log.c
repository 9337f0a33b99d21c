/* Unit tests for util/log: levels, line format, sink (SPEC 1.5). */
#include "tm_test.h"
#include "util/log.h"

static char g_last[4096];
static int g_lines;

static void sink(tm_log_level level, const char *line, void *payload) {
  (void)level;
  (void)payload;
  snprintf(g_last, sizeof g_last, "%s", line);
  g_lines++;
}

TM_TEST(log_levels_and_format) {
  tm_log_set_sink(sink, NULL);
  tm_log_set_level(TM_LOG_INFO);
  g_lines = 0;
  tm_log(TM_LOG_DEBUG, "events", "hidden");
  TM_ASSERT_INT_EQ(g_lines, 0);
  tm_log(TM_LOG_WARN, "events", "fallback: %s\nsecond line", "table_replaced");
  TM_ASSERT_INT_EQ(g_lines, 1);
  /* 2026-11-30T03:08:13.123Z WARN  [events] fallback: ... */
  TM_ASSERT(strlen(g_last) > 25 && g_last[4] == '-' && g_last[10] == 'T' && g_last[23] == 'Z');
  TM_ASSERT_CONTAINS(g_last, " WARN  [events] fallback: table_replaced second line");
  tm_log_set_level(TM_LOG_DEBUG);
  tm_log(TM_LOG_DEBUG, NULL, "now shown");
  TM_ASSERT_INT_EQ(g_lines, 2);
  TM_ASSERT_CONTAINS(g_last, "DEBUG now shown");
  tm_log_level lvl;
  TM_ASSERT_RC(tm_log_level_parse("warning", &lvl), TM_OK);
  TM_ASSERT_INT_EQ(lvl, TM_LOG_WARN);
  TM_ASSERT_RC(tm_log_level_parse("loud", &lvl), TM_EINVALID);
  tm_log_set_sink(NULL, NULL);
  tm_log_set_level(TM_LOG_INFO);
}
