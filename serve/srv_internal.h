/* What the server's parts share: a request's life (srv_req), the server itself (struct srv),
 * and the functions of request.c (JSON in and out), metrics.c and batcher.c. */
#ifndef CLS_SRV_INTERNAL_H
#define CLS_SRV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "serve.h"

struct MHD_Connection;
struct MHD_Daemon;

typedef enum srv_route { ROUTE_SEARCH, ROUTE_HEALTH, ROUTE_METRICS, ROUTE_OTHER, NUM_ROUTES } srv_route;

typedef enum req_state {
    REQ_READING, /* headers in, body arriving */
    REQ_QUEUED,  /* suspended, waiting for the batcher */
    REQ_DONE     /* the batcher has filled the results (or the error) and resumed it */
} req_state;

/* One HTTP request, from its headers to the completion callback that frees it. Queries and qids
 * point into doc (the parsed body, or the object made from GET arguments). */
typedef struct srv_req {
    struct srv *srv;
    struct MHD_Connection *conn;
    srv_route route;
    double t0;              /* headers received (monotonic seconds) */
    double t_queued;
    char *body;
    size_t body_len, body_cap;
    int body_over;          /* the body passed max_body: discarded, answered 413 at its end */
    cJSON *doc;
    cls_search_params p;
    size_t nq;
    const char **qid, **text;
    char *qid_buf;          /* qids made from positions */
    req_state state;
    int counted;            /* in srv->inflight: decremented when the request completes */
    /* set by the batcher */
    int http;               /* 200, or 500 with error */
    char error[512];
    size_t *hit_start;      /* nq + 1 offsets into docs and scores */
    uint32_t *docs;
    float *scores;
    size_t batch_queries;
    double queue_s, search_s;
    struct srv_req *next;   /* the queue, then the batcher's taken list */
} srv_req;

/* ---- request.c: JSON in and out ---- */

/* Fills r's queries and parameters from doc (r takes doc, freed with the request). 0 when valid;
 * else the HTTP status (400 malformed or bad field, 413 over a limit) and the reason in err. */
int req_from_json(srv_req *r, cJSON *doc, const srv_opts *o, char *err, size_t errlen);
/* The body of a 200 answer to r (malloc'ed, *len bytes, no NUL needed), or NULL when out of
 * memory. total_s: from the headers to now. */
char *req_format(const srv_req *r, const cls_index *idx, double total_s, size_t *len);
/* {"error": msg, "status": status} (malloc'ed), NULL when out of memory. */
char *req_error_json(int status, const char *msg, size_t *len);
void req_free(srv_req *r);

/* ---- metrics.c ---- */

enum { LAT_RING = 4096, MAX_STEPS = 16, NUM_CODES = 8 };

typedef struct srv_step {
    char name[32];
    int transfer;
    double seconds;
    uint64_t bytes;
} srv_step;

typedef struct srv_metrics {
    pthread_mutex_t mu;
    uint64_t http[NUM_ROUTES][NUM_CODES]; /* by route and status (metrics.c: the codes' order) */
    uint64_t queries, batches, batch_hist[18];
    double batch_sum;
    double lat[LAT_RING];                 /* the last LAT_RING search requests' latencies */
    size_t lat_n, lat_at;
    uint64_t lat_count;
    double lat_sum;
    double search_s;
    srv_step steps[MAX_STEPS];
    size_t nsteps;
} srv_metrics;

int metrics_init(srv_metrics *m);
void metrics_destroy(srv_metrics *m);
/* A response of status code on route; latency_s of a 200 search request (else ignored). */
void metrics_response(srv_metrics *m, srv_route route, int code, double latency_s);
/* A batch of n queries searched in search_s, with the engine's profile of it. */
void metrics_batch(srv_metrics *m, size_t n, double search_s, const cls_profile_step *steps, size_t nsteps);
/* The Prometheus text (malloc'ed), NULL when out of memory. */
char *metrics_text(srv_metrics *m, const char *device, size_t queued, size_t *len);
void metrics_stats(srv_metrics *m, srv_stats *st);

/* ---- the server ---- */

struct srv {
    srv_opts o;
    const cls_index *idx;
    cls_engine *eng;
    char device[512];   /* the engine's first description line */
    char url[128];
    unsigned port;
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the batcher: a request queued, or stopping */
    pthread_cond_t drained; /* srv_stop: a counted request completed */
    srv_req *head, *tail;   /* queued requests, oldest first */
    size_t pending;         /* queries admitted and not yet taken by the batcher */
    size_t inflight;        /* requests admitted and not yet completed */
    atomic_int stopping;    /* read by HTTP threads without mu */
    char start_log[256];    /* libmicrohttpd's last message before it was serving: why a start failed */
    atomic_int serving;
    pthread_t batcher;
    int batcher_started;
    cls_batch *batch;
    cls_results *res;
    srv_metrics m;
};

/* ---- batcher.c ---- */

/* The batcher thread's body (arg: the srv). It returns once stopping is set and no admitted
 * query is left. */
void *batcher_main(void *arg);
/* Monotonic seconds. */
double srv_now(void);

#endif
