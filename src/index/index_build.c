/* Index construction: analyse documents, invert them into runs, merge and encode the runs, write
 * the file. A pipeline whose stages overlap:
 *
 *   read      cls_builder_add copies (docno, text) into the batch being filled (up to 1 MiB of
 *             text, less under a small budget) and submits a full one to a FIFO queue;
 *   analyse   a worker thread takes it, analyses each document with its own analyzer (the
 *             Snowball stemmer is not thread-safe) into (local term id, tf) pairs through its own
 *             dictionary, then groups the batch's postings by term (a counting pass and a
 *             scatter, group_pairs); terms new to that dictionary travel with the batch;
 *   invert    the calling thread takes finished batches strictly in submission order: the
 *             worker's new terms get global ids (a per-worker translation table), each group its
 *             global id (a lookup a group, not a posting), each document its name and length,
 *             and the batch joins the run being filled (index_runs.c: a copy);
 *   seal      a run that reaches its share of the memory budget is sealed (its terms sorted by
 *             bytes, its postings laid out term by term) on the sealing thread while the next
 *             run fills, and kept in memory where the budget holds it, else spilled to an
 *             unnamed temporary file;
 *   merge and encode   at cls_builder_write the last run is sealed in memory while the calling
 *             thread sorts the dictionary; then idx_write_lists cuts the dictionary into chunks,
 *             and each encoder thread merges a chunk's lists from every run (runs_fill) and
 *             encodes it, the chunks laid out in order after.
 *
 * With threads = 1 the calling thread analyses (the serial path) and groups its documents a
 * batch at a time; sealing still runs on its own thread.
 *
 * Term ids may be numbered differently than in the serial path, but they never reach the file:
 * lists are ordered by term bytes and each list by docID, and docIDs are the order of the
 * cls_builder_add calls, so the file is byte-identical for any number of threads and any budget.
 *
 * Memory. Bounded by the budget (cls_builder_set_memory, default a quarter of the machine's
 * memory, at least 64 MiB): the runs held in memory, each with its sort index (index_runs.c).
 * Bounded by the threads: 2 x threads + 1 batches exist, recycled (when all are in flight,
 * cls_builder_add waits for the oldest), and each encoder's chunk (at most an eighth of the
 * budget over the threads, capped at IDX_CHUNK_POSTINGS postings, or the longest list).
 * Proportional to the vocabulary: the dictionary, once per worker and once global, its
 * translation tables and the runs' directories. Proportional to the documents: their names,
 * lengths and stored fields, kept until the file is written. Proportional to the output: the
 * compressed index itself (the chunks' words, then their layout: twice it at the layout).
 *
 * Errors: a bad docno is refused by the cls_builder_add that passes it, as in the serial path.
 * A failure inside a worker (out of memory) or the sealing thread (a full disk) is kept with its
 * message; the cls_builder_add or cls_builder_write that meets it reports it, and so does every
 * later call: after it the builder only refuses. cls_builder_free stops and joins the workers and
 * the sealing thread in every state; spilled runs have no name, so nothing is left on disk.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/an.h"
#include "util/err.h"
#include "util/path.h"
#include "index/index.h"
#include "index/index_write.h"
#include "index/encode_dev.h"
#include "index/index_runs.h"
#include "util/strset.h"
#include "util/vec.h"

/* Batch size: documents' bytes (docnos and texts) or count, whichever fills first; the bytes at
 * most a sixteenth of the runs' budget, down to BATCH_MIN_BYTES. */
#define BATCH_BYTES ((size_t)1 << 20)
#define BATCH_MIN_BYTES ((uint64_t)4 << 10)
#define BATCH_DOCS 8192u
/* The serial path groups its documents into a run this many postings at a time. */
#define BATCH_POSTINGS ((uint64_t)1 << 18)
/* The runs' budget when cls_build_opts.memory is 0: a quarter of the machine's memory, at least
 * MIN_BUDGET (and that where the machine does not say). */
#define MIN_BUDGET ((uint64_t)64 << 20)
/* A batch that once held a huge document gives its memory back when it is recycled. */
#define BATCH_KEEP_BYTES (4 * BATCH_BYTES)

/* ---- Term dictionary ---------------------------------------------------------------------- */

/* Term bytes in an arena, open-addressing hash of slot words (0 = empty): a slot holds the term's
 * id + 1 (low 32 bits), its length (8 bits, 255 for 255 and longer) and 24 bits of its hash, so
 * that a probe reads the term's offset and bytes only where length and hash bits agree: a lookup,
 * once per token, costs the slot's cache miss, the offset's and the bytes', not also the
 * length's and those of the terms it collides with. */
