/*
 * reader.c - a tm_input over a remote object, read by ranges (objstore
 * layer). Format readers see an ordinary tm_input (io/io.h); this file
 * turns their reads into few, well-sized gets:
 *
 *   - the tail: a first read inside the last tail_bytes of the object
 *     fetches the whole tail once, so a Parquet reader's "last 8 bytes, then
 *     the footer" costs one request;
 *   - planned ranges: tm_input_will_need (e.g. the column chunks of a
 *     projection) are sorted and merged across gaps up to coalesce_gap into
 *     requests of at most max_request bytes; a read inside a planned range
 *     fetches the rest of that range;
 *   - read-ahead: from the second read in a row that starts where the
 *     previous one ended, a read fetches a window of twice its size (at
 *     least min_fetch), doubling with each further request up to
 *     max_readahead;
 *   - small reads fetch at least min_fetch bytes;
 *   - anything else is fetched exactly, straight into the caller's buffer.
 *
 * Fetched ranges other than exact ones stay in a small LRU cache of at most
 * cache_bytes. The object's size is fixed when the input opens; a get that
 * returns fewer bytes than that size implies (the object was replaced or
 * truncated meanwhile) is TM_ECORRUPT.
 *
 * Not thread-safe: one thread reads an input at a time (as for any tm_input).
 */
#include <stdlib.h>
#include <string.h>

#include "objstore/objstore_int.h"
#include "util/alloc.h"

#define MAX_SEGMENTS 256
#define MAX_PLAN_RANGES 65536

typedef struct segment {
  uint64_t off;      /* object offset of data[0] */
  size_t len;        /* bytes in data */
  char *data;        /* owned */
  uint64_t last_use; /* LRU tick */
} segment;

typedef struct range_input {
  tm_input base;
  tm_objstore *store;            /* not owned; outlives the input */
  char *key;                     /* owned */
  uint64_t size;                 /* object size, fixed at open */
  tm_objstore_read_options opts; /* copied from the store at open */
  segment segs[MAX_SEGMENTS];    /* the cache; n_segs in use, unordered */
  size_t n_segs;
  uint64_t cached_bytes;         /* sum of segs[].len */
  uint64_t tick;                 /* LRU clock */
  tm_io_range *plan;             /* owned: merged will_need ranges, sorted, disjoint */
  size_t n_plan;
  bool tail_fetched;             /* the tail rule fires once */
  uint64_t last_end;             /* end offset of the previous read; 0 before any */
  uint64_t seq_run;              /* reads in a row that started where the previous ended */
  uint64_t readahead;            /* current read-ahead window; 0: not sequential */
  tm_objstore_input_stats st;
} range_input;

static int range_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                         tm_error *err);
static int range_size(tm_input *in, uint64_t *out, tm_error *err);
static void range_close(tm_input *in);
static int range_will_need(tm_input *in, const tm_io_range *ranges, size_t n, tm_error *err);

static const tm_input_vtable k_range_vt = {TM_INPUT_VTABLE_VERSION, range_read_at, range_size,
                                           range_close, range_will_need};

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* A cached segment containing pos, or NULL. */
static segment *find_segment(range_input *r, uint64_t pos) {
  for (size_t i = 0; i < r->n_segs; i++) {
    segment *s = &r->segs[i];
    if (pos >= s->off && pos - s->off < s->len) return s;
  }
  return NULL;
}

/* The start of the first cached segment beginning in (pos, end), or end. */
static uint64_t next_cached_start(range_input *r, uint64_t pos, uint64_t end) {
  uint64_t best = end;
  for (size_t i = 0; i < r->n_segs; i++)
    if (r->segs[i].off > pos && r->segs[i].off < best) best = r->segs[i].off;
  return best;
}

/* The planned range containing pos, or NULL (binary search over sorted ranges). */
static const tm_io_range *find_plan(range_input *r, uint64_t pos) {
  size_t lo = 0, hi = r->n_plan;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tm_io_range *p = &r->plan[mid];
    if (pos < p->off) hi = mid;
    else if (pos - p->off >= p->len) lo = mid + 1;
    else return p;
  }
  return NULL;
}

static void drop_segment(range_input *r, size_t i) {
  r->cached_bytes -= r->segs[i].len;
  tm_free(r->segs[i].data);
  r->segs[i] = r->segs[--r->n_segs];
}

