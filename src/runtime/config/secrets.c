/*
 * secrets.c - Spice's secret stores behind the ${STORE:KEY} references in
 * params (runtime layer, config; issue 17; docs/CONFIG.md "Secrets").
 *
 * The top-level `secrets:` section lists stores, each `{from, name,
 * description, params}`; without it there is one store, `env`. Only Spice's
 * `env` store exists here: `from: env`, with an optional `params.file_path`.
 * An env store answers KEY as Spice's does: it upper-cases KEY and looks for
 * SPICE_KEY, then KEY, in the environment and then in its dotenv files —
 * `file_path` when it can be read, else `.env.local`, then `.env` — in the
 * config's folder (Spice: the current folder). A variable of the
 * environment wins over a file's; the first file that sets it wins over the
 * later ones (Spice loads the files into the environment without replacing
 * what is set).
 *
 * References: ${secrets:KEY} asks every store, the last declared first;
 * ${NAME:KEY} asks the store named NAME (so ${env:KEY} is the `env` store).
 * Spaces inside the braces are allowed (${ secrets:KEY }). A reference
 * that no store answers is an error naming the reference and where it was
 * looked for, never a value.
 *
 * Every dotenv file consulted, read or missing, is listed in
 * tm_config.secret_files, so that the no-op stamp of `tidemark refresh`
 * (util/noop.h) notices a change.
 */
#include <ctype.h>
#include <string.h>

#include "io/io.h"
#include "runtime/config/config_int.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/noop.h"

#define DOTENV_MAX_BYTES ((size_t)1 << 20)
#define SECRET_KEY_MAX 200

struct tm_cfg_secrets {
  struct store {
    char *name;       /* owned */
    tm_kv vars;       /* from the dotenv files; the first definition wins */
    char *files;      /* owned: the files looked in, ", "-separated, for messages */
  } *stores;          /* owned, in declaration order */
  size_t n;
};

void tm_cfg__secrets_free(tm_cfg_secrets *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    tm_free(s->stores[i].name);
    tm_kv_dispose(&s->stores[i].vars);
    tm_free(s->stores[i].files);
  }
  tm_free(s->stores);
  tm_free(s);
}

/* Records path in cfg->secret_files (the no-op stamp pins it). */
static int note_file(ctx *c, const char *path) {
  tm_config *cfg = c->cfg;
  for (size_t i = 0; i < cfg->n_secret_files; i++)
    if (strcmp(cfg->secret_files[i], path) == 0) return TM_OK;
  char **grown = tm_reallocarray(cfg->secret_files, cfg->n_secret_files + 1, sizeof *grown);
  if (!grown) return tm_error_nomem(c->err);
  cfg->secret_files = grown;
  if (!(grown[cfg->n_secret_files] = tm_strdup(path))) return tm_error_nomem(c->err);
  cfg->n_secret_files++;
  return TM_OK;
}

/* A line that is not KEY=VALUE: warned (Spice warns too) and skipped. */
static int bad_line(ctx *c, yaml_node_t *at, const char *path, int line, const char *why) {
  char msg[1200];
  snprintf(msg, sizeof msg, "%s:%d: %s; the line is skipped", path, line, why);
  return tm_cfg__warn(c, at, msg);
}

/*
 * Parses one dotenv file into vars (keys already there are kept): lines of
 * KEY=VALUE, `export ` allowed before KEY, `#` comments, values bare (a
 * ` #` starts a comment), in single quotes (as written) or double quotes
 * (\n, \t, \\ and \" decoded). TM_ENOTFOUND when the file does not exist.
 */
