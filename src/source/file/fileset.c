/*
 * fileset.c - a set of data files as a source: file:PATH and s3://BUCKET/PREFIX
 * (source layer; SPEC 4, A6, A7).
 *
 * The source is a file or a folder (recursively) of Parquet, CSV or JSON-lines
 * files in an object store. Per file it knows the key, size, last-modified
 * time, format and hive-style partition values (`day=2026-11-30/`).
 *
 * Schema: the data columns of the first data file (in key order), then the
 * partition columns, then the `last_modified` pseudo column when the time
 * column or time partition column is `last_modified` and the data has no
 * real column of that name (A7). Later files are conformed to it: a missing
 * nullable column reads as NULL, extra columns are ignored, a type that
 * differs is an error naming both files (docs/SOURCES.md). A Parquet column of
 * a type tidemark cannot read (a nested LIST, MAP or STRUCT) follows the
 * dataset's unsupported_type_action (source.h): with `error` it stays in the
 * schema and only a scan that projects it fails; with `warn`/`ignore` it is
 * left out.
 *
 * Scans prune whole files by partition values and last-modified time, prune
 * Parquet row groups by statistics, and filter rows exactly.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/csv/csv.h"
#include "format/json/jsonl.h"
#include "format/parquet/parquet.h"
#include "format/text/compress.h"
#include "io/io.h"
#include "objstore/objstore.h"
#include "source/source_int.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/time.h"

#define MAX_FILES 1000000

typedef enum file_format { FMT_PARQUET = 0, FMT_CSV, FMT_JSONL, FMT_UNKNOWN } file_format;

typedef struct file_entry {
  char *key;          /* owned; relative to the store root */
  uint64_t size;
  int64_t mtime_ms;
  file_format format;
  bool tsv;           /* a .tsv file: tab-separated unless csv_delimiter says otherwise */
  tm_compression compression;
  tm_value *parts;    /* owned: n_parts partition values (payloads owned below) */
  char **part_text;   /* owned: decoded partition value texts (NULL: __HIVE_DEFAULT_PARTITION__) */
} file_entry;

typedef struct fileset {
  tm_source base;
  tm_objstore *store;   /* owned */
  char *prefix;         /* owned: key prefix within the store ("" for all) */
  bool single_file;     /* from names one file */
  bool maybe_file;      /* an object-store prefix that may name one object */
  bool local;           /* a local path (location is a folder or file path) */
  char *location;       /* owned: the path or URL, for messages */
  tm_source__file_params p; /* the format params */
  char *time_column;    /* owned or NULL */
  char *part_column;    /* owned or NULL */
  bool time_text;
  tm_unsupported_action unsupported_action;
  atomic_bool own_warned;
  atomic_bool *warned;  /* `warn` logs the skipped columns once: the options' flag, or own */
  /* After describe: */
  file_entry *files;    /* owned, sorted by key */
  size_t n_files;
  char **part_names;    /* owned: partition column names */
  tm_type *part_types;
  size_t n_parts;
  tm_schema data_schema;/* columns stored in the data files */
  bool add_last_modified;
  char *first_file;     /* owned: the file the schema came from */
} fileset;

/* ---- params ---------------------------------------------------------------- */

/* A one-character param (csv_delimiter, csv_quote, csv_escape). */
static int one_char(const char *who, const char *key, const char *v, char *out, tm_error *err) {
  if (strcmp(v, "\\t") == 0) v = "\t"; /* a YAML plain scalar cannot hold a tab */
  if (strlen(v) != 1 || v[0] == '\n' || v[0] == '\r')
    return tm_error_set(err, TM_EINVALID, "%s%s must be one character, not '%s'", who,
                        key, v);
  *out = v[0];
  return TM_OK;
}

