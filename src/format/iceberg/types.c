/*
 * types.c - Iceberg schemas, types, partition fields and name mappings:
 * JSON in and out, and the mapping to columnar types (format layer).
 * See iceberg.h.
 */
#include <ctype.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"

const char *tm_iceberg__strdup(tm_arena *a, const char *s, tm_error *err) {
  return tm_arena_strndup(a, s, strlen(s), err);
}

static const char *const k_type_names[] = {
    "unknown", "boolean", "int", "long", "float", "double", "decimal",
    "date", "time", "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns", "string",
    "uuid", "fixed", "binary", "variant", "geometry", "geography", "struct", "list", "map"};

const char *tm_iceberg_type_name(tm_iceberg_type_id id) {
  if ((unsigned)id < sizeof k_type_names / sizeof k_type_names[0]) return k_type_names[id];
  return "?";
}

bool tm_iceberg_type_is_primitive(const tm_iceberg_type *t) {
  return t->id != TM_ICEBERG_STRUCT && t->id != TM_ICEBERG_LIST && t->id != TM_ICEBERG_MAP;
}

int tm_iceberg_type_to_tm(const tm_iceberg_type *t, tm_type *out, tm_error *err);

/* Nested types natively (issue 16): struct fields by name, list elements
 * and map values nullable unless required; map keys are never null. */
static int native_type(const tm_iceberg_type *t, int depth, tm_type *out, tm_error *err) {
  if (depth > TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "Iceberg type nested deeper than %d levels",
                        TM_NTYPE_MAX_DEPTH);
  switch (t->id) {
    case TM_ICEBERG_LIST: {
      tm_type e;
      TM_TRY(native_type(t->element->type, depth + 1, &e, err));
      return tm_type_list(&e, !t->element->required, out, err);
    }
    case TM_ICEBERG_MAP: {
      tm_type k, v;
      TM_TRY(native_type(t->key->type, depth + 1, &k, err));
      TM_TRY(native_type(t->value->type, depth + 1, &v, err));
      return tm_type_map(&k, &v, !t->value->required, out, err);
    }
    case TM_ICEBERG_STRUCT: {
      size_t n = t->n_fields;
      if (n == 0) return tm_error_set(err, TM_EUNSUPPORTED, "an Iceberg struct without fields");
      tm_type *types = tm_calloc(n, sizeof *types);
      const char **names = tm_calloc(n, sizeof *names);
      bool *nl = tm_calloc(n, sizeof *nl);
      int rc = types && names && nl ? TM_OK : tm_error_nomem(err);
      for (size_t i = 0; i < n && rc == TM_OK; i++) {
        names[i] = t->fields[i].name;
        nl[i] = !t->fields[i].required;
        rc = native_type(t->fields[i].type, depth + 1, &types[i], err);
      }
      if (rc == TM_OK) rc = tm_type_struct(n, names, types, nl, out, err);
      tm_free(types);
      tm_free(names);
      tm_free(nl);
      return rc;
    }
    default: return tm_iceberg_type_to_tm(t, out, err);
  }
}

