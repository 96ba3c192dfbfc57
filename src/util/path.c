/* Absolute paths (path.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "util/path.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/err.h"

cls_status path_absolute(const char *path, char **out)
{
    *out = realpath(path, NULL);
    if (*out) return CLS_OK;
    struct stat st;
    if (stat(path, &st) != 0) return err_set(CLS_E_IO, "%s: %s", path, strerror(errno));
    /* it exists, but resolves to no name (a pipe's /proc link): the path as given, absolute */
    char cwd[PATH_MAX] = "";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd)) return err_set(CLS_E_IO, "%s: %s", path, strerror(errno));
    size_t n = strlen(cwd) + 1 + strlen(path) + 1;
    if (!(*out = malloc(n))) return err_set(CLS_E_NOMEM, "%s: out of memory", path);
    snprintf(*out, n, "%s%s%s", cwd, *cwd ? "/" : "", path);
    return CLS_OK;
}
