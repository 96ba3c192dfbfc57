/* The batcher: the one thread that submits searches to the engine. It gathers queued requests
 * into a device batch (dynamic batching: up to max_batch queries, or max_wait_ms after the oldest
 * was queued, whichever comes first; Wu et al. measure the batch size against latency trade-off
 * this tunes) and submits it with cls_engine_submit into a free slot once fewer than inflight
 * searches a device are running; a slot's completer thread waits for its search, hands each
 * request its rows and resumes its connection. While the devices are busy the queue gathers the
 * next batch, which grows (up to max_batch) with the load: batches size themselves to what the
 * devices keep up with. With inflight 1 a request waits for at most one search before its own
 * (a search queued in the engine behind another would add its whole time to every request it
 * holds, and one device runs its searches one at a time anyway); a search counts as ended when
 * its wait returns, before its answers are copied, so the next one runs meanwhile in a slot of
 * its own. The slots' batches and results live as long as the server, so a batch allocates
 * nothing but each request's own rows. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "srv_internal.h"
#include "util/err.h"

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int same_params(const cls_search_params *a, const cls_search_params *b)
{
    return a->k == b->k && a->mode == b->mode && a->k1 == b->k1 && a->b == b->b && a->rerank == b->rerank &&
           a->rerank_depth == b->rerank_depth;
}

void batcher_queue(srv *s, srv_req *r)
{
    r->next = NULL;
    if (!s->head || !(s->tail->t_due > r->t_due)) { /* the usual case: due no sooner than the last */
        if (s->tail) s->tail->next = r;
        else s->head = r;
        s->tail = r;
        return;
    }
    srv_req **at = &s->head;
    while ((*at)->t_due <= r->t_due) at = &(*at)->next;
    r->next = *at;
    *at = r;
}

/* Queries queued with the oldest request's parameters, counting up to max_batch (with mu held). */
static size_t group_queries(const srv *s)
{
    size_t n = 0;
    for (const srv_req *r = s->head; r && n < s->o.max_batch; r = r->next)
        if (same_params(&r->p, &s->head->p)) n += r->nq;
    return n;
}

/* Unlinks the next batch from the queue (with mu held): the oldest request, then the later ones
 * with its parameters, in order, while the batch stays within max_batch queries. Returns the
 * list, linked through next; *nq receives its queries. */
static srv_req *take_group(srv *s, size_t *nq)
{
    srv_req *first = s->head, *last = first, **link = &first->next;
    size_t n = first->nq;
    s->head = first->next;
    if (!s->head) s->tail = NULL;
    /* the rest of the queue, walked with a pointer to the link that reaches each request */
    srv_req **at = &s->head, *prev = NULL;
    while (*at && n < s->o.max_batch) {
        srv_req *r = *at;
        if (same_params(&r->p, &first->p) && n + r->nq <= s->o.max_batch) {
            *at = r->next;
            if (s->tail == r) s->tail = prev;
            *link = r;
            link = &r->next;
            last = r;
            n += r->nq;
        } else {
            prev = r;
            at = &r->next;
        }
    }
    last->next = NULL;
    s->pending -= n;
    *nq = n;
    return first;
}

/* The search's deadline: its requests' earliest, from now (ms; 0: none of them has one; a
 * deadline passed already still counts as one, the smallest). */
static double group_deadline_ms(const srv_req *list)
{
    double due = INFINITY;
    for (const srv_req *r = list; r; r = r->next)
        if (r->t_due < due) due = r->t_due;
    if (isinf(due)) return 0;
    double ms = (due - srv_now()) * 1e3;
    return ms > 1e-3 ? ms : 1e-3;
}

