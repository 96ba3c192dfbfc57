/* The scheduler: a cls_engine's searches over its executors (one device, the reference engine, the
 * host executor, or a set such as `-d gpu` on a host of several GPUs, `-d cpu,cpu`, or devices
 * with the host executor: `-d host,1:0`, `-d all`).
 *
 * A search is a job. Submitted (cls_engine_submit), it waits in a queue of parts; an executor
 * that is free takes the queue's first part it may run. A job's first part is the whole search;
 * the thread that takes it decides how to run it:
 *   - whole, on its executor, when other searches wait or no other executor is free: with
 *     several searches in flight each runs whole on one device, which keeps a batch's queries
 *     together (a batch shares decoded lists and fills the device) and the devices apart;
 *   - split, when executors are free and nothing else waits, so that one search alone still
 *     uses every device: prepared on the first executor, ordered by cost once, and dealt out
 *     like cards (each part takes every n-th query of that order, by smooth weighted round
 *     robin, in the shares that make the executors end together by their cost models' lines:
 *     split_shares), so each part holds the whole range of costs and like-cost batches, and the devices
 *     finish together. A search is split into at most nq / split_min parts: below split_min
 *     queries a device's batch time is its fixed cost and splitting only occupies more devices.
 *     Once every executor is measured, a split must also be predicted to end the search sooner
 *     than the fastest of them alone, by SPLIT_MIN_GAIN after its own cost (split_pays): a host
 *     beside a GPU whose batch time is mostly fixed saves the GPU little by taking the cheap
 *     queries, and the split costs more than that ("searches_split" says what was chosen);
 *   - on every shard, on a sharded engine: a part pinned to each executor, the whole batch on
 *     its documents, the shards' top k merged by the last to finish (merge.c).
 * Parts write into the job's one cls_results, queries apart (a query's hits depend on it alone,
 * never on the batch it shares, so results equal one executor's bit for bit); the last part to
 * finish packs them.
 *
 * Routing (Ding et al.; cls_engine_executors says it for the user). Each executor keeps a cost
 * model per mode (cost_model.h: a query's shortest, second-shortest and total postings and its
 * terms), fitted from the parts it runs. Queued searches wait earliest deadline first. A search
 * not yet begun is taken by a free executor only if no other executor, counting the time it still
 * needs for its part in progress and the searches already left to it, is predicted to finish it
 * clearly sooner (finishes_first): a lone query goes to the host's cores, a batch waits for a
 * GPU about to be free rather than run on the slow free host, and the host takes from a busy
 * GPU's queue what it would still finish first (counted as stolen, against the executor that
 * would have finished it first were all free). A search ending after its deadline counts its
 * queries in "queries_late" and its executor's late searches.
 *
 * Threads. Each executor has a worker thread once an engine has several executors or its first
 * asynchronous search: a device's launches and waits stay on one thread, and a device set runs
 * its parts at once. A synchronous search (submit, then wait) runs on the caller's thread when an
 * executor is free: one search alone pays no hand-over between threads (workers leave a
 * synchronous search's first part to its caller, and take only its parts and retries). Where a device takes no
 * launches from several threads at once (clx_threaded_launches: POCL), its executors run one at
 * a time (serial_mu); the CPU device is parallel within a part anyway. The host executor's run
 * beside any device's.
 *
 * Failures. A part that fails on an executor runs again on another that has not failed it, and
 * the executor is set aside (no longer given work; cls_engine_executors says why), unless the
 * failure is the input's (err_input: a query whose lists exceed what the device holds, which a
 * device with more memory may still run). When no executor is left to try, the job fails with
 * the part's error; the executor that failed it last stays in service, and those set aside for
 * this part return to it, since a failure that every executor repeats is not theirs. A shard's
 * part has nowhere else to run: its failure fails the job.
 *
 * Counters and profile steps are the job's: summed by name over its parts, with each executor's
 * share ("device_N_queries") on an engine of several; the engine keeps the last finished job's
 * for cls_engine_counters and cls_engine_profile. Jobs are pooled, so a search allocates nothing
 * once the engine has run one of its size. */
#define _DEFAULT_SOURCE
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device/clx.h"
#include "engine/cost_model.h"
#include "engine/engine.h"
#include "engine/merge.h"
#include "engine/rerank.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/vec.h"

/* Queries a part of a split search holds at least (sched_set_split_min changes it for tests). */
#define SPLIT_MIN 256u
/* A split must be predicted to end this share sooner than the search run whole on the fastest of
 * its executors, after the split's own cost: the models' errors are larger than the gain of a
 * split whose parts save less, and the split then costs more than it gives. */
#define SPLIT_MIN_GAIN 0.03

typedef struct sched_part {
    struct sched_part *next; /* in the queue */
    cls_search *job;
    const uint32_t *order;   /* the queries, as positions in the batch; NULL: the whole search */
    uint64_t n;
    int pin;                 /* 1 + the executor it must run on (a shard's), or 0 */
    unsigned nsub;           /* a shard's part: searches of the whole batch into res[] (and-or: 2) */
    cls_search_params sub[2];
    cls_results *res[2];
    uint64_t tried;          /* executors that failed it (bit per executor) */
    uint64_t suspects;       /* of those, the ones set aside for it (back in service if it fails on every one) */
    cls_status status;       /* its last failure */
    char msg[512];
} sched_part;

enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct cls_search {
    sched *s;
    const cls_batch *b;
    cls_search_params p;
    cls_results *r;
    int sync;                /* its submitter runs it (sched_wait): workers take only its retries */
    enum job_state state;
    uint32_t kk;             /* hits per query of a split search */
    uint32_t final_k;        /* with a second stage (p.rerank): the hits it keeps (p.k: its depth) */
    double feat[BATCH_COST_FEATURES]; /* its queries' cost features (batch_cost_features), summed */
    double due;              /* when it should end (clx_now's clock; INFINITY: no deadline) */
    int preferred;           /* the executor predicted to finish it first were all free (-1: none yet) */
    sched_part *parts;       /* one per executor at most; parts[0] the whole search until split */
    unsigned nparts, left;
    uint32_t **slices;       /* per part of a split search, its queries (kept for reuse) */
    size_t *slice_cap;
    uint64_t *slice_n;
    unsigned nslices;
    cls_status status;
    char msg[640];
    cls_counter *counters;
    size_t ncounters, counters_cap;
    cls_profile_step *steps;
    size_t nsteps, steps_cap;
    uint32_t batches;
    uint64_t *share;         /* per executor: the queries it answered */
    cls_results **sres;      /* a sharded engine's: per executor two result sets (kept for reuse) */
    uint32_t *scratch;       /* and-or's merge: kk docIDs */
    size_t scratch_cap;
    uint64_t *cheap;         /* a split's queries by cost, cheapest first (split_cheap) */
    size_t cheap_cap;
    unsigned char *taken;    /* per query: taken by the lanes' part already */
    size_t taken_cap;
    cls_search *next_free;
};

