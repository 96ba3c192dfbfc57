/* scan suite: the device-wide prefix sum (cl/scan.cl) alone, per variant, against the copy
 * ceiling, checked against a host scan.
 *
 *   clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--method lookback,3pass]
 *                       [--algo hs,we,shfl] [--wg 256,...] [--items 8,...] [-r REPEATS]
 *                       [--ceiling GBPS] [--json FILE]
 *
 * Inputs: 2^L uint32 values uniform in 0..15 (as bench/peers_torch.py gives torch.cumsum),
 * uploaded once. Methods (bench/cl/scan.cl; both by default): lookback, the single pass with
 * decoupled look-back, one kernel reading and writing each element once (8 bytes an element);
 * 3pass, the whole reduce-then-scan: scan_tiles over the input, the same over the tile sums
 * until one tile holds them, then scan_add back down (16 bytes an element: the tile pass reads
 * and writes each element, the add pass reads and writes it again). A run is timed from the
 * first kernel's start to the last one's end by profiling events, after one untimed run,
 * REPEATS times (default 10); bandwidth counts the method's bytes; the ceiling defaults to
 * 2800 GB/s, the H100's measured copy. The output is compared with a host scan (uint32,
 * wrapping). Variants: the in-group scan (WG_SCAN_ALGO): hs = Hillis-Steele, we = work-efficient
 * (Blelloch), shfl = NVIDIA warp shuffles in inline PTX (NVIDIA devices only; the default list
 * "all" means every one the device runs); --wg work-items per group (powers of two) and --items
 * elements per work-item, each a list swept in full; by default the values in force for the
 * device (tuning file or built-in database, as `clsearch devices -v` shows). */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clx_scan.h"
#include "util/err.h"

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench scan: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

/* n values uniform in 0..15 (as bench/peers_torch.py gives torch.cumsum), scanned once untimed
 * and reps times timed (t, sorted), the result compared with a host scan (*ok). */
static cls_status scan_once(clx_scan *sc, uint32_t n, unsigned reps, double *t, int *ok)
{
    uint32_t *host = calloc(n ? n : 1, 4), *got = calloc(n ? n : 1, 4);
    if (!host || !got) {
        free(host), free(got);
        return err_set(CLS_E_NOMEM, "scan inputs of %u values", n);
    }
    uint64_t st = 42 + (uint64_t)n;
    for (uint32_t i = 0; i < n; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        host[i] = (uint32_t)(st >> 60);
    }
    cls_status s = clx_scan_run(sc, host, n, reps, t, got);
    if (s == CLS_OK) {
        uint32_t acc = 0;
        *ok = 1;
        for (uint32_t i = 0; i < n && *ok; i++) *ok = got[i] == (acc += host[i]);
        bench_sort(t, reps);
    }
    free(host), free(got);
    return s;
}

int bench_scan_time(const clx_queue *q, const clx_params *p, uint32_t n, unsigned reps, double *median_s)
{
    clx_scan *sc;
    double *t = malloc(reps * sizeof *t);
    int ok = 0;
    /* the three passes, as tune has always measured the in-group scan with */
    cls_status s = t ? clx_scan_create(q, p->scan_wg, p->scan_items, (int)p->wg_scan_algo, CLX_SCAN_3PASS, &sc)
                     : err_set(CLS_E_NOMEM, "out of memory");
    if (s == CLS_OK) {
        s = scan_once(sc, n, reps, t, &ok);
        clx_scan_free(sc);
    }
    if (s == CLS_OK && !ok) s = err_set(CLS_E_MISMATCH, "the device's scan differs from the host's");
    if (s == CLS_OK) *median_s = t[reps / 2];
    free(t);
    return s == CLS_OK ? 0 : failed(s, "scan");
}

/* One variant over every size: 0 all matched, 1 a mismatch, 2 a failure (message printed). */
static int run_variant(const clx_queue *q, const char *dev, clx_scan_method method, const char *algo, int a,
                       unsigned wg, unsigned items, const char *log2s, unsigned reps, double ceiling, FILE *json,
                       double *t)
{
    clx_scan *sc;
    const char *mname = method == CLX_SCAN_LOOKBACK ? "lookback" : "3pass";
    double bytes = method == CLX_SCAN_LOOKBACK ? 8.0 : 16.0; /* moved per element */
    cls_status s = clx_scan_create(q, wg, items, a, method, &sc);
    if (s != CLS_OK) return 1 + failed(s, "building scan.cl");
    int rc = 0;
    char lcopy[64];
    snprintf(lcopy, sizeof lcopy, "%s", log2s);
    for (char *sl = NULL, *ls = strtok_r(lcopy, ",", &sl); ls && rc < 2; ls = strtok_r(NULL, ",", &sl)) {
        unsigned L = (unsigned)strtoul(ls, NULL, 10);
        if (L < 1 || L > 30) {
            rc = 1 + failed(CLS_E_ARG, "--log2 takes 1..30");
            break;
        }
        uint32_t n = 1u << L;
        int ok;
        if ((s = scan_once(sc, n, reps, t, &ok)) != CLS_OK) {
            rc = 1 + failed(s, "scan");
            break;
        }
        if (!ok) rc = 1;
        double med = t[reps / 2], gbs = bytes * n / med * 1e-9;
        printf("%-6s %-8s %-4s %5u %5u %6u %10.3f %10.3f %10.3f %10.2f %9.1f %6.1f%% %s\n", dev, mname, algo, wg, items, L,
               med * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, n / med * 1e-9, gbs, 100.0 * gbs / ceiling,
               ok ? "match" : "MISMATCH");
        fflush(stdout);
        if (json)
            fprintf(json,
                    "{\"suite\":\"scan\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
                    "\"method\":\"%s\",\"variant\":\"%s\",\"wg\":%u,\"items\":%u,\"n\":%u,\"repeats\":%u,\"median_s\":%.9f,"
                    "\"min_s\":%.9f,\"max_s\":%.9f,\"gelements_per_s\":%.4f,\"gbytes_per_s\":%.3f,"
                    "\"ceiling_gbytes_per_s\":%.1f,\"check\":\"%s\"}\n",
                    bench_commit(), bench_when(), q->dev.info.name, q->dev.info.driver_version, mname, algo, wg, items, n,
                    reps, med, t[0], t[reps - 1], n / med * 1e-9, gbs, ceiling, ok ? "match" : "mismatch");
    }
    clx_scan_free(sc);
    return rc;
}

