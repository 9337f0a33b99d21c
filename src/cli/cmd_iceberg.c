/*
 * cmd_iceberg.c - `tidemark iceberg`: author and inspect Iceberg tables in a
 * file-system warehouse (cli layer).
 *
 * Every subcommand goes through the library API any embedder uses
 * (format/iceberg/iceberg.h, writer.h, read.h; source/iceberg_local.h for
 * the file system, source/iceberg_rest.h for REST catalogs, which the
 * read-only commands accept as TABLE).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "format/arrow/render.h"
#include "format/iceberg/iceberg.h"
#include "format/iceberg/read.h"
#include "format/iceberg/writer.h"
#include "format/parquet/parquet.h"
#include "source/iceberg_local.h"
#include "source/iceberg_rest.h"
#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

static const tm_cli_opt k_opts[] = {
    {"schema", 0, "JSON",
     "create, replace-table, update-schema: Iceberg schema JSON (field ids optional)"},
    {"schema-from", 0, "FILE", "create, replace-table: take the schema of a Parquet file"},
    {"partition", 0, "SPEC", "create, replace-table: e.g. \"day(ts), bucket[16](id), region\""},
    {"location", 0, "URI", "create: the table location to record (default file://TABLE)"},
    {"property", 0, "K=V,...", "create: table properties"},
    {"format-version", 0, "2|3", "create: the table's format version (default 2)"},
    {"where", 0, "FILTER", "overwrite, delete: rows to remove, e.g. \"id < 10 AND region = 'eu'\""},
    {"position", 0, NULL,
     "delete: write position delete files (the default; deletion vectors on v3 tables)"},
    {"equality", 0, "COLS",
     "delete: write equality delete files on these columns; upsert: the key columns"},
    {"copy-on-write", 0, NULL, "delete: rewrite the data files instead of adding delete files"},
    {"to", 0, "SNAPSHOT", "rollback: the ancestor snapshot to make current"},
    {"older-than", 0, "AGE|TIME", "expire: a duration (7d) or an RFC 3339 time"},
    {"snapshot", 0, "ID", "files: list this snapshot's files (default: current)"},
    {"target-size", 0, "BYTES", "append, overwrite, compact: data file size (default 64 MiB)"},
    {"format", 0, "table|csv|json", "history, files: output format (default table)"},
    {"token", 0, "TOKEN", "history, files, cat: bearer token for a REST catalog TABLE URL"},
    {"columns", 0, "a,b", "cat: only these columns"},
    {"limit", 0, "N", "cat: at most N rows"},
    {"stats", 0, NULL, "cat: print files and row groups read and skipped to stderr"},
    {0}};

static const tm_cli_cmd *g_cmd;

static int fail(const tm_error *err) { return tm_cli_fail(TM_EXIT_FAILURE, "%s", err->message); }

static const char *opt(const tm_cli_args *a, const char *name) { return tm_cli_get(g_cmd, a, name); }

static bool is_url(const char *s) {
  return tm_str_has_prefix(s, "http://") || tm_str_has_prefix(s, "https://");
}

/* Opens TABLE: a folder (or file:// URI) through the local io, or a REST
 * catalog URL (read-only). */
static int open_table(const tm_cli_args *a, const char *table, tm_iceberg_io *io,
                      tm_iceberg_table **out, tm_error *err) {
  tm_iceberg_io_local(io);
  if (!is_url(table)) {
    tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
    o.table_root = tm_iceberg_local_path(table);
    if (tm_str_has_suffix(o.table_root, ".metadata.json")) {
      o.metadata_location = o.table_root;
      o.table_root = NULL;
    }
    return tm_iceberg_table_open(out, io, &o, err);
  }
  char *base = NULL, *prefix = NULL, *ns = NULL, *name = NULL;
  TM_TRY(tm_iceberg_rest_parse_url(table, &base, &prefix, &ns, &name, err));
  tm_iceberg_rest_options ro = TM_ICEBERG_REST_OPTIONS_INIT;
  ro.base_url = base;
  ro.token = opt(a, "token");
  tm_iceberg_rest_table rt;
  int rc = tm_iceberg_rest_load_table(&ro, prefix, ns, name, &rt, err);
  if (rc == TM_OK) {
    rc = tm_iceberg_table_from_json(out, io, rt.metadata_json, rt.metadata_len,
                                    rt.metadata_location, NULL, err);
    tm_iceberg_rest_table_dispose(&rt);
  }
  tm_free(base);
  tm_free(prefix);
  tm_free(ns);
  tm_free(name);
  return rc;
}

