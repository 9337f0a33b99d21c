/*
 * test_awscreds.c - the AWS credential chain's local links (issue 17,
 * Spice's s3_auth: iam_role): environment first, shared files parsed as the
 * AWS CLI does (comments, CRLF, spaces, the credentials file winning key by
 * key over the config file), refusals naming the key, and the cached chain.
 * The network links (web identity, container, IMDSv2) are exercised against
 * a loopback server in tests/integration/test_s3_credential_chain.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/awscreds.h"
#include "tm_test.h"

static void clear_env(void) {
  static const char *const k[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
      "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
      "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
      "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
      "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", NULL};
  for (size_t i = 0; k[i]; i++) unsetenv(k[i]);
  setenv("HOME", tm_test_tmpdir(), 1);
  setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

TM_TEST(awscreds_environment_first) {
  clear_env();
  setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SKENV", 1);
  setenv("AWS_SESSION_TOKEN", "TOKENV", 1);
  tm_test_write_file(tm_test_path("cred"), "[default]\naws_access_key_id=AKFILE\naws_secret_access_key=SKFILE\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", tm_test_path("cred"), 1);
  tm_aws_creds c;
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_OK(tm_aws_creds_resolve(&c, &err), &err);
  TM_ASSERT_STR_EQ(c.access_key, "AKENV");
  TM_ASSERT_STR_EQ(c.secret_key, "SKENV");
  TM_ASSERT_STR_EQ(c.session_token, "TOKENV");
  TM_ASSERT_STR_EQ(c.source, "environment");
  TM_ASSERT_INT_EQ(c.expires_ms, 0);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "needs its secret access key");
  TM_ASSERT_STR_EQ(c.access_key, ""); /* wiped on failure */
  clear_env();
}

TM_TEST(awscreds_shared_files_as_the_aws_cli_reads_them) {
  clear_env();
  tm_test_write_file(tm_test_path("cred"),
                     "# keys\r\n[other]\r\naws_access_key_id = AKOTHER\r\n"
                     "[work]\r\n  aws_access_key_id =  AKWORK  \r\n; the secret is in config\r\n");
  tm_test_write_file(tm_test_path("conf"),
                     "[default]\nregion = eu-west-1\n[profile work]\naws_access_key_id = AKCONF\n"
                     "aws_secret_access_key = SKCONF\naws_session_token = TKCONF\n"
                     "[profile sso]\nsso_start_url = https://x\n[work]\naws_secret_access_key = NOT\n");
  setenv("AWS_SHARED_CREDENTIALS_FILE", tm_test_path("cred"), 1);
  setenv("AWS_CONFIG_FILE", tm_test_path("conf"), 1);
  setenv("AWS_PROFILE", "work", 1);
  tm_aws_creds c;
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_OK(tm_aws_creds_resolve(&c, &err), &err);
  TM_ASSERT_STR_EQ(c.access_key, "AKWORK"); /* the credentials file wins */
  TM_ASSERT_STR_EQ(c.secret_key, "SKCONF"); /* "[work]" in config is not "[profile work]" */
  TM_ASSERT_STR_EQ(c.session_token, "TKCONF");
  TM_ASSERT_STR_EQ(c.source, "profile work");
  setenv("AWS_PROFILE", "sso", 1);
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "AWS profile sso uses sso_*, which tidemark does not run");
  setenv("AWS_PROFILE", "other", 1);
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "AWS profile other: an access key id needs its secret");
  setenv("AWS_PROFILE", "absent", 1);
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "AWS_PROFILE=absent: no such profile");
  /* No AWS_PROFILE: "default" has a region only, no keys. */
  unsetenv("AWS_PROFILE");
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "AWS profile default has no aws_access_key_id");
  clear_env();
}

TM_TEST(awscreds_nothing_configured_names_every_link) {
  clear_env();
  tm_aws_creds c;
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no AWS credentials found (environment: AWS_ACCESS_KEY_ID unset; "
                                  "shared files (");
  TM_ASSERT_CONTAINS(err.message, "/.aws/credentials");
  TM_ASSERT_CONTAINS(err.message, "web identity: AWS_WEB_IDENTITY_TOKEN_FILE unset");
  TM_ASSERT_CONTAINS(err.message, "container: AWS_CONTAINER_CREDENTIALS_*_URI unset");
  TM_ASSERT_CONTAINS(err.message, "IMDS: AWS_EC2_METADATA_DISABLED=true");
  /* A key longer than the field is refused, never cut. */
  char big[600];
  memset(big, 'K', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  setenv("AWS_ACCESS_KEY_ID", big, 1);
  setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
  TM_ASSERT_RC(tm_aws_creds_resolve(&c, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "access key id longer than 255 bytes");
  clear_env();
}

TM_TEST(awscreds_chain_caches_keys_that_do_not_expire) {
  clear_env();
  setenv("AWS_ACCESS_KEY_ID", "AK1", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SK1", 1);
  tm_aws_chain *chain = NULL;
  tm_aws_creds c;
  tm_error err;
  tm_error_init(&err);
  TM_ASSERT_OK(tm_aws_chain_new(&chain, &err), &err);
  TM_ASSERT_OK(tm_aws_chain_get(chain, &c, &err), &err);
  TM_ASSERT_STR_EQ(c.access_key, "AK1");
  /* Keys without an expiry are resolved once: a changed environment is not re-read. */
  setenv("AWS_ACCESS_KEY_ID", "AK2", 1);
  TM_ASSERT_OK(tm_aws_chain_get(chain, &c, &err), &err);
  TM_ASSERT_STR_EQ(c.access_key, "AK1");
  tm_aws_chain_free(chain);
  /* A chain that cannot resolve reports it on every get. */
  clear_env();
  TM_ASSERT_OK(tm_aws_chain_new(&chain, &err), &err);
  TM_ASSERT_RC(tm_aws_chain_get(chain, &c, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_aws_chain_get(chain, &c, &err), TM_EINVALID);
  tm_aws_chain_free(chain);
}