/* Copies request r's rows out of the shared results (its queries are entries first.. of them). */
static int copy_rows(srv_req *r, const cls_results *res, size_t first)
{
    size_t total = 0, n;
    for (size_t q = 0; q < r->nq; q++) {
        cls_results_get(res, first + q, &n, NULL, NULL);
        total += n;
    }
    r->hit_start = malloc((r->nq + 1) * sizeof *r->hit_start);
    r->docs = malloc((total ? total : 1) * sizeof *r->docs);
    r->scores = malloc((total ? total : 1) * sizeof *r->scores);
    if (cls_results_reranked(res)) r->first = malloc((total ? total : 1) * sizeof *r->first);
    if (!r->hit_start || !r->docs || !r->scores || (cls_results_reranked(res) && !r->first)) return 0;
    size_t at = 0;
    for (size_t q = 0; q < r->nq; q++) {
        const uint32_t *docs;
        const float *scores;
        cls_results_get(res, first + q, &n, &docs, &scores);
        r->hit_start[q] = at;
        memcpy(r->docs + at, docs, n * sizeof *docs);
        memcpy(r->scores + at, scores, n * sizeof *scores);
        if (r->first) {
            cls_results_get_first(res, first + q, &n, &scores);
            memcpy(r->first + at, scores, n * sizeof *scores);
        }
        at += n;
    }
    r->hit_start[r->nq] = at;
    return 1;
}

static void fail_req(srv_req *r, const char *what, cls_status st)
{
    r->http = 500;
    snprintf(r->error, sizeof r->error, "%s: %s: %s", what, cls_status_str(st), cls_last_error());
}

/* Fills the requests of slot sl with its search's answers (or st's error) and resumes them. */
static void answer_group(srv_slot *sl, cls_status st, double search_s)
{
    size_t first = 0;
    double now = srv_now();
    for (srv_req *r = sl->list; r; r = r->next) {
        r->late = now > r->t_due;
        if (!isinf(r->t_due)) metrics_deadline(&r->srv->m, r->late);
        r->batch_queries = sl->nq;
        r->queue_s = sl->t_start - r->t_queued;
        r->search_s = search_s;
        if (st != CLS_OK) fail_req(r, "searching", st);
        else if (!copy_rows(r, sl->res, first)) fail_req(r, "copying the results", CLS_E_NOMEM);
        first += r->nq;
        r->state = REQ_DONE;
    }
    /* Once resumed, a request belongs to the HTTP threads again (they may answer and free it at
     * once): its next is read before. */
    for (srv_req *r = sl->list, *next; r; r = next) {
        next = r->next;
        MHD_resume_connection(r->conn);
    }
}

/* Frees slot sl (with mu held) and tells the batcher. */
static void slot_free(srv *s, srv_slot *sl)
{
    sl->list = NULL;
    sl->job = NULL;
    s->busy--;
    pthread_cond_broadcast(&s->work);
}

/* Submits the taken requests as one batch in slot sl; on failure answers them at once. */
static void submit_group(srv *s, srv_slot *sl)
{
    sl->t_start = srv_now();
    cls_batch_clear(sl->batch);
    cls_status st = CLS_OK;
    for (srv_req *r = sl->list; r; r = r->next) {
        r->http = 200;
        for (size_t q = 0; q < r->nq && st == CLS_OK; q++) st = cls_batch_add(sl->batch, r->qid[q], r->text[q]);
        if (st != CLS_OK) break; /* out of memory: the queries were checked before they were queued */
    }
    cls_search *job = NULL;
    cls_search_params p = sl->list->p;
    p.deadline_ms = group_deadline_ms(sl->list);
    if (st == CLS_OK) st = cls_engine_submit(s->eng, sl->batch, &p, sl->res, &job);
    pthread_mutex_lock(&s->mu);
    if (st == CLS_OK) {
        sl->job = job;
        pthread_cond_signal(&sl->go);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->running--; /* never submitted */
    pthread_mutex_unlock(&s->mu);
    answer_group(sl, st, 0);
    pthread_mutex_lock(&s->mu);
    slot_free(s, sl);
    pthread_mutex_unlock(&s->mu);
}

/* A slot's completer: waits for each search submitted into it and answers its requests. */
static void *completer_main(void *arg)
{
    srv_slot *sl = arg;
    srv *s = sl->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!sl->job && !s->slots_stop) pthread_cond_wait(&sl->go, &s->mu);
        if (!sl->job) break;
        cls_search *job = sl->job;
        pthread_mutex_unlock(&s->mu);
        cls_status st = cls_search_wait(job);
        double search_s = srv_now() - sl->t_start;
        pthread_mutex_lock(&s->mu); /* its device is free: the batcher may submit the next */
        s->running--;
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->mu);
        if (st == CLS_OK) {
            const cls_profile_step *steps;
            size_t nsteps = cls_search_profile(job, &steps, NULL);
            metrics_batch(&s->m, sl->nq, search_s, steps, nsteps);
        }
        answer_group(sl, st, search_s);
        cls_search_free(job);
        pthread_mutex_lock(&s->mu);
        slot_free(s, sl);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

