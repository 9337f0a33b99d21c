/*
 * Unit tests for format/iceberg authoring (metadata side): create, append,
 * overwrite/remove, replace-table, rollback, expire, concurrent-commit
 * detection, and "what snapshot S added" over those histories (SPEC B4, B5).
 * Data files here are described, not written: planning reads metadata only.
 */
#include <unistd.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/writer.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

static tm_iceberg_io g_io;

static const char *k_schema =
    "[{\"name\": \"id\", \"type\": \"long\", \"required\": true},"
    " {\"name\": \"ts\", \"type\": \"timestamptz\"},"
    " {\"name\": \"region\", \"type\": \"string\"}]";

static tm_iceberg_table *open_at(const char *root) {
  tm_iceberg_io_local(&g_io);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &g_io, &o, &err), &err);
  return t;
}

static const char *make_table(const char *partition) {
  const char *root = tm_test_path("wh/events");
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_schema;
  co.partition = partition;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  return root;
}

/* A described data file: n rows with ids [lo, hi]. */
typedef struct fake_file {
  tm_iceberg_data_file f;
  tm_iceberg_col_stats stats[1];
  uint8_t lo[8], hi[8];
  tm_value part[2];
  char path[256];
} fake_file;

static void put_le64(uint8_t *p, int64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}

static void fake(fake_file *ff, const tm_iceberg_table *t, const char *name, int64_t rows,
                 int64_t lo, int64_t hi, const tm_iceberg_metadata *m) {
  memset(ff, 0, sizeof *ff);
  snprintf(ff->path, sizeof ff->path, "%s/data/%s.parquet", m->location, name);
  ff->f.path = ff->path;
  ff->f.format = "PARQUET";
  ff->f.content = TM_ICEBERG_CONTENT_DATA;
  ff->f.record_count = rows;
  ff->f.file_size = 1000 + rows;
  ff->f.spec_id = m->default_spec_id;
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, m->default_spec_id);
  ff->f.n_partition = spec->n_fields;
  ff->f.partition = ff->part;
  for (size_t i = 0; i < spec->n_fields; i++) {
    ff->part[i].type = spec->fields[i].transform.kind == TM_ICEBERG_TR_IDENTITY ? TM_TYPE_UTF8
                                                                                : TM_TYPE_DATE32;
    if (ff->part[i].type == TM_TYPE_UTF8) {
      ff->part[i].v.s = tm_sv("eu", 2);
    } else {
      ff->part[i].v.i = 20000 + lo;
    }
  }
  put_le64(ff->lo, lo);
  put_le64(ff->hi, hi);
  ff->stats[0].field_id = 1;
  ff->stats[0].column_size = 10;
  ff->stats[0].value_count = rows;
  ff->stats[0].null_count = 0;
  ff->stats[0].nan_count = -1;
  ff->stats[0].has_lower = ff->stats[0].has_upper = true;
  ff->stats[0].lower = tm_sv((const char *)ff->lo, 8);
  ff->stats[0].upper = tm_sv((const char *)ff->hi, 8);
  ff->f.stats = ff->stats;
  ff->f.n_stats = 1;
  (void)t;
}

static int64_t commit_files(const char *root, const char *op, fake_file *add, size_t n_add,
                            const char **remove, size_t n_remove) {
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_commit *c = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, op, &err), &err);
  for (size_t i = 0; i < n_add; i++) TM_ASSERT_OK(tm_iceberg_commit_add_file(c, &add[i].f, &err), &err);
  for (size_t i = 0; i < n_remove; i++)
    TM_ASSERT_OK(tm_iceberg_commit_remove_file(c, remove[i], &err), &err);
  int64_t id = 0;
  TM_ASSERT_OK(tm_iceberg_commit_finish(c, &id, &err), &err);
  tm_iceberg_commit_free(c);
  tm_iceberg_table_free(t);
  return id;
}

static size_t live_files(const char *root, int64_t *rows_out) {
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *s = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &s, &err), &err);
  size_t n = s->n_tasks;
  int64_t rows = 0;
  for (size_t i = 0; i < n; i++) rows += s->tasks[i].file->record_count;
  if (rows_out) *rows_out = rows;
  tm_iceberg_scan_free(s);
  tm_iceberg_table_free(t);
  return n;
}

