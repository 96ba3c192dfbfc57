/* decode suite: how fast each codec's blocks decode, on one CPU core (the plain-C reference
 * decoder) and on OpenCL devices (decode_blocks), in billions of postings per second and, on
 * devices, in achieved bandwidth against the device's copy ceiling.
 *
 *   clsearch bench decode [-d ref,cpu,gpu,P:D] [-r REPEATS] [--ref-repeats N] [--max-blocks N]
 *                         [--select 1,0.05] [--algo hs,we,shfl|all] [--ceiling GBPS]
 *                         [--json FILE] [--plot DIR] INDEX...
 *
 * Each INDEX is typically the same collection built with a different --codec / --block; with
 * --algo the device decoder is also built in each in-group scan variant (WG_SCAN_ALGO), so one
 * run covers codec x block size x kernel variant.
 *
 * Two access patterns (--select): 1 decodes whole lists (every block of the index, or the
 * first --max-blocks, in order: the OR path); a fraction f < 1 decodes a random selection of
 * about f of all blocks, scattered over the index (seeded: the same selection on every engine),
 * as merge-based intersection does when it decodes only the blocks that can hold a candidate.
 * Scattered blocks cost more per posting: each is a separate short read.
 *
 * Method: the selection is decoded as one batch, once untimed (warm-up), then REPEATS times
 * (the reference decoder: --ref-repeats times, default 3). The reference decoder is timed
 * with a monotonic clock around the whole loop (one thread); devices are timed by OpenCL
 * profiling events around the kernel alone, and the host-to-device upload of the index
 * (words and block metadata) is timed separately, also by events. Figures are medians with
 * min and max. The device's output is compared with the reference decoder's, posting by
 * posting.
 *
 * Bytes counted for bandwidth, per run: read = the selected blocks' compressed words + 32
 * bytes of metadata + 8 bytes of task per block; written = 8 bytes per posting (docID and
 * frequency). The ceiling defaults to 2800 GB/s, a plain OpenCL copy kernel on the H100 (read
 * + written); `clsearch bench copy` measures it on any device. --plot draws the achieved
 * bandwidth of every (index, variant, selection) on each device as bars. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clsearch.h"
#include "clx_scan.h"
#include "bench_hooks.h"
#include "engine/engine.h"
#include "index/index.h"
#include "util/vec.h"

static int die(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench decode: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

typedef struct figures {
    double med, min, max; /* seconds per run */
} figures;

static figures summarize(double *t, unsigned n)
{
    bench_sort(t, n);
    return (figures){t[n / 2], t[0], t[n - 1]};
}

/* About frac of the index's blocks (all when frac >= 1: the first max of them, in order),
 * scattered, from a fixed seed; *n receives the count. NULL with *n = 0 when out of memory. */
static uint32_t *select_blocks(const cls_index *idx, double frac, uint64_t max, uint32_t *n)
{
    uint64_t total = idx->num_blocks;
    if (frac >= 1 && max && total > max) total = max;
    if (total > UINT32_MAX / idx->block_size) total = UINT32_MAX / idx->block_size;
    uint32_t *sel = malloc((total ? total : 1) * sizeof *sel), m = 0;
    if (!sel) {
        *n = 0;
        return NULL;
    }
    uint64_t cut = frac >= 1 ? UINT64_MAX : (uint64_t)(frac * 18446744073709551615.0), x = 0x243F6A8885A308D3ull;
    for (uint64_t b = 0; b < idx->num_blocks && m < total; b++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64: the same selection every run */
        if (frac >= 1 || x <= cut) sel[m++] = (uint32_t)b;
    }
    *n = m;
    return sel;
}

typedef struct row {
    const char *index;
    char codec[16], engine[40], variant[24];
    unsigned block;
    double frac, gbs, gps;
} row;

