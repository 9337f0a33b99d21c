/*
 * Unit tests for what a POST /v1/sql request asks (runtime/query/sqlreq.c;
 * SPEC 1.3, D4): the answer's format from Accept lists with q-values and
 * wildcards (406 when none fits), and Spice's JSON body {"sql",
 * "parameters"} read strictly: values typed as Spice types them, nested
 * values, unknown keys, duplicates and malformed JSON refused with a message.
 */
#include "runtime/query/sqlreq.h"
#include "tm_test.h"
#include "util/alloc.h"

TM_TEST(sqlreq_negotiates_accept) {
  struct { const char *accept; const char *want; } cases[] = {
      {NULL, "application/json"},
      {"", "application/json"},
      {" , ", "application/json"},
      {"*/*", "application/json"},
      {"application/*", "application/json"},
      {"text/*", "text/plain"},
      {"text/csv", "text/csv"},
      {"TEXT/CSV; charset=utf-8", "text/csv"},
      {"application/vnd.spiceai.sql.v1+json", "application/vnd.spiceai.sql.v1+json"},
      /* Spice's CLI: both at q=1, the first listed wins */
      {"application/vnd.spiceai.sql.v1+json, application/json", "application/vnd.spiceai.sql.v1+json"},
      {"application/json, application/vnd.spiceai.sql.v1+json", "application/json"},
      /* q-values */
      {"application/json;q=0.5, text/csv", "text/csv"},
      {"text/html;q=0.9, text/csv;q=0.5", "text/csv"},
      {"text/csv;q=0.2, application/vnd.spiceai.sql.v1+json;q=0.8", "application/vnd.spiceai.sql.v1+json"},
      {"*/*;q=0.1, text/csv", "text/csv"},
      {"text/csv; level=1; q=0.4, text/plain;Q=0.6", "text/plain"},
      /* the most specific range sets a type's q: q=0 excludes it from a wildcard */
      {"application/json;q=0, */*", "text/plain"},
      {"*/*, text/plain;q=0, application/json;q=0", "text/csv"},
      {"text/*;q=0.3, */*;q=0.5", "application/json"},
      /* a bare type beats a wildcard at the same q */
      {"*/*, text/csv", "text/csv"},
      {"application/x-ndjson", "application/x-ndjson"},
      {"application/jsonl", "application/jsonl"},
      /* a malformed q counts as 0; a parameter that only ends in q is not q */
      {"text/csv;q=abc, text/plain;q=0.1", "text/plain"},
      {"text/csv;seq=0, text/plain;q=0.5", "text/csv"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const tm_sqlreq_media *m = tm_sqlreq_negotiate(cases[i].accept);
    TM_ASSERT_MSG(m && strcmp(m->type, cases[i].want) == 0, "Accept: %s -> %s, want %s",
                  cases[i].accept ? cases[i].accept : "(none)", m ? m->type : "406", cases[i].want);
  }
  const char *refused[] = {"application/xml", "text/html, image/*", "application/json;q=0",
                           "*/*;q=0", "text/csv;q=2"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    TM_ASSERT_MSG(tm_sqlreq_negotiate(refused[i]) == NULL, "Accept: %s is not 406", refused[i]);
  TM_ASSERT_INT_EQ(tm_sqlreq_negotiate("application/vnd.spiceai.sql.v1+json")->format, TM_OUT_SPICE_V1);
  TM_ASSERT_STR_EQ(tm_sqlreq_negotiate("application/jsonl")->content_type, "application/x-ndjson");
}

TM_TEST(sqlreq_content_type_json) {
  TM_ASSERT(tm_sqlreq_is_json("application/json"));
  TM_ASSERT(tm_sqlreq_is_json("Application/JSON; charset=utf-8"));
  TM_ASSERT(tm_sqlreq_is_json(" application/json ;charset=UTF-8"));
  TM_ASSERT(!tm_sqlreq_is_json(NULL));
  TM_ASSERT(!tm_sqlreq_is_json("text/plain"));
  TM_ASSERT(!tm_sqlreq_is_json("application/x-www-form-urlencoded"));
  TM_ASSERT(!tm_sqlreq_is_json("application/jsonl"));
  TM_ASSERT(!tm_sqlreq_is_json("application/json-seq"));
}

static void parse_ok(const char *body, const char *want_sql, bool want_bind, tm_sql_params *p) {
  tm_error err;
  char *sql = NULL;
  bool bind = false;
  TM_ASSERT_OK(tm_sqlreq_parse_json(body, strlen(body), &sql, p, &bind, &err), &err);
  TM_ASSERT_STR_EQ(sql, want_sql);
  TM_ASSERT_INT_EQ(bind, want_bind);
  tm_free(sql);
}

static void parse_refused(const char *body, const char *needle) {
  tm_error err;
  tm_error_init(&err);
  char *sql = (char *)"unset";
  bool bind = false;
  tm_sql_params p;
  int rc = tm_sqlreq_parse_json(body, strlen(body), &sql, &p, &bind, &err);
  TM_ASSERT_MSG(rc == TM_EINVALID, "%s: rc %d", body, rc);
  TM_ASSERT_MSG(strstr(err.message, needle), "%s: '%s' does not say '%s'", body, err.message, needle);
  TM_ASSERT_STR_EQ(sql, "unset");
  TM_ASSERT(p.items == NULL && p.n == 0);
}

TM_TEST(sqlreq_reads_spice_json_body) {
  tm_sql_params p;
  parse_ok("{\"sql\": \"SELECT 1\"}", "SELECT 1", false, &p);
  TM_ASSERT(p.n == 0);
  parse_ok("{\"parameters\": [], \"sql\": \"SELECT 1\"}", "SELECT 1", true, &p);
  TM_ASSERT(p.n == 0 && !p.named);
  parse_ok("{\"sql\":\"SELECT $1,$2,$3,$4,$5,$6\",\"parameters\":[1,\"it's \\\"q\\\"\",null,true,"
           "2.5,-9223372036854775808]}",
           "SELECT $1,$2,$3,$4,$5,$6", true, &p);
  TM_ASSERT_INT_EQ(p.n, 6);
  TM_ASSERT(!p.named);
  TM_ASSERT(p.items[0].kind == TM_SQL_PARAM_INT && p.items[0].i == 1 && !p.items[0].name);
  TM_ASSERT(p.items[1].kind == TM_SQL_PARAM_TEXT);
  TM_ASSERT_STR_EQ(p.items[1].text, "it's \"q\"");
  TM_ASSERT_INT_EQ(p.items[1].text_len, 8);
  TM_ASSERT(p.items[2].kind == TM_SQL_PARAM_NULL);
  TM_ASSERT(p.items[3].kind == TM_SQL_PARAM_BOOL && p.items[3].b);
  TM_ASSERT(p.items[4].kind == TM_SQL_PARAM_DOUBLE && p.items[4].d == 2.5);
  TM_ASSERT(p.items[5].kind == TM_SQL_PARAM_INT && p.items[5].i == INT64_MIN);
  tm_sql_params_dispose(&p);
  parse_ok("{\"sql\":\"SELECT :foo\",\"parameters\":{\"foo\":41,\"bar\":false,\"e\":1e3}}",
           "SELECT :foo", true, &p);
  TM_ASSERT_INT_EQ(p.n, 3);
  TM_ASSERT(p.named);
  TM_ASSERT_STR_EQ(p.items[0].name, "foo");
  TM_ASSERT(p.items[0].kind == TM_SQL_PARAM_INT && p.items[0].i == 41);
  TM_ASSERT_STR_EQ(p.items[1].name, "bar");
  TM_ASSERT(p.items[1].kind == TM_SQL_PARAM_BOOL && !p.items[1].b);
  TM_ASSERT(p.items[2].kind == TM_SQL_PARAM_DOUBLE && p.items[2].d == 1000);
  tm_sql_params_dispose(&p);
  /* Text keeps every byte: UTF-8, escapes. */
  parse_ok("{\"sql\":\"SELECT '\\u00e9'\",\"parameters\":[\"\\u00e9\\n\\t\"]}", "SELECT '\xc3\xa9'",
           true, &p);
  TM_ASSERT_STR_EQ(p.items[0].text, "\xc3\xa9\n\t");
  tm_sql_params_dispose(&p);

  parse_refused("SELECT 1", "the body is not valid JSON (Content-Type: application/json)");
  parse_refused("", "the body is not valid JSON");
  parse_refused("{\"sql\": \"SELECT 1\"} x", "the body is not valid JSON");
  parse_refused("[\"SELECT 1\"]", "must be an object");
  parse_refused("\"SELECT 1\"", "must be an object");
  parse_refused("{}", "has no \"sql\"");
  parse_refused("{\"parameters\": []}", "has no \"sql\"");
  parse_refused("{\"sql\": 1}", "\"sql\" must be a string");
  parse_refused("{\"sql\": null}", "\"sql\" must be a string");
  parse_refused("{\"sql\": \"SELECT 1\", \"params\": [1]}", "unknown key 'params'");
  parse_refused("{\"sql\": \"SELECT 1\", \"sql\": \"SELECT 2\"}", "duplicate object key");
  parse_refused("{\"sql\": \"SELECT :a\", \"parameters\": {\"a\": 1, \"a\": 2}}", "duplicate object key");
  parse_refused("{\"sql\": \"SELECT 1\", \"parameters\": null}", "must be an array");
  parse_refused("{\"sql\": \"SELECT 1\", \"parameters\": 5}", "must be an array");
  parse_refused("{\"sql\": \"SELECT $1\", \"parameters\": [[1]]}",
                "parameter 1 ($1): nested arrays or objects are not supported");
  parse_refused("{\"sql\": \"SELECT :a\", \"parameters\": {\"a\": {\"b\": 1}}}",
                "parameter 'a': nested arrays or objects are not supported");
  parse_refused("{\"sql\": \"SELECT $1\", \"parameters\": [18446744073709551616]}",
                "an integer must fit in 64 bits");
  parse_refused("{\"sql\": \"SELECT '\\u0000'\"}", "the body is not valid JSON");
  parse_refused("{\"sql\": \"SELECT \xff\"}", "the body is not valid JSON");
}

/* More values than a statement may take: refused before any is copied past the limit. */
TM_TEST(sqlreq_caps_parameter_count) {
  size_t n = TM_SQL_PARAMS_MAX + 1;
  tm_buf b = TM_BUF_INIT(TM_BUF_UNLIMITED);
  tm_error err;
  TM_ASSERT_OK(tm_buf_puts(&b, "{\"sql\":\"SELECT 1\",\"parameters\":[", &err), &err);
  for (size_t i = 0; i < n; i++) TM_ASSERT_OK(tm_buf_puts(&b, i ? ",0" : "0", &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&b, "]}", &err), &err);
  char *sql = NULL;
  bool bind;
  tm_sql_params p;
  TM_ASSERT_RC(tm_sqlreq_parse_json(b.ptr, b.len, &sql, &p, &bind, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "at most 65535");
  tm_buf_dispose(&b);
}