int tm_source__file_params_parse(tm_source__file_params *out, const char *dataset,
                                 const tm_kv *params, tm_error *err) {
  memset(out, 0, sizeof *out);
  out->forced = FMT_UNKNOWN;
  out->delimiter = ',';
  out->quote = '"';
  out->sample_rows = 1000;
  out->json_format = TM_JSON_AUTO;
  char who[160] = "";
  if (dataset && *dataset) snprintf(who, sizeof who, "dataset %.120s: ", dataset);
  const char *v;
  if (params && (v = tm_kv_get(params, "file_format"))) {
    if (!strcmp(v, "parquet")) out->forced = FMT_PARQUET;
    else if (!strcmp(v, "csv")) out->forced = FMT_CSV;
    else if (!strcmp(v, "tsv")) {
      out->forced = FMT_CSV;
      out->delimiter = '\t';
    } else if (!strcmp(v, "json") || !strcmp(v, "jsonl") || !strcmp(v, "ndjson"))
      out->forced = FMT_JSONL;
    else
      return tm_error_set(err, TM_EINVALID, "%sbad file_format '%s' (allowed: parquet, "
                          "csv, tsv, json, jsonl, ndjson)", who, v);
  }
  if (params && (v = tm_kv_get(params, "csv_delimiter"))) {
    TM_TRY(one_char(who, "csv_delimiter", v, &out->delimiter, err));
    out->delimiter_set = true;
  }
  if (params && (v = tm_kv_get(params, "csv_quote")))
    TM_TRY(one_char(who, "csv_quote", v, &out->quote, err));
  if (params && (v = tm_kv_get(params, "csv_escape")))
    TM_TRY(one_char(who, "csv_escape", v, &out->escape, err));
  if (out->delimiter == out->quote || (out->escape && out->escape == out->delimiter))
    return tm_error_set(err, TM_EINVALID, "%scsv_delimiter, csv_quote and csv_escape "
                        "must differ", who);
  if (params && (v = tm_kv_get(params, "csv_has_header"))) {
    bool b;
    if (tm_parse_bool(v, strlen(v), &b) != TM_OK)
      return tm_error_set(err, TM_EINVALID, "%scsv_has_header must be true or false", who);
    out->no_header = !b;
  }
  if (params && (v = tm_kv_get(params, "csv_schema_infer_max_records"))) {
    int64_t n;
    if (tm_parse_int64(v, strlen(v), &n) != TM_OK || n < 1 || n > 100000000)
      return tm_error_set(err, TM_EINVALID, "%scsv_schema_infer_max_records must be an "
                          "integer from 1 to 100000000, not '%s'", who, v);
    out->sample_rows = n;
  }
  if (params && (v = tm_kv_get(params, "json_format"))) {
    if (!strcmp(v, "array")) out->json_format = TM_JSON_ARRAY;
    else if (!strcmp(v, "jsonl") || !strcmp(v, "ndjson")) out->json_format = TM_JSON_LINES;
    else
      return tm_error_set(err, TM_EINVALID, "%sbad json_format '%s' (allowed: array, "
                          "jsonl, ndjson)", who, v);
  }
  if (params && (v = tm_kv_get(params, "file_compression_type"))) {
    int rc = tm_compression_parse(&out->compression, v, err);
    if (rc < 0) return who[0] ? tm_error_prefix(err, "dataset %s", dataset) : rc;
    out->compression_set = true;
    if (out->forced == FMT_PARQUET && out->compression != TM_COMPRESSION_NONE)
      return tm_error_set(err, TM_EINVALID, "%sfile_compression_type '%s' does not apply "
                          "to Parquet, which compresses its own pages", who, v);
  }
  return TM_OK;
}

/* ---- files ----------------------------------------------------------------- */

static void free_files(fileset *fs) {
  for (size_t i = 0; i < fs->n_files; i++) {
    file_entry *f = &fs->files[i];
    tm_free(f->key);
    for (size_t k = 0; k < fs->n_parts && f->part_text; k++) tm_free(f->part_text[k]);
    tm_free(f->part_text);
    tm_free(f->parts);
  }
  tm_free(fs->files);
  fs->files = NULL;
  fs->n_files = 0;
  for (size_t k = 0; k < fs->n_parts; k++) tm_free(fs->part_names[k]);
  tm_free(fs->part_names);
  tm_free(fs->part_types);
  fs->part_names = NULL;
  fs->part_types = NULL;
  fs->n_parts = 0;
}

/*
 * A file's format and compression: the format from file_format or the
 * extension below a compression extension (data.csv.gz), the compression
 * from file_compression_type or that extension.
 */
static file_format format_of(const fileset *fs, const char *key, bool *tsv_out,
                             tm_compression *comp_out) {
  size_t stem = 0;
  tm_compression by_name = tm_compression_of_name(key, &stem);
  *comp_out = fs->p.compression_set ? fs->p.compression : by_name;
  *tsv_out = false;
  const char *slash = strrchr(key, '/');
  size_t base = slash ? (size_t)(slash + 1 - key) : 0;
  const char *dot = NULL;
  for (size_t i = base; i < stem; i++)
    if (key[i] == '.') dot = key + i;
  char ext[16] = "";
  if (dot && (size_t)(key + stem - dot - 1) < sizeof ext) {
    memcpy(ext, dot + 1, (size_t)(key + stem - dot - 1));
    ext[key + stem - dot - 1] = '\0';
  }
  for (char *c = ext; *c; c++)
    if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
  *tsv_out = !strcmp(ext, "tsv") || !strcmp(ext, "tab");
  if (fs->p.forced != FMT_UNKNOWN) return fs->p.forced;
  if (!strcmp(ext, "parquet") || !strcmp(ext, "parq") || !strcmp(ext, "pq")) {
    *comp_out = by_name; /* file_compression_type is for CSV and JSON files */
    return FMT_PARQUET;
  }
  if (!strcmp(ext, "csv") || *tsv_out) return FMT_CSV;
  if (!strcmp(ext, "jsonl") || !strcmp(ext, "ndjson") || !strcmp(ext, "json")) return FMT_JSONL;
  return FMT_UNKNOWN;
}

/* Hidden files and folders (".x", "_SUCCESS", "_delta_log/") are not data. */
static bool hidden(const char *rel) {
  const char *seg = rel;
  while (*seg) {
    if (*seg == '.' || *seg == '_') return true;
    const char *slash = strchr(seg, '/');
    if (!slash) break;
    seg = slash + 1;
  }
  return false;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decodes a partition value (`col_time=17%3A00`). */
static char *url_decode(const char *s, size_t len) {
  char *out = tm_malloc(len + 1);
  if (!out) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '%' && i + 2 < len + 0 && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      out[n++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      out[n++] = s[i];
    }
  }
  out[n] = '\0';
  return out;
}

