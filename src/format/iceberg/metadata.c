/*
 * metadata.c - Iceberg table metadata JSON: parsing with per-version
 * validation, serialisation, lookups and the ancestry walk (format layer).
 * See iceberg.h.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "util/alloc.h"

#define META_ARENA_LIMIT ((size_t)1 << 30)

typedef struct mctx {
  tm_arena *a;
  const char *name; /* for messages */
  int version;
  tm_error *err;
} mctx;

static int fail(mctx *c, const char *fmt, const char *key) {
  return TM_CORRUPT(c->err, fmt, c->name, key);
}

/* Optional integer member; TM_ECORRUPT when present but not an integer. */
static int get_long(mctx *c, json_t *o, const char *key, bool required, int64_t *out,
                    bool *present) {
  json_t *v = json_object_get(o, key);
  if (present) *present = v != NULL && !json_is_null(v);
  if (!v || json_is_null(v)) {
    if (required) {
      return TM_CORRUPT(c->err, "%s: v%d metadata needs \"%s\"", c->name, c->version, key);
    }
    return TM_OK;
  }
  if (!json_is_integer(v)) return fail(c, "%s: \"%s\" must be an integer", key);
  *out = json_integer_value(v);
  return TM_OK;
}

static int get_int(mctx *c, json_t *o, const char *key, bool required, int32_t *out,
                   bool *present) {
  int64_t v = *out;
  TM_TRY(get_long(c, o, key, required, &v, present));
  if (v < INT32_MIN || v > INT32_MAX) return fail(c, "%s: \"%s\" is out of range", key);
  *out = (int32_t)v;
  return TM_OK;
}

static int get_str(mctx *c, json_t *o, const char *key, bool required, const char **out) {
  json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    if (required) {
      return TM_CORRUPT(c->err, "%s: v%d metadata needs \"%s\"", c->name, c->version, key);
    }
    *out = NULL;
    return TM_OK;
  }
  if (!json_is_string(v)) return fail(c, "%s: \"%s\" must be a string", key);
  *out = tm_iceberg__strdup(c->a, json_string_value(v), c->err);
  return *out ? TM_OK : c->err->code;
}

static int parse_kv(mctx *c, json_t *o, const char *what, tm_kv_pair **out, size_t *n_out) {
  *out = NULL;
  *n_out = 0;
  if (!o || json_is_null(o)) return TM_OK;
  if (!json_is_object(o)) return fail(c, "%s: \"%s\" must be an object", what);
  size_t n = json_object_size(o);
  tm_kv_pair *kv = tm_arena_calloc(c->a, n ? n : 1, sizeof *kv, c->err);
  if (!kv) return c->err->code;
  const char *key;
  json_t *v;
  size_t i = 0;
  json_object_foreach(o, key, v) {
    char num[32];
    const char *val;
    if (json_is_string(v)) {
      val = json_string_value(v);
    } else if (json_is_integer(v)) {
      snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
      val = num;
    } else if (json_is_boolean(v)) {
      val = json_is_true(v) ? "true" : "false";
    } else {
      return fail(c, "%s: values of \"%s\" must be strings", what);
    }
    kv[i].key = (char *)tm_iceberg__strdup(c->a, key, c->err);
    kv[i].value = (char *)tm_iceberg__strdup(c->a, val, c->err);
    if (!kv[i].key || !kv[i].value) return c->err->code;
    i++;
  }
  *out = kv;
  *n_out = i;
  return TM_OK;
}

