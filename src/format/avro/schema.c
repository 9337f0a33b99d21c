/*
 * schema.c - Avro schema JSON into a tree of tm_avro_schema nodes (format
 * layer). See avro.h.
 *
 * All nodes and strings of one tree live in one arena owned by the root.
 * Named types (record, enum, fixed) are registered under their fullname
 * before their fields are parsed, so recursive schemas (a record that refers
 * to itself) become a graph; decoders bound recursion by depth.
 */
#include <jansson.h>
#include <string.h>

#include "format/avro/avro.h"
#include "util/alloc.h"
#include "util/hash.h"

#define SCHEMA_MAX_JSON ((size_t)4 << 20)
#define SCHEMA_MAX_DEPTH 64
#define SCHEMA_ARENA_LIMIT ((size_t)64 << 20)

typedef struct parse_ctx {
  tm_arena *arena;
  tm_map names; /* fullname -> tm_avro_schema * (not owned) */
  tm_error *err;
} parse_ctx;

const char *tm_avro_kind_name(tm_avro_kind kind) {
  static const char *const names[] = {"null",   "boolean", "int",    "long",  "float",
                                      "double", "bytes",   "string", "record", "enum",
                                      "array",  "map",     "union",  "fixed"};
  if ((unsigned)kind < sizeof names / sizeof names[0]) return names[kind];
  return "?";
}

static int primitive_kind(const char *s, tm_avro_kind *out) {
  for (int k = TM_AVRO_NULL; k <= TM_AVRO_STRING; k++) {
    if (strcmp(s, tm_avro_kind_name((tm_avro_kind)k)) == 0) {
      *out = (tm_avro_kind)k;
      return 1;
    }
  }
  return 0;
}

static tm_avro_schema *new_node(parse_ctx *c, tm_avro_kind kind) {
  tm_avro_schema *s = tm_arena_alloc(c->arena, sizeof *s, c->err);
  if (!s) return NULL;
  s->kind = kind;
  s->element_id = s->key_id = s->value_id = -1;
  return s;
}

static const char *dup_str(parse_ctx *c, const char *s) {
  return tm_arena_strndup(c->arena, s, strlen(s), c->err);
}

/* An integer attribute that some writers store as a string. */
static bool json_int_attr(json_t *obj, const char *key, int64_t *out) {
  json_t *v = json_object_get(obj, key);
  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return true;
  }
  if (json_is_string(v)) {
    return tm_parse_int64(json_string_value(v), json_string_length(v), out) == TM_OK;
  }
  return false;
}

static int32_t id_attr(json_t *obj, const char *key) {
  int64_t v;
  if (json_int_attr(obj, key, &v) && v >= INT32_MIN && v <= INT32_MAX) return (int32_t)v;
  return -1;
}

static bool valid_name_part(const char *s, size_t len) {
  if (len == 0) return false;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' ||
              (i > 0 && ch >= '0' && ch <= '9');
    if (!ok) return false;
  }
  return true;
}

/*
 * Builds the fullname of a named type from its name and namespace
 * attributes and the enclosing namespace. Writes the new enclosing namespace
 * for the type's children to *ns_out (a view into the fullname).
 */
static const char *make_fullname(parse_ctx *c, json_t *obj, const char *enclosing,
                                 const char **ns_out) {
  json_t *jname = json_object_get(obj, "name");
  if (!json_is_string(jname)) {
    TM_CORRUPT(c->err, "Avro schema: named type without a \"name\"");
    return NULL;
  }
  const char *name = json_string_value(jname);
  const char *full;
  if (strchr(name, '.')) {
    full = dup_str(c, name);
  } else {
    json_t *jns = json_object_get(obj, "namespace");
    const char *ns = json_is_string(jns) ? json_string_value(jns) : enclosing;
    if (ns && *ns) {
      char *tmp = tm_asprintf("%s.%s", ns, name);
      if (!tmp) {
        tm_error_nomem(c->err);
        return NULL;
      }
      full = dup_str(c, tmp);
      tm_free(tmp);
    } else {
      full = dup_str(c, name);
    }
  }
  if (!full) return NULL;
  /* Check each dot-separated part. */
  const char *p = full;
  for (;;) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (!valid_name_part(p, len)) {
      TM_CORRUPT(c->err, "Avro schema: invalid name \"%s\"", full);
      return NULL;
    }
    if (!dot) break;
    p = dot + 1;
  }
  const char *last_dot = strrchr(full, '.');
  if (last_dot) {
    char *ns = tm_arena_strndup(c->arena, full, (size_t)(last_dot - full), c->err);
    if (!ns) return NULL;
    *ns_out = ns;
  } else {
    *ns_out = "";
  }
  return full;
}

