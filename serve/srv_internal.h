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

#include <microhttpd.h>

typedef enum srv_route { ROUTE_SEARCH, ROUTE_HEALTH, ROUTE_METRICS, ROUTE_OTHER, NUM_ROUTES } srv_route;

typedef enum req_state {
    REQ_READING, /* headers in, body arriving */
    REQ_QUEUED,  /* suspended, waiting for the batcher */
    REQ_DONE     /* the batcher has filled the results (or the error) and resumed it */
} req_state;

/* ---- conns.c: the server's account of its connections ---- */

/* The lists a connection waits in, each with its deadline: no request line yet (--timeout), a
 * request arriving (--request-timeout), an answer leaving (--request-timeout). */
enum { CONN_IDLE, CONN_READING, CONN_SENDING, NUM_LISTS };
/* Why the server shut a connection down (the label of clsearch_connections_closed_total). */
enum { CLOSED_IDLE, CLOSED_REQUEST, CLOSED_ANSWER, CLOSED_ROOM, CLOSED_STOP, NUM_CLOSED };
/* A connection that came in over a limit with no other to close for it: answered 503. */
enum { OVER_NONE, OVER_IP, OVER_ALL };

typedef struct srv_conn {
    struct srv_conn *prev, *next;         /* in lists[list], oldest first */
    struct srv_conn *all_prev, *all_next; /* every connection open */
    int fd;
    int family;                           /* AF_INET or AF_INET6 (0: another kind of address) */
    unsigned char addr[16];
    int list;                             /* CONN_*, or -1: in none (its request whole, or shut) */
    double since;                         /* when it entered list */
    double opened;                        /* when it was accepted */
    int begun;                            /* a request line has arrived since its last answer */
    int shut;                             /* its socket was shut down: closing */
    int over;                             /* OVER_*: set when it opens, read by its own thread */
    size_t over_count;                    /* the count it took past the limit */
} srv_conn;

typedef struct conn_q {
    srv_conn *head, *tail;
} conn_q;

/* One HTTP request, from its headers to the completion callback that frees it. Queries and qids
 * point into doc (the parsed body, or the object made from GET arguments). */
typedef struct srv_req {
    struct srv *srv;
    struct MHD_Connection *conn;
    srv_conn *sc;           /* its connection's account (NULL when untracked) */
    srv_route route;
    double t0;              /* headers received (monotonic seconds) */
    double t_queued;
    double t_due;           /* t_queued + its deadline (INFINITY: none) */
    char *body;
    size_t body_len, body_cap;
    int body_over;          /* the body passed max_body: discarded, answered 413 at its end */
    cJSON *doc;
    cls_search_params p;
    size_t nq;
    const char **qid, **text;
    char *qid_buf;          /* qids made from positions */
    req_state state;
    int status;             /* the status queued, counted in /metrics once the answer has left */
    double latency_s;       /* headers in to answer queued */
    /* set by the batcher */
    int http;               /* 200, or 500 with error */
    char error[512];
    size_t *hit_start;      /* nq + 1 offsets into docs and scores */
    uint32_t *docs;
    float *scores;
    float *first;           /* reranked: the first stage's scores (else NULL) */
    size_t batch_queries;
    double queue_s, search_s;
    int late;               /* answered after t_due */
    struct srv_req *next;   /* the queue, then the batcher's taken list */
} srv_req;

/* ---- request.c: JSON in and out ---- */

/* The number, counting from 1 in document order, of the first string of the JSON text (one cJSON
 * accepted) that holds \u0000, which cJSON's C strings end at; 0 when none does. */
long json_nul_string(const char *text, size_t len);
/* Fills r's queries and parameters from doc (r takes doc, freed with the request). nul_at:
 * json_nul_string of the text doc was parsed from (0 for none). 0 when valid; else the HTTP
 * status (400 malformed, a bad field, text not UTF-8 or holding NUL, a qid given twice; 413 over
 * a limit) and the reason in err. */
int req_from_json(srv_req *r, cJSON *doc, long nul_at, const srv_opts *o, char *err, size_t errlen);
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
    uint64_t aborted;                     /* responses queued and not sent whole */
    uint64_t queries, batches, batch_hist[18];
    double batch_sum;
    double lat[LAT_RING];                 /* the last LAT_RING search requests' latencies */
    size_t lat_n, lat_at;
    uint64_t lat_count;
    double lat_sum;
    double search_s;
    uint64_t due, late;                   /* requests answered with a deadline, and after it */
    srv_step steps[MAX_STEPS];
    size_t nsteps;
} srv_metrics;

