/*
 * nested.c - a nested Parquet field (LIST, MAP, STRUCT at any depth) as JSON
 * text per row, from the repetition and definition levels of its leaves
 * (format layer, parquet; issue 16).
 *
 * The field's schema subtree becomes a tree of nodes: leaves, structs (plain
 * groups), lists and maps. Lists follow the Parquet backward-compatibility
 * rules (LogicalTypes.md): a LIST group holds one repeated field R; R is the
 * element when it is a primitive, a group of several fields, or a group named
 * "array" or "<list>_tuple" (the two-level encodings of parquet-mr, Hive and
 * Spark); otherwise R's only child is the element (three levels). A MAP (or
 * legacy MAP_KEY_VALUE) group holds one repeated key_value group (key, then
 * an optional value). A repeated field outside a LIST or MAP is a list of
 * required elements.
 *
 * Assembly (Dremel): every leaf gives (repetition, definition) level pairs;
 * a row starts at repetition 0; inside a repeated node of repetition level r,
 * an entry of level <= r starts its next element; a definition level below a
 * node's own marks the node NULL (optional) or its list empty (repeated).
 * Every leaf below a node must agree on these splits; when they do not, or a
 * level says there is a value the page did not hold, the error names the file
 * and the column. Slices are always inside the levels decoded, so hostile
 * levels cannot make us read out of bounds.
 *
 * Output: JSON as DuckDB's to_json writes it: lists [..], structs {"f":..},
 * maps {"key":value} (keys as JSON strings), NULL as null; numbers and
 * booleans bare, other values as strings of their text form (render.h).
 */
#include <math.h>
#include <string.h>

#include "format/arrow/render.h"
#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

typedef enum nkind { NK_LEAF = 0, NK_STRUCT, NK_LIST, NK_MAP } nkind;

typedef struct nnode {
  nkind kind;
  int repetition;     /* TM_PQ_REQUIRED, OPTIONAL, REPEATED (absent: required) */
  int def, rep;       /* levels at this node, itself included */
  tm_strview name;
  size_t size;        /* nodes in its subtree, itself included */
  size_t n_children;
  size_t leaf0, n_leaves;
  size_t rep_child;   /* LIST/MAP: the repeated node */
  size_t elem;        /* LIST: the node each element renders (rep_child for two levels) */
  size_t key, value;  /* MAP: nodes; value SIZE_MAX when absent */
  tm_type type;       /* LEAF */
  int pq_phys;        /* LEAF */
  int32_t field_id;   /* -1 when absent */
} nnode;

struct tm_pq_ntree {
  nnode *nodes;
  size_t n;
  size_t n_leaves;
};

void tm_parquet__ntree_free(tm_pq_ntree *t) {
  if (!t) return;
  tm_free(t->nodes);
  tm_free(t);
}

size_t tm_parquet__ntree_leaves(const tm_pq_ntree *t) { return t->n_leaves; }

int tm_parquet__ntree_leaf_info(const tm_pq_ntree *t, size_t leaf, tm_type *type, int *max_def,
                                int *max_rep) {
  for (size_t i = 0; i < t->n; i++) {
    const nnode *n = &t->nodes[i];
    if (n->kind == NK_LEAF && n->leaf0 == leaf) {
      *type = n->type;
      *max_def = n->def;
      *max_rep = n->rep;
      return TM_OK;
    }
  }
  return TM_ENOTFOUND;
}

static bool is_list(const tm_pq_schema_elem *e) {
  return e->logical.kind == TM_PQ_LT_LIST || e->converted_type == TM_PQ_CT_LIST;
}
static bool is_map(const tm_pq_schema_elem *e) {
  return e->logical.kind == TM_PQ_LT_MAP || e->converted_type == TM_PQ_CT_MAP ||
         e->converted_type == TM_PQ_CT_MAP_KEY_VALUE;
}

static size_t first_child(const tm_pq_ntree *t, size_t i) { (void)t; return i + 1; }
static size_t next_sibling(const tm_pq_ntree *t, size_t j) { return j + t->nodes[j].size; }

#define MAX_NEST 256

