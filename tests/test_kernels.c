/* Every OpenCL kernel family against its plain-C reference, on POCL's CPU device:
 * decode_blocks against idx_decode_block, topk_select against a sort, and intersect/score
 * through whole searches against the reference engine, on random and edge-case inputs.
 * Same docIDs in the same order, bit-identical scores, and never on empty results. Also the program cache, and the
 * kernels only the benchmarks run (scan.cl against a running sum, copy.cl against memcmp), and
 * the kernel parameters: other variants against the reference, the tuning file, the override. */
#include <cJSON.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "query/batch.h"
#include "bench.h"
#include "clx_scan.h"
#include "codec/codec.h"
#include "generate.h"
#include "kernel_hooks.h"
#include "engine/engine.h"
#include "index/index.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* An index from docs given as texts; analysis without stemming or stopwords, so the test
 * controls the terms exactly. */
static cls_index *make_index_with(const char *const *texts, uint32_t n, const cls_build_opts *o)
{
    cls_analyzer_opts an = {.possessive = 0, .lowercase = 1, .stopwords = 0, .stem = 0};
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    if (o) ck_assert_msg(cls_builder_configure(b, o) == CLS_OK, "%s", cls_last_error());
    for (uint32_t i = 0; i < n; i++) {
        char docno[32];
        snprintf(docno, sizeof docno, "D%u", i);
        ck_assert_int_eq(cls_builder_add(b, docno, strlen(docno), texts[i], strlen(texts[i])), CLS_OK);
    }
    const char *path = tu_tmp_path("kernels.idx");
    ck_assert_int_eq(cls_builder_write(b, path), CLS_OK);
    cls_builder_free(b);
    cls_index *idx;
    ck_assert_msg(cls_index_open(path, &idx) == CLS_OK, "%s", cls_last_error());
    remove(path);
    return idx;
}

static cls_index *make_index(const char *const *texts, uint32_t n) { return make_index_with(texts, n, NULL); }

/* A random collection: a skewed vocabulary so some lists span many blocks and some hold one
 * posting, plus groups of identical documents, whose equal scores test the docID tie-break. */
static cls_index *random_index_with(uint64_t seed, uint32_t ndocs, uint32_t vocab, const cls_build_opts *o)
{
    char **texts = calloc(ndocs, sizeof *texts);
    uint64_t st = seed;
    for (uint32_t d = 0; d < ndocs; d++) {
        size_t cap = 4096, len = 0;
        texts[d] = malloc(cap);
        texts[d][0] = '\0';
        if (d % 7 == 3) { /* a clone group: same text, same length, same score */
            snprintf(texts[d], cap, "w1 w2 w3 w%u", vocab - 1);
            continue;
        }
        uint32_t n = 1 + (uint32_t)(tu_rand(&st) % 40);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t r = tu_rand(&st);
            /* square of a uniform: small ids far more frequent (long lists) */
            double u = (double)(r % 100000) / 100000.0;
            uint32_t t = (uint32_t)(u * u * vocab);
            len += (size_t)snprintf(texts[d] + len, cap - len, "w%u ", t);
        }
    }
    cls_index *idx = make_index_with((const char *const *)texts, ndocs, o);
    for (uint32_t d = 0; d < ndocs; d++) free(texts[d]);
    free(texts);
    return idx;
}

static cls_index *random_index(uint64_t seed, uint32_t ndocs, uint32_t vocab)
{
    return random_index_with(seed, ndocs, vocab, NULL);
}

/* An engine on a small random index, for the tests that drive kernels directly with data of
 * their own (the index only gives the engine its programs). */
static clx_engine *kernel_engine(cls_index **idx, cls_engine **e)
{
    *idx = random_index(2, 50, 20);
    ck_assert_msg(cls_engine_create(*idx, tu_device(), e) == CLS_OK, "%s", cls_last_error());
    clx_engine *cl = engine_clx(*e);
    ck_assert(cl != NULL);
    return cl;
}

static void random_queries(cls_batch *b, uint64_t seed, uint32_t nq, uint32_t vocab)
{
    uint64_t st = seed;
    char text[512], qid[32];
    /* edge cases first: empty, punctuation, unknown-only, known+unknown, repeated terms */
    const char *fixed[] = {"", "  ,.;  ", "nosuchterm", "w1 nosuchterm", "w1 w1 w1 w2", "w0", "w1 w2 w3", "w3 w2 w1"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
        snprintf(qid, sizeof qid, "f%zu", i);
        ck_assert_int_eq(cls_batch_add(b, qid, fixed[i]), CLS_OK);
    }
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t n = 1 + (uint32_t)(tu_rand(&st) % 6);
        size_t len = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t r = tu_rand(&st);
            double u = (double)(r % 100000) / 100000.0;
            len += (size_t)snprintf(text + len, sizeof text - len, "w%u ", (uint32_t)(u * u * vocab));
        }
        snprintf(qid, sizeof qid, "q%u", q);
        ck_assert_int_eq(cls_batch_add(b, qid, text), CLS_OK);
    }
}

/* The device engine against the reference on batch b: both answer every query of the batch,
 * with the same hits in the same order and bit-identical scores. The engine claims identical
 * results (the same float operations in the same order, correctly rounded division where the
 * device has it, as POCL does), so there is no tolerance: cls_results_compare at 0, and the
 * scores' bits compared as well (which 0.0 == -0.0 and NaN comparisons would let through).
 * The comparison is never vacuous: the reference must find hits in some query, and the device
 * must answer every query the reference has hits for. Returns the reference's total. */
static size_t search_both(cls_engine *dev, cls_engine *ref, const cls_batch *b, uint32_t k, cls_mode mode)
{
    const char *mname = mode == CLS_MODE_AND ? "and" : "or";
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = k;
    p.mode = mode;
    cls_results *rd, *rr;
    ck_assert_int_eq(cls_results_create(&rd), CLS_OK);
    ck_assert_int_eq(cls_results_create(&rr), CLS_OK);
    ck_assert_msg(cls_engine_search(ref, b, &p, rr) == CLS_OK, "ref: %s", cls_last_error());
    ck_assert_msg(cls_engine_search(dev, b, &p, rd) == CLS_OK, "device: %s", cls_last_error());
    size_t nq = cls_batch_count(b), total = 0;
    ck_assert_uint_gt(nq, 0);
    ck_assert_uint_eq(cls_results_count(rr), nq);
    ck_assert_uint_eq(cls_results_count(rd), nq);
    cls_status s = cls_results_compare(rr, rd, 0.0);
    ck_assert_msg(s == CLS_OK, "k=%u mode=%s: %s", k, mname, cls_last_error());
    for (size_t q = 0; q < nq; q++) {
        size_t nr, nd;
        const uint32_t *dr, *dd;
        const float *sr, *sd;
        cls_results_get(rr, q, &nr, &dr, &sr);
        cls_results_get(rd, q, &nd, &dd, &sd);
        ck_assert_msg(nr <= k, "k=%u mode=%s query %s: the reference returned %zu hits", k, mname,
                      cls_batch_qid(b, q), nr);
        ck_assert_msg(nd == nr, "k=%u mode=%s query %s: the device returned %zu hits, the reference %zu", k, mname,
                      cls_batch_qid(b, q), nd, nr);
        for (size_t j = 0; j < nr; j++) {
            uint32_t br, bd;
            memcpy(&br, &sr[j], 4);
            memcpy(&bd, &sd[j], 4);
            ck_assert_msg(dd[j] == dr[j] && bd == br,
                          "k=%u mode=%s query %s rank %zu: device doc %u score %a, reference doc %u score %a", k,
                          mname, cls_batch_qid(b, q), j + 1, dd[j], (double)sd[j], dr[j], (double)sr[j]);
            ck_assert_msg(sr[j] > 0, "k=%u mode=%s query %s rank %zu: score %a", k, mname, cls_batch_qid(b, q), j + 1,
                          (double)sr[j]);
        }
        total += nr;
    }
    ck_assert_msg(total > 0, "k=%u mode=%s: the reference found nothing in %zu queries; the comparison proves nothing",
                  k, mname, nq);
    cls_results_free(rd);
    cls_results_free(rr);
    return total;
}

/* ---- decode ------------------------------------------------------------------------------- */

/* Random and edge-case streams for one codec, block size and pfor depth: every bit width
 * 0..32, full, partial and one-posting blocks, all-maximum blocks, mostly-small blocks with a
 * few huge values (exceptions for the PForDelta codecs, long unary parts for Rice), blocks
 * where every value is an exception, and docIDs reaching 2^32-2. Each block is encoded with
 * the codec's reference encoder as if it were a list of its own. Blocks are valid ones (the
 * device clamps each docID to the block's last): a docID gap that would carry the block past
 * 2^32-2 is cut to 0 (width-32 docID streams keep their first gap; the frequency streams keep
 * every width at full length), a frequency is at most 2^32-1, and `last` is the true last
 * docID. */
