/*
 * Unit tests for util/sqlsplit: statements out of text fed in pieces.
 * Every case is also fed one byte at a time and in lines, and must split the
 * same way: the lexer's state crosses any boundary.
 */
#include "util/sqlsplit.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/buf.h"

/*
 * Feeds text in pieces of `chunk` bytes (0: line by line), then finishes;
 * returns the statements joined by " | ", and each finished (unterminated)
 * one marked "<eof>". Result: tm_free.
 */
static char *split(const char *text, size_t chunk) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, 1 << 20);
  tm_buf out = TM_BUF_INIT(1 << 20);
  size_t n = strlen(text), at = 0;
  while (at < n) {
    size_t len = chunk;
    if (chunk == 0) {
      const char *nl = memchr(text + at, '\n', n - at);
      len = nl ? (size_t)(nl - (text + at)) + 1 : n - at;
    }
    if (len > n - at) len = n - at;
    TM_ASSERT_OK(tm_sqlsplit_feed(&s, text + at, len, &err), &err);
    at += len;
    char *stmt;
    int rc;
    while ((rc = tm_sqlsplit_next(&s, &stmt, &err)) == TM_OK) {
      TM_ASSERT_OK(tm_buf_printf(&out, &err, "%s%s", out.len ? " | " : "", stmt), &err);
      tm_free(stmt);
    }
    TM_ASSERT_RC(rc, TM_ITEROVER);
  }
  char *stmt;
  if (tm_sqlsplit_finish(&s, &stmt, &err) == TM_OK) {
    TM_ASSERT_OK(tm_buf_printf(&out, &err, "%s%s<eof>", out.len ? " | " : "", stmt), &err);
    tm_free(stmt);
  }
  TM_ASSERT(!tm_sqlsplit_pending(&s));
  tm_sqlsplit_dispose(&s);
  char *r = tm_buf_take(&out, NULL);
  TM_ASSERT(r);
  return r;
}

/* text splits into want, fed whole, byte by byte, in threes and line by line. */
static void check(const char *text, const char *want) {
  size_t chunks[] = {strlen(text) ? strlen(text) : 1, 1, 3, 0};
  for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
    char *got = split(text, chunks[i]);
    if (strcmp(got, want) != 0) {
      tm_test__note("text [%s] in pieces of %zu", text, chunks[i]);
      TM_ASSERT_STR_EQ(got, want);
    }
    tm_free(got);
  }
}

TM_TEST(sqlsplit_statements_end_at_semicolons) {
  check("SELECT 1;", "SELECT 1");
  check("SELECT 1; SELECT 2;\n", "SELECT 1 | SELECT 2");
  check("  SELECT\n    1\n  ;\n", "SELECT\n    1");
  check("SELECT 1;SELECT 2", "SELECT 1 | SELECT 2<eof>");
  check("", "");
  check("\n\n   \n", "");
}

TM_TEST(sqlsplit_empty_statements_run_nothing) {
  check(";;", "");
  check("; ;\n;", "");
  check("-- a note;\n", "");
  check("/* only ; a comment */;\n", "");
  check("-- note\nSELECT 1;", "-- note\nSELECT 1");
}

TM_TEST(sqlsplit_semicolons_in_strings) {
  check("SELECT 'a;b'; SELECT 2;", "SELECT 'a;b' | SELECT 2");
  check("SELECT 'it''s; here'; SELECT 2;", "SELECT 'it''s; here' | SELECT 2");
  check("SELECT '';SELECT '''';", "SELECT '' | SELECT ''''");
  /* A standard string: the backslash is a plain byte. */
  check("SELECT 'a\\'; SELECT 2;", "SELECT 'a\\' | SELECT 2");
  check("SELECT 'line\n;\nmore'; SELECT 2;", "SELECT 'line\n;\nmore' | SELECT 2");
}

TM_TEST(sqlsplit_escape_strings) {
  check("SELECT E'it\\'s;'; SELECT 2;", "SELECT E'it\\'s;' | SELECT 2");
  check("SELECT e'\\\\'; SELECT 2;", "SELECT e'\\\\' | SELECT 2");
  /* '' doubling inside E'...' keeps the backslash rule for the rest of it. */
  check("SELECT E'x''\\';y'; SELECT 2;", "SELECT E'x''\\';y' | SELECT 2");
  /* "some'..." is no E-string: the e ends an identifier. */
  check("SELECT some'\\'; SELECT 2;", "SELECT some'\\' | SELECT 2");
}

TM_TEST(sqlsplit_semicolons_in_identifiers) {
  check("SELECT 1 AS \"a;b\"; SELECT 2;", "SELECT 1 AS \"a;b\" | SELECT 2");
  check("SELECT 1 AS \"q\"\";x\"; SELECT 2;", "SELECT 1 AS \"q\"\";x\" | SELECT 2");
  check("SELECT 1 AS \"it's;\"; SELECT 2;", "SELECT 1 AS \"it's;\" | SELECT 2");
}

