/*
 * error.c - the tm_error struct (util layer). See error.h.
 */
#include "util/error.h"

#include <stdio.h>
#include <string.h>

void tm_error_init(tm_error *err) {
  if (!err) return;
  err->code = TM_OK;
  err->message[0] = '\0';
  err->src_file = NULL;
  err->src_line = 0;
}

int tm_error_setv(tm_error *err, int code, const char *fmt, va_list ap) {
  if (!err) return code;
  err->code = code;
  err->src_file = NULL;
  err->src_line = 0;
  /* Formatted aside first: an argument may be err->message itself (re-coding an error). */
  char text[sizeof err->message];
  vsnprintf(text, sizeof text, fmt, ap);
  memcpy(err->message, text, sizeof text);
  return code;
}

int tm_error_set(tm_error *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tm_error_setv(err, code, fmt, ap);
  va_end(ap);
  return code;
}

int tm_error_nomem(tm_error *err) {
  if (err) {
    err->code = TM_ENOMEM;
    memcpy(err->message, "out of memory", sizeof "out of memory");
  }
  return TM_ENOMEM;
}

int tm_error_prefix(tm_error *err, const char *fmt, ...) {
  if (!err) return TM_ERROR;
  if (err->code == TM_OK) err->code = TM_ERROR;
  char prefix[TM_ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return err->code;
  /* prefix + ": " + old message, truncated to the buffer. */
  size_t plen = strlen(prefix), mlen = strlen(err->message), cap = sizeof err->message - 1;
  if (plen > cap) plen = cap;
  size_t room = cap - plen;
  size_t sep = room >= 2 ? 2 : room;
  if (mlen > room - sep) mlen = room - sep;
  memmove(err->message + plen + sep, err->message, mlen);
  memcpy(err->message, prefix, plen);
  memcpy(err->message + plen, ": ", sep);
  err->message[plen + sep + mlen] = '\0';
  return err->code;
}

int tm_error_copy(tm_error *dst, const tm_error *src) {
  if (!src) return TM_ERROR;
  if (dst && dst != src) *dst = *src;
  return src->code;
}

int tm_error__corrupt(tm_error *err, const char *file, int line, const char *fmt, ...) {
  /* Break here to catch the first sign of corrupt input. */
  va_list ap;
  va_start(ap, fmt);
  tm_error_setv(err, TM_ECORRUPT, fmt, ap);
  va_end(ap);
  if (err) {
    err->src_file = file;
    err->src_line = line;
  }
  return TM_ECORRUPT;
}

const char *tm_code_name(int code) {
  switch (code) {
    case TM_OK: return "ok";
    case TM_ERROR: return "error";
    case TM_ENOTFOUND: return "not_found";
    case TM_ITEROVER: return "iter_over";
    case TM_ETOOLARGE: return "too_large";
    case TM_ECORRUPT: return "corrupt";
    case TM_EUNSUPPORTED: return "unsupported";
    case TM_EIO: return "io";
    case TM_ETIMEOUT: return "timeout";
    case TM_ECANCELLED: return "cancelled";
    case TM_ENOMEM: return "out_of_memory";
    case TM_EINVALID: return "invalid";
    case TM_ECONFLICT: return "conflict";
    case TM_EUNAVAILABLE: return "unavailable";
    default: return "unknown";
  }
}
