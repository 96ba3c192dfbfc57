/* score suite: BM25 scoring (cl/score.cl) alone, per work-group size, on generated lists,
 * checked against plain-C sums.
 *
 *   clsearch bench score [-d DEVICES] [--mode and,or] [--terms 2] [--cands 1e3,1e4,1e5,1e6,1e7,1e8]
 *                        [--lists 1e4,1e5,1e6] [--batch 64,1024] [--wg 64,128,256,512] [-r REPEATS]
 *                        [--mib 256] [--ceiling GBPS] [--json FILE]
 *
 * and: score_and (bench/cl/score_and.cl) over CANDS candidates in all, split over BATCH queries of TERMS terms (CANDS /
 * BATCH each; configurations with fewer candidates than queries are skipped). Query q owns the
 * docIDs [4 q P, 4 (q + 1) P) for P candidates per query: in each block of 4 docIDs one is a
 * candidate, and each term's list holds it and one other docID of the block, so the lists are
 * 2 P postings, sorted and distinct, and hold every candidate. score_and looks each candidate
 * up in every list (binary search) and sums the contributions in term order.
 * or: score_or over BATCH queries of TERMS lists of LISTS postings each, into dense rows of
 * N = 4 x LISTS documents: each list holds one docID of each block of 4, so a query's lists
 * overlap at random. score_or zeroes the row, then adds one term's postings at a time.
 * Both: frequencies uniform in 1..16; norms k1 (1 - b + b dl / avgdl) (src/index/bm25.h: bm25_norm,
 * k1 0.9, b 0.4, dl uniform in 10..599, avgdl 300) per docID; weights uniform in 0.5..8 per
 * query term. A seeded PRNG (splitmix64) makes them. The inputs are laid out as the engine lays
 * out a batch (src/engine/plan.c, cl/abi.h): per query qinfo {first term, terms, candidate offset, flags},
 * per term qterm {list offset, length, weight bits, 0}; docIDs and frequencies one list after
 * another; the candidates of query q at its candidate offset, their count in ncand[q].
 *
 * Memory: one input set must fit --mib (default 256 MiB), else the configuration is skipped
 * with a note. The lists, descriptors and (and) candidates and their scores are copied on the
 * device until the copies total 256 MiB (5 x an H100's 50 MB L2; at least 2, fewer where the
 * device forbids), and run r takes copy r mod COPIES, at other offsets of the same buffers, so no
 * run finds its inputs in a cache an earlier run warmed. The norms are one array, as in the
 * engine; or's accumulator rows are one buffer, zeroed by every run. Before each variant a
 * 256 MiB scratch fill evicts what the upload and the copying left in caches.
 *
 * Timing: the upload of one set (its host-to-device writes) is timed by profiling events and
 * reported apart. Each variant runs once untimed, then REPEATS times (default 10), each timed by
 * its kernel's profiling event; median, min and max are reported.
 *
 * Figures: and: candidates/s = CANDS / median; GB/s counts CANDS x (12 + 8 TERMS) bytes, per
 * candidate its docID and norm read and its score written, and per term the matching docID and
 * its frequency read (the search probes above the match are not counted: the least any lookup
 * reads). or: postings/s = BATCH x TERMS x LISTS / median; GB/s counts BATCH x (4 N + 20 TERMS
 * LISTS) bytes, the row zeroed, and per posting its docID, frequency and norm read and its
 * accumulator read and written. The fraction is of --ceiling (default 2800 GB/s, the H100's
 * measured copy).
 *
 * Check: after each variant's last run, every candidate's score (and) or every element of every
 * row (or) is compared with a plain-C sum of bm25_contrib in term order, within 1e-5 relative
 * (zero where a row has no posting); the outputs were poisoned (NaN) before its warm-up. The
 * program is built with -cl-fp32-correctly-rounded-divide-sqrt where the device supports it, as
 * the engine builds it. Variants: --wg, work-items per query (WG_SCORE, powers of two; those
 * above the device's largest work-group are skipped with a note). */
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
#include "index/index.h"
#include "index/bm25.h"

#define ROT_BYTES ((uint64_t)256 << 20)   /* the copies of the inputs total at least this */
#define FLUSH_BYTES ((uint64_t)256 << 20) /* scratch written to evict caches */
#define MAX_COPIES 65536u
#define MAX_VALS 16 /* values of a list option */
#define MAX_TERMS 8
#define MAX_PER_QUERY (1u << 28) /* candidates or postings a query: docIDs below 2^30 */
#define DEFAULT_MIB 256u /* --mib: keeps a default run on a 2-core CPU device short */
#define TUNE_MIB 1024u   /* the largest input set the tune entry points make */
#define TOLERANCE 1e-5

static const char USAGE[] =
    "usage: clsearch bench score [-d DEVICES] [--mode and,or] [--terms 2] [--cands 1e3,1e4,1e5,1e6,1e7,1e8]\n"
    "                            [--lists 1e4,1e5,1e6] [--batch 64,1024] [--wg 64,128,256,512] [-r REPEATS]\n"
    "                            [--mib 256] [--ceiling GBPS] [--json FILE]\n"
    "  lists take 1000 or 1e3; --cands: candidates in all (and), split over the batch; --lists: postings\n"
    "  per term (or), rows of 4 x that; --terms 1..8; --mib: largest input set run\n";

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench score: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

