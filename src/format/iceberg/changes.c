/*
 * changes.c - what changed between two snapshots of an Iceberg table, file
 * by file (format layer; SPEC E2, E4). See iceberg.h tm_iceberg_plan_changes.
 *
 * Both snapshots are planned as scans (live data files with the delete files
 * that apply to each, by sequence number and partition as the Iceberg spec
 * says: attach_deletes in plan.c), then the two task lists are sorted by
 * (path key, data sequence number) and merged. The net difference is what
 * applying every snapshot in between one by one gives, and costs only the
 * files that differ: a file added and removed again in between is never
 * read.
 */
#include <stdlib.h>
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "util/alloc.h"
#include "util/hash.h"

#define FILE_ID_SEED UINT64_C(0x74696465)

int64_t tm_iceberg_file_id(const char *key) {
  return (int64_t)tm_hash64(key, strlen(key), FILE_ID_SEED);
}

static int cmp_task(const void *a, const void *b) {
  const tm_iceberg_scan_task *x = *(const tm_iceberg_scan_task *const *)a;
  const tm_iceberg_scan_task *y = *(const tm_iceberg_scan_task *const *)b;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  int64_t sx = x->file->sequence_number, sy = y->file->sequence_number;
  return sx < sy ? -1 : sx > sy;
}

static int cmp_delete(const void *a, const void *b) {
  const tm_iceberg_data_file *x = *(const tm_iceberg_data_file *const *)a;
  const tm_iceberg_data_file *y = *(const tm_iceberg_data_file *const *)b;
  int c = strcmp(x->path, y->path);
  if (c) return c;
  int64_t ox = x->has_content_offset ? x->content_offset : -1;
  int64_t oy = y->has_content_offset ? y->content_offset : -1;
  return ox < oy ? -1 : ox > oy;
}

/* Whether two tasks of one data file have the same delete files. */
static int same_deletes(const tm_iceberg_scan_task *a, const tm_iceberg_scan_task *b, bool *same,
                        tm_error *err) {
  *same = false;
  if (a->n_deletes != b->n_deletes) return TM_OK;
  if (a->n_deletes == 0) {
    *same = true;
    return TM_OK;
  }
  size_t n = a->n_deletes;
  const tm_iceberg_data_file **x = tm_calloc(2 * n, sizeof *x);
  if (!x) return tm_error_nomem(err);
  memcpy(x, a->deletes, n * sizeof *x);
  memcpy(x + n, b->deletes, n * sizeof *x);
  qsort(x, n, sizeof *x, cmp_delete);
  qsort(x + n, n, sizeof *x, cmp_delete);
  bool eq = true;
  for (size_t i = 0; i < n && eq; i++) eq = cmp_delete(&x[i], &x[n + i]) == 0;
  tm_free(x);
  *same = eq;
  return TM_OK;
}

/* The tasks of s sorted by (key, sequence number); *out: tm_free. */
static int sorted_tasks(const tm_iceberg_scan *s, const tm_iceberg_scan_task ***out, tm_error *err) {
  size_t n = s ? s->n_tasks : 0;
  *out = tm_calloc(n ? n : 1, sizeof **out);
  if (!*out) return tm_error_nomem(err);
  for (size_t i = 0; i < n; i++) (*out)[i] = &s->tasks[i];
  qsort(*out, n, sizeof **out, cmp_task);
  return TM_OK;
}

static int alloc_lists(tm_iceberg_changes *c, size_t n_from, size_t n_to, tm_error *err) {
  c->removed = tm_calloc(n_from ? n_from : 1, sizeof *c->removed);
  c->added = tm_calloc(n_to ? n_to : 1, sizeof *c->added);
  c->changed_from = tm_calloc(n_to ? n_to : 1, sizeof *c->changed_from);
  c->changed_to = tm_calloc(n_to ? n_to : 1, sizeof *c->changed_to);
  if (!c->removed || !c->added || !c->changed_from || !c->changed_to) return tm_error_nomem(err);
  return TM_OK;
}

/* Merges the two sorted task lists into removed, added and changed. */
static int merge(tm_iceberg_changes *c, const tm_iceberg_scan_task **a, size_t na,
                 const tm_iceberg_scan_task **b, size_t nb, tm_error *err) {
  size_t i = 0, j = 0;
  while (i < na || j < nb) {
    int k = i >= na ? 1 : j >= nb ? -1 : cmp_task(&a[i], &b[j]);
    if (k < 0) {
      c->removed[c->n_removed++] = a[i++];
    } else if (k > 0) {
      c->added[c->n_added++] = b[j++];
    } else {
      bool same = false;
      TM_TRY(same_deletes(a[i], b[j], &same, err));
      if (!same) {
        c->changed_from[c->n_changed] = a[i];
        c->changed_to[c->n_changed++] = b[j];
      }
      i++;
      j++;
    }
  }
  return TM_OK;
}

int tm_iceberg_plan_changes(const tm_iceberg_table *t, int64_t from_id, int64_t to_id,
                            tm_iceberg_changes **out, tm_error *err) {
  *out = NULL;
  tm_iceberg_changes *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  const tm_iceberg_scan_task **a = NULL, **b = NULL;
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  so.snapshot_id = to_id;
  int rc = tm_iceberg_plan_scan(t, &so, &c->to, err);
  if (rc == TM_OK && from_id >= 0) {
    so.snapshot_id = from_id;
    rc = tm_iceberg_plan_scan(t, &so, &c->from, err);
  }
  if (rc == TM_OK) rc = sorted_tasks(c->from, &a, err);
  if (rc == TM_OK) rc = sorted_tasks(c->to, &b, err);
  size_t na = c->from ? c->from->n_tasks : 0, nb = c->to->n_tasks;
  if (rc == TM_OK) rc = alloc_lists(c, na, nb, err);
  if (rc == TM_OK) rc = merge(c, a, na, b, nb, err);
  tm_free(a);
  tm_free(b);
  if (rc < 0) {
    tm_iceberg_changes_free(c);
    return rc;
  }
  *out = c;
  return TM_OK;
}

void tm_iceberg_changes_free(tm_iceberg_changes *c) {
  if (!c) return;
  tm_iceberg_scan_free(c->from);
  tm_iceberg_scan_free(c->to);
  tm_free(c->removed);
  tm_free(c->added);
  tm_free(c->changed_from);
  tm_free(c->changed_to);
  tm_free(c);
}
