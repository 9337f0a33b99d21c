/*
 * cmd_parquet.c - `tidemark parquet schema|meta|cat FILE` (cli layer).
 *
 * Inspects one Parquet file through the format layer's reader: `schema`
 * lists the top-level columns with their tidemark and Parquet types, `meta`
 * the row groups and column chunks (codec, encodings, sizes, statistics),
 * `cat` the rows as CSV, JSON or a table.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "format/arrow/render.h"
#include "format/parquet/parquet.h"
#include "util/alloc.h"
#include "util/str.h"

static const tm_cli_opt k_opts[] = {
    {"columns", 0, "a,b", "cat: only these columns"},
    {"format", 0, "csv|json|table", "cat, schema: output format (cat: csv, schema: table)"},
    {"limit", 0, "N", "cat: at most N rows"},
    {"verify-crc", 0, NULL, "check page CRCs where the file has them (tidemark's files: always)"},
    {"skip-crc", 0, NULL, "check no page CRC, not even in files tidemark wrote"},
    {"int96", 0, "ns|us|ms", "unit of INT96 timestamps (default ns: years 1677..2262)"},
    {"nested", 0, NULL, "cat: read nested columns (lists, structs, maps) as native nested values (else refused)"},
    {"nested-json", 0, NULL, "cat: read nested columns as JSON text, as unsupported_type_action: string loads them (same output)"},
    {0}};

static int fail(const tm_error *err) { return tm_cli_fail(TM_EXIT_FAILURE, "%s", err->message); }

/* ---- schema ---------------------------------------------------------------- */

static int render_table(tm_out_format fmt, const char *const *names, size_t n_cols, tm_buf *cells,
                        size_t n_rows, tm_error *err) {
  tm_out o;
  TM_TRY(tm_out_begin(&o, fmt, names, n_cols, tm_out_file_sink, stdout, err));
  const char *p = tm_buf_cstr(cells);
  const char *texts[16];
  size_t lens[16];
  tm_cell_kind kinds[16];
  int rc = TM_OK;
  for (size_t r = 0; r < n_rows && rc == TM_OK; r++) {
    for (size_t c = 0; c < n_cols; c++) {
      texts[c] = p;
      lens[c] = strlen(p);
      kinds[c] = TM_CELL_TEXT;
      p += lens[c] + 1;
    }
    rc = tm_out_row(&o, texts, lens, kinds, err);
  }
  if (rc < 0) {
    tm_out_dispose(&o);
    return rc;
  }
  return tm_out_end(&o, err);
}

/* Appends a NUL-terminated cell. */
static int cell(tm_buf *b, tm_error *err, const char *fmt, ...) TM_PRINTF(3, 4);
static int cell(tm_buf *b, tm_error *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = tm_buf_vprintf(b, err, fmt, ap);
  va_end(ap);
  if (rc == TM_OK) rc = tm_buf_putc(b, '\0', err);
  return rc;
}

static int cmd_schema(tm_parquet_file *f, tm_out_format fmt, tm_error *err) {
  static const char *names[] = {"column", "type", "nullable", "field_id", "parquet", "note"};
  tm_buf cells = TM_BUF_INIT(TM_BUF_UNLIMITED);
  int rc = TM_OK;
  size_t n = tm_parquet_num_fields(f);
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    const tm_parquet_field *fd = tm_parquet_field_at(f, i);
    char tn[256] = "";
    const char *note = fd->unsupported;
    char why[TM_ERROR_MESSAGE_MAX];
    if (!fd->unsupported) {
      tm_type_name(&fd->type, tn, sizeof tn);
    } else if (fd->nested) {
      /* A nested column reads natively (`cat --nested`, engines): its whole type. */
      tm_type nt;
      bool nn;
      tm_error ne;
      tm_error_init(&ne);
      if (tm_parquet_nested_type(f, i, &nt, &nn, &ne) == TM_OK) {
        tm_type_name(&nt, tn, sizeof tn);
        note = NULL;
      } else {
        snprintf(why, sizeof why, "%s", ne.message);
        note = why;
      }
    }
    char phys[64] = "group";
    if (fd->physical_type >= 0) {
      if (fd->type_length > 0)
        snprintf(phys, sizeof phys, "%s(%d)", tm_parquet_physical_name(fd->physical_type),
                 (int)fd->type_length);
      else snprintf(phys, sizeof phys, "%s", tm_parquet_physical_name(fd->physical_type));
    }
    char fid[16] = "";
    if (fd->field_id >= 0) snprintf(fid, sizeof fid, "%d", (int)fd->field_id);
    rc = cell(&cells, err, "%s", fd->name);
    if (rc == TM_OK) rc = cell(&cells, err, "%s", tn);
    if (rc == TM_OK) rc = cell(&cells, err, "%s", fd->nullable ? "yes" : "no");
    if (rc == TM_OK) rc = cell(&cells, err, "%s", fid);
    if (rc == TM_OK) rc = cell(&cells, err, "%s", phys);
    if (rc == TM_OK)
      rc = cell(&cells, err, "%s%s", note ? "unsupported: " : "", note ? note : "");
  }
  if (rc == TM_OK) rc = render_table(fmt, names, 6, &cells, n, err);
  tm_buf_dispose(&cells);
  return rc;
}