/* algo: the in-group scan variant (WG_SCAN_ALGO) to build the decoder with; -1 for the one in force. */
static void decode_check(cls_codec c, uint32_t B, unsigned depth, int algo)
{
    cls_build_opts o;
    cls_build_defaults(&o);
    o.codec = c;
    o.block_size = B;
    o.pfor_depth = depth;
    cls_index *idx = random_index_with(1, 50, 20, &o);
    clx_device d;
    clx_params prm;
    ck_assert_msg(clx_select(tu_device(), &d) == CLS_OK && clx_params_for(&d.info, &prm) == CLS_OK, "%s",
                  cls_last_error());
    if (algo >= 0) prm.wg_scan_algo = (unsigned)algo;
    cls_engine *e;
    ck_assert_msg(engine_create_with(idx, tu_device(), algo >= 0 ? &prm : NULL, &e) == CLS_OK, "%s", cls_last_error());
    clx_engine *cl = engine_clx(e);
    ck_assert(cl != NULL);
    enum { NB = 240 };
    idx_block *blocks = calloc(NB, sizeof *blocks);
    uint32_t *words = calloc((size_t)NB * 2 * cdc_max_words(B) + 2, 4);
    uint32_t gaps[CDC_MAX_N], tfs[CDC_MAX_N];
    uint64_t st = 99 + B + depth * 7 + (uint64_t)c * 1000, nw = 0;
    for (uint32_t b = 0; b < NB; b++) {
        unsigned bwd = b % 33, bwf = (b * 7) % 33;
        uint32_t n = b < 33 ? B : 1 + (uint32_t)(tu_rand(&st) % B);
        if (b == 40 || b == 41) n = 1;
        unsigned shape = b % 6;          /* 0: all max, 1: few huge, 2: all huge, else random */
        for (uint32_t i = 0; i < n; i++) {
            uint32_t m = bwd == 32 ? UINT32_MAX : (1u << bwd) - 1;
            uint32_t mf = bwf == 32 ? UINT32_MAX : (1u << bwf) - 1;
            uint32_t r = (uint32_t)tu_rand(&st);
            gaps[i] = shape == 0 ? m : shape == 1 ? (r % 10 == 0 ? r & m : r & (m >> (bwd * 3 / 4)))
                    : shape == 2 ? (r | (1u << (bwd ? bwd - 1 : 0))) & m : r & m;
            tfs[i] = shape == 1 ? (r % 13 == 0 ? (uint32_t)tu_rand(&st) & mf : (r >> 8) & 3 & mf)
                                : (uint32_t)tu_rand(&st) & mf;
            if (tfs[i] == UINT32_MAX) tfs[i]--; /* tf - 1 of a tf that fits */
        }
        uint64_t span = 0; /* last - first */
        for (uint32_t i = 0; i + 1 < n; i++) {
            if (span + gaps[i] + 1 > UINT32_MAX - 1) gaps[i] = 0;
            if (span + gaps[i] + 1 > UINT32_MAX - 1) { /* even a gap of 0 does not fit: stop here */
                n = i + 1;
                break;
            }
            span += (uint64_t)gaps[i] + 1;
        }
        uint32_t dl = cdc_list_param(c, gaps, n - 1), fl = cdc_list_param(c, tfs, n);
        idx_block *bl = &blocks[b];
        uint32_t wd = cdc_encode(c, gaps, n - 1, dl, depth, &bl->dparam, words + nw);
        uint32_t wf = cdc_encode(c, tfs, n, fl, depth, &bl->fparam, words + nw + wd);
        /* first + span <= 2^32-2; block 41: a single posting at docID 2^32-2, the largest there is */
        uint32_t first = b == 41 ? UINT32_MAX - 1 : (uint32_t)(tu_rand(&st) % (UINT32_MAX - span));
        bl->first = first;
        bl->last = (uint32_t)(first + span);
        bl->offset = (uint32_t)nw;
        bl->info = IDX_INFO(n, wd);
        nw += wd + wf;
    }
    uint32_t *docs = malloc((size_t)NB * B * 4), *freqs = malloc((size_t)NB * B * 4);
    ck_assert_msg(clx_test_decode(cl, words, nw, blocks, NB, docs, freqs) == CLS_OK, "%s", cls_last_error());
    cls_index fake;
    memset(&fake, 0, sizeof fake);
    fake.fd = -1; /* no file: nothing to ask the size of */
    fake.blocks = blocks;
    fake.words = words;
    fake.num_blocks = NB;
    fake.num_words = nw;
    fake.codec = c;
    fake.block_size = B;
    fake.pfor_depth = depth;
    uint32_t rd[CDC_MAX_N], rf[CDC_MAX_N], used, tmp[CDC_MAX_N];
    for (uint32_t b = 0; b < NB; b++) {
        uint32_t n = idx_info_count(blocks[b].info), fofs = idx_info_fofs(blocks[b].info);
        /* the reference decoder accepts exactly what the encoder wrote */
        ck_assert_int_eq(cdc_decode(c, words + blocks[b].offset, fofs, n - 1, blocks[b].dparam, depth, tmp, &used), 0);
        ck_assert_int_eq(cdc_decode(c, words + blocks[b].offset + fofs, (uint32_t)(idx_block_words(&fake, b) - fofs),
                                    n, blocks[b].fparam, depth, tmp, &used), 0);
        ck_assert_msg(idx_decode_block(&fake, b, rd, rf) == CLS_OK, "%s", cls_last_error());
        for (uint32_t i = 0; i < n; i++) {
            ck_assert_msg(docs[(size_t)b * B + i] == rd[i], "%s B=%u depth %u block %u posting %u: doc %u, reference %u",
                          cls_codec_name(c), B, depth, b, i, docs[(size_t)b * B + i], rd[i]);
            ck_assert_msg(freqs[(size_t)b * B + i] == rf[i], "%s B=%u depth %u block %u posting %u: freq %u, reference %u",
                          cls_codec_name(c), B, depth, b, i, freqs[(size_t)b * B + i], rf[i]);
        }
    }
    free(docs);
    free(freqs);
    free(blocks);
    free(words);
    cls_engine_free(e);
    cls_index_close(idx);
}

