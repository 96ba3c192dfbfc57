/* encode suite: how fast the index writer encodes an index's posting lists, on host threads
 * (idx_encode_chunk, the plain-C encoder) and on OpenCL devices (cl/encode.cl through
 * idx_encode_chunk_dev), so that where the builder encodes is decided by figures.
 *
 *   clsearch bench encode -x INDEX [-d DEVICES] [-t 1,4,16] [--wg 32,64,128,256]
 *                         [--layout bp:128,pfor:128:1,...] [-r N] [--json FILE]
 *
 * The index's lists are decoded once (the real lists of a collection), with the norms and
 * weights idx_write_lists computes, and encoded again in each layout (default: the index's own).
 *
 * Host: T threads, each encoding a contiguous run of lists of about 1/T of the postings into its
 * own blocks and words, then the runs joined (words copied after each other, block offsets moved):
 * what a parallel host encoder does. Timed by the monotonic clock around all of it.
 *
 * Device: the lists in chunks of IDX_ENCODE_CHUNK_POSTINGS as the builder cuts them, for each
 * WG_ENCODE of --wg. Three figures: the kernels alone (OpenCL profiling events: list widths,
 * blocks, offsets, compaction), the transfers alone (events: postings up, records and words
 * down), and the wall time of the whole call (with transfers and the host's block tables).
 * Every device's output is checked against the host's, bit for bit, before it is timed.
 *
 * Method: one untimed run (warm-up: programs built, buffers grown), then REPEATS runs; medians
 * with min and max; Mpostings/s from the median. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "codec/codec.h"
#include "index/bm25.h"
#include "index/encode_dev.h"
#include "index/index.h"
#include "index/index_write.h"
#include "util/vec.h"

#define MAX_THREADS 256
#define MAX_REPS 1000

static int die(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench encode: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

/* The collection's lists, decoded, with what idx_write_lists encodes them with. */
typedef struct input {
    uint32_t num_lists, num_docs, max_df;
    uint64_t postings, *start;
    uint32_t *docs, *freqs;
    float *weight, *norm;
    cls_scoring scoring;
} input;

static void input_free(input *in)
{
    free(in->start), free(in->docs), free(in->freqs), free(in->weight), free(in->norm);
}

static cls_status load(const cls_index *x, input *in)
{
    memset(in, 0, sizeof *in);
    in->num_lists = x->num_terms;
    in->num_docs = x->num_docs;
    in->scoring = x->scoring;
    for (uint32_t t = 0; t < x->num_terms; t++) {
        in->postings += x->terms[t].df;
        if (x->terms[t].df > in->max_df) in->max_df = x->terms[t].df;
    }
    in->start = malloc(((size_t)in->num_lists + 1) * sizeof *in->start);
    in->docs = malloc((in->postings + IDX_MAX_BLOCK) * 4);
    in->freqs = malloc((in->postings + IDX_MAX_BLOCK) * 4);
    in->weight = malloc(((size_t)in->num_lists + 1) * sizeof *in->weight);
    in->norm = malloc(((size_t)in->num_docs + 1) * sizeof *in->norm);
    if (!in->start || !in->docs || !in->freqs || !in->weight || !in->norm) return CLS_E_NOMEM;
    cls_status s = idx_verify_words(x);
    in->start[0] = 0;
    for (uint32_t t = 0, df; s == CLS_OK && t < in->num_lists; t++) {
        s = idx_decode_list(x, t, in->docs + in->start[t], in->freqs + in->start[t], &df);
        in->start[t + 1] = in->start[t] + df;
        in->weight[t] = bm25_block_weight(x->scoring, x->coll_docs, idx_coll_df(x, t));
    }
    for (uint32_t d = 0; d < in->num_docs; d++)
        in->norm[d] = bm25_norm(IDX_SCORE_K1, IDX_SCORE_B, x->doclen[d], x->coll_avg_doc_len);
    return s;
}

static idx_chunk chunk_of(const input *in, uint32_t a, uint32_t z)
{
    uint64_t off = in->start[a];
    return (idx_chunk){.num_lists = z - a, .list_start = in->start + a, .docs = in->docs + off,
                       .freqs = in->freqs + off, .weight = in->weight + a};
}

static uint64_t blocks_of(const input *in, uint32_t a, uint32_t z, uint32_t B)
{
    uint64_t nb = 0;
    for (uint32_t i = a; i < z; i++) nb += (in->start[i + 1] - in->start[i] + B - 1) / B;
    return nb;
}

/* One host thread's run of lists and its own output. */
typedef struct part {
    const input *in;
    const cls_build_opts *o;
    uint32_t a, z;
    idx_block *blocks; /* the run's place in the whole output */
    uint32_t *vals;
    idx_words wb;
    cls_status s;
} part;

