/* The host executor (-d host): query processing on the CPU's cores over the same index and the
 * same compressed blocks the devices read, one query per worker at a time, document at a time.
 * Its answers equal the reference engine's to the bit: a document's score is the sum of its
 * terms' contributions in query order from 0 (score_contrib, as ref_engine.c adds them), and
 * every document it passes over provably ranks below the k it keeps.
 *
 * Per query (its worker's cursors walk the lists; a block is decoded only when a document in
 * it is needed, with the strict decoder, so a damaged block fails the search as it fails the
 * reference engine's):
 *   - and: the lists by length, the shortest drives; each candidate is looked up in the others
 *     (next_geq skips whole blocks by their last docID). Block-max AND: once k documents are
 *     held, where the blocks holding the candidate bound its score at or below the k-th best
 *     score, the candidate moves past the first of those blocks to end.
 *   - or: MaxScore. The terms by their lists' bounds, the smallest first; the longest prefix
 *     whose bounds sum to at most the k-th best score cannot lift a document alone (non-
 *     essential): candidates come from the other lists only, and a candidate's non-essential
 *     terms are looked up, largest bound first, while its bound still beats the k-th score.
 *   - and-or: and's k first (the documents holding every term rank first); where fewer than k
 *     hold every term, or over the documents that hold some but not every term fills the rest.
 * The k best are kept in a heap ordered as hits rank (hit_before: score, then the smaller
 * docID). Documents come in ascending docID, so a new one enters only with a score above the
 * heap's least; a document is skipped only where a bound shows its score is not above it.
 *
 * Bounds: a block's max_score is its largest contribution at the term's block weight (the idf,
 * or 1 for an impact index), so at query weight w it bounds a posting's contribution by
 * max_score * (w / idf) up to rounding; comparisons inflate a bound by BOUND_SLACK (2^-12
 * relative, as cl/or_parts.cl's OR_SLACK), far more than the rounding of a few float operations.
 * Bounds hold only at the BM25 parameters of the blocks (idx_bounds_valid); at others every
 * candidate is scored (no pruning), still exactly.
 *
 * Threads: the calling thread and threads-1 workers take the search's queries through one
 * counter; each query's hits land at r->docs + q * kk (results_pack packs them). Every buffer a
 * query uses is its worker's, sized when a search begins (the batch's longest query, its k), so
 * no query allocates. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "algo/algo.h"
#include "device/clx.h"
#include "engine/engine.h"
#include "index/bm25.h"
#include "util/err.h"
#include "util/vec.h"

#define BOUND_SLACK (1.0f + 1.0f / 4096.0f)

/* The executor's counters (cls_engine_counters), as bench e2e's work shares read them. */
enum host_counter {
    HC_QUERIES,
    HC_BLOCKS_IN_LISTS,   /* the blocks of the queries' lists */
    HC_BLOCKS_DECODED,    /* of them, decoded (their docIDs) */
    HC_POSTINGS_IN_LISTS,
    HC_POSTINGS_DECODED,  /* the postings of the blocks decoded */
    HC_POSTINGS_SCORED,   /* postings whose contribution made a candidate's score */
    HC_COUNT
};
static const char *const counter_names[HC_COUNT] = {"queries",           "blocks_in_lists",   "blocks_decoded",
                                                    "postings_in_lists", "postings_decoded", "postings_scored"};

/* One query term's walk through its list. */
typedef struct cursor {
    uint32_t qpos;        /* its place in the query (scores add in this order) */
    float w;              /* its query weight (bm25_weight) */
    float scale;          /* block max_score x scale bounds a posting's contribution */
    float ub;             /* the list's bound: its largest block max_score x scale */
    uint64_t b0, b1;      /* its blocks [b0, b1) */
    uint64_t b;           /* the block the cursor is in (b1: the list is done) */
    uint64_t decoded;     /* the block whose docIDs docs[] holds (UINT64_MAX: none) */
    uint64_t fdecoded;    /* the block whose frequencies freqs[] holds (decoded where one is scored) */
    uint32_t pos, n;      /* the posting within it, and its count */
    uint32_t *docs, *freqs; /* IDX_MAX_BLOCK each, the worker's */
} cursor;

/* A query and the postings of its lists, for host_search_order. */
typedef struct host_qcost {
    uint64_t cost;
    uint32_t q;
} host_qcost;

/* A kept hit as one key that orders as hits rank (hit_before): the score's bits above (scores are
 * never negative, -0 or NaN: positive weights, k1 >= 0, tf >= 1, so their bits order as they
 * do), the docID's complement below (the smaller docID ranks first). The heap keeps the least on
 * top. */
typedef uint64_t hhit;