/* Uniform in [lo, hi). */
static float uniform(uint64_t *st, float lo, float hi) { return lo + (hi - lo) * (float)(bench_rand(st) >> 40) / 16777216.0f; }

typedef struct scase {
    int or_mode;
    uint32_t nq, perq, terms; /* perq: candidates per query (and), postings per list (or) */
} scase;

/* One configuration's inputs, host and device. Sizes are in elements (4 bytes each). */
typedef struct sset {
    scase c;
    uint32_t len, ndoc;       /* postings per list; documents per query (4 perq) */
    uint64_t nlist;           /* list postings of a copy: nq x terms x len (docIDs; frequencies alike) */
    uint64_t ncand;           /* candidates of a copy: nq x perq (and), 0 (or) */
    uint64_t nnorm, nacc;     /* norms (every docID); accumulators (or: nq x ndoc) */
    uint64_t ndesc;           /* descriptors of a copy (qinfo | qterm) */
    uint64_t set_bytes, flush_bytes;
    unsigned copies;
    uint32_t *docs, *freqs, *cand, *desc; /* host: one copy; every copy's descriptors */
    float *norms, *got, *want;            /* read-back and reference: the candidates (and), a row (or) */
    cl_mem d_in, d_docs, d_freqs, d_norms, d_cand, d_ncand, d_out, d_flush; /* d_out: scores or rows */
    cl_mem d_seg; /* score_and's top-k segments (4 words a query), written and not read here */
    double upload_s;
} sset;

static uint64_t kmin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Sizes c's input set and how many copies the device holds; 0, or 1 with why filled when the
 * configuration must be skipped. */
static int sset_plan(const clx_queue *q, const scase *c, uint64_t cap, sset *d, char *why, size_t len)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    if (c->perq > MAX_PER_QUERY) {
        snprintf(why, len, "%u %s a query (at most 2^28)", c->perq, c->or_mode ? "postings" : "candidates");
        return 1;
    }
    d->len = c->or_mode ? c->perq : 2 * c->perq;
    d->ndoc = 4 * c->perq;
    d->nlist = (uint64_t)c->nq * c->terms * d->len;
    d->ncand = c->or_mode ? 0 : (uint64_t)c->nq * c->perq;
    d->nnorm = c->or_mode ? d->ndoc : (uint64_t)c->nq * d->ndoc;
    d->nacc = c->or_mode ? (uint64_t)c->nq * d->ndoc : 0;
    d->ndesc = ((uint64_t)c->nq * (sizeof(abi_query) + sizeof(abi_unit)) + (uint64_t)c->nq * c->terms * sizeof(abi_term)) / 4;
    uint64_t per_copy = 4 * (2 * d->nlist + 2 * d->ncand + d->ndesc), shared = 4 * (d->nnorm + d->nacc + c->nq);
    d->set_bytes = per_copy + shared;
    if (d->set_bytes > cap) {
        snprintf(why, len, "an input set of %.0f MiB is over --mib %llu", d->set_bytes / 1048576.0,
                 (unsigned long long)(cap >> 20));
        return 1;
    }
    if (d->nnorm > UINT32_MAX) {
        snprintf(why, len, "docIDs beyond 32 bits");
        return 1;
    }
    const cls_device_info *di = &q->dev.info;
    d->flush_bytes = kmin(FLUSH_BYTES, di->max_alloc);
    uint64_t fixed = shared + d->flush_bytes, room = di->global_mem / 2;
    uint64_t k = (ROT_BYTES + per_copy - 1) / per_copy;
    k = kmin(k < 2 ? 2 : k, MAX_COPIES);
    k = kmin(k, room > fixed ? (room - fixed) / per_copy : 0);
    k = kmin(k, kmin(di->max_alloc / (4 * d->nlist), UINT32_MAX / d->nlist));
    k = kmin(k, kmin(di->max_alloc / (4 * d->ndesc), UINT32_MAX / d->ndesc));
    if (d->ncand) k = kmin(k, kmin(di->max_alloc / (4 * d->ncand), UINT32_MAX / d->ncand));
    if (k < 1 || 4 * d->nnorm > di->max_alloc || 4 * d->nacc > di->max_alloc) {
        snprintf(why, len, "an input set of %.0f MiB does not fit the device (half its memory, buffers of %.0f MiB, "
                 "32-bit offsets)", d->set_bytes / 1048576.0, di->max_alloc / 1048576.0);
        return 1;
    }
    d->copies = (unsigned)k;
    return 0;
}

