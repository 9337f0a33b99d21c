/*
 * Unit tests for the engine interface, run against every engine and mode:
 * the conflict rules (SPEC A8), type round trips with NULLs, NaN, infinities,
 * 1 MB strings and decimal(38), the state map committed with the rows (D1,
 * B8), full refresh swaps (A11), retention deletes (C3), reads of one
 * committed state (C5), bounds (A2), reopening and replacing for a new
 * schema (B9), deletes by provenance (E4, E6), and the format of earlier
 * tidemark versions.
 */
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <time.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "engine/engine_int.h"
#include "engine/sqlite/sqlite_int.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

typedef struct engine_case {
  tm_engine_kind kind;
  tm_engine_mode mode;
} engine_case;

static const engine_case k_cases[] = {
    {TM_ENGINE_SQLITE, TM_ENGINE_FILE},   {TM_ENGINE_SQLITE, TM_ENGINE_MEMORY},
    {TM_ENGINE_ARROW, TM_ENGINE_MEMORY},  {TM_ENGINE_CAYENNE, TM_ENGINE_FILE},
    {TM_ENGINE_DUCKDB, TM_ENGINE_FILE},   {TM_ENGINE_DUCKDB, TM_ENGINE_MEMORY},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

static const char *case_name(const engine_case *c) {
  static char buf[64];
  snprintf(buf, sizeof buf, "%s/%s", tm_engine_kind_name(c->kind), tm_engine_mode_name(c->mode));
  return buf;
}

/* ---- a small keyed schema: id, ts (timestamp us UTC), v ---------------------- */

typedef struct row {
  int64_t id;
  int64_t ts; /* microseconds */
  const char *v;
} row;

static void ev_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "v", tm_type_of(TM_TYPE_UTF8), true, 3, &err), &err);
}

static void make_rows(tm_batch *out, const row *rows, size_t n) {
  tm_error err;
  tm_schema s;
  ev_schema(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (size_t i = 0; i < n; i++) {
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], rows[i].id, &err), &err);
    if (rows[i].ts == INT64_MIN) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[1], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], rows[i].ts, &err), &err);
    if (!rows[i].v) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[2], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[2], rows[i].v, strlen(rows[i].v), &err), &err);
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

typedef struct open_params {
  bool keyed;
  const char *on_conflict; /* NULL, "drop", "upsert" */
  const char *sub;         /* sub-folder name, to reopen the same files */
} open_params;

static void fill_options(tm_engine_options *o, const engine_case *c, const open_params *p,
                         tm_kv *oc, const char **pk) {
  tm_error err;
  tm_engine_options_init(o);
  o->db = tm_test_db();
  o->dataset = "events";
  o->mode = c->mode;
  o->time_column = "ts";
  if (c->mode == TM_ENGINE_FILE) {
    const char *sub = p->sub ? p->sub : "acc";
    char name[128];
    snprintf(name, sizeof name, "%s-%s%s", sub, tm_engine_kind_name(c->kind),
             c->kind == TM_ENGINE_SQLITE ? ".db" : c->kind == TM_ENGINE_DUCKDB ? ".duckdb" : "");
    o->path = tm_test_path(name);
  }
  tm_kv_init(oc);
  if (p->keyed) {
    pk[0] = "id";
    o->primary_key = pk;
    o->n_primary_key = 1;
    if (p->on_conflict) {
      TM_ASSERT_OK(tm_kv_set(oc, "id", p->on_conflict, &err), &err);
      o->on_conflict = oc;
    }
  }
}

static tm_engine *open_engine(const engine_case *c, const open_params *p) {
  tm_error err;
  tm_schema s;
  ev_schema(&s);
  tm_engine_options o;
  tm_kv oc;
  const char *pk[1];
  fill_options(&o, c, p, &oc, pk);
  tm_engine *e = NULL;
  int rc = tm_engine_open(&e, c->kind, &s, &o, &err);
  TM_ASSERT_MSG(rc == TM_OK, "%s: open: %s", case_name(c), err.message);
  tm_kv_dispose(&oc);
  tm_schema_dispose(&s);
  return e;
}

static void commit_rows(tm_engine *e, const row *rows, size_t n, tm_engine_commit_info *info) {
  tm_error err;
  tm_engine_txn *t;
  tm_batch b;
  make_rows(&b, rows, n);
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, info, &err), &err);
  tm_batch_release(&b);
}

static int cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows a scan reads, sorted by (id, ts, v), as "id@ts=v" lines. */
static char *dump_scan(tm_engine_scan *sc) {
  tm_error err;
  size_t n = 0, cap = 16;
  char **lines = tm_calloc(cap, sizeof *lines);
  tm_batch b;
  int rc;
  while ((rc = tm_engine_scan_next(sc, &b, &err)) == TM_OK) {
    tm_colview id = tm_batch_col(&b, 0), ts = tm_batch_col(&b, 1), v = tm_batch_col(&b, 2);
    for (int64_t r = 0; r < b.n_rows; r++) {
      if (n == cap) {
        cap *= 2;
        lines = tm_reallocarray(lines, cap, sizeof *lines);
      }
      tm_strview sv = tm_colview_is_null(&v, r) ? tm_sv("NULL", 4) : tm_colview_bytes(&v, r);
      char ts_text[32];
      if (tm_colview_is_null(&ts, r)) snprintf(ts_text, sizeof ts_text, "NULL");
      else snprintf(ts_text, sizeof ts_text, "%lld", (long long)tm_colview_int(&ts, r));
      lines[n++] = tm_asprintf("%020lld@%s=%.*s", (long long)tm_colview_int(&id, r), ts_text,
                               (int)sv.len, sv.ptr);
    }
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  tm_engine_scan_free(sc);
  qsort(lines, n, sizeof *lines, cmp_lines);
  tm_buf out = TM_BUF_INIT(TM_BUF_UNLIMITED);
  for (size_t i = 0; i < n; i++) {
    /* Strip the zero padding used for sorting. */
    const char *p = lines[i];
    while (*p == '0' && p[1] != '@') p++;
    TM_ASSERT_OK(tm_buf_printf(&out, &err, "%s%s", i ? ";" : "", p), &err);
    tm_free(lines[i]);
  }
  tm_free(lines);
  char *text = tm_buf_take(&out, NULL);
  return text;
}

static char *dump(tm_engine *e) {
  tm_error err;
  tm_engine_scan *sc;
  TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &sc, &err), &err);
  return dump_scan(sc);
}

#define ASSERT_DUMP(e, want)                          \
  do {                                                \
    char *got_ = dump(e);                             \
    TM_ASSERT_MSG(strcmp(got_, (want)) == 0, "%s: rows [%s], want [%s]", case_name(c), got_, (want)); \
    tm_free(got_);                                    \
  } while (0)

static int64_t total_superseded(const tm_engine_commit_info *i) {
  int64_t n = 0;
  for (int k = 0; k < TM_SUPERSEDED__COUNT; k++) n += i->rows_superseded[k];
  return n;
}

/* ---- A8: conflict rules ------------------------------------------------------- */

/* Expected winner per rule: cayenne (time), upsert (last arrival), drop (first). */
typedef enum { RULE_TIME, RULE_UPSERT, RULE_DROP } rule;

static rule rule_of(const engine_case *c, const char *on_conflict) {
  if (c->kind == TM_ENGINE_CAYENNE) return RULE_TIME;
  return on_conflict && strcmp(on_conflict, "upsert") == 0 ? RULE_UPSERT : RULE_DROP;
}

