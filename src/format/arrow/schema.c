/*
 * schema.c - column types, schemas and their Arrow format strings (format
 * layer). See schema.h.
 */
#include "format/arrow/schema.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
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

bool tm_type_equal(const tm_type *a, const tm_type *b) {
  if (a->id != b->id) return false;
  switch (a->id) {
    case TM_TYPE_TIMESTAMP: return a->unit == b->unit && a->utc == b->utc;
    case TM_TYPE_TIME64: return a->unit == b->unit;
    case TM_TYPE_DECIMAL128: return a->precision == b->precision && a->scale == b->scale;
    case TM_TYPE_FIXED_BINARY: return a->width == b->width && a->uuid == b->uuid;
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
      "binary",  "fixed",   "date32",  "time64",  "timestamp"};
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
    tm_type_name(&s->cols[i].type, tn, sizeof tn);
    TM_TRY(tm_buf_printf(out, err, "%s%s:%s", i ? "," : "", s->cols[i].name, tn));
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

int tm_schema_to_arrow(const tm_schema *s, struct ArrowSchema *out, tm_error *err) {
  TM_TRY(init_node(out, "+s", "", false, 0, (int64_t)s->n_cols, err));
  for (size_t i = 0; i < s->n_cols; i++) {
    const tm_column *c = &s->cols[i];
    char fmt[48];
    if (tm_type_to_arrow_format(&c->type, fmt, sizeof fmt) != TM_OK) {
      out->release(out);
      return tm_error_set(err, TM_EINVALID, "column '%s' has no Arrow type", c->name);
    }
    int rc = init_node(out->children[i], fmt, c->name, c->type.uuid,
                       c->nullable ? ARROW_FLAG_NULLABLE : 0, 0, err);
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

int tm_schema_from_arrow(tm_schema *out, const struct ArrowSchema *in, tm_error *err) {
  if (!in->format || strcmp(in->format, "+s") != 0)
    return tm_error_set(err, TM_EUNSUPPORTED, "expected an Arrow struct schema");
  for (int64_t i = 0; i < in->n_children; i++) {
    const struct ArrowSchema *c = in->children[i];
    tm_type t;
    int rc = tm_type_from_arrow_format(c->format, &t, err);
    if (rc == TM_OK && t.id == TM_TYPE_FIXED_BINARY && t.width == 16 &&
        has_uuid_extension(c->metadata))
      t.uuid = true;
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