static int parse_schemas(mctx *c, json_t *root, tm_iceberg_metadata *m) {
  json_t *schemas = json_object_get(root, "schemas");
  json_t *schema = json_object_get(root, "schema");
  bool has_current = false;
  if (c->version >= 2 && (!schemas || json_is_null(schemas))) {
    return TM_CORRUPT(c->err, "%s: v%d metadata needs \"schemas\"", c->name, c->version);
  }
  TM_TRY(get_int(c, root, "current-schema-id", c->version >= 2, &m->current_schema_id,
                 &has_current));
  if (schemas && !json_is_null(schemas)) {
    if (!json_is_array(schemas) || json_array_size(schemas) == 0) {
      return fail(c, "%s: \"%s\" must be a non-empty array", "schemas");
    }
    if (!has_current) {
      return fail(c, "%s: \"schemas\" is present but \"%s\" is missing", "current-schema-id");
    }
    size_t n = json_array_size(schemas);
    m->schemas = tm_arena_calloc(c->a, n, sizeof *m->schemas, c->err);
    if (!m->schemas) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      TM_TRY(tm_iceberg__parse_schema(c->a, json_array_get(schemas, i), &m->schemas[i], c->name,
                                      c->err));
      m->n_schemas = i + 1;
    }
  } else if (c->version >= 2) {
    return TM_CORRUPT(c->err, "%s: v%d metadata needs \"schemas\"", c->name, c->version);
  } else if (schema && json_is_object(schema)) {
    m->schemas = tm_arena_calloc(c->a, 1, sizeof *m->schemas, c->err);
    if (!m->schemas) return c->err->code;
    TM_TRY(tm_iceberg__parse_schema(c->a, schema, &m->schemas[0], c->name, c->err));
    m->n_schemas = 1;
    m->current_schema_id = m->schemas[0].schema_id;
  } else {
    return TM_CORRUPT(c->err, "%s: v1 metadata needs a valid \"schema\" (or \"schemas\" with "
                              "\"current-schema-id\")",
                      c->name);
  }
  if (!tm_iceberg_metadata_schema(m, m->current_schema_id)) {
    return TM_CORRUPT(c->err, "%s: current-schema-id %d is not among the schemas", c->name,
                      (int)m->current_schema_id);
  }
  return TM_OK;
}

static int parse_specs(mctx *c, json_t *root, tm_iceberg_metadata *m) {
  json_t *specs = json_object_get(root, "partition-specs");
  json_t *spec = json_object_get(root, "partition-spec");
  bool has_default = false, has_last = false;
  if (c->version >= 2 && (!specs || json_is_null(specs))) {
    return TM_CORRUPT(c->err, "%s: v%d metadata needs \"partition-specs\"", c->name, c->version);
  }
  TM_TRY(get_int(c, root, "default-spec-id", c->version >= 2, &m->default_spec_id, &has_default));
  m->last_partition_id = 999;
  TM_TRY(get_int(c, root, "last-partition-id", c->version >= 2, &m->last_partition_id,
                 &has_last));
  if (specs && !json_is_null(specs)) {
    if (!json_is_array(specs)) return fail(c, "%s: \"%s\" must be an array", "partition-specs");
    if (!has_default) {
      return fail(c, "%s: \"partition-specs\" is present but \"%s\" is missing", "default-spec-id");
    }
    size_t n = json_array_size(specs);
    m->specs = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->specs, c->err);
    if (!m->specs) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      json_t *s = json_array_get(specs, i);
      if (!json_is_object(s)) return fail(c, "%s: entries of \"%s\" must be objects", "partition-specs");
      TM_TRY(get_int(c, s, "spec-id", true, &m->specs[i].spec_id, NULL));
      TM_TRY(tm_iceberg__parse_spec_fields(c->a, json_object_get(s, "fields"), c->version == 1,
                                           &m->specs[i], c->name, c->err));
      m->n_specs = i + 1;
    }
  } else if (c->version >= 2) {
    return TM_CORRUPT(c->err, "%s: v%d metadata needs \"partition-specs\"", c->name, c->version);
  } else if (spec && !json_is_null(spec)) {
    m->specs = tm_arena_calloc(c->a, 1, sizeof *m->specs, c->err);
    if (!m->specs) return c->err->code;
    m->specs[0].spec_id = 0;
    TM_TRY(tm_iceberg__parse_spec_fields(c->a, spec, true, &m->specs[0], c->name, c->err));
    m->n_specs = 1;
    m->default_spec_id = 0;
  } else {
    return TM_CORRUPT(c->err, "%s: v1 metadata needs \"partition-spec\" or \"partition-specs\"",
                      c->name);
  }
  if (!tm_iceberg_metadata_spec(m, m->default_spec_id)) {
    return TM_CORRUPT(c->err, "%s: default-spec-id %d is not among the partition specs", c->name,
                      (int)m->default_spec_id);
  }
  if (!has_last) {
    for (size_t i = 0; i < m->n_specs; i++) {
      for (size_t k = 0; k < m->specs[i].n_fields; k++) {
        if (m->specs[i].fields[k].field_id > m->last_partition_id)
          m->last_partition_id = m->specs[i].fields[k].field_id;
      }
    }
  }
  return TM_OK;
}