static void a8_case(const engine_case *c, const char *on_conflict) {
  open_params p = {true, on_conflict, NULL};
  tm_engine *e = open_engine(c, &p);
  rule r = rule_of(c, on_conflict);
  tm_engine_commit_info info;

  /* Several versions of a key in one batch. */
  row one_batch[] = {{1, 10, "a"}, {1, 30, "b"}, {1, 20, "c"}};
  commit_rows(e, one_batch, 3, &info);
  ASSERT_DUMP(e, r == RULE_TIME ? "1@30=b" : r == RULE_UPSERT ? "1@20=c" : "1@10=a");
  TM_ASSERT_INT_EQ(total_superseded(&info), 2);
  if (r == RULE_TIME) TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_OLDER], 2);
  else TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_ARRIVAL], 2);
  TM_ASSERT_INT_EQ(info.rows_after, 1);

  /* A late row older than the stored one. */
  row stored[] = {{2, 50, "new"}};
  row late[] = {{2, 40, "late"}};
  commit_rows(e, stored, 1, &info);
  commit_rows(e, late, 1, &info);
  TM_ASSERT_INT_EQ(total_superseded(&info), 1);
  if (r == RULE_TIME) TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_OLDER], 1);
  const char *want2 = r == RULE_UPSERT ? "1@20=c;2@40=late" : r == RULE_TIME ? "1@30=b;2@50=new"
                                                                             : "1@10=a;2@50=new";
  ASSERT_DUMP(e, want2);

  /* Equal times: the later arrival wins on cayenne, across and within batches. */
  row first[] = {{3, 60, "x"}};
  row second[] = {{3, 60, "y"}, {4, 70, "p"}, {4, 70, "q"}};
  commit_rows(e, first, 1, NULL);
  commit_rows(e, second, 3, &info);
  TM_ASSERT_INT_EQ(total_superseded(&info), 2);
  if (r == RULE_TIME) TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_EQUAL_TIME], 2);
  char *got = dump(e);
  const char *want3 = r == RULE_DROP ? "3@60=x;4@70=p" : "3@60=y;4@70=q";
  TM_ASSERT_MSG(strstr(got, want3) != NULL, "%s: [%s] lacks [%s]", case_name(c), got, want3);
  tm_free(got);

  /* A row identical to the stored one changes nothing. */
  row same[] = {{5, 80, "same"}};
  commit_rows(e, same, 1, NULL);
  commit_rows(e, same, 1, &info);
  TM_ASSERT_INT_EQ(total_superseded(&info), 1);
  TM_ASSERT_INT_EQ(info.rows_written, 0);
  if (r != RULE_DROP) TM_ASSERT_INT_EQ(info.rows_superseded[TM_SUPERSEDED_UNCHANGED], 1);

  /* A newer version after all that (upsert and cayenne replace, drop keeps). */
  row newer[] = {{2, 90, "newest"}};
  commit_rows(e, newer, 1, &info);
  got = dump(e);
  TM_ASSERT_MSG(strstr(got, r == RULE_DROP ? "2@50=new" : "2@90=newest") != NULL, "%s: [%s]",
                case_name(c), got);
  tm_free(got);
  int64_t n;
  tm_error err;
  TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 5);
  tm_engine_release(e);
}

TM_TEST(engine_a8_conflict_rules_drop) {
  for (size_t i = 0; i < N_CASES; i++) a8_case(&k_cases[i], "drop");
}

TM_TEST(engine_a8_conflict_rules_upsert) {
  for (size_t i = 0; i < N_CASES; i++) a8_case(&k_cases[i], "upsert");
}

TM_TEST(engine_a8_default_on_conflict_is_drop) {
  for (size_t i = 0; i < N_CASES; i++) a8_case(&k_cases[i], NULL);
}

TM_TEST(engine_unkeyed_keeps_every_row) {
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, NULL};
    tm_engine *e = open_engine(c, &p);
    row rows[] = {{1, 10, "a"}, {1, 10, "a"}, {2, INT64_MIN, NULL}};
    tm_engine_commit_info info;
    commit_rows(e, rows, 3, &info);
    commit_rows(e, rows, 1, &info);
    ASSERT_DUMP(e, "1@10=a;1@10=a;1@10=a;2@NULL=NULL");
    TM_ASSERT_INT_EQ(info.rows_written, 1);
    TM_ASSERT_INT_EQ(info.rows_after, 4);
    tm_engine_release(e);
  }
}

/* ---- every type round-trips, with NULLs ------------------------------------------- */

static void all_types_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  tm_type t64 = tm_type_of(TM_TYPE_TIME64);
  t64.unit = TM_UNIT_MICRO;
  tm_type t64n = t64;
  t64n.unit = TM_UNIT_NANO;
  tm_type uuid = tm_type_fixed(16);
  uuid.uuid = true;
  struct {
    const char *name;
    tm_type type;
  } cols[] = {{"b", tm_type_of(TM_TYPE_BOOL)},
              {"i8", tm_type_of(TM_TYPE_INT8)},
              {"i16", tm_type_of(TM_TYPE_INT16)},
              {"i32", tm_type_of(TM_TYPE_INT32)},
              {"i64", tm_type_of(TM_TYPE_INT64)},
              {"u8", tm_type_of(TM_TYPE_UINT8)},
              {"u16", tm_type_of(TM_TYPE_UINT16)},
              {"u32", tm_type_of(TM_TYPE_UINT32)},
              {"u64", tm_type_of(TM_TYPE_UINT64)},
              {"f32", tm_type_of(TM_TYPE_FLOAT32)},
              {"f64", tm_type_of(TM_TYPE_FLOAT64)},
              {"dec", tm_type_decimal(10, 2)},
              {"bigdec", tm_type_decimal(38, 10)},
              {"s", tm_type_of(TM_TYPE_UTF8)},
              {"bin", tm_type_of(TM_TYPE_BINARY)},
              {"fix", tm_type_fixed(3)},
              {"u", uuid},
              {"d", tm_type_of(TM_TYPE_DATE32)},
              {"t", t64},
              {"tn", t64n},
              {"ts_s", tm_type_timestamp(TM_UNIT_SECOND, false)},
              {"ts_ms", tm_type_timestamp(TM_UNIT_MILLI, true)},
              {"ts_us", tm_type_timestamp(TM_UNIT_MICRO, true)},
              {"ts_ns", tm_type_timestamp(TM_UNIT_NANO, false)}};
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    TM_ASSERT_OK(tm_schema_add(s, cols[i].name, cols[i].type, true, (int32_t)i + 1, &err), &err);
}

static void dec_of(int64_t v, uint8_t out[16]) {
  __int128 x = v;
  memcpy(out, &x, 16);
}

/* Row r of the all-types data; every column is NULL in some rows. */
static void append_all_types_row(tm_batch_builder *bb, int r) {
  tm_error err;
  size_t n = bb->schema.n_cols;
  for (size_t c = 0; c < n; c++) {
    tm_colbuilder *cb = &bb->cols[c];
    if ((r + (int)c) % 5 == 0) {
      TM_ASSERT_OK(tm_colbuilder_append_null(cb, &err), &err);
      continue;
    }
    int64_t k = r * 7 + (int64_t)c;
    int sign = r % 2 ? -1 : 1;
    switch (cb->type.id) {
      case TM_TYPE_BOOL: TM_ASSERT_OK(tm_colbuilder_append_bool(cb, r % 3 == 1, &err), &err); break;
      case TM_TYPE_INT8: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r == 1 ? -128 : sign * k % 120, &err), &err); break;
      case TM_TYPE_INT16: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r == 2 ? 32767 : sign * k * 100, &err), &err); break;
      case TM_TYPE_INT32: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r == 3 ? INT32_MIN : sign * k * 100000, &err), &err); break;
      case TM_TYPE_INT64: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r == 4 ? INT64_MAX : sign * k * INT64_C(1000000000000), &err), &err); break;
      case TM_TYPE_UINT8: TM_ASSERT_OK(tm_colbuilder_append_uint(cb, r == 1 ? 255 : (uint64_t)k % 200, &err), &err); break;
      case TM_TYPE_UINT16: TM_ASSERT_OK(tm_colbuilder_append_uint(cb, r == 2 ? 65535 : (uint64_t)k * 300, &err), &err); break;
      case TM_TYPE_UINT32: TM_ASSERT_OK(tm_colbuilder_append_uint(cb, r == 3 ? UINT32_MAX : (uint64_t)k * 70000, &err), &err); break;
      case TM_TYPE_UINT64: TM_ASSERT_OK(tm_colbuilder_append_uint(cb, r == 4 ? UINT64_MAX : (uint64_t)k << 40, &err), &err); break;
      case TM_TYPE_FLOAT32: TM_ASSERT_OK(tm_colbuilder_append_double(cb, r == 1 ? NAN : sign * (double)k / 3.0, &err), &err); break;
      case TM_TYPE_FLOAT64: {
        double f = r == 2 ? INFINITY : r == 3 ? NAN : r == 4 ? -INFINITY : sign * (double)k / 7.0;
        TM_ASSERT_OK(tm_colbuilder_append_double(cb, f, &err), &err);
        break;
      }
      case TM_TYPE_DECIMAL128: {
        uint8_t d[16];
        if (cb->type.precision > 15) {
          __int128 x = (__int128)(sign * k) * 1000000000000000000LL * 1000;
          if (r == 6) { /* the largest decimal(38): 38 nines */
            x = 0;
            for (int nine = 0; nine < 38; nine++) x = x * 10 + 9;
            x = -x;
          }
          memcpy(d, &x, 16);
        } else {
          dec_of(r == 3 ? 9999999999LL : sign * (k * 1234 + 1), d);
        }
        TM_ASSERT_OK(tm_colbuilder_append_decimal(cb, d, &err), &err);
        break;
      }
      case TM_TYPE_UTF8: {
        if (r == 7) { /* a 1 MB value */
          size_t big_n = (size_t)1 << 20;
          char *big = tm_malloc(big_n);
          TM_ASSERT(big);
          for (size_t j = 0; j < big_n; j++) big[j] = (char)('a' + j % 26);
          TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, big, big_n, &err), &err);
          tm_free(big);
          break;
        }
        char s[64];
        int len = r == 4 ? 0 : snprintf(s, sizeof s, "text \"%d\", ünï", r);
        TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, s, (size_t)len, &err), &err);
        break;
      }
      case TM_TYPE_BINARY: {
        uint8_t s[5] = {0, (uint8_t)r, 0xff, 0x80, 0};
        TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, s, (size_t)(r % 5), &err), &err);
        break;
      }
      case TM_TYPE_FIXED_BINARY: {
        uint8_t s[16];
        for (int i = 0; i < 16; i++) s[i] = (uint8_t)(r * 31 + i * 17);
        TM_ASSERT_OK(tm_colbuilder_append_bytes(cb, s, (size_t)cb->type.width, &err), &err);
        break;
      }
      case TM_TYPE_DATE32: TM_ASSERT_OK(tm_colbuilder_append_int(cb, r == 2 ? -719528 : sign * k * 100, &err), &err); break;
      case TM_TYPE_TIME64: {
        int64_t per = cb->type.unit == TM_UNIT_NANO ? 1000000000 : 1000000;
        TM_ASSERT_OK(tm_colbuilder_append_int(cb, (k * 3601 % 86400) * per + k, &err), &err);
        break;
      }
      case TM_TYPE_TIMESTAMP: {
        int64_t v = sign * k * INT64_C(86400123) * (cb->type.unit == TM_UNIT_SECOND ? 1 : 997);
        if (r == 1 && cb->type.unit == TM_UNIT_SECOND) v = INT64_C(400000000000); /* year > 9999 */
        TM_ASSERT_OK(tm_colbuilder_append_int(cb, v, &err), &err);
        break;
      }
      default: TM_ASSERT(0);
    }
  }
}