static int plot_rows(const char *dir, const row *r, unsigned n)
{
    char *data = NULL, *script = NULL;
    size_t dl = 0, dc = 0, sl = 0, sc = 0;
    int ok = bench_cat(&data, &dl, &dc, "# label GB/s Gpostings/s\n");
    for (unsigned i = 0; i < n && ok; i++) {
        if (strcmp(r[i].engine, "ref") == 0) continue;
        ok = bench_cat(&data, &dl, &dc, "\"%s/%u %s %s sel %.3g\" %.3f %.4f\n", r[i].codec, r[i].block, r[i].engine,
                       r[i].variant, r[i].frac, r[i].gbs, r[i].gps);
    }
    ok = ok && bench_cat(&script, &sl, &sc,
                         "set style fill solid 0.6\nset boxwidth 0.7\nset grid ytics\nset yrange [0:*]\nset xtics rotate by -60 font ',7'\n"
                         "set ylabel 'achieved GB/s (read + written)'\nset bmargin 16\n"
                         "set title 'clsearch bench decode: bandwidth per codec, block size, variant (commit %s)'\n"
                         "plot datafile using 0:2:xticlabels(1) with boxes notitle\n",
                         bench_commit());
    int rc = ok ? bench_plot(dir, "decode-bandwidth", data, script) : 1;
    if (!ok) fprintf(stderr, "clsearch bench decode: out of memory for the plot\n");
    free(data), free(script);
    return rc;
}

