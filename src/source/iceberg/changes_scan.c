/*
 * changes_scan.c - the TM_SCAN_CHANGES scan of an Iceberg table (source
 * layer; SPEC E1-E4, docs/REFRESH.md "Changes"). See source.h for the
 * batches it yields.
 *
 * From tm_iceberg_plan_changes (the data files that differ between the
 * saved snapshot and the target, with their delete files at each):
 *   1. removed files: one [seq, file] row each (the engine deletes their
 *      rows by provenance, without reading them);
 *   2. changed files (delete files added or replaced): the positions live
 *      before and not after become [seq, file, pos] rows. With position
 *      deletes and deletion vectors only, they come from the delete files
 *      alone (diff_delete_files); with equality deletes on either side the
 *      file is read twice in step, one column and row positions, once with
 *      the old deletes and once with the new. A position live after but
 *      not before (a delete file was rewritten smaller) deletes the whole
 *      file and inserts it again;
 *   3. added files (and those reinserted): their rows with the target's
 *      deletes applied, with seq, file and pos appended.
 * Cost: the manifests of both snapshots, the delete files of each changed
 * file (one column of it too where equality deletes apply),
 * the rows of each added file; never a file that did not change.
 */
#include <stdlib.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "source/iceberg/changes_scan.h"
#include "util/alloc.h"

#define DELETE_BATCH_ROWS 65536

typedef enum phase { PH_REMOVED = 0, PH_CHANGED, PH_INSERT, PH_DONE } phase;

struct tm_changes_scan {
  const tm_iceberg_table *t;
  tm_iceberg_changes *c;
  const char *const *names;     /* the dataset's columns (borrowed) */
  size_t n_names;
  bool nested_as_json;
  int64_t batch_rows;
  phase ph;
  size_t i;                     /* next item of the phase */
  const tm_iceberg_scan_task **inserts; /* added files, then reinserted changed ones */
  size_t n_inserts;
  int64_t *pos;                 /* deleted positions of the current changed file */
  size_t n_pos, cap_pos, emit_at;
  const tm_iceberg_scan_task *pos_task;
  tm_iceberg_rows *rows;        /* reader of the current insert */
  const tm_iceberg_scan_task *rows_task;
  tm_schema del_schema[2];      /* [seq, file], [seq, file, pos] */
  tm_schema row_schema;         /* built from the first row batch */
  bool have_row_schema;
  tm_changes_stats st;
};

static void add_stats(tm_changes_scan *cs, const tm_iceberg_rows *r) {
  tm_iceberg_read_stats rs;
  tm_iceberg_rows_stats(r, &rs);
  cs->st.files_read += rs.data_files_read;
  cs->st.delete_files_read += rs.delete_files_read;
  cs->st.row_groups_read += rs.row_groups_read;
  cs->st.row_groups_skipped += rs.row_groups_skipped;
  cs->st.rows_read += rs.rows_read;
  cs->st.bytes_read += rs.bytes_read;
}

static void free_rows(tm_changes_scan *cs, tm_iceberg_rows **r) {
  if (!*r) return;
  add_stats(cs, *r);
  tm_iceberg_rows_free(*r);
  *r = NULL;
}

/* A reader of one task (its own delete files) with row positions; cols NULL: every column. */
static int open_task(tm_changes_scan *cs, const tm_iceberg_scan *owner, const tm_iceberg_scan_task *task,
                     const char *const *cols, size_t n_cols, tm_iceberg_rows **out, tm_error *err) {
  tm_iceberg_scan one;
  memset(&one, 0, sizeof one);
  one.snapshot = owner->snapshot;
  one.schema = owner->schema;
  one.tasks = (tm_iceberg_scan_task *)task;
  one.n_tasks = 1;
  tm_iceberg_read_options o = TM_ICEBERG_READ_OPTIONS_INIT;
  o.columns = cols;
  o.n_columns = n_cols;
  o.with_positions = true;
  o.batch_rows = cs->batch_rows;
  o.nested_as_json = cs->nested_as_json;
  return tm_iceberg_rows_open(out, cs->t, &one, &o, err);
}

