/*
 * fault.c - local writes and syncs with failure injection (io layer). See
 * io.h "writing local files".
 *
 * The hook is off unless a test installs one; then each counted call takes
 * a mutex (writes and syncs are system calls anyway), so background writers
 * (cayenne's segment thread) are counted consistently with the caller.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "io/io.h"

static _Atomic bool g_on;                 /* a hook is installed */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tm_io_fault g_fault;               /* guarded by g_mu */
static int64_t g_seen;                    /* counted calls; guarded by g_mu */
static bool g_fired;                      /* guarded by g_mu */

void tm_io_fault_set(const tm_io_fault *f) {
  pthread_mutex_lock(&g_mu);
  if (f) g_fault = *f;
  g_seen = 0;
  g_fired = false;
  atomic_store(&g_on, f != NULL);
  pthread_mutex_unlock(&g_mu);
}

int64_t tm_io_fault_count(void) {
  pthread_mutex_lock(&g_mu);
  int64_t n = g_seen;
  pthread_mutex_unlock(&g_mu);
  return n;
}

bool tm_io_fault_fired(void) {
  pthread_mutex_lock(&g_mu);
  bool f = g_fired;
  pthread_mutex_unlock(&g_mu);
  return f;
}

typedef enum verdict { PASS, FAIL, SHORT } verdict;

/* Counts one call of kind op; *error_out receives the errno of a failure. */
static verdict decide(unsigned op, int *error_out) {
  if (!atomic_load_explicit(&g_on, memory_order_acquire)) return PASS;
  verdict v = PASS;
  pthread_mutex_lock(&g_mu);
  if (g_fault.ops & op) {
    int64_t n = ++g_seen;
    int64_t at = g_fault.nth;
    if (at > 0 && (n == at || (n > at && g_fault.sticky))) {
      v = n == at && g_fault.short_write && op == TM_IO_FAULT_WRITE ? SHORT : FAIL;
      g_fired = true;
      *error_out = g_fault.error ? g_fault.error : ENOSPC;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return v;
}

ssize_t tm_io_write(int fd, const void *buf, size_t len) {
  int e = 0;
  verdict v = decide(TM_IO_FAULT_WRITE, &e);
  if (v == FAIL) {
    errno = e;
    return -1;
  }
  if (v == SHORT && len > 1) len /= 2;
  for (;;) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    return n;
  }
}

static int sync_call(int fd, bool data_only) {
  int e = 0;
  if (decide(TM_IO_FAULT_SYNC, &e) != PASS) {
    errno = e;
    return -1;
  }
  for (;;) {
    int r = data_only ? fdatasync(fd) : fsync(fd);
    if (r != 0 && errno == EINTR) continue;
    return r;
  }
}

int tm_io_fsync(int fd) { return sync_call(fd, false); }
int tm_io_fdatasync(int fd) { return sync_call(fd, true); }