static int parse_size(const char *s, int64_t *out) {
  if (!s) {
    *out = 0;
    return TM_OK;
  }
  int64_t v;
  if (tm_parse_int64(s, strlen(s), &v) < 0 || v <= 0) return TM_EINVALID;
  *out = v;
  return TM_OK;
}

static int print_result(const char *what, const tm_iceberg_op_result *r) {
  if (r->snapshot_id < 0) {
    printf("%s: nothing to commit\n", what);
  } else {
    printf("%s: committed snapshot %lld: %lld data files added (%lld rows), %lld delete files "
           "added, %lld files removed, %lld rows removed\n",
           what, (long long)r->snapshot_id, (long long)r->data_files_added,
           (long long)r->rows_added, (long long)r->delete_files_added,
           (long long)r->files_removed, (long long)r->rows_deleted);
  }
  return TM_EXIT_OK;
}

/* ---- create / replace-table -------------------------------------------------- */

/* A Parquet file's columns for a new table's schema: nested columns as
 * their native struct, list and map types (issue 16), without field ids
 * (the table assigns fresh ones at every level). */
static int parquet_columns(const char *path, tm_schema *out, tm_error *err) {
  tm_parquet_file *pf = NULL;
  TM_TRY(tm_parquet_open_path(&pf, path, NULL, err));
  int rc = TM_OK;
  for (size_t i = 0; i < tm_parquet_num_fields(pf) && rc == TM_OK; i++) {
    const tm_parquet_field *fd = tm_parquet_field_at(pf, i);
    tm_type t = fd->type;
    bool nullable = fd->nullable;
    if (fd->nested) {
      rc = tm_parquet_nested_type(pf, i, &t, &nullable, err);
    } else if (fd->unsupported) {
      rc = tm_error_set(err, TM_EUNSUPPORTED, "%s: column %s: %s", path, fd->name,
                        fd->unsupported);
    }
    if (rc == TM_OK) rc = tm_schema_add(out, fd->name, t, nullable, -1, err);
  }
  tm_parquet_close(pf);
  return rc;
}

static int cmd_create(const tm_cli_args *a, const char *table, bool replace) {
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = opt(a, "schema");
  co.partition = opt(a, "partition");
  co.location = opt(a, "location");
  co.replace = replace;
  const char *fv = opt(a, "format-version");
  if (fv) {
    if (replace || (strcmp(fv, "2") != 0 && strcmp(fv, "3") != 0)) {
      return tm_cli_usage_error(g_cmd, "--format-version is 2 or 3, for create");
    }
    co.format_version = fv[0] - '0';
  }
  tm_schema from;
  tm_schema_init(&from);
  tm_kv props;
  tm_kv_init(&props);
  int rc = TM_OK;
  const char *schema_from = opt(a, "schema-from");
  if (!replace && !co.schema_json && !schema_from) {
    return tm_cli_usage_error(g_cmd, "create needs --schema JSON or --schema-from FILE");
  }
  if (schema_from) {
    rc = parquet_columns(schema_from, &from, &err);
    if (rc == TM_OK) co.schema = &from;
  }
  const char *p = opt(a, "property");
  while (rc == TM_OK && p && *p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (!eq) {
      tm_schema_dispose(&from);
      tm_kv_dispose(&props);
      return tm_cli_usage_error(g_cmd, "--property wants K=V pairs");
    }
    char *k = tm_strndup(p, (size_t)(eq - p)), *v = tm_strndup(eq + 1, len - (size_t)(eq - p) - 1);
    rc = k && v ? tm_kv_set(&props, k, v, &err) : tm_error_nomem(&err);
    tm_free(k);
    tm_free(v);
    p = comma ? comma + 1 : NULL;
  }
  co.properties = &props;
  if (rc == TM_OK) rc = tm_iceberg_create_table(&io, tm_iceberg_local_path(table), &co, &err);
  tm_schema_dispose(&from);
  tm_kv_dispose(&props);
  if (rc < 0) return fail(&err);
  printf("%s: %s\n", replace ? "replaced table" : "created table", table);
  return TM_EXIT_OK;
}

