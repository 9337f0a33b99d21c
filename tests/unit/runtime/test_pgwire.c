/*
 * Unit tests for the PostgreSQL wire protocol's pure parts (runtime/pgwire;
 * issue 20, SPEC D4): the startup packet and frontend messages read with
 * bounds (cut short, counts the body cannot hold, bad lengths), the writer's
 * framing, MD5 against a value computed by Python's hashlib, a SCRAM-SHA-256
 * exchange driven by a client written here from RFC 5802 (right key, wrong
 * key, a tampered nonce, channel binding asked for), statement
 * classification (SET, SHOW, COPY ... TO STDOUT, BEGIN, PREPARE/EXECUTE) and binary Bind
 * values by type.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "runtime/pgwire/auth.h"
#include "runtime/pgwire/pgwire_int.h"
#include "runtime/pgwire/proto.h"
#include "tm_test.h"
#include "util/alloc.h"

static size_t put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
  return 4;
}

TM_TEST(pgwire_startup_packets) {
  tm_error err;
  tm_pg_startup s;
  uint8_t b[128];
  size_t n = put32(b, TM_PG_CODE_V3);
  static const char kv[] = "user\0me\0database\0db\0application_name\0psql\0";
  memcpy(b + n, kv, sizeof kv); /* sizeof includes the final NUL that ends the list */
  n += sizeof kv;
  TM_ASSERT_OK(tm_pg_startup_parse(b, n, &s, &err), &err);
  TM_ASSERT_STR_EQ(s.user, "me");
  TM_ASSERT_STR_EQ(s.database, "db");
  TM_ASSERT_STR_EQ(s.application_name, "psql");
  /* Cut short anywhere: refused, never read past. */
  for (size_t cut = 0; cut < n; cut++) {
    uint8_t *copy = tm_malloc(cut ? cut : 1);
    memcpy(copy, b, cut);
    TM_ASSERT(tm_pg_startup_parse(copy, cut, &s, &err) != TM_OK);
    tm_free(copy);
  }
  n = put32(b, TM_PG_CODE_SSL);
  TM_ASSERT_OK(tm_pg_startup_parse(b, n, &s, &err), &err);
  TM_ASSERT_INT_EQ(s.code, TM_PG_CODE_SSL);
  n = put32(b, TM_PG_CODE_CANCEL);
  n += put32(b + n, 7);
  n += put32(b + n, 99);
  TM_ASSERT_OK(tm_pg_startup_parse(b, n, &s, &err), &err);
  TM_ASSERT_INT_EQ(s.cancel_pid, 7);
  TM_ASSERT_INT_EQ(s.cancel_key, 99);
  n = put32(b, 2u << 16);
  TM_ASSERT_RC(tm_pg_startup_parse(b, n, &s, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "protocol 2.0");
  n = put32(b, TM_PG_CODE_V3);
  memcpy(b + n, "database\0x\0", 12);
  TM_ASSERT_RC(tm_pg_startup_parse(b, n + 12, &s, &err), TM_EINVALID);
}

