/*
 * Unit tests for engine/backup: a consistent copy of a file-mode
 * acceleration (SPEC C2) on sqlite, cayenne and duckdb, taken while a write
 * transaction is open, restored into another place with its rows and state
 * map; damaged backups refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backup.h"
#include "engine/engine_int.h"
#include "engine/engine.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

static const tm_engine_kind k_kinds[] = {TM_ENGINE_SQLITE, TM_ENGINE_CAYENNE, TM_ENGINE_DUCKDB};

static void schema_of(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "v", tm_type_of(TM_TYPE_UTF8), true, 2, &err), &err);
}

static void options(tm_engine_options *o, tm_engine_kind kind, const char *name) {
  tm_engine_options_init(o);
  o->db = tm_test_db();
  o->dataset = "events";
  o->mode = TM_ENGINE_FILE;
  o->path = tm_strdup(tm_test_path(name));
  (void)kind;
}

static void write_rows(tm_engine *e, int64_t first, int64_t n, const tm_kv *state, bool commit,
                       tm_engine_txn **open_out) {
  tm_error err;
  tm_schema s;
  schema_of(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int64_t i = first; i < first + n; i++) {
    char v[32];
    snprintf(v, sizeof v, "row %lld", (long long)i);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[1], v, strlen(v), &err), &err);
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_engine_txn *t;
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
  if (commit) TM_ASSERT_OK(tm_engine_txn_commit(t, state, NULL, &err), &err);
  else *open_out = t;
}

static int64_t rows_of(tm_engine *e) {
  tm_error err;
  int64_t n = -1;
  TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
  return n;
}

TM_TEST(backup_restore_round_trip) {
  for (size_t k = 0; k < sizeof k_kinds / sizeof k_kinds[0]; k++) {
    tm_engine_kind kind = k_kinds[k];
    tm_error err;
    tm_schema s;
    schema_of(&s);
    char name[64];
    snprintf(name, sizeof name, "src-%s", tm_engine_kind_name(kind));
    tm_engine_options o;
    options(&o, kind, name);
    tm_engine *e = NULL;
    TM_ASSERT_OK(tm_engine_open(&e, kind, &s, &o, &err), &err);
    tm_kv st;
    tm_kv_init(&st);
    TM_ASSERT_OK(tm_kv_set(&st, "tidemark.iceberg.snapshot_id", "42", &err), &err);
    TM_ASSERT_OK(tm_kv_set(&st, "tidemark.schema", "x", &err), &err);
    /* Several small commits. */
    for (int i = 0; i < 5; i++) write_rows(e, i * 3, 3, &st, true, NULL);
    TM_ASSERT_INT_EQ(rows_of(e), 15);
    /* An open transaction's rows are not part of the copy. */
    tm_engine_txn *open = NULL;
    write_rows(e, 100, 7, NULL, false, &open);
    char bname[64];
    snprintf(bname, sizeof bname, "backup-%s.%s", tm_engine_kind_name(kind),
             tm_engine_backup_ext(kind));
    const char *backup = tm_strdup(tm_test_path(bname));
    TM_ASSERT_OK(tm_engine_backup(e, backup, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(open, NULL, NULL, &err), &err);
    TM_ASSERT_INT_EQ(rows_of(e), 22);
    tm_engine_release(e);

    /* Restore elsewhere and reopen. */
    char dname[64];
    snprintf(dname, sizeof dname, "dst-%s/events", tm_engine_kind_name(kind));
    tm_engine_options d;
    options(&d, kind, dname);
    TM_ASSERT_OK(tm_engine_restore(kind, &d, backup, &err), &err);
    TM_ASSERT_MSG(!tm_path_exists(backup), "%s: the backup was consumed", tm_engine_kind_name(kind));
    tm_engine *r = NULL;
    TM_ASSERT_OK(tm_engine_open(&r, kind, NULL, &d, &err), &err);
    TM_ASSERT_INT_EQ(rows_of(r), 15);
    tm_kv got;
    tm_kv_init(&got);
    TM_ASSERT_OK(tm_engine_read_state(r, &got, &err), &err);
    TM_ASSERT_STR_EQ(tm_kv_get(&got, "tidemark.iceberg.snapshot_id"), "42");
    tm_kv_dispose(&got);
    tm_engine_bounds b;
    memset(&b, 0, sizeof b);
    TM_ASSERT_OK(tm_engine_column_bounds(r, "id", &b, &err), &err);
    TM_ASSERT(b.found && b.min.v.i == 0 && b.max.v.i == 14);
    tm_engine_bounds_dispose(&b);
    /* The restored acceleration takes new commits. */
    write_rows(r, 200, 2, NULL, true, NULL);
    TM_ASSERT_INT_EQ(rows_of(r), 17);
    tm_engine_release(r);

    /* A restore over an existing acceleration replaces it. */
    snprintf(bname, sizeof bname, "again-%s", tm_engine_kind_name(kind));
    TM_ASSERT_OK(tm_engine_open(&e, kind, NULL, &o, &err), &err);
    TM_ASSERT_OK(tm_engine_backup(e, tm_test_path(bname), &err), &err);
    tm_engine_release(e);
    TM_ASSERT_OK(tm_engine_restore(kind, &d, tm_test_path(bname), &err), &err);
    TM_ASSERT_OK(tm_engine_open(&r, kind, NULL, &d, &err), &err);
    TM_ASSERT_INT_EQ(rows_of(r), 22);
    tm_engine_release(r);

    tm_kv_dispose(&st);
    tm_schema_dispose(&s);
    tm_free((char *)o.path);
    tm_free((char *)d.path);
    tm_free((char *)backup);
  }
}

