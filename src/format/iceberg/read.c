/*
 * read.c - Iceberg rows from Parquet data files: columns by field id (or
 * name mapping), values converted to the table's types, position and
 * equality deletes applied (format layer). See read.h.
 */
#include "format/iceberg/read.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "format/arrow/render.h"
#include "format/iceberg/iceberg_int.h"
#include "format/parquet/parquet.h"
#include "format/puffin/puffin.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/time.h"

#define POS_PATH_ID 2147483546
#define POS_POS_ID 2147483545
#define POS_POS_ID_META 2147483645 /* the _pos metadata column */
#define READ_ARENA_LIMIT ((size_t)1 << 32)
#define DELETE_BATCH_ROWS 1024 /* delete files are decoded in small batches */

/* ---- initial defaults (JSON single-value serialisation) --------------------- */

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Parses a decimal string ("14.20", "-3") at scale into 16 LE bytes. */
static bool parse_decimal(const char *s, int32_t scale, uint8_t out[16]) {
  __int128 v = 0;
  bool neg = false, dot = false;
  int frac = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (!*s) return false;
  for (; *s; s++) {
    if (*s == '.' && !dot) {
      dot = true;
      continue;
    }
    if (*s < '0' || *s > '9') return false;
    if (dot) frac++;
    v = v * 10 + (*s - '0');
  }
  if (frac > scale) return false;
  for (; frac < scale; frac++) v *= 10;
  if (neg) v = -v;
  memcpy(out, &v, 16);
  return true;
}

/* The initial-default of a field as a value of type t (payload in a). */
bool tm_iceberg__default_value(tm_arena *a, const tm_iceberg_field *f, const tm_type *t,
                          tm_value *out) {
  memset(out, 0, sizeof *out);
  out->type = t->id;
  out->is_null = true;
  if (!f->initial_default) return true;
  json_t *j = json_loads(f->initial_default, JSON_DECODE_ANY, NULL);
  if (!j) return false;
  bool ok = true;
  const char *s = json_string_value(j);
  tm_error ignore;
  out->is_null = json_is_null(j);
  if (!out->is_null) {
    switch (t->id) {
      case TM_TYPE_BOOL:
        ok = json_is_boolean(j);
        out->v.b = json_is_true(j);
        break;
      case TM_TYPE_INT32:
      case TM_TYPE_INT64:
        ok = json_is_integer(j);
        out->v.i = json_integer_value(j);
        break;
      case TM_TYPE_FLOAT32:
      case TM_TYPE_FLOAT64:
        ok = json_is_number(j);
        out->v.f = json_number_value(j);
        break;
      case TM_TYPE_DECIMAL128:
        ok = s && parse_decimal(s, t->scale, out->v.dec);
        break;
      case TM_TYPE_DATE32: {
        int64_t sec;
        int32_t ns;
        bool zone;
        ok = s && tm_time_parse(s, strlen(s), &sec, &ns, &zone) == TM_OK;
        out->v.i = ok ? tm_floor_div(sec, 86400) : 0;
        break;
      }
      case TM_TYPE_TIMESTAMP: {
        int64_t sec;
        int32_t ns;
        bool zone;
        ok = s && tm_time_parse(s, strlen(s), &sec, &ns, &zone) == TM_OK;
        out->v.i = ok ? sec * tm_unit_per_second(t->unit) + ns / (1000000000 / tm_unit_per_second(t->unit)) : 0;
        break;
      }
      case TM_TYPE_TIME64: {
        /* "HH:MM:SS[.ffffff]" */
        int64_t sec;
        int32_t ns;
        bool zone;
        char buf[64];
        snprintf(buf, sizeof buf, "1970-01-01T%s", s ? s : "");
        ok = s && tm_time_parse(buf, strlen(buf), &sec, &ns, &zone) == TM_OK;
        out->v.i = ok ? sec * tm_unit_per_second(t->unit) + ns / (1000000000 / tm_unit_per_second(t->unit)) : 0;
        break;
      }
      case TM_TYPE_UTF8: {
        char *p = s ? tm_arena_strndup(a, s, strlen(s), &ignore) : NULL;
        ok = p != NULL;
        if (ok) out->v.s = tm_sv(p, strlen(p));
        break;
      }
      case TM_TYPE_BINARY:
      case TM_TYPE_FIXED_BINARY: {
        /* uuid: the usual text form; fixed and binary: hex */
        size_t len = s ? strlen(s) : 0;
        uint8_t *p = tm_arena_alloc(a, len / 2 + 1, &ignore);
        size_t n = 0;
        int hi = -1;
        for (size_t i = 0; p && i < len; i++) {
          int d = hexval(s[i]);
          if (d < 0) continue;
          if (hi < 0) {
            hi = d;
          } else {
            p[n++] = (uint8_t)(hi << 4 | d);
            hi = -1;
          }
        }
        ok = p && (t->id == TM_TYPE_BINARY || n == (size_t)t->width);
        if (ok) out->v.s = tm_sv((const char *)p, n);
        break;
      }
      default:
        ok = false;
    }
  }
  json_decref(j);
  if (!ok) out->is_null = true;
  return ok;
}

/* ---- schemas ------------------------------------------------------------------ */

int tm_iceberg_schema_to_tm(const tm_iceberg_schema *s, tm_schema *out, tm_error *err) {
  for (size_t i = 0; i < s->root->n_fields; i++) {
    const tm_iceberg_field *f = &s->root->fields[i];
    tm_type t;
    int rc = tm_iceberg_type_to_tm(f->type, &t, err);
    if (rc < 0) return tm_error_prefix(err, "column '%s'", f->name);
    TM_TRY(tm_schema_add(out, f->name, t, !f->required || !tm_iceberg_type_is_primitive(f->type),
                         f->id, err));
  }
  return TM_OK;
}

/* The table type of a field id: the current schema, then older ones. */
static const tm_iceberg_field *field_any_schema(const tm_iceberg_metadata *m, int32_t id) {
  const tm_iceberg_field *f = tm_iceberg_schema_find_id(tm_iceberg_metadata_current_schema(m), id);
  for (size_t i = m->n_schemas; !f && i > 0; i--) f = tm_iceberg_schema_find_id(&m->schemas[i - 1], id);
  return f;
}

/* Same ids, names, requiredness and types, recursively. */
static bool same_type(const tm_iceberg_type *a, const tm_iceberg_type *b);
static bool same_field(const tm_iceberg_field *a, const tm_iceberg_field *b) {
  return a->id == b->id && a->required == b->required && strcmp(a->name, b->name) == 0 &&
         same_type(a->type, b->type);
}
static bool same_type(const tm_iceberg_type *a, const tm_iceberg_type *b) {
  if (a->id != b->id) return false;
  switch (a->id) {
    case TM_ICEBERG_STRUCT:
      if (a->n_fields != b->n_fields) return false;
      for (size_t i = 0; i < a->n_fields; i++)
        if (!same_field(&a->fields[i], &b->fields[i])) return false;
      return true;
    case TM_ICEBERG_LIST: return same_field(a->element, b->element);
    case TM_ICEBERG_MAP: return same_field(a->key, b->key) && same_field(a->value, b->value);
    default: return a->text && b->text ? strcmp(a->text, b->text) == 0 : a->text == b->text;
  }
}

/*
 * A nested column with a part that has no native type (nested_shape) can be
 * read only as JSON text of the data file's own members (nested.c). That is
 * the table's value only while the column's subtree is the same in every
 * schema the table has had; else the column is refused, never read wrong.
 */