static int cmp_insert(const void *a, const void *b) {
  const tm_iceberg_scan_task *x = *(const tm_iceberg_scan_task *const *)a;
  const tm_iceberg_scan_task *y = *(const tm_iceberg_scan_task *const *)b;
  int64_t sx = x->file->sequence_number, sy = y->file->sequence_number;
  if (sx != sy) return sx < sy ? -1 : 1;
  return strcmp(x->key, y->key);
}

int tm_changes_scan_open(tm_changes_scan **out, const tm_iceberg_table *t, bool has_from,
                         int64_t from_id, int64_t to_id, const char *const *names, size_t n_names,
                         bool nested_as_json, int64_t batch_rows, tm_error *err) {
  *out = NULL;
  tm_changes_scan *cs = tm_calloc(1, sizeof *cs);
  if (!cs) return tm_error_nomem(err);
  cs->t = t;
  cs->names = names;
  cs->n_names = n_names;
  cs->nested_as_json = nested_as_json;
  cs->batch_rows = batch_rows;
  tm_schema_init(&cs->del_schema[0]);
  tm_schema_init(&cs->del_schema[1]);
  tm_schema_init(&cs->row_schema);
  tm_type i64 = tm_type_of(TM_TYPE_INT64);
  int rc = tm_iceberg_plan_changes(t, has_from ? from_id : -1, to_id, &cs->c, err);
  for (int k = 0; k < 2 && rc == TM_OK; k++) {
    rc = tm_schema_add(&cs->del_schema[k], TM_PROV_SEQ, i64, false, -1, err);
    if (rc == TM_OK) rc = tm_schema_add(&cs->del_schema[k], TM_PROV_FILE, i64, false, -1, err);
    if (rc == TM_OK && k == 1) rc = tm_schema_add(&cs->del_schema[k], TM_PROV_POS, i64, false, -1, err);
  }
  if (rc == TM_OK) {
    size_t cap = cs->c->n_added + cs->c->n_changed;
    cs->inserts = tm_calloc(cap ? cap : 1, sizeof *cs->inserts);
    if (!cs->inserts) rc = tm_error_nomem(err);
  }
  if (rc < 0) {
    tm_changes_scan_free(cs);
    return rc;
  }
  for (size_t i = 0; i < cs->c->n_added; i++) cs->inserts[cs->n_inserts++] = cs->c->added[i];
  /* In data sequence number order: the stored rows' _tm_seq then rises with the row groups, so
   * DuckDB's zone maps find a file's rows by it (E4). */
  qsort(cs->inserts, cs->n_inserts, sizeof *cs->inserts, cmp_insert);
  cs->st.files_removed = (int64_t)cs->c->n_removed;
  cs->st.files_added = (int64_t)cs->c->n_added;
  cs->st.files_changed = (int64_t)cs->c->n_changed;
  *out = cs;
  return TM_OK;
}

void tm_changes_scan_free(tm_changes_scan *cs) {
  if (!cs) return;
  if (cs->rows) tm_iceberg_rows_free(cs->rows);
  tm_iceberg_changes_free(cs->c);
  tm_free(cs->inserts);
  tm_free(cs->pos);
  tm_schema_dispose(&cs->del_schema[0]);
  tm_schema_dispose(&cs->del_schema[1]);
  tm_schema_dispose(&cs->row_schema);
  tm_free(cs);
}

const tm_changes_stats *tm_changes_scan_stats(const tm_changes_scan *cs) { return &cs->st; }