/* ---- writes --------------------------------------------------------------------- */

static int cmd_write(const tm_cli_args *a, const char *sub, const char *table) {
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (is_url(table)) return tm_cli_usage_error(g_cmd, "%s works on file-system tables", sub);
  tm_iceberg_op_options oo = TM_ICEBERG_OP_OPTIONS_INIT;
  if (parse_size(opt(a, "target-size"), &oo.target_file_bytes) < 0) {
    return tm_cli_usage_error(g_cmd, "--target-size wants a positive number of bytes");
  }
  const char *const *files = (const char *const *)a->positional + 2;
  size_t n_files = a->n_positional - 2;
  bool is_append = strcmp(sub, "append") == 0, is_over = strcmp(sub, "overwrite") == 0;
  bool is_upsert = strcmp(sub, "upsert") == 0;
  if ((is_append || is_upsert) && n_files == 0) {
    return tm_cli_usage_error(g_cmd, "%s needs FILE...", sub);
  }
  if (is_upsert && !opt(a, "equality")) {
    return tm_cli_usage_error(g_cmd, "upsert needs --equality COLS (the key columns)");
  }
  if (is_upsert && opt(a, "where")) {
    return tm_cli_usage_error(g_cmd, "upsert takes no --where: the new rows' keys say what goes");
  }
  if (!is_append && !is_over && !is_upsert && n_files > 0) {
    return tm_cli_usage_error(g_cmd, "%s takes no FILE arguments", sub);
  }
  const char *where = opt(a, "where");
  if ((is_over || strcmp(sub, "delete") == 0) && !where) {
    return tm_cli_usage_error(g_cmd, "%s needs --where FILTER", sub);
  }
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  tm_predicate pred;
  tm_predicate_init(&pred);
  tm_iceberg_op_result res;
  int rc = TM_OK;
  char *eq_text = NULL;
  const char *eq_cols[64];
  size_t n_eq = 0;
  if (where) {
    rc = tm_iceberg_parse_where(where, tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t)),
                                &pred, &err);
  }
  if (rc == TM_OK) {
    if (is_append) {
      rc = tm_iceberg_append_files(t, files, n_files, &oo, &res, &err);
    } else if (is_over) {
      rc = tm_iceberg_overwrite(t, &pred, files, n_files, &oo, &res, &err);
    } else if (strcmp(sub, "delete") == 0 || is_upsert) {
      tm_iceberg_delete_mode mode = TM_ICEBERG_DELETE_POSITION;
      const char *eq = opt(a, "equality");
      if (tm_cli_flag(g_cmd, a, "copy-on-write")) mode = TM_ICEBERG_DELETE_COPY_ON_WRITE;
      if (eq) {
        mode = TM_ICEBERG_DELETE_EQUALITY;
        eq_text = tm_strdup(eq);
        for (char *p = eq_text; p && *p && n_eq < 64;) {
          while (*p == ' ' || *p == ',') p++;
          if (!*p) break;
          eq_cols[n_eq++] = p;
          char *end = strchr(p, ',');
          if (!end) break;
          *end = '\0';
          p = end + 1;
        }
        for (size_t i = 0; i < n_eq; i++) {
          char *e = (char *)eq_cols[i] + strlen(eq_cols[i]);
          while (e > eq_cols[i] && e[-1] == ' ') *--e = '\0';
        }
      }
      if (!eq_text && eq) {
        rc = tm_error_nomem(&err);
      } else if (is_upsert) {
        rc = tm_iceberg_upsert_files(t, files, n_files, eq_cols, n_eq, &oo, &res, &err);
      } else {
        rc = tm_iceberg_delete_where(t, &pred, mode, eq_cols, n_eq, &oo, &res, &err);
      }
    } else {
      rc = tm_iceberg_compact(t, &oo, &res, &err);
    }
  }
  tm_free(eq_text);
  tm_predicate_dispose(&pred);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  return print_result(sub, &res);
}

/* ---- metadata-only commits --------------------------------------------------------- */

static int cmd_update_schema(const tm_cli_args *a, const char *table) {
  const char *schema = opt(a, "schema");
  if (!schema) return tm_cli_usage_error(g_cmd, "update-schema needs --schema JSON");
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  int rc = tm_iceberg_update_schema(t, schema, &err);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  printf("update-schema: a new current schema for %s\n", table);
  return TM_EXIT_OK;
}

