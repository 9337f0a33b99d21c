/*
 * Unit tests for refresh/plan: the refresh plan as a table, one row per rule,
 * each named by its SPEC ID (A2-A6, A9-A11, B1-B12, E1, E2, E5). A row gives what
 * differs from the common input and what the plan must say; the runner
 * names the row that fails. The last test checks that every ID the plan
 * implements has a row.
 */
#include "refresh/plan.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

/* A history: 1 append <- 2 append <- 3 replace <- 4 delete <- 5 overwrite; 9 <- 1 (rollback). */
static const tm_snapshot_ref k_history[] = {
    {1, false, 0, "append", 1},   {2, true, 1, "append", 2},    {3, true, 2, "replace", 1},
    {4, true, 3, "delete", 0},    {5, true, 4, "overwrite", 1}, {9, true, 1, "append", 1},
};

/* The high-water mark of every row that knows it: 2024-05-01T10:00:00Z. */
#define HWM_SEC INT64_C(1714557600)

typedef enum mark { MARK_KNOWN = 0, MARK_EMPTY, MARK_UNREAD } mark;

/* What differs from the common input: cayenne, keyless, time column ts, an
 * Iceberg table at snapshot 2 (uuid u-1) with snapshot 1 saved, the mark known. */
typedef struct given {
  tm_engine_kind engine;
  const char *key;          /* one key column, or NULL */
  const char *time_column;  /* NULL: ts (timestamp us, UTC) */
  const char *partition;    /* time_partition_column, or NULL */
  bool file_source;         /* not a snapshot source */
  int64_t current;          /* 0: 2 */
  bool no_current;
  const char *uuid;         /* NULL: u-1 */
  bool unsaved;
  int64_t saved;            /* 0: 1 */
  bool full, full_mode, one_off_sql, through_sql;
  mark mark;
  int64_t overlap_ms;
  tm_fallback last_fallback;
  bool new_engine;          /* the rows go to an engine opened for this refresh */
  bool memory;
  bool changes;             /* refresh_mode: changes (E1-E6) */
  bool files_expired;       /* a changes read met an expired file (E5) */
} given;

/* Tri-state expectations: 0 does not matter. */
enum { ANY = 0, YES, NO };

typedef struct want {
  tm_read_kind kind;
  tm_fallback fallback;
  int64_t save;             /* the snapshot saved; -1: none; 0: does not matter */
  const char *save_uuid;
  const char *bound;        /* "> 2024-...Z", "none", "unread"; NULL: does not matter */
  int dedup, deletes, warn, skip_commit, writes;
  int txn_replace;
  const char *steps;        /* one letter per step: A added files, K newest per key, - skipped */
  const char *pred_has, *pred_lacks;
  int provenance;           /* the read carries provenance (E4) */
  int64_t changes_from;     /* the changes since this snapshot; 0: does not matter */
} want;

typedef struct plan_case {
  const char *id;
  const char *what;
  given in;
  want out;
} plan_case;

