/*
 * render.c - value text forms and table/CSV/JSON/NDJSON writers, and
 * Spice's application/vnd.spiceai.sql.v1+json (format layer). See render.h.
 */
#include "format/arrow/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/str.h"
#include "util/time.h"

#define TABLE_MAX_BYTES ((size_t)256 << 20)

size_t tm_double_format(double v, char *buf, size_t cap) {
  int n;
  if (isnan(v)) n = snprintf(buf, cap, "NaN");
  else if (isinf(v)) n = snprintf(buf, cap, v > 0 ? "inf" : "-inf");
  else {
    n = 0;
    for (int prec = 15; prec <= 17; prec++) {
      n = snprintf(buf, cap, "%.*g", prec, v);
      double back;
      if (tm_parse_double(buf, (size_t)n, &back) == TM_OK && back == v) break;
    }
  }
  if (n < 0 || cap == 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t tm_decimal_format(const uint8_t le16[16], int32_t scale, char *buf, size_t cap) {
  unsigned __int128 u;
  __int128 s;
  memcpy(&s, le16, 16);
  bool neg = s < 0;
  u = neg ? (unsigned __int128)0 - (unsigned __int128)s : (unsigned __int128)s;
  char digits[48];
  int nd = 0;
  do {
    digits[nd++] = (char)('0' + (int)(u % 10));
    u /= 10;
  } while (u && nd < 45);
  while (nd <= scale && nd < 45) digits[nd++] = '0';
  size_t n = 0;
  if (cap == 0) return 0;
  if (neg && n + 1 < cap) buf[n++] = '-';
  for (int i = nd - 1; i >= 0 && n + 1 < cap; i--) {
    buf[n++] = digits[i];
    if (i == scale && scale > 0 && n + 1 < cap) buf[n++] = '.';
  }
  buf[n] = '\0';
  return n;
}

static size_t format_time_of_day(char *buf, size_t cap, int64_t v, tm_time_unit unit) {
  int64_t per = tm_unit_per_second(unit);
  int64_t sec = v / per, frac = v % per;
  if (frac < 0) {
    sec -= 1;
    frac += per;
  }
  int digits = unit == TM_UNIT_NANO ? 9 : unit == TM_UNIT_MICRO ? 6 : unit == TM_UNIT_MILLI ? 3 : 0;
  int n = snprintf(buf, cap, "%02d:%02d:%02d", (int)(sec / 3600), (int)(sec / 60 % 60),
                   (int)(sec % 60));
  if (n > 0 && frac && (size_t)n < cap) {
    /* Trim trailing zeros of the fraction. */
    while (digits > 0 && frac % 10 == 0) {
      frac /= 10;
      digits--;
    }
    n += snprintf(buf + n, cap - (size_t)n, ".%0*lld", digits, (long long)frac);
  }
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static const char k_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

size_t tm_u64_digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10000) {
    v /= 10000;
    n += 4;
  }
  return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

char *tm_u64_format_back(char *end, uint64_t v) {
  char *p = end;
  while (v >= 100) {
    unsigned q = (unsigned)(v % 100);
    v /= 100;
    p -= 2;
    memcpy(p, k_pairs + 2 * q, 2);
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, k_pairs + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  return p;
}

int tm_value_render(tm_buf *out, const tm_type *type, const tm_value *v, tm_error *err) {
  char tmp[96];
  size_t n;
  switch (type->id) {
    case TM_TYPE_BOOL: return tm_buf_puts(out, v->v.b ? "true" : "false", err);
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: {
      bool neg = v->v.i < 0;
      uint64_t m = neg ? 0 - (uint64_t)v->v.i : (uint64_t)v->v.i; /* INT64_MIN too */
      char *p = tm_u64_format_back(tmp + sizeof tmp, m);
      if (neg) *--p = '-';
      return tm_buf_append(out, p, (size_t)(tmp + sizeof tmp - p), err);
    }
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: {
      char *p = tm_u64_format_back(tmp + sizeof tmp, v->v.u);
      return tm_buf_append(out, p, (size_t)(tmp + sizeof tmp - p), err);
    }
    case TM_TYPE_FLOAT32: {
      float f = (float)v->v.f;
      /* Shortest text that reads back as the same float. */
      int k = 0;
      for (int prec = 6; prec <= 9; prec++) {
        k = snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
        if (strtof(tmp, NULL) == f) break;
      }
      if (isnan(f)) return tm_buf_puts(out, "NaN", err);
      if (isinf(f)) return tm_buf_puts(out, f > 0 ? "inf" : "-inf", err);
      return tm_buf_append(out, tmp, (size_t)k, err);
    }
    case TM_TYPE_FLOAT64:
      n = tm_double_format(v->v.f, tmp, sizeof tmp);
      return tm_buf_append(out, tmp, n, err);
    case TM_TYPE_DECIMAL128:
      n = tm_decimal_format(v->v.dec, type->scale, tmp, sizeof tmp);
      return tm_buf_append(out, tmp, n, err);
    case TM_TYPE_DATE32:
      n = tm_date_print(tmp, sizeof tmp, v->v.i);
      return tm_buf_append(out, tmp, n, err);
    case TM_TYPE_TIME64:
      n = format_time_of_day(tmp, sizeof tmp, v->v.i, type->unit);
      return tm_buf_append(out, tmp, n, err);
    case TM_TYPE_TIMESTAMP: {
      /* Floor division without the overflow of sec * per near INT64_MIN. */
      tm_instant at = tm_instant_from_units(v->v.i, tm_unit_per_second(type->unit));
      n = tm_time_print(tmp, sizeof tmp, at.sec, at.nsec, -1, type->utc);
      return tm_buf_append(out, tmp, n, err);
    }
    case TM_TYPE_UTF8: return tm_buf_append(out, v->v.s.ptr, v->v.s.len, err);
    case TM_TYPE_FIXED_BINARY:
      if (type->uuid && v->v.s.len == 16) {
        const uint8_t *b = (const uint8_t *)v->v.s.ptr;
        for (int i = 0; i < 16; i++) {
          if (i == 4 || i == 6 || i == 8 || i == 10) TM_TRY(tm_buf_putc(out, '-', err));
          TM_TRY(tm_buf_printf(out, err, "%02x", b[i]));
        }
        return TM_OK;
      }
      /* fall through */
    case TM_TYPE_BINARY:
      for (size_t i = 0; i < v->v.s.len; i++) {
        unsigned char c = (unsigned char)v->v.s.ptr[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') TM_TRY(tm_buf_putc(out, (char)c, err));
        else TM_TRY(tm_buf_printf(out, err, "\\x%02X", c));
      }
      return TM_OK;
    default: return tm_error_set(err, TM_EUNSUPPORTED, "cannot render this type");
  }
}

int tm_out_format_parse(const char *s, tm_out_format *out) {
  static const struct { const char *name; tm_out_format f; } k[] = {
      {"table", TM_OUT_TABLE}, {"csv", TM_OUT_CSV}, {"json", TM_OUT_JSON}, {"jsonl", TM_OUT_JSONL}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcasecmp(s, k[i].name) == 0) {
      *out = k[i].f;
      return TM_OK;
    }
  return TM_EINVALID;
}

int tm_out_file_sink(const char *data, size_t len, void *payload) {
  return fwrite(data, 1, len, (FILE *)payload) == len ? TM_OK : TM_EIO;
}

static int emit(tm_out *o, const char *data, size_t len, tm_error *err) {
  if (len == 0) return TM_OK;
  int rc = o->sink(data, len, o->payload);
  if (rc < 0) return tm_error_set(err, rc, "output write failed");
  return TM_OK;
}

static int put_csv_field(tm_buf *b, const char *s, size_t len, tm_error *err) {
  bool quote = false;
  for (size_t i = 0; i < len; i++)
    if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') quote = true;
  if (len > 0 && (s[0] == ' ' || s[len - 1] == ' ')) quote = true;
  if (!quote) return tm_buf_append(b, s, len, err);
  TM_TRY(tm_buf_putc(b, '"', err));
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '"') TM_TRY(tm_buf_putc(b, '"', err));
    TM_TRY(tm_buf_putc(b, s[i], err));
  }
  return tm_buf_putc(b, '"', err);
}

/*
 * Length of the well-formed UTF-8 sequence at s (1..4 bytes, within avail),
 * or 0 when the bytes there are not one: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate or a code point past
 * U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || n > avail || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4)) return 0;
  uint32_t cp = s[0] & (0x7Fu >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/*
 * Appends s as a JSON string. JSON text is UTF-8 (RFC 8259), and SQLite text
 * need not be (CAST(x'ff' AS TEXT)): each byte that does not start a
 * well-formed sequence becomes U+FFFD, so that the document always parses.
 */
int tm_json_string(tm_buf *b, const char *s, size_t len, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '"', err));
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      size_t n = utf8_len((const unsigned char *)s + i, len - i);
      if (n == 0) {
        TM_TRY(tm_buf_puts(b, "\\ufffd", err));
      } else {
        TM_TRY(tm_buf_append(b, s + i, n, err));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"': TM_TRY(tm_buf_puts(b, "\\\"", err)); break;
      case '\\': TM_TRY(tm_buf_puts(b, "\\\\", err)); break;
      case '\n': TM_TRY(tm_buf_puts(b, "\\n", err)); break;
      case '\r': TM_TRY(tm_buf_puts(b, "\\r", err)); break;
      case '\t': TM_TRY(tm_buf_puts(b, "\\t", err)); break;
      default:
        if (c < 0x20) TM_TRY(tm_buf_printf(b, err, "\\u%04x", c));
        else TM_TRY(tm_buf_putc(b, (char)c, err));
    }
  }
  return tm_buf_putc(b, '"', err);
}

