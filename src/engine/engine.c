/*
 * engine.c - the engine interface: dispatch to backends, option resolution,
 * reference counts and the writer slot (engine layer). See engine.h.
 */
#include "engine/engine_int.h"
#include "format/arrow/render.h"
#include "source/source.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"

#define DEFAULT_BUSY_MS 5000

static const char *const k_kind_names[TM_ENGINE__COUNT] = {"cayenne", "arrow", "sqlite",
                                                           "duckdb", "postgres"};

int tm_engine_kind_parse(const char *s, tm_engine_kind *out) {
  for (int i = 0; i < TM_ENGINE__COUNT; i++)
    if (s && strcasecmp(s, k_kind_names[i]) == 0) {
      *out = (tm_engine_kind)i;
      return TM_OK;
    }
  return TM_EINVALID;
}

const char *tm_engine_kind_name(tm_engine_kind k) {
  return (unsigned)k < TM_ENGINE__COUNT ? k_kind_names[k] : "unknown";
}

int tm_engine_mode_parse(const char *s, tm_engine_mode *out) {
  if (s && strcasecmp(s, "memory") == 0) *out = TM_ENGINE_MEMORY;
  else if (s && strcasecmp(s, "file") == 0) *out = TM_ENGINE_FILE;
  else return TM_EINVALID;
  return TM_OK;
}

const char *tm_engine_mode_name(tm_engine_mode m) {
  return m == TM_ENGINE_FILE ? "file" : "memory";
}

const char *tm_superseded_reason_name(tm_superseded_reason r) {
  static const char *const k[TM_SUPERSEDED__COUNT] = {"older", "equal_time", "unchanged",
                                                      "arrival"};
  return (unsigned)r < TM_SUPERSEDED__COUNT ? k[r] : "unknown";
}

void tm_engine_options_init(tm_engine_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_ENGINE_OPTIONS_VERSION;
}

const tm_engine_vtable *tm_engine__vtable(tm_engine_kind kind) {
  switch (kind) {
    case TM_ENGINE_CAYENNE:
    case TM_ENGINE_ARROW:
    case TM_ENGINE_DUCKDB: return tm_engine__duck_vtable(kind);
    case TM_ENGINE_SQLITE: return tm_engine__sqlite_vtable();
    case TM_ENGINE_POSTGRES: return tm_engine__pg_vtable();
    default: return NULL;
  }
}

const tm_engine_traits *tm_engine_kind_traits(tm_engine_kind kind) {
  const tm_engine_vtable *vt = tm_engine__vtable(kind);
  return vt ? &vt->traits : NULL;
}

bool tm_engine_kind_supports(tm_engine_kind kind, tm_engine_mode mode) {
  const tm_engine_traits *t = tm_engine_kind_traits(kind);
  return t && (t->modes & (1u << mode)) != 0;
}

/* ---- option resolution ---------------------------------------------------- */

tm_time_format tm_engine__default_time_format(const tm_type *t) {
  switch (t->id) {
    case TM_TYPE_TIMESTAMP: return t->utc ? TM_TIME_FORMAT_TIMESTAMPTZ : TM_TIME_FORMAT_TIMESTAMP;
    case TM_TYPE_DATE32: return TM_TIME_FORMAT_DATE;
    case TM_TYPE_UTF8: return TM_TIME_FORMAT_ISO8601;
    default: return TM_TIME_FORMAT_UNIX_SECONDS;
  }
}

static bool time_type_ok(const tm_type *t) {
  return t->id == TM_TYPE_TIMESTAMP || t->id == TM_TYPE_DATE32 || t->id == TM_TYPE_UTF8 ||
         tm_type_is_integer(t);
}

static int find_pk(const tm_engine_config *c, const tm_schema *s, tm_strview name) {
  for (size_t i = 0; i < c->n_pk; i++)
    if (tm_sv_eq_cstr(name, s->cols[c->pk[i]].name)) return (int)i;
  return -1;
}