START_TEST(decode_random_and_edges)
{
    /* _i: codec. The smallest and largest blocks for each (the default 128 for bp, which the
     * search tests cover too), and every pfor depth; with CLS_TEST_FULL set (the GPU session)
     * every block size. A cold POCL build of each variant costs seconds, hence the cut. Then
     * block 128 in every scan variant. */
    cls_codec c = (cls_codec)_i;
    static const uint32_t sizes[] = {64, 128, 256, 512};
    int full = getenv("CLS_TEST_FULL") != NULL;
    for (unsigned s = 0; s < 4; s++)
        if (full || s == 0 || s == 3 || (s == 1 && c == CLS_CODEC_BP)) decode_check(c, sizes[s], 1, -1);
    if (c == CLS_CODEC_PFOR)
        for (unsigned d = 0; d <= IDX_MAX_PFOR_DEPTH; d++)
            if (d != 1) decode_check(c, 128, d, -1);
    /* every in-group scan variant the device runs (the scans under pfor's patching and rice's
     * unary ranking as well as the prefix sum) */
    clx_device dev;
    ck_assert_msg(clx_select(tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    for (int a = 0; a <= 2; a++)
        if (a < 2 || clx_is_nvidia(&dev.info)) decode_check(c, 128, 1, a);
}
END_TEST

/* ---- benchmark-only kernels: scan.cl and copy.cl ------------------------------------------ */

/* The device-wide scan against a plain running sum: sizes from one element to several levels
 * of tiles (a tiny tile of 4 x 2 forces four levels), every in-group algorithm the device runs, values across
 * all 32 bits so the sums wrap. */
START_TEST(scan_against_host)
{
    clx_queue q;
    ck_assert_msg(clx_queue_open(tu_device(), &q) == CLS_OK, "%s", cls_last_error());
    /* items a multiple of 4: the look-back's vector loads for whole runs, scalar ones at the end */
    static const struct { unsigned wg, items; int algo; } v[] = {{256, 8, 0}, {256, 8, 1}, {4, 2, 1}, {4, 2, 0},
                                                                 {64, 12, 1}, {256, 8, 2}, {32, 2, 2}}; /* 2: NVIDIA only */
    static const uint32_t sizes[] = {1, 7, 2048, 2049, 131075, 1000};
    uint32_t *in = malloc(131075 * 4), *out = malloc(131075 * 4);
    uint64_t st = 5;
    for (uint32_t i = 0; i < 131075; i++) in[i] = i % 97 == 0 ? UINT32_MAX : (uint32_t)tu_rand(&st);
    for (unsigned k = 0; k < 2 * (sizeof v / sizeof *v); k++) {
        unsigned vk = k / 2;
        clx_scan_method me = k % 2 ? CLX_SCAN_3PASS : CLX_SCAN_LOOKBACK;
        if (v[vk].algo == 2 && !clx_is_nvidia(&q.dev.info)) continue;
        clx_scan *sc;
        ck_assert_msg(clx_scan_create(&q, v[vk].wg, v[vk].items, v[vk].algo, me, &sc) == CLS_OK, "%s", cls_last_error());
        for (unsigned z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            double t[2];
            /* two timed runs after the warm-up: the look-back's later runs reuse its state */
            ck_assert_msg(clx_scan_run(sc, in, sizes[z], 2, t, out) == CLS_OK, "%s", cls_last_error());
            uint32_t acc = 0;
            for (uint32_t i = 0; i < sizes[z]; i++)
                ck_assert_msg(out[i] == (acc += in[i]), "method %d wg %u items %u algo %d n %u: element %u is %u, want %u",
                              (int)me, v[vk].wg, v[vk].items, v[vk].algo, sizes[z], i, out[i], acc);
        }
        clx_scan_free(sc);
    }
    clx_scan *bad;
    ck_assert_int_eq(clx_scan_create(&q, 3, 8, 0, CLX_SCAN_3PASS, &bad), CLS_E_ARG); /* not a power of two */
    ck_assert_int_eq(clx_scan_create(&q, 16, 8, 2, CLX_SCAN_3PASS, &bad), CLS_E_ARG); /* warp scan: less than a warp */
    ck_assert_int_eq(clx_scan_create(&q, 256, 8, 0, (clx_scan_method)7, &bad), CLS_E_ARG); /* no such method */
    if (!clx_is_nvidia(&q.dev.info)) /* the warp-shuffle scan refuses to build, never falls back */
        ck_assert_int_eq(clx_scan_create(&q, 64, 8, 2, CLX_SCAN_LOOKBACK, &bad), CLS_E_BUILD);
    free(in);
    free(out);
    clx_queue_close(&q);
}
END_TEST

/* Both copy kernels at three vector widths, with fewer work-items than elements (the stride and
 * run loops wrap) and a length that splits unevenly. */
START_TEST(copy_kernels_copy)
{
    clx_queue q;
    ck_assert_msg(clx_queue_open(tu_device(), &q) == CLS_OK, "%s", cls_last_error());
    static const char *const files[] = {"copy.cl", NULL};
    static const unsigned vecs[] = {1, 4, 16}; /* vector widths (COPY_VEC) */
    const cl_ulong n = 1001;                    /* vectors: fewer work-items than elements, uneven */
    uint32_t *src = malloc(n * 64), *dst = malloc(n * 64);
    uint64_t st = 9;
    for (cl_ulong i = 0; i < 16 * n; i++) src[i] = (uint32_t)tu_rand(&st);
    for (unsigned w = 0; w < 3; w++) {
        char opts[64], note[4400];
        snprintf(opts, sizeof opts, "-cl-std=CL1.2 -DCOPY_VEC=%u", vecs[w]);
        cl_program prog;
        double secs;
        int cached;
        ck_assert_msg(clx_build_ex(q.ctx, &q.dev, bench_kernels, files, opts, &prog, &secs, &cached, note, sizeof note) == CLS_OK, "%s",
                      cls_last_error());
        size_t bytes = n * 4 * vecs[w];
        static const char *const names[] = {"copy_strided", "copy_runs"};
        for (int v = 0; v < 2; v++) {
            cl_int err;
            cl_kernel k = clCreateKernel(prog, names[v], &err);
            ck_assert_int_eq(err, CL_SUCCESS);
            cl_mem a = clCreateBuffer(q.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, src, &err);
            ck_assert_int_eq(err, CL_SUCCESS);
            memset(dst, 0xA5, bytes); /* the destination starts as garbage, not a previous copy */
            cl_mem b = clCreateBuffer(q.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, dst, &err);
            ck_assert_int_eq(err, CL_SUCCESS);
            size_t wg = 16, global = 3 * wg;
            ck_assert_int_eq(clSetKernelArg(k, 0, sizeof a, &a), CL_SUCCESS);
            ck_assert_int_eq(clSetKernelArg(k, 1, sizeof b, &b), CL_SUCCESS);
            ck_assert_int_eq(clSetKernelArg(k, 2, sizeof n, &n), CL_SUCCESS);
            ck_assert_int_eq(clEnqueueNDRangeKernel(q.q, k, 1, NULL, &global, &wg, 0, NULL, NULL), CL_SUCCESS);
            ck_assert_int_eq(clEnqueueReadBuffer(q.q, b, CL_TRUE, 0, bytes, dst, 0, NULL, NULL), CL_SUCCESS);
            ck_assert_msg(memcmp(src, dst, bytes) == 0, "%s, width %u: the copy differs", names[v], vecs[w]);
            clReleaseMemObject(a);
            clReleaseMemObject(b);
            clReleaseKernel(k);
        }
        clReleaseProgram(prog);
    }
    free(src);
    free(dst);
    clx_queue_close(&q);
}
END_TEST

/* ---- top-k -------------------------------------------------------------------------------- */

typedef struct pair { float s; uint32_t d; } pair;
static int cmp_pair(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return hit_before(x->s, x->d, y->s, y->d) ? -1 : hit_before(y->s, y->d, x->s, x->d) ? 1 : 0;
}

/* nq rows of N scores, a match in every `sparse`-th position on average beyond a third missing
 * (sparse 0: no thinning), ranked by the engine and by qsort. */
static void check_topk_sparse(clx_engine *cl, uint32_t nq, uint32_t N, uint32_t k, uint64_t seed, int levels,
                              uint32_t sparse)
{
    float *sc = malloc((size_t)nq * N * 4);
    uint64_t st = seed;
    for (size_t i = 0; i < (size_t)nq * N; i++) {
        uint64_t r = tu_rand(&st);
        /* few distinct levels: many ties at the boundary; a third no match */
        sc[i] = r % 3 == 0 ? 0.0f : levels ? (float)(1 + r % (uint64_t)levels) * 0.25f : (float)(r % 1000000) / 7.0f + 0.001f;
        if (sparse && (r >> 20) % sparse) sc[i] = 0.0f;
    }
    if (nq > 1) memset(sc, 0, (size_t)N * 4); /* a query without matches */
    uint32_t *counts = malloc(nq * 4), *docs = malloc((size_t)nq * k * 4);
    float *scores = malloc((size_t)nq * k * 4);
    ck_assert_msg(clx_test_topk(cl, sc, nq, N, k, counts, docs, scores) == CLS_OK, "%s", cls_last_error());
    pair *ref = malloc((size_t)N * sizeof *ref);
    uint64_t kept = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t m = 0;
        for (uint32_t d = 0; d < N; d++)
            if (sc[(size_t)q * N + d] > 0) ref[m++] = (pair){sc[(size_t)q * N + d], d};
        qsort(ref, m, sizeof *ref, cmp_pair);
        uint32_t keep = m < k ? m : k;
        kept += keep;
        ck_assert_msg(counts[q] == keep, "N=%u k=%u query %u: %u hits, reference %u", N, k, q, counts[q], keep);
        for (uint32_t j = 0; j < keep; j++) {
            ck_assert_msg(docs[(size_t)q * k + j] == ref[j].d && scores[(size_t)q * k + j] == ref[j].s,
                          "N=%u k=%u query %u rank %u: doc %u (%g), reference doc %u (%g)", N, k, q, j,
                          docs[(size_t)q * k + j], scores[(size_t)q * k + j], ref[j].d, ref[j].s);
        }
    }
    ck_assert_msg(kept > 0, "N=%u k=%u: no query has a match; nothing was compared", N, k);
    free(sc);
    free(counts);
    free(docs);
    free(scores);
    free(ref);
}

static void check_topk(clx_engine *cl, uint32_t nq, uint32_t N, uint32_t k, uint64_t seed, int levels)
{
    check_topk_sparse(cl, nq, N, k, seed, levels, 0);
}

/* Segments listing their entries in shuffled docID order, with few distinct scores (many ties
 * at the k-th): the kept ties must be the smallest docIDs whatever the order. */
static void check_topk_seg(clx_engine *cl, uint32_t nq, uint32_t maxlen, uint32_t k, uint64_t seed, int levels)
{
    uint64_t st = seed;
    uint32_t *seg = malloc((size_t)nq * 8);
    uint64_t n = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t len = q == 0 ? maxlen : (uint32_t)(tu_rand(&st) % (maxlen + 1));
        seg[2 * q] = (uint32_t)n + 3; /* a gap before each segment */
        seg[2 * q + 1] = len;
        n += 3 + len;
    }
    uint32_t *keys = calloc(n + 1, 4), *docs = calloc(n + 1, 4);
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t *kq = keys + seg[2 * q], *dq = docs + seg[2 * q], len = seg[2 * q + 1];
        uint32_t d = (uint32_t)(tu_rand(&st) % 1000);
        for (uint32_t j = 0; j < len; j++) {
            d += 1 + (uint32_t)(tu_rand(&st) % 300); /* distinct, spread over the bytes of a docID */
            dq[j] = d;
            uint64_t r = tu_rand(&st);
            float f = r % 5 == 0 ? 0.0f : (float)(1 + r % (uint64_t)levels) * 0.5f;
            memcpy(&kq[j], &f, 4);
        }
        for (uint32_t j = len; j > 1; j--) { /* Fisher-Yates: the docIDs out of order */
            uint32_t o = (uint32_t)(tu_rand(&st) % j), t = dq[j - 1];
            dq[j - 1] = dq[o];
            dq[o] = t;
        }
    }
    uint32_t *counts = malloc(nq * 4), *od = malloc((size_t)nq * k * 4);
    float *os = malloc((size_t)nq * k * 4);
    ck_assert_msg(clx_test_topk_seg(cl, keys, docs, n, seg, nq, k, counts, od, os) == CLS_OK, "%s", cls_last_error());
    pair *ref = malloc(((size_t)maxlen + 1) * sizeof *ref);
    uint64_t kept = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t m = 0;
        for (uint32_t j = 0; j < seg[2 * q + 1]; j++) {
            float f;
            memcpy(&f, &keys[seg[2 * q] + j], 4);
            if (f > 0) ref[m++] = (pair){f, docs[seg[2 * q] + j]};
        }
        qsort(ref, m, sizeof *ref, cmp_pair);
        uint32_t keep = m < k ? m : k;
        kept += keep;
        ck_assert_msg(counts[q] == keep, "segments k=%u query %u: %u hits, reference %u", k, q, counts[q], keep);
        for (uint32_t j = 0; j < keep; j++)
            ck_assert_msg(od[(size_t)q * k + j] == ref[j].d && os[(size_t)q * k + j] == ref[j].s,
                          "segments k=%u query %u rank %u: doc %u (%g), reference doc %u (%g)", k, q, j,
                          od[(size_t)q * k + j], os[(size_t)q * k + j], ref[j].d, ref[j].s);
    }
    ck_assert_msg(kept > 0, "segments k=%u: no match; nothing was compared", k);
    free(seg);
    free(keys);
    free(docs);
    free(counts);
    free(od);
    free(os);
    free(ref);
}