/* NaN equals NaN here: a round trip must keep it, not turn it into NULL. */
static bool same_value(const tm_value *a, const tm_value *b) {
  if ((a->type == TM_TYPE_FLOAT32 || a->type == TM_TYPE_FLOAT64) && isnan(a->v.f)) return isnan(b->v.f);
  return tm_value_cmp(a, b) == 0;
}

static void assert_same_cells(const engine_case *c, const tm_batch *want, const tm_batch *got) {
  TM_ASSERT_INT_EQ(got->n_rows, want->n_rows);
  TM_ASSERT_INT_EQ(got->schema.n_cols, want->schema.n_cols);
  for (size_t col = 0; col < want->schema.n_cols; col++) {
    tm_colview a = tm_batch_col(want, col), b = tm_batch_col(got, col);
    for (int64_t r = 0; r < want->n_rows; r++) {
      tm_value va, vb;
      tm_colview_get(&a, r, &va);
      tm_colview_get(&b, r, &vb);
      TM_ASSERT_MSG(va.is_null == vb.is_null, "%s: column %s row %lld: null %d vs %d",
                    case_name(c), want->schema.cols[col].name, (long long)r, va.is_null,
                    vb.is_null);
      if (!va.is_null)
        TM_ASSERT_MSG(same_value(&va, &vb), "%s: column %s row %lld differs",
                      case_name(c), want->schema.cols[col].name, (long long)r);
    }
  }
}

TM_TEST(engine_every_type_round_trips_with_nulls) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    tm_schema s;
    all_types_schema(&s);
    tm_engine_options o;
    tm_engine_options_init(&o);
    o.db = tm_test_db();
    o.dataset = "types";
    o.mode = c->mode;
    char name[64];
    snprintf(name, sizeof name, "types-%s%s", tm_engine_kind_name(c->kind),
             c->kind == TM_ENGINE_SQLITE ? ".db" : c->kind == TM_ENGINE_DUCKDB ? ".duckdb" : "");
    if (c->mode == TM_ENGINE_FILE) o.path = tm_test_path(name);
    /*
     * Written in pieces of sizes that are not multiples of DuckDB's vector
     * (2048 rows), so that rows, NULLs and strings of one vector come from
     * several batches: the first 11 rows (the edge values), then the same
     * values again without the 1 MB string.
     */
    static const int k_pieces[] = {11, 1, 2047, 2049, 7, 899};
    enum { N_PIECES = sizeof k_pieces / sizeof k_pieces[0] };
    tm_batch pieces[N_PIECES];
    tm_batch_builder bb, wb;
    TM_ASSERT_OK(tm_batch_builder_init(&wb, &s, &err), &err);
    for (int p = 0, r = 0; p < N_PIECES; p++) {
      TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
      for (int k = 0; k < k_pieces[p]; k++, r++) {
        int code = r < 11 ? r : r % 11 == 7 ? 8 : r % 11;
        append_all_types_row(&bb, code);
        append_all_types_row(&wb, code);
      }
      TM_ASSERT_OK(tm_batch_builder_finish(&bb, &pieces[p], &err), &err);
      tm_batch_builder_dispose(&bb);
    }
    tm_batch want;
    TM_ASSERT_OK(tm_batch_builder_finish(&wb, &want, &err), &err);
    tm_batch_builder_dispose(&wb);

    for (int reopen = 0; reopen < (c->mode == TM_ENGINE_FILE ? 2 : 1); reopen++) {
      tm_engine *e;
      TM_ASSERT_OK(tm_engine_open(&e, c->kind, reopen ? NULL : &s, &o, &err), &err);
      TM_ASSERT(tm_schema_equal(tm_engine_schema(e), &s));
      if (!reopen) {
        tm_engine_txn *t;
        TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
        for (int p = 0; p < N_PIECES; p++) TM_ASSERT_OK(tm_engine_txn_write(t, &pieces[p], &err), &err);
        TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
      }
      tm_engine_scan *sc;
      TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &sc, &err), &err);
      /* Collect every batch into one (rows come back in insertion order). */
      tm_batch_builder all;
      TM_ASSERT_OK(tm_batch_builder_init(&all, &s, &err), &err);
      tm_batch got;
      int rc;
      while ((rc = tm_engine_scan_next(sc, &got, &err)) == TM_OK) {
        for (size_t col = 0; col < s.n_cols; col++) {
          tm_colview v = tm_batch_col(&got, col);
          TM_ASSERT_OK(tm_colbuilder_append_range(&all.cols[col], &v, 0, got.n_rows, &err), &err);
        }
        tm_batch_release(&got);
      }
      TM_ASSERT_MSG(rc == TM_ITEROVER, "%s: scan: %s", case_name(c), err.message);
      TM_ASSERT_OK(tm_batch_builder_finish(&all, &got, &err), &err);
      tm_batch_builder_dispose(&all);
      assert_same_cells(c, &want, &got);
      tm_batch_release(&got);
      tm_engine_scan_free(sc);
      tm_engine_release(e);
    }
    tm_batch_release(&want);
    for (int p = 0; p < N_PIECES; p++) tm_batch_release(&pieces[p]);
    tm_schema_dispose(&s);
  }
}

/* ---- state map, transactions, snapshots -------------------------------------------- */

TM_TEST(engine_d1_state_map_commits_with_rows) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {true, "upsert", NULL};
    tm_engine *e = open_engine(c, &p);
    tm_kv st, got;
    tm_kv_init(&st);
    tm_kv_init(&got);
    TM_ASSERT_OK(tm_kv_set(&st, "iceberg.snapshot_id", "8812", &err), &err);
    TM_ASSERT_OK(tm_kv_set(&st, "iceberg.table_uuid", "0b2c-uuid", &err), &err);
    tm_batch b;
    row rows[] = {{1, 10, "a"}};
    make_rows(&b, rows, 1);
    tm_engine_txn *t;
    /* An aborted transaction leaves neither rows nor state. */
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    tm_engine_txn_abort(t);
    ASSERT_DUMP(e, "");
    TM_ASSERT_OK(tm_engine_read_state(e, &got, &err), &err);
    TM_ASSERT_INT_EQ(got.len, 0);
    /* A commit stores both. */
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    tm_engine_txn *t2;
    TM_ASSERT_RC(tm_engine_begin(e, TM_TXN_APPEND, &t2, &err), TM_ECONFLICT);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, &st, NULL, &err), &err);
    TM_ASSERT_OK(tm_engine_read_state(e, &got, &err), &err);
    TM_ASSERT_STR_EQ(tm_kv_get(&got, "iceberg.snapshot_id"), "8812");
    TM_ASSERT_STR_EQ(tm_kv_get(&got, "iceberg.table_uuid"), "0b2c-uuid");
    tm_kv_dispose(&got);
    /* NULL keeps the previous map. */
    commit_rows(e, rows, 1, NULL);
    TM_ASSERT_OK(tm_engine_read_state(e, &got, &err), &err);
    TM_ASSERT_STR_EQ(tm_kv_get(&got, "iceberg.snapshot_id"), "8812");
    tm_kv_dispose(&got);
    tm_engine_release(e);
    if (c->mode == TM_ENGINE_FILE) {
      /* B8: the state survives a reopen. */
      e = open_engine(c, &p);
      TM_ASSERT_OK(tm_engine_read_state(e, &got, &err), &err);
      TM_ASSERT_STR_EQ(tm_kv_get(&got, "iceberg.table_uuid"), "0b2c-uuid");
      ASSERT_DUMP(e, "1@10=a");
      tm_kv_dispose(&got);
      tm_engine_release(e);
    }
    tm_batch_release(&b);
    tm_kv_dispose(&st);
  }
}

