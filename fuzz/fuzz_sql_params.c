/*
 * fuzz_sql_params.c - libFuzzer target for what POST /v1/sql reads from a
 * client before DuckDB does (SPEC 1.3, D2, D4): the `:name` rewrite of the
 * SQL text (engine/sql/params.c), Spice's JSON body {"sql", "parameters"}
 * and the Accept header (runtime/query/sqlreq.c). Every input goes through
 * all three.
 *
 *   - rewrite: the text keeps its length, only `:` bytes become `$`, as many
 *     as the call says, and a second pass over its output changes nothing;
 *   - body: a body is read or refused with a message; a read one has a SQL
 *     text without NUL bytes, at most TM_SQL_PARAMS_MAX values, each text
 *     NUL-terminated at its length and each named value with a name;
 *   - Accept: the answer is one of the formats, the same on a second call.
 *
 * Seed corpus (fuzz/corpora/fuzz_sql_params/): SQL with `:name` beside
 * strings, E-strings, quoted identifiers, comments, dollar quotes, casts,
 * slices and struct literals; Spice's bodies (positional and named values of
 * every JSON type, nested values, unknown and duplicate keys, a huge integer,
 * a body cut short); Accept lists with q-values and wildcards.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sql.h"
#include "runtime/query/sqlreq.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what) {
  fprintf(stderr, "fuzz_sql_params: %s\n", what);
  abort();
}

static void check_rewrite(const char *in, size_t n) {
  char *a = tm_malloc(n ? n : 1);
  if (!a) broken("out of memory");
  memcpy(a, in, n);
  size_t k = tm_sql_colon_params(a, n);
  size_t changed = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i] != in[i]) {
      if (in[i] != ':' || a[i] != '$')
        broken("the rewrite changed a byte other than ':'");
      changed++;
    }
  if (changed != k) broken("the rewrite's count is not the bytes it changed");
  if (tm_sql_colon_params(a, n) != 0) broken("a second pass rewrote more");
  tm_free(a);
}

static void check_body(const char *in, size_t n) {
  tm_error err;
  tm_error_init(&err);
  char *sql = NULL;
  bool bind = false;
  tm_sql_params p;
  int rc = tm_sqlreq_parse_json(in, n, &sql, &p, &bind, &err);
  if (rc != TM_OK) {
    if (!err.message[0]) broken("a refused body without a message");
    if (sql || p.items || p.n) broken("a refused body left values set");
    return;
  }
  if (!sql) broken("no SQL");
  if (p.n > TM_SQL_PARAMS_MAX) broken("too many values");
  if (!bind && p.n) broken("values without \"parameters\"");
  for (size_t i = 0; i < p.n; i++) {
    const tm_sql_param *v = &p.items[i];
    if (p.named != (v->name != NULL)) broken("a value's name does not match the form");
    if (v->kind == TM_SQL_PARAM_TEXT && (!v->text || v->text[v->text_len] != '\0'))
      broken("a text value is not NUL-terminated at its length");
  }
  tm_free(sql);
  tm_sql_params_dispose(&p);
}

static void check_accept(const char *in, size_t n) {
  char *a = tm_malloc(n + 1);
  if (!a) broken("out of memory");
  memcpy(a, in, n);
  a[n] = '\0';
  const tm_sqlreq_media *m = tm_sqlreq_negotiate(a);
  if (m && (!m->type || !m->content_type)) broken("a format without its types");
  if (tm_sqlreq_negotiate(a) != m) broken("negotiation is not deterministic");
  tm_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (size_t)1 << 20) return 0;
  const char *in = (const char *)data;
  check_rewrite(in, size);
  check_body(in, size);
  check_accept(in, size);
  return 0;
}