TM_TEST(sqlsplit_dollar_quoting) {
  check("SELECT $$a;'b$$; SELECT 2;", "SELECT $$a;'b$$ | SELECT 2");
  check("SELECT $t$ $$; $t$; SELECT 2;", "SELECT $t$ $$; $t$ | SELECT 2");
  check("SELECT $tag_1$x$tag$;$tag_1$;", "SELECT $tag_1$x$tag$;$tag_1$");
  /* Not dollar quotes: parameters, and $ inside identifiers. */
  check("SELECT $1; SELECT 2;", "SELECT $1 | SELECT 2");
  check("SELECT a$b$ FROM t; SELECT 2;", "SELECT a$b$ FROM t | SELECT 2");
  check("SELECT 5$; SELECT 2;", "SELECT 5$ | SELECT 2");
}

TM_TEST(sqlsplit_comments) {
  check("SELECT 1 -- no; end here\n, 2; SELECT 3;", "SELECT 1 -- no; end here\n, 2 | SELECT 3");
  check("SELECT /* ; */ 1; SELECT 2;", "SELECT /* ; */ 1 | SELECT 2");
  check("SELECT /* a /* nested; */ still; */ 1;", "SELECT /* a /* nested; */ still; */ 1");
  check("SELECT 1 - 2 / 3; SELECT 4;", "SELECT 1 - 2 / 3 | SELECT 4");
  check("SELECT '--'; SELECT '/*';", "SELECT '--' | SELECT '/*'");
  check("SELECT 1 /* unterminated ;", "SELECT 1 /* unterminated ;<eof>");
}

TM_TEST(sqlsplit_unterminated_at_end) {
  check("SELECT 1", "SELECT 1<eof>");
  check("SELECT 1; SELECT 'open;", "SELECT 1 | SELECT 'open;<eof>");
  check("SELECT 1 -", "SELECT 1 -<eof>");
  check("SELECT 1; -- trailing note", "SELECT 1");
  check("SELECT 1; /* open note", "SELECT 1");
}

TM_TEST(sqlsplit_pending_follows_the_statement) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, 1024);
  char *stmt = NULL;
  TM_ASSERT(!tm_sqlsplit_pending(&s));
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "-- a note\n", 10, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ITEROVER);
  TM_ASSERT(!tm_sqlsplit_pending(&s)); /* a dot-command may follow */
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "/* open\n", 8, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ITEROVER);
  TM_ASSERT(tm_sqlsplit_pending(&s));
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "*/\n", 3, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ITEROVER);
  TM_ASSERT(!tm_sqlsplit_pending(&s));
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT\n", 7, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ITEROVER);
  TM_ASSERT(tm_sqlsplit_pending(&s));
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "1; SELECT 'x\n", 13, &err), &err);
  TM_ASSERT_OK(tm_sqlsplit_next(&s, &stmt, &err), &err);
  TM_ASSERT_STR_EQ(stmt, "-- a note\n/* open\n*/\nSELECT\n1");
  tm_free(stmt);
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ITEROVER);
  TM_ASSERT(tm_sqlsplit_pending(&s)); /* in a string */
  tm_sqlsplit_reset(&s);               /* Ctrl-C */
  TM_ASSERT(!tm_sqlsplit_pending(&s));
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT 2;", 9, &err), &err);
  TM_ASSERT_OK(tm_sqlsplit_next(&s, &stmt, &err), &err);
  TM_ASSERT_STR_EQ(stmt, "SELECT 2");
  tm_free(stmt);
  tm_sqlsplit_dispose(&s);
}

TM_TEST(sqlsplit_limit) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, 16);
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT 1234567", 14, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_feed(&s, "890", 3, &err), TM_ETOOLARGE);
  TM_ASSERT_CONTAINS(err.message, "longer than 16 bytes");
  /* Statements taken free their room. */
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, ";", 1, &err), &err);
  char *stmt = NULL;
  TM_ASSERT_OK(tm_sqlsplit_next(&s, &stmt, &err), &err);
  TM_ASSERT_STR_EQ(stmt, "SELECT 1234567");
  tm_free(stmt);
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT 123456789", 16, &err), &err);
  tm_sqlsplit_dispose(&s);
}

TM_TEST(sqlsplit_refuses_nul_bytes) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, 1024);
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT 1 ", 9, &err), &err);
  TM_ASSERT_RC(tm_sqlsplit_feed(&s, "AS x\0;", 6, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "NUL byte in the statement (at byte 13");
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, ";", 1, &err), &err); /* nothing of the refused text went in */
  char *stmt = NULL;
  TM_ASSERT_OK(tm_sqlsplit_next(&s, &stmt, &err), &err);
  TM_ASSERT_STR_EQ(stmt, "SELECT 1");
  tm_free(stmt);
  tm_sqlsplit_dispose(&s);
}

TM_TEST(sqlsplit_out_of_memory) {
  tm_error err;
  tm_sqlsplit s;
  tm_sqlsplit_init(&s, 1024);
  TM_ASSERT_OK(tm_sqlsplit_feed(&s, "SELECT 1;", 9, &err), &err);
  tm_alloc_fail_at(1, false);
  char *stmt = NULL;
  TM_ASSERT_RC(tm_sqlsplit_next(&s, &stmt, &err), TM_ENOMEM);
  tm_alloc_fail_at(0, false);
  /* Nothing was lost: the statement is still there. */
  TM_ASSERT_OK(tm_sqlsplit_next(&s, &stmt, &err), &err);
  TM_ASSERT_STR_EQ(stmt, "SELECT 1");
  tm_free(stmt);
  tm_sqlsplit_dispose(&s);
}
