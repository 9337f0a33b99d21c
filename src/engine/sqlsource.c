/*
 * sqlsource.c - refresh_sql over a source through a SQLite virtual table
 * (engine layer). See sqlsource.h.
 *
 * The virtual table `tm_source` reads a tm_scan. xBestIndex encodes the
 * usable constraints and the used columns in idxStr:
 *   "<colUsed as hex>;<col>:<op>:<argv>,<col>:<op>:<argv>,..."
 * with op one of = < <= > >= N (IS NULL) n (IS NOT NULL) and argv the
 * 1-based argument index (0 for unary ops). xFilter turns them into
 * predicate terms for the source; constraints are never omitted, so SQLite
 * re-checks every row and a term that cannot be typed is simply not pushed.
 */
#include "engine/sqlsource.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"

/* What a virtual table reads: a source, the request its scans start from,
 * and what they report back. */
typedef struct src_ctx {
  tm_source *src;             /* borrowed (refresh_sql) or owned by the vt (federated) */
  const tm_scan_request *req; /* the running scan's base request, or NULL */
  tm_scan_stats acc;          /* inner scan statistics, summed */
  tm_error inner;             /* the first tm error raised inside the virtual table */
  bool has_inner;
} src_ctx;

struct tm_sqlsource {
  sqlite3 *db;
  sqlite3_stmt *stmt;
  src_ctx ctx;
  char *name;                 /* owned: the table name */
  tm_schema out;              /* owned: the result schema */
  bool *typed;                /* per result column: a source column's type (vs computed) */
  bool scanning;
};

/* ---- the virtual table ---------------------------------------------------- */

typedef struct vt {
  sqlite3_vtab base;
  src_ctx *ctx;          /* the owner's (refresh_sql) or own_ctx (federated) */
  src_ctx own_ctx;
  tm_source *owned_src;  /* federated: the table's own source */
  tm_scan_request fed_req; /* federated: scans apply deletes (C6, B12) */
} vt;

typedef struct fed_host {
  tm_sqlsource_lookup_fn lookup;
  void *payload;
} fed_host;

typedef struct cur {
  sqlite3_vtab_cursor base;
  src_ctx *owner;
  tm_scan *scan;
  tm_batch batch;
  int64_t row;
  int64_t rowid;
  bool eof;
  int *col_map;        /* table column -> batch column, or -1 */
  tm_predicate pred;
  const char **names;  /* projection (views into the source schema) */
} cur;

static int vt_error(sqlite3_vtab *v, src_ctx *owner, const tm_error *err) {
  sqlite3_free(v->zErrMsg);
  v->zErrMsg = sqlite3_mprintf("%s", err->message);
  if (!owner->has_inner) {
    owner->inner = *err;
    owner->has_inner = true;
  }
  return err->code == TM_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
}

/* Declares the table's columns: the source schema in SQL types. */
static int declare(sqlite3 *db, const tm_schema *s, char **errmsg) {
  tm_buf ddl = TM_BUF_INIT((size_t)1 << 24);
  tm_error err;
  int rc = tm_buf_puts(&ddl, "CREATE TABLE x(", &err);
  for (size_t i = 0; i < s->n_cols && rc == TM_OK; i++) {
    char decl[64];
    tm_sqltype_decl(&s->cols[i].type, decl, sizeof decl);
    rc = tm_buf_puts(&ddl, i ? ", \"" : "\"", &err);
    for (const char *p = s->cols[i].name; *p && rc == TM_OK; p++)
      rc = *p == '"' ? tm_buf_puts(&ddl, "\"\"", &err) : tm_buf_putc(&ddl, *p, &err);
    if (rc == TM_OK) rc = tm_buf_printf(&ddl, &err, "\" %s", decl);
  }
  if (rc == TM_OK) rc = tm_buf_putc(&ddl, ')', &err);
  if (rc != TM_OK) {
    tm_buf_dispose(&ddl);
    return SQLITE_NOMEM;
  }
  int src = sqlite3_declare_vtab(db, tm_buf_cstr(&ddl));
  tm_buf_dispose(&ddl);
  if (src != SQLITE_OK)
    *errmsg = sqlite3_mprintf("cannot declare the source table: %s", sqlite3_errmsg(db));
  return src;
}

