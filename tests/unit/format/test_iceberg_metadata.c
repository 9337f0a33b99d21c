/*
 * Unit tests for format/iceberg metadata: the iceberg-rust metadata samples
 * (valid ones load, invalid ones fail naming the problem), finding the
 * current metadata of every test table (version hints, gzip, NNNNN-uuid
 * names), location remapping, ancestry, transforms and the bucket hash
 * (Iceberg spec appendix B), single-value bounds, name mappings. SPEC B14.
 */
#include <jansson.h>
#include <stdlib.h>

#include "format/iceberg/iceberg.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

static const char *ice_dir(void) {
  static char path[4096];
  const char *td = tm_test_require_shared();
  snprintf(path, sizeof path, "%s/iceberg", td);
  return path;
}


static int parse_sample(const char *name, tm_iceberg_metadata **out, tm_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/metadata-json-samples/%s", ice_dir(), name);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 1 << 24, &data, &len, err), err);
  int rc = tm_iceberg_metadata_parse(out, data, len, name, err);
  tm_free(data);
  return rc;
}

TM_TEST(iceberg_valid_metadata_samples_load) {
  const char *valid[] = {"TableMetadataV1Valid.json",
                         "TableMetadataV1Compat.json",
                         "TableMetadataV2Valid.json",
                         "TableMetadataV2ValidMinimal.json",
                         "TableMetadataV3ValidMinimal.json",
                         "TableMetadataV3ValidEncryption.json",
                         "example_empty_table_metadata_v2.json",
                         "example_table_metadata_v2.json",
                         "example_table_metadata_v2_deep_history.json",
                         "example_table_metadata_v2_partition_evolution.json"};
  for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
    tm_error err;
    tm_iceberg_metadata *m = NULL;
    TM_ASSERT_OK(parse_sample(valid[i], &m, &err), &err);
    TM_ASSERT(tm_iceberg_metadata_current_schema(m) != NULL);
    TM_ASSERT(tm_iceberg_metadata_spec(m, m->default_spec_id) != NULL);
    /* Serialising and parsing again gives the same document. */
    tm_buf a = TM_BUF_INIT(1 << 24), b = TM_BUF_INIT(1 << 24);
    TM_ASSERT_OK(tm_iceberg_metadata_to_json(m, &a, &err), &err);
    tm_iceberg_metadata *m2 = NULL;
    TM_ASSERT_OK(tm_iceberg_metadata_parse(&m2, a.ptr, a.len, "roundtrip", &err), &err);
    TM_ASSERT_OK(tm_iceberg_metadata_to_json(m2, &b, &err), &err);
    TM_ASSERT_STR_EQ(a.ptr, b.ptr);
    tm_buf_dispose(&a);
    tm_buf_dispose(&b);
    tm_iceberg_metadata_free(m2);
    tm_iceberg_metadata_free(m);
  }
}