static int cmd_rollback(const tm_cli_args *a, const char *table) {
  const char *to = opt(a, "to");
  int64_t id;
  if (!to || tm_parse_int64(to, strlen(to), &id) < 0) {
    return tm_cli_usage_error(g_cmd, "rollback needs --to SNAPSHOT (an id)");
  }
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  int rc = tm_iceberg_rollback(t, id, &err);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  printf("rollback: snapshot %lld is current\n", (long long)id);
  return TM_EXIT_OK;
}

static int cmd_expire(const tm_cli_args *a, const char *table) {
  const char *older = opt(a, "older-than");
  if (!older) return tm_cli_usage_error(g_cmd, "expire needs --older-than AGE|TIME");
  tm_error err;
  int64_t cutoff, ms;
  int64_t sec;
  int32_t ns;
  bool zone;
  if (tm_duration_parse(older, &ms, &err) == TM_OK) {
    cutoff = tm_now_ms() - ms;
  } else if (tm_time_parse(older, strlen(older), &sec, &ns, &zone) == TM_OK) {
    cutoff = sec * 1000 + ns / 1000000;
  } else {
    return tm_cli_usage_error(g_cmd, "--older-than wants a duration (7d) or an RFC 3339 time");
  }
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  tm_iceberg_expire_result res;
  int rc = tm_iceberg_expire(t, cutoff, &res, &err);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  printf("expire: %lld snapshots expired, %lld files deleted\n", (long long)res.snapshots_expired,
         (long long)res.files_deleted);
  return TM_EXIT_OK;
}

/* ---- inspection ------------------------------------------------------------------- */

static int out_format(const tm_cli_args *a, tm_out_format *f) {
  const char *s = opt(a, "format");
  *f = TM_OUT_TABLE;
  if (s && tm_out_format_parse(s, f) < 0) return tm_cli_usage_error(g_cmd, "bad --format %s", s);
  return TM_EXIT_OK;
}

static int emit(tm_out *o, char cells[][512], size_t n, const tm_cell_kind *kinds, tm_error *err) {
  const char *texts[16];
  size_t lens[16];
  for (size_t i = 0; i < n; i++) {
    texts[i] = kinds[i] == TM_CELL_NULL ? NULL : cells[i];
    lens[i] = kinds[i] == TM_CELL_NULL ? 0 : strlen(cells[i]);
  }
  return tm_out_row(o, texts, lens, kinds, err);
}

static int cmd_history(const tm_cli_args *a, const char *table) {
  tm_out_format fmt;
  int u = out_format(a, &fmt);
  if (u) return u;
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  static const char *names[] = {"snapshot", "parent", "sequence", "time", "operation",
                                "added_files", "added_rows", "total_rows", "current"};
  tm_out o;
  int rc = tm_out_begin(&o, fmt, names, 9, tm_out_file_sink, stdout, &err);
  for (size_t i = 0; rc == TM_OK && i < m->n_snapshots; i++) {
    const tm_iceberg_snapshot *s = &m->snapshots[i];
    char cells[9][512];
    tm_cell_kind kinds[9] = {TM_CELL_NUMBER, TM_CELL_NUMBER, TM_CELL_NUMBER, TM_CELL_TEXT,
                             TM_CELL_TEXT,   TM_CELL_NUMBER, TM_CELL_NUMBER, TM_CELL_NUMBER,
                             TM_CELL_BOOL};
    snprintf(cells[0], 512, "%lld", (long long)s->snapshot_id);
    if (s->has_parent) {
      snprintf(cells[1], 512, "%lld", (long long)s->parent_id);
    } else {
      kinds[1] = TM_CELL_NULL;
    }
    snprintf(cells[2], 512, "%lld", (long long)s->sequence_number);
    tm_instant at = tm_instant_from_ms(s->timestamp_ms);
    tm_time_print(cells[3], 512, at.sec, at.nsec, 3, true);
    snprintf(cells[4], 512, "%s", s->operation ? s->operation : "");
    const char *keys[3] = {"added-data-files", "added-records", "total-records"};
    for (int k = 0; k < 3; k++) {
      const char *v = tm_iceberg_snapshot_summary(s, keys[k]);
      if (v) {
        snprintf(cells[5 + k], 512, "%s", v);
      } else {
        kinds[5 + k] = TM_CELL_NULL;
      }
    }
    bool cur = m->has_current_snapshot && m->current_snapshot_id == s->snapshot_id;
    snprintf(cells[8], 512, "%s", cur ? "true" : "false");
    rc = emit(&o, cells, 9, kinds, &err);
  }
  if (rc == TM_OK) rc = tm_out_end(&o, &err);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  return TM_EXIT_OK;
}