/* Display width of UTF-8 text: code points, which is right for most scripts. */
static size_t display_width(const char *s, size_t len) {
  size_t w = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
  return w;
}

int tm_out_begin(tm_out *o, tm_out_format format, const char *const *names, size_t n_cols,
                 tm_out_sink_fn sink, void *payload, tm_error *err) {
  return tm_out_begin_fields(o, format, names, NULL, n_cols, sink, payload, err);
}

int tm_out_begin_fields(tm_out *o, tm_out_format format, const char *const *names,
                        const char *const *data_types, size_t n_cols, tm_out_sink_fn sink,
                        void *payload, tm_error *err) {
  memset(o, 0, sizeof *o);
  if (format == TM_OUT_SPICE_V1 && !data_types && n_cols)
    return tm_error_set(err, TM_EINVALID, "the Spice format needs the columns' types");
  o->format = format;
  o->sink = sink;
  o->payload = payload;
  o->n_cols = n_cols;
  tm_buf_init(&o->line, TM_BUF_UNLIMITED);
  tm_buf_init(&o->table, TABLE_MAX_BYTES);
  o->names = tm_calloc(n_cols ? n_cols : 1, sizeof *o->names);
  o->widths = tm_calloc(n_cols ? n_cols : 1, sizeof *o->widths);
  o->right_align = tm_calloc(n_cols ? n_cols : 1, sizeof *o->right_align);
  if (format == TM_OUT_SPICE_V1) o->types = tm_calloc(n_cols ? n_cols : 1, sizeof *o->types);
  if (!o->names || !o->widths || !o->right_align || (format == TM_OUT_SPICE_V1 && !o->types)) {
    tm_out_dispose(o);
    return tm_error_nomem(err);
  }
  for (size_t i = 0; i < n_cols; i++) {
    o->names[i] = tm_strdup(names[i]);
    if (!o->names[i] || (o->types && !(o->types[i] = tm_strdup(data_types[i])))) {
      tm_out_dispose(o);
      return tm_error_nomem(err);
    }
    o->widths[i] = display_width(names[i], strlen(names[i]));
  }
  int rc = TM_OK;
  if (format == TM_OUT_CSV) {
    for (size_t i = 0; i < n_cols && rc == TM_OK; i++) {
      if (i) rc = tm_buf_putc(&o->line, ',', err);
      if (rc == TM_OK) rc = put_csv_field(&o->line, names[i], strlen(names[i]), err);
    }
    if (rc == TM_OK) rc = tm_buf_puts(&o->line, "\r\n", err);
    if (rc == TM_OK) rc = emit(o, o->line.ptr, o->line.len, err);
  } else if (format == TM_OUT_JSON) {
    rc = emit(o, "[", 1, err);
  }
  if (rc < 0) tm_out_dispose(o);
  return rc;
}

