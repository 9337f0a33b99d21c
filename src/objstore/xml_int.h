/*
 * xml_int.h - a small, bounded XML scanner for the documents object stores
 * send: S3's ListObjectsV2 pages, Azure's List Blobs results, and both
 * services' <Error> bodies (objstore layer, private: only files under
 * src/objstore/ include it; shared by the s3 and azure backends).
 *
 * What the scanner trusts (nothing; responses are hostile input):
 *   - the whole document is in memory, at most TM_XML_MAX bytes;
 *   - elements nest at most TM_XML_DEPTH_MAX deep, names are at most
 *     TM_XML_NAME_MAX bytes, the text of one element at most
 *     TM_XML_TEXT_MAX bytes after decoding;
 *   - start and end tags must match; the five predefined entities and
 *     numeric character references (1..0x10FFFF, not surrogates) are
 *     decoded; CDATA is copied; comments and <?...?> are skipped;
 *     <!DOCTYPE> is refused (no entity expansion, ever);
 *   - namespace prefixes on element names are ignored ("s3:Key" is Key);
 *   - attribute values are handed over raw (entities not decoded), and
 *     only to a scanner that asks for them.
 * Every message starts with the caller's label ("S3 response: ...").
 */
#ifndef TM_OBJSTORE_XML_INT_H
#define TM_OBJSTORE_XML_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

#define TM_XML_MAX (16u * 1024 * 1024)
#define TM_XML_TEXT_MAX 8192u
#define TM_XML_DEPTH_MAX 16
#define TM_XML_NAME_MAX 64

typedef struct tm_xml_scan tm_xml_scan;

/**
 * Called when an element closes; text is its decoded text since its last
 * child (NUL-terminated, len bytes). x->depth counts the closing element,
 * x->names[x->depth - 1] is its name, x->names[x->depth - 2] its parent's.
 * A negative return stops the scan with that code.
 */
typedef int (*tm_xml_close_fn)(tm_xml_scan *x, const char *name, const char *text, size_t len,
                               tm_error *err);
/**
 * Optional: called for each attribute of a start tag, after the element
 * was opened (x->depth counts it). value is raw, len bytes, not terminated.
 */
typedef int (*tm_xml_attr_fn)(tm_xml_scan *x, const char *name, const char *value, size_t len,
                              tm_error *err);

struct tm_xml_scan {
  const char *label;                              /* "S3 response", for messages */
  const char *p, *end;                            /* the unread rest of the document */
  char names[TM_XML_DEPTH_MAX][TM_XML_NAME_MAX + 1]; /* open elements, prefix-stripped */
  size_t depth;                                   /* open elements */
  tm_buf text;                                    /* decoded text of the innermost element, capped */
  bool root_seen;
  tm_xml_close_fn on_close;
  tm_xml_attr_fn on_attr;                         /* NULL: attributes are skipped */
  void *ctx;                                      /* the caller's, for the callbacks */
};

/**
 * Scans len bytes of xml, calling on_close for every element and on_attr
 * (may be NULL) for every attribute. TM_ECORRUPT for anything malformed or
 * over a limit, TM_ENOMEM, or a callback's code.
 */
int tm_xml__scan(const char *label, const char *xml, size_t len, tm_xml_close_fn on_close,
                 tm_xml_attr_fn on_attr, void *ctx, tm_error *err) TM_WARN_UNUSED;

/** The closing element's parent name, "" at the root (for tm_xml_close_fn). */
const char *tm_xml__parent(const tm_xml_scan *x);

/** One field tm_xml__pick copies out: a child of the root, by name. */
typedef struct tm_xml_field {
  const char *name; /* "Code" */
  char *out;        /* receives the trimmed text, control characters blanked, truncated */
  size_t cap;       /* bytes at out, NUL included */
} tm_xml_field;

/**
 * Copies the text of the direct children of a <root> element named in
 * fields (error bodies: <Error><Code>..</Code><Message>..</Message>).
 * Never fails: fields not found, or a body that is not XML, leave "".
 */
void tm_xml__pick(const char *xml, size_t len, const char *root, tm_xml_field *fields,
                  size_t n_fields);

#endif