typedef struct sched_exec {
    sched *s;
    unsigned id;
    void *impl;
    const executor_ops *ops; /* its kind */
    cost_model model[CLS_NUM_MODES]; /* per mode, fitted from its own runs (cost_model.h) */
    int last_mode;           /* of its last run, for cls_engine_executors */
    double model_rate, model_fixed; /* sched_set_model's, in place of its own (rate 0: none) */
    double run_start, run_until; /* its part in progress: when it began, when its model said it ends */
    uint64_t searches, stolen, late;
    char name[64];
    int serial;              /* runs only while no other serial executor does (serial_mu) */
    int busy;                /* running a part (claimed under the lock) */
    int aside;               /* set aside after a failure */
    char why[256];
    sched_part *assigned;    /* a part of a split search handed to this executor's worker */
    uint64_t queries;        /* answered since creation */
    pthread_t thread;
} sched_exec;

struct sched {
    const cls_index *idx;
    uint32_t *shard_base;    /* executor i holds the documents from shard_base[i]; NULL: replicated */
    uint32_t total_docs;     /* the collection's, for a sharded engine's hits per query */
    sched_exec *ex;
    unsigned n;
    unsigned split_min;
    double split_secs;       /* what cutting a search into parts costs (split()), smoothed */
    int split_always;        /* sched_set_split_always */
    pthread_mutex_t mu;      /* everything below, the executors' states and every job's */
    pthread_cond_t cv;       /* any change: a part queued or finished, an executor free */
    pthread_mutex_t serial_mu;
    sched_part *head, *tail; /* parts waiting for an executor */
    int workers, stop;
    unsigned running;        /* executors busy */
    cls_search *free_jobs;
    char (*share_names)[32];
    cls_counter *last_counters; /* the last finished job's, for cls_engine_counters */
    size_t nlast_counters, last_counters_cap;
    cls_profile_step *last_steps;
    size_t nlast_steps, last_steps_cap;
    uint32_t last_batches;
    rerank_stage *stage;     /* the second ranking stage's (sched_set_stage), or NULL */
};

/* ---- The queue ------------------------------------------------------------------------------ */

/* Queues p: at the front (a retry: late already), else earliest deadline first, after every part
 * due no later (those without a deadline last, in the order they came). */
static void queue_push(sched *s, sched_part *p, int front)
{
    p->next = NULL;
    if (!s->head) {
        s->head = s->tail = p;
        return;
    }
    if (front) {
        p->next = s->head, s->head = p;
        return;
    }
    double due = p->job->due;
    if (isinf(due) || !(s->tail->job->due > due)) {
        s->tail->next = p, s->tail = p;
        return;
    }
    sched_part **at = &s->head;
    while ((*at)->job->due <= due) at = &(*at)->next;
    p->next = *at;
    *at = p;
}

static void queue_remove(sched *s, sched_part *p)
{
    sched_part **pp = &s->head, *prev = NULL;
    while (*pp && *pp != p) prev = *pp, pp = &(*pp)->next;
    assert(*pp == p);
    *pp = p->next;
    if (s->tail == p) s->tail = prev;
    p->next = NULL;
}

static int can_take(const sched_exec *x) { return !x->busy && !x->aside && !x->assigned; }

/* ---- Routing: which executor finishes a search first --------------------------------------- */

/* The seconds executor x's model predicts for job j run whole (0: not measured at all). */
static double predict(const sched_exec *x, const cls_search *j)
{
    if (x->model_rate > 0) /* sched_set_model's line */
        return x->model_fixed + j->feat[BATCH_COST_POSTINGS] / x->model_rate;
    return cost_model_predict(&x->model[j->p.mode], j->feat);
}

/* The same for routing: 0 (so that it is tried when free, and not waited for when busy) until its
 * model for j's mode has seen COST_MODEL_MIN_RUNS runs. An executor that a first prediction from
 * one or two runs puts far behind would otherwise never run again, and never learn better: a
 * host whose only runs were a large split part, its fixed cost read from those, would never be
 * given a lone query. */
static double route_predict(const sched_exec *x, const cls_search *j)
{
    if (x->model_rate <= 0 && x->model[j->p.mode].runs < COST_MODEL_MIN_RUNS) return 0;
    return predict(x, j);
}

/* Seconds from now until executor y may start another search: 0 when free; else what its model
 * gave the part it runs less the time that part has run, or, a part overrunning its prediction,
 * as long again as it has run. */
static double wait_for(const sched_exec *y, double now)
{
    if (!y->busy && !y->assigned) return 0;
    return y->run_until > now ? y->run_until - now : now - y->run_start;
}

/* The executor predicted to finish job j first were every one free (-1 while none is measured):
 * its preferred one, against which a search run elsewhere counts as stolen. */
static int preferred_of(const sched *s, const cls_search *j)
{
    int best = -1;
    double t = 0;
    for (unsigned i = 0; i < s->n; i++) {
        double ti = s->ex[i].aside ? 0 : predict(&s->ex[i], j);
        if (ti > 0 && (best < 0 || ti < t)) best = (int)i, t = ti;
    }
    return best;
}

/* Whether executor x, free, should take job j to run whole: yes unless another executor that
 * may run it is predicted to finish it clearly sooner (by 10%, so that near ties go to the one
 * free now), counting its wait (wait_for) and the searches already left to it (backlog, in
 * seconds, NULL: none). Else *other receives the sooner one. An executor not yet measured takes
 * what comes, and is not waited for. */
static int finishes_first(const sched *s, const sched_exec *x, const cls_search *j, double now, const double *backlog,
                          unsigned *other)
{
    double tx = route_predict(x, j);
    if (s->n < 2 || s->shard_base || tx <= 0) return 1;
    double best = 0.9 * tx;
    int b = -1;
    for (unsigned i = 0; i < s->n; i++) {
        const sched_exec *y = &s->ex[i];
        if (y == x || y->aside || (j->parts[0].tried >> i & 1)) continue;
        double ty = route_predict(y, j);
        if (ty <= 0) continue;
        double f = wait_for(y, now) + (backlog ? backlog[i] : 0) + ty;
        if (f < best) best = f, b = (int)i;
    }
    if (b < 0) return 1;
    *other = (unsigned)b;
    return 0;
}

/* The first queued part executor x's worker may run (one it has not failed, pinned to no other
 * executor), or NULL. A search not yet begun is x's only where x would finish it first
 * (finishes_first); one it leaves adds to the backlog of the executor it leaves it to, so a later
 * one weighs that executor's queue. *wake receives how long until an executor it left a search to
 * should be free (the earliest moment the choice may change; unchanged when it left none). A
 * synchronous search's first part is its caller's: a worker that reaches one stops there and
 * leaves x free for that caller (woken by release's broadcast), so that a stream of submitted
 * searches cannot starve a synchronous one queued before them. */
static sched_part *queue_first_for(sched *s, unsigned x, double *wake)
{
    double backlog[64] = {0}, now = 0;
    for (sched_part *p = s->head; p; p = p->next) {
        if (p->job->sync && p->job->state == JOB_QUEUED) return NULL;
        if ((p->tried >> x & 1) || (p->pin && p->pin != (int)x + 1)) continue;
        if (p->job->state != JOB_QUEUED || p->pin) return p;
        if (now == 0) now = clx_now();
        unsigned other;
        if (finishes_first(s, &s->ex[x], p->job, now, backlog, &other)) return p;
        backlog[other] += route_predict(&s->ex[other], p->job);
        double w = wait_for(&s->ex[other], now);
        if (w < *wake) *wake = w;
    }
    return NULL;
}

