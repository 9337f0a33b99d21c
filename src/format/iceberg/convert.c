/*
 * convert.c - converting values and columns between columnar types the way
 * Iceberg schema evolution allows (format layer, private to the Iceberg
 * module): int -> long, float -> double, wider decimals of one scale,
 * timestamp and time units, date -> timestamp, binary <-> string; and a
 * data file's nested column into the table's nested type by member ids.
 */
#include <string.h>

#include "format/iceberg/iceberg_int.h"
#include "util/time.h"

/* ---- value conversion ------------------------------------------------------ */

static int64_t unit_scale(tm_time_unit u) { return tm_unit_per_second(u); }

/* Converts v (of type from) to type to. False when the types do not convert. */
bool tm_iceberg__convert_value(const tm_value *in, const tm_type *from, const tm_type *to,
                          tm_value *out) {
  *out = *in;
  out->type = to->id;
  if (in->is_null) return true;
  tm_type_id f = from->id, t = to->id;
  bool f_int = tm_type_is_signed_int(from) || f == TM_TYPE_DATE32;
  bool f_uint = tm_type_is_integer(from) && !tm_type_is_signed_int(from);
  switch (t) {
    case TM_TYPE_BOOL:
      return f == TM_TYPE_BOOL;
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: {
      int64_t x;
      if (f_int && f != TM_TYPE_DATE32) {
        x = in->v.i;
      } else if (f_uint && in->v.u <= (uint64_t)INT64_MAX) {
        x = (int64_t)in->v.u;
      } else {
        return false;
      }
      int64_t lo = t == TM_TYPE_INT8 ? INT8_MIN : t == TM_TYPE_INT16 ? INT16_MIN
                   : t == TM_TYPE_INT32 ? INT32_MIN : INT64_MIN;
      int64_t hi = t == TM_TYPE_INT8 ? INT8_MAX : t == TM_TYPE_INT16 ? INT16_MAX
                   : t == TM_TYPE_INT32 ? INT32_MAX : INT64_MAX;
      if (x < lo || x > hi) return false;
      out->v.i = x;
      return true;
    }
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (f == TM_TYPE_FLOAT32 || f == TM_TYPE_FLOAT64) return true;
      return false;
    case TM_TYPE_DECIMAL128:
      return f == TM_TYPE_DECIMAL128 && from->scale == to->scale;
    case TM_TYPE_DATE32:
      return f == TM_TYPE_DATE32;
    case TM_TYPE_TIME64:
      if (f != TM_TYPE_TIME64) return false;
      if (from->unit != to->unit) {
        int64_t a = unit_scale(from->unit), b = unit_scale(to->unit);
        out->v.i = a < b ? in->v.i * (b / a) : tm_floor_div(in->v.i, a / b);
      }
      return true;
    case TM_TYPE_TIMESTAMP:
      if (f == TM_TYPE_DATE32) {
        out->v.i = in->v.i * 86400 * unit_scale(to->unit);
        return true;
      }
      if (f != TM_TYPE_TIMESTAMP) return false;
      if (from->unit != to->unit) {
        int64_t a = unit_scale(from->unit), b = unit_scale(to->unit);
        out->v.i = a < b ? in->v.i * (b / a) : tm_floor_div(in->v.i, a / b);
      }
      return true;
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY:
      return f == TM_TYPE_UTF8 || f == TM_TYPE_BINARY || f == TM_TYPE_FIXED_BINARY;
    case TM_TYPE_FIXED_BINARY:
      return (f == TM_TYPE_FIXED_BINARY || f == TM_TYPE_BINARY) &&
             in->v.s.len == (size_t)to->width;
    default:
      return false;
  }
}

/* A column of n rows converted from src (type from) to type to. */
int tm_iceberg__convert_column(const tm_colview *src, const tm_type *to, int64_t n,
                          struct ArrowArray *out, const char *col, tm_error *err) {
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, *to, 0);
  int rc = tm_colbuilder_reserve(&cb, n, 0, err);
  for (int64_t i = 0; rc == TM_OK && i < n; i++) {
    tm_value v, c;
    tm_colview_get(src, i, &v);
    if (!tm_iceberg__convert_value(&v, &src->type, to, &c)) {
      char a[64], b[64];
      tm_type_name(&src->type, a, sizeof a);
      tm_type_name(to, b, sizeof b);
      rc = tm_error_set(err, TM_EUNSUPPORTED, "column %s: %s value does not convert to %s", col,
                        a, b);
      break;
    }
    rc = tm_colbuilder_append_value(&cb, &c, err);
  }
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  return rc;
}