typedef struct tdict {
    char *arena;
    uint64_t arena_len;
    size_t arena_cap;
    uint64_t *pos;
    uint32_t *len;
    uint32_t n;
    size_t pos_cap, len_cap;
    uint64_t *table;
    size_t table_cap;
    /* NULL, or the lock whose write side is held while arena, pos and len move (the builder's
     * dictionary: the spilling thread reads terms' bytes under its read side) */
    pthread_rwlock_t *grow;
} tdict;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a: terms are short, this is plenty */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The slot word of term id of length len and hash h (without the id's place: the check). */
static uint64_t slot_check(uint64_t h, size_t len)
{
    return (h >> 40) << 40 | (uint64_t)(len < 255 ? len : 255) << 32;
}

static int rehash(tdict *d, size_t cap)
{
    uint64_t *t = calloc(cap, sizeof *t);
    if (!t) return 0;
    for (uint32_t id = 0; id < d->n; id++) {
        uint64_t hv = hash_bytes(d->arena + d->pos[id], d->len[id]);
        size_t h = hv & (cap - 1);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = slot_check(hv, d->len[id]) | (id + 1);
    }
    free(d->table);
    d->table = t;
    d->table_cap = cap;
    return 1;
}

/* Term id of term, adding it when new (*added set then, if added is not NULL); UINT32_MAX on
 * allocation failure. */
static uint32_t term_id(tdict *d, const char *term, size_t len, int *added)
{
    const uint64_t hv = hash_bytes(term, len), check = slot_check(hv, len);
    size_t h = hv & (d->table_cap - 1);
    for (uint64_t e; (e = d->table[h]) != 0; h = (h + 1) & (d->table_cap - 1)) {
        if ((e & ~(uint64_t)UINT32_MAX) != check) continue;
        uint32_t id = (uint32_t)e - 1; /* the slot says the length unless it is 255 or more */
        if ((len < 255 || d->len[id] == len) && memcmp(d->arena + d->pos[id], term, len) == 0) return id;
    }
    if (d->n == UINT32_MAX - 1) return UINT32_MAX;
    int moves = d->arena_len + len > d->arena_cap || (size_t)d->n + 1 > d->pos_cap || (size_t)d->n + 1 > d->len_cap;
    if (moves && d->grow) pthread_rwlock_wrlock(d->grow);
    int ok = vec_reserve(&d->arena, &d->arena_cap, d->arena_len + len, 1) &&
             vec_reserve(&d->pos, &d->pos_cap, (size_t)d->n + 1, sizeof *d->pos) &&
             vec_reserve(&d->len, &d->len_cap, (size_t)d->n + 1, sizeof *d->len);
    if (moves && d->grow) pthread_rwlock_unlock(d->grow);
    if (!ok) return UINT32_MAX;
    memcpy(d->arena + d->arena_len, term, len);
    uint32_t id = d->n++;
    d->pos[id] = d->arena_len;
    d->len[id] = (uint32_t)len;
    d->arena_len += len;
    d->table[h] = check | (id + 1);
    if (added) *added = 1;
    if ((uint64_t)d->n * 2 > d->table_cap && !rehash(d, d->table_cap * 2)) return UINT32_MAX;
    return id;
}

static void tdict_free(tdict *d)
{
    free(d->arena);
    free(d->pos);
    free(d->len);
    free(d->table);
    memset(d, 0, sizeof *d);
}

/* ---- One document's terms ------------------------------------------------------------------ */

/* Gathers a document's (term id, tf) pairs in order of first occurrence, in time linear in its
 * tokens: mark[id] == stamp says the term was seen in this document, at pairs[2 * slot[id]].
 * The order of a document's postings never reaches the file (lists are sorted by term, and a
 * term has one posting per document), so first occurrence serves as well as any. */
typedef struct docacc {
    uint32_t *mark, *slot; /* per term id */
    size_t ids_cap;
    uint32_t stamp;
    uint32_t *pairs;       /* (id, tf) */
    uint64_t np;
    size_t pairs_cap;
    uint64_t ntokens;
} docacc;

static void acc_begin(docacc *a)
{
    a->np = 0;
    a->ntokens = 0;
    if (++a->stamp == 0) { /* after 2^32 - 1 documents the stamps wrap: start afresh */
        if (a->mark) memset(a->mark, 0, (size_t)a->ids_cap * sizeof *a->mark);
        a->stamp = 1;
    }
}

/* Counts one occurrence of id; 0 when out of memory. */
static int acc_add(docacc *a, uint32_t id)
{
    if (id >= a->ids_cap) {
        /* mark and slot share ids_cap, which moves once both have grown; mark's new entries
         * are cleared at once, so a failure of slot's leaves everything consistent. */
        size_t old = a->ids_cap, cap = old, slot_cap = old;
        if (!vec_reserve(&a->mark, &cap, (size_t)id + 1, sizeof *a->mark)) return 0;
        memset(a->mark + old, 0, (cap - old) * sizeof *a->mark);
        if (!vec_reserve(&a->slot, &slot_cap, cap, sizeof *a->slot)) return 0;
        a->ids_cap = cap;
    }
    a->ntokens++;
    if (a->mark[id] == a->stamp) {
        a->pairs[2 * (uint64_t)a->slot[id] + 1]++;
        return 1;
    }
    if (!vec_reserve(&a->pairs, &a->pairs_cap, 2 * (a->np + 1), sizeof *a->pairs)) return 0;
    a->mark[id] = a->stamp;
    a->slot[id] = (uint32_t)a->np;
    a->pairs[2 * a->np] = id;
    a->pairs[2 * a->np + 1] = 1;
    a->np++;
    return 1;
}

static void acc_free(docacc *a)
{
    free(a->mark);
    free(a->slot);
    free(a->pairs);
    memset(a, 0, sizeof *a);
}

/* ---- A batch's postings grouped by term -------------------------------------------------------- */

/* Per analysed document: its pairs and its token count. */
typedef struct bres {
    uint32_t npairs;
    uint64_t ntokens;
} bres;

/* A batch's postings grouped by term, as index_runs.h's runs_batch holds them: group k is term
 * gid[k] (in order of first occurrence in the batch), its postings gstart[k] .. gstart[k + 1] - 1,
 * doc the document's place in the batch. */
typedef struct grouped {
    uint32_t *gid, *gstart, *doc, *tf, *fill;
    size_t gid_cap, gstart_cap, doc_cap, tf_cap, fill_cap;
    uint32_t ngroups;
} grouped;

/* The grouping's index over one id space (a worker's or the builder's dictionary): per term id,
 * mark == stamp says the term has a group in the batch being grouped, at slot. */
typedef struct groupidx {
    uint32_t *mark, *slot;
    size_t ids_cap;
    uint32_t stamp;
} groupidx;

/* Groups the batch's (id, tf) pairs (res[i].npairs of them for document i, ids below ids) by id:
 * one counting pass and one scatter, linear in the postings, each group in document order. 0
 * when out of memory. */
static int group_pairs(groupidx *x, grouped *g, const uint32_t *pairs, const bres *res, uint64_t ndocs, uint32_t ids)
{
    uint64_t np = 0;
    for (uint64_t i = 0; i < ndocs; i++) np += res[i].npairs;
    if (np > UINT32_MAX) return 0;
    if (ids > x->ids_cap) {
        size_t old = x->ids_cap, cap = old, slot_cap = old;
        if (!vec_reserve(&x->mark, &cap, ids, sizeof *x->mark)) return 0;
        memset(x->mark + old, 0, (cap - old) * sizeof *x->mark);
        if (!vec_reserve(&x->slot, &slot_cap, cap, sizeof *x->slot)) return 0;
        x->ids_cap = cap;
    }
    if (++x->stamp == 0) {
        if (x->mark) memset(x->mark, 0, x->ids_cap * sizeof *x->mark);
        x->stamp = 1;
    }
    if (!vec_reserve(&g->gid, &g->gid_cap, np + 1, sizeof *g->gid) ||
        !vec_reserve(&g->gstart, &g->gstart_cap, np + 2, sizeof *g->gstart) ||
        !vec_reserve(&g->fill, &g->fill_cap, np + 1, sizeof *g->fill) ||
        !vec_reserve(&g->doc, &g->doc_cap, np + 1, sizeof *g->doc) ||
        !vec_reserve(&g->tf, &g->tf_cap, np + 1, sizeof *g->tf))
        return 0;
    uint32_t ng = 0;
    for (uint64_t j = 0; j < np; j++) {
        uint32_t id = pairs[2 * j];
        if (x->mark[id] != x->stamp) {
            x->mark[id] = x->stamp;
            x->slot[id] = ng;
            g->gid[ng] = id;
            g->fill[ng++] = 0;
        }
        g->fill[x->slot[id]]++;
    }
    g->gstart[0] = 0;
    for (uint32_t k = 0; k < ng; k++) {
        g->gstart[k + 1] = g->gstart[k] + g->fill[k];
        g->fill[k] = g->gstart[k];
    }
    const uint32_t *pr = pairs;
    for (uint64_t i = 0; i < ndocs; i++)
        for (uint32_t j = 0; j < res[i].npairs; j++, pr += 2) {
            uint32_t at = g->fill[x->slot[pr[0]]]++;
            g->doc[at] = (uint32_t)i;
            g->tf[at] = pr[1];
        }
    g->ngroups = ng;
    return 1;
}

static void grouped_free(grouped *g)
{
    free(g->gid);
    free(g->gstart);
    free(g->doc);
    free(g->tf);
    free(g->fill);
    memset(g, 0, sizeof *g);
}

static void groupidx_free(groupidx *x)
{
    free(x->mark);
    free(x->slot);
    memset(x, 0, sizeof *x);
}

/* ---- Pipeline types ----------------------------------------------------------------------- */

typedef struct bdoc {
    size_t off;         /* docno, then text, at bytes + off */
    size_t docno_len, text_len;
} bdoc;

typedef struct batch {
    /* input, written by the calling thread while filling */
    char *bytes;
    uint64_t bytes_len;
    size_t bytes_cap;
    bdoc *docs;
    uint64_t ndocs;
    size_t docs_cap;
    uint32_t first_doc; /* number (0-based, in add order) of the first document */
    /* output, written by the worker that took the batch */
    unsigned worker;
    uint32_t first_new, nnew; /* the worker's local ids first_new .. first_new + nnew - 1 are new */
    char *new_bytes;          /* their bytes, back to back */
    uint64_t new_len;
    size_t new_cap;
    uint32_t *new_tlen;
    size_t new_tlen_cap;
    uint32_t *pairs;          /* (local id, tf), per document in order */
    uint64_t npairs;
    size_t pairs_cap;
    bres *res;
    size_t res_cap;
    grouped g;                /* the pairs grouped by local id (the worker's), then by global id */
    cls_status st;            /* a failure in the worker, with its message */
    char msg[512];
    int done;                 /* under the builder's mutex */
} batch;

typedef struct worker {
    struct cls_builder *b;
    unsigned id;
    pthread_t th;
    int started;
    an_analyzer *an;
    tdict dict;               /* local term ids */
    docacc acc;               /* the document being analysed, in local ids */
    groupidx gx;              /* grouping by local id */
    batch *cur;
    int oom;
    /* the calling thread's: local id -> global term id */
    uint32_t *trans;
    uint64_t ntrans;
    size_t trans_cap;
} worker;

/* One stored field's values so far: off[d] .. off[d + 1] is document d's (each present value
 * followed by a NUL; an absent one takes no byte). */
typedef struct bfield {
    char *name;
    uint64_t *off;      /* documents accepted + 1 entries */
    size_t off_cap;
    char *blob;
    uint64_t len;
    size_t cap;
} bfield;

struct cls_builder {
    an_analyzer *an;
    cls_analyzer_opts an_opts;
    cls_build_opts opts;
    unsigned an_flags;
    tdict dict;
    /* the document being added (serial path) */
    docacc acc;
    /* the inverted postings: runs in memory up to the budget, spilled beyond it */
    idx_runs *runs;
    pthread_rwlock_t dict_lock; /* dict's growth against the spilling thread's reads */
    int dict_locked;            /* dict_lock initialised */
    /* serial path: documents analysed, not yet grouped into a run (pairs in global ids) */
    uint32_t *pend_pairs;
    uint64_t pend_np;
    size_t pend_pairs_cap;
    bres *pend_res;
    uint64_t pend_docs;
    size_t pend_res_cap;
    uint32_t pend_first;        /* docID of the first */
    uint64_t pend_limit;        /* postings pending before they are grouped */
    uint64_t batch_bytes;       /* a batch's text before it is submitted */
    groupidx sgx;
    grouped sg;
    /* documents */
    uint32_t *doclen;
    uint64_t *docno_off; /* num_docs + 1 entries */
    uint32_t num_docs;   /* inverted documents */
    size_t doclen_cap, docno_off_cap;
    char *docno;
    uint64_t docno_len;
    size_t docno_cap;
    uint64_t num_tokens;
    cls_status failed;   /* a failure inside the analyser callback (serial path) */
    uint32_t docs_added; /* documents accepted by cls_builder_add (inverted or in flight) */
    strset ids;          /* the ids of those documents, numbered by docID */
    uint64_t duplicates; /* documents skipped for an id seen before (allow_dups) */
    int allow_dups;      /* cls_builder_allow_duplicate_ids */
    uint64_t memory;     /* cls_builder_set_memory (0: build_budget's default) */

    /* threads: 0 until the first add decides; 1 = serial */
    unsigned nthreads;
    int pipe;            /* the pool runs */
    worker *workers;
    batch *batches;
    unsigned nbatches;
    batch *filling;
    batch **freeb;       /* recycled batches (calling thread only) */
    unsigned nfree;
    batch **inflight;    /* submitted, not yet inverted, in order (calling thread only) */
    unsigned if_head, if_len;
    pthread_mutex_t mu;  /* guards the queue, stop and every batch's done flag */
    pthread_cond_t work_cv, done_cv;
    batch **queue;       /* submitted, not yet taken by a worker */
    unsigned q_head, q_len;
    int stop;
    cls_status sticky;   /* a pipeline failure: every later add and write report it */
    char sticky_msg[1024];
    uint64_t fail_at;    /* test hook: a worker fails on this document (1-based; 0: never) */

    /* stored fields, appended by the calling thread in add order (the analysis never sees them) */
    bfield *fields;
    uint32_t nfields;
    /* the collection record: the roots' format and the roots, absolute */
    const char *format;  /* a corpus format's name; NULL before the first root */
    char **roots;
    uint32_t nroots;
    size_t roots_cap;
    idx_build_times times; /* cls_builder_write's stages */
};

static cls_status set_sticky(cls_builder *b, cls_status st, const char *msg);

/* The bytes of runs the builder keeps in memory (index_runs.c: what they bound). */
static uint64_t build_budget(const cls_builder *b)
{
    if (b->memory) return b->memory;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    uint64_t quarter = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 4 : 0;
    return quarter > MIN_BUDGET ? quarter : MIN_BUDGET;
}

/* runs_sort_fn over the builder's dictionary: the sealing thread reads the terms' bytes while the
 * calling thread adds terms, under dict_lock's read side (the arrays move only under its write
 * side; entries below n never change). */
static int sort_ids(void *user, uint32_t *ids, uint32_t n)
{
    cls_builder *b = user;
    idx_term_ref *refs = malloc(((size_t)n + 1) * sizeof *refs);
    if (!refs) return 0;
    pthread_rwlock_rdlock(&b->dict_lock);
    for (uint32_t i = 0; i < n; i++)
        refs[i] = (idx_term_ref){b->dict.arena + b->dict.pos[ids[i]], b->dict.len[ids[i]], ids[i]};
    qsort(refs, n, sizeof *refs, idx_term_ref_cmp);
    pthread_rwlock_unlock(&b->dict_lock);
    for (uint32_t i = 0; i < n; i++) ids[i] = refs[i].id;
    free(refs);
    return 1;
}

/* ---- Test hook ---------------------------------------------------------------------------- */

/* (tests only; declared here, not in a header) Builders created after this call fail with
 * CLS_E_NOMEM in a worker thread when analysing their doc-th document (1-based; 0 turns the
 * fault off). The serial path ignores it. */
void idx_build_test_fail_at(uint64_t doc);
static uint64_t test_fail_at;
void idx_build_test_fail_at(uint64_t doc) { test_fail_at = doc; }

/* ---- Serial path ------------------------------------------------------------------------- */

static int on_term(void *user, const char *term, size_t len)
{
    cls_builder *b = user;
    uint32_t id = term_id(&b->dict, term, len, NULL);
    if (id == UINT32_MAX || !acc_add(&b->acc, id)) {
        b->failed = err_set(CLS_E_NOMEM, "indexing: out of memory for the term dictionary");
        return 1;
    }
    return 0;
}

/* Appends one document's name and length (its postings are already appended). */
static int append_doc(cls_builder *b, const char *docno, size_t docno_len, uint64_t ntokens)
{
    if (!vec_reserve(&b->doclen, &b->doclen_cap, (size_t)b->num_docs + 1, sizeof *b->doclen) ||
        !vec_reserve(&b->docno_off, &b->docno_off_cap, (size_t)b->num_docs + 2, sizeof *b->docno_off) ||
        !vec_reserve(&b->docno, &b->docno_cap, b->docno_len + docno_len + 1, 1))
        return 0;
    uint32_t doc = b->num_docs;
    b->docno_off[0] = 0;
    memcpy(b->docno + b->docno_len, docno, docno_len);
    b->docno[b->docno_len + docno_len] = '\0';
    b->docno_len += docno_len + 1;
    b->docno_off[doc + 1] = b->docno_len;
    b->doclen[doc] = ntokens > UINT32_MAX ? UINT32_MAX : (uint32_t)ntokens;
    b->num_tokens += ntokens;
    b->num_docs++;
    return 1;
}

/* The runs, made at the first document once the options are final. */
static cls_status runs_ready(cls_builder *b)
{
    if (b->runs) return CLS_OK;
    /* a batch (text, or the serial path's postings at 8 bytes) is a small share of the budget,
     * so that a small budget still sees many runs */
    uint64_t budget = build_budget(b);
    b->batch_bytes = budget / 16 < BATCH_MIN_BYTES ? BATCH_MIN_BYTES : budget / 16 > BATCH_BYTES ? BATCH_BYTES : budget / 16;
    b->pend_limit = b->batch_bytes / 8 < BATCH_POSTINGS ? b->batch_bytes / 8 : BATCH_POSTINGS;
    /* sealing a run costs a fraction of its documents' analysis: a sealing thread for every
     * four analysis threads keeps up with them, with room */
    unsigned sealers = b->nthreads / 4 ? b->nthreads / 4 : 1;
    return runs_create(budget, sealers, NULL, sort_ids, b, &b->runs);
}

/* The serial path's pending documents, grouped by term, into the runs. */
static cls_status flush_pending(cls_builder *b)
{
    if (b->pend_docs == 0) return CLS_OK;
    if (!group_pairs(&b->sgx, &b->sg, b->pend_pairs, b->pend_res, b->pend_docs, b->dict.n))
        return set_sticky(b, CLS_E_NOMEM, "indexing: out of memory grouping postings");
    runs_batch rb = {b->pend_first, b->sg.ngroups, b->sg.gid, b->sg.gstart, b->sg.doc, b->sg.tf};
    cls_status st = runs_add(b->runs, &rb, b->dict.n);
    b->pend_docs = b->pend_np = 0;
    if (st != CLS_OK) return set_sticky(b, st, cls_last_error());
    return CLS_OK;
}

static cls_status add_serial(cls_builder *b, const char *docno, size_t docno_len, const char *text,
                             size_t text_len)
{
    cls_status s = runs_ready(b);
    if (s != CLS_OK) return s;
    acc_begin(&b->acc);
    b->failed = CLS_OK;
    s = an_run(b->an, text ? text : "", text_len, on_term, b);
    if (b->failed != CLS_OK) return b->failed;
    if (s != CLS_OK) return s;

    if (!vec_reserve(&b->doclen, &b->doclen_cap, (size_t)b->num_docs + 1, sizeof *b->doclen) ||
        !vec_reserve(&b->docno_off, &b->docno_off_cap, (size_t)b->num_docs + 2, sizeof *b->docno_off) ||
        !vec_reserve(&b->docno, &b->docno_cap, b->docno_len + docno_len + 1, 1))
        return err_set(CLS_E_NOMEM, "indexing: out of memory for document data");

    /* The document's (term, tf) pairs join the pending batch. */
    if (!vec_reserve(&b->pend_pairs, &b->pend_pairs_cap, 2 * (b->pend_np + b->acc.np), sizeof *b->pend_pairs) ||
        !vec_reserve(&b->pend_res, &b->pend_res_cap, b->pend_docs + 1, sizeof *b->pend_res))
        return err_set(CLS_E_NOMEM, "indexing: out of memory for postings");
    if (b->pend_docs == 0) b->pend_first = b->num_docs;
    if (b->acc.np) memcpy(b->pend_pairs + 2 * b->pend_np, b->acc.pairs, (size_t)(2 * b->acc.np) * sizeof *b->pend_pairs);
    b->pend_np += b->acc.np;
    b->pend_res[b->pend_docs++] = (bres){(uint32_t)b->acc.np, b->acc.ntokens};
    append_doc(b, docno, docno_len, b->acc.ntokens); /* cannot fail: grown above */
    b->docs_added++;
    if (b->pend_docs >= BATCH_DOCS || b->pend_np >= b->pend_limit) return flush_pending(b);
    return CLS_OK;
}

/* ---- Workers ------------------------------------------------------------------------------ */

static int w_on_term(void *user, const char *term, size_t len)
{
    worker *w = user;
    batch *t = w->cur;
    int added = 0;
    uint32_t id = term_id(&w->dict, term, len, &added);
    if (id == UINT32_MAX) {
        w->oom = 1;
        return 1;
    }
    if (added) {
        if (!vec_reserve(&t->new_bytes, &t->new_cap, t->new_len + len, 1) ||
            !vec_reserve(&t->new_tlen, &t->new_tlen_cap, (size_t)t->nnew + 1, sizeof *t->new_tlen)) {
            w->oom = 1;
            return 1;
        }
        memcpy(t->new_bytes + t->new_len, term, len);
        t->new_len += len;
        t->new_tlen[t->nnew++] = (uint32_t)len;
    }
    if (!acc_add(&w->acc, id)) {
        w->oom = 1;
        return 1;
    }
    return 0;
}

static void batch_fail(batch *t, cls_status st, const char *msg)
{
    t->st = st;
    snprintf(t->msg, sizeof t->msg, "%s", msg);
}

/* Analyses every document of t into (local id, tf) pairs. */
static void work_batch(worker *w, batch *t)
{
    t->worker = w->id;
    t->first_new = w->dict.n;
    t->nnew = 0;
    t->new_len = 0;
    t->npairs = 0;
    t->st = CLS_OK;
    w->cur = t;
    if (!vec_reserve(&t->res, &t->res_cap, t->ndocs, sizeof *t->res)) {
        batch_fail(t, CLS_E_NOMEM, "indexing: out of memory in an analysis thread");
        return;
    }
    for (uint64_t i = 0; i < t->ndocs; i++) {
        const bdoc *d = &t->docs[i];
        if (w->b->fail_at && (uint64_t)t->first_doc + i + 1 == w->b->fail_at) {
            batch_fail(t, CLS_E_NOMEM, "indexing: out of memory in an analysis thread (test fault)");
            return;
        }
        acc_begin(&w->acc);
        w->oom = 0;
        cls_status s = an_run(w->an, t->bytes + d->off + d->docno_len, d->text_len, w_on_term, w);
        if (w->oom) {
            batch_fail(t, CLS_E_NOMEM, "indexing: out of memory for the term dictionary");
            return;
        }
        if (s != CLS_OK) {
            batch_fail(t, s, cls_last_error());
            return;
        }
        if (!vec_reserve(&t->pairs, &t->pairs_cap, 2 * (t->npairs + w->acc.np), sizeof *t->pairs)) {
            batch_fail(t, CLS_E_NOMEM, "indexing: out of memory for postings");
            return;
        }
        if (w->acc.np) memcpy(t->pairs + 2 * t->npairs, w->acc.pairs, (size_t)(2 * w->acc.np) * sizeof *t->pairs);
        t->npairs += w->acc.np;
        t->res[i].npairs = (uint32_t)w->acc.np;
        t->res[i].ntokens = w->acc.ntokens;
    }
    if (!group_pairs(&w->gx, &t->g, t->pairs, t->res, t->ndocs, w->dict.n))
        batch_fail(t, CLS_E_NOMEM, "indexing: out of memory grouping postings");
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    cls_builder *b = w->b;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->stop && b->q_len == 0) pthread_cond_wait(&b->work_cv, &b->mu);
        if (b->stop) break;
        batch *t = b->queue[b->q_head];
        b->q_head = (b->q_head + 1) % b->nbatches;
        b->q_len--;
        pthread_mutex_unlock(&b->mu);
        work_batch(w, t);
        pthread_mutex_lock(&b->mu);
        t->done = 1;
        pthread_cond_signal(&b->done_cv);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

/* ---- The calling thread's side ------------------------------------------------------------- */

/* Stops and joins the workers (each finishes the batch it holds; queued ones are dropped) and
 * frees the pipeline, whatever state pipe_start or a failure left it in. */
static void pipe_stop(cls_builder *b)
{
    if (b->pipe) {
        pthread_mutex_lock(&b->mu);
        b->stop = 1;
        pthread_cond_broadcast(&b->work_cv);
        pthread_mutex_unlock(&b->mu);
        for (unsigned i = 0; i < b->nthreads; i++)
            if (b->workers[i].started) pthread_join(b->workers[i].th, NULL);
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->work_cv);
        pthread_cond_destroy(&b->done_cv);
    }
    for (unsigned i = 0; b->workers && i < b->nthreads; i++) {
        worker *w = &b->workers[i];
        an_free(w->an);
        tdict_free(&w->dict);
        acc_free(&w->acc);
        groupidx_free(&w->gx);
        free(w->trans);
    }
    free(b->workers);
    b->workers = NULL;
    b->filling = NULL;
    b->nfree = b->if_len = b->q_len = 0;
    for (unsigned i = 0; b->batches && i < b->nbatches; i++) {
        batch *t = &b->batches[i];
        free(t->bytes);
        free(t->docs);
        free(t->new_bytes);
        free(t->new_tlen);
        free(t->pairs);
        free(t->res);
        grouped_free(&t->g);
    }
    free(b->batches);
    free(b->freeb);
    free(b->inflight);
    free(b->queue);
    b->batches = NULL;
    b->freeb = b->inflight = b->queue = NULL;
    b->pipe = 0;
}

