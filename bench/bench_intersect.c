/* intersect suite: intersect_and (cl/intersect.cl) alone, on generated AND queries, per
 * work-group size, checked against a plain-C merge.
 *
 *   clsearch bench intersect [-d DEVICES] [--terms 2] [--short 1000,10000] [--ratios 1,10,100,1000]
 *                            [--batch 1,64,1024,16384] [--share 0.5] [--wg 64,128,256,512]
 *                            [-r REPEATS] [--mib 256] [--ceiling GBPS] [--json FILE]
 *
 * Inputs: BATCH queries of TERMS sorted, distinct docID lists: one short list of SHORT postings
 * and TERMS-1 long ones of SHORT x RATIO. The long list's gaps are uniform in 2..6 (its docIDs
 * span about 4 x its length); the short list takes one long-list position in each RATIO-wide
 * stride and holds that docID (a hit: exactly SHARE of the short list, default half) or that
 * docID + 1 (never in the long list: the gaps are at least 2). Lists 3.. of a query are copies of
 * its long list (own memory, same values), so each query's intersection is exactly its hits. A
 * seeded PRNG (splitmix64) makes them, so a configuration always gets the same lists. Queries,
 * lists and descriptors are laid out as the engine lays out a batch (src/engine/plan.c, cl/abi.h): the
 * docIDs one list after another; per query qinfo {first term, terms, candidate offset, flags},
 * per term qterm {list offset, length, weight bits (unused here), 0}; room for SHORT candidates
 * per query.
 *
 * Memory: one input set (lists, descriptors, outputs) must fit --mib (default 256 MiB), else
 * the configuration is skipped with a note. On the device the lists and descriptors are copied
 * until the copies total 256 MiB (5 x an H100's 50 MB L2; at least 2, fewer where the device's
 * memory or largest buffer forbids), and run r takes copy r mod COPIES, at other offsets of the
 * same buffers, so no run finds its lists in a cache an earlier run warmed. Before each variant
 * a 256 MiB scratch fill evicts what the upload and the copying left in caches.
 *
 * Timing: the upload of one set (its host-to-device writes) is timed by profiling events and
 * reported apart. Each variant runs once untimed, then REPEATS times (default 10), each timed by
 * its kernel's profiling event; median, min and max are reported.
 *
 * Figures: queries/s = BATCH / median; postings/s = every posting of the query lists,
 * BATCH x (SHORT + (TERMS-1) x LONG), / median; GB/s = 4 bytes x those postings / median, the
 * bytes a merge intersection must read. Binary search reads less (about SHORT x log2 LONG
 * probes per long list), so at high ratios this figure can pass the ceiling (--ceiling, default
 * 2800 GB/s, the H100's measured copy): it then says the search beats any merge, not that
 * memory went faster.
 *
 * Check: after each variant's last run every query's candidates and count are compared with a
 * plain-C merge intersection of its lists; the outputs were poisoned before its warm-up.
 * Variants: --wg, work-items per query (WG_INTERSECT, powers of two; those above the device's
 * largest work-group are skipped with a note). The in-group scan (WG_SCAN_ALGO) is the one the
 * engine would use on the device (src/device/clx_params.c: database, tuning file, CLSEARCH_PARAMS). */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_dev.h"
#include "cl/abi.h"
#include "clx_scan.h"
#include "util/err.h"

#define ROT_BYTES ((uint64_t)256 << 20)   /* the copies of the inputs total at least this */
#define FLUSH_BYTES ((uint64_t)256 << 20) /* scratch written to evict caches */
#define MAX_COPIES 65536u
#define MAX_VALS 16  /* values of a list option */
#define MAX_TERMS 8
#define MAX_LONG (1u << 28) /* postings of a long list: its docIDs stay below 2^31 */
#define DEFAULT_MIB 256u /* --mib: keeps a default run on a 2-core CPU device short */
#define TUNE_MIB 1024u   /* the largest input set the tune entry points make */