START_TEST(topk_segments_shuffled_ties)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    check_topk_seg(cl, 5, 3000, 10, 21, 3);    /* hundreds of ties at the k-th, 10 kept */
    check_topk_seg(cl, 3, 5000, 1000, 22, 4);  /* the boundary level split */
    check_topk_seg(cl, 4, 700, 1, 23, 1);      /* every match ties: the smallest docID */
    check_topk_seg(cl, 2, 6000, 10, 26, 1);    /* thousands of ties at the k-th */
    check_topk_seg(cl, 3, 200, 500, 24, 2);    /* k above every count: all matches */
    check_topk_seg(cl, 2, 20000, 777, 25, 60); /* k not a power of two */
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

START_TEST(topk_random_ties_edges)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    check_topk(cl, 1, 1, 1, 1, 0);        /* one document */
    check_topk(cl, 3, 1000, 1, 2, 0);     /* k = 1 */
    check_topk(cl, 3, 1000, 10, 3, 4);    /* heavy ties at the k-th score */
    check_topk(cl, 3, 1000, 1000, 4, 0);  /* k = N */
    check_topk(cl, 2, 500, 1000, 5, 3);   /* k > N: all matches */
    check_topk(cl, 4, 5000, 100, 6, 0);
    check_topk(cl, 2, 3000, 777, 7, 50);  /* k not a power of two */
    check_topk(cl, 1, 20000, 4096, 8, 1); /* every match ties */
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

/* A few long rows take the many-group top-k (cl/topk_wide.cl: rows below two a compute unit, long
 * enough for two slices or more; POCL here has few compute units): it must rank exactly as one
 * group a row does, ties at the k-th spread over many slices included. */
START_TEST(topk_wide_rows)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    check_topk(cl, 1, 200000, 10, 31, 0);
    check_topk(cl, 1, 200000, 1000, 32, 0);
    check_topk(cl, 1, 200000, 10000, 33, 0);
    check_topk(cl, 1, 200000, 10, 34, 1);           /* every match ties: the first ten positions */
    check_topk(cl, 1, 200000, 1000, 35, 3);         /* the boundary level split across slices */
    check_topk(cl, 1, 200000, 10000, 36, 7);
    check_topk(cl, 2, 200000, 100, 37, 0);          /* row 0 has no match at all */
    check_topk_sparse(cl, 1, 200000, 10000, 38, 0, 100); /* k above the matches: all of them */
    check_topk_sparse(cl, 1, 200000, 1000, 39, 2, 150);  /* fewer matches than k, all tied in pairs */
    check_topk_sparse(cl, 1, 200000, 10, 40, 0, 30000);  /* a handful of matches */
    check_topk(cl, 1, 200000, 1, 41, 5);                 /* k 1 */
    check_topk(cl, 3, 100000, 300, 42, 9);               /* three rows, survivors in blocks: ranks added up */
    clx_test_topk_force(cl, TEST_TOPK_WIDE_SELECT); /* survivors ranked by topk_select (rows x k too large) */
    check_topk(cl, 1, 200000, 10000, 43, 7);
    check_topk(cl, 3, 100000, 300, 44, 9);
    clx_test_topk_force(cl, TEST_TOPK_ENGINE);
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

/* How check_rows fills a row: matches at `levels` distinct scores (0: many, few ties), a match in
 * every `sparse`-th position on average (0: two in three), in random order or ascending or
 * descending by position (order 1, 2: every position a match, `levels` positions a score). */
typedef struct rows_fill {
    int levels;
    uint32_t sparse;
    int order;
} rows_fill;

/* nq dense rows of N scores (row 0 without a match where nq > 1) ranked by the engine's dense-row
 * top-k, forced as `force` says (kernel_hooks.h), against qsort; the kernel that ran must be
 * topk_team where the rows are short and k small and force allows, else topk_rows wherever the
 * engine can run it and force allows. */
static void check_rows(clx_engine *cl, int force, uint32_t nq, uint32_t N, uint32_t k, uint64_t seed, rows_fill f)
{
    float *sc = malloc((size_t)nq * N * 4);
    uint64_t st = seed;
    for (uint32_t q = 0; q < nq; q++)
        for (uint32_t d = 0; d < N; d++) {
            uint64_t r = tu_rand(&st);
            float v;
            if (f.order) {
                uint32_t lv = f.levels ? (uint32_t)f.levels : 1, i = f.order == 1 ? d : N - 1 - d;
                v = (float)(1 + i / lv) * 0.5f;
            } else {
                v = r % 3 == 0 ? 0.0f
                    : f.levels ? (float)(1 + r % (uint64_t)f.levels) * 0.25f
                               : (float)(r % 1000000) / 7.0f + 0.001f;
                if (f.sparse && (r >> 20) % f.sparse) v = 0.0f;
            }
            sc[(size_t)q * N + d] = nq > 1 && q == 0 ? 0.0f : v;
        }
    uint32_t *counts = malloc(nq * 4), *docs = malloc((size_t)nq * k * 4);
    float *scores = malloc((size_t)nq * k * 4);
    clx_test_topk_force(cl, force);
    cls_status s = clx_test_topk(cl, sc, nq, N, k, counts, docs, scores);
    clx_test_topk_force(cl, 0);
    ck_assert_msg(s == CLS_OK, "%s", cls_last_error());
    const char *want = force == TEST_TOPK_ENGINE && clx_test_topk_team_fits(cl, N, k) ? "topk_team"
                       : force != TEST_TOPK_SELECT && clx_test_topk_rows_cap(cl, N, k) ? "topk_rows"
                                                                                       : "topk_select";
    const char *ran = clx_test_topk_ran(cl);
    ck_assert_msg(ran && strcmp(ran, want) == 0, "N=%u k=%u force %d: %s ran, not %s", N, k, force, ran ? ran : "none", want);
    pair *ref = malloc((size_t)N * sizeof *ref);
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t m = 0;
        for (uint32_t d = 0; d < N; d++)
            if (sc[(size_t)q * N + d] > 0) ref[m++] = (pair){sc[(size_t)q * N + d], d};
        qsort(ref, m, sizeof *ref, cmp_pair);
        uint32_t keep = m < k ? m : k;
        ck_assert_msg(counts[q] == keep, "%s N=%u k=%u row %u: %u hits, reference %u", ran, N, k, q, counts[q], keep);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t wd = j < keep ? ref[j].d : 0xFFFFFFFFu; /* past the hits: no document, score 0 */
            float ws = j < keep ? ref[j].s : 0.0f;
            ck_assert_msg(docs[(size_t)q * k + j] == wd && scores[(size_t)q * k + j] == ws,
                          "%s N=%u k=%u row %u rank %u: doc %u (%g), reference doc %u (%g)", ran, N, k, q, j,
                          docs[(size_t)q * k + j], scores[(size_t)q * k + j], wd, ws);
        }
    }
    free(sc);
    free(counts);
    free(docs);
    free(scores);
    free(ref);
}

