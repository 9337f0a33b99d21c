/*
 * duckdb.c - the engines that store rows in DuckDB: cayenne (file mode,
 * newest row per key by time), duckdb (memory and file mode, arrival order)
 * and arrow (memory mode, arrival order). Opening, reads, sizes, backups;
 * write transactions are in txn.c (engine layer). See duck_int.h.
 *
 * Files: cayenne keeps its database as data.duckdb in the dataset's folder
 * (with DuckDB's data.duckdb.wal beside it); duckdb keeps it at the path it
 * is given (Spice's duckdb_file). A cayenne folder in the segment format of
 * earlier tidemark versions (MANIFEST, seg-*.tmc) is removed at open with a
 * log line: the acceleration is rebuilt by the next refresh.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/duckdb/duck_int.h"
#include "io/io.h"
#include "util/alloc.h"
#include "util/log.h"

/* ---- SQL text helpers ----------------------------------------------------------- */

int tm_duck__table(tm_buf *b, const tm_duck_engine *e, const char *table, tm_error *err) {
  TM_TRY(tm_buf_puts(b, e->q, err));
  TM_TRY(tm_buf_puts(b, ".main.", err));
  return tm_engine__quote_ident(b, table, err);
}

int tm_duck__columns(tm_buf *b, const tm_schema *s, const char *prefix, tm_error *err) {
  for (size_t i = 0; i < s->n_cols; i++) {
    if (i) TM_TRY(tm_buf_puts(b, ", ", err));
    if (prefix) TM_TRY(tm_buf_puts(b, prefix, err));
    TM_TRY(tm_engine__quote_ident(b, s->cols[i].name, err));
  }
  return TM_OK;
}

int tm_duck__create_rows(tm_buf *b, const tm_duck_engine *e, const char *table, tm_error *err) {
  const tm_schema *s = &e->base.schema;
  TM_TRY(tm_buf_puts(b, "CREATE TABLE ", err));
  TM_TRY(tm_duck__table(b, e, table, err));
  TM_TRY(tm_buf_puts(b, " (", err));
  for (size_t i = 0; i < s->n_cols; i++) {
    if (i) TM_TRY(tm_buf_puts(b, ", ", err));
    TM_TRY(tm_engine__quote_ident(b, s->cols[i].name, err));
    TM_TRY(tm_buf_putc(b, ' ', err));
    TM_TRY(tm_duck_type_sql_buf(b, &s->cols[i].type, err));
  }
  return tm_buf_puts(b, ")", err);
}

/* Runs `sql` built by the caller in b (cleared afterwards). */
static int run(duckdb_connection c, tm_buf *b, const char *what, tm_error *err) {
  int rc = tm_db__exec(c, tm_buf_cstr(b), what, err);
  tm_buf_clear(b);
  return rc;
}

int tm_duck__write_meta(tm_duck_engine *e, duckdb_connection c, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(64 << 20), schema = TM_BUF_INIT(32 << 20), fp = TM_BUF_INIT(1 << 20);
  int rc = tm_engine__schema_encode(&e->base.schema, &schema, err);
  if (rc == TM_OK) rc = tm_engine__options_fingerprint(&e->base, &fp, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "DELETE FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_meta", err);
  if (rc == TM_OK) rc = run(c, &sql, e->base.cfg.dataset, err);
  const char *kv[4][2] = {{"format", TM_DUCK_FORMAT},
                          {"kind", tm_engine_kind_name(e->base.vt->traits.kind)},
                          {"schema", tm_buf_cstr(&schema)},
                          {"options", tm_buf_cstr(&fp)}};
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "INSERT INTO ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, "_tm_meta", err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " VALUES ", err);
  for (int i = 0; rc == TM_OK && i < 4; i++) {
    rc = tm_buf_puts(&sql, i ? ", (" : "(", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, kv[i][0], strlen(kv[i][0]), err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ", ", err);
    if (rc == TM_OK) rc = tm_engine__quote_string(&sql, kv[i][1], strlen(kv[i][1]), err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ")", err);
  }
  if (rc == TM_OK) rc = run(c, &sql, e->base.cfg.dataset, err);
  tm_buf_dispose(&sql);
  tm_buf_dispose(&schema);
  tm_buf_dispose(&fp);
  return rc;
}

/* Reads a (VARCHAR, VARCHAR) result into kv. */
static int kv_from_result(duckdb_result *r, tm_kv *kv, tm_error *err) {
  int rc = TM_OK;
  for (;;) {
    duckdb_data_chunk ch = duckdb_fetch_chunk(*r);
    if (!ch) break;
    idx_t n = duckdb_data_chunk_get_size(ch);
    duckdb_vector kv0 = duckdb_data_chunk_get_vector(ch, 0), kv1 = duckdb_data_chunk_get_vector(ch, 1);
    duckdb_string_t *k = duckdb_vector_get_data(kv0), *v = duckdb_vector_get_data(kv1);
    uint64_t *km = duckdb_vector_get_validity(kv0), *vm = duckdb_vector_get_validity(kv1);
    for (idx_t i = 0; rc == TM_OK && i < n; i++) {
      if ((km && !duckdb_validity_row_is_valid(km, i)) || (vm && !duckdb_validity_row_is_valid(vm, i)))
        continue;
      char *ks = tm_strndup(duckdb_string_t_data(&k[i]), duckdb_string_t_length(k[i]));
      char *vs = tm_strndup(duckdb_string_t_data(&v[i]), duckdb_string_t_length(v[i]));
      rc = ks && vs ? tm_kv_set(kv, ks, vs, err) : tm_error_nomem(err);
      tm_free(ks);
      tm_free(vs);
    }
    duckdb_destroy_data_chunk(&ch);
    if (rc < 0) break;
  }
  return rc;
}

/* SELECT key, value FROM <table> on c into kv. */
static int read_kv(tm_duck_engine *e, duckdb_connection c, const char *table, tm_kv *kv,
                   tm_error *err) {
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_buf_puts(&sql, "SELECT key, value FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, table, err);
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_query(c, tm_buf_cstr(&sql), &r) == DuckDBError)
      rc = tm_db__result_error(err, &r, e->base.cfg.dataset);
    else rc = kv_from_result(&r, kv, err);
    duckdb_destroy_result(&r);
  }
  tm_buf_dispose(&sql);
  return rc;
}

/* ---- files ---------------------------------------------------------------------- */