int tm_parquet__ntree_new(tm_pq_ntree **out, const tm_pq_schema_elem *elems, size_t n_elems,
                          tm_time_unit int96_unit, tm_error *err) {
  *out = NULL;
  if (n_elems == 0) return tm_error_set(err, TM_ECORRUPT, "empty nested field");
  int rc = TM_OK;
  tm_pq_ntree *t = tm_calloc(1, sizeof *t);
  size_t *stack = tm_calloc(MAX_NEST, sizeof *stack);  /* open node indices */
  int32_t *left = tm_calloc(MAX_NEST, sizeof *left);    /* their children to come */
  if (!t || !stack || !left || !(t->nodes = tm_calloc(n_elems, sizeof *t->nodes))) {
    rc = tm_error_nomem(err);
    goto done;
  }
  int depth = 0;
  size_t i = 0;
  for (; i < n_elems; i++) {
    while (depth > 0 && left[depth - 1] == 0) {
      nnode *p = &t->nodes[stack[depth - 1]];
      p->size = i - stack[depth - 1];
      p->n_leaves = t->n_leaves - p->leaf0;
      depth--;
    }
    if (i > 0 && depth == 0) break; /* the field's subtree ended */
    const tm_pq_schema_elem *e = &elems[i];
    nnode *n = &t->nodes[i];
    const nnode *parent = depth ? &t->nodes[stack[depth - 1]] : NULL;
    if (depth) left[depth - 1]--;
    n->name = e->name;
    n->field_id = e->field_id;
    n->repetition = e->repetition < 0 ? TM_PQ_REQUIRED : e->repetition;
    n->def = (parent ? parent->def : 0) + (n->repetition != TM_PQ_REQUIRED);
    n->rep = (parent ? parent->rep : 0) + (n->repetition == TM_PQ_REPEATED);
    n->leaf0 = t->n_leaves;
    n->value = SIZE_MAX;
    if (e->num_children < 0 || (size_t)e->num_children > n_elems - i - 1) {
      rc = tm_error_set(err, TM_ECORRUPT, "group '%.*s' claims %d children", (int)e->name.len,
                        e->name.ptr, (int)e->num_children);
      goto done;
    }
    if (e->num_children == 0) {
      n->kind = NK_LEAF;
      n->size = 1;
      n->n_leaves = 1;
      n->pq_phys = e->type;
      tm_error terr;
      tm_error_init(&terr);
      if (tm_parquet__map_type(e, int96_unit, &n->type, &terr) < 0) {
        rc = tm_error_set(err, terr.code == TM_ECORRUPT ? TM_ECORRUPT : TM_EUNSUPPORTED,
                          "leaf '%.*s': %s", (int)e->name.len, e->name.ptr, terr.message);
        goto done;
      }
      t->n_leaves++;
      continue;
    }
    n->kind = is_list(e) ? NK_LIST : is_map(e) ? NK_MAP : NK_STRUCT;
    n->n_children = (size_t)e->num_children;
    if (depth >= MAX_NEST) {
      rc = tm_error_set(err, TM_EUNSUPPORTED, "nested deeper than %d levels", MAX_NEST);
      goto done;
    }
    stack[depth] = i;
    left[depth] = e->num_children;
    depth++;
  }
  while (depth > 0 && left[depth - 1] == 0) {
    nnode *p = &t->nodes[stack[depth - 1]];
    p->size = i - stack[depth - 1];
    p->n_leaves = t->n_leaves - p->leaf0;
    depth--;
  }
  if (depth != 0) {
    rc = tm_error_set(err, TM_ECORRUPT, "nested field's schema ends inside a group");
    goto done;
  }
  t->n = i;
  /* Lists and maps: find the repeated node and the element. */
  for (size_t k = 0; k < t->n; k++) {
    nnode *n = &t->nodes[k];
    if (n->kind != NK_LIST && n->kind != NK_MAP) continue;
    size_t r = first_child(t, k);
    nnode *rn = &t->nodes[r];
    if (n->n_children != 1 || rn->repetition != TM_PQ_REPEATED) {
      if (n->kind == NK_MAP && n->repetition == TM_PQ_REPEATED) {
        n->kind = NK_STRUCT; /* a legacy MAP_KEY_VALUE group that is itself the repeated one */
        continue;
      }
      rc = tm_error_set(err, TM_ECORRUPT, "%s group '%.*s' does not hold one repeated field",
                        n->kind == NK_LIST ? "LIST" : "MAP", (int)n->name.len, n->name.ptr);
      goto done;
    }
    n->rep_child = r;
    if (n->kind == NK_LIST) {
      bool named_as_element =
          (rn->name.len == 5 && memcmp(rn->name.ptr, "array", 5) == 0) ||
          (rn->name.len == n->name.len + 6 && memcmp(rn->name.ptr, n->name.ptr, n->name.len) == 0 &&
           memcmp(rn->name.ptr + n->name.len, "_tuple", 6) == 0);
      bool two_level = rn->kind == NK_LEAF || rn->n_children != 1 || named_as_element;
      n->elem = two_level ? r : first_child(t, r);
    } else {
      if (rn->kind == NK_LEAF || rn->n_children < 1 || rn->n_children > 2) {
        rc = tm_error_set(err, TM_ECORRUPT, "MAP group '%.*s': key_value holds %zu fields",
                          (int)n->name.len, n->name.ptr, rn->n_children);
        goto done;
      }
      n->key = first_child(t, r);
      if (rn->n_children == 2) n->value = next_sibling(t, n->key);
    }
  }
  *out = t;
  t = NULL;
done:
  tm_free(stack);
  tm_free(left);
  tm_parquet__ntree_free(t);
  return rc;
}