static int parse_sort_orders(mctx *c, json_t *root, tm_iceberg_metadata *m) {
  json_t *orders = json_object_get(root, "sort-orders");
  if (c->version >= 2 && (!orders || json_is_null(orders))) {
    return TM_CORRUPT(c->err, "%s: v%d metadata needs \"sort-orders\"", c->name, c->version);
  }
  TM_TRY(get_int(c, root, "default-sort-order-id", c->version >= 2, &m->default_sort_order_id,
                 NULL));
  if (!orders || json_is_null(orders)) {
    if (c->version >= 2) {
      return TM_CORRUPT(c->err, "%s: v%d metadata needs \"sort-orders\"", c->name, c->version);
    }
    return TM_OK;
  }
  if (!json_is_array(orders)) return fail(c, "%s: \"%s\" must be an array", "sort-orders");
  size_t n = json_array_size(orders);
  m->sort_orders = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->sort_orders, c->err);
  if (!m->sort_orders) return c->err->code;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(orders, i);
    tm_iceberg_sort_order *so = &m->sort_orders[i];
    if (!json_is_object(o)) return fail(c, "%s: entries of \"%s\" must be objects", "sort-orders");
    TM_TRY(get_int(c, o, "order-id", true, &so->order_id, NULL));
    json_t *fields = json_object_get(o, "fields");
    if (!json_is_array(fields)) return fail(c, "%s: sort order \"%s\" must be an array", "fields");
    size_t nf = json_array_size(fields);
    so->fields = tm_arena_calloc(c->a, nf ? nf : 1, sizeof *so->fields, c->err);
    if (!so->fields) return c->err->code;
    for (size_t k = 0; k < nf; k++) {
      json_t *f = json_array_get(fields, k);
      tm_iceberg_sort_field *sf = &so->fields[k];
      if (!json_is_object(f)) return fail(c, "%s: sort \"%s\" must be objects", "fields");
      bool has_src = false;
      TM_TRY(get_int(c, f, "source-id", false, &sf->source_id, &has_src));
      if (!has_src) {
        json_t *srcs = json_object_get(f, "source-ids");
        if (!json_is_array(srcs) || json_array_size(srcs) == 0 ||
            !json_is_integer(json_array_get(srcs, 0))) {
          return fail(c, "%s: a sort field needs \"%s\"", "source-id");
        }
        sf->source_id = (int32_t)json_integer_value(json_array_get(srcs, 0));
      }
      const char *tr = NULL, *dir = NULL, *nulls = NULL;
      TM_TRY(get_str(c, f, "transform", true, &tr));
      TM_TRY(get_str(c, f, "direction", true, &dir));
      TM_TRY(get_str(c, f, "null-order", true, &nulls));
      sf->transform = tm_iceberg_transform_parse(tr);
      if (strcmp(dir, "asc") != 0 && strcmp(dir, "desc") != 0) {
        return fail(c, "%s: sort direction \"%s\" must be asc or desc", dir);
      }
      if (strcmp(nulls, "nulls-first") != 0 && strcmp(nulls, "nulls-last") != 0) {
        return fail(c, "%s: null-order \"%s\" must be nulls-first or nulls-last", nulls);
      }
      sf->descending = dir[0] == 'd';
      sf->nulls_first = strcmp(nulls, "nulls-first") == 0;
      so->n_fields = k + 1;
    }
    m->n_sort_orders = i + 1;
  }
  return TM_OK;
}

