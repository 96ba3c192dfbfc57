/* Inverted runs (index_runs.h): how the builder's postings get from analysed batches to the
 * encoders without ever being held all at once.
 *
 * A batch arrives grouped by term (the analysis thread grouped it: a linear pass, no sort) and is
 * copied into the run being filled as one segment. A run is a range of consecutive batches, so
 * of consecutive docIDs. When a run's bytes reach an eighth of the budget (at most 32 MiB) it is
 * handed to a sealing thread while the next run fills:
 *
 *   seal   the run's distinct terms sorted by their bytes (the dictionary's final order, which
 *          a later term cannot change), each term's postings counted, then the segments read in
 *          order and each group's postings copied to its term's place (sequential reads,
 *          scattered writes): term after term, its docIDs then its frequencies, each list in
 *          docID order;
 *   keep   in memory where the budget holds it, else spill: the words written to a file without
 *          a name (O_TMPFILE, or a name unlinked at once, so neither a failure nor a kill leaves
 *          it behind) and freed. Kept either way: per term its id and where its postings start.
 *
 * At the end the run still filling is sealed and kept in memory. The merge is asked for the
 * lists of a range of dictionary ranks (a chunk, index_write.c); in every run those terms are one
 * stretch of its order, so each run gives a chunk one sequential copy or read, and the runs,
 * taken in docID order, append to each list in docID order: a k-way merge without comparisons.
 * Chunks are merged on the encoder threads, each merging its chunk while others encode theirs.
 *
 * Memory. Bounded by the budget: the runs kept in memory (8 bytes a posting), the run filling
 * (its segments), and the runs sealing (their segments beside their sealed words): a run is kept
 * only where all of them fit, else spilled. Not bounded by it, proportional to the dictionary:
 * per term its df (4 bytes) and each sealing thread's scratch (4 bytes), and per term of each run
 * 12 bytes of its directory. The merge's buffers are the encoders'
 * (their chunks) and a read window per encoder.
 *
 * Runs are sealed by up to `sealers` threads at once, and join the sealed runs in the order they
 * were started; where the analysis outruns them, runs_add waits (runs_stats.wait says how long).
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include "index/index_runs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

/* The spill's writes, in 32-bit words, and the merge's read window, in bytes. */
#define SPILL_BUF_WORDS ((size_t)1 << 18)
#define READ_WINDOW_BYTES ((uint64_t)4 << 20)
/* A run is sealed when it holds an eighth of the budget, or this much: small enough that the
 * last one, sealed at the end, takes little time, large enough that the merge has few runs. */
#define RUN_MAX_BYTES ((uint64_t)32 << 20)

/* One batch as the run holds it: the arrays in one allocation after this header. */
typedef struct seg {
    uint32_t base, ngroups;
    uint64_t npost;
    uint32_t *gid, *gstart, *doc, *tf;
} seg;

typedef struct run {
    seg **segs;           /* in docID order; freed once sealed */
    size_t nsegs, segs_cap;
    uint64_t bytes, groups;
    /* sealed: its terms in byte order, each term's postings [cum[e], cum[e + 1]) of the run */
    uint32_t nterms;
    uint32_t *gid;
    uint64_t *cum;
    /* sealed, term after term its docIDs then its frequencies: in memory (words), or in a file */
    uint32_t *words;
    int fd;               /* spilled: its file, else -1 */
} run;

struct idx_runs {
    uint64_t budget, run_limit, kept; /* kept: bytes of the sealed runs held in memory */
    char *dir;
    runs_sort_fn sort;
    void *user;
    uint32_t *df;
    size_t df_cap;
    uint32_t nterms;
    run *cur;             /* filling */
    run **done;           /* sealed, in docID order */
    size_t ndone, done_cap;
    /* the sealing threads: jobs in a ring, finished in the order they started */
    struct job *jobs;
    unsigned njobs, jhead, jlen;
    uint64_t inflight;    /* bytes the jobs in flight may hold: segments and sealed copy */
    cls_status sticky;    /* a failed spill: every later call reports it */
    char sticky_msg[512];
    runs_stats stats;
};