/*
 * Appends `"schema":{...}` of a SPICE_V1 writer to b: each column as arrow-rs
 * serializes a Field. DuckDB does not say whether a result column can hold
 * NULL, so every field is nullable.
 */
static int put_spice_schema(const tm_out *o, tm_buf *b, tm_error *err) {
  TM_TRY(tm_buf_puts(b, "\"schema\":{\"fields\":[", err));
  for (size_t i = 0; i < o->n_cols; i++) {
    TM_TRY(tm_buf_puts(b, i ? ",{\"name\":" : "{\"name\":", err));
    TM_TRY(tm_json_string(b, o->names[i], strlen(o->names[i]), err));
    TM_TRY(tm_buf_puts(b, ",\"data_type\":", err));
    TM_TRY(tm_buf_puts(b, o->types[i], err));
    TM_TRY(tm_buf_puts(b, ",\"nullable\":true,\"dict_id\":0,\"dict_is_ordered\":false,"
                          "\"metadata\":{}}", err));
  }
  return tm_buf_puts(b, "],\"metadata\":{}}", err);
}

/* Appends one row of cells to b as a JSON object. */
static int put_json_row(const tm_out *o, tm_buf *b, const char *const *texts, const size_t *lens,
                        const tm_cell_kind *kinds, tm_error *err) {
  TM_TRY(tm_buf_putc(b, '{', err));
  for (size_t i = 0; i < o->n_cols; i++) {
    if (i) TM_TRY(tm_buf_putc(b, ',', err));
    TM_TRY(tm_json_string(b, o->names[i], strlen(o->names[i]), err));
    TM_TRY(tm_buf_putc(b, ':', err));
    if (kinds[i] == TM_CELL_NULL) {
      TM_TRY(tm_buf_puts(b, "null", err));
    } else if (kinds[i] == TM_CELL_NUMBER) {
      /* JSON has no NaN or infinity: those go out as strings. */
      bool finite = !(lens[i] >= 3 && (strncmp(texts[i], "NaN", 3) == 0 ||
                                       strncmp(texts[i], "inf", 3) == 0 ||
                                       strncmp(texts[i], "-inf", 4) == 0));
      if (finite) TM_TRY(tm_buf_append(b, texts[i], lens[i], err));
      else TM_TRY(tm_json_string(b, texts[i], lens[i], err));
    } else if (kinds[i] == TM_CELL_BOOL || kinds[i] == TM_CELL_JSON) {
      TM_TRY(tm_buf_append(b, texts[i], lens[i], err));
    } else {
      TM_TRY(tm_json_string(b, texts[i], lens[i], err));
    }
  }
  return tm_buf_putc(b, '}', err);
}