static const plan_case k_cases[] = {
    {"A2", "a file source reads by time, strictly above the mark",
     {.file_source = true}, {.kind = TM_READ_BY_TIME, .save = -1, .bound = "> 2024-05-01T10:00:00Z",
      .dedup = NO, .writes = YES, .txn_replace = NO, .pred_has = "ts >"}},
    {"A2", "an empty acceleration reads every row",
     {.file_source = true, .mark = MARK_EMPTY}, {.kind = TM_READ_BY_TIME, .bound = "none", .dedup = NO}},
    {"A2", "a mark not read yet is asked for",
     {.file_source = true, .mark = MARK_UNREAD}, {.kind = TM_READ_BY_TIME, .bound = "unread"}},
    {"A3", "an overlap re-reads the window inclusively and de-duplicates keyless rows",
     {.file_source = true, .overlap_ms = 60000},
     {.kind = TM_READ_BY_TIME, .bound = ">= 2024-05-01T09:59:00Z", .dedup = YES}},
    {"A3", "keyed rows are left to the engine's key rule, not de-duplicated",
     {.file_source = true, .overlap_ms = 60000, .key = "id"},
     {.kind = TM_READ_BY_TIME, .bound = ">= 2024-05-01T09:59:00Z", .dedup = NO}},
    {"A5", "a day column compares inclusively from the start of the mark's day",
     {.file_source = true, .time_column = "day"},
     {.kind = TM_READ_BY_TIME, .bound = ">= 2024-05-01T00:00:00Z", .dedup = YES}},
    {"A6", "the partition column's floored bound prunes the source",
     {.file_source = true, .partition = "day"},
     {.kind = TM_READ_BY_TIME, .bound = "> 2024-05-01T10:00:00Z", .pred_has = "day >="}},
    {"A6", "through refresh_sql the partition column does not filter the source",
     {.file_source = true, .partition = "day", .through_sql = true},
     {.kind = TM_READ_BY_TIME, .pred_has = "ts >", .pred_lacks = "day"}},
    {"A10", "a one-off refresh_sql of a snapshot source reads by time, not a fallback",
     {.one_off_sql = true, .uuid = "u-2"},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_NONE, .save = 2, .deletes = YES}},
    {"B11", "a one-off refresh_sql is not a fallback even when the table changed",
     {.one_off_sql = true, .saved = 77}, {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_NONE, .warn = NO}},
    {"A11", "a one-off full refresh replaces every row, deletes applied",
     {.full = true, .current = 5},
     {.kind = TM_READ_FULL, .save = 5, .deletes = YES, .txn_replace = YES, .skip_commit = NO,
      .bound = NULL, .dedup = NO}},
    {"A11", "refresh_mode: full replaces every row of a file source",
     {.file_source = true, .full_mode = true}, {.kind = TM_READ_FULL, .save = -1, .txn_replace = YES}},
    {"B10", "a full refresh saves the snapshot it read",
     {.full = true, .current = 4}, {.kind = TM_READ_FULL, .save = 4, .save_uuid = "u-1"}},
    {"B1", "keyed on an arrival engine without time in the key: by time, nothing saved",
     {.engine = TM_ENGINE_SQLITE, .key = "id"},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_NONE, .save = -1}},
    {"B1", "keyed on an arrival engine with time in the key: follows snapshots",
     {.engine = TM_ENGINE_SQLITE, .key = "ts"}, {.kind = TM_READ_SNAPSHOTS, .steps = "A"}},
    {"B2", "the snapshots after the saved one are followed, oldest first",
     {.current = 4}, {.kind = TM_READ_SNAPSHOTS, .fallback = TM_FALLBACK_NONE, .steps = "A--", .save = 4}},
    {"B3", "an unchanged table reads nothing and opens no transaction",
     {.current = 1}, {.kind = TM_READ_NOTHING, .writes = NO, .steps = ""}},
    {"B4", "append adds its files; replace and delete add nothing",
     {.current = 4}, {.kind = TM_READ_SNAPSHOTS, .steps = "A--"}},
    {"B4", "an overwrite on keyed cayenne keeps the newest per key",
     {.key = "id", .current = 5}, {.kind = TM_READ_SNAPSHOTS, .steps = "A--K", .save = 5}},
    {"B4", "an overwrite without a key falls back and saves the current snapshot",
     {.current = 5},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY, .save = 5}},
    {"B4", "an overwrite with time in the key falls back",
     {.key = "ts", .current = 5},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY}},
    {"B5", "a rollback: the saved snapshot is not an ancestor",
     {.saved = 5, .current = 9},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR, .save = 9,
      .deletes = YES}},
    {"B5", "expired history: the saved snapshot is gone",
     {.saved = 77}, {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR}},
    {"B5", "a replaced table (uuid changed)",
     {.uuid = "u-2"}, {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_TABLE_REPLACED, .save_uuid = "u-2"}},
    {"B5", "a table without a snapshot: by time, nothing saved",
     {.no_current = true}, {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT, .save = -1}},
    {"E1", "changes: the first refresh reads the current snapshot in full, with provenance",
     {.changes = true, .unsaved = true},
     {.kind = TM_READ_FULL, .txn_replace = YES, .save = 2, .provenance = YES, .writes = YES}},
    {"E1", "changes: a one-off full refresh keeps provenance",
     {.changes = true, .full = true, .current = 5},
     {.kind = TM_READ_FULL, .txn_replace = YES, .save = 5, .provenance = YES}},
    {"E2", "changes: every snapshot since the saved one, whatever its operation, in one transaction",
     {.changes = true, .current = 5},
     {.kind = TM_READ_CHANGES, .steps = "CCCC", .save = 5, .changes_from = 1, .txn_replace = NO,
      .writes = YES, .provenance = YES}},
    {"E2", "changes: keyed on an arrival engine without time in the key still applies changes",
     {.changes = true, .engine = TM_ENGINE_DUCKDB, .key = "id", .current = 5},
     {.kind = TM_READ_CHANGES, .steps = "CCCC", .save = 5, .changes_from = 1}},
    {"E2", "changes: an unchanged table reads nothing",
     {.changes = true, .current = 1}, {.kind = TM_READ_NOTHING, .writes = NO, .steps = ""}},
    {"E5", "changes: a rollback reloads in full (snapshot_not_ancestor)",
     {.changes = true, .saved = 5, .current = 9},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR, .save = 9,
      .txn_replace = YES, .provenance = YES}},
    {"E5", "changes: an expired saved snapshot reloads in full (files_expired)",
     {.changes = true, .saved = 77},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_FILES_EXPIRED, .save = 2, .txn_replace = YES}},
    {"E5", "changes: a file the changes needed was expired: reload (files_expired)",
     {.changes = true, .current = 5, .files_expired = true},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_FILES_EXPIRED, .save = 5, .txn_replace = YES}},
    {"E5", "changes: a replaced table reloads in full (table_replaced)",
     {.changes = true, .uuid = "u-2"},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_TABLE_REPLACED, .save_uuid = "u-2", .txn_replace = YES}},
    {"E5", "changes: a table without a snapshot reloads (to nothing), nothing saved",
     {.changes = true, .no_current = true},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT, .save = -1}},
    {"E5", "changes: a fallback whose reason changed warns",
     {.changes = true, .saved = 77, .last_fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_FILES_EXPIRED, .warn = YES}},
    {"E5", "changes: the same fallback again does not warn",
     {.changes = true, .saved = 77, .last_fallback = TM_FALLBACK_FILES_EXPIRED},
     {.kind = TM_READ_FULL, .fallback = TM_FALLBACK_FILES_EXPIRED, .warn = NO}},
    {"B6", "a fallback whose reason changed warns",
     {.uuid = "u-2", .last_fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR},
     {.fallback = TM_FALLBACK_TABLE_REPLACED, .warn = YES}},
    {"B6", "a fallback with the last reason again does not warn",
     {.uuid = "u-2", .last_fallback = TM_FALLBACK_TABLE_REPLACED},
     {.fallback = TM_FALLBACK_TABLE_REPLACED, .warn = NO}},
    {"B7", "the first refresh (nothing saved) reads by time and is not a fallback",
     {.unsaved = true, .uuid = "anything"},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_NONE, .save = 2, .warn = NO}},
    {"B8", "the snapshot and the table uuid are committed with the rows",
     {.current = 4}, {.save = 4, .save_uuid = "u-1", .writes = YES}},
    {"B9", "a rebuilt acceleration (state discarded) reads as a first refresh",
     {.unsaved = true, .new_engine = true},
     {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_NONE, .skip_commit = NO}},
    {"B12", "snapshots never apply deletes; by time and full do",
     {.current = 2}, {.kind = TM_READ_SNAPSHOTS, .deletes = NO}},
    {"B12", "by time reads the current rows with deletes applied",
     {.saved = 77}, {.kind = TM_READ_BY_TIME, .fallback = TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR, .deletes = YES}},
    {"no-op", "an append to stored rows may skip a commit that changes nothing",
     {.current = 1}, {.skip_commit = YES}},
    {"no-op", "a full refresh always commits",
     {.full = true}, {.skip_commit = NO}},
    {"no-op", "memory mode always commits (nothing to sync)",
     {.memory = true, .engine = TM_ENGINE_ARROW, .file_source = true}, {.skip_commit = NO}},
};