/* Resolves the on_conflict map: every named column must be a key column. */
static int resolve_on_conflict(tm_engine_config *c, const tm_schema *s, const tm_kv *map,
                               tm_error *err) {
  c->on_conflict = TM_ON_CONFLICT_DROP;
  if (!map || map->len == 0) return TM_OK;
  if (c->n_pk == 0)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': on_conflict needs a primary_key",
                        c->dataset);
  for (size_t i = 0; i < map->len; i++) {
    const char *v = map->items[i].value;
    bool upsert;
    if (strcasecmp(v, "upsert") == 0) upsert = true;
    else if (strcasecmp(v, "drop") == 0) upsert = false;
    else
      return tm_error_set(err, TM_EINVALID,
                          "dataset '%s': on_conflict value '%s' for '%s' (allowed: drop, upsert)",
                          c->dataset, v, map->items[i].key);
    /* The key names one column, or several as "(a, b)" or "a, b". */
    tm_strview k = tm_sv_trim(tm_sv_cstr(map->items[i].key));
    if (k.len >= 2 && k.ptr[0] == '(' && k.ptr[k.len - 1] == ')') k = tm_sv_trim(tm_sv(k.ptr + 1, k.len - 2));
    size_t start = 0;
    for (size_t j = 0; j <= k.len; j++) {
      if (j < k.len && k.ptr[j] != ',') continue;
      tm_strview name = tm_sv_trim(tm_sv(k.ptr + start, j - start));
      start = j + 1;
      if (find_pk(c, s, name) < 0)
        return tm_error_set(err, TM_EINVALID,
                            "dataset '%s': on_conflict column '%.*s' is not in the primary key",
                            c->dataset, (int)name.len, name.ptr);
    }
    if (upsert) c->on_conflict = TM_ON_CONFLICT_UPSERT;
  }
  return TM_OK;
}

static void dispose_config(tm_engine_config *c) {
  tm_free(c->dataset);
  tm_free(c->path);
  tm_free(c->pk);
  for (size_t i = 0; i < c->n_indexes; i++) tm_free(c->indexes[i].cols);
  tm_free(c->indexes);
  memset(c, 0, sizeof *c);
}

/*
 * Resolves the configured indexes against the schema: each column must exist
 * (a clear TM_EINVALID naming it and the dataset's columns otherwise); the
 * name hashes the definition (kind and column names, FNV-1a 64), so that an
 * index keeps its name across opens and a changed one gets another.
 */
static int resolve_indexes(tm_engine_config *c, const tm_schema *s, const tm_engine_options *o,
                           tm_error *err) {
  if (!o->n_indexes) return TM_OK;
  c->indexes = tm_calloc(o->n_indexes, sizeof *c->indexes);
  if (!c->indexes) return tm_error_nomem(err);
  for (size_t i = 0; i < o->n_indexes; i++) {
    const tm_engine_index *in = &o->indexes[i];
    tm_engine_ix *ix = &c->indexes[c->n_indexes++];
    ix->unique = in->unique;
    ix->cols = tm_calloc(in->n_columns ? in->n_columns : 1, sizeof *ix->cols);
    if (!ix->cols) return tm_error_nomem(err);
    uint64_t h = 1469598103934665603ULL;
    h = (h ^ (uint64_t)(in->unique ? 'u' : 'i')) * 1099511628211ULL;
    for (size_t j = 0; j < in->n_columns; j++) {
      int idx = tm_schema_find(s, in->columns[j]);
      if (idx < 0) {
        char names[512] = "";
        for (size_t k = 0; k < s->n_cols; k++)
          snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "",
                   s->cols[k].name);
        return tm_error_set(err, TM_EINVALID,
                            "dataset '%s': indexes: no column '%s' (the columns: %s)", o->dataset,
                            in->columns[j], names);
      }
      ix->cols[ix->n_cols++] = (size_t)idx;
      for (const char *p = s->cols[idx].name;; p++) {
        h = (h ^ (uint64_t)(unsigned char)*p) * 1099511628211ULL;
        if (!*p) break;
      }
    }
    snprintf(ix->name, sizeof ix->name, "tm_ix_%016llx", (unsigned long long)h);
  }
  return TM_OK;
}

