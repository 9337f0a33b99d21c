/*
 * Unit tests for format/iceberg table operations on tables we write: data
 * file metrics (bounds, null counts) that pruning then uses, partitioned
 * writes, deletes by position and equality read back with deletes applied,
 * compaction keeping the rows, renamed columns read by field id, and the
 * --where filter syntax, nested columns written with their field ids and
 * partitioned by struct members (issue 16). SPEC B4, B12, B13, B14.
 */
#include <stdio.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "format/iceberg/writer.h"
#include "format/parquet/parquet.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

static tm_iceberg_io g_io;

static tm_iceberg_table *open_at(const char *root) {
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &g_io, &o, &err), &err);
  return t;
}

/* Batches of ids [from, to) with a region and a day. */
typedef struct gen {
  int64_t next, to, step;
} gen;

static int gen_next(void *payload, tm_batch *out, tm_error *err) {
  gen *g = payload;
  if (g->next >= g->to) return TM_ITEROVER;
  tm_schema s;
  tm_schema_init(&s);
  TM_TRY(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), false, -1, err));
  TM_TRY(tm_schema_add(&s, "day", tm_type_of(TM_TYPE_DATE32), true, -1, err));
  TM_TRY(tm_schema_add(&s, "region", tm_type_of(TM_TYPE_UTF8), true, -1, err));
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, &s, err));
  tm_schema_dispose(&s);
  int64_t end = g->next + g->step < g->to ? g->next + g->step : g->to;
  int rc = TM_OK;
  for (int64_t i = g->next; rc == TM_OK && i < end; i++) {
    rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), i, err);
    if (rc == TM_OK) rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), 19000 + i / 100, err);
    const char *r = i % 3 == 0 ? "eu" : i % 3 == 1 ? "us" : NULL;
    if (rc == TM_OK) {
      rc = r ? tm_colbuilder_append_bytes(tm_batch_builder_col(&bb, 2), r, 2, err)
             : tm_colbuilder_append_null(tm_batch_builder_col(&bb, 2), err);
    }
  }
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  g->next = end;
  return rc;
}

static const char *make(const char *name, const char *partition) {
  const char *root = tm_test_path(name);
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json =
      "[{\"name\": \"id\", \"type\": \"long\", \"required\": true}, {\"name\": \"day\", "
      "\"type\": \"date\"}, {\"name\": \"region\", \"type\": \"string\"}]";
  co.partition = partition;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  return root;
}

/* A v3 table (row lineage, deletion vectors) with make()'s columns. */
static const char *make_v3(const char *name, const char *partition) {
  const char *root = tm_test_path(name);
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json =
      "[{\"name\": \"id\", \"type\": \"long\", \"required\": true}, {\"name\": \"day\", "
      "\"type\": \"date\"}, {\"name\": \"region\", \"type\": \"string\"}]";
  co.partition = partition;
  co.format_version = 3;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  return root;
}

static int64_t append_range(const char *root, int64_t from, int64_t to) {
  tm_iceberg_table *t = open_at(root);
  gen g = {from, to, 97};
  tm_iceberg_op_result res;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_append(t, gen_next, &g, NULL, &res, &err), &err);
  tm_iceberg_table_free(t);
  TM_ASSERT_INT_EQ(res.rows_added, to - from);
  return res.snapshot_id;
}

/* Sum and count of ids in the current rows (deletes applied). */
static void id_stats(const char *root, int64_t *count, int64_t *sum) {
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  *count = *sum = 0;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    tm_colview id = tm_batch_col(&b, 0);
    for (int64_t i = 0; i < b.n_rows; i++) *sum += tm_colview_int(&id, i);
    *count += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_ops_metrics_drive_pruning) {
  const char *root = make("t", "day");
  append_range(root, 0, 1000);
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  TM_ASSERT_INT_EQ(sc->n_tasks, 10); /* one file per day */
  int64_t rows = 0;
  for (size_t i = 0; i < sc->n_tasks; i++) {
    const tm_iceberg_data_file *f = sc->tasks[i].file;
    rows += f->record_count;
    bool saw_id = false, saw_region = false;
    for (size_t k = 0; k < f->n_stats; k++) {
      const tm_iceberg_col_stats *s = &f->stats[k];
      if (s->field_id == 1) {
        saw_id = true;
        TM_ASSERT(s->has_lower && s->has_upper && s->lower.len == 8);
        TM_ASSERT_INT_EQ(s->null_count, 0);
        TM_ASSERT(s->column_size > 0);
      }
      if (s->field_id == 3) {
        saw_region = true;
        TM_ASSERT(s->null_count > 0);
        TM_ASSERT_INT_EQ(s->value_count, f->record_count);
      }
    }
    TM_ASSERT(saw_id && saw_region);
    TM_ASSERT(f->n_split_offsets >= 1);
  }
  TM_ASSERT_INT_EQ(rows, 1000);
  tm_iceberg_scan_free(sc);
  /* id bounds prune every file but the one holding 5. */
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_iceberg_parse_where("id = 5", tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t)),
                                      &p, &err), &err);
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.filter = &p;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, &so, &sc, &err), &err);
  TM_ASSERT_INT_EQ(sc->n_tasks, 1);
  TM_ASSERT(sc->stats.data_files_skipped >= 1);
  tm_iceberg_scan_free(sc);
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_ops_deletes_and_compaction) {
  const char *root = make("d", "bucket[3](id)");
  append_range(root, 0, 300);
  int64_t n, sum, sum_all = 299 * 300 / 2;
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 300);
  TM_ASSERT_INT_EQ(sum, sum_all);
  tm_error err;
  /* position deletes: ids 10..19 */
  tm_iceberg_table *t = open_at(root);
  tm_predicate p;
  tm_predicate_init(&p);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t));
  TM_ASSERT_OK(tm_iceberg_parse_where("id >= 10 AND id < 20", s, &p, &err), &err);
  tm_iceberg_op_result res;
  TM_ASSERT_OK(tm_iceberg_delete_where(t, &p, TM_ICEBERG_DELETE_POSITION, NULL, 0, NULL, &res, &err),
               &err);
  TM_ASSERT_INT_EQ(res.rows_deleted, 10);
  TM_ASSERT(res.delete_files_added >= 1 && res.delete_files_added <= 3); /* one per bucket */
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 290);
  TM_ASSERT_INT_EQ(sum, sum_all - 145);
  /* equality deletes on region = 'eu' (ids divisible by 3) */
  t = open_at(root);
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_iceberg_parse_where("region = 'eu'", s = tm_iceberg_metadata_current_schema(
                                                           tm_iceberg_table_metadata(t)),
                                      &p, &err), &err);
  const char *cols[1] = {"region"};
  TM_ASSERT_OK(tm_iceberg_delete_where(t, &p, TM_ICEBERG_DELETE_EQUALITY, cols, 1, NULL, &res, &err),
               &err);
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
  int64_t eu_live = 0, eu_sum = 0;
  for (int64_t i = 0; i < 300; i += 3) {
    if (i >= 10 && i < 20) continue;
    eu_live++;
    eu_sum += i;
  }
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 290 - eu_live);
  TM_ASSERT_INT_EQ(sum, sum_all - 145 - eu_sum);
  /* compaction: same rows, no delete files, fewer data files */
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_compact(t, NULL, &res, &err), &err);
  TM_ASSERT(res.snapshot_id > 0);
  TM_ASSERT_INT_EQ(res.rows_added, 290 - eu_live);
  tm_iceberg_table_free(t);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 290 - eu_live);
  TM_ASSERT_INT_EQ(sum, sum_all - 145 - eu_sum);
  t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  TM_ASSERT(sc->n_tasks <= 3);
  for (size_t i = 0; i < sc->n_tasks; i++) TM_ASSERT_INT_EQ(sc->tasks[i].n_deletes, 0);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(tm_iceberg_table_metadata(t));
  TM_ASSERT_STR_EQ(cur->operation, "replace");
  tm_iceberg_scan_free(sc);
  /* A second compaction has nothing to do. */
  TM_ASSERT_OK(tm_iceberg_compact(t, NULL, &res, &err), &err);
  TM_ASSERT_INT_EQ(res.snapshot_id, -1);
  tm_iceberg_table_free(t);
}

