/*
 * fault.h - a test object store that wraps another one and makes its N-th
 * operation fail, wait or come back short (objstore layer, fault backend;
 * SQLite's test VFS, STYLE.md §7).
 *
 * Rules are counted from when they are added: a rule with op GET, nth 3 and
 * count 2 hits the third and fourth gets after tm_objstore_fault_add. The
 * first rule that matches an operation applies; operations no rule hits pass
 * through to the wrapped store unchanged. Reads through
 * tm_objstore_open_input use the cached range reader over the faulty gets.
 */
#ifndef TM_OBJSTORE_FAULT_FAULT_H
#define TM_OBJSTORE_FAULT_FAULT_H

#include "objstore/objstore.h"

typedef enum tm_fault_op {
  TM_FAULT_ANY = 0, /* every operation below */
  TM_FAULT_GET,     /* reads: get, read, read_all, ranged inputs */
  TM_FAULT_PUT,
  TM_FAULT_LIST,
  TM_FAULT_STAT,
  TM_FAULT_DELETE
} tm_fault_op;

typedef enum tm_fault_action {
  TM_FAULT_FAIL,     /* return `code`; a get first delivers keep_bytes of its range */
  TM_FAULT_DELAY,    /* sleep delay_ms, then run the operation normally */
  TM_FAULT_TRUNCATE  /* a get delivers at most keep_bytes and succeeds (a short object);
                        a put stores only the first keep_bytes (a torn write) */
} tm_fault_action;

typedef struct tm_fault_rule {
  int version;           /* TM_FAULT_RULE_VERSION */
  tm_fault_op op;
  uint64_t nth;          /* 1: the next matching operation */
  uint64_t count;        /* operations hit from the nth on; 0 means 1; UINT64_MAX: all */
  tm_fault_action action;
  int code;              /* FAIL: the code returned (0 means TM_EIO) */
  int64_t delay_ms;      /* DELAY */
  uint64_t keep_bytes;   /* FAIL (gets) and TRUNCATE */
} tm_fault_rule;

#define TM_FAULT_RULE_VERSION 1
#define TM_FAULT_MAX_RULES 16

/**
 * Wraps inner. With take_inner the fault store frees inner when it is
 * freed; otherwise inner must outlive it. The caller owns *out.
 */
int tm_objstore_fault_new(tm_objstore **out, tm_objstore *inner, bool take_inner,
                          tm_error *err) TM_WARN_UNUSED;
/** Adds a rule. TM_EINVALID for a bad rule, a non-fault store or too many rules. */
int tm_objstore_fault_add(tm_objstore *s, const tm_fault_rule *rule, tm_error *err)
    TM_WARN_UNUSED;
/** Removes every rule. */
void tm_objstore_fault_clear(tm_objstore *s);
/** Operations of kind op seen since the store opened (TM_FAULT_ANY: all). */
uint64_t tm_objstore_fault_seen(tm_objstore *s, tm_fault_op op);
/** Operations a rule has hit since the store opened. */
uint64_t tm_objstore_fault_fired(tm_objstore *s);
/**
 * The last operation a rule hit: its kind (TM_FAULT_ANY when none has) and
 * its key (a list: its prefix) copied into buf, truncated to cap bytes; ""
 * when none has. For tests that check an error names the faulty object.
 */
tm_fault_op tm_objstore_fault_last_hit(tm_objstore *s, char *buf, size_t cap);

#endif
