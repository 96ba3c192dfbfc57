/*
 * Generated collections straight into an index: gen_corpus's documents, never written as text.
 *
 * The model is generate.c's, draw for draw (gen.h holds what both share): the same vocabulary,
 * the same document stream (one xoshiro256** sequence, stream 2, a document's two length draws
 * then one draw per token), the same Zipf ranks. So the index equals, byte for byte, the one
 * `clsearch index` builds from gen_corpus's corpus.jsonl with the default analyzer (the
 * generated words are never stopwords and Porter leaves them as they are) and the same build
 * options, and the topics equal its topics.tsv. test_generate checks that.
 *
 * Work, on `threads` worker threads (the calling thread only waits and reports progress):
 *
 *  0. Set-up. One helper thread walks the document stream once: each document's length (two
 *     draws, kept: they are the index's document lengths) and then skipping its tokens (one
 *     xoshiro step each, ~1 ns), keeping the generator state every GI_CHECK documents. Meanwhile
 *     another draws the vocabulary, the CDF, a guide table over it and the words' byte order
 *     (the dictionary's). This is the only serial part: ~1.3 ns a token (10 s at gov2 scale).
 *  1. Counting. The documents are cut into one contiguous range per worker, balanced by tokens,
 *     each starting at a checkpoint. A worker regenerates its documents and counts per rank the
 *     documents it has: df per (worker, rank). Each worker keeps 16 bytes per rank (gi_rs): the
 *     last document that had it, so a token costs one random access and no branch (no hash
 *     table per document), its tf in the document, and the count, later the write cursor.
 *  2. Filling. From the counts every (worker, rank) gets the slot where its postings start in one
 *     array laid out in dictionary order, worker after worker: term t's list is then its
 *     workers' postings in docID order, no sort needed. The workers regenerate their documents
 *     and write each posting into place as one word, docID << 5 | tf (docIDs < 10^8 < 2^27),
 *     where tf 31 is an escape into a small per-worker table of (slot, tf) (rare: the top few
 *     ranks in long documents). Regenerating costs a second pass over the tokens but keeps memory at 4
 *     bytes a posting, sized exactly from the counts, with no per-posting allocation.
 *  3. Encoding. The terms are cut into one range per worker, balanced by postings; each worker
 *     encodes its lists with idx_encode_list (as the index writer does) into its own words and
 *     into the shared block table. Then the postings array is freed, the workers' words are
 *     concatenated and the block offsets moved by each worker's base.
 *  4. Writing: idx_file_write, through a temporary name; then the topics (generate.c's writer).
 *
 * Zipf draws: the text generator's binary search in the CDF, O(log V) with a cache miss a step
 * for large V, is replaced by a guide table: guide[k] = the rank cdf_search gives for
 * u = k / K (K the power of two >= V), so the rank of any u in [k/K, (k+1)/K) lies in
 * [guide[k], guide[k+1]], usually one or two ranks apart, searched the same way. K is a power of
 * two, so k = floor(u * K) and k / K are exact, and the rank is exactly cdf_search's: the same
 * documents, in O(1) expected time.
 *
 * Determinism: the document stream does not depend on the number of threads, the ranges only
 * decide who regenerates which documents, lists are in docID order and each list's encoding
 * depends on the list alone, so the file is byte-identical for any --threads.
 *
 * Memory, for P postings, V words, N documents and T threads: 4 P (postings) + 32 P / B (block
 * table) + the encoded words + 16 V T (per-rank state) + ~40 N (lengths, norms, names) + the
 * vocabulary's ~40 V. At the gov2 scale (P = 6.0e9, V = 4e6, N = 25.2e6, T = 16) about 34 GiB
 * at the peak, while encoding.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "generate.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/an.h"
#include "util/err.h"
#include "gen.h"
#include "index/index.h"
#include "index/bm25.h"
#include "index/index_file.h"
#include "index/index_write.h"
#include "util/vec.h"

#define GI_CHECK 256u   /* documents between saved generator states */
#define GI_TF_BITS 5u   /* a posting: docID << 5 | tf, where tf 31 means "31 or more": escape */
#define GI_TF_ESC ((1u << GI_TF_BITS) - 1)
#define GI_HUGE ((size_t)2 << 20)
#define GI_BATCH 64u    /* documents between progress updates and stop checks */
#define GI_MAX_THREADS 1024u

/* ---- Scales ------------------------------------------------------------------------------- */

/* GOV2: 25,205,179 documents. With Zipf s = 1 over 4,000,000 words, a document of 301 tokens on
 * average (log-normal, sigma 0.6) has 237.9 distinct terms on average (sum over ranks of
 * 1 - (1 - p_r)^len, averaged over the lengths), so 6.0e9 postings, about GOV2's count. */
#define GOV2_DOCS 25205179u
#define GOV2_VOCAB 4000000u
#define GOV2_MEAN_LEN 301.0

