/*
 * schema.c - column types, schemas and their Arrow format strings (format
 * layer). See schema.h.
 */
#include "format/arrow/schema.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "format/arrow/render.h"
#include "util/alloc.h"
#include "util/hash.h"
#include "util/str.h"

tm_type tm_type_timestamp(tm_time_unit unit, bool utc) {
  tm_type t = tm_type_of(TM_TYPE_TIMESTAMP);
  t.unit = unit;
  t.utc = utc;
  return t;
}

tm_type tm_type_decimal(int32_t precision, int32_t scale) {
  tm_type t = tm_type_of(TM_TYPE_DECIMAL128);
  t.precision = precision;
  t.scale = scale;
  return t;
}

tm_type tm_type_fixed(int32_t width) {
  tm_type t = tm_type_of(TM_TYPE_FIXED_BINARY);
  t.width = width;
  return t;
}

/* ---- nested types: an interned table ------------------------------------ */

typedef struct nt_entry {
  tm_ntype t;
  uint64_t hash;
  struct nt_entry *next;
} nt_entry;

#define NT_BUCKETS 4096
static pthread_mutex_t g_nt_mu = PTHREAD_MUTEX_INITIALIZER;
static nt_entry *g_nt[NT_BUCKETS];
static size_t g_nt_count, g_nt_bytes;

bool tm_type_same_layout(const tm_type *a, const tm_type *b) {
  if (!tm_type_is_nested(a) || !tm_type_is_nested(b)) return tm_type_equal(a, b);
  if (a->id != b->id || !a->nested || !b->nested || a->nested->n != b->nested->n) return false;
  for (size_t i = 0; i < a->nested->n; i++)
    if (!tm_type_same_layout(&a->nested->child[i], &b->nested->child[i])) return false;
  return true;
}

int tm_type_depth(const tm_type *t) { return t->nested ? t->nested->depth : 0; }

size_t tm_type_id_slots(const tm_type *t) {
  if (!tm_type_is_nested(t) || !t->nested) return 0;
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_MAP) {
    const tm_ntype *et = nt->child[0].nested;
    return 2 + tm_type_id_slots(&et->child[0]) + tm_type_id_slots(&et->child[1]);
  }
  size_t n = 0;
  for (size_t k = 0; k < nt->n; k++) n += 1 + tm_type_id_slots(&nt->child[k]);
  return n;
}

static int sig_of(tm_buf *b, const tm_type *t, bool nullable, tm_error *err) {
  if (t->nested) TM_TRY(tm_buf_puts(b, t->nested->sig, err));
  else {
    char tn[64];
    tm_type_name(t, tn, sizeof tn);
    TM_TRY(tm_buf_puts(b, tn, err));
  }
  return nullable ? TM_OK : tm_buf_putc(b, '!', err);
}

/* Finds or adds the descriptor whose signature is sig (built by the caller
 * from the same children, so equal signatures mean equal types). */
static int nt_intern(tm_type_id id, size_t n, const char *const *names, const tm_type *types,
                     const bool *nullable, const tm_buf *sig, tm_type *out, tm_error *err) {
  uint64_t h = tm_hash64(sig->ptr, sig->len, (uint64_t)id);
  int depth = 0;
  for (size_t i = 0; i < n; i++)
    if (tm_type_depth(&types[i]) > depth) depth = tm_type_depth(&types[i]);
  depth++;
  if (depth > TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "nested type deeper than %d levels",
                        TM_NTYPE_MAX_DEPTH);
  int rc = TM_OK;
  pthread_mutex_lock(&g_nt_mu);
  nt_entry **slot = &g_nt[h % NT_BUCKETS];
  for (nt_entry *e = *slot; e; e = e->next) {
    if (e->hash == h && e->t.id == id && strlen(e->t.sig) == sig->len &&
        memcmp(e->t.sig, sig->ptr, sig->len) == 0) {
      *out = tm_type_of(id);
      out->nested = &e->t;
      goto done;
    }
  }
  size_t names_len = 0;
  for (size_t i = 0; i < n; i++) names_len += strlen(names[i]) + 1;
  size_t bytes = sizeof(nt_entry) + n * (sizeof(tm_type) + sizeof(char *) + sizeof(bool)) +
                 names_len + sig->len + 1 + 16;
  if (g_nt_count >= TM_NTYPE_MAX || g_nt_bytes + bytes > TM_NTYPE_MAX_BYTES) {
    rc = tm_error_set(err, TM_ETOOLARGE, "more than %d distinct nested types", TM_NTYPE_MAX);
    goto done;
  }
  /* One block, never freed: descriptors live as long as the process. */
  nt_entry *e = tm_calloc(1, bytes);
  if (!e) {
    rc = tm_error_nomem(err);
    goto done;
  }
  tm_type *child = (tm_type *)(e + 1);
  const char **nm = (const char **)(child + n);
  bool *nl = (bool *)(nm + n);
  char *str = (char *)(nl + n);
  for (size_t i = 0; i < n; i++) {
    child[i] = types[i];
    nl[i] = nullable[i];
    size_t len = strlen(names[i]) + 1;
    memcpy(str, names[i], len);
    nm[i] = str;
    str += len;
  }
  memcpy(str, sig->ptr, sig->len);
  str[sig->len] = '\0';
  e->t.id = id;
  e->t.n = n;
  e->t.child = child;
  e->t.name = nm;
  e->t.nullable = nl;
  e->t.sig = str;
  e->t.depth = depth;
  e->hash = h;
  e->next = *slot;
  *slot = e;
  g_nt_count++;
  g_nt_bytes += bytes;
  *out = tm_type_of(id);
  out->nested = &e->t;
done:
  pthread_mutex_unlock(&g_nt_mu);
  return rc;
}