TM_TEST(engine_a11_replace_all_swaps_atomically) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, NULL};
    tm_engine *e = open_engine(c, &p);
    row old_rows[] = {{1, 10, "a"}, {2, 20, "b"}, {3, 30, "c"}, {4, 40, "d"}, {5, 50, "e"}};
    commit_rows(e, old_rows, 5, NULL);
    /* A scan that starts before the commit reads one state: the old rows. */
    tm_engine_scan *before;
    TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &before, &err), &err);
    tm_batch first;
    TM_ASSERT_OK(tm_engine_scan_next(before, &first, &err), &err);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_REPLACE_ALL, &t, &err), &err);
    row new_rows[] = {{7, 70, "x"}, {8, 80, "y"}};
    tm_batch b;
    make_rows(&b, new_rows, 2);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    /* Not visible before the commit (C5, A11). */
    ASSERT_DUMP(e, "1@10=a;2@20=b;3@30=c;4@40=d;5@50=e");
    tm_engine_commit_info info;
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, &info, &err), &err);
    TM_ASSERT_INT_EQ(info.rows_after, 2);
    ASSERT_DUMP(e, "7@70=x;8@80=y");
    TM_ASSERT_INT_EQ(first.n_rows, 5);
    tm_colview ids = tm_batch_col(&first, 0);
    TM_ASSERT_INT_EQ(tm_colview_int(&ids, 0), 1);
    tm_batch_release(&first);
    TM_ASSERT_RC(tm_engine_scan_next(before, &first, &err), TM_ITEROVER);
    tm_engine_scan_free(before);
    /* An aborted replace keeps everything. */
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_REPLACE_ALL, &t, &err), &err);
    tm_engine_txn_abort(t);
    ASSERT_DUMP(e, "7@70=x;8@80=y");
    tm_batch_release(&b);
    tm_engine_release(e);
  }
}

TM_TEST(engine_c3_retention_deletes) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, NULL};
    tm_engine *e = open_engine(c, &p);
    row rows[] = {{1, 10000000, "a"}, {2, 20000000, "void"}, {3, 30000000, "c"},
                  {4, INT64_MIN, "d"}, {5, 50000000, "void"}, {6, 19999999, "f"}};
    commit_rows(e, rows, 6, NULL);
    tm_engine_txn *t;
    int64_t n = -1;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    /* Older than 20 s: rows 1 and 6; a NULL time is kept. */
    TM_ASSERT_OK(tm_engine_txn_delete_before(t, 20, 0, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 2);
    TM_ASSERT_OK(tm_engine_txn_delete_where(t, "v = 'void' AND id > 2", &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 1);
    TM_ASSERT_RC(tm_engine_txn_delete_where(t, "nosuchcolumn = 1", &n, &err), TM_EINVALID);
    TM_ASSERT_RC(tm_engine_txn_delete_where(t, "1); DROP TABLE events; --", &n, &err), TM_EINVALID);
    TM_ASSERT_RC(tm_engine_txn_delete_where(t, "1=1; DELETE FROM events", &n, &err), TM_EINVALID);
    tm_engine_commit_info info;
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, &info, &err), &err);
    TM_ASSERT_INT_EQ(info.rows_deleted, 3);
    TM_ASSERT_INT_EQ(info.rows_after, 3);
    ASSERT_DUMP(e, "2@20000000=void;3@30000000=c;4@NULL=d");
    tm_engine_release(e);
  }
}

TM_TEST(engine_a2_bounds_and_filtered_scans) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, NULL};
    tm_engine *e = open_engine(c, &p);
    tm_engine_bounds bd;
    TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
    TM_ASSERT(!bd.found);
    tm_engine_bounds_dispose(&bd);
    row rows[] = {{1, 300, "m"}, {2, 100, "zz"}, {3, INT64_MIN, NULL}, {4, 200, "a"},
                  {5, 250, "b"}, {6, 50, "k"}, {7, 999, "c"}};
    commit_rows(e, rows, 7, NULL);
    TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
    TM_ASSERT(bd.found);
    TM_ASSERT_INT_EQ(bd.min.v.i, 50);
    TM_ASSERT_INT_EQ(bd.max.v.i, 999);
    tm_engine_bounds_dispose(&bd);
    TM_ASSERT_OK(tm_engine_column_bounds(e, "v", &bd, &err), &err);
    TM_ASSERT(bd.found && bd.min.v.s.len == 1 && bd.min.v.s.ptr[0] == 'a');
    TM_ASSERT(bd.max.v.s.len == 2 && memcmp(bd.max.v.s.ptr, "zz", 2) == 0);
    tm_engine_bounds_dispose(&bd);
    TM_ASSERT_RC(tm_engine_column_bounds(e, "nope", &bd, &err), TM_ENOTFOUND);

    /* The maximum row deleted: bounds follow the live rows. */
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    int64_t n;
    TM_ASSERT_OK(tm_engine_txn_delete_where(t, "id = 7", &n, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
    TM_ASSERT_INT_EQ(bd.max.v.i, 300);
    tm_engine_bounds_dispose(&bd);

    /* Scan ts >= 200 AND v IS NOT NULL, projecting (v, id). */
    tm_predicate pred;
    tm_predicate_init(&pred);
    tm_value lo = {TM_TYPE_TIMESTAMP, false, {.i = 200}};
    TM_ASSERT_OK(tm_predicate_add(&pred, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), TM_PRED_GE, &lo, &err), &err);
    TM_ASSERT_OK(tm_predicate_add_null(&pred, "v", tm_type_of(TM_TYPE_UTF8), false, &err), &err);
    tm_engine_scan *sc;
    size_t proj[] = {2, 0};
    TM_ASSERT_OK(tm_engine_scan_open(e, proj, 2, &pred, &sc, &err), &err);
    int64_t sum_id = 0, rows_out = 0;
    tm_batch b;
    while (tm_engine_scan_next(sc, &b, &err) == TM_OK) {
      TM_ASSERT_INT_EQ(b.schema.n_cols, 2);
      TM_ASSERT_STR_EQ(b.schema.cols[0].name, "v");
      tm_colview id = tm_batch_col(&b, 1);
      for (int64_t r = 0; r < b.n_rows; r++) sum_id += tm_colview_int(&id, r);
      rows_out += b.n_rows;
      tm_batch_release(&b);
    }
    TM_ASSERT_INT_EQ(rows_out, 3); /* ids 1, 4, 5 */
    TM_ASSERT_INT_EQ(sum_id, 10);
    tm_engine_scan_free(sc);
    tm_predicate_dispose(&pred);
    tm_engine_release(e);
  }
}

/*
 * A2: the high-water mark is max(time_column) over the stored rows, exactly,
 * whatever happened: the DuckDB engines answer from hints kept at each commit
 * (duckdb/duck_int.h), so this drives them through every kind of change —
 * rows older and newer than all stored ones, the max and the min row
 * deleted, retention by time, a full replacement, an empty table, reopening
 * (hints read back from the file) — and compares with the truth after each.
 */
static void expect_bounds(tm_engine *e, const int64_t *ts, const bool *live, int n, const char *what) {
  tm_error err;
  bool any = false;
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < n; i++)
    if (live[i] && ts[i] != INT64_MIN) {
      if (!any || ts[i] < lo) lo = ts[i];
      if (!any || ts[i] > hi) hi = ts[i];
      any = true;
    }
  tm_engine_bounds bd;
  TM_ASSERT_OK(tm_engine_column_bounds(e, "ts", &bd, &err), &err);
  TM_ASSERT_MSG(bd.found == any, "%s: found %d, want %d", what, bd.found, any);
  if (any) {
    TM_ASSERT_MSG(bd.min.v.i == lo && bd.max.v.i == hi, "%s: bounds [%lld, %lld], want [%lld, %lld]", what,
                  (long long)bd.min.v.i, (long long)bd.max.v.i, (long long)lo, (long long)hi);
  }
  tm_engine_bounds_dispose(&bd);
}