/* ---- assembly ----------------------------------------------------------------- */

typedef struct rctx {
  const tm_pq_ntree *t;
  tm_pq_nleaf *leaves;
  tm_buf *out;
  tm_buf tmp;
  const char *file, *column; /* for messages */
  tm_error *err;
  size_t *pool;              /* 3 * n_leaves slots per depth (< t->n), or NULL */
} rctx;

static int bad_levels(rctx *c, const char *what) {
  return tm_error__corrupt(c->err, __FILE__, __LINE__, "%s: column '%s': inconsistent levels: %s",
                           c->file, c->column, what);
}

static int render_value(rctx *c, size_t ni, size_t *lo, size_t *hi, bool body, int depth);

/* A NULL or empty node: every leaf below has one entry, defined below def. */
static int check_single(rctx *c, const nnode *n, const size_t *lo, const size_t *hi, int def) {
  for (size_t l = n->leaf0; l < n->leaf0 + n->n_leaves; l++)
    if (hi[l] - lo[l] != 1 || c->leaves[l].def[lo[l]] >= def)
      return bad_levels(c, "leaves disagree on a NULL or empty value");
  return TM_OK;
}

static int render_leaf(rctx *c, const nnode *n, size_t *lo, size_t *hi) {
  tm_pq_nleaf *lf = &c->leaves[n->leaf0];
  if (hi[n->leaf0] - lo[n->leaf0] != 1 || lf->def[lo[n->leaf0]] != n->def)
    return bad_levels(c, "a value's levels do not match its field");
  if (lf->vcur >= lf->vals.length) return bad_levels(c, "more values announced than stored");
  tm_value v;
  tm_colview_get(&lf->vals, lf->vcur++, &v);
  tm_error *err = c->err;
  switch (n->type.id) {
    case TM_TYPE_BOOL:
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
    case TM_TYPE_DECIMAL128: return tm_value_render(c->out, &n->type, &v, err);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (isfinite(v.v.f)) return tm_value_render(c->out, &n->type, &v, err);
      break;
    default: break;
  }
  tm_buf_clear(&c->tmp);
  TM_TRY(tm_value_render(&c->tmp, &n->type, &v, err));
  return tm_json_string(c->out, c->tmp.ptr, c->tmp.len, err);
}

/* The elements of repeated node r inside the slot [lo, hi); elem renders each
 * (elem == r: r's body). map: as an object of key/value pairs. */
static int render_repeated(rctx *c, size_t ri, size_t elem, const nnode *map, size_t *lo,
                           size_t *hi, int depth) {
  const nnode *r = &c->t->nodes[ri];
  size_t l0 = r->leaf0, l1 = r->leaf0 + r->n_leaves;
  if (c->leaves[l0].def[lo[l0]] < r->def) {
    TM_TRY(check_single(c, r, lo, hi, r->def));
    return tm_buf_puts(c->out, map ? "{}" : "[]", c->err);
  }
  size_t nl = c->t->n_leaves;
  bool pooled = c->pool && (size_t)depth < c->t->n;
  size_t *pos = pooled ? c->pool + (size_t)depth * 3 * nl : tm_calloc(3 * nl, sizeof *pos);
  if (!pos) return tm_error_nomem(c->err);
  size_t *lo2 = pos + nl, *hi2 = pos + 2 * nl;
  int rc = tm_buf_putc(c->out, map ? '{' : '[', c->err);
  for (size_t l = l0; l < l1; l++) pos[l] = lo[l];
  for (bool first = true; rc == TM_OK && pos[l0] < hi[l0]; first = false) {
    for (size_t l = l0; l < l1 && rc == TM_OK; l++) {
      tm_pq_nleaf *lf = &c->leaves[l];
      if (pos[l] >= hi[l]) {
        rc = bad_levels(c, "leaves disagree on the number of elements");
        break;
      }
      if (lf->def[pos[l]] < r->def) {
        rc = bad_levels(c, "an element is not defined inside a non-empty list");
        break;
      }
      size_t e = pos[l] + 1;
      while (e < hi[l] && lf->rep[e] > r->rep) e++;
      lo2[l] = pos[l];
      hi2[l] = e;
      pos[l] = e;
    }
    if (rc < 0) break;
    if (!first) rc = tm_buf_putc(c->out, ',', c->err);
    if (rc < 0) break;
    if (!map) {
      rc = render_value(c, elem, lo2, hi2, elem == ri, depth + 1);
      continue;
    }
    size_t start = c->out->len;
    rc = render_value(c, map->key, lo2, hi2, false, depth + 1);
    if (rc == TM_OK && c->out->ptr[start] != '"') {
      /* A key that is not a string: its text as one. */
      tm_buf_clear(&c->tmp);
      rc = tm_buf_append(&c->tmp, c->out->ptr + start, c->out->len - start, c->err);
      c->out->len = start;
      if (rc == TM_OK) rc = tm_json_string(c->out, c->tmp.ptr, c->tmp.len, c->err);
    }
    if (rc == TM_OK) rc = tm_buf_putc(c->out, ':', c->err);
    if (rc == TM_OK)
      rc = map->value == SIZE_MAX ? tm_buf_puts(c->out, "null", c->err)
                                  : render_value(c, map->value, lo2, hi2, false, depth + 1);
  }
  for (size_t l = l0; l < l1 && rc == TM_OK; l++)
    if (pos[l] != hi[l]) rc = bad_levels(c, "leaves disagree on the number of elements");
  if (rc == TM_OK) rc = tm_buf_putc(c->out, map ? '}' : ']', c->err);
  if (!pooled) tm_free(pos);
  return rc;
}

