/*
 * fuzz_parquet_page.c - libFuzzer target: one column chunk's pages (format
 * layer). The first 4 bytes choose the column (physical type, output type,
 * optional or required, codec, value count); the rest is the chunk: page
 * headers, levels, dictionary and data pages in any encoding.
 * Seeds: fuzz/corpora/fuzz_parquet_page/ (column chunks cut out of small
 * files, with that 4-byte prefix; see fuzz/corpora/README.md).
 */
#include <stdint.h>
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Output types each physical type may be read as. */
static tm_type pick_type(int phys, int variant, int32_t *type_length) {
  tm_type t = tm_type_of(TM_TYPE_INT32);
  *type_length = -1;
  switch (phys) {
    case 0: return tm_type_of(TM_TYPE_BOOL);
    case 1: {
      static const tm_type_id ids[] = {TM_TYPE_INT32, TM_TYPE_INT8, TM_TYPE_UINT16, TM_TYPE_DATE32,
                                       TM_TYPE_TIME64, TM_TYPE_DECIMAL128};
      t = tm_type_of(ids[variant % 6]);
      if (t.id == TM_TYPE_TIME64) t.unit = TM_UNIT_MICRO;
      if (t.id == TM_TYPE_DECIMAL128) t = tm_type_decimal(9, 2);
      return t;
    }
    case 2:
      if (variant % 3 == 1) return tm_type_timestamp(TM_UNIT_MICRO, true);
      if (variant % 3 == 2) return tm_type_decimal(18, 3);
      return tm_type_of(TM_TYPE_INT64);
    case 3: return tm_type_timestamp(variant % 2 ? TM_UNIT_MICRO : TM_UNIT_NANO, false);
    case 4: return tm_type_of(TM_TYPE_FLOAT32);
    case 5: return tm_type_of(TM_TYPE_FLOAT64);
    case 6:
      if (variant % 3 == 1) return tm_type_of(TM_TYPE_BINARY);
      if (variant % 3 == 2) return tm_type_decimal(20, 2);
      return tm_type_of(TM_TYPE_UTF8);
    default:
      *type_length = 1 + variant % 17;
      if (variant % 5 == 0) {
        *type_length = 2;
        return tm_type_of(TM_TYPE_FLOAT32);
      }
      if (variant % 5 == 1 && *type_length <= 16) return tm_type_decimal(2, 0);
      return tm_type_fixed(*type_length);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4) return 0;
  tm_pq_column_desc d;
  memset(&d, 0, sizeof d);
  d.file = "fuzz.parquet";
  d.name = "c";
  d.phys = data[0] & 7;
  d.type = pick_type(d.phys, data[0] >> 3, &d.type_length);
  d.max_def = data[1] & 1;
  d.codec = (data[1] >> 1) & 7;
  d.verify_crc = (data[1] >> 4) & 1;
  d.num_values = (int64_t)data[2] | (int64_t)data[3] << 8;
  int64_t step = 1 + (data[1] >> 5) * 97;
  size_t len = size - 4;
  uint8_t *chunk = tm_malloc(len ? len : 1);
  if (!chunk) return 0;
  memcpy(chunk, data + 4, len);
  tm_error err;
  tm_pq_column *c;
  if (tm_parquet__column_new(&c, &d, chunk, len, &err) < 0) return 0;
  tm_colbuilder cb;
  tm_colbuilder_init(&cb, d.type, 0);
  for (int64_t done = 0; done < d.num_values; done += step) {
    int64_t k = d.num_values - done < step ? d.num_values - done : step;
    if (tm_parquet__column_read(c, &cb, k, &err) < 0) break;
  }
  tm_colbuilder_dispose(&cb);
  tm_parquet__column_free(c);
  return 0;
}