TM_TEST(iceberg_v2_sample_fields) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  TM_ASSERT_OK(parse_sample("TableMetadataV2Valid.json", &m, &err), &err);
  TM_ASSERT_INT_EQ(m->format_version, 2);
  TM_ASSERT_STR_EQ(m->table_uuid, "9c12d441-03fe-4693-9a96-a0705ddf69c1");
  TM_ASSERT_INT_EQ(m->last_sequence_number, 34);
  const tm_iceberg_schema *s = tm_iceberg_metadata_current_schema(m);
  TM_ASSERT_INT_EQ(s->schema_id, 1);
  TM_ASSERT_INT_EQ(s->root->n_fields, 3);
  TM_ASSERT_STR_EQ(s->root->fields[1].name, "y");
  TM_ASSERT_STR_EQ(s->root->fields[1].doc, "comment");
  TM_ASSERT_INT_EQ(s->n_identifier_ids, 2);
  TM_ASSERT_INT_EQ(m->n_sort_orders, 1);
  TM_ASSERT_INT_EQ(m->sort_orders[0].fields[1].transform.kind, TM_ICEBERG_TR_BUCKET);
  TM_ASSERT_INT_EQ(m->sort_orders[0].fields[1].transform.param, 4);
  TM_ASSERT(m->sort_orders[0].fields[1].descending);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  TM_ASSERT(cur && cur->snapshot_id == INT64_C(3055729675574597004));
  TM_ASSERT(cur->has_parent && cur->parent_id == INT64_C(3051729675574597004));
  TM_ASSERT_STR_EQ(cur->operation, "append");
  TM_ASSERT_INT_EQ(m->n_snapshot_log, 2);
  TM_ASSERT(tm_iceberg_is_ancestor(m, cur->snapshot_id, INT64_C(3051729675574597004)));
  TM_ASSERT(!tm_iceberg_is_ancestor(m, INT64_C(3051729675574597004), cur->snapshot_id));
  tm_iceberg_metadata_free(m);

  /* v1: the deprecated single schema and partition-spec; current-snapshot-id -1. */
  TM_ASSERT_OK(parse_sample("TableMetadataV1Valid.json", &m, &err), &err);
  TM_ASSERT_INT_EQ(m->format_version, 1);
  TM_ASSERT(!m->has_current_snapshot);
  TM_ASSERT(tm_iceberg_metadata_current(m) == NULL);
  TM_ASSERT_INT_EQ(m->specs[0].n_fields, 1);
  TM_ASSERT_INT_EQ(m->specs[0].fields[0].field_id, 1000);
  tm_iceberg_metadata_free(m);

  /* v3 with initial defaults. */
  TM_ASSERT_OK(parse_sample("TableMetadataV3ValidMinimal.json", &m, &err), &err);
  s = tm_iceberg_metadata_current_schema(m);
  TM_ASSERT_STR_EQ(s->root->fields[0].initial_default, "1");
  TM_ASSERT(m->has_next_row_id);
  tm_iceberg_metadata_free(m);
}

