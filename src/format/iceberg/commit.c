/*
 * commit.c - snapshot commits: new manifests for added files, rewritten
 * manifests for removed files, the manifest list, the snapshot summary and
 * the next metadata version (format layer). See writer.h.
 *
 * Manifests of the base snapshot are carried over unchanged unless they
 * hold a removed file; those are rewritten with the removed entries as
 * DELETED and the others as EXISTING (explicit sequence numbers, as the
 * spec requires). Manifests left with only DELETED entries are dropped by
 * the next commit. Added files get ADDED entries with null sequence
 * numbers, inherited from the manifest list at read time.
 */
#include <string.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/iceberg_int.h"
#include "format/iceberg/writer.h"
#include "util/alloc.h"
#include "util/time.h"

#define COMMIT_ARENA_LIMIT ((size_t)1 << 31)

struct tm_iceberg_commit {
  tm_iceberg_table *base;
  char *operation;
  int64_t snapshot_id;
  tm_arena arena;                /* copies of added files and removed paths */
  tm_iceberg_data_file *added;   /* n_added (grown by doubling) */
  size_t n_added, cap_added;
  char **removed_keys;           /* match keys of removed files */
  int64_t *removed_offsets;      /* per removed key: a DV's content_offset, or -1 (all) */
  bool *removed_found;
  size_t n_removed, cap_removed;
  tm_kv summary;                 /* extra summary entries */
  bool finished;
};

int tm_iceberg_commit_begin(tm_iceberg_commit **out, tm_iceberg_table *base,
                            const char *operation, tm_error *err) {
  static const char *ops[] = {"append", "overwrite", "delete", "replace"};
  bool ok = false;
  for (size_t i = 0; i < 4; i++) ok = ok || strcmp(operation, ops[i]) == 0;
  if (!ok) return tm_error_set(err, TM_EINVALID, "unknown snapshot operation \"%s\"", operation);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(base);
  if (m->format_version != 2 && m->format_version != 3) {
    return tm_error_set(err, TM_EUNSUPPORTED,
                        "writing is supported for format v2 and v3 tables (this is v%d)",
                        m->format_version);
  }
  tm_iceberg_commit *c = tm_calloc(1, sizeof *c);
  if (!c) return tm_error_nomem(err);
  c->base = base;
  c->operation = tm_strdup(operation);
  if (!c->operation) {
    tm_free(c);
    return tm_error_nomem(err);
  }
  tm_arena_init(&c->arena, COMMIT_ARENA_LIMIT);
  tm_kv_init(&c->summary);
  do {
    c->snapshot_id = tm_iceberg_random_id();
  } while (tm_iceberg_metadata_snapshot(m, c->snapshot_id));
  *out = c;
  return TM_OK;
}

int64_t tm_iceberg_commit_snapshot_id(const tm_iceberg_commit *c) { return c->snapshot_id; }

static int copy_view(tm_arena *a, tm_strview *v, tm_error *err) {
  if (!v->ptr) return TM_OK;
  char *p = tm_arena_strndup(a, v->ptr, v->len, err);
  if (!p) return err->code;
  v->ptr = p;
  return TM_OK;
}