/*
 * Takes ownership of data (len bytes at object offset off) into the cache,
 * evicting least recently used segments to stay within cache_bytes and
 * MAX_SEGMENTS. Data larger than the whole cache is freed instead (the read
 * that fetched it has already copied what it needed).
 */
static void cache_insert(range_input *r, uint64_t off, char *data, size_t len) {
  if (len > r->opts.cache_bytes || len == 0) {
    tm_free(data);
    return;
  }
  while (r->n_segs > 0 &&
         (r->n_segs == MAX_SEGMENTS || r->cached_bytes + len > r->opts.cache_bytes)) {
    size_t victim = 0;
    for (size_t i = 1; i < r->n_segs; i++)
      if (r->segs[i].last_use < r->segs[victim].last_use) victim = i;
    drop_segment(r, victim);
  }
  segment *s = &r->segs[r->n_segs++];
  s->off = off;
  s->len = len;
  s->data = data;
  s->last_use = ++r->tick;
  r->cached_bytes += len;
}

typedef struct fill_ctx {
  char *buf;
  size_t cap;
  size_t len;
} fill_ctx;

static int fill(const void *data, size_t len, void *payload, tm_error *err) {
  fill_ctx *f = payload;
  if (TM_NEVER(len > f->cap - f->len))
    return TM_CORRUPT(err, "store returned more bytes than requested");
  memcpy(f->buf + f->len, data, len);
  f->len += len;
  return TM_OK;
}

/* Gets exactly [off, off+len) into buf; fewer bytes means the object changed. */
static int fetch(range_input *r, uint64_t off, char *buf, size_t len, tm_error *err) {
  fill_ctx f = {buf, len, 0};
  r->st.requests++;
  int rc = tm_objstore_get(r->store, r->key, off, len, fill, &f, err);
  r->st.fetched += f.len;
  if (rc < 0) return rc;
  if (f.len != len)
    return TM_CORRUPT(err,
                      "%s: object ended at byte %llu, before its size of %llu (replaced or "
                      "truncated while being read?)",
                      r->base.name, (unsigned long long)(off + f.len),
                      (unsigned long long)r->size);
  return TM_OK;
}

/*
 * Chooses the range [*fs, *fe) to fetch for a read of rem bytes at pos that
 * the cache could not serve (see the file comment for the rules).
 */
static void choose_fetch(range_input *r, uint64_t pos, uint64_t rem, bool sequential,
                         uint64_t *fs, uint64_t *fe) {
  const tm_objstore_read_options *o = &r->opts;
  uint64_t start = pos, end = pos + rem;
  const tm_io_range *p = find_plan(r, pos);
  if (p) {
    end = max_u64(end, min_u64(p->off + p->len, pos + o->max_request));
    r->readahead = 0;
  } else if (o->tail_bytes > 0 && !r->tail_fetched && r->size - pos <= o->tail_bytes &&
             rem <= o->tail_bytes) {
    start = r->size > o->tail_bytes ? r->size - o->tail_bytes : 0;
    end = r->size;
    r->tail_fetched = true;
    r->readahead = 0;
  } else if (sequential) {
    /* Start at twice the read (or min_fetch), then double per request. */
    r->readahead = r->readahead ? r->readahead * 2 : max_u64(o->min_fetch, 2 * rem);
    r->readahead = min_u64(r->readahead, o->max_readahead);
    end = max_u64(end, pos + r->readahead);
  } else {
    r->readahead = 0;
    if (rem < o->min_fetch) end = pos + o->min_fetch;
  }
  end = min_u64(end, r->size);
  /* Do not re-fetch what is cached after the bytes actually needed. */
  if (end > pos + rem) end = max_u64(pos + rem, next_cached_start(r, pos, end));
  *fs = start;
  *fe = end;
}

