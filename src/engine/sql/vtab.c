/*
 * vtab.c - the SQLite virtual-table module over columnar snapshots
 * (engine layer).
 *
 * Each cayenne or arrow dataset is a table "tidemark" module whose columns
 * carry the declared SQL types of engine_int.h. xBestIndex takes every usable
 * =, <, <=, >, >=, IS NULL, IS NOT NULL and IN constraint; xFilter turns the
 * SQLite values into predicate terms in the column's own domain (a text bound
 * on a timestamp becomes a bound on its raw integer, found by binary search
 * over the canonical text, which is monotonic), prunes segments by zone map
 * and selects rows with tight loops over the raw values. Only the columns the
 * query uses (colUsed) are touched. A single-column ORDER BY / GROUP BY on a
 * dictionary-encoded string column is delivered in order, so SQLite needs no
 * sorter.
 *
 * A constraint is marked "omit" (SQLite does not check it again) only when
 * its right-hand side is a constant whose type makes our evaluation exactly
 * SQLite's; every other pushed constraint is a conservative pre-filter that
 * SQLite re-checks.
 *
 * Snapshots: the first use of a table by a statement (planning, in
 * xBestIndex) pins the engine's published snapshot; the plan and every cursor
 * of that statement read it; the session unpins at statement end (SPEC C5).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sql/sql_int.h"
#include "util/alloc.h"

#define CHUNK 1024

/* Constraint ops as encoded in idxStr. */
enum { OP_EQ, OP_LT, OP_LE, OP_GT, OP_GE, OP_ISNULL, OP_NOTNULL };

/* idxNum flags. */
#define IDX_ORDERED 1
#define IDX_DESC 2

struct tm_sql_vtab {
  sqlite3_vtab base;
  tm_vtab_host *host;
  tm_engine *engine;        /* one reference */
  tm_csnap *pin;            /* the statement's snapshot (one reference), or NULL */
  uint64_t pin_gen;
  tm_sql_vtab *next;        /* host list */
  tm_sql_vtab **prev_next;
};

/* ---- connect / disconnect ------------------------------------------------------------- */

static int declare(sqlite3 *db, const tm_schema *s, char **err_out) {
  tm_buf sql = TM_BUF_INIT(1 << 24);
  int rc = tm_buf_puts(&sql, "CREATE TABLE x(", NULL);
  for (size_t i = 0; i < s->n_cols && rc == TM_OK; i++) {
    char decl[48];
    tm_sqltype_decl(&s->cols[i].type, decl, sizeof decl);
    rc = tm_buf_puts(&sql, i ? ", \"" : "\"", NULL);
    for (const char *p = s->cols[i].name; *p && rc == TM_OK; p++) {
      if (*p == '"') rc = tm_buf_putc(&sql, '"', NULL);
      if (rc == TM_OK) rc = tm_buf_putc(&sql, *p, NULL);
    }
    if (rc == TM_OK) rc = tm_buf_printf(&sql, NULL, "\" %s", decl);
  }
  if (rc == TM_OK) rc = tm_buf_putc(&sql, ')', NULL);
  int src = rc == TM_OK ? sqlite3_declare_vtab(db, sql.ptr) : SQLITE_NOMEM;
  if (src != SQLITE_OK) *err_out = sqlite3_mprintf("cannot declare the table: %s", sqlite3_errmsg(db));
  tm_buf_dispose(&sql);
  return src;
}

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err_out) {
  (void)argc;
  (void)argv;
  tm_vtab_host *host = aux;
  tm_engine *e = host->creating;
  if (!e) {
    *err_out = sqlite3_mprintf("tidemark tables are created by the runtime only");
    return SQLITE_ERROR;
  }
  int rc = declare(db, tm_engine_schema(e), err_out);
  if (rc != SQLITE_OK) return rc;
  tm_sql_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  vt->host = host;
  vt->engine = tm_engine_retain(e);
  vt->next = host->vtabs;
  if (vt->next) vt->next->prev_next = &vt->next;
  vt->prev_next = &host->vtabs;
  host->vtabs = vt;
  *out = &vt->base;
  return SQLITE_OK;
}

static void unpin(tm_sql_vtab *vt) {
  if (vt->pin) tm_engine_snapshot_release(&vt->pin->base);
  vt->pin = NULL;
}

static int vt_disconnect(sqlite3_vtab *base) {
  tm_sql_vtab *vt = (tm_sql_vtab *)base;
  unpin(vt);
  *vt->prev_next = vt->next;
  if (vt->next) vt->next->prev_next = vt->prev_next;
  tm_engine_release(vt->engine);
  sqlite3_free(vt);
  return SQLITE_OK;
}

void tm_sql__vtab_unpin_all(tm_vtab_host *host) {
  for (tm_sql_vtab *vt = host->vtabs; vt; vt = vt->next) unpin(vt);
}

/* The snapshot this statement reads. */
static tm_csnap *snapshot_for(tm_sql_vtab *vt) {
  if (vt->host->fixed) return vt->host->fixed;
  if (!vt->pin || vt->pin_gen != vt->host->gen) {
    unpin(vt);
    vt->pin = tm_cengine_pin(vt->engine);
    vt->pin_gen = vt->host->gen;
  }
  return vt->pin;
}

/* ---- planning ------------------------------------------------------------------------------ */

static bool text_face(const tm_type *t) {
  return t->id == TM_TYPE_UTF8 || tm_type_is_temporal(t) ||
         (t->id == TM_TYPE_FIXED_BINARY && t->uuid);
}

