/*
 * evolve.c - schema evolution of a file-system table (format layer): a new
 * current schema, checked against the one it replaces by field id the way
 * Iceberg's own UpdateSchema checks it (spec, "Schema Evolution"). See
 * writer.h, tm_iceberg_update_schema.
 *
 * Members are identified by id, so a rename, a move or a promotion keeps the
 * data already written readable (read.c matches data files' members by id,
 * convert.c reshapes nested ones). What would make old data mean something
 * else is refused.
 */
#include <string.h>

#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/writer.h"
#include "util/alloc.h"

#define EVOLVE_ARENA ((size_t)1 << 24)

/* Gives members that keep an id (a list, a map) the ids of their element, key
 * and value in the current schema when the JSON leaves them out, so that
 * tm_iceberg__assign_ids does not take them for new ones. */
static void inherit_inner_ids(json_t *type, const tm_iceberg_schema *cur, int32_t id, int depth) {
  if (depth > TM_ICEBERG__MAX_DEPTH || !json_is_object(type)) return;
  const char *kind = json_string_value(json_object_get(type, "type"));
  if (!kind) return;
  const tm_iceberg_field *old = id >= 0 ? tm_iceberg_schema_find_id(cur, id) : NULL;
  const tm_iceberg_type *ot = old ? old->type : NULL;
  if (strcmp(kind, "struct") == 0) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(type, "fields"), i, f) {
      json_t *fid = json_object_get(f, "id");
      int32_t child = json_is_integer(fid) ? (int32_t)json_integer_value(fid) : -1;
      inherit_inner_ids(json_object_get(f, "type"), cur, child, depth + 1);
    }
  } else if (strcmp(kind, "list") == 0) {
    if (ot && ot->id == TM_ICEBERG_LIST && !json_is_integer(json_object_get(type, "element-id")))
      json_object_set_new(type, "element-id", json_integer(ot->element->id));
    json_t *eid = json_object_get(type, "element-id");
    inherit_inner_ids(json_object_get(type, "element"), cur,
                      json_is_integer(eid) ? (int32_t)json_integer_value(eid) : -1, depth + 1);
  } else if (strcmp(kind, "map") == 0) {
    if (ot && ot->id == TM_ICEBERG_MAP) {
      if (!json_is_integer(json_object_get(type, "key-id")))
        json_object_set_new(type, "key-id", json_integer(ot->key->id));
      if (!json_is_integer(json_object_get(type, "value-id")))
        json_object_set_new(type, "value-id", json_integer(ot->value->id));
    }
    json_t *kid = json_object_get(type, "key-id"), *vid = json_object_get(type, "value-id");
    inherit_inner_ids(json_object_get(type, "key"), cur,
                      json_is_integer(kid) ? (int32_t)json_integer_value(kid) : -1, depth + 1);
    inherit_inner_ids(json_object_get(type, "value"), cur,
                      json_is_integer(vid) ? (int32_t)json_integer_value(vid) : -1, depth + 1);
  }
}

/* Whether a primitive of type from may become type to (Iceberg's promotions). */
static bool promotable(const tm_iceberg_type *from, const tm_iceberg_type *to) {
  if (from->id == to->id) {
    if (from->id == TM_ICEBERG_DECIMAL)
      return to->scale == from->scale && to->precision >= from->precision;
    if (from->id == TM_ICEBERG_FIXED) return to->length == from->length;
    return true;
  }
  return (from->id == TM_ICEBERG_INT && to->id == TM_ICEBERG_LONG) ||
         (from->id == TM_ICEBERG_FLOAT && to->id == TM_ICEBERG_DOUBLE);
}

/* The id of the member holding field id in t (parent: t's own member id, -1
 * at the top), or -2 when t lacks it. */
static int32_t parent_of(const tm_iceberg_type *t, int32_t parent, int32_t id, int depth) {
  if (!t || depth > TM_ICEBERG__MAX_DEPTH) return -2;
  const tm_iceberg_field *kids[2] = {NULL, NULL};
  size_t n = 0;
  if (t->id == TM_ICEBERG_STRUCT) {
    for (size_t i = 0; i < t->n_fields; i++) {
      if (t->fields[i].id == id) return parent;
      int32_t p = parent_of(t->fields[i].type, t->fields[i].id, id, depth + 1);
      if (p != -2) return p;
    }
    return -2;
  }
  if (t->id == TM_ICEBERG_LIST) kids[n++] = t->element;
  if (t->id == TM_ICEBERG_MAP) {
    kids[n++] = t->key;
    kids[n++] = t->value;
  }
  for (size_t i = 0; i < n; i++) {
    if (kids[i]->id == id) return parent;
    int32_t p = parent_of(kids[i]->type, kids[i]->id, id, depth + 1);
    if (p != -2) return p;
  }
  return -2;
}

