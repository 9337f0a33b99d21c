/*
 * Unit tests for format/tar: the writer's output read back, and the reader's
 * refusals of malformed archives (the carrier of cayenne acceleration
 * snapshots, SPEC C2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/tar/tar.h"
#include "io/io.h"
#include "tm_test.h"
#include "util/alloc.h"

typedef struct seen {
  int n;
  char names[8][TM_TAR_NAME_MAX + 1];
  uint64_t sizes[8];
  char data[8][2048];
} seen;

static int collect(const tm_tar_entry *e, tm_input *in, void *payload, tm_error *err) {
  seen *s = payload;
  TM_ASSERT(s->n < 8);
  snprintf(s->names[s->n], sizeof s->names[0], "%s", e->name);
  s->sizes[s->n] = e->size;
  if (e->size && e->size <= sizeof s->data[0])
    TM_TRY(tm_input_read_exact(in, e->offset, s->data[s->n], (size_t)e->size, err));
  s->n++;
  return TM_OK;
}

static int read_file(const char *path, seen *s, tm_error *err) {
  tm_input *in = NULL;
  memset(s, 0, sizeof *s);
  TM_TRY(tm_input_open_file(&in, path, err));
  int rc = tm_tar_read(in, collect, s, err);
  tm_input_close(in);
  return rc;
}

static void write_sample(const char *path) {
  tm_error err;
  tm_tar_writer w;
  char big[1500];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
  TM_ASSERT_OK(tm_tar_writer_begin(&w, path, &err), &err);
  TM_ASSERT_OK(tm_tar_writer_add(&w, "seg-0000000000000001.tmc", big, sizeof big, 1700000000, &err), &err);
  TM_ASSERT_OK(tm_tar_writer_add(&w, "empty", "", 0, 0, &err), &err);
  TM_ASSERT_OK(tm_tar_writer_add(&w, "MANIFEST", "manifest!", 9, 1700000000, &err), &err);
  TM_ASSERT_OK(tm_tar_writer_commit(&w, &err), &err);
}

TM_TEST(tar_round_trip) {
  tm_error err;
  const char *path = tm_test_path("a.tar");
  write_sample(path);
  seen s;
  TM_ASSERT_OK(read_file(path, &s, &err), &err);
  TM_ASSERT_INT_EQ(s.n, 3);
  TM_ASSERT_STR_EQ(s.names[0], "seg-0000000000000001.tmc");
  TM_ASSERT_INT_EQ(s.sizes[0], 1500);
  TM_ASSERT(s.data[0][0] == 'a' && s.data[0][1499] == 'a' + 1499 % 26);
  TM_ASSERT_STR_EQ(s.names[1], "empty");
  TM_ASSERT_INT_EQ(s.sizes[1], 0);
  TM_ASSERT_STR_EQ(s.names[2], "MANIFEST");
  TM_ASSERT(memcmp(s.data[2], "manifest!", 9) == 0);
  /* 3 headers + 3 + 0 + 1 data blocks + 2 end blocks */
  char *bytes = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 1 << 20, &bytes, &len, &err), &err);
  TM_ASSERT_INT_EQ(len, (3 + 3 + 0 + 1 + 2) * 512);
  TM_ASSERT(memcmp(bytes + 257, "ustar", 6) == 0);
  tm_free(bytes);
  /* GNU tar reads it too, when installed. */
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "command -v tar >/dev/null && tar -tf '%s' > '%s'", path,
           tm_test_path("list.txt"));
  if (system(cmd) == 0) {
    char *list = NULL;
    TM_ASSERT_OK(tm_read_file(tm_test_path("list.txt"), 4096, &list, &len, &err), &err);
    TM_ASSERT_STR_EQ(list, "seg-0000000000000001.tmc\nempty\nMANIFEST\n");
    tm_free(list);
  }
}