/* refresh_sql: the table reads the owner's source. */
static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  (void)argc;
  (void)argv;
  tm_sqlsource *owner = aux;
  int src = declare(db, tm_source_schema(owner->ctx.src), errmsg);
  if (src != SQLITE_OK) return src;
  vt *v = sqlite3_malloc(sizeof *v);
  if (!v) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  v->ctx = &owner->ctx;
  *out = &v->base;
  return SQLITE_OK;
}

/* Federated (C6): the table opens and describes its own source, named by the table. */
static int vt_connect_federated(sqlite3 *db, void *aux, int argc, const char *const *argv,
                                sqlite3_vtab **out, char **errmsg) {
  fed_host *host = aux;
  const char *name = argc > 2 ? argv[2] : "";
  tm_source_options o;
  tm_error err;
  tm_error_init(&err);
  if (host->lookup(host->payload, name, &o) != TM_OK) {
    *errmsg = sqlite3_mprintf("no federated dataset named '%s'", name);
    return SQLITE_ERROR;
  }
  tm_source *src = NULL;
  int rc = tm_source_open(&src, &o, &err);
  if (rc == TM_OK) rc = tm_source_describe(src, &err);
  if (rc != TM_OK) {
    *errmsg = sqlite3_mprintf("dataset '%s': %s", name, err.message);
    tm_source_free(src);
    return SQLITE_ERROR;
  }
  int s = declare(db, tm_source_schema(src), errmsg);
  vt *v = s == SQLITE_OK ? sqlite3_malloc(sizeof *v) : NULL;
  if (!v) {
    tm_source_free(src);
    return s == SQLITE_OK ? SQLITE_NOMEM : s;
  }
  memset(v, 0, sizeof *v);
  v->owned_src = src;
  v->own_ctx.src = src;
  tm_scan_request_init(&v->fed_req);
  v->fed_req.apply_deletes = true;
  v->own_ctx.req = &v->fed_req;
  v->ctx = &v->own_ctx;
  *out = &v->base;
  return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *base) {
  vt *v = (vt *)base;
  tm_source_free(v->owned_src);
  sqlite3_free(v);
  return SQLITE_OK;
}

static char op_char(unsigned char op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return '=';
    case SQLITE_INDEX_CONSTRAINT_LT: return 'l';
    case SQLITE_INDEX_CONSTRAINT_LE: return 'L';
    case SQLITE_INDEX_CONSTRAINT_GT: return 'g';
    case SQLITE_INDEX_CONSTRAINT_GE: return 'G';
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return 'N';
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return 'n';
    default: return 0;
  }
}

static int vt_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
  (void)v;
  char *s = sqlite3_mprintf("%llx;", (unsigned long long)info->colUsed);
  int argv = 0;
  for (int i = 0; i < info->nConstraint && s; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    char op = c->usable ? op_char(c->op) : 0;
    if (!op || c->iColumn < 0) continue;
    int arg = 0;
    if (op != 'N' && op != 'n') {
      arg = ++argv;
      info->aConstraintUsage[i].argvIndex = arg;
    }
    info->aConstraintUsage[i].omit = 0;
    char *next = sqlite3_mprintf("%s%d:%c:%d,", s, c->iColumn, op, arg);
    sqlite3_free(s);
    s = next;
  }
  if (!s) return SQLITE_NOMEM;
  info->idxStr = s;
  info->needToFreeIdxStr = 1;
  info->estimatedCost = 1e6 / (1.0 + argv);
  return SQLITE_OK;
}

static int vt_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
  cur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->owner = ((vt *)v)->ctx;
  tm_batch_init(&c->batch);
  tm_predicate_init(&c->pred);
  c->eof = true;
  *out = &c->base;
  return SQLITE_OK;
}

static void cur_reset(cur *c) {
  if (c->scan) {
    const tm_scan_stats *st = tm_scan_get_stats(c->scan);
    tm_scan_stats *acc = &c->owner->acc;
    acc->files_total += st->files_total;
    acc->files_read += st->files_read;
    acc->files_skipped += st->files_skipped;
    acc->row_groups_read += st->row_groups_read;
    acc->row_groups_skipped += st->row_groups_skipped;
    acc->rows_read += st->rows_read;
    acc->rows_returned += st->rows_returned;
    acc->bytes_read += st->bytes_read;
  }
  tm_scan_free(c->scan);
  c->scan = NULL;
  tm_batch_release(&c->batch);
  tm_predicate_dispose(&c->pred);
  tm_predicate_init(&c->pred);
  tm_free(c->col_map);
  tm_free(c->names);
  c->col_map = NULL;
  c->names = NULL;
  c->eof = true;
}