int tm_engine__index_sql(tm_buf *b, const tm_engine *e, const tm_engine_ix *ix, const char *prefix,
                         const char *table_sql, tm_error *err) {
  TM_TRY(tm_buf_puts(b, ix->unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ", err));
  TM_TRY(tm_buf_puts(b, prefix, err));
  TM_TRY(tm_engine__quote_ident(b, ix->name, err));
  TM_TRY(tm_buf_printf(b, err, " ON %s (", table_sql));
  for (size_t j = 0; j < ix->n_cols; j++) {
    if (j) TM_TRY(tm_buf_puts(b, ", ", err));
    TM_TRY(tm_engine__quote_ident(b, e->schema.cols[ix->cols[j]].name, err));
  }
  return tm_buf_putc(b, ')', err);
}

bool tm_engine__index_wanted(const tm_engine *e, const char *name, bool *ours) {
  *ours = strncmp(name, "tm_ix_", 6) == 0;
  for (size_t i = 0; i < e->cfg.n_indexes; i++)
    if (strcmp(e->cfg.indexes[i].name, name) == 0) return true;
  return false;
}

static int resolve_config(tm_engine_config *c, const tm_schema *s, const tm_engine_options *o,
                          tm_error *err) {
  memset(c, 0, sizeof *c);
  c->time_col = -1;
  if (!o->dataset || !*o->dataset)
    return tm_error_set(err, TM_EINVALID, "engine options without a dataset name");
  c->dataset = tm_strdup(o->dataset);
  if (!c->dataset) return tm_error_nomem(err);
  c->mode = o->mode;
  if (o->mode == TM_ENGINE_FILE) {
    if (!o->path || !*o->path)
      return tm_error_set(err, TM_EINVALID, "dataset '%s': file mode needs a path", o->dataset);
    c->path = tm_strdup(o->path);
    if (!c->path) return tm_error_nomem(err);
  }
  if (o->n_primary_key > 0) {
    c->pk = tm_calloc(o->n_primary_key, sizeof *c->pk);
    if (!c->pk) return tm_error_nomem(err);
    for (size_t i = 0; i < o->n_primary_key; i++) {
      int idx = tm_schema_find(s, o->primary_key[i]);
      if (idx < 0)
        return tm_error_set(err, TM_EINVALID, "dataset '%s': primary key column '%s' not found",
                            o->dataset, o->primary_key[i]);
      for (size_t j = 0; j < c->n_pk; j++)
        if (c->pk[j] == (size_t)idx)
          return tm_error_set(err, TM_EINVALID,
                              "dataset '%s': primary key column '%s' given twice", o->dataset,
                              o->primary_key[i]);
      c->pk[c->n_pk++] = (size_t)idx;
    }
  }
  if (o->time_column && *o->time_column) {
    c->time_col = tm_schema_find(s, o->time_column);
    if (c->time_col < 0)
      return tm_error_set(err, TM_EINVALID, "dataset '%s': time column '%s' not found",
                          o->dataset, o->time_column);
    const tm_type *t = &s->cols[c->time_col].type;
    if (!time_type_ok(t)) {
      char tn[64];
      tm_type_name(t, tn, sizeof tn);
      return tm_error_set(err, TM_EINVALID,
                          "dataset '%s': time column '%s' has type %s (allowed: timestamp, "
                          "date, integer, string)",
                          o->dataset, o->time_column, tn);
    }
    c->time_format = o->time_format != TM_TIME_FORMAT_UNSET ? o->time_format
                                                            : tm_engine__default_time_format(t);
  }
  TM_TRY(resolve_on_conflict(c, s, o->on_conflict, err));
  TM_TRY(resolve_indexes(c, s, o, err));
  c->busy_timeout_ms = o->busy_timeout_ms > 0 ? o->busy_timeout_ms : DEFAULT_BUSY_MS;
  return TM_OK;
}

int tm_engine__init_base(tm_engine *e, const tm_engine_vtable *vt, const tm_schema *schema,
                         const tm_engine_options *opts, tm_error *err) {
  e->vt = vt;
  e->refs = 1;
  e->txn_open = 0;
  e->db = tm_db_retain(opts->db);
  tm_schema_init(&e->schema);
  memset(&e->cfg, 0, sizeof e->cfg);
  int rc = tm_schema_copy(&e->schema, schema, err);
  if (rc == TM_OK) rc = resolve_config(&e->cfg, &e->schema, opts, err);
  if (rc < 0) {
    tm_engine__dispose_base(e);
    e->vt = NULL; /* tells the backend's error path that the base is gone */
    return rc;
  }
  return TM_OK;
}

void tm_engine__dispose_base(tm_engine *e) {
  tm_schema_dispose(&e->schema);
  dispose_config(&e->cfg);
  tm_db_release(e->db);
  e->db = NULL;
}

tm_engine *tm_engine__try_retain(tm_engine *e) {
  int n = __atomic_load_n(&e->refs, __ATOMIC_ACQUIRE);
  while (n > 0)
    if (__atomic_compare_exchange_n(&e->refs, &n, n + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return e;
  return NULL;
}

int tm_engine__quote_ident(tm_buf *b, const char *name, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const char *p = name; *p; p++) {
    if (*p == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, *p, err));
  }
  return tm_buf_putc(b, '"', err);
}

int tm_engine__quote_string(tm_buf *b, const char *s, size_t len, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '\'', err));
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\'') TM_TRY(tm_buf_putc(b, '\'', err));
    TM_TRY(tm_buf_putc(b, s[i], err));
  }
  return tm_buf_putc(b, '\'', err);
}

