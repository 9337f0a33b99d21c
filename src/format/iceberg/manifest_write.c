/*
 * manifest_write.c - writing Iceberg v2 manifests and manifest lists as
 * Avro with the spec's schemas and field ids (format layer, private to the
 * Iceberg module; see iceberg_int.h and writer.h).
 *
 * Datums are encoded field by field in schema order with tm_avro_put_*; the
 * schemas below are the authority for that order, and the tests read every
 * file we write back with our reader (by field id) and with icebird.
 */
#include <math.h>
#include <string.h>

#include "format/avro/avro.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/writer.h"
#include "util/alloc.h"

#define MANIFEST_LIMIT ((size_t)1 << 32)

/* Smallest byte count whose two's complement holds every P-digit number. */
static int decimal_bytes(int precision) {
  for (int n = 1; n <= 16; n++) {
    if (floor((8.0 * n - 1) * log10(2.0)) >= precision) return n;
  }
  return 16;
}

/* The Avro type of a partition value of Iceberg type t (a new reference). */
static json_t *avro_type_for(const tm_iceberg_type *t, int32_t field_id) {
  char name[32];
  switch (t->id) {
    case TM_ICEBERG_BOOLEAN: return json_string("boolean");
    case TM_ICEBERG_INT: return json_string("int");
    case TM_ICEBERG_LONG: return json_string("long");
    case TM_ICEBERG_FLOAT: return json_string("float");
    case TM_ICEBERG_DOUBLE: return json_string("double");
    case TM_ICEBERG_DATE: return json_pack("{s:s, s:s}", "type", "int", "logicalType", "date");
    case TM_ICEBERG_TIME:
      return json_pack("{s:s, s:s}", "type", "long", "logicalType", "time-micros");
    case TM_ICEBERG_TIMESTAMP:
    case TM_ICEBERG_TIMESTAMPTZ:
      return json_pack("{s:s, s:s, s:b}", "type", "long", "logicalType", "timestamp-micros",
                       "adjust-to-utc", t->id == TM_ICEBERG_TIMESTAMPTZ);
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      return json_pack("{s:s, s:s, s:b}", "type", "long", "logicalType", "timestamp-nanos",
                       "adjust-to-utc", t->id == TM_ICEBERG_TIMESTAMPTZ_NS);
    case TM_ICEBERG_STRING: return json_string("string");
    case TM_ICEBERG_BINARY: return json_string("bytes");
    case TM_ICEBERG_UUID:
      snprintf(name, sizeof name, "uuid_fixed_%d", (int)field_id);
      return json_pack("{s:s, s:s, s:i, s:s}", "type", "fixed", "name", name, "size", 16,
                       "logicalType", "uuid");
    case TM_ICEBERG_FIXED:
      snprintf(name, sizeof name, "fixed_%d", (int)field_id);
      return json_pack("{s:s, s:s, s:i}", "type", "fixed", "name", name, "size",
                       (int)t->length);
    case TM_ICEBERG_DECIMAL:
      snprintf(name, sizeof name, "decimal_%d", (int)field_id);
      return json_pack("{s:s, s:s, s:i, s:s, s:i, s:i}", "type", "fixed", "name", name, "size",
                       decimal_bytes(t->precision), "logicalType", "decimal", "precision",
                       (int)t->precision, "scale", (int)t->scale);
    default:
      return NULL;
  }
}

/* The Iceberg type of a partition field's values. */
static int partition_result_type(const tm_iceberg_schema *schema,
                                 const tm_iceberg_partition_field *pf, tm_iceberg_type *out,
                                 tm_error *err) {
  const tm_iceberg_field *src = tm_iceberg_schema_find_id(schema, pf->source_id);
  if (!src) {
    return tm_error_set(err, TM_EINVALID, "partition field %s: source column %d is not in the schema",
                        pf->name, (int)pf->source_id);
  }
  memset(out, 0, sizeof *out);
  switch (pf->transform.kind) {
    case TM_ICEBERG_TR_BUCKET:
    case TM_ICEBERG_TR_YEAR:
    case TM_ICEBERG_TR_MONTH:
    case TM_ICEBERG_TR_HOUR:
      out->id = TM_ICEBERG_INT;
      return TM_OK;
    case TM_ICEBERG_TR_DAY:
      out->id = TM_ICEBERG_DATE;
      return TM_OK;
    case TM_ICEBERG_TR_UNKNOWN:
      return tm_error_set(err, TM_EUNSUPPORTED, "cannot write with unknown transform %s",
                          pf->transform.text);
    default:
      *out = *src->type;
      return TM_OK;
  }
}

