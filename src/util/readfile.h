/* A whole file in memory. */
#ifndef CLS_READFILE_H
#define CLS_READFILE_H

#include <stddef.h>

/* The bytes of the file at path, NUL-terminated (malloc, the caller frees), their count in *len
 * (without the NUL); NULL with errno set when it cannot be opened or read. */
char *read_whole_file(const char *path, size_t *len);

#endif