/* One slot of node ni ([lo, hi) of each of its leaves, non-empty). body: the
 * node's value without its own repetition (an element of itself). */
static int render_value(rctx *c, size_t ni, size_t *lo, size_t *hi, bool body, int depth) {
  const nnode *n = &c->t->nodes[ni];
  if (depth > MAX_NEST * 2) return bad_levels(c, "nested too deep");
  if (!body && n->repetition == TM_PQ_REPEATED) return render_repeated(c, ni, ni, NULL, lo, hi, depth);
  if (!body && n->repetition == TM_PQ_OPTIONAL && c->leaves[n->leaf0].def[lo[n->leaf0]] < n->def) {
    TM_TRY(check_single(c, n, lo, hi, n->def));
    return tm_buf_puts(c->out, "null", c->err);
  }
  switch (n->kind) {
    case NK_LEAF: return render_leaf(c, n, lo, hi);
    case NK_STRUCT: {
      TM_TRY(tm_buf_putc(c->out, '{', c->err));
      size_t k = first_child(c->t, ni);
      for (size_t i = 0; i < n->n_children; i++, k = next_sibling(c->t, k)) {
        const nnode *ch = &c->t->nodes[k];
        if (i) TM_TRY(tm_buf_putc(c->out, ',', c->err));
        TM_TRY(tm_json_string(c->out, ch->name.ptr, ch->name.len, c->err));
        TM_TRY(tm_buf_putc(c->out, ':', c->err));
        TM_TRY(render_value(c, k, lo, hi, false, depth + 1));
      }
      return tm_buf_putc(c->out, '}', c->err);
    }
    case NK_LIST: return render_repeated(c, n->rep_child, n->elem, NULL, lo, hi, depth);
    case NK_MAP: return render_repeated(c, n->rep_child, 0, n, lo, hi, depth);
  }
  return bad_levels(c, "unknown node");
}

/*
 * The common shape, a list of signed integers (one leaf: LIST -> repeated ->
 * element, or a two-level repeated integer), rendered by one pass over the
 * leaf's levels instead of the general walk: the same checks, the same text.
 * Returns 1 when t has another shape (the general walk renders it).
 */
static int render_int_lists(rctx *c, tm_pq_nleaf *lf, int64_t rows, tm_colbuilder *out) {
  const tm_pq_ntree *t = c->t;
  const nnode *top = &t->nodes[0];
  if (t->n_leaves != 1 || top->kind != NK_LIST || top->rep != 0) return 1;
  const nnode *rn = &t->nodes[top->rep_child], *el = &t->nodes[top->elem];
  if (el->kind != NK_LEAF || el->rep != 1 || (el != rn && el->repetition == TM_PQ_REPEATED))
    return 1;
  int width = el->type.id == TM_TYPE_INT32 ? 4 : el->type.id == TM_TYPE_INT64 ? 8 : 0;
  if (!width || lf->vals.type.id != el->type.id || lf->vals.validity) return 1;
  tm_error *err = c->err;
  tm_buf *b = c->out;
  int rc = TM_OK;
  for (int64_t r = 0; r < rows && rc == TM_OK; r++) {
    size_t k = lf->pos;
    if (k >= lf->n) return bad_levels(c, "a leaf has fewer rows than the row group");
    if (lf->rep[k] != 0) return bad_levels(c, "a row starts with a repetition level above 0");
    size_t e = k + 1;
    while (e < lf->n && lf->rep[e] != 0) e++;
    lf->pos = e;
    int d = lf->def[k];
    if (d < rn->def) { /* a NULL list or an empty one: one entry */
      if (e - k != 1) return bad_levels(c, "leaves disagree on a NULL or empty value");
      if (top->repetition == TM_PQ_OPTIONAL && d < top->def) {
        rc = tm_colbuilder_append_null(out, err);
      } else {
        rc = tm_colbuilder_append_bytes(out, "[]", 2, err);
      }
      continue;
    }
    tm_buf_clear(b);
    /* '[' + up to 21 bytes and a ',' per element + ']'. */
    size_t need;
    if (tm_mul_overflow(e - k, 22, &need)) {
      return tm_error_set(err, TM_ETOOLARGE, "%s: column '%s': a list too long", c->file,
                          c->column);
    }
    TM_TRY(tm_buf_reserve(b, need + 2, err));
    char *o = b->ptr;
    *o++ = '[';
    for (size_t i = k; i < e; i++) {
      if (i > k) {
        if (lf->rep[i] != 1) return bad_levels(c, "a value's levels do not match its field");
        *o++ = ',';
      }
      d = lf->def[i];
      if (d < rn->def) return bad_levels(c, "leaves disagree on a NULL or empty value");
      if (d < el->def) { /* a NULL element */
        memcpy(o, "null", 4);
        o += 4;
        continue;
      }
      if (d != el->def) return bad_levels(c, "a value's levels do not match its field");
      if (lf->vcur >= lf->vals.length) return bad_levels(c, "more values announced than stored");
      int64_t v = width == 4 ? ((const int32_t *)lf->vals.values)[lf->vcur]
                             : ((const int64_t *)lf->vals.values)[lf->vcur];
      lf->vcur++;
      uint64_t m = (uint64_t)v;
      if (v < 0) {
        *o++ = '-';
        m = 0 - m;
      }
      o += tm_u64_digits(m); /* the digits, written backwards in place */
      tm_u64_format_back(o, m);
    }
    *o++ = ']';
    rc = tm_colbuilder_append_bytes(out, b->ptr, (size_t)(o - b->ptr), err);
  }
  return rc;
}