int tm_engine__writer_acquire(tm_engine *e, tm_error *err) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&e->txn_open, &expected, 1, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return tm_error_set(err, TM_ECONFLICT,
                        "dataset '%s': a write transaction or compaction is already running",
                        e->cfg.dataset);
  return TM_OK;
}

void tm_engine__writer_release(tm_engine *e) {
  __atomic_store_n(&e->txn_open, 0, __ATOMIC_RELEASE);
}

int tm_engine__check_batch(const tm_engine *e, const tm_batch *b, tm_error *err) {
  const tm_schema *s = &e->schema;
  if (b->schema.n_cols != s->n_cols)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': batch has %zu columns, table has %zu",
                        e->cfg.dataset, b->schema.n_cols, s->n_cols);
  for (size_t i = 0; i < s->n_cols; i++) {
    const tm_column *a = &b->schema.cols[i], *c = &s->cols[i];
    if (strcmp(a->name, c->name) != 0 || !tm_type_equal(&a->type, &c->type)) {
      char ta[64], tc[64];
      tm_type_name(&a->type, ta, sizeof ta);
      tm_type_name(&c->type, tc, sizeof tc);
      return tm_error_set(err, TM_EINVALID,
                          "dataset '%s': batch column %zu is '%s' %s, table has '%s' %s",
                          e->cfg.dataset, i, a->name, ta, c->name, tc);
    }
  }
  if (b->n_rows > 0 && (!b->array.release || b->array.n_children != (int64_t)s->n_cols))
    return tm_error_set(err, TM_EINVALID, "dataset '%s': batch has no column arrays",
                        e->cfg.dataset);
  return TM_OK;
}

/* ---- time ------------------------------------------------------------------ */

/* ---- dispatch ---------------------------------------------------------------- */

/*
 * SQLite allocates through tm_malloc (SQLITE_CONFIG_MALLOC), like the rest of
 * the program: allocation-failure tests reach SQLite's own failure paths, and
 * tm_alloc_live sees its blocks. Each block carries its size in a 16-byte
 * header (SQLite asks for it; 16 keeps malloc's alignment).
 */
#define SQ_HEADER 16

static void *sq_malloc(int n) {
  char *p = tm_malloc((size_t)(n > 0 ? n : 1) + SQ_HEADER);
  if (!p) return NULL;
  int64_t size = n > 0 ? n : 1;
  memcpy(p, &size, sizeof size);
  return p + SQ_HEADER;
}

static void sq_free(void *p) {
  if (p) tm_free((char *)p - SQ_HEADER);
}

static void *sq_realloc(void *p, int n) {
  if (!p) return sq_malloc(n);
  char *q = tm_realloc((char *)p - SQ_HEADER, (size_t)(n > 0 ? n : 1) + SQ_HEADER);
  if (!q) return NULL;
  int64_t size = n > 0 ? n : 1;
  memcpy(q, &size, sizeof size);
  return q + SQ_HEADER;
}

static int sq_size(void *p) {
  if (!p) return 0;
  int64_t size;
  memcpy(&size, (char *)p - SQ_HEADER, sizeof size);
  return (int)size;
}

static int sq_roundup(int n) { return (n + 7) & ~7; }
static int sq_init(void *payload) {
  (void)payload;
  return SQLITE_OK;
}
static void sq_shutdown(void *payload) { (void)payload; }

static const sqlite3_mem_methods k_sq_mem = {sq_malloc, sq_free,     sq_realloc, sq_size,
                                             sq_roundup, sq_init, sq_shutdown, NULL};

/*
 * SQLite's allocation statistics take a global mutex on every malloc; every
 * engine and session connection would serialize on it. Turned off once, before
 * SQLite initializes (later calls are refused by SQLite and harmless: a
 * program that used SQLite first keeps SQLite's allocator).
 */