/* One sealing thread's job: its run, whether to spill it, and its own scratch. */
typedef struct job {
    idx_runs *r;
    pthread_t th;
    run *u;
    int spill;
    uint32_t terms;
    cls_status st;
    char msg[512];
    double secs;
    int sync;             /* sealed by the calling thread: nothing to join */
    uint32_t *slot;       /* the seal's scratch, per term id */
    size_t slot_cap;
} job;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_free(run *u)
{
    if (!u) return;
    for (size_t i = 0; i < u->nsegs; i++) free(u->segs[i]);
    free(u->segs);
    free(u->gid);
    free(u->cum);
    free(u->words);
    if (u->fd >= 0) close(u->fd);
    free(u);
}

static run *run_new(void)
{
    run *u = calloc(1, sizeof *u);
    if (u) u->fd = -1;
    return u;
}

cls_status runs_create(uint64_t budget, unsigned sealers, const char *dir, runs_sort_fn sort, void *user,
                       idx_runs **out)
{
    *out = NULL;
    idx_runs *r = calloc(1, sizeof *r);
    if (!r) return err_set(CLS_E_NOMEM, "indexing: out of memory for the runs");
    r->budget = budget ? budget : 1;
    r->run_limit = r->budget / 8 < RUN_MAX_BYTES ? r->budget / 8 : RUN_MAX_BYTES;
    if (r->run_limit == 0) r->run_limit = 1;
    r->sort = sort;
    r->user = user;
    if (!dir) dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    r->njobs = sealers ? sealers : 1;
    if (!(r->dir = malloc(strlen(dir) + 1)) || !(r->cur = run_new()) || !(r->jobs = calloc(r->njobs, sizeof *r->jobs))) {
        runs_free(r);
        return err_set(CLS_E_NOMEM, "indexing: out of memory for the runs");
    }
    strcpy(r->dir, dir);
    *out = r;
    return CLS_OK;
}

/* ---- Sealing and spilling (the sealing thread) --------------------------------------------- */

static int write_words(int fd, const uint32_t *w, size_t n)
{
    const char *p = (const char *)w;
    size_t left = n * sizeof *w;
    if (left && fault_hit(FAULT_WRITE)) { /* CLSEARCH_FAULT's write faults: a full disk */
        errno = ENOSPC;
        return 0;
    }
    while (left) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return 0;
        }
        p += k;
        left -= (size_t)k;
    }
    return 1;
}

/* A file for reading and writing in dir that no name leads to: O_TMPFILE where the system has
 * it, else a name unlinked as soon as it is made (mkstemp's 0600, never seen by anyone else). */
static int open_unnamed(const char *dir)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
#endif
    size_t n = strlen(dir) + 32;
    char *name = malloc(n);
    if (!name) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(name, n, "%s/clsearch-run.XXXXXX", dir);
    int tfd = mkstemp(name);
    if (tfd >= 0) unlink(name);
    int e = errno;
    free(name);
    errno = e;
    return tfd;
}

/* Sorts u's distinct terms by bytes (u->gid, u->nterms) and counts each one's postings (u->cum),
 * then lays the run out term after term, its docIDs then its frequencies, into u->words: the
 * segments read in order, each group's postings copied to its term's place (sequential reads,
 * scattered writes), so each list stays in docID order. The segments are freed after. */
