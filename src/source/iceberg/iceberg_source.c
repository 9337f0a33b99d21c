/* iceberg_source.c - (interim) */
#include "source/source_int.h"
int tm_source__open_iceberg(tm_source **out, const tm_source_options *opts, tm_error *err) {
  (void)out;
  return tm_error_set(err, TM_EUNSUPPORTED, "dataset %s: Iceberg sources are not available in this build", opts->name);
}