/* Many dense rows read once (cl/topk.cl: topk_rows), rows enough that no row takes the many-group
 * top-k: random scores, ties at the k-th (ranked by position), k 1, k = N, k above N and above the
 * matches, rows without a match, rows of no document, rows whose starts are not 16-byte aligned,
 * and k up to 10,000. */
START_TEST(topk_rows_many)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    uint32_t R = 2 * clx_test_compute_units(cl) + 3;
    check_rows(cl, 0, R, 5000, 10, 51, (rows_fill){0, 0, 0});
    check_rows(cl, 0, R, 4999, 1, 52, (rows_fill){0, 0, 0});     /* k 1; rows start anywhere in 16 bytes */
    check_rows(cl, 0, R, 3001, 100, 53, (rows_fill){3, 0, 0});   /* hundreds of ties at the k-th */
    check_rows(cl, 0, R, 3000, 10, 54, (rows_fill){1, 0, 0});    /* every match ties: the first ten */
    check_rows(cl, 0, R, 2000, 2000, 55, (rows_fill){0, 0, 0});  /* k = N */
    check_rows(cl, 0, R, 500, 1000, 56, (rows_fill){4, 0, 0});   /* k above N: every match */
    check_rows(cl, 0, R, 20000, 100, 57, (rows_fill){0, 300, 0}); /* k above the matches */
    check_rows(cl, TEST_TOPK_ROWS, 1, 1, 1, 58, (rows_fill){0, 0, 0}); /* one document */
    check_rows(cl, 0, R, 30000, 10000, 59, (rows_fill){0, 0, 0}); /* k 10,000 */
    check_rows(cl, 0, R, 30001, 10000, 60, (rows_fill){7, 0, 0});
    check_rows(cl, 0, R, 12345, 777, 61, (rows_fill){0, 0, 2});   /* descending: one cut */
    /* no row with a match, and rows of no document (an empty collection's): every slot empty */
    float *zeros = calloc((size_t)R * 1000, 4);
    uint32_t *counts = malloc(R * 4), *docs = malloc((size_t)R * 10 * 4);
    float *scores = malloc((size_t)R * 10 * 4);
    for (int force = TEST_TOPK_ROWS;; force = TEST_TOPK_ENGINE) { /* topk_rows, then topk_team */
        for (uint32_t N = 1000;; N = 0) {
            memset(docs, 0, (size_t)R * 10 * 4);
            clx_test_topk_force(cl, force);
            cls_status st = clx_test_topk(cl, zeros, R, N, 10, counts, docs, scores);
            clx_test_topk_force(cl, TEST_TOPK_ENGINE);
            ck_assert_msg(st == CLS_OK, "%s", cls_last_error());
            ck_assert_str_eq(clx_test_topk_ran(cl), force == TEST_TOPK_ROWS ? "topk_rows" : "topk_team");
            for (uint32_t i = 0; i < R * 10; i++)
                ck_assert_msg(counts[i / 10] == 0 && docs[i] == 0xFFFFFFFFu && scores[i] == 0.0f, "N=%u slot %u", N, i);
            if (N == 0) break;
        }
        if (force == TEST_TOPK_ENGINE) break;
    }
    free(zeros);
    free(counts);
    free(docs);
    free(scores);
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

/* Short dense rows, a team of work-items a row (cl/topk.cl: topk_team): many rows, the last
 * work-group's teams partly without a row; rows shorter than a team; k at or above the row's
 * length, k 1 and the largest k the kernel takes; the longest row it takes; ties at the k-th key
 * across the boundary (ranked by position: one position digit for rows of at most 256, two
 * above), every match tied, rows in ascending and descending order, rows with fewer matches
 * than k; and the same rows through topk_rows. */
START_TEST(topk_team_rows)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    uint32_t longest = 0;
    while (clx_test_topk_team_fits(cl, longest + 1, 10)) longest++;
    ck_assert_msg(longest >= 32 && !clx_test_topk_team_fits(cl, 1000, 1000), "topk_team takes rows up to %u", longest);
    check_rows(cl, 0, 301, 1000 < longest ? 1000 : longest, 10, 91, (rows_fill){0, 0, 0}); /* many rows */
    check_rows(cl, 0, 37, 5, 10, 92, (rows_fill){0, 0, 0});        /* shorter than a team, k above N */
    check_rows(cl, 0, 37, 31, 31, 93, (rows_fill){3, 0, 0});       /* k = N, ties */
    check_rows(cl, 0, 37, longest, 128, 94, (rows_fill){3, 0, 0}); /* the longest row, k 128: hundreds of ties */
    check_rows(cl, 0, 37, longest, 10, 95, (rows_fill){1, 0, 0});  /* every match ties: two position digits */
    check_rows(cl, 0, 37, 200, 7, 96, (rows_fill){2, 0, 0});       /* ties, one position digit */
    check_rows(cl, 0, 37, 777 < longest ? 777 : longest, 100, 97, (rows_fill){0, 0, 1}); /* ascending */
    check_rows(cl, 0, 37, 500, 1, 98, (rows_fill){0, 0, 2});       /* descending, k 1 */
    check_rows(cl, 0, 37, 600, 50, 99, (rows_fill){0, 40, 0});     /* fewer matches than k in most rows */
    check_rows(cl, 0, 37, 300, 64, 100, (rows_fill){4, 0, 1});     /* ascending in fours: ties span lanes */
    check_rows(cl, TEST_TOPK_ROWS, 37, 300, 64, 100, (rows_fill){4, 0, 1});
    check_rows(cl, TEST_TOPK_ROWS, 37, 5, 10, 92, (rows_fill){0, 0, 0});
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

/* topk_rows with its least buffer (k + one step of the row), so that it cuts the buffer to the k
 * best at nearly every step: a row in ascending order (the worst case: every key enters), with
 * ties that span steps, random rows with ties; and topk_select itself on dense rows, which ranks
 * them where topk_rows cannot (k too large for the device's local memory). */
START_TEST(topk_rows_cuts_and_select)
{
    cls_index *idx;
    cls_engine *e;
    clx_engine *cl = kernel_engine(&idx, &e);
    uint32_t R = 2 * clx_test_compute_units(cl) + 1;
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 20000, 10, 71, (rows_fill){0, 0, 1});   /* ascending */
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 20003, 100, 72, (rows_fill){3, 0, 1});  /* ascending, in threes */
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 15000, 1000, 73, (rows_fill){0, 0, 0});
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 10000, 50, 74, (rows_fill){2, 0, 0});    /* two levels */
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 9000, 1, 75, (rows_fill){0, 0, 2});     /* descending */
    check_rows(cl, TEST_TOPK_ROWS_LEAST, R, 30000, 10000, 76, (rows_fill){5, 0, 1});
    check_rows(cl, TEST_TOPK_SELECT, R, 5000, 10, 77, (rows_fill){0, 0, 0});
    check_rows(cl, TEST_TOPK_SELECT, R, 3001, 100, 78, (rows_fill){3, 0, 0});
    check_rows(cl, TEST_TOPK_SELECT, R, 500, 1000, 79, (rows_fill){4, 0, 0});
    check_rows(cl, TEST_TOPK_SELECT, R, 20000, 10000, 80, (rows_fill){0, 0, 0});
    cls_engine_free(e);
    cls_index_close(idx);
}
END_TEST

/* ---- whole searches: decode + intersect + score + top-k ----------------------------------- */

/* and-or ranks a dense row a query: a batch of two queries over 9,000 documents takes the
 * many-group top-k on POCL (few compute units), inside a whole search against the reference. */
START_TEST(search_and_or_wide_rows)
{
    cls_index *idx = random_index(41, 9000, 30);
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "q0", "w1 w2 w3"), CLS_OK); /* common terms: many ties */
    ck_assert_int_eq(cls_batch_add(b, "q1", "w0 w7 w12"), CLS_OK);
    const uint32_t ks[] = {1, 10, 1000, 9005};
    for (size_t i = 0; i < 4; i++) search_both(dev, ref, b, ks[i], CLS_MODE_AND_OR);
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

START_TEST(search_random_collections)
{
    static const struct { uint64_t seed; uint32_t docs, vocab; } cases[] = {
        {11, 1, 5}, {12, 40, 10}, {13, 700, 50}, {14, 3000, 400}, {15, 6000, 3000}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        cls_index *idx = random_index(cases[c].seed, cases[c].docs, cases[c].vocab);
        cls_engine *dev, *ref;
        ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
        ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
        cls_batch *b;
        ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
        random_queries(b, cases[c].seed * 31, 60, cases[c].vocab);
        const uint32_t ks[] = {1, 7, 1000, cases[c].docs + 5};
        for (size_t i = 0; i < 4; i++) {
            search_both(dev, ref, b, ks[i], CLS_MODE_OR);
            search_both(dev, ref, b, ks[i], CLS_MODE_AND);
        }
        cls_batch_free(b);
        cls_engine_free(dev);
        cls_engine_free(ref);
        cls_index_close(idx);
    }
}
END_TEST

