/* tune: sweeps the variant registry (src/device/clx_params.c) on one device and writes the winners to
 * the tuning file, which every engine on that device and driver then loads at start-up.
 *
 *   clsearch tune [-d DEVICE] [-o FILE] [-r REPEATS] [--quick] [--json FILE]
 *   clsearch tune --list
 *
 * Coordinate descent over the registry, one parameter at a time, each candidate measured by
 * the suites' own timing functions (median kernel time from profiling events after a warm-up,
 * results checked against plain C), the others held at the best found so far. The value a
 * sweep starts from (the built-in default) is measured twice, and another value replaces it
 * only when faster by more than the spread of those two (at least 3%): differences of a few
 * percent on a loaded machine are noise, not a reason to leave the default. Measured by:
 *   WG_SCAN_ALGO   intersect_and + dense-row top-k time (both scan per chunk of candidates or step of a row)
 *   WG_INTERSECT   intersect_and: batched 2-term AND queries, lists 1:10
 *   WG_SCORE       score_or (AND scores inside match_and, whose groups are WG_INTERSECT)
 *   WG_ROWS        the engine's top-k of dense rows (topk_rows where local memory holds its buffer)
 *   SCAN_WG x SCAN_ITEMS  the device-wide scan (every pair)
 *   COPY_VEC       the copy kernels (the better of strided and runs)
 * WG_TOPK is not swept: topk_select ranks AND's work units and OR's pools, whose cost only whole
 * searches show (docs/PERFORMANCE.md), so it keeps the built-in value.
 * Candidates are the registry's, less what the device cannot run (work-groups above its
 * maximum; the warp-shuffle scan off NVIDIA). Each variant is a separate program build (the
 * binary cache keeps them). The sweeps start from the built-in database and pass every
 * variant's parameters explicitly, so an existing tuning file and CLSEARCH_PARAMS play no part.
 *
 * The file is JSON: {"clsearch_tuning": 1, "devices": [{"device", "driver", "vendor", "tuned",
 * "commit", "params": {NAME: VALUE, ...}, "measurements": [{"param", "value", "ms"}, ...]}]}.
 * The entry for this device name and driver version is replaced, others are kept; the file is
 * written to a temporary name and renamed. Default path: $CLSEARCH_TUNING, else tuning.json in
 * the cache folder (~/.cache/clsearch). */
#define _DEFAULT_SOURCE
#include <cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "clx_scan.h"
#include "util/err.h"

typedef struct tune_ctx {
    clx_queue q;
    const char *device;
    unsigned reps;
    int quick;
    cJSON *measurements;
    FILE *json;
} tune_ctx;

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch tune: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

/* Workload sizes: large enough to load a GPU, small enough for a 2-core POCL run. */
typedef struct sizes {
    uint32_t iq, ishort, iratio;  /* intersect: queries, short list, long = short x ratio */
    uint32_t sq, sper;            /* score: queries, candidates per query */
    uint32_t trows, tn, tk;       /* topk */
    uint32_t scan_n;              /* scan elements */
} sizes;

static sizes sizes_for(const tune_ctx *t)
{
    if (t->q.dev.info.is_gpu && !t->quick) return (sizes){4096, 2000, 10, 4096, 4096, 1024, 100000, 10, 1u << 24};
    if (t->quick) return (sizes){32, 500, 10, 32, 1000, 16, 5000, 10, 1u << 16};
    return (sizes){256, 1000, 10, 256, 2000, 64, 20000, 10, 1u << 20};
}

/* Runs one family with parameters p; *ms receives the median kernel time. */
static int measure(tune_ctx *t, const char *family, const clx_params *p, double *ms)
{
    sizes z = sizes_for(t);
    double a = 0, b = 0;
    int rc;
    if (strcmp(family, "intersect") == 0) {
        rc = bench_intersect_time(&t->q, p, z.iq, z.ishort, z.iratio, t->reps, &a);
    } else if (strcmp(family, "score") == 0) {
        /* score_or: the engine's WG_SCORE kernel (AND scores inside match_and, on WG_INTERSECT) */
        rc = bench_score_time(&t->q, p, 1, z.sq, z.sper, t->reps, &a);
    } else if (strcmp(family, "topk") == 0) {
        rc = bench_topk_time(t->device, p, z.trows, z.tn, z.tk, t->reps, &a);
    } else if (strcmp(family, "copy") == 0) {
        rc = bench_copy_time(&t->q, p->copy_vec, t->quick ? 64 : t->q.dev.info.is_gpu ? 1024 : 256, t->reps, &a);
    } else if (strcmp(family, "scan") == 0) {
        rc = bench_scan_time(&t->q, p, z.scan_n, t->reps, &a);
    } else {
        rc = 1;
    }
    *ms = (a + b) * 1e3;
    return rc;
}