static int vt_close(sqlite3_vtab_cursor *base) {
  cur *c = (cur *)base;
  cur_reset(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Fetches the next non-empty batch; eof at the end. */
static int fetch(cur *c, tm_error *err) {
  tm_batch_release(&c->batch);
  c->row = 0;
  int rc = tm_scan_next(c->scan, &c->batch, err);
  if (rc == TM_ITEROVER) {
    c->eof = true;
    return TM_OK;
  }
  return rc;
}

static int vt_filter(sqlite3_vtab_cursor *base, int idx_num, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  (void)idx_num;
  cur *c = (cur *)base;
  src_ctx *o = c->owner;
  cur_reset(c);
  tm_error err;
  tm_error_init(&err);
  int rc = TM_OK;
  vt *v = (vt *)base->pVtab;
  if (v->owned_src) {
    /* Federated: every query reads the source as it is now (a fresh listing,
     * the current Iceberg snapshot); the columns must not have changed. */
    tm_schema before;
    tm_schema_init(&before);
    rc = tm_schema_copy(&before, tm_source_schema(o->src), &err);
    if (rc == TM_OK) rc = tm_source_describe(o->src, &err);
    if (rc == TM_OK && !tm_schema_equal(&before, tm_source_schema(o->src)))
      rc = tm_error_set(&err, TM_ECONFLICT, "the source's columns changed; run the query again");
    tm_schema_dispose(&before);
    if (rc != TM_OK) return vt_error(base->pVtab, o, &err);
  }
  const tm_schema *s = tm_source_schema(o->src);
  /* Used columns. */
  unsigned long long used = 0;
  const char *p = idx_str;
  while (*p && *p != ';') {
    char ch = *p++;
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) break;
    used = used * 16 + (unsigned long long)d;
  }
  if (*p == ';') p++;
  c->col_map = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *c->col_map);
  c->names = tm_calloc(s->n_cols ? s->n_cols : 1, sizeof *c->names);
  if (!c->col_map || !c->names) rc = tm_error_nomem(&err);
  size_t n_names = 0;
  for (size_t i = 0; i < s->n_cols && rc == TM_OK; i++) {
    bool u = i < 63 ? (used >> i) & 1 : (used >> 63) & 1;
    c->col_map[i] = u ? (int)n_names : -1;
    if (u) c->names[n_names++] = s->cols[i].name;
  }
  /* Pushed-down constraints, after the request's own predicate. */
  const tm_scan_request *req = o->req;
  if (rc == TM_OK && req && req->predicate) rc = tm_predicate_copy(&c->pred, req->predicate, &err);
  while (rc == TM_OK && *p) {
    int col = 0, arg = 0;
    while (*p >= '0' && *p <= '9') col = col * 10 + (*p++ - '0');
    if (*p++ != ':') break;
    char op = *p++;
    if (*p++ != ':') break;
    while (*p >= '0' && *p <= '9') arg = arg * 10 + (*p++ - '0');
    if (*p == ',') p++;
    if (col < 0 || (size_t)col >= s->n_cols) continue;
    const tm_column *column = &s->cols[col];
    if (op == 'N' || op == 'n') {
      rc = tm_predicate_add_null(&c->pred, column->name, column->type, op == 'N', &err);
      continue;
    }
    if (arg < 1 || arg > argc) continue;
    tm_value val;
    char *owned = NULL;
    tm_error conv;
    if (tm_sqltype_to_value(&column->type, argv[arg - 1], &val, &owned, &conv) != TM_OK || val.is_null) {
      tm_free(owned);
      continue; /* not typable as the column: SQLite checks it alone */
    }
    tm_pred_op pop = op == '=' ? TM_PRED_EQ : op == 'l' ? TM_PRED_LT : op == 'L' ? TM_PRED_LE
                     : op == 'g' ? TM_PRED_GT : TM_PRED_GE;
    rc = tm_predicate_add(&c->pred, column->name, column->type, pop, &val, &err);
    tm_free(owned);
  }
  if (rc == TM_OK) {
    tm_scan_request r;
    if (req) r = *req;
    else tm_scan_request_init(&r);
    r.columns = c->names;
    r.n_columns = n_names;
    r.predicate = c->pred.n_terms ? &c->pred : NULL;
    rc = tm_source_scan(o->src, &r, &c->scan, &err);
  }
  if (rc == TM_OK) {
    c->eof = false;
    c->rowid = 0;
    rc = fetch(c, &err);
  }
  if (rc != TM_OK) {
    cur_reset(c);
    return vt_error(base->pVtab, o, &err);
  }
  return SQLITE_OK;
}

