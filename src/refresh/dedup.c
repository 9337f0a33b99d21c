/*
 * dedup.c - multiset de-duplication with a memory budget (refresh layer).
 * See dedup.h.
 *
 * Row encoding (canonical, used for hashing and equality): per column a tag
 * byte (0 NULL, 1 value) followed, for values, by the fixed-width bytes of
 * the type (bool: one byte; floats with -0.0 folded to 0.0 and every NaN to
 * one NaN), or for utf8/binary a little-endian u32 length and the bytes.
 *
 * Spill files hold records of a u32 length and the encoded row. They are
 * created with mkstemp and unlinked at once, so a crash leaves nothing.
 */
#include "refresh/dedup.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/alloc.h"
#include "util/hash.h"

#define N_PARTITIONS 64
#define EMPTY_OFF UINT64_MAX
#define MAX_ROW_BYTES ((size_t)1 << 30)

typedef struct entry {
  uint64_t hash;
  uint64_t off;   /* into the arena; EMPTY_OFF: free slot */
  uint32_t len;
  uint32_t count; /* stored rows with these bytes not yet cancelled */
} entry;

typedef struct table {
  entry *slots; /* owned */
  size_t cap;   /* power of two */
  size_t used;
  tm_buf arena; /* encoded rows */
} table;

struct tm_dedup {
  tm_schema schema;
  size_t budget;
  char *temp_dir;
  table mem;
  bool spilled;
  FILE *stored_f[N_PARTITIONS];
  FILE *incoming_f[N_PARTITIONS];
  bool filtering_done;       /* tm_dedup_next was called */
  int part;                  /* partition being drained */
  bool part_loaded;
  tm_buf scratch;            /* one encoded row */
  tm_batch_builder out;      /* survivors being decoded */
  tm_dedup_stats stats;
  uint64_t hash_mask;        /* ~0; tests narrow it to force collisions */
};

/* ---- encoding ------------------------------------------------------------ */

static int encode_row(const tm_colview *cols, size_t n_cols, int64_t row, tm_buf *out,
                      tm_error *err) {
  tm_buf_clear(out);
  for (size_t c = 0; c < n_cols; c++) {
    const tm_colview *col = &cols[c];
    if (tm_colview_is_null(col, row)) {
      TM_TRY(tm_buf_putc(out, 0, err));
      continue;
    }
    TM_TRY(tm_buf_putc(out, 1, err));
    switch (col->type.id) {
      case TM_TYPE_BOOL: TM_TRY(tm_buf_putc(out, tm_bit_get(col->values, row) ? 1 : 0, err)); break;
      case TM_TYPE_FLOAT32: {
        float f = ((const float *)col->values)[row];
        if (f == 0) f = 0;
        if (isnan(f)) f = NAN;
        TM_TRY(tm_buf_append(out, &f, 4, err));
        break;
      }
      case TM_TYPE_FLOAT64: {
        double f = ((const double *)col->values)[row];
        if (f == 0) f = 0;
        if (isnan(f)) f = NAN;
        TM_TRY(tm_buf_append(out, &f, 8, err));
        break;
      }
      case TM_TYPE_UTF8:
      case TM_TYPE_BINARY: {
        tm_strview s = tm_colview_bytes(col, row);
        uint32_t len = (uint32_t)s.len;
        TM_TRY(tm_buf_append(out, &len, 4, err));
        TM_TRY(tm_buf_append(out, s.ptr, s.len, err));
        break;
      }
      default: {
        size_t w = tm_type_byte_width(&col->type);
        TM_TRY(tm_buf_append(out, (const uint8_t *)col->values + (size_t)row * w, w, err));
      }
    }
  }
  return TM_OK;
}