TM_TEST(iceberg_invalid_metadata_samples_name_the_problem) {
  struct {
    const char *file;
    int code;
    const char *why;
  } cases[] = {
      /* Written when iceberg-rust refused v3; a v1-shaped document that says
       * format-version 3, so for a v3 reader the problem is the missing fields. */
      {"TableMetadataUnsupportedVersion.json", TM_ECORRUPT, "v3 metadata needs"},
      {"TableMetadataV1NoValidSchema.json", TM_ECORRUPT, "current-schema-id"},
      {"TableMetadataV1PartitionSpecsWithoutDefaultId.json", TM_ECORRUPT, "default-spec-id"},
      {"TableMetadataV1SchemasWithoutCurrentId.json", TM_ECORRUPT, "current-schema-id"},
      {"TableMetadataV2CurrentSchemaNotFound.json", TM_ECORRUPT, "current-schema-id"},
      {"TableMetadataV2MissingLastPartitionId.json", TM_ECORRUPT, "last-partition-id"},
      {"TableMetadataV2MissingPartitionSpecs.json", TM_ECORRUPT, "partition-specs"},
      {"TableMetadataV2MissingSchemas.json", TM_ECORRUPT, "\"schemas\""},
      {"TableMetadataV2MissingSortOrder.json", TM_ECORRUPT, "sort-orders"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tm_error err;
    tm_iceberg_metadata *m = NULL;
    int rc = parse_sample(cases[i].file, &m, &err);
    TM_ASSERT_MSG(rc == cases[i].code, "%s: rc %d (%s)", cases[i].file, rc, err.message);
    TM_ASSERT_CONTAINS(err.message, cases[i].why);
    TM_ASSERT_CONTAINS(err.message, cases[i].file);
  }
}

TM_TEST(iceberg_metadata_hostile_input_never_crashes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/metadata-json-samples/TableMetadataV2Valid.json", ice_dir());
  char *data = NULL;
  size_t len = 0;
  tm_error err;
  TM_ASSERT_OK(tm_read_file(path, 1 << 24, &data, &len, &err), &err);
  for (size_t cut = 0; cut < len; cut += 7) {
    tm_iceberg_metadata *m = NULL;
    if (tm_iceberg_metadata_parse(&m, data, cut, "cut", &err) == TM_OK) tm_iceberg_metadata_free(m);
  }
  /* Wrong types for every kind of member. */
  tm_iceberg_metadata *m4 = NULL;
  const char *v4 = "{\"format-version\": 4}";
  TM_ASSERT_RC(tm_iceberg_metadata_parse(&m4, v4, strlen(v4), "v4.json", &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "unsupported Iceberg format-version 4");
  const char *bad[] = {
      "{\"format-version\": \"2\"}",
      "[]",
      "{\"format-version\": 2, \"table-uuid\": 5}",
      "{\"format-version\": 1, \"location\": \"x\", \"last-updated-ms\": 1, \"last-column-id\": 1, "
      "\"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, \"name\": \"a\", \"required\": "
      "true, \"type\": \"decimal(99,1)\"}]}, \"partition-spec\": []}",
      "{\"format-version\": 1, \"location\": \"x\", \"last-updated-ms\": 1, \"last-column-id\": 1, "
      "\"schema\": {\"type\": \"struct\", \"fields\": []}, \"partition-spec\": [], "
      "\"current-snapshot-id\": 7, \"snapshots\": []}",
  };
  const char *why[] = {"format-version", "object", "table-uuid", "unknown Iceberg type",
                       "current-snapshot-id 7"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_iceberg_metadata *m = NULL;
    TM_ASSERT_RC(tm_iceberg_metadata_parse(&m, bad[i], strlen(bad[i]), "bad.json", &err),
                 TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, why[i]);
  }
  tm_free(data);
}

/* EXPECTED.json from the shared test data. */
static json_t *expected(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/EXPECTED.json", ice_dir());
  json_t *j = json_load_file(path, 0, NULL);
  TM_ASSERT(j != NULL);
  return j;
}

TM_TEST(iceberg_current_metadata_of_every_table_is_found) {
  json_t *exp = expected();
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  const char *table;
  json_t *info;
  int n = 0;
  json_object_foreach(exp, table, info) {
    char root[4096];
    snprintf(root, sizeof root, "%s/%s", ice_dir(), table);
    tm_error err;
    char *found = NULL;
    TM_ASSERT_OK(tm_iceberg_locate_metadata(&io, root, &found, &err), &err);
    const char *want = json_string_value(json_object_get(info, "head_metadata"));
    TM_ASSERT_MSG(tm_str_has_suffix(found, want), "%s: found %s, want %s", table, found, want);
    tm_free(found);
    tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
    o.table_root = root;
    tm_iceberg_table *t = NULL;
    TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
    TM_ASSERT_STR_EQ(tm_iceberg_table_metadata(t)->location,
                     json_string_value(json_object_get(info, "location")));
    tm_iceberg_table_free(t);
    n++;
  }
  TM_ASSERT(n >= 40);
  json_decref(exp);
}

TM_TEST(iceberg_location_remapping) {
  char buf[256];
  struct {
    const char *in, *out;
  } cases[] = {{"s3a://warehouse/t/data/x.parquet", "/t/data/x.parquet"},
               {"hdfs://localhost:20500/test-warehouse/t", "/test-warehouse/t"},
               {"/test-warehouse//t/", "/test-warehouse/t"},
               {"./lineitem_iceberg", "lineitem_iceberg"},
               {"lineitem_iceberg/./metadata/a.avro", "lineitem_iceberg/metadata/a.avro"},
               {"file:///abs/path", "/abs/path"},
               {"file:/abs/path", "/abs/path"},
               {"file://data/persistent/x", "/persistent/x"},
               {"s3://bucket", ""}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tm_strview v = tm_iceberg_path_normalize(cases[i].in, buf, sizeof buf);
    TM_ASSERT_MSG(tm_sv_eq_cstr(v, cases[i].out), "%s -> %.*s", cases[i].in, (int)v.len, v.ptr);
  }
  if (!ice_dir()) return;
  /* A table written as s3://warehouse/prod/db/refdeletes3, read in place. */
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  char root[4096];
  snprintf(root, sizeof root, "%s/refdeletes3", ice_dir());
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  char *real = NULL, *key = NULL;
  TM_ASSERT_OK(tm_iceberg_table_resolve(t, "s3://warehouse/prod/db/refdeletes3/data/a.parquet",
                                        &real, &err), &err);
  char want[4200];
  snprintf(want, sizeof want, "%s/data/a.parquet", root);
  TM_ASSERT_STR_EQ(real, want);
  tm_free(real);
  TM_ASSERT_OK(tm_iceberg_table_path_key(t, "s3a://other/prod/db/refdeletes3/data/a.parquet",
                                         &key, &err), &err);
  TM_ASSERT_STR_EQ(key, "data/a.parquet");
  tm_free(key);
  /* Leaving the location through ".." is refused; other paths pass through. */
  TM_ASSERT_RC(tm_iceberg_table_resolve(t, "s3://warehouse/prod/db/refdeletes3/../../x", &real,
                                        &err), TM_ECORRUPT);
  TM_ASSERT_OK(tm_iceberg_table_resolve(t, "s3://elsewhere/x.parquet", &real, &err), &err);
  TM_ASSERT_STR_EQ(real, "s3://elsewhere/x.parquet");
  tm_free(real);
  tm_iceberg_table_free(t);
  /* An explicit remap to another folder. */
  o.location_from = "s3://warehouse/prod";
  o.location_to = "/mnt/wh";
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  TM_ASSERT_OK(tm_iceberg_table_resolve(t, "s3a://warehouse/prod/db/refdeletes3/data/a.parquet",
                                        &real, &err), &err);
  TM_ASSERT_STR_EQ(real, "/mnt/wh/db/refdeletes3/data/a.parquet");
  tm_free(real);
  tm_iceberg_table_free(t);
}

TM_TEST(iceberg_version_hint_traps) {
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_error err;
  const char *root = tm_test_tmpdir();
  char md[4096], p[4096];
  snprintf(md, sizeof md, "%s/metadata", root);
  TM_ASSERT_OK(tm_mkdir_p(md, &err), &err);
  char *found = NULL;
  /* No metadata files at all. */
  TM_ASSERT_RC(tm_iceberg_locate_metadata(&io, root, &found, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "metadata.json");
  const char *names[] = {"v1.metadata.json", "v2.metadata.json", "v10.metadata.json",
                         "v3.1.metadata.json", "00007-abc.metadata.json"};
  for (size_t i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "%s/%s", md, names[i]);
    tm_test_write_file(p, "{}");
  }
  /* Highest vN wins over NNNNN- names; v3.1 is ignored. */
  TM_ASSERT_OK(tm_iceberg_locate_metadata(&io, root, &found, &err), &err);
  TM_ASSERT(tm_str_has_suffix(found, "/v10.metadata.json"));
  tm_free(found);
  /* A hint wins; an empty or stale hint falls back to listing. */
  snprintf(p, sizeof p, "%s/version-hint.text", md);
  tm_test_write_file(p, "2\n");
  TM_ASSERT_OK(tm_iceberg_locate_metadata(&io, root, &found, &err), &err);
  TM_ASSERT(tm_str_has_suffix(found, "/v2.metadata.json"));
  tm_free(found);
  tm_test_write_file(p, "");
  TM_ASSERT_OK(tm_iceberg_locate_metadata(&io, root, &found, &err), &err);
  TM_ASSERT(tm_str_has_suffix(found, "/v10.metadata.json"));
  tm_free(found);
  tm_test_write_file(p, "99");
  TM_ASSERT_OK(tm_iceberg_locate_metadata(&io, root, &found, &err), &err);
  TM_ASSERT(tm_str_has_suffix(found, "/v10.metadata.json"));
  tm_free(found);
  /* Without listing, a stale hint is a clear error. */
  io.list = NULL;
  TM_ASSERT_RC(tm_iceberg_locate_metadata(&io, root, &found, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "version-hint.text");
}

TM_TEST(iceberg_gzip_metadata) {
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  char root[4096];
  snprintf(root, sizeof root, "%s/lineitem_iceberg_gz", ice_dir());
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_ASSERT_INT_EQ(m->format_version, 1);
  TM_ASSERT(tm_str_has_suffix(tm_iceberg_table_metadata_path(t), "v2.gz.metadata.json"));
  TM_ASSERT_INT_EQ(m->n_snapshots, 1);
  tm_iceberg_table_free(t);
  /* A truncated gzip stream is corrupt, not a crash. */
  char path[4200];
  snprintf(path, sizeof path, "%s/metadata/v2.gz.metadata.json", root);
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 1 << 24, &data, &len, &err), &err);
  tm_iceberg_metadata *mm = NULL;
  TM_ASSERT_RC(tm_iceberg_metadata_parse(&mm, data, len / 2, "half.gz", &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "gzip");
  tm_free(data);
}

TM_TEST(iceberg_ancestry_walk) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  TM_ASSERT_OK(parse_sample("example_table_metadata_v2_deep_history.json", &m, &err), &err);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  TM_ASSERT(cur != NULL);
  const tm_iceberg_snapshot **chain = NULL;
  size_t n = 0;
  TM_ASSERT_OK(tm_iceberg_ancestors_since(m, cur->snapshot_id, -1, &chain, &n, &err), &err);
  TM_ASSERT(n >= 2);
  TM_ASSERT(chain[n - 1] == cur);
  for (size_t i = 1; i < n; i++) {
    TM_ASSERT(chain[i]->has_parent && chain[i]->parent_id == chain[i - 1]->snapshot_id);
    TM_ASSERT(tm_iceberg_is_ancestor(m, cur->snapshot_id, chain[i - 1]->snapshot_id));
  }
  int64_t first = chain[0]->snapshot_id;
  size_t total = n;
  tm_free(chain);
  TM_ASSERT_OK(tm_iceberg_ancestors_since(m, cur->snapshot_id, first, &chain, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, total - 1);
  tm_free(chain);
  TM_ASSERT_RC(tm_iceberg_ancestors_since(m, 12345, -1, &chain, &n, &err), TM_ENOTFOUND);
  tm_iceberg_metadata_free(m);
}

/* Iceberg spec appendix B test values. */
TM_TEST(iceberg_bucket_hash_matches_the_spec) {
  tm_error err;
  tm_iceberg_type t = {0};
  tm_value v = {0};
  int32_t h;
  t.id = TM_ICEBERG_INT;
  v.v.i = 34;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, 2017239379);
  t.id = TM_ICEBERG_LONG;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, 2017239379);
  t.id = TM_ICEBERG_DECIMAL; /* 14.20 -> unscaled 1420 */
  memset(v.v.dec, 0, 16);
  v.v.dec[0] = 1420 & 0xff;
  v.v.dec[1] = 1420 >> 8;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -500754589);
  t.id = TM_ICEBERG_DATE;
  v.v.i = tm_days_from_civil(2017, 11, 16);
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -653330422);
  t.id = TM_ICEBERG_TIME;
  v.v.i = (INT64_C(22) * 3600 + 31 * 60 + 8) * 1000000;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -662762989);
  int64_t ts = (tm_days_from_civil(2017, 11, 16) * 86400 + 22 * 3600 + 31 * 60 + 8) * 1000000;
  t.id = TM_ICEBERG_TIMESTAMP;
  v.v.i = ts;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -2047944441);
  v.v.i = ts + 1;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -1207196810);
  t.id = TM_ICEBERG_TIMESTAMPTZ_NS;
  v.v.i = (ts + 1) * 1000 + 1;
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -1207196810);
  t.id = TM_ICEBERG_STRING;
  v.v.s = tm_sv("iceberg", 7);
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, 1210000089);
  t.id = TM_ICEBERG_UUID;
  static const uint8_t uuid[16] = {0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD,
                                   0xA4, 0x79, 0x3F, 0x34, 0x9C, 0xB7, 0x85, 0xE7};
  v.v.s = tm_sv((const char *)uuid, 16);
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, 1488055340);
  t.id = TM_ICEBERG_BINARY;
  v.v.s = tm_sv("\x00\x01\x02\x03", 4);
  TM_ASSERT_OK(tm_iceberg_bucket_hash(&t, &v, &h, &err), &err);
  TM_ASSERT_INT_EQ(h, -188683207);
  t.id = TM_ICEBERG_BOOLEAN;
  TM_ASSERT_RC(tm_iceberg_bucket_hash(&t, &v, &h, &err), TM_EUNSUPPORTED);
}