static inline hhit hit_key(float s, uint32_t d)
{
    uint32_t bits;
    memcpy(&bits, &s, 4);
    return (uint64_t)bits << 32 | (UINT32_MAX - d);
}
static inline float hit_score(hhit h)
{
    uint32_t bits = (uint32_t)(h >> 32);
    float s;
    memcpy(&s, &bits, 4);
    return s;
}
static inline uint32_t hit_doc(hhit h) { return UINT32_MAX - (uint32_t)h; }

/* A worker's state, on cache lines of its own: its counters change with every block it decodes,
 * and a neighbour's on the same line would make the cores pass the line back and forth. */
typedef struct host_worker {
    _Alignas(64) struct host_engine *e;
    pthread_t th;
    int started;
    cursor *cur;           /* the query's cursors, its terms in query order */
    cursor **by;           /* the same, in the algorithm's order */
    float *contrib;        /* per query position: the candidate's contribution there (0: absent) */
    float *prefix;         /* or: the bounds of its terms by bound, summed (nterms + 1) */
    uint32_t *at;          /* or: each cursor's current docID, in bound order */
    uint32_t *space;       /* docs and freqs of every cursor: 2 x IDX_MAX_BLOCK each */
    size_t nterms_cap;
    hhit *heap, *tier;     /* k each: the heap, and and-or's first tier */
    size_t k_cap;
    uint64_t counts[HC_COUNT]; /* this search's, summed into the engine's at its end */
} host_worker;

struct host_engine {
    const cls_index *idx;
    unsigned nthreads;
    int nice;              /* its helper threads' niceness above the process's (host_create) */
    _Atomic int nice_errno; /* a helper's setpriority failure (0: none) */
    unsigned ready;        /* helpers started (host_create waits for them all) */
    host_worker *w;
    float *norms;          /* at k1, b (recomputed when a search asks for others) */
    float k1, b;
    float *term_ub;        /* per term: its largest block max_score (at weight 1 / idf scale 1) */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;          /* a new search for the workers */
    int stop;
    unsigned busy;         /* workers still on the search */
    unsigned active;       /* the threads the search takes (at most its queries): workers 1.. */
    /* the search in progress */
    const cls_batch *bt;
    const query_algo *algo;
    cls_mode mode;
    uint32_t kk;
    int prune;
    cls_results *r;
    const uint32_t *order; /* the run's queries (NULL: 0 .. nrun - 1) */
    uint64_t nrun;
    _Alignas(64) _Atomic uint64_t next; /* on a line of its own: every query taken writes it */
    _Alignas(64) char after_next;
    host_qcost *costs;     /* host_search_order's, */
    size_t costs_cap;
    uint32_t *own_order;   /* and the order it gives */
    size_t own_cap;
    _Atomic int failed;
    cls_status status;     /* the first failure (under mu) */
    char err[1024];
    cls_counter counters[HC_COUNT];
};

/* ---- Cursors -------------------------------------------------------------------------------- */

/* Decodes the docIDs of the cursor's block b (once). */
static cls_status cur_load(host_worker *w, cursor *c)
{
    if (c->decoded == c->b) return CLS_OK;
    const cls_index *idx = w->e->idx;
    cls_status s = idx_decode_docs(idx, c->b, c->docs);
    if (s != CLS_OK) return s;
    c->decoded = c->b;
    c->n = idx_info_count(idx->blocks[c->b].info);
    c->pos = 0;
    w->counts[HC_BLOCKS_DECODED]++;
    w->counts[HC_POSTINGS_DECODED] += c->n;
    return CLS_OK;
}

/* The tf of the cursor's posting (its block's frequencies decoded once, when first asked). */
static inline cls_status cur_tf(host_worker *w, cursor *c, uint32_t *tf)
{
    if (c->fdecoded != c->decoded) {
        cls_status s = idx_decode_freqs(w->e->idx, c->decoded, c->freqs);
        if (s != CLS_OK) return s;
        c->fdecoded = c->decoded;
    }
    *tf = c->freqs[c->pos];
    return CLS_OK;
}

/* Moves the cursor to the block that may hold target (its last docID >= target), without
 * decoding; b1 where none does. */
static inline void cur_shallow(const cls_index *idx, cursor *c, uint32_t target)
{
    while (c->b < c->b1 && idx->blocks[c->b].last < target) c->b++;
}