TM_TEST(pgwire_bind_is_bounded) {
  tm_error err;
  tm_pg_bind bd;
  /* portal "", statement "", no formats, 2 values (NULL, "ab"), 1 result format (binary). */
  static const uint8_t ok[] = {0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 'a', 'b', 0, 1, 0, 1};
  TM_ASSERT_OK(tm_pg_parse_bind(ok, sizeof ok, &bd, &err), &err);
  TM_ASSERT_INT_EQ(bd.n_values, 2);
  TM_ASSERT_INT_EQ(bd.values[0].len, -1);
  TM_ASSERT_INT_EQ(bd.values[1].len, 2);
  TM_ASSERT(memcmp(bd.values[1].ptr, "ab", 2) == 0);
  TM_ASSERT_INT_EQ(bd.n_rformats, 1);
  TM_ASSERT_INT_EQ(tm_pg_i16_at(bd.rformats, 0), 1);
  tm_free(bd.values);
  for (size_t cut = 0; cut < sizeof ok; cut++)
    TM_ASSERT_RC(tm_pg_parse_bind(ok, cut, &bd, &err), TM_ECORRUPT);
  /* 30000 values announced in 4 bytes: refused before any allocation. */
  static const uint8_t many[] = {0, 0, 0, 0, 0x75, 0x30, 0, 0, 0, 0};
  TM_ASSERT_RC(tm_pg_parse_bind(many, sizeof many, &bd, &err), TM_ECORRUPT);
  /* A length below -1, a negative count, 2 formats for 1 value. */
  static const uint8_t badlen[] = {0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe, 0, 0};
  TM_ASSERT_RC(tm_pg_parse_bind(badlen, sizeof badlen, &bd, &err), TM_ECORRUPT);
  static const uint8_t neg[] = {0, 0, 0xff, 0xff};
  TM_ASSERT_RC(tm_pg_parse_bind(neg, sizeof neg, &bd, &err), TM_ECORRUPT);
  static const uint8_t fmts[] = {0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  TM_ASSERT_RC(tm_pg_parse_bind(fmts, sizeof fmts, &bd, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "format count");
}

TM_TEST(pgwire_parse_and_execute_messages) {
  tm_error err;
  tm_pg_parse p;
  static const uint8_t parse[] = {'s', 0, 'S', 'E', 'L', 0, 0, 1, 0, 0, 0, 23};
  TM_ASSERT_OK(tm_pg_parse_parse(parse, sizeof parse, &p, &err), &err);
  TM_ASSERT_STR_EQ(p.name, "s");
  TM_ASSERT_STR_EQ(p.query, "SEL");
  TM_ASSERT_INT_EQ(p.n_types, 1);
  TM_ASSERT_INT_EQ(tm_pg_u32_at(p.types, 0), 23);
  TM_ASSERT_RC(tm_pg_parse_parse(parse, sizeof parse - 1, &p, &err), TM_ECORRUPT);
  const char *portal;
  uint32_t max;
  static const uint8_t exe[] = {'p', 0, 0, 0, 0, 5};
  TM_ASSERT_OK(tm_pg_parse_execute(exe, sizeof exe, &portal, &max, &err), &err);
  TM_ASSERT_INT_EQ(max, 5);
  char kind;
  const char *name;
  static const uint8_t bad_kind[] = {'X', 0};
  TM_ASSERT_RC(tm_pg_parse_target(bad_kind, sizeof bad_kind, &kind, &name, &err), TM_ECORRUPT);
  const char *sql;
  static const uint8_t unterminated[] = {'S', 'E', 'L'};
  TM_ASSERT_RC(tm_pg_parse_query(unterminated, sizeof unterminated, &sql, &err), TM_ECORRUPT);
}

TM_TEST(pgwire_writer_frames_messages) {
  tm_error err;
  tm_buf b = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_pg_put_error(&b, "ERROR", "42P01", "no\ntable", &err), &err);
  /* 'E', length 4 + S ERROR\0 V ERROR\0 C 42P01\0 M no table\0 \0 */
  size_t body = 1 + 6 + 1 + 6 + 1 + 6 + 1 + 9 + 1;
  TM_ASSERT_INT_EQ(b.len, 1 + 4 + body);
  TM_ASSERT_INT_EQ((unsigned char)b.ptr[0], 'E');
  TM_ASSERT_INT_EQ(tm_pg_u32_at((const uint8_t *)b.ptr + 1, 0), 4 + body);
  TM_ASSERT(memmem(b.ptr, b.len, "Mno table", 10) != NULL); /* the newline is a space */
  tm_buf_clear(&b);
  TM_ASSERT_OK(tm_pg_put_ready(&b, 'I', &err), &err);
  TM_ASSERT_INT_EQ(b.len, 6);
  TM_ASSERT(memcmp(b.ptr, "Z\0\0\0\5I", 6) == 0);
  tm_buf_dispose(&b);
}

TM_TEST(pgwire_md5_and_cleartext) {
  const char *keys[] = {"other", "k3y"};
  const uint8_t salt[4] = {1, 2, 3, 4};
  /* Python: "md5" + md5(md5(b"k3yalice").hexdigest().encode() + bytes([1,2,3,4])).hexdigest() */
  const char *want = "md56e9561edc6ed6bb4be4df1d9ab0468bc";
  TM_ASSERT(tm_pg_auth_md5(keys, 2, "alice", salt, want, strlen(want)));
  TM_ASSERT(!tm_pg_auth_md5(keys, 2, "bob", salt, want, strlen(want)));
  TM_ASSERT(!tm_pg_auth_md5(keys, 1, "alice", salt, want, strlen(want)));
  TM_ASSERT(!tm_pg_auth_md5(keys, 2, "alice", salt, want, 20));
  TM_ASSERT(tm_pg_auth_cleartext(keys, 2, "k3y", 3));
  TM_ASSERT(!tm_pg_auth_cleartext(keys, 2, "k3", 2));
  TM_ASSERT(!tm_pg_auth_cleartext(keys, 0, "k3y", 3));
  tm_pg_auth a;
  TM_ASSERT(tm_pg_auth_parse("md5", &a) && a == TM_PG_AUTH_MD5);
  TM_ASSERT(!tm_pg_auth_parse("trust", &a));
}

/* The client's side of SCRAM-SHA-256 (RFC 5802 section 3), from the server's first message. */
static void scram_client_final(const char *password, const char *client_first_bare,
                               const char *server_first, char *out, size_t cap,
                               uint8_t server_sig[32]) {
  const char *r = strstr(server_first, "r="), *s = strstr(server_first, ",s="),
             *i = strstr(server_first, ",i=");
  char nonce[128], salt64[64];
  snprintf(nonce, sizeof nonce, "%.*s", (int)(s - r - 2), r + 2);
  snprintf(salt64, sizeof salt64, "%.*s", (int)(i - s - 3), s + 3);
  uint8_t salt[64];
  int sl = EVP_DecodeBlock(salt, (const unsigned char *)salt64, (int)strlen(salt64));
  while (salt64[strlen(salt64) - 1] == '=' && sl > 0) {
    salt64[strlen(salt64) - 1] = '\0';
    sl--;
  }
  uint8_t salted[32], ck[32], stored[32], sig[32], proof[32], sk[32];
  unsigned len;
  PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, sl, atoi(i + 3), EVP_sha256(), 32,
                    salted);
  HMAC(EVP_sha256(), salted, 32, (const uint8_t *)"Client Key", 10, ck, &len);
  EVP_Digest(ck, 32, stored, &len, EVP_sha256(), NULL);
  char without_proof[256], auth[1024];
  snprintf(without_proof, sizeof without_proof, "c=biws,r=%s", nonce);
  snprintf(auth, sizeof auth, "%s,%s,%s", client_first_bare, server_first, without_proof);
  HMAC(EVP_sha256(), stored, 32, (const uint8_t *)auth, strlen(auth), sig, &len);
  for (int k = 0; k < 32; k++) proof[k] = (uint8_t)(ck[k] ^ sig[k]);
  HMAC(EVP_sha256(), salted, 32, (const uint8_t *)"Server Key", 10, sk, &len);
  HMAC(EVP_sha256(), sk, 32, (const uint8_t *)auth, strlen(auth), server_sig, &len);
  char proof64[64];
  EVP_EncodeBlock((unsigned char *)proof64, proof, 32);
  snprintf(out, cap, "%s,p=%s", without_proof, proof64);
}