/* A batch of int64 columns: the constants seq and file for n rows, then pos when given. */
static int delete_batch(tm_changes_scan *cs, const tm_iceberg_scan_task *const *tasks,
                        const int64_t *pos, int64_t n, tm_batch *out, tm_error *err) {
  const tm_schema *schema = &cs->del_schema[pos ? 1 : 0];
  tm_batch_builder bb;
  TM_TRY(tm_batch_builder_init(&bb, schema, err));
  int rc = TM_OK;
  for (int64_t k = 0; k < n && rc == TM_OK; k++) {
    const tm_iceberg_scan_task *task = pos ? tasks[0] : tasks[k];
    rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), task->file->sequence_number, err);
    if (rc == TM_OK)
      rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), tm_iceberg_file_id(task->key), err);
    if (rc == TM_OK && pos) rc = tm_colbuilder_append_int(tm_batch_builder_col(&bb, 2), pos[k], err);
  }
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, out, err);
  tm_batch_builder_dispose(&bb);
  return rc;
}

/* One reader's rows, position by position. */
typedef struct pos_stream {
  tm_iceberg_rows *r;
  tm_batch b;
  int64_t i;
  bool end;
} pos_stream;

static int ps_peek(pos_stream *ps, int64_t *pos, tm_error *err) {
  while (!ps->end && ps->i >= ps->b.n_rows) {
    tm_batch_release(&ps->b);
    ps->i = 0;
    int rc = tm_iceberg_rows_next(ps->r, &ps->b, err);
    if (rc == TM_ITEROVER) ps->end = true;
    else TM_TRY(rc);
  }
  if (ps->end) return TM_ITEROVER;
  tm_colview c = tm_batch_col(&ps->b, ps->b.schema.n_cols - 1);
  *pos = tm_colview_int(&c, ps->i);
  return TM_OK;
}

static int push_pos(tm_changes_scan *cs, int64_t p, tm_error *err) {
  if (cs->n_pos == cs->cap_pos) {
    size_t cap = cs->cap_pos ? cs->cap_pos * 2 : 1024;
    int64_t *n = tm_realloc(cs->pos, cap * sizeof *n);
    if (!n) return tm_error_nomem(err);
    cs->pos = n;
    cs->cap_pos = cap;
  }
  cs->pos[cs->n_pos++] = p;
  return TM_OK;
}

/*
 * Compares a changed file's live positions before and after: fills cs->pos
 * with the positions deleted since; *reinsert when a position came back.
 */
static bool has_equality_deletes(const tm_iceberg_scan_task *task) {
  for (size_t i = 0; i < task->n_deletes; i++)
    if (task->deletes[i]->content == TM_ICEBERG_CONTENT_EQUALITY_DELETES) return true;
  return false;
}

/*
 * diff_positions without reading the data file: when neither side has
 * equality deletes, the live positions are "all but those the position
 * delete files and deletion vectors name", so the positions deleted since
 * are the new set minus the old one, read from the delete files alone (E4:
 * a position delete of 1,000 rows costs its delete files, not the data
 * file's rows).
 */
static int diff_delete_files(tm_changes_scan *cs, const tm_iceberg_scan_task *a,
                             const tm_iceberg_scan_task *b, bool *reinsert, tm_error *err) {
  int64_t *pa = NULL, *pb = NULL;
  size_t na = 0, nb = 0;
  tm_iceberg_read_stats rs;
  memset(&rs, 0, sizeof rs);
  int rc = tm_iceberg_task_positions(cs->t, a, &pa, &na, &rs, err);
  if (rc == TM_OK) rc = tm_iceberg_task_positions(cs->t, b, &pb, &nb, &rs, err);
  size_t i = 0, j = 0;
  int64_t limit = b->file->record_count >= 0 ? b->file->record_count : INT64_MAX;
  while (rc == TM_OK && j < nb) {
    if (i < na && pa[i] < pb[j]) {
      *reinsert = true; /* deleted before, live now: a delete file shrank */
      break;
    }
    if (i < na && pa[i] == pb[j]) {
      i++;
    } else if (pb[j] < limit) {
      rc = push_pos(cs, pb[j], err); /* deleted now, live before */
    }
    j++;
  }
  if (rc == TM_OK && i < na) *reinsert = true;
  cs->st.delete_files_read += rs.delete_files_read;
  cs->st.bytes_read += rs.bytes_read;
  tm_free(pa);
  tm_free(pb);
  return rc;
}