static const char USAGE[] =
    "usage: clsearch bench intersect [-d DEVICES] [--terms 2] [--short 1000,10000] [--ratios 1,10,100,1000]\n"
    "                                [--batch 1,64,1024,16384] [--share 0.5] [--wg 64,128,256,512] [-r REPEATS]\n"
    "                                [--mib 256] [--ceiling GBPS] [--json FILE]\n"
    "  lists take 1000 or 1e3; --terms 2..8; --share: part of the short list in the long ones (0..1);\n"
    "  --mib: largest input set (lists, descriptors, outputs) run; GB/s counts 4 B x every posting\n";

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench intersect: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

typedef struct icase {
    uint32_t nq, s, ratio, terms;
    double share;
} icase;

/* One configuration's inputs, host and device. */
typedef struct iset {
    icase c;
    uint32_t lng, hits;    /* long list length (s x ratio); hits per query */
    uint64_t perq;         /* postings per query */
    uint64_t ndocs, ndesc; /* uints in one copy: docIDs; descriptors (qinfo | qterm) */
    uint64_t set_bytes;    /* one input set: lists, descriptors, outputs */
    uint64_t flush_bytes;
    unsigned copies;
    uint32_t *docs, *desc, *got; /* host: one copy of the lists; every copy's descriptors; read-back */
    cl_mem d_docs, d_in, d_cand, d_ncand, d_flush;
    double upload_s;
} iset;

/* Sizes c's input set and how many copies the device holds; 0, or 1 with why filled when the
 * configuration must be skipped. */
static int iset_plan(const clx_queue *q, const icase *c, uint64_t cap, iset *d, char *why, size_t len)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    uint64_t lng = (uint64_t)c->s * c->ratio;
    if (lng > MAX_LONG) {
        snprintf(why, len, "long lists of %llu postings (at most 2^28)", (unsigned long long)lng);
        return 1;
    }
    d->lng = (uint32_t)lng;
    d->hits = (uint32_t)(c->share * c->s + 0.5);
    d->perq = c->s + (uint64_t)(c->terms - 1) * lng;
    d->ndocs = c->nq * d->perq;
    d->ndesc = ((uint64_t)c->nq * (sizeof(abi_query) + sizeof(abi_unit)) + (uint64_t)c->nq * c->terms * sizeof(abi_term)) / 4;
    uint64_t nout = (uint64_t)c->nq * (c->s + 1); /* candidates and counts */
    d->set_bytes = 4 * (d->ndocs + d->ndesc + nout);
    if (d->set_bytes > cap) {
        snprintf(why, len, "an input set of %.0f MiB is over --mib %llu", d->set_bytes / 1048576.0,
                 (unsigned long long)(cap >> 20));
        return 1;
    }
    const cls_device_info *di = &q->dev.info;
    d->flush_bytes = FLUSH_BYTES < di->max_alloc ? FLUSH_BYTES : di->max_alloc;
    uint64_t per_copy = 4 * (d->ndocs + d->ndesc), fixed = 4 * nout + d->flush_bytes, room = di->global_mem / 2;
    uint64_t k = (ROT_BYTES + per_copy - 1) / per_copy, kmax = room > fixed ? (room - fixed) / per_copy : 0;
    if (k < 2) k = 2;
    if (k > MAX_COPIES) k = MAX_COPIES;
    uint64_t lim[] = {kmax, di->max_alloc / (4 * d->ndocs), di->max_alloc / (4 * d->ndesc), UINT32_MAX / d->ndocs,
                      UINT32_MAX / d->ndesc};
    for (unsigned i = 0; i < sizeof lim / sizeof *lim; i++)
        if (k > lim[i]) k = lim[i];
    if (k < 1) {
        snprintf(why, len, "an input set of %.0f MiB does not fit the device (half its memory, buffers of %.0f MiB, "
                 "32-bit offsets)", d->set_bytes / 1048576.0, di->max_alloc / 1048576.0);
        return 1;
    }
    d->copies = (unsigned)k;
    return 0;
}