static int nested_readable(const tm_iceberg_metadata *m, const tm_iceberg_field *fld,
                           tm_error *err) {
  for (size_t i = 0; i < m->n_schemas; i++) {
    const tm_iceberg_field *o = tm_iceberg_schema_find_id(&m->schemas[i], fld->id);
    if (o && !same_field(o, fld)) {
      return tm_error_set(err, TM_EUNSUPPORTED,
                          "nested column '%s' changed inside between the table's schemas "
                          "(schema %d), and a part of it can be read only as the data file's "
                          "JSON text, in the file's own shape",
                          fld->name, (int)m->schemas[i].schema_id);
    }
  }
  return TM_OK;
}

/* Finds the Parquet field holding Iceberg field id (or -1). */
static int file_field(const tm_iceberg_metadata *m, tm_parquet_file *pf, bool has_ids,
                      int32_t id, const char *name) {
  if (has_ids) return tm_parquet_find_field_id(pf, id);
  if (m->name_mapping) {
    for (size_t i = 0; i < tm_parquet_num_fields(pf); i++) {
      const tm_parquet_field *f = tm_parquet_field_at(pf, i);
      if (tm_iceberg_name_mapping_find(m->name_mapping, f->name) == id) return (int)i;
    }
    return -1;
  }
  return name ? tm_parquet_find_field(pf, name) : -1;
}

static bool file_has_ids(tm_parquet_file *pf) {
  for (size_t i = 0; i < tm_parquet_num_fields(pf); i++) {
    if (tm_parquet_field_at(pf, i)->field_id >= 0) return true;
  }
  return false;
}

/* ---- position deletes --------------------------------------------------------- */

typedef struct posvec {
  int64_t *v;
  size_t n, cap;
} posvec;

typedef struct pos_file {
  tm_map by_key; /* data file key -> posvec* (owned) */
} pos_file;

static void posvec_free(void *p) {
  posvec *v = p;
  if (!v) return;
  tm_free(v->v);
  tm_free(v);
}

static void pos_file_free(void *p) {
  pos_file *pf = p;
  if (!pf) return;
  tm_map_dispose(&pf->by_key, posvec_free);
  tm_free(pf);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* ---- equality deletes ---------------------------------------------------------- */

typedef struct eq_set {
  size_t n_ids;
  int32_t *ids;
  tm_type *types;   /* canonical (table) types */
  tm_value *rows;   /* n_rows x n_ids, payloads in arena */
  uint64_t *hashes;
  size_t n_rows, cap_rows;
  int64_t *slots;   /* open addressing: row index + 1, 0 empty */
  size_t n_slots;
  tm_arena arena;
} eq_set;

static void eq_set_free(void *p) {
  eq_set *s = p;
  if (!s) return;
  tm_free(s->ids);
  tm_free(s->types);
  tm_free(s->rows);
  tm_free(s->hashes);
  tm_free(s->slots);
  tm_arena_dispose(&s->arena);
  tm_free(s);
}

static uint64_t tuple_hash(const tm_value *vals, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < n; i++) h = tm_hash_combine(h, tm_value_hash(&vals[i]));
  return h;
}

static bool tuple_eq(const tm_value *a, const tm_value *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (a[i].is_null != b[i].is_null) return false;
    if (!a[i].is_null && tm_value_cmp(&a[i], &b[i]) != 0) return false;
  }
  return true;
}

static int eq_rehash(eq_set *s, tm_error *err) {
  size_t n = s->n_slots ? s->n_slots * 2 : 64;
  int64_t *slots = tm_calloc(n, sizeof *slots);
  if (!slots) return tm_error_nomem(err);
  for (size_t r = 0; r < s->n_rows; r++) {
    size_t i = s->hashes[r] & (n - 1);
    while (slots[i]) i = (i + 1) & (n - 1);
    slots[i] = (int64_t)r + 1;
  }
  tm_free(s->slots);
  s->slots = slots;
  s->n_slots = n;
  return TM_OK;
}

static bool eq_contains(const eq_set *s, const tm_value *vals) {
  if (!s->n_slots) return false;
  uint64_t h = tuple_hash(vals, s->n_ids);
  for (size_t i = h & (s->n_slots - 1); s->slots[i]; i = (i + 1) & (s->n_slots - 1)) {
    size_t r = (size_t)s->slots[i] - 1;
    if (s->hashes[r] == h && tuple_eq(&s->rows[r * s->n_ids], vals, s->n_ids)) return true;
  }
  return false;
}

/* Adds a row (values already canonical; payloads copied into the arena). */
static int eq_add(eq_set *s, const tm_value *vals, tm_error *err) {
  if (eq_contains(s, vals)) return TM_OK;
  if (s->n_rows == s->cap_rows) {
    size_t cap = s->cap_rows ? s->cap_rows * 2 : 64;
    tm_value *rows = tm_reallocarray(s->rows, cap * s->n_ids, sizeof *rows);
    if (!rows) return tm_error_nomem(err);
    s->rows = rows;
    uint64_t *hs = tm_reallocarray(s->hashes, cap, sizeof *hs);
    if (!hs) return tm_error_nomem(err);
    s->hashes = hs;
    s->cap_rows = cap;
  }
  tm_value *dst = &s->rows[s->n_rows * s->n_ids];
  for (size_t k = 0; k < s->n_ids; k++) {
    dst[k] = vals[k];
    if (!vals[k].is_null && (vals[k].type == TM_TYPE_UTF8 || vals[k].type == TM_TYPE_BINARY ||
                             vals[k].type == TM_TYPE_FIXED_BINARY)) {
      char *p = tm_arena_strndup(&s->arena, vals[k].v.s.ptr, vals[k].v.s.len, err);
      if (!p) return err->code;
      dst[k].v.s.ptr = p;
    }
  }
  s->hashes[s->n_rows] = tuple_hash(dst, s->n_ids);
  s->n_rows++;
  if (s->n_rows * 2 > s->n_slots) return eq_rehash(s, err);
  size_t i = s->hashes[s->n_rows - 1] & (s->n_slots - 1);
  while (s->slots[i]) i = (i + 1) & (s->n_slots - 1);
  s->slots[i] = (int64_t)s->n_rows;
  return TM_OK;
}

/* ---- the reader ------------------------------------------------------------------ */

typedef struct task {
  const tm_iceberg_data_file *file;
  const tm_iceberg_data_file *const *deletes;
  size_t n_deletes;
  char *key; /* owned */
} task;

typedef struct eq_ref {
  eq_set *set;
  int *src;          /* per id: index in the scan projection, or -1 */
  tm_value *consts;  /* per id: constant when src < 0 */
} eq_ref;

typedef struct file_state {
  tm_parquet_file *pf;
  size_t n_rg, rg;
  int64_t next_row;       /* file row index of the next batch */
  tm_parquet_scan *scan;
  tm_predicate file_filter; /* the filter in the file's column names */
  size_t *proj;           /* Parquet fields read */
  size_t n_proj;
  int *out_src;           /* per output column: index in proj, or -1 */
  tm_value *out_const;    /* per output column: constant when out_src < 0 */
  int64_t *positions;     /* sorted deleted row positions */
  size_t n_positions;
  eq_ref *eqs;
  size_t n_eqs;
  tm_iceberg__shape **shapes; /* per output column: a nested column reshaped, or NULL */
  bool *native;           /* per proj entry: read natively (a reshaped nested column) */
  tm_arena arena;
} file_state;

