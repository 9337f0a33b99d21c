/*
 * arrowtype.c - a DuckDB result column's Arrow type as arrow-rs serializes a
 * DataType with serde (engine layer; SPEC 1.3). Spice's
 * application/vnd.spiceai.sql.v1+json answer names each column's type so.
 *
 * The type is the one DuckDB itself gives the column when it exports Arrow
 * (its default settings, the session zone UTC): VARCHAR and UUID Utf8, BLOB
 * and BIT Binary, every DECIMAL Decimal128(p, s), HUGEINT Decimal128(38, 0),
 * DATE Date32, TIME Time64(us), TIMESTAMP[_S|_MS|_NS] Timestamp(unit, null),
 * TIMESTAMPTZ Timestamp(us, "UTC"), INTERVAL Interval(MonthDayNano), ENUM a
 * Dictionary of its index type and Utf8, LIST List (child "l"), ARRAY
 * FixedSizeList (child ""), STRUCT Struct, MAP Map (an "entries" struct of
 * "key" and "value"), UNION a sparse Union of type ids 0..n-1; a bare NULL
 * is an INTEGER column in DuckDB's results, so Int32. One choice follows the
 * rendered values rather than DuckDB's export: UHUGEINT is Decimal128(38, 0),
 * as HUGEINT (DuckDB: a 16-byte FixedSizeBinary), since both render as
 * numbers.
 *
 * serde's form of the enum: a unit variant is its name ("Int64"); a variant
 * with one value is {"Name": value} ({"Time64":"Microsecond"}); one with
 * several is {"Name": [values]} ({"Timestamp":["Microsecond","UTC"]},
 * {"Decimal128":[10,2]}, {"Map":[field,false]}); a Field is {"name",
 * "data_type", "nullable", "dict_id", "dict_is_ordered", "metadata"}.
 */
#include <string.h>

#include "engine/sql/sql_int.h"
#include "format/arrow/render.h"
#include "util/alloc.h"

#define MAX_DEPTH 64

static int put_type(tm_buf *out, duckdb_logical_type lt, int depth, tm_error *err);

/* A Field of name and type, nullable or not. */
static int put_field(tm_buf *out, const char *name, duckdb_logical_type lt, bool nullable,
                     int depth, tm_error *err) {
  TM_TRY(tm_buf_puts(out, "{\"name\":", err));
  TM_TRY(tm_json_string(out, name, strlen(name), err));
  TM_TRY(tm_buf_puts(out, ",\"data_type\":", err));
  TM_TRY(put_type(out, lt, depth + 1, err));
  return tm_buf_printf(
      out, err,
      ",\"nullable\":%s,\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}}",
      nullable ? "true" : "false");
}

/* The field of the child type of a LIST or ARRAY. */
static int put_child_field(tm_buf *out, duckdb_logical_type ct, const char *name,
                           int depth, tm_error *err) {
  int rc = ct ? put_field(out, name, ct, true, depth, err) : tm_error_nomem(err);
  if (ct) duckdb_destroy_logical_type(&ct);
  return rc;
}

/* The fields of a STRUCT or the members of a UNION (with their type ids). */
static int put_members(tm_buf *out, duckdb_logical_type lt, bool is_union, int depth,
                       tm_error *err) {
  idx_t n =
      is_union ? duckdb_union_type_member_count(lt) : duckdb_struct_type_child_count(lt);
  int rc = tm_buf_putc(out, '[', err);
  for (idx_t i = 0; rc == TM_OK && i < n; i++) {
    char *name = is_union ? duckdb_union_type_member_name(lt, i)
                          : duckdb_struct_type_child_name(lt, i);
    duckdb_logical_type ct = is_union ? duckdb_union_type_member_type(lt, i)
                                      : duckdb_struct_type_child_type(lt, i);
    if (i) rc = tm_buf_putc(out, ',', err);
    if (rc == TM_OK && is_union)
      rc = tm_buf_printf(out, err, "[%llu,", (unsigned long long)i);
    if (rc == TM_OK)
      rc =
          !name || !ct ? tm_error_nomem(err) : put_field(out, name, ct, true, depth, err);
    if (rc == TM_OK && is_union) rc = tm_buf_putc(out, ']', err);
    if (ct) duckdb_destroy_logical_type(&ct);
    if (name) duckdb_free(name);
  }
  return rc == TM_OK ? tm_buf_putc(out, ']', err) : rc;
}

