/*
 * status.c - one dataset's state as JSON (runtime layer). See status.h.
 */
#include "runtime/status.h"

#include <string.h>

#include "refresh/timebound.h"
#include "util/alloc.h"
#include "util/time.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  uint32_t cp = s[0] & (0x7F >> n);
  for (size_t i = 1; i < n; i++) cp = (cp << 6) | (s[i] & 0x3F);
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

json_t *tm_json_text(const char *s) {
  size_t len = strlen(s);
  char *copy = tm_malloc(len + 1);
  if (!copy) return NULL;
  size_t i = 0;
  while (i < len) {
    size_t n = utf8_seq((const unsigned char *)s + i);
    if (n == 0) {
      copy[i++] = '?';
      continue;
    }
    memcpy(copy + i, s + i, n);
    i += n;
  }
  copy[len] = '\0';
  json_t *j = json_stringn(copy, len);
  tm_free(copy);
  return j;
}

int tm_status_set_time(json_t *obj, const char *key, int64_t ms) {
  char buf[64];
  tm_instant t = tm_instant_from_ms(ms);
  tm_time_print(buf, sizeof buf, t.sec, t.nsec, 3, true);
  return json_object_set_new(obj, key, json_string(buf));
}

static json_t *int_or_null(bool has, int64_t v) { return has ? json_integer(v) : json_null(); }

/*
 * The high-water mark: the maximum of the time column in the acceleration
 * (what the next append refresh starts from, A2), as RFC 3339. ISO8601 text
 * columns take the last refresh's figure, because text order is not time
 * order across zones. Sets *found.
 */
static void high_water_mark(tm_engine *e, const tm_dataset_def *def, const tm_accel_info *info,
                            char *buf, size_t cap, bool *found) {
  *found = false;
  if (!def->time_column) return;
  if (e) {
    const tm_schema *s = tm_engine_schema(e);
    int idx = tm_schema_find(s, def->time_column);
    tm_error err;
    tm_time_column tc;
    if (idx >= 0 && s->cols[idx].type.id != TM_TYPE_UTF8 &&
        tm_time_column_init(&tc, def->time_column, s->cols[idx].type, def->time_format, &err) ==
            TM_OK) {
      tm_engine_bounds b;
      memset(&b, 0, sizeof b);
      tm_instant t;
      if (tm_engine_column_bounds(e, def->time_column, &b, &err) == TM_OK && b.found &&
          tm_value_instant(&tc.type, tc.format, &b.max, &t)) {
        tm_time_print(buf, cap, t.sec, t.nsec, -1, true);
        *found = true;
      }
      tm_engine_bounds_dispose(&b);
      if (*found) return;
    }
  }
  if (info->has_result && info->last.has_max_time) {
    tm_instant t = tm_instant_from_ms(info->last.max_time_ms);
    tm_time_print(buf, cap, t.sec, t.nsec, -1, true);
    *found = true;
  }
}

/* mode: full when the refresh replaced every row (a full refresh, or a fallback of append or
 * changes), else the dataset's own refresh_mode (a changes refresh that found nothing new is
 * still a changes refresh). */