/* One query's lists at out: the short one, the long one, then terms-2 copies of the long one
 * (see the header comment for why the intersection is exactly `hits` docIDs). */
static void gen_query(uint64_t *st, const iset *d, uint32_t *out)
{
    const icase *c = &d->c;
    uint32_t *sh = out, *lg = out + c->s;
    uint32_t x = bench_below(st, 4);
    for (uint32_t i = 0; i < d->lng; i++, x += 2 + bench_below(st, 5)) lg[i] = x;
    for (uint32_t i = 0, left = d->hits; i < c->s; i++) {
        uint32_t p = i * c->ratio + bench_below(st, c->ratio); /* one position per stride: sorted */
        uint32_t hit = bench_below(st, c->s - i) < left;      /* selection sampling: exactly `hits` */
        left -= hit;
        sh[i] = lg[p] + 1 - hit;
    }
    for (uint32_t t = 2; t < c->terms; t++) memcpy(lg + (size_t)(t - 1) * d->lng, lg, (size_t)d->lng * 4);
}

/* Copy k's descriptors: as the engine writes them, list offsets into copy k of the docIDs. */
static void fill_desc(const iset *d, unsigned k, uint32_t *desc)
{
    const icase *c = &d->c;
    abi_query *qinfo = (abi_query *)desc;
    abi_term *qterm = (abi_term *)(qinfo + c->nq);
    abi_unit *units = (abi_unit *)(qterm + (size_t)c->nq * c->terms); /* one work unit a query */
    for (uint32_t q = 0; q < c->nq; q++) {
        units[q] = (abi_unit){.query = q, .begin = 0, .end = c->s, .first_unit = q};
        uint32_t base = (uint32_t)(k * d->ndocs + q * d->perq);
        abi_term *qt = qterm + (size_t)q * c->terms;
        qinfo[q] = (abi_query){.term_start = q * c->terms, .num_terms = c->terms, .cand_offset = q * c->s};
        for (uint32_t t = 0; t < c->terms; t++)
            qt[t] = (abi_term){.list_offset = t == 0 ? base : base + c->s + (t - 1) * d->lng, .df = t == 0 ? c->s : d->lng};
    }
}


static void iset_free(iset *d)
{
    cl_mem m[] = {d->d_docs, d->d_in, d->d_cand, d->d_ncand, d->d_flush};
    for (unsigned i = 0; i < sizeof m / sizeof *m; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(d->docs), free(d->desc), free(d->got);
    d->d_docs = d->d_in = d->d_cand = d->d_ncand = d->d_flush = NULL;
    d->docs = d->desc = d->got = NULL;
}

/* Generates the planned set, uploads one copy (timed) and fills the others on the device. */
static cls_status iset_make(const clx_queue *q, iset *d)
{
    const icase *c = &d->c;
    d->docs = malloc(d->ndocs * 4);
    d->desc = malloc(d->copies * d->ndesc * 4);
    d->got = malloc((uint64_t)c->nq * (c->s + 1) * 4);
    if (!d->docs || !d->desc || !d->got) return err_set(CLS_E_NOMEM, "out of memory for the inputs");
    uint64_t st = 0x1D5EC7ull ^ ((uint64_t)c->nq << 40) ^ ((uint64_t)c->s << 20) ^ c->ratio ^ ((uint64_t)c->terms << 60);
    for (uint32_t i = 0; i < c->nq; i++) gen_query(&st, d, d->docs + i * d->perq);
    for (unsigned k = 0; k < d->copies; k++) fill_desc(d, k, d->desc + k * d->ndesc);
    cls_status s;
    if ((s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * d->ndocs * 4, &d->d_docs)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * d->ndesc * 4, &d->d_in)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, (uint64_t)c->nq * c->s * 4, &d->d_cand)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, (uint64_t)c->nq * 4, &d->d_ncand)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, d->flush_bytes, &d->d_flush)) != CLS_OK)
        return s;
    d->upload_s = 0;
    if ((s = bench_write(q, d->d_docs, 0, d->ndocs * 4, d->docs, &d->upload_s)) != CLS_OK ||
        (s = bench_write(q, d->d_in, 0, d->ndesc * 4, d->desc, &d->upload_s)) != CLS_OK)
        return s;
    if (d->copies > 1 &&
        (s = bench_write(q, d->d_in, d->ndesc * 4, (d->copies - 1) * d->ndesc * 4, d->desc + d->ndesc, NULL)) != CLS_OK)
        return s;
    return bench_replicate(q, d->d_docs, d->ndocs * 4, d->copies);
}