int tm_type_struct(size_t n, const char *const *names, const tm_type *types,
                   const bool *nullable, tm_type *out, tm_error *err) {
  if (n == 0 || n > TM_NTYPE_MAX_FIELDS)
    return tm_error_set(err, TM_EUNSUPPORTED, "a struct of %zu fields", n);
  for (size_t i = 0; i < n; i++)
    if (types[i].id <= TM_TYPE_INVALID || types[i].id >= TM_TYPE__COUNT ||
        (tm_type_is_nested(&types[i]) && !types[i].nested))
      return tm_error_set(err, TM_EINVALID, "struct field '%s' has no type", names[i]);
  tm_buf sig;
  tm_buf_init(&sig, (size_t)1 << 24);
  int rc = tm_buf_puts(&sig, "struct<", err);
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    if (i) rc = tm_buf_putc(&sig, ',', err);
    if (rc == TM_OK) rc = tm_json_string(&sig, names[i], strlen(names[i]), err);
    if (rc == TM_OK) rc = tm_buf_putc(&sig, ':', err);
    if (rc == TM_OK) rc = sig_of(&sig, &types[i], nullable[i], err);
  }
  if (rc == TM_OK) rc = tm_buf_putc(&sig, '>', err);
  if (rc == TM_OK) rc = nt_intern(TM_TYPE_STRUCT, n, names, types, nullable, &sig, out, err);
  tm_buf_dispose(&sig);
  return rc;
}

int tm_type_list(const tm_type *elem, bool elem_nullable, tm_type *out, tm_error *err) {
  if (elem->id <= TM_TYPE_INVALID || elem->id >= TM_TYPE__COUNT ||
      (tm_type_is_nested(elem) && !elem->nested))
    return tm_error_set(err, TM_EINVALID, "a list element has no type");
  tm_buf sig;
  tm_buf_init(&sig, (size_t)1 << 24);
  const char *name = "element";
  int rc = tm_buf_puts(&sig, "list<", err);
  if (rc == TM_OK) rc = sig_of(&sig, elem, elem_nullable, err);
  if (rc == TM_OK) rc = tm_buf_putc(&sig, '>', err);
  if (rc == TM_OK) rc = nt_intern(TM_TYPE_LIST, 1, &name, elem, &elem_nullable, &sig, out, err);
  tm_buf_dispose(&sig);
  return rc;
}

int tm_type_map(const tm_type *key, const tm_type *value, bool value_nullable, tm_type *out,
                tm_error *err) {
  const char *names[2] = {"key", "value"};
  tm_type kv[2] = {*key, *value};
  bool nl[2] = {false, value_nullable};
  tm_type entries;
  TM_TRY(tm_type_struct(2, names, kv, nl, &entries, err));
  tm_buf sig;
  tm_buf_init(&sig, (size_t)1 << 24);
  const char *name = "entries";
  bool no = false;
  int rc = tm_buf_puts(&sig, "map<", err);
  if (rc == TM_OK) rc = sig_of(&sig, key, true, err);
  if (rc == TM_OK) rc = tm_buf_putc(&sig, ',', err);
  if (rc == TM_OK) rc = sig_of(&sig, value, value_nullable, err);
  if (rc == TM_OK) rc = tm_buf_putc(&sig, '>', err);
  if (rc == TM_OK) rc = nt_intern(TM_TYPE_MAP, 1, &name, &entries, &no, &sig, out, err);
  tm_buf_dispose(&sig);
  return rc;
}