TM_TEST(iceberg_transforms) {
  tm_error err;
  uint8_t scratch[16];
  tm_iceberg_type t = {0};
  tm_value v = {0}, out;
  tm_iceberg_transform tr = tm_iceberg_transform_parse("truncate[10]");
  TM_ASSERT_INT_EQ(tr.kind, TM_ICEBERG_TR_TRUNCATE);
  t.id = TM_ICEBERG_INT;
  v.type = TM_TYPE_INT32;
  v.v.i = -1;
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.i, -10);
  v.v.i = 1;
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.i, 0);
  /* decimal W=50 scale 2: 10.65 -> 10.50 */
  tr = tm_iceberg_transform_parse("truncate[50]");
  t.id = TM_ICEBERG_DECIMAL;
  t.precision = 9;
  t.scale = 2;
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_DECIMAL128;
  v.v.dec[0] = 1065 & 0xff;
  v.v.dec[1] = 1065 >> 8;
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.dec[0] | out.v.dec[1] << 8, 1050);
  /* strings truncate by code points */
  tr = tm_iceberg_transform_parse("truncate[3]");
  t.id = TM_ICEBERG_STRING;
  v.type = TM_TYPE_UTF8;
  v.v.s = tm_sv("\xc3\xa9t\xc3\xa9s", 7); /* "étés" */
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.s.len, 5);
  /* time transforms, including before the epoch */
  t.id = TM_ICEBERG_TIMESTAMPTZ;
  v.type = TM_TYPE_TIMESTAMP;
  v.v.i = (tm_days_from_civil(2025, 3, 3) * 86400 + 17 * 3600) * INT64_C(1000000);
  struct {
    const char *name;
    int64_t want;
  } cases[] = {{"year", 55}, {"month", 55 * 12 + 2}, {"day", 0}, {"hour", 0}};
  cases[2].want = tm_days_from_civil(2025, 3, 3);
  cases[3].want = tm_days_from_civil(2025, 3, 3) * 24 + 17;
  for (int i = 0; i < 4; i++) {
    tr = tm_iceberg_transform_parse(cases[i].name);
    TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
    TM_ASSERT_INT_EQ(out.v.i, cases[i].want);
  }
  v.v.i = -1; /* 1969-12-31T23:59:59.999999 */
  tr = tm_iceberg_transform_parse("hour");
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.i, -1);
  tr = tm_iceberg_transform_parse("year");
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT_INT_EQ(out.v.i, -1);
  /* void and nulls */
  tr = tm_iceberg_transform_parse("void");
  TM_ASSERT_OK(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), &err);
  TM_ASSERT(out.is_null);
  TM_ASSERT_INT_EQ(tm_iceberg_transform_parse("bucket[0]").kind, TM_ICEBERG_TR_UNKNOWN);
  TM_ASSERT_INT_EQ(tm_iceberg_transform_parse("zorder").kind, TM_ICEBERG_TR_UNKNOWN);
  tr = tm_iceberg_transform_parse("hour");
  t.id = TM_ICEBERG_DATE;
  TM_ASSERT_RC(tm_iceberg_transform_apply(&tr, &t, &v, &out, scratch, &err), TM_EUNSUPPORTED);
}