/* Starts nthreads workers, each with its own analyzer. */
static cls_status pipe_start(cls_builder *b)
{
    unsigned n = b->nthreads;
    b->nbatches = 2 * n + 1;
    b->workers = calloc(n, sizeof *b->workers);
    b->batches = calloc(b->nbatches, sizeof *b->batches);
    b->freeb = malloc(b->nbatches * sizeof *b->freeb);
    b->inflight = malloc(b->nbatches * sizeof *b->inflight);
    b->queue = malloc(b->nbatches * sizeof *b->queue);
    cls_status st = CLS_OK;
    if (!b->workers || !b->batches || !b->freeb || !b->inflight || !b->queue) {
        st = err_set(CLS_E_NOMEM, "indexing: out of memory for %u analysis threads", n);
        goto fail;
    }
    for (unsigned i = 0; i < n; i++) {
        worker *w = &b->workers[i];
        w->b = b;
        w->id = i;
        if ((st = an_create(&b->an_opts, &w->an)) != CLS_OK) goto fail;
        if (!rehash(&w->dict, 1 << 14)) {
            st = err_set(CLS_E_NOMEM, "indexing: out of memory for %u analysis threads", n);
            goto fail;
        }
    }
    for (unsigned i = 0; i < b->nbatches; i++) b->freeb[i] = &b->batches[b->nbatches - 1 - i];
    b->nfree = b->nbatches;
    b->if_head = b->if_len = b->q_head = b->q_len = 0;
    b->stop = 0;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        st = err_set(CLS_E_NOMEM, "indexing: cannot create a mutex");
        goto fail;
    }
    if (pthread_cond_init(&b->work_cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        st = err_set(CLS_E_NOMEM, "indexing: cannot create a condition variable");
        goto fail;
    }
    if (pthread_cond_init(&b->done_cv, NULL) != 0) {
        pthread_cond_destroy(&b->work_cv);
        pthread_mutex_destroy(&b->mu);
        st = err_set(CLS_E_NOMEM, "indexing: cannot create a condition variable");
        goto fail;
    }
    b->pipe = 1;
    for (unsigned i = 0; i < n; i++) {
        int e = pthread_create(&b->workers[i].th, NULL, worker_main, &b->workers[i]);
        if (e != 0) {
            st = err_set(CLS_E_NOMEM, "indexing: cannot start analysis thread %u of %u: %s", i + 1, n,
                         strerror(e));
            goto fail;
        }
        b->workers[i].started = 1;
    }
    return CLS_OK;
fail:
    pipe_stop(b);
    return st;
}