static json_t *kv_array(const char *name, int32_t id, int32_t kid, int32_t vid,
                        const char *vtype) {
  char rec[32];
  snprintf(rec, sizeof rec, "k%d_v%d", (int)kid, (int)vid);
  json_t *items = json_pack("{s:s, s:s, s:[{s:s, s:s, s:i}, {s:s, s:s, s:i}]}", "type", "record",
                            "name", rec, "fields", "name", "key", "type", "int", "field-id",
                            (int)kid, "name", "value", "type", vtype, "field-id", (int)vid);
  return json_pack("{s:s, s:[s, {s:s, s:o, s:s}], s:n, s:i}", "name", name, "type", "null",
                   "type", "array", "items", items, "logicalType", "map", "default", "field-id",
                   (int)id);
}

static json_t *opt_field(const char *name, json_t *type, int32_t id) {
  return json_pack("{s:s, s:[s, o], s:n, s:i}", "name", name, "type", "null", type, "default",
                   "field-id", (int)id);
}

/* Builds the manifest_entry schema for a spec; *ptypes gets result types. */
static char *entry_schema_json(int version, const tm_iceberg_schema *schema,
                               const tm_iceberg_spec *spec,
                               tm_iceberg_type *ptypes, tm_error *err) {
  json_t *pfields = json_array();
  if (!pfields) {
    tm_error_nomem(err);
    return NULL;
  }
  for (size_t i = 0; i < spec->n_fields; i++) {
    const tm_iceberg_partition_field *pf = &spec->fields[i];
    if (partition_result_type(schema, pf, &ptypes[i], err) < 0) {
      json_decref(pfields);
      return NULL;
    }
    json_t *at = avro_type_for(&ptypes[i], pf->field_id);
    if (!at) {
      tm_error_set(err, TM_EUNSUPPORTED, "cannot partition on %s values",
                   tm_iceberg_type_name(ptypes[i].id));
      json_decref(pfields);
      return NULL;
    }
    json_array_append_new(pfields, opt_field(pf->name, at, pf->field_id));
  }
  json_t *df_fields = json_array();
  json_array_append_new(df_fields, json_pack("{s:s, s:s, s:i}", "name", "content", "type", "int",
                                             "field-id", 134));
  json_array_append_new(df_fields, json_pack("{s:s, s:s, s:i}", "name", "file_path", "type",
                                             "string", "field-id", 100));
  json_array_append_new(df_fields, json_pack("{s:s, s:s, s:i}", "name", "file_format", "type",
                                             "string", "field-id", 101));
  json_array_append_new(df_fields,
                        json_pack("{s:s, s:{s:s, s:s, s:o}, s:i}", "name", "partition", "type",
                                  "type", "record", "name", "r102", "fields", pfields,
                                  "field-id", 102));
  json_array_append_new(df_fields, json_pack("{s:s, s:s, s:i}", "name", "record_count", "type",
                                             "long", "field-id", 103));
  json_array_append_new(df_fields, json_pack("{s:s, s:s, s:i}", "name", "file_size_in_bytes",
                                             "type", "long", "field-id", 104));
  json_array_append_new(df_fields, kv_array("column_sizes", 108, 117, 118, "long"));
  json_array_append_new(df_fields, kv_array("value_counts", 109, 119, 120, "long"));
  json_array_append_new(df_fields, kv_array("null_value_counts", 110, 121, 122, "long"));
  json_array_append_new(df_fields, kv_array("nan_value_counts", 137, 138, 139, "long"));
  json_array_append_new(df_fields, kv_array("lower_bounds", 125, 126, 127, "bytes"));
  json_array_append_new(df_fields, kv_array("upper_bounds", 128, 129, 130, "bytes"));
  json_array_append_new(df_fields, opt_field("key_metadata", json_string("bytes"), 131));
  json_array_append_new(df_fields,
                        opt_field("split_offsets",
                                  json_pack("{s:s, s:s, s:i}", "type", "array", "items", "long",
                                            "element-id", 133),
                                  132));
  json_array_append_new(df_fields,
                        opt_field("equality_ids",
                                  json_pack("{s:s, s:s, s:i}", "type", "array", "items", "int",
                                            "element-id", 136),
                                  135));
  json_array_append_new(df_fields, opt_field("sort_order_id", json_string("int"), 140));
  if (version >= 3) {
    json_array_append_new(df_fields, opt_field("first_row_id", json_string("long"), 142));
  }
  json_array_append_new(df_fields, opt_field("referenced_data_file", json_string("string"), 143));
  if (version >= 3) {
    json_array_append_new(df_fields, opt_field("content_offset", json_string("long"), 144));
    json_array_append_new(df_fields,
                          opt_field("content_size_in_bytes", json_string("long"), 145));
  }
  json_t *root = json_pack(
      "{s:s, s:s, s:[{s:s, s:s, s:i}, o, o, o, {s:s, s:{s:s, s:s, s:o}, s:i}]}", "type", "record",
      "name", "manifest_entry", "fields", "name", "status", "type", "int", "field-id", 0,
      opt_field("snapshot_id", json_string("long"), 1),
      opt_field("sequence_number", json_string("long"), 3),
      opt_field("file_sequence_number", json_string("long"), 4), "name", "data_file", "type",
      "type", "record", "name", "r2", "fields", df_fields, "field-id", 2);
  if (!root) {
    tm_error_nomem(err);
    return NULL;
  }
  char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) {
    tm_error_nomem(err);
    return NULL;
  }
  char *copy = tm_strdup(text);
  free(text); /* lint-ok: allocated by jansson */
  if (!copy) tm_error_nomem(err);
  return copy;
}