struct tm_iceberg_rows {
  const tm_iceberg_table *t;
  const tm_iceberg_metadata *m;
  const tm_iceberg_schema *schema;
  tm_iceberg_read_options o;
  tm_schema out_schema;
  const tm_iceberg_field **out_fields;
  size_t n_out;
  task *tasks;
  size_t n_tasks, cur;
  tm_map pos_cache; /* delete file path -> pos_file* */
  tm_map eq_cache;  /* delete file path -> eq_set* */
  tm_map puffin_cache; /* Puffin file path -> tm_puffin_file* (deletion vectors) */
  file_state *fs;
  tm_iceberg_read_stats stats;
};

static void file_state_free(file_state *fs) {
  if (!fs) return;
  tm_parquet_scan_free(fs->scan);
  tm_parquet_close(fs->pf);
  tm_predicate_dispose(&fs->file_filter);
  tm_free(fs->proj);
  tm_free(fs->out_src);
  tm_free(fs->out_const);
  tm_free(fs->shapes);
  tm_free(fs->native);
  tm_free(fs->positions);
  for (size_t i = 0; i < fs->n_eqs; i++) {
    tm_free(fs->eqs[i].src);
    tm_free(fs->eqs[i].consts);
  }
  tm_free(fs->eqs);
  tm_arena_dispose(&fs->arena);
  tm_free(fs);
}

static int open_parquet(tm_iceberg_rows *r, const tm_iceberg_data_file *f, tm_parquet_file **out,
                        tm_error *err) {
  if (f->format && strcasecmp(f->format, "parquet") != 0) {
    return tm_error_set(err, TM_EUNSUPPORTED, "%s: %s data files are not supported", f->path,
                        f->format);
  }
  tm_input *in = NULL;
  TM_TRY(tm_iceberg_table_open_file(r->t, f->path, &in, err));
  tm_parquet_open_options po = TM_PARQUET_OPEN_OPTIONS_INIT;
  po.int96_unit = TM_UNIT_MICRO;
  return tm_parquet_open(out, in, &po, err);
}

static uint64_t bytes_of(tm_parquet_file *pf) {
  tm_input *in = tm_parquet_input(pf);
  return in ? in->bytes_read : 0;
}

/* Reads a position delete file into a cache entry. */
static int load_pos(tm_iceberg_rows *r, const tm_iceberg_data_file *d, pos_file **out,
                    tm_error *err) {
  tm_parquet_file *pf = NULL;
  tm_parquet_scan *scan = NULL;
  pos_file *res = tm_calloc(1, sizeof *res);
  char *last_raw = NULL, *last_key = NULL;
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  if (!res) return tm_error_nomem(err);
  tm_map_init(&res->by_key);
  TM_CHECK(open_parquet(r, d, &pf, err));
  int ip = tm_parquet_find_field_id(pf, POS_PATH_ID);
  int io = tm_parquet_find_field_id(pf, POS_POS_ID);
  if (ip < 0) ip = tm_parquet_find_field(pf, "file_path");
  if (io < 0) io = tm_parquet_find_field(pf, "pos");
  if (ip < 0 || io < 0) {
    rc = TM_CORRUPT(err, "%s: position delete file without file_path and pos columns", d->path);
    goto done;
  }
  size_t cols[2] = {(size_t)ip, (size_t)io};
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.columns = cols;
  so.n_columns = 2;
  so.batch_rows = DELETE_BATCH_ROWS;
  TM_CHECK(tm_parquet_scan_new(&scan, pf, &so, err));
  while ((rc = tm_parquet_scan_next(scan, &b, err)) == TM_OK) {
    tm_colview cp = tm_batch_col(&b, 0), cpos = tm_batch_col(&b, 1);
    for (int64_t i = 0; i < b.n_rows; i++) {
      if (tm_colview_is_null(&cp, i) || tm_colview_is_null(&cpos, i)) continue;
      tm_strview raw = tm_colview_bytes(&cp, i);
      int64_t pos = tm_colview_int(&cpos, i);
      if (!last_raw || strlen(last_raw) != raw.len || memcmp(last_raw, raw.ptr, raw.len) != 0) {
        tm_free(last_raw);
        tm_free(last_key);
        last_key = NULL;
        last_raw = tm_strndup(raw.ptr, raw.len);
        if (!last_raw) {
          rc = tm_error_nomem(err);
          goto done;
        }
        TM_CHECK(tm_iceberg_table_path_key(r->t, last_raw, &last_key, err));
      }
      posvec *v = tm_map_gets(&res->by_key, last_key);
      if (!v) {
        v = tm_calloc(1, sizeof *v);
        if (!v) {
          rc = tm_error_nomem(err);
          goto done;
        }
        rc = tm_map_puts(&res->by_key, last_key, v, NULL, err);
        if (rc < 0) {
          tm_free(v);
          goto done;
        }
      }
      if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int64_t *nv = tm_reallocarray(v->v, cap, sizeof *nv);
        if (!nv) {
          rc = tm_error_nomem(err);
          goto done;
        }
        v->v = nv;
        v->cap = cap;
      }
      v->v[v->n++] = pos;
    }
    tm_batch_release(&b);
  }
  if (rc != TM_ITEROVER) goto done;
  rc = TM_OK;
  size_t it = 0;
  const char *k;
  void *val;
  while (tm_map_next(&res->by_key, &it, &k, &val)) {
    posvec *v = val;
    qsort(v->v, v->n, sizeof *v->v, cmp_i64);
  }
  r->stats.delete_files_read++;
  r->stats.bytes_read += bytes_of(pf);
  *out = res;
  res = NULL;
done:
  tm_batch_release(&b);
  tm_free(last_raw);
  tm_free(last_key);
  tm_parquet_scan_free(scan);
  tm_parquet_close(pf);
  pos_file_free(res);
  if (rc < 0 && err && !strstr(err->message, d->path)) tm_error_prefix(err, "%s", d->path);
  return rc;
}

static void puffin_free(void *p) { tm_puffin_close(p); }

/*
 * Reads the deletion vector `d` of data file `f` (the deletion-vector-v1 blob
 * at d's content_offset and content_size_in_bytes in a Puffin file, whose
 * footer is read once per scan) and appends its positions to merged.
 */
