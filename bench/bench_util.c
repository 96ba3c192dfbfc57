/* Helpers shared by the benchmark suites (bench.h). */
#define _DEFAULT_SOURCE
#include <stdlib.h>
#include <time.h>

#include "bench.h"

#ifndef CLSEARCH_GIT
#define CLSEARCH_GIT "unknown"
#endif

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