int bench_scan(int argc, char **argv)
{
    const char *devices = "auto", *log2s = "20,24,28", *algos = "all", *json_path = NULL, *wgs = NULL,
               *itemss = NULL, *methods = "lookback,3pass";
    unsigned reps = 10;
    double ceiling = 2800.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"log2", required_argument, 0, 'l'},
                                          {"algo", required_argument, 0, 'a'}, {"wg", required_argument, 0, 'w'},
                                          {"items", required_argument, 0, 'i'}, {"ceiling", required_argument, 0, 'g'},
                                          {"method", required_argument, 0, 'm'},
                                          {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:r:", longs, NULL)) != -1) {
        switch (c) {
        case 'd': devices = optarg; break;
        case 'r': reps = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'j': json_path = optarg; break;
        case 'l': log2s = optarg; break;
        case 'a': algos = optarg; break;
        case 'w': wgs = optarg; break;
        case 'i': itemss = optarg; break;
        case 'g': ceiling = atof(optarg); break;
        case 'm': methods = optarg; break;
        default: reps = 0;
        }
    }
    if (reps < 1 || reps > 10000 || optind != argc || !(ceiling > 0)) {
        fprintf(stderr, "usage: clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--method lookback,3pass] "
                        "[--algo all|hs,we,shfl] "
                        "[--wg N,...] [--items N,...] [-r REPEATS] [--ceiling GBPS] [--json FILE]\n");
        return 2;
    }
    for (const char *m = methods; *m;) { /* every name known before any device work */
        size_t len = strcspn(m, ",");
        if (!((len == 8 && strncmp(m, "lookback", 8) == 0) || (len == 5 && strncmp(m, "3pass", 5) == 0))) {
            fprintf(stderr, "clsearch bench scan: --method takes a list of lookback, 3pass\n");
            return 2;
        }
        m += len + (m[len] == ',');
    }
    of_file jf;
    if (bench_json_open(&jf, "bench scan", json_path, NULL, 0)) return 1;
    FILE *json = jf.f;
    printf("scan suite: commit %s, %s; %u repeats after a warm-up; ceiling %.0f GB/s\n", bench_commit(), bench_when(),
           reps, ceiling);
    printf("%-6s %-8s %-4s %5s %5s %6s %10s %10s %10s %10s %9s %7s %s\n", "dev", "method", "algo", "wg", "items", "log2 n", "med ms",
           "min ms", "max ms", "Gelem/s", "GB/s", "%ceil", "check");
    char *dl = strdup(devices);
    double *t = malloc(reps * sizeof *t);
    int rc = 0;
    for (char *sd = NULL, *dev = strtok_r(dl, ",", &sd); dev; dev = strtok_r(NULL, ",", &sd)) {
        clx_queue q;
        cls_status s = clx_queue_open(dev, &q);
        if (s != CLS_OK) return failed(s, dev);
        clx_params prm;
        if ((s = clx_params_for(&q.dev.info, &prm)) != CLS_OK) return failed(s, "parameters");
        char wdef[16], idef[16];
        snprintf(wdef, sizeof wdef, "%u", prm.scan_wg);
        snprintf(idef, sizeof idef, "%u", prm.scan_items);
        char acopy[64];
        snprintf(acopy, sizeof acopy, "%s", strcmp(algos, "all") == 0 ? clx_scan_algos_for(&q.dev.info) : algos);
        for (char *sa = NULL, *algo = strtok_r(acopy, ",", &sa); algo; algo = strtok_r(NULL, ",", &sa)) {
            int a = clx_scan_algo_parse(algo);
            if (a < 0) return failed(CLS_E_ARG, "--algo takes all or a list of hs, we, shfl");
            char wcopy[64];
            snprintf(wcopy, sizeof wcopy, "%s", wgs ? wgs : wdef);
            for (char *sw = NULL, *ws = strtok_r(wcopy, ",", &sw); ws; ws = strtok_r(NULL, ",", &sw)) {
                char icopy[64];
                snprintf(icopy, sizeof icopy, "%s", itemss ? itemss : idef);
                for (char *si = NULL, *is = strtok_r(icopy, ",", &si); is; is = strtok_r(NULL, ",", &si)) {
                    unsigned wg = (unsigned)strtoul(ws, NULL, 10), items = (unsigned)strtoul(is, NULL, 10);
                    char mcopy[64];
                    snprintf(mcopy, sizeof mcopy, "%s", methods);
                    for (char *sm = NULL, *ms = strtok_r(mcopy, ",", &sm); ms; ms = strtok_r(NULL, ",", &sm)) {
                        clx_scan_method me = strcmp(ms, "lookback") == 0 ? CLX_SCAN_LOOKBACK : CLX_SCAN_3PASS;
                        if ((rc |= run_variant(&q, dev, me, algo, a, wg, items, log2s, reps, ceiling, json, t)) > 1)
                            return 1;
                    }
                }
            }
        }
        clx_queue_close(&q);
    }
    if (bench_json_close(&jf, "bench scan")) rc = 1;
    free(dl), free(t);
    return rc;
}