TM_TEST(iceberg_writer_create_append_and_read_back) {
  const char *root = make_table("day(ts), region");
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->format_version, 2);
  TM_ASSERT(tm_str_has_prefix(m->location, "file:///"));
  TM_ASSERT(tm_iceberg_metadata_current(m) == NULL);
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, 0);
  TM_ASSERT_INT_EQ(spec->n_fields, 2);
  TM_ASSERT_STR_EQ(spec->fields[0].name, "ts_day");
  TM_ASSERT_INT_EQ(spec->fields[0].field_id, 1000);
  TM_ASSERT_INT_EQ(spec->fields[1].transform.kind, TM_ICEBERG_TR_IDENTITY);
  TM_ASSERT_INT_EQ(tm_iceberg_metadata_current_schema(m)->root->fields[2].id, 3);
  fake_file ff[2];
  fake(&ff[0], t, "a", 10, 1, 10, m);
  fake(&ff[1], t, "b", 5, 11, 15, m);
  tm_iceberg_table_free(t);
  /* A second create at the same place is refused. */
  tm_error err;
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_schema;
  TM_ASSERT_RC(tm_iceberg_create_table(&g_io, root, &co, &err), TM_ECONFLICT);

  int64_t s1 = commit_files(root, "append", ff, 2, NULL, 0);
  int64_t rows = 0;
  TM_ASSERT_INT_EQ(live_files(root, &rows), 2);
  TM_ASSERT_INT_EQ(rows, 15);
  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  TM_ASSERT(cur && cur->snapshot_id == s1);
  TM_ASSERT_INT_EQ(cur->sequence_number, 1);
  TM_ASSERT_STR_EQ(cur->operation, "append");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(cur, "added-data-files"), "2");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(cur, "total-records"), "15");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(cur, "engine-name"), "tidemark");
  TM_ASSERT(tm_str_has_suffix(tm_iceberg_table_metadata_path(t), "/v2.metadata.json"));
  TM_ASSERT_INT_EQ(m->n_metadata_log, 1);
  /* Inherited sequence numbers and snapshot ids read back. */
  tm_iceberg_scan *s = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &s, &err), &err);
  for (size_t i = 0; i < s->n_tasks; i++) {
    TM_ASSERT_INT_EQ(s->tasks[i].file->sequence_number, 1);
    TM_ASSERT(s->tasks[i].file->snapshot_id == s1);
    TM_ASSERT_INT_EQ(s->tasks[i].file->partition[1].v.s.len, 2);
    TM_ASSERT_INT_EQ(s->tasks[i].file->n_stats, 1);
  }
  tm_iceberg_scan_free(s);
  /* Partition summaries prune: region = 'us' matches nothing. */
  tm_predicate p;
  tm_predicate_init(&p);
  tm_value us;
  memset(&us, 0, sizeof us);
  us.type = TM_TYPE_UTF8;
  us.v.s = tm_sv("us", 2);
  TM_ASSERT_OK(tm_predicate_add(&p, "region", tm_type_of(TM_TYPE_UTF8), TM_PRED_EQ, &us, &err), &err);
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.filter = &p;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, &so, &s, &err), &err);
  TM_ASSERT_INT_EQ(s->n_tasks, 0);
  TM_ASSERT_INT_EQ(s->stats.manifests_skipped, 1);
  tm_iceberg_scan_free(s);
  tm_predicate_dispose(&p);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_writer_history_and_added_by_snapshot) {
  const char *root = make_table(NULL);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  fake_file a[2], b[1], comp[1], over[1];
  fake(&a[0], t, "a0", 10, 1, 10, m);
  fake(&a[1], t, "a1", 10, 11, 20, m);
  fake(&b[0], t, "b0", 5, 21, 25, m);
  fake(&comp[0], t, "compacted", 25, 1, 25, m);
  fake(&over[0], t, "over", 3, 100, 102, m);
  tm_iceberg_table_free(t);
  int64_t s1 = commit_files(root, "append", a, 2, NULL, 0);
  int64_t s2 = commit_files(root, "append", b, 1, NULL, 0);
  /* compaction after append: replace a0, a1, b0 by one file */
  const char *all[3] = {a[0].path, a[1].path, b[0].path};
  int64_t s3 = commit_files(root, "replace", comp, 1, all, 3);
  int64_t rows = 0;
  TM_ASSERT_INT_EQ(live_files(root, &rows), 1);
  TM_ASSERT_INT_EQ(rows, 25);
  /* overwrite: replace the compacted file by another one */
  const char *one[1] = {comp[0].path};
  int64_t s4 = commit_files(root, "overwrite", over, 1, one, 1);
  TM_ASSERT_INT_EQ(live_files(root, &rows), 1);
  TM_ASSERT_INT_EQ(rows, 3);
  /* a delete snapshot that only adds a delete file */
  fake_file del;
  t = open_at(root);
  fake(&del, t, "pos-deletes", 1, 100, 100, tm_iceberg_table_metadata(t));
  tm_iceberg_table_free(t);
  del.f.content = TM_ICEBERG_CONTENT_POSITION_DELETES;
  del.f.n_stats = 0;
  int64_t s5 = commit_files(root, "delete", &del, 1, NULL, 0);

  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->n_snapshots, 5);
  TM_ASSERT_INT_EQ(m->last_sequence_number, 5);
  const tm_iceberg_snapshot *snap3 = tm_iceberg_metadata_snapshot(m, s3);
  TM_ASSERT_STR_EQ(snap3->operation, "replace");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(snap3, "deleted-data-files"), "3");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(snap3, "deleted-records"), "25");
  TM_ASSERT_STR_EQ(tm_iceberg_snapshot_summary(snap3, "total-data-files"), "1");
  /* SPEC B4: each snapshot's own additions, whatever came later. */
  struct {
    int64_t id;
    size_t data, deletes;
    int64_t rows;
  } want[] = {{s1, 2, 0, 20}, {s2, 1, 0, 5}, {s3, 1, 0, 25}, {s4, 1, 0, 3}, {s5, 0, 1, 0}};
  for (size_t i = 0; i < 5; i++) {
    tm_iceberg_added *ad = NULL;
    tm_error err;
    TM_ASSERT_OK(tm_iceberg_plan_added(t, want[i].id, &ad, &err), &err);
    TM_ASSERT_INT_EQ(ad->n_data_files, want[i].data);
    TM_ASSERT_INT_EQ(ad->n_delete_files, want[i].deletes);
    int64_t r = 0;
    for (size_t k = 0; k < ad->n_data_files; k++) r += ad->data_files[k]->record_count;
    TM_ASSERT_INT_EQ(r, want[i].rows);
    /* Only manifests that snapshot wrote are read: at most data + deletes. */
    TM_ASSERT(ad->stats.manifests_read <= 2);
    tm_iceberg_added_free(ad);
  }
  /* The ancestry from the current snapshot covers the whole history. */
  const tm_iceberg_snapshot **chain = NULL;
  size_t n = 0;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_ancestors_since(m, s5, s2, &chain, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 3);
  TM_ASSERT(chain[0]->snapshot_id == s3 && chain[2]->snapshot_id == s5);
  tm_free(chain);
  tm_iceberg_table_free(t);

  /* rollback to s2: the current line of history forks (SPEC B5). */
  t = open_at(root);
  TM_ASSERT_OK(tm_iceberg_rollback(t, s2, &err), &err);
  tm_iceberg_table_free(t);
  TM_ASSERT_INT_EQ(live_files(root, &rows), 3);
  TM_ASSERT_INT_EQ(rows, 25);
  fake_file after[1];
  t = open_at(root);
  fake(&after[0], t, "after-rollback", 7, 200, 206, tm_iceberg_table_metadata(t));
  TM_ASSERT_RC(tm_iceberg_rollback(t, 999, &err), TM_ENOTFOUND);
  tm_iceberg_table_free(t);
  int64_t s6 = commit_files(root, "append", after, 1, NULL, 0);
  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  TM_ASSERT(tm_iceberg_is_ancestor(m, s6, s2));
  TM_ASSERT(!tm_iceberg_is_ancestor(m, s6, s5));
  TM_ASSERT(!tm_iceberg_is_ancestor(m, s6, s3));
  /* s5 is not an ancestor of the current snapshot, so it cannot be rolled to. */
  TM_ASSERT_RC(tm_iceberg_rollback(t, s5, &err), TM_EINVALID);
  tm_iceberg_added *ad = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_added(t, s6, &ad, &err), &err);
  TM_ASSERT_INT_EQ(ad->n_data_files, 1);
  tm_iceberg_added_free(ad);
  tm_iceberg_table_free(t);
  TM_ASSERT_INT_EQ(live_files(root, &rows), 4);
  TM_ASSERT_INT_EQ(rows, 32);
}

