/* decode suite: how fast each codec's blocks decode, on one CPU core (the plain-C reference
 * decoder) and on OpenCL devices (decode_blocks), in billions of postings per second and, on
 * devices, in achieved bandwidth against the device's copy ceiling.
 *
 *   clsearch bench decode [-d ref,cpu,gpu,P:D] [-r REPEATS] [--ref-repeats N] [--max-blocks N]
 *                         [--ceiling GBPS] [--json FILE] INDEX...
 *
 * Each INDEX is typically the same collection built with a different --codec / --block.
 * Method: every block of the index (or the first N) is decoded as one batch, once untimed
 * (warm-up), then REPEATS times (the reference decoder: --ref-repeats times, default 3). The reference decoder is timed with a monotonic clock around
 * the whole loop (one thread); devices are timed by OpenCL profiling events around the kernel
 * alone, and the host-to-device upload of the index (words and block metadata) is timed
 * separately, also by events. Figures are medians with min and max. The device's output is
 * compared with the reference decoder's, posting by posting.
 *
 * Bytes counted for bandwidth, per run: read = the blocks' compressed words + 32 bytes of
 * metadata + 8 bytes of task per block; written = 8 bytes per posting (docID and frequency).
 * The ceiling defaults to 2800 GB/s, a plain OpenCL copy kernel on the H100 (read + written);
 * `clsearch bench copy` measures it on any device. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clsearch.h"
#include "engine.h"
#include "index.h"

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

int bench_decode(int argc, char **argv)
{
    const char *devices = "ref,auto", *json_path = NULL;
    unsigned reps = 10, ref_reps = 3;
    uint64_t max_blocks = 0;
    double ceiling = 2800.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'},
                                          {"max-blocks", required_argument, 0, 'n'},
                                          {"ceiling", required_argument, 0, 'c'},
                                          {"ref-repeats", required_argument, 0, 'R'},
                                          {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:r:", longs, NULL)) != -1) {
        if (c == 'd') devices = optarg;
        else if (c == 'r') reps = (unsigned)atoi(optarg);
        else if (c == 'j') json_path = optarg;
        else if (c == 'n') max_blocks = strtoull(optarg, NULL, 10);
        else if (c == 'c') ceiling = atof(optarg);
        else if (c == 'R') ref_reps = (unsigned)atoi(optarg);
        else {
            fprintf(stderr, "usage: clsearch bench decode [-d ref,cpu,gpu,P:D] [-r REPEATS] [--max-blocks N] "
                            "[--ref-repeats N] [--ceiling GBPS] [--json FILE] INDEX...\n");
            return 2;
        }
    }
    if (optind >= argc || reps < 1 || reps > 1000 || ref_reps < 1 || ref_reps > 1000) {
        fprintf(stderr, "clsearch bench decode: give one or more indexes; REPEATS 1..1000\n");
        return 2;
    }
    FILE *json = json_path ? fopen(json_path, "a") : NULL;
    if (json_path && !json) {
        perror(json_path);
        return 1;
    }
    printf("decode suite: commit %s, %s\n", bench_commit(), bench_when());
    printf("%-8s %5s %12s %7s  %-28s %9s %9s %9s %8s %9s %7s %9s %8s %s\n", "codec", "block", "postings", "bits/p",
           "engine", "med ms", "min ms", "max ms", "Gpost/s", "GB/s", "%ceil", "up ms", "up GB/s", "check");
    double *t = malloc((reps + 1) * sizeof *t);
    for (int a = optind; a < argc; a++) {
        cls_index *idx;
        cls_status s = cls_index_open(argv[a], &idx);
        if (s != CLS_OK) return die(s, argv[a]);
        uint64_t nb64 = idx->num_blocks;
        if (max_blocks && nb64 > max_blocks) nb64 = max_blocks;
        if (nb64 > UINT32_MAX / idx->block_size) nb64 = UINT32_MAX / idx->block_size;
        uint32_t nb = (uint32_t)nb64, B = idx->block_size;
        uint64_t postings = 0, words = 0;
        for (uint32_t b = 0; b < nb; b++) {
            postings += idx_info_count(idx->blocks[b].info);
            words += idx_block_words(idx, b);
        }
        double bytes = (double)words * 4 + (double)nb * (sizeof(idx_block) + 8) + (double)postings * 8;
        double bits = postings ? 32.0 * (double)words / (double)postings : 0;
        uint32_t *rd = malloc((size_t)nb * B * 4 + 4), *rf = malloc((size_t)nb * B * 4 + 4);
        uint32_t *dd = malloc((size_t)nb * B * 4 + 4), *df = malloc((size_t)nb * B * 4 + 4);
        if (!rd || !rf || !dd || !df) return die(CLS_E_NOMEM, "output buffers");
        /* the reference decode, also the check for every device */
        for (unsigned r = 0; r <= ref_reps; r++) {
            double t0 = bench_now();
            for (uint32_t b = 0; b < nb; b++) idx_decode_block(idx, b, rd + (size_t)b * B, rf + (size_t)b * B);
            if (r > 0) t[r - 1] = bench_now() - t0;
        }
        char list[512];
        snprintf(list, sizeof list, "%s", devices);
        for (char *save = NULL, *dev = strtok_r(list, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
            figures f;
            double up = 0;
            const char *check = "-";
            char name[160];
            if (strcmp(dev, "ref") == 0) {
                f = summarize(t, ref_reps);
                snprintf(name, sizeof name, "ref (C, 1 thread)");
            } else {
                cls_engine *e;
                if ((s = cls_engine_create(idx, dev, &e)) != CLS_OK) return die(s, dev);
                clx_engine *cl = engine_clx(e);
                double *kt = malloc(reps * sizeof *kt);
                if ((s = clx_bench_decode(cl, 0, nb, reps, kt, &up)) != CLS_OK) return die(s, "decode");
                if ((s = clx_bench_decoded(cl, nb, dd, df)) != CLS_OK) return die(s, "read back");
                check = "match";
                for (uint32_t b = 0; b < nb && strcmp(check, "match") == 0; b++) {
                    size_t o = (size_t)b * B, n = idx_info_count(idx->blocks[b].info);
                    if (memcmp(rd + o, dd + o, n * 4) || memcmp(rf + o, df + o, n * 4)) check = "MISMATCH";
                }
                f = summarize(kt, reps);
                free(kt);
                const char *d = cls_engine_describe(e);
                const char *p = strstr(d, "device: ");
                snprintf(name, sizeof name, "%.28s", p ? p + 8 : dev);
                char *paren = strchr(name, '(');
                if (paren) *paren = '\0';
                cls_engine_free(e);
            }
            double gp = (double)postings / f.med * 1e-9, gbs = bytes / f.med * 1e-9;
            double upbytes = (double)idx->num_words * 4 + (double)idx->num_blocks * sizeof(idx_block);
            int is_dev = strcmp(dev, "ref") != 0;
            printf("%-8s %5u %12llu %7.2f  %-28s %9.3f %9.3f %9.3f %8.3f %9.1f %6.1f%% ", cls_codec_name(idx->codec), B,
                   (unsigned long long)postings, bits, name, f.med * 1e3, f.min * 1e3, f.max * 1e3, gp,
                   is_dev ? gbs : 0.0, is_dev ? 100.0 * gbs / ceiling : 0.0);
            if (is_dev) printf("%9.3f %8.1f %s\n", up * 1e3, up > 0 ? upbytes / up * 1e-9 : 0.0, check);
            else printf("%9s %8s %s\n", "-", "-", check);
            if (json)
                fprintf(json,
                        "{\"suite\":\"decode\",\"commit\":\"%s\",\"when\":\"%s\",\"index\":\"%s\",\"codec\":\"%s\",\"block\":%u,\"postings\":%llu,\"bits_per_posting\":%.4f,"
                        "\"engine\":\"%s\",\"median_s\":%.9f,\"min_s\":%.9f,\"max_s\":%.9f,\"gpostings_per_s\":%.4f,"
                        "\"gbytes_per_s\":%.3f,\"ceiling_gbytes_per_s\":%.1f,\"upload_s\":%.9f,\"check\":\"%s\"}\n",
                        bench_commit(), bench_when(), argv[a], cls_codec_name(idx->codec), B, (unsigned long long)postings, bits, dev, f.med, f.min,
                        f.max, gp, is_dev ? gbs : 0.0, ceiling, up, check);
            fflush(stdout);
        }
        free(rd), free(rf), free(dd), free(df);
        cls_index_close(idx);
    }
    free(t);
    if (json) fclose(json);
    return 0;
}
