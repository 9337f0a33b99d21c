/*
 * feed.c - rows into a DuckDB table through an Arrow stream (engine layer).
 * See engine_int.h ("DuckDB: feeds").
 *
 * Why not an appender: DuckDB's appender stores rows on the thread that
 * appends, so compressing the row groups (most of a load's time) runs on
 * one core whatever the thread setting. An INSERT ... SELECT over an Arrow
 * stream scan is an ordinary query: DuckDB runs it on its worker threads,
 * each one converting and compressing its own row groups, in the order of
 * the stream (the scan numbers its batches, so the insert keeps arrival
 * order). docs/REFRESH.md "Speed" has the figures.
 *
 * The threads:
 *   - the caller (the refresh) puts batches into a queue of at most
 *     TM_FEED_DEPTH; it blocks while the queue is full;
 *   - a helper thread runs the INSERT on the writer connection, which nobody
 *     else touches until the feed is finished;
 *   - DuckDB's threads call the stream's get_next (one at a time: the scan
 *     takes its own lock), which hands out the queue's head.
 * Memory stays bounded by the queue plus the row groups DuckDB is building.
 *
 * The stream carries the batches' own buffers: put() takes them (no copy),
 * and DuckDB releases each array when it has converted it. Text is checked
 * to be UTF-8 in put(), because DuckDB's Arrow scan does not check and
 * VARCHAR must be valid UTF-8. Types go to DuckDB as the Arrow formats it
 * maps to the engine's column types (engine_int.h), except two that its
 * Arrow scan would narrow: a zoned nanosecond timestamp travels unzoned
 * (TIMESTAMP_NS has no zone) and a nanosecond time of day as text, which
 * DuckDB casts to TIME_NS exactly (its Arrow scan reads "ttn" as
 * microseconds), also inside nested values (the INSERT casts a struct, list
 * or map of text to the table's).
 *
 * The view over the stream is created in the database the transaction
 * writes to (a transaction may write to one attached database only; DuckDB
 * will not create it in the temporary catalog), inside the writer's
 * transaction, and dropped in it: no other connection ever sees it, and it
 * is never committed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_int.h"
#include "util/alloc.h"
#include "util/time.h"

#define TM_FEED_DEPTH 2

struct tm_duck_feed {
  duckdb_connection con;          /* borrowed: the writer; the helper's until it is done */
  tm_buf view;                    /* owned: the stream's view, qualified */
  tm_buf insert_sql;              /* owned */
  tm_schema types;                /* owned: the batches' schema */
  bool *time_ns;                  /* owned, types.n_cols: column travels as text */
  bool any_time_ns;
  struct ArrowSchema schema;      /* owned: the stream's schema */
  struct ArrowArrayStream stream; /* handed to DuckDB; private_data = the feed */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Guarded by mu: */
  struct ArrowArray queue[TM_FEED_DEPTH];
  int head, count;
  bool ended;                     /* no more batches: the stream ends after the queue */
  bool cancelled;                 /* the stream fails at its next call */
  bool done;                      /* the INSERT has returned */
  bool failed;                    /* ... with insert_error */
  char insert_error[512];
  int64_t rows;                   /* rows the INSERT stored */
};

/* ---- the stream DuckDB reads ------------------------------------------------ */

static void schema_noop_release(struct ArrowSchema *s) { s->release = NULL; }

