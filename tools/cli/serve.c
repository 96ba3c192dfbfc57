/* The serve command: the query server (serve/serve.h) on one index until SIGTERM or SIGINT. */
#define _DEFAULT_SOURCE /* getopt_long */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "cli.h"
#ifdef CLSEARCH_SERVE
#include "bench.h"
#include "serve.h"
#endif

#ifdef CLSEARCH_SERVE
/* What `serve` was asked. */
typedef struct serve_args {
    const char *index_path, *device;
    const char *rerank; /* --rerank's model file, or NULL */
    srv_opts so;
    int conns_given; /* --max-conns given: refused, never lowered, where it does not fit */
    cls_engine_opts eo;
} serve_args;

/* serve's options into a; 0, or the exit status of a refusal. */
static int serve_parse(int argc, char **argv, serve_args *a)
{
    memset(a, 0, sizeof *a);
    srv_defaults(&a->so);
    cls_engine_opts_init(&a->eo);
    unsigned long long v;
    float f;
    int opt, rc;
    static const struct option lo[] = {{"index", required_argument, 0, 'x'}, {"device", required_argument, 0, 'd'},
                                       {"listen", required_argument, 0, 1}, {"max-batch", required_argument, 0, 2},
                                       {"max-wait-ms", required_argument, 0, 3}, {"threads", required_argument, 0, 4},
                                       {"max-queue", required_argument, 0, 5}, {"max-k", required_argument, 0, 6},
                                       {"timeout", required_argument, 0, 7}, {"device-mem", required_argument, 0, 8},
                                       {"placement", required_argument, 0, 20},
                                       {"request-timeout", required_argument, 0, 9},
                                       {"max-conns", required_argument, 0, 10},
                                       {"max-conns-per-ip", required_argument, 0, 11},
                                       {"inflight", required_argument, 0, 12},
                                       {"deadline-ms", required_argument, 0, 13},
                                       {"wait-when-idle", no_argument, 0, 14},
                                       {"rerank", required_argument, 0, 15},
                                       {"rerank-depth", required_argument, 0, 16}, {0, 0, 0, 0}};
    while ((opt = getopt_long(argc, argv, ":x:d:", lo, NULL)) != -1) {
        switch (opt) {
        case 'x': a->index_path = optarg; break;
        case 'd': a->device = optarg; break;
        case 1: a->so.listen = optarg; break;
        case 2:
            if (!parse_u64(optarg, 1, 65536, &v)) return usage_error("serve: --max-batch takes 1 to 65536 queries, not '%s'", optarg);
            a->so.max_batch = (unsigned)v;
            break;
        case 3:
            if (!parse_float(optarg, &f) || !(f >= 0 && f <= 10000))
                return usage_error("serve: --max-wait-ms takes 0 to 10000 milliseconds, not '%s'", optarg);
            a->so.max_wait_ms = f;
            break;
        case 4:
            if (!parse_u64(optarg, 1, 64, &v)) return usage_error("serve: --threads takes 1 to 64, not '%s'", optarg);
            a->so.threads = (unsigned)v;
            break;
        case 5:
            if (!parse_u64(optarg, 1, 1048576, &v)) return usage_error("serve: --max-queue takes 1 to 1048576 queries, not '%s'", optarg);
            a->so.max_queue = (unsigned)v;
            break;
        case 6:
            if (!parse_u64(optarg, 1, CLS_MAX_K, &v)) return usage_error("serve: --max-k takes 1 to 100000, not '%s'", optarg);
            a->so.max_k = (unsigned)v;
            break;
        case 7:
            if (!parse_u64(optarg, 1, 3600, &v)) return usage_error("serve: --timeout takes 1 to 3600 seconds, not '%s'", optarg);
            a->so.timeout_s = (unsigned)v;
            break;
        case 8:
            if ((rc = device_mem_option("serve", optarg, &a->eo)) != 0) return rc;
            break;
        case 20:
            if ((rc = placement_option("serve", optarg, &a->eo)) != 0) return rc;
            break;
        case 9:
            if (!parse_u64(optarg, 1, 3600, &v))
                return usage_error("serve: --request-timeout takes 1 to 3600 seconds, not '%s'", optarg);
            a->so.request_timeout_s = (unsigned)v;
            break;
        case 10:
            if (!parse_u64(optarg, 1, 65536, &v)) return usage_error("serve: --max-conns takes 1 to 65536, not '%s'", optarg);
            a->so.max_conns = (unsigned)v;
            a->conns_given = 1;
            break;
        case 11:
            if (!parse_u64(optarg, 1, 65536, &v))
                return usage_error("serve: --max-conns-per-ip takes 1 to 65536, not '%s'", optarg);
            a->so.max_conns_per_ip = (unsigned)v;
            break;
        case 12:
            if (!parse_u64(optarg, 1, 8, &v))
                return usage_error("serve: --inflight takes 1 to 8 searches a device, not '%s'", optarg);
            a->so.inflight = (unsigned)v;
            break;
        case 13:
            if (!parse_float(optarg, &f) || !(f >= 0 && f <= 600000))
                return usage_error("serve: --deadline-ms takes 0 to 600000 milliseconds (0: none), not '%s'", optarg);
            a->so.deadline_ms = f;
            break;
        case 14: a->so.wait_when_idle = 1; break;
        case 15: a->rerank = optarg; break;
        case 16:
            if (!parse_u64(optarg, 1, CLS_MAX_K, &v))
                return usage_error("serve: --rerank-depth takes 1 to 100000 candidates, not '%s'", optarg);
            a->so.rerank_depth = (uint32_t)v;
            break;
        default: return bad_option(argc, argv, opt);
        }
    }
    if (optind < argc) return usage_error("serve: unexpected argument '%s'", argv[optind]);
    if (!a->index_path) return usage_error("serve: -x INDEX is required%s", "");
    if (a->so.rerank_depth && !a->rerank) return usage_error("serve: --rerank-depth goes with --rerank MODEL%s", "");
    return 0;
}

