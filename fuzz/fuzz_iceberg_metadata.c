/*
 * fuzz_iceberg_metadata.c - libFuzzer target for Iceberg table metadata JSON
 * (format/iceberg): parse (plain or gzip), then exercise what readers do
 * with a parsed document: serialise and parse again, look up the current
 * schema, spec and snapshot, and walk the ancestry of every snapshot.
 *
 * Seed corpus (fuzz/corpora/fuzz_iceberg_metadata/): small documents
 * written for this target (v1 with the deprecated single schema, v2 with
 * partition evolution, refs and logs, v3 with defaults and row lineage, a
 * name mapping, nested types, a parent cycle) plus a few broken ones.
 */
#include <stddef.h>
#include <stdint.h>

#include "format/iceberg/iceberg.h"
#include "util/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tm_error err;
  tm_iceberg_metadata *m = NULL;
  if (tm_iceberg_metadata_parse(&m, data, size, "fuzz.metadata.json", &err) < 0) return 0;
  tm_buf out = TM_BUF_INIT((size_t)64 << 20);
  if (tm_iceberg_metadata_to_json(m, &out, &err) == TM_OK) {
    tm_iceberg_metadata *again = NULL;
    if (tm_iceberg_metadata_parse(&again, out.ptr, out.len, "again", &err) == TM_OK) {
      tm_iceberg_metadata_free(again);
    }
  }
  tm_buf_dispose(&out);
  (void)tm_iceberg_metadata_current_schema(m);
  (void)tm_iceberg_metadata_current(m);
  for (size_t i = 0; i < m->n_snapshots; i++) {
    const tm_iceberg_snapshot **chain = NULL;
    size_t n = 0;
    if (tm_iceberg_ancestors_since(m, m->snapshots[i].snapshot_id, -1, &chain, &n, &err) == TM_OK)
      tm_free(chain);
    (void)tm_iceberg_is_ancestor(m, m->snapshots[i].snapshot_id, 1);
    (void)tm_iceberg_snapshot_schema(m, &m->snapshots[i]);
  }
  if (m->name_mapping) (void)tm_iceberg_name_mapping_find(m->name_mapping, "id");
  tm_iceberg_metadata_free(m);
  return 0;
}
