/*
 * decide.c - the refresh decision (refresh layer). See decide.h.
 *
 * The rules, in order (issue 7):
 *   full                                  -> FULL, save the snapshot read (B10)
 *   not a snapshot source                 -> BY_TIME (A2)
 *   one-off refresh_sql, computed columns -> BY_TIME, not a fallback (B11)
 *   keyed, not cayenne, key lacks time    -> BY_TIME always, not a fallback (B1)
 *   no saved snapshot                     -> BY_TIME, not a fallback (B7, B9)
 *   table has no snapshot                 -> BY_TIME, table_has_no_snapshot (B5)
 *   table uuid changed                    -> BY_TIME, table_replaced (B5)
 *   saved not an ancestor of current      -> BY_TIME, snapshot_not_ancestor (B5)
 *   current == saved                      -> NOTHING (B3)
 *   walk the snapshots after the saved one (B4):
 *     append                 -> its added files
 *     replace                -> nothing
 *     delete / no added file -> nothing
 *     overwrite              -> added files, newest per key, on keyed cayenne
 *                               whose key lacks time_column; else BY_TIME,
 *                               rows_rewritten_without_primary_key
 * Every BY_TIME read of a snapshot source saves the current snapshot, so the
 * next refresh follows snapshots again (B5).
 */
#include "refresh/decide.h"

#include <string.h>

#include "util/alloc.h"

const char *tm_fallback_name(tm_fallback f) {
  switch (f) {
    case TM_FALLBACK_NONE: return "";
    case TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT: return "table_has_no_snapshot";
    case TM_FALLBACK_TABLE_REPLACED: return "table_replaced";
    case TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR: return "snapshot_not_ancestor";
    case TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY: return "rows_rewritten_without_primary_key";
  }
  return "";
}

const char *tm_read_kind_name(tm_read_kind k) {
  switch (k) {
    case TM_READ_FULL: return "full";
    case TM_READ_BY_TIME: return "time";
    case TM_READ_SNAPSHOTS: return "snapshots";
    case TM_READ_NOTHING: return "nothing";
  }
  return "?";
}

static const tm_snapshot_ref *find_snapshot(const tm_snapshot_ref *snaps, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (snaps[i].id == id) return &snaps[i];
  return NULL;
}

bool tm_snapshot_is_ancestor(const tm_snapshot_ref *snaps, size_t n, int64_t current, int64_t id) {
  const tm_snapshot_ref *s = find_snapshot(snaps, n, current);
  /* Bounded by n steps, so a cycle in hostile metadata cannot loop forever. */
  for (size_t steps = 0; s && steps <= n; steps++) {
    if (s->id == id) return true;
    if (!s->has_parent) return false;
    s = find_snapshot(snaps, n, s->parent_id);
  }
  return false;
}

static bool op_is(const tm_snapshot_ref *s, const char *op) {
  return s->operation && strcmp(s->operation, op) == 0;
}

static void by_time(tm_decision *d, tm_fallback fallback, const char *why) {
  d->kind = TM_READ_BY_TIME;
  d->fallback = fallback;
  d->why = why;
}

/* Keyed, on an engine other than cayenne, with a key that lacks time_column (B1). */
static bool keyed_arrival_without_time(const tm_decide_input *in) {
  return in->def->acceleration.n_primary_key > 0 && !in->engine_newest_by_time &&
         !tm_dataset_key_includes_time(in->def);
}

/* Keyed cayenne whose key lacks time_column: can follow overwrites (B4). */
static bool can_follow_overwrite(const tm_decide_input *in) {
  return in->engine_newest_by_time && in->def->acceleration.n_primary_key > 0 &&
         !tm_dataset_key_includes_time(in->def);
}

/*
 * Walks from current back to saved (exclusive) and lists the steps oldest
 * first. Called only when saved is a proper ancestor of current.
 */
