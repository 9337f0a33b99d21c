/*
 * Unit tests for format/puffin: the Puffin layout the writer produces checked
 * byte by byte against format/puffin-spec.md (magic, footer payload, size,
 * flags, blob offsets), a deletion-vector-v1 blob crafted by hand from the
 * Iceberg and RoaringFormatSpec layouts (big-endian length, D1 D3 39 64,
 * portable 64-bit bitmap, big-endian CRC-32), round trips of every container
 * kind, and corrupt inputs refused with an error naming the file. SPEC B12.
 */
#include <stdlib.h>
#include <zlib.h>

#include "format/puffin/puffin.h"
#include "tm_test.h"
#include "util/alloc.h"

static uint32_t rd_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t rd_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int open_mem(const char *name, const void *data, size_t len, tm_puffin_file **pf,
                    tm_error *err) {
  tm_input *in = NULL;
  TM_TRY(tm_input_open_memory(&in, name, data, len, false, err));
  return tm_puffin_open(pf, in, err);
}

/* A Puffin file holding one DV for "s3://b/t/data/a.parquet" over `pos`. */
static void write_dv_file(const int64_t *pos, size_t n, tm_buf *file, int64_t *off,
                          int64_t *len) {
  tm_error err;
  tm_buf blob = TM_BUF_INIT(1 << 24);
  TM_ASSERT_OK(tm_dv_encode(pos, n, &blob, &err), &err);
  tm_puffin_writer w;
  TM_ASSERT_OK(tm_puffin_writer_init(&w, &err), &err);
  char card[32];
  snprintf(card, sizeof card, "%zu", n);
  const char *keys[] = {"referenced-data-file", "cardinality"};
  const char *vals[] = {"s3://b/t/data/a.parquet", card};
  int32_t fields[] = {2147483545};
  TM_ASSERT_OK(tm_puffin_writer_add(&w, TM_PUFFIN_DV_TYPE, fields, 1, -1, -1, keys, vals, 2,
                                    blob.ptr, blob.len, off, len, &err),
               &err);
  TM_ASSERT_OK(tm_puffin_writer_finish(&w, "tidemark test", &err), &err);
  *file = w.out;
  tm_buf_init(&w.out, 0);
  tm_puffin_writer_dispose(&w);
  tm_buf_dispose(&blob);
}