static int vt_next(sqlite3_vtab_cursor *base) {
  cur *c = (cur *)base;
  c->rowid++;
  if (++c->row < c->batch.n_rows) return SQLITE_OK;
  tm_error err;
  tm_error_init(&err);
  if (fetch(c, &err) != TM_OK) return vt_error(base->pVtab, c->owner, &err);
  return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *base) { return ((cur *)base)->eof; }

static int vt_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int i) {
  cur *c = (cur *)base;
  int bc = c->col_map ? c->col_map[i] : -1;
  if (bc < 0 || c->eof) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  tm_colview col = tm_batch_col(&c->batch, (size_t)bc);
  tm_value v;
  tm_colview_get(&col, c->row, &v);
  tm_sqlval sv;
  tm_sqlval_from(&sv, &col.type, &v);
  /* The batch is released when the scan moves on, before the statement ends. */
  tm_sqlval_result(ctx, &sv, false);
  return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *out) {
  *out = ((cur *)base)->rowid;
  return SQLITE_OK;
}

static const sqlite3_module k_module = {
    .iVersion = 1,
    .xCreate = vt_connect,
    .xConnect = vt_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

static const sqlite3_module k_federated_module = {
    .iVersion = 1,
    .xCreate = vt_connect_federated,
    .xConnect = vt_connect_federated,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

int tm_sqlsource_register_federated(sqlite3 *db, tm_sqlsource_lookup_fn lookup, void *payload,
                                    tm_error *err) {
  fed_host *h = tm_calloc(1, sizeof *h);
  if (!h) return tm_error_nomem(err);
  h->lookup = lookup;
  h->payload = payload;
  if (sqlite3_create_module_v2(db, "tm_source", &k_federated_module, h, tm_free) != SQLITE_OK)
    return tm_error_set(err, TM_ERROR, "cannot register the federated table module: %s",
                        sqlite3_errmsg(db));
  return TM_OK;
}

/* refresh_sql may only read. */
static int authorize(void *payload, int action, const char *a, const char *b, const char *c,
                     const char *d) {
  (void)payload;
  (void)b;
  (void)c;
  (void)d;
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ: return SQLITE_OK;
    case SQLITE_FUNCTION:
      return a && (!strcmp(a, "load_extension") || !strcmp(a, "fts3_tokenizer")) ? SQLITE_DENY
                                                                                  : SQLITE_OK;
    default: return SQLITE_DENY;
  }
}

/* ---- the statement's scan --------------------------------------------------- */

typedef struct sql_scan {
  tm_scan base;
  tm_sqlsource *s;
  tm_batch_builder bb;
  int64_t batch_rows;
  bool done;
} sql_scan;

static int append_cell(tm_sqlsource *s, tm_colbuilder *cb, size_t i, tm_error *err) {
  sqlite3_value *v = sqlite3_column_value(s->stmt, (int)i);
  if (s->typed[i]) return tm_sqltype_append(cb, &cb->type, v, err);
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return tm_colbuilder_append_null(cb, err);
  switch (cb->type.id) {
    case TM_TYPE_INT64:
      if (t == SQLITE_INTEGER) return tm_colbuilder_append_int(cb, sqlite3_value_int64(v), err);
      break;
    case TM_TYPE_FLOAT64:
      if (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
        return tm_colbuilder_append_double(cb, sqlite3_value_double(v), err);
      break;
    case TM_TYPE_UTF8:
      if (t == SQLITE_TEXT)
        return tm_colbuilder_append_bytes(cb, sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), err);
      break;
    case TM_TYPE_BINARY:
      if (t == SQLITE_BLOB)
        return tm_colbuilder_append_bytes(cb, sqlite3_value_blob(v), (size_t)sqlite3_value_bytes(v), err);
      break;
    default: break;
  }
  return tm_error_set(err, TM_EINVALID, "refresh_sql column '%s' changes type between rows",
                      s->out.cols[i].name);
}

static int step_error(tm_sqlsource *s, int src, tm_error *err) {
  if (s->ctx.has_inner) return tm_error_copy(err, &s->ctx.inner);
  return tm_error_set(err, src == SQLITE_NOMEM ? TM_ENOMEM : TM_EINVALID, "refresh_sql: %s",
                      sqlite3_errmsg(s->db));
}

static int sql_scan_next(tm_scan *base, tm_batch *out, tm_error *err) {
  sql_scan *sc = (sql_scan *)base;
  tm_sqlsource *s = sc->s;
  tm_batch_init(out);
  while (!sc->done && tm_batch_builder_rows(&sc->bb) < sc->batch_rows) {
    int src = sqlite3_step(s->stmt);
    if (src == SQLITE_DONE) {
      sc->done = true;
      break;
    }
    if (src != SQLITE_ROW) return step_error(s, src, err);
    for (size_t i = 0; i < s->out.n_cols; i++)
      TM_TRY(append_cell(s, tm_batch_builder_col(&sc->bb, i), i, err));
  }
  base->stats = s->ctx.acc;
  if (tm_batch_builder_rows(&sc->bb) == 0) return TM_ITEROVER;
  base->stats.rows_returned += tm_batch_builder_rows(&sc->bb);
  return tm_batch_builder_finish(&sc->bb, out, err);
}

static void sql_scan_free(tm_scan *base) {
  sql_scan *sc = (sql_scan *)base;
  sqlite3_reset(sc->s->stmt);
  sc->s->ctx.req = NULL;
  sc->s->scanning = false;
  tm_batch_builder_dispose(&sc->bb);
  tm_free(sc);
}

static const tm_scan_vtable k_scan_vt = {sql_scan_next, sql_scan_free};

int tm_sqlsource_scan(tm_sqlsource *s, const tm_scan_request *req, tm_scan **out,
                      tm_error *err) {
  if (s->scanning) return tm_error_set(err, TM_ECONFLICT, "refresh_sql is already running");
  sql_scan *sc = tm_calloc(1, sizeof *sc);
  if (!sc) return tm_error_nomem(err);
  sc->base.vt = &k_scan_vt;
  sc->s = s;
  sc->batch_rows = req && req->batch_rows > 0 ? req->batch_rows : TM_BATCH_DEFAULT_ROWS;
  int rc = tm_batch_builder_init(&sc->bb, &s->out, err);
  if (rc < 0) {
    tm_free(sc);
    return rc;
  }
  sqlite3_reset(s->stmt);
  memset(&s->ctx.acc, 0, sizeof s->ctx.acc);
  s->ctx.has_inner = false;
  s->ctx.req = req;
  s->scanning = true;
  *out = &sc->base;
  return TM_OK;
}

/* ---- setup ------------------------------------------------------------------- */

/* Types of computed result columns: the first row's storage classes. */
static int type_computed(tm_sqlsource *s, tm_error *err) {
  bool any = false;
  for (size_t i = 0; i < s->out.n_cols; i++) any |= !s->typed[i];
  if (!any) return TM_OK;
  s->ctx.req = NULL;
  int src = sqlite3_step(s->stmt);
  if (src != SQLITE_ROW && src != SQLITE_DONE) {
    int rc = step_error(s, src, err);
    sqlite3_reset(s->stmt);
    return rc;
  }
  for (size_t i = 0; i < s->out.n_cols; i++) {
    if (s->typed[i]) continue;
    int t = src == SQLITE_ROW ? sqlite3_column_type(s->stmt, (int)i) : SQLITE_NULL;
    tm_type_id id = t == SQLITE_INTEGER ? TM_TYPE_INT64 : t == SQLITE_FLOAT ? TM_TYPE_FLOAT64
                    : t == SQLITE_BLOB ? TM_TYPE_BINARY : TM_TYPE_UTF8;
    s->out.cols[i].type = tm_type_of(id);
  }
  sqlite3_reset(s->stmt);
  return TM_OK;
}

int tm_sqlsource_new(tm_sqlsource **out, tm_source *src, const char *name, const char *sql,
                     tm_error *err) {
  tm_sqlsource *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->ctx.src = src;
  tm_schema_init(&s->out);
  s->name = tm_strdup(name);
  int rc = s->name ? TM_OK : tm_error_nomem(err);
  tm_engine__sqlite_setup();
  if (rc == TM_OK &&
      sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
    rc = tm_error_set(err, TM_ENOMEM, "cannot open an in-memory SQLite database");
  if (rc == TM_OK && sqlite3_create_module(s->db, "tm_source", &k_module, s) != SQLITE_OK)
    rc = tm_error_set(err, TM_ERROR, "refresh_sql: %s", sqlite3_errmsg(s->db));
  if (rc == TM_OK) {
    char *ddl = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.\"%w\" USING tm_source", name);
    if (!ddl) rc = tm_error_nomem(err);
    else if (sqlite3_exec(s->db, ddl, NULL, NULL, NULL) != SQLITE_OK)
      rc = tm_error_set(err, TM_EINVALID, "refresh_sql: %s", sqlite3_errmsg(s->db));
    sqlite3_free(ddl);
  }
  if (rc == TM_OK) sqlite3_set_authorizer(s->db, authorize, NULL);
  const char *tail = NULL;
  if (rc == TM_OK && sqlite3_prepare_v2(s->db, sql, -1, &s->stmt, &tail) != SQLITE_OK)
    rc = tm_error_set(err, TM_EINVALID, "refresh_sql: %s", sqlite3_errmsg(s->db));
  if (rc == TM_OK && !s->stmt) rc = tm_error_set(err, TM_EINVALID, "refresh_sql is empty");
  if (rc == TM_OK) {
    while (tail && (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';')) tail++;
    if (tail && *tail) rc = tm_error_set(err, TM_EINVALID, "refresh_sql must be one statement");
  }
  if (rc == TM_OK && !sqlite3_stmt_readonly(s->stmt))
    rc = tm_error_set(err, TM_EINVALID, "refresh_sql must be a SELECT");
  /* The result schema. */
  int n = rc == TM_OK ? sqlite3_column_count(s->stmt) : 0;
  if (rc == TM_OK && n == 0) rc = tm_error_set(err, TM_EINVALID, "refresh_sql returns no columns");
  if (rc == TM_OK) {
    s->typed = tm_calloc((size_t)n, sizeof *s->typed);
    if (!s->typed) rc = tm_error_nomem(err);
  }
  const tm_schema *ss = tm_source_schema(src);
  for (int i = 0; i < n && rc == TM_OK; i++) {
    const char *cname = sqlite3_column_name(s->stmt, i);
    const char *origin = sqlite3_column_origin_name(s->stmt, i);
    const char *table = sqlite3_column_table_name(s->stmt, i);
    int idx = origin && table && strcmp(table, name) == 0 ? tm_schema_find(ss, origin) : -1;
    if (!cname) cname = "?";
    if (tm_schema_find(&s->out, cname) >= 0) {
      rc = tm_error_set(err, TM_EINVALID, "refresh_sql returns column '%s' twice", cname);
      break;
    }
    tm_type t = idx >= 0 ? ss->cols[idx].type : tm_type_of(TM_TYPE_UTF8);
    s->typed[i] = idx >= 0;
    rc = tm_schema_add(&s->out, cname, t, true, idx >= 0 ? ss->cols[idx].field_id : -1, err);
  }
  if (rc == TM_OK) rc = type_computed(s, err);
  if (rc < 0) {
    tm_sqlsource_free(s);
    return rc;
  }
  *out = s;
  return TM_OK;
}

void tm_sqlsource_free(tm_sqlsource *s) {
  if (!s) return;
  sqlite3_finalize(s->stmt);
  sqlite3_close(s->db);
  tm_schema_dispose(&s->out);
  tm_free(s->typed);
  tm_free(s->name);
  tm_free(s);
}

const tm_schema *tm_sqlsource_schema(const tm_sqlsource *s) { return &s->out; }