static void delete_where(const char *root, const char *where, tm_iceberg_delete_mode mode,
                         const char *eq_col, tm_iceberg_op_result *res) {
  tm_iceberg_table *t = open_at(root);
  tm_predicate p;
  tm_predicate_init(&p);
  tm_error err;
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t));
  TM_ASSERT_OK(tm_iceberg_parse_where(where, s, &p, &err), &err);
  const char *cols[1] = {eq_col};
  TM_ASSERT_OK(tm_iceberg_delete_where(t, &p, mode, eq_col ? cols : NULL, eq_col ? 1 : 0, NULL,
                                       res, &err),
               &err);
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
}

/* Every task carries at most one deletion vector, for its own file. */
static size_t check_dvs(const char *root) {
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  size_t dvs = 0;
  for (size_t i = 0; i < sc->n_tasks; i++) {
    size_t here = 0;
    for (size_t k = 0; k < sc->tasks[i].n_deletes; k++) {
      const tm_iceberg_data_file *d = sc->tasks[i].deletes[k];
      TM_ASSERT(d->content != TM_ICEBERG_CONTENT_POSITION_DELETES ||
                tm_iceberg_is_deletion_vector(d)); /* no position delete file in v3 */
      if (!tm_iceberg_is_deletion_vector(d)) continue;
      here++;
      TM_ASSERT_STR_EQ(d->format, "PUFFIN");
      TM_ASSERT(d->has_content_offset && d->content_offset >= 4 && d->content_size > 12);
      TM_ASSERT_STR_EQ(d->referenced_data_file, sc->tasks[i].file->path);
      TM_ASSERT(strstr(d->path, ".puffin"));
    }
    TM_ASSERT(here <= 1);
    dvs += here;
  }
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  return dvs;
}

/* v3: deletion vectors (merged, one per data file), equality deletes folded in,
 * compaction; row lineage ids assigned per the spec. SPEC B12. */
TM_TEST(iceberg_ops_v3_deletion_vectors_and_row_lineage) {
  const char *root = make_v3("v3", "bucket[3](id)");
  append_range(root, 0, 300);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->format_version, 3);
  TM_ASSERT(m->has_next_row_id);
  TM_ASSERT_INT_EQ(m->next_row_id, 300);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  TM_ASSERT(cur->has_first_row_id);
  TM_ASSERT_INT_EQ(cur->first_row_id, 0);
  /* Data files get disjoint row id ranges covering [0, 300) by inheritance. */
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  int64_t covered = 0, max_end = 0;
  for (size_t i = 0; i < sc->n_tasks; i++) {
    const tm_iceberg_data_file *f = sc->tasks[i].file;
    TM_ASSERT(f->has_first_row_id);
    covered += f->record_count;
    if (f->first_row_id + f->record_count > max_end) max_end = f->first_row_id + f->record_count;
  }
  TM_ASSERT_INT_EQ(covered, 300);
  TM_ASSERT_INT_EQ(max_end, 300);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);

  int64_t n, sum, sum_all = 299 * 300 / 2;
  tm_iceberg_op_result res;
  delete_where(root, "id >= 10 AND id < 20", TM_ICEBERG_DELETE_POSITION, NULL, &res);
  TM_ASSERT_INT_EQ(res.rows_deleted, 10);
  size_t first_dvs = check_dvs(root);
  TM_ASSERT(first_dvs >= 1 && (int64_t)first_dvs == res.delete_files_added);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 290);
  TM_ASSERT_INT_EQ(sum, sum_all - 145);
  /* Equality deletes are still v3 deletes; the next DV folds their rows in. */
  delete_where(root, "region = 'eu'", TM_ICEBERG_DELETE_EQUALITY, "region", &res);
  delete_where(root, "id >= 15 AND id < 30", TM_ICEBERG_DELETE_POSITION, NULL, &res);
  int64_t expect_n = 0, expect_sum = 0;
  for (int64_t i = 0; i < 300; i++) {
    if (i % 3 == 0 || (i >= 10 && i < 30)) continue;
    expect_n++;
    expect_sum += i;
  }
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, expect_n);
  TM_ASSERT_INT_EQ(sum, expect_sum);
  TM_ASSERT(check_dvs(root) >= first_dvs); /* merged: still at most one per file */
  /* Deleting every live row of the table drops the files and their DVs. */
  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->next_row_id, 300); /* deletes add no rows */
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(tm_iceberg_metadata_current(m), "added-dvs") ? "y" : "n",
                   "y");
  tm_iceberg_table_free(t);
  /* Compaction: same rows, no deletes, new row ids for the rewritten rows. */
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_compact(t, NULL, &res, &err), &err);
  TM_ASSERT_INT_EQ(res.rows_added, expect_n);
  tm_iceberg_table_free(t);
  TM_ASSERT_INT_EQ(check_dvs(root), 0);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, expect_n);
  TM_ASSERT_INT_EQ(sum, expect_sum);
  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->next_row_id, 300 + expect_n);
  TM_ASSERT_INT_EQ(tm_iceberg_metadata_current(m)->first_row_id, 300);
  tm_iceberg_table_free(t);
  delete_where(root, "id >= 0", TM_ICEBERG_DELETE_POSITION, NULL, &res);
  TM_ASSERT_INT_EQ(check_dvs(root), 0);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 0);
}