/* ---- meta ------------------------------------------------------------------ */

static int stat_text(tm_buf *b, const tm_type *t, const tm_value *v, bool has, tm_error *err) {
  if (!has) return tm_buf_putc(b, '\0', err);
  size_t start = b->len;
  TM_TRY(tm_value_render(b, t, v, err));
  /* Long bounds are shortened for display. */
  if (b->len - start > 40) {
    tm_buf_truncate(b, start + 37);
    TM_TRY(tm_buf_puts(b, "...", err));
  }
  for (size_t i = start; i < b->len; i++)
    if ((unsigned char)b->ptr[i] < 0x20) b->ptr[i] = ' ';
  return tm_buf_putc(b, '\0', err);
}

static int encodings_text(tm_buf *b, uint32_t encs, tm_error *err) {
  bool first = true;
  for (int e = 0; e < 32; e++) {
    if (!(encs & (1u << e))) continue;
    TM_TRY(tm_buf_printf(b, err, "%s%s", first ? "" : ",", tm_parquet_encoding_name(e)));
    first = false;
  }
  return tm_buf_putc(b, '\0', err);
}

static int cmd_meta(tm_parquet_file *f, tm_error *err) {
  static const char *names[] = {"column", "type",  "codec", "encodings", "values", "compressed",
                                "uncompressed", "nulls", "min", "max"};
  tm_strview cb = tm_parquet_created_by(f);
  uint64_t size = 0;
  TM_TRY(tm_input_size(tm_parquet_input(f), &size, err));
  printf("file: %s\nsize: %llu bytes\nrows: %lld\nrow groups: %zu\ncolumns: %zu (%zu leaf)\n",
         tm_parquet_name(f), (unsigned long long)size, (long long)tm_parquet_num_rows(f),
         tm_parquet_num_row_groups(f), tm_parquet_num_fields(f), tm_parquet_num_leaves(f));
  if (cb.len) printf("created by: %.*s\n", (int)cb.len, cb.ptr);
  size_t nkv = tm_parquet_kv_count(f);
  if (nkv) printf("key/value metadata:\n");
  for (size_t i = 0; i < nkv; i++) {
    tm_strview k, v;
    bool has;
    tm_parquet_kv_at(f, i, &k, &v, &has);
    int vl = (int)(v.len > 200 ? 200 : v.len);
    printf("  %.*s = %.*s%s\n", (int)k.len, k.ptr, has ? vl : 0, has ? v.ptr : "",
           v.len > 200 ? "..." : "");
  }
  int rc = TM_OK;
  tm_buf cells = TM_BUF_INIT(TM_BUF_UNLIMITED);
  for (size_t g = 0; g < tm_parquet_num_row_groups(f) && rc == TM_OK; g++) {
    printf("\nrow group %zu: %lld rows\n", g, (long long)tm_parquet_row_group_rows(f, g));
    fflush(stdout);
    tm_buf_clear(&cells);
    size_t nl = tm_parquet_num_leaves(f);
    for (size_t l = 0; l < nl && rc == TM_OK; l++) {
      tm_parquet_chunk_info ci;
      rc = tm_parquet_chunk_info_at(f, g, l, &ci, err);
      if (rc < 0) break;
      const tm_parquet_field *fd = tm_parquet_field_at(f, ci.field);
      tm_col_stats st;
      memset(&st, 0, sizeof st);
      bool flat = !fd->unsupported;
      if (flat) tm_parquet_column_stats(f, g, ci.field, &st);
      char tn[64];
      if (flat) tm_type_name(&fd->type, tn, sizeof tn);
      else snprintf(tn, sizeof tn, "%s", tm_parquet_physical_name(ci.physical_type));
      rc = cell(&cells, err, "%s", ci.path);
      if (rc == TM_OK) rc = cell(&cells, err, "%s", tn);
      if (rc == TM_OK) rc = cell(&cells, err, "%s", tm_parquet_codec_name(ci.codec));
      if (rc == TM_OK) rc = encodings_text(&cells, ci.encodings, err);
      if (rc == TM_OK) rc = cell(&cells, err, "%lld", (long long)ci.num_values);
      if (rc == TM_OK) rc = cell(&cells, err, "%lld", (long long)ci.compressed_size);
      if (rc == TM_OK) rc = cell(&cells, err, "%lld", (long long)ci.uncompressed_size);
      if (rc == TM_OK) {
        if (ci.has_null_count) rc = cell(&cells, err, "%lld", (long long)ci.null_count);
        else rc = cell(&cells, err, "%s", "");
      }
      if (rc == TM_OK) rc = stat_text(&cells, &fd->type, &st.min, flat && st.has_min, err);
      if (rc == TM_OK) rc = stat_text(&cells, &fd->type, &st.max, flat && st.has_max, err);
    }
    if (rc == TM_OK) rc = render_table(TM_OUT_TABLE, names, 10, &cells, nl, err);
  }
  tm_buf_dispose(&cells);
  return rc;
}