/* The server started, run until a signal in sigs, and stopped: 0, or 1 after the message. */
static int serve_run(serve_args *a, const sigset_t *sigs)
{
    cls_index *idx = NULL;
    cls_engine *eng = NULL;
    cls_model *model = NULL;
    cls_results *probe = NULL;
    srv *server = NULL;
    int rc = 1;
    cls_status s = cls_index_open(a->index_path, &idx);
    if (s != CLS_OK) {
        fail(s, "opening the index");
        goto done;
    }
    a->eo.device = a->device;
    if ((s = cls_engine_create_opts(idx, &a->eo, &eng)) != CLS_OK) {
        fail(s, "starting the engine");
        goto done;
    }
    if (a->rerank) {
        /* the model read, and checked against this index's feature table by a search of no
         * term, before any request can ask for it */
        cls_search_params p;
        cls_search_defaults(&p);
        if ((s = cls_model_load(a->rerank, &model)) != CLS_OK) {
            fail(s, "serve: --rerank");
            goto done;
        }
        p.rerank = model;
        p.rerank_depth = a->so.rerank_depth;
        if ((s = cls_results_create(&probe)) != CLS_OK || (s = cls_engine_search_text(eng, "", &p, probe)) != CLS_OK) {
            fail(s, "serve: --rerank");
            goto done;
        }
        a->so.rerank = model;
        fprintf(stderr, "%s: serve: rerank: %s, the top %u re-ranked (\"rerank\": false in a request: the first "
                        "stage alone)\n", prog, cls_model_describe(model),
                a->so.rerank_depth ? a->so.rerank_depth : CLS_RERANK_DEPTH);
    }
    if ((s = srv_start(idx, eng, &a->so, &server)) != CLS_OK) {
        fail(s, "serve");
        goto done;
    }
    const char *d = cls_engine_describe(eng);
    char dl[64] = "no deadline";
    if (a->so.deadline_ms > 0) snprintf(dl, sizeof dl, "deadline %g ms", a->so.deadline_ms);
    fprintf(stderr, "%s: serve: %s, %.*s; batches of up to %u queries or %g ms (%s), %u in flight a device, %s; "
                    "%u HTTP threads\n",
            prog, a->index_path, (int)strcspn(d, "\n"), d, a->so.max_batch, a->so.max_wait_ms,
            a->so.wait_when_idle ? "waiting while an executor is idle too" : "at once while an executor is idle",
            a->so.inflight, dl,
            a->so.threads);
    /* one line on stdout, for a script (or the tests) to learn the port */
    printf("listening on %s\n", srv_url(server));
    fflush(stdout);
    int sig = 0;
    sigwait(sigs, &sig);
    srv_stats st;
    srv_get_stats(server, &st);
    fprintf(stderr, "%s: serve: %s: no new connections; finishing %llu queued queries\n", prog,
            sig == SIGTERM ? "SIGTERM" : "SIGINT", (unsigned long long)st.queued);
    srv_stop(server, &st);
    fprintf(stderr, "%s: serve: stopped: %llu search requests answered, %llu queries in %llu batches, %llu error "
            "responses, %llu responses cut off by their client\n", prog, (unsigned long long)st.requests,
            (unsigned long long)st.queries, (unsigned long long)st.batches, (unsigned long long)st.errors,
            (unsigned long long)st.aborted);
    rc = 0;
done:
    cls_results_free(probe);
    cls_engine_free(eng);
    cls_model_free(model);
    cls_index_close(idx);
    return rc;
}

/* The query server until SIGTERM or SIGINT, then a graceful stop: the queued queries are
 * searched and answered, and the exit status is 0. */
int cmd_serve(int argc, char **argv)
{
    /* Blocked before any thread exists (the engine's runtime starts some), so that every thread
     * inherits the mask and the signal waits for sigwait here instead of killing the process. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    serve_args a;
    int rc = serve_parse(argc, argv, &a);
    if (rc != 0) return rc;
    unsigned fit = srv_conns_fit();
    if (!a.conns_given && fit < a.so.max_conns) {
        if (fit < 16) {
            fprintf(stderr, "%s: serve: the hard limit on open files (ulimit -Hn) leaves room for %u connections\n",
                    prog, fit);
            return 1;
        }
        fprintf(stderr, "%s: serve: note: --max-conns %u, not %u: the most the hard limit on open files (ulimit -Hn) "
                "leaves room for\n", prog, fit, a.so.max_conns);
        a.so.max_conns = fit;
    }
    return serve_run(&a, &sigs);
}

int cmd_bench_serve(int argc, char **argv)
{
    return bench_serve(argc, argv);
}
#else
/* Without the server (CMake option CLSEARCH_SERVE=OFF) serve and bench serve say so. */
static int no_server(const char *what)
{
    fprintf(stderr, "%s: %s: this clsearch was built without the server (CMake option CLSEARCH_SERVE=OFF)\n", prog,
            what);
    return 1;
}

int cmd_serve(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_server("serve");
}

int cmd_bench_serve(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_server("bench serve");
}
#endif
