/*
 * txn.c - write transactions of the DuckDB-storage engines (engine layer).
 * See duck_int.h.
 *
 * A transaction is one DuckDB transaction on the engine's writer
 * connection: the rows, the deletes and the state map commit together, and
 * DuckDB's write-ahead log makes the commit durable when it returns (D1).
 *
 * Unkeyed rows go straight into their table through a feed (engine_int.h:
 * one INSERT over an Arrow stream, stored on DuckDB's threads). A full
 * refresh (A11) and a replacement (B9) fill a new table and swap it in at
 * commit (DROP, RENAME), so readers see the old rows until then.
 *
 * Keyed rows (A8) are staged in a temporary table with their arrival number
 * and resolved at commit, in SQL, against the stored row of each key (at most
 * one per key; rows with a NULL key column are never merged). The outcome is
 * the one of applying the rows one at a time in arrival order:
 *
 *   newest by time (cayenne)  a row replaces the key's row unless its time is
 *                             older (NULL is oldest; equal: the later arrival
 *                             wins); an identical row changes nothing
 *   arrival, upsert           every row replaces the previous one
 *   arrival, drop             the first row stays (the stored one, if any)
 *
 * and so are the superseded counts (SPEC 1.4): each row but a key's first
 * loses once, as `unchanged` when it equals the winner it meets, else
 * `older` / `equal_time` (by time) or `arrival`. The running winner a row
 * meets is, by time, the last arrival among the rows before it with the
 * greatest time (window functions over the arrival order); by arrival, the
 * previous row (upsert) or the first (drop). A stored row that equals the
 * final winner is kept, not rewritten.
 */
#include <stdio.h>
#include <string.h>

#include "engine/duckdb/duck_int.h"
#include "util/alloc.h"
#include "util/time.h"

typedef struct duck_txn {
  tm_engine_txn base;
  tm_duck_feed *feed;      /* owned: the rows on their way into the target (unkeyed) or
                              the stage (keyed); NULL between writes and statements */
  tm_schema feed_types;    /* owned: the feed's columns (keyed: and _tm_arrival) */
  const char *target;      /* TM_DUCK_ROWS, or TM_DUCK_NEW for a replacement */
  bool replace;
  bool keyed;
  int64_t seq;             /* arrival numbers handed out */
  int64_t fed;             /* rows given to the current feed */
  int64_t appended;
  int64_t deleted;
  /*
   * The min and max of the time column over the rows written, when it holds
   * integers (timestamps, dates, integer times): the commit's new bounds
   * without a scan (hints, duck_int.h). tb_ok false: another type.
   */
  bool tb_ok, tb_any;
  int64_t tb_min, tb_max;
} duck_txn;

static tm_duck_engine *eng(duck_txn *t) { return tm_duck_of(t->base.engine); }

static int exec_buf(duck_txn *t, tm_buf *b, int64_t *changed, tm_error *err) {
  duckdb_result r;
  int rc = TM_OK;
  if (duckdb_query(eng(t)->writer, tm_buf_cstr(b), &r) == DuckDBError)
    rc = tm_db__result_error(err, &r, t->base.engine->cfg.dataset);
  else if (changed)
    *changed = (int64_t)duckdb_rows_changed(&r);
  duckdb_destroy_result(&r);
  tm_buf_clear(b);
  return rc;
}

static void txn_free(duck_txn *t, bool rollback) {
  if (t->feed) tm_duck_feed_cancel(t->feed);
  tm_schema_dispose(&t->feed_types);
  if (rollback) {
    tm_db__exec_quiet(eng(t)->writer, "ROLLBACK");
  }
  tm_engine__writer_release(t->base.engine);
  tm_free(t);
}