static int parse_snapshot(mctx *c, json_t *o, tm_iceberg_snapshot *s) {
  if (!json_is_object(o)) return fail(c, "%s: entries of \"%s\" must be objects", "snapshots");
  TM_TRY(get_long(c, o, "snapshot-id", true, &s->snapshot_id, NULL));
  TM_TRY(get_long(c, o, "parent-snapshot-id", false, &s->parent_id, &s->has_parent));
  if (s->has_parent && s->parent_id == -1) s->has_parent = false;
  TM_TRY(get_long(c, o, "sequence-number", c->version >= 2, &s->sequence_number, NULL));
  TM_TRY(get_long(c, o, "timestamp-ms", true, &s->timestamp_ms, NULL));
  TM_TRY(get_str(c, o, "manifest-list", c->version >= 2, &s->manifest_list));
  json_t *manifests = json_object_get(o, "manifests");
  if (!s->manifest_list) {
    if (!json_is_array(manifests)) {
      return TM_CORRUPT(c->err, "%s: snapshot %lld has neither \"manifest-list\" nor \"manifests\"",
                        c->name, (long long)s->snapshot_id);
    }
    size_t n = json_array_size(manifests);
    s->manifests = tm_arena_calloc(c->a, n ? n : 1, sizeof *s->manifests, c->err);
    if (!s->manifests) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      json_t *p = json_array_get(manifests, i);
      if (!json_is_string(p)) return fail(c, "%s: \"%s\" must hold strings", "manifests");
      if (!(s->manifests[i] = tm_iceberg__strdup(c->a, json_string_value(p), c->err)))
        return c->err->code;
    }
    s->n_manifests = n;
  }
  json_t *summary = json_object_get(o, "summary");
  if (c->version >= 2 && !json_is_object(summary)) {
    return TM_CORRUPT(c->err, "%s: snapshot %lld needs a \"summary\"", c->name,
                      (long long)s->snapshot_id);
  }
  TM_TRY(parse_kv(c, summary, "summary", &s->summary, &s->n_summary));
  s->operation = tm_iceberg_snapshot_summary(s, "operation");
  if (c->version >= 2 && !s->operation) {
    return TM_CORRUPT(c->err, "%s: snapshot %lld has no summary \"operation\"", c->name,
                      (long long)s->snapshot_id);
  }
  s->schema_id = -1;
  TM_TRY(get_int(c, o, "schema-id", false, &s->schema_id, NULL));
  s->added_rows = -1;
  TM_TRY(get_long(c, o, "first-row-id", false, &s->first_row_id, &s->has_first_row_id));
  TM_TRY(get_long(c, o, "added-rows", false, &s->added_rows, NULL));
  TM_TRY(get_str(c, o, "key-id", false, &s->key_id));
  return TM_OK;
}

static int cmp_snap_index(const void *a, const void *b, void *arg) {
  const tm_iceberg_snapshot *s = arg;
  int64_t x = s[*(const size_t *)a].snapshot_id, y = s[*(const size_t *)b].snapshot_id;
  return x < y ? -1 : x > y;
}

static int parse_snapshots(mctx *c, json_t *root, tm_iceberg_metadata *m) {
  json_t *snaps = json_object_get(root, "snapshots");
  if (snaps && !json_is_null(snaps)) {
    if (!json_is_array(snaps)) return fail(c, "%s: \"%s\" must be an array", "snapshots");
    size_t n = json_array_size(snaps);
    m->snapshots = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->snapshots, c->err);
    m->snap_index = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->snap_index, c->err);
    if (!m->snapshots || !m->snap_index) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      TM_TRY(parse_snapshot(c, json_array_get(snaps, i), &m->snapshots[i]));
      m->snap_index[i] = i;
      m->n_snapshots = i + 1;
    }
    qsort_r(m->snap_index, n, sizeof *m->snap_index, cmp_snap_index, m->snapshots);
    for (size_t i = 1; i < n; i++) {
      if (m->snapshots[m->snap_index[i]].snapshot_id ==
          m->snapshots[m->snap_index[i - 1]].snapshot_id) {
        return TM_CORRUPT(c->err, "%s: snapshot id %lld appears twice", c->name,
                          (long long)m->snapshots[m->snap_index[i]].snapshot_id);
      }
    }
  }
  TM_TRY(get_long(c, root, "current-snapshot-id", false, &m->current_snapshot_id,
                  &m->has_current_snapshot));
  if (m->has_current_snapshot && m->current_snapshot_id == -1) m->has_current_snapshot = false;

  json_t *refs = json_object_get(root, "refs");
  if (refs && json_is_object(refs)) {
    size_t n = json_object_size(refs);
    m->refs = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->refs, c->err);
    if (!m->refs) return c->err->code;
    const char *key;
    json_t *v;
    json_object_foreach(refs, key, v) {
      tm_iceberg_ref *r = &m->refs[m->n_refs];
      if (!json_is_object(v)) return fail(c, "%s: ref \"%s\" must be an object", key);
      TM_TRY(get_long(c, v, "snapshot-id", true, &r->snapshot_id, NULL));
      const char *type = NULL;
      TM_TRY(get_str(c, v, "type", true, &type));
      r->is_tag = strcmp(type, "tag") == 0;
      if (!(r->name = tm_iceberg__strdup(c->a, key, c->err))) return c->err->code;
      m->n_refs++;
      if (strcmp(key, "main") == 0 && !m->has_current_snapshot) {
        m->has_current_snapshot = true;
        m->current_snapshot_id = r->snapshot_id;
      }
    }
  } else if (refs && !json_is_null(refs)) {
    return fail(c, "%s: \"%s\" must be an object", "refs");
  }
  if (m->has_current_snapshot && !tm_iceberg_metadata_snapshot(m, m->current_snapshot_id)) {
    return TM_CORRUPT(c->err, "%s: current-snapshot-id %lld is not among the snapshots", c->name,
                      (long long)m->current_snapshot_id);
  }

  json_t *slog = json_object_get(root, "snapshot-log");
  if (json_is_array(slog)) {
    size_t n = json_array_size(slog);
    m->snapshot_log = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->snapshot_log, c->err);
    if (!m->snapshot_log) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      json_t *e = json_array_get(slog, i);
      if (!json_is_object(e)) return fail(c, "%s: \"%s\" entries must be objects", "snapshot-log");
      TM_TRY(get_long(c, e, "timestamp-ms", true, &m->snapshot_log[i].timestamp_ms, NULL));
      TM_TRY(get_long(c, e, "snapshot-id", true, &m->snapshot_log[i].snapshot_id, NULL));
      m->n_snapshot_log = i + 1;
    }
  }
  json_t *mlog = json_object_get(root, "metadata-log");
  if (json_is_array(mlog)) {
    size_t n = json_array_size(mlog);
    m->metadata_log = tm_arena_calloc(c->a, n ? n : 1, sizeof *m->metadata_log, c->err);
    if (!m->metadata_log) return c->err->code;
    for (size_t i = 0; i < n; i++) {
      json_t *e = json_array_get(mlog, i);
      if (!json_is_object(e)) return fail(c, "%s: \"%s\" entries must be objects", "metadata-log");
      TM_TRY(get_long(c, e, "timestamp-ms", true, &m->metadata_log[i].timestamp_ms, NULL));
      TM_TRY(get_str(c, e, "metadata-file", true, &m->metadata_log[i].file));
      m->n_metadata_log = i + 1;
    }
  }
  return TM_OK;
}