int metrics_init(srv_metrics *m);
void metrics_destroy(srv_metrics *m);
/* A response of status code on route, sent whole; latency_s of a 200 search request (else ignored). */
void metrics_response(srv_metrics *m, srv_route route, int code, double latency_s);
/* A response queued and not sent whole (the connection closed first). */
void metrics_aborted(srv_metrics *m);
/* A batch of n queries searched in search_s, with the engine's profile of it. */
void metrics_batch(srv_metrics *m, size_t n, double search_s, const cls_profile_step *steps, size_t nsteps);
/* A request with a deadline answered, late (1) or in time. */
void metrics_deadline(srv_metrics *m, int late);
/* The Prometheus text (malloc'ed), NULL when out of memory. */
/* conns: connections open; closed: connections the server shut down, by CLOSED_*. */
/* x: the engine's executors (cls_engine_executors). */
char *metrics_text(srv_metrics *m, const char *device, size_t queued, size_t conns, const uint64_t closed[NUM_CLOSED],
                   const cls_executor_info *x, size_t nx, size_t *len);
void metrics_stats(srv_metrics *m, srv_stats *st);

/* ---- the server ---- */

/* A search in flight (batcher.c): the batcher fills its batch from a group of requests and
 * submits it (cls_engine_submit); its completer thread waits for it, hands each request its rows
 * and resumes its connection, then frees the slot. list is NULL while the slot is free. */
typedef struct srv_slot {
    struct srv *s;
    cls_batch *batch;
    cls_results *res;
    srv_req *list;
    size_t nq;
    double t_start;
    cls_search *job;
    pthread_cond_t go; /* a search submitted, or the completers stopping */
    pthread_t thread;
    int started;
} srv_slot;

struct srv {
    srv_opts o;
    const cls_index *idx;
    cls_engine *eng;
    char device[512];   /* the engine's first description line */
    char device_utf8[1600]; /* the same made valid UTF-8 */
    char url[128];
    unsigned port;
    struct MHD_Daemon *d;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the batcher: a request queued, a slot freed, or stopping */
    srv_req *head, *tail;   /* queued requests, oldest first */
    size_t pending;         /* queries admitted and not yet taken by the batcher */
    atomic_int stopping;    /* read by HTTP threads without mu */
    char start_log[256];    /* libmicrohttpd's last message before it was serving: why a start failed */
    atomic_int serving;
    pthread_t batcher;
    int batcher_started;
    srv_slot *slots;        /* a batch's search and answers: (inflight + 1) a device, so that */
    unsigned nslots, busy;  /* the next search runs while the last one's requests are answered */
    unsigned running, most; /* searches submitted and not yet ended; most: inflight x executors */
    int slots_stop;
    srv_metrics m;
    /* conns.c's, under cmu */
    pthread_mutex_t cmu;
    pthread_cond_t cwake;   /* the watchdog and the drain: a deadline moved, a connection closed */
    conn_q lists[NUM_LISTS];
    srv_conn *all;
    size_t nconns, nshut;   /* open, and of them shut down and closing */
    uint64_t closed[NUM_CLOSED];
    int draining, watch_stop;
    pthread_t watchdog;
    int watchdog_started;
};

/* NOTIFY_CONNECTION: a connection opened (counted; room made for it) or closed. */
void conn_notify(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_ConnectionNotificationCode code);
/* URI_LOG_CALLBACK: a request line arrived; returns NULL. */
void *conn_request_line(void *cls, const char *uri, struct MHD_Connection *mc);
/* The account of libmicrohttpd's connection mc (NULL when untracked). */
srv_conn *conn_of(struct MHD_Connection *mc);
/* c enters list (CONN_*; -1: none, its request whole); CONN_IDLE: its answer has left. */
void conn_phase(srv *s, srv_conn *c, int list);
size_t conn_count(srv *s);
void conn_closed_counts(srv *s, uint64_t out[NUM_CLOSED]);
/* The watchdog thread's body: shuts down connections past their deadline until watch_stop. */
void *watchdog_main(void *arg);
/* Shutdown: closes idle connections and waits, until the monotonic time deadline, for the others
 * to finish their request and close; returns how many are left open. */
int conns_drain(srv *s, double deadline);

/* ---- batcher.c ---- */

/* The batcher thread's body (arg: the srv). It returns once stopping is set, no admitted query
 * is left and every search in flight has been answered. */
void *batcher_main(void *arg);
/* Links r into the queue, earliest deadline first (with mu held). */
void batcher_queue(srv *s, srv_req *r);
/* The slots and their completer threads (with s->mu initialised); freed by batcher_slots_free
 * once the batcher has returned (or never started). */
cls_status batcher_slots_create(struct srv *s);
void batcher_slots_free(struct srv *s);
/* Monotonic seconds. */
double srv_now(void);

#endif