int tm_iceberg_commit_add_file(tm_iceberg_commit *c, const tm_iceberg_data_file *f,
                               tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(c->base);
  const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, f->spec_id);
  if (!spec) return tm_error_set(err, TM_EINVALID, "%s: unknown partition spec %d", f->path, (int)f->spec_id);
  if (f->n_partition != spec->n_fields) {
    return tm_error_set(err, TM_EINVALID, "%s: %zu partition values for spec %d of %zu fields",
                        f->path, f->n_partition, (int)f->spec_id, spec->n_fields);
  }
  if (f->content < 0 || f->content > 2 || f->record_count < 0 || !f->path) {
    return tm_error_set(err, TM_EINVALID, "a file to add needs a path, a content kind and a count");
  }
  if (c->n_added == c->cap_added) {
    size_t ncap = c->cap_added ? c->cap_added * 2 : 16;
    tm_iceberg_data_file *v = tm_arena_calloc(&c->arena, ncap, sizeof *v, err);
    if (!v) return err->code;
    if (c->n_added) memcpy(v, c->added, c->n_added * sizeof *v);
    c->added = v;
    c->cap_added = ncap;
  }
  tm_iceberg_data_file *d = &c->added[c->n_added];
  *d = *f;
  tm_arena *a = &c->arena;
  if (!(d->path = tm_iceberg__strdup(a, f->path, err))) return err->code;
  if (!(d->format = tm_iceberg__strdup(a, f->format ? f->format : "PARQUET", err))) return err->code;
  if (f->referenced_data_file &&
      !(d->referenced_data_file = tm_iceberg__strdup(a, f->referenced_data_file, err)))
    return err->code;
  d->partition = tm_arena_calloc(a, f->n_partition ? f->n_partition : 1, sizeof *d->partition, err);
  if (!d->partition) return err->code;
  for (size_t i = 0; i < f->n_partition; i++) {
    d->partition[i] = f->partition[i];
    tm_value *v = &d->partition[i];
    if (!v->is_null && (v->type == TM_TYPE_UTF8 || v->type == TM_TYPE_BINARY ||
                        v->type == TM_TYPE_FIXED_BINARY))
      TM_TRY(copy_view(a, &v->v.s, err));
  }
  if (f->n_stats) {
    d->stats = tm_arena_calloc(a, f->n_stats, sizeof *d->stats, err);
    if (!d->stats) return err->code;
    for (size_t i = 0; i < f->n_stats; i++) {
      d->stats[i] = f->stats[i];
      TM_TRY(copy_view(a, &d->stats[i].lower, err));
      TM_TRY(copy_view(a, &d->stats[i].upper, err));
    }
  }
  if (f->n_equality_ids) {
    d->equality_ids = tm_arena_calloc(a, f->n_equality_ids, sizeof *d->equality_ids, err);
    if (!d->equality_ids) return err->code;
    memcpy(d->equality_ids, f->equality_ids, f->n_equality_ids * sizeof *d->equality_ids);
  }
  if (f->n_split_offsets) {
    d->split_offsets = tm_arena_calloc(a, f->n_split_offsets, sizeof *d->split_offsets, err);
    if (!d->split_offsets) return err->code;
    memcpy(d->split_offsets, f->split_offsets, f->n_split_offsets * sizeof *d->split_offsets);
  }
  d->status = TM_ICEBERG_ADDED;
  d->snapshot_id = c->snapshot_id;
  c->n_added++;
  return TM_OK;
}

static int remove_entry(tm_iceberg_commit *c, const char *path, int64_t offset,
                        tm_error *err) {
  if (c->n_removed == c->cap_removed) {
    size_t ncap = c->cap_removed ? c->cap_removed * 2 : 16;
    char **k = tm_arena_calloc(&c->arena, ncap, sizeof *k, err);
    bool *f = tm_arena_calloc(&c->arena, ncap, sizeof *f, err);
    int64_t *o = tm_arena_calloc(&c->arena, ncap, sizeof *o, err);
    if (!k || !f || !o) return err->code;
    if (c->n_removed) {
      memcpy(k, c->removed_keys, c->n_removed * sizeof *k);
      memcpy(f, c->removed_found, c->n_removed * sizeof *f);
      memcpy(o, c->removed_offsets, c->n_removed * sizeof *o);
    }
    c->removed_keys = k;
    c->removed_found = f;
    c->removed_offsets = o;
    c->cap_removed = ncap;
  }
  c->removed_offsets[c->n_removed] = offset;
  char *key = NULL;
  TM_TRY(tm_iceberg_table_path_key(c->base, path, &key, err));
  c->removed_keys[c->n_removed] = tm_arena_strndup(&c->arena, key, strlen(key), err);
  tm_free(key);
  if (!c->removed_keys[c->n_removed]) return err->code;
  c->removed_found[c->n_removed] = false;
  c->n_removed++;
  return TM_OK;
}

int tm_iceberg_commit_remove_file(tm_iceberg_commit *c, const char *path, tm_error *err) {
  return remove_entry(c, path, -1, err);
}

