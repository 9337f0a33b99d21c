/*
 * text.c - typed cells from text and a buffered record scanner (format
 * layer). See text.h.
 */
#include "format/text/text.h"

#include <string.h>
#include <strings.h>

#include "util/alloc.h"
#include "util/time.h"

#define CHUNK ((size_t)1 << 20)

void tm_text_options_init(tm_text_options *o) {
  memset(o, 0, sizeof *o);
  o->version = TM_TEXT_OPTIONS_VERSION;
  o->sample_rows = 1000;
  o->batch_rows = TM_BATCH_DEFAULT_ROWS;
  o->delimiter = ',';
  o->quote = '"';
  o->json_format = TM_JSON_AUTO;
  o->max_record_bytes = (size_t)16 << 20;
}

/* ---- classification -------------------------------------------------------- */

static bool is_bool_text(const char *s, size_t len, bool *v) {
  tm_strview t = tm_sv(s, len);
  if (tm_sv_eq_nocase(t, "true")) {
    *v = true;
    return true;
  }
  if (tm_sv_eq_nocase(t, "false")) {
    *v = false;
    return true;
  }
  return false;
}

tm_text_kind tm_text_classify(const char *s, size_t len) {
  if (len == 0) return TM_TEXT_NULL;
  bool b;
  if (is_bool_text(s, len, &b)) return TM_TEXT_BOOL;
  int64_t i;
  if (tm_parse_int64(s, len, &i) == TM_OK) return TM_TEXT_INT;
  bool digit = false;
  for (size_t k = 0; k < len; k++)
    if (s[k] >= '0' && s[k] <= '9') digit = true;
  double d;
  if (digit && s[0] != ' ' && tm_parse_double(s, len, &d) == TM_OK) return TM_TEXT_FLOAT;
  int64_t sec;
  int32_t nsec;
  bool zone;
  if (len >= 10 && tm_time_parse(s, len, &sec, &nsec, &zone) == TM_OK) {
    if (len == 10) return TM_TEXT_DATE;
    return zone ? TM_TEXT_TIMESTAMPTZ : TM_TEXT_TIMESTAMP;
  }
  return TM_TEXT_STRING;
}

tm_text_kind tm_text_widen(tm_text_kind col, tm_text_kind cell) {
  if (cell == TM_TEXT_NULL) return col;
  if (col == TM_TEXT_NULL || col == cell) return cell;
  if ((col == TM_TEXT_INT && cell == TM_TEXT_FLOAT) || (col == TM_TEXT_FLOAT && cell == TM_TEXT_INT))
    return TM_TEXT_FLOAT;
  if (col == TM_TEXT_DATE && (cell == TM_TEXT_TIMESTAMP || cell == TM_TEXT_TIMESTAMPTZ)) return cell;
  if (cell == TM_TEXT_DATE && (col == TM_TEXT_TIMESTAMP || col == TM_TEXT_TIMESTAMPTZ)) return col;
  return TM_TEXT_STRING;
}

tm_type tm_text_kind_type(tm_text_kind k) {
  switch (k) {
    case TM_TEXT_BOOL: return tm_type_of(TM_TYPE_BOOL);
    case TM_TEXT_INT: return tm_type_of(TM_TYPE_INT64);
    case TM_TEXT_FLOAT: return tm_type_of(TM_TYPE_FLOAT64);
    case TM_TEXT_DATE: return tm_type_of(TM_TYPE_DATE32);
    case TM_TEXT_TIMESTAMP: return tm_type_timestamp(TM_UNIT_MICRO, false);
    case TM_TEXT_TIMESTAMPTZ: return tm_type_timestamp(TM_UNIT_MICRO, true);
    default: return tm_type_of(TM_TYPE_UTF8);
  }
}

/* ---- parsing --------------------------------------------------------------- */

static int bad(tm_error *err, const char *what, const char *s, size_t len) {
  return tm_error_set(err, TM_EINVALID, "expected %s, got '%.*s'", what,
                      (int)(len > 64 ? 64 : len), s);
}

