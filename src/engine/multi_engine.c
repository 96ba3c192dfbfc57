/* The device set: several device executors behind one cls_engine (`-d gpu` on a host of several
 * GPUs, or a list: `-d 1:0,1:2`, `-d cpu,cpu`). Each executor is a clx_engine of its own, with its
 * own context, queue, pinned buffers and a copy of the whole index (replicated placement), and
 * runs on a host thread of its own during a search: a context shared by several GPUs runs each
 * slower, and one host thread would serialise their planning.
 *
 * A search is prepared on every executor (norms, the algorithm's rules, limits), ordered once by
 * cost, and split by stride: executor i takes the queries at positions i, i + n, i + 2n, ... of
 * that order, so each gets the whole range of costs and batches of like cost, and executors of
 * one kind finish together. Each runs its share (with the re-runs its algorithm asks for) into the
 * one cls_results, queries apart; then the results are packed once. Counters and profile steps
 * are summed by name; `device_N_queries` says each executor's share.
 *
 * Results equal one executor's bit for bit: a query's hits depend on the query alone, never on
 * the batch it shares.
 *
 * Where a device does not take launches from several threads of one process (clx_threaded_launches:
 * POCL), the shares run one after another in the calling thread. The CPU device is parallel within
 * a share anyway; the split, the shared result set and the sums are the same. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/dev_engine.h"
#include "engine/engine.h"
#include "util/err.h"
#include "util/vec.h"

/* One executor's share of a search, on its own thread. */
typedef struct multi_run {
    clx_engine *e;
    const cls_batch *bt;
    const uint32_t *order;
    uint64_t n;
    cls_results *r;
    cls_status s;
    char msg[512]; /* the thread's error detail (err.h keeps it per thread) */
} multi_run;

struct multi_engine {
    clx_engine **ex;
    unsigned n;
    int serial;            /* shares run one after another, not on threads (clx_threaded_launches) */
    multi_run *runs;       /* per executor: its share of the search in progress, */
    pthread_t *threads;    /* and the thread running it */
    uint32_t **mine;       /* per executor: its queries of the search, in cost order */
    size_t *mine_cap;
    char (*share)[32];     /* per executor: the name of its queries counter */
    cls_counter *counters; /* of the last search, summed by name */
    size_t ncounters, counters_cap;
    cls_profile_step *steps;
    size_t nsteps, steps_cap;
    uint32_t batches;
};

void multi_free(multi_engine *m)
{
    if (!m) return;
    for (unsigned i = 0; i < m->n; i++) {
        clx_free(m->ex[i]);
        free(m->mine[i]);
    }
    free(m->ex);
    free(m->runs);
    free(m->threads);
    free(m->mine);
    free(m->mine_cap);
    free(m->share);
    free(m->counters);
    free(m->steps);
    free(m);
}

cls_status multi_create(const cls_index *idx, const char *const *specs, unsigned n, const struct clx_params *prm,
                        const cls_engine_opts *o, multi_engine **out, char *desc, size_t desc_len)
{
    *out = NULL;
    multi_engine *m = calloc(1, sizeof *m);
    if (!m || !(m->ex = calloc(n, sizeof *m->ex)) || !(m->mine = calloc(n, sizeof *m->mine)) ||
        !(m->mine_cap = calloc(n, sizeof *m->mine_cap)) || !(m->share = calloc(n, sizeof *m->share)) ||
        !(m->runs = calloc(n, sizeof *m->runs)) || !(m->threads = calloc(n, sizeof *m->threads))) {
        multi_free(m);
        return err_set(CLS_E_NOMEM, "out of memory for %u executors", n);
    }
    m->n = n;
    size_t at = (size_t)snprintf(desc, desc_len, "devices: %u executors, the index replicated on each, a search's "
                                 "queries split by stride of cost\n", n);
    char d[1900], rest[1900] = "";
    for (unsigned i = 0; i < n; i++) {
        cls_status s = clx_create(idx, specs[i], prm, o, &m->ex[i], d, sizeof d);
        if (s != CLS_OK) {
            s = err_wrap(s, "executor %u of %u ('%s'): ", i, n, specs[i]);
            multi_free(m);
            return s;
        }
        snprintf(m->share[i], sizeof m->share[i], "device_%u_queries", i);
        /* each executor's device line; the kernels, lists and programs once, the first's */
        char *nl = strchr(d, '\n');
        if (nl) *nl = '\0';
        if (i == 0 && nl) snprintf(rest, sizeof rest, "%s", nl + 1);
        if (at < desc_len) at += (size_t)snprintf(desc + at, desc_len - at, "[%u] %s\n", i, d);
        m->serial |= !clx_threaded_launches(&m->ex[i]->dc.dev.info);
    }
    if (m->serial && at < desc_len)
        at += (size_t)snprintf(desc + at, desc_len - at, "shares run one after another (a device here takes no "
                               "launches from several threads: clx_threaded_launches)\n");
    if (at < desc_len) snprintf(desc + at, desc_len - at, "%s", rest);
    *out = m;
    return CLS_OK;
}

static void *run_share(void *arg)
{
    multi_run *a = arg;
    a->s = clx_search_run(a->e, a->bt, a->order, a->n, a->r);
    if (a->s != CLS_OK) snprintf(a->msg, sizeof a->msg, "%s", cls_last_error());
    return NULL;
}