/* Records and prints one measurement: value of param, or (param2 >= 0 names SCAN_ITEMS) a pair. */
static void note(tune_ctx *t, const char *param, unsigned value, int items, double ms, const char *family)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "param", param);
    cJSON_AddNumberToObject(m, "value", value);
    if (items >= 0) cJSON_AddNumberToObject(m, "SCAN_ITEMS", items);
    cJSON_AddStringToObject(m, "measured_by", family);
    cJSON_AddNumberToObject(m, "ms", ms);
    cJSON_AddItemToArray(t->measurements, m);
    if (items >= 0) printf("  %-13s %5u  x SCAN_ITEMS %2d  %10.4f ms  (%s)\n", param, value, items, ms, family);
    else printf("  %-13s %5u  %10.4f ms  (%s)\n", param, value, ms, family);
    fflush(stdout);
    if (t->json)
        fprintf(t->json,
                "{\"suite\":\"tune\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
                "\"param\":\"%s\",\"value\":%u,\"scan_items\":%d,\"measured_by\":\"%s\",\"median_ms\":%.6f,"
                "\"repeats\":%u}\n",
                bench_commit(), bench_when(), t->q.dev.info.name, t->q.dev.info.driver_version, param, value, items,
                family, ms, t->reps);
}

/* May this device run value v of tunable tn? */
static int allowed(const tune_ctx *t, const clx_tunable *tn, unsigned v)
{
    if (tn->pow2_wg && v > t->q.dev.info.max_work_group) return 0;
    if (tn->pow2_wg && t->quick && v > 128) return 0; /* --quick: the small end only */
    if (strcmp(tn->name, "WG_SCAN_ALGO") == 0 && v == 2 && !clx_is_nvidia(&t->q.dev.info)) return 0;
    return 1;
}

/* The families' times summed (space-separated names) for parameters p. */
static int measure_families(tune_ctx *t, const char *families, const clx_params *p, double *sum)
{
    char fam[64];
    snprintf(fam, sizeof fam, "%s", families);
    *sum = 0;
    for (char *sv = NULL, *f = strtok_r(fam, " ", &sv); f; f = strtok_r(NULL, " ", &sv)) {
        double ms;
        if (measure(t, f, p, &ms)) return 1;
        *sum += ms;
    }
    return 0;
}

/* A candidate displaces the best so far only when it is faster by more than the noise: the
 * relative difference between two measurements of the starting value (each a median of the
 * repeats), and at least TUNE_MIN_GAIN. On a loaded machine medians move by a few percent from
 * one run to the next, and a winner picked on such a gap is picked by chance; the starting value
 * (the built-in default) then stays. */
#define TUNE_MIN_GAIN 0.03

static double noise_of(double a, double b)
{
    double lo = a < b ? a : b, n = lo > 0 ? (a > b ? a - b : b - a) / lo : 0;
    return n > TUNE_MIN_GAIN ? n : TUNE_MIN_GAIN;
}

/* Sweeps tunable `name` measured on the families (space-separated, times summed), from the
 * value best holds (measured twice first: the noise). */
static int sweep(tune_ctx *t, clx_params *best, const char *name, const char *families)
{
    const clx_tunable *tn = clx_tunable_find(name);
    unsigned start = *clx_param_slot(best, tn), best_v = start;
    double a, b;
    if (measure_families(t, families, best, &a) || measure_families(t, families, best, &b)) return 1;
    double best_ms = a < b ? a : b, noise = noise_of(a, b);
    note(t, name, start, -1, best_ms, families);
    for (unsigned i = 0; i < tn->ncandidates; i++) {
        unsigned v = tn->candidates[i];
        if (v == start || !allowed(t, tn, v)) continue;
        clx_params p = *best;
        *clx_param_slot(&p, tn) = v;
        if (clx_params_check(&t->q.dev.info, &p, "tune") != CLS_OK) continue; /* e.g. warp scan, WG < 32 */
        double sum;
        if (measure_families(t, families, &p, &sum)) return 1;
        note(t, name, v, -1, sum, families);
        if (sum < best_ms * (1 - noise)) best_ms = sum, best_v = v;
    }
    *clx_param_slot(best, tn) = best_v;
    printf("  -> %s=%u (a winner must gain more than %.1f%%, the spread of %u's two measurements)\n", name, best_v,
           100 * noise, start);
    return 0;
}