START_TEST(search_ties_break_on_docid)
{
    /* 300 identical documents: every score ties, so rank order is docID order. */
    const char *texts[300];
    for (int i = 0; i < 300; i++) texts[i] = "alpha beta";
    cls_index *idx = make_index(texts, 300);
    cls_engine *dev;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    ck_assert_int_eq(cls_batch_add(b, "1", "alpha"), CLS_OK);
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = 150;
    for (int mode = 0; mode < 2; mode++) {
        p.mode = mode ? CLS_MODE_AND : CLS_MODE_OR;
        cls_results *r;
        ck_assert_int_eq(cls_results_create(&r), CLS_OK);
        ck_assert_int_eq(cls_engine_search(dev, b, &p, r), CLS_OK);
        size_t n;
        const uint32_t *docs;
        const float *scores;
        cls_results_get(r, 0, &n, &docs, &scores);
        ck_assert_uint_eq(n, 150);
        for (size_t i = 0; i < n; i++) ck_assert_uint_eq(docs[i], i);
        cls_results_free(r);
    }
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_index_close(idx);
}
END_TEST

/* A batch larger than one device batch (CLX_MAX_BATCH) must come back whole and in order. */
START_TEST(search_many_batches)
{
    cls_index *idx = random_index(21, 500, 100);
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    random_queries(b, 5, 2500, 100);
    search_both(dev, ref, b, 10, CLS_MODE_OR);
    search_both(dev, ref, b, 10, CLS_MODE_AND);
    cls_batch_free(b);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* ---- program cache ------------------------------------------------------------------------ */

static int engine_from_cache(cls_index *idx)
{
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &e) == CLS_OK, "%s", cls_last_error());
    double secs;
    int cached;
    cls_engine_build_times(e, &secs, &cached);
    cls_engine_free(e);
    return cached;
}

static char *only_entry(const char *dir)
{
    static char path[4096];
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls '%s'/*.bin", dir);
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    ck_assert_msg(fgets(path, sizeof path, p) != NULL, "no cache entry in %s", dir);
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    return path;
}

START_TEST(program_cache_cold_warm_corrupt_concurrent)
{
    const char *dir = tu_tmp_path("cache");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", dir, 1);
    /* the binary cache, which a GPU driver's programs get; POCL's go to its own cache by default
     * (program_cache_by_driver below) */
    setenv("CLSEARCH_PROGRAM_CACHE", "binary", 1);
    /* Four fresh processes building into an empty cache at once: all succeed, and the entry
     * they leave is whole. This runs before this process touches OpenCL: the ocl-icd loader
     * splits OCL_ICD_FILENAMES in place when OpenCL starts, so a command started later sees the
     * first library alone (on the GPU host, no NVIDIA platform; clx_compile.c keeps the value
     * for its compiler process). */
    const char *ipath = tu_tmp_path("cache.idx"), *tpath = tu_tmp_path("cache.topics");
    const char *texts[] = {"alpha beta", "beta gamma"};
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    cls_builder *b;
    ck_assert_int_eq(cls_builder_create(&an, &b), CLS_OK);
    for (int i = 0; i < 2; i++) ck_assert_int_eq(cls_builder_add(b, texts[i], 4, texts[i], strlen(texts[i])), CLS_OK);
    ck_assert_int_eq(cls_builder_write(b, ipath), CLS_OK);
    cls_builder_free(b);
    tu_write_file(tpath, "1\tbeta\n", 7);
    char args[8192];
    /* -m and: the two programs every engine builds at start (OR's partition kernels are a third,
     * built at the first OR search, which engine_from_cache below never runs) */
    snprintf(args, sizeof args, "search -x '%s' -q '%s' -d '%s' -m and -o /dev/null", ipath, tpath, tu_device());
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            const char *err;
            int rc = tu_run_cli(args, &err);
            if (rc != 0) fprintf(stderr, "concurrent start %d: exit %d: %s\n", i, rc, err);
            _exit(rc);
        }
    }
    for (int i = 0; i < 4; i++) {
        int st;
        ck_assert(waitpid(kids[i], &st, 0) == kids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a concurrent engine start failed (exit %d)", WEXITSTATUS(st));
    }
    remove(ipath);
    remove(tpath);
    cls_index *idx = random_index(3, 20, 10);
    ck_assert_int_eq(engine_from_cache(idx), 1); /* the entry the four left is whole */
    /* every entry goes (the commands' index has another decoder than idx, so the folder holds
     * entries idx's engine never reads, and which comes first depends on the sources' hashes);
     * from here on every entry is one idx's engine reads */
    glob_t g;
    char pat[4200];
    snprintf(pat, sizeof pat, "%s/*.bin", dir);
    ck_assert_int_eq(glob(pat, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) ck_assert_int_eq(remove(g.gl_pathv[i]), 0);
    globfree(&g);
    ck_assert_int_eq(engine_from_cache(idx), 0); /* cold */
    ck_assert_int_eq(engine_from_cache(idx), 1); /* warm */
    char *entry = only_entry(dir);
    /* a flipped byte in the binary: checksum fails, rebuilt, then warm again */
    FILE *f = fopen(entry, "r+b");
    ck_assert(f != NULL);
    fseek(f, 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(ch ^ 0x55, f);
    fclose(f);
    ck_assert_int_eq(engine_from_cache(idx), 0);
    ck_assert_int_eq(engine_from_cache(idx), 1);
    /* truncated, and foreign (garbage) entries */
    ck_assert_int_eq(truncate(entry, 40), 0);
    ck_assert_int_eq(engine_from_cache(idx), 0);
    tu_write_file(entry, "not a program binary at all", 27);
    ck_assert_int_eq(engine_from_cache(idx), 0);
    ck_assert_int_eq(engine_from_cache(idx), 1);
    cls_index_close(idx);
    unsetenv("CLSEARCH_PROGRAM_CACHE");
}
END_TEST

/* A driver with a cache of its own (POCL by default, any device with CLSEARCH_PROGRAM_CACHE=driver):
 * no binary in the folder, a mark that the program was built (cold, then warm); the program is
 * compiled first in the child process (the helper is in this build tree), and a compiler that
 * crashes there is an error naming the device and the program while this process goes on. */
START_TEST(program_cache_by_driver)
{
    const char *dir = tu_tmp_path("cache-driver");
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", dir, 1);
    setenv("CLSEARCH_PROGRAM_CACHE", "driver", 1);
    char *compiler = getenv("CLSEARCH_COMPILER") ? tu_strdup(getenv("CLSEARCH_COMPILER")) : NULL;
    unsetenv("CLSEARCH_COMPILER"); /* the suite's environment compiles in-process: the process here */
    cls_index *idx = random_index(5, 20, 10);
    cls_engine *e;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &e) == CLS_OK, "%s", cls_last_error());
    double secs;
    int cached;
    cls_engine_build_times(e, &secs, &cached);
    ck_assert_int_eq(cached, 0);
    const char *desc = cls_engine_describe(e);
    ck_assert_msg(strstr(desc, "every kernel compiled once in a child process") && strstr(desc, ".built"), "%s", desc);
    cls_engine_free(e);
    glob_t g;
    char pat[4200];
    snprintf(pat, sizeof pat, "%s/*.bin", dir);
    ck_assert_int_eq(glob(pat, 0, NULL, &g), GLOB_NOMATCH);
    snprintf(pat, sizeof pat, "%s/*.built", dir);
    ck_assert_int_eq(glob(pat, 0, NULL, &g), 0);
    ck_assert_uint_eq(g.gl_pathc, 3); /* the decode, the query and the check program */
    globfree(&g);
    ck_assert_int_eq(engine_from_cache(idx), 1);
    /* a crashing compiler (CLSEARCH_FAULT=compiler-crash: the helper aborts) in a fresh folder */
    const char *cold = tu_tmp_path("cache-crash");
    ck_assert_int_eq(mkdir(cold, 0755), 0);
    setenv("CLSEARCH_CACHE_DIR", cold, 1);
    setenv("CLSEARCH_FAULT", "compiler-crash:1", 1);
    ck_assert_int_eq(cls_engine_create(idx, tu_device(), &e), CLS_E_BUILD);
    const char *msg = cls_last_error();
    ck_assert_msg(strstr(msg, "the OpenCL compiler crashed (SIGABRT") && strstr(msg, "kernel program of") &&
                      strstr(msg, "injected fault"), "%s", msg);
    unsetenv("CLSEARCH_FAULT");
    ck_assert_msg(cls_engine_create(idx, tu_device(), &e) == CLS_OK, "after the crash: %s", cls_last_error());
    cls_engine_free(e);
    cls_index_close(idx);
    unsetenv("CLSEARCH_PROGRAM_CACHE");
    if (compiler) setenv("CLSEARCH_COMPILER", compiler, 1);
    free(compiler);
}
END_TEST

