/* Shared helpers for the Check suites. */
#ifndef CLS_TESTUTIL_H
#define CLS_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* Path of a shared data file ("cacm/cacm.tar.gz"), or NULL when $CLS_DATA_DIR/../shared/data is
 * absent; then the caller skips, and tu_skip() has printed which path was missing. */
const char *tu_data_path(const char *rel);
/* A fresh path under the test temp folder: "<tmp>/<name>.<pid>.<counter>". */
const char *tu_tmp_path(const char *name);
/* A copy of s (malloc); aborts the test when out of memory. */
char *tu_strdup(const char *s);
/* The whole file at path (malloc, caller frees; NUL-terminated past its end) and its length
 * (len may be NULL); aborts the test on failure. */
unsigned char *tu_read_file(const char *path, size_t *len);
/* Writes len bytes to path; aborts the test on failure. */
void tu_write_file(const char *path, const void *data, size_t len);
/* Runs the clsearch command with args (a shell-quoted string); returns its exit status and
 * captures stderr (first 64 KiB) into *err (static buffer). */
int tu_run_cli(const char *args, const char **err);
/* tu_run_cli with stdout into the file out. */
int tu_run_cli_to(const char *args, const char *out, const char **err);
/* Deterministic 64-bit PRNG (splitmix64). */
uint64_t tu_rand(uint64_t *state);
/* Runs a suite, returning the process exit status for main(). */
int tu_run_suite(Suite *s);

#endif
