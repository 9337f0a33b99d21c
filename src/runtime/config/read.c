/*
 * read.c - reading the config's YAML nodes (runtime layer): messages that
 * name file, line, column and key path, typed scalars, the key tables'
 * check (unknown keys fail, Spice's keys load only in the form tidemark honours), ${env:NAME}
 * expansion, params and column lists. See config_int.h; config.c walks the
 * sections with these.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime/config/config_int.h"
#include "util/alloc.h"
#include "util/noop.h"

/* ---- messages ---------------------------------------------------------- */

int tm_cfg__failv(ctx *c, const yaml_node_t *node, const char *fmt, va_list ap) {
  char msg[768];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (node)
    return tm_error_set(c->err, TM_EINVALID, "%s:%lu:%lu: %s%s%s", c->file,
                        (unsigned long)node->start_mark.line + 1,
                        (unsigned long)node->start_mark.column + 1, c->path,
                        c->path[0] ? ": " : "", msg);
  return tm_error_set(c->err, TM_EINVALID, "%s: %s%s%s", c->file, c->path,
                      c->path[0] ? ": " : "", msg);
}

int tm_cfg__fail(ctx *c, const yaml_node_t *node, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = tm_cfg__failv(c, node, fmt, ap);
  va_end(ap);
  return rc;
}

/* Appends ".key" or "[i]" to the key path; returns the old length to restore. */
size_t tm_cfg__path_push_key(ctx *c, const char *key) {
  size_t old = strlen(c->path);
  snprintf(c->path + old, sizeof c->path - old, "%s%s", old ? "." : "", key);
  return old;
}

size_t tm_cfg__path_push_index(ctx *c, size_t i) {
  size_t old = strlen(c->path);
  snprintf(c->path + old, sizeof c->path - old, "[%zu]", i);
  return old;
}

void tm_cfg__path_pop(ctx *c, size_t old) { c->path[old] = '\0'; }

int tm_cfg__warn(ctx *c, const yaml_node_t *node, const char *what) {
  char *line = tm_asprintf("%s:%lu: %s: %s", c->file, (unsigned long)node->start_mark.line + 1,
                           c->path, what);
  if (!line) return tm_error_nomem(c->err);
  char **w = tm_reallocarray(c->cfg->warnings, c->cfg->n_warnings + 1, sizeof *w);
  if (!w) {
    tm_free(line);
    return tm_error_nomem(c->err);
  }
  c->cfg->warnings = w;
  w[c->cfg->n_warnings++] = line;
  return TM_OK;
}

/* ---- node access ------------------------------------------------------- */

yaml_node_t *tm_cfg__node_at(ctx *c, int id) { return yaml_document_get_node(c->doc, id); }

const char *tm_cfg__kind_name(const yaml_node_t *n) {
  switch (n->type) {
    case YAML_SCALAR_NODE: return "a value";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
  }
}

bool tm_cfg__is_null_scalar(const yaml_node_t *n) {
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return false;
  const char *v = (const char *)n->data.scalar.value;
  return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
         strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* A scalar's text; fails with "expected <what>, got a list/mapping". */
int tm_cfg__scalar(ctx *c, yaml_node_t *n, const char *what, const char **out) {
  if (n->type != YAML_SCALAR_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected %s, got %s", what, tm_cfg__kind_name(n));
  if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
    return tm_cfg__fail(c, n, "value contains a NUL byte");
  *out = (const char *)n->data.scalar.value;
  return TM_OK;
}

int tm_cfg__get_string(ctx *c, yaml_node_t *n, char **out) {
  const char *s;
  TM_TRY(tm_cfg__scalar(c, n, "a string", &s));
  if (tm_cfg__is_null_scalar(n)) return tm_cfg__fail(c, n, "wrong type: expected a string, got null");
  char *copy = tm_strdup(s);
  if (!copy) return tm_error_nomem(c->err);
  tm_free(*out);
  *out = copy;
  return TM_OK;
}

int tm_cfg__get_bool(ctx *c, yaml_node_t *n, bool *out) {
  const char *s;
  TM_TRY(tm_cfg__scalar(c, n, "true or false", &s));
  if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0) {
    *out = true;
    return TM_OK;
  }
  if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0) {
    *out = false;
    return TM_OK;
  }
  return tm_cfg__fail(c, n, "wrong type: expected true or false, got '%s'", s);
}