/* ---- encoding ------------------------------------------------------------- */

static int put_value(tm_buf *b, const tm_iceberg_type *t, const tm_value *v, tm_error *err) {
  switch (t->id) {
    case TM_ICEBERG_BOOLEAN:
      return tm_avro_put_bool(b, v->v.b, err);
    case TM_ICEBERG_INT:
    case TM_ICEBERG_DATE:
    case TM_ICEBERG_LONG:
    case TM_ICEBERG_TIME:
    case TM_ICEBERG_TIMESTAMP:
    case TM_ICEBERG_TIMESTAMPTZ:
    case TM_ICEBERG_TIMESTAMP_NS:
    case TM_ICEBERG_TIMESTAMPTZ_NS:
      return tm_avro_put_long(b, v->v.i, err);
    case TM_ICEBERG_FLOAT:
      return tm_avro_put_float(b, (float)v->v.f, err);
    case TM_ICEBERG_DOUBLE:
      return tm_avro_put_double(b, v->v.f, err);
    case TM_ICEBERG_STRING:
    case TM_ICEBERG_BINARY:
      return tm_avro_put_bytes(b, v->v.s.ptr, v->v.s.len, err);
    case TM_ICEBERG_UUID:
    case TM_ICEBERG_FIXED:
      return tm_avro_put_fixed(b, v->v.s.ptr, v->v.s.len, err);
    case TM_ICEBERG_DECIMAL: {
      int n = decimal_bytes(t->precision);
      uint8_t be[16];
      for (int i = 0; i < n; i++) be[i] = v->v.dec[n - 1 - i];
      return tm_avro_put_fixed(b, be, (size_t)n, err);
    }
    default:
      break;
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "cannot write %s partition values",
                      tm_iceberg_type_name(t->id));
}

static int put_opt_long(tm_buf *b, int64_t v, tm_error *err) {
  if (v < 0) return tm_avro_put_long(b, 0, err);
  TM_TRY(tm_avro_put_long(b, 1, err));
  return tm_avro_put_long(b, v, err);
}

enum { M_SIZE, M_VALUES, M_NULLS, M_NANS, M_LOWER, M_UPPER };