/*
 * SPICE_V1: the rows held so far no longer fit TM_OUT_SPICE_HOLD: sends the
 * head (schema, the data array's start) and them, and streams from here on.
 */
static int spice_start_stream(tm_out *o, tm_error *err) {
  tm_buf *b = &o->line;
  tm_buf_clear(b);
  TM_TRY(tm_buf_putc(b, '{', err));
  TM_TRY(put_spice_schema(o, b, err));
  TM_TRY(tm_buf_puts(b, ",\"data\":[", err));
  TM_TRY(emit(o, b->ptr, b->len, err));
  TM_TRY(emit(o, o->table.ptr, o->table.len, err));
  tm_buf_dispose(&o->table);
  tm_buf_init(&o->table, TABLE_MAX_BYTES);
  o->streaming = true;
  return TM_OK;
}

int tm_out_row(tm_out *o, const char *const *texts, const size_t *lens,
               const tm_cell_kind *kinds, tm_error *err) {
  tm_buf *b = &o->line;
  tm_buf_clear(b);
  switch (o->format) {
    case TM_OUT_CSV:
      for (size_t i = 0; i < o->n_cols; i++) {
        if (i) TM_TRY(tm_buf_putc(b, ',', err));
        if (kinds[i] != TM_CELL_NULL) {
          if (kinds[i] == TM_CELL_TEXT && lens[i] == 0) TM_TRY(tm_buf_puts(b, "\"\"", err));
          else TM_TRY(put_csv_field(b, texts[i], lens[i], err));
        }
      }
      TM_TRY(tm_buf_puts(b, "\r\n", err));
      break;
    case TM_OUT_JSON:
    case TM_OUT_JSONL:
      if (o->format == TM_OUT_JSON && o->n_rows > 0) TM_TRY(tm_buf_putc(b, ',', err));
      TM_TRY(put_json_row(o, b, texts, lens, kinds, err));
      if (o->format == TM_OUT_JSONL) TM_TRY(tm_buf_putc(b, '\n', err));
      break;
    case TM_OUT_SPICE_V1:
      if (o->n_rows > 0) TM_TRY(tm_buf_putc(b, ',', err));
      TM_TRY(put_json_row(o, b, texts, lens, kinds, err));
      o->n_rows++;
      if (o->streaming) return emit(o, b->ptr, b->len, err);
      TM_TRY(tm_buf_append(&o->table, b->ptr, b->len, err));
      return o->table.len > TM_OUT_SPICE_HOLD ? spice_start_stream(o, err) : TM_OK;
    case TM_OUT_TABLE:
      for (size_t i = 0; i < o->n_cols; i++) {
        const char *t = kinds[i] == TM_CELL_NULL ? "NULL" : texts[i];
        size_t len = kinds[i] == TM_CELL_NULL ? 4 : lens[i];
        /* Cells are stored NUL-separated; control characters shown as spaces. */
        size_t start = o->table.len;
        TM_TRY(tm_buf_append(&o->table, t, len, err));
        for (size_t k = start; k < o->table.len; k++)
          if ((unsigned char)o->table.ptr[k] < 0x20) o->table.ptr[k] = ' ';
        TM_TRY(tm_buf_putc(&o->table, '\0', err));
        size_t w = display_width(t, len);
        if (w > o->widths[i]) o->widths[i] = w;
        if (kinds[i] == TM_CELL_NUMBER) o->right_align[i] = true;
      }
      o->n_rows++;
      return TM_OK;
  }
  o->n_rows++;
  return emit(o, b->ptr, b->len, err);
}