TM_TEST(engine_a2_bounds_stay_exact) {
  tm_error err;
  enum { MAX_ROWS = 400 };
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, "bounds"};
    tm_engine *e = open_engine(c, &p);
    static int64_t ts[MAX_ROWS];
    static bool live[MAX_ROWS];
    int n = 0;
    uint64_t seed = 12345 + i;
    char what[128];
    for (int step = 0; step < 24; step++) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      int op = (int)((seed >> 33) % 6);
      snprintf(what, sizeof what, "%s step %d op %d", case_name(c), step, op);
      if (op <= 1 || n == 0) { /* rows: some below the min, some above the max, a NULL */
        row rows[12];
        int k = 0;
        for (; k < 12 && n < MAX_ROWS; k++, n++) {
          int64_t x = (int64_t)((seed >> (k % 32)) % 100000) - 50000 + step * 3000;
          ts[n] = (k == 5) ? INT64_MIN : x;
          live[n] = true;
          rows[k] = (row){n, ts[n], "r"};
        }
        commit_rows(e, rows, (size_t)k, NULL);
      } else if (op == 2 || op == 3) { /* delete the row holding the max (op 2) or the min (op 3) */
        int pick = -1;
        for (int r = 0; r < n; r++)
          if (live[r] && ts[r] != INT64_MIN &&
              (pick < 0 || (op == 2 ? ts[r] > ts[pick] : ts[r] < ts[pick])))
            pick = r;
        if (pick >= 0) {
          char cond[64];
          snprintf(cond, sizeof cond, "id = %d", pick);
          tm_engine_txn *t;
          int64_t del;
          TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
          TM_ASSERT_OK(tm_engine_txn_delete_where(t, cond, &del, &err), &err);
          TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
          TM_ASSERT_INT_EQ(del, 1);
          live[pick] = false;
        }
      } else if (op == 4) { /* retention: rows older than a cutoff near the middle */
        int64_t cut = step * 3000 - 20000;
        tm_engine_txn *t;
        int64_t del;
        TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
        TM_ASSERT_OK(tm_engine_txn_delete_before(t, tm_floor_div(cut, 1000000),
                                                 (int32_t)(cut - tm_floor_div(cut, 1000000) * 1000000) * 1000,
                                                 &del, &err), &err);
        TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
        for (int r = 0; r < n; r++)
          if (live[r] && ts[r] != INT64_MIN && ts[r] < cut) live[r] = false;
      } else { /* a full replacement by two rows, or by none */
        tm_engine_txn *t;
        TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_REPLACE_ALL, &t, &err), &err);
        for (int r = 0; r < n; r++) live[r] = false;
        if (step % 2 == 0 && n + 2 <= MAX_ROWS) {
          row rows[2] = {{n, 777 + step, "x"}, {n + 1, -777 - step, "y"}};
          ts[n] = 777 + step;
          ts[n + 1] = -777 - step;
          live[n] = live[n + 1] = true;
          n += 2;
          tm_batch b;
          make_rows(&b, rows, 2);
          TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
          tm_batch_release(&b);
        }
        TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
      }
      expect_bounds(e, ts, live, n, what);
      if (c->mode == TM_ENGINE_FILE && step % 5 == 4) { /* reopen: hints come back from the file */
        tm_engine_release(e);
        e = open_engine(c, &p);
        expect_bounds(e, ts, live, n, what);
      }
    }
    if (c->mode == TM_ENGINE_FILE && c->kind != TM_ENGINE_SQLITE) {
      /* Hints that lie (beyond every row on both sides): the answer is still exact. */
      duckdb_connection conn;
      TM_ASSERT_OK(tm_db__connect(tm_test_db(), &conn, &err), &err);
      TM_ASSERT_OK(tm_db__exec(conn,
                               "UPDATE \"tm$events\".main._tm_meta SET value = CASE key "
                               "WHEN 'time_min' THEN '1900-01-01 00:00:00+00' "
                               "ELSE '2200-01-01 00:00:00+00' END "
                               "WHERE key IN ('time_min', 'time_max')",
                               "test", &err), &err);
      duckdb_disconnect(&conn);
      tm_engine_release(e);
      e = open_engine(c, &p);
      expect_bounds(e, ts, live, n, "lying hints");
      /* Hints DuckDB cannot read (damaged on disk): still exact, and a commit still goes in. */
      TM_ASSERT_OK(tm_db__connect(tm_test_db(), &conn, &err), &err);
      TM_ASSERT_OK(tm_db__exec(conn,
                               "UPDATE \"tm$events\".main._tm_meta SET value = 'not a time' "
                               "WHERE key IN ('time_min', 'time_max')",
                               "test", &err), &err);
      duckdb_disconnect(&conn);
      tm_engine_release(e);
      e = open_engine(c, &p);
      expect_bounds(e, ts, live, n, "unreadable hints");
      if (n + 1 <= MAX_ROWS) {
        row one[1] = {{n, 4242, "z"}};
        ts[n] = 4242;
        live[n] = true;
        n++;
        commit_rows(e, one, 1, NULL);
        expect_bounds(e, ts, live, n, "a commit over unreadable hints");
      }
    }
    tm_engine_release(e);
  }
}

/*
 * B9: opening with another primary key or another schema prepares a
 * replacement. The stored rows (and the engine that serves them) stay as
 * they are until the replacement's first commit, which swaps its rows and an
 * empty state map in; before it, the replacement reads as empty.
 */
TM_TEST(engine_b9_reopen_with_other_options_replaces_at_commit) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    if (c->mode != TM_ENGINE_FILE) continue;
    open_params p = {true, "upsert", "reopen"};
    tm_engine *old = open_engine(c, &p);
    row rows[] = {{1, 10, "a"}, {2, 20, "b"}};
    tm_kv st;
    tm_kv_init(&st);
    TM_ASSERT_OK(tm_kv_set(&st, "tidemark.iceberg.snapshot_id", "77", &err), &err);
    tm_batch b;
    make_rows(&b, rows, 2);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(old, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, &st, NULL, &err), &err);
    tm_batch_release(&b);

    /* Another schema (no v column), unkeyed: a replacement. */
    tm_schema other;
    tm_schema_init(&other);
    TM_ASSERT_OK(tm_schema_add(&other, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
    TM_ASSERT_OK(tm_schema_add(&other, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err), &err);
    tm_engine_options o;
    tm_kv oc;
    const char *pk[1];
    open_params unkeyed = {false, NULL, "reopen"};
    fill_options(&o, c, &unkeyed, &oc, pk);
    tm_engine *rep;
    TM_ASSERT_OK(tm_engine_open(&rep, c->kind, &other, &o, &err), &err);
    int64_t n = -1;
    TM_ASSERT_OK(tm_engine_row_count(rep, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 0);
    tm_kv got;
    tm_kv_init(&got);
    TM_ASSERT_OK(tm_engine_read_state(rep, &got, &err), &err);
    TM_ASSERT_INT_EQ(got.len, 0);
    /* The old engine still serves the stored rows and state. */
    ASSERT_DUMP(old, "1@10=a;2@20=b");
    TM_ASSERT_OK(tm_engine_read_state(old, &got, &err), &err);
    TM_ASSERT_STR_EQ(tm_kv_get(&got, "tidemark.iceberg.snapshot_id"), "77");
    tm_kv_dispose(&got);

    /* An aborted replacement changes nothing. */
    TM_ASSERT_OK(tm_engine_begin(rep, TM_TXN_APPEND, &t, &err), &err);
    tm_engine_txn_abort(t);
    ASSERT_DUMP(old, "1@10=a;2@20=b");

    /* The first commit swaps the new rows in, with an empty state map (B9). */
    tm_batch_builder bb;
    TM_ASSERT_OK(tm_batch_builder_init(&bb, &other, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], 9, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], 90, &err), &err);
    TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
    tm_batch_builder_dispose(&bb);
    TM_ASSERT_OK(tm_engine_begin(rep, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&b);
    TM_ASSERT_OK(tm_engine_row_count(rep, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 1);
    TM_ASSERT_OK(tm_engine_read_state(rep, &got, &err), &err);
    TM_ASSERT_INT_EQ(got.len, 0);
    tm_engine_release(old);
    tm_engine_release(rep);

    /* Reopened without a schema: the replacement's schema is the stored one. */
    TM_ASSERT_OK(tm_engine_open(&rep, c->kind, NULL, &o, &err), &err);
    TM_ASSERT(tm_schema_equal(tm_engine_schema(rep), &other));
    TM_ASSERT_OK(tm_engine_row_count(rep, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 1);
    tm_engine_release(rep);
    /* Dropping removes it; opening without a schema then finds nothing. */
    TM_ASSERT_OK(tm_engine_drop(c->kind, &o, &err), &err);
    TM_ASSERT_RC(tm_engine_open(&rep, c->kind, NULL, &o, &err), TM_ENOTFOUND);
    tm_kv_dispose(&oc);
    tm_kv_dispose(&st);
    tm_schema_dispose(&other);
  }
}

TM_TEST(engine_rejects_bad_options_and_batches) {
  tm_error err;
  tm_schema s;
  ev_schema(&s);
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    tm_engine_options o;
    tm_kv oc;
    const char *pk[1];
    open_params p = {true, "upsert", "bad"};
    fill_options(&o, c, &p, &oc, pk);
    tm_engine *e;
    o.time_column = "missing";
    TM_ASSERT_RC(tm_engine_open(&e, c->kind, &s, &o, &err), TM_EINVALID);
    o.time_column = "v";
    tm_kv_dispose(&oc);
    TM_ASSERT_OK(tm_kv_set(&oc, "v", "upsert", &err), &err);
    o.on_conflict = &oc;
    TM_ASSERT_RC(tm_engine_open(&e, c->kind, &s, &o, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, "not in the primary key");
    tm_kv_dispose(&oc);
    TM_ASSERT_OK(tm_kv_set(&oc, "(id)", "replace", &err), &err);
    TM_ASSERT_RC(tm_engine_open(&e, c->kind, &s, &o, &err), TM_EINVALID);
    TM_ASSERT_CONTAINS(err.message, "allowed: drop, upsert");
    tm_kv_dispose(&oc);
    /* A batch with another schema is refused. */
    open_params ok = {false, NULL, "bad2"};
    e = open_engine(c, &ok);
    tm_schema other;
    tm_schema_init(&other);
    TM_ASSERT_OK(tm_schema_add(&other, "id", tm_type_of(TM_TYPE_INT32), false, 1, &err), &err);
    tm_batch_builder bb;
    TM_ASSERT_OK(tm_batch_builder_init(&bb, &other, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], 1, &err), &err);
    tm_batch b;
    TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_RC(tm_engine_txn_write(t, &b, &err), TM_EINVALID);
    tm_engine_txn_abort(t);
    tm_batch_release(&b);
    tm_batch_builder_dispose(&bb);
    tm_schema_dispose(&other);
    tm_engine_release(e);
  }
  tm_schema_dispose(&s);
}

/*
 * D1 with memory exhausted (issue 10): a transaction aborted while every
 * allocation fails may not be able to run its ROLLBACK.
 * The connection must not stay inside that transaction: once memory is back,
 * the next snapshot and the next transaction work and see the committed rows.
 */
TM_TEST(engine_d1_transactions_end_when_memory_runs_out) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    open_params p = {false, NULL, "oom"};
    tm_engine *e = open_engine(c, &p);
    row rows[] = {{1, 10, "a"}, {2, 20, "b"}};
    commit_rows(e, rows, 1, NULL);
    for (int round = 0; round < 3; round++) {
      tm_engine_txn *t = NULL;
      tm_batch b;
      make_rows(&b, rows + 1, 1);
      TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
      TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
      tm_batch_release(&b);
      tm_alloc_fail_at(1, true);
      tm_engine_txn_abort(t);
      tm_alloc_fail_at(0, false);
      ASSERT_DUMP(e, "1@10=a");
    }
    commit_rows(e, rows + 1, 1, NULL);
    ASSERT_DUMP(e, "1@10=a;2@20=b");
    tm_engine_release(e);
  }
}

