/*
 * pgwire_client.c - libpq's extended query protocol against `tidemark run
 * --pg` (issue 20; test tool for tests/integration/test_pgwire.sh).
 *
 * Usage: pgwire_client CONNINFO
 *
 * Runs fixed checks over the dataset `events` (id 1..50, v 'v<id>', x id*1.5,
 * ok id%2==0, ts a timestamptz) and prints one line per result, which the
 * test compares with what DuckDB computes from the same file:
 *   prepare   PQprepare with typed parameters, PQdescribePrepared
 *   binary    PQexecPrepared: a binary int4 and a text parameter, binary results
 *             decoded by their type OIDs (int8, text, float8, bool, timestamptz)
 *   text      PQexecParams: untyped text parameters, text results, a NULL
 *   untyped   untyped parameters typed by DuckDB, binary results of the bound types
 *   bparams   binary date, timestamp, float8, bool and bytea parameters
 *   error     an unknown table (SQLSTATE 42P01), a write (25006), then a query
 *             on the same connection
 *   cancel    PQcancel of a long query (57014), then a query
 * Exits 1 on a libpq failure it did not expect.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static PGconn *conn;

static void die(const char *what, PGresult *r) {
  fprintf(stderr, "pgwire_client: %s: %s", what, r ? PQresultErrorMessage(r) : PQerrorMessage(conn));
  exit(1);
}

static uint64_t be(const char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = (v << 8) | (unsigned char)p[i];
  return v;
}

/* One binary cell as text, by its type OID. */
static void print_binary(PGresult *r, int row, int col) {
  if (PQgetisnull(r, row, col)) {
    printf("NULL");
    return;
  }
  const char *p = PQgetvalue(r, row, col);
  int n = PQgetlength(r, row, col);
  switch (PQftype(r, col)) {
    case 20: printf("%" PRId64, (int64_t)be(p, 8)); break;
    case 23: printf("%d", (int32_t)be(p, 4)); break;
    case 21: printf("%d", (int16_t)be(p, 2)); break;
    case 16: printf("%s", p[0] ? "t" : "f"); break;
    case 701: {
      uint64_t u = be(p, 8);
      double d;
      memcpy(&d, &u, 8);
      printf("%g", d);
      break;
    }
    case 1082: printf("date:%d", (int32_t)be(p, 4)); break;
    case 1114:
    case 1184: printf("ts:%" PRId64, (int64_t)be(p, 8)); break;
    case 17:
      printf("bytea:");
      for (int i = 0; i < n; i++) printf("%02x", (unsigned char)p[i]);
      break;
    default: printf("%.*s", n, p);
  }
}

static void print_result(const char *label, PGresult *r, int binary) {
  for (int i = 0; i < PQntuples(r); i++) {
    printf("%s", label);
    for (int c = 0; c < PQnfields(r); c++) {
      printf(c ? "|" : " ");
      if (binary) print_binary(r, i, c);
      else printf("%s", PQgetisnull(r, i, c) ? "NULL" : PQgetvalue(r, i, c));
    }
    printf("\n");
  }
}

