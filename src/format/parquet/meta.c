/*
 * meta.c - Parquet footer (FileMetaData) and page header decoding (format
 * layer, parquet). Turns Thrift compact bytes into the structs of
 * parquet_int.h, checking required fields and value ranges; strings stay
 * views into the input bytes.
 *
 * Allocation: every array is allocated from a count that the Thrift decoder
 * has checked against the bytes left, and charged against a budget of
 * 64 MiB + 64 bytes per footer byte, so a hostile footer cannot make the
 * parse allocate more than a small multiple of its own size.
 */
#include <stdio.h>
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

typedef struct parse_ctx {
  tm_thrift_reader r;
  size_t budget; /* bytes we may still allocate */
} parse_ctx;

#define CORRUPT(c, err, ...) meta_corrupt((c), (err), __LINE__, __VA_ARGS__)

static int meta_corrupt(const parse_ctx *c, tm_error *err, int line, const char *fmt, ...)
    TM_PRINTF(4, 5);

static int meta_corrupt(const parse_ctx *c, tm_error *err, int line, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tm_error__corrupt(err, __FILE__, line, "%s (footer byte %zu)", msg,
                           tm_thrift_reader_offset(&c->r));
}

static int alloc_array(parse_ctx *c, void **out, size_t n, size_t size, tm_error *err) {
  size_t bytes;
  if (tm_mul_overflow(n ? n : 1, size, &bytes) || bytes > c->budget)
    return tm_error_set(err, TM_ETOOLARGE, "footer metadata too large to decode");
  c->budget -= bytes;
  void *p = tm_calloc(n ? n : 1, size);
  if (!p) return tm_error_nomem(err);
  *out = p;
  return TM_OK;
}

/*
 * Field types. As in Thrift's generated code, a field whose type is not the
 * one its id should have is skipped like an unknown field (some writers
 * reused ids of later format versions); a required field that ends up
 * missing is corrupt.
 */
#define T_INT 100 /* any integer width */
#define T_BOOL TM_THRIFT_TRUE
#define T_BIN TM_THRIFT_BINARY
#define T_LIST TM_THRIFT_LIST
#define T_STRUCT TM_THRIFT_STRUCT

static bool compatible(uint8_t want, uint8_t got) {
  if (want == T_INT)
    return got == TM_THRIFT_BYTE || got == TM_THRIFT_I16 || got == TM_THRIFT_I32 ||
           got == TM_THRIFT_I64;
  if (want == T_BOOL) return got == TM_THRIFT_TRUE || got == TM_THRIFT_FALSE;
  return want == got;
}

/* In a field loop: skips the field when its type does not fit `table`. */
#define SKIP_MISTYPED(table)                                                         \
  if (f.id > 0 && (size_t)f.id < sizeof(table) && (table)[f.id] &&                  \
      !compatible((table)[f.id], f.type)) {                                         \
    TM_TRY(tm_thrift_skip(r, f.type, err));                                          \
    continue;                                                                        \
  }

#define SKIP_MISTYPED_G(table)                                                       \
  if (g.id > 0 && (size_t)g.id < sizeof(table) && (table)[g.id] &&                  \
      !compatible((table)[g.id], g.type)) {                                         \
    TM_TRY(tm_thrift_skip(r, g.type, err));                                          \
    continue;                                                                        \
  }

static const uint8_t k_kv[] = {0, T_BIN, T_BIN};
static const uint8_t k_stats[] = {0, T_BIN, T_BIN, T_INT, T_INT, T_BIN, T_BIN, T_BOOL, T_BOOL};
static const uint8_t k_decimal[] = {0, T_INT, T_INT};
static const uint8_t k_time[] = {0, T_BOOL, T_STRUCT};
static const uint8_t k_int[] = {0, T_INT, T_BOOL};
static const uint8_t k_elem[] = {0, T_INT, T_INT, T_INT, T_BIN, T_INT, T_INT, T_INT, T_INT, T_INT, T_STRUCT};
static const uint8_t k_colmeta[] = {0,     T_INT, T_LIST, T_LIST, T_INT, T_INT,    T_INT,  T_INT, T_LIST,
                                    T_INT, T_INT, T_INT,  T_STRUCT, T_LIST, T_INT, T_INT, T_STRUCT};
