/*
 * ops.c - table operations built on planning, reading, the data writer and
 * commits: append, overwrite, delete (position, equality, copy-on-write)
 * and compaction (format layer). See writer.h.
 *
 * Every operation is one snapshot, committed atomically; a failure before
 * the commit leaves the table as it was (files written so far are
 * unreferenced).
 */
#include <stdlib.h>
#include <string.h>

#include "format/csv/csv.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/read.h"
#include "format/iceberg/writer.h"
#include "format/puffin/puffin.h"
#include "format/parquet/parquet.h"
#include "util/alloc.h"
#include "util/hash.h"

static void result_init(tm_iceberg_op_result *r) {
  memset(r, 0, sizeof *r);
  r->snapshot_id = -1;
}

static int data_writer(tm_iceberg_table *t, const tm_iceberg_op_options *o,
                       tm_iceberg_data_writer **out, tm_error *err) {
  tm_iceberg_data_writer_options wo = TM_ICEBERG_DATA_WRITER_OPTIONS_INIT;
  if (o) wo.target_file_bytes = o->target_file_bytes;
  return tm_iceberg_data_writer_new(out, t, &wo, err);
}

/* Adds every file a writer produced to a commit, counting them. */
static int add_written(tm_iceberg_commit *c, tm_iceberg_data_writer *w,
                       tm_iceberg_op_result *res, tm_error *err) {
  const tm_iceberg_data_file *files;
  size_t n = tm_iceberg_data_writer_files(w, &files);
  for (size_t i = 0; i < n; i++) {
    TM_TRY(tm_iceberg_commit_add_file(c, &files[i], err));
    if (files[i].content == TM_ICEBERG_CONTENT_DATA) {
      res->data_files_added++;
      res->rows_added += files[i].record_count;
    } else {
      res->delete_files_added++;
    }
  }
  return TM_OK;
}

/* ---- input files ---------------------------------------------------------- */

typedef struct input_reader {
  tm_input *in;               /* CSV only (Parquet owns its input) */
  tm_csv_reader *csv;
  tm_parquet_file *pf;
  tm_parquet_scan *scan;
} input_reader;

static int input_next(void *payload, tm_batch *out, tm_error *err) {
  input_reader *r = payload;
  if (r->csv) return tm_csv_reader_next(r->csv, out, err);
  return tm_parquet_scan_next(r->scan, out, err);
}

static void input_close(input_reader *r) {
  tm_csv_reader_free(r->csv);
  tm_input_close(r->in);
  tm_parquet_scan_free(r->scan);
  tm_parquet_close(r->pf);
  memset(r, 0, sizeof *r);
}

static int input_open(tm_iceberg_table *t, const tm_schema *table_schema, const char *path,
                      input_reader *r, tm_error *err) {
  memset(r, 0, sizeof *r);
  tm_iceberg_io *io = tm_iceberg_table_io(t);
  bool is_csv = tm_str_has_suffix(path, ".csv") || tm_str_has_suffix(path, ".CSV");
  bool is_parquet = tm_str_has_suffix(path, ".parquet") || tm_str_has_suffix(path, ".PARQUET");
  if (!is_csv && !is_parquet) {
    return tm_error_set(err, TM_EINVALID, "%s: append reads .parquet and .csv files", path);
  }
  tm_input *in = NULL;
  TM_TRY(io->open(io->payload, path, &in, err));
  int rc;
  if (is_csv) {
    r->in = in;
    tm_text_options to;
    tm_text_options_init(&to);
    rc = tm_csv_reader_open(&r->csv, in, table_schema, &to, err);
  } else {
    /* Nested columns as native arrays, written under the table's type. */
    tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
    so.nested_native = true;
    rc = tm_parquet_open(&r->pf, in, NULL, err);
    if (rc == TM_OK) rc = tm_parquet_scan_new(&r->scan, r->pf, &so, err);
  }
  if (rc < 0) {
    input_close(r);
    if (!strstr(err->message, path)) tm_error_prefix(err, "%s", path);
  }
  return rc;
}