static void expect_error(const char *label, const char *sql) {
  PGresult *r = PQexecParams(conn, sql, 0, NULL, NULL, NULL, NULL, 0);
  const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  printf("%s %s %s\n", label, PQresStatus(PQresultStatus(r)), state ? state : "-");
  PQclear(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pgwire_client CONNINFO\n");
    return 2;
  }
  conn = PQconnectdb(argv[1]);
  if (PQstatus(conn) != CONNECTION_OK) die("connect", NULL);

  /* prepare: typed parameters, described. */
  Oid types[2] = {23, 25};
  PGresult *r = PQprepare(conn, "s1",
                          "SELECT id, v, x, ok, ts FROM events WHERE id >= $1 AND v <> $2 "
                          "ORDER BY id LIMIT 3",
                          2, types);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) die("prepare", r);
  PQclear(r);
  r = PQdescribePrepared(conn, "s1");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) die("describe", r);
  printf("prepare nparams=%d p1=%u p2=%u nfields=%d", PQnparams(r), PQparamtype(r, 0),
         PQparamtype(r, 1), PQnfields(r));
  for (int c = 0; c < PQnfields(r); c++) printf(" %s:%u", PQfname(r, c), PQftype(r, c));
  printf("\n");
  PQclear(r);

  /* binary: a binary int4 parameter, a text one, binary results. */
  uint32_t from = htonl(10);
  const char *vals[2] = {(const char *)&from, "v11"};
  int lens[2] = {4, 0};
  int fmts[2] = {1, 0};
  r = PQexecPrepared(conn, "s1", 2, vals, lens, fmts, 1);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("exec binary", r);
  print_result("binary", r, 1);
  PQclear(r);
  /* The same statement again, text results. */
  r = PQexecPrepared(conn, "s1", 2, vals, lens, fmts, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("exec text", r);
  print_result("again", r, 0);
  PQclear(r);

  /* text: untyped parameters, one NULL. */
  const char *tv[2] = {"48", NULL};
  r = PQexecParams(conn, "SELECT id, v, $2::varchar IS NULL AS n FROM events WHERE id > $1 ORDER BY id",
                   2, NULL, tv, NULL, NULL, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("exec params", r);
  print_result("text", r, 0);
  PQclear(r);

  /* untyped: DuckDB types the parameters from the statement; binary results follow the bound types. */
  const char *uv[2] = {"41", "x"};
  r = PQexecParams(conn, "SELECT $1::int + 1 AS a, $2 || '' AS b, [1, 2] AS c", 2, NULL, uv, NULL, NULL, 1);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("untyped", r);
  printf("untyped %u %u %u", PQftype(r, 0), PQftype(r, 1), PQftype(r, 2));
  print_result("", r, 1);
  PQclear(r);

  /* bparams: binary date (2000-01-03 = day 2), timestamp (1 s after 2000-01-01), float8, bool, bytea. */
  uint32_t day = htonl(2);
  uint64_t us = 1000000;
  char ts[8], f8[8];
  for (int i = 0; i < 8; i++) ts[i] = (char)(us >> (56 - 8 * i));
  double d = 2.5;
  uint64_t du;
  memcpy(&du, &d, 8);
  for (int i = 0; i < 8; i++) f8[i] = (char)(du >> (56 - 8 * i));
  char b1 = 1, by[3] = {0, 'A', (char)0xff};
  Oid bt[5] = {1082, 1114, 701, 16, 17};
  const char *bv[5] = {(const char *)&day, ts, f8, &b1, by};
  int bl[5] = {4, 8, 8, 1, 3}, bf[5] = {1, 1, 1, 1, 1};
  r = PQexecParams(conn, "SELECT $1::date AS d, $2::timestamp AS t, $3::double * 2 AS f, NOT $4::boolean AS b, $5::blob AS y",
                   5, bt, bv, bl, bf, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("binary params", r);
  print_result("bparams", r, 0);
  PQclear(r);
  r = PQexecParams(conn, "SELECT $1::date AS d, $2::timestamp AS t, $5::blob AS y, $3::double AS f, $4::boolean AS b", 5, bt, bv, bl, bf, 1);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("binary params, binary results", r);
  print_result("bresults", r, 1);
  PQclear(r);

  /* error: SQLSTATEs, and the connection goes on. */
  expect_error("error", "SELECT * FROM nope");
  expect_error("error", "DELETE FROM events");
  expect_error("error", "SELEC 1");
  r = PQexecParams(conn, "SELECT count(*) AS n FROM events", 0, NULL, NULL, NULL, NULL, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("after errors", r);
  print_result("after", r, 0);
  PQclear(r);

  /* cancel: a long query, cancelled from here. */
  if (!PQsendQuery(conn, "SELECT count(*) FROM range(100000000) a, range(100000) b WHERE a.range + b.range = -1"))
    die("send", NULL);
  usleep(300000);
  PGcancel *cn = PQgetCancel(conn);
  char eb[256];
  if (!cn || !PQcancel(cn, eb, sizeof eb)) {
    fprintf(stderr, "pgwire_client: cancel: %s\n", eb);
    return 1;
  }
  PQfreeCancel(cn);
  while ((r = PQgetResult(conn))) {
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    printf("cancel %s %s\n", PQresStatus(PQresultStatus(r)), state ? state : "-");
    PQclear(r);
  }
  r = PQexec(conn, "SELECT 1 AS one");
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("after cancel", r);
  print_result("after", r, 0);
  PQclear(r);
  PQfinish(conn);
  return 0;
}