static bool float_face(const tm_type *t) {
  return t->id == TM_TYPE_FLOAT32 || t->id == TM_TYPE_FLOAT64;
}

static bool int_face(const tm_type *t) {
  return tm_type_is_integer(t) && t->id != TM_TYPE_UINT64;
}

/* Whether a constant right-hand side makes our evaluation exactly SQLite's. */
static bool exact(const tm_type *t, int op, sqlite3_value *rhs) {
  if (op == OP_ISNULL || op == OP_NOTNULL) return !float_face(t);
  if (!rhs) return false;
  int k = sqlite3_value_type(rhs);
  if (int_face(t)) return k == SQLITE_INTEGER;
  if (float_face(t)) return k == SQLITE_INTEGER || k == SQLITE_FLOAT;
  if (t->id == TM_TYPE_FIXED_BINARY && t->uuid) return false;
  if (text_face(t)) return k == SQLITE_TEXT;
  return false;
}

static bool all_dict(const tm_csnap *s, size_t col) {
  for (size_t i = 0; i < s->n_segs; i++)
    if (s->segs[i].seg->cols[col].enc != TM_CENC_DICT) return false;
  return true;
}

static int vt_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  tm_sql_vtab *vt = (tm_sql_vtab *)base;
  const tm_schema *s = tm_engine_schema(vt->engine);
  tm_buf str = TM_BUF_INIT(1 << 20);
  int argv_i = 0;
  double rows;
  /* Plan on the snapshot the statement will read (pinned for this generation). */
  tm_csnap *snap = snapshot_for(vt);
  rows = (double)(snap->n_live > 0 ? snap->n_live : 1);
  double cost = rows;
  bool any_in = false;
  int rc = tm_buf_printf(&str, NULL, "%016llx|", (unsigned long long)info->colUsed);
  for (int i = 0; i < info->nConstraint && rc == TM_OK; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable || c->iColumn < 0 || (size_t)c->iColumn >= s->n_cols) continue;
    int op;
    switch (c->op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: op = OP_EQ; break;
      case SQLITE_INDEX_CONSTRAINT_LT: op = OP_LT; break;
      case SQLITE_INDEX_CONSTRAINT_LE: op = OP_LE; break;
      case SQLITE_INDEX_CONSTRAINT_GT: op = OP_GT; break;
      case SQLITE_INDEX_CONSTRAINT_GE: op = OP_GE; break;
      case SQLITE_INDEX_CONSTRAINT_ISNULL: op = OP_ISNULL; break;
      case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: op = OP_NOTNULL; break;
      default: continue;
    }
    const tm_type *t = &s->cols[c->iColumn].type;
    if ((op == OP_ISNULL || op == OP_NOTNULL) && float_face(t)) continue; /* NaN reads as NULL */
    const char *coll = sqlite3_vtab_collation(info, i);
    if (text_face(t) && coll && sqlite3_stricmp(coll, "BINARY") != 0) continue;
    bool is_in = op == OP_EQ && sqlite3_vtab_in(info, i, -1);
    if (is_in) {
      sqlite3_vtab_in(info, i, 1);
      any_in = true;
    }
    sqlite3_value *rhs = NULL;
    if (op != OP_ISNULL && op != OP_NOTNULL && !is_in &&
        sqlite3_vtab_rhs_value(info, i, &rhs) != SQLITE_OK)
      rhs = NULL;
    info->aConstraintUsage[i].argvIndex = ++argv_i;
    info->aConstraintUsage[i].omit = !is_in && exact(t, op, rhs);
    rc = tm_buf_printf(&str, NULL, "%d,%d,%d;", c->iColumn, op, is_in ? 1 : 0);
    cost /= op == OP_EQ ? 50.0 : op == OP_ISNULL ? 10.0 : 3.0;
  }
  int idx = 0;
  if (rc == TM_OK && info->nOrderBy == 1 && !any_in && info->aOrderBy[0].iColumn >= 0 &&
      (size_t)info->aOrderBy[0].iColumn < s->n_cols &&
      s->cols[info->aOrderBy[0].iColumn].type.id == TM_TYPE_UTF8 &&
      all_dict(snap, (size_t)info->aOrderBy[0].iColumn)) {
    info->orderByConsumed = 1;
    idx |= IDX_ORDERED | (info->aOrderBy[0].desc ? IDX_DESC : 0);
    rc = tm_buf_printf(&str, NULL, "o%d", info->aOrderBy[0].iColumn);
  }
  if (rc < 0) {
    tm_buf_dispose(&str);
    return SQLITE_NOMEM;
  }
  info->idxNum = idx;
  info->idxStr = sqlite3_mprintf("%s", tm_buf_cstr(&str));
  info->needToFreeIdxStr = 1;
  info->estimatedCost = cost < 1 ? 1 : cost;
  info->estimatedRows = (sqlite3_int64)(cost < 1 ? 1 : cost);
  tm_buf_dispose(&str);
  return info->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

/* ---- constraints to terms --------------------------------------------------------------------- */

typedef enum { CV_TERM, CV_TRUE, CV_FALSE, CV_SKIP } conv;

typedef struct termset {
  tm_predicate p;           /* owned terms (payloads copied) */
  bool none;                /* a constraint can never hold */
} termset;

