/*
 * Unit tests for format/iceberg reading: every test table's row count at
 * every snapshot with deletes applied (iceberg/EXPECTED.json), the exact
 * rows of the small tables as the source projects' own tests state them
 * (README), schema evolution and name mapping, rows "as of" the snapshot
 * that added them, row-group pruning, and broken tables failing cleanly.
 * Tables are read in place, read-only, through location remapping.
 * SPEC B4, B12, B13, B14, D2.
 */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "format/arrow/render.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"

static const char *ice_dir(void) {
  static char path[4096];
  const char *td = tm_test_require_shared();
  snprintf(path, sizeof path, "%s/iceberg", td);
  return path;
}


static tm_iceberg_io g_io;

static tm_iceberg_table *open_root(const char *root) {
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &g_io, &o, &err), &err);
  return t;
}

static tm_iceberg_table *open_table(const char *name) {
  char root[4096];
  snprintf(root, sizeof root, "%s/%s", ice_dir(), name);
  return open_root(root);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rows of a snapshot (or the current one, id < 0), rendered "a|b|c" and
 * sorted, joined with "; ". Columns: all, or the first one when count_only. */
/* Nested columns as JSON text (tm_iceberg_read_options.nested_as_json). */
static bool g_nested_as_json = true;

static int read_rows(tm_iceberg_table *t, int64_t snapshot_id, bool count_only,
                     int64_t *n_out, char **text_out, tm_iceberg_read_stats *st, tm_error *err) {
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.snapshot_id = snapshot_id;
  tm_iceberg_scan *sc = NULL;
  TM_TRY(tm_iceberg_plan_scan(t, &so, &sc, err));
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  ro.nested_as_json = g_nested_as_json;
  const char *first = sc->schema->root->fields[0].name;
  if (count_only) {
    ro.columns = &first;
    ro.n_columns = 1;
  }
  tm_iceberg_rows *r = NULL;
  int rc = tm_iceberg_rows_open(&r, t, sc, &ro, err);
  char **rows = NULL;
  size_t n = 0, cap = 0;
  int64_t total = 0;
  tm_batch b;
  tm_batch_init(&b);
  while (rc == TM_OK && (rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
    total += b.n_rows;
    for (int64_t i = 0; !count_only && i < b.n_rows; i++) {
      tm_buf line = TM_BUF_INIT(1 << 20);
      for (size_t c = 0; c < b.schema.n_cols; c++) {
        tm_colview cv = tm_batch_col(&b, c);
        tm_value v;
        tm_colview_get(&cv, i, &v);
        if (c) TM_ASSERT_OK(tm_buf_putc(&line, '|', err), err);
        if (v.is_null) {
          TM_ASSERT_OK(tm_buf_puts(&line, "NULL", err), err);
        } else if (tm_type_is_nested(&cv.type)) {
          TM_ASSERT_OK(tm_colview_json(&line, &cv, i, err), err); /* native nested values */
        } else {
          TM_ASSERT_OK(tm_value_render(&line, &cv.type, &v, err), err);
        }
      }
      if (n == cap) {
        cap = cap ? cap * 2 : 64;
        rows = tm_reallocarray(rows, cap, sizeof *rows);
        TM_ASSERT(rows);
      }
      rows[n++] = tm_buf_take(&line, NULL);
    }
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (st && r) tm_iceberg_rows_stats(r, st);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  if (rc == TM_OK && text_out) {
    if (n) qsort(rows, n, sizeof *rows, cmp_str);
    tm_buf all = TM_BUF_INIT(1 << 24);
    for (size_t i = 0; i < n; i++) {
      if (i) TM_ASSERT_OK(tm_buf_puts(&all, "; ", err), err);
      TM_ASSERT_OK(tm_buf_puts(&all, rows[i], err), err);
    }
    *text_out = tm_buf_take(&all, NULL);
  }
  for (size_t i = 0; i < n; i++) tm_free(rows[i]);
  tm_free(rows);
  if (n_out) *n_out = total;
  return rc;
}

/* The one known non-readable snapshot: the README's missing manifest list.
 * It fails cleanly and has no expected count. */
static bool known_unreadable(const char *table, int rc, const tm_error *err) {
  return strcmp(table, "equality_deletes_mytable") == 0 && rc == TM_ENOTFOUND &&
         strstr(err->message, "snap-7342794868382145167-1-");
}

/*
 * The v3 tables with deletion vectors: EXPECTED.json leaves their DV
 * snapshots out (its survey did not decode DVs); the README states them from
 * the source SQL and summaries: deletion_vectors (Trino) inserts c1 0..7,
 * deletes c1 % 3 = 0 (5 left), inserts 8..15 (13), deletes c1 % 3 = 1 (8);
 * iceberg_v3_deletion_vectors (Spark) has 5 rows, then 2 deleted by DVs.
 */
typedef struct dv_expect {
  const char *table;
  size_t n;
  const char *ops[6];
  int64_t rows[6];
} dv_expect;

static const dv_expect k_dv_expect[] = {
    {"deletion_vectors", 5, {"append", "append", "delete", "append", "delete"}, {0, 8, 5, 13, 8}},
    {"iceberg_v3_deletion_vectors", 2, {"append", "delete"}, {5, 3}},
};

static const dv_expect *dv_expected(const char *table) {
  for (size_t i = 0; i < sizeof k_dv_expect / sizeof k_dv_expect[0]; i++) {
    if (strcmp(k_dv_expect[i].table, table) == 0) return &k_dv_expect[i];
  }
  return NULL;
}

/* SPEC B12: every snapshot of every table, deletes applied, in snapshot-log
 * order, with the computed counts of iceberg/EXPECTED.json. */
TM_TEST(iceberg_every_snapshot_reads_its_documented_row_count) {
  char path[4096];
  snprintf(path, sizeof path, "%s/EXPECTED.json", ice_dir());
  json_t *exp = json_load_file(path, 0, NULL);
  TM_ASSERT(exp);
  const char *name;
  json_t *info;
  int checked = 0;
  json_object_foreach(exp, name, info) {
    json_t *want = json_object_get(info, "rows_per_snapshot");
    size_t next = 0;
    tm_iceberg_table *t = open_table(name);
    const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
    for (size_t i = 0; i < m->n_snapshot_log; i++) {
      const tm_iceberg_snapshot *s = tm_iceberg_metadata_snapshot(m, m->snapshot_log[i].snapshot_id);
      if (!s) continue; /* expired from the metadata */
      bool seen = false; /* the log repeats snapshots after a rollback */
      for (size_t k = 0; k < i; k++) seen = seen || m->snapshot_log[k].snapshot_id == s->snapshot_id;
      if (seen) continue;
      tm_error err;
      int64_t rows = -1;
      int rc = read_rows(t, s->snapshot_id, true, &rows, NULL, NULL, &err);
      if (rc < 0 && known_unreadable(name, rc, &err)) continue;
      TM_ASSERT_MSG(rc == TM_OK, "%s snapshot %lld: %s", name, (long long)s->snapshot_id,
                    err.message);
      const dv_expect *dv = dv_expected(name);
      size_t n_want = dv ? dv->n : json_array_size(want);
      TM_ASSERT_MSG(next < n_want, "%s: more snapshots than expected", name);
      json_t *w = dv ? NULL : json_array_get(want, next);
      const char *want_op = dv ? dv->ops[next] : json_string_value(json_object_get(w, "operation"));
      int64_t want_rows = dv ? dv->rows[next] : json_integer_value(json_object_get(w, "rows"));
      next++;
      TM_ASSERT_STR_EQ(s->operation, want_op);
      TM_ASSERT_MSG(rows == want_rows, "%s snapshot %lld (%s): %lld rows, expected %lld", name,
                    (long long)s->snapshot_id, s->operation, (long long)rows,
                    (long long)want_rows);
      checked++;
    }
    size_t n_want = dv_expected(name) ? dv_expected(name)->n : json_array_size(want);
    TM_ASSERT_MSG(next == n_want, "%s: %zu of %zu expected snapshots read", name, next, n_want);
    tm_iceberg_table_free(t);
  }
  json_decref(exp);
  TM_ASSERT(checked >= 100);
}

static void expect_rows(const char *table, int64_t snapshot, const char *want) {
  tm_iceberg_table *t = open_table(table);
  tm_error err;
  char *text = NULL;
  TM_ASSERT_OK(read_rows(t, snapshot, false, NULL, &text, NULL, &err), &err);
  TM_ASSERT_MSG(strcmp(text, want) == 0, "%s: got\n  %s\nwant\n  %s", table, text, want);
  tm_free(text);
  tm_iceberg_table_free(t);
}

/* The rows the source projects' tests state (README per-table notes). */
/* Deletion vectors written by Trino and Spark (README: c1 in {2,5,8,9,11,12,14,15}). */
TM_TEST(iceberg_v3_deletion_vectors_from_trino_and_spark) {
  tm_iceberg_table *t = open_table("deletion_vectors");
  tm_error err;
  char *text = NULL;
  TM_ASSERT_OK(read_rows(t, -1, false, NULL, &text, NULL, &err), &err);
  TM_ASSERT_STR_EQ(text, "11|11; 12|1212; 14|91121; 15|182222; 2|2314; 5|12831; 8|12318231; 9|999");
  tm_free(text);
  /* Without deletes (the append path, SPEC B12): all 16 rows. */
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  ro.skip_deletes = true;
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, &ro, &err), &err);
  int64_t n = 0;
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    n += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(n, 16);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  /* Spark: two DVs in one Puffin file over five one-row files. */
  t = open_table("iceberg_v3_deletion_vectors");
  TM_ASSERT_OK(read_rows(t, -1, false, NULL, &text, NULL, &err), &err);
  TM_ASSERT_STR_EQ(text, "1; 3; 5");
  tm_free(text);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_small_tables_read_their_exact_rows) {
  expect_rows("iceberg_v2_delete_equality", -1, "1|test_1_base; 2|test_2_updated");
  expect_rows("iceberg_v2_delete_equality_nulls", -1, "1|str1; 4|str4; NULL|str5");
  expect_rows("iceberg_v2_delete_equality_nulls", INT64_C(4346796256488077976),
              "1|str1; 3|str3; NULL|str2");
  expect_rows("iceberg_v2_delete_equality_multi_eq_ids", -1,
              "1|str1; 2222|str2; 33|str3_updated_twice; 4|str4_updated; 5|str5");
  expect_rows("iceberg_v2_delete_equality_multi_eq_ids", INT64_C(8127619959873391049),
              "1|str1; 2|str2; 3|str3_updated");
  expect_rows("iceberg_v2_delete_equality_partitioned", -1,
              "1|str1|2023-12-24; 1|str1|2023-12-25; 222|str2|2023-12-25; 2|str2|2023-12-24; "
              "333333|str3|2023-12-24; 4|str4|2023-12-24");
  /* Columns added after the deletes were written read as NULL. */
  expect_rows("iceberg_v2_equality_delete_schema_evolution", -1,
              "1|2024-03-20|str1|NULL; 44|2024-03-21|str4|4444; 5|2024-03-22|str5|NULL");
  expect_rows("iceberg_v2_delete_both_eq_and_pos", -1,
              "2|str2_updated|2023-12-13; 3|str3|2023-12-23");
  expect_rows("iceberg_v2_delete_pos_and_multi_eq_ids", -1,
              "1|str1|2020-12-01; 333333|str3|2024-01-25; 4|str4|2024-01-26; 5|str5|2024-01-27");
  expect_rows("equality_deletes_mytable", -1, "4|d|2025-01-04; 5|e|2025-01-05");
  expect_rows("equality_deletes_mytable_partitioned", -1,
              "1|a|2025-01-01; 4|d|2025-01-04; 5|e|2025-01-05");
  expect_rows("partitioning_with_null_value", -1,
              "1|NULL|-50; 2|2025-03-03|-1; NULL|2025-03-03|0; NULL|NULL|17");
  /* Position deletes whose paths say hdfs://... match /test-warehouse/... files. */
  expect_rows("iceberg_v2_positional_delete_all_rows", -1, "");
  /* Trino: dangling position deletes after compaction; c1 % 3 != 0 survive. */
  tm_iceberg_table *t = open_table("dangling_deletes");
  tm_error err;
  char *text = NULL;
  TM_ASSERT_OK(read_rows(t, -1, false, NULL, &text, NULL, &err), &err);
  char *p = text;
  int count = 0;
  while (p && *p) {
    long c1 = strtol(p, &p, 10); /* lint-ok: test */
    TM_ASSERT_MSG(c1 % 3 != 0, "row with c1 = %ld survived the delete", c1);
    count++;
    p = strchr(p, ';');
    if (p) p += 2;
  }
  TM_ASSERT_INT_EQ(count, 10);
  tm_free(text);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_types_defaults_and_partition_values) {
  /* Every Trino type, one row; the list column as JSON text (issue 16). */
  expect_rows("all_trino_types", -1,
              "1|true|42|9223372036854775807|3.14|2.718281828459045|123456.78901|2025-04-05|"
              "12:34:56.123456|2025-04-05T12:34:56.123456|2025-04-05T12:34:56.123456Z|"
              "Hello Iceberg|550e8400-e29b-41d4-a716-446655440000|\\xDE\\xAD\\xBE\\xEF|[1.1,2.2,3.3]");
  /* Without nested_as_json the list column is native (issue 16): a
   * list<double> whose JSON is the same text. */
  {
    g_nested_as_json = false;
    tm_iceberg_table *tt = open_table("all_trino_types");
    tm_error e2;
    char *text = NULL;
    TM_ASSERT_OK(read_rows(tt, -1, false, NULL, &text, NULL, &e2), &e2);
    TM_ASSERT_CONTAINS(text, "|\\xDE\\xAD\\xBE\\xEF|[1.1,2.2,3.3]");
    tm_free(text);
    tm_iceberg_table_free(tt);
    g_nested_as_json = true;
  }
  /* Columns added with defaults: the older file reads the initial defaults. */
  tm_iceberg_table *t = open_table("add_columns_with_defaults");
  tm_error err;
  char *text = NULL;
  TM_ASSERT_OK(read_rows(t, -1, false, NULL, &text, NULL, &err), &err);
  TM_ASSERT_CONTAINS(text, "click|true|342342|-9223372036854775808|");
  TM_ASSERT_CONTAINS(text, "|HELLO|f79c3e09-677c-4bbd-a479-3f349cb785e7|");
  tm_free(text);
  tm_iceberg_table_free(t);
  /* Partition columns not stored in the data files come from the manifest. */
  expect_rows("hive_partitioned_table", -1,
              "2024-01-01|12345|click; 2024-01-02|67890|purchase; 2024-01-03|13579|view; "
              "2024-01-03|24680|click; 2024-01-04|86420|view; 2024-01-04|97531|purchase");
}

TM_TEST(iceberg_name_mapping_reads_files_without_field_ids) {
  tm_iceberg_table *t = open_table("name_mapping_t1");
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  int64_t rows = 0, a_nonnull = 0;
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    int ia = tm_schema_find(&b.schema, "a");
    TM_ASSERT(ia >= 0);
    tm_colview a = tm_batch_col(&b, (size_t)ia);
    for (int64_t i = 0; i < b.n_rows; i++) a_nonnull += !tm_colview_is_null(&a, i);
    rows += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(rows, 10000);
  TM_ASSERT_INT_EQ(a_nonnull, 10000);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

/* SPEC B4/B12: what a snapshot added, read as of that snapshot: later
 * deletes do not apply. */
TM_TEST(iceberg_added_files_read_without_later_deletes) {
  tm_iceberg_table *t = open_table("granular_deletes");
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  tm_error err;
  int64_t total = 0;
  for (size_t i = 0; i < m->n_snapshot_log; i++) {
    tm_iceberg_added *a = NULL;
    TM_ASSERT_OK(tm_iceberg_plan_added(t, m->snapshot_log[i].snapshot_id, &a, &err), &err);
    tm_iceberg_rows *r = NULL;
    TM_ASSERT_OK(tm_iceberg_rows_open_files(&r, t, NULL, a->data_files, a->n_data_files, NULL,
                                            &err), &err);
    tm_batch b;
    tm_batch_init(&b);
    int rc;
    while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
      total += b.n_rows;
      tm_batch_release(&b);
    }
    TM_ASSERT_RC(rc, TM_ITEROVER);
    tm_iceberg_rows_free(r);
    tm_iceberg_added_free(a);
  }
  /* 16 rows were appended; the current table shows 10 after the deletes. */
  TM_ASSERT_INT_EQ(total, 16);
  tm_iceberg_table_free(t);
}

/* SPEC B13: row groups skipped by Parquet statistics, reported in stats. */
TM_TEST(iceberg_row_group_pruning_and_row_filter) {
  tm_iceberg_table *t = open_table("iceberg_lineitem_multiblock");
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_predicate p;
  tm_predicate_init(&p);
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_INT64;
  v.v.i = 1000;
  TM_ASSERT_OK(tm_predicate_add(&p, "l_orderkey", tm_type_of(TM_TYPE_INT64), TM_PRED_LT, &v, &err),
               &err);
  const char *cols[2] = {"l_orderkey", "l_linenumber"};
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  ro.columns = cols;
  ro.n_columns = 2;
  ro.filter = &p;
  ro.filter_rows = true;
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, &ro, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  int64_t rows = 0;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    tm_colview k = tm_batch_col(&b, 0);
    for (int64_t i = 0; i < b.n_rows; i++) TM_ASSERT(tm_colview_int(&k, i) < 1000);
    rows += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  tm_iceberg_read_stats st;
  tm_iceberg_rows_stats(r, &st);
  TM_ASSERT(rows > 0);
  TM_ASSERT_MSG(st.row_groups_skipped > 150, "skipped %lld of 200 row groups",
                (long long)st.row_groups_skipped);
  TM_ASSERT(st.row_groups_read + st.row_groups_skipped == 200);
  TM_ASSERT_INT_EQ(st.rows_returned, rows);
  TM_ASSERT(st.delete_files_read == 1);
  tm_iceberg_rows_free(r);
  tm_predicate_dispose(&p);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

/* SPEC D2: broken tables fail with a clear error naming the file. */
TM_TEST(iceberg_broken_tables_fail_cleanly) {
  tm_error err;
  /* A copy of a table with one data file removed and the delete file cut. */
  char src[4096], cmd[8300];
  snprintf(src, sizeof src, "%s/iceberg_v2_delete_positional", ice_dir());
  const char *dst = tm_test_path("copy");
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && chmod -R u+w '%s'", src, dst, dst);
  TM_ASSERT(system(cmd) == 0);
  tm_iceberg_table *t = open_root(dst);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  char *data = NULL, *del = NULL;
  TM_ASSERT_OK(tm_iceberg_table_resolve(t, sc->tasks[0].file->path, &data, &err), &err);
  TM_ASSERT_OK(tm_iceberg_table_resolve(t, sc->tasks[0].deletes[0]->path, &del, &err), &err);
  tm_iceberg_scan_free(sc);
  /* truncated delete file */
  TM_ASSERT(truncate(del, 20) == 0);
  int64_t n;
  int rc = read_rows(t, -1, false, &n, NULL, NULL, &err);
  TM_ASSERT(rc == TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, strrchr(del, '/') + 1);
  /* missing data file */
  TM_ASSERT(unlink(data) == 0);
  rc = read_rows(t, -1, false, &n, NULL, NULL, &err);
  TM_ASSERT_RC(rc, TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, data);
  tm_free(data);
  tm_free(del);
  tm_iceberg_table_free(t);
}

/*
 * Issue 16: nested columns are read by member id into the table's current
 * shape (convert.c), so a table whose history holds another shape of a nested
 * column reads as before. A copy of all_trino_types whose metadata gains an
 * earlier schema where list_col's elements were floats reads exactly the rows
 * of the original.
 */
TM_TEST(iceberg_nested_column_with_an_older_shape_in_history_reads) {
  char src[4096], cmd[8300];
  snprintf(src, sizeof src, "%s/all_trino_types", ice_dir());
  const char *dst = tm_test_path("nested_evolved");
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s' && chmod -R u+w '%s'", src, dst, dst);
  TM_ASSERT(system(cmd) == 0);
  char meta[4200];
  snprintf(meta, sizeof meta,
           "%s/metadata/00002-6105d5eb-ce39-470c-af78-50b744662ef2.metadata.json", dst);
  json_error_t jerr;
  json_t *m = json_load_file(meta, 0, &jerr);
  TM_ASSERT(m != NULL);
  json_t *schemas = json_object_get(m, "schemas");
  json_t *old = json_deep_copy(json_array_get(schemas, 0));
  TM_ASSERT(old != NULL);
  json_object_set_new(old, "schema-id", json_integer(7));
  json_t *fields = json_object_get(old, "fields");
  size_t i;
  json_t *f;
  bool found = false;
  json_array_foreach(fields, i, f) {
    if (strcmp(json_string_value(json_object_get(f, "name")), "list_col") != 0) continue;
    json_object_set_new(json_object_get(f, "type"), "element", json_string("float"));
    found = true;
  }
  TM_ASSERT(found);
  json_array_append_new(schemas, old);
  TM_ASSERT(json_dump_file(m, meta, 0) == 0);
  json_decref(m);

  tm_error err;
  for (int mode = 0; mode < 2; mode++) {
    g_nested_as_json = mode == 0;
    char *want = NULL, *got = NULL;
    tm_iceberg_table *orig = open_table("all_trino_types");
    TM_ASSERT_OK(read_rows(orig, -1, false, NULL, &want, NULL, &err), &err);
    tm_iceberg_table_free(orig);
    tm_iceberg_table *t = open_root(dst);
    TM_ASSERT_OK(read_rows(t, -1, false, NULL, &got, NULL, &err), &err);
    tm_iceberg_table_free(t);
    TM_ASSERT_CONTAINS(want, "[");
    TM_ASSERT_STR_EQ(got, want);
    tm_free(want);
    tm_free(got);
  }
  g_nested_as_json = true;
}

/*
 * SPEC E4: the positions a task's position delete files and deletion vectors
 * delete, read from the delete files alone (tm_iceberg_task_positions, what a
 * changes refresh diffs), are exactly the positions the reader leaves out of
 * the data file: live positions and deleted ones split [0, record_count).
 */
TM_TEST(E4_task_positions_are_the_rows_the_reader_deletes) {
  static const char *const tables[] = {
      "deletion_vectors", "iceberg_v3_deletion_vectors", "iceberg_v2_delete_positional",
      "iceberg_v2_partitioned_position_deletes", "iceberg_v2_positional_delete_all_rows",
      "iceberg_v2_positional_not_all_data_files_have_delete_files", "dangling_deletes"};
  int64_t tasks_with_positions = 0;
  for (size_t ti = 0; ti < sizeof tables / sizeof *tables; ti++) {
    tm_iceberg_table *t = open_table(tables[ti]);
    tm_error err;
    tm_iceberg_scan *sc = NULL;
    TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
    for (size_t k = 0; k < sc->n_tasks; k++) {
      const tm_iceberg_scan_task *task = &sc->tasks[k];
      bool eq = false;
      for (size_t i = 0; i < task->n_deletes; i++)
        eq |= task->deletes[i]->content == TM_ICEBERG_CONTENT_EQUALITY_DELETES;
      if (eq) continue;
      int64_t *pos = NULL;
      size_t n_pos = 0;
      TM_ASSERT_OK(tm_iceberg_task_positions(t, task, &pos, &n_pos, NULL, &err), &err);
      for (size_t i = 1; i < n_pos; i++) TM_ASSERT(pos[i - 1] < pos[i]); /* sorted, distinct */
      tasks_with_positions += n_pos > 0;
      /* The live positions, from the reader over this one task. */
      tm_iceberg_scan one = *sc;
      one.tasks = (tm_iceberg_scan_task *)task;
      one.n_tasks = 1;
      tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
      ro.with_positions = true;
      tm_iceberg_rows *r = NULL;
      TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, &one, &ro, &err), &err);
      tm_batch b;
      tm_batch_init(&b);
      int rc;
      int64_t next = 0, live = 0;
      size_t d = 0;
      while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
        tm_colview c = tm_batch_col(&b, b.schema.n_cols - 1);
        for (int64_t i = 0; i < b.n_rows; i++, live++) {
          int64_t p = tm_colview_int(&c, i);
          while (d < n_pos && pos[d] < p) { /* every position skipped was deleted */
            TM_ASSERT_INT_EQ(pos[d], next);
            d++, next++;
          }
          TM_ASSERT_INT_EQ(p, next);
          TM_ASSERT(d == n_pos || pos[d] != p);
          next++;
        }
        tm_batch_release(&b);
      }
      TM_ASSERT_RC(rc, TM_ITEROVER);
      while (d < n_pos && pos[d] < task->file->record_count) TM_ASSERT_INT_EQ(pos[d++], next++);
      TM_ASSERT_INT_EQ(next, task->file->record_count);
      tm_iceberg_rows_free(r);
      tm_free(pos);
    }
    tm_iceberg_scan_free(sc);
    tm_iceberg_table_free(t);
  }
  TM_ASSERT(tasks_with_positions >= 5);
}