/* ---- cat ------------------------------------------------------------------- */

static int parse_columns(tm_parquet_file *f, const char *list, size_t **idx_out, size_t *n_out,
                         tm_error *err) {
  size_t cap = 1;
  for (const char *p = list; *p; p++)
    if (*p == ',') cap++;
  size_t *idx = tm_calloc(cap, sizeof *idx);
  if (!idx) return tm_error_nomem(err);
  size_t n = 0;
  const char *p = list;
  while (1) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    tm_strview name = tm_sv_trim(tm_sv(p, len));
    int found = -1;
    for (size_t i = 0; i < tm_parquet_num_fields(f); i++)
      if (tm_sv_eq_cstr(name, tm_parquet_field_at(f, i)->name)) {
        found = (int)i;
        break;
      }
    if (found < 0) {
      int rc = tm_error_set(err, TM_ENOTFOUND, "%s: no column named '%.*s'", tm_parquet_name(f),
                            (int)name.len, name.ptr);
      tm_free(idx);
      return rc;
    }
    idx[n++] = (size_t)found;
    if (!comma) break;
    p = comma + 1;
  }
  *idx_out = idx;
  *n_out = n;
  return TM_OK;
}

static int cmd_cat(tm_parquet_file *f, const char *columns, tm_out_format fmt, int64_t limit,
                   bool nested_json, bool nested, tm_error *err) {
  size_t *idx = NULL;
  size_t n_idx = 0;
  tm_parquet_scan *s = NULL;
  tm_batch b, part;
  tm_batch_init(&b);
  tm_batch_init(&part);
  tm_out o;
  bool out_open = false;
  uint8_t *keep = NULL;
  bool *json = NULL; /* per output column: nested, rendered as JSON */
  int rc = TM_OK;
  if (columns) TM_CHECK(parse_columns(f, columns, &idx, &n_idx, err));
  tm_parquet_scan_options so = TM_PARQUET_SCAN_OPTIONS_INIT;
  so.columns = idx;
  so.n_columns = n_idx;
  so.nested_as_json = nested_json; /* JSON text, as unsupported_type_action: string reads them */
  so.nested_native = nested;        /* LIST / STRUCT / MAP arrays, written as JSON */
  TM_CHECK(tm_parquet_scan_new(&s, f, &so, err));
  const tm_schema *sc = tm_parquet_scan_schema(s);
  const char **names = tm_calloc(sc->n_cols ? sc->n_cols : 1, sizeof *names);
  json = tm_calloc(sc->n_cols ? sc->n_cols : 1, sizeof *json);
  if (!names || !json) {
    tm_free(names);
    rc = tm_error_nomem(err);
    goto done;
  }
  for (size_t i = 0; i < sc->n_cols; i++) {
    names[i] = sc->cols[i].name;
    json[i] = tm_parquet_field_at(f, idx ? idx[i] : i)->nested;
  }
  rc = tm_out_begin(&o, fmt, names, sc->n_cols, tm_out_file_sink, stdout, err);
  tm_free(names);
  if (rc < 0) goto done;
  out_open = true;
  int64_t written = 0;
  while (limit < 0 || written < limit) {
    rc = tm_parquet_scan_next(s, &b, err);
    if (rc == TM_ITEROVER) {
      rc = TM_OK;
      break;
    }
    if (rc < 0) goto done;
    if (limit >= 0 && b.n_rows > limit - written) {
      int64_t k = limit - written;
      keep = tm_calloc((size_t)(b.n_rows + 7) / 8, 1);
      if (!keep) {
        rc = tm_error_nomem(err);
        goto done;
      }
      for (int64_t r = 0; r < k; r++) tm_bit_set(keep, r);
      TM_CHECK(tm_batch_filter(&b, keep, &part, err));
      tm_free(keep);
      keep = NULL;
      tm_batch_release(&b);
      tm_batch_move(&b, &part);
    }
    TM_CHECK(tm_out_batch_json(&o, &b, json, err));
    written += b.n_rows;
    tm_batch_release(&b);
  }
  out_open = false;
  rc = tm_out_end(&o, err);
done:
  if (out_open) tm_out_dispose(&o);
  tm_free(json);
  tm_free(keep);
  tm_batch_release(&b);
  tm_batch_release(&part);
  tm_parquet_scan_free(s);
  tm_free(idx);
  return rc;
}