/* Moves the cursor to its first posting >= target; *doc receives it, UINT32_MAX at the end. */
static cls_status cur_next_geq(host_worker *w, cursor *c, uint32_t target, uint32_t *doc)
{
    const cls_index *idx = w->e->idx;
    if (c->b == c->decoded && c->pos < c->n && c->docs[c->pos] >= target) {
        *doc = c->docs[c->pos];
        return CLS_OK;
    }
    cur_shallow(idx, c, target);
    if (c->b >= c->b1) {
        *doc = UINT32_MAX;
        return CLS_OK;
    }
    int fresh = c->decoded != c->b;
    cls_status s = cur_load(w, c);
    if (s != CLS_OK) return s;
    if (fresh) c->pos = 0;
    /* within the block: its last docID is >= target, so a posting is found; galloping from the
     * cursor's place, as lookups mostly land a few postings on */
    uint32_t lo = c->pos, hi = c->n - 1, step = 1;
    while (lo + step < hi && c->docs[lo + step] < target) {
        lo += step;
        step *= 2;
    }
    if (lo + step < hi) hi = lo + step;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->docs[mid] < target) lo = mid + 1;
        else hi = mid;
    }
    c->pos = lo;
    *doc = c->docs[lo];
    return CLS_OK;
}

/* The cursor's current posting, then the next one: *doc its docID (UINT32_MAX at the end). */
static cls_status cur_advance(host_worker *w, cursor *c, uint32_t *doc)
{
    if (c->b >= c->b1) {
        *doc = UINT32_MAX;
        return CLS_OK;
    }
    if (c->pos + 1 < c->n && c->decoded == c->b) {
        c->pos++;
        *doc = c->docs[c->pos];
        return CLS_OK;
    }
    c->b++;
    if (c->b >= c->b1) {
        *doc = UINT32_MAX;
        return CLS_OK;
    }
    cls_status s = cur_load(w, c);
    if (s == CLS_OK) *doc = c->docs[c->pos];
    return s;
}

/* The bound of what the cursor's block b adds (its max_score at the term's weight). */
static inline float cur_block_ub(const cls_index *idx, const cursor *c)
{
    return c->b < c->b1 ? idx->blocks[c->b].max_score * c->scale : 0.0f;
}

/* ---- The heap of the k best --------------------------------------------------------------- */

/* Moves h[i] down to its place in the heap h[0..n) (the least on top). */
static inline void sift_down(hhit *h, uint32_t i, uint32_t n)
{
    hhit x = h[i];
    for (;;) {
        uint32_t l = 2 * i + 1, m = l;
        if (l >= n) break;
        if (l + 1 < n && h[l + 1] < h[l]) m = l + 1;
        if (h[m] >= x) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = x;
}

/* The heap h[0..n) sorted in place as hits rank, the best first: the least is taken to the end,
 * again and again (heapsort). */
static void heap_sort_out(hhit *h, uint32_t n)
{
    for (uint32_t i = n; i-- > 1;) {
        hhit t = h[0];
        h[0] = h[i];
        h[i] = t;
        sift_down(h, 0, i);
    }
}

static void heap_push(hhit *h, uint32_t *n, uint32_t k, float s, uint32_t d)
{
    hhit x = hit_key(s, d);
    if (*n == k) {
        if (x <= h[0]) return;
        h[0] = x; /* replace the least and sift down */
        sift_down(h, 0, *n);
        return;
    }
    uint32_t i = (*n)++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h[p] <= x) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = x;
}

/* The heap's least score once it holds k (else -inf: every document enters). */
static inline float heap_theta(const hhit *h, uint32_t n, uint32_t k) { return n == k ? hit_score(h[0]) : -INFINITY; }

/* ---- Scoring -------------------------------------------------------------------------------- */

/* A candidate's exact score: its terms' contributions in query order from 0, as the reference
 * engine adds them. w->contrib holds each query position's contribution, 0 where the term is
 * absent: x + 0.0f is x for every score (they are never -0), so adding the absent ones changes no
 * bit of the sum. */
static inline float exact_score(const host_worker *w, uint32_t nterms)
{
    float s = 0.0f;
    for (uint32_t i = 0; i < nterms; i++) s += w->contrib[i];
    return s;
}

/* Term c's contribution at the candidate d it is on (its block's frequencies decoded if need be). */
static inline cls_status contribution(host_worker *w, cursor *c, uint32_t d, float *out)
{
    uint32_t tf;
    cls_status s = cur_tf(w, c, &tf);
    if (s == CLS_OK) *out = score_contrib(w->e->idx->scoring, c->w, tf, w->e->norms[d]);
    return s;
}

/* ---- and (block-max AND) ------------------------------------------------------------------- */

static int by_df(const void *a, const void *b)
{
    const cursor *x = *(cursor *const *)a, *y = *(cursor *const *)b;
    uint64_t nx = x->b1 - x->b0, ny = y->b1 - y->b0;
    if (nx != ny) return nx < ny ? -1 : 1;
    return (x->qpos > y->qpos) - (x->qpos < y->qpos);
}

/* Documents holding every term, the k best into h (n of them); skip (and-or's second pass
 * none) unused here. */