/* ---- nested columns across schema changes (issue 16) ------------------------ */

struct tm_iceberg__shape {
  tm_type to;                   /* the table's type of this member */
  int src;                      /* the file member it reads (index in the file's parent), -1: none */
  bool copy;                    /* the file's subtree is the table's: copied as it is */
  tm_value dflt;                /* src < 0: the value every row gets (NULL or initial-default) */
  struct tm_iceberg__shape *kids; /* STRUCT: one per table member; LIST: the element; MAP: the
                                   * entries (a STRUCT of key and value) */
  size_t n_kids;
};

/* The slot of the file struct's member k at slot offset off (schema.h: each
 * member's slot is followed by its subtree's). */
static size_t member_slot(const tm_type *st, size_t off, size_t k) {
  for (size_t j = 0; j < k; j++) off += 1 + tm_type_id_slots(&st->nested->child[j]);
  return off;
}

static int kind_error(const char *col, const tm_type *from, const tm_type *to, tm_error *err) {
  char a[96], b[96];
  tm_type_name(from, a, sizeof a);
  tm_type_name(to, b, sizeof b);
  return tm_error_set(err, TM_EUNSUPPORTED,
                      "column '%s': the data file holds %s where the table has %s", col, a, b);
}

/* What building a shape needs besides the types. */
typedef struct shape_ctx {
  tm_arena *a;
  const int32_t *ids;
  bool by_name;
  tm_iceberg__missing_fn missing;
  void *payload;
  const char *col;
} shape_ctx;

static int shape_of(const shape_ctx *c, tm_iceberg__shape *sh, const tm_iceberg_field *fld,
                    const tm_type *to, const tm_type *from, size_t off, int depth, tm_error *err);

/* A struct member the file lacks: the reader's value for it (its identity
 * partition value, its initial-default), else NULL, in every row. */
static void missing_member(const shape_ctx *c, tm_iceberg__shape *sh, const tm_iceberg_field *fld,
                           const tm_type *to) {
  sh->to = *to;
  sh->src = -1;
  memset(&sh->dflt, 0, sizeof sh->dflt);
  sh->dflt.type = to->id;
  sh->dflt.is_null = true;
  if (!tm_type_is_nested(to) && c->missing) c->missing(c->payload, fld, to, &sh->dflt);
}

static int struct_shape(const shape_ctx *c, tm_iceberg__shape *sh, const tm_iceberg_type *it,
                        const tm_type *to, const tm_type *from, size_t off, int depth,
                        tm_error *err) {
  const tm_ntype *tn = to->nested, *fn = from->nested;
  if (it->id != TM_ICEBERG_STRUCT || it->n_fields != tn->n)
    return tm_error_set(err, TM_EINVALID, "column '%s': the type does not match the schema",
                        c->col);
  sh->n_kids = tn->n;
  sh->kids = tm_arena_calloc(c->a, tn->n, sizeof *sh->kids, err);
  if (!sh->kids) return err->code;
  bool copy = tn->n == fn->n;
  for (size_t k = 0; k < tn->n; k++) {
    const tm_iceberg_field *m = &it->fields[k];
    int hit = -1;
    size_t hit_off = 0;
    for (size_t j = 0; j < fn->n && hit < 0; j++) {
      size_t slot = member_slot(from, off, j);
      bool same = c->by_name ? strcmp(fn->name[j], m->name) == 0 : c->ids[slot] == m->id;
      if (same) {
        hit = (int)j;
        hit_off = slot + 1;
      }
    }
    if (hit < 0) {
      missing_member(c, &sh->kids[k], m, &tn->child[k]);
      copy = false;
      continue;
    }
    TM_TRY(shape_of(c, &sh->kids[k], m, &tn->child[k], &fn->child[hit], hit_off, depth + 1, err));
    sh->kids[k].src = hit;
    copy = copy && hit == (int)k && sh->kids[k].copy;
  }
  sh->copy = copy;
  return TM_OK;
}