static int put_stat_map(tm_buf *b, const tm_iceberg_data_file *f, int which, tm_error *err) {
  size_t n = 0;
  for (size_t i = 0; i < f->n_stats; i++) {
    const tm_iceberg_col_stats *s = &f->stats[i];
    bool has = which == M_SIZE     ? s->column_size >= 0
               : which == M_VALUES ? s->value_count >= 0
               : which == M_NULLS  ? s->null_count >= 0
               : which == M_NANS   ? s->nan_count >= 0
               : which == M_LOWER  ? s->has_lower
                                   : s->has_upper;
    if (has) n++;
  }
  if (n == 0) return tm_avro_put_long(b, 0, err); /* null */
  TM_TRY(tm_avro_put_long(b, 1, err));
  TM_TRY(tm_avro_put_long(b, (int64_t)n, err));
  for (size_t i = 0; i < f->n_stats; i++) {
    const tm_iceberg_col_stats *s = &f->stats[i];
    switch (which) {
      case M_SIZE:
        if (s->column_size < 0) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_long(b, s->column_size, err));
        break;
      case M_VALUES:
        if (s->value_count < 0) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_long(b, s->value_count, err));
        break;
      case M_NULLS:
        if (s->null_count < 0) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_long(b, s->null_count, err));
        break;
      case M_NANS:
        if (s->nan_count < 0) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_long(b, s->nan_count, err));
        break;
      case M_LOWER:
        if (!s->has_lower) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_bytes(b, s->lower.ptr, s->lower.len, err));
        break;
      default:
        if (!s->has_upper) continue;
        TM_TRY(tm_avro_put_long(b, s->field_id, err));
        TM_TRY(tm_avro_put_bytes(b, s->upper.ptr, s->upper.len, err));
        break;
    }
  }
  return tm_avro_put_long(b, 0, err);
}

static int encode_entry(int version, tm_buf *b, const tm_iceberg__entry *e,
                        const tm_iceberg_spec *spec, const tm_iceberg_type *ptypes,
                        tm_error *err) {
  const tm_iceberg_data_file *f = e->file;
  TM_TRY(tm_avro_put_long(b, e->status, err));
  TM_TRY(put_opt_long(b, e->snapshot_id, err));
  TM_TRY(put_opt_long(b, e->sequence_number, err));
  TM_TRY(put_opt_long(b, e->file_sequence_number, err));
  TM_TRY(tm_avro_put_long(b, f->content, err));
  TM_TRY(tm_avro_put_string(b, f->path, err));
  TM_TRY(tm_avro_put_string(b, f->format ? f->format : "PARQUET", err));
  if (f->n_partition != spec->n_fields) {
    return tm_error_set(err, TM_EINVALID, "%s: %zu partition values for a spec of %zu fields",
                        f->path, f->n_partition, spec->n_fields);
  }
  for (size_t i = 0; i < spec->n_fields; i++) {
    if (f->partition[i].is_null) {
      TM_TRY(tm_avro_put_long(b, 0, err));
    } else {
      TM_TRY(tm_avro_put_long(b, 1, err));
      TM_TRY(put_value(b, &ptypes[i], &f->partition[i], err));
    }
  }
  TM_TRY(tm_avro_put_long(b, f->record_count, err));
  TM_TRY(tm_avro_put_long(b, f->file_size, err));
  for (int m = M_SIZE; m <= M_UPPER; m++) TM_TRY(put_stat_map(b, f, m, err));
  TM_TRY(tm_avro_put_long(b, 0, err)); /* key_metadata: null */
  if (f->n_split_offsets) {
    TM_TRY(tm_avro_put_long(b, 1, err));
    TM_TRY(tm_avro_put_long(b, (int64_t)f->n_split_offsets, err));
    for (size_t i = 0; i < f->n_split_offsets; i++)
      TM_TRY(tm_avro_put_long(b, f->split_offsets[i], err));
    TM_TRY(tm_avro_put_long(b, 0, err));
  } else {
    TM_TRY(tm_avro_put_long(b, 0, err));
  }
  if (f->n_equality_ids) {
    TM_TRY(tm_avro_put_long(b, 1, err));
    TM_TRY(tm_avro_put_long(b, (int64_t)f->n_equality_ids, err));
    for (size_t i = 0; i < f->n_equality_ids; i++)
      TM_TRY(tm_avro_put_long(b, f->equality_ids[i], err));
    TM_TRY(tm_avro_put_long(b, 0, err));
  } else {
    TM_TRY(tm_avro_put_long(b, 0, err));
  }
  /* sort_order_id: 0 (unsorted) for data and equality deletes, null for
   * position deletes, as the spec asks. */
  if (f->content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
    TM_TRY(tm_avro_put_long(b, 0, err));
  } else {
    TM_TRY(tm_avro_put_long(b, 1, err));
    TM_TRY(tm_avro_put_long(b, f->sort_order_id > 0 ? f->sort_order_id : 0, err));
  }
  /* first_row_id: null for ADDED data files (inherited from the manifest list)
   * and for delete files; the inherited value for EXISTING and DELETED ones. */
  if (version >= 3) {
    bool row_id = f->content == TM_ICEBERG_CONTENT_DATA && e->status != TM_ICEBERG_ADDED &&
                  f->has_first_row_id;
    TM_TRY(put_opt_long(b, row_id ? f->first_row_id : -1, err));
  }
  if (f->referenced_data_file) {
    TM_TRY(tm_avro_put_long(b, 1, err));
    TM_TRY(tm_avro_put_string(b, f->referenced_data_file, err));
  } else {
    TM_TRY(tm_avro_put_long(b, 0, err));
  }
  if (version >= 3) {
    TM_TRY(put_opt_long(b, f->has_content_offset ? f->content_offset : -1, err));
    TM_TRY(put_opt_long(b, f->has_content_offset ? f->content_size : -1, err));
  }
  return TM_OK;
}

