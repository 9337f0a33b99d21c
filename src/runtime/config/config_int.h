/*
 * config_int.h - what the config loader's files share (runtime layer,
 * private to src/runtime/config/): read.c reads YAML nodes (typed values,
 * key paths and messages that name line and column, the key tables'
 * check, params, column lists); config.c walks the sections.
 */
#ifndef TM_RUNTIME_CONFIG_INT_H
#define TM_RUNTIME_CONFIG_INT_H

#include <stdarg.h>
#include <yaml.h>

#include "runtime/config/config.h"

typedef struct tm_cfg_secrets tm_cfg_secrets;

typedef struct ctx {
  const char *file;     /* name used in messages */
  const char *dir;      /* folder relative paths resolve against */
  yaml_document_t *doc;
  tm_config *cfg;
  tm_error *err;
  char path[256];       /* key path of the node being validated */
  tm_cfg_secrets *secrets; /* owned: the secret stores (secrets.c), loaded before any params */
} ctx;

/*
 * A section's keys, declared: for each key tidemark uses, how its value is
 * read and where it goes (a field at offset in the section's struct). One
 * walk (tm_cfg__walk) checks the mapping against the table and reads every
 * key; what depends on several keys is checked by the section afterwards.
 */
typedef enum tm_cfg_kind {
  TM_CFG_BOOL,      /* bool */
  TM_CFG_STRING,    /* char *, owned */
  TM_CFG_DURATION,  /* int64_t milliseconds, > 0 ("10s", "1h30m") */
  TM_CFG_DURATION0, /* int64_t milliseconds, >= 0 */
  TM_CFG_COUNT,     /* int64_t >= 0 */
  TM_CFG_ENUM,      /* an int-sized enum: the index of the value in names */
  TM_CFG_PARAMS,    /* tm_kv of string params, ${env:NAME} expanded */
  TM_CFG_READER,    /* read(c, value, field, the section's struct) */
  TM_CFG_LATER      /* a known key the section reads itself after the walk */
} tm_cfg_kind;

typedef struct tm_cfg_key {
  const char *key;
  tm_cfg_kind kind;
  size_t offset;            /* of the field in the section's struct */
  const char *const *names; /* TM_CFG_ENUM: the values, in enum order, NULL-terminated */
  int (*read)(ctx *c, yaml_node_t *v, void *field, void *obj); /* TM_CFG_READER */
} tm_cfg_key;

/*
 * A Spice key that tidemark honours in one form only: the form that is what
 * tidemark does loads; any other is refused with `why`, which says what
 * tidemark does instead. No Spice key is accepted and then ignored
 * (docs/SPICE.md).
 */
typedef enum tm_cfg_form {
  TM_CFG_FORM_VALUE,    /* a scalar equal to `value` (false/true: any YAML spelling) */
  TM_CFG_FORM_DISABLED, /* null, or a mapping whose keys named enabled or *_enabled are all
                           false (and there is one; its other keys then have no effect) */
  TM_CFG_FORM_EMPTY,    /* null, an empty list or an empty mapping */
  TM_CFG_FORM_NONE      /* no form: the key is always refused */
} tm_cfg_form;

typedef struct tm_cfg_spice_key {
  const char *key;
  tm_cfg_form form;
  const char *value; /* TM_CFG_FORM_VALUE: the one value that loads */
  const char *why;   /* the refusal's reason: what tidemark does instead */
} tm_cfg_spice_key;

typedef struct section {
  const tm_cfg_key *keys;        /* keys tidemark uses; ends with {NULL} */
  const tm_cfg_spice_key *spice; /* Spice keys honoured in one form; ends with {NULL}, or NULL */
} section;

/* Messages: an error naming file:line:column and the key path; a warning kept in the config. */
int tm_cfg__failv(ctx *c, const yaml_node_t *node, const char *fmt, va_list ap);
int tm_cfg__fail(ctx *c, const yaml_node_t *node, const char *fmt, ...) TM_PRINTF(3, 4);
int tm_cfg__warn(ctx *c, const yaml_node_t *node, const char *what);
/* Appends ".key" or "[i]" to the key path; returns the old length for tm_cfg__path_pop. */
size_t tm_cfg__path_push_key(ctx *c, const char *key);
size_t tm_cfg__path_push_index(ctx *c, size_t i);
void tm_cfg__path_pop(ctx *c, size_t old);

/* Nodes and typed scalars (TM_EINVALID with a message naming the node). */
yaml_node_t *tm_cfg__node_at(ctx *c, int id);
const char *tm_cfg__kind_name(const yaml_node_t *n);
bool tm_cfg__is_null_scalar(const yaml_node_t *n);
int tm_cfg__scalar(ctx *c, yaml_node_t *n, const char *what, const char **out);
int tm_cfg__get_string(ctx *c, yaml_node_t *n, char **out);
int tm_cfg__get_bool(ctx *c, yaml_node_t *n, bool *out);
int tm_cfg__get_int(ctx *c, yaml_node_t *n, int64_t min, int64_t *out);
int tm_cfg__get_duration(ctx *c, yaml_node_t *n, bool allow_zero, int64_t *out);
int tm_cfg__get_enum(ctx *c, yaml_node_t *n, const char *const *names, int *out);

/* Key tables: n is a mapping of known keys, no duplicates; Spice keys in their one form. */
bool tm_cfg__in_list(const char *const *list, const char *key);
/* The entry of table (may be NULL) named key, or NULL. */
const tm_cfg_spice_key *tm_cfg__spice_key(const tm_cfg_spice_key *table, const char *key);
/* Checks the value v of Spice key sk (the key path names it): TM_OK in its one form. */
int tm_cfg__check_spice(ctx *c, const tm_cfg_spice_key *sk, yaml_node_t *v);
int tm_cfg__check_mapping(ctx *c, yaml_node_t *n, const section *sec);
/* Checks n against sec and reads each of its keys into obj, in document order. */
int tm_cfg__walk(ctx *c, yaml_node_t *n, const section *sec, void *obj);
/* The value node of key in mapping n, or NULL. */
yaml_node_t *tm_cfg__lookup(ctx *c, yaml_node_t *n, const char *key);
/*
 * Secret stores (secrets.c): loads the top-level `secrets:` section (NULL:
 * none, so Spice's default env store) into c->secrets; root locates messages.
 */
int tm_cfg__load_secrets(ctx *c, yaml_node_t *root, yaml_node_t *list);
void tm_cfg__secrets_free(tm_cfg_secrets *s);
/*
 * Expands the ${secrets:KEY} / ${STORE:KEY} references in s from the
 * stores. *out: tm_free. TM_EINVALID naming a reference no store answers.
 * *volatile_out is set when a name looked up is one the no-op stamp's key
 * leaves out (tm_noop_volatile_env), and left as it is otherwise.
 */
int tm_cfg__expand(ctx *c, const char *s, char **out, bool *volatile_out, tm_error *err);
/* A mapping of string params, values expanded (${secrets:KEY}, ${env:KEY}). */
int tm_cfg__get_params(ctx *c, yaml_node_t *n, tm_kv *kv);
/* A column list: "id", "(a, b)", "a, b" or a YAML list; appended to *cols / *n_cols. */
int tm_cfg__parse_column_list(ctx *c, yaml_node_t *n, char ***cols, size_t *n_cols);

#endif
