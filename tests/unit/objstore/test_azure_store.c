/*
 * Tests of objstore/azure against Azurite (npm azurite, tests/node) on
 * 127.0.0.1 with a kernel-chosen port, in memory (SPEC §4, A7, C2, D3).
 * Tagged needs-azurite: skipped, with a message, only when node or azurite
 * is not installed (scripts/install-test-deps). The container is made by
 * tests/tools/azblob.py, which signs Shared Key independently (Python).
 *
 * Covered: put/stat/read/delete with Shared Key, keys with reserved and
 * UTF-8 characters, listing across pages (maxresults 2) in key order with
 * last-modified times, ranged reads, Put Block + Put Block List with a
 * small block size (a multi-block upload read back exactly), create-only
 * puts (TM_ECONFLICT), a missing blob and container, a wrong key (403), and
 * a stopped server (TM_EUNAVAILABLE naming the endpoint). Faults, through
 * tests/tools/fault_proxy.py in front of Azurite: 503, 500 and 429 retried on
 * reads, stats, listing pages and uploads; a persistent 503 gives up after
 * 1 + max_retries attempts naming Azure's error code; a 403 is not retried;
 * reset connections are retried; a body cut short resumes after the bytes
 * already read.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "objstore/azure/azure.h"
#include "tm_test.h"
#include "util/alloc.h"

extern char **environ;

typedef struct server {
  pid_t pid;
  FILE *out;
  int port;
} server;

static server g_srv;
static bool g_skip;

static void server_stop(server *s) {
  if (s->pid <= 0) return;
  kill(s->pid, SIGTERM);
  int st;
  while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (s->out) fclose(s->out);
  memset(s, 0, sizeof *s);
}

static void stop_shared(void) { server_stop(&g_srv); }

static bool server_start(server *s) {
  memset(s, 0, sizeof *s);
  char main_js[1024];
  snprintf(main_js, sizeof main_js, "%s/tests/node/node_modules/azurite/dist/src/blob/main.js",
           tm_test_source_dir());
  if (access(main_js, R_OK) != 0 || system("node --version >/dev/null 2>&1") != 0 ||
      system("python3 --version >/dev/null 2>&1") != 0)
    return false;
  int out_pipe[2];
  TM_ASSERT(pipe(out_pipe) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  const char *argv[] = {"node", main_js, "--blobHost", "127.0.0.1", "--blobPort", "0",
                        "--inMemoryPersistence", "--extentMemoryLimit", "256",
                        "--disableTelemetry", "--silent", NULL};
  int rc = posix_spawnp(&s->pid, "node", &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  TM_ASSERT_MSG(rc == 0, "posix_spawn node: %s", strerror(rc));
  s->out = fdopen(out_pipe[0], "r");
  char line[512];
  const char *mark = "successfully listens on http://127.0.0.1:";
  while (fgets(line, sizeof line, s->out)) {
    const char *p = strstr(line, mark);
    if (p) {
      s->port = (int)strtol(p + strlen(mark), NULL, 10);
      break;
    }
  }
  TM_ASSERT_MSG(s->port > 0, "azurite did not say its port");
  return true;
}

static void azblob(const server *s, const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "python3 %s/tests/tools/azblob.py --endpoint http://127.0.0.1:%d/%s %s",
           tm_test_source_dir(), s->port, TM_AZURE_EMULATOR_ACCOUNT, args);
  TM_ASSERT_MSG(system(cmd) == 0, "%s", cmd);
}

static bool shared(void) {
  if (g_skip) return false;
  if (g_srv.pid > 0) return true;
  if (!server_start(&g_srv)) {
    tm_test__note("needs-azurite: node, python3 or azurite missing (run scripts/install-test-deps); skipped");
    g_skip = true;
    return false;
  }
  atexit(stop_shared);
  azblob(&g_srv, "mkcontainer tm-test");
  return true;
}

static tm_azure_options options(int port) {
  static char endpoint[96];
  snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/%s", port, TM_AZURE_EMULATOR_ACCOUNT);
  tm_azure_options o;
  tm_azure_options_init(&o);
  o.container = "tm-test";
  o.account = TM_AZURE_EMULATOR_ACCOUNT;
  o.access_key = TM_AZURE_EMULATOR_KEY;
  o.endpoint = endpoint;
  o.allow_http = true;
  o.retry_base_ms = 20;
  o.retry_max_ms = 100;
  return o;
}

static tm_objstore *open_store(const tm_azure_options *o) {
  tm_error err;
  tm_objstore *s = NULL;
  TM_ASSERT_OK(tm_objstore_azure_new(&s, o, &err), &err);
  return s;
}

TM_TEST(azure_store_put_stat_read_delete) {
  if (!shared()) return;
  tm_azure_options o = options(g_srv.port);
  tm_objstore *s = open_store(&o);
  tm_error err;
  const char *keys[] = {"rt/plain.txt", "rt/a b+c%d?e#f.txt", "rt/\xc3\xa9t\xc3\xa9/\xe2\x82\xac.txt",
                        "rt/x//y"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    TM_ASSERT_OK(tm_objstore_put(s, keys[i], "hello azure", 11, TM_OBJ_PUT_ATOMIC, &err), &err);
    tm_obj_stat st;
    TM_ASSERT_OK(tm_objstore_stat(s, keys[i], &st, &err), &err);
    TM_ASSERT(st.exists);
    TM_ASSERT_INT_EQ(st.size, 11);
    TM_ASSERT(st.mtime_ms > INT64_C(1700000000000));
    char *all = NULL;
    size_t n = 0;
    TM_ASSERT_OK(tm_objstore_read_all(s, keys[i], 100, &all, &n, &err), &err);
    TM_ASSERT_STR_EQ(all, "hello azure");
    tm_free(all);
    char part[8];
    size_t got = 0;
    TM_ASSERT_OK(tm_objstore_read(s, keys[i], 6, part, 5, &got, &err), &err);
    TM_ASSERT_INT_EQ(got, 5);
    TM_ASSERT(memcmp(part, "azure", 5) == 0);
    TM_ASSERT_OK(tm_objstore_read(s, keys[i], 11, part, 5, &got, &err), &err);
    TM_ASSERT_INT_EQ(got, 0); /* at the end: 416, an empty read */
  }
  TM_ASSERT_OK(tm_objstore_put(s, "rt/empty", "", 0, 0, &err), &err);
  char *all = NULL;
  size_t n = 7;
  TM_ASSERT_OK(tm_objstore_read_all(s, "rt/empty", 100, &all, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, 0);
  tm_free(all);
  TM_ASSERT_OK(tm_objstore_delete(s, keys[0], &err), &err);
  TM_ASSERT_OK(tm_objstore_delete(s, keys[0], &err), &err); /* missing: fine */
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, keys[0], &st, &err), &err);
  TM_ASSERT(!st.exists);
  TM_ASSERT_RC(tm_objstore_read_all(s, keys[0], 100, &all, &n, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "no such blob");
  tm_objstore_stats stats;
  tm_objstore_get_stats(s, &stats);
  TM_ASSERT(stats.requests > 10 && stats.bytes_out >= 44 && stats.bytes_in >= 44);
  tm_objstore_free(s);
}