int tm_engine__duck_file(tm_engine_kind kind, const tm_engine_options *opts, char **out,
                         tm_error *err) {
  if (!opts->path || !*opts->path)
    return tm_error_set(err, TM_EINVALID, "dataset '%s': file mode needs a path",
                        opts->dataset ? opts->dataset : "?");
  *out = kind == TM_ENGINE_CAYENNE ? tm_path_join(opts->path, TM_DUCK_FILE) : tm_strdup(opts->path);
  return *out ? TM_OK : tm_error_nomem(err);
}

/* Removes a cayenne folder's files of the earlier segment format; true if any. */
static bool remove_old_format(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *de;
  while ((de = readdir(d))) {
    const char *n = de->d_name;
    bool old = !strcmp(n, "MANIFEST") || !strcmp(n, "LOCK") ||
               (tm_str_has_prefix(n, "seg-") && tm_str_has_suffix(n, ".tmc")) ||
               tm_str_has_prefix(n, "MANIFEST.tmp.");
    if (!old) continue;
    found = found || strcmp(n, "LOCK") != 0;
    char *p = tm_path_join(dir, n);
    if (p) unlink(p);
    tm_free(p);
  }
  closedir(d);
  return found;
}

static int remove_file(const char *path, tm_error *err) {
  if (unlink(path) != 0 && errno != ENOENT)
    return tm_error_set(err, TM_EIO, "%s: cannot remove: %s", path, strerror(errno));
  return TM_OK;
}

static int duck_drop(const tm_engine_options *opts, tm_engine_kind kind, tm_error *err) {
  char *file = NULL;
  TM_TRY(tm_engine__duck_file(kind, opts, &file, err));
  char *wal = tm_asprintf("%s.wal", file);
  int rc = wal ? remove_file(file, err) : tm_error_nomem(err);
  if (rc == TM_OK) rc = remove_file(wal, err);
  if (rc == TM_OK && kind == TM_ENGINE_CAYENNE) remove_old_format(opts->path);
  tm_free(wal);
  tm_free(file);
  return rc;
}

static int drop_cayenne(const tm_engine_options *o, tm_error *err) {
  return duck_drop(o, TM_ENGINE_CAYENNE, err);
}
static int drop_duckdb(const tm_engine_options *o, tm_error *err) {
  return duck_drop(o, TM_ENGINE_DUCKDB, err);
}
static int drop_arrow(const tm_engine_options *o, tm_error *err) {
  (void)o;
  (void)err;
  return TM_OK;
}

/* ---- open / close ----------------------------------------------------------------- */

static void duck_close(tm_engine *base) {
  tm_duck_engine *e = tm_duck_of(base);
  if (e->writer) duckdb_disconnect(&e->writer);
  if (e->alias) tm_db__detach(base->db, e->alias);
  tm_free(e->alias);
  tm_free(e->q);
  tm_free(e->file);
  tm_free(e->hint[0]);
  tm_free(e->hint[1]);
  pthread_mutex_destroy(&e->hint_mu);
  tm_engine__dispose_base(base);
  tm_free(e);
}

/* Whether the attached database has any table, and whether it has _tm_meta. */
static int inspect(tm_db *db, const char *alias, bool *any, bool *meta, tm_error *err) {
  duckdb_connection c;
  TM_TRY(tm_db__connect(db, &c, err));
  duckdb_prepared_statement ps = NULL;
  int rc = TM_OK;
  if (duckdb_prepare(c,
                     "SELECT count(*), count(*) FILTER (WHERE table_name = '_tm_meta') "
                     "FROM duckdb_tables() WHERE database_name = $1",
                     &ps) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "DuckDB: %s", duckdb_prepare_error(ps));
  if (rc == TM_OK) duckdb_bind_varchar(ps, 1, alias);
  duckdb_result r;
  if (rc == TM_OK) {
    if (duckdb_execute_prepared(ps, &r) == DuckDBError) {
      rc = tm_db__result_error(err, &r, alias);
    } else {
      *any = duckdb_value_int64(&r, 0, 0) > 0;
      *meta = duckdb_value_int64(&r, 1, 0) > 0;
    }
    duckdb_destroy_result(&r);
  }
  duckdb_destroy_prepare(&ps);
  duckdb_disconnect(&c);
  return rc;
}

int tm_duck__create_indexes(tm_duck_engine *e, duckdb_connection c, tm_error *err) {
  tm_buf table = TM_BUF_INIT(1 << 16), sql = TM_BUF_INIT(1 << 20);
  int rc = tm_duck__table(&table, e, TM_DUCK_ROWS, err);
  for (size_t i = 0; rc == TM_OK && i < e->base.cfg.n_indexes; i++) {
    tm_buf_clear(&sql);
    rc = tm_engine__index_sql(&sql, &e->base, &e->base.cfg.indexes[i], "", tm_buf_cstr(&table), err);
    if (rc == TM_OK) rc = tm_db__exec(c, tm_buf_cstr(&sql), e->file ? e->file : e->base.cfg.dataset, err);
    if (rc == TM_EINVALID) tm_error_prefix(err, "index %s", e->base.cfg.indexes[i].name);
  }
  tm_buf_dispose(&table);
  tm_buf_dispose(&sql);
  return rc;
}

/*
 * Brings the indexes of a reopened acceleration in step with the config:
 * drops tidemark's indexes (tm_ix_*) it no longer names and creates the
 * missing ones, in one transaction. A unique index over rows that repeat its
 * key fails, naming the index, and changes nothing.
 */