typedef struct list_ctx {
  fileset *fs;
  tm_vec files; /* file_entry */
  tm_error *err;
} list_ctx;

static int on_object(const tm_obj_info *info, void *payload) {
  list_ctx *c = payload;
  fileset *fs = c->fs;
  const char *rel = info->key + strlen(fs->prefix);
  while (*rel == '/') rel++;
  if (!fs->single_file && (hidden(rel) || *rel == '\0')) return TM_OK;
  bool tsv;
  tm_compression comp;
  file_format f = format_of(fs, info->key, &tsv, &comp);
  if (f == FMT_UNKNOWN) {
    TM_LOG_DEBUG_(fs->base.name, "skipping %s: not a .parquet, .csv, .tsv or .jsonl file "
                  "(optionally .gz, .zst, .bz2, .xz)", info->key);
    return TM_OK;
  }
  file_entry *e;
  int rc = tm_vec_push_zero(&c->files, (void **)&e, c->err);
  if (rc < 0) return rc;
  e->key = tm_strdup(info->key);
  if (!e->key) return tm_error_nomem(c->err);
  e->size = info->size;
  e->mtime_ms = info->mtime_ms;
  e->format = f;
  e->tsv = tsv;
  e->compression = comp;
  return TM_OK;
}

/* Partition segments of a key below the prefix: "a=1/b=x/file.parquet". */
static int parse_partitions(fileset *fs, tm_error *err) {
  for (size_t i = 0; i < fs->n_files; i++) {
    file_entry *f = &fs->files[i];
    const char *rel = f->key + strlen(fs->prefix);
    while (*rel == '/') rel++;
    char *names[64];
    char *values[64];
    size_t n = 0;
    int rc = TM_OK;
    const char *seg = rel;
    for (const char *slash; (slash = strchr(seg, '/')) != NULL; seg = slash + 1) {
      const char *eq = memchr(seg, '=', (size_t)(slash - seg));
      if (!eq || eq == seg) continue;
      if (n == 64) {
        rc = tm_error_set(err, TM_EINVALID, "%s: too many partition folders", f->key);
        break;
      }
      names[n] = url_decode(seg, (size_t)(eq - seg));
      values[n] = url_decode(eq + 1, (size_t)(slash - eq - 1));
      if (!names[n] || !values[n]) {
        tm_free(names[n]);
        tm_free(values[n]);
        rc = tm_error_nomem(err);
        break;
      }
      n++;
    }
    if (rc == TM_OK && i == 0) {
      fs->n_parts = n;
      fs->part_names = tm_calloc(n ? n : 1, sizeof *fs->part_names);
      fs->part_types = tm_calloc(n ? n : 1, sizeof *fs->part_types);
      if (!fs->part_names || !fs->part_types) rc = tm_error_nomem(err);
      for (size_t k = 0; k < n && rc == TM_OK; k++) {
        fs->part_names[k] = tm_strdup(names[k]);
        if (!fs->part_names[k]) rc = tm_error_nomem(err);
      }
    } else if (rc == TM_OK) {
      bool same = n == fs->n_parts;
      for (size_t k = 0; same && k < n; k++) same = strcmp(names[k], fs->part_names[k]) == 0;
      if (!same)
        rc = tm_error_set(err, TM_EINVALID,
                          "partition folders disagree: %s and %s name different partition columns",
                          fs->files[0].key, f->key);
    }
    for (size_t k = 0; k < n; k++) tm_free(names[k]);
    if (rc == TM_OK) {
      f->part_text = tm_calloc(n ? n : 1, sizeof *f->part_text);
      if (!f->part_text) rc = tm_error_nomem(err);
    }
    for (size_t k = 0; k < n; k++) {
      if (rc == TM_OK && strcmp(values[k], "__HIVE_DEFAULT_PARTITION__") != 0)
        f->part_text[k] = values[k];
      else tm_free(values[k]);
    }
    TM_TRY(rc);
  }
  /* Types: int64 when every value is an integer, date32 when every value is a date. */
  for (size_t k = 0; k < fs->n_parts; k++) {
    tm_text_kind kind = TM_TEXT_NULL;
    for (size_t i = 0; i < fs->n_files; i++) {
      const char *v = fs->files[i].part_text[k];
      if (!v) continue;
      tm_text_kind c = tm_text_classify(v, strlen(v));
      if (c != TM_TEXT_INT && c != TM_TEXT_DATE) c = TM_TEXT_STRING;
      kind = tm_text_widen(kind, c);
    }
    fs->part_types[k] = kind == TM_TEXT_INT || kind == TM_TEXT_DATE ? tm_text_kind_type(kind)
                                                                    : tm_type_of(TM_TYPE_UTF8);
  }
  /* Typed values per file. */
  for (size_t i = 0; i < fs->n_files; i++) {
    file_entry *f = &fs->files[i];
    f->parts = tm_calloc(fs->n_parts ? fs->n_parts : 1, sizeof *f->parts);
    if (!f->parts) return tm_error_nomem(err);
    for (size_t k = 0; k < fs->n_parts; k++) {
      tm_value *v = &f->parts[k];
      const char *t = f->part_text[k];
      v->type = fs->part_types[k].id;
      if (!t) {
        v->is_null = true;
        continue;
      }
      if (v->type == TM_TYPE_INT64) {
        TM_TRY(tm_parse_int64(t, strlen(t), &v->v.i) == TM_OK ? TM_OK : tm_error_set(err, TM_ECORRUPT, "bad partition value"));
      } else if (v->type == TM_TYPE_DATE32) {
        int64_t sec;
        int32_t nsec;
        bool zone;
        if (tm_time_parse(t, strlen(t), &sec, &nsec, &zone) != TM_OK)
          return tm_error_set(err, TM_ECORRUPT, "%s: bad date partition value '%s'", f->key, t);
        v->v.i = tm_floor_div(sec, 86400);
      } else {
        v->v.s = tm_sv_cstr(t);
      }
    }
  }
  return TM_OK;
}

