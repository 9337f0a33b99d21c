/*
 * str.c - string helpers (util layer). See str.h.
 */
#include "util/str.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "util/alloc.h"

tm_strview tm_sv_cstr(const char *s) { return tm_sv(s, s ? strlen(s) : 0); }

bool tm_sv_eq(tm_strview a, tm_strview b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

bool tm_sv_eq_cstr(tm_strview a, const char *s) { return tm_sv_eq(a, tm_sv_cstr(s)); }

bool tm_sv_eq_nocase(tm_strview a, const char *s) {
  size_t n = strlen(s);
  return a.len == n && strncasecmp(a.ptr, s, n) == 0;
}

tm_strview tm_sv_trim(tm_strview v) {
  while (v.len && (v.ptr[0] == ' ' || v.ptr[0] == '\t' || v.ptr[0] == '\n' || v.ptr[0] == '\r')) {
    v.ptr++;
    v.len--;
  }
  while (v.len && (v.ptr[v.len - 1] == ' ' || v.ptr[v.len - 1] == '\t' ||
                   v.ptr[v.len - 1] == '\n' || v.ptr[v.len - 1] == '\r'))
    v.len--;
  return v;
}

bool tm_str_has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool tm_utf8_valid(const char *s, size_t len, size_t *bad_at) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    /* ASCII runs, eight bytes at a time. */
    while (i + 8 <= len) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      if (w & UINT64_C(0x8080808080808080)) break;
      i += 8;
    }
    if (i >= len) break;
    unsigned c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) n = 1, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 2, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 3, min = 0x10000;
    else goto bad;
    if (len - i <= n) goto bad;
    unsigned cp = c & (0x3Fu >> n);
    for (size_t k = 1; k <= n; k++) {
      if ((p[i + k] & 0xC0) != 0x80) goto bad;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto bad;
    i += n + 1;
  }
  return true;
bad:
  if (bad_at) *bad_at = i;
  return false;
}

bool tm_str_has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

int tm_parse_uint64(const char *s, size_t len, uint64_t *out) {
  if (len == 0) return TM_EINVALID;
  uint64_t v = 0;
  size_t i = 0;
  if (s[0] == '+') i++;
  if (i == len) return TM_EINVALID;
  for (; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return TM_EINVALID;
    if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10) return TM_EINVALID;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return TM_OK;
}

int tm_parse_int64(const char *s, size_t len, int64_t *out) {
  if (len == 0) return TM_EINVALID;
  bool neg = s[0] == '-';
  uint64_t u;
  size_t skip = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (skip == len) return TM_EINVALID;
  if (s[skip] == '+' || s[skip] == '-') return TM_EINVALID;
  if (tm_parse_uint64(s + skip, len - skip, &u) != TM_OK) return TM_EINVALID;
  if (neg) {
    if (u > (uint64_t)INT64_MAX + 1) return TM_EINVALID;
    *out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
  } else {
    if (u > (uint64_t)INT64_MAX) return TM_EINVALID;
    *out = (int64_t)u;
  }
  return TM_OK;
}