static int load_dv(tm_iceberg_rows *r, const tm_iceberg_data_file *d,
                   const tm_iceberg_data_file *f, posvec *merged, tm_error *err) {
  tm_puffin_file *pf = tm_map_gets(&r->puffin_cache, d->path);
  tm_buf blob = TM_BUF_INIT(TM_PUFFIN_BLOB_MAX);
  int64_t *v = NULL;
  size_t n = 0;
  int rc = TM_OK;
  if (!pf) {
    tm_input *in = NULL;
    TM_CHECK(tm_iceberg_table_open_file(r->t, d->path, &in, err));
    TM_CHECK(tm_puffin_open(&pf, in, err));
    rc = tm_map_puts(&r->puffin_cache, d->path, pf, NULL, err);
    if (rc < 0) {
      tm_puffin_close(pf);
      goto done;
    }
    r->stats.delete_files_read++;
  }
  const tm_puffin_blob *b = tm_puffin_find_blob(pf, d->content_offset, d->content_size);
  if (!b) {
    rc = TM_CORRUPT(err,
                    "%s: no blob at offset %lld with length %lld (the manifest's "
                    "content_offset and content_size_in_bytes for %s)",
                    d->path, (long long)d->content_offset, (long long)d->content_size,
                    d->referenced_data_file);
    goto done;
  }
  if (strcmp(b->type, TM_PUFFIN_DV_TYPE) != 0 || b->codec) {
    rc = TM_CORRUPT(err, "%s: the blob at offset %lld is a %s%s%s blob, not an uncompressed %s",
                    d->path, (long long)b->offset, b->codec ? b->codec : "",
                    b->codec ? "-compressed " : "", b->type, TM_PUFFIN_DV_TYPE);
    goto done;
  }
  const char *ref = tm_puffin_blob_prop(b, "referenced-data-file");
  if (ref && strcmp(ref, d->referenced_data_file) != 0) {
    rc = TM_CORRUPT(err, "%s: blob at offset %lld is for %s, the manifest says %s", d->path,
                    (long long)b->offset, ref, d->referenced_data_file);
    goto done;
  }
  TM_CHECK(tm_puffin_read_blob(pf, b, &blob, err));
  r->stats.bytes_read += blob.len;
  int64_t max_pos = f->record_count >= 0 ? f->record_count : INT64_MAX;
  TM_CHECK(tm_dv_decode((const uint8_t *)blob.ptr, blob.len, max_pos, TM_DV_MAX_POSITIONS, &v,
                        &n, err));
  const char *card = tm_puffin_blob_prop(b, "cardinality");
  char *end = NULL;
  long long want = card ? strtoll(card, &end, 10) : (long long)n;
  if ((card && (end == card || *end)) || want != (long long)n ||
      (d->record_count >= 0 && d->record_count != (int64_t)n)) {
    rc = TM_CORRUPT(err,
                    "%s: deletion vector for %s holds %zu positions, its cardinality says %s "
                    "and the manifest's record_count %lld",
                    d->path, d->referenced_data_file, n, card ? card : "nothing",
                    (long long)d->record_count);
    goto done;
  }
  if (n) {
    int64_t *nv = tm_reallocarray(merged->v, merged->n + n, sizeof *nv);
    if (!nv) {
      rc = tm_error_nomem(err);
      goto done;
    }
    memcpy(nv + merged->n, v, n * sizeof *nv);
    merged->v = nv;
    merged->n += n;
  }
done:
  tm_free(v);
  tm_buf_dispose(&blob);
  if (rc < 0 && err && !strstr(err->message, d->path)) tm_error_prefix(err, "%s", d->path);
  return rc;
}

/* The canonical (table) type of an equality field. */
static bool canonical_type(const tm_iceberg_metadata *m, int32_t id, tm_type *out) {
  const tm_iceberg_field *f = field_any_schema(m, id);
  tm_error ignore;
  return f && tm_iceberg_type_is_primitive(f->type) &&
         tm_iceberg_type_to_tm(f->type, out, &ignore) == TM_OK;
}

static int load_eq(tm_iceberg_rows *r, const tm_iceberg_data_file *d, eq_set **out,
                   tm_error *err) {
  tm_parquet_file *pf = NULL;
  tm_parquet_scan *scan = NULL;
  size_t n = d->n_equality_ids;
  eq_set *s = tm_calloc(1, sizeof *s);
  size_t *cols = tm_calloc(n ? n : 1, sizeof *cols);
  tm_value *vals = tm_calloc(n ? n : 1, sizeof *vals);
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  if (!s || !cols || !vals) {
    tm_free(s);
    tm_free(cols);
    tm_free(vals);
    return tm_error_nomem(err);
  }
  tm_arena_init(&s->arena, READ_ARENA_LIMIT);
  s->n_ids = n;
  s->ids = tm_calloc(n ? n : 1, sizeof *s->ids);
  s->types = tm_calloc(n ? n : 1, sizeof *s->types);
  if (!s->ids || !s->types) {
    rc = tm_error_nomem(err);
    goto done;
  }
  TM_CHECK(open_parquet(r, d, &pf, err));
  bool ids = file_has_ids(pf);
  for (size_t k = 0; k < n; k++) {
    int32_t id = d->equality_ids[k];
    s->ids[k] = id;
    const tm_iceberg_field *tf = field_any_schema(r->m, id);
    int fi = file_field(r->m, pf, ids, id, tf ? tf->name : NULL);
    if (fi < 0) {
      rc = TM_CORRUPT(err, "%s: equality delete column %d is not in the file", d->path, (int)id);
      goto done;
    }
    cols[k] = (size_t)fi;
    if (!canonical_type(r->m, id, &s->types[k])) s->types[k] = tm_parquet_field_at(pf, cols[k])->type;
  }
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.columns = cols;
  so.n_columns = n;
  so.batch_rows = DELETE_BATCH_ROWS;
  TM_CHECK(tm_parquet_scan_new(&scan, pf, &so, err));
  while ((rc = tm_parquet_scan_next(scan, &b, err)) == TM_OK) {
    for (int64_t i = 0; i < b.n_rows; i++) {
      for (size_t k = 0; k < n; k++) {
        tm_colview c = tm_batch_col(&b, k);
        tm_value v;
        tm_colview_get(&c, i, &v);
        if (!tm_iceberg__convert_value(&v, &c.type, &s->types[k], &vals[k])) {
          rc = tm_error_set(err, TM_EUNSUPPORTED, "%s: equality column %d does not convert to "
                                                  "the table type", d->path, (int)s->ids[k]);
          goto done;
        }
      }
      TM_CHECK(eq_add(s, vals, err));
    }
    tm_batch_release(&b);
  }
  if (rc != TM_ITEROVER) goto done;
  rc = TM_OK;
  r->stats.delete_files_read++;
  r->stats.bytes_read += bytes_of(pf);
  *out = s;
  s = NULL;
done:
  tm_batch_release(&b);
  tm_parquet_scan_free(scan);
  tm_parquet_close(pf);
  eq_set_free(s);
  tm_free(cols);
  tm_free(vals);
  if (rc < 0 && err && !strstr(err->message, d->path)) tm_error_prefix(err, "%s", d->path);
  return rc;
}

/* The constant a data file gives a field it does not store: its identity
 * partition value, the field's initial default, or NULL. */
static void missing_value(tm_iceberg_rows *r, file_state *fs, const tm_iceberg_data_file *f,
                          const tm_iceberg_field *fld, const tm_type *type, tm_value *out) {
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(r->m, f->spec_id);
  for (size_t i = 0; spec && i < spec->n_fields && i < f->n_partition; i++) {
    const tm_iceberg_partition_field *pf = &spec->fields[i];
    if (pf->source_id != fld->id || pf->transform.kind != TM_ICEBERG_TR_IDENTITY) continue;
    tm_type from;
    tm_error ignore;
    if (tm_iceberg_type_to_tm(fld->type, &from, &ignore) == TM_OK) {
      tm_value v = f->partition[i];
      v.type = from.id;
      if (tm_iceberg__convert_value(&v, &from, type, out)) return;
    }
  }
  if (!tm_iceberg__default_value(&fs->arena, fld, type, out)) {
    memset(out, 0, sizeof *out);
    out->type = type->id;
    out->is_null = true;
  }
}

/* What missing_value needs, for a struct member a data file lacks (convert.c). */
typedef struct missing_ctx {
  tm_iceberg_rows *r;
  file_state *fs;
  const tm_iceberg_data_file *f;
} missing_ctx;

static void missing_member(void *payload, const tm_iceberg_field *fld, const tm_type *to,
                           tm_value *out) {
  missing_ctx *m = payload;
  missing_value(m->r, m->fs, m->f, fld, to, out);
}

