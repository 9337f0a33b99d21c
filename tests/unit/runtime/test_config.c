/*
 * Unit tests for runtime/config: strict loading of tidemark.yaml (SPEC 1.1).
 * The bad cases are declarative: every .yaml file in tests/cases/config/bad starts
 * with "# expect: TEXT"; loading must fail with TM_EINVALID and a message
 * that starts with the file name and contains TEXT.
 */
#include <dirent.h>
#include <stdlib.h>

#include "io/io.h"
#include "runtime/config/config.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

TM_TEST(config_bad_cases) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/cases/config/bad", tm_test_source_dir());
  DIR *d = opendir(dir);
  TM_ASSERT_MSG(d, "cannot open %s", dir);
  struct dirent *e;
  int n = 0, bad = 0;
  while ((e = readdir(d)) != NULL) {
    if (!tm_str_has_suffix(e->d_name, ".yaml")) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *text = NULL;
    size_t len = 0;
    tm_error err;
    tm_error_init(&err);
    TM_ASSERT_OK(tm_read_file(path, 1 << 20, &text, &len, &err), &err);
    TM_ASSERT_MSG(strncmp(text, "# expect: ", 10) == 0, "%s has no '# expect:' line", path);
    char expect[512];
    const char *eol = strchr(text, '\n');
    size_t elen = eol ? (size_t)(eol - text - 10) : strlen(text + 10);
    snprintf(expect, sizeof expect, "%.*s", (int)elen, text + 10);
    tm_config cfg;
    int rc = tm_config_load(&cfg, path, &err);
    if (rc != TM_EINVALID) {
      tm_test__note("%s loaded (rc %d) but should fail with: %s", e->d_name, rc, expect);
      bad++;
    } else if (strncmp(err.message, path, strlen(path)) != 0) {
      tm_test__note("%s: message does not start with the file name: %s", e->d_name, err.message);
      bad++;
    } else if (!strstr(err.message, expect)) {
      tm_test__note("%s:\n  got:  %s\n  want: %s", e->d_name, err.message, expect);
      bad++;
    }
    tm_config_dispose(&cfg);
    tm_free(text);
    n++;
  }
  closedir(d);
  tm_test__note("%d bad configs rejected with their messages", n);
  TM_ASSERT_MSG(bad == 0, "%d of %d bad configs gave the wrong message", bad, n);
  TM_ASSERT_MSG(n >= 30, "only %d bad config cases", n);
}