int tm_iceberg_type_to_tm(const tm_iceberg_type *t, tm_type *out, tm_error *err) {
  switch (t->id) {
    case TM_ICEBERG_BOOLEAN: *out = tm_type_of(TM_TYPE_BOOL); return TM_OK;
    case TM_ICEBERG_INT: *out = tm_type_of(TM_TYPE_INT32); return TM_OK;
    case TM_ICEBERG_LONG: *out = tm_type_of(TM_TYPE_INT64); return TM_OK;
    case TM_ICEBERG_FLOAT: *out = tm_type_of(TM_TYPE_FLOAT32); return TM_OK;
    case TM_ICEBERG_DOUBLE: *out = tm_type_of(TM_TYPE_FLOAT64); return TM_OK;
    case TM_ICEBERG_DECIMAL: *out = tm_type_decimal(t->precision, t->scale); return TM_OK;
    case TM_ICEBERG_DATE: *out = tm_type_of(TM_TYPE_DATE32); return TM_OK;
    case TM_ICEBERG_TIME:
      *out = tm_type_of(TM_TYPE_TIME64);
      out->unit = TM_UNIT_MICRO;
      return TM_OK;
    case TM_ICEBERG_TIMESTAMP: *out = tm_type_timestamp(TM_UNIT_MICRO, false); return TM_OK;
    case TM_ICEBERG_TIMESTAMPTZ: *out = tm_type_timestamp(TM_UNIT_MICRO, true); return TM_OK;
    case TM_ICEBERG_TIMESTAMP_NS: *out = tm_type_timestamp(TM_UNIT_NANO, false); return TM_OK;
    case TM_ICEBERG_TIMESTAMPTZ_NS: *out = tm_type_timestamp(TM_UNIT_NANO, true); return TM_OK;
    case TM_ICEBERG_STRING: *out = tm_type_of(TM_TYPE_UTF8); return TM_OK;
    case TM_ICEBERG_UUID:
      *out = tm_type_fixed(16);
      out->uuid = true;
      return TM_OK;
    case TM_ICEBERG_FIXED: *out = tm_type_fixed(t->length); return TM_OK;
    case TM_ICEBERG_BINARY: *out = tm_type_of(TM_TYPE_BINARY); return TM_OK;
    case TM_ICEBERG_VARIANT:
      /* Parquet stores a variant as a group of binary metadata and value
       * (possibly shredded), which the reader does not decode: refused, never
       * read as nulls. */
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "Iceberg type \"variant\" (format v3) is not supported yet");
    case TM_ICEBERG_UNKNOWN:
      /* v3 "unknown": always null and never stored in data files (spec). */
      *out = tm_type_of(TM_TYPE_UTF8);
      return TM_OK;
    case TM_ICEBERG_GEOMETRY:
    case TM_ICEBERG_GEOGRAPHY:
      *out = tm_type_of(TM_TYPE_BINARY);
      return TM_OK;
    case TM_ICEBERG_STRUCT:
    case TM_ICEBERG_LIST:
    case TM_ICEBERG_MAP:
      *out = tm_type_of(TM_TYPE_UTF8); /* nested values read as JSON text */
      return TM_OK;
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "Iceberg type \"%s\" has no columnar type",
                      tm_iceberg_type_name(t->id));
}

int tm_iceberg_type_to_tm_native(const tm_iceberg_type *t, tm_type *out, tm_error *err) {
  return native_type(t, 0, out, err);
}

/* ---- parsing ----------------------------------------------------------- */

static bool parse_int_in(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out) {
  tm_strview v = tm_sv_trim(tm_sv(s, len));
  if (tm_parse_int64(v.ptr, v.len, out) < 0) return false;
  return *out >= lo && *out <= hi;
}

static tm_iceberg_type *new_type(tm_arena *a, tm_iceberg_type_id id, tm_error *err) {
  tm_iceberg_type *t = tm_arena_alloc(a, sizeof *t, err);
  if (t) t->id = id;
  return t;
}

static tm_iceberg_type *parse_primitive(tm_arena *a, const char *s, const char *where,
                                        tm_error *err) {
  for (int id = TM_ICEBERG_UNKNOWN; id <= TM_ICEBERG_VARIANT; id++) {
    if (id == TM_ICEBERG_DECIMAL || id == TM_ICEBERG_FIXED) continue;
    if (strcmp(s, k_type_names[id]) == 0) {
      tm_iceberg_type *t = new_type(a, (tm_iceberg_type_id)id, err);
      if (t && !(t->text = tm_iceberg__strdup(a, s, err))) return NULL;
      return t;
    }
  }
  tm_iceberg_type *t = NULL;
  size_t len = strlen(s);
  if (strncmp(s, "decimal(", 8) == 0 && len > 9 && s[len - 1] == ')') {
    const char *comma = memchr(s + 8, ',', len - 9);
    int64_t p, sc;
    if (comma && parse_int_in(s + 8, (size_t)(comma - s - 8), 1, 38, &p) &&
        parse_int_in(comma + 1, (size_t)(s + len - 1 - comma - 1), 0, 38, &sc) && sc <= p) {
      t = new_type(a, TM_ICEBERG_DECIMAL, err);
      if (!t) return NULL;
      t->precision = (int32_t)p;
      t->scale = (int32_t)sc;
      char canon[32];
      snprintf(canon, sizeof canon, "decimal(%d,%d)", (int)p, (int)sc);
      if (!(t->text = tm_iceberg__strdup(a, canon, err))) return NULL;
      return t;
    }
  } else if (strncmp(s, "fixed[", 6) == 0 && len > 7 && s[len - 1] == ']') {
    int64_t l;
    if (parse_int_in(s + 6, len - 7, 1, INT32_MAX, &l)) {
      t = new_type(a, TM_ICEBERG_FIXED, err);
      if (!t) return NULL;
      t->length = (int32_t)l;
      char canon[32];
      snprintf(canon, sizeof canon, "fixed[%d]", (int)l);
      if (!(t->text = tm_iceberg__strdup(a, canon, err))) return NULL;
      return t;
    }
  } else if (strncmp(s, "geometry", 8) == 0 || strncmp(s, "geography", 9) == 0) {
    t = new_type(a, s[3] == 'm' ? TM_ICEBERG_GEOMETRY : TM_ICEBERG_GEOGRAPHY, err);
    if (t && !(t->text = tm_iceberg__strdup(a, s, err))) return NULL;
    return t;
  }
  TM_CORRUPT(err, "%s: unknown Iceberg type \"%.100s\"", where, s);
  return NULL;
}