static const uint8_t k_chunk[] = {0, T_BIN, T_INT, T_STRUCT, T_INT, T_INT, T_INT, T_INT, T_STRUCT, T_BIN};
static const uint8_t k_rowgroup[] = {0, T_LIST, T_INT, T_INT, T_LIST, T_INT, T_INT, T_INT};
static const uint8_t k_file[] = {0, T_INT, T_LIST, T_INT, T_LIST, T_LIST, T_BIN, T_LIST, T_STRUCT, T_BIN};
static const uint8_t k_page[] = {0, T_INT, T_INT, T_INT, T_INT, T_STRUCT, T_STRUCT, T_STRUCT, T_STRUCT};
static const uint8_t k_data_page[] = {0, T_INT, T_INT, T_INT, T_INT, T_STRUCT};
static const uint8_t k_dict_page[] = {0, T_INT, T_INT, T_BOOL};
static const uint8_t k_v2_page[] = {0, T_INT, T_INT, T_INT, T_INT, T_INT, T_INT, T_BOOL, T_STRUCT};

static int read_kv_list(parse_ctx *c, uint8_t type, tm_pq_kv **out, uint32_t *n_out,
                        tm_error *err) {
  tm_thrift_reader *r = &c->r;
  uint8_t et;
  uint32_t n;
  TM_TRY(tm_thrift_list_begin(r, type, &et, &n, err));
  if (et != TM_THRIFT_STRUCT) return CORRUPT(c, err, "key/value list of wrong type");
  tm_pq_kv *kv;
  TM_TRY(alloc_array(c, (void **)&kv, n, sizeof *kv, err));
  *out = kv; /* owned by the caller's struct from here on */
  *n_out = 0;
  for (uint32_t i = 0; i < n; i++) {
    tm_thrift_struct st;
    tm_thrift_field f;
    int rc;
    bool has_key = false;
    TM_TRY(tm_thrift_struct_begin(r, &st, err));
    while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_kv)
      if (f.id == 1) {
        TM_TRY(tm_thrift_read_binary(r, f.type, &kv[i].key, err));
        has_key = true;
      } else if (f.id == 2) {
        TM_TRY(tm_thrift_read_binary(r, f.type, &kv[i].value, err));
        kv[i].has_value = true;
      } else {
        TM_TRY(tm_thrift_skip(r, f.type, err));
      }
    }
    if (rc < 0) return rc;
    if (!has_key) return CORRUPT(c, err, "key/value entry without a key");
    *n_out = i + 1;
  }
  tm_thrift_list_end(r);
  return TM_OK;
}

static int read_stats(parse_ctx *c, tm_pq_stats *s, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  memset(s, 0, sizeof *s);
  s->null_count = -1;
  s->distinct_count = -1;
  s->max_exact = s->min_exact = true;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_stats)
    switch (f.id) {
      case 1: TM_TRY(tm_thrift_read_binary(r, f.type, &s->max, err)); s->has_max = true; break;
      case 2: TM_TRY(tm_thrift_read_binary(r, f.type, &s->min, err)); s->has_min = true; break;
      case 3: TM_TRY(tm_thrift_read_i64(r, f.type, &s->null_count, err)); break;
      case 4: TM_TRY(tm_thrift_read_i64(r, f.type, &s->distinct_count, err)); break;
      case 5:
        TM_TRY(tm_thrift_read_binary(r, f.type, &s->max_value, err));
        s->has_max_value = true;
        break;
      case 6:
        TM_TRY(tm_thrift_read_binary(r, f.type, &s->min_value, err));
        s->has_min_value = true;
        break;
      case 7: TM_TRY(tm_thrift_read_bool(r, f.type, &s->max_exact, err)); break;
      case 8: TM_TRY(tm_thrift_read_bool(r, f.type, &s->min_exact, err)); break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) return rc;
  if (s->null_count < -1) s->null_count = -1; /* negative counts are meaningless */
  if (s->distinct_count < -1) s->distinct_count = -1;
  return TM_OK;
}