/*
 * How Parquet field fi gives nested output column j (table field fld): the
 * file's arrays as they are, or fs->shapes[j] when the table's members have
 * changed since the file was written (issue 16). Members are matched by the
 * file's member ids; a file without them goes through the name mapping, else
 * by names.
 */
static int nested_shape(tm_iceberg_rows *r, file_state *fs, const tm_iceberg_data_file *f,
                        const tm_iceberg_field *fld, size_t fi, bool has_ids, size_t j,
                        tm_error *err) {
  tm_type to, from;
  bool nullable;
  tm_error terr;
  tm_error_init(&terr);
  int rc = tm_iceberg_type_to_tm_native(fld->type, &to, &terr);
  if (rc == TM_OK) rc = tm_parquet_nested_type(fs->pf, fi, &from, &nullable, &terr);
  if (rc < 0) {
    /* A part with no native type: only the JSON text of the file's own shape can be read
     * (unsupported_type_action: string), and only while that is the table's. */
    if (!r->o.nested_as_json) return tm_error_set(err, terr.code, "%s", terr.message);
    return nested_readable(r->m, fld, err);
  }
  size_t n = tm_type_id_slots(&from);
  int32_t *ids = tm_arena_calloc(&fs->arena, n ? n : 1, sizeof *ids, err);
  if (!ids) return err->code;
  for (size_t i = 0; i < n; i++) ids[i] = -1; /* no id until one is found */
  bool any = false;
  if (has_ids) {
    TM_TRY(tm_parquet_nested_ids(fs->pf, fi, &from, ids, err));
    for (size_t i = 0; i < n; i++) any = any || ids[i] >= 0;
  }
  if (!any && r->m->name_mapping) {
    const tm_iceberg_name_mapping *nm = r->m->name_mapping;
    const char *name = tm_parquet_field_at(fs->pf, fi)->name;
    tm_iceberg__name_mapping_ids(tm_iceberg_name_map_lookup(nm->fields, nm->n_fields, name), &from,
                                 ids);
    any = true;
  }
  missing_ctx mc = {r, fs, f};
  return tm_iceberg__shape_new(&fs->arena, fld, &to, &from, ids, !any && n > 0, missing_member, &mc,
                               &fs->shapes[j], err);
}

/* Index of Parquet field fi in the projection (added when new). */
static int proj_index(file_state *fs, size_t fi) {
  for (size_t i = 0; i < fs->n_proj; i++) {
    if (fs->proj[i] == fi) return (int)i;
  }
  fs->proj[fs->n_proj] = fi;
  return (int)fs->n_proj++;
}

/* The filter with each term renamed to the file's column (or dropped). */
static int file_filter(tm_iceberg_rows *r, file_state *fs, bool ids, tm_error *err) {
  tm_predicate_init(&fs->file_filter);
  const tm_predicate *p = r->o.filter;
  for (size_t i = 0; p && i < p->n_terms; i++) {
    const tm_pred_term *term = &p->terms[i];
    const tm_iceberg_field *fld = tm_iceberg_schema_find_name(r->schema, term->column);
    if (!fld) continue;
    int fi = file_field(r->m, fs->pf, ids, fld->id, fld->name);
    if (fi < 0) continue;
    const tm_parquet_field *pfld = tm_parquet_field_at(fs->pf, (size_t)fi);
    if (!tm_type_equal(&pfld->type, &term->type)) continue;
    if (term->op == TM_PRED_IN) {
      TM_TRY(tm_predicate_add_in(&fs->file_filter, pfld->name, pfld->type, term->in_values,
                                 term->n_in, err));
    } else if (term->op == TM_PRED_IS_NULL || term->op == TM_PRED_IS_NOT_NULL) {
      TM_TRY(tm_predicate_add_null(&fs->file_filter, pfld->name, pfld->type,
                                   term->op == TM_PRED_IS_NULL, err));
    } else {
      TM_TRY(tm_predicate_add(&fs->file_filter, pfld->name, pfld->type, term->op, &term->value,
                              err));
    }
  }
  return TM_OK;
}

/*
 * Appends to merged (unsorted) the positions of data file f (match key `key`)
 * that the position delete files and deletion vectors among deletes name;
 * equality delete files are skipped. Position delete files are read once per
 * reader (pos_cache), Puffin footers once (puffin_cache).
 */
static int task_positions(tm_iceberg_rows *r, const tm_iceberg_data_file *f, const char *key,
                          const tm_iceberg_data_file *const *deletes, size_t n_deletes,
                          posvec *merged, tm_error *err) {
  for (size_t i = 0; i < n_deletes; i++) {
    const tm_iceberg_data_file *d = deletes[i];
    if (tm_iceberg_is_deletion_vector(d)) {
      TM_TRY(load_dv(r, d, f, merged, err));
    } else if (d->content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
      pos_file *pfc = tm_map_gets(&r->pos_cache, d->path);
      if (!pfc) {
        TM_TRY(load_pos(r, d, &pfc, err));
        int rc = tm_map_puts(&r->pos_cache, d->path, pfc, NULL, err);
        if (rc < 0) {
          pos_file_free(pfc);
          return rc;
        }
      }
      posvec *v = tm_map_gets(&pfc->by_key, key);
      if (v && v->n) {
        int64_t *nv = tm_reallocarray(merged->v, merged->n + v->n, sizeof *nv);
        if (!nv) return tm_error_nomem(err);
        memcpy(nv + merged->n, v->v, v->n * sizeof *nv);
        merged->v = nv;
        merged->n += v->n;
      }
    }
  }
  return TM_OK;
}

/*
 * Equality delete file d applies to data file f: its set of keys (loaded
 * once per scan, r->eq_cache) and where each key column comes from in f (a
 * projected column, or the value f lacks: missing_value) join fs->eqs.
 */
static int add_eq_ref(tm_iceberg_rows *r, file_state *fs, const tm_iceberg_data_file *f,
                      const tm_iceberg_data_file *d, bool ids, tm_error *err) {
  eq_set *s = tm_map_gets(&r->eq_cache, d->path);
  if (!s) {
    TM_TRY(load_eq(r, d, &s, err));
    int rc = tm_map_puts(&r->eq_cache, d->path, s, NULL, err);
    if (rc < 0) {
      eq_set_free(s);
      return rc;
    }
  }
  eq_ref *e = &fs->eqs[fs->n_eqs++];
  e->set = s;
  e->src = tm_calloc(s->n_ids, sizeof *e->src);
  e->consts = tm_calloc(s->n_ids, sizeof *e->consts);
  if (!e->src || !e->consts) return tm_error_nomem(err);
  for (size_t k = 0; k < s->n_ids; k++) {
    const tm_iceberg_field *fld = field_any_schema(r->m, s->ids[k]);
    int fi = file_field(r->m, fs->pf, ids, s->ids[k], fld ? fld->name : NULL);
    e->src[k] = -1;
    if (fi >= 0 && !tm_parquet_field_at(fs->pf, (size_t)fi)->nested) {
      e->src[k] = proj_index(fs, (size_t)fi);
    } else if (fld) {
      missing_value(r, fs, f, fld, &s->types[k], &e->consts[k]);
    } else {
      e->consts[k].type = s->types[k].id;
      e->consts[k].is_null = true;
    }
  }
  return TM_OK;
}