cls_status gen_scale(const char *name, gen_opts *o)
{
    if (!name || !o) return err_set(CLS_E_ARG, "generate: no scale name or options");
    gen_defaults(o);
    if (strcmp(name, "small") == 0) return CLS_OK;
    if (strcmp(name, "medium") == 0 || strcmp(name, "gov2") == 0) {
        o->num_docs = name[0] == 'm' ? 2000000u : GOV2_DOCS;
        o->vocab_size = GOV2_VOCAB;
        o->mean_doc_len = GOV2_MEAN_LEN;
        o->num_queries = 10000;
        return CLS_OK;
    }
    return err_set(CLS_E_ARG, "generate: unknown scale '%s' (small, medium, gov2)", name);
}

/* ---- Context ------------------------------------------------------------------------------- */

typedef struct gi_esc {
    uint64_t slot;
    uint32_t tf, pad;
} gi_esc;

/* A worker's state of one rank, 16 bytes, so that a token costs one random access: the last
 * document (+1) that had the rank, which makes the distinct terms of a document without a hash
 * table; its tf there (filling); documents with the rank (counting), then the slot of its next
 * posting (filling). */
typedef struct gi_rs {
    uint32_t last, tf;
    uint64_t n;
} gi_rs;

/* One worker's scratch and outputs. */
typedef struct gi_worker {
    struct gi_ctx *g;
    unsigned id;
    pthread_t th;
    int started;
    cls_status st;
    char msg[512];
    uint32_t *rank, *at, *hi; /* a document's draws: rank (or bucket start), unresolved ones */
    double *uu;
    uint32_t *used; /* a document's distinct ranks (filling) */
    gi_rs *rs;      /* per rank */
    gi_esc *esc;    /* tf escapes, in the order written */
    uint64_t nesc;
    size_t esc_cap;
    idx_words wb;   /* encoding: this worker's words */
    uint64_t base;  /* where they go in the words section */
    uint32_t t0, t1; /* encoding: its terms [t0, t1) */
} gi_worker;

typedef struct gi_ctx {
    const gen_opts *o;
    const cls_build_opts *b;
    uint32_t N, V;
    unsigned T;
    gen_len lm;
    /* model */
    char *words;
    uint8_t *lens;
    double *cdf;
    uint32_t *guide; /* K + 1 */
    double K;
    /* set-up: the stream walked once */
    uint32_t *doclen;   /* N */
    gen_rng *check;     /* state before document c * GI_CHECK */
    uint64_t num_tokens;
    uint32_t *range;    /* T + 1 document boundaries, multiples of GI_CHECK (but N) */
    /* dictionary: the ranks that occur, in byte order */
    uint32_t *order;    /* V ranks in byte order of their words */
    uint32_t *term_of;  /* rank -> term number (UINT32_MAX: does not occur) */
    uint32_t num_terms;
    uint64_t *start;    /* num_terms + 1: list start slots */
    uint64_t P;
    /* postings: docID << GI_TF_BITS | min(tf, GI_TF_ESC) */
    uint32_t *post;
    gi_esc *esc;        /* every worker's escapes, by slot */
    uint64_t nesc;
    /* encoding */
    idx_term *terms;
    idx_block *blocks;
    uint64_t num_blocks;
    float *norm;
    uint32_t *words_out;
    uint64_t num_words;
    gi_worker *w;
    /* progress */
    atomic_uint_fast64_t done;
    atomic_uint finished;
    atomic_int stop;
    gen_progress_fn progress;
    void *user;
} gi_ctx;

_Static_assert(GEN_MAX_DOCS <= (1u << (32 - GI_TF_BITS)), "a docID and a tf share 32 bits");

/* A large table: 2 MiB-aligned and marked for huge pages, where the system has them, since the
 * passes read and write it at random (fewer TLB misses); zeroed when zero is set. */
