/* scan suite: the device-wide prefix sum (cl/scan.cl) alone, per variant, against the copy
 * ceiling, checked against a host scan.
 *
 *   clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--algo hs,we] [--wg 256] [--items 8]
 *                       [-r REPEATS] [--ceiling GBPS] [--json FILE]
 *
 * Inputs: 2^L uint32 values uniform in 0..15 (as bench/peers_torch.py gives torch.cumsum),
 * uploaded once. Each run is the whole reduce-then-scan: scan_tiles over the input, the same
 * over the tile sums until one tile holds them, then scan_add back down; it is timed from the
 * first kernel's start to the last one's end by profiling events, after one untimed run,
 * REPEATS times (default 10). Bandwidth counts 16 bytes per element (the tile pass reads and
 * writes each element, the add pass reads and writes it again); the ceiling defaults to
 * 2800 GB/s, the H100's measured copy. The output is compared with a host scan (uint32,
 * wrapping). Variants: hs = Hillis-Steele, we = work-efficient (Blelloch) for the in-group
 * scan; --wg work-items per group (a power of two), --items elements per work-item. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clx.h"

#define MAX_LEVELS 8

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench scan: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

static double span(cl_event a, cl_event b)
{
    cl_ulong s = 0, e = 0;
    clGetEventProfilingInfo(a, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
    clGetEventProfilingInfo(b, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
    return e > s ? (double)(e - s) * 1e-9 : 0.0;
}

typedef struct scan_plan {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel tiles, add;
    unsigned levels;
    cl_uint n[MAX_LEVELS + 1];
    cl_mem in[MAX_LEVELS + 1], out[MAX_LEVELS + 1]; /* in[l + 1] = tile sums of level l */
    size_t wg, tile;
} scan_plan;

/* Enqueues one whole scan; *first and *last receive the first and last kernels' events. */
static cls_status run_scan(scan_plan *p, cl_event *first, cl_event *last)
{
    cl_int err;
    cl_event ev, ev0 = NULL, prev = NULL; /* prev: the last event kept, released when superseded */
    for (unsigned l = 0; l < p->levels; l++) {
        size_t groups = (p->n[l] + p->tile - 1) / p->tile, global = groups * p->wg;
        if ((err = clSetKernelArg(p->tiles, 0, sizeof(cl_mem), &p->in[l])) != CL_SUCCESS ||
            (err = clSetKernelArg(p->tiles, 1, sizeof(cl_mem), &p->out[l])) != CL_SUCCESS ||
            (err = clSetKernelArg(p->tiles, 2, sizeof(cl_mem), &p->in[l + 1])) != CL_SUCCESS ||
            (err = clSetKernelArg(p->tiles, 3, sizeof(cl_uint), &p->n[l])) != CL_SUCCESS)
            return clx_fail("clSetKernelArg", err);
        if ((err = clEnqueueNDRangeKernel(p->q, p->tiles, 1, NULL, &global, &p->wg, 0, NULL, &ev)) != CL_SUCCESS)
            return clx_fail("clEnqueueNDRangeKernel(scan_tiles)", err);
        if (prev && prev != ev0) clReleaseEvent(prev);
        if (!ev0) ev0 = ev;
        prev = ev;
    }
    for (unsigned l = p->levels - 1; l-- > 0;) { /* the top level is one tile: complete */
        size_t groups = (p->n[l] + p->tile - 1) / p->tile, global = groups * p->wg;
        if ((err = clSetKernelArg(p->add, 0, sizeof(cl_mem), &p->out[l])) != CL_SUCCESS ||
            (err = clSetKernelArg(p->add, 1, sizeof(cl_mem), &p->out[l + 1])) != CL_SUCCESS ||
            (err = clSetKernelArg(p->add, 2, sizeof(cl_uint), &p->n[l])) != CL_SUCCESS)
            return clx_fail("clSetKernelArg", err);
        if ((err = clEnqueueNDRangeKernel(p->q, p->add, 1, NULL, &global, &p->wg, 0, NULL, &ev)) != CL_SUCCESS)
            return clx_fail("clEnqueueNDRangeKernel(scan_add)", err);
        if (prev != ev0) clReleaseEvent(prev);
        prev = ev;
    }
    *first = ev0;
    *last = prev;
    return CLS_OK;
}