TM_TEST(config_full_example_loads) {
  tm_error err;
  tm_config cfg;
  setenv("TM_TEST_REGION", "eu-west-1", 1);
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/cases/config/good/full.yaml", tm_test_source_dir());
  TM_ASSERT_OK(tm_config_load(&cfg, path, &err), &err);
  TM_ASSERT_INT_EQ(cfg.n_datasets, 3);
  const tm_dataset_def *ev = tm_config_find(&cfg, "events");
  TM_ASSERT(ev);
  TM_ASSERT_INT_EQ(ev->source_kind, TM_SOURCE_ICEBERG_FILE);
  TM_ASSERT_STR_EQ(tm_kv_get(&ev->params, "iceberg_s3_region"), "eu-west-1");
  TM_ASSERT_STR_EQ(ev->time_column, "event_time");
  TM_ASSERT_INT_EQ(ev->time_format, TM_TIME_FORMAT_TIMESTAMPTZ);
  TM_ASSERT_INT_EQ(ev->time_partition_format, TM_TIME_FORMAT_DATE);
  const tm_acceleration_def *a = &ev->acceleration;
  TM_ASSERT(a->enabled);
  TM_ASSERT_INT_EQ(a->engine, TM_ENGINE_DUCKDB);
  TM_ASSERT_INT_EQ(a->mode, TM_ENGINE_FILE);
  TM_ASSERT_INT_EQ(a->refresh_mode, TM_REFRESH_APPEND);
  TM_ASSERT_INT_EQ(a->refresh_check_interval_ms, 10000);
  TM_ASSERT(a->has_overlap);
  TM_ASSERT_INT_EQ(a->refresh_append_overlap_ms, 600000);
  TM_ASSERT_INT_EQ(a->refresh_retry_max_attempts, 10);
  TM_ASSERT_INT_EQ(a->n_primary_key, 2);
  TM_ASSERT_STR_EQ(a->primary_key[1], "region");
  TM_ASSERT_INT_EQ(tm_dataset_conflict_rule(ev, "id"), TM_ON_CONFLICT_UPSERT);
  TM_ASSERT_INT_EQ(tm_dataset_conflict_rule(ev, "region"), TM_ON_CONFLICT_UPSERT);
  TM_ASSERT(!tm_dataset_key_includes_time(ev));
  TM_ASSERT_INT_EQ(a->retention_period_ms, 30LL * 86400000);
  TM_ASSERT_INT_EQ(a->snapshots, TM_SNAPSHOTS_ENABLED);
  /* Spice's refresh jitter: without refresh_jitter_max, 10% of refresh_check_interval. */
  TM_ASSERT(a->refresh_jitter_enabled);
  TM_ASSERT_INT_EQ(a->refresh_on_startup, TM_REFRESH_ON_STARTUP_ALWAYS);
  TM_ASSERT_INT_EQ(a->refresh_data_window_ms, 7LL * 86400 * 1000);
  TM_ASSERT_INT_EQ(tm_acceleration_max_jitter_ms(a), 1000);
  TM_ASSERT(tm_str_has_suffix(ev->data_path, "/tests/cases/config/good/.tidemark/data/events"));
  const tm_dataset_def *logs = tm_config_find(&cfg, "logs");
  TM_ASSERT_INT_EQ(logs->acceleration.engine, TM_ENGINE_SQLITE);
  TM_ASSERT_INT_EQ(tm_acceleration_max_jitter_ms(&logs->acceleration), 3000);
  TM_ASSERT_STR_EQ(logs->acceleration.refresh_cron, "0 */6 * * 1-5");
  TM_ASSERT_INT_EQ(logs->acceleration.refresh_on_startup, TM_REFRESH_ON_STARTUP_AUTO);
  TM_ASSERT(logs->acceleration.cron.hours == ((1u << 0) | (1u << 6) | (1u << 12) | (1u << 18)));
  TM_ASSERT(tm_str_has_suffix(logs->data_path, "/.tidemark/data/logs"));
  const tm_dataset_def *obj = tm_config_find(&cfg, "objects");
  TM_ASSERT(!obj->has_acceleration);
  TM_ASSERT_INT_EQ(obj->source_kind, TM_SOURCE_S3);
  TM_ASSERT_STR_EQ(tm_kv_get(&obj->params, "s3_auth"), "key"); /* Spice's S3 params load */
  TM_ASSERT(cfg.snapshots.enabled);
  TM_ASSERT_STR_EQ(cfg.snapshots.location, "file:///backups/tidemark");
  /* Spice's keys in the forms tidemark honours load without a warning. */
  TM_ASSERT_INT_EQ(cfg.n_warnings, 0);
  TM_ASSERT_STR_EQ(ev->description, "sales events");
  TM_ASSERT_INT_EQ(ev->n_columns, 2);
  TM_ASSERT_STR_EQ(ev->columns[0].description, "the order's id");
  TM_ASSERT(ev->columns[1].description == NULL);
  TM_ASSERT_INT_EQ(ev->n_depends_on, 1);
  TM_ASSERT_STR_EQ(ev->depends_on[0], "logs");
  TM_ASSERT_INT_EQ(a->n_indexes, 2);
  TM_ASSERT(!a->indexes[0].unique && a->indexes[0].n_columns == 1);
  TM_ASSERT(a->indexes[1].unique && a->indexes[1].n_columns == 2);
  TM_ASSERT_STR_EQ(a->indexes[1].columns[1], "event_time");
  TM_ASSERT_INT_EQ(cfg.n_api_keys, 2);
  TM_ASSERT_STR_EQ(cfg.api_keys[0], "eu-west-1-key");
  TM_ASSERT_INT_EQ(cfg.load_parallelism, 3);
  tm_config_dispose(&cfg);
}

TM_TEST(config_defaults) {
  tm_error err;
  tm_config cfg;
  const char *text = "datasets:\n  - from: file:x\n    name: a\n    acceleration:\n      engine: sqlite\n"
                     "  - from: file:y\n    name: b\n    acceleration: {}\n";
  TM_ASSERT_OK(tm_config_load_text(&cfg, text, strlen(text), "inline.yaml", "/tmp", &err), &err);
  const tm_dataset_def *a = &cfg.datasets[0], *b = &cfg.datasets[1];
  TM_ASSERT_INT_EQ(a->acceleration.mode, TM_ENGINE_MEMORY);
  TM_ASSERT_INT_EQ(b->acceleration.engine, TM_ENGINE_CAYENNE);
  TM_ASSERT_INT_EQ(b->acceleration.mode, TM_ENGINE_FILE);
  TM_ASSERT_INT_EQ(b->acceleration.refresh_mode, TM_REFRESH_FULL);
  TM_ASSERT(b->acceleration.refresh_retry_enabled);
  TM_ASSERT_INT_EQ(b->acceleration.refresh_retry_max_attempts, -1);
  TM_ASSERT_STR_EQ(b->data_path, "/tmp/.tidemark/data/b");
  tm_config_dispose(&cfg);
}

