/*
 * metrics.c - the Prometheus metrics registry (util layer). See metrics.h.
 */
#include "util/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"

typedef struct series {
  char *values[TM_METRIC_MAX_LABELS]; /* owned label values */
  double value;                       /* counter/gauge value, histogram sum */
  double count;                       /* histogram observations */
  double buckets[TM_METRIC_MAX_BUCKETS];
  struct series *next;
} series;

struct tm_metric {
  tm_metrics *registry;
  tm_metric_kind kind;
  char *name;
  char *help;
  size_t n_labels;
  char *labels[TM_METRIC_MAX_LABELS];
  size_t n_buckets;
  double bounds[TM_METRIC_MAX_BUCKETS];
  series *head, *tail; /* insertion order */
  tm_metric *next;
};

struct tm_metrics {
  pthread_mutex_t lock;
  tm_metric *head, *tail;
};

tm_metrics *tm_metrics_new(void) {
  tm_metrics *r = tm_calloc(1, sizeof *r);
  if (!r) return NULL;
  pthread_mutex_init(&r->lock, NULL);
  return r;
}

static void free_family(tm_metric *m) {
  series *s = m->head;
  while (s) {
    series *next = s->next;
    for (size_t i = 0; i < m->n_labels; i++) tm_free(s->values[i]);
    tm_free(s);
    s = next;
  }
  for (size_t i = 0; i < m->n_labels; i++) tm_free(m->labels[i]);
  tm_free(m->name);
  tm_free(m->help);
  tm_free(m);
}

void tm_metrics_free(tm_metrics *r) {
  if (!r) return;
  tm_metric *m = r->head;
  while (m) {
    tm_metric *next = m->next;
    free_family(m);
    m = next;
  }
  pthread_mutex_destroy(&r->lock);
  tm_free(r);
}

