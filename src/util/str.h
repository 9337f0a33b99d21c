/*
 * str.h - string views, strict number parsing and key/value lists (util layer).
 *
 * atoi, strtok and sscanf are banned (scripts/lint): their failure modes are
 * silent. These helpers reject trailing garbage and overflow.
 */
#ifndef TM_UTIL_STR_H
#define TM_UTIL_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/** A view of len bytes at ptr; does not own, not necessarily NUL-terminated. */
typedef struct tm_strview {
  const char *ptr;
  size_t len;
} tm_strview;

static inline tm_strview tm_sv(const char *ptr, size_t len) {
  tm_strview v = {ptr, len};
  return v;
}
tm_strview tm_sv_cstr(const char *s);
bool tm_sv_eq(tm_strview a, tm_strview b);
bool tm_sv_eq_cstr(tm_strview a, const char *s);
bool tm_sv_eq_nocase(tm_strview a, const char *s);
tm_strview tm_sv_trim(tm_strview v);
bool tm_str_has_prefix(const char *s, const char *prefix);
bool tm_str_has_suffix(const char *s, const char *suffix);
/**
 * Whether [s, s+len) is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). *bad_at (may be NULL) gets the offset
 * of the first bad byte.
 */
bool tm_utf8_valid(const char *s, size_t len, size_t *bad_at);

/** Whole-string decimal parses; TM_EINVALID on empty, garbage or overflow. */
int tm_parse_int64(const char *s, size_t len, int64_t *out) TM_WARN_UNUSED;
int tm_parse_uint64(const char *s, size_t len, uint64_t *out) TM_WARN_UNUSED;
int tm_parse_double(const char *s, size_t len, double *out) TM_WARN_UNUSED;
/**
 * A size in bytes: a number with an optional unit, B, KB, MB, GB, TB (powers
 * of 1000) or KiB, MiB, GiB, TiB (powers of 1024), case-insensitive, spaces
 * allowed before the unit. TM_EINVALID on garbage or overflow.
 */
int tm_size_parse(const char *s, int64_t *out) TM_WARN_UNUSED;
/** "true"/"false" (also yes/no, on/off, 1/0), case-insensitive. */
int tm_parse_bool(const char *s, size_t len, bool *out) TM_WARN_UNUSED;

/*
 * tm_kv - an ordered list of string pairs (connector and engine params).
 * Keys and values are owned copies.
 */
typedef struct tm_kv_pair {
  char *key;
  char *value;
} tm_kv_pair;

typedef struct tm_kv {
  tm_kv_pair *items; /* owned */
  size_t len;
  size_t cap;
} tm_kv;

void tm_kv_init(tm_kv *kv);
void tm_kv_dispose(tm_kv *kv);
/** Sets key to value, replacing an existing value. */
int tm_kv_set(tm_kv *kv, const char *key, const char *value, tm_error *err) TM_WARN_UNUSED;
/** Value for key, or NULL. Valid until kv changes. */
const char *tm_kv_get(const tm_kv *kv, const char *key);
int tm_kv_copy(tm_kv *dst, const tm_kv *src, tm_error *err) TM_WARN_UNUSED;

#endif