bool tm_type_equal(const tm_type *a, const tm_type *b) {
  if (a->id != b->id) return false;
  switch (a->id) {
    case TM_TYPE_TIMESTAMP: return a->unit == b->unit && a->utc == b->utc;
    case TM_TYPE_TIME64: return a->unit == b->unit;
    case TM_TYPE_DECIMAL128: return a->precision == b->precision && a->scale == b->scale;
    case TM_TYPE_FIXED_BINARY: return a->width == b->width && a->uuid == b->uuid;
    case TM_TYPE_LIST:
    case TM_TYPE_STRUCT:
    case TM_TYPE_MAP: return a->nested == b->nested; /* interned */
    default: return true;
  }
}

size_t tm_type_byte_width(const tm_type *t) {
  switch (t->id) {
    case TM_TYPE_INT8:
    case TM_TYPE_UINT8: return 1;
    case TM_TYPE_INT16:
    case TM_TYPE_UINT16: return 2;
    case TM_TYPE_INT32:
    case TM_TYPE_UINT32:
    case TM_TYPE_FLOAT32:
    case TM_TYPE_DATE32: return 4;
    case TM_TYPE_INT64:
    case TM_TYPE_UINT64:
    case TM_TYPE_FLOAT64:
    case TM_TYPE_TIME64:
    case TM_TYPE_TIMESTAMP: return 8;
    case TM_TYPE_DECIMAL128: return 16;
    case TM_TYPE_FIXED_BINARY: return t->width > 0 ? (size_t)t->width : 0;
    default: return 0;
  }
}

bool tm_type_is_var(const tm_type *t) {
  return t->id == TM_TYPE_UTF8 || t->id == TM_TYPE_BINARY;
}

bool tm_type_is_integer(const tm_type *t) {
  return t->id >= TM_TYPE_INT8 && t->id <= TM_TYPE_UINT64;
}

bool tm_type_is_signed_int(const tm_type *t) {
  return t->id >= TM_TYPE_INT8 && t->id <= TM_TYPE_INT64;
}

bool tm_type_is_temporal(const tm_type *t) {
  return t->id == TM_TYPE_DATE32 || t->id == TM_TYPE_TIME64 || t->id == TM_TYPE_TIMESTAMP;
}

int64_t tm_unit_per_second(tm_time_unit unit) {
  static const int64_t k[] = {1, 1000, 1000000, 1000000000};
  return k[unit & 3];
}

const char *tm_unit_name(tm_time_unit unit) {
  static const char *k[] = {"s", "ms", "us", "ns"};
  return k[unit & 3];
}

