/*
 * Unit tests for query parameters and the Arrow types of result columns
 * (engine/sql/params.c, arrowtype.c; SPEC 1.3, D4): Spice's `:name` becomes
 * DuckDB's `$name` only where it is a parameter, values are bound (never
 * pasted into the text) by position or by name with clear errors for a wrong
 * count or name, the gate sees a parameterised statement as it sees text, and
 * each DuckDB type has the arrow-rs serde name of the Arrow type DuckDB
 * exports it as.
 */
#include "engine/db.h"
#include "engine/sql.h"
#include "tm_test.h"
#include "util/alloc.h"

/* ---- :name ------------------------------------------------------------------------------ */

TM_TEST(sql_colon_params_rewrites_only_parameters) {
  struct { const char *in, *want; size_t n; } cases[] = {
      {"SELECT :foo + 1", "SELECT $foo + 1", 1},
      {":a", "$a", 1},
      {"WHERE x = :id AND y IN (:a,:b_2) OR z=:Z", "WHERE x = $id AND y IN ($a,$b_2) OR z=$Z", 4},
      {"SELECT :été", "SELECT $été", 1},
      /* casts, assignments and lone colons */
      {"SELECT x::INT, y :: TEXT, f(a := 1), :1, : x", "SELECT x::INT, y :: TEXT, f(a := 1), :1, : x", 0},
      {"SELECT '1'::DATE + :d", "SELECT '1'::DATE + $d", 1},
      /* slices and struct literals: a colon after an operand or a bracket separates */
      {"SELECT l[1:n], l[a:b], l[:n], l[2:], {'k':v}, {'k': v}, f(x):y, \"c\":z",
       "SELECT l[1:n], l[a:b], l[:n], l[2:], {'k':v}, {'k': v}, f(x):y, \"c\":z", 0},
      /* strings, identifiers, comments, dollar quotes */
      {"SELECT ':a', 'it''s :b', \":c\", \"x\"\":d\" , :e", "SELECT ':a', 'it''s :b', \":c\", \"x\"\":d\" , $e", 1},
      {"SELECT E'\\' :a' , :b", "SELECT E'\\' :a' , $b", 1},
      {"SELECT e'\\\\' , :b", "SELECT e'\\\\' , $b", 1},
      {"SELECT 'x\\' , :b", "SELECT 'x\\' , $b", 1}, /* a standard string: \ does not escape */
      {"SELECT 1 -- :a\n, :b", "SELECT 1 -- :a\n, $b", 1},
      {"SELECT /* :a /* :b */ :c */ :d", "SELECT /* :a /* :b */ :c */ $d", 1},
      {"SELECT $$ :a $$, $t$ :b $ $t$, :c", "SELECT $$ :a $$, $t$ :b $ $t$, $c", 1},
      {"SELECT $1, $name, :x", "SELECT $1, $name, $x", 1},
      {"SELECT a$b:c, :d", "SELECT a$b:c, $d", 1},
      /* `:name$` would become a dollar quote: left alone */
      {"SELECT :a$", "SELECT :a$", 0},
      /* unterminated runs end the scan quietly: DuckDB reports them */
      {"SELECT ':a", "SELECT ':a", 0},
      {"SELECT \":a", "SELECT \":a", 0},
      {"SELECT /* :a", "SELECT /* :a", 0},
      {"SELECT $q$ :a", "SELECT $q$ :a", 0},
      {"SELECT :", "SELECT :", 0},
      {"", "", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *s = tm_strdup(cases[i].in);
    size_t n = tm_sql_colon_params(s, strlen(s));
    TM_ASSERT_MSG(strcmp(s, cases[i].want) == 0 && n == cases[i].n, "%s -> %s (%zu), want %s (%zu)",
                  cases[i].in, s, n, cases[i].want, cases[i].n);
    tm_free(s);
  }
}

/* ---- binding ---------------------------------------------------------------------------- */

static tm_sql_param p_int(int64_t v) { return (tm_sql_param){.kind = TM_SQL_PARAM_INT, .i = v}; }
static tm_sql_param p_dbl(double v) { return (tm_sql_param){.kind = TM_SQL_PARAM_DOUBLE, .d = v}; }
static tm_sql_param p_bool(bool v) { return (tm_sql_param){.kind = TM_SQL_PARAM_BOOL, .b = v}; }
static tm_sql_param p_null(void) { return (tm_sql_param){.kind = TM_SQL_PARAM_NULL}; }
static tm_sql_param p_text(const char *s) {
  return (tm_sql_param){.kind = TM_SQL_PARAM_TEXT, .text = (char *)s, .text_len = strlen(s)};
}
static tm_sql_param named(const char *name, tm_sql_param p) {
  p.name = (char *)name;
  return p;
}

static int buf_sink(const char *data, size_t len, void *payload) {
  return tm_buf_append(payload, data, len, NULL);
}

/* Runs sql with the values; the CSV answer (tm_free), or NULL with err set. */
static char *run(tm_sql_session *s, const char *sql, tm_sql_param *items, size_t n, bool by_name,
                 tm_error *err) {
  tm_sql_params p = {.items = items, .n = n, .named = by_name};
  tm_sql_stmt *st;
  if (tm_sql_prepare_params(s, sql, &p, &st, err) != TM_OK) return NULL;
  tm_out o;
  tm_buf b = TM_BUF_INIT(1 << 20);
  const char *names[8];
  size_t nc = tm_sql_column_count(st);
  TM_ASSERT(nc <= 8);
  for (size_t i = 0; i < nc; i++) names[i] = tm_sql_column_name(st, i);
  TM_ASSERT_OK(tm_out_begin(&o, TM_OUT_CSV, names, nc, buf_sink, &b, err), err);
  int rc;
  while ((rc = tm_sql_step(st, err)) == TM_OK) {
    tm_buf cells = TM_BUF_INIT(1 << 20);
    const char *texts[8];
    size_t lens[8], offs[9];
    tm_cell_kind kinds[8];
    for (size_t i = 0; i < nc; i++) {
      offs[i] = cells.len;
      TM_ASSERT_OK(tm_sql_column_render(st, i, &cells, &kinds[i], err), err);
    }
    offs[nc] = cells.len;
    for (size_t i = 0; i < nc; i++) {
      texts[i] = tm_buf_cstr(&cells) + offs[i];
      lens[i] = offs[i + 1] - offs[i];
    }
    TM_ASSERT_OK(tm_out_row(&o, texts, lens, kinds, err), err);
    tm_buf_dispose(&cells);
  }
  tm_sql_stmt_free(st);
  if (rc != TM_ITEROVER) {
    tm_out_dispose(&o);
    tm_buf_dispose(&b);
    return NULL;
  }
  TM_ASSERT_OK(tm_out_end(&o, err), err);
  return tm_buf_take(&b, NULL);
}

#define ASSERT_RUN(s, sql, items, by_name, want)                                     \
  do {                                                                              \
    tm_error e_;                                                                    \
    char *got_ = run(s, sql, items, sizeof items / sizeof items[0], by_name, &e_);  \
    TM_ASSERT_MSG(got_ != NULL, "%s: %s", sql, e_.message);                         \
    TM_ASSERT_STR_EQ(got_, want);                                                   \
    tm_free(got_);                                                                  \
  } while (0)

#define ASSERT_REFUSED(s, sql, items, n, by_name, needle)                            \
  do {                                                                              \
    tm_error e_;                                                                    \
    tm_error_init(&e_);                                                             \
    char *got_ = run(s, sql, items, n, by_name, &e_);                               \
    TM_ASSERT_MSG(got_ == NULL, "%s: answered %s", sql, got_ ? got_ : "");          \
    TM_ASSERT_INT_EQ(e_.code, TM_EINVALID);                                         \
    TM_ASSERT_CONTAINS(e_.message, needle);                                         \
  } while (0)

static tm_sql_session *session(tm_sql_catalog **cat) {
  tm_error err;
  TM_ASSERT_OK(tm_sql_catalog_new(cat, tm_test_db(), &err), &err);
  tm_sql_session *s;
  TM_ASSERT_OK(tm_sql_session_new(&s, *cat, &err), &err);
  return s;
}

TM_TEST(sql_params_bind_by_position) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  tm_sql_param v[] = {p_int(41), p_text("it's \"quoted\"; DROP TABLE x --"), p_null(), p_bool(true),
                      p_dbl(2.5)};
  ASSERT_RUN(s, "SELECT $1 + 1 AS a, $2 AS b, $3 IS NULL AS c, NOT $4 AS d, $5 * 2 AS e", v, false,
             "a,b,c,d,e\r\n42,\"it's \"\"quoted\"\"; DROP TABLE x --\",true,false,5\r\n");
  ASSERT_RUN(s, "SELECT ? + 1 AS a, ? AS b, ? IS NULL AS c, NOT ? AS d, ? * 2 AS e", v, false,
             "a,b,c,d,e\r\n42,\"it's \"\"quoted\"\"; DROP TABLE x --\",true,false,5\r\n");
  /* A text value is cast where the query needs a timestamp. */
  tm_sql_param ts[] = {p_text("2024-01-02T03:04:05Z")};
  ASSERT_RUN(s, "SELECT count(*) AS n FROM (VALUES (TIMESTAMPTZ '2024-01-02 03:04:05+00'), "
                "(TIMESTAMPTZ '2025-01-01 00:00:00+00')) t(ts) WHERE ts = $1", ts, false, "n\r\n1\r\n");
  /* Wrong counts, named parameters given an array, a value of the wrong type. */
  ASSERT_REFUSED(s, "SELECT $1, $2", v, 1, false, "the query has 2 parameters and \"parameters\" holds 1 value");
  ASSERT_REFUSED(s, "SELECT $1", v, 2, false, "the query has 1 parameter and \"parameters\" holds 2 values");
  ASSERT_REFUSED(s, "SELECT 1", v, 1, false, "the query has 0 parameters");
  ASSERT_REFUSED(s, "SELECT $name", v, 1, false, "named parameter $name: send \"parameters\" as an object");
  tm_sql_param word[] = {p_text("abc")};
  ASSERT_REFUSED(s, "SELECT 1::BIGINT + $1", word, 1, false, "Conversion Error");
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

TM_TEST(sql_params_bind_by_name) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  tm_sql_param v[] = {named("foo", p_int(41)), named("Bar", p_text("x"))};
  ASSERT_RUN(s, "SELECT :foo + 1 AS a, :bar AS b, $FOO AS c", v, true, "a,b,c\r\n42,x,41\r\n");
  /* Spice's spelling and DuckDB's side by side; a string holding `:foo` stays text. */
  ASSERT_RUN(s, "SELECT ':foo' AS t, $foo AS a, :Bar AS b", v, true, "t,a,b\r\n:foo,41,x\r\n");
  /* Positional parameters by their number, as DataFusion's named map allows. */
  tm_sql_param num[] = {named("1", p_int(7))};
  ASSERT_RUN(s, "SELECT $1 AS a", num, true, "a\r\n7\r\n");
  /* Unknown, missing and duplicate names. */
  ASSERT_REFUSED(s, "SELECT :foo", v, 2, true, "the parameter 'Bar' is not in the query");
  ASSERT_REFUSED(s, "SELECT :foo, :baz", v, 2, true, "\"parameters\" has no value for the query's $baz");
  ASSERT_REFUSED(s, "SELECT ?", v, 2, true, "send positional values as an array");
  tm_sql_param dup[] = {named("a", p_int(1)), named("A", p_int(2))};
  ASSERT_REFUSED(s, "SELECT :a", dup, 2, true, "names match in any case");
  ASSERT_REFUSED(s, "SELECT :foo, $1", v, 2, true, "Mixing named and positional");
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

/*
 * A value is bound in the type DuckDB inferred for its place when it converts
 * exactly (params.c bind_typed: no rebind at each execution). Whatever the
 * path, a value means what DuckDB's own cast of the same text means: every
 * text, in every type the fast path knows, gives the answer (or the refusal)
 * of `SELECT '<text>'::T`, run without parameters.
 */
TM_TEST(sql_params_text_values_mean_what_duckdb_casts) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  static const char *const types[] = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
                                      "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE",
                                      "BOOLEAN", "VARCHAR", "HUGEINT", "DECIMAL(10,2)"};
  static const char *const texts[] = {
      "0", "-0", "007", "127", "128", "-128", "-129", "255", "256", "-1", "32767", "65536",
      "2147483647", "2147483648", "-2147483649", "4294967296", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "18446744073709551615", "18446744073709551616", "00000000000000000000001", "1e3", "1.5",
      "2.5", "-0.5", " 42 ", "+5", "", "-", "abc", "0x10", "1_000", "3.4028235e38", "3.5e38",
      "1e39", "1e308", "1e309", "1e-50", "1e-400", "0.1", "-2.5e-3", ".5", "5.", "1e", "1e+",
      "1E2", "inf", "nan", "t", "f", "true", "false", "TRUE", "False", "1", "yes"};
  size_t checked = 0, agreed_errors = 0;
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (size_t xi = 0; xi < sizeof texts / sizeof texts[0]; xi++) {
      char with_param[96], literal[160];
      snprintf(with_param, sizeof with_param, "SELECT $1::%s AS v", types[ti]);
      snprintf(literal, sizeof literal, "SELECT '%s'::%s AS v", texts[xi], types[ti]);
      tm_sql_param v[] = {p_text(texts[xi])};
      tm_error e1, e2;
      tm_error_init(&e1);
      tm_error_init(&e2);
      char *got = run(s, with_param, v, 1, false, &e1);
      char *want = run(s, literal, NULL, 0, false, &e2);
      TM_ASSERT_MSG((got == NULL) == (want == NULL), "%s with '%s': %s / %s: %s", with_param,
                    texts[xi], got ? got : e1.message, literal, want ? want : e2.message);
      if (got) TM_ASSERT_MSG(!strcmp(got, want), "%s with '%s': %s, DuckDB's cast: %s", with_param, texts[xi], got, want);
      else agreed_errors++;
      tm_free(got);
      tm_free(want);
      checked++;
    }
  TM_ASSERT(agreed_errors > 0 && agreed_errors < checked);
  /* Binary integers (the wire protocol's int2/int4/int8) in narrower places, and a column's type. */
  tm_sql_param i[] = {p_int(41)};
  ASSERT_RUN(s, "SELECT $1::INTEGER + 1 AS a, typeof($1::INTEGER) AS t", i, false, "a,t\r\n42,INTEGER\r\n");
  tm_sql_param big[] = {p_int(70000)};
  ASSERT_REFUSED(s, "SELECT $1::SMALLINT AS a", big, 1, false, "out of range");
  tm_sql_param two[] = {p_text("2")};
  ASSERT_RUN(s, "SELECT count(*) AS n FROM (VALUES (1::SMALLINT), (2), (2)) t(x) WHERE x = $1", two,
             false, "n\r\n2\r\n");
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