/* Two deletion vectors for one data file is a broken table, refused by the plan. */
TM_TEST(iceberg_ops_v3_two_dvs_for_one_file_are_refused) {
  const char *root = make_v3("v3two", NULL);
  append_range(root, 0, 10);
  tm_iceberg_op_result res;
  delete_where(root, "id = 3", TM_ICEBERG_DELETE_POSITION, NULL, &res);
  /* Add a second DV entry for the same file by hand, pointing at the same blob. */
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  TM_ASSERT_INT_EQ(sc->n_tasks, 1);
  TM_ASSERT_INT_EQ(sc->tasks[0].n_deletes, 1);
  tm_iceberg_commit *c = NULL;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, "delete", &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_add_file(c, sc->tasks[0].deletes[0], &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_finish(c, NULL, &err), &err);
  tm_iceberg_commit_free(c);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  t = open_at(root);
  TM_ASSERT_RC(tm_iceberg_plan_scan(t, NULL, &sc, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "two deletion vectors");
  tm_iceberg_table_free(t);
}

/* Broken DV entries: no referenced data file (refused by the plan), an offset
 * that names no blob of the Puffin file (refused by the read, naming it). */
TM_TEST(iceberg_ops_v3_broken_dv_entries_name_the_file) {
  for (int variant = 0; variant < 2; variant++) {
    const char *root = make_v3(variant ? "v3off" : "v3ref", NULL);
    append_range(root, 0, 10);
    tm_iceberg_op_result res;
    delete_where(root, "id = 3", TM_ICEBERG_DELETE_POSITION, NULL, &res);
    tm_iceberg_table *t = open_at(root);
    tm_iceberg_scan *sc = NULL;
    tm_error err;
    TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
    tm_iceberg_data_file dv = *sc->tasks[0].deletes[0];
    char puffin[4096];
    snprintf(puffin, sizeof puffin, "%s", dv.path);
    tm_iceberg_commit *c = NULL;
    TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, "delete", &err), &err);
    TM_ASSERT_OK(tm_iceberg_commit_remove_dv(c, dv.path, dv.content_offset, &err), &err);
    if (variant) {
      dv.content_offset += 1;
    } else {
      dv.referenced_data_file = NULL;
    }
    TM_ASSERT_OK(tm_iceberg_commit_add_file(c, &dv, &err), &err);
    TM_ASSERT_OK(tm_iceberg_commit_finish(c, NULL, &err), &err);
    tm_iceberg_commit_free(c);
    tm_iceberg_scan_free(sc);
    tm_iceberg_table_free(t);
    t = open_at(root);
    int rc = tm_iceberg_plan_scan(t, NULL, &sc, &err);
    if (!variant) {
      TM_ASSERT_RC(rc, TM_ECORRUPT);
      TM_ASSERT_CONTAINS(err.message, "without a Puffin file_format, referenced_data_file");
    } else {
      TM_ASSERT_OK(rc, &err);
      tm_iceberg_rows *r = NULL;
      tm_batch b;
      tm_batch_init(&b);
      rc = tm_iceberg_rows_open(&r, t, sc, NULL, &err);
      if (rc == TM_OK) rc = tm_iceberg_rows_next(r, &b, &err);
      TM_ASSERT_RC(rc, TM_ECORRUPT);
      TM_ASSERT_CONTAINS(err.message, "no blob at offset");
      TM_ASSERT_CONTAINS(err.message, strrchr(puffin, '/') + 1);
      tm_iceberg_rows_free(r);
      tm_iceberg_scan_free(sc);
    }
    tm_iceberg_table_free(t);
  }
}

/* v3 types: timestamp_ns read as nanosecond timestamps, unknown as an all-null
 * column, variant refused naming the column. */