/* ---- Counters ------------------------------------------------------------------------------- */

static int add_counters(cls_counter **v, size_t *nv, size_t *cap, const cls_counter *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < *nv && strcmp((*v)[j].name, c[i].name) != 0) j++;
        if (j == *nv) {
            if (!vec_reserve(v, cap, *nv + 1, sizeof **v)) return 0;
            (*v)[(*nv)++] = (cls_counter){c[i].name, 0};
        }
        (*v)[j].value += c[i].value;
    }
    return 1;
}

static int add_steps(cls_search *j, const cls_profile_step *st, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < j->nsteps && strcmp(j->steps[k].name, st[i].name) != 0) k++;
        if (k == j->nsteps) {
            if (!vec_reserve(&j->steps, &j->steps_cap, j->nsteps + 1, sizeof *j->steps)) return 0;
            j->steps[j->nsteps++] = (cls_profile_step){.name = st[i].name, .transfer = st[i].transfer};
        }
        j->steps[k].seconds += st[i].seconds;
        j->steps[k].bytes += st[i].bytes;
    }
    return 1;
}

/* Executor x's counters and profile of the part it just ran, into its job (under the lock, before
 * x runs anything else). */
static cls_status collect(sched *s, sched_exec *x, cls_search *j, uint64_t queries)
{
    const cls_counter *c = NULL;
    const cls_profile_step *st = NULL;
    uint32_t batches = 0;
    size_t nc = x->ops->counters ? x->ops->counters(x->impl, &c) : 0;
    size_t ns = x->ops->profile ? x->ops->profile(x->impl, &st, &batches) : 0;
    if (!add_counters(&j->counters, &j->ncounters, &j->counters_cap, c, nc) || !add_steps(j, st, ns))
        return err_set(CLS_E_NOMEM, "out of memory for a search's counters");
    j->batches += batches;
    j->share[x->id] += queries;
    return CLS_OK;
}

/* ---- Running a part ------------------------------------------------------------------------- */

/* Runs part p of its job on executor x, without the lock. */
static cls_status run_part(sched *s, sched_exec *x, sched_part *p)
{
    cls_search *j = p->job;
    const executor_ops *ops = x->ops;
    if (x->serial) pthread_mutex_lock(&s->serial_mu);
    fault_set_executor((int)x->id);
    cls_status st = CLS_OK;
    if (p->nsub) {
        for (unsigned i = 0; i < p->nsub && st == CLS_OK; i++) {
            st = ops->search(x->impl, j->b, &p->sub[i], p->res[i]);
            if (st == CLS_OK && i + 1 < p->nsub) {
                /* the next search resets the executor's counters and profile: these first */
                pthread_mutex_lock(&s->mu);
                st = collect(s, x, j, 0);
                pthread_mutex_unlock(&s->mu);
            }
        }
    } else if (!p->order) {
        st = ops->search(x->impl, j->b, &j->p, j->r);
    } else {
        st = ops->prepare(x->impl, &j->p, j->b->nq);
        if (st == CLS_OK) st = ops->run(x->impl, j->b, p->order, p->n, j->r);
        if (st == CLS_OK) ops->finish(x->impl);
    }
    fault_set_executor(-1);
    if (x->serial) pthread_mutex_unlock(&s->serial_mu);
    return st;
}

static void job_fail(cls_search *j, cls_status st, const char *msg)
{
    if (j->status == CLS_OK) {
        j->status = st;
        snprintf(j->msg, sizeof j->msg, "%s", msg);
    }
}

/* The job's last part has finished: packs a split search's results, keeps its counters as the
 * engine's last, and wakes its waiter. Called with the lock held; drops it while packing. */
static void job_finish(sched *s, cls_search *j)
{
    if (j->status == CLS_OK && s->shard_base) {
        pthread_mutex_unlock(&s->mu);
        const cls_results *parts[MERGE_MAX_SHARDS], *ors[MERGE_MAX_SHARDS];
        for (unsigned i = 0; i < s->n; i++) parts[i] = j->sres[2 * i], ors[i] = j->sres[2 * i + 1];
        cls_status st = merge_shards(parts, j->p.mode == CLS_MODE_AND_OR ? ors : NULL, s->shard_base, s->n, j->b->nq,
                                     j->kk, j->r, j->scratch);
        pthread_mutex_lock(&s->mu);
        if (st != CLS_OK) job_fail(j, st, cls_last_error());
    } else if (j->status == CLS_OK && j->nparts > 1) {
        pthread_mutex_unlock(&s->mu);
        results_pack(j->r, j->kk);
        pthread_mutex_lock(&s->mu);
    }
    if (j->status == CLS_OK && j->p.rerank) {
        /* the second ranking stage over the whole search's candidates (rerank.h) */
        pthread_mutex_unlock(&s->mu);
        int on_device = j->r->scored;
        cls_status st = s->stage ? rerank_run(s->stage, j->b, &j->p, j->final_k, j->r)
                                 : err_set(CLS_E_ARG, "this engine has no second ranking stage");
        pthread_mutex_lock(&s->mu);
        if (st != CLS_OK) job_fail(j, st, cls_last_error());
        /* where the candidates were scored: -v says so */
        else if (!add_counters(&j->counters, &j->ncounters, &j->counters_cap,
                               &(cls_counter){on_device ? "rerank_queries_device" : "rerank_queries_host", j->b->nq},
                               1))
            job_fail(j, CLS_E_NOMEM, "out of memory for a search's counters");
    }
    if (j->status == CLS_OK && !isinf(j->due) &&
        !add_counters(&j->counters, &j->ncounters, &j->counters_cap,
                      &(cls_counter){"queries_late", clx_now() > j->due ? j->b->nq : 0}, 1))
        job_fail(j, CLS_E_NOMEM, "out of memory for a search's counters");
    if (s->n > 1 && j->status == CLS_OK && !s->shard_base &&
        !add_counters(&j->counters, &j->ncounters, &j->counters_cap,
                      &(cls_counter){"searches_split", j->nparts > 1}, 1))
        job_fail(j, CLS_E_NOMEM, "out of memory for a search's counters");
    if (s->n > 1 && j->status == CLS_OK)
        for (unsigned i = 0; i < s->n; i++)
            if (!add_counters(&j->counters, &j->ncounters, &j->counters_cap,
                              &(cls_counter){s->share_names[i], j->share[i]}, 1))
                job_fail(j, CLS_E_NOMEM, "out of memory for a search's counters");
    s->nlast_counters = s->nlast_steps = 0;
    if (vec_reserve(&s->last_counters, &s->last_counters_cap, j->ncounters, sizeof *s->last_counters) &&
        vec_reserve(&s->last_steps, &s->last_steps_cap, j->nsteps, sizeof *s->last_steps)) {
        if (j->ncounters) memcpy(s->last_counters, j->counters, j->ncounters * sizeof *j->counters);
        if (j->nsteps) memcpy(s->last_steps, j->steps, j->nsteps * sizeof *j->steps);
        s->nlast_counters = j->ncounters;
        s->nlast_steps = j->nsteps;
    }
    s->last_batches = j->batches;
    j->state = JOB_DONE;
}