TM_TEST(iceberg_writer_detects_concurrent_commits) {
  const char *root = make_table(NULL);
  tm_iceberg_table *t1 = open_at(root);
  tm_iceberg_table *t2 = open_at(root);
  fake_file f1, f2;
  fake(&f1, t1, "one", 1, 1, 1, tm_iceberg_table_metadata(t1));
  fake(&f2, t2, "two", 1, 2, 2, tm_iceberg_table_metadata(t2));
  tm_iceberg_commit *c1 = NULL, *c2 = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c1, t1, "append", &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c2, t2, "append", &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_add_file(c1, &f1.f, &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_add_file(c2, &f2.f, &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_finish(c1, NULL, &err), &err);
  TM_ASSERT_RC(tm_iceberg_commit_finish(c2, NULL, &err), TM_ECONFLICT);
  TM_ASSERT_CONTAINS(err.message, "another commit");
  tm_iceberg_commit_free(c1);
  tm_iceberg_commit_free(c2);
  tm_iceberg_table_free(t1);
  tm_iceberg_table_free(t2);
  /* The winner's file is there, the loser's is not. */
  tm_iceberg_table *t = open_at(root);
  tm_iceberg_scan *s = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &s, &err), &err);
  TM_ASSERT_INT_EQ(s->n_tasks, 1);
  TM_ASSERT(tm_str_has_suffix(s->tasks[0].file->path, "/one.parquet"));
  tm_iceberg_scan_free(s);
  /* Removing a file that is not live is a conflict too. */
  tm_iceberg_commit *c = NULL;
  TM_ASSERT_OK(tm_iceberg_commit_begin(&c, t, "delete", &err), &err);
  TM_ASSERT_OK(tm_iceberg_commit_remove_file(c, f2.path, &err), &err);
  TM_ASSERT_RC(tm_iceberg_commit_finish(c, NULL, &err), TM_ECONFLICT);
  tm_iceberg_commit_free(c);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_writer_replace_table_and_expire) {
  const char *root = make_table(NULL);
  tm_iceberg_table *t = open_at(root);
  char uuid1[64];
  snprintf(uuid1, sizeof uuid1, "%s", tm_iceberg_table_metadata(t)->table_uuid);
  fake_file a, b;
  fake(&a, t, "a", 4, 1, 4, tm_iceberg_table_metadata(t));
  fake(&b, t, "b", 6, 5, 10, tm_iceberg_table_metadata(t));
  tm_iceberg_table_free(t);
  /* Files that exist, so that expire has something to delete. */
  tm_error err;
  char p[4096];
  snprintf(p, sizeof p, "%s/data", root);
  TM_ASSERT_OK(tm_mkdir_p(p, &err), &err);
  snprintf(p, sizeof p, "%s/data/a.parquet", root);
  tm_test_write_file(p, "a");
  snprintf(p, sizeof p, "%s/data/b.parquet", root);
  tm_test_write_file(p, "b");
  /* A file in a sibling folder whose name starts like the table's: expire
   * must not treat it as the table's own (only files under ROOT/ go). */
  fake_file sib;
  t = open_at(root);
  fake(&sib, t, "x", 1, 100, 100, tm_iceberg_table_metadata(t));
  tm_iceberg_table_free(t);
  char sib_dir[4096], sib_file[4200];
  snprintf(sib_dir, sizeof sib_dir, "%s2", root);
  TM_ASSERT_OK(tm_mkdir_p(sib_dir, &err), &err);
  snprintf(sib_file, sizeof sib_file, "%s/x.parquet", sib_dir);
  tm_test_write_file(sib_file, "x");
  snprintf(sib.path, sizeof sib.path, "file://%s", sib_file);
  fake_file first[2] = {a, sib};
  first[0].f.path = first[0].path;
  first[0].f.stats = first[0].stats;
  first[0].f.partition = first[0].part;
  first[1].f.path = first[1].path;
  first[1].f.stats = first[1].stats;
  first[1].f.partition = first[1].part;
  int64_t s1 = commit_files(root, "append", first, 2, NULL, 0);
  const char *rm[2] = {a.path, sib.path};
  usleep(5000);
  int64_t cutoff = tm_now_ms();
  usleep(5000);
  int64_t s2 = commit_files(root, "overwrite", &b, 1, rm, 2);
  t = open_at(root);
  tm_iceberg_expire_result res;
  TM_ASSERT_OK(tm_iceberg_expire(t, cutoff, &res, &err), &err);
  tm_iceberg_table_free(t);
  TM_ASSERT_INT_EQ(res.snapshots_expired, 1);
  /* a.parquet and s1's manifest list went; b.parquet stays. */
  snprintf(p, sizeof p, "%s/data/a.parquet", root);
  TM_ASSERT(!tm_path_exists(p));
  snprintf(p, sizeof p, "%s/data/b.parquet", root);
  TM_ASSERT(tm_path_exists(p));
  TM_ASSERT(tm_path_exists(sib_file));
  TM_ASSERT(res.files_deleted >= 2);
  t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->n_snapshots, 1);
  TM_ASSERT(tm_iceberg_metadata_snapshot(m, s1) == NULL);
  TM_ASSERT(tm_iceberg_metadata_current(m)->snapshot_id == s2);
  tm_iceberg_table_free(t);
  int64_t rows = 0;
  TM_ASSERT_INT_EQ(live_files(root, &rows), 1);
  TM_ASSERT_INT_EQ(rows, 6);

  /* replace-table: new uuid, same location, no snapshot. */
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.replace = true;
  co.schema_json = "[{\"name\": \"k\", \"type\": \"string\"}]";
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  t = open_at(root);
  m = tm_iceberg_table_metadata(t);
  TM_ASSERT(strcmp(m->table_uuid, uuid1) != 0);
  TM_ASSERT(tm_iceberg_metadata_current(m) == NULL);
  TM_ASSERT_INT_EQ(m->n_snapshots, 0);
  TM_ASSERT_STR_EQ(tm_iceberg_metadata_current_schema(m)->root->fields[0].name, "k");
  TM_ASSERT(tm_iceberg_metadata_current_schema(m)->root->fields[0].id > 3);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_writer_partition_text) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  const char *json =
      "{\"format-version\": 2, \"table-uuid\": \"u\", \"location\": \"/x\", "
      "\"last-sequence-number\": 0, \"last-updated-ms\": 1, \"last-column-id\": 3, "
      "\"current-schema-id\": 0, \"schemas\": [{\"type\": \"struct\", \"schema-id\": 0, "
      "\"fields\": [{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}, "
      "{\"id\": 2, \"name\": \"ts\", \"required\": false, \"type\": \"timestamp\"}, "
      "{\"id\": 3, \"name\": \"name\", \"required\": false, \"type\": \"string\"}]}], "
      "\"default-spec-id\": 0, \"partition-specs\": [{\"spec-id\": 0, \"fields\": []}], "
      "\"last-partition-id\": 999, \"default-sort-order-id\": 0, \"sort-orders\": "
      "[{\"order-id\": 0, \"fields\": []}]}";
  TM_ASSERT_OK(tm_iceberg_metadata_parse(&m, json, strlen(json), "x", &err), &err);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(m);
  tm_buf out = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_iceberg_partition_text_to_json("hour(ts), bucket(16, id), truncate[4](name), name",
                                                 s, 1000, &out, &err), &err);
  TM_ASSERT_CONTAINS(out.ptr, "\"name\":\"ts_hour\"");
  TM_ASSERT_CONTAINS(out.ptr, "\"transform\":\"bucket[16]\"");
  TM_ASSERT_CONTAINS(out.ptr, "\"name\":\"name_trunc\"");
  TM_ASSERT_CONTAINS(out.ptr, "\"field-id\":1003");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("day(nope)", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "nope");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("hour(id)", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("zorder(id)", s, 1000, &out, &err), TM_EINVALID);
  tm_buf_dispose(&out);
  tm_iceberg_metadata_free(m);
}

