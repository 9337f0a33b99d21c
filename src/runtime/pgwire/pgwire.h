/*
 * pgwire.h - the PostgreSQL wire protocol server: `tidemark run --pg ADDR`
 * (runtime layer; SPEC 1.3, D4; docs/PGWIRE.md).
 *
 * psql, JDBC, libpq, psycopg2, Grafana and the other PostgreSQL clients
 * query the datasets as they would a PostgreSQL server: protocol 3.0, the
 * simple and extended query protocols, text and binary results, password
 * authentication against the API keys, cancel requests. Every statement goes
 * the way a POST /v1/sql statement goes: a session of the runtime's pool,
 * the read-only gate (D4), the same time limit and memory limit.
 *
 * One thread per connection, at most max_connections at once (past them a
 * client gets SQLSTATE 53300 and is closed). TLS is refused cleanly: an
 * SSLRequest or GSSENCRequest is answered 'N', and the client goes on in
 * the clear or gives up (sslmode=require).
 */
#ifndef TM_RUNTIME_PGWIRE_PGWIRE_H
#define TM_RUNTIME_PGWIRE_PGWIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/pgwire/auth.h"
#include "util/error.h"

struct tm_runtime;
typedef struct tm_pg_server tm_pg_server;

#define TM_PG_MAX_CONNECTIONS 64 /* default connection cap */

typedef struct tm_pg_options {
  const char *addr;             /* HOST:PORT, [IPV6]:PORT or PORT (loopback); port 0: a free one */
  int max_connections;          /* 0: TM_PG_MAX_CONNECTIONS */
  tm_pg_auth auth;              /* the password method when API keys are configured */
} tm_pg_options;

/**
 * Binds addr and starts accepting (a thread). rt must outlive the server;
 * its API keys decide authentication (none: trust). *out: tm_pg_server_free.
 * Errors: TM_EINVALID (a bad address), TM_EIO (cannot bind), TM_ENOMEM.
 */
int tm_pg_server_start(tm_pg_server **out, struct tm_runtime *rt, const tm_pg_options *o,
                       tm_error *err) TM_WARN_UNUSED;
/**
 * Stops accepting: new connections are closed, and a statement interrupted
 * from now on ends its connection with 57P01 (the server is stopping).
 * NULL is a no-op.
 */
void tm_pg_server_quiesce(tm_pg_server *s);
/** The bound port (0 for NULL). */
int tm_pg_server_port(const tm_pg_server *s);
/**
 * Stops accepting, interrupts running statements, closes every connection
 * and joins their threads; then frees. NULL is a no-op.
 */
void tm_pg_server_free(tm_pg_server *s);

#endif