static pthread_once_t g_sqlite_once = PTHREAD_ONCE_INIT;
static void sqlite_setup(void) {
  sqlite3_config(SQLITE_CONFIG_MALLOC, &k_sq_mem);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
void tm_engine__sqlite_setup(void) { pthread_once(&g_sqlite_once, sqlite_setup); }

int tm_engine_open(tm_engine **out, tm_engine_kind kind, const tm_schema *schema,
                   const tm_engine_options *opts, tm_error *err) {
  const tm_engine_vtable *vt = tm_engine__vtable(kind);
  if (!vt) return tm_error_set(err, TM_EINVALID, "unknown engine kind %d", (int)kind);
  if (!opts || opts->version != TM_ENGINE_OPTIONS_VERSION)
    return tm_error_set(err, TM_EINVALID, "engine options of an unknown version");
  if (!(vt->traits.modes & (1u << opts->mode)))
    return tm_error_set(err, TM_EINVALID, "dataset '%s': engine %s does not support mode %s",
                        opts->dataset ? opts->dataset : "?", tm_engine_kind_name(kind),
                        tm_engine_mode_name(opts->mode));
  if (!schema && opts->mode != TM_ENGINE_FILE)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': a memory-mode engine needs a schema",
                        opts->dataset ? opts->dataset : "?");
  if (!opts->db)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': engine options without a DuckDB instance",
                        opts->dataset ? opts->dataset : "?");
  tm_engine__sqlite_setup();
  return vt->open(out, schema, opts, err);
}

int tm_engine_drop(tm_engine_kind kind, const tm_engine_options *opts, tm_error *err) {
  const tm_engine_vtable *vt = tm_engine__vtable(kind);
  if (!vt) return tm_error_set(err, TM_EINVALID, "unknown engine kind %d", (int)kind);
  if (opts->mode != TM_ENGINE_FILE) return TM_OK;
  return vt->drop(opts, err);
}

tm_engine *tm_engine_retain(tm_engine *e) {
  __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
  return e;
}

void tm_engine_release(tm_engine *e) {
  if (!e) return;
  if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) e->vt->close(e);
}

tm_engine_kind tm_engine_get_kind(const tm_engine *e) { return e->vt->traits.kind; }
tm_engine_mode tm_engine_get_mode(const tm_engine *e) { return e->cfg.mode; }
const char *tm_engine_dataset(const tm_engine *e) { return e->cfg.dataset; }
const tm_schema *tm_engine_schema(const tm_engine *e) { return &e->schema; }

bool tm_engine_schema_matches(const tm_engine *e, const tm_schema *s) {
  if (!e->vt->traits.nested_as_json) return tm_schema_equal(&e->schema, s);
  /* A nested source column is stored as JSON text; where the engine tells JSON columns from
   * text ones (json_cols), a text source column on a JSON one (or the reverse) is a change. */
  if (e->schema.n_cols != s->n_cols) return false;
  for (size_t i = 0; i < s->n_cols; i++) {
    const tm_column *a = &e->schema.cols[i], *b = &s->cols[i];
    bool nested = tm_type_is_nested(&b->type);
    if (strcmp(a->name, b->name) != 0 || a->nullable != b->nullable) return false;
    if (nested ? a->type.id != TM_TYPE_UTF8 : !tm_type_equal(&a->type, &b->type)) return false;
    if (e->json_cols && e->json_cols[i] != nested) return false;
  }
  return true;
}

int tm_engine_begin(tm_engine *e, tm_txn_kind kind, tm_engine_txn **out, tm_error *err) {
  return e->vt->begin(e, kind, out, err);
}

int tm_engine_txn_write(tm_engine_txn *t, const tm_batch *b, tm_error *err) {
  /* An engine that keeps nested values as JSON text (sqlite: its schema has
   * utf8 where the source has LIST/STRUCT/MAP) gets them as text. */
  bool to_json = false;
  for (size_t i = 0; i < b->schema.n_cols && i < t->engine->schema.n_cols; i++)
    if (tm_type_is_nested(&b->schema.cols[i].type) &&
        t->engine->schema.cols[i].type.id == TM_TYPE_UTF8)
      to_json = true;
  if (to_json) {
    tm_batch j;
    tm_batch_init(&j);
    int rc = tm_batch_nested_as_json(b, &j, err);
    if (rc == TM_OK) rc = tm_engine__check_batch(t->engine, &j, err);
    if (rc == TM_OK && j.n_rows > 0) rc = t->engine->vt->write(t, &j, err);
    tm_batch_release(&j);
    return rc;
  }
  TM_TRY(tm_engine__check_batch(t->engine, b, err));
  if (b->n_rows == 0) return TM_OK;
  return t->engine->vt->write(t, b, err);
}

int tm_engine_txn_delete_where(tm_engine_txn *t, const char *where_sql, int64_t *n_out,
                               tm_error *err) {
  int64_t n = 0;
  if (!where_sql || !*where_sql)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': empty delete condition",
                        t->engine->cfg.dataset);
  TM_TRY(t->engine->vt->delete_where(t, where_sql, &n, err));
  if (n_out) *n_out = n;
  return TM_OK;
}