int tm_duck__begin(tm_engine *base, tm_txn_kind kind, tm_engine_txn **out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  TM_TRY(tm_engine__writer_acquire(base, err));
  duck_txn *t = tm_calloc(1, sizeof *t);
  if (!t) {
    tm_engine__writer_release(base);
    return tm_error_nomem(err);
  }
  t->base.engine = base;
  t->base.kind = kind;
  t->replace = kind == TM_TXN_REPLACE_ALL || e->pending;
  t->target = t->replace ? TM_DUCK_NEW : TM_DUCK_ROWS;
  t->keyed = base->cfg.n_pk > 0;
  if (base->cfg.time_col >= 0) {
    tm_type_id id = base->schema.cols[base->cfg.time_col].type.id;
    t->tb_ok = id == TM_TYPE_TIMESTAMP || id == TM_TYPE_DATE32 || id == TM_TYPE_INT64 ||
               id == TM_TYPE_INT32 || id == TM_TYPE_INT16 || id == TM_TYPE_INT8;
  }
  tm_buf sql = TM_BUF_INIT(64 << 20);
  int rc = tm_db__exec(e->writer, "BEGIN TRANSACTION", base->cfg.dataset, err);
  bool began = rc == TM_OK;
  if (rc == TM_OK && t->replace) {
    rc = tm_buf_puts(&sql, "DROP TABLE IF EXISTS ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_NEW, err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
    if (rc == TM_OK) rc = tm_duck__create_rows(&sql, e, TM_DUCK_NEW, err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }
  if (rc == TM_OK && t->keyed) {
    /* The stage: the rows and their arrival number, in the connection's temp catalog. */
    rc = tm_buf_puts(&sql, "CREATE OR REPLACE TEMP TABLE _tm_stage AS SELECT *, 0::BIGINT AS _tm_arrival FROM ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " LIMIT 0", err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }
  if (rc == TM_OK) rc = tm_schema_copy(&t->feed_types, &base->schema, err);
  if (rc == TM_OK && t->keyed)
    rc = tm_schema_add(&t->feed_types, "_tm_arrival", tm_type_of(TM_TYPE_INT64), false, -1, err);
  tm_buf_dispose(&sql);
  if (rc < 0) {
    txn_free(t, began);
    return rc;
  }
  *out = &t->base;
  return TM_OK;
}

/* A copy of b's rows for the feed; keyed, with their arrival numbers (_tm_arrival) after them. */
static int feed_copy(duck_txn *t, const tm_batch *b, tm_batch *out, tm_error *err) {
  size_t n = b->schema.n_cols;
  size_t *idx = tm_calloc(n ? n : 1, sizeof *idx);
  if (!idx) return tm_error_nomem(err);
  for (size_t i = 0; i < n; i++) idx[i] = i;
  tm_batch copy;
  tm_batch_init(&copy);
  int rc = tm_batch_project(b, idx, n, &copy, err);
  tm_free(idx);
  if (rc < 0 || !t->keyed) {
    if (rc == TM_OK) tm_batch_move(out, &copy);
    return rc;
  }
  struct ArrowArray *cols = tm_calloc(n + 1, sizeof *cols);
  if (!cols) rc = tm_error_nomem(err);
  size_t taken = 0;
  for (; rc == TM_OK && taken < n; taken++) rc = tm_batch_take_column(&copy, taken, &cols[taken], err);
  tm_colbuilder seq;
  tm_colbuilder_init(&seq, tm_type_of(TM_TYPE_INT64), 0);
  if (rc == TM_OK) rc = tm_colbuilder_reserve(&seq, b->n_rows, 0, err);
  for (int64_t i = 0; rc == TM_OK && i < b->n_rows; i++) rc = tm_colbuilder_append_int(&seq, ++t->seq, err);
  if (rc == TM_OK) rc = tm_colbuilder_finish(&seq, &cols[n], err);
  tm_colbuilder_dispose(&seq);
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, &t->feed_types, cols, b->n_rows, err);
    taken = 0; /* the batch owns them, or released them */
  }
  for (size_t i = 0; cols && i < taken; i++)
    if (cols[i].release) cols[i].release(&cols[i]);
  tm_free(cols);
  tm_batch_release(&copy);
  return rc;
}

/* Folds column time_col of b into the transaction's bounds. */
static void track_bounds(duck_txn *t, const tm_batch *b) {
  int tc = t->base.engine->cfg.time_col;
  if (!t->tb_ok || tc < 0 || (size_t)tc >= b->schema.n_cols) return;
  tm_colview v = tm_batch_col(b, (size_t)tc);
  size_t w = tm_type_byte_width(&v.type);
  for (int64_t i = 0; i < b->n_rows; i++) {
    if (tm_colview_is_null(&v, i)) continue;
    int64_t x;
    switch (w) {
      case 1: x = ((const int8_t *)v.values)[i]; break;
      case 2: x = ((const int16_t *)v.values)[i]; break;
      case 4: x = ((const int32_t *)v.values)[i]; break;
      default: x = ((const int64_t *)v.values)[i]; break;
    }
    if (!t->tb_any || x < t->tb_min) t->tb_min = x;
    if (!t->tb_any || x > t->tb_max) t->tb_max = x;
    t->tb_any = true;
  }
}

int tm_duck__write(tm_engine_txn *base, const tm_batch *b, tm_error *err) {
  duck_txn *t = (duck_txn *)base;
  tm_duck_engine *e = eng(t);
  int rc = TM_OK;
  if (!t->feed) {
    tm_buf target = TM_BUF_INIT(1 << 16), schema = TM_BUF_INIT(1 << 16);
    if (t->keyed) rc = tm_buf_puts(&target, "temp.main._tm_stage", err);
    else rc = tm_duck__table(&target, e, t->target, err);
    if (rc == TM_OK) rc = tm_engine__quote_ident(&schema, e->alias, err);
    if (rc == TM_OK) rc = tm_buf_puts(&schema, ".main", err);
    if (rc == TM_OK)
      rc = tm_duck_feed_start(e->writer, tm_buf_cstr(&schema), tm_buf_cstr(&target), &t->feed_types,
                              &t->feed, err);
    tm_buf_dispose(&target);
    tm_buf_dispose(&schema);
  }
  tm_batch copy;
  tm_batch_init(&copy);
  if (rc == TM_OK) rc = feed_copy(t, b, &copy, err);
  if (rc == TM_OK) rc = tm_duck_feed_put(t->feed, &copy, err);
  tm_batch_release(&copy);
  if (rc < 0) return tm_error_prefix(err, "%s", base->engine->cfg.dataset);
  t->fed += b->n_rows;
  t->appended += b->n_rows;
  track_bounds(t, b);
  return TM_OK;
}

/* Ends the feed (before a statement that reads or changes the rows, and at commit). */
static int flush(duck_txn *t, tm_error *err) {
  if (!t->feed) return TM_OK;
  int64_t stored = 0;
  int rc = tm_duck_feed_finish(t->feed, &stored, err);
  t->feed = NULL;
  if (rc == TM_OK && stored != t->fed)
    rc = tm_error_set(err, TM_ERROR, "DuckDB stored %lld of the %lld rows given", (long long)stored,
                      (long long)t->fed);
  t->fed = 0;
  return rc < 0 ? tm_error_prefix(err, "%s", t->base.engine->cfg.dataset) : TM_OK;
}

/* DELETE FROM table (aliased as the dataset) WHERE (cond), as one checked statement. */
static int delete_in(duck_txn *t, const char *table_sql, const char *cond, int64_t *n_out,
                     tm_error *err) {
  tm_duck_engine *e = eng(t);
  const char *ds = t->base.engine->cfg.dataset;
  tm_buf sql = TM_BUF_INIT(16 << 20);
  int rc = tm_buf_puts(&sql, "DELETE FROM ", err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, table_sql, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " AS ", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, ds, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " WHERE (%s\n)", cond);
  /* One DELETE statement, nothing else: the condition cannot close it and start another. */
  duckdb_extracted_statements ex = NULL;
  duckdb_prepared_statement ps = NULL;
  if (rc == TM_OK) {
    idx_t n = duckdb_extract_statements(e->writer, tm_buf_cstr(&sql), &ex);
    if (n != 1)
      rc = tm_error_set(err, TM_EINVALID, "%s: retention condition: %s", ds,
                        n == 0 ? duckdb_extract_statements_error(ex) : "it must be one condition");
  }
  if (rc == TM_OK && duckdb_prepare_extracted_statement(e->writer, ex, 0, &ps) == DuckDBError)
    rc = tm_error_set(err, TM_EINVALID, "%s: retention condition: %s", ds, duckdb_prepare_error(ps));
  if (rc == TM_OK && duckdb_prepared_statement_type(ps) != DUCKDB_STATEMENT_TYPE_DELETE)
    rc = tm_error_set(err, TM_EINVALID, "%s: retention condition: not a condition", ds);
  if (rc == TM_OK) rc = tm_db__exec_prepared(ps, ds, n_out, err);
  if (ps) duckdb_destroy_prepare(&ps);
  if (ex) duckdb_destroy_extracted(&ex);
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * The rows the transaction sees are the stored ones (its target) and, keyed,
 * the rows staged so far: the condition deletes from both.
 */
int tm_duck__delete_where(tm_engine_txn *base, const char *where_sql, int64_t *n_out,
                          tm_error *err) {
  duck_txn *t = (duck_txn *)base;
  TM_TRY(flush(t, err));
  tm_buf table = TM_BUF_INIT(1 << 16);
  int rc = tm_duck__table(&table, eng(t), t->target, err);
  int64_t stored = 0, staged = 0;
  if (rc == TM_OK) rc = delete_in(t, tm_buf_cstr(&table), where_sql, &stored, err);
  if (rc == TM_OK && t->keyed) rc = delete_in(t, "temp.main._tm_stage", where_sql, &staged, err);
  tm_buf_dispose(&table);
  if (rc < 0) return rc;
  t->deleted += stored;
  *n_out = stored + staged;
  return TM_OK;
}

/* Positions of one file per DELETE: the statement stays a few tens of KB. */
#define DELETE_IN_MAX 4096

/*
 * One DELETE per file, naming its positions (at most DELETE_IN_MAX per
 * statement): `_tm_seq = S AND _tm_file = F [AND _tm_pos IN (...)]`. Rows
 * are stored in data sequence number order (a commit's files arrive after
 * older ones), so DuckDB's zone maps on _tm_seq and _tm_file keep the row
 * groups of that file and skip the others (SPEC E4).
 */
int tm_duck__delete_provenance(tm_engine_txn *base, const tm_batch *keys, int64_t *n_out,
                               tm_error *err) {
  bool by_pos = keys->schema.n_cols == 3;
  tm_colview seq = tm_batch_col(keys, 0), file = tm_batch_col(keys, 1);
  tm_colview pos = by_pos ? tm_batch_col(keys, 2) : seq;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  int rc = TM_OK;
  *n_out = 0;
  for (int64_t i = 0; i < keys->n_rows && rc == TM_OK;) {
    int64_t s = tm_colview_int(&seq, i), f = tm_colview_int(&file, i);
    tm_buf_clear(&sql);
    rc = tm_buf_printf(&sql, err, "_tm_seq = %lld AND _tm_file = %lld", (long long)s, (long long)f);
    int64_t j = i + 1;
    if (by_pos && rc == TM_OK) {
      rc = tm_buf_printf(&sql, err, " AND _tm_pos IN (%lld", (long long)tm_colview_int(&pos, i));
      while (rc == TM_OK && j < keys->n_rows && j - i < DELETE_IN_MAX &&
             tm_colview_int(&seq, j) == s && tm_colview_int(&file, j) == f)
        rc = tm_buf_printf(&sql, err, ",%lld", (long long)tm_colview_int(&pos, j++));
      if (rc == TM_OK) rc = tm_buf_puts(&sql, ")", err);
    }
    int64_t n = 0;
    if (rc == TM_OK) rc = tm_duck__delete_where(base, tm_buf_cstr(&sql), &n, err);
    *n_out += n;
    i = j;
  }
  tm_buf_dispose(&sql);
  return rc;
}

/* ceil(a / b) for b > 0. */
static __int128 ceil_div(__int128 a, __int128 b) {
  __int128 q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

/* DELETE FROM table WHERE cond, with cond's $1 bound to v; *n_out: rows deleted. */
static int delete_bound(duck_txn *t, const char *table_sql, const char *cond, duckdb_value v,
                        int64_t *n_out, tm_error *err) {
  tm_duck_engine *e = eng(t);
  const char *ds = t->base.engine->cfg.dataset;
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_buf_printf(&sql, err, "DELETE FROM %s WHERE %s", table_sql, cond);
  duckdb_prepared_statement ps = NULL;
  if (rc == TM_OK && duckdb_prepare(e->writer, tm_buf_cstr(&sql), &ps) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "%s: retention: %s", ds, duckdb_prepare_error(ps));
  if (rc == TM_OK && duckdb_bind_value(ps, 1, v) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "%s: retention: cannot bind the cutoff", ds);
  if (rc == TM_OK) rc = tm_db__exec_prepared(ps, ds, n_out, err);
  if (ps) duckdb_destroy_prepare(&ps);
  tm_buf_dispose(&sql);
  return rc;
}

int tm_duck__delete_before(tm_engine_txn *base, int64_t sec, int32_t nsec, int64_t *n_out,
                           tm_error *err) {
  duck_txn *t = (duck_txn *)base;
  tm_duck_engine *e = eng(t);
  const tm_engine_config *cfg = &base->engine->cfg;
  const tm_column *col = &base->engine->schema.cols[cfg->time_col];
  TM_TRY(flush(t, err));
  /* "Older than the instant": value < ceil(instant / unit) in the column's units. */
  __int128 ns = (__int128)sec * 1000000000 + nsec;
  tm_buf cond = TM_BUF_INIT(1 << 16), table = TM_BUF_INIT(1 << 16);
  int rc = TM_OK;
  duckdb_value v = NULL;
  if (col->type.id == TM_TYPE_UTF8) {
    rc = tm_buf_puts(&cond, "tm_iso8601_ns(", err);
    if (rc == TM_OK) rc = tm_engine__quote_ident(&cond, col->name, err);
    if (rc == TM_OK) rc = tm_buf_puts(&cond, ") < $1", err);
    duckdb_hugeint h = {(uint64_t)ns, (int64_t)(ns >> 64)};
    v = duckdb_create_hugeint(h);
  } else {
    __int128 unit_ns;
    if (col->type.id == TM_TYPE_TIMESTAMP) unit_ns = 1000000000 / tm_unit_per_second(col->type.unit);
    else if (col->type.id == TM_TYPE_DATE32) unit_ns = (__int128)86400 * 1000000000;
    else if (cfg->time_format == TM_TIME_FORMAT_UNIX_MILLIS) unit_ns = 1000000;
    else if (cfg->time_format == TM_TIME_FORMAT_UNIX_NANOS) unit_ns = 1;
    else unit_ns = 1000000000;
    __int128 th = ceil_div(ns, unit_ns);
    if (th > INT64_MAX) th = INT64_MAX;
    if (th < INT64_MIN) th = INT64_MIN;
    rc = tm_engine__quote_ident(&cond, col->name, err);
    if (rc == TM_OK) rc = tm_buf_puts(&cond, " < $1", err);
    if (tm_type_is_integer(&col->type)) {
      v = duckdb_create_int64((int64_t)th);
    } else {
      tm_value tv;
      memset(&tv, 0, sizeof tv);
      tv.type = col->type.id;
      tv.v.i = (int64_t)th;
      v = tm_duck_value(&col->type, &tv);
    }
  }
  int64_t stored = 0, staged = 0;
  if (rc == TM_OK) rc = tm_duck__table(&table, e, t->target, err);
  if (rc == TM_OK) rc = delete_bound(t, tm_buf_cstr(&table), tm_buf_cstr(&cond), v, &stored, err);
  if (rc == TM_OK && t->keyed)
    rc = delete_bound(t, "temp.main._tm_stage", tm_buf_cstr(&cond), v, &staged, err);
  if (v) duckdb_destroy_value(&v);
  tm_buf_dispose(&cond);
  tm_buf_dispose(&table);
  if (rc < 0) return rc;
  t->deleted += stored;
  *n_out = stored + staged;
  return TM_OK;
}

/* ---- keyed resolution ------------------------------------------------------------ */

/* `a.k1 = b.k1 AND ...` over the key columns. */
static int keys_equal(tm_buf *b, const tm_engine *e, const char *x, const char *y, tm_error *err) {
  for (size_t i = 0; i < e->cfg.n_pk; i++) {
    const char *name = e->schema.cols[e->cfg.pk[i]].name;
    TM_TRY(tm_buf_puts(b, i ? " AND " : "", err));
    TM_TRY(tm_buf_printf(b, err, "%s.", x));
    TM_TRY(tm_engine__quote_ident(b, name, err));
    TM_TRY(tm_buf_printf(b, err, " = %s.", y));
    TM_TRY(tm_engine__quote_ident(b, name, err));
  }
  return TM_OK;
}

/* `k1 IS NOT NULL AND ...` (negated: `k1 IS NULL OR ...`). */
static int keys_present(tm_buf *b, const tm_engine *e, bool present, tm_error *err) {
  for (size_t i = 0; i < e->cfg.n_pk; i++) {
    TM_TRY(tm_buf_puts(b, i ? (present ? " AND " : " OR ") : "", err));
    TM_TRY(tm_engine__quote_ident(b, e->schema.cols[e->cfg.pk[i]].name, err));
    TM_TRY(tm_buf_puts(b, present ? " IS NOT NULL" : " IS NULL", err));
  }
  return TM_OK;
}

static int key_list(tm_buf *b, const tm_engine *e, tm_error *err) {
  for (size_t i = 0; i < e->cfg.n_pk; i++) {
    TM_TRY(tm_buf_puts(b, i ? ", " : "", err));
    TM_TRY(tm_engine__quote_ident(b, e->schema.cols[e->cfg.pk[i]].name, err));
  }
  return TM_OK;
}

/* `row("a", "b", ...)` of every column (prefix "x." or NULL). */
static int row_of(tm_buf *b, const tm_schema *s, const char *prefix, tm_error *err) {
  TM_TRY(tm_buf_puts(b, "row(", err));
  TM_TRY(tm_duck__columns(b, s, prefix, err));
  return tm_buf_puts(b, ")", err);
}

/* Whole-row equality of the columns of x and those of the struct w (NULL equals NULL). */
static int rows_equal_struct(tm_buf *b, const tm_schema *s, const char *w, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    TM_TRY(tm_buf_puts(b, i ? " AND " : "(", err));
    TM_TRY(tm_engine__quote_ident(b, s->cols[i].name, err));
    TM_TRY(tm_buf_printf(b, err, " IS NOT DISTINCT FROM %s[%zu]", w, i + 1));
  }
  return tm_buf_puts(b, s->n_cols ? ")" : "true", err);
}

static int rows_equal(tm_buf *b, const tm_schema *s, const char *x, const char *y, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    TM_TRY(tm_buf_puts(b, i ? " AND " : "(", err));
    TM_TRY(tm_buf_printf(b, err, "%s.", x));
    TM_TRY(tm_engine__quote_ident(b, s->cols[i].name, err));
    TM_TRY(tm_buf_printf(b, err, " IS NOT DISTINCT FROM %s.", y));
    TM_TRY(tm_engine__quote_ident(b, s->cols[i].name, err));
  }
  return tm_buf_puts(b, s->n_cols ? ")" : "true", err);
}

/* The ordering value of a row's time (NULL sorts first; ISO 8601 text by instant). */
static int time_expr(tm_buf *b, const tm_engine *e, tm_error *err) {
  if (e->cfg.time_col < 0) return tm_buf_puts(b, "NULL", err);
  const tm_column *c = &e->schema.cols[e->cfg.time_col];
  if (c->type.id == TM_TYPE_UTF8) {
    TM_TRY(tm_buf_puts(b, "tm_iso8601_ns(", err));
    TM_TRY(tm_engine__quote_ident(b, c->name, err));
    return tm_buf_puts(b, ")", err);
  }
  return tm_engine__quote_ident(b, c->name, err);
}

/* Rows of _tm_cand with their time rank (_tm_r), as a subquery. */
static int ranked(tm_buf *b, const tm_engine *e, tm_error *err) {
  TM_TRY(tm_buf_puts(b, "(SELECT *, dense_rank() OVER (PARTITION BY ", err));
  TM_TRY(key_list(b, e, err));
  TM_TRY(tm_buf_puts(b, " ORDER BY ", err));
  TM_TRY(time_expr(b, e, err));
  return tm_buf_puts(b, " ASC NULLS FIRST) AS _tm_r FROM _tm_cand)", err);
}

static int resolve(duck_txn *t, tm_engine_commit_info *info, tm_error *err) {
  tm_duck_engine *e = eng(t);
  const tm_engine *en = &e->base;
  const tm_schema *s = &en->schema;
  bool by_time = en->vt->traits.conflict_rule == TM_ENGINE_RULE_NEWEST_BY_TIME;
  bool upsert = !by_time && en->cfg.on_conflict == TM_ON_CONFLICT_UPSERT;
  tm_buf sql = TM_BUF_INIT(64 << 20);
  int rc = TM_OK;

#define P(x) if (rc == TM_OK) rc = tm_buf_puts(&sql, x, err)
  /*
   * 0. Most keys meet no other version: not twice in the stage, not stored.
   * Those rows go in at once; steps 1-4 resolve only the keys that conflict
   * (a first load of 10M distinct keys: 4 s instead of 40).
   */
  P("CREATE OR REPLACE TEMP TABLE _tm_ck AS SELECT ");
  if (rc == TM_OK) rc = key_list(&sql, en, err);
  P(" FROM _tm_stage WHERE ");
  if (rc == TM_OK) rc = keys_present(&sql, en, true, err);
  P(" GROUP BY ALL HAVING count(*) > 1");
  if (!t->replace) {
    P(" UNION SELECT DISTINCT k.* FROM (SELECT ");
    if (rc == TM_OK) rc = key_list(&sql, en, err);
    P(" FROM _tm_stage) k SEMI JOIN ");
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
    P(" t ON ");
    if (rc == TM_OK) rc = keys_equal(&sql, en, "t", "k", err);
  }
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  int64_t direct = 0;
  P("INSERT INTO ");
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
  P(" SELECT ");
  if (rc == TM_OK) rc = tm_duck__columns(&sql, s, "s.", err);
  P(" FROM (SELECT * FROM _tm_stage WHERE ");
  if (rc == TM_OK) rc = keys_present(&sql, en, true, err);
  P(") s ANTI JOIN _tm_ck c ON ");
  if (rc == TM_OK) rc = keys_equal(&sql, en, "s", "c", err);
  P(" ORDER BY s._tm_arrival");
  if (rc == TM_OK) rc = exec_buf(t, &sql, &direct, err);
  info->rows_written += direct;
  if (direct > 0) {
    /* The stage keeps the conflicting keys' rows and the rows with a NULL key. */
    P("CREATE OR REPLACE TEMP TABLE _tm_rest AS SELECT s.* FROM _tm_stage s SEMI JOIN _tm_ck c ON ");
    if (rc == TM_OK) rc = keys_equal(&sql, en, "s", "c", err);
    P(" UNION ALL SELECT * FROM _tm_stage WHERE ");
    if (rc == TM_OK) rc = keys_present(&sql, en, false, err);
    P("; DROP TABLE _tm_stage; ALTER TABLE _tm_rest RENAME TO _tm_stage");
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }

  /* 1. Candidates: stored rows of the keys staged (arrival 0, with their row id), then the stage. */
  P("CREATE OR REPLACE TEMP TABLE _tm_cand AS ");
  if (!t->replace) {
    P("SELECT ");
    if (rc == TM_OK) rc = tm_duck__columns(&sql, s, "t.", err);
    P(", 0::BIGINT AS _tm_arrival, t.rowid AS _tm_rid FROM ");
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
    P(" t SEMI JOIN (SELECT DISTINCT ");
    if (rc == TM_OK) rc = key_list(&sql, en, err);
    P(" FROM _tm_stage) s ON ");
    if (rc == TM_OK) rc = keys_equal(&sql, en, "t", "s", err);
    P(" UNION ALL ");
  }
  P("SELECT ");
  if (rc == TM_OK) rc = tm_duck__columns(&sql, s, NULL, err);
  P(", _tm_arrival, NULL::BIGINT AS _tm_rid FROM _tm_stage WHERE ");
  if (rc == TM_OK) rc = keys_present(&sql, en, true, err);
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);

  /* 2. Why each row after a key's first lost (the running winner it met: _tm_w). */
  P("SELECT count(*) FILTER (WHERE _tm_prev > 0 AND _tm_eq), "
    "count(*) FILTER (WHERE _tm_prev > 0 AND NOT _tm_eq AND _tm_r = _tm_m), "
    "count(*) FILTER (WHERE _tm_prev > 0 AND NOT _tm_eq AND _tm_r <> _tm_m) FROM (SELECT *, ");
  if (rc == TM_OK) rc = rows_equal_struct(&sql, s, "_tm_w", err);
  P(" AS _tm_eq FROM (SELECT *, count(*) OVER p AS _tm_prev, max(_tm_r) OVER p AS _tm_m, ");
  if (by_time) {
    P("arg_max(");
    if (rc == TM_OK) rc = row_of(&sql, s, NULL, err);
    P(", row(_tm_r, _tm_arrival)) OVER p");
  } else if (upsert) {
    P("lag(");
    if (rc == TM_OK) rc = row_of(&sql, s, NULL, err);
    P(") OVER (PARTITION BY ");
    if (rc == TM_OK) rc = key_list(&sql, en, err);
    P(" ORDER BY _tm_arrival)");
  } else {
    P("first_value(");
    if (rc == TM_OK) rc = row_of(&sql, s, NULL, err);
    P(") OVER p");
  }
  P(" AS _tm_w FROM ");
  if (rc == TM_OK) rc = ranked(&sql, en, err);
  P(" WINDOW p AS (PARTITION BY ");
  if (rc == TM_OK) rc = key_list(&sql, en, err);
  P(" ORDER BY _tm_arrival ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)))");
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_query(e->writer, tm_buf_cstr(&sql), &r) == DuckDBError) {
      rc = tm_db__result_error(err, &r, en->cfg.dataset);
    } else {
      int64_t same = duckdb_value_int64(&r, 0, 0), eq_time = duckdb_value_int64(&r, 1, 0),
              other = duckdb_value_int64(&r, 2, 0);
      info->rows_superseded[TM_SUPERSEDED_UNCHANGED] += same;
      if (by_time) {
        info->rows_superseded[TM_SUPERSEDED_EQUAL_TIME] += eq_time;
        info->rows_superseded[TM_SUPERSEDED_OLDER] += other;
      } else {
        info->rows_superseded[TM_SUPERSEDED_ARRIVAL] += eq_time + other;
      }
    }
    duckdb_destroy_result(&r);
    tm_buf_clear(&sql);
  }

  /* 3. The winner of each key. */
  P("CREATE OR REPLACE TEMP TABLE _tm_win AS SELECT * FROM (SELECT *, row_number() OVER "
    "(PARTITION BY ");
  if (rc == TM_OK) rc = key_list(&sql, en, err);
  P(by_time ? " ORDER BY _tm_r DESC, _tm_arrival DESC" : upsert ? " ORDER BY _tm_arrival DESC" : " ORDER BY _tm_arrival ASC");
  P(") AS _tm_n FROM ");
  if (rc == TM_OK) rc = ranked(&sql, en, err);
  P(") WHERE _tm_n = 1");
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);

  /* 4. Stored rows that lost to a different row go; winners not yet stored come in. */
  int64_t n = 0;
  if (!t->replace) {
    P("DELETE FROM ");
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
    P(" WHERE rowid IN (SELECT s._tm_rid FROM _tm_cand s JOIN _tm_win w ON ");
    if (rc == TM_OK) rc = keys_equal(&sql, en, "s", "w", err);
    P(" WHERE s._tm_arrival = 0 AND w._tm_arrival > 0 AND NOT ");
    if (rc == TM_OK) rc = rows_equal(&sql, s, "s", "w", err);
    P(")");
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }
  P("INSERT INTO ");
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
  P(" SELECT ");
  if (rc == TM_OK) rc = tm_duck__columns(&sql, s, "w.", err);
  P(" FROM _tm_win w WHERE w._tm_arrival > 0");
  if (!t->replace) {
    P(" AND NOT EXISTS (SELECT 1 FROM _tm_cand s WHERE s._tm_arrival = 0 AND ");
    if (rc == TM_OK) rc = keys_equal(&sql, en, "s", "w", err);
    P(" AND ");
    if (rc == TM_OK) rc = rows_equal(&sql, s, "s", "w", err);
    P(")");
  }
  P(" ORDER BY w._tm_arrival");
  if (rc == TM_OK) rc = exec_buf(t, &sql, &n, err);
  info->rows_written += n;
  /* Rows with a NULL key column are never merged (A8 applies to keys). */
  P("INSERT INTO ");
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, t->target, err);
  P(" SELECT ");
  if (rc == TM_OK) rc = tm_duck__columns(&sql, s, NULL, err);
  P(" FROM _tm_stage WHERE ");
  if (rc == TM_OK) rc = keys_present(&sql, en, false, err);
  P(" ORDER BY _tm_arrival");
  n = 0;
  if (rc == TM_OK) rc = exec_buf(t, &sql, &n, err);
  info->rows_written += n;
  P("DROP TABLE IF EXISTS _tm_cand; DROP TABLE IF EXISTS _tm_win; DROP TABLE IF EXISTS _tm_stage; "
    "DROP TABLE IF EXISTS _tm_ck");
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
#undef P
  tm_buf_dispose(&sql);
  return rc;
}