static int range_read_at(tm_input *in, uint64_t off, void *buf, size_t len, size_t *n_out,
                         tm_error *err) {
  range_input *r = (range_input *)in;
  if (off >= r->size || len == 0) {
    *n_out = 0;
    return TM_OK;
  }
  if (len > r->size - off) len = (size_t)(r->size - off);
  /*
   * Read-ahead starts with the second sequential read in a row: one read
   * that happens to follow another (two adjacent column chunks of a
   * projection) should not pull in the next, unwanted, chunk.
   */
  r->seq_run = r->last_end != 0 && off == r->last_end ? r->seq_run + 1 : 0;
  bool sequential = r->seq_run >= 2;
  char *out = buf;
  size_t done = 0;
  bool fetched = false;
  while (done < len) {
    uint64_t pos = off + done;
    segment *s = find_segment(r, pos);
    if (s) {
      size_t n = (size_t)min_u64(s->len - (pos - s->off), len - done);
      memcpy(out + done, s->data + (pos - s->off), n);
      s->last_use = ++r->tick;
      done += n;
      continue;
    }
    uint64_t fs, fe;
    choose_fetch(r, pos, len - done, sequential, &fs, &fe);
    fetched = true;
    if (fs == pos && fe == pos + (len - done)) {
      TM_TRY(fetch(r, pos, out + done, len - done, err));
      done = len;
      break;
    }
    size_t n = (size_t)(fe - fs);
    char *data = tm_malloc(n);
    if (!data) return tm_error_nomem(err);
    int rc = fetch(r, fs, data, n, err);
    if (rc < 0) {
      tm_free(data);
      return rc;
    }
    /* fs <= pos and fe >= pos + (len - done): the fetch covers the rest of the read. */
    memcpy(out + done, data + (pos - fs), len - done);
    done = len;
    cache_insert(r, fs, data, n);
  }
  if (!fetched) r->st.hits++;
  r->last_end = off + len;
  *n_out = len;
  return TM_OK;
}

static int range_size(tm_input *in, uint64_t *out, tm_error *err) {
  TM_UNUSED(err);
  *out = ((range_input *)in)->size;
  return TM_OK;
}

static void range_close(tm_input *in) {
  range_input *r = (range_input *)in;
  while (r->n_segs > 0) drop_segment(r, r->n_segs - 1);
  tm_free(r->plan);
  tm_free(r->key);
  tm_input__dispose(in);
  tm_free(r);
}

static int cmp_range(const void *a, const void *b) {
  const tm_io_range *x = a, *y = b;
  if (x->off != y->off) return x->off < y->off ? -1 : 1;
  return x->len < y->len ? -1 : x->len > y->len;
}

static int range_will_need(tm_input *in, const tm_io_range *ranges, size_t n, tm_error *err) {
  range_input *r = (range_input *)in;
  if (n > MAX_PLAN_RANGES) return TM_OK; /* a hint only: too many to plan, read as they come */
  tm_io_range *v = tm_calloc(n, sizeof *v);
  if (!v) return tm_error_nomem(err);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t o = ranges[i].off, l = ranges[i].len;
    if (o >= r->size || l == 0) continue;
    v[m].off = o;
    v[m].len = min_u64(l, r->size - o);
    m++;
  }
  if (m > 1) qsort(v, m, sizeof *v, cmp_range);
  size_t k = 0; /* merged ranges in v[0..k) */
  for (size_t i = 0; i < m; i++) {
    if (k > 0) {
      tm_io_range *cur = &v[k - 1];
      uint64_t cur_end = cur->off + cur->len, end = v[i].off + v[i].len;
      uint64_t merged_end = max_u64(cur_end, end);
      bool near = v[i].off <= cur_end || v[i].off - cur_end <= r->opts.coalesce_gap;
      if (near && (merged_end - cur->off <= r->opts.max_request || v[i].off < cur_end)) {
        cur->len = merged_end - cur->off;
        continue;
      }
    }
    v[k++] = v[i];
  }
  tm_free(r->plan);
  r->plan = v;
  r->n_plan = k;
  return TM_OK;
}

int tm_objstore__open_range_input(tm_objstore *s, const char *key, uint64_t size,
                                  tm_input **out, tm_error *err) {
  range_input *r = tm_calloc(1, sizeof *r);
  if (!r) return tm_error_nomem(err);
  char *name = tm_asprintf("%s/%s", s->name, key);
  r->key = tm_strdup(key);
  int rc = (!name || !r->key) ? tm_error_nomem(err) : TM_OK;
  if (rc == TM_OK) rc = tm_input__init(&r->base, &k_range_vt, name, err);
  tm_free(name);
  if (rc < 0) {
    tm_free(r->key);
    tm_free(r);
    return rc;
  }
  r->store = s;
  r->size = size;
  r->opts = s->read_opts;
  *out = &r->base;
  return TM_OK;
}

int tm_objstore_input_get_stats(const tm_input *in, tm_objstore_input_stats *out, tm_error *err) {
  if (in->vt != &k_range_vt)
    return tm_error_set(err, TM_EINVALID, "%s: not a ranged object-store input", in->name);
  *out = ((const range_input *)in)->st;
  return TM_OK;
}
