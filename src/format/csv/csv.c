/*
 * csv.c - CSV reader (format layer). See csv.h.
 */
#include "format/csv/csv.h"

#include <strings.h>

#include "util/alloc.h"

struct tm_csv_reader {
  tm_text_scanner scan;
  tm_csv_record rec;
  tm_text_options opts;
  tm_batch_builder bb;
  int *map;       /* schema column -> field index, or -1 */
  size_t n_fields;/* fields per record (from the header or the first record) */
  bool done;
};

static bool is_string_column(const tm_text_options *o, const char *name) {
  for (size_t i = 0; i < o->n_string_columns; i++)
    if (strcmp(o->string_columns[i], name) == 0) return true;
  return false;
}

int tm_csv_infer_schema(tm_schema *out, tm_input *in, const tm_text_options *opts,
                        tm_error *err) {
  tm_text_options o;
  if (opts) o = *opts;
  else tm_text_options_init(&o);
  tm_text_scanner s;
  tm_csv_record rec;
  tm_csv_record_init(&rec);
  tm_text_kind *kinds = NULL;
  char **names = NULL;
  size_t n = 0;
  int rc = tm_text_scanner_init(&s, in, o.max_record_bytes, err);
  if (rc == TM_OK) {
    rc = tm_text_scanner_csv(&s, &o, &rec, err);
    if (rc == TM_ITEROVER) rc = tm_error_set(err, TM_ECORRUPT, "%s: empty CSV file", tm_input_name(in));
  }
  if (rc == TM_OK) {
    n = rec.n;
    kinds = tm_calloc(n, sizeof *kinds);
    names = tm_calloc(n, sizeof *names);
    if (!kinds || !names) rc = tm_error_nomem(err);
    for (size_t i = 0; i < n && rc == TM_OK; i++) {
      names[i] = o.no_header ? tm_asprintf("column%zu", i)
                             : tm_strndup(rec.fields[i].ptr, rec.fields[i].len);
      if (!names[i]) rc = tm_error_nomem(err);
      if (o.no_header) kinds[i] = tm_text_widen(kinds[i], tm_text_classify(rec.fields[i].ptr, rec.fields[i].len));
    }
  }
  for (int64_t row = 0; rc == TM_OK && row < o.sample_rows; row++) {
    int64_t line = s.line;
    rc = tm_text_scanner_csv(&s, &o, &rec, err);
    if (rc == TM_ITEROVER) {
      rc = TM_OK;
      break;
    }
    if (rc < 0) break;
    if (rec.n == 1 && rec.fields[0].len == 0 && !rec.quoted[0] && n != 1) {
      row--; /* a blank line, skipped as the reader does */
      continue;
    }
    if (rec.n != n) {
      rc = tm_error_set(err, TM_ECORRUPT, "%s: line %lld has %zu fields, the header has %zu",
                        tm_input_name(in), (long long)line, rec.n, n);
      break;
    }
    for (size_t i = 0; i < n; i++) {
      tm_text_kind k = tm_text_classify(rec.fields[i].ptr, rec.fields[i].len);
      if (rec.quoted[i] && k == TM_TEXT_NULL) k = TM_TEXT_STRING;
      kinds[i] = tm_text_widen(kinds[i], k);
    }
  }
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0) {
        rc = tm_error_set(err, TM_ECORRUPT, "%s: column '%s' appears twice in the header",
                          tm_input_name(in), names[i]);
        break;
      }
    if (rc < 0) break;
    tm_type t = is_string_column(&o, names[i]) ? tm_type_of(TM_TYPE_UTF8) : tm_text_kind_type(kinds[i]);
    rc = tm_schema_add(out, names[i], t, true, -1, err);
  }
  for (size_t i = 0; names && i < n; i++) tm_free(names[i]);
  tm_free(names);
  tm_free(kinds);
  tm_csv_record_dispose(&rec);
  tm_text_scanner_dispose(&s);
  if (rc < 0) tm_schema_dispose(out);
  return rc;
}

void tm_csv_reader_free(tm_csv_reader *r) {
  if (!r) return;
  tm_text_scanner_dispose(&r->scan);
  tm_csv_record_dispose(&r->rec);
  if (r->bb.cols) tm_batch_builder_dispose(&r->bb);
  tm_free(r->map);
  tm_free(r);
}