/* The file's bytes, decompressed as they are read when the file is compressed. */
static int open_input(fileset *fs, const file_entry *f, tm_input **out, tm_error *err) {
  if (f->compression != TM_COMPRESSION_NONE && f->format == FMT_PARQUET)
    return tm_error_set(err, TM_EINVALID, "%s: a %s-compressed Parquet file cannot be read "
                        "(Parquet compresses its own pages)", f->key,
                        tm_compression_name(f->compression));
  tm_input *raw = NULL;
  TM_TRY(tm_objstore_open_input(fs->store, f->key, f->size, &raw, err));
  if (f->compression == TM_COMPRESSION_NONE) {
    *out = raw;
    return TM_OK;
  }
  return tm_input_open_decompress(out, raw, f->compression, tm_compression_default_cap(f->size),
                                  err);
}

/* Text options for CSV/JSON, keeping an ISO8601 time column as text. */
static void text_options(const fileset *fs, const file_entry *f, tm_text_options *o,
                         const char **keep) {
  tm_text_options_init(o);
  o->delimiter = f->tsv && !fs->p.delimiter_set ? '\t' : fs->p.delimiter;
  o->quote = fs->p.quote;
  o->escape = fs->p.escape;
  o->no_header = fs->p.no_header;
  o->sample_rows = fs->p.sample_rows;
  o->json_format = fs->p.json_format;
  if (fs->time_text && fs->time_column) {
    keep[0] = fs->time_column;
    o->string_columns = keep;
    o->n_string_columns = 1;
  }
}

/*
 * The data schema of a Parquet file under the dataset's
 * unsupported_type_action: readable columns as they are; an unreadable one
 * (nested, or of an unsupported type) as a nullable utf8 stand-in that
 * fails when read (error), or left out (warn: logged once; ignore).
 */
static int parquet_schema(fileset *fs, const tm_parquet_file *pf, const char *key,
                          tm_schema *out, tm_error *err) {
  size_t n = tm_parquet_num_fields(pf);
  tm_buf skipped;
  tm_buf_init(&skipped, 4096);
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    const tm_parquet_field *fd = tm_parquet_field_at(pf, i);
    if (!fd->unsupported) {
      rc = tm_schema_add(out, fd->name, fd->type, fd->nullable, fd->field_id, err);
      continue;
    }
    if (fd->nested && fs->unsupported_action != TM_UNSUPPORTED_STRING) {
      /* Nested columns are native (issue 16); one whose parts have no type
       * (an unsupported leaf) is unsupported as before. */
      tm_type t;
      bool nullable;
      tm_error terr;
      tm_error_init(&terr);
      if (tm_parquet_nested_type(pf, i, &t, &nullable, &terr) == TM_OK) {
        rc = tm_schema_add(out, fd->name, t, nullable, fd->field_id, err);
        continue;
      }
    }
    if (fs->unsupported_action == TM_UNSUPPORTED_ERROR ||
        fs->unsupported_action == TM_UNSUPPORTED_STRING) {
      /* string: a nested column reads as JSON text; other types fail when read. */
      rc = tm_schema_add(out, fd->name, tm_type_of(TM_TYPE_UTF8), true, fd->field_id, err);
    } else if (fs->unsupported_action == TM_UNSUPPORTED_WARN && !atomic_load(fs->warned)) {
      rc = tm_buf_printf(&skipped, err, "%s%s (%s)", skipped.len ? ", " : "", fd->name,
                         fd->unsupported);
    }
  }
  if (rc == TM_OK && skipped.len && !atomic_exchange(fs->warned, true)) {
    tm_log(TM_LOG_WARN, fs->base.name,
           "%s: columns left out (unsupported_type_action: warn): %.*s", key, (int)skipped.len,
           skipped.ptr);
  }
  tm_buf_dispose(&skipped);
  if (rc < 0) tm_schema_dispose(out);
  return rc;
}

/* Reads the data schema of one file. */
static int file_schema(fileset *fs, const file_entry *f, tm_schema *out, tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(open_input(fs, f, &in, err));
  int rc;
  if (f->format == FMT_PARQUET) {
    tm_parquet_file *pf = NULL;
    rc = tm_parquet_open(&pf, in, NULL, err); /* takes in */
    in = NULL;
    if (rc == TM_OK) rc = parquet_schema(fs, pf, f->key, out, err);
    tm_parquet_close(pf);
  } else {
    tm_text_options o;
    const char *keep[1];
    text_options(fs, f, &o, keep);
    rc = f->format == FMT_CSV ? tm_csv_infer_schema(out, in, &o, err)
                              : tm_jsonl_infer_schema(out, in, &o, err);
  }
  tm_input_close(in);
  return rc;
}