int tm_engine_txn_delete_provenance(tm_engine_txn *t, const tm_batch *keys, int64_t *n_out,
                                    tm_error *err) {
  const char *ds = t->engine->cfg.dataset;
  if (n_out) *n_out = 0;
  if (tm_engine_hidden_columns(&t->engine->schema) != TM_PROV_COLUMNS)
    return tm_error_set(err, TM_EINVALID,
                        "dataset '%s': no provenance columns to delete by (refresh_mode: changes)", ds);
  size_t n = keys->schema.n_cols;
  if (n != 2 && n != 3)
    return tm_error_set(err, TM_EINVALID,
                        "dataset '%s': provenance keys have %zu columns (want seq, file[, pos])", ds, n);
  for (size_t c = 0; c < n; c++) {
    tm_colview v = tm_batch_col(keys, c);
    if (keys->schema.cols[c].type.id != TM_TYPE_INT64)
      return tm_error_set(err, TM_EINVALID, "dataset '%s': provenance key column %zu is not int64",
                          ds, c);
    for (int64_t r = 0; r < keys->n_rows; r++)
      if (tm_colview_is_null(&v, r))
        return tm_error_set(err, TM_EINVALID, "dataset '%s': a provenance key is NULL", ds);
  }
  if (keys->n_rows == 0) return TM_OK;
  int64_t k = 0;
  TM_TRY(t->engine->vt->delete_provenance(t, keys, &k, err));
  if (n_out) *n_out = k;
  return TM_OK;
}

int tm_engine_txn_delete_before(tm_engine_txn *t, int64_t sec, int32_t nsec, int64_t *n_out,
                                tm_error *err) {
  int64_t n = 0;
  if (t->engine->cfg.time_col < 0)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': retention needs a time_column",
                        t->engine->cfg.dataset);
  TM_TRY(t->engine->vt->delete_before(t, sec, nsec, &n, err));
  if (n_out) *n_out = n;
  return TM_OK;
}

int tm_engine_txn_commit(tm_engine_txn *t, const tm_kv *state, tm_engine_commit_info *info,
                         tm_error *err) {
  tm_engine_commit_info local;
  memset(&local, 0, sizeof local);
  int rc = t->engine->vt->commit(t, state, &local, err);
  if (rc == TM_OK && info) *info = local;
  return rc;
}

void tm_engine_txn_abort(tm_engine_txn *t) {
  if (t) t->engine->vt->abort(t);
}

int tm_engine_read_state(tm_engine *e, tm_kv *out, tm_error *err) {
  return e->vt->read_state(e, out, err);
}

int tm_engine_row_count(tm_engine *e, int64_t *out, tm_error *err) {
  return e->vt->row_count(e, out, err);
}

void tm_engine_bounds_dispose(tm_engine_bounds *b) {
  tm_free(b->owned[0]);
  tm_free(b->owned[1]);
  memset(b, 0, sizeof *b);
}

int tm_engine_column_bounds(tm_engine *e, const char *column, tm_engine_bounds *out,
                            tm_error *err) {
  memset(out, 0, sizeof *out);
  int idx = tm_schema_find(&e->schema, column);
  if (idx < 0)
    return tm_error_set(err, TM_ENOTFOUND, "dataset '%s': no column '%s'", e->cfg.dataset, column);
  return e->vt->bounds(e, (size_t)idx, out, err);
}

int tm_engine_scan_open(tm_engine *e, const size_t *cols, size_t n_cols,
                        const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  const tm_schema *sc = &e->schema;
  for (size_t i = 0; cols && i < n_cols; i++)
    if (cols[i] >= sc->n_cols)
      return tm_error_set(err, TM_EINVALID, "dataset '%s': scan column %zu out of range",
                          e->cfg.dataset, cols[i]);
  if (pred)
    for (size_t i = 0; i < pred->n_terms; i++) {
      int idx = tm_schema_find(sc, pred->terms[i].column);
      if (idx < 0)
        return tm_error_set(err, TM_EINVALID, "dataset '%s': filter on unknown column '%s'",
                            e->cfg.dataset, pred->terms[i].column);
      if (sc->cols[idx].type.id != pred->terms[i].type.id)
        return tm_error_set(err, TM_EINVALID, "dataset '%s': filter on '%s' has the wrong type",
                            e->cfg.dataset, pred->terms[i].column);
    }
  return e->vt->scan(e, n_cols ? cols : NULL, n_cols, pred, out, err);
}

int tm_engine_scan_next(tm_engine_scan *sc, tm_batch *out, tm_error *err) {
  return sc->engine->vt->scan_next(sc, out, err);
}