int tm_cfg__get_int(ctx *c, yaml_node_t *n, int64_t min, int64_t *out) {
  const char *s;
  TM_TRY(tm_cfg__scalar(c, n, "an integer", &s));
  int64_t v;
  if (tm_parse_int64(s, strlen(s), &v) != TM_OK)
    return tm_cfg__fail(c, n, "wrong type: expected an integer, got '%s'", s);
  if (v < min) return tm_cfg__fail(c, n, "must be at least %lld, got %lld", (long long)min, (long long)v);
  *out = v;
  return TM_OK;
}

int tm_cfg__get_duration(ctx *c, yaml_node_t *n, bool allow_zero, int64_t *out) {
  const char *s;
  TM_TRY(tm_cfg__scalar(c, n, "a duration", &s));
  tm_error derr;
  tm_error_init(&derr);
  if (tm_duration_parse(s, out, &derr) != TM_OK) return tm_cfg__fail(c, n, "%s", derr.message);
  if (!allow_zero && *out == 0) return tm_cfg__fail(c, n, "must be longer than 0s");
  return TM_OK;
}

/* Matches s against a NULL-terminated list; the message lists the allowed values. */
int tm_cfg__get_enum(ctx *c, yaml_node_t *n, const char *const *names, int *out) {
  const char *s;
  TM_TRY(tm_cfg__scalar(c, n, "a value", &s));
  for (int i = 0; names[i]; i++) {
    if (strcmp(s, names[i]) == 0) {
      *out = i;
      return TM_OK;
    }
  }
  char allowed[256] = "";
  for (int i = 0; names[i]; i++) {
    size_t len = strlen(allowed);
    snprintf(allowed + len, sizeof allowed - len, "%s%s", i ? ", " : "", names[i]);
  }
  return tm_cfg__fail(c, n, "bad value '%s' (allowed: %s)", s, allowed);
}

/* ---- key tables ---------------------------------------------------------- */


const tm_cfg_spice_key *tm_cfg__spice_key(const tm_cfg_spice_key *table, const char *key) {
  for (const tm_cfg_spice_key *k = table; k && k->key; k++)
    if (strcmp(k->key, key) == 0) return k;
  return NULL;
}

/* Whether key is `enabled` or ends in `_enabled` (Spice's switches: enabled, zipkin_enabled). */
static bool is_switch(const char *key) {
  size_t n = strlen(key);
  return strcmp(key, "enabled") == 0 || (n > 8 && strcmp(key + n - 8, "_enabled") == 0);
}

int tm_cfg__check_spice(ctx *c, const tm_cfg_spice_key *sk, yaml_node_t *v) {
  bool ok = false;
  const char *shown = "", *allowed = "";
  switch (sk->form) {
    case TM_CFG_FORM_VALUE:
      allowed = sk->value;
      if (v->type != YAML_SCALAR_NODE) {
        shown = "this value";
      } else if (!strcmp(sk->value, "false") || !strcmp(sk->value, "true")) {
        bool b = false;
        TM_TRY(tm_cfg__get_bool(c, v, &b));
        ok = b == (sk->value[0] == 't');
        shown = b ? "true" : "false";
      } else {
        shown = (const char *)v->data.scalar.value;
        ok = strcmp(shown, sk->value) == 0;
      }
      break;
    case TM_CFG_FORM_DISABLED: {
      allowed = "enabled: false";
      shown = "enabled";
      if (tm_cfg__is_null_scalar(v)) {
        ok = true;
        break;
      }
      if (v->type != YAML_MAPPING_NODE) {
        shown = "this value";
        break;
      }
      bool any = false, on = false;
      for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = tm_cfg__node_at(c, p->key);
        if (k->type != YAML_SCALAR_NODE || !is_switch((const char *)k->data.scalar.value)) continue;
        bool b = false;
        size_t old = tm_cfg__path_push_key(c, (const char *)k->data.scalar.value);
        int rc = tm_cfg__get_bool(c, tm_cfg__node_at(c, p->value), &b);
        tm_cfg__path_pop(c, old);
        TM_TRY(rc);
        any = true;
        on = on || b;
      }
      ok = any && !on;
      if (!any) shown = "a setting without enabled: false";
      break;
    }
    case TM_CFG_FORM_EMPTY:
      allowed = "none: an empty list or mapping, or leave the key out";
      shown = "an entry";
      ok = tm_cfg__is_null_scalar(v) ||
           (v->type == YAML_SEQUENCE_NODE && v->data.sequence.items.top == v->data.sequence.items.start) ||
           (v->type == YAML_MAPPING_NODE && v->data.mapping.pairs.top == v->data.mapping.pairs.start);
      break;
    case TM_CFG_FORM_NONE:
      break;
  }
  if (ok) return TM_OK;
  if (sk->form == TM_CFG_FORM_NONE) return tm_cfg__fail(c, v, "not supported: %s", sk->why);
  return tm_cfg__fail(c, v, "%s is not supported: %s (what loads: %s)", shown, sk->why, allowed);
}