/* An empty struct (StringType, DateType, ...): skip its fields. */
static int skip_struct_body(parse_ctx *c, tm_error *err) {
  return tm_thrift_skip(&c->r, TM_THRIFT_STRUCT, err);
}

static int read_time_unit(parse_ctx *c, uint8_t type, int *unit, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  if (type != TM_THRIFT_STRUCT) return CORRUPT(c, err, "time unit of wrong type");
  *unit = 0;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    if (f.id >= 1 && f.id <= 3 && f.type == TM_THRIFT_STRUCT) *unit = f.id;
    TM_TRY(tm_thrift_skip(r, f.type, err));
  }
  return rc;
}

static int read_logical(parse_ctx *c, tm_pq_logical *lt, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  memset(lt, 0, sizeof *lt);
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    if (f.type != TM_THRIFT_STRUCT) {
      TM_TRY(tm_thrift_skip(r, f.type, err));
      continue;
    }
    tm_thrift_struct in;
    tm_thrift_field g;
    int rc2;
    switch (f.id) {
      case TM_PQ_LT_DECIMAL:
        lt->kind = TM_PQ_LT_DECIMAL;
        lt->scale = lt->precision = -1;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_decimal)
          if (g.id == 1) TM_TRY(tm_thrift_read_i32(r, g.type, &lt->scale, err));
          else if (g.id == 2) TM_TRY(tm_thrift_read_i32(r, g.type, &lt->precision, err));
          else TM_TRY(tm_thrift_skip(r, g.type, err));
        }
        if (rc2 < 0) return rc2;
        break;
      case TM_PQ_LT_TIME:
      case TM_PQ_LT_TIMESTAMP:
        lt->kind = f.id;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_time)
          if (g.id == 1) TM_TRY(tm_thrift_read_bool(r, g.type, &lt->utc, err));
          else if (g.id == 2) TM_TRY(read_time_unit(c, g.type, &lt->unit, err));
          else TM_TRY(tm_thrift_skip(r, g.type, err));
        }
        if (rc2 < 0) return rc2;
        break;
      case TM_PQ_LT_INTEGER: {
        lt->kind = TM_PQ_LT_INTEGER;
        lt->is_signed = true;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_int)
          if (g.id == 1) {
            int32_t bw;
            TM_TRY(tm_thrift_read_i32(r, g.type, &bw, err));
            lt->bit_width = bw;
          } else if (g.id == 2) {
            TM_TRY(tm_thrift_read_bool(r, g.type, &lt->is_signed, err));
          } else {
            TM_TRY(tm_thrift_skip(r, g.type, err));
          }
        }
        if (rc2 < 0) return rc2;
        break;
      }
      case TM_PQ_LT_STRING:
      case TM_PQ_LT_MAP:
      case TM_PQ_LT_LIST:
      case TM_PQ_LT_ENUM:
      case TM_PQ_LT_DATE:
      case TM_PQ_LT_UNKNOWN:
      case TM_PQ_LT_JSON:
      case TM_PQ_LT_BSON:
      case TM_PQ_LT_UUID:
      case TM_PQ_LT_FLOAT16:
        lt->kind = f.id;
        TM_TRY(skip_struct_body(c, err));
        break;
      default:
        /* A logical type from a newer format version: fall back to the
         * converted and physical types. */
        lt->kind = TM_PQ_LT_FUTURE;
        TM_TRY(skip_struct_body(c, err));
    }
  }
  return rc;
}

