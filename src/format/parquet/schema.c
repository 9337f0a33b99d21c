/*
 * schema.c - Parquet schema tree to tidemark fields and leaf columns (format
 * layer, parquet).
 *
 * The footer lists schema elements depth-first; groups say how many children
 * follow. We walk that list once (iteratively, with an explicit stack so
 * that hostile depth cannot overflow the C stack), number the leaves in
 * column-chunk order, and map each top-level primitive to a tm_type.
 * Top-level groups and repeated primitives are nested fields: listed, never
 * decoded.
 */
#include <string.h>

#include "format/parquet/parquet_int.h"
#include "util/alloc.h"

#define MAX_DEPTH 256

static int decimal_type(const tm_pq_schema_elem *e, int32_t precision, int32_t scale,
                        tm_type *out, tm_error *err) {
  int max_p;
  switch (e->type) {
    case TM_PQ_INT32: max_p = 9; break;
    case TM_PQ_INT64: max_p = 18; break;
    case TM_PQ_FLBA:
      if (e->type_length <= 0)
        return tm_error_set(err, TM_ECORRUPT, "decimal of fixed width %d", (int)e->type_length);
      /* digits that fit in a signed integer of type_length bytes: floor(log10(2^(8n-1)-1)) */
      max_p = e->type_length > 16 ? 38 : (int)((8 * e->type_length - 1) * 0.30102999566398120);
      if (e->type_length > 16)
        return tm_error_set(err, TM_EUNSUPPORTED, "decimal of %d bytes", (int)e->type_length);
      break;
    case TM_PQ_BYTE_ARRAY: max_p = 38; break;
    default:
      return tm_error_set(err, TM_ECORRUPT, "decimal on physical type %s",
                          tm_parquet_physical_name(e->type));
  }
  if (precision <= 0 || scale < 0 || scale > precision)
    return tm_error_set(err, TM_ECORRUPT, "invalid decimal precision %d, scale %d", (int)precision,
                        (int)scale);
  if (precision > 38)
    return tm_error_set(err, TM_EUNSUPPORTED, "decimal precision %d above 38", (int)precision);
  if (precision > max_p)
    return tm_error_set(err, TM_ECORRUPT, "decimal precision %d too large for %s",
                        (int)precision, tm_parquet_physical_name(e->type));
  *out = tm_type_decimal(precision, scale);
  return TM_OK;
}

static int int_type(const tm_pq_schema_elem *e, int bits, bool is_signed, tm_type *out,
                    tm_error *err) {
  int phys_bits = e->type == TM_PQ_INT32 ? 32 : e->type == TM_PQ_INT64 ? 64 : 0;
  if (phys_bits == 0 || bits > phys_bits || (phys_bits == 64 && bits != 64) ||
      (bits != 8 && bits != 16 && bits != 32 && bits != 64))
    return tm_error_set(err, TM_ECORRUPT, "INT(%d) annotation on %s", bits,
                        tm_parquet_physical_name(e->type));
  static const tm_type_id s[] = {TM_TYPE_INT8, TM_TYPE_INT16, TM_TYPE_INT32, TM_TYPE_INT64};
  static const tm_type_id u[] = {TM_TYPE_UINT8, TM_TYPE_UINT16, TM_TYPE_UINT32, TM_TYPE_UINT64};
  int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
  *out = tm_type_of(is_signed ? s[k] : u[k]);
  return TM_OK;
}

static int physical_type(const tm_pq_schema_elem *e, tm_time_unit int96_unit, tm_type *out,
                         tm_error *err) {
  switch (e->type) {
    case TM_PQ_BOOLEAN: *out = tm_type_of(TM_TYPE_BOOL); return TM_OK;
    case TM_PQ_INT32: *out = tm_type_of(TM_TYPE_INT32); return TM_OK;
    case TM_PQ_INT64: *out = tm_type_of(TM_TYPE_INT64); return TM_OK;
    case TM_PQ_INT96: *out = tm_type_timestamp(int96_unit, false); return TM_OK;
    case TM_PQ_FLOAT: *out = tm_type_of(TM_TYPE_FLOAT32); return TM_OK;
    case TM_PQ_DOUBLE: *out = tm_type_of(TM_TYPE_FLOAT64); return TM_OK;
    case TM_PQ_BYTE_ARRAY: *out = tm_type_of(TM_TYPE_BINARY); return TM_OK;
    case TM_PQ_FLBA:
      if (e->type_length <= 0)
        return tm_error_set(err, TM_ECORRUPT, "FIXED_LEN_BYTE_ARRAY of width %d",
                            (int)e->type_length);
      *out = tm_type_fixed(e->type_length);
      return TM_OK;
    default: return tm_error_set(err, TM_ECORRUPT, "unknown physical type %d", (int)e->type);
  }
}