/* Manifest lists stay short however long the history: carried manifests are
 * merged past commit.manifest.min-count-to-merge, and what each snapshot
 * added is still found by reading only that snapshot's own new manifest. */
TM_TEST(iceberg_writer_merges_manifests) {
  const char *root = tm_test_path("wh/merged");
  tm_iceberg_io_local(&g_io);
  tm_kv props;
  tm_kv_init(&props);
  tm_error err;
  TM_ASSERT_OK(tm_kv_set(&props, "commit.manifest.min-count-to-merge", "3", &err), &err);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_schema;
  co.properties = &props;
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  tm_kv_dispose(&props);
  int64_t ids[8];
  for (int i = 0; i < 8; i++) {
    tm_iceberg_table *t = open_at(root);
    fake_file f;
    char name[32];
    snprintf(name, sizeof name, "f%d", i);
    fake(&f, t, name, i + 1, i, i, tm_iceberg_table_metadata(t));
    tm_iceberg_table_free(t);
    ids[i] = commit_files(root, "append", &f, 1, NULL, 0);
  }
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  tm_iceberg_manifest_list *l = NULL;
  TM_ASSERT_OK(tm_iceberg_read_manifest_list(t, tm_iceberg_metadata_current(m), &l, &err), &err);
  TM_ASSERT_MSG(l->n_files <= 4, "%zu manifests in the list", l->n_files);
  tm_iceberg_manifest_list_free(l);
  for (int i = 0; i < 8; i++) {
    tm_iceberg_added *a = NULL;
    TM_ASSERT_OK(tm_iceberg_plan_added(t, ids[i], &a, &err), &err);
    TM_ASSERT_INT_EQ(a->n_data_files, 1);
    TM_ASSERT_INT_EQ(a->data_files[0]->record_count, i + 1);
    TM_ASSERT_INT_EQ(a->stats.manifests_read, 1);
    tm_iceberg_added_free(a);
  }
  tm_iceberg_table_free(t);
  int64_t rows = 0;
  TM_ASSERT_INT_EQ(live_files(root, &rows), 8);
  TM_ASSERT_INT_EQ(rows, 36);
  /* Sequence numbers survive the merge. */
  t = open_at(root);
  tm_iceberg_scan *s = NULL;
  TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &s, &err), &err);
  for (size_t i = 0; i < s->n_tasks; i++) {
    const tm_iceberg_data_file *f = s->tasks[i].file;
    const tm_iceberg_snapshot *sn = tm_iceberg_metadata_snapshot(tm_iceberg_table_metadata(t),
                                                                 f->snapshot_id);
    TM_ASSERT(sn != NULL);
    TM_ASSERT_INT_EQ(f->sequence_number, sn->sequence_number);
  }
  tm_iceberg_scan_free(s);
  tm_iceberg_table_free(t);
}