/* Appends one encoded row to the output builder. */
static int decode_row(tm_dedup *d, const uint8_t *p, size_t len, tm_error *err) {
  size_t pos = 0;
  for (size_t c = 0; c < d->schema.n_cols; c++) {
    tm_colbuilder *cb = tm_batch_builder_col(&d->out, c);
    if (pos >= len) return TM_CORRUPT(err, "dedup spill record is truncated");
    if (p[pos++] == 0) {
      TM_TRY(tm_colbuilder_append_null(cb, err));
      continue;
    }
    const tm_type *t = &d->schema.cols[c].type;
    size_t w;
    switch (t->id) {
      case TM_TYPE_BOOL:
        if (pos + 1 > len) return TM_CORRUPT(err, "dedup spill record is truncated");
        TM_TRY(tm_colbuilder_append_bool(cb, p[pos] != 0, err));
        pos += 1;
        break;
      case TM_TYPE_UTF8:
      case TM_TYPE_BINARY: {
        uint32_t n;
        if (pos + 4 > len) return TM_CORRUPT(err, "dedup spill record is truncated");
        memcpy(&n, p + pos, 4);
        pos += 4;
        if (n > len - pos) return TM_CORRUPT(err, "dedup spill record is truncated");
        TM_TRY(tm_colbuilder_append_bytes(cb, p + pos, n, err));
        pos += n;
        break;
      }
      default:
        w = tm_type_byte_width(t);
        if (pos + w > len) return TM_CORRUPT(err, "dedup spill record is truncated");
        /* Fixed-width values go straight into the values buffer. */
        TM_TRY(tm_colbuilder_reserve(cb, 1, 0, err));
        {
          tm_value v;
          memset(&v, 0, sizeof v);
          v.type = t->id;
          switch (t->id) {
            case TM_TYPE_INT8: v.v.i = (int8_t)p[pos]; break;
            case TM_TYPE_INT16: { int16_t x; memcpy(&x, p + pos, 2); v.v.i = x; break; }
            case TM_TYPE_INT32:
            case TM_TYPE_DATE32: { int32_t x; memcpy(&x, p + pos, 4); v.v.i = x; break; }
            case TM_TYPE_UINT8: v.v.u = p[pos]; break;
            case TM_TYPE_UINT16: { uint16_t x; memcpy(&x, p + pos, 2); v.v.u = x; break; }
            case TM_TYPE_UINT32: { uint32_t x; memcpy(&x, p + pos, 4); v.v.u = x; break; }
            case TM_TYPE_UINT64: memcpy(&v.v.u, p + pos, 8); break;
            case TM_TYPE_FLOAT32: { float x; memcpy(&x, p + pos, 4); v.v.f = x; break; }
            case TM_TYPE_FLOAT64: memcpy(&v.v.f, p + pos, 8); break;
            case TM_TYPE_DECIMAL128: memcpy(v.v.dec, p + pos, 16); break;
            case TM_TYPE_FIXED_BINARY: v.v.s = tm_sv((const char *)p + pos, w); break;
            default: memcpy(&v.v.i, p + pos, 8); break;
          }
          TM_TRY(tm_colbuilder_append_value(cb, &v, err));
        }
        pos += w;
    }
  }
  if (pos != len) return TM_CORRUPT(err, "dedup spill record has trailing bytes");
  return TM_OK;
}

/* ---- the in-memory multiset ------------------------------------------------ */

static void table_init(table *t) {
  memset(t, 0, sizeof *t);
  tm_buf_init(&t->arena, TM_BUF_UNLIMITED);
}

static void table_dispose(table *t) {
  tm_free(t->slots);
  tm_buf_dispose(&t->arena);
  memset(t, 0, sizeof *t);
}

static size_t table_bytes(const table *t) { return t->arena.cap + t->cap * sizeof(entry); }

static int table_grow(table *t, tm_error *err) {
  size_t cap = t->cap ? t->cap * 2 : 1024;
  entry *slots = tm_calloc(cap, sizeof *slots);
  if (!slots) return tm_error_nomem(err);
  for (size_t i = 0; i < cap; i++) slots[i].off = EMPTY_OFF;
  for (size_t i = 0; i < t->cap; i++) {
    entry *e = &t->slots[i];
    if (e->off == EMPTY_OFF) continue;
    size_t j = e->hash & (cap - 1);
    while (slots[j].off != EMPTY_OFF) j = (j + 1) & (cap - 1);
    slots[j] = *e;
  }
  tm_free(t->slots);
  t->slots = slots;
  t->cap = cap;
  return TM_OK;
}