/* intersect_and built for work-groups of wg with the in-group scan scan_algo (WG_SCAN_ALGO). */
static cls_status ibuild(const clx_queue *q, unsigned wg, unsigned scan_algo, cl_program *prog, cl_kernel *k)
{
    static const char *const files[] = {"and.cl", NULL}; /* intersect_and */
    char opts[96], note[4400];
    double secs;
    int cached;
    *k = NULL;
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_INTERSECT=%u -DWG_SCAN_ALGO=%u", wg, scan_algo);
    cls_status s = clx_build(q->ctx, &q->dev, files, opts, prog, &secs, &cached, note, sizeof note);
    if (s != CLS_OK) return s;
    cl_int err;
    *k = clCreateKernel(*prog, "intersect_and", &err);
    if (!*k || err != CL_SUCCESS) {
        clReleaseProgram(*prog);
        *prog = NULL, *k = NULL;
        return clx_fail("clCreateKernel(intersect_and)", err);
    }
    return CLS_OK;
}

/* One variant: poisons the outputs, evicts caches, runs once untimed and reps times timed
 * (times[r]), run r on copy r mod copies. */
static cls_status irun(const clx_queue *q, cl_kernel k, unsigned wg, const iset *d, unsigned reps, double *times)
{
    const icase *c = &d->c;
    cls_status s;
    if ((s = bench_fill(q, d->d_cand, 0xFFFFFFFFu, (uint64_t)c->nq * c->s * 4)) != CLS_OK ||
        (s = bench_fill(q, d->d_ncand, 0xFFFFFFFFu, (uint64_t)c->nq * 4)) != CLS_OK ||
        (s = bench_fill(q, d->d_flush, 0, d->flush_bytes)) != CLS_OK)
        return s;
    CLX_TRY(clFinish(q->q));
    CLX_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &d->d_in));
    CLX_TRY(clSetKernelArg(k, 3, sizeof(cl_mem), &d->d_docs));
    CLX_TRY(clSetKernelArg(k, 4, sizeof(cl_mem), &d->d_cand));
    CLX_TRY(clSetKernelArg(k, 5, sizeof(cl_mem), &d->d_ncand));
    /* block skipping's arguments: no term here skips (abi_term.skip 0), so any buffer will do */
    cl_uint no_skips = 0;
    CLX_TRY(clSetKernelArg(k, 6, sizeof no_skips, &no_skips));
    for (cl_uint i = 7; i <= 9; i++) CLX_TRY(clSetKernelArg(k, i, sizeof(cl_mem), &d->d_ncand));
    size_t local = wg, global = (size_t)c->nq * wg;
    for (unsigned r = 0; r <= reps; r++) { /* r = 0: the warm-up */
        cl_uint qinfo_base = (cl_uint)((r % d->copies) * d->ndesc), qterm_base = qinfo_base + c->nq * (cl_uint)(sizeof(abi_query) / 4);
        CLX_TRY(clSetKernelArg(k, 1, sizeof qinfo_base, &qinfo_base));
        CLX_TRY(clSetKernelArg(k, 2, sizeof qterm_base, &qterm_base));
        cl_uint units_base = qterm_base + c->nq * c->terms * (cl_uint)(sizeof(abi_term) / 4);
        CLX_TRY(clSetKernelArg(k, 10, sizeof units_base, &units_base));
        cl_event ev;
        CLX_TRY(clEnqueueNDRangeKernel(q->q, k, 1, NULL, &global, &local, 0, NULL, &ev));
        cl_int err = clWaitForEvents(1, &ev);
        double t = clx_event_span(ev, ev);
        clReleaseEvent(ev);
        if (err != CL_SUCCESS) return clx_fail("clWaitForEvents(intersect_and)", err);
        if (r > 0 && !(t > 0)) return err_set(CLS_E_OPENCL, "intersect_and: no profiling time");
        if (r > 0) times[r - 1] = t;
    }
    return CLS_OK;
}