/* Writes every batch of one input file. */
static int write_input(tm_iceberg_table *t, tm_iceberg_data_writer *w, const char *path,
                       tm_error *err) {
  input_reader r;
  TM_TRY(input_open(t, tm_iceberg_data_writer_schema(w), path, &r, err));
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  while ((rc = input_next(&r, &b, err)) == TM_OK) {
    rc = tm_iceberg_data_writer_write(w, &b, err);
    tm_batch_release(&b);
    if (rc < 0) break;
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  input_close(&r);
  if (rc < 0 && !strstr(err->message, path)) tm_error_prefix(err, "%s", path);
  return rc;
}

/* Finishes the writer and commits what it wrote as one append snapshot (none if nothing). */
static int commit_append(tm_iceberg_table *t, tm_iceberg_data_writer *w, tm_iceberg_op_result *res,
                         tm_error *err) {
  TM_TRY(tm_iceberg_data_writer_finish(w, err));
  const tm_iceberg_data_file *files;
  if (tm_iceberg_data_writer_files(w, &files) == 0) return TM_OK;
  tm_iceberg_commit *c = NULL;
  int rc = tm_iceberg_commit_begin(&c, t, "append", err);
  if (rc == TM_OK) rc = add_written(c, w, res, err);
  if (rc == TM_OK) rc = tm_iceberg_commit_finish(c, &res->snapshot_id, err);
  tm_iceberg_commit_free(c);
  return rc;
}

int tm_iceberg_append(tm_iceberg_table *t, tm_iceberg_batch_fn next, void *payload,
                      const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                      tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  tm_iceberg_data_writer *w = NULL;
  tm_batch b;
  tm_batch_init(&b);
  int rc;
  TM_CHECK(data_writer(t, opts, &w, err));
  while ((rc = next(payload, &b, err)) == TM_OK) {
    rc = tm_iceberg_data_writer_write(w, &b, err);
    tm_batch_release(&b);
    if (rc < 0) goto done;
  }
  if (rc != TM_ITEROVER) goto done;
  rc = commit_append(t, w, res, err);
done:
  tm_batch_release(&b);
  tm_iceberg_data_writer_free(w);
  return rc;
}

int tm_iceberg_append_files(tm_iceberg_table *t, const char *const *paths, size_t n_paths,
                            const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                            tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  tm_iceberg_data_writer *w = NULL;
  int rc;
  TM_CHECK(data_writer(t, opts, &w, err));
  for (size_t i = 0; i < n_paths; i++) TM_CHECK(write_input(t, w, paths[i], err));
  rc = commit_append(t, w, res, err);
done:
  tm_iceberg_data_writer_free(w);
  return rc;
}

/* ---- reading one task ------------------------------------------------------- */

/* Opens the rows of one scan task (deletes applied) with all columns. */
static int task_rows(tm_iceberg_table *t, const tm_iceberg_scan *scan,
                     const tm_iceberg_scan_task *task, bool positions, tm_iceberg_rows **out,
                     tm_error *err) {
  tm_iceberg_scan one = *scan;
  one.tasks = (tm_iceberg_scan_task *)task;
  one.n_tasks = 1;
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  ro.with_positions = positions;
  return tm_iceberg_rows_open(out, t, &one, &ro, err);
}

/* The rows of b matching where into *match (bits), counting them. */
static int match_rows(const tm_predicate *where, const tm_batch *b, uint8_t **match,
                      int64_t *n_match, tm_error *err) {
  size_t nb = (size_t)(b->n_rows + 7) / 8;
  *match = tm_calloc(nb ? nb : 1, 1);
  if (!*match) return tm_error_nomem(err);
  return tm_predicate_eval(where, b, *match, n_match, err);
}

/*
 * Rewrites a task's live rows that do not match where into w (copy-on-write).
 * *n_removed counts the matching rows; *touched is false when none match.
 */
static int rewrite_without(tm_iceberg_table *t, const tm_iceberg_scan *scan,
                           const tm_iceberg_scan_task *task, const tm_predicate *where,
                           tm_iceberg_data_writer *w, int64_t *n_removed, bool *touched,
                           tm_error *err) {
  tm_iceberg_rows *r = NULL;
  tm_batch b, kept;
  tm_batch_init(&b);
  tm_batch_init(&kept);
  uint8_t *match = NULL;
  int rc;
  /* First pass: does anything match? (Most files of a selective filter do not.) */
  *touched = false;
  *n_removed = 0;
  TM_CHECK(task_rows(t, scan, task, false, &r, err));
  while ((rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
    int64_t n = 0;
    rc = match_rows(where, &b, &match, &n, err);
    tm_free(match);
    match = NULL;
    tm_batch_release(&b);
    if (rc < 0) goto done;
    *n_removed += n;
  }
  if (rc != TM_ITEROVER) goto done;
  rc = TM_OK;
  tm_iceberg_rows_free(r);
  r = NULL;
  if (*n_removed == 0) goto done;
  *touched = true;
  TM_CHECK(task_rows(t, scan, task, false, &r, err));
  while ((rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
    int64_t n = 0;
    rc = match_rows(where, &b, &match, &n, err);
    if (rc < 0) goto done;
    for (int64_t i = 0; i < b.n_rows; i++) {
      if (tm_bit_get(match, i)) {
        tm_bit_clear(match, i);
      } else {
        tm_bit_set(match, i);
      }
    }
    rc = tm_batch_filter(&b, match, &kept, err);
    tm_free(match);
    match = NULL;
    tm_batch_release(&b);
    if (rc == TM_OK) rc = tm_iceberg_data_writer_write(w, &kept, err);
    tm_batch_release(&kept);
    if (rc < 0) goto done;
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
done:
  tm_free(match);
  tm_batch_release(&b);
  tm_batch_release(&kept);
  tm_iceberg_rows_free(r);
  return rc;
}

static int plan_current(tm_iceberg_table *t, const tm_predicate *where, tm_iceberg_scan **out,
                        tm_error *err) {
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.filter = where;
  return tm_iceberg_plan_scan(t, &so, out, err);
}

/* ---- deletion vectors (format v3) ------------------------------------------------ */

/* A data file's new deletion vector: every position deleted after this commit. */
typedef struct dv_item {
  const tm_iceberg_scan_task *task;
  int64_t *pos;
  size_t n;
} dv_item;

typedef struct dv_list {
  dv_item *items;
  size_t n;
} dv_list;

static void dv_list_dispose(dv_list *l) {
  for (size_t i = 0; i < l->n; i++) tm_free(l->items[i].pos);
  tm_free(l->items);
}

/* The deletion vector the scan attached to a task, or NULL. */
static const tm_iceberg_data_file *task_dv(const tm_iceberg_scan_task *task) {
  for (size_t i = 0; i < task->n_deletes; i++) {
    if (tm_iceberg_is_deletion_vector(task->deletes[i])) return task->deletes[i];
  }
  return NULL;
}

/* Copy-on-write removal of matching rows, plus optional input files. */
static int cow(tm_iceberg_table *t, const char *op, const tm_predicate *where,
               const char *const *paths, size_t n_paths, const tm_iceberg_op_options *opts,
               tm_iceberg_op_result *res, tm_error *err) {
  tm_iceberg_scan *scan = NULL;
  tm_iceberg_data_writer *w = NULL;
  tm_iceberg_commit *c = NULL;
  bool *remove = NULL;
  int rc;
  TM_CHECK(plan_current(t, where, &scan, err));
  TM_CHECK(data_writer(t, opts, &w, err));
  remove = tm_calloc(scan->n_tasks ? scan->n_tasks : 1, sizeof *remove);
  if (!remove) {
    rc = tm_error_nomem(err);
    goto done;
  }
  size_t n_remove = 0;
  for (size_t i = 0; i < scan->n_tasks; i++) {
    int64_t removed = 0;
    TM_CHECK(rewrite_without(t, scan, &scan->tasks[i], where, w, &removed, &remove[i], err));
    if (remove[i]) n_remove++;
    res->rows_deleted += removed;
  }
  for (size_t i = 0; i < n_paths; i++) TM_CHECK(write_input(t, w, paths[i], err));
  TM_CHECK(tm_iceberg_data_writer_finish(w, err));
  const tm_iceberg_data_file *files;
  if (n_remove == 0 && tm_iceberg_data_writer_files(w, &files) == 0) goto done;
  TM_CHECK(tm_iceberg_commit_begin(&c, t, op, err));
  for (size_t i = 0; i < scan->n_tasks; i++) {
    if (!remove[i]) continue;
    TM_CHECK(tm_iceberg_commit_remove_file(c, scan->tasks[i].file->path, err));
    const tm_iceberg_data_file *dv = task_dv(&scan->tasks[i]);
    if (dv) TM_CHECK(tm_iceberg_commit_remove_dv(c, dv->path, dv->content_offset, err));
    res->files_removed++;
  }
  TM_CHECK(add_written(c, w, res, err));
  TM_CHECK(tm_iceberg_commit_finish(c, &res->snapshot_id, err));
done:
  tm_free(remove);
  tm_iceberg_commit_free(c);
  tm_iceberg_data_writer_free(w);
  tm_iceberg_scan_free(scan);
  return rc;
}

int tm_iceberg_overwrite(tm_iceberg_table *t, const tm_predicate *where,
                         const char *const *paths, size_t n_paths,
                         const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                         tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  return cow(t, "overwrite", where, paths, n_paths, opts, res, err);
}

/* ---- merge-on-read deletes ---------------------------------------------------- */

/* Delete rows gathered for one (spec, partition) of data files. */
typedef struct delete_group {
  const tm_iceberg_data_file *sample; /* a data file of the group: spec and partition */
  tm_batch_builder rows;              /* pos: file_path, pos; eq: the equality columns */
  int64_t n;
} delete_group;

/* The delete files one operation writes, grouped by partition (groups_init, groups_dispose). */
typedef struct delete_groups {
  tm_map by_key;   /* partition key -> delete_group* */
  tm_schema schema; /* the delete files' columns */
  int32_t *eq_ids; /* owned: equality deletes' field ids, one per schema column (eq_resolve) */
  size_t *eq_idx;  /* owned: scratch, each equality column's index in a batch read */
} delete_groups;

static void group_free(void *p) {
  delete_group *g = p;
  if (!g) return;
  tm_batch_builder_dispose(&g->rows);
  tm_free(g);
}

static void groups_init(delete_groups *gs) {
  memset(gs, 0, sizeof *gs);
  tm_map_init(&gs->by_key);
  tm_schema_init(&gs->schema);
}

static void groups_dispose(delete_groups *gs) {
  tm_map_dispose(&gs->by_key, group_free);
  tm_schema_dispose(&gs->schema);
  tm_free(gs->eq_ids);
  tm_free(gs->eq_idx);
}

static int group_for(delete_groups *gs, const tm_iceberg_data_file *f, delete_group **out,
                     tm_error *err) {
  tm_buf key = TM_BUF_INIT(1 << 20);
  int rc = tm_iceberg__partition_key(f, &key, err);
  delete_group *g = rc == TM_OK ? tm_map_get(&gs->by_key, key.ptr, key.len, NULL) : NULL;
  if (rc == TM_OK && !g) {
    g = tm_calloc(1, sizeof *g);
    if (!g) {
      rc = tm_error_nomem(err);
    } else {
      g->sample = f;
      rc = tm_batch_builder_init(&g->rows, &gs->schema, err);
      if (rc == TM_OK) rc = tm_map_put(&gs->by_key, key.ptr, key.len, g, NULL, err);
      if (rc < 0) group_free(g);
    }
  }
  tm_buf_dispose(&key);
  if (rc == TM_OK) *out = g;
  return rc;
}

static int cmp_pos_rows(const void *a, const void *b, void *arg) {
  const tm_batch *bt = arg;
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  tm_colview p = tm_batch_col(bt, 0), q = tm_batch_col(bt, 1);
  tm_strview sx = tm_colview_bytes(&p, x), sy = tm_colview_bytes(&p, y);
  size_t n = sx.len < sy.len ? sx.len : sy.len;
  int c = memcmp(sx.ptr, sy.ptr, n);
  if (c != 0) return c;
  if (sx.len != sy.len) return sx.len < sy.len ? -1 : 1;
  int64_t px = tm_colview_int(&q, x), py = tm_colview_int(&q, y);
  return px < py ? -1 : px > py;
}

/* Writes one delete file per group and adds it to the commit. */
static int write_groups(tm_iceberg_table *t, delete_groups *gs, int content,
                        const int32_t *eq_ids, size_t n_eq, tm_iceberg_commit *c,
                        tm_iceberg_op_result *res, tm_error *err) {
  size_t pos = 0;
  const char *k;
  void *v;
  while (tm_map_next(&gs->by_key, &pos, &k, &v)) {
    delete_group *g = v;
    if (g->n == 0) continue;
    tm_batch b, sorted;
    tm_batch_init(&b);
    tm_batch_init(&sorted);
    tm_iceberg_data_writer *w = NULL;
    int64_t *order = NULL;
    int rc = tm_batch_builder_finish(&g->rows, &b, err);
    if (rc == TM_OK && content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
      /* Position delete files are sorted by file_path, then pos. */
      order = tm_calloc((size_t)b.n_rows, sizeof *order);
      if (!order) rc = tm_error_nomem(err);
      for (int64_t i = 0; rc == TM_OK && i < b.n_rows; i++) order[i] = i;
      if (rc == TM_OK) qsort_r(order, (size_t)b.n_rows, sizeof *order, cmp_pos_rows, &b);
      tm_batch_builder bb;
      if (rc == TM_OK) rc = tm_batch_builder_init(&bb, &b.schema, err);
      for (int64_t i = 0; rc == TM_OK && i < b.n_rows; i++) {
        for (size_t col = 0; rc == TM_OK && col < 2; col++) {
          tm_colview cv = tm_batch_col(&b, col);
          rc = tm_colbuilder_append_range(tm_batch_builder_col(&bb, col), &cv, order[i], 1, err);
        }
      }
      if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, &sorted, err);
      tm_batch_builder_dispose(&bb);
    }
    tm_iceberg_data_writer_options wo = TM_ICEBERG_DATA_WRITER_OPTIONS_INIT;
    wo.content = content;
    wo.equality_ids = eq_ids;
    wo.n_equality_ids = n_eq;
    wo.partition = g->sample->partition;
    wo.spec_id = g->sample->spec_id;
    if (rc == TM_OK) rc = tm_iceberg_data_writer_new(&w, t, &wo, err);
    if (rc == TM_OK) rc = tm_iceberg_data_writer_write(w, sorted.array.release ? &sorted : &b, err);
    if (rc == TM_OK) rc = tm_iceberg_data_writer_finish(w, err);
    if (rc == TM_OK) rc = add_written(c, w, res, err);
    tm_iceberg_data_writer_free(w);
    tm_free(order);
    tm_batch_release(&b);
    tm_batch_release(&sorted);
    if (rc < 0) return rc;
  }
  return TM_OK;
}

/*
 * The positions of a task's data file that are deleted once the rows in
 * `kept` (live rows not matching, by position; kept[p] = 1) are all that
 * remain: every position of [0, record_count) not kept. This folds the old
 * deletion vector, position deletes and equality deletes of the file into
 * the new vector, as the spec requires (one DV per data file).
 */
static int dv_positions(const tm_iceberg_scan_task *task, const uint8_t *kept, dv_list *l,
                        tm_error *err) {
  int64_t rows = task->file->record_count;
  size_t n = 0;
  for (int64_t p = 0; p < rows; p++) n += !kept[p];
  int64_t *pos = tm_calloc(n ? n : 1, sizeof *pos);
  dv_item *items = tm_reallocarray(l->items, l->n + 1, sizeof *items);
  if (items) l->items = items;
  if (!pos || !items) {
    tm_free(pos);
    return tm_error_nomem(err);
  }
  size_t k = 0;
  for (int64_t p = 0; p < rows; p++) {
    if (!kept[p]) pos[k++] = p;
  }
  l->items[l->n].task = task;
  l->items[l->n].pos = pos;
  l->items[l->n].n = n;
  l->n++;
  return TM_OK;
}

/*
 * Writes one Puffin file under data/ holding a deletion-vector-v1 blob per
 * item, adds a delete entry per blob and removes the vectors they replace.
 */
static int write_dvs(tm_iceberg_table *t, const dv_list *l, tm_iceberg_commit *c,
                     tm_iceberg_op_result *res, tm_error *err) {
  tm_puffin_writer w;
  tm_buf blob = TM_BUF_INIT(TM_PUFFIN_BLOB_MAX);
  tm_arena a;
  tm_arena_init(&a, (size_t)1 << 20);
  int64_t *offs = tm_calloc(l->n ? l->n : 1, 2 * sizeof *offs);
  int rc;
  if (!offs) {
    tm_arena_dispose(&a);
    return tm_error_nomem(err);
  }
  TM_CHECK(tm_puffin_writer_init(&w, err));
  for (size_t i = 0; i < l->n; i++) {
    const dv_item *it = &l->items[i];
    tm_buf_clear(&blob);
    TM_CHECK(tm_dv_encode(it->pos, it->n, &blob, err));
    char card[32];
    snprintf(card, sizeof card, "%zu", it->n);
    const char *keys[] = {"referenced-data-file", "cardinality"};
    const char *vals[] = {it->task->file->path, card};
    /* The DV blob's field is the reserved _pos column; snapshot id and
     * sequence number are unknown when the file is written (-1, Puffin spec). */
    int32_t field = 2147483545;
    TM_CHECK(tm_puffin_writer_add(&w, TM_PUFFIN_DV_TYPE, &field, 1, -1, -1, keys, vals, 2,
                                  blob.ptr, blob.len, &offs[2 * i], &offs[2 * i + 1], err));
  }
  TM_CHECK(tm_puffin_writer_finish(&w, "tidemark", err));
  char uuid[37], rel[96];
  tm_iceberg_uuid(uuid);
  snprintf(rel, sizeof rel, "data/%s-deletes.puffin", uuid);
  const char *path = tm_iceberg__location_path(&a, t, rel, err);
  if (!path) {
    rc = err->code;
    goto done;
  }
  TM_CHECK(tm_iceberg__write_file(t, path, w.out.ptr, w.out.len, true, err));
  for (size_t i = 0; i < l->n; i++) {
    const dv_item *it = &l->items[i];
    const tm_iceberg_data_file *old = task_dv(it->task);
    if (old) TM_CHECK(tm_iceberg_commit_remove_dv(c, old->path, old->content_offset, err));
    tm_iceberg_data_file df;
    memset(&df, 0, sizeof df);
    df.content = TM_ICEBERG_CONTENT_POSITION_DELETES;
    df.path = path;
    df.format = "PUFFIN";
    df.spec_id = it->task->file->spec_id;
    df.partition = it->task->file->partition;
    df.n_partition = it->task->file->n_partition;
    df.record_count = (int64_t)it->n;
    df.file_size = (int64_t)w.out.len;
    df.sort_order_id = -1;
    df.referenced_data_file = it->task->file->path;
    df.has_content_offset = true;
    df.content_offset = offs[2 * i];
    df.content_size = offs[2 * i + 1];
    TM_CHECK(tm_iceberg_commit_add_file(c, &df, err));
    res->delete_files_added++;
  }
done:
  tm_free(offs);
  tm_buf_dispose(&blob);
  tm_puffin_writer_dispose(&w);
  tm_arena_dispose(&a);
  return rc;
}

/*
 * Resolves equality delete columns by name: their field ids into
 * gs->eq_ids, room for their batch indexes (gs->eq_idx), and the delete
 * files' columns into gs->schema.
 */
static int eq_resolve(const tm_iceberg_schema *schema, const char *const *cols, size_t n,
                      delete_groups *gs, tm_error *err) {
  if (n == 0) return tm_error_set(err, TM_EINVALID, "equality deletes need columns");
  int32_t **ids = &gs->eq_ids;
  tm_schema *del_schema = &gs->schema;
  *ids = tm_calloc(n, sizeof **ids);
  gs->eq_idx = tm_calloc(n, sizeof *gs->eq_idx);
  if (!*ids || !gs->eq_idx) return tm_error_nomem(err);
  for (size_t i = 0; i < n; i++) {
    const tm_iceberg_field *f = tm_iceberg_schema_find_name(schema, cols[i]);
    if (f && !tm_iceberg_type_is_primitive(f->type)) {
      return tm_error_set(err, TM_EINVALID,
                          "equality column %s is a %s (equality deletes are on primitive columns)",
                          cols[i], tm_iceberg_type_name(f->type->id));
    }
    if (!f) {
      return tm_error_set(err, TM_EINVALID, "equality column %s is not a column of the table",
                          cols[i]);
    }
    (*ids)[i] = f->id;
    tm_type ty;
    TM_TRY(tm_iceberg_type_to_tm(f->type, &ty, err));
    TM_TRY(tm_schema_add(del_schema, f->name, ty, !f->required, f->id, err));
  }
  return TM_OK;
}

int tm_iceberg_delete_where(tm_iceberg_table *t, const tm_predicate *where,
                            tm_iceberg_delete_mode mode, const char *const *eq_columns,
                            size_t n_eq_columns, const tm_iceberg_op_options *opts,
                            tm_iceberg_op_result *res, tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  if (mode == TM_ICEBERG_DELETE_COPY_ON_WRITE) return cow(t, "overwrite", where, NULL, 0, opts, res, err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_schema *schema = tm_iceberg_metadata_current_schema(m);
  if (m->format_version < 2) {
    return tm_error_set(err, TM_EUNSUPPORTED, "delete files need a format v2 table");
  }
  tm_iceberg_scan *scan = NULL;
  tm_iceberg_commit *c = NULL;
  delete_groups gs;
  groups_init(&gs);
  bool *drop = NULL;
  int rc;
  bool equality = mode == TM_ICEBERG_DELETE_EQUALITY;
  /* v3 tables take deletion vectors: position delete files must not be added. */
  bool dvs = !equality && m->format_version >= 3;
  dv_list dl = {NULL, 0};
  uint8_t *kept = NULL;
  if (equality) {
    TM_CHECK(eq_resolve(schema, eq_columns, n_eq_columns, &gs, err));
  } else {
    TM_CHECK(tm_schema_add(&gs.schema, "file_path", tm_type_of(TM_TYPE_UTF8), false, -1, err));
    TM_CHECK(tm_schema_add(&gs.schema, "pos", tm_type_of(TM_TYPE_INT64), false, -1, err));
  }
  TM_CHECK(plan_current(t, where, &scan, err));
  drop = tm_calloc(scan->n_tasks ? scan->n_tasks : 1, sizeof *drop);
  if (!drop) {
    rc = tm_error_nomem(err);
    goto done;
  }
  size_t n_drop = 0;
  for (size_t ti = 0; ti < scan->n_tasks; ti++) {
    const tm_iceberg_scan_task *task = &scan->tasks[ti];
    tm_iceberg_rows *r = NULL;
    tm_batch_builder tb; /* this file's delete rows, kept unless the file is dropped */
    TM_CHECK(tm_batch_builder_init(&tb, &gs.schema, err));
    rc = task_rows(t, scan, task, true, &r, err);
    tm_batch b, rows;
    tm_batch_init(&b);
    tm_batch_init(&rows);
    int64_t live = 0, matched = 0, n_rows = task->file->record_count;
    if (dvs && rc == TM_OK) {
      if (n_rows < 0 || (uint64_t)n_rows > TM_DV_MAX_POSITIONS) {
        rc = tm_error_set(err, TM_ETOOLARGE, "%s: %lld rows is past the deletion vector limit",
                          task->file->path, (long long)n_rows);
      } else {
        tm_free(kept);
        kept = tm_calloc(n_rows ? (size_t)n_rows : 1, 1);
        if (!kept) rc = tm_error_nomem(err);
      }
    }
    while (rc == TM_OK && (rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
      uint8_t *match = NULL;
      int64_t n = 0;
      rc = match_rows(where, &b, &match, &n, err);
      live += b.n_rows;
      matched += n;
      if (dvs && rc == TM_OK) {
        tm_colview pos = tm_batch_col(&b, b.schema.n_cols - 1);
        for (int64_t i = 0; rc == TM_OK && i < b.n_rows; i++) {
          int64_t p = tm_colview_int(&pos, i);
          if (p < 0 || p >= n_rows) {
            rc = TM_CORRUPT(err, "%s: row position %lld past its record_count %lld",
                            task->file->path, (long long)p, (long long)n_rows);
          } else {
            kept[p] = !tm_bit_get(match, i);
          }
        }
      }
      if (equality && rc == TM_OK) {
        for (size_t k = 0; k < n_eq_columns; k++) {
          int ix = tm_schema_find(&b.schema, gs.schema.cols[k].name);
          gs.eq_idx[k] = (size_t)(ix < 0 ? 0 : ix);
        }
      }
      for (int64_t i = 0; rc == TM_OK && i < b.n_rows; i++) {
        if (!tm_bit_get(match, i)) continue;
        if (equality) {
          for (size_t k = 0; rc == TM_OK && k < n_eq_columns; k++) {
            tm_colview cv = tm_batch_col(&b, gs.eq_idx[k]);
            rc = tm_colbuilder_append_range(tm_batch_builder_col(&tb, k), &cv, i, 1, err);
          }
        } else {
          tm_colview pos = tm_batch_col(&b, b.schema.n_cols - 1);
          rc = tm_colbuilder_append_bytes(tm_batch_builder_col(&tb, 0), task->file->path,
                                          strlen(task->file->path), err);
          if (rc == TM_OK)
            rc = tm_colbuilder_append_int(tm_batch_builder_col(&tb, 1), tm_colview_int(&pos, i),
                                          err);
        }
      }
      tm_free(match);
      tm_batch_release(&b);
    }
    tm_iceberg_rows_free(r);
    if (rc == TM_ITEROVER) rc = TM_OK;
    if (rc == TM_OK) rc = tm_batch_builder_finish(&tb, &rows, err);
    tm_batch_builder_dispose(&tb);
    if (rc == TM_OK && matched > 0) {
      res->rows_deleted += matched;
      if (matched == live && !equality) {
        /* Every live row goes: drop the file instead of deleting each row. */
        drop[ti] = true;
        n_drop++;
      } else if (dvs) {
        rc = dv_positions(task, kept, &dl, err);
      } else {
        delete_group *g = NULL;
        rc = group_for(&gs, task->file, &g, err);
        for (size_t k = 0; rc == TM_OK && k < gs.schema.n_cols; k++) {
          tm_colview cv = tm_batch_col(&rows, k);
          rc = tm_colbuilder_append_range(tm_batch_builder_col(&g->rows, k), &cv, 0, rows.n_rows,
                                          err);
        }
        if (rc == TM_OK) g->n += rows.n_rows;
      }
    }
    tm_batch_release(&rows);
    if (rc < 0) goto done;
  }
  if (res->rows_deleted == 0) goto done;
  TM_CHECK(tm_iceberg_commit_begin(&c, t, "delete", err));
  for (size_t ti = 0; ti < scan->n_tasks; ti++) {
    if (!drop[ti]) continue;
    TM_CHECK(tm_iceberg_commit_remove_file(c, scan->tasks[ti].file->path, err));
    res->files_removed++;
    /* A removed data file's deletion vector goes with it (spec). */
    const tm_iceberg_data_file *old = task_dv(&scan->tasks[ti]);
    if (old) TM_CHECK(tm_iceberg_commit_remove_dv(c, old->path, old->content_offset, err));
  }
  if (dl.n) TM_CHECK(write_dvs(t, &dl, c, res, err));
  TM_CHECK(write_groups(t, &gs,
                        equality ? TM_ICEBERG_CONTENT_EQUALITY_DELETES
                                 : TM_ICEBERG_CONTENT_POSITION_DELETES,
                        gs.eq_ids, n_eq_columns, c, res, err));
  TM_CHECK(tm_iceberg_commit_finish(c, &res->snapshot_id, err));
done:
  dv_list_dispose(&dl);
  tm_free(kept);
  tm_free(drop);
  groups_dispose(&gs);
  tm_iceberg_commit_free(c);
  tm_iceberg_scan_free(scan);
  return rc;
}

/* ---- upsert ------------------------------------------------------------------------ */

int tm_iceberg_upsert_files(tm_iceberg_table *t, const char *const *paths, size_t n_paths,
                            const char *const *eq_columns, size_t n_eq_columns,
                            const tm_iceberg_op_options *opts, tm_iceberg_op_result *res,
                            tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  const tm_iceberg_schema *schema = tm_iceberg_metadata_current_schema(m);
  if (m->format_version < 2) {
    return tm_error_set(err, TM_EUNSUPPORTED, "upsert writes equality deletes: a format v2 table");
  }
  tm_iceberg_data_writer *w = NULL;
  tm_iceberg_commit *c = NULL;
  delete_groups gs;
  groups_init(&gs);
  int rc;
  TM_CHECK(eq_resolve(schema, eq_columns, n_eq_columns, &gs, err));
  /* A key's older row must be in the partition its new row goes to: the
   * delete file of a partition applies only to that partition's files. */
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, m->default_spec_id);
  for (size_t i = 0; spec && i < spec->n_fields; i++) {
    bool keyed = false;
    for (size_t k = 0; k < n_eq_columns; k++)
      keyed = keyed || gs.eq_ids[k] == spec->fields[i].source_id;
    if (!keyed) {
      const tm_iceberg_field *f = tm_iceberg_schema_find_id(schema, spec->fields[i].source_id);
      rc = tm_error_set(err, TM_EINVALID,
                        "upsert: partition source column %s (of partition field %s) must be one "
                        "of the --equality columns",
                        f ? f->name : "?", spec->fields[i].name);
      goto done;
    }
  }
  TM_CHECK(data_writer(t, opts, &w, err));
  for (size_t i = 0; i < n_paths; i++) TM_CHECK(write_input(t, w, paths[i], err));
  TM_CHECK(tm_iceberg_data_writer_finish(w, err));
  const tm_iceberg_data_file *files;
  size_t n_files = tm_iceberg_data_writer_files(w, &files);
  if (n_files == 0) goto done;
  /* The key values of the rows written, per written file's partition. */
  for (size_t fi = 0; fi < n_files; fi++) {
    const tm_iceberg_data_file *one = &files[fi];
    tm_iceberg_rows *r = NULL;
    delete_group *g = NULL;
    TM_CHECK(group_for(&gs, one, &g, err));
    TM_CHECK(tm_iceberg_rows_open_files(&r, t, schema, &one, 1, NULL, err));
    tm_batch b;
    tm_batch_init(&b);
    while ((rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
      for (size_t k = 0; rc == TM_OK && k < n_eq_columns; k++) {
        int ix = tm_schema_find(&b.schema, gs.schema.cols[k].name);
        if (ix < 0) {
          rc = TM_CORRUPT(err, "%s: column %s missing on reading back", one->path,
                          gs.schema.cols[k].name);
          break;
        }
        tm_colview cv = tm_batch_col(&b, (size_t)ix);
        rc = tm_colbuilder_append_range(tm_batch_builder_col(&g->rows, k), &cv, 0, b.n_rows, err);
      }
      if (rc == TM_OK) g->n += b.n_rows;
      tm_batch_release(&b);
    }
    tm_iceberg_rows_free(r);
    if (rc != TM_ITEROVER) goto done;
    rc = TM_OK;
  }
  TM_CHECK(tm_iceberg_commit_begin(&c, t, "overwrite", err));
  TM_CHECK(add_written(c, w, res, err));
  TM_CHECK(write_groups(t, &gs, TM_ICEBERG_CONTENT_EQUALITY_DELETES, gs.eq_ids, n_eq_columns, c,
                        res, err));
  TM_CHECK(tm_iceberg_commit_finish(c, &res->snapshot_id, err));
done:
  groups_dispose(&gs);
  tm_iceberg_commit_free(c);
  tm_iceberg_data_writer_free(w);
  return rc;
}

/* ---- compaction ------------------------------------------------------------------ */

int tm_iceberg_compact(tm_iceberg_table *t, const tm_iceberg_op_options *opts,
                       tm_iceberg_op_result *res, tm_error *err) {
  tm_iceberg_op_result local;
  if (!res) res = &local;
  result_init(res);
  tm_iceberg_scan *scan = NULL;
  tm_iceberg_data_writer *w = NULL;
  tm_iceberg_commit *c = NULL;
  tm_iceberg_rows *r = NULL;
  tm_map parts;
  tm_map_init(&parts);
  tm_buf key = TM_BUF_INIT(1 << 20);
  int rc;
  TM_CHECK(plan_current(t, NULL, &scan, err));
  /* Anything to do: a partition with several files, or any live delete file. */
  bool deletes = false, several = false;
  for (size_t i = 0; i < scan->n_manifests; i++) {
    const tm_iceberg_manifest *man = scan->manifests[i];
    for (size_t k = 0; man->content == 1 && k < man->n_entries; k++)
      deletes = deletes || man->entries[k].status != TM_ICEBERG_DELETED;
  }
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  for (size_t i = 0; i < scan->n_tasks && !several; i++) {
    const tm_iceberg_data_file *f = scan->tasks[i].file;
    tm_buf_clear(&key);
    TM_CHECK(tm_iceberg__partition_key(f, &key, err));
    bool found = false;
    tm_map_get(&parts, key.ptr, key.len, &found);
    several = found || f->spec_id != m->default_spec_id;
    if (!found) TM_CHECK(tm_map_put(&parts, key.ptr, key.len, NULL, NULL, err));
  }
  if (!deletes && !several) goto done;
  TM_CHECK(data_writer(t, opts, &w, err));
  TM_CHECK(tm_iceberg_rows_open(&r, t, scan, NULL, err));
  tm_batch b;
  tm_batch_init(&b);
  while ((rc = tm_iceberg_rows_next(r, &b, err)) == TM_OK) {
    rc = tm_iceberg_data_writer_write(w, &b, err);
    tm_batch_release(&b);
    if (rc < 0) goto done;
  }
  if (rc != TM_ITEROVER) goto done;
  TM_CHECK(tm_iceberg_data_writer_finish(w, err));
  TM_CHECK(tm_iceberg_commit_begin(&c, t, "replace", err));
  for (size_t i = 0; i < scan->n_manifests; i++) {
    const tm_iceberg_manifest *man = scan->manifests[i];
    for (size_t k = 0; k < man->n_entries; k++) {
      const tm_iceberg_data_file *f = &man->entries[k];
      if (f->status == TM_ICEBERG_DELETED) continue;
      if (tm_iceberg_is_deletion_vector(f)) {
        TM_CHECK(tm_iceberg_commit_remove_dv(c, f->path, f->content_offset, err));
      } else {
        TM_CHECK(tm_iceberg_commit_remove_file(c, f->path, err));
      }
      res->files_removed++;
    }
  }
  TM_CHECK(add_written(c, w, res, err));
  TM_CHECK(tm_iceberg_commit_finish(c, &res->snapshot_id, err));
done:
  tm_buf_dispose(&key);
  tm_map_dispose(&parts, NULL);
  tm_iceberg_rows_free(r);
  tm_iceberg_commit_free(c);
  tm_iceberg_data_writer_free(w);
  tm_iceberg_scan_free(scan);
  return rc;
}