int tm_parquet__nested_render(const tm_pq_ntree *t, tm_pq_nleaf *leaves, int64_t rows,
                              tm_colbuilder *out, const char *file, const char *column,
                              tm_error *err) {
  rctx c = {t, leaves, NULL, {0}, file, column, err, NULL};
  /* Scratch of the repeated nodes, one slot per depth (small trees only). */
  size_t slots;
  if (!tm_mul_overflow(t->n, 3 * t->n_leaves, &slots) && slots <= ((size_t)1 << 20))
    c.pool = tm_calloc(slots ? slots : 1, sizeof *c.pool);
  tm_buf json;
  tm_buf_init(&json, (size_t)1 << 30);
  tm_buf_init(&c.tmp, (size_t)1 << 30);
  c.out = &json;
  size_t nl = t->n_leaves;
  int rc = render_int_lists(&c, leaves, rows, out);
  if (rc != 1) {
    tm_free(c.pool);
    tm_buf_dispose(&json);
    tm_buf_dispose(&c.tmp);
    return rc;
  }
  size_t *lo = tm_calloc(2 * (nl ? nl : 1), sizeof *lo);
  rc = lo ? TM_OK : tm_error_nomem(err);
  size_t *hi = lo ? lo + nl : NULL;
  const nnode *top = &t->nodes[0];
  for (int64_t r = 0; r < rows && rc == TM_OK; r++) {
    for (size_t l = 0; l < nl && rc == TM_OK; l++) {
      tm_pq_nleaf *lf = &leaves[l];
      if (lf->pos >= lf->n) {
        rc = bad_levels(&c, "a leaf has fewer rows than the row group");
        break;
      }
      if (lf->rep[lf->pos] != 0) {
        rc = bad_levels(&c, "a row starts with a repetition level above 0");
        break;
      }
      size_t e = lf->pos + 1;
      while (e < lf->n && lf->rep[e] != 0) e++;
      lo[l] = lf->pos;
      hi[l] = e;
      lf->pos = e;
    }
    if (rc < 0) break;
    if (top->repetition == TM_PQ_OPTIONAL && leaves[0].def[lo[0]] < top->def) {
      rc = check_single(&c, top, lo, hi, top->def);
      if (rc == TM_OK) rc = tm_colbuilder_append_null(out, err);
      continue;
    }
    tm_buf_clear(&json);
    rc = render_value(&c, 0, lo, hi, false, 0);
    if (rc == TM_OK) rc = tm_colbuilder_append_bytes(out, json.ptr, json.len, err);
  }
  tm_free(lo);
  tm_free(c.pool);
  tm_buf_dispose(&json);
  tm_buf_dispose(&c.tmp);
  return rc;
}

/* ---- native assembly: Arrow LIST / STRUCT / MAP arrays ----------------------- */