/* Query q's lists (and, if and, its candidates), as the header comment says. */
static void gen_query(uint64_t *st, const sset *d, uint32_t q)
{
    const scase *c = &d->c;
    uint32_t *docs = d->docs + (uint64_t)q * c->terms * d->len, *freqs = d->freqs + (docs - d->docs);
    if (c->or_mode) {
        for (uint32_t t = 0; t < c->terms; t++)
            for (uint32_t i = 0; i < d->len; i++) docs[t * d->len + i] = 4 * i + bench_below(st, 4);
    } else {
        uint32_t base = q * d->ndoc, *cand = d->cand + (uint64_t)q * c->perq;
        for (uint32_t i = 0; i < c->perq; i++) cand[i] = base + 4 * i + bench_below(st, 4);
        for (uint32_t t = 0; t < c->terms; t++)
            for (uint32_t i = 0; i < c->perq; i++) {
                uint32_t r = cand[i] - base - 4 * i, o = (r + 1 + bench_below(st, 3)) & 3; /* another of the block */
                uint32_t a = base + 4 * i + (r < o ? r : o), b = base + 4 * i + (r < o ? o : r);
                docs[t * d->len + 2 * i] = a;
                docs[t * d->len + 2 * i + 1] = b;
            }
    }
    for (uint64_t i = 0; i < (uint64_t)c->terms * d->len; i++) freqs[i] = 1 + bench_below(st, 16);
}

/* Copy k's descriptors, with weights w[q * terms + t]: list offsets into copy k of the lists,
 * candidate offsets into copy k of the candidates and scores. */
static void fill_desc(const sset *d, unsigned k, const uint32_t *w, uint32_t *desc)
{
    const scase *c = &d->c;
    abi_query *qinfo = (abi_query *)desc;
    abi_term *qterm = (abi_term *)(qinfo + c->nq);
    abi_unit *units = (abi_unit *)(qterm + (size_t)c->nq * c->terms); /* score_and: one work unit a query */
    for (uint32_t q = 0; q < c->nq; q++) {
        units[q] = (abi_unit){.query = q, .begin = 0, .end = c->or_mode ? 0 : c->perq, .first_unit = q};
        qinfo[q] = (abi_query){.term_start = q * c->terms, .num_terms = c->terms,
                               .cand_offset = c->or_mode ? 0 : (uint32_t)(k * d->ncand + (uint64_t)q * c->perq)};
        for (uint32_t t = 0; t < c->terms; t++) {
            uint32_t j = q * c->terms + t;
            float wf;
            memcpy(&wf, &w[j], 4);
            qterm[j] = (abi_term){.list_offset = (uint32_t)(k * d->nlist + (uint64_t)j * d->len), .df = d->len, .weight = wf};
        }
    }
}



static void sset_free(sset *d)
{
    cl_mem m[] = {d->d_in, d->d_docs, d->d_freqs, d->d_norms, d->d_cand, d->d_ncand, d->d_out, d->d_flush, d->d_seg};
    for (unsigned i = 0; i < sizeof m / sizeof *m; i++)
        if (m[i]) clReleaseMemObject(m[i]);
    free(d->docs), free(d->freqs), free(d->cand), free(d->desc), free(d->norms), free(d->got), free(d->want);
    scase c = d->c;
    memset(d, 0, sizeof *d);
    d->c = c;
}

/* Generates the planned set, uploads one copy (timed) and fills the others on the device. */
static cls_status sset_make(const clx_queue *q, sset *d)
{
    const scase *c = &d->c;
    uint64_t nout = c->or_mode ? d->ndoc : d->ncand, nw = (uint64_t)c->nq * c->terms;
    uint32_t *w = malloc(nw * 4), *ncand = malloc((size_t)c->nq * 4);
    d->docs = malloc(d->nlist * 4);
    d->freqs = malloc(d->nlist * 4);
    d->cand = malloc(d->ncand ? d->ncand * 4 : 4);
    d->desc = malloc(d->copies * d->ndesc * 4);
    d->norms = malloc(d->nnorm * 4);
    d->got = malloc(nout * 4);
    d->want = malloc(nout * 4);
    cls_status s = CLS_OK;
    if (!w || !ncand || !d->docs || !d->freqs || !d->cand || !d->desc || !d->norms || !d->got || !d->want) {
        s = err_set(CLS_E_NOMEM, "out of memory for the inputs");
        goto out;
    }
    uint64_t st = 0x5C0E5ull ^ ((uint64_t)c->nq << 40) ^ ((uint64_t)c->perq << 8) ^ ((uint64_t)c->terms << 60) ^
                  (uint64_t)c->or_mode;
    for (uint32_t i = 0; i < c->nq; i++) gen_query(&st, d, i);
    for (uint64_t i = 0; i < d->nnorm; i++) d->norms[i] = bm25_norm(0.9f, 0.4f, 10 + bench_below(&st, 590), 300.0);
    for (uint64_t i = 0; i < nw; i++) {
        float x = uniform(&st, 0.5f, 8.0f);
        memcpy(&w[i], &x, 4);
    }
    for (unsigned k = 0; k < d->copies; k++) fill_desc(d, k, w, d->desc + k * d->ndesc);
    for (uint32_t i = 0; i < c->nq; i++) ncand[i] = c->or_mode ? 0 : c->perq;
    uint64_t nlb = d->nlist * 4, ncb = d->ncand * 4, ndb = d->ndesc * 4;
    if ((s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * ndb, &d->d_in)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * nlb, &d->d_docs)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * nlb, &d->d_freqs)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, d->nnorm * 4, &d->d_norms)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, d->copies * ncb, &d->d_cand)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_ONLY, (uint64_t)c->nq * 4, &d->d_ncand)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, c->or_mode ? d->nacc * 4 : d->copies * ncb, &d->d_out)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, d->flush_bytes, &d->d_flush)) != CLS_OK ||
        (s = bench_buf(q, CL_MEM_READ_WRITE, (uint64_t)c->nq * 16, &d->d_seg)) != CLS_OK)
        goto out;
    d->upload_s = 0;
    if ((s = bench_write(q, d->d_in, 0, ndb, d->desc, &d->upload_s)) != CLS_OK ||
        (s = bench_write(q, d->d_docs, 0, nlb, d->docs, &d->upload_s)) != CLS_OK ||
        (s = bench_write(q, d->d_freqs, 0, nlb, d->freqs, &d->upload_s)) != CLS_OK ||
        (s = bench_write(q, d->d_norms, 0, d->nnorm * 4, d->norms, &d->upload_s)) != CLS_OK ||
        (s = bench_write(q, d->d_ncand, 0, (uint64_t)c->nq * 4, ncand, &d->upload_s)) != CLS_OK ||
        (ncb && (s = bench_write(q, d->d_cand, 0, ncb, d->cand, &d->upload_s)) != CLS_OK))
        goto out;
    if (d->copies > 1 &&
        (s = bench_write(q, d->d_in, ndb, (d->copies - 1) * ndb, d->desc + d->ndesc, NULL)) != CLS_OK)
        goto out;
    if ((s = bench_replicate(q, d->d_docs, nlb, d->copies)) != CLS_OK ||
        (s = bench_replicate(q, d->d_freqs, nlb, d->copies)) != CLS_OK ||
        (ncb && (s = bench_replicate(q, d->d_cand, ncb, d->copies)) != CLS_OK))
        goto out;
