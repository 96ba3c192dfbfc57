/* serve suite: the query server under concurrent load, the throughput-versus-latency trade-off of
 * dynamic batching, in closed loop (C clients, each sending its next request when answered) or
 * open loop (requests sent at an offered rate, whatever the answers).
 *
 *   clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--rate R1,R2,...] [--seed N]
 *                        [--max-batch 1,16,128] [--max-wait-ms 0,5] [--inflight 1,2] [-k 10] [-m or]
 *                        [--threads N] [--deadline-ms D]
 *                        [--seconds S] [--json FILE]
 *
 * One engine is created; for every max-batch and max-wait setting a server (serve/) is started
 * in-process on a free loopback port. Each connection is a client thread with one keep-alive
 * connection that sends one-query POST /search requests and takes one untimed request first.
 *
 * Closed loop (without --rate): for every client count C, C threads send back to back (thread i
 * starts at topic i x n / C and walks the topics in turn). For S seconds (default 2) every
 * answer's latency (request written to answer read, at the client) is recorded. Reported per row:
 * requests per second (each request one query), latency p50 and p99 at the client, the mean
 * device batch (queries / cls_engine_search calls, from the server's counters) and the device
 * time per query (OpenCL profiling events; 0 on the reference engine).
 *
 * Open loop (--rate): for every pool size C (-c, default 256) and offered rate R, requests are
 * due at the times of a Poisson process of rate R over S seconds: exponential gaps drawn from a
 * splitmix64 generator seeded with --seed (default 1) and restarted every row, so a row repeats
 * and rows of several rates share one pattern of arrivals, scaled. Request j of a row asks topic
 * j mod n. A request goes out on a free connection of the pool at its due time; where none is
 * free it waits, in order, in the client's queue. Its latency runs from its due time to its
 * answer read, so waiting for a connection, in the server's queue and in the engine all count:
 * a server slower than the offered rate shows as growing latency, not as a lower offered rate
 * (no coordinated omission). Requests still queued when the S seconds end are not sent (unsent);
 * those sent are answered. Reported per row: offered and achieved rate (answers per second, over
 * S or until the last answer where later), latency p50, p99 and p99.9 of the answered requests,
 * the requests sent, answered and failed (an answer other than 200, or a connection lost), the
 * unsent ones, the mean device batch and device time per query as above. Where unsent is not 0
 * the server was past saturation: the percentiles leave those requests out and grow with S.
 * Failed requests are a result here, not an error: a note on stderr says why the first failed.
 * --deadline-ms D gives every request that deadline (the server's --deadline-ms) and adds the
 * column "in time %": the requests answered within D ms of their due time, over every request
 * due in the row (failed and unsent ones count as missed).
 *
 * The server is given room for every connection (--max-conns and --max-conns-per-ip at least C,
 * --max-queue at least C, so that no request is refused for want of room) and a long --timeout,
 * as a pool's connections may stay idle for long. Both ends of every connection are descriptors
 * of this process: the soft limit on open files is raised to what C needs, and a hard limit
 * (ulimit -Hn) too low for it is refused before anything starts. Clients and server share the
 * machine's cores, so on a small CPU the clients' own work is in the figures. Answers are
 * checked for status 200 only: the tests compare the server's results with `clsearch search`'s. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench.h"
#include "clsearch.h"
#include "http_client.h"
#include "serve.h"
#include "util/vec.h"

#define MAX_CLIENTS 16384
#define MAX_RATE 1e6
/* The client's frames need a few KiB; glibc also carves the process's static TLS out of a
 * thread's stack, so the size leaves room for it. Small stacks let thousands of clients fit. */
#define CLIENT_STACK ((size_t)64 << 10)
/* How long a client waits for an answer before counting its connection lost: long enough for
 * thousands of queued requests on a slow engine, short enough that a stuck server ends the run. */
#define CLIENT_TIMEOUT_S 300

