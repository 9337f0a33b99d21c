/*
 * refresh_fixture.c - datasets, configs and multiset row checks for the
 * fault-injection tests of refreshes (test harness). See refresh_fixture.h.
 */
#include "refresh_fixture.h"

#include "runtime/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/iceberg/iceberg.h"
#include "format/iceberg/writer.h"
#include "format/parquet/parquet.h"
#include "io/io.h"
#include "source/iceberg_local.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/log.h"

#define TS0 1700000000

/* ---- generated rows ------------------------------------------------------------ */

/* Row id's values, as the canonical text hashed into signatures. */
static int row_text(char *buf, size_t cap, int64_t id) {
  return snprintf(buf, cap, "%lld|%lld|row-%lld|%.17g", (long long)id, (long long)(TS0 + id),
                  (long long)id, (double)id + 0.25);
}

static void sig_add_text(rfx_sig *s, const char *text, size_t len) {
  s->rows++;
  s->sum1 += tm_hash64(text, len, 0x51);
  uint64_t h2 = tm_hash64(text, len, 0x9e3779b97f4a7c15ull);
  s->sum2 += h2 * 0x2545f4914f6cdd1dull + (h2 >> 29);
}

bool rfx_sig_eq(rfx_sig a, rfx_sig b) {
  return a.rows == b.rows && a.sum1 == b.sum1 && a.sum2 == b.sum2;
}

void rfx_sig_add_ids(rfx_sig *s, int64_t lo, int64_t hi) {
  char buf[128];
  for (int64_t id = lo; id < hi; id++) {
    int n = row_text(buf, sizeof buf, id);
    sig_add_text(s, buf, (size_t)n);
  }
}

rfx_sig rfx_sig_ids(int64_t lo, int64_t hi) {
  rfx_sig s = {0, 0, 0};
  rfx_sig_add_ids(&s, lo, hi);
  return s;
}

static void row_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), true, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_of(TM_TYPE_INT64), true, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "v", tm_type_of(TM_TYPE_UTF8), true, 3, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "x", tm_type_of(TM_TYPE_FLOAT64), true, 4, &err), &err);
}

/* The generated rows [lo, hi) as one batch of schema s. */
static void row_batch(const tm_schema *s, int64_t lo, int64_t hi, tm_batch *out) {
  tm_error err;
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, s, &err), &err);
  for (int64_t id = lo; id < hi; id++) {
    char v[48];
    int n = snprintf(v, sizeof v, "row-%lld", (long long)id);
    TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 0), id, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(tm_batch_builder_col(&bb, 1), TS0 + id, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_bytes(tm_batch_builder_col(&bb, 2), v, (size_t)n, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_double(tm_batch_builder_col(&bb, 3), (double)id + 0.25, &err),
                 &err);
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
}