static int add_cmp(termset *ts, const tm_column *col, int op, tm_value v, tm_error *err) {
  static const tm_pred_op map[] = {TM_PRED_EQ, TM_PRED_LT, TM_PRED_LE, TM_PRED_GT, TM_PRED_GE};
  v.type = col->type.id;
  v.is_null = false;
  return tm_predicate_add(&ts->p, col->name, col->type, map[op], &v, err);
}

static int add_notnull(termset *ts, const tm_column *col, tm_error *err) {
  return tm_predicate_add_null(&ts->p, col->name, col->type, false, err);
}

/* Storage-class rank for comparisons across classes: numbers < text < blob. */
static int class_rank(int k) {
  return k == SQLITE_INTEGER || k == SQLITE_FLOAT ? 1 : k == SQLITE_TEXT ? 2 : 3;
}

static int cross_class(termset *ts, const tm_column *col, int op, int col_rank, int rhs_rank,
                       tm_error *err) {
  bool col_less = col_rank < rhs_rank;
  if (op == OP_EQ) ts->none = true;
  else if ((op == OP_LT || op == OP_LE) == col_less) return add_notnull(ts, col, err);
  else ts->none = true;
  return TM_OK;
}

/* The range of a signed or unsigned (up to 32-bit) integer type. */
static void int_domain(const tm_type *t, int64_t *lo, int64_t *hi) {
  switch (t->id) {
    case TM_TYPE_BOOL: *lo = 0, *hi = 1; break;
    case TM_TYPE_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case TM_TYPE_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case TM_TYPE_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TM_TYPE_UINT8: *lo = 0, *hi = UINT8_MAX; break;
    case TM_TYPE_UINT16: *lo = 0, *hi = UINT16_MAX; break;
    case TM_TYPE_UINT32: *lo = 0, *hi = UINT32_MAX; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
  }
}

static tm_value int_value(const tm_type *t, int64_t x) {
  tm_value v;
  memset(&v, 0, sizeof v);
  if (t->id >= TM_TYPE_UINT8 && t->id <= TM_TYPE_UINT64) v.v.u = (uint64_t)x;
  else if (t->id == TM_TYPE_BOOL) v.v.b = x != 0;
  else v.v.i = x;
  return v;
}

/* col op x for an integer column, x an integer (clamped to the column's domain). */
static int int_bound(termset *ts, const tm_column *col, int op, int64_t x, tm_error *err) {
  int64_t lo, hi;
  int_domain(&col->type, &lo, &hi);
  switch (op) {
    case OP_EQ:
      if (x < lo || x > hi) ts->none = true;
      else return add_cmp(ts, col, OP_EQ, int_value(&col->type, x), err);
      return TM_OK;
    case OP_LT:
    case OP_LE:
      if (x > hi || (op == OP_LE && x == hi)) return add_notnull(ts, col, err);
      if (x < lo || (op == OP_LT && x == lo)) {
        ts->none = true;
        return TM_OK;
      }
      return add_cmp(ts, col, op, int_value(&col->type, x), err);
    default:
      if (x < lo || (op == OP_GE && x == lo)) return add_notnull(ts, col, err);
      if (x > hi || (op == OP_GT && x == hi)) {
        ts->none = true;
        return TM_OK;
      }
      return add_cmp(ts, col, op, int_value(&col->type, x), err);
  }
}

/* col op r for an integer column and a real r. */
static int int_real_bound(termset *ts, const tm_column *col, int op, double r, tm_error *err) {
  if (r != r) {
    ts->none = true;
    return TM_OK;
  }
  double f = floor(r), c = ceil(r);
  if (op == OP_EQ && f != r) {
    ts->none = true;
    return TM_OK;
  }
  double b = op == OP_LT || op == OP_GE ? c : f;
  if (op == OP_EQ) b = r;
  if (b >= 9.2e18) return int_bound(ts, col, op, INT64_MAX, err);
  if (b <= -9.2e18) return int_bound(ts, col, op, INT64_MIN, err);
  /* LT r == LT ceil(r); LE r == LE floor(r); GT r == GT floor(r); GE r == GE ceil(r). */
  return int_bound(ts, col, op, (int64_t)b, err);
}

static const double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

/* Decimal(p <= 15) columns compare as REAL in SQL: a widened bound on the unscaled value. */
static int decimal_bound(termset *ts, const tm_column *col, int op, double r, tm_error *err) {
  if (col->type.scale < 0 || col->type.scale > 15 || r != r || fabs(r) > 1e17) return TM_OK;
  double x = r * k_pow10[col->type.scale];
  tm_value lo, hi;
  memset(&lo, 0, sizeof lo);
  memset(&hi, 0, sizeof hi);
  __int128 a = (__int128)floor(x) - 1, b = (__int128)ceil(x) + 1;
  memcpy(lo.v.dec, &a, 16);
  memcpy(hi.v.dec, &b, 16);
  if (op == OP_EQ || op == OP_GT || op == OP_GE) TM_TRY(add_cmp(ts, col, OP_GE, lo, err));
  if (op == OP_EQ || op == OP_LT || op == OP_LE) TM_TRY(add_cmp(ts, col, OP_LE, hi, err));
  return TM_OK;
}

