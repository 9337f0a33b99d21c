/*
 * Tests of objstore/s3 against a real S3-protocol server on 127.0.0.1:
 * npm s3rver, started by tests/node/s3rver-start.mjs behind a proxy that
 * verifies every SigV4 signature independently (node's crypto) and injects
 * faults on command (SPEC §4, A7, C2, D3). Tagged needs-s3: skipped, with a
 * message, only when node or s3rver is not installed (scripts/install-test-deps).
 *
 * Covered: put/stat/read/list/delete, pagination past 1,000 keys,
 * last-modified times, ranged reads (bytes counted by the client and by the
 * server), downloads and uploads of files, odd key characters, wrong
 * credentials, retries on 5xx/429, resets, stalls and cut bodies, a server
 * that ignores Range, a stopped server, connection reuse, concurrent
 * readers and virtual-hosted addressing.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "objstore/s3/s3.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/time.h"

extern char **environ;

#define KEY "AKTIDEMARKTEST"
#define SECRET "tidemark/test+secret"
#define BUCKET "tm-test"

typedef struct server {
  pid_t pid;
  FILE *in;  /* commands */
  FILE *out; /* replies */
  int port;
  char dir[512]; /* s3rver's data folder, removed when the server stops */
} server;

static server g_srv; /* shared by the tests that do not stop it */
static bool g_skip;

static void server_stop(server *s) {
  if (s->pid <= 0) return;
  kill(s->pid, SIGTERM);
  int st;
  while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (s->in) fclose(s->in);
  if (s->out) fclose(s->out);
  tm_error err;
  if (s->dir[0] && tm_remove_tree(s->dir, &err) < 0) fprintf(stderr, "%s\n", err.message);
  memset(s, 0, sizeof *s);
}

static void stop_shared(void) { server_stop(&g_srv); }

/* Starts the launcher with a fresh data folder; false when node/s3rver are missing. */
static bool server_start(server *s, const char *extra) {
  memset(s, 0, sizeof *s);
  char script[1024], nm[1024], dir[1024];
  snprintf(script, sizeof script, "%s/tests/node/s3rver-start.mjs", tm_test_source_dir());
  snprintf(nm, sizeof nm, "%s/tests/node/node_modules/s3rver/package.json", tm_test_source_dir());
  if (access(nm, R_OK) != 0 || system("node --version >/dev/null 2>&1") != 0) return false;
  /* Outside the case's folder: the harness removes that after each passing case. */
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tm-s3rver-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  TM_ASSERT(mkdtemp(dir) != NULL);
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  int in_pipe[2], out_pipe[2];
  TM_ASSERT(pipe(in_pipe) == 0 && pipe(out_pipe) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addclose(&fa, in_pipe[1]);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  /* s3rver's continuation tokens use DES, which OpenSSL 3 keeps in its legacy provider. */
  const char *argv[16] = {"node", "--openssl-legacy-provider", script, "--dir", dir, "--buckets", BUCKET ",other",
                          "--key", KEY, "--secret", SECRET, NULL, NULL};
  if (extra) argv[11] = extra;
  int rc = posix_spawnp(&s->pid, "node", &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  TM_ASSERT_MSG(rc == 0, "posix_spawn node: %s", strerror(rc));
  s->in = fdopen(in_pipe[1], "w");
  s->out = fdopen(out_pipe[0], "r");
  char line[128];
  TM_ASSERT_MSG(fgets(line, sizeof line, s->out) != NULL, "s3rver-start.mjs printed nothing");
  TM_ASSERT_MSG(strncmp(line, "port ", 5) == 0, "unexpected first line: %s", line);
  s->port = (int)strtol(line + 5, NULL, 10);
  return true;
}

/* Sends one command and returns its reply line (static buffer). */
static const char *server_cmd(server *s, const char *cmd) {
  static char line[256];
  fprintf(s->in, "%s\n", cmd);
  fflush(s->in);
  TM_ASSERT(fgets(line, sizeof line, s->out) != NULL);
  return line;
}

static uint64_t server_body_bytes(server *s) {
  const char *r = server_cmd(s, "stats");
  const char *p = strstr(r, "body_bytes=");
  TM_ASSERT(p != NULL);
  return strtoull(p + 11, NULL, 10);
}

static uint64_t server_sig_failures(server *s) {
  const char *p = strstr(server_cmd(s, "stats"), "signature_failures=");
  TM_ASSERT(p != NULL);
  return strtoull(p + 19, NULL, 10);
}

static bool shared(void) {
  if (g_skip) return false;
  if (g_srv.pid > 0) return true;
  if (!server_start(&g_srv, NULL)) {
    tm_test__note("needs-s3: node or s3rver missing (run scripts/install-test-deps); skipped");
    g_skip = true;
    return false;
  }
  atexit(stop_shared);
  return true;
}

static tm_s3_options options(int port) {
  static char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", port);
  tm_s3_options o;
  tm_s3_options_init(&o);
  o.bucket = BUCKET;
  o.endpoint = endpoint;
  o.allow_http = true;
  o.access_key = KEY;
  o.secret_key = SECRET;
  o.retry_base_ms = 10;
  o.retry_max_ms = 50;
  o.max_retries = 3;
  return o;
}

static tm_objstore *store_with(const tm_s3_options *o) {
  tm_error err;
  tm_objstore *s = NULL;
  TM_ASSERT_OK(tm_objstore_s3_new(&s, o, &err), &err);
  return s;
}

static tm_objstore *store(void) {
  tm_s3_options o = options(g_srv.port);
  return store_with(&o);
}

static tm_objstore_stats stats_of(tm_objstore *s) {
  tm_objstore_stats st;
  tm_objstore_get_stats(s, &st);
  return st;
}

static char *pattern(size_t n, unsigned seed) {
  char *p = tm_malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) p[i] = (char)((i * 131 + seed + i / 977) & 0xff);
  return p;
}

/* A per-test key prefix so that tests sharing the server do not collide. */
static const char *k(const char *test, const char *rest) {
  static char buf[8][512];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, 512, "%s/%s", test, rest);
  return b;
}