static int open_task(tm_iceberg_rows *r, const task *tk, file_state **out, tm_error *err) {
  file_state *fs = tm_calloc(1, sizeof *fs);
  if (!fs) return tm_error_nomem(err);
  tm_arena_init(&fs->arena, READ_ARENA_LIMIT);
  tm_predicate_init(&fs->file_filter);
  const tm_iceberg_data_file *f = tk->file;
  int rc;
  TM_CHECK(open_parquet(r, f, &fs->pf, err));
  fs->n_rg = tm_parquet_num_row_groups(fs->pf);
  bool ids = file_has_ids(fs->pf);
  size_t max_proj = r->n_out;
  size_t n_eq_ids = 0;
  if (!r->o.skip_deletes) {
    for (size_t i = 0; i < tk->n_deletes; i++) n_eq_ids += tk->deletes[i]->n_equality_ids;
  }
  fs->proj = tm_calloc(max_proj + n_eq_ids + 1, sizeof *fs->proj);
  fs->out_src = tm_calloc(r->n_out ? r->n_out : 1, sizeof *fs->out_src);
  fs->out_const = tm_calloc(r->n_out ? r->n_out : 1, sizeof *fs->out_const);
  fs->shapes = tm_calloc(r->n_out ? r->n_out : 1, sizeof *fs->shapes);
  fs->native = tm_calloc(max_proj + n_eq_ids + 1, sizeof *fs->native);
  if (!fs->proj || !fs->out_src || !fs->out_const || !fs->shapes || !fs->native) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t j = 0; j < r->n_out; j++) {
    const tm_iceberg_field *fld = r->out_fields[j];
    const tm_type *type = &r->out_schema.cols[j].type;
    fs->out_src[j] = -1;
    if (tm_iceberg_type_is_primitive(fld->type)) {
      int fi = file_field(r->m, fs->pf, ids, fld->id, fld->name);
      if (fi >= 0 && !tm_parquet_field_at(fs->pf, (size_t)fi)->nested &&
          !tm_parquet_field_at(fs->pf, (size_t)fi)->unsupported) {
        fs->out_src[j] = proj_index(fs, (size_t)fi);
        continue;
      }
    }
    if (!tm_iceberg_type_is_primitive(fld->type)) {
      int fi = file_field(r->m, fs->pf, ids, fld->id, fld->name);
      const tm_parquet_field *pfld = fi >= 0 ? tm_parquet_field_at(fs->pf, (size_t)fi) : NULL;
      if (pfld && pfld->nested) {
        TM_CHECK(nested_shape(r, fs, f, fld, (size_t)fi, ids, j, err));
        fs->out_src[j] = proj_index(fs, (size_t)fi); /* native, or JSON text (types.c) */
        if (fs->shapes[j]) fs->native[fs->out_src[j]] = true; /* reshaped from native arrays */
        continue;
      }
    }
    if (tm_iceberg_type_is_primitive(fld->type)) {
      missing_value(r, fs, f, fld, type, &fs->out_const[j]);
    } else {
      memset(&fs->out_const[j], 0, sizeof fs->out_const[j]);
      fs->out_const[j].type = type->id;
      fs->out_const[j].is_null = true;
    }
  }
  /* Deletes. */
  if (!r->o.skip_deletes) {
    fs->eqs = tm_calloc(tk->n_deletes ? tk->n_deletes : 1, sizeof *fs->eqs);
    if (!fs->eqs) {
      rc = tm_error_nomem(err);
      goto done;
    }
    posvec merged = {NULL, 0, 0};
    rc = task_positions(r, f, tk->key, tk->deletes, tk->n_deletes, &merged, err);
    if (rc < 0) {
      tm_free(merged.v);
      goto done;
    }
    for (size_t i = 0; i < tk->n_deletes; i++) {
      const tm_iceberg_data_file *d = tk->deletes[i];
      if (tm_iceberg_is_deletion_vector(d) || d->content == TM_ICEBERG_CONTENT_POSITION_DELETES)
        continue; /* in merged */
      rc = add_eq_ref(r, fs, f, d, ids, err);
      if (rc < 0) {
        tm_free(merged.v);
        goto done;
      }
    }
    if (merged.n) {
      qsort(merged.v, merged.n, sizeof *merged.v, cmp_i64);
      fs->positions = merged.v;
      fs->n_positions = merged.n;
    }
  }
  TM_CHECK(file_filter(r, fs, ids, err));
  r->stats.data_files_read++;
  *out = fs;
  return TM_OK;
done:
  if (err && !strstr(err->message, f->path)) tm_error_prefix(err, "%s", f->path);
  file_state_free(fs);
  return rc;
}

/* Starts the scan of the next row group that may match; false at the end. */
static int next_row_group(tm_iceberg_rows *r, file_state *fs, bool *more, tm_error *err) {
  *more = false;
  while (fs->rg < fs->n_rg) {
    size_t rg = fs->rg;
    bool keep = fs->file_filter.n_terms == 0 ||
                tm_parquet_row_group_may_match(fs->pf, rg, &fs->file_filter);
    if (!keep) {
      r->stats.row_groups_skipped++;
      fs->next_row += tm_parquet_row_group_rows(fs->pf, rg);
      fs->rg++;
      continue;
    }
    tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
    so.columns = fs->proj;
    so.n_columns = fs->n_proj;
    so.row_groups = &fs->rg;
    so.n_row_groups = 1;
    so.batch_rows = r->o.batch_rows;
    so.nested_as_json = r->o.nested_as_json; /* nested columns as JSON text (types.c) */
    so.nested_native = !r->o.nested_as_json;  /* else native arrays of the table's type */
    so.native_columns = fs->native;           /* columns reshaped (nested_shape) */
    TM_TRY(tm_parquet_scan_new(&fs->scan, fs->pf, &so, err));
    r->stats.row_groups_read++;
    *more = true;
    return TM_OK;
  }
  return TM_OK;
}

/* Clears keep bits of rows [start, start+n) deleted by position. */
static int64_t apply_positions(const file_state *fs, int64_t start, int64_t n, uint8_t *keep) {
  if (!fs->n_positions) return 0;
  size_t lo = 0, hi = fs->n_positions;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fs->positions[mid] < start) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  int64_t cleared = 0;
  for (size_t i = lo; i < fs->n_positions && fs->positions[i] < start + n; i++) {
    int64_t row = fs->positions[i] - start;
    if (tm_bit_get(keep, row)) {
      tm_bit_clear(keep, row);
      cleared++;
    }
  }
  return cleared;
}

static int apply_equality(const file_state *fs, const tm_batch *raw, uint8_t *keep,
                          int64_t *cleared, tm_error *err) {
  for (size_t e = 0; e < fs->n_eqs; e++) {
    const eq_ref *ref = &fs->eqs[e];
    const eq_set *s = ref->set;
    if (s->n_rows == 0) continue;
    tm_value vals[64];
    if (s->n_ids > 64) return tm_error_set(err, TM_EUNSUPPORTED, "too many equality columns");
    tm_colview cols[64];
    for (size_t k = 0; k < s->n_ids; k++) {
      if (ref->src[k] >= 0) cols[k] = tm_batch_col(raw, (size_t)ref->src[k]);
    }
    for (int64_t i = 0; i < raw->n_rows; i++) {
      if (!tm_bit_get(keep, i)) continue;
      bool ok = true;
      for (size_t k = 0; k < s->n_ids && ok; k++) {
        if (ref->src[k] < 0) {
          vals[k] = ref->consts[k];
          continue;
        }
        tm_value v;
        tm_colview_get(&cols[k], i, &v);
        ok = tm_iceberg__convert_value(&v, &cols[k].type, &s->types[k], &vals[k]);
      }
      if (ok && eq_contains(s, vals)) {
        tm_bit_clear(keep, i);
        (*cleared)++;
      }
    }
  }
  return TM_OK;
}

