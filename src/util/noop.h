/*
 * noop.h - the no-op stamp of `tidemark refresh` (util layer; SPEC 1.2,
 * docs/REFRESH.md "What a no-op refresh costs").
 *
 * A cron job runs `tidemark refresh` every minute; most runs find nothing
 * new. Such a run must cost milliseconds, but a process that loads DuckDB
 * and libcurl spends 35 ms in the dynamic loader alone. So `tidemark` is a
 * small front program (front.c, linked to libc only) and the runtime is a
 * second program, tidemark-core, that the front executes.
 *
 * When a refresh run of tidemark-core changed nothing, it leaves a stamp,
 * <config dir>/.tidemark/refresh.noop, that pins everything the run's
 * outcome depended on:
 *   key     the command line, the current folder, the whole environment and
 *           the identity of the tidemark-core program;
 *   tree    for each path the run read: the config file, each dataset's
 *           local source (its folder, recursively) and the .tidemark folder
 *           (every acceleration file, the server's owner file): names, inode,
 *           size, modification and change times, hashed;
 *   line    the summary line each dataset printed, without its duration.
 * The next identical `tidemark refresh` finds every input as the stamp pins
 * it, so running the refresh would read nothing new and change nothing:
 * the front prints the lines (with its own duration) and exits 0 without
 * starting tidemark-core. Anything that differs, or a stamp that is damaged,
 * runs tidemark-core, which removes the stamp before it does anything.
 *
 * Only runs whose outcome depends on nothing but those inputs leave a stamp
 * (cmd_refresh.c says which): local sources, file-mode accelerations, no
 * retention, no snapshots, no warning logged, every dataset +0 rows.
 */
#ifndef TM_UTIL_NOOP_H
#define TM_UTIL_NOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TM_NOOP_STAMP_NAME "refresh.noop"       /* inside <config dir>/.tidemark */
#define TM_NOOP_STAMP_TMP "refresh.noop.tmp"
#define TM_NOOP_MAX_ENTRIES 200000              /* a tree larger than this gets no stamp */
#define TM_NOOP_MAX_STAMP_BYTES ((size_t)1 << 20)

/**
 * The key of this invocation: argv[1..argc), the current folder, the
 * environment (in sorted order, but for the shell's bookkeeping variables
 * _, SHLVL and OLDPWD, which differ between two runs of the same command
 * from a script; a config whose ${env:} names one gets no stamp,
 * tm_config.reads_volatile_env) and the identity of the program at core_path (device,
 * inode, size, times). false when one cannot be read.
 */
bool tm_noop_key(int argc, char *const *argv, const char *core_path, uint64_t *key_out);
/** Whether an environment entry ("NAME=value") is one the key leaves out. */
bool tm_noop_volatile_env(const char *entry);

/**
 * The hash of path and, for a folder, of everything below it (names in
 * sorted order, following symbolic links; the folder's own times are left
 * out, its entries' are in). A missing path hashes as missing. The stamp
 * itself (entries named TM_NOOP_STAMP_NAME or TM_NOOP_STAMP_TMP in a folder
 * named .tidemark) is left out. false for a tree past TM_NOOP_MAX_ENTRIES
 * entries or 16 levels, or one that cannot be read.
 */
bool tm_noop_tree(const char *path, uint64_t *hash_out);

/**
 * Writes the stamp file stamp_path (through a temporary file and a rename):
 * the key, each path with tree_hashes[i], and the lines. false when it
 * could not be written (the caller just goes on: a stamp is an optimisation).
 */
bool tm_noop_write(const char *stamp_path, uint64_t key, const char *const *paths,
                   const uint64_t *tree_hashes, size_t n_paths, const char *const *lines,
                   size_t n_lines);

/** What a well-formed stamp holds (tm_noop_parse). */
typedef struct tm_noop_info {
  uint64_t key;
  size_t n_trees, n_lines;
  size_t body_end;  /* offset of the "end" line */
} tm_noop_info;

/**
 * Checks that text[0, len) is a well-formed stamp whose "end" line sums it:
 * the magic line, one key, tree lines with an absolute path, at least one
 * summary line. Reads nothing else (the fuzz target's entry).
 */
bool tm_noop_parse(const char *text, size_t len, tm_noop_info *out);

/**
 * Checks the stamp at stamp_path against key and against every tree as it
 * is now. When all match, writes each line
 * followed by " in <secs> s" (the time since start_ns, tm_noop_now_ns) to
 * out and returns true; else false, and nothing is written.
 */
bool tm_noop_replay(const char *stamp_path, uint64_t key, int64_t start_ns, FILE *out);

/** CLOCK_MONOTONIC in nanoseconds. */
int64_t tm_noop_now_ns(void);

#endif