/* An acceleration in the segment format of earlier tidemark versions is removed and rebuilt. */
TM_TEST(engine_cayenne_old_segment_format_is_rebuilt) {
  tm_error err;
  const char *dir = tm_test_path("old-cayenne");
  TM_ASSERT_OK(tm_mkdir_p(dir, &err), &err);
  char path[1024];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  tm_test_write_file(path, "tidemark-cayenne 1\n");
  snprintf(path, sizeof path, "%s/seg-0000000000000001.tmc", dir);
  tm_test_write_file(path, "segment bytes");
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = tm_test_db();
  o.dataset = "events";
  o.mode = TM_ENGINE_FILE;
  o.path = dir;
  tm_engine *e = NULL;
  TM_ASSERT_RC(tm_engine_open(&e, TM_ENGINE_CAYENNE, NULL, &o, &err), TM_ENOTFOUND);
  TM_ASSERT(!tm_path_exists(path));
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  TM_ASSERT(!tm_path_exists(path));
  tm_schema s;
  ev_schema(&s);
  TM_ASSERT_OK(tm_engine_open(&e, TM_ENGINE_CAYENNE, &s, &o, &err), &err);
  int64_t n = -1;
  TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  tm_engine_release(e);
  tm_schema_dispose(&s);
}

/* A DuckDB database that is not an acceleration is not taken for one. */
TM_TEST(engine_foreign_file_is_refused) {
  tm_error err;
  const char *file = tm_test_path("foreign.duckdb");
  tm_test_write_file(file, "this is not a database at all, just some bytes that are long enough");
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = tm_test_db();
  o.dataset = "events";
  o.mode = TM_ENGINE_FILE;
  o.path = file;
  tm_engine *e = NULL;
  int rc = tm_engine_open(&e, TM_ENGINE_DUCKDB, NULL, &o, &err);
  TM_ASSERT_MSG(rc == TM_ECORRUPT || rc == TM_EIO, "open returned %d: %s", rc, err.message);
}

/*
 * SPEC D5 (healing from a snapshot): a file put in the place of an
 * acceleration whose engine is still open is not served through the old
 * engine's attachment (it reads the file it opened, the damaged one), and
 * is opened once that engine has closed.
 */
TM_TEST(engine_d5_replaced_file_is_not_read_through_the_old_engine) {
  tm_error err;
  const engine_case c = {TM_ENGINE_CAYENNE, TM_ENGINE_FILE};
  tm_engine *copy = open_engine(&c, &(open_params){.sub = "copy"});
  commit_rows(copy, (const row[]){{1, 1000, "a"}, {2, 2000, "b"}}, 2, NULL);
  tm_engine_release(copy);
  tm_engine *old = open_engine(&c, &(open_params){.sub = "live"});
  char from[1024], to[1024];
  snprintf(from, sizeof from, "%s/data.duckdb", tm_test_path("copy-cayenne"));
  snprintf(to, sizeof to, "%s/data.duckdb", tm_test_path("live-cayenne"));
  TM_ASSERT(rename(from, to) == 0);
  tm_engine_options o;
  tm_kv oc;
  const char *pk[1];
  fill_options(&o, &c, &(open_params){.sub = "live"}, &oc, pk);
  tm_engine *e = NULL;
  TM_ASSERT_RC(tm_engine_open(&e, TM_ENGINE_CAYENNE, NULL, &o, &err), TM_ECONFLICT);
  TM_ASSERT_CONTAINS(err.message, "was replaced while the acceleration that had it open");
  tm_engine_release(old);
  TM_ASSERT_OK(tm_engine_open(&e, TM_ENGINE_CAYENNE, NULL, &o, &err), &err);
  int64_t n = -1;
  TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 2);
  tm_engine_release(e);
  tm_kv_dispose(&oc);
}

typedef struct late_reader {
  duckdb_connection conn;
  int64_t hold_ms;
} late_reader;

static void *end_read_later(void *arg) {
  late_reader *r = arg;
  nanosleep(&(struct timespec){r->hold_ms / 1000, (r->hold_ms % 1000) * 1000000L}, NULL);
  duckdb_result res;
  if (duckdb_query(r->conn, "COMMIT", &res) == DuckDBError) r->hold_ms = -1;
  duckdb_destroy_result(&res);
  return NULL;
}

/*
 * SPEC D5: DuckDB keeps a detached database, and its claim on the file,
 * until the last query that began before the DETACH ends; opening the file
 * again waits for that query instead of failing with DuckDB's "Unique file
 * handle conflict" (a heal reopens while queries run).
 */
TM_TEST(engine_d5_reopen_waits_for_queries_of_the_closed_engine) {
  tm_error err;
  const engine_case c = {TM_ENGINE_CAYENNE, TM_ENGINE_FILE};
  tm_engine *old = open_engine(&c, &(open_params){.sub = "busy"});
  commit_rows(old, (const row[]){{1, 1000, "a"}}, 1, NULL);
  tm_buf sql = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_buf_puts(&sql, "SELECT count(*) FROM ", &err), &err);
  TM_ASSERT_OK(tm_engine_relation(old, &sql, &err), &err);
  late_reader r = {NULL, 300};
  TM_ASSERT_OK(tm_db__connect(tm_test_db(), &r.conn, &err), &err);
  duckdb_result res;
  TM_ASSERT(duckdb_query(r.conn, "BEGIN", &res) == DuckDBSuccess);
  duckdb_destroy_result(&res);
  TM_ASSERT_MSG(duckdb_query(r.conn, tm_buf_cstr(&sql), &res) == DuckDBSuccess, "%s",
                duckdb_result_error(&res));
  duckdb_destroy_result(&res);
  tm_engine_release(old); /* detached; the open transaction still uses the database */
  pthread_t th;
  int64_t t0 = tm_monotonic_ns();
  TM_ASSERT(pthread_create(&th, NULL, end_read_later, &r) == 0);
  tm_engine_options o;
  tm_kv oc;
  const char *pk[1];
  fill_options(&o, &c, &(open_params){.sub = "busy"}, &oc, pk);
  tm_engine *e = NULL;
  int rc = tm_engine_open(&e, TM_ENGINE_CAYENNE, NULL, &o, &err);
  int64_t waited_ms = (tm_monotonic_ns() - t0) / 1000000;
  pthread_join(th, NULL);
  TM_ASSERT_MSG(rc == TM_OK, "reopen: %s", err.message);
  TM_ASSERT(r.hold_ms > 0);
  TM_ASSERT_MSG(waited_ms >= 250, "the reopen did not wait for the query (%lld ms)",
                (long long)waited_ms);
  int64_t n = -1;
  TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 1);
  tm_engine_release(e);
  duckdb_disconnect(&r.conn);
  tm_kv_dispose(&oc);
  tm_buf_dispose(&sql);
}