static int load_dotenv(ctx *c, yaml_node_t *at, const char *path, tm_kv *vars) {
  char *text = NULL;
  size_t len = 0;
  tm_error e;
  tm_error_init(&e);
  int rc = tm_read_file(path, DOTENV_MAX_BYTES, &text, &len, &e);
  if (rc == TM_ENOTFOUND) return rc;
  if (rc < 0) return tm_cfg__fail(c, at, "secrets: %s", e.message);
  tm_buf val = TM_BUF_INIT(DOTENV_MAX_BYTES);
  char key[SECRET_KEY_MAX + 1];
  int line = 0;
  const char *p = text, *end = text + len;
  while (rc >= 0 && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    line++;
    const char *q = p;
    p = eol + 1;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q == eol || *q == '#' || (*q == '\r' && q + 1 == eol)) continue;
    if ((size_t)(eol - q) > 7 && strncmp(q, "export ", 7) == 0) q += 7;
    size_t kn = 0;
    while (q + kn < eol && (isalnum((unsigned char)q[kn]) || q[kn] == '_' || q[kn] == '.')) kn++;
    if (kn == 0 || kn > SECRET_KEY_MAX || isdigit((unsigned char)q[0])) {
      rc = bad_line(c, at, path, line, "not KEY=VALUE");
      continue;
    }
    memcpy(key, q, kn);
    key[kn] = '\0';
    q += kn;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    if (q == eol || *q != '=') {
      rc = bad_line(c, at, path, line, "not KEY=VALUE");
      continue;
    }
    q++;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    tm_buf_clear(&val);
    if (q < eol && (*q == '"' || *q == '\'')) {
      char quote = *q++;
      bool closed = false;
      while (rc >= 0 && q < eol) {
        char ch = *q++;
        if (ch == quote) {
          closed = true;
          break;
        }
        if (quote == '"' && ch == '\\' && q < eol) {
          char esc = *q++;
          ch = esc == 'n' ? '\n' : esc == 't' ? '\t' : esc == 'r' ? '\r' : esc;
        }
        rc = tm_buf_putc(&val, ch, c->err);
      }
      if (rc >= 0 && !closed) {
        rc = bad_line(c, at, path, line, "a quoted value does not end on its line");
        continue;
      }
    } else {
      const char *v_end = q;
      while (v_end < eol && !(*v_end == '#' && v_end > q && (v_end[-1] == ' ' || v_end[-1] == '\t')))
        v_end++;
      while (v_end > q && (v_end[-1] == ' ' || v_end[-1] == '\t' || v_end[-1] == '\r')) v_end--;
      rc = tm_buf_append(&val, q, (size_t)(v_end - q), c->err);
    }
    if (rc >= 0 && !tm_kv_get(vars, key)) rc = tm_kv_set(vars, key, tm_buf_cstr(&val), c->err);
  }
  tm_buf_dispose(&val);
  tm_free(text);
  return rc < 0 ? rc : TM_OK;
}

/* Adds an env store: its dotenv files loaded now. */
static int add_env_store(ctx *c, tm_cfg_secrets *s, yaml_node_t *at, const char *name,
                         const char *file_path) {
  struct store *grown = tm_reallocarray(s->stores, s->n + 1, sizeof *grown);
  if (!grown) return tm_error_nomem(c->err);
  s->stores = grown;
  struct store *st = &s->stores[s->n];
  memset(st, 0, sizeof *st);
  tm_kv_init(&st->vars);
  s->n++;
  if (!(st->name = tm_strdup(name))) return tm_error_nomem(c->err);
  tm_buf files = TM_BUF_INIT(1 << 16);
  int rc = TM_OK;
  bool loaded = false;
  if (file_path) {
    char *path = file_path[0] == '/' ? tm_strdup(file_path) : tm_path_join(c->dir, file_path);
    if (!path) rc = tm_error_nomem(c->err);
    if (rc == TM_OK) rc = note_file(c, path);
    if (rc == TM_OK) rc = tm_buf_puts(&files, path, c->err);
    if (rc == TM_OK) {
      rc = load_dotenv(c, at, path, &st->vars);
      if (rc == TM_OK) {
        loaded = true;
      } else if (rc == TM_ENOTFOUND) {
        char msg[1200];
        snprintf(msg, sizeof msg, "secret file %s not found; reading .env.local and .env instead",
                 path);
        rc = tm_cfg__warn(c, at, msg);
      }
    }
    tm_free(path);
  }
  static const char *const defaults[] = {".env.local", ".env"};
  for (size_t i = 0; rc == TM_OK && !loaded && i < 2; i++) {
    char *path = tm_path_join(c->dir, defaults[i]);
    if (!path) rc = tm_error_nomem(c->err);
    if (rc == TM_OK) rc = note_file(c, path);
    if (rc == TM_OK && files.len) rc = tm_buf_puts(&files, ", ", c->err);
    if (rc == TM_OK) rc = tm_buf_puts(&files, path, c->err);
    if (rc == TM_OK) {
      rc = load_dotenv(c, at, path, &st->vars);
      if (rc == TM_ENOTFOUND) rc = TM_OK;
    }
    tm_free(path);
  }
  if (rc == TM_OK && !(st->files = tm_buf_take(&files, NULL))) rc = tm_error_nomem(c->err);
  tm_buf_dispose(&files);
  return rc;
}