size_t tm_type_name(const tm_type *t, char *buf, size_t cap) {
  static const char *names[TM_TYPE__COUNT] = {
      "invalid", "bool",    "int8",    "int16",   "int32",   "int64",        "uint8",
      "uint16",  "uint32",  "uint64",  "float32", "float64", "decimal",      "utf8",
      "binary",  "fixed",   "date32",  "time64",  "timestamp", "list",
      "struct",  "map"};
  int n;
  const char *base = t->id < TM_TYPE__COUNT ? names[t->id] : "invalid";
  switch (t->id) {
    case TM_TYPE_DECIMAL128:
      n = snprintf(buf, cap, "decimal(%d,%d)", (int)t->precision, (int)t->scale);
      break;
    case TM_TYPE_FIXED_BINARY:
      n = t->uuid ? snprintf(buf, cap, "uuid") : snprintf(buf, cap, "fixed(%d)", (int)t->width);
      break;
    case TM_TYPE_TIME64: n = snprintf(buf, cap, "time64(%s)", tm_unit_name(t->unit)); break;
    case TM_TYPE_TIMESTAMP:
      n = snprintf(buf, cap, "timestamp(%s%s)", tm_unit_name(t->unit), t->utc ? ", UTC" : "");
      break;
    case TM_TYPE_LIST:
    case TM_TYPE_STRUCT:
    case TM_TYPE_MAP:
      n = snprintf(buf, cap, "%s", t->nested ? t->nested->sig : base);
      break;
    default: n = snprintf(buf, cap, "%s", base); break;
  }
  if (n < 0 || cap == 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

int tm_type_to_arrow_format(const tm_type *t, char *buf, size_t cap) {
  static const char *simple[TM_TYPE__COUNT] = {
      [TM_TYPE_BOOL] = "b",    [TM_TYPE_INT8] = "c",    [TM_TYPE_INT16] = "s",
      [TM_TYPE_INT32] = "i",   [TM_TYPE_INT64] = "l",   [TM_TYPE_UINT8] = "C",
      [TM_TYPE_UINT16] = "S",  [TM_TYPE_UINT32] = "I",  [TM_TYPE_UINT64] = "L",
      [TM_TYPE_FLOAT32] = "f", [TM_TYPE_FLOAT64] = "g", [TM_TYPE_UTF8] = "u",
      [TM_TYPE_BINARY] = "z",  [TM_TYPE_DATE32] = "tdD"};
  static const char unit_char[] = {'s', 'm', 'u', 'n'};
  int n;
  switch (t->id) {
    case TM_TYPE_DECIMAL128:
      n = snprintf(buf, cap, "d:%d,%d", (int)t->precision, (int)t->scale);
      break;
    case TM_TYPE_FIXED_BINARY: n = snprintf(buf, cap, "w:%d", (int)t->width); break;
    case TM_TYPE_TIME64:
      if (t->unit != TM_UNIT_MICRO && t->unit != TM_UNIT_NANO) return TM_EINVALID;
      n = snprintf(buf, cap, "tt%c", unit_char[t->unit]);
      break;
    case TM_TYPE_TIMESTAMP:
      n = snprintf(buf, cap, "ts%c:%s", unit_char[t->unit & 3], t->utc ? "UTC" : "");
      break;
    case TM_TYPE_LIST: n = snprintf(buf, cap, "+l"); break;
    case TM_TYPE_STRUCT: n = snprintf(buf, cap, "+s"); break;
    case TM_TYPE_MAP: n = snprintf(buf, cap, "+m"); break;
    default:
      if (t->id <= TM_TYPE_INVALID || t->id >= TM_TYPE__COUNT || !simple[t->id])
        return TM_EINVALID;
      n = snprintf(buf, cap, "%s", simple[t->id]);
  }
  return (n < 0 || (size_t)n >= cap) ? TM_ETOOLARGE : TM_OK;
}

static int parse_small_int(const char *s, size_t len, int32_t *out) {
  int64_t v;
  if (tm_parse_int64(s, len, &v) != TM_OK || v < -100000 || v > 100000) return TM_EINVALID;
  *out = (int32_t)v;
  return TM_OK;
}

int tm_type_from_arrow_format(const char *fmt, tm_type *out, tm_error *err) {
  static const struct { const char *fmt; tm_type_id id; } simple[] = {
      {"b", TM_TYPE_BOOL},   {"c", TM_TYPE_INT8},    {"s", TM_TYPE_INT16},
      {"i", TM_TYPE_INT32},  {"l", TM_TYPE_INT64},   {"C", TM_TYPE_UINT8},
      {"S", TM_TYPE_UINT16}, {"I", TM_TYPE_UINT32},  {"L", TM_TYPE_UINT64},
      {"f", TM_TYPE_FLOAT32}, {"g", TM_TYPE_FLOAT64}, {"u", TM_TYPE_UTF8},
      {"z", TM_TYPE_BINARY}, {"tdD", TM_TYPE_DATE32}};
  for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
    if (strcmp(fmt, simple[i].fmt) == 0) {
      *out = tm_type_of(simple[i].id);
      return TM_OK;
    }
  }
  size_t len = strlen(fmt);
  if (len > 2 && fmt[0] == 'd' && fmt[1] == ':') {
    const char *comma = strchr(fmt + 2, ',');
    int32_t p, s;
    if (comma && !strchr(comma + 1, ',') &&
        parse_small_int(fmt + 2, (size_t)(comma - fmt - 2), &p) == TM_OK &&
        parse_small_int(comma + 1, strlen(comma + 1), &s) == TM_OK && p >= 1 && p <= 38 &&
        s >= 0 && s <= p) {
      *out = tm_type_decimal(p, s);
      return TM_OK;
    }
  } else if (len > 2 && fmt[0] == 'w' && fmt[1] == ':') {
    int32_t w;
    if (parse_small_int(fmt + 2, len - 2, &w) == TM_OK && w > 0) {
      *out = tm_type_fixed(w);
      return TM_OK;
    }
  } else if (len == 3 && fmt[0] == 't' && fmt[1] == 't' && (fmt[2] == 'u' || fmt[2] == 'n')) {
    *out = tm_type_of(TM_TYPE_TIME64);
    out->unit = fmt[2] == 'u' ? TM_UNIT_MICRO : TM_UNIT_NANO;
    return TM_OK;
  } else if (len >= 4 && fmt[0] == 't' && fmt[1] == 's' && fmt[3] == ':') {
    const char *units = "smun";
    const char *u = strchr(units, fmt[2]);
    if (u && fmt[2]) {
      *out = tm_type_timestamp((tm_time_unit)(u - units), fmt[4] != '\0');
      return TM_OK;
    }
  }
  return tm_error_set(err, TM_EUNSUPPORTED, "unsupported Arrow type '%s'", fmt);
}

void tm_schema_init(tm_schema *s) { memset(s, 0, sizeof *s); }

void tm_schema_dispose(tm_schema *s) {
  for (size_t i = 0; i < s->n_cols; i++) tm_free(s->cols[i].name);
  tm_free(s->cols);
  memset(s, 0, sizeof *s);
}

int tm_schema_add(tm_schema *s, const char *name, tm_type type, bool nullable,
                  int32_t field_id, tm_error *err) {
  if (s->n_cols == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    tm_column *cols = tm_reallocarray(s->cols, cap, sizeof *cols);
    if (!cols) return tm_error_nomem(err);
    s->cols = cols;
    s->cap = cap;
  }
  char *copy = tm_strdup(name);
  if (!copy) return tm_error_nomem(err);
  tm_column *c = &s->cols[s->n_cols++];
  c->name = copy;
  c->type = type;
  c->nullable = nullable;
  c->field_id = field_id;
  return TM_OK;
}

int tm_schema_copy(tm_schema *dst, const tm_schema *src, tm_error *err) {
  for (size_t i = 0; i < src->n_cols; i++) {
    const tm_column *c = &src->cols[i];
    int rc = tm_schema_add(dst, c->name, c->type, c->nullable, c->field_id, err);
    if (rc < 0) {
      tm_schema_dispose(dst);
      return rc;
    }
  }
  return TM_OK;
}

int tm_schema_find(const tm_schema *s, const char *name) {
  for (size_t i = 0; i < s->n_cols; i++)
    if (strcmp(s->cols[i].name, name) == 0) return (int)i;
  return -1;
}

int tm_schema_find_nocase(const tm_schema *s, const char *name) {
  int exact = tm_schema_find(s, name);
  if (exact >= 0) return exact;
  for (size_t i = 0; i < s->n_cols; i++)
    if (strcasecmp(s->cols[i].name, name) == 0) return (int)i;
  return -1;
}

bool tm_schema_equal(const tm_schema *a, const tm_schema *b) {
  if (a->n_cols != b->n_cols) return false;
  for (size_t i = 0; i < a->n_cols; i++) {
    if (strcmp(a->cols[i].name, b->cols[i].name) != 0) return false;
    if (!tm_type_equal(&a->cols[i].type, &b->cols[i].type)) return false;
    if (a->cols[i].nullable != b->cols[i].nullable) return false;
  }
  return true;
}

int tm_schema_fingerprint(const tm_schema *s, tm_buf *out, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    char tn[64];
    const tm_type *t = &s->cols[i].type;
    tm_type_name(t, tn, sizeof tn);
    TM_TRY(tm_buf_printf(out, err, "%s%s:%s", i ? "," : "", s->cols[i].name,
                         t->nested ? t->nested->sig : tn));
  }
  return TM_OK;
}