/* The scan kernel's two shapes, every allowed pair. */
static int sweep_scan(tune_ctx *t, clx_params *best)
{
    const clx_tunable *wg = clx_tunable_find("SCAN_WG"), *it = clx_tunable_find("SCAN_ITEMS");
    double a, b;
    if (measure(t, "scan", best, &a) || measure(t, "scan", best, &b)) return 1;
    double best_ms = a < b ? a : b, noise = noise_of(a, b);
    clx_params keep = *best;
    for (unsigned i = 0; i < wg->ncandidates; i++) {
        if (!allowed(t, wg, wg->candidates[i])) continue;
        for (unsigned j = 0; j < it->ncandidates; j++) {
            clx_params p = *best;
            p.scan_wg = wg->candidates[i];
            p.scan_items = it->candidates[j];
            if (clx_params_check(&t->q.dev.info, &p, "tune") != CLS_OK) continue;
            double ms;
            if (measure(t, "scan", &p, &ms)) return 1;
            note(t, "SCAN_WG", p.scan_wg, (int)p.scan_items, ms, "scan");
            if (ms < best_ms * (1 - noise)) best_ms = ms, keep = p;
        }
    }
    *best = keep;
    printf("  -> SCAN_WG=%u SCAN_ITEMS=%u (a winner must gain more than %.1f%%)\n", best->scan_wg, best->scan_items,
           100 * noise);
    return 0;
}

int bench_tune_write(const char *path, const cls_device_info *dev, const clx_params *best, const cJSON *measurements,
                     const char *workload)
{
    cJSON *root = NULL;
    struct stat st;
    int have = stat(path, &st) == 0;
    /* a device or a pipe (/dev/stdout) holds no entries to keep */
    cls_status s = have && !S_ISREG(st.st_mode) ? CLS_OK : clx_tuning_load(path, &root);
    /* what the guard let through (bench_tune) but is no tuning file: an empty one, or with
     * --force anything: replaced by a file holding this device's entry alone */
    if (s != CLS_OK && (of_forced() || (have && st.st_size == 0))) s = CLS_OK, root = NULL;
    if (s != CLS_OK) return failed(s, "reading the old tuning file");
    if (!root) {
        root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "clsearch_tuning", 1);
        cJSON_AddItemToObject(root, "devices", cJSON_CreateArray());
    }
    cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices");
    cJSON *old = clx_tuning_find(root, dev);
    if (old) { /* replaced: cJSON deletes by index */
        int i = 0;
        for (cJSON *e = devs->child; e; e = e->next, i++)
            if (e == old) break;
        cJSON_DeleteItemFromArray(devs, i);
    }
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "device", dev->name);
    cJSON_AddStringToObject(e, "driver", dev->driver_version);
    cJSON_AddStringToObject(e, "vendor", dev->vendor);
    cJSON_AddStringToObject(e, "tuned", bench_when());
    cJSON_AddStringToObject(e, "commit", bench_commit());
    cJSON_AddStringToObject(e, "workload", workload);
    cJSON *params = cJSON_AddObjectToObject(e, "params");
    size_t n;
    const clx_tunable *r = clx_tunables(&n);
    for (size_t i = 0; i < n; i++) cJSON_AddNumberToObject(params, r[i].name, *clx_param_slot((clx_params *)best, &r[i]));
    cJSON_AddItemToObject(e, "measurements", cJSON_Duplicate(measurements, 1));
    cJSON_AddItemToArray(devs, e);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return failed(CLS_E_NOMEM, "tuning file");
    /* through a temporary file renamed when whole (util/outfile.h): the umask's mode, removed on
     * a signal, every write checked */
    of_file f;
    s = of_open(&f, path, 0);
    if (s == CLS_OK) {
        fputs(text, f.f);
        fputc('\n', f.f);
        s = of_commit(&f);
    }
    free(text);
    return s == CLS_OK ? 0 : failed(s, "writing the tuning file");
}