/* The warm-up's batch: the first WARM_QUERIES topics. */
enum { WARM_QUERIES = 4096 };

typedef struct bodies {
    char **text;
    size_t n, cap;
    const char *mode;
    unsigned k;
    int nomem;
    cls_batch *warm;   /* the first WARM_QUERIES topics, analysed, for warm_up */
    cls_status warm_s; /* the first failure to add one */
} bodies;

/* One untimed search of the first topics before the first row, so that every device has built
 * its programs and the engine's cost model holds each device's rate when the clients start. */
static cls_status warm_up(cls_engine *e, const bodies *b)
{
    cls_results *r = NULL;
    cls_search_params p;
    cls_search_defaults(&p);
    p.k = b->k;
    cls_status s = b->warm_s;
    if (s == CLS_OK) s = cls_mode_parse(b->mode, &p.mode);
    if (s == CLS_OK) s = cls_results_create(&r);
    if (s == CLS_OK) s = cls_engine_search(e, b->warm, &p, r);
    cls_results_free(r);
    return s;
}

/* Each topic as the body of a one-query request, made before any timing (the first ones into
 * the warm-up's batch too). */
static int on_topic(void *u, const char *qid, const char *text)
{
    bodies *b = u;
    if (b->warm_s == CLS_OK && cls_batch_count(b->warm) < WARM_QUERIES) b->warm_s = cls_batch_add(b->warm, qid, text);
    cJSON *o = cJSON_CreateObject();
    char *s = NULL;
    if (o && cJSON_AddStringToObject(o, "qid", qid) && cJSON_AddStringToObject(o, "query", text) &&
        cJSON_AddNumberToObject(o, "k", b->k) && cJSON_AddStringToObject(o, "mode", b->mode))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s || !vec_reserve(&b->text, &b->cap, b->n + 1, sizeof *b->text)) {
        free(s);
        b->nomem = 1;
        return 1;
    }
    b->text[b->n++] = s;
    return 0;
}

/* Where the clients of a row wait for each other after their untimed request: a count of those
 * ready and the word to go, or to give up (a client thread that could not be started). */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned ready;
    int state; /* 0 waiting, 1 go, -1 called off */
} gate;

/* Open loop: the row's due times, taken in order by whichever connection is free. The times not
 * yet taken are the client's queue. */
typedef struct arrivals {
    pthread_mutex_t mu;
    uint64_t rng;
    double rate, next, t_stop;
    size_t taken;
} arrivals;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* The next gap of a Poisson process: -ln(u) / rate, u uniform in (0, 1]. */
static double next_gap(arrivals *a)
{
    double u = ((double)(splitmix64(&a->rng) >> 11) + 1.0) * 0x1p-53;
    return -log(u) / a->rate;
}

/* The next due request, unless the row has ended: its due time and its topic. */
static int take(arrivals *a, size_t topics, double *due, size_t *topic)
{
    pthread_mutex_lock(&a->mu);
    int ok = a->next < a->t_stop && bench_now() < a->t_stop;
    if (ok) {
        *due = a->next;
        *topic = a->taken++ % topics;
        a->next += next_gap(a);
    }
    pthread_mutex_unlock(&a->mu);
    return ok;
}