/*
 * The Trino one-row tables: every partition value in the manifest equals the
 * transform applied to the column's bound (lower == upper for one row), for
 * identity, bucket[N] and year/month/day/hour on many types.
 */
TM_TEST(iceberg_partition_values_match_transforms_of_real_tables) {
  const char *tables[] = {"identity_partitioning", "bucket_partitioning",
                          "day_timestamptz_partitioning", "hour_timestamptz_partitioning",
                          "month_timestamptz_partitioning", "year_date_partitioning",
                          "decimal_partitioning", "partitioning_with_null_value",
                          "iceberg_partitioned", "iceberg_timestamp_part", "map_stats"};
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  int checked = 0;
  for (size_t ti = 0; ti < sizeof tables / sizeof tables[0]; ti++) {
    char root[4096];
    snprintf(root, sizeof root, "%s/%s", ice_dir(), tables[ti]);
    tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
    o.table_root = root;
    tm_iceberg_table *t = NULL;
    tm_error err;
    TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
    const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
    tm_iceberg_scan *s = NULL;
    TM_ASSERT_OK(tm_iceberg_plan_scan(t, NULL, &s, &err), &err);
    TM_ASSERT(s->n_tasks > 0);
    for (size_t k = 0; k < s->n_tasks; k++) {
      const tm_iceberg_data_file *f = s->tasks[k].file;
      const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, f->spec_id);
      for (size_t i = 0; i < spec->n_fields; i++) {
        const tm_iceberg_partition_field *pf = &spec->fields[i];
        const tm_iceberg_field *src =
            tm_iceberg_schema_find_id(tm_iceberg_metadata_current_schema(m), pf->source_id);
        const tm_iceberg_col_stats *st = NULL;
        for (size_t j = 0; j < f->n_stats; j++)
          if (f->stats[j].field_id == pf->source_id) st = &f->stats[j];
        if (!st || !st->has_lower || !st->has_upper || st->lower.len != st->upper.len ||
            memcmp(st->lower.ptr, st->upper.ptr, st->lower.len) != 0) {
          continue; /* several values, or a truncated string bound */
        }
        if (src->type->id == TM_ICEBERG_STRING && st->lower.len >= 16) continue;
        tm_value val, got;
        uint8_t scratch[16];
        TM_ASSERT_OK(tm_iceberg_value_from_bytes(src->type, st->lower, &val, &err), &err);
        TM_ASSERT_OK(tm_iceberg_transform_apply(&pf->transform, src->type, &val, &got, scratch,
                                                &err), &err);
        const tm_value *want = &f->partition[i];
        TM_ASSERT_MSG(!want->is_null, "%s: %s is null", tables[ti], pf->name);
        TM_ASSERT_MSG(tm_value_cmp(&got, want) == 0, "%s: partition %s (%s) differs",
                      tables[ti], pf->name, pf->transform.text);
        checked++;
      }
    }
    tm_iceberg_scan_free(s);
    tm_iceberg_table_free(t);
  }
  TM_ASSERT_MSG(checked >= 40, "only %d partition values checked", checked);
}