static int read_schema_elem(parse_ctx *c, tm_pq_schema_elem *e, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  bool has_name = false;
  memset(e, 0, sizeof *e);
  e->type = e->type_length = e->repetition = e->converted_type = -1;
  e->scale = e->precision = TM_PQ_ABSENT;
  e->field_id = -1;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_elem)
    switch (f.id) {
      case 1: TM_TRY(tm_thrift_read_i32(r, f.type, &e->type, err)); break;
      case 2: TM_TRY(tm_thrift_read_i32(r, f.type, &e->type_length, err)); break;
      case 3: TM_TRY(tm_thrift_read_i32(r, f.type, &e->repetition, err)); break;
      case 4:
        TM_TRY(tm_thrift_read_binary(r, f.type, &e->name, err));
        has_name = true;
        break;
      case 5: TM_TRY(tm_thrift_read_i32(r, f.type, &e->num_children, err)); break;
      case 6: TM_TRY(tm_thrift_read_i32(r, f.type, &e->converted_type, err)); break;
      case 7: TM_TRY(tm_thrift_read_i32(r, f.type, &e->scale, err)); break;
      case 8: TM_TRY(tm_thrift_read_i32(r, f.type, &e->precision, err)); break;
      case 9: TM_TRY(tm_thrift_read_i32(r, f.type, &e->field_id, err)); break;
      case 10:
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(c, err, "logicalType of wrong type");
        TM_TRY(read_logical(c, &e->logical, err));
        break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) return rc;
  if (!has_name) return CORRUPT(c, err, "schema element without a name");
  if (e->num_children < 0) return CORRUPT(c, err, "negative num_children");
  if (e->num_children == 0 && (e->type < TM_PQ_BOOLEAN || e->type > TM_PQ_FLBA) && e->type != -1)
    return CORRUPT(c, err, "unknown physical type %d", (int)e->type);
  if (e->repetition < -1 || e->repetition > TM_PQ_REPEATED)
    return CORRUPT(c, err, "bad repetition type %d", (int)e->repetition);
  return TM_OK;
}

static int read_i32_list(parse_ctx *c, uint8_t type, int32_t **out, uint32_t *n_out,
                         tm_error *err) {
  tm_thrift_reader *r = &c->r;
  uint8_t et;
  uint32_t n;
  TM_TRY(tm_thrift_list_begin(r, type, &et, &n, err));
  int32_t *v;
  TM_TRY(alloc_array(c, (void **)&v, n, sizeof *v, err));
  *out = v;
  *n_out = n;
  for (uint32_t i = 0; i < n; i++) TM_TRY(tm_thrift_read_i32(r, et, &v[i], err));
  tm_thrift_list_end(r);
  return TM_OK;
}

static int read_string_list(parse_ctx *c, uint8_t type, tm_strview **out, uint32_t *n_out,
                            tm_error *err) {
  tm_thrift_reader *r = &c->r;
  uint8_t et;
  uint32_t n;
  TM_TRY(tm_thrift_list_begin(r, type, &et, &n, err));
  tm_strview *v;
  TM_TRY(alloc_array(c, (void **)&v, n, sizeof *v, err));
  *out = v;
  *n_out = n;
  for (uint32_t i = 0; i < n; i++) TM_TRY(tm_thrift_read_binary(r, et, &v[i], err));
  tm_thrift_list_end(r);
  return TM_OK;
}