TM_TEST(iceberg_ops_v3_types) {
  const char *root = tm_test_path("v3types");
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = "[{\"name\": \"id\", \"type\": \"long\", \"required\": true}, "
                   "{\"name\": \"ts\", \"type\": \"timestamp_ns\"}, "
                   "{\"name\": \"tz\", \"type\": \"timestamptz_ns\"}, "
                   "{\"name\": \"u\", \"type\": \"unknown\"}]";
  co.format_version = 3;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_schema *is = tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t));
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_iceberg_schema_to_tm(is, &s, &err), &err);
  TM_ASSERT_INT_EQ(s.cols[1].type.id, TM_TYPE_TIMESTAMP);
  TM_ASSERT_INT_EQ(s.cols[1].type.unit, TM_UNIT_NANO);
  TM_ASSERT(!s.cols[1].type.utc);
  TM_ASSERT_INT_EQ(s.cols[2].type.unit, TM_UNIT_NANO);
  TM_ASSERT(s.cols[2].type.utc);
  TM_ASSERT(s.cols[3].nullable);
  tm_schema_dispose(&s);
  /* Rows: a nanosecond value survives the write and the read; u is null. */
  tm_schema ws;
  tm_schema_init(&ws);
  TM_ASSERT_OK(tm_schema_add(&ws, "id", tm_type_of(TM_TYPE_INT64), false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&ws, "ts", tm_type_timestamp(TM_UNIT_NANO, false), true, -1, &err),
               &err);
  TM_ASSERT_OK(tm_schema_add(&ws, "tz", tm_type_timestamp(TM_UNIT_NANO, true), true, -1, &err),
               &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &ws, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), 1, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), INT64_C(1700000000123456789),
                                        &err),
               &err);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 2), 7, &err), &err);
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&ws);
  tm_iceberg_data_writer *w = NULL;
  tm_iceberg_data_writer_options wo = TM_ICEBERG_DATA_WRITER_OPTIONS_INIT;
  TM_ASSERT_OK(tm_iceberg_data_writer_new(&w, t, &wo, &err), &err);
  TM_ASSERT_OK(tm_iceberg_data_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_iceberg_data_writer_finish(w, &err), &err);
  tm_batch_release(&b);
  tm_iceberg_commit *c = NULL;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, "append", &err), &err);
  const tm_iceberg_data_file *files;
  size_t nf = tm_iceberg_data_writer_files(w, &files);
  for (size_t i = 0; i < nf; i++) TM_ASSERT_OK(tm_iceberg_commit_add_file(c, &files[i], &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_finish(c, NULL, &err), &err);
  tm_iceberg_commit_free(c);
  tm_iceberg_data_writer_free(w);
  tm_iceberg_table_free(t);
  t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  TM_ASSERT_OK(tm_iceberg_rows_next(r, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.n_rows, 1);
  tm_colview ts = tm_batch_col(&b, 1), tz = tm_batch_col(&b, 2), u = tm_batch_col(&b, 3);
  TM_ASSERT_INT_EQ(tm_colview_int(&ts, 0), INT64_C(1700000000123456789));
  TM_ASSERT_INT_EQ(tm_colview_int(&tz, 0), 7);
  TM_ASSERT(tm_colview_is_null(&u, 0));
  tm_batch_release(&b);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  /* variant: refused, naming the column. */
  const char *root2 = tm_test_path("v3variant");
  co.schema_json = "[{\"name\": \"id\", \"type\": \"long\", \"required\": true}, "
                   "{\"name\": \"payload\", \"type\": \"variant\"}]";
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root2, &co, &err), &err);
  t = open_at(root2);
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  r = NULL;
  TM_ASSERT_RC(tm_iceberg_rows_open(&r, t, sc, NULL, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "payload");
  TM_ASSERT_CONTAINS(err.message, "variant");
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

/* Renamed and reordered columns are read by field id (SPEC B14). */
TM_TEST(iceberg_ops_schema_evolution_by_field_id) {
  const char *root = make("e", NULL);
  append_range(root, 0, 10);
  /* Rename id -> key and day -> d, move region first, add a new column. */
  char path[4096];
  snprintf(path, sizeof path, "%s/metadata/v2.metadata.json", root);
  char *data = NULL;
  size_t len;
  tm_error err;
  TM_ASSERT_OK(tm_read_file(path, 1 << 24, &data, &len, &err), &err);
  tm_buf nb = TM_BUF_INIT(1 << 24);
  TM_ASSERT(strstr(data, "\"schemas\"") != NULL);
  tm_iceberg_table *t = open_at(root);
  tm_free(data);
  /* The writer has no schema-evolution command: write the evolved schema as
   * the next metadata version directly, as another engine would. */
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  tm_buf doc = TM_BUF_INIT(1 << 24);
  TM_ASSERT_OK(tm_iceberg_metadata_to_json(m, &doc, &err), &err);
  const char *needle = "\"current-schema-id\": 0";
  char *pos = strstr(doc.ptr, needle);
  TM_ASSERT(pos != NULL);
  TM_ASSERT_OK(tm_buf_append(&nb, doc.ptr, (size_t)(pos - doc.ptr), &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&nb, "\"current-schema-id\": 1", &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&nb, pos + strlen(needle), &err), &err);
  const char *sch = "\"schemas\": [";
  char *sp = strstr(nb.ptr, sch);
  TM_ASSERT(sp != NULL);
  tm_buf fin = TM_BUF_INIT(1 << 24);
  TM_ASSERT_OK(tm_buf_append(&fin, nb.ptr, (size_t)(sp - nb.ptr) + strlen(sch), &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&fin,
                           "{\"type\": \"struct\", \"schema-id\": 1, \"fields\": ["
                           "{\"id\": 3, \"name\": \"region\", \"required\": false, \"type\": \"string\"},"
                           "{\"id\": 1, \"name\": \"key\", \"required\": true, \"type\": \"long\"},"
                           "{\"id\": 4, \"name\": \"added\", \"required\": false, \"type\": \"int\","
                           " \"initial-default\": 7},"
                           "{\"id\": 2, \"name\": \"d\", \"required\": false, \"type\": \"date\"}]}, ",
                           &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&fin, sp + strlen(sch), &err), &err);
  char *lc = strstr(fin.ptr, "\"last-column-id\": 3");
  TM_ASSERT(lc != NULL);
  lc[strlen("\"last-column-id\": ")] = '4';
  snprintf(path, sizeof path, "%s/metadata/v3.metadata.json", root);
  tm_test_write_file(path, fin.ptr);
  snprintf(path, sizeof path, "%s/metadata/version-hint.text", root);
  tm_test_write_file(path, "3");
  tm_buf_dispose(&doc);
  tm_buf_dispose(&nb);
  tm_buf_dispose(&fin);
  tm_iceberg_table_free(t);

  t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  const tm_schema *os = tm_iceberg_rows_schema(r);
  TM_ASSERT_STR_EQ(os->cols[0].name, "region");
  TM_ASSERT_STR_EQ(os->cols[1].name, "key");
  TM_ASSERT_STR_EQ(os->cols[2].name, "added");
  TM_ASSERT_STR_EQ(os->cols[3].name, "d");
  tm_batch b;
  tm_batch_init(&b);
  int64_t n = 0;
  int rc;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    tm_colview key = tm_batch_col(&b, 1), added = tm_batch_col(&b, 2), d = tm_batch_col(&b, 3);
    tm_colview region = tm_batch_col(&b, 0);
    for (int64_t i = 0; i < b.n_rows; i++) {
      int64_t k = tm_colview_int(&key, i);
      TM_ASSERT(k >= 0 && k < 10);
      TM_ASSERT_INT_EQ(tm_colview_int(&added, i), 7); /* the initial default */
      TM_ASSERT_INT_EQ(tm_colview_int(&d, i), 19000);
      TM_ASSERT(tm_colview_is_null(&region, i) == (k % 3 == 2));
    }
    n += b.n_rows;
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(n, 10);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_where_syntax) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  const char *json =
      "{\"format-version\": 2, \"table-uuid\": \"u\", \"location\": \"/x\", "
      "\"last-sequence-number\": 0, \"last-updated-ms\": 1, \"last-column-id\": 4, "
      "\"current-schema-id\": 0, \"schemas\": [{\"type\": \"struct\", \"schema-id\": 0, "
      "\"fields\": [{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}, "
      "{\"id\": 2, \"name\": \"ts\", \"required\": false, \"type\": \"timestamptz\"}, "
      "{\"id\": 3, \"name\": \"name\", \"required\": false, \"type\": \"string\"}, "
      "{\"id\": 4, \"name\": \"amount\", \"required\": false, \"type\": \"decimal(10,2)\"}]}], "
      "\"default-spec-id\": 0, \"partition-specs\": [{\"spec-id\": 0, \"fields\": []}], "
      "\"last-partition-id\": 999, \"default-sort-order-id\": 0, \"sort-orders\": "
      "[{\"order-id\": 0, \"fields\": []}]}";
  TM_ASSERT_OK(tm_iceberg_metadata_parse(&m, json, strlen(json), "x", &err), &err);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(m);
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_iceberg_parse_where("id >= 3 and ts < '2024-01-02T00:00:00Z' AND name IN ('a', "
                                      "'it''s') AND amount = 1.5 AND name IS NOT NULL",
                                      s, &p, &err), &err);
  TM_ASSERT_INT_EQ(p.n_terms, 5);
  TM_ASSERT_INT_EQ(p.terms[0].op, TM_PRED_GE);
  TM_ASSERT_INT_EQ(p.terms[1].value.v.i, tm_days_from_civil(2024, 1, 2) * 86400 * INT64_C(1000000));
  TM_ASSERT_INT_EQ(p.terms[2].n_in, 2);
  TM_ASSERT_INT_EQ(p.terms[2].in_values[1].v.s.len, 4);
  TM_ASSERT_INT_EQ(p.terms[3].value.v.dec[0], 150);
  TM_ASSERT_INT_EQ(p.terms[4].op, TM_PRED_IS_NOT_NULL);
  tm_predicate_dispose(&p);
  const char *bad[] = {"nope = 1", "id = 'x'", "id != 3", "id =", "id = 1 OR id = 2",
                       "name = 'unterminated"};
  const char *why[] = {"not a column", "not a int64 value", "not supported", "expected a value",
                       "expected AND", "unterminated"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_predicate_init(&p);
    TM_ASSERT_RC(tm_iceberg_parse_where(bad[i], s, &p, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, why[i]);
    tm_predicate_dispose(&p);
  }
  tm_iceberg_metadata_free(m);
}