TM_TEST(writer_layout_matches_the_spec) {
  int64_t pos[] = {0, 5, 7};
  tm_buf f;
  int64_t off, len;
  write_dv_file(pos, 3, &f, &off, &len);
  const uint8_t *p = (const uint8_t *)f.ptr;
  /* Magic at the start and the end. */
  TM_ASSERT(memcmp(p, "\x50\x46\x41\x31", 4) == 0);
  TM_ASSERT(memcmp(p + f.len - 4, "PFA1", 4) == 0);
  /* Flags: all zero (payload not compressed). */
  TM_ASSERT(memcmp(p + f.len - 8, "\0\0\0\0", 4) == 0);
  uint32_t psize = rd_le32(p + f.len - 12);
  size_t footer_at = f.len - 12 - psize - 4;
  TM_ASSERT(memcmp(p + footer_at, "PFA1", 4) == 0);
  /* The first blob starts right after the leading magic. */
  TM_ASSERT_INT_EQ(off, 4);
  TM_ASSERT_INT_EQ((int64_t)footer_at, off + len);
  char *json = tm_strndup((const char *)p + footer_at + 4, psize);
  TM_ASSERT_CONTAINS(json, "\"type\":\"deletion-vector-v1\"");
  TM_ASSERT_CONTAINS(json, "\"snapshot-id\":-1");
  TM_ASSERT_CONTAINS(json, "\"sequence-number\":-1");
  TM_ASSERT_CONTAINS(json, "\"offset\":4");
  TM_ASSERT_CONTAINS(json, "\"referenced-data-file\":\"s3://b/t/data/a.parquet\"");
  TM_ASSERT_CONTAINS(json, "\"cardinality\":\"3\"");
  TM_ASSERT(!strstr(json, "compression-codec"));
  tm_free(json);
  /* The DV blob: BE length of magic + vector, magic, vector, BE CRC-32 of magic + vector. */
  const uint8_t *b = p + off;
  uint32_t vlen = rd_be32(b);
  TM_ASSERT_INT_EQ((int64_t)vlen + 8, len);
  TM_ASSERT(memcmp(b + 4, "\xD1\xD3\x39\x64", 4) == 0);
  TM_ASSERT_INT_EQ(rd_be32(b + 4 + vlen), (uint32_t)crc32(0L, b + 4, vlen));
  /* Portable 64-bit bitmap: 1 bucket (8 bytes LE), key 0, cookie 12346 with 1
   * container, descriptive header (key 0, cardinality - 1 = 2), one offset,
   * then the array container 0, 5, 7. */
  static const uint8_t vec[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A, 0x30, 0, 0, 1, 0,
                                0, 0, 0, 0, 2, 0, 16, 0, 0, 0, 0, 0, 5, 0, 7, 0};
  TM_ASSERT_INT_EQ(vlen - 4, sizeof vec);
  TM_ASSERT(memcmp(b + 8, vec, sizeof vec) == 0);
  /* And it reads back. */
  tm_error err;
  tm_puffin_file *pf = NULL;
  TM_ASSERT_OK(open_mem("mem.puffin", f.ptr, f.len, &pf, &err), &err);
  TM_ASSERT_INT_EQ(pf->n_blobs, 1);
  const tm_puffin_blob *bl = tm_puffin_find_blob(pf, off, len);
  TM_ASSERT(bl);
  TM_ASSERT_STR_EQ(bl->type, TM_PUFFIN_DV_TYPE);
  TM_ASSERT_STR_EQ(tm_puffin_blob_prop(bl, "cardinality"), "3");
  TM_ASSERT_INT_EQ(bl->n_fields, 1);
  TM_ASSERT_INT_EQ(bl->fields[0], 2147483545);
  tm_buf raw = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_puffin_read_blob(pf, bl, &raw, &err), &err);
  int64_t *v = NULL;
  size_t n = 0;
  TM_ASSERT_OK(tm_dv_decode((const uint8_t *)raw.ptr, raw.len, 8, 100, &v, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 3);
  TM_ASSERT_INT_EQ(v[0], 0);
  TM_ASSERT_INT_EQ(v[1], 5);
  TM_ASSERT_INT_EQ(v[2], 7);
  tm_free(v);
  tm_buf_dispose(&raw);
  tm_puffin_close(pf);
  tm_buf_dispose(&f);
}

/* Frames a vector as a deletion-vector-v1 blob (length, magic, vector, CRC). */
static size_t frame(const uint8_t *vec, size_t n, uint8_t *out) {
  uint32_t vlen = (uint32_t)n + 4;
  out[0] = (uint8_t)(vlen >> 24);
  out[1] = (uint8_t)(vlen >> 16);
  out[2] = (uint8_t)(vlen >> 8);
  out[3] = (uint8_t)vlen;
  memcpy(out + 4, "\xD1\xD3\x39\x64", 4);
  memcpy(out + 8, vec, n);
  uint32_t crc = (uint32_t)crc32(0L, out + 4, vlen);
  out[8 + n] = (uint8_t)(crc >> 24);
  out[9 + n] = (uint8_t)(crc >> 16);
  out[10 + n] = (uint8_t)(crc >> 8);
  out[11 + n] = (uint8_t)crc;
  return n + 12;
}