/* ---- real collections --------------------------------------------------------------------- */

typedef struct add_ctx { cls_builder *b; cls_batch *q; } add_ctx;
static int add_doc(void *u, const char *docno, size_t dl, const char *text, size_t tl)
{
    return cls_builder_add(((add_ctx *)u)->b, docno, dl, text, tl) != CLS_OK;
}
static int add_topic(void *u, const char *qid, const char *text)
{
    return cls_batch_add(((add_ctx *)u)->q, qid, text) != CLS_OK;
}

static void collection_matches_ref(cls_corpus_format cf, const char *corpus, cls_topics_format tf, const char *topics)
{
    add_ctx c = {0};
    ck_assert_int_eq(cls_builder_create(NULL, &c.b), CLS_OK);
    ck_assert_msg(cls_corpus_read(cf, corpus, add_doc, &c) == CLS_OK, "%s", cls_last_error());
    const char *path = tu_tmp_path("collection.idx");
    ck_assert_int_eq(cls_builder_write(c.b, path), CLS_OK);
    cls_builder_free(c.b);
    cls_index *idx;
    ck_assert_int_eq(cls_index_open(path, &idx), CLS_OK);
    ck_assert_int_eq(cls_batch_create(idx, &c.q), CLS_OK);
    ck_assert_msg(cls_topics_read(tf, topics, add_topic, &c) == CLS_OK, "%s", cls_last_error());
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    size_t any = search_both(dev, ref, c.q, 1000, CLS_MODE_OR);
    size_t all = search_both(dev, ref, c.q, 1000, CLS_MODE_AND);
    ck_assert_uint_ge(any, all); /* an AND match is an OR match: OR fills at least as many places */
    cls_batch_free(c.q);
    cls_engine_free(dev);
    cls_engine_free(ref);
    cls_index_close(idx);
    remove(path);
}

/* In the data part (test_kernels_data): main() has checked that CACM is there. */
START_TEST(cacm_top1000_matches_ref)
{
    const char *corpus = tu_data_path("cacm/cacm.tar.gz"), *topics = tu_data_path("cacm/topics.cacm.txt");
    collection_matches_ref(CLS_CORPUS_HTML, corpus, CLS_TOPICS_ANSERINI, topics);
}
END_TEST

START_TEST(generated_top1000_matches_ref)
{
    gen_opts o;
    gen_defaults(&o);
    o.num_docs = 5000;
    o.num_queries = 500;
    const char *dir = tu_tmp_path("gen");
    ck_assert_msg(gen_corpus(&o, dir) == CLS_OK, "%s", cls_last_error());
    char corpus[4200], topics[4200];
    snprintf(corpus, sizeof corpus, "%s/corpus.jsonl", dir);
    snprintf(topics, sizeof topics, "%s/topics.tsv", dir);
    collection_matches_ref(CLS_CORPUS_JSONL, corpus, CLS_TOPICS_TSV, topics);
    remove(corpus);
    remove(topics);
    rmdir(dir);
}
END_TEST


/* ---- kernel parameters: variants, tuning file, override ------------------------------------ */

/* Whole searches with other variants of every query kernel (work-group sizes, both portable
 * in-group scans; the warp-shuffle scan where the device is NVIDIA's; the host asleep on a
 * completion callback, HOST_WAIT=1) against the reference. */
START_TEST(variants_match_ref)
{
    clx_device d;
    ck_assert_msg(clx_select(tu_device(), &d) == CLS_OK, "%s", cls_last_error());
    const char *specs[] = {"WG_SCAN_ALGO=1,WG_INTERSECT=32,WG_SCORE=32,WG_TOPK=32,WG_ROWS=64",
                           "WG_SCAN_ALGO=0,WG_INTERSECT=128,WG_SCORE=64,WG_TOPK=256,WG_ROWS=32,HOST_WAIT=1",
                           clx_is_nvidia(&d.info) ? "WG_SCAN_ALGO=2,WG_INTERSECT=32,WG_TOPK=1024" : NULL};
    cls_index *idx = random_index(14, 3000, 400);
    cls_engine *ref;
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    random_queries(b, 77, 60, 400);
    setenv("CLSEARCH_TUNING", "none", 1);
    for (size_t i = 0; i < sizeof specs / sizeof *specs && specs[i]; i++) {
        setenv("CLSEARCH_PARAMS", specs[i], 1);
        cls_engine *dev;
        ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s: %s", specs[i], cls_last_error());
        ck_assert_msg(strstr(cls_engine_describe(dev), "CLSEARCH_PARAMS"), "%s", cls_engine_describe(dev));
        const uint32_t ks[] = {1, 7, 1000};
        for (size_t k = 0; k < 3; k++) {
            search_both(dev, ref, b, ks[k], CLS_MODE_OR);
            search_both(dev, ref, b, ks[k], CLS_MODE_AND);
        }
        cls_engine_free(dev);
    }
    unsetenv("CLSEARCH_PARAMS");
    unsetenv("CLSEARCH_TUNING");
    cls_batch_free(b);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

static void write_tuning(const char *path, const char *name, const char *driver, const char *params)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf,
                     "{\"clsearch_tuning\": 1, \"devices\": [{\"device\": \"other\", \"driver\": \"1\", \"params\": "
                     "{\"WG_TOPK\": 1024}}, {\"device\": \"%s\", \"driver\": \"%s\", \"tuned\": \"T0\", \"params\": %s}]}",
                     name, driver, params);
    tu_write_file(path, buf, (size_t)n);
}

/* The tuning file is found by device name and driver, applied over the built-in database,
 * overridden by CLSEARCH_PARAMS; a malformed file or a value the device cannot run is an
 * error naming its source (never silently ignored). */
START_TEST(tuning_file_and_override)
{
    clx_device d;
    ck_assert_msg(clx_select(tu_device(), &d) == CLS_OK, "%s", cls_last_error());
    /* in a folder of a long name: the description holds the file's whole path, never cut short
     * (as where the tests run from a deep checkout) */
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s", tu_tmp_path("tuning-folder-of-a-long-name-so-that-the-engine-description-"
                                                "grows-past-any-fixed-size-it-might-have-been-given-once-"
                                                "and-the-parameters-after-the-path-must-still-be-seen-whole"));
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    setenv("CLSEARCH_TUNING", path, 1);
    unsetenv("CLSEARCH_PARAMS");
    clx_params p, base;
    /* no file yet: the database */
    ck_assert_msg(clx_params_for(&d.info, &base) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(strstr(base.source, "default"), "%s", base.source);
    /* an entry for this device and driver */
    /* (the first variant of variants_match_ref: its programs are in the cache already) */
    write_tuning(path, d.info.name, d.info.driver_version,
                 "{\"WG_INTERSECT\": 32, \"WG_SCORE\": 32, \"WG_TOPK\": 32, \"WG_SCAN_ALGO\": 1}");
    ck_assert_msg(clx_params_for(&d.info, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(p.wg_topk, 32);
    ck_assert_uint_eq(p.wg_scan_algo, 1);
    ck_assert_uint_eq(p.scan_wg, base.scan_wg); /* not in the entry: the database's */
    ck_assert_msg(strstr(p.source, "tuning file") && strstr(p.source, path) && strstr(p.source, "T0"), "%s", p.source);
    char line[1024];
    cls_device_params(&d.info, line, sizeof line);
    ck_assert_msg(strstr(line, "WG_TOPK=32") && strstr(line, "from tuning file"), "%s", line);
    /* the engine builds with them and still matches the reference */
    cls_index *idx = random_index(13, 700, 50);
    cls_engine *dev, *ref;
    ck_assert_msg(cls_engine_create(idx, tu_device(), &dev) == CLS_OK, "%s", cls_last_error());
    ck_assert_msg(strstr(cls_engine_describe(dev), "-DWG_TOPK=32"), "%s", cls_engine_describe(dev));
    ck_assert_int_eq(cls_engine_create(idx, "ref", &ref), CLS_OK);
    cls_batch *b;
    ck_assert_int_eq(cls_batch_create(idx, &b), CLS_OK);
    random_queries(b, 5, 40, 50);
    search_both(dev, ref, b, 10, CLS_MODE_OR);
    search_both(dev, ref, b, 10, CLS_MODE_AND);
    cls_engine_free(dev);
    /* CLSEARCH_PARAMS over the file */
    setenv("CLSEARCH_PARAMS", "WG_TOPK=64", 1);
    ck_assert_msg(clx_params_for(&d.info, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert_uint_eq(p.wg_topk, 64);
    ck_assert_uint_eq(p.wg_scan_algo, 1);
    ck_assert_msg(strstr(p.source, "tuning file") && strstr(p.source, "CLSEARCH_PARAMS"), "%s", p.source);
    setenv("CLSEARCH_PARAMS", "WG_TOPK=48", 1); /* not a power of two */
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), "WG_TOPK=48"), "%s", cls_last_error());
    setenv("CLSEARCH_PARAMS", "NO_SUCH=1", 1);
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_ARG);
    ck_assert_int_eq(cls_engine_create(idx, tu_device(), &dev), CLS_E_ARG);
    setenv("CLSEARCH_PARAMS", "WG_TOPK", 1);
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_ARG);
    unsetenv("CLSEARCH_PARAMS");
    /* another driver version: the entry does not apply */
    write_tuning(path, d.info.name, "no-such-driver", "{\"WG_TOPK\": 32}");
    ck_assert_msg(clx_params_for(&d.info, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert_str_eq(p.source, base.source);
    /* malformed, unknown parameter, impossible value: errors naming the file */
    tu_write_file(path, "{\"devices\": [", 13);
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_FORMAT);
    ck_assert_msg(strstr(cls_last_error(), path), "%s", cls_last_error());
    ck_assert_int_eq(cls_engine_create(idx, tu_device(), &dev), CLS_E_FORMAT);
    write_tuning(path, d.info.name, d.info.driver_version, "{\"WG_TOPKK\": 32}");
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_FORMAT);
    write_tuning(path, d.info.name, d.info.driver_version, "{\"WG_TOPK\": 1.5}");
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_FORMAT);
    write_tuning(path, d.info.name, d.info.driver_version, "{\"WG_TOPK\": 3}");
    ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_ARG);
    ck_assert_msg(strstr(cls_last_error(), path), "%s", cls_last_error());
    if (!clx_is_nvidia(&d.info)) {
        write_tuning(path, d.info.name, d.info.driver_version, "{\"WG_SCAN_ALGO\": 2}");
        ck_assert_int_eq(clx_params_for(&d.info, &p), CLS_E_ARG);
        ck_assert_msg(strstr(cls_last_error(), "NVIDIA"), "%s", cls_last_error());
    }
    /* CLSEARCH_TUNING=none: the file is not read at all */
    setenv("CLSEARCH_TUNING", "none", 1);
    ck_assert_msg(clx_params_for(&d.info, &p) == CLS_OK, "%s", cls_last_error());
    ck_assert_str_eq(p.source, base.source);
    unsetenv("CLSEARCH_TUNING");
    unlink(path);
    rmdir(dir);
    cls_batch_free(b);
    cls_engine_free(ref);
    cls_index_close(idx);
}
END_TEST