/* n rows of the file's nested column c in the table's shape: native, or as
 * JSON text when nested columns are read as text. */
static int reshaped(const tm_iceberg_rows *r, const tm_iceberg__shape *sh, const tm_colview *c,
                    int64_t n, const char *col, struct ArrowArray *out, tm_error *err) {
  if (!r->o.nested_as_json) return tm_iceberg__shape_apply(sh, c, n, out, col, err);
  struct ArrowArray native;
  TM_TRY(tm_iceberg__shape_apply(sh, c, n, &native, col, err));
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, tm_type_of(TM_TYPE_UTF8), 0);
  tm_buf text = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = TM_OK;
  tm_colview nv = tm_colview_of(&native, tm_iceberg__shape_type(sh));
  for (int64_t i = 0; rc == TM_OK && i < n; i++) {
    if (tm_colview_is_null(&nv, i)) {
      rc = tm_colbuilder_append_null(&cb, err);
      continue;
    }
    tm_buf_clear(&text);
    rc = tm_colview_json(&text, &nv, i, err);
    if (rc == TM_OK) rc = tm_colbuilder_append_bytes(&cb, text.ptr, text.len, err);
  }
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  tm_buf_dispose(&text);
  native.release(&native);
  return rc;
}

/* Builds the output batch of raw's rows. */
static int build_output(tm_iceberg_rows *r, file_state *fs, tm_batch *raw, int64_t start,
                        tm_batch *out, tm_error *err) {
  size_t n_cols = r->out_schema.n_cols;
  struct ArrowArray *cols = tm_calloc(n_cols ? n_cols : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  int64_t n = raw->n_rows;
  int rc = TM_OK;
  size_t built = 0;
  bool *taken = tm_calloc(fs->n_proj ? fs->n_proj : 1, sizeof *taken);
  if (!taken) {
    tm_free(cols);
    return tm_error_nomem(err);
  }
  for (size_t j = 0; j < r->n_out && rc == TM_OK; j++) {
    const tm_type *type = &r->out_schema.cols[j].type;
    int src = fs->out_src[j];
    if (src < 0) {
      rc = tm_array_make_constant(*type, &fs->out_const[j], n, &cols[j], err);
    } else if (fs->shapes[j]) {
      tm_colview c = tm_batch_col(raw, (size_t)src);
      rc = reshaped(r, fs->shapes[j], &c, n, r->out_schema.cols[j].name, &cols[j], err);
    } else {
      tm_colview c = tm_batch_col(raw, (size_t)src);
      /* A nested column: the file's arrays as the table's type when the
       * shapes agree (names and nullability are the table's; a subtree that
       * changed was refused when the file was opened). */
      bool same = tm_type_equal(&c.type, type) ||
                  (tm_type_is_nested(type) && tm_type_same_layout(&c.type, type));
      if (!same && tm_type_is_nested(type)) {
        char want[96], have[96];
        tm_type_name(type, want, sizeof want);
        tm_type_name(&c.type, have, sizeof have);
        rc = tm_error_set(err, TM_EUNSUPPORTED,
                          "column '%s': the data file holds %s where the table has %s",
                          r->out_schema.cols[j].name, have, want);
        break;
      }
      if (same && !taken[src]) {
        rc = tm_batch_take_column(raw, (size_t)src, &cols[j], err);
        taken[src] = true;
      } else {
        rc = tm_iceberg__convert_column(&c, type, n, &cols[j], r->out_schema.cols[j].name, err);
      }
    }
    if (rc == TM_OK) built = j + 1;
  }
  if (rc == TM_OK && r->o.with_positions) {
    tm_colbuilder cb;
    tm_colbuilder_init(&cb, tm_type_of(TM_TYPE_INT64), 0);
    rc = tm_colbuilder_reserve(&cb, n, 0, err);
    for (int64_t i = 0; rc == TM_OK && i < n; i++) rc = tm_colbuilder_append_int(&cb, start + i, err);
    if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, &cols[r->n_out], err);
    tm_colbuilder_dispose(&cb);
    if (rc == TM_OK) built = n_cols;
  }
  tm_free(taken);
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, &r->out_schema, cols, n, err);
    built = 0;
  }
  for (size_t j = 0; j < built; j++) {
    if (cols[j].release) cols[j].release(&cols[j]);
  }
  tm_free(cols);
  return rc;
}

static int read_batch(tm_iceberg_rows *r, tm_batch *out, tm_error *err) {
  for (;;) {
    if (!r->fs) {
      if (r->cur >= r->n_tasks) return TM_ITEROVER;
      TM_TRY(open_task(r, &r->tasks[r->cur++], &r->fs, err));
    }
    file_state *fs = r->fs;
    if (!fs->scan) {
      bool more;
      int rc = next_row_group(r, fs, &more, err);
      if (rc < 0 || !more) {
        if (rc == TM_OK) r->stats.bytes_read += bytes_of(fs->pf);
        file_state_free(fs);
        r->fs = NULL;
        if (rc < 0) return rc;
        continue;
      }
    }
    tm_batch raw;
    tm_batch_init(&raw);
    int rc = tm_parquet_scan_next(fs->scan, &raw, err);
    if (rc == TM_ITEROVER) {
      fs->next_row = 0;
      for (size_t i = 0; i <= fs->rg; i++) fs->next_row += tm_parquet_row_group_rows(fs->pf, i);
      tm_parquet_scan_free(fs->scan);
      fs->scan = NULL;
      fs->rg++;
      continue;
    }
    if (rc < 0) return rc;
    int64_t n = raw.n_rows, start = fs->next_row;
    fs->next_row += n;
    r->stats.rows_read += n;
    size_t nbytes = (size_t)(n + 7) / 8;
    uint8_t *keep = tm_malloc(nbytes ? nbytes : 1);
    if (!keep) {
      tm_batch_release(&raw);
      return tm_error_nomem(err);
    }
    memset(keep, 0xff, nbytes ? nbytes : 1);
    int64_t deleted = apply_positions(fs, start, n, keep);
    rc = apply_equality(fs, &raw, keep, &deleted, err);
    tm_batch full;
    tm_batch_init(&full);
    if (rc == TM_OK) rc = build_output(r, fs, &raw, start, &full, err);
    tm_batch_release(&raw);
    if (rc == TM_OK && deleted) {
      tm_batch kept;
      tm_batch_init(&kept);
      rc = tm_batch_filter(&full, keep, &kept, err);
      tm_batch_release(&full);
      tm_batch_move(&full, &kept);
    }
    r->stats.rows_deleted += deleted;
    if (rc == TM_OK && r->o.filter_rows && r->o.filter && full.n_rows > 0) {
      size_t nb = (size_t)(full.n_rows + 7) / 8;
      uint8_t *pass = tm_calloc(nb, 1);
      int64_t kept_n = 0;
      rc = pass ? tm_predicate_eval(r->o.filter, &full, pass, &kept_n, err) : tm_error_nomem(err);
      if (rc == TM_OK && kept_n < full.n_rows) {
        tm_batch kept;
        tm_batch_init(&kept);
        r->stats.rows_filtered += full.n_rows - kept_n;
        rc = tm_batch_filter(&full, pass, &kept, err);
        tm_batch_release(&full);
        tm_batch_move(&full, &kept);
      }
      tm_free(pass);
    }
    tm_free(keep);
    if (rc < 0) {
      tm_batch_release(&full);
      return rc;
    }
    if (full.n_rows == 0) {
      tm_batch_release(&full);
      continue;
    }
    r->stats.rows_returned += full.n_rows;
    tm_batch_move(out, &full);
    return TM_OK;
  }
}