/* "-123.45" into a decimal128 with the given scale. */
static int parse_decimal(const char *s, size_t len, int32_t precision, int32_t scale,
                         uint8_t out[16], tm_error *err) {
  size_t i = 0;
  bool neg = false;
  if (i < len && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  __int128 v = 0;
  int digits = 0, frac = 0;
  bool dot = false, any = false;
  for (; i < len; i++) {
    if (s[i] == '.' && !dot) {
      dot = true;
      continue;
    }
    if (s[i] < '0' || s[i] > '9') return bad(err, "a decimal", s, len);
    any = true;
    if (dot) {
      if (frac == scale) {
        if (s[i] != '0') return tm_error_set(err, TM_EINVALID, "'%.*s' has more than %d decimal places", (int)len, s, (int)scale);
        continue;
      }
      frac++;
    }
    if (v != 0 || s[i] != '0') digits++;
    if (digits > 38) return bad(err, "a decimal of at most 38 digits", s, len);
    v = v * 10 + (s[i] - '0');
  }
  if (!any) return bad(err, "a decimal", s, len);
  for (; frac < scale; frac++) {
    v *= 10;
    if (v != 0) digits++;
  }
  if (digits > precision)
    return tm_error_set(err, TM_EINVALID, "'%.*s' does not fit decimal(%d,%d)", (int)len, s,
                        (int)precision, (int)scale);
  if (neg) v = -v;
  memcpy(out, &v, 16);
  return TM_OK;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int tm_text_append(tm_colbuilder *cb, const char *s, size_t len, tm_error *err) {
  const tm_type *t = &cb->type;
  if (len == 0 && t->id != TM_TYPE_UTF8 && t->id != TM_TYPE_BINARY)
    return tm_colbuilder_append_null(cb, err);
  switch (t->id) {
    case TM_TYPE_BOOL: {
      bool v;
      if (is_bool_text(s, len, &v) || tm_parse_bool(s, len, &v) == TM_OK)
        return tm_colbuilder_append_bool(cb, v, err);
      return bad(err, "true or false", s, len);
    }
    case TM_TYPE_INT8:
    case TM_TYPE_INT16:
    case TM_TYPE_INT32:
    case TM_TYPE_INT64: {
      int64_t v;
      if (tm_parse_int64(s, len, &v) != TM_OK) return bad(err, "an integer", s, len);
      return tm_colbuilder_append_int(cb, v, err);
    }
    case TM_TYPE_UINT8:
    case TM_TYPE_UINT16:
    case TM_TYPE_UINT32:
    case TM_TYPE_UINT64: {
      uint64_t v;
      if (tm_parse_uint64(s, len, &v) != TM_OK) return bad(err, "an unsigned integer", s, len);
      return tm_colbuilder_append_uint(cb, v, err);
    }
    case TM_TYPE_FLOAT32:
    case TM_TYPE_FLOAT64: {
      double v;
      if (tm_parse_double(s, len, &v) != TM_OK) return bad(err, "a number", s, len);
      return tm_colbuilder_append_double(cb, v, err);
    }
    case TM_TYPE_DECIMAL128: {
      uint8_t d[16];
      TM_TRY(parse_decimal(s, len, t->precision, t->scale, d, err));
      return tm_colbuilder_append_decimal(cb, d, err);
    }
    case TM_TYPE_UTF8:
    case TM_TYPE_BINARY: return tm_colbuilder_append_bytes(cb, s, len, err);
    case TM_TYPE_FIXED_BINARY: {
      if (t->uuid) {
        uint8_t u[16];
        size_t k = 0;
        for (size_t i = 0; i < len && k < 32; i++) {
          if (s[i] == '-') continue;
          int h = hexval(s[i]);
          if (h < 0) return bad(err, "a UUID", s, len);
          if (k % 2 == 0) u[k / 2] = (uint8_t)(h << 4);
          else u[k / 2] |= (uint8_t)h;
          k++;
        }
        if (k != 32 || len != 36) return bad(err, "a UUID", s, len);
        return tm_colbuilder_append_bytes(cb, u, 16, err);
      }
      return tm_colbuilder_append_bytes(cb, s, len, err);
    }
    case TM_TYPE_DATE32: {
      int64_t sec;
      int32_t nsec;
      bool zone;
      if (len != 10 || tm_time_parse(s, len, &sec, &nsec, &zone) != TM_OK)
        return bad(err, "a date (YYYY-MM-DD)", s, len);
      return tm_colbuilder_append_int(cb, tm_floor_div(sec, 86400), err);
    }
    case TM_TYPE_TIMESTAMP: {
      int64_t sec, v;
      int32_t nsec;
      bool zone;
      if (tm_time_parse(s, len, &sec, &nsec, &zone) != TM_OK)
        return bad(err, "a timestamp (RFC 3339)", s, len);
      if (!tm_instant_to_units((tm_instant){sec, nsec}, tm_unit_per_second(t->unit), false, &v))
        return bad(err, "a timestamp in range", s, len);
      return tm_colbuilder_append_int(cb, v, err);
    }
    case TM_TYPE_TIME64: {
      /* HH:MM:SS[.fraction] as a time of day. */
      char tmp[64];
      if (len + 11 >= sizeof tmp) return bad(err, "a time (HH:MM:SS)", s, len);
      memcpy(tmp, "1970-01-01T", 11);
      memcpy(tmp + 11, s, len);
      int64_t sec;
      int32_t nsec;
      bool zone;
      if (tm_time_parse(tmp, len + 11, &sec, &nsec, &zone) != TM_OK || zone)
        return bad(err, "a time (HH:MM:SS)", s, len);
      int64_t units;
      if (!tm_instant_to_units((tm_instant){sec, nsec}, tm_unit_per_second(t->unit), false, &units))
        return bad(err, "a time (HH:MM:SS)", s, len);
      return tm_colbuilder_append_int(cb, units, err);
    }
    default: return tm_error_set(err, TM_EUNSUPPORTED, "cannot read this type from text");
  }
}

/* ---- the scanner ----------------------------------------------------------- */

int tm_text_scanner_init(tm_text_scanner *s, tm_input *in, size_t max_record, tm_error *err) {
  memset(s, 0, sizeof *s);
  s->in = in;
  s->max_record = max_record ? max_record : (size_t)16 << 20;
  s->line = 1;
  TM_TRY(tm_input_size(in, &s->size, err));
  return TM_OK;
}

void tm_text_scanner_dispose(tm_text_scanner *s) {
  tm_free(s->buf);
  s->buf = NULL;
}

/* What the first bytes of an input say it is, when that is not text. */
static const char *binary_kind(const unsigned char *b, size_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return "gzip-compressed";
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) return "zstd-compressed";
  if (n >= 10 && memcmp(b, "BZh", 3) == 0 && b[3] >= '1' && b[3] <= '9' &&
      memcmp(b + 4, "1AY&SY", 6) == 0)
    return "bzip2-compressed";
  if (n >= 6 && memcmp(b, "\xfd" "7zXZ\0", 6) == 0) return "xz-compressed";
  if (n >= 4 && memcmp(b, "PAR1", 4) == 0) return "a Parquet file";
  return NULL;
}

/* The start of the input: skips a UTF-8 byte-order mark, refuses binary data. */
static int check_start(tm_text_scanner *s, tm_error *err) {
  s->started = true; /* the first read holds min(size, CHUNK) bytes */
  const unsigned char *b = (const unsigned char *)s->buf;
  size_t n = s->len;
  const char *kind = binary_kind(b, n);
  if (kind)
    return tm_error_set(err, TM_ECORRUPT,
                        "%s: the file is %s, not text (name it by its extension, e.g. .csv.gz, "
                        "or set file_compression_type / file_format)",
                        tm_input_name(s->in), kind);
  if (n >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf) s->start = 3;
  return TM_OK;
}

/* Reads another chunk, keeping buf[start..len). Sets eof at the end. */
static int refill(tm_text_scanner *s, tm_error *err) {
  if (s->start > 0) {
    memmove(s->buf, s->buf + s->start, s->len - s->start);
    s->len -= s->start;
    s->start = 0;
  }
  uint64_t remaining = s->size > s->pos + s->len ? s->size - (s->pos + s->len) : 0;
  size_t chunk = remaining < CHUNK ? (size_t)remaining : CHUNK;
  if (s->len + chunk + 1 > s->cap) {
    size_t cap = s->len + chunk + 1;
    char *p = tm_realloc(s->buf, cap);
    if (!p) return tm_error_nomem(err);
    s->buf = p;
    s->cap = cap;
  }
  uint64_t off = s->pos + s->len;
  size_t n = 0;
  if (off < s->size && chunk > 0)
    TM_TRY(tm_input_read_at(s->in, off, s->buf + s->len, chunk, &n, err));
  if (n == 0) s->eof = true;
  s->len += n;
  s->buf[s->len] = '\0';
  if (!s->started && s->pos == 0) TM_TRY(check_start(s, err));
  return TM_OK;
}

int tm_text_scanner_line(tm_text_scanner *s, tm_strview *out, tm_error *err) {
  for (;;) {
    size_t avail = s->len - s->start;
    char *p = avail ? memchr(s->buf + s->start, '\n', avail) : NULL;
    if (p || (s->eof && avail > 0)) {
      size_t n = p ? (size_t)(p - (s->buf + s->start)) : avail;
      if (n > s->max_record)
        return tm_error_set(err, TM_ETOOLARGE, "%s: line %lld is longer than %zu bytes",
                            tm_input_name(s->in), (long long)s->line, s->max_record);
      size_t text_len = n;
      if (text_len > 0 && s->buf[s->start + text_len - 1] == '\r') text_len--;
      /* The view stays valid until the next call, which may refill. */
      *out = tm_sv(s->buf + s->start, text_len);
      s->start += n + (p ? 1 : 0);
      s->line++;
      return TM_OK;
    }
    if (s->eof) return TM_ITEROVER;
    if (avail > s->max_record)
      return tm_error_set(err, TM_ETOOLARGE, "%s: line %lld is longer than %zu bytes",
                          tm_input_name(s->in), (long long)s->line, s->max_record);
    /* Move the partial line to the front and read more. */
    s->pos += s->start;
    TM_TRY(refill(s, err));
  }
}

void tm_csv_record_init(tm_csv_record *r) {
  memset(r, 0, sizeof *r);
  tm_buf_init(&r->text, TM_BUF_UNLIMITED);
}

void tm_csv_record_dispose(tm_csv_record *r) {
  tm_free(r->fields);
  tm_free(r->quoted);
  tm_buf_dispose(&r->text);
  memset(r, 0, sizeof *r);
}

static int push_field(tm_csv_record *r, size_t start, bool quoted, tm_error *err) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    tm_strview *f = tm_reallocarray(r->fields, cap, sizeof *f);
    if (!f) return tm_error_nomem(err);
    r->fields = f;
    bool *q = tm_reallocarray(r->quoted, cap, sizeof *q);
    if (!q) return tm_error_nomem(err);
    r->quoted = q;
    r->cap = cap;
  }
  /* Offsets for now; turned into pointers when the record is complete. */
  r->fields[r->n].ptr = (const char *)(uintptr_t)start;
  r->fields[r->n].len = r->text.len - start;
  r->quoted[r->n] = quoted;
  r->n++;
  return TM_OK;
}