void rfx_write_parquet(const char *path, int64_t lo, int64_t hi) {
  tm_error err;
  tm_schema s;
  row_schema(&s);
  tm_batch b;
  row_batch(&s, lo, hi, &b);
  tm_buf out = TM_BUF_INIT(1 << 26);
  tm_parquet_writer *w = NULL;
  tm_parquet_writer_options o = TM_PARQUET_WRITER_OPTIONS_INIT;
  o.row_group_rows = 64; /* several row groups: more reads to fail */
  TM_ASSERT_OK(tm_parquet_writer_new(&w, &s, &o, tm_parquet_sink_buf, &out, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_write(w, &b, &err), &err);
  TM_ASSERT_OK(tm_parquet_writer_close(w, &err), &err);
  TM_ASSERT_OK(tm_write_file_atomic(path, out.ptr, out.len, &err), &err);
  tm_buf_dispose(&out);
  tm_batch_release(&b);
  tm_schema_dispose(&s);
}

void rfx_write_csv(const char *path, int64_t lo, int64_t hi) {
  tm_error err;
  tm_buf out = TM_BUF_INIT(1 << 26);
  TM_ASSERT_OK(tm_buf_printf(&out, &err, "id,ts,v,x\n"), &err);
  for (int64_t id = lo; id < hi; id++)
    TM_ASSERT_OK(tm_buf_printf(&out, &err, "%lld,%lld,row-%lld,%.2f\n", (long long)id,
                               (long long)(TS0 + id), (long long)id, (double)id + 0.25),
                 &err);
  TM_ASSERT_OK(tm_write_file_atomic(path, out.ptr, out.len, &err), &err);
  tm_buf_dispose(&out);
}

/* ---- Iceberg tables --------------------------------------------------------------- */

static const char *k_ice_schema =
    "{\"type\":\"struct\",\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"long\"},"
    "{\"id\":3,\"name\":\"v\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":4,\"name\":\"x\",\"required\":false,\"type\":\"double\"}]}";

void rfx_ice_create(const char *root) {
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json = k_ice_schema;
  TM_ASSERT_OK(tm_iceberg_create_table(&io, root, &co, &err), &err);
}

static tm_iceberg_table *ice_open(const char *root, tm_iceberg_io *io) {
  tm_error err;
  tm_iceberg_io_local(io);
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = root;
  tm_iceberg_table *t = NULL;
  TM_ASSERT_OK(tm_iceberg_table_open(&t, io, &o, &err), &err);
  return t;
}

typedef struct gen {
  int64_t lo, hi;
  bool done;
} gen;

static int next_rows(void *payload, tm_batch *out, tm_error *err) {
  (void)err;
  gen *g = payload;
  if (g->done) return TM_ITEROVER;
  tm_schema s;
  row_schema(&s);
  row_batch(&s, g->lo, g->hi, out);
  tm_schema_dispose(&s);
  g->done = true;
  return TM_OK;
}

void rfx_ice_append(const char *root, int64_t lo, int64_t hi) {
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = ice_open(root, &io);
  gen g = {lo, hi, false};
  tm_iceberg_op_options oo = TM_ICEBERG_OP_OPTIONS_INIT;
  tm_iceberg_op_result res;
  TM_ASSERT_OK(tm_iceberg_append(t, next_rows, &g, &oo, &res, &err), &err);
  tm_iceberg_table_free(t);
}

void rfx_ice_delete(const char *root, int64_t lo, int64_t hi) {
  tm_error err;
  tm_iceberg_io io;
  tm_iceberg_table *t = ice_open(root, &io);
  char where[128];
  snprintf(where, sizeof where, "id >= %lld AND id < %lld", (long long)lo, (long long)hi);
  tm_predicate pred;
  tm_predicate_init(&pred);
  TM_ASSERT_OK(tm_iceberg_parse_where(
                   where, tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t)), &pred,
                   &err),
               &err);
  tm_iceberg_op_options oo = TM_ICEBERG_OP_OPTIONS_INIT;
  tm_iceberg_op_result res;
  TM_ASSERT_OK(tm_iceberg_delete_where(t, &pred, TM_ICEBERG_DELETE_POSITION, NULL, 0, &oo, &res,
                                       &err),
               &err);
  tm_predicate_dispose(&pred);
  tm_iceberg_table_free(t);
}

/* ---- configs and accels ---------------------------------------------------------- */

static void open_accel(rfx *f) {
  tm_error err;
  tm_accel_options o;
  tm_accel_options_init(&o);
  o.base_dir = f->cfg.dir;
  o.db = f->db;
  TM_ASSERT_OK(tm_accel_new(&f->a, &f->cfg.datasets[0], &o, &err), &err);
}

void rfx_open(rfx *f, const char *dir, const char *yaml) {
  tm_error err;
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "%s", dir);
  f->yaml = tm_strdup(yaml);
  TM_ASSERT(f->yaml);
  TM_ASSERT_OK(tm_config_load_text(&f->cfg, yaml, strlen(yaml), "t.yaml", dir, &err), &err);
  f->has_cfg = true;
  TM_ASSERT_OK(tm_runtime_db_open(&f->cfg, &f->db, &err), &err);
  open_accel(f);
}

void rfx_reopen(rfx *f) {
  tm_accel_free(f->a);
  f->a = NULL;
  open_accel(f);
}