static int register_name(parse_ctx *c, const char *full, tm_avro_schema *s) {
  if (tm_map_gets(&c->names, full)) {
    return TM_CORRUPT(c->err, "Avro schema: type \"%s\" is defined twice", full);
  }
  return tm_map_puts(&c->names, full, s, NULL, c->err);
}

static tm_avro_schema *parse_node(parse_ctx *c, json_t *j, const char *ns, int depth);

static void apply_logical(tm_avro_schema *s, json_t *obj) {
  json_t *jl = json_object_get(obj, "logicalType");
  if (!json_is_string(jl)) return;
  const char *lt = json_string_value(jl);
  tm_avro_kind k = s->kind;
  int64_t v;
  if (strcmp(lt, "decimal") == 0 && (k == TM_AVRO_BYTES || k == TM_AVRO_FIXED)) {
    int64_t prec = 0, scale = 0;
    if (!json_int_attr(obj, "precision", &prec)) return;
    if (json_int_attr(obj, "scale", &v)) scale = v;
    if (prec < 1 || prec > 76 || scale < 0 || scale > prec) return; /* invalid: ignore */
    if (k == TM_AVRO_FIXED && (s->size < 1 || s->size > 32)) return;
    s->logical = TM_AVRO_LT_DECIMAL;
    s->precision = (int32_t)prec;
    s->scale = (int32_t)scale;
  } else if (strcmp(lt, "uuid") == 0 &&
             (k == TM_AVRO_STRING || (k == TM_AVRO_FIXED && s->size == 16))) {
    s->logical = TM_AVRO_LT_UUID;
  } else if (strcmp(lt, "date") == 0 && k == TM_AVRO_INT) {
    s->logical = TM_AVRO_LT_DATE;
  } else if (strcmp(lt, "time-millis") == 0 && k == TM_AVRO_INT) {
    s->logical = TM_AVRO_LT_TIME_MILLIS;
  } else if (strcmp(lt, "time-micros") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_TIME_MICROS;
  } else if (strcmp(lt, "timestamp-millis") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_TIMESTAMP_MILLIS;
  } else if (strcmp(lt, "timestamp-micros") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_TIMESTAMP_MICROS;
  } else if (strcmp(lt, "timestamp-nanos") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_TIMESTAMP_NANOS;
  } else if (strcmp(lt, "local-timestamp-millis") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_LOCAL_TIMESTAMP_MILLIS;
  } else if (strcmp(lt, "local-timestamp-micros") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_LOCAL_TIMESTAMP_MICROS;
  } else if (strcmp(lt, "local-timestamp-nanos") == 0 && k == TM_AVRO_LONG) {
    s->logical = TM_AVRO_LT_LOCAL_TIMESTAMP_NANOS;
  } else if (strcmp(lt, "duration") == 0 && k == TM_AVRO_FIXED && s->size == 12) {
    s->logical = TM_AVRO_LT_DURATION;
  } else if (strcmp(lt, "map") == 0 && k == TM_AVRO_ARRAY) {
    s->logical = TM_AVRO_LT_MAP;
  }
  json_t *adj = json_object_get(obj, "adjust-to-utc");
  if (json_is_boolean(adj)) s->adjust_to_utc = json_is_true(adj);
}

static tm_avro_schema *parse_record(parse_ctx *c, json_t *obj, const char *ns, int depth) {
  const char *child_ns = ns;
  const char *full = make_fullname(c, obj, ns, &child_ns);
  if (!full) return NULL;
  tm_avro_schema *s = new_node(c, TM_AVRO_RECORD);
  if (!s) return NULL;
  s->name = full;
  if (register_name(c, full, s) < 0) return NULL;
  json_t *fields = json_object_get(obj, "fields");
  if (!json_is_array(fields)) {
    TM_CORRUPT(c->err, "Avro schema: record \"%s\" has no \"fields\" array", full);
    return NULL;
  }
  size_t n = json_array_size(fields);
  s->fields = tm_arena_calloc(c->arena, n ? n : 1, sizeof *s->fields, c->err);
  if (!s->fields) return NULL;
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array_get(fields, i);
    json_t *fname = json_object_get(f, "name");
    json_t *ftype = json_object_get(f, "type");
    if (!json_is_object(f) || !json_is_string(fname) || !ftype) {
      TM_CORRUPT(c->err, "Avro schema: field %zu of record \"%s\" needs a name and a type",
                 i, full);
      return NULL;
    }
    const char *name = json_string_value(fname);
    if (!valid_name_part(name, strlen(name))) {
      TM_CORRUPT(c->err, "Avro schema: invalid field name \"%s\" in record \"%s\"", name,
                 full);
      return NULL;
    }
    for (size_t k = 0; k < i; k++) {
      if (strcmp(s->fields[k].name, name) == 0) {
        TM_CORRUPT(c->err, "Avro schema: field \"%s\" appears twice in record \"%s\"",
                   name, full);
        return NULL;
      }
    }
    tm_avro_field *fd = &s->fields[i];
    fd->name = dup_str(c, name);
    if (!fd->name) return NULL;
    fd->type = parse_node(c, ftype, child_ns, depth + 1);
    if (!fd->type) return NULL;
    fd->field_id = id_attr(f, "field-id");
    fd->has_default = json_object_get(f, "default") != NULL;
    s->n_fields = i + 1;
  }
  return s;
}