int tm_iceberg_commit_remove_dv(tm_iceberg_commit *c, const char *path, int64_t offset,
                                tm_error *err) {
  if (offset < 0) return tm_error_set(err, TM_EINVALID, "%s: bad deletion vector offset", path);
  return remove_entry(c, path, offset, err);
}

int tm_iceberg_commit_set_summary(tm_iceberg_commit *c, const char *key, const char *value,
                                  tm_error *err) {
  return tm_kv_set(&c->summary, key, value, err);
}

/* Running totals for the summary. */
typedef struct deltas {
  int64_t added_data_files, added_records, added_size;
  int64_t added_delete_files, added_pos_files, added_eq_files, added_pos_rows, added_eq_rows;
  int64_t added_dvs, removed_dvs;
  int64_t deleted_data_files, deleted_records, removed_size;
  int64_t removed_delete_files, removed_pos_files, removed_eq_files, removed_pos_rows,
      removed_eq_rows;
} deltas;

static void count_added(deltas *d, const tm_iceberg_data_file *f) {
  int64_t size = f->file_size > 0 ? f->file_size : 0;
  if (f->content == TM_ICEBERG_CONTENT_DATA) {
    d->added_data_files++;
    d->added_records += f->record_count;
  } else {
    d->added_delete_files++;
    if (tm_iceberg_is_deletion_vector(f)) {
      d->added_dvs++; /* position delete files are counted without DVs (spec) */
      d->added_pos_rows += f->record_count;
    } else if (f->content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
      d->added_pos_files++;
      d->added_pos_rows += f->record_count;
    } else {
      d->added_eq_files++;
      d->added_eq_rows += f->record_count;
    }
  }
  d->added_size += size;
}

static void count_removed(deltas *d, const tm_iceberg_data_file *f) {
  int64_t size = f->file_size > 0 ? f->file_size : 0;
  if (f->content == TM_ICEBERG_CONTENT_DATA) {
    d->deleted_data_files++;
    d->deleted_records += f->record_count;
  } else {
    d->removed_delete_files++;
    if (tm_iceberg_is_deletion_vector(f)) {
      d->removed_dvs++;
      d->removed_pos_rows += f->record_count;
    } else if (f->content == TM_ICEBERG_CONTENT_POSITION_DELETES) {
      d->removed_pos_files++;
      d->removed_pos_rows += f->record_count;
    } else {
      d->removed_eq_files++;
      d->removed_eq_rows += f->record_count;
    }
  }
  d->removed_size += size;
}

static int find_removed(const tm_iceberg_commit *c, const char *key,
                        const tm_iceberg_data_file *f) {
  for (size_t i = 0; i < c->n_removed; i++) {
    if (strcmp(c->removed_keys[i], key) != 0) continue;
    if (c->removed_offsets[i] >= 0 &&
        (!f->has_content_offset || f->content_offset != c->removed_offsets[i]))
      continue;
    return (int)i;
  }
  return -1;
}

typedef struct mf_vec {
  tm_iceberg_manifest_file *items;
  size_t n, cap;
} mf_vec;

static int mf_push(tm_arena *a, mf_vec *v, const tm_iceberg_manifest_file *mf, tm_error *err) {
  if (v->n == v->cap) {
    size_t ncap = v->cap ? v->cap * 2 : 16;
    tm_iceberg_manifest_file *n = tm_arena_calloc(a, ncap, sizeof *n, err);
    if (!n) return err->code;
    if (v->n) memcpy(n, v->items, v->n * sizeof *n);
    v->items = n;
    v->cap = ncap;
  }
  v->items[v->n++] = *mf;
  return TM_OK;
}

/*
 * Carries one base manifest into the new list: unchanged, rewritten without
 * the removed files, or dropped when nothing in it is live any more.
 */