/* A new table from columns with nested types (as a Parquet file's): Iceberg
 * struct, list and map with fresh, unique ids at every level, requiredness
 * kept (issue 16). */
TM_TEST(iceberg_writer_create_nested_columns) {
  tm_error err;
  tm_type i32 = tm_type_of(TM_TYPE_INT32), utf8 = tm_type_of(TM_TYPE_UTF8), lst, mp, st, los;
  TM_ASSERT_OK(tm_type_list(&utf8, false, &lst, &err), &err); /* elements required */
  TM_ASSERT_OK(tm_type_map(&utf8, &i32, true, &mp, &err), &err);
  const char *names[3] = {"name", "tags", "attrs"};
  tm_type types[3] = {utf8, lst, mp};
  bool nl[3] = {false, true, true};
  TM_ASSERT_OK(tm_type_struct(3, names, types, nl, &st, &err), &err);
  TM_ASSERT_OK(tm_type_list(&st, true, &los, &err), &err);
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), false, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "payload", st, true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "items", los, true, -1, &err), &err);
  const char *root = tm_test_path("wh/nested");
  tm_iceberg_io_local(&g_io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema = &s;
  co.partition = "payload.name";
  TM_ASSERT_OK(tm_iceberg_create_table(&g_io, root, &co, &err), &err);
  tm_schema_dispose(&s);
  tm_iceberg_table *t = open_at(root);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_type *r = tm_iceberg_metadata_current_schema(m)->root;
  /* id, payload{name, tags{element}, attrs{key, value}}, items{element{name,
   * tags{element}, attrs{key, value}}}: 16 ids. */
  TM_ASSERT_INT_EQ(m->last_column_id, 16);
  /* 16 members, each id 1..16 found: unique. */
  for (int32_t id = 1; id <= 16; id++) {
    const tm_iceberg_field *f = tm_iceberg_schema_find_id(tm_iceberg_metadata_current_schema(m), id);
    TM_ASSERT_MSG(f != NULL, "field id %d", (int)id);
  }
  const tm_iceberg_type *p = r->fields[1].type;
  TM_ASSERT_INT_EQ(p->id, TM_ICEBERG_STRUCT);
  TM_ASSERT(p->fields[0].required);
  TM_ASSERT_INT_EQ(p->fields[1].type->id, TM_ICEBERG_LIST);
  TM_ASSERT(p->fields[1].type->element->required);
  TM_ASSERT_INT_EQ(p->fields[2].type->id, TM_ICEBERG_MAP);
  TM_ASSERT(p->fields[2].type->key->required);
  TM_ASSERT(!p->fields[2].type->value->required);
  TM_ASSERT_INT_EQ(p->fields[2].type->value->type->id, TM_ICEBERG_INT);
  const tm_iceberg_type *items = r->fields[2].type;
  TM_ASSERT_INT_EQ(items->id, TM_ICEBERG_LIST);
  TM_ASSERT(!items->element->required);
  TM_ASSERT_INT_EQ(items->element->type->id, TM_ICEBERG_STRUCT);
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, 0);
  TM_ASSERT_STR_EQ(spec->fields[0].name, "payload_name");
  TM_ASSERT_INT_EQ(spec->fields[0].source_id, p->fields[0].id);
  tm_iceberg_table_free(t);
  /* A member type Iceberg has no type for is named. */
  tm_type u64 = tm_type_of(TM_TYPE_UINT64), bad;
  TM_ASSERT_OK(tm_type_list(&u64, true, &bad, &err), &err);
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "b", bad, true, -1, &err), &err);
  co.schema = &s;
  co.partition = NULL;
  TM_ASSERT_RC(tm_iceberg_create_table(&g_io, tm_test_path("wh/bad"), &co, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "column b");
  TM_ASSERT_CONTAINS(err.message, "uint64");
  tm_schema_dispose(&s);
}