static void sleep_until(double t)
{
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

typedef struct client {
    pthread_t t;
    const bodies *b;
    unsigned port;
    size_t start;
    gate *g;
    atomic_int *stop; /* closed loop: the row's end */
    arrivals *arr;    /* open loop: the due times; NULL in closed loop */
    double *lat;
    size_t n, cap;
    size_t sent;
    unsigned errors;
    double t_end;
    char why[256];
} client;

static int record(client *c, double dt)
{
    if (!vec_reserve(&c->lat, &c->cap, c->n + 1, sizeof *c->lat)) {
        snprintf(c->why, sizeof c->why, "out of memory");
        c->errors++;
        return 0;
    }
    c->lat[c->n++] = dt;
    return 1;
}

static void *client_main(void *arg)
{
    client *c = arg;
    hc_conn h;
    int st;
    const char *resp;
    size_t rl, at = c->start;
    int up = hc_connect(&h, "127.0.0.1", c->port, CLIENT_TIMEOUT_S) == 0;
    if (up) { /* untimed: the connection's first request */
        const char *body = c->b->text[at];
        up = hc_request(&h, "POST", "/search", body, strlen(body), &st, &resp, &rl) == 0;
    }
    if (!up) {
        snprintf(c->why, sizeof c->why, "connecting to the server failed");
        c->errors++;
    }
    pthread_mutex_lock(&c->g->mu);
    c->g->ready++;
    pthread_cond_broadcast(&c->g->cv);
    while (c->g->state == 0) pthread_cond_wait(&c->g->cv, &c->g->mu);
    if (c->g->state < 0) up = 0;
    pthread_mutex_unlock(&c->g->mu);
    double due = 0;
    while (up && (c->arr ? take(c->arr, c->b->n, &due, &at) : !atomic_load(c->stop))) {
        if (c->arr) sleep_until(due);
        else at = (at + 1) % c->b->n;
        const char *body = c->b->text[at];
        double t0 = c->arr ? due : bench_now();
        c->sent++;
        if (hc_request(&h, "POST", "/search", body, strlen(body), &st, &resp, &rl) != 0) {
            snprintf(c->why, sizeof c->why, "the connection failed");
            c->errors++;
            break;
        }
        double now = bench_now();
        if (st != 200) {
            if (!c->errors) snprintf(c->why, sizeof c->why, "status %d: %.200s", st, resp);
            c->errors++;
            continue;
        }
        if (!record(c, now - t0)) break;
        c->t_end = now;
    }
    if (!c->arr || c->t_end == 0) c->t_end = bench_now();
    hc_close(&h);
    return NULL;
}

/* Both ends of every connection are in this process: C client sockets, and what srv_start asks
 * for its --max-conns (serve/server.c: the connections, an eighth more for those closing, 16, and
 * 256 for the index, the device runtime and the standard streams); 64 more for the suite's own
 * files. The soft limit is raised to the hard one where it is lower than that. 0, or 2 after a
 * message. */
static int room_for_files(unsigned clients, unsigned server_conns)
{
    rlim_t need = (rlim_t)clients + server_conns + server_conns / 8 + 16 + 256 + 64;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        fprintf(stderr, "clsearch bench serve: reading the limit on open files: %s\n", strerror(errno));
        return 2;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need) return 0;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        fprintf(stderr, "clsearch bench serve: -c %u needs %llu open files (client and server ends of every "
                "connection); the hard limit is %llu (ulimit -Hn): ask fewer clients or raise the limit\n",
                clients, (unsigned long long)need, (unsigned long long)rl.rlim_max);
        return 2;
    }
    rlim_t cur = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        rl.rlim_cur = need; /* a hard limit above what the kernel grants (nr_open) */
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            fprintf(stderr, "clsearch bench serve: -c %u needs %llu open files; raising the limit from %llu: %s\n",
                    clients, (unsigned long long)need, (unsigned long long)cur, strerror(errno));
            return 2;
        }
    }
    return 0;
}

static unsigned parse_list(const char *s, double *v, unsigned max)
{
    unsigned n = 0;
    while (*s && n < max) {
        char *end;
        double x = strtod(s, &end);
        if (end == s || (*end && *end != ',')) return 0;
        v[n++] = x;
        s = *end ? end + 1 : end;
    }
    return *s ? 0 : n;
}

static double pct(const double *sorted, size_t n, double p)
{
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

static int failed(cls_status s, const char *what)
{
    fprintf(stderr, "clsearch bench serve: %s: %s: %s\n", what, cls_status_str(s), cls_last_error());
    return 1;
}

static const char usage[] =
    "usage: clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--rate R1,R2,...] [--seed N]\n"
    "                            [--max-batch 1,16,128] [--max-wait-ms 0,5] [--inflight 1,2] [-k 10] [-m or]\n"
    "                            [--deadline-ms D]\n"
    "                            [--threads N] [--seconds S] [--json FILE]\n";

static int bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_arg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clsearch bench serve: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fputs(usage, stderr);
    return 2;
}