static cls_status set_sticky(cls_builder *b, cls_status st, const char *msg)
{
    if (b->sticky == CLS_OK) {
        b->sticky = st;
        snprintf(b->sticky_msg, sizeof b->sticky_msg, "%s", msg);
    }
    return err_set(b->sticky, "%s", b->sticky_msg);
}

/* Inverts a finished batch: the worker's new terms get global ids, every document's name and
 * length are appended, and the batch's groups join the run being filled. */
static void invert(cls_builder *b, batch *t)
{
    if (b->sticky != CLS_OK) return; /* after a failure nothing more is inverted */
    if (t->st != CLS_OK) {
        set_sticky(b, t->st, t->msg);
        return;
    }
    worker *w = &b->workers[t->worker];
    if (t->first_new != w->ntrans) {
        set_sticky(b, CLS_E_ARG, "indexing: internal error: analysis batches out of order");
        return;
    }
    if (!vec_reserve(&w->trans, &w->trans_cap, w->ntrans + t->nnew, sizeof *w->trans)) goto oom;
    uint64_t off = 0;
    for (uint32_t k = 0; k < t->nnew; k++) {
        uint32_t id = term_id(&b->dict, t->new_bytes + off, t->new_tlen[k], NULL);
        if (id == UINT32_MAX) goto oom;
        off += t->new_tlen[k];
        w->trans[w->ntrans++] = id;
    }
    /* the groups' local ids become global ones: a lookup a group, not a posting */
    for (uint32_t k = 0; k < t->g.ngroups; k++) t->g.gid[k] = w->trans[t->g.gid[k]];
    uint32_t first = b->num_docs;
    for (uint64_t i = 0; i < t->ndocs; i++) {
        const bdoc *d = &t->docs[i];
        if (!append_doc(b, t->bytes + d->off, d->docno_len, t->res[i].ntokens)) goto oom;
    }
    runs_batch rb = {first, t->g.ngroups, t->g.gid, t->g.gstart, t->g.doc, t->g.tf};
    cls_status st = runs_add(b->runs, &rb, b->dict.n);
    if (st != CLS_OK) set_sticky(b, st, cls_last_error());
    return;
oom:
    set_sticky(b, CLS_E_NOMEM, "indexing: out of memory inverting documents");
}