TM_TEST(pgwire_scram_exchange) {
  tm_error err;
  const char *keys[] = {"nope", "pencil"};
  const char *first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
  for (int round = 0; round < 3; round++) {
    tm_pg_scram sc;
    tm_buf out = TM_BUF_INIT(4096);
    TM_ASSERT_OK(tm_pg_scram_first(&sc, (const uint8_t *)first, strlen(first), &out, &err), &err);
    TM_ASSERT(strncmp(tm_buf_cstr(&out), "r=rOprNGfwEbeRWgbNEkqO", 22) == 0);
    TM_ASSERT_CONTAINS(tm_buf_cstr(&out), ",i=4096");
    char final[512];
    uint8_t want_sig[32];
    scram_client_final(round == 1 ? "wrong" : "pencil", first + 3, tm_buf_cstr(&out), final,
                       sizeof final, want_sig);
    if (round == 2) final[12] ^= 1; /* the nonce tampered with */
    bool ok = false;
    tm_buf_clear(&out);
    int rc = tm_pg_scram_final(&sc, keys, 2, (const uint8_t *)final, strlen(final), &ok, &out, &err);
    if (round == 0) {
      TM_ASSERT_OK(rc, &err);
      TM_ASSERT(ok);
      char v[64];
      EVP_EncodeBlock((unsigned char *)v, want_sig, 32);
      TM_ASSERT(strncmp(tm_buf_cstr(&out), "v=", 2) == 0);
      TM_ASSERT_STR_EQ(tm_buf_cstr(&out) + 2, v);
    } else if (round == 1) {
      TM_ASSERT_OK(rc, &err);
      TM_ASSERT(!ok);
    } else {
      TM_ASSERT_RC(rc, TM_EINVALID);
      TM_ASSERT_CONTAINS(err.message, "nonce");
    }
    tm_buf_dispose(&out);
  }
  tm_pg_scram sc;
  tm_buf out = TM_BUF_INIT(4096);
  const char *cb = "p=tls-server-end-point,,n=,r=abc";
  TM_ASSERT_RC(tm_pg_scram_first(&sc, (const uint8_t *)cb, strlen(cb), &out, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "channel binding");
  tm_buf_dispose(&out);
}

TM_TEST(pgwire_classifies_session_statements) {
  tm_error err;
  tm_pg_params p;
  memset(&p, 0, sizeof p);
  tm_pg_special_result r;
  TM_ASSERT_OK(tm_pg__classify("  -- c\n /* x */ ; ", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_EMPTY);
  TM_ASSERT_OK(tm_pg__classify("SET application_name = 'it'", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_SET);
  TM_ASSERT_STR_EQ(p.application_name, "it");
  TM_ASSERT_STR_EQ(r.report, "application_name");
  TM_ASSERT_OK(tm_pg__classify("set session TimeZone to 'UTC';", &p, true, &r, &err), &err);
  TM_ASSERT_OK(tm_pg__classify("SET TIME ZONE 'UTC'", &p, true, &r, &err), &err);
  TM_ASSERT_RC(tm_pg__classify("SET TIME ZONE 'Europe/Paris'", &p, true, &r, &err), TM_EINVALID);
  TM_ASSERT_STR_EQ(tm_pg__sqlstate(TM_EINVALID, err.message), "22023");
  TM_ASSERT_RC(tm_pg__classify("SET extra_float_digits = 0", &p, true, &r, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_pg__classify("SET work_mem = '1GB'", &p, true, &r, &err), TM_EINVALID);
  TM_ASSERT_STR_EQ(tm_pg__sqlstate(TM_EINVALID, err.message), "42704");
  TM_ASSERT_OK(tm_pg__classify("SHOW TRANSACTION ISOLATION LEVEL", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_SHOW);
  TM_ASSERT_STR_EQ(r.show_name, "transaction_isolation");
  TM_ASSERT_OK(tm_pg__classify("SHOW TABLES", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_DUCKDB);
  TM_ASSERT_OK(tm_pg__classify("begin read only", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_TXN);
  TM_ASSERT_STR_EQ(r.tag, "BEGIN");
  TM_ASSERT_OK(tm_pg__classify("COPY (SELECT ')' AS \"a)\") TO STDOUT WITH (FORMAT csv, HEADER, "
                               "DELIMITER ';')", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_COPY);
  TM_ASSERT_STR_EQ(r.inner_sql, "SELECT ')' AS \"a)\"");
  TM_ASSERT(r.copy_csv && r.copy_header);
  TM_ASSERT_INT_EQ(r.copy_delim, ';');
  tm_pg__special_dispose(&r);
  TM_ASSERT_OK(tm_pg__classify("copy events (id, v) to stdout", &p, true, &r, &err), &err);
  TM_ASSERT_STR_EQ(r.inner_sql, "SELECT id, v FROM events ");
  TM_ASSERT_INT_EQ(r.copy_delim, '\t');
  tm_pg__special_dispose(&r);
  TM_ASSERT_OK(tm_pg__classify("COPY events TO '/tmp/x'", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_DUCKDB); /* left to the gate, which refuses COPY */
  TM_ASSERT_RC(tm_pg__classify("COPY (SELECT 1) TO STDOUT (FORMAT binary)", &p, true, &r, &err),
               TM_EINVALID);
  TM_ASSERT_OK(tm_pg__classify("PREPARE Q AS SELECT $1::int;", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_PREPARE);
  TM_ASSERT_STR_EQ(r.stmt_name, "q");
  TM_ASSERT_STR_EQ(r.inner_sql, "SELECT $1::int");
  tm_pg__special_dispose(&r);
  TM_ASSERT_RC(tm_pg__classify("PREPARE q (int) AS SELECT $1", &p, true, &r, &err), TM_EINVALID);
  TM_ASSERT_OK(tm_pg__classify("EXECUTE q (1, 'a,b', (2))", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_EXECUTE);
  TM_ASSERT_STR_EQ(r.inner_sql, "SELECT 1, 'a,b', (2)");
  tm_pg__special_dispose(&r);
  TM_ASSERT_OK(tm_pg__classify("execute q", &p, true, &r, &err), &err);
  TM_ASSERT(r.inner_sql == NULL);
  TM_ASSERT_OK(tm_pg__classify("DEALLOCATE PREPARE ALL", &p, true, &r, &err), &err);
  TM_ASSERT_INT_EQ(r.kind, PG_DEALLOCATE);
  TM_ASSERT_STR_EQ(r.stmt_name, "");
  TM_ASSERT_STR_EQ(r.tag, "DEALLOCATE ALL");
}

TM_TEST(pgwire_binary_bind_values) {
  tm_error err;
  tm_sql_param out;
  uint8_t i4[4] = {0xff, 0xff, 0xff, 0xfe};
  tm_pg_value v = {i4, 4};
  TM_ASSERT_OK(tm_pg__param(&v, true, 23, TM_SQLT_OTHER, &out, &err), &err);
  TM_ASSERT_INT_EQ(out.kind, TM_SQL_PARAM_INT);
  TM_ASSERT_INT_EQ(out.i, -2);
  /* date 2000-01-03 is day 2 of PostgreSQL's epoch */
  uint8_t d[4] = {0, 0, 0, 2};
  v = (tm_pg_value){d, 4};
  TM_ASSERT_OK(tm_pg__param(&v, true, 1082, TM_SQLT_OTHER, &out, &err), &err);
  TM_ASSERT_STR_EQ(out.text, "2000-01-03");
  tm_free(out.text);
  /* timestamptz -1 µs: 1999-12-31 23:59:59.999999 UTC */
  uint8_t ts[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  v = (tm_pg_value){ts, 8};
  TM_ASSERT_OK(tm_pg__param(&v, true, 1184, TM_SQLT_OTHER, &out, &err), &err);
  TM_ASSERT_CONTAINS(out.text, "1999-12-31");
  TM_ASSERT_CONTAINS(out.text, "23:59:59.999999");
  tm_free(out.text);
  /* The kind DuckDB gave the parameter, when the client sent no type. */
  uint8_t i8[8] = {0, 0, 0, 0, 0, 0, 1, 0};
  v = (tm_pg_value){i8, 8};
  TM_ASSERT_OK(tm_pg__param(&v, true, 0, TM_SQLT_INT64, &out, &err), &err);
  TM_ASSERT_INT_EQ(out.i, 256);
  /* Sizes that do not fit the type, a type without a binary reading, a NUL in text. */
  v = (tm_pg_value){i4, 3};
  TM_ASSERT_RC(tm_pg__param(&v, true, 23, TM_SQLT_OTHER, &out, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_pg__param(&v, true, 1186, TM_SQLT_OTHER, &out, &err), TM_EINVALID);
  uint8_t nul[3] = {'a', 0, 'b'};
  v = (tm_pg_value){nul, 3};
  TM_ASSERT_RC(tm_pg__param(&v, false, 25, TM_SQLT_OTHER, &out, &err), TM_EINVALID);
  v = (tm_pg_value){NULL, -1};
  TM_ASSERT_OK(tm_pg__param(&v, true, 23, TM_SQLT_OTHER, &out, &err), &err);
  TM_ASSERT_INT_EQ(out.kind, TM_SQL_PARAM_NULL);
}