int tm_csv_reader_open(tm_csv_reader **out, tm_input *in, const tm_schema *schema,
                       const tm_text_options *opts, tm_error *err) {
  tm_csv_reader *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  if (opts) r->opts = *opts;
  else tm_text_options_init(&r->opts);
  if (r->opts.batch_rows <= 0) r->opts.batch_rows = TM_BATCH_DEFAULT_ROWS;
  tm_csv_record_init(&r->rec);
  int rc = tm_text_scanner_init(&r->scan, in, r->opts.max_record_bytes, err);
  if (rc == TM_OK) rc = tm_batch_builder_init(&r->bb, schema, err);
  if (rc == TM_OK) {
    r->map = tm_calloc(schema->n_cols ? schema->n_cols : 1, sizeof *r->map);
    if (!r->map) rc = tm_error_nomem(err);
  }
  if (rc == TM_OK && !r->opts.no_header) {
    rc = tm_text_scanner_csv(&r->scan, &r->opts, &r->rec, err);
    if (rc == TM_ITEROVER) {
      r->done = true;
      rc = TM_OK;
      for (size_t c = 0; c < schema->n_cols; c++) r->map[c] = -1;
    } else if (rc == TM_OK) {
      r->n_fields = r->rec.n;
      for (size_t c = 0; c < schema->n_cols; c++) {
        r->map[c] = -1;
        for (size_t f = 0; f < r->rec.n; f++)
          if (tm_sv_eq_nocase(r->rec.fields[f], schema->cols[c].name)) {
            r->map[c] = (int)f;
            break;
          }
        if (r->map[c] < 0 && !schema->cols[c].nullable)
          rc = tm_error_set(err, TM_EINVALID, "%s: the header has no column '%s'",
                            tm_input_name(in), schema->cols[c].name);
      }
    }
  } else if (rc == TM_OK) {
    for (size_t c = 0; c < schema->n_cols; c++) r->map[c] = (int)c;
    r->n_fields = schema->n_cols;
  }
  if (rc < 0) {
    tm_csv_reader_free(r);
    return rc;
  }
  *out = r;
  return TM_OK;
}

int tm_csv_reader_next(tm_csv_reader *r, tm_batch *out, tm_error *err) {
  tm_batch_init(out);
  const tm_schema *schema = &r->bb.schema;
  while (!r->done && tm_batch_builder_rows(&r->bb) < r->opts.batch_rows) {
    int64_t line = r->scan.line;
    int rc = tm_text_scanner_csv(&r->scan, &r->opts, &r->rec, err);
    if (rc == TM_ITEROVER) {
      r->done = true;
      break;
    }
    if (rc < 0) return rc;
    if (r->rec.n == 1 && r->rec.fields[0].len == 0 && !r->rec.quoted[0] && r->n_fields != 1)
      continue; /* a blank line */
    if (r->rec.n != r->n_fields)
      return tm_error_set(err, TM_ECORRUPT, "%s: line %lld has %zu fields, expected %zu",
                          tm_input_name(r->scan.in), (long long)line, r->rec.n, r->n_fields);
    for (size_t c = 0; c < schema->n_cols; c++) {
      tm_colbuilder *cb = tm_batch_builder_col(&r->bb, c);
      if (r->map[c] < 0) {
        TM_TRY(tm_colbuilder_append_null(cb, err));
        continue;
      }
      tm_strview f = r->rec.fields[r->map[c]];
      bool quoted = r->rec.quoted[r->map[c]];
      int64_t nulls_before = cb->null_count;
      if (f.len == 0 && !quoted && (cb->type.id == TM_TYPE_UTF8 || cb->type.id == TM_TYPE_BINARY)) {
        rc = tm_colbuilder_append_null(cb, err);
      } else {
        rc = tm_text_append(cb, f.ptr, f.len, err);
      }
      if (rc < 0)
        return tm_error_prefix(err, "%s: line %lld, column '%s'", tm_input_name(r->scan.in),
                               (long long)line, schema->cols[c].name);
      if (cb->null_count > nulls_before && !schema->cols[c].nullable)
        return tm_error_set(err, TM_EINVALID, "%s: line %lld: column '%s' is NULL",
                            tm_input_name(r->scan.in), (long long)line, schema->cols[c].name);
    }
  }
  if (tm_batch_builder_rows(&r->bb) == 0) return TM_ITEROVER;
  return tm_batch_builder_finish(&r->bb, out, err);
}