int tm_iceberg__maybe_gunzip(const void *data, size_t len, char **out, size_t *out_len,
                             tm_error *err) {
  const uint8_t *in = data;
  *out = NULL;
  if (len < 2 || in[0] != 0x1f || in[1] != 0x8b) return TM_OK;
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 16 + 15) != Z_OK) return tm_error_nomem(err);
  tm_buf b = TM_BUF_INIT(TM_ICEBERG__MAX_METADATA_BYTES);
  int rc = TM_OK;
  if (len > (1u << 30)) {
    rc = tm_error_set(err, TM_ETOOLARGE, "gzip metadata of %zu bytes is too large", len);
    goto done;
  }
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)len;
  for (;;) {
    size_t room = 1 << 16;
    rc = tm_buf_reserve(&b, room, err);
    if (rc < 0) goto done;
    zs.next_out = (Bytef *)b.ptr + b.len;
    zs.avail_out = (uInt)room;
    int z = inflate(&zs, Z_NO_FLUSH);
    b.len += room - zs.avail_out;
    b.ptr[b.len] = '\0';
    if (z == Z_STREAM_END) break;
    if (z != Z_OK && !(z == Z_BUF_ERROR && zs.avail_in > 0)) {
      rc = TM_CORRUPT(err, "gzip metadata is corrupt or truncated (%s)",
                      zs.msg ? zs.msg : "unexpected end");
      goto done;
    }
  }
  *out_len = b.len;
  *out = tm_buf_take(&b, NULL);
done:
  inflateEnd(&zs);
  tm_buf_dispose(&b);
  return rc;
}

static int parse_root(mctx *c, json_t *root, tm_iceberg_metadata *m) {
  if (!json_is_object(root)) return TM_CORRUPT(c->err, "%s: metadata must be a JSON object", c->name);
  json_t *fv = json_object_get(root, "format-version");
  if (!json_is_integer(fv)) {
    return TM_CORRUPT(c->err, "%s: \"format-version\" is missing or not an integer", c->name);
  }
  json_int_t v = json_integer_value(fv);
  if (v < 1 || v > TM_ICEBERG_MAX_FORMAT_VERSION) {
    return tm_error_set(c->err, TM_EUNSUPPORTED,
                        "%s: unsupported Iceberg format-version %lld (supported: 1 to %d)",
                        c->name, (long long)v, TM_ICEBERG_MAX_FORMAT_VERSION);
  }
  c->version = m->format_version = (int)v;
  TM_TRY(get_str(c, root, "table-uuid", c->version >= 2, &m->table_uuid));
  TM_TRY(get_str(c, root, "location", true, &m->location));
  TM_TRY(get_long(c, root, "last-sequence-number", c->version >= 2, &m->last_sequence_number,
                  NULL));
  TM_TRY(get_long(c, root, "last-updated-ms", true, &m->last_updated_ms, NULL));
  TM_TRY(get_int(c, root, "last-column-id", true, &m->last_column_id, NULL));
  TM_TRY(parse_schemas(c, root, m));
  TM_TRY(parse_specs(c, root, m));
  TM_TRY(parse_sort_orders(c, root, m));
  TM_TRY(parse_kv(c, json_object_get(root, "properties"), "properties", &m->properties,
                  &m->n_properties));
  TM_TRY(parse_snapshots(c, root, m));
  TM_TRY(get_long(c, root, "next-row-id", c->version >= 3, &m->next_row_id, &m->has_next_row_id));
  const char *nm = tm_iceberg_metadata_property(m, "schema.name-mapping.default");
  if (nm) {
    int rc = tm_iceberg__parse_name_mapping(c->a, nm, &m->name_mapping, c->err);
    if (rc < 0) return tm_error_prefix(c->err, "%s", c->name);
  }
  return TM_OK;
}