static int sync_indexes(tm_duck_engine *e, tm_error *err) {
  duckdb_connection c = e->writer;
  tm_buf sql = TM_BUF_INIT(1 << 20);
  bool *have = tm_calloc(e->base.cfg.n_indexes ? e->base.cfg.n_indexes : 1, sizeof *have);
  int rc = have ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "SELECT index_name FROM duckdb_indexes() WHERE database_name = ", err);
  if (rc == TM_OK) rc = tm_engine__quote_string(&sql, e->alias, strlen(e->alias), err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " AND table_name = '" TM_DUCK_ROWS "'", err);
  duckdb_result r;
  bool have_result = false, began = false;
  if (rc == TM_OK) {
    if (duckdb_query(c, tm_buf_cstr(&sql), &r) == DuckDBError) rc = tm_db__result_error(err, &r, e->file);
    have_result = true;
  }
  idx_t n = rc == TM_OK ? duckdb_row_count(&r) : 0;
  for (idx_t i = 0; rc == TM_OK && i < n; i++) {
    char *name = duckdb_value_varchar(&r, 0, i);
    bool ours = false;
    bool wanted = name && tm_engine__index_wanted(&e->base, name, &ours);
    for (size_t k = 0; wanted && k < e->base.cfg.n_indexes; k++)
      if (strcmp(e->base.cfg.indexes[k].name, name) == 0) have[k] = true;
    if (name && ours && !wanted) {
      if (!began) rc = tm_db__exec(c, "BEGIN TRANSACTION", e->file ? e->file : e->base.cfg.dataset, err);
      began = began || rc == TM_OK;
      tm_buf_clear(&sql);
      if (rc == TM_OK) rc = tm_buf_printf(&sql, err, "DROP INDEX %s.main.", e->q);
      if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, name, err);
      if (rc == TM_OK) rc = tm_db__exec(c, tm_buf_cstr(&sql), e->file ? e->file : e->base.cfg.dataset, err);
      if (rc == TM_OK) tm_log(TM_LOG_INFO, e->base.cfg.dataset, "dropped index %s (no longer configured)", name);
    }
    duckdb_free(name);
  }
  tm_buf table = TM_BUF_INIT(1 << 16);
  if (rc == TM_OK) rc = tm_duck__table(&table, e, TM_DUCK_ROWS, err);
  for (size_t k = 0; rc == TM_OK && k < e->base.cfg.n_indexes; k++) {
    if (have[k]) continue;
    if (!began) rc = tm_db__exec(c, "BEGIN TRANSACTION", e->file ? e->file : e->base.cfg.dataset, err);
    began = began || rc == TM_OK;
    tm_buf_clear(&sql);
    if (rc == TM_OK) rc = tm_engine__index_sql(&sql, &e->base, &e->base.cfg.indexes[k], "", tm_buf_cstr(&table), err);
    if (rc == TM_OK) rc = tm_db__exec(c, tm_buf_cstr(&sql), e->file ? e->file : e->base.cfg.dataset, err);
    if (rc != TM_OK) tm_error_prefix(err, "index %s", e->base.cfg.indexes[k].name);
    else tm_log(TM_LOG_INFO, e->base.cfg.dataset, "created index %s", e->base.cfg.indexes[k].name);
  }
  tm_buf_dispose(&table);
  if (began && rc == TM_OK) rc = tm_db__exec(c, "COMMIT", e->file ? e->file : e->base.cfg.dataset, err);
  else if (began) tm_db__exec_quiet(c, "ROLLBACK");
  if (have_result) duckdb_destroy_result(&r);
  tm_buf_dispose(&sql);
  tm_free(have);
  return rc;
}

/* Creates the three tables of a new acceleration, in one transaction. */
static int create_tables(tm_duck_engine *e, tm_error *err) {
  tm_buf sql = TM_BUF_INIT(64 << 20);
  duckdb_connection c = e->writer;
  int rc = tm_db__exec(c, "BEGIN TRANSACTION", (e->file ? e->file : e->base.cfg.dataset), err);
  if (rc == TM_OK) rc = tm_duck__create_rows(&sql, e, TM_DUCK_ROWS, err);
  if (rc == TM_OK) rc = run(c, &sql, (e->file ? e->file : e->base.cfg.dataset), err);
  if (rc == TM_OK) rc = tm_duck__create_indexes(e, c, err);
  const char *kvt[2] = {"_tm_state", "_tm_meta"};
  for (int i = 0; rc == TM_OK && i < 2; i++) {
    rc = tm_buf_puts(&sql, "CREATE TABLE ", err);
    if (rc == TM_OK) rc = tm_duck__table(&sql, e, kvt[i], err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, " (key VARCHAR, value VARCHAR)", err);
    if (rc == TM_OK) rc = run(c, &sql, (e->file ? e->file : e->base.cfg.dataset), err);
  }
  if (rc == TM_OK) rc = tm_duck__write_meta(e, c, err);
  if (rc == TM_OK) rc = tm_db__exec(c, "COMMIT", (e->file ? e->file : e->base.cfg.dataset), err);
  else {
    tm_db__exec_quiet(c, "ROLLBACK");
  }
  tm_buf_dispose(&sql);
  return rc;
}

