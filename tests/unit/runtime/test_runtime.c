/*
 * Unit tests for the runtime's pieces that need no server: listen addresses
 * (D4 loopback default), API key comparison, retry backoff (C4), snapshot
 * keys, and the snapshot bootstrap discarding the saved Iceberg snapshot
 * (C2, B9) on sqlite and cayenne. The server itself is tested end to end by
 * tests/integration/test_runtime_*.sh.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "engine/backup.h"
#include "runtime/http/http.h"
#include "runtime/runtime_int.h"
#include "runtime/status.h"
#include "tm_test.h"
#include "util/alloc.h"

static int port_of(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET ? ntohs(((const struct sockaddr_in *)ss)->sin_port)
                                  : ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

TM_TEST(http_parse_addr_forms) {
  tm_error err;
  struct sockaddr_storage ss;
  socklen_t len;
  bool lb;
  TM_ASSERT_OK(tm_http_parse_addr("127.0.0.1:8090", &ss, &len, &lb, &err), &err);
  TM_ASSERT(ss.ss_family == AF_INET && port_of(&ss) == 8090 && lb);
  TM_ASSERT_OK(tm_http_parse_addr("9999", &ss, &len, &lb, &err), &err);
  TM_ASSERT(port_of(&ss) == 9999 && lb); /* a bare port is loopback (D4) */
  TM_ASSERT_OK(tm_http_parse_addr(":0", &ss, &len, &lb, &err), &err);
  TM_ASSERT(port_of(&ss) == 0 && lb);
  TM_ASSERT_OK(tm_http_parse_addr("[::1]:80", &ss, &len, &lb, &err), &err);
  TM_ASSERT(ss.ss_family == AF_INET6 && port_of(&ss) == 80 && lb);
  TM_ASSERT_OK(tm_http_parse_addr("0.0.0.0:8090", &ss, &len, &lb, &err), &err);
  TM_ASSERT(!lb);
  TM_ASSERT_OK(tm_http_parse_addr("localhost:1", &ss, &len, &lb, &err), &err);
  TM_ASSERT(lb);
  const char *bad[] = {"", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:80",
                       "[::1]80", "host:port", "no.such.host.invalid:80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = tm_http_parse_addr(bad[i], &ss, &len, &lb, &err);
    TM_ASSERT_MSG(rc == TM_EINVALID, "'%s' accepted (%d)", bad[i], rc);
  }
}

TM_TEST(http_key_equal) {
  TM_ASSERT(tm_http_key_equal("s3cret", 6, "s3cret"));
  TM_ASSERT(!tm_http_key_equal("s3cre", 5, "s3cret"));
  TM_ASSERT(!tm_http_key_equal("s3cretX", 7, "s3cret"));
  TM_ASSERT(!tm_http_key_equal("S3cret", 6, "s3cret"));
  TM_ASSERT(!tm_http_key_equal("", 0, "s3cret"));
}

TM_TEST(retry_backoff_doubles_and_caps) {
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 1), 1000);
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 2), 2000);
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 5), 16000);
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 9), 256000);
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 10), 300000);
  TM_ASSERT_INT_EQ(tm_rt__backoff_ms(1000, 300000, 1000), 300000);
}

TM_TEST(snapshot_key_layout) {
  /* 2026-11-30T03:08:13.500Z */
  int64_t ms = INT64_C(1796008093500);
  char *k = tm_rt__snapshot_key("backups/tm", "events", "sqlite", ms);
  TM_ASSERT_STR_EQ(k, "backups/tm/dataset=events/events_20261130T030813Z.sqlite");
  tm_free(k);
  k = tm_rt__snapshot_key("", "a.b-c", "duckdb", 0);
  TM_ASSERT_STR_EQ(k, "dataset=a.b-c/a.b-c_19700101T000000Z.duckdb");
  tm_free(k);
}

