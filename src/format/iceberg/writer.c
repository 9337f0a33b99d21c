/*
 * writer.c - authoring Iceberg tables: creating and replacing tables,
 * publishing metadata versions, rollback and snapshot expiry (format
 * layer). Snapshot commits are in commit.c. See writer.h.
 */
#include <ctype.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <time.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/writer.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/time.h"

/* ---- random ids ---------------------------------------------------------- */

static void random_bytes(uint8_t *p, size_t n) {
  if (getrandom(p, n, 0) == (ssize_t)n) return;
  /* No entropy source: mix the clock, a counter and an address. */
  static uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t h = tm_hash_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                             (uint64_t)(uintptr_t)p ^ ++counter);
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) h = tm_hash_mix64(h + i);
    p[i] = (uint8_t)(h >> (8 * (i % 8)));
  }
}

void tm_iceberg_uuid(char out[37]) {
  uint8_t b[16];
  random_bytes(b, 16);
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
  static const char hex[] = "0123456789abcdef";
  size_t k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[k++] = '-';
    out[k++] = hex[b[i] >> 4];
    out[k++] = hex[b[i] & 15];
  }
  out[k] = '\0';
}

int64_t tm_iceberg_random_id(void) {
  uint8_t b[8];
  int64_t v = 0;
  while (v == 0) {
    random_bytes(b, 8);
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = u << 8 | b[i];
    v = (int64_t)(u & INT64_MAX);
  }
  return v;
}

/* ---- base metadata and publishing ------------------------------------------ */

int tm_iceberg__load_base_json(const tm_iceberg_table *t, json_t **out, tm_error *err) {
  const char *path = tm_iceberg_table_metadata_path(t);
  if (!path) {
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "this table has no metadata file to commit against (catalog table)");
  }
  char *data = NULL, *plain = NULL;
  size_t len = 0, plen = 0;
  TM_TRY(tm_iceberg__read_all(tm_iceberg_table_io(t), path, TM_ICEBERG__MAX_METADATA_BYTES,
                              &data, &len, err));
  int rc = tm_iceberg__maybe_gunzip(data, len, &plain, &plen, err);
  if (rc < 0) {
    tm_free(data);
    return rc;
  }
  json_error_t jerr;
  json_t *root = json_loadb(plain ? plain : data, plain ? plen : len, 0, &jerr);
  tm_free(data);
  tm_free(plain);
  if (!root || !json_is_object(root)) {
    json_decref(root);
    return TM_CORRUPT(err, "%s: not valid JSON: %s", path, jerr.text);
  }
  *out = root;
  return TM_OK;
}

/* The version number in a metadata file name: vN[.gz].metadata.json or NNNNN-... */
static int64_t metadata_version(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *p = base[0] == 'v' ? base + 1 : base;
  int64_t n = 0;
  int digits = 0;
  while (isdigit((unsigned char)*p) && digits < 18) n = n * 10 + (*p++ - '0'), digits++;
  return digits ? n : -1;
}

static int64_t json_long(json_t *o, const char *key, int64_t dflt) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Appends obj to the array member key of root (creating it). */
static int append_to(json_t *root, const char *key, json_t *obj, tm_error *err) {
  if (!obj) return tm_error_nomem(err);
  json_t *arr = json_object_get(root, key);
  if (!json_is_array(arr)) {
    arr = json_array();
    if (!arr || json_object_set_new(root, key, arr) < 0) {
      json_decref(obj);
      return tm_error_nomem(err);
    }
  }
  if (json_array_append_new(arr, obj) < 0) return tm_error_nomem(err);
  return TM_OK;
}

static int write_new_version(tm_iceberg_io *io, const char *metadata_dir_real,
                             const char *text, size_t len, int64_t version, tm_error *err) {
  char name[64];
  snprintf(name, sizeof name, "v%lld.metadata.json", (long long)version);
  char *path = tm_path_join(metadata_dir_real, name);
  char *hint = tm_path_join(metadata_dir_real, "version-hint.text");
  int rc;
  if (!path || !hint) {
    rc = tm_error_nomem(err);
    goto done;
  }
  rc = io->write(io->payload, path, text, len, true, err);
  if (rc == TM_ECONFLICT) {
    rc = tm_error_set(err, TM_ECONFLICT,
                      "%s: another commit created version %lld first; nothing was changed",
                      path, (long long)version);
    goto done;
  }
  if (rc < 0) goto done;
  snprintf(name, sizeof name, "%lld", (long long)version);
  rc = io->write(io->payload, hint, name, strlen(name), false, err);
done:
  tm_free(path);
  tm_free(hint);
  return rc;
}

