/*
 * file.c - opening a Parquet file: magic, footer, schema; metadata
 * accessors (format layer, parquet). See parquet.h.
 *
 * The footer is found with one speculative read of the file's last 64 KiB
 * (which holds the whole footer of most files) and, when the footer is
 * larger, one more read of exactly its bytes. The leading magic is checked
 * when the speculative read covers it (small files); larger files are
 * judged by the trailing magic and the footer, as other readers do.
 */
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

#define TAIL_READ ((size_t)64 << 10)

/* Names the file in err's message unless the message already does (input
 * errors name their input). */
static void name_file(tm_parquet_file *f, tm_error *err) {
  if (err && f->name && strncmp(err->message, f->name, strlen(f->name)) != 0)
    tm_error_prefix(err, "%s", f->name);
}

void tm_parquet_close(tm_parquet_file *f) {
  if (!f) return;
  tm_parquet__file_meta_dispose(&f->meta);
  for (size_t i = 0; f->leaves && i < f->n_leaves; i++) tm_free(f->leaves[i].path);
  tm_free(f->leaves);
  for (size_t i = 0; f->fields && i < f->n_fields; i++) {
    tm_free(f->fields[i].name);
    tm_free((void *)f->fields[i].unsupported);
  }
  tm_free(f->fields);
  tm_free(f->footer);
  tm_free(f->name);
  tm_input_close(f->in);
  tm_free(f);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* parquet-mr before 1.2.9 left the dictionary page header out of the column
 * chunk sizes (PARQUET-816); readers pad the chunk range to compensate. */
static bool old_parquet_mr(tm_strview created_by) {
  const char *pfx = "parquet-mr version ";
  size_t n = strlen(pfx);
  if (created_by.len <= n || memcmp(created_by.ptr, pfx, n) != 0) return false;
  int parts[3] = {0, 0, 0};
  size_t i = n;
  for (int k = 0; k < 3; k++) {
    if (i >= created_by.len || created_by.ptr[i] < '0' || created_by.ptr[i] > '9') break;
    while (i < created_by.len && created_by.ptr[i] >= '0' && created_by.ptr[i] <= '9') {
      if (parts[k] < 100000) parts[k] = parts[k] * 10 + (created_by.ptr[i] - '0');
      i++;
    }
    if (i < created_by.len && created_by.ptr[i] == '.') i++;
    else break;
  }
  if (parts[0] != 1) return parts[0] < 1;
  if (parts[1] != 2) return parts[1] < 2;
  return parts[2] < 9;
}

int tm_parquet_open(tm_parquet_file **out, tm_input *in, const tm_parquet_open_options *opts,
                    tm_error *err) {
  int rc = TM_OK;
  uint8_t *tail = NULL;
  tm_parquet_file *f = tm_calloc(1, sizeof *f);
  if (!f) {
    tm_input_close(in);
    return tm_error_nomem(err);
  }
  f->in = in;
  f->name = tm_strdup(tm_input_name(in) ? tm_input_name(in) : "parquet");
  if (!f->name) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  tm_parquet_open_options def = TM_PARQUET_OPEN_OPTIONS_INIT;
  f->opts = opts ? *opts : def;
  f->int96_unit = f->opts.int96_unit == TM_UNIT_MICRO || f->opts.int96_unit == TM_UNIT_MILLI
                      ? f->opts.int96_unit
                      : TM_UNIT_NANO;
  size_t max_footer = f->opts.max_footer ? f->opts.max_footer : TM_PQ_MAX_FOOTER;

  TM_CHECK(tm_input_size(in, &f->size, err));
  if (f->size < 12) {
    rc = tm_error_set(err, TM_ECORRUPT, "file of %llu bytes is too small to be Parquet",
                      (unsigned long long)f->size);
    goto fail;
  }
  size_t tail_len = f->size < TAIL_READ ? (size_t)f->size : TAIL_READ;
  tail = tm_malloc(tail_len);
  if (!tail) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  TM_CHECK(tm_input_read_exact(in, f->size - tail_len, tail, tail_len, err));
  const uint8_t *end = tail + tail_len;
  if (memcmp(end - 4, "PARE", 4) == 0) {
    rc = tm_error_set(err, TM_EUNSUPPORTED, "encrypted Parquet file (encrypted footer)");
    goto fail;
  }
  if (memcmp(end - 4, "PAR1", 4) != 0) {
    rc = tm_error_set(err, TM_ECORRUPT, "not a Parquet file (no PAR1 magic at the end)");
    goto fail;
  }
  if (tail_len == f->size && memcmp(tail, "PAR1", 4) != 0) {
    rc = tm_error_set(err, TM_ECORRUPT, "not a Parquet file (no PAR1 magic at the start)");
    goto fail;
  }
  uint32_t footer_len = le32(end - 8);
  if ((uint64_t)footer_len + 12 > f->size) {
    rc = tm_error_set(err, TM_ECORRUPT, "footer length %u exceeds the file size %llu",
                      footer_len, (unsigned long long)f->size);
    goto fail;
  }
  if (footer_len == 0) {
    rc = tm_error_set(err, TM_ECORRUPT, "footer length is 0");
    goto fail;
  }
  if (footer_len > max_footer) {
    rc = tm_error_set(err, TM_ETOOLARGE, "footer of %u bytes exceeds the limit of %zu",
                      footer_len, max_footer);
    goto fail;
  }
  f->footer = tm_malloc(footer_len);
  if (!f->footer) {
    rc = tm_error_nomem(err);
    goto fail;
  }
  f->footer_len = footer_len;
  if ((size_t)footer_len + 8 <= tail_len) {
    memcpy(f->footer, end - 8 - footer_len, footer_len);
  } else {
    TM_CHECK(tm_input_read_exact(in, f->size - 8 - footer_len, f->footer, footer_len, err));
  }
  tm_free(tail);
  tail = NULL;

  TM_CHECK(tm_parquet__parse_footer(&f->meta, f->footer, f->footer_len, err));
  if (f->meta.encrypted) {
    rc = tm_error_set(err, TM_EUNSUPPORTED, "encrypted Parquet file (plaintext footer)");
    goto fail;
  }
  TM_CHECK(tm_parquet__build_schema(f, err));
  for (uint32_t g = 0; g < f->meta.n_row_groups; g++) {
    const tm_pq_row_group *rg = &f->meta.row_groups[g];
    if (rg->n_columns != f->n_leaves) {
      rc = tm_error_set(err, TM_ECORRUPT, "row group %u has %u column chunks, the schema %zu",
                        g, rg->n_columns, f->n_leaves);
      goto fail;
    }
    for (uint32_t c = 0; c < rg->n_columns; c++)
      if (rg->columns[c].encrypted) {
        rc = tm_error_set(err, TM_EUNSUPPORTED, "encrypted Parquet column '%s'",
                          f->leaves[c].path);
        goto fail;
      }
  }
  f->pad_chunks = f->meta.has_created_by && old_parquet_mr(f->meta.created_by);
  /* Pages tidemark wrote carry CRCs: checked unless skipped; other writers' when asked. */
  static const char k_ours[] = "tidemark ";
  bool ours = f->meta.has_created_by && f->meta.created_by.len >= sizeof k_ours - 1 &&
              memcmp(f->meta.created_by.ptr, k_ours, sizeof k_ours - 1) == 0;
  f->verify_crc = !f->opts.skip_crc && (f->opts.verify_crc || ours);
  *out = f;
  return TM_OK;
done:
fail:
  name_file(f, err);
  tm_free(tail);
  tm_parquet_close(f);
  return rc;
}

int tm_parquet_open_path(tm_parquet_file **out, const char *path,
                         const tm_parquet_open_options *opts, tm_error *err) {
  tm_input *in;
  int rc = tm_input_open_file(&in, path, err);
  if (rc < 0) return rc;
  return tm_parquet_open(out, in, opts, err);
}

const char *tm_parquet_name(const tm_parquet_file *f) { return f->name; }
tm_input *tm_parquet_input(tm_parquet_file *f) { return f->in; }
int64_t tm_parquet_num_rows(const tm_parquet_file *f) { return f->meta.num_rows; }
size_t tm_parquet_num_row_groups(const tm_parquet_file *f) { return f->meta.n_row_groups; }

int64_t tm_parquet_row_group_rows(const tm_parquet_file *f, size_t rg) {
  return rg < f->meta.n_row_groups ? f->meta.row_groups[rg].num_rows : 0;
}

tm_strview tm_parquet_created_by(const tm_parquet_file *f) {
  return f->meta.has_created_by ? f->meta.created_by : tm_sv(NULL, 0);
}

size_t tm_parquet_kv_count(const tm_parquet_file *f) { return f->meta.n_kv; }

void tm_parquet_kv_at(const tm_parquet_file *f, size_t i, tm_strview *key, tm_strview *value,
                      bool *has_value) {
  const tm_pq_kv *kv = &f->meta.kv[i];
  *key = kv->key;
  *value = kv->value;
  *has_value = kv->has_value;
}

size_t tm_parquet_num_fields(const tm_parquet_file *f) { return f->n_fields; }

const tm_parquet_field *tm_parquet_field_at(const tm_parquet_file *f, size_t i) {
  return &f->fields[i];
}

int tm_parquet_find_field(const tm_parquet_file *f, const char *name) {
  for (size_t i = 0; i < f->n_fields; i++)
    if (strcmp(f->fields[i].name, name) == 0) return (int)i;
  return -1;
}

int tm_parquet_find_field_id(const tm_parquet_file *f, int32_t field_id) {
  if (field_id < 0) return -1;
  for (size_t i = 0; i < f->n_fields; i++)
    if (f->fields[i].field_id == field_id) return (int)i;
  return -1;
}

int tm_parquet_schema(const tm_parquet_file *f, tm_schema *out, tm_error *err) {
  for (size_t i = 0; i < f->n_fields; i++) {
    const tm_parquet_field *fd = &f->fields[i];
    if (fd->unsupported) {
      tm_schema_dispose(out);
      return tm_error_set(err, TM_EUNSUPPORTED, "%s: unsupported %s %s", f->name,
                          fd->nested ? "nested column" : "column", fd->name);
    }
    int rc = tm_schema_add(out, fd->name, fd->type, fd->nullable, fd->field_id, err);
    if (rc < 0) {
      tm_schema_dispose(out);
      return rc;
    }
  }
  return TM_OK;
}

size_t tm_parquet_num_leaves(const tm_parquet_file *f) { return f->n_leaves; }

int tm_parquet_chunk_info_at(const tm_parquet_file *f, size_t rg, size_t leaf,
                             tm_parquet_chunk_info *out, tm_error *err) {
  if (rg >= f->meta.n_row_groups || leaf >= f->n_leaves)
    return tm_error_set(err, TM_EINVALID, "column chunk out of range");
  const tm_pq_column_chunk *cc = &f->meta.row_groups[rg].columns[leaf];
  memset(out, 0, sizeof *out);
  out->path = f->leaves[leaf].path;
  out->field = f->leaves[leaf].field;
  if (!cc->has_meta)
    return tm_error_set(err, TM_ECORRUPT, "%s: column chunk '%s' of row group %zu has no metadata",
                        f->name, out->path, rg);
  const tm_pq_column_meta *m = &cc->meta;
  out->physical_type = m->type;
  out->codec = m->codec;
  for (uint32_t i = 0; i < m->n_encodings; i++)
    if (m->encodings[i] >= 0 && m->encodings[i] < 32) out->encodings |= 1u << m->encodings[i];
  out->num_values = m->num_values;
  out->compressed_size = m->total_compressed_size;
  out->uncompressed_size = m->total_uncompressed_size;
  out->data_page_offset = m->data_page_offset;
  out->dictionary_page_offset = m->dictionary_page_offset;
  if (m->has_stats) {
    out->has_null_count = m->stats.null_count >= 0;
    out->null_count = m->stats.null_count;
    out->has_distinct_count = m->stats.distinct_count >= 0;
    out->distinct_count = m->stats.distinct_count;
  }
  return TM_OK;
}

const char *tm_parquet_physical_name(int32_t t) {
  static const char *names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return t >= 0 && t < 8 ? names[t] : "?";
}

const char *tm_parquet_codec_name(int32_t codec) {
  static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? names[codec] : "?";
}

const char *tm_parquet_encoding_name(int32_t enc) {
  static const char *names[] = {"PLAIN",
                                "GROUP_VAR_INT",
                                "PLAIN_DICTIONARY",
                                "RLE",
                                "BIT_PACKED",
                                "DELTA_BINARY_PACKED",
                                "DELTA_LENGTH_BYTE_ARRAY",
                                "DELTA_BYTE_ARRAY",
                                "RLE_DICTIONARY",
                                "BYTE_STREAM_SPLIT"};
  return enc >= 0 && enc < 10 ? names[enc] : "?";
}