static json_t *last_refresh_json(const tm_accel_info *info, tm_refresh_mode mode) {
  if (!info->has_result) return json_null();
  const tm_refresh_result *r = &info->last;
  json_t *o = json_object();
  if (!o) return NULL;
  tm_status_set_time(o, "started_at", r->started_ms);
  json_object_set_new(o, "mode", json_string(r->full ? "full" : tm_refresh_mode_name(mode)));
  json_object_set_new(o, "read", json_string(tm_read_kind_name(r->how)));
  json_object_set_new(o, "rows_written", json_integer(r->rows_written));
  json_object_set_new(o, "rows_deleted", json_integer(r->rows_deleted)); /* changes (E2) */
  json_object_set_new(o, "rows_read", json_integer(r->rows_read));
  json_object_set_new(o, "rows_deduplicated", json_integer(r->rows_deduplicated));
  json_object_set_new(o, "rows_superseded", json_integer(r->rows_superseded));
  json_object_set_new(o, "duration_ms", json_integer(r->duration_ms));
  const char *fb = tm_fallback_name(r->fallback);
  json_object_set_new(o, "fallback_reason", *fb ? json_string(fb) : json_null());
  json_object_set_new(o, "snapshots", json_integer(r->n_snapshots));
  json_t *ops = json_object(); /* the snapshots applied, per operation */
  if (ops) {
    const struct { const char *op; int n; } k[] = {
        {"append", r->n_append}, {"overwrite", r->n_overwrite}, {"replace", r->n_replace},
        {"delete", r->n_delete}, {"other", r->n_other}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
      if (k[i].n) json_object_set_new(ops, k[i].op, json_integer(k[i].n));
    json_object_set_new(o, "snapshot_operations", ops);
  }
  json_object_set_new(o, "files_read", json_integer(r->files_read));
  json_object_set_new(o, "files_skipped", json_integer(r->files_skipped));
  json_object_set_new(o, "row_groups_read", json_integer(r->row_groups_read));
  json_object_set_new(o, "row_groups_skipped", json_integer(r->row_groups_skipped));
  return o;
}

json_t *tm_status_json(tm_accel *a, const tm_dataset_def *def, const char *status_name) {
  json_t *o = json_object();
  if (!o) return NULL;
  bool accelerated = def->has_acceleration && def->acceleration.enabled;
  const tm_acceleration_def *acc = &def->acceleration;
  json_object_set_new(o, "name", tm_json_text(def->name));
  json_object_set_new(o, "from", tm_json_text(def->from));
  json_object_set_new(o, "acceleration_enabled", json_boolean(accelerated));
  json_object_set_new(o, "status", json_string(status_name));
  tm_accel_info info;
  memset(&info, 0, sizeof info);
  if (a) tm_accel_get_info(a, &info);
  json_object_set_new(o, "ready", json_boolean(accelerated ? info.ready : true));
  if (accelerated) {
    json_object_set_new(o, "engine", json_string(tm_engine_kind_name(acc->engine)));
    json_object_set_new(o, "mode", json_string(tm_engine_mode_name(acc->mode)));
    json_object_set_new(o, "refresh_mode", json_string(tm_refresh_mode_name(acc->refresh_mode)));
    char iv[32];
    if (acc->refresh_check_interval_ms > 0) tm_duration_format(acc->refresh_check_interval_ms, iv, sizeof iv);
    json_object_set_new(o, "refresh_check_interval",
                        acc->refresh_check_interval_ms > 0 ? json_string(iv) : json_null());
    json_object_set_new(o, "refresh_cron", acc->refresh_cron ? tm_json_text(acc->refresh_cron) : json_null());
    /* The refresh_sql in force: the config's, or one set through PATCH .../acceleration. */
    char *sql = a ? tm_accel_refresh_sql(a) : NULL;
    const char *shown = sql ? sql : acc->refresh_sql;
    json_object_set_new(o, "refresh_sql", shown ? tm_json_text(shown) : json_null());
    tm_free(sql);
  }
  json_object_set_new(o, "time_column", def->time_column ? tm_json_text(def->time_column) : json_null());
  tm_engine *e = a ? tm_accel_engine(a) : NULL;
  int64_t rows = 0;
  uint64_t size = 0;
  tm_error err;
  bool has_rows = e && tm_engine_row_count(e, &rows, &err) == TM_OK;
  bool has_size = e && tm_engine_size_bytes(e, &size, &err) == TM_OK;
  json_object_set_new(o, "rows", int_or_null(has_rows, rows));
  json_object_set_new(o, "size_bytes", int_or_null(has_size, (int64_t)size));
  char hwm[64];
  bool has_hwm;
  high_water_mark(e, def, &info, hwm, sizeof hwm, &has_hwm);
  json_object_set_new(o, "high_water_mark", has_hwm ? json_string(hwm) : json_null());
  json_object_set_new(o, "saved_snapshot_id",
                      int_or_null(info.has_saved_snapshot, info.saved_snapshot));
  /* The reason of the most recent fallback (SPEC B6), kept across restarts in
   * the state map; null when the dataset never fell back. */
  json_object_set_new(o, "last_fallback_reason",
                      info.last_fallback[0] ? json_string(info.last_fallback) : json_null());
  json_object_set_new(o, "last_refresh", last_refresh_json(&info, def->acceleration.refresh_mode));
  if (info.last_error[0]) {
    json_t *le = json_object();
    json_object_set_new(le, "message", tm_json_text(info.last_error));
    tm_status_set_time(le, "at", info.last_error_ms);
    json_object_set_new(o, "last_error", le);
  } else {
    json_object_set_new(o, "last_error", json_null());
  }
  tm_engine_release(e);
  return o;
}