TM_TEST(tar_writer_refuses_bad_names) {
  tm_error err;
  tm_tar_writer w;
  TM_ASSERT_OK(tm_tar_writer_begin(&w, tm_test_path("b.tar"), &err), &err);
  TM_ASSERT_RC(tm_tar_writer_add(&w, "a/b", "x", 1, 0, &err), TM_EINVALID);
  TM_ASSERT_RC(tm_tar_writer_add(&w, "", "x", 1, 0, &err), TM_EINVALID);
  char longname[120];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  TM_ASSERT_RC(tm_tar_writer_add(&w, longname, "x", 1, 0, &err), TM_EINVALID);
  tm_tar_writer_abort(&w);
  TM_ASSERT(!tm_path_exists(tm_test_path("b.tar")));
}

/* Reads the sample into memory, lets the case damage it, and reads it back. */
static int read_damaged(void (*damage)(char *bytes, size_t *len), tm_error *err) {
  const char *path = tm_test_path("d.tar");
  write_sample(path);
  char *bytes = NULL;
  size_t len = 0;
  TM_ASSERT_OK(tm_read_file(path, 1 << 20, &bytes, &len, err), err);
  damage(bytes, &len);
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_input_open_memory(&in, "damaged.tar", bytes, len, true, err), err);
  seen s;
  memset(&s, 0, sizeof s);
  int rc = tm_tar_read(in, collect, &s, err);
  tm_input_close(in);
  return rc;
}

static void flip_checksum(char *b, size_t *len) { (void)len; b[0] = 'x'; }
static void truncate_data(char *b, size_t *len) { (void)b; *len = 512 + 700; }
static void no_end_marker(char *b, size_t *len) { (void)b; *len -= 1024; }
static void lone_zero_block(char *b, size_t *len) { b[*len - 512] = 1; }

static void retype(char *b, char type) {
  b[156] = type;
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)b[i];
  snprintf(b + 148, 8, "%06o", sum);
  b[155] = ' ';
}
static void symlink_entry(char *b, size_t *len) { (void)len; retype(b, '2'); }

static void huge_size(char *b, size_t *len) {
  (void)len;
  memcpy(b + 124, "77777777777", 11); /* 8 GiB: past the end of the input */
  retype(b, '0');
}

TM_TEST(tar_reader_refuses_damage) {
  tm_error err;
  TM_ASSERT_RC(read_damaged(flip_checksum, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "checksum");
  TM_ASSERT_RC(read_damaged(truncate_data, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "runs past the end");
  TM_ASSERT_RC(read_damaged(no_end_marker, &err), TM_ECORRUPT);
  TM_ASSERT_CONTAINS(err.message, "without an end marker");
  TM_ASSERT_RC(read_damaged(lone_zero_block, &err), TM_ECORRUPT);
  TM_ASSERT_RC(read_damaged(symlink_entry, &err), TM_EUNSUPPORTED);
  TM_ASSERT_CONTAINS(err.message, "only regular files");
  TM_ASSERT_RC(read_damaged(huge_size, &err), TM_ECORRUPT);
}

TM_TEST(tar_base256_size) {
  /* A header whose size uses the base-256 form: 1 byte of data. */
  tm_error err;
  char b[4 * 512];
  memset(b, 0, sizeof b);
  memcpy(b, "f", 1);
  memcpy(b + 257, "ustar", 6);
  memcpy(b + 263, "00", 2);
  b[124] = (char)0x80;
  b[135] = 1;
  retype(b, '0');
  b[512] = 'z';
  tm_input *in = NULL;
  TM_ASSERT_OK(tm_input_open_memory(&in, "b256.tar", b, sizeof b, false, &err), &err);
  seen s;
  memset(&s, 0, sizeof s);
  TM_ASSERT_OK(tm_tar_read(in, collect, &s, &err), &err);
  tm_input_close(in);
  TM_ASSERT_INT_EQ(s.n, 1);
  TM_ASSERT_INT_EQ(s.sizes[0], 1);
  TM_ASSERT(s.data[0][0] == 'z');
}