/* Returns an inverted batch to the free list, dropping memory a huge document left behind. */
static void recycle(cls_builder *b, batch *t)
{
    if (t->bytes_cap > BATCH_KEEP_BYTES) {
        free(t->bytes);
        t->bytes = NULL;
        t->bytes_cap = 0;
    }
    if (t->pairs_cap > 2 * BATCH_KEEP_BYTES / sizeof *t->pairs) {
        free(t->pairs);
        t->pairs = NULL;
        t->pairs_cap = 0;
    }
    if (t->g.doc_cap > BATCH_KEEP_BYTES / sizeof *t->g.doc) grouped_free(&t->g);
    t->bytes_len = 0;
    t->ndocs = 0;
    t->npairs = 0;
    t->done = 0;
    b->freeb[b->nfree++] = t;
}

enum { COLLECT_READY, COLLECT_ONE, COLLECT_ALL };

/* Inverts finished batches in submission order: those already done (COLLECT_READY), at least
 * one (waiting for it), or all in flight. */
static void collect(cls_builder *b, int mode)
{
    while (b->if_len > 0) {
        batch *t = b->inflight[b->if_head];
        pthread_mutex_lock(&b->mu);
        if (mode == COLLECT_READY && !t->done) {
            pthread_mutex_unlock(&b->mu);
            return;
        }
        while (!t->done) pthread_cond_wait(&b->done_cv, &b->mu);
        pthread_mutex_unlock(&b->mu);
        b->if_head = (b->if_head + 1) % b->nbatches;
        b->if_len--;
        invert(b, t);
        recycle(b, t);
        if (mode == COLLECT_ONE) mode = COLLECT_READY;
    }
}