/* The type of node ni (body: the node's value without its own repetition). */
static int ntype_of(const tm_pq_ntree *t, size_t ni, bool body, tm_type *out, tm_error *err) {
  const nnode *n = &t->nodes[ni];
  if (!body && n->repetition == TM_PQ_REPEATED) {
    tm_type e;
    TM_TRY(ntype_of(t, ni, true, &e, err));
    return tm_type_list(&e, false, out, err); /* a bare repeated field: required elements */
  }
  switch (n->kind) {
    case NK_LEAF: *out = n->type; return TM_OK;
    case NK_LIST: {
      const nnode *el = &t->nodes[n->elem];
      bool two = n->elem == n->rep_child;
      tm_type e;
      TM_TRY(ntype_of(t, n->elem, two, &e, err));
      return tm_type_list(&e, !two && el->repetition == TM_PQ_OPTIONAL, out, err);
    }
    case NK_MAP: {
      if (n->value == SIZE_MAX)
        return tm_error_set(err, TM_EUNSUPPORTED, "MAP '%.*s' has no value field",
                            (int)n->name.len, n->name.ptr);
      tm_type k, v;
      TM_TRY(ntype_of(t, n->key, false, &k, err));
      TM_TRY(ntype_of(t, n->value, false, &v, err));
      return tm_type_map(&k, &v, t->nodes[n->value].repetition == TM_PQ_OPTIONAL, out, err);
    }
    case NK_STRUCT: break;
  }
  size_t nc = n->n_children;
  tm_type *types = tm_calloc(nc ? nc : 1, sizeof *types);
  char **names = tm_calloc(nc ? nc : 1, sizeof *names);
  bool *nl = tm_calloc(nc ? nc : 1, sizeof *nl);
  int rc = types && names && nl ? TM_OK : tm_error_nomem(err);
  size_t k = first_child(t, ni);
  for (size_t i = 0; i < nc && rc == TM_OK; i++, k = next_sibling(t, k)) {
    const nnode *ch = &t->nodes[k];
    names[i] = tm_strndup(ch->name.ptr, ch->name.len);
    if (!names[i]) rc = tm_error_nomem(err);
    nl[i] = ch->repetition == TM_PQ_OPTIONAL;
    if (rc == TM_OK) rc = ntype_of(t, k, false, &types[i], err);
  }
  if (rc == TM_OK) rc = tm_type_struct(nc, (const char *const *)names, types, nl, out, err);
  for (size_t i = 0; names && i < nc; i++) tm_free(names[i]);
  tm_free(types);
  tm_free(names);
  tm_free(nl);
  return rc;
}

int tm_parquet__ntree_type(const tm_pq_ntree *t, tm_type *out, bool *nullable, tm_error *err) {
  *nullable = t->nodes[0].repetition == TM_PQ_OPTIONAL;
  return ntype_of(t, 0, false, out, err);
}

/* The id slots (schema.h) of node ni's type as ntype_of builds it. */
static int ids_of(const tm_pq_ntree *t, size_t ni, bool body, int32_t *ids, size_t cap,
                  size_t *slot) {
  const nnode *n = &t->nodes[ni];
#define TM_PUT_ID(v)                    \
  do {                                  \
    if (*slot >= cap) return TM_ECORRUPT; \
    ids[(*slot)++] = (v);               \
  } while (0)
  if (!body && n->repetition == TM_PQ_REPEATED) {
    TM_PUT_ID(-1); /* a bare repeated field: its id is the list's, the element has none */
    return ids_of(t, ni, true, ids, cap, slot);
  }
  switch (n->kind) {
    case NK_LEAF: return TM_OK;
    case NK_LIST:
      TM_PUT_ID(t->nodes[n->elem].field_id);
      return ids_of(t, n->elem, n->elem == n->rep_child, ids, cap, slot);
    case NK_MAP:
      if (n->value == SIZE_MAX) return TM_EUNSUPPORTED;
      TM_PUT_ID(t->nodes[n->key].field_id);
      TM_TRY(ids_of(t, n->key, false, ids, cap, slot));
      TM_PUT_ID(t->nodes[n->value].field_id);
      return ids_of(t, n->value, false, ids, cap, slot);
    case NK_STRUCT: break;
  }
  size_t k = first_child(t, ni);
  for (size_t i = 0; i < n->n_children; i++, k = next_sibling(t, k)) {
    TM_PUT_ID(t->nodes[k].field_id);
    TM_TRY(ids_of(t, k, false, ids, cap, slot));
  }
  return TM_OK;
#undef TM_PUT_ID
}

int tm_parquet__ntree_ids(const tm_pq_ntree *t, int32_t *ids, size_t n_ids) {
  size_t slot = 0;
  TM_TRY(ids_of(t, 0, false, ids, n_ids, &slot));
  return slot == n_ids ? TM_OK : TM_ECORRUPT;
}

static int build_value(rctx *c, size_t ni, tm_colbuilder *cb, size_t *lo, size_t *hi, bool body,
                       int depth);

static int build_leaf(rctx *c, const nnode *n, tm_colbuilder *cb, size_t *lo, size_t *hi) {
  tm_pq_nleaf *lf = &c->leaves[n->leaf0];
  if (hi[n->leaf0] - lo[n->leaf0] != 1 || lf->def[lo[n->leaf0]] != n->def)
    return bad_levels(c, "a value's levels do not match its field");
  if (lf->vcur >= lf->vals.length) return bad_levels(c, "more values announced than stored");
  return tm_colbuilder_append_range(cb, &lf->vals, lf->vcur++, 1, c->err);
}