/* Intersection of n sorted lists, the first one the shortest, by merging: a cursor advances in
 * every other list. The count written to out. */
static uint32_t merge_and(const uint32_t *const *l, const uint32_t *len, unsigned n, uint32_t *out)
{
    uint32_t cur[MAX_TERMS] = {0}, m = 0;
    for (uint32_t i = 0; i < len[0]; i++) {
        uint32_t x = l[0][i];
        unsigned t = 1;
        for (; t < n; t++) {
            while (cur[t] < len[t] && l[t][cur[t]] < x) cur[t]++;
            if (cur[t] == len[t] || l[t][cur[t]] != x) break;
        }
        if (t == n) out[m++] = x;
    }
    return m;
}

/* Reads the candidates back and compares every query with merge_and; *ok 1 when all match.
 * *found: candidates over the batch. */
static cls_status icheck(const clx_queue *q, const iset *d, int *ok, uint64_t *found)
{
    const icase *c = &d->c;
    uint32_t *count = d->got, *cand = d->got + c->nq;
    CLX_TRY(clEnqueueReadBuffer(q->q, d->d_ncand, CL_TRUE, 0, (size_t)c->nq * 4, count, 0, NULL, NULL));
    CLX_TRY(clEnqueueReadBuffer(q->q, d->d_cand, CL_TRUE, 0, (size_t)c->nq * c->s * 4, cand, 0, NULL, NULL));
    uint32_t *want = malloc((size_t)c->s * 4);
    if (!want) return err_set(CLS_E_NOMEM, "out of memory for the check");
    *ok = 1, *found = 0;
    for (uint32_t i = 0; i < c->nq && *ok; i++) {
        const uint32_t *lists[MAX_TERMS], *base = d->docs + i * d->perq;
        uint32_t lens[MAX_TERMS];
        for (uint32_t t = 0; t < c->terms; t++) {
            lists[t] = t == 0 ? base : base + c->s + (size_t)(t - 1) * d->lng;
            lens[t] = t == 0 ? c->s : d->lng;
        }
        uint32_t m = merge_and(lists, lens, c->terms, want);
        /* the query's one work unit: count[i] is its ucount */
        *ok = count[i] == m && memcmp(cand + (size_t)i * c->s, want, (size_t)m * 4) == 0;
        *found += m;
    }
    free(want);
    return CLS_OK;
}

typedef struct figs {
    double med, min, max, qps, pps, gbs;
} figs;

/* Median, min, max of reps times (sorted in place) and the rates they give. */
static figs ifigures(const iset *d, double *t, unsigned reps)
{
    bench_sort(t, reps);
    figs f = {t[reps / 2], t[0], t[reps - 1], 0, 0, 0};
    double postings = (double)d->ndocs;
    f.qps = d->c.nq / f.med;
    f.pps = postings / f.med;
    f.gbs = 4.0 * postings / f.med * 1e-9;
    return f;
}

/* One variant on a made set: the timed runs, then the check. */
static cls_status measure(const clx_queue *q, cl_kernel k, unsigned wg, iset *d, unsigned reps, double *t, int *ok,
                          uint64_t *found)
{
    cls_status s = irun(q, k, wg, d, reps, t);
    if (s == CLS_OK) s = icheck(q, d, ok, found);
    return s;
}