static int duck_open(tm_engine **out, const tm_schema *schema, const tm_engine_options *opts,
                     const tm_engine_vtable *vt, tm_error *err) {
  tm_db *db = opts->db;
  if (!db) return tm_error_set(err, TM_EINVALID, "engine options without a DuckDB instance");
  tm_duck_engine *e = tm_calloc(1, sizeof *e);
  if (!e) return tm_error_nomem(err);
  pthread_mutex_init(&e->hint_mu, NULL);
  int rc = TM_OK;
  bool file_mode = opts->mode == TM_ENGINE_FILE;
  tm_kv meta;
  tm_kv_init(&meta);
  tm_schema stored;
  tm_schema_init(&stored);
  bool have_stored = false;
  const char *name = opts->dataset ? opts->dataset : "?";

  if (file_mode) {
    rc = tm_engine__duck_file(vt->traits.kind, opts, &e->file, err);
    if (rc == TM_OK && vt->traits.kind == TM_ENGINE_CAYENNE && remove_old_format(opts->path))
      tm_log(TM_LOG_WARN, name,
             "the acceleration in %s is in the segment format of an earlier tidemark: removed; "
             "the next refresh rebuilds it as a DuckDB database",
             opts->path);
    if (rc == TM_OK && !schema && !tm_path_exists(e->file))
      rc = tm_error_set(err, TM_ENOTFOUND, "dataset '%s': no acceleration at %s", name, e->file);
    char *dir = rc == TM_OK ? tm_path_dirname(e->file) : NULL;
    if (rc == TM_OK && !dir) rc = tm_error_nomem(err);
    if (rc == TM_OK) rc = tm_mkdir_p(dir, err);
    tm_free(dir);
  }
  if (rc == TM_OK) rc = tm_db__attach(db, file_mode ? e->file : NULL, name, &e->alias, err);
  if (rc == TM_OK) {
    tm_buf q = TM_BUF_INIT(1 << 16);
    rc = tm_engine__quote_ident(&q, e->alias, err);
    if (rc == TM_OK) e->q = tm_buf_take(&q, NULL);
    tm_buf_dispose(&q);
    if (rc == TM_OK && !e->q) rc = tm_error_nomem(err);
  }
  /* What the database holds: nothing, or an acceleration with its meta. */
  bool any = false, has_meta = false;
  if (rc == TM_OK && file_mode) rc = inspect(db, e->alias, &any, &has_meta, err);
  /* Someone's database, not an acceleration (a crash cannot make one: the tables and the
   * meta are created in one transaction): never ours to fill, rebuild or drop. */
  if (rc == TM_OK && any && !has_meta)
    rc = tm_error_set(err, TM_EINVALID,
                      "%s: a DuckDB database with tables that is not a tidemark acceleration: "
                      "tidemark leaves it alone (choose another duckdb_file)",
                      e->file);
  duckdb_connection c = NULL;
  if (rc == TM_OK && has_meta) {
    rc = tm_db__connect(db, &c, err);
    tm_buf sql = TM_BUF_INIT(1 << 16);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, "SELECT key, value FROM ", err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, e->q, err);
    if (rc == TM_OK) rc = tm_buf_puts(&sql, ".main._tm_meta", err);
    if (rc == TM_OK) {
      duckdb_result r;
      if (duckdb_query(c, tm_buf_cstr(&sql), &r) == DuckDBError) rc = tm_db__result_error(err, &r, e->file);
      else rc = kv_from_result(&r, &meta, err);
      duckdb_destroy_result(&r);
    }
    tm_buf_dispose(&sql);
    const char *fmt = tm_kv_get(&meta, "format"), *sch = tm_kv_get(&meta, "schema");
    if (rc == TM_OK && (!fmt || strcmp(fmt, TM_DUCK_FORMAT) != 0))
      rc = tm_error_set(err, TM_ECORRUPT, "%s: acceleration format '%s' (expected '%s')", e->file,
                        fmt ? fmt : "none", TM_DUCK_FORMAT);
    if (rc == TM_OK && !sch) rc = TM_CORRUPT(err, "%s: the acceleration's schema is missing", e->file);
    if (rc == TM_OK) rc = tm_engine__schema_decode(&stored, sch, strlen(sch), err);
    if (rc == TM_ECORRUPT) tm_error_prefix(err, "%s", e->file);
    have_stored = rc == TM_OK;
  }
  if (c) duckdb_disconnect(&c);
  if (rc == TM_OK && !schema && !have_stored)
    rc = tm_error_set(err, TM_ENOTFOUND, "dataset '%s': no acceleration at %s", name, e->file);
  if (rc == TM_OK) rc = tm_engine__init_base(&e->base, vt, schema ? schema : &stored, opts, err);
  bool base_ok = rc == TM_OK;
  if (rc == TM_OK) rc = tm_db__connect(db, &e->writer, err);
  if (rc == TM_OK && have_stored) {
    /* The same acceleration, or a replacement (B9) if the schema or the key options changed. */
    tm_buf fp = TM_BUF_INIT(1 << 20);
    rc = tm_engine__options_fingerprint(&e->base, &fp, err);
    const char *opt = tm_kv_get(&meta, "options");
    const char *kind = tm_kv_get(&meta, "kind");
    bool replace = opts->replace && schema;
    if (rc == TM_OK && (replace || !tm_schema_equal(&stored, &e->base.schema) || !opt ||
                        strcmp(opt, tm_buf_cstr(&fp)) != 0 || !kind ||
                        strcmp(kind, tm_engine_kind_name(vt->traits.kind)) != 0))
      e->pending = true;
    tm_buf_dispose(&fp);
    /* The time column's bounds at the last commit: hints for the high-water mark. */
    const char *h[2] = {tm_kv_get(&meta, "time_min"), tm_kv_get(&meta, "time_max")};
    for (int i = 0; rc == TM_OK && !e->pending && i < 2; i++)
      if (h[i] && !(e->hint[i] = tm_strdup(h[i]))) rc = tm_error_nomem(err);
  }
  if (rc == TM_OK && !have_stored) rc = create_tables(e, err);
  else if (rc == TM_OK && !e->pending) rc = sync_indexes(e, err);
  tm_kv_dispose(&meta);
  tm_schema_dispose(&stored);
  if (rc < 0) {
    if (!base_ok) {
      if (e->alias) tm_db__detach(db, e->alias);
      tm_free(e->alias);
      tm_free(e->q);
      tm_free(e->file);
      pthread_mutex_destroy(&e->hint_mu);
      tm_free(e);
    } else {
      duck_close(&e->base);
    }
    return rc;
  }
  *out = &e->base;
  return TM_OK;
}

/* ---- reads ---------------------------------------------------------------------- */

static int duck_read_state(tm_engine *base, tm_kv *out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  if (e->pending) return TM_OK;
  duckdb_connection c;
  TM_TRY(tm_db__connect(base->db, &c, err));
  int rc = read_kv(e, c, "_tm_state", out, err);
  duckdb_disconnect(&c);
  return rc;
}