/* current_setting(name) on c as text, or NULL (unknown setting). Caller frees with duckdb_free. */
static char *setting_of(duckdb_connection c, const char *name) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT current_setting('%s')::VARCHAR", name);
  duckdb_result r;
  char *v = NULL;
  if (duckdb_query(c, sql, &r) == DuckDBSuccess && !duckdb_value_is_null(&r, 0, 0))
    v = duckdb_value_varchar(&r, 0, 0);
  duckdb_destroy_result(&r);
  return v;
}

/*
 * The settings tm_db_open pins (db.c k_pinned_settings: a set value is read
 * faster than a default) keep DuckDB's own values: each equals what a plain
 * DuckDB instance reports, and every one is known to this DuckDB (a name
 * it dropped would be skipped silently, and its speed-up lost).
 */
TM_TEST(db_pinned_settings_keep_duckdbs_values) {
  tm_error err;
  duckdb_connection ours;
  TM_ASSERT_OK(tm_db__connect(tm_test_db(), &ours, &err), &err);
  duckdb_database plain_db;
  duckdb_connection plain;
  TM_ASSERT(duckdb_open(NULL, &plain_db) == DuckDBSuccess);
  TM_ASSERT(duckdb_connect(plain_db, &plain) == DuckDBSuccess);
  size_t n = 0;
  const char *const *names = tm_db__pinned_settings(&n);
  TM_ASSERT(n >= 10);
  for (size_t i = 0; i < n; i++) {
    char *want = setting_of(plain, names[i]), *got = setting_of(ours, names[i]);
    TM_ASSERT_MSG(want != NULL, "%s: not a setting of this DuckDB", names[i]);
    TM_ASSERT_MSG(got && !strcmp(got, want), "%s: %s, DuckDB's own %s", names[i], got ? got : "(none)",
                  want);
    duckdb_free(want);
    duckdb_free(got);
  }
  duckdb_disconnect(&plain);
  duckdb_close(&plain_db);
  duckdb_disconnect(&ours);
}

/* SPEC D5: only the messages of damaged storage count as damage, not a malformed source. */
TM_TEST(engine_d5_storage_damage_messages) {
  TM_ASSERT(tm_db_message_is_storage_damage(
      "IO Error: Corrupt database file: computed checksum 1 does not match stored checksum 2"));
  TM_ASSERT(tm_db_message_is_storage_damage("/x/data.sqlite: database disk image is malformed"));
  TM_ASSERT(!tm_db_message_is_storage_damage("a.parquet: column id: page CRC mismatch"));
  TM_ASSERT(!tm_db_message_is_storage_damage("b.jsonl: line 2: unexpected token"));
  TM_ASSERT(!tm_db_message_is_storage_damage(NULL));
}

/* The bytes of a file (the test fails if it cannot be read). Result: tm_free. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  TM_ASSERT_MSG(f != NULL, "%s: cannot open", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = tm_malloc((size_t)n + 1);
  TM_ASSERT(fread(p, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

static void spit(const char *path, const unsigned char *p, size_t len) {
  FILE *f = fopen(path, "wb");
  TM_ASSERT_MSG(f != NULL, "%s: cannot write", path);
  TM_ASSERT(fwrite(p, 1, len, f) == len);
  fclose(f);
}

/* A full scan of every column: TM_OK with the rows' text, or the error. */
static int try_dump(tm_engine *e, tm_error *err) {
  tm_engine_scan *sc;
  TM_TRY(tm_engine_scan_open(e, NULL, 0, NULL, &sc, err));
  tm_batch b;
  int rc;
  while ((rc = tm_engine_scan_next(sc, &b, err)) == TM_OK) tm_batch_release(&b);
  tm_engine_scan_free(sc);
  return rc == TM_ITEROVER ? TM_OK : rc;
}

/*
 * SPEC D5: the sqlite engine's pages carry checksums (engine/sqlite/cksum.c).
 * One changed byte inside a stored value — still a valid value, which SQLite
 * alone would return — fails the scan and the check; so does a file cut short.
 */
TM_TEST(engine_d5_sqlite_page_checksums_catch_changed_values) {
  tm_error err;
  const engine_case cs = {TM_ENGINE_SQLITE, TM_ENGINE_FILE}, *c = &cs;
  open_params p = {.sub = "cksum"};
  row rows[400];
  char vals[400][24];
  for (int i = 0; i < 400; i++) {
    snprintf(vals[i], sizeof vals[i], "value-%05d", i);
    rows[i] = (row){i + 1, 1000 + i, vals[i]};
  }
  tm_engine *e = open_engine(c, &p);
  tm_engine_commit_info info;
  commit_rows(e, rows, 400, &info);
  TM_ASSERT_OK(tm_engine_verify(e, &err), &err);
  tm_engine_release(e);

  const char *file = tm_test_path("cksum-sqlite.db");
  size_t len;
  unsigned char *good = slurp(file, &len);
  TM_ASSERT_MSG(len > 4096 && good[20] == 8, "reserved bytes per page: %d", good[20]);
  /* "value-00123" becomes "value-00723": a valid value of the column. */
  unsigned char *hit = NULL;
  for (size_t i = 0; i + 11 <= len && !hit; i++)
    if (memcmp(good + i, "value-00123", 11) == 0) hit = good + i;
  TM_ASSERT_MSG(hit != NULL, "the value is not in the database file");
  unsigned char *bad = tm_malloc(len);
  memcpy(bad, good, len);
  bad[hit - good + 8] = '7';
  spit(file, bad, len);

  e = open_engine(c, &p);
  int rc = try_dump(e, &err);
  TM_ASSERT_MSG(rc == TM_ECORRUPT, "scan over a changed value returned %d: %s", rc, err.message);
  TM_ASSERT_CONTAINS(err.message, "failed its checksum");
  TM_ASSERT(tm_db_message_is_storage_damage(err.message));
  TM_ASSERT_RC(tm_engine_verify(e, &err), TM_ECORRUPT);
  tm_engine_release(e);

  /* Cut short: every page it still has is good, the missing ones are damage. */
  spit(file, good, len / 2 / 4096 * 4096);
  tm_engine *e2 = NULL;
  tm_engine_options o;
  tm_kv oc;
  const char *pk[1];
  fill_options(&o, c, &p, &oc, pk);
  rc = tm_engine_open(&e2, c->kind, NULL, &o, &err);
  if (rc == TM_OK) {
    rc = try_dump(e2, &err);
    tm_engine_release(e2);
  }
  TM_ASSERT_MSG(rc == TM_ECORRUPT, "a truncated file returned %d: %s", rc, err.message);
  tm_kv_dispose(&oc);

  /* And the good bytes read back in full. */
  spit(file, good, len);
  e = open_engine(c, &p);
  TM_ASSERT_OK(try_dump(e, &err), &err);
  TM_ASSERT_OK(tm_engine_verify(e, &err), &err);
  tm_engine_release(e);
  tm_free(good);
  tm_free(bad);
}

/* ---- E4: deletes by provenance (refresh_mode: changes) ---------------------------- */

/* id, ts, v, then the provenance columns (engine.h tm_engine_hidden_columns). */
static void prov_schema(tm_schema *s) {
  tm_error err;
  ev_schema(s);
  const char *names[] = {"_tm_seq", "_tm_file", "_tm_pos"};
  for (int i = 0; i < 3; i++)
    TM_ASSERT_OK(tm_schema_add(s, names[i], tm_type_of(TM_TYPE_INT64), false, 4 + i, &err), &err);
}

typedef struct prov_row {
  int64_t id, ts;
  const char *v;
  int64_t seq, file, pos;
} prov_row;

static void make_prov_rows(tm_batch *out, const prov_row *rows, size_t n) {
  tm_error err;
  tm_schema s;
  prov_schema(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (size_t i = 0; i < n; i++) {
    int64_t ints[] = {rows[i].id, rows[i].ts, 0, rows[i].seq, rows[i].file, rows[i].pos};
    for (int k = 0; k < 6; k++) {
      if (k == 2) TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[2], rows[i].v, strlen(rows[i].v), &err), &err);
      else TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[k], ints[k], &err), &err);
    }
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