static int read_column_meta(parse_ctx *c, tm_pq_column_meta *m, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  unsigned seen = 0;
  m->type = -1;
  m->index_page_offset = m->dictionary_page_offset = -1;
  m->bloom_filter_offset = -1;
  m->bloom_filter_length = -1;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_colmeta)
    if (f.id >= 1 && f.id <= 16) seen |= 1u << f.id;
    switch (f.id) {
      case 1: TM_TRY(tm_thrift_read_i32(r, f.type, &m->type, err)); break;
      case 2:
        if (m->encodings) return CORRUPT(c, err, "repeated field");
        TM_TRY(read_i32_list(c, f.type, &m->encodings, &m->n_encodings, err));
        break;
      case 3:
        if (m->path) return CORRUPT(c, err, "repeated field");
        TM_TRY(read_string_list(c, f.type, &m->path, &m->n_path, err));
        break;
      case 4: TM_TRY(tm_thrift_read_i32(r, f.type, &m->codec, err)); break;
      case 5: TM_TRY(tm_thrift_read_i64(r, f.type, &m->num_values, err)); break;
      case 6: TM_TRY(tm_thrift_read_i64(r, f.type, &m->total_uncompressed_size, err)); break;
      case 7: TM_TRY(tm_thrift_read_i64(r, f.type, &m->total_compressed_size, err)); break;
      case 8:
        if (m->kv) return CORRUPT(c, err, "repeated field");
        TM_TRY(read_kv_list(c, f.type, &m->kv, &m->n_kv, err));
        break;
      case 9: TM_TRY(tm_thrift_read_i64(r, f.type, &m->data_page_offset, err)); break;
      case 10: TM_TRY(tm_thrift_read_i64(r, f.type, &m->index_page_offset, err)); break;
      case 11: TM_TRY(tm_thrift_read_i64(r, f.type, &m->dictionary_page_offset, err)); break;
      case 12:
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(c, err, "statistics of wrong type");
        TM_TRY(read_stats(c, &m->stats, err));
        m->has_stats = true;
        break;
      case 14: TM_TRY(tm_thrift_read_i64(r, f.type, &m->bloom_filter_offset, err)); break;
      case 15: TM_TRY(tm_thrift_read_i32(r, f.type, &m->bloom_filter_length, err)); break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) return rc;
  const unsigned required = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) |
                            (1u << 6) | (1u << 7) | (1u << 9);
  if ((seen & required) != required) return CORRUPT(c, err, "column metadata lacks a required field");
  if (m->type < TM_PQ_BOOLEAN || m->type > TM_PQ_FLBA)
    return CORRUPT(c, err, "column metadata has unknown type %d", (int)m->type);
  if (m->num_values < 0 || m->total_compressed_size < 0 || m->total_uncompressed_size < 0 ||
      m->data_page_offset < 0)
    return CORRUPT(c, err, "column metadata has a negative size or offset");
  return TM_OK;
}

static int read_column_chunk(parse_ctx *c, tm_pq_column_chunk *cc, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  cc->offset_index_offset = cc->column_index_offset = -1;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_chunk)
    switch (f.id) {
      case 1:
        TM_TRY(tm_thrift_read_binary(r, f.type, &cc->file_path, err));
        cc->has_file_path = true;
        break;
      case 2: TM_TRY(tm_thrift_read_i64(r, f.type, &cc->file_offset, err)); break;
      case 3:
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(c, err, "meta_data of wrong type");
        if (cc->has_meta) return CORRUPT(c, err, "repeated field");
        cc->has_meta = true;
        TM_TRY(read_column_meta(c, &cc->meta, err));
        break;
      case 4: TM_TRY(tm_thrift_read_i64(r, f.type, &cc->offset_index_offset, err)); break;
      case 5: TM_TRY(tm_thrift_read_i32(r, f.type, &cc->offset_index_length, err)); break;
      case 6: TM_TRY(tm_thrift_read_i64(r, f.type, &cc->column_index_offset, err)); break;
      case 7: TM_TRY(tm_thrift_read_i32(r, f.type, &cc->column_index_length, err)); break;
      case 8:
      case 9:
        cc->encrypted = true;
        TM_TRY(tm_thrift_skip(r, f.type, err));
        break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  return rc;
}

static void dispose_column_meta(tm_pq_column_meta *m) {
  tm_free(m->encodings);
  tm_free(m->path);
  tm_free(m->kv);
}

static void dispose_row_group(tm_pq_row_group *g) {
  for (uint32_t i = 0; i < g->n_columns; i++) dispose_column_meta(&g->columns[i].meta);
  tm_free(g->columns);
  g->columns = NULL;
  g->n_columns = 0;
}

