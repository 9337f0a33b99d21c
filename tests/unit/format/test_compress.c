/*
 * Unit tests for format/text/compress (issue 16): gzip, zstd, bzip2 and xz
 * files decompressed as they are read, concatenated streams, truncated and
 * corrupt data named, the decompression-bomb cap, reads out of order, and
 * the names of Spice's file_compression_type.
 */
#include <bzlib.h>
#include <lzma.h>
#include <stdio.h>
#include <zlib.h>
#include <zstd.h>

#include "format/csv/csv.h"
#include "format/text/compress.h"
#include "tm_test.h"
#include "util/alloc.h"

/* Compresses text with c into a new buffer (tm_free). */
static unsigned char *compress_with(tm_compression c, const char *text, size_t len, size_t *out_len) {
  size_t cap = len + len / 2 + 4096;
  unsigned char *out = tm_malloc(cap);
  TM_ASSERT(out);
  switch (c) {
    case TM_COMPRESSION_GZIP: {
      z_stream z;
      memset(&z, 0, sizeof z);
      TM_ASSERT(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
      z.next_in = (unsigned char *)text;
      z.avail_in = (uInt)len;
      z.next_out = out;
      z.avail_out = (uInt)cap;
      TM_ASSERT(deflate(&z, Z_FINISH) == Z_STREAM_END);
      *out_len = cap - z.avail_out;
      deflateEnd(&z);
      break;
    }
    case TM_COMPRESSION_ZSTD: {
      size_t n = ZSTD_compress(out, cap, text, len, 3);
      TM_ASSERT(!ZSTD_isError(n));
      *out_len = n;
      break;
    }
    case TM_COMPRESSION_BZIP2: {
      unsigned n = (unsigned)cap;
      TM_ASSERT(BZ2_bzBuffToBuffCompress((char *)out, &n, (char *)text, (unsigned)len, 1, 0, 0) == BZ_OK);
      *out_len = n;
      break;
    }
    case TM_COMPRESSION_XZ: {
      size_t pos = 0;
      TM_ASSERT(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, (const uint8_t *)text, len, out,
                                        &pos, cap) == LZMA_OK);
      *out_len = pos;
      break;
    }
    default: TM_ASSERT(0);
  }
  return out;
}

/* A CSV of n rows (id, name, amount) and the sum of its ids. */
static char *make_csv(int n, int64_t *sum) {
  tm_buf b;
  tm_buf_init(&b, TM_BUF_UNLIMITED);
  tm_error err;
  TM_ASSERT_OK(tm_buf_append(&b, "id,name,amount\n", 15, &err), &err);
  *sum = 0;
  for (int i = 0; i < n; i++) {
    char line[96];
    int k = snprintf(line, sizeof line, "%d,\"name %d, \"\"q\"\"\",%d.%02d\n", i, i * 7919 % 1000, i, i % 100);
    TM_ASSERT_OK(tm_buf_append(&b, line, (size_t)k, &err), &err);
    *sum += i;
  }
  return tm_buf_take(&b, NULL);
}

/* Reads a compressed CSV through the decompressing input; rows and id sum. */
static int read_compressed(const unsigned char *data, size_t len, tm_compression c, uint64_t cap,
                           int64_t *rows, int64_t *sum, tm_error *err) {
  tm_input *raw = NULL, *in = NULL;
  TM_ASSERT_OK(tm_input_open_memory(&raw, "data.csv.x", data, len, false, err), err);
  int rc = tm_input_open_decompress(&in, raw, c, cap, err);
  tm_schema s;
  tm_schema_init(&s);
  tm_csv_reader *r = NULL;
  if (rc == TM_OK) rc = tm_csv_infer_schema(&s, in, NULL, err);
  if (rc == TM_OK) rc = tm_csv_reader_open(&r, in, &s, NULL, err);
  *rows = *sum = 0;
  tm_batch b;
  while (rc == TM_OK && (rc = tm_csv_reader_next(r, &b, err)) == TM_OK) {
    const struct ArrowArray *ids = b.array.children[0];
    for (int64_t i = 0; i < b.n_rows; i++) *sum += ((const int64_t *)ids->buffers[1])[ids->offset + i];
    *rows += b.n_rows;
    tm_batch_release(&b);
  }
  if (rc == TM_ITEROVER) rc = TM_OK;
  tm_csv_reader_free(r);
  tm_schema_dispose(&s);
  tm_input_close(in);
  return rc;
}