/* The shape of one member: fld (the table's field; its type it) read from the
 * file's member of type from whose subtree's id slots start at ids + off. */
static int shape_of(const shape_ctx *c, tm_iceberg__shape *sh, const tm_iceberg_field *fld,
                    const tm_type *to, const tm_type *from, size_t off, int depth, tm_error *err) {
  const char *col = c->col;
  tm_arena *a = c->a;
  if (depth > TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_EUNSUPPORTED, "column '%s': nested too deep", col);
  sh->to = *to;
  sh->src = 0;
  if (tm_type_is_nested(to) != tm_type_is_nested(from) ||
      (tm_type_is_nested(to) && to->id != from->id)) {
    return kind_error(col, from, to, err);
  }
  if (!tm_type_is_nested(to)) {
    sh->copy = tm_type_equal(to, from);
    if (!sh->copy) {
      /* Promotions Iceberg allows (int -> long, float -> double, wider decimals): a
       * zero value (an empty one for bytes) tells whether the types convert. */
      tm_value zero, out;
      memset(&zero, 0, sizeof zero);
      zero.type = from->id;
      if (!tm_iceberg__convert_value(&zero, from, to, &out)) return kind_error(col, from, to, err);
    }
    return TM_OK;
  }
  const tm_iceberg_type *it = fld->type;
  if (to->id == TM_TYPE_STRUCT)
    return struct_shape(c, sh, it, to, from, off, depth, err);
  sh->kids = tm_arena_calloc(a, 1, sizeof *sh->kids, err);
  if (!sh->kids) return err->code;
  sh->n_kids = 1;
  if (to->id == TM_TYPE_LIST) {
    if (it->id != TM_ICEBERG_LIST) return kind_error(col, from, to, err);
    TM_TRY(shape_of(c, &sh->kids[0], it->element, &to->nested->child[0], &from->nested->child[0],
                    off + 1, depth + 1, err));
    sh->copy = sh->kids[0].copy;
    return TM_OK;
  }
  /* MAP: the entries struct of key and value (slots: key, its subtree, value, its subtree). */
  if (it->id != TM_ICEBERG_MAP) return kind_error(col, from, to, err);
  const tm_type *te = &to->nested->child[0], *fe = &from->nested->child[0];
  tm_iceberg__shape *e = &sh->kids[0];
  e->to = *te;
  e->kids = tm_arena_calloc(a, 2, sizeof *e->kids, err);
  if (!e->kids) return err->code;
  e->n_kids = 2;
  size_t value_off = off + 1 + tm_type_id_slots(&fe->nested->child[0]) + 1;
  TM_TRY(shape_of(c, &e->kids[0], it->key, &te->nested->child[0], &fe->nested->child[0], off + 1,
                  depth + 1, err));
  TM_TRY(shape_of(c, &e->kids[1], it->value, &te->nested->child[1], &fe->nested->child[1],
                  value_off, depth + 1, err));
  e->kids[1].src = 1;
  e->copy = e->kids[0].copy && e->kids[1].copy;
  sh->copy = e->copy;
  return TM_OK;
}

int tm_iceberg__shape_new(tm_arena *a, const tm_iceberg_field *fld, const tm_type *to,
                          const tm_type *from, const int32_t *ids, bool by_name,
                          tm_iceberg__missing_fn missing, void *payload,
                          tm_iceberg__shape **out, tm_error *err) {
  *out = NULL;
  tm_iceberg__shape *sh = tm_arena_calloc(a, 1, sizeof *sh, err);
  if (!sh) return err->code;
  shape_ctx c = {a, ids, by_name, missing, payload, fld->name};
  TM_TRY(shape_of(&c, sh, fld, to, from, 0, 0, err));
  if (!sh->copy) *out = sh;
  return TM_OK;
}

const tm_type *tm_iceberg__shape_type(const tm_iceberg__shape *sh) { return &sh->to; }