static int json_cell(tm_buf *out, const tm_colview *c, int64_t row, int depth, tm_error *err) {
  if (tm_colview_is_null(c, row)) return tm_buf_puts(out, "null", err);
  if (depth > 2 * TM_NTYPE_MAX_DEPTH)
    return tm_error_set(err, TM_ECORRUPT, "nested value deeper than %d", TM_NTYPE_MAX_DEPTH);
  switch (c->type.id) {
    case TM_TYPE_STRUCT: {
      TM_TRY(tm_buf_putc(out, '{', err));
      for (size_t k = 0; k < c->type.nested->n; k++) {
        tm_colview ch = tm_colview_child(c, k);
        if (k) TM_TRY(tm_buf_putc(out, ',', err));
        const char *name = c->type.nested->name[k];
        TM_TRY(tm_json_string(out, name, strlen(name), err));
        TM_TRY(tm_buf_putc(out, ':', err));
        TM_TRY(json_cell(out, &ch, row, depth + 1, err));
      }
      return tm_buf_putc(out, '}', err);
    }
    case TM_TYPE_LIST:
    case TM_TYPE_MAP: {
      bool map = c->type.id == TM_TYPE_MAP;
      const int32_t *off = c->values;
      tm_colview ch = tm_colview_child(c, 0);
      if (off[row] < 0 || off[row + 1] < off[row] || off[row + 1] > ch.length)
        return tm_error_set(err, TM_ECORRUPT, "list offsets out of bounds");
      TM_TRY(tm_buf_putc(out, map ? '{' : '[', err));
      tm_colview key, val;
      if (map) {
        key = tm_colview_child(&ch, 0);
        val = tm_colview_child(&ch, 1);
      }
      for (int32_t i = off[row]; i < off[row + 1]; i++) {
        if (i > off[row]) TM_TRY(tm_buf_putc(out, ',', err));
        if (!map) {
          TM_TRY(json_cell(out, &ch, i, depth + 1, err));
          continue;
        }
        size_t start = out->len;
        TM_TRY(json_cell(out, &key, i, depth + 1, err));
        if (out->ptr[start] != '"') { /* a key that is not a string: its text as one */
          size_t len = out->len - start;
          char small[64];
          char *copy = len <= sizeof small ? small : tm_malloc(len);
          if (!copy) return tm_error_nomem(err);
          memcpy(copy, out->ptr + start, len);
          out->len = start;
          int rc = tm_json_string(out, copy, len, err);
          if (copy != small) tm_free(copy);
          TM_TRY(rc);
        }
        TM_TRY(tm_buf_putc(out, ':', err));
        TM_TRY(json_cell(out, &val, i, depth + 1, err));
      }
      return tm_buf_putc(out, map ? '}' : ']', err);
    }
    default: break;
  }
  tm_value v;
  tm_colview_get(c, row, &v);
  switch (c->type.id) {
    case TM_TYPE_BOOL:
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64:
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64:
    case TM_TYPE_DECIMAL128: return tm_value_render(out, &c->type, &v, err);
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64:
      if (isfinite(v.v.f)) return tm_value_render(out, &c->type, &v, err);
      break;
    default: break;
  }
  tm_buf tmp;
  tm_buf_init(&tmp, TM_BUF_UNLIMITED);
  int rc = tm_value_render(&tmp, &c->type, &v, err);
  if (rc == TM_OK) rc = tm_json_string(out, tmp.ptr, tmp.len, err);
  tm_buf_dispose(&tmp);
  return rc;
}