/*
 * Parses one record starting at buf[start]. Returns TM_OK with *used bytes
 * consumed, or 1 when the buffer ends inside the record (more input needed).
 */
static int parse_record(tm_text_scanner *s, const tm_text_options *o, tm_csv_record *r,
                        size_t *used, int64_t *lines, tm_error *err) {
  const char *p = s->buf + s->start, *end = s->buf + s->len;
  const char delim = o->delimiter, quote = o->quote, esc = o->escape;
  r->n = 0;
  tm_buf_clear(&r->text);
  *lines = 1;
  size_t field_start = 0;
  bool quoted = false;
  const char *q = p;
  for (;;) {
    if (q >= end) {
      if (!s->eof) return 1;
      TM_TRY(push_field(r, field_start, quoted, err));
      *used = (size_t)(q - p);
      return TM_OK;
    }
    char c = *q;
    if (quote && c == quote && r->text.len == field_start && !quoted) {
      /* A quoted field: read to the closing quote. */
      quoted = true;
      q++;
      for (;;) {
        if (q >= end) {
          if (!s->eof) return 1;
          return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: unterminated quoted field",
                              tm_input_name(s->in), (long long)s->line);
        }
        if (esc && *q == esc && esc != quote) {
          if (q + 1 >= end) {
            if (!s->eof) return 1;
            return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: unterminated quoted field",
                                tm_input_name(s->in), (long long)s->line);
          }
          if (q[1] == '\n') (*lines)++;
          TM_TRY(tm_buf_putc(&r->text, q[1], err));
          q += 2;
          continue;
        }
        if (*q == quote) {
          if (q + 1 >= end && !s->eof) return 1;
          if (q + 1 < end && q[1] == quote) {
            TM_TRY(tm_buf_putc(&r->text, quote, err));
            q += 2;
            continue;
          }
          q++;
          break;
        }
        if (*q == '\n') (*lines)++;
        TM_TRY(tm_buf_putc(&r->text, *q, err));
        q++;
        if (r->text.len > s->max_record)
          return tm_error_set(err, TM_ETOOLARGE, "%s: record at line %lld is longer than %zu bytes",
                              tm_input_name(s->in), (long long)s->line, s->max_record);
      }
      continue;
    }
    if (c == delim) {
      TM_TRY(push_field(r, field_start, quoted, err));
      field_start = r->text.len;
      quoted = false;
      q++;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (c == '\r') {
        if (q + 1 >= end && !s->eof) return 1;
        if (q + 1 < end && q[1] == '\n') q++;
      }
      TM_TRY(push_field(r, field_start, quoted, err));
      *used = (size_t)(q + 1 - p);
      return TM_OK;
    }
    TM_TRY(tm_buf_putc(&r->text, c, err));
    q++;
    if (r->text.len > s->max_record)
      return tm_error_set(err, TM_ETOOLARGE, "%s: record at line %lld is longer than %zu bytes",
                          tm_input_name(s->in), (long long)s->line, s->max_record);
  }
}

