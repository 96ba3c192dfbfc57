/* topk suite: the engine's top-k of dense rows alone (topk_team, topk_rows, topk_wide.cl's kernels
 * or topk_select, as the engine chooses for the shape), on dense rows of random scores, against the
 * device's copy ceiling and against the host's heap selection as a check.
 *
 *   clsearch bench topk [-d DEVICES] [-c ROWSxN:K,...] [-r REPEATS] [--ceiling GBPS] [--json FILE]
 *
 * Each case is ROWS queries of N candidate scores (one dense accumulator row per query, the
 * engine's OR layout) and k. Default cases: 1024x100000:10 and 1x25000000:10 (the shapes of
 * the torch.topk reference figures in docs/PERFORMANCE.md), then 1024x100000:1000,
 * 16384x1000:10 and 1x1000000:10000 (bench/peers_torch.py times torch.topk on each). Scores are
 * uniform in (0, 1]. The rows are uploaded once (timed apart), then the kernels run once untimed
 * and REPEATS times (default 10), each timed by profiling events from the first kernel's start to
 * the last one's end. Reported: the kernel that ranked the rows, elements per second (ROWS x N /
 * median time) and the bytes of scores read once (4 per element) as a fraction of the ceiling
 * (default 2800 GB/s, the H100's measured copy). Every row's hits are compared with a heap
 * selection on the host (same docIDs in the same order, ties to the smaller docID, empty slots
 * past the hits). The kernels need an engine, so the suite builds a one-document index in the
 * temporary folder. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "query/batch.h"
#include "bench.h"
#include "clsearch.h"
#include "bench_hooks.h"
#include "engine/engine.h"
#include "util/err.h"

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench topk: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

typedef struct hit {
    float s;
    uint32_t d;
} hit;

/* Min-heap on rank order: the root is the worst kept hit. */
static int worse(hit a, hit b) { return hit_before(b.s, b.d, a.s, a.d); }

static void sift_down(hit *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && worse(h[l], h[m])) m = l;
        if (r < n && worse(h[r], h[m])) m = r;
        if (m == i) return;
        hit t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int cmp_rank(const void *a, const void *b)
{
    const hit *x = a, *y = b;
    return hit_before(x->s, x->d, y->s, y->d) ? -1 : hit_before(y->s, y->d, x->s, x->d) ? 1 : 0;
}

/* The k best of row[0..N) in rank order into out; returns how many (min(k, N)). */
static uint32_t host_topk(const float *row, uint32_t N, uint32_t k, hit *out)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < N; d++) {
        hit x = {row[d], d};
        if (n < k) {
            out[n++] = x;
            if (n == k)
                for (uint32_t i = k / 2 + 1; i-- > 0;) sift_down(out, n, i);
        } else if (worse(out[0], x)) {
            out[0] = x;
            sift_down(out, n, 0);
        }
    }
    qsort(out, n, sizeof *out, cmp_rank);
    return n;
}

/* A one-document index, only so that an engine (device, programs) exists. */
static cls_status tiny_index(cls_index **out)
{
    char path[] = "/tmp/clsearch-bench-topk-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return CLS_E_IO;
    close(fd);
    cls_builder *b;
    cls_status s = cls_builder_create(NULL, &b);
    if (s == CLS_OK) s = cls_builder_add(b, "d0", 2, "benchmark", 9);
    if (s == CLS_OK) s = cls_builder_write(b, path);
    cls_builder_free(b);
    if (s == CLS_OK) s = cls_index_open(path, out);
    unlink(path); /* the mapping stays valid */
    return s;
}

/* One case on engine cx: random scores in (0, 1] (24 bits: many ties), uploaded (*up), the
 * kernels timed reps times into t (sorted), every row checked against the host's heap selection
 * (*ok), the kernel that ranked them in *kernel. CLS_OK unless a call failed or memory ran out. */