out:
    free(w), free(ncand);
    return s;
}

/* score_and and score_or built for work-groups of wg (k[0], k[1]). */
static cls_status sbuild(const clx_queue *q, unsigned wg, cl_program *prog, cl_kernel k[2])
{
    static const char *const files[] = {"and.cl", "score_and.cl", "or.cl", NULL}; /* bench/cl: score_and */
    static const char *const names[2] = {"score_and", "score_or"};
    char opts[128], note[4400];
    double secs;
    int cached;
    k[0] = k[1] = NULL;
    /* built as the engine builds it, so scores match the reference to the bit */
    snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DWG_SCORE=%u%s", wg,
             clx_correct_div(q->dev.device) ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    cls_status s = clx_build_ex(q->ctx, &q->dev, bench_kernels, files, opts, prog, &secs, &cached, note, sizeof note);
    for (int i = 0; i < 2 && s == CLS_OK; i++) {
        cl_int err;
        k[i] = clCreateKernel(*prog, names[i], &err);
        if (!k[i] || err != CL_SUCCESS) s = err_wrap(clx_fail("clCreateKernel", err), "%s: ", names[i]);
    }
    if (s != CLS_OK) {
        for (int i = 0; i < 2; i++)
            if (k[i]) clReleaseKernel(k[i]);
        if (*prog) clReleaseProgram(*prog);
        *prog = NULL, k[0] = k[1] = NULL;
    }
    return s;
}

/* One variant: poisons the outputs, evicts caches, runs once untimed and reps times timed
 * (times[r]), run r on copy r mod copies. k: score_and or score_or, as the set's mode. */