static tm_avro_schema *parse_enum(parse_ctx *c, json_t *obj, const char *ns) {
  const char *child_ns = ns;
  const char *full = make_fullname(c, obj, ns, &child_ns);
  if (!full) return NULL;
  tm_avro_schema *s = new_node(c, TM_AVRO_ENUM);
  if (!s) return NULL;
  s->name = full;
  if (register_name(c, full, s) < 0) return NULL;
  json_t *syms = json_object_get(obj, "symbols");
  if (!json_is_array(syms) || json_array_size(syms) == 0) {
    TM_CORRUPT(c->err, "Avro schema: enum \"%s\" needs a non-empty \"symbols\" array", full);
    return NULL;
  }
  size_t n = json_array_size(syms);
  s->symbols = tm_arena_calloc(c->arena, n, sizeof *s->symbols, c->err);
  if (!s->symbols) return NULL;
  for (size_t i = 0; i < n; i++) {
    json_t *sym = json_array_get(syms, i);
    if (!json_is_string(sym)) {
      TM_CORRUPT(c->err, "Avro schema: enum \"%s\" has a symbol that is not a string", full);
      return NULL;
    }
    s->symbols[i] = dup_str(c, json_string_value(sym));
    if (!s->symbols[i]) return NULL;
  }
  s->n_symbols = n;
  return s;
}

static tm_avro_schema *parse_fixed(parse_ctx *c, json_t *obj, const char *ns) {
  const char *child_ns = ns;
  const char *full = make_fullname(c, obj, ns, &child_ns);
  if (!full) return NULL;
  int64_t size;
  if (!json_int_attr(obj, "size", &size) || size < 0 || size > (1 << 20)) {
    TM_CORRUPT(c->err, "Avro schema: fixed \"%s\" needs a \"size\" between 0 and 1048576",
               full);
    return NULL;
  }
  tm_avro_schema *s = new_node(c, TM_AVRO_FIXED);
  if (!s) return NULL;
  s->name = full;
  s->size = size;
  if (register_name(c, full, s) < 0) return NULL;
  apply_logical(s, obj);
  return s;
}

static tm_avro_schema *lookup_name(parse_ctx *c, const char *name, const char *ns) {
  tm_avro_schema *s = NULL;
  if (!strchr(name, '.') && ns && *ns) {
    char *full = tm_asprintf("%s.%s", ns, name);
    if (!full) {
      tm_error_nomem(c->err);
      return NULL;
    }
    s = tm_map_gets(&c->names, full);
    tm_free(full);
  }
  if (!s) s = tm_map_gets(&c->names, name);
  if (!s) TM_CORRUPT(c->err, "Avro schema: unknown type \"%s\"", name);
  return s;
}