int tm_iceberg__publish(const tm_iceberg_table *t, json_t *root, tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  tm_iceberg_io *io = tm_iceberg_table_io(t);
  if (!io->write) return tm_error_set(err, TM_EUNSUPPORTED, "this table cannot be written to");
  const char *base_path = tm_iceberg_table_metadata_path(t);
  int64_t version = metadata_version(base_path);
  if (version < 0) {
    return tm_error_set(err, TM_EUNSUPPORTED, "%s: cannot tell the metadata version from its name",
                        base_path);
  }
  int64_t now = tm_now_ms();
  if (now <= m->last_updated_ms) now = m->last_updated_ms + 1;
  json_object_set_new(root, "last-updated-ms", json_integer(now));
  /* metadata-log: the file this version replaces, in location terms. */
  const char *base = strrchr(base_path, '/');
  base = base ? base + 1 : base_path;
  tm_arena a;
  tm_arena_init(&a, 1 << 20);
  char rel[512];
  snprintf(rel, sizeof rel, "metadata/%s", base);
  const char *logged = tm_iceberg__location_path(&a, t, rel, err);
  int rc = logged ? TM_OK : err->code;
  if (rc == TM_OK) {
    rc = append_to(root, "metadata-log",
                   json_pack("{s:I, s:s}", "timestamp-ms", (json_int_t)m->last_updated_ms,
                             "metadata-file", logged),
                   err);
  }
  /* Keep write.metadata.previous-versions-max (100) entries, as Java does. */
  const char *keep_s = tm_iceberg_metadata_property(m, "write.metadata.previous-versions-max");
  int64_t keep = 100;
  if (keep_s && (tm_parse_int64(keep_s, strlen(keep_s), &keep) < 0 || keep < 1)) keep = 100;
  json_t *mlog = json_object_get(root, "metadata-log");
  while (rc == TM_OK && json_is_array(mlog) && (int64_t)json_array_size(mlog) > keep) {
    json_array_remove(mlog, 0);
  }
  char *text = NULL;
  if (rc == TM_OK) {
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text) rc = tm_error_nomem(err);
  }
  /* What we write must read back. */
  if (rc == TM_OK) {
    tm_iceberg_metadata *check = NULL;
    rc = tm_iceberg_metadata_parse(&check, text, strlen(text), "new metadata", err);
    tm_iceberg_metadata_free(check);
  }
  char *real_dir = NULL;
  if (rc == TM_OK) {
    const char *mdir = tm_iceberg__location_path(&a, t, "metadata", err);
    rc = mdir ? tm_iceberg_table_resolve(t, mdir, &real_dir, err) : err->code;
  }
  if (rc == TM_OK) rc = write_new_version(io, real_dir, text, strlen(text), version + 1, err);
  free(text); /* lint-ok: allocated by jansson */
  tm_free(real_dir);
  tm_arena_dispose(&a);
  return rc;
}

/* ---- schemas and partition text -------------------------------------------- */

/* Assigns missing ids in a type tree (struct "id", list "element-id", map
 * "key-id"/"value-id"), in depth-first order; tracks the highest id. */
int tm_iceberg__assign_ids(json_t *type, int32_t *next, int32_t *max_id, int depth,
                           tm_error *err) {
  if (depth > 32) return tm_error_set(err, TM_EINVALID, "schema nests too deeply");
  if (!json_is_object(type)) return TM_OK;
  const char *kind = json_string_value(json_object_get(type, "type"));
  if (!kind) return TM_OK;
  if (strcmp(kind, "struct") == 0) {
    json_t *fields = json_object_get(type, "fields");
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
      json_t *id = json_object_get(f, "id");
      if (!json_is_integer(id)) json_object_set_new(f, "id", json_integer((*next)++));
      int32_t v = (int32_t)json_integer_value(json_object_get(f, "id"));
      if (v > *max_id) *max_id = v;
      if (!json_object_get(f, "required")) json_object_set_new(f, "required", json_false());
      TM_TRY(tm_iceberg__assign_ids(json_object_get(f, "type"), next, max_id, depth + 1, err));
    }
  } else if (strcmp(kind, "list") == 0) {
    if (!json_is_integer(json_object_get(type, "element-id")))
      json_object_set_new(type, "element-id", json_integer((*next)++));
    int32_t v = (int32_t)json_integer_value(json_object_get(type, "element-id"));
    if (v > *max_id) *max_id = v;
    if (!json_object_get(type, "element-required"))
      json_object_set_new(type, "element-required", json_false());
    TM_TRY(tm_iceberg__assign_ids(json_object_get(type, "element"), next, max_id, depth + 1, err));
  } else if (strcmp(kind, "map") == 0) {
    const char *keys[2] = {"key-id", "value-id"};
    for (int k = 0; k < 2; k++) {
      if (!json_is_integer(json_object_get(type, keys[k])))
        json_object_set_new(type, keys[k], json_integer((*next)++));
      int32_t v = (int32_t)json_integer_value(json_object_get(type, keys[k]));
      if (v > *max_id) *max_id = v;
    }
    if (!json_object_get(type, "value-required"))
      json_object_set_new(type, "value-required", json_false());
    TM_TRY(tm_iceberg__assign_ids(json_object_get(type, "key"), next, max_id, depth + 1, err));
    TM_TRY(tm_iceberg__assign_ids(json_object_get(type, "value"), next, max_id, depth + 1, err));
  }
  return TM_OK;
}