/* A part ran on x with status st (input: the failure is the input's, err_input): collects its
 * counters, or sends it to another executor, or fails its job. Called with the lock held, x still
 * busy. */
static void part_done(sched *s, sched_exec *x, sched_part *p, cls_status st, int input, const char *msg)
{
    cls_search *j = p->job;
    if (st == CLS_OK) {
        st = collect(s, x, j, p->order ? p->n : j->b->nq);
        if (st != CLS_OK) job_fail(j, st, cls_last_error());
        else x->queries += p->order ? p->n : j->b->nq;
    } else {
        p->tried |= 1ull << x->id;
        p->status = st;
        snprintf(p->msg, sizeof p->msg, "executor %u: %s", x->id, msg);
        int other = 0;
        for (unsigned i = 0; i < s->n && !other && !p->pin; i++) other = !s->ex[i].aside && !(p->tried >> i & 1);
        if (p->pin) {
            /* a shard's part: no other executor holds its documents */
            char why[sizeof p->msg + 64];
            snprintf(why, sizeof why, "shard %d (no other executor holds its documents): %s", p->pin - 1, p->msg);
            job_fail(j, st, why);
        } else if (other) {
            /* another executor runs it (one with more memory may take a query this one cannot);
             * the device is set aside unless the failure is the input's. The part goes first: it
             * is late already. */
            if (!input) {
                x->aside = 1;
                p->suspects |= 1ull << x->id;
                snprintf(x->why, sizeof x->why, "%s", msg);
            }
            queue_push(s, p, 1);
            pthread_cond_broadcast(&s->cv);
            return;
        } else {
            /* no executor left to try: the job fails, and x, the last, stays in service; a part
             * that failed on every executor it could try is the input's failure, or the host's,
             * not theirs: those set aside for it return */
            for (unsigned i = 0; i < s->n; i++)
                if (p->suspects >> i & 1) s->ex[i].aside = 0, s->ex[i].why[0] = '\0';
            int any_aside = 0;
            for (unsigned i = 0; i < s->n; i++) any_aside |= s->ex[i].aside;
            if (any_aside && !input) {
                char all[sizeof p->msg + 64];
                snprintf(all, sizeof all, "no executor left to run it (the others set aside): %s", p->msg);
                job_fail(j, st, all);
            } else {
                job_fail(j, st, s->n > 1 ? p->msg : msg);
            }
        }
    }
    if (--j->left == 0) job_finish(s, j);
    pthread_cond_broadcast(&s->cv);
}

/* A part whose job lost every executor it could run on (set aside meanwhile) fails the job. */
static void queue_drop_orphans(sched *s)
{
    for (sched_part *p = s->head, *next; p; p = next) {
        next = p->next;
        int other = p->pin && !s->ex[p->pin - 1].aside;
        for (unsigned i = 0; i < s->n && !other && !p->pin; i++) other = !s->ex[i].aside && !(p->tried >> i & 1);
        if (other) continue;
        queue_remove(s, p);
        cls_search *j = p->job;
        job_fail(j, p->tried ? p->status : CLS_E_NODEVICE,
                 p->tried ? p->msg : "every executor of the engine has been set aside");
        if (j->state == JOB_QUEUED) j->state = JOB_RUNNING;
        if (--j->left == 0) job_finish(s, j);
    }
}

/* Runs part p on x (claimed) without the lock, then settles it: its counters, or another
 * executor, or its job's failure (the thread's error detail and whether it is the input's taken
 * before anything else can overwrite them). Called with the lock held; returns with it held. */
static void run_unlocked(sched *s, sched_exec *x, sched_part *p)
{
    cls_search *j = p->job;
    /* the part's cost features: the job's, or a split part's own queries' */
    double f[BATCH_COST_FEATURES];
    memcpy(f, j->feat, sizeof f);
    int model = s->n > 1 && !s->shard_base;
    pthread_mutex_unlock(&s->mu);
    if (model && p->order) batch_cost_features(j->b, p->order, p->n, f);
    double t0 = clx_now();
    pthread_mutex_lock(&s->mu);
    x->run_start = t0;
    x->run_until = t0 + (model ? cost_model_predict(&x->model[j->p.mode], f) : 0);
    pthread_mutex_unlock(&s->mu);
    cls_status st = run_part(s, x, p);
    double t = clx_now() - t0;
    char msg[512] = "";
    int input = st != CLS_OK && err_is_input();
    if (st != CLS_OK) snprintf(msg, sizeof msg, "%s", cls_last_error());
    pthread_mutex_lock(&s->mu);
    if (st == CLS_OK && model) cost_model_add(&x->model[j->p.mode], f, t);
    x->last_mode = (int)j->p.mode;
    x->searches++;
    if (st == CLS_OK && j->left == 1 && clx_now() > j->due) x->late++;
    part_done(s, x, p, st, input, msg);
    if (st != CLS_OK) queue_drop_orphans(s);
}

/* The shares of job j for executors ids[0..n) that make them finish together (w, summing to 1),
 * from each one's cost model for j's mode: with T_i its prediction for the whole job and fixed_i
 * its run's own cost, V_i = T_i - fixed_i scales with the share, so executor i given share f_i
 * ends at fixed_i + f_i V_i, equal for all at T = (1 + sum fixed_i / V_i) / sum 1 / V_i. A share
 * below 2% (a fixed cost as long as the others' whole run) is raised to it. An executor not yet
 * measured gets a probe of split_min queries' worth; with none measured, equal shares. Returns T
 * (0 unless every one is measured). Called with the lock held. */
static double split_shares(const sched *s, const cls_search *j, const unsigned *ids, unsigned n, double *w)
{
    double fixed[64], v[64], a = 1, b = 0;
    unsigned measured = 0;
    for (unsigned i = 0; i < n; i++) {
        const sched_exec *x = &s->ex[ids[i]];
        double t = predict(x, j);
        fixed[i] = x->model_rate > 0 ? x->model_fixed : cost_model_fixed(&x->model[j->p.mode]);
        if (!(fixed[i] < t)) fixed[i] = 0;
        v[i] = t - fixed[i];
        measured += v[i] > 0;
    }
    if (measured == 0) { /* nothing to go by */
        for (unsigned i = 0; i < n; i++) w[i] = 1.0 / n;
        return 0;
    }
    /* an executor not yet measured gets a probe, split_min queries' worth, the measured ones
     * share the rest: half a large search on a slow executor would cost more than it learns */
    double probe = s->split_min ? (double)s->split_min / (double)j->b->nq : 0, rest = 1;
    if (probe > 1.0 / n) probe = 1.0 / n;
    for (unsigned i = 0; i < n; i++)
        if (v[i] > 0) a += fixed[i] / v[i], b += 1 / v[i];
        else rest -= probe;
    double T = a / b, sum = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!(v[i] > 0)) continue;
        w[i] = (T - fixed[i]) / v[i];
        if (!(w[i] >= 0.02)) w[i] = 0.02;
        sum += w[i];
    }
    for (unsigned i = 0; i < n; i++) w[i] = v[i] > 0 ? w[i] / sum * rest : probe;
    return measured == n ? T : 0;
}