/*
 * Export: one allocation block per ArrowSchema node holds its format, name and
 * metadata strings; private_data points at the block.
 */
typedef struct export_node {
  struct ArrowSchema *children_storage; /* struct node: n children */
  struct ArrowSchema **children_ptrs;
  char strings[]; /* format \0 name \0 metadata */
} export_node;

static void release_schema(struct ArrowSchema *s) {
  if (!s || !s->release) return;
  for (int64_t i = 0; i < s->n_children; i++) {
    struct ArrowSchema *c = s->children[i];
    if (c && c->release) c->release(c);
  }
  export_node *node = s->private_data;
  if (node) {
    tm_free(node->children_storage);
    tm_free(node->children_ptrs);
    tm_free(node);
  }
  s->release = NULL;
}

/* Arrow metadata: int32 n, then per pair int32 key length, key, int32 value length, value. */
static size_t uuid_metadata(char *buf) {
  static const char key[] = "ARROW:extension:name";
  static const char val[] = "arrow.uuid";
  int32_t n = 1, kl = (int32_t)strlen(key), vl = (int32_t)strlen(val);
  size_t off = 0;
  memcpy(buf + off, &n, 4), off += 4;
  memcpy(buf + off, &kl, 4), off += 4;
  memcpy(buf + off, key, (size_t)kl), off += (size_t)kl;
  memcpy(buf + off, &vl, 4), off += 4;
  memcpy(buf + off, val, (size_t)vl), off += (size_t)vl;
  return off;
}