/* Rows of the current snapshot whose region is `region`, and the sum of their ids. */
static void region_stats(const char *root, const char *region, int64_t *count, int64_t *sum) {
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *sc = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  *count = *sum = 0;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    tm_colview id = tm_batch_col(&b, 0), reg = tm_batch_col(&b, 2);
    for (int64_t i = 0; i < b.n_rows; i++) {
      if (tm_colview_is_null(&reg, i)) continue;
      tm_strview v = tm_colview_bytes(&reg, i);
      if (v.len != strlen(region) || memcmp(v.ptr, region, v.len) != 0) continue;
      *count += 1;
      *sum += tm_colview_int(&id, i);
    }
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

static const char *write_csv(const char *name, const char *text) {
  const char *path = tm_test_path(name);
  FILE *f = fopen(path, "w");
  TM_ASSERT(f != NULL);
  TM_ASSERT(fputs(text, f) >= 0);
  TM_ASSERT(fclose(f) == 0);
  return path;
}

static int upsert(const char *root, const char *csv, const char *key, tm_iceberg_op_result *res,
                  tm_error *err) {
  tm_iceberg_table *t = open_at(root);
  const char *cols[1] = {key};
  const char *paths[1] = {csv};
  int rc = tm_iceberg_upsert_files(t, paths, 1, cols, 1, NULL, res, err);
  tm_iceberg_table_free(t);
  return rc;
}

/* Upsert (issue 19): data files and an equality delete of their keys in one
 * overwrite snapshot; the older rows of those keys go, the new rows stay. */
static void upsert_case(const char *root) {
  append_range(root, 0, 300);
  int64_t n, sum, sum_all = 299 * 300 / 2;
  tm_iceberg_op_result res;
  tm_error err;
  const char *csv = write_csv("up1.csv", "id,day,region\n5,2024-01-01,xx\n6,2024-01-01,xx\n"
                                         "7,,xx\n1000,2024-01-02,xx\n");
  TM_ASSERT_OK(upsert(root, csv, "id", &res, &err), &err);
  TM_ASSERT(res.snapshot_id > 0);
  TM_ASSERT_INT_EQ(res.rows_added, 4);
  TM_ASSERT(res.data_files_added >= 1);
  TM_ASSERT(res.delete_files_added >= 1);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 301);
  TM_ASSERT_INT_EQ(sum, sum_all + 1000);
  region_stats(root, "xx", &n, &sum);
  TM_ASSERT_INT_EQ(n, 4);
  TM_ASSERT_INT_EQ(sum, 5 + 6 + 7 + 1000);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(tm_iceberg_table_metadata(t));
  TM_ASSERT_STR_EQ(cur->operation, "overwrite");
  tm_iceberg_table_free(t);
  /* Upserting the same keys again replaces the rows the first upsert added
   * (a lower sequence number), one row per key. */
  csv = write_csv("up2.csv", "id,day,region\n6,2024-01-01,yy\n1000,2024-01-03,yy\n");
  TM_ASSERT_OK(upsert(root, csv, "id", &res, &err), &err);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 301);
  TM_ASSERT_INT_EQ(sum, sum_all + 1000);
  region_stats(root, "xx", &n, &sum);
  TM_ASSERT_INT_EQ(n, 2);
  TM_ASSERT_INT_EQ(sum, 5 + 7);
  region_stats(root, "yy", &n, &sum);
  TM_ASSERT_INT_EQ(n, 2);
  TM_ASSERT_INT_EQ(sum, 6 + 1000);
  /* Compaction keeps exactly those rows. */
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_compact(t, NULL, &res, &err), &err);
  tm_iceberg_table_free(t);
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 301);
  TM_ASSERT_INT_EQ(sum, sum_all + 1000);
}

TM_TEST(iceberg_ops_upsert_unpartitioned) { upsert_case(make("u", NULL)); }

TM_TEST(iceberg_ops_upsert_partitioned_by_key) { upsert_case(make("ub", "bucket[3](id)")); }

TM_TEST(iceberg_ops_upsert_v3) { upsert_case(make_v3("u3", NULL)); }