static int diff_positions(tm_changes_scan *cs, size_t k, bool *reinsert, tm_error *err) {
  const tm_iceberg_scan_task *a = cs->c->changed_from[k], *b = cs->c->changed_to[k];
  *reinsert = false;
  cs->n_pos = 0;
  cs->emit_at = 0;
  if (!has_equality_deletes(a) && !has_equality_deletes(b)) return diff_delete_files(cs, a, b, reinsert, err);
  pos_stream x, y;
  memset(&x, 0, sizeof x);
  memset(&y, 0, sizeof y);
  tm_batch_init(&x.b);
  tm_batch_init(&y.b);
  const char *first = cs->n_names ? cs->names[0] : NULL;
  int rc = open_task(cs, cs->c->from, a, &first, first ? 1 : 0, &x.r, err);
  if (rc == TM_OK) rc = open_task(cs, cs->c->to, b, &first, first ? 1 : 0, &y.r, err);
  while (rc == TM_OK) {
    int64_t pa = 0, pb = 0;
    int ra = ps_peek(&x, &pa, err);
    if (ra < 0 && ra != TM_ITEROVER) {
      rc = ra;
      break;
    }
    int rb = ps_peek(&y, &pb, err);
    if (rb < 0 && rb != TM_ITEROVER) {
      rc = rb;
      break;
    }
    if (ra == TM_ITEROVER && rb == TM_ITEROVER) break;
    if (rb == TM_ITEROVER || (ra == TM_OK && pa < pb)) {
      rc = push_pos(cs, pa, err); /* live before, deleted now */
      x.i++;
    } else if (ra == TM_ITEROVER || pb < pa) {
      *reinsert = true; /* live now, deleted before: a delete file shrank */
      break;
    } else {
      x.i++;
      y.i++;
    }
  }
  tm_batch_release(&x.b);
  tm_batch_release(&y.b);
  free_rows(cs, &x.r);
  free_rows(cs, &y.r);
  return rc;
}

/* The schema of row batches: the reader's columns (without _pos), then seq, file, pos. */
static int row_schema(tm_changes_scan *cs, const tm_schema *in, tm_error *err) {
  if (cs->have_row_schema) return TM_OK;
  for (size_t j = 0; j + 1 < in->n_cols; j++)
    TM_TRY(tm_schema_add(&cs->row_schema, in->cols[j].name, in->cols[j].type, in->cols[j].nullable,
                         in->cols[j].field_id, err));
  tm_type i64 = tm_type_of(TM_TYPE_INT64);
  TM_TRY(tm_schema_add(&cs->row_schema, TM_PROV_SEQ, i64, false, -1, err));
  TM_TRY(tm_schema_add(&cs->row_schema, TM_PROV_FILE, i64, false, -1, err));
  TM_TRY(tm_schema_add(&cs->row_schema, TM_PROV_POS, i64, false, -1, err));
  cs->have_row_schema = true;
  return TM_OK;
}