static int carry_manifest(tm_iceberg_commit *c, const tm_iceberg_manifest_file *mf, int64_t seq,
                          mf_vec *out, deltas *d, tm_error *err) {
  bool live = mf->added_files != 0 || mf->existing_files != 0;
  if (!live) return TM_OK;
  if (c->n_removed == 0) return mf_push(&c->arena, out, mf, err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(c->base);
  tm_iceberg_manifest *man = NULL;
  tm_iceberg__entry *entries = NULL;
  int rc;
  TM_CHECK(tm_iceberg_read_manifest(c->base, mf, -1, &man, err));
  entries = tm_calloc(man->n_entries ? man->n_entries : 1, sizeof *entries);
  if (!entries) {
    rc = tm_error_nomem(err);
    goto done;
  }
  size_t n = 0, hits = 0, n_live = 0;
  for (size_t i = 0; i < man->n_entries; i++) {
    const tm_iceberg_data_file *f = &man->entries[i];
    if (f->status == TM_ICEBERG_DELETED) continue;
    char *key = NULL;
    TM_CHECK(tm_iceberg_table_path_key(c->base, f->path, &key, err));
    int r = find_removed(c, key, f);
    tm_free(key);
    tm_iceberg__entry *e = &entries[n++];
    e->file = f;
    e->sequence_number = f->sequence_number;
    e->file_sequence_number = f->file_sequence_number;
    if (r >= 0) {
      c->removed_found[r] = true;
      hits++;
      e->status = TM_ICEBERG_DELETED;
      e->snapshot_id = c->snapshot_id;
      count_removed(d, f);
    } else {
      e->status = TM_ICEBERG_EXISTING;
      e->snapshot_id = f->snapshot_id;
      n_live++;
    }
  }
  if (hits == 0) {
    rc = mf_push(&c->arena, out, mf, err);
    goto done;
  }
  const tm_iceberg_spec *spec = man->spec;
  tm_iceberg_manifest_file nm;
  TM_CHECK(tm_iceberg__write_manifest(c->base, tm_iceberg_metadata_current_schema(m), spec,
                                      mf->content, entries, n, c->snapshot_id, seq, &c->arena,
                                      &nm, err));
  /* The rewritten manifest keeps the data's sequence numbers as written. */
  rc = mf_push(&c->arena, out, &nm, err);
  (void)n_live;
done:
  tm_free(entries);
  tm_iceberg_manifest_free(man);
  return rc;
}

/* Writes manifests for the added files, one per (content kind, spec). */
static int write_added(tm_iceberg_commit *c, int64_t seq, mf_vec *out, deltas *d,
                       tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(c->base);
  bool *done_flags = tm_calloc(c->n_added ? c->n_added : 1, sizeof *done_flags);
  tm_iceberg__entry *entries = tm_calloc(c->n_added ? c->n_added : 1, sizeof *entries);
  int rc = TM_OK;
  if (!done_flags || !entries) {
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < c->n_added; i++) {
    if (done_flags[i]) continue;
    bool is_delete = c->added[i].content != TM_ICEBERG_CONTENT_DATA;
    int32_t spec_id = c->added[i].spec_id;
    size_t n = 0;
    for (size_t k = i; k < c->n_added; k++) {
      const tm_iceberg_data_file *f = &c->added[k];
      if (done_flags[k] || (f->content != TM_ICEBERG_CONTENT_DATA) != is_delete ||
          f->spec_id != spec_id)
        continue;
      done_flags[k] = true;
      entries[n].status = TM_ICEBERG_ADDED;
      entries[n].snapshot_id = c->snapshot_id;
      entries[n].sequence_number = -1;
      entries[n].file_sequence_number = -1;
      entries[n].file = f;
      n++;
      count_added(d, f);
    }
    tm_iceberg_manifest_file nm;
    TM_CHECK(tm_iceberg__write_manifest(c->base, tm_iceberg_metadata_current_schema(m),
                                        tm_iceberg_metadata_spec(m, spec_id), is_delete ? 1 : 0,
                                        entries, n, c->snapshot_id, seq, &c->arena, &nm, err));
    TM_CHECK(mf_push(&c->arena, out, &nm, err));
  }
done:
  tm_free(done_flags);
  tm_free(entries);
  return rc;
}

/* An integer table property, or dflt. */
static int64_t int_property(const tm_iceberg_metadata *m, const char *key, int64_t dflt) {
  const char *v = tm_iceberg_metadata_property(m, key);
  int64_t x;
  if (!v || tm_parse_int64(v, strlen(v), &x) < 0) return dflt;
  return x;
}

/*
 * Merges carried data manifests of one spec into one when there are more
 * than commit.manifest.min-count-to-merge (100) of them, as Java's merge
 * append does, so that manifest lists stay short however long the history
 * grows. Entries keep their snapshot ids and sequence numbers as EXISTING;
 * the merged manifest adds no file, so "what snapshot S added" skips it.
 * Manifests this commit wrote (the first n_new) are never merged.
 */
static int merge_manifests(tm_iceberg_commit *c, int64_t seq, size_t n_new, mf_vec *list,
                           tm_error *err) {
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(c->base);
  const char *enabled = tm_iceberg_metadata_property(m, "commit.manifest-merge.enabled");
  if (enabled && strcmp(enabled, "false") == 0) return TM_OK;
  int64_t min_count = int_property(m, "commit.manifest.min-count-to-merge", 100);
  if (min_count < 2) min_count = 2;
  for (size_t si = 0; si < m->n_specs; si++) {
    int32_t spec_id = m->specs[si].spec_id;
    size_t count = 0;
    for (size_t i = n_new; i < list->n; i++) {
      if (list->items[i].content == 0 && list->items[i].spec_id == spec_id) count++;
    }
    if ((int64_t)count <= min_count) continue;
    tm_iceberg_manifest **mans = tm_calloc(count, sizeof *mans);
    tm_iceberg__entry *entries = NULL;
    size_t n_mans = 0, n_entries = 0, cap = 0;
    int rc = mans ? TM_OK : tm_error_nomem(err);
    for (size_t i = n_new; rc == TM_OK && i < list->n; i++) {
      const tm_iceberg_manifest_file *mf = &list->items[i];
      if (mf->content != 0 || mf->spec_id != spec_id) continue;
      rc = tm_iceberg_read_manifest(c->base, mf, -1, &mans[n_mans], err);
      if (rc < 0) break;
      tm_iceberg_manifest *man = mans[n_mans++];
      for (size_t k = 0; rc == TM_OK && k < man->n_entries; k++) {
        const tm_iceberg_data_file *f = &man->entries[k];
        if (f->status == TM_ICEBERG_DELETED) continue;
        if (n_entries == cap) {
          size_t ncap = cap ? cap * 2 : 256;
          tm_iceberg__entry *e = tm_reallocarray(entries, ncap, sizeof *e);
          if (!e) {
            rc = tm_error_nomem(err);
            break;
          }
          entries = e;
          cap = ncap;
        }
        tm_iceberg__entry *e = &entries[n_entries++];
        e->status = TM_ICEBERG_EXISTING;
        e->snapshot_id = f->snapshot_id;
        e->sequence_number = f->sequence_number;
        e->file_sequence_number = f->file_sequence_number;
        e->file = f;
      }
    }
    tm_iceberg_manifest_file merged;
    if (rc == TM_OK) {
      rc = tm_iceberg__write_manifest(c->base, tm_iceberg_metadata_current_schema(m),
                                      &m->specs[si], 0, entries, n_entries, c->snapshot_id, seq,
                                      &c->arena, &merged, err);
    }
    if (rc == TM_OK) {
      /* Replace the merged manifests by the new one, keeping the order. */
      size_t w = n_new;
      for (size_t i = n_new; i < list->n; i++) {
        if (list->items[i].content == 0 && list->items[i].spec_id == spec_id) continue;
        list->items[w++] = list->items[i];
      }
      list->n = w;
      rc = mf_push(&c->arena, list, &merged, err);
    }
    for (size_t i = 0; i < n_mans; i++) tm_iceberg_manifest_free(mans[i]);
    tm_free(mans);
    tm_free(entries);
    if (rc < 0) return rc;
  }
  return TM_OK;
}

static int put_num(json_t *o, const char *key, int64_t v) {
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)v);
  return json_object_set_new(o, key, json_string(num));
}