static void submit(cls_builder *b)
{
    batch *t = b->filling;
    b->filling = NULL;
    pthread_mutex_lock(&b->mu);
    b->queue[(b->q_head + b->q_len) % b->nbatches] = t;
    b->q_len++;
    pthread_cond_signal(&b->work_cv);
    pthread_mutex_unlock(&b->mu);
    b->inflight[(b->if_head + b->if_len) % b->nbatches] = t;
    b->if_len++;
}

static cls_status add_threaded(cls_builder *b, const char *docno, size_t docno_len, const char *text,
                               size_t text_len)
{
    if (!b->pipe) {
        cls_status st = runs_ready(b);
        if (st == CLS_OK) st = pipe_start(b);
        if (st != CLS_OK) return st;
    }
    if (!b->filling) {
        if (b->nfree == 0) collect(b, COLLECT_ONE);
        if (b->sticky != CLS_OK) return set_sticky(b, b->sticky, b->sticky_msg);
        b->filling = b->freeb[--b->nfree];
        b->filling->first_doc = b->docs_added;
    }
    batch *t = b->filling;
    size_t n = docno_len + text_len;
    if (n < docno_len || !vec_reserve(&t->bytes, &t->bytes_cap, t->bytes_len + n, 1) ||
        !vec_reserve(&t->docs, &t->docs_cap, t->ndocs + 1, sizeof *t->docs))
        return err_set(CLS_E_NOMEM, "indexing: out of memory for a document of %zu bytes", text_len);
    bdoc *d = &t->docs[t->ndocs++];
    d->off = t->bytes_len;
    d->docno_len = docno_len;
    d->text_len = text_len;
    memcpy(t->bytes + t->bytes_len, docno, docno_len);
    if (text_len) memcpy(t->bytes + t->bytes_len + docno_len, text, text_len);
    t->bytes_len += n;
    b->docs_added++;
    if (t->bytes_len >= b->batch_bytes || t->ndocs >= BATCH_DOCS) submit(b);
    collect(b, COLLECT_READY);
    if (b->sticky != CLS_OK) return set_sticky(b, b->sticky, b->sticky_msg);
    return CLS_OK;
}

/* Every document added is inverted when this returns CLS_OK. */
static cls_status drain(cls_builder *b)
{
    if (!b->pipe) return b->sticky != CLS_OK ? set_sticky(b, b->sticky, b->sticky_msg) : CLS_OK;
    if (b->filling) {
        if (b->filling->ndocs) {
            submit(b);
        } else {
            b->freeb[b->nfree++] = b->filling;
            b->filling = NULL;
        }
    }
    collect(b, COLLECT_ALL);
    if (b->sticky != CLS_OK) return set_sticky(b, b->sticky, b->sticky_msg);
    return CLS_OK;
}

/* ---- API ------------------------------------------------------------------------------------ */

cls_status cls_builder_create(const cls_analyzer_opts *an, cls_builder **out)
{
    cls_analyzer_opts o;
    if (an) o = *an; else cls_analyzer_defaults(&o);
    if (!out) return err_set(CLS_E_ARG, "cls_builder_create: out is NULL");
    *out = NULL;
    cls_builder *b = calloc(1, sizeof *b);
    if (!b) return err_set(CLS_E_NOMEM, "cls_builder_create: out of memory");
    b->an_opts = o;
    b->an_flags = an_opts_pack(&o);
    b->fail_at = test_fail_at;
    cls_build_defaults(&b->opts);
    if (pthread_rwlock_init(&b->dict_lock, NULL) != 0) {
        free(b);
        return err_set(CLS_E_NOMEM, "cls_builder_create: cannot create a lock");
    }
    b->dict_locked = 1;
    b->dict.grow = &b->dict_lock;
    cls_status s = an_create(&o, &b->an);
    if (s != CLS_OK || !rehash(&b->dict, 1 << 16)) {
        cls_builder_free(b);
        return s != CLS_OK ? s : err_set(CLS_E_NOMEM, "cls_builder_create: out of memory");
    }
    *out = b;
    return CLS_OK;
}

cls_status cls_builder_configure(cls_builder *b, const cls_build_opts *o)
{
    if (!b) return err_set(CLS_E_ARG, "cls_builder_configure: builder is NULL");
    cls_status s = idx_check_opts(o);
    if (s != CLS_OK) return s;
    if (b->docs_added) return err_set(CLS_E_ARG, "cls_builder_configure: documents were already added");
    clx_device dev;
    if (o->device && (s = idx_encoder_device(o->device, CLS_SCORING_BM25, &dev)) != CLS_OK)
        return err_wrap(s, "encoding on device '%s': ", o->device);
    b->opts = *o;
    return CLS_OK;
}

/* The analysis threads opts asks for: 0 is every online core; 1 (or a single core) is serial. */
static unsigned resolve_threads(const cls_build_opts *o)
{
    if (o->threads) return o->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > 1024 ? 1024u : (unsigned)n;
}

static void fields_free(cls_builder *b)
{
    for (uint32_t f = 0; f < b->nfields; f++) {
        free(b->fields[f].name);
        free(b->fields[f].off);
        free(b->fields[f].blob);
    }
    free(b->fields);
    b->fields = NULL;
    b->nfields = 0;
}

