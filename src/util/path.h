/* Absolute paths, as an index records its roots and the stored field "path" names files. */
#ifndef CLS_PATH_H
#define CLS_PATH_H

#include "clsearch.h"

/* path made absolute into *out (malloc, caller frees): realpath's answer (links resolved), or,
 * for something that exists without a name realpath can give (/dev/stdin on a pipe), the path
 * itself, prefixed with the working folder when relative. CLS_E_IO when path does not exist,
 * CLS_E_NOMEM. */
cls_status path_absolute(const char *path, char **out);

#endif