static cls_status run_and(host_worker *w, uint32_t nt, uint32_t k, int prune, hhit *h, uint32_t *n)
{
    const cls_index *idx = w->e->idx;
    for (uint32_t i = 0; i < nt; i++) w->by[i] = &w->cur[i];
    qsort(w->by, nt, sizeof *w->by, by_df);
    cursor *lead = w->by[0];
    uint32_t d = 0;
    cls_status s;
    *n = 0;
    for (;;) {
        if ((s = cur_next_geq(w, lead, d, &d)) != CLS_OK) return s;
        if (d == UINT32_MAX) return CLS_OK;
        float theta = heap_theta(h, *n, k);
        if (prune && *n == k) {
            /* the blocks that would hold d: their bounds in query order */
            float ub = 0.0f;
            uint32_t skip_to = UINT32_MAX;
            int ended = 0;
            for (uint32_t i = 0; i < nt; i++) {
                cursor *c = &w->cur[i];
                cur_shallow(idx, c, d);
                if (c->b >= c->b1) {
                    ended = 1;
                    break;
                }
                ub += cur_block_ub(idx, c);
                if (idx->blocks[c->b].last < skip_to) skip_to = idx->blocks[c->b].last;
            }
            if (ended) return CLS_OK;
            if (ub * BOUND_SLACK <= theta) {
                if (skip_to == UINT32_MAX) return CLS_OK;
                d = skip_to + 1;
                continue;
            }
            /* d itself: the lead's exact contribution for its block's bound */
            float lc;
            if ((s = contribution(w, lead, d, &lc)) != CLS_OK) return s;
            ub += lc - cur_block_ub(idx, lead);
            if (ub * BOUND_SLACK <= theta) {
                if (d == UINT32_MAX - 1) return CLS_OK;
                d++;
                continue;
            }
        }
        /* d into every other list */
        uint32_t i = 1, e = d;
        for (; i < nt; i++) {
            if ((s = cur_next_geq(w, w->by[i], d, &e)) != CLS_OK) return s;
            if (e != d) break;
        }
        if (i < nt) {
            if (e == UINT32_MAX) return CLS_OK;
            d = e; /* the lead catches up */
            continue;
        }
        for (uint32_t j = 0; j < nt; j++)
            if ((s = contribution(w, &w->cur[j], d, &w->contrib[j])) != CLS_OK) return s;
        float sc = exact_score(w, nt);
        w->counts[HC_POSTINGS_SCORED] += nt;
        if (*n < k || sc > theta) heap_push(h, n, k, sc, d);
        if (d == UINT32_MAX - 1) return CLS_OK;
        d++;
    }
}

/* ---- or (MaxScore) ------------------------------------------------------------------------- */

static int by_ub(const void *a, const void *b)
{
    const cursor *x = *(cursor *const *)a, *y = *(cursor *const *)b;
    if (x->ub != y->ub) return x->ub < y->ub ? -1 : 1;
    return (x->qpos > y->qpos) - (x->qpos < y->qpos);
}

/* Documents holding some term (and, where not_all, not every one of the query's terms: and-or's
 * second tier), the k best into h (n of them). */
