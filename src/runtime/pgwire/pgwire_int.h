/*
 * pgwire_int.h - what the files of the PostgreSQL wire protocol server share
 * (runtime layer, pgwire; private): type OIDs and value encodings (types.c),
 * the statements tidemark answers itself (session.c), SQLSTATE codes, and
 * one connection (conn.c) as the server (server.c) runs it.
 */
#ifndef TM_RUNTIME_PGWIRE_PGWIRE_INT_H
#define TM_RUNTIME_PGWIRE_PGWIRE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/sql.h"
#include "runtime/pgwire/pgwire.h"
#include "runtime/pgwire/proto.h"
#include "runtime/runtime_int.h"

/* ---- types (types.c) ------------------------------------------------------------------------ */

/** The PostgreSQL type OID a result column of kind t is described with. */
uint32_t tm_pg__oid(tm_sql_type t);
/** pg_type.typlen of that OID (-1: variable). */
int16_t tm_pg__typlen(tm_sql_type t);
/**
 * Appends cell i of st's current row as a DataRow field: Int32 length (-1 for
 * NULL) and its bytes, in PostgreSQL's text output (binary false) or binary
 * send format. scratch is the caller's. TM_EUNSUPPORTED for a binary format
 * tidemark does not write (interval, timetz).
 */
int tm_pg__cell(tm_sql_stmt *st, size_t i, bool binary, tm_buf *scratch, tm_buf *out,
                tm_error *err) TM_WARN_UNUSED;
/**
 * A Bind value as a statement parameter: text as TEXT (DuckDB casts it to
 * what its place needs); binary read by its type (oid, or the kind DuckDB
 * gave the parameter when the client sent no type). out owns its text.
 * TM_EINVALID naming a binary value of the wrong size or an unsupported type.
 */
int tm_pg__param(const tm_pg_value *v, bool binary, uint32_t oid, tm_sql_type kind,
                 tm_sql_param *out, tm_error *err) TM_WARN_UNUSED;

/* ---- SQLSTATE ------------------------------------------------------------------------------- */

/** The SQLSTATE of a statement that failed with rc and message. */
const char *tm_pg__sqlstate(int rc, const char *message);

/* ---- statements tidemark answers itself (session.c) ------------------------------------------ */

typedef enum pg_special {
  PG_DUCKDB = 0, /* everything else: DuckDB through the gate */
  PG_EMPTY,      /* blanks and comments: EmptyQueryResponse */
  PG_SET,        /* SET / RESET of a known client parameter: a no-op */
  PG_SHOW,       /* SHOW of a known parameter: one row */
  PG_TXN,        /* BEGIN / COMMIT / ROLLBACK: no-ops (every statement reads one state) */
  PG_COPY,       /* COPY (query) TO STDOUT, COPY table TO STDOUT: the query's rows as CopyData */
  PG_PREPARE,    /* PREPARE name AS query: a named statement (inner_sql), as Parse makes */
  PG_EXECUTE,    /* EXECUTE name [(args)]: inner_sql is "SELECT args" (or NULL), bound as text */
  PG_DEALLOCATE  /* DEALLOCATE [PREPARE] name | ALL */
} pg_special;

/* The session parameters a connection reports and answers SHOW with. */
typedef struct tm_pg_params {
  char application_name[64];
  char extra_float_digits[16];
} tm_pg_params;

/**
 * Classifies sql. For PG_SET, applies it to p (or refuses: TM_EINVALID naming
 * the parameter or value; *report names a parameter to send back in a
 * ParameterStatus, or is NULL). For PG_SHOW, *show_name and *show_value (static or
 * p's). For PG_TXN and PG_SET, tag is the command tag.
 */
typedef struct tm_pg_special_result {
  pg_special kind;
  char tag[32];
  const char *report;       /* a ParameterStatus to send (PG_SET) */
  char show_name[64];
  char show_value[128];
  char *inner_sql;          /* owned: PG_COPY the query whose rows are copied out; PG_PREPARE
                               the statement; PG_EXECUTE "SELECT <args>" or NULL */
  char stmt_name[64];       /* PG_PREPARE, PG_EXECUTE, PG_DEALLOCATE ("" with ALL) */
  bool copy_csv, copy_header; /* FORMAT csv, HEADER */
  char copy_delim;          /* DELIMITER: a tab for text, a comma for csv unless given */
} tm_pg_special_result;

/** Frees what a classification owns (inner_sql). */
void tm_pg__special_dispose(tm_pg_special_result *r);

int tm_pg__classify(const char *sql, tm_pg_params *p, bool apply, tm_pg_special_result *out,
                    tm_error *err) TM_WARN_UNUSED;
/** The value of a reported parameter (server_version, TimeZone, ...), NULL when unknown. */
const char *tm_pg__param_value(const tm_pg_params *p, const char *name);
/** The i-th parameter sent at startup as ParameterStatus; NULL past the last. */
const char *tm_pg__reported(size_t i);
/**
 * The SQL DuckDB runs for sql: psql's and JDBC's catalog queries see the
 * datasets as tables (pg_class.relkind 'r'). *out: tm_free.
 */
int tm_pg__rewrite(tm_runtime *rt, const char *sql, char **out, tm_error *err) TM_WARN_UNUSED;

/* ---- connections (conn.c, server.c) --------------------------------------------------------- */

typedef struct tm_pg_conn tm_pg_conn;

struct tm_pg_server {
  tm_runtime *rt;               /* borrowed */
  tm_pg_options o;
  int fd;                       /* listening socket */
  int port;
  pthread_t thread;             /* the accept loop */
  bool thread_started;
  pthread_mutex_t mu;           /* guards everything below */
  pthread_cond_t cv;            /* signalled when a connection ends */
  bool stopping;
  tm_pg_conn *conns;            /* live connections (linked by next) */
  int n_conns;                  /* live connection threads, the refusing ones included */
  uint32_t next_pid;            /* BackendKeyData process ids */
};

struct tm_pg_conn {
  tm_pg_server *srv;            /* borrowed */
  int fd;
  uint32_t pid, secret;         /* BackendKeyData */
  bool refuse;                  /* past the cap: answer 53300 and close */
  tm_pg_conn *next;             /* srv->conns */
  tm_sql_session *live;         /* the session running a statement (under srv->mu), for cancels */
  char peer[64];
};

/** Runs one connection to its end and frees it (the connection's thread). */
void tm_pg__conn_run(tm_pg_conn *c);

#endif