static void list_registry(void)
{
    size_t n;
    const clx_tunable *r = clx_tunables(&n);
    printf("%-14s %-28s %-22s %s\n", "parameter", "families", "candidates", "meaning");
    for (size_t i = 0; i < n; i++) {
        char c[64] = "";
        size_t used = 0;
        for (unsigned j = 0; j < r[i].ncandidates && used < sizeof c; j++)
            used += (size_t)snprintf(c + used, sizeof c - used, "%s%u", j ? "," : "", r[i].candidates[j]);
        printf("%-14s %-28s %-22s %s\n", r[i].name, r[i].families, c, r[i].what);
    }
}

int bench_tune(int argc, char **argv)
{
    const char *out_path = NULL, *json_path = NULL;
    tune_ctx t = {.device = "auto", .reps = 5};
    int list = 0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"quick", no_argument, 0, 'Q'},
                                          {"list", no_argument, 0, 'L'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:o:r:", longs, NULL)) != -1) {
        switch (c) {
        case 'd': t.device = optarg; break;
        case 'o': out_path = optarg; break;
        case 'r': t.reps = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'j': json_path = optarg; break;
        case 'Q': t.quick = 1; break;
        case 'L': list = 1; break;
        default: t.reps = 0;
        }
    }
    if (t.reps < 1 || t.reps > 1000 || optind != argc || strchr(t.device, ',')) {
        fprintf(stderr, "usage: clsearch tune [-d DEVICE] [-o FILE] [-r REPEATS] [--quick] [--json FILE]\n"
                        "       clsearch tune --list\n");
        return 2;
    }
    if (list) {
        list_registry();
        return 0;
    }
    char path[4096];
    if (out_path) snprintf(path, sizeof path, "%s", out_path);
    else if (!clx_tuning_path(path, sizeof path)) return failed(CLS_E_IO, "no cache folder: give -o FILE");
    /* the tuning file and --json FILE as any output (util/outfile.h), before the sweeps' minutes */
    of_file jf;
    if (of_guard(path, OF_TUNING, NULL, 0) != CLS_OK) {
        fprintf(stderr, "clsearch tune: %s\n", cls_last_error());
        return 1;
    }
    if (bench_json_open(&jf, "tune", json_path, NULL, 0)) return 1;
    t.json = jf.f;
    cls_status s = clx_queue_open(t.device, &t.q);
    if (s != CLS_OK) {
        of_discard(&jf);
        return failed(s, t.device);
    }
    clx_params best; /* every variant is built with explicit parameters: the tuning file and
                        CLSEARCH_PARAMS in force play no part */
    clx_params_default(&t.q.dev.info, &best);
    t.measurements = cJSON_CreateArray();
    char dev[16];
    snprintf(dev, sizeof dev, "%u:%u", t.q.dev.info.platform, t.q.dev.info.device);
    t.device = dev; /* the engines the sweeps make land on the same device */
    printf("tuning %s (%s, driver %s); commit %s, %s; median of %u after a warm-up%s\n", t.q.dev.info.name,
           t.q.dev.info.vendor, t.q.dev.info.driver_version, bench_commit(), bench_when(), t.reps,
           t.quick ? "; --quick sizes" : "");
    printf("  start from %s\n", best.source);
    int rc = sweep(&t, &best, "WG_SCAN_ALGO", "intersect topk") || sweep(&t, &best, "WG_INTERSECT", "intersect") ||
             sweep(&t, &best, "WG_SCORE", "score") || sweep(&t, &best, "WG_ROWS", "topk") || sweep_scan(&t, &best) ||
             sweep(&t, &best, "COPY_VEC", "copy");
    if (!rc)
        rc = bench_tune_write(path, &t.q.dev.info, &best, t.measurements,
                              t.quick ? "quick" : t.q.dev.info.is_gpu ? "gpu" : "cpu");
    if (!rc) {
        char str[512];
        clx_params_str(&best, str, sizeof str);
        printf("tuned: %s\nwritten to %s for device \"%s\" driver %s (clsearch devices -v shows it in force)\n", str,
               path, t.q.dev.info.name, t.q.dev.info.driver_version);
    }
    cJSON_Delete(t.measurements);
    if (bench_json_close(&jf, "tune")) rc = 1;
    clx_queue_close(&t.q);
    return rc;
}