static cls_status seal(job *j, run *u, uint32_t num_terms)
{
    idx_runs *r = j->r;
    if (!vec_reserve(&j->slot, &j->slot_cap, (size_t)num_terms + 1, sizeof *j->slot))
        return err_set(CLS_E_NOMEM, "indexing: out of memory sorting a run");
    memset(j->slot, 0xff, (size_t)num_terms * sizeof *j->slot);
    uint64_t most = u->groups < num_terms ? u->groups : num_terms, np = 0;
    for (size_t s = 0; s < u->nsegs; s++) np += u->segs[s]->npost;
    uint32_t *ids = malloc((size_t)(most + 1) * sizeof *ids);
    u->cum = calloc((size_t)most + 1, sizeof *u->cum);
    uint64_t *at = malloc((size_t)(most + 1) * sizeof *at);
    u->words = fault_malloc((size_t)(2 * np + 1) * sizeof *u->words);
    if (!ids || !u->cum || !at || !u->words) {
        free(ids);
        free(at);
        return err_set(CLS_E_NOMEM, "indexing: out of memory sorting a run of %llu postings", (unsigned long long)np);
    }
    uint32_t d = 0;
    for (size_t s = 0; s < u->nsegs; s++)
        for (uint32_t k = 0; k < u->segs[s]->ngroups; k++) {
            uint32_t g = u->segs[s]->gid[k];
            if (j->slot[g] == UINT32_MAX) j->slot[g] = d, ids[d++] = g;
        }
    if (!r->sort(r->user, ids, d)) {
        free(ids);
        free(at);
        return err_set(CLS_E_NOMEM, "indexing: out of memory sorting a run's terms");
    }
    for (uint32_t e = 0; e < d; e++) j->slot[ids[e]] = e;
    for (size_t s = 0; s < u->nsegs; s++) {
        const seg *sg = u->segs[s];
        for (uint32_t k = 0; k < sg->ngroups; k++) u->cum[j->slot[sg->gid[k]] + 1] += sg->gstart[k + 1] - sg->gstart[k];
    }
    for (uint32_t e = 0; e < d; e++) {
        u->cum[e + 1] += u->cum[e];
        at[e] = 0;
    }
    for (size_t s = 0; s < u->nsegs; s++) {
        const seg *sg = u->segs[s];
        for (uint32_t k = 0; k < sg->ngroups; k++) {
            uint32_t e = j->slot[sg->gid[k]], g0 = sg->gstart[k], n = sg->gstart[k + 1] - g0;
            uint64_t df = u->cum[e + 1] - u->cum[e];
            uint32_t *dst = u->words + 2 * u->cum[e] + at[e];
            for (uint32_t i = 0; i < n; i++) dst[i] = sg->base + sg->doc[g0 + i];
            memcpy(dst + df, sg->tf + g0, (size_t)n * sizeof *dst);
            at[e] += n;
        }
    }
    free(at);
    for (size_t i = 0; i < u->nsegs; i++) free(u->segs[i]);
    free(u->segs);
    u->segs = NULL;
    u->nsegs = u->segs_cap = 0;
    u->gid = ids;
    u->nterms = d;
    return CLS_OK;
}

/* Writes the sealed run's words to a file without a name in r->dir and frees them. */
static cls_status spill(idx_runs *r, run *u)
{
    const uint64_t n = 2 * u->cum[u->nterms];
    int fd = open_unnamed(r->dir);
    if (fd < 0) return err_set(CLS_E_IO, "spilling a run to %s: %s", r->dir, strerror(errno));
    int ok = 1;
    for (uint64_t i = 0; i < n && ok; i += SPILL_BUF_WORDS)
        ok = write_words(fd, u->words + i, n - i < SPILL_BUF_WORDS ? (size_t)(n - i) : SPILL_BUF_WORDS);
    if (!ok) {
        int e = errno;
        close(fd);
        return err_set(CLS_E_IO, "spilling a run of %llu postings to %s: %s", (unsigned long long)(n / 2), r->dir,
                       strerror(e));
    }
    free(u->words);
    u->words = NULL;
    u->fd = fd;
    return CLS_OK;
}

