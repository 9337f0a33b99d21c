/*
 * error.h - status codes and the caller-owned error struct (util layer).
 *
 * Every function that can fail returns an int: 0 (TM_OK) on success, a
 * negative tm_code on failure. Detail goes into a tm_error that the caller
 * owns and passes last; it may be NULL when the caller does not want the
 * message. There is no thread-local "last error": work moves between threads.
 *
 * Messages are one line, impersonal, without a "failed to" prefix. A layer
 * that knows context the callee did not (a file name, a dataset) adds it with
 * tm_error_prefix().
 */
#ifndef TM_UTIL_ERROR_H
#define TM_UTIL_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define TM_WARN_UNUSED __attribute__((warn_unused_result))
#define TM_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#define TM_UNUSED(x) ((void)(x))

/* Expected codes: a caller may branch on these. Everything else is TM_ERROR. */
typedef enum tm_code {
  TM_OK = 0,
  TM_ERROR = -1,        /* generic failure */
  TM_ENOTFOUND = -2,    /* a named thing (file, dataset, key, column) does not exist */
  TM_ITEROVER = -3,     /* end of iteration; not a failure */
  TM_ETOOLARGE = -4,    /* a size passed a configured limit */
  TM_ECORRUPT = -5,     /* input bytes are malformed */
  TM_EUNSUPPORTED = -6, /* valid input using a feature we do not implement */
  TM_EIO = -7,          /* the operating system or a remote store failed */
  TM_ETIMEOUT = -8,
  TM_ECANCELLED = -9,
  TM_ENOMEM = -10,      /* an allocation failed */
  TM_EINVALID = -11,    /* a bad value from a user: config, SQL, CLI argument */
  TM_ECONFLICT = -12,   /* a concurrent writer committed first */
  TM_EUNAVAILABLE = -13 /* a source is unreachable; transient, retry later */
} tm_code;

#define TM_ERROR_MESSAGE_MAX 1024

typedef struct tm_error {
  int code;                           /* last code set, TM_OK when clear */
  char message[TM_ERROR_MESSAGE_MAX]; /* NUL-terminated, truncated to fit */
  const char *src_file;               /* where TM_CORRUPT was raised (debugging only) */
  int src_line;
} tm_error;

/** Clears err (may be NULL). */
void tm_error_init(tm_error *err);

/**
 * Records code and a formatted message in err (may be NULL) and returns code,
 * so that `return tm_error_set(err, TM_EINVALID, "...")` reads naturally.
 */
int tm_error_set(tm_error *err, int code, const char *fmt, ...) TM_PRINTF(3, 4);
int tm_error_setv(tm_error *err, int code, const char *fmt, va_list ap);

/** Sets TM_ENOMEM with a fixed message; never allocates. Returns TM_ENOMEM. */
int tm_error_nomem(tm_error *err);

/**
 * Prepends "<formatted>: " to err's message, keeping its code. Returns the
 * code, or TM_ERROR when err is NULL or clear.
 */
int tm_error_prefix(tm_error *err, const char *fmt, ...) TM_PRINTF(2, 3);

/** Copies src into dst (either may be NULL). Returns src's code. */
int tm_error_copy(tm_error *dst, const tm_error *src);

/*
 * Corrupt input. One function for every "the bytes are wrong" path so that a
 * debugger has one place to break; records the raising source line.
 */
int tm_error__corrupt(tm_error *err, const char *file, int line, const char *fmt, ...)
    TM_PRINTF(4, 5);
#define TM_CORRUPT(err, ...) tm_error__corrupt((err), __FILE__, __LINE__, __VA_ARGS__)

/** A short stable name for a code, e.g. "corrupt" for TM_ECORRUPT. */
const char *tm_code_name(int code);

/* Return early on error; for functions without resources to free. */
#define TM_TRY(expr)                 \
  do {                               \
    int tm_try_rc_ = (expr);         \
    if (tm_try_rc_ < 0) return tm_try_rc_; \
  } while (0)

/* With a local `int rc` and a `done:` label that frees everything. */
#define TM_CHECK(expr)         \
  do {                         \
    rc = (expr);               \
    if (rc < 0) goto done;     \
  } while (0)

/*
 * Defensive checks for conditions that cannot happen (SQLite's ALWAYS/NEVER).
 * Debug builds assert; release builds take the defensive branch.
 */
#ifdef NDEBUG
#define TM_ALWAYS(x) (x)
#define TM_NEVER(x) (x)
#else
#include <assert.h>
#define TM_ALWAYS(x) ((x) ? 1 : (assert(0 && #x), 0))
#define TM_NEVER(x) ((x) ? (assert(0 && #x), 1) : 0)
#endif

#endif