/* The elements of repeated node r inside [lo, hi) into list (or map) builder cb. */
static int build_repeated(rctx *c, size_t ri, size_t elem, const nnode *map, tm_colbuilder *cb,
                          size_t *lo, size_t *hi, int depth) {
  const nnode *r = &c->t->nodes[ri];
  size_t l0 = r->leaf0, l1 = r->leaf0 + r->n_leaves;
  if (c->leaves[l0].def[lo[l0]] < r->def) {
    TM_TRY(check_single(c, r, lo, hi, r->def));
    return tm_colbuilder_append_nested(cb, c->err); /* empty */
  }
  size_t nl = c->t->n_leaves;
  bool pooled = c->pool && (size_t)depth < c->t->n;
  size_t *pos = pooled ? c->pool + (size_t)depth * 3 * nl : tm_calloc(3 * nl, sizeof *pos);
  if (!pos) return tm_error_nomem(c->err);
  size_t *lo2 = pos + nl, *hi2 = pos + 2 * nl;
  tm_colbuilder *ch = tm_colbuilder_child(cb, 0);
  int rc = TM_OK;
  for (size_t l = l0; l < l1; l++) pos[l] = lo[l];
  while (rc == TM_OK && pos[l0] < hi[l0]) {
    for (size_t l = l0; l < l1 && rc == TM_OK; l++) {
      tm_pq_nleaf *lf = &c->leaves[l];
      if (pos[l] >= hi[l]) {
        rc = bad_levels(c, "leaves disagree on the number of elements");
        break;
      }
      if (lf->def[pos[l]] < r->def) {
        rc = bad_levels(c, "an element is not defined inside a non-empty list");
        break;
      }
      size_t e = pos[l] + 1;
      while (e < hi[l] && lf->rep[e] > r->rep) e++;
      lo2[l] = pos[l];
      hi2[l] = e;
      pos[l] = e;
    }
    if (rc < 0) break;
    if (!map) {
      rc = build_value(c, elem, ch, lo2, hi2, elem == ri, depth + 1);
      continue;
    }
    rc = build_value(c, map->key, tm_colbuilder_child(ch, 0), lo2, hi2, false, depth + 1);
    if (rc == TM_OK)
      rc = build_value(c, map->value, tm_colbuilder_child(ch, 1), lo2, hi2, false, depth + 1);
    if (rc == TM_OK) rc = tm_colbuilder_append_nested(ch, c->err);
  }
  for (size_t l = l0; l < l1 && rc == TM_OK; l++)
    if (pos[l] != hi[l]) rc = bad_levels(c, "leaves disagree on the number of elements");
  if (rc == TM_OK) rc = tm_colbuilder_append_nested(cb, c->err);
  if (!pooled) tm_free(pos);
  return rc;
}

static int build_value(rctx *c, size_t ni, tm_colbuilder *cb, size_t *lo, size_t *hi, bool body,
                       int depth) {
  const nnode *n = &c->t->nodes[ni];
  if (depth > MAX_NEST * 2) return bad_levels(c, "nested too deep");
  if (!body && n->repetition == TM_PQ_REPEATED)
    return build_repeated(c, ni, ni, NULL, cb, lo, hi, depth);
  if (!body && n->repetition == TM_PQ_OPTIONAL && c->leaves[n->leaf0].def[lo[n->leaf0]] < n->def) {
    TM_TRY(check_single(c, n, lo, hi, n->def));
    return tm_colbuilder_append_null(cb, c->err);
  }
  switch (n->kind) {
    case NK_LEAF: return build_leaf(c, n, cb, lo, hi);
    case NK_STRUCT: {
      size_t k = first_child(c->t, ni);
      for (size_t i = 0; i < n->n_children; i++, k = next_sibling(c->t, k))
        TM_TRY(build_value(c, k, tm_colbuilder_child(cb, i), lo, hi, false, depth + 1));
      return tm_colbuilder_append_nested(cb, c->err);
    }
    case NK_LIST: return build_repeated(c, n->rep_child, n->elem, NULL, cb, lo, hi, depth);
    case NK_MAP: return build_repeated(c, n->rep_child, 0, n, cb, lo, hi, depth);
  }
  return bad_levels(c, "unknown node");
}

/*
 * The common shape, a list of primitives (one leaf: LIST -> repeated ->
 * element, or a two-level repeated primitive): one pass over the leaf's
 * levels, the elements of a row copied as one range of the leaf's values.
 * The same checks as the general walk. Returns 1 for another shape.
 */