static cls_status run_case(clx_engine *cx, uint32_t rows, uint32_t N, uint32_t k, unsigned reps, double *t, double *up,
                           int *ok, const char **kernel)
{
    size_t slots = (size_t)rows * k;
    float *sc = malloc((size_t)rows * N * sizeof *sc), *gs = malloc(slots * sizeof *gs);
    uint32_t *gd = malloc(slots * sizeof *gd), *got = malloc((size_t)rows * sizeof *got);
    hit *want = malloc(k * sizeof *want);
    cls_status s = CLS_OK;
    if (!sc || !gs || !gd || !got || !want) s = err_set(CLS_E_NOMEM, "scores of %u x %u", rows, N);
    uint64_t st = 0x9E3779B97F4A7C15ull ^ ((uint64_t)rows * 31 + (uint64_t)N * 7 + k);
    for (size_t i = 0; s == CLS_OK && i < (size_t)rows * N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        sc[i] = (float)((st >> 40) + 1) / 16777216.0f;
    }
    if (s == CLS_OK) s = clx_bench_topk(cx, sc, rows, N, k, reps, t, up, got, gd, gs, kernel);
    if (s == CLS_OK) {
        *ok = 1;
        for (uint32_t q = 0; q < rows && *ok; q++) {
            uint32_t n = host_topk(sc + (size_t)q * N, N, k, want);
            const uint32_t *d = gd + (size_t)q * k;
            const float *f = gs + (size_t)q * k;
            *ok = got[q] == n;
            for (uint32_t i = 0; i < k && *ok; i++)
                *ok = i < n ? d[i] == want[i].d && f[i] == want[i].s : d[i] == 0xFFFFFFFFu && f[i] == 0.0f;
            if (!*ok) fprintf(stderr, "clsearch bench topk: %ux%u:%u: row %u differs from the host's selection\n", rows, N, k, q);
        }
        bench_sort(t, reps);
    }
    free(sc), free(gs), free(gd), free(got), free(want);
    return s;
}

