/* Helpers shared by the benchmark suites (bench.h). */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "clsearch.h"
#include "util/vec.h"

#ifndef CLSEARCH_GIT
#define CLSEARCH_GIT "unknown"
#endif

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_cpu(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

void bench_profile_split(const cls_engine *e, double *up, double *kern, double *down)
{
    const cls_profile_step *st;
    size_t n = cls_engine_profile(e, &st, NULL);
    bench_steps_split(st, n, up, kern, down);
}

void bench_steps_split(const cls_profile_step *st, size_t n, double *up, double *kern, double *down)
{
    *up = *kern = *down = 0;
    for (size_t i = 0; i < n; i++) {
        if (!st[i].transfer) *kern += st[i].seconds;
        else if (strcmp(st[i].name, "download") == 0) *down += st[i].seconds;
        else *up += st[i].seconds;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort(double *v, unsigned n) { qsort(v, n, sizeof *v, cmp_double); }

const char *bench_commit(void)
{
    const char *c = getenv("CLSEARCH_COMMIT");
    return c && *c ? c : CLSEARCH_GIT;
}

const char *bench_when(void)
{
    static char buf[32];
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%MZ", &tm);
    return buf;
}

int bench_cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return 0;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 1;
        }
        if (!vec_reserve(buf, cap, *len + (size_t)n + 1, 1)) return 0;
    }
}

int bench_json_open(of_file *o, const char *suite, const char *path, char *const *inputs, int ninputs)
{
    memset(o, 0, sizeof *o);
    if (!path) return 0;
    cls_status s = of_guard(path, OF_JSONL, inputs, ninputs);
    /* lines go after an earlier run's; what --force let through is written over */
    if (s == CLS_OK) s = of_open(o, path, of_holds(path, OF_JSONL));
    if (s == CLS_OK) return 0;
    fprintf(stderr, "clsearch %s: --json: %s\n", suite, cls_last_error());
    return 1;
}

int bench_json_close(of_file *o, const char *suite)
{
    if (!o->f) return 0;
    if (of_commit(o) == CLS_OK) return 0;
    fprintf(stderr, "clsearch %s: --json: %s\n", suite, cls_last_error());
    return 1;
}