static int expect_phys(const tm_pq_schema_elem *e, int phys, const char *what, tm_error *err) {
  if (e->type == phys) return TM_OK;
  return tm_error_set(err, TM_ECORRUPT, "%s annotation on %s", what,
                      tm_parquet_physical_name(e->type));
}

static tm_time_unit unit_of(int pq_unit) {
  return pq_unit == TM_PQ_UNIT_MILLIS ? TM_UNIT_MILLI
         : pq_unit == TM_PQ_UNIT_MICROS ? TM_UNIT_MICRO
                                       : TM_UNIT_NANO;
}

static int logical_type(const tm_pq_schema_elem *e, tm_time_unit int96_unit, tm_type *out,
                        tm_error *err) {
  const tm_pq_logical *lt = &e->logical;
  switch (lt->kind) {
    case TM_PQ_LT_STRING:
    case TM_PQ_LT_ENUM:
    case TM_PQ_LT_JSON:
      TM_TRY(expect_phys(e, TM_PQ_BYTE_ARRAY, "STRING", err));
      *out = tm_type_of(TM_TYPE_UTF8);
      return TM_OK;
    case TM_PQ_LT_BSON:
      TM_TRY(expect_phys(e, TM_PQ_BYTE_ARRAY, "BSON", err));
      *out = tm_type_of(TM_TYPE_BINARY);
      return TM_OK;
    case TM_PQ_LT_DECIMAL: return decimal_type(e, lt->precision, lt->scale, out, err);
    case TM_PQ_LT_DATE:
      TM_TRY(expect_phys(e, TM_PQ_INT32, "DATE", err));
      *out = tm_type_of(TM_TYPE_DATE32);
      return TM_OK;
    case TM_PQ_LT_TIME:
      if (lt->unit == TM_PQ_UNIT_MILLIS) {
        TM_TRY(expect_phys(e, TM_PQ_INT32, "TIME(MILLIS)", err));
        *out = tm_type_of(TM_TYPE_TIME64);
        out->unit = TM_UNIT_MICRO;
        return TM_OK;
      }
      if (lt->unit == 0) return tm_error_set(err, TM_ECORRUPT, "TIME without a unit");
      TM_TRY(expect_phys(e, TM_PQ_INT64, "TIME", err));
      *out = tm_type_of(TM_TYPE_TIME64);
      out->unit = unit_of(lt->unit);
      return TM_OK;
    case TM_PQ_LT_TIMESTAMP:
      if (lt->unit == 0) return tm_error_set(err, TM_ECORRUPT, "TIMESTAMP without a unit");
      TM_TRY(expect_phys(e, TM_PQ_INT64, "TIMESTAMP", err));
      *out = tm_type_timestamp(unit_of(lt->unit), lt->utc);
      return TM_OK;
    case TM_PQ_LT_INTEGER: return int_type(e, lt->bit_width, lt->is_signed, out, err);
    case TM_PQ_LT_UUID:
      if (e->type != TM_PQ_FLBA || e->type_length != 16)
        return tm_error_set(err, TM_ECORRUPT, "UUID annotation on a non-16-byte column");
      *out = tm_type_fixed(16);
      out->uuid = true;
      return TM_OK;
    case TM_PQ_LT_FLOAT16:
      if (e->type != TM_PQ_FLBA || e->type_length != 2)
        return tm_error_set(err, TM_ECORRUPT, "FLOAT16 annotation on a non-2-byte column");
      *out = tm_type_of(TM_TYPE_FLOAT32);
      return TM_OK;
    default: return physical_type(e, int96_unit, out, err);
  }
}