/* The gate (D4) sees a statement with parameters as it sees text: writes and files are refused. */
TM_TEST(sql_params_gate_still_refuses) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  tm_sql_param v[] = {named("id", p_int(1))};
  tm_sql_param path[] = {p_text("/etc/passwd")};
  ASSERT_REFUSED(s, "DELETE FROM t WHERE id = :id", v, 1, true, "DELETE is not allowed");
  ASSERT_REFUSED(s, "COPY (SELECT :id) TO '/tmp/x.csv'", v, 1, true, "not allowed");
  ASSERT_REFUSED(s, "SELECT * FROM read_csv($1)", path, 1, false, "read_csv is not allowed");
  ASSERT_REFUSED(s, "SELECT current_setting($1)", path, 1, false, "current_setting is not allowed");
  ASSERT_REFUSED(s, "SELECT :id; DROP TABLE t", v, 1, true, "one statement per query");
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}

/* ---- Arrow types ------------------------------------------------------------------------ */

TM_TEST(sql_arrow_type_of_every_duckdb_type) {
  tm_sql_catalog *cat;
  tm_sql_session *s = session(&cat);
  struct { const char *expr, *want; } cases[] = {
      {"true", "\"Boolean\""},
      {"1::TINYINT", "\"Int8\""},
      {"1::SMALLINT", "\"Int16\""},
      {"1::INTEGER", "\"Int32\""},
      {"1::BIGINT", "\"Int64\""},
      {"1::UTINYINT", "\"UInt8\""},
      {"1::USMALLINT", "\"UInt16\""},
      {"1::UINTEGER", "\"UInt32\""},
      {"1::UBIGINT", "\"UInt64\""},
      {"1::HUGEINT", "{\"Decimal128\":[38,0]}"},
      {"1::UHUGEINT", "{\"Decimal128\":[38,0]}"},
      {"1::FLOAT", "\"Float32\""},
      {"1::DOUBLE", "\"Float64\""},
      {"1.5::DECIMAL(4,1)", "{\"Decimal128\":[4,1]}"},
      {"1.5::DECIMAL(38,10)", "{\"Decimal128\":[38,10]}"},
      {"'x'", "\"Utf8\""},
      {"uuid()", "\"Utf8\""},
      {"'x'::BLOB", "\"Binary\""},
      {"'101'::BIT", "\"Binary\""},
      {"DATE '2024-01-01'", "\"Date32\""},
      {"TIME '01:02:03'", "{\"Time64\":\"Microsecond\"}"},
      {"TIMETZ '01:02:03+05'", "{\"Time64\":\"Microsecond\"}"},
      {"TIMESTAMP '2024-01-01'", "{\"Timestamp\":[\"Microsecond\",null]}"},
      {"'2024-01-01'::TIMESTAMP_S", "{\"Timestamp\":[\"Second\",null]}"},
      {"'2024-01-01'::TIMESTAMP_MS", "{\"Timestamp\":[\"Millisecond\",null]}"},
      {"'2024-01-01'::TIMESTAMP_NS", "{\"Timestamp\":[\"Nanosecond\",null]}"},
      {"TIMESTAMPTZ '2024-01-01'", "{\"Timestamp\":[\"Microsecond\",\"UTC\"]}"},
      {"INTERVAL 1 DAY", "{\"Interval\":\"MonthDayNano\"}"},
      {"'a'::ENUM('a', 'b')", "{\"Dictionary\":[\"UInt8\",\"Utf8\"]}"},
      {"NULL", "\"Int32\""}, /* DuckDB types a bare NULL column INTEGER */
      {"[1, 2]", "{\"List\":{\"name\":\"l\",\"data_type\":\"Int32\",\"nullable\":true,\"dict_id\":0,"
                 "\"dict_is_ordered\":false,\"metadata\":{}}}"},
      {"[1, 2]::BIGINT[2]", "{\"FixedSizeList\":[{\"name\":\"\",\"data_type\":\"Int64\",\"nullable\":true,"
                            "\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}},2]}"},
      {"{'a': 1, 'b': 'x'}",
       "{\"Struct\":[{\"name\":\"a\",\"data_type\":\"Int32\",\"nullable\":true,\"dict_id\":0,"
       "\"dict_is_ordered\":false,\"metadata\":{}},{\"name\":\"b\",\"data_type\":\"Utf8\","
       "\"nullable\":true,\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}}]}"},
      {"MAP {'k': 1.5}",
       "{\"Map\":[{\"name\":\"entries\",\"data_type\":{\"Struct\":[{\"name\":\"key\",\"data_type\":"
       "\"Utf8\",\"nullable\":false,\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}},"
       "{\"name\":\"value\",\"data_type\":{\"Decimal128\":[2,1]},\"nullable\":true,\"dict_id\":0,"
       "\"dict_is_ordered\":false,\"metadata\":{}}]},\"nullable\":false,\"dict_id\":0,"
       "\"dict_is_ordered\":false,\"metadata\":{}},false]}"},
      {"union_value(k := 1)::UNION(k INT, v VARCHAR)",
       "{\"Union\":[[[0,{\"name\":\"k\",\"data_type\":\"Int32\",\"nullable\":true,\"dict_id\":0,"
       "\"dict_is_ordered\":false,\"metadata\":{}}],[1,{\"name\":\"v\",\"data_type\":\"Utf8\","
       "\"nullable\":true,\"dict_id\":0,\"dict_is_ordered\":false,\"metadata\":{}}]],\"Sparse\"]}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tm_error err;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s AS c", cases[i].expr);
    tm_sql_stmt *st;
    TM_ASSERT_OK(tm_sql_prepare(s, sql, &st, &err), &err);
    tm_buf b = TM_BUF_INIT(1 << 16);
    TM_ASSERT_OK(tm_sql_column_arrow_type(st, 0, &b, &err), &err);
    TM_ASSERT_MSG(strcmp(tm_buf_cstr(&b), cases[i].want) == 0, "%s: %s, want %s", cases[i].expr,
                  tm_buf_cstr(&b), cases[i].want);
    tm_buf_dispose(&b);
    tm_sql_stmt_free(st);
  }
  tm_sql_session_free(s);
  tm_sql_catalog_free(cat);
}
