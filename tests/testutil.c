#include "testutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* rel under the data folder (or rel itself when absolute), in one of four rotating buffers. */
static const char *data_file(const char *rel)
{
    static char buf[4][4096];
    static int slot;
    const char *dir = getenv("CLS_DATA_DIR");
    char *p = buf[slot++ & 3];
    if (rel[0] == '/') snprintf(p, 4096, "%s", rel);
    else snprintf(p, 4096, "%s/%s", dir && *dir ? dir : "../shared/data", rel);
    return p;
}

const char *tu_data_path(const char *rel)
{
    const char *p = data_file(rel);
    struct stat st;
    ck_assert_msg(stat(p, &st) == 0, "%s is absent: a case that needs it must be in its suite's data part, "
                                     "and the file in that part's needs", p);
    return p;
}

int tu_main(int argc, char **argv, Suite *(*plain)(void), Suite *(*data)(void), const char *const *needs)
{
    if (argc == 1) return tu_run_suite(plain());
    if (argc != 2 || strcmp(argv[1], "--data") != 0 || !data) {
        fprintf(stderr, "usage: %s%s\n", argv[0], data ? " [--data]" : "");
        return 2;
    }
    int absent = 0;
    for (size_t i = 0; needs && needs[i]; i++) {
        const char *p = data_file(needs[i]);
        struct stat st;
        if (stat(p, &st) != 0) {
            printf("SKIP: %s is absent\n", p);
            absent = 1;
        }
    }
    if (absent) {
        fflush(stdout);
        return TU_SKIP;
    }
    return tu_run_suite(data());
}

const char *tu_tmp_path(const char *name)
{
    static char buf[8][4096];
    static int slot, counter;
    const char *dir = getenv("CLS_TEST_TMP");
    char *p = buf[slot++ & 7];
    snprintf(p, 4096, "%s/%s.%ld.%d", dir ? dir : "/tmp", name, (long)getpid(), counter++);
    return p;
}

void tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert(fwrite(data, 1, len, f) == len);
    ck_assert(fclose(f) == 0);
}

int tu_run_cli(const char *args, const char **err) { return tu_run_cli_to(args, "/dev/null", err); }

int tu_run_cli_to(const char *args, const char *out, const char **err) { return tu_run_cli_in(NULL, args, out, err); }

int tu_run_cli_in(const char *in, const char *args, const char *out, const char **err)
{
    static char errbuf[65536];
    const char *bin = getenv("CLSEARCH_BIN");
    const char *errpath = tu_tmp_path("stderr");
    char cmd[8192];
    if (in)
        snprintf(cmd, sizeof cmd, "cat '%s' | '%s' %s 2>'%s' >'%s'", in, bin ? bin : "clsearch", args, errpath, out);
    else
        snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s' >'%s' </dev/null", bin ? bin : "clsearch", args, errpath, out);
    int rc = system(cmd);
    errbuf[0] = '\0';
    FILE *f = fopen(errpath, "rb");
    if (f) {
        size_t n = fread(errbuf, 1, sizeof errbuf - 1, f);
        errbuf[n] = '\0';
        fclose(f);
        remove(errpath);
    }
    if (err) *err = errbuf;
    if (rc == -1) return -1;
    if (WIFSIGNALED(rc)) return 128 + WTERMSIG(rc);
    return WEXITSTATUS(rc);
}

int tu_cli(const char *in, const char *out, const char **err, const char *fmt, ...)
{
    char args[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int rc = tu_run_cli_in(in, args, out, err);
    ck_assert(rc != -1);
    return rc;
}

uint64_t tu_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int tu_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

char *tu_strdup(const char *s)
{
    char *p = strdup(s);
    ck_assert(p != NULL);
    return p;
}

unsigned char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    ck_assert(n >= 0);
    rewind(f);
    unsigned char *p = malloc((size_t)n + 1);
    ck_assert(p != NULL);
    ck_assert(fread(p, 1, (size_t)n, f) == (size_t)n);
    p[n] = '\0';
    fclose(f);
    if (len) *len = (size_t)n;
    return p;
}

const char *tu_device(void)
{
    const char *d = getenv("CLS_TEST_DEVICE");
    return d && *d ? d : "cpu";
}

int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

cls_index *tu_builder_open(cls_builder *b, const char *name)
{
    const char *path = tu_tmp_path(name);
    ck_assert_msg(cls_builder_write(b, path) == CLS_OK, "%s", cls_last_error());
    cls_builder_free(b);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    remove(path);
    return idx;
}