/* Partition sources on struct members: dotted paths through structs only,
 * to a primitive (Iceberg spec); anything else is named. */
TM_TEST(iceberg_writer_partition_text_nested) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  const char *json =
      "{\"format-version\": 2, \"table-uuid\": \"u\", \"location\": \"/x\", "
      "\"last-sequence-number\": 0, \"last-updated-ms\": 1, \"last-column-id\": 9, "
      "\"current-schema-id\": 0, \"schemas\": [{\"type\": \"struct\", \"schema-id\": 0, "
      "\"fields\": [{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}, "
      "{\"id\": 2, \"name\": \"payload\", \"required\": false, \"type\": {\"type\": \"struct\", "
      "\"fields\": [{\"id\": 3, \"name\": \"Region\", \"required\": false, \"type\": \"string\"}, "
      "{\"id\": 4, \"name\": \"user\", \"required\": false, \"type\": {\"type\": \"struct\", "
      "\"fields\": [{\"id\": 5, \"name\": \"id\", \"required\": false, \"type\": \"long\"}]}}, "
      "{\"id\": 6, \"name\": \"tags\", \"required\": false, \"type\": {\"type\": \"list\", "
      "\"element-id\": 7, \"element-required\": false, \"element\": \"string\"}}, "
      "{\"id\": 8, \"name\": \"m\", \"required\": false, \"type\": {\"type\": \"map\", "
      "\"key-id\": 9, \"key\": \"string\", \"value-id\": 10, \"value-required\": false, "
      "\"value\": {\"type\": \"struct\", \"fields\": [{\"id\": 11, \"name\": \"v\", "
      "\"required\": false, \"type\": \"int\"}]}}}]}}]}], "
      "\"default-spec-id\": 0, \"partition-specs\": [{\"spec-id\": 0, \"fields\": []}], "
      "\"last-partition-id\": 999, \"default-sort-order-id\": 0, \"sort-orders\": "
      "[{\"order-id\": 0, \"fields\": []}]}";
  TM_ASSERT_OK(tm_iceberg_metadata_parse(&m, json, strlen(json), "x", &err), &err);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(m);
  tm_buf out = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_iceberg_partition_text_to_json("payload.region, bucket[8](payload.user.id)", s,
                                                 1000, &out, &err), &err);
  TM_ASSERT_CONTAINS(out.ptr, "{\"name\":\"payload_Region\",\"transform\":\"identity\",\"source-id\":3");
  TM_ASSERT_CONTAINS(out.ptr, "{\"name\":\"payload_user_id_bucket\",\"transform\":\"bucket[8]\","
                              "\"source-id\":5");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("payload.tags.element", s, 1000, &out, &err),
               TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "payload.tags is a list");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("payload.m.v", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "payload.m is a map");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("payload.user", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "\"payload.user\" is a struct");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("payload", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("payload.nope", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "payload.nope");
  TM_ASSERT_RC(tm_iceberg_partition_text_to_json("id.x", s, 1000, &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "id is a long, not a struct");
  tm_buf_dispose(&out);
  tm_iceberg_metadata_free(m);
}