TM_TEST(s3_put_stat_read_delete) {
  if (!shared()) return;
  uint64_t sig0 = server_sig_failures(&g_srv);
  tm_error err;
  tm_objstore *s = store();
  int64_t t0 = tm_now_ms();
  TM_ASSERT_OK(tm_objstore_put(s, k("basic", "a.txt"), "hello, s3", 9, 0, &err), &err);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, k("basic", "a.txt"), &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(st.size, 9);
  /* HEAD's Last-Modified has whole seconds. */
  TM_ASSERT_MSG(st.mtime_ms >= t0 - 2000 && st.mtime_ms <= tm_now_ms() + 1000, "mtime %lld",
                (long long)st.mtime_ms);
  char buf[16];
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read(s, k("basic", "a.txt"), 7, buf, 10, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 2);
  TM_ASSERT(memcmp(buf, "s3", 2) == 0);
  /* At the end: 416 from the server is an empty read, not an error. */
  TM_ASSERT_OK(tm_objstore_read(s, k("basic", "a.txt"), 9, buf, 10, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  char *all = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, k("basic", "a.txt"), 100, &all, &len, &err), &err);
  TM_ASSERT_STR_EQ(all, "hello, s3");
  tm_free(all);
  all = NULL;
  TM_ASSERT_RC(tm_objstore_read_all(s, k("basic", "a.txt"), 5, &all, &len, &err), TM_ETOOLARGE);
  TM_ASSERT_OK(tm_objstore_delete(s, k("basic", "a.txt"), &err), &err);
  TM_ASSERT_OK(tm_objstore_stat(s, k("basic", "a.txt"), &st, &err), &err);
  TM_ASSERT(!st.exists);
  TM_ASSERT_RC(tm_objstore_read(s, k("basic", "a.txt"), 0, buf, 4, &n, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "s3://tm-test/basic/a.txt");
  TM_ASSERT_CONTAINS(err.message, "NoSuchKey");
  TM_ASSERT_OK(tm_objstore_delete(s, k("basic", "a.txt"), &err), &err);
  /* An empty object: a plain GET (s3rver fails ranged GETs of empty objects). */
  TM_ASSERT_OK(tm_objstore_put(s, k("basic", "empty"), NULL, 0, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_read_all(s, k("basic", "empty"), 10, &all, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, 0);
  tm_free(all);
  TM_ASSERT_OK(tm_objstore_stat(s, k("basic", "empty"), &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(st.size, 0);
  TM_ASSERT_INT_EQ(stats_of(s).retries, 0);
  TM_ASSERT_INT_EQ(server_sig_failures(&g_srv) - sig0, 0);
  tm_objstore_free(s);
}

TM_TEST(s3_keys_with_reserved_characters_round_trip) {
  /* Every byte class through URI encoding, signing (checked by the proxy) and listing. */
  if (!shared()) return;
  uint64_t sig0 = server_sig_failures(&g_srv);
  tm_error err;
  tm_objstore *s = store();
  const char *names[] = {"sp ace+plus%pct&amp=eq.txt", "\xc3\xa9t\xc3\xa9/\xe2\x82\xac.csv",
                         "q?mark#hash;semi:colon,comma'quote(paren)*star!bang~$dollar@at"};
  for (int i = 0; i < 3; i++) {
    TM_ASSERT_OK(tm_objstore_put(s, k("chars", names[i]), names[i], strlen(names[i]), 0, &err),
                 &err);
    char *back = NULL;
    TM_ASSERT_OK(tm_objstore_read_all(s, k("chars", names[i]), 1000, &back, NULL, &err), &err);
    TM_ASSERT_STR_EQ(back, names[i]);
    tm_free(back);
  }
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "chars/", 100, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 3);
  TM_ASSERT_STR_EQ(l.items[0].key, "chars/q?mark#hash;semi:colon,comma'quote(paren)*star!bang~$dollar@at");
  TM_ASSERT_STR_EQ(l.items[1].key, "chars/sp ace+plus%pct&amp=eq.txt");
  TM_ASSERT_STR_EQ(l.items[2].key, "chars/\xc3\xa9t\xc3\xa9/\xe2\x82\xac.csv");
  tm_obj_list_dispose(&l);
  TM_ASSERT_INT_EQ(server_sig_failures(&g_srv) - sig0, 0);
  tm_objstore_free(s);
}

TM_TEST(s3_list_paginates_past_1000_keys) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  enum { N = 1105 };
  for (int i = 0; i < N; i++) {
    char key[64];
    snprintf(key, sizeof key, "many/k%05d", i);
    TM_ASSERT_OK(tm_objstore_put(s, key, key, strlen(key), 0, &err), &err);
  }
  TM_ASSERT_OK(tm_objstore_put(s, "manyother", "x", 1, 0, &err), &err);
  uint64_t before = stats_of(s).requests;
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "many/", 10000, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, N);
  for (int i = 0; i < N; i++) {
    char key[64];
    snprintf(key, sizeof key, "many/k%05d", i);
    TM_ASSERT_STR_EQ(l.items[i].key, key);
    TM_ASSERT_INT_EQ(l.items[i].size, strlen(key));
  }
  /* Two ListObjectsV2 pages: 1,000 keys, then the rest with the continuation token. */
  TM_ASSERT_INT_EQ(stats_of(s).requests - before, 2);
  tm_obj_list_dispose(&l);
  /* A string prefix matches across the folder boundary too. */
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "many", 10000, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, N + 1);
  tm_obj_list_dispose(&l);
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "many/k0100", 10000, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 10); /* k01000..k01009 */
  tm_obj_list_dispose(&l);
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "nothing-here/", 10, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 0);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(s3_last_modified_in_listings_and_stat) {
  /* SPEC A7: a newer object has a later last-modified time, in listings and stat. */
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  TM_ASSERT_OK(tm_objstore_put(s, k("lm", "old"), "1", 1, 0, &err), &err);
  struct timespec ts = {1, 100000000};
  nanosleep(&ts, NULL);
  TM_ASSERT_OK(tm_objstore_put(s, k("lm", "new"), "2", 1, 0, &err), &err);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "lm/", 10, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 2);
  TM_ASSERT_STR_EQ(l.items[0].key, "lm/new");
  int64_t m_new = l.items[0].mtime_ms, m_old = l.items[1].mtime_ms;
  TM_ASSERT_MSG(m_new - m_old >= 1000, "new %lld old %lld", (long long)m_new, (long long)m_old);
  TM_ASSERT(m_old > tm_now_ms() - 60000 && m_new <= tm_now_ms() + 1000);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "lm/new", &st, &err), &err);
  TM_ASSERT_INT_EQ(st.mtime_ms / 1000, m_new / 1000);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
}