static cls_status srun(const clx_queue *q, cl_kernel k, unsigned wg, const sset *d, unsigned reps, double *times)
{
    const scase *c = &d->c;
    const char *name = c->or_mode ? "score_or" : "score_and";
    cls_status s;
    uint64_t out_bytes = 4 * (c->or_mode ? d->nacc : d->copies * d->ncand);
    if ((s = bench_fill(q, d->d_out, 0x7FC00000u, out_bytes)) != CLS_OK || /* quiet NaN */
        (s = bench_fill(q, d->d_flush, 0, d->flush_bytes)) != CLS_OK)
        return s;
    CLX_TRY(clFinish(q->q));
    CLX_TRY(clSetKernelArg(k, 0, sizeof(cl_mem), &d->d_in));
    CLX_TRY(clSetKernelArg(k, 3, sizeof(cl_mem), &d->d_docs));
    CLX_TRY(clSetKernelArg(k, 4, sizeof(cl_mem), &d->d_freqs));
    CLX_TRY(clSetKernelArg(k, 5, sizeof(cl_mem), &d->d_norms));
    if (c->or_mode) {
        cl_uint n = d->ndoc;
        CLX_TRY(clSetKernelArg(k, 6, sizeof n, &n));
        CLX_TRY(clSetKernelArg(k, 7, sizeof(cl_mem), &d->d_out));
    } else {
        CLX_TRY(clSetKernelArg(k, 6, sizeof(cl_mem), &d->d_cand));
        CLX_TRY(clSetKernelArg(k, 7, sizeof(cl_mem), &d->d_ncand));
        CLX_TRY(clSetKernelArg(k, 8, sizeof(cl_mem), &d->d_out));
        /* block skipping's arguments: no term here skips (abi_term.skip 0), so any buffer will do */
        cl_uint no_skips = 0;
        CLX_TRY(clSetKernelArg(k, 9, sizeof no_skips, &no_skips));
        for (cl_uint i = 10; i <= 12; i++) CLX_TRY(clSetKernelArg(k, i, sizeof(cl_mem), &d->d_ncand));
    }
    size_t local = wg, global = (size_t)c->nq * wg;
    for (unsigned r = 0; r <= reps; r++) { /* r = 0: the warm-up */
        cl_uint qinfo_base = (cl_uint)((r % d->copies) * d->ndesc), qterm_base = qinfo_base + c->nq * (cl_uint)(sizeof(abi_query) / 4);
        CLX_TRY(clSetKernelArg(k, 1, sizeof qinfo_base, &qinfo_base));
        CLX_TRY(clSetKernelArg(k, 2, sizeof qterm_base, &qterm_base));
        if (!c->or_mode) {
            cl_uint units_base = qterm_base + c->nq * c->terms * (cl_uint)(sizeof(abi_term) / 4);
            CLX_TRY(clSetKernelArg(k, 13, sizeof units_base, &units_base));
            /* one work unit a query, whose count is the query's (ncand); packed candidates land
             * where they are, as the same values */
            cl_uint nunits = c->nq;
            CLX_TRY(clSetKernelArg(k, 14, sizeof nunits, &nunits));
            CLX_TRY(clSetKernelArg(k, 15, sizeof(cl_mem), &d->d_ncand));
            CLX_TRY(clSetKernelArg(k, 16, sizeof(cl_mem), &d->d_cand));
            cl_mem qseg = d->d_seg; /* both segment arrays in one scratch buffer: they are not read */
            cl_uint kk = 1;
            CLX_TRY(clSetKernelArg(k, 17, sizeof(cl_mem), &d->d_seg));
            CLX_TRY(clSetKernelArg(k, 18, sizeof(cl_mem), &qseg));
            CLX_TRY(clSetKernelArg(k, 19, sizeof kk, &kk));
        }
        cl_event ev;
        CLX_TRY(clEnqueueNDRangeKernel(q->q, k, 1, NULL, &global, &local, 0, NULL, &ev));
        cl_int err = clWaitForEvents(1, &ev);
        double t = clx_event_span(ev, ev);
        clReleaseEvent(ev);
        if (err != CL_SUCCESS) return err_wrap(clx_fail("clWaitForEvents", err), "%s: ", name);
        if (r > 0 && !(t > 0)) return err_set(CLS_E_OPENCL, "%s: no profiling time", name);
        if (r > 0) times[r - 1] = t;
    }
    return CLS_OK;
}

/* First position in sorted a[0..n) whose value is >= key (the host's own, for the reference). */
static uint32_t host_lower_bound(const uint32_t *a, uint32_t n, uint32_t key)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static float weight(const sset *d, uint32_t q, uint32_t t)
{
    const abi_term *qterm = (const abi_term *)((const abi_query *)d->desc + d->c.nq);
    return qterm[(size_t)q * d->c.terms + t].weight;
}

/* Whether got is want within the tolerance (exactly, where want is 0; never a NaN). */
static int close_to(float got, float want)
{
    double diff = (double)got - (double)want;
    return (diff < 0 ? -diff : diff) <= TOLERANCE * (want < 0 ? -want : want);
}

/* Reference scores of query q's candidates into d->want (and). */
static void ref_and(const sset *d, uint32_t q, float *want)
{
    const scase *c = &d->c;
    const uint32_t *cand = d->cand + (uint64_t)q * c->perq, *docs = d->docs + (uint64_t)q * c->terms * d->len;
    const uint32_t *freqs = d->freqs + (docs - d->docs);
    for (uint32_t i = 0; i < c->perq; i++) {
        float s = 0.0f;
        for (uint32_t t = 0; t < c->terms; t++) {
            const uint32_t *l = docs + (size_t)t * d->len;
            uint32_t p = host_lower_bound(l, d->len, cand[i]);
            s += bm25_contrib(weight(d, q, t), freqs[(size_t)t * d->len + p], d->norms[cand[i]]);
        }
        want[i] = s;
    }
}

/* Reference row of query q into row (or). */
static void ref_or(const sset *d, uint32_t q, float *row)
{
    const scase *c = &d->c;
    const uint32_t *docs = d->docs + (uint64_t)q * c->terms * d->len, *freqs = d->freqs + (docs - d->docs);
    memset(row, 0, (size_t)d->ndoc * 4);
    for (uint32_t t = 0; t < c->terms; t++) {
        float w = weight(d, q, t);
        for (uint32_t i = 0; i < d->len; i++) {
            uint32_t x = docs[(size_t)t * d->len + i];
            row[x] += bm25_contrib(w, freqs[(size_t)t * d->len + i], d->norms[x]);
        }
    }
}

/* Reads back what the last of reps runs wrote and compares it with the reference, query by
 * query; *ok 1 when all match. */
