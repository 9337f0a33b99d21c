/*
 * Unit tests for the Iceberg source on the real tables of
 * ../shared/testdata/iceberg (read in place): every snapshot of every table in
 * EXPECTED.json reads with its documented row count, deletes applied (B12,
 * B14); the v3 tables with deletion vectors (Trino, Spark) read with the
 * vectors applied when deletes are asked for and without them otherwise
 * (the append path, B12).
 */
#include <jansson.h>
#include <zlib.h>

#include "source/source.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/log.h"

static int64_t count_rows(tm_source *src, bool as_of, int64_t snap, bool deletes, tm_error *err,
                          int *rc_out) {
  tm_scan_request req;
  tm_scan_request_init(&req);
  req.apply_deletes = deletes;
  req.has_as_of = as_of;
  req.as_of_snapshot = snap;
  tm_scan *scan = NULL;
  int64_t n = 0;
  int rc = tm_source_scan(src, &req, &scan, err);
  tm_batch b;
  while (rc == TM_OK && (rc = tm_scan_next(scan, &b, err)) == TM_OK) {
    n += b.n_rows;
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_scan_free(scan);
  *rc_out = rc;
  return n;
}

static size_t gz_read(void *buf, size_t len, void *payload) {
  int n = gzread((gzFile)payload, buf, (unsigned)len);
  return n < 0 ? (size_t)-1 : (size_t)n;
}

/* Snapshot ids in snapshot-log order (else metadata order), kept only when
 * the snapshot is still in the metadata and listed once. */
static size_t snapshot_order(const char *metadata_path, int64_t *ids, size_t cap) {
  json_error_t jerr;
  gzFile gz = gzopen(metadata_path, "rb"); /* reads plain files too */
  TM_ASSERT(gz);
  json_t *root = json_load_callback(gz_read, gz, 0, &jerr);
  gzclose(gz);
  TM_ASSERT_MSG(root, "%s: %s", metadata_path, jerr.text);
  size_t n = 0;
  json_t *snaps = json_object_get(root, "snapshots");
  json_t *log = json_object_get(root, "snapshot-log");
  json_t *arr = log && json_array_size(log) ? log : snaps;
  size_t i, j;
  json_t *e, *s;
  json_array_foreach(arr, i, e) {
    int64_t id = json_integer_value(json_object_get(e, "snapshot-id"));
    bool seen = false, live = false;
    for (size_t k = 0; k < n; k++) seen |= ids[k] == id;
    json_array_foreach(snaps, j, s) live |= json_integer_value(json_object_get(s, "snapshot-id")) == id;
    if (!seen && live && n < cap) ids[n++] = id;
  }
  json_decref(root);
  return n;
}

TM_TEST(B12_B14_every_testdata_table_snapshot_by_snapshot) {
  const char *td = tm_test_require_shared();
  tm_log_set_level(TM_LOG_ERROR);
  char path[2048];
  snprintf(path, sizeof path, "%s/iceberg/EXPECTED.json", td);
  json_error_t jerr;
  json_t *exp = json_load_file(path, 0, &jerr);
  TM_ASSERT_MSG(exp, "%s: %s", path, jerr.text);
  const char *table;
  json_t *info;
  int tables = 0, snapshots = 0, failures = 0, broken = 0;
  json_object_foreach(exp, table, info) {
    const char *head = json_string_value(json_object_get(info, "head_metadata"));
    json_t *per = json_object_get(info, "rows_per_snapshot");
    char root[1024], meta[2048], from[1100];
    snprintf(root, sizeof root, "%s/iceberg/%s", td, table);
    snprintf(meta, sizeof meta, "%s/%s", root, head);
    snprintf(from, sizeof from, "iceberg:file://%s", root);
    tm_kv params;
    tm_kv_init(&params);
    tm_error err;
    TM_ASSERT_OK(tm_kv_set(&params, "metadata_path", meta, &err), &err);
    /* Nested columns as JSON text: every table reads whole (issue 16). */
    tm_source_options o = {TM_SOURCE_OPTIONS_VERSION, from, table, &params, NULL, NULL, NULL, false, TM_UNSUPPORTED_STRING, NULL};
    tm_source *src = NULL;
    TM_ASSERT_OK(tm_source_open(&src, &o, &err), &err);
    int rc = tm_source_describe(src, &err);
    if (rc != TM_OK) {
      tm_test__note("%s: describe failed: %s", table, err.message);
      failures++;
      tm_source_free(src);
      tm_kv_dispose(&params);
      continue;
    }
    tables++;
    int64_t ids[64];
    size_t n_ids = snapshot_order(meta, ids, 64);
    bool table_ok = true;
    size_t k = 0;
    for (size_t s = 0; k < json_array_size(per) && s < n_ids; s++) {
      int64_t want = json_integer_value(json_object_get(json_array_get(per, k), "rows"));
      int src_rc;
      int64_t got = count_rows(src, true, ids[s], true, &err, &src_rc);
      if (src_rc == TM_ENOTFOUND) {
        /* A snapshot whose manifest list is missing (a known defect of the
         * table, README): a clear error, and EXPECTED.json lists no count. */
        tm_test__note("%s snapshot %lld: %s", table, (long long)ids[s], err.message);
        broken++;
        continue;
      }
      k++;
      snapshots++;
      if (src_rc != TM_OK) {
        tm_test__note("%s snapshot %lld: %s", table, (long long)ids[s], err.message);
        failures++;
        table_ok = false;
      } else if (got != want) {
        tm_test__note("%s snapshot %lld: %lld rows, expected %lld", table, (long long)ids[s],
                      (long long)got, (long long)want);
        failures++;
        table_ok = false;
      }
    }
    (void)table_ok;
    tm_source_free(src);
    tm_kv_dispose(&params);
  }
  json_decref(exp);
  tm_test__note("%d tables, %d snapshots, %d missing manifest lists", tables, snapshots, broken);
  TM_ASSERT(broken <= 1);
  TM_ASSERT_MSG(failures == 0, "%d snapshot reads disagree with EXPECTED.json", failures);
  TM_ASSERT(tables >= 45);
}

/* Deletion vectors through the source: full reads apply them, the append
 * path (apply_deletes false) does not (SPEC B12). Counts from the README. */
TM_TEST(B12_deletion_vectors_apply_on_full_reads_only) {
  const char *td = tm_test_require_shared();
  tm_log_set_level(TM_LOG_ERROR);
  static const struct {
    const char *table, *head;
    int64_t with, without;
  } cases[] = {
      {"deletion_vectors", "metadata/00004-ae0294d0-1de5-4fab-97f1-cd80e0078fa4.metadata.json", 8,
       16},
      {"iceberg_v3_deletion_vectors", "metadata/v3.metadata.json", 3, 5},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char root[1024], meta[2048], from[1100];
    snprintf(root, sizeof root, "%s/iceberg/%s", td, cases[i].table);
    snprintf(meta, sizeof meta, "%s/%s", root, cases[i].head);
    snprintf(from, sizeof from, "iceberg:file://%s", root);
    tm_kv params;
    tm_kv_init(&params);
    tm_error err;
    TM_ASSERT_OK(tm_kv_set(&params, "metadata_path", meta, &err), &err);
    tm_source_options o = {TM_SOURCE_OPTIONS_VERSION, from, cases[i].table, &params, NULL, NULL,
                           NULL, false, TM_UNSUPPORTED_ERROR, NULL};
    tm_source *src = NULL;
    TM_ASSERT_OK(tm_source_open(&src, &o, &err), &err);
    TM_ASSERT_OK(tm_source_describe(src, &err), &err);
    int rc;
    int64_t n = count_rows(src, false, 0, true, &err, &rc);
    TM_ASSERT_OK(rc, &err);
    TM_ASSERT_INT_EQ(n, cases[i].with);
    n = count_rows(src, false, 0, false, &err, &rc);
    TM_ASSERT_OK(rc, &err);
    TM_ASSERT_INT_EQ(n, cases[i].without);
    tm_source_free(src);
    tm_kv_dispose(&params);
  }
}