TM_TEST(iceberg_ops_upsert_refusals) {
  /* A partition column outside the key: its older row could be in another
   * partition, out of reach of this partition's delete file. */
  const char *root = make("ur", "region");
  append_range(root, 0, 10);
  const char *csv = write_csv("ur.csv", "id,day,region\n3,,eu\n");
  tm_iceberg_op_result res;
  tm_error err;
  TM_ASSERT_RC(upsert(root, csv, "id", &res, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "upsert: partition source column region (of partition field "
                                  "region) must be one of the --equality columns");
  TM_ASSERT_RC(upsert(root, csv, "nope", &res, &err), TM_EINVALID);
  TM_ASSERT(strstr(err.message, "nope") != NULL);
  /* With the partition column in the key it works. */
  tm_iceberg_table *t = open_at(root);
  const char *cols[2] = {"id", "region"};
  const char *paths[1] = {csv};
  TM_ASSERT_OK(tm_iceberg_upsert_files(t, paths, 1, cols, 2, NULL, &res, &err), &err);
  tm_iceberg_table_free(t);
  int64_t n, sum;
  id_stats(root, &n, &sum);
  TM_ASSERT_INT_EQ(n, 10);
  TM_ASSERT_INT_EQ(sum, 45);
}

/* ---- nested columns (issue 16) ------------------------------------------------ */

/* A table id long, payload struct<region string (required when
 * region_required), id long, tags list<string>>, partitioned by struct
 * members. payload.region has the explicit id 50; the others are assigned. */
static const char *make_nested(const char *name, const char *partition, bool region_required) {
  const char *root = tm_test_path(name);
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  char schema[1024];
  snprintf(schema, sizeof schema,
           "[{\"name\": \"id\", \"type\": \"long\", \"required\": true}, {\"name\": \"payload\", "
           "\"type\": {\"type\": \"struct\", \"fields\": [{\"id\": 50, \"name\": \"region\", "
           "\"type\": \"string\", \"required\": %s}, {\"name\": \"id\", \"type\": \"long\"}, "
           "{\"name\": \"tags\", \"type\": {\"type\": \"list\", \"element\": \"string\"}}]}}]",
           region_required ? "true" : "false");
  co.schema_json = schema;
  co.partition = partition;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  return root;
}

/* The generated row i: payload NULL (i % 5 == 0), region NULL (i % 7 == 0)
 * or r<i%3>, payload.id 34 for i == 1 (the Iceberg spec's bucket example),
 * NULL for i % 11 == 0, else i * 1000 - 7; tags [] (i % 3 == 0), NULL
 * (i % 4 == 0) or ["a", NULL, "b"]. */
static bool row_payload(int64_t i) { return i % 5 != 0; }
static bool row_region(int64_t i, bool all) { return all || i % 7 != 0; }
static int64_t row_pid(int64_t i) { return i == 1 ? 34 : i * 1000 - 7; }

typedef struct nested_gen {
  int64_t next, to;
  bool int_tags;    /* tags as list<int64>: values that do not convert to string */
  bool all_regions; /* no NULL region inside a present payload */
  bool i32_pid;     /* payload.id as int32: converted to the table's long */
} nested_gen;

static int nested_next(void *payload, tm_batch *out, tm_error *err) {
  nested_gen *g = payload;
  if (g->next >= g->to) return TM_ITEROVER;
  /* The input's own member names (case differs): the table's are written. */
  tm_type utf8 = tm_type_of(TM_TYPE_UTF8), i64 = tm_type_of(TM_TYPE_INT64), tags, st;
  TM_TRY(tm_type_list(g->int_tags ? &i64 : &utf8, true, &tags, err));
  const char *names[3] = {"REGION", "Id", "Tags"};
  tm_type types[3] = {utf8, g->i32_pid ? tm_type_of(TM_TYPE_INT32) : i64, tags};
  bool nl[3] = {true, true, true};
  TM_TRY(tm_type_struct(3, names, types, nl, &st, err));
  tm_schema s;
  tm_schema_init(&s);
  TM_TRY(tm_schema_add(&s, "id", i64, false, -1, err));
  TM_TRY(tm_schema_add(&s, "payload", st, true, -1, err));
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, &s, err));
  tm_schema_dispose(&s);
  int64_t end = g->next + 23 < g->to ? g->next + 23 : g->to;
  int rc = TM_OK;
  for (int64_t i = g->next; rc == TM_OK && i < end; i++) {
    tm_colbuilder *p = tm_batch_builder_col(&bb, 1);
    rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), i, err);
    if (rc == TM_OK && !row_payload(i)) {
      rc = tm_colbuilder_append_null(p, err);
      continue;
    }
    char r[8];
    snprintf(r, sizeof r, "r%d", (int)(i % 3));
    tm_colbuilder *region = tm_colbuilder_child(p, 0), *pid = tm_colbuilder_child(p, 1),
                  *tl = tm_colbuilder_child(p, 2);
    if (rc == TM_OK)
      rc = row_region(i, g->all_regions) ? tm_colbuilder_append_bytes(region, r, 2, err)
                                         : tm_colbuilder_append_null(region, err);
    if (rc == TM_OK)
      rc = i % 11 == 0 ? tm_colbuilder_append_null(pid, err)
                       : tm_colbuilder_append_int(pid, row_pid(i), err);
    if (rc == TM_OK && i % 3 != 0 && i % 4 == 0) {
      rc = tm_colbuilder_append_null(tl, err);
    } else if (rc == TM_OK) {
      tm_colbuilder *e = tm_colbuilder_child(tl, 0);
      for (int k = 0; i % 3 != 0 && k < 3 && rc == TM_OK; k++) {
        if (k == 1) rc = tm_colbuilder_append_null(e, err);
        else if (g->int_tags) rc = tm_colbuilder_append_int(e, k, err);
        else rc = tm_colbuilder_append_bytes(e, k ? "b" : "a", 1, err);
      }
      if (rc == TM_OK) rc = tm_colbuilder_append_nested(tl, err);
    }
    if (rc == TM_OK) rc = tm_colbuilder_append_nested(p, err);
  }
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  g->next = end;
  return rc;
}

/* What one file's rows imply for the metrics of payload.region and payload.id. */
typedef struct leaf_expect {
  int64_t region_nulls, pid_nulls, pid_min, pid_max;
  bool has_pid;
} leaf_expect;

/* Checks every row of b against the generator; counts rows, and into e
 * (may be NULL) what the leaves' metrics should say. */