cls_status cls_builder_set_fields(cls_builder *b, const char *const *names, size_t n)
{
    if (!b || (n && !names)) return err_set(CLS_E_ARG, "cls_builder_set_fields: NULL argument");
    if (b->docs_added) return err_set(CLS_E_ARG, "cls_builder_set_fields: documents were already added");
    if (n > CLS_MAX_FIELDS) return err_set(CLS_E_ARG, "%zu stored fields: at most %u", n, CLS_MAX_FIELDS);
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !idx_field_name_ok(names[i], strlen(names[i])))
            return err_set(CLS_E_ARG, "field name '%s': 1 to %u bytes, without control characters, spaces or commas",
                           names[i] ? names[i] : "(null)", IDX_MAX_FIELD_NAME);
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) return err_set(CLS_E_ARG, "field '%s' named twice", names[i]);
    }
    fields_free(b);
    if (n == 0) return CLS_OK;
    if (!(b->fields = calloc(n, sizeof *b->fields))) return err_set(CLS_E_NOMEM, "out of memory for stored fields");
    b->nfields = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        if (!(b->fields[i].name = strdup(names[i])) ||
            !vec_reserve(&b->fields[i].off, &b->fields[i].off_cap, 1, sizeof *b->fields[i].off)) {
            fields_free(b);
            return err_set(CLS_E_NOMEM, "out of memory for stored fields");
        } else {
            b->fields[i].off[0] = 0;
        }
    return CLS_OK;
}

cls_status cls_builder_add_root(cls_builder *b, cls_corpus_format fmt, const char *path)
{
    if (!b || !path) return err_set(CLS_E_ARG, "cls_builder_add_root: NULL argument");
    static const char *const names[] = {"jsonl", "beir", "html", "trec", "smart", "files"};
    if ((unsigned)fmt >= sizeof names / sizeof *names)
        return err_set(CLS_E_ARG, "cls_builder_add_root: unknown corpus format %d", (int)fmt);
    if (b->format && strcmp(b->format, names[fmt]) != 0)
        return err_set(CLS_E_ARG, "root %s is %s, the index's earlier roots %s: one format per index", path,
                       names[fmt], b->format);
    if (!vec_reserve(&b->roots, &b->roots_cap, (size_t)b->nroots + 1, sizeof *b->roots))
        return err_set(CLS_E_NOMEM, "out of memory for the roots");
    char *abs;
    cls_status s = path_absolute(path, &abs);
    if (s != CLS_OK) return err_wrap(s, "root: ");
    b->roots[b->nroots++] = abs;
    b->format = names[fmt];
    return CLS_OK;
}

/* Room for one more document's field values (so that appending them after the document is
 * accepted cannot fail), and what is wrong with them, before anything is added. */
static cls_status fields_reserve(cls_builder *b, const cls_doc *d)
{
    if (d->num_fields && d->num_fields != b->nfields)
        return err_set(CLS_E_ARG, "document %u: %zu field values for %u stored fields", b->docs_added + 1,
                       d->num_fields, b->nfields);
    if (d->num_fields && (!d->fields || !d->field_lens))
        return err_set(CLS_E_ARG, "cls_builder_add_doc: NULL field arrays");
    for (uint32_t f = 0; f < b->nfields; f++) {
        bfield *bf = &b->fields[f];
        const char *v = d->num_fields ? d->fields[f] : NULL;
        size_t n = v ? d->field_lens[f] : 0;
        if (v && memchr(v, '\0', n))
            return err_set(CLS_E_FORMAT, "document %u: field '%s' holds a NUL byte", b->docs_added + 1, bf->name);
        if (!vec_reserve(&bf->off, &bf->off_cap, (size_t)b->docs_added + 2, sizeof *bf->off) ||
            (v && (n + 1 < n || !vec_reserve(&bf->blob, &bf->cap, bf->len + n + 1, 1))))
            return err_set(CLS_E_NOMEM, "document %u: out of memory for field '%s'", b->docs_added + 1, bf->name);
    }
    return CLS_OK;
}

/* Appends the fields of the document just accepted (its docID is docs_added - 1). */
static void fields_append(cls_builder *b, const cls_doc *d)
{
    for (uint32_t f = 0; f < b->nfields; f++) {
        bfield *bf = &b->fields[f];
        const char *v = d->num_fields ? d->fields[f] : NULL;
        if (v) {
            size_t n = d->field_lens[f];
            if (n) memcpy(bf->blob + bf->len, v, n);
            bf->blob[bf->len + n] = '\0';
            bf->len += n + 1;
        }
        bf->off[b->docs_added] = bf->len;
    }
}

static cls_status add_doc(cls_builder *b, const cls_doc *d)
{
    const char *docno = d->docno, *text = d->text;
    size_t docno_len = d->docno_len, text_len = d->text_len;
    if (!docno || (!text && text_len)) return err_set(CLS_E_ARG, "cls_builder_add: NULL argument");
    if (b->sticky != CLS_OK) return set_sticky(b, b->sticky, b->sticky_msg);
    if (docno_len == 0 || memchr(docno, '\0', docno_len) || memchr(docno, '\n', docno_len) ||
        memchr(docno, ' ', docno_len) || memchr(docno, '\t', docno_len))
        return err_set(CLS_E_FORMAT, "document %u: docno is empty or holds a space, tab, newline or NUL",
                       b->docs_added + 1);
    if (b->docs_added == UINT32_MAX - 1)
        return err_set(CLS_E_ARG, "too many documents for 32-bit docIDs");
    /* a repeated id would put one name at two ranks of every result list it is in */
    uint32_t first;
    if (strset_find(&b->ids, docno, docno_len, &first)) {
        if (b->allow_dups) {
            b->duplicates++;
            return CLS_OK;
        }
        return err_set(CLS_E_FORMAT, "document %u: id '%.*s' was already given to document %u (ids must be unique; "
                       "allowing duplicates keeps the first)", b->docs_added + 1,
                       (int)(docno_len > 200 ? 200 : docno_len), docno, first + 1);
    }
    cls_status s = fields_reserve(b, d);
    if (s != CLS_OK) return s;
    if (b->nthreads == 0) b->nthreads = resolve_threads(&b->opts);
    uint32_t before = b->docs_added;
    if (b->nthreads > 1) s = add_threaded(b, docno, docno_len, text, text_len);
    else s = add_serial(b, docno, docno_len, text, text_len);
    /* a document counted is one the index will hold (or the builder failed for good) */
    if (b->docs_added != before) {
        fields_append(b, d);
        if (strset_add(&b->ids, docno, docno_len, NULL) < 0 && s == CLS_OK)
            s = set_sticky(b, CLS_E_NOMEM, "indexing: out of memory for the document ids");
    }
    return s;
}

cls_status cls_builder_set_memory(cls_builder *b, uint64_t bytes)
{
    if (!b) return err_set(CLS_E_ARG, "cls_builder_set_memory: builder is NULL");
    if (b->docs_added) return err_set(CLS_E_ARG, "cls_builder_set_memory: documents were already added");
    b->memory = bytes;
    return CLS_OK;
}