int tm_colview_json(tm_buf *out, const tm_colview *c, int64_t row, tm_error *err) {
  return json_cell(out, c, row, 0, err);
}

void tm_schema_nested_as_json(tm_schema *s) {
  for (size_t i = 0; i < s->n_cols; i++)
    if (tm_type_is_nested(&s->cols[i].type)) s->cols[i].type = tm_type_of(TM_TYPE_UTF8);
}

int tm_batch_nested_as_json(const tm_batch *in, tm_batch *out, tm_error *err) {
  tm_schema s;
  tm_schema_init(&s);
  TM_TRY(tm_schema_copy(&s, &in->schema, err));
  tm_schema_nested_as_json(&s);
  tm_batch_builder bb;
  int rc = tm_batch_builder_init(&bb, &s, err);
  if (rc < 0) {
    tm_schema_dispose(&s);
    return rc;
  }
  tm_buf json;
  tm_buf_init(&json, (size_t)1 << 30);
  for (size_t c = 0; c < s.n_cols && rc == TM_OK; c++) {
    tm_colview v = tm_batch_col(in, c);
    tm_colbuilder *cb = tm_batch_builder_col(&bb, c);
    if (!tm_type_is_nested(&v.type)) {
      rc = tm_colbuilder_append_range(cb, &v, 0, in->n_rows, err);
      continue;
    }
    rc = tm_colview_check(&v, err);
    for (int64_t r = 0; r < in->n_rows && rc == TM_OK; r++) {
      if (tm_colview_is_null(&v, r)) {
        rc = tm_colbuilder_append_null(cb, err);
        continue;
      }
      tm_buf_clear(&json);
      rc = tm_colview_json(&json, &v, r, err);
      if (rc == TM_OK) rc = tm_colbuilder_append_bytes(cb, json.ptr, json.len, err);
    }
  }
  if (rc == TM_OK && s.n_cols == 0) {
    rc = tm_batch_from_arrays(out, &s, NULL, in->n_rows, err);
  } else if (rc == TM_OK) {
    rc = tm_batch_builder_finish(&bb, out, err);
  }
  tm_buf_dispose(&json);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
  return rc;
}