int tm_text_scanner_csv(tm_text_scanner *s, const tm_text_options *opts, tm_csv_record *rec,
                        tm_error *err) {
  for (;;) {
    if (s->start == s->len && s->eof) return TM_ITEROVER;
    if (s->start < s->len) {
      size_t used = 0;
      int64_t lines = 0;
      int rc = parse_record(s, opts, rec, &used, &lines, err);
      if (rc < 0) return rc;
      if (rc == TM_OK) {
        for (size_t i = 0; i < rec->n; i++)
          rec->fields[i].ptr = tm_buf_cstr(&rec->text) + (uintptr_t)rec->fields[i].ptr;
        s->start += used;
        s->line += lines;
        return TM_OK;
      }
      if (s->len - s->start > s->max_record)
        return tm_error_set(err, TM_ETOOLARGE, "%s: record at line %lld is longer than %zu bytes",
                            tm_input_name(s->in), (long long)s->line, s->max_record);
    }
    s->pos += s->start;
    TM_TRY(refill(s, err));
  }
}

/* ---- JSON arrays ------------------------------------------------------------- */

static bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int tm_text_scanner_peek(tm_text_scanner *s, int *c_out, tm_error *err) {
  for (;;) {
    size_t i = s->start;
    while (i < s->len && json_space(s->buf[i])) i++;
    if (i < s->len) {
      *c_out = (unsigned char)s->buf[i];
      return TM_OK;
    }
    if (s->eof || s->len - s->start > s->max_record) {
      *c_out = -1;
      return TM_OK;
    }
    s->pos += s->start;
    TM_TRY(refill(s, err));
  }
}