/* Appends the table's value of row `row` of src (the file's member) to cb. */
static int put_value(const tm_iceberg__shape *sh, const tm_colview *src, int64_t row,
                     tm_colbuilder *cb, const char *col, tm_error *err) {
  if (sh->src < 0) {
    return sh->dflt.is_null ? tm_colbuilder_append_null(cb, err)
                            : tm_colbuilder_append_value(cb, &sh->dflt, err);
  }
  if (tm_colview_is_null(src, row)) return tm_colbuilder_append_null(cb, err);
  if (sh->copy) return tm_colbuilder_append_range(cb, src, row, 1, err);
  if (!tm_type_is_nested(&sh->to)) {
    tm_value v, c;
    tm_colview_get(src, row, &v);
    if (!tm_iceberg__convert_value(&v, &src->type, &sh->to, &c))
      return kind_error(col, &src->type, &sh->to, err);
    return tm_colbuilder_append_value(cb, &c, err);
  }
  if (sh->to.id == TM_TYPE_STRUCT) {
    for (size_t k = 0; k < sh->n_kids; k++) {
      const tm_iceberg__shape *kid = &sh->kids[k];
      tm_colview ch;
      if (kid->src >= 0) ch = tm_colview_child(src, (size_t)kid->src);
      TM_TRY(put_value(kid, kid->src >= 0 ? &ch : NULL, row, tm_colbuilder_child(cb, k), col,
                       err));
    }
    return tm_colbuilder_append_nested(cb, err);
  }
  const int32_t *o = src->values;
  tm_colview ch = tm_colview_child(src, 0);
  if (o[row] < 0 || o[row + 1] < o[row] || o[row + 1] > ch.length)
    return tm_error_set(err, TM_ECORRUPT, "column '%s': list offsets out of bounds", col);
  for (int64_t e = o[row]; e < o[row + 1]; e++)
    TM_TRY(put_value(&sh->kids[0], &ch, e, tm_colbuilder_child(cb, 0), col, err));
  return tm_colbuilder_append_nested(cb, err);
}

int tm_iceberg__shape_apply(const tm_iceberg__shape *sh, const tm_colview *src, int64_t n,
                            struct ArrowArray *out, const char *col, tm_error *err) {
  if (src->length < n) return tm_error_set(err, TM_EINVALID, "column '%s': short column", col);
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, sh->to, 0);
  int rc = tm_colbuilder_reserve(&cb, n, 0, err);
  for (int64_t i = 0; rc == TM_OK && i < n; i++) rc = put_value(sh, src, i, &cb, col, err);
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  return rc;
}

/* Fills the id slots of a file member of type t (slots from *slot) from the
 * name mapping's entries for its members (maps: their "fields"). */
static void mapped_ids(const tm_iceberg_name_map *maps, size_t n_maps, const tm_type *t,
                       int32_t *ids, size_t *slot, int depth) {
  if (!tm_type_is_nested(t) || depth > TM_NTYPE_MAX_DEPTH) return;
  const tm_ntype *nt = t->nested;
  const tm_type *kids = nt->child;
  const char *const *names = nt->name;
  size_t n = nt->n;
  static const char *const kv[2] = {"key", "value"};
  if (t->id == TM_TYPE_MAP) {
    kids = nt->child[0].nested->child;
    names = kv;
    n = 2;
  } else if (t->id == TM_TYPE_LIST) {
    static const char *const el[1] = {"element"};
    names = el;
  }
  for (size_t k = 0; k < n; k++) {
    const tm_iceberg_name_map *m = tm_iceberg_name_map_lookup(maps, n_maps, names[k]);
    ids[(*slot)++] = m ? m->field_id : -1;
    mapped_ids(m ? m->fields : NULL, m ? m->n_fields : 0, &kids[k], ids, slot, depth + 1);
  }
}

void tm_iceberg__name_mapping_ids(const tm_iceberg_name_map *entry, const tm_type *t,
                                  int32_t *ids) {
  size_t slot = 0;
  mapped_ids(entry ? entry->fields : NULL, entry ? entry->n_fields : 0, t, ids, &slot, 0);
}