typedef struct evolve_ctx {
  const tm_iceberg_schema *cur;
  int32_t last_column_id; /* ids above it are new */
  int32_t *seen;          /* ids met in the new schema, to refuse a repeated one */
  size_t n_seen, cap_seen;
  tm_error *err;
} evolve_ctx;

static int check_field(evolve_ctx *c, const tm_iceberg_field *f, int32_t parent,
                       const char *path, int depth);

/* The members of type t (held by member `self`, -1 at the top). */
static int check_type(evolve_ctx *c, const tm_iceberg_type *t, int32_t self, const char *path,
                      int depth) {
  if (depth > TM_ICEBERG__MAX_DEPTH)
    return tm_error_set(c->err, TM_EINVALID, "schema nests too deeply");
  switch (t->id) {
    case TM_ICEBERG_STRUCT:
      for (size_t i = 0; i < t->n_fields; i++)
        TM_TRY(check_field(c, &t->fields[i], self, path, depth + 1));
      return TM_OK;
    case TM_ICEBERG_LIST: return check_field(c, t->element, self, path, depth + 1);
    case TM_ICEBERG_MAP:
      TM_TRY(check_field(c, t->key, self, path, depth + 1));
      return check_field(c, t->value, self, path, depth + 1);
    default: return TM_OK;
  }
}

/* One member of the new schema (held by member `parent`) against the current one. */
static int check_field(evolve_ctx *c, const tm_iceberg_field *f, int32_t parent,
                       const char *path, int depth) {
  char here[512];
  snprintf(here, sizeof here, "%s%s%s", path, *path ? "." : "", f->name ? f->name : "element");
  for (size_t i = 0; i < c->n_seen; i++) {
    if (c->seen[i] == f->id)
      return tm_error_set(c->err, TM_EINVALID, "field '%s': id %d is used twice", here, (int)f->id);
  }
  if (c->n_seen == c->cap_seen) {
    size_t cap = c->cap_seen ? c->cap_seen * 2 : 64;
    int32_t *p = tm_reallocarray(c->seen, cap, sizeof *p);
    if (!p) return tm_error_nomem(c->err);
    c->seen = p;
    c->cap_seen = cap;
  }
  c->seen[c->n_seen++] = f->id;
  const tm_iceberg_field *old = tm_iceberg_schema_find_id(c->cur, f->id);
  if (!old) {
    if (f->id <= c->last_column_id) {
      return tm_error_set(c->err, TM_EINVALID,
                          "field '%s': id %d is not a field of the current schema (leave \"id\" "
                          "out to add a field)",
                          here, (int)f->id);
    }
    if (f->required && !f->initial_default) {
      return tm_error_set(c->err, TM_EINVALID,
                          "field '%s': a new field must be optional, or have an "
                          "\"initial-default\" (rows written before it have no value)",
                          here);
    }
    return check_type(c, f->type, f->id, here, depth);
  }
  if (parent_of(c->cur->root, -1, f->id, 0) != parent) {
    return tm_error_set(c->err, TM_EINVALID,
                        "field '%s': id %d is a member of another struct in the current schema; "
                        "a field cannot move between structs",
                        here, (int)f->id);
  }
  if (f->required && !old->required) {
    return tm_error_set(c->err, TM_EINVALID,
                        "field '%s': an optional field cannot become required (old rows may hold "
                        "NULL)",
                        here);
  }
  bool old_prim = tm_iceberg_type_is_primitive(old->type);
  bool new_prim = tm_iceberg_type_is_primitive(f->type);
  if (old_prim != new_prim || (!new_prim && old->type->id != f->type->id) ||
      (new_prim && !promotable(old->type, f->type))) {
    return tm_error_set(c->err, TM_EINVALID,
                        "field '%s': %s cannot become %s (Iceberg allows int -> long, float -> "
                        "double and wider decimals of one scale; a struct, list or map keeps "
                        "its kind)",
                        here,
                        old->type->text ? old->type->text : tm_iceberg_type_name(old->type->id),
                        f->type->text ? f->type->text : tm_iceberg_type_name(f->type->id));
  }
  return check_type(c, f->type, f->id, here, depth);
}

static bool schema_has(const tm_iceberg_schema *s, int32_t id) {
  return tm_iceberg_schema_find_id(s, id) != NULL;
}