static void *gi_alloc(size_t n, int zero)
{
    void *p = NULL;
    if (n < GI_HUGE) return zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
    if (posix_memalign(&p, GI_HUGE, n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n, MADV_HUGEPAGE); /* advice only: without it the table still works */
#endif
    if (zero) memset(p, 0, n);
    return p;
}

static double gi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- Threads -------------------------------------------------------------------------------- */

typedef cls_status (*gi_fn)(gi_ctx *g, gi_worker *w);

typedef struct gi_call {
    gi_ctx *g;
    gi_worker *w;
    gi_fn fn;
} gi_call;

static void *gi_main(void *p)
{
    gi_call *c = p;
    cls_status st = c->fn(c->g, c->w);
    c->w->st = st;
    if (st != CLS_OK) {
        snprintf(c->w->msg, sizeof c->w->msg, "%s", cls_last_error());
        atomic_store(&c->g->stop, 1); /* the others give up at their next batch */
    }
    atomic_fetch_add(&c->g->finished, 1u);
    return NULL;
}

static void gi_report(gi_ctx *g, const char *phase, uint64_t done, uint64_t total)
{
    if (g->progress) g->progress(g->user, phase, done, total);
}

/* With a progress callback: reports g->done of total every 0.1 s until n threads have finished
 * (checked every 2 ms, so a short phase does not wait for the next report). */
static void gi_wait(gi_ctx *g, unsigned n, const char *phase, uint64_t total)
{
    if (!g->progress) return;
    double last = gi_now();
    while (atomic_load(&g->finished) < n) {
        struct timespec ts = {0, 2000000L};
        nanosleep(&ts, NULL);
        double t = gi_now();
        if (t - last >= 0.1) {
            gi_report(g, phase, (uint64_t)atomic_load(&g->done), total);
            last = t;
        }
    }
}

/* Runs fn on every worker (n threads), reporting phase progress (g->done of total) every 0.1 s
 * from the calling thread, and returns the first failure. */
static cls_status gi_run(gi_ctx *g, gi_fn fn, const char *phase, uint64_t total)
{
    unsigned n = g->T;
    gi_call *calls = malloc(n * sizeof *calls);
    if (!calls) return err_set(CLS_E_NOMEM, "generate: out of memory for %u threads", n);
    atomic_store(&g->done, 0);
    atomic_store(&g->finished, 0u);
    atomic_store(&g->stop, 0);
    gi_report(g, phase, 0, total);
    cls_status st = CLS_OK;
    unsigned started = 0;
    for (unsigned i = 0; i < n; i++) {
        calls[i] = (gi_call){g, &g->w[i], fn};
        g->w[i].st = CLS_OK;
        g->w[i].started = 0;
        int e = pthread_create(&g->w[i].th, NULL, gi_main, &calls[i]);
        if (e != 0) {
            st = err_set(CLS_E_NOMEM, "generate: cannot start thread %u of %u: %s", i + 1, n, strerror(e));
            atomic_store(&g->stop, 1);
            break;
        }
        g->w[i].started = 1;
        started++;
    }
    gi_wait(g, started, phase, total);
    for (unsigned i = 0; i < n; i++)
        if (g->w[i].started) pthread_join(g->w[i].th, NULL);
    for (unsigned i = 0; st == CLS_OK && i < started; i++)
        if (g->w[i].st != CLS_OK) st = err_set(g->w[i].st, "%s", g->w[i].msg);
    free(calls);
    if (st == CLS_OK) gi_report(g, phase, total, total);
    return st;
}

/* ---- One document ---------------------------------------------------------------------------- */

/* Draws a document of len tokens into w->rank[0 .. len), exactly cdf_search's ranks. In two
 * loops, so that the memory reads of many tokens are in flight at once rather than one after
 * another behind unpredictable branches: (1) every draw and its guide-table bucket (most buckets
 * hold one rank: the draw is resolved), (2) the search of the unresolved draws in the CDF, within
 * their buckets' bounds. */
static inline void gi_doc(const gi_ctx *g, gen_rng *r, uint32_t len, gi_worker *w)
{
    const uint32_t *guide = g->guide;
    const double *cdf = g->cdf, K = g->K;
    uint32_t *rank = w->rank, *at = w->at, *hi = w->hi;
    double *uu = w->uu;
    uint32_t nu = 0;
    for (uint32_t t = 0; t < len; t++) {
        double u = rng_unit(r);
        uint32_t k = (uint32_t)(u * K);
        uint32_t lo = guide[k], h = guide[k + 1];
        rank[t] = lo;
        uu[nu] = u;
        at[nu] = t;
        hi[nu] = h;
        nu += lo != h;
    }
    for (uint32_t i = 0; i < nu; i++) rank[at[i]] = cdf_search_in(cdf, rank[at[i]], hi[i], uu[i]);
}

/* The generator state before document d (d in a range: after a checkpoint, every document
 * from it to d is walked again). */
static void gi_state_at(const gi_ctx *g, uint32_t d, gen_rng *r)
{
    *r = g->check[d / GI_CHECK];
    for (uint32_t x = d / GI_CHECK * GI_CHECK; x < d; x++) {
        uint32_t len = gen_doc_len(r, &g->lm);
        for (uint32_t t = 0; t < len; t++) (void)rng_next(r);
    }
}

/* ---- Set-up: the stream walked once ----------------------------------------------------------- */

static void *gi_walk(void *p)
{
    gi_ctx *g = p;
    gen_rng r;
    rng_seed(&r, g->o->seed, 2);
    uint64_t tokens = 0;
    for (uint32_t d = 0; d < g->N; d++) {
        if (d % GI_CHECK == 0) g->check[d / GI_CHECK] = r;
        uint32_t len = gen_doc_len(&r, &g->lm);
        g->doclen[d] = len;
        tokens += len;
        for (uint32_t t = 0; t < len; t++) (void)rng_next(&r);
        if (d % 4096 == 4095) {
            atomic_fetch_add(&g->done, 4096);
            if (atomic_load(&g->stop)) break; /* the model failed: the set-up fails anyway */
        }
    }
    g->num_tokens = tokens;
    atomic_fetch_add(&g->finished, 1u);
    return NULL;
}

/* Ranges of whole checkpoints, one per worker, of about equal tokens. */
static void gi_ranges(gi_ctx *g)
{
    uint32_t nc = (g->N + GI_CHECK - 1) / GI_CHECK;
    uint64_t acc = 0;
    unsigned w = 1;
    g->range[0] = 0;
    for (uint32_t c = 0; c < nc && w < g->T; c++) {
        uint32_t e = c + 1 == nc ? g->N : (c + 1) * GI_CHECK;
        for (uint32_t d = c * GI_CHECK; d < e; d++) acc += g->doclen[d];
        while (w < g->T && acc * g->T >= (uint64_t)w * g->num_tokens) g->range[w++] = e;
    }
    while (w <= g->T) g->range[w++] = g->N;
}

typedef struct gi_key {
    uint64_t key;
    uint32_t rank;
} gi_key;

static int gi_key_cmp(const void *a, const void *b)
{
    const gi_key *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* The vocabulary's byte order: words of a..z, at most 11 letters, packed 5 bits a letter from the
 * top (a = 1; the unused tail 0), so a prefix sorts first, as memcmp with shorter-first does. */
static cls_status gi_sort_words(gi_ctx *g)
{
    gi_key *k = malloc((size_t)g->V * sizeof *k);
    if (!k) return err_set(CLS_E_NOMEM, "generate: sorting %u words", g->V);
    for (uint32_t r = 0; r < g->V; r++) {
        const char *s = g->words + (size_t)r * GEN_WORD_STRIDE;
        uint64_t key = 0;
        for (unsigned i = 0; i < GEN_WORD_MAX; i++) {
            key <<= 5;
            if (i < g->lens[r]) key |= (uint64_t)(s[i] - 'a' + 1);
        }
        k[r] = (gi_key){key, r};
    }
    qsort(k, g->V, sizeof *k, gi_key_cmp);
    for (uint32_t i = 0; i < g->V; i++) g->order[i] = k[i].rank;
    free(k);
    return CLS_OK;
}

/* guide[k] = cdf_search(cdf, V, k / K) for k = 0 .. K, by one merge. */
static void gi_guide(gi_ctx *g, uint32_t K)
{
    uint32_t i = 0, V = g->V;
    for (uint32_t k = 0; k <= K; k++) {
        double u = (double)k / (double)K; /* exact: K is a power of two */
        while (i < V - 1 && !(g->cdf[i] > u)) i++;
        g->guide[k] = i;
    }
}

/* ---- Passes ----------------------------------------------------------------------------------- */

static cls_status gi_count(gi_ctx *g, gi_worker *w)
{
    uint32_t d0 = g->range[w->id], d1 = g->range[w->id + 1];
    if (d0 == d1) return CLS_OK;
    gen_rng r;
    gi_state_at(g, d0, &r);
    gi_rs *rs = w->rs;
    const uint32_t *rank = w->rank;
    for (uint32_t d = d0; d < d1; d++) {
        uint32_t len = gen_doc_len(&r, &g->lm);
        if (len != g->doclen[d])
            return err_set(CLS_E_ARG, "generate: internal error: document %u drawn as %u tokens, not %u", d, len,
                           g->doclen[d]);
        gi_doc(g, &r, len, w);
        for (uint32_t t = 0, tag = d + 1; t < len; t++) { /* branch-free: a document per rank once */
            gi_rs *x = &rs[rank[t]];
            x->n += x->last != tag;
            x->last = tag;
        }
        if ((d - d0) % GI_BATCH == GI_BATCH - 1) {
            atomic_fetch_add(&g->done, GI_BATCH);
            if (atomic_load(&g->stop)) return CLS_OK;
        }
    }
    return CLS_OK;
}

static cls_status gi_fill(gi_ctx *g, gi_worker *w)
{
    uint32_t d0 = g->range[w->id], d1 = g->range[w->id + 1];
    if (d0 == d1) return CLS_OK;
    gen_rng r;
    gi_state_at(g, d0, &r);
    gi_rs *rs = w->rs;
    const uint32_t *rank = w->rank;
    uint32_t *used = w->used, *post = g->post;
    for (uint32_t d = d0; d < d1; d++) {
        uint32_t len = gen_doc_len(&r, &g->lm);
        gi_doc(g, &r, len, w);
        uint32_t n = 0, tag = d + 1;
        for (uint32_t t = 0; t < len; t++) { /* tf per rank and the distinct ranks, branch-free */
            gi_rs *x = &rs[rank[t]];
            uint32_t fresh = x->last != tag;
            x->tf = (fresh ? 0 : x->tf) + 1;
            x->last = tag;
            used[n] = rank[t];
            n += fresh;
        }
        for (uint32_t i = 0; i < n; i++) {
            gi_rs *x = &rs[used[i]];
            uint32_t tf = x->tf;
            uint64_t s = x->n++;
            if (tf < GI_TF_ESC) {
                post[s] = d << GI_TF_BITS | tf;
                continue;
            }
            post[s] = d << GI_TF_BITS | GI_TF_ESC;
            if (!vec_reserve(&w->esc, &w->esc_cap, w->nesc + 1, sizeof *w->esc))
                return err_set(CLS_E_NOMEM, "generate: out of memory for large frequencies");
            w->esc[w->nesc++] = (gi_esc){s, tf, 0};
        }
        if ((d - d0) % GI_BATCH == GI_BATCH - 1) {
            atomic_fetch_add(&g->done, GI_BATCH);
            if (atomic_load(&g->stop)) return CLS_OK;
        }
    }
    return CLS_OK;
}

/* The first escape at or after slot s. */
static uint64_t gi_esc_find(const gi_ctx *g, uint64_t s)
{
    uint64_t lo = 0, hi = g->nesc;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (g->esc[mid].slot < s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static cls_status gi_encode(gi_ctx *g, gi_worker *w)
{
    if (w->t0 == w->t1) return CLS_OK;
    const cls_build_opts *o = g->b;
    uint64_t maxdf = 0;
    for (uint32_t t = w->t0; t < w->t1; t++)
        if (g->start[t + 1] - g->start[t] > maxdf) maxdf = g->start[t + 1] - g->start[t];
    uint32_t *docs = malloc((size_t)(maxdf + 1) * 4), *freqs = malloc((size_t)(maxdf + 1) * 4),
             *vals = malloc((size_t)(maxdf + 1) * 4);
    if (!docs || !freqs || !vals) {
        free(docs);
        free(freqs);
        free(vals);
        return err_set(CLS_E_NOMEM, "generate: out of memory encoding lists of %llu postings",
                       (unsigned long long)maxdf);
    }
    uint64_t e = gi_esc_find(g, g->start[w->t0]), pending = 0;
    cls_status st = CLS_OK;
    for (uint32_t t = w->t0; t < w->t1 && st == CLS_OK; t++) {
        uint64_t s = g->start[t];
        uint32_t df = (uint32_t)(g->start[t + 1] - s);
        for (uint32_t i = 0; i < df; i++) {
            uint32_t x = g->post[s + i], f = x & GI_TF_ESC;
            docs[i] = x >> GI_TF_BITS;
            if (f == GI_TF_ESC) {
                if (e >= g->nesc || g->esc[e].slot != s + i) {
                    st = err_set(CLS_E_ARG, "generate: internal error: a frequency escape is missing");
                    break;
                }
                f = g->esc[e++].tf;
            }
            freqs[i] = f;
        }
        if (st != CLS_OK) break;
        idx_term *te = &g->terms[t];
        st = idx_encode_list(o, docs, freqs, df, CLS_SCORING_BM25, bm25_idf(g->N, df), g->norm, vals, g->blocks + te->first_block,
                             &w->wb);
        pending += df;
        if (pending >= (1u << 20)) {
            atomic_fetch_add(&g->done, pending);
            pending = 0;
            if (atomic_load(&g->stop)) break;
        }
    }
    free(docs);
    free(freqs);
    free(vals);
    return st;
}

/* Moves a worker's words to their place in the words section and its blocks' offsets with them. */
static cls_status gi_gather(gi_ctx *g, gi_worker *w)
{
    if (w->t0 == w->t1) return CLS_OK;
    uint64_t base = w->base;
    memcpy(g->words_out + base, w->wb.w, (size_t)w->wb.n * 4);
    free(w->wb.w);
    w->wb.w = NULL;
    uint64_t b0 = g->terms[w->t0].first_block;
    uint64_t b1 = g->terms[w->t1 - 1].first_block + g->terms[w->t1 - 1].num_blocks;
    for (uint64_t b = b0; b < b1; b++) g->blocks[b].offset += (uint32_t)base;
    atomic_fetch_add(&g->done, w->wb.n);
    return CLS_OK;
}

/* ---- Driver ------------------------------------------------------------------------------------ */

static unsigned gi_threads(const cls_build_opts *b)
{
    if (b->threads) return b->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > (long)GI_MAX_THREADS ? GI_MAX_THREADS : (unsigned)n;
}

static void gi_free(gi_ctx *g)
{
    free(g->words);
    free(g->lens);
    free(g->cdf);
    free(g->guide);
    free(g->doclen);
    free(g->check);
    free(g->range);
    free(g->order);
    free(g->term_of);
    free(g->start);
    free(g->post);
    free(g->esc);
    free(g->terms);
    free(g->blocks);
    free(g->norm);
    free(g->words_out);
    for (unsigned i = 0; g->w && i < g->T; i++) {
        gi_worker *w = &g->w[i];
        free(w->used);
        free(w->rank);
        free(w->at);
        free(w->hi);
        free(w->uu);
        free(w->rs);
        free(w->esc);
        free(w->wb.w);
    }
    free(g->w);
}

static int gi_esc_cmp(const void *a, const void *b)
{
    const gi_esc *x = a, *y = b;
    return (x->slot > y->slot) - (x->slot < y->slot);
}

/* The vocabulary, the CDF, the guide table and the byte order, on a helper thread. */
typedef struct gi_model_job {
    gi_ctx *g;
    uint32_t K;
    cls_status st;
    char msg[512];
} gi_model_job;

static void *gi_model(void *p)
{
    gi_model_job *j = p;
    gi_ctx *g = j->g;
    j->st = gen_vocab(g->o->seed, g->V, g->words, g->lens);
    if (j->st == CLS_OK) {
        gen_cdf(g->cdf, g->V, g->o->zipf_s);
        gi_guide(g, j->K);
        j->st = gi_sort_words(g);
    }
    if (j->st != CLS_OK) {
        snprintf(j->msg, sizeof j->msg, "%s", cls_last_error());
        atomic_store(&g->stop, 1);
    }
    atomic_fetch_add(&g->finished, 1u);
    return NULL;
}

/* Set-up: the stream walk and the model, on two helper threads, while this one reports. */
static cls_status gi_setup(gi_ctx *g)
{
    uint32_t N = g->N, V = g->V;
    uint32_t K = 1;
    while (K < V) K *= 2;
    g->K = (double)K;
    g->words = malloc((size_t)V * GEN_WORD_STRIDE);
    g->lens = malloc(V);
    g->cdf = gi_alloc((size_t)V * sizeof *g->cdf, 0);
    g->guide = gi_alloc(((size_t)K + 1) * sizeof *g->guide, 0);
    g->doclen = malloc((size_t)N * sizeof *g->doclen);
    g->check = malloc(((size_t)N / GI_CHECK + 1) * sizeof *g->check);
    g->range = malloc(((size_t)g->T + 1) * sizeof *g->range);
    g->order = malloc((size_t)V * sizeof *g->order);
    g->term_of = malloc((size_t)V * sizeof *g->term_of);
    g->w = calloc(g->T, sizeof *g->w);
    if (!g->words || !g->lens || !g->cdf || !g->guide || !g->doclen || !g->check || !g->range || !g->order ||
        !g->term_of || !g->w)
        return err_set(CLS_E_NOMEM, "generate: out of memory for the model of %u words and %u documents", V, N);
    uint32_t max_len = g->lm.max_len;
    for (unsigned i = 0; i < g->T; i++) {
        gi_worker *w = &g->w[i];
        w->g = g;
        w->id = i;
        w->used = malloc((size_t)max_len * sizeof *w->used);
        w->rank = malloc((size_t)max_len * sizeof *w->rank);
        w->at = malloc((size_t)max_len * sizeof *w->at);
        w->hi = malloc((size_t)max_len * sizeof *w->hi);
        w->uu = malloc((size_t)max_len * sizeof *w->uu);
        w->rs = gi_alloc((size_t)V * sizeof *w->rs, 1);
        if (!w->used || !w->rank || !w->at || !w->hi || !w->uu || !w->rs)
            return err_set(CLS_E_NOMEM, "generate: out of memory for %u threads' tables of %u words", g->T, V);
    }

    atomic_store(&g->done, 0);
    atomic_store(&g->finished, 0u);
    atomic_store(&g->stop, 0);
    gi_report(g, "set-up", 0, N);
    pthread_t walker, modeler;
    int e = pthread_create(&walker, NULL, gi_walk, g);
    if (e != 0) return err_set(CLS_E_NOMEM, "generate: cannot start a thread: %s", strerror(e));
    gi_model_job job = {g, K, CLS_OK, ""};
    int inline_model = pthread_create(&modeler, NULL, gi_model, &job) != 0;
    if (inline_model) gi_model(&job); /* no second thread: this one does it */
    gi_wait(g, 2, "set-up", N);
    pthread_join(walker, NULL);
    if (!inline_model) pthread_join(modeler, NULL);
    if (job.st != CLS_OK) return err_set(job.st, "%s", job.msg);
    gi_report(g, "set-up", N, N);
    gi_ranges(g);
    return CLS_OK;
}

/* After counting: the dictionary, every list's start and every worker's first slot per rank. */
static cls_status gi_layout(gi_ctx *g)
{
    uint32_t V = g->V;
    uint32_t T = 0;
    for (uint32_t i = 0; i < V; i++) {
        uint32_t r = g->order[i];
        uint64_t df = 0;
        for (unsigned k = 0; k < g->T; k++) df += g->w[k].rs[r].n;
        g->term_of[r] = df ? T++ : UINT32_MAX;
    }
    g->num_terms = T;
    g->start = malloc(((size_t)T + 1) * sizeof *g->start);
    g->terms = calloc((size_t)T + 1, sizeof *g->terms);
    if (!g->start || !g->terms) return err_set(CLS_E_NOMEM, "generate: out of memory for %u terms", T);
    uint64_t slot = 0, nb = 0;
    const uint32_t B = g->b->block_size;
    for (uint32_t i = 0; i < V; i++) {
        uint32_t r = g->order[i], t = g->term_of[r];
        if (t == UINT32_MAX) continue;
        g->start[t] = slot;
        for (unsigned k = 0; k < g->T; k++) {
            gi_rs *x = &g->w[k].rs[r];
            uint64_t c = x->n;
            x->n = slot;
            x->last = 0; /* filling meets the same documents again */
            slot += c;
        }
        uint64_t df = slot - g->start[t];
        g->terms[t].df = (uint32_t)df;
        g->terms[t].first_block = (uint32_t)nb;
        g->terms[t].num_blocks = (uint32_t)((df + B - 1) / B);
        nb += g->terms[t].num_blocks;
        if (nb > UINT32_MAX)
            return err_set(CLS_E_ARG, "generate: index too large: more than 2^32 blocks; use a larger --block or fewer documents");
    }
    g->start[T] = slot;
    g->P = slot;
    g->num_blocks = nb;
    /* raw stores every posting in two words: know now rather than after encoding */
    if (g->b->codec == CLS_CODEC_RAW && 2 * g->P - nb > UINT32_MAX)
        return err_set(CLS_E_ARG, "generate: index too large for raw: %llu postings need %llu words, over 2^32; "
                       "use a compressing codec or fewer documents",
                       (unsigned long long)g->P, (unsigned long long)(2 * g->P - nb));
    /* No check against the machine's memory: on machines whose memory grows as it is used,
     * MemTotal reads far too low at the start. A failed allocation says what was asked for. */
    uint64_t need = 4 * g->P + 32 * nb;
    g->post = gi_alloc((size_t)(g->P + 1) * sizeof *g->post, 0);
    g->blocks = malloc((size_t)(nb + 1) * sizeof *g->blocks);
    if (!g->post || !g->blocks)
        return err_set(CLS_E_NOMEM, "generate: out of memory for %llu postings (%.1f GiB)", (unsigned long long)g->P,
                       (double)need / (1u << 30));
    return CLS_OK;
}

/* After filling: every escape in slot order, and each worker's terms for encoding. */
static cls_status gi_prepare_encoding(gi_ctx *g)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < g->T; k++) n += g->w[k].nesc;
    g->esc = malloc((size_t)(n + 1) * sizeof *g->esc);
    if (!g->esc) return err_set(CLS_E_NOMEM, "generate: out of memory for %llu large frequencies", (unsigned long long)n);
    for (unsigned k = 0; k < g->T; k++) {
        gi_worker *w = &g->w[k];
        if (w->nesc) memcpy(g->esc + g->nesc, w->esc, (size_t)w->nesc * sizeof *w->esc);
        g->nesc += w->nesc;
        free(w->esc);
        w->esc = NULL;
        free(w->rs);
        w->rs = NULL;
    }
    qsort(g->esc, g->nesc, sizeof *g->esc, gi_esc_cmp);
    /* norms exactly as idx_write_lists computes them */
    g->norm = malloc(((size_t)g->N + 1) * sizeof *g->norm);
    if (!g->norm) return err_set(CLS_E_NOMEM, "generate: out of memory for %u document norms", g->N);
    double avgdl = g->N && g->num_tokens ? (double)g->num_tokens / g->N : 1.0;
    for (uint32_t d = 0; d < g->N; d++) g->norm[d] = bm25_norm(IDX_SCORE_K1, IDX_SCORE_B, g->doclen[d], avgdl);
    /* terms cut by postings */
    uint32_t t = 0;
    for (unsigned k = 0; k < g->T; k++) {
        g->w[k].t0 = t;
        uint64_t until = g->P * (k + 1) / g->T;
        while (t < g->num_terms && (k + 1 == g->T || g->start[t] < until)) t++;
        g->w[k].t1 = t;
    }
    return CLS_OK;
}

/* Names (G00000000 ...), the dictionary's bytes, and idx_file_write. */
static cls_status gi_write(gi_ctx *g, const char *path)
{
    uint32_t N = g->N, T = g->num_terms;
    uint64_t *docno_off = malloc(((size_t)N + 1) * sizeof *docno_off);
    char *docno = malloc((size_t)N * 10);
    uint64_t *term_off = malloc(((size_t)T + 1) * sizeof *term_off);
    char *term_blob = malloc((size_t)T * GEN_WORD_MAX + 1);
    cls_status st = CLS_OK;
    if (!docno_off || !docno || !term_off || !term_blob) {
        st = err_set(CLS_E_NOMEM, "generate: out of memory for document names and the dictionary");
        goto out;
    }
    for (uint32_t d = 0; d < N; d++) { /* "G%08u": N <= GEN_MAX_DOCS = 10^8 */
        char *p = docno + (size_t)d * 10;
        p[0] = 'G';
        uint32_t x = d;
        for (int i = 8; i >= 1; i--) {
            p[i] = (char)('0' + x % 10);
            x /= 10;
        }
        p[9] = '\0';
        docno_off[d] = (uint64_t)d * 10;
    }
    docno_off[N] = (uint64_t)N * 10;
    uint64_t blob = 0;
    uint32_t t = 0;
    for (uint32_t i = 0; i < g->V; i++) {
        uint32_t r = g->order[i];
        if (g->term_of[r] == UINT32_MAX) continue;
        term_off[t++] = blob;
        memcpy(term_blob + blob, g->words + (size_t)r * GEN_WORD_STRIDE, g->lens[r]);
        blob += g->lens[r];
    }
    term_off[T] = blob;
    cls_analyzer_opts an;
    cls_analyzer_defaults(&an);
    idx_file_parts parts = {
        .analyzer = an_opts_pack(&an),
        .codec = g->b->codec,
        .block_size = g->b->block_size,
        .pfor_depth = g->b->pfor_depth,
        .num_docs = N,
        .num_terms = T,
        .num_postings = g->P,
        .num_tokens = g->num_tokens,
        .doclen = g->doclen,
        .docno_off = docno_off,
        .docno_blob = docno,
        .docno_blob_len = (uint64_t)N * 10,
        .terms = g->terms,
        .term_off = term_off,
        .term_blob = term_blob,
        .term_blob_len = blob,
        .blocks = g->blocks,
        .num_blocks = g->num_blocks,
        .words = g->words_out,
        .num_words = g->num_words,
    };
    st = idx_file_write(path, &parts);
out:
    free(docno_off);
    free(docno);
    free(term_off);
    free(term_blob);
    return st;
}

/* Fails at once, not after minutes of work, where path's folder is absent or not writable. */
static cls_status gi_check_folder(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir) return err_set(CLS_E_ARG, "generate: path too long: %s", path);
    if (!slash) {
        strcpy(dir, ".");
    } else if (n == 0) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    struct stat st;
    if (stat(dir, &st) != 0) return err_set(CLS_E_IO, "generate: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return err_set(CLS_E_IO, "generate: %s: %s", dir, strerror(ENOTDIR));
    if (access(dir, W_OK | X_OK) != 0)
        return err_set(CLS_E_IO, "generate: cannot write in %s: %s", dir, strerror(errno));
    return CLS_OK;
}

cls_status gen_index_ex(const gen_opts *o, const cls_build_opts *b, const char *index_path,
                        const char *topics_path, gen_progress_fn progress, void *user, gen_index_info *info)
{
    if (!o || !b || !index_path || !*index_path)
        return err_set(CLS_E_ARG, "generate: no options or no index path");
    if (topics_path && strcmp(topics_path, index_path) == 0)
        return err_set(CLS_E_ARG, "generate: the index and the topics cannot both go to %s", index_path);
    cls_status st = gen_check_model(o);
    if (st != CLS_OK || (st = idx_check_opts(b)) != CLS_OK || (st = gi_check_folder(index_path)) != CLS_OK ||
        (topics_path && (st = gi_check_folder(topics_path)) != CLS_OK))
        return st;
    if (info) memset(info, 0, sizeof *info);

    gi_ctx *g = calloc(1, sizeof *g);
    if (!g) return err_set(CLS_E_NOMEM, "generate: out of memory");
    g->o = o;
    g->b = b;
    g->N = o->num_docs;
    g->V = o->vocab_size;
    g->T = gi_threads(b);
    if (g->T > (g->N + GI_CHECK - 1) / GI_CHECK) g->T = (g->N + GI_CHECK - 1) / GI_CHECK; /* a range each */
    g->progress = progress;
    g->user = user;
    gen_len_init(&g->lm, o->mean_doc_len);
    double t0 = gi_now(), t[6] = {0};

    if ((st = gi_setup(g)) != CLS_OK) goto out;
    t[0] = gi_now();
    if ((st = gi_run(g, gi_count, "counting", g->N)) != CLS_OK) goto out;
    if ((st = gi_layout(g)) != CLS_OK) goto out;
    t[1] = gi_now();
    if ((st = gi_run(g, gi_fill, "filling", g->N)) != CLS_OK) goto out;
    if ((st = gi_prepare_encoding(g)) != CLS_OK) goto out;
    t[2] = gi_now();
    if ((st = gi_run(g, gi_encode, "encoding", g->P)) != CLS_OK) goto out;
    free(g->post);
    g->post = NULL;
    uint64_t words = 0;
    for (unsigned k = 0; k < g->T; k++) {
        gi_worker *w = &g->w[k];
        uint64_t n = w->wb.n;
        w->base = words;
        words += n;
    }
    if (words > UINT32_MAX) {
        st = err_set(CLS_E_ARG, "generate: index too large: the postings need %llu words, over 2^32; use a denser "
                     "codec or fewer documents", (unsigned long long)words);
        goto out;
    }
    g->num_words = words;
    g->words_out = malloc((size_t)(words + 1) * 4);
    if (!g->words_out) {
        st = err_set(CLS_E_NOMEM, "generate: out of memory for %.1f GiB of postings", (double)words * 4 / (1u << 30));
        goto out;
    }
    if ((st = gi_run(g, gi_gather, "gathering", words)) != CLS_OK) goto out;
    t[3] = gi_now();
    gi_report(g, "writing", 0, 0);
    if ((st = gi_write(g, index_path)) != CLS_OK) goto out;
    t[4] = gi_now();
    if (topics_path) {
        gi_report(g, "topics", 0, o->num_queries);
        if ((st = gen_topics_file(o, g->words, g->lens, g->cdf, topics_path)) != CLS_OK) goto out;
        gi_report(g, "topics", o->num_queries, o->num_queries);
    }
    t[5] = gi_now();
    if (info) {
        info->num_docs = g->N;
        info->num_terms = g->num_terms;
        info->num_tokens = g->num_tokens;
        info->num_postings = g->P;
        info->num_words = g->num_words;
        info->threads = g->T;
        info->seconds_setup = t[0] - t0;
        info->seconds_count = t[1] - t[0];
        info->seconds_fill = t[2] - t[1];
        info->seconds_encode = t[3] - t[2];
        info->seconds_write = t[4] - t[3];
        info->seconds_topics = t[5] - t[4];
    }
out:
    gi_free(g);
    free(g);
    return st;
}

cls_status gen_index(const gen_opts *o, const cls_build_opts *b, const char *index_path, const char *topics_path)
{
    return gen_index_ex(o, b, index_path, topics_path, NULL, NULL, NULL);
}