TM_TEST(s3_ranged_reads_transfer_only_what_is_read) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  size_t size = 3 * 1024 * 1024;
  char *data = pattern(size, 1);
  TM_ASSERT_OK(tm_objstore_put(s, k("range", "t.parquet"), data, size, 0, &err), &err);
  uint64_t srv0 = server_body_bytes(&g_srv);
  tm_objstore_stats st0 = stats_of(s);
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_objstore_open_input(s, k("range", "t.parquet"), size, &in, &err), &err);
  /* The footer read: last 8 bytes, then 30 KiB before them: one 64 KiB request. */
  char tail[8];
  TM_ASSERT_OK(tm_input_read_exact(in, size - 8, tail, 8, &err), &err);
  TM_ASSERT(memcmp(tail, data + size - 8, 8) == 0);
  char *buf = tm_malloc(400000);
  TM_ASSERT_OK(tm_input_read_exact(in, size - 8 - 30000, buf, 30000, &err), &err);
  TM_ASSERT(memcmp(buf, data + size - 8 - 30000, 30000) == 0);
  /* Two column chunks 20 KB apart, announced: one request for both. */
  tm_io_range r[2] = {{100000, 150000}, {270000, 100000}};
  TM_ASSERT_OK(tm_input_will_need(in, r, 2, &err), &err);
  for (int i = 0; i < 2; i++) {
    TM_ASSERT_OK(tm_input_read_exact(in, r[i].off, buf, r[i].len, &err), &err);
    TM_ASSERT(memcmp(buf, data + r[i].off, r[i].len) == 0);
  }
  tm_objstore_stats st1 = stats_of(s);
  uint64_t want = 65536 + 270000;
  TM_ASSERT_INT_EQ(st1.requests - st0.requests, 2);
  TM_ASSERT_INT_EQ(st1.bytes_in - st0.bytes_in, want);
  /* The server agrees: it sent those bytes and no more. */
  TM_ASSERT_INT_EQ(server_body_bytes(&g_srv) - srv0, want);
  tm_input_close(in);
  in = NULL;
  /* Unknown size: one HEAD first; a missing object fails at open. */
  TM_ASSERT_RC(tm_objstore_open_input(s, k("range", "absent"), TM_OBJ_SIZE_UNKNOWN, &in, &err),
               TM_ENOTFOUND);
  tm_free(buf);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(s3_put_file_and_get_file_for_snapshots) {
  /* SPEC C2: a snapshot file goes up as one signed PUT and comes back whole. */
  if (!shared()) return;
  uint64_t sig0 = server_sig_failures(&g_srv);
  tm_error err;
  tm_objstore *s = store();
  size_t size = 5 * 1024 * 1024 + 123;
  char *data = pattern(size, 7);
  TM_ASSERT_OK(tm_write_file_atomic(tm_test_path("snap.db"), data, size, &err), &err);
  TM_ASSERT_OK(tm_objstore_put_file(s, k("snap", "db"), tm_test_path("snap.db"), TM_OBJ_PUT_ATOMIC,
                                    &err),
               &err);
  TM_ASSERT_INT_EQ(stats_of(s).bytes_out, size);
  TM_ASSERT_OK(tm_objstore_get_file(s, k("snap", "db"), tm_test_path("back.db"), &err), &err);
  char *back = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(tm_test_path("back.db"), size + 1, &back, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, size);
  TM_ASSERT(memcmp(back, data, size) == 0);
  /* A create-only put is signed with If-None-Match (s3rver does not enforce it). */
  TM_ASSERT_OK(tm_objstore_put(s, k("snap", "v1.json"), "{}", 2, TM_OBJ_PUT_IF_ABSENT, &err), &err);
  TM_ASSERT_INT_EQ(server_sig_failures(&g_srv) - sig0, 0);
  tm_free(back);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(s3_wrong_credentials_are_a_clear_error) {
  if (!shared()) return;
  tm_error err;
  tm_s3_options o = options(g_srv.port);
  o.secret_key = "not-the-secret";
  tm_objstore *s = store_with(&o);
  tm_obj_stat st;
  char buf[4];
  size_t n;
  TM_ASSERT_RC(tm_objstore_read(s, "any", 0, buf, 4, &n, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "access denied (403 SignatureDoesNotMatch");
  TM_ASSERT_CONTAINS(err.message, "check s3_key and s3_secret");
  TM_ASSERT_INT_EQ(stats_of(s).retries, 0); /* not transient */
  tm_objstore_free(s);

  o = options(g_srv.port);
  o.access_key = "AKUNKNOWN";
  s = store_with(&o);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_RC(tm_objstore_list_all(s, "", 10, &l, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "InvalidAccessKeyId");
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);

  o = options(g_srv.port);
  o.access_key = o.secret_key = NULL;
  s = store_with(&o);
  TM_ASSERT_RC(tm_objstore_put(s, "x", "1", 1, 0, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "no credentials were given");
  /* HEAD has no body: the status alone. */
  TM_ASSERT_RC(tm_objstore_stat(s, "x", &st, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "403");
  tm_objstore_free(s);

  o = options(g_srv.port);
  o.bucket = "no-such-bucket";
  s = store_with(&o);
  TM_ASSERT_RC(tm_objstore_read(s, "x", 0, buf, 4, &n, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "no such bucket");
  tm_objstore_free(s);
}

TM_TEST(s3_retries_5xx_and_429_then_gives_up) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  TM_ASSERT_OK(tm_objstore_put(s, k("retry", "x"), "payload", 7, 0, &err), &err);
  TM_ASSERT_STR_EQ(server_cmd(&g_srv, "fail 503 2"), "ok\n");
  char *back = NULL;
  TM_ASSERT_OK(tm_objstore_read_all(s, k("retry", "x"), 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "payload");
  tm_free(back);
  back = NULL;
  TM_ASSERT_INT_EQ(stats_of(s).retries, 2);
  server_cmd(&g_srv, "fail 429 1");
  server_cmd(&g_srv, "fail 500 1");
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, k("retry", "x"), &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(stats_of(s).retries, 4);
  /* Persistent failure: 1 + max_retries attempts, then TM_EUNAVAILABLE. */
  server_cmd(&g_srv, "fail 503 4");
  uint64_t req0 = stats_of(s).requests;
  TM_ASSERT_RC(tm_objstore_read_all(s, k("retry", "x"), 100, &back, NULL, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "503 SlowDown");
  TM_ASSERT_CONTAINS(err.message, "4 attempts");
  TM_ASSERT_INT_EQ(stats_of(s).requests - req0, 4);
  /* Uploads are retried too, with the whole body again. */
  server_cmd(&g_srv, "fail 500 1");
  TM_ASSERT_OK(tm_objstore_put(s, k("retry", "y"), "again", 5, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_read_all(s, k("retry", "y"), 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "again");
  tm_free(back);
  TM_ASSERT_STR_EQ(server_cmd(&g_srv, "clear"), "ok\n");
  tm_objstore_free(s);
}

TM_TEST(s3_broken_connections_are_retried_and_reads_resume) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  size_t size = 2 * 1024 * 1024;
  char *data = pattern(size, 3);
  TM_ASSERT_OK(tm_objstore_put(s, k("resume", "obj"), data, size, 0, &err), &err);
  /* A body cut after 300 KB: the retry asks only for the rest. */
  server_cmd(&g_srv, "cut 1 300000");
  uint64_t srv0 = server_body_bytes(&g_srv);
  char *back = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, k("resume", "obj"), size, &back, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, size);
  TM_ASSERT(memcmp(back, data, size) == 0);
  tm_free(back);
  back = NULL;
  TM_ASSERT_INT_EQ(stats_of(s).retries, 1);
  TM_ASSERT_INT_EQ(server_body_bytes(&g_srv) - srv0, size);
  /*
   * Reset connections. libcurl itself retries once when a reused connection
   * turns out dead, so two resets make sure that this store's retry runs.
   */
  server_cmd(&g_srv, "reset 2");
  TM_ASSERT_OK(tm_objstore_read_all(s, k("resume", "obj"), size, &back, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, size);
  TM_ASSERT(memcmp(back, data, size) == 0);
  tm_free(back);
  back = NULL;
  TM_ASSERT(stats_of(s).retries >= 2);
  /* A server that ignores Range: the bytes wanted are picked out of the whole body. */
  server_cmd(&g_srv, "ignore-range 1");
  char buf[1000];
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read(s, k("resume", "obj"), 5000, buf, sizeof buf, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, sizeof buf);
  TM_ASSERT(memcmp(buf, data + 5000, sizeof buf) == 0);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(s3_stalled_requests_time_out_and_retry) {
  if (!shared()) return;
  tm_error err;
  tm_s3_options o = options(g_srv.port);
  o.request_timeout_ms = 400;
  tm_objstore *s = store_with(&o);
  TM_ASSERT_OK(tm_objstore_put(s, k("stall", "x"), "v", 1, 0, &err), &err);
  server_cmd(&g_srv, "stall 1");
  tm_obj_stat st;
  int64_t t0 = tm_monotonic_ns();
  TM_ASSERT_OK(tm_objstore_stat(s, k("stall", "x"), &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT(tm_monotonic_ns() - t0 >= 350 * 1000000LL);
  TM_ASSERT_INT_EQ(stats_of(s).retries, 1);
  server_cmd(&g_srv, "stall 4");
  TM_ASSERT_RC(tm_objstore_stat(s, k("stall", "x"), &st, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "timed out");
  tm_objstore_free(s);
}

TM_TEST(s3_connections_are_reused) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  TM_ASSERT_OK(tm_objstore_put(s, k("reuse", "x"), "v", 1, 0, &err), &err);
  for (int i = 0; i < 20; i++) {
    tm_obj_stat st;
    TM_ASSERT_OK(tm_objstore_stat(s, k("reuse", "x"), &st, &err), &err);
  }
  TM_ASSERT_INT_EQ(stats_of(s).requests, 21);
  TM_ASSERT_INT_EQ(tm_objstore_s3_connections(s), 1);
  tm_objstore_free(s);
}

typedef struct reader_arg {
  tm_objstore *s;
  const char *key;
  const char *data;
  size_t size;
  int failures;
} reader_arg;

static void *read_many(void *p) {
  reader_arg *a = p;
  tm_error err;
  tm_input *in = NULL;
  if (tm_objstore_open_input(a->s, a->key, a->size, &in, &err) < 0) {
    a->failures++;
    return NULL;
  }
  char buf[70000];
  for (int i = 0; i < 30; i++) {
    uint64_t off = ((uint64_t)i * 104729) % (a->size - sizeof buf);
    if (tm_input_read_exact(in, off, buf, sizeof buf, &err) < 0 ||
        memcmp(buf, a->data + off, sizeof buf) != 0)
      a->failures++;
  }
  tm_input_close(in);
  return NULL;
}

TM_TEST(s3_threads_share_one_store) {
  if (!shared()) return;
  tm_error err;
  tm_objstore *s = store();
  size_t size = 1024 * 1024;
  char *data = pattern(size, 9);
  TM_ASSERT_OK(tm_objstore_put(s, k("threads", "obj"), data, size, 0, &err), &err);
  reader_arg args[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (reader_arg){s, k("threads", "obj"), data, size, 0};
    pthread_create(&t[i], NULL, read_many, &args[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    TM_ASSERT_INT_EQ(args[i].failures, 0);
  }
  /* Connections are pooled: at most one per thread at a time. */
  TM_ASSERT(tm_objstore_s3_connections(s) <= 5);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(s3_virtual_hosted_addressing) {
  /* bucket.s3.localhost:PORT -> s3rver's virtual-host routing; the proxy checks the signed Host. */
  if (!shared()) return;
  uint64_t sig0 = server_sig_failures(&g_srv);
  tm_error err;
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://s3.localhost:%d", g_srv.port);
  tm_s3_options o = options(g_srv.port);
  o.endpoint = endpoint;
  o.url_style = TM_S3_URL_VIRTUAL;
  tm_objstore *s = store_with(&o);
  TM_ASSERT_OK(tm_objstore_put(s, k("vhost", "a"), "virtual", 7, 0, &err), &err);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_OK(tm_objstore_list_all(s, "vhost/", 10, &l, &err), &err);
  TM_ASSERT_INT_EQ(l.len, 1);
  tm_obj_list_dispose(&l);
  tm_objstore_free(s);
  /* The same object through path-style addressing: the same bucket. */
  s = store();
  char *back = NULL;
  TM_ASSERT_OK(tm_objstore_read_all(s, k("vhost", "a"), 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "virtual");
  tm_free(back);
  TM_ASSERT_INT_EQ(server_sig_failures(&g_srv) - sig0, 0);
  tm_objstore_free(s);
}

TM_TEST(s3_url_front_door_with_params) {
  /* SPEC §4: s3://BUCKET/PREFIX with s3_endpoint, s3_key, s3_secret, allow_http. */
  if (!shared()) return;
  tm_error err;
  tm_kv p;
  tm_kv_init(&p);
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", g_srv.port);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_endpoint", endpoint, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_key", KEY, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "s3_secret", SECRET, &err), &err);
  TM_ASSERT_OK(tm_kv_set(&p, "allow_http", "true", &err), &err);
  const char *urls[] = {"s3://" BUCKET "/front/", "s3a://" BUCKET "/front/"};
  for (int i = 0; i < 2; i++) {
    tm_objstore *s = NULL;
    char *prefix = NULL;
    TM_ASSERT_OK(tm_objstore_open_url(&s, &prefix, urls[i], &p, &err), &err);
    TM_ASSERT_STR_EQ(prefix, "front/");
    char *key = tm_objstore_join(prefix, "f.csv");
    TM_ASSERT_OK(tm_objstore_put(s, key, "a\n", 2, 0, &err), &err);
    tm_obj_list l;
    tm_obj_list_init(&l);
    TM_ASSERT_OK(tm_objstore_list_all(s, prefix, 10, &l, &err), &err);
    TM_ASSERT_INT_EQ(l.len, 1);
    tm_obj_list_dispose(&l);
    tm_free(key);
    tm_free(prefix);
    tm_objstore_free(s);
  }
  /* The same through AWS_* environment variables and no params. */
  tm_kv_dispose(&p);
  tm_kv_init(&p);
  TM_ASSERT_OK(tm_kv_set(&p, "allow_http", "true", &err), &err);
  setenv("AWS_ENDPOINT_URL", endpoint, 1);
  setenv("AWS_ACCESS_KEY_ID", KEY, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
  tm_objstore *s = NULL;
  char *prefix = NULL;
  TM_ASSERT_OK(tm_objstore_open_url(&s, &prefix, "s3://" BUCKET "/front/f.csv", &p, &err), &err);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, prefix, &st, &err), &err);
  TM_ASSERT(st.exists);
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  tm_free(prefix);
  tm_objstore_free(s);
  tm_kv_dispose(&p);
}

TM_TEST(s3_stopped_server_is_unavailable_and_retries_end) {
  /* SPEC D3: the source goes away; every call fails with TM_EUNAVAILABLE, naming the endpoint. */
  server srv;
  if (g_skip || !server_start(&srv, NULL)) {
    tm_test__note("needs-s3: skipped");
    return;
  }
  tm_error err;
  tm_s3_options o = options(srv.port);
  tm_objstore *s = store_with(&o);
  TM_ASSERT_OK(tm_objstore_put(s, "d3/x", "1", 1, 0, &err), &err);
  char endpoint[64];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", srv.port);
  server_stop(&srv);
  int64_t t0 = tm_monotonic_ns();
  tm_obj_stat st;
  TM_ASSERT_RC(tm_objstore_stat(s, "d3/x", &st, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, endpoint);
  TM_ASSERT_CONTAINS(err.message, "unreachable");
  TM_ASSERT_CONTAINS(err.message, "4 attempts");
  TM_ASSERT_INT_EQ(stats_of(s).retries, 3);
  tm_obj_list l;
  tm_obj_list_init(&l);
  TM_ASSERT_RC(tm_objstore_list_all(s, "d3/", 10, &l, &err), TM_EUNAVAILABLE);
  tm_obj_list_dispose(&l);
  TM_ASSERT_RC(tm_objstore_put(s, "d3/y", "1", 1, 0, &err), TM_EUNAVAILABLE);
  char buf[2];
  size_t n;
  TM_ASSERT_RC(tm_objstore_read(s, "d3/x", 0, buf, 1, &n, &err), TM_EUNAVAILABLE);
  TM_ASSERT_INT_EQ(stats_of(s).retries, 12);
  /* Backoff is bounded: four calls of four attempts each finish quickly. */
  TM_ASSERT(tm_monotonic_ns() - t0 < 5 * 1000000000LL);
  tm_objstore_free(s);
}