TM_TEST(hand_crafted_dv_with_run_containers_and_two_keys) {
  /* Two buckets: key 0 with a run cookie (12347, 2 containers: a run container
   * at key 0 holding 10..14, an array at key 1 holding 65536+3), and key 1 (the
   * position 2^32 + 9) with a no-run cookie. */
  static const uint8_t vec[] = {
      2, 0, 0, 0, 0, 0, 0, 0,                   /* 2 buckets */
      0, 0, 0, 0,                               /* key 0 */
      0x3B, 0x30, 1, 0,                         /* cookie 12347 | (2-1) << 16 */
      0x01,                                     /* container 0 is a run */
      0, 0, 4, 0, 1, 0, 0, 0,                   /* (key 0, card 5), (key 1, card 1) */
      1, 0, 10, 0, 4, 0,                        /* 1 run: 10, +4 */
      3, 0,                                     /* array: 3 */
      1, 0, 0, 0,                               /* key 1 */
      0x3A, 0x30, 0, 0, 1, 0, 0, 0,             /* cookie 12346, 1 container */
      0, 0, 0, 0, 16, 0, 0, 0,                  /* (key 0, card 1), offset 16 */
      9, 0,                                     /* array: 9 */
  };
  uint8_t blob[sizeof vec + 12];
  size_t len = frame(vec, sizeof vec, blob);
  tm_error err;
  int64_t *v = NULL;
  size_t n = 0;
  TM_ASSERT_OK(tm_dv_decode(blob, len, INT64_MAX, 1000, &v, &n, &err), &err);
  int64_t want[] = {10, 11, 12, 13, 14, 65536 + 3, ((int64_t)1 << 32) + 9};
  TM_ASSERT_INT_EQ(n, 7);
  for (size_t i = 0; i < 7; i++) TM_ASSERT_INT_EQ(v[i], want[i]);
  /* Our encoder writes the same positions back to the same bytes. */
  tm_buf enc = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_dv_encode(v, n, &enc, &err), &err);
  TM_ASSERT_INT_EQ(enc.len, len);
  TM_ASSERT(memcmp(enc.ptr, blob, len) == 0);
  tm_buf_dispose(&enc);
  tm_free(v);
  /* Positions past the data file's rows are corrupt; too many is a limit. */
  TM_ASSERT_RC(tm_dv_decode(blob, len, 14, 1000, &v, &n, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "beyond");
  TM_ASSERT_RC(tm_dv_decode(blob, len, INT64_MAX, 6, &v, &n, &err), TM_ETOOLARGE);
}

TM_TEST(round_trip_array_bitset_run_and_high_keys) {
  /* 5000 scattered positions (bitset), a long run, a sparse array, a high key. */
  size_t cap = 20000, n = 0;
  int64_t *pos = tm_calloc(cap, sizeof *pos);
  for (int64_t i = 0; i < 5000; i++) pos[n++] = i * 3;           /* container 0: bitset */
  for (int64_t i = 0; i < 3000; i++) pos[n++] = 65536 * 2 + i;   /* container 2: run */
  for (int64_t i = 0; i < 10; i++) pos[n++] = 65536 * 5 + i * 7; /* container 5: array */
  for (int64_t i = 0; i < 5; i++) pos[n++] = ((int64_t)3 << 32) + i * 2;
  for (int64_t i = 0; i < 4; i++) pos[n++] = ((int64_t)3 << 32) + 65536 * (i + 1); /* >= 4 */
  pos[n++] = ((int64_t)0x7FFFFFFF << 32) + 1;
  tm_error err;
  tm_buf enc = TM_BUF_INIT(1 << 24);
  TM_ASSERT_OK(tm_dv_encode(pos, n, &enc, &err), &err);
  int64_t *v = NULL;
  size_t m = 0;
  TM_ASSERT_OK(tm_dv_decode((const uint8_t *)enc.ptr, enc.len, INT64_MAX, TM_DV_MAX_POSITIONS,
                            &v, &m, &err),
               &err);
  TM_ASSERT_INT_EQ(m, n);
  TM_ASSERT(memcmp(v, pos, n * sizeof *v) == 0);
  tm_free(v);
  /* Empty vector. */
  tm_buf_clear(&enc);
  TM_ASSERT_OK(tm_dv_encode(pos, 0, &enc, &err), &err);
  TM_ASSERT_OK(tm_dv_decode((const uint8_t *)enc.ptr, enc.len, 10, 10, &v, &m, &err), &err);
  TM_ASSERT_INT_EQ(m, 0);
  /* Negative and unsorted input is refused. */
  int64_t bad[] = {3, 2};
  TM_ASSERT_RC(tm_dv_encode(bad, 2, &enc, &err), TM_EINVALID);
  tm_buf_dispose(&enc);
  tm_free(pos);
}

