/*
 * metrics.h - a registry of counters, gauges and histograms with labels,
 * rendered in the Prometheus text exposition format (util layer; SPEC 1.4).
 *
 * A family is registered once with its label names; series are created on
 * first use of a label-value tuple. All operations are thread-safe (one mutex
 * per registry; updates are rare compared with the work they measure).
 */
#ifndef TM_UTIL_METRICS_H
#define TM_UTIL_METRICS_H

#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

typedef enum tm_metric_kind {
  TM_METRIC_COUNTER,
  TM_METRIC_GAUGE,
  TM_METRIC_HISTOGRAM
} tm_metric_kind;

typedef struct tm_metrics tm_metrics; /* a registry */
typedef struct tm_metric tm_metric;   /* one family, owned by its registry */

#define TM_METRIC_MAX_LABELS 4
#define TM_METRIC_MAX_BUCKETS 32

/** A new empty registry; release with tm_metrics_free. */
tm_metrics *tm_metrics_new(void);
void tm_metrics_free(tm_metrics *r);

/**
 * Registers a family. labels: comma-separated label names ("dataset,reason"),
 * or "" for none. buckets: upper bounds in increasing order (histograms only;
 * +Inf is implicit). The family is owned by the registry and lives as long as
 * it. Registering the same name twice returns the existing family if its kind
 * and labels match, else TM_EINVALID.
 */
int tm_metrics_register(tm_metrics *r, tm_metric **out, tm_metric_kind kind,
                        const char *name, const char *help, const char *labels,
                        const double *buckets, size_t n_buckets, tm_error *err)
    TM_WARN_UNUSED;

/** Looks up a registered family by name; NULL if absent. */
tm_metric *tm_metrics_find(tm_metrics *r, const char *name);

/*
 * Updates. `values` holds one string per label name (NULL when the family has
 * no labels). A failure to allocate a new series is dropped silently:
 * metrics never fail the work they measure.
 */
void tm_metric_add(tm_metric *m, const char *const *values, double v);    /* counter, gauge */
void tm_metric_set(tm_metric *m, const char *const *values, double v);    /* gauge */
void tm_metric_observe(tm_metric *m, const char *const *values, double v);/* histogram */

/**
 * Reads a series: the counter/gauge value, or a histogram's count. Returns
 * TM_ENOTFOUND if the series was never touched.
 */
int tm_metric_get(tm_metric *m, const char *const *values, double *out);

/** Appends the whole registry in the text format (version 0.0.4) to out. */
int tm_metrics_render(tm_metrics *r, tm_buf *out, tm_error *err) TM_WARN_UNUSED;

#endif