static int fs_describe(tm_source *src, tm_error *err) {
  fileset *fs = (fileset *)src;
  free_files(fs);
  tm_schema_dispose(&fs->data_schema);
  tm_schema_init(&fs->data_schema);
  tm_schema_dispose(&src->schema);
  tm_schema_init(&src->schema);
  tm_free(fs->first_file);
  fs->first_file = NULL;

  list_ctx c = {fs, {0}, err};
  tm_vec_init(&c.files, sizeof(file_entry), MAX_FILES);
  int rc;
  if (fs->maybe_file) {
    tm_obj_stat st;
    TM_TRY(tm_objstore_stat(fs->store, fs->prefix, &st, err));
    if (st.exists) {
      fs->single_file = true;
    } else {
      char *folder = tm_asprintf("%s/", fs->prefix);
      if (!folder) return tm_error_nomem(err);
      tm_free(fs->prefix);
      fs->prefix = folder;
    }
    fs->maybe_file = false;
  }
  if (fs->single_file) {
    tm_obj_stat st;
    rc = tm_objstore_stat(fs->store, fs->prefix, &st, err);
    if (rc == TM_OK && !st.exists)
      rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: source file does not exist", fs->location);
    if (rc == TM_OK) {
      tm_obj_info info = {fs->prefix, st.size, st.mtime_ms};
      rc = on_object(&info, &c);
    }
  } else if (fs->local && !tm_is_dir(fs->location)) {
    rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: source folder does not exist", fs->location);
  } else {
    rc = tm_objstore_list(fs->store, fs->prefix, on_object, &c, err);
    if (rc == TM_ENOTFOUND)
      rc = tm_error_set(err, TM_EUNAVAILABLE, "%s: source folder does not exist", fs->location);
  }
  fs->files = c.files.ptr;
  fs->n_files = c.files.len;
  if (rc < 0) return rc;
  if (fs->n_files == 0)
    return tm_error_set(err, TM_ENOTFOUND, "%s: no data files (.parquet, .csv, .tsv, .jsonl) found",
                        fs->location);
  TM_TRY(parse_partitions(fs, err));
  fs->first_file = tm_strdup(fs->files[0].key);
  if (!fs->first_file) return tm_error_nomem(err);
  rc = file_schema(fs, &fs->files[0], &fs->data_schema, err);
  if (rc < 0) return rc;
  /* The full schema: data columns, partition columns, last_modified. */
  TM_TRY(tm_schema_copy(&src->schema, &fs->data_schema, err));
  for (size_t k = 0; k < fs->n_parts; k++) {
    if (tm_schema_find(&src->schema, fs->part_names[k]) >= 0) continue; /* the data wins */
    TM_TRY(tm_schema_add(&src->schema, fs->part_names[k], fs->part_types[k], true, -1, err));
  }
  bool wants_mtime = (fs->time_column && !strcmp(fs->time_column, TM_SOURCE_LAST_MODIFIED)) ||
                     (fs->part_column && !strcmp(fs->part_column, TM_SOURCE_LAST_MODIFIED));
  fs->add_last_modified =
      wants_mtime && tm_schema_find(&src->schema, TM_SOURCE_LAST_MODIFIED) < 0;
  if (fs->add_last_modified)
    TM_TRY(tm_schema_add(&src->schema, TM_SOURCE_LAST_MODIFIED,
                         tm_type_timestamp(TM_UNIT_MILLI, true), false, -1, err));
  return TM_OK;
}

/* ---- scanning ------------------------------------------------------------- */

typedef struct fs_scan {
  tm_scan base;
  fileset *fs;
  tm_scan_request req;
  const char **columns;      /* owned copy of the projection pointers (strings are the caller's) */
  tm_predicate data_pred;    /* terms on data columns: prune row groups, filter rows */
  size_t next_file;          /* the next file to consider */
  file_entry *cur;           /* the file being read */
  tm_parquet_file *pq;
  tm_parquet_scan *pqs;
  tm_csv_reader *csv;
  tm_jsonl_reader *jsonl;
  tm_input *in;
  tm_schema file_schema;     /* the schema asked of CSV/JSON readers */
  tm_schema want;            /* data_schema with the columns the scan does not need nullable:
                                a Parquet file leaves them out and conform makes them NULL */
} fs_scan;

static void close_file(fs_scan *s) {
  if (s->pqs) {
    tm_parquet_scan_stats st;
    tm_parquet_scan_get_stats(s->pqs, &st);
    s->base.stats.row_groups_read += (int64_t)st.row_groups_read;
    s->base.stats.row_groups_skipped += (int64_t)st.row_groups_skipped;
    s->base.stats.bytes_read += st.bytes_read;
  }
  tm_parquet_scan_free(s->pqs);
  tm_parquet_close(s->pq);
  tm_csv_reader_free(s->csv);
  tm_jsonl_reader_free(s->jsonl);
  if (s->in) {
    s->base.stats.bytes_read += s->in->bytes_read;
    tm_input_close(s->in);
  }
  s->pqs = NULL;
  s->pq = NULL;
  s->csv = NULL;
  s->jsonl = NULL;
  s->in = NULL;
  s->cur = NULL;
}