static int64_t prev_total(const tm_iceberg_snapshot *prev, const char *key, bool *known) {
  if (!prev) return 0;
  const char *v = tm_iceberg_snapshot_summary(prev, key);
  int64_t x;
  if (!v || tm_parse_int64(v, strlen(v), &x) < 0) {
    *known = false;
    return 0;
  }
  return x;
}

static json_t *build_summary(const tm_iceberg_commit *c, const tm_iceberg_snapshot *prev,
                             const deltas *d, const mf_vec *list) {
  json_t *s = json_object();
  if (!s) return NULL;
  json_object_set_new(s, "operation", json_string(c->operation));
  if (d->added_data_files) put_num(s, "added-data-files", d->added_data_files);
  if (d->added_records) put_num(s, "added-records", d->added_records);
  if (d->added_size) put_num(s, "added-files-size", d->added_size);
  if (d->added_delete_files) put_num(s, "added-delete-files", d->added_delete_files);
  if (d->added_pos_files) put_num(s, "added-position-delete-files", d->added_pos_files);
  if (d->added_eq_files) put_num(s, "added-equality-delete-files", d->added_eq_files);
  if (d->added_pos_rows) put_num(s, "added-position-deletes", d->added_pos_rows);
  if (d->added_eq_rows) put_num(s, "added-equality-deletes", d->added_eq_rows);
  if (d->added_dvs) put_num(s, "added-dvs", d->added_dvs);
  if (d->removed_dvs) put_num(s, "removed-dvs", d->removed_dvs);
  if (d->deleted_data_files) put_num(s, "deleted-data-files", d->deleted_data_files);
  if (d->deleted_records) put_num(s, "deleted-records", d->deleted_records);
  if (d->removed_size) put_num(s, "removed-files-size", d->removed_size);
  if (d->removed_delete_files) put_num(s, "removed-delete-files", d->removed_delete_files);
  if (d->removed_pos_files) put_num(s, "removed-position-delete-files", d->removed_pos_files);
  if (d->removed_eq_files) put_num(s, "removed-equality-delete-files", d->removed_eq_files);
  if (d->removed_pos_rows) put_num(s, "removed-position-deletes", d->removed_pos_rows);
  if (d->removed_eq_rows) put_num(s, "removed-equality-deletes", d->removed_eq_rows);
  /* Totals from the new manifest list (exact), others from the parent's. */
  int64_t files = 0, rows = 0, del_files = 0;
  for (size_t i = 0; i < list->n; i++) {
    const tm_iceberg_manifest_file *mf = &list->items[i];
    int64_t fcount = (mf->added_files > 0 ? mf->added_files : 0) +
                     (mf->existing_files > 0 ? mf->existing_files : 0);
    if (mf->content == 0) {
      files += fcount;
      rows += (mf->added_rows > 0 ? mf->added_rows : 0) +
              (mf->existing_rows > 0 ? mf->existing_rows : 0);
    } else {
      del_files += fcount;
    }
  }
  put_num(s, "total-data-files", files);
  put_num(s, "total-records", rows);
  put_num(s, "total-delete-files", del_files);
  bool known = true;
  int64_t size = prev_total(prev, "total-files-size", &known) + d->added_size - d->removed_size;
  int64_t pos = prev_total(prev, "total-position-deletes", &known) + d->added_pos_rows -
                d->removed_pos_rows;
  int64_t eq = prev_total(prev, "total-equality-deletes", &known) + d->added_eq_rows -
               d->removed_eq_rows;
  if (known) {
    put_num(s, "total-files-size", size);
    put_num(s, "total-position-deletes", pos);
    put_num(s, "total-equality-deletes", eq);
  }
  for (size_t i = 0; i < c->summary.len; i++) {
    json_object_set_new(s, c->summary.items[i].key, json_string(c->summary.items[i].value));
  }
  if (!json_object_get(s, "engine-name")) json_object_set_new(s, "engine-name", json_string("tidemark"));
  return s;
}

