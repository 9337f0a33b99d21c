/*
 * status.h - one dataset's state as JSON (runtime layer; SPEC 1.2, 1.3).
 *
 * The same document answers GET /v1/datasets/{name}/acceleration and feeds
 * `tidemark status`, locally (-c) and through a server (--url), so the two
 * always agree. Fields (null when unknown):
 *
 *   name, from, acceleration_enabled, status, ready, engine, mode,
 *   refresh_mode, refresh_check_interval, rows, size_bytes,
 *   high_water_mark (RFC 3339), saved_snapshot_id,
 *   last_refresh {started_at, mode, read, rows_written, rows_read,
 *                 rows_deduplicated, rows_superseded, duration_ms,
 *                 fallback_reason, snapshots, files_read, files_skipped,
 *                 row_groups_read, row_groups_skipped},
 *   last_error {message, at}
 *
 * docs/HTTP_API.md shows an example.
 */
#ifndef TM_RUNTIME_STATUS_H
#define TM_RUNTIME_STATUS_H

#include <jansson.h>

#include "refresh/accel.h"
#include "refresh/dataset.h"

/**
 * The state of accel a (may be NULL: a dataset not loaded yet) for dataset
 * def, with status_name as its SPEC 1.3 status. Returns a new reference, or
 * NULL when out of memory.
 */
json_t *tm_status_json(tm_accel *a, const tm_dataset_def *def, const char *status_name);

/**
 * A JSON string of s, with every byte that is not part of a valid UTF-8
 * sequence replaced by '?' (messages may quote paths or request bytes that
 * are not UTF-8; jansson refuses those). A new reference, or NULL when out of
 * memory.
 */
json_t *tm_json_text(const char *s);

/** Appends an RFC 3339 UTC rendering of wall-clock ms to a JSON object as key. */
int tm_status_set_time(json_t *obj, const char *key, int64_t ms);

#endif
