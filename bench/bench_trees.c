/* trees suite: a tree ensemble's scoring alone (cl/trees.cl through src/rank/rank_dev.h), per
 * kernel variant, on a dense feature matrix from a file, every variant's scores of a sample of
 * rows checked against the plain-C evaluator (rank_model_score) bit for bit.
 *
 *   clsearch bench trees -m MODEL --rows FILE --cols N [-d DEVICE] [-r REPEATS]
 *                        [--variants LAYOUT:WG:DOCS:LOCAL:TILE,...] [--check ROWS] [--scores OUT]
 *
 * FILE holds rows x N float32 values, row-major, native byte order, nothing else (the rows are
 * its size over 4N; bench/peers_trees.py writes one with the models). Each variant sets the
 * registry's TREES_LAYOUT, WG_TREES, TREES_DOCS, TREES_ROWS_LOCAL and TREES_TILE (src/device/clx_params.c)
 * through CLSEARCH_PARAMS, opens the device afresh, uploads the model and the rows (the upload
 * timed apart, by the host's clock around the blocking write), runs the kernel once untimed,
 * then REPEATS times (default 10), each timed by its profiling event. Printed per variant: the
 * kernel that ran, the median, smallest and largest kernel time, documents a second (rows over
 * the median) and the check's outcome; last, a line "RESULT ..." per variant for scripts. The
 * check compares --check rows (default 10,000) spread evenly over the matrix. Default variants:
 * the node walk, then the level-order kernels with rows from global memory, from local memory,
 * and with tiles of 4, 8 and 16 trees in local memory too, at 64 and 32 work-items, one or two
 * documents a work-item. --scores OUT: the first
 * variant's scores of every row, float32 in row order (raw, native byte order), for a script
 * to compare with other engines' (bench/peers_trees.py). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "rank/model.h"
#include "rank/rank_dev.h"
#include "util/err.h"
#include "util/outfile.h"

#define MAX_VARIANTS 64

typedef struct variant {
    unsigned layout, wg, docs, local, tile;
} variant;

static const variant defaults[] = {{0, 64, 1, 0, 0}, {1, 64, 1, 0, 0}, {1, 64, 1, 1, 0},  {1, 64, 1, 1, 4},
                                   {1, 64, 1, 1, 8}, {1, 64, 1, 1, 16}, {1, 32, 1, 1, 8}, {1, 32, 2, 1, 8}};

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench trees: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The matrix at path as rows of cols floats (malloc); the row count into *n. */
static float *read_matrix(const char *path, size_t cols, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "clsearch bench trees: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    float *m = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size <= 0 || (size_t)size % (cols * sizeof(float)) != 0) {
        fprintf(stderr, "clsearch bench trees: %s: %ld bytes, not rows of %zu float32 values\n", path, size, cols);
    } else if (fseek(f, 0, SEEK_SET) != 0 || !(m = malloc((size_t)size))) {
        fprintf(stderr, "clsearch bench trees: %s: cannot read %ld bytes\n", path, size);
    } else if (fread(m, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "clsearch bench trees: %s: short read\n", path);
        free(m);
        m = NULL;
    }
    fclose(f);
    if (m) *n = (size_t)size / (cols * sizeof(float));
    return m;
}

/* The seconds the profile step "trees" holds after the commands enqueued were collected. */
static double trees_secs(dev_ctx *dc)
{
    dev_profile_collect(dc, 1);
    double s = 0;
    for (unsigned i = 0; i < dc->nsteps; i++)
        if (strcmp(dc->steps[i].name, "trees") == 0) s += dc->steps[i].seconds;
    dev_profile_reset(dc);
    return s;
}

/* One variant: opened, uploaded, warmed up, timed, checked, printed. 0, or 1 after a message. */
static int run_variant(const char *device, const rank_model *m, const float *rows, size_t cols, size_t n,
                       const variant *v, unsigned reps, size_t check, float *scores)
{
    char prm[160];
    snprintf(prm, sizeof prm, "TREES_LAYOUT=%u,WG_TREES=%u,TREES_DOCS=%u,TREES_ROWS_LOCAL=%u,TREES_TILE=%u", v->layout,
             v->wg, v->docs, v->local, v->tile);
    if (setenv("CLSEARCH_PARAMS", prm, 1) != 0) return failed(CLS_E_IO, "setenv");
    rank_dev rd;
    cls_status s = rank_dev_open(&rd, device, m);
    if (s != CLS_OK) {
        fprintf(stderr, "clsearch bench trees: %s: skipped: %s\n", prm, cls_last_error());
        return 0; /* a variant the device cannot run (too wide a group) is not the suite's failure */
    }
    double t0 = bench_now();
    s = rank_dev_put_rows(&rd, rows, cols, n);
    double up = bench_now() - t0;
    double *t = malloc(reps * sizeof *t);
    int rc = 0;
    if (s == CLS_OK && !t) s = err_set(CLS_E_NOMEM, "out of memory");
    for (unsigned r = 0; s == CLS_OK && r <= reps; r++) { /* r 0: the warm-up */
        if ((s = rank_dev_launch(&rd, cols, n)) != CLS_OK) break;
        cl_int err = clFinish(rd.dc->queue);
        if (err != CL_SUCCESS) {
            s = err_wrap(clx_fail("clFinish", err), "the trees kernel: ");
            break;
        }
        double k = trees_secs(rd.dc);
        if (r) t[r - 1] = k;
    }
    if (s == CLS_OK) s = rank_dev_get_scores(&rd, n, scores);
    if (s != CLS_OK) {
        rc = failed(s, prm);
    } else {
        size_t step = n > check && check ? n / check : 1, checked = 0, differ = 0;
        for (size_t i = 0; i < n && checked < (check ? check : n); i += step, checked++) {
            float c = rank_model_score(m, rows + i * cols);
            if (memcmp(&c, &scores[i], sizeof c) != 0 && differ++ < 3)
                fprintf(stderr, "  row %zu: C %a, device %a\n", i, (double)c, (double)scores[i]);
        }
        qsort(t, reps, sizeof *t, cmp_double);
        double med = t[reps / 2];
        char how[200];
        rank_dev_describe(&rd, cols, how, sizeof how);
        printf("%-40s %s\n  kernel %.3f ms median (%.3f .. %.3f over %u), %.1f M docs/s; rows uploaded in %.1f ms "
               "(%.1f GB/s, apart); %zu sampled rows %s\n",
               prm, how, med * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, reps, n / med / 1e6, up * 1e3,
               (double)n * cols * 4 / up / 1e9, checked,
               differ ? "DIFFER from the C twin" : "equal the C twin bit for bit");
        printf("RESULT layout=%u wg=%u docs=%u local=%u tile=%u ms=%.4f docs_per_s=%.6g exact=%d kernel=%s\n", v->layout,
               v->wg, v->docs, v->local, v->tile, med * 1e3, n / med, differ == 0, how);
        fflush(stdout);
        if (differ) rc = 1;
    }
    free(t);
    rank_dev_close(&rd);
    return rc;
}