static int read_row_group(parse_ctx *c, tm_pq_row_group *g, tm_error *err) {
  tm_thrift_reader *r = &c->r;
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  bool has_cols = false, has_rows = false, has_size = false;
  g->file_offset = g->total_compressed_size = -1;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_rowgroup)
    switch (f.id) {
      case 1: {
        if (has_cols) return CORRUPT(c, err, "repeated field");
        uint8_t et;
        uint32_t n;
        TM_TRY(tm_thrift_list_begin(r, f.type, &et, &n, err));
        if (et != TM_THRIFT_STRUCT) return CORRUPT(c, err, "column list of wrong type");
        TM_TRY(alloc_array(c, (void **)&g->columns, n, sizeof *g->columns, err));
        for (uint32_t i = 0; i < n; i++) {
          g->n_columns = i + 1; /* so that dispose frees what the element allocated */
          TM_TRY(read_column_chunk(c, &g->columns[i], err));
        }
        tm_thrift_list_end(r);
        has_cols = true;
        break;
      }
      case 2:
        TM_TRY(tm_thrift_read_i64(r, f.type, &g->total_byte_size, err));
        has_size = true;
        break;
      case 3:
        TM_TRY(tm_thrift_read_i64(r, f.type, &g->num_rows, err));
        has_rows = true;
        break;
      case 5: TM_TRY(tm_thrift_read_i64(r, f.type, &g->file_offset, err)); break;
      case 6: TM_TRY(tm_thrift_read_i64(r, f.type, &g->total_compressed_size, err)); break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) return rc;
  if (!has_cols || !has_rows || !has_size) return CORRUPT(c, err, "row group lacks a required field");
  if (g->num_rows < 0) return CORRUPT(c, err, "row group has a negative row count");
  return TM_OK;
}

void tm_parquet__file_meta_dispose(tm_pq_file_meta *m) {
  if (!m) return;
  tm_free(m->schema);
  for (uint32_t i = 0; i < m->n_row_groups; i++) dispose_row_group(&m->row_groups[i]);
  tm_free(m->row_groups);
  tm_free(m->kv);
  tm_free(m->column_orders);
  memset(m, 0, sizeof *m);
}