static void check_nested_rows(const tm_batch *b, const tm_value *part, int64_t *n,
                              leaf_expect *e) {
  tm_colview id = tm_batch_col(b, 0), p = tm_batch_col(b, 1);
  TM_ASSERT_INT_EQ(p.type.id, TM_TYPE_STRUCT);
  /* The table's member names, not the input's. */
  TM_ASSERT_STR_EQ(p.type.nested->name[0], "region");
  TM_ASSERT_STR_EQ(p.type.nested->name[2], "tags");
  tm_colview region = tm_colview_child(&p, 0), pid = tm_colview_child(&p, 1),
             tags = tm_colview_child(&p, 2), elem = tm_colview_child(&tags, 0);
  const int32_t *off = tags.values;
  for (int64_t r = 0; r < b->n_rows; r++) {
    int64_t i = tm_colview_int(&id, r);
    (*n)++;
    if (e) {
      /* A member is NULL where it or the enclosing struct is. */
      bool has_pid = row_payload(i) && i % 11 != 0;
      e->region_nulls += !(row_payload(i) && row_region(i, false));
      e->pid_nulls += !has_pid;
      if (has_pid && (!e->has_pid || row_pid(i) < e->pid_min)) e->pid_min = row_pid(i);
      if (has_pid && (!e->has_pid || row_pid(i) > e->pid_max)) e->pid_max = row_pid(i);
      e->has_pid = e->has_pid || has_pid;
    }
    TM_ASSERT_INT_EQ(!tm_colview_is_null(&p, r), row_payload(i));
    bool has_region = row_payload(i) && row_region(i, false);
    if (part) {
      /* The file's partition: the member's value, NULL under a NULL payload. */
      TM_ASSERT_INT_EQ(!part[0].is_null, has_region);
      if (has_region) TM_ASSERT_INT_EQ(part[0].v.s.ptr[1], '0' + i % 3);
      TM_ASSERT_INT_EQ(!part[1].is_null, row_payload(i) && i % 11 != 0);
      /* Spec, "Appendix B": long 34 hashes to 2017239379, bucket 3 of 4. */
      if (i == 1) TM_ASSERT_INT_EQ(part[1].v.i, 3);
    }
    if (!row_payload(i)) continue;
    TM_ASSERT_INT_EQ(!tm_colview_is_null(&region, r), has_region);
    if (has_region) {
      tm_strview v = tm_colview_bytes(&region, r);
      TM_ASSERT_INT_EQ(v.len, 2);
      TM_ASSERT_INT_EQ(v.ptr[1], '0' + i % 3);
    }
    TM_ASSERT_INT_EQ(tm_colview_is_null(&pid, r), i % 11 == 0);
    if (i % 11 != 0) TM_ASSERT_INT_EQ(tm_colview_int(&pid, r), row_pid(i));
    bool null_tags = i % 3 != 0 && i % 4 == 0;
    TM_ASSERT_INT_EQ(tm_colview_is_null(&tags, r), null_tags);
    if (null_tags) continue;
    TM_ASSERT_INT_EQ(off[r + 1] - off[r], i % 3 == 0 ? 0 : 3);
    if (i % 3 != 0) {
      TM_ASSERT(tm_colview_is_null(&elem, off[r] + 1));
      TM_ASSERT_INT_EQ(tm_colview_bytes(&elem, off[r] + 2).ptr[0], 'b');
    }
  }
}

