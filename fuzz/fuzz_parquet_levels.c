/*
 * fuzz_parquet_levels.c - libFuzzer target: one column chunk of a leaf of a
 * nested field read in levels mode (format layer, column.c
 * tm_parquet__column_read_levels; issue 16): repetition and definition levels
 * of any width in v1 and v2 pages, then the values of the defined entries.
 * The first 5 bytes choose the column as in fuzz_parquet_page (physical and
 * output type, codec, CRC check, entry count, read step) plus the maximum
 * definition (low 4 bits) and repetition (high 4 bits) levels; the rest is
 * the chunk.
 * Seeds: fuzz/corpora/fuzz_parquet_levels/ (hand-built pages with repetition
 * levels, and flat chunks of fuzz_parquet_page's corpus with a levels byte).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tm_type pick_type(int phys, int variant, int32_t *type_length) {
  *type_length = -1;
  switch (phys) {
    case 0: return tm_type_of(TM_TYPE_BOOL);
    case 1: return variant & 1 ? tm_type_decimal(9, 2) : tm_type_of(TM_TYPE_INT32);
    case 2: return variant & 1 ? tm_type_timestamp(TM_UNIT_MICRO, true) : tm_type_of(TM_TYPE_INT64);
    case 3: return tm_type_timestamp(TM_UNIT_NANO, false);
    case 4: return tm_type_of(TM_TYPE_FLOAT32);
    case 5: return tm_type_of(TM_TYPE_FLOAT64);
    case 6: return tm_type_of(variant & 1 ? TM_TYPE_BINARY : TM_TYPE_UTF8);
    default: *type_length = 1 + variant % 16; return tm_type_fixed(*type_length);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5) return 0;
  tm_pq_column_desc d;
  memset(&d, 0, sizeof d);
  d.file = "fuzz.parquet";
  d.name = "c.list.element";
  d.phys = data[0] & 7;
  d.type = pick_type(d.phys, data[0] >> 3, &d.type_length);
  d.codec = (data[1] >> 1) & 7;
  d.verify_crc = (data[1] >> 4) & 1;
  d.num_values = (int64_t)data[2] | (int64_t)data[3] << 8;
  d.max_def = data[4] & 15;
  d.max_rep = data[4] >> 4;
  d.levels = true;
  int64_t step = 1 + (data[1] >> 5) * 97;
  size_t len = size - 5;
  uint8_t *chunk = tm_malloc(len ? len : 1);
  uint8_t *rep = tm_malloc((size_t)step), *def = tm_malloc((size_t)step);
  if (!chunk || !rep || !def) {
    tm_free(chunk);
    tm_free(rep);
    tm_free(def);
    return 0;
  }
  memcpy(chunk, data + 5, len);
  tm_error err;
  tm_pq_column *c;
  if (tm_parquet__column_new(&c, &d, chunk, len, &err) == TM_OK) {
    tm_colbuilder vals;
    tm_colbuilder_init(&vals, d.type, 0);
    for (int64_t done = 0; done < d.num_values; done += step) {
      int64_t k = d.num_values - done < step ? d.num_values - done : step, nv = 0;
      int64_t before = vals.length;
      if (tm_parquet__column_read_levels(c, k, rep, def, &vals, &nv, &err) < 0) break;
      /* Every level is within its maximum; one value per fully defined entry. */
      int64_t full = 0;
      for (int64_t i = 0; i < k; i++) {
        if (rep[i] > d.max_rep || def[i] > d.max_def) abort();
        full += def[i] == d.max_def;
      }
      if (nv != full || vals.length != before + nv) abort();
    }
    tm_colbuilder_dispose(&vals);
    tm_parquet__column_free(c);
  }
  tm_free(rep);
  tm_free(def);
  return 0;
}