TM_TEST(corrupt_dv_blobs_are_refused) {
  int64_t pos[] = {1, 2, 3, 100, 70000};
  tm_error err;
  tm_buf enc = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_dv_encode(pos, 5, &enc, &err), &err);
  uint8_t *b = (uint8_t *)enc.ptr;
  int64_t *v = NULL;
  size_t n = 0;
  /* Every truncation fails (the length field no longer matches). */
  for (size_t cut = 0; cut < enc.len; cut++) {
    TM_ASSERT_RC(tm_dv_decode(b, cut, INT64_MAX, 100, &v, &n, &err), TM_ECORRUPT);
  }
  /* Every single bit flip fails: the CRC covers magic and vector, the length
   * field and the CRC itself are checked. */
  for (size_t i = 0; i < enc.len; i++) {
    for (int bit = 0; bit < 8; bit++) {
      b[i] ^= (uint8_t)(1u << bit);
      int rc = tm_dv_decode(b, enc.len, INT64_MAX, 100, &v, &n, &err);
      TM_ASSERT_MSG(rc == TM_ECORRUPT, "byte %zu bit %d: rc %d", i, bit, rc);
      b[i] ^= (uint8_t)(1u << bit);
    }
  }
  /* A well-framed vector whose cardinality lies (array of 3 declared 4). */
  static const uint8_t lie[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A, 0x30, 0, 0, 1, 0,
                                0, 0, 0, 0, 3, 0, 16, 0, 0, 0, 0, 0, 5, 0, 7, 0};
  uint8_t blob[sizeof lie + 12];
  size_t len = frame(lie, sizeof lie, blob);
  TM_ASSERT_RC(tm_dv_decode(blob, len, INT64_MAX, 100, &v, &n, &err), TM_ECORRUPT);
  /* Unsorted array values. */
  static const uint8_t uns[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3A, 0x30, 0, 0, 1, 0,
                                0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 7, 0, 5, 0};
  len = frame(uns, sizeof uns, blob);
  TM_ASSERT_RC(tm_dv_decode(blob, len, INT64_MAX, 100, &v, &n, &err), TM_ECORRUPT);
  /* A huge bucket count in a small blob. */
  static const uint8_t many[] = {0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0};
  len = frame(many, sizeof many, blob);
  TM_ASSERT_RC(tm_dv_decode(blob, len, INT64_MAX, 100, &v, &n, &err), TM_ECORRUPT);
  /* A run container claiming 65536 values with a cap of 100: refused before expanding. */
  static const uint8_t run[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3B, 0x30, 0, 0, 1,
                                0, 0, 0xFF, 0xFF, 1, 0, 0, 0, 0xFF, 0xFF};
  len = frame(run, sizeof run, blob);
  TM_ASSERT_RC(tm_dv_decode(blob, len, INT64_MAX, 100, &v, &n, &err), TM_ETOOLARGE);
  TM_ASSERT_OK(tm_dv_decode(blob, len, INT64_MAX, 70000, &v, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 65536);
  tm_free(v);
  tm_buf_dispose(&enc);
}