int tm_parquet__parse_footer(tm_pq_file_meta *out, const uint8_t *data, size_t len,
                             tm_error *err) {
  parse_ctx c;
  tm_thrift_reader_init(&c.r, data, len);
  c.budget = ((size_t)64 << 20) + (len < ((size_t)1 << 40) / 64 ? len * 64 : (size_t)1 << 40);
  tm_thrift_reader *r = &c.r;
  tm_pq_file_meta m;
  memset(&m, 0, sizeof m);
  tm_thrift_struct st;
  tm_thrift_field f;
  int rc;
  bool has_version = false, has_schema = false, has_rows = false, has_rgs = false;
  TM_CHECK(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    if (f.id > 0 && (size_t)f.id < sizeof k_file && k_file[f.id] && !compatible(k_file[f.id], f.type)) {
      TM_CHECK(tm_thrift_skip(r, f.type, err));
      continue;
    }
    switch (f.id) {
      case 1:
        TM_CHECK(tm_thrift_read_i32(r, f.type, &m.version, err));
        has_version = true;
        break;
      case 2: {
        if (has_schema) {
          rc = CORRUPT(&c, err, "repeated field");
          goto done;
        }
        uint8_t et;
        uint32_t n;
        TM_CHECK(tm_thrift_list_begin(r, f.type, &et, &n, err));
        if (et != TM_THRIFT_STRUCT) {
          rc = CORRUPT(&c, err, "schema list of wrong type");
          goto done;
        }
        TM_CHECK(alloc_array(&c, (void **)&m.schema, n, sizeof *m.schema, err));
        for (uint32_t i = 0; i < n; i++) {
          TM_CHECK(read_schema_elem(&c, &m.schema[i], err));
          m.n_schema = i + 1;
        }
        tm_thrift_list_end(r);
        has_schema = true;
        break;
      }
      case 3:
        TM_CHECK(tm_thrift_read_i64(r, f.type, &m.num_rows, err));
        has_rows = true;
        break;
      case 4: {
        if (has_rgs) {
          rc = CORRUPT(&c, err, "repeated field");
          goto done;
        }
        uint8_t et;
        uint32_t n;
        TM_CHECK(tm_thrift_list_begin(r, f.type, &et, &n, err));
        if (et != TM_THRIFT_STRUCT) {
          rc = CORRUPT(&c, err, "row group list of wrong type");
          goto done;
        }
        TM_CHECK(alloc_array(&c, (void **)&m.row_groups, n, sizeof *m.row_groups, err));
        for (uint32_t i = 0; i < n; i++) {
          m.n_row_groups = i + 1;
          TM_CHECK(read_row_group(&c, &m.row_groups[i], err));
        }
        tm_thrift_list_end(r);
        has_rgs = true;
        break;
      }
      case 5:
        if (m.kv) {
          rc = CORRUPT(&c, err, "repeated field");
          goto done;
        }
        TM_CHECK(read_kv_list(&c, f.type, &m.kv, &m.n_kv, err));
        break;
      case 6:
        TM_CHECK(tm_thrift_read_binary(r, f.type, &m.created_by, err));
        m.has_created_by = true;
        break;
      case 7: {
        if (m.column_orders) {
          rc = CORRUPT(&c, err, "repeated field");
          goto done;
        }
        uint8_t et;
        uint32_t n;
        TM_CHECK(tm_thrift_list_begin(r, f.type, &et, &n, err));
        if (et != TM_THRIFT_STRUCT) {
          rc = CORRUPT(&c, err, "column order list of wrong type");
          goto done;
        }
        TM_CHECK(alloc_array(&c, (void **)&m.column_orders, n, 1, err));
        m.n_column_orders = n;
        for (uint32_t i = 0; i < n; i++) {
          tm_thrift_struct u;
          tm_thrift_field g;
          TM_CHECK(tm_thrift_struct_begin(r, &u, err));
          while ((rc = tm_thrift_next_field(r, &u, &g, err)) > 0) {
            if (g.id == 1 && g.type == TM_THRIFT_STRUCT) m.column_orders[i] = 1;
            TM_CHECK(tm_thrift_skip(r, g.type, err));
          }
          if (rc < 0) goto done;
        }
        tm_thrift_list_end(r);
        break;
      }
      case 8:
        m.encrypted = true;
        TM_CHECK(tm_thrift_skip(r, f.type, err));
        break;
      default: TM_CHECK(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) goto done;
  if (!has_version || !has_schema || !has_rows || !has_rgs) {
    rc = CORRUPT(&c, err, "footer lacks a required field");
    goto done;
  }
  if (m.n_schema == 0) {
    rc = CORRUPT(&c, err, "footer has an empty schema");
    goto done;
  }
  if (m.num_rows < 0) {
    rc = CORRUPT(&c, err, "footer has a negative row count");
    goto done;
  }
  *out = m;
  return TM_OK;
done:
  tm_parquet__file_meta_dispose(&m);
  return rc;
}

int tm_parquet__parse_page_header(tm_pq_page_header *out, const uint8_t *data, size_t len,
                                  size_t *used_out, tm_error *err) {
  parse_ctx c;
  tm_thrift_reader_init(&c.r, data, len);
  c.budget = 0;
  tm_thrift_reader *r = &c.r;
  tm_pq_page_header h;
  memset(&h, 0, sizeof h);
  h.type = -1;
  h.uncompressed_size = h.compressed_size = -1;
  h.is_compressed = true;
  h.def_encoding = h.rep_encoding = 3; /* RLE */
  tm_thrift_struct st, in;
  tm_thrift_field f, g;
  int rc, rc2;
  TM_TRY(tm_thrift_struct_begin(r, &st, err));
  while ((rc = tm_thrift_next_field(r, &st, &f, err)) > 0) {
    SKIP_MISTYPED(k_page)
    switch (f.id) {
      case 1: TM_TRY(tm_thrift_read_i32(r, f.type, &h.type, err)); break;
      case 2: TM_TRY(tm_thrift_read_i32(r, f.type, &h.uncompressed_size, err)); break;
      case 3: TM_TRY(tm_thrift_read_i32(r, f.type, &h.compressed_size, err)); break;
      case 4: {
        int32_t crc;
        TM_TRY(tm_thrift_read_i32(r, f.type, &crc, err));
        h.crc = (uint32_t)crc;
        h.has_crc = true;
        break;
      }
      case 5: /* DataPageHeader */
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(&c, err, "data page header of wrong type");
        h.has_data = true;
        h.num_values = -1;
        h.encoding = -1;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_data_page)
          switch (g.id) {
            case 1: TM_TRY(tm_thrift_read_i32(r, g.type, &h.num_values, err)); break;
            case 2: TM_TRY(tm_thrift_read_i32(r, g.type, &h.encoding, err)); break;
            case 3: TM_TRY(tm_thrift_read_i32(r, g.type, &h.def_encoding, err)); break;
            case 4: TM_TRY(tm_thrift_read_i32(r, g.type, &h.rep_encoding, err)); break;
            default: TM_TRY(tm_thrift_skip(r, g.type, err));
          }
        }
        if (rc2 < 0) return rc2;
        break;
      case 7: /* DictionaryPageHeader */
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(&c, err, "dictionary header of wrong type");
        h.has_dict = true;
        h.num_values = -1;
        h.encoding = -1;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_dict_page)
          switch (g.id) {
            case 1: TM_TRY(tm_thrift_read_i32(r, g.type, &h.num_values, err)); break;
            case 2: TM_TRY(tm_thrift_read_i32(r, g.type, &h.encoding, err)); break;
            default: TM_TRY(tm_thrift_skip(r, g.type, err));
          }
        }
        if (rc2 < 0) return rc2;
        break;
      case 8: /* DataPageHeaderV2 */
        if (f.type != TM_THRIFT_STRUCT) return CORRUPT(&c, err, "v2 page header of wrong type");
        h.has_v2 = true;
        h.num_values = h.num_nulls = h.num_rows = h.def_len = h.rep_len = -1;
        h.encoding = -1;
        TM_TRY(tm_thrift_struct_begin(r, &in, err));
        while ((rc2 = tm_thrift_next_field(r, &in, &g, err)) > 0) {
          SKIP_MISTYPED_G(k_v2_page)
          switch (g.id) {
            case 1: TM_TRY(tm_thrift_read_i32(r, g.type, &h.num_values, err)); break;
            case 2: TM_TRY(tm_thrift_read_i32(r, g.type, &h.num_nulls, err)); break;
            case 3: TM_TRY(tm_thrift_read_i32(r, g.type, &h.num_rows, err)); break;
            case 4: TM_TRY(tm_thrift_read_i32(r, g.type, &h.encoding, err)); break;
            case 5: TM_TRY(tm_thrift_read_i32(r, g.type, &h.def_len, err)); break;
            case 6: TM_TRY(tm_thrift_read_i32(r, g.type, &h.rep_len, err)); break;
            case 7: TM_TRY(tm_thrift_read_bool(r, g.type, &h.is_compressed, err)); break;
            default: TM_TRY(tm_thrift_skip(r, g.type, err));
          }
        }
        if (rc2 < 0) return rc2;
        break;
      default: TM_TRY(tm_thrift_skip(r, f.type, err));
    }
  }
  if (rc < 0) return rc;
  if (h.type < 0 || h.uncompressed_size < 0 || h.compressed_size < 0)
    return CORRUPT(&c, err, "page header lacks its type or sizes");
  if ((h.has_data || h.has_dict || h.has_v2) && (h.num_values < 0 || h.encoding < 0))
    return CORRUPT(&c, err, "page header has a bad value count or encoding");
  if (h.has_v2 && (h.num_nulls < 0 || h.num_rows < 0 || h.def_len < 0 || h.rep_len < 0))
    return CORRUPT(&c, err, "v2 page header has a negative count or length");
  *out = h;
  *used_out = tm_thrift_reader_offset(r);
  return TM_OK;
}