static int init_node(struct ArrowSchema *out, const char *format, const char *name,
                     bool with_uuid, int64_t flags, int64_t n_children, tm_error *err) {
  size_t flen = strlen(format) + 1, nlen = strlen(name) + 1;
  char meta[128];
  size_t mlen = with_uuid ? uuid_metadata(meta) : 0;
  export_node *node = tm_calloc(1, sizeof *node + flen + nlen + mlen);
  if (!node) return tm_error_nomem(err);
  memcpy(node->strings, format, flen);
  memcpy(node->strings + flen, name, nlen);
  if (mlen) memcpy(node->strings + flen + nlen, meta, mlen);
  if (n_children > 0) {
    node->children_storage = tm_calloc((size_t)n_children, sizeof *node->children_storage);
    node->children_ptrs = tm_calloc((size_t)n_children, sizeof *node->children_ptrs);
    if (!node->children_storage || !node->children_ptrs) {
      tm_free(node->children_storage);
      tm_free(node->children_ptrs);
      tm_free(node);
      return tm_error_nomem(err);
    }
    for (int64_t i = 0; i < n_children; i++)
      node->children_ptrs[i] = &node->children_storage[i];
  }
  memset(out, 0, sizeof *out);
  out->format = node->strings;
  out->name = node->strings + flen;
  out->metadata = mlen ? node->strings + flen + nlen : NULL;
  out->flags = flags;
  out->n_children = 0; /* raised as children are filled, so release is safe midway */
  out->children = node->children_ptrs;
  out->release = release_schema;
  out->private_data = node;
  return TM_OK;
}

static int export_field(struct ArrowSchema *out, const char *name, const tm_type *t,
                        bool nullable, tm_error *err) {
  char fmt[48];
  if (tm_type_to_arrow_format(t, fmt, sizeof fmt) != TM_OK ||
      (tm_type_is_nested(t) && !t->nested))
    return tm_error_set(err, TM_EINVALID, "column '%s' has no Arrow type", name);
  int64_t n = t->nested ? (int64_t)t->nested->n : 0;
  TM_TRY(init_node(out, fmt, name, t->uuid, nullable ? ARROW_FLAG_NULLABLE : 0, n, err));
  for (int64_t i = 0; i < n; i++) {
    int rc = export_field(out->children[i], t->nested->name[i], &t->nested->child[i],
                          t->nested->nullable[i], err);
    if (rc < 0) {
      out->release(out);
      return rc;
    }
    out->n_children = i + 1;
  }
  return TM_OK;
}

int tm_schema_to_arrow(const tm_schema *s, struct ArrowSchema *out, tm_error *err) {
  TM_TRY(init_node(out, "+s", "", false, 0, (int64_t)s->n_cols, err));
  for (size_t i = 0; i < s->n_cols; i++) {
    const tm_column *c = &s->cols[i];
    int rc = export_field(out->children[i], c->name, &c->type, c->nullable, err);
    if (rc < 0) {
      out->release(out);
      return rc;
    }
    out->n_children = (int64_t)i + 1;
  }
  return TM_OK;
}

static bool has_uuid_extension(const char *metadata) {
  if (!metadata) return false;
  int32_t n;
  memcpy(&n, metadata, 4);
  const char *p = metadata + 4;
  for (int32_t i = 0; i < n && i < 64; i++) {
    int32_t kl, vl;
    memcpy(&kl, p, 4);
    if (kl < 0 || kl > 4096) return false;
    const char *k = p + 4;
    memcpy(&vl, k + kl, 4);
    if (vl < 0 || vl > 4096) return false;
    const char *v = k + kl + 4;
    if (kl == 20 && memcmp(k, "ARROW:extension:name", 20) == 0 && vl == 10 &&
        memcmp(v, "arrow.uuid", 10) == 0)
      return true;
    p = v + vl;
  }
  return false;
}