uint64_t cls_builder_duplicates(const cls_builder *b) { return b ? b->duplicates : 0; }

cls_status cls_builder_allow_duplicate_ids(cls_builder *b, int allow)
{
    if (!b) return err_set(CLS_E_ARG, "cls_builder_allow_duplicate_ids: builder is NULL");
    if (b->docs_added) return err_set(CLS_E_ARG, "cls_builder_allow_duplicate_ids: documents were already added");
    b->allow_dups = allow != 0;
    return CLS_OK;
}

cls_status cls_builder_add(cls_builder *b, const char *docno, size_t docno_len, const char *text,
                           size_t text_len)
{
    if (!b) return err_set(CLS_E_ARG, "cls_builder_add: NULL argument");
    cls_doc d = {docno, docno_len, text, text_len, 0, NULL, NULL};
    return add_doc(b, &d);
}

cls_status cls_builder_add_doc(cls_builder *b, const cls_doc *doc)
{
    if (!b || !doc) return err_set(CLS_E_ARG, "cls_builder_add_doc: NULL argument");
    return add_doc(b, doc);
}


cls_status cls_builder_write(cls_builder *b, const char *path)
{
    if (!b || !path) return err_set(CLS_E_ARG, "cls_builder_write: NULL argument");
    memset(&b->times, 0, sizeof b->times);
    double t0 = idx_clock();
    cls_status st = drain(b);
    if (st == CLS_OK) st = runs_ready(b);
    if (st == CLS_OK) st = flush_pending(b);
    if (st != CLS_OK) return st;
    double t_invert = idx_clock();
    b->times.drain = t_invert - t0;
    /* the last run is sorted on the spilling thread while this one sorts the dictionary */
    uint32_t T = b->dict.n;
    if ((st = runs_seal(b->runs, T)) != CLS_OK) return set_sticky(b, st, cls_last_error());
    st = CLS_E_NOMEM;
    idx_term_ref *order = malloc(((size_t)T + 1) * sizeof *order);
    uint32_t *rank = malloc(((size_t)T + 1) * sizeof *rank);
    uint64_t *start = calloc((size_t)T + 2, sizeof *start);
    uint64_t *term_off = malloc(((size_t)T + 1) * sizeof *term_off);
    char *term_blob = malloc(b->dict.arena_len + 1);
    /* the fields laid out as sections 10 and 11 hold them: one field's values after another */
    const uint32_t N = b->num_docs, F = b->nfields;
    uint64_t flen = 0;
    for (uint32_t f = 0; f < F; f++) flen += b->fields[f].len;
    uint64_t *foff = malloc((size_t)F * ((size_t)N + 1) * sizeof *foff + 1);
    char *fblob = malloc((size_t)flen + 1);
    const char **names = malloc(((size_t)F + 1) * sizeof *names);
    char *coll = NULL;
    uint64_t coll_len = 0;
    if (!order || !rank || !start || !term_off || !term_blob || !foff || !fblob || !names) {
        runs_finish(b->runs);
        st = err_set(CLS_E_NOMEM, "writing the index: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < T; i++)
        order[i] = (idx_term_ref){b->dict.arena + b->dict.pos[i], b->dict.len[i], i};
    qsort(order, T, sizeof *order, idx_term_ref_cmp);
    uint64_t blob = 0;
    for (uint32_t r = 0; r < T; r++) {
        rank[order[r].id] = r;
        term_off[r] = blob;
        memcpy(term_blob + blob, order[r].s, order[r].len);
        blob += order[r].len;
    }
    term_off[T] = blob;
    if ((st = runs_finish(b->runs)) != CLS_OK) {
        set_sticky(b, st, cls_last_error());
        goto out;
    }
    /* each list's place from the runs' counts; the runs fill the lists chunk by chunk */
    const uint32_t *df = runs_df(b->runs);
    for (uint32_t r = 0; r < T; r++) start[r + 1] = start[r] + df[order[r].id];
    b->times.invert = idx_clock() - t_invert;
    uint64_t base = 0;
    for (uint32_t f = 0; f < F; f++) {
        const bfield *bf = &b->fields[f];
        for (uint32_t d = 0; d <= N; d++) foff[(size_t)f * ((size_t)N + 1) + d] = base + bf->off[d];
        if (bf->len) memcpy(fblob + base, bf->blob, (size_t)bf->len);
        base += bf->len;
        names[f] = bf->name;
    }
    if ((st = idx_collection_make(b->format, (const char *const *)b->roots, b->nroots, names, F, &coll, &coll_len)) !=
        CLS_OK)
        goto out;
    uint64_t zero = 0;
    runs_merge merge = {b->runs, rank, start};
    /* a chunk's postings, in the encoders' buffers: a small share of the budget each */
    unsigned threads = b->opts.threads ? b->opts.threads : resolve_threads(&b->opts);
    uint64_t chunk = build_budget(b) / 8 / 8 / threads;
    idx_lists l = {
        .analyzer = b->an_flags,
        .num_docs = b->num_docs,
        .doclen = b->doclen,
        .docno_off = b->num_docs ? b->docno_off : &zero,
        .docno_blob = b->docno,
        .docno_blob_len = b->num_docs ? b->docno_len : 0,
        .num_terms = T,
        .term_off = term_off,
        .term_blob = term_blob,
        .list_start = start,
        .fill = runs_fill,
        .fill_user = &merge,
        .chunk_postings = chunk < 1024 ? 1024 : chunk > IDX_CHUNK_POSTINGS ? IDX_CHUNK_POSTINGS : chunk,
        .collection = coll,
        .collection_len = coll_len,
        .num_fields = F,
        .field_off = foff,
        .field_blob = fblob,
        .field_blob_len = flen,
        .times = &b->times.w,
    };
    st = idx_write_lists(path, &l, &b->opts);
out:;
    runs_stats rs;
    runs_get_stats(b->runs, &rs);
    b->times.spill = rs.spill;
    b->times.spill_wait = rs.wait;
    b->times.runs = rs.runs;
    b->times.spills = rs.spills;
    b->times.spill_bytes = rs.spill_bytes;
    b->times.memory_budget = build_budget(b);
    free(foff);
    free(fblob);
    free(names);
    free(coll);
    free(order);
    free(rank);
    free(start);
    free(term_off);
    free(term_blob);
    return st;
}

void idx_builder_times(const cls_builder *b, idx_build_times *t) { *t = b->times; }

uint64_t idx_builder_tokens(const cls_builder *b) { return b->num_tokens; }

void cls_builder_free(cls_builder *b)
{
    if (!b) return;
    pipe_stop(b);
    an_free(b->an);
    runs_free(b->runs); /* before the dictionary: a seal in flight reads it */
    b->runs = NULL;
    tdict_free(&b->dict);
    if (b->dict_locked) pthread_rwlock_destroy(&b->dict_lock);
    acc_free(&b->acc);
    free(b->pend_pairs);
    free(b->pend_res);
    groupidx_free(&b->sgx);
    grouped_free(&b->sg);
    free(b->doclen);
    free(b->docno_off);
    free(b->docno);
    fields_free(b);
    strset_free(&b->ids);
    for (uint32_t i = 0; i < b->nroots; i++) free(b->roots[i]);
    free(b->roots);
    free(b);
}