/* Largest explicit id in a type tree, so that assigned ids never collide. */
void tm_iceberg__max_explicit_id(json_t *type, int32_t *max_id, int depth) {
  if (depth > 32 || !json_is_object(type)) return;
  const char *keys[4] = {"id", "element-id", "key-id", "value-id"};
  for (int k = 0; k < 4; k++) {
    json_t *v = json_object_get(type, keys[k]);
    if (json_is_integer(v) && json_integer_value(v) > *max_id)
      *max_id = (int32_t)json_integer_value(v);
  }
  json_t *fields = json_object_get(type, "fields");
  size_t i;
  json_t *f;
  json_array_foreach(fields, i, f) {
    tm_iceberg__max_explicit_id(f, max_id, depth + 1);
    tm_iceberg__max_explicit_id(json_object_get(f, "type"), max_id, depth + 1);
  }
  tm_iceberg__max_explicit_id(json_object_get(type, "element"), max_id, depth + 1);
  tm_iceberg__max_explicit_id(json_object_get(type, "key"), max_id, depth + 1);
  tm_iceberg__max_explicit_id(json_object_get(type, "value"), max_id, depth + 1);
}

static const char *iceberg_type_of(const tm_type *t, char *buf, size_t cap) {
  switch (t->id) {
    case TM_TYPE_BOOL: return "boolean";
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16: return "int";
    case TM_TYPE_INT64:
    case TM_TYPE_UINT32: return "long";
    case TM_TYPE_FLOAT32: return "float";
    case TM_TYPE_FLOAT64: return "double";
    case TM_TYPE_DECIMAL128:
      snprintf(buf, cap, "decimal(%d, %d)", (int)t->precision, (int)t->scale);
      return buf;
    case TM_TYPE_UTF8: return "string";
    case TM_TYPE_BINARY: return "binary";
    case TM_TYPE_FIXED_BINARY:
      if (t->uuid && t->width == 16) return "uuid";
      snprintf(buf, cap, "fixed[%d]", (int)t->width);
      return buf;
    case TM_TYPE_DATE32: return "date";
    case TM_TYPE_TIME64: return "time";
    case TM_TYPE_TIMESTAMP: return t->utc ? "timestamptz" : "timestamp";
    default: return NULL;
  }
}

/* The Iceberg type JSON of a columnar type (a string for primitives, an
 * object for struct, list and map, without ids: assign_ids gives them),
 * or NULL (*bad: the type without an Iceberg type, else out of memory). */
static json_t *iceberg_type_json(const tm_type *t, int depth, const tm_type **bad) {
  char buf[64];
  if (depth > 32) {
    *bad = t;
    return NULL;
  }
  if (!tm_type_is_nested(t)) {
    const char *ty = iceberg_type_of(t, buf, sizeof buf);
    if (!ty) *bad = t;
    return ty ? json_string(ty) : NULL;
  }
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_LIST) {
    json_t *e = iceberg_type_json(&nt->child[0], depth + 1, bad);
    return e ? json_pack("{s:s, s:o, s:b}", "type", "list", "element", e, "element-required",
                         !nt->nullable[0])
             : NULL;
  }
  if (t->id == TM_TYPE_MAP) {
    const tm_ntype *entries = nt->child[0].nested;
    json_t *k = iceberg_type_json(&entries->child[0], depth + 1, bad);
    json_t *v = k ? iceberg_type_json(&entries->child[1], depth + 1, bad) : NULL;
    if (!v) {
      json_decref(k);
      return NULL;
    }
    return json_pack("{s:s, s:o, s:o, s:b}", "type", "map", "key", k, "value", v,
                     "value-required", !entries->nullable[1]);
  }
  json_t *fields = json_array();
  for (size_t i = 0; fields && i < nt->n; i++) {
    json_t *ft = iceberg_type_json(&nt->child[i], depth + 1, bad);
    if (!ft) {
      json_decref(fields);
      return NULL;
    }
    json_array_append_new(fields, json_pack("{s:s, s:b, s:o}", "name", nt->name[i], "required",
                                            !nt->nullable[i], "type", ft));
  }
  return fields ? json_pack("{s:s, s:o}", "type", "struct", "fields", fields) : NULL;
}

int tm_iceberg__schema_json(const char *text, json_t **out, tm_error *err) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  *out = NULL;
  if (!j) return tm_error_set(err, TM_EINVALID, "schema is not valid JSON: %s", jerr.text);
  if (json_is_array(j)) {
    *out = json_pack("{s:s, s:o}", "type", "struct", "fields", j);
  } else if (json_is_object(j) && json_is_array(json_object_get(j, "fields"))) {
    *out = j;
    json_object_set_new(j, "type", json_string("struct"));
  } else {
    json_decref(j);
    return tm_error_set(err, TM_EINVALID,
                        "schema JSON must be a list of fields or an object with \"fields\"");
  }
  return *out ? TM_OK : tm_error_nomem(err);
}