/* The type of one Arrow field, nested ones through their children. */
static int import_type(const struct ArrowSchema *c, int depth, tm_type *out, tm_error *err) {
  if (!c->format) return tm_error_set(err, TM_EINVALID, "an Arrow field without a format");
  bool l = strcmp(c->format, "+l") == 0, st = strcmp(c->format, "+s") == 0,
       m = strcmp(c->format, "+m") == 0;
  if (!l && !st && !m) {
    TM_TRY(tm_type_from_arrow_format(c->format, out, err));
    if (out->id == TM_TYPE_FIXED_BINARY && out->width == 16 && has_uuid_extension(c->metadata))
      out->uuid = true;
    return TM_OK;
  }
  if (depth >= TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "Arrow type nested deeper than %d levels",
                        TM_NTYPE_MAX_DEPTH);
  int64_t n = c->n_children;
  if ((l && n != 1) || (st && (n < 1 || n > TM_NTYPE_MAX_FIELDS)) || (m && n != 1) || !c->children)
    return tm_error_set(err, TM_EUNSUPPORTED, "Arrow type '%s' with %lld children", c->format,
                        (long long)n);
  if (l) {
    tm_type e;
    TM_TRY(import_type(c->children[0], depth + 1, &e, err));
    return tm_type_list(&e, (c->children[0]->flags & ARROW_FLAG_NULLABLE) != 0, out, err);
  }
  if (m) {
    const struct ArrowSchema *ent = c->children[0];
    if (!ent->format || strcmp(ent->format, "+s") != 0 || ent->n_children != 2)
      return tm_error_set(err, TM_EUNSUPPORTED, "Arrow map entries are not struct<key, value>");
    tm_type k, v;
    TM_TRY(import_type(ent->children[0], depth + 2, &k, err));
    TM_TRY(import_type(ent->children[1], depth + 2, &v, err));
    return tm_type_map(&k, &v, (ent->children[1]->flags & ARROW_FLAG_NULLABLE) != 0, out, err);
  }
  tm_type *types = tm_calloc((size_t)n, sizeof *types);
  const char **names = tm_calloc((size_t)n, sizeof *names);
  bool *nl = tm_calloc((size_t)n, sizeof *nl);
  int rc = types && names && nl ? TM_OK : tm_error_nomem(err);
  for (int64_t i = 0; i < n && rc == TM_OK; i++) {
    const struct ArrowSchema *ch = c->children[i];
    names[i] = ch->name ? ch->name : "";
    nl[i] = (ch->flags & ARROW_FLAG_NULLABLE) != 0;
    rc = import_type(ch, depth + 1, &types[i], err);
  }
  if (rc == TM_OK) rc = tm_type_struct((size_t)n, names, types, nl, out, err);
  tm_free(types);
  tm_free(names);
  tm_free(nl);
  return rc;
}

int tm_schema_from_arrow(tm_schema *out, const struct ArrowSchema *in, tm_error *err) {
  if (!in->format || strcmp(in->format, "+s") != 0)
    return tm_error_set(err, TM_EUNSUPPORTED, "expected an Arrow struct schema");
  for (int64_t i = 0; i < in->n_children; i++) {
    const struct ArrowSchema *c = in->children[i];
    tm_type t;
    int rc = import_type(c, 0, &t, err);
    if (rc == TM_OK)
      rc = tm_schema_add(out, c->name ? c->name : "", t, (c->flags & ARROW_FLAG_NULLABLE) != 0,
                         -1, err);
    if (rc < 0) {
      tm_schema_dispose(out);
      return rc;
    }
  }
  return TM_OK;
}

/* ---- nested types as text ------------------------------------------------------ */

/* One node: <nullable 0|1><uuid 0|1><name length>:<name><format length>:<format>,
 * then for a nested format <children>: and each child as a node. */