static int cmd_files(const tm_cli_args *a, const char *table) {
  tm_out_format fmt;
  int u = out_format(a, &fmt);
  if (u) return u;
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  const char *snap = opt(a, "snapshot");
  if (snap && tm_parse_int64(snap, strlen(snap), &so.snapshot_id) < 0) {
    return tm_cli_usage_error(g_cmd, "--snapshot wants a snapshot id");
  }
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  tm_iceberg_scan *sc = NULL;
  int rc = tm_iceberg_plan_scan(t, &so, &sc, &err);
  static const char *names[] = {"path", "content", "records", "bytes", "spec", "partition",
                                "sequence"};
  tm_out o;
  if (rc == TM_OK) rc = tm_out_begin(&o, fmt, names, 7, tm_out_file_sink, stdout, &err);
  const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
  /* Data files, then the delete files that apply to any of them. */
  for (size_t pass = 0; rc == TM_OK && pass < 2 && sc; pass++) {
    for (size_t i = 0; rc == TM_OK && i < sc->n_manifests; i++) {
      const tm_iceberg_manifest *man = sc->manifests[i];
      if ((size_t)man->content != pass) continue;
      for (size_t k = 0; rc == TM_OK && k < man->n_entries; k++) {
        const tm_iceberg_data_file *f = &man->entries[k];
        if (f->status == TM_ICEBERG_DELETED) continue;
        char cells[7][512];
        tm_cell_kind kinds[7] = {TM_CELL_TEXT, TM_CELL_TEXT, TM_CELL_NUMBER, TM_CELL_NUMBER,
                                 TM_CELL_NUMBER, TM_CELL_TEXT, TM_CELL_NUMBER};
        snprintf(cells[0], 512, "%s", f->path);
        snprintf(cells[1], 512, "%s",
                 f->content == 0                       ? "data"
                 : tm_iceberg_is_deletion_vector(f)    ? "deletion-vector"
                 : f->content == 1                     ? "position-deletes"
                                                       : "equality-deletes");
        snprintf(cells[2], 512, "%lld", (long long)f->record_count);
        snprintf(cells[3], 512, "%lld", (long long)f->file_size);
        snprintf(cells[4], 512, "%d", (int)f->spec_id);
        tm_buf part = TM_BUF_INIT(1 << 16);
        const tm_iceberg_spec *spec = tm_iceberg_metadata_spec(m, f->spec_id);
        for (size_t p = 0; spec && p < f->n_partition && p < spec->n_fields; p++) {
          if (p) (void)!tm_buf_puts(&part, ", ", &err);
          (void)!tm_buf_printf(&part, &err, "%s=", spec->fields[p].name);
          tm_type ty = tm_type_of(f->partition[p].type);
          if (f->partition[p].is_null) {
            (void)!tm_buf_puts(&part, "null", &err);
          } else if (ty.id != TM_TYPE_DECIMAL128 && ty.id != TM_TYPE_FIXED_BINARY &&
                     ty.id != TM_TYPE_TIMESTAMP && ty.id != TM_TYPE_TIME64) {
            (void)!tm_value_render(&part, &ty, &f->partition[p], &err);
          } else {
            (void)!tm_buf_puts(&part, "...", &err);
          }
        }
        snprintf(cells[5], 512, "%s", tm_buf_cstr(&part));
        tm_buf_dispose(&part);
        snprintf(cells[6], 512, "%lld", (long long)f->sequence_number);
        rc = emit(&o, cells, 7, kinds, &err);
      }
    }
  }
  if (rc == TM_OK) rc = tm_out_end(&o, &err);
  tm_iceberg_scan_free(sc);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  return TM_EXIT_OK;
}