/* A batch of provenance keys: n_cols 2 (seq, file) or 3 (seq, file, pos). */
static void make_keys(tm_batch *out, size_t n_cols, const int64_t *keys, size_t n) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  const char *names[] = {"_tm_seq", "_tm_file", "_tm_pos"};
  for (size_t c = 0; c < n_cols; c++)
    TM_ASSERT_OK(tm_schema_add(&s, names[c], tm_type_of(TM_TYPE_INT64), false, (int)c + 1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < n_cols; c++)
      TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[c], keys[i * n_cols + c], &err), &err);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, out, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

static tm_engine *open_prov(const engine_case *c, bool keyed, const char *on_conflict) {
  tm_error err;
  tm_schema s;
  prov_schema(&s);
  tm_engine_options o;
  tm_kv oc;
  const char *pk[1];
  open_params p = {keyed, on_conflict, keyed ? on_conflict : "prov"};
  fill_options(&o, c, &p, &oc, pk);
  o.dataset = "prov";
  tm_engine *e = NULL;
  int rc = tm_engine_open(&e, c->kind, &s, &o, &err);
  TM_ASSERT_MSG(rc == TM_OK, "%s: open: %s", case_name(c), err.message);
  tm_kv_dispose(&oc);
  tm_schema_dispose(&s);
  return e;
}

static int64_t delete_keys(tm_engine_txn *t, size_t n_cols, const int64_t *keys, size_t n) {
  tm_error err;
  tm_batch b;
  make_keys(&b, n_cols, keys, n);
  int64_t deleted = -1;
  TM_ASSERT_OK(tm_engine_txn_delete_provenance(t, &b, &deleted, &err), &err);
  tm_batch_release(&b);
  return deleted;
}

/* SQLite's plan for the engine's provenance DELETE: a search of the provenance index. */
static void assert_sqlite_prov_plan(const char *file, bool by_pos) {
  tm_error err;
  sqlite3 *db = NULL;
  TM_ASSERT(sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
  tm_buf sql = TM_BUF_INIT(1 << 16);
  TM_ASSERT_OK(tm_buf_puts(&sql, "EXPLAIN QUERY PLAN ", &err), &err);
  TM_ASSERT_OK(tm_sqlite__prov_delete_sql(&sql, "\"prov\"", by_pos, &err), &err);
  sqlite3_stmt *st = NULL;
  TM_ASSERT_MSG(sqlite3_prepare_v2(db, tm_buf_cstr(&sql), -1, &st, NULL) == SQLITE_OK, "%s",
                sqlite3_errmsg(db));
  int steps = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *detail = (const char *)sqlite3_column_text(st, 3);
    steps++;
    TM_ASSERT_MSG(strncmp(detail, "SEARCH", 6) == 0 && strstr(detail, "INDEX prov__tm_prov") &&
                      strstr(detail, by_pos ? "_tm_pos=?" : "_tm_file=?"),
                  "the provenance delete is not an index search: %s", detail);
  }
  TM_ASSERT_INT_EQ(steps, 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
  tm_buf_dispose(&sql);
}

TM_TEST(engine_e4_delete_provenance) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    tm_engine *e = open_prov(c, false, NULL);
    /* Files 111 (seq 1, 100 rows), 222 (seq 2, 50 rows), 333 (seq 2, 10 rows). */
    prov_row rows[160];
    char vals[160][16];
    for (int r = 0; r < 160; r++) {
      int64_t file = r < 100 ? 111 : r < 150 ? 222 : 333, pos = r < 100 ? r : r < 150 ? r - 100 : r - 150;
      snprintf(vals[r], sizeof vals[r], "v%d", r);
      rows[r] = (prov_row){r, 1000 + r, vals[r], file == 111 ? 1 : 2, file, pos};
    }
    tm_batch b;
    make_prov_rows(&b, rows, 160);
    tm_engine_txn *t;
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&b);

    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    /* Positions 3, 5, 7 of file 111, 0 of 333, and one that is not stored (pos 99 of 222). */
    const int64_t pos_keys[] = {1, 111, 3, 1, 111, 5, 1, 111, 7, 2, 333, 0, 2, 222, 99};
    TM_ASSERT_INT_EQ(delete_keys(t, 3, pos_keys, 5), 4);
    /* Every row of 222; (1, 333) names no file (the seq differs). */
    const int64_t file_keys[] = {2, 222, 1, 333};
    TM_ASSERT_INT_EQ(delete_keys(t, 2, file_keys, 2), 50);
    tm_engine_commit_info info;
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, &info, &err), &err);
    TM_ASSERT_INT_EQ(info.rows_deleted, 54);
    TM_ASSERT_INT_EQ(info.rows_after, 106);
    int64_t n = 0, sum = 0;
    TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 106);
    tm_engine_scan *sc;
    size_t id_col[] = {0};
    TM_ASSERT_OK(tm_engine_scan_open(e, id_col, 1, NULL, &sc, &err), &err);
    while (tm_engine_scan_next(sc, &b, &err) == TM_OK) {
      tm_colview id = tm_batch_col(&b, 0);
      for (int64_t r = 0; r < b.n_rows; r++) sum += tm_colview_int(&id, r);
      tm_batch_release(&b);
    }
    tm_engine_scan_free(sc);
    /* 0..99 without 3, 5, 7, and 150..159 without 150. */
    TM_ASSERT_MSG(sum == 4950 - 15 + 1545 - 150, "%s: ids sum to %lld", case_name(c), (long long)sum);

    /* Shapes tm_engine_txn_delete_provenance refuses. */
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    make_keys(&b, 1, pos_keys, 2);
    TM_ASSERT_RC(tm_engine_txn_delete_provenance(t, &b, &n, &err), TM_EINVALID);
    tm_batch_release(&b);
    tm_engine_txn_abort(t);
    tm_engine_release(e);
    if (c->kind == TM_ENGINE_SQLITE && c->mode == TM_ENGINE_FILE) {
      assert_sqlite_prov_plan(tm_test_path("prov-sqlite.db"), true);
      assert_sqlite_prov_plan(tm_test_path("prov-sqlite.db"), false);
    }

    /* An engine without provenance columns has nothing to delete by. */
    open_params p = {false, NULL, "noprov"};
    e = open_engine(c, &p);
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    make_keys(&b, 2, file_keys, 1);
    TM_ASSERT_RC(tm_engine_txn_delete_provenance(t, &b, &n, &err), TM_EINVALID);
    tm_batch_release(&b);
    tm_engine_txn_abort(t);
    tm_engine_release(e);
  }
}

/* E6: a stored key re-added by an overwrite is the new row, whatever the conflict rule. */
TM_TEST(engine_e6_key_readded_after_provenance_delete) {
  tm_error err;
  for (size_t i = 0; i < N_CASES; i++) {
    const engine_case *c = &k_cases[i];
    tm_engine *e = open_prov(c, true, "drop");
    prov_row old_rows[] = {{1, 100, "old", 1, 111, 0}, {2, 100, "two", 1, 111, 1}};
    /* Older time and a drop rule: without the delete, both engines would keep "old". */
    prov_row new_rows[] = {{1, 50, "new", 2, 444, 0}};
    tm_batch b;
    tm_engine_txn *t;
    make_prov_rows(&b, old_rows, 2);
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&b);
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    const int64_t keys[] = {1, 111, 0};
    TM_ASSERT_INT_EQ(delete_keys(t, 3, keys, 1), 1);
    make_prov_rows(&b, new_rows, 1);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    tm_batch_release(&b);
    tm_engine_commit_info info;
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, &info, &err), &err);
    TM_ASSERT_INT_EQ(info.rows_after, 2);
    ASSERT_DUMP(e, "1@50=new;2@100=two");
    tm_engine_release(e);

    /* Repeated keys resolve by arrival (or time), never by the provenance columns' values. */
    e = open_prov(c, true, "upsert");
    prov_row first[] = {{7, 100, "stored", 5, 555, 0}};
    prov_row later[] = {{7, 100, "a", 9, 999, 0}, {7, 100, "b", 1, 111, 0}, {8, 100, "x", 0, 0, 0}};
    make_prov_rows(&b, first, 1);
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, NULL, &err), &err);
    tm_batch_release(&b);
    make_prov_rows(&b, later, 3);
    TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
    TM_ASSERT_OK(tm_engine_txn_commit(t, NULL, &info, &err), &err);
    tm_batch_release(&b);
    /* Equal times: the later arrival wins on cayenne too. */
    ASSERT_DUMP(e, "7@100=b;8@100=x");
    tm_engine_release(e);
  }
}