static int load_store(ctx *c, tm_cfg_secrets *s, yaml_node_t *n) {
  if (n->type != YAML_MAPPING_NODE)
    return tm_cfg__fail(c, n, "wrong type: expected a secret store {from, name}, got %s",
                        tm_cfg__kind_name(n));
  static const char *const keys[] = {"from", "name", "description", "params", NULL};
  const char *from = NULL, *name = NULL, *file_path = NULL, *desc = NULL;
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
    yaml_node_t *k = tm_cfg__node_at(c, p->key), *v = tm_cfg__node_at(c, p->value);
    const char *key;
    TM_TRY(tm_cfg__scalar(c, k, "a key", &key));
    if (!tm_cfg__in_list(keys, key))
      return tm_cfg__fail(c, k, "unknown key '%s' (allowed: from, name, description, params)", key);
    size_t old = tm_cfg__path_push_key(c, key);
    int rc = TM_OK;
    if (strcmp(key, "from") == 0) {
      rc = tm_cfg__scalar(c, v, "a secret store", &from);
      if (rc == TM_OK && strcmp(from, "env") != 0)
        rc = tm_cfg__fail(c, v, "secret store '%.*s' is not supported (tidemark has Spice's env "
                          "store: from: env)", (int)strcspn(from, ":"), from);
    }
    else if (strcmp(key, "name") == 0) rc = tm_cfg__scalar(c, v, "a name", &name);
    else if (strcmp(key, "description") == 0) rc = tm_cfg__scalar(c, v, "a description", &desc);
    else if (!tm_cfg__is_null_scalar(v) && v->type != YAML_MAPPING_NODE)
      rc = tm_cfg__fail(c, v, "wrong type: expected a mapping of parameters, got %s",
                        tm_cfg__kind_name(v));
    else if (v->type == YAML_MAPPING_NODE) {
      for (yaml_node_pair_t *q = v->data.mapping.pairs.start; rc == TM_OK && q < v->data.mapping.pairs.top; q++) {
        yaml_node_t *pk = tm_cfg__node_at(c, q->key);
        const char *pname;
        rc = tm_cfg__scalar(c, pk, "a parameter name", &pname);
        if (rc == TM_OK && strcmp(pname, "file_path") != 0)
          rc = tm_cfg__fail(c, pk, "unknown param '%s' of the env secret store (allowed: file_path)",
                            pname);
        if (rc == TM_OK)
          rc = tm_cfg__scalar(c, tm_cfg__node_at(c, q->value), "a file path", &file_path);
      }
    }
    tm_cfg__path_pop(c, old);
    TM_TRY(rc);
  }
  if (!from) return tm_cfg__fail(c, n, "a secret store needs 'from' (env)");
  if (!name) return tm_cfg__fail(c, n, "a secret store needs a 'name'");
  if (strcmp(name, "secrets") == 0)
    return tm_cfg__fail(c, tm_cfg__lookup(c, n, "name"),
                        "'secrets' names every store (${secrets:KEY}); choose another name");
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->stores[i].name, name) == 0)
      return tm_cfg__fail(c, tm_cfg__lookup(c, n, "name"), "duplicate secret store name '%s'", name);
  return add_env_store(c, s, n, name, file_path);
}

int tm_cfg__load_secrets(ctx *c, yaml_node_t *root, yaml_node_t *list) {
  tm_cfg_secrets *s = tm_calloc(1, sizeof *s);
  if (!s) return tm_error_nomem(c->err);
  c->secrets = s;
  size_t old = tm_cfg__path_push_key(c, "secrets");
  int rc = TM_OK;
  if (list && !tm_cfg__is_null_scalar(list)) {
    if (list->type != YAML_SEQUENCE_NODE) {
      rc = tm_cfg__fail(c, list, "wrong type: expected a list of secret stores, got %s",
                        tm_cfg__kind_name(list));
    }
    yaml_node_item_t *items = list->data.sequence.items.start;
    size_t count = rc == TM_OK ? (size_t)(list->data.sequence.items.top - items) : 0;
    for (size_t i = 0; rc == TM_OK && i < count; i++) {
      size_t oi = tm_cfg__path_push_index(c, i);
      rc = load_store(c, s, tm_cfg__node_at(c, items[i]));
      tm_cfg__path_pop(c, oi);
    }
  }
  /* Spice: no store declared, the env store. */
  if (rc == TM_OK && s->n == 0) rc = add_env_store(c, s, list ? list : root, "env", NULL);
  tm_cfg__path_pop(c, old);
  return rc;
}