static int parse_field(tm_arena *a, json_t *j, tm_iceberg_field *f, int depth, const char *where,
                       tm_error *err);

static json_t *need(json_t *obj, const char *key, int (*is)(const json_t *), const char *what,
                    const char *where, tm_error *err);

static int is_integer(const json_t *j) { return json_is_integer(j); }
static int is_string(const json_t *j) { return json_is_string(j); }
static int is_array(const json_t *j) { return json_is_array(j); }

static json_t *need(json_t *obj, const char *key, int (*is)(const json_t *), const char *what,
                    const char *where, tm_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || !is(v)) {
    TM_CORRUPT(err, "%s: \"%s\" %s", where, key, v ? what : "is missing");
    return NULL;
  }
  return v;
}

static bool int32_of(json_t *v, int32_t *out) {
  if (!json_is_integer(v)) return false;
  json_int_t x = json_integer_value(v);
  if (x < INT32_MIN || x > INT32_MAX) return false;
  *out = (int32_t)x;
  return true;
}

static tm_iceberg_field *parse_child(tm_arena *a, json_t *obj, const char *id_key,
                                     const char *type_key, const char *req_key, bool req_default,
                                     const char *name, int depth, const char *where,
                                     tm_error *err) {
  tm_iceberg_field *f = tm_arena_alloc(a, sizeof *f, err);
  if (!f) return NULL;
  json_t *id = need(obj, id_key, is_integer, "must be an integer", where, err);
  if (!id || !int32_of(id, &f->id)) {
    if (id) TM_CORRUPT(err, "%s: \"%s\" is out of range", where, id_key);
    return NULL;
  }
  f->name = name;
  json_t *req = json_object_get(obj, req_key);
  f->required = req ? json_is_true(req) : req_default;
  json_t *ty = json_object_get(obj, type_key);
  if (!ty) {
    TM_CORRUPT(err, "%s: \"%s\" is missing", where, type_key);
    return NULL;
  }
  f->type = tm_iceberg__parse_type(a, ty, depth + 1, where, err);
  return f->type ? f : NULL;
}

tm_iceberg_type *tm_iceberg__parse_type(tm_arena *a, json_t *j, int depth, const char *where,
                                        tm_error *err) {
  if (depth > TM_ICEBERG__MAX_DEPTH) {
    TM_CORRUPT(err, "%s: types nest deeper than %d levels", where, TM_ICEBERG__MAX_DEPTH);
    return NULL;
  }
  if (json_is_string(j)) return parse_primitive(a, json_string_value(j), where, err);
  if (!json_is_object(j)) {
    TM_CORRUPT(err, "%s: a type must be a string or an object", where);
    return NULL;
  }
  json_t *jt = need(j, "type", is_string, "must be a string", where, err);
  if (!jt) return NULL;
  const char *kind = json_string_value(jt);
  if (strcmp(kind, "struct") == 0) {
    json_t *fields = need(j, "fields", is_array, "must be an array", where, err);
    if (!fields) return NULL;
    tm_iceberg_type *t = new_type(a, TM_ICEBERG_STRUCT, err);
    if (!t) return NULL;
    size_t n = json_array_size(fields);
    t->fields = tm_arena_calloc(a, n ? n : 1, sizeof *t->fields, err);
    if (!t->fields) return NULL;
    for (size_t i = 0; i < n; i++) {
      if (parse_field(a, json_array_get(fields, i), &t->fields[i], depth + 1, where, err) < 0)
        return NULL;
      for (size_t k = 0; k < i; k++) {
        if (t->fields[k].id == t->fields[i].id) {
          TM_CORRUPT(err, "%s: field id %d appears twice in a struct", where,
                     (int)t->fields[i].id);
          return NULL;
        }
      }
      t->n_fields = i + 1;
    }
    return t;
  }
  if (strcmp(kind, "list") == 0) {
    tm_iceberg_type *t = new_type(a, TM_ICEBERG_LIST, err);
    if (!t) return NULL;
    t->element = parse_child(a, j, "element-id", "element", "element-required", false,
                             "element", depth, where, err);
    return t->element ? t : NULL;
  }
  if (strcmp(kind, "map") == 0) {
    tm_iceberg_type *t = new_type(a, TM_ICEBERG_MAP, err);
    if (!t) return NULL;
    t->key = parse_child(a, j, "key-id", "key", "key-required", true, "key", depth, where, err);
    if (!t->key) return NULL;
    t->key->required = true;
    t->value = parse_child(a, j, "value-id", "value", "value-required", false, "value", depth,
                           where, err);
    return t->value ? t : NULL;
  }
  /* {"type": "long"} style primitives. */
  return parse_primitive(a, kind, where, err);
}