int tm_iceberg_metadata_parse(tm_iceberg_metadata **out, const void *data, size_t len,
                              const char *name, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  if (!name) name = "metadata.json";
  if (len > TM_ICEBERG__MAX_METADATA_BYTES) {
    return tm_error_set(err, TM_ETOOLARGE, "%s: metadata of %zu bytes exceeds the limit", name,
                        len);
  }
  char *inflated = NULL;
  size_t n = 0;
  int rc0 = tm_iceberg__maybe_gunzip(data, len, &inflated, &n, err);
  if (rc0 < 0) return tm_error_prefix(err, "%s", name);
  if (inflated) {
    data = inflated;
    len = n;
  }
  json_error_t jerr;
  json_t *root = json_loadb(data, len, 0, &jerr);
  tm_free(inflated);
  if (!root) {
    return TM_CORRUPT(err, "%s: not valid JSON: %s (line %d, column %d)", name, jerr.text,
                      jerr.line, jerr.column);
  }
  tm_iceberg_metadata *m = tm_calloc(1, sizeof *m);
  if (!m) {
    json_decref(root);
    return tm_error_nomem(err);
  }
  tm_arena_init(&m->arena, META_ARENA_LIMIT);
  mctx c = {&m->arena, name, 1, err};
  int rc = parse_root(&c, root, m);
  json_decref(root);
  if (rc < 0) {
    tm_iceberg_metadata_free(m);
    return rc;
  }
  *out = m;
  return TM_OK;
}

void tm_iceberg_metadata_free(tm_iceberg_metadata *m) {
  if (!m) return;
  tm_arena_dispose(&m->arena);
  tm_free(m);
}

/* ---- lookups ------------------------------------------------------------ */

const tm_iceberg_schema *tm_iceberg_metadata_schema(const tm_iceberg_metadata *m, int32_t id) {
  for (size_t i = 0; i < m->n_schemas; i++) {
    if (m->schemas[i].schema_id == id) return &m->schemas[i];
  }
  return NULL;
}

const tm_iceberg_schema *tm_iceberg_metadata_current_schema(const tm_iceberg_metadata *m) {
  return tm_iceberg_metadata_schema(m, m->current_schema_id);
}

const tm_iceberg_spec *tm_iceberg_metadata_spec(const tm_iceberg_metadata *m, int32_t id) {
  for (size_t i = 0; i < m->n_specs; i++) {
    if (m->specs[i].spec_id == id) return &m->specs[i];
  }
  return NULL;
}