static cls_status run_or(host_worker *w, uint32_t nt, uint32_t k, int prune, int not_all, hhit *h, uint32_t *n)
{
    const cls_index *idx = w->e->idx;
    cls_status s;
    for (uint32_t i = 0; i < nt; i++) w->by[i] = &w->cur[i];
    qsort(w->by, nt, sizeof *w->by, by_ub);
    /* prefix[i]: the bounds of by[0..i) summed, so a document in none of by[i..) scores at most it */
    float *prefix = w->prefix;
    prefix[0] = 0.0f;
    for (uint32_t i = 0; i < nt; i++) prefix[i + 1] = prefix[i] + w->by[i]->ub;
    uint32_t *docs_at = w->at; /* each cursor's current docID */
    for (uint32_t i = 0; i < nt; i++)
        if ((s = cur_next_geq(w, w->by[i], 0, &docs_at[i])) != CLS_OK) return s;
    uint32_t ess = 0; /* by[ess..) are essential */
    uint32_t fails = 0, wait = 0; /* region checks that failed in a row; candidates until the next */
    *n = 0;
    for (;;) {
        float theta = heap_theta(h, *n, k);
        if (prune && *n == k)
            while (ess < nt && prefix[ess + 1] * BOUND_SLACK <= theta) ess++;
        if (ess == nt) return CLS_OK; /* no document can enter any more */
        uint32_t d = UINT32_MAX;
        for (uint32_t i = ess; i < nt; i++)
            if (docs_at[i] < d) d = docs_at[i];
        if (d == UINT32_MAX) return CLS_OK;
        if (prune && *n == k && (wait == 0 || --wait == 0)) {
            /* the region from d on where no list changes block: where the blocks' bounds there
             * cannot beat theta, the essential lists move past it undecoded. A check that fails
             * costs a pass over the terms: after failures in a row the next few candidates go
             * unchecked (wait), as many as the failures, up to 32 */
            float rb = 0.0f;
            uint32_t end = UINT32_MAX;
            for (uint32_t i = 0; i < nt; i++) {
                cursor *c = w->by[i];
                cur_shallow(idx, c, d);
                if (c->b >= c->b1) continue;
                const idx_block *bl = &idx->blocks[c->b];
                if (bl->first <= d) {
                    rb += cur_block_ub(idx, c);
                    if (bl->last < end) end = bl->last;
                } else if (bl->first - 1 < end) {
                    end = bl->first - 1;
                }
            }
            if (rb * BOUND_SLACK <= theta) {
                if (end == UINT32_MAX) return CLS_OK;
                for (uint32_t i = ess; i < nt; i++)
                    if (docs_at[i] <= end && (s = cur_next_geq(w, w->by[i], end + 1, &docs_at[i])) != CLS_OK) return s;
                fails = 0;
                continue;
            }
            fails += fails < 32;
            wait = fails;
        }
        /* the essential terms holding d; their exact part of the bound */
        memset(w->contrib, 0, nt * sizeof *w->contrib);
        float ub = 0.0f;
        uint32_t holding = 0;
        for (uint32_t i = ess; i < nt; i++) {
            cursor *c = w->by[i];
            if (docs_at[i] != d) continue;
            if ((s = contribution(w, c, d, &w->contrib[c->qpos])) != CLS_OK) return s;
            ub += w->contrib[c->qpos];
            holding++;
            if ((s = cur_advance(w, c, &docs_at[i])) != CLS_OK) return s;
        }
        int out = 0;
        if (prune && *n == k && ess > 0) {
            /* the lists' bounds of the others, then their blocks' that would hold d (no decoding) */
            if ((ub + prefix[ess]) * BOUND_SLACK <= theta) continue;
            float bub = ub;
            for (uint32_t i = 0; i < ess; i++) {
                cursor *c = w->by[i];
                cur_shallow(idx, c, d);
                if (c->b < c->b1 && idx->blocks[c->b].first <= d) bub += cur_block_ub(idx, c);
            }
            if (bub * BOUND_SLACK <= theta) continue;
        }
        ub += prefix[ess];
        /* the non-essential ones, largest bound first, while d may still enter */
        for (uint32_t i = ess; i-- > 0;) {
            if (prune && *n == k && ub * BOUND_SLACK <= theta) {
                out = 1;
                break;
            }
            cursor *c = w->by[i];
            ub -= c->ub;
            if (docs_at[i] < d && (s = cur_next_geq(w, c, d, &docs_at[i])) != CLS_OK) return s;
            if (docs_at[i] == d) {
                if ((s = contribution(w, c, d, &w->contrib[c->qpos])) != CLS_OK) return s;
                ub += w->contrib[c->qpos];
                holding++;
            }
        }
        if (out || (not_all && holding == nt)) continue;
        float sc = exact_score(w, nt);
        w->counts[HC_POSTINGS_SCORED] += holding;
        if (*n < k || sc > theta) heap_push(h, n, k, sc, d);
    }
}

/* ---- A query ------------------------------------------------------------------------------ */

/* Sets up query qi's cursors; *nt its terms (0: nothing to search). */
static void query_setup(host_worker *w, const batch_query *q, const batch_term *qt, uint32_t *nt, int *prune)
{
    const cls_index *idx = w->e->idx;
    int bound_idf = idx->scoring == CLS_SCORING_BM25;
    for (uint32_t i = 0; i < q->num_terms; i++) {
        cursor *c = &w->cur[i];
        const idx_term *t = &idx->terms[qt[i].term];
        float wt = bm25_weight(idx, qt[i].term, qt[i].weight);
        float scale = bound_idf ? (float)((double)wt / (double)bm25_idf(idx->coll_docs, idx_coll_df(idx, qt[i].term))) : wt;
        *c = (cursor){.qpos = i, .w = wt, .scale = scale, .ub = w->e->term_ub[qt[i].term] * scale,
                      .b0 = t->first_block, .b1 = (uint64_t)t->first_block + t->num_blocks, .b = t->first_block,
                      .decoded = UINT64_MAX, .fdecoded = UINT64_MAX, .docs = w->space + (size_t)2 * i * IDX_MAX_BLOCK,
                      .freqs = w->space + ((size_t)2 * i + 1) * IDX_MAX_BLOCK};
        w->counts[HC_BLOCKS_IN_LISTS] += t->num_blocks;
        w->counts[HC_POSTINGS_IN_LISTS] += t->df;
        /* a weight that is not positive and finite breaks the bounds' order: no pruning */
        if (!(wt > 0.0f) || !isfinite(wt) || !isfinite(c->ub)) *prune = 0;
    }
    *nt = q->num_terms;
}

