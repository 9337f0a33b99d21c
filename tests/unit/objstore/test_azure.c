/*
 * Unit tests for objstore/azure that need no server: Shared Key strings to
 * sign and signatures, base64, RFC 1123 dates, SAS tokens (sharedkey.c),
 * List Blobs pages as Azure and Azurite write them and hostile documents
 * (azure_xml.c), abfs:// URL forms and params (url.c, azure_params.c).
 * test_azure_store.c runs the store against Azurite.
 */
#include <stdlib.h>

#include "objstore/azure/azure_int.h"
#include "objstore/objstore.h"
#include "tm_test.h"
#include "util/alloc.h"

/*
 * The reference vectors were computed independently with Python's hmac and
 * hashlib by tests/tools/azblob.py (`azblob.py sign-vector`), which follows
 * Microsoft's "Authorize with Shared Key" rules, keyed with Azurite's
 * well-known devstoreaccount1 key.
 */
TM_TEST(azure_sharedkey_put_blob_vector) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_azure_kv h[] = {{"x-ms-version", "2021-08-06"},
                     {"X-Ms-Date", "Sun, 11 Oct 2009 21:49:13 GMT"},
                     {"x-ms-blob-type", "  BlockBlob "}};
  tm_azure_sign_req r = {"PUT", "myaccount", "/mycontainer/dir/a%20b.parquet", NULL, 0, h, 3,
                         11, NULL, NULL, NULL, "*"};
  TM_ASSERT_OK(tm_azure__string_to_sign(&b, &r, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b),
                   "PUT\n\n\n11\n\n\n\n\n\n*\n\n\nx-ms-blob-type:BlockBlob\n"
                   "x-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\nx-ms-version:2021-08-06\n"
                   "/myaccount/mycontainer/dir/a%20b.parquet");
  char sig[45];
  TM_ASSERT_OK(tm_azure__signature(sig, TM_AZURE_EMULATOR_KEY, b.ptr, b.len, &err), &err);
  TM_ASSERT_STR_EQ(sig, "53DpndV2QPdNwnJpmDmiyHc3zaoTyrOeWhnYEGAEDb8=");
  tm_buf_dispose(&b);
}

TM_TEST(azure_sharedkey_list_vector_sorts_query_and_leaves_values_decoded) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_azure_kv h[] = {{"x-ms-date", "Sun, 11 Oct 2009 21:49:13 GMT"},
                     {"x-ms-version", "2021-08-06"}};
  tm_azure_kv q[] = {{"restype", "container"}, {"comp", "list"}, {"prefix", "a b/"},
                     {"marker", "2!80!x"},     {"MaxResults", "2"}};
  tm_azure_sign_req r = {"GET", "myaccount", "/mycontainer", q, 5, h, 2, 0, NULL, NULL, NULL,
                         NULL};
  TM_ASSERT_OK(tm_azure__string_to_sign(&b, &r, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b),
                   "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\n"
                   "x-ms-version:2021-08-06\n/myaccount/mycontainer\ncomp:list\nmarker:2!80!x\n"
                   "maxresults:2\nprefix:a b/\nrestype:container");
  char sig[45];
  TM_ASSERT_OK(tm_azure__signature(sig, TM_AZURE_EMULATOR_KEY, b.ptr, b.len, &err), &err);
  TM_ASSERT_STR_EQ(sig, "KZPRktDh27iO1pwDhQdgElIGg5BBEJAcU+jFm2g/e28=");
  tm_buf_dispose(&b);
}

