/* The batcher: the one thread that uses the engine. It gathers queued requests into a device
 * batch (dynamic batching: up to max_batch queries, or max_wait_ms after the oldest was queued,
 * whichever comes first; Wu et al. measure the batch size against latency trade-off this tunes),
 * searches them with one cls_engine_search, hands each request its rows and resumes its
 * connection. The batch and results objects live as long as the server, so a batch allocates
 * nothing but each request's own rows. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "srv_internal.h"

double srv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int same_params(const cls_search_params *a, const cls_search_params *b)
{
    return a->k == b->k && a->mode == b->mode && a->k1 == b->k1 && a->b == b->b;
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
    if (!r->hit_start || !r->docs || !r->scores) return 0;
    size_t at = 0;
    for (size_t q = 0; q < r->nq; q++) {
        const uint32_t *docs;
        const float *scores;
        cls_results_get(res, first + q, &n, &docs, &scores);
        r->hit_start[q] = at;
        memcpy(r->docs + at, docs, n * sizeof *docs);
        memcpy(r->scores + at, scores, n * sizeof *scores);
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

/* Searches the taken requests as one batch, fills their answers and resumes them. */
static void run_group(srv *s, srv_req *list, size_t nq)
{
    double t_start = srv_now();
    cls_batch_clear(s->batch);
    cls_status st = CLS_OK;
    for (srv_req *r = list; r; r = r->next) {
        r->http = 200;
        for (size_t q = 0; q < r->nq && st == CLS_OK; q++) st = cls_batch_add(s->batch, r->qid[q], r->text[q]);
        if (st != CLS_OK) break; /* out of memory: the queries were checked before they were queued */
    }
    double search_s = 0;
    if (st == CLS_OK) {
        st = cls_engine_search(s->eng, s->batch, &list->p, s->res);
        search_s = srv_now() - t_start;
    }
    if (st == CLS_OK) {
        const cls_profile_step *steps;
        size_t nsteps = cls_engine_profile(s->eng, &steps, NULL);
        metrics_batch(&s->m, nq, search_s, steps, nsteps);
    }
    size_t first = 0;
    for (srv_req *r = list; r; r = r->next) {
        r->batch_queries = nq;
        r->queue_s = t_start - r->t_queued;
        r->search_s = search_s;
        if (st != CLS_OK) fail_req(r, "searching", st);
        else if (!copy_rows(r, s->res, first)) fail_req(r, "copying the results", CLS_E_NOMEM);
        first += r->nq;
        r->state = REQ_DONE;
    }
    /* Once resumed, a request belongs to the HTTP threads again (they may answer and free it at
     * once): its next is read before. */
    for (srv_req *r = list, *next; r; r = next) {
        next = r->next;
        MHD_resume_connection(r->conn);
    }
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
        double deadline = s->head->t_queued + s->o.max_wait_ms * 1e-3;
        while (!s->stopping && group_queries(s) < s->o.max_batch && srv_now() < deadline) wait_until(s, deadline);
        size_t nq;
        srv_req *list = take_group(s, &nq);
        pthread_mutex_unlock(&s->mu);
        run_group(s, list, nq);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}