void rfx_restart(rfx *f) {
  tm_error err;
  tm_accel_free(f->a);
  f->a = NULL;
  tm_db_release(f->db);
  f->db = NULL;
  TM_ASSERT_OK(tm_runtime_db_open(&f->cfg, &f->db, &err), &err);
  open_accel(f);
}

void rfx_close(rfx *f) {
  tm_accel_free(f->a);
  f->a = NULL;
  tm_db_release(f->db);
  f->db = NULL;
  if (f->has_cfg) tm_config_dispose(&f->cfg);
  f->has_cfg = false;
  tm_free(f->yaml);
  f->yaml = NULL;
}

/* Hashes one row of b the way row_text writes generated rows. */
static void sig_add_row(rfx_sig *s, const tm_batch *b, const int idx[4], int64_t row) {
  char buf[256];
  tm_colview id = tm_batch_col(b, (size_t)idx[0]), ts = tm_batch_col(b, (size_t)idx[1]);
  tm_colview v = tm_batch_col(b, (size_t)idx[2]), x = tm_batch_col(b, (size_t)idx[3]);
  tm_strview sv = tm_colview_bytes(&v, row);
  int n = snprintf(buf, sizeof buf, "%lld|%lld|%.*s|%.17g", (long long)tm_colview_int(&id, row),
                   (long long)tm_colview_int(&ts, row), (int)sv.len, sv.ptr,
                   tm_colview_double(&x, row));
  sig_add_text(s, buf, (size_t)n);
}