void tm_engine_scan_free(tm_engine_scan *sc) {
  if (sc) sc->engine->vt->scan_free(sc);
}

int tm_engine_size_bytes(tm_engine *e, uint64_t *out, tm_error *err) {
  return e->vt->size_bytes(e, out, err);
}

int tm_engine_verify(tm_engine *e, tm_error *err) { return e->vt->verify(e, err); }

const char *tm_engine__scan_provider(tm_engine *e) {
  switch (e->vt->traits.kind) {
    case TM_ENGINE_SQLITE: return tm_engine__sqlite_provider(e);
    case TM_ENGINE_POSTGRES: return tm_engine__pg_provider(e);
    default: return NULL;
  }
}

int tm_engine_lease_take(tm_engine_kind kind, const tm_engine_options *opts,
                         tm_engine_lease **lease_out, bool *got, tm_error *err) {
  const tm_engine_vtable *vt = tm_engine__vtable(kind);
  *lease_out = NULL;
  *got = true;
  if (!vt) return tm_error_set(err, TM_EINVALID, "unknown engine kind %d", (int)kind);
  if (!vt->lease_take) return TM_OK;
  return vt->lease_take(opts, lease_out, got, err);
}

void tm_engine_lease_release(tm_engine_lease *l) {
  if (!l) return;
  /* Only the postgres backend hands out leases. */
  tm_engine__pg_vtable()->lease_release(l);
}

int tm_engine_relation(tm_engine *e, tm_buf *out, tm_error *err) {
  return e->vt->relation(e, out, err);
}

/* ---- schema text ----------------------------------------------------------------- */

int tm_engine__schema_encode(const tm_schema *s, tm_buf *out, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    const tm_column *c = &s->cols[i];
    char fmt[64];
    if (tm_type_to_arrow_format(&c->type, fmt, sizeof fmt) != TM_OK)
      return tm_error_set(err, TM_EUNSUPPORTED, "column '%s' has a type without a format",
                          c->name);
    if (tm_type_is_nested(&c->type)) {
      /* "+n<length>": the encoded type follows the name (issue 16). */
      tm_buf enc;
      tm_buf_init(&enc, (size_t)1 << 26);
      int rc = tm_type_encode(&c->type, &enc, err);
      if (rc == TM_OK)
        rc = tm_buf_printf(out, err, "+n%zu|%d|0|%d|%zu|%s", enc.len, c->nullable ? 1 : 0,
                           (int)c->field_id, strlen(c->name), c->name);
      if (rc == TM_OK) rc = tm_buf_append(out, enc.ptr, enc.len, err);
      tm_buf_dispose(&enc);
      TM_TRY(rc);
      TM_TRY(tm_buf_putc(out, '\n', err));
      continue;
    }
    TM_TRY(tm_buf_printf(out, err, "%s|%d|%d|%d|%zu|", fmt, c->nullable ? 1 : 0,
                         c->type.uuid ? 1 : 0, (int)c->field_id, strlen(c->name)));
    TM_TRY(tm_buf_puts(out, c->name, err));
    TM_TRY(tm_buf_putc(out, '\n', err));
  }
  return TM_OK;
}

/* Reads the next '|'-terminated field of line [*pos, end). */
static bool next_field(const char *s, size_t end, size_t *pos, tm_strview *out) {
  size_t i = *pos;
  while (i < end && s[i] != '|') i++;
  if (i >= end) return false;
  *out = tm_sv(s + *pos, i - *pos);
  *pos = i + 1;
  return true;
}