bool tm_cfg__in_list(const char *const *list, const char *key) {
  for (int i = 0; list && list[i]; i++)
    if (strcmp(list[i], key) == 0) return true;
  return false;
}

static const tm_cfg_key *find_key(const section *sec, const char *key) {
  for (const tm_cfg_key *k = sec->keys; k->key; k++)
    if (strcmp(k->key, key) == 0) return k;
  return NULL;
}

/*
 * Checks that n is a mapping whose keys are all known, with no duplicates.
 * Ignored keys produce a warning.
 */
int tm_cfg__check_mapping(ctx *c, yaml_node_t *n, const section *sec) {
  if (n->type != YAML_MAPPING_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected a mapping, got %s", tm_cfg__kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key);
    const char *key;
    TM_TRY(tm_cfg__scalar(c, k, "a key", &key));
    for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
      yaml_node_t *k2 = tm_cfg__node_at(c, q->key);
      if (k2->type == YAML_SCALAR_NODE && strcmp((const char *)k2->data.scalar.value, key) == 0)
        return tm_cfg__fail(c, k, "duplicate key '%s'", key);
    }
    if (find_key(sec, key)) continue;
    const tm_cfg_spice_key *sk = tm_cfg__spice_key(sec->spice, key);
    if (sk) {
      size_t old = tm_cfg__path_push_key(c, key);
      int rc = tm_cfg__check_spice(c, sk, tm_cfg__node_at(c, p->value));
      tm_cfg__path_pop(c, old);
      TM_TRY(rc);
      continue;
    }
    char allowed[1024] = "";
    for (const tm_cfg_key *d = sec->keys; d->key; d++) {
      size_t len = strlen(allowed);
      snprintf(allowed + len, sizeof allowed - len, "%s%s", d != sec->keys ? ", " : "", d->key);
    }
    return tm_cfg__fail(c, k, "unknown key '%s' (allowed: %s)", key, allowed);
  }
  return TM_OK;
}

/* Reads one declared key's value into its field. */
static int read_key(ctx *c, const tm_cfg_key *k, yaml_node_t *v, void *obj) {
  void *field = (char *)obj + k->offset;
  int e = 0;
  switch (k->kind) {
    case TM_CFG_BOOL: return tm_cfg__get_bool(c, v, field);
    case TM_CFG_STRING: return tm_cfg__get_string(c, v, field);
    case TM_CFG_DURATION: return tm_cfg__get_duration(c, v, false, field);
    case TM_CFG_DURATION0: return tm_cfg__get_duration(c, v, true, field);
    case TM_CFG_COUNT: return tm_cfg__get_int(c, v, 0, field);
    case TM_CFG_ENUM:
      TM_TRY(tm_cfg__get_enum(c, v, k->names, &e));
      memcpy(field, &e, sizeof e); /* enum fields are int-sized (config.c asserts it) */
      return TM_OK;
    case TM_CFG_PARAMS: return tm_cfg__get_params(c, v, field);
    case TM_CFG_READER: return k->read(c, v, field, obj);
    case TM_CFG_LATER: return TM_OK;
  }
  return TM_OK;
}