int bench_decode(int argc, char **argv)
{
    const char *devices = "ref,auto", *json_path = NULL, *selects = "1,0.05", *algos = NULL, *plot_dir = NULL;
    unsigned reps = 10, ref_reps = 3;
    uint64_t max_blocks = 0;
    double ceiling = 2800.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'},
                                          {"max-blocks", required_argument, 0, 'n'},
                                          {"ceiling", required_argument, 0, 'c'},
                                          {"ref-repeats", required_argument, 0, 'R'},
                                          {"select", required_argument, 0, 's'},
                                          {"algo", required_argument, 0, 'a'},
                                          {"plot", required_argument, 0, 'p'},
                                          {0, 0, 0, 0}};
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:r:", longs, NULL)) != -1) {
        if (c == 'd') devices = optarg;
        else if (c == 'r') reps = (unsigned)atoi(optarg);
        else if (c == 'j') json_path = optarg;
        else if (c == 'n') max_blocks = strtoull(optarg, NULL, 10);
        else if (c == 'c') ceiling = atof(optarg);
        else if (c == 'R') ref_reps = (unsigned)atoi(optarg);
        else if (c == 's') selects = optarg;
        else if (c == 'a') algos = optarg;
        else if (c == 'p') plot_dir = optarg;
        else bad = 1;
    }
    double fracs[16];
    unsigned nf = 0;
    char fcopy[256];
    snprintf(fcopy, sizeof fcopy, "%s", selects);
    for (char *sv = NULL, *f = strtok_r(fcopy, ",", &sv); f && !bad; f = strtok_r(NULL, ",", &sv)) {
        char *end;
        double v = strtod(f, &end);
        if (*end || !(v > 0 && v <= 1) || nf == 16) bad = 1;
        else fracs[nf++] = v;
    }
    if (bad || optind >= argc || reps < 1 || reps > 1000 || ref_reps < 1 || ref_reps > 1000 || !(ceiling > 0)) {
        fprintf(stderr, "usage: clsearch bench decode [-d ref,cpu,gpu,P:D] [-r REPEATS 1..1000] [--max-blocks N] "
                        "[--ref-repeats N] [--select FRACTIONS in (0,1]] [--algo hs,we,shfl|all] [--ceiling GBPS] "
                        "[--json FILE] [--plot DIR] INDEX...\n");
        return 2;
    }
    of_file jf;
    if (bench_json_open(&jf, "bench decode", json_path, argv + optind, argc - optind)) return 1;
    FILE *json = jf.f;
    printf("decode suite: commit %s, %s\n", bench_commit(), bench_when());
    printf("%-8s %5s %6s %12s %7s  %-26s %-14s %9s %9s %9s %8s %9s %7s %9s %8s %s\n", "codec", "block", "select",
           "postings", "bits/p", "engine", "variant", "med ms", "min ms", "max ms", "Gpost/s", "GB/s", "%ceil", "up ms",
           "up GB/s", "check");
    double *t = malloc((reps > ref_reps ? reps : ref_reps) * sizeof *t);
    row *rows = NULL;
    unsigned nrows = 0;
    size_t rcap = 0;
    int rc = 0;
    for (int a = optind; a < argc && !rc; a++) {
        cls_index *idx;
        cls_status s = cls_index_open(argv[a], &idx);
        if (s != CLS_OK) return die(s, argv[a]);
        uint32_t B = idx->block_size;
        for (unsigned fi = 0; fi < nf && !rc; fi++) {
            uint32_t nb;
            uint32_t *sel = select_blocks(idx, fracs[fi], max_blocks, &nb);
            if (!sel) return die(CLS_E_NOMEM, "block selection");
            uint64_t postings = 0, words = 0;
            for (uint32_t i = 0; i < nb; i++) {
                postings += idx_info_count(idx->blocks[sel[i]].info);
                words += idx_block_words(idx, sel[i]);
            }
            double bytes = (double)words * 4 + (double)nb * (sizeof(idx_block) + 8) + (double)postings * 8;
            double bits = postings ? 32.0 * (double)words / (double)postings : 0;
            size_t outn = (size_t)nb * B + 1;
            uint32_t *rd = malloc(outn * 4), *rf = malloc(outn * 4), *dd = malloc(outn * 4), *df = malloc(outn * 4);
            if (!rd || !rf || !dd || !df) return die(CLS_E_NOMEM, "output buffers");
            /* the reference decode, also the check for every device */
            double rt[1000];
            for (unsigned r = 0; r <= ref_reps; r++) {
                double t0 = bench_now();
                cls_status ds = CLS_OK;
                for (uint32_t i = 0; i < nb && ds == CLS_OK; i++)
                    ds = idx_decode_block(idx, sel[i], rd + (size_t)i * B, rf + (size_t)i * B);
                if (ds != CLS_OK) return die(ds, "the reference decoder");
                if (r > 0) rt[r - 1] = bench_now() - t0;
            }
            char list[512];
            snprintf(list, sizeof list, "%s", devices);
            for (char *save = NULL, *dev = strtok_r(list, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
                int is_dev = strcmp(dev, "ref") != 0;
                char alist[64];
                snprintf(alist, sizeof alist, "%s", is_dev && algos ? algos : "-");
                clx_params prm; /* the parameters in force; --algo varies the in-group scan */
                if (is_dev && algos) {
                    clx_device cd;
                    if ((s = clx_select(dev, &cd)) != CLS_OK || (s = clx_params_for(&cd.info, &prm)) != CLS_OK)
                        return die(s, dev);
                    if (strcmp(algos, "all") == 0) snprintf(alist, sizeof alist, "%s", clx_scan_algos_for(&cd.info));
                }
                for (char *sa = NULL, *al = strtok_r(alist, ",", &sa); al; al = strtok_r(NULL, ",", &sa)) {
                    figures f;
                    double up = 0;
                    const char *check = "-";
                    char name[160], variant[24] = "-";
                    if (!is_dev) {
                        memcpy(t, rt, ref_reps * sizeof *t);
                        f = summarize(t, ref_reps);
                        snprintf(name, sizeof name, "ref (C, 1 thread)");
                    } else {
                        int av = clx_scan_algo_parse(al);
                        if (strcmp(al, "-") != 0 && av < 0) return die(CLS_E_ARG, "--algo takes all, hs, we, shfl");
                        if (av >= 0) prm.wg_scan_algo = (unsigned)av;
                        cls_engine *e;
                        if ((s = engine_create_with(idx, dev, av >= 0 ? &prm : NULL, &e)) != CLS_OK) return die(s, dev);
                        clx_engine *cl = engine_clx(e);
                        if (!cl) return die(CLS_E_ARG, "not an OpenCL device");
                        snprintf(variant, sizeof variant, "%s", clx_scan_algo_name(clx_engine_params(cl)->wg_scan_algo));
                        if ((s = clx_bench_decode(cl, fracs[fi] >= 1 ? NULL : sel, 0, nb, reps, t, &up)) != CLS_OK)
                            return die(s, "decode");
                        if ((s = clx_bench_decoded(cl, nb, dd, df)) != CLS_OK) return die(s, "read back");
                        check = "match";
                        for (uint32_t i = 0; i < nb && strcmp(check, "match") == 0; i++) {
                            size_t o = (size_t)i * B, n = idx_info_count(idx->blocks[sel[i]].info);
                            if (memcmp(rd + o, dd + o, n * 4) || memcmp(rf + o, df + o, n * 4)) check = "MISMATCH";
                        }
                        if (strcmp(check, "match") != 0) rc = 1;
                        f = summarize(t, reps);
                        const char *d = cls_engine_describe(e);
                        const char *p = strstr(d, "device: ");
                        snprintf(name, sizeof name, "%.26s", p ? p + 8 : dev);
                        char *paren = strchr(name, '(');
                        if (paren) *paren = '\0';
                        cls_engine_free(e);
                    }
                    double gp = (double)postings / f.med * 1e-9, gbs = bytes / f.med * 1e-9;
                    double upbytes = (double)idx->num_words * 4 + (double)idx->num_blocks * sizeof(idx_block);
                    printf("%-8s %5u %6.3g %12llu %7.2f  %-26s %-14s %9.3f %9.3f %9.3f %8.3f %9.1f %6.1f%% ",
                           cls_codec_name(idx->codec), B, fracs[fi], (unsigned long long)postings, bits, name, variant,
                           f.med * 1e3, f.min * 1e3, f.max * 1e3, gp, is_dev ? gbs : 0.0,
                           is_dev ? 100.0 * gbs / ceiling : 0.0);
                    if (is_dev) printf("%9.3f %8.1f %s\n", up * 1e3, up > 0 ? upbytes / up * 1e-9 : 0.0, check);
                    else printf("%9s %8s %s\n", "-", "-", check);
                    if (json)
                        fprintf(json,
                                "{\"suite\":\"decode\",\"commit\":\"%s\",\"when\":\"%s\",\"index\":\"%s\",\"codec\":\"%s\","
                                "\"block\":%u,\"select\":%.4g,\"blocks\":%u,\"postings\":%llu,\"bits_per_posting\":%.4f,"
                                "\"engine\":\"%s\",\"device\":\"%s\",\"variant\":\"%s\",\"repeats\":%u,\"median_s\":%.9f,"
                                "\"min_s\":%.9f,\"max_s\":%.9f,\"gpostings_per_s\":%.4f,\"gbytes_per_s\":%.3f,"
                                "\"ceiling_gbytes_per_s\":%.1f,\"upload_s\":%.9f,\"check\":\"%s\"}\n",
                                bench_commit(), bench_when(), argv[a], cls_codec_name(idx->codec), B, fracs[fi], nb,
                                (unsigned long long)postings, bits, dev, name, variant, is_dev ? reps : ref_reps, f.med,
                                f.min, f.max, gp, is_dev ? gbs : 0.0, ceiling, up, check);
                    fflush(stdout);
                    if (!vec_reserve(&rows, &rcap, (size_t)nrows + 1, sizeof *rows)) return die(CLS_E_NOMEM, "rows");
                    row *w = &rows[nrows++];
                    w->index = argv[a];
                    snprintf(w->codec, sizeof w->codec, "%s", cls_codec_name(idx->codec));
                    snprintf(w->engine, sizeof w->engine, "%s", is_dev ? dev : "ref");
                    snprintf(w->variant, sizeof w->variant, "%s", variant);
                    w->block = B, w->frac = fracs[fi], w->gbs = gbs, w->gps = gp;
                }
            }
            free(rd), free(rf), free(dd), free(df), free(sel);
        }
        cls_index_close(idx);
    }
    if (!rc && plot_dir) rc = plot_rows(plot_dir, rows, nrows);
    free(t), free(rows);
    if (bench_json_close(&jf, "bench decode")) rc = 1;
    return rc;
}
