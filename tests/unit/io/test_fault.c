/*
 * Unit tests for io/fault.c: the write and sync wrappers fail, or write
 * short, at the N-th call, and the atomic file output turns each into a
 * clean error that leaves the target as it was (issue 10; SPEC D1).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

static tm_io_fault fault(unsigned ops, int64_t nth) {
  tm_io_fault f = {TM_IO_FAULT_VERSION, ops, nth, 0, false, false};
  return f;
}

static void expect_file(const char *path, const char *text) {
  tm_error err;
  char *got = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 1 << 20, &got, &len, &err), &err);
  TM_ASSERT_STR_EQ(got, text);
  tm_free(got);
}

TM_TEST(io_fault_counts_and_fails_the_nth_write) {
  const char *path = tm_test_path("f");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  TM_ASSERT(fd >= 0);
  tm_io_fault f = fault(TM_IO_FAULT_WRITE, 2);
  tm_io_fault_set(&f);
  TM_ASSERT_INT_EQ(tm_io_write(fd, "ab", 2), 2);
  TM_ASSERT(!tm_io_fault_fired());
  errno = 0;
  TM_ASSERT_INT_EQ(tm_io_write(fd, "cd", 2), -1);
  TM_ASSERT_INT_EQ(errno, ENOSPC);
  TM_ASSERT(tm_io_fault_fired());
  TM_ASSERT_INT_EQ(tm_io_write(fd, "ef", 2), 2); /* not sticky: the next call passes */
  TM_ASSERT_INT_EQ(tm_io_fsync(fd), 0);          /* syncs are not counted by this mask */
  TM_ASSERT_INT_EQ(tm_io_fault_count(), 3);
  tm_io_fault_set(NULL);
  TM_ASSERT_INT_EQ(tm_io_fault_count(), 0);
  close(fd);
  expect_file(path, "abef");
}

TM_TEST(io_fault_short_write_then_sticky_failure) {
  const char *path = tm_test_path("f");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  TM_ASSERT(fd >= 0);
  tm_io_fault f = fault(TM_IO_FAULT_WRITE | TM_IO_FAULT_SYNC, 1);
  f.short_write = true;
  f.sticky = true;
  f.error = EFBIG;
  tm_io_fault_set(&f);
  TM_ASSERT_INT_EQ(tm_io_write(fd, "abcd", 4), 2); /* half, as a filling disk does */
  TM_ASSERT_INT_EQ(tm_io_write(fd, "cd", 2), -1);
  TM_ASSERT_INT_EQ(errno, EFBIG);
  TM_ASSERT_INT_EQ(tm_io_fdatasync(fd), -1);
  tm_io_fault_set(NULL);
  close(fd);
  expect_file(path, "ab");
}

/* Each write or sync of an atomic file fails in turn: the target keeps its old content. */
TM_TEST(D1_io_fault_atomic_file_keeps_the_old_content) {
  tm_error err;
  const char *path = tm_test_path("target");
  TM_ASSERT_OK(tm_write_file_atomic(path, "old", 3, &err), &err);
  tm_io_fault count = fault(TM_IO_FAULT_WRITE | TM_IO_FAULT_SYNC, 0);
  tm_io_fault_set(&count);
  TM_ASSERT_OK(tm_write_file_atomic(path, "new!", 4, &err), &err);
  int64_t total = tm_io_fault_count();
  TM_ASSERT_INT_EQ(total, 3); /* the write, the file's fsync, the folder's fsync */
  TM_ASSERT_OK(tm_write_file_atomic(path, "old", 3, &err), &err);
  char *dir = tm_path_dirname(path);
  for (int64_t n = 1; n <= total; n++) {
    tm_io_fault f = fault(TM_IO_FAULT_WRITE | TM_IO_FAULT_SYNC, n);
    tm_io_fault_set(&f);
    tm_atomic_file af;
    TM_ASSERT_OK(tm_atomic_file_begin(&af, path, &err), &err);
    int rc = tm_atomic_file_write(&af, "new!", 4, &err);
    if (rc == TM_OK) rc = tm_atomic_file_commit(&af, &err);
    else tm_atomic_file_abort(&af);
    tm_io_fault_set(NULL);
    TM_ASSERT_RC(rc, TM_EIO);
    TM_ASSERT_CONTAINS(err.message, n == total ? dir : path); /* the file, or its folder */
    TM_ASSERT_CONTAINS(err.message, "No space left on device");
    /* Only the folder fsync comes after the rename, and commit says so. */
    TM_ASSERT_INT_EQ(af.renamed, n == total);
    expect_file(path, n == total ? "new!" : "old");
    TM_ASSERT_OK(tm_write_file_atomic(path, "old", 3, &err), &err);
  }
  /* No temporary file is left behind. */
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
  TM_ASSERT(system(cmd) == 0);
  tm_free(dir);
}
