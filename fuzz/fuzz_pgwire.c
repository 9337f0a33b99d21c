/*
 * fuzz_pgwire.c - libFuzzer target for what a PostgreSQL client sends to
 * `tidemark run --pg` before DuckDB sees anything (issue 20; SPEC D4;
 * runtime/pgwire): the startup packet, the frontend messages, SCRAM's client
 * messages and the classification of a statement (SET, SHOW, COPY ... TO
 * STDOUT, BEGIN ...).
 *
 * Input: a first byte choosing the reading, then bytes.
 *   - even: the rest is a startup packet body (tm_pg_startup_parse);
 *   - odd: the rest is a stream of messages, each a type byte, a big-endian
 *     Int32 length (counting itself, clamped to what is left) and a body,
 *     read by the parser of its type: Parse, Bind, Describe/Close, Execute,
 *     Query (and its classification), SASL (the SCRAM exchange).
 * Checked: every parse answers TM_OK or an error with a message; what a
 * successful parse returns lies inside the body (strings NUL-terminated
 * there, values and arrays within it); classification never fails without a
 * message and owns inner_sql only for COPY, PREPARE and EXECUTE.
 *
 * Seed corpus (fuzz/corpora/fuzz_pgwire/): startup packets of psql and
 * JDBC, SSLRequest, GSSENCRequest, CancelRequest, a protocol 2 packet, one
 * cut short; message streams of the simple and extended protocols (libpq's
 * PQexecParams with binary values, a Bind with more values than bytes, a
 * negative count), SET/SHOW/COPY statements and SCRAM client messages.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pgwire/auth.h"
#include "runtime/pgwire/pgwire_int.h"
#include "runtime/pgwire/proto.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_pgwire: %s\n", what);
  abort();
}

static void inside(const uint8_t *body, size_t n, const void *p, size_t len, const char *what) {
  const uint8_t *q = p;
  if (q < body || q > body + n || len > (size_t)(body + n - q)) broken(what);
}

static void inside_str(const uint8_t *body, size_t n, const char *s, const char *what) {
  if (!s) return;
  inside(body, n, s, 1, what);
  if (!memchr(s, 0, (size_t)(body + n - (const uint8_t *)s))) broken(what);
}

static void failed(int rc, const tm_error *e) {
  if (rc != TM_OK && !e->message[0]) broken("an error without a message");
}

static void one_message(char type, const uint8_t *b, size_t n) {
  tm_error e;
  tm_error_init(&e);
  int rc;
  switch (type) {
    case 'P': {
      tm_pg_parse m;
      rc = tm_pg_parse_parse(b, n, &m, &e);
      failed(rc, &e);
      if (rc == TM_OK) {
        inside_str(b, n, m.name, "Parse name");
        inside_str(b, n, m.query, "Parse query");
        inside(b, n, m.types, 4 * m.n_types, "Parse types");
        for (size_t i = 0; i < m.n_types; i++) (void)tm_pg_u32_at(m.types, i);
      }
      break;
    }
    case 'B': {
      tm_pg_bind m;
      rc = tm_pg_parse_bind(b, n, &m, &e);
      failed(rc, &e);
      if (rc == TM_OK) {
        inside_str(b, n, m.portal, "Bind portal");
        inside_str(b, n, m.stmt, "Bind statement");
        inside(b, n, m.formats, 2 * m.n_formats, "Bind formats");
        inside(b, n, m.rformats, 2 * m.n_rformats, "Bind result formats");
        for (size_t i = 0; i < m.n_values; i++) {
          if (m.values[i].len < -1) broken("Bind value length");
          if (m.values[i].len >= 0) inside(b, n, m.values[i].ptr, (size_t)m.values[i].len, "Bind value");
          tm_sql_param p;
          tm_error pe;
          tm_error_init(&pe);
          /* As text and as each binary type. */
          static const uint32_t oids[] = {0, 16, 20, 21, 23, 25, 700, 701, 17, 1082, 1114, 1184, 1700};
          for (size_t k = 0; k < sizeof oids / sizeof oids[0]; k++) {
            int prc = tm_pg__param(&m.values[i], k != 0, oids[k], TM_SQLT_OTHER, &p, &pe);
            failed(prc, &pe);
            if (prc == TM_OK) tm_free(p.text);
          }
        }
        tm_free(m.values);
      }
      break;
    }
    case 'D':
    case 'C': {
      char kind;
      const char *name;
      rc = tm_pg_parse_target(b, n, &kind, &name, &e);
      failed(rc, &e);
      if (rc == TM_OK) inside_str(b, n, name, "target name");
      break;
    }
    case 'E': {
      const char *portal;
      uint32_t max;
      rc = tm_pg_parse_execute(b, n, &portal, &max, &e);
      failed(rc, &e);
      if (rc == TM_OK) inside_str(b, n, portal, "Execute portal");
      break;
    }
    case 'Q': {
      const char *sql;
      rc = tm_pg_parse_query(b, n, &sql, &e);
      failed(rc, &e);
      if (rc == TM_OK) {
        inside_str(b, n, sql, "Query text");
        tm_pg_params pp;
        memset(&pp, 0, sizeof pp);
        tm_pg_special_result r;
        tm_error ce;
        tm_error_init(&ce);
        int crc = tm_pg__classify(sql, &pp, true, &r, &ce);
        failed(crc, &ce);
        if (crc == TM_OK && (r.kind == PG_COPY || r.kind == PG_PREPARE) && !r.inner_sql)
          broken("COPY or PREPARE without its query");
        if (crc == TM_OK && r.inner_sql && r.kind != PG_COPY && r.kind != PG_PREPARE &&
            r.kind != PG_EXECUTE)
          broken("inner_sql outside COPY, PREPARE and EXECUTE");
        if (crc != TM_OK && r.inner_sql) broken("inner_sql left by a refused statement");
        tm_pg__special_dispose(&r);
      }
      break;
    }
    case 'p': {
      const char *mech;
      const uint8_t *d;
      int32_t dl;
      rc = tm_pg_parse_sasl_initial(b, n, &mech, &d, &dl, &e);
      failed(rc, &e);
      tm_pg_scram sc;
      tm_buf out = TM_BUF_INIT(4096);
      if (rc == TM_OK && dl >= 0) {
        inside(b, n, d, (size_t)dl, "SASL data");
        if (tm_pg_scram_first(&sc, d, (size_t)dl, &out, &e) == TM_OK) {
          /* The same bytes as a client-final-message, against one key. */
          const char *keys[1] = {"key"};
          bool ok = false;
          tm_buf_clear(&out);
          int frc = tm_pg_scram_final(&sc, keys, 1, d, (size_t)dl, &ok, &out, &e);
          failed(frc, &e);
        }
      } else if (rc != TM_OK) {
        /* The body as a bare SCRAM client-first-message. */
        tm_error_init(&e);
        failed(tm_pg_scram_first(&sc, b, n, &out, &e), &e);
      }
      tm_buf_dispose(&out);
      break;
    }
    default: break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  /* A private copy, so that ASan catches a read past the body. */
  if (data[0] % 2 == 0) {
    uint8_t *body = tm_malloc(n ? n : 1);
    if (!body) return 0;
    memcpy(body, p, n);
    tm_pg_startup s;
    tm_error e;
    tm_error_init(&e);
    int rc = tm_pg_startup_parse(body, n, &s, &e);
    failed(rc, &e);
    if (rc == TM_OK) {
      inside_str(body, n, s.user, "user");
      inside_str(body, n, s.database, "database");
      inside_str(body, n, s.application_name, "application_name");
    }
    tm_free(body);
    return 0;
  }
  while (n >= 5) {
    char type = (char)p[0];
    uint32_t len = ((uint32_t)p[1] << 24) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 8) | p[4];
    size_t body_len = len < 4 ? 0 : len - 4;
    if (body_len > n - 5) body_len = n - 5;
    uint8_t *body = tm_malloc(body_len ? body_len : 1);
    if (!body) return 0;
    memcpy(body, p + 5, body_len);
    one_message(type, body, body_len);
    tm_free(body);
    p += 5 + body_len;
    n -= 5 + body_len;
  }
  return 0;
}