/* refresh_mode: changes loads on every engine (SPEC E3); the refusals that stay are tests/cases/config/bad. */
TM_TEST(config_e3_changes_on_every_engine) {
  tm_error err;
  tm_config cfg;
  const char *text =
      "datasets:\n"
      "  - {from: 'iceberg:file://wh/t', name: c, acceleration: {refresh_mode: changes}}\n"
      "  - {from: 'iceberg:file://wh/t', name: d, acceleration: {engine: duckdb, refresh_mode: changes}}\n"
      "  - {from: 'iceberg:file://wh/t', name: a, acceleration: {engine: arrow, refresh_mode: changes}}\n"
      "  - {from: 'iceberg:file://wh/t', name: s, acceleration: {engine: sqlite, mode: file, refresh_mode: changes}}\n"
      "  - {from: 'iceberg:file://wh/t', name: m, acceleration: {engine: sqlite, refresh_mode: changes}}\n"
      "  - {from: 'iceberg:file://wh/t', name: p, acceleration: {engine: postgres, refresh_mode: changes,\n"
      "       params: {pg_host: localhost, pg_db: tm, pg_user: tm}}}\n";
  TM_ASSERT_OK(tm_config_load_text(&cfg, text, strlen(text), "inline.yaml", "/tmp", &err), &err);
  TM_ASSERT_INT_EQ(cfg.n_datasets, 6);
  tm_engine_kind want[] = {TM_ENGINE_CAYENNE, TM_ENGINE_DUCKDB, TM_ENGINE_ARROW,
                           TM_ENGINE_SQLITE,  TM_ENGINE_SQLITE, TM_ENGINE_POSTGRES};
  for (size_t i = 0; i < cfg.n_datasets; i++) {
    TM_ASSERT_INT_EQ(cfg.datasets[i].acceleration.engine, want[i]);
    TM_ASSERT_INT_EQ(cfg.datasets[i].acceleration.refresh_mode, TM_REFRESH_CHANGES);
  }
  tm_config_dispose(&cfg);
}

/* Loads a config whose dataset `x` has the acceleration params given, in dir (Spice secrets, issue 17). */
/*
 * Loads a config whose datasets expand the params "k: 'v', k2: 'v2'": one
 * dataset per key, named by it, with the value as its engine param file_path
 * (the one engine param every file engine takes; unknown ones are refused).
 */
static int load_params(tm_config *cfg, const char *dir, const char *top, const char *params,
                       tm_error *err) {
  char text[8192];
  size_t n = (size_t)snprintf(text, sizeof text, "%sdatasets:\n", top);
  for (const char *p = params; *p && n < sizeof text;) {
    const char *colon = strstr(p, ": '");
    if (!colon) break;
    const char *end = strchr(colon + 3, '\'');
    if (!end) end = colon + 3 + strlen(colon + 3); /* unterminated: the loader's error */
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "  - {from: file:a, name: %.*s, acceleration: {params: {file_path: '%.*s'}}}\n",
                          (int)(colon - p), p, (int)(end - colon - 3), colon + 3);
    p = *end ? end + 1 : end;
    while (*p == ',' || *p == ' ') p++;
  }
  return tm_config_load_text(cfg, text, strlen(text), "pod.yaml", dir, err);
}

static const char *param(const tm_config *cfg, const char *key) {
  const tm_dataset_def *d = tm_config_find(cfg, key);
  return d ? tm_kv_get(&d->acceleration.params, "file_path") : NULL;
}

