/*
 * fuzz_iceberg_manifest.c - libFuzzer target for Iceberg manifest lists and
 * manifests in Avro (format/iceberg over format/avro). The input is served
 * as every file the table opens, so the same bytes are decoded as a
 * manifest list (then planned as a scan and as "what snapshot 1 added") and
 * as data and delete manifests of a partitioned table (identity, day,
 * bucket and truncate fields), with v2 inheritance.
 *
 * Seed corpus (fuzz/corpora/fuzz_iceberg_manifest/): manifests and
 * manifest lists written by tidemark's own Iceberg writer for a partitioned
 * table (data, position deletes, rewritten manifests with DELETED and
 * EXISTING entries), plus truncated and bit-flipped copies.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/iceberg/iceberg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fuzz_blob {
  const uint8_t *data;
  size_t size;
} fuzz_blob;

static int blob_open(void *payload, const char *path, tm_input **out, tm_error *err) {
  fuzz_blob *b = payload;
  return tm_input_open_memory(out, path, b->data, b->size, false, err);
}

static const char k_meta[] =
    "{\"format-version\": 2, \"table-uuid\": \"f\", \"location\": \"/t\", "
    "\"last-sequence-number\": 3, \"last-updated-ms\": 1, \"last-column-id\": 4, "
    "\"current-schema-id\": 0, \"schemas\": [{\"type\": \"struct\", \"schema-id\": 0, "
    "\"fields\": [{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}, "
    "{\"id\": 2, \"name\": \"ts\", \"required\": false, \"type\": \"timestamptz\"}, "
    "{\"id\": 3, \"name\": \"region\", \"required\": false, \"type\": \"string\"}, "
    "{\"id\": 4, \"name\": \"amount\", \"required\": false, \"type\": \"decimal(10,2)\"}]}], "
    "\"default-spec-id\": 0, \"partition-specs\": [{\"spec-id\": 0, \"fields\": ["
    "{\"name\": \"ts_day\", \"transform\": \"day\", \"source-id\": 2, \"field-id\": 1000}, "
    "{\"name\": \"region\", \"transform\": \"identity\", \"source-id\": 3, \"field-id\": 1001}, "
    "{\"name\": \"id_bucket\", \"transform\": \"bucket[8]\", \"source-id\": 1, \"field-id\": 1002}, "
    "{\"name\": \"amount_trunc\", \"transform\": \"truncate[100]\", \"source-id\": 4, "
    "\"field-id\": 1003}]}, {\"spec-id\": 1, \"fields\": []}], \"last-partition-id\": 1003, "
    "\"default-sort-order-id\": 0, \"sort-orders\": [{\"order-id\": 0, \"fields\": []}], "
    "\"current-snapshot-id\": 1, \"snapshots\": [{\"snapshot-id\": 1, \"sequence-number\": 3, "
    "\"timestamp-ms\": 1, \"summary\": {\"operation\": \"append\"}, \"manifest-list\": "
    "\"/t/metadata/list.avro\"}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_blob blob = {data, size};
  tm_iceberg_io io;
  memset(&io, 0, sizeof io);
  io.version = TM_ICEBERG_IO_VERSION;
  io.payload = &blob;
  io.open = blob_open;
  tm_error err;
  tm_iceberg_table *t = NULL;
  tm_iceberg_open_options o = TM_ICEBERG_OPEN_OPTIONS_INIT;
  o.table_root = "/real";
  if (tm_iceberg_table_from_json(&t, &io, k_meta, sizeof k_meta - 1, NULL, &o, &err) < 0) return 0;
  /* As a manifest list, then whatever it leads to. */
  tm_iceberg_scan *s = NULL;
  if (tm_iceberg_plan_scan(t, NULL, &s, &err) == TM_OK) tm_iceberg_scan_free(s);
  tm_iceberg_added *a = NULL;
  if (tm_iceberg_plan_added(t, 1, &a, &err) == TM_OK) tm_iceberg_added_free(a);
  /* As manifests of either content kind and spec. */
  for (int k = 0; k < 4; k++) {
    tm_iceberg_manifest_file mf;
    memset(&mf, 0, sizeof mf);
    mf.path = "/t/metadata/m.avro";
    mf.spec_id = k & 1;
    mf.content = k >> 1;
    mf.sequence_number = 3;
    mf.added_snapshot_id = 1;
    mf.added_files = mf.existing_files = mf.deleted_files = -1;
    tm_iceberg_manifest *m = NULL;
    if (tm_iceberg_read_manifest(t, &mf, k == 3 ? 1 : -1, &m, &err) == TM_OK) {
      for (size_t i = 0; i < m->n_entries; i++) {
        (void)tm_iceberg_file_may_match(tm_iceberg_table_metadata(t),
                                        tm_iceberg_metadata_current_schema(tm_iceberg_table_metadata(t)),
                                        &m->entries[i], NULL);
      }
      tm_iceberg_manifest_free(m);
    }
  }
  tm_iceberg_table_free(t);
  return 0;
}
