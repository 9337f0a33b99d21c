/*
 * plan.c - the refresh plan (refresh layer). See plan.h.
 *
 * What to read, in order (issue 7):
 *   full                                  -> FULL, save the snapshot read (B10)
 *   not a snapshot source                 -> BY_TIME (A2)
 *   one-off refresh_sql                   -> BY_TIME, not a fallback (A10, B11)
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
 *
 * refresh_mode: changes (SPEC E1-E6; plan_changes), every read carries the
 * rows' provenance:
 *   full, or no saved snapshot            -> FULL of the current snapshot (E1)
 *   a changes read met an expired file    -> FULL, files_expired (E5)
 *   table has no snapshot                 -> FULL, table_has_no_snapshot
 *   table uuid changed                    -> FULL, table_replaced (E5)
 *   saved snapshot no longer listed       -> FULL, files_expired (E5)
 *   saved not an ancestor of current      -> FULL, snapshot_not_ancestor (E5)
 *   current == saved                      -> NOTHING (B3)
 *   newer snapshots                       -> CHANGES from the saved one (E2)
 *
 * How it reads (plan_read):
 *   FULL       the current rows, deletes applied, as of the saved snapshot,
 *              into a transaction that replaces every row (A11, B12)
 *   BY_TIME    the current rows above the bound from the high-water mark
 *              (A2; strict, or >= mark - overlap (A3); day-floored and
 *              inclusive for day columns (A5)), the partition column's bound
 *              added (A6); keyless data de-duplicates a re-read window (A3);
 *              deletes applied (B12)
 *   SNAPSHOTS  the files the steps added, deletes never applied (B12)
 *   NOTHING    no transaction
 * Spice's refresh_data_window narrows every read (full, by time, snapshots)
 * to rows with time_column > now - window (day-floored and inclusive for
 * day columns): one more bound term, and the row filter uses whichever of
 * the two bounds is later (docs/REFRESH.md "Data window").
 *
 * tidemark computes no column of its own (Spice's dataset `columns:` carries
 * descriptions and embedding options, which tidemark ignores with a
 * warning), so B11's computed-columns half has no input here; a
 * refresh_sql's expressions are evaluated on whatever rows are read
 * (docs/REFRESH.md).
 */
#include "refresh/plan.h"

#include <string.h>

#include "util/alloc.h"
#include "util/time.h"

const char *tm_fallback_name(tm_fallback f) {
  switch (f) {
    case TM_FALLBACK_NONE: return "";
    case TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT: return "table_has_no_snapshot";
    case TM_FALLBACK_TABLE_REPLACED: return "table_replaced";
    case TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR: return "snapshot_not_ancestor";
    case TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY: return "rows_rewritten_without_primary_key";
    case TM_FALLBACK_FILES_EXPIRED: return "files_expired";
  }
  return "";
}