TM_TEST(iceberg_ops_nested_columns_round_trip) {
  const char *root = make_nested("nested", "payload.region, bucket[4](payload.id)", false);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  /* Ids: payload.region keeps 50; the rest are fresh and unique above it. */
  const tm_iceberg_type *pt = tm_iceberg_metadata_current_schema(m)->root->fields[1].type;
  TM_ASSERT_INT_EQ(m->last_column_id, 55);
  TM_ASSERT_INT_EQ(tm_iceberg_metadata_current_schema(m)->root->fields[0].id, 51);
  TM_ASSERT_INT_EQ(pt->fields[0].id, 50);
  TM_ASSERT_INT_EQ(pt->fields[2].type->element->id, 55);
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, 0);
  TM_ASSERT_STR_EQ(spec->fields[0].name, "payload_region");
  TM_ASSERT_INT_EQ(spec->fields[0].source_id, 50);
  TM_ASSERT_STR_EQ(spec->fields[1].name, "payload_id_bucket");
  TM_ASSERT_INT_EQ(spec->fields[1].source_id, pt->fields[1].id);
  /* Half the rows with payload.id as int32: the same shape, converted. */
  nested_gen g = {0, 100, false, false, false};
  tm_iceberg_op_result res;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_append(t, nested_next, &g, NULL, &res, &err), &err);
  TM_ASSERT_INT_EQ(res.rows_added, 100);
  tm_iceberg_table_free(t);
  t = open_at(root);
  nested_gen g32 = {100, 200, false, false, true};
  TM_ASSERT_OK(tm_iceberg_append(t, nested_next, &g32, NULL, &res, &err), &err);
  TM_ASSERT_INT_EQ(res.rows_added, 100);
  tm_iceberg_table_free(t);

  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  tm_iceberg_scan *sc = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  TM_ASSERT(sc->n_tasks > 4);
  int64_t n = 0;
  for (size_t k = 0; k < sc->n_tasks; k++) {
    const tm_iceberg_data_file *f = sc->tasks[k].file;
    /* The Parquet file carries the table's id on every member. */
    char *real = NULL;
    TM_ASSERT_OK(tm_iceberg_table_resolve(t, f->path, &real, &err), &err);
    tm_parquet_file *pf = NULL;
    TM_ASSERT_OK(tm_parquet_open_path(&pf, real, NULL, &err), &err);
    tm_free(real);
    int fi = tm_parquet_find_field(pf, "payload");
    TM_ASSERT(fi >= 0);
    TM_ASSERT_INT_EQ(tm_parquet_field_at(pf, (size_t)fi)->field_id, 52);
    tm_type ty;
    bool nullable;
    TM_ASSERT_OK(tm_parquet_nested_type(pf, (size_t)fi, &ty, &nullable, &err), &err);
    int32_t ids[4];
    TM_ASSERT_INT_EQ(tm_type_id_slots(&ty), 4);
    TM_ASSERT_OK(tm_parquet_nested_ids(pf, (size_t)fi, &ty, ids, &err), &err);
    TM_ASSERT_INT_EQ(ids[0], 50);
    TM_ASSERT_INT_EQ(ids[1], 53);
    TM_ASSERT_INT_EQ(ids[2], 54);
    TM_ASSERT_INT_EQ(ids[3], 55);
    tm_parquet_close(pf);
    /* Every row of the file belongs to its partition. */
    tm_iceberg_scan one = *sc;
    one.tasks = &sc->tasks[k];
    one.n_tasks = 1;
    tm_iceberg_rows *r = NULL;
    TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, &one, NULL, &err), &err);
    tm_batch b;
    tm_batch_init(&b);
    int rc;
    leaf_expect e = {0, 0, 0, 0, false};
    int64_t n_file = 0;
    while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
      check_nested_rows(&b, f->partition, &n_file, &e);
      tm_batch_release(&b);
    }
    TM_ASSERT_RC(rc, TM_ITEROVER);
    tm_iceberg_rows_free(r);
    n += n_file;
    TM_ASSERT_INT_EQ(n_file, f->record_count);
    /* Metrics by the leaves' ids: id (51), payload.region (50) and
     * payload.id (53) in full; the list element (55) its size only; none
     * for the struct (52) or the list (54). */
    TM_ASSERT_INT_EQ(f->n_stats, 4);
    for (size_t q = 0; q < f->n_stats; q++) {
      const tm_iceberg_col_stats *st = &f->stats[q];
      TM_ASSERT_MSG(st->column_size > 0, "column size of %d", (int)st->field_id);
      if (st->field_id == 55) {
        TM_ASSERT(st->value_count < 0 && st->null_count < 0 && !st->has_lower && !st->has_upper);
        continue;
      }
      TM_ASSERT_INT_EQ(st->value_count, f->record_count);
      if (st->field_id == 50) {
        TM_ASSERT_INT_EQ(st->null_count, e.region_nulls);
        TM_ASSERT_INT_EQ(st->has_lower, !f->partition[0].is_null);
        if (st->has_lower) {
          TM_ASSERT_INT_EQ(st->lower.len, 2);
          TM_ASSERT(memcmp(st->lower.ptr, f->partition[0].v.s.ptr, 2) == 0);
          TM_ASSERT(memcmp(st->upper.ptr, f->partition[0].v.s.ptr, 2) == 0);
        }
      } else if (st->field_id == 53) {
        TM_ASSERT_INT_EQ(st->null_count, e.pid_nulls);
        TM_ASSERT_INT_EQ(st->has_lower, e.has_pid);
        if (e.has_pid) {
          TM_ASSERT_INT_EQ(st->lower.len, 8);
          int64_t lo = 0, hi = 0;
          for (int byte = 7; byte >= 0; byte--) {
            lo = (int64_t)((uint64_t)lo << 8 | (uint8_t)st->lower.ptr[byte]);
            hi = (int64_t)((uint64_t)hi << 8 | (uint8_t)st->upper.ptr[byte]);
          }
          TM_ASSERT_INT_EQ(lo, e.pid_min);
          TM_ASSERT_INT_EQ(hi, e.pid_max);
        }
      } else {
        TM_ASSERT_INT_EQ(st->field_id, 51);
        TM_ASSERT_INT_EQ(st->null_count, 0);
      }
    }
  }
  TM_ASSERT_INT_EQ(n, 200);
  tm_iceberg_scan_free(sc);
  /* Rewrites (copy-on-write delete, compaction) carry the columns through. */
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_iceberg_parse_where("id >= 150", tm_iceberg_metadata_current_schema(m), &p, &err),
               &err);
  TM_ASSERT_OK(tm_iceberg_delete_where(t, &p, TM_ICEBERG_DELETE_COPY_ON_WRITE, NULL, 0, NULL, &res,
                                       &err), &err);
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_compact(t, NULL, &res, &err), &err);
  tm_iceberg_table_free(t);
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &sc, &err), &err);
  tm_iceberg_rows *r = NULL;
  TM_ASSERT_OK(tm_iceberg_rows_open(&r, t, sc, NULL, &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  n = 0;
  while ((rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    check_nested_rows(&b, NULL, &n, NULL);
    tm_colview id = tm_batch_col(&b, 0);
    for (int64_t i = 0; i < b.n_rows; i++) TM_ASSERT(tm_colview_int(&id, i) < 150);
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  TM_ASSERT_INT_EQ(n, 150);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_ops_nested_columns_refusals) {
  tm_iceberg_op_result res;
  tm_error err;
  /* Member values that do not convert (int64 tags for list<string>). */
  const char *root = make_nested("nested_bad", NULL, false);
  tm_iceberg_table *t = open_at(root);
  nested_gen g = {0, 10, true, false, false};
  TM_ASSERT_RC(tm_iceberg_append(t, nested_next, &g, NULL, &res, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "column payload");
  TM_ASSERT_CONTAINS(err.message, "int64");
  TM_ASSERT_CONTAINS(err.message, "utf8");
  /* Another shape (a list for the struct): named, with both types. */
  tm_schema s;
  tm_schema_init(&s);
  tm_type utf8 = tm_type_of(TM_TYPE_UTF8), lst;
  TM_ASSERT_OK(tm_type_list(&utf8, true, &lst, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "payload", lst, true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  tm_schema_dispose(&s);
  TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), 1, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_null(tm_batch_builder_col(&bb, 1), &err), &err);
  tm_batch b;
  tm_batch_init(&b);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_iceberg_data_writer *w = NULL;
  TM_ASSERT_OK(tm_iceberg_data_writer_new(&w, t, NULL, &err), &err);
  TM_ASSERT_RC(tm_iceberg_data_writer_write(w, &b, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "column payload");
  TM_ASSERT_CONTAINS(err.message, "list<utf8>");
  TM_ASSERT_CONTAINS(err.message, "struct<");
  tm_iceberg_data_writer_free(w);
  tm_batch_release(&b);
  tm_iceberg_table_free(t);
  /* A required member: NULL only under a NULL payload is fine ... */
  root = make_nested("nested_req", NULL, true);
  t = open_at(root);
  nested_gen ok = {0, 30, false, true, false};
  TM_ASSERT_OK(tm_iceberg_append(t, nested_next, &ok, NULL, &res, &err), &err);
  TM_ASSERT_INT_EQ(res.rows_added, 30);
  tm_iceberg_table_free(t);
  /* Equality deletes are on primitive columns (Iceberg spec). */
  t = open_at(root);
  tm_predicate p;
  tm_predicate_init(&p);
  TM_ASSERT_OK(tm_iceberg_parse_where("id < 5",
                                      tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t)),
                                      &p, &err), &err);
  const char *eq[1] = {"payload"};
  TM_ASSERT_RC(tm_iceberg_delete_where(t, &p, TM_ICEBERG_DELETE_EQUALITY, eq, 1, NULL, &res, &err),
               TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "equality column payload is a struct");
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
  /* ... a NULL inside a present payload is an error naming the member. */
  t = open_at(root);
  nested_gen bad = {0, 30, false, false, false};
  TM_ASSERT_RC(tm_iceberg_append(t, nested_next, &bad, NULL, &res, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "payload.region");
  tm_iceberg_table_free(t);
  /* A partition on a struct member when the table is partitioned by it
   * through a list: refused at create (partition text). */
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json =
      "[{\"name\": \"l\", \"type\": {\"type\": \"list\", \"element\": {\"type\": \"struct\", "
      "\"fields\": [{\"name\": \"x\", \"type\": \"int\"}]}}}]";
  co.partition = "l.x";
  TM_ASSERT_RC(tm_iceberg_create_table(&g_io, tm_test_path("nested_lp"), &co, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "l is a list");
}
