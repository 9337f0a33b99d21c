/*
 * jsonl.c - JSON lines reader on jansson (format layer). See jsonl.h.
 */
#include "format/json/jsonl.h"

#include <jansson.h>
#include <stdio.h>

#include "util/alloc.h"

#define MAX_COLUMNS 4096

struct tm_jsonl_reader {
  tm_text_scanner scan;
  tm_text_options opts;
  int mode;       /* TM_JSON_LINES or TM_JSON_ARRAY */
  tm_batch_builder bb;
  bool done;
};

static bool is_string_column(const tm_text_options *o, const char *name) {
  for (size_t i = 0; i < o->n_string_columns; i++)
    if (strcmp(o->string_columns[i], name) == 0) return true;
  return false;
}

/* Parses one non-blank line into an object; *obj_out owned by the caller. */
static int parse_line(tm_text_scanner *s, tm_strview line, int64_t lineno, json_t **obj_out,
                      tm_error *err) {
  json_error_t jerr;
  json_t *v = json_loadb(line.ptr, line.len, 0, &jerr);
  if (!v)
    return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: %s", tm_input_name(s->in),
                        (long long)lineno, jerr.text);
  if (!json_is_object(v)) {
    json_decref(v);
    return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: expected a JSON object",
                        tm_input_name(s->in), (long long)lineno);
  }
  *obj_out = v;
  return TM_OK;
}

static bool blank(tm_strview v) { return tm_sv_trim(v).len == 0; }

/* Lines or array, as opts says or (AUTO) as the first byte that is not blank says. */
static int resolve_mode(tm_text_scanner *s, const tm_text_options *o, int *mode_out, tm_error *err) {
  if (o->json_format == TM_JSON_LINES || o->json_format == TM_JSON_ARRAY) {
    *mode_out = o->json_format;
    return TM_OK;
  }
  int c;
  TM_TRY(tm_text_scanner_peek(s, &c, err));
  *mode_out = c == '[' ? TM_JSON_ARRAY : TM_JSON_LINES;
  return TM_OK;
}

/* The next object (a line, or an element of the array); TM_ITEROVER at the end. */
static int next_object(tm_text_scanner *s, int mode, json_t **obj_out, int64_t *lineno_out,
                       tm_error *err) {
  tm_strview text;
  if (mode == TM_JSON_ARRAY) {
    TM_TRY(tm_text_scanner_json_object(s, &text, lineno_out, err));
    return parse_line(s, text, *lineno_out, obj_out, err);
  }
  for (;;) {
    *lineno_out = s->line;
    TM_TRY(tm_text_scanner_line(s, &text, err));
    if (!blank(text)) return parse_line(s, text, *lineno_out, obj_out, err);
  }
}

static tm_text_kind kind_of(const json_t *v, bool keep_string) {
  switch (json_typeof(v)) {
    case JSON_NULL: return TM_TEXT_NULL;
    case JSON_TRUE:
    case JSON_FALSE: return TM_TEXT_BOOL;
    case JSON_INTEGER: return TM_TEXT_INT;
    case JSON_REAL: return TM_TEXT_FLOAT;
    case JSON_STRING: {
      if (keep_string) return TM_TEXT_STRING;
      tm_text_kind k = tm_text_classify(json_string_value(v), json_string_length(v));
      return (k == TM_TEXT_DATE || k == TM_TEXT_TIMESTAMP || k == TM_TEXT_TIMESTAMPTZ) ? k
             : TM_TEXT_STRING;
    }
    default: return TM_TEXT_STRING;
  }
}

int tm_jsonl_infer_schema(tm_schema *out, tm_input *in, const tm_text_options *opts,
                          tm_error *err) {
  tm_text_options o;
  if (opts) o = *opts;
  else tm_text_options_init(&o);
  tm_text_scanner s;
  char **names = NULL;
  tm_text_kind *kinds = NULL;
  size_t n = 0;
  int mode = TM_JSON_LINES;
  int rc = tm_text_scanner_init(&s, in, o.max_record_bytes, err);
  if (rc == TM_OK) rc = resolve_mode(&s, &o, &mode, err);
  for (int64_t rows = 0; rc == TM_OK && rows < o.sample_rows;) {
    int64_t lineno;
    json_t *obj;
    rc = next_object(&s, mode, &obj, &lineno, err);
    if (rc == TM_ITEROVER) {
      rc = TM_OK;
      break;
    }
    if (rc < 0) break;
    rows++;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
      size_t i = 0;
      while (i < n && strcmp(names[i], key) != 0) i++;
      if (i == n) {
        if (n == MAX_COLUMNS) {
          rc = tm_error_set(err, TM_ETOOLARGE, "%s: more than %d keys", tm_input_name(in), MAX_COLUMNS);
          break;
        }
        char **nn = tm_reallocarray(names, n + 1, sizeof *nn);
        tm_text_kind *nk = nn ? tm_reallocarray(kinds, n + 1, sizeof *nk) : NULL;
        if (nn) names = nn;
        if (nk) kinds = nk;
        if (!nn || !nk || !(names[n] = tm_strdup(key))) {
          rc = tm_error_nomem(err);
          break;
        }
        kinds[n++] = TM_TEXT_NULL;
      }
      kinds[i] = tm_text_widen(kinds[i], kind_of(v, is_string_column(&o, key)));
    }
    json_decref(obj);
  }
  for (size_t i = 0; i < n && rc == TM_OK; i++)
    rc = tm_schema_add(out, names[i], tm_text_kind_type(kinds[i]), true, -1, err);
  if (rc == TM_OK && n == 0)
    rc = tm_error_set(err, TM_ECORRUPT, "%s: no JSON objects to infer a schema from", tm_input_name(in));
  for (size_t i = 0; i < n; i++) tm_free(names[i]);
  tm_free(names);
  tm_free(kinds);
  tm_text_scanner_dispose(&s);
  if (rc < 0) tm_schema_dispose(out);
  return rc;
}