static void *encode_part(void *arg)
{
    part *p = arg;
    idx_chunk c = chunk_of(p->in, p->a, p->z);
    p->wb.n = 0;
    p->s = idx_encode_chunk(p->o, &c, p->in->scoring, p->in->norm, p->vals, p->blocks, &p->wb);
    return NULL;
}

/* The lists on T threads, then joined into blocks and out: the host's figure. */
static cls_status host_run(const input *in, const cls_build_opts *o, part *parts, unsigned T, idx_words *out)
{
    pthread_t th[MAX_THREADS];
    for (unsigned i = 1; i < T; i++)
        if (pthread_create(&th[i], NULL, encode_part, &parts[i]) != 0) return CLS_E_NOMEM;
    encode_part(&parts[0]);
    for (unsigned i = 1; i < T; i++) pthread_join(th[i], NULL);
    out->n = 0;
    for (unsigned i = 0; i < T; i++) {
        if (parts[i].s != CLS_OK) return parts[i].s;
        uint64_t nb = blocks_of(in, parts[i].a, parts[i].z, o->block_size);
        for (uint64_t b = 0; b < nb; b++) parts[i].blocks[b].offset += (uint32_t)out->n;
        if (!vec_reserve(&out->w, &out->cap, out->n + parts[i].wb.n + 1, sizeof *out->w)) return CLS_E_NOMEM;
        memcpy(out->w + out->n, parts[i].wb.w, parts[i].wb.n * 4);
        out->n += parts[i].wb.n;
    }
    return CLS_OK;
}

/* The runs of T threads: contiguous lists of about equal postings. */
static cls_status host_parts(const input *in, const cls_build_opts *o, unsigned T, idx_block *blocks, part *parts)
{
    uint32_t a = 0;
    uint64_t nb = 0;
    for (unsigned i = 0; i < T; i++) {
        uint64_t goal = in->postings * (i + 1) / T;
        uint32_t z = a;
        while (z < in->num_lists && (i + 1 == T || in->start[z + 1] <= goal)) z++;
        parts[i] = (part){.in = in, .o = o, .a = a, .z = z, .blocks = blocks + nb};
        if (!(parts[i].vals = malloc(((size_t)in->max_df + 1) * 4))) return CLS_E_NOMEM;
        nb += blocks_of(in, a, z, o->block_size);
        a = z;
    }
    return CLS_OK;
}

/* The device's run: chunks of about IDX_ENCODE_CHUNK_POSTINGS postings. */
static cls_status dev_run_all(idx_encoder *e, const input *in, const cls_build_opts *o, idx_block *blocks,
                              idx_words *wb)
{
    wb->n = 0;
    uint64_t nb = 0;
    cls_status s = CLS_OK;
    for (uint32_t i = 0; s == CLS_OK && i < in->num_lists;) {
        uint32_t j = i + 1;
        while (j < in->num_lists && in->start[j + 1] - in->start[i] <= IDX_ENCODE_CHUNK_POSTINGS) j++;
        idx_chunk c = chunk_of(in, i, j);
        s = idx_encode_chunk_dev(e, o, &c, in->scoring, in->norm, blocks + nb, wb);
        nb += blocks_of(in, i, j, o->block_size);
        i = j;
    }
    return s;
}

typedef struct figures {
    double med, min, max;
} figures;

static figures summarize(double *t, unsigned n)
{
    bench_sort(t, n);
    return (figures){t[n / 2], t[0], t[n - 1]};
}

static int parse_list(const char *s, unsigned *v, unsigned max_n, unsigned lo, unsigned hi)
{
    unsigned n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *sp = NULL, *tok = strtok_r(buf, ",", &sp); tok; tok = strtok_r(NULL, ",", &sp)) {
        char *end;
        unsigned long x = strtoul(tok, &end, 10);
        if (*end || x < lo || x > hi || n == max_n) return 0;
        v[n++] = (unsigned)x;
    }
    return (int)n;
}

/* "codec:block[:depth]" into o (the rest defaults). */
static int parse_layout(const char *s, cls_build_opts *o)
{
    char name[32];
    unsigned block = 128, depth = 1;
    cls_build_defaults(o);
    int k = sscanf(s, "%31[a-z]:%u:%u", name, &block, &depth);
    if (k < 1 || cls_codec_parse(name, &o->codec) != CLS_OK) return 0;
    o->block_size = block;
    o->pfor_depth = depth;
    return idx_check_opts(o) == CLS_OK;
}