/* Looks key up in one store; NULL when it has no answer. */
static const char *store_get(const struct store *st, const char *upper, bool *volatile_out) {
  char spice[SECRET_KEY_MAX + 8];
  snprintf(spice, sizeof spice, "SPICE_%s", upper);
  const char *names[] = {spice, upper};
  for (size_t i = 0; i < 2; i++) {
    if (volatile_out) {
      char entry[sizeof spice + 1];
      snprintf(entry, sizeof entry, "%s=", names[i]);
      if (tm_noop_volatile_env(entry)) *volatile_out = true;
    }
    const char *v = getenv(names[i]);
    if (!v) v = tm_kv_get(&st->vars, names[i]);
    if (v) return v;
  }
  return NULL;
}

int tm_cfg__expand(ctx *c, const char *s, char **out, bool *volatile_out, tm_error *err) {
  const tm_cfg_secrets *sec = c->secrets;
  tm_buf b = TM_BUF_INIT(1 << 20);
  const char *p = s;
  int rc = TM_OK;
  while (*p && rc == TM_OK) {
    const char *start = strstr(p, "${");
    if (!start) {
      rc = tm_buf_puts(&b, p, err);
      break;
    }
    rc = tm_buf_append(&b, p, (size_t)(start - p), err);
    if (rc < 0) break;
    const char *close = strchr(start, '}');
    if (!close) {
      rc = tm_error_set(err, TM_EINVALID, "unterminated '${' in '%s'", s);
      break;
    }
    int ref_len = (int)(close - start + 1);
    const char *a = start + 2, *z = close;
    while (a < z && *a == ' ') a++;
    while (z > a && z[-1] == ' ') z--;
    const char *colon = memchr(a, ':', (size_t)(z - a));
    size_t store_len = colon ? (size_t)(colon - a) : 0;
    size_t key_len = colon ? (size_t)(z - colon - 1) : 0;
    if (!colon || store_len == 0 || key_len == 0 || key_len > SECRET_KEY_MAX) {
      rc = tm_error_set(err, TM_EINVALID,
                        "bad reference '%.*s' (write ${secrets:KEY} or ${STORE:KEY})", ref_len,
                        start);
      break;
    }
    char upper[SECRET_KEY_MAX + 1];
    for (size_t i = 0; i < key_len; i++) upper[i] = (char)toupper((unsigned char)colon[1 + i]);
    upper[key_len] = '\0';
    bool all = store_len == 7 && strncmp(a, "secrets", 7) == 0;
    const char *value = NULL;
    bool known = all;
    /* ${secrets:KEY}: the last declared store first (Spice's precedence). */
    for (size_t i = sec ? sec->n : 0; !value && i-- > 0;) {
      const struct store *st = &sec->stores[i];
      if (!all && (strlen(st->name) != store_len || strncmp(st->name, a, store_len) != 0)) continue;
      known = true;
      value = store_get(st, upper, volatile_out);
    }
    if (!known) {
      tm_buf names = TM_BUF_INIT(1 << 12);
      for (size_t i = 0; sec && i < sec->n; i++)
        if (tm_buf_printf(&names, err, "%s%s", i ? ", " : "", sec->stores[i].name) < 0) break;
      rc = tm_error_set(err, TM_EINVALID, "unknown secret store '%.*s' in '%.*s' (stores: %s, "
                        "or 'secrets' for all)", (int)store_len, a, ref_len, start,
                        names.len ? tm_buf_cstr(&names) : "none");
      tm_buf_dispose(&names);
      break;
    }
    if (!value) {
      const char *files = sec && sec->n == 1 ? sec->stores[0].files : NULL;
      rc = tm_error_set(err, TM_EINVALID,
                        "secret '%.*s' not found: no SPICE_%s or %s in the environment or the "
                        "secret files%s%s", ref_len, start, upper, upper, files ? " " : "",
                        files ? files : "");
      break;
    }
    rc = tm_buf_puts(&b, value, err);
    p = close + 1;
  }
  if (rc < 0) {
    tm_buf_dispose(&b);
    return rc;
  }
  *out = tm_buf_take(&b, NULL);
  return *out ? TM_OK : tm_error_nomem(err);
}