TM_TEST(backup_restore_refuses_damage) {
  for (size_t k = 0; k < sizeof k_kinds / sizeof k_kinds[0]; k++) {
    tm_engine_kind kind = k_kinds[k];
    tm_error err;
    char dname[64];
    snprintf(dname, sizeof dname, "bad-%s/events", tm_engine_kind_name(kind));
    tm_engine_options d;
    options(&d, kind, dname);
    const char *junk = tm_test_path("junk.bin");
    tm_test_write_file(junk, "this is not an acceleration, not even a tar file........");
    int rc = tm_engine_restore(kind, &d, junk, &err);
    TM_ASSERT_MSG(rc == TM_ECORRUPT, "%s: junk restored: %d %s", tm_engine_kind_name(kind), rc,
                  err.message);
    tm_engine *r = NULL;
    TM_ASSERT_RC(tm_engine_open(&r, kind, NULL, &d, &err), TM_ENOTFOUND);
    tm_free((char *)d.path);
  }
  /*
   * A backup of another DuckDB engine (cayenne and duckdb share the extension)
   * is refused at restore, and nothing is installed; so is a DuckDB database
   * that is not an acceleration.
   */
  tm_error err;
  tm_engine_options d;
  options(&d, TM_ENGINE_CAYENNE, "foreign/events");
  const char *path = tm_test_path("foreign.duckdb");
  tm_engine_options fo;
  options(&fo, TM_ENGINE_DUCKDB, "foreign-src.duckdb");
  tm_schema s;
  schema_of(&s);
  tm_engine *e = NULL;
  TM_ASSERT_OK(tm_engine_open(&e, TM_ENGINE_DUCKDB, &s, &fo, &err), &err);
  TM_ASSERT_OK(tm_engine_backup(e, path, &err), &err);
  tm_engine_release(e);
  TM_ASSERT_RC(tm_engine_restore(TM_ENGINE_CAYENNE, &d, path, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "a backup of engine duckdb, not cayenne");
  TM_ASSERT_RC(tm_engine_open(&e, TM_ENGINE_CAYENNE, NULL, &d, &err), TM_ENOTFOUND);
  /* A user's DuckDB database (tables, no _tm_meta): refused at restore, and never dropped at open. */
  duckdb_connection c;
  TM_ASSERT_OK(tm_db__connect(tm_test_db(), &c, &err), &err);
  char sql[2048], users[1024], copy[1024];
  snprintf(users, sizeof users, "%s", tm_test_path("users.duckdb"));
  snprintf(copy, sizeof copy, "%s", tm_test_path("users-copy.duckdb"));
  for (int i = 0; i < 2; i++) {
    snprintf(sql, sizeof sql, "ATTACH '%s' AS u; CREATE TABLE u.main.t AS SELECT 42 AS x; DETACH u",
             i ? copy : users);
    TM_ASSERT_OK(tm_db__exec(c, sql, "setup", &err), &err);
  }
  duckdb_disconnect(&c);
  TM_ASSERT_RC(tm_engine_restore(TM_ENGINE_CAYENNE, &d, copy, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "not a tidemark acceleration");
  tm_engine_options uo;
  options(&uo, TM_ENGINE_DUCKDB, "users.duckdb");
  TM_ASSERT_RC(tm_engine_open(&e, TM_ENGINE_DUCKDB, &s, &uo, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "tidemark leaves it alone");
  TM_ASSERT(tm_path_exists(users));
  tm_schema_dispose(&s);
  tm_free((char *)d.path);
  tm_free((char *)fo.path);
  tm_free((char *)uo.path);
}

TM_TEST(backup_needs_file_mode) {
  tm_error err;
  tm_schema s;
  schema_of(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = tm_test_db();
  o.dataset = "events";
  o.mode = TM_ENGINE_MEMORY;
  tm_engine *e = NULL;
  TM_ASSERT_OK(tm_engine_open(&e, TM_ENGINE_ARROW, &s, &o, &err), &err);
  TM_ASSERT_RC(tm_engine_backup(e, tm_test_path("x"), &err), TM_EUNSUPPORTED);
  TM_ASSERT(tm_engine_backup_ext(TM_ENGINE_ARROW) == NULL);
  tm_engine_release(e);
  tm_schema_dispose(&s);
}
