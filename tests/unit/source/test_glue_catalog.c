/*
 * Unit tests for the AWS Glue client (source/glue_catalog.c; issue 18):
 * `glue:DATABASE.TABLE` names, what is taken from a GetTable answer, and the
 * error classes a caller sees before any byte reaches a catalog (bad
 * endpoint, missing settings) or when none answers (D3). The protocol and
 * its signatures are proven against awscli and botocore in
 * tests/integration/test_glue_sources.sh.
 */
#include <string.h>

#include "source/glue_catalog.h"
#include "tm_test.h"
#include "util/alloc.h"

TM_TEST(glue_parse_name) {
  tm_error err;
  tm_error_init(&err);
  char *db = NULL, *t = NULL;
  TM_ASSERT_OK(tm_glue_parse_name("glue:tpch.lineitem", &db, &t, &err), &err);
  TM_ASSERT_STR_EQ(db, "tpch");
  TM_ASSERT_STR_EQ(t, "lineitem");
  tm_free(db);
  tm_free(t);
  /* The first dot splits: a table name may hold dots. */
  TM_ASSERT_OK(tm_glue_parse_name("sales.events.v2", &db, &t, &err), &err);
  TM_ASSERT_STR_EQ(db, "sales");
  TM_ASSERT_STR_EQ(t, "events.v2");
  tm_free(db);
  tm_free(t);
  const char *bad[] = {"glue:orders", "glue:.orders", "glue:sales.", "glue:", "glue:a/b.c"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_RC(tm_glue_parse_name(bad[i], &db, &t, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, "expected glue:DATABASE.TABLE");
  }
}

TM_TEST(glue_parse_table_iceberg_and_files) {
  tm_error err;
  tm_error_init(&err);
  tm_glue_table t;
  static const char ice[] =
      "{\"Table\": {\"Name\": \"orders\", \"DatabaseName\": \"sales\", \"Parameters\": "
      "{\"table_type\": \"iceberg\", \"metadata_location\": \"s3://b/t/metadata/3.metadata.json\"}}}";
  TM_ASSERT_OK(tm_glue_parse_table(ice, sizeof ice - 1, &t, &err), &err);
  TM_ASSERT(tm_glue_table_is_iceberg(&t)); /* any case, as Glue's writers differ */
  TM_ASSERT_STR_EQ(t.name, "orders");
  TM_ASSERT_STR_EQ(t.database, "sales");
  TM_ASSERT_STR_EQ(t.metadata_location, "s3://b/t/metadata/3.metadata.json");
  TM_ASSERT(t.location == NULL && t.serde == NULL);
  tm_glue_table_dispose(&t);
  static const char csv[] =
      "{\"Table\": {\"Name\": \"v\", \"Parameters\": {\"skip.header.line.count\": \"1\", \"n\": 3},"
      " \"StorageDescriptor\": {\"Location\": \"s3://b/v/\", \"InputFormat\": \"org.apache.hadoop."
      "mapred.TextInputFormat\", \"SerdeInfo\": {\"SerializationLibrary\": \"org.apache.hadoop.hive."
      "serde2.OpenCSVSerde\", \"Parameters\": {\"separatorChar\": \";\"}}}}}";
  TM_ASSERT_OK(tm_glue_parse_table(csv, sizeof csv - 1, &t, &err), &err);
  TM_ASSERT(!tm_glue_table_is_iceberg(&t));
  TM_ASSERT_STR_EQ(t.location, "s3://b/v/");
  TM_ASSERT_CONTAINS(t.serde, "OpenCSVSerde");
  TM_ASSERT_STR_EQ(tm_kv_get(&t.serde_params, "separatorChar"), ";");
  TM_ASSERT_STR_EQ(tm_kv_get(&t.params, "skip.header.line.count"), "1");
  TM_ASSERT(tm_kv_get(&t.params, "n") == NULL); /* only string parameters are kept */
  tm_glue_table_dispose(&t);
}

TM_TEST(glue_parse_table_refuses_what_is_not_a_table) {
  tm_error err;
  tm_error_init(&err);
  tm_glue_table t;
  const char *bad[] = {"{}", "{\"Table\": []}", "[1]", "{\"Table\": {", "", "null"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_RC(tm_glue_parse_table(bad[i], strlen(bad[i]), &t, &err), TM_ECORRUPT);
    TM_ASSERT(err.message[0]);
  }
}

TM_TEST(glue_errors_before_and_without_a_catalog) {
  tm_error err;
  tm_error_init(&err);
  tm_glue_table t;
  tm_glue_options o = TM_GLUE_OPTIONS_INIT;
  o.region = "us-east-1";
  o.access_key = "AKID";
  o.secret_key = "secret";
  o.endpoint = "ftp://127.0.0.1:1";
  TM_ASSERT_RC(tm_glue_get_table(&o, "db", "t", &t, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "expected http(s)://HOST[:PORT]");
  o.endpoint = "http://127.0.0.1:1/some/path";
  TM_ASSERT_RC(tm_glue_get_table(&o, "db", "t", &t, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "with no path");
  /* Nothing listens on port 1: transient, retry later (D3). */
  o.endpoint = "http://127.0.0.1:1";
  o.timeout_ms = 2000;
  TM_ASSERT_RC(tm_glue_get_table(&o, "db", "t", &t, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "glue GetTable at http://127.0.0.1:1/");
  o.secret_key = NULL;
  TM_ASSERT_RC(tm_glue_get_table(&o, "db", "t", &t, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no credentials");
  o.secret_key = "secret";
  o.region = NULL;
  TM_ASSERT_RC(tm_glue_get_table(&o, "db", "t", &t, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no region");
}