/* The partition or last_modified value of file f for column name, or NULL. */
static bool file_constant(const fs_scan *s, const file_entry *f, const char *name, tm_value *out) {
  const fileset *fs = s->fs;
  if (fs->add_last_modified && strcmp(name, TM_SOURCE_LAST_MODIFIED) == 0) {
    memset(out, 0, sizeof *out);
    out->type = TM_TYPE_TIMESTAMP;
    out->v.i = f->mtime_ms;
    return true;
  }
  if (tm_schema_find(&fs->data_schema, name) >= 0) return false;
  for (size_t k = 0; k < fs->n_parts; k++)
    if (strcmp(fs->part_names[k], name) == 0) {
      *out = f->parts[k];
      return true;
    }
  return false;
}

/* Whether file f can hold matching rows: partition values, mtime, the A7 bound. */
static bool file_may_match(const fs_scan *s, const file_entry *f) {
  const tm_scan_request *r = &s->req;
  if (r->has_modified_bound) {
    bool newer = r->modified_inclusive ? f->mtime_ms >= r->modified_after_ms
                                       : f->mtime_ms > r->modified_after_ms;
    if (!newer) return false;
  }
  const tm_predicate *p = r->predicate;
  for (size_t i = 0; p && i < p->n_terms; i++) {
    tm_value v;
    if (!file_constant(s, f, p->terms[i].column, &v)) continue;
    tm_col_stats st;
    memset(&st, 0, sizeof st);
    st.row_count = 1;
    st.null_count = v.is_null ? 1 : 0;
    if (!v.is_null) {
      st.has_min = st.has_max = true;
      st.min = st.max = v;
    }
    if (p->terms[i].type.id != v.type) continue; /* differently typed term: cannot prune */
    if (!tm_pred_term_may_match(&p->terms[i], &st)) return false;
  }
  return true;
}

/* Whether the scan reads column name: projected, or filtered on. */
static bool scan_needs(const fs_scan *s, const char *name) {
  const tm_scan_request *r = &s->req;
  if (!r->columns || r->n_columns == 0) return true;
  for (size_t i = 0; i < r->n_columns; i++)
    if (strcmp(r->columns[i], name) == 0) return true;
  for (size_t i = 0; r->predicate && i < r->predicate->n_terms; i++)
    if (strcmp(r->predicate->terms[i].column, name) == 0) return true;
  return false;
}

static int open_file(fs_scan *s, file_entry *f, tm_error *err) {
  fileset *fs = s->fs;
  s->cur = f;
  TM_TRY(open_input(fs, f, &s->in, err));
  if (f->format == FMT_PARQUET) {
    tm_input *in = s->in;
    s->in = NULL;
    TM_TRY(tm_parquet_open(&s->pq, in, NULL, err));
    /* Project the dataset's data columns the file has and the scan needs
     * (conform adds the rest as NULLs, which the projection then drops). */
    size_t n = fs->data_schema.n_cols, k = 0;
    size_t *idx = tm_calloc(n ? n : 1, sizeof *idx);
    if (!idx) return tm_error_nomem(err);
    for (size_t i = 0; i < n; i++) {
      const char *name = fs->data_schema.cols[i].name;
      if (!scan_needs(s, name)) continue;
      int j = tm_parquet_find_field(s->pq, name);
      if (j >= 0) idx[k++] = (size_t)j;
    }
    tm_parquet_scan_options o = TM_PARQUET_SCAN_OPTIONS_INIT;
    o.columns = idx;
    o.n_columns = k;
    o.predicate = &s->data_pred;
    o.batch_rows = s->req.batch_rows;
    o.nested_as_json = fs->unsupported_action == TM_UNSUPPORTED_STRING;
    o.nested_native = !o.nested_as_json;
    int rc = tm_parquet_scan_new(&s->pqs, s->pq, &o, err);
    tm_free(idx);
    if (rc == TM_EUNSUPPORTED) {
      char msg[sizeof err->message];
      snprintf(msg, sizeof msg, "%s", err->message);
      rc = tm_error_set(err, rc,
                        "%s (dataset %s, unsupported_type_action: error; warn or ignore leaves "
                        "the column out, or select only the other columns)",
                        msg, fs->base.name);
    }
    return rc;
  }
  tm_text_options o;
  const char *keep[1];
  text_options(fs, f, &o, keep);
  if (s->req.batch_rows > 0) o.batch_rows = s->req.batch_rows;
  if (f->format == FMT_CSV) return tm_csv_reader_open(&s->csv, s->in, &fs->data_schema, &o, err);
  return tm_jsonl_reader_open(&s->jsonl, s->in, &fs->data_schema, &o, err);
}