/* Skips JSON whitespace, counting lines; *c_out the next byte or -1 at the end. */
static int skip_space(tm_text_scanner *s, int *c_out, tm_error *err) {
  for (;;) {
    while (s->start < s->len && json_space(s->buf[s->start])) {
      if (s->buf[s->start] == '\n') s->line++;
      s->start++;
    }
    if (s->start < s->len) {
      *c_out = (unsigned char)s->buf[s->start];
      return TM_OK;
    }
    if (s->eof) {
      *c_out = -1;
      return TM_OK;
    }
    s->pos += s->start;
    TM_TRY(refill(s, err));
  }
}

static int json_unexpected(tm_text_scanner *s, int c, const char *want, tm_error *err) {
  if (c < 0)
    return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: the JSON array ends early (expected %s)",
                        tm_input_name(s->in), (long long)s->line, want);
  return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: expected %s, got '%c'",
                      tm_input_name(s->in), (long long)s->line, want,
                      c >= 0x20 && c < 0x7f ? c : '?');
}

int tm_text_scanner_json_object(tm_text_scanner *s, tm_strview *out, int64_t *line_out,
                                tm_error *err) {
  int c;
  TM_TRY(skip_space(s, &c, err));
  if (s->json_state == 0) {
    if (c != '[') return json_unexpected(s, c, "'[' (a JSON array of objects)", err);
    s->start++;
    s->json_state = 1;
    s->json_need_comma = false;
    TM_TRY(skip_space(s, &c, err));
  }
  if (s->json_state == 1) {
    if (c == ']') {
      s->start++;
      s->json_state = 2;
      TM_TRY(skip_space(s, &c, err));
    } else if (s->json_need_comma) {
      if (c != ',') return json_unexpected(s, c, "',' or ']'", err);
      s->start++;
      TM_TRY(skip_space(s, &c, err));
    }
  }
  if (s->json_state == 2) {
    if (c >= 0) return json_unexpected(s, c, "the end of the file after the JSON array", err);
    return TM_ITEROVER;
  }
  if (c != '{') return json_unexpected(s, c, "a JSON object", err);
  /* Find the matching '}' outside strings; refill and rescan when the buffer ends first. */
  for (;;) {
    int depth = 0;
    bool in_str = false, esc = false;
    size_t i = s->start;
    int64_t lines = 0;
    for (; i < s->len; i++) {
      char ch = s->buf[i];
      if (ch == '\n') lines++;
      if (in_str) {
        if (esc) esc = false;
        else if (ch == '\\') esc = true;
        else if (ch == '"') in_str = false;
        continue;
      }
      if (ch == '"') in_str = true;
      else if (ch == '{' || ch == '[') depth++;
      else if (ch == '}' || ch == ']') {
        if (--depth == 0) break;
      }
    }
    if (i < s->len) {
      size_t n = i + 1 - s->start;
      if (n > s->max_record)
        return tm_error_set(err, TM_ETOOLARGE, "%s: the object at line %lld is longer than %zu bytes",
                            tm_input_name(s->in), (long long)s->line, s->max_record);
      *out = tm_sv(s->buf + s->start, n);
      *line_out = s->line;
      s->line += lines;
      s->start = i + 1;
      s->json_need_comma = true;
      return TM_OK;
    }
    if (s->len - s->start > s->max_record)
      return tm_error_set(err, TM_ETOOLARGE, "%s: the object at line %lld is longer than %zu bytes",
                          tm_input_name(s->in), (long long)s->line, s->max_record);
    if (s->eof)
      return tm_error_set(err, TM_ECORRUPT, "%s: line %lld: unterminated JSON object",
                          tm_input_name(s->in), (long long)s->line);
    s->pos += s->start;
    TM_TRY(refill(s, err));
  }
}