int tm_iceberg_rows_next(tm_iceberg_rows *r, tm_batch *out, tm_error *err) {
  int rc = read_batch(r, out, err);
  return rc;
}

/* ---- opening ------------------------------------------------------------------- */

static int setup(tm_iceberg_rows *r, const tm_iceberg_table *t, const tm_iceberg_schema *schema,
                 const tm_iceberg_read_options *opts, tm_error *err) {
  r->t = t;
  r->m = tm_iceberg_table_metadata(t);
  r->schema = schema ? schema : tm_iceberg_metadata_current_schema(r->m);
  tm_iceberg_read_options dflt = TM_ICEBERG_READ_OPTIONS_INIT;
  r->o = opts ? *opts : dflt;
  tm_schema_init(&r->out_schema);
  tm_map_init(&r->pos_cache);
  tm_map_init(&r->puffin_cache);
  tm_map_init(&r->eq_cache);
  const tm_iceberg_type *root = r->schema->root;
  size_t n = r->o.columns ? r->o.n_columns : root->n_fields;
  r->out_fields = tm_calloc(n ? n : 1, sizeof *r->out_fields);
  if (!r->out_fields) return tm_error_nomem(err);
  for (size_t j = 0; j < n; j++) {
    const tm_iceberg_field *f =
        r->o.columns ? tm_iceberg_schema_find_name(r->schema, r->o.columns[j]) : &root->fields[j];
    if (!f) return tm_error_set(err, TM_EINVALID, "column %s is not in the table", r->o.columns[j]);
    tm_type ty;
    int trc = r->o.nested_as_json ? tm_iceberg_type_to_tm(f->type, &ty, err)
                                  : tm_iceberg_type_to_tm_native(f->type, &ty, err);
    if (trc < 0) return tm_error_prefix(err, "column '%s'", f->name);
    TM_TRY(tm_schema_add(&r->out_schema, f->name, ty,
                         !f->required || !tm_iceberg_type_is_primitive(f->type), f->id, err));
    r->out_fields[j] = f;
  }
  r->n_out = n;
  if (r->o.with_positions) {
    TM_TRY(tm_schema_add(&r->out_schema, TM_ICEBERG_POS_COLUMN, tm_type_of(TM_TYPE_INT64), false,
                         POS_POS_ID_META, err));
  }
  if (r->o.filter_rows && r->o.filter) {
    for (size_t i = 0; i < r->o.filter->n_terms; i++) {
      if (tm_schema_find(&r->out_schema, r->o.filter->terms[i].column) < 0) {
        return tm_error_set(err, TM_EINVALID, "filter column %s must be read to filter rows",
                            r->o.filter->terms[i].column);
      }
    }
  }
  return TM_OK;
}

int tm_iceberg_rows_open(tm_iceberg_rows **out, const tm_iceberg_table *t,
                         const tm_iceberg_scan *scan, const tm_iceberg_read_options *opts,
                         tm_error *err) {
  tm_iceberg_rows *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  int rc;
  TM_CHECK(setup(r, t, scan->schema, opts, err));
  r->tasks = tm_calloc(scan->n_tasks ? scan->n_tasks : 1, sizeof *r->tasks);
  if (!r->tasks) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < scan->n_tasks; i++) {
    r->tasks[i].file = scan->tasks[i].file;
    r->tasks[i].deletes = scan->tasks[i].deletes;
    r->tasks[i].n_deletes = scan->tasks[i].n_deletes;
    r->tasks[i].key = tm_strdup(scan->tasks[i].key);
    if (!r->tasks[i].key) {
      rc = tm_error_nomem(err);
      goto done;
    }
    r->n_tasks = i + 1;
  }
  *out = r;
  return TM_OK;
done:
  tm_iceberg_rows_free(r);
  return rc;
}

int tm_iceberg_rows_open_files(tm_iceberg_rows **out, const tm_iceberg_table *t,
                               const tm_iceberg_schema *schema,
                               const tm_iceberg_data_file *const *files, size_t n_files,
                               const tm_iceberg_read_options *opts, tm_error *err) {
  tm_iceberg_rows *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  int rc;
  TM_CHECK(setup(r, t, schema, opts, err));
  r->o.skip_deletes = true;
  r->tasks = tm_calloc(n_files ? n_files : 1, sizeof *r->tasks);
  if (!r->tasks) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < n_files; i++) {
    r->tasks[i].file = files[i];
    TM_CHECK(tm_iceberg_table_path_key(t, files[i]->path, &r->tasks[i].key, err));
    r->n_tasks = i + 1;
  }
  *out = r;
  return TM_OK;
done:
  tm_iceberg_rows_free(r);
  return rc;
}

const tm_schema *tm_iceberg_rows_schema(const tm_iceberg_rows *r) { return &r->out_schema; }

int tm_iceberg_task_positions(const tm_iceberg_table *t, const tm_iceberg_scan_task *tk,
                              int64_t **out, size_t *n_out, tm_iceberg_read_stats *stats,
                              tm_error *err) {
  *out = NULL;
  *n_out = 0;
  tm_iceberg_rows r;
  memset(&r, 0, sizeof r);
  r.t = t;
  r.m = tm_iceberg_table_metadata(t);
  tm_map_init(&r.pos_cache);
  tm_map_init(&r.eq_cache);
  tm_map_init(&r.puffin_cache);
  posvec merged = {NULL, 0, 0};
  int rc = task_positions(&r, tk->file, tk->key, tk->deletes, tk->n_deletes, &merged, err);
  if (rc == TM_OK && merged.n) {
    qsort(merged.v, merged.n, sizeof *merged.v, cmp_i64);
    size_t w = 1; /* a position named twice (two delete files) is one deleted row */
    for (size_t i = 1; i < merged.n; i++)
      if (merged.v[i] != merged.v[w - 1]) merged.v[w++] = merged.v[i];
    merged.n = w;
  }
  tm_map_dispose(&r.pos_cache, pos_file_free);
  tm_map_dispose(&r.puffin_cache, puffin_free);
  tm_map_dispose(&r.eq_cache, eq_set_free);
  if (stats) {
    stats->delete_files_read += r.stats.delete_files_read;
    stats->bytes_read += r.stats.bytes_read;
  }
  if (rc < 0) {
    tm_free(merged.v);
    if (err && !strstr(err->message, tk->file->path)) tm_error_prefix(err, "%s", tk->file->path);
    return rc;
  }
  *out = merged.v;
  *n_out = merged.n;
  return TM_OK;
}

void tm_iceberg_rows_stats(const tm_iceberg_rows *r, tm_iceberg_read_stats *out) {
  *out = r->stats;
}

void tm_iceberg_rows_free(tm_iceberg_rows *r) {
  if (!r) return;
  file_state_free(r->fs);
  for (size_t i = 0; i < r->n_tasks; i++) tm_free(r->tasks[i].key);
  tm_free(r->tasks);
  tm_free(r->out_fields);
  tm_schema_dispose(&r->out_schema);
  tm_map_dispose(&r->pos_cache, pos_file_free);
  tm_map_dispose(&r->puffin_cache, puffin_free);
  tm_map_dispose(&r->eq_cache, eq_set_free);
  tm_free(r);
}