typedef struct fixture {
  tm_dataset_def def;
  tm_schema schema;
  tm_plan_input in;
  tm_refresh_plan p;
} fixture;

static char **one_name(const char *name) {
  char **v = tm_calloc(1, sizeof *v);
  v[0] = tm_strdup(name);
  return v;
}

static void setup(fixture *f, const given *g) {
  tm_error err;
  memset(f, 0, sizeof *f);
  tm_schema_init(&f->schema);
  TM_ASSERT_OK(tm_schema_add(&f->schema, "id", tm_type_of(TM_TYPE_INT64), false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&f->schema, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&f->schema, "day", tm_type_of(TM_TYPE_DATE32), true, -1, &err), &err);
  tm_dataset_def_init(&f->def);
  f->def.name = tm_strdup("events");
  f->def.time_column = tm_strdup(g->time_column ? g->time_column : "ts");
  if (g->partition) f->def.time_partition_column = tm_strdup(g->partition);
  f->def.has_acceleration = true;
  tm_acceleration_def *acc = &f->def.acceleration;
  acc->enabled = true;
  acc->engine = g->engine;
  acc->mode = g->memory ? TM_ENGINE_MEMORY : TM_ENGINE_FILE;
  acc->refresh_mode = g->full_mode ? TM_REFRESH_FULL : g->changes ? TM_REFRESH_CHANGES : TM_REFRESH_APPEND;
  acc->has_overlap = g->overlap_ms > 0;
  acc->refresh_append_overlap_ms = g->overlap_ms;
  if (g->key) {
    acc->primary_key = one_name(g->key);
    acc->n_primary_key = 1;
  }
  tm_plan_input *in = &f->in;
  in->def = &f->def;
  in->conflict_rule = tm_engine_kind_traits(g->engine)->conflict_rule;
  in->has_engine = !g->new_engine;
  in->full = g->full;
  in->one_off_sql = g->one_off_sql;
  in->through_sql = g->through_sql || g->one_off_sql;
  in->schema = &f->schema;
  if (!g->file_source)
    in->table = (tm_table_info){true, !g->no_current, g->current ? g->current : 2,
                                g->uuid ? g->uuid : "u-1", k_history,
                                sizeof k_history / sizeof k_history[0]};
  if (!g->unsaved) in->saved = (tm_saved_snapshot){true, g->saved ? g->saved : 1, "u-1"};
  in->hwm_state = g->mark == MARK_KNOWN ? TM_HWM_KNOWN : g->mark == MARK_EMPTY ? TM_HWM_EMPTY : TM_HWM_UNKNOWN;
  in->hwm = (tm_instant){HWM_SEC, 0};
  in->last_fallback = g->last_fallback;
  in->files_expired = g->files_expired;
}

