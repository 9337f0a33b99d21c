/*
 * Unit tests for objstore/s3/s3_xml.c: ListObjectsV2 pages as AWS and
 * s3rver write them, and the malformed or hostile documents the scanner
 * must refuse without crashing (SPEC D2). fuzz/fuzz_s3_list_xml.c explores
 * the rest.
 */
#include "objstore/s3/s3_int.h"
#include "tm_test.h"
#include "util/alloc.h"

static int parse(const char *xml, tm_s3_list_page *page, tm_error *err) {
  tm_s3_list_page_init(page);
  return tm_s3__parse_list(page, xml, strlen(xml), err);
}

static void expect_corrupt(const char *xml, const char *needle) {
  tm_error err;
  tm_s3_list_page page;
  int rc = parse(xml, &page, &err);
  tm_s3_list_page_dispose(&page);
  TM_ASSERT_MSG(rc == TM_ECORRUPT, "rc %d for: %s", rc, xml);
  if (needle) TM_ASSERT_CONTAINS(err.message, needle);
}

#define ITEM(k, s, t) "<Contents><Key>" k "</Key><LastModified>" t "</LastModified><Size>" s "</Size></Contents>"

TM_TEST(s3_xml_aws_page_with_url_encoded_keys) {
  tm_error err;
  tm_s3_list_page page;
  const char *xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>bucket</Name><Prefix>data%2F</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>"
      "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "<Contents><Key>data/a%20b+c%2Bd.parquet</Key><LastModified>2009-10-12T17:50:30.000Z"
      "</LastModified><ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag><Size>434234</Size>"
      "<StorageClass>STANDARD</StorageClass><Owner><ID>x</ID></Owner></Contents>"
      "<Contents><Key>data/%E2%82%AC.csv</Key><LastModified>2024-02-29T23:59:59.123Z"
      "</LastModified><Size>0</Size></Contents>"
      "</ListBucketResult>";
  TM_ASSERT_OK(parse(xml, &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 2);
  TM_ASSERT_STR_EQ(page.items.items[0].key, "data/a b c+d.parquet");
  TM_ASSERT_INT_EQ(page.items.items[0].size, 434234);
  TM_ASSERT_INT_EQ(page.items.items[0].mtime_ms, INT64_C(1255369830000));
  TM_ASSERT_STR_EQ(page.items.items[1].key, "data/\xe2\x82\xac.csv");
  TM_ASSERT_INT_EQ(page.items.items[1].mtime_ms, INT64_C(1709251199123));
  TM_ASSERT(page.truncated);
  TM_ASSERT_STR_EQ(page.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  tm_s3_list_page_dispose(&page);
}

TM_TEST(s3_xml_s3rver_page_with_raw_keys_and_entities) {
  /* s3rver ignores encoding-type: keys come as XML text, '%' is literal. */
  tm_error err;
  tm_s3_list_page page;
  const char *xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "
      "xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\"><Name>b</Name><Prefix></Prefix>"
      "<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
      "<Contents><Key>x/a&amp;b &lt;%20&gt;&#233;&#x20AC;</Key>"
      "<LastModified>2024-01-01T00:00:00.500Z</LastModified><ETag>&quot;e&quot;</ETag>"
      "<Size>7</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>";
  TM_ASSERT_OK(parse(xml, &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 1);
  TM_ASSERT_STR_EQ(page.items.items[0].key, "x/a&b <%20>\xc3\xa9\xe2\x82\xac");
  TM_ASSERT_INT_EQ(page.items.items[0].mtime_ms, INT64_C(1704067200500));
  TM_ASSERT(!page.truncated);
  TM_ASSERT(page.next_token == NULL);
  tm_s3_list_page_dispose(&page);
}

TM_TEST(s3_xml_tolerates_what_xml_allows) {
  tm_error err;
  tm_s3_list_page page;
  const char *xml =
      "\xef\xbb\xbf"
      "<?xml version='1.0'?><!-- a comment --><s3:ListBucketResult xmlns:s3='urn:x' a='>'>"
      "<Delimiter/><IsTruncated> false </IsTruncated>"
      "<s3:Contents><s3:Key><![CDATA[k<1>&]]></s3:Key><Size> 12 </Size>"
      "<LastModified>2020-01-01T00:00:00Z</LastModified></s3:Contents>"
      "</s3:ListBucketResult >\n<!-- trailing -->\n";
  /* A byte-order mark is text outside the root: refused, as S3 never sends one. */
  TM_ASSERT_RC(parse(xml, &page, &err), TM_ECORRUPT);
  tm_s3_list_page_dispose(&page);
  TM_ASSERT_OK(parse(xml + 3, &page, &err), &err);
  TM_ASSERT_INT_EQ(page.items.len, 1);
  TM_ASSERT_STR_EQ(page.items.items[0].key, "k<1>&");
  TM_ASSERT_INT_EQ(page.items.items[0].size, 12);
  tm_s3_list_page_dispose(&page);
  /* An empty page. */
  TM_ASSERT_OK(parse("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>",
                     &page, &err),
               &err);
  TM_ASSERT_INT_EQ(page.items.len, 0);
  tm_s3_list_page_dispose(&page);
}

TM_TEST(s3_xml_refuses_incomplete_listings) {
  expect_corrupt("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                 "NextContinuationToken");
  expect_corrupt("<ListBucketResult><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResult>",
                 "LastModified");
  expect_corrupt("<ListBucketResult><Contents><Size>1</Size><LastModified>2020-01-01T00:00:00Z"
                 "</LastModified></Contents></ListBucketResult>",
                 "<Key>");
  expect_corrupt("<ListBucketResult>" ITEM("a", "12a", "2020-01-01T00:00:00Z") "</ListBucketResult>",
                 "Size");
  expect_corrupt("<ListBucketResult>" ITEM("a", "-1", "2020-01-01T00:00:00Z") "</ListBucketResult>",
                 "Size");
  expect_corrupt("<ListBucketResult>" ITEM("a", "99999999999999999999", "2020-01-01T00:00:00Z")
                 "</ListBucketResult>", "Size");
  expect_corrupt("<ListBucketResult>" ITEM("a", "1", "yesterday") "</ListBucketResult>",
                 "LastModified");
  expect_corrupt("<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
                 "IsTruncated");
  expect_corrupt("<ListBucketResult>" ITEM("", "1", "2020-01-01T00:00:00Z") "</ListBucketResult>",
                 "empty <Key>");
  expect_corrupt("<ListBucketResult><Contents><Key>a</Key><Key>b</Key></Contents></ListBucketResult>",
                 "two <Key>");
  expect_corrupt("<Error><Code>AccessDenied</Code></Error>", "instead of <ListBucketResult>");
}

TM_TEST(s3_xml_refuses_malformed_documents) {
  expect_corrupt("", "no XML element");
  expect_corrupt("   ", "no XML element");
  expect_corrupt("<ListBucketResult>", "not closed");
  expect_corrupt("<ListBucketResult></Other>", "closes");
  expect_corrupt("</ListBucketResult>", "without a start tag");
  expect_corrupt("<ListBucketResult></ListBucketResult><ListBucketResult></ListBucketResult>",
                 "after the root");
  expect_corrupt("junk<ListBucketResult></ListBucketResult>", "outside the root");
  expect_corrupt("<!DOCTYPE x [<!ENTITY a \"b\">]><ListBucketResult></ListBucketResult>", "DTD");
  expect_corrupt("<ListBucketResult><Name>&bogus;</Name></ListBucketResult>", "unknown entity");
  expect_corrupt("<ListBucketResult><Name>&#0;</Name></ListBucketResult>", "U+0000");
  expect_corrupt("<ListBucketResult><Name>&#xD800;</Name></ListBucketResult>", "U+D800");
  expect_corrupt("<ListBucketResult><Name>&#x110000;</Name></ListBucketResult>", "out of range");
  expect_corrupt("<ListBucketResult><Name>&amp</Name></ListBucketResult>", NULL);
  expect_corrupt("<ListBucketResult a=b></ListBucketResult>", "unquoted");
  expect_corrupt("<ListBucketResult a=\"b></ListBucketResult>", "unterminated attribute");
  expect_corrupt("<ListBucketResult><!-- open", "comment");
  expect_corrupt("<ListBucketResult><![CDATA[x", "CDATA");
  expect_corrupt("<ListBucketResult", "unterminated start tag");
  expect_corrupt("<ListBucketResult></ListBucketResult", "unterminated end tag");
  expect_corrupt("< ListBucketResult></ListBucketResult>", "missing element name");
}

TM_TEST(s3_xml_limits_depth_names_and_text) {
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_error err;
  for (int i = 0; i < 20; i++) TM_ASSERT_OK(tm_buf_puts(&b, "<a>", &err), &err);
  expect_corrupt(tm_buf_cstr(&b), "nested");
  tm_buf_clear(&b);
  TM_ASSERT_OK(tm_buf_puts(&b, "<", &err), &err);
  for (int i = 0; i < 70; i++) TM_ASSERT_OK(tm_buf_putc(&b, 'n', &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&b, "/>", &err), &err);
  expect_corrupt(tm_buf_cstr(&b), "name longer");
  tm_buf_clear(&b);
  TM_ASSERT_OK(tm_buf_puts(&b, "<ListBucketResult><Name>", &err), &err);
  for (int i = 0; i < 9000; i++) TM_ASSERT_OK(tm_buf_putc(&b, 'x', &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&b, "</Name></ListBucketResult>", &err), &err);
  expect_corrupt(tm_buf_cstr(&b), "longer than");
  tm_buf_clear(&b);
  /* A key over S3's 1024 bytes, and an encoded key that decodes to NUL. */
  TM_ASSERT_OK(tm_buf_puts(&b, "<ListBucketResult><Contents><Key>", &err), &err);
  for (int i = 0; i < 1100; i++) TM_ASSERT_OK(tm_buf_putc(&b, 'k', &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&b, "</Key><Size>1</Size><LastModified>2020-01-01T00:00:00Z"
                               "</LastModified></Contents></ListBucketResult>",
                           &err),
               &err);
  expect_corrupt(tm_buf_cstr(&b), "a key of 1100 bytes");
  tm_buf_dispose(&b);
  expect_corrupt("<ListBucketResult><EncodingType>url</EncodingType>" ITEM("a%00b", "1",
                 "2020-01-01T00:00:00Z") "</ListBucketResult>", "NUL");
  expect_corrupt("<ListBucketResult><EncodingType>url</EncodingType>" ITEM("a%zzb", "1",
                 "2020-01-01T00:00:00Z") "</ListBucketResult>", "escape");
}

TM_TEST(s3_xml_error_bodies) {
  char code[32], msg[64], region[32];
  const char *body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationHeaderMalformed"
      "</Code><Message>the region 'us-east-1' is wrong;\nexpecting 'eu-west-1'</Message>"
      "<Region>eu-west-1</Region><RequestId>1</RequestId></Error>";
  tm_s3__parse_error(body, strlen(body), code, sizeof code, msg, sizeof msg, region,
                     sizeof region);
  TM_ASSERT_STR_EQ(code, "AuthorizationHeaderMalfor"
                         "med");
  TM_ASSERT_STR_EQ(msg, "the region 'us-east-1' is wrong; expecting 'eu-west-1'");
  TM_ASSERT_STR_EQ(region, "eu-west-1");
  /* Truncated to the caller's buffer. */
  char tiny[5];
  tm_s3__parse_error(body, strlen(body), tiny, sizeof tiny, msg, sizeof msg, region,
                     sizeof region);
  TM_ASSERT_STR_EQ(tiny, "Auth");
  /* Not XML, or another document: nothing, and no failure. */
  tm_s3__parse_error("Bad Gateway", 11, code, sizeof code, msg, sizeof msg, region,
                     sizeof region);
  TM_ASSERT_STR_EQ(code, "");
  TM_ASSERT_STR_EQ(msg, "");
  tm_s3__parse_error("<Other><Code>x</Code></Other>", 29, code, sizeof code, msg, sizeof msg,
                     region, sizeof region);
  TM_ASSERT_STR_EQ(code, "");
}

TM_TEST(s3_xml_survives_allocation_failures) {
  const char *xml = "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t"
                    "</NextContinuationToken>" ITEM("a", "1", "2020-01-01T00:00:00Z")
                    ITEM("b", "2", "2020-01-01T00:00:00Z") "</ListBucketResult>";
  for (int64_t n = 1; n < 100; n++) {
    tm_error err;
    tm_s3_list_page page;
    tm_s3_list_page_init(&page);
    tm_alloc_fail_at(n, false);
    int rc = tm_s3__parse_list(&page, xml, strlen(xml), &err);
    bool failed = tm_alloc_failed();
    tm_alloc_fail_at(0, false);
    tm_s3_list_page_dispose(&page);
    if (!failed) {
      TM_ASSERT_INT_EQ(rc, TM_OK);
      break;
    }
    TM_ASSERT_INT_EQ(rc, TM_ENOMEM);
  }
}