int tm_parse_double(const char *s, size_t len, double *out) {
  char tmp[128];
  if (len == 0 || len >= sizeof tmp) return TM_EINVALID;
  memcpy(tmp, s, len);
  tmp[len] = '\0';
  if (strcasecmp(tmp, "nan") == 0) {
    *out = NAN;
    return TM_OK;
  }
  if (strcasecmp(tmp, "inf") == 0 || strcasecmp(tmp, "infinity") == 0 ||
      strcasecmp(tmp, "+inf") == 0) {
    *out = INFINITY;
    return TM_OK;
  }
  if (strcasecmp(tmp, "-inf") == 0 || strcasecmp(tmp, "-infinity") == 0) {
    *out = -INFINITY;
    return TM_OK;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(tmp, &end);
  if (end != tmp + len || (errno == ERANGE && isinf(v))) return TM_EINVALID;
  if (tmp[0] == ' ' || tmp[0] == '\t') return TM_EINVALID;
  *out = v;
  return TM_OK;
}

int tm_parse_bool(const char *s, size_t len, bool *out) {
  tm_strview v = tm_sv(s, len);
  if (tm_sv_eq_nocase(v, "true") || tm_sv_eq_nocase(v, "yes") || tm_sv_eq_nocase(v, "on") ||
      tm_sv_eq_cstr(v, "1")) {
    *out = true;
    return TM_OK;
  }
  if (tm_sv_eq_nocase(v, "false") || tm_sv_eq_nocase(v, "no") || tm_sv_eq_nocase(v, "off") ||
      tm_sv_eq_cstr(v, "0")) {
    *out = false;
    return TM_OK;
  }
  return TM_EINVALID;
}

void tm_kv_init(tm_kv *kv) { memset(kv, 0, sizeof *kv); }

void tm_kv_dispose(tm_kv *kv) {
  for (size_t i = 0; i < kv->len; i++) {
    tm_free(kv->items[i].key);
    tm_free(kv->items[i].value);
  }
  tm_free(kv->items);
  memset(kv, 0, sizeof *kv);
}

int tm_kv_set(tm_kv *kv, const char *key, const char *value, tm_error *err) {
  char *v = tm_strdup(value);
  if (!v) return tm_error_nomem(err);
  for (size_t i = 0; i < kv->len; i++) {
    if (strcmp(kv->items[i].key, key) == 0) {
      tm_free(kv->items[i].value);
      kv->items[i].value = v;
      return TM_OK;
    }
  }
  if (kv->len == kv->cap) {
    size_t cap = kv->cap ? kv->cap * 2 : 8;
    tm_kv_pair *items = tm_reallocarray(kv->items, cap, sizeof *items);
    if (!items) {
      tm_free(v);
      return tm_error_nomem(err);
    }
    kv->items = items;
    kv->cap = cap;
  }
  char *k = tm_strdup(key);
  if (!k) {
    tm_free(v);
    return tm_error_nomem(err);
  }
  kv->items[kv->len].key = k;
  kv->items[kv->len].value = v;
  kv->len++;
  return TM_OK;
}

const char *tm_kv_get(const tm_kv *kv, const char *key) {
  for (size_t i = 0; i < kv->len; i++)
    if (strcmp(kv->items[i].key, key) == 0) return kv->items[i].value;
  return NULL;
}

int tm_kv_copy(tm_kv *dst, const tm_kv *src, tm_error *err) {
  for (size_t i = 0; i < src->len; i++)
    TM_TRY(tm_kv_set(dst, src->items[i].key, src->items[i].value, err));
  return TM_OK;
}

int tm_size_parse(const char *s, int64_t *out) {
  if (!s) return TM_EINVALID;
  size_t i = 0, n = strlen(s);
  while (i < n && s[i] == ' ') i++;
  size_t start = i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  int64_t v;
  if (i == start || tm_parse_int64(s + start, i - start, &v) != TM_OK) return TM_EINVALID;
  while (i < n && s[i] == ' ') i++;
  static const struct { const char *unit; int64_t mul; } k[] = {
      {"", 1},         {"b", 1},
      {"kb", 1000},    {"mb", 1000000},       {"gb", 1000000000},       {"tb", 1000000000000},
      {"kib", 1 << 10}, {"mib", 1 << 20},     {"gib", INT64_C(1) << 30}, {"tib", INT64_C(1) << 40},
      {"k", 1 << 10},  {"m", 1 << 20},        {"g", INT64_C(1) << 30},
  };
  for (size_t u = 0; u < sizeof k / sizeof k[0]; u++)
    if (strcasecmp(s + i, k[u].unit) == 0) {
      if (__builtin_mul_overflow(v, k[u].mul, out)) return TM_EINVALID;
      return TM_OK;
    }
  return TM_EINVALID;
}