/* ---- commit / abort ----------------------------------------------------------------- */

static int write_state(duck_txn *t, const tm_kv *state, tm_error *err) {
  tm_duck_engine *e = eng(t);
  tm_buf sql = TM_BUF_INIT(64 << 20);
  int rc = tm_buf_puts(&sql, "DELETE FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_state", err);
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  if (rc == TM_OK && state->len > 0) {
    rc = tm_buf_puts(&sql, "INSERT INTO ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_state", err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " VALUES ", err);
    for (size_t i = 0; rc == TM_OK && i < state->len; i++) {
      rc = tm_buf_puts(&sql, i ? ", (" : "(", err);
      const char *k = state->items[i].key, *v = state->items[i].value;
      if (rc == TM_OK) rc = tm_engine__quote_string(&sql, k, strlen(k), err);
      if (rc == TM_OK) rc = tm_buf_puts(&sql, ", ", err);
      if (rc == TM_OK) rc = tm_engine__quote_string(&sql, v, strlen(v), err);
      if (rc == TM_OK) rc = tm_buf_puts(&sql, ")", err);
    }
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/* Whether bound_text writes x in a form DuckDB reads back (years 0000-9999). */
static bool in_text_range(const tm_type *ty, int64_t x) {
  static const int64_t lo_days = -719528, hi_days = 2932896; /* 0000-01-01, 9999-12-31 */
  if (ty->id == TM_TYPE_DATE32) return x >= lo_days && x <= hi_days;
  if (ty->id != TM_TYPE_TIMESTAMP) return true;
  static const int64_t per[] = {1, 1000, 1000000, 1000000000};
  int64_t days = tm_floor_div(tm_floor_div(x, per[ty->unit]), 86400);
  return days >= lo_days && days <= hi_days;
}

/* The text DuckDB casts back to the time column's type for value x. */
static void bound_text(const tm_type *ty, int64_t x, char *buf, size_t cap) {
  if (ty->id == TM_TYPE_DATE32) {
    tm_date_print(buf, cap, x);
  } else if (ty->id == TM_TYPE_TIMESTAMP) {
    static const int64_t per[] = {1, 1000, 1000000, 1000000000};
    static const int digits[] = {0, 3, 6, 9};
    int64_t p = per[ty->unit];
    int64_t sec = tm_floor_div(x, p);
    tm_time_print(buf, cap, sec, (int32_t)((x - sec * p) * (1000000000 / p)), digits[ty->unit], ty->utc);
  } else {
    snprintf(buf, cap, "%lld", (long long)x);
  }
}

/*
 * The time column's bounds once this transaction commits, as hint text.
 * Rows only added, of an integer-like time column: the stored hints (when
 * known) widened by the rows written, with no scan. Otherwise (deletes, a
 * keyed resolution, another type, no stored hints) the bounds are
 * aggregated in the transaction, hinted where that is exact.
 */
static int next_bounds(duck_txn *t, char *out[2], tm_error *err) {
  tm_duck_engine *e = eng(t);
  const tm_type *ty = &t->base.engine->schema.cols[t->base.engine->cfg.time_col].type;
  out[0] = out[1] = NULL;
  bool only_added = t->tb_ok && !t->keyed && t->deleted == 0 &&
                    (!t->tb_any || (in_text_range(ty, t->tb_min) && in_text_range(ty, t->tb_max)));
  char old[2][128] = {"", ""};
  bool have_old = false;
  pthread_mutex_lock(&e->hint_mu);
  if (e->hint[0] && e->hint[1] && strlen(e->hint[0]) < 128 && strlen(e->hint[1]) < 128) {
    snprintf(old[0], sizeof old[0], "%s", e->hint[0]);
    snprintf(old[1], sizeof old[1], "%s", e->hint[1]);
    have_old = true;
  }
  pthread_mutex_unlock(&e->hint_mu);
  if (only_added && t->replace) {
    /* Only these rows will be stored (a full refresh, a replacement). */
    if (!t->tb_any) return TM_OK; /* no row: no bounds */
    char a[96], b[96];
    bound_text(ty, t->tb_min, a, sizeof a);
    bound_text(ty, t->tb_max, b, sizeof b);
    out[0] = tm_strdup(a);
    out[1] = tm_strdup(b);
    return out[0] && out[1] ? TM_OK : tm_error_nomem(err);
  } else if (only_added && have_old) {
    if (!t->tb_any) {
      out[0] = tm_strdup(old[0]);
      out[1] = tm_strdup(old[1]);
      return out[0] && out[1] ? TM_OK : tm_error_nomem(err);
    }
    /* least / greatest of two constants, by DuckDB's own comparison. */
    char a[96], b[96], ts[48];
    bound_text(ty, t->tb_min, a, sizeof a);
    bound_text(ty, t->tb_max, b, sizeof b);
    tm_duck_type_sql(ty, ts, sizeof ts);
    const char *fn[2] = {"least", "greatest"}, *mine[2] = {a, b};
    tm_buf sql = TM_BUF_INIT(1 << 12);
    /* Constants only, on a connection of their own: an error here cannot abort the commit. */
    duckdb_connection k = NULL;
    int rc = tm_db__connect(t->base.engine->db, &k, err);
    for (int i = 0; rc == TM_OK && i < 2; i++) {
      tm_buf_clear(&sql);
      /* TRY_CAST of the stored hint: an unreadable one is ignored (least and greatest skip NULL). */
      rc = tm_buf_printf(&sql, err, "SELECT CAST(%s(TRY_CAST(", fn[i]);
      if (rc == TM_OK) rc = tm_engine__quote_string(&sql, old[i], strlen(old[i]), err);
      if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " AS %s), CAST(", ts);
      if (rc == TM_OK) rc = tm_engine__quote_string(&sql, mine[i], strlen(mine[i]), err);
      if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " AS %s)) AS VARCHAR)", ts);
      char *v = NULL;
      duckdb_result r;
      if (rc == TM_OK && duckdb_query(k, tm_buf_cstr(&sql), &r) == DuckDBSuccess &&
          duckdb_row_count(&r) == 1 && !duckdb_value_is_null(&r, 0, 0)) {
        char *d = duckdb_value_varchar(&r, 0, 0);
        v = d ? tm_strdup(d) : NULL;
        if (d) duckdb_free(d);
      }
      if (rc == TM_OK) duckdb_destroy_result(&r);
      out[i] = v;
      if (rc == TM_OK && !v) break; /* a text DuckDB did not take: aggregate below */
    }
    tm_buf_dispose(&sql);
    if (k) duckdb_disconnect(&k);
    if (rc < 0 || (out[0] && out[1])) return rc;
    tm_free(out[0]);
    tm_free(out[1]);
    out[0] = out[1] = NULL;
  }
  if (t->replace) {
    /* The stored rows' hints say nothing of the new table: aggregate it all. */
    char *none[2] = {NULL, NULL};
    tm_duck__set_hints(e, none);
  }
  return tm_duck__time_bounds(e, e->writer, out, err);
}