static tm_avro_schema *parse_node(parse_ctx *c, json_t *j, const char *ns, int depth) {
  if (depth > SCHEMA_MAX_DEPTH) {
    tm_error_set(c->err, TM_ETOOLARGE, "Avro schema nests deeper than %d levels",
                 SCHEMA_MAX_DEPTH);
    return NULL;
  }
  if (json_is_string(j)) {
    tm_avro_kind k;
    if (primitive_kind(json_string_value(j), &k)) return new_node(c, k);
    return lookup_name(c, json_string_value(j), ns);
  }
  if (json_is_array(j)) {
    size_t n = json_array_size(j);
    if (n == 0) {
      TM_CORRUPT(c->err, "Avro schema: empty union");
      return NULL;
    }
    tm_avro_schema *s = new_node(c, TM_AVRO_UNION);
    if (!s) return NULL;
    s->branches = tm_arena_calloc(c->arena, n, sizeof *s->branches, c->err);
    if (!s->branches) return NULL;
    for (size_t i = 0; i < n; i++) {
      tm_avro_schema *b = parse_node(c, json_array_get(j, i), ns, depth + 1);
      if (!b) return NULL;
      if (b->kind == TM_AVRO_UNION) {
        TM_CORRUPT(c->err, "Avro schema: a union directly inside a union");
        return NULL;
      }
      s->branches[i] = b;
      s->n_branches = i + 1;
    }
    return s;
  }
  if (!json_is_object(j)) {
    TM_CORRUPT(c->err, "Avro schema: a type must be a string, an object or an array");
    return NULL;
  }
  json_t *jt = json_object_get(j, "type");
  if (!json_is_string(jt)) {
    if (json_is_object(jt) || json_is_array(jt)) return parse_node(c, jt, ns, depth + 1);
    TM_CORRUPT(c->err, "Avro schema: object without a \"type\"");
    return NULL;
  }
  const char *t = json_string_value(jt);
  tm_avro_kind k;
  tm_avro_schema *s = NULL;
  if (primitive_kind(t, &k)) {
    s = new_node(c, k);
    if (!s) return NULL;
    apply_logical(s, j);
    return s;
  }
  if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0) return parse_record(c, j, ns, depth);
  if (strcmp(t, "enum") == 0) return parse_enum(c, j, ns);
  if (strcmp(t, "fixed") == 0) return parse_fixed(c, j, ns);
  if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
    bool is_array = t[0] == 'a';
    json_t *inner = json_object_get(j, is_array ? "items" : "values");
    if (!inner) {
      TM_CORRUPT(c->err, "Avro schema: %s without \"%s\"", t, is_array ? "items" : "values");
      return NULL;
    }
    s = new_node(c, is_array ? TM_AVRO_ARRAY : TM_AVRO_MAP);
    if (!s) return NULL;
    s->items = parse_node(c, inner, ns, depth + 1);
    if (!s->items) return NULL;
    s->element_id = id_attr(j, "element-id");
    s->key_id = id_attr(j, "key-id");
    s->value_id = id_attr(j, "value-id");
    apply_logical(s, j);
    return s;
  }
  /* A reference to a named type written as {"type": "Name"}. */
  return lookup_name(c, t, ns);
}

int tm_avro_schema_parse(tm_avro_schema **out, const char *json, size_t len,
                         tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  if (len > SCHEMA_MAX_JSON) {
    return tm_error_set(err, TM_ETOOLARGE, "Avro schema of %zu bytes exceeds the %zu-byte limit",
                        len, SCHEMA_MAX_JSON);
  }
  json_error_t jerr;
  json_t *root = json_loadb(json, len, JSON_DECODE_ANY, &jerr);
  if (!root) {
    return TM_CORRUPT(err, "Avro schema is not valid JSON: %s (line %d, column %d)",
                      jerr.text, jerr.line, jerr.column);
  }
  int rc = TM_OK;
  tm_arena *arena = tm_malloc(sizeof *arena);
  if (!arena) {
    json_decref(root);
    return tm_error_nomem(err);
  }
  tm_arena_init(arena, SCHEMA_ARENA_LIMIT);
  parse_ctx c = {arena, {0}, err};
  tm_map_init(&c.names);
  tm_avro_schema *s = parse_node(&c, root, "", 0);
  if (!s) {
    rc = err->code < 0 ? err->code : TM_ECORRUPT;
    goto done;
  }
  s->arena = arena;
  arena = NULL;
  *out = s;
done:
  tm_map_dispose(&c.names, NULL);
  if (arena) {
    tm_arena_dispose(arena);
    tm_free(arena);
  }
  json_decref(root);
  return rc;
}

void tm_avro_schema_free(tm_avro_schema *root) {
  if (!root) return;
  tm_arena *a = root->arena;
  if (!a) return;
  tm_arena_dispose(a);
  tm_free(a);
}

int tm_avro_schema_field_index(const tm_avro_schema *record, const char *name) {
  if (!record || record->kind != TM_AVRO_RECORD) return -1;
  for (size_t i = 0; i < record->n_fields; i++) {
    if (strcmp(record->fields[i].name, name) == 0) return (int)i;
  }
  return -1;
}

int tm_avro_schema_field_index_by_id(const tm_avro_schema *record, int32_t id) {
  if (!record || record->kind != TM_AVRO_RECORD) return -1;
  for (size_t i = 0; i < record->n_fields; i++) {
    if (record->fields[i].field_id == id) return (int)i;
  }
  return -1;
}

const tm_avro_schema *tm_avro_schema_nonnull(const tm_avro_schema *s) {
  if (s && s->kind == TM_AVRO_UNION && s->n_branches == 2) {
    if (s->branches[0]->kind == TM_AVRO_NULL) return s->branches[1];
    if (s->branches[1]->kind == TM_AVRO_NULL) return s->branches[0];
  }
  return s;
}