TM_TEST(corrupt_puffin_files_name_the_file) {
  int64_t pos[] = {4};
  tm_buf f;
  int64_t off, len;
  write_dv_file(pos, 1, &f, &off, &len);
  tm_error err;
  tm_puffin_file *pf = NULL;
  uint8_t *p = (uint8_t *)f.ptr;
  /* Truncations: every one is refused, naming the file. */
  for (size_t cut = 0; cut < f.len; cut += 3) {
    int rc = open_mem("cut.puffin", p, cut, &pf, &err);
    TM_ASSERT_MSG(rc < 0, "cut %zu opened", cut);
    TM_ASSERT_CONTAINS(err.message, "cut.puffin");
  }
  /* Bad leading magic, bad trailing magic, footer size too large. */
  p[0] ^= 1;
  TM_ASSERT_RC(open_mem("a.puffin", p, f.len, &pf, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "a.puffin");
  p[0] ^= 1;
  p[f.len - 1] ^= 1;
  TM_ASSERT_RC(open_mem("b.puffin", p, f.len, &pf, &err), TM_ECORRUPT);
  p[f.len - 1] ^= 1;
  p[f.len - 9] = 0x7F;
  TM_ASSERT_RC(open_mem("c.puffin", p, f.len, &pf, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "footer payload size");
  tm_buf_dispose(&f);
  /* A footer whose blob lies outside the blob area. */
  const char *json = "{\"blobs\":[{\"type\":\"deletion-vector-v1\",\"fields\":[],"
                     "\"snapshot-id\":-1,\"sequence-number\":-1,\"offset\":4,\"length\":99}]}";
  tm_buf g = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_buf_append(&g, "PFA1PFA1", 8, &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&g, json, &err), &err);
  uint8_t tail[12] = {0};
  uint32_t ps = (uint32_t)strlen(json);
  tail[0] = (uint8_t)ps;
  tail[1] = (uint8_t)(ps >> 8);
  memcpy(tail + 8, "PFA1", 4);
  TM_ASSERT_OK(tm_buf_append(&g, tail, 12, &err), &err);
  TM_ASSERT_RC(open_mem("d.puffin", g.ptr, g.len, &pf, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "d.puffin");
  TM_ASSERT_CONTAINS(err.message, "outside the blob area");
  /* The same file with length 0 opens; an unknown codec is refused on read. */
  tm_buf_clear(&g);
  json = "{\"blobs\":[{\"type\":\"x\",\"fields\":[1],\"snapshot-id\":1,"
         "\"sequence-number\":1,\"offset\":4,\"length\":0,\"compression-codec\":\"snappy\"}],"
         "\"properties\":{\"created-by\":\"me\"}}";
  TM_ASSERT_OK(tm_buf_append(&g, "PFA1PFA1", 8, &err), &err);
  TM_ASSERT_OK(tm_buf_puts(&g, json, &err), &err);
  ps = (uint32_t)strlen(json);
  tail[0] = (uint8_t)ps;
  tail[1] = (uint8_t)(ps >> 8);
  TM_ASSERT_OK(tm_buf_append(&g, tail, 12, &err), &err);
  TM_ASSERT_OK(open_mem("e.puffin", g.ptr, g.len, &pf, &err), &err);
  TM_ASSERT_INT_EQ(pf->n_props, 1);
  tm_buf raw = TM_BUF_INIT(1 << 20);
  TM_ASSERT_RC(tm_puffin_read_blob(pf, &pf->blobs[0], &raw, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "snappy");
  tm_puffin_close(pf);
  tm_buf_dispose(&raw);
  tm_buf_dispose(&g);
}

/* Reads a file of the fuzz seed corpus, which tests/node/gen-puffin-fuzz-seeds.mjs
 * writes independently of tidemark's writer (Node, the lz4 and zstd tools). */
static tm_puffin_file *open_seed(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/fuzz/corpora/fuzz_puffin/%s", tm_test_source_dir(), name);
  tm_error err;
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_input_open_file(&in, path, &err), &err);
  tm_puffin_file *pf = NULL;
  TM_ASSERT_OK(tm_puffin_open(&pf, in, &err), &err);
  return pf;
}

static size_t seed_dv(tm_puffin_file *pf, size_t blob, int64_t **v) {
  tm_error err;
  tm_buf raw = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_puffin_read_blob(pf, &pf->blobs[blob], &raw, &err), &err);
  size_t n = 0;
  TM_ASSERT_OK(tm_dv_decode((const uint8_t *)raw.ptr, raw.len, INT64_MAX, 1 << 20, v, &n, &err),
               &err);
  tm_buf_dispose(&raw);
  return n;
}

TM_TEST(independent_files_lz4_footer_zstd_blob_and_offset_headers) {
  tm_puffin_file *pf = open_seed("seed-lz4-footer-zstd-blob");
  TM_ASSERT_INT_EQ(pf->n_blobs, 2);
  TM_ASSERT_STR_EQ(pf->blobs[0].codec, "zstd");
  int64_t *v = NULL;
  TM_ASSERT_INT_EQ(seed_dv(pf, 0, &v), 3);
  TM_ASSERT_INT_EQ(v[0], 3);
  TM_ASSERT_INT_EQ(v[2], 5);
  tm_free(v);
  tm_error err;
  tm_buf raw = TM_BUF_INIT(1 << 20);
  TM_ASSERT_OK(tm_puffin_read_blob(pf, &pf->blobs[1], &raw, &err), &err);
  TM_ASSERT_INT_EQ(raw.len, 64);
  TM_ASSERT_INT_EQ(raw.ptr[63], 7);
  tm_buf_dispose(&raw);
  tm_puffin_close(pf);
  /* 12 containers with runs: a run cookie with an offset header. */
  pf = open_seed("seed-dv-many-containers");
  size_t n = seed_dv(pf, 0, &v);
  TM_ASSERT_INT_EQ(n, 12 + 100);
  TM_ASSERT_INT_EQ(v[1], 32768);
  TM_ASSERT_INT_EQ(v[n - 1], 65536 * 7 + 99);
  tm_free(v);
  tm_puffin_close(pf);
  pf = open_seed("seed-dv-bitset");
  n = seed_dv(pf, 0, &v);
  TM_ASSERT_INT_EQ(n, 5000);
  TM_ASSERT_INT_EQ(v[4999], 14997);
  tm_free(v);
  tm_puffin_close(pf);
}