/* Adds one executor's counters into m's, by name (an executor with the list cache has three more). */
static cls_status add_counters(multi_engine *m, const cls_counter *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < m->ncounters && strcmp(m->counters[j].name, c[i].name) != 0) j++;
        if (j == m->ncounters) {
            if (!vec_reserve(&m->counters, &m->counters_cap, m->ncounters + 1, sizeof *m->counters))
                return err_set(CLS_E_NOMEM, "out of memory for the counters");
            m->counters[m->ncounters++] = (cls_counter){c[i].name, 0};
        }
        m->counters[j].value += c[i].value;
    }
    return CLS_OK;
}

static cls_status add_steps(multi_engine *m, const cls_profile_step *st, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < m->nsteps && strcmp(m->steps[j].name, st[i].name) != 0) j++;
        if (j == m->nsteps) {
            if (!vec_reserve(&m->steps, &m->steps_cap, m->nsteps + 1, sizeof *m->steps))
                return err_set(CLS_E_NOMEM, "out of memory for the profile");
            m->steps[m->nsteps++] = (cls_profile_step){.name = st[i].name, .transfer = st[i].transfer};
        }
        m->steps[j].seconds += st[i].seconds;
        m->steps[j].bytes += st[i].bytes;
    }
    return CLS_OK;
}

cls_status multi_search(multi_engine *m, const cls_batch *bt, const cls_search_params *p, cls_results *r)
{
    const unsigned n = m->n;
    cls_status s = CLS_OK;
    m->ncounters = m->nsteps = 0;
    m->batches = 0;
    for (unsigned i = 0; i < n && s == CLS_OK; i++) s = clx_search_prepare(m->ex[i], p, bt->nq);
    const uint32_t kk = clx_search_k(m->ex[0]);
    if (s == CLS_OK) s = results_reset(r, bt->nq, bt->nq * (uint64_t)kk);
    if (s != CLS_OK) return s;
    multi_run *runs = m->runs;
    pthread_t *th = m->threads;
    memset(runs, 0, n * sizeof *runs);
    const uint32_t *order = NULL;
    if (bt->nq && (s = clx_search_order(m->ex[0], bt, &order)) == CLS_OK) {
        for (unsigned i = 0; i < n && s == CLS_OK; i++) {
            uint64_t cnt = bt->nq > i ? (bt->nq - i + n - 1) / n : 0;
            if (!vec_reserve(&m->mine[i], &m->mine_cap[i], cnt + 1, sizeof *m->mine[i])) {
                s = err_set(CLS_E_NOMEM, "out of memory for the executors' queries");
                break;
            }
            for (uint64_t j = 0; j < cnt; j++) m->mine[i][j] = order[i + j * n];
            runs[i] = (multi_run){.e = m->ex[i], .bt = bt, .order = m->mine[i], .n = cnt, .r = r};
        }
        unsigned started = 1;
        for (; s == CLS_OK && !m->serial && started < n; started++)
            if (pthread_create(&th[started], NULL, run_share, &runs[started]) != 0) {
                s = err_set(CLS_E_NOMEM, "cannot start a thread for executor %u", started);
                break;
            }
        if (s == CLS_OK) run_share(&runs[0]);
        for (unsigned i = 1; i < started; i++) pthread_join(th[i], NULL);
        for (unsigned i = 1; s == CLS_OK && m->serial && i < n && runs[i - 1].s == CLS_OK; i++) run_share(&runs[i]);
        for (unsigned i = 0; i < n && s == CLS_OK; i++)
            if (runs[i].s != CLS_OK) s = err_set(runs[i].s, "executor %u: %s", i, runs[i].msg);
    }
    for (unsigned i = 0; i < n; i++) {
        clx_search_finish(m->ex[i]);
        const cls_counter *c;
        const cls_profile_step *st;
        uint32_t batches = 0;
        size_t nc = clx_counters(m->ex[i], &c), ns = clx_profile(m->ex[i], &st, &batches);
        cls_status sa = add_counters(m, c, nc);
        if (sa == CLS_OK) sa = add_steps(m, st, ns);
        if (sa == CLS_OK) sa = add_counters(m, &(cls_counter){m->share[i], runs[i].n}, 1);
        if (s == CLS_OK) s = sa;
        m->batches += batches;
    }
    if (s == CLS_OK) results_pack(r, kk);
    return s;
}

size_t multi_counters(const multi_engine *m, const cls_counter **counters)
{
    *counters = m->counters;
    return m->ncounters;
}

size_t multi_profile(const multi_engine *m, const cls_profile_step **steps, uint32_t *batches)
{
    *steps = m->steps;
    if (batches) *batches = m->batches;
    return m->nsteps;
}

void multi_build_times(const multi_engine *m, double *seconds, int *from_cache)
{
    *seconds = 0;
    *from_cache = 1;
    for (unsigned i = 0; i < m->n; i++) {
        double t;
        int c;
        clx_build_times(m->ex[i], &t, &c);
        *seconds += t;
        *from_cache = *from_cache && c;
    }
}

clx_engine *multi_executor(multi_engine *m, unsigned i) { return i < m->n ? m->ex[i] : NULL; }
unsigned multi_executors(const multi_engine *m) { return m->n; }