static int duck_row_count(tm_engine *base, int64_t *out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  *out = 0;
  if (e->pending) return TM_OK;
  tm_buf sql = TM_BUF_INIT(1 << 16);
  duckdb_connection c = NULL;
  int rc = tm_buf_puts(&sql, "SELECT count(*) FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
  if (rc == TM_OK) rc = tm_db__connect(base->db, &c, err);
  if (rc == TM_OK) rc = tm_db__query_int64(c, tm_buf_cstr(&sql), out, err);
  if (rc < 0) tm_error_prefix(err, "%s", base->cfg.dataset);
  if (c) duckdb_disconnect(&c);
  tm_buf_dispose(&sql);
  return rc;
}

/* Every column of every row, and the state map: DuckDB checks each block's checksum. */
static int duck_verify(tm_engine *base, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  if (e->pending) return TM_OK;
  tm_buf sql = TM_BUF_INIT(1 << 16);
  duckdb_connection c = NULL;
  int64_t n = 0;
  /* hash(t) reads every column of the row; the count streams (no table of hashes). */
  int rc = tm_buf_puts(&sql, "SELECT count(*) FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " AS t WHERE hash(t) IS NOT NULL", err);
  if (rc == TM_OK) rc = tm_db__connect(base->db, &c, err);
  if (rc == TM_OK) rc = tm_db__query_int64(c, tm_buf_cstr(&sql), &n, err);
  tm_kv st;
  tm_kv_init(&st);
  if (rc == TM_OK) rc = duck_read_state(base, &st, err);
  tm_kv_dispose(&st);
  if (rc < 0) tm_error_prefix(err, "%s (%s)", base->cfg.dataset, e->file ? e->file : "memory");
  if (c) duckdb_disconnect(&c);
  tm_buf_dispose(&sql);
  return rc;
}

/* Runs sql (parameters bound from params, if any) and reads it as batches of schema s. */
typedef struct duck_scan {
  tm_engine_scan base;
  duckdb_connection conn;
  duckdb_prepared_statement ps;
  tm_schema schema;         /* owned: the scanned columns */
  tm_duck_reader rd;
  bool has_reader;
} duck_scan;

static void scan_free(tm_engine_scan *sbase) {
  duck_scan *s = (duck_scan *)sbase;
  if (s->has_reader) tm_duck_reader_dispose(&s->rd);
  if (s->ps) duckdb_destroy_prepare(&s->ps);
  if (s->conn) duckdb_disconnect(&s->conn);
  tm_schema_dispose(&s->schema);
  tm_engine_release(s->base.engine);
  tm_free(s);
}

static int scan_next(tm_engine_scan *sbase, tm_batch *out, tm_error *err) {
  duck_scan *s = (duck_scan *)sbase;
  if (!s->has_reader) return TM_ITEROVER;
  int rc = tm_duck_reader_next(&s->rd, out, err);
  if (rc < 0 && rc != TM_ITEROVER) tm_error_prefix(err, "%s", s->base.engine->cfg.dataset);
  return rc;
}

static const char *op_sql(tm_pred_op op) {
  switch (op) {
    case TM_PRED_EQ: return " = ";
    case TM_PRED_LT: return " < ";
    case TM_PRED_LE: return " <= ";
    case TM_PRED_GT: return " > ";
    case TM_PRED_GE: return " >= ";
    default: return " ";
  }
}

/* `WHERE` text for pred with $n parameters; *n_params counts them. */
static int where_sql(tm_buf *b, const tm_predicate *pred, idx_t *n_params, tm_error *err) {
  *n_params = 0;
  for (size_t i = 0; pred && i < pred->n_terms; i++) {
    const tm_pred_term *t = &pred->terms[i];
    TM_TRY(tm_buf_puts(b, i ? " AND " : " WHERE ", err));
    TM_TRY(tm_engine__quote_ident(b, t->column, err));
    switch (t->op) {
      case TM_PRED_IS_NULL: TM_TRY(tm_buf_puts(b, " IS NULL", err)); break;
      case TM_PRED_IS_NOT_NULL: TM_TRY(tm_buf_puts(b, " IS NOT NULL", err)); break;
      case TM_PRED_IN:
        if (t->n_in == 0) {
          TM_TRY(tm_buf_puts(b, " IS NULL AND false", err));
          break;
        }
        TM_TRY(tm_buf_puts(b, " IN (", err));
        for (size_t k = 0; k < t->n_in; k++)
          TM_TRY(tm_buf_printf(b, err, "%s$%llu", k ? ", " : "", (unsigned long long)++*n_params));
        TM_TRY(tm_buf_puts(b, ")", err));
        break;
      default:
        TM_TRY(tm_buf_puts(b, op_sql(t->op), err));
        TM_TRY(tm_buf_printf(b, err, "$%llu", (unsigned long long)++*n_params));
    }
  }
  return TM_OK;
}

static int bind_params(duckdb_prepared_statement ps, const tm_predicate *pred, tm_error *err) {
  idx_t k = 0;
  for (size_t i = 0; pred && i < pred->n_terms; i++) {
    const tm_pred_term *t = &pred->terms[i];
    size_t n = t->op == TM_PRED_IN ? t->n_in : (t->op == TM_PRED_IS_NULL || t->op == TM_PRED_IS_NOT_NULL) ? 0 : 1;
    for (size_t j = 0; j < n; j++) {
      duckdb_value v = tm_duck_value(&t->type, t->op == TM_PRED_IN ? &t->in_values[j] : &t->value);
      duckdb_state st = duckdb_bind_value(ps, ++k, v);
      duckdb_destroy_value(&v);
      if (st == DuckDBError)
        return tm_error_set(err, TM_EINVALID, "cannot bind the filter value of '%s'", t->column);
    }
  }
  return TM_OK;
}

static int duck_scan_open(tm_engine *base, const size_t *cols, size_t n_cols,
                          const tm_predicate *pred, tm_engine_scan **out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  duck_scan *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->base.engine = tm_engine_retain(base);
  tm_schema_init(&s->schema);
  int rc = TM_OK;
  size_t n = cols ? n_cols : base->schema.n_cols;
  for (size_t i = 0; rc == TM_OK && i < n; i++) {
    const tm_column *c = &base->schema.cols[cols ? cols[i] : i];
    rc = tm_schema_add(&s->schema, c->name, c->type, c->nullable, c->field_id, err);
  }
  if (rc == TM_OK && e->pending) {
    *out = &s->base; /* a replacement not yet committed: nothing stored */
    return TM_OK;
  }
  tm_buf sql = TM_BUF_INIT(1 << 20);
  idx_t n_params = 0;
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "SELECT ", err);
  if (rc == TM_OK) rc = tm_duck__columns(&sql, &s->schema, NULL, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, " FROM ", err);
  if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
  if (rc == TM_OK) rc = where_sql(&sql, pred, &n_params, err);
  if (rc == TM_OK) rc = tm_db__connect(base->db, &s->conn, err);
  if (rc == TM_OK && duckdb_prepare(s->conn, tm_buf_cstr(&sql), &s->ps) == DuckDBError)
    rc = tm_error_set(err, TM_EINVALID, "%s: scan: %s", base->cfg.dataset, duckdb_prepare_error(s->ps));
  if (rc == TM_OK) rc = bind_params(s->ps, pred, err);
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_execute_prepared_streaming(s->ps, &r) == DuckDBError) {
      rc = tm_db__result_error(err, &r, base->cfg.dataset);
      duckdb_destroy_result(&r);
    } else {
      tm_duck_reader_init(&s->rd, &r, &s->schema, TM_BATCH_DEFAULT_ROWS);
      s->has_reader = true;
    }
  }
  tm_buf_dispose(&sql);
  if (rc < 0) {
    scan_free(&s->base);
    return rc;
  }
  *out = &s->base;
  return TM_OK;
}

/* One text value of a query (NULL, or a copy in *out). */
static int query_text(duckdb_connection c, const char *sql, char **out, const char *what,
                      tm_error *err) {
  *out = NULL;
  duckdb_result r;
  if (duckdb_query(c, sql, &r) == DuckDBError) {
    int rc = tm_db__result_error(err, &r, what);
    duckdb_destroy_result(&r);
    return rc;
  }
  int rc = TM_OK;
  if (duckdb_row_count(&r) > 0 && !duckdb_value_is_null(&r, 0, 0)) {
    char *v = duckdb_value_varchar(&r, 0, 0);
    if (v && !(*out = tm_strdup(v))) rc = tm_error_nomem(err);
    if (v) duckdb_free(v);
  }
  duckdb_destroy_result(&r);
  return rc;
}