/* Finds the entry with these bytes; *collisions counts hash-equal mismatches. */
static entry *table_find(table *t, uint64_t hash, const void *row, size_t len,
                         int64_t *collisions) {
  if (t->cap == 0) return NULL;
  for (size_t j = hash & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
    entry *e = &t->slots[j];
    if (e->off == EMPTY_OFF) return NULL;
    if (e->hash != hash) continue;
    if (e->len == len && memcmp(t->arena.ptr + e->off, row, len) == 0) return e;
    (*collisions)++;
  }
}

static int table_add(table *t, uint64_t hash, const void *row, size_t len, int64_t *collisions,
                     tm_error *err) {
  entry *e = table_find(t, hash, row, len, collisions);
  if (e) {
    e->count++;
    return TM_OK;
  }
  if ((t->used + 1) * 2 > t->cap) TM_TRY(table_grow(t, err));
  uint64_t off = t->arena.len;
  TM_TRY(tm_buf_append(&t->arena, row, len, err));
  size_t j = hash & (t->cap - 1);
  while (t->slots[j].off != EMPTY_OFF) j = (j + 1) & (t->cap - 1);
  t->slots[j].hash = hash;
  t->slots[j].off = off;
  t->slots[j].len = (uint32_t)len;
  t->slots[j].count = 1;
  t->used++;
  return TM_OK;
}

/* Cancels one stored copy of row; true when there was one. */
static bool table_take(table *t, uint64_t hash, const void *row, size_t len, int64_t *collisions) {
  entry *e = table_find(t, hash, row, len, collisions);
  if (!e || e->count == 0) return false;
  e->count--;
  return true;
}

/* ---- spill files ----------------------------------------------------------- */

static int open_temp(tm_dedup *d, FILE **out, tm_error *err) {
  char *path = tm_asprintf("%s/tidemark-dedup-XXXXXX", d->temp_dir);
  if (!path) return tm_error_nomem(err);
  int fd = mkstemp(path);
  if (fd < 0) {
    int e = errno;
    tm_error_set(err, TM_EIO, "%s: cannot create a spill file: %s", path, strerror(e));
    tm_free(path);
    return TM_EIO;
  }
  unlink(path);
  tm_free(path);
  FILE *f = fdopen(fd, "w+b");
  if (!f) {
    close(fd);
    return tm_error_set(err, TM_EIO, "spill file: %s", strerror(errno));
  }
  *out = f;
  return TM_OK;
}

static int write_record(tm_dedup *d, FILE *f, const void *row, size_t len, tm_error *err) {
  uint32_t n = (uint32_t)len;
  if (fwrite(&n, 4, 1, f) != 1 || (len && fwrite(row, len, 1, f) != 1))
    return tm_error_set(err, TM_EIO, "spill file write failed (disk full?) in %s", d->temp_dir);
  return TM_OK;
}

/* Reads one record into buf; TM_ITEROVER at the end. */
static int read_record(FILE *f, tm_buf *buf, tm_error *err) {
  uint32_t n;
  size_t got = fread(&n, 1, 4, f);
  if (got == 0 && feof(f)) return TM_ITEROVER;
  if (got != 4) return TM_CORRUPT(err, "dedup spill file is truncated");
  if (n > MAX_ROW_BYTES) return TM_CORRUPT(err, "dedup spill record is too large");
  tm_buf_clear(buf);
  void *p;
  TM_TRY(tm_buf_extend(buf, n, &p, err));
  if (n && fread(p, n, 1, f) != 1) return TM_CORRUPT(err, "dedup spill file is truncated");
  return TM_OK;
}

static int partition_of(uint64_t hash) { return (int)(hash >> 58); }