static void teardown(fixture *f) {
  tm_refresh_plan_dispose(&f->p);
  tm_dataset_def_dispose(&f->def);
  tm_schema_dispose(&f->schema);
}

static void check_tri(const plan_case *c, const char *what, int expect, bool got) {
  if (expect != ANY) TM_ASSERT_MSG((expect == YES) == got, "%s (%s): %s is %s", c->id, c->what, what, got ? "yes" : "no");
}

static void bound_text(const tm_refresh_plan *p, char *buf, size_t cap) {
  if (p->needs_high_water_mark) {
    snprintf(buf, cap, "unread");
  } else if (!p->bound.active) {
    snprintf(buf, cap, "none");
  } else {
    char when[64];
    tm_time_print(when, sizeof when, p->bound.instant.sec, p->bound.instant.nsec, -1, true);
    snprintf(buf, cap, "%s %s", p->bound.inclusive ? ">=" : ">", when);
  }
}

static void check_case(const plan_case *c) {
  fixture f;
  tm_error err;
  setup(&f, &c->in);
  TM_ASSERT_OK(tm_refresh_plan_make(&f.in, &f.p, &err), &err);
  const tm_refresh_plan *p = &f.p;
  const want *w = &c->out;
  /* kind 0 is FULL: a row that does not care about the kind names no fallback either. */
  if (w->kind != TM_READ_FULL || c->in.full || c->in.full_mode || c->in.changes)
    TM_ASSERT_MSG(p->kind == w->kind, "%s (%s): reads %s, not %s", c->id, c->what,
                  tm_read_kind_name(p->kind), tm_read_kind_name(w->kind));
  if (w->fallback != TM_FALLBACK_NONE || w->kind == TM_READ_BY_TIME)
    TM_ASSERT_MSG(p->fallback == w->fallback, "%s (%s): fallback '%s', not '%s'", c->id, c->what,
                  tm_fallback_name(p->fallback), tm_fallback_name(w->fallback));
  if (w->save == -1) TM_ASSERT_MSG(!p->save_snapshot, "%s (%s): saves a snapshot", c->id, c->what);
  if (w->save > 0)
    TM_ASSERT_MSG(p->save_snapshot && p->snapshot_to_save == w->save, "%s (%s): saves %lld, not %lld",
                  c->id, c->what, p->save_snapshot ? (long long)p->snapshot_to_save : -1LL,
                  (long long)w->save);
  if (w->save > 0 && p->reads && p->scan_mode == TM_SCAN_CURRENT)
    TM_ASSERT_MSG(p->has_as_of && p->as_of_snapshot == w->save, "%s (%s): reads another snapshot",
                  c->id, c->what);
  if (w->save_uuid)
    TM_ASSERT_MSG(p->save_uuid && !strcmp(p->save_uuid, w->save_uuid), "%s (%s): saves uuid %s",
                  c->id, c->what, p->save_uuid ? p->save_uuid : "(none)");
  if (w->bound) {
    char got[96];
    bound_text(p, got, sizeof got);
    TM_ASSERT_MSG(!strcmp(got, w->bound), "%s (%s): bound '%s', not '%s'", c->id, c->what, got, w->bound);
  }
  check_tri(c, "de-duplication", w->dedup, p->dedup);
  check_tri(c, "applying deletes", w->deletes, p->apply_deletes);
  check_tri(c, "the fallback warning", w->warn, p->warn_fallback);
  check_tri(c, "skipping an unchanged commit", w->skip_commit, p->skip_unchanged_commit);
  check_tri(c, "opening a transaction", w->writes, p->writes);
  check_tri(c, "replacing every row", w->txn_replace, p->writes && p->txn == TM_TXN_REPLACE_ALL);
  if (w->steps) {
    char got[16] = "";
    size_t n_read = 0;
    for (size_t i = 0; i < p->n_steps && i + 1 < sizeof got; i++) {
      tm_snapshot_rule r = p->steps[i].rule;
      got[i] = r == TM_SNAP_SKIP ? '-' : r == TM_SNAP_ADDED_FILES ? 'A' : r == TM_SNAP_CHANGES ? 'C' : 'K';
      n_read += r != TM_SNAP_SKIP;
    }
    TM_ASSERT_MSG(!strcmp(got, w->steps), "%s (%s): steps '%s', not '%s'", c->id, c->what, got, w->steps);
    if (!p->provenance)
      TM_ASSERT_MSG(p->n_snapshot_ids == n_read && p->reads == (n_read > 0),
                    "%s (%s): reads %zu snapshots", c->id, c->what, p->n_snapshot_ids);
  }
  check_tri(c, "provenance", w->provenance, p->provenance);
  if (p->provenance && p->reads)
    TM_ASSERT_MSG(p->scan_mode == TM_SCAN_CHANGES && p->has_as_of == p->save_snapshot,
                  "%s (%s): a changes dataset reads through its changes scan", c->id, c->what);
  if (w->changes_from)
    TM_ASSERT_MSG(p->has_changes_from && p->changes_from == w->changes_from,
                  "%s (%s): changes since %lld", c->id, c->what,
                  p->has_changes_from ? (long long)p->changes_from : -1LL);
  if (p->kind == TM_READ_FULL && p->provenance)
    TM_ASSERT_MSG(!p->has_changes_from, "%s (%s): a full read starts from nothing", c->id, c->what);
  if (w->pred_has || w->pred_lacks) {
    tm_buf b = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_predicate_describe(&p->predicate, &b, &err), &err);
    const char *text = tm_buf_cstr(&b);
    if (w->pred_has) TM_ASSERT_MSG(strstr(text, w->pred_has), "%s (%s): filter '%s'", c->id, c->what, text);
    if (w->pred_lacks) TM_ASSERT_MSG(!strstr(text, w->pred_lacks), "%s (%s): filter '%s'", c->id, c->what, text);
    tm_buf_dispose(&b);
  }
  teardown(&f);
}