TM_TEST(azure_sharedkey_repeated_query_names_and_folded_headers) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_azure_kv h[] = {{"x-ms-meta-a", " x   y\t z "}, {"content-type", "ignored"}};
  tm_azure_kv q[] = {{"b", "2"}, {"a", "z"}, {"b", "1"}};
  tm_azure_sign_req r = {"GET", "acct", "/c/k", q, 3, h, 2, 0, "text/plain", "bytes=0-9", "\"e\"",
                         NULL};
  TM_ASSERT_OK(tm_azure__string_to_sign(&b, &r, &err), &err);
  TM_ASSERT_STR_EQ(tm_buf_cstr(&b),
                   "GET\n\n\n\n\ntext/plain\n\n\n\"e\"\n\n\nbytes=0-9\nx-ms-meta-a:x y z\n"
                   "/acct/c/k\na:z\nb:1,2");
  char sig[45];
  TM_ASSERT_RC(tm_azure__signature(sig, "not base64!", b.ptr, b.len, &err), TM_EINVALID);
  tm_buf_dispose(&b);
}

TM_TEST(azure_base64_and_dates) {
  char out[64];
  tm_azure__base64_encode(out, (const uint8_t *)"tmblk-000000001", 15);
  TM_ASSERT_STR_EQ(out, "dG1ibGstMDAwMDAwMDAx");
  tm_azure__base64_encode(out, (const uint8_t *)"ab", 2);
  TM_ASSERT_STR_EQ(out, "YWI=");
  uint8_t dec[8];
  size_t n = 0;
  TM_ASSERT(tm_azure__base64_decode(dec, sizeof dec, &n, "YWI=", 4) && n == 2 && dec[1] == 'b');
  TM_ASSERT(!tm_azure__base64_decode(dec, sizeof dec, &n, "YW=I", 4));
  TM_ASSERT(!tm_azure__base64_decode(dec, sizeof dec, &n, "YWI", 3));
  TM_ASSERT(!tm_azure__base64_decode(dec, 1, &n, "YWI=", 4));
  char d[30];
  tm_azure__http_date(d, 1255297753);
  TM_ASSERT_STR_EQ(d, "Sun, 11 Oct 2009 21:49:13 GMT");
  int64_t t = 0;
  TM_ASSERT(tm_azure__parse_http_date(" Wed, 09 Sep 2009 09:20:02 GMT ", 31, &t));
  TM_ASSERT_INT_EQ(t, INT64_C(1252488002));
  TM_ASSERT(tm_azure__parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT", 29, &t));
  TM_ASSERT(!tm_azure__parse_http_date("Thu, 29 Feb 2023 23:59:59 GMT", 29, &t));
  TM_ASSERT(!tm_azure__parse_http_date("Wed, 09 Sep 2009 09:20:02 UTC", 29, &t));
  TM_ASSERT(!tm_azure__parse_http_date("Wed, 9 Sep 2009 09:20:02 GMT", 28, &t));
  TM_ASSERT(!tm_azure__parse_http_date("Wed, 09 Sep 2009 24:20:02 GMT", 29, &t));
  TM_ASSERT(!tm_azure__parse_http_date("2009-09-09T09:20:02Z", 20, &t));
}

TM_TEST(azure_sas_tokens_are_checked_without_echoing_them) {
  tm_error err;
  const char *q = NULL;
  TM_ASSERT_OK(tm_azure__check_sas("?sv=2021-08-06&sp=rl&sig=abc%3D", &q, &err), &err);
  TM_ASSERT_STR_EQ(q, "sv=2021-08-06&sp=rl&sig=abc%3D");
  TM_ASSERT_OK(tm_azure__check_sas("sig=x&sv=1", &q, &err), &err);
  TM_ASSERT_RC(tm_azure__check_sas("sv=2021-08-06&sp=rl", &q, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no sig=");
  TM_ASSERT_RC(tm_azure__check_sas("sv=1&sig=secret value", &q, &err), TM_EINVALID);
  TM_ASSERT(strstr(err.message, "secret") == NULL);
  TM_ASSERT_RC(tm_azure__check_sas("?", &q, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_azure__check_sas("sig=a#b", &q, &err), TM_EINVALID);
}

/* ---- List Blobs ---- */

static int parse(const char *xml, tm_azure_list_page *page, tm_error *err) {
  tm_azure_list_page_init(page);
  return tm_azure__parse_list(page, xml, strlen(xml), err);
}

static void expect_corrupt(const char *xml, const char *needle) {
  tm_error err;
  tm_azure_list_page page;
  int rc = parse(xml, &page, &err);
  tm_azure_list_page_dispose(&page);
  TM_ASSERT_MSG(rc == TM_ECORRUPT, "rc %d for: %s", rc, xml);
  if (needle) TM_ASSERT_CONTAINS(err.message, needle);
}

#define BLOB(n, s, t)                                                                     \
  "<Blob><Name>" n "</Name><Properties><Creation-Time>Wed, 09 Sep 2009 09:20:02 GMT"     \
  "</Creation-Time><Last-Modified>" t "</Last-Modified><Etag>0x8CBFF45D8A29A19</Etag>"   \
  "<Content-Length>" s "</Content-Length><BlobType>BlockBlob</BlobType></Properties></Blob>"
#define HEAD "<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults " \
  "ServiceEndpoint=\"https://acct.blob.core.windows.net/\" ContainerName=\"c\">"

TM_TEST(azure_xml_page_with_marker) {
  tm_error err;
  tm_azure_list_page page;
  const char *xml = HEAD "<Prefix>d/</Prefix><MaxResults>2</MaxResults><Blobs>"
      BLOB("d/a &amp; b.parquet", "434234", "Wed, 09 Sep 2009 09:20:02 GMT")
      BLOB("d/\xe2\x82\xac.csv", "0", "Thu, 29 Feb 2024 23:59:59 GMT")
      "<BlobPrefix><Name>d/sub/</Name></BlobPrefix>"
      "</Blobs><NextMarker>2!80!MDAwMDE2IWQvJmV1cm8uY3N2ITAwMDAyOCE5OTk5LTEyLTMxVDIzOjU5OjU5Ljk5OTk5OTlaIQ--</NextMarker>"
      "</EnumerationResults>";
  TM_ASSERT_OK(parse(xml, &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 2);
  TM_ASSERT_STR_EQ(page.items.items[0].key, "d/a & b.parquet");
  TM_ASSERT_INT_EQ(page.items.items[0].size, 434234);
  TM_ASSERT_INT_EQ(page.items.items[0].mtime_ms, INT64_C(1252488002000));
  TM_ASSERT_STR_EQ(page.items.items[1].key, "d/\xe2\x82\xac.csv");
  TM_ASSERT_INT_EQ(page.items.items[1].mtime_ms, INT64_C(1709251199000));
  TM_ASSERT(page.next_marker != NULL);
  TM_ASSERT_CONTAINS(page.next_marker, "2!80!");
  tm_azure_list_page_dispose(&page);
}

TM_TEST(azure_xml_last_page_encoded_names_and_folders) {
  tm_error err;
  tm_azure_list_page page;
  const char *xml = HEAD "<Blobs>"
      "<Blob><Name Encoded=\"true\">a%01b%2Fc</Name><Properties>"
      "<Last-Modified>Wed, 09 Sep 2009 09:20:02 GMT</Last-Modified>"
      "<Content-Length>7</Content-Length></Properties></Blob>"
      "<Blob><Name>dir</Name><Properties><Last-Modified>Wed, 09 Sep 2009 09:20:02 GMT"
      "</Last-Modified><Content-Length>0</Content-Length><ResourceType>directory</ResourceType>"
      "</Properties></Blob>"
      "<Blob><Name Encoded=\"false\">x%41</Name><Properties><Content-Length> 5 </Content-Length>"
      "<Last-Modified>Wed, 09 Sep 2009 09:20:02 GMT</Last-Modified></Properties></Blob>"
      "</Blobs><NextMarker /></EnumerationResults>";
  TM_ASSERT_OK(parse(xml, &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 2);
  TM_ASSERT_STR_EQ(page.items.items[0].key, "a\x01" "b/c");
  TM_ASSERT_STR_EQ(page.items.items[1].key, "x%41");
  TM_ASSERT_INT_EQ(page.items.items[1].size, 5);
  TM_ASSERT(page.next_marker == NULL);
  tm_azure_list_page_dispose(&page);
  TM_ASSERT_OK(parse(HEAD "<Blobs/></EnumerationResults>", &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 0);
  tm_azure_list_page_dispose(&page);
}

TM_TEST(azure_xml_hostile_documents) {
  const char *t = "Wed, 09 Sep 2009 09:20:02 GMT";
  (void)t;
  expect_corrupt("", "no XML element");
  expect_corrupt("<ListBucketResult/>", "instead of <EnumerationResults>");
  expect_corrupt(HEAD "<Blobs>" BLOB("a", "-1", "Wed, 09 Sep 2009 09:20:02 GMT") "</Blobs></EnumerationResults>",
                 "not a byte count");
  expect_corrupt(HEAD "<Blobs>" BLOB("a", "18446744073709551616", "Wed, 09 Sep 2009 09:20:02 GMT")
                 "</Blobs></EnumerationResults>", "not a byte count");
  expect_corrupt(HEAD "<Blobs>" BLOB("a", "1 2", "Wed, 09 Sep 2009 09:20:02 GMT") "</Blobs></EnumerationResults>",
                 "not a byte count");
  expect_corrupt(HEAD "<Blobs>" BLOB("a", "1", "2009-09-09T09:20:02Z") "</Blobs></EnumerationResults>",
                 "not an RFC 1123 date");
  expect_corrupt(HEAD "<Blobs>" BLOB("", "1", "Wed, 09 Sep 2009 09:20:02 GMT") "</Blobs></EnumerationResults>",
                 "empty <Name>");
  expect_corrupt(HEAD "<Blobs><Blob><Name>a</Name></Blob></Blobs></EnumerationResults>",
                 "without <Content-Length>");
  expect_corrupt(HEAD "<Blobs><Blob><Name>a</Name><Name>b</Name></Blob></Blobs></EnumerationResults>",
                 "two <Name>");
  expect_corrupt(HEAD "<Blobs><Blob><Name Encoded=\"true\">a%zz</Name></Blob></Blobs></EnumerationResults>",
                 "bad %-escape");
  expect_corrupt(HEAD "<Blobs><Blob><Name Encoded=\"true\">a%00</Name></Blob></Blobs></EnumerationResults>",
                 "NUL");
  expect_corrupt(HEAD "<Blobs><Blob><Name>a&#0;</Name></Blob></Blobs></EnumerationResults>", NULL);
  expect_corrupt("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><EnumerationResults/>", "DTDs");
  expect_corrupt(HEAD "<Blobs>", "is not closed");
  expect_corrupt(HEAD "</Blobs></EnumerationResults>", "closes");
  expect_corrupt(HEAD "</EnumerationResults><EnumerationResults/>", "after the root");
  /* A name over 1024 bytes, and text over the scanner's cap. */
  char *big = tm_malloc(20000);
  TM_ASSERT(big != NULL);
  char *p = big;
  p += sprintf(p, HEAD "<Blobs><Blob><Name>");
  memset(p, 'k', 1100);
  p += 1100;
  sprintf(p, "</Name></Blob></Blobs></EnumerationResults>");
  expect_corrupt(big, "1100 bytes");
  p = big + sprintf(big, HEAD "<NextMarker>");
  memset(p, 'm', 9000);
  p += 9000;
  sprintf(p, "</NextMarker></EnumerationResults>");
  expect_corrupt(big, "longer than");
  tm_free(big);
}

TM_TEST(azure_xml_error_bodies) {
  char code[32], msg[64];
  const char *xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed"
                    "</Code><Message>Server failed to authenticate the request.\nRequestId:x"
                    "</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP "
                    "request is not the same</AuthenticationErrorDetail></Error>";
  tm_azure__parse_error(xml, strlen(xml), code, sizeof code, msg, sizeof msg);
  TM_ASSERT_STR_EQ(code, "AuthenticationFailed");
  TM_ASSERT_STR_EQ(msg, "Server failed to authenticate the request. RequestId:x");
  tm_azure__parse_error("not xml", 7, code, sizeof code, msg, sizeof msg);
  TM_ASSERT_STR_EQ(code, "");
}

/* ---- URLs and params ---- */

static void clear_env(void) { unsetenv("AZURITE_BLOB_STORAGE_URL"); }

static void open_ok(const char *url, const tm_kv *params, const char *name, const char *prefix) {
  tm_error err;
  tm_objstore *s = NULL;
  char *p = NULL;
  TM_ASSERT_OK(tm_objstore_open_url(&s, &p, url, params, &err), &err);
  TM_ASSERT_STR_EQ(tm_objstore_scheme(s), "abfs");
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

static void kv(tm_kv *p, const char *k, const char *v) {
  tm_error err;
  TM_ASSERT_OK(tm_kv_set(p, k, v, &err), &err);
}

TM_TEST(azure_url_forms) {
  clear_env();
  tm_kv p;
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  open_ok("abfs://data", &p, "abfs://data", "");
  open_ok("abfs://data/", &p, "abfs://data", "");
  open_ok("abfs://data/events/", &p, "abfs://data", "events/");
  open_ok("abfss://data/events", &p, "abfs://data", "events");
  open_ok("abfs://data@acct.dfs.core.windows.net/x/y.parquet", NULL, "abfs://data", "x/y.parquet");
  open_ok("abfss://data@ACCT.blob.core.chinacloudapi.cn/x", NULL, "abfs://data", "x");
  TM_ASSERT(tm_objstore_url_supported("abfs://c/x") && tm_objstore_url_supported("abfss://c"));
  TM_ASSERT(!tm_objstore_url_supported("az://c/x") && !tm_objstore_url_supported("azure://c"));
  tm_error err;
  TM_ASSERT_RC(open_rc("az://data/x", &p, &err), TM_EUNSUPPORTED);
  TM_ASSERT_RC(open_rc("abfs:///x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no container");
  TM_ASSERT_RC(open_rc("abfs://data//x", &p, &err), TM_EINVALID);
  TM_ASSERT_RC(open_rc("abfs://Data/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "invalid container name");
  TM_ASSERT_RC(open_rc("abfs://data@/x", &p, &err), TM_EINVALID);
  TM_ASSERT_RC(open_rc("abfs://data@acct.example.com/x", NULL, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "ACCOUNT.dfs.core.windows.net");
  TM_ASSERT_RC(open_rc("abfs://data@other.dfs.core.windows.net/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "not the URL's account");
  TM_ASSERT_RC(open_rc("abfs://data/x", NULL, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "no storage account");
  tm_kv_dispose(&p);
}

TM_TEST(azure_params_are_checked) {
  clear_env();
  tm_error err;
  tm_kv p;
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  kv(&p, "abfs_acount", "x");
  TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unknown param 'abfs_acount'");
  tm_kv_dispose(&p);
  const char *unsupported[] = {"abfs_client_secret", "abfs_use_cli", "abfs_proxy_url",
                               "abfs_msi_endpoint", "abfs_client_id"};
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
    tm_kv_init(&p);
    kv(&p, "abfs_account", "acct");
    kv(&p, unsupported[i], "x");
    TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EUNSUPPORTED);
    TM_ASSERT_CONTAINS(err.message, unsupported[i]);
    tm_kv_dispose(&p);
  }
  /* Client and tenant ids have no effect with a bearer token either: refused, never ignored. */
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  kv(&p, "abfs_bearer_token", "tok");
  kv(&p, "abfs_tenant_id", "t");
  TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "abfs_tenant_id");
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  kv(&p, "abfs_disable_tagging", "false");
  TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "tidemark writes no blob tags");
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  kv(&p, "abfs_bearer_token", "tok");
  kv(&p, "abfs_disable_tagging", "true");
  TM_ASSERT_OK(open_rc("abfs://data/x", &p, &err), &err);
  kv(&p, "abfs_access_key", TM_AZURE_EMULATOR_KEY);
  TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "not several");
  tm_kv_dispose(&p);
  struct {
    const char *k, *v, *needle;
  } bad[] = {{"abfs_access_key", "not base64!", "not a base64"},
             {"abfs_sas_string", "sv=1&sp=r", "no sig="},
             {"abfs_endpoint", "http://127.0.0.1:1", "allow_http"},
             {"abfs_endpoint", "ftp://x", "must start with"},
             {"abfs_endpoint", "https://u:p@host", "credentials belong"},
             {"abfs_use_emulator", "maybe", "not true or false"},
             {"abfs_max_retries", "-1", "0..100"},
             {"abfs_retry_timeout", "soon", "not a duration"},
             {"abfs_backoff_base", "0.5", "factor"},
             {"abfs_account", "Not_An_Account", "not a storage account name"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tm_kv_init(&p);
    kv(&p, "abfs_account", "acct");
    kv(&p, bad[i].k, bad[i].v);
    TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, bad[i].needle);
    tm_kv_dispose(&p);
  }
  tm_kv_init(&p);
  kv(&p, "abfs_skip_signature", "true");
  kv(&p, "abfs_sas_string", "sig=x");
  kv(&p, "abfs_account", "acct");
  TM_ASSERT_RC(open_rc("abfs://data/x", &p, &err), TM_EINVALID);
  tm_kv_dispose(&p);
  /* Accepted: the emulator alone; retries and backoff; http with allow_http. */
  tm_kv_init(&p);
  kv(&p, "abfs_use_emulator", "true");
  kv(&p, "abfs_max_retries", "2");
  kv(&p, "abfs_retry_timeout", "30s");
  kv(&p, "abfs_backoff_initial_duration", "100ms");
  kv(&p, "abfs_backoff_max_duration", "2s");
  kv(&p, "abfs_backoff_base", "3");
  kv(&p, "s3_region", "ignored-by-abfs");
  TM_ASSERT_OK(open_rc("abfs://data/x", &p, &err), &err);
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  kv(&p, "abfs_account", "acct");
  kv(&p, "abfs_endpoint", "http://127.0.0.1:1/acct");
  kv(&p, "allow_http", "true");
  TM_ASSERT_OK(open_rc("abfs://data/x", &p, &err), &err);
  tm_kv_dispose(&p);
}

TM_TEST(azure_options_are_checked) {
  tm_error err;
  tm_azure_options o;
  tm_azure_options_init(&o);
  tm_objstore *s = NULL;
  TM_ASSERT_RC(tm_objstore_azure_new(&s, &o, &err), TM_EINVALID); /* no container */
  o.container = "data";
  o.account = "acct";
  o.list_page_size = 0;
  TM_ASSERT_RC(tm_objstore_azure_new(&s, &o, &err), TM_EINVALID);
  o.list_page_size = 2;
  o.max_retries = -1;
  TM_ASSERT_RC(tm_objstore_azure_new(&s, &o, &err), TM_EINVALID);
  o.max_retries = 1;
  o.access_key = TM_AZURE_EMULATOR_KEY;
  o.account = NULL;
  o.endpoint = "https://x";
  TM_ASSERT_RC(tm_objstore_azure_new(&s, &o, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "needs abfs_account");
  o.account = "acct";
  o.version = 7;
  TM_ASSERT_RC(tm_objstore_azure_new(&s, &o, &err), TM_EINVALID);
  o.version = TM_AZURE_OPTIONS_VERSION;
  TM_ASSERT_OK(tm_objstore_azure_new(&s, &o, &err), &err);
  tm_objstore_free(s);
}