/* The schema JSON for a new table, ids assigned, in *out (new reference). */
static int build_schema(const tm_iceberg_create_options *opts, int32_t schema_id,
                        int32_t first_id, json_t **out, int32_t *last_column_id, tm_error *err) {
  json_t *s = NULL;
  if (opts->schema_json) {
    TM_TRY(tm_iceberg__schema_json(opts->schema_json, &s, err));
  } else if (opts->schema) {
    json_t *fields = json_array();
    s = json_pack("{s:s, s:o}", "type", "struct", "fields", fields);
    for (size_t i = 0; s && i < opts->schema->n_cols; i++) {
      const tm_column *c = &opts->schema->cols[i];
      /* Nested columns become Iceberg structs, lists and maps, with fresh
       * ids at every level (assign_ids), requiredness kept. */
      const tm_type *bad = NULL;
      json_t *ty = iceberg_type_json(&c->type, 0, &bad);
      if (!ty) {
        json_decref(s);
        if (!bad) return tm_error_nomem(err);
        char tn[256], whole[256];
        tm_type_name(bad, tn, sizeof tn);
        tm_type_name(&c->type, whole, sizeof whole);
        if (bad == &c->type)
          return tm_error_set(err, TM_EUNSUPPORTED, "column %s: type %s has no Iceberg type",
                              c->name, tn);
        return tm_error_set(err, TM_EUNSUPPORTED,
                            "column %s (%s): member type %s has no Iceberg type", c->name, whole,
                            tn);
      }
      json_array_append_new(fields, json_pack("{s:s, s:b, s:o}", "name", c->name, "required",
                                              !c->nullable, "type", ty));
    }
  } else {
    return tm_error_set(err, TM_EINVALID, "a new table needs a schema");
  }
  if (!s) return tm_error_nomem(err);
  int32_t max_id = first_id - 1;
  tm_iceberg__max_explicit_id(s, &max_id, 0);
  int32_t next = max_id + 1;
  int rc = tm_iceberg__assign_ids(s, &next, &max_id, 0, err);
  if (rc < 0) {
    json_decref(s);
    return rc;
  }
  json_object_set_new(s, "schema-id", json_integer(schema_id));
  /* Validate through the reader. */
  tm_arena a;
  tm_arena_init(&a, 1 << 24);
  tm_iceberg_schema parsed;
  memset(&parsed, 0, sizeof parsed);
  rc = tm_iceberg__parse_schema(&a, s, &parsed, "schema", err);
  if (rc == TM_OK && parsed.root->n_fields == 0) {
    rc = tm_error_set(err, TM_EINVALID, "schema has no columns");
  }
  tm_arena_dispose(&a);
  if (rc < 0) {
    json_decref(s);
    return rc == TM_ECORRUPT ? tm_error_set(err, TM_EINVALID, "%s", err->message) : rc;
  }
  *last_column_id = max_id;
  *out = s;
  return TM_OK;
}

static char *trim_copy(const char *p, size_t len) {
  tm_strview v = tm_sv_trim(tm_sv(p, len));
  return tm_strndup(v.ptr, v.len);
}

/* The struct member named seg (exact, then ASCII case-insensitive), or NULL. */
static const tm_iceberg_field *member_named(const tm_iceberg_type *st, const char *seg,
                                            size_t len) {
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < st->n_fields; i++) {
      const char *n = st->fields[i].name;
      if (strlen(n) == len &&
          (pass == 0 ? memcmp(n, seg, len) == 0 : strncasecmp(n, seg, len) == 0))
        return &st->fields[i];
    }
  }
  return NULL;
}

/*
 * The partition source named by col: a top-level column, or a dotted path
 * through structs to a member ("payload.user.id"). Iceberg wants a
 * primitive source that is not inside a list or a map; anything else is
 * TM_EINVALID naming the path. A top-level name holding a dot wins over a path.
 */
static int resolve_source(const tm_iceberg_schema *schema, const char *col,
                          const tm_iceberg_field **out, char *name, size_t cap, tm_error *err) {
  const tm_iceberg_field *f = tm_iceberg_schema_find_name(schema, col);
  const char *p = col;
  if (f) snprintf(name, cap, "%s", f->name);
  if (!f) {
    size_t used = 0;
    const tm_iceberg_type *st = schema->root;
    while (true) {
      const char *dot = strchr(p, '.');
      size_t len = dot ? (size_t)(dot - p) : strlen(p);
      f = member_named(st, p, len);
      if (!f) {
        return tm_error_set(err, TM_EINVALID, "partition column \"%s\" is not in the schema",
                            col);
      }
      /* The partition field's name: the members' names joined with '_'. */
      int w = snprintf(name + used, used < cap ? cap - used : 0, "%s%s", used ? "_" : "",
                       f->name);
      used += w > 0 ? (size_t)w : 0;
      if (used >= cap) return tm_error_set(err, TM_EINVALID, "partition column path too long");
      if (!dot) break;
      if (f->type->id == TM_ICEBERG_LIST || f->type->id == TM_ICEBERG_MAP) {
        return tm_error_set(err, TM_EINVALID,
                            "partition column \"%s\": %.*s is a %s (a partition source must "
                            "not be inside a list or a map)",
                            col, (int)(dot - col), col, tm_iceberg_type_name(f->type->id));
      }
      if (f->type->id != TM_ICEBERG_STRUCT) {
        return tm_error_set(err, TM_EINVALID,
                            "partition column \"%s\": %.*s is a %s, not a struct", col,
                            (int)(dot - col), col, tm_iceberg_type_name(f->type->id));
      }
      st = f->type;
      p = dot + 1;
    }
  }
  if (!tm_iceberg_type_is_primitive(f->type)) {
    return tm_error_set(err, TM_EINVALID,
                        "partition column \"%s\" is a %s (a partition source must be a "
                        "primitive)",
                        col, tm_iceberg_type_name(f->type->id));
  }
  *out = f;
  return TM_OK;
}