int tm_cfg__walk(ctx *c, yaml_node_t *n, const section *sec, void *obj) {
  TM_TRY(tm_cfg__check_mapping(c, n, sec));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    const char *key = (const char *)tm_cfg__node_at(c, p->key)->data.scalar.value;
    const tm_cfg_key *k = find_key(sec, key);
    if (!k) continue; /* a Spice key in its one form, checked by check_mapping */
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = read_key(c, k, tm_cfg__node_at(c, p->value), obj);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/* The value node of key in mapping n, or NULL. */
yaml_node_t *tm_cfg__lookup(ctx *c, yaml_node_t *n, const char *key) {
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key);
    if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
      return tm_cfg__node_at(c, p->value);
  }
  return NULL;
}

/* A mapping of string params; values are scalars, expanded. */
int tm_cfg__get_params(ctx *c, yaml_node_t *n, tm_kv *kv) {
  if (tm_cfg__is_null_scalar(n)) return TM_OK;
  if (n->type != YAML_MAPPING_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected a mapping of parameters, got %s", tm_cfg__kind_name(n));
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key), *v = tm_cfg__node_at(c, p->value);
    const char *key, *value;
    TM_TRY(tm_cfg__scalar(c, k, "a parameter name", &key));
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = tm_cfg__scalar(c, v, "a string, number or boolean", &value);
    char *expanded = NULL;
    if (rc == TM_OK) {
      tm_error e;
      tm_error_init(&e);
      if (tm_cfg__expand(c, value, &expanded, &c->cfg->reads_volatile_env, &e) != TM_OK)
        rc = tm_cfg__fail(c, v, "%s", e.message);
    }
    if (rc == TM_OK) rc = tm_kv_set(kv, key, expanded, c->err);
    tm_free(expanded);
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  return TM_OK;
}

/*
 * A column list: "id", "(a, b)", "a, b", or a YAML list of names.
 * Appends to *cols / *n.
 */
int tm_cfg__parse_column_list(ctx *c, yaml_node_t *n, char ***cols, size_t *n_cols) {
  char **out = NULL;
  size_t count = 0;
  int rc = TM_OK;
  if (n->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         it < n->data.sequence.items.top && rc == TM_OK; it++) {
      const char *s;
      rc = tm_cfg__scalar(c, tm_cfg__node_at(c, *it), "a column name", &s);
      if (rc < 0) break;
      char **grown = tm_reallocarray(out, count + 1, sizeof *out);
      if (!grown) {
        rc = tm_error_nomem(c->err);
        break;
      }
      out = grown;
      out[count] = tm_strdup(s);
      if (!out[count]) rc = tm_error_nomem(c->err);
      else count++;
    }
  } else {
    const char *s;
    rc = tm_cfg__scalar(c, n, "a column name or list", &s);
    tm_strview v = tm_sv_trim(tm_sv_cstr(rc == TM_OK ? s : ""));
    if (rc == TM_OK && v.len >= 2 && v.ptr[0] == '(' && v.ptr[v.len - 1] == ')') {
      v.ptr++;
      v.len -= 2;
    }
    while (rc == TM_OK && v.len > 0) {
      const char *comma = memchr(v.ptr, ',', v.len);
      size_t part_len = comma ? (size_t)(comma - v.ptr) : v.len;
      tm_strview part = tm_sv_trim(tm_sv(v.ptr, part_len));
      if (part.len >= 2 && part.ptr[0] == '"' && part.ptr[part.len - 1] == '"') {
        part.ptr++;
        part.len -= 2;
      }
      if (part.len == 0) {
        rc = tm_cfg__fail(c, n, "empty column name in '%s'", s);
        break;
      }
      char **grown = tm_reallocarray(out, count + 1, sizeof *out);
      if (!grown) {
        rc = tm_error_nomem(c->err);
        break;
      }
      out = grown;
      out[count] = tm_strndup(part.ptr, part.len);
      if (!out[count]) {
        rc = tm_error_nomem(c->err);
        break;
      }
      count++;
      if (!comma) break;
      v.len -= part_len + 1;
      v.ptr += part_len + 1;
    }
  }
  if (rc == TM_OK && count == 0) rc = tm_cfg__fail(c, n, "expected at least one column");
  for (size_t i = 0; rc == TM_OK && i < count; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(out[i], out[j]) == 0) {
        rc = tm_cfg__fail(c, n, "column '%s' listed twice", out[i]);
        break;
      }
  if (rc < 0) {
    for (size_t i = 0; i < count; i++) tm_free(out[i]);
    tm_free(out);
    return rc;
  }
  *cols = out;
  *n_cols = count;
  return TM_OK;
}