/* Appends partition and last_modified columns to a conformed data batch. */
static int add_constants(fs_scan *s, tm_batch *data, tm_batch *out, tm_error *err) {
  const tm_schema *full = &s->fs->base.schema;
  size_t n = full->n_cols;
  struct ArrowArray *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) {
    tm_batch_release(data); /* taken either way */
    return tm_error_nomem(err);
  }
  int rc = TM_OK;
  for (size_t i = 0; i < n && rc == TM_OK; i++) {
    if (i < data->schema.n_cols) {
      rc = tm_batch_take_column(data, i, &cols[i], err);
    } else {
      tm_value v;
      if (!file_constant(s, s->cur, full->cols[i].name, &v))
        rc = tm_error_set(err, TM_ERROR, "no value for column '%s'", full->cols[i].name);
      else rc = tm_array_make_constant(full->cols[i].type, &v, data->n_rows, &cols[i], err);
    }
  }
  if (rc == TM_OK) {
    rc = tm_batch_from_arrays(out, full, cols, data->n_rows, err);
  } else {
    for (size_t i = 0; i < n; i++)
      if (cols[i].release) cols[i].release(&cols[i]);
  }
  tm_free(cols);
  tm_batch_release(data);
  return rc;
}

static int read_file_batch(fs_scan *s, tm_batch *raw, tm_error *err) {
  if (s->pqs) return tm_parquet_scan_next(s->pqs, raw, err);
  if (s->csv) return tm_csv_reader_next(s->csv, raw, err);
  return tm_jsonl_reader_next(s->jsonl, raw, err);
}

static int fs_scan_next(tm_scan *base, tm_batch *out, tm_error *err) {
  fs_scan *s = (fs_scan *)base;
  fileset *fs = s->fs;
  tm_batch_init(out);
  for (;;) {
    if (!s->cur) {
      while (s->next_file < fs->n_files && !file_may_match(s, &fs->files[s->next_file])) {
        s->next_file++;
        base->stats.files_skipped++;
      }
      if (s->next_file >= fs->n_files) return TM_ITEROVER;
      file_entry *f = &fs->files[s->next_file++];
      base->stats.files_read++;
      int rc = open_file(s, f, err);
      if (rc < 0) {
        close_file(s);
        return rc;
      }
    }
    tm_batch raw, data, full;
    tm_batch_init(&raw);
    int rc = read_file_batch(s, &raw, err);
    if (rc == TM_ITEROVER) {
      close_file(s);
      continue;
    }
    if (rc < 0) {
      close_file(s);
      return rc;
    }
    base->stats.rows_read += raw.n_rows;
    char *fname = s->cur->key;
    rc = tm_source__conform(&s->want, &raw, &data, fname, err);
    if (rc == TM_EINVALID) { /* name the file the schema came from, too */
      char msg[sizeof err->message];
      snprintf(msg, sizeof msg, "%s", err->message);
      rc = tm_error_set(err, TM_EINVALID, "%s (the schema is the first file's: %s)", msg,
                        fs->first_file);
    }
    if (rc == TM_OK) rc = add_constants(s, &data, &full, err);
    if (rc == TM_OK)
      rc = tm_source__finish_batch(s->req.predicate, s->req.columns, s->req.n_columns, &full, out,
                                   err);
    if (rc < 0) {
      close_file(s);
      return rc;
    }
    if (out->n_rows == 0) {
      tm_batch_release(out);
      continue;
    }
    base->stats.rows_returned += out->n_rows;
    return TM_OK;
  }
}

static void fs_scan_free(tm_scan *base) {
  fs_scan *s = (fs_scan *)base;
  close_file(s);
  tm_predicate_dispose(&s->data_pred);
  tm_schema_dispose(&s->file_schema);
  tm_schema_dispose(&s->want);
  tm_free(s->columns);
  tm_free(s);
}

static const tm_scan_vtable k_scan_vt = {fs_scan_next, fs_scan_free};

static int fs_scan_open(tm_source *src, const tm_scan_request *req, tm_scan **out, tm_error *err) {
  fileset *fs = (fileset *)src;
  if (req->mode != TM_SCAN_CURRENT)
    return tm_error_set(err, TM_EINVALID, "%s: a file source has no snapshots", src->name);
  fs_scan *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(err);
  s->base.vt = &k_scan_vt;
  s->fs = fs;
  s->req = *req;
  tm_predicate_init(&s->data_pred);
  tm_schema_init(&s->file_schema);
  tm_schema_init(&s->want);
  int rc = tm_schema_copy(&s->want, &fs->data_schema, err);
  for (size_t i = 0; rc == TM_OK && i < s->want.n_cols; i++)
    if (!scan_needs(s, s->want.cols[i].name)) s->want.cols[i].nullable = true;
  /* Terms on data columns prune row groups inside files. */
  for (size_t i = 0; req->predicate && i < req->predicate->n_terms && rc == TM_OK; i++) {
    const tm_pred_term *t = &req->predicate->terms[i];
    if (tm_schema_find(&fs->data_schema, t->column) >= 0)
      rc = tm_predicate_add_term(&s->data_pred, t, err);
  }
  for (size_t i = 0; i < req->n_columns && rc == TM_OK; i++)
    if (tm_schema_find(&src->schema, req->columns[i]) < 0)
      rc = tm_error_set(err, TM_ENOTFOUND, "%s: no column '%s'", src->name, req->columns[i]);
  if (rc < 0) {
    fs_scan_free(&s->base);
    return rc;
  }
  s->base.stats.files_total = (int64_t)fs->n_files;
  *out = &s->base;
  return TM_OK;
}