static cls_status scheck(const clx_queue *q, const sset *d, unsigned reps, int *ok)
{
    const scase *c = &d->c;
    *ok = 1;
    if (!c->or_mode) {
        size_t off = (size_t)(reps % d->copies) * d->ncand * 4;
        CLX_TRY(clEnqueueReadBuffer(q->q, d->d_out, CL_TRUE, off, (size_t)d->ncand * 4, d->got, 0, NULL, NULL));
    }
    for (uint32_t i = 0; i < c->nq && *ok; i++) {
        const float *got = d->got;
        if (c->or_mode) {
            CLX_TRY(clEnqueueReadBuffer(q->q, d->d_out, CL_TRUE, (size_t)i * d->ndoc * 4, (size_t)d->ndoc * 4,
                                        d->got, 0, NULL, NULL));
            ref_or(d, i, d->want);
        } else {
            got += (size_t)i * c->perq;
            ref_and(d, i, d->want);
        }
        uint32_t n = c->or_mode ? d->ndoc : c->perq;
        for (uint32_t j = 0; j < n && *ok; j++) *ok = close_to(got[j], d->want[j]);
    }
    return CLS_OK;
}

typedef struct figs {
    double med, min, max, items, rate, gbs; /* items: candidates (and), postings (or) */
} figs;

/* Median, min, max of reps times (sorted in place) and the rates they give. */
static figs sfigures(const sset *d, double *t, unsigned reps)
{
    const scase *c = &d->c;
    bench_sort(t, reps);
    figs f = {t[reps / 2], t[0], t[reps - 1], 0, 0, 0};
    double bytes;
    if (c->or_mode) {
        f.items = (double)d->nlist;
        bytes = (double)c->nq * (4.0 * d->ndoc + 20.0 * c->terms * d->len);
    } else {
        f.items = (double)d->ncand;
        bytes = (double)d->ncand * (12.0 + 8.0 * c->terms);
    }
    f.rate = f.items / f.med;
    f.gbs = bytes / f.med * 1e-9;
    return f;
}

int bench_score_time(const clx_queue *q, const clx_params *p, int or_mode, uint32_t nq, uint32_t per_query,
                     unsigned reps, double *median_s)
{
    unsigned wg = p->wg_score;
    scase c = {or_mode != 0, nq, per_query, 2};
    sset d;
    char why[256];
    cl_program prog = NULL;
    cl_kernel k[2] = {NULL, NULL};
    double *t = NULL;
    int ok = 0;
    cls_status st = CLS_OK;
    if (!nq || !per_query || !reps) {
        fprintf(stderr, "bench_score_time: batch, per-query size and repeats must be at least 1\n");
        return 1;
    }
    if ((st = clx_params_check(&q->dev.info, p, "bench_score_time")) != CLS_OK) return failed(st, "parameters");
    if (sset_plan(q, &c, (uint64_t)TUNE_MIB << 20, &d, why, sizeof why)) {
        fprintf(stderr, "bench_score_time: %s, batch %u, %u a query: %s\n", or_mode ? "or" : "and", nq, per_query, why);
        return 1;
    }
    if (!(t = malloc(reps * sizeof *t))) st = err_set(CLS_E_NOMEM, "out of memory");
    if (st == CLS_OK) st = sbuild(q, wg, &prog, k);
    if (st == CLS_OK) st = sset_make(q, &d);
    if (st == CLS_OK) st = srun(q, k[c.or_mode], wg, &d, reps, t);
    if (st == CLS_OK) st = scheck(q, &d, reps, &ok);
    if (st == CLS_OK && ok) *median_s = sfigures(&d, t, reps).med;
    sset_free(&d);
    for (int i = 0; i < 2; i++)
        if (k[i]) clReleaseKernel(k[i]);
    if (prog) clReleaseProgram(prog);
    free(t);
    if (st != CLS_OK) return failed(st, "bench_score_time");
    if (!ok) fprintf(stderr, "bench_score_time: wg %u: the device's scores differ from the host's\n", wg);
    return !ok;
}

/* ---- The suite ------------------------------------------------------------------------ */

typedef struct sopts {
    const char *devices, *json_path;
    int modes[2];
    uint32_t terms[MAX_VALS], cands[MAX_VALS], lists[MAX_VALS], batch[MAX_VALS], wg[MAX_VALS];
    unsigned nmodes, nterms, ncands, nlists, nbatch, nwg, reps;
    uint64_t cap;
    double ceiling;
} sopts;

/* The modes of "and,or" into o; 0 if malformed. */
static int parse_modes(const char *arg, sopts *o)
{
    o->nmodes = 0;
    for (const char *p = arg; *p;) {
        size_t n = strcspn(p, ",");
        int m = n == 3 && strncmp(p, "and", 3) == 0 ? 0 : n == 2 && strncmp(p, "or", 2) == 0 ? 1 : -1;
        if (m < 0 || o->nmodes == 2) return 0;
        o->modes[o->nmodes++] = m;
        p += n + (p[n] == ',');
    }
    return o->nmodes > 0;
}