static cls_status run_query(host_worker *w, uint64_t qi)
{
    struct host_engine *e = w->e;
    const cls_batch *bt = e->bt;
    const batch_query *q = &bt->q[qi];
    const batch_term *qt = bt->terms + q->term_start;
    cls_results *r = e->r;
    uint32_t k = e->kk, nt = 0, n = 0;
    int prune = e->prune;
    algo_need need;
    e->algo->need(NULL, &(algo_query){.q = q}, &need);
    uint32_t *docs = r->docs + qi * (uint64_t)k;
    float *scores = r->scores + qi * (uint64_t)k;
    cls_status s = CLS_OK;
    if (!(need.flags & ABI_QF_EMPTY) && q->num_terms > 0 && k > 0) {
        query_setup(w, q, qt, &nt, &prune);
        if (e->mode == CLS_MODE_AND) {
            s = run_and(w, nt, k, prune, w->heap, &n);
        } else if (e->mode == CLS_MODE_OR) {
            s = run_or(w, nt, k, prune, 0, w->heap, &n);
        } else { /* and-or (host_search_prepare refuses any other mode): every term's documents first, then the others */
            uint32_t n1 = 0;
            if (!q->unknown) {
                s = run_and(w, nt, k, prune, w->tier, &n1);
                query_setup(w, q, qt, &nt, &prune);
            }
            heap_sort_out(w->tier, n1);
            for (uint32_t j = 0; j < n1; j++) docs[j] = hit_doc(w->tier[j]), scores[j] = hit_score(w->tier[j]);
            if (s == CLS_OK && n1 < k) s = run_or(w, nt, k - n1, prune, !q->unknown, w->heap, &n);
            heap_sort_out(w->heap, n);
            for (uint32_t j = 0; j < n; j++) docs[n1 + j] = hit_doc(w->heap[j]), scores[n1 + j] = hit_score(w->heap[j]);
            r->start[qi + 1] = n1 + n;
            return s;
        }
        heap_sort_out(w->heap, n);
        for (uint32_t j = 0; j < n; j++) docs[j] = hit_doc(w->heap[j]), scores[j] = hit_score(w->heap[j]);
    }
    r->start[qi + 1] = n;
    return s;
}

/* Takes queries until none is left or a query failed. */
static void work(host_worker *w)
{
    struct host_engine *e = w->e;
    for (;;) {
        if (atomic_load(&e->failed)) return;
        uint64_t at = atomic_fetch_add(&e->next, 1);
        if (at >= e->nrun) return;
        uint64_t qi = e->order ? e->order[at] : at;
        cls_status s = run_query(w, qi);
        if (s != CLS_OK) {
            pthread_mutex_lock(&e->mu);
            if (!atomic_exchange(&e->failed, 1)) {
                e->status = s;
                snprintf(e->err, sizeof e->err, "query %llu: %s", (unsigned long long)qi, cls_last_error());
            }
            pthread_mutex_unlock(&e->mu);
            return;
        }
    }
}

static void *worker_main(void *arg)
{
    host_worker *w = arg;
    struct host_engine *e = w->e;
    uint64_t seen = 0;
    if (e->nice) { /* beside devices: their threads first (host_create says why) */
        errno = 0;
        int now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
        if (errno || setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), now + e->nice) != 0)
            atomic_store(&e->nice_errno, errno ? errno : EPERM);
    }
    pthread_mutex_lock(&e->mu);
    e->ready++;
    pthread_cond_signal(&e->done);
    for (;;) {
        while (e->gen == seen && !e->stop) pthread_cond_wait(&e->go, &e->mu);
        if (e->stop) break;
        seen = e->gen;
        if ((unsigned)(w - e->w) >= e->active) continue; /* fewer queries than threads: not needed */
        pthread_mutex_unlock(&e->mu);
        work(w);
        pthread_mutex_lock(&e->mu);
        if (--e->busy == 0) pthread_cond_signal(&e->done);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- The executor ------------------------------------------------------------------------- */

static cls_status worker_room(host_worker *w, size_t nterms, size_t k)
{
    if (nterms > w->nterms_cap) {
        size_t cap = nterms < 16 ? 16 : nterms;
        cursor *c = realloc(w->cur, cap * sizeof *c);
        if (c) w->cur = c;
        cursor **by = c ? realloc(w->by, cap * sizeof *by) : NULL;
        if (by) w->by = by;
        float *ct = by ? realloc(w->contrib, cap * sizeof *ct) : NULL;
        if (ct) w->contrib = ct;
        float *pf = ct ? realloc(w->prefix, (cap + 1) * sizeof *pf) : NULL;
        if (pf) w->prefix = pf;
        uint32_t *at = pf ? realloc(w->at, cap * sizeof *at) : NULL;
        if (at) w->at = at;
        uint32_t *sp = at ? realloc(w->space, cap * 2 * IDX_MAX_BLOCK * sizeof *sp) : NULL;
        if (!sp) return err_set(CLS_E_NOMEM, "host executor: out of memory for a query of %zu terms", nterms);
        w->space = sp;
        w->nterms_cap = cap;
    }
    if (k > w->k_cap) {
        hhit *h = realloc(w->heap, k * sizeof *h);
        if (h) w->heap = h;
        hhit *t = h ? realloc(w->tier, k * sizeof *t) : NULL;
        if (!t) return err_set(CLS_E_NOMEM, "host executor: out of memory for k = %zu", k);
        w->tier = t;
        w->k_cap = k;
    }
    return CLS_OK;
}

void host_free(host_engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    e->stop = 1;
    pthread_cond_broadcast(&e->go);
    pthread_mutex_unlock(&e->mu);
    for (unsigned i = 0; i < e->nthreads; i++) {
        host_worker *w = &e->w[i];
        if (w->started) pthread_join(w->th, NULL);
        free(w->cur);
        free(w->by);
        free(w->contrib);
        free(w->prefix);
        free(w->at);
        free(w->space);
        free(w->heap);
        free(w->tier);
    }
    pthread_cond_destroy(&e->go);
    pthread_cond_destroy(&e->done);
    pthread_mutex_destroy(&e->mu);
    free(e->w);
    free(e->norms);
    free(e->term_ub);
    free(e->own_order);
    free(e->costs);
    free(e);
}

unsigned host_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (unsigned)n;
}