/* ---- opening ---------------------------------------------------------------- */

static void fs_free(tm_source *src) {
  fileset *fs = (fileset *)src;
  free_files(fs);
  tm_schema_dispose(&fs->data_schema);
  tm_objstore_free(fs->store);
  tm_free(fs->prefix);
  tm_free(fs->location);
  tm_free(fs->time_column);
  tm_free(fs->part_column);
  tm_free(fs->first_file);
  tm_source__dispose(src);
  tm_free(fs);
}

static const tm_source_vtable k_fileset_vt = {TM_SOURCE_VTABLE_VERSION, fs_describe, NULL,
                                              fs_scan_open, fs_free};

/* A local path: a folder becomes the store root; a file, its folder's root plus a key. */
static int open_local(fileset *fs, const char *path, const char *base_dir, tm_error *err) {
  char *abs = NULL;
  if (path[0] == '/') abs = tm_strdup(path);
  else if (base_dir) abs = tm_path_join(base_dir, path);
  else {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return tm_error_set(err, TM_EIO, "cannot read the current folder");
    abs = tm_path_join(cwd, path);
  }
  if (!abs) return tm_error_nomem(err);
  size_t len = strlen(abs);
  while (len > 1 && abs[len - 1] == '/') abs[--len] = '\0';
  fs->location = abs;
  fs->local = true;
  struct stat st;
  bool is_file = stat(abs, &st) == 0 && S_ISREG(st.st_mode);
  if (is_file) {
    char *dir = tm_path_dirname(abs);
    const char *base = strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs;
    fs->prefix = tm_strdup(base);
    char *url = dir ? tm_asprintf("file:%s/", dir) : NULL;
    char *ignored = NULL;
    int rc = url && fs->prefix ? tm_objstore_open_url(&fs->store, &ignored, url, NULL, err) : tm_error_nomem(err);
    tm_free(ignored);
    tm_free(url);
    tm_free(dir);
    fs->single_file = true;
    return rc;
  }
  fs->prefix = tm_strdup("");
  if (!fs->prefix) return tm_error_nomem(err);
  /* A folder that does not exist yet is a source that is unavailable (D3), not a config error. */
  char *url = tm_asprintf("file:%s/", abs);
  char *ignored = NULL;
  int rc = url ? tm_objstore_open_url(&fs->store, &ignored, url, NULL, err) : tm_error_nomem(err);
  tm_free(ignored);
  tm_free(url);
  return rc;
}

/*
 * An object-store URL (s3://bucket/prefix): a prefix with a data-file
 * extension may be one object (decided at describe); otherwise it is a
 * folder, listed as "prefix/".
 */
static int open_remote(fileset *fs, const char *url, const tm_kv *params, tm_error *err) {
  char *prefix = NULL;
  TM_TRY(tm_objstore_open_url(&fs->store, &prefix, url, params, err));
  fs->location = tm_strdup(url);
  if (!fs->location) {
    tm_free(prefix);
    return tm_error_nomem(err);
  }
  size_t len = strlen(prefix);
  /* A trailing '/' is always a folder, also when file_format names a format. */
  bool tsv;
  tm_compression comp;
  fs->maybe_file = len > 0 && prefix[len - 1] != '/' && format_of(fs, prefix, &tsv, &comp) != FMT_UNKNOWN;
  if (len > 0 && prefix[len - 1] != '/' && !fs->maybe_file) {
    char *folder = tm_asprintf("%s/", prefix);
    tm_free(prefix);
    if (!folder) return tm_error_nomem(err);
    prefix = folder;
  }
  fs->prefix = prefix;
  return TM_OK;
}

int tm_source__open_fileset(tm_source **out, const tm_source_options *opts, tm_error *err) {
  fileset *fs = tm_calloc(1, sizeof *fs);
  if (!fs) return tm_error_nomem(err);
  int rc = tm_source__init(&fs->base, &k_fileset_vt, opts, err);
  if (rc < 0) {
    tm_free(fs);
    return rc;
  }
  tm_schema_init(&fs->data_schema);
  fs->base.has_file_times = true;
  rc = tm_source__file_params_parse(&fs->p, opts->name, opts->params, err);
  if (rc == TM_OK && opts->time_column && !(fs->time_column = tm_strdup(opts->time_column))) rc = tm_error_nomem(err);
  if (rc == TM_OK && opts->time_partition_column && !(fs->part_column = tm_strdup(opts->time_partition_column))) rc = tm_error_nomem(err);
  fs->time_text = opts->time_column_is_text;
  fs->unsupported_action = opts->unsupported_action;
  fs->warned = opts->warned_unsupported ? opts->warned_unsupported : &fs->own_warned;
  if (rc == TM_OK) {
    const char *from = opts->from;
    if (tm_str_has_prefix(from, "file://")) rc = open_local(fs, from + 7, opts->base_dir, err);
    else if (tm_str_has_prefix(from, "file:")) rc = open_local(fs, from + 5, opts->base_dir, err);
    else rc = open_remote(fs, from, opts->params, err);
  }
  if (rc < 0) {
    fs_free(&fs->base);
    return rc;
  }
  *out = &fs->base;
  return TM_OK;
}