/* ---- paths and files -------------------------------------------------------- */

const char *tm_iceberg__location_path(tm_arena *a, const tm_iceberg_table *t, const char *rel,
                                      tm_error *err) {
  const char *loc = tm_iceberg_table_metadata(t)->location;
  size_t ll = strlen(loc);
  while (ll > 0 && loc[ll - 1] == '/') ll--;
  size_t rl = strlen(rel);
  char *p = tm_arena_alloc(a, ll + 1 + rl + 1, err);
  if (!p) return NULL;
  memcpy(p, loc, ll);
  p[ll] = '/';
  memcpy(p + ll + 1, rel, rl + 1);
  return p;
}

int tm_iceberg__write_file(const tm_iceberg_table *t, const char *path, const void *data,
                           size_t len, bool exclusive, tm_error *err) {
  tm_iceberg_io *io = tm_iceberg_table_io(t);
  if (!io->write) {
    return tm_error_set(err, TM_EUNSUPPORTED, "this table's storage cannot be written to");
  }
  char *real = NULL;
  TM_TRY(tm_iceberg_table_resolve(t, path, &real, err));
  int rc = io->write(io->payload, real, data, len, exclusive, err);
  tm_free(real);
  return rc;
}

/* ---- manifests ---------------------------------------------------------------- */

/* Folds value v into a partition summary (bounds kept as values). */
typedef struct summary_acc {
  bool contains_null, contains_nan, has;
  tm_value lo, hi;
} summary_acc;

static void acc_value(summary_acc *s, const tm_value *v) {
  if (v->is_null) {
    s->contains_null = true;
    return;
  }
  if ((v->type == TM_TYPE_FLOAT32 || v->type == TM_TYPE_FLOAT64) && isnan(v->v.f)) {
    s->contains_nan = true;
    return;
  }
  if (!s->has || tm_value_cmp(v, &s->lo) < 0) s->lo = *v;
  if (!s->has || tm_value_cmp(v, &s->hi) > 0) s->hi = *v;
  s->has = true;
}