/* A split's plan: the shares (split_shares), and where an executor of several lanes (the host's
 * threads) takes part, its model and the end time T it should meet. */
typedef struct split_plan {
    double w[64];
    double T;             /* the parts' common end, from now (0: not measured) */
    int lanes;            /* the part (index in ids) of the executor of several lanes, or -1 */
    cost_model model;     /* its model for the search's mode, copied under the lock */
} split_plan;

/* Splits job j, just taken by executor x, over nparts executors (ids[0] is x; all claimed, none
 * running): x's cost order dealt out by smooth weighted round robin, each executor weighing its
 * share (split_shares, w), so that each part holds the whole range of costs and a faster device
 * more of them; with equal shares that is a stride: part i takes the positions i, i + n, i + 2n,
 * ... Called without the lock; on failure nothing was handed out (the caller releases the others
 * and runs j whole). */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The part of an executor of several lanes (the host's threads): the cheapest queries (by their
 * lists' postings), as many as its model says it ends within the plan's T (at least one). A part of
 * lanes ends with its longest query, which a share dealt across the range of costs would hold: the
 * cheap end keeps its queries short, and the device, whose time grows little with a query's
 * cost, takes the long ones. At most `most`, so every other part keeps a query. Marks them in
 * j->taken; returns how many. */
static uint64_t split_cheap(cls_search *j, const split_plan *pl, uint64_t most, uint32_t *part)
{
    const cls_batch *b = j->b;
    const uint64_t nq = b->nq;
    for (uint64_t q = 0; q < nq; q++) {
        uint64_t c = batch_query_postings(b, q);
        j->cheap[q] = (c < UINT32_MAX ? c : UINT32_MAX) << 32 | q;
        j->taken[q] = 0;
    }
    qsort(j->cheap, nq, sizeof *j->cheap, cmp_u64);
    double fixed = cost_model_fixed(&pl->model), lanes = pl->model.width > 1 ? pl->model.width : 1, t = fixed;
    uint64_t n = 0;
    while (n < most) {
        uint32_t q = (uint32_t)j->cheap[n];
        double f[BATCH_COST_FEATURES];
        batch_cost_features(b, &q, 1, f);
        double one = cost_model_predict(&pl->model, f), add = (one - fixed) / lanes;
        if (n > 0 && (t + add > pl->T || one > pl->T)) break;
        t += add > 0 ? add : 0;
        part[n++] = q;
        j->taken[q] = 1;
    }
    return n;
}

static cls_status split(sched *s, sched_exec *x, cls_search *j, const unsigned *ids, unsigned nparts,
                        const split_plan *pl)
{
    const executor_ops *ops = x->ops;
    const uint64_t nq = j->b->nq;
    if (x->serial) pthread_mutex_lock(&s->serial_mu);
    fault_set_executor((int)x->id);
    const uint32_t *order = NULL;
    cls_status st = ops->prepare(x->impl, &j->p, nq);
    if (st == CLS_OK) {
        j->kk = ops->k(x->impl);
        st = results_reset(j->r, nq, nq * (uint64_t)j->kk);
    }
    if (st == CLS_OK) st = ops->order(x->impl, j->b, &order);
    fault_set_executor(-1);
    if (x->serial) pthread_mutex_unlock(&s->serial_mu);
    if (st != CLS_OK) return st;
    if (j->nslices < nparts) {
        uint32_t **sl = realloc(j->slices, nparts * sizeof *sl);
        if (sl) j->slices = sl;
        size_t *cap = sl ? realloc(j->slice_cap, nparts * sizeof *cap) : NULL;
        if (cap) j->slice_cap = cap;
        uint64_t *cnt = cap ? realloc(j->slice_n, nparts * sizeof *cnt) : NULL;
        if (!cnt) return err_set(CLS_E_NOMEM, "out of memory for a search's parts");
        j->slice_n = cnt;
        for (unsigned i = j->nslices; i < nparts; i++) j->slices[i] = NULL, j->slice_cap[i] = 0;
        j->nslices = nparts;
    }
    double w[64], cur[64], total = 0;
    for (unsigned i = 0; i < nparts; i++) {
        w[i] = pl->w[i];
        cur[i] = 0;
        j->slice_n[i] = 0;
        if (!vec_reserve(&j->slices[i], &j->slice_cap[i], nq + 1, sizeof *j->slices[i]))
            return err_set(CLS_E_NOMEM, "out of memory for a search's parts");
    }
    /* an executor of lanes takes the cheap end; the others are dealt the rest */
    int lanes = pl->lanes >= 0 && pl->T > 0 && nparts > 1 ? pl->lanes : -1;
    if (lanes >= 0 && (!vec_reserve(&j->cheap, &j->cheap_cap, nq, sizeof *j->cheap) ||
                       !vec_reserve(&j->taken, &j->taken_cap, nq, sizeof *j->taken)))
        return err_set(CLS_E_NOMEM, "out of memory for a search's parts");
    if (lanes >= 0) {
        j->slice_n[lanes] = split_cheap(j, pl, nq - (nparts - 1), j->slices[lanes]);
        w[lanes] = 0;
    }
    for (unsigned i = 0; i < nparts; i++) total += w[i];
    for (uint64_t q = 0; q < nq; q++) {
        if (lanes >= 0 && j->taken[order[q]]) continue;
        unsigned best = 0;
        for (unsigned i = 0; i < nparts; i++) {
            cur[i] += w[i];
            if (cur[i] > cur[best]) best = i;
        }
        cur[best] -= total;
        j->slices[best][j->slice_n[best]++] = order[q];
    }
    /* every part runs something (a probe's weight may round to nothing): from the largest */
    for (unsigned i = 0; i < nparts; i++)
        if (j->slice_n[i] == 0) {
            unsigned big = 0;
            for (unsigned k = 1; k < nparts; k++)
                if (j->slice_n[k] > j->slice_n[big]) big = k;
            assert(j->slice_n[big] > 1);
            j->slices[i][j->slice_n[i]++] = j->slices[big][--j->slice_n[big]];
        }
    return CLS_OK;
}

/* A sharded engine's job as one part per shard, each pinned to its executor: the whole batch
 * searched into the job's result sets for that shard (and-or: AND at k and OR at 2k, merge.c says
 * why). Called with the lock held. */
static cls_status shard_parts(sched *s, cls_search *j)
{
    const int and_or = j->p.mode == CLS_MODE_AND_OR;
    if (and_or && j->p.k > CLS_MAX_K / 2)
        return err_set(CLS_E_ARG, "and-or on a sharded engine takes k up to %u, not %u", CLS_MAX_K / 2, j->p.k);
    j->kk = j->p.k < s->total_docs ? j->p.k : s->total_docs;
    if (!j->sres && !(j->sres = calloc(2 * s->n, sizeof *j->sres)))
        return err_set(CLS_E_NOMEM, "out of memory for a search's shards");
    for (unsigned i = 0; i < 2 * s->n; i++)
        if (!j->sres[i] && cls_results_create(&j->sres[i]) != CLS_OK)
            return err_set(CLS_E_NOMEM, "out of memory for a search's shards");
    if (!vec_reserve(&j->scratch, &j->scratch_cap, j->kk + 1, sizeof *j->scratch))
        return err_set(CLS_E_NOMEM, "out of memory for a search's shards");
    cls_search_params a = j->p, o = j->p;
    a.rerank = o.rerank = NULL; /* a shard's candidates are ranked after the merge (job_finish) */
    if (and_or) {
        a.mode = CLS_MODE_AND;
        o.mode = CLS_MODE_OR;
        o.k = 2 * j->p.k;
    }
    j->nparts = j->left = s->n;
    for (unsigned i = 0; i < s->n; i++)
        j->parts[i] = (sched_part){.job = j, .pin = (int)i + 1, .nsub = and_or ? 2 : 1, .sub = {a, o},
                                   .res = {j->sres[2 * i], j->sres[2 * i + 1]}};
    return CLS_OK;
}

/* Of x (claimed) and the free executors, the one predicted to finish job j first when it runs it
 * whole: x unless another is faster (a lone query on the host's cores rather than a GPU's fixed
 * cost, a batch on the GPU). */
static sched_exec *fastest_free(sched *s, sched_exec *x, cls_search *j)
{
    if (s->n < 2 || s->shard_base) return x;
    sched_exec *best = x;
    double t = route_predict(x, j);
    for (unsigned i = 0; i < s->n && t > 0; i++) {
        sched_exec *y = &s->ex[i];
        if (y == x || !can_take(y)) continue;
        double ty = route_predict(y, j);
        if (ty < t) best = y, t = ty;
    }
    return best;
}

/* Whether splitting job j over executors ids[0..n) (plan pl) is predicted to end it sooner, by
 * SPLIT_MIN_GAIN and the split's own cost, than running it whole on the fastest of them: -1 when
 * it is (or until every one is measured, pl->T 0: the parts are how an executor gets measured),
 * else the fastest one's id, which then runs it whole. */
static int split_pays(const sched *s, const cls_search *j, const unsigned *ids, unsigned n, const split_plan *pl)
{
    if (!(pl->T > 0) || s->split_always) return -1;
    double alone = 0;
    int fastest = -1;
    for (unsigned i = 0; i < n; i++) {
        double t = predict(&s->ex[ids[i]], j);
        if (t > 0 && (fastest < 0 || t < alone)) alone = t, fastest = (int)ids[i];
    }
    return fastest < 0 || pl->T + s->split_secs < (1.0 - SPLIT_MIN_GAIN) * alone ? -1 : fastest;
}

/* Executor x (claimed, busy) runs part p: a new job's first part is run whole or split first.
 * Called with the lock held; returns with it held, x still busy. */
static void take(sched *s, sched_exec *x, sched_part *p)
{
    cls_search *j = p->job;
    if (j->state == JOB_QUEUED && s->shard_base) {
        j->state = JOB_RUNNING;
        cls_status st = shard_parts(s, j);
        if (st != CLS_OK) {
            job_fail(j, st, cls_last_error());
            if (--j->left == 0) job_finish(s, j);
            pthread_cond_broadcast(&s->cv);
            return;
        }
        for (unsigned i = 0; i < s->n; i++)
            if (i != x->id) queue_push(s, &j->parts[i], 0);
        pthread_cond_broadcast(&s->cv);
        p = &j->parts[x->id];
    }
    if (j->state == JOB_QUEUED) {
        j->state = JOB_RUNNING;
        /* split only when nothing else waits: then every free executor joins in */
        unsigned got[64], ng = 0; /* got[0] is x, then the free executors claimed */
        uint64_t most = x->ops->prepare && s->split_min ? j->b->nq / s->split_min : 0;
        got[ng++] = x->id;
        if (!s->head && s->workers)
            for (unsigned i = 0; i < s->n && ng < most && ng < 64; i++)
                if (i != x->id && can_take(&s->ex[i]) && s->ex[i].ops->prepare) {
                    s->ex[i].busy = 1;
                    s->running++;
                    got[ng++] = i;
                }
        split_plan pl;
        int whole_on = -1; /* split_pays' choice of the executor to run it whole */
        if (ng > 1) {
            pl.T = split_shares(s, j, got, ng, pl.w);
            pl.lanes = -1;
            for (unsigned i = 0; i < ng; i++)
                if (s->ex[got[i]].model[j->p.mode].width > 1 && s->ex[got[i]].model_rate <= 0) {
                    pl.lanes = (int)i;
                    pl.model = s->ex[got[i]].model[j->p.mode];
                }
            if ((whole_on = split_pays(s, j, got, ng, &pl)) >= 0) {
                for (unsigned i = 1; i < ng; i++) s->ex[got[i]].busy = 0, s->running--;
                pthread_cond_broadcast(&s->cv);
                ng = 1;
            }
        }
        if (ng > 1) {
            pthread_mutex_unlock(&s->mu);
            double t0 = clx_now();
            cls_status st = split(s, x, j, got, ng, &pl);
            double took = clx_now() - t0;
            pthread_mutex_lock(&s->mu);
            s->split_secs = s->split_secs > 0 ? 0.8 * s->split_secs + 0.2 * took : took;
            if (st == CLS_OK) {
                j->nparts = j->left = ng;
                for (unsigned i = 0; i < ng; i++)
                    j->parts[i] = (sched_part){.job = j, .order = j->slices[i], .n = j->slice_n[i]};
                for (unsigned i = 1; i < ng; i++) {
                    s->ex[got[i]].busy = 0; /* the worker claims it again with its part */
                    s->running--;
                    s->ex[got[i]].assigned = &j->parts[i];
                }
                pthread_cond_broadcast(&s->cv);
                p = &j->parts[0];
            } else {
                for (unsigned i = 1; i < ng; i++) s->ex[got[i]].busy = 0, s->running--;
                pthread_cond_broadcast(&s->cv);
            }
        } else {
            /* whole: on the free executor that would finish it first (by its worker); where a
             * split was declined, on the fastest of those it would have taken, whose models were
             * just weighed (route_predict does not trust a model of few runs) */
            sched_exec *best = whole_on >= 0 ? &s->ex[whole_on] : s->workers ? fastest_free(s, x, j) : x;
            j->preferred = preferred_of(s, j);
            if (j->preferred >= 0 && j->preferred != (int)best->id) best->stolen++;
            if (best != x) {
                double now = clx_now();
                best->assigned = p;
                best->run_start = now;
                best->run_until = now + predict(best, j);
                pthread_cond_broadcast(&s->cv);
                return;
            }
        }
    }
    run_unlocked(s, x, p);
}

static void release(sched *s, sched_exec *x)
{
    x->busy = 0;
    s->running--;
    pthread_cond_broadcast(&s->cv);
}

/* Waits on cv for at most `seconds` (at least 20 us). */
static void cond_wait_for(pthread_cond_t *cv, pthread_mutex_t *mu, double seconds)
{
    if (seconds < 20e-6) seconds = 20e-6;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double whole = floor(seconds);
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

static void *worker(void *arg)
{
    sched_exec *x = arg;
    sched *s = x->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (x->assigned && !x->busy) {
            sched_part *p = x->assigned;
            x->assigned = NULL;
            x->busy = 1;
            s->running++;
            run_unlocked(s, x, p);
            release(s, x);
            continue;
        }
        double wake = INFINITY;
        sched_part *p = can_take(x) ? queue_first_for(s, x->id, &wake) : NULL;
        if (p) {
            queue_remove(s, p);
            x->busy = 1;
            s->running++;
            take(s, x, p);
            release(s, x);
            continue;
        }
        if (s->stop) break;
        if (isinf(wake)) pthread_cond_wait(&s->cv, &s->mu);
        else cond_wait_for(&s->cv, &s->mu, wake); /* a search left to a busy executor: look again when it should be free */
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Starts a worker for every executor (once). Called with the lock held. */
static cls_status start_workers(sched *s)
{
    if (s->workers) return CLS_OK;
    for (unsigned i = 0; i < s->n; i++)
        if (pthread_create(&s->ex[i].thread, NULL, worker, &s->ex[i]) != 0) {
            s->stop = 1;
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
            for (unsigned k = 0; k < i; k++) pthread_join(s->ex[k].thread, NULL);
            pthread_mutex_lock(&s->mu);
            s->stop = 0;
            return err_set(CLS_E_NOMEM, "cannot start a thread for executor %u", i);
        }
    s->workers = 1;
    return CLS_OK;
}

/* ---- The scheduler's life ------------------------------------------------------------------- */

cls_status sched_create(const cls_index *idx, const executor_ops *const *ops, void *const *impls, const int *serial,
                        unsigned n, const uint32_t *shard_base, sched **out)
{
    assert(n >= 1 && n <= 64);
    *out = NULL;
    sched *s = calloc(1, sizeof *s);
    if (!s || !(s->ex = calloc(n, sizeof *s->ex)) || !(s->share_names = calloc(n, sizeof *s->share_names))) {
        if (s) free(s->ex);
        free(s);
        return err_set(CLS_E_NOMEM, "out of memory for %u executors", n);
    }
    s->idx = idx;
    s->n = n;
    s->total_docs = idx->num_docs;
    if (shard_base) {
        if (!(s->shard_base = malloc(n * sizeof *s->shard_base))) {
            free(s->ex);
            free(s->share_names);
            free(s);
            return err_set(CLS_E_NOMEM, "out of memory for %u executors", n);
        }
        memcpy(s->shard_base, shard_base, n * sizeof *s->shard_base);
    }
    s->split_min = SPLIT_MIN;
    for (unsigned i = 0; i < n; i++) {
        s->ex[i] = (sched_exec){.s = s, .id = i, .impl = impls[i], .ops = ops[i], .serial = serial && serial[i]};
        unsigned width = ops[i]->width ? ops[i]->width(impls[i]) : 1;
        for (int m = 0; m < CLS_NUM_MODES; m++) s->ex[i].model[m].width = width;
        snprintf(s->share_names[i], sizeof s->share_names[i], "device_%u_queries", i);
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) goto fail;
    if (pthread_mutex_init(&s->serial_mu, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        goto fail;
    }
    if (pthread_cond_init(&s->cv, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_mutex_destroy(&s->serial_mu);
        goto fail;
    }
    if (n > 1) {
        pthread_mutex_lock(&s->mu);
        cls_status st = start_workers(s);
        pthread_mutex_unlock(&s->mu);
        if (st != CLS_OK) {
            /* the executors are the caller's to free */
            s->n = 0;
            sched_free(s);
            return st;
        }
    }
    *out = s;
    return CLS_OK;
fail:
    free(s->ex);
    free(s->share_names);
    free(s->shard_base);
    free(s);
    return err_set(CLS_E_NOMEM, "no mutex for the engine's scheduler");
}

static void job_release_arrays(cls_search *j)
{
    for (unsigned i = 0; i < j->nslices; i++) free(j->slices[i]);
    free(j->slices);
    free(j->slice_cap);
    free(j->slice_n);
    free(j->parts);
    free(j->counters);
    free(j->steps);
    free(j->share);
    if (j->sres)
        for (unsigned i = 0; i < 2 * j->s->n; i++) cls_results_free(j->sres[i]);
    free(j->sres);
    free(j->scratch);
    free(j->cheap);
    free(j->taken);
    free(j);
}

void sched_free(sched *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    while (s->running || s->head) pthread_cond_wait(&s->cv, &s->mu); /* searches still in flight finish */
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    int workers = s->workers;
    pthread_mutex_unlock(&s->mu);
    if (workers)
        for (unsigned i = 0; i < s->n; i++) pthread_join(s->ex[i].thread, NULL);
    for (unsigned i = 0; i < s->n; i++) s->ex[i].ops->free(s->ex[i].impl);
    for (cls_search *j = s->free_jobs, *next; j; j = next) {
        next = j->next_free;
        job_release_arrays(j);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->serial_mu);
    free(s->ex);
    free(s->share_names);
    free(s->last_counters);
    free(s->last_steps);
    free(s->shard_base);
    free(s);
}

/* ---- Searches ------------------------------------------------------------------------------- */

cls_status sched_submit(sched *s, const cls_batch *b, const cls_search_params *p, cls_results *r, int async,
                        cls_search **out)
{
    *out = NULL;
    double feat[BATCH_COST_FEATURES] = {0}, now = clx_now();
    if (s->n > 1 && !s->shard_base) batch_cost_features(b, NULL, b->nq, feat);
    pthread_mutex_lock(&s->mu);
    cls_status st = async ? start_workers(s) : CLS_OK;
    cls_search *j = s->free_jobs;
    if (st == CLS_OK && j) s->free_jobs = j->next_free;
    else if (st == CLS_OK) {
        j = calloc(1, sizeof *j);
        if (!j || !(j->share = calloc(s->n, sizeof *j->share)) || !(j->parts = calloc(s->n, sizeof *j->parts))) {
            if (j) free(j->share);
            free(j);
            j = NULL;
            st = err_set(CLS_E_NOMEM, "out of memory for a search");
        }
    }
    if (st != CLS_OK) {
        pthread_mutex_unlock(&s->mu);
        return st;
    }
    j->s = s;
    j->b = b;
    j->p = *p;
    j->final_k = p->k;
    if (p->rerank) { /* the executors' first stage keeps the candidates; an executor that runs the
                      * stage in its batches keeps the final k (dev_rerank.c), which rerank_depth
                      * carries in their copy */
        j->p.k = rerank_depth(p);
        j->p.rerank_depth = p->k < j->p.k ? p->k : j->p.k;
    }
    j->r = r;
    r->reranked = r->scored = 0; /* a result set reused: nothing of its last search's stage */
    j->sync = !async;
    j->state = JOB_QUEUED;
    j->status = CLS_OK;
    j->msg[0] = '\0';
    j->ncounters = j->nsteps = 0;
    j->batches = 0;
    j->kk = 0;
    memcpy(j->feat, feat, sizeof feat);
    j->due = p->deadline_ms > 0 ? now + p->deadline_ms * 1e-3 : INFINITY;
    j->preferred = -1;
    memset(j->share, 0, s->n * sizeof *j->share);
    j->nparts = j->left = 1;
    j->parts[0] = (sched_part){.job = j};
    queue_push(s, &j->parts[0], 0);
    queue_drop_orphans(s); /* an engine whose every executor is set aside fails it at once */
    if (async) pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    *out = j;
    return CLS_OK;
}

int sched_done(const cls_search *j)
{
    sched *s = j->s;
    pthread_mutex_lock(&s->mu);
    int done = j->state == JOB_DONE;
    pthread_mutex_unlock(&s->mu);
    return done;
}

cls_status sched_wait(cls_search *j)
{
    sched *s = j->s;
    pthread_mutex_lock(&s->mu);
    while (j->state != JOB_DONE) {
        /* the job still waits and an executor is free: run it here, on the caller's thread (on
         * the free one predicted to finish it first; among those unmeasured or alike, the first) */
        double wake = INFINITY;
        if (j->state == JOB_QUEUED) {
            sched_exec *x = NULL;
            for (unsigned i = 0; i < s->n && !x; i++)
                if (can_take(&s->ex[i])) x = &s->ex[i];
            if (x) x = fastest_free(s, x, j);
            unsigned other;
            double now = clx_now();
            if (x && !finishes_first(s, x, j, now, NULL, &other)) {
                /* a busy executor would still finish it sooner: wait for it */
                wake = wait_for(&s->ex[other], now);
                x = NULL;
            }
            if (x) {
                queue_remove(s, &j->parts[0]);
                x->busy = 1;
                s->running++;
                take(s, x, &j->parts[0]);
                release(s, x);
                continue;
            }
        }
        if (isinf(wake)) pthread_cond_wait(&s->cv, &s->mu);
        else cond_wait_for(&s->cv, &s->mu, wake);
    }
    cls_status st = j->status;
    pthread_mutex_unlock(&s->mu);
    if (st != CLS_OK) return err_set(st, "%s", j->msg);
    /* a device engine whose postings are resident may not have read the file at all: a file
     * that shrank under it fails the search all the same (a flag load when intact) */
    return cls_index_intact(s->idx);
}

void sched_release(cls_search *j)
{
    if (!j) return;
    sched *s = j->s;
    sched_wait(j);
    pthread_mutex_lock(&s->mu);
    j->state = JOB_FREE;
    j->next_free = s->free_jobs;
    s->free_jobs = j;
    pthread_mutex_unlock(&s->mu);
}

size_t sched_job_counters(const cls_search *j, const cls_counter **c)
{
    *c = j->counters;
    return j->ncounters;
}

size_t sched_job_profile(const cls_search *j, const cls_profile_step **steps, uint32_t *batches)
{
    *steps = j->steps;
    if (batches) *batches = j->batches;
    return j->nsteps;
}

size_t sched_counters(const sched *s, const cls_counter **c)
{
    *c = s->last_counters;
    return s->nlast_counters;
}

size_t sched_profile(const sched *s, const cls_profile_step **steps, uint32_t *batches)
{
    *steps = s->last_steps;
    if (batches) *batches = s->last_batches;
    return s->nlast_steps;
}

/* ---- Executors ------------------------------------------------------------------------------ */

unsigned sched_executors(const sched *s) { return s->n; }
void *sched_executor(sched *s, unsigned i) { return i < s->n ? s->ex[i].impl : NULL; }

void sched_executor_state(sched *s, unsigned i, cls_executor_info *info)
{
    pthread_mutex_lock(&s->mu);
    const sched_exec *x = &s->ex[i];
    info->queries = x->queries;
    info->set_aside = x->aside;
    snprintf(info->why, sizeof info->why, "%s", x->aside ? x->why : "");
    snprintf(info->name, sizeof info->name, "%s", x->name);
    info->searches = x->searches;
    info->stolen = x->stolen;
    info->late = x->late;
    info->busy = x->busy || x->assigned;
    const cost_model *m = &x->model[x->last_mode];
    info->model_error = cost_model_error(m);
    char line[sizeof info->model - 16];
    cost_model_describe(m, line, sizeof line);
    static const char *const modes[] = {"or", "and", "and-or"};
    snprintf(info->model, sizeof info->model, "%s: %s", x->last_mode < 3 ? modes[x->last_mode] : "?", line);
    pthread_mutex_unlock(&s->mu);
}

void sched_set_name(sched *s, unsigned i, const char *name)
{
    pthread_mutex_lock(&s->mu);
    if (i < s->n) snprintf(s->ex[i].name, sizeof s->ex[i].name, "%s", name);
    pthread_mutex_unlock(&s->mu);
}

unsigned sched_idle(sched *s)
{
    pthread_mutex_lock(&s->mu);
    unsigned n = 0;
    for (unsigned i = 0; i < s->n; i++) n += can_take(&s->ex[i]);
    if (s->head) n = 0; /* searches wait: those idle are leaving them to a busy one */
    pthread_mutex_unlock(&s->mu);
    return n;
}

void sched_set_model(sched *s, unsigned i, double rate, double fixed)
{
    pthread_mutex_lock(&s->mu);
    if (i < s->n) s->ex[i].model_rate = rate, s->ex[i].model_fixed = fixed;
    pthread_mutex_unlock(&s->mu);
}

void sched_hold(sched *s, unsigned i, double seconds)
{
    pthread_mutex_lock(&s->mu);
    sched_exec *x = &s->ex[i];
    if (seconds > 0 && !x->busy) {
        double now = clx_now();
        x->busy = 1;
        s->running++;
        x->run_start = now;
        x->run_until = now + seconds;
    } else if (!(seconds > 0) && x->busy) {
        x->busy = 0;
        s->running--;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

int sched_queued_position(sched *s, const cls_search *j)
{
    pthread_mutex_lock(&s->mu);
    int at = 0, found = -1;
    for (const sched_part *p = s->head; p && found < 0; p = p->next, at++)
        if (p->job == j) found = at;
    pthread_mutex_unlock(&s->mu);
    return found;
}

void sched_set_split_always(sched *s, int always)
{
    pthread_mutex_lock(&s->mu);
    s->split_always = always;
    pthread_mutex_unlock(&s->mu);
}

void sched_set_split_min(sched *s, unsigned queries)
{
    pthread_mutex_lock(&s->mu);
    s->split_min = queries;
    pthread_mutex_unlock(&s->mu);
}

void sched_build_times(const sched *s, double *seconds, int *from_cache)
{
    *seconds = 0;
    *from_cache = 1;
    for (unsigned i = 0; i < s->n; i++) {
        double t = 0;
        int c = 0;
        if (s->ex[i].ops->build_times) s->ex[i].ops->build_times(s->ex[i].impl, &t, &c);
        *seconds += t;
        *from_cache = *from_cache && c;
    }
}

void sched_set_stage(sched *s, rerank_stage *stage) { s->stage = stage; }