static int cmd_cat(const tm_cli_args *a, const char *table) {
  tm_out_format fmt;
  int u = out_format(a, &fmt);
  if (u) return u;
  tm_iceberg_scan_options so = TM_ICEBERG_SCAN_OPTIONS_INIT;
  const char *snap = opt(a, "snapshot"), *lim = opt(a, "limit"), *where = opt(a, "where");
  int64_t limit = -1;
  if (snap && tm_parse_int64(snap, strlen(snap), &so.snapshot_id) < 0) {
    return tm_cli_usage_error(g_cmd, "--snapshot wants a snapshot id");
  }
  if (lim && (tm_parse_int64(lim, strlen(lim), &limit) < 0 || limit < 0)) {
    return tm_cli_usage_error(g_cmd, "--limit wants a number");
  }
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = NULL;
  if (open_table(a, table, &io, &t, &err) < 0) return fail(&err);
  tm_predicate pred;
  tm_predicate_init(&pred);
  tm_iceberg_scan *sc = NULL;
  tm_iceberg_rows *r = NULL;
  char *cols_text = NULL;
  const char *cols[256];
  size_t n_cols = 0;
  int rc = TM_OK;
  if (where) {
    const tm_iceberg_metadata *m = tm_iceberg_table_metadata(t);
    rc = tm_iceberg_parse_where(where, tm_iceberg_metadata_current_schema(m), &pred, &err);
    so.filter = &pred;
  }
  if (rc == TM_OK) rc = tm_iceberg_plan_scan(t, &so, &sc, &err);
  tm_iceberg_read_options ro = TM_ICEBERG_READ_OPTIONS_INIT;
  if (opt(a, "columns")) {
    cols_text = tm_strdup(opt(a, "columns"));
    for (char *p = cols_text; p && *p && n_cols < 256;) {
      cols[n_cols++] = p;
      char *comma = strchr(p, ',');
      if (!comma) break;
      *comma = '\0';
      p = comma + 1;
    }
    ro.columns = cols;
    ro.n_columns = n_cols;
  }
  if (where) {
    ro.filter = &pred;
    ro.filter_rows = true;
  }
  if (rc == TM_OK) rc = tm_iceberg_rows_open(&r, t, sc, &ro, &err);
  tm_out o;
  bool begun = false;
  if (rc == TM_OK) {
    const tm_schema *s = tm_iceberg_rows_schema(r);
    const char *names[256];
    for (size_t i = 0; i < s->n_cols && i < 256; i++) names[i] = s->cols[i].name;
    rc = tm_out_begin(&o, fmt, names, s->n_cols, tm_out_file_sink, stdout, &err);
    begun = rc == TM_OK;
  }
  int64_t shown = 0;
  tm_batch b;
  tm_batch_init(&b);
  while (rc == TM_OK && (limit < 0 || shown < limit) && (rc = tm_iceberg_rows_next(r, &b, &err)) == TM_OK) {
    if (limit >= 0 && b.n_rows > limit - shown) {
      tm_batch part;
      tm_batch_init(&part);
      size_t nb = (size_t)(b.n_rows + 7) / 8;
      uint8_t *keep = tm_calloc(nb, 1);
      for (int64_t i = 0; keep && i < limit - shown; i++) tm_bit_set(keep, i);
      rc = keep ? tm_batch_filter(&b, keep, &part, &err) : tm_error_nomem(&err);
      tm_free(keep);
      tm_batch_release(&b);
      tm_batch_move(&b, &part);
    }
    if (rc == TM_OK) rc = tm_out_batch(&o, &b, &err);
    shown += b.n_rows;
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  if (begun) {
    if (rc == TM_OK) {
      rc = tm_out_end(&o, &err);
    } else {
      tm_out_dispose(&o);
    }
  }
  if (rc == TM_OK && tm_cli_flag(g_cmd, a, "stats")) {
    tm_iceberg_read_stats st;
    tm_iceberg_rows_stats(r, &st);
    fprintf(stderr,
            "scan: %lld of %lld data files (%lld skipped by partitions and bounds, %lld manifests "
            "skipped); row groups %lld read, %lld skipped; rows %lld read, %lld deleted, %lld "
            "filtered, %lld returned\n",
            (long long)(sc->stats.data_files - sc->stats.data_files_skipped),
            (long long)sc->stats.data_files, (long long)sc->stats.data_files_skipped,
            (long long)sc->stats.manifests_skipped, (long long)st.row_groups_read,
            (long long)st.row_groups_skipped, (long long)st.rows_read, (long long)st.rows_deleted,
            (long long)st.rows_filtered, (long long)st.rows_returned);
  }
  tm_free(cols_text);
  tm_iceberg_rows_free(r);
  tm_iceberg_scan_free(sc);
  tm_predicate_dispose(&pred);
  tm_iceberg_table_free(t);
  if (rc < 0) return fail(&err);
  return TM_EXIT_OK;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  g_cmd = cmd;
  if (args->n_positional < 2) return tm_cli_usage_error(cmd, "expected a subcommand and a TABLE");
  const char *sub = args->positional[0], *table = args->positional[1];
  bool files_allowed = strcmp(sub, "append") == 0 || strcmp(sub, "overwrite") == 0 ||
                       strcmp(sub, "upsert") == 0;
  if (!files_allowed && args->n_positional > 2) {
    return tm_cli_usage_error(cmd, "%s takes one TABLE", sub);
  }
  if (strcmp(sub, "create") == 0) return cmd_create(args, table, false);
  if (strcmp(sub, "replace-table") == 0) return cmd_create(args, table, true);
  if (strcmp(sub, "append") == 0 || strcmp(sub, "overwrite") == 0 ||
      strcmp(sub, "upsert") == 0 || strcmp(sub, "delete") == 0 || strcmp(sub, "compact") == 0)
    return cmd_write(args, sub, table);
  if (strcmp(sub, "update-schema") == 0) return cmd_update_schema(args, table);
  if (strcmp(sub, "rollback") == 0) return cmd_rollback(args, table);
  if (strcmp(sub, "expire") == 0) return cmd_expire(args, table);
  if (strcmp(sub, "history") == 0) return cmd_history(args, table);
  if (strcmp(sub, "files") == 0) return cmd_files(args, table);
  if (strcmp(sub, "cat") == 0) return cmd_cat(args, table);
  return tm_cli_usage_error(cmd, "unknown subcommand %s", sub);
}

const tm_cli_cmd tm_cli_cmd_iceberg = {
    "iceberg",
    "author and inspect Iceberg tables in a file-system warehouse",
    "tidemark iceberg <create|append|overwrite|upsert|delete|compact|replace-table|update-schema|"
    "rollback|expire|history|files|cat> TABLE [FILE...] [options]",
    "Authors and inspects Apache Iceberg (format v2 and v3) tables in a file-system warehouse.\n"
    "TABLE is the table's folder (it holds metadata/ and data/). history, files and cat also\n"
    "accept a REST catalog URL http[s]://HOST/v1/[PREFIX/]namespaces/NS/tables/T.\n"
    "\n"
    "  create TABLE --schema JSON | --schema-from FILE.parquet [--partition SPEC]\n"
    "         [--format-version 2|3]\n"
    "  append TABLE FILE...                     Parquet or CSV files, one append snapshot\n"
    "  overwrite TABLE --where FILTER FILE...   remove matching rows, add files\n"
    "  upsert TABLE --equality COLS FILE...     add the files' rows and an equality delete\n"
    "                                           of their keys, in one overwrite snapshot\n"
    "  delete TABLE --where FILTER [--position | --equality COLS | --copy-on-write]\n"
    "                                           (v3: --position writes deletion vectors)\n"
    "  compact TABLE                            rewrite into fewer files (replace snapshot)\n"
    "  replace-table TABLE [--schema JSON] [--partition SPEC]   new uuid, same location\n"
    "  update-schema TABLE --schema JSON        evolve the schema: members keep their ids\n"
    "                                           (rename, move, promote), new ones have none\n"
    "  rollback TABLE --to SNAPSHOT             an ancestor becomes current\n"
    "  expire TABLE --older-than 7d             drop old snapshots and their files\n"
    "  history TABLE                            snapshots, oldest first\n"
    "  files TABLE [--snapshot ID]              live data and delete files (and deletion vectors)\n"
    "  cat TABLE [--snapshot ID] [--where FILTER] [--columns a,b] [--stats]   rows, deletes applied",
    k_opts,
    SIZE_MAX,
    run};