cls_status host_create(const cls_index *idx, unsigned threads, int nice, host_engine **out)
{
    cls_status s = idx_verify_words(idx);
    if (s != CLS_OK) return s;
    if (threads < 1 || threads > 1024) return err_set(CLS_E_ARG, "host executor: %u threads (1 to 1024)", threads);
    host_engine *e = aligned_alloc(64, sizeof *e); /* its counter's line: sizeof is a multiple of 64 */
    if (e) memset(e, 0, sizeof *e);
    if (!e) return err_set(CLS_E_NOMEM, "host executor: out of memory");
    e->idx = idx;
    e->nthreads = threads;
    e->nice = nice > 0 ? nice : 0;
    e->k1 = e->b = -1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->go, NULL);
    pthread_cond_init(&e->done, NULL);
    e->w = aligned_alloc(64, threads * sizeof *e->w); /* sizeof is a multiple of 64: _Alignas */
    if (e->w) memset(e->w, 0, threads * sizeof *e->w);
    e->norms = malloc(((size_t)idx->num_docs + 1) * sizeof *e->norms);
    e->term_ub = calloc((size_t)idx->num_terms + 1, sizeof *e->term_ub);
    if (!e->w || !e->norms || !e->term_ub) {
        host_free(e);
        return err_set(CLS_E_NOMEM, "host executor: out of memory for %u documents and %u terms", idx->num_docs,
                       idx->num_terms);
    }
    for (uint32_t t = 0; t < idx->num_terms; t++) {
        const idx_term *te = &idx->terms[t];
        float m = 0.0f;
        for (uint64_t b = te->first_block; b < (uint64_t)te->first_block + te->num_blocks && b < idx->num_blocks; b++)
            if (idx->blocks[b].max_score > m) m = idx->blocks[b].max_score;
        e->term_ub[t] = m;
    }
    for (unsigned i = 0; i < threads; i++) e->w[i].e = e;
    for (unsigned i = 1; i < threads; i++) {
        if (pthread_create(&e->w[i].th, NULL, worker_main, &e->w[i]) != 0) {
            e->nthreads = i;
            host_free(e);
            return err_set(CLS_E_NOMEM, "host executor: cannot start thread %u of %u", i + 1, threads);
        }
        e->w[i].started = 1;
    }
    pthread_mutex_lock(&e->mu); /* every helper running (and niced where asked) before the first search */
    while (e->ready + 1 < threads) pthread_cond_wait(&e->done, &e->mu);
    pthread_mutex_unlock(&e->mu);
    if ((s = idx_intact(idx, CLS_OK)) != CLS_OK) {
        host_free(e);
        return s;
    }
    *out = e;
    return CLS_OK;
}

unsigned host_threads(const host_engine *e) { return e->nthreads; }

int host_nice(const host_engine *e, int *err)
{
    *err = atomic_load(&e->nice_errno);
    return e->nice;
}