static bool valid_name(const char *s) {
  if (!*s) return false;
  for (const char *p = s; *p; p++) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (p != s && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

tm_metric *tm_metrics_find(tm_metrics *r, const char *name) {
  pthread_mutex_lock(&r->lock);
  tm_metric *m = r->head;
  while (m && strcmp(m->name, name) != 0) m = m->next;
  pthread_mutex_unlock(&r->lock);
  return m;
}

int tm_metrics_register(tm_metrics *r, tm_metric **out, tm_metric_kind kind,
                        const char *name, const char *help, const char *labels,
                        const double *buckets, size_t n_buckets, tm_error *err) {
  if (!valid_name(name)) return tm_error_set(err, TM_EINVALID, "bad metric name '%s'", name);
  if (n_buckets > TM_METRIC_MAX_BUCKETS)
    return tm_error_set(err, TM_EINVALID, "too many buckets for metric '%s'", name);
  tm_metric *m = tm_calloc(1, sizeof *m);
  if (!m) return tm_error_nomem(err);
  m->registry = r;
  m->kind = kind;
  m->name = tm_strdup(name);
  m->help = tm_strdup(help ? help : "");
  if (!m->name || !m->help) goto nomem;
  const char *p = labels ? labels : "";
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (m->n_labels == TM_METRIC_MAX_LABELS) {
      free_family(m);
      return tm_error_set(err, TM_EINVALID, "too many labels for metric '%s'", name);
    }
    m->labels[m->n_labels] = tm_strndup(p, len);
    if (!m->labels[m->n_labels]) goto nomem;
    if (!valid_name(m->labels[m->n_labels++])) {
      free_family(m);
      return tm_error_set(err, TM_EINVALID, "bad label name in metric '%s'", name);
    }
    p += len;
    if (*p == ',') p++;
  }
  for (size_t i = 0; i < n_buckets; i++) {
    if (i > 0 && !(buckets[i] > buckets[i - 1])) {
      free_family(m);
      return tm_error_set(err, TM_EINVALID, "buckets of '%s' must increase", name);
    }
    m->bounds[i] = buckets[i];
  }
  m->n_buckets = kind == TM_METRIC_HISTOGRAM ? n_buckets : 0;

  pthread_mutex_lock(&r->lock);
  for (tm_metric *e = r->head; e; e = e->next) {
    if (strcmp(e->name, name) != 0) continue;
    bool same = e->kind == kind && e->n_labels == m->n_labels;
    for (size_t i = 0; same && i < m->n_labels; i++)
      same = strcmp(e->labels[i], m->labels[i]) == 0;
    pthread_mutex_unlock(&r->lock);
    free_family(m);
    if (!same)
      return tm_error_set(err, TM_EINVALID, "metric '%s' registered twice differently", name);
    *out = e;
    return TM_OK;
  }
  if (r->tail) r->tail->next = m;
  else r->head = m;
  r->tail = m;
  pthread_mutex_unlock(&r->lock);
  *out = m;
  return TM_OK;

nomem:
  free_family(m);
  return tm_error_nomem(err);
}

/* Finds or creates the series for values; call with the lock held. */
static series *get_series(tm_metric *m, const char *const *values, bool create) {
  for (series *s = m->head; s; s = s->next) {
    bool match = true;
    for (size_t i = 0; match && i < m->n_labels; i++)
      match = strcmp(s->values[i], values[i] ? values[i] : "") == 0;
    if (match) return s;
  }
  if (!create) return NULL;
  series *s = tm_calloc(1, sizeof *s);
  if (!s) return NULL;
  for (size_t i = 0; i < m->n_labels; i++) {
    s->values[i] = tm_strdup(values[i] ? values[i] : "");
    if (!s->values[i]) {
      for (size_t j = 0; j < i; j++) tm_free(s->values[j]);
      tm_free(s);
      return NULL;
    }
  }
  if (m->tail) m->tail->next = s;
  else m->head = s;
  m->tail = s;
  return s;
}

void tm_metric_add(tm_metric *m, const char *const *values, double v) {
  pthread_mutex_lock(&m->registry->lock);
  series *s = get_series(m, values, true);
  if (s) s->value += v;
  pthread_mutex_unlock(&m->registry->lock);
}

void tm_metric_set(tm_metric *m, const char *const *values, double v) {
  pthread_mutex_lock(&m->registry->lock);
  series *s = get_series(m, values, true);
  if (s) s->value = v;
  pthread_mutex_unlock(&m->registry->lock);
}

void tm_metric_observe(tm_metric *m, const char *const *values, double v) {
  pthread_mutex_lock(&m->registry->lock);
  series *s = get_series(m, values, true);
  if (s) {
    s->value += v;
    s->count += 1;
    for (size_t i = 0; i < m->n_buckets; i++)
      if (v <= m->bounds[i]) s->buckets[i] += 1;
  }
  pthread_mutex_unlock(&m->registry->lock);
}

int tm_metric_get(tm_metric *m, const char *const *values, double *out) {
  pthread_mutex_lock(&m->registry->lock);
  series *s = get_series(m, values, false);
  if (s) *out = m->kind == TM_METRIC_HISTOGRAM ? s->count : s->value;
  pthread_mutex_unlock(&m->registry->lock);
  return s ? TM_OK : TM_ENOTFOUND;
}

static int put_number(tm_buf *out, double v, tm_error *err) {
  if (isnan(v)) return tm_buf_puts(out, "NaN", err);
  if (isinf(v)) return tm_buf_puts(out, v > 0 ? "+Inf" : "-Inf", err);
  if (v == (double)(long long)v && fabs(v) < 1e15)
    return tm_buf_printf(out, err, "%lld", (long long)v);
  return tm_buf_printf(out, err, "%.17g", v);
}

static int put_escaped(tm_buf *out, const char *s, bool quote_too, tm_error *err) {
  for (const char *p = s; *p; p++) {
    if (*p == '\\') TM_TRY(tm_buf_puts(out, "\\\\", err));
    else if (*p == '\n') TM_TRY(tm_buf_puts(out, "\\n", err));
    else if (quote_too && *p == '"') TM_TRY(tm_buf_puts(out, "\\\"", err));
    else TM_TRY(tm_buf_putc(out, *p, err));
  }
  return TM_OK;
}

/* Writes `{a="x",b="y"[,le="..."]}` or nothing. */
static int put_labels(tm_buf *out, const tm_metric *m, const series *s, const char *le,
                      tm_error *err) {
  if (m->n_labels == 0 && !le) return TM_OK;
  TM_TRY(tm_buf_putc(out, '{', err));
  for (size_t i = 0; i < m->n_labels; i++) {
    if (i) TM_TRY(tm_buf_putc(out, ',', err));
    TM_TRY(tm_buf_printf(out, err, "%s=\"", m->labels[i]));
    TM_TRY(put_escaped(out, s->values[i], true, err));
    TM_TRY(tm_buf_putc(out, '"', err));
  }
  if (le) TM_TRY(tm_buf_printf(out, err, "%sle=\"%s\"", m->n_labels ? "," : "", le));
  return tm_buf_putc(out, '}', err);
}

/*
 * Every family is exposed exactly as registered (SPEC 1.4): counters get no
 * `_total` suffix, as Spice's Prometheus exporter is built without counter
 * suffixes, so that dashboards written for Spice find the same series.
 */
static int render_family(tm_buf *out, const tm_metric *m, tm_error *err) {
  static const char *kinds[] = {"counter", "gauge", "histogram"};
  TM_TRY(tm_buf_printf(out, err, "# HELP %s ", m->name));
  TM_TRY(put_escaped(out, m->help, false, err));
  TM_TRY(tm_buf_printf(out, err, "\n# TYPE %s %s\n", m->name, kinds[m->kind]));
  for (const series *s = m->head; s; s = s->next) {
    if (m->kind != TM_METRIC_HISTOGRAM) {
      TM_TRY(tm_buf_puts(out, m->name, err));
      TM_TRY(put_labels(out, m, s, NULL, err));
      TM_TRY(tm_buf_putc(out, ' ', err));
      TM_TRY(put_number(out, s->value, err));
      TM_TRY(tm_buf_putc(out, '\n', err));
      continue;
    }
    for (size_t i = 0; i <= m->n_buckets; i++) {
      char le[64];
      if (i == m->n_buckets) snprintf(le, sizeof le, "+Inf");
      else snprintf(le, sizeof le, "%.17g", m->bounds[i]);
      TM_TRY(tm_buf_printf(out, err, "%s_bucket", m->name));
      TM_TRY(put_labels(out, m, s, le, err));
      TM_TRY(tm_buf_putc(out, ' ', err));
      TM_TRY(put_number(out, i == m->n_buckets ? s->count : s->buckets[i], err));
      TM_TRY(tm_buf_putc(out, '\n', err));
    }
    TM_TRY(tm_buf_printf(out, err, "%s_sum", m->name));
    TM_TRY(put_labels(out, m, s, NULL, err));
    TM_TRY(tm_buf_putc(out, ' ', err));
    TM_TRY(put_number(out, s->value, err));
    TM_TRY(tm_buf_printf(out, err, "\n%s_count", m->name));
    TM_TRY(put_labels(out, m, s, NULL, err));
    TM_TRY(tm_buf_putc(out, ' ', err));
    TM_TRY(put_number(out, s->count, err));
    TM_TRY(tm_buf_putc(out, '\n', err));
  }
  return TM_OK;
}

int tm_metrics_render(tm_metrics *r, tm_buf *out, tm_error *err) {
  int rc = TM_OK;
  pthread_mutex_lock(&r->lock);
  for (const tm_metric *m = r->head; m && rc == TM_OK; m = m->next)
    rc = render_family(out, m, err);
  pthread_mutex_unlock(&r->lock);
  return rc;
}