/* 0, or 2 after the usage message. */
static int sparse(int argc, char **argv, sopts *o)
{
    static const struct option longs[] = {
        {"json", required_argument, 0, 'j'},  {"mode", required_argument, 0, 'o'},
        {"terms", required_argument, 0, 't'}, {"cands", required_argument, 0, 'c'},
        {"lists", required_argument, 0, 'l'}, {"batch", required_argument, 0, 'b'},
        {"wg", required_argument, 0, 'w'},    {"mib", required_argument, 0, 'm'},
        {"ceiling", required_argument, 0, 'g'}, {0, 0, 0, 0}};
    const char *modes = "and,or", *terms = "2", *cands = "1e3,1e4,1e5,1e6,1e7,1e8", *lists = "1e4,1e5,1e6",
               *batch = "64,1024", *wg = "64,128,256,512";
    uint32_t one[1];
    int c, bad = 0;
    *o = (sopts){.devices = "auto", .reps = 10, .cap = (uint64_t)DEFAULT_MIB << 20, .ceiling = 2800};
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
        case 'o': modes = optarg; break;
        case 't': terms = optarg; break;
        case 'c': cands = optarg; break;
        case 'l': lists = optarg; break;
        case 'b': batch = optarg; break;
        case 'w': wg = optarg; break;
        case 'm':
            if (bench_parse_list(optarg, 1, 1 << 22, one, 1)) o->cap = (uint64_t)one[0] << 20;
            else bad = 1;
            break;
        case 'g': o->ceiling = strtod(optarg, &end), bad |= *end || !(o->ceiling > 0); break;
        default: bad = 1;
        }
    }
    bad |= !parse_modes(modes, o);
    bad |= !(o->nterms = bench_parse_list(terms, 1, MAX_TERMS, o->terms, MAX_VALS));
    bad |= !(o->ncands = bench_parse_list(cands, 1, UINT32_MAX, o->cands, MAX_VALS));
    bad |= !(o->nlists = bench_parse_list(lists, 1, MAX_PER_QUERY, o->lists, MAX_VALS));
    bad |= !(o->nbatch = bench_parse_list(batch, 1, 1 << 24, o->batch, MAX_VALS));
    bad |= !(o->nwg = bench_parse_list(wg, 1, 1 << 16, o->wg, MAX_VALS));
    for (unsigned i = 0; i < o->nwg; i++) bad |= (o->wg[i] & (o->wg[i] - 1)) != 0;
    if (bad || optind != argc) {
        fputs(USAGE, stderr);
        return 2;
    }
    return 0;
}

static void sprint(const char *dev, unsigned wg, const sset *d, const figs *f, double ceiling, int ok)
{
    const scase *c = &d->c;
    printf("%-6s %-4s %4u %2u %6u %9u %11.0f %10.3f %10.3f %10.3f %9.4f %8.2f %6.2f%% %8.3f %6u %s\n", dev,
           c->or_mode ? "or" : "and", wg, c->terms, c->nq, c->perq, f->items, f->med * 1e3, f->min * 1e3, f->max * 1e3,
           f->rate * 1e-9, f->gbs, 100.0 * f->gbs / ceiling, d->upload_s * 1e3, d->copies, ok ? "ok" : "WRONG");
    fflush(stdout);
}

static void sjson(FILE *json, const clx_queue *q, unsigned wg, const sset *d, const figs *f, unsigned reps,
                  double ceiling, int ok)
{
    const scase *c = &d->c;
    fprintf(json,
            "{\"suite\":\"score\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%s\",\"driver\":\"%s\","
            "\"variant\":\"wg%u\",\"mode\":\"%s\",\"wg\":%u,\"terms\":%u,\"batch\":%u,\"per_query\":%u,"
            "\"list_len\":%u,\"docs_per_query\":%u,\"items\":\"%s\",\"count\":%.0f,\"set_bytes\":%llu,\"copies\":%u,"
            "\"repeats\":%u,\"median_s\":%.9f,\"min_s\":%.9f,\"max_s\":%.9f,\"upload_s\":%.9f,\"items_per_s\":%.6e,"
            "\"gbytes_per_s\":%.4f,\"bytes_counted\":\"%s\",\"ceiling_gbytes_per_s\":%.1f,\"ceiling_fraction\":%.6f,"
            "\"check\":\"%s\"}\n",
            bench_commit(), bench_when(), q->dev.info.name, q->dev.info.driver_version, wg,
            c->or_mode ? "or" : "and", wg, c->terms, c->nq, c->perq, d->len, d->ndoc,
            c->or_mode ? "postings" : "candidates", f->items, (unsigned long long)d->set_bytes, d->copies, reps,
            f->med, f->min, f->max, d->upload_s, f->rate, f->gbs,
            c->or_mode ? "batch x (4 x docs + 20 x postings)" : "candidates x (12 + 8 x terms)", ceiling,
            f->gbs / ceiling, ok ? "ok" : "wrong");
    fflush(json);
}

/* The configurations of one mode and term count; per size in sizes (candidates in all for and,
 * postings per list for or) and batch, every built variant. */
