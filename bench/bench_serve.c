/* serve suite: the query server under concurrent load, the throughput-versus-latency trade-off of
 * dynamic batching.
 *
 *   clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--max-batch 1,16,128]
 *                        [--max-wait-ms 0,5] [-k 10] [-m or] [--threads N] [--seconds S] [--json FILE]
 *
 * One engine is created; for every max-batch and max-wait setting a server (serve/) is started
 * in-process on a free loopback port, and for every client count C, C threads each open one
 * keep-alive connection and send one-query POST /search requests back to back (thread i starts
 * at topic i x n / C and walks the topics in turn), one untimed request each first. For S seconds
 * (default 2) every answer's latency (request written to answer read, at the client) is recorded.
 *
 * Reported per row: requests per second (each request one query), latency p50 and p99 at the
 * client, the mean device batch (queries / cls_engine_search calls, from the server's counters)
 * and the device time per query (OpenCL profiling events; 0 on the reference engine). Clients
 * and server share the machine's cores, so on a small CPU the clients' own work is in the
 * figures. Answers are checked for status 200 only: the tests compare the server's results
 * with `clsearch search`'s. */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "bench.h"
#include "clsearch.h"
#include "http_client.h"
#include "serve.h"
#include "util/vec.h"

typedef struct bodies {
    char **text;
    size_t n, cap;
    const char *mode;
    unsigned k;
    int nomem;
} bodies;

