/*
 * refresh_fixture.h - small datasets and row checks for the fault-injection
 * tests of refreshes (test harness; issue 10, SPEC D1-D3).
 *
 * A fixture builds, in a folder of its own, a file dataset (Parquet and CSV
 * files of generated rows) or an Iceberg table (authored with the writer of
 * format/iceberg/writer.h), a config naming it, and the tm_accel that
 * refreshes it. Rows are compared as multisets through a signature: the row
 * count and two order-independent sums of per-row hashes, so "exactly the
 * old rows or exactly the new rows" is one comparison.
 *
 * Every generated row is (id int64, ts int64 unix seconds, v utf8, x float64)
 * and is a pure function of its id: rows_sig_ids() computes the signature of
 * an id range without reading anything.
 */
#ifndef TM_TEST_REFRESH_FIXTURE_H
#define TM_TEST_REFRESH_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "refresh/accel.h"
#include "runtime/config/config.h"

/** A multiset of rows, by signature. */
typedef struct rfx_sig {
  int64_t rows;
  uint64_t sum1, sum2;
} rfx_sig;

bool rfx_sig_eq(rfx_sig a, rfx_sig b);
/** Adds the generated rows with ids [lo, hi) to s. */
void rfx_sig_add_ids(rfx_sig *s, int64_t lo, int64_t hi);
/** Signature of the generated rows [lo, hi). */
rfx_sig rfx_sig_ids(int64_t lo, int64_t hi);

/** Writes the generated rows [lo, hi) as a Parquet file (fails the test on error). */
void rfx_write_parquet(const char *path, int64_t lo, int64_t hi);
/** The same rows as a CSV file with a header. */
void rfx_write_csv(const char *path, int64_t lo, int64_t hi);

/** Creates an unpartitioned Iceberg table (the generated columns) at folder root. */
void rfx_ice_create(const char *root);
/** One append snapshot of the generated rows [lo, hi) (written as CSV, then appended). */
void rfx_ice_append(const char *root, int64_t lo, int64_t hi);
/** One delete snapshot (position deletes) of the rows whose id is in [lo, hi). */
void rfx_ice_delete(const char *root, int64_t lo, int64_t hi);

/** A loaded config and the accel of its first dataset. */
typedef struct rfx {
  char dir[1024]; /* the config's folder */
  char *yaml;     /* owned: the config text */
  tm_config cfg;
  bool has_cfg;
  tm_db *db;      /* the DuckDB instance (tm_runtime_db_open of cfg) */
  tm_accel *a;    /* NULL when closed */
} rfx;

/**
 * Loads the config text yaml with dir as its folder and opens the accel of
 * its first dataset (not failing: call before injecting faults).
 */
void rfx_open(rfx *f, const char *dir, const char *yaml);
/** tm_accel_new again over the same config (reopens a file-mode acceleration). */
void rfx_reopen(rfx *f);
/** As a process restart: a new DuckDB instance, then the accel again. */
void rfx_restart(rfx *f);
/** Frees the accel and the config. */
void rfx_close(rfx *f);

/**
 * The signature of the rows the accel serves now (empty when it has no
 * acceleration). Returns the tm code of reading them.
 */
int rfx_accel_sig(tm_accel *a, rfx_sig *out, tm_error *err);

/* ---- scenarios: a source, a refresh kind, an engine ------------------------------ */

typedef enum rfx_src { RFX_FILES, RFX_ICEBERG } rfx_src;
typedef enum rfx_kind { RFX_FIRST, RFX_APPEND, RFX_FULL } rfx_kind;

typedef struct rfx_scenario {
  const char *name;
  rfx_src src;
  rfx_kind kind;
  const char *accel;   /* the acceleration block's engine lines ("      engine: ...\n") */
  bool memory;         /* memory mode: no reopen, the base is loaded in each run */
  const char *ice_url; /* Iceberg `from` (default iceberg:file://tbl) */
} rfx_scenario;

#define RFX_CAYENNE "      engine: cayenne\n"
#define RFX_SQLITE "      engine: sqlite\n      mode: file\n"
#define RFX_ARROW "      engine: arrow\n"
#define RFX_DUCKDB "      engine: duckdb\n      mode: file\n"

/*
 * A scenario's starting point in a folder: the source (data/ with
 * a.parquet [0,200) and b.csv [200,300), or tbl/ with two append
 * snapshots of the same rows), the staged change (new/ or tbl-next/: append
 * [300,400) and [400,450); full: add [300,400) and drop b.csv, or delete
 * [100,150)), and for file-mode appends and full refreshes the base
 * acceleration already loaded. A first load starts from the same source
 * with no acceleration and no change.
 */
typedef struct rfx_template {
  char dir[1024];
  char yaml[2048];
  rfx_sig old_rows, new_rows; /* served before and after the refresh under test */
} rfx_template;

void rfx_template_make(rfx_template *t, const rfx_scenario *s, const char *dir);
/** Applies the staged change in a copy of the template (after its base load). */
void rfx_template_apply(const rfx_scenario *s, const char *dir);

/** cp -a from to (to must not exist). */
void rfx_copy_tree(const char *from, const char *to);
/** rm -rf path. */
void rfx_remove_tree(const char *path);

/** A log sink that drops every line (fault sweeps log thousands of errors). */
void rfx_quiet_logs(void);

#endif
