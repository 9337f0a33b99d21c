/*
 * Atomicity under SIGKILL (SPEC D1): a child process commits batches in a
 * loop to a file-mode engine (cayenne and duckdb: DuckDB files with their
 * write-ahead log; sqlite) and is killed at a random instant; the parent
 * reopens the acceleration and checks that it holds exactly the committed
 * batches: the state map names the last one, every row of every committed
 * batch is there with its last version (keyed upserts, deletes in the same
 * transaction), nothing of a later batch is.
 *
 * No DuckDB instance is open across a fork: the child opens its own, and the
 * parent opens one for each check and closes it before the next trial.
 *
 * Short form (make check): 6 trials per engine. TM_STRESS=1 (make stress,
 * tests/stress/engine_kill.sh): 120 per engine.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/db.h"
#include "engine/engine.h"
#include "tm_test.h"
#include "util/alloc.h"
#include "util/hash.h"

#define NEW_PER_BATCH 50
#define UPDATES_PER_BATCH 10
#define MAX_BATCHES 4000

static void kill_schema(tm_schema *s) {
  tm_error err;
  tm_schema_init(s);
  TM_ASSERT_OK(tm_schema_add(s, "id", tm_type_of(TM_TYPE_INT64), false, 1, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "ts", tm_type_of(TM_TYPE_INT64), false, 2, &err), &err);
  TM_ASSERT_OK(tm_schema_add(s, "tag", tm_type_of(TM_TYPE_UTF8), true, 3, &err), &err);
}

/* A DuckDB instance of this process for the kill folder. */
static int open_db(tm_db **out, tm_error *err) {
  tm_db_options o;
  tm_db_options_init(&o);
  const char *dirs[1] = {tm_test_tmpdir()};
  o.dirs = dirs;
  o.n_dirs = 1;
  o.threads = 1;
  return tm_db_open(out, &o, err);
}

static int open_for_kill(tm_engine **out, tm_db *db, tm_engine_kind kind, const char *path,
                         tm_error *err) {
  tm_schema s;
  kill_schema(&s);
  tm_engine_options o;
  tm_engine_options_init(&o);
  o.db = db;
  o.dataset = "k";
  o.mode = TM_ENGINE_FILE;
  o.path = path;
  o.time_column = "ts";
  o.time_format = TM_TIME_FORMAT_UNIX_SECONDS;
  const char *pk[] = {"id"};
  o.primary_key = pk;
  o.n_primary_key = 1;
  tm_kv oc;
  tm_kv_init(&oc);
  int rc = tm_kv_set(&oc, "id", "upsert", err);
  o.on_conflict = &oc;
  if (rc == TM_OK) rc = tm_engine_open(out, kind, &s, &o, err);
  tm_kv_dispose(&oc);
  tm_schema_dispose(&s);
  return rc;
}

/* The model: per id, the batch that last wrote it (-1: absent). */
typedef struct model {
  int32_t *writer;
  int64_t n_ids;
} model;

static int64_t update_id(int64_t k, int j) {
  return (k * 13 + (int64_t)j * 17) % (k * NEW_PER_BATCH);
}

/* Whether batch k deletes (in the same transaction) the ids with id % 97 == k % 97. */
static bool deletes(int64_t k) { return k % 10 == 9; }

static void model_apply(model *m, int64_t k) {
  for (int64_t i = 0; i < NEW_PER_BATCH; i++) m->writer[k * NEW_PER_BATCH + i] = (int32_t)k;
  if (k > 0)
    for (int j = 0; j < UPDATES_PER_BATCH; j++) m->writer[update_id(k, j)] = (int32_t)k;
  if (deletes(k))
    for (int64_t id = 0; id < (k + 1) * NEW_PER_BATCH; id++)
      if (id % 97 == k % 97) m->writer[id] = -1;
}

static int64_t ts_of(int64_t k, int64_t id) { return k * 1000 + (id % 50); }