/* The n scores into path as raw float32, through a temporary file renamed when whole. */
static int write_scores(const char *path, const float *scores, size_t n)
{
    of_file f;
    cls_status s = of_open(&f, path, 0);
    if (s != CLS_OK) return failed(s, "the scores file");
    if (fwrite(scores, sizeof *scores, n, f.f) != n) {
        of_discard(&f);
        return failed(err_set(CLS_E_IO, "%s: short write", path), "the scores file");
    }
    s = of_commit(&f);
    return s == CLS_OK ? 0 : failed(s, "the scores file");
}

int bench_trees(int argc, char **argv)
{
    const char *device = "auto", *model = NULL, *rows_path = NULL, *vlist = NULL, *scores_path = NULL;
    unsigned long cols = 0, reps = 10, check = 10000;
    static const struct option longs[] = {{"rows", required_argument, 0, 'R'},     {"cols", required_argument, 0, 'C'},
                                          {"variants", required_argument, 0, 'V'}, {"check", required_argument, 0, 'K'},
                                          {"scores", required_argument, 0, 'S'},
                                          {0, 0, 0, 0}};
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:m:r:", longs, NULL)) != -1) {
        switch (c) {
        case 'd': device = optarg; break;
        case 'm': model = optarg; break;
        case 'r': reps = strtoul(optarg, NULL, 10); break;
        case 'R': rows_path = optarg; break;
        case 'C': cols = strtoul(optarg, NULL, 10); break;
        case 'V': vlist = optarg; break;
        case 'K': check = strtoul(optarg, NULL, 10); break;
        case 'S': scores_path = optarg; break;
        default: bad = 1;
        }
    }
    variant vs[MAX_VARIANTS];
    unsigned nv = 0;
    if (vlist) {
        for (const char *p = vlist; *p && !bad;) {
            variant v;
            int used = 0;
            if (nv == MAX_VARIANTS ||
                sscanf(p, "%u:%u:%u:%u:%u%n", &v.layout, &v.wg, &v.docs, &v.local, &v.tile, &used) != 5) {
                bad = 1;
                break;
            }
            vs[nv++] = v;
            p += used;
            if (*p == ',') p++;
            else if (*p) bad = 1;
        }
    } else {
        nv = sizeof defaults / sizeof defaults[0];
        memcpy(vs, defaults, sizeof defaults);
    }
    if (bad || !model || !rows_path || cols == 0 || cols > (1u << 24) || reps < 1 || reps > 10000 || optind != argc ||
        nv == 0) {
        fprintf(stderr, "usage: clsearch bench trees -m MODEL --rows FILE --cols N [-d DEVICE] [-r REPEATS]\n"
                        "                            [--variants LAYOUT:WG:DOCS:LOCAL:TILE,...] [--check ROWS] [--scores OUT]\n");
        return 2;
    }
    rank_model m;
    cls_status s = rank_model_load(model, (uint32_t)cols, &m);
    if (s != CLS_OK) return failed(s, "loading the model");
    size_t n;
    float *rows = read_matrix(rows_path, cols, &n);
    float *scores = rows ? malloc(n * sizeof *scores) : NULL;
    int rc = 1;
    if (rows && scores) {
        char desc[256];
        rank_model_describe(&m, desc, sizeof desc);
        printf("model %s: %s\nrows %s: %zu x %lu float32; commit %s, %s\n", model, desc, rows_path, n, cols,
               bench_commit(), bench_when());
        rc = 0;
        for (unsigned i = 0; i < nv; i++) {
            rc |= run_variant(device, &m, rows, cols, n, &vs[i], (unsigned)reps, check, scores);
            if (i == 0 && scores_path && !rc) rc = write_scores(scores_path, scores, n);
        }
    } else if (rows) {
        fprintf(stderr, "clsearch bench trees: out of memory\n");
    }
    free(rows);
    free(scores);
    rank_model_free(&m);
    return rc;
}
