/* Shared helpers for the Check suites. */
#ifndef CLS_TESTUTIL_H
#define CLS_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "clsearch.h"

/* Exit status that CTest counts as skipped (SKIP_RETURN_CODE in tests/CMakeLists.txt). */
#define TU_SKIP 77

/* Path of a shared data file ("cacm/cacm.tar.gz") under $CLS_DATA_DIR (default ../shared/data);
 * an absolute path is returned as it is. Fails the test when the file is absent: only the data
 * part of a suite calls it, and tu_main has checked that part's needs before running it. */
const char *tu_data_path(const char *rel);
/* A fresh path under the test temp folder: "<tmp>/<name>.<pid>.<counter>". */
const char *tu_tmp_path(const char *name);
/* The index builder b holds, written under the test temp folder (name as tu_tmp_path's), b freed,
 * the file opened and unlinked (the mapping stays): the index, open. Aborts the test on failure. */
cls_index *tu_builder_open(cls_builder *b, const char *name);
/* The OpenCL device the tests run on: $CLS_TEST_DEVICE, else "cpu" (POCL). */
const char *tu_device(void);
/* 1 when path names something that exists. */
int tu_exists(const char *path);
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
/* tu_run_cli_to with the file in piped into standard input (`cat in | clsearch ...`: a pipe,
 * as from printf, not a file); in NULL: /dev/null. */
int tu_run_cli_in(const char *in, const char *args, const char *out, const char **err);
/* tu_run_cli_in with args printf-style; the test fails if the shell cannot run. */
int tu_cli(const char *in, const char *out, const char **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Deterministic 64-bit PRNG (splitmix64). */
uint64_t tu_rand(uint64_t *state);
/* Runs a suite, returning the process exit status for main(). */
int tu_run_suite(Suite *s);
/* main() of a suite split in two parts, each its own CTest entry. Without arguments it runs
 * plain(): the cases that need nothing outside the project and the build. With --data it runs
 * data(): the cases that need files named in needs (NULL-terminated; relative to $CLS_DATA_DIR,
 * or absolute). When any of them is absent, the data part runs nothing, prints
 * "SKIP: <path> is absent" for each and returns TU_SKIP, so CTest reports it as skipped, never
 * as passed. Another argument is a usage error (exit 2). */
int tu_main(int argc, char **argv, Suite *(*plain)(void), Suite *(*data)(void), const char *const *needs);

#endif
