/*
 * Unit tests for refresh/decide: one case per SPEC rule (A2, A11, B1-B11).
 */
#include "refresh/decide.h"
#include "tm_test.h"
#include "util/alloc.h"

/* A history: 1 append <- 2 append <- 3 replace <- 4 delete <- 5 overwrite. */
static const tm_snapshot_ref k_history[] = {
    {1, false, 0, "append", 1},   {2, true, 1, "append", 2},    {3, true, 2, "replace", 1},
    {4, true, 3, "delete", 0},    {5, true, 4, "overwrite", 1}, {9, true, 1, "append", 1},
};

typedef struct fixture {
  tm_dataset_def def;
  tm_decide_input in;
  tm_decision d;
} fixture;

static void setup(fixture *f, tm_engine_kind engine, const char *key) {
  tm_error err;
  memset(f, 0, sizeof *f);
  tm_dataset_def_init(&f->def);
  f->def.name = tm_strdup("events");
  f->def.time_column = tm_strdup("ts");
  f->def.has_acceleration = true;
  f->def.acceleration.enabled = true;
  f->def.acceleration.engine = engine;
  f->def.acceleration.refresh_mode = TM_REFRESH_APPEND;
  if (key) {
    f->def.acceleration.primary_key = tm_calloc(1, sizeof(char *));
    f->def.acceleration.primary_key[0] = tm_strdup(key);
    f->def.acceleration.n_primary_key = 1;
  }
  f->in.def = &f->def;
  f->in.engine_newest_by_time = engine == TM_ENGINE_CAYENNE;
  f->in.table.follows_snapshots = true;
  f->in.table.has_current = true;
  f->in.table.current_id = 2;
  f->in.table.uuid = "u-1";
  f->in.table.snapshots = k_history;
  f->in.table.n_snapshots = sizeof k_history / sizeof k_history[0];
  f->in.saved.present = true;
  f->in.saved.id = 1;
  f->in.saved.uuid = "u-1";
  (void)err;
}

static void decide(fixture *f) {
  tm_error err;
  TM_ASSERT_OK(tm_refresh_decide(&f->in, &f->d, &err), &err);
}

static void teardown(fixture *f) {
  tm_decision_dispose(&f->d);
  tm_dataset_def_dispose(&f->def);
}

TM_TEST(A2_file_source_reads_by_time) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.follows_snapshots = false;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  TM_ASSERT(!f.d.save_snapshot);
  teardown(&f);
}

TM_TEST(A11_B10_full_refresh_saves_the_snapshot_it_read) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.full = true;
  f.in.table.current_id = 5;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_FULL);
  TM_ASSERT(f.d.save_snapshot);
  TM_ASSERT_INT_EQ(f.d.snapshot_to_save, 5);
  teardown(&f);
}

TM_TEST(B2_B4_append_snapshots_are_followed) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.current_id = 4;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_SNAPSHOTS);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  TM_ASSERT_INT_EQ(f.d.n_steps, 3);
  TM_ASSERT_INT_EQ(f.d.steps[0].id, 2);
  TM_ASSERT_INT_EQ(f.d.steps[0].rule, TM_SNAP_ADDED_FILES); /* append */
  TM_ASSERT_INT_EQ(f.d.steps[1].rule, TM_SNAP_SKIP);        /* replace */
  TM_ASSERT_INT_EQ(f.d.steps[2].rule, TM_SNAP_SKIP);        /* delete */
  TM_ASSERT(f.d.save_snapshot);
  TM_ASSERT_INT_EQ(f.d.snapshot_to_save, 4);
  teardown(&f);
}

TM_TEST(B3_unchanged_table_reads_nothing) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.current_id = 1;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_NOTHING);
  TM_ASSERT_INT_EQ(f.d.n_steps, 0);
  teardown(&f);
}

TM_TEST(B4_overwrite_on_keyed_cayenne_keeps_newest_per_key) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, "id");
  f.in.table.current_id = 5;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_SNAPSHOTS);
  TM_ASSERT_INT_EQ(f.d.n_steps, 4);
  TM_ASSERT_INT_EQ(f.d.steps[3].rule, TM_SNAP_ADDED_FILES_BY_KEY);
  teardown(&f);
}

TM_TEST(B4_B5_overwrite_without_key_falls_back) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.current_id = 5;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY);
  TM_ASSERT_STR_EQ(tm_fallback_name(f.d.fallback), "rows_rewritten_without_primary_key");
  TM_ASSERT(f.d.save_snapshot && f.d.snapshot_to_save == 5); /* B5: follow again from here */
  teardown(&f);
}

TM_TEST(B4_overwrite_with_time_in_key_falls_back) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, "ts");
  f.in.table.current_id = 5;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_ROWS_REWRITTEN_WITHOUT_PRIMARY_KEY);
  teardown(&f);
}

TM_TEST(B1_keyed_sqlite_without_time_in_key_always_reads_by_time) {
  fixture f;
  setup(&f, TM_ENGINE_SQLITE, "id");
  f.in.table.current_id = 2;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  TM_ASSERT(!f.d.save_snapshot);
  teardown(&f);
  /* With time_column in the key the exception does not apply. */
  setup(&f, TM_ENGINE_SQLITE, "ts");
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_SNAPSHOTS);
  teardown(&f);
}

TM_TEST(B5_rollback_is_snapshot_not_ancestor) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.saved.id = 5;     /* saved on a line that a rollback abandoned */
  f.in.table.current_id = 9;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR);
  TM_ASSERT_INT_EQ(f.d.snapshot_to_save, 9);
  teardown(&f);
}

TM_TEST(B5_expired_history_is_snapshot_not_ancestor) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.saved.id = 77; /* no longer in the metadata */
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_SNAPSHOT_NOT_ANCESTOR);
  teardown(&f);
}

TM_TEST(B5_replaced_table) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.uuid = "u-2";
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_TABLE_REPLACED);
  TM_ASSERT_STR_EQ(tm_fallback_name(f.d.fallback), "table_replaced");
  teardown(&f);
}

TM_TEST(B5_table_has_no_snapshot) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.table.has_current = false;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_TABLE_HAS_NO_SNAPSHOT);
  TM_ASSERT(!f.d.save_snapshot);
  teardown(&f);
}

TM_TEST(B7_B9_first_refresh_is_not_a_fallback) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.saved.present = false;
  f.in.table.uuid = "anything";
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  TM_ASSERT(f.d.save_snapshot && f.d.snapshot_to_save == 2);
  teardown(&f);
}

TM_TEST(B11_one_off_sql_and_computed_columns_read_by_time) {
  fixture f;
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.one_off_sql = true;
  f.in.table.uuid = "u-2"; /* would be a fallback otherwise */
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  teardown(&f);
  setup(&f, TM_ENGINE_CAYENNE, NULL);
  f.in.computed_columns = true;
  decide(&f);
  TM_ASSERT_INT_EQ(f.d.kind, TM_READ_BY_TIME);
  TM_ASSERT_INT_EQ(f.d.fallback, TM_FALLBACK_NONE);
  teardown(&f);
}

TM_TEST(ancestry_walk_is_bounded_on_cycles) {
  const tm_snapshot_ref cyc[] = {{1, true, 2, "append", 1}, {2, true, 1, "append", 1}};
  TM_ASSERT(!tm_snapshot_is_ancestor(cyc, 2, 1, 3));
  TM_ASSERT(tm_snapshot_is_ancestor(cyc, 2, 1, 2));
}
