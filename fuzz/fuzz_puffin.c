/*
 * fuzz_puffin.c - libFuzzer target for Puffin files and deletion vectors
 * (format/puffin). The input is opened as a Puffin file (magic, footer size,
 * flags, optionally LZ4-compressed footer JSON, blob metadata bounds); every
 * blob it lists is read (lz4 / zstd codecs) and decoded as a
 * deletion-vector-v1 blob; the input is also decoded as a bare DV blob, and
 * a decoded vector is encoded again and must decode to the same positions.
 *
 * Seed corpus (fuzz/corpora/fuzz_puffin/): Puffin files written by
 * tidemark's writer holding deletion vectors with array, bitset and run
 * containers and several 32-bit keys, a footer-only file, a file with an LZ4
 * footer and a zstd blob, bare DV blobs, and truncated copies.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/puffin/puffin.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_dv(const uint8_t *b, size_t len) {
  tm_error err;
  int64_t *v = NULL;
  size_t n = 0;
  if (tm_dv_decode(b, len, INT64_MAX, (size_t)1 << 20, &v, &n, &err) != TM_OK) return;
  tm_buf enc = TM_BUF_INIT((size_t)1 << 26);
  int64_t *w = NULL;
  size_t m = 0;
  if (tm_dv_encode(v, n, &enc, &err) != TM_OK ||
      tm_dv_decode((const uint8_t *)enc.ptr, enc.len, INT64_MAX, (size_t)1 << 20, &w, &m, &err) !=
          TM_OK ||
      m != n || (n && memcmp(v, w, n * sizeof *v) != 0)) {
    abort(); /* lint-ok: a round-trip mismatch is a finding */
  }
  tm_free(w);
  tm_free(v);
  tm_buf_dispose(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_error err;
  check_dv(data, size);
  tm_input *in = NULL;
  if (tm_input_open_memory(&in, "fuzz.puffin", data, size, false, &err) != TM_OK) return 0;
  tm_puffin_file *pf = NULL;
  if (tm_puffin_open(&pf, in, &err) != TM_OK) return 0;
  tm_buf raw = TM_BUF_INIT((size_t)1 << 24);
  for (size_t i = 0; i < pf->n_blobs && i < 64; i++) {
    const tm_puffin_blob *b = &pf->blobs[i];
    (void)tm_puffin_blob_prop(b, "referenced-data-file");
    if (tm_puffin_find_blob(pf, b->offset, b->length) == NULL) abort(); /* lint-ok: finding */
    if (tm_puffin_read_blob(pf, b, &raw, &err) == TM_OK) {
      check_dv((const uint8_t *)raw.ptr, raw.len);
    }
  }
  tm_buf_dispose(&raw);
  tm_puffin_close(pf);
  return 0;
}
