/*
 * bench_follow.c - generates the Iceberg table of bench/follow.sh (issue 7):
 * SNAPSHOTS append snapshots of FILES data files of ROWS rows each, written
 * with tidemark's own Iceberg writer (real Parquet data files with column
 * bounds). Times increase with each snapshot.
 *
 *   bench_follow gen TABLE_DIR SNAPSHOTS FILES ROWS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/iceberg/writer.h"
#include "source/iceberg_local.h"
#include "util/str.h"

static int die(const char *what, const tm_error *err) {
  fprintf(stderr, "bench_follow: %s: %s\n", what, err->message);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 6 || strcmp(argv[1], "gen") != 0) {
    fprintf(stderr, "usage: bench_follow gen TABLE_DIR SNAPSHOTS FILES ROWS\n");
    return 2;
  }
  const char *root = argv[2];
  int64_t snaps, files, rows;
  if (tm_parse_int64(argv[3], strlen(argv[3]), &snaps) || tm_parse_int64(argv[4], strlen(argv[4]), &files) ||
      tm_parse_int64(argv[5], strlen(argv[5]), &rows)) {
    fprintf(stderr, "bench_follow: bad number\n");
    return 2;
  }
  tm_error err;
  tm_error_init(&err);
  tm_iceberg_io io;
  tm_iceberg_io_local(&io);
  tm_iceberg_create_options co = TM_ICEBERG_CREATE_OPTIONS_INIT;
  co.schema_json =
      "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":false,\"type\":\"long\"},"
      "{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
      "{\"id\":3,\"name\":\"v\",\"required\":false,\"type\":\"string\"}]}";
  if (tm_iceberg_create_table(&io, root, &co, &err) != TM_OK) return die("create", &err);
  tm_schema s;
  tm_schema_init(&s);
  if (tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), true, 1, &err) ||
      tm_schema_add(&s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err) ||
      tm_schema_add(&s, "v", tm_type_of(TM_TYPE_UTF8), true, 3, &err))
    return die("schema", &err);
  int64_t id = 0;
  for (int64_t sn = 0; sn < snaps; sn++) {
    tm_iceberg_table *t = NULL;
    tm_iceberg_open_options oo = TM_ICEBERG_OPEN_OPTIONS_INIT;
    oo.table_root = root;
    if (tm_iceberg_table_open(&t, &io, &oo, &err) != TM_OK) return die("open", &err);
    tm_iceberg_commit *c = NULL;
    if (tm_iceberg_commit_begin(&c, t, "append", &err) != TM_OK) return die("commit", &err);
    for (int64_t f = 0; f < files; f++) {
      tm_batch_builder bb;
      tm_batch b;
      if (tm_batch_builder_init(&bb, &s, &err)) return die("builder", &err);
      for (int64_t r = 0; r < rows; r++, id++) {
        char v[32];
        int n = snprintf(v, sizeof v, "v%lld", (long long)id);
        if (tm_colbuilder_append_int(&bb.cols[0], id, &err) ||
            tm_colbuilder_append_int(&bb.cols[1], INT64_C(1704067200000000) + id * 1000000, &err) ||
            tm_colbuilder_append_bytes(&bb.cols[2], v, (size_t)n, &err))
          return die("row", &err);
      }
      if (tm_batch_builder_finish(&bb, &b, &err)) return die("batch", &err);
      tm_iceberg_data_writer *w = NULL;
      tm_iceberg_data_writer_options wo = TM_ICEBERG_DATA_WRITER_OPTIONS_INIT;
      if (tm_iceberg_data_writer_new(&w, t, &wo, &err) || tm_iceberg_data_writer_write(w, &b, &err) ||
          tm_iceberg_data_writer_finish(w, &err))
        return die("data file", &err);
      const tm_iceberg_data_file *df;
      size_t nf = tm_iceberg_data_writer_files(w, &df);
      for (size_t k = 0; k < nf; k++)
        if (tm_iceberg_commit_add_file(c, &df[k], &err)) return die("add file", &err);
      tm_iceberg_data_writer_free(w);
      tm_batch_release(&b);
      tm_batch_builder_dispose(&bb);
    }
    if (tm_iceberg_commit_finish(c, NULL, &err) != TM_OK) return die("finish", &err);
    tm_iceberg_commit_free(c);
    tm_iceberg_table_free(t);
    if ((sn + 1) % 100 == 0) fprintf(stderr, "  %lld snapshots\n", (long long)(sn + 1));
  }
  tm_schema_dispose(&s);
  return 0;
}