static const tm_compression k_codecs[] = {TM_COMPRESSION_GZIP, TM_COMPRESSION_ZSTD,
                                          TM_COMPRESSION_BZIP2, TM_COMPRESSION_XZ};

TM_TEST(each_codec_reads_a_csv_across_chunks_and_concatenated_streams) {
  int64_t want_sum;
  const int n = 50000; /* ~1.5 MB of text: more than one read chunk */
  char *csv = make_csv(n, &want_sum);
  size_t csv_len = strlen(csv);
  /* Split at a line boundary into two streams back to back (pigz, pbzip2, cat a.gz b.gz). */
  const char *mid = strchr(csv + csv_len / 2, '\n') + 1;
  for (size_t k = 0; k < 4; k++) {
    tm_error err;
    tm_error_init(&err);
    size_t len = 0;
    unsigned char *z = compress_with(k_codecs[k], csv, csv_len, &len);
    int64_t rows, sum;
    TM_ASSERT_OK(read_compressed(z, len, k_codecs[k], 0, &rows, &sum, &err), &err);
    TM_ASSERT_INT_EQ(rows, n);
    TM_ASSERT_INT_EQ(sum, want_sum);

    size_t l1 = 0, l2 = 0;
    unsigned char *a = compress_with(k_codecs[k], csv, (size_t)(mid - csv), &l1);
    unsigned char *b = compress_with(k_codecs[k], mid, csv_len - (size_t)(mid - csv), &l2);
    unsigned char *cat = tm_malloc(l1 + l2);
    memcpy(cat, a, l1);
    memcpy(cat + l1, b, l2);
    TM_ASSERT_OK(read_compressed(cat, l1 + l2, k_codecs[k], 0, &rows, &sum, &err), &err);
    TM_ASSERT_INT_EQ(rows, n);
    TM_ASSERT_INT_EQ(sum, want_sum);

    /* Truncated: a clear error naming the file, never a short silent read. */
    TM_ASSERT_RC(read_compressed(z, len / 2, k_codecs[k], 0, &rows, &sum, &err), TM_ECORRUPT);
    TM_ASSERT_CONTAINS(err.message, "data.csv.x");
    TM_ASSERT_CONTAINS(err.message, tm_compression_name(k_codecs[k]));
    TM_ASSERT_RC(read_compressed(cat, l1 + l2 - 3, k_codecs[k], 0, &rows, &sum, &err), TM_ECORRUPT);
    /* Corrupt: bytes flipped in the middle of the data. gzip checks its CRC at the end of
     * a member, so the garbage may first fail to parse as CSV: an error naming the file
     * either way, never rows. */
    for (size_t i = len / 3; i < len / 3 + 64 && i < len; i++) z[i] ^= 0x5a;
    int rc = read_compressed(z, len, k_codecs[k], 0, &rows, &sum, &err);
    TM_ASSERT_MSG(rc == TM_ECORRUPT || (k_codecs[k] == TM_COMPRESSION_GZIP && rc == TM_EINVALID),
                  "%s: rc %d, %s", tm_compression_name(k_codecs[k]), rc, err.message);
    TM_ASSERT_CONTAINS(err.message, "data.csv.x");
    tm_free(z);
    tm_free(a);
    tm_free(b);
    tm_free(cat);
  }
  tm_free(csv);
}