/* Moves the in-memory window to partition files (each copy as a record). */
static int spill(tm_dedup *d, tm_error *err) {
  for (int p = 0; p < N_PARTITIONS; p++) {
    TM_TRY(open_temp(d, &d->stored_f[p], err));
    TM_TRY(open_temp(d, &d->incoming_f[p], err));
  }
  table *t = &d->mem;
  for (size_t i = 0; i < t->cap; i++) {
    entry *e = &t->slots[i];
    if (e->off == EMPTY_OFF) continue;
    for (uint32_t k = 0; k < e->count; k++)
      TM_TRY(write_record(d, d->stored_f[partition_of(e->hash)], t->arena.ptr + e->off, e->len, err));
  }
  table_dispose(t);
  table_init(t);
  d->spilled = true;
  d->stats.spilled = true;
  return TM_OK;
}

static uint64_t row_hash(const tm_dedup *d) {
  return tm_hash64(d->scratch.ptr, d->scratch.len, 0x7e1dea) & d->hash_mask;
}

void tm_dedup__set_hash_mask(tm_dedup *d, uint64_t mask) { d->hash_mask = mask; }

/* ---- public ---------------------------------------------------------------- */

int tm_dedup_new(tm_dedup **out, const tm_schema *schema, size_t budget_bytes,
                 const char *temp_dir, tm_error *err) {
  tm_dedup *d = tm_calloc(1, sizeof *d);
  if (!d) return tm_error_nomem(err);
  tm_schema_init(&d->schema);
  table_init(&d->mem);
  tm_buf_init(&d->scratch, MAX_ROW_BYTES);
  d->budget = budget_bytes ? budget_bytes : (size_t)256 << 20;
  d->hash_mask = ~(uint64_t)0;
  const char *tmp = temp_dir ? temp_dir : getenv("TMPDIR");
  d->temp_dir = tm_strdup(tmp && *tmp ? tmp : "/tmp");
  int rc = d->temp_dir ? TM_OK : tm_error_nomem(err);
  if (rc == TM_OK) rc = tm_schema_copy(&d->schema, schema, err);
  if (rc == TM_OK) rc = tm_batch_builder_init(&d->out, schema, err);
  if (rc < 0) {
    tm_dedup_free(d);
    return rc;
  }
  *out = d;
  return TM_OK;
}

void tm_dedup_free(tm_dedup *d) {
  if (!d) return;
  for (int p = 0; p < N_PARTITIONS; p++) {
    if (d->stored_f[p]) fclose(d->stored_f[p]);
    if (d->incoming_f[p]) fclose(d->incoming_f[p]);
  }
  table_dispose(&d->mem);
  tm_buf_dispose(&d->scratch);
  if (d->out.cols) tm_batch_builder_dispose(&d->out);
  tm_schema_dispose(&d->schema);
  tm_free(d->temp_dir);
  tm_free(d);
}

static int views(const tm_dedup *d, const tm_batch *b, tm_colview *cols, tm_error *err) {
  if (b->schema.n_cols != d->schema.n_cols)
    return tm_error_set(err, TM_EINVALID, "dedup: batch has %zu columns, expected %zu",
                        b->schema.n_cols, d->schema.n_cols);
  for (size_t c = 0; c < d->schema.n_cols; c++) {
    cols[c] = tm_batch_col(b, c);
    if (cols[c].type.id != d->schema.cols[c].type.id)
      return tm_error_set(err, TM_EINVALID, "dedup: column '%s' changed type",
                          d->schema.cols[c].name);
  }
  return TM_OK;
}

static void note_peak(tm_dedup *d) {
  size_t now = table_bytes(&d->mem) + d->scratch.cap;
  if (now > d->stats.peak_bytes) d->stats.peak_bytes = now;
}

int tm_dedup_add_stored(tm_dedup *d, const tm_batch *stored, tm_error *err) {
  size_t n = d->schema.n_cols;
  tm_colview *cols = tm_calloc(n ? n : 1, sizeof *cols);
  if (!cols) return tm_error_nomem(err);
  int rc = views(d, stored, cols, err);
  for (int64_t r = 0; r < stored->n_rows && rc == TM_OK; r++) {
    rc = encode_row(cols, n, r, &d->scratch, err);
    if (rc < 0) break;
    uint64_t h = row_hash(d);
    if (d->spilled) {
      rc = write_record(d, d->stored_f[partition_of(h)], d->scratch.ptr, d->scratch.len, err);
    } else {
      rc = table_add(&d->mem, h, d->scratch.ptr, d->scratch.len, &d->stats.collisions, err);
      note_peak(d);
      if (rc == TM_OK && table_bytes(&d->mem) > d->budget) rc = spill(d, err);
    }
    d->stats.stored_rows++;
  }
  tm_free(cols);
  return rc;
}