int tm_iceberg_partition_text_to_json(const char *text, const tm_iceberg_schema *schema,
                                      int32_t first_field_id, tm_buf *out, tm_error *err) {
  json_t *arr = json_array();
  if (!arr) return tm_error_nomem(err);
  int rc = TM_OK;
  int32_t fid = first_field_id;
  const char *p = text;
  while (rc == TM_OK && *p) {
    /* one item up to a comma at depth 0 */
    const char *start = p;
    int depth = 0;
    while (*p && (depth > 0 || *p != ',')) {
      if (*p == '(' || *p == '[') depth++;
      if (*p == ')' || *p == ']') depth--;
      p++;
    }
    char *item = trim_copy(start, (size_t)(p - start));
    if (*p == ',') p++;
    if (!item) {
      rc = tm_error_nomem(err);
      break;
    }
    if (!*item) {
      tm_free(item);
      continue;
    }
    char *tr_text = NULL, *col = NULL;
    char *open = strchr(item, '(');
    size_t ilen = strlen(item);
    if (!open) {
      tr_text = tm_strdup("identity");
      col = tm_strdup(item);
    } else if (item[ilen - 1] == ')') {
      char *inner = trim_copy(open + 1, (size_t)(item + ilen - 1 - open - 1));
      char *name = trim_copy(item, (size_t)(open - item));
      char *comma = inner ? strchr(inner, ',') : NULL;
      if (name && inner && comma && (strcmp(name, "bucket") == 0 || strcmp(name, "truncate") == 0)) {
        char *num = trim_copy(inner, (size_t)(comma - inner));
        col = trim_copy(comma + 1, strlen(comma + 1));
        tr_text = num ? tm_asprintf("%s[%s]", name, num) : NULL;
        tm_free(num);
      } else if (name && inner) {
        tr_text = tm_strdup(name);
        col = tm_strdup(inner);
      }
      tm_free(inner);
      tm_free(name);
    }
    if (!tr_text || !col) {
      rc = tm_error_set(err, TM_EINVALID, "bad partition item \"%s\" (want col, transform(col), "
                                          "bucket[N](col) or truncate[W](col))", item);
    }
    tm_iceberg_transform tr = tm_iceberg_transform_parse(tr_text);
    const tm_iceberg_field *f = NULL;
    char base[200];
    tm_type rt;
    if (rc == TM_OK && tr.kind == TM_ICEBERG_TR_UNKNOWN) {
      rc = tm_error_set(err, TM_EINVALID, "unknown partition transform \"%s\"", tr_text);
    } else if (rc == TM_OK && resolve_source(schema, col, &f, base, sizeof base, err) < 0) {
      rc = err->code;
    } else if (rc == TM_OK && tm_iceberg_transform_result(&tr, f->type, &rt, err) < 0) {
      rc = tm_error_set(err, TM_EINVALID, "partition %s: %s", item, err->message);
    }
    if (rc == TM_OK) {
      static const char *suffix[] = {"", "bucket", "trunc", "year", "month", "day", "hour", "null"};
      char pname[256];
      /* A struct member's partition field is named after its path with
       * '_' for '.' (payload_region): partition names become Avro field
       * names in manifests, where a dot is not allowed. */
      if (tr.kind == TM_ICEBERG_TR_IDENTITY) {
        snprintf(pname, sizeof pname, "%s", base);
      } else {
        snprintf(pname, sizeof pname, "%s_%s", base, suffix[tr.kind]);
      }
      json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:i}", "name", pname, "transform",
                                           tr_text, "source-id", (int)f->id, "field-id",
                                           (int)fid++));
    }
    tm_free(tr_text);
    tm_free(col);
    tm_free(item);
  }
  if (rc == TM_OK) {
    char *s = json_dumps(arr, JSON_COMPACT);
    if (!s) {
      rc = tm_error_nomem(err);
    } else {
      tm_buf_clear(out);
      rc = tm_buf_puts(out, s, err);
      free(s); /* lint-ok: allocated by jansson */
    }
  }
  json_decref(arr);
  return rc;
}

/* ---- create and replace ------------------------------------------------------ */

static int spec_fields_for(const char *partition, json_t *schema_json, int32_t first_id,
                           json_t **out, int32_t *last_partition_id, tm_error *err) {
  *out = json_array();
  *last_partition_id = first_id - 1;
  if (!*out) return tm_error_nomem(err);
  if (!partition || !*partition) return TM_OK;
  tm_arena a;
  tm_arena_init(&a, 1 << 24);
  tm_iceberg_schema s;
  memset(&s, 0, sizeof s);
  tm_buf buf = TM_BUF_INIT(1 << 20);
  int rc = tm_iceberg__parse_schema(&a, schema_json, &s, "schema", err);
  if (rc == TM_OK) rc = tm_iceberg_partition_text_to_json(partition, &s, first_id, &buf, err);
  if (rc == TM_OK) {
    json_t *fields = json_loads(buf.ptr, 0, NULL);
    if (!fields) {
      rc = tm_error_nomem(err);
    } else {
      json_decref(*out);
      *out = fields;
      *last_partition_id = first_id + (int32_t)json_array_size(fields) - 1;
    }
  }
  tm_buf_dispose(&buf);
  tm_arena_dispose(&a);
  return rc;
}

