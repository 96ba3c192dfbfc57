/* CLSEARCH_FAULT (fault.h): parsed once, on the first counted operation; the counters are atomic
 * since the builder's analysis threads allocate too (a sweep runs those single-threaded, so
 * that the Nth operation is the same one each run). */
#include "util/fault.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[FAULT_KINDS] = {"device-alloc", "enqueue", "host-alloc", "write", "build",
                                                           "compiler-crash"};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int enabled;                       /* 0: CLSEARCH_FAULT unset, nothing counted */
static int counting;                      /* CLSEARCH_FAULT=count */
static uint64_t fail_at[FAULT_KINDS][FAULT_MAX_AT]; /* the operations to fail, 1-based */
static int fail_on[FAULT_KINDS][FAULT_MAX_AT];       /* the executor they are counted on; -1 any */
static int fail_after[FAULT_KINDS][FAULT_MAX_AT];    /* 1: that one and every later one (N+) */
static atomic_uint_fast64_t seen_on[FAULT_KINDS][FAULT_MAX_AT]; /* operations counted on it */
static unsigned nfail[FAULT_KINDS];
static atomic_uint_fast64_t seen[FAULT_KINDS];
static _Thread_local int executor = -1; /* the engine's executor this thread runs for */

static void report(void)
{
    fprintf(stderr, "clsearch fault counts:");
    for (int k = 0; k < FAULT_KINDS; k++) fprintf(stderr, " %s %llu", kind_names[k], (unsigned long long)atomic_load(&seen[k]));
    fputc('\n', stderr);
}

/* A malformed value stops the process, naming it and the item at fault: a test that names a
 * kind or a count wrongly must not pass as if the fault had been survived. */
static void malformed(const char *env, const char *item, size_t len, const char *why)
{
    fprintf(stderr, "CLSEARCH_FAULT='%s': '%.*s' %s; the form is KIND:N[+][@E][,KIND:N[+][@E]...] (kinds: device-alloc, enqueue, "
                    "host-alloc, write, build, compiler-crash; N from 1 to %llu; a kind at most %d times) or count\n",
            env, (int)len, item, why, (unsigned long long)UINT64_MAX, FAULT_MAX_AT);
    exit(2);
}

static void parse(void)
{
    const char *env = getenv("CLSEARCH_FAULT");
    if (!env || !*env) return;
    enabled = 1;
    if (strcmp(env, "count") == 0) {
        static int reported;
        counting = 1;
        if (!reported++) atexit(report);
        return;
    }
    /* KIND:N[,KIND:N...], each item whole: no empty item, N digits only (no sign, no space) */
    for (const char *item = env;;) {
        const char *comma = strchr(item, ','), *end = comma ? comma : item + strlen(item);
        size_t len = (size_t)(end - item);
        const char *colon = memchr(item, ':', len), *at = memchr(item, '@', len);
        if (len == 0) malformed(env, item, 0, "is an empty item");
        if (!colon) malformed(env, item, len, "has no ':N'");
        int k = 0;
        while (k < FAULT_KINDS && !(strlen(kind_names[k]) == (size_t)(colon - item) &&
                                    memcmp(item, kind_names[k], (size_t)(colon - item)) == 0))
            k++;
        if (k == FAULT_KINDS) malformed(env, item, len, "names no kind");
        uint64_t n = 0;
        int on = -1;
        if (at && at < colon) malformed(env, item, len, "has '@' before its count");
        if (at) {
            if (at + 1 == end) malformed(env, item, len, "has no executor after '@'");
            on = 0;
            for (const char *p = at + 1; p < end; p++) {
                if (*p < '0' || *p > '9') malformed(env, item, len, "has an executor that is not digits");
                on = on * 10 + (*p - '0');
                if (on > 63) malformed(env, item, len, "has an executor above 63");
            }
            end = at;
        }
        int after = end > colon + 1 && end[-1] == '+';
        if (after) end--;
        if (colon + 1 == end) malformed(env, item, len, "has no count");
        for (const char *p = colon + 1; p < end; p++) {
            if (*p < '0' || *p > '9') malformed(env, item, len, "has a count that is not digits");
            unsigned d = (unsigned)(*p - '0');
            if (n > (UINT64_MAX - d) / 10) malformed(env, item, len, "has a count too large");
            n = n * 10 + d;
        }
        if (n == 0) malformed(env, item, len, "has the count 0 (operations are counted from 1)");
        if (nfail[k] == FAULT_MAX_AT) malformed(env, item, len, "names its kind once too often");
        fail_on[k][nfail[k]] = on;
        fail_after[k][nfail[k]] = after;
        fail_at[k][nfail[k]++] = n;
        if (!comma) break;
        item = comma + 1;
    }
}

void fault_setup(void) { pthread_once(&once, parse); }

void fault_set_executor(int x) { executor = x; }

void fault_reload(void)
{
    pthread_once(&once, parse);
    enabled = counting = 0;
    for (int k = 0; k < FAULT_KINDS; k++) {
        nfail[k] = 0;
        atomic_store(&seen[k], 0);
        for (int i = 0; i < FAULT_MAX_AT; i++) atomic_store(&seen_on[k][i], 0);
    }
    parse();
}

int fault_hit(fault_kind k)
{
    pthread_once(&once, parse);
    if (!enabled) return 0;
    uint64_t n = atomic_fetch_add(&seen[k], 1) + 1;
    int hit = 0;
    for (unsigned i = 0; i < nfail[k]; i++) {
        uint64_t m = n;
        if (fail_on[k][i] >= 0) {
            if (fail_on[k][i] != executor) continue;
            m = atomic_fetch_add(&seen_on[k][i], 1) + 1;
        }
        hit |= fail_after[k][i] ? m >= fail_at[k][i] : m == fail_at[k][i];
    }
    return hit;
}

void *fault_malloc(size_t n) { return fault_hit(FAULT_HOST_ALLOC) ? NULL : malloc(n); }

void *fault_calloc(size_t n, size_t size) { return fault_hit(FAULT_HOST_ALLOC) ? NULL : calloc(n, size); }