const char *tm_read_kind_name(tm_read_kind k) {
  switch (k) {
    case TM_READ_FULL: return "full";
    case TM_READ_BY_TIME: return "time";
    case TM_READ_SNAPSHOTS: return "snapshots";
    case TM_READ_NOTHING: return "nothing";
    case TM_READ_CHANGES: return "changes";
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

static void by_time(tm_refresh_plan *d, tm_fallback fallback, const char *why) {
  d->kind = TM_READ_BY_TIME;
  d->fallback = fallback;
  d->why = why;
}

/* Keyed, with a key that lacks time_column (the rule then decides B1 and B4). */
static bool keyed_without_time(const tm_plan_input *in) {
  return in->def->acceleration.n_primary_key > 0 && !tm_dataset_key_includes_time(in->def);
}

/* Keyed on an arrival-order engine (not cayenne), key without time_column (B1). */
static bool keyed_arrival_without_time(const tm_plan_input *in) {
  return keyed_without_time(in) && in->conflict_rule != TM_ENGINE_RULE_NEWEST_BY_TIME;
}

/* Keyed cayenne whose key lacks time_column: can follow overwrites (B4). */
static bool can_follow_overwrite(const tm_plan_input *in) {
  return keyed_without_time(in) && in->conflict_rule == TM_ENGINE_RULE_NEWEST_BY_TIME;
}

/*
 * Walks from current back to saved (exclusive) and lists the steps oldest
 * first. Called only when saved is a proper ancestor of current.
 */
static int walk(const tm_plan_input *in, tm_refresh_plan *d, tm_error *err) {
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
    if (in->def->acceleration.refresh_mode == TM_REFRESH_CHANGES) {
      step->rule = TM_SNAP_CHANGES; /* every operation: its changes are read (E2) */
    } else if (op_is(s, "replace") || op_is(s, "delete") || s->added_data_files == 0) {
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

static void reload(tm_refresh_plan *d, tm_fallback fallback, const char *why) {
  d->kind = TM_READ_FULL;
  d->fallback = fallback;
  d->why = why;
}

/* refresh_mode: changes (SPEC E1-E5): the table at the top of this file. */
static int plan_changes(const tm_plan_input *in, bool full, tm_refresh_plan *d, tm_error *err) {
  const tm_table_info *t = &in->table;
  d->provenance = true;
  if (!t->follows_snapshots)
    return tm_error_set(err, TM_EINVALID, "dataset %s: refresh_mode: changes needs an Iceberg table "
                        "(this source is not one)", in->def->name);
  if (t->has_current) {
    d->save_snapshot = true;
    d->snapshot_to_save = t->current_id;
    d->save_uuid = t->uuid;
  }
  if (full) {
    reload(d, TM_FALLBACK_NONE, "full refresh");
  } else if (!in->saved.present) {
    reload(d, TM_FALLBACK_NONE, "no saved snapshot: the first refresh reads the table in full (E1)");
  } else if (in->files_expired) {
    reload(d, TM_FALLBACK_FILES_EXPIRED, "a file the changes need was expired (E5)");
  } else if (!t->has_current) {
    reload(d, TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT, "the table has no snapshot");
  } else if (in->saved.uuid && t->uuid && strcmp(in->saved.uuid, t->uuid) != 0) {
    reload(d, TM_FALLBACK_TABLE_REPLACED, "the table's uuid changed (E5)");
  } else if (!find_snapshot(t->snapshots, t->n_snapshots, in->saved.id)) {
    reload(d, TM_FALLBACK_FILES_EXPIRED, "the saved snapshot was expired from the table (E5)");
  } else if (!tm_snapshot_is_ancestor(t->snapshots, t->n_snapshots, t->current_id, in->saved.id)) {
    reload(d, TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR,
           "the saved snapshot is not an ancestor of the current one (E5)");
  } else if (t->current_id == in->saved.id) {
    d->kind = TM_READ_NOTHING;
    d->why = "no snapshot newer than the saved one (B3)";
  } else {
    TM_TRY(walk(in, d, err));
    d->kind = TM_READ_CHANGES;
    d->fallback = TM_FALLBACK_NONE;
    d->why = "applying the changes of each new snapshot (E2)";
    d->has_changes_from = true;
    d->changes_from = in->saved.id;
  }
  return TM_OK;
}

/* What to read (the table at the top of this file). */
static int plan_kind(const tm_plan_input *in, bool full, tm_refresh_plan *d, tm_error *err) {
  const tm_table_info *t = &in->table;
  bool snapshot_source = t->follows_snapshots;
  if (in->def->acceleration.refresh_mode == TM_REFRESH_CHANGES) return plan_changes(in, full, d, err);
  /* After any read of a snapshot source that saw its current snapshot, save it. */
  if (snapshot_source && t->has_current) {
    d->save_snapshot = true;
    d->snapshot_to_save = t->current_id;
  }
  if (full) {
    d->kind = TM_READ_FULL;
    d->why = "full refresh";
  } else if (!snapshot_source) {
    by_time(d, TM_FALLBACK_NONE, "append by time");
  } else if (in->one_off_sql) {
    by_time(d, TM_FALLBACK_NONE, "a one-off refresh_sql reads by time (B11)");
  } else if (keyed_arrival_without_time(in)) {
    by_time(d, TM_FALLBACK_NONE,
            "keyed on an arrival-order engine without time_column in the key: reads by time (B1)");
    d->save_snapshot = false;
  } else if (!in->saved.present) {
    by_time(d, TM_FALLBACK_NONE, "no saved snapshot: the first refresh reads by time (B7)");
  } else if (!t->has_current) {
    by_time(d, TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT, "the table has no snapshot");
  } else if (in->saved.uuid && t->uuid && strcmp(in->saved.uuid, t->uuid) != 0) {
    by_time(d, TM_FALLBACK_TABLE_REPLACED, "the table's uuid changed");
  } else if (!tm_snapshot_is_ancestor(t->snapshots, t->n_snapshots, t->current_id,
                                      in->saved.id)) {
    by_time(d, TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR,
            "the saved snapshot is not an ancestor of the current one");
  } else if (t->current_id == in->saved.id) {
    d->kind = TM_READ_NOTHING;
    d->why = "no snapshot newer than the saved one (B3)";
  } else {
    TM_TRY(walk(in, d, err));
  }
  if (d->save_snapshot) d->save_uuid = t->uuid;
  return TM_OK;
}

/* The dataset's time column in the rows' schema (A1's fit is checked again: refresh_sql may retype it). */
static int plan_time_column(const tm_plan_input *in, tm_refresh_plan *d, tm_error *err) {
  const char *name = in->def->time_column;
  if (!name) return TM_OK;
  int idx = tm_schema_find(in->schema, name);
  if (idx < 0)
    return tm_error_set(err, TM_EINVALID, "time_column '%s' is not a column of the data", name);
  TM_TRY(tm_time_column_init(&d->tc, name, in->schema->cols[idx].type, in->def->time_format, err));
  d->has_time_column = true;
  return TM_OK;
}

/* The bound of a read by time and its predicate terms (A2-A6), and A3's de-duplication. */
static int plan_bound(const tm_plan_input *in, tm_refresh_plan *d, tm_error *err) {
  const tm_dataset_def *def = in->def;
  if (!d->has_time_column) return TM_OK;
  if (in->hwm_state == TM_HWM_UNKNOWN) {
    d->needs_high_water_mark = true;
    return TM_OK;
  }
  if (in->hwm_state == TM_HWM_EMPTY) return TM_OK; /* A2: an empty acceleration reads everything */
  int64_t overlap = def->acceleration.has_overlap ? def->acceleration.refresh_append_overlap_ms : 0;
  d->bound = tm_time_bound_for_append(&d->tc, in->hwm, overlap);
  TM_TRY(tm_time_bound_to_predicate(&d->tc, &d->bound, &d->predicate, err));
  /* A6: a partition column prunes the source's files; through refresh_sql
   * the source is scanned by the statement, which the column may not reach. */
  int pidx = def->time_partition_column && !in->through_sql
                 ? tm_schema_find(in->schema, def->time_partition_column)
                 : -1;
  if (pidx >= 0) {
    tm_time_column part;
    TM_TRY(tm_time_column_init(&part, def->time_partition_column, in->schema->cols[pidx].type,
                               def->time_partition_format, err));
    TM_TRY(tm_time_bound_to_partition_predicate(&part, &d->bound, &d->predicate, err));
  }
  /* Keyless data needs the multiset de-duplication (A3); keyed data is
   * resolved by the engine's key rule, which keeps re-reads idempotent (an
   * identical row is "unchanged"; equal-time ties replay in source order),
   * so removing re-read rows first would change the outcome. */
  d->dedup = tm_time_bound_rereads(&d->bound, overlap) && def->acceleration.n_primary_key == 0;
  return TM_OK;
}

/* refresh_data_window: the window's bound, when later than the read's own. */
static int plan_window(const tm_plan_input *in, tm_refresh_plan *d, tm_error *err) {
  int64_t window = in->def->acceleration.refresh_data_window_ms;
  if (!window || !d->reads || !d->has_time_column || d->needs_high_water_mark) return TM_OK;
  tm_time_bound wb = tm_time_bound_for_append(&d->tc, tm_instant_from_ms(in->now_ms - window), 0);
  if (d->bound.active && tm_instant_cmp(wb.instant, d->bound.instant) <= 0) return TM_OK;
  /* Later than the read's bound: rows it keeps are above that bound too, and
   * a re-read window (A3) shrinks to it, so the de-duplication stays right. */
  TM_TRY(tm_time_bound_to_predicate(&d->tc, &wb, &d->predicate, err));
  d->bound = wb;
  return TM_OK;
}

/* How the plan's kind reads and writes. */
static int plan_read(const tm_plan_input *in, tm_refresh_plan *d, tm_error *err) {
  d->writes = d->kind != TM_READ_NOTHING;
  d->txn = d->kind == TM_READ_FULL ? TM_TXN_REPLACE_ALL : TM_TXN_APPEND;
  if (d->provenance) {
    /* refresh_mode changes: one scan of the changes (from nothing for FULL), with provenance. */
    d->reads = d->kind != TM_READ_NOTHING;
    d->scan_mode = TM_SCAN_CHANGES;
    d->apply_deletes = true;
    d->has_as_of = d->save_snapshot;
    d->as_of_snapshot = d->snapshot_to_save;
    return TM_OK;
  }
  switch (d->kind) {
    case TM_READ_NOTHING: return TM_OK;
    case TM_READ_CHANGES: return TM_OK;
    case TM_READ_FULL:
    case TM_READ_BY_TIME:
      d->reads = true;
      d->scan_mode = TM_SCAN_CURRENT;
      d->apply_deletes = true; /* B12: the current rows */
      d->has_as_of = d->save_snapshot;
      d->as_of_snapshot = d->snapshot_to_save;
      return d->kind == TM_READ_BY_TIME ? plan_bound(in, d, err) : TM_OK;
    case TM_READ_SNAPSHOTS:
      d->scan_mode = TM_SCAN_ADDED_BY;
      d->apply_deletes = false; /* B12: append never retracts a stored row */
      d->snapshot_ids = tm_calloc(d->n_steps ? d->n_steps : 1, sizeof *d->snapshot_ids);
      if (!d->snapshot_ids) return tm_error_nomem(err);
      for (size_t i = 0; i < d->n_steps; i++)
        if (d->steps[i].rule != TM_SNAP_SKIP) d->snapshot_ids[d->n_snapshot_ids++] = d->steps[i].id;
      d->reads = d->n_snapshot_ids > 0;
      return TM_OK;
  }
  return TM_OK;
}

int tm_refresh_plan_make(const tm_plan_input *in, tm_refresh_plan *out, tm_error *err) {
  tm_refresh_plan d;
  memset(&d, 0, sizeof d);
  tm_predicate_init(&d.predicate);
  const tm_acceleration_def *acc = &in->def->acceleration;
  bool full = in->full || acc->refresh_mode == TM_REFRESH_FULL;
  /* A full refresh of a changes dataset still carries provenance (E1). */
  int rc = plan_time_column(in, &d, err);
  if (rc == TM_OK) rc = plan_kind(in, full, &d, err);
  if (rc == TM_OK) rc = plan_read(in, &d, err);
  if (rc == TM_OK) rc = plan_window(in, &d, err);
  if (rc < 0) {
    tm_refresh_plan_dispose(&d);
    return rc;
  }
  /* An append that adds nothing to a stored acceleration and changes no
   * state commits nothing: no log record, no file synced. */
  d.skip_unchanged_commit = d.kind != TM_READ_FULL && in->has_engine && acc->mode == TM_ENGINE_FILE;
  /* B6: a fallback warns when its reason differs from the last one logged. */
  d.warn_fallback = d.fallback != TM_FALLBACK_NONE && d.fallback != in->last_fallback;
  *out = d;
  return TM_OK;
}

void tm_refresh_plan_dispose(tm_refresh_plan *p) {
  tm_free(p->steps);
  tm_free(p->snapshot_ids);
  tm_predicate_dispose(&p->predicate);
  memset(p, 0, sizeof *p);
}

void tm_refresh_plan_scan_request(const tm_refresh_plan *p, tm_scan_request *out) {
  tm_scan_request_init(out);
  out->mode = p->scan_mode;
  out->predicate = p->predicate.n_terms ? &p->predicate : NULL;
  out->apply_deletes = p->apply_deletes;
  out->has_as_of = p->has_as_of;
  out->as_of_snapshot = p->as_of_snapshot;
  out->snapshot_ids = p->snapshot_ids;
  out->n_snapshot_ids = p->n_snapshot_ids;
  out->has_changes_from = p->has_changes_from;
  out->changes_from = p->changes_from;
}

static const char *rule_name(tm_snapshot_rule r) {
  switch (r) {
    case TM_SNAP_SKIP: return "skipped";
    case TM_SNAP_ADDED_FILES: return "its added files";
    case TM_SNAP_ADDED_FILES_BY_KEY: return "its added files, newest per key";
    case TM_SNAP_CHANGES: return "its changes (E2)";
  }
  return "?";
}

int tm_refresh_plan_describe(const tm_refresh_plan *p, tm_buf *out, tm_error *err) {
  TM_TRY(tm_buf_printf(out, err, "read: %s (%s)\n", tm_read_kind_name(p->kind), p->why));
  if (p->fallback != TM_FALLBACK_NONE)
    TM_TRY(tm_buf_printf(out, err, "fallback: %s%s\n", tm_fallback_name(p->fallback),
                         p->warn_fallback ? " (warns: the reason changed)" : ""));
  if (p->kind == TM_READ_BY_TIME && p->has_time_column) {
    char tname[64], when[64];
    tm_type_name(&p->tc.type, tname, sizeof tname);
    TM_TRY(tm_buf_printf(out, err, "time column: %s (%s, %s%s)\n", p->tc.name, tname,
                         tm_time_format_name(p->tc.format), p->tc.day_granular ? ", by day" : ""));
    if (p->needs_high_water_mark) {
      TM_TRY(tm_buf_printf(out, err, "bound: from the high-water mark, not read yet\n"));
    } else if (!p->bound.active) {
      TM_TRY(tm_buf_printf(out, err, "bound: none (the acceleration is empty: every row)\n"));
    } else {
      tm_time_print(when, sizeof when, p->bound.instant.sec, p->bound.instant.nsec, -1, true);
      TM_TRY(tm_buf_printf(out, err, "bound: %s %s %s\n", p->tc.name, p->bound.inclusive ? ">=" : ">", when));
    }
    TM_TRY(tm_buf_printf(out, err, "de-duplication: %s\n",
                         p->dedup ? "the re-read window against the stored rows (A3)" : "none"));
  }
  if (p->predicate.n_terms) {
    TM_TRY(tm_buf_printf(out, err, "source filter: "));
    TM_TRY(tm_predicate_describe(&p->predicate, out, err));
    TM_TRY(tm_buf_printf(out, err, "\n"));
  }
  for (size_t i = 0; i < p->n_steps; i++)
    TM_TRY(tm_buf_printf(out, err, "snapshot: %lld %s: %s\n", (long long)p->steps[i].id,
                         p->steps[i].operation ? p->steps[i].operation : "?", rule_name(p->steps[i].rule)));
  if (p->provenance && p->reads) {
    TM_TRY(tm_buf_printf(out, err, "provenance: _tm_seq, _tm_file, _tm_pos (E4)\n"));
    if (p->has_changes_from)
      TM_TRY(tm_buf_printf(out, err, "changes since snapshot: %lld\n", (long long)p->changes_from));
  }
  if (p->reads) {
    TM_TRY(tm_buf_printf(out, err, "deletes: %s\n", p->apply_deletes ? "applied" : "not applied (B12)"));
    if (p->has_as_of) TM_TRY(tm_buf_printf(out, err, "as of snapshot: %lld\n", (long long)p->as_of_snapshot));
  }
  TM_TRY(tm_buf_printf(out, err, "transaction: %s\n",
                       !p->writes ? "none" : p->txn == TM_TXN_REPLACE_ALL ? "replaces every row" : "appends"));
  if (p->writes && p->save_snapshot)
    TM_TRY(tm_buf_printf(out, err, "saves: snapshot %lld%s%s\n", (long long)p->snapshot_to_save,
                         p->save_uuid ? " of table " : "", p->save_uuid ? p->save_uuid : ""));
  if (p->writes && p->skip_unchanged_commit)
    TM_TRY(tm_buf_printf(out, err, "commit: skipped when no row and no state changes\n"));
  return TM_OK;
}

bool tm_refresh_plan_empty_source_reads_nothing(const tm_dataset_def *d, bool full, bool has_engine) {
  return has_engine && d->acceleration.refresh_mode == TM_REFRESH_APPEND && !full;
}

bool tm_refresh_plan_warns_late_updates(const tm_dataset_def *d, tm_engine_rule rule) {
  const tm_acceleration_def *acc = &d->acceleration;
  /* Late updates are an append refresh's concern: a full refresh reads every row again. */
  return d->has_acceleration && acc->enabled && acc->refresh_mode == TM_REFRESH_APPEND &&
         rule != TM_ENGINE_RULE_NEWEST_BY_TIME && acc->n_primary_key > 0 &&
         !tm_dataset_key_includes_time(d) && !acc->has_overlap;
}