static char *default_location(const char *root) {
  if (strstr(root, "://")) return tm_strdup(root);
  if (root[0] == '/') return tm_asprintf("file://%s", root);
  char *cwd = getcwd(NULL, 0);
  if (!cwd) return NULL;
  char *loc = tm_asprintf("file://%s/%s", cwd, root);
  free(cwd); /* lint-ok: allocated by getcwd */
  return loc;
}

static int create_new(tm_iceberg_io *io, const char *table_root,
                      const tm_iceberg_create_options *opts, tm_error *err) {
  char *existing = NULL;
  int rc = tm_iceberg_locate_metadata(io, table_root, &existing, err);
  if (rc == TM_OK) {
    rc = tm_error_set(err, TM_ECONFLICT, "%s: a table already exists here (%s)", table_root,
                      existing);
    tm_free(existing);
    return rc;
  }
  if (rc != TM_ENOTFOUND) return rc;
  int fv = opts->format_version ? opts->format_version : 2;
  if (fv != 2 && fv != 3) {
    return tm_error_set(err, TM_EINVALID, "format version %d: tidemark writes versions 2 and 3",
                        fv);
  }
  json_t *schema = NULL, *fields = NULL, *root = NULL;
  int32_t last_col = 0, last_pid = 999;
  char *location = opts->location ? tm_strdup(opts->location) : default_location(table_root);
  char *text = NULL, *mdir = NULL;
  if (!location) return tm_error_nomem(err);
  TM_CHECK(build_schema(opts, 0, 1, &schema, &last_col, err));
  TM_CHECK(spec_fields_for(opts->partition, schema, 1000, &fields, &last_pid, err));
  char uuid[37];
  tm_iceberg_uuid(uuid);
  json_t *props = json_object();
  for (size_t i = 0; opts->properties && i < opts->properties->len; i++) {
    json_object_set_new(props, opts->properties->items[i].key,
                        json_string(opts->properties->items[i].value));
  }
  if (!json_object_get(props, "write.format.default"))
    json_object_set_new(props, "write.format.default", json_string("parquet"));
  root = json_pack(
      "{s:i, s:s, s:s, s:I, s:I, s:i, s:i, s:[O], s:i, s:[{s:i, s:O}], s:i, s:i, s:[{s:i, "
      "s:[]}], s:o, s:I, s:[], s:[], s:[]}",
      "format-version", fv, "table-uuid", uuid, "location", location, "last-sequence-number",
      (json_int_t)0, "last-updated-ms", (json_int_t)tm_now_ms(), "last-column-id",
      (int)last_col, "current-schema-id", 0, "schemas", schema, "default-spec-id", 0,
      "partition-specs", "spec-id", 0, "fields", fields, "last-partition-id", (int)last_pid,
      "default-sort-order-id", 0, "sort-orders", "order-id", 0, "fields", "properties", props,
      "current-snapshot-id", (json_int_t)-1, "snapshots", "snapshot-log", "metadata-log");
  if (!root) {
    rc = tm_error_nomem(err);
    goto done;
  }
  /* v3: row lineage starts at 0 (spec, "Row Lineage"). */
  if (fv == 3) json_object_set_new(root, "next-row-id", json_integer(0));
  text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (!text) {
    rc = tm_error_nomem(err);
    goto done;
  }
  tm_iceberg_metadata *check = NULL;
  TM_CHECK(tm_iceberg_metadata_parse(&check, text, strlen(text), "new metadata", err));
  tm_iceberg_metadata_free(check);
  mdir = tm_path_join(table_root, "metadata");
  if (!mdir) {
    rc = tm_error_nomem(err);
    goto done;
  }
  rc = write_new_version(io, mdir, text, strlen(text), 1, err);
  if (rc == TM_ECONFLICT) {
    rc = tm_error_set(err, TM_ECONFLICT, "%s: a table was created here concurrently", table_root);
  }
done:
  json_decref(schema);
  json_decref(fields);
  json_decref(root);
  free(text); /* lint-ok: allocated by jansson */
  tm_free(mdir);
  tm_free(location);
  return rc;
}