TM_TEST(every_rule_of_the_plan_table) {
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) check_case(&k_cases[i]);
  tm_test__note("%zu rows", sizeof k_cases / sizeof k_cases[0]);
}

/* Every SPEC ID the plan implements has a row (plan.c's header names them). */
TM_TEST(every_planned_spec_id_has_a_row) {
  static const char *const ids[] = {"A2", "A3", "A5", "A6", "A10", "A11", "B1", "B2", "B3", "B4",
                                    "B5", "B6", "B7", "B8", "B9", "B10", "B11", "B12", "E1",
                                    "E2", "E5", NULL};
  for (size_t k = 0; ids[k]; k++) {
    bool found = false;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
      if (!strcmp(k_cases[i].id, ids[k])) found = true;
    TM_ASSERT_MSG(found, "no row for %s", ids[k]);
  }
}

/* A2: the executor plans twice; the second plan, with the mark, is complete. */
TM_TEST(A2_the_mark_asked_for_completes_the_plan) {
  fixture f;
  tm_error err;
  given g = {.file_source = true, .mark = MARK_UNREAD};
  setup(&f, &g);
  TM_ASSERT_OK(tm_refresh_plan_make(&f.in, &f.p, &err), &err);
  TM_ASSERT(f.p.needs_high_water_mark);
  TM_ASSERT(f.p.has_time_column && !strcmp(f.p.tc.name, "ts"));
  tm_refresh_plan_dispose(&f.p);
  f.in.hwm_state = TM_HWM_KNOWN;
  TM_ASSERT_OK(tm_refresh_plan_make(&f.in, &f.p, &err), &err);
  TM_ASSERT(!f.p.needs_high_water_mark && f.p.bound.active && !f.p.bound.inclusive);
  tm_scan_request sreq;
  tm_refresh_plan_scan_request(&f.p, &sreq);
  TM_ASSERT(sreq.predicate == &f.p.predicate && sreq.apply_deletes && sreq.mode == TM_SCAN_CURRENT);
  teardown(&f);
}