static void *seal_thread(void *arg)
{
    job *j = arg;
    double t0 = now();
    cls_status st = seal(j, j->u, j->terms);
    if (st == CLS_OK && j->spill) st = spill(j->r, j->u);
    if (st != CLS_OK) snprintf(j->msg, sizeof j->msg, "%s", cls_last_error());
    j->st = st;
    j->secs = now() - t0;
    return NULL;
}

static cls_status sticky(idx_runs *r, cls_status st, const char *msg)
{
    if (r->sticky == CLS_OK) {
        r->sticky = st;
        snprintf(r->sticky_msg, sizeof r->sticky_msg, "%s", msg);
    }
    return err_set(r->sticky, "%s", r->sticky_msg);
}

/* Waits for the oldest job in flight; its run joins the sealed ones (after every run started
 * before it), or its failure becomes the runs'. */
static cls_status wait_oldest(idx_runs *r)
{
    job *j = &r->jobs[r->jhead];
    if (!j->sync) pthread_join(j->th, NULL);
    r->jhead = (r->jhead + 1) % r->njobs;
    r->jlen--;
    run *u = j->u;
    j->u = NULL;
    r->inflight -= 2 * u->bytes;
    r->stats.spill += j->secs;
    if (j->st != CLS_OK || r->sticky != CLS_OK) {
        run_free(u);
        return sticky(r, j->st, j->msg);
    }
    r->done[r->ndone++] = u; /* room reserved before the job started */
    r->stats.runs++;
    if (u->fd >= 0) {
        r->stats.spills++;
        r->stats.spill_bytes += u->cum[u->nterms] * 8;
    } else {
        r->kept += u->cum[u->nterms] * 8 + (uint64_t)u->nterms * 12;
    }
    return CLS_OK;
}

/* Waits for every job in flight. */
static cls_status wait_all(idx_runs *r)
{
    cls_status st = CLS_OK;
    while (r->jlen) {
        cls_status s = wait_oldest(r);
        if (st == CLS_OK) st = s;
    }
    if (st == CLS_OK && r->sticky != CLS_OK) st = err_set(r->sticky, "%s", r->sticky_msg);
    return st;
}

/* Hands the run being filled to a sealing thread (waiting for the oldest when all are busy) and
 * starts a new one. The run is kept in memory where the budget holds the runs kept, the jobs in
 * flight and this one while they are sealed (segments beside their sealed copies), and the next
 * one filling; else it is spilled. The last run (at the end) is kept: the merge reads it at
 * once. */
static cls_status start_job(idx_runs *r, int last, uint32_t num_terms)
{
    double t0 = now();
    cls_status st = last ? wait_all(r) : r->jlen == r->njobs ? wait_oldest(r) : CLS_OK;
    r->stats.wait += now() - t0;
    if (st != CLS_OK) return st;
    if (r->sticky != CLS_OK) return err_set(r->sticky, "%s", r->sticky_msg);
    if (r->cur->nsegs == 0) return CLS_OK;
    int to_disk = !last && r->kept + r->inflight + 2 * r->cur->bytes + r->run_limit > r->budget;
    run *next = run_new();
    if (!next || !vec_reserve(&r->done, &r->done_cap, r->ndone + r->jlen + 1, sizeof *r->done)) {
        free(next);
        return err_set(CLS_E_NOMEM, "indexing: out of memory for the runs");
    }
    job *j = &r->jobs[(r->jhead + r->jlen) % r->njobs];
    j->r = r;
    j->u = r->cur;
    j->spill = to_disk;
    j->terms = num_terms;
    j->st = CLS_OK;
    j->secs = 0;
    r->cur = next;
    r->inflight += 2 * j->u->bytes;
    r->jlen++;
    j->sync = pthread_create(&j->th, NULL, seal_thread, j) != 0;
    if (j->sync) seal_thread(j); /* no thread to spare: sealed here, collected in its turn */
    return CLS_OK;
}

/* ---- The calling thread ---------------------------------------------------------------------- */