int tm_jsonl_reader_open(tm_jsonl_reader **out, tm_input *in, const tm_schema *schema,
                         const tm_text_options *opts, tm_error *err) {
  tm_jsonl_reader *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  if (opts) r->opts = *opts;
  else tm_text_options_init(&r->opts);
  if (r->opts.batch_rows <= 0) r->opts.batch_rows = TM_BATCH_DEFAULT_ROWS;
  int rc = tm_text_scanner_init(&r->scan, in, r->opts.max_record_bytes, err);
  if (rc == TM_OK) rc = resolve_mode(&r->scan, &r->opts, &r->mode, err);
  if (rc == TM_OK) rc = tm_batch_builder_init(&r->bb, schema, err);
  if (rc < 0) {
    tm_jsonl_reader_free(r);
    return rc;
  }
  *out = r;
  return TM_OK;
}

void tm_jsonl_reader_free(tm_jsonl_reader *r) {
  if (!r) return;
  tm_text_scanner_dispose(&r->scan);
  if (r->bb.cols) tm_batch_builder_dispose(&r->bb);
  tm_free(r);
}

static int append_json(tm_colbuilder *cb, json_t *v, tm_error *err) {
  tm_type_id t = cb->type.id;
  switch (json_typeof(v)) {
    case JSON_NULL: return tm_colbuilder_append_null(cb, err);
    case JSON_TRUE:
    case JSON_FALSE:
      if (t == TM_TYPE_BOOL) return tm_colbuilder_append_bool(cb, json_is_true(v), err);
      if (t == TM_TYPE_UTF8) return tm_colbuilder_append_bytes(cb, json_is_true(v) ? "true" : "false", json_is_true(v) ? 4 : 5, err);
      return tm_error_set(err, TM_EINVALID, "expected %s, got a boolean", t == TM_TYPE_UTF8 ? "text" : "a value of the column's type");
    case JSON_INTEGER: {
      json_int_t i = json_integer_value(v);
      if (t == TM_TYPE_UTF8 || t == TM_TYPE_DECIMAL128) {
        char tmp[32];
        int n = snprintf(tmp, sizeof tmp, "%lld", (long long)i);
        return t == TM_TYPE_UTF8 ? tm_colbuilder_append_bytes(cb, tmp, (size_t)n, err)
                                 : tm_text_append(cb, tmp, (size_t)n, err);
      }
      return tm_colbuilder_append_int(cb, (int64_t)i, err);
    }
    case JSON_REAL: {
      double d = json_real_value(v);
      if (t == TM_TYPE_FLOAT32 || t == TM_TYPE_FLOAT64) return tm_colbuilder_append_double(cb, d, err);
      char tmp[64];
      int n = snprintf(tmp, sizeof tmp, "%.17g", d);
      if (t == TM_TYPE_UTF8) return tm_colbuilder_append_bytes(cb, tmp, (size_t)n, err);
      if (t == TM_TYPE_DECIMAL128) return tm_text_append(cb, tmp, (size_t)n, err);
      return tm_error_set(err, TM_EINVALID, "expected an integer, got %s", tmp);
    }
    case JSON_STRING:
      if (t == TM_TYPE_UTF8 || t == TM_TYPE_BINARY)
        return tm_colbuilder_append_bytes(cb, json_string_value(v), json_string_length(v), err);
      return tm_text_append(cb, json_string_value(v), json_string_length(v), err);
    default: {
      if (t != TM_TYPE_UTF8) return tm_error_set(err, TM_EINVALID, "expected a scalar, got an object or array");
      char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      if (!text) return tm_error_nomem(err);
      int rc = tm_colbuilder_append_bytes(cb, text, strlen(text), err);
      free(text); /* lint-ok: jansson allocates with malloc */
      return rc;
    }
  }
}

int tm_jsonl_reader_next(tm_jsonl_reader *r, tm_batch *out, tm_error *err) {
  tm_batch_init(out);
  const tm_schema *schema = &r->bb.schema;
  while (!r->done && tm_batch_builder_rows(&r->bb) < r->opts.batch_rows) {
    int64_t lineno;
    json_t *obj;
    int rc = next_object(&r->scan, r->mode, &obj, &lineno, err);
    if (rc == TM_ITEROVER) {
      r->done = true;
      break;
    }
    if (rc < 0) return rc;
    for (size_t c = 0; c < schema->n_cols && rc == TM_OK; c++) {
      tm_colbuilder *cb = tm_batch_builder_col(&r->bb, c);
      json_t *v = json_object_get(obj, schema->cols[c].name);
      rc = v ? append_json(cb, v, err) : tm_colbuilder_append_null(cb, err);
      if (rc < 0)
        tm_error_prefix(err, "%s: line %lld, key '%s'", tm_input_name(r->scan.in),
                        (long long)lineno, schema->cols[c].name);
    }
    json_decref(obj);
    if (rc < 0) return rc;
  }
  if (tm_batch_builder_rows(&r->bb) == 0) return TM_ITEROVER;
  return tm_batch_builder_finish(&r->bb, out, err);
}