/* The raw range of a temporal type whose canonical text is fixed-width. */
static void temporal_domain(const tm_type *t, int64_t *lo, int64_t *hi) {
  if (t->id == TM_TYPE_DATE32) {
    *lo = -719528, *hi = 2932896;
  } else if (t->id == TM_TYPE_TIME64) {
    *lo = 0, *hi = TM_SEC_PER_DAY * tm_unit_per_second(t->unit) - 1;
  } else {
    int64_t per = tm_unit_per_second(t->unit);
    int64_t smin = INT64_C(-62167219200), smax = INT64_C(253402300799);
    *lo = __builtin_mul_overflow(smin, per, lo) ? INT64_MIN : *lo;
    if (__builtin_mul_overflow(smax, per, hi) || __builtin_add_overflow(*hi, per - 1, hi)) *hi = INT64_MAX;
  }
}

/* The smallest raw value whose canonical text compares >= s (or > s when strict). */
static int64_t text_threshold(const tm_type *t, tm_strview s, bool strict) {
  int64_t lo, hi;
  temporal_domain(t, &lo, &hi);
  /* Find the first raw in [lo, hi] with text (>|>=) s; hi + 1 when none. */
  int64_t a = lo, b = hi;
  char buf[64];
  if (b == INT64_MAX) b--; /* keep b + 1 representable */
  int64_t end = b + 1;
  while (a < end) {
    int64_t mid = a + (end - a) / 2;
    size_t n = tm_sqltype_render_temporal(t, mid, buf, sizeof buf);
    int c;
    size_t m = n < s.len ? n : s.len;
    c = memcmp(buf, s.ptr, m);
    if (c == 0) c = n < s.len ? -1 : n > s.len ? 1 : 0;
    bool ok = strict ? c > 0 : c >= 0;
    if (ok) end = mid;
    else a = mid + 1;
  }
  return a;
}

static int temporal_bound(termset *ts, const tm_column *col, int op, tm_strview s, tm_error *err) {
  int64_t ge = text_threshold(&col->type, s, false), gt = text_threshold(&col->type, s, true);
  tm_value v;
  memset(&v, 0, sizeof v);
  switch (op) {
    case OP_EQ:
      if (ge >= gt) {
        ts->none = true;
        return TM_OK;
      }
      v.v.i = ge;
      TM_TRY(add_cmp(ts, col, OP_GE, v, err));
      v.v.i = gt;
      return add_cmp(ts, col, OP_LT, v, err);
    case OP_LT: v.v.i = ge; return add_cmp(ts, col, OP_LT, v, err);
    case OP_LE: v.v.i = gt; return add_cmp(ts, col, OP_LT, v, err);
    case OP_GT: v.v.i = gt; return add_cmp(ts, col, OP_GE, v, err);
    default: v.v.i = ge; return add_cmp(ts, col, OP_GE, v, err);
  }
}

/* Converts `col op rhs` into terms of ts. CV_SKIP means no pushdown. */
static int convert(termset *ts, const tm_column *col, int op, sqlite3_value *rhs, tm_error *err) {
  const tm_type *t = &col->type;
  if (op == OP_ISNULL || op == OP_NOTNULL)
    return tm_predicate_add_null(&ts->p, col->name, *t, op == OP_ISNULL, err);
  if (sqlite3_value_type(rhs) == SQLITE_NULL) {
    ts->none = true; /* a comparison with NULL is never true */
    return TM_OK;
  }
  if (int_face(t) || float_face(t) ||
      (t->id == TM_TYPE_DECIMAL128 && t->precision <= 15)) {
    /* Numeric columns apply numeric affinity to the other side. */
    int k = sqlite3_value_numeric_type(rhs);
    if (k != SQLITE_INTEGER && k != SQLITE_FLOAT) return cross_class(ts, col, op, 1, class_rank(k), err);
    if (t->id == TM_TYPE_DECIMAL128) return decimal_bound(ts, col, op, sqlite3_value_double(rhs), err);
    if (int_face(t)) {
      if (t->id == TM_TYPE_BOOL) return TM_OK; /* rare; left to SQLite */
      return k == SQLITE_INTEGER ? int_bound(ts, col, op, sqlite3_value_int64(rhs), err)
                                 : int_real_bound(ts, col, op, sqlite3_value_double(rhs), err);
    }
    double r = sqlite3_value_double(rhs);
    if (r != r) {
      ts->none = true;
      return TM_OK;
    }
    tm_value v;
    memset(&v, 0, sizeof v);
    v.v.f = r;
    return add_cmp(ts, col, op, v, err);
  }
  int k = sqlite3_value_type(rhs);
  if (t->id == TM_TYPE_UTF8) {
    if (k != SQLITE_TEXT) return TM_OK; /* affinity rules depend on the other side: skip */
    tm_value v;
    memset(&v, 0, sizeof v);
    v.v.s = tm_sv((const char *)sqlite3_value_text(rhs), (size_t)sqlite3_value_bytes(rhs));
    return add_cmp(ts, col, op, v, err);
  }
  if (tm_type_is_temporal(t)) {
    if (k == SQLITE_BLOB) return cross_class(ts, col, op, 2, 3, err);
    if (k != SQLITE_TEXT) return TM_OK;
    return temporal_bound(ts, col, op,
                          tm_sv((const char *)sqlite3_value_text(rhs), (size_t)sqlite3_value_bytes(rhs)),
                          err);
  }
  if (t->id == TM_TYPE_FIXED_BINARY && t->uuid) {
    if (k != SQLITE_TEXT || op != OP_EQ) return TM_OK;
    /* Equal only to its canonical text. */
    const char *p = (const char *)sqlite3_value_text(rhs);
    size_t n = (size_t)sqlite3_value_bytes(rhs);
    uint8_t b[16];
    tm_value v;
    memset(&v, 0, sizeof v);
    v.v.s = tm_sv((const char *)b, 16);
    tm_sqlval back;
    if (n != 36) {
      ts->none = true;
      return TM_OK;
    }
    for (int i = 0, j = 0; i < 36; i++) {
      if (i == 8 || i == 13 || i == 18 || i == 23) continue;
      int h = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 : -1;
      if (h < 0) {
        ts->none = true;
        return TM_OK;
      }
      if (j % 2 == 0) b[j / 2] = (uint8_t)(h << 4);
      else b[j / 2] |= (uint8_t)h;
      j++;
    }
    v.type = t->id;
    tm_sqlval_from(&back, t, &v);
    if (back.n != n || memcmp(back.p, p, n) != 0) {
      ts->none = true;
      return TM_OK;
    }
    return add_cmp(ts, col, op, v, err);
  }
  if (t->id == TM_TYPE_BINARY || t->id == TM_TYPE_FIXED_BINARY) {
    if (k != SQLITE_BLOB) return cross_class(ts, col, op, 3, class_rank(k), err);
    tm_value v;
    memset(&v, 0, sizeof v);
    v.v.s = tm_sv((const char *)sqlite3_value_blob(rhs), (size_t)sqlite3_value_bytes(rhs));
    if (t->id == TM_TYPE_FIXED_BINARY && v.v.s.len != (size_t)t->width) return TM_OK;
    return add_cmp(ts, col, op, v, err);
  }
  return TM_OK; /* uint64, decimal text: no pushdown */
}