int bench_intersect_time(const clx_queue *q, const clx_params *p, uint32_t nq, uint32_t s, uint32_t ratio,
                         unsigned reps, double *median_s)
{
    unsigned wg = p->wg_intersect;
    icase c = {nq, s, ratio, 2, 0.5};
    iset d;
    char why[256];
    cl_program prog = NULL;
    cl_kernel k = NULL;
    double *t = NULL;
    int ok = 0;
    uint64_t found;
    cls_status st = CLS_OK;
    if (!nq || !s || !ratio || !reps) {
        fprintf(stderr, "bench_intersect_time: batch, short, ratio and repeats must be at least 1\n");
        return 1;
    }
    if ((st = clx_params_check(&q->dev.info, p, "bench_intersect_time")) != CLS_OK) return failed(st, "parameters");
    if (iset_plan(q, &c, (uint64_t)TUNE_MIB << 20, &d, why, sizeof why)) {
        fprintf(stderr, "bench_intersect_time: batch %u, short %u, ratio %u: %s\n", nq, s, ratio, why);
        return 1;
    }
    if (!(t = malloc(reps * sizeof *t))) st = err_set(CLS_E_NOMEM, "out of memory");
    if (st == CLS_OK) st = ibuild(q, wg, p->wg_scan_algo, &prog, &k);
    if (st == CLS_OK) st = iset_make(q, &d);
    if (st == CLS_OK) st = measure(q, k, wg, &d, reps, t, &ok, &found);
    if (st == CLS_OK && ok) *median_s = ifigures(&d, t, reps).med;
    iset_free(&d);
    if (k) clReleaseKernel(k);
    if (prog) clReleaseProgram(prog);
    free(t);
    if (st != CLS_OK) return failed(st, "bench_intersect_time");
    if (!ok) fprintf(stderr, "bench_intersect_time: wg %u: the device's intersection differs from the host's\n", wg);
    return !ok;
}

/* ---- The suite ------------------------------------------------------------------------ */

typedef struct iopts {
    const char *devices, *json_path;
    uint32_t terms[MAX_VALS], shorts[MAX_VALS], ratios[MAX_VALS], batch[MAX_VALS], wg[MAX_VALS];
    unsigned nterms, nshort, nratio, nbatch, nwg, reps;
    uint64_t cap;
    double share, ceiling;
} iopts;

/* 0, or 2 after the usage message. */
static int iparse(int argc, char **argv, iopts *o)
{
    static const struct option longs[] = {
        {"json", required_argument, 0, 'j'},  {"terms", required_argument, 0, 't'},
        {"short", required_argument, 0, 's'}, {"ratios", required_argument, 0, 'a'},
        {"batch", required_argument, 0, 'b'}, {"share", required_argument, 0, 'h'},
        {"wg", required_argument, 0, 'w'},    {"mib", required_argument, 0, 'm'},
        {"ceiling", required_argument, 0, 'g'}, {0, 0, 0, 0}};
    const char *terms = "2", *shorts = "1000,10000", *ratios = "1,10,100,1000", *batch = "1,64,1024,16384",
               *wg = "64,128,256,512";
    uint32_t one[1];
    int c, bad = 0;
    *o = (iopts){.devices = "auto", .reps = 10, .cap = (uint64_t)DEFAULT_MIB << 20, .share = 0.5, .ceiling = 2800};
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:r:", longs, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd': o->devices = optarg; break;
        case 'r':
            if (bench_parse_list(optarg, 1, 10000, one, 1)) o->reps = one[0];
            else bad = 1;
            break;
        case 'j': o->json_path = optarg; break;
        case 't': terms = optarg; break;
        case 's': shorts = optarg; break;
        case 'a': ratios = optarg; break;
        case 'b': batch = optarg; break;
        case 'w': wg = optarg; break;
        case 'm':
            if (bench_parse_list(optarg, 1, 1 << 22, one, 1)) o->cap = (uint64_t)one[0] << 20;
            else bad = 1;
            break;
        case 'h': o->share = strtod(optarg, &end), bad |= *end || !(o->share >= 0 && o->share <= 1); break;
        case 'g': o->ceiling = strtod(optarg, &end), bad |= *end || !(o->ceiling > 0); break;
        default: bad = 1;
        }
    }
    bad |= !(o->nterms = bench_parse_list(terms, 2, MAX_TERMS, o->terms, MAX_VALS));
    bad |= !(o->nshort = bench_parse_list(shorts, 1, MAX_LONG, o->shorts, MAX_VALS));
    bad |= !(o->nratio = bench_parse_list(ratios, 1, MAX_LONG, o->ratios, MAX_VALS));
    bad |= !(o->nbatch = bench_parse_list(batch, 1, 1 << 24, o->batch, MAX_VALS));
    bad |= !(o->nwg = bench_parse_list(wg, 1, 1 << 16, o->wg, MAX_VALS));
    for (unsigned i = 0; i < o->nwg; i++) bad |= (o->wg[i] & (o->wg[i] - 1)) != 0;
    if (bad || optind != argc) {
        fputs(USAGE, stderr);
        return 2;
    }
    return 0;
}