int tm_duck__time_bounds(tm_duck_engine *e, duckdb_connection c, char *out[2], tm_error *err) {
  out[0] = out[1] = NULL;
  const tm_engine_config *cfg = &e->base.cfg;
  if (cfg->time_col < 0) return TM_OK;
  const tm_column *col = &e->base.schema.cols[cfg->time_col];
  char ty[48];
  tm_duck_type_sql(&col->type, ty, sizeof ty);
  char *hint[2] = {NULL, NULL};
  pthread_mutex_lock(&e->hint_mu);
  for (int i = 0; i < 2; i++) hint[i] = e->hint[i] ? tm_strdup(e->hint[i]) : NULL;
  pthread_mutex_unlock(&e->hint_mu);
  static const char *const fn[2] = {"min", "max"}, *const cmp[2] = {" <= ", " >= "};
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = TM_OK;
  for (int i = 0; rc == TM_OK && i < 2; i++) {
    /* Hinted first (zone maps skip what cannot pass), then, when nothing passed, all rows. */
    for (int hinted = hint[i] ? 1 : 0; rc == TM_OK && hinted >= 0 && !out[i]; hinted--) {
      tm_buf_clear(&sql);
      rc = tm_buf_printf(&sql, err, "SELECT CAST(%s(", fn[i]);
      if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, col->name, err);
      if (rc == TM_OK) rc = tm_buf_puts(&sql, ") AS VARCHAR) FROM ", err);
      if (rc == TM_OK) rc = tm_duck__table(&sql, e, TM_DUCK_ROWS, err);
      if (rc == TM_OK && hinted) {
        rc = tm_buf_puts(&sql, " WHERE ", err);
        if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, col->name, err);
        /* TRY_CAST: a hint DuckDB cannot read (a damaged file) lets no row pass. */
        if (rc == TM_OK) rc = tm_buf_printf(&sql, err, "%sTRY_CAST(", cmp[i]);
        if (rc == TM_OK) rc = tm_engine__quote_string(&sql, hint[i], strlen(hint[i]), err);
        if (rc == TM_OK) rc = tm_buf_printf(&sql, err, " AS %s)", ty);
      }
      if (rc == TM_OK) rc = query_text(c, tm_buf_cstr(&sql), &out[i], cfg->dataset, err);
    }
  }
  tm_buf_dispose(&sql);
  tm_free(hint[0]);
  tm_free(hint[1]);
  if (rc < 0) {
    tm_free(out[0]);
    tm_free(out[1]);
    out[0] = out[1] = NULL;
  }
  return rc;
}

void tm_duck__set_hints(tm_duck_engine *e, char *bounds[2]) {
  pthread_mutex_lock(&e->hint_mu);
  for (int i = 0; i < 2; i++) {
    tm_free(e->hint[i]);
    e->hint[i] = bounds[i];
    bounds[i] = NULL;
  }
  pthread_mutex_unlock(&e->hint_mu);
}

/* SELECT min(c), max(c) FROM rows, or, hinted, each restricted to the side of its hint. */
static int bounds_sql(tm_duck_engine *e, const tm_column *c, char *const hint[2], tm_buf *sql,
                      tm_error *err) {
  if (!hint) {
    TM_TRY(tm_buf_puts(sql, "SELECT min(", err));
    TM_TRY(tm_engine__quote_ident(sql, c->name, err));
    TM_TRY(tm_buf_puts(sql, "), max(", err));
    TM_TRY(tm_engine__quote_ident(sql, c->name, err));
    TM_TRY(tm_buf_puts(sql, ") FROM ", err));
    return tm_duck__table(sql, e, TM_DUCK_ROWS, err);
  }
  char ty[48];
  tm_duck_type_sql(&c->type, ty, sizeof ty);
  static const char *const fn[2] = {"min", "max"}, *const cmp[2] = {" <= ", " >= "};
  TM_TRY(tm_buf_puts(sql, "SELECT ", err));
  for (int i = 0; i < 2; i++) {
    TM_TRY(tm_buf_printf(sql, err, "%s(SELECT %s(", i ? ", " : "", fn[i]));
    TM_TRY(tm_engine__quote_ident(sql, c->name, err));
    TM_TRY(tm_buf_puts(sql, ") FROM ", err));
    TM_TRY(tm_duck__table(sql, e, TM_DUCK_ROWS, err));
    TM_TRY(tm_buf_puts(sql, " WHERE ", err));
    TM_TRY(tm_engine__quote_ident(sql, c->name, err));
    TM_TRY(tm_buf_printf(sql, err, "%sTRY_CAST(", cmp[i])); /* unreadable: no row passes */
    TM_TRY(tm_engine__quote_string(sql, hint[i], strlen(hint[i]), err));
    TM_TRY(tm_buf_printf(sql, err, " AS %s))", ty));
  }
  return TM_OK;
}

/* Runs a bounds query: *got (the min and the max found, both non-NULL) into out. */
static int bounds_run(duckdb_connection conn, const char *sql, const tm_column *c,
                      tm_engine_bounds *out, const char *what, tm_error *err) {
  tm_schema s;
  tm_schema_init(&s);
  int rc = tm_schema_add(&s, "min", c->type, true, -1, err);
  if (rc == TM_OK) rc = tm_schema_add(&s, "max", c->type, true, -1, err);
  tm_batch b;
  tm_batch_init(&b);
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_query(conn, sql, &r) == DuckDBError) {
      rc = tm_db__result_error(err, &r, what);
      duckdb_destroy_result(&r);
    } else {
      tm_duck_reader rd;
      tm_duck_reader_init(&rd, &r, &s, 1);
      rc = tm_duck_reader_next(&rd, &b, err);
      tm_duck_reader_dispose(&rd);
    }
  }
  if (rc == TM_OK && b.n_rows == 1) {
    tm_colview mn = tm_batch_col(&b, 0), mx = tm_batch_col(&b, 1);
    tm_value vmin, vmax;
    tm_colview_get(&mn, 0, &vmin);
    tm_colview_get(&mx, 0, &vmax);
    if (!vmin.is_null && !vmax.is_null) {
      rc = tm_value_copy(&out->min, &vmin, &out->owned[0], err);
      if (rc == TM_OK) rc = tm_value_copy(&out->max, &vmax, &out->owned[1], err);
      out->found = rc == TM_OK;
    }
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_batch_release(&b);
  tm_schema_dispose(&s);
  return rc;
}