/* IN: one EQ per value, merged into one IN term when every value converts to a single literal. */
static int convert_in(termset *ts, const tm_column *col, sqlite3_value *list, tm_error *err) {
  sqlite3_value *v;
  int src;
  tm_value *vals = NULL;
  size_t n = 0, cap = 0;
  int rc = TM_OK;
  bool usable = true;
  for (src = sqlite3_vtab_in_first(list, &v); src == SQLITE_OK && v && rc == TM_OK;
       src = sqlite3_vtab_in_next(list, &v)) {
    termset one;
    tm_predicate_init(&one.p);
    one.none = false;
    rc = convert(&one, col, OP_EQ, v, err);
    if (rc == TM_OK && !one.none) {
      if (one.p.n_terms != 1 || one.p.terms[0].op != TM_PRED_EQ) {
        usable = false;
      } else {
        if (n == cap) {
          cap = cap ? cap * 2 : 8;
          tm_value *nv = tm_reallocarray(vals, cap, sizeof *nv);
          if (!nv) rc = tm_error_nomem(err);
          else vals = nv;
        }
        char *owned = NULL;
        if (rc == TM_OK) rc = tm_value_copy(&vals[n], &one.p.terms[0].value, &owned, err);
        if (rc == TM_OK) n++;
      }
    }
    tm_predicate_dispose(&one.p);
  }
  if (rc == TM_OK && src != SQLITE_DONE && src != SQLITE_OK) {
    /* Not an all-at-once list (SQLite chose one value per xFilter): a plain EQ. */
    rc = convert(ts, col, OP_EQ, list, err);
    usable = false;
  } else if (rc == TM_OK && usable) {
    if (n == 0) ts->none = true;
    else rc = tm_predicate_add_in(&ts->p, col->name, col->type, vals, n, err);
  }
  for (size_t i = 0; i < n; i++)
    if (vals[i].type == TM_TYPE_UTF8 || vals[i].type == TM_TYPE_BINARY || vals[i].type == TM_TYPE_FIXED_BINARY)
      tm_free((void *)vals[i].v.s.ptr);
  tm_free(vals);
  return rc;
}

/* ---- cursors ------------------------------------------------------------------------------------ */

typedef struct vcursor {
  sqlite3_vtab_cursor base;
  tm_csnap *snap;           /* one reference */
  termset ts;
  tm_cfilter_term *fterms;
  uint64_t used;            /* colUsed */
  bool eof;
  size_t seg;               /* current segment */
  bool seg_open;
  int64_t next_row;         /* next row to select in the segment */
  uint8_t *deleted;         /* dense deletion bits of the current segment */
  uint32_t sel[CHUNK];
  size_t n_sel, i_sel;
  int64_t row;              /* current row */
  /* Ordered delivery of a dictionary column. */
  bool ordered, desc;
  size_t ocol;
  tm_strview *ovals;        /* distinct values, ascending (views into dictionaries) */
  size_t n_ovals;
  size_t g;                 /* current group: the NULL group and one per value, in output order */
  int64_t code;             /* code of the group's value in the current segment; -2: absent */
} vcursor;

static tm_sql_vtab *vt_of(vcursor *c) { return (tm_sql_vtab *)c->base.pVtab; }

static void cursor_reset(vcursor *c) {
  if (c->snap) tm_engine_snapshot_release(&c->snap->base);
  c->snap = NULL;
  tm_predicate_dispose(&c->ts.p);
  tm_predicate_init(&c->ts.p);
  c->ts.none = false;
  tm_free(c->fterms);
  c->fterms = NULL;
  tm_free(c->deleted);
  c->deleted = NULL;
  tm_free(c->ovals);
  c->ovals = NULL;
  c->n_ovals = 0;
  c->seg = 0;
  c->seg_open = false;
  c->n_sel = c->i_sel = 0;
  c->eof = true;
  c->ordered = false;
}