/* raw ([columns..., _pos]) with seq and file inserted before _pos. */
static int with_provenance(tm_changes_scan *cs, tm_batch *raw, const tm_iceberg_scan_task *task,
                           tm_batch *out, tm_error *err) {
  TM_TRY(row_schema(cs, &raw->schema, err));
  size_t n_in = raw->schema.n_cols, n = cs->row_schema.n_cols;
  if (n != n_in + 2) return tm_error_set(err, TM_EINVALID, "%s: unexpected columns", task->file->path);
  struct ArrowArray *cols = tm_calloc(n, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  int rc = TM_OK;
  size_t built = 0;
  for (size_t j = 0; j + 1 < n_in && rc == TM_OK; j++, built++)
    rc = tm_batch_take_column(raw, j, &cols[j], err);
  tm_value v;
  memset(&v, 0, sizeof v);
  v.type = TM_TYPE_INT64;
  v.v.i = task->file->sequence_number;
  if (rc == TM_OK) rc = tm_array_make_constant(tm_type_of(TM_TYPE_INT64), &v, raw->n_rows, &cols[n_in - 1], err);
  if (rc == TM_OK) built++;
  v.v.i = tm_iceberg_file_id(task->key);
  if (rc == TM_OK) rc = tm_array_make_constant(tm_type_of(TM_TYPE_INT64), &v, raw->n_rows, &cols[n_in], err);
  if (rc == TM_OK) built++;
  if (rc == TM_OK) rc = tm_batch_take_column(raw, n_in - 1, &cols[n_in + 1], err);
  if (rc == TM_OK) built++;
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, &cs->row_schema, cols, raw->n_rows, err);
    built = 0;
  }
  for (size_t j = 0; j < built; j++)
    if (cols[j].release) cols[j].release(&cols[j]);
  tm_free(cols);
  return rc;
}

int tm_changes_scan_next(tm_changes_scan *cs, tm_batch *out, tm_error *err) {
  tm_batch_init(out);
  for (;;) {
    switch (cs->ph) {
      case PH_REMOVED: {
        size_t left = cs->c->n_removed - cs->i;
        if (!left) {
          cs->ph = PH_CHANGED;
          cs->i = 0;
          continue;
        }
        int64_t n = left > DELETE_BATCH_ROWS ? DELETE_BATCH_ROWS : (int64_t)left;
        TM_TRY(delete_batch(cs, cs->c->removed + cs->i, NULL, n, out, err));
        cs->i += (size_t)n;
        return TM_OK;
      }
      case PH_CHANGED: {
        if (cs->pos_task && cs->emit_at < cs->n_pos) {
          size_t left = cs->n_pos - cs->emit_at;
          int64_t n = left > DELETE_BATCH_ROWS ? DELETE_BATCH_ROWS : (int64_t)left;
          TM_TRY(delete_batch(cs, &cs->pos_task, cs->pos + cs->emit_at, n, out, err));
          cs->emit_at += (size_t)n;
          return TM_OK;
        }
        cs->pos_task = NULL;
        if (cs->i >= cs->c->n_changed) {
          cs->ph = PH_INSERT;
          cs->i = 0;
          continue;
        }
        size_t k = cs->i++;
        bool reinsert = false;
        TM_TRY(diff_positions(cs, k, &reinsert, err));
        if (reinsert) {
          cs->inserts[cs->n_inserts++] = cs->c->changed_to[k];
          cs->st.files_reinserted++;
          /* Its rows by file: the stored ones are the from side's (same seq and key). */
          return delete_batch(cs, &cs->c->changed_from[k], NULL, 1, out, err);
        }
        cs->pos_task = cs->c->changed_to[k];
        continue;
      }
      case PH_INSERT: {
        if (!cs->rows) {
          if (cs->i >= cs->n_inserts) {
            cs->ph = PH_DONE;
            continue;
          }
          cs->rows_task = cs->inserts[cs->i++];
          TM_TRY(open_task(cs, cs->c->to, cs->rows_task, cs->names, cs->n_names, &cs->rows, err));
        }
        tm_batch raw;
        tm_batch_init(&raw);
        int rc = tm_iceberg_rows_next(cs->rows, &raw, err);
        if (rc == TM_ITEROVER) {
          free_rows(cs, &cs->rows);
          continue;
        }
        TM_TRY(rc);
        rc = with_provenance(cs, &raw, cs->rows_task, out, err);
        tm_batch_release(&raw);
        return rc;
      }
      case PH_DONE:
        return TM_ITEROVER;
    }
  }
}