TM_TEST(config_secrets_env_store_as_spice) {
  tm_error err;
  tm_config cfg;
  const char *dir = tm_test_tmpdir();
  char path[1024];
  snprintf(path, sizeof path, "%s/.env", dir);
  tm_test_write_file(path, "# a comment\n"
                           "TM_TOKEN=from-env\n"
                           "export TM_EXPORTED=yes # a comment\n"
                           "TM_QUOTED=\"a # b\\tc\"\n"
                           "TM_SINGLE='x\\ny'\n"
                           "this line is not an assignment\n");
  snprintf(path, sizeof path, "%s/.env.local", dir);
  tm_test_write_file(path, "TM_TOKEN=from-local\n");
  setenv("TM_TEST_A", "alpha", 1);
  setenv("SPICE_TM_TEST_B", "spice-b", 1);
  setenv("TM_TEST_B", "plain-b", 1);
  unsetenv("TM_TOKEN");
  TM_ASSERT_OK(load_params(&cfg, dir, "",
                           "a: 'x-${env:TM_TEST_A}-${secrets:tm_test_a}-${ secrets:TM_TEST_A }', "
                           "b: '${secrets:tm_test_b}', t: '${secrets:tm_token}', "
                           "e: '${env:tm_exported}', q: '${secrets:TM_QUOTED}', "
                           "s: '${secrets:TM_SINGLE}'", &err), &err);
  /* The name is upper-cased; SPICE_NAME wins over NAME; spaces inside the braces are allowed. */
  TM_ASSERT_STR_EQ(param(&cfg, "a"), "x-alpha-alpha-alpha");
  TM_ASSERT_STR_EQ(param(&cfg, "b"), "spice-b");
  /* .env.local before .env; export, comments and quotes as dotenv files have them. */
  TM_ASSERT_STR_EQ(param(&cfg, "t"), "from-local");
  TM_ASSERT_STR_EQ(param(&cfg, "e"), "yes");
  TM_ASSERT_STR_EQ(param(&cfg, "q"), "a # b\tc");
  TM_ASSERT_STR_EQ(param(&cfg, "s"), "x\\ny");
  /* The malformed line is warned, with its file and line. */
  bool warned = false;
  for (size_t i = 0; i < cfg.n_warnings; i++)
    if (strstr(cfg.warnings[i], "/.env:6: not KEY=VALUE")) warned = true;
  TM_ASSERT_MSG(warned, "no warning for the malformed .env line");
  /* Both files are pinned by the no-op stamp, read or not. */
  TM_ASSERT_INT_EQ(cfg.n_secret_files, 2);
  TM_ASSERT(tm_str_has_suffix(cfg.secret_files[0], "/.env.local"));
  TM_ASSERT(tm_str_has_suffix(cfg.secret_files[1], "/.env"));
  tm_config_dispose(&cfg);
  /* The environment wins over the files. */
  setenv("TM_TOKEN", "from-environment", 1);
  TM_ASSERT_OK(load_params(&cfg, dir, "", "t: '${secrets:TM_TOKEN}'", &err), &err);
  TM_ASSERT_STR_EQ(param(&cfg, "t"), "from-environment");
  tm_config_dispose(&cfg);
  unsetenv("TM_TOKEN");
  /* Missing: an error naming the reference and where it was looked for. */
  TM_ASSERT_RC(load_params(&cfg, dir, "", "t: 'Bearer ${secrets:nope_tm_x}'", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "secret '${secrets:nope_tm_x}' not found: no SPICE_NOPE_TM_X or NOPE_TM_X");
  TM_ASSERT_CONTAINS(err.message, "/.env.local");
  tm_config_dispose(&cfg);
  TM_ASSERT_RC(load_params(&cfg, dir, "", "t: '${vault:x}'", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unknown secret store 'vault' in '${vault:x}' (stores: env");
  tm_config_dispose(&cfg);
  TM_ASSERT_RC(load_params(&cfg, dir, "", "t: '${env:TM_TEST_A'", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unterminated '${'");
  tm_config_dispose(&cfg);
}

TM_TEST(config_secrets_section) {
  tm_error err;
  tm_config cfg;
  const char *dir = tm_test_tmpdir();
  char path[1024];
  snprintf(path, sizeof path, "%s/my.env", dir);
  tm_test_write_file(path, "TM_K=from-my-env\n");
  snprintf(path, sizeof path, "%s/.env", dir);
  tm_test_write_file(path, "TM_K=from-dot-env\nTM_ONLY_DOT=dot\n");
  unsetenv("TM_K");
  /* A store with its own file; ${env:...} names a store, so without one named env it is unknown. */
  const char *top = "secrets:\n  - from: env\n    name: mine\n    description: local secrets\n"
                    "    params: {file_path: my.env}\n";
  TM_ASSERT_OK(load_params(&cfg, dir, top, "k: '${mine:tm_k}', s: '${secrets:TM_K}'", &err), &err);
  TM_ASSERT_STR_EQ(param(&cfg, "k"), "from-my-env");
  TM_ASSERT_STR_EQ(param(&cfg, "s"), "from-my-env");
  TM_ASSERT_INT_EQ(cfg.n_secret_files, 1); /* file_path read: not .env.local, .env */
  tm_config_dispose(&cfg);
  TM_ASSERT_RC(load_params(&cfg, dir, top, "k: '${env:TM_K}'", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unknown secret store 'env'");
  tm_config_dispose(&cfg);
  /* Two stores: ${secrets:} asks the last declared first. */
  const char *two = "secrets:\n  - {from: env, name: base}\n"
                    "  - {from: env, name: mine, params: {file_path: my.env}}\n";
  TM_ASSERT_OK(load_params(&cfg, dir, two, "s: '${secrets:TM_K}', d: '${secrets:TM_ONLY_DOT}', "
                           "b: '${base:TM_K}'", &err), &err);
  TM_ASSERT_STR_EQ(param(&cfg, "s"), "from-my-env");
  TM_ASSERT_STR_EQ(param(&cfg, "d"), "dot");
  TM_ASSERT_STR_EQ(param(&cfg, "b"), "from-dot-env");
  tm_config_dispose(&cfg);
  /* A file_path that does not exist: warned, then .env.local and .env (as Spice). */
  TM_ASSERT_OK(load_params(&cfg, dir, "secrets:\n  - {from: env, name: env, params: {file_path: gone.env}}\n",
                           "k: '${env:TM_K}'", &err), &err);
  TM_ASSERT_STR_EQ(param(&cfg, "k"), "from-dot-env");
  TM_ASSERT_CONTAINS(cfg.warnings[0], "gone.env not found; reading .env.local and .env instead");
  tm_config_dispose(&cfg);
  /* A pod as `spice init` writes it today (version v2), with Spice's spaced references. */
  setenv("TM_TEST_A", "alpha", 1);
  TM_ASSERT_OK(load_params(&cfg, dir, "version: v2\nkind: Spicepod\nname: my_app\n"
                           "secrets:\n  - from: env\n    name: env\n",
                           "k: '${ secrets:tm_test_a }', e: '${ env:TM_TEST_A }'", &err), &err);
  TM_ASSERT_STR_EQ(cfg.version, "v2");
  TM_ASSERT_STR_EQ(param(&cfg, "k"), "alpha");
  TM_ASSERT_STR_EQ(param(&cfg, "e"), "alpha");
  tm_config_dispose(&cfg);
  /* Stores tidemark does not have, and mistakes, are refused by name. */
  TM_ASSERT_RC(load_params(&cfg, dir, "secrets:\n  - {from: 'kubernetes:my_secret', name: k8s}\n",
                           "k: x", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "secrets[0].from: secret store 'kubernetes' is not supported");
  tm_config_dispose(&cfg);
  TM_ASSERT_RC(load_params(&cfg, dir, "secrets:\n  - {from: env, name: e, params: {path: x}}\n",
                           "k: x", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unknown param 'path' of the env secret store");
  tm_config_dispose(&cfg);
  TM_ASSERT_RC(load_params(&cfg, dir, "secrets:\n  - {from: env}\n", "k: x", &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "a secret store needs a 'name'");
  tm_config_dispose(&cfg);
}

/* Spice's `- ref: PATH` datasets: PATH/dataset.yaml (or .yml) below the config's folder. */
TM_TEST(config_dataset_ref) {
  tm_error err;
  tm_config cfg;
  const char *dir = tm_test_tmpdir();
  char path[1024];
  snprintf(path, sizeof path, "%s/datasets/sales", dir);
  TM_ASSERT(tm_mkdir_p(path, &err) == TM_OK);
  snprintf(path, sizeof path, "%s/datasets/sales/dataset.yaml", dir);
  tm_test_write_file(path, "version: v1\nkind: Dataset\nfrom: file:data/sales\nname: sales\n"
                           "params: {file_format: csv}\ntime_column: ts\n"
                           "acceleration: {enabled: true, refresh_mode: append}\n");
  snprintf(path, sizeof path, "%s/datasets/bad", dir);
  TM_ASSERT(tm_mkdir_p(path, &err) == TM_OK);
  snprintf(path, sizeof path, "%s/datasets/bad/dataset.yml", dir);
  tm_test_write_file(path, "from: file:x\nname: bad\nacceleration:\n  engine: nope\n");
  const char *text = "version: v2\ndatasets:\n  - ref: datasets/sales\n    dependsOn: [PLAIN]\n"
                     "  - from: file:y\n    name: plain\n";
  TM_ASSERT_OK(tm_config_load_text(&cfg, text, strlen(text), "pod.yaml", dir, &err), &err);
  TM_ASSERT_INT_EQ(cfg.n_datasets, 2);
  const tm_dataset_def *d = tm_config_find(&cfg, "sales");
  TM_ASSERT(d);
  TM_ASSERT_STR_EQ(d->from, "file:data/sales");
  TM_ASSERT_STR_EQ(tm_kv_get(&d->params, "file_format"), "csv");
  TM_ASSERT_INT_EQ(d->acceleration.refresh_mode, TM_REFRESH_APPEND);
  TM_ASSERT(tm_config_find(&cfg, "plain"));
  TM_ASSERT_INT_EQ(d->n_depends_on, 1);
  TM_ASSERT_STR_EQ(d->depends_on[0], "plain"); /* matched ignoring case, spelt as the dataset */
  tm_config_dispose(&cfg);
  /* An error inside the file names the file (.yml found too). */
  text = "datasets:\n  - ref: datasets/bad\n";
  TM_ASSERT_RC(tm_config_load_text(&cfg, text, strlen(text), "pod.yaml", dir, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "datasets/bad/dataset.yml:4:11: acceleration.engine: bad value 'nope'");
  tm_config_dispose(&cfg);
  text = "datasets:\n  - ref: datasets/none\n";
  TM_ASSERT_RC(tm_config_load_text(&cfg, text, strlen(text), "pod.yaml", dir, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "pod.yaml:2:10: datasets[0].ref: no dataset.yaml or dataset.yml in ");
  tm_config_dispose(&cfg);
  text = "datasets:\n  - ref: datasets/sales\n    name: x\n";
  TM_ASSERT_RC(tm_config_load_text(&cfg, text, strlen(text), "pod.yaml", dir, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "unknown key 'name' beside ref");
  tm_config_dispose(&cfg);
  /* version and kind belong to a dataset file, not to an entry. */
  text = "datasets:\n  - from: file:y\n    name: plain\n    kind: Dataset\n";
  TM_ASSERT_RC(tm_config_load_text(&cfg, text, strlen(text), "pod.yaml", dir, &err), TM_EINVALID);
  TM_ASSERT_CONTAINS(err.message, "datasets[0].kind: belongs to the top level, or to a dataset file");
  tm_config_dispose(&cfg);
}

TM_TEST(config_missing_file) {
  tm_error err;
  tm_config cfg;
  TM_ASSERT_RC(tm_config_load(&cfg, "/nonexistent/tidemark.yaml", &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "/nonexistent/tidemark.yaml: config file not found");
  tm_config_dispose(&cfg);
}

/* Issue 22: nesting is capped before libyaml builds the document, so a million '[' in a key
 * that is otherwise ignored is refused at once (it took libyaml minutes: quadratic). The
 * bound is loose for sanitizer builds; the figure is in docs/RELIABILITY.md. 64 levels load. */
TM_TEST(config_deep_nesting_is_refused_fast) {
  size_t n = 1000000;
  const char *head = "datasets: []\nmetadata: ";
  char *text = tm_malloc(strlen(head) + n + 2);
  TM_ASSERT(text);
  memcpy(text, head, strlen(head));
  memset(text + strlen(head), '[', n);
  memcpy(text + strlen(head) + n, "\n", 2);
  tm_config cfg;
  tm_error err;
  tm_error_init(&err);
  int64_t t0 = tm_monotonic_ns();
  TM_ASSERT_RC(tm_config_load_text(&cfg, text, strlen(text), "deep.yaml", "/tmp", &err),
               TM_EINVALID);
  int64_t ms = (tm_monotonic_ns() - t0) / 1000000;
  tm_config_dispose(&cfg);
  TM_ASSERT_CONTAINS(err.message, "deep.yaml:2: lists and maps nest deeper than 64 levels");
  tm_test__note("1,000,000 nested '[' refused in %lld ms", (long long)ms);
  TM_ASSERT_MSG(ms < 2000, "refusing deep nesting took %lld ms", (long long)ms);
  tm_free(text);
  /* At the cap: loads (metadata is descriptive: any mapping, here one nested 64 deep). */
  char ok[512];
  snprintf(ok, sizeof ok, "datasets: []\nmetadata: {a: %.*s%.*s}\n", 62,
           "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 62,
           "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
  TM_ASSERT_OK(tm_config_load_text(&cfg, ok, strlen(ok), "cap.yaml", "/tmp", &err), &err);
  tm_config_dispose(&cfg);
}