static int replace_existing(tm_iceberg_io *io, const char *table_root,
                            const tm_iceberg_create_options *opts, tm_error *err) {
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = table_root;
  tm_iceberg_table *t = NULL;
  json_t *root = NULL, *schema = NULL, *fields = NULL;
  int rc;
  TM_CHECK(tm_iceberg_table_open(&t, io, &o, err));
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  TM_CHECK(tm_iceberg__load_base_json(t, &root, err));
  char uuid[37];
  tm_iceberg_uuid(uuid);
  json_object_set_new(root, "table-uuid", json_string(uuid));
  if (opts->schema_json || opts->schema) {
    int32_t sid = 0, last_col = 0;
    for (size_t i = 0; i < m->n_schemas; i++)
      if (m->schemas[i].schema_id >= sid) sid = m->schemas[i].schema_id + 1;
    /* New columns get ids never used by this table (old data stays unambiguous). */
    TM_CHECK(build_schema(opts, sid, m->last_column_id + 1, &schema, &last_col, err));
    if (last_col < m->last_column_id) last_col = m->last_column_id;
    TM_CHECK(append_to(root, "schemas", json_incref(schema), err));
    json_object_set_new(root, "current-schema-id", json_integer(sid));
    json_object_set_new(root, "last-column-id", json_integer(last_col));
  }
  if (opts->partition) {
    int32_t spec_id = 0, last_pid = 0;
    for (size_t i = 0; i < m->n_specs; i++)
      if (m->specs[i].spec_id >= spec_id) spec_id = m->specs[i].spec_id + 1;
    json_t *cur_schema = schema;
    if (!cur_schema) {
      cur_schema = tm_iceberg__schema_to_json(tm_iceberg_metadata_current_schema(m));
      schema = cur_schema;
    }
    TM_CHECK(spec_fields_for(opts->partition, cur_schema, m->last_partition_id + 1, &fields,
                             &last_pid, err));
    TM_CHECK(append_to(root, "partition-specs",
                       json_pack("{s:i, s:O}", "spec-id", (int)spec_id, "fields", fields), err));
    json_object_set_new(root, "default-spec-id", json_integer(spec_id));
    if (last_pid > m->last_partition_id)
      json_object_set_new(root, "last-partition-id", json_integer(last_pid));
  }
  /* A new table: no snapshots, no history, no refs. */
  json_object_set_new(root, "current-snapshot-id", json_integer(-1));
  json_object_set_new(root, "snapshots", json_array());
  json_object_set_new(root, "snapshot-log", json_array());
  json_object_del(root, "refs");
  json_object_del(root, "statistics");
  json_object_del(root, "partition-statistics");
  TM_CHECK(tm_iceberg__publish(t, root, err));
done:
  json_decref(root);
  json_decref(schema);
  json_decref(fields);
  tm_iceberg_table_free(t);
  return rc;
}

int tm_iceberg_create_table(tm_iceberg_io *io, const char *table_root,
                            const tm_iceberg_create_options *opts, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  if (!io->write) return tm_error_set(err, TM_EUNSUPPORTED, "this storage cannot be written to");
  tm_iceberg_create_options dflt = TM_ICEBERG_CREATE_OPTIONS_INIT;
  if (!opts) opts = &dflt;
  return opts->replace ? replace_existing(io, table_root, opts, err)
                       : create_new(io, table_root, opts, err);
}

/* ---- rollback ---------------------------------------------------------------- */

static int set_current(json_t *root, int64_t id, int64_t now, tm_error *err) {
  json_object_set_new(root, "current-snapshot-id", json_integer(id));
  json_t *refs = json_object_get(root, "refs");
  if (!json_is_object(refs)) {
    refs = json_object();
    if (!refs) return tm_error_nomem(err);
    json_object_set_new(root, "refs", refs);
  }
  json_object_set_new(refs, "main", json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id,
                                               "type", "branch"));
  return append_to(root, "snapshot-log",
                   json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)now, "snapshot-id",
                             (json_int_t)id),
                   err);
}

int tm_iceberg__set_current(json_t *root, int64_t id, int64_t now, tm_error *err) {
  return set_current(root, id, now, err);
}

int tm_iceberg_rollback(tm_iceberg_table *base, int64_t snapshot_id, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(base);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  if (!tm_iceberg_metadata_snapshot(m, snapshot_id)) {
    return tm_error_set(err, TM_ENOTFOUND, "snapshot %lld is not in the table",
                        (long long)snapshot_id);
  }
  if (!cur || !tm_iceberg_is_ancestor(m, cur->snapshot_id, snapshot_id)) {
    return tm_error_set(err, TM_EINVALID,
                        "snapshot %lld is not an ancestor of the current snapshot",
                        (long long)snapshot_id);
  }
  json_t *root = NULL;
  TM_TRY(tm_iceberg__load_base_json(base, &root, err));
  int64_t now = tm_now_ms();
  if (now <= m->last_updated_ms) now = m->last_updated_ms + 1;
  int rc = set_current(root, snapshot_id, now, err);
  if (rc == TM_OK) rc = tm_iceberg__publish(base, root, err);
  json_decref(root);
  return rc;
}

/* ---- expire ------------------------------------------------------------------- */

/* Adds the match key of every file a snapshot reaches to set (value: a real
 * path to delete, owned by the set). with_entries: also data files. */