int bench_scan(int argc, char **argv)
{
    const char *devices = "auto", *log2s = "20,24,28", *algos = "hs,we", *json_path = NULL;
    unsigned reps = 10, wg = 256, items = 8;
    double ceiling = 2800.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"log2", required_argument, 0, 'l'},
                                          {"algo", required_argument, 0, 'a'}, {"wg", required_argument, 0, 'w'},
                                          {"items", required_argument, 0, 'i'}, {"ceiling", required_argument, 0, 'g'},
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
        case 'w': wg = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'i': items = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'g': ceiling = atof(optarg); break;
        default: reps = 0;
        }
    }
    if (reps < 1 || reps > 10000 || wg < 2 || wg > 1024 || (wg & (wg - 1)) || items < 1 || items > 64 ||
        optind != argc || !(ceiling > 0)) {
        fprintf(stderr, "usage: clsearch bench scan [-d DEVICES] [--log2 20,24,28] [--algo hs,we] [--wg 256] "
                        "[--items 8] [-r REPEATS] [--ceiling GBPS] [--json FILE]\n");
        return 2;
    }
    FILE *json = json_path ? fopen(json_path, "a") : NULL;
    if (json_path && !json) {
        perror(json_path);
        return 1;
    }
    printf("scan suite: commit %s, %s; %u repeats after a warm-up; WG %u x %u items; ceiling %.0f GB/s\n",
           bench_commit(), bench_when(), reps, wg, items, ceiling);
    printf("%-6s %-4s %6s %10s %10s %10s %10s %9s %7s %s\n", "dev", "algo", "log2 n", "med ms", "min ms", "max ms",
           "Gelem/s", "GB/s", "%ceil", "check");
    char *dl = strdup(devices);
    double *t = malloc(reps * sizeof *t);
    int rc = 0;
    for (char *sd = NULL, *dev = strtok_r(dl, ",", &sd); dev; dev = strtok_r(NULL, ",", &sd)) {
        clx_device d;
        cls_status s = clx_select(dev, &d);
        if (s != CLS_OK) return failed(s, dev);
        if (d.info.max_work_group < wg) return failed(CLS_E_ARG, "work-group larger than the device allows");
        cl_int err;
        scan_plan p = {0};
        p.ctx = clCreateContext(NULL, 1, &d.device, NULL, NULL, &err);
        if (!p.ctx || err != CL_SUCCESS) return failed(clx_fail("clCreateContext", err), dev);
        p.q = clCreateCommandQueue(p.ctx, d.device, CL_QUEUE_PROFILING_ENABLE, &err);
        if (!p.q || err != CL_SUCCESS) return failed(clx_fail("clCreateCommandQueue", err), dev);
        char acopy[64];
        snprintf(acopy, sizeof acopy, "%s", algos);
        for (char *sa = NULL, *algo = strtok_r(acopy, ",", &sa); algo; algo = strtok_r(NULL, ",", &sa)) {
            int a = strcmp(algo, "hs") == 0 ? 0 : strcmp(algo, "we") == 0 ? 1 : -1;
            if (a < 0) return failed(CLS_E_ARG, "--algo takes hs, we");
            char opts[128], note[4400];
            snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DSCAN_WG=%u -DSCAN_ITEMS=%u -DSCAN_ALGO=%d", wg, items, a);
            static const char *const files[] = {"scan.cl", NULL};
            cl_program prog;
            double secs;
            int cached;
            if ((s = clx_build(p.ctx, &d, files, opts, &prog, &secs, &cached, note, sizeof note)) != CLS_OK)
                return failed(s, "building scan.cl");
            p.tiles = clCreateKernel(prog, "scan_tiles", &err);
            if (err == CL_SUCCESS) p.add = clCreateKernel(prog, "scan_add", &err);
            if (err != CL_SUCCESS) return failed(clx_fail("clCreateKernel", err), "scan");
            p.wg = wg;
            p.tile = (size_t)wg * items;
            char lcopy[64];
            snprintf(lcopy, sizeof lcopy, "%s", log2s);
            for (char *sl = NULL, *ls = strtok_r(lcopy, ",", &sl); ls; ls = strtok_r(NULL, ",", &sl)) {
                unsigned L = (unsigned)strtoul(ls, NULL, 10);
                if (L < 1 || L > 30) return failed(CLS_E_ARG, "--log2 takes 1..30");
                cl_uint n = 1u << L;
                /* levels: n, ceil(n / tile), ... down to one tile */
                p.levels = 0;
                for (cl_uint m = n;; m = (cl_uint)((m + p.tile - 1) / p.tile)) {
                    if (p.levels == MAX_LEVELS) return failed(CLS_E_ARG, "too many levels");
                    p.n[p.levels++] = m;
                    if (m <= p.tile) break;
                }
                uint32_t *host = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
                if (!host || !got) return failed(CLS_E_NOMEM, "inputs");
                uint64_t st = 42 + L;
                for (cl_uint i = 0; i < n; i++) {
                    st = st * 6364136223846793005ull + 1442695040888963407ull;
                    host[i] = (uint32_t)(st >> 60);
                }
                for (unsigned l = 0; l <= p.levels; l++) {
                    size_t m = l < p.levels ? p.n[l] : 1;
                    p.in[l] = l == 0 ? clCreateBuffer(p.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, (size_t)n * 4,
                                                      host, &err)
                                     : clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, m * 4, NULL, &err);
                    if (err != CL_SUCCESS) return failed(clx_fail("clCreateBuffer", err), "scan buffers");
                    p.out[l] = clCreateBuffer(p.ctx, CL_MEM_READ_WRITE, m * 4, NULL, &err);
                    if (err != CL_SUCCESS) return failed(clx_fail("clCreateBuffer", err), "scan buffers");
                }
                for (unsigned r = 0; r <= reps; r++) {
                    cl_event e0 = NULL, e1 = NULL;
                    if ((s = run_scan(&p, &e0, &e1)) != CLS_OK) return failed(s, "scan");
                    if ((err = clWaitForEvents(1, &e1)) != CL_SUCCESS) return failed(clx_fail("clWaitForEvents", err), "scan");
                    if (r > 0) t[r - 1] = span(e0, e1);
                    clReleaseEvent(e0);
                    if (e1 != e0) clReleaseEvent(e1);
                }
                if ((err = clEnqueueReadBuffer(p.q, p.out[0], CL_TRUE, 0, (size_t)n * 4, got, 0, NULL, NULL)) !=
                    CL_SUCCESS)
                    return failed(clx_fail("clEnqueueReadBuffer", err), "scan");
                uint32_t acc = 0;
                int ok = 1;
                for (cl_uint i = 0; i < n && ok; i++) ok = got[i] == (acc += host[i]);
                if (!ok) rc = 1;
                bench_sort(t, reps);
                double med = t[reps / 2], gbs = 16.0 * n / med * 1e-9;
                printf("%-6s %-4s %6u %10.3f %10.3f %10.3f %10.2f %9.1f %6.1f%% %s\n", dev, algo, L, med * 1e3,
                       t[0] * 1e3, t[reps - 1] * 1e3, n / med * 1e-9, gbs, 100.0 * gbs / ceiling,
                       ok ? "match" : "MISMATCH");
                fflush(stdout);
                if (json)
                    fprintf(json,
                            "{\"suite\":\"scan\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
                            "\"variant\":\"%s\",\"wg\":%u,\"items\":%u,\"n\":%u,\"repeats\":%u,\"median_s\":%.9f,"
                            "\"min_s\":%.9f,\"max_s\":%.9f,\"gelements_per_s\":%.4f,\"gbytes_per_s\":%.3f,"
                            "\"ceiling_gbytes_per_s\":%.1f,\"check\":\"%s\"}\n",
                            bench_commit(), bench_when(), d.info.name, d.info.driver_version, algo, wg, items, n, reps,
                            med, t[0], t[reps - 1], n / med * 1e-9, gbs, ceiling, ok ? "match" : "mismatch");
                for (unsigned l = 0; l <= p.levels; l++) clReleaseMemObject(p.in[l]), clReleaseMemObject(p.out[l]);
                free(host), free(got);
            }
            clReleaseKernel(p.tiles);
            clReleaseKernel(p.add);
            clReleaseProgram(prog);
        }
        clReleaseCommandQueue(p.q);
        clReleaseContext(p.ctx);
    }
    if (json) fclose(json);
    free(dl), free(t);
    return rc;
}