int tm_engine__schema_decode(tm_schema *out, const char *text, size_t len, tm_error *err) {
  size_t pos = 0;
  while (pos < len) {
    tm_strview f[5];
    for (int k = 0; k < 5; k++)
      if (!next_field(text, len, &pos, &f[k])) return TM_CORRUPT(err, "stored schema is malformed");
    int64_t nullable, uuid, field_id;
    uint64_t name_len;
    if (tm_parse_int64(f[1].ptr, f[1].len, &nullable) != TM_OK ||
        tm_parse_int64(f[2].ptr, f[2].len, &uuid) != TM_OK ||
        tm_parse_int64(f[3].ptr, f[3].len, &field_id) != TM_OK ||
        tm_parse_uint64(f[4].ptr, f[4].len, &name_len) != TM_OK || name_len > len - pos ||
        f[0].len >= 64)
      return TM_CORRUPT(err, "stored schema is malformed");
    uint64_t enc_len = 0;
    bool nested = f[0].len > 2 && f[0].ptr[0] == '+' && f[0].ptr[1] == 'n';
    if (nested && (tm_parse_uint64(f[0].ptr + 2, f[0].len - 2, &enc_len) != TM_OK ||
                   enc_len > len - pos - name_len))
      return TM_CORRUPT(err, "stored schema is malformed");
    if (pos + name_len + enc_len >= len || text[pos + name_len + enc_len] != '\n')
      return TM_CORRUPT(err, "stored schema is malformed");
    char fmt[64];
    memcpy(fmt, f[0].ptr, f[0].len);
    fmt[f[0].len] = '\0';
    tm_type t;
    tm_error sub;
    tm_error_init(&sub);
    if (nested) {
      if (tm_type_decode(text + pos + name_len, (size_t)enc_len, &t, &sub) != TM_OK)
        return TM_CORRUPT(err, "stored schema has a malformed nested type: %s", sub.message);
    } else if (tm_type_from_arrow_format(fmt, &t, &sub) != TM_OK) {
      return TM_CORRUPT(err, "stored schema has an unknown type '%s'", fmt);
    }
    if (!nested) t.uuid = uuid != 0;
    char *name = tm_strndup(text + pos, (size_t)name_len);
    if (!name) return tm_error_nomem(err);
    int rc = tm_schema_add(out, name, t, nullable != 0, (int32_t)field_id, err);
    tm_free(name);
    TM_TRY(rc);
    pos += (size_t)name_len + (size_t)enc_len + 1;
  }
  return TM_OK;
}

int tm_engine__options_fingerprint(const tm_engine *e, tm_buf *out, tm_error *err) {
  TM_TRY(tm_buf_puts(out, "pk=", err));
  for (size_t i = 0; i < e->cfg.n_pk; i++) {
    if (i) TM_TRY(tm_buf_putc(out, ',', err));
    TM_TRY(tm_buf_puts(out, e->schema.cols[e->cfg.pk[i]].name, err));
  }
  /* The time column decides which keyed row wins; unkeyed rows do not depend on it. */
  TM_TRY(tm_buf_puts(out, ";time=", err));
  if (e->cfg.time_col >= 0 && e->cfg.n_pk > 0) {
    TM_TRY(tm_buf_puts(out, e->schema.cols[e->cfg.time_col].name, err));
    TM_TRY(tm_buf_printf(out, err, ":%s", tm_time_format_name(e->cfg.time_format)));
  }
  return TM_OK;
}

size_t tm_engine_hidden_columns(const tm_schema *s) {
  static const char *const names[] = {TM_PROV_SEQ, TM_PROV_FILE, TM_PROV_POS};
  size_t n = sizeof names / sizeof names[0];
  if (s->n_cols <= n) return 0;
  for (size_t i = 0; i < n; i++) {
    const tm_column *c = &s->cols[s->n_cols - n + i];
    if (strcmp(c->name, names[i]) != 0 || c->type.id != TM_TYPE_INT64) return 0;
  }
  return n;
}

/* ---- statement shares (engine_int.h) ------------------------------------------------- */

int tm_engine__share_take(tm_engine_shares *l, uint64_t query, tm_engine_share **out,
                          tm_error *err) {
  pthread_mutex_lock(l->mu);
  for (tm_engine_share *sh = l->head; sh; sh = sh->next)
    if (sh->query == query) {
      sh->refs++;
      pthread_mutex_unlock(l->mu);
      *out = sh;
      return TM_OK;
    }
  pthread_mutex_unlock(l->mu);
  tm_engine_share *sh = tm_calloc(1, sizeof *sh);
  if (!sh) return tm_error_nomem(err);
  int rc = l->begin(l->backend, &sh->conn, err);
  if (rc < 0) {
    tm_free(sh);
    return rc;
  }
  pthread_mutex_init(&sh->mu, NULL);
  sh->query = query;
  sh->refs = 1;
  pthread_mutex_lock(l->mu);
  sh->next = l->head;
  l->head = sh;
  pthread_mutex_unlock(l->mu);
  *out = sh;
  return TM_OK;
}

void tm_engine__share_put(tm_engine_shares *l, tm_engine_share *sh) {
  pthread_mutex_lock(l->mu);
  bool last = --sh->refs == 0;
  if (last)
    for (tm_engine_share **pp = &l->head; *pp; pp = &(*pp)->next)
      if (*pp == sh) {
        *pp = sh->next;
        break;
      }
  pthread_mutex_unlock(l->mu);
  if (!last) return;
  l->end(l->backend, sh->conn);
  pthread_mutex_destroy(&sh->mu);
  tm_free(sh);
}