/* A1: a time column missing from the rows (refresh_sql dropped it) is an error naming it. */
TM_TEST(A1_time_column_not_in_the_rows_is_an_error) {
  fixture f;
  tm_error err;
  given g = {.file_source = true, .time_column = "created"};
  setup(&f, &g);
  TM_ASSERT_RC(tm_refresh_plan_make(&f.in, &f.p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "'created'");
  teardown(&f);
}

/* The explained plan names the read, the bound, the filter and what it saves. */
TM_TEST(the_plan_describes_itself) {
  fixture f;
  tm_error err;
  given g = {.unsaved = true, .partition = "day", .overlap_ms = 3600000};
  setup(&f, &g);
  TM_ASSERT_OK(tm_refresh_plan_make(&f.in, &f.p, &err), &err);
  tm_buf b = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_refresh_plan_describe(&f.p, &b, &err), &err);
  const char *t = tm_buf_cstr(&b);
  TM_ASSERT_CONTAINS(t, "read: time (no saved snapshot");
  TM_ASSERT_CONTAINS(t, "bound: ts >= 2024-05-01T09:00:00Z");
  TM_ASSERT_CONTAINS(t, "de-duplication: the re-read window");
  TM_ASSERT_CONTAINS(t, "source filter: ts >= ");
  TM_ASSERT_CONTAINS(t, "day >= ");
  TM_ASSERT_CONTAINS(t, "deletes: applied");
  TM_ASSERT_CONTAINS(t, "saves: snapshot 2 of table u-1");
  TM_ASSERT_CONTAINS(t, "transaction: appends");
  tm_buf_dispose(&b);
  teardown(&f);
}