/* One row's figures, from its clients. */
typedef struct row {
    size_t n, sent;
    unsigned errors;
    const char *why;
    double t_end;
} row;

/* Starts C clients (their untimed requests taken), lets them go at *t0, ends a closed-loop row
 * after seconds and gathers the answers' latencies into *all. 0, or 1 after a message. */
static int run_row(client *cl, unsigned C, const bodies *b, unsigned port, arrivals *arr, double seconds, srv *server,
                   srv_stats *s0, double *t0, double **all, size_t *all_cap, row *r)
{
    gate g = {.ready = 0, .state = 0};
    atomic_int stop = 0;
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    long min = sysconf(_SC_THREAD_STACK_MIN);
    size_t stack = min > 0 && (size_t)min > CLIENT_STACK ? (size_t)min : CLIENT_STACK;
    if (pthread_attr_setstacksize(&attr, stack) != 0) { /* the default stack then */
        pthread_attr_destroy(&attr);
        pthread_attr_init(&attr);
    }
    unsigned started = 0;
    int err = 0;
    for (unsigned i = 0; i < C; i++) {
        cl[i] = (client){.b = b, .port = port, .start = (size_t)i * b->n / C, .g = &g, .stop = &stop, .arr = arr};
        if ((err = pthread_create(&cl[i].t, &attr, client_main, &cl[i])) != 0) break;
        started++;
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_lock(&g.mu);
    if (started < C) {
        g.state = -1;
    } else {
        while (g.ready < C) pthread_cond_wait(&g.cv, &g.mu);
        srv_get_stats(server, s0);
        *t0 = bench_now();
        if (arr) {
            arr->t_stop = *t0 + seconds;
            arr->next = *t0 + next_gap(arr);
        }
        g.state = 1;
    }
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    if (started == C && !arr) {
        struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&nap, NULL);
        atomic_store(&stop, 1);
    }
    *r = (row){.t_end = *t0};
    int nomem = 0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(cl[i].t, NULL);
        if (cl[i].t_end > r->t_end) r->t_end = cl[i].t_end;
        r->errors += cl[i].errors;
        r->sent += cl[i].sent;
        if (cl[i].errors && !r->why) r->why = cl[i].why;
        if (!nomem && vec_reserve(all, all_cap, r->n + cl[i].n, sizeof **all)) {
            memcpy(*all + r->n, cl[i].lat, cl[i].n * sizeof **all);
            r->n += cl[i].n;
        } else {
            nomem = 1;
        }
        free(cl[i].lat);
        cl[i].lat = NULL;
    }
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    if (started < C) {
        fprintf(stderr, "clsearch bench serve: cannot start client thread %u of %u: %s (memory, ulimit -v, "
                "ulimit -u, /proc/sys/kernel/threads-max): ask fewer clients\n", started + 1, C, strerror(err));
        return 1;
    }
    if (nomem) {
        fprintf(stderr, "clsearch bench serve: out of memory\n");
        return 1;
    }
    return 0;
}

/* What every row of a run shares. */
typedef struct suite {
    const bodies *b;
    client *cl;
    double *all;
    size_t all_cap;
    FILE *json;
    const char *desc, *index, *mode;
    int dlen;
    unsigned k;
    double seconds;
    uint64_t seed;
    double deadline_ms;  /* --deadline-ms (0: none) */
    cls_engine *eng;
    cls_executor_info *x0, *x1; /* the engine's executors before and after a row */
    size_t nx;
} suite;

/* An engine of several executors: after each row, a line per executor with its share of the
 * row's searches and queries, those it took from a busy one's queue, those it finished late, and
 * its cost model's error and form (cls_engine_executors). */
