/*
 * cell.c - DuckDB's types folded into the kinds a typed client tells apart,
 * and cells read as values (engine layer; see sql.h, tm_sql_type).
 *
 * The PostgreSQL wire protocol (runtime/pgwire) names a type for each result
 * column and sends some in binary: this file says which DuckDB type is which
 * kind, and reads the values whose binary form is plain (integers, floats,
 * booleans, strings, blobs, dates, times and timestamps in microseconds).
 * Every other kind goes out as the text render.c makes.
 */
#include <string.h>

#include "engine/sql/sql_int.h"

tm_sql_type tm_sql__kind(duckdb_logical_type lt) {
  switch (duckdb_get_type_id(lt)) {
    case DUCKDB_TYPE_BOOLEAN: return TM_SQLT_BOOL;
    case DUCKDB_TYPE_TINYINT:
    case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_SMALLINT: return TM_SQLT_INT16;
    case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_INTEGER: return TM_SQLT_INT32;
    case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_BIGINT: return TM_SQLT_INT64;
    case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UHUGEINT:
    case DUCKDB_TYPE_DECIMAL: return TM_SQLT_NUMERIC;
    case DUCKDB_TYPE_FLOAT: return TM_SQLT_FLOAT32;
    case DUCKDB_TYPE_DOUBLE: return TM_SQLT_FLOAT64;
    case DUCKDB_TYPE_VARCHAR:
    case DUCKDB_TYPE_ENUM: return TM_SQLT_TEXT;
    case DUCKDB_TYPE_BLOB: return TM_SQLT_BLOB;
    case DUCKDB_TYPE_DATE: return TM_SQLT_DATE;
    case DUCKDB_TYPE_TIME:
    case DUCKDB_TYPE_TIME_NS: return TM_SQLT_TIME;
    case DUCKDB_TYPE_TIME_TZ: return TM_SQLT_TIMETZ;
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS: return TM_SQLT_TIMESTAMP;
    case DUCKDB_TYPE_TIMESTAMP_TZ: return TM_SQLT_TIMESTAMPTZ;
    case DUCKDB_TYPE_UUID: return TM_SQLT_UUID;
    case DUCKDB_TYPE_INTERVAL: return TM_SQLT_INTERVAL;
    case DUCKDB_TYPE_LIST:
    case DUCKDB_TYPE_ARRAY:
    case DUCKDB_TYPE_STRUCT:
    case DUCKDB_TYPE_MAP:
    case DUCKDB_TYPE_UNION: return TM_SQLT_NESTED;
    default: return TM_SQLT_OTHER;
  }
}

/* A timestamp of DuckDB type id in microseconds; the infinities stay infinite. */
static int64_t micros(duckdb_type id, int64_t x) {
  if (x == INT64_MAX || x == -INT64_MAX) return x;
  switch (id) {
    case DUCKDB_TYPE_TIMESTAMP_S:
      if (x > INT64_MAX / 1000000) return INT64_MAX;
      if (x < -(INT64_MAX / 1000000)) return -INT64_MAX;
      return x * 1000000;
    case DUCKDB_TYPE_TIMESTAMP_MS:
      if (x > INT64_MAX / 1000) return INT64_MAX;
      if (x < -(INT64_MAX / 1000)) return -INT64_MAX;
      return x * 1000;
    case DUCKDB_TYPE_TIMESTAMP_NS:
    case DUCKDB_TYPE_TIME_NS: {
      int64_t q = x / 1000; /* floor, so that times before the epoch keep their order */
      return (x % 1000 < 0) ? q - 1 : q;
    }
    default: return x;
  }
}

bool tm_sql__value(duckdb_vector v, duckdb_logical_type lt, idx_t row, tm_sql_value *out) {
  duckdb_type id = duckdb_get_type_id(lt);
  const void *data = duckdb_vector_get_data(v);
  memset(out, 0, sizeof *out);
  switch (id) {
    case DUCKDB_TYPE_BOOLEAN: out->i = ((const bool *)data)[row] ? 1 : 0; return true;
    case DUCKDB_TYPE_TINYINT: out->i = ((const int8_t *)data)[row]; return true;
    case DUCKDB_TYPE_UTINYINT: out->i = ((const uint8_t *)data)[row]; return true;
    case DUCKDB_TYPE_SMALLINT: out->i = ((const int16_t *)data)[row]; return true;
    case DUCKDB_TYPE_USMALLINT: out->i = ((const uint16_t *)data)[row]; return true;
    case DUCKDB_TYPE_INTEGER: out->i = ((const int32_t *)data)[row]; return true;
    case DUCKDB_TYPE_UINTEGER: out->i = ((const uint32_t *)data)[row]; return true;
    case DUCKDB_TYPE_BIGINT: out->i = ((const int64_t *)data)[row]; return true;
    case DUCKDB_TYPE_FLOAT: out->d = ((const float *)data)[row]; return true;
    case DUCKDB_TYPE_DOUBLE: out->d = ((const double *)data)[row]; return true;
    case DUCKDB_TYPE_VARCHAR:
    case DUCKDB_TYPE_BLOB: {
      duckdb_string_t *s = &((duckdb_string_t *)data)[row];
      out->ptr = duckdb_string_t_data(s);
      out->len = duckdb_string_t_length(*s);
      return true;
    }
    case DUCKDB_TYPE_DATE: out->i = ((const int32_t *)data)[row]; return true;
    case DUCKDB_TYPE_TIME:
    case DUCKDB_TYPE_TIME_NS:
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS:
    case DUCKDB_TYPE_TIMESTAMP_TZ: out->i = micros(id, ((const int64_t *)data)[row]); return true;
    default: return false;
  }
}