int tm_iceberg_update_schema(tm_iceberg_table *t, const char *schema_json, tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_schema *cur = tm_iceberg_metadata_current_schema(m);
  if (!cur) return tm_error_set(err, TM_EINVALID, "the table has no current schema");
  json_t *s = NULL, *root = NULL;
  TM_TRY(tm_iceberg__schema_json(schema_json, &s, err));
  tm_arena a;
  tm_arena_init(&a, EVOLVE_ARENA);
  evolve_ctx c = {cur, m->last_column_id, NULL, 0, 0, err};
  int rc;
  inherit_inner_ids(s, cur, -1, 0);
  int32_t max_id = m->last_column_id;
  tm_iceberg__max_explicit_id(s, &max_id, 0);
  if (max_id > m->last_column_id) {
    rc = tm_error_set(err, TM_EINVALID,
                      "field id %d is above the table's last-column-id %d: leave \"id\" out to "
                      "add a field",
                      (int)max_id, (int)m->last_column_id);
    goto done;
  }
  int32_t next = m->last_column_id + 1;
  TM_CHECK(tm_iceberg__assign_ids(s, &next, &max_id, 0, err));
  int32_t sid = 0;
  for (size_t i = 0; i < m->n_schemas; i++)
    if (m->schemas[i].schema_id >= sid) sid = m->schemas[i].schema_id + 1;
  json_object_set_new(s, "schema-id", json_integer(sid));
  tm_iceberg_schema parsed;
  memset(&parsed, 0, sizeof parsed);
  rc = tm_iceberg__parse_schema(&a, s, &parsed, "schema", err);
  if (rc < 0) {
    rc = tm_error_set(err, TM_EINVALID, "%s", err->message);
    goto done;
  }
  if (parsed.root->n_fields == 0) {
    rc = tm_error_set(err, TM_EINVALID, "schema has no columns");
    goto done;
  }
  TM_CHECK(check_type(&c, parsed.root, -1, "", 0));
  /* What the table's partitioning and row identity use cannot be dropped. */
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, m->default_spec_id);
  for (size_t i = 0; spec && i < spec->n_fields; i++) {
    if (schema_has(&parsed, spec->fields[i].source_id)) continue;
    const tm_iceberg_field *gone = tm_iceberg_schema_find_id(cur, spec->fields[i].source_id);
    rc = tm_error_set(err, TM_EINVALID,
                      "field '%s' cannot be dropped: partition field '%s' is derived from it",
                      gone ? gone->name : "?", spec->fields[i].name);
    goto done;
  }
  for (size_t i = 0; i < m->n_sort_orders; i++) {
    const tm_iceberg_sort_order *so = &m->sort_orders[i];
    if (so->order_id != m->default_sort_order_id) continue;
    for (size_t k = 0; k < so->n_fields; k++) {
      if (schema_has(&parsed, so->fields[k].source_id)) continue;
      const tm_iceberg_field *gone = tm_iceberg_schema_find_id(cur, so->fields[k].source_id);
      rc = tm_error_set(err, TM_EINVALID,
                        "field '%s' cannot be dropped: the table's sort order sorts by it",
                        gone ? gone->name : "?");
      goto done;
    }
  }
  json_t *ident = json_array();
  if (!ident) {
    rc = tm_error_nomem(err);
    goto done;
  }
  json_object_set_new(s, "identifier-field-ids", ident);
  for (size_t i = 0; i < cur->n_identifier_ids; i++) {
    if (!schema_has(&parsed, cur->identifier_ids[i])) {
      const tm_iceberg_field *gone = tm_iceberg_schema_find_id(cur, cur->identifier_ids[i]);
      rc = tm_error_set(err, TM_EINVALID, "field '%s' cannot be dropped: it identifies rows",
                        gone ? gone->name : "?");
      goto done;
    }
    json_array_append_new(ident, json_integer(cur->identifier_ids[i]));
  }
  TM_CHECK(tm_iceberg__load_base_json(t, &root, err));
  json_t *schemas = json_object_get(root, "schemas");
  if (!json_is_array(schemas)) {
    rc = tm_error_set(err, TM_ECORRUPT, "the table's metadata has no \"schemas\" list");
    goto done;
  }
  json_array_append(schemas, s);
  json_object_set_new(root, "current-schema-id", json_integer(sid));
  if (max_id > m->last_column_id) json_object_set_new(root, "last-column-id", json_integer(max_id));
  json_object_del(root, "schema"); /* v1's single schema would disagree */
  rc = tm_iceberg__publish(t, root, err);
done:
  tm_free(c.seen);
  tm_arena_dispose(&a);
  json_decref(root);
  json_decref(s);
  return rc;
}