static int walk(const tm_decide_input *in, tm_decision *d, tm_error *err) {
  const tm_table_info *t = &in->table;
  size_t count = 0;
  const tm_snapshot_ref *s = find_snapshot(t->snapshots, t->n_snapshots, t->current_id);
  while (s && s->id != in->saved.id && count <= t->n_snapshots) {
    count++;
    s = s->has_parent ? find_snapshot(t->snapshots, t->n_snapshots, s->parent_id) : NULL;
  }
  d->steps = tm_calloc(count ? count : 1, sizeof *d->steps);
  if (!d->steps) return tm_error_nomem(err);
  d->n_steps = count;
  s = find_snapshot(t->snapshots, t->n_snapshots, t->current_id);
  for (size_t i = count; i > 0; i--) {
    tm_snapshot_step *step = &d->steps[i - 1];
    step->id = s->id;
    step->operation = s->operation;
    if (op_is(s, "replace") || op_is(s, "delete") || s->added_data_files == 0) {
      step->rule = TM_SNAP_SKIP;
    } else if (op_is(s, "append")) {
      step->rule = TM_SNAP_ADDED_FILES;
    } else {
      /* overwrite, or an operation we do not know: rows may have been rewritten. */
      if (!can_follow_overwrite(in)) {
        tm_free(d->steps);
        d->steps = NULL;
        d->n_steps = 0;
        by_time(d, TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY,
                "a snapshot rewrote rows and the acceleration cannot keep the newest per key");
        return TM_OK;
      }
      step->rule = TM_SNAP_ADDED_FILES_BY_KEY;
    }
    s = s->has_parent ? find_snapshot(t->snapshots, t->n_snapshots, s->parent_id) : NULL;
  }
  d->kind = TM_READ_SNAPSHOTS;
  d->why = "following snapshots";
  return TM_OK;
}

int tm_refresh_decide(const tm_decide_input *in, tm_decision *out, tm_error *err) {
  tm_decision d;
  memset(&d, 0, sizeof d);
  const tm_table_info *t = &in->table;
  bool snapshot_source = t->follows_snapshots;
  /* After any read of a snapshot source that saw its current snapshot, save it. */
  if (snapshot_source && t->has_current) {
    d.save_snapshot = true;
    d.snapshot_to_save = t->current_id;
  }

  if (in->full) {
    d.kind = TM_READ_FULL;
    d.why = "full refresh";
  } else if (!snapshot_source) {
    by_time(&d, TM_FALLBACK_NONE, "append by time");
  } else if (in->one_off_sql) {
    by_time(&d, TM_FALLBACK_NONE, "a one-off refresh_sql reads by time (B11)");
  } else if (in->computed_columns) {
    by_time(&d, TM_FALLBACK_NONE, "a dataset with computed columns reads by time (B11)");
  } else if (keyed_arrival_without_time(in)) {
    by_time(&d, TM_FALLBACK_NONE,
            "keyed on an arrival-order engine without time_column in the key: reads by time (B1)");
    d.save_snapshot = false;
  } else if (!in->saved.present) {
    by_time(&d, TM_FALLBACK_NONE, "no saved snapshot: the first refresh reads by time (B7)");
  } else if (!t->has_current) {
    by_time(&d, TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT, "the table has no snapshot");
  } else if (in->saved.uuid && t->uuid && strcmp(in->saved.uuid, t->uuid) != 0) {
    by_time(&d, TM_FALLBACK_TABLE_REPLACED, "the table's uuid changed");
  } else if (!tm_snapshot_is_ancestor(t->snapshots, t->n_snapshots, t->current_id,
                                      in->saved.id)) {
    by_time(&d, TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR,
            "the saved snapshot is not an ancestor of the current one");
  } else if (t->current_id == in->saved.id) {
    d.kind = TM_READ_NOTHING;
    d.why = "no snapshot newer than the saved one (B3)";
  } else {
    int rc = walk(in, &d, err);
    if (rc < 0) return rc;
  }
  *out = d;
  return TM_OK;
}

void tm_decision_dispose(tm_decision *d) {
  tm_free(d->steps);
  memset(d, 0, sizeof *d);
}