/* Writes batch k in one transaction with state {"batch": k}. Child side: no test asserts. */
static int commit_batch(tm_engine *e, int64_t k, tm_error *err) {
  tm_schema s;
  kill_schema(&s);
  tm_batch_builder bb;
  tm_batch b;
  tm_batch_init(&b);
  int rc = tm_batch_builder_init(&bb, &s, err);
  tm_schema_dispose(&s);
  if (rc < 0) return rc;
  char tag[32];
  for (int64_t i = 0; i < NEW_PER_BATCH && rc == TM_OK; i++) {
    int64_t id = k * NEW_PER_BATCH + i;
    int len = snprintf(tag, sizeof tag, "b%lld", (long long)k);
    rc = tm_colbuilder_append_int(&bb.cols[0], id, err);
    if (rc == TM_OK) rc = tm_colbuilder_append_int(&bb.cols[1], ts_of(k, id), err);
    if (rc == TM_OK) rc = tm_colbuilder_append_bytes(&bb.cols[2], tag, (size_t)len, err);
  }
  for (int j = 0; k > 0 && j < UPDATES_PER_BATCH && rc == TM_OK; j++) {
    int64_t id = update_id(k, j);
    int len = snprintf(tag, sizeof tag, "b%lld", (long long)k);
    rc = tm_colbuilder_append_int(&bb.cols[0], id, err);
    if (rc == TM_OK) rc = tm_colbuilder_append_int(&bb.cols[1], ts_of(k, id), err);
    if (rc == TM_OK) rc = tm_colbuilder_append_bytes(&bb.cols[2], tag, (size_t)len, err);
  }
  if (rc == TM_OK) rc = tm_batch_builder_finish(&bb, &b, err);
  tm_batch_builder_dispose(&bb);
  tm_engine_txn *t = NULL;
  if (rc == TM_OK) rc = tm_engine_begin(e, TM_TXN_APPEND, &t, err);
  if (rc == TM_OK) rc = tm_engine_txn_write(t, &b, err);
  if (rc == TM_OK && deletes(k)) {
    char cond[64];
    snprintf(cond, sizeof cond, "id %% 97 = %lld", (long long)(k % 97));
    int64_t n;
    rc = tm_engine_txn_delete_where(t, cond, &n, err);
  }
  tm_kv st;
  tm_kv_init(&st);
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)k);
  if (rc == TM_OK) rc = tm_kv_set(&st, "batch", num, err);
  if (rc == TM_OK) {
    rc = tm_engine_txn_commit(t, &st, NULL, err);
    t = NULL;
  }
  if (t) tm_engine_txn_abort(t);
  tm_kv_dispose(&st);
  tm_batch_release(&b);
  return rc;
}

/* The child: commit batches from `first` on, reporting each commit on fd. */
static void child(tm_engine_kind kind, const char *path, int64_t first, int fd) {
  tm_error err;
  tm_engine *e;
  tm_db *db = NULL;
  if (open_db(&db, &err) != TM_OK || open_for_kill(&e, db, kind, path, &err) != TM_OK) {
    fprintf(stderr, "child open: %s\n", err.message);
    _exit(3); /* lint-ok: forked test child */
  }
  for (int64_t k = first; k < MAX_BATCHES; k++) {
    if (commit_batch(e, k, &err) != TM_OK) {
      fprintf(stderr, "child commit %lld: %s\n", (long long)k, err.message);
      _exit(4); /* lint-ok: forked test child */
    }
    if (write(fd, &k, sizeof k) != (ssize_t)sizeof k) _exit(5); /* lint-ok */
  }
  _exit(0); /* lint-ok: forked test child */
}

/* Reopens and compares with the model of batches [0, last]. */
static void verify(tm_engine_kind kind, const char *path, model *m, int64_t last) {
  tm_error err;
  tm_engine *e;
  tm_db *db = NULL;
  TM_ASSERT_OK(open_db(&db, &err), &err);
  TM_ASSERT_OK(open_for_kill(&e, db, kind, path, &err), &err);
  tm_engine_scan *sc;
  TM_ASSERT_OK(tm_engine_scan_open(e, NULL, 0, NULL, &sc, &err), &err);
  int64_t n_ids = (last + 1) * NEW_PER_BATCH;
  uint8_t *seen = tm_calloc((size_t)(n_ids > 0 ? n_ids : 1), 1);
  int64_t rows = 0;
  tm_batch b;
  int rc;
  while ((rc = tm_engine_scan_next(sc, &b, &err)) == TM_OK) {
    tm_colview id = tm_batch_col(&b, 0), ts = tm_batch_col(&b, 1), tag = tm_batch_col(&b, 2);
    for (int64_t r = 0; r < b.n_rows; r++) {
      int64_t i = tm_colview_int(&id, r);
      TM_ASSERT_MSG(i >= 0 && i < n_ids, "%s: row id %lld beyond batch %lld",
                    tm_engine_kind_name(kind), (long long)i, (long long)last);
      TM_ASSERT_MSG(!seen[i], "%s: id %lld twice", tm_engine_kind_name(kind), (long long)i);
      seen[i] = 1;
      int32_t w = m->writer[i];
      TM_ASSERT_MSG(w >= 0, "%s: id %lld should be deleted", tm_engine_kind_name(kind), (long long)i);
      TM_ASSERT_INT_EQ(tm_colview_int(&ts, r), ts_of(w, i));
      char want[32];
      snprintf(want, sizeof want, "b%d", (int)w);
      tm_strview got = tm_colview_bytes(&tag, r);
      TM_ASSERT(got.len == strlen(want) && memcmp(got.ptr, want, got.len) == 0);
      rows++;
    }
    tm_batch_release(&b);
  }
  TM_ASSERT_RC(rc, TM_ITEROVER);
  int64_t want_rows = 0;
  for (int64_t i = 0; i < n_ids; i++) want_rows += m->writer[i] >= 0;
  TM_ASSERT_MSG(rows == want_rows, "%s: %lld rows after batch %lld, want %lld",
                tm_engine_kind_name(kind), (long long)rows, (long long)last, (long long)want_rows);
  int64_t count;
  TM_ASSERT_OK(tm_engine_row_count(e, &count, &err), &err);
  TM_ASSERT_INT_EQ(count, rows);
  tm_free(seen);
  tm_engine_scan_free(sc);
  tm_engine_release(e);
  tm_db_release(db);
}