int tm_out_batch(tm_out *o, const tm_batch *b, tm_error *err) {
  return tm_out_batch_json(o, b, NULL, err);
}

int tm_out_batch_json(tm_out *o, const tm_batch *b, const bool *json, tm_error *err) {
  size_t n = o->n_cols;
  if (b->schema.n_cols != n) return tm_error_set(err, TM_EINVALID, "batch does not match header");
  tm_buf cells;
  tm_buf_init(&cells, TM_BUF_UNLIMITED);
  const char **texts = tm_calloc(n ? n : 1, sizeof *texts);
  size_t *lens = tm_calloc(n ? n : 1, sizeof *lens);
  size_t *starts = tm_calloc(n ? n : 1, sizeof *starts);
  tm_cell_kind *kinds = tm_calloc(n ? n : 1, sizeof *kinds);
  tm_colview *cols = tm_calloc(n ? n : 1, sizeof *cols);
  int rc = TM_OK;
  if (!texts || !lens || !starts || !kinds || !cols) rc = tm_error_nomem(err);
  for (size_t c = 0; c < n && rc == TM_OK; c++) cols[c] = tm_batch_col(b, c);
  for (int64_t r = 0; r < b->n_rows && rc == TM_OK; r++) {
    tm_buf_clear(&cells);
    for (size_t c = 0; c < n && rc == TM_OK; c++) {
      tm_value v;
      tm_colview_get(&cols[c], r, &v);
      starts[c] = cells.len;
      if (v.is_null) {
        kinds[c] = TM_CELL_NULL;
        continue;
      }
      tm_type_id id = cols[c].type.id;
      kinds[c] = id == TM_TYPE_BOOL ? TM_CELL_BOOL
                 : (tm_type_is_integer(&cols[c].type) || id == TM_TYPE_FLOAT32 ||
                    id == TM_TYPE_FLOAT64 || id == TM_TYPE_DECIMAL128)
                     ? TM_CELL_NUMBER
                 : (json && json[c] && id == TM_TYPE_UTF8) || tm_type_is_nested(&cols[c].type)
                     ? TM_CELL_JSON
                     : TM_CELL_TEXT;
      rc = tm_type_is_nested(&cols[c].type) ? tm_colview_json(&cells, &cols[c], r, err)
                                            : tm_value_render(&cells, &cols[c].type, &v, err);
      lens[c] = cells.len - starts[c];
    }
    for (size_t c = 0; c < n && rc == TM_OK; c++) {
      texts[c] = kinds[c] == TM_CELL_NULL ? NULL : tm_buf_cstr(&cells) + starts[c];
      if (kinds[c] == TM_CELL_NULL) lens[c] = 0;
    }
    if (rc == TM_OK) rc = tm_out_row(o, texts, lens, kinds, err);
  }
  tm_buf_dispose(&cells);
  tm_free(texts);
  tm_free(lens);
  tm_free(starts);
  tm_free(kinds);
  tm_free(cols);
  return rc;
}