static int converted_type(const tm_pq_schema_elem *e, tm_time_unit int96_unit, tm_type *out,
                          tm_error *err) {
  switch (e->converted_type) {
    case TM_PQ_CT_UTF8:
    case TM_PQ_CT_ENUM:
    case TM_PQ_CT_JSON:
      TM_TRY(expect_phys(e, TM_PQ_BYTE_ARRAY, "UTF8", err));
      *out = tm_type_of(TM_TYPE_UTF8);
      return TM_OK;
    case TM_PQ_CT_BSON:
      TM_TRY(expect_phys(e, TM_PQ_BYTE_ARRAY, "BSON", err));
      *out = tm_type_of(TM_TYPE_BINARY);
      return TM_OK;
    case TM_PQ_CT_DECIMAL:
      if (e->precision == TM_PQ_ABSENT)
        return tm_error_set(err, TM_ECORRUPT, "DECIMAL without a precision");
      return decimal_type(e, e->precision, e->scale == TM_PQ_ABSENT ? 0 : e->scale, out, err);
    case TM_PQ_CT_DATE:
      TM_TRY(expect_phys(e, TM_PQ_INT32, "DATE", err));
      *out = tm_type_of(TM_TYPE_DATE32);
      return TM_OK;
    case TM_PQ_CT_TIME_MILLIS:
      TM_TRY(expect_phys(e, TM_PQ_INT32, "TIME_MILLIS", err));
      *out = tm_type_of(TM_TYPE_TIME64);
      out->unit = TM_UNIT_MICRO;
      return TM_OK;
    case TM_PQ_CT_TIME_MICROS:
      TM_TRY(expect_phys(e, TM_PQ_INT64, "TIME_MICROS", err));
      *out = tm_type_of(TM_TYPE_TIME64);
      out->unit = TM_UNIT_MICRO;
      return TM_OK;
    case TM_PQ_CT_TIMESTAMP_MILLIS:
    case TM_PQ_CT_TIMESTAMP_MICROS:
      TM_TRY(expect_phys(e, TM_PQ_INT64, "TIMESTAMP", err));
      /* The legacy annotations mean instants (isAdjustedToUTC = true). */
      *out = tm_type_timestamp(
          e->converted_type == TM_PQ_CT_TIMESTAMP_MILLIS ? TM_UNIT_MILLI : TM_UNIT_MICRO, true);
      return TM_OK;
    case TM_PQ_CT_UINT_8: return int_type(e, 8, false, out, err);
    case TM_PQ_CT_UINT_16: return int_type(e, 16, false, out, err);
    case TM_PQ_CT_UINT_32: return int_type(e, 32, false, out, err);
    case TM_PQ_CT_UINT_64: return int_type(e, 64, false, out, err);
    case TM_PQ_CT_INT_8: return int_type(e, 8, true, out, err);
    case TM_PQ_CT_INT_16: return int_type(e, 16, true, out, err);
    case TM_PQ_CT_INT_32: return int_type(e, 32, true, out, err);
    case TM_PQ_CT_INT_64: return int_type(e, 64, true, out, err);
    case TM_PQ_CT_INTERVAL: return tm_error_set(err, TM_EUNSUPPORTED, "INTERVAL type");
    default: return physical_type(e, int96_unit, out, err);
  }
}

int tm_parquet__map_type(const tm_pq_schema_elem *e, tm_time_unit int96_unit, tm_type *out,
                         tm_error *err) {
  if (e->logical.kind != TM_PQ_LT_NONE && e->logical.kind != TM_PQ_LT_FUTURE &&
      e->logical.kind != TM_PQ_LT_UNKNOWN)
    return logical_type(e, int96_unit, out, err);
  return converted_type(e, int96_unit, out, err);
}

static char *sv_dup(tm_strview v) { return tm_strndup(v.ptr, v.len); }

/* Appends "."+name to a path being built (or starts it). */
static char *path_join(const char *prefix, tm_strview name) {
  if (!prefix) return sv_dup(name);
  return tm_asprintf("%s.%.*s", prefix, (int)name.len, name.ptr);
}

typedef struct frame {
  int32_t children_left;
  int def, rep;
  char *path; /* owned */
} frame;