static int enc_node(tm_buf *b, const char *name, const tm_type *t, bool nullable,
                    tm_error *err) {
  char fmt[48];
  if (tm_type_to_arrow_format(t, fmt, sizeof fmt) != TM_OK)
    return tm_error_set(err, TM_EINVALID, "field '%s' has no Arrow type", name);
  TM_TRY(tm_buf_printf(b, err, "%d%d%zu:%s%zu:%s", nullable ? 1 : 0, t->uuid ? 1 : 0,
                       strlen(name), name, strlen(fmt), fmt));
  if (!tm_type_is_nested(t)) return TM_OK;
  if (!t->nested) return tm_error_set(err, TM_EINVALID, "field '%s' has no children", name);
  TM_TRY(tm_buf_printf(b, err, "%zu:", t->nested->n));
  for (size_t i = 0; i < t->nested->n; i++)
    TM_TRY(enc_node(b, t->nested->name[i], &t->nested->child[i], t->nested->nullable[i], err));
  return TM_OK;
}

int tm_type_encode(const tm_type *t, tm_buf *out, tm_error *err) {
  return enc_node(out, "", t, true, err);
}

typedef struct dec {
  const char *s;
  size_t len, pos;
} dec;

static bool dec_num(dec *d, size_t *out) {
  size_t v = 0, start = d->pos;
  while (d->pos < d->len && d->s[d->pos] >= '0' && d->s[d->pos] <= '9' && d->pos - start < 9)
    v = v * 10 + (size_t)(d->s[d->pos++] - '0');
  if (d->pos == start || d->pos >= d->len || d->s[d->pos] != ':') return false;
  d->pos++;
  *out = v;
  return true;
}

static int dec_node(dec *d, int depth, char **name, tm_type *t, bool *nullable, tm_error *err) {
  *name = NULL;
  if (depth > TM_NTYPE_MAX_DEPTH || d->len - d->pos < 2)
    return tm_error_set(err, TM_ECORRUPT, "a stored nested type is malformed");
  *nullable = d->s[d->pos] == '1';
  bool uuid = d->s[d->pos + 1] == '1';
  d->pos += 2;
  size_t nl, fl;
  if (!dec_num(d, &nl) || nl > d->len - d->pos)
    return tm_error_set(err, TM_ECORRUPT, "a stored nested type is malformed");
  *name = tm_strndup(d->s + d->pos, nl);
  if (!*name) return tm_error_nomem(err);
  d->pos += nl;
  char fmt[48];
  if (!dec_num(d, &fl) || fl >= sizeof fmt || fl > d->len - d->pos)
    return tm_error_set(err, TM_ECORRUPT, "a stored nested type is malformed");
  memcpy(fmt, d->s + d->pos, fl);
  fmt[fl] = '\0';
  d->pos += fl;
  bool l = strcmp(fmt, "+l") == 0, m = strcmp(fmt, "+m") == 0, st = strcmp(fmt, "+s") == 0;
  if (!l && !m && !st) {
    TM_TRY(tm_type_from_arrow_format(fmt, t, err));
    t->uuid = uuid;
    return TM_OK;
  }
  size_t n;
  if (!dec_num(d, &n) || n == 0 || n > TM_NTYPE_MAX_FIELDS || ((l || m) && n != 1))
    return tm_error_set(err, TM_ECORRUPT, "a stored nested type is malformed");
  tm_type *types = tm_calloc(n, sizeof *types);
  char **names = tm_calloc(n, sizeof *names);
  bool *nls = tm_calloc(n, sizeof *nls);
  int rc = types && names && nls ? TM_OK : tm_error_nomem(err);
  for (size_t i = 0; i < n && rc == TM_OK; i++)
    rc = dec_node(d, depth + 1, &names[i], &types[i], &nls[i], err);
  if (rc == TM_OK) {
    if (l) rc = tm_type_list(&types[0], nls[0], t, err);
    else if (st) rc = tm_type_struct(n, (const char *const *)names, types, nls, t, err);
    else if (types[0].id != TM_TYPE_STRUCT || types[0].nested->n != 2)
      rc = tm_error_set(err, TM_ECORRUPT, "a stored map type is malformed");
    else
      rc = tm_type_map(&types[0].nested->child[0], &types[0].nested->child[1],
                       types[0].nested->nullable[1], t, err);
  }
  for (size_t i = 0; names && i < n; i++) tm_free(names[i]);
  tm_free(types);
  tm_free(names);
  tm_free(nls);
  return rc;
}

int tm_type_decode(const char *s, size_t len, tm_type *out, tm_error *err) {
  dec d = {s, len, 0};
  char *name = NULL;
  bool nullable;
  int rc = dec_node(&d, 0, &name, out, &nullable, err);
  tm_free(name);
  if (rc == TM_OK && d.pos != len)
    rc = tm_error_set(err, TM_ECORRUPT, "a stored nested type is malformed");
  return rc;
}