int tm_iceberg__write_manifest(const tm_iceberg_table *t, const tm_iceberg_schema *schema,
                               const tm_iceberg_spec *spec, int content,
                               const tm_iceberg__entry *entries, size_t n,
                               int64_t snapshot_id, int64_t seq, tm_arena *a,
                               tm_iceberg_manifest_file *out, tm_error *err) {
  size_t np = spec->n_fields;
  tm_iceberg_type *ptypes = tm_calloc(np ? np : 1, sizeof *ptypes);
  summary_acc *acc = tm_calloc(np ? np : 1, sizeof *acc);
  char *schema_text = NULL, *spec_text = NULL, *table_schema = NULL;
  tm_avro_writer *w = NULL;
  tm_buf datum = TM_BUF_INIT(MANIFEST_LIMIT), file = TM_BUF_INIT(0);
  tm_kv meta;
  tm_kv_init(&meta);
  int rc;
  if (!ptypes || !acc) {
    rc = tm_error_nomem(err);
    goto done;
  }
  int version = tm_iceberg_table_metadata(t)->format_version;
  schema_text = entry_schema_json(version, schema, spec, ptypes, err);
  if (!schema_text) {
    rc = err->code;
    goto done;
  }
  json_t *sj = tm_iceberg__schema_to_json(schema);
  json_t *pj = tm_iceberg__spec_fields_to_json(spec);
  char *s1 = sj ? json_dumps(sj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  char *s2 = pj ? json_dumps(pj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(sj);
  json_decref(pj);
  table_schema = s1 ? tm_strdup(s1) : NULL;
  spec_text = s2 ? tm_strdup(s2) : NULL;
  free(s1); /* lint-ok: allocated by jansson */
  free(s2); /* lint-ok: allocated by jansson */
  if (!table_schema || !spec_text) {
    rc = tm_error_nomem(err);
    goto done;
  }
  char num[32];
  TM_CHECK(tm_kv_set(&meta, "schema", table_schema, err));
  snprintf(num, sizeof num, "%d", (int)schema->schema_id);
  TM_CHECK(tm_kv_set(&meta, "schema-id", num, err));
  TM_CHECK(tm_kv_set(&meta, "partition-spec", spec_text, err));
  snprintf(num, sizeof num, "%d", (int)spec->spec_id);
  TM_CHECK(tm_kv_set(&meta, "partition-spec-id", num, err));
  TM_CHECK(tm_kv_set(&meta, "format-version", version >= 3 ? "3" : "2", err));
  TM_CHECK(tm_kv_set(&meta, "content", content ? "deletes" : "data", err));
  TM_CHECK(tm_avro_writer_new(&w, schema_text, TM_AVRO_CODEC_DEFLATE, &meta, err));
  memset(out, 0, sizeof *out);
  int64_t min_seq = -1;
  for (size_t i = 0; i < n; i++) {
    const tm_iceberg__entry *e = &entries[i];
    tm_buf_clear(&datum);
    TM_CHECK(encode_entry(version, &datum, e, spec, ptypes, err));
    TM_CHECK(tm_avro_writer_append_encoded(w, datum.ptr, datum.len, err));
    int64_t rows = e->file->record_count;
    switch (e->status) {
      case TM_ICEBERG_ADDED:
        out->added_files++;
        out->added_rows += rows;
        break;
      case TM_ICEBERG_EXISTING:
        out->existing_files++;
        out->existing_rows += rows;
        break;
      default:
        out->deleted_files++;
        out->deleted_rows += rows;
        break;
    }
    if (e->status != TM_ICEBERG_DELETED) {
      int64_t s = e->sequence_number >= 0 ? e->sequence_number : seq;
      if (min_seq < 0 || s < min_seq) min_seq = s;
    }
    for (size_t k = 0; k < np; k++) acc_value(&acc[k], &e->file->partition[k]);
  }
  TM_CHECK(tm_avro_writer_finish(w, &file, err));
  char uuid[37], rel[96];
  tm_iceberg_uuid(uuid);
  snprintf(rel, sizeof rel, "metadata/%s-m0.avro", uuid);
  out->path = tm_iceberg__location_path(a, t, rel, err);
  if (!out->path) {
    rc = err->code;
    goto done;
  }
  TM_CHECK(tm_iceberg__write_file(t, out->path, file.ptr, file.len, true, err));
  out->length = (int64_t)file.len;
  out->spec_id = spec->spec_id;
  out->content = content;
  out->sequence_number = seq;
  out->min_sequence_number = min_seq >= 0 ? min_seq : seq;
  out->added_snapshot_id = snapshot_id;
  out->has_partitions = true;
  out->n_partitions = np;
  out->partitions = tm_arena_calloc(a, np ? np : 1, sizeof *out->partitions, err);
  if (!out->partitions) {
    rc = err->code;
    goto done;
  }
  for (size_t k = 0; k < np; k++) {
    tm_iceberg_field_summary *fs = &out->partitions[k];
    fs->contains_null = acc[k].contains_null;
    fs->contains_nan = acc[k].contains_nan ? 1 : 0;
    if (!acc[k].has) continue;
    tm_buf lb = TM_BUF_INIT(1 << 20), ub = TM_BUF_INIT(1 << 20);
    rc = tm_iceberg_value_to_bytes(&ptypes[k], &acc[k].lo, &lb, err);
    if (rc == TM_OK) rc = tm_iceberg_value_to_bytes(&ptypes[k], &acc[k].hi, &ub, err);
    char *l = rc == TM_OK ? tm_arena_strndup(a, lb.ptr ? lb.ptr : "", lb.len, err) : NULL;
    char *u = l ? tm_arena_strndup(a, ub.ptr ? ub.ptr : "", ub.len, err) : NULL;
    if (rc == TM_OK && !u) rc = err->code;
    if (rc == TM_OK) {
      fs->has_lower = fs->has_upper = true;
      fs->lower = tm_sv(l, lb.len);
      fs->upper = tm_sv(u, ub.len);
    }
    tm_buf_dispose(&lb);
    tm_buf_dispose(&ub);
    if (rc < 0) goto done;
  }
  rc = TM_OK;
done:
  tm_free(ptypes);
  tm_free(acc);
  tm_free(schema_text);
  tm_free(spec_text);
  tm_free(table_schema);
  tm_avro_writer_free(w);
  tm_buf_dispose(&datum);
  tm_buf_dispose(&file);
  tm_kv_dispose(&meta);
  return rc;
}

static const char k_list_schema[] =
    "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
    "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
    "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
    "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
    "{\"name\":\"content\",\"type\":\"int\",\"field-id\":517},"
    "{\"name\":\"sequence_number\",\"type\":\"long\",\"field-id\":515},"
    "{\"name\":\"min_sequence_number\",\"type\":\"long\",\"field-id\":516},"
    "{\"name\":\"added_snapshot_id\",\"type\":\"long\",\"field-id\":503},"
    "{\"name\":\"added_files_count\",\"type\":\"int\",\"field-id\":504},"
    "{\"name\":\"existing_files_count\",\"type\":\"int\",\"field-id\":505},"
    "{\"name\":\"deleted_files_count\",\"type\":\"int\",\"field-id\":506},"
    "{\"name\":\"added_rows_count\",\"type\":\"long\",\"field-id\":512},"
    "{\"name\":\"existing_rows_count\",\"type\":\"long\",\"field-id\":513},"
    "{\"name\":\"deleted_rows_count\",\"type\":\"long\",\"field-id\":514},"
    "{\"name\":\"partitions\",\"type\":[\"null\",{\"type\":\"array\",\"items\":{\"type\":"
    "\"record\",\"name\":\"r508\",\"fields\":["
    "{\"name\":\"contains_null\",\"type\":\"boolean\",\"field-id\":509},"
    "{\"name\":\"contains_nan\",\"type\":[\"null\",\"boolean\"],\"default\":null,\"field-id\":518},"
    "{\"name\":\"lower_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":510},"
    "{\"name\":\"upper_bound\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":511}]},"
    "\"element-id\":508}],\"default\":null,\"field-id\":507},"
    "{\"name\":\"key_metadata\",\"type\":[\"null\",\"bytes\"],\"default\":null,\"field-id\":519}]}";