static const char *dump_json(tm_arena *a, json_t *v, tm_error *err) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  if (!s) {
    tm_error_nomem(err);
    return NULL;
  }
  const char *out = tm_iceberg__strdup(a, s, err);
  free(s); /* lint-ok: jansson allocates with malloc */
  return out;
}

static int parse_field(tm_arena *a, json_t *j, tm_iceberg_field *f, int depth, const char *where,
                       tm_error *err) {
  if (!json_is_object(j)) return TM_CORRUPT(err, "%s: a struct field must be an object", where);
  json_t *id = need(j, "id", is_integer, "must be an integer", where, err);
  json_t *name = id ? need(j, "name", is_string, "must be a string", where, err) : NULL;
  if (!name) return err->code;
  if (!int32_of(id, &f->id)) return TM_CORRUPT(err, "%s: field id is out of range", where);
  if (!(f->name = tm_iceberg__strdup(a, json_string_value(name), err))) return err->code;
  json_t *req = json_object_get(j, "required");
  if (req && !json_is_boolean(req)) {
    return TM_CORRUPT(err, "%s: \"required\" of field \"%s\" must be a boolean", where, f->name);
  }
  f->required = req && json_is_true(req);
  json_t *ty = json_object_get(j, "type");
  if (!ty) return TM_CORRUPT(err, "%s: field \"%s\" has no \"type\"", where, f->name);
  f->type = tm_iceberg__parse_type(a, ty, depth + 1, where, err);
  if (!f->type) return err->code;
  json_t *doc = json_object_get(j, "doc");
  if (json_is_string(doc) && !(f->doc = tm_iceberg__strdup(a, json_string_value(doc), err)))
    return err->code;
  json_t *d = json_object_get(j, "initial-default");
  if (d && !(f->initial_default = dump_json(a, d, err))) return err->code;
  d = json_object_get(j, "write-default");
  if (d && !(f->write_default = dump_json(a, d, err))) return err->code;
  return TM_OK;
}

int tm_iceberg__parse_schema(tm_arena *a, json_t *j, tm_iceberg_schema *out, const char *where,
                             tm_error *err) {
  if (!json_is_object(j)) return TM_CORRUPT(err, "%s: a schema must be an object", where);
  json_t *jt = json_object_get(j, "type");
  if (jt && (!json_is_string(jt) || strcmp(json_string_value(jt), "struct") != 0)) {
    return TM_CORRUPT(err, "%s: a schema must be a struct", where);
  }
  json_t *fields = need(j, "fields", is_array, "must be an array", where, err);
  if (!fields) return err->code;
  /* Parse as a struct (the "type" member may be absent in old writers). */
  json_t *copy = json_object();
  if (!copy) return tm_error_nomem(err);
  json_object_set_new(copy, "type", json_string("struct"));
  json_object_set(copy, "fields", fields);
  out->root = tm_iceberg__parse_type(a, copy, 0, where, err);
  json_decref(copy);
  if (!out->root) return err->code;
  out->schema_id = 0;
  json_t *sid = json_object_get(j, "schema-id");
  if (sid && !int32_of(sid, &out->schema_id)) {
    return TM_CORRUPT(err, "%s: \"schema-id\" must be an integer", where);
  }
  json_t *ids = json_object_get(j, "identifier-field-ids");
  if (json_is_array(ids) && json_array_size(ids) > 0) {
    size_t n = json_array_size(ids);
    out->identifier_ids = tm_arena_calloc(a, n, sizeof *out->identifier_ids, err);
    if (!out->identifier_ids) return err->code;
    for (size_t i = 0; i < n; i++) {
      if (!int32_of(json_array_get(ids, i), &out->identifier_ids[i])) {
        return TM_CORRUPT(err, "%s: \"identifier-field-ids\" must hold integers", where);
      }
    }
    out->n_identifier_ids = n;
  }
  return TM_OK;
}