int tm_parquet__build_schema(tm_parquet_file *f, tm_error *err) {
  const tm_pq_file_meta *m = &f->meta;
  const tm_pq_schema_elem *root = &m->schema[0];
  int rc = TM_OK;
  size_t n_leaves = 0, n_fields = 0;
  frame *stack = NULL;
  int depth = 0;
  if (root->num_children <= 0 && m->n_schema > 1)
    return tm_error_set(err, TM_ECORRUPT, "schema root has no children");
  /* Counts first: leaves are elements without children. */
  for (uint32_t i = 1; i < m->n_schema; i++)
    if (m->schema[i].num_children == 0) n_leaves++;
  if ((uint32_t)root->num_children > m->n_schema - 1)
    return tm_error_set(err, TM_ECORRUPT, "schema root claims %d children, %u elements follow",
                        (int)root->num_children, (unsigned)(m->n_schema - 1));
  n_fields = (size_t)root->num_children;
  f->leaves = tm_calloc(n_leaves ? n_leaves : 1, sizeof *f->leaves);
  f->fields = tm_calloc(n_fields ? n_fields : 1, sizeof *f->fields);
  stack = tm_calloc(MAX_DEPTH, sizeof *stack);
  if (!f->leaves || !f->fields || !stack) {
    rc = tm_error_nomem(err);
    goto done;
  }
  stack[0].children_left = root->num_children;
  depth = 1;
  size_t leaf = 0, field = 0;
  uint32_t i = 1;
  for (; i < m->n_schema && depth > 0; i++) {
    /* Pop finished groups. */
    while (depth > 0 && stack[depth - 1].children_left == 0) {
      tm_free(stack[depth - 1].path);
      stack[depth - 1].path = NULL;
      depth--;
    }
    if (depth == 0) break;
    const tm_pq_schema_elem *e = &m->schema[i];
    frame *parent = &stack[depth - 1];
    parent->children_left--;
    int def = parent->def + (e->repetition == TM_PQ_OPTIONAL || e->repetition == TM_PQ_REPEATED);
    int rep = parent->rep + (e->repetition == TM_PQ_REPEATED);
    char *path = path_join(parent->path, e->name);
    if (!path) {
      rc = tm_error_nomem(err);
      goto done;
    }
    if (depth == 1) {
      /* A top-level field. */
      tm_parquet_field *fd = &f->fields[field];
      fd->name = sv_dup(e->name);
      if (!fd->name) {
        tm_free(path);
        rc = tm_error_nomem(err);
        goto done;
      }
      fd->field_id = e->field_id;
      fd->elem = i;
      fd->first_leaf = leaf;
      fd->physical_type = e->num_children > 0 ? -1 : e->type;
      fd->type_length = e->type == TM_PQ_FLBA ? e->type_length : -1;
      fd->nullable = e->repetition != TM_PQ_REQUIRED && e->repetition != -1;
      fd->nested = e->num_children > 0 || e->repetition == TM_PQ_REPEATED;
      if (e->num_children == 0 && e->type < 0) {
        tm_free(path);
        rc = tm_error_set(err, TM_ECORRUPT, "column '%s' has no type", fd->name);
        goto done;
      }
      if (fd->nested) {
        fd->type = tm_type_of(TM_TYPE_INVALID);
        fd->unsupported = tm_strdup("nested column");
        if (!fd->unsupported) {
          tm_free(path);
          rc = tm_error_nomem(err);
          goto done;
        }
      } else {
        tm_error terr;
        tm_error_init(&terr);
        int trc = tm_parquet__map_type(e, f->int96_unit, &fd->type, &terr);
        if (trc < 0) {
          fd->type = tm_type_of(TM_TYPE_INVALID);
          char *why = tm_strdup(terr.message);
          if (!why) {
            tm_free(path);
            rc = tm_error_nomem(err);
            goto done;
          }
          fd->unsupported = why;
        }
        fd->leaf = leaf;
      }
      field++;
    }
    if (e->num_children == 0) {
      if (e->type < 0) {
        rc = tm_error_set(err, TM_ECORRUPT, "column '%s' has no type", path);
        tm_free(path);
        goto done;
      }
      f->fields[field - 1].n_leaves++;
      tm_pq_leaf *lf = &f->leaves[leaf++];
      lf->elem = i;
      lf->field = field - 1;
      lf->max_def = def;
      lf->max_rep = rep;
      lf->path = path;
    } else {
      if (depth >= MAX_DEPTH) {
        tm_free(path);
        rc = tm_error_set(err, TM_EUNSUPPORTED, "schema nested deeper than %d levels", MAX_DEPTH);
        goto done;
      }
      frame *fr = &stack[depth++];
      fr->children_left = e->num_children;
      fr->def = def;
      fr->rep = rep;
      fr->path = path;
    }
  }
  while (depth > 0 && stack[depth - 1].children_left == 0) {
    tm_free(stack[depth - 1].path);
    stack[depth - 1].path = NULL;
    depth--;
  }
  if (depth != 0 || i != m->n_schema || field != n_fields || leaf != n_leaves) {
    rc = tm_error_set(err, TM_ECORRUPT, "schema element counts do not add up");
    goto done;
  }
  f->n_leaves = n_leaves;
  f->n_fields = n_fields;
done:
  if (stack) {
    for (int k = 0; k < MAX_DEPTH; k++) tm_free(stack[k].path);
    tm_free(stack);
  }
  if (rc < 0) {
    /* Keep counts so that close frees what was built. */
    f->n_leaves = n_leaves;
    f->n_fields = n_fields;
  }
  return rc;
}