cls_status batcher_slots_create(srv *s)
{
    size_t executors = cls_engine_executors(s->eng, NULL, 0);
    s->most = s->o.inflight * (unsigned)(executors ? executors : 1);
    s->nslots = s->most + (unsigned)(executors ? executors : 1);
    s->slots = calloc(s->nslots, sizeof *s->slots);
    if (!s->slots) return err_set(CLS_E_NOMEM, "starting the server: out of memory for its searches");
    for (unsigned i = 0; i < s->nslots; i++) {
        srv_slot *sl = &s->slots[i];
        sl->s = s;
        cls_status st;
        if ((st = cls_batch_create(s->idx, &sl->batch)) != CLS_OK || (st = cls_results_create(&sl->res)) != CLS_OK)
            return st;
        if (pthread_cond_init(&sl->go, NULL) != 0) return err_set(CLS_E_NOMEM, "starting the server: no condition");
        if (pthread_create(&sl->thread, NULL, completer_main, sl) != 0) {
            pthread_cond_destroy(&sl->go);
            return err_set(CLS_E_NOMEM, "starting the server: no thread for its searches");
        }
        sl->started = 1;
    }
    return CLS_OK;
}

void batcher_slots_free(srv *s)
{
    if (!s->slots) return;
    pthread_mutex_lock(&s->mu);
    s->slots_stop = 1;
    for (unsigned i = 0; i < s->nslots; i++)
        if (s->slots[i].started) pthread_cond_signal(&s->slots[i].go);
    pthread_mutex_unlock(&s->mu);
    for (unsigned i = 0; i < s->nslots; i++) {
        srv_slot *sl = &s->slots[i];
        if (sl->started) {
            pthread_join(sl->thread, NULL);
            pthread_cond_destroy(&sl->go);
        }
        cls_batch_free(sl->batch);
        cls_results_free(sl->res);
    }
    free(s->slots);
    s->slots = NULL;
}

/* Waits on work until the monotonic time deadline (seconds). */
static void wait_until(srv *s, double deadline)
{
    struct timespec ts;
    double whole = (double)(time_t)deadline;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    pthread_cond_timedwait(&s->work, &s->mu, &ts);
}

void *batcher_main(void *arg)
{
    srv *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* admitted queries may not be linked in yet (the HTTP thread suspends its connection
         * between the two): pending, not the list, says whether work is left */
        while (!s->head && !(s->stopping && s->pending == 0)) pthread_cond_wait(&s->work, &s->mu);
        if (!s->head) break;
        /* an executor idle: the queue goes at once; else it gathers into a batch for max_wait_ms
         * (not past the first request's deadline) */
        double deadline = s->head->t_queued + s->o.max_wait_ms * 1e-3;
        if (s->head->t_due < deadline) deadline = s->head->t_due;
        pthread_mutex_unlock(&s->mu);
        int idle = !s->o.wait_when_idle && cls_engine_idle(s->eng) > 0;
        pthread_mutex_lock(&s->mu);
        while (!idle && !s->stopping && group_queries(s) < s->o.max_batch && srv_now() < deadline) wait_until(s, deadline);
        /* a batch gathers while the devices run their searches */
        while (s->busy == s->nslots || s->running >= s->most) pthread_cond_wait(&s->work, &s->mu);
        srv_slot *sl = s->slots;
        while (sl->list) sl++;
        sl->list = take_group(s, &sl->nq);
        s->busy++;
        s->running++;
        pthread_mutex_unlock(&s->mu);
        submit_group(s, sl);
        pthread_mutex_lock(&s->mu);
    }
    while (s->busy) pthread_cond_wait(&s->work, &s->mu); /* every search in flight answered */
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
