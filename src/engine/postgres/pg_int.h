/*
 * pg_int.h - how the postgres engine stores each tm_type in PostgreSQL
 * (engine layer, private to the postgres backend: postgres.c, pgtype.c).
 *
 * Values travel in PostgreSQL's binary format both ways (COPY ... FROM STDIN
 * (FORMAT binary) to load, binary results of a cursor to scan, binary
 * parameters for pushed-down comparisons). Each tm type has one column type
 * that reads back exactly:
 *
 *   tm type                 PostgreSQL column
 *   bool                    boolean
 *   int8, int16, uint8      smallint
 *   int32, uint16           integer
 *   int64, uint32           bigint
 *   uint64                  numeric(20,0)
 *   float32, float64        real, double precision (NaN and infinities kept)
 *   decimal(p,s)            numeric(p,s)
 *   utf8                    text COLLATE "C" (byte order, as tidemark compares)
 *   binary, fixed(n)        bytea
 *   uuid                    uuid
 *   date32                  date
 *   time64(us)              time
 *   time64(ns)              bigint (nanoseconds since midnight: time has microseconds)
 *   timestamp(s|ms|us)      timestamp; with a zone timestamptz
 *   timestamp(ns)           bigint (nanoseconds since the epoch: PostgreSQL has microseconds)
 *   list, struct, map       jsonb (JSON text in the engine's schema, postgres.c "nested")
 *
 * A value PostgreSQL cannot hold (a date or timestamp past its range) fails
 * the load with PostgreSQL's error, naming nothing stored.
 */
#ifndef TM_ENGINE_POSTGRES_PG_INT_H
#define TM_ENGINE_POSTGRES_PG_INT_H

#include "engine/engine_int.h"

/** One value in PostgreSQL's binary format. */
typedef struct tm_pgval {
  const char *p;    /* the bytes: into the tm_value's payload or `buf` */
  int len;          /* -1: NULL */
  char buf[80];
} tm_pgval;

/** The column type of t ("numeric(18,3)", "timestamptz", ...); buf >= 48 bytes. */
void tm_pg_type_decl(const tm_type *t, char *buf, size_t cap);
/** The type OID of t's column (for parameters). */
unsigned tm_pg_type_oid(const tm_type *t);
/** Whether PostgreSQL orders t's stored values as tm_value_cmp does (pushdown). */
bool tm_pg_order_exact(const tm_type *t);
/** The binary form of v (a value of type t). TM_EINVALID when PostgreSQL cannot hold it. */
int tm_pgval_from(tm_pgval *out, const tm_type *t, const tm_value *v, tm_error *err)
    TM_WARN_UNUSED;
/**
 * Reads the binary form p[0..len) of a column of type t into out (payloads
 * point into p). TM_ECORRUPT when the bytes cannot be a value of t.
 */
int tm_pg_to_value(const tm_type *t, const char *p, int len, tm_value *out, tm_error *err)
    TM_WARN_UNUSED;

#endif