TM_TEST(runtime_new_checks_addresses) {
  tm_error err;
  tm_config cfg;
  const char *yaml = "version: v1\nkind: Spicepod\nname: x\ndatasets: []\n";
  TM_ASSERT_OK(tm_config_load_text(&cfg, yaml, strlen(yaml), "t.yaml", tm_test_tmpdir(), &err), &err);
  tm_runtime_options o;
  tm_runtime_options_init(&o);
  o.http_addr = "127.0.0.1:99999";
  tm_runtime *rt = NULL;
  TM_ASSERT_RC(tm_runtime_new(&rt, &cfg, &o, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "bad port");
  o.http_addr = NULL;
  o.metrics_addr = "nowhere.invalid:1";
  TM_ASSERT_RC(tm_runtime_new(&rt, &cfg, &o, &err), TM_EINVALID);
  o.metrics_addr = "off";
  TM_ASSERT_OK(tm_runtime_new(&rt, &cfg, &o, &err), &err);
  TM_ASSERT(tm_runtime_ready(rt)); /* no dataset: ready */
  tm_runtime_free(rt);
  tm_config_dispose(&cfg);
}

/* Builds a file-mode acceleration holding rows and a saved Iceberg snapshot. */
static void make_acceleration(const tm_dataset_def *d) {
  tm_error err;
  tm_schema s;
  tm_schema_init(&s);
  TM_ASSERT_OK(tm_schema_add(&s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(&s, "ts", tm_type_timestamp(TM_UNIT_MICRO, true), true, 2, &err), &err);
  tm_engine_options eo;
  tm_kv oc;
  tm_kv_init(&oc);
  tm_accel_engine_options(d, tm_test_db(), &eo, &oc);
  tm_engine *e = NULL;
  TM_ASSERT_OK(tm_engine_open(&e, d->acceleration.engine, &s, &eo, &err), &err);
  tm_batch_builder bb;
  TM_ASSERT_OK(tm_batch_builder_init(&bb, &s, &err), &err);
  for (int i = 0; i < 3; i++) {
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[0], i, &err), &err);
    TM_ASSERT_OK(tm_colbuilder_append_int(&bb.cols[1], INT64_C(1700000000000000) + i, &err), &err);
  }
  tm_batch b;
  TM_ASSERT_OK(tm_batch_builder_finish(&bb, &b, &err), &err);
  tm_batch_builder_dispose(&bb);
  tm_kv st;
  tm_kv_init(&st);
  TM_ASSERT_OK(tm_kv_set(&st, TM_STATE_SNAPSHOT_ID, "4242", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&st, TM_STATE_TABLE_UUID, "0f0e", &err), &err);
  TM_ASSERT_OK(tm_kv_set(&st, TM_STATE_SCHEMA, "fp", &err), &err);
  tm_engine_txn *t;
  TM_ASSERT_OK(tm_engine_begin(e, TM_TXN_APPEND, &t, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_write(t, &b, &err), &err);
  TM_ASSERT_OK(tm_engine_txn_commit(t, &st, NULL, &err), &err);
  tm_batch_release(&b);
  tm_kv_dispose(&st);
  tm_engine_release(e);
  tm_kv_dispose(&oc);
  tm_schema_dispose(&s);
}

TM_TEST(bootstrap_restores_and_discards_iceberg_state) {
  const char *engines[] = {"sqlite", "cayenne"};
  for (size_t k = 0; k < 2; k++) {
    tm_error err;
    char dir[512], yaml[2048];
    snprintf(dir, sizeof dir, "%s/%s", tm_test_tmpdir(), engines[k]);
    snprintf(yaml, sizeof yaml,
             "version: v1\nkind: Spicepod\nname: b\n"
             "snapshots: {enabled: true, location: 'file://%s/snaps/root'}\n"
             "datasets:\n"
             "  - from: iceberg:file://%s/warehouse/t\n"
             "    name: events\n"
             "    time_column: ts\n"
             "    acceleration: {engine: %s, mode: file, refresh_mode: append, snapshots: enabled}\n",
             dir, dir, engines[k]);
    tm_config cfg;
    TM_ASSERT_OK(tm_config_load_text(&cfg, yaml, strlen(yaml), "b.yaml", dir, &err), &err);
    tm_runtime_options o;
    tm_runtime_options_init(&o);
    o.metrics_addr = "off";
    tm_runtime *rt = NULL;
    TM_ASSERT_OK(tm_runtime_new(&rt, &cfg, &o, &err), &err);
    tm_rt_dataset *ds = tm_rt__find(rt, "events");
    TM_ASSERT(ds && tm_rt__snapshots_bootstrap(rt, ds->def) && tm_rt__snapshots_create(rt, ds->def));

    /* No snapshot yet: nothing to restore. */
    bool restored = true;
    TM_ASSERT_RC(tm_rt__snapshot_bootstrap(rt, ds, false, &restored, &err), TM_ENOTFOUND);
    TM_ASSERT(!restored);

    /* Put a snapshot of an acceleration with a saved Iceberg snapshot at the location. */
    make_acceleration(ds->def);
    tm_engine_options eo;
    tm_kv oc;
    tm_kv_init(&oc);
    tm_accel_engine_options(ds->def, tm_test_db(), &eo, &oc);
    tm_engine *e = NULL;
    TM_ASSERT_OK(tm_engine_open(&e, ds->def->acceleration.engine, NULL, &eo, &err), &err);
    const char *local = tm_test_path("snap.bin");
    TM_ASSERT_OK(tm_engine_backup(e, local, &err), &err);
    tm_engine_release(e);
    char *key = tm_rt__snapshot_key(rt->snap_prefix, "events",
                                    tm_engine_backup_ext(ds->def->acceleration.engine),
                                    INT64_C(1700000000000));
    TM_ASSERT_STR_EQ(key, engines[k][0] == 's'
                              ? "root/dataset=events/events_20231114T221320Z.sqlite"
                              : "root/dataset=events/events_20231114T221320Z.duckdb");
    TM_ASSERT_OK(tm_objstore_put_file(rt->snap_store, key, local, TM_OBJ_PUT_ATOMIC, &err), &err);

    /* The acceleration exists: bootstrap leaves it alone. */
    TM_ASSERT_OK(tm_rt__snapshot_bootstrap(rt, ds, false, &restored, &err), &err);
    TM_ASSERT(!restored);

    /* Missing: restored, and the saved Iceberg snapshot is gone (B9). */
    TM_ASSERT_OK(tm_engine_drop(ds->def->acceleration.engine, &eo, &err), &err);
    TM_ASSERT_OK(tm_rt__snapshot_bootstrap(rt, ds, false, &restored, &err), &err);
    TM_ASSERT(restored);
    TM_ASSERT_STR_EQ(ds->snapshot_key, key);
    TM_ASSERT_INT_EQ(ds->snapshot_ms, INT64_C(1700000000000));
    TM_ASSERT_OK(tm_engine_open(&e, ds->def->acceleration.engine, NULL, &eo, &err), &err);
    int64_t n = 0;
    TM_ASSERT_OK(tm_engine_row_count(e, &n, &err), &err);
    TM_ASSERT_INT_EQ(n, 3);
    tm_kv st;
    tm_kv_init(&st);
    TM_ASSERT_OK(tm_engine_read_state(e, &st, &err), &err);
    TM_ASSERT(tm_kv_get(&st, TM_STATE_SNAPSHOT_ID) == NULL);
    TM_ASSERT(tm_kv_get(&st, TM_STATE_TABLE_UUID) == NULL);
    TM_ASSERT_STR_EQ(tm_kv_get(&st, TM_STATE_SCHEMA), "fp"); /* other keys are kept */
    tm_kv_dispose(&st);
    tm_engine_release(e);

    /* A damaged newer snapshot: without fallback the bootstrap fails and leaves nothing. */
    TM_ASSERT_OK(tm_engine_drop(ds->def->acceleration.engine, &eo, &err), &err);
    char *newer = tm_rt__snapshot_key(rt->snap_prefix, "events",
                                      tm_engine_backup_ext(ds->def->acceleration.engine),
                                      INT64_C(1800000000000));
    TM_ASSERT_OK(tm_objstore_put(rt->snap_store, newer, "junk", 4, 0, &err), &err);
    int rc = tm_rt__snapshot_bootstrap(rt, ds, false, &restored, &err);
    TM_ASSERT_MSG(rc == TM_ECORRUPT, "damaged snapshot: %d %s", rc, err.message);
    TM_ASSERT(!restored);
    TM_ASSERT_RC(tm_engine_open(&e, ds->def->acceleration.engine, NULL, &eo, &err), TM_ENOTFOUND);
    /* With fallback the older one is used. */
    TM_ASSERT_OK(tm_rt__snapshot_bootstrap(rt, ds, true, &restored, &err), &err);
    TM_ASSERT(restored);
    TM_ASSERT_STR_EQ(ds->snapshot_key, key);

    tm_free(newer);
    tm_free(key);
    tm_kv_dispose(&oc);
    tm_runtime_free(rt);
    tm_config_dispose(&cfg);
  }
}

TM_TEST(json_text_keeps_utf8_and_replaces_the_rest) {
  const struct {
    const char *in, *out;
  } cases[] = {
      {"plain", "plain"},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
      {"bad \xff\xfe end", "bad ?? end"},
      {"overlong \xc0\xaf", "overlong ??"},
      {"surrogate \xed\xa0\x80", "surrogate ???"},
      {"cut \xe2\x82", "cut ??"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *j = tm_json_text(cases[i].in);
    TM_ASSERT(j);
    TM_ASSERT_STR_EQ(json_string_value(j), cases[i].out);
    json_decref(j);
  }
}