int rfx_accel_sig(tm_accel *a, rfx_sig *out, tm_error *err) {
  memset(out, 0, sizeof *out);
  tm_engine *e = tm_accel_engine(a);
  if (!e) return TM_OK;
  const tm_schema *schema = tm_engine_schema(e);
  const char *names[4] = {"id", "ts", "v", "x"};
  int idx[4];
  for (int i = 0; i < 4; i++) {
    idx[i] = tm_schema_find(schema, names[i]);
    TM_ASSERT_MSG(idx[i] >= 0, "the acceleration has no column %s", names[i]);
  }
  tm_engine_scan *sc = NULL;
  int rc = tm_engine_scan_open(e, NULL, 0, NULL, &sc, err);
  tm_batch b;
  while (rc == TM_OK && (rc = tm_engine_scan_next(sc, &b, err)) == TM_OK) {
    for (int64_t r = 0; r < b.n_rows; r++) sig_add_row(out, &b, idx, r);
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_engine_scan_free(sc);
  tm_engine_release(e);
  return rc;
}

/* ---- scenario templates ------------------------------------------------------ */

static void path_join(char *out, size_t cap, const char *a, const char *b) {
  snprintf(out, cap, "%s/%s", a, b);
}

static void make_yaml(rfx_template *t, const rfx_scenario *s) {
  const char *from = s->src == RFX_FILES ? "file:data" : (s->ice_url ? s->ice_url : "iceberg:file://tbl");
  const char *mode = s->kind == RFX_FULL ? "full" : "append";
  snprintf(t->yaml, sizeof t->yaml,
           "datasets:\n"
           "  - from: %s\n"
           "    name: events\n"
           "    time_column: ts\n"
           "    time_format: unix_seconds\n"
           "    acceleration:\n%s"
           "      refresh_mode: %s\n",
           from, s->accel, mode);
}

/* Applies the staged change inside run folder dir (after the base refresh). */
void rfx_template_apply(const rfx_scenario *s, const char *dir) {
  char a[1200], b[1200];
  if (s->kind == RFX_FIRST) return; /* the first load reads the template's source as it is */
  if (s->src == RFX_FILES) {
    if (s->kind == RFX_FULL) {
      path_join(a, sizeof a, dir, "data/b.csv");
      TM_ASSERT(remove(a) == 0);
    }
    const char *names[] = {"c.parquet", "d.csv"};
    for (int i = 0; i < 2; i++) {
      char from[1200], to[1200];
      snprintf(from, sizeof from, "%s/new/%s", dir, names[i]);
      snprintf(to, sizeof to, "%s/data/%s", dir, names[i]);
      if (s->kind == RFX_FULL && i == 1) continue;
      TM_ASSERT(rename(from, to) == 0);
    }
    return;
  }
  path_join(a, sizeof a, dir, "tbl");
  path_join(b, sizeof b, dir, "tbl-next");
  rfx_remove_tree(a);
  TM_ASSERT(rename(b, a) == 0);
}

/*
 * Builds the template: source rows [0, 300) as a.parquet + b.csv (files) or
 * two append snapshots (Iceberg); the change adds [300, 400) and [400, 450)
 * (append), or for a full refresh adds [300, 400) and removes b.csv's rows
 * [200, 300) (files) or deletes [100, 150) (Iceberg).
 */
void rfx_template_make(rfx_template *t, const rfx_scenario *s, const char *dir) {
  snprintf(t->dir, sizeof t->dir, "%s", dir);
  TM_ASSERT(mkdir(dir, 0755) == 0);
  make_yaml(t, s);
  char p[1200];
  if (s->src == RFX_FILES) {
    path_join(p, sizeof p, dir, "data");
    TM_ASSERT(mkdir(p, 0755) == 0);
    path_join(p, sizeof p, dir, "new");
    TM_ASSERT(mkdir(p, 0755) == 0);
    path_join(p, sizeof p, dir, "data/a.parquet");
    rfx_write_parquet(p, 0, 200);
    path_join(p, sizeof p, dir, "data/b.csv");
    rfx_write_csv(p, 200, 300);
    path_join(p, sizeof p, dir, "new/c.parquet");
    rfx_write_parquet(p, 300, 400);
    path_join(p, sizeof p, dir, "new/d.csv");
    rfx_write_csv(p, 400, 450);
  } else {
    path_join(p, sizeof p, dir, "tbl");
    rfx_ice_create(p);
    rfx_ice_append(p, 0, 200);
    rfx_ice_append(p, 200, 300);
    char next[1200];
    path_join(next, sizeof next, dir, "tbl-next");
    rfx_copy_tree(p, next);
    rfx_ice_append(next, 300, 400);
    if (s->kind == RFX_FULL) rfx_ice_delete(next, 100, 150);
    else rfx_ice_append(next, 400, 450);
  }
  /* The rows before and after the refresh under test. */
  t->old_rows = s->kind == RFX_FIRST ? rfx_sig_ids(0, 0) : rfx_sig_ids(0, 300);
  if (s->kind == RFX_FIRST) t->new_rows = rfx_sig_ids(0, 300);
  else if (s->kind == RFX_APPEND) t->new_rows = rfx_sig_ids(0, 450);
  else if (s->src == RFX_FILES) {
    t->new_rows = rfx_sig_ids(0, 200);
    rfx_sig_add_ids(&t->new_rows, 300, 400);
  } else {
    t->new_rows = rfx_sig_ids(0, 100);
    rfx_sig_add_ids(&t->new_rows, 150, 400);
  }
  /* File mode: load the base acceleration into the template once. */
  if (s->kind != RFX_FIRST && !s->memory) {
    rfx f;
    rfx_open(&f, dir, t->yaml);
    tm_error err;
    tm_refresh_result r;
    TM_ASSERT_OK(tm_accel_refresh(f.a, NULL, &r, &err), &err);
    rfx_sig got;
    TM_ASSERT_OK(rfx_accel_sig(f.a, &got, &err), &err);
    TM_ASSERT_MSG(rfx_sig_eq(got, t->old_rows), "%s: base load has %lld rows", s->name,
                  (long long)got.rows);
    rfx_close(&f);
  }
}


/* ---- folders --------------------------------------------------------------------- */

void rfx_copy_tree(const char *from, const char *to) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", from, to);
  TM_ASSERT_MSG(system(cmd) == 0, "%s failed", cmd);
}

void rfx_remove_tree(const char *path) {
  tm_error err;
  if (tm_path_exists(path)) TM_ASSERT_OK(tm_remove_tree(path, &err), &err);
}

static void drop_line(tm_log_level level, const char *line, void *payload) {
  (void)level;
  (void)line;
  (void)payload;
}

void rfx_quiet_logs(void) {
  tm_log_set_level(TM_LOG_INFO); /* format every line: logging runs on the failure paths too */
  tm_log_set_sink(drop_line, NULL);
}