/* A shallow copy of the feed's schema: DuckDB never releases what this returns. */
static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
  tm_duck_feed *f = s->private_data;
  *out = f->schema;
  out->release = schema_noop_release;
  return 0;
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
  tm_duck_feed *f = s->private_data;
  pthread_mutex_lock(&f->mu);
  while (f->count == 0 && !f->ended && !f->cancelled) pthread_cond_wait(&f->cv, &f->mu);
  int rc = 0;
  if (f->cancelled) {
    rc = ECANCELED;
  } else if (f->count == 0) {
    memset(out, 0, sizeof *out); /* the end of the stream */
  } else {
    *out = f->queue[f->head];
    memset(&f->queue[f->head], 0, sizeof f->queue[f->head]);
    f->head = (f->head + 1) % TM_FEED_DEPTH;
    f->count--;
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static const char *stream_last_error(struct ArrowArrayStream *s) {
  (void)s;
  return "the refresh stopped feeding rows";
}

static void stream_release(struct ArrowArrayStream *s) { s->release = NULL; }

/* ---- the helper thread -------------------------------------------------------- */

static void *run_insert(void *arg) {
  tm_duck_feed *f = arg;
  duckdb_result r;
  bool failed = duckdb_query(f->con, tm_buf_cstr(&f->insert_sql), &r) == DuckDBError;
  pthread_mutex_lock(&f->mu);
  if (failed) {
    const char *msg = duckdb_result_error(&r);
    snprintf(f->insert_error, sizeof f->insert_error, "%s", msg ? msg : "the insert failed");
  } else {
    f->rows = (int64_t)duckdb_rows_changed(&r);
  }
  f->failed = failed;
  f->done = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  duckdb_destroy_result(&r);
  return NULL;
}

/* ---- the feed ----------------------------------------------------------------- */

static int exec(duckdb_connection con, const char *sql, tm_error *err) {
  duckdb_result r;
  int rc = TM_OK;
  if (duckdb_query(con, sql, &r) == DuckDBError) {
    const char *msg = duckdb_result_error(&r);
    rc = tm_error_set(err, TM_ERROR, "DuckDB: %s", msg ? msg : "failed");
  }
  duckdb_destroy_result(&r);
  return rc;
}

/* The writer's default catalog and schema, to come back to after creating the view. */
static int current_path(duckdb_connection con, tm_buf *use_sql, tm_error *err) {
  duckdb_result r;
  if (duckdb_query(con, "SELECT current_database(), current_schema()", &r) == DuckDBError) {
    duckdb_destroy_result(&r);
    return tm_error_set(err, TM_ERROR, "DuckDB cannot name the current schema");
  }
  char *db = duckdb_value_varchar(&r, 0, 0), *sc = duckdb_value_varchar(&r, 1, 0);
  int rc = db && sc ? tm_buf_puts(use_sql, "USE ", err) : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(use_sql, db, err);
  if (rc == TM_OK) rc = tm_buf_puts(use_sql, ".", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(use_sql, sc, err);
  if (db) duckdb_free(db);
  if (sc) duckdb_free(sc);
  duckdb_destroy_result(&r);
  return rc;
}

static bool is_time_ns(const tm_type *t) {
  return t->id == TM_TYPE_TIME64 && t->unit == TM_UNIT_NANO;
}

/* Whether t holds a nanosecond time anywhere (such a column travels converted). */
static bool has_time_ns(const tm_type *t) {
  if (!tm_type_is_nested(t)) return is_time_ns(t);
  for (size_t k = 0; k < t->nested->n; k++)
    if (has_time_ns(&t->nested->child[k])) return true;
  return false;
}

/* t as it travels: every nanosecond time in it as text (nested ones too). */
static int travel_type(const tm_type *t, tm_type *out, int depth, tm_error *err) {
  if (!has_time_ns(t)) {
    *out = *t;
    return TM_OK;
  }
  if (!tm_type_is_nested(t)) {
    *out = tm_type_of(TM_TYPE_UTF8);
    return TM_OK;
  }
  if (depth > TM_NTYPE_MAX_DEPTH) return tm_error_set(err, TM_EINVALID, "nested too deep");
  const tm_ntype *nt = t->nested;
  if (t->id == TM_TYPE_LIST) {
    tm_type e;
    TM_TRY(travel_type(&nt->child[0], &e, depth + 1, err));
    return tm_type_list(&e, nt->nullable[0], out, err);
  }
  if (t->id == TM_TYPE_MAP) {
    const tm_ntype *et = nt->child[0].nested;
    tm_type k, v;
    TM_TRY(travel_type(&et->child[0], &k, depth + 1, err));
    TM_TRY(travel_type(&et->child[1], &v, depth + 1, err));
    return tm_type_map(&k, &v, et->nullable[1], out, err);
  }
  tm_type *kids = tm_calloc(nt->n, sizeof *kids);
  if (!kids) return tm_error_nomem(err);
  int rc = TM_OK;
  for (size_t k = 0; rc == TM_OK && k < nt->n; k++)
    rc = travel_type(&nt->child[k], &kids[k], depth + 1, err);
  if (rc == TM_OK) rc = tm_type_struct(nt->n, nt->name, kids, nt->nullable, out, err);
  tm_free(kids);
  return rc;
}

/* The schema DuckDB sees: the batches' types, nanosecond times as text, ns timestamps unzoned. */
static int stream_schema(tm_duck_feed *f, tm_error *err) {
  tm_schema s;
  tm_schema_init(&s);
  TM_TRY(tm_schema_copy(&s, &f->types, err));
  int rc = TM_OK;
  for (size_t i = 0; rc == TM_OK && i < s.n_cols; i++) {
    tm_type *t = &s.cols[i].type;
    if (f->time_ns[i]) rc = travel_type(t, t, 0, err);
    else if (t->id == TM_TYPE_TIMESTAMP && t->unit == TM_UNIT_NANO) t->utc = false;
  }
  if (rc == TM_OK) rc = tm_schema_to_arrow(&s, &f->schema, err);
  tm_schema_dispose(&s);
  return rc;
}

int tm_duck_feed_start(duckdb_connection con, const char *view_schema, const char *target_sql,
                       const tm_schema *types, tm_duck_feed **out, tm_error *err) {
  static int seq; /* view names: unique within the process */
  tm_duck_feed *f = tm_calloc(1, sizeof *f);
  if (!f) return tm_error_nomem(err);
  f->con = con;
  tm_buf_init(&f->insert_sql, 1 << 20);
  tm_buf_init(&f->view, 1 << 16);
  char name[32];
  snprintf(name, sizeof name, "_tm_feed_%d", __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
  int rc = tm_buf_printf(&f->view, err, "%s.%s", view_schema, name);
  tm_schema_init(&f->types);
  if (rc == TM_OK) rc = tm_schema_copy(&f->types, types, err);
  bool have_schema = rc == TM_OK;
  if (rc == TM_OK && !(f->time_ns = tm_calloc(types->n_cols ? types->n_cols : 1, sizeof *f->time_ns)))
    rc = tm_error_nomem(err);
  for (size_t i = 0; rc == TM_OK && i < types->n_cols; i++) {
    const tm_type *t = &types->cols[i].type;
    f->time_ns[i] = has_time_ns(t);
    f->any_time_ns |= f->time_ns[i];
  }
  if (rc == TM_OK) rc = stream_schema(f, err);
  bool have_arrow = rc == TM_OK;
  f->stream.get_schema = stream_get_schema;
  f->stream.get_next = stream_get_next;
  f->stream.get_last_error = stream_last_error;
  f->stream.release = stream_release;
  f->stream.private_data = f;
  /* duckdb_arrow_scan names the view in the current schema: view_schema, for a moment. */
  tm_buf back = TM_BUF_INIT(4096), use = TM_BUF_INIT(1 << 16);
  if (rc == TM_OK) rc = current_path(con, &back, err);
  if (rc == TM_OK) rc = tm_buf_printf(&use, err, "USE %s", view_schema);
  if (rc == TM_OK) rc = exec(con, tm_buf_cstr(&use), err);
  bool have_view = false;
  if (rc == TM_OK) {
    if (duckdb_arrow_scan(con, name, (duckdb_arrow_stream)&f->stream) == DuckDBError)
      rc = tm_error_set(err, TM_ERROR, "DuckDB refused the Arrow stream of the rows");
    else have_view = true;
    int back_rc = exec(con, tm_buf_cstr(&back), rc == TM_OK ? err : NULL);
    if (rc == TM_OK) rc = back_rc;
  }
  tm_buf_dispose(&back);
  tm_buf_dispose(&use);
  if (rc == TM_OK) rc = tm_buf_printf(&f->insert_sql, err, "INSERT INTO %s SELECT * FROM %s",
                                      target_sql, tm_buf_cstr(&f->view));
  bool have_mu = false;
  if (rc == TM_OK) {
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    have_mu = true;
    if (pthread_create(&f->thread, NULL, run_insert, f) != 0)
      rc = tm_error_set(err, TM_ERROR, "cannot start the thread that stores the rows");
  }
  if (rc < 0) {
    if (have_view) {
      /* The view must not outlive the stream it reads (the caller rolls back, too). */
      tm_buf drop = TM_BUF_INIT(1 << 16);
      if (tm_buf_printf(&drop, NULL, "DROP VIEW IF EXISTS %s", tm_buf_cstr(&f->view)) == TM_OK)
        (void)exec(con, tm_buf_cstr(&drop), NULL);
      tm_buf_dispose(&drop);
    }
    if (have_mu) {
      pthread_cond_destroy(&f->cv);
      pthread_mutex_destroy(&f->mu);
    }
    if (have_arrow) f->schema.release(&f->schema);
    if (have_schema) tm_schema_dispose(&f->types);
    tm_free(f->time_ns);
    tm_buf_dispose(&f->insert_sql);
    tm_buf_dispose(&f->view);
    tm_free(f);
    return rc;
  }
  *out = f;
  return TM_OK;
}

/*
 * What DuckDB's Arrow scan takes on trust: every text value is UTF-8, and a
 * zoned second or millisecond timestamp fits in microseconds (TIMESTAMPTZ).
 */
static int check_view(const tm_colview *vp, const char *name, int depth, tm_error *err) {
  const tm_colview v = *vp;
  const tm_type *t = &v.type;
  int64_t rows = v.length;
  if (tm_type_is_nested(t)) {
    /* The children hold every element: check them whole (inside a list, a
     * row number is an element's). */
    if (depth > TM_NTYPE_MAX_DEPTH) return tm_error_set(err, TM_EINVALID, "nested too deep");
    TM_TRY(tm_colview_check(&v, err));
    for (size_t k = 0; k < t->nested->n; k++) {
      tm_colview ch = tm_colview_child(&v, k);
      TM_TRY(check_view(&ch, name, depth + 1, err));
    }
    return TM_OK;
  }
  {
    if (t->id == TM_TYPE_UTF8) {
      const int32_t *off = v.values;
      for (int64_t i = 0; i < rows; i++) {
        size_t bad, len = (size_t)(off[i + 1] - off[i]);
        if (len == 0 || tm_colview_is_null(&v, i)) continue;
        if (!tm_utf8_valid((const char *)v.data + off[i], len, &bad))
          return tm_error_set(err, TM_ECORRUPT,
                              "column '%s', row %lld: a text value is not valid UTF-8 (byte %zu of %zu)",
                              name, (long long)i, bad, len);
      }
    } else if (t->id == TM_TYPE_TIMESTAMP && t->utc &&
               (t->unit == TM_UNIT_SECOND || t->unit == TM_UNIT_MILLI)) {
      int64_t per = t->unit == TM_UNIT_SECOND ? 1000000 : 1000, lim = INT64_MAX / per;
      const int64_t *x = v.values;
      for (int64_t i = 0; i < rows; i++)
        if ((x[i] > lim || x[i] < -lim) && !tm_colview_is_null(&v, i))
          return tm_error_set(err, TM_EINVALID,
                              "column '%s', row %lld: timestamp %lld %s is outside DuckDB's range "
                              "(years 290309 BC - 294247)",
                              name, (long long)i, (long long)x[i], tm_unit_name(t->unit));
    }
  }
  return TM_OK;
}

static int check_values(const tm_batch *b, tm_error *err) {
  for (size_t c = 0; c < b->schema.n_cols; c++) {
    tm_colview v = tm_batch_col(b, c);
    TM_TRY(check_view(&v, b->schema.cols[c].name, 0, err));
  }
  return TM_OK;
}

/* Appends value `row` of v to cb (of v's travel type): nanosecond times as
 * DuckDB's TIME_NS text ("HH:MM:SS.nnnnnnnnn"), which it casts exactly. */
static int travel_value(const tm_colview *v, int64_t row, tm_colbuilder *cb, const char *name,
                        tm_error *err) {
  if (tm_colview_is_null(v, row)) return tm_colbuilder_append_null(cb, err);
  if (!has_time_ns(&v->type)) return tm_colbuilder_append_range(cb, v, row, 1, err);
  if (!tm_type_is_nested(&v->type)) {
    int64_t x = ((const int64_t *)v->values)[row];
    if (x < 0 || x > INT64_C(86400000000000)) {
      return tm_error_set(err, TM_EINVALID, "column '%s', row %lld: time %lld ns is not within a day",
                          name, (long long)row, (long long)x);
    }
    int64_t s = x / 1000000000;
    char text[32];
    int len = snprintf(text, sizeof text, "%02d:%02d:%02d.%09d", (int)(s / 3600), (int)(s / 60 % 60),
                       (int)(s % 60), (int)(x % 1000000000));
    return tm_colbuilder_append_bytes(cb, text, (size_t)len, err);
  }
  if (v->type.id == TM_TYPE_STRUCT) {
    for (size_t k = 0; k < v->type.nested->n; k++) {
      tm_colview ch = tm_colview_child(v, k);
      TM_TRY(travel_value(&ch, row, tm_colbuilder_child(cb, k), name, err));
    }
    return tm_colbuilder_append_nested(cb, err);
  }
  const int32_t *o = v->values;
  tm_colview ch = tm_colview_child(v, 0);
  for (int64_t e = o[row]; e < o[row + 1]; e++)
    TM_TRY(travel_value(&ch, e, tm_colbuilder_child(cb, 0), name, err));
  return tm_colbuilder_append_nested(cb, err);
}

/* Column v (n rows) as it travels (travel_type). */
static int time_ns_text(const tm_colview *v, int64_t n, const char *name, struct ArrowArray *out,
                        tm_error *err) {
  tm_type to;
  TM_TRY(travel_type(&v->type, &to, 0, err));
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, to, 0);
  int rc = tm_colbuilder_reserve(&cb, n, tm_type_is_nested(&to) ? 0 : (size_t)n * 18, err);
  for (int64_t i = 0; rc == TM_OK && i < n; i++) rc = travel_value(v, i, &cb, name, err);
  if (rc == TM_OK) rc = tm_colbuilder_finish(&cb, out, err);
  tm_colbuilder_dispose(&cb);
  return rc;
}

/* Replaces b's nanosecond time columns by their text. */
static int convert(tm_duck_feed *f, tm_batch *b, tm_error *err) {
  size_t n = b->schema.n_cols;
  struct ArrowArray *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  int rc = TM_OK;
  size_t taken = 0;
  for (size_t c = 0; rc == TM_OK && c < n; c++) {
    if (f->time_ns[c]) {
      tm_colview v = tm_batch_col(b, c);
      rc = time_ns_text(&v, b->n_rows, b->schema.cols[c].name, &cols[c], err);
    } else {
      rc = tm_batch_take_column(b, c, &cols[c], err);
    }
    if (rc == TM_OK) taken = c + 1;
  }
  int64_t rows = b->n_rows;
  if (rc == TM_OK) {
    tm_batch conv;
    tm_batch_init(&conv);
    rc = tm_batch_from_arrays(&conv, &b->schema, cols, rows, err);
    taken = 0; /* the batch owns them, or released them */
    tm_batch_release(b);
    if (rc == TM_OK) tm_batch_move(b, &conv);
  }
  for (size_t c = 0; c < taken; c++)
    if (cols[c].release) cols[c].release(&cols[c]);
  tm_free(cols);
  return rc;
}

static int insert_failed(tm_duck_feed *f, tm_error *err) {
  return tm_error_set(err, TM_ERROR, "DuckDB insert: %s",
                      f->failed ? f->insert_error : "it ended before the rows did");
}

int tm_duck_feed_put(tm_duck_feed *f, tm_batch *b, tm_error *err) {
  int rc = TM_OK;
  if (b->schema.n_cols != f->types.n_cols)
    rc = tm_error_set(err, TM_EINVALID, "a batch of %zu columns for a table of %zu",
                      b->schema.n_cols, f->types.n_cols);
  if (rc == TM_OK) rc = check_values(b, err);
  if (rc == TM_OK && f->any_time_ns) rc = convert(f, b, err);
  if (rc < 0) {
    tm_batch_release(b);
    return rc;
  }
  pthread_mutex_lock(&f->mu);
  while (f->count == TM_FEED_DEPTH && !f->done) pthread_cond_wait(&f->cv, &f->mu);
  if (f->done) {
    rc = insert_failed(f, err);
  } else {
    int at = (f->head + f->count) % TM_FEED_DEPTH;
    f->queue[at] = b->array;
    memset(&b->array, 0, sizeof b->array);
    f->count++;
    pthread_cond_broadcast(&f->cv);
  }
  pthread_mutex_unlock(&f->mu);
  tm_batch_release(b);
  return rc;
}

/* Stops the stream (cancel: with an error), waits for the INSERT and frees the feed. */
static int end(tm_duck_feed *f, bool cancel, int64_t *rows_out, tm_error *err) {
  pthread_mutex_lock(&f->mu);
  if (cancel) f->cancelled = true;
  f->ended = true;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  int rc = TM_OK;
  if (!cancel && f->failed) rc = insert_failed(f, err);
  for (int i = 0; i < TM_FEED_DEPTH; i++)
    if (f->queue[i].release) f->queue[i].release(&f->queue[i]);
  if (rows_out) *rows_out = f->rows;
  if (!f->failed && !cancel) {
    /* After a failure the transaction is aborted, and its rollback drops the view. */
    tm_buf sql = TM_BUF_INIT(1 << 16);
    rc = tm_buf_printf(&sql, err, "DROP VIEW %s", tm_buf_cstr(&f->view));
    if (rc == TM_OK) rc = exec(f->con, tm_buf_cstr(&sql), err);
    tm_buf_dispose(&sql);
  }
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  f->schema.release(&f->schema);
  tm_schema_dispose(&f->types);
  tm_free(f->time_ns);
  tm_buf_dispose(&f->insert_sql);
  tm_buf_dispose(&f->view);
  tm_free(f);
  return rc;
}

int tm_duck_feed_finish(tm_duck_feed *f, int64_t *rows_out, tm_error *err) {
  return end(f, false, rows_out, err);
}

void tm_duck_feed_cancel(tm_duck_feed *f) { (void)end(f, true, NULL, NULL); }