/* tune's last step, the tuning file's writing (bench_tune_write), as any output: a new file in
 * the umask's mode holding the entry; a second device's entry kept beside the first, whose entry
 * is replaced; a file of another kind refused, and written over with --force; an empty one
 * started over; /dev/full and a file-size limit (a full disk) an error that leaves the old file as
 * it was and no temporary file. The sweeps before it take POCL minutes on a cold cache, so the
 * command's own test (tests/hostile.sh) runs only tune's refusals, which come before them. */
START_TEST(tuning_file_written_whole)
{
    char *dir = tu_strdup(tu_tmp_path("tune"));
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/tuning.json", dir);
    cls_device_info a, b;
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "device A");
    snprintf(a.driver_version, sizeof a.driver_version, "1.0");
    snprintf(a.vendor, sizeof a.vendor, "test");
    b = a;
    snprintf(b.name, sizeof b.name, "device B");
    clx_params pa, pb;
    clx_params_default(&a, &pa);
    clx_params_default(&b, &pb);
    pa.wg_topk = 32;
    cJSON *m = cJSON_CreateArray();
    ck_assert(m != NULL);
    mode_t um = umask(027);
    int rc = bench_tune_write(path, &a, &pa, m, "quick");
    umask(um);
    ck_assert_int_eq(rc, 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(bench_tune_write(path, &b, &pb, m, "cpu"), 0);
    pa.wg_topk = 64;
    ck_assert_int_eq(bench_tune_write(path, &a, &pa, m, "quick"), 0);
    cJSON *root;
    ck_assert_msg(clx_tuning_load(path, &root) == CLS_OK && root, "%s", cls_last_error());
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "devices")), 2);
    const cJSON *ea = clx_tuning_find(root, &a);
    ck_assert(ea && cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ea, "params"), "WG_TOPK")->valuedouble == 64);
    ck_assert(clx_tuning_find(root, &b) != NULL);
    cJSON_Delete(root);
    /* what is no tuning file: kept, unless --force; an empty file starts over */
    tu_write_file(path, "my notes\n", 9);
    ck_assert_int_eq(bench_tune_write(path, &a, &pa, m, "quick"), 1);
    size_t len;
    unsigned char *text = tu_read_file(path, &len);
    ck_assert(len == 9 && memcmp(text, "my notes\n", 9) == 0);
    free(text);
    of_set_force(1);
    rc = bench_tune_write(path, &a, &pa, m, "quick");
    of_set_force(0);
    ck_assert_int_eq(rc, 0);
    tu_write_file(path, "", 0);
    ck_assert_int_eq(bench_tune_write(path, &a, &pa, m, "quick"), 0);
    ck_assert_msg(clx_tuning_load(path, &root) == CLS_OK && root, "%s", cls_last_error());
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "devices")), 1);
    cJSON_Delete(root);
    /* a full disk: on a device, and under a file-size limit past which writes fail (EFBIG) */
    if (access("/dev/full", W_OK) == 0) ck_assert_int_eq(bench_tune_write("/dev/full", &a, &pa, m, "quick"), 1);
    unsigned char *before = tu_read_file(path, &len);
    ck_assert_int_eq(bench_tune_write(path, &b, &pb, m, "cpu"), 0); /* a file larger than the limit below */
    free(before);
    before = tu_read_file(path, &len);
    struct rlimit keep, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &keep), 0);
    lim = keep;
    lim.rlim_cur = 256;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    rc = bench_tune_write(path, &a, &pa, m, "quick");
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &keep), 0);
    signal(SIGXFSZ, was);
    ck_assert_int_eq(rc, 1);
    size_t len2;
    unsigned char *after = tu_read_file(path, &len2);
    ck_assert(len2 == len && memcmp(before, after, len) == 0);
    free(before), free(after);
    glob_t g;
    char pat[4300];
    snprintf(pat, sizeof pat, "%s/*.tmp.*", dir);
    ck_assert_int_eq(glob(pat, 0, NULL, &g), GLOB_NOMATCH);
    cJSON_Delete(m);
    remove(path);
    rmdir(dir);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *dc = tcase_create("decode"); /* CK_RUN_CASE=decode runs it alone */
    tcase_set_timeout(dc, 600);
    tcase_add_loop_test(dc, decode_random_and_edges, 0, CLS_NUM_CODECS);
    suite_add_tcase(s, dc);
    TCase *bc = tcase_create("bench_kernels"); /* the kernels only `clsearch bench` runs */
    tcase_set_timeout(bc, 600);
    tcase_add_test(bc, scan_against_host);
    tcase_add_test(bc, copy_kernels_copy);
    suite_add_tcase(s, bc);
    TCase *pc = tcase_create("params"); /* variants, tuning file, CLSEARCH_PARAMS */
    tcase_set_timeout(pc, 600);
    tcase_add_test(pc, variants_match_ref);
    tcase_add_test(pc, tuning_file_and_override);
    tcase_add_test(pc, tuning_file_written_whole);
    suite_add_tcase(s, pc);
    TCase *tc = tcase_create("pocl");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, topk_random_ties_edges);
    tcase_add_test(tc, topk_team_rows);
    tcase_add_test(tc, topk_segments_shuffled_ties);
    tcase_add_test(tc, topk_wide_rows);
    tcase_add_test(tc, topk_rows_many);
    tcase_add_test(tc, topk_rows_cuts_and_select);
    tcase_add_test(tc, search_and_or_wide_rows);
    tcase_add_test(tc, search_ties_break_on_docid);
    tcase_add_test(tc, search_random_collections);
    tcase_add_test(tc, search_many_batches);
    tcase_add_test(tc, program_cache_cold_warm_corrupt_concurrent);
    tcase_add_test(tc, program_cache_by_driver);
    tcase_add_test(tc, generated_top1000_matches_ref);
    suite_add_tcase(s, tc);
    return s;
}

/* The cases that need ../shared/data: `test_kernels --data`, CTest's test_kernels_data. */
static Suite *data_suite(void)
{
    Suite *s = suite_create("kernels_data");
    TCase *tc = tcase_create("collections");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cacm_top1000_matches_ref);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    static const char *const needs[] = {"cacm/cacm.tar.gz", "cacm/topics.cacm.txt", NULL};
    return tu_main(argc, argv, suite, data_suite, needs);
}