/* v3: the same, with first_row_id (520) after key_metadata. */
static const char k_list_schema_v3_tail[] =
    ",{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"],\"default\":null,"
    "\"field-id\":520}]}";

static int64_t nonneg(int64_t v) { return v < 0 ? 0 : v; }

static int encode_list_entry(int version, tm_buf *b, const tm_iceberg_manifest_file *mf,
                             tm_error *err) {
  TM_TRY(tm_avro_put_string(b, mf->path, err));
  TM_TRY(tm_avro_put_long(b, mf->length, err));
  TM_TRY(tm_avro_put_long(b, mf->spec_id, err));
  TM_TRY(tm_avro_put_long(b, mf->content, err));
  TM_TRY(tm_avro_put_long(b, mf->sequence_number, err));
  TM_TRY(tm_avro_put_long(b, mf->min_sequence_number, err));
  TM_TRY(tm_avro_put_long(b, mf->added_snapshot_id, err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->added_files), err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->existing_files), err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->deleted_files), err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->added_rows), err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->existing_rows), err));
  TM_TRY(tm_avro_put_long(b, nonneg(mf->deleted_rows), err));
  if (!mf->has_partitions) {
    TM_TRY(tm_avro_put_long(b, 0, err));
  } else {
    TM_TRY(tm_avro_put_long(b, 1, err));
    if (mf->n_partitions) {
      TM_TRY(tm_avro_put_long(b, (int64_t)mf->n_partitions, err));
      for (size_t i = 0; i < mf->n_partitions; i++) {
        const tm_iceberg_field_summary *fs = &mf->partitions[i];
        TM_TRY(tm_avro_put_bool(b, fs->contains_null, err));
        if (fs->contains_nan < 0) {
          TM_TRY(tm_avro_put_long(b, 0, err));
        } else {
          TM_TRY(tm_avro_put_long(b, 1, err));
          TM_TRY(tm_avro_put_bool(b, fs->contains_nan == 1, err));
        }
        if (fs->has_lower) {
          TM_TRY(tm_avro_put_long(b, 1, err));
          TM_TRY(tm_avro_put_bytes(b, fs->lower.ptr, fs->lower.len, err));
        } else {
          TM_TRY(tm_avro_put_long(b, 0, err));
        }
        if (fs->has_upper) {
          TM_TRY(tm_avro_put_long(b, 1, err));
          TM_TRY(tm_avro_put_bytes(b, fs->upper.ptr, fs->upper.len, err));
        } else {
          TM_TRY(tm_avro_put_long(b, 0, err));
        }
      }
    }
    TM_TRY(tm_avro_put_long(b, 0, err));
  }
  TM_TRY(tm_avro_put_long(b, 0, err)); /* key_metadata: null */
  if (version >= 3) TM_TRY(put_opt_long(b, mf->has_first_row_id ? mf->first_row_id : -1, err));
  return TM_OK;
}