static int build_flat_lists(rctx *c, tm_pq_nleaf *lf, int64_t rows, tm_colbuilder *out) {
  const tm_pq_ntree *t = c->t;
  const nnode *top = &t->nodes[0];
  if (t->n_leaves != 1 || top->kind != NK_LIST || top->rep != 0) return 1;
  const nnode *rn = &t->nodes[top->rep_child], *el = &t->nodes[top->elem];
  if (el->kind != NK_LEAF || el->rep != 1 || (el != rn && el->repetition == TM_PQ_REPEATED))
    return 1;
  if (lf->vals.type.id != el->type.id || lf->vals.validity) return 1;
  tm_error *err = c->err;
  tm_colbuilder *ch = tm_colbuilder_child(out, 0);
  TM_TRY(tm_colbuilder_reserve(out, rows, 0, err));
  for (int64_t r = 0; r < rows; r++) {
    size_t k = lf->pos;
    if (k >= lf->n) return bad_levels(c, "a leaf has fewer rows than the row group");
    if (lf->rep[k] != 0) return bad_levels(c, "a row starts with a repetition level above 0");
    size_t e = k + 1;
    while (e < lf->n && lf->rep[e] != 0) e++;
    lf->pos = e;
    int d = lf->def[k];
    if (d < rn->def) { /* a NULL list or an empty one: one entry */
      if (e - k != 1) return bad_levels(c, "leaves disagree on a NULL or empty value");
      if (top->repetition == TM_PQ_OPTIONAL && d < top->def) TM_TRY(tm_colbuilder_append_null(out, err));
      else TM_TRY(tm_colbuilder_append_nested(out, err));
      continue;
    }
    int64_t run = lf->vcur; /* the first value of the current run of non-NULL elements */
    for (size_t i = k; i < e; i++) {
      if (i > k && lf->rep[i] != 1) return bad_levels(c, "a value's levels do not match its field");
      d = lf->def[i];
      if (d < rn->def) return bad_levels(c, "leaves disagree on a NULL or empty value");
      if (d == el->def) {
        if (lf->vcur >= lf->vals.length) return bad_levels(c, "more values announced than stored");
        lf->vcur++;
        continue;
      }
      if (d > el->def) return bad_levels(c, "a value's levels do not match its field");
      TM_TRY(tm_colbuilder_append_range(ch, &lf->vals, run, lf->vcur - run, err));
      TM_TRY(tm_colbuilder_append_null(ch, err)); /* a NULL element */
      run = lf->vcur;
    }
    TM_TRY(tm_colbuilder_append_range(ch, &lf->vals, run, lf->vcur - run, err));
    TM_TRY(tm_colbuilder_append_nested(out, err));
  }
  return TM_OK;
}

int tm_parquet__nested_build(const tm_pq_ntree *t, tm_pq_nleaf *leaves, int64_t rows,
                             tm_colbuilder *out, const char *file, const char *column,
                             tm_error *err) {
  rctx c = {t, leaves, NULL, {0}, file, column, err, NULL};
  if (!tm_type_is_nested(&out->type))
    return tm_error_set(err, TM_EINVALID, "%s: column '%s': not a nested builder", file, column);
  int rc = build_flat_lists(&c, leaves, rows, out);
  if (rc != 1) return rc;
  size_t slots;
  if (!tm_mul_overflow(t->n, 3 * t->n_leaves, &slots) && slots <= ((size_t)1 << 20))
    c.pool = tm_calloc(slots ? slots : 1, sizeof *c.pool);
  size_t nl = t->n_leaves;
  size_t *lo = tm_calloc(2 * (nl ? nl : 1), sizeof *lo);
  rc = lo ? TM_OK : tm_error_nomem(err);
  size_t *hi = lo ? lo + nl : NULL;
  const nnode *top = &t->nodes[0];
  for (int64_t r = 0; r < rows && rc == TM_OK; r++) {
    for (size_t l = 0; l < nl && rc == TM_OK; l++) {
      tm_pq_nleaf *lf = &leaves[l];
      if (lf->pos >= lf->n) {
        rc = bad_levels(&c, "a leaf has fewer rows than the row group");
        break;
      }
      if (lf->rep[lf->pos] != 0) {
        rc = bad_levels(&c, "a row starts with a repetition level above 0");
        break;
      }
      size_t e = lf->pos + 1;
      while (e < lf->n && lf->rep[e] != 0) e++;
      lo[l] = lf->pos;
      hi[l] = e;
      lf->pos = e;
    }
    if (rc < 0) break;
    if (top->repetition == TM_PQ_OPTIONAL && leaves[0].def[lo[0]] < top->def) {
      rc = check_single(&c, top, lo, hi, top->def);
      if (rc == TM_OK) rc = tm_colbuilder_append_null(out, err);
      continue;
    }
    rc = build_value(&c, 0, out, lo, hi, false, 0);
  }
  tm_free(lo);
  tm_free(c.pool);
  return rc;
}