TM_TEST(iceberg_single_value_bounds) {
  tm_error err;
  tm_iceberg_type t = {0};
  tm_value v;
  /* long bounds written while the column was an int (4 bytes) */
  t.id = TM_ICEBERG_LONG;
  TM_ASSERT_OK(tm_iceberg_value_from_bytes(&t, tm_sv("\xfe\xff\xff\xff", 4), &v, &err), &err);
  TM_ASSERT_INT_EQ(v.v.i, -2);
  /* timestamp bounds written while the column was a date */
  t.id = TM_ICEBERG_TIMESTAMP;
  TM_ASSERT_OK(tm_iceberg_value_from_bytes(&t, tm_sv("\x01\x00\x00\x00", 4), &v, &err), &err);
  TM_ASSERT_INT_EQ(v.v.i, INT64_C(86400000000));
  /* double from float */
  t.id = TM_ICEBERG_DOUBLE;
  float f = 1.5f;
  char fb[4];
  memcpy(fb, &f, 4);
  TM_ASSERT_OK(tm_iceberg_value_from_bytes(&t, tm_sv(fb, 4), &v, &err), &err);
  TM_ASSERT_DBL_EQ(v.v.f, 1.5);
  /* decimals are minimal big-endian */
  t.id = TM_ICEBERG_DECIMAL;
  t.precision = 10;
  TM_ASSERT_OK(tm_iceberg_value_from_bytes(&t, tm_sv("\xff\x38", 2), &v, &err), &err);
  TM_ASSERT_INT_EQ((int8_t)v.v.dec[15], -1);
  TM_ASSERT_INT_EQ(v.v.dec[0], 0x38); /* -200 */
  tm_buf b = TM_BUF_INIT(64);
  TM_ASSERT_OK(tm_iceberg_value_to_bytes(&t, &v, &b, &err), &err);
  TM_ASSERT_INT_EQ(b.len, 2);
  TM_ASSERT(memcmp(b.ptr, "\xff\x38", 2) == 0);
  tm_buf_dispose(&b);
  /* wrong lengths are corrupt */
  t.id = TM_ICEBERG_INT;
  TM_ASSERT_RC(tm_iceberg_value_from_bytes(&t, tm_sv("\x01\x02", 2), &v, &err), TM_ECORRUPT);
}