static const char *unit_name(duckdb_type id) {
  switch (id) {
    case DUCKDB_TYPE_TIMESTAMP_S:
      return "Second";
    case DUCKDB_TYPE_TIMESTAMP_MS:
      return "Millisecond";
    case DUCKDB_TYPE_TIMESTAMP_NS:
    case DUCKDB_TYPE_TIME_NS:
      return "Nanosecond";
    default:
      return "Microsecond";
  }
}

static int put_type(tm_buf *out, duckdb_logical_type lt, int depth, tm_error *err) {
  if (depth > MAX_DEPTH)
    return tm_error_set(err, TM_ETOOLARGE, "a type nested too deeply to show");
  duckdb_type id = duckdb_get_type_id(lt);
  switch (id) {
    case DUCKDB_TYPE_SQLNULL:
      return tm_buf_puts(out, "\"Null\"", err);
    case DUCKDB_TYPE_BOOLEAN:
      return tm_buf_puts(out, "\"Boolean\"", err);
    case DUCKDB_TYPE_TINYINT:
      return tm_buf_puts(out, "\"Int8\"", err);
    case DUCKDB_TYPE_SMALLINT:
      return tm_buf_puts(out, "\"Int16\"", err);
    case DUCKDB_TYPE_INTEGER:
      return tm_buf_puts(out, "\"Int32\"", err);
    case DUCKDB_TYPE_BIGINT:
      return tm_buf_puts(out, "\"Int64\"", err);
    case DUCKDB_TYPE_UTINYINT:
      return tm_buf_puts(out, "\"UInt8\"", err);
    case DUCKDB_TYPE_USMALLINT:
      return tm_buf_puts(out, "\"UInt16\"", err);
    case DUCKDB_TYPE_UINTEGER:
      return tm_buf_puts(out, "\"UInt32\"", err);
    case DUCKDB_TYPE_UBIGINT:
      return tm_buf_puts(out, "\"UInt64\"", err);
    case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_UHUGEINT:
      return tm_buf_puts(out, "{\"Decimal128\":[38,0]}", err);
    case DUCKDB_TYPE_FLOAT:
      return tm_buf_puts(out, "\"Float32\"", err);
    case DUCKDB_TYPE_DOUBLE:
      return tm_buf_puts(out, "\"Float64\"", err);
    case DUCKDB_TYPE_DECIMAL:
      return tm_buf_printf(out, err, "{\"Decimal128\":[%u,%u]}",
                           (unsigned)duckdb_decimal_width(lt),
                           (unsigned)duckdb_decimal_scale(lt));
    case DUCKDB_TYPE_VARCHAR:
    case DUCKDB_TYPE_UUID:
      return tm_buf_puts(out, "\"Utf8\"", err);
    case DUCKDB_TYPE_BLOB:
    case DUCKDB_TYPE_BIT:
      return tm_buf_puts(out, "\"Binary\"", err);
    case DUCKDB_TYPE_DATE:
      return tm_buf_puts(out, "\"Date32\"", err);
    case DUCKDB_TYPE_TIME:
    case DUCKDB_TYPE_TIME_TZ:
    case DUCKDB_TYPE_TIME_NS:
      return tm_buf_printf(out, err, "{\"Time64\":\"%s\"}", unit_name(id));
    case DUCKDB_TYPE_TIMESTAMP:
    case DUCKDB_TYPE_TIMESTAMP_S:
    case DUCKDB_TYPE_TIMESTAMP_MS:
    case DUCKDB_TYPE_TIMESTAMP_NS:
      return tm_buf_printf(out, err, "{\"Timestamp\":[\"%s\",null]}", unit_name(id));
    case DUCKDB_TYPE_TIMESTAMP_TZ:
      return tm_buf_puts(out, "{\"Timestamp\":[\"Microsecond\",\"UTC\"]}", err);
    case DUCKDB_TYPE_INTERVAL:
      return tm_buf_puts(out, "{\"Interval\":\"MonthDayNano\"}", err);
    case DUCKDB_TYPE_ENUM: {
      duckdb_type ix = duckdb_enum_internal_type(lt);
      const char *key = ix == DUCKDB_TYPE_UTINYINT    ? "UInt8"
                        : ix == DUCKDB_TYPE_USMALLINT ? "UInt16"
                                                      : "UInt32";
      return tm_buf_printf(out, err, "{\"Dictionary\":[\"%s\",\"Utf8\"]}", key);
    }
    case DUCKDB_TYPE_LIST:
      TM_TRY(tm_buf_puts(out, "{\"List\":", err));
      TM_TRY(put_child_field(out, duckdb_list_type_child_type(lt), "l", depth, err));
      return tm_buf_putc(out, '}', err);
    case DUCKDB_TYPE_ARRAY:
      TM_TRY(tm_buf_puts(out, "{\"FixedSizeList\":[", err));
      TM_TRY(put_child_field(out, duckdb_array_type_child_type(lt), "", depth, err));
      return tm_buf_printf(out, err, ",%llu]}",
                           (unsigned long long)duckdb_array_type_array_size(lt));
    case DUCKDB_TYPE_STRUCT:
      TM_TRY(tm_buf_puts(out, "{\"Struct\":", err));
      TM_TRY(put_members(out, lt, false, depth, err));
      return tm_buf_putc(out, '}', err);
    case DUCKDB_TYPE_UNION:
      TM_TRY(tm_buf_puts(out, "{\"Union\":[", err));
      TM_TRY(put_members(out, lt, true, depth, err));
      return tm_buf_puts(out, ",\"Sparse\"]}", err);
    case DUCKDB_TYPE_MAP: {
      duckdb_logical_type kt = duckdb_map_type_key_type(lt),
                          vt = duckdb_map_type_value_type(lt);
      int rc = kt && vt ? TM_OK : tm_error_nomem(err);
      if (rc == TM_OK)
        rc = tm_buf_puts(
            out, "{\"Map\":[{\"name\":\"entries\",\"data_type\":{\"Struct\":[", err);
      if (rc == TM_OK) rc = put_field(out, "key", kt, false, depth + 1, err);
      if (rc == TM_OK) rc = tm_buf_putc(out, ',', err);
      if (rc == TM_OK) rc = put_field(out, "value", vt, true, depth + 1, err);
      if (rc == TM_OK)
        rc = tm_buf_puts(out,
                         "]},\"nullable\":false,\"dict_id\":0,\"dict_is_ordered\":false,"
                         "\"metadata\":{}},false]}",
                         err);
      if (kt) duckdb_destroy_logical_type(&kt);
      if (vt) duckdb_destroy_logical_type(&vt);
      return rc;
    }
    default: {
      char *alias = duckdb_logical_type_get_alias(lt);
      int rc = tm_error_set(
          err, TM_EUNSUPPORTED,
          "results of DuckDB type id %d%s%s cannot be shown; cast the column "
          "to VARCHAR",
          (int)id, alias ? " " : "", alias ? alias : "");
      if (alias) duckdb_free(alias);
      return rc;
    }
  }
}

int tm_sql__arrow_type(duckdb_logical_type lt, tm_buf *out, tm_error *err) {
  return put_type(out, lt, 0, err);
}