static int reach(const tm_iceberg_table *t, const tm_iceberg_snapshot *s, tm_map *set,
                 bool live_only, tm_error *err) {
  const char *paths[1] = {s->manifest_list};
  tm_iceberg_manifest_list *l = NULL;
  int rc = tm_iceberg_read_manifest_list(t, s, &l, err);
  if (rc < 0) return rc;
  for (size_t i = 0; i < 1 + l->n_files; i++) {
    const char *p = i == 0 ? paths[0] : l->files[i - 1].path;
    if (!p) continue;
    char *key = NULL;
    rc = tm_iceberg_table_path_key(t, p, &key, err);
    if (rc < 0) break;
    if (!tm_map_gets(set, key)) {
      char *real = NULL;
      rc = tm_iceberg_table_resolve(t, p, &real, err);
      if (rc == TM_OK) rc = tm_map_puts(set, key, real, NULL, err);
      if (rc < 0) {
        tm_free(real);
        tm_free(key);
        break;
      }
    }
    tm_free(key);
    if (i == 0) continue;
    tm_iceberg_manifest *man = NULL;
    rc = tm_iceberg_read_manifest(t, &l->files[i - 1], -1, &man, err);
    if (rc < 0) break;
    for (size_t k = 0; k < man->n_entries && rc == TM_OK; k++) {
      const tm_iceberg_data_file *f = &man->entries[k];
      if (live_only && f->status == TM_ICEBERG_DELETED) continue;
      rc = tm_iceberg_table_path_key(t, f->path, &key, err);
      if (rc < 0) break;
      if (!tm_map_gets(set, key)) {
        char *real = NULL;
        rc = tm_iceberg_table_resolve(t, f->path, &real, err);
        if (rc == TM_OK) rc = tm_map_puts(set, key, real, NULL, err);
        if (rc < 0) tm_free(real);
      }
      tm_free(key);
    }
    tm_iceberg_manifest_free(man);
    if (rc < 0) break;
  }
  tm_iceberg_manifest_list_free(l);
  return rc;
}

static void free_value(void *v) { tm_free(v); }

int tm_iceberg_expire(tm_iceberg_table *base, int64_t older_than_ms,
                      tm_iceberg_expire_result *out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(base);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  tm_iceberg_expire_result res = {0, 0};
  tm_map before, after;
  tm_map_init(&before);
  tm_map_init(&after);
  json_t *root = NULL;
  bool *expire = tm_calloc(m->n_snapshots ? m->n_snapshots : 1, sizeof *expire);
  int rc = TM_OK;
  if (!expire) return tm_error_nomem(err);
  for (size_t i = 0; i < m->n_snapshots; i++) {
    const tm_iceberg_snapshot *s = &m->snapshots[i];
    bool keep = s->timestamp_ms >= older_than_ms || (cur && s->snapshot_id == cur->snapshot_id);
    for (size_t r = 0; r < m->n_refs; r++) keep = keep || m->refs[r].snapshot_id == s->snapshot_id;
    expire[i] = !keep;
    if (expire[i]) res.snapshots_expired++;
  }
  if (res.snapshots_expired == 0) goto done;
  /* What the expired snapshots reach, and what the kept ones still need. */
  for (size_t i = 0; i < m->n_snapshots; i++) {
    rc = reach(base, &m->snapshots[i], expire[i] ? &before : &after, !expire[i], err);
    if (rc == TM_ENOTFOUND && expire[i]) rc = TM_OK; /* already gone */
    if (rc < 0) goto done;
  }
  TM_CHECK(tm_iceberg__load_base_json(base, &root, err));
  json_t *snaps = json_array();
  json_t *old = json_object_get(root, "snapshots");
  size_t idx;
  json_t *sj;
  json_array_foreach(old, idx, sj) {
    int64_t id = json_long(sj, "snapshot-id", -1);
    bool drop = false;
    for (size_t i = 0; i < m->n_snapshots; i++)
      if (m->snapshots[i].snapshot_id == id) drop = expire[i];
    if (!drop) json_array_append(snaps, sj);
  }
  json_object_set_new(root, "snapshots", snaps);
  /* snapshot-log: drop everything up to the last expired entry. */
  json_t *log = json_object_get(root, "snapshot-log");
  if (json_is_array(log)) {
    size_t cut = 0;
    json_array_foreach(log, idx, sj) {
      int64_t id = json_long(sj, "snapshot-id", -1);
      const tm_iceberg_snapshot *s = tm_iceberg_metadata_snapshot(m, id);
      bool gone = !s || expire[s - m->snapshots];
      if (gone) cut = idx + 1;
    }
    json_t *kept = json_array();
    json_array_foreach(log, idx, sj) {
      if (idx >= cut) json_array_append(kept, sj);
    }
    json_object_set_new(root, "snapshot-log", kept);
  }
  TM_CHECK(tm_iceberg__publish(base, root, err));
  /* Now delete what nothing references any more (after the commit, so a
   * crash leaves unreferenced files, never dangling references). */
  tm_iceberg_io *io = tm_iceberg_table_io(base);
  size_t pos = 0;
  const char *key;
  void *val;
  while (io->remove && tm_map_next(&before, &pos, &key, &val)) {
    if (tm_map_gets(&after, key)) continue;
    const char *root_dir = tm_iceberg_table_root(base);
    const char *path = val;
    size_t rl = root_dir ? strlen(root_dir) : 0;
    if (!root_dir || strncmp(path, root_dir, rl) != 0 || path[rl] != '/') continue;
    tm_error e2;
    if (io->remove(io->payload, (const char *)val, &e2) == TM_OK) res.files_deleted++;
  }
done:
  tm_free(expire);
  json_decref(root);
  tm_map_dispose(&before, free_value);
  tm_map_dispose(&after, free_value);
  if (rc == TM_OK && out) *out = res;
  return rc;
}
