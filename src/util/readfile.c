#include "util/readfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

char *read_whole_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long sz = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (sz >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)sz + 1)) != NULL &&
        fread(buf, 1, (size_t)sz, f) == (size_t)sz) {
        buf[sz] = '\0';
        *len = (size_t)sz;
    } else {
        int e = errno;
        free(buf);
        buf = NULL;
        errno = e ? e : EIO;
    }
    fclose(f);
    return buf;
}
