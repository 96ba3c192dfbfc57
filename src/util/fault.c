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
static unsigned nfail[FAULT_KINDS];
static atomic_uint_fast64_t seen[FAULT_KINDS];

static void report(void)
{
    fprintf(stderr, "clsearch fault counts:");
    for (int k = 0; k < FAULT_KINDS; k++) fprintf(stderr, " %s %llu", kind_names[k], (unsigned long long)atomic_load(&seen[k]));
    fputc('\n', stderr);
}

static void parse(void)
{
    const char *env = getenv("CLSEARCH_FAULT");
    if (!env || !*env) return;
    enabled = 1;
    if (strcmp(env, "count") == 0) {
        counting = 1;
        atexit(report);
        return;
    }
    /* KIND:N[,KIND:N...]; a malformed value stops the process: a test that names a kind
     * wrongly must not pass as if the fault had been survived */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *sp = NULL, *tok = strtok_r(buf, ",", &sp); tok; tok = strtok_r(NULL, ",", &sp)) {
        char *colon = strchr(tok, ':');
        int k = FAULT_KINDS;
        if (colon) {
            *colon = '\0';
            for (k = 0; k < FAULT_KINDS && strcmp(tok, kind_names[k]) != 0; k++) {}
        }
        char *end = NULL;
        unsigned long long n = colon ? strtoull(colon + 1, &end, 10) : 0;
        if (k == FAULT_KINDS || n == 0 || *end || nfail[k] == FAULT_MAX_AT) {
            fprintf(stderr, "CLSEARCH_FAULT: '%s' is not KIND:N[,KIND:N...] (kinds: device-alloc, enqueue, host-alloc, "
                            "write, build, compiler-crash; N from 1; a kind at most %d times) or count\n", env, FAULT_MAX_AT);
            exit(2);
        }
        fail_at[k][nfail[k]++] = n;
    }
}

int fault_hit(fault_kind k)
{
    pthread_once(&once, parse);
    if (!enabled) return 0;
    uint64_t n = atomic_fetch_add(&seen[k], 1) + 1;
    for (unsigned i = 0; i < nfail[k]; i++)
        if (n == fail_at[k][i]) return 1;
    return 0;
}

void *fault_malloc(size_t n) { return fault_hit(FAULT_HOST_ALLOC) ? NULL : malloc(n); }

void *fault_calloc(size_t n, size_t size) { return fault_hit(FAULT_HOST_ALLOC) ? NULL : calloc(n, size); }