static void iprint(const char *dev, unsigned wg, const iset *d, const figs *f, double ceiling, int ok)
{
    const icase *c = &d->c;
    printf("%-6s %4u %2u %6u %7u %6u %10.3f %10.3f %10.3f %12.0f %8.3f %8.2f %6.2f%% %8.3f %6u %s\n", dev, wg, c->terms,
           c->nq, c->s, c->ratio, f->med * 1e3, f->min * 1e3, f->max * 1e3, f->qps, f->pps * 1e-9, f->gbs,
           100.0 * f->gbs / ceiling, d->upload_s * 1e3, d->copies, ok ? "ok" : "WRONG");
    fflush(stdout);
}

static void ijson(FILE *json, const clx_queue *q, unsigned wg, unsigned scan_algo, const iset *d, const figs *f,
                  unsigned reps, double ceiling, uint64_t found, int ok)
{
    const icase *c = &d->c;
    fprintf(json,
            "{\"suite\":\"intersect\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
            "\"variant\":\"wg%u\",\"wg\":%u,\"wg_scan_algo\":%u,\"terms\":%u,\"batch\":%u,\"short\":%u,\"ratio\":%u,\"long\":%u,"
            "\"share\":%.4f,\"candidates\":%llu,\"postings\":%llu,\"set_bytes\":%llu,\"copies\":%u,\"repeats\":%u,"
            "\"median_s\":%.9f,\"min_s\":%.9f,\"max_s\":%.9f,\"upload_s\":%.9f,\"queries_per_s\":%.3f,"
            "\"postings_per_s\":%.6e,\"gbytes_per_s\":%.4f,\"bytes_counted\":\"4 x every posting of the lists\","
            "\"ceiling_gbytes_per_s\":%.1f,\"ceiling_fraction\":%.6f,\"check\":\"%s\"}\n",
            bench_commit(), bench_when(), q->dev.info.name, q->dev.info.driver_version, wg, wg, scan_algo, c->terms, c->nq, c->s,
            c->ratio, d->lng, c->share, (unsigned long long)found, (unsigned long long)d->ndocs,
            (unsigned long long)d->set_bytes, d->copies, reps, f->med, f->min, f->max, d->upload_s, f->qps, f->pps,
            f->gbs, ceiling, f->gbs / ceiling, ok ? "ok" : "wrong");
    fflush(json);
}

