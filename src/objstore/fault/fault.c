/*
 * fault.c - the fault-injecting object store (objstore layer, fault
 * backend). See fault.h.
 */
#include "objstore/fault/fault.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "objstore/objstore_int.h"
#include "util/alloc.h"

typedef struct rule_slot {
  tm_fault_rule rule;
  uint64_t seen; /* matching operations since the rule was added */
} rule_slot;

typedef struct fault_store {
  tm_objstore base;
  tm_objstore *inner;
  bool own_inner;
  pthread_mutex_t lock; /* guards rules, n_rules, seen, fired */
  rule_slot rules[TM_FAULT_MAX_RULES];
  size_t n_rules;
  uint64_t seen[TM_FAULT_DELETE + 1]; /* per op; [0] = all */
  uint64_t fired;
  tm_fault_op last_op;                /* of the last operation a rule hit */
  char last_key[1025];                /* its key or list prefix */
} fault_store;

/* The decision for one operation: a copy of the rule that hit, if any. */
typedef struct decision {
  bool hit;
  tm_fault_rule rule;
} decision;

static decision decide(fault_store *f, tm_fault_op op, const char *key) {
  decision d = {false, {0}};
  pthread_mutex_lock(&f->lock);
  f->seen[0]++;
  f->seen[op]++;
  for (size_t i = 0; i < f->n_rules; i++) {
    rule_slot *r = &f->rules[i];
    if (r->rule.op != TM_FAULT_ANY && r->rule.op != op) continue;
    uint64_t n = ++r->seen;
    uint64_t count = r->rule.count ? r->rule.count : 1;
    bool in_window = n >= r->rule.nth && (count == UINT64_MAX || n - r->rule.nth < count);
    if (in_window && !d.hit) {
      d.hit = true;
      d.rule = r->rule;
      f->fired++;
      f->last_op = op;
      snprintf(f->last_key, sizeof f->last_key, "%s", key);
    }
  }
  pthread_mutex_unlock(&f->lock);
  if (d.hit && d.rule.action == TM_FAULT_DELAY) {
    struct timespec ts = {d.rule.delay_ms / 1000, (long)(d.rule.delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    d.hit = false; /* then run normally */
  }
  return d;
}

static int fail_code(const tm_fault_rule *r) { return r->code ? r->code : TM_EIO; }

static int injected(tm_objstore *s, const tm_fault_rule *r, const char *what, const char *key,
                    tm_error *err) {
  return tm_error_set(err, fail_code(r), "%s/%s: injected %s failure (%s)", s->name, key, what,
                      tm_code_name(fail_code(r)));
}

static int fault_stat(tm_objstore *s, const char *key, tm_obj_stat *out, tm_error *err) {
  fault_store *f = (fault_store *)s;
  decision d = decide(f, TM_FAULT_STAT, key);
  if (d.hit && d.rule.action == TM_FAULT_FAIL) return injected(s, &d.rule, "stat", key, err);
  return tm_objstore_stat(f->inner, key, out, err);
}

static int fault_list(tm_objstore *s, const char *prefix, tm_objstore_list_fn fn, void *payload,
                      tm_error *err) {
  fault_store *f = (fault_store *)s;
  decision d = decide(f, TM_FAULT_LIST, prefix);
  if (d.hit && d.rule.action == TM_FAULT_FAIL) return injected(s, &d.rule, "list", prefix, err);
  return tm_objstore_list(f->inner, prefix, fn, payload, err);
}

/* Forwards at most `left` bytes, then swallows the rest (a cut-off get). */
typedef struct cut_sink {
  tm_objstore_sink_fn sink;
  void *payload;
  uint64_t left;
  uint64_t passed;
} cut_sink;

static int cut(const void *data, size_t len, void *payload, tm_error *err) {
  cut_sink *c = payload;
  size_t n = len < c->left ? len : (size_t)c->left;
  c->left -= n;
  c->passed += n;
  return n ? c->sink(data, n, c->payload, err) : TM_OK;
}

static int fault_get(tm_objstore *s, const char *key, uint64_t off, uint64_t len,
                     tm_objstore_sink_fn sink, void *payload, tm_error *err) {
  fault_store *f = (fault_store *)s;
  decision d = decide(f, TM_FAULT_GET, key);
  TM_OBJSTORE_COUNT(s, requests, 1);
  if (!d.hit) return tm_objstore_get(f->inner, key, off, len, sink, payload, err);
  cut_sink c = {sink, payload, d.rule.keep_bytes, 0};
  if (d.rule.action == TM_FAULT_FAIL && d.rule.keep_bytes == 0)
    return injected(s, &d.rule, "read", key, err);
  uint64_t want = len < d.rule.keep_bytes ? len : d.rule.keep_bytes;
  int rc = want ? tm_objstore_get(f->inner, key, off, want, cut, &c, err) : TM_OK;
  TM_OBJSTORE_COUNT(s, bytes_in, c.passed);
  if (rc < 0) return rc;
  if (d.rule.action == TM_FAULT_FAIL)
    return tm_error_set(err, fail_code(&d.rule),
                        "%s/%s: injected read failure after %llu bytes (%s)", s->name, key,
                        (unsigned long long)c.passed, tm_code_name(fail_code(&d.rule)));
  return TM_OK;
}

/* An input showing only the first `size` bytes of another (a torn put). */
typedef struct short_input {
  tm_input base;
  tm_input *inner;
  uint64_t size;
} short_input;

static int short_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                         tm_error *err) {
  short_input *si = (short_input *)in;
  if (off >= si->size) {
    *n_out = 0;
    return TM_OK;
  }
  if (len > si->size - off) len = (size_t)(si->size - off);
  return tm_input_read_at(si->inner, off, buf, len, n_out, err);
}

static int short_size(tm_input *in, uint64_t *out, tm_error *err) {
  TM_UNUSED(err);
  *out = ((short_input *)in)->size;
  return TM_OK;
}

static void short_close(tm_input *in) { tm_input__dispose(in); }

static const tm_input_vtable k_short_vt = {TM_INPUT_VTABLE_VERSION, short_read_at, short_size,
                                           short_close, NULL};

static int fault_put(tm_objstore *s, const char *key, tm_input *body, unsigned flags,
                     tm_error *err) {
  fault_store *f = (fault_store *)s;
  decision d = decide(f, TM_FAULT_PUT, key);
  TM_OBJSTORE_COUNT(s, requests, 1);
  if (d.hit && d.rule.action == TM_FAULT_FAIL) return injected(s, &d.rule, "write", key, err);
  if (!d.hit) return tm_objstore_put_input(f->inner, key, body, flags, err);
  uint64_t size = 0;
  TM_TRY(tm_input_size(body, &size, err));
  short_input si;
  TM_TRY(tm_input__init(&si.base, &k_short_vt, tm_input_name(body), err));
  si.inner = body;
  si.size = size < d.rule.keep_bytes ? size : d.rule.keep_bytes;
  int rc = tm_objstore_put_input(f->inner, key, &si.base, flags, err);
  short_close(&si.base);
  return rc;
}

static int fault_del(tm_objstore *s, const char *key, tm_error *err) {
  fault_store *f = (fault_store *)s;
  decision d = decide(f, TM_FAULT_DELETE, key);
  if (d.hit && d.rule.action == TM_FAULT_FAIL) return injected(s, &d.rule, "delete", key, err);
  return tm_objstore_delete(f->inner, key, err);
}

static void fault_free(tm_objstore *s) {
  fault_store *f = (fault_store *)s;
  if (f->own_inner) tm_objstore_free(f->inner);
  pthread_mutex_destroy(&f->lock);
  tm_objstore__dispose(s);
  tm_free(f);
}

static const tm_objstore_vtable k_fault_vt = TM_OBJSTORE_VTABLE_INIT(
    "fault", fault_stat, fault_list, fault_get, fault_put, fault_del, NULL, fault_free);

int tm_objstore_fault_new(tm_objstore **out, tm_objstore *inner, bool take_inner,
                          tm_error *err) {
  fault_store *f = tm_calloc(1, sizeof *f);
  if (!f) return tm_error_nomem(err);
  int rc = tm_objstore__init(&f->base, &k_fault_vt, inner->name, err);
  if (rc < 0) {
    tm_free(f);
    return rc;
  }
  f->base.read_opts = inner->read_opts;
  f->inner = inner;
  f->own_inner = take_inner;
  pthread_mutex_init(&f->lock, NULL);
  *out = &f->base;
  return TM_OK;
}

static fault_store *as_fault(tm_objstore *s) {
  return s->vt == &k_fault_vt ? (fault_store *)s : NULL;
}

int tm_objstore_fault_add(tm_objstore *s, const tm_fault_rule *rule, tm_error *err) {
  fault_store *f = as_fault(s);
  if (!f) return tm_error_set(err, TM_EINVALID, "%s: not a fault store", s->name);
  if (rule->version != TM_FAULT_RULE_VERSION || rule->nth == 0 ||
      (unsigned)rule->op > TM_FAULT_DELETE || (unsigned)rule->action > TM_FAULT_TRUNCATE ||
      rule->code > 0 || rule->delay_ms < 0)
    return tm_error_set(err, TM_EINVALID, "fault rule: bad version, op, action, nth or code");
  int rc = TM_OK;
  pthread_mutex_lock(&f->lock);
  if (f->n_rules == TM_FAULT_MAX_RULES) {
    rc = tm_error_set(err, TM_EINVALID, "fault store: more than %d rules", TM_FAULT_MAX_RULES);
  } else {
    f->rules[f->n_rules].rule = *rule;
    f->rules[f->n_rules].seen = 0;
    f->n_rules++;
  }
  pthread_mutex_unlock(&f->lock);
  return rc;
}

void tm_objstore_fault_clear(tm_objstore *s) {
  fault_store *f = as_fault(s);
  if (!f) return;
  pthread_mutex_lock(&f->lock);
  f->n_rules = 0;
  pthread_mutex_unlock(&f->lock);
}

uint64_t tm_objstore_fault_seen(tm_objstore *s, tm_fault_op op) {
  fault_store *f = as_fault(s);
  if (!f || (unsigned)op > TM_FAULT_DELETE) return 0;
  pthread_mutex_lock(&f->lock);
  uint64_t n = f->seen[op];
  pthread_mutex_unlock(&f->lock);
  return n;
}

uint64_t tm_objstore_fault_fired(tm_objstore *s) {
  fault_store *f = as_fault(s);
  if (!f) return 0;
  pthread_mutex_lock(&f->lock);
  uint64_t n = f->fired;
  pthread_mutex_unlock(&f->lock);
  return n;
}

tm_fault_op tm_objstore_fault_last_hit(tm_objstore *s, char *buf, size_t cap) {
  fault_store *f = as_fault(s);
  if (cap) buf[0] = '\0';
  if (!f) return TM_FAULT_ANY;
  pthread_mutex_lock(&f->lock);
  tm_fault_op op = f->last_op;
  if (cap) snprintf(buf, cap, "%s", f->last_key);
  pthread_mutex_unlock(&f->lock);
  return op;
}