/* Each topic as the body of a one-query request, made before any timing. */
static int on_topic(void *u, const char *qid, const char *text)
{
    bodies *b = u;
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

typedef struct client {
    pthread_t t;
    const bodies *b;
    unsigned port;
    size_t start;
    pthread_barrier_t *go;
    atomic_int *stop;
    double *lat;
    size_t n, cap;
    unsigned errors;
    double t_end;
    char why[256];
} client;

static void *client_main(void *arg)
{
    client *c = arg;
    hc_conn h;
    int st;
    const char *resp;
    size_t rl, at = c->start;
    int up = hc_connect(&h, "127.0.0.1", c->port, 60) == 0;
    if (up) { /* untimed: the connection's first request */
        const char *body = c->b->text[at];
        up = hc_request(&h, "POST", "/search", body, strlen(body), &st, &resp, &rl) == 0;
    }
    if (!up) {
        snprintf(c->why, sizeof c->why, "connecting to the server failed");
        c->errors++;
    }
    pthread_barrier_wait(c->go);
    while (up && !atomic_load(c->stop)) {
        at = (at + 1) % c->b->n;
        const char *body = c->b->text[at];
        double t0 = bench_now();
        if (hc_request(&h, "POST", "/search", body, strlen(body), &st, &resp, &rl) != 0) {
            snprintf(c->why, sizeof c->why, "the connection failed");
            c->errors++;
            break;
        }
        double dt = bench_now() - t0;
        if (st != 200) {
            if (!c->errors) snprintf(c->why, sizeof c->why, "status %d: %.200s", st, resp);
            c->errors++;
            continue;
        }
        if (!vec_reserve(&c->lat, &c->cap, c->n + 1, sizeof *c->lat)) {
            snprintf(c->why, sizeof c->why, "out of memory");
            c->errors++;
            break;
        }
        c->lat[c->n++] = dt;
    }
    c->t_end = bench_now();
    hc_close(&h);
    return NULL;
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

int bench_serve(int argc, char **argv)
{
    const char *index = NULL, *topics = NULL, *device = NULL, *json_path = NULL, *mode = "or";
    double cs[16], mbs[16], mws[16];
    unsigned nc = parse_list("1,4,16,64", cs, 16), nmb = parse_list("1,16,128", mbs, 16),
             nmw = parse_list("0,5", mws, 16), k = 10, threads = 0;
    double seconds = 2.0;
    static const struct option longs[] = {{"json", required_argument, 0, 'j'}, {"seconds", required_argument, 0, 's'},
                                          {"max-batch", required_argument, 0, 'B'}, {"max-wait-ms", required_argument, 0, 'W'},
                                          {"threads", required_argument, 0, 'T'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "x:q:d:c:k:m:", longs, NULL)) != -1) {
        switch (c) {
        case 'x': index = optarg; break;
        case 'q': topics = optarg; break;
        case 'd': device = optarg; break;
        case 'c': nc = parse_list(optarg, cs, 16); break;
        case 'B': nmb = parse_list(optarg, mbs, 16); break;
        case 'W': nmw = parse_list(optarg, mws, 16); break;
        case 'k': k = (unsigned)atoi(optarg); break;
        case 'm': mode = optarg; break;
        case 'T': threads = (unsigned)atoi(optarg); break;
        case 'j': json_path = optarg; break;
        case 's': seconds = atof(optarg); break;
        default: nc = 0;
        }
    }
    cls_mode m;
    int bad = !index || !topics || !nc || !nmb || !nmw || optind != argc || !(seconds > 0 && seconds <= 3600) ||
              k < 1 || k > 1000 || threads > 64 || cls_mode_parse(mode, &m) != CLS_OK;
    for (unsigned i = 0; i < nc && !bad; i++) bad = !(cs[i] >= 1 && cs[i] <= 512 && cs[i] == (unsigned)cs[i]);
    for (unsigned i = 0; i < nmb && !bad; i++) bad = !(mbs[i] >= 1 && mbs[i] <= 65536 && mbs[i] == (unsigned)mbs[i]);
    for (unsigned i = 0; i < nmw && !bad; i++) bad = !(mws[i] >= 0 && mws[i] <= 10000);
    if (bad) {
        fprintf(stderr, "usage: clsearch bench serve -x INDEX -q TOPICS [-d DEVICE] [-c 1,4,16,64] [--max-batch 1,16,128]\n"
                        "                            [--max-wait-ms 0,5] [-k 10] [-m or] [--threads N] [--seconds S] [--json FILE]\n"
                        "  (clients 1..512, k 1..1000)\n");
        return 2;
    }
    cls_index *idx;
    cls_status s = cls_index_open(index, &idx);
    if (s != CLS_OK) return failed(s, index);
    bodies b = {NULL, 0, 0, mode, k, 0};
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
    printf("serve suite: commit %s, %s; index %s (%u docs, %s); %zu topics from %s; %s k %u; %.1f s per row\n%.*s\n",
           bench_commit(), bench_when(), index, ist.num_docs, cls_codec_name(ist.codec), b.n, topics, mode, k, seconds,
           dlen, desc);
    printf("%9s %8s %7s %9s %10s %9s %9s %10s %11s\n", "max-batch", "wait ms", "clients", "requests", "q/s", "p50 ms",
           "p99 ms", "mean batch", "device ms/q");
    int rc = 0;
    client *cl = calloc(512, sizeof *cl);
    double *all = NULL;
    size_t all_cap = 0;
    if (!cl) return failed(CLS_E_NOMEM, "clients");
    for (unsigned bi = 0; bi < nmb && rc == 0; bi++)
        for (unsigned wi = 0; wi < nmw && rc == 0; wi++) {
            srv_opts so;
            srv_defaults(&so);
            so.listen = "127.0.0.1:0";
            so.max_conns_per_ip = so.max_conns; /* every client is on loopback: one address */
            so.max_batch = (unsigned)mbs[bi];
            so.max_wait_ms = mws[wi];
            if (threads) so.threads = threads;
            srv *server;
            if ((s = srv_start(idx, e, &so, &server)) != CLS_OK) {
                rc = failed(s, "starting the server");
                break;
            }
            for (unsigned ci = 0; ci < nc && rc == 0; ci++) {
                unsigned C = (unsigned)cs[ci];
                pthread_barrier_t go;
                atomic_int stop = 0;
                pthread_barrier_init(&go, NULL, C + 1);
                unsigned started = 0;
                for (unsigned i = 0; i < C; i++) {
                    cl[i] = (client){.b = &b, .port = srv_port(server), .start = (size_t)i * b.n / C, .go = &go, .stop = &stop};
                    if (pthread_create(&cl[i].t, NULL, client_main, &cl[i]) != 0) break;
                    started++;
                }
                if (started < C) { /* the barrier waits for C: the missing ones are the main thread's fault */
                    fprintf(stderr, "clsearch bench serve: cannot start %u client threads\n", C);
                    exit(1);
                }
                pthread_barrier_wait(&go);
                srv_stats s0, s1;
                srv_get_stats(server, &s0);
                double t0 = bench_now();
                struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
                nanosleep(&nap, NULL);
                atomic_store(&stop, 1);
                size_t n = 0;
                unsigned errors = 0;
                double t_end = t0;
                const char *why = NULL;
                for (unsigned i = 0; i < C; i++) {
                    pthread_join(cl[i].t, NULL);
                    if (cl[i].t_end > t_end) t_end = cl[i].t_end;
                    errors += cl[i].errors;
                    if (cl[i].errors && !why) why = cl[i].why;
                    if (!vec_reserve(&all, &all_cap, n + cl[i].n, sizeof *all)) {
                        fprintf(stderr, "clsearch bench serve: out of memory\n");
                        exit(1);
                    }
                    memcpy(all + n, cl[i].lat, cl[i].n * sizeof *all);
                    n += cl[i].n;
                    free(cl[i].lat);
                }
                srv_get_stats(server, &s1);
                pthread_barrier_destroy(&go);
                if (errors || n == 0) {
                    fprintf(stderr, "clsearch bench serve: %u failed requests (%s)\n", errors, why ? why : "none answered");
                    rc = 1;
                    break;
                }
                bench_sort(all, (unsigned)n);
                double el = t_end - t0, qps = (double)n / el, p50 = pct(all, n, 0.5) * 1e3, p99 = pct(all, n, 0.99) * 1e3;
                uint64_t dq = s1.queries - s0.queries, db = s1.batches - s0.batches;
                double mean_batch = db ? (double)dq / (double)db : 0, dev = dq ? (s1.device_s - s0.device_s) * 1e3 / (double)dq : 0;
                printf("%9u %8g %7u %9zu %10.1f %9.3f %9.3f %10.2f %11.4f\n", so.max_batch, so.max_wait_ms, C, n, qps, p50,
                       p99, mean_batch, dev);
                fflush(stdout);
                if (json)
                    fprintf(json,
                            "{\"suite\":\"serve\",\"commit\":\"%s\",\"when\":\"%s\",\"device\":\"%.*s\",\"index\":\"%s\","
                            "\"mode\":\"%s\",\"k\":%u,\"max_batch\":%u,\"max_wait_ms\":%g,\"http_threads\":%u,"
                            "\"clients\":%u,\"requests\":%zu,\"qps\":%.3f,\"latency_p50_ms\":%.4f,\"latency_p99_ms\":%.4f,"
                            "\"mean_batch\":%.3f,\"device_ms_per_query\":%.5f}\n",
                            bench_commit(), bench_when(), dlen, desc, index, mode, k, so.max_batch, so.max_wait_ms,
                            so.threads, C, n, qps, p50, p99, mean_batch, dev);
            }
            srv_stop(server, NULL);
        }
    if (bench_json_close(&jf, "bench serve")) rc = 1;
    free(all);
    free(cl);
    for (size_t i = 0; i < b.n; i++) free(b.text[i]);
    free(b.text);
    cls_engine_free(e);
    cls_index_close(idx);
    return rc;
}
