/* copy suite: each device's memory-bandwidth ceiling, the figure every memory-bound kernel is
 * measured against.
 *
 *   clsearch bench copy [-d DEVICES] [-r REPEATS] [--mib N] [--vec 1,2,4,8,16] [--json FILE]
 *
 * Copies of one buffer of N MiB (default 1024, less where the device's largest buffer or a third
 * of its memory is smaller): the project's two copy kernels (cl/copy.cl, 256-item work-groups,
 * 64 groups per compute unit: copy_strided strides, as GPUs want; copy_runs gives each
 * work-item a contiguous run, as CPUs want) at each vector width (COPY_VEC uints per load and
 * store, default every width), the fastest being the device's ceiling,
 * and the driver's clEnqueueCopyBuffer for comparison. After two warm-up runs, each is timed REPEATS times (default 20) by
 * OpenCL profiling events; bandwidth counts bytes read plus bytes written (2 x N MiB per run).
 * The destination is checked after each kernel. DEVICES: a comma list of specs (auto,
 * gpu, cpu, P:D); default every device. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clx_scan.h"

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench copy: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

#define NVAR 2
static const char *const VARIANTS[NVAR] = {"copy_strided", "copy_runs"};

typedef struct copy_result {
    double kmed[NVAR], kmin[NVAR], kmax[NVAR], dmed; /* GB/s per kernel variant; driver copy median */
    size_t bytes;
    int ok;
} copy_result;