int bench_encode(int argc, char **argv)
{
    const char *index = NULL, *devices = "auto", *threads_s = NULL, *wg_s = "32,64,128,256", *layouts_s = NULL,
               *json_path = NULL;
    unsigned reps = 5;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"wg", required_argument, 0, 'w'},
                                          {"layout", required_argument, 0, 'l'}, {0, 0, 0, 0}};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "x:d:t:r:", longs, NULL)) != -1) {
        switch (opt) {
        case 'x': index = optarg; break;
        case 'd': devices = optarg; break;
        case 't': threads_s = optarg; break;
        case 'r': reps = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'w': wg_s = optarg; break;
        case 'l': layouts_s = optarg; break;
        case 'j': json_path = optarg; break;
        default: return 2;
        }
    }
    if (!index || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: clsearch bench encode -x INDEX [-d DEVICES] [-t 1,4,16] [--wg 32,64,128,256] "
                        "[--layout CODEC:BLOCK[:DEPTH],...] [-r 1..%u] [--json FILE]\n", MAX_REPS);
        return 2;
    }
    unsigned threads[16], nthreads, wgs[8], nwg;
    char tdef[64];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(tdef, sizeof tdef, cores > 1 ? "1,%ld" : "1", cores > MAX_THREADS ? (long)MAX_THREADS : cores);
    if (!(nthreads = (unsigned)parse_list(threads_s ? threads_s : tdef, threads, 16, 1, MAX_THREADS)) ||
        !(nwg = (unsigned)parse_list(wg_s, wgs, 8, 1, 1024))) {
        fprintf(stderr, "clsearch bench encode: -t takes threads 1..%d, --wg work-group sizes, comma-separated\n",
                MAX_THREADS);
        return 2;
    }
    cls_index *x;
    cls_status s = cls_index_open(index, &x);
    if (s != CLS_OK) return die(s, index);
    input in;
    if ((s = load(x, &in)) != CLS_OK) {
        input_free(&in);
        cls_index_close(x);
        return die(s, "decoding the index's lists");
    }
    cls_build_opts lay[16];
    unsigned nlay = 0;
    if (layouts_s) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", layouts_s);
        for (char *sp = NULL, *tok = strtok_r(buf, ",", &sp); tok && nlay < 16; tok = strtok_r(NULL, ",", &sp))
            if (!parse_layout(tok, &lay[nlay++])) {
                fprintf(stderr, "clsearch bench encode: --layout '%s': CODEC:BLOCK[:DEPTH]\n", tok);
                input_free(&in);
                cls_index_close(x);
                return 2;
            }
    } else {
        cls_build_defaults(&lay[0]);
        lay[0].codec = x->codec, lay[0].block_size = x->block_size, lay[0].pfor_depth = x->pfor_depth;
        nlay = 1;
    }
    of_file jf;
    if (bench_json_open(&jf, "bench encode", json_path, NULL, 0)) {
        input_free(&in);
        cls_index_close(x);
        return 1;
    }
    printf("commit %s, %s: %s: %u lists, %llu postings, %u documents; median of %u runs after a warm-up\n",
           bench_commit(), bench_when(), index, in.num_lists, (unsigned long long)in.postings, in.num_docs, reps);
    printf("%-14s %-26s %-10s %10s %10s %10s %10s %10s %10s %10s\n", "layout", "engine", "variant", "wall s", "min",
           "max", "Mpost/s", "kernels s", "up s", "down s");
    int rc = 0;
    double *t = malloc(MAX_REPS * 4 * sizeof *t);
    for (unsigned li = 0; li < nlay && rc == 0 && t; li++) {
        const cls_build_opts *o = &lay[li];
        char lname[32];
        snprintf(lname, sizeof lname, "%s:%u:%u", cls_codec_name(o->codec), o->block_size, o->pfor_depth);
        uint64_t nb = blocks_of(&in, 0, in.num_lists, o->block_size);
        idx_block *hb = malloc((nb + 1) * sizeof *hb), *db = malloc((nb + 1) * sizeof *db);
        idx_words hw = {0}, dw = {0};
        part parts[MAX_THREADS];
        if (!hb || !db) {
            rc = die(CLS_E_NOMEM, "output");
        }
        for (unsigned ti = 0; ti < nthreads && rc == 0; ti++) {
            unsigned T = threads[ti];
            memset(parts, 0, sizeof parts);
            if ((s = host_parts(&in, o, T, hb, parts)) != CLS_OK || (s = host_run(&in, o, parts, T, &hw)) != CLS_OK) {
                rc = die(s, "host encoding");
            }
            for (unsigned r = 0; r < reps && rc == 0; r++) {
                double t0 = bench_now();
                if ((s = host_run(&in, o, parts, T, &hw)) != CLS_OK) rc = die(s, "host encoding");
                t[r] = bench_now() - t0;
            }
            for (unsigned i = 0; i < T; i++) free(parts[i].vals), free(parts[i].wb.w);
            if (rc) break;
            figures f = summarize(t, reps);
            char eng[40];
            snprintf(eng, sizeof eng, "host, %u thread%s", T, T == 1 ? "" : "s");
            printf("%-14s %-26s %-10s %10.4f %10.4f %10.4f %10.1f %10s %10s %10s\n", lname, eng, "-", f.med, f.min,
                   f.max, (double)in.postings / f.med / 1e6, "-", "-", "-");
            if (jf.f)
                fprintf(jf.f, "{\"suite\":\"encode\",\"commit\":\"%s\",\"index\":\"%s\",\"layout\":\"%s\","
                        "\"engine\":\"host\",\"threads\":%u,\"postings\":%llu,\"wall_s\":%.6f,\"min_s\":%.6f,"
                        "\"max_s\":%.6f}\n",
                        bench_commit(), index, lname, T, (unsigned long long)in.postings, f.med, f.min, f.max);
        }
        /* the device's output is checked against the host's last one (hb, hw) */
        char devs[512];
        snprintf(devs, sizeof devs, "%s", devices);
        for (char *sp = NULL, *dev = strtok_r(devs, ",", &sp); dev && rc == 0; dev = strtok_r(NULL, ",", &sp)) {
            for (unsigned wi = 0; wi < nwg && rc == 0; wi++) {
                char prm[64];
                snprintf(prm, sizeof prm, "WG_ENCODE=%u", wgs[wi]);
                idx_encoder e;
                if ((s = idx_encoder_open_with(&e, dev, o, in.scoring, prm)) != CLS_OK) {
                    fprintf(stderr, "clsearch bench encode: %s, %s: %s (skipped)\n", dev, prm, cls_last_error());
                    continue;
                }
                if ((s = idx_encoder_norms(&e, in.norm, in.num_docs)) != CLS_OK ||
                    (s = dev_run_all(&e, &in, o, db, &dw)) != CLS_OK) {
                    rc = die(s, "device encoding");
                } else if (dw.n != hw.n || memcmp(db, hb, nb * sizeof *db) != 0 || memcmp(dw.w, hw.w, hw.n * 4) != 0) {
                    fprintf(stderr, "clsearch bench encode: %s, %s: the device's encoding differs from the host's\n",
                            dev, prm);
                    rc = 1;
                }
                double *kt = t + MAX_REPS, *ut = t + 2 * MAX_REPS, *dt = t + 3 * MAX_REPS;
                for (unsigned r = 0; r < reps && rc == 0; r++) {
                    dev_profile_reset(&e.dc);
                    double t0 = bench_now();
                    if ((s = dev_run_all(&e, &in, o, db, &dw)) != CLS_OK) rc = die(s, "device encoding");
                    t[r] = bench_now() - t0;
                    bench_steps_split(e.dc.steps, e.dc.nsteps, &ut[r], &kt[r], &dt[r]);
                }
                if (rc == 0) {
                    figures f = summarize(t, reps), fk = summarize(kt, reps), fu = summarize(ut, reps),
                            fd = summarize(dt, reps);
                    char eng[40];
                    snprintf(eng, sizeof eng, "%.39s", e.dc.dev.info.name);
                    printf("%-14s %-26.26s %-10s %10.4f %10.4f %10.4f %10.1f %10.4f %10.4f %10.4f\n", lname, eng,
                           prm + 3, f.med, f.min, f.max, (double)in.postings / f.med / 1e6, fk.med, fu.med, fd.med);
                    printf("%-14s %-26s %-10s %10s %10s %10s %10.1f (kernels alone)\n", "", "", "", "", "", "",
                           (double)in.postings / fk.med / 1e6);
                    if (jf.f)
                        fprintf(jf.f, "{\"suite\":\"encode\",\"commit\":\"%s\",\"index\":\"%s\",\"layout\":\"%s\","
                                "\"engine\":\"%s\",\"wg_encode\":%u,\"postings\":%llu,\"wall_s\":%.6f,\"min_s\":%.6f,"
                                "\"max_s\":%.6f,\"kernels_s\":%.6f,\"upload_s\":%.6f,\"download_s\":%.6f}\n",
                                bench_commit(), index, lname, e.dc.dev.info.name, wgs[wi],
                                (unsigned long long)in.postings, f.med, f.min, f.max, fk.med, fu.med, fd.med);
                }
                idx_encoder_close(&e);
            }
        }
        free(hb), free(db), free(hw.w), free(dw.w);
    }
    if (!t) rc = die(CLS_E_NOMEM, "timings");
    free(t);
    if (bench_json_close(&jf, "bench encode")) rc = 1;
    input_free(&in);
    cls_index_close(x);
    return rc;
}