cls_status runs_add(idx_runs *r, const runs_batch *b, uint32_t num_terms)
{
    if (r->sticky != CLS_OK) return err_set(r->sticky, "%s", r->sticky_msg);
    if (num_terms > r->nterms) {
        if (!vec_reserve(&r->df, &r->df_cap, num_terms, sizeof *r->df))
            return err_set(CLS_E_NOMEM, "indexing: out of memory for the term counts");
        memset(r->df + r->nterms, 0, (size_t)(num_terms - r->nterms) * sizeof *r->df);
        r->nterms = num_terms;
    }
    if (b->ngroups == 0) return CLS_OK;
    uint64_t np = b->gstart[b->ngroups];
    size_t bytes = sizeof(seg) + ((size_t)b->ngroups * 2 + 1 + (size_t)np * 2) * sizeof(uint32_t);
    run *u = r->cur;
    seg *s = fault_malloc(bytes);
    if (!s || !vec_reserve(&u->segs, &u->segs_cap, u->nsegs + 1, sizeof *u->segs)) {
        free(s);
        return err_set(CLS_E_NOMEM, "indexing: out of memory for a run of postings");
    }
    s->base = b->base;
    s->ngroups = b->ngroups;
    s->npost = np;
    s->gid = (uint32_t *)(s + 1);
    s->gstart = s->gid + b->ngroups;
    s->doc = s->gstart + b->ngroups + 1;
    s->tf = s->doc + np;
    memcpy(s->gid, b->gid, (size_t)b->ngroups * sizeof *s->gid);
    memcpy(s->gstart, b->gstart, ((size_t)b->ngroups + 1) * sizeof *s->gstart);
    memcpy(s->doc, b->doc, (size_t)np * sizeof *s->doc);
    memcpy(s->tf, b->tf, (size_t)np * sizeof *s->tf);
    for (uint32_t k = 0; k < b->ngroups; k++) r->df[b->gid[k]] += b->gstart[k + 1] - b->gstart[k];
    u->segs[u->nsegs++] = s;
    u->bytes += bytes;
    u->groups += b->ngroups;
    if (u->bytes >= r->run_limit) return start_job(r, 0, num_terms);
    return CLS_OK;
}

cls_status runs_seal(idx_runs *r, uint32_t num_terms)
{
    if (r->sticky != CLS_OK) return err_set(r->sticky, "%s", r->sticky_msg);
    if (num_terms > r->nterms) { /* terms without postings yet (none today): counted as 0 */
        if (!vec_reserve(&r->df, &r->df_cap, num_terms, sizeof *r->df))
            return err_set(CLS_E_NOMEM, "indexing: out of memory for the term counts");
        memset(r->df + r->nterms, 0, (size_t)(num_terms - r->nterms) * sizeof *r->df);
        r->nterms = num_terms;
    }
    return start_job(r, 1, num_terms);
}

cls_status runs_finish(idx_runs *r)
{
    double t0 = now();
    cls_status st = wait_all(r);
    r->stats.wait += now() - t0;
    return st;
}

const uint32_t *runs_df(const idx_runs *r) { return r->df; }

void runs_get_stats(const idx_runs *r, runs_stats *s) { *s = r->stats; }

void runs_free(idx_runs *r)
{
    if (!r) return;
    for (; r->jobs && r->jlen; r->jlen--, r->jhead = (r->jhead + 1) % r->njobs) {
        job *j = &r->jobs[r->jhead];
        if (!j->sync) pthread_join(j->th, NULL);
        run_free(j->u);
    }
    for (unsigned i = 0; r->jobs && i < r->njobs; i++) free(r->jobs[i].slot);
    free(r->jobs);
    for (size_t i = 0; i < r->ndone; i++) run_free(r->done[i]);
    free(r->done);
    run_free(r->cur);
    free(r->df);
    free(r->dir);
    free(r);
}

/* ---- The merge (encoder threads) ------------------------------------------------------------- */