static void executors_row(suite *su)
{
    if (su->nx < 2 || !su->x1) return;
    cls_engine_executors(su->eng, su->x1, su->nx);
    for (size_t i = 0; i < su->nx; i++) {
        const cls_executor_info *a = &su->x0[i], *b = &su->x1[i];
        printf("    executor [%zu] %s: %llu searches, %llu queries, %llu stolen, %llu late; model %s\n", i, b->name,
               (unsigned long long)(b->searches - a->searches), (unsigned long long)(b->queries - a->queries),
               (unsigned long long)(b->stolen - a->stolen), (unsigned long long)(b->late - a->late), b->model);
    }
}

static void json_head(const suite *su, const srv_opts *so)
{
    fprintf(su->json,
            "{\"suite\":\"serve\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%.*s\",\"index\":\"%s\",\"mode\":\"%s\","
            "\"k\":%u,\"max_batch\":%u,\"max_wait_ms\":%g,\"inflight\":%u,\"http_threads\":%u,",
            bench_commit(), bench_when(), su->dlen, su->desc, su->index, su->mode, su->k, so->max_batch,
            so->max_wait_ms, so->inflight, so->threads);
}

/* One row: C clients in closed loop (rate 0), or a pool of C connections offered rate requests a
 * second. 0, or 1 after a message. */
static int one_row(suite *su, srv *server, const srv_opts *so, unsigned C, double rate)
{
    arrivals arr = {.rng = su->seed, .rate = rate};
    pthread_mutex_init(&arr.mu, NULL);
    srv_stats s0, s1;
    double t0 = 0;
    row r;
    if (su->x0) cls_engine_executors(su->eng, su->x0, su->nx);
    int rc = run_row(su->cl, C, su->b, srv_port(server), rate > 0 ? &arr : NULL, su->seconds, server, &s0, &t0,
                     &su->all, &su->all_cap, &r);
    srv_get_stats(server, &s1);
    size_t unsent = 0;
    if (rate > 0 && rc == 0)
        for (double t = arr.next; t < arr.t_stop; t += next_gap(&arr)) unsent++;
    pthread_mutex_destroy(&arr.mu);
    if (rc) return rc;
    if (r.n == 0 || (rate == 0 && r.errors)) {
        fprintf(stderr, "clsearch bench serve: %u failed requests (%s)\n", r.errors, r.why ? r.why : "none answered");
        return 1;
    }
    bench_sort(su->all, (unsigned)r.n);
    const double *all = su->all;
    uint64_t dq = s1.queries - s0.queries, db = s1.batches - s0.batches;
    double p50 = pct(all, r.n, 0.5) * 1e3, p99 = pct(all, r.n, 0.99) * 1e3, mean_batch = db ? (double)dq / (double)db : 0,
           dev = dq ? (s1.device_s - s0.device_s) * 1e3 / (double)dq : 0;
    if (rate == 0) {
        double qps = (double)r.n / (r.t_end - t0);
        printf("%8u %9u %8g %7u %9zu %10.1f %9.3f %9.3f %10.2f %11.4f\n", so->inflight, so->max_batch, so->max_wait_ms, C,
               r.n, qps, p50,
               p99, mean_batch, dev);
        if (su->json) {
            json_head(su, so);
            fprintf(su->json,
                    "\"clients\":%u,\"requests\":%zu,\"qps\":%.3f,\"latency_p50_ms\":%.4f,\"latency_p99_ms\":%.4f,"
                    "\"mean_batch\":%.3f,\"device_ms_per_query\":%.5f}\n",
                    C, r.n, qps, p50, p99, mean_batch, dev);
        }
    } else {
        double el = r.t_end - t0 > su->seconds ? r.t_end - t0 : su->seconds, got = (double)r.n / el,
               p999 = pct(all, r.n, 0.999) * 1e3;
        /* within the deadline: answered by it, over every request due (failed and unsent ones missed it) */
        size_t in_time = 0;
        for (size_t i = 0; i < r.n && su->deadline_ms > 0; i++) in_time += all[i] * 1e3 <= su->deadline_ms;
        double within = su->deadline_ms > 0 ? 100.0 * (double)in_time / (double)(r.n + r.errors + unsent) : 0;
        printf("%8u %9u %8g %6u %10g %10.1f %9.3f %9.3f %9.3f %8zu %8zu %7u %7zu %10.2f %11.4f", so->inflight,
               so->max_batch,
               so->max_wait_ms, C, rate, got, p50, p99, p999, r.sent, r.n, r.errors, unsent, mean_batch, dev);
        if (su->deadline_ms > 0) printf(" %10.3f", within);
        putchar('\n');
        if (r.errors)
            fprintf(stderr, "clsearch bench serve: note: %u of %zu requests failed at %g/s, the first: %s\n", r.errors,
                    r.sent, rate, r.why);
        if (su->json) {
            json_head(su, so);
            fprintf(su->json,
                    "\"loop\":\"open\",\"pool\":%u,\"seed\":%llu,\"seconds\":%g,\"offered_rps\":%g,\"achieved_rps\":%.3f,"
                    "\"latency_p50_ms\":%.4f,\"latency_p99_ms\":%.4f,\"latency_p999_ms\":%.4f,\"sent\":%zu,"
                    "\"answered\":%zu,\"failed\":%u,\"unsent\":%zu,\"mean_batch\":%.3f,\"device_ms_per_query\":%.5f,"
                    "\"deadline_ms\":%g,\"within_deadline_pct\":%.4f}\n",
                    C, (unsigned long long)su->seed, su->seconds, rate, got, p50, p99, p999, r.sent, r.n, r.errors,
                    unsent, mean_batch, dev, su->deadline_ms, within);
        }
    }
    executors_row(su);
    fflush(stdout);
    return 0;
}