int tm_dedup_filter(tm_dedup *d, const tm_batch *incoming, tm_batch *out, tm_error *err) {
  size_t n = d->schema.n_cols;
  tm_batch_init(out);
  tm_colview *cols = tm_calloc(n ? n : 1, sizeof *cols);
  uint8_t *keep = tm_calloc((size_t)(incoming->n_rows + 7) / 8 + 1, 1);
  int rc = (!cols || !keep) ? tm_error_nomem(err) : views(d, incoming, cols, err);
  for (int64_t r = 0; r < incoming->n_rows && rc == TM_OK; r++) {
    rc = encode_row(cols, n, r, &d->scratch, err);
    if (rc < 0) break;
    uint64_t h = row_hash(d);
    d->stats.incoming_rows++;
    if (d->spilled) {
      rc = write_record(d, d->incoming_f[partition_of(h)], d->scratch.ptr, d->scratch.len, err);
    } else if (table_take(&d->mem, h, d->scratch.ptr, d->scratch.len, &d->stats.collisions)) {
      d->stats.removed_rows++;
    } else {
      tm_bit_set(keep, r);
    }
  }
  if (rc == TM_OK && !d->spilled) rc = tm_batch_filter(incoming, keep, out, err);
  tm_free(cols);
  tm_free(keep);
  return rc;
}

/* Loads stored partition p into the table and rewinds incoming partition p. */
static int load_partition(tm_dedup *d, int p, tm_error *err) {
  table_dispose(&d->mem);
  table_init(&d->mem);
  FILE *sf = d->stored_f[p];
  if (fflush(sf) != 0 || fseek(sf, 0, SEEK_SET) != 0)
    return tm_error_set(err, TM_EIO, "spill file: %s", strerror(errno));
  int rc;
  while ((rc = read_record(sf, &d->scratch, err)) == TM_OK) {
    uint64_t h = row_hash(d);
    TM_TRY(table_add(&d->mem, h, d->scratch.ptr, d->scratch.len, &d->stats.collisions, err));
    note_peak(d);
  }
  if (rc != TM_ITEROVER) return rc;
  FILE *inf = d->incoming_f[p];
  if (fflush(inf) != 0 || fseek(inf, 0, SEEK_SET) != 0)
    return tm_error_set(err, TM_EIO, "spill file: %s", strerror(errno));
  d->part_loaded = true;
  return TM_OK;
}

int tm_dedup_next(tm_dedup *d, tm_batch *out, tm_error *err) {
  tm_batch_init(out);
  if (!d->spilled) return TM_ITEROVER;
  while (d->part < N_PARTITIONS) {
    if (!d->part_loaded) TM_TRY(load_partition(d, d->part, err));
    int rc;
    while ((rc = read_record(d->incoming_f[d->part], &d->scratch, err)) == TM_OK) {
      uint64_t h = row_hash(d);
      if (table_take(&d->mem, h, d->scratch.ptr, d->scratch.len, &d->stats.collisions)) {
        d->stats.removed_rows++;
        continue;
      }
      TM_TRY(decode_row(d, (const uint8_t *)d->scratch.ptr, d->scratch.len, err));
      if (tm_batch_builder_rows(&d->out) >= TM_BATCH_DEFAULT_ROWS)
        return tm_batch_builder_finish(&d->out, out, err);
    }
    if (rc != TM_ITEROVER) return rc;
    d->part++;
    d->part_loaded = false;
  }
  if (tm_batch_builder_rows(&d->out) > 0) return tm_batch_builder_finish(&d->out, out, err);
  return TM_ITEROVER;
}

const tm_dedup_stats *tm_dedup_get_stats(const tm_dedup *d) { return &d->stats; }