static int pad(tm_buf *b, size_t n, tm_error *err) {
  for (size_t i = 0; i < n; i++) TM_TRY(tm_buf_putc(b, ' ', err));
  return TM_OK;
}

static int flush_table(tm_out *o, tm_error *err) {
  tm_buf *b = &o->line;
  tm_buf_clear(b);
  for (size_t i = 0; i < o->n_cols; i++) {
    if (i) TM_TRY(tm_buf_puts(b, " | ", err));
    size_t w = display_width(o->names[i], strlen(o->names[i]));
    TM_TRY(tm_buf_puts(b, o->names[i], err));
    if (i + 1 < o->n_cols) TM_TRY(pad(b, o->widths[i] - w, err));
  }
  TM_TRY(tm_buf_putc(b, '\n', err));
  for (size_t i = 0; i < o->n_cols; i++) {
    if (i) TM_TRY(tm_buf_puts(b, "-+-", err));
    for (size_t k = 0; k < o->widths[i]; k++) TM_TRY(tm_buf_putc(b, '-', err));
  }
  TM_TRY(tm_buf_putc(b, '\n', err));
  TM_TRY(emit(o, b->ptr, b->len, err));
  const char *p = o->table.ptr;
  for (int64_t r = 0; r < o->n_rows; r++) {
    tm_buf_clear(b);
    for (size_t i = 0; i < o->n_cols; i++) {
      size_t len = strlen(p);
      size_t w = display_width(p, len);
      if (i) TM_TRY(tm_buf_puts(b, " | ", err));
      if (o->right_align[i]) TM_TRY(pad(b, o->widths[i] - w, err));
      TM_TRY(tm_buf_append(b, p, len, err));
      if (!o->right_align[i] && i + 1 < o->n_cols) TM_TRY(pad(b, o->widths[i] - w, err));
      p += len + 1;
    }
    TM_TRY(tm_buf_putc(b, '\n', err));
    TM_TRY(emit(o, b->ptr, b->len, err));
  }
  tm_buf_clear(b);
  TM_TRY(tm_buf_printf(b, err, "(%lld row%s)\n", (long long)o->n_rows, o->n_rows == 1 ? "" : "s"));
  return emit(o, b->ptr, b->len, err);
}

/* SPICE_V1's end: the whole document when every row was held, else the data array's end. */
static int spice_end(tm_out *o, tm_error *err) {
  tm_buf *b = &o->line;
  tm_buf_clear(b);
  if (o->streaming) {
    TM_TRY(tm_buf_printf(b, err, "],\"row_count\":%lld}\n", (long long)o->n_rows));
    return emit(o, b->ptr, b->len, err);
  }
  TM_TRY(tm_buf_printf(b, err, "{\"row_count\":%lld,", (long long)o->n_rows));
  TM_TRY(put_spice_schema(o, b, err));
  TM_TRY(tm_buf_puts(b, ",\"data\":[", err));
  TM_TRY(emit(o, b->ptr, b->len, err));
  TM_TRY(emit(o, o->table.ptr, o->table.len, err));
  return emit(o, "]}\n", 3, err);
}

int tm_out_end(tm_out *o, tm_error *err) {
  int rc = TM_OK;
  if (o->format == TM_OUT_JSON) rc = emit(o, "]\n", 2, err);
  else if (o->format == TM_OUT_TABLE) rc = flush_table(o, err);
  else if (o->format == TM_OUT_SPICE_V1) rc = spice_end(o, err);
  tm_out_dispose(o);
  return rc;
}

void tm_out_dispose(tm_out *o) {
  if (o->names)
    for (size_t i = 0; i < o->n_cols; i++) tm_free(o->names[i]);
  tm_free(o->names);
  tm_free(o->widths);
  tm_free(o->right_align);
  if (o->types)
    for (size_t i = 0; i < o->n_cols; i++) tm_free(o->types[i]);
  tm_free(o->types);
  tm_buf_dispose(&o->line);
  tm_buf_dispose(&o->table);
  memset(o, 0, sizeof *o);
}
