/*
 * Unit tests for objstore/url.c and the S3 option checks that need no
 * server: dataset URLs (SPEC §4: file:PATH, file://PATH, s3://, s3a://)
 * with their params and AWS_* environment fallbacks.
 */
#include <stdlib.h>

#include "objstore/objstore.h"
#include "objstore/s3/s3.h"
#include "tm_test.h"
#include "util/alloc.h"

static void open_ok(const char *url, const tm_kv *params, const char *scheme, const char *name,
                    const char *prefix) {
  tm_error err;
  tm_objstore *s = NULL;
  char *p = NULL;
  TM_ASSERT_OK(tm_objstore_open_url(&s, &p, url, params, &err), &err);
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), scheme);
  TM_ASSERT_STR_EQ(tm_objstore_name(s), name);
  TM_ASSERT_STR_EQ(p, prefix);
  tm_free(p);
  tm_objstore_free(s);
}

static int open_rc(const char *url, const tm_kv *params, tm_error *err) {
  tm_objstore *s = NULL;
  char *p = NULL;
  int rc = tm_objstore_open_url(&s, &p, url, params, err);
  TM_ASSERT(rc < 0 || (s && p));
  tm_free(p);
  tm_objstore_free(s);
  return rc;
}

static void clear_aws_env(void) {
  const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                        "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_ENDPOINT_URL",
                        "AWS_ENDPOINT_URL_S3"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

TM_TEST(url_file_forms) {
  open_ok("file:/data/events", NULL, "file", "file:/data", "events");
  open_ok("file:///data/events", NULL, "file", "file:/data", "events");
  open_ok("file:/data/events/", NULL, "file", "file:/data/events", "");
  open_ok("file:/x.parquet", NULL, "file", "file:/", "x.parquet");
  open_ok("file:/", NULL, "file", "file:/", "");
  open_ok("file:rel/dir/f.csv", NULL, "file", "file:rel/dir", "f.csv");
  open_ok("file://rel", NULL, "file", "file:.", "rel");
  open_ok("file:../up/t", NULL, "file", "file:../up", "t");
  open_ok("file:.", NULL, "file", "file:.", "");
  tm_error err;
  TM_ASSERT_RC(open_rc("file:", NULL, &err), TM_EINVALID);
  TM_ASSERT_RC(open_rc("file://", NULL, &err), TM_EINVALID);
}

TM_TEST(url_file_store_reads_the_named_file) {
  tm_error err;
  tm_test_write_file(tm_test_path("t.csv"), "a,b\n");
  char *url = tm_asprintf("file://%s", tm_test_path("t.csv"));
  tm_objstore *s = NULL;
  char *prefix = NULL;
  TM_ASSERT_OK(tm_objstore_open_url(&s, &prefix, url, NULL, &err), &err);
  char *data = NULL;
  TM_ASSERT_OK(tm_objstore_read_all(s, prefix, 100, &data, NULL, &err), &err);
  TM_ASSERT_STR_EQ(data, "a,b\n");
  tm_free(data);
  tm_free(prefix);
  tm_free(url);
  tm_objstore_free(s);
}

TM_TEST(url_s3_and_s3a_and_mem) {
  clear_aws_env();
  open_ok("s3://bucket/data/events", NULL, "s3", "s3://bucket", "data/events");
  open_ok("s3a://bucket/data/", NULL, "s3", "s3://bucket", "data/");
  open_ok("s3://bucket", NULL, "s3", "s3://bucket", "");
  open_ok("mem://t/x", NULL, "mem", "mem://t", "x");
  tm_error err;
  TM_ASSERT_RC(open_rc("s3:///data", NULL, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no bucket");
  TM_ASSERT_RC(open_rc("s3://buck?et/x", NULL, &err), TM_EINVALID);
  TM_ASSERT_RC(open_rc("s3://bucket//x", NULL, &err), TM_EINVALID);
  TM_ASSERT_RC(open_rc("gs://bucket/x", NULL, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "unsupported scheme");
  TM_ASSERT_RC(open_rc("", NULL, &err), TM_EINVALID);
  TM_ASSERT(tm_objstore_url_supported("s3a://b"));
  TM_ASSERT(tm_objstore_url_supported("file:/x"));
  TM_ASSERT(!tm_objstore_url_supported("http://x"));
  TM_ASSERT(!tm_objstore_url_supported(NULL));
}

TM_TEST(url_s3_params_are_checked) {
  /* SPEC §4 params: a typo or a bad value is an error naming the param. */
  clear_aws_env();
  tm_error err;
  tm_kv p;
  tm_kv_init(&p);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_regoin", "eu-west-1", &err), &err);
  TM_ASSERT_RC(open_rc("s3://b/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "s3_regoin");
  tm_kv_dispose(&p);

  tm_kv_init(&p);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_endpoint", "http://127.0.0.1:9000", &err), &err);
  TM_ASSERT_RC(open_rc("s3://b/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "allow_http");
  TM_ASSERT_OK(tm_kv_set(&p, "allow_http", "maybe", &err), &err);
  TM_ASSERT_RC(open_rc("s3://b/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "allow_http");
  TM_ASSERT_OK(tm_kv_set(&p, "allow_http", "true", &err), &err);
  TM_ASSERT_OK(open_rc("s3://b/x", &p, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_key", "AK", &err), &err);
  TM_ASSERT_RC(open_rc("s3://b/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "s3_secret is not");
  TM_ASSERT_OK(tm_kv_set(&p, "s3_secret", "SK", &err), &err);
  TM_ASSERT_OK(open_rc("s3://b/x", &p, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_url_style", "sideways", &err), &err);
  TM_ASSERT_RC(open_rc("s3://b/x", &p, &err), TM_EINVALID);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_url_style", "virtual", &err), &err);
  TM_ASSERT_OK(open_rc("s3://b/x", &p, &err), &err);
  /* Other connectors' params pass through untouched. */
  TM_ASSERT_OK(tm_kv_set(&p, "file_format", "parquet", &err), &err);
  TM_ASSERT_OK(open_rc("s3://b/x", &p, &err), &err);
  const char *bad[] = {"ftp://h", "https://", "https://user:pw@h", "https://h/a b", "h:9000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    TM_ASSERT_OK(tm_kv_set(&p, "s3_endpoint", bad[i], &err), &err);
    TM_ASSERT_MSG(open_rc("s3://b/x", &p, &err) == TM_EINVALID, "endpoint %s", bad[i]);
  }
  tm_kv_dispose(&p);
}

TM_TEST(url_s3_env_fallbacks) {
  clear_aws_env();
  tm_error err;
  setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
  /* An http endpoint from the environment also needs allow_http. */
  TM_ASSERT_RC(open_rc("s3://b/x", NULL, &err), TM_EINVALID);
  setenv("AWS_ENDPOINT_URL_S3", "https://minio.example:9000", 1);
  TM_ASSERT_OK(open_rc("s3://b/x", NULL, &err), &err);
  setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  TM_ASSERT_RC(open_rc("s3://b/x", NULL, &err), TM_EINVALID);
  setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  TM_ASSERT_OK(open_rc("s3://b/x", NULL, &err), &err);
  clear_aws_env();
}

/* Spice's s3_auth and client_timeout, and the checks config check runs (contacting nothing). */
TM_TEST(url_check_params_as_open_does) {
  tm_error err;
  tm_kv p;
  tm_kv_init(&p);
  clear_aws_env();
  TM_ASSERT_OK(tm_kv_set(&p, "s3_auth", "key", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_key", "AK", &err), &err);
  TM_ASSERT_RC(tm_objstore_check_params("s3://b/x/", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "s3_auth: key needs s3_key and s3_secret");
  TM_ASSERT_OK(tm_kv_set(&p, "s3_secret", "SK", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "client_timeout", "45s", &err), &err);
  TM_ASSERT_OK(tm_objstore_check_params("s3://b/x/", &p, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_auth", "public", &err), &err);
  TM_ASSERT_RC(tm_objstore_check_params("s3://b/x/", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "s3_auth: public takes no s3_key or s3_secret");
  TM_ASSERT_OK(tm_kv_set(&p, "s3_auth", "iam_role", &err), &err);
  TM_ASSERT_RC(tm_objstore_check_params("s3://b/x/", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "s3_auth: iam_role takes no s3_key, s3_secret or s3_session_token");
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_auth", "iam_role", &err), &err);
  TM_ASSERT_OK(tm_objstore_check_params("s3://b/x/", &p, &err), &err); /* SPICE.md: the chain */
  TM_ASSERT_OK(tm_kv_set(&p, "s3_auth", "sometimes", &err), &err);
  TM_ASSERT_RC(tm_objstore_check_params("s3://b/x/", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "bad value 'sometimes' (allowed: public, key, iam_role)");
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  TM_ASSERT_OK(tm_kv_set(&p, "client_timeout", "soon", &err), &err);
  TM_ASSERT_RC(tm_objstore_check_params("s3://b/x/", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "param client_timeout: bad duration 'soon'");
  /* A file: URL takes no store params. */
  TM_ASSERT_OK(tm_objstore_check_params("file:/tmp/x/", NULL, &err), &err);
  tm_kv_dispose(&p);
}

TM_TEST(s3_options_are_checked) {
  tm_error err;
  tm_s3_options o;
  tm_s3_options_init(&o);
  tm_objstore *s = NULL;
  TM_ASSERT_RC(tm_objstore_s3_new(&s, &o, &err), TM_EINVALID); /* no bucket */
  o.bucket = "b";
  o.max_retries = -1;
  TM_ASSERT_RC(tm_objstore_s3_new(&s, &o, &err), TM_EINVALID);
  o.max_retries = 2;
  o.version = 99;
  TM_ASSERT_RC(tm_objstore_s3_new(&s, &o, &err), TM_EINVALID);
  o.version = TM_S3_OPTIONS_VERSION;
  o.secret_key = "only-secret";
  TM_ASSERT_RC(tm_objstore_s3_new(&s, &o, &err), TM_EINVALID);
  o.secret_key = NULL;
  TM_ASSERT_OK(tm_objstore_s3_new(&s, &o, &err), &err);
  TM_ASSERT_INT_EQ(tm_objstore_s3_connections(s), 0);
  tm_objstore_free(s);
}