int bench_topk(int argc, char **argv)
{
    const char *devices = "auto", *cases = "1024x100000:10,1x25000000:10,1024x100000:1000,16384x1000:10,1x1000000:10000",
               *json_path = NULL;
    unsigned reps = 10;
    double ceiling = 2800.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"ceiling", required_argument, 0, 'g'},
                                          {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:c:r:", longs, NULL)) != -1) {
        if (c == 'd') devices = optarg;
        else if (c == 'c') cases = optarg;
        else if (c == 'r') reps = (unsigned)strtoul(optarg, NULL, 10);
        else if (c == 'j') json_path = optarg;
        else if (c == 'g') ceiling = atof(optarg);
        else reps = 0;
    }
    if (reps < 1 || reps > 10000 || optind != argc || !(ceiling > 0)) {
        fprintf(stderr, "usage: clsearch bench topk [-d DEVICES] [-c ROWSxN:K,...] [-r REPEATS] [--ceiling GBPS] "
                        "[--json FILE]\n");
        return 2;
    }
    cls_index *idx;
    cls_status s = tiny_index(&idx);
    if (s != CLS_OK) return failed(s, "making the one-document index");
    of_file jf;
    if (bench_json_open(&jf, "bench topk", json_path, NULL, 0)) return 1;
    FILE *json = jf.f;
    printf("topk suite: commit %s, %s; %u repeats after a warm-up; ceiling %.0f GB/s\n", bench_commit(), bench_when(),
           reps, ceiling);
    printf("%-6s %6s %10s %6s %-11s %10s %10s %10s %10s %7s %9s %s\n", "dev", "rows", "N", "k", "kernel", "med ms",
           "min ms", "max ms", "Gelem/s", "%ceil", "upload ms", "check");
    double *t = malloc(reps * sizeof *t);
    char *dl = strdup(devices), *cl = strdup(cases);
    int rc = 0;
    for (char *sd = NULL, *dev = strtok_r(dl, ",", &sd); dev; dev = strtok_r(NULL, ",", &sd)) {
        cls_engine *e;
        if ((s = cls_engine_create(idx, dev, &e)) != CLS_OK) return failed(s, dev);
        clx_engine *cx = engine_clx(e);
        if (!cx) return failed(CLS_E_ARG, "the topk suite needs an OpenCL device");
        char ccopy[1024];
        snprintf(ccopy, sizeof ccopy, "%s", cl);
        for (char *sc = NULL, *cs = strtok_r(ccopy, ",", &sc); cs; cs = strtok_r(NULL, ",", &sc)) {
            unsigned long rows, N, k;
            if (sscanf(cs, "%lux%lu:%lu", &rows, &N, &k) != 3 || !rows || !N || !k || k > CLS_MAX_K ||
                rows * N > (1ul << 31)) {
                fprintf(stderr, "clsearch bench topk: bad case '%s' (ROWSxN:K, k <= %u, ROWS x N <= 2^31)\n", cs,
                        CLS_MAX_K);
                return 2;
            }
            double up;
            int ok;
            const char *kern = NULL;
            if ((s = run_case(cx, (uint32_t)rows, (uint32_t)N, (uint32_t)k, reps, t, &up, &ok, &kern)) != CLS_OK)
                return failed(s, cs);
            if (!ok) rc = 1;
            if (!kern) kern = "?";
            double med = t[reps / 2], el = (double)rows * (double)N;
            double gbs = 4.0 * el / med * 1e-9;
            printf("%-6s %6lu %10lu %6lu %-11s %10.3f %10.3f %10.3f %10.2f %6.1f%% %9.3f %s\n", dev, rows, N, k, kern,
                   med * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, el / med * 1e-9, 100.0 * gbs / ceiling, up * 1e3,
                   ok ? "match" : "MISMATCH");
            fflush(stdout);
            if (json) {
                const char *d = cls_engine_describe(e);
                fprintf(json,
                        "{\"suite\":\"topk\",\"commit\":\"%s\",\"when\":\"%s\",\"engine\":\"%s\",\"device\":\"%.*s\","
                        "\"variant\":\"%s\",\"rows\":%lu,\"n\":%lu,\"k\":%lu,\"repeats\":%u,"
                        "\"median_s\":%.9f,\"min_s\":%.9f,\"max_s\":%.9f,\"gelements_per_s\":%.4f,"
                        "\"gbytes_per_s\":%.3f,\"ceiling_gbytes_per_s\":%.1f,\"upload_s\":%.9f,\"check\":\"%s\"}\n",
                        bench_commit(), bench_when(), dev, (int)strcspn(d, "\n"), d, kern, rows, N, k, reps, med, t[0],
                        t[reps - 1], el / med * 1e-9, gbs, ceiling, up, ok ? "match" : "mismatch");
            }
        }
        cls_engine_free(e);
    }
    if (bench_json_close(&jf, "bench topk")) rc = 1;
    free(t), free(dl), free(cl);
    cls_index_close(idx);
    return rc;
}

int bench_topk_time(const char *device, const struct clx_params *prm, uint32_t rows, uint32_t N, uint32_t k,
                    unsigned reps, double *median_s)
{
    cls_index *idx;
    cls_status s = tiny_index(&idx);
    if (s != CLS_OK) return failed(s, "making the one-document index");
    cls_engine *e = NULL;
    double *t = malloc(reps * sizeof *t), up;
    int ok = 0, rc = 1;
    const char *kern;
    if (!t) s = err_set(CLS_E_NOMEM, "out of memory");
    else if ((s = engine_create_with(idx, device, prm, &e)) == CLS_OK && !engine_clx(e))
        s = err_set(CLS_E_ARG, "%s: the topk suite needs an OpenCL device", device);
    if (s == CLS_OK) s = run_case(engine_clx(e), rows, N, k, reps, t, &up, &ok, &kern);
    if (s != CLS_OK) failed(s, device);
    else if (!ok) fprintf(stderr, "clsearch bench topk: %s: device result differs from the host's selection\n", device);
    else *median_s = t[reps / 2], rc = 0;
    cls_engine_free(e);
    cls_index_close(idx);
    free(t);
    return rc;
}