TM_TEST(iceberg_name_mapping) {
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  char root[4096];
  snprintf(root, sizeof root, "%s/name_mapping_t1", ice_dir());
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  tm_error err;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_ASSERT(m->name_mapping != NULL);
  TM_ASSERT(tm_iceberg_name_mapping_find(m->name_mapping, "a") >= 0);
  TM_ASSERT_INT_EQ(tm_iceberg_name_mapping_find(m->name_mapping, "no_such_column"), -1);
  tm_iceberg_table_free(t);
}

/* SPEC B3: re-reading an unchanged table parses nothing; any change to the
 * current metadata file (a new version, or the same file rewritten) does. */
TM_TEST(iceberg_reopen_skips_unchanged_metadata) {
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_error err;
  char root[4096], md[4200], p[4300], sample[4300];
  snprintf(root, sizeof root, "%s/reopen", tm_test_tmpdir());
  snprintf(md, sizeof md, "%s/metadata", root);
  TM_ASSERT_OK(tm_mkdir_p(md, &err), &err);
  snprintf(sample, sizeof sample, "%s/metadata-json-samples/TableMetadataV2Valid.json", ice_dir());
  char *data = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(sample, 1 << 24, &data, &len, &err), &err);
  snprintf(p, sizeof p, "%s/v1.metadata.json", md);
  tm_test_write_file(p, data);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL, *t2 = NULL;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, &io, &o, &err), &err);
  TM_ASSERT_OK(tm_iceberg_table_reopen(&t2, t, &io, &o, &err), &err);
  TM_ASSERT(t2 == NULL);
  /* The same file rewritten with other bytes (a writer breaking the rules). */
  char *other = tm_asprintf("%s\n", data);
  TM_ASSERT(other);
  tm_test_write_file(p, other);
  TM_ASSERT_OK(tm_iceberg_table_reopen(&t2, t, &io, &o, &err), &err);
  TM_ASSERT(t2 != NULL);
  tm_iceberg_table_free(t2);
  t2 = NULL;
  /* A new version. */
  snprintf(p, sizeof p, "%s/v2.metadata.json", md);
  tm_test_write_file(p, other);
  TM_ASSERT_OK(tm_iceberg_table_reopen(&t2, t, &io, &o, &err), &err);
  TM_ASSERT(t2 != NULL);
  TM_ASSERT(tm_str_has_suffix(tm_iceberg_table_metadata_path(t2), "/v2.metadata.json"));
  tm_iceberg_table *t3 = NULL;
  TM_ASSERT_OK(tm_iceberg_table_reopen(&t3, t2, &io, &o, &err), &err);
  TM_ASSERT(t3 == NULL);
  /* REST answers compare the same way. */
  TM_ASSERT(tm_iceberg_table_unchanged(t2, other, strlen(other), tm_iceberg_table_metadata_path(t2)));
  TM_ASSERT(!tm_iceberg_table_unchanged(t2, data, len, tm_iceberg_table_metadata_path(t2)));
  TM_ASSERT(!tm_iceberg_table_unchanged(NULL, other, strlen(other), "x"));
  tm_iceberg_table_free(t2);
  tm_iceberg_table_free(t);
  tm_free(other);
  tm_free(data);
}