int bench_serve(int argc, char **argv)
{
    const char *index = NULL, *topics = NULL, *device = NULL, *json_path = NULL, *mode = "or";
    const char *c_arg = NULL, *rate_arg = NULL, *seed_arg = NULL;
    double cs[16], mbs[16], mws[16], rates[16], ifs[8];
    unsigned nc = 0, nr = 0, nmb = parse_list("1,16,128", mbs, 16), nmw = parse_list("0,5", mws, 16), k = 10,
             threads = 0, nif = parse_list("1", ifs, 8);
    double seconds = 2.0, deadline_ms = 0;
    uint64_t seed = 1;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"seconds", required_argument, 0, 's'},
                                          {"max-batch", required_argument, 0, 'B'}, {"max-wait-ms", required_argument, 0, 'W'},
                                          {"threads", required_argument, 0, 'T'}, {"rate", required_argument, 0, 'R'},
                                          {"seed", required_argument, 0, 'S'}, {"inflight", required_argument, 0, 'I'},
                                          {"deadline-ms", required_argument, 0, 'D'}, {0, 0, 0, 0}};
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "x:q:d:c:k:m:", longs, NULL)) != -1) {
        switch (c) {
        case 'x': index = optarg; break;
        case 'q': topics = optarg; break;
        case 'd': device = optarg; break;
        case 'c': c_arg = optarg; break;
        case 'R': rate_arg = optarg; break;
        case 'S': seed_arg = optarg; break;
        case 'B': nmb = parse_list(optarg, mbs, 16); break;
        case 'W': nmw = parse_list(optarg, mws, 16); break;
        case 'I': nif = parse_list(optarg, ifs, 8); break;
        case 'k': k = (unsigned)atoi(optarg); break;
        case 'm': mode = optarg; break;
        case 'T': threads = (unsigned)atoi(optarg); break;
        case 'j': json_path = optarg; break;
        case 's': seconds = atof(optarg); break;
        case 'D': {
            char *end;
            deadline_ms = strtod(optarg, &end);
            if (end == optarg || *end || !(deadline_ms > 0 && deadline_ms <= 600000))
                return bad_arg("--deadline-ms '%s': give a deadline from above 0 to 600000 ms", optarg);
            break;
        }
        default: bad = 1;
        }
    }
    if (c_arg) {
        nc = parse_list(c_arg, cs, 16);
        for (unsigned i = 0; i < nc && nc; i++)
            if (!(cs[i] >= 1 && cs[i] <= MAX_CLIENTS && cs[i] == (unsigned)cs[i])) nc = 0;
        if (!nc)
            return bad_arg("-c '%s': give client counts (with --rate, connection pool sizes) from 1 to %u, at most "
                           "16, separated by commas", c_arg, MAX_CLIENTS);
    } else {
        nc = parse_list(rate_arg ? "256" : "1,4,16,64", cs, 16);
    }
    if (rate_arg) {
        nr = parse_list(rate_arg, rates, 16);
        for (unsigned i = 0; i < nr && nr; i++)
            if (!(rates[i] >= 0.001 && rates[i] <= MAX_RATE)) nr = 0;
        if (!nr)
            return bad_arg("--rate '%s': give offered requests per second from 0.001 to %.0f, at most 16, separated "
                           "by commas", rate_arg, MAX_RATE);
    }
    if (seed_arg) {
        char *end;
        errno = 0;
        seed = strtoull(seed_arg, &end, 10);
        if (!*seed_arg || *end || errno || seed_arg[0] == '-' || seed_arg[0] == '+')
            return bad_arg("--seed '%s': give a whole number from 0 to 18446744073709551615", seed_arg);
        if (!rate_arg) return bad_arg("--seed is the open loop's: give it with --rate");
    }
    cls_mode m;
    bad = bad || !index || !topics || !nmb || !nmw || optind != argc || !(seconds > 0 && seconds <= 3600) || k < 1 ||
          k > 1000 || threads > 64 || cls_mode_parse(mode, &m) != CLS_OK;
    for (unsigned i = 0; i < nmb && !bad; i++) bad = !(mbs[i] >= 1 && mbs[i] <= 65536 && mbs[i] == (unsigned)mbs[i]);
    for (unsigned i = 0; i < nmw && !bad; i++) bad = !(mws[i] >= 0 && mws[i] <= 10000);
    bad = bad || !nif;
    for (unsigned i = 0; i < nif && !bad; i++) bad = !(ifs[i] >= 1 && ifs[i] <= 8 && ifs[i] == (unsigned)ifs[i]);
    if (bad) {
        fprintf(stderr, "%s  (clients 1..%u, rates 0.001..%.0f per second, k 1..1000, seconds up to 3600)\n", usage,
                MAX_CLIENTS, MAX_RATE);
        return 2;
    }
    unsigned max_c = 0;
    for (unsigned i = 0; i < nc; i++)
        if ((unsigned)cs[i] > max_c) max_c = (unsigned)cs[i];
    srv_opts defaults;
    srv_defaults(&defaults);
    unsigned server_conns = max_c > defaults.max_conns ? max_c : defaults.max_conns;
    int lim = room_for_files(max_c, server_conns);
    if (lim) return lim;
    cls_index *idx;
    cls_status s = cls_index_open(index, &idx);
    if (s != CLS_OK) return failed(s, index);
    bodies b = {NULL, 0, 0, mode, k, 0, NULL, CLS_OK};
    if ((s = cls_batch_create(idx, &b.warm)) != CLS_OK) return failed(s, "setting up");
    if ((s = cls_topics_read(CLS_TOPICS_AUTO, topics, on_topic, &b)) != CLS_OK || b.nomem)
        return failed(b.nomem ? CLS_E_NOMEM : s, topics);
    if (b.n == 0) {
        fprintf(stderr, "clsearch bench serve: %s holds no topics\n", topics);
        return 1;
    }
    of_file jf;
    if (bench_json_open(&jf, "bench serve", json_path, (char *[]){(char *)index, (char *)topics}, 2)) return 1;
    FILE *json = jf.f;
    cls_engine *e;
    if ((s = cls_engine_create(idx, device, &e)) != CLS_OK) return failed(s, device ? device : "auto");
    const char *desc = cls_engine_describe(e);
    int dlen = (int)strcspn(desc, "\n");
    cls_index_stats ist;
    cls_index_get_stats(idx, &ist);
    printf("serve suite: commit %s, %s; index %s (%u docs, %s); %zu topics from %s; %s k %u; %.1f s per row",
           bench_commit(), bench_when(), index, ist.num_docs, cls_codec_name(ist.codec), b.n, topics, mode, k, seconds);
    if (nr) printf("; open loop, Poisson arrivals, seed %llu", (unsigned long long)seed);
    printf("\n%.*s\n", dlen, desc);
    if (nr)
        printf("%8s %9s %8s %6s %10s %10s %9s %9s %9s %8s %8s %7s %7s %10s %11s", "inflight", "max-batch", "wait ms", "pool",
               "offered/s", "answers/s", "p50 ms", "p99 ms", "p99.9 ms", "sent", "answered", "failed", "unsent",
               "mean batch", "device ms/q");
    if (nr && deadline_ms > 0) printf("%11s", "in time %");
    if (nr) putchar('\n');
    else
        printf("%8s %9s %8s %7s %9s %10s %9s %9s %10s %11s\n", "inflight", "max-batch", "wait ms", "clients", "requests", "q/s",
               "p50 ms", "p99 ms", "mean batch", "device ms/q");
    int rc = 0;
    suite su = {.b = &b, .cl = calloc(max_c, sizeof *su.cl), .json = json, .desc = desc, .index = index, .mode = mode,
                .dlen = dlen, .k = k, .seconds = seconds, .seed = seed, .deadline_ms = deadline_ms, .eng = e};
    su.nx = cls_engine_executors(e, NULL, 0);
    if (su.nx > 1) {
        su.x0 = calloc(su.nx, sizeof *su.x0);
        su.x1 = calloc(su.nx, sizeof *su.x1);
    }
    if (!su.cl) return failed(CLS_E_NOMEM, "clients");
    if ((s = warm_up(e, &b)) != CLS_OK) return failed(s, "warming the engine up");
    for (unsigned cfg = 0; cfg < nif * nmb * nmw && rc == 0; cfg++) {
            unsigned ii = cfg / (nmb * nmw), bi = cfg / nmw % nmb, wi = cfg % nmw;
            srv_opts so = defaults;
            so.listen = "127.0.0.1:0";
            so.max_conns = server_conns;
            so.max_conns_per_ip = so.max_conns; /* every client is on loopback: one address */
            if (so.max_queue < max_c) so.max_queue = max_c;
            so.timeout_s = 3600; /* a pool's connection may idle long between requests */
            so.max_batch = (unsigned)mbs[bi];
            so.max_wait_ms = mws[wi];
            so.inflight = (unsigned)ifs[ii];
            so.deadline_ms = deadline_ms;
            if (threads) so.threads = threads;
            srv *server;
            if ((s = srv_start(idx, e, &so, &server)) != CLS_OK) {
                rc = failed(s, "starting the server");
                break;
            }
            for (unsigned ci = 0; ci < nc && rc == 0; ci++)
                for (unsigned ri = 0; ri < (nr ? nr : 1) && rc == 0; ri++)
                    rc = one_row(&su, server, &so, (unsigned)cs[ci], nr ? rates[ri] : 0);
            srv_stop(server, NULL);
        }
    if (bench_json_close(&jf, "bench serve")) rc = 1;
    free(su.all);
    free(su.x0);
    free(su.x1);
    free(su.cl);
    for (size_t i = 0; i < b.n; i++) free(b.text[i]);
    free(b.text);
    cls_batch_free(b.warm);
    cls_engine_free(e);
    cls_index_close(idx);
    return rc;
}