typedef struct seen {
  char keys[16][64];
  int64_t mtime[16];
  size_t n;
} seen;

static int collect(const tm_obj_info *info, void *payload) {
  seen *v = payload;
  if (v->n < 16) {
    snprintf(v->keys[v->n], 64, "%s", info->key);
    v->mtime[v->n] = info->mtime_ms;
  }
  v->n++;
  return TM_OK;
}

TM_TEST(azure_store_lists_across_pages_in_key_order) {
  if (!shared()) return;
  tm_azure_options o = options(g_srv.port);
  o.list_page_size = 2;
  tm_objstore *s = open_store(&o);
  tm_error err;
  const char *keys[] = {"ls/e", "ls/b", "ls/a/1", "ls/d", "ls/c", "lsx/other"};
  for (size_t i = 0; i < 6; i++) TM_ASSERT_OK(tm_objstore_put(s, keys[i], "x", 1, 0, &err), &err);
  seen v = {0};
  TM_ASSERT_OK(tm_objstore_list(s, "ls/", collect, &v, &err), &err);
  TM_ASSERT_INT_EQ(v.n, 5);
  const char *want[] = {"ls/a/1", "ls/b", "ls/c", "ls/d", "ls/e"};
  for (size_t i = 0; i < 5; i++) {
    TM_ASSERT_STR_EQ(v.keys[i], want[i]);
    TM_ASSERT(v.mtime[i] > INT64_C(1700000000000));
  }
  memset(&v, 0, sizeof v);
  TM_ASSERT_OK(tm_objstore_list(s, "ls", collect, &v, &err), &err);
  TM_ASSERT_INT_EQ(v.n, 6); /* a string prefix: lsx/other too */
  tm_objstore_stats stats;
  tm_objstore_get_stats(s, &stats);
  TM_ASSERT(stats.requests >= 6 + 3 + 3); /* puts, then 3 pages per listing */
  tm_objstore_free(s);
}