const tm_iceberg_snapshot *tm_iceberg_metadata_snapshot(const tm_iceberg_metadata *m,
                                                        int64_t id) {
  size_t lo = 0, hi = m->n_snapshots;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tm_iceberg_snapshot *s = &m->snapshots[m->snap_index[mid]];
    if (s->snapshot_id == id) return s;
    if (s->snapshot_id < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return NULL;
}

const tm_iceberg_snapshot *tm_iceberg_metadata_current(const tm_iceberg_metadata *m) {
  if (!m->has_current_snapshot) return NULL;
  return tm_iceberg_metadata_snapshot(m, m->current_snapshot_id);
}

const char *tm_iceberg_metadata_property(const tm_iceberg_metadata *m, const char *key) {
  for (size_t i = 0; i < m->n_properties; i++) {
    if (strcmp(m->properties[i].key, key) == 0) return m->properties[i].value;
  }
  return NULL;
}

const char *tm_iceberg_snapshot_summary(const tm_iceberg_snapshot *s, const char *key) {
  for (size_t i = 0; i < s->n_summary; i++) {
    if (strcmp(s->summary[i].key, key) == 0) return s->summary[i].value;
  }
  return NULL;
}

const tm_iceberg_schema *tm_iceberg_snapshot_schema(const tm_iceberg_metadata *m,
                                                    const tm_iceberg_snapshot *s) {
  if (s && s->schema_id >= 0) {
    const tm_iceberg_schema *sc = tm_iceberg_metadata_schema(m, s->schema_id);
    if (sc) return sc;
  }
  return tm_iceberg_metadata_current_schema(m);
}

/* ---- ancestry ------------------------------------------------------------ */

bool tm_iceberg_is_ancestor(const tm_iceberg_metadata *m, int64_t id, int64_t ancestor_id) {
  const tm_iceberg_snapshot *s = tm_iceberg_metadata_snapshot(m, id);
  for (size_t steps = 0; s && steps <= m->n_snapshots; steps++) {
    if (s->snapshot_id == ancestor_id) return true;
    if (!s->has_parent) return false;
    s = tm_iceberg_metadata_snapshot(m, s->parent_id);
  }
  return false;
}

int tm_iceberg_ancestors_since(const tm_iceberg_metadata *m, int64_t to_id, int64_t after_id,
                               const tm_iceberg_snapshot ***out, size_t *n_out,
                               tm_error *err) {
  const tm_iceberg_snapshot *s = tm_iceberg_metadata_snapshot(m, to_id);
  if (!s) {
    return tm_error_set(err, TM_ENOTFOUND, "snapshot %lld is not in the table metadata",
                        (long long)to_id);
  }
  const tm_iceberg_snapshot **chain = tm_calloc(m->n_snapshots ? m->n_snapshots : 1,
                                                sizeof *chain);
  if (!chain) return tm_error_nomem(err);
  size_t n = 0;
  while (s && n < m->n_snapshots && s->snapshot_id != after_id) {
    chain[n++] = s;
    s = s->has_parent ? tm_iceberg_metadata_snapshot(m, s->parent_id) : NULL;
  }
  for (size_t i = 0; i < n / 2; i++) {
    const tm_iceberg_snapshot *t = chain[i];
    chain[i] = chain[n - 1 - i];
    chain[n - 1 - i] = t;
  }
  *out = chain;
  *n_out = n;
  return TM_OK;
}

/* ---- serialisation ------------------------------------------------------- */

static json_t *kv_to_json(const tm_kv_pair *kv, size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < n; i++) json_object_set_new(o, kv[i].key, json_string(kv[i].value));
  return o;
}