tm_iceberg_transform tm_iceberg_transform_parse(const char *text) {
  tm_iceberg_transform tr = {TM_ICEBERG_TR_UNKNOWN, 0, text};
  static const struct {
    const char *name;
    tm_iceberg_transform_kind kind;
  } simple[] = {{"identity", TM_ICEBERG_TR_IDENTITY}, {"year", TM_ICEBERG_TR_YEAR},
                {"month", TM_ICEBERG_TR_MONTH},       {"day", TM_ICEBERG_TR_DAY},
                {"hour", TM_ICEBERG_TR_HOUR},         {"void", TM_ICEBERG_TR_VOID}};
  if (!text) return tr;
  for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
    if (strcmp(text, simple[i].name) == 0) {
      tr.kind = simple[i].kind;
      return tr;
    }
  }
  size_t len = strlen(text);
  int64_t n;
  if (strncmp(text, "bucket[", 7) == 0 && len > 8 && text[len - 1] == ']' &&
      parse_int_in(text + 7, len - 8, 1, INT32_MAX, &n)) {
    tr.kind = TM_ICEBERG_TR_BUCKET;
    tr.param = (int32_t)n;
  } else if (strncmp(text, "truncate[", 9) == 0 && len > 10 && text[len - 1] == ']' &&
             parse_int_in(text + 9, len - 10, 1, INT32_MAX, &n)) {
    tr.kind = TM_ICEBERG_TR_TRUNCATE;
    tr.param = (int32_t)n;
  }
  return tr;
}

int tm_iceberg__parse_spec_fields(tm_arena *a, json_t *arr, bool v1, tm_iceberg_spec *out,
                                  const char *where, tm_error *err) {
  if (!json_is_array(arr)) return TM_CORRUPT(err, "%s: partition fields must be an array", where);
  size_t n = json_array_size(arr);
  out->fields = tm_arena_calloc(a, n ? n : 1, sizeof *out->fields, err);
  if (!out->fields) return err->code;
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array_get(arr, i);
    tm_iceberg_partition_field *pf = &out->fields[i];
    if (!json_is_object(f)) return TM_CORRUPT(err, "%s: a partition field must be an object", where);
    json_t *src = json_object_get(f, "source-id");
    if (!src) {
      json_t *srcs = json_object_get(f, "source-ids");
      if (json_is_array(srcs) && json_array_size(srcs) == 1) src = json_array_get(srcs, 0);
    }
    if (!src || !int32_of(src, &pf->source_id)) {
      return TM_CORRUPT(err, "%s: partition field %zu needs an integer \"source-id\"", where, i);
    }
    json_t *fid = json_object_get(f, "field-id");
    if (fid) {
      if (!int32_of(fid, &pf->field_id)) {
        return TM_CORRUPT(err, "%s: partition \"field-id\" must be an integer", where);
      }
    } else if (v1) {
      pf->field_id = 1000 + (int32_t)i; /* v1: assigned in order from 1000 */
    } else {
      return TM_CORRUPT(err, "%s: partition field %zu has no \"field-id\"", where, i);
    }
    json_t *name = need(f, "name", is_string, "must be a string", where, err);
    json_t *tr = name ? need(f, "transform", is_string, "must be a string", where, err) : NULL;
    if (!tr) return err->code;
    if (!(pf->name = tm_iceberg__strdup(a, json_string_value(name), err))) return err->code;
    const char *text = tm_iceberg__strdup(a, json_string_value(tr), err);
    if (!text) return err->code;
    pf->transform = tm_iceberg_transform_parse(text);
    out->n_fields = i + 1;
  }
  return TM_OK;
}

/* ---- name mapping ------------------------------------------------------- */