TM_TEST(azure_store_put_blocks_and_create_only) {
  if (!shared()) return;
  tm_azure_options o = options(g_srv.port);
  o.single_put_max = 64 * 1024;
  o.block_size = 40 * 1024;
  tm_objstore *s = open_store(&o);
  tm_error err;
  size_t len = 200 * 1024 + 17; /* 6 blocks, the last one short */
  unsigned char *data = tm_malloc(len);
  TM_ASSERT(data != NULL);
  for (size_t i = 0; i < len; i++) data[i] = (unsigned char)(i * 31 + i / 7);
  tm_objstore_stats before, after;
  tm_objstore_get_stats(s, &before);
  TM_ASSERT_OK(tm_objstore_put(s, "blk/big.bin", data, len, TM_OBJ_PUT_ATOMIC, &err), &err);
  tm_objstore_get_stats(s, &after);
  TM_ASSERT_INT_EQ(after.requests - before.requests, 7); /* 6 Put Block + 1 Put Block List */
  char *back = NULL;
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, "blk/big.bin", len + 1, &back, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, len);
  TM_ASSERT(memcmp(back, data, len) == 0);
  tm_free(back);
  /* Create-only: a second put of either size is TM_ECONFLICT and changes nothing. */
  TM_ASSERT_RC(tm_objstore_put(s, "blk/big.bin", "x", 1, TM_OBJ_PUT_IF_ABSENT, &err),
               TM_ECONFLICT);
  TM_ASSERT_CONTAINS(err.message, "already exists");
  TM_ASSERT_RC(tm_objstore_put(s, "blk/big.bin", data, len, TM_OBJ_PUT_IF_ABSENT, &err),
               TM_ECONFLICT);
  TM_ASSERT_OK(tm_objstore_put(s, "blk/new.bin", data, len, TM_OBJ_PUT_IF_ABSENT, &err), &err);
  TM_ASSERT_OK(tm_objstore_put(s, "blk/small", "y", 1, TM_OBJ_PUT_IF_ABSENT, &err), &err);
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "blk/big.bin", &st, &err), &err);
  TM_ASSERT_INT_EQ(st.size, len);
  tm_free(data);
  tm_objstore_free(s);
}