/* Rewrites the time_min / time_max hint keys of _tm_meta in the transaction. */
static int write_hints(duck_txn *t, char *const bounds[2], tm_error *err) {
  tm_duck_engine *e = eng(t);
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_buf_puts(&sql, "DELETE FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_meta", err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " WHERE key IN ('time_min', 'time_max')", err);
  if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  static const char *const keys[2] = {"time_min", "time_max"};
  for (int i = 0; rc == TM_OK && i < 2; i++) {
    if (!bounds[i]) continue;
    rc = tm_buf_puts(&sql, "INSERT INTO ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_meta", err);
    if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " VALUES ('%s', ", keys[i]);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, bounds[i], strlen(bounds[i]), err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ")", err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
  }
  tm_buf_dispose(&sql);
  return rc;
}

int tm_duck__commit(tm_engine_txn *base, const tm_kv *state, tm_engine_commit_info *info,
                    tm_error *err) {
  duck_txn *t = (duck_txn *)base;
  tm_duck_engine *e = eng(t);
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = flush(t, err);
  if (rc == TM_OK && t->keyed) rc = resolve(t, info, err);
  else if (rc == TM_OK) info->rows_written = t->appended;
  if (rc == TM_OK && t->replace) {
    rc = tm_buf_puts(&sql, "DROP TABLE IF EXISTS ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, "ALTER TABLE ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_NEW, err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " RENAME TO " TM_DUCK_ROWS, err);
    if (rc == TM_OK) rc = exec_buf(t, &sql, NULL, err);
    /* DuckDB renames no table with indexes: they are made on the table once it is renamed. */
    if (rc == TM_OK) rc = tm_duck__create_indexes(e, e->writer, err);
    if (rc == TM_OK && e->pending) rc = tm_duck__write_meta(e, e->writer, err);
  }
  /* A replacement starts without the state of what it replaces (B9). */
  if (rc == TM_OK && (state || e->pending)) {
    tm_kv none;
    tm_kv_init(&none);
    rc = write_state(t, state ? state : &none, err);
  }
  /* The time column's bounds after this commit, committed with it: the next hints. */
  char *bounds[2] = {NULL, NULL};
  if (rc == TM_OK && base->engine->cfg.time_col >= 0) {
    rc = next_bounds(t, bounds, err);
    if (rc == TM_OK) rc = write_hints(t, bounds, err);
  }
  if (rc == TM_OK) rc = tm_db__exec(e->writer, "COMMIT", e->file ? e->file : base->engine->cfg.dataset, err);
  bool committed = rc == TM_OK;
  if (committed) tm_duck__set_hints(e, bounds);
  tm_free(bounds[0]);
  tm_free(bounds[1]);
  if (committed) {
    e->pending = false;
    info->rows_deleted = t->deleted;
    tm_buf_clear(&sql);
    rc = tm_buf_puts(&sql, "SELECT count(*) FROM ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
    if (rc == TM_OK) rc = tm_db__query_int64(e->writer, tm_buf_cstr(&sql), &info->rows_after, err);
    rc = TM_OK; /* committed: the count is for the report only */
  }
  tm_buf_dispose(&sql);
  txn_free(t, !committed);
  return rc;
}

void tm_duck__abort(tm_engine_txn *base) {
  if (!base) return;
  txn_free((duck_txn *)base, true);
}