cls_status host_search_prepare(host_engine *e, const cls_search_params *p, uint64_t nq)
{
    (void)nq;
    const cls_index *idx = e->idx;
    const query_algo *algo = query_algo_for((int)p->mode);
    if (!algo) return err_set(CLS_E_ARG, "host executor: no algorithm for mode %d", (int)p->mode);
    /* its own document-at-a-time twin of each algorithm (run_query): one it lacks is refused */
    if (p->mode != CLS_MODE_AND && p->mode != CLS_MODE_OR && p->mode != CLS_MODE_AND_OR)
        return err_set(CLS_E_ARG, "the host executor does not run '%s' yet", algo->name);
    if (e->k1 != p->k1 || e->b != p->b) {
        bm25_norms(idx, p->k1, p->b, e->norms);
        e->k1 = p->k1;
        e->b = p->b;
    }
    e->algo = algo;
    e->mode = p->mode;
    e->kk = p->k < idx->num_docs ? p->k : idx->num_docs;
    e->prune = idx_bounds_valid(idx, p->k1, p->b);
    for (unsigned i = 0; i < e->nthreads; i++) memset(e->w[i].counts, 0, sizeof e->w[i].counts);
    return CLS_OK;
}

uint32_t host_search_k(const host_engine *e) { return e->kk; }

static int cmp_cost_desc(const void *a, const void *b)
{
    const host_qcost *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return (x->q > y->q) - (x->q < y->q);
}

cls_status host_search_order(host_engine *e, const cls_batch *bt, const uint32_t **order)
{
    /* the queries by the postings of their lists, most first: threads taking them in turn end
     * together, the long ones started first */
    if (!vec_reserve(&e->costs, &e->costs_cap, bt->nq + 1, sizeof *e->costs) ||
        !vec_reserve(&e->own_order, &e->own_cap, bt->nq + 1, sizeof *e->own_order))
        return err_set(CLS_E_NOMEM, "host executor: out of memory for the query order");
    for (uint64_t q = 0; q < bt->nq; q++) e->costs[q] = (host_qcost){batch_query_postings(bt, q), (uint32_t)q};
    qsort(e->costs, bt->nq, sizeof *e->costs, cmp_cost_desc);
    for (uint64_t q = 0; q < bt->nq; q++) e->own_order[q] = e->costs[q].q;
    *order = e->own_order;
    return CLS_OK;
}


cls_status host_search_run(host_engine *e, const cls_batch *bt, const uint32_t *order, uint64_t n, cls_results *r)
{
    const cls_index *idx = e->idx;
    size_t most = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t q = order ? order[i] : i;
        if (bt->q[q].num_terms > most) most = bt->q[q].num_terms;
    }
    cls_status s;
    for (unsigned i = 0; i < e->nthreads; i++)
        if ((s = worker_room(&e->w[i], most, e->kk ? e->kk : 1)) != CLS_OK) return s;
    e->bt = bt;
    e->r = r;
    e->order = order;
    e->nrun = n;
    atomic_store(&e->next, 0);
    atomic_store(&e->failed, 0);
    e->status = CLS_OK;
    pthread_mutex_lock(&e->mu);
    e->active = n < e->nthreads ? (unsigned)(n ? n : 1) : e->nthreads;
    e->busy = e->active - 1;
    e->gen++;
    if (e->active > 1) pthread_cond_broadcast(&e->go);
    pthread_mutex_unlock(&e->mu);
    work(&e->w[0]); /* the calling thread is worker 0 */
    pthread_mutex_lock(&e->mu);
    while (e->busy) pthread_cond_wait(&e->done, &e->mu);
    s = e->status;
    pthread_mutex_unlock(&e->mu);
    if (s != CLS_OK) return err_set(s, "%s", e->err);
    for (unsigned c = 0; c < HC_COUNT; c++) {
        uint64_t v = c == HC_QUERIES ? n : 0;
        for (unsigned i = 0; i < e->nthreads; i++) v += e->w[i].counts[c];
        e->counters[c] = (cls_counter){counter_names[c], v};
    }
    return idx_intact(idx, CLS_OK);
}

void host_search_finish(host_engine *e) { (void)e; }



cls_status host_search(host_engine *e, const cls_batch *bt, const cls_search_params *p, cls_results *r)
{
    cls_status s = host_search_prepare(e, p, bt->nq);
    const uint32_t *order = NULL; /* a lone query needs none; more: the long ones first */
    if (s == CLS_OK) s = results_reset(r, bt->nq, bt->nq * (uint64_t)e->kk);
    if (s == CLS_OK && bt->nq > 1 && e->nthreads > 1) s = host_search_order(e, bt, &order);
    if (s == CLS_OK) s = host_search_run(e, bt, order, bt->nq, r);
    if (s == CLS_OK) results_pack(r, e->kk);
    return s;
}

size_t host_counters(const host_engine *e, const cls_counter **counters)
{
    *counters = e->counters;
    return e->counters[0].name ? HC_COUNT : 0;
}