static int parse_name_maps(tm_arena *a, json_t *arr, tm_iceberg_name_map **out, size_t *n_out,
                           int depth, tm_error *err) {
  if (depth > TM_ICEBERG__MAX_DEPTH) return TM_CORRUPT(err, "name mapping nests too deeply");
  if (!json_is_array(arr)) return TM_CORRUPT(err, "name mapping: expected a list of mappings");
  size_t n = json_array_size(arr);
  tm_iceberg_name_map *maps = tm_arena_calloc(a, n ? n : 1, sizeof *maps, err);
  if (!maps) return err->code;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    if (!json_is_object(o)) return TM_CORRUPT(err, "name mapping: entry %zu is not an object", i);
    tm_iceberg_name_map *m = &maps[i];
    m->field_id = -1;
    json_t *fid = json_object_get(o, "field-id");
    if (fid && !int32_of(fid, &m->field_id)) {
      return TM_CORRUPT(err, "name mapping: \"field-id\" must be an integer");
    }
    json_t *names = json_object_get(o, "names");
    if (names && !json_is_array(names)) return TM_CORRUPT(err, "name mapping: \"names\" must be a list");
    size_t nn = json_array_size(names);
    m->names = tm_arena_calloc(a, nn ? nn : 1, sizeof *m->names, err);
    if (!m->names) return err->code;
    for (size_t k = 0; k < nn; k++) {
      json_t *s = json_array_get(names, k);
      if (!json_is_string(s)) return TM_CORRUPT(err, "name mapping: names must be strings");
      if (!(m->names[k] = tm_iceberg__strdup(a, json_string_value(s), err))) return err->code;
    }
    m->n_names = nn;
    json_t *fields = json_object_get(o, "fields");
    if (fields && !json_is_null(fields)) {
      TM_TRY(parse_name_maps(a, fields, &m->fields, &m->n_fields, depth + 1, err));
    }
  }
  *out = maps;
  *n_out = n;
  return TM_OK;
}

int tm_iceberg__parse_name_mapping(tm_arena *a, const char *text,
                                   tm_iceberg_name_mapping **out, tm_error *err) {
  json_error_t jerr;
  json_t *root = json_loads(text, 0, &jerr);
  if (!root) {
    return TM_CORRUPT(err, "schema.name-mapping.default is not valid JSON: %s", jerr.text);
  }
  tm_iceberg_name_mapping *m = tm_arena_alloc(a, sizeof *m, err);
  int rc = m ? parse_name_maps(a, root, &m->fields, &m->n_fields, 0, err) : err->code;
  json_decref(root);
  if (rc < 0) return tm_error_prefix(err, "schema.name-mapping.default");
  *out = m;
  return TM_OK;
}

const tm_iceberg_name_map *tm_iceberg_name_map_lookup(const tm_iceberg_name_map *maps,
                                                       size_t n_maps, const char *name) {
  for (size_t i = 0; maps && i < n_maps; i++) {
    for (size_t k = 0; k < maps[i].n_names; k++) {
      if (strcmp(maps[i].names[k], name) == 0) return &maps[i];
    }
  }
  return NULL;
}

int32_t tm_iceberg_name_mapping_find(const tm_iceberg_name_mapping *m, const char *name) {
  const tm_iceberg_name_map *e = m ? tm_iceberg_name_map_lookup(m->fields, m->n_fields, name) : NULL;
  return e ? e->field_id : -1;
}

/* ---- lookups -------------------------------------------------------------- */

static const tm_iceberg_field *find_in_type(const tm_iceberg_type *t, int32_t id, int depth) {
  if (!t || depth > TM_ICEBERG__MAX_DEPTH) return NULL;
  const tm_iceberg_field *hit = NULL;
  switch (t->id) {
    case TM_ICEBERG_STRUCT:
      for (size_t i = 0; i < t->n_fields && !hit; i++) {
        if (t->fields[i].id == id) return &t->fields[i];
        hit = find_in_type(t->fields[i].type, id, depth + 1);
      }
      return hit;
    case TM_ICEBERG_LIST:
      if (t->element->id == id) return t->element;
      return find_in_type(t->element->type, id, depth + 1);
    case TM_ICEBERG_MAP:
      if (t->key->id == id) return t->key;
      if (t->value->id == id) return t->value;
      hit = find_in_type(t->key->type, id, depth + 1);
      return hit ? hit : find_in_type(t->value->type, id, depth + 1);
    default:
      return NULL;
  }
}

