/*
 * file.h - the local file-system object store (objstore layer, file backend).
 *
 * Keys are relative paths below a root folder; '/' separates folders. A
 * listing walks the folder tree (symbolic links to files are listed, links
 * to folders are not followed, so loops cannot happen) and leaves out the
 * temporary files of puts in progress. Folders are not objects: stat of a
 * folder says it does not exist. Atomic puts write a temporary file beside
 * the target, fsync it, rename it over the target and fsync the folder.
 */
#ifndef TM_OBJSTORE_FILE_FILE_H
#define TM_OBJSTORE_FILE_FILE_H

#include "objstore/objstore.h"

/**
 * A store over the folder root ("/" for absolute paths, "." for paths
 * relative to the current folder). The folder need not exist yet: puts
 * create folders as needed. The caller owns *out (tm_objstore_free).
 */
int tm_objstore_file_new(tm_objstore **out, const char *root, tm_error *err) TM_WARN_UNUSED;

#endif