/* Every configuration on one open device; 0, 1 after a failure or a wrong result. */
static int idevice(const char *spec, const clx_queue *q, const iopts *o, FILE *json, double *t)
{
    cl_program prog[MAX_VALS] = {0};
    cl_kernel ker[MAX_VALS] = {0};
    unsigned wgs[MAX_VALS], nwg = 0;
    int rc = 0;
    clx_params prm; /* the engine's parameters on this device: the in-group scan comes from them */
    cls_status s = clx_params_for(&q->dev.info, &prm);
    if (s == CLS_OK)
        printf("# %s: %s; WG_SCAN_ALGO=%u (%s) from %s\n", spec, q->dev.info.name, prm.wg_scan_algo,
               clx_scan_algo_name(prm.wg_scan_algo), prm.source);
    for (unsigned i = 0; i < o->nwg && s == CLS_OK; i++) {
        if (o->wg[i] > q->dev.info.max_work_group || (prm.wg_scan_algo == 2 && (o->wg[i] < 32 || o->wg[i] > 1024))) {
            printf("# %s: skip wg %u: the device's work-groups hold at most %zu%s\n", spec, o->wg[i],
                   q->dev.info.max_work_group, prm.wg_scan_algo == 2 ? " (the warp scan: 32..1024)" : "");
            continue;
        }
        wgs[nwg] = o->wg[i];
        s = ibuild(q, o->wg[i], prm.wg_scan_algo, &prog[nwg], &ker[nwg]);
        if (s == CLS_OK) nwg++;
    }
    for (unsigned a = 0; a < o->nterms && s == CLS_OK; a++)
        for (unsigned b = 0; b < o->nbatch && s == CLS_OK; b++)
            for (unsigned e = 0; e < o->nshort && s == CLS_OK; e++)
                for (unsigned g = 0; g < o->nratio && s == CLS_OK; g++) {
                    icase c = {o->batch[b], o->shorts[e], o->ratios[g], o->terms[a], o->share};
                    iset d;
                    char why[256];
                    if (iset_plan(q, &c, o->cap, &d, why, sizeof why)) {
                        printf("# %s: skip terms %u batch %u short %u ratio %u: %s\n", spec, c.terms, c.nq, c.s,
                               c.ratio, why);
                        continue;
                    }
                    s = iset_make(q, &d);
                    for (unsigned w = 0; w < nwg && s == CLS_OK; w++) {
                        int ok;
                        uint64_t found;
                        if ((s = measure(q, ker[w], wgs[w], &d, o->reps, t, &ok, &found)) != CLS_OK) break;
                        figs f = ifigures(&d, t, o->reps);
                        iprint(spec, wgs[w], &d, &f, o->ceiling, ok);
                        if (json) ijson(json, q, wgs[w], prm.wg_scan_algo, &d, &f, o->reps, o->ceiling, found, ok);
                        if (!ok) rc = 1;
                    }
                    iset_free(&d);
                }
    for (unsigned i = 0; i < nwg; i++) clReleaseKernel(ker[i]), clReleaseProgram(prog[i]);
    if (s != CLS_OK) rc = failed(s, spec);
    return rc;
}

int bench_intersect(int argc, char **argv)
{
    iopts o;
    int rc = iparse(argc, argv, &o);
    if (rc) return rc;
    of_file jf;
    if (bench_json_open(&jf, "bench intersect", o.json_path, NULL, 0)) return 1;
    FILE *json = jf.f;
    double *t = malloc(o.reps * sizeof *t);
    char *list = strdup(o.devices);
    if (!t || !list) {
        rc = failed(CLS_E_NOMEM, "setting up");
        goto out;
    }
    printf("intersect suite: commit %s, %s; %u repeats after a warm-up; share %.2f; ceiling %.0f GB/s\n"
           "GB/s = 4 B x every posting of the lists / median (a merge's reads; binary search reads less, so it can "
           "pass the ceiling)\n",
           bench_commit(), bench_when(), o.reps, o.share, o.ceiling);
    printf("%-6s %4s %2s %6s %7s %6s %10s %10s %10s %12s %8s %8s %7s %8s %6s %s\n", "dev", "wg", "T", "batch", "short",
           "ratio", "med ms", "min ms", "max ms", "queries/s", "Gpost/s", "GB/s", "%ceil", "up ms", "copies", "check");
    for (char *sv = NULL, *spec = strtok_r(list, ",", &sv); spec; spec = strtok_r(NULL, ",", &sv)) {
        clx_queue q;
        cls_status s = clx_queue_open(spec, &q);
        if (s != CLS_OK) {
            rc = failed(s, spec);
            continue;
        }
        rc |= idevice(spec, &q, &o, json, t);
        clx_queue_close(&q);
    }
out:
    if (bench_json_close(&jf, "bench intersect")) rc = 1;
    free(t), free(list);
    return rc;
}