/*
 * The time column's bounds use the hints of the last commit (duck_int.h):
 * when both hinted aggregates find a row they are the exact bounds, read
 * from the few row groups near them; otherwise every row is aggregated.
 * Either answer is one statement, so one committed state.
 */
static int duck_bounds(tm_engine *base, size_t col, tm_engine_bounds *out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  memset(out, 0, sizeof *out);
  if (e->pending) return TM_OK;
  const tm_column *c = &base->schema.cols[col];
  char *hint[2] = {NULL, NULL};
  if ((int)col == base->cfg.time_col) {
    pthread_mutex_lock(&e->hint_mu);
    if (e->hint[0] && e->hint[1]) {
      hint[0] = tm_strdup(e->hint[0]);
      hint[1] = tm_strdup(e->hint[1]);
    }
    pthread_mutex_unlock(&e->hint_mu);
  }
  bool hinted = hint[0] && hint[1];
  tm_buf sql = TM_BUF_INIT(1 << 16);
  duckdb_connection conn = NULL;
  int rc = tm_db__connect(base->db, &conn, err);
  if (rc == TM_OK && hinted) rc = bounds_sql(e, c, hint, &sql, err);
  if (rc == TM_OK && hinted) rc = bounds_run(conn, tm_buf_cstr(&sql), c, out, base->cfg.dataset, err);
  if (rc == TM_OK && !out->found) {
    tm_engine_bounds_dispose(out);
    memset(out, 0, sizeof *out);
    tm_buf_clear(&sql);
    rc = bounds_sql(e, c, NULL, &sql, err);
    if (rc == TM_OK) rc = bounds_run(conn, tm_buf_cstr(&sql), c, out, base->cfg.dataset, err);
  }
  if (conn) duckdb_disconnect(&conn);
  tm_buf_dispose(&sql);
  tm_free(hint[0]);
  tm_free(hint[1]);
  return rc;
}

static int file_size(const char *path, uint64_t *out) {
  struct stat st;
  if (stat(path, &st) != 0) return errno == ENOENT ? TM_OK : TM_EIO;
  *out += (uint64_t)st.st_size;
  return TM_OK;
}

static int duck_size_bytes(tm_engine *base, uint64_t *out, tm_error *err) {
  tm_duck_engine *e = tm_duck_of(base);
  *out = 0;
  if (e->file) {
    char *wal = tm_asprintf("%s.wal", e->file);
    if (!wal) return tm_error_nomem(err);
    int rc = file_size(e->file, out);
    if (rc == TM_OK) rc = file_size(wal, out);
    tm_free(wal);
    if (rc < 0) return tm_error_set(err, TM_EIO, "%s: cannot stat: %s", e->file, strerror(errno));
    return TM_OK;
  }
  /* Memory mode: the blocks the in-memory database uses. */
  duckdb_connection c;
  TM_TRY(tm_db__connect(base->db, &c, err));
  duckdb_prepared_statement ps = NULL;
  int rc = TM_OK;
  if (duckdb_prepare(c, "SELECT used_blocks * block_size FROM pragma_database_size() WHERE database_name = $1", &ps) == DuckDBError)
    rc = tm_error_set(err, TM_ERROR, "DuckDB: %s", duckdb_prepare_error(ps));
  if (rc == TM_OK) duckdb_bind_varchar(ps, 1, e->alias);
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_execute_prepared(ps, &r) == DuckDBError) rc = tm_db__result_error(err, &r, base->cfg.dataset);
    else if (duckdb_row_count(&r) > 0) *out = (uint64_t)duckdb_value_int64(&r, 0, 0);
    duckdb_destroy_result(&r);
  }
  duckdb_destroy_prepare(&ps);
  duckdb_disconnect(&c);
  return rc;
}

static int duck_relation(tm_engine *base, tm_buf *out, tm_error *err) {
  return tm_duck__table(out, tm_duck_of(base), TM_DUCK_ROWS, err);
}

/* ---- backups (C2) ------------------------------------------------------------------ */

/* Moves from to to: a rename, or a copy when they are on different file systems. */
static int move_file(const char *from, const char *to, tm_error *err) {
  if (rename(from, to) == 0) return TM_OK;
  if (errno != EXDEV) return tm_error_set(err, TM_EIO, "%s: rename to %s: %s", from, to, strerror(errno));
  tm_input *in = NULL;
  tm_atomic_file f;
  uint64_t size = 0;
  int rc = tm_input_open_file(&in, from, err);
  if (rc == TM_OK) rc = tm_input_size(in, &size, err);
  bool open = false;
  if (rc == TM_OK) open = (rc = tm_atomic_file_begin(&f, to, err)) == TM_OK;
  char *buf = rc == TM_OK ? tm_malloc(1 << 20) : NULL;
  if (rc == TM_OK && !buf) rc = tm_error_nomem(err);
  for (uint64_t off = 0; rc == TM_OK && off < size;) {
    size_t want = size - off < (1u << 20) ? (size_t)(size - off) : (1u << 20);
    rc = tm_input_read_exact(in, off, buf, want, err);
    if (rc == TM_OK) rc = tm_atomic_file_write(&f, buf, want, err);
    off += want;
  }
  if (rc == TM_OK) {
    rc = tm_atomic_file_commit(&f, err);
    open = false;
  }
  if (open) tm_atomic_file_abort(&f);
  tm_free(buf);
  tm_input_close(in);
  if (rc == TM_OK) unlink(from);
  return rc;
}

/*
 * A consistent copy: COPY FROM DATABASE into a new database file, inside one
 * DuckDB transaction, so the copy is the last committed state whatever
 * refreshes commit meanwhile (they are not blocked, nor are queries). The new
 * file is made beside the acceleration (a folder the instance may write),
 * checkpointed, detached, then moved to dest_path.
 */