int tm_iceberg_commit_finish(tm_iceberg_commit *c, int64_t *snapshot_id_out, tm_error *err) {
  tm_error local;
  if (!err) err = &local;
  tm_error_init(err);
  if (c->finished) return tm_error_set(err, TM_EINVALID, "commit already finished");
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(c->base);
  const tm_iceberg_snapshot *cur = tm_iceberg_metadata_current(m);
  int64_t seq = m->last_sequence_number + 1;
  tm_iceberg_manifest_list *base_list = NULL;
  json_t *root = NULL;
  mf_vec list;
  memset(&list, 0, sizeof list);
  deltas d;
  memset(&d, 0, sizeof d);
  int rc;
  /* New manifests first, then the carried ones (as Java writers do). */
  TM_CHECK(write_added(c, seq, &list, &d, err));
  size_t n_new = list.n;
  if (cur) {
    TM_CHECK(tm_iceberg_read_manifest_list(c->base, cur, &base_list, err));
    for (size_t i = 0; i < base_list->n_files; i++) {
      TM_CHECK(carry_manifest(c, &base_list->files[i], seq, &list, &d, err));
    }
  }
  TM_CHECK(merge_manifests(c, seq, n_new, &list, err));
  for (size_t i = 0; i < c->n_removed; i++) {
    if (!c->removed_found[i]) {
      rc = tm_error_set(err, TM_ECONFLICT, "%s is not a live file of the current snapshot",
                        c->removed_keys[i]);
      goto done;
    }
  }
  /* v3 row lineage (spec, "First Row ID Assignment"): data manifests
   * without a first_row_id get the next ranges from the table's next-row-id. */
  int64_t first_row_id = m->has_next_row_id ? m->next_row_id : 0, next_row_id = first_row_id;
  if (m->format_version >= 3) {
    for (size_t i = 0; i < list.n; i++) {
      tm_iceberg_manifest_file *mf = &list.items[i];
      if (mf->content != 0 || mf->has_first_row_id) continue;
      mf->has_first_row_id = true;
      mf->first_row_id = next_row_id;
      next_row_id += (mf->added_rows > 0 ? mf->added_rows : 0) +
                     (mf->existing_rows > 0 ? mf->existing_rows : 0);
    }
  }
  const char *list_path = NULL;
  TM_CHECK(tm_iceberg__write_manifest_list(c->base, list.items, list.n, c->snapshot_id,
                                           cur ? cur->snapshot_id : -1, seq, &c->arena,
                                           &list_path, err));
  TM_CHECK(tm_iceberg__load_base_json(c->base, &root, err));
  int64_t now = tm_now_ms();
  if (now <= m->last_updated_ms) now = m->last_updated_ms + 1;
  json_t *summary = build_summary(c, cur, &d, &list);
  json_t *snap = json_pack("{s:I, s:I, s:I, s:o, s:s, s:i}", "snapshot-id",
                           (json_int_t)c->snapshot_id, "sequence-number", (json_int_t)seq,
                           "timestamp-ms", (json_int_t)now, "summary", summary, "manifest-list",
                           list_path, "schema-id", (int)m->current_schema_id);
  if (!snap) {
    rc = tm_error_nomem(err);
    goto done;
  }
  if (cur) json_object_set_new(snap, "parent-snapshot-id", json_integer(cur->snapshot_id));
  if (m->format_version >= 3) {
    json_object_set_new(snap, "first-row-id", json_integer(first_row_id));
    json_object_set_new(snap, "added-rows", json_integer(next_row_id - first_row_id));
  }
  json_t *snaps = json_object_get(root, "snapshots");
  if (!json_is_array(snaps)) {
    snaps = json_array();
    json_object_set_new(root, "snapshots", snaps);
  }
  json_array_append_new(snaps, snap);
  json_object_set_new(root, "last-sequence-number", json_integer(seq));
  if (m->format_version >= 3) json_object_set_new(root, "next-row-id", json_integer(next_row_id));
  TM_CHECK(tm_iceberg__set_current(root, c->snapshot_id, now, err));
  TM_CHECK(tm_iceberg__publish(c->base, root, err));
  c->finished = true;
  if (snapshot_id_out) *snapshot_id_out = c->snapshot_id;
done:
  json_decref(root);
  tm_iceberg_manifest_list_free(base_list);
  return rc;
}

void tm_iceberg_commit_free(tm_iceberg_commit *c) {
  if (!c) return;
  tm_arena_dispose(&c->arena);
  tm_kv_dispose(&c->summary);
  tm_free(c->operation);
  tm_free(c);
}