static int read_full(int fd, void *p, uint64_t n, uint64_t off)
{
    char *c = p;
    while (n) {
        ssize_t k = pread(fd, c, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO; /* the file is shorter than what was written to it */
            return 0;
        }
        c += k;
        n -= (uint64_t)k;
        off += (uint64_t)k;
    }
    return 1;
}

/* The first of u's terms whose rank is at least t (its terms are in rank order). */
static uint32_t lower(const run *u, const uint32_t *rank, uint32_t t)
{
    uint32_t lo = 0, hi = u->nterms;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (rank[u->gid[mid]] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

cls_status runs_fill(void *merge, uint32_t t0, uint32_t t1, uint32_t *docs, uint32_t *freqs)
{
    const runs_merge *m = merge;
    const idx_runs *r = m->r;
    const uint64_t base = m->list_start[t0];
    uint64_t *pos = malloc(((size_t)(t1 - t0) + 1) * sizeof *pos);
    char *win = NULL;
    int need_win = 0;
    for (size_t k = 0; k < r->ndone; k++) need_win |= r->done[k]->fd >= 0;
    if (!pos || (need_win && !(win = malloc(READ_WINDOW_BYTES)))) {
        free(pos);
        return err_set(CLS_E_NOMEM, "merging runs: out of memory");
    }
    for (uint32_t t = t0; t < t1; t++) pos[t - t0] = m->list_start[t] - base;
    cls_status st = CLS_OK;
    for (size_t k = 0; k < r->ndone && st == CLS_OK; k++) {
        const run *u = r->done[k];
        uint32_t lo = lower(u, m->rank, t0), hi = lower(u, m->rank, t1);
        uint64_t wa = 0, wz = 0, end = u->cum[hi] * 8; /* the window holds the file's bytes [wa, wz) */
        for (uint32_t e = lo; e < hi && st == CLS_OK; e++) {
            uint32_t i = m->rank[u->gid[e]] - t0;
            uint64_t df = u->cum[e + 1] - u->cum[e];
            uint32_t *d = docs + pos[i], *f = freqs + pos[i];
            if (pos[i] + df > m->list_start[m->rank[u->gid[e]] + 1] - base) {
                st = err_set(CLS_E_FORMAT, "merging runs: term %u holds more postings than counted", u->gid[e]);
                break;
            }
            if (u->fd < 0) {
                memcpy(d, u->words + 2 * u->cum[e], (size_t)df * 4);
                memcpy(f, u->words + 2 * u->cum[e] + df, (size_t)df * 4);
            } else {
                uint64_t a = u->cum[e] * 8, len = df * 8;
                int ok;
                if (len > READ_WINDOW_BYTES) { /* a long list: straight into place */
                    ok = read_full(u->fd, d, df * 4, a) && read_full(u->fd, f, df * 4, a + df * 4);
                } else {
                    ok = 1;
                    if (a < wa || a + len > wz) {
                        wa = a;
                        wz = end - a < READ_WINDOW_BYTES ? end : a + READ_WINDOW_BYTES;
                        ok = read_full(u->fd, win, wz - wa, wa);
                    }
                    if (ok) {
                        memcpy(d, win + (a - wa), (size_t)df * 4);
                        memcpy(f, win + (a - wa) + df * 4, (size_t)df * 4);
                    }
                }
                if (!ok) st = err_set(CLS_E_IO, "merging runs: reading spilled run %zu: %s", k + 1, strerror(errno));
            }
            pos[i] += df;
        }
    }
    for (uint32_t t = t0; t < t1 && st == CLS_OK; t++)
        if (pos[t - t0] != m->list_start[t + 1] - base)
            st = err_set(CLS_E_FORMAT, "merging runs: the runs hold %llu postings of a list of %llu",
                         (unsigned long long)(pos[t - t0] - (m->list_start[t] - base)),
                         (unsigned long long)(m->list_start[t + 1] - m->list_start[t]));
    free(pos);
    free(win);
    return st;
}
