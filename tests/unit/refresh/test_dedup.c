/*
 * Unit tests for refresh/dedup: SPEC A3's multiset de-duplication, in memory
 * and spilled past a small budget, with forced hash collisions.
 */
#include "refresh/dedup.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/hash.h"

static void schema3(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "name", tm_type_of(TM_TYPE_UTF8), true, -1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "amount", tm_type_of(TM_TYPE_FLOAT64), true, -1, &err), &err);
}

/* Rows (ts, name, amount) from compact specs; name NULL when k % 7 == 3. */
static void make(tm_batch *b, const int *keys, size_t n) {
  tm_error err;
  tm_schema s;
  schema3(&s);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (size_t i = 0; i < n; i++) {
    int k = keys[i];
    char name[32];
    snprintf(name, sizeof name, "n%d", k % 50);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], k / 10, &err), &err);
    if (k % 7 == 3) TM_ASSERT_OK(tm_colbuilder_append_null(&bb.cols[1], &err), &err);
    else TM_ASSERT_OK(tm_colbuilder_append_bytes(&bb.cols[1], name, strlen(name), &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[2], k == 0 ? -0.0 : k * 0.5, &err), &err);
  }
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_schema_dispose(&s);
}

/* Multiset fingerprint of rows: sum and xor of per-row hashes, and the count. */
typedef struct msum {
  uint64_t sum, x;
  int64_t n;
} msum;

static void add_rows(msum *m, const tm_batch *b) {
  for (int64_t r = 0; r < b->n_rows; r++) {
    uint64_t h = 0;
    for (size_t c = 0; c < b->schema.n_cols; c++) {
      tm_colview v = tm_batch_col(b, c);
      tm_value val;
      tm_colview_get(&v, r, &val);
      h = tm_hash_combine(h, tm_value_hash(&val));
    }
    m->sum += h;
    m->x ^= tm_hash_mix64(h);
    m->n++;
  }
}

/*
 * stored = keys 0..99, each once, plus key 5 twice more;
 * incoming = keys 50..149, with key 60 three times and key 5 once.
 * Expected survivors: 100..149, two more copies of 60 (one cancelled), and
 * nothing for key 5 (stored three times, offered once).
 */
static void run_case(size_t budget, uint64_t mask, bool expect_spill) {
  tm_error err;
  tm_schema s;
  schema3(&s);
  tm_dedup *d;
  TM_ASSERT_OK(tm_dedup_new(&d, &s, budget, tm_test_tmpdir(), &err), &err);
  if (mask != ~(uint64_t)0) tm_dedup__set_hash_mask(d, mask);
  int stored_keys[102];
  for (int i = 0; i < 100; i++) stored_keys[i] = i;
  stored_keys[100] = 5;
  stored_keys[101] = 5;
  tm_batch stored;
  make(&stored, stored_keys, 102);
  TM_ASSERT_OK(tm_dedup_add_stored(d, &stored, &err), &err);
  int in_keys[103];
  size_t n_in = 0;
  for (int i = 50; i < 150; i++) in_keys[n_in++] = i;
  in_keys[n_in++] = 60;
  in_keys[n_in++] = 60;
  in_keys[n_in++] = 5;
  tm_batch incoming, out;
  make(&incoming, in_keys, n_in);
  msum got = {0}, want = {0};
  TM_ASSERT_OK(tm_dedup_filter(d, &incoming, &out, &err), &err);
  add_rows(&got, &out);
  tm_batch_release(&out);
  int rc;
  while ((rc = tm_dedup_next(d, &out, &err)) == TM_OK) {
    add_rows(&got, &out);
    tm_batch_release(&out);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  int want_keys[52];
  size_t nw = 0;
  for (int i = 100; i < 150; i++) want_keys[nw++] = i;
  want_keys[nw++] = 60;
  want_keys[nw++] = 60;
  tm_batch wb;
  make(&wb, want_keys, nw);
  add_rows(&want, &wb);
  TM_ASSERT_INT_EQ(got.n, want.n);
  TM_ASSERT(got.sum == want.sum && got.x == want.x);
  const tm_dedup_stats *st = tm_dedup_get_stats(d);
  TM_ASSERT_INT_EQ(st->stored_rows, 102);
  TM_ASSERT_INT_EQ(st->removed_rows, 51);
  TM_ASSERT_INT_EQ(st->spilled, expect_spill);
  if (mask == 0) TM_ASSERT(st->collisions > 0);
  tm_batch_release(&wb);
  tm_batch_release(&stored);
  tm_batch_release(&incoming);
  tm_dedup_free(d);
  tm_schema_dispose(&s);
}

TM_TEST(A3_multiset_in_memory) { run_case(0, ~(uint64_t)0, false); }

TM_TEST(A3_multiset_spilled_past_budget) { run_case(4096, ~(uint64_t)0, true); }

TM_TEST(A3_hash_collisions_are_confirmed_by_bytes) {
  run_case(0, 0, false);                    /* every row hashes alike */
  run_case(4096, UINT64_C(0xFC00000000000000), true); /* spilled, 64 partitions, collisions */
}

TM_TEST(A3_negative_zero_and_nan_are_one_value) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "x", tm_type_of(TM_TYPE_FLOAT64), true, -1, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[0], 0.0, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[0], __builtin_nan(""), &err), &err);
  tm_batch a, b, out;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &a, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[0], -0.0, &err), &err);
  TM_ASSERT_OK(tm_colbuilder_append_double(&bb.cols[0], -__builtin_nan(""), &err), &err);
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_dedup *d;
  TM_ASSERT_OK(tm_dedup_new(&d, &s, 0, NULL, &err), &err);
  TM_ASSERT_OK(tm_dedup_add_stored(d, &a, &err), &err);
  TM_ASSERT_OK(tm_dedup_filter(d, &b, &out, &err), &err);
  TM_ASSERT_INT_EQ(out.n_rows, 0);
  tm_batch_release(&out);
  tm_batch_release(&a);
  tm_batch_release(&b);
  tm_batch_builder_dispose(&bb);
  tm_dedup_free(d);
  tm_schema_dispose(&s);
}