static int64_t committed_batch(tm_engine_kind kind, const char *path) {
  tm_error err;
  tm_engine *e;
  tm_db *db = NULL;
  TM_ASSERT_OK(open_db(&db, &err), &err);
  TM_ASSERT_OK(open_for_kill(&e, db, kind, path, &err), &err);
  tm_kv st;
  tm_kv_init(&st);
  TM_ASSERT_OK(tm_engine_read_state(e, &st, &err), &err);
  const char *v = tm_kv_get(&st, "batch");
  int64_t k = -1;
  if (v) TM_ASSERT_OK(tm_parse_int64(v, strlen(v), &k), &err);
  tm_kv_dispose(&st);
  tm_engine_release(e);
  tm_db_release(db);
  return k;
}

static void kill_trials(tm_engine_kind kind, int trials) {
  char name[64];
  snprintf(name, sizeof name, "kill-%s%s", tm_engine_kind_name(kind),
           kind == TM_ENGINE_SQLITE ? ".db" : kind == TM_ENGINE_DUCKDB ? ".duckdb" : "");
  const char *path = tm_test_path(name);
  model m;
  m.n_ids = (int64_t)MAX_BATCHES * NEW_PER_BATCH;
  m.writer = tm_malloc((size_t)m.n_ids * sizeof *m.writer);
  for (int64_t i = 0; i < m.n_ids; i++) m.writer[i] = -1;
  int64_t last = -1, applied = -1, killed_mid = 0;
  uint64_t rnd = tm_hash_mix64(tm_test_seed() ^ (uint64_t)kind);
  for (int trial = 0; trial < trials; trial++) {
    int fds[2];
    TM_ASSERT(pipe(fds) == 0);
    pid_t pid = fork();
    TM_ASSERT(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      child(kind, path, last + 1, fds[1]);
    }
    close(fds[1]);
    /* Mostly after the child's first commit (opening takes a while under the
     * sanitizers), then at a random instant up to ~300 ms of commits. */
    rnd = tm_hash_mix64(rnd + 1);
    int64_t first_ack = -2;
    if (rnd % 4 != 0) {
      struct pollfd pfd = {fds[0], POLLIN, 0};
      if (poll(&pfd, 1, 5000) == 1 && read(fds[0], &first_ack, sizeof first_ack) != (ssize_t)sizeof first_ack)
        first_ack = -2;
    }
    struct timespec ts = {0, (long)(tm_hash_mix64(rnd) % 300000) * 1000};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    TM_ASSERT(waitpid(pid, &status, 0) == pid);
    TM_ASSERT_MSG(WIFSIGNALED(status) || WEXITSTATUS(status) == 0, "child exited with %d",
                  WEXITSTATUS(status));
    int64_t acked = first_ack >= 0 ? first_ack : last, k;
    while (read(fds[0], &k, sizeof k) == (ssize_t)sizeof k) acked = k;
    close(fds[0]);
    int64_t now = committed_batch(kind, path);
    /* The acknowledged commit is there; at most the one in flight came too. */
    TM_ASSERT_MSG(now == acked || now == acked + 1, "%s trial %d: committed %lld, acknowledged %lld",
                  tm_engine_kind_name(kind), trial, (long long)now, (long long)acked);
    killed_mid += now == acked + 1;
    while (applied < now) model_apply(&m, ++applied);
    verify(kind, path, &m, now);
    last = now;
    if (last + 2 >= MAX_BATCHES) break;
  }
  tm_test__note("%s: %d trials, %lld batches committed, %lld kills after a commit's last step",
                tm_engine_kind_name(kind), trials, (long long)(last + 1), (long long)killed_mid);
  TM_ASSERT(last >= 0);
  tm_free(m.writer);
}

TM_TEST(engine_d1_sigkill_cayenne) { kill_trials(TM_ENGINE_CAYENNE, tm_test_stress() ? 120 : 6); }

TM_TEST(engine_d1_sigkill_sqlite) { kill_trials(TM_ENGINE_SQLITE, tm_test_stress() ? 120 : 6); }

TM_TEST(engine_d1_sigkill_duckdb) { kill_trials(TM_ENGINE_DUCKDB, tm_test_stress() ? 120 : 6); }