static cls_status smode(const char *spec, const clx_queue *q, const sopts *o, int or_mode, uint32_t terms,
                        cl_kernel (*ker)[2], const unsigned *wgs, unsigned nwg, FILE *json, double *t, int *rc)
{
    const uint32_t *sizes = or_mode ? o->lists : o->cands;
    unsigned nsizes = or_mode ? o->nlists : o->ncands;
    cls_status s = CLS_OK;
    for (unsigned b = 0; b < o->nbatch && s == CLS_OK; b++)
        for (unsigned z = 0; z < nsizes && s == CLS_OK; z++) {
            uint32_t nq = o->batch[b], perq = or_mode ? sizes[z] : sizes[z] / nq;
            const char *mode = or_mode ? "or" : "and";
            char why[256];
            scase c = {or_mode, nq, perq, terms};
            sset d;
            if (!perq) {
                printf("# %s: skip and terms %u batch %u cands %u: fewer candidates than queries\n", spec, terms, nq,
                       sizes[z]);
                continue;
            }
            if (sset_plan(q, &c, o->cap, &d, why, sizeof why)) {
                printf("# %s: skip %s terms %u batch %u %s %u: %s\n", spec, mode, terms, nq, or_mode ? "lists" : "cands",
                       sizes[z], why);
                continue;
            }
            s = sset_make(q, &d);
            for (unsigned w = 0; w < nwg && s == CLS_OK; w++) {
                int ok;
                if ((s = srun(q, ker[w][or_mode], wgs[w], &d, o->reps, t)) != CLS_OK ||
                    (s = scheck(q, &d, o->reps, &ok)) != CLS_OK)
                    break;
                figs f = sfigures(&d, t, o->reps);
                sprint(spec, wgs[w], &d, &f, o->ceiling, ok);
                if (json) sjson(json, q, wgs[w], &d, &f, o->reps, o->ceiling, ok);
                if (!ok) *rc = 1;
            }
            sset_free(&d);
        }
    return s;
}

/* Every configuration on one open device; 0, 1 after a failure or a wrong result. */
static int sdevice(const char *spec, const clx_queue *q, const sopts *o, FILE *json, double *t)
{
    cl_program prog[MAX_VALS] = {0};
    cl_kernel ker[MAX_VALS][2] = {{0}};
    unsigned wgs[MAX_VALS], nwg = 0;
    int rc = 0;
    cls_status s = CLS_OK;
    for (unsigned i = 0; i < o->nwg && s == CLS_OK; i++) {
        if (o->wg[i] > q->dev.info.max_work_group) {
            printf("# %s: skip wg %u: the device's work-groups hold at most %zu\n", spec, o->wg[i],
                   q->dev.info.max_work_group);
            continue;
        }
        wgs[nwg] = o->wg[i];
        s = sbuild(q, o->wg[i], &prog[nwg], ker[nwg]);
        if (s == CLS_OK) nwg++;
    }
    for (unsigned m = 0; m < o->nmodes && s == CLS_OK; m++)
        for (unsigned a = 0; a < o->nterms && s == CLS_OK; a++)
            s = smode(spec, q, o, o->modes[m], o->terms[a], ker, wgs, nwg, json, t, &rc);
    for (unsigned i = 0; i < nwg; i++) clReleaseKernel(ker[i][0]), clReleaseKernel(ker[i][1]), clReleaseProgram(prog[i]);
    if (s != CLS_OK) rc = failed(s, spec);
    return rc;
}

int bench_score(int argc, char **argv)
{
    sopts o;
    int rc = sparse(argc, argv, &o);
    if (rc) return rc;
    of_file jf;
    if (bench_json_open(&jf, "bench score", o.json_path, NULL, 0)) return 1;
    FILE *json = jf.f;
    double *t = malloc(o.reps * sizeof *t);
    char *list = strdup(o.devices);
    if (!t || !list) {
        rc = failed(CLS_E_NOMEM, "setting up");
        goto out;
    }
    printf("score suite: commit %s, %s; %u repeats after a warm-up; ceiling %.0f GB/s\n"
           "items: candidates (and: CANDS split over the batch, per q each) or postings (or: per q a list, rows of 4 x "
           "per q)\n"
           "GB/s counts and: 12 + 8 x terms B a candidate; or: 4 B a row element + 20 B a posting\n",
           bench_commit(), bench_when(), o.reps, o.ceiling);
    printf("%-6s %-4s %4s %2s %6s %9s %11s %10s %10s %10s %9s %8s %7s %8s %6s %s\n", "dev", "mode", "wg", "T", "batch",
           "per q", "items", "med ms", "min ms", "max ms", "Gitem/s", "GB/s", "%ceil", "up ms", "copies", "check");
    for (char *sv = NULL, *spec = strtok_r(list, ",", &sv); spec; spec = strtok_r(NULL, ",", &sv)) {
        clx_queue q;
        cls_status s = clx_queue_open(spec, &q);
        if (s != CLS_OK) {
            rc = failed(s, spec);
            continue;
        }
        rc |= sdevice(spec, &q, &o, json, t);
        clx_queue_close(&q);
    }
out:
    if (bench_json_close(&jf, "bench score")) rc = 1;
    free(t), free(list);
    return rc;
}