TM_TEST(the_cap_stops_a_decompression_bomb) {
  /* 16 MiB of zeros compress to a few KiB. */
  size_t big = (size_t)16 << 20;
  char *zeros = tm_calloc(1, big + 1);
  TM_ASSERT(zeros);
  memset(zeros, '0', big);
  zeros[0] = 'a';
  zeros[1] = '\n';
  for (size_t k = 0; k < 4; k++) {
    tm_error err;
    tm_error_init(&err);
    size_t len = 0;
    unsigned char *z = compress_with(k_codecs[k], zeros, big, &len);
    TM_ASSERT(len < big / 100);
    int64_t rows, sum;
    TM_ASSERT_RC(read_compressed(z, len, k_codecs[k], (uint64_t)1 << 20, &rows, &sum, &err), TM_ETOOLARGE);
    TM_ASSERT_CONTAINS(err.message, "data.csv.x: decompresses to more than 1048576 bytes");
    tm_free(z);
  }
  tm_free(zeros);
  TM_ASSERT_INT_EQ(tm_compression_default_cap(10), (uint64_t)1 << 30);
  TM_ASSERT_INT_EQ(tm_compression_default_cap((uint64_t)4 << 30), (uint64_t)4 << 40);
}

TM_TEST(reads_out_of_order_restart_or_skip) {
  const char *text = "0123456789abcdefghijklmnopqrstuvwxyz";
  size_t len = 0;
  unsigned char *z = compress_with(TM_COMPRESSION_ZSTD, text, strlen(text), &len);
  tm_error err;
  tm_error_init(&err);
  tm_input *raw, *in;
  TM_ASSERT_OK(tm_input_open_memory(&raw, "x.zst", z, len, false, &err), &err);
  TM_ASSERT_OK(tm_input_open_decompress(&in, raw, TM_COMPRESSION_ZSTD, 0, &err), &err);
  char buf[64];
  size_t n;
  TM_ASSERT_OK(tm_input_read_at(in, 30, buf, 4, &n, &err), &err); /* skip ahead */
  TM_ASSERT(n == 4 && memcmp(buf, "uvwx", 4) == 0);
  TM_ASSERT_OK(tm_input_read_at(in, 2, buf, 3, &n, &err), &err); /* behind: restart */
  TM_ASSERT(n == 3 && memcmp(buf, "234", 3) == 0);
  TM_ASSERT_OK(tm_input_read_at(in, 34, buf, sizeof buf, &n, &err), &err); /* short: the end */
  TM_ASSERT(n == 2 && memcmp(buf, "yz", 2) == 0);
  TM_ASSERT_OK(tm_input_read_at(in, 100, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  uint64_t size;
  TM_ASSERT_OK(tm_input_size(in, &size, &err), &err);
  TM_ASSERT(size == UINT64_MAX);
  tm_input_close(in);
  tm_free(z);
}

TM_TEST(names_and_extensions) {
  tm_error err;
  tm_error_init(&err);
  tm_compression c;
  const char *ok[][2] = {{"GZIP", "gzip"}, {"zstd", "zstd"}, {"BZip2", "bzip2"}, {"xz", "xz"},
                         {"UNCOMPRESSED", "uncompressed"}, {"", "uncompressed"}};
  for (size_t i = 0; i < 6; i++) {
    TM_ASSERT_OK(tm_compression_parse(&c, ok[i][0], &err), &err);
    TM_ASSERT_STR_EQ(tm_compression_name(c), ok[i][1]);
  }
  TM_ASSERT_RC(tm_compression_parse(&c, "lz4", &err), TM_EINVALID);
  TM_ASSERT_STR_EQ(err.message, "bad file_compression_type 'lz4' (allowed: gzip, zstd, bzip2, xz, uncompressed)");
  size_t stem;
  TM_ASSERT_INT_EQ(tm_compression_of_name("a/b.csv.gz", &stem), TM_COMPRESSION_GZIP);
  TM_ASSERT_INT_EQ(stem, 7);
  TM_ASSERT_INT_EQ(tm_compression_of_name("b.JSONL.ZST", &stem), TM_COMPRESSION_ZSTD);
  TM_ASSERT_INT_EQ(tm_compression_of_name("b.tsv.bz2", &stem), TM_COMPRESSION_BZIP2);
  TM_ASSERT_INT_EQ(tm_compression_of_name("b.json.xz", &stem), TM_COMPRESSION_XZ);
  TM_ASSERT_INT_EQ(tm_compression_of_name("b.csv", &stem), TM_COMPRESSION_NONE);
  TM_ASSERT_INT_EQ(stem, 5);
  TM_ASSERT_INT_EQ(tm_compression_of_name(".gz", &stem), TM_COMPRESSION_NONE);
}