int tm_iceberg_metadata_to_json(const tm_iceberg_metadata *m, tm_buf *out, tm_error *err) {
  json_t *root = json_object();
  if (!root) return tm_error_nomem(err);
  json_object_set_new(root, "format-version", json_integer(m->format_version));
  if (m->table_uuid) json_object_set_new(root, "table-uuid", json_string(m->table_uuid));
  json_object_set_new(root, "location", json_string(m->location));
  if (m->format_version >= 2) {
    json_object_set_new(root, "last-sequence-number", json_integer(m->last_sequence_number));
  }
  json_object_set_new(root, "last-updated-ms", json_integer(m->last_updated_ms));
  json_object_set_new(root, "last-column-id", json_integer(m->last_column_id));
  json_t *schemas = json_array();
  for (size_t i = 0; i < m->n_schemas; i++) {
    json_array_append_new(schemas, tm_iceberg__schema_to_json(&m->schemas[i]));
  }
  json_object_set_new(root, "schemas", schemas);
  json_object_set_new(root, "current-schema-id", json_integer(m->current_schema_id));
  if (m->format_version == 1) {
    const tm_iceberg_schema *cur = tm_iceberg_metadata_current_schema(m);
    if (cur) json_object_set_new(root, "schema", tm_iceberg__schema_to_json(cur));
    const tm_iceberg_spec *ds = tm_iceberg_metadata_spec(m, m->default_spec_id);
    if (ds) json_object_set_new(root, "partition-spec", tm_iceberg__spec_fields_to_json(ds));
  }
  json_t *specs = json_array();
  for (size_t i = 0; i < m->n_specs; i++) {
    json_array_append_new(specs, json_pack("{s:i, s:o}", "spec-id", (int)m->specs[i].spec_id,
                                           "fields",
                                           tm_iceberg__spec_fields_to_json(&m->specs[i])));
  }
  json_object_set_new(root, "partition-specs", specs);
  json_object_set_new(root, "default-spec-id", json_integer(m->default_spec_id));
  json_object_set_new(root, "last-partition-id", json_integer(m->last_partition_id));
  json_object_set_new(root, "properties", kv_to_json(m->properties, m->n_properties));
  if (m->has_current_snapshot) {
    json_object_set_new(root, "current-snapshot-id", json_integer(m->current_snapshot_id));
  } else if (m->format_version < 3) {
    json_object_set_new(root, "current-snapshot-id", json_integer(-1));
  }
  json_t *snaps = json_array();
  for (size_t i = 0; i < m->n_snapshots; i++) {
    const tm_iceberg_snapshot *s = &m->snapshots[i];
    json_t *o = json_object();
    json_object_set_new(o, "snapshot-id", json_integer(s->snapshot_id));
    if (s->has_parent) json_object_set_new(o, "parent-snapshot-id", json_integer(s->parent_id));
    if (m->format_version >= 2) {
      json_object_set_new(o, "sequence-number", json_integer(s->sequence_number));
    }
    json_object_set_new(o, "timestamp-ms", json_integer(s->timestamp_ms));
    if (s->manifest_list) {
      json_object_set_new(o, "manifest-list", json_string(s->manifest_list));
    } else {
      json_t *ms = json_array();
      for (size_t k = 0; k < s->n_manifests; k++) json_array_append_new(ms, json_string(s->manifests[k]));
      json_object_set_new(o, "manifests", ms);
    }
    json_object_set_new(o, "summary", kv_to_json(s->summary, s->n_summary));
    if (s->schema_id >= 0) json_object_set_new(o, "schema-id", json_integer(s->schema_id));
    if (s->has_first_row_id) json_object_set_new(o, "first-row-id", json_integer(s->first_row_id));
    if (s->added_rows >= 0) json_object_set_new(o, "added-rows", json_integer(s->added_rows));
    json_array_append_new(snaps, o);
  }
  json_object_set_new(root, "snapshots", snaps);
  json_t *slog = json_array();
  for (size_t i = 0; i < m->n_snapshot_log; i++) {
    json_array_append_new(slog, json_pack("{s:I, s:I}", "timestamp-ms",
                                          (json_int_t)m->snapshot_log[i].timestamp_ms,
                                          "snapshot-id",
                                          (json_int_t)m->snapshot_log[i].snapshot_id));
  }
  json_object_set_new(root, "snapshot-log", slog);
  json_t *mlog = json_array();
  for (size_t i = 0; i < m->n_metadata_log; i++) {
    json_array_append_new(mlog, json_pack("{s:I, s:s}", "timestamp-ms",
                                          (json_int_t)m->metadata_log[i].timestamp_ms,
                                          "metadata-file", m->metadata_log[i].file));
  }
  json_object_set_new(root, "metadata-log", mlog);
  json_t *orders = json_array();
  for (size_t i = 0; i < m->n_sort_orders; i++) {
    const tm_iceberg_sort_order *so = &m->sort_orders[i];
    json_t *fields = json_array();
    for (size_t k = 0; k < so->n_fields; k++) {
      const tm_iceberg_sort_field *f = &so->fields[k];
      json_array_append_new(fields, json_pack("{s:s, s:i, s:s, s:s}", "transform",
                                              f->transform.text, "source-id", (int)f->source_id,
                                              "direction", f->descending ? "desc" : "asc",
                                              "null-order",
                                              f->nulls_first ? "nulls-first" : "nulls-last"));
    }
    json_array_append_new(orders, json_pack("{s:i, s:o}", "order-id", (int)so->order_id,
                                            "fields", fields));
  }
  json_object_set_new(root, "sort-orders", orders);
  json_object_set_new(root, "default-sort-order-id", json_integer(m->default_sort_order_id));
  if (m->n_refs) {
    json_t *refs = json_object();
    for (size_t i = 0; i < m->n_refs; i++) {
      json_object_set_new(refs, m->refs[i].name,
                          json_pack("{s:I, s:s}", "snapshot-id",
                                    (json_int_t)m->refs[i].snapshot_id, "type",
                                    m->refs[i].is_tag ? "tag" : "branch"));
    }
    json_object_set_new(root, "refs", refs);
  }
  if (m->has_next_row_id) json_object_set_new(root, "next-row-id", json_integer(m->next_row_id));
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) return tm_error_nomem(err);
  tm_buf_clear(out);
  int rc = tm_buf_puts(out, text, err);
  free(text); /* lint-ok: allocated by jansson */
  return rc;
}