static int vt_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  (void)base;
  vcursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  tm_predicate_init(&c->ts.p);
  c->eof = true;
  *out = &c->base;
  return SQLITE_OK;
}

static int vt_close(sqlite3_vtab_cursor *base) {
  vcursor *c = (vcursor *)base;
  cursor_reset(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int set_error(vcursor *c, const tm_error *err) {
  sqlite3_vtab *vt = c->base.pVtab;
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s", err->message);
  return err->code == TM_ENOMEM ? SQLITE_NOMEM : err->code == TM_ECORRUPT ? SQLITE_CORRUPT : SQLITE_ERROR;
}

static bool col_used(const vcursor *c, size_t col) {
  return col >= 63 ? (c->used >> 63) & 1 : (c->used >> col) & 1;
}

/*
 * Groups of the ordered delivery: ascending is NULL, then each value up;
 * descending is each value down, then NULL (SQLite's NULL ordering).
 * Returns false for the NULL group, else the group's value in *out.
 */
static bool group_value(const vcursor *c, tm_strview *out) {
  size_t n = c->n_ovals;
  if (!c->desc) {
    if (c->g == 0) return false;
    *out = c->ovals[c->g - 1];
    return true;
  }
  if (c->g >= n) return false;
  *out = c->ovals[n - 1 - c->g];
  return true;
}

/* Opens the current segment: zone maps, used columns, deletions. false: skip it. */
static int open_segment(vcursor *c, bool *skip, tm_error *err) {
  tm_sql_vtab *vt = vt_of(c);
  tm_vtab_host *h = vt->host;
  const tm_csnap_seg *g = &c->snap->segs[c->seg];
  *skip = false;
  if (!tm_cfilter_may_match(g->seg, c->fterms, c->ts.p.n_terms)) {
    h->stats.segments_skipped++;
    *skip = true;
    return TM_OK;
  }
  h->stats.segments_read++;
  const char *name = tm_engine_dataset(vt->engine);
  for (size_t i = 0; i < g->seg->n_cols; i++) {
    bool need = col_used(c, i) || (c->ordered && i == c->ocol);
    for (size_t k = 0; k < c->ts.p.n_terms && !need; k++) need = c->fterms[k].col == i;
    if (!need) continue;
    TM_TRY(tm_ccol_check(&g->seg->cols[i], name, err));
    h->stats.columns_read++;
  }
  tm_free(c->deleted);
  c->deleted = NULL;
  if (g->del && g->del->card) {
    c->deleted = tm_calloc((size_t)(g->seg->n_rows + 7) / 8, 1);
    if (!c->deleted) return tm_error_nomem(err);
    tm_cdel_to_bits(g->del, c->deleted);
  }
  c->seg_open = true;
  c->next_row = 0;
  c->code = -1;
  if (c->ordered) {
    tm_strview v;
    if (group_value(c, &v)) {
      int64_t k = tm_ccol_dict_find(&g->seg->cols[c->ocol], v);
      c->code = k >= 0 ? k : -2;
    } else if (g->seg->cols[c->ocol].null_count == 0) {
      c->code = -2; /* no NULL here */
    }
  }
  return TM_OK;
}

/* Keeps the selected rows holding the current group's value (or NULL). */
static size_t keep_group(vcursor *c, const tm_ccol *col, size_t n) {
  size_t k = 0;
  tm_strview unused;
  bool nulls = !group_value(c, &unused);
  for (size_t i = 0; i < n; i++) {
    uint32_t r = c->sel[i];
    bool is_null = tm_ccol_is_null(col, r);
    if (nulls ? is_null : (!is_null && (int64_t)tm_ccol_code(col, r) == c->code)) c->sel[k++] = r;
  }
  return k;
}

/* Advances the ordered iteration to the next (group, segment) pair; false at the end. */
static bool next_group(vcursor *c) {
  c->seg_open = false;
  c->seg++;
  if (c->seg < c->snap->n_segs) return true;
  c->seg = 0;
  c->g++;
  return c->g <= c->n_ovals;
}

/* Moves to the next selected row; sets eof at the end. */
static int advance(vcursor *c) {
  tm_error err;
  tm_error_init(&err);
  tm_vtab_host *h = vt_of(c)->host;
  for (;;) {
    if (c->i_sel < c->n_sel) {
      c->row = c->sel[c->i_sel++];
      h->stats.rows_out++;
      return SQLITE_OK;
    }
    if (c->seg >= c->snap->n_segs) {
      c->eof = true;
      return SQLITE_OK;
    }
    const tm_csnap_seg *g = &c->snap->segs[c->seg];
    if (!c->seg_open) {
      bool skip;
      if (open_segment(c, &skip, &err) < 0) return set_error(c, &err);
      if (skip || c->code == -2) {
        if (c->ordered) {
          if (!next_group(c)) c->seg = c->snap->n_segs;
        } else {
          c->seg++;
        }
        continue;
      }
    }
    if (c->next_row >= g->seg->n_rows) {
      if (c->ordered) {
        if (!next_group(c)) c->seg = c->snap->n_segs;
      } else {
        c->seg++;
        c->seg_open = false;
      }
      continue;
    }
    int64_t to = c->next_row + CHUNK;
    if (to > g->seg->n_rows) to = g->seg->n_rows;
    size_t n = tm_cfilter_select(g->seg, c->deleted, c->fterms, c->ts.p.n_terms, c->next_row, to,
                                 c->sel);
    h->stats.rows_read += to - c->next_row;
    if (c->ordered) n = keep_group(c, &g->seg->cols[c->ocol], n);
    c->next_row = to;
    c->n_sel = n;
    c->i_sel = 0;
  }
}

static int cmp_views(const void *a, const void *b) {
  const tm_strview *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = n ? memcmp(x->ptr, y->ptr, n) : 0;
  if (c) return c;
  return x->len < y->len ? -1 : x->len > y->len;
}

/* The distinct values of a dictionary column over every segment, sorted. */
static int collect_values(vcursor *c, tm_error *err) {
  size_t total = 0;
  const char *name = tm_engine_dataset(vt_of(c)->engine);
  for (size_t i = 0; i < c->snap->n_segs; i++) {
    const tm_ccol *col = &c->snap->segs[i].seg->cols[c->ocol];
    if (col->enc != TM_CENC_DICT) return TM_EUNSUPPORTED;
    TM_TRY(tm_ccol_check(col, name, err));
    total += col->dict_len;
  }
  c->ovals = tm_calloc(total ? total : 1, sizeof *c->ovals);
  if (!c->ovals) return tm_error_nomem(err);
  size_t n = 0;
  for (size_t i = 0; i < c->snap->n_segs; i++) {
    const tm_ccol *col = &c->snap->segs[i].seg->cols[c->ocol];
    for (uint32_t k = 0; k < col->dict_len; k++)
      c->ovals[n++] = tm_sv((const char *)col->dict_data + col->dict_off[k],
                            (size_t)(col->dict_off[k + 1] - col->dict_off[k]));
  }
  qsort(c->ovals, n, sizeof *c->ovals, cmp_views);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || cmp_views(&c->ovals[u - 1], &c->ovals[i]) != 0) c->ovals[u++] = c->ovals[i];
  c->n_ovals = u;
  return TM_OK;
}

static int vt_filter(sqlite3_vtab_cursor *base, int idx_num, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  vcursor *c = (vcursor *)base;
  tm_sql_vtab *vt = vt_of(c);
  const tm_schema *s = tm_engine_schema(vt->engine);
  tm_error err;
  tm_error_init(&err);
  cursor_reset(c);
  tm_csnap *snap = snapshot_for(vt);
  c->snap = (tm_csnap *)tm_engine_snapshot_retain(&snap->base);
  vt->host->stats.scans++;
  vt->host->stats.segments_total += (int64_t)c->snap->n_segs;
  /* idxStr: colUsed (16 hex) '|' then "col,op,in;" per argument, then "o<col>". */
  const char *p = idx_str ? idx_str : "";
  char *end;
  c->used = strtoull(p, &end, 16);
  if (*end == '|') end++;
  p = end;
  int rc = TM_OK;
  for (int i = 0; i < argc && rc == TM_OK; i++) {
    long col = strtol(p, &end, 10);
    if (*end != ',') break;
    long op = strtol(end + 1, &end, 10);
    if (*end != ',') break;
    long in = strtol(end + 1, &end, 10);
    if (*end == ';') end++;
    p = end;
    if (col < 0 || (size_t)col >= s->n_cols) continue;
    rc = in ? convert_in(&c->ts, &s->cols[col], argv[i], &err)
            : convert(&c->ts, &s->cols[col], (int)op, argv[i], &err);
  }
  if (rc == TM_OK && (idx_num & IDX_ORDERED) && *p == 'o') {
    c->ordered = true;
    c->desc = (idx_num & IDX_DESC) != 0;
    c->ocol = (size_t)strtol(p + 1, NULL, 10);
    if (c->ocol >= s->n_cols) c->ordered = false;
  }
  if (rc < 0) return set_error(c, &err);
  size_t nt = c->ts.p.n_terms;
  c->fterms = tm_calloc(nt ? nt : 1, sizeof *c->fterms);
  if (!c->fterms) return SQLITE_NOMEM;
  for (size_t i = 0; i < nt; i++) {
    c->fterms[i].term = &c->ts.p.terms[i];
    c->fterms[i].col = (size_t)tm_schema_find(s, c->ts.p.terms[i].column);
  }
  c->eof = false;
  c->seg = 0;
  if (c->ts.none) {
    c->eof = true;
    return SQLITE_OK;
  }
  if (c->ordered) {
    rc = collect_values(c, &err);
    if (rc == TM_EUNSUPPORTED) {
      /* Planning and execution read the same pinned snapshot, so this cannot
       * happen; refuse rather than return rows out of the promised order. */
      tm_error_set(&err, TM_ERROR, "dataset '%s': ordered scan planned on another snapshot",
                   tm_engine_dataset(vt->engine));
      return set_error(c, &err);
    } else if (rc < 0) {
      return set_error(c, &err);
    } else {
      c->g = 0;
    }
  }
  return advance(c);
}

static int vt_next(sqlite3_vtab_cursor *base) { return advance((vcursor *)base); }

static int vt_eof(sqlite3_vtab_cursor *base) { return ((vcursor *)base)->eof; }

static int vt_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int i) {
  vcursor *c = (vcursor *)base;
  const tm_cseg *seg = c->snap->segs[c->seg].seg;
  if (i < 0 || (size_t)i >= seg->n_cols) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const tm_ccol *col = &seg->cols[i];
  if (__atomic_load_n(&col->checked, __ATOMIC_ACQUIRE) != 1) {
    tm_error err;
    tm_error_init(&err);
    if (tm_ccol_check(col, tm_engine_dataset(vt_of(c)->engine), &err) < 0) {
      sqlite3_result_error(ctx, err.message, -1);
      return SQLITE_ERROR;
    }
  }
  int64_t r = c->row;
  if (tm_ccol_is_null(col, r)) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  /* Fast paths for the common faces; the rest through tm_sqlval. */
  switch (col->type.id) {
    case TM_TYPE_INT64: sqlite3_result_int64(ctx, ((const int64_t *)col->values)[r]); return SQLITE_OK;
    case TM_TYPE_INT32: sqlite3_result_int64(ctx, ((const int32_t *)col->values)[r]); return SQLITE_OK;
    case TM_TYPE_FLOAT64: sqlite3_result_double(ctx, ((const double *)col->values)[r]); return SQLITE_OK;
    case TM_TYPE_UTF8: {
      tm_strview v = tm_ccol_bytes(col, r);
      sqlite3_result_text64(ctx, v.len ? v.ptr : "", v.len, SQLITE_STATIC, SQLITE_UTF8);
      return SQLITE_OK;
    }
    default: break;
  }
  tm_value v;
  tm_ccol_get(col, r, &v);
  tm_sqlval sv;
  tm_sqlval_from(&sv, &col->type, &v);
  tm_sqlval_result(ctx, &sv, true); /* the snapshot stays pinned until the statement ends */
  return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *out) {
  vcursor *c = (vcursor *)base;
  *out = ((sqlite3_int64)c->seg << 32) | (sqlite3_int64)c->row;
  return SQLITE_OK;
}