/* Runs both copies at vector width vec on one device; CLS_OK or the failing call's status. */
static cls_status run_device(const clx_queue *cq, size_t want, unsigned reps, unsigned vec, copy_result *r)
{
    const clx_device *dev = &cq->dev;
    cl_context ctx = cq->ctx;
    cl_command_queue q = cq->q;
    cls_status s = CLS_OK;
    cl_int err;
    cl_program prog = NULL;
    cl_kernel ks[NVAR] = {NULL, NULL};
    cl_mem a = NULL, b = NULL;
    double *t = calloc(reps, sizeof *t);
    uint32_t *host = NULL;
    if (!t) return CLS_E_NOMEM;
    size_t bytes = want;
    if (bytes > dev->info.max_alloc) bytes = (size_t)dev->info.max_alloc;
    if (bytes > dev->info.global_mem / 3) bytes = (size_t)(dev->info.global_mem / 3);
    bytes &= ~(size_t)((1 << 20) - 1);
    r->bytes = bytes;
    static const char *const files[] = {"copy.cl", NULL};
    double secs;
    int cached;
    char note[4400];
    char opts[64];
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DCOPY_VEC=%u", vec);
    if ((s = clx_build_ex(ctx, dev, bench_kernels, files, opts, &prog, &secs, &cached, note, sizeof note)) != CLS_OK) goto out;
    for (int v = 0; v < NVAR; v++) {
        ks[v] = clCreateKernel(prog, VARIANTS[v], &err);
        if (!ks[v] || err != CL_SUCCESS) { s = clx_fail("clCreateKernel", err); goto out; }
    }
    a = clCreateBuffer(ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
    if (!a || err != CL_SUCCESS) { s = clx_fail("clCreateBuffer", err); goto out; }
    b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!b || err != CL_SUCCESS) { s = clx_fail("clCreateBuffer", err); goto out; }
    uint32_t pa = 0x5EED1234u, pb = 0;
    if ((err = clEnqueueFillBuffer(q, a, &pa, sizeof pa, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS ||
        (err = clEnqueueFillBuffer(q, b, &pb, sizeof pb, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS) {
        s = clx_fail("clEnqueueFillBuffer", err);
        goto out;
    }
    cl_ulong n = bytes / (4 * vec);
    size_t wg = dev->info.max_work_group < 256 ? dev->info.max_work_group : 256;
    size_t global = (size_t)dev->info.compute_units * 64 * wg;
    for (int v = 0; v < NVAR; v++)
        if ((err = clSetKernelArg(ks[v], 0, sizeof a, &a)) != CL_SUCCESS ||
            (err = clSetKernelArg(ks[v], 1, sizeof b, &b)) != CL_SUCCESS ||
            (err = clSetKernelArg(ks[v], 2, sizeof n, &n)) != CL_SUCCESS) {
            s = clx_fail("clSetKernelArg", err);
            goto out;
        }
    r->ok = 1;
    for (int pass = 0; pass <= NVAR; pass++) { /* the kernel variants, then clEnqueueCopyBuffer */
        if (pass < NVAR && (err = clEnqueueFillBuffer(q, b, &pb, sizeof pb, 0, bytes, 0, NULL, NULL)) != CL_SUCCESS) {
            s = clx_fail("clEnqueueFillBuffer", err);
            goto out;
        }
        for (unsigned i = 0; i < reps + 2; i++) {
            cl_event ev;
            err = pass < NVAR ? clEnqueueNDRangeKernel(q, ks[pass], 1, NULL, &global, &wg, 0, NULL, &ev)
                              : clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &ev);
            if (err != CL_SUCCESS) {
                s = clx_fail(pass < NVAR ? "clEnqueueNDRangeKernel" : "clEnqueueCopyBuffer", err);
                goto out;
            }
            if ((err = clWaitForEvents(1, &ev)) != CL_SUCCESS) {
                clReleaseEvent(ev);
                s = clx_fail("clWaitForEvents", err);
                goto out;
            }
            if (i >= 2) t[i - 2] = 2.0 * (double)bytes / clx_event_span(ev, ev) * 1e-9;
            clReleaseEvent(ev);
        }
        bench_sort(t, reps);
        if (pass < NVAR) {
            r->kmin[pass] = t[0], r->kmed[pass] = t[reps / 2], r->kmax[pass] = t[reps - 1];
            /* check each variant's copy (the destination was cleared before it ran) */
            if (!host && !(host = malloc(bytes))) { s = CLS_E_NOMEM; goto out; }
            if ((err = clEnqueueReadBuffer(q, b, CL_TRUE, 0, bytes, host, 0, NULL, NULL)) != CL_SUCCESS) {
                s = clx_fail("clEnqueueReadBuffer", err);
                goto out;
            }
            for (size_t i = 0; i < bytes / 4 && r->ok; i++) r->ok = host[i] == pa;
        } else {
            r->dmed = t[reps / 2];
        }
    }
out:
    free(t);
    free(host);
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    for (int v = 0; v < NVAR; v++)
        if (ks[v]) clReleaseKernel(ks[v]);
    if (prog) clReleaseProgram(prog);
    return s;
}

int bench_copy(int argc, char **argv)
{
    const char *devices = NULL, *json_path = NULL, *vecs = "1,2,4,8,16";
    unsigned reps = 20;
    size_t mib = 1024;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"mib", required_argument, 0, 'm'},
                                          {"vec", required_argument, 0, 'v'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:r:", longs, NULL)) != -1) {
        if (c == 'd') devices = optarg;
        else if (c == 'r') reps = (unsigned)strtoul(optarg, NULL, 10);
        else if (c == 'j') json_path = optarg;
        else if (c == 'm') mib = (size_t)strtoull(optarg, NULL, 10);
        else if (c == 'v') vecs = optarg;
        else {
            fprintf(stderr, "usage: clsearch bench copy [-d DEVICES] [-r REPEATS] [--mib N] [--vec 1,2,4,8,16] "
                            "[--json FILE]\n");
            return 2;
        }
    }
    unsigned vec[5], nvec = 0;
    char vcopy[64];
    snprintf(vcopy, sizeof vcopy, "%s", vecs);
    for (char *sv = NULL, *v = strtok_r(vcopy, ",", &sv); v; v = strtok_r(NULL, ",", &sv)) {
        unsigned w = (unsigned)strtoul(v, NULL, 10);
        if (nvec == 5 || (w != 1 && w != 2 && w != 4 && w != 8 && w != 16)) nvec = 6;
        else vec[nvec++] = w;
    }
    if (reps < 1 || reps > 10000 || mib < 1 || mib > (1u << 20) || optind != argc || nvec == 0 || nvec > 5) {
        fprintf(stderr, "clsearch bench copy: REPEATS 1..10000, --mib 1..1048576, --vec widths of 1, 2, 4, 8, 16; "
                        "no other arguments\n");
        return 2;
    }
    char list[1024];
    if (devices) {
        snprintf(list, sizeof list, "%s", devices);
    } else { /* every device */
        cls_device_info *all;
        size_t n;
        cls_status s = cls_devices_list(&all, &n);
        if (s != CLS_OK) return failed(s, "listing devices");
        list[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%u:%u", i ? "," : "", all[i].platform, all[i].device);
        }
        cls_devices_free(all);
        if (!n) {
            fprintf(stderr, "clsearch bench copy: no OpenCL device\n");
            return 1;
        }
    }
    of_file jf;
    if (bench_json_open(&jf, "bench copy", json_path, NULL, 0)) return 1;
    FILE *json = jf.f;
    printf("copy suite: commit %s, %s; %u repeats after 2 warm-ups; GB/s = (read + written) / kernel time\n",
           bench_commit(), bench_when(), reps);
    printf("%-5s %-36s %-12s %6s %-16s %9s %9s %9s %12s %s\n", "dev", "name", "driver", "MiB", "variant", "GB/s med",
           "min", "max", "driver copy", "check");
    int rc = 0;
    for (char *save = NULL, *spec = strtok_r(list, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
        clx_queue cq;
        cls_status s = clx_queue_open(spec, &cq);
        if (s != CLS_OK) return failed(s, spec);
        copy_result r[5];
        memset(r, 0, sizeof r);
        for (unsigned w = 0; w < nvec && s == CLS_OK; w++) s = run_device(&cq, mib << 20, reps, vec[w], &r[w]);
        clx_queue_close(&cq);
        const clx_device dev = cq.dev;
        if (s != CLS_OK) return failed(s, dev.info.name);
        unsigned bw = 0;
        int best = 0;
        for (unsigned w = 0; w < nvec; w++)
            for (int v = 0; v < NVAR; v++)
                if (r[w].kmed[v] > r[bw].kmed[best]) bw = w, best = v;
        for (unsigned w = 0; w < nvec; w++) {
            for (int v = 0; v < NVAR; v++) {
                char name[40];
                snprintf(name, sizeof name, "%s/v%u", VARIANTS[v], vec[w]);
                int ceil_ = w == bw && v == best;
                printf("%u:%-3u %-36.36s %-12.12s %6zu %-16s %9.1f %9.1f %9.1f %12.1f %s%s\n", dev.info.platform,
                       dev.info.device, dev.info.name, dev.info.driver_version, r[w].bytes >> 20, name, r[w].kmed[v],
                       r[w].kmin[v], r[w].kmax[v], r[w].dmed, r[w].ok ? "ok" : "WRONG", ceil_ ? "  <- ceiling" : "");
                if (json)
                    fprintf(json,
                            "{\"suite\":\"copy\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
                            "\"platform\":\"%s\",\"variant\":\"%s\",\"vec\":%u,\"wg\":256,\"groups_per_cu\":64,"
                            "\"bytes\":%zu,\"repeats\":%u,\"gbytes_per_s_median\":%.2f,\"gbytes_per_s_min\":%.2f,"
                            "\"gbytes_per_s_max\":%.2f,\"driver_copy_gbytes_per_s_median\":%.2f,\"ceiling\":%s,"
                            "\"check\":\"%s\"}\n",
                            bench_commit(), bench_when(), dev.info.name, dev.info.driver_version, dev.info.platform_name,
                            VARIANTS[v], vec[w], r[w].bytes, reps, r[w].kmed[v], r[w].kmin[v], r[w].kmax[v], r[w].dmed,
                            ceil_ ? "true" : "false", r[w].ok ? "ok" : "wrong");
            }
            if (!r[w].ok) rc = 1;
        }
    }
    if (bench_json_close(&jf, "bench copy")) rc = 1;
    return rc;
}

int bench_copy_time(const clx_queue *q, unsigned vec, unsigned mib, unsigned reps, double *median_s)
{
    copy_result r = {0};
    cls_status s = run_device(q, (size_t)mib << 20, reps, vec, &r);
    if (s != CLS_OK) return failed(s, q->dev.info.name);
    if (!r.ok) {
        fprintf(stderr, "clsearch bench copy: %s: the copy differs from its source\n", q->dev.info.name);
        return 1;
    }
    double best = r.kmed[0] > r.kmed[1] ? r.kmed[0] : r.kmed[1]; /* GB/s of the better kernel */
    *median_s = 2.0 * (double)r.bytes / (best * 1e9);
    return 0;
}