int tm_iceberg__write_manifest_list(const tm_iceberg_table *t,
                                    const tm_iceberg_manifest_file *files, size_t n,
                                    int64_t snapshot_id, int64_t parent_id, int64_t seq,
                                    tm_arena *a, const char **path_out, tm_error *err) {
  tm_avro_writer *w = NULL;
  tm_buf datum = TM_BUF_INIT(MANIFEST_LIMIT), file = TM_BUF_INIT(0);
  tm_kv meta;
  tm_kv_init(&meta);
  int rc;
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)snapshot_id);
  TM_CHECK(tm_kv_set(&meta, "snapshot-id", num, err));
  snprintf(num, sizeof num, "%lld", (long long)parent_id);
  TM_CHECK(tm_kv_set(&meta, "parent-snapshot-id", parent_id >= 0 ? num : "null", err));
  snprintf(num, sizeof num, "%lld", (long long)seq);
  TM_CHECK(tm_kv_set(&meta, "sequence-number", num, err));
  int version = tm_iceberg_table_metadata(t)->format_version;
  char schema_v3[sizeof k_list_schema + sizeof k_list_schema_v3_tail];
  /* The v2 schema without its closing "]}", then the v3 tail. */
  memcpy(schema_v3, k_list_schema, sizeof k_list_schema - 3);
  memcpy(schema_v3 + sizeof k_list_schema - 3, k_list_schema_v3_tail,
         sizeof k_list_schema_v3_tail);
  TM_CHECK(tm_kv_set(&meta, "format-version", version >= 3 ? "3" : "2", err));
  TM_CHECK(tm_avro_writer_new(&w, version >= 3 ? schema_v3 : k_list_schema,
                              TM_AVRO_CODEC_DEFLATE, &meta, err));
  for (size_t i = 0; i < n; i++) {
    tm_buf_clear(&datum);
    TM_CHECK(encode_list_entry(version, &datum, &files[i], err));
    TM_CHECK(tm_avro_writer_append_encoded(w, datum.ptr, datum.len, err));
  }
  TM_CHECK(tm_avro_writer_finish(w, &file, err));
  char uuid[37], rel[128];
  tm_iceberg_uuid(uuid);
  snprintf(rel, sizeof rel, "metadata/snap-%lld-1-%s.avro", (long long)snapshot_id, uuid);
  const char *path = tm_iceberg__location_path(a, t, rel, err);
  if (!path) {
    rc = err->code;
    goto done;
  }
  TM_CHECK(tm_iceberg__write_file(t, path, file.ptr, file.len, true, err));
  *path_out = path;
done:
  tm_avro_writer_free(w);
  tm_buf_dispose(&datum);
  tm_buf_dispose(&file);
  tm_kv_dispose(&meta);
  return rc;
}