const tm_iceberg_field *tm_iceberg_schema_find_id(const tm_iceberg_schema *s, int32_t id) {
  return s ? find_in_type(s->root, id, 0) : NULL;
}

const tm_iceberg_field *tm_iceberg_schema_find_name(const tm_iceberg_schema *s,
                                                    const char *name) {
  if (!s) return NULL;
  for (size_t i = 0; i < s->root->n_fields; i++) {
    if (strcmp(s->root->fields[i].name, name) == 0) return &s->root->fields[i];
  }
  for (size_t i = 0; i < s->root->n_fields; i++) {
    if (strcasecmp(s->root->fields[i].name, name) == 0) return &s->root->fields[i];
  }
  return NULL;
}

/* ---- JSON out ------------------------------------------------------------ */

static json_t *field_to_json(const tm_iceberg_field *f);

json_t *tm_iceberg__type_to_json(const tm_iceberg_type *t) {
  json_t *o;
  switch (t->id) {
    case TM_ICEBERG_STRUCT:
      o = json_object();
      json_t *fields = json_array();
      if (!o || !fields) {
        json_decref(o);
        json_decref(fields);
        return NULL;
      }
      json_object_set_new(o, "type", json_string("struct"));
      for (size_t i = 0; i < t->n_fields; i++) {
        json_t *f = field_to_json(&t->fields[i]);
        if (!f) {
          json_decref(fields);
          json_decref(o);
          return NULL;
        }
        json_array_append_new(fields, f);
      }
      json_object_set_new(o, "fields", fields);
      return o;
    case TM_ICEBERG_LIST:
      o = json_pack("{s:s, s:i, s:b, s:o}", "type", "list", "element-id", (int)t->element->id,
                    "element-required", t->element->required, "element",
                    tm_iceberg__type_to_json(t->element->type));
      return o;
    case TM_ICEBERG_MAP:
      o = json_pack("{s:s, s:i, s:o, s:i, s:b, s:o}", "type", "map", "key-id", (int)t->key->id,
                    "key", tm_iceberg__type_to_json(t->key->type), "value-id",
                    (int)t->value->id, "value-required", t->value->required, "value",
                    tm_iceberg__type_to_json(t->value->type));
      return o;
    default:
      return json_string(t->text ? t->text : tm_iceberg_type_name(t->id));
  }
}

static json_t *field_to_json(const tm_iceberg_field *f) {
  json_t *o = json_pack("{s:i, s:s, s:b, s:o}", "id", (int)f->id, "name", f->name, "required",
                        f->required, "type", tm_iceberg__type_to_json(f->type));
  if (!o) return NULL;
  if (f->doc) json_object_set_new(o, "doc", json_string(f->doc));
  if (f->initial_default) {
    json_t *d = json_loads(f->initial_default, JSON_DECODE_ANY, NULL);
    if (d) json_object_set_new(o, "initial-default", d);
  }
  if (f->write_default) {
    json_t *d = json_loads(f->write_default, JSON_DECODE_ANY, NULL);
    if (d) json_object_set_new(o, "write-default", d);
  }
  return o;
}

json_t *tm_iceberg__schema_to_json(const tm_iceberg_schema *s) {
  json_t *o = tm_iceberg__type_to_json(s->root);
  if (!o) return NULL;
  json_object_set_new(o, "schema-id", json_integer(s->schema_id));
  if (s->n_identifier_ids) {
    json_t *ids = json_array();
    for (size_t i = 0; i < s->n_identifier_ids; i++) {
      json_array_append_new(ids, json_integer(s->identifier_ids[i]));
    }
    json_object_set_new(o, "identifier-field-ids", ids);
  }
  return o;
}

json_t *tm_iceberg__spec_fields_to_json(const tm_iceberg_spec *s) {
  json_t *arr = json_array();
  if (!arr) return NULL;
  for (size_t i = 0; i < s->n_fields; i++) {
    const tm_iceberg_partition_field *f = &s->fields[i];
    json_t *o = json_pack("{s:s, s:s, s:i, s:i}", "name", f->name, "transform",
                          f->transform.text, "source-id", (int)f->source_id, "field-id",
                          (int)f->field_id);
    if (!o) {
      json_decref(arr);
      return NULL;
    }
    json_array_append_new(arr, o);
  }
  return arr;
}