TM_TEST(azure_store_errors) {
  if (!shared()) return;
  tm_error err;
  tm_azure_options o = options(g_srv.port);
  o.access_key = "bm90IHRoZSBrZXk="; /* "not the key" */
  tm_objstore *s = open_store(&o);
  tm_obj_stat st;
  TM_ASSERT_RC(tm_objstore_stat(s, "rt/plain.txt", &st, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "access denied (403");
  TM_ASSERT_CONTAINS(err.message, "check abfs_account and abfs_access_key");
  seen v = {0};
  TM_ASSERT_RC(tm_objstore_list(s, "", collect, &v, &err), TM_EIO);
  TM_ASSERT_CONTAINS(err.message, "AuthorizationFailure");
  tm_objstore_free(s);
  o = options(g_srv.port);
  o.container = "no-such-container";
  s = open_store(&o);
  TM_ASSERT_RC(tm_objstore_list(s, "", collect, &v, &err), TM_ENOTFOUND);
  TM_ASSERT_CONTAINS(err.message, "no such container");
  tm_objstore_free(s);
  /* Nothing listens: TM_EUNAVAILABLE naming the endpoint, after the retries. */
  server dead;
  TM_ASSERT(server_start(&dead));
  int port = dead.port;
  server_stop(&dead);
  o = options(port);
  o.max_retries = 2;
  s = open_store(&o);
  TM_ASSERT_RC(tm_objstore_stat(s, "k", &st, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "is unreachable");
  TM_ASSERT_CONTAINS(err.message, "(3 attempts)");
  tm_objstore_stats stats;
  tm_objstore_get_stats(s, &stats);
  TM_ASSERT_INT_EQ(stats.retries, 2);
  tm_objstore_free(s);
}

/* ---- faults: tests/tools/fault_proxy.py in front of Azurite ---------------------- */

typedef struct proxy {
  pid_t pid;
  FILE *in, *out;
  int port;
} proxy;

static proxy g_proxy;

static void stop_proxy(void) {
  if (g_proxy.pid <= 0) return;
  fclose(g_proxy.in); /* the proxy exits when its stdin closes */
  int st;
  while (waitpid(g_proxy.pid, &st, 0) < 0 && errno == EINTR) {
  }
  fclose(g_proxy.out);
  memset(&g_proxy, 0, sizeof g_proxy);
}

static bool proxied(void) {
  if (!shared()) return false;
  if (g_proxy.pid > 0) return true;
  char script[1024], target[64];
  snprintf(script, sizeof script, "%s/tests/tools/fault_proxy.py", tm_test_source_dir());
  snprintf(target, sizeof target, "127.0.0.1:%d", g_srv.port);
  int in_pipe[2], out_pipe[2];
  TM_ASSERT(pipe(in_pipe) == 0 && pipe(out_pipe) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_addclose(&fa, in_pipe[1]);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  const char *argv[] = {"python3", script, "--target", target, NULL};
  int rc = posix_spawnp(&g_proxy.pid, "python3", &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  TM_ASSERT_MSG(rc == 0, "posix_spawn python3: %s", strerror(rc));
  g_proxy.in = fdopen(in_pipe[1], "w");
  g_proxy.out = fdopen(out_pipe[0], "r");
  char line[128];
  TM_ASSERT(fgets(line, sizeof line, g_proxy.out) != NULL);
  TM_ASSERT_MSG(sscanf(line, "listening %d", &g_proxy.port) == 1, "proxy said %s", line);
  atexit(stop_proxy);
  return true;
}

static void proxy_cmd(const char *cmd) {
  char line[128];
  fprintf(g_proxy.in, "%s\n", cmd);
  fflush(g_proxy.in);
  TM_ASSERT(fgets(line, sizeof line, g_proxy.out) != NULL);
  TM_ASSERT_STR_EQ(line, "ok\n");
}

static uint64_t retries_of(tm_objstore *s) {
  tm_objstore_stats st;
  tm_objstore_get_stats(s, &st);
  return st.retries;
}

TM_TEST(azure_store_retries_5xx_and_429_then_gives_up) {
  if (!proxied()) return;
  tm_error err;
  tm_azure_options o = options(g_proxy.port);
  o.max_retries = 3;
  tm_objstore *s = open_store(&o);
  TM_ASSERT_OK(tm_objstore_put(s, "fault/x", "payload", 7, 0, &err), &err);
  proxy_cmd("fail 503 2");
  char *back = NULL;
  TM_ASSERT_OK(tm_objstore_read_all(s, "fault/x", 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "payload");
  tm_free(back);
  back = NULL;
  TM_ASSERT_INT_EQ(retries_of(s), 2);
  proxy_cmd("fail 429 1");
  proxy_cmd("fail 500 1");
  tm_obj_stat st;
  TM_ASSERT_OK(tm_objstore_stat(s, "fault/x", &st, &err), &err);
  TM_ASSERT(st.exists);
  TM_ASSERT_INT_EQ(retries_of(s), 4);
  /* A listing page and an upload are retried too (the upload with its whole body). */
  proxy_cmd("fail 500 1");
  seen v = {0};
  TM_ASSERT_OK(tm_objstore_list(s, "fault/", collect, &v, &err), &err);
  TM_ASSERT_INT_EQ(v.n, 1);
  proxy_cmd("fail 503 1");
  TM_ASSERT_OK(tm_objstore_put(s, "fault/y", "again", 5, 0, &err), &err);
  TM_ASSERT_OK(tm_objstore_read_all(s, "fault/y", 100, &back, NULL, &err), &err);
  TM_ASSERT_STR_EQ(back, "again");
  tm_free(back);
  back = NULL;
  /* Persistent failure: 1 + max_retries attempts, then TM_EUNAVAILABLE with Azure's code. */
  proxy_cmd("fail 503 4");
  tm_objstore_stats a, b;
  tm_objstore_get_stats(s, &a);
  TM_ASSERT_RC(tm_objstore_read_all(s, "fault/x", 100, &back, NULL, &err), TM_EUNAVAILABLE);
  TM_ASSERT_CONTAINS(err.message, "ServerBusy");
  TM_ASSERT_CONTAINS(err.message, "4 attempts");
  tm_objstore_get_stats(s, &b);
  TM_ASSERT_INT_EQ(b.requests - a.requests, 4);
  /* A 403 is final: no retry. */
  proxy_cmd("fail 403 1");
  uint64_t r0 = retries_of(s);
  TM_ASSERT_RC(tm_objstore_stat(s, "fault/x", &st, &err), TM_EIO);
  TM_ASSERT_INT_EQ(retries_of(s), r0);
  proxy_cmd("clear");
  tm_objstore_free(s);
}

TM_TEST(azure_store_broken_connections_are_retried_and_reads_resume) {
  if (!proxied()) return;
  tm_error err;
  tm_azure_options o = options(g_proxy.port);
  tm_objstore *s = open_store(&o);
  size_t len = 300 * 1000;
  unsigned char *data = tm_malloc(len);
  TM_ASSERT(data != NULL);
  for (size_t i = 0; i < len; i++) data[i] = (unsigned char)(i * 7 + i / 251);
  TM_ASSERT_OK(tm_objstore_put(s, "fault/big", data, len, 0, &err), &err);
  /* Reset before any response: retried (libcurl itself retries once on a reused
   * connection that turns out dead, so our count is 2 or 1 for the two resets). */
  proxy_cmd("reset 2");
  tm_obj_stat st;
  uint64_t r0 = retries_of(s);
  TM_ASSERT_OK(tm_objstore_stat(s, "fault/big", &st, &err), &err);
  TM_ASSERT_INT_EQ(st.size, len);
  TM_ASSERT(retries_of(s) - r0 >= 1 && retries_of(s) - r0 <= 2);
  /* A body cut short: the read resumes after the bytes it has, exactly. */
  proxy_cmd("cut 100000");
  tm_objstore_stats a, b;
  tm_objstore_get_stats(s, &a);
  char *back = NULL;
  size_t n = 0;
  TM_ASSERT_OK(tm_objstore_read_all(s, "fault/big", len + 1, &back, &n, &err), &err);
  TM_ASSERT_INT_EQ(n, len);
  TM_ASSERT(memcmp(back, data, len) == 0);
  tm_free(back);
  tm_objstore_get_stats(s, &b);
  TM_ASSERT_INT_EQ(b.retries - a.retries, 1);
  /* Bytes in: the cut part once, then only the rest (a resume, not a re-read). */
  TM_ASSERT_MSG(b.bytes_in - a.bytes_in <= len + 1024, "read %llu bytes for %zu",
                (unsigned long long)(b.bytes_in - a.bytes_in), len);
  proxy_cmd("clear");
  tm_free(data);
  tm_objstore_free(s);
}