int tm_engine__duck_backup(tm_engine *base, const char *dest_path, tm_error *err) {
  static uint64_t counter;
  tm_duck_engine *e = tm_duck_of(base);
  if (!e->file)
    return tm_error_set(err, TM_EUNSUPPORTED, "dataset '%s': a memory-mode acceleration has no file to copy",
                        base->cfg.dataset);
  uint64_t n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char *tmp = tm_asprintf("%s.backup-%d-%llu", e->file, (int)getpid(), (unsigned long long)n);
  char *tmp_wal = tmp ? tm_asprintf("%s.wal", tmp) : NULL;
  if (!tmp || !tmp_wal) {
    tm_free(tmp);
    return tm_error_nomem(err);
  }
  unlink(tmp);
  unlink(tmp_wal);
  char *alias = NULL;
  duckdb_connection c = NULL;
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_db__attach(base->db, tmp, "backup", &alias, err);
  if (rc == TM_OK) rc = tm_db__connect(base->db, &c, err);
  if (rc == TM_OK) rc = tm_db__exec(c, "BEGIN TRANSACTION", base->cfg.dataset, err);
  if (rc == TM_OK) rc = tm_buf_printf(&sql, err, "COPY FROM DATABASE %s TO ", e->q);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, alias, err);
  if (rc == TM_OK) rc = tm_db__exec(c, tm_buf_cstr(&sql), base->cfg.dataset, err);
  if (rc == TM_OK) rc = tm_db__exec(c, "COMMIT", base->cfg.dataset, err);
  else if (c) tm_db__exec_quiet(c, "ROLLBACK");
  tm_buf_clear(&sql);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "CHECKPOINT ", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, alias, err);
  if (rc == TM_OK) rc = tm_db__exec(c, tm_buf_cstr(&sql), base->cfg.dataset, err);
  if (c) duckdb_disconnect(&c);
  if (alias) tm_db__detach(base->db, alias);
  if (rc == TM_OK && tm_path_exists(tmp_wal))
    rc = tm_error_set(err, TM_EIO, "%s: the copy kept a write-ahead log", tmp);
  if (rc == TM_OK) rc = move_file(tmp, dest_path, err);
  if (rc < 0) {
    unlink(tmp);
    unlink(tmp_wal);
  }
  tm_buf_dispose(&sql);
  tm_free(alias);
  tm_free(tmp);
  tm_free(tmp_wal);
  return rc;
}

/*
 * Whether path is a backup of kind: its _tm_meta names this format and this
 * engine. A cayenne and a duckdb backup share the extension, and a restore
 * of the other kind would open as an empty replacement (B9) instead of
 * serving at once.
 */
int tm_engine__duck_check_backup(tm_db *db, tm_engine_kind kind, const char *path, tm_error *err) {
  char *alias = NULL;
  duckdb_connection c = NULL;
  tm_kv meta;
  tm_kv_init(&meta);
  tm_buf sql = TM_BUF_INIT(1 << 16);
  int rc = tm_db__attach(db, path, "restore", &alias, err);
  if (rc == TM_OK) rc = tm_db__connect(db, &c, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, "SELECT key, value FROM ", err);
  if (rc == TM_OK) rc = tm_engine__quote_ident(&sql, alias, err);
  if (rc == TM_OK) rc = tm_buf_puts(&sql, ".main._tm_meta", err);
  if (rc == TM_OK) {
    duckdb_result r;
    if (duckdb_query(c, tm_buf_cstr(&sql), &r) == DuckDBError)
      rc = TM_CORRUPT(err, "%s: not a tidemark acceleration (%s)", path, duckdb_result_error(&r));
    else rc = kv_from_result(&r, &meta, err);
    duckdb_destroy_result(&r);
  }
  const char *fmt = tm_kv_get(&meta, "format"), *k = tm_kv_get(&meta, "kind");
  if (rc == TM_OK && (!fmt || strcmp(fmt, TM_DUCK_FORMAT) != 0))
    rc = TM_CORRUPT(err, "%s: acceleration format '%s' (expected '%s')", path, fmt ? fmt : "none",
                    TM_DUCK_FORMAT);
  if (rc == TM_OK && (!k || strcmp(k, tm_engine_kind_name(kind)) != 0))
    rc = TM_CORRUPT(err, "%s: a backup of engine %s, not %s", path, k ? k : "?",
                    tm_engine_kind_name(kind));
  if (c) duckdb_disconnect(&c);
  if (alias) tm_db__detach(db, alias);
  tm_free(alias);
  tm_buf_dispose(&sql);
  tm_kv_dispose(&meta);
  return rc;
}

/* ---- vtables ------------------------------------------------------------------------ */

static int open_cayenne(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err);
static int open_duckdb(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err);
static int open_arrow(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err);

#define DUCK_VTABLE(name, traits, open_fn, drop_fn)                                      \
  static const tm_engine_vtable name = {                                                 \
      TM_ENGINE_VTABLE_VERSION, traits, open_fn, drop_fn, duck_close, tm_duck__begin,    \
      tm_duck__write, tm_duck__delete_where, tm_duck__delete_provenance,                 \
      tm_duck__delete_before, tm_duck__commit,                                           \
      tm_duck__abort, duck_read_state, duck_row_count, duck_bounds, duck_scan_open,      \
      scan_next, scan_free, duck_size_bytes, duck_relation, duck_verify, NULL, NULL}

/* cayenne: file mode only, a folder of its own, the newest time per key (A8). */
DUCK_VTABLE(k_cayenne,
            ((tm_engine_traits){TM_ENGINE_CAYENNE, 1u << TM_ENGINE_FILE, TM_ENGINE_FILE,
                                TM_ENGINE_RULE_NEWEST_BY_TIME, true, true, true,
                                "cayenne_file_path", "", false}),
            open_cayenne, drop_cayenne);
/* duckdb: either mode, <name>.duckdb in the data folder, arrival order. */
DUCK_VTABLE(k_duckdb,
            ((tm_engine_traits){TM_ENGINE_DUCKDB, (1u << TM_ENGINE_FILE) | (1u << TM_ENGINE_MEMORY),
                                TM_ENGINE_MEMORY, TM_ENGINE_RULE_ARRIVAL, true, false, true,
                                "duckdb_file", ".duckdb", false}),
            open_duckdb, drop_duckdb);
/* arrow: memory only, arrival order. */
DUCK_VTABLE(k_arrow,
            ((tm_engine_traits){TM_ENGINE_ARROW, 1u << TM_ENGINE_MEMORY, TM_ENGINE_MEMORY,
                                TM_ENGINE_RULE_ARRIVAL, true, false, true, NULL, "", false}),
            open_arrow, drop_arrow);

static int open_cayenne(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err) {
  return duck_open(out, s, o, &k_cayenne, err);
}
static int open_duckdb(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err) {
  return duck_open(out, s, o, &k_duckdb, err);
}
static int open_arrow(tm_engine **out, const tm_schema *s, const tm_engine_options *o, tm_error *err) {
  return duck_open(out, s, o, &k_arrow, err);
}

const tm_engine_vtable *tm_engine__duck_vtable(tm_engine_kind kind) {
  switch (kind) {
    case TM_ENGINE_CAYENNE: return &k_cayenne;
    case TM_ENGINE_DUCKDB: return &k_duckdb;
    case TM_ENGINE_ARROW: return &k_arrow;
    default: return NULL;
  }
}