static const sqlite3_module k_module = {
    0,                /* iVersion */
    vt_connect,       /* xCreate */
    vt_connect,       /* xConnect */
    vt_best_index,
    vt_disconnect,    /* xDisconnect */
    vt_disconnect,    /* xDestroy */
    vt_open,
    vt_close,
    vt_filter,
    vt_next,
    vt_eof,
    vt_column,
    vt_rowid,
    NULL, /* xUpdate: read-only */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

int tm_sql__vtab_register(sqlite3 *db, tm_vtab_host *host, tm_error *err) {
  if (sqlite3_create_module_v2(db, "tidemark", &k_module, host, NULL) != SQLITE_OK)
    return tm_error_set(err, TM_ERROR, "cannot register the tidemark module: %s", sqlite3_errmsg(db));
  return TM_OK;
}

/* ---- conditions inside a transaction ------------------------------------------------------- */

static int quote_into(tm_buf *b, const char *name, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (const char *p = name; *p; p++) {
    if (*p == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, *p, err));
  }
  return tm_buf_putc(b, '"', err);
}

int tm_cvtab_where_rowids(tm_csnap *s, const char *where_sql, tm_vec *rowids, tm_error *err) {
  tm_engine *e = s->base.engine;
  const char *name = tm_engine_dataset(e);
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  tm_vtab_host host;
  memset(&host, 0, sizeof host);
  host.fixed = s;
  tm_buf sql = TM_BUF_INIT(1 << 24);
  char denied[TM_SQL_DENIED_MAX] = "";
  int rc = TM_OK;
  tm_engine__sqlite_setup();
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    rc = tm_error_nomem(err);
    goto done;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  TM_CHECK(tm_sql__vtab_register(db, &host, err));
  TM_CHECK(tm_buf_puts(&sql, "CREATE VIRTUAL TABLE main.", err));
  TM_CHECK(quote_into(&sql, name, err));
  TM_CHECK(tm_buf_puts(&sql, " USING tidemark", err));
  host.creating = e;
  if (sqlite3_exec(db, sql.ptr, NULL, NULL, NULL) != SQLITE_OK) {
    rc = tm_error_set(err, TM_EINVALID, "dataset '%s': %s", name, sqlite3_errmsg(db));
    goto done;
  }
  host.creating = NULL;
  tm_buf_clear(&sql);
  TM_CHECK(tm_buf_puts(&sql, "SELECT rowid FROM main.", err));
  TM_CHECK(quote_into(&sql, name, err));
  TM_CHECK(tm_buf_printf(&sql, err, " WHERE (%s\n)", where_sql));
  const char *tail = NULL;
  sqlite3_set_authorizer(db, tm_sql__authorizer, denied);
  int src = sqlite3_prepare_v2(db, sql.ptr, -1, &st, &tail);
  sqlite3_set_authorizer(db, NULL, NULL);
  if (src != SQLITE_OK) {
    rc = tm_error_set(err, TM_EINVALID, "dataset '%s': retention condition: %s%s%s", name,
                      sqlite3_errmsg(db), denied[0] ? ": " : "", denied);
    goto done;
  }
  if (!tm_sql__only_blank(tail)) {
    rc = tm_error_set(err, TM_EINVALID,
                      "dataset '%s': retention condition holds more than one statement", name);
    goto done;
  }
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    TM_CHECK(tm_vec_push(rowids, &id, err));
  }
  if (src != SQLITE_DONE)
    rc = tm_error_set(err, TM_EINVALID, "dataset '%s': retention condition: %s", name,
                      sqlite3_errmsg(db));
done:
  sqlite3_finalize(st);
  if (db) sqlite3_close(db);
  tm_buf_dispose(&sql);
  return rc;
}