static int run(const tm_cli_cmd *cmd, const tm_cli_args *args) {
  if (args->n_positional != 2)
    return tm_cli_usage_error(cmd, "expected a subcommand (schema, meta, cat) and a FILE");
  const char *sub = args->positional[0];
  const char *path = args->positional[1];
  bool is_cat = strcmp(sub, "cat") == 0;
  if (!is_cat && strcmp(sub, "schema") != 0 && strcmp(sub, "meta") != 0)
    return tm_cli_usage_error(cmd, "unknown subcommand '%s' (schema, meta, cat)", sub);
  const char *columns = tm_cli_get(cmd, args, "columns");
  const char *format = tm_cli_get(cmd, args, "format");
  const char *limit_s = tm_cli_get(cmd, args, "limit");
  if (!is_cat && (columns || limit_s || tm_cli_flag(cmd, args, "nested-json") ||
                  tm_cli_flag(cmd, args, "nested")))
    return tm_cli_usage_error(cmd, "--columns, --limit, --nested and --nested-json apply to `cat` only");
  if (strcmp(sub, "meta") == 0 && format)
    return tm_cli_usage_error(cmd, "--format applies to `cat` and `schema` only");
  tm_out_format fmt = is_cat ? TM_OUT_CSV : TM_OUT_TABLE;
  if (format && tm_out_format_parse(format, &fmt) != TM_OK)
    return tm_cli_usage_error(cmd, "unknown format '%s' (csv, json, table)", format);
  int64_t limit = -1;
  if (limit_s && (tm_parse_int64(limit_s, strlen(limit_s), &limit) != TM_OK || limit < 0))
    return tm_cli_usage_error(cmd, "--limit needs a non-negative integer, not '%s'", limit_s);

  tm_error err;
  tm_error_init(&err);
  tm_parquet_open_options oo = TM_PARQUET_OPEN_OPTIONS_INIT;
  oo.verify_crc = tm_cli_flag(cmd, args, "verify-crc");
  oo.skip_crc = tm_cli_flag(cmd, args, "skip-crc");
  const char *int96 = tm_cli_get(cmd, args, "int96");
  if (int96) {
    if (strcmp(int96, "ns") == 0) oo.int96_unit = TM_UNIT_NANO;
    else if (strcmp(int96, "us") == 0) oo.int96_unit = TM_UNIT_MICRO;
    else if (strcmp(int96, "ms") == 0) oo.int96_unit = TM_UNIT_MILLI;
    else return tm_cli_usage_error(cmd, "--int96 takes ns, us or ms, not '%s'", int96);
  }
  tm_parquet_file *f = NULL;
  if (tm_parquet_open_path(&f, path, &oo, &err) < 0) return fail(&err);
  int rc;
  if (strcmp(sub, "schema") == 0) rc = cmd_schema(f, fmt, &err);
  else if (strcmp(sub, "meta") == 0) rc = cmd_meta(f, &err);
  else
    rc = cmd_cat(f, columns, fmt, limit, tm_cli_flag(cmd, args, "nested-json"),
                 tm_cli_flag(cmd, args, "nested"), &err);
  tm_parquet_close(f);
  fflush(stdout);
  return rc < 0 ? fail(&err) : TM_EXIT_OK;
}

const tm_cli_cmd tm_cli_cmd_parquet = {
    "parquet",
    "inspect Parquet files: schema, metadata, rows",
    "tidemark parquet <schema|meta|cat> FILE [--columns a,b] [--format csv|json|table] "
    "[--limit N] [--nested | --nested-json] [--verify-crc | --skip-crc] [--int96 ns|us|ms]",
    "Inspects a Parquet file: `schema` prints its columns, `meta` its row groups, column\n"
    "chunks, encodings, codecs and statistics, `cat` its rows (CSV by default).",
    k_opts,
    2,
    run};