/* A9: the late-update warning follows the engine's conflict rule, not its name. */
TM_TEST(A9_late_update_warning) {
  fixture f;
  given g = {.engine = TM_ENGINE_SQLITE, .key = "id"};
  setup(&f, &g);
  TM_ASSERT(tm_refresh_plan_warns_late_updates(&f.def, TM_ENGINE_RULE_ARRIVAL));
  TM_ASSERT(!tm_refresh_plan_warns_late_updates(&f.def, TM_ENGINE_RULE_NEWEST_BY_TIME));
  f.def.acceleration.has_overlap = true;
  TM_ASSERT(!tm_refresh_plan_warns_late_updates(&f.def, TM_ENGINE_RULE_ARRIVAL));
  teardown(&f);
  given k = {.engine = TM_ENGINE_SQLITE, .key = "ts"};
  setup(&f, &k);
  TM_ASSERT(!tm_refresh_plan_warns_late_updates(&f.def, TM_ENGINE_RULE_ARRIVAL));
  teardown(&f);
}

/* A source without data yet: an append of stored rows reads nothing; anything else fails. */
TM_TEST(empty_source_reads_nothing_only_for_an_append_of_stored_rows) {
  fixture f;
  given g = {.file_source = true};
  setup(&f, &g);
  TM_ASSERT(tm_refresh_plan_empty_source_reads_nothing(&f.def, false, true));
  TM_ASSERT(!tm_refresh_plan_empty_source_reads_nothing(&f.def, true, true));
  TM_ASSERT(!tm_refresh_plan_empty_source_reads_nothing(&f.def, false, false));
  f.def.acceleration.refresh_mode = TM_REFRESH_FULL;
  TM_ASSERT(!tm_refresh_plan_empty_source_reads_nothing(&f.def, false, true));
  teardown(&f);
}

TM_TEST(ancestry_walk_is_bounded_on_cycles) {
  const tm_snapshot_ref cyc[] = {{1, true, 2, "append", 1}, {2, true, 1, "append", 1}};
  TM_ASSERT(!tm_snapshot_is_ancestor(cyc, 2, 1, 3));
  TM_ASSERT(tm_snapshot_is_ancestor(cyc, 2, 1, 2));
}

/* E2: refresh_mode changes on a source that is not an Iceberg table is refused, naming it. */
TM_TEST(E2_changes_needs_a_snapshot_source) {
  fixture f;
  tm_error err;
  given g = {.changes = true, .file_source = true};
  setup(&f, &g);
  TM_ASSERT(tm_refresh_plan_make(&f.in, &f.p, &err) == TM_EINVALID);
  TM_ASSERT(strstr(err.message, "needs an Iceberg table") != NULL);
  teardown(&f);
}

/* E2: the explanation names the changes read and its provenance. */
TM_TEST(E2_explain_names_the_changes) {
  fixture f;
  tm_error err;
  given g = {.changes = true, .current = 4};
  setup(&f, &g);
  TM_ASSERT_OK(tm_refresh_plan_make(&f.in, &f.p, &err), &err);
  tm_buf b = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_refresh_plan_describe(&f.p, &b, &err), &err);
  const char *text = tm_buf_cstr(&b);
  TM_ASSERT(strstr(text, "read: changes") != NULL);
  TM_ASSERT(strstr(text, "changes since snapshot: 1") != NULL);
  TM_ASSERT(strstr(text, "snapshot: 3 replace: its changes (E2)") != NULL);
  tm_buf_dispose(&b);
  teardown(&f);
}
